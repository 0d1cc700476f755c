/* tests/stats/test_stats.c — the statistics of src/stats/ against closed
 * forms and hand-worked cases: Holm and Benjamini–Hochberg (values as
 * statsmodels' multipletests gives them), the Wilcoxon signed-rank null
 * distribution and p-values (as scipy.stats.wilcoxon 1.10), BCa levels,
 * Hedges' g, and the units of replication of aggregate and compare. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "attngeom.h"
#include "stats/stats_int.h"

static void near(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * fmax(1e-300, fabs(want)), "%s: got %.17g, want %.17g",
              what, got, want);
}

Test(stats, holm_bh_hand_worked)
{
    /* sorted: .005 .01 .03 .04 .2, m = 5.
     * Holm: 5·.005 = .025, 4·.01 = .04, 3·.03 = .09, 2·.04 = .08 → .09 (running max), .2
     * BH:   .2·5/5 = .2, .04·5/4 = .05, .03·5/3 = .05, .01·5/2 = .025, .005·5 = .025 */
    const double p[] = {0.01, 0.04, 0.03, 0.005, 0.2};
    const double holm[] = {0.04, 0.09, 0.09, 0.025, 0.2}, bh[] = {0.025, 0.05, 0.05, 0.025, 0.2};
    double q[5];
    cr_assert_eq(ags_holm(p, 5, q), AG_OK);
    for (int i = 0; i < 5; i++)
        near(q[i], holm[i], 1e-15, "holm");
    cr_assert_eq(ags_bh(p, 5, q), AG_OK);
    for (int i = 0; i < 5; i++)
        near(q[i], bh[i], 1e-15, "bh");
    /* ties and a NaN (not a test: m = 3), and the clip at 1 */
    const double t[] = {0.02, NAN, 0.02, 0.5};
    double r[4];
    cr_assert_eq(ags_holm(t, 4, r), AG_OK);
    near(r[0], 0.06, 1e-15, "holm tie");
    near(r[2], 0.06, 1e-15, "holm tie");
    near(r[3], 0.5, 1e-15, "holm last");
    cr_assert(isnan(r[1]));
    cr_assert_eq(ags_bh(t, 4, r), AG_OK);
    near(r[0], 0.03, 1e-15, "bh tie");
    near(r[3], 0.5, 1e-15, "bh last");
    const double big[] = {0.6, 0.7};
    cr_assert_eq(ags_holm(big, 2, r), AG_OK);
    cr_assert_eq(r[0], 1);
    cr_assert_eq(r[1], 1);
}

Test(stats, wilcoxon_null_distribution)
{
    /* n = 3: the 8 sign patterns give R+ = 0,1,2,3,3,4,5,6 */
    double pmf[7];
    ags_wilcoxon_pmf(3, pmf);
    const double want[] = {1, 1, 1, 2, 1, 1, 1};
    for (int r = 0; r < 7; r++)
        near(pmf[r], want[r] / 8, 1e-15, "pmf n=3");
    /* n = 10: sums to 1, symmetric, P(R+ = 0) = 2^-10 */
    double p10[56], sum = 0;
    ags_wilcoxon_pmf(10, p10);
    for (int r = 0; r < 56; r++) {
        sum += p10[r];
        near(p10[r], p10[55 - r], 1e-15, "symmetric");
    }
    near(sum, 1, 1e-14, "sum");
    near(p10[0], 1.0 / 1024, 1e-15, "P(0)");
}

Test(stats, wilcoxon_as_scipy)
{
    ag_error err = {0};
    double p;
    /* scipy's docstring example (Darwin's corn): exact, 0.041259765625 */
    const double corn[] = {6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};
    cr_assert_eq(ags_wilcoxon_p(corn, 15, &p, &err), AG_OK);
    near(p, 0.041259765625, 1e-14, "corn");
    /* ties, n = 8: exact with R+ truncated (scipy 1.10): 0.3125 */
    const double ties[] = {1.5, -2, 3, 3, -4, 5, 0.5, 2.5};
    cr_assert_eq(ags_wilcoxon_p(ties, 8, &p, &err), AG_OK);
    near(p, 0.3125, 1e-14, "ties");
    /* a zero: the normal approximation over the 11 others */
    const double zero[] = {1, -2, 0, 3, 4, -5, 6, 7, 8, 9, 10, 11};
    cr_assert_eq(ags_wilcoxon_p(zero, 12, &p, &err), AG_OK);
    near(p, 0.02079521585359911, 1e-12, "zero");
    /* R+ = 1 + 4 = 5 of 10: the centre, p = 1 */
    const double centre[] = {1, -2, -3, 4};
    cr_assert_eq(ags_wilcoxon_p(centre, 4, &p, &err), AG_OK);
    cr_assert_eq(p, 1);
    const double zeros[] = {0, 0};
    cr_assert_eq(ags_wilcoxon_p(zeros, 2, &p, &err), AG_OK);
    cr_assert(isnan(p));
}

