/* linalg.c — thin wrappers over LAPACKE for the spectral quantities attngeom
 * needs. Every routine takes row-major input and never modifies it.
 *
 * Row-major data handed to LAPACK as column-major is the transpose. Singular
 * values and eigenvalues of Mᵀ equal those of M, so the wrappers pass the
 * buffer as a column-major Mᵀ and avoid LAPACKE's row-major transposition
 * copies (and its row-major leading-dimension checks).
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "attngeom.h"

/* A copy for LAPACK to overwrite, or NULL (*status AG_ENOMEM, or
 * AG_ENONFINITE: LAPACK given Inf or NaN may not return, or may corrupt the
 * heap, as Debian's OpenBLAS 0.3.21 dgeev does, so it never is). */
static double *dup_matrix(const double *M, size_t count, int *status)
{
    for (size_t k = 0; k < count; k++)
        if (!isfinite(M[k])) {
            *status = AG_ENONFINITE;
            return NULL;
        }
    double *c = malloc((count ? count : 1) * sizeof *c);
    if (c)
        memcpy(c, M, count * sizeof *c);
    *status = c ? AG_OK : AG_ENOMEM;
    return c;
}

int ag_svd_values(const double *M, size_t m, size_t n, double *sigma)
{
    if (m == 0 || n == 0)
        return AG_EINVAL;
    if (m > INT32_MAX || n > INT32_MAX || m > SIZE_MAX / sizeof(double) / n)
        return AG_ELIMIT;
    int status;
    double *a = dup_matrix(M, m * n, &status);
    if (!a)
        return status;
    /* Column-major view: n rows, m columns, leading dimension n.
     * dgesdd, JOBZ='N': divide and conquer, values only (LAPACK Users' Guide
     * §2.4.4); relative accuracy of each σ_k is O(ε σ₁ / σ_k). */
    lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)n,
                                     (lapack_int)m, a, (lapack_int)n, sigma,
                                     NULL, 1, NULL, 1);
    free(a);
    return info == 0 ? AG_OK : AG_ELAPACK;
}

typedef struct {
    double re, im, mod;
} eig_pair;

static int by_modulus_desc(const void *pa, const void *pb)
{
    const eig_pair *a = pa, *b = pb;
    if (a->mod != b->mod)
        return a->mod < b->mod ? 1 : -1;
    /* Tie-break deterministically: larger real part first. */
    if (a->re != b->re)
        return a->re < b->re ? 1 : -1;
    return (a->im < b->im) - (a->im > b->im);
}

int ag_eig_sort_by_modulus(double *re, double *im, size_t n)
{
    eig_pair *p = malloc((n ? n : 1) * sizeof *p);
    if (!p)
        return AG_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        p[i].re = re[i];
        p[i].im = im[i];
        p[i].mod = hypot(re[i], im[i]);
    }
    qsort(p, n, sizeof *p, by_modulus_desc);
    for (size_t i = 0; i < n; i++) {
        re[i] = p[i].re;
        im[i] = p[i].im;
    }
    free(p);
    return AG_OK;
}

int ag_eig_general_values(const double *A, size_t n, double *re, double *im)
{
    if (n == 0)
        return AG_EINVAL;
    if (n > INT32_MAX || n > SIZE_MAX / sizeof(double) / n)
        return AG_ELIMIT;
    int status;
    double *a = dup_matrix(A, n * n, &status);
    if (!a)
        return status;
    /* dgeev without eigenvectors: Hessenberg reduction + QR iteration
     * (LAPACK Users' Guide §2.4.5). Eigenvalues of Aᵀ = eigenvalues of A. */
    lapack_int info = LAPACKE_dgeev(LAPACK_COL_MAJOR, 'N', 'N', (lapack_int)n, a,
                                    (lapack_int)n, re, im, NULL, 1, NULL, 1);
    free(a);
    if (info != 0)
        return AG_ELAPACK;
    return ag_eig_sort_by_modulus(re, im, n);
}

int ag_eig_symmetric_kth(const double *S, size_t n, size_t k, double *value)
{
    if (n == 0 || k == 0 || k > n)
        return AG_EINVAL;
    if (n > INT32_MAX || n > SIZE_MAX / sizeof(double) / n)
        return AG_ELIMIT;
    int status;
    double *a = dup_matrix(S, n * n, &status);
    lapack_int *isuppz = malloc(2 * n * sizeof *isuppz);
    double *w = malloc(n * sizeof *w);
    if (!a || !isuppz || !w) {
        free(a);
        free(isuppz);
        free(w);
        return a ? AG_ENOMEM : status;
    }
    /* dsyevr, RANGE='I': only the k-th eigenvalue (MRRR after tridiagonal
     * reduction; LAPACK Users' Guide §2.4.4). abstol 0 = LAPACK's default
     * (ε‖T‖₁), giving the eigenvalue to high relative accuracy. */
    lapack_int found = 0;
    lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'N', 'I', 'U',
                                     (lapack_int)n, a, (lapack_int)n, 0.0, 0.0,
                                     (lapack_int)k, (lapack_int)k, 0.0, &found,
                                     w, NULL, 1, isuppz);
    status = (info == 0 && found == 1) ? AG_OK : AG_ELAPACK;
    if (status == AG_OK)
        *value = w[0];
    free(a);
    free(isuppz);
    free(w);
    return status;
}

