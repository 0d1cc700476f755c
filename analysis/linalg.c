/* linalg.c — thin wrappers over LAPACKE for the spectral quantities attngeom
 * needs: the public ones (metrics.h) take row-major input and never modify
 * it; the internal ones (linalg.h) take their scratch from a workspace and
 * use LAPACKE's _work entry points, which neither scan the input for NaN
 * again nor allocate.
 *
 * Row-major data handed to LAPACK as column-major is the transpose. Singular
 * values and eigenvalues of Mᵀ equal those of M, so the wrappers pass the
 * buffer as a column-major Mᵀ and avoid LAPACKE's row-major transposition
 * copies (and its row-major leading-dimension checks).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "attngeom.h"
#include "linalg.h"

double *ag_lapack_copy(const double *M, size_t m, size_t n, size_t ld, int *status)
{
    for (size_t k = 0; k < m * n; k++)
        if (!isfinite(M[k])) {
            *status = AG_ENONFINITE;
            return NULL;
        }
    size_t count = m * ld;
    double *c = malloc((count ? count : 1) * sizeof *c);
    if (c)
        ag_lapack_load(c, ld, M, m, n);
    *status = c ? AG_OK : AG_ENOMEM;
    return c;
}

/* LAPACK's WORK (and IWORK) for one call, from the workspace: LAPACK
 * answered the size query with *size (a double, for WORK). NULL when out
 * of memory or beyond lapack_int. */
static double *lapack_work(ag_matrix_work *w, double size, lapack_int *lwork)
{
    if (!(size < 2147483647.0))
        return NULL;
    *lwork = size < 1 ? 1 : (lapack_int)size;
    return ag_work_doubles(w, AG_WK_LWORK, (size_t)*lwork);
}

static int too_large(size_t m, size_t n)
{
    return m > INT32_MAX || n > INT32_MAX || (n && m > SIZE_MAX / sizeof(double) / n);
}

size_t ag_lapack_ld(size_t rows)
{
    return rows >= 64 && rows % 64 == 0 ? rows + 8 : rows;
}

void ag_lapack_load(double *a, size_t ld, const double *M, size_t m, size_t n)
{
    if (ld == n) {
        memcpy(a, M, m * n * sizeof *a);
        return;
    }
    for (size_t i = 0; i < m; i++)
        memcpy(a + i * ld, M + i * n, n * sizeof *a);
}

double *ag_lapack_work_copy(ag_matrix_work *w, ag_work_slot slot, const double *M, size_t m,
                            size_t n, size_t ld)
{
    double *a = ag_work_doubles(w, slot, m * ld);
    if (a)
        ag_lapack_load(a, ld, M, m, n);
    return a;
}

int ag_lapack_svd_values(double *a, size_t m, size_t n, size_t ld, double *sigma,
                         ag_matrix_work *w)
{
    if (too_large(m, ld))
        return AG_ELIMIT;
    size_t q = m < n ? m : n;
    lapack_int *iwork = ag_work_get(w, AG_WK_IWORK, 8 * q * sizeof *iwork), lwork;
    double size = 0;
    /* Column-major view: n rows, m columns, leading dimension ld.
     * dgesdd, JOBZ='N': divide and conquer, values only (LAPACK Users' Guide
     * §2.4.4); relative accuracy of each σ_k is O(ε σ₁ / σ_k). */
    if (!iwork)
        return AG_ENOMEM;
    if (LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)m, a, (lapack_int)ld,
                            sigma, NULL, 1, NULL, 1, &size, -1, iwork) != 0)
        return AG_ELAPACK;
    double *work = lapack_work(w, size, &lwork);
    if (!work)
        return AG_ENOMEM;
    return LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)m, a,
                               (lapack_int)ld, sigma, NULL, 1, NULL, 1, work, lwork, iwork) == 0
               ? AG_OK
               : AG_ELAPACK;
}

/* For the public wrappers: a checked copy of M for LAPACK to overwrite and
 * a temporary workspace; both released by release_copy. */
static int copy_with_work(const double *M, size_t m, size_t n, size_t ld, double **a,
                          ag_matrix_work **w)
{
    int status;
    *w = NULL;
    *a = ag_lapack_copy(M, m, n, ld, &status);
    if (*a && ag_matrix_work_new(w, NULL) != AG_OK)
        status = AG_ENOMEM;
    return status;
}

static void release_copy(double *a, ag_matrix_work *w)
{
    ag_matrix_work_free(w);
    free(a);
}

