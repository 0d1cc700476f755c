/* lanczos.c — σ₁² of a matrix X without its SVD (family C's pc1_share,
 * ag_svd_max): the largest eigenvalue of the Gram matrix G = XᵀX (or XXᵀ,
 * whichever is smaller) by the Lanczos process with full
 * reorthogonalisation (Golub & Van Loan, Matrix Computations, §10.1). G is
 * never formed: each step applies it as one product with X and one with Xᵀ
 * (two dgemv), O(mn), where an SVD costs O(mn·min(m, n)).
 *
 * Convergence test: after k steps, the top eigenvalue θ of the tridiagonal
 * T_k, with unit eigenvector s, is within β_k·|s_k| of an eigenvalue of G
 * (the Ritz pair's residual is ‖Gy − θy‖ = β_k·|s_k|; GVL §10.1.4, Parlett,
 * The Symmetric Eigenvalue Problem, §13-2). The iteration stops when that
 * bound is at most 4ε·θ: θ is then λ₁(G) = σ₁² to a few units in the last
 * place, the accuracy of the products themselves (LAPACK's dgesdd has the
 * same order of error, ε‖X‖²). The start vector has Gaussian entries of a
 * fixed-seed generator (deterministic; it is orthogonal to the top singular
 * vector with probability 0, and the extreme eigenvalue converges first).
 * When the Krylov space is exhausted (k = min(m, n)) θ is exact. After
 * SIGMA1_BASIS steps without convergence (eigenvalues clustered at the top,
 * a rare spectrum for attention), dgesdd gives σ₁ instead.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "analysis.h"

#define SIGMA1_BASIS 128
#define SIGMA1_TOL (4 * DBL_EPSILON)
#define SIGMA1_SEED 20240611UL

/* The operator v ↦ Gv and the Lanczos state, in the workspace. */
typedef struct {
    const double *X;
    size_t m, n, q; /* X is m×n row-major; G is q×q, q = min(m, n) */
    int kmax;
    double *V;      /* (kmax, q) basis, row j = v_j */
    double *w;      /* (q) */
    double *tmp;    /* (max(m, n)) X v or Xᵀ v */
    double *alpha, *beta, *h, *d, *e, *ritz, *z; /* (kmax) each */
    double *work;   /* (20·kmax) */
    lapack_int *iwork; /* (10·kmax + 2) */
} lanczos;

static int lanczos_init(lanczos *L, const double *X, size_t m, size_t n, ag_matrix_work *w)
{
    size_t q = m < n ? m : n, big = m < n ? n : m, kmax = q < SIGMA1_BASIS ? q : SIGMA1_BASIS;
    *L = (lanczos){.X = X, .m = m, .n = n, .q = q, .kmax = (int)kmax};
    L->V = ag_work_doubles(w, AG_WK_BASIS, kmax * q + q + big + 27 * kmax);
    if (!L->V)
        return AG_ENOMEM;
    L->w = L->V + kmax * q;
    L->tmp = L->w + q;
    L->alpha = L->tmp + big;
    L->beta = L->alpha + kmax;
    L->h = L->beta + kmax;
    L->d = L->h + kmax;
    L->e = L->d + kmax;
    L->ritz = L->e + kmax;
    L->z = L->ritz + kmax;
    L->work = L->z + kmax;
    L->iwork = ag_work_get(w, AG_WK_IWORK, (10 * kmax + 2) * sizeof *L->iwork);
    gsl_rng *rng = ag_work_rng(w, SIGMA1_SEED);
    if (!L->iwork || !rng)
        return AG_ENOMEM;
    ag_fill_gaussian(rng, L->V, q);
    cblas_dscal((int)q, 1.0 / cblas_dnrm2((int)q, L->V, 1), L->V, 1);
    return AG_OK;
}

/* w = G v: XᵀX v as Xᵀ(Xv) when q = n, XXᵀ v as X(Xᵀv) when q = m < n. */
static void gram_apply(const lanczos *L, const double *v, double *w)
{
    int m = (int)L->m, n = (int)L->n;
    enum CBLAS_TRANSPOSE first = L->q == L->n ? CblasNoTrans : CblasTrans;
    enum CBLAS_TRANSPOSE second = L->q == L->n ? CblasTrans : CblasNoTrans;
    cblas_dgemv(CblasRowMajor, first, m, n, 1.0, L->X, n, v, 1, 0.0, L->tmp, 1);
    cblas_dgemv(CblasRowMajor, second, m, n, 1.0, L->X, n, L->tmp, 1, 0.0, w, 1);
}

double ag_lanczos_reorthogonalise(const double *V, int rows, int q, double *w, double *h,
                                  int jrow, double *alpha_j)
{
    double before = cblas_dnrm2(q, w, 1), after = before;
    for (int pass = 0; pass < 2; pass++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, rows, q, 1.0, V, q, w, 1, 0.0, h, 1);
        cblas_dgemv(CblasRowMajor, CblasTrans, rows, q, -1.0, V, q, h, 1, 1.0, w, 1);
        *alpha_j += h[jrow];
        after = cblas_dnrm2(q, w, 1);
        if (after >= M_SQRT1_2 * before)
            break;
        before = after;
    }
    return after;
}

