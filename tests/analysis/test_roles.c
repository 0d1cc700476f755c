/* test_roles.c — the head-role keys of family B (attention_distance,
 * self_mass, prev_token_mass, max_mass, sink_ratio) and the Jensen–Shannon
 * distance between heads (ag_js_distance), on matrices whose values are
 * derived in closed form below (docs/metrics.md gives the definitions). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

#define EPS DBL_EPSILON

TestSuite(roles);

/* ---- head-role keys: closed forms ----------------------------------------- */

/* I_n: every query reads itself. Σ_j A_ij |i−j| = 0, A_ii = 1 = max_j A_ij,
 * A_{i,i−1} = 0. I is lower triangular, so causal: rows i ≥ 1 allow i + 1
 * keys and put 0 on key 0, so sink_ratio is 0. */
Test(roles, identity)
{
    for (size_t n = 2; n <= 17; n += 5) {
        double *A = test_square(n);
        for (size_t i = 0; i < n; i++)
            A[i * n + i] = 1;
        ag_record r = run(A, n, n);
        expect_num(&r, AG_M_SELF_MASS, 1, 0);
        expect_num(&r, AG_M_ATTENTION_DISTANCE, 0, 0);
        expect_num(&r, AG_M_MAX_MASS, 1, 0);
        expect_num(&r, AG_M_PREV_TOKEN_MASS, 0, 0);
        expect_num(&r, AG_M_SINK_RATIO, 0, 0);
        free(A);
    }
}

/* The causal shift: row 0 attends to itself, row i ≥ 1 to i − 1 only.
 * prev_token_mass = 1; self_mass = 1/n (row 0); attention_distance =
 * (n − 1)/n (distance 1 on every row but the first); max_mass 1;
 * sink_ratio: of rows i ≥ 1 only row 1 puts its mass (1) on key 0, times
 * k_1 = 2, so 2/(n − 1). */
Test(roles, causal_shift)
{
    for (size_t n = 2; n <= 30; n += 7) {
        double *A = test_square(n);
        A[0] = 1;
        for (size_t i = 1; i < n; i++)
            A[i * n + i - 1] = 1;
        ag_record r = run(A, n, n);
        cr_assert_eq(r.value[AG_M_CAUSAL], 1);
        expect_num(&r, AG_M_PREV_TOKEN_MASS, 1, 0);
        expect_num(&r, AG_M_SELF_MASS, 1.0 / (double)n, EPS);
        expect_num(&r, AG_M_ATTENTION_DISTANCE, (double)(n - 1) / (double)n, 2 * EPS);
        expect_num(&r, AG_M_MAX_MASS, 1, 0);
        expect_num(&r, AG_M_SINK_RATIO, 2.0 / (double)(n - 1), 2 * EPS);
        free(A);
    }
}

/* Uniform causal: A_ij = 1/(i+1), j ≤ i. Row i has k_i = i + 1 keys and
 * A_i0·k_i = 1, so sink_ratio = 1 at every n. Σ_j A_ij |i−j| = i/2, so
 * attention_distance = (n−1)/4; self_mass = max_mass = H_n/n (H_n the
 * harmonic number); prev_token_mass = mean over i ≥ 1 of 1/(i+1) =
 * (H_n − 1)/(n − 1). */
Test(roles, uniform_causal)
{
    for (size_t n = 2; n <= 200; n = n * 3 / 2 + 1) {
        double *A = test_square(n), harmonic = 0;
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j <= i; j++)
                A[i * n + j] = 1.0 / (double)(i + 1);
            harmonic += 1.0 / (double)(i + 1);
        }
        ag_record r = run(A, n, n);
        cr_assert_eq(r.value[AG_M_CAUSAL], 1);
        double tol = 4 * (double)n * EPS;
        expect_num(&r, AG_M_SINK_RATIO, 1, 4 * EPS);
        expect_num(&r, AG_M_ATTENTION_DISTANCE, (double)(n - 1) / 4, tol * (double)n);
        expect_num(&r, AG_M_SELF_MASS, harmonic / (double)n, tol);
        expect_num(&r, AG_M_MAX_MASS, harmonic / (double)n, tol);
        expect_num(&r, AG_M_PREV_TOKEN_MASS, (harmonic - 1) / (double)(n - 1), tol);
        free(A);
    }
}

/* Uniform non-causal: A_ij = 1/n. Every row allows n keys and A_i0·n = 1:
 * sink_ratio 1 at every n. Σ_i Σ_j |i−j| = (n³ − n)/3, so
 * attention_distance = (n² − 1)/(3n); self_mass = prev_token_mass =
 * max_mass = 1/n. */
