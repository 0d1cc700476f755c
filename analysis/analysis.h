/* Internal prefix: aga_ (module analysis/; today ag_lapack_*, ag_work_get, ag_scale_*, ag_family_selected, renamed in a later step of plan-25). */
/* analysis.h — private interface between the metric families and the
 * ag_matrix_metrics driver (analysis/matrix.c). */
#ifndef AG_ANALYSIS_H
#define AG_ANALYSIS_H

#include <float.h>

#include <gsl/gsl_rng.h>

#include "metrics_int.h"
#include "linalg.h"

/* Put before a static function: where GCC builds for x86-64, an AVX2
 * clone of it beside the default one, chosen at load time where the
 * processor has AVX2 (GCC's target_clones). Static functions only: GCC
 * exports a clone's dispatcher whatever -fvisibility says, and the library
 * exports only the ag_ functions its headers declare (tests/cli/install.sh). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AG_CLONES_AVX2 __attribute__((target_clones("avx2", "default")))
/* The same with an AVX-512 clone too: for vector-extension code over
 * 64-byte vectors (one AVX-512 register, two AVX2 ones). */
#define AG_CLONES_AVX512 __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AG_CLONES_AVX2
#define AG_CLONES_AVX512
#endif

/* ---- exact power-of-two scaling (analysis/scale.c) ---- */

/* e with max|a_ij| = f·2^e, f in [0.5, 1), when that is outside
 * [2^-100, 2^100]; 0 inside (no scaling needed) and for a zero block. */
int ag_scale_exponent(const double *a, size_t rows, size_t cols, size_t ld);
/* The same e for a block whose largest |entry| is amax. */
int ag_scale_exponent_of(double amax);
/* max|x_j| into *amax, in one pass; returns 0 when some x_j is NaN or
 * Inf. */
int ag_finite_max_abs(const double *x, size_t count, double *amax);
/* What one pass over the m×n row-major M tells (ag_matrix_scan): the facts
 * every family of ag_matrix_metrics_work needs, gathered once. */
typedef struct {
    double amax;  /* max |M_ij| over the finite entries and ±Inf */
    int finite;   /* every entry is finite */
    int negative; /* some entry is < 0 */
    int upper;    /* some entry above the diagonal is ≠ 0 (square M only; 0 otherwise) */
} ag_matrix_facts;
void ag_matrix_scan(const double *M, size_t m, size_t n, ag_matrix_facts *f);
/* ag_matrix_scan, then AG_OK when every entry is finite; else
 * AG_ENONFINITE with err naming the first entry that is not. */
int ag_matrix_scan_finite(const double *M, size_t m, size_t n, ag_matrix_facts *f,
                          ag_error *err);
/* Whether the square n×n M is causal: n ≥ 2 and nothing above the diagonal
 * (the key `causal`, docs/metrics.md). */
static inline int ag_facts_causal(const ag_matrix_facts *f, size_t m, size_t n)
{
    return m == n && n >= 2 && !f->upper;
}
/* A compact (rows, cols) copy of a·2^-e (NULL when out of memory). */
double *ag_scaled_copy(const double *a, size_t rows, size_t cols, size_t ld, int e);
/* Store v·2^e as a number; null when that lies beyond the double range
 * (|v·2^e| > 1.8e308: the value exists but no double is right). */
void ag_record_put(ag_record *rec, ag_metric key, double v, int e);

/* y_j = ln x_j for every x_j > 0 (normal or subnormal), within 2 ulp of
 * glibc's log (1 measured), the same bits on every machine and path
 * (analysis/vlog.c); y_j is unspecified for x_j ≤ 0. */
void ag_log_positive(const double *x, double *y, size_t count);

/* max|x_j| (0 for count = 0). */
double ag_max_abs(const double *x, size_t count);
/* Powers of two p[0], p[1] with x·p[0]·p[1] = x·2^-k exactly (whenever the
 * result is normal) for amax = f·2^k, f in [0.5, 1): one factor when 2^-k
 * is finite, two below 2^-1000. p = {1, 1} for amax = 0. */
