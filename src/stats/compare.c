/* compare.c — two sets of records, metric by metric, over their units:
 * Welch's t-test and interval for the difference of the means (or the
 * paired t-test, Wilcoxon's signed-rank test and a sign-flip test on
 * per-unit differences), Holm and Benjamini–Hochberg adjustments over the
 * table, Hedges' g, and optionally a permutation test (aggregate.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "aggregate_int.h"
#include "base/sized_int.h"
#include "stats_int.h"

void ag_welch_test(const ag_moments *a, const ag_moments *b, double level, ag_welch *out)
{
    out->mean_a = a->n ? a->mean : NAN;
    out->mean_b = b->n ? b->mean : NAN;
    out->diff = out->mean_a - out->mean_b;
    out->ci_low = out->ci_high = out->t = out->df = out->p = NAN;
    if (a->n < 2 || b->n < 2)
        return;
    double va = a->m2 / (double)(a->n - 1) / (double)a->n; // s_a² / n_a
    double vb = b->m2 / (double)(b->n - 1) / (double)b->n;
    double se2 = va + vb;
    if (!(se2 > 0))
        return;
    double se = sqrt(se2);
    out->t = out->diff / se;
    out->df = se2 * se2 / (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
    out->p = 2 * gsl_cdf_tdist_Q(fabs(out->t), out->df);
    if (level > 0 && level < 1) {
        double half = gsl_cdf_tdist_Pinv((1.0 + level) / 2, out->df) * se;
        out->ci_low = out->diff - half;
        out->ci_high = out->diff + half;
    }
}

int ag_permutation_p(const double *a, size_t na, const double *b, size_t nb,
                     unsigned long permutations, unsigned long seed, double *p, ag_error *err)
{
    *p = NAN;
    if (na == 0 || nb == 0 || permutations == 0)
        return AG_OK;
    size_t n = na + nb;
    double *pool = malloc(n * sizeof *pool); // (na + nb)
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!pool || !rng) {
        free(pool);
        gsl_rng_free(rng);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a permutation test");
    }
    memcpy(pool, a, na * sizeof *a);
    memcpy(pool + na, b, nb * sizeof *b);
    double total = 0, sa = 0;
    for (size_t i = 0; i < n; i++)
        total += pool[i];
    for (size_t i = 0; i < na; i++)
        sa += pool[i];
    /* the observed difference computed as every relabelled one is */
    double observed = fabs(sa / (double)na - (total - sa) / (double)nb);
    double bar = observed * (1 - 1e-12);
    unsigned long extreme = 0;
    gsl_rng_set(rng, seed);
    for (unsigned long k = 0; k < permutations; k++) {
        /* the first na places of a partial Fisher–Yates shuffle are a
         * uniformly drawn relabelling */
        double s = 0;
        for (size_t i = 0; i < na; i++) {
            size_t j = i + (size_t)gsl_rng_uniform_int(rng, (unsigned long)(n - i));
            double t = pool[i];
            pool[i] = pool[j];
            pool[j] = t;
            s += pool[i];
        }
        extreme += fabs(s / (double)na - (total - s) / (double)nb) >= bar;
    }
    *p = (1.0 + (double)extreme) / (1.0 + (double)permutations);
    free(pool);
    gsl_rng_free(rng);
    return AG_OK;
}

void ags_hedges_g(const ag_moments *a, const ag_moments *b, double level, double out[3])
{
    out[0] = out[1] = out[2] = NAN;
    if (a->n < 2 || b->n < 2)
        return;
    double na = (double)a->n, nb = (double)b->n, m = na + nb - 2;
    double sp = sqrt((a->m2 + b->m2) / m);
    if (!(sp > 0))
        return;
    double g = (1 - 3 / (4 * m - 1)) * (a->mean - b->mean) / sp;
    double se = sqrt((na + nb) / (na * nb) + g * g / (2 * (na + nb)));
    out[0] = g;
    if (level > 0 && level < 1) {
        double z = gsl_cdf_ugaussian_Pinv((1 + level) / 2);
        out[1] = g - z * se;
        out[2] = g + z * se;
    }
}

