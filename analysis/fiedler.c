/* fiedler.c — the Fiedler value (family B's fiedler: the second-smallest
 * eigenvalue λ₂ of the normalised Laplacian L = I − D^{-1/2} W D^{-1/2};
 * Chung, Spectral Graph Theory, §1.2) by the Lanczos process with full
 * reorthogonalisation (Golub & Van Loan, Matrix Computations, §10.1) and a
 * certificate, instead of dsyevr's tridiagonal reduction (4n³/3 flops).
 *
 * Deflation: L u = 0 for u = D^{1/2}𝟙/‖D^{1/2}𝟙‖ (L D^{1/2}𝟙 = D^{1/2}𝟙 −
 * D^{-1/2}W𝟙 = 0), so the process runs in u^⊥ (u is the first basis
 * vector, and every new vector is orthogonalised against it), where λ₂ is
 * the smallest eigenvalue and converges first (Parlett, The Symmetric
 * Eigenvalue Problem, §12-4). Each step is one dsymv, O(n²).
 *
 * Certificate, for the Ritz vector y (unit) of the smallest Ritz value,
 * with θ = yᵀLy and r = ‖Ly − θy‖ recomputed from y itself:
 *   1. λ₁ ≤ a := ‖Lu‖ + γ (the Rayleigh quotient of u bounds λ₁ above;
 *      γ = 4nε‖|L|‖, ‖|L|‖ ≤ 2, bounds the rounding of the product).
 *   2. No third eigenvalue below b' := b − γ_c, b the midpoint of θ and
 *      the next Ritz value: the Cholesky factorisation of
 *      M = L − bI + (1 + b)(uuᵀ + yyᵀ) succeeds, so M + E is positive
 *      definite, ‖E‖ ≤ γ_c = n(n + 1)ε‖M‖ (Higham, Accuracy and Stability of
 *      Numerical Algorithms, Theorem 10.3, with ‖|Rᵀ||R|‖ ≤ n‖M‖;
 *      ‖M‖ ≤ 4 + 3b), and L + E − bI, a positive semidefinite rank-two
 *      update away, has at most two negative eigenvalues (Sylvester's law
 *      of inertia with interlacing; GVL §8.1.2, Parlett §10-2).
 *   3. θ − r > a and θ + r < b': the eigenvalue within r of θ (Weyl; Parlett
 *      Theorem 4-5-1) is then λ₂, alone in (a, b').
 *   4. Kato–Temple (Parlett Theorem 10-6-1): θ − r²/(b' − θ) ≤ λ₂ ≤
 *      θ + r²/(θ − a); both terms must be ≤ FIEDLER_TOL·θ.
 * θ and r are themselves rounded, by at most γ (worst case; √n·ε in
 * practice, the order of dsyevr's own error). θ below FIEDLER_FLOOR
 * (nearly disconnected graphs, whose dense value is itself accurate only to
 * ε‖L‖ absolutely), a failed certificate, or no convergence within
 * FIEDLER_BASIS steps: dsyevr instead (the caller's fallback). The start
 * vector comes from a fixed-seed generator: deterministic results.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "analysis.h"

#define FIEDLER_BASIS 192
#define FIEDLER_TOL 0x1p-46 /* ≈ 1.4e-14, relative */
#define FIEDLER_FLOOR 0x1p-4
#define FIEDLER_SEED 20240612UL


typedef struct {
    const double *L; /* n×n row-major, lower triangle read */
    size_t n;
    int kmax;
    double *V;       /* (kmax + 1, n): row 0 = u, row j + 1 = v_j */
    double *w, *y, *ly;
    double *alpha, *beta, *h, *d, *e, *ritz, *z, *work; /* (kmax + 1) each; work 20·(kmax + 1) */
    lapack_int *iwork; /* 10·(kmax + 1) + 4 */
} fiedler_lanczos;