Test(stats, quantile_and_bca)
{
    const double x[] = {1, 2, 3, 4};
    near(ags_quantile_sorted(x, 4, 0.5), 2.5, 1e-15, "median");
    near(ags_quantile_sorted(x, 4, 0.1), 1.3, 1e-15, "q .1");
    cr_assert_eq(ags_quantile_sorted(x, 4, 1), 4);
    /* x = 1, 2, 3, 4, 10 (θ = 4), bootstrap means 2, 2.04, ..., 6: z0 = Φ⁻¹(50/101),
     * acceleration 0.0848528137423857 (jackknife); levels and bounds as
     * scipy.stats.bootstrap's _bca_interval and np.percentile compute them */
    const double xs[] = {1, 2, 3, 4, 10};
    double boot[101], q1, q2;
    for (int b = 0; b < 101; b++)
        boot[b] = 2 + 0.04 * b;
    ags_bca_levels(xs, 5, 4, boot, 101, 0.95, &q1, &q2);
    near(q1, 0.044376847405486135, 1e-12, "q1");
    near(q2, 0.9898486211846061, 1e-12, "q2");
    near(ags_quantile_sorted(boot, 101, q1), 2.177507389621945, 1e-12, "bca low");
    near(ags_quantile_sorted(boot, 101, q2), 5.959394484738424, 1e-12, "bca high");
}

Test(stats, bootstrap_deterministic)
{
    const double x[] = {0.3, 1.2, -0.4, 2.2, 0.9, 1.1, 0.0, 0.7};
    const double y[] = {2.2, 0.9, 1.1, 0.0, 0.7, 0.3, 1.2, -0.4}; /* the same, reordered */
    double a[4], b[4], c[4];
    ag_error err = {0};
    cr_assert_eq(ags_bootstrap(x, 8, 4000, 7, 0.95, a, &err), AG_OK);
    cr_assert_eq(ags_bootstrap(y, 8, 4000, 7, 0.95, b, &err), AG_OK);
    cr_assert_eq(ags_bootstrap(x, 8, 4000, 8, 0.95, c, &err), AG_OK);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(a[k], b[k], "order of the units does not matter");
    cr_assert_neq(a[0], c[0], "another seed, other draws");
    double mean = 0.75;
    cr_assert(a[0] < mean && mean < a[1] && a[2] < mean && mean < a[3]);
    cr_assert_eq(ags_bootstrap(x, 1, 100, 1, 0.95, a, &err), AG_OK);
    cr_assert(isnan(a[0]) && isnan(a[3]));
}

Test(stats, hedges_g_closed_form)
{
    /* a = 1, 2, 3, 5; b = 2, 4, 4.5, 6, 7: g = (1 − 3/(4·9 − 9))·d */
    ag_moments a = {0}, b = {0};
    const double xa[] = {1, 2, 3, 5}, xb[] = {2, 4, 4.5, 6, 7};
    for (int i = 0; i < 4; i++)
        ag_moments_add(&a, xa[i]);
    for (int i = 0; i < 5; i++)
        ag_moments_add(&b, xb[i]);
    double g[3];
    ags_hedges_g(&a, &b, 0.95, g);
    near(g[0], -0.9450083658424137, 1e-13, "g");
    near(g[1], -2.3303762662421916, 1e-12, "g low");
    near(g[2], 0.44035953455736443, 1e-12, "g high");
}

Test(stats, signflip)
{
    ag_error err = {0};
    double p, q;
    /* all differences of one sign, n = 4: |Σ s·d| ≥ |Σ d| only for s = ±1,
     * probability 2/16; p tends to 1/8 */
    const double d[] = {1, 2, 3, 4};
    cr_assert_eq(ags_signflip_p(d, 4, 20000, 5, &p, &err), AG_OK);
    cr_assert(fabs(p - 0.125) < 0.01, "%g", p);
    const double r[] = {4, 1, 3, 2};
    cr_assert_eq(ags_signflip_p(r, 4, 20000, 5, &q, &err), AG_OK);
    cr_assert_eq(p, q, "the same for any order");
}

/* ---- units ----------------------------------------------------------------- */

static void add_rec(ag_aggregate *a, int text, int head, double x)
{
    const char *keys[] = {"layer", "head", "text", "x"};
    ag_cell cells[] = {{.kind = AG_CELL_INTEGER, .value = 0},
                       {.kind = AG_CELL_INTEGER, .value = head},
                       {.kind = AG_CELL_INTEGER, .value = text},
                       {.kind = AG_CELL_NUMBER, .value = x}};
    ag_row row = {4, keys, cells};
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_add(a, &row, &err), AG_OK, "%s", err.message);
}

static const ag_cell *cell(const ag_table *t, size_t r, const char *key)
{
    for (size_t c = 0; c < t->ncol; c++)
        if (strcmp(t->keys[c], key) == 0)
            return &t->cells[r * t->ncol + c];
    cr_assert_fail("no column %s", key);
    return NULL;
}

