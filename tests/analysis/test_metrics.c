/* test_metrics.c — families A, B, C on matrices whose metrics are derived in
 * closed form below, plus invariants on random matrices. Tolerances are
 * multiples of machine epsilon scaled by the matrix size. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

#define EPS DBL_EPSILON

/* ---- closed forms -------------------------------------------------------- */

/* A = (1/n) 1 1ᵀ: one singular value 1; eigenvalues {1, 0…}; L = I − A has
 * eigenvalues {0, 1…}; every row is the uniform distribution. */
Test(metrics, uniform)
{
    enum { n = 7 };
    double A[n * n];
    for (int k = 0; k < n * n; k++)
        A[k] = 1.0 / n;
    ag_record r = run(A, n, n);
    double tol = 16 * n * EPS;
    expect_num(&r, AG_M_SIGMA_MAX, 1.0, tol);
    expect_num(&r, AG_M_SIGMA_GAP, 1.0, tol);
    expect_num(&r, AG_M_EFFECTIVE_RANK, 1.0, 1e-12);
    expect_num(&r, AG_M_STABLE_RANK, 1.0, tol);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, 1.0, tol);
    expect_int(&r, AG_M_NUMERICAL_RANK, 1);
    expect_bool(&r, AG_M_CAUSAL, 0);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 0.0, tol);
    expect_num(&r, AG_M_ENTROPY_MEAN, log(n), tol);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, 1.0, tol);
    expect_num(&r, AG_M_SINK_MASS, 1.0 / n, tol);
    expect_num(&r, AG_M_LAMBDA2_ABS, 0.0, tol);
    expect_num(&r, AG_M_SPECTRAL_GAP, 1.0, tol);
    expect_num(&r, AG_M_FIEDLER, 1.0, tol);
    expect_num(&r, AG_M_ASYMMETRY, 0.0, 0.0);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 1.0, tol);
    expect_num(&r, AG_M_MEAN_COSINE, 1.0, tol);
    expect_null(&r, AG_M_PC1_SHARE); /* identical rows: centred matrix is 0 */
    expect_num(&r, AG_M_RES_RATIO, 0.0, 0.0);
}

/* I_n: σ all 1; causal (lower triangular, n ≥ 2) with eigenvalues 1;
 * L = I − I = 0; rows orthonormal; I − J/n has singular values 1 (n−1 times)
 * and 0, so pc1_share = 1/(n−1) and res_ratio = √((n−1)/n). */
Test(metrics, identity)
{
    enum { n = 6 };
    double A[n * n] = {0};
    for (int i = 0; i < n; i++)
        A[i * n + i] = 1.0;
    ag_record r = run(A, n, n);
    double tol = 16 * n * EPS;
    expect_num(&r, AG_M_SIGMA_MAX, 1.0, tol);
    expect_num(&r, AG_M_SIGMA_GAP, 0.0, tol);
    expect_num(&r, AG_M_EFFECTIVE_RANK, n, n * tol);
    expect_num(&r, AG_M_STABLE_RANK, n, n * tol);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, n, n * tol);
    expect_int(&r, AG_M_NUMERICAL_RANK, n);
    expect_bool(&r, AG_M_CAUSAL, 1);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 0.0, 0.0);
    expect_num(&r, AG_M_ENTROPY_MEAN, 0.0, 0.0);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, 0.0, 0.0);
    expect_num(&r, AG_M_SINK_MASS, 1.0 / n, tol);
    expect_num(&r, AG_M_LAMBDA2_ABS, 1.0, 0.0);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.0, 0.0);
    expect_num(&r, AG_M_FIEDLER, 0.0, tol);
    expect_num(&r, AG_M_ASYMMETRY, 0.0, 0.0);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 1.0, tol);
    expect_num(&r, AG_M_MEAN_COSINE, 0.0, tol);
    expect_num(&r, AG_M_PC1_SHARE, 1.0 / (n - 1), tol);
    expect_num(&r, AG_M_RES_RATIO, sqrt((n - 1.0) / n), tol);
}

