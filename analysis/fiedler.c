/* fiedler.c — the Fiedler value (family B's fiedler: the second-smallest
 * eigenvalue λ₂ of the normalised Laplacian L = I − D^{-1/2} W D^{-1/2};
 * Chung, Spectral Graph Theory, §1.2) by the Lanczos process with full
 * reorthogonalisation (Golub & Van Loan, Matrix Computations, §10.1; the
 * driver of analysis/lanczos.c) and a certificate, instead of dsyevr's
 * tridiagonal reduction (4n³/3 flops).
 *
 * Deflation: L u = 0 for u = D^{1/2}𝟙/‖D^{1/2}𝟙‖ (L D^{1/2}𝟙 = D^{1/2}𝟙 −
 * D^{-1/2}W𝟙 = 0), so the process runs in u^⊥ (u is the driver's one
 * deflated vector: every new vector is orthogonalised against it), where
 * λ₂ is the smallest eigenvalue and converges first (Parlett, The Symmetric
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


/* The Lanczos driver's state (analysis/lanczos.c: row 0 of V = u, the
 * deflated vector, row j + 1 = v_j) and the Laplacian it applies. */
typedef struct {
    ag_lanczos lz;
    const double *L; /* n×n row-major, lower triangle read */
    size_t n;
    double *y, *ly;  /* (n) each: the Ritz vector, L·y */
    double theta, theta2; /* the two smallest Ritz values (θ₂ = +∞ when k = 1) */
} fiedler_lanczos;

static void fl_apply(const void *op, const double *v, double *out)
{
    const fiedler_lanczos *F = op;
    cblas_dsymv(CblasRowMajor, CblasLower, (int)F->n, 1.0, F->L, (int)F->n, v, 1, 0.0, out, 1);
}

static int fl_init(fiedler_lanczos *F, const double *L, const double *u, size_t n,
                   ag_matrix_work *w)
{
    size_t kmax = n - 1 < FIEDLER_BASIS ? n - 1 : FIEDLER_BASIS;
    *F = (fiedler_lanczos){.lz = {.apply = fl_apply}, .L = L, .n = n};
    F->lz.op = F;
    int status = ag_lanczos_init(&F->lz, n, (int)kmax, 1, 2 * n, w);
    gsl_rng *rng = ag_work_rng(w, FIEDLER_SEED);
    if (status != AG_OK || !rng)
        return AG_ENOMEM;
    F->y = F->lz.extra;
    F->ly = F->y + n;
    memcpy(F->lz.V, u, n * sizeof *u);
    ag_lanczos_start(&F->lz, rng);
    return AG_OK;
}

/* After step k: the two smallest eigenvalues of T_k and the unit
 * eigenvector s of the smallest (ag_lanczos_ritz); stops when the
 * estimated Kato–Temple term (β_k·|s_k|)² over half the gap to θ₂ is a
 * quarter of the tolerance, or the Krylov space is invariant. */
static int fl_test(void *ctx, ag_lanczos *lz, int k, double b, int *stop)
{
    fiedler_lanczos *F = ctx;
    int want = k < 2 ? 1 : 2, status = ag_lanczos_ritz(lz, k, 1, want);
    if (status != AG_OK)
        return status;
    F->theta = lz->ritz[0];
    F->theta2 = want == 2 ? lz->ritz[1] : INFINITY;
    double r = b * fabs(lz->z[k - 1]), half_gap = 0.5 * (F->theta2 - F->theta);
    *stop = b == 0 || (k > 1 && r * r <= 0.25 * FIEDLER_TOL * F->theta * half_gap);
    return AG_OK;
}

/* y = V_kᵀs normalised, θ = yᵀLy and r = ‖Ly − θy‖, from y itself. */
static void fl_ritz_vector(fiedler_lanczos *F, int k, double *theta, double *r)
{
    int n = (int)F->n;
    cblas_dgemv(CblasRowMajor, CblasTrans, k, n, 1.0, F->lz.V + n, n, F->lz.z, 1, 0.0, F->y, 1);
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
    const double *u = F->lz.V, *y = F->y;
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
        status = ag_lanczos_run(&F.lz, fl_test, &F, &k);
    if (status != AG_OK)
        return status;
    theta2 = F.theta2;
    fl_ritz_vector(&F, k, &theta, &r);
    double gamma = 8.0 * (double)n * DBL_EPSILON;
    fl_apply(&F, u, F.lz.w);
    double a = cblas_dnrm2((int)n, F.lz.w, 1) + gamma, b = 0.5 * (theta + theta2),
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