static int fl_init(fiedler_lanczos *F, const double *L, const double *u, size_t n,
                   ag_matrix_work *w)
{
    size_t kmax = n - 1 < FIEDLER_BASIS ? n - 1 : FIEDLER_BASIS, k1 = kmax + 1;
    *F = (fiedler_lanczos){.L = L, .n = n, .kmax = (int)kmax};
    F->V = ag_work_doubles(w, AG_WK_BASIS, k1 * n + 3 * n + 28 * k1);
    F->iwork = ag_work_get(w, AG_WK_IWORK, (10 * k1 + 4) * sizeof *F->iwork);
    gsl_rng *rng = ag_work_rng(w, FIEDLER_SEED);
    if (!F->V || !F->iwork || !rng)
        return AG_ENOMEM;
    /* the vectors of n, then those of k1 (z: two of them), then work */
    double **part[] = {&F->w, &F->y, &F->ly, &F->alpha, &F->beta, &F->h,
                       &F->d, &F->e, &F->ritz, &F->z, &F->work};
    double *p = F->V + k1 * n;
    for (size_t i = 0; i < sizeof part / sizeof *part; i++) {
        *part[i] = p;
        p += i < 3 ? n : i == 9 ? 2 * k1 : k1;
    }
    memcpy(F->V, u, n * sizeof *u);
    double *v0 = F->V + n;
    ag_fill_gaussian(rng, v0, n);
    cblas_daxpy((int)n, -cblas_ddot((int)n, u, 1, v0, 1), u, 1, v0, 1);
    cblas_dscal((int)n, 1.0 / cblas_dnrm2((int)n, v0, 1), v0, 1);
    return AG_OK;
}

static void fl_apply(const fiedler_lanczos *F, const double *v, double *out)
{
    cblas_dsymv(CblasRowMajor, CblasLower, (int)F->n, 1.0, F->L, (int)F->n, v, 1, 0.0, out, 1);
}

/* Against u and v_0..v_j (row j + 1 of V). */
static double fl_reorthogonalise(fiedler_lanczos *F, int j)
{
    return ag_lanczos_reorthogonalise(F->V, j + 2, (int)F->n, F->w, F->h, j + 1, &F->alpha[j]);
}

/* The two smallest eigenvalues of T_k (θ₂ = +∞ when k = 1) and the unit
 * eigenvector s of the smallest, into F->z: dstevr, RANGE='I'. */
static int fl_ritz(fiedler_lanczos *F, int k, double *theta, double *theta2)
{
    int want = k < 2 ? 1 : 2, k1 = F->kmax + 1;
    memcpy(F->d, F->alpha, (size_t)k * sizeof *F->d);
    memcpy(F->e, F->beta, (size_t)(k - 1) * sizeof *F->e);
    lapack_int found = 0, *isuppz = F->iwork + 10 * k1;
    lapack_int info = LAPACKE_dstevr_work(LAPACK_COL_MAJOR, 'V', 'I', k, F->d, F->e, 0.0, 0.0,
                                          1, want, 0.0, &found, F->ritz, F->z, k, isuppz,
                                          F->work, 20 * k1, F->iwork, 10 * k1);
    if (info != 0 || found != want)
        return AG_ELAPACK;
    *theta = F->ritz[0];
    *theta2 = want == 2 ? F->ritz[1] : INFINITY;
    return AG_OK;
}

/* Lanczos steps until the estimated Kato–Temple term (β_k·|s_k|)² over
 * half the gap to θ₂ is a quarter of the tolerance (*k steps taken), or
 * the basis is full or invariant. */