Test(roles, uniform_noncausal)
{
    for (size_t n = 2; n <= 200; n = n * 3 / 2 + 1) {
        double *A = test_square(n);
        for (size_t k = 0; k < n * n; k++)
            A[k] = 1.0 / (double)n;
        ag_record r = run(A, n, n);
        cr_assert_eq(r.value[AG_M_CAUSAL], 0);
        double tol = 4 * (double)n * EPS;
        expect_num(&r, AG_M_SINK_RATIO, 1, 4 * EPS);
        expect_num(&r, AG_M_ATTENTION_DISTANCE, ((double)n * n - 1) / (3.0 * n), tol * (double)n);
        expect_num(&r, AG_M_SELF_MASS, 1.0 / (double)n, tol);
        expect_num(&r, AG_M_PREV_TOKEN_MASS, 1.0 / (double)n, tol);
        expect_num(&r, AG_M_MAX_MASS, 1.0 / (double)n, tol);
        free(A);
    }
}

/* By hand, not causal (A_01 ≠ 0):
 *   [0.5 0.3 0.2]   row distances 0.3 + 2·0.2 = 0.7, 0.1 + 0.3 = 0.4,
 *   [0.1 0.6 0.3]   2·0.6 + 0.2 = 1.4: attention_distance 2.5/3 = 5/6;
 *   [0.6 0.2 0.2]   self_mass (0.5 + 0.6 + 0.2)/3 = 13/30;
 * prev_token_mass (A_10 + A_21)/2 = (0.1 + 0.2)/2 = 0.15; max_mass
 * (0.5 + 0.6 + 0.6)/3 = 17/30; sink_ratio: k = 3 on every row,
 * 3·(0.5 + 0.1 + 0.6)/3 = 1.2. */
Test(roles, hand_3x3)
{
    const double A[9] = {0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.6, 0.2, 0.2};
    ag_record r = run(A, 3, 3);
    cr_assert_eq(r.value[AG_M_CAUSAL], 0);
    expect_num(&r, AG_M_ATTENTION_DISTANCE, 5.0 / 6, 4 * EPS);
    expect_num(&r, AG_M_SELF_MASS, 13.0 / 30, 4 * EPS);
    expect_num(&r, AG_M_PREV_TOKEN_MASS, 0.15, 4 * EPS);
    expect_num(&r, AG_M_MAX_MASS, 17.0 / 30, 4 * EPS);
    expect_num(&r, AG_M_SINK_RATIO, 1.2, 4 * EPS);
}

/* By hand, causal:
 *   [1    0    0  ]   distances 0, 0.25, 2·0.6 + 0.2 = 1.4: 1.65/3 = 0.55;
 *   [0.25 0.75 0  ]   self_mass (1 + 0.75 + 0.2)/3 = 0.65;
 *   [0.6  0.2  0.2]   prev_token_mass (0.25 + 0.2)/2 = 0.225;
 * max_mass (1 + 0.75 + 0.6)/3 = 2.35/3; sink_ratio over rows 1, 2 (k = 2, 3;
 * row 0 has one key): (2·0.25 + 3·0.6)/2 = 1.15. */
Test(roles, hand_3x3_causal)
{
    const double A[9] = {1, 0, 0, 0.25, 0.75, 0, 0.6, 0.2, 0.2};
    ag_record r = run(A, 3, 3);
    cr_assert_eq(r.value[AG_M_CAUSAL], 1);
    expect_num(&r, AG_M_ATTENTION_DISTANCE, 0.55, 4 * EPS);
    expect_num(&r, AG_M_SELF_MASS, 0.65, 4 * EPS);
    expect_num(&r, AG_M_PREV_TOKEN_MASS, 0.225, 4 * EPS);
    expect_num(&r, AG_M_MAX_MASS, 2.35 / 3, 4 * EPS);
    expect_num(&r, AG_M_SINK_RATIO, 1.15, 4 * EPS);
}

/* Not square (3×5 of 1/5): the positional keys null; max_mass 1/5 and
 * sink_ratio (1/5)·5 = 1 are rows' (k_i = n = 5). 1×1 [a]: distance 0,
 * self and max a; no previous token; the one row has one key: sink_ratio
 * null. */
