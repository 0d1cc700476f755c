/* aggregate.c — per-group means, standard deviations and Student-t (and
 * bootstrap) intervals of every metric of a set of records over their units
 * of replication (aggregate.h). Each group keeps, per metric, the sum and
 * weight of every unit (a unit's mean is their ratio) and the moments
 * (count, mean, M2) of unit means known only as such; the moments of the
 * unit means come from Welford's recurrence and Chan, Golub & LeVeque's
 * parallel formula, so that records can be added one at a time, in any
 * order, from any number of shards. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "aggregate_int.h"
#include "base/sized_int.h"
#include "base/vec.h"
#include "stats_int.h"

/* ---- moments ------------------------------------------------------------------ */

void ag_moments_add(ag_moments *m, double x)
{
    m->n++;
    double d = x - m->mean;
    m->mean += d / (double)m->n;
    m->m2 += d * (x - m->mean);
}

void ag_moments_merge(ag_moments *into, const ag_moments *from)
{
    if (from->n == 0)
        return;
    if (into->n == 0) {
        *into = *from;
        return;
    }
    double na = (double)into->n, nb = (double)from->n, n = na + nb;
    double d = from->mean - into->mean;
    into->mean += d * (nb / n);
    into->m2 += from->m2 + d * d * (na * nb / n);
    into->n += from->n;
}

double ag_moments_std(const ag_moments *m)
{
    return m->n < 2 ? NAN : sqrt(m->m2 / (double)(m->n - 1));
}

void ag_moments_ci(const ag_moments *m, double level, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (m->n < 2 || !(level > 0 && level < 1))
        return;
    double t = gsl_cdf_tdist_Pinv((1.0 + level) / 2, (double)(m->n - 1));
    double half = t * ag_moments_std(m) / sqrt((double)m->n);
    *lo = m->mean - half;
    *hi = m->mean + half;
}

/* ---- the aggregate ---------------------------------------------------------------- */

const char *const ag_identifying_keys[] = {
    "model", "stack", "normalizer", "temperature", "layer", "head", "layer_a", "head_a", "layer_b", "head_b", "metric", "text", "input",
    "batch", NULL};

const char *const agg_size_keys[] = {"rows", "cols", NULL};

/* The keys that name a record's input (a text's line, an image or sound
 * file, a sequence of a batch given to the Python package): the default
 * grouping pools over them. */
static int names_input(const char *key)
{
    return strcmp(key, "text") == 0 || strcmp(key, "input") == 0 || strcmp(key, "batch") == 0;
}

int agg_key_listed(const char *const *list, const char *key)
{
    for (const char *const *k = list; *k; k++)
        if (strcmp(*k, key) == 0)
            return 1;
    return 0;
}

static int identifying(const char *key)
{
    return agg_key_listed(ag_identifying_keys, key);
}

static void free_cells(ag_cell *cells, size_t n)
{
    for (size_t k = 0; cells && k < n; k++)
        if (cells[k].kind == AG_CELL_TEXT)
            free((char *)cells[k].text);
    free(cells);
}

void ag_aggregate_free(ag_aggregate *a)
{
    if (!a)
        return;
    for (size_t g = 0; g < a->ngroup; g++)
        free_cells(a->groups[g].keys, a->nschema);
    for (size_t s = 0; s < a->nstat; s++)
        free(a->stats[s].slots);
    for (size_t u = 0; u < a->nunit; u++)
        free_cells(a->units[u].keys, a->nukey);
    free(a->units);
    for (size_t k = 0; k < a->nukey; k++)
        free(a->ukey[k]);
    free(a->ukey);
    free(a->upresent);
    agi_strmap_free(&a->unit_map);
    agi_u64map_free(&a->slot_map);
    agi_u64map_free(&a->group_units);
    free(a->stats);
    agi_u64map_free(&a->stat_map);
    agi_strmap_free(&a->schema_map);
    for (size_t k = 0; k < a->nschema; k++)
        free(a->schema[k]);
    for (size_t m = 0; m < a->nmetric; m++)
        free(a->metric[m]);
    free(a->schema);
    free(a->present);
    free(a->metric);
    free(a->metric_text);
    free(a->groups);
    free(a->idbuf);
    agi_strmap_free(&a->metric_map);
    agi_strmap_free(&a->group_map);
    free(a);
}

static int schema_index(const ag_aggregate *a, const char *key)
{
    int32_t k;
    return agi_strmap_get(&a->schema_map, key, strlen(key), &k) ? k : -1;
}

/* Whether the given --by keys lack "stack" (then it is implied first). */
static int implies_stack(const ag_aggregate_options *opt)
{
    for (size_t k = 0; k < opt->nby; k++)
        if (opt->by[k] && strcmp(opt->by[k], "stack") == 0)
            return 0;
    return !opt->by_default;
}

static int set_schema(ag_aggregate *a, const ag_aggregate_options *opt, ag_error *err)
{
    size_t n = 0;
    a->stack_implied = implies_stack(opt);
    if (opt->by_default)
        for (const char *const *k = ag_identifying_keys; *k; k++)
            n += !names_input(*k);
    else
        n = opt->nby + (size_t)a->stack_implied;
    if (n > AG_RECORDS_KEYS_MAX)
        return ag_error_set(err, AG_ELIMIT, "more than %d --by keys", AG_RECORDS_KEYS_MAX);
    a->schema = calloc(n ? n : 1, sizeof *a->schema);
    a->present = calloc(n ? n : 1, 1);
    if (!a->schema || !a->present)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t i = 0, k = 0; i < n; k++) {
        const char *key = opt->by_default ? ag_identifying_keys[k]
                          : a->stack_implied ? (k ? opt->by[k - 1] : "stack")
                                             : opt->by[k];
        if (opt->by_default && names_input(key))
            continue;
        if (!*key)
            return ag_error_set(err, AG_EINVAL, "an empty --by key");
        if (schema_index(a, key) >= 0)
            return ag_error_set(err, AG_EINVAL, "--by names '%s' twice", key);
        a->schema[i] = strdup(key);
        a->nschema = ++i; /* freed with the aggregate even when the map fails */
        if (!a->schema[i - 1] ||
            agi_strmap_put(&a->schema_map, key, strlen(key), (int32_t)(i - 1), NULL) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    return AG_OK;
}

/* The unit keys: keys[n] (--unit), else the default "text", "input". */
int agg_set_units(ag_aggregate *a, const char *const *keys, size_t n, ag_error *err)
{
    static const char *const input[] = {"text", "input"};
    if (a->records || a->nunit)
        return ag_error_set(err, AG_EINVAL, "the unit of an aggregate is set before its records");
    for (size_t k = 0; k < a->nukey; k++)
        free(a->ukey[k]);
    free(a->ukey);
    free(a->upresent);
    a->ukey = NULL;
    a->upresent = NULL;
    a->nukey = 0;
    a->unit_default = n == 0;
    if (n == 0) {
        keys = input;
        n = 2;
    }
    if (n > AG_RECORDS_KEYS_MAX)
        return ag_error_set(err, AG_ELIMIT, "more than %d --unit keys", AG_RECORDS_KEYS_MAX);
    a->ukey = calloc(n, sizeof *a->ukey);
    a->upresent = calloc(n, 1);
    if (!a->ukey || !a->upresent)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!*keys[i])
            return ag_error_set(err, AG_EINVAL, "an empty --unit key");
        for (size_t j = 0; j < i; j++)
            if (strcmp(keys[i], keys[j]) == 0)
                return ag_error_set(err, AG_EINVAL, "--unit names '%s' twice", keys[i]);
        if (!(a->ukey[i] = strdup(keys[i])))
            return ag_error_set(err, AG_ENOMEM, "out of memory");
        a->nukey = i + 1;
    }
    return AG_OK;
}

