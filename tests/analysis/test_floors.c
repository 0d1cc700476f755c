/* test_floors.c — the routes that keep the matrix metrics at their LAPACK
 * floor (docs/performance.md, "Floors of the matrix metrics") give the
 * values of the routes they replace:
 *   σ₁ by Lanczos (ag_svd_max, family C's pc1_share) against dgesdd and
 *     against a long-double Rayleigh quotient of dgesvd's top singular
 *     vector, on random and degenerate matrices (repeated σ₁, rank 1,
 *     constant rows, zero), and on a clustered spectrum where Lanczos gives
 *     way to dgesdd;
 *   lambda2_condition from λ₂'s two eigenvectors against every eigenvector
 *     of dgeevx (ag_eig_general_condition), within a first-order
 *     perturbation bound;
 *   LAPACK's copies at a padded leading dimension (ag_lapack_ld) against
 *     compact ones, their padding NaN;
 *   a reused workspace against a fresh one: the same bytes. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <lapacke.h>

#include "attngeom.h"
#include "../../analysis/linalg.h"      // ag_lapack_ld, ag_lapack_load, the LAPACK calls
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

#define EPS DBL_EPSILON

static unsigned long long rng_state = 0x2545f4914f6cdd1dULL;

static double gaussian(void)
{
    return test_gaussian(&rng_state);
}

static double sigma_dgesdd(const double *M, size_t m, size_t n)
{
    double *s = malloc((m < n ? m : n) * sizeof *s);
    cr_assert_eq(ag_svd_values(M, m, n, s), AG_OK);
    double top = s[0];
    free(s);
    return top;
}

/* σ₁ as the Rayleigh quotient ‖Mv‖/‖v‖ in long double (64-bit mantissa) of
 * dgesvd's top right singular vector v: its error is second order in v's,
 * far below a double's last place for these matrices. */
static long double sigma_rayleigh(const double *M, size_t m, size_t n)
{
    size_t q = m < n ? m : n;
    double *a = malloc(m * n * sizeof *a), *s = malloc(q * sizeof *s),
           *u = malloc(n * q * sizeof *u), *sup = malloc(q * sizeof *sup);
    memcpy(a, M, m * n * sizeof *a);
    /* Row-major M is the column-major Mᵀ (n×m): M's right singular vectors
     * are Mᵀ's left ones. */
    cr_assert_eq(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'N', (lapack_int)n, (lapack_int)m, a,
                                (lapack_int)n, s, u, (lapack_int)n, NULL, 1, sup),
                 0);
    long double vv = 0, mv = 0;
    for (size_t j = 0; j < n; j++)
        vv += (long double)u[j] * u[j];
    for (size_t i = 0; i < m; i++) {
        long double r = 0;
        for (size_t j = 0; j < n; j++)
            r += (long double)M[i * n + j] * u[j];
        mv += r * r;
    }
    free(a);
    free(s);
    free(u);
    free(sup);
    return sqrtl(mv / vv);
}

/* On random matrices of several shapes (Gaussian and uniform entries):
 * within 1 ulp of the long-double reference (observed ≤ 0.8), and within
 * 16 ulps of dgesdd, whose own error at these sizes reaches ~10. */
Test(floors, sigma1_random)
{
    static const size_t shapes[][2] = {{50, 30}, {30, 50}, {200, 200}, {1, 7}, {7, 1},
                                       {64, 64}, {300, 100}, {3, 3}, {128, 129}};
    static double M[300 * 200];
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
        for (int gauss = 0; gauss <= 1; gauss++) {
            size_t m = shapes[t][0], n = shapes[t][1];
            for (size_t k = 0; k < m * n; k++)
                M[k] = gauss ? gaussian() : test_uniform01(&rng_state);
            double s1 = 0;
            int steps = -1;
            cr_assert_eq(ag_svd_max(M, m, n, &s1, &steps), AG_OK);
            cr_assert(steps >= 1 && steps <= 128, "%zux%zu: %d steps", m, n, steps);
            long double ref = sigma_rayleigh(M, m, n);
            double svd = sigma_dgesdd(M, m, n);
            cr_assert(fabsl(s1 - ref) <= EPS * ref, "%zux%zu: σ₁ %.17g, reference %.20Lg", m, n,
                      s1, ref);
            cr_assert(fabs(s1 - svd) <= 16 * EPS * svd, "%zux%zu: σ₁ %.17g, dgesdd %.17g", m, n,
                      s1, svd);
        }
}

