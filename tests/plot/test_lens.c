/* test_lens.c — the lens figure (`attngeom plot --kind lens`, issue 28
 * item 5): ag_plot_lens_rows against closed forms derived here (equal
 * scores give uniform panels under every normaliser; a score ahead of the
 * rest by ≥ 1 makes sparsemax one-hot, by ≥ 2 makes 1.5-entmax one-hot;
 * softmax as T → 0 splits ties evenly, as T → ∞ is uniform; masked keys are
 * absent, NaN); ag_run_plot's lens draws exactly those rows for the head
 * and query asked (the last query by default); and the errors. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../util/test_plot_util.h"

TestSuite(lens_plot, .fini = plot_test_fini);

static const ag_plot_lens_panel every[] = {
    {AG_NORMALIZER_SOFTMAX, 0.5}, {AG_NORMALIZER_SOFTMAX, 1}, {AG_NORMALIZER_SOFTMAX, 2},
    {AG_NORMALIZER_SPARSEMAX, 1}, {AG_NORMALIZER_ENTMAX15, 1}, {AG_NORMALIZER_ENTMAX, 1.5}};
#define EVERY (sizeof every / sizeof *every)

/* Equal allowed scores: every normaliser's minimiser over the simplex is
 * symmetric in the allowed keys (softmax: exp(c/T)/(K·exp(c/T)); sparsemax:
 * the projection of c·1 onto the simplex is 1/K; entmax: τ is the same for
 * every key), so each panel is 1/K on the K allowed keys, all K kept; the
 * masked keys are NaN. */