void ag_aggregate_set_source(ag_aggregate *a, unsigned source)
{
    a->source = source;
}

int ag_aggregate_set_bootstrap(ag_aggregate *a, unsigned long resamples, unsigned long seed,
                               ag_error *err)
{
    if (resamples > AG_AGGREGATE_BOOTSTRAP_MAX)
        return ag_error_set(err, AG_EINVAL, "--bootstrap takes an integer from 1 to %lu, not '%lu'",
                            AG_AGGREGATE_BOOTSTRAP_MAX, resamples);
    if (a->records)
        return ag_error_set(err, AG_EINVAL, "bootstrap is set before an aggregate's records");
    a->bootstrap = resamples;
    a->seed = seed;
    a->keep_values |= resamples > 0;
    return AG_OK;
}

int ag_aggregate_new(const ag_aggregate_options *given, ag_aggregate **out, ag_error *err)
{
    *out = NULL;
    ag_aggregate_options o = AG_AGGREGATE_OPTIONS_DEFAULT;
    if (given && AG_SIZED_READ(&o, given, ag_aggregate_options, err) != AG_OK)
        return AG_EINVAL;
    const ag_aggregate_options *opt = &o;
    if (!(opt->level > 0 && opt->level < 1))
        return ag_error_set(err, AG_EINVAL, "a confidence level is in (0, 1), not %g", opt->level);
    ag_aggregate *a = calloc(1, sizeof *a);
    if (!a)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    a->by_default = opt->by_default;
    a->keep_values = opt->keep_values;
    a->level = opt->level;
    int status = set_schema(a, opt, err);
    if (status == AG_OK)
        status = agg_set_units(a, opt->unit, opt->unit ? opt->nunit : 0, err);
    if (status == AG_OK)
        status = ag_aggregate_set_bootstrap(a, opt->bootstrap, opt->seed, err);
    if (status != AG_OK) {
        ag_aggregate_free(a);
        return status;
    }
    *out = a;
    return AG_OK;
}

uint64_t ag_aggregate_records(const ag_aggregate *a)
{
    return a->records;
}

int agg_metric_index(const ag_aggregate *a, const char *name)
{
    int32_t v;
    return agi_strmap_get(&a->metric_map, name, strlen(name), &v) ? v : -1;
}

/* The index of metric `name`, added when new; -1 (err set) on failure. */
static int metric_add(ag_aggregate *a, const char *name, ag_error *err)
{
    int m = agg_metric_index(a, name);
    if (m >= 0)
        return m;
    if (a->nmetric == AG_RECORDS_KEYS_MAX) {
        ag_error_set(err, AG_ELIMIT, "more than %d metric keys", AG_RECORDS_KEYS_MAX);
        return -1;
    }
    if (a->nmetric == a->mcap) {
        size_t cap = a->mcap ? 2 * a->mcap : 32;
        char **names = realloc(a->metric, cap * sizeof *names);
        if (names)
            a->metric = names;
        unsigned char *text = names ? realloc(a->metric_text, cap) : NULL;
        if (!text) {
            ag_error_set(err, AG_ENOMEM, "out of memory for metric keys");
            return -1;
        }
        a->metric_text = text;
        a->mcap = cap;
    }
    char *copy = strdup(name);
    if (!copy || agi_strmap_put(&a->metric_map, name, strlen(name), (int32_t)a->nmetric, NULL)) {
        free(copy);
        ag_error_set(err, AG_ENOMEM, "out of memory for metric keys");
        return -1;
    }
    a->metric[a->nmetric] = copy;
    a->metric_text[a->nmetric] = 0;
    return (int)a->nmetric++;
}

static uint64_t stat_key(size_t group, size_t metric)
{
    return (uint64_t)group << 32 | metric; /* group < 2^31, metric <= 4096 */
}

const agg_stat *agg_stat_of(const ag_aggregate *a, const agg_group *g, size_t metric)
{
    static const agg_stat empty;
    uint64_t i;
    if (g && agi_u64map_get(&a->stat_map, stat_key((size_t)(g - a->groups), metric), &i))
        return &a->stats[i];
    return &empty;
}

/* The statistics of metric m in group gi, created when new; NULL when out
 * of memory. */
static agg_stat *stat_of(ag_aggregate *a, size_t gi, size_t m)
{
    uint64_t i;
    if (agi_u64map_get(&a->stat_map, stat_key(gi, m), &i))
        return &a->stats[i];
    if (AGB_VEC_RESERVE(a->stats, a->scap, a->nstat + 1) != 0)
        return NULL;
    if (agi_u64map_add(&a->stat_map, stat_key(gi, m), a->nstat, NULL) != AG_OK)
        return NULL;
    agg_stat *s = &a->stats[a->nstat++];
    *s = (agg_stat){.group = (uint32_t)gi, .metric = (uint32_t)m};
    return s;
}

/* Add w·x to unit u of stat s (x of weight w): a record as its own unit
 * (AGG_UNIT_RECORD) is a new slot, or only its moments without keep_values. */