/* Closed forms: repeated σ₁ (diag(2, 2, 2, smaller ones); the 8×8 Hadamard
 * matrix, every σ = √8), rank 1 (u vᵀ with small integers: σ₁ = ‖u‖‖v‖),
 * constant rows (σ₁ = √m·‖r‖), the zero matrix (0). Each within 2 ulps of
 * the exact value, and within 16 of dgesdd's, as for random matrices (its
 * σ₁ of the Hadamard matrix is itself 2 ulps above √8, 3 from this one). */
static void expect_sigma1(const double *M, size_t m, size_t n, double exact)
{
    double s1 = -1;
    int steps = -1;
    cr_assert_eq(ag_svd_max(M, m, n, &s1, &steps), AG_OK);
    cr_assert(fabs(s1 - exact) <= 2 * EPS * exact, "%zux%zu: σ₁ %.17g, exact %.17g", m, n, s1,
              exact);
    double svd = sigma_dgesdd(M, m, n);
    cr_assert(fabs(s1 - svd) <= 16 * EPS * exact, "%zux%zu: σ₁ %.17g, dgesdd %.17g", m, n, s1,
              svd);
}

Test(floors, sigma1_degenerate)
{
    enum { n = 40 };
    static double D[n * n], H[64], R[30 * 12], C[25 * 9], Z[6 * 4];
    for (int k = 0; k < n; k++)
        D[k * n + k] = k < 3 ? 2.0 : test_uniform01(&rng_state);
    expect_sigma1(D, n, n, 2.0);
    for (int i = 0; i < 8; i++) /* Sylvester's Hadamard matrix: (-1)^popcount(i & j) */
        for (int j = 0; j < 8; j++) {
            int b = i & j;
            H[i * 8 + j] = ((b ^ (b >> 1) ^ (b >> 2)) & 1) ? -1.0 : 1.0;
        }
    expect_sigma1(H, 8, 8, sqrt(8.0));
    double uu = 0, vv = 0, u[30], v[12];
    for (int i = 0; i < 30; i++) {
        u[i] = (double)(1 + i % 5);
        uu += u[i] * u[i];
    }
    for (int j = 0; j < 12; j++) {
        v[j] = (double)(j % 3) - 0.5;
        vv += v[j] * v[j];
    }
    for (int i = 0; i < 30; i++)
        for (int j = 0; j < 12; j++)
            R[i * 12 + j] = u[i] * v[j];
    expect_sigma1(R, 30, 12, sqrt(uu) * sqrt(vv));
    double rr = 0, row[9] = {0.5, -1, 2, 0.25, 3, -0.75, 1, 1.5, -2};
    for (int j = 0; j < 9; j++)
        rr += row[j] * row[j];
    for (int i = 0; i < 25; i++)
        memcpy(C + i * 9, row, sizeof row);
    expect_sigma1(C, 25, 9, sqrt(25.0) * sqrt(rr));
    double s1 = -1;
    cr_assert_eq(ag_svd_max(Z, 6, 4, &s1, NULL), AG_OK);
    cr_assert_eq(s1, 0.0);
}

/* Entries near the ends of the double range: σ₁ of 2^k·M is 2^k·σ₁(M),
 * exactly (the iteration runs on M brought next to 1 by a power of two). */
Test(floors, sigma1_scaled_exactly)
{
    enum { m = 20, n = 15 };
    double M[m * n], B[m * n], s, sb;
    for (int k = 0; k < m * n; k++) /* |entries| in [0.5, 1.5): 2^±1000 of them stay normal */
        M[k] = (0.5 + test_uniform01(&rng_state)) * (k % 3 ? 1 : -1);
    cr_assert_eq(ag_svd_max(M, m, n, &s, NULL), AG_OK);
    for (int e = -1000; e <= 1000; e += 400) {
        for (int k = 0; k < m * n; k++)
            B[k] = ldexp(M[k], e);
        cr_assert_eq(ag_svd_max(B, m, n, &sb, NULL), AG_OK);
        cr_assert_eq(sb, ldexp(s, e), "2^%d: %.17g vs %.17g", e, sb, ldexp(s, e));
    }
}