Test(roles, null_cases)
{
    double W[15];
    for (int k = 0; k < 15; k++)
        W[k] = 1.0 / 5;
    ag_record r = run(W, 3, 5);
    for (int m = AG_M_ATTENTION_DISTANCE; m <= AG_M_PREV_TOKEN_MASS; m++)
        expect_null(&r, (ag_metric)m);
    expect_num(&r, AG_M_MAX_MASS, 0.2, 2 * EPS);
    expect_num(&r, AG_M_SINK_RATIO, 1, 4 * EPS);
    const double one[1] = {0.7};
    r = run(one, 1, 1);
    expect_num(&r, AG_M_ATTENTION_DISTANCE, 0, 0);
    expect_num(&r, AG_M_SELF_MASS, 0.7, 0);
    expect_num(&r, AG_M_MAX_MASS, 0.7, 0);
    expect_null(&r, AG_M_PREV_TOKEN_MASS);
    expect_null(&r, AG_M_SINK_RATIO);
}

/* Beyond the double range: the 3×3 of 0.75·2^1024 (≈ 1.35e308). self, max
 * and prev mass 0.75·2^1024 are still doubles; attention_distance
 * (8/3)·0.75·2^1024 and sink_ratio 3·0.75·2^1024 are not, and are null.
 * (Exact homogeneity under 2^k: tests/analysis/test_range.c.) */
Test(roles, beyond_range_is_null)
{
    double C[9];
    for (int j = 0; j < 9; j++)
        C[j] = 0.75 * 0x1p1023 * 2;
    ag_record r = run(C, 3, 3);
    expect_num(&r, AG_M_SELF_MASS, C[0], 0);
    expect_num(&r, AG_M_MAX_MASS, C[0], 0);
    expect_num(&r, AG_M_PREV_TOKEN_MASS, C[0], 0);
    expect_null(&r, AG_M_ATTENTION_DISTANCE);
    expect_null(&r, AG_M_SINK_RATIO);
}

/* "attention" selects the role keys with the rest of family B. */
Test(roles, family_selection)
{
    ag_metric_set sel;
    cr_assert_eq(ag_metric_set_parse(&sel, "attention", NULL), AG_OK);
    for (int m = AG_M_ATTENTION_DISTANCE; m <= AG_M_SINK_RATIO; m++) {
        cr_assert(sel.on[m], "%s not in family attention", ag_metric_name((ag_metric)m));
        cr_assert_eq(ag_metric_from_name(ag_metric_name((ag_metric)m)), m);
    }
    ag_metric_set_default(&sel);
    cr_assert(sel.on[AG_M_SINK_RATIO] && sel.on[AG_M_ATTENTION_DISTANCE]);
}

/* ---- Jensen–Shannon distance between heads ------------------------------- */

/* JSD of e_i against the uniform row over k keys (i among them):
 * m = (1 + 1/k)/2 at i, 1/(2k) at the k − 1 others, so
 * JSD = ½[ln(2k/(k+1)) + (1/k) ln(2/(k+1)) + ((k−1)/k) ln 2]
 *     = ln 2 + ½ ln k − ½(1 + 1/k) ln(k + 1). */
static double jsd_point_uniform(double k)
{
    return M_LN2 + 0.5 * log(k) - 0.5 * (1 + 1 / k) * log(k + 1);
}

static double js(const double *A, const double *B, size_t rows, size_t cols)
{
    double d = -1;
    ag_error err = {0};
    cr_assert_eq(ag_js_distance(A, B, rows, cols, &d, &err), AG_OK, "%s", err.message);
    return d;
}

/* The identity against uniform attention on n tokens: every row is e_i
 * against the uniform row over n keys; causal uniform: row i over i + 1. */
Test(roles, js_identity_vs_uniform)
{
    for (size_t n = 1; n <= 64; n = 2 * n + 1) {
        double *I = test_square(n), *U = test_square(n), *C = test_square(n), causal = 0;
        for (size_t i = 0; i < n; i++) {
            I[i * n + i] = 1;
            for (size_t j = 0; j < n; j++)
                U[i * n + j] = 1.0 / (double)n;
            for (size_t j = 0; j <= i; j++)
                C[i * n + j] = 1.0 / (double)(i + 1);
            causal += sqrt(jsd_point_uniform((double)(i + 1)));
        }
        double want = sqrt(jsd_point_uniform((double)n));
        cr_assert(fabs(js(I, U, n, n) - want) <= 16 * EPS, "n %zu: %.17g vs %.17g", n,
                  js(I, U, n, n), want);
        cr_assert(fabs(js(U, I, n, n) - want) <= 16 * EPS);
        cr_assert(fabs(js(I, C, n, n) - causal / (double)n) <= 16 * EPS, "causal n %zu", n);
        free(I);
        free(U);
        free(C);
    }
}