static int stat_value(ag_aggregate *a, agg_stat *s, uint32_t u, double x, double w,
                      ag_error *err)
{
    if (u == AGG_UNIT_RECORD && !a->keep_values) {
        ag_moments_add(&s->direct, x);
        return AG_OK;
    }
    uint64_t si = (uint64_t)(s - a->stats), slot = s->nslot;
    if (u != AGG_UNIT_RECORD) {
        if (agi_u64map_add(&a->slot_map, si << 32 | u, slot, &slot) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "out of memory for the units of a metric");
    }
    if (slot == s->nslot) {
        if (AGB_VEC_RESERVE(s->slots, s->scap, s->nslot + 1) != 0)
            return ag_error_set(err, AG_ENOMEM, "out of memory for the units of a metric");
        s->slots[s->nslot++] = (agg_slot){.unit = u};
    }
    s->slots[slot].sum += w * x;
    s->slots[slot].w += w;
    return AG_OK;
}

void agg_stat_moments(const agg_stat *s, ag_moments *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < s->nslot; i++)
        ag_moments_add(m, s->slots[i].sum / s->slots[i].w);
    ag_moments_merge(m, &s->direct);
}

int agg_stat_values(const ag_aggregate *a, const agg_stat *s, double **out, size_t *n,
                    ag_error *err)
{
    *out = NULL;
    *n = 0;
    if (s->direct.n)
        return ag_error_set(err, AG_EINVAL, "'%s': %llu unit means are known by their moments "
                            "only (aggregated records merged as shards): no values to resample, "
                            "permute or pair (docs/metrics.md, \"Units\")",
                            a->metric[s->metric], (unsigned long long)s->direct.n);
    if (!s->nslot)
        return AG_OK;
    if (!(*out = malloc(s->nslot * sizeof **out)))
        return ag_error_set(err, AG_ENOMEM, "out of memory for the unit means of a metric");
    for (size_t i = 0; i < s->nslot; i++)
        (*out)[i] = s->slots[i].sum / s->slots[i].w;
    *n = s->nslot;
    return AG_OK;
}

const agg_slot *agg_slot_of(const ag_aggregate *a, const agg_stat *s, uint32_t u)
{
    uint64_t slot;
    if (!s || s->nslot == 0 || u == AGG_UNIT_RECORD ||
        !agi_u64map_get(&a->slot_map, (uint64_t)(s - a->stats) << 32 | u, &slot))
        return NULL;
    return &s->slots[slot];
}

/* ---- groups ----------------------------------------------------------------------- */

static int id_append(ag_aggregate *a, const char *s, size_t n, ag_error *err)
{
    if (a->idlen + n + 1 > a->idcap) {
        size_t cap = 2 * (a->idlen + n + 1);
        if (cap > UINT32_MAX)
            return ag_error_set(err, AG_ELIMIT, "group keys too long");
        char *grown = realloc(a->idbuf, cap);
        if (!grown)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
        a->idbuf = grown;
        a->idcap = cap;
    }
    memcpy(a->idbuf + a->idlen, s, n);
    a->idlen += n;
    return AG_OK;
}

/* The serialized group keys into a->idbuf: a number by its value (an
 * integer and a real that are equal are one group), text with its length. */
static int serialize_n(ag_aggregate *a, const ag_cell *keys, size_t nkeys, ag_error *err)
{
    char buf[48];
    int status = AG_OK;
    a->idlen = 0;
    for (size_t k = 0; status == AG_OK && k < nkeys; k++) {
        const ag_cell *c = &keys[k];
        int n;
        switch (c->kind) {
        case AG_CELL_NULL: n = snprintf(buf, sizeof buf, "n;"); break;
        case AG_CELL_BOOL: n = snprintf(buf, sizeof buf, "b%d;", c->value != 0); break;
        case AG_CELL_TEXT: n = snprintf(buf, sizeof buf, "t%zu:", strlen(c->text)); break;
        default: n = snprintf(buf, sizeof buf, "d%.17g;", c->value); break;
        }
        status = id_append(a, buf, (size_t)n, err);
        if (status == AG_OK && c->kind == AG_CELL_TEXT)
            status = id_append(a, c->text, strlen(c->text), err);
    }
    return status;
}

static int serialize(ag_aggregate *a, const ag_cell *keys, ag_error *err)
{
    return serialize_n(a, keys, a->nschema, err);
}

static int copy_cell(ag_cell *dst, const ag_cell *src)
{
    *dst = *src;
    if (src->kind == AG_CELL_TEXT && !(dst->text = strdup(src->text))) {
        dst->kind = AG_CELL_NULL;
        return AG_ENOMEM;
    }
    return AG_OK;
}

/* A copy of keys[n] (*cells) under a->idbuf in map with value index
 * (*stored: the map's copy of the id). AG_ENOMEM, nothing kept. */
static int keyed_entry(ag_aggregate *a, agi_strmap *map, int32_t index, const ag_cell *keys,
                       size_t n, ag_cell **cells, const char **stored)
{
    *cells = calloc(n ? n : 1, sizeof **cells);
    int status = *cells ? AG_OK : AG_ENOMEM;
    for (size_t k = 0; status == AG_OK && k < n; k++)
        status = copy_cell(&(*cells)[k], &keys[k]);
    if (status == AG_OK)
        status = agi_strmap_put(map, a->idbuf, a->idlen, index, stored);
    if (status != AG_OK) {
        free_cells(*cells, n);
        *cells = NULL;
    }
    return status;
}

/* The group whose serialized keys are in a->idbuf, created with `keys` when
 * new; NULL (err set) on failure. */
static agg_group *group_for(ag_aggregate *a, const ag_cell *keys, ag_error *err)
{
    int32_t gi;
    if (agi_strmap_get(&a->group_map, a->idbuf, a->idlen, &gi))
        return &a->groups[gi];
    if (a->ngroup == INT32_MAX) {
        ag_error_set(err, AG_ELIMIT, "more than %d groups", INT32_MAX);
        return NULL;
    }
    if (AGB_VEC_RESERVE(a->groups, a->gcap, a->ngroup + 1) != 0) {
        ag_error_set(err, AG_ENOMEM, "out of memory for groups");
        return NULL;
    }
    agg_group *g = &a->groups[a->ngroup];
    memset(g, 0, sizeof *g);
    const char *stored = NULL;
    if (keyed_entry(a, &a->group_map, (int32_t)a->ngroup, keys, a->nschema, &g->keys,
                    &stored) != AG_OK) {
        ag_error_set(err, AG_ENOMEM, "out of memory for groups");
        return NULL;
    }
    g->id = stored;
    g->idlen = (uint32_t)a->idlen;
    a->ngroup++;
    return g;
}