static double reorthogonalise(lanczos *L, int j)
{
    return ag_lanczos_reorthogonalise(L->V, j + 1, (int)L->q, L->w, L->h, j, &L->alpha[j]);
}

/* θ, the largest eigenvalue of the k×k tridiagonal T_k = (α, β), and the
 * last entry of its unit eigenvector: dstevr, RANGE='I', that eigenpair
 * only (bisection and inverse iteration, O(k) each). */
static int ritz_top(lanczos *L, int k, double *theta, double *s_last)
{
    memcpy(L->d, L->alpha, (size_t)k * sizeof *L->d);
    memcpy(L->e, L->beta, (size_t)(k - 1) * sizeof *L->e);
    /* W (ritz) must hold k values: dstebz may find more before discarding */
    lapack_int found = 0, *isuppz = L->iwork + 10 * L->kmax;
    lapack_int info = LAPACKE_dstevr_work(LAPACK_COL_MAJOR, 'V', 'I', k, L->d, L->e, 0.0, 0.0,
                                          k, k, 0.0, &found, L->ritz, L->z, k, isuppz, L->work,
                                          20 * L->kmax, L->iwork, 10 * L->kmax);
    if (info != 0 || found != 1)
        return AG_ELAPACK;
    *theta = L->ritz[0];
    *s_last = L->z[k - 1];
    return AG_OK;
}

/* Lanczos steps until the test above holds (*done = 1, *theta = θ) or the
 * basis is full (*done = 0). */
static int lanczos_run(lanczos *L, double *theta, int *steps, int *done)
{
    size_t q = L->q;
    *done = 0;
    for (int j = 0; j < L->kmax; j++) {
        double *vj = L->V + (size_t)j * q, s_last;
        gram_apply(L, vj, L->w);
        L->alpha[j] = cblas_ddot((int)q, vj, 1, L->w, 1);
        cblas_daxpy((int)q, -L->alpha[j], vj, 1, L->w, 1);
        if (j > 0)
            cblas_daxpy((int)q, -L->beta[j - 1], vj - q, 1, L->w, 1);
        double b = reorthogonalise(L, j);
        *steps = j + 1;
        int status = ritz_top(L, j + 1, theta, &s_last);
        if (status != AG_OK)
            return status;
        /* b = 0: an invariant subspace, θ exact; j + 1 = q: the whole space */
        if (b * fabs(s_last) <= SIGMA1_TOL * *theta || b == 0 || (size_t)(j + 1) == q) {
            *done = 1;
            return AG_OK;
        }
        if (j + 1 < L->kmax) {
            L->beta[j] = b;
            cblas_dcopy((int)q, L->w, 1, vj + q, 1);
            cblas_dscal((int)q, 1.0 / b, vj + q, 1);
        }
    }
    return AG_OK;
}

int ag_sigma1_squared(double *X, size_t m, size_t n, ag_matrix_work *w, double *theta,
                      int *steps)
{
    if (m > INT32_MAX || n > INT32_MAX)
        return AG_ELIMIT;
    lanczos L;
    int done = 0, status = lanczos_init(&L, X, m, n, w);
    *steps = 0;
    if (status == AG_OK)
        status = lanczos_run(&L, theta, steps, &done);
    if (status != AG_OK || done)
        return status;
    /* Not converged in SIGMA1_BASIS steps: the SVD, on X itself. */
    *steps = 0;
    double *sigma = ag_work_doubles(w, AG_WK_BASIS, L.q);
    if (!sigma)
        return AG_ENOMEM;
    status = ag_lapack_svd_values(X, m, n, sigma, w);
    if (status == AG_OK)
        *theta = sigma[0] * sigma[0];
    return status;
}

int ag_svd_max(const double *M, size_t m, size_t n, double *sigma1, int *steps)
{
    if (m == 0 || n == 0)
        return AG_EINVAL;
    if (m > INT32_MAX || n > INT32_MAX || m > SIZE_MAX / sizeof(double) / n)
        return AG_ELIMIT;
    int status, k = 0;
    double *a = ag_lapack_copy(M, m * n, &status), theta = 0;
    ag_matrix_work *w = NULL;
    if (a && ag_matrix_work_new(&w, NULL) != AG_OK)
        status = AG_ENOMEM;
    /* On 2^-e·M with max|2^-e·M| in [0.5, 1): σ₁² can neither overflow nor
     * underflow; σ₁ = 2^e·√θ. */
    int e = 0;
    if (status == AG_OK) {
        double amax = 0;
        for (size_t i = 0; i < m * n; i++)
            amax = fabs(a[i]) > amax ? fabs(a[i]) : amax;
        if (amax > 0)
            frexp(amax, &e);
        for (size_t i = 0; e && i < m * n; i++)
            a[i] = ldexp(a[i], -e);
        status = ag_sigma1_squared(a, m, n, w, &theta, &k);
    }
    if (status == AG_OK) {
        *sigma1 = ldexp(sqrt(theta), e);
        if (steps)
            *steps = k;
    }
    ag_matrix_work_free(w);
    free(a);
    return status;
}