void ag_pow2_factors(double amax, double p[2]);
/* Σ x_j·p[0]·p[1] and Σ (x_j·p[0]·p[1])², in a fixed order of four partial
 * sums. */
double ag_scaled_sum(const double *x, size_t count, const double p[2]);
double ag_scaled_sumsq(const double *x, size_t count, const double p[2]);
/* Σ x_j², in the same order. */
double ag_sumsq(const double *x, size_t count);

/* Family A from the singular values of 2^-e·M: sigma_max is σ₁·2^e, every
 * other key a ratio. */
void ag_spectrum_keys_scaled(const double *sigma, size_t q, size_t m, size_t n, int e,
                             ag_metric first, const ag_metric_set *sel, ag_record *rec);

/* Family A's effective_rank (exp of the entropy of σ_k/Σσ; sigma
 * descending, q ≥ 1, σ₁ > 0) and numerical_rank (#{σ_k > σ₁·max(m, n)·ε})
 * of an m×n matrix's singular values: the one definition of each, for
 * every family that reports them (A, D, K). */
double ag_sigma_effective_rank(const double *sigma, size_t q);
size_t ag_sigma_numerical_rank(const double *sigma, size_t q, size_t m, size_t n);

/* The R factor (k×cols, k = min(rows, cols), row-major, zero below the
 * diagonal; *r_out the caller's: free) of the thin QR (LAPACK dgeqrf) of
 * the (rows, cols) block a with row stride ld (analysis/weights.c).
 * AG_OK, AG_ENOMEM or AG_ELAPACK. */
int ag_thin_r(const double *a, size_t rows, size_t cols, size_t ld, double **r_out,
              size_t *k_out);
/* ag_thin_r of c, the (rows, cols) block already column-major (leading
 * dimension rows), which dgeqrf overwrites: for a caller that packs its
 * block itself, so that it is copied once. */
int ag_thin_r_cm(double *c, size_t rows, size_t cols, double **r_out, size_t *k_out);

/* Singular values (descending, zero-padded to q ≥ min(m, n, h)) of A Bᵀ
 * for the blocks A (m, h) and B (n, h) (row strides lda, ldb), from the
 * core R_A R_Bᵀ of their thin QRs (Golub & Van Loan §5.2); *frob ‖A Bᵀ‖_F.
 * AG_OK, AG_ENOMEM, AG_ELAPACK (analysis/weights.c). */
int ag_product_sigma(const double *a, size_t m, size_t lda, const double *b, size_t n,
                     size_t ldb, size_t h, double *sigma, size_t q, double *frob);

/* The rows of Q = R(XW_Q + b_Q) and K = R(XW_K + b_K) of head `in` (R its
 * rotary rotation: attngeom/stability.h; with what ex adds, NULL: none:
 * a QK-norm between projection and rotation, yarn/longrope's rotation) into q and k (n × d_h each, the
 * caller's); *scale the head's c (its 0 resolved to 1/√d_h). Errors as
 * ag_stability_metrics' for the input, AG_ENONFINITE when Q or K
 * overflows, AG_ENOMEM (analysis/stability.c). */
int ag_head_qk(const ag_head_input *in, const ag_head_extra *ex, double *q, double *k,
               double *scale, ag_error *err);

/* Family B of the m×n row-major A (finite entries), S = 2^-e·A, f its
 * facts (ag_matrix_scan: sign and causal mask, read once by the caller): the keys
 * of a square A only (docs/metrics.md, family B) null when m ≠ n. */
int ag_attention_family(const double *A, const double *S, int e, size_t m, size_t n,
                        const ag_matrix_facts *f, const ag_metric_set *sel, ag_matrix_work *w,
                        ag_record *rec);
/* Σ_i H_i, H_i = −Σ_j A_ij ln A_ij (0·ln 0 = 0), of the m×n A with no
 * negative entry (S = 2^-e·A), as family B sums it: the sum is the value
 * times 2^-*eh (store it with ag_record_put(..., *eh)). */
double ag_entropy_sum(const double *A, const double *S, int e, size_t m, size_t n, int *eh);
/* Family M (docs/metrics.md, cross-attention) of the m×n row-major A
 * (finite entries), S = 2^-e·A (analysis/cross.c). Uses the slot
 * AG_WK_IWORK. AG_OK or AG_ENOMEM. */