/* ---- the table ----------------------------------------------------------------------- */

/* The metrics to compare, as indices into a and b. */
typedef struct {
    int *ia, *ib;
    size_t count;
} metric_pairs;

static int usable(const ag_aggregate *x, int m)
{
    return m >= 0 && !x->metric_text[m];
}

static int pick_metrics(const ag_aggregate *a, const ag_aggregate *b,
                        const ag_compare_options *opt, metric_pairs *mp, ag_error *err)
{
    size_t cap = opt->metrics ? opt->nmetrics : a->nmetric;
    mp->ia = calloc(cap ? cap : 1, sizeof *mp->ia);
    mp->ib = calloc(cap ? cap : 1, sizeof *mp->ib);
    mp->count = 0;
    if (!mp->ia || !mp->ib)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t k = 0; k < cap; k++) {
        const char *name = opt->metrics ? opt->metrics[k] : a->metric[k];
        if (!opt->metrics && agg_key_listed(agg_size_keys, name))
            continue; /* sizes are not findings (aggregate_int.h) */
        int ma = agg_metric_index(a, name), mb = agg_metric_index(b, name);
        if (opt->metrics && (!usable(a, ma) || !usable(b, mb)))
            return ag_error_set(err, AG_ENOTFOUND, "%s: '%s' is not a numeric key of its records",
                                !usable(a, ma) ? opt->name_a : opt->name_b, name);
        if (usable(a, ma) && usable(b, mb)) {
            mp->ia[mp->count] = ma;
            mp->ib[mp->count++] = mb;
        }
    }
    return AG_OK;
}

/* The columns after the group keys; the paired and permutation ones only
 * when asked for. */
enum {
    C_METRIC, C_UNIT, C_NA, C_NB, C_NUNITS, C_MEAN_A, C_MEAN_B, C_DIFF, C_CI_LOW, C_CI_HIGH,
    C_T, C_DF, C_P, C_P_HOLM, C_Q_BH, C_G, C_G_LOW, C_G_HIGH, C_P_WILCOXON, C_DZ, C_P_PERM,
    C_P_PERM_HOLM, C_Q_PERM_BH, C_COUNT
};
static const char *const column_names[C_COUNT] = {
    "metric", "unit", "n_a", "n_b", "n_units", "mean_a", "mean_b", "diff", "ci_low", "ci_high",
    "t", "df", "p", "p_holm", "q_bh", "hedges_g", "hedges_g_ci_low", "hedges_g_ci_high",
    "p_wilcoxon", "dz", "p_perm", "p_perm_holm", "q_perm_bh"};

/* Column c's index after the keys, or -1 when the table has none. */
static int column_at(const ag_compare_options *opt, int c)
{
    if (c < C_P_WILCOXON)
        return c;
    if (c < C_P_PERM)
        return opt->paired ? c : -1;
    if (!opt->permutations)
        return -1;
    return opt->paired ? c : c - 2;
}

static int compare_columns(const ag_aggregate *a, const size_t *cols, size_t nkey,
                           const ag_compare_options *opt, ag_table *out, ag_error *err)
{
    const char *names[64 + C_COUNT];
    size_t n = 0;
    if (nkey > 64)
        return ag_error_set(err, AG_ELIMIT, "more than 64 --by keys");
    for (size_t k = 0; k < nkey; k++)
        names[n++] = a->schema[cols[k]];
    for (int c = 0; c < C_COUNT; c++)
        if (column_at(opt, c) >= 0)
            names[n++] = column_names[c];
    return ag_table_init(out, names, n, err);
}

static ag_cell num(double v)
{
    ag_cell c = {.kind = isfinite(v) ? AG_CELL_NUMBER : AG_CELL_NULL, .value = isfinite(v) ? v : 0};
    return c;
}