int ag_svd_values(const double *M, size_t m, size_t n, double *sigma)
{
    if (m == 0 || n == 0)
        return AG_EINVAL;
    if (too_large(m, n))
        return AG_ELIMIT;
    double *a;
    ag_matrix_work *w;
    size_t ld = ag_lapack_ld(n);
    int status = copy_with_work(M, m, n, ld, &a, &w);
    if (status == AG_OK)
        status = ag_lapack_svd_values(a, m, n, ld, sigma, w);
    release_copy(a, w);
    return status;
}

int ag_lapack_sym_kth(double *a, size_t n, size_t k, double *value, ag_matrix_work *w)
{
    if (too_large(n, n))
        return AG_ELIMIT;
    lapack_int found = 0, isize = 0, lwork, pair[2];
    double size = 0, one;
    /* dsyevr, RANGE='I': only the k-th eigenvalue (MRRR after tridiagonal
     * reduction; LAPACK Users' Guide §2.4.4). abstol 0 = LAPACK's default
     * (ε‖T‖₁), giving the eigenvalue to high relative accuracy. The size
     * query touches neither W nor ISUPPZ. */
    if (LAPACKE_dsyevr_work(LAPACK_COL_MAJOR, 'N', 'I', 'U', (lapack_int)n, a, (lapack_int)n,
                            0.0, 0.0, (lapack_int)k, (lapack_int)k, 0.0, &found, &one, NULL, 1,
                            pair, &size, -1, &isize, -1) != 0)
        return AG_ELAPACK;
    /* W (n) before WORK in one buffer; IWORK then ISUPPZ (2) in another */
    double *vals = lapack_work(w, size + (double)n, &lwork);
    lapack_int liwork = isize < 1 ? 1 : isize;
    lapack_int *iwork = ag_work_get(w, AG_WK_IWORK, ((size_t)liwork + 2) * sizeof *iwork);
    if (!vals || !iwork)
        return AG_ENOMEM;
    lapack_int info = LAPACKE_dsyevr_work(LAPACK_COL_MAJOR, 'N', 'I', 'U', (lapack_int)n, a,
                                          (lapack_int)n, 0.0, 0.0, (lapack_int)k, (lapack_int)k,
                                          0.0, &found, vals, NULL, 1, iwork + liwork, vals + n,
                                          lwork - (lapack_int)n, iwork, liwork);
    if (info != 0 || found != 1)
        return AG_ELAPACK;
    *value = vals[0];
    return AG_OK;
}

int ag_eig_symmetric_kth(const double *S, size_t n, size_t k, double *value)
{
    if (n == 0 || k == 0 || k > n)
        return AG_EINVAL;
    if (too_large(n, n))
        return AG_ELIMIT;
    double *a;
    ag_matrix_work *w;
    int status = copy_with_work(S, n, n, n, &a, &w);
    if (status == AG_OK)
        status = ag_lapack_sym_kth(a, n, k, value, w);
    release_copy(a, w);
    return status;
}

/* ---- eigenvectors of one eigenvalue (docs/metrics.md, family B, lambda2_condition) ---- */

int ag_lapack_eigenvalues(double *a, size_t n, size_t ld, double *h, double *wr, double *wi,
                          ag_matrix_work *w)
{
    if (too_large(n, ld))
        return AG_ELIMIT;
    lapack_int nn = (lapack_int)n, la = (lapack_int)ld, lwork;
    double hrd = 0, hqr = 0, tau0 = 0;
    if (LAPACKE_dgehrd_work(LAPACK_COL_MAJOR, nn, 1, nn, a, la, &tau0, &hrd, -1) != 0 ||
        LAPACKE_dhseqr_work(LAPACK_COL_MAJOR, 'E', 'N', nn, 1, nn, a, la, wr, wi, NULL, 1, &hqr,
                            -1) != 0)
        return AG_ELAPACK;
    /* TAU (n) before WORK in one buffer */
    double *tau = lapack_work(w, (hrd > hqr ? hrd : hqr) + (double)n, &lwork);
    if (!tau)
        return AG_ENOMEM;
    lwork -= nn;
    /* No balancing (ILO = 1, IHI = n), as dgeevx with BALANC='N': the
     * condition number is that of A itself. dgehrd: H = QᵀAQ by Householder
     * reflections (Golub & Van Loan §7.4.3); dhseqr, JOB='E', COMPZ='N':
     * the eigenvalues of H by the multishift QR algorithm with aggressive
     * early deflation, without accumulating Q or the Schur form (LAPACK
     * Users' Guide §2.4.5). */
    if (LAPACKE_dgehrd_work(LAPACK_COL_MAJOR, nn, 1, nn, a, la, tau, tau + n, lwork) != 0)
        return AG_ELAPACK;
    if (h)
        memcpy(h, a, n * ld * sizeof *h); /* dhseqr overwrites H */
    return LAPACKE_dhseqr_work(LAPACK_COL_MAJOR, 'E', 'N', nn, 1, nn, a, la, wr, wi, NULL, 1,
                               tau + n, lwork) == 0
               ? AG_OK
               : AG_ELAPACK;
}

