/* test_aggregate.c — corpus statistics (aggregate.h) against closed forms:
 * the moments and Student-t interval of 1, 2, 3 (the t quantile for 2
 * degrees of freedom in closed form), Chan's merge of shards against the
 * whole, null and boolean handling, aggregated records aggregating again,
 * Welch's test where df = 4 (whose t CDF and quantile have closed forms),
 * and permutation tests whose p is exact. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

static void near(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * fabs(want), "%s = %.17g, expected %.17g (rel %g)", what,
              got, want, rel);
}

/* Student's t quantile, 2 degrees of freedom: F(t) = 1/2 + t / (2√(2 + t²))
 * solved for t. (4.302652729749464 for p = 0.975; scipy 1.10's t.ppf gives
 * 4.302652729911275, 4e-11 off.) */
static double t2_quantile(double p)
{
    double a = 2 * p - 1;
    return a * sqrt(2 / (4 * p * (1 - p)));
}

/* 4 degrees of freedom: with w = 1 + t²/4, F(t) = 1/2 + (3/8)(t/√w)(1 −
 * t²/(12w)); its quantile from the cubic's trigonometric root:
 * t = 2√(q − 1), q = cos(arccos(√α)/3)/√α, α = 4p(1 − p). */
static double t4_cdf(double t)
{
    double w = 1 + t * t / 4;
    return 0.5 + 0.375 * (t / sqrt(w)) * (1 - t * t / (12 * w));
}

static double t4_quantile(double p)
{
    double al = 4 * p * (1 - p), q = cos(acos(sqrt(al)) / 3) / sqrt(al);
    return 2 * sqrt(q - 1);
}

Test(aggregate, moments_closed_form)
{
    ag_moments m = {0};
    for (int k = 1; k <= 3; k++)
        ag_moments_add(&m, k);
    cr_assert_eq(m.n, 3);
    near(m.mean, 2, 4 * DBL_EPSILON, "mean");
    near(ag_moments_std(&m), 1, 4 * DBL_EPSILON, "std");
    double lo, hi, half = t2_quantile(0.975) / sqrt(3);
    ag_moments_ci(&m, 0.95, &lo, &hi);
    near(hi - 2, half, 1e-13, "half-width at 0.95");
    near(2 - lo, half, 1e-13, "half-width at 0.95");
    ag_moments_ci(&m, 0.5, &lo, &hi);
    near(hi - 2, t2_quantile(0.75) / sqrt(3), 1e-13, "half-width at 0.5");
}

Test(aggregate, moments_undefined)
{
    ag_moments m = {0};
    double lo, hi;
    cr_assert(isnan(ag_moments_std(&m)));
    ag_moments_add(&m, 5);
    cr_assert(isnan(ag_moments_std(&m)), "one value has no sample std");
    ag_moments_ci(&m, 0.95, &lo, &hi);
    cr_assert(isnan(lo) && isnan(hi));
    ag_moments_add(&m, 5);
    cr_assert_eq(ag_moments_std(&m), 0);
    ag_moments_ci(&m, 0.95, &lo, &hi);
    cr_assert(lo == 5 && hi == 5, "equal values: the interval is the point");
}

/* x_k = 1000 + sin(k)·k/10: an offset that a naive sum of squares would
 * cancel badly. The reference is the two-pass formula in long double. */
static double sample(size_t k)
{
    return 1000 + sin((double)k) * (double)k / 10;
}

Test(aggregate, merge_equals_whole)
{
    enum { N = 1000 };
    ag_moments whole = {0};
    long double sum = 0, ss = 0;
    for (size_t k = 0; k < N; k++) {
        ag_moments_add(&whole, sample(k));
        sum += sample(k);
    }
    long double mean = sum / N;
    for (size_t k = 0; k < N; k++)
        ss += (sample(k) - mean) * (sample(k) - mean);
    near(whole.mean, (double)mean, 1e-15, "Welford mean");
    near(whole.m2, (double)ss, 1e-11, "Welford M2");
    /* shards of unequal sizes (one empty), merged in two orders */
    static const size_t cuts[] = {0, 1, 1, 37, 500, 731, N};
    ag_moments shard[6] = {{0}}, fwd = {0}, back = {0};
    for (size_t s = 0; s < 6; s++)
        for (size_t k = cuts[s]; k < cuts[s + 1]; k++)
            ag_moments_add(&shard[s], sample(k));
    for (size_t s = 0; s < 6; s++) {
        ag_moments_merge(&fwd, &shard[s]);
        ag_moments_merge(&back, &shard[5 - s]);
    }
    cr_assert_eq(fwd.n, N);
    cr_assert_eq(back.n, N);
    near(fwd.mean, whole.mean, 1e-15, "merged mean");
    near(back.mean, whole.mean, 1e-15, "merged mean, reversed");
    near(fwd.m2, (double)ss, 1e-11, "merged M2");
    near(back.m2, (double)ss, 1e-11, "merged M2, reversed");
}

