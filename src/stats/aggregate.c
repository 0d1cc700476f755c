/* aggregate.c — per-group means, standard deviations and Student-t
 * intervals of every metric of a set of records (aggregate.h). Each group
 * keeps (count, mean, M2) per metric, updated by Welford's recurrence and
 * merged by Chan, Golub & LeVeque's parallel formula, so that records can be
 * added one at a time, in any order, from any number of shards. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "aggregate_int.h"
#include "base/sized_int.h"
#include "base/vec.h"

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
    "model", "layer", "head", "layer_a", "head_a", "layer_b", "head_b", "metric", "text", "input",
    "batch", NULL};

/* The keys that name a record's input (a text's line, an image or sound
 * file, a sequence of a batch given to the Python package): the default
 * grouping pools over them. */
static int names_input(const char *key)
{
    return strcmp(key, "text") == 0 || strcmp(key, "input") == 0 || strcmp(key, "batch") == 0;
}

static int identifying(const char *key)
{
    for (const char *const *k = ag_identifying_keys; *k; k++)
        if (strcmp(*k, key) == 0)
            return 1;
    return 0;
}

void ag_aggregate_free(ag_aggregate *a)
{
    if (!a)
        return;
    for (size_t g = 0; g < a->ngroup; g++) {
        agg_group *grp = &a->groups[g];
        for (size_t k = 0; k < a->nschema; k++)
            if (grp->keys[k].kind == AG_CELL_TEXT)
                free((char *)grp->keys[k].text);
        free(grp->keys);
    }
    for (size_t s = 0; s < a->nstat; s++)
        free(a->stats[s].vals);
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

static int set_schema(ag_aggregate *a, const ag_aggregate_options *opt, ag_error *err)
{
    size_t n = 0;
    if (opt->by_default)
        for (const char *const *k = ag_identifying_keys; *k; k++)
            n += !names_input(*k);
    else
        n = opt->nby;
    if (n > AG_RECORDS_KEYS_MAX)
        return ag_error_set(err, AG_ELIMIT, "more than %d --by keys", AG_RECORDS_KEYS_MAX);
    a->schema = calloc(n ? n : 1, sizeof *a->schema);
    a->present = calloc(n ? n : 1, 1);
    if (!a->schema || !a->present)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t i = 0, k = 0; i < n; k++) {
        const char *key = opt->by_default ? ag_identifying_keys[k] : opt->by[k];
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

/* Keep x among the values (compare's permutations). */
static int stat_keep(agg_stat *s, double x, ag_error *err)
{
    if (AGB_VEC_RESERVE(s->vals, s->vcap, s->nval + 1) != 0)
        return ag_error_set(err, AG_ENOMEM, "out of memory for the values of a metric");
    s->vals[s->nval++] = x;
    return AG_OK;
}

static int stat_value(agg_stat *s, double x, int keep, ag_error *err)
{
    int status = keep ? stat_keep(s, x, err) : AG_OK;
    if (status == AG_OK)
        ag_moments_add(&s->m, x);
    return status;
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
static int serialize(ag_aggregate *a, const ag_cell *keys, ag_error *err)
{
    char buf[48];
    int status = AG_OK;
    a->idlen = 0;
    for (size_t k = 0; status == AG_OK && k < a->nschema; k++) {
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

static int copy_cell(ag_cell *dst, const ag_cell *src)
{
    *dst = *src;
    if (src->kind == AG_CELL_TEXT && !(dst->text = strdup(src->text))) {
        dst->kind = AG_CELL_NULL;
        return AG_ENOMEM;
    }
    return AG_OK;
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
    g->keys = calloc(a->nschema ? a->nschema : 1, sizeof *g->keys);
    int status = g->keys ? AG_OK : AG_ENOMEM;
    for (size_t k = 0; status == AG_OK && k < a->nschema; k++)
        status = copy_cell(&g->keys[k], &keys[k]);
    const char *stored = NULL;
    if (status == AG_OK)
        status = agi_strmap_put(&a->group_map, a->idbuf, a->idlen, (int32_t)a->ngroup, &stored);
    if (status != AG_OK) {
        for (size_t k = 0; g->keys && k < a->nschema; k++)
            if (g->keys[k].kind == AG_CELL_TEXT)
                free((char *)g->keys[k].text);
        free(g->keys);
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

static const char *const suffixes[] = {"_n", "_std", "_ci_low", "_ci_high"};

/* The columns of one metric in an output table: K alone (human formats),
 * else K and its four companions. */
static size_t columns_per_metric(int human)
{
    return human ? 1 : 1 + sizeof suffixes / sizeof *suffixes;
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

/* One key of a record that is neither a group key nor identifying. */
static int add_metric(ag_aggregate *a, size_t gi, const row_index *ri, size_t k, int summary,
                      ag_error *err)
{
    const ag_row *row = ri->row;
    const char *key = row->keys[k];
    const ag_cell *c = &row->cells[k], *cn = summary ? companion(ri, key, "_n") : NULL;
    if (summary && is_companion(ri, key))
        return AG_OK;
    int m = metric_add(a, key, err);
    if (m < 0)
        return err && err->status ? err->status : AG_ENOMEM;
    agg_stat *s = stat_of(a, gi, (size_t)m);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a group's metrics");
    if (c->kind == AG_CELL_TEXT) {
        a->metric_text[m] = 1;
        return AG_OK;
    }
    if (cn) {
        if (a->keep_values)
            return ag_error_set(err, AG_EINVAL, "an aggregated record ('%s_n') has no values "
                                "to permute", key);
        ag_moments part;
        int status = summary_moments(ri, key, c, cn, &part, err);
        if (status == AG_OK)
            ag_moments_merge(&s->m, &part);
        return status;
    }
    return numeric(c) ? stat_value(s, c->value, a->keep_values, err) : AG_OK;
}

/* The group of a record, created when new; NULL (err set) on failure. */
static agg_group *row_group(ag_aggregate *a, const row_index *ri, ag_error *err)
{
    ag_cell keys[64];
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

/* The metrics of a record into group g; n its records (1, or its "n"). */
static int row_metrics(ag_aggregate *a, agg_group *g, const row_index *ri, ag_error *err)
{
    const ag_row *row = ri->row;
    uint64_t n = 1;
    const ag_cell *cn = row_get(ri, "n");
    int summary = cn != NULL, status = AG_OK;
    if (summary && !count_of(cn, &n))
        return ag_error_set(err, AG_EFORMAT, "'n' is not a count of records");
    a->summaries |= summary;
    for (size_t k = 0; status == AG_OK && k < row->count; k++) {
        const char *key = row->keys[k];
        if (schema_index(a, key) >= 0 || identifying(key) || (summary && strcmp(key, "n") == 0))
            continue;
        status = add_metric(a, (size_t)(g - a->groups), ri, k, summary, err);
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
    if (a->by_default != b->by_default || a->nschema != b->nschema)
        return 0;
    for (size_t k = 0; k < a->nschema; k++)
        if (strcmp(a->schema[k], b->schema[k]) != 0)
            return 0;
    return 1;
}

static int merge_stat(agg_stat *into, const agg_stat *from, int keep, ag_error *err)
{
    for (size_t v = 0; keep && v < from->nval; v++) {
        int status = stat_keep(into, from->vals[v], err);
        if (status != AG_OK)
            return status;
    }
    ag_moments_merge(&into->m, &from->m);
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
        int status = merge_stat(s, fs, into->keep_values, err);
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
    if (status != AG_OK)
        return status;
    for (size_t k = 0; k < into->nschema; k++)
        into->present[k] |= from->present[k];
    into->records += from->records;
    into->summaries |= from->summaries;
    return AG_OK;
}

/* ---- the table ------------------------------------------------------------------------ */

size_t agg_key_columns(const ag_aggregate *a, size_t *cols)
{
    size_t n = 0;
    for (size_t k = 0; k < a->nschema; k++)
        if (!a->by_default || a->present[k])
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

/* The column keys: group keys, n, then per metric K (and K_std, K_ci_low,
 * K_ci_high, K_n unless human). */
static int table_columns(const ag_aggregate *a, const size_t *cols, size_t nkey, int human,
                         ag_table *out, ag_error *err)
{
    size_t per = columns_per_metric(human), n = 0;
    char **names = calloc(nkey + 1 + a->nmetric * per, sizeof *names);
    int status = names ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t k = 0; status == AG_OK && k < nkey; k++)
        if (!(names[n++] = strdup(a->schema[cols[k]])))
            status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK && !(names[n++] = strdup("n")))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    static const char *const order[] = {"", "_std", "_ci_low", "_ci_high", "_n"};
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

/* The cells of one metric of one group from `c` on; returns the count. */
static size_t metric_cells(const ag_aggregate *a, const ag_moments *m, int human, ag_cell *c)
{
    double lo, hi;
    ag_moments_ci(m, a->level, &lo, &hi);
    double mean = m->n ? m->mean : NAN;
    if (human) {
        c[0] = number_cell(mean);
        if (m->n) {
            c[0].kind = AG_CELL_MEAN_CI;
            c[0].half = hi - m->mean;
        }
        return 1;
    }
    c[0] = number_cell(mean);
    c[1] = number_cell(ag_moments_std(m));
    c[2] = number_cell(lo);
    c[3] = number_cell(hi);
    c[4] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)m->n};
    return 5;
}

/* A table of every group by every metric is mostly empty when each group
 * holds few of the metrics (2,000 records of one group and one metric each:
 * 80 KB of input, 20 million cells, 640 MB). Such a table is refused before
 * it is built: past AG_AGGREGATE_SPARSE_CELLS cells, at most
 * AG_AGGREGATE_SPARSE_RATIO cells a value met. A dense table of any size
 * (every head of a long corpus) is built as before. */
static int refuse_sparse(const ag_aggregate *a, size_t nkey, int human, ag_error *err)
{
    size_t per = columns_per_metric(human), nnum = 0;
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
    for (size_t k = 0; !a->by_default && a->records && k < a->nschema; k++)
        if (!a->present[k])
            return ag_error_set(err, AG_ENOTFOUND, "--by '%s': no record has this key",
                                a->schema[k]);
    size_t *cols = calloc(a->nschema ? a->nschema : 1, sizeof *cols);
    if (!cols)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t nkey = agg_key_columns(a, cols);
    int status = refuse_sparse(a, nkey, human, err);
    if (status == AG_OK)
        status = table_columns(a, cols, nkey, human, out, err);
    for (size_t g = 0; status == AG_OK && g < a->ngroup; g++) {
        const agg_group *grp = &a->groups[g];
        ag_cell *row = ag_table_add_row(out, err);
        if (!row) {
            status = err && err->status ? err->status : AG_ENOMEM;
            break;
        }
        status = agg_put_keys(a, grp, cols, nkey, out, row, err);
        size_t c = nkey;
        row[c++] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)grp->n};
        for (size_t m = 0; m < a->nmetric; m++)
            if (!a->metric_text[m])
                c += metric_cells(a, &agg_stat_of(a, grp, m)->m, human, &row[c]);
    }
    free(cols);
    if (status != AG_OK)
        ag_table_free(out);
    return status;
}
