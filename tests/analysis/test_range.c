/* test_range.c — every number is right or null at the ends of the double
 * range (docs/metrics.md, "Range"): c·I for c = 1e308, 1e-300, 2^-1060 and
 * the smallest subnormal, the 3×3 of 1e308 whose σ₁ exceeds DBL_MAX, rows
 * whose sums overflow, exact scale invariance under 2^k for |k| ≤ 1000, the
 * weight metrics of huge and tiny factors, and the LAPACK wrappers' refusal
 * of NaN/Inf. Every expected value is derived here. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"
#include "../../analysis/analysis.h" /* ag_finite_max_abs */

TestSuite(range);

/* ---- c·I ------------------------------------------------------------------ */

/* c·I_n: σ = c (n times), so sigma_max = c, sigma_gap 0 and every rank n;
 * eigenvalues c (n times): lambda2_abs = c, spectral_gap 0, λ₂ repeated
 * (condition null); causal; W = c·I gives L = I − I = 0: fiedler 0; rows
 * c·e_i: mean_cosine 0, row sums c: row_sum_error |c − 1|; the centred
 * c(I − J/n) has σ = c (n−1 times) and 0: pc1_share 1/(n−1), res_ratio
 * √((n−1)/n); H_i = −c ln c, sink_mass c/n; causal rows i ≥ 1 allow i+1 keys. */
static void check_scaled_identity(double c)
{
    enum { n = 4 };
    double A[n * n] = {0};
    for (int i = 0; i < n; i++)
        A[i * n + i] = c;
    ag_record r = run(A, n, n);
    cr_assert_eq(r.value[AG_M_SIGMA_MAX], c, "c = %g: sigma_max = %.17g", c, r.value[AG_M_SIGMA_MAX]);
    expect_num(&r, AG_M_SIGMA_GAP, 0, 4 * DBL_EPSILON);
    expect_int(&r, AG_M_NUMERICAL_RANK, n);
    expect_num(&r, AG_M_STABLE_RANK, n, 8 * DBL_EPSILON);
    expect_num(&r, AG_M_EFFECTIVE_RANK, n, 16 * DBL_EPSILON);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, n, 16 * DBL_EPSILON);
    cr_assert_eq(r.value[AG_M_LAMBDA2_ABS], c);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0, 0);
    expect_null(&r, AG_M_LAMBDA2_CONDITION);
    cr_assert_eq(r.value[AG_M_CAUSAL], 1);
    expect_num(&r, AG_M_FIEDLER, 0, 8 * DBL_EPSILON);
    expect_num(&r, AG_M_ASYMMETRY, 0, 0);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 1, 0);
    expect_num(&r, AG_M_MEAN_COSINE, 0, 0);
    expect_num(&r, AG_M_PC1_SHARE, 1.0 / (n - 1), 16 * DBL_EPSILON);
    expect_num(&r, AG_M_RES_RATIO, sqrt((n - 1.0) / n), 16 * DBL_EPSILON);
    expect_num(&r, AG_M_ROW_SUM_ERROR, fabs(c - 1), 0);
    double tiny = 2 * 0x1p-1074; /* results in the subnormal range are exact to an ulp */
    expect_num(&r, AG_M_SINK_MASS, c / n, fmax(tiny, 4 * DBL_EPSILON * c / n));
    double h = -c * log(c);
    if (!isfinite(h)) { /* −c ln c beyond the double range */
        expect_null(&r, AG_M_ENTROPY_MEAN);
        expect_null(&r, AG_M_ENTROPY_NORMALIZED);
        return;
    }
    expect_num(&r, AG_M_ENTROPY_MEAN, h, fmax(tiny, 8 * DBL_EPSILON * h));
    double hn = 0;
    for (int i = 1; i < n; i++)
        hn += h / log(i + 1.0);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, hn / (n - 1), fmax(tiny, 16 * DBL_EPSILON * hn));
}