/* ---- the aggregate over records ------------------------------------------- */

typedef struct {
    const char *keys[8];
    ag_cell cells[8];
    size_t n;
} row_builder;

static void put(row_builder *b, const char *key, ag_cell_kind kind, double v)
{
    b->keys[b->n] = key;
    b->cells[b->n++] = (ag_cell){.kind = kind, .value = v};
}

static void add(ag_aggregate *a, const row_builder *b)
{
    ag_row row = {.count = b->n, .keys = b->keys, .cells = b->cells};
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_add(a, &row, &err), AG_OK, "%s", err.message);
}

static ag_aggregate *new_aggregate(int by_default, const char *const *by, size_t nby)
{
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .by_default = by_default, .by = by, .nby = nby, .level = 0.95};
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_new(&opt, &a, &err), AG_OK, "%s", err.message);
    return a;
}

static size_t col(const ag_table *t, const char *key)
{
    for (size_t c = 0; c < t->ncol; c++)
        if (strcmp(t->keys[c], key) == 0)
            return c;
    cr_assert_fail("no column %s", key);
    return 0;
}

static const ag_cell *at(const ag_table *t, size_t r, const char *key)
{
    cr_assert(r < t->nrow);
    return &t->cells[r * t->ncol + col(t, key)];
}

/* Records (layer 0, head h, text k): x = k + 1 for head 0 (1, 2, 3), null
 * but in text 0 for head 1, causal true for texts 0 and 1. */
static void corpus(ag_aggregate *a, int from, int to)
{
    for (int k = from; k < to; k++)
        for (int h = 0; h < 2; h++) {
            row_builder b = {0};
            put(&b, "layer", AG_CELL_INTEGER, 0);
            put(&b, "head", AG_CELL_INTEGER, h);
            put(&b, "x", h == 0 || k == 0 ? AG_CELL_NUMBER : AG_CELL_NULL, k + 1);
            put(&b, "causal", AG_CELL_BOOL, k < 2);
            put(&b, "text", AG_CELL_INTEGER, k);
            add(a, &b);
        }
}

