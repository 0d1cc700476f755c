/* eigen.c — the eigenvalues of family B (lambda2_abs, spectral_gap) and the
 * condition number of λ₂ (lambda2_condition), from one eigenvalue
 * computation per matrix (docs/metrics.md, family B):
 *
 *   causal (lower-triangular) A: the eigenvalues are the diagonal, exactly;
 *     λ₂'s right and left eigenvectors come from back substitution for that
 *     one diagonal entry (dtrevc, HOWMNY='S').
 *   a non-negative A (attention) with LAMBDA2_KRYLOV_MIN ≤ n ≤
 *     LAMBDA2_KRYLOV_MAX: λ₁, λ₂ and λ₂'s eigenvectors by certified
 *     Krylov–Schur (analysis/lambda2.c), when its certificate holds.
 *   any other A: Hessenberg reduction H = QᵀAQ (dgehrd) and the eigenvalues
 *     of H alone (dhseqr, JOB='E'); λ₂'s eigenvectors by inverse iteration
 *     on H (dhsein), O(n²), instead of the Schur vectors and every
 *     eigenvector (dgeevx, several times the cost of the eigenvalues).
 *
 * |y₂ᴴx₂| for unit x₂, y₂ is unchanged by an orthogonal similarity (the
 * eigenvectors of H are Qᵀ times those of A, with the same norms and inner
 * product), so H's vectors give A's condition number with no
 * back-transformation, as LAPACK dtrsna uses those of any QTQᵀ
 * (Wilkinson, The Algebraic Eigenvalue Problem, §2.8; Golub & Van Loan
 * §7.2.2, §7.5, §7.6.1).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "analysis.h"

/* Between these n the Krylov route (analysis/lambda2.c) is tried first.
 * Below, dhseqr is as fast; above, the route's products with S leave the
 * cache and its squarings (2n³ each) cost more than dhseqr, whose
 * aggressive early deflation scales better on these spectra. With the
 * dense route's copies padded (ag_lapack_ld), one thread, random softmax
 * heads with logits σ·N(0, 1), σ = ½, 2, 4, per head: n = 512 Krylov
 * 56–73 ms, dense 113–126 ms; n = 1024 377–499 ms against 417–458 ms;
 * n = 1280 0.78–1.37 s against 0.65–0.71 s; n = 1536 1.3–2.2 s against
 * 1.05–1.14 s (docs/performance.md, "Krylov routes"). */
#define LAMBDA2_KRYLOV_MIN 256
#define LAMBDA2_KRYLOV_MAX 1024

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

static void sort_entries(eig_entry *e, size_t n, double *re, double *im, double *rcond)
{
    /* entry_order breaks exact ties by the original index */
    for (size_t i = 0; i < n; i++)
        e[i].mod = hypot(e[i].re, e[i].im);
    qsort(e, n, sizeof *e, entry_order);
    for (size_t i = 0; i < n; i++) {
        re[i] = e[i].re;
        im[i] = e[i].im;
        if (rcond)
            rcond[i] = e[i].rcond;
    }
}

int ag_eig_sort_by_modulus(double *re, double *im, size_t n)
{
    eig_entry *e = malloc((n ? n : 1) * sizeof *e);
    if (!e)
        return AG_ENOMEM;
    for (size_t i = 0; i < n; i++)
        e[i] = (eig_entry){.re = re[i], .im = im[i], .index = i};
    sort_entries(e, n, re, im, NULL);
    free(e);
    return AG_OK;
}