static void put(const ag_compare_options *opt, ag_cell *row, int c, double v)
{
    int at = column_at(opt, c);
    if (at >= 0)
        row[at] = num(v);
}

static void put_count(ag_cell *row, int c, uint64_t n)
{
    row[c] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)n};
}

static int ascending(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* An unpaired row: Welch over the unit means, Hedges' g, p_perm. */
static int unpaired_row(const ag_aggregate *a, const ag_aggregate *b, const ag_compare_options *opt,
                        const agg_stat *sa, const agg_stat *sb, ag_cell *row, ag_error *err)
{
    ag_moments ma, mb;
    agg_stat_moments(sa, &ma);
    agg_stat_moments(sb, &mb);
    ag_welch w;
    ag_welch_test(&ma, &mb, opt->level, &w);
    put_count(row, C_NA, ma.n);
    put_count(row, C_NB, mb.n);
    put_count(row, C_NUNITS, ma.n + mb.n);
    const double v[] = {w.mean_a, w.mean_b, w.diff, w.ci_low, w.ci_high, w.t, w.df, w.p};
    for (size_t k = 0; k < sizeof v / sizeof *v; k++)
        put(opt, row, C_MEAN_A + (int)k, v[k]);
    double g[3];
    ags_hedges_g(&ma, &mb, opt->level, g);
    put(opt, row, C_G, g[0]);
    put(opt, row, C_G_LOW, g[1]);
    put(opt, row, C_G_HIGH, g[2]);
    if (!opt->permutations)
        return AG_OK;
    double *xa = NULL, *xb = NULL, p = NAN;
    size_t na = 0, nb = 0;
    int status = agg_stat_values(a, sa, &xa, &na, err);
    if (status == AG_OK)
        status = agg_stat_values(b, sb, &xb, &nb, err);
    if (status == AG_OK) { /* sorted: the draws do not depend on the order records came in */
        if (na)
            qsort(xa, na, sizeof *xa, ascending);
        if (nb)
            qsort(xb, nb, sizeof *xb, ascending);
        status = ag_permutation_p(xa, na, xb, nb, opt->permutations, opt->seed, &p, err);
    }
    put(opt, row, C_P_PERM, p);
    free(xa);
    free(xb);
    return status;
}

/* The error for a unit of x's group gx (named as given) the other lacks. */
static int unmatched(const ag_aggregate *x, uint32_t u, const char *in, const char *other,
                     ag_error *err)
{
    char name[256];
    agg_unit_name(x, u, name, sizeof name);
    return ag_error_set(err, AG_EINVAL, "compare --paired: the unit %s of %s has no match in %s",
                        name, in, other);
}

/* The units of every group of x are in the same group of y; else the
 * error naming the first unmatched one (lowest group, then unit, in x's
 * order of first appearance). One pass over x's (group, unit) pairs. */
static int check_matched(const ag_aggregate *x, const ag_aggregate *y, const char *nx,
                         const char *ny, ag_error *err)
{
    const agi_u64map *m = &x->group_units;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; m->slots && i < m->cap; i++) {
        uint64_t key = m->slots[i].key;
        if (key == AGI_U64MAP_EMPTY || key >= first)
            continue;
        long gy = agg_find_group(y, &x->groups[key >> 32]);
        long uy = agg_find_unit(y, x, (uint32_t)(key & 0xffffffffu));
        if (gy < 0 || uy < 0 || !agg_group_has_unit(y, &y->groups[gy], (uint32_t)uy))
            first = key;
    }
    return first == UINT64_MAX ? AG_OK
                               : unmatched(x, (uint32_t)(first & 0xffffffffu), nx, ny, err);
}