/* A top cluster of 200 values within 2e-8 of each other: Lanczos cannot
 * resolve it in 128 steps, and dgesdd gives σ₁ (steps = 0). */
Test(floors, sigma1_clustered_falls_back_to_dgesdd)
{
    enum { n = 300 };
    static double D[n * n];
    for (int k = 0; k < n; k++)
        D[k * n + k] = k < 200 ? 1 - k * 1e-10 : 0.5 * test_uniform01(&rng_state);
    double s1 = 0;
    int steps = -1;
    cr_assert_eq(ag_svd_max(D, n, n, &s1, &steps), AG_OK);
    cr_assert_eq(steps, 0);
    cr_assert_eq(s1, 1.0);
}

/* pc1_share of the matrix metrics is σ₁²/‖Xc‖_F² with this σ₁: compare
 * with dgesdd's σ₁ of the centred matrix formed here. */
Test(floors, pc1_share_matches_svd)
{
    enum { m = 60, n = 45 };
    static double X[m * n], Xc[m * n];
    double mean[n] = {0}, f2 = 0;
    for (int k = 0; k < m * n; k++)
        X[k] = gaussian() + 3;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            mean[j] += X[i * n + j] / m;
    for (int k = 0; k < m * n; k++) {
        Xc[k] = X[k] - mean[k % n];
        f2 += Xc[k] * Xc[k];
    }
    double s = sigma_dgesdd(Xc, m, n);
    ag_record r = run(X, m, n);
    expect_num(&r, AG_M_PC1_SHARE, s * s / f2, 64 * EPS * s * s / f2);
}

/* ---- lambda2_condition ---------------------------------------------------- */

/* dgeevx's 1/|y₂ᴴx₂| (every eigenvector) against the metric's (λ₂'s two
 * eigenvectors), on matrices where λ₂ is clearly simple. Both are backward
 * stable; to first order their eigenvectors differ by O(ε‖A‖_F/δ), δ the
 * distance from λ₂ to the other eigenvalues, so the condition number
 * c = 1/|y₂ᴴx₂| by O(ε‖A‖_F c/δ) relative: 64 times that is allowed
 * (observed ≤ 2). Returns whether λ₂ was complex. */
static int check_condition(const double *A, int n)
{
    double *re = malloc(n * sizeof *re), *im = malloc(n * sizeof *im),
           *rc = malloc(n * sizeof *rc), f2 = 0, sep = INFINITY;
    cr_assert_eq(ag_eig_general_condition(A, n, re, im, rc), AG_OK);
    for (int k = 0; k < n * n; k++)
        f2 += A[k] * A[k];
    for (int k = 0; k < n; k++)
        if (k != 1)
            sep = fmin(sep, hypot(re[k] - re[1], im[k] - im[1]));
    double l1 = hypot(re[0], im[0]), want = 1 / rc[1];
    int complex_l2 = im[1] != 0;
    ag_record r = run(A, n, n);
    if (rc[1] > 1e3 * n * EPS && sep > 1e3 * n * EPS * l1) /* clearly simple */
        expect_num(&r, AG_M_LAMBDA2_CONDITION, want, 64 * EPS * sqrt(f2) * want / sep * want);
    free(re);
    free(im);
    free(rc);
    return complex_l2;
}

Test(floors, lambda2_condition_matches_dgeevx)
{
    /* 64 and 128: the dense route's copies padded (ag_lapack_ld) */
    static const int sizes[] = {3, 4, 7, 16, 40, 64, 90, 128};
    static double A[128 * 128];
    int complex_seen = 0;
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++)
        for (int kind = 0; kind < 4; kind++) {
            int n = sizes[t];
            for (int k = 0; k < n * n; k++)
                A[k] = kind == 0 ? gaussian()
                       : kind == 1 ? test_uniform01(&rng_state)
                       : kind == 2 ? (test_uniform01(&rng_state) < 0.3 ? gaussian() : 0)
                                   : 0;
            if (kind == 3) /* attention, causal and not */
                test_random_attention(A, n, t % 2, 4, &rng_state);
            complex_seen += check_condition(A, n);
            for (int i = 0; i < n; i++) /* lower triangular: the dtrevc path */
                for (int j = i + 1; j < n; j++)
                    A[i * n + j] = 0;
            check_condition(A, n);
        }
    cr_assert(complex_seen > 0, "no complex λ₂ among the matrices: the test lost its reach");
}