long agg_find_group(const ag_aggregate *a, const agg_group *g)
{
    int32_t gi;
    return agi_strmap_get(&a->group_map, g->id, g->idlen, &gi) ? gi : -1;
}

/* ---- adding records ---------------------------------------------------------------- */

/* A record's keys, looked up by name: scanned when few, hashed when many,
 * so that a record's companions and group keys cost linear time. */
#define ROW_SCAN_MAX 16

typedef struct {
    const ag_row *row;
    agi_strmap map; /* key -> index; empty when the row is scanned */
} row_index;

static int row_index_init(row_index *ri, const ag_row *row, ag_error *err)
{
    memset(ri, 0, sizeof *ri);
    ri->row = row;
    for (size_t k = 0; row->count > ROW_SCAN_MAX && k < row->count; k++)
        if (agi_strmap_put(&ri->map, row->keys[k], strlen(row->keys[k]), (int32_t)k, NULL) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "out of memory for a record's keys");
    return AG_OK;
}

static const ag_cell *row_get(const row_index *ri, const char *key)
{
    const ag_row *row = ri->row;
    int32_t k;
    if (row->count > ROW_SCAN_MAX)
        return agi_strmap_get(&ri->map, key, strlen(key), &k) ? &row->cells[k] : NULL;
    for (size_t i = 0; i < row->count; i++)
        if (strcmp(row->keys[i], key) == 0)
            return &row->cells[i];
    return NULL;
}

/* The cell of key K + suffix in row, or NULL. */
static const ag_cell *companion(const row_index *row, const char *key, const char *suffix)
{
    char name[AG_RECORDS_KEY_MAX + 16];
    size_t k = strlen(key), s = strlen(suffix);
    if (k + s >= sizeof name)
        return NULL;
    memcpy(name, key, k);
    memcpy(name + k, suffix, s + 1);
    return row_get(row, name);
}

static const char *const suffixes[] = {"_n", "_std", "_ci_low", "_ci_high", "_pct_low",
                                       "_pct_high", "_bca_low", "_bca_high"};

/* The columns of one metric in an output table: K alone (human formats),
 * else K and its four companions. */
static size_t columns_per_metric(const ag_aggregate *a, int human)
{
    return human ? 1 : a->bootstrap ? 9 : 5;
}

/* 1 when key is K_n, K_std, K_ci_low or K_ci_high of a key K of the row. */
static int is_companion(const row_index *row, const char *key)
{
    size_t n = strlen(key);
    for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++) {
        size_t k = strlen(suffixes[s]);
        char base[AG_RECORDS_KEY_MAX + 1];
        if (n <= k || n - k > AG_RECORDS_KEY_MAX || strcmp(key + n - k, suffixes[s]) != 0)
            continue;
        memcpy(base, key, n - k);
        base[n - k] = '\0';
        if (row_get(row, base))
            return 1;
    }
    return 0;
}

static int numeric(const ag_cell *c)
{
    return c->kind == AG_CELL_NUMBER || c->kind == AG_CELL_INTEGER || c->kind == AG_CELL_BOOL ||
           c->kind == AG_CELL_MEAN_CI;
}

/* A count: a non-negative integral number. */
static int count_of(const ag_cell *c, uint64_t *n)
{
    if (!c || !numeric(c) || c->kind == AG_CELL_BOOL || !(c->value >= 0) ||
        c->value != floor(c->value) || c->value > 9007199254740992.0)
        return 0;
    *n = (uint64_t)c->value;
    return 1;
}

/* The moments an aggregated record gives for key (cells v and K_n). */
static int summary_moments(const row_index *row, const char *key, const ag_cell *v,
                           const ag_cell *cn, ag_moments *m, ag_error *err)
{
    const ag_cell *sd = companion(row, key, "_std");
    memset(m, 0, sizeof *m);
    if (!count_of(cn, &m->n))
        return ag_error_set(err, AG_EFORMAT, "'%s_n' is not a count", key);
    if (m->n == 0)
        return AG_OK;
    if (!numeric(v))
        return ag_error_set(err, AG_EFORMAT, "'%s' is not a number with %s_n = %llu", key, key,
                            (unsigned long long)m->n);
    m->mean = v->value;
    if (m->n == 1)
        return AG_OK;
    if (!sd || !numeric(sd) || !(sd->value >= 0))
        return ag_error_set(err, AG_EFORMAT, "'%s_std' is not a standard deviation with "
                            "%s_n = %llu", key, key, (unsigned long long)m->n);
    m->m2 = sd->value * sd->value * (double)(m->n - 1);
    return AG_OK;
}