int ag_cross_family(const double *A, const double *S, int e, size_t m, size_t n,
                    const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec);
/* Family C of the m×n row-major X (finite entries, any magnitude), S = 2^-e·X
 * for some e (X itself when it needs no scaling). */
int ag_geometry_family(const double *X, const double *S, size_t m, size_t n,
                       const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec);
/* Family L (docs/metrics.md) of the square n×n row-major A (finite
 * entries): the metric axioms of d = −ln A; every key null when an entry
 * is negative. Uses the slots AG_WK_COPY, AG_WK_COPY2, AG_WK_IWORK (for
 * triangle_violation only). AG_OK or AG_ENOMEM. */
int ag_axioms_family(const double *A, size_t n, const ag_metric_set *sel, ag_matrix_work *w,
                     ag_record *rec);

/* What family B needs of the eigenvalues of S (analysis/eigen.c). */
typedef struct {
    double l1, l2; /* |λ₁|, |λ₂|, eigenvalues sorted by modulus (ties as
                      ag_eig_sort_by_modulus, then by LAPACK's order) */
    double rcond2; /* |y₂ᴴx₂|, only when asked; 0 when λ₂ is not simple */
} ag_top_two;
/* For the n×n S (n ≥ 2, finite, causal: lower triangular): one eigenvalue
 * computation, and λ₂'s two eigenvectors when want_cond. Uses the slots
 * AG_WK_COPY, AG_WK_COPY2, AG_WK_EIGS, AG_WK_VECTORS, and for the Krylov
 * route AG_WK_BASIS and AG_WK_IWORK. */
int ag_eig_top_two(const double *S, size_t n, int causal, int want_cond, ag_matrix_work *w,
                   ag_top_two *out);
/* The radius within which another eigenvalue makes λ₂ not simple, for
 * |y₂ᴴx₂| = rcond2 and |λ₁| = l1 (analysis/eigen.c, lambda2_simple): rounding
 * moves an eigenvalue of condition 1/rcond2 by up to about 8nε·l1/rcond2
 * (Golub & Van Loan §7.2.2). −1 when rcond2 ≤ nε: not simple at any
 * distance. Both routes decide simplicity by it. */
static inline double ag_lambda2_tie_radius(size_t n, double l1, double rcond2)
{
    if (!(rcond2 > (double)n * DBL_EPSILON))
        return -1;
    return 8.0 * (double)n * DBL_EPSILON * l1 / rcond2;
}
/* The same for a non-negative S (n > 41), by Krylov–Schur and a
 * certificate (analysis/lambda2.c): *certified = 1 and l2 within 2^-41
 * relative of |λ₂| (κ‖R₂‖, first order), l1 within 2^-42 of λ₁, or
 * *certified = 0 (any other S, a near-tie, no convergence, a failed
 * bound) and *out untouched, for the dense route. Uses the slots
 * AG_WK_COPY, AG_WK_COPY2, AG_WK_VECTORS, AG_WK_BASIS, AG_WK_IWORK.
 * AG_OK or AG_ENOMEM. */
int ag_lambda2_krylov(const double *S, size_t n, int want_cond, ag_matrix_work *w,
                      ag_top_two *out, int *certified);

/* σ₁² of the m×n row-major X (finite, max|X| in [2^-400, 2^400], so that
 * σ₁² and the products can neither overflow nor underflow) by Lanczos
 * (analysis/lanczos.c), *steps the Lanczos steps taken; X is overwritten
 * only when they do not converge and dgesdd runs on it (*steps = 0). Uses
 * the slot AG_WK_BASIS. */
int ag_sigma1_squared(double *X, size_t m, size_t n, ag_matrix_work *w, double *theta,
                      int *steps);
