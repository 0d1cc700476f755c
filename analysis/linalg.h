/* Internal prefix: aga_ (module analysis/; today ag_lapack_*, renamed in a later step of plan-25). */
/* linalg.h — the LAPACK calls of the matrix metrics, with their scratch from
 * a workspace (analysis/work.h) and no checks of the input (the callers have made
 * sure it is finite and scaled; docs/metrics.md, "Range"). Matrices are
 * column-major here: a row-major buffer is the transpose, whose singular
 * values, eigenvalues and eigenvalue condition numbers are the same (the
 * left and right eigenvectors trade places). Each routine uses the slots
 * AG_WK_LWORK and AG_WK_IWORK only. Status AG_OK, AG_ENOMEM, AG_ELIMIT or
 * AG_ELAPACK. */
#ifndef AG_LINALG_H
#define AG_LINALG_H

#include <stddef.h>

#include "work.h"

/* A copy of the row-major m×n M for LAPACK to overwrite, its rows ld ≥ n
 * apart (ag_lapack_load; ld = n: compact), or NULL with *status AG_ENOMEM
 * or AG_ENONFINITE (LAPACK given Inf or NaN may not return, or may corrupt
 * the heap, as Debian's OpenBLAS 0.3.21 dgeev does, so it never is). For
 * the public wrappers, which check their input. */
double *ag_lapack_copy(const double *M, size_t m, size_t n, size_t ld, int *status);

/* The leading dimension of LAPACK's copy of a matrix whose columns hold
 * `rows` values: rows, or rows + 8 when rows is a multiple of 64. Columns a
 * multiple of 512 B apart fall into the same cache sets, and LAPACK's
 * reductions walk across columns: on the AMD EPYC of docs/performance.md,
 * dgesdd (values) at n = 1024 took 0.191 s with a leading dimension of 1024
 * and 0.145 s with 1032, dgeev (values) 0.82 s and 0.45 s, and at n = 512
 * 0.032 s / 0.022 s and 0.23 s / 0.12 s; n = 960 or 1000 show no such
 * step. The results are the same bits: only where the columns lie moves. */
size_t ag_lapack_ld(size_t rows);

/* The row-major m×n M into a, row i at a + i·ld (ld ≥ n): the column-major
 * n×m Mᵀ with leading dimension ld, as LAPACK takes it. */
void ag_lapack_load(double *a, size_t ld, const double *M, size_t m, size_t n);

/* The same into workspace slot `slot` of w (m·ld doubles), or NULL when
 * out of memory: the copies the families hand LAPACK. */
double *ag_lapack_work_copy(ag_matrix_work *w, ag_work_slot slot, const double *M, size_t m,
                            size_t n, size_t ld);

/* Singular values of the m×n a (overwritten; its rows ld apart, ld ≥ n:
 * ag_lapack_ld), descending, into sigma[min(m, n)]: dgesdd with JOBZ='N'. */
int ag_lapack_svd_values(double *a, size_t m, size_t n, size_t ld, double *sigma,
                         ag_matrix_work *w);

/* The k-th smallest (1-based) eigenvalue of the symmetric n×n a, of which
 * the upper triangle is read and overwritten: dsyevr with RANGE='I'. */
int ag_lapack_sym_kth(double *a, size_t n, size_t k, double *value, ag_matrix_work *w);

/* Eigenvalues of the n×n a (overwritten; leading dimension ld ≥ n:
 * ag_lapack_ld) in dhseqr's order (a complex pair adjacent, positive
 * imaginary part first): dgehrd reduces a to upper Hessenberg H, copied
 * into h (n columns, ld apart) unless h is NULL, then dhseqr with JOB='E'
 * finds the eigenvalues of H alone (no Schur vectors). */
int ag_lapack_eigenvalues(double *a, size_t n, size_t ld, double *h, double *wr, double *wi,
                          ag_matrix_work *w);

/* Right and left eigenvectors x and y of eigenvalue `index` (in dhseqr's
 * order) of the upper Hessenberg h (leading dimension ld) from
 * ag_lapack_eigenvalues: dhsein, inverse iteration on H alone. x = xr +
 * i·xi with xr = vr[0..n), xi = vr[n..2n) (0 for a real eigenvalue); y
 * likewise in vl. wr is not changed. */
int ag_lapack_hessenberg_vectors(const double *h, size_t n, size_t ld, size_t index,
                                 const double *wr, const double *wi, double *vl, double *vr,
                                 ag_matrix_work *w);

/* The same for the diagonal entry `index` of the upper triangular t (real
 * eigenvalues; vl, vr of n): dtrevc with HOWMNY='S', back substitution for
 * that one eigenvalue. */
int ag_lapack_triangular_vectors(const double *t, size_t n, size_t index, double *vl,
                                 double *vr, ag_matrix_work *w);

/* |yᴴx| / (‖x‖‖y‖) for the vectors above (complex when is_complex), as
 * LAPACK dtrsna forms it: the reciprocal condition number of the
 * eigenvalue. */
double ag_eigenvector_rcond(const double *vl, const double *vr, size_t n, int is_complex);

#endif