/* A paired row: the differences of the units both hold a value for. */
static int paired_row(const ag_aggregate *a, const ag_aggregate *b, const ag_compare_options *opt,
                      const agg_stat *sa, const agg_stat *sb, ag_cell *row, ag_error *err)
{
    size_t n = 0;
    double *d = malloc((sa->nslot ? sa->nslot : 1) * sizeof *d);
    if (!d)
        return ag_error_set(err, AG_ENOMEM, "out of memory for paired differences");
    ag_moments ma = {0}, mb = {0}, md = {0};
    for (size_t i = 0; i < sa->nslot; i++) {
        long ub = agg_find_unit(b, a, sa->slots[i].unit);
        const agg_slot *yb = ub >= 0 ? agg_slot_of(b, sb, (uint32_t)ub) : NULL;
        if (!yb)
            continue;
        double x = sa->slots[i].sum / sa->slots[i].w, y = yb->sum / yb->w;
        ag_moments_add(&ma, x);
        ag_moments_add(&mb, y);
        d[n++] = x - y;
    }
    qsort(d, n, sizeof *d, ascending); /* the same sums in any order of arrival */
    for (size_t i = 0; i < n; i++)
        ag_moments_add(&md, d[i]);
    put_count(row, C_NA, n);
    put_count(row, C_NB, n);
    put_count(row, C_NUNITS, n);
    put(opt, row, C_MEAN_A, n ? ma.mean : NAN);
    put(opt, row, C_MEAN_B, n ? mb.mean : NAN);
    put(opt, row, C_DIFF, n ? md.mean : NAN);
    double sd = ag_moments_std(&md);
    if (n >= 2 && sd > 0) { /* Student (1908): t on n − 1 df */
        double se = sd / sqrt((double)n), df = (double)(n - 1), t = md.mean / se;
        double half = gsl_cdf_tdist_Pinv((1.0 + opt->level) / 2, df) * se;
        put(opt, row, C_T, t);
        put(opt, row, C_DF, df);
        put(opt, row, C_P, 2 * gsl_cdf_tdist_Q(fabs(t), df));
        put(opt, row, C_CI_LOW, md.mean - half);
        put(opt, row, C_CI_HIGH, md.mean + half);
        put(opt, row, C_DZ, md.mean / sd);
    }
    double g[3], pw = NAN, pp = NAN;
    ags_hedges_g(&ma, &mb, opt->level, g);
    put(opt, row, C_G, g[0]);
    put(opt, row, C_G_LOW, g[1]);
    put(opt, row, C_G_HIGH, g[2]);
    int status = ags_wilcoxon_p(d, n, &pw, err);
    put(opt, row, C_P_WILCOXON, pw);
    if (status == AG_OK && opt->permutations)
        status = ags_signflip_p(d, n, opt->permutations, opt->seed, &pp, err);
    put(opt, row, C_P_PERM, pp);
    free(d);
    return status;
}

/* The row of one metric of one group (ga or gb may be NULL: absent). */
static int compare_row(const ag_aggregate *a, const ag_aggregate *b,
                       const ag_compare_options *opt, const char *metric, const agg_stat *sa,
                       const agg_stat *sb, ag_table *out, ag_cell *row, ag_error *err)
{
    char label[AG_RECORDS_KEY_MAX * 4];
    agg_unit_label(a, label, sizeof label);
    for (int c = 0; c < C_COUNT; c++)
        if (column_at(opt, c) >= 0)
            row[column_at(opt, c)] = (ag_cell){0};
    int status = ag_table_set_text(out, &row[C_METRIC], metric, err);
    if (status == AG_OK)
        status = ag_table_set_text(out, &row[C_UNIT], label, err);
    if (status == AG_OK && opt->paired && (sa->direct.n || sb->direct.n))
        status = ag_error_set(err, AG_EINVAL, "compare --paired: '%s' of %s has units known by "
                              "their moments only (aggregated records merged as shards): "
                              "nothing to pair", metric, sa->direct.n ? opt->name_a : opt->name_b);
    if (status != AG_OK)
        return status;
    return opt->paired ? paired_row(a, b, opt, sa, sb, row, err)
                       : unpaired_row(a, b, opt, sa, sb, row, err);
}