/* ---- eigenvalue condition numbers (docs/metrics.md, family B, lambda2_condition) --------- */

typedef struct {
    double re, im, mod, rcond;
    size_t index;
} eig_entry;

/* Modulus descending, then real part descending, then imaginary part
 * descending, then original index: the order of ag_eig_sort_by_modulus, made
 * total so that ties are reproducible. */
static int entry_order(const void *pa, const void *pb)
{
    const eig_entry *a = pa, *b = pb;
    if (a->mod != b->mod)
        return a->mod < b->mod ? 1 : -1;
    if (a->re != b->re)
        return a->re < b->re ? 1 : -1;
    if (a->im != b->im)
        return a->im < b->im ? 1 : -1;
    return (a->index > b->index) - (a->index < b->index);
}

static int sort_entries(eig_entry *e, size_t n, double *re, double *im, double *rcond)
{
    for (size_t i = 0; i < n; i++)
        e[i].mod = hypot(e[i].re, e[i].im);
    qsort(e, n, sizeof *e, entry_order);
    for (size_t i = 0; i < n; i++) {
        re[i] = e[i].re;
        im[i] = e[i].im;
        if (rcond)
            rcond[i] = e[i].rcond;
    }
    return AG_OK;
}

int ag_eig_general_condition(const double *A, size_t n, double *re, double *im,
                             double *rcond)
{
    if (n == 0)
        return AG_EINVAL;
    if (n > 46340 || n > SIZE_MAX / sizeof(double) / n / 3)
        return AG_ELIMIT;
    int status;
    double *a = dup_matrix(A, n * n, &status), *vl = malloc(n * n * sizeof *vl),
           *vr = malloc(n * n * sizeof *vr), *wr = malloc(n * sizeof *wr),
           *wi = malloc(n * sizeof *wi), *rce = malloc(n * sizeof *rce),
           *rcv = malloc(n * sizeof *rcv), *scale = malloc(n * sizeof *scale);
    eig_entry *e = malloc(n * sizeof *e);
    if (a && !(vl && vr && wr && wi && rce && rcv && scale && e))
        status = AG_ENOMEM;
    lapack_int ilo, ihi;
    double abnrm;
    /* dgeevx with BALANC='N' (condition numbers of A itself, not of a
     * balanced similar matrix) and SENSE='E': RCONDE(j) = |y_jᴴ x_j| for unit
     * left/right eigenvectors (LAPACK Users' Guide §4.8.1.1). The buffer is
     * Aᵀ column-major; Aᵀ has the same eigenvalues and, with left and right
     * eigenvectors swapped, the same condition numbers. */
    if (status == AG_OK &&
        LAPACKE_dgeevx(LAPACK_COL_MAJOR, 'N', 'V', 'V', 'E', (lapack_int)n, a, (lapack_int)n,
                       wr, wi, vl, (lapack_int)n, vr, (lapack_int)n, &ilo, &ihi, scale,
                       &abnrm, rce, rcv) != 0)
        status = AG_ELAPACK;
    if (status == AG_OK) {
        for (size_t i = 0; i < n; i++)
            e[i] = (eig_entry){.re = wr[i], .im = wi[i], .rcond = rce[i], .index = i};
        sort_entries(e, n, re, im, rcond);
    }
    free(a); free(vl); free(vr); free(wr); free(wi); free(rce); free(rcv); free(scale); free(e);
    return status;
}

int ag_eig_triangular_condition(const double *L, size_t n, double *re, double *im,
                                double *rcond2)
{
    if (n < 2)
        return AG_EINVAL;
    if (n > 46340)
        return AG_ELIMIT;
    eig_entry *e = malloc(n * sizeof *e);
    lapack_int *select = calloc(n, sizeof *select);
    int status;
    double *t = dup_matrix(L, n * n, &status), *vl = calloc(n, sizeof *vl), *vr = calloc(n, sizeof *vr);
    if (t && !(e && select && vl && vr))
        status = AG_ENOMEM;
    if (status == AG_OK) {
        for (size_t i = 0; i < n; i++)
            e[i] = (eig_entry){.re = L[i * n + i], .index = i};
        sort_entries(e, n, re, im, NULL);
        select[e[1].index] = 1;
        /* Row-major lower-triangular L is the column-major upper-triangular
         * T = Lᵀ, already in Schur form: dtrevc back-substitutes the right and
         * left eigenvectors of the selected diagonal entry (no eigensolver
         * runs). Condition numbers of T and L coincide. */
        lapack_int m = 0;
        if (LAPACKE_dtrevc(LAPACK_COL_MAJOR, 'B', 'S', select, (lapack_int)n, t, (lapack_int)n,
                           vl, (lapack_int)n, vr, (lapack_int)n, 1, &m) != 0 || m != 1)
            status = AG_ELAPACK;
    }
    if (status == AG_OK) {
        double dot = 0, nl = 0, nr = 0;
        for (size_t i = 0; i < n; i++) {
            dot += vl[i] * vr[i];
            nl += vl[i] * vl[i];
            nr += vr[i] * vr[i];
        }
        *rcond2 = fabs(dot) / (sqrt(nl) * sqrt(nr));
    }
    free(e); free(select); free(t); free(vl); free(vr);
    return status;
}