/* Cyclic shift P e_i = e_{i+1}: orthogonal (σ all 1), eigenvalues the n-th
 * roots of unity (all of modulus 1); W = (P + Pᵀ)/2 is half the cycle's
 * adjacency with degree 1, so L = I − W has eigenvalues 1 − cos(2πk/n);
 * P and Pᵀ have disjoint support (n ≥ 3): ‖S‖² = ‖N‖² = n/2. */
Test(metrics, cyclic_permutation)
{
    enum { n = 5 };
    double A[n * n] = {0};
    for (int i = 0; i < n; i++)
        A[i * n + (i + 1) % n] = 1.0;
    ag_record r = run(A, n, n);
    double tol = 64 * n * EPS;
    expect_num(&r, AG_M_SIGMA_MAX, 1.0, tol);
    expect_num(&r, AG_M_EFFECTIVE_RANK, n, n * tol);
    expect_int(&r, AG_M_NUMERICAL_RANK, n);
    expect_bool(&r, AG_M_CAUSAL, 0);
    expect_num(&r, AG_M_ENTROPY_MEAN, 0.0, 0.0);
    expect_num(&r, AG_M_SINK_MASS, 1.0 / n, tol); /* only row n−1 hits token 0 */
    expect_num(&r, AG_M_LAMBDA2_ABS, 1.0, tol);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.0, tol);
    expect_num(&r, AG_M_FIEDLER, 1.0 - cos(2 * M_PI / n), tol);
    expect_num(&r, AG_M_ASYMMETRY, sqrt(0.5), tol);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 0.5, tol);
    expect_num(&r, AG_M_MEAN_COSINE, 0.0, tol);
    expect_num(&r, AG_M_PC1_SHARE, 1.0 / (n - 1), tol);
}

/* Causal uniform: A_ij = 1/(i+1) for j ≤ i. Eigenvalues are the diagonal
 * 1/(i+1): λ₁ = 1, λ₂ = 1/2. Row i's entropy is ln(i+1), so every row with
 * s_i = i+1 ≥ 2 has normalised entropy 1; sink mass = H_n / n. */
Test(metrics, causal_uniform)
{
    enum { n = 9 };
    double A[n * n] = {0}, ent = 0, harmonic = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++)
            A[i * n + j] = 1.0 / (i + 1);
        ent += log(i + 1.0);
        harmonic += 1.0 / (i + 1);
    }
    ag_record r = run(A, n, n);
    double tol = 64 * n * EPS;
    expect_bool(&r, AG_M_CAUSAL, 1);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 0.0, tol);
    expect_num(&r, AG_M_ENTROPY_MEAN, ent / n, tol);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, 1.0, tol);
    expect_num(&r, AG_M_SINK_MASS, harmonic / n, tol);
    expect_num(&r, AG_M_LAMBDA2_ABS, 0.5, 0.0); /* exact: taken from the diagonal */
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.5, 0.0);
    expect_int(&r, AG_M_NUMERICAL_RANK, n); /* triangular, non-zero diagonal */
}

/* Two uniform blocks of sizes a and b: singular values {1, 1, 0…},
 * eigenvalues {1, 1, 0…}, L = I − A has a double 0 (two components). */