Test(range, huge_identity) { check_scaled_identity(1e308); }
Test(range, tiny_identity) { check_scaled_identity(1e-300); }
Test(range, subnormal_identity) { check_scaled_identity(0x1p-1060); }
Test(range, smallest_subnormal_identity) { check_scaled_identity(0x1p-1074); }
Test(range, largest_double_identity) { check_scaled_identity(DBL_MAX); }

/* ---- values beyond the double range ------------------------------------- */

/* c·J (3×3 all c, c = 1e308): σ = 3c, 0, 0 — 3e308 > DBL_MAX, so sigma_max
 * is null while every ratio is exact: rank 1 everywhere, sigma_gap 1. Row
 * sums 3c: row_sum_error null; −Σ c ln c: entropy null. Eigenvalues 3c, 0,
 * 0: spectral_gap = 3c null, lambda2_abs is rounding noise below 3c·3ε;
 * W = c·J: L = I − J/3, eigenvalues 0, 1, 1: fiedler 1. Rows equal:
 * mean_cosine 1, centred matrix 0 (pc1_share null, res_ratio 0). At τ = 1/3
 * the graph is K₃: Forman 4 − 2 − 2 = 0, Ollivier n/(2(n−1)) = ¾. */
Test(range, sigma_max_beyond_double_is_null)
{
    double A[9];
    for (int k = 0; k < 9; k++)
        A[k] = 1e308;
    ag_record r = run(A, 3, 3);
    expect_null(&r, AG_M_SIGMA_MAX);
    expect_num(&r, AG_M_SIGMA_GAP, 1, 4 * DBL_EPSILON);
    expect_int(&r, AG_M_NUMERICAL_RANK, 1);
    expect_num(&r, AG_M_STABLE_RANK, 1, 4 * DBL_EPSILON);
    expect_num(&r, AG_M_EFFECTIVE_RANK, 1, 4 * DBL_EPSILON);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, 1, 4 * DBL_EPSILON);
    expect_null(&r, AG_M_ROW_SUM_ERROR);
    expect_null(&r, AG_M_ENTROPY_MEAN);
    expect_null(&r, AG_M_ENTROPY_NORMALIZED);
    expect_num(&r, AG_M_SINK_MASS, 1e308, 0);
    expect_null(&r, AG_M_SPECTRAL_GAP);
    expect_num(&r, AG_M_LAMBDA2_ABS, 0, 1e308 * 27 * DBL_EPSILON);
    expect_num(&r, AG_M_FIEDLER, 1, 8 * DBL_EPSILON);
    expect_num(&r, AG_M_MEAN_COSINE, 1, 4 * DBL_EPSILON);
    expect_null(&r, AG_M_PC1_SHARE);
    expect_num(&r, AG_M_RES_RATIO, 0, 0);
    expect_int(&r, AG_M_EDGES, 3);
    expect_num(&r, AG_M_FORMAN_MEAN, 0, 8 * DBL_EPSILON);
    expect_num(&r, AG_M_OLLIVIER_MEAN, 0.75, 8 * DBL_EPSILON);
    expect_num(&r, AG_M_OLLIVIER_MIN, 0.75, 8 * DBL_EPSILON);
}

/* [[a, a], [1, 1]], a = 1e308: row 0 sums to 2a > DBL_MAX (row_sum_error
 * null) but σ₁ = √(2(a² + 1)) = √2·a is finite. [[a, −a], [½, ½]]: the row
 * sums are exactly 0 and 1, so row_sum_error = 1 (the overflowing
 * compensated sum gave NaN and the maximum ignored it: 0). */
Test(range, row_sums_beyond_double)
{
    double a = 1e308, A[4] = {a, a, 1, 1}, B[4] = {a, -a, 0.5, 0.5};
    ag_record r = run(A, 2, 2);
    expect_null(&r, AG_M_ROW_SUM_ERROR);
    expect_num(&r, AG_M_SIGMA_MAX, sqrt(2.0) * a, 4 * DBL_EPSILON * a);
    expect_int(&r, AG_M_NUMERICAL_RANK, 1);
    /* W = [[a, (a+1)/2], [(a+1)/2, 1]]: L → [[1/3, −1/√3], [−1/√3, 1]], λ = 0, 4/3 */
    expect_num(&r, AG_M_FIEDLER, 4.0 / 3, 8 * DBL_EPSILON);
    r = run(B, 2, 2);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 1, 0);
}