/* The group of a record, created when new; NULL (err set) on failure. */
static agg_group *row_group(ag_aggregate *a, const row_index *ri, ag_error *err)
{
    ag_cell keys[64] = {{0}};
    ag_cell *kv = a->nschema <= 64 ? keys : calloc(a->nschema, sizeof *kv);
    if (!kv) {
        ag_error_set(err, AG_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t k = 0; k < a->nschema; k++) {
        const ag_cell *c = row_get(ri, a->schema[k]);
        kv[k] = c ? *c : (ag_cell){0};
        a->present[k] |= c != NULL;
    }
    agg_group *g = serialize(a, kv, err) == AG_OK ? group_for(a, kv, err) : NULL;
    if (kv != keys)
        free(kv);
    return g;
}

/* ---- units --------------------------------------------------------------------------- */

static int unit_key_index(const ag_aggregate *a, const char *key)
{
    for (size_t k = 0; k < a->nukey; k++)
        if (strcmp(a->ukey[k], key) == 0)
            return (int)k;
    return -1;
}

/* The named unit whose serialized keys are in a->idbuf, created with keys
 * when new; -1 (err set) on failure. */
static long unit_for(ag_aggregate *a, const ag_cell *keys, ag_error *err)
{
    int32_t ui;
    if (agi_strmap_get(&a->unit_map, a->idbuf, a->idlen, &ui))
        return ui;
    if (a->nunit >= INT32_MAX) {
        ag_error_set(err, AG_ELIMIT, "more than %d units", INT32_MAX);
        return -1;
    }
    if (AGB_VEC_RESERVE(a->units, a->ucap, a->nunit + 1) != 0) {
        ag_error_set(err, AG_ENOMEM, "out of memory for units");
        return -1;
    }
    agg_unit *u = &a->units[a->nunit];
    memset(u, 0, sizeof *u);
    const char *stored = NULL;
    if (keyed_entry(a, &a->unit_map, (int32_t)a->nunit, keys, a->nukey, &u->keys, &stored) !=
        AG_OK) {
        ag_error_set(err, AG_ENOMEM, "out of memory for units");
        return -1;
    }
    u->id = stored;
    u->idlen = (uint32_t)a->idlen;
    return (long)a->nunit++;
}

/* The unit of a record: its values of the unit keys (the default unit: of
 * "text" and "input", AGG_UNIT_RECORD when it holds neither). *u; status. */
static int record_unit(ag_aggregate *a, const row_index *ri, uint32_t *u, ag_error *err)
{
    ag_cell keys[8] = {{0}};
    ag_cell *kv = a->nukey <= 8 ? keys : calloc(a->nukey, sizeof *kv);
    if (!kv)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t held = 0;
    for (size_t k = 0; k < a->nukey; k++) {
        const ag_cell *c = row_get(ri, a->ukey[k]);
        /* the default unit of a grouping that keeps the inputs apart (--by
         * text): one input per group, so the records are the units */
        if (c && a->unit_default && schema_index(a, a->ukey[k]) >= 0)
            c = NULL;
        kv[k] = c ? *c : (ag_cell){0};
        held += c != NULL;
        a->upresent[k] |= c != NULL;
    }
    int status = AG_OK;
    if (a->unit_default && held == 0) {
        *u = AGG_UNIT_RECORD;
        a->record_units = 1;
    } else {
        int status2 = serialize_n(a, kv, a->nukey, err);
        if (status2 == AG_OK && a->unit_default) { /* the input of one file */
            char src[24];
            int len = snprintf(src, sizeof src, "s%u;", a->source);
            status2 = id_append(a, src, (size_t)len, err);
        }
        long ui = status2 == AG_OK ? unit_for(a, kv, err) : -1;
        if (ui < 0)
            status = err && err->status ? err->status : AG_ENOMEM;
        else
            *u = (uint32_t)ui;
    }
    if (kv != keys)
        free(kv);
    return status;
}

/* Count unit u in group g. */
static int group_unit(ag_aggregate *a, agg_group *g, uint32_t u, ag_error *err)
{
    if (u == AGG_UNIT_RECORD) {
        g->other++;
        return AG_OK;
    }
    uint64_t key = (uint64_t)(g - a->groups) << 32 | u, was;
    if (agi_u64map_get(&a->group_units, key, &was))
        return AG_OK;
    if (agi_u64map_add(&a->group_units, key, 1, NULL) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "out of memory for units");
    g->named++;
    return AG_OK;
}

long agg_find_unit(const ag_aggregate *a, const ag_aggregate *b, uint32_t u)
{
    int32_t ui;
    if (u == AGG_UNIT_RECORD || u >= b->nunit)
        return -1;
    return agi_strmap_get(&a->unit_map, b->units[u].id, b->units[u].idlen, &ui) ? ui : -1;
}

int agg_group_has_unit(const ag_aggregate *a, const agg_group *g, uint32_t u)
{
    uint64_t v;
    return g && u != AGG_UNIT_RECORD &&
           agi_u64map_get(&a->group_units, (uint64_t)(g - a->groups) << 32 | u, &v);
}

void agg_unit_name(const ag_aggregate *a, uint32_t u, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t k = 0; u < a->nunit && k < a->nukey && len + 1 < cap; k++) {
        const ag_cell *c = &a->units[u].keys[k];
        if (a->unit_default && c->kind == AG_CELL_NULL)
            continue;
        int n = c->kind == AG_CELL_TEXT
                    ? snprintf(buf + len, cap - len, "%s%s='%.60s%s'", len ? ", " : "", a->ukey[k],
                               c->text, strlen(c->text) > 60 ? "..." : "")
                : c->kind == AG_CELL_NULL
                    ? snprintf(buf + len, cap - len, "%s%s=null", len ? ", " : "", a->ukey[k])
                    : snprintf(buf + len, cap - len, "%s%s=%.17g", len ? ", " : "", a->ukey[k],
                               c->value);
        len += n > 0 ? (size_t)n : 0;
        len = len < cap ? len : cap - 1;
    }
}

void agg_unit_label(const ag_aggregate *a, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < a->nukey; k++)
        if (!a->unit_default || a->upresent[k])
            len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
                                    len ? "," : "", a->ukey[k]);
    if (a->unit_default && (a->record_units || len == 0))
        snprintf(buf + len, len < cap ? cap - len : 0, "%srecord", len ? "+" : "");
}

/* ---- adding records ---------------------------------------------------------------- */

/* The stat of metric key in group gi (*out), created when new; *out NULL
 * when c is text (the key is then no metric). */
static int metric_stat(ag_aggregate *a, size_t gi, const char *key, const ag_cell *c,
                       agg_stat **out, ag_error *err)
{
    *out = NULL;
    int m = metric_add(a, key, err);
    if (m < 0)
        return err && err->status ? err->status : AG_ENOMEM;
    agg_stat *s = stat_of(a, gi, (size_t)m);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a group's metrics");
    if (c->kind == AG_CELL_TEXT)
        a->metric_text[m] = 1;
    else
        *out = s;
    return AG_OK;
}

/* One key of a record that is neither a group key nor identifying: its
 * value into unit u (weight 1). */
static int add_metric(ag_aggregate *a, size_t gi, const row_index *ri, size_t k, uint32_t u,
                      ag_error *err)
{
    const ag_row *row = ri->row;
    const char *key = row->keys[k];
    const ag_cell *c = &row->cells[k];
    agg_stat *s;
    int status = metric_stat(a, gi, key, c, &s, err);
    if (status != AG_OK || !s)
        return status;
    return numeric(c) ? stat_value(a, s, u, c->value, 1, err) : AG_OK;
}

/* The unit label an aggregated record carries ("record" when none). */
static const char *summary_label(const row_index *ri)
{
    const ag_cell *c = row_get(ri, "unit");
    return c && c->kind == AG_CELL_TEXT ? c->text : "record";
}

/* 1 when an aggregated record joins as a shard of its group: every
 * identifying key it holds is a group key, and its unit is this one. */
