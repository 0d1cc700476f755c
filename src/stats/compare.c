/* compare.c — two sets of records, metric by metric: Welch's t-test and
 * interval for the difference of the means, and optionally a permutation
 * test (aggregate.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "aggregate_int.h"
#include "base/sized_int.h"

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

static int compare_columns(const ag_aggregate *a, const size_t *cols, size_t nkey, int perm,
                           ag_table *out, ag_error *err)
{
    static const char *const stats[] = {"metric", "n_a", "n_b", "mean_a", "mean_b", "diff",
                                        "ci_low", "ci_high", "t", "df", "p", "p_perm"};
    const char *names[64 + sizeof stats / sizeof *stats];
    size_t n = 0;
    if (nkey > 64)
        return ag_error_set(err, AG_ELIMIT, "more than 64 --by keys");
    for (size_t k = 0; k < nkey; k++)
        names[n++] = a->schema[cols[k]];
    for (size_t s = 0; s < sizeof stats / sizeof *stats - !perm; s++)
        names[n++] = stats[s];
    return ag_table_init(out, names, n, err);
}

static ag_cell num(double v)
{
    ag_cell c = {.kind = isfinite(v) ? AG_CELL_NUMBER : AG_CELL_NULL, .value = isfinite(v) ? v : 0};
    return c;
}

/* The row of one metric of one group (ga or gb may be NULL: absent). */
static int compare_row(const ag_compare_options *opt, const char *metric, const agg_stat *sa,
                       const agg_stat *sb, ag_table *out, ag_cell *row, ag_error *err)
{
    ag_welch w;
    ag_welch_test(&sa->m, &sb->m, opt->level, &w);
    int status = ag_table_set_text(out, &row[0], metric, err);
    row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)sa->m.n};
    row[2] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)sb->m.n};
    const double v[] = {w.mean_a, w.mean_b, w.diff, w.ci_low, w.ci_high, w.t, w.df, w.p};
    for (size_t k = 0; k < sizeof v / sizeof *v; k++)
        row[3 + k] = num(v[k]);
    if (status == AG_OK && opt->permutations) {
        double p;
        status = ag_permutation_p(sa->vals, sa->nval, sb->vals, sb->nval, opt->permutations,
                                  opt->seed, &p, err);
        row[11] = num(p);
    }
    return status;
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
            status = compare_row(opt, a->metric[mp->ia[k]], agg_stat_of(a, ga, (size_t)mp->ia[k]),
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
    if (opt->permutations && (!a->keep_values || !b->keep_values))
        return ag_error_set(err, AG_EINVAL, "compare: a permutation test needs the values kept");
    for (size_t k = 0; k < a->nschema; k++)
        if ((a->records && !a->present[k]) || (b->records && !b->present[k]))
            return ag_error_set(err, AG_ENOTFOUND, "%s: --by '%s': no record has this key",
                                a->records && !a->present[k] ? opt->name_a : opt->name_b,
                                a->schema[k]);
    metric_pairs mp;
    size_t *cols = calloc(a->nschema ? a->nschema : 1, sizeof *cols);
    int status = cols ? pick_metrics(a, b, opt, &mp, err) : ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t nkey = cols ? agg_key_columns(a, cols) : 0;
    if (status == AG_OK)
        status = compare_columns(a, cols, nkey, opt->permutations > 0, out, err);
    if (status == AG_OK)
        status = compare_all(a, b, &mp, cols, nkey, opt, out, err);
    if (cols) {
        free(mp.ia);
        free(mp.ib);
    }
    free(cols);
    if (status != AG_OK)
        ag_table_free(out);
    return status;
}
