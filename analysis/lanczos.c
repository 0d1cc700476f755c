/* lanczos.c — the Lanczos process with full reorthogonalisation (Golub &
 * Van Loan, Matrix Computations, §10.1), one driver for its callers: σ₁²
 * here, the Fiedler value (analysis/fiedler.c) and a head's Jacobian norm
 * (analysis/stability.c). A caller gives the
 * symmetric operator as y = Op(x), the vectors it deflates (the process
 * runs in their orthogonal complement) and a test run after each step.
 *
 * σ₁² of a matrix X without its SVD (family C's pc1_share, ag_svd_max):
 * the largest eigenvalue of the Gram matrix G = XᵀX (or XXᵀ, whichever is
 * smaller). G is never formed: each step applies it as one product with X
 * and one with Xᵀ (two dgemv), O(mn), where an SVD costs O(mn·min(m, n)).
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

/* ---- the driver ---- */

int ag_lanczos_init(ag_lanczos *L, size_t q, int kmax, int lock, size_t extra,
                    ag_matrix_work *w)
{
    size_t kt = (size_t)(lock + kmax), fixed = extra + 28 * kt;
    L->q = q;
    L->kmax = kmax;
    L->lock = lock;
    if (extra > SIZE_MAX / 2 || q > (SIZE_MAX / sizeof(double) - fixed) / (kt + 1))
        return AG_ENOMEM;
    L->V = ag_work_doubles(w, AG_WK_BASIS, kt * q + q + fixed);
    L->iwork = ag_work_get(w, AG_WK_IWORK, (10 * kt + 4) * sizeof *L->iwork);
    if (!L->V || !L->iwork)
        return AG_ENOMEM;
    /* the vectors of q and extra, then those of kt (z: two of them), then work */
    double **part[] = {&L->w, &L->extra, &L->alpha, &L->beta, &L->h,
                       &L->d, &L->e, &L->ritz, &L->z, &L->work};
    double *p = L->V + kt * q;
    for (size_t i = 0; i < sizeof part / sizeof *part; i++) {
        *part[i] = p;
        p += i == 0 ? q : i == 1 ? extra : i == 8 ? 2 * kt : kt;
    }
    return AG_OK;
}

void ag_lanczos_start(ag_lanczos *L, gsl_rng *rng)
{
    int q = (int)L->q;
    double *v0 = L->V + (size_t)L->lock * L->q;
    ag_fill_gaussian(rng, v0, L->q);
    for (int i = 0; i < L->lock; i++) {
        const double *u = L->V + (size_t)i * L->q;
        cblas_daxpy(q, -cblas_ddot(q, u, 1, v0, 1), u, 1, v0, 1);
    }
    cblas_dscal(q, 1.0 / cblas_dnrm2(q, v0, 1), v0, 1);
}

/* w ← w − V(Vᵀw) over the rows × q row-major V, classical Gram–Schmidt,
 * applied again only when a pass removed more than 1 − 1/√2 of w (the test
 * of Daniel, Gragg, Kaufman & Stewart 1976, as ARPACK's dsaitr applies it):
 * the pass then left a residue of the size of the orthogonality lost, and a
 * second one brings w to working precision ("twice is enough", GVL §10.1.4
 * and Parlett §6-9); always twice when `twice`. The removed components
 * along row jrow correct *alpha_j. h (rows) is scratch. Returns ‖w‖. */
static double reorthogonalise(const double *V, int rows, int q, double *w, double *h, int jrow,
                              double *alpha_j, int twice)
{
    double before = cblas_dnrm2(q, w, 1), after = before;
    for (int pass = 0; pass < 2; pass++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, rows, q, 1.0, V, q, w, 1, 0.0, h, 1);
        cblas_dgemv(CblasRowMajor, CblasTrans, rows, q, -1.0, V, q, h, 1, 1.0, w, 1);
        *alpha_j += h[jrow];
        after = cblas_dnrm2(q, w, 1);
        if (!twice && after >= M_SQRT1_2 * before)
            break;
        before = after;
    }
    return after;
}

int ag_lanczos_ritz(ag_lanczos *L, int k, int il, int iu)
{
    int kt = L->lock + L->kmax;
    memcpy(L->d, L->alpha, (size_t)k * sizeof *L->d);
    memcpy(L->e, L->beta, (size_t)(k - 1) * sizeof *L->e);
    /* W (ritz) must hold k values: dstebz may find more before discarding */
    lapack_int found = 0, *isuppz = L->iwork + 10 * kt;
    lapack_int info = LAPACKE_dstevr_work(LAPACK_COL_MAJOR, 'V', 'I', k, L->d, L->e, 0.0, 0.0,
                                          il, iu, 0.0, &found, L->ritz, L->z, k, isuppz,
                                          L->work, 20 * kt, L->iwork, 10 * kt);
    return info != 0 || found != iu - il + 1 ? AG_ELAPACK : AG_OK;
}