Test(aggregate, groups_nulls_booleans)
{
    ag_aggregate *a = new_aggregate(1, NULL, 0);
    corpus(a, 0, 3);
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK, "%s", err.message);
    static const char *const keys[] = {"layer", "head", "unit", "n", "n_units", "x", "x_std", "x_ci_low",
                                       "x_ci_high", "x_n", "causal", "causal_std",
                                       "causal_ci_low", "causal_ci_high", "causal_n"};
    cr_assert_eq(t.ncol, sizeof keys / sizeof *keys, "columns: no text, no model");
    for (size_t c = 0; c < t.ncol; c++)
        cr_assert_str_eq(t.keys[c], keys[c]);
    cr_assert_eq(t.nrow, 2);
    double half = t2_quantile(0.975) / sqrt(3);
    /* head 0: x = 1, 2, 3 */
    cr_assert_eq(at(&t, 0, "n")->value, 3);
    cr_assert_eq(at(&t, 0, "x_n")->kind, AG_CELL_INTEGER);
    cr_assert_eq(at(&t, 0, "x_n")->value, 3);
    near(at(&t, 0, "x")->value, 2, 1e-15, "x");
    near(at(&t, 0, "x_std")->value, 1, 1e-15, "x_std");
    near(at(&t, 0, "x_ci_low")->value, 2 - half, 1e-13, "x_ci_low");
    near(at(&t, 0, "x_ci_high")->value, 2 + half, 1e-13, "x_ci_high");
    /* booleans: the fraction true, 2 of 3 */
    near(at(&t, 0, "causal")->value, 2.0 / 3, 1e-15, "causal");
    near(at(&t, 0, "causal_std")->value, sqrt(1.0 / 3), 1e-15, "causal_std");
    /* head 1: one non-null x: mean, but no std or interval */
    cr_assert_eq(at(&t, 1, "n")->value, 3);
    cr_assert_eq(at(&t, 1, "x_n")->value, 1);
    cr_assert_eq(at(&t, 1, "x")->value, 1);
    cr_assert_eq(at(&t, 1, "x_std")->kind, AG_CELL_NULL);
    cr_assert_eq(at(&t, 1, "x_ci_low")->kind, AG_CELL_NULL);
    cr_assert_eq(at(&t, 1, "x_ci_high")->kind, AG_CELL_NULL);
    ag_table_free(&t);
    /* human: mean ± half-width cells */
    cr_assert_eq(ag_aggregate_table(a, 1, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(t.ncol, 7);
    cr_assert_eq(at(&t, 0, "x")->kind, AG_CELL_MEAN_CI);
    near(at(&t, 0, "x")->half, half, 1e-13, "half");
    cr_assert(isnan(at(&t, 1, "x")->half));
    ag_table_free(&t);
    ag_aggregate_free(a);
}

Test(aggregate, empty_metric_is_null)
{
    ag_aggregate *a = new_aggregate(1, NULL, 0);
    row_builder b = {0};
    put(&b, "layer", AG_CELL_INTEGER, 1);
    put(&b, "y", AG_CELL_NULL, 0);
    add(a, &b);
    ag_table t;
    cr_assert_eq(ag_aggregate_table(a, 0, &t, NULL), AG_OK);
    cr_assert_eq(at(&t, 0, "y")->kind, AG_CELL_NULL, "K_n = 0: K is null");
    cr_assert_eq(at(&t, 0, "y_n")->value, 0);
    cr_assert_eq(t.ncol, 9, "layer, unit, n, n_units and y's five keys: no head column");
    ag_table_free(&t);
    ag_aggregate_free(a);
}

/* The aggregated records of shards, aggregated again, and the merge of the
 * shards' aggregates, both equal the aggregate of the whole. */
Test(aggregate, shards_aggregate_again)
{
    ag_aggregate *whole = new_aggregate(1, NULL, 0), *s1 = new_aggregate(1, NULL, 0),
                 *s2 = new_aggregate(1, NULL, 0), *again = new_aggregate(1, NULL, 0);
    corpus(whole, 0, 5);
    corpus(s1, 0, 2);
    corpus(s2, 2, 5);
    ag_table tw, t1, t2, ta, tm;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(whole, 0, &tw, &err), AG_OK);
    cr_assert_eq(ag_aggregate_table(s1, 0, &t1, &err), AG_OK);
    cr_assert_eq(ag_aggregate_table(s2, 0, &t2, &err), AG_OK);
    cr_assert_eq(ag_aggregate_add_table(again, &t1, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_add_table(again, &t2, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_table(again, 0, &ta, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_merge(s1, s2, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_table(s1, 0, &tm, &err), AG_OK);
    const ag_table *got[] = {&ta, &tm};
    for (int g = 0; g < 2; g++) {
        cr_assert_eq(got[g]->ncol, tw.ncol);
        cr_assert_eq(got[g]->nrow, tw.nrow);
        for (size_t k = 0; k < tw.ncol * tw.nrow; k++) {
            const ag_cell *x = &got[g]->cells[k], *y = &tw.cells[k];
            cr_assert_str_eq(got[g]->keys[k % tw.ncol], tw.keys[k % tw.ncol]);
            cr_assert_eq(x->kind, y->kind, "%s kind", tw.keys[k % tw.ncol]);
            if (y->kind != AG_CELL_NULL)
                near(x->value, y->value, 1e-14, tw.keys[k % tw.ncol]);
        }
    }
    ag_table_free(&tw);
    ag_table_free(&t1);
    ag_table_free(&t2);
    ag_table_free(&ta);
    ag_table_free(&tm);
    ag_aggregate_free(whole);
    ag_aggregate_free(s1);
    ag_aggregate_free(s2);
    ag_aggregate_free(again);
}

Test(aggregate, explicit_by)
{
    static const char *const by[] = {"head"}, *const missing[] = {"model"};
    ag_aggregate *a = new_aggregate(0, by, 1), *b = new_aggregate(0, missing, 1),
                 *pooled = new_aggregate(0, NULL, 0);
    corpus(a, 0, 3);
    corpus(b, 0, 3);
    corpus(pooled, 0, 3);
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK);
    cr_assert_str_eq(t.keys[0], "head");
    cr_assert_str_eq(t.keys[1], "unit");
    cr_assert_str_eq(t.keys[2], "n");
    cr_assert_str_eq(t.keys[3], "n_units", "layer is identifying: neither a group nor a metric");
    ag_table_free(&t);
    cr_assert_eq(ag_aggregate_table(b, 0, &t, &err), AG_ENOTFOUND);
    cr_assert(strstr(err.message, "model"), "%s", err.message);
    cr_assert_eq(ag_aggregate_table(pooled, 0, &t, &err), AG_OK);
    cr_assert_eq(t.nrow, 1);
    cr_assert_eq(at(&t, 0, "n")->value, 6);
    /* the units are the texts: x's unit means 1 (text 0: 1 and 1), 2, 3 */
    cr_assert_eq(at(&t, 0, "n_units")->value, 3);
    cr_assert_eq(at(&t, 0, "x_n")->value, 3);
    near(at(&t, 0, "x")->value, 2, 1e-15, "pooled x");
    ag_table_free(&t);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
    ag_aggregate_free(pooled);
}

Test(aggregate, bad_options_and_records)
{
    static const char *const twice[] = {"head", "head"};
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .by = twice, .nby = 2, .level = 0.95};
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_new(&opt, &a, &err), AG_EINVAL);
    opt.nby = 1;
    opt.level = 1;
    cr_assert_eq(ag_aggregate_new(&opt, &a, &err), AG_EINVAL);
    cr_assert_null(a);
    a = new_aggregate(1, NULL, 0);
    row_builder b = {0};
    put(&b, "n", AG_CELL_INTEGER, 4);
    put(&b, "x", AG_CELL_NUMBER, 2);
    put(&b, "x_n", AG_CELL_INTEGER, 3); /* three values need a std */
    ag_row row = {.count = b.n, .keys = b.keys, .cells = b.cells};
    cr_assert_eq(ag_aggregate_add(a, &row, &err), AG_EFORMAT);
    cr_assert(strstr(err.message, "x_std"), "%s", err.message);
    ag_aggregate_free(a);
}

/* ---- Welch and permutations ---------------------------------------------- */

/* a = 1, 2, 3 and b = 2, 3, 4: equal variances 1 and sizes 3, so
 * df = 4 exactly, se = √(2/3), t = −1/se. */
Test(aggregate, welch_closed_form)
{
    ag_moments a = {0}, b = {0};
    for (int k = 1; k <= 3; k++) {
        ag_moments_add(&a, k);
        ag_moments_add(&b, k + 1);
    }
    ag_welch w;
    ag_welch_test(&a, &b, 0.95, &w);
    double se = sqrt(2.0 / 3), t = -1 / se;
    near(w.diff, -1, 1e-15, "diff");
    near(w.t, t, 1e-15, "t");
    near(w.df, 4, 1e-15, "df");
    near(w.p, 2 * (1 - t4_cdf(-t)), 1e-12, "p");
    near(w.ci_high - w.diff, t4_quantile(0.975) * se, 1e-12, "half-width");
    /* a sample of one: means only */
    ag_moments one = {0};
    ag_moments_add(&one, 7);
    ag_welch_test(&one, &b, 0.95, &w);
    near(w.mean_a, 7, 0, "mean_a");
    cr_assert(isnan(w.t) && isnan(w.df) && isnan(w.p) && isnan(w.ci_low));
    /* no spread at all: se = 0, no test */
    ag_moments c = {0};
    ag_moments_add(&c, 1);
    ag_moments_add(&c, 1);
    ag_welch_test(&c, &c, 0.95, &w);
    cr_assert(isnan(w.t) && isnan(w.p));
}

Test(aggregate, permutation_exact_cases)
{
    const double same[] = {2, 2, 2}, zero[] = {0}, one[] = {1};
    double p;
    /* every relabelling is as extreme as the observed one */
    cr_assert_eq(ag_permutation_p(same, 3, same, 2, 999, 1, &p, NULL), AG_OK);
    cr_assert_eq(p, 1.0);
    cr_assert_eq(ag_permutation_p(zero, 1, one, 1, 999, 5, &p, NULL), AG_OK);
    cr_assert_eq(p, 1.0, "{0} vs {1}: both labellings give |d| = 1");
    cr_assert_eq(ag_permutation_p(zero, 0, one, 1, 999, 5, &p, NULL), AG_OK);
    cr_assert(isnan(p));
}

/* {0,0,0} vs {1,1,1}: 2 of the C(6,3) = 20 labellings give |d| = 1, so
 * each draw is extreme with probability 1/10. With 40000 draws the count
 * is within 6 standard deviations (6·60) of 4000 unless the sampling is
 * not uniform. */
Test(aggregate, permutation_distribution)
{
    const double a[] = {0, 0, 0}, b[] = {1, 1, 1};
    enum { N = 40000 };
    double p, q, r;
    cr_assert_eq(ag_permutation_p(a, 3, b, 3, N, 11, &p, NULL), AG_OK);
    double extreme = p * (N + 1) - 1;
    cr_assert(fabs(extreme - N / 10.0) < 6 * sqrt(N * 0.1 * 0.9), "extreme %g of %d", extreme, N);
    cr_assert_eq(ag_permutation_p(a, 3, b, 3, N, 11, &q, NULL), AG_OK);
    cr_assert_eq(p, q, "the same seed gives the same p");
    cr_assert_eq(ag_permutation_p(a, 3, b, 3, N, 12, &r, NULL), AG_OK);
    cr_assert_neq(p, r, "another seed draws other relabellings");
}

/* compare's table: one row per (group, metric), keys as documented. */
Test(aggregate, compare_table)
{
    static const char *const by[] = {"head"};
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .by = by, .nby = 1, .level = 0.95, .keep_values = 1};
    ag_aggregate *a = NULL, *b = NULL;
    cr_assert_eq(ag_aggregate_new(&opt, &a, NULL), AG_OK);
    cr_assert_eq(ag_aggregate_new(&opt, &b, NULL), AG_OK);
    corpus(a, 0, 3);
    corpus(b, 1, 4);
    static const char *const metrics[] = {"x"};
    ag_compare_options co = {.size = sizeof(ag_compare_options),
                             .metrics = metrics, .nmetrics = 1, .level = 0.95,
                             .permutations = 100, .seed = 3, .name_a = "A", .name_b = "B"};
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_compare_table(a, b, &co, &t, &err), AG_OK, "%s", err.message);
    static const char *const keys[] = {"head", "metric", "unit", "n_a", "n_b", "n_units",
                                       "mean_a", "mean_b", "diff", "ci_low", "ci_high", "t", "df",
                                       "p", "p_holm", "q_bh", "hedges_g", "hedges_g_ci_low",
                                       "hedges_g_ci_high", "p_perm", "p_perm_holm", "q_perm_bh"};
    cr_assert_eq(t.ncol, sizeof keys / sizeof *keys);
    for (size_t c = 0; c < t.ncol; c++)
        cr_assert_str_eq(t.keys[c], keys[c]);
    cr_assert_eq(t.nrow, 2);
    /* head 0: x = 1,2,3 vs 2,3,4 as in welch_closed_form */
    cr_assert_str_eq(at(&t, 0, "metric")->text, "x");
    near(at(&t, 0, "t")->value, -1 / sqrt(2.0 / 3), 1e-15, "t");
    near(at(&t, 0, "df")->value, 4, 1e-15, "df");
    /* head 1: x only in text 0, which b lacks */
    cr_assert_eq(at(&t, 1, "n_a")->value, 1);
    cr_assert_eq(at(&t, 1, "n_b")->value, 0);
    cr_assert_eq(at(&t, 1, "mean_b")->kind, AG_CELL_NULL);
    cr_assert_eq(at(&t, 1, "p_perm")->kind, AG_CELL_NULL);
    ag_table_free(&t);
    static const char *const unknown[] = {"nope"};
    co.metrics = unknown;
    cr_assert_eq(ag_compare_table(a, b, &co, &t, &err), AG_ENOTFOUND);
    cr_assert(strstr(err.message, "A: 'nope'"), "%s", err.message);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
}