/* Disjoint supports (a cyclic shift against the identity): JSD = ln 2 on
 * every row, the largest value, so the distance is √ln 2. */
Test(roles, js_disjoint)
{
    enum { n = 9 };
    double I[n * n] = {0}, P[n * n] = {0};
    for (int i = 0; i < n; i++) {
        I[i * n + i] = 1;
        P[i * n + (i + 1) % n] = 1;
    }
    cr_assert(fabs(js(I, P, n, n) - sqrt(M_LN2)) <= 4 * EPS);
}

/* Two rows δ apart: p = (½, ½), q = (½ + δ, ½ − δ). Per entry the term is
 * m·f(d), f(d) = d² + d⁴/6 + …, d = ∓δ/(1 ± δ), m = (1 ± δ)/2: JSD =
 * ½Σ m f(d) = δ²/(2(1 − δ²)) + O(δ⁴), distance δ/√2 to relative δ². The
 * textbook Σ p ln(p/m) loses ε/δ² of JSD to cancellation (5e-5 here);
 * this asks for 1e-9. */
Test(roles, js_close_rows_keep_digits)
{
    const double delta = 1e-6, p[2] = {0.5, 0.5}, q[2] = {0.5 + delta, 0.5 - delta};
    double want = delta / sqrt(2 * (1 - delta * delta));
    double got = js(p, q, 1, 2);
    cr_assert(fabs(got - want) <= 1e-9 * want, "%.17g vs %.17g", got, want);
}

/* Rows far apart with a tiny entry (T5's attention: 1e-18 next to 0.2):
 * d = (p − q)/(p + q) rounds to −1, where 2d·atanh(d) + ln(1 − d²) is
 * ∞ − ∞ (the row's JSD was lost to NaN, then clamped to 0); the textbook
 * terms, computed here in long double from the definition, do not cancel.
 * (Entries are used as given: the row need not sum to 1 exactly.) */
Test(roles, js_far_rows_keep_digits)
{
    const double p[2] = {1e-18, 1}, q[2] = {0.2, 0.8};
    long double t = 0;
    for (int j = 0; j < 2; j++) {
        long double m = ((long double)p[j] + q[j]) / 2;
        t += p[j] * logl(p[j] / m) + q[j] * logl(q[j] / m);
    }
    double want = (double)sqrtl(t / 2);
    double got = js(p, q, 1, 2);
    cr_assert(fabs(got - want) <= 1e-14 * want, "%.17g vs %.17g", got, want);
}

static unsigned long long rng_state = 0x2545F4914F6CDD1DULL;

/* A metric on heads: d(A, A) = 0 exactly, d(A, B) = d(B, A) exactly, and
 * the triangle inequality (each row's √JSD is a metric, Endres &
 * Schindelin 2003, and so is their mean); values in [0, √ln 2]. */
Test(roles, js_metric_properties)
{
    enum { n = 12 };
    double A[n * n], B[n * n], C[n * n];
    for (int trial = 0; trial < 20; trial++) {
        test_random_attention(A, n, trial & 1, 6, &rng_state);
        test_random_attention(B, n, trial & 2, 6, &rng_state);
        test_random_attention(C, n, 0, 6, &rng_state);
        cr_assert_eq(js(A, A, n, n), 0.0);
        double ab = js(A, B, n, n), ba = js(B, A, n, n), bc = js(B, C, n, n),
               ac = js(A, C, n, n);
        cr_assert_eq(ab, ba);
        cr_assert(ab > 0 && ab <= sqrt(M_LN2));
        cr_assert(ac <= ab + bc + 8 * EPS, "%g > %g + %g", ac, ab, bc);
    }
}

Test(roles, js_rejects_what_is_not_a_probability)
{
    double A[4] = {0.5, 0.5, 0.5, 0.5}, B[4] = {0.5, 0.5, 1.5, -0.5}, d;
    ag_error err = {0};
    cr_assert_eq(ag_js_distance(A, B, 2, 2, &d, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "entry 2") != NULL, "%s", err.message);
    B[2] = NAN;
    cr_assert_eq(ag_js_distance(A, B, 2, 2, &d, &err), AG_ENONFINITE);
    cr_assert_eq(ag_js_distance(A, A, 0, 2, &d, &err), AG_EINVAL);
}