/* ---- scale invariance ---------------------------------------------------- */

static unsigned long long state = 0x9E3779B97F4A7C15ULL;

/* Keys unchanged by M → c·M, c > 0 (edges and curvature at τ = 0: every
 * pair of a positive matrix is an edge whatever c). */
static const ag_metric invariant[] = {
    AG_M_SIGMA_GAP, AG_M_EFFECTIVE_RANK, AG_M_STABLE_RANK, AG_M_PARTICIPATION_RATIO,
    AG_M_NUMERICAL_RANK, AG_M_CAUSAL, AG_M_FIEDLER, AG_M_ASYMMETRY, AG_M_SYMMETRY_SCORE,
    AG_M_MEAN_COSINE, AG_M_PC1_SHARE, AG_M_RES_RATIO, AG_M_LAMBDA2_CONDITION, AG_M_EDGES,
    AG_M_FORMAN_MEAN, AG_M_FORMAN_MIN, AG_M_OLLIVIER_MEAN, AG_M_OLLIVIER_MIN};
/* Keys multiplied by c. */
static const ag_metric homogeneous[] = {
    AG_M_SIGMA_MAX, AG_M_LAMBDA2_ABS, AG_M_SPECTRAL_GAP, AG_M_SINK_MASS,
    AG_M_ATTENTION_DISTANCE, AG_M_SELF_MASS, AG_M_PREV_TOKEN_MASS, AG_M_MAX_MASS,
    AG_M_SINK_RATIO, AG_M_PREV_TOKEN_RATIO, AG_M_SELF_RATIO};

/* B: positive 6×6 (rows normalised, largest entry in [0.5, 1)). For 2^k·B
 * with |k| > 100 the library computes on 2^-k·(2^k·B) = B itself, so the
 * invariant keys are bit-identical and the homogeneous ones exactly 2^k
 * times B's; for |k| ≤ 100 it computes on 2^k·B directly (agreement to
 * rounding). H(2^k·B) = 2^k·(H(B) − k ln2·Σ_j b_ij) per row, and the row
 * sums are 2^k·Σ_j b_ij. */
Test(range, power_of_two_scale_invariance)
{
    enum { n = 6 };
    double B[n * n], A[n * n], rows[n];
    double mx = 0;
    for (int i = 0; i < n; i++) {
        double z = 0;
        for (int j = 0; j < n; j++)
            z += B[i * n + j] = exp(3 * test_uniform01(&state));
        for (int j = 0; j < n; j++)
            mx = fmax(mx, B[i * n + j] /= z);
    }
    int e0;
    frexp(mx, &e0);
    for (int k = 0; k < n * n; k++)
        B[k] = ldexp(B[k], -e0); /* largest entry in [0.5, 1) */
    for (int i = 0; i < n; i++) {
        rows[i] = 0;
        for (int j = 0; j < n; j++)
            rows[i] += B[i * n + j];
    }
    ag_record rb = run_tau(B, n, n, 0);
    const int ks[] = {-1000, -700, -101, -50, -3, 3, 50, 101, 600, 1000};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        int k = ks[t], exact = abs(k) > 100;
        for (int i = 0; i < n * n; i++)
            A[i] = ldexp(B[i], k);
        ag_record ra = run_tau(A, n, n, 0);
        for (size_t q = 0; q < sizeof invariant / sizeof *invariant; q++) {
            ag_metric key = invariant[q];
            cr_assert_eq(ra.kind[key], rb.kind[key], "k = %d: %s kind", k, ag_metric_name(key));
            double tol = exact ? 0 : 1e-13 * fmax(1, fabs(rb.value[key]));
            cr_assert(fabs(ra.value[key] - rb.value[key]) <= tol, "k = %d: %s = %.17g, B: %.17g",
                      k, ag_metric_name(key), ra.value[key], rb.value[key]);
        }
        for (size_t q = 0; q < sizeof homogeneous / sizeof *homogeneous; q++) {
            ag_metric key = homogeneous[q];
            double want = ldexp(rb.value[key], k);
            double tol = exact ? 0 : 1e-13 * fabs(want);
            expect_num(&ra, key, want, tol);
        }
        double h = 0, worst = 0;
        for (int i = 0; i < n; i++) {
            double hi = -k * M_LN2 * rows[i];
            for (int j = 0; j < n; j++)
                hi -= B[i * n + j] * log(B[i * n + j]);
            h += hi / n;
            worst = fmax(worst, fabs(ldexp(rows[i], k) - 1));
        }
        expect_num(&ra, AG_M_ENTROPY_MEAN, ldexp(h, k), 1e-13 * fabs(ldexp(h, k)));
        expect_num(&ra, AG_M_ROW_SUM_ERROR, worst, 4 * DBL_EPSILON * fmax(1, worst));
    }
}