static int fl_run(fiedler_lanczos *F, double *theta, double *theta2, int *k)
{
    size_t n = F->n;
    for (int j = 0; j < F->kmax; j++) {
        double *vj = F->V + (size_t)(j + 1) * n;
        fl_apply(F, vj, F->w);
        F->alpha[j] = cblas_ddot((int)n, vj, 1, F->w, 1);
        cblas_daxpy((int)n, -F->alpha[j], vj, 1, F->w, 1);
        if (j > 0)
            cblas_daxpy((int)n, -F->beta[j - 1], vj - n, 1, F->w, 1);
        double b = fl_reorthogonalise(F, j);
        *k = j + 1;
        int status = fl_ritz(F, j + 1, theta, theta2);
        if (status != AG_OK)
            return status;
        double r = b * fabs(F->z[j]), half_gap = 0.5 * (*theta2 - *theta);
        if (b == 0 || j + 1 == F->kmax || (j > 0 && r * r <= 0.25 * FIEDLER_TOL * *theta * half_gap))
            return AG_OK;
        F->beta[j] = b;
        cblas_dcopy((int)n, F->w, 1, vj + n, 1);
        cblas_dscal((int)n, 1.0 / b, vj + n, 1);
    }
    return AG_OK;
}

/* y = V_kᵀs normalised, θ = yᵀLy and r = ‖Ly − θy‖, from y itself. */
static void fl_ritz_vector(fiedler_lanczos *F, int k, double *theta, double *r)
{
    int n = (int)F->n;
    cblas_dgemv(CblasRowMajor, CblasTrans, k, n, 1.0, F->V + n, n, F->z, 1, 0.0, F->y, 1);
    cblas_dscal(n, 1.0 / cblas_dnrm2(n, F->y, 1), F->y, 1);
    fl_apply(F, F->y, F->ly);
    *theta = cblas_ddot(n, F->y, 1, F->ly, 1);
    cblas_daxpy(n, -*theta, F->y, 1, F->ly, 1);
    *r = cblas_dnrm2(n, F->ly, 1);
}

/* Step 2 of the certificate: M = L − bI + (1 + b)(uuᵀ + yyᵀ) in the lower
 * triangle of m (row-major, the column-major upper one) and dpotrf. */
static int fl_inertia_ok(const fiedler_lanczos *F, double b, ag_matrix_work *w)
{
    size_t n = F->n;
    double *m = ag_work_doubles(w, AG_WK_COPY2, n * n), c = 1.0 + b;
    if (!m)
        return -1;
    const double *u = F->V, *y = F->y;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j <= i; j++)
            m[i * n + j] = F->L[i * n + j] + c * (u[i] * u[j] + y[i] * y[j]);
        m[i * n + i] -= b;
    }
    return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)n, m, (lapack_int)n) == 0;
}

int ag_fiedler_krylov(const double *L, const double *u, size_t n, ag_matrix_work *w,
                      double *value, int *certified)
{
    *certified = 0;
    if (n < 3 || n > INT32_MAX / 2)
        return AG_OK;
    fiedler_lanczos F;
    double theta, theta2, r;
    int k = 0, status = fl_init(&F, L, u, n, w);
    if (status == AG_OK)
        status = fl_run(&F, &theta, &theta2, &k);
    if (status != AG_OK)
        return status;
    fl_ritz_vector(&F, k, &theta, &r);
    double gamma = 8.0 * (double)n * DBL_EPSILON;
    fl_apply(&F, u, F.w);
    double a = cblas_dnrm2((int)n, F.w, 1) + gamma, b = 0.5 * (theta + theta2),
           bp = b - (double)n * (double)(n + 1) * DBL_EPSILON * (4 + 3 * b) * 1.01;
    if (!(theta >= FIEDLER_FLOOR && isfinite(theta2) && theta - r > a && theta + r < bp))
        return AG_OK;
    double tol = FIEDLER_TOL * theta;
    if (!(r * r <= tol * (bp - theta) && r * r <= tol * (theta - a)))
        return AG_OK;
    int ok = fl_inertia_ok(&F, b, w);
    if (ok < 0)
        return AG_ENOMEM;
    *certified = ok;
    *value = theta;
    return AG_OK;
}