/* ---- the padded leading dimension ------------------------------------------ */

/* Pad only where columns a multiple of 512 B apart would share cache sets. */
Test(floors, padded_leading_dimension)
{
    static const size_t rows[][2] = {{1, 1},     {63, 63},   {64, 72},     {70, 70},
                                     {512, 520}, {960, 968}, {1000, 1000}, {1024, 1032}};
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++)
        cr_expect_eq(ag_lapack_ld(rows[k][0]), rows[k][1], "ag_lapack_ld(%zu)", rows[k][0]);
}

/* A copy at the padded leading dimension, its padding NaN, against the
 * compact copy: LAPACK reads no padding (every value finite) and finds the
 * same singular values and eigenvalues, within a backward-stable
 * computation's reach of each other (the two differ only in where the
 * columns lie: on the machines measured, not at all). Shapes: square with
 * and without padding, causal, and a rectangle whose columns are padded. */
Test(floors, padded_copy_matches_compact)
{
    static const size_t shapes[][2] = {{64, 64}, {128, 128}, {70, 128}, {128, 70}, {192, 192}};
    ag_matrix_work *w = NULL;
    cr_assert_eq(ag_matrix_work_new(&w, NULL), AG_OK);
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        size_t m = shapes[t][0], n = shapes[t][1], ld = ag_lapack_ld(n), q = m < n ? m : n;
        double *M = malloc(m * n * sizeof *M), *a = malloc(m * ld * sizeof *a),
               *b = malloc(m * n * sizeof *b), *sa = malloc(q * sizeof *sa),
               *sb = malloc(q * sizeof *sb);
        if (m == n)
            test_random_attention(M, n, t % 2, 3, &rng_state);
        else
            for (size_t k = 0; k < m * n; k++)
                M[k] = gaussian();
        for (size_t k = 0; k < m * ld; k++)
            a[k] = NAN;
        ag_lapack_load(a, ld, M, m, n);
        memcpy(b, M, m * n * sizeof *b);
        cr_assert_eq(ag_lapack_svd_values(a, m, n, ld, sa, w), AG_OK);
        cr_assert_eq(ag_lapack_svd_values(b, m, n, n, sb, w), AG_OK);
        double tol = 8 * (double)(m > n ? m : n) * EPS * sb[0];
        for (size_t k = 0; k < q; k++)
            cr_assert(isfinite(sa[k]) && fabs(sa[k] - sb[k]) <= tol,
                      "%zux%zu (ld %zu): σ_%zu %.17g against %.17g", m, n, ld, k, sa[k], sb[k]);
        cr_assert_eq(ag_svd_values(M, m, n, sa), AG_OK); /* the public wrapper pads too */
        for (size_t k = 0; k < q; k++)
            cr_assert(fabs(sa[k] - sb[k]) <= tol, "%zux%zu: ag_svd_values σ_%zu %.17g against %.17g",
                      m, n, k, sa[k], sb[k]);
        if (m == n) {
            double *wr[2], *wi[2], *h = malloc(n * ld * sizeof *h), f2 = 0;
            for (int c = 0; c < 2; c++) {
                wr[c] = malloc(n * sizeof *wr[c]);
                wi[c] = malloc(n * sizeof *wi[c]);
            }
            for (size_t k = 0; k < m * ld; k++)
                a[k] = NAN;
            ag_lapack_load(a, ld, M, n, n);
            memcpy(b, M, n * n * sizeof *b);
            for (size_t k = 0; k < n * n; k++)
                f2 += M[k] * M[k];
            cr_assert_eq(ag_lapack_eigenvalues(a, n, ld, h, wr[0], wi[0], w), AG_OK);
            cr_assert_eq(ag_lapack_eigenvalues(b, n, n, NULL, wr[1], wi[1], w), AG_OK);
            for (size_t k = 0; k < n; k++) /* the same sequence of operations: the same order */
                cr_assert(isfinite(wr[0][k]) &&
                              hypot(wr[0][k] - wr[1][k], wi[0][k] - wi[1][k]) <=
                                  1e-10 * sqrt(f2),
                          "%zu×%zu (ld %zu): eigenvalue %zu %.17g%+.17gi against %.17g%+.17gi",
                          n, n, ld, k, wr[0][k], wi[0][k], wr[1][k], wi[1][k]);
            for (int c = 0; c < 2; c++) {
                free(wr[c]);
                free(wi[c]);
            }
            free(h);
        }
        free(M);
        free(a);
        free(b);
        free(sa);
        free(sb);
    }
    ag_matrix_work_free(w);
}