/* ---- family D: factors near the ends of the range ---------------------- */

/* W_Q = W_K = c·[I₂; 0], W_V = c·[I₂; 0], W_O = c·[I₂ 0] (d = 3, d_h = 2):
 * M_QK = M_OV = c²·diag(1, 1, 0): sigma_max c², ranks 2, symmetry 1,
 * copying score 1. c = 2^600: c² beyond the double range (null), ratios
 * exact; c = 2^-600: c² = 2^-1200 rounds to 0. */
Test(range, weight_factors_scaled)
{
    const double cs[] = {1, 0x1p600, 0x1p-600, 0x1p-530};
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
        double c = cs[t], wq[6] = {c, 0, 0, c, 0, 0}, wo[6] = {c, 0, 0, 0, c, 0};
        ag_head_factors f = {.d = 3, .d_h = 2, .d_out = 3, .wq = wq, .ldq = 2, .wk = wq, .ldk = 2,
                             .wv = wq, .ldv = 2, .wo = wo, .ldo = 3};
        ag_metric_set sel;
        ag_metric_set_parse(&sel, "weights", NULL);
        ag_record r;
        ag_record_init(&r, 0, 0, 0, 0);
        ag_error err = {0};
        cr_assert_eq(ag_weight_metrics(&f, &sel, &r, &err), AG_OK, "%s", err.message);
        double c2 = c * c;
        for (int base = AG_M_QK_SIGMA_MAX; base <= AG_M_OV_SIGMA_MAX; base += AG_M_OV_SIGMA_MAX - AG_M_QK_SIGMA_MAX) {
            if (isinf(c2))
                expect_null(&r, (ag_metric)base);
            else
                expect_num(&r, (ag_metric)base, c2, 4 * DBL_EPSILON * c2);
            expect_num(&r, (ag_metric)(base + 3), 2, 8 * DBL_EPSILON); /* stable_rank */
            expect_int(&r, (ag_metric)(base + 5), 2);                  /* numerical_rank */
        }
        expect_num(&r, AG_M_QK_SYMMETRY_SCORE, 1, 8 * DBL_EPSILON);
        expect_num(&r, AG_M_OV_COPYING_SCORE, 1, 8 * DBL_EPSILON);
    }
}

/* ---- LAPACK never sees NaN or Inf ----------------------------------------- */

Test(range, lapack_wrappers_refuse_nonfinite)
{
    double A[4] = {1, INFINITY, 0, 1}, re[2], im[2], rc[2], v;
    cr_assert_eq(ag_svd_values(A, 2, 2, re), AG_ENONFINITE);
    cr_assert_eq(ag_eig_general_values(A, 2, re, im), AG_ENONFINITE);
    cr_assert_eq(ag_eig_general_condition(A, 2, re, im, rc), AG_ENONFINITE);
    A[1] = NAN;
    cr_assert_eq(ag_eig_symmetric_kth(A, 2, 1, &v), AG_ENONFINITE);
    A[1] = 0;
    A[2] = -INFINITY;
    cr_assert_eq(ag_eig_triangular_condition(A, 2, re, im, &v), AG_ENONFINITE);
}

/* ---- family E: products that overflow double fail, naming what ---------- */