/* The rows of group ga of a (and its match in b), or of gb alone. */
static int compare_group(const ag_aggregate *a, const ag_aggregate *b, const agg_group *ga,
                         const agg_group *gb, const metric_pairs *mp, const size_t *cols,
                         size_t nkey, const ag_compare_options *opt, ag_table *out, ag_error *err)
{
    const agg_group *ka = ga ? ga : gb;
    for (size_t k = 0; k < mp->count; k++) {
        ag_cell *row = ag_table_add_row(out, err);
        if (!row)
            return err && err->status ? err->status : AG_ENOMEM;
        int status = agg_put_keys(ga ? a : b, ka, cols, nkey, out, row, err);
        if (status == AG_OK)
            status = compare_row(a, b, opt, a->metric[mp->ia[k]],
                                 agg_stat_of(a, ga, (size_t)mp->ia[k]),
                                 agg_stat_of(b, gb, (size_t)mp->ib[k]), out, row + nkey, err);
        if (status != AG_OK)
            return status;
    }
    return AG_OK;
}

static int compare_all(const ag_aggregate *a, const ag_aggregate *b, const metric_pairs *mp,
                       const size_t *cols, size_t nkey, const ag_compare_options *opt,
                       ag_table *out, ag_error *err)
{
    int status = AG_OK;
    for (size_t g = 0; status == AG_OK && g < a->ngroup; g++) {
        long gb = agg_find_group(b, &a->groups[g]);
        status = compare_group(a, b, &a->groups[g], gb >= 0 ? &b->groups[gb] : NULL, mp, cols,
                               nkey, opt, out, err);
    }
    for (size_t g = 0; status == AG_OK && g < b->ngroup; g++)
        if (agg_find_group(a, &b->groups[g]) < 0)
            status = compare_group(a, b, NULL, &b->groups[g], mp, cols, nkey, opt, out, err);
    return status;
}

/* Column `from`'s p-values adjusted over every row into columns holm, bh. */
static int adjust(ag_table *t, size_t nkey, const ag_compare_options *opt, int from, int holm,
                  int bh, ag_error *err)
{
    if (column_at(opt, from) < 0 || t->nrow == 0)
        return AG_OK;
    size_t n = t->nrow;
    double *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
    int status = p && q ? AG_OK : AG_ENOMEM;
    for (size_t r = 0; status == AG_OK && r < n; r++) {
        const ag_cell *c = &t->cells[r * t->ncol + nkey + (size_t)column_at(opt, from)];
        p[r] = c->kind == AG_CELL_NULL ? NAN : c->value;
    }
    if (status == AG_OK)
        status = ags_holm(p, n, q);
    for (size_t r = 0; status == AG_OK && r < n; r++)
        t->cells[r * t->ncol + nkey + (size_t)column_at(opt, holm)] = num(q[r]);
    if (status == AG_OK)
        status = ags_bh(p, n, q);
    for (size_t r = 0; status == AG_OK && r < n; r++)
        t->cells[r * t->ncol + nkey + (size_t)column_at(opt, bh)] = num(q[r]);
    free(p);
    free(q);
    return status == AG_OK ? AG_OK : ag_error_set(err, status, "out of memory for adjusted p-values");
}

/* The options of a caller of any version (sized, core.h) as this one's. */
static int compare_options_read(const ag_compare_options *given, ag_compare_options *o,
                                ag_error *err)
{
    *o = (ag_compare_options)AG_COMPARE_OPTIONS_DEFAULT;
    if (given && AG_SIZED_READ(o, given, ag_compare_options, err) != AG_OK)
        return AG_EINVAL;
    if (o->permutations > AG_COMPARE_PERMUTATIONS_MAX)
        return ag_error_set(err, AG_EINVAL, "--permutations takes an integer from 1 to %lu, "
                            "not '%lu'", AG_COMPARE_PERMUTATIONS_MAX, o->permutations);
    return AG_OK;
}