Test(metrics, block_diagonal)
{
    enum { a = 3, b = 5, n = a + b };
    double A[n * n] = {0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if ((i < a) == (j < a))
                A[i * n + j] = 1.0 / (i < a ? a : b);
    ag_record r = run(A, n, n);
    double tol = 64 * n * EPS;
    expect_num(&r, AG_M_SIGMA_MAX, 1.0, tol);
    expect_num(&r, AG_M_SIGMA_GAP, 0.0, tol);
    expect_num(&r, AG_M_EFFECTIVE_RANK, 2.0, 1e-12);
    expect_num(&r, AG_M_STABLE_RANK, 2.0, tol);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, 2.0, tol);
    expect_int(&r, AG_M_NUMERICAL_RANK, 2);
    expect_num(&r, AG_M_ENTROPY_MEAN, (a * log(a) + b * log(b)) / n, tol);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, (a * log(a) + b * log(b)) / (n * log(n)), tol);
    expect_num(&r, AG_M_SINK_MASS, (double)a / a / n, tol);
    expect_num(&r, AG_M_LAMBDA2_ABS, 1.0, tol);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.0, tol);
    expect_num(&r, AG_M_FIEDLER, 0.0, tol);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 1.0, tol);
    /* Rows within a block are equal, across blocks orthogonal:
     * cosine 1 for a(a−1) + b(b−1) of the n(n−1) ordered pairs. */
    expect_num(&r, AG_M_MEAN_COSINE, (a * (a - 1.0) + b * (b - 1.0)) / (n * (n - 1.0)), tol);
}

/* Householder reflector H = I − 2vvᵀ/vᵀv applied on the left (orthogonal). */
static void reflect_rows(double *M, size_t m, size_t n, const double *v)
{
    double vv = 0;
    for (size_t i = 0; i < m; i++)
        vv += v[i] * v[i];
    for (size_t j = 0; j < n; j++) {
        double d = 0;
        for (size_t i = 0; i < m; i++)
            d += v[i] * M[i * n + j];
        for (size_t i = 0; i < m; i++)
            M[i * n + j] -= 2 * d / vv * v[i];
    }
}

static void reflect_cols(double *M, size_t m, size_t n, const double *v)
{
    double vv = 0;
    for (size_t j = 0; j < n; j++)
        vv += v[j] * v[j];
    for (size_t i = 0; i < m; i++) {
        double d = 0;
        for (size_t j = 0; j < n; j++)
            d += M[i * n + j] * v[j];
        for (size_t j = 0; j < n; j++)
            M[i * n + j] -= 2 * d / vv * v[j];
    }
}

/* M = H₁ diag(4, 2, 1, 0) H₂ (6×4): singular values exactly {4, 2, 1, 0}. */
Test(metrics, rank_three_rectangular)
{
    enum { m = 6, n = 4 };
    double M[m * n] = {0};
    M[0 * n + 0] = 4;
    M[1 * n + 1] = 2;
    M[2 * n + 2] = 1;
    const double u[m] = {1, -2, 0.5, 3, 1, -1}, v[n] = {2, 1, -1, 0.25};
    reflect_rows(M, m, n, u);
    reflect_cols(M, m, n, v);
    ag_record r = run(M, m, n);
    double tol = 64 * m * EPS * 4;
    double s1 = 4 + 2 + 1, p[3] = {4 / s1, 2 / s1, 1 / s1}, h = 0;
    for (int k = 0; k < 3; k++)
        h -= p[k] * log(p[k]);
    expect_num(&r, AG_M_SIGMA_MAX, 4.0, tol);
    expect_num(&r, AG_M_SIGMA_GAP, 0.5, tol);
    expect_num(&r, AG_M_EFFECTIVE_RANK, exp(h), 1e-12);
    expect_num(&r, AG_M_STABLE_RANK, 21.0 / 16.0, tol);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, 441.0 / 273.0, tol);
    expect_int(&r, AG_M_NUMERICAL_RANK, 3);
    /* Family B on a non-square signed matrix: of its keys only those of
     * a row that need no masses are numbers (the others are a square
     * matrix's, or need A ≥ 0). */
    for (int k = 0; k < AG_M_COUNT; k++) {
        if (ag_metric_family((ag_metric)k) != AG_FAMILY_ATTENTION)
            continue;
        int row = k == AG_M_ROW_SUM_ERROR || k == AG_M_MAX_MASS || k == AG_M_SINK_RATIO;
        cr_assert_eq(r.kind[k], row ? AG_V_NUMBER : AG_V_NULL, "%s", ag_metric_name((ag_metric)k));
    }
}