Test(range, stability_overflow_is_an_error)
{
    double x[4] = {1e200, 2e200, -1e200, 1e200}, w[4] = {1e200, 0, 0, 1e200};
    ag_head_input in = {.x = x, .n = 2, .d = 2, .wq = w, .wk = w, .d_h = 2};
    ag_metric_set sel;
    ag_metric_set_parse(&sel, "stability", NULL);
    ag_record r;
    ag_record_init(&r, 0, 0, 2, 2);
    ag_error err = {0};
    cr_assert_eq(ag_stability_metrics(&in, NULL, &sel, &r, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "stability: Q = X W_Q is not finite at row 0 (float64 overflow)");
    double A[4];
    cr_assert_eq(ag_head_attention(&in, A, &err), AG_ENONFINITE);
}

/* ag_finite_max_abs runs in SIMD lanes with a scalar tail: against the
 * scalar definition (largest |x| over the non-NaN entries, finite iff no
 * NaN or ±Inf) for every length up to 19 with a NaN, ±Inf, −0 or the
 * largest magnitude (negative) at every position. */
Test(range, finite_max_abs_every_position)
{
    enum { len = 19 };
    const double special[] = {NAN, INFINITY, -INFINITY, -0.0, -7.5};
    double x[len];
    for (size_t count = 0; count <= len; count++)
        for (size_t p = 0; p < count; p++)
            for (size_t s = 0; s < sizeof special / sizeof *special; s++) {
                for (size_t k = 0; k < count; k++)
                    x[k] = (k % 3 ? 1.0 : -1.0) * (double)(k + 1) / 8;
                x[p] = special[s];
                double want = 0, got = -1;
                int finite = 1;
                for (size_t k = 0; k < count; k++) {
                    finite &= isfinite(x[k]) != 0;
                    if (fabs(x[k]) > want)
                        want = fabs(x[k]);
                }
                cr_assert_eq(ag_finite_max_abs(x, count, &got), finite, "count %zu at %zu", count, p);
                cr_assert_eq(got, want, "count %zu at %zu: %g, not %g", count, p, got, want);
            }
}

/* ag_matrix_scan gathers in one pass what the families used to scan for
 * apart: against the scalar definitions (largest |M_ij| over the non-NaN
 * entries; finite iff no NaN or ±Inf; some M_ij < 0; some M_ij ≠ 0 with
 * j > i when square) on every shape up to 11×11, with a −0, a negative, a
 * NaN, +Inf or a tiny value put at every position of a nonnegative lower
 * triangular matrix. */
Test(range, matrix_scan_every_position)
{
    enum { len = 11 };
    const double special[] = {-0.0, -2.5, NAN, INFINITY, 1e-300};
    double M[len * len];
    for (size_t m = 1; m <= len; m++)
        for (size_t n = 1; n <= len; n++)
            for (size_t p = 0; p < m * n; p++)
                for (size_t s = 0; s < sizeof special / sizeof *special; s++) {
                    for (size_t k = 0; k < m * n; k++)
                        M[k] = k % n <= k / n ? (double)(k + 1) / 16 : 0.0;
                    M[p] = special[s];
                    ag_matrix_facts want = {0}, got;
                    want.finite = 1;
                    for (size_t k = 0; k < m * n; k++) {
                        want.finite &= isfinite(M[k]) != 0;
                        want.amax = fabs(M[k]) > want.amax ? fabs(M[k]) : want.amax;
                        want.negative |= M[k] < 0;
                        want.upper |= m == n && k % n > k / n && M[k] != 0;
                    }
                    ag_matrix_scan(M, m, n, &got);
                    cr_assert(got.finite == want.finite && got.negative == want.negative &&
                                  got.upper == want.upper && got.amax == want.amax,
                              "%zux%zu, %g at %zu: finite %d/%d negative %d/%d upper %d/%d "
                              "amax %g/%g", m, n, special[s], p, got.finite, want.finite,
                              got.negative, want.negative, got.upper, want.upper, got.amax,
                              want.amax);
                    cr_assert_eq(ag_facts_causal(&got, m, n), m == n && n >= 2 && !want.upper);
                }
}