/* "input" (the image or sound file of a record, docs/cli.md "Images and
 * audio") names the record's input as "text" does: identifying, so never a
 * metric, and out of the default grouping, which pools the inputs; --by
 * input keeps them apart. Two files, x = 1, 3 and 5, 7 (per head 0, 1). */
static void media_records(ag_aggregate *a)
{
    static const char *const files[] = {"a.png", "b.png"};
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++) {
            row_builder b = {0};
            put(&b, "layer", AG_CELL_INTEGER, 0);
            put(&b, "head", AG_CELL_INTEGER, h);
            put(&b, "x", AG_CELL_NUMBER, 1 + 2 * h + 4 * k);
            put(&b, "text", AG_CELL_INTEGER, k);
            b.keys[b.n] = "input";
            b.cells[b.n++] = (ag_cell){.kind = AG_CELL_TEXT, .text = files[k]};
            add(a, &b);
        }
}

Test(aggregate, input_pooled_by_default)
{
    static const char *const by[] = {"input"};
    ag_aggregate *pooled = new_aggregate(1, NULL, 0), *apart = new_aggregate(0, by, 1);
    media_records(pooled);
    media_records(apart);
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(pooled, 0, &t, &err), AG_OK, "%s", err.message);
    for (size_t c = 0; c < t.ncol; c++)
        cr_assert(strcmp(t.keys[c], "input") && strcmp(t.keys[c], "text"), "column %s", t.keys[c]);
    cr_assert_eq(t.nrow, 2, "one group per (layer, head)");
    cr_assert_eq(at(&t, 0, "n")->value, 2);
    near(at(&t, 0, "x")->value, 3, 1e-15, "head 0: mean of 1 and 5");
    near(at(&t, 1, "x")->value, 5, 1e-15, "head 1: mean of 3 and 7");
    ag_table_free(&t);
    cr_assert_eq(ag_aggregate_table(apart, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(t.nrow, 2, "one group per file");
    cr_assert_str_eq(at(&t, 0, "input")->text, "a.png");
    near(at(&t, 0, "x")->value, 2, 1e-15, "a.png: mean of 1 and 3");
    near(at(&t, 1, "x")->value, 6, 1e-15, "b.png: mean of 5 and 7");
    ag_table_free(&t);
    ag_aggregate_free(pooled);
    ag_aggregate_free(apart);
}

/* One group and one metric a record: G records ask for G x (2 + 5G) cells,
 * nearly all empty. Past AG_AGGREGATE_SPARSE_CELLS such a table is refused
 * before it is built; a dense table of the same size is built. */
Test(aggregate, sparse_table_refused_dense_built)
{
    enum { G = 460 }; /* 460 x (1 + 1 + 5 x 460) = 1,058,920 cells > 2^20, 460 x 7 held */
    static char names[G][8];
    ag_aggregate *a = new_aggregate(1, NULL, 0);
    for (int i = 0; i < G; i++) {
        row_builder b = {0};
        snprintf(names[i], sizeof names[i], "m%d", i);
        put(&b, "layer", AG_CELL_INTEGER, i);
        put(&b, names[i], AG_CELL_NUMBER, 1.5);
        add(a, &b);
    }
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_ELIMIT);
    cr_assert(strstr(err.message, "460 groups by 460 metrics make a table of 1058920 cells, "
                                  "1055700 of them empty") != NULL, "%s", err.message);
    cr_assert_eq(t.nrow, 0);
    ag_aggregate_free(a);
    /* every group holds every metric: 62,500 x (2 + 5 x 3) = 1,062,500 cells */
    a = new_aggregate(1, NULL, 0);
    for (int i = 0; i < 62500; i++) {
        row_builder b = {0};
        put(&b, "layer", AG_CELL_INTEGER, i);
        put(&b, "x", AG_CELL_NUMBER, i);
        put(&b, "y", AG_CELL_NUMBER, 2);
        put(&b, "z", AG_CELL_NUMBER, -1);
        add(a, &b);
    }
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(t.nrow, 62500);
    cr_assert_eq(t.ncol, 19);
    cr_assert_eq(at(&t, 62499, "x")->value, 62499);
    ag_table_free(&t);
    ag_aggregate_free(a);
}