static int summary_is_shard(ag_aggregate *a, const row_index *ri)
{
    const ag_row *row = ri->row;
    for (size_t k = 0; k < row->count; k++)
        if (identifying(row->keys[k]) && !names_input(row->keys[k]) &&
            schema_index(a, row->keys[k]) < 0)
            return 0;
    const char *label = summary_label(ri);
    if (!a->unit_default) {
        char mine[AG_RECORDS_KEY_MAX * 4];
        agg_unit_label(a, mine, sizeof mine);
        return strcmp(label, mine) == 0;
    }
    /* the default unit's labels: text, input, record joined by ',' or '+' */
    for (const char *t = label; *t;) {
        size_t n = strcspn(t, ",+");
        if (!((n == 4 && strncmp(t, "text", 4) == 0) || (n == 5 && strncmp(t, "input", 5) == 0) ||
              (n == 6 && strncmp(t, "record", 6) == 0)))
            return 0;
        t += n + (t[n] != '\0');
    }
    return 1;
}

/* Note the unit kinds a shard's label names in a's own label. */
static void shard_label(ag_aggregate *a, const char *label)
{
    if (!a->unit_default)
        return;
    for (const char *t = label; *t;) {
        size_t n = strcspn(t, ",+");
        if (n == 6 && strncmp(t, "record", 6) == 0)
            a->record_units = 1;
        for (size_t k = 0; k < a->nukey; k++)
            if (strlen(a->ukey[k]) == n && strncmp(t, a->ukey[k], n) == 0)
                a->upresent[k] = 1;
        t += n + (t[n] != '\0');
    }
}

/* One metric K of an aggregated record: its moments into the group's
 * (shard), or its mean K of weight K_n into unit u. */
static int add_summary_metric(ag_aggregate *a, size_t gi, const row_index *ri, size_t k,
                              int shard, uint32_t u, ag_error *err)
{
    const ag_row *row = ri->row;
    const char *key = row->keys[k];
    const ag_cell *c = &row->cells[k], *cn = companion(ri, key, "_n");
    if (is_companion(ri, key))
        return AG_OK;
    if (!cn) /* a plain value beside the summaries */
        return add_metric(a, gi, ri, k, u, err);
    agg_stat *s;
    int status = metric_stat(a, gi, key, c, &s, err);
    if (status != AG_OK || !s)
        return status;
    ag_moments part;
    status = summary_moments(ri, key, c, cn, &part, err);
    if (status != AG_OK || part.n == 0)
        return status;
    if (shard) {
        s->shards = 1;
        ag_moments_merge(&s->direct, &part);
        return AG_OK;
    }
    return stat_value(a, s, u, part.mean, (double)part.n, err);
}

/* The metrics of a record into group g; n its records (1, or its "n"). */
static int row_metrics(ag_aggregate *a, agg_group *g, const row_index *ri, ag_error *err)
{
    const ag_row *row = ri->row;
    uint64_t n = 1, nunits = 0;
    const ag_cell *cn = row_get(ri, "n");
    int summary = cn != NULL, status = AG_OK, shard = 0;
    if (summary && !count_of(cn, &n))
        return ag_error_set(err, AG_EFORMAT, "'n' is not a count of records");
    uint32_t u = AGG_UNIT_RECORD;
    if (summary) {
        const ag_cell *cu = row_get(ri, "n_units");
        if (cu && !count_of(cu, &nunits))
            return ag_error_set(err, AG_EFORMAT, "'n_units' is not a count of units");
        shard = summary_is_shard(a, ri);
        if (!cu)
            nunits = n;
    }
    if (shard) {
        shard_label(a, summary_label(ri));
        g->other += nunits;
    } else {
        status = record_unit(a, ri, &u, err);
        if (status == AG_OK)
            status = group_unit(a, g, u, err);
    }
    a->summaries |= summary;
    for (size_t k = 0; status == AG_OK && k < row->count; k++) {
        const char *key = row->keys[k];
        if (schema_index(a, key) >= 0 || identifying(key) ||
            (!a->unit_default && unit_key_index(a, key) >= 0) ||
            (summary && (strcmp(key, "n") == 0 || strcmp(key, "unit") == 0 ||
                         strcmp(key, "n_units") == 0)))
            continue;
        size_t gi = (size_t)(g - a->groups);
        status = summary ? add_summary_metric(a, gi, ri, k, shard, u, err)
                         : add_metric(a, gi, ri, k, u, err);
    }
    if (status == AG_OK) {
        g->n += n;
        a->records += n;
    }
    return status;
}

int ag_aggregate_add(ag_aggregate *a, const ag_row *row, ag_error *err)
{
    /* before anything changes: a refused record leaves no trace (records
     * built in memory reach here unread by ag_records_read) */
    for (size_t k = 0; k < row->count; k++) {
        int status = ag_record_key_check(row->keys[k], err);
        if (status != AG_OK)
            return status;
    }
    row_index ri;
    int status = row_index_init(&ri, row, err);
    agg_group *g = status == AG_OK ? row_group(a, &ri, err) : NULL;
    if (status == AG_OK)
        status = g ? row_metrics(a, g, &ri, err) : err && err->status ? err->status : AG_ENOMEM;
    agi_strmap_free(&ri.map);
    return status;
}

int ag_aggregate_add_table(ag_aggregate *a, const ag_table *t, ag_error *err)
{
    int status = AG_OK;
    for (size_t r = 0; status == AG_OK && r < t->nrow; r++) {
        ag_row row = ag_table_row(t, r);
        status = ag_aggregate_add(a, &row, err);
    }
    return status;
}

/* ---- merging ------------------------------------------------------------------------- */

static int same_grouping(const ag_aggregate *a, const ag_aggregate *b)
{
    if (a->by_default != b->by_default || a->nschema != b->nschema ||
        a->stack_implied != b->stack_implied ||
        a->unit_default != b->unit_default || a->nukey != b->nukey)
        return 0;
    for (size_t k = 0; k < a->nschema; k++)
        if (strcmp(a->schema[k], b->schema[k]) != 0)
            return 0;
    for (size_t k = 0; k < a->nukey; k++)
        if (strcmp(a->ukey[k], b->ukey[k]) != 0)
            return 0;
    return 1;
}

/* The unit of into for from's unit u (added when new); -1 on failure. */
static long merge_unit(ag_aggregate *into, const ag_aggregate *from, uint32_t u, ag_error *err)
{
    if (u == AGG_UNIT_RECORD)
        return AGG_UNIT_RECORD;
    into->idlen = 0;
    if (id_append(into, from->units[u].id, from->units[u].idlen, err) != AG_OK)
        return -1;
    return unit_for(into, from->units[u].keys, err);
}