static ag_aggregate *pooled(const char *unit, int keep)
{
    ag_aggregate_options o = AG_AGGREGATE_OPTIONS_DEFAULT;
    o.by_default = 0;
    o.keep_values = keep;
    ag_aggregate *a;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_new(&o, &a, &err), AG_OK);
    cr_assert_eq(ag_aggregate_set_unit(a, unit, &err), AG_OK, "%s", err.message);
    return a;
}

Test(stats, unit_means_first)
{
    /* text 0: x = 1, 3 (two heads), text 1: 5, text 2: 6, 8 → unit means 2, 5, 7 */
    ag_aggregate *a = pooled(NULL, 0);
    add_rec(a, 0, 0, 1);
    add_rec(a, 0, 1, 3);
    add_rec(a, 1, 0, 5);
    add_rec(a, 2, 0, 6);
    add_rec(a, 2, 1, 8);
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_str_eq(cell(&t, 0, "unit")->text, "text");
    cr_assert_eq(cell(&t, 0, "n")->value, 5);
    cr_assert_eq(cell(&t, 0, "n_units")->value, 3);
    cr_assert_eq(cell(&t, 0, "x_n")->value, 3);
    near(cell(&t, 0, "x")->value, 14.0 / 3, 1e-15, "mean of unit means");
    near(cell(&t, 0, "x_std")->value, sqrt(57.0 / 9), 1e-15, "std of 2, 5, 7");
    ag_table_free(&t);
    ag_aggregate_free(a);
    /* --unit head: head 0 x = 1, 5, 6 (mean 4), head 1: 3, 8 (5.5) */
    a = pooled("head", 0);
    add_rec(a, 0, 0, 1);
    add_rec(a, 0, 1, 3);
    add_rec(a, 1, 0, 5);
    add_rec(a, 2, 0, 6);
    add_rec(a, 2, 1, 8);
    cr_assert_eq(ag_aggregate_table(a, 0, &t, &err), AG_OK, "%s", err.message);
    cr_assert_str_eq(cell(&t, 0, "unit")->text, "head");
    cr_assert_eq(cell(&t, 0, "n_units")->value, 2);
    near(cell(&t, 0, "x")->value, 4.75, 1e-15, "head means");
    ag_table_free(&t);
    ag_aggregate_free(a);
}

Test(stats, paired_and_unmatched)
{
    ag_aggregate *a = pooled(NULL, 1), *b = pooled(NULL, 1);
    const double xa[] = {1, 2, 4, 7, 11}, xb[] = {0.5, 2.5, 3, 5, 9};
    for (int i = 0; i < 5; i++) {
        add_rec(a, i, 0, xa[i]);
        add_rec(b, i, 0, xb[i]);
    }
    ag_compare_options o = AG_COMPARE_OPTIONS_DEFAULT;
    o.paired = 1;
    o.name_a = "A";
    o.name_b = "B";
    ag_table t;
    ag_error err = {0};
    cr_assert_eq(ag_compare_table(a, b, &o, &t, &err), AG_OK, "%s", err.message);
    /* d = .5, −.5, 1, 2, 2: mean 1, sd² = 4.5/4 → t = 1/sqrt(1.125/5) (scipy's
     * ttest_rel: 2.1081851067789197) */
    near(cell(&t, 0, "diff")->value, 1, 1e-15, "mean d");
    near(cell(&t, 0, "t")->value, 1 / sqrt(0.225), 1e-14, "t");
    cr_assert_eq(cell(&t, 0, "df")->value, 4);
    near(cell(&t, 0, "dz")->value, 1 / sqrt(1.125), 1e-14, "dz");
    cr_assert_eq(cell(&t, 0, "n_units")->value, 5);
    /* |d| ranks .5,.5 → 1.5, 1.5; 1 → 3; 2, 2 → 4.5, 4.5: R+ = 13.5 → int 13 of 15;
     * exact: p = 2·P(R+ ≥ 13) = 2·(3/32) = 0.1875 */
    near(cell(&t, 0, "p_wilcoxon")->value, 0.1875, 1e-14, "wilcoxon");
    near(cell(&t, 0, "p_holm")->value, cell(&t, 0, "p")->value, 1e-15, "one test");
    ag_table_free(&t);
    add_rec(b, 9, 0, 1); /* a unit only b holds */
    cr_assert_eq(ag_compare_table(a, b, &o, &t, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "text=9 of B has no match in A"), "%s", err.message);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
}

Test(stats, records_as_units_refuse_pairing)
{
    ag_aggregate *a = pooled(NULL, 1), *b = pooled(NULL, 1);
    const char *keys[] = {"x"};
    ag_cell c = {.kind = AG_CELL_NUMBER, .value = 1};
    ag_row row = {1, keys, &c};
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_add(a, &row, &err), AG_OK);
    cr_assert_eq(ag_aggregate_add(b, &row, &err), AG_OK);
    ag_compare_options o = AG_COMPARE_OPTIONS_DEFAULT;
    o.paired = 1;
    o.name_a = "A";
    ag_table t;
    cr_assert_eq(ag_compare_table(a, b, &o, &t, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "--unit"), "%s", err.message);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
}