int ag_eig_general_values(const double *A, size_t n, double *re, double *im)
{
    if (n == 0)
        return AG_EINVAL;
    if (n > INT32_MAX || n > SIZE_MAX / sizeof(double) / n)
        return AG_ELIMIT;
    int status;
    double *a = ag_lapack_copy(A, n, n, n, &status);
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

int ag_eig_general_condition(const double *A, size_t n, double *re, double *im,
                             double *rcond)
{
    if (n == 0)
        return AG_EINVAL;
    if (n > 46340 || n > SIZE_MAX / sizeof(double) / n / 3)
        return AG_ELIMIT;
    int status;
    double *a = ag_lapack_copy(A, n, n, n, &status), *vl = malloc(n * n * sizeof *vl),
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
     * eigenvectors swapped, the same condition numbers. Every eigenvector:
     * the reference for family B's one-vector route (tests/analysis/test_floors.c). */
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

/* Indices of the first two eigenvalues (wr, wi) in entry_order, n ≥ 2. */
static void top_two_indices(const double *wr, const double *wi, size_t n, size_t *i1,
                            size_t *i2)
{
    eig_entry best = {.re = wr[0], .im = wi[0], .mod = hypot(wr[0], wi[0]), .index = 0};
    eig_entry next = {.re = wr[1], .im = wi[1], .mod = hypot(wr[1], wi[1]), .index = 1};
    if (entry_order(&next, &best) < 0) {
        eig_entry t = best;
        best = next;
        next = t;
    }
    for (size_t k = 2; k < n; k++) {
        eig_entry e = {.re = wr[k], .im = wi[k], .mod = hypot(wr[k], wi[k]), .index = k};
        if (entry_order(&e, &best) < 0) {
            next = best;
            best = e;
        } else if (entry_order(&e, &next) < 0) {
            next = e;
        }
    }
    *i1 = best.index;
    *i2 = next.index;
}

/* Whether λ₂ = (wr[i2], wi[i2]) is a simple eigenvalue in floating point.
 * The condition number 1/|y₂ᴴx₂| is defined only then: a repeated λ₂ has no
 * unique eigenvector pair (its value would depend on which basis LAPACK
 * happens to return), and a defective one has y₂ᴴx₂ = 0. Rounding splits
 * either into nearby eigenvalues, and an eigenvalue of condition κ moves by
 * up to about κ·nε‖A‖ (Golub & Van Loan §7.2.2): a defective λ₂ of
 * multiplicity two comes out as two eigenvalues ~√ε apart with κ ~ 1/√ε,
 * not as |y₂ᴴx₂| ~ ε. So: |y₂ᴴx₂| above n·ε, and no other eigenvalue within
 * 8·n·ε·|λ₁|/|y₂ᴴx₂| of λ₂ (analysis/lambda2.c decides it the same way). */
static int lambda2_simple(const double *wr, const double *wi, size_t n, double l1, size_t i2,
                          double rcond2)
{
    double tol = ag_lambda2_tie_radius(n, l1, rcond2);
    if (tol < 0)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (k != i2 && hypot(wr[k] - wr[i2], wi[k] - wi[i2]) <= tol)
            return 0;
    return 1;
}

/* |y₂ᴴx₂| for eigenvalue i2 of S: from the triangular S itself when causal,
 * else from the Hessenberg form h (leading dimension ld) that
 * ag_lapack_eigenvalues kept. */
static int lambda2_rcond(const double *S, const double *h, size_t ld, size_t n, int causal,
                         const double *wr, const double *wi, size_t i2, double *rcond2,
                         ag_matrix_work *w)
{
    double *v[2];
    int status = ag_work_vectors(w, AG_WK_VECTORS, 2 * n, 2, v);
    if (status == AG_OK && causal)
        status = ag_lapack_triangular_vectors(S, n, i2, v[0], v[1], w);
    else if (status == AG_OK)
        status = ag_lapack_hessenberg_vectors(h, n, ld, i2, wr, wi, v[0], v[1], w);
    if (status == AG_OK)
        *rcond2 = ag_eigenvector_rcond(v[0], v[1], n, !causal && wi[i2] != 0);
    return status;
}

int ag_eig_top_two(const double *S, size_t n, int causal, int want_cond, ag_matrix_work *w,
                   ag_top_two *out)
{
    double *v[2], *h = NULL;
    size_t ld = ag_lapack_ld(n); /* of the dense route's copies a and h */
    int status = ag_work_vectors(w, AG_WK_EIGS, n, 2, v);
    double *wr = v[0], *wi = v[1];
    if (status != AG_OK)
        return status;
    /* Row-major S is the column-major Sᵀ (upper triangular when S is
     * causal): the same eigenvalues and condition numbers. */
    if (causal) {
        for (size_t i = 0; i < n; i++) {
            wr[i] = S[i * n + i];
            wi[i] = 0;
        }
    } else {
        int certified = 0;
        if (n >= LAMBDA2_KRYLOV_MIN && n <= LAMBDA2_KRYLOV_MAX) {
            status = ag_lambda2_krylov(S, n, want_cond, w, out, &certified);
            if (status != AG_OK)
                return status;
        }
        ag_work_count(w, certified ? AG_WC_LAMBDA2_KRYLOV : AG_WC_LAMBDA2_DENSE);
        if (certified)
            return AG_OK;
        double *a = ag_lapack_work_copy(w, AG_WK_COPY, S, n, n, ld);
        h = want_cond ? ag_work_doubles(w, AG_WK_COPY2, n * ld) : NULL;
        if (!a || (want_cond && !h))
            return AG_ENOMEM;
        status = ag_lapack_eigenvalues(a, n, ld, h, wr, wi, w);
        if (status != AG_OK)
            return status;
    }
    size_t i1, i2;
    top_two_indices(wr, wi, n, &i1, &i2);
    out->l1 = hypot(wr[i1], wi[i1]);
    out->l2 = hypot(wr[i2], wi[i2]);
    out->rcond2 = 0;
    if (!want_cond)
        return AG_OK;
    status = lambda2_rcond(S, h, ld, n, causal, wr, wi, i2, &out->rcond2, w);
    if (status == AG_OK && !lambda2_simple(wr, wi, n, out->l1, i2, out->rcond2))
        out->rcond2 = 0;
    return status;
}

int ag_eig_triangular_condition(const double *L, size_t n, double *re, double *im,
                                double *rcond2)
{
    if (n < 2)
        return AG_EINVAL;
    if (n > 46340)
        return AG_ELIMIT;
    for (size_t k = 0; k < n * n; k++)
        if (!isfinite(L[k]))
            return AG_ENONFINITE;
    ag_matrix_work *w = NULL;
    eig_entry *e = malloc(n * sizeof *e);
    double *v[2];
    int status = e && ag_matrix_work_new(&w, NULL) == AG_OK ? AG_OK : AG_ENOMEM;
    if (status == AG_OK)
        status = ag_work_vectors(w, AG_WK_VECTORS, n, 2, v);
    if (status == AG_OK) {
        for (size_t i = 0; i < n; i++)
            e[i] = (eig_entry){.re = L[i * n + i], .index = i};
        sort_entries(e, n, re, im, NULL);
        /* Row-major lower-triangular L is the column-major upper-triangular
         * T = Lᵀ, already in Schur form. */
        status = ag_lapack_triangular_vectors(L, n, e[1].index, v[0], v[1], w);
    }
    if (status == AG_OK)
        *rcond2 = ag_eigenvector_rcond(v[0], v[1], n, 0);
    ag_matrix_work_free(w);
    free(e);
    return status;
}