Test(lens_plot, equal_scores_give_uniform_panels)
{
    const double s[6] = {0.7, -INFINITY, 0.7, 0.7, -INFINITY, 0.7};
    double P[EVERY * 6];
    size_t kept[EVERY], allowed = 0;
    ag_error err = {0};
    cr_assert_eq(ag_plot_lens_rows(s, 6, every, EVERY, P, kept, &allowed, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(allowed, 4);
    for (size_t k = 0; k < EVERY; k++) {
        cr_assert_eq(kept[k], 4, "panel %zu keeps %zu", k, kept[k]);
        for (size_t j = 0; j < 6; j++) {
            double p = P[k * 6 + j];
            if (s[j] == -INFINITY)
                cr_assert(isnan(p), "panel %zu, masked key %zu: %g", k, j, p);
            else
                cr_assert(fabs(p - 0.25) < 1e-12, "panel %zu, key %zu: %.17g", k, j, p);
        }
    }
}

/* Sparsemax (Martins & Astudillo 2016, eq. 3): sorted z, k(z) = max{k : 1
 * + k z_(k) > Σ_{j≤k} z_(j)}. With z_(1) − z_(2) ≥ 1, k = 2 fails (1 +
 * 2 z_(2) ≤ z_(1) + z_(2)), so k = 1, τ = z_(1) − 1 and p = e_1. A lead of
 * exactly 1 is the boundary. 1.5-entmax is one-hot from a lead of 2 (z =
 * s/2; τ = z_(1) − 1 leaves z_(2) − τ ≤ 0); below it, with the other keys
 * far behind, it keeps the top two. */
Test(lens_plot, a_lead_of_one_makes_sparsemax_one_hot)
{
    const ag_plot_lens_panel panels[] = {{AG_NORMALIZER_SPARSEMAX, 1},
                                         {AG_NORMALIZER_ENTMAX15, 1}};
    const double leads[] = {1, 1.5, 2, 3};
    for (size_t t = 0; t < 4; t++) {
        const double s[5] = {-8, 2 - leads[t], 2, -INFINITY, -9}; /* the rest far behind */
        double P[10];
        size_t kept[2], allowed;
        ag_error err = {0};
        cr_assert_eq(ag_plot_lens_rows(s, 5, panels, 2, P, kept, &allowed, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(kept[0], 1, "lead %g: sparsemax keeps %zu", leads[t], kept[0]);
        cr_assert_eq(P[2], 1.0, "lead %g: sparsemax p_top = %.17g", leads[t], P[2]);
        cr_assert(isnan(P[3]));
        cr_assert_eq(kept[1], leads[t] >= 2 ? 1u : 2u, "lead %g: entmax15 keeps %zu", leads[t],
                     kept[1]);
    }
    /* a lead of 0.5 over one key, the rest far behind: τ = (z1 + z2 − 1)/2,
     * p = (0.75, 0.25) */
    const double s[4] = {-5, 1.5, 2, -6};
    double P[8];
    size_t kept[2], allowed;
    ag_error err = {0};
    cr_assert_eq(ag_plot_lens_rows(s, 4, panels, 1, P, kept, &allowed, &err), AG_OK);
    cr_assert_eq(kept[0], 2);
    cr_assert(fabs(P[2] - 0.75) < 1e-15 && fabs(P[1] - 0.25) < 1e-15, "%g %g", P[2], P[1]);
}

/* softmax(s/T) as T → 0: exp((s_j − max)/T) → 1 for the tied maxima, 0 for
 * the rest, so p splits evenly over the ties (1/2 each here); T → ∞: every
 * exp → 1, p → 1/K with |p_j − 1/K| ≤ (max − min)/(K·T) to first order. */
Test(lens_plot, temperature_limits)
{
    const ag_plot_lens_panel panels[] = {{AG_NORMALIZER_SOFTMAX, 1e-3},
                                         {AG_NORMALIZER_SOFTMAX, 1e6},
                                         {AG_NORMALIZER_SOFTMAX, 1}};
    const double s[5] = {1, 3, 3, 0, -INFINITY};
    double P[15];
    size_t kept[3], allowed;
    ag_error err = {0};
    cr_assert_eq(ag_plot_lens_rows(s, 5, panels, 3, P, kept, &allowed, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(allowed, 4);
    cr_assert_eq(P[1], 0.5);
    cr_assert_eq(P[2], 0.5);
    cr_assert_eq(P[0], 0.0);
    cr_assert_eq(P[3], 0.0);
    cr_assert_eq(kept[0], 2, "exp(-2000) underflows: 2 kept, not %zu", kept[0]);
    for (size_t j = 0; j < 4; j++)
        cr_assert(fabs(P[5 + j] - 0.25) <= 3.0 / 4 / 1e6 * 1.01, "T = 1e6, key %zu: %.17g", j,
                  P[5 + j]);
    /* T = 1: the closed form exp(s_j) / Σ exp(s_k) */
    double z = exp(1) + 2 * exp(3) + exp(0);
    for (size_t j = 0; j < 4; j++)
        cr_assert(fabs(P[10 + j] - exp(s[j]) / z) < 1e-15, "T = 1, key %zu", j);
    cr_assert(isnan(P[9]) && isnan(P[14]));
}

Test(lens_plot, errors)
{
    const double masked[3] = {-INFINITY, -INFINITY, -INFINITY}, nan_row[2] = {NAN, 1};
    double P[6];
    size_t kept[2], allowed;
    ag_error err = {0};
    cr_assert_eq(ag_plot_lens_rows(masked, 3, every, 1, P, kept, &allowed, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "no allowed key"), "%s", err.message);
    const ag_plot_lens_panel linear = {AG_NORMALIZER_LINEAR, 1};
    const double s[2] = {0, 1};
    cr_assert_eq(ag_plot_lens_rows(s, 2, &linear, 1, P, kept, &allowed, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "Q"), "%s", err.message);
    cr_assert_eq(ag_plot_lens_rows(nan_row, 2, every, 1, P, kept, &allowed, &err),
                 AG_ENONFINITE, "%s", err.message);
    cr_assert_eq(ag_plot_lens_rows(s, 0, every, 1, P, kept, &allowed, &err), AG_EINVAL);
    cr_assert_eq(ag_plot_lens_rows(s, 2, every, 0, P, kept, &allowed, &err), AG_EINVAL);
}

/* A [2, 2, 3, 3] scores array: head (1, 1)'s last query row is equal
 * scores (uniform in every panel), every other row a ramp; the causal
 * upper triangle −inf. */
static const char *scores_npy(void)
{
    static double v[36];
    for (size_t k = 0; k < 36; k++) {
        size_t i = k % 9 / 3, j = k % 3;
        v[k] = j > i ? -INFINITY : k / 9 == 3 && i == 2 ? 0.5 : (double)(k % 9) * 0.7;
    }
    return plot_heads_npy("S.npy", v);
}

/* The default figure of layer 1, head 1 is its last query (row 2, which
 * sees every key) under softmax at 0.5, 1, 2, sparsemax and 1.5-entmax:
 * five uniform panels, the bars ag_plot_bars_render draws for them. */
Test(lens_plot, run_plot_draws_the_last_query_of_the_head)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_LENS;
    s.input = scores_npy();
    s.layer = 1;
    s.head = 1;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    double P[15];
    for (int k = 0; k < 15; k++)
        P[k] = 1.0 / 3;
    const char *titles[5] = {"softmax, T = 0.5: 3 of 3 keys kept",
                             "softmax, T = 1: 3 of 3 keys kept", "softmax, T = 2: 3 of 3 keys kept",
                             "sparsemax: 3 of 3 keys kept", "1.5-entmax: 3 of 3 keys kept"};
    const int colours[5] = {0, 0, 0, 1, 2};
    ag_plot_bars b = AG_PLOT_BARS_DEFAULT;
    b.panels = 5, b.bars = 3, b.values = P, b.panel_titles = titles, b.colours = colours;
    b.title = "layer 1, head 1, query 2 under each normaliser";
    b.x_title = "key", b.y_title = "probability", b.ymin = 0, b.ymax = 1;
    ag_plot_page page = s.page;
    cr_assert_eq(ag_plot_bars_render(&b, &page, &want, &err), AG_OK, "%s", err.message);
    cr_assert(plot_same(&got, &want), "the lens figure is not the uniform panels' bars");
    ag_plot_output_free(&want);
    /* another query of the same head is another figure */
    s.query = 1;
    cr_assert_eq(ag_run_plot(&s, &want, &err), AG_OK, "%s", err.message);
    cr_assert(!plot_same(&got, &want));
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

static void expect_error(ag_run_plot_spec *s, int status, const char *needle)
{
    ag_plot_output fig = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(s, &fig, &err), status, "%s", err.message);
    cr_assert(strstr(err.message, needle), "'%s' lacks '%s'", err.message, needle);
    cr_assert_null(fig.data);
}

Test(lens_plot, run_plot_errors)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_LENS;
    s.input = scores_npy();
    s.query = 3;
    expect_error(&s, AG_ERANGE, "0 to 2");
    s.query = -1, s.head = 2;
    expect_error(&s, AG_ERANGE, "--head 2");
    s.head = -1, s.normalizers = "sparsemax,linear";
    expect_error(&s, AG_EINVAL, "Q");
    s.normalizers = "sparsemax,nope";
    expect_error(&s, AG_EINVAL, "nope");
    double T[2] = {1, 2};
    s.normalizers = "sparsemax", s.temperatures = T, s.ntemperatures = 2;
    expect_error(&s, AG_EINVAL, "--temperatures");
    T[1] = 0;
    s.normalizers = NULL;
    expect_error(&s, AG_EINVAL, "--temperatures");
    s.ntemperatures = 0;
    double three[8] = {0};
    size_t shape3[3] = {2, 2, 2};
    const char *p3 = tio_path("three.npy");
    cr_assert_eq(tio_write_npy(p3, "<f8", 0, 1, 3, shape3, three), 0);
    s.input = p3;
    expect_error(&s, AG_ESHAPE, "three.npy");
    /* a row with every key masked */
    double masked[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    size_t shape2[2] = {2, 2};
    const char *p2 = tio_path("masked.npy");
    cr_assert_eq(tio_write_npy(p2, "<f8", 0, 1, 2, shape2, masked), 0);
    s.input = p2;
    expect_error(&s, AG_EINVAL, "no allowed key");
}

Test(lens_plot, bars_limits)
{
    double v[2] = {0.5, 0.5};
    ag_plot_bars b = AG_PLOT_BARS_DEFAULT;
    b.panels = 1, b.bars = 2, b.values = v;
    ag_plot_page page = AG_PLOT_PAGE_DEFAULT;
    ag_plot_output out = {0};
    ag_error err = {0};
    b.ymin = 1, b.ymax = 1;
    cr_assert_eq(ag_plot_bars_render(&b, &page, &out, &err), AG_EINVAL);
    b.ymin = NAN, b.ymax = NAN, b.panels = AG_PLOT_MAX_PANELS + 1;
    cr_assert_eq(ag_plot_bars_render(&b, &page, &out, &err), AG_ELIMIT);
    b.panels = 2, b.bars = AG_PLOT_MAX_BARS / 2 + 1;
    cr_assert_eq(ag_plot_bars_render(&b, &page, &out, &err), AG_ELIMIT);
    double nan2[2] = {NAN, NAN};
    b.panels = 1, b.bars = 2, b.values = nan2;
    cr_assert_eq(ag_plot_bars_render(&b, &page, &out, &err), AG_EINVAL);
    cr_assert_null(out.data);
}