/* "batch" (the Python package's index of a sequence in a batch,
 * docs/python.md "Batches") names a record's input as "text" does: never
 * averaged as a metric, pooled by the default grouping; --by batch keeps
 * the sequences apart. Two sequences, x = 1, 3 and 5, 7 (per head 0, 1). */
static void batch_records(ag_aggregate *a)
{
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++) {
            row_builder b = {0};
            put(&b, "layer", AG_CELL_INTEGER, 0);
            put(&b, "head", AG_CELL_INTEGER, h);
            put(&b, "x", AG_CELL_NUMBER, 1 + 2 * h + 4 * k);
            put(&b, "batch", AG_CELL_INTEGER, k);
            add(a, &b);
        }
}

Test(aggregate, batch_pooled_by_default)
{
    static const char *const by[] = {"batch"};
    ag_aggregate *pooled = new_aggregate(1, NULL, 0), *apart = new_aggregate(0, by, 1);
    batch_records(pooled);
    batch_records(apart);
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(pooled, 0, &t, &err), AG_OK, "%s", err.message);
    for (size_t c = 0; c < t.ncol; c++)
        cr_assert(strncmp(t.keys[c], "batch", 5), "column %s", t.keys[c]);
    cr_assert_eq(t.nrow, 2, "one group per (layer, head)");
    near(at(&t, 0, "x")->value, 3, 1e-15, "head 0: mean of 1 and 5");
    near(at(&t, 1, "x")->value, 5, 1e-15, "head 1: mean of 3 and 7");
    ag_table_free(&t);
    cr_assert_eq(ag_aggregate_table(apart, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(t.nrow, 2, "one group per sequence");
    cr_assert_eq(at(&t, 1, "batch")->value, 1);
    near(at(&t, 1, "x")->value, 6, 1e-15, "sequence 1: mean of 5 and 7");
    ag_table_free(&t);
    ag_aggregate_free(pooled);
    ag_aggregate_free(apart);
}

/* An encoder–decoder pass's records (issue 30): layer 0 of each stack, x
 * 1 and 3 (encoder), 10 (decoder), 20 and 22 (cross). */
static void stack_records(ag_aggregate *a)
{
    static const struct {
        const char *stack;
        double x;
    } recs[] = {{"encoder", 1}, {"encoder", 3}, {"decoder", 10}, {"cross", 20}, {"cross", 22}};
    for (size_t k = 0; k < sizeof recs / sizeof *recs; k++) {
        row_builder b = {0};
        b.keys[b.n] = "stack";
        b.cells[b.n++] = (ag_cell){.kind = AG_CELL_TEXT, .text = recs[k].stack};
        put(&b, "layer", AG_CELL_INTEGER, 0);
        put(&b, "x", AG_CELL_NUMBER, recs[k].x);
        add(a, &b);
    }
}

Test(aggregate, by_keys_keep_stacks_apart)
{
    static const char *const layer[] = {"layer"}, *const named[] = {"layer", "stack"};
    ag_aggregate *a = new_aggregate(0, layer, 1), *b = new_aggregate(0, named, 2),
                 *pooled = new_aggregate(0, NULL, 0);
    stack_records(a);
    stack_records(b);
    stack_records(pooled);
    ag_table t;
    ag_error err = {0};
    /* --by layer: "stack" implied first, one row per (stack, layer) */
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_str_eq(t.keys[0], "stack");
    cr_assert_str_eq(t.keys[1], "layer");
    cr_assert_eq(t.nrow, 3);
    const double mean[3] = {2, 10, 21};
    const char *const stack[3] = {"encoder", "decoder", "cross"};
    for (size_t r = 0; r < 3; r++) {
        cr_assert_str_eq(at(&t, r, "stack")->text, stack[r]);
        near(at(&t, r, "x")->value, mean[r], 1e-15, "x per stack");
    }
    ag_table_free(&t);
    /* named: where it is named */
    cr_assert_eq(ag_aggregate_table(b, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_str_eq(t.keys[0], "layer");
    cr_assert_str_eq(t.keys[1], "stack");
    cr_assert_eq(t.nrow, 3);
    ag_table_free(&t);
    /* --by '': one group per stack */
    cr_assert_eq(ag_aggregate_table(pooled, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_str_eq(t.keys[0], "stack");
    cr_assert_eq(t.nrow, 3);
    near(at(&t, 2, "x")->value, 21, 1e-15, "cross pooled");
    ag_table_free(&t);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
    ag_aggregate_free(pooled);
}