/* v_{j+1} = w/b, the next basis vector (row lock + j + 1 of V). */
static void lanczos_next(ag_lanczos *L, int j, double b)
{
    double *next = L->V + (size_t)(L->lock + j + 1) * L->q;
    L->beta[j] = b;
    cblas_dcopy((int)L->q, L->w, 1, next, 1);
    cblas_dscal((int)L->q, 1.0 / b, next, 1);
}

int ag_lanczos_run(ag_lanczos *L, ag_lanczos_test test, void *ctx, int *steps)
{
    int q = (int)L->q;
    for (int j = 0; j < L->kmax; j++) {
        double *vj = L->V + (size_t)(L->lock + j) * L->q;
        L->apply(L->op, vj, L->w);
        L->alpha[j] = cblas_ddot(q, vj, 1, L->w, 1);
        cblas_daxpy(q, -L->alpha[j], vj, 1, L->w, 1);
        if (j > 0)
            cblas_daxpy(q, -L->beta[j - 1], vj - q, 1, L->w, 1);
        double b = reorthogonalise(L->V, L->lock + j + 1, q, L->w, L->h, L->lock + j,
                                   &L->alpha[j], L->twice);
        *steps = j + 1;
        int stop = 0, status = test(ctx, L, j + 1, b, &stop);
        if (status != AG_OK || stop)
            return status;
        if (j + 1 < L->kmax)
            lanczos_next(L, j, b);
    }
    return AG_OK;
}

/* ---- σ₁² ---- */

/* The operator v ↦ Gv of the m×n row-major X; G is q×q, q = min(m, n). */
typedef struct {
    const double *X;
    size_t m, n, q;
    double *tmp; /* (max(m, n)) X v or Xᵀ v */
} gram;

/* w = G v: XᵀX v as Xᵀ(Xv) when q = n, XXᵀ v as X(Xᵀv) when q = m < n. */
static void gram_apply(const void *op, const double *v, double *w)
{
    const gram *g = op;
    int m = (int)g->m, n = (int)g->n;
    enum CBLAS_TRANSPOSE first = g->q == g->n ? CblasNoTrans : CblasTrans;
    enum CBLAS_TRANSPOSE second = g->q == g->n ? CblasTrans : CblasNoTrans;
    cblas_dgemv(CblasRowMajor, first, m, n, 1.0, g->X, n, v, 1, 0.0, g->tmp, 1);
    cblas_dgemv(CblasRowMajor, second, m, n, 1.0, g->X, n, g->tmp, 1, 0.0, w, 1);
}

typedef struct {
    double theta; /* the top Ritz value */
    int done;     /* the test above held */
} sigma1_state;

/* The top eigenpair of T_k (dstevr, RANGE='I', that pair only: bisection
 * and inverse iteration, O(k)) and the test above. */
static int sigma1_test(void *ctx, ag_lanczos *L, int k, double b, int *stop)
{
    sigma1_state *s = ctx;
    int status = ag_lanczos_ritz(L, k, k, k);
    if (status != AG_OK)
        return status;
    s->theta = L->ritz[0];
    /* b = 0: an invariant subspace, θ exact; k = q: the whole space */
    s->done = *stop = b * fabs(L->z[k - 1]) <= SIGMA1_TOL * s->theta || b == 0 ||
                      (size_t)k == L->q;
    return AG_OK;
}

/* σ₁² by the driver: *done = 0 when it did not converge in SIGMA1_BASIS
 * steps. */
static int sigma1_lanczos(const double *X, size_t m, size_t n, ag_matrix_work *w,
                          sigma1_state *s, int *steps)
{
    size_t q = m < n ? m : n, big = m < n ? n : m, kmax = q < SIGMA1_BASIS ? q : SIGMA1_BASIS;
    ag_lanczos L = {.apply = gram_apply};
    gram g = {.X = X, .m = m, .n = n, .q = q};
    int status = ag_lanczos_init(&L, q, (int)kmax, 0, big, w);
    gsl_rng *rng = ag_work_rng(w, SIGMA1_SEED);
    if (status != AG_OK || !rng)
        return AG_ENOMEM;
    g.tmp = L.extra;
    L.op = &g;
    ag_lanczos_start(&L, rng);
    return ag_lanczos_run(&L, sigma1_test, s, steps);
}

int ag_sigma1_squared(double *X, size_t m, size_t n, ag_matrix_work *w, double *theta,
                      int *steps)
{
    if (m > INT32_MAX || n > INT32_MAX)
        return AG_ELIMIT;
    sigma1_state s = {0};
    *steps = 0;
    int status = sigma1_lanczos(X, m, n, w, &s, steps);
    if (status == AG_OK && s.done)
        *theta = s.theta;
    if (status != AG_OK || s.done)
        return status;
    /* Not converged in SIGMA1_BASIS steps: the SVD, on X itself. */
    *steps = 0;
    double *sigma = ag_work_doubles(w, AG_WK_BASIS, m < n ? m : n);
    if (!sigma)
        return AG_ENOMEM;
    status = ag_lapack_svd_values(X, m, n, n, sigma, w);
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
    double *a = ag_lapack_copy(M, m, n, n, &status), theta = 0;
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