/* ---- the workspace -------------------------------------------------------- */

typedef struct {
    size_t m, n;
    double *M;
} case_matrix;

static void make_cases(case_matrix *c, int count)
{
    for (int t = 0; t < count; t++) {
        size_t n = (size_t)(1 + 37 * t % 70), m = t % 3 == 2 ? n + 11 : n;
        c[t] = (case_matrix){.m = m, .n = n, .M = malloc(m * n * sizeof(double))};
        if (m == n && t % 3 != 1)
            test_random_attention(c[t].M, n, t % 2, 3, &rng_state);
        else
            for (size_t k = 0; k < m * n; k++)
                c[t].M[k] = gaussian();
        if (t % 5 == 4) /* beyond 2^±100: the scaled copy */
            for (size_t k = 0; k < m * n; k++)
                c[t].M[k] = ldexp(c[t].M[k], t % 2 ? 600 : -700);
    }
}

static void compute(const case_matrix *c, ag_matrix_work *w, ag_record *r)
{
    ag_metric_set all;
    ag_error err = {0};
    ag_metric_set_parse(&all, "all", NULL);
    memset(r, 0, sizeof *r);
    ag_record_init(r, 0, 0, 0, 0);
    cr_assert_eq(ag_matrix_metrics_work(c->M, c->m, c->n, &all, NULL, w, r, &err), AG_OK, "%s",
                 err.message);
}

/* Every key of matrices of many shapes (square, rectangular, causal,
 * scaled), computed with a fresh temporary workspace, with one workspace in
 * order, and with that workspace again in reverse order (its buffers then
 * hold what larger and smaller matrices left): the same bytes. */
Test(floors, workspace_reuse_is_bit_identical)
{
    enum { count = 12 };
    case_matrix c[count];
    make_cases(c, count);
    ag_matrix_work *w = NULL;
    cr_assert_eq(ag_matrix_work_new(&w, NULL), AG_OK);
    ag_record fresh[count], again;
    for (int t = 0; t < count; t++)
        compute(&c[t], NULL, &fresh[t]);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < count; k++) {
            int t = pass ? count - 1 - k : k;
            compute(&c[t], w, &again);
            cr_assert_eq(memcmp(again.kind, fresh[t].kind, sizeof again.kind), 0, "case %d", t);
            cr_assert_eq(memcmp(again.value, fresh[t].value, sizeof again.value), 0,
                         "case %d (%zux%zu), pass %d", t, c[t].m, c[t].n, pass);
        }
    ag_matrix_work_free(w);
    for (int t = 0; t < count; t++)
        free(c[t].M);
}

/* ag_matrix_metrics_ex is ag_matrix_metrics_work with a temporary
 * workspace; errors leave the workspace usable. */
Test(floors, work_entry_points_agree)
{
    enum { n = 9 };
    double A[n * n];
    test_random_attention(A, n, 0, 2, &rng_state);
    ag_metric_set sel;
    ag_metric_set_default(&sel);
    ag_record a, b;
    ag_record_init(&a, 0, 0, 0, 0);
    ag_record_init(&b, 0, 0, 0, 0);
    ag_matrix_work *w = NULL;
    cr_assert_eq(ag_matrix_work_new(&w, NULL), AG_OK);
    double bad[4] = {1, NAN, 0, 1};
    ag_error err = {0};
    cr_assert_eq(ag_matrix_metrics_work(bad, 2, 2, &sel, NULL, w, &a, &err), AG_ENONFINITE);
    cr_assert_eq(ag_matrix_metrics_ex(A, n, n, &sel, NULL, &a, NULL), AG_OK);
    cr_assert_eq(ag_matrix_metrics_work(A, n, n, &sel, NULL, w, &b, NULL), AG_OK);
    cr_assert_eq(memcmp(a.value, b.value, sizeof a.value), 0);
    cr_assert_eq(memcmp(a.kind, b.kind, sizeof a.kind), 0);
    ag_matrix_work_free(w);
    ag_matrix_work_free(NULL);
}