/* The second-smallest eigenvalue of the normalised Laplacian L (n×n
 * row-major, lower triangle read) whose null vector is the unit u, by
 * Lanczos in u^⊥ with a certificate (analysis/fiedler.c): *certified = 1
 * and *value within 2^-46 relative of the eigenvalue (plus the rounding of
 * the last product, ≤ 8nε), or *certified = 0 (n < 3, θ < 1/16, a
 * near-tie, no convergence) and *value untouched, for the dense route.
 * Uses the slots AG_WK_BASIS, AG_WK_COPY2, AG_WK_IWORK. AG_OK, AG_ENOMEM
 * or AG_ELAPACK. */
int ag_fiedler_krylov(const double *L, const double *u, size_t n, ag_matrix_work *w,
                      double *value, int *certified);
/* The Lanczos process with full reorthogonalisation (analysis/lanczos.c),
 * one driver for σ₁², the Fiedler value and the Jacobian norm: on a
 * symmetric operator of R^q given as y = apply(op, x), in the orthogonal
 * complement of `lock` orthonormal vectors (deflation: rows 0..lock−1 of
 * V, which the caller writes between ag_lanczos_init and ag_lanczos_start,
 * or writes v_0 itself). */
typedef struct ag_lanczos ag_lanczos;
typedef void (*ag_lanczos_apply)(const void *op, const double *x, double *y);
/* Run after step k (T_k = (alpha, beta) known; b = ‖w‖, the β_k the next
 * vector would be divided by): sets *stop to end the process; a status
 * other than AG_OK ends it too and is returned. */
typedef int (*ag_lanczos_test)(void *ctx, ag_lanczos *L, int k, double b, int *stop);
struct ag_lanczos {
    ag_lanczos_apply apply;
    const void *op;
    size_t q;       /* the dimension */
    int kmax, lock; /* steps at most; vectors deflated */
    int twice;      /* 1: two Gram–Schmidt passes at every step (stability.c's
                       norm); 0: the second only when the first lost w */
    double *V;      /* (lock + kmax, q): the deflated vectors, then v_0, v_1, … */
    double *w;      /* (q) the next vector */
    double *extra;  /* (extra) the caller's */
    double *alpha, *beta, *h, *d, *e, *ritz; /* (kt = lock + kmax) each */
    double *z, *work; /* (2·kt) two Ritz vectors of T_k, (20·kt) dstevr's */
    int *iwork;       /* (10·kt + 4) dstevr's, then its ISUPPZ */
};
/* Carves the arrays above (and `extra` doubles for the caller) from the
 * slots AG_WK_BASIS and AG_WK_IWORK; the caller sets apply, op and twice.
 * AG_OK or AG_ENOMEM (also for sizes beyond the address space). */
int ag_lanczos_init(ag_lanczos *L, size_t q, int kmax, int lock, size_t extra,
                    ag_matrix_work *w);
/* v_0: Gaussian draws from rng, orthogonalised against the deflated rows,
 * unit. */
void ag_lanczos_start(ag_lanczos *L, gsl_rng *rng);
/* Lanczos steps from v_0 until test stops them or kmax steps are taken
 * (*steps the number taken). AG_OK or the test's status. */
int ag_lanczos_run(ag_lanczos *L, ag_lanczos_test test, void *ctx, int *steps);
/* The eigenpairs il..iu (1-based, ascending) of the k×k T_k into L->ritz
 * and L->z (column-major, leading dimension k): dstevr, RANGE='I'
 * (bisection and inverse iteration, O(k) per pair). AG_OK or AG_ELAPACK. */
int ag_lanczos_ritz(ag_lanczos *L, int k, int il, int iu);
/* v[0..n-1] = independent standard Gaussian draws from rng (GSL's
 * gsl_ran_gaussian; analysis/random.c). */
void ag_fill_gaussian(gsl_rng *rng, double *v, size_t n);

/* ag_head_jacobian_norm with a Lanczos basis of `basis` vectors (≥ 2)
 * instead of the default; a small basis forces restarts, which is how the
 * tests exercise them. */
int ag_jacobian_norm_basis(const ag_head_lin *L, size_t basis, double *norm,
                           ag_lanczos_info *info, ag_error *err);

/* 1 if any key of family f is selected. */
int ag_family_selected(const ag_metric_set *sel, ag_family f);

#endif