static int merge_stat(ag_aggregate *into, agg_stat *s, const ag_aggregate *from,
                      const agg_stat *fs, ag_error *err)
{
    for (size_t v = 0; v < fs->nslot; v++) {
        long u = merge_unit(into, from, fs->slots[v].unit, err);
        if (u < 0)
            return err && err->status ? err->status : AG_ENOMEM;
        double w = fs->slots[v].w;
        int status = stat_value(into, s, (uint32_t)u, fs->slots[v].sum / w, w, err);
        if (status != AG_OK)
            return status;
    }
    ag_moments_merge(&s->direct, &fs->direct);
    s->shards |= fs->shards;
    return AG_OK;
}

static int merge_group(ag_aggregate *into, const agg_group *fg, ag_error *err)
{
    into->idlen = 0;
    int status = id_append(into, fg->id, fg->idlen, err);
    agg_group *g = status == AG_OK ? group_for(into, fg->keys, err) : NULL;
    if (!g)
        return status != AG_OK ? status : err && err->status ? err->status : AG_ENOMEM;
    g->n += fg->n;
    g->other += fg->other;
    return AG_OK;
}

/* The named units of from's groups counted in into's. */
static int merge_group_units(ag_aggregate *into, const ag_aggregate *from, ag_error *err)
{
    const agi_u64map *m = &from->group_units;
    for (size_t i = 0; m->slots && i < m->cap; i++) {
        if (m->slots[i].key == AGI_U64MAP_EMPTY)
            continue;
        long g = agg_find_group(into, &from->groups[m->slots[i].key >> 32]);
        long u = merge_unit(into, from, (uint32_t)(m->slots[i].key & 0xffffffffu), err);
        if (g < 0 || u < 0)
            return err && err->status ? err->status : AG_ENOMEM;
        int status = group_unit(into, &into->groups[g], (uint32_t)u, err);
        if (status != AG_OK)
            return status;
    }
    return AG_OK;
}

/* from's statistics into into's, whose groups and metrics hold from's. */
static int merge_stats(ag_aggregate *into, const ag_aggregate *from, ag_error *err)
{
    for (size_t i = 0; i < from->nstat; i++) {
        const agg_stat *fs = &from->stats[i];
        long g = agg_find_group(into, &from->groups[fs->group]);
        int m = agg_metric_index(into, from->metric[fs->metric]);
        agg_stat *s = g >= 0 && m >= 0 ? stat_of(into, (size_t)g, (size_t)m) : NULL;
        if (!s)
            return ag_error_set(err, AG_ENOMEM, "out of memory for a group's metrics");
        int status = merge_stat(into, s, from, fs, err);
        if (status != AG_OK)
            return status;
    }
    return AG_OK;
}

int ag_aggregate_merge(ag_aggregate *into, const ag_aggregate *from, ag_error *err)
{
    if (!same_grouping(into, from))
        return ag_error_set(err, AG_EINVAL, "aggregates grouped differently cannot be merged");
    /* metrics first, in from's order, so that a merge keeps the order in
     * which the whole would have met them */
    for (size_t m = 0; m < from->nmetric; m++) {
        int im = metric_add(into, from->metric[m], err);
        if (im < 0)
            return err && err->status ? err->status : AG_ENOMEM;
        into->metric_text[im] |= from->metric_text[m];
    }
    for (size_t g = 0; g < from->ngroup; g++) {
        int status = merge_group(into, &from->groups[g], err);
        if (status != AG_OK)
            return status;
    }
    int status = merge_stats(into, from, err);
    if (status == AG_OK)
        status = merge_group_units(into, from, err);
    if (status != AG_OK)
        return status;
    for (size_t k = 0; k < into->nschema; k++)
        into->present[k] |= from->present[k];
    for (size_t k = 0; k < into->nukey; k++)
        into->upresent[k] |= from->upresent[k];
    into->record_units |= from->record_units;
    into->records += from->records;
    into->summaries |= from->summaries;
    return AG_OK;
}

/* ---- the table ------------------------------------------------------------------------ */

int agg_key_shown(const ag_aggregate *a, size_t k)
{
    return a->present[k] || (!a->by_default && !(a->stack_implied && k == 0));
}

size_t agg_key_columns(const ag_aggregate *a, size_t *cols)
{
    size_t n = 0;
    for (size_t k = 0; k < a->nschema; k++)
        if (agg_key_shown(a, k))
            cols[n++] = k;
    return n;
}

int agg_put_keys(const ag_aggregate *a, const agg_group *g, const size_t *cols, size_t ncol,
                 ag_table *t, ag_cell *row, ag_error *err)
{
    for (size_t c = 0; c < ncol; c++) {
        const ag_cell *k = &g->keys[cols[c]];
        if (k->kind == AG_CELL_TEXT) {
            int status = ag_table_set_text(t, &row[c], k->text, err);
            if (status != AG_OK)
                return status;
        } else {
            row[c] = *k;
        }
    }
    (void)a;
    return AG_OK;
}

/* The column keys: group keys, unit, n, n_units, then per metric K (and
 * K_std, K_ci_low, K_ci_high, K_n, and with bootstrap K_pct_low, K_pct_high,
 * K_bca_low, K_bca_high, unless human). */
static int table_columns(const ag_aggregate *a, const size_t *cols, size_t nkey, int human,
                         ag_table *out, ag_error *err)
{
    size_t per = columns_per_metric(a, human), n = 0;
    char **names = calloc(nkey + 3 + a->nmetric * per, sizeof *names);
    int status = names ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t k = 0; status == AG_OK && k < nkey; k++)
        if (!(names[n++] = strdup(a->schema[cols[k]])))
            status = ag_error_set(err, AG_ENOMEM, "out of memory");
    static const char *const fixed[] = {"unit", "n", "n_units"};
    for (size_t k = 0; status == AG_OK && k < 3; k++)
        if (!(names[n++] = strdup(fixed[k])))
            status = ag_error_set(err, AG_ENOMEM, "out of memory");
    static const char *const order[] = {"", "_std", "_ci_low", "_ci_high", "_n",
                                        "_pct_low", "_pct_high", "_bca_low", "_bca_high"};
    for (size_t m = 0; status == AG_OK && m < a->nmetric; m++)
        for (size_t s = 0; !a->metric_text[m] && status == AG_OK && s < per; s++)
            if (asprintf(&names[n++], "%s%s", a->metric[m], order[s]) < 0) {
                names[n - 1] = NULL;
                status = ag_error_set(err, AG_ENOMEM, "out of memory");
            }
    if (status == AG_OK)
        status = ag_table_init(out, (const char *const *)names, n, err);
    for (size_t k = 0; names && k < n; k++)
        free(names[k]);
    free(names);
    return status;
}