/* The zero matrix: every ratio over σ₁ or ‖A‖ is undefined. It is (trivially)
 * causal; its Laplacian degrees are 0 so L = I and every eigenvalue is 1. */
Test(metrics, zero)
{
    enum { n = 4 };
    double A[n * n] = {0};
    ag_record r = run(A, n, n);
    expect_num(&r, AG_M_SIGMA_MAX, 0.0, 0.0);
    expect_null(&r, AG_M_SIGMA_GAP);
    expect_null(&r, AG_M_EFFECTIVE_RANK);
    expect_null(&r, AG_M_STABLE_RANK);
    expect_null(&r, AG_M_PARTICIPATION_RATIO);
    expect_int(&r, AG_M_NUMERICAL_RANK, 0);
    expect_bool(&r, AG_M_CAUSAL, 1);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 1.0, 0.0);
    expect_num(&r, AG_M_ENTROPY_MEAN, 0.0, 0.0);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, 0.0, 0.0);
    expect_num(&r, AG_M_SINK_MASS, 0.0, 0.0);
    expect_num(&r, AG_M_LAMBDA2_ABS, 0.0, 0.0);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.0, 0.0);
    expect_num(&r, AG_M_FIEDLER, 1.0, 16 * EPS);
    expect_null(&r, AG_M_ASYMMETRY);
    expect_null(&r, AG_M_SYMMETRY_SCORE);
    expect_null(&r, AG_M_MEAN_COSINE);
    expect_null(&r, AG_M_PC1_SHARE);
    expect_null(&r, AG_M_RES_RATIO);
}

/* 1×1 [x]: a single singular value |x|; not causal (n < 2); no eigenvalue
 * λ₂; one row, so no pair of rows for mean_cosine. */
Test(metrics, one_by_one)
{
    double x = 0.75;
    ag_record r = run(&x, 1, 1);
    expect_num(&r, AG_M_SIGMA_MAX, 0.75, 0.0);
    expect_null(&r, AG_M_SIGMA_GAP);
    expect_num(&r, AG_M_EFFECTIVE_RANK, 1.0, 0.0);
    expect_num(&r, AG_M_STABLE_RANK, 1.0, 0.0);
    expect_num(&r, AG_M_PARTICIPATION_RATIO, 1.0, 0.0);
    expect_int(&r, AG_M_NUMERICAL_RANK, 1);
    expect_bool(&r, AG_M_CAUSAL, 0);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 0.25, 0.0);
    expect_num(&r, AG_M_ENTROPY_MEAN, -0.75 * log(0.75), EPS);
    expect_null(&r, AG_M_ENTROPY_NORMALIZED);
    expect_num(&r, AG_M_SINK_MASS, 0.75, 0.0);
    expect_null(&r, AG_M_LAMBDA2_ABS);
    expect_null(&r, AG_M_SPECTRAL_GAP);
    expect_null(&r, AG_M_FIEDLER);
    expect_num(&r, AG_M_ASYMMETRY, 0.0, 0.0);
    expect_num(&r, AG_M_SYMMETRY_SCORE, 1.0, 0.0);
    expect_null(&r, AG_M_MEAN_COSINE);
    expect_null(&r, AG_M_PC1_SHARE);
    expect_num(&r, AG_M_RES_RATIO, 0.0, 0.0);
}

/* Any negative entry makes the probability-based keys undefined. */
Test(metrics, negative_entries_null)
{
    double A[4] = {0.5, -0.5, 1.0, 2.0};
    ag_record r = run(A, 2, 2);
    expect_null(&r, AG_M_ENTROPY_MEAN);
    expect_null(&r, AG_M_ENTROPY_NORMALIZED);
    expect_null(&r, AG_M_SINK_MASS);
    expect_null(&r, AG_M_FIEDLER);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 2.0, 0.0);
    /* λ of [[0.5, −0.5], [1, 2]]: tr 2.5, det 1.5 → λ = 1.5, 1. */
    expect_num(&r, AG_M_LAMBDA2_ABS, 1.0, 16 * EPS);
    expect_num(&r, AG_M_SPECTRAL_GAP, 0.5, 16 * EPS);
}