int ag_compare_options_check(const ag_compare_options *opt, ag_error *err)
{
    ag_compare_options o;
    return compare_options_read(opt, &o, err);
}

int ag_compare_table(const ag_aggregate *a, const ag_aggregate *b,
                     const ag_compare_options *given, ag_table *out, ag_error *err)
{
    memset(out, 0, sizeof *out);
    ag_compare_options o;
    if (compare_options_read(given, &o, err) != AG_OK)
        return AG_EINVAL;
    const ag_compare_options *opt = &o;
    if (a->by_default || b->by_default || a->nschema != b->nschema)
        return ag_error_set(err, AG_EINVAL, "compare: both inputs grouped by the same --by keys");
    for (size_t k = 0; k < a->nschema; k++)
        if (strcmp(a->schema[k], b->schema[k]) != 0)
            return ag_error_set(err, AG_EINVAL, "compare: both inputs grouped by the same --by keys");
    if ((opt->permutations || opt->paired) && (!a->keep_values || !b->keep_values))
        return ag_error_set(err, AG_EINVAL, "compare: a permutation test or a paired comparison "
                            "needs the unit means kept (keep_values)");
    if (a->unit_default != b->unit_default || a->nukey != b->nukey)
        return ag_error_set(err, AG_EINVAL, "compare: both inputs with the same --unit keys");
    for (size_t k = 0; k < a->nukey; k++)
        if (strcmp(a->ukey[k], b->ukey[k]) != 0)
            return ag_error_set(err, AG_EINVAL, "compare: both inputs with the same --unit keys");
    if (opt->paired && (a->record_units || b->record_units))
        return ag_error_set(err, AG_EINVAL, "compare --paired: the records of %s have no unit "
                            "to match (no text or input key): name the unit with --unit KEYS",
                            a->record_units ? opt->name_a : opt->name_b);
    if (a->stack_implied && a->records && b->records && a->present[0] != b->present[0])
        return ag_error_set(err, AG_EINVAL, "compare: the records of %s carry \"stack\" (an "
                            "encoder-decoder model's) and those of %s do not",
                            a->present[0] ? opt->name_a : opt->name_b,
                            a->present[0] ? opt->name_b : opt->name_a);
    for (size_t k = a->stack_implied; k < a->nschema; k++)
        if ((a->records && !a->present[k]) || (b->records && !b->present[k]))
            return ag_error_set(err, AG_ENOTFOUND, "%s: --by '%s': no record has this key",
                                a->records && !a->present[k] ? opt->name_a : opt->name_b,
                                a->schema[k]);
    metric_pairs mp;
    size_t *cols = calloc(a->nschema ? a->nschema : 1, sizeof *cols);
    int status = cols ? pick_metrics(a, b, opt, &mp, err) : ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t nkey = cols ? agg_key_columns(a, cols) : 0;
    if (status == AG_OK && opt->paired)
        status = check_matched(a, b, opt->name_a, opt->name_b, err);
    if (status == AG_OK && opt->paired)
        status = check_matched(b, a, opt->name_b, opt->name_a, err);
    if (status == AG_OK)
        status = compare_columns(a, cols, nkey, opt, out, err);
    if (status == AG_OK)
        status = compare_all(a, b, &mp, cols, nkey, opt, out, err);
    if (status == AG_OK)
        status = adjust(out, nkey, opt, C_P, C_P_HOLM, C_Q_BH, err);
    if (status == AG_OK)
        status = adjust(out, nkey, opt, C_P_PERM, C_P_PERM_HOLM, C_Q_PERM_BH, err);
    if (cols) {
        free(mp.ia);
        free(mp.ib);
    }
    free(cols);
    if (status != AG_OK)
        ag_table_free(out);
    return status;
}