/* SELECT with only `index` true, from the integer slot, followed by `extra`
 * more integers for the caller. */
static lapack_logical *select_one(ag_matrix_work *w, size_t n, size_t index, size_t extra)
{
    lapack_logical *select = ag_work_get(w, AG_WK_IWORK, (n + extra) * sizeof *select);
    if (select) {
        memset(select, 0, n * sizeof *select);
        select[index] = 1;
    }
    return select;
}

int ag_lapack_hessenberg_vectors(const double *h, size_t n, size_t ld, size_t index,
                                 const double *wr, const double *wi, double *vl, double *vr,
                                 ag_matrix_work *w)
{
    if (too_large(n + 2, n))
        return AG_ELIMIT;
    lapack_logical *select = select_one(w, n, index, 4);
    double *work = ag_work_doubles(w, AG_WK_LWORK, (n + 3) * n);
    if (!select || !work)
        return AG_ENOMEM;
    double *wr_copy = work + (n + 2) * n; /* dhsein may perturb WR */
    memcpy(wr_copy, wr, n * sizeof *wr_copy);
    memset(vl + n, 0, n * sizeof *vl);
    memset(vr + n, 0, n * sizeof *vr);
    lapack_int m = 0, *ifaill = select + n, *ifailr = select + n + 2;
    /* dhsein, SIDE='B', EIGSRC='Q' (the eigenvalues are dhseqr's, so each
     * belongs to the diagonal block of H holding its row), INITV='N':
     * inverse iteration on H − λI for the selected λ only, O(n²) per vector
     * (Golub & Van Loan §7.6.1). A complex λ gives xr, xi in two columns. */
    lapack_int info = LAPACKE_dhsein_work(LAPACK_COL_MAJOR, 'B', 'Q', 'N', select, (lapack_int)n,
                                          h, (lapack_int)ld, wr_copy, wi, vl, (lapack_int)n, vr,
                                          (lapack_int)n, 2, &m, work, ifaill, ifailr);
    return info == 0 && m >= 1 ? AG_OK : AG_ELAPACK;
}

int ag_lapack_triangular_vectors(const double *t, size_t n, size_t index, double *vl,
                                 double *vr, ag_matrix_work *w)
{
    if (too_large(n, n))
        return AG_ELIMIT;
    lapack_logical *select = select_one(w, n, index, 0);
    double *work = ag_work_doubles(w, AG_WK_LWORK, 3 * n);
    if (!select || !work)
        return AG_ENOMEM;
    lapack_int m = 0;
    /* T is already in Schur form: dtrevc, HOWMNY='S', back-substitutes the
     * right and left eigenvectors of the selected diagonal entry alone
     * (O(n²); T is only read). */
    lapack_int info = LAPACKE_dtrevc_work(LAPACK_COL_MAJOR, 'B', 'S', select, (lapack_int)n, t,
                                          (lapack_int)n, vl, (lapack_int)n, vr, (lapack_int)n, 1,
                                          &m, work);
    return info == 0 && m == 1 ? AG_OK : AG_ELAPACK;
}

double ag_eigenvector_rcond(const double *vl, const double *vr, size_t n, int is_complex)
{
    int k = (int)n;
    /* LAPACK dtrsna's formulas for JOB='E' */
    if (!is_complex)
        return fabs(cblas_ddot(k, vr, 1, vl, 1)) /
               (cblas_dnrm2(k, vr, 1) * cblas_dnrm2(k, vl, 1));
    double re = cblas_ddot(k, vr, 1, vl, 1) + cblas_ddot(k, vr + n, 1, vl + n, 1);
    double im = cblas_ddot(k, vl, 1, vr + n, 1) - cblas_ddot(k, vl + n, 1, vr, 1);
    double rn = hypot(cblas_dnrm2(k, vr, 1), cblas_dnrm2(k, vr + n, 1));
    double ln = hypot(cblas_dnrm2(k, vl, 1), cblas_dnrm2(k, vl + n, 1));
    return hypot(re, im) / (rn * ln);
}