/* The one scan that decides negative and causal (attention.c, shape_of)
 * runs in SIMD lanes with a scalar tail: n = 11 puts entries in both. A
 * causal head of uniform rows, A_ij = 1/(i+1) for j ≤ i, has entropy
 * ln(i+1) in row i; -0 in its upper triangle leaves it causal and the
 * entropy as it is; a positive there makes it non-causal; a negative
 * anywhere makes the entropy null. */
Test(metrics, causal_and_negative_scan_every_position)
{
    enum { n = 11 };
    double A[n * n] = {0}, want = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++)
            A[i * n + j] = 1.0 / (i + 1);
        want += log((double)(i + 1)) / n;
    }
    for (int k = 0; k < n * n; k++) {
        double keep = A[k];
        int upper = k % n > k / n;
        if (upper) {
            A[k] = -0.0;
            ag_record r = run(A, n, n);
            expect_bool(&r, AG_M_CAUSAL, 1);
            expect_num(&r, AG_M_ENTROPY_MEAN, want, 8 * EPS);
            A[k] = 1e-300;
            r = run(A, n, n);
            expect_bool(&r, AG_M_CAUSAL, 0);
        }
        A[k] = -1e-300;
        ag_record r = run(A, n, n);
        expect_null(&r, AG_M_ENTROPY_MEAN);
        expect_bool(&r, AG_M_CAUSAL, !upper);
        A[k] = keep;
    }
}

/* ---- invariants on random matrices --------------------------------------- */

static unsigned long long lcg_state = 88172645463325252ULL;
static double uniform01(void)
{
    return test_uniform01(&lcg_state);
}

/* softmax of random logits, optionally causal. */
static void random_attention(double *A, size_t n, int causal)
{
    test_random_attention(A, n, causal, 4, &lcg_state);
}

Test(metrics, invariants_random_stochastic)
{
    enum { n = 40 };
    static double A[n * n];
    for (int causal = 0; causal <= 1; causal++)
        for (int trial = 0; trial < 5; trial++) {
            random_attention(A, n, causal);
            ag_record r = run(A, n, n);
            double tol = 64 * n * EPS;
            cr_assert_leq(r.value[AG_M_EFFECTIVE_RANK], r.value[AG_M_NUMERICAL_RANK] * (1 + tol));
            cr_assert_leq(r.value[AG_M_STABLE_RANK], r.value[AG_M_EFFECTIVE_RANK] * (1 + tol));
            double a = r.value[AG_M_ASYMMETRY];
            expect_num(&r, AG_M_SYMMETRY_SCORE, 1.0 - a * a, tol);
            expect_num(&r, AG_M_ROW_SUM_ERROR, 0.0, tol);
            /* Row-stochastic: ρ(A) = 1, so spectral_gap = 1 − |λ₂|. */
            expect_num(&r, AG_M_SPECTRAL_GAP, 1.0 - r.value[AG_M_LAMBDA2_ABS], tol);
            expect_bool(&r, AG_M_CAUSAL, causal);
            cr_assert(r.value[AG_M_ENTROPY_NORMALIZED] > 0 && r.value[AG_M_ENTROPY_NORMALIZED] <= 1 + tol);
            cr_assert(r.value[AG_M_FIEDLER] >= -tol && r.value[AG_M_FIEDLER] <= 2 + tol);
        }
}

/* For a causal matrix the eigenvalues read off the diagonal agree with a
 * dense eigensolver run on the same matrix. */