static ag_cell number_cell(double v)
{
    ag_cell c = {.kind = isfinite(v) ? AG_CELL_NUMBER : AG_CELL_NULL, .value = isfinite(v) ? v : 0};
    return c;
}

/* The cells of one metric of one group from `c` on (*used: the count). */
static int metric_cells(const ag_aggregate *a, const agg_stat *s, int human,
                        const double *boot, ag_cell *c, size_t *used, ag_error *err)
{
    ag_moments mm;
    agg_stat_moments(s, &mm);
    const ag_moments *m = &mm;
    double lo, hi;
    ag_moments_ci(m, a->level, &lo, &hi);
    double mean = m->n ? m->mean : NAN;
    if (human) {
        c[0] = number_cell(mean);
        if (m->n) {
            c[0].kind = AG_CELL_MEAN_CI;
            c[0].half = hi - m->mean;
        }
        *used = 1;
        return AG_OK;
    }
    c[0] = number_cell(mean);
    c[1] = number_cell(ag_moments_std(m));
    c[2] = number_cell(lo);
    c[3] = number_cell(hi);
    c[4] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)m->n};
    *used = 5;
    if (!a->bootstrap)
        return AG_OK;
    static const double none[4] = {NAN, NAN, NAN, NAN};
    const double *b = boot && (s->nslot || s->direct.n) ? &boot[4 * (size_t)(s - a->stats)] : none;
    for (size_t k = 0; k < 4; k++)
        c[5 + k] = number_cell(b[k]);
    *used = 9;
    return AG_OK;
}

/* ---- the bootstrap ------------------------------------------------------------------- */

/* Every stat's bootstrap bounds into a new array (*out, nstat × 4). Each
 * (group, metric) draws from its own generator seeded with a->seed, so the
 * bounds depend neither on the order of the stats nor on the records'
 * order within a unit set (ags_bootstrap sorts the unit means). */
static int bootstrap_all(const ag_aggregate *a, double **out, ag_error *err)
{
    double *bounds = malloc(4 * (a->nstat ? a->nstat : 1) * sizeof *bounds);
    int status = bounds ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t i = 0; status == AG_OK && i < a->nstat; i++) {
        double *x;
        size_t n;
        status = agg_stat_values(a, &a->stats[i], &x, &n, err);
        if (status == AG_OK)
            status = ags_bootstrap(x, n, a->bootstrap, a->seed, a->level, &bounds[4 * i], err);
        free(x);
    }
    if (status != AG_OK) {
        free(bounds);
        return status;
    }
    *out = bounds;
    return AG_OK;
}

/* A table of every group by every metric is mostly empty when each group
 * holds few of the metrics (2,000 records of one group and one metric each:
 * 80 KB of input, 20 million cells, 640 MB). Such a table is refused before
 * it is built: past AG_AGGREGATE_SPARSE_CELLS cells, at most
 * AG_AGGREGATE_SPARSE_RATIO cells a value met. A dense table of any size
 * (every head of a long corpus) is built as before. */
static int refuse_sparse(const ag_aggregate *a, size_t nkey, int human, ag_error *err)
{
    size_t per = columns_per_metric(a, human), nnum = 0;
    for (size_t m = 0; m < a->nmetric; m++)
        nnum += !a->metric_text[m];
    double cells = (double)a->ngroup * (double)(nkey + 1 + per * nnum);
    double held = (double)a->ngroup * (double)(nkey + 1) + (double)a->nstat * (double)per;
    if (cells <= AG_AGGREGATE_SPARSE_CELLS || cells <= AG_AGGREGATE_SPARSE_RATIO * held)
        return AG_OK;
    return ag_error_set(err, AG_ELIMIT,
                        "%zu groups by %zu metrics make a table of %.0f cells, %.0f of them "
                        "empty (each group holds few of the metrics); an aggregate table of "
                        "more than %d cells must hold a value in at least 1 of %d: "
                        "group the records by fewer keys (--by) or aggregate each metric's "
                        "records apart", a->ngroup, nnum, cells, cells - held,
                        AG_AGGREGATE_SPARSE_CELLS, AG_AGGREGATE_SPARSE_RATIO);
}

int ag_aggregate_table(const ag_aggregate *a, int human, ag_table *out, ag_error *err)
{
    memset(out, 0, sizeof *out);
    for (size_t k = 0; a->records && k < a->nschema; k++)
        if (!agg_key_shown(a, k))
            continue;
        else if (!a->present[k])
            return ag_error_set(err, AG_ENOTFOUND, "--by '%s': no record has this key",
                                a->schema[k]);
    for (size_t k = 0; !a->unit_default && a->records && k < a->nukey; k++)
        if (!a->upresent[k])
            return ag_error_set(err, AG_ENOTFOUND, "--unit '%s': no record has this key",
                                a->ukey[k]);
    char label[AG_RECORDS_KEY_MAX * 4];
    agg_unit_label(a, label, sizeof label);
    size_t *cols = calloc(a->nschema ? a->nschema : 1, sizeof *cols);
    if (!cols)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t nkey = agg_key_columns(a, cols);
    int status = refuse_sparse(a, nkey, human, err);
    if (status == AG_OK)
        status = table_columns(a, cols, nkey, human, out, err);
    double *boot = NULL;
    if (status == AG_OK && a->bootstrap && !human)
        status = bootstrap_all(a, &boot, err);

    for (size_t g = 0; status == AG_OK && g < a->ngroup; g++) {
        const agg_group *grp = &a->groups[g];
        ag_cell *row = ag_table_add_row(out, err);
        if (!row) {
            status = err && err->status ? err->status : AG_ENOMEM;
            break;
        }
        status = agg_put_keys(a, grp, cols, nkey, out, row, err);
        size_t c = nkey;
        if (status == AG_OK)
            status = ag_table_set_text(out, &row[c++], label, err);
        row[c++] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)grp->n};
        row[c++] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)(grp->named + grp->other)};
        for (size_t m = 0; status == AG_OK && m < a->nmetric; m++) {
            size_t used = 0;
            if (!a->metric_text[m])
                status = metric_cells(a, agg_stat_of(a, grp, m), human, boot, &row[c],
                                      &used, err);
            c += used;
        }
    }
    free(cols);
    free(boot);
    if (status != AG_OK)
        ag_table_free(out);
    return status;
}