Test(metrics, causal_eigenvalues_are_diagonal)
{
    enum { n = 30 };
    static double A[n * n];
    double re[n], im[n], diag[n], zero[n];
    random_attention(A, n, 1);
    cr_assert_eq(ag_eig_general_values(A, n, re, im), AG_OK);
    for (int i = 0; i < n; i++) {
        diag[i] = A[i * n + i];
        zero[i] = 0;
    }
    ag_eig_sort_by_modulus(diag, zero, n);
    for (int i = 0; i < n; i++) {
        cr_assert(fabs(re[i] - diag[i]) <= 1e3 * EPS, "λ_%d: %g vs %g", i, re[i], diag[i]);
        cr_assert(fabs(im[i]) <= 1e3 * EPS);
    }
    ag_record r = run(A, n, n);
    expect_num(&r, AG_M_LAMBDA2_ABS, diag[1], 0.0);
}

/* Σσ² = ‖M‖_F² for a random signed rectangular matrix, and the ratios
 * computed from σ obey 1 ≤ stable_rank ≤ participation_ratio… ≤ q. */
Test(metrics, svd_frobenius_identity)
{
    enum { m = 23, n = 17 };
    double M[m * n], sigma[n], f2 = 0, s2 = 0;
    for (int k = 0; k < m * n; k++) {
        M[k] = 2 * uniform01() - 1;
        f2 += M[k] * M[k];
    }
    cr_assert_eq(ag_svd_values(M, m, n, sigma), AG_OK);
    for (int k = 0; k < n; k++) {
        s2 += sigma[k] * sigma[k];
        if (k)
            cr_assert_leq(sigma[k], sigma[k - 1]);
    }
    cr_assert(fabs(s2 - f2) <= 64 * m * n * EPS * f2);
    ag_record r = run(M, m, n);
    cr_assert_geq(r.value[AG_M_STABLE_RANK], 1.0);
    cr_assert_leq(r.value[AG_M_PARTICIPATION_RATIO], n * (1 + 1e-12));
    cr_assert_geq(r.value[AG_M_PARTICIPATION_RATIO], r.value[AG_M_STABLE_RANK] * (1 - 1e-12));
    expect_int(&r, AG_M_NUMERICAL_RANK, n);
}

/* ---- selection, errors ---------------------------------------------------- */

Test(metrics, selection_only_computes_what_is_asked)
{
    ag_metric_set sel;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, "sigma_max,geometry", &err), AG_OK);
    cr_assert_eq(ag_metric_set_count(&sel), 4);
    double A[4] = {1, 0, 0, 1};
    ag_record r;
    ag_record_init(&r, 0, 0, 0, 0);
    cr_assert_eq(ag_matrix_metrics(A, 2, 2, &sel, &r, &err), AG_OK);
    cr_assert_eq(r.kind[AG_M_SIGMA_MAX], AG_V_NUMBER);
    cr_assert_eq(r.kind[AG_M_EFFECTIVE_RANK], AG_V_ABSENT);
    cr_assert_eq(r.kind[AG_M_CAUSAL], AG_V_ABSENT);
    cr_assert_eq(r.kind[AG_M_RES_RATIO], AG_V_NUMBER);
    cr_assert_eq(ag_metric_set_parse(&sel, "sigma_max,bogus", &err), AG_EINVAL);
    cr_assert(strstr(err.message, "bogus") != NULL);
    cr_assert_eq(ag_metric_set_parse(&sel, "", &err), AG_EINVAL);
}

Test(metrics, nonfinite_input_is_an_error)
{
    double A[4] = {1, NAN, 0, 1};
    ag_metric_set sel;
    ag_error err = {0};
    ag_record r;
    ag_metric_set_default(&sel);
    cr_assert_eq(ag_matrix_metrics(A, 2, 2, &sel, &r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "row 0, column 1") != NULL, "%s", err.message);
    A[1] = INFINITY;
    cr_assert_eq(ag_matrix_metrics(A, 2, 2, &sel, &r, &err), AG_ENONFINITE);
    cr_assert_eq(ag_matrix_metrics(A, 0, 2, &sel, &r, &err), AG_EINVAL);
}

/* Entries near the overflow threshold: the ratios are scale-invariant and
 * must be computed without overflow. */
Test(metrics, huge_entries_scale_invariant)
{
    double A[4] = {1e300, 2e300, 3e300, 4e300}, B[4] = {1, 2, 3, 4};
    ag_record ra = run(A, 2, 2), rb = run(B, 2, 2);
    for (int k = AG_M_SIGMA_GAP; k <= AG_M_PARTICIPATION_RATIO; k++)
        expect_num(&ra, (ag_metric)k, rb.value[k], 1e-13 * fabs(rb.value[k]));
    expect_num(&ra, AG_M_ASYMMETRY, rb.value[AG_M_ASYMMETRY], 1e-14);
    expect_num(&ra, AG_M_MEAN_COSINE, rb.value[AG_M_MEAN_COSINE], 1e-14);
}

/* lambda2_condition = 1/|y₂ᴴx₂|. For L = [[1, 0], [a, b]], λ₂ = b has right
 * eigenvector x = (0, 1) and left eigenvector y ∝ (−a, 1 − b), so the
 * condition number is √(a² + (1−b)²)/|1−b| (√5 for a = 1, b = ½). The causal
 * L takes the back-substitution path, its transpose (not causal) the dense
 * dgeevx path; both must give it. A symmetric matrix is normal: 1. */
Test(metrics, lambda2_condition_closed_forms)
{
    double L[4] = {1, 0, 1, 0.5}, U[4] = {1, 1, 0, 0.5};
    ag_record rl = run(L, 2, 2), ru = run(U, 2, 2);
    expect_bool(&rl, AG_M_CAUSAL, 1);
    expect_bool(&ru, AG_M_CAUSAL, 0);
    expect_num(&rl, AG_M_LAMBDA2_CONDITION, sqrt(5.0), 16 * EPS);
    expect_num(&ru, AG_M_LAMBDA2_CONDITION, sqrt(5.0), 16 * EPS);
    expect_num(&ru, AG_M_LAMBDA2_ABS, 0.5, 16 * EPS);

    enum { n = 12 };
    static double S[n * n];
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++)
            S[i * n + j] = S[j * n + i] = uniform01();
    ag_record rs = run(S, n, n);
    expect_num(&rs, AG_M_LAMBDA2_CONDITION, 1.0, 1e3 * EPS);
    double one = 1;
    ag_record r1 = run(&one, 1, 1);
    expect_null(&r1, AG_M_LAMBDA2_CONDITION);
}

/* λ₂ that is not a simple eigenvalue has no condition number: repeated and
 * semisimple (identity, uniform: λ₂ = 0 with multiplicity n − 1) or
 * defective (the Jordan block [[1, 0], [1, 1]], y₂ᴴx₂ = 0). Each is null,
 * on the causal path and on the dense one (the transpose). */
Test(metrics, lambda2_condition_null_when_not_simple)
{
    enum { n = 5 };
    double I[n * n] = {0}, U[n * n], J[4] = {1, 0, 1, 1}, Jt[4] = {1, 1, 0, 1};
    for (int i = 0; i < n; i++)
        I[i * n + i] = 1;
    for (int k = 0; k < n * n; k++)
        U[k] = 1.0 / n;
    ag_record ri = run(I, n, n), ru = run(U, n, n), rj = run(J, 2, 2), rt = run(Jt, 2, 2);
    expect_null(&ri, AG_M_LAMBDA2_CONDITION);
    expect_null(&ru, AG_M_LAMBDA2_CONDITION);
    expect_null(&rj, AG_M_LAMBDA2_CONDITION);
    expect_null(&rt, AG_M_LAMBDA2_CONDITION);
    /* λ₂ itself stays defined. */
    expect_num(&rj, AG_M_LAMBDA2_ABS, 1.0, 0.0);
}
