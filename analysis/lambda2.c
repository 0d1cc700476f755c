/* lambda2.c — λ₂ of a non-causal attention matrix (family B's lambda2_abs,
 * spectral_gap, lambda2_condition) by the Krylov–Schur method and a
 * certificate, instead of the dense Hessenberg QR iteration (dgehrd +
 * dhseqr, ~10n³ flops that run at BLAS-2 speed).
 *
 * Applies to a non-negative n×n S (attention, whose float32 rows sum to 1
 * only within float32 rounding): its Perron root ρ is λ₁ (Horn & Johnson,
 * Matrix Analysis, Theorem 8.3.1), and λ₂ is the eigenvalue of next
 * largest modulus.
 *
 * 1. Krylov–Schur on S (Stewart, "A Krylov–Schur algorithm for large
 *    eigenproblems", SIAM J. Matrix Anal. Appl. 23 (2001) 601–614, §2–3):
 *    Arnoldi steps with classical Gram–Schmidt applied twice (DGKS), the
 *    real Schur form of the Rayleigh quotient sorted by modulus (dgees,
 *    dtrexc), restarts that keep the leading KEEP Schur vectors, until the
 *    leading j ≥ NEV Schur vectors Q (j×n, orthonormal rows) give a partial
 *    Schur form S Qᵀ = Qᵀ T + R with ‖R‖_F ≤ SCHUR_TOL·|θ₂|; θ₁ (a real
 *    1×1 block) and θ₂ T's two leading eigenvalues.
 * 2. λ₁ = θ₁: the Collatz–Wielandt bounds min_i (Sx)_i/x_i ≤ ρ ≤
 *    max_i (Sx)_i/x_i for the positive Ritz vector x (Horn & Johnson,
 *    Theorem 8.1.26) lie within PERRON_TOL of each other, and θ₁ is
 *    clamped to them.
 * 3. Nothing larger than θ₂ was missed: M = S(I − QᵀQ) has the eigenvalues
 *    of Q⊥ᵀSQ⊥ (and j zeros), and S is [[T, ·], [E, Q⊥ᵀSQ⊥]] with
 *    ‖E‖ = ‖R‖. ρ(M) ≤ ‖M^K‖_F^{1/K} for every K (Horn & Johnson,
 *    Corollary 5.6.14); K = 2, 4, …, 2^SQUARINGS by repeated squaring
 *    (dgemm, normalised at each step, the logarithm of the scale carried),
 *    until the bound is below |θ₂|(1 − MARGIN). On random softmax heads,
 *    whose λ₂ sits on the edge of a circular-law disk, the bound converges
 *    to ρ(M) as ρ(M)·c^{1/K} with c ≈ 5, so a gap of a few per cent between
 *    θ₂ and the first eigenvalue left out of Q needs K = 64…512.
 * 4. θ₂'s right and left eigenvectors x, y of S by two steps of inverse
 *    iteration each on one LU factorisation of S − θ₂I (dgetrf, or zgetrf
 *    for a complex θ₂; Golub & Van Loan, Matrix Computations, §7.6.1), and
 *    κ = 1/|yᴴx|. The leading blocks up to θ₂'s are a partial Schur form,
 *    S Q₂ᵀ = Q₂ᵀT₂₂ + R₂, so θ₂ is an exact eigenvalue of S − R₂Q₂, a
 *    perturbation of norm ‖R₂‖, and |θ₂ − λ₂| ≤ κ‖R₂‖ to first order (GVL
 *    §7.2.2); accepted when κ‖R₂‖ ≤ EIG_TOL·|θ₂| (≈ 4.5e-13 relative;
 *    observed differences from the dense route are ~1e-14).
 *
 * Anything else — negative entries, a Perron vector with a non-positive
 * entry or loose bounds, |θ₂| within GAP_MIN of θ₁ (a reducible or
 * periodic S, where the spectral gap is the difference of two nearly equal
 * numbers), a third eigenvalue of T within TIE_TOL of |θ₂| when the
 * condition number is asked for (which of the two is λ₂ is then decided by
 * rounding, and the condition number itself is fixed only to about ε over
 * the gap, by either route), no convergence within MAX_PRODUCTS products,
 * a breakdown, or a failed bound — leaves *certified = 0 and the dense
 * route runs (analysis/eigen.c). The start vector comes from a fixed-seed
 * generator: the same bytes on every run and thread.
 */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "analysis.h"

#define NEV 7             /* Schur vectors wanted before the certificate (λ₁ and 6) */
#define NCV 40            /* the basis' size */
#define KEEP 16           /* Schur vectors kept at a restart */
#define MAX_PRODUCTS 4000 /* products with S before giving up */
#define SCHUR_TOL 0x1p-47 /* ‖R‖_F relative to |θ₂| (≈ 7.1e-15) */
#define EIG_TOL 0x1p-41   /* κ‖R₂‖ relative to |θ₂| (≈ 4.5e-13) */
#define SQUARINGS 10      /* K up to 1024 */
#define MARGIN 0x1p-20    /* ρ(rest) ≤ |θ₂|(1 − MARGIN) */
#define PERRON_TOL 0x1p-42 /* the Collatz–Wielandt bounds' spread, relative */
#define GAP_MIN 0x1p-10
#define TIE_TOL 0x1p-17
#define SEED 20261207UL

/* The Krylov–Schur state: S V_mᵀ = V_mᵀ H[0:m, 0:m] + v_m H[m, 0:m], the
 * rows of V orthonormal. */
typedef struct {
    const double *S; /* (n, n) row-major */
    int n, m;
    double *V;       /* (NCV + 1, n): the basis, one vector a row */
    double *Vk;      /* (KEEP + 2, n): the kept vectors at a restart */
    double *H;       /* (NCV + 1, NCV) column-major, leading dimension NCV + 1 */
    double *T, *Z;   /* (NCV, NCV) column-major: Schur form and vectors */
    double *wr, *wi; /* (NCV) */
    double *h;       /* (NCV + 1) Gram–Schmidt coefficients within ks_expand;
                        after ks_schur, the coupling row b = H[m, :]·Z */
    int products;
} krylov_schur;

static int ks_init(krylov_schur *K, const double *S, int n, ag_matrix_work *w)
{
    size_t m = NCV, sizes[] = {(m + 1) * n, (KEEP + 2) * (size_t)n, (m + 1) * m, m * m, m * m,
                               m, m, m + 1};
    double *v[8];
    size_t total = 0;
    for (int i = 0; i < 8; i++)
        total += (sizes[i] + 7) / 8 * 8;
    double *p = ag_work_doubles(w, AG_WK_BASIS, total);
    if (!p)
        return AG_ENOMEM;
    for (int i = 0; i < 8; i++) {
        v[i] = p;
        p += (sizes[i] + 7) / 8 * 8;
    }
    *K = (krylov_schur){.S = S, .n = n, .m = (int)m, .V = v[0], .Vk = v[1], .H = v[2],
                        .T = v[3], .Z = v[4], .wr = v[5], .wi = v[6], .h = v[7]};
    memset(K->H, 0, sizes[2] * sizeof *K->H);
    return AG_OK;
}

/* Row 0 of V: a fixed-seed Gaussian vector, unit. */
static int ks_start(krylov_schur *K, ag_matrix_work *w)
{
    gsl_rng *rng = ag_work_rng(w, SEED);
    if (!rng)
        return AG_ENOMEM;
    ag_fill_gaussian(rng, K->V, (size_t)K->n);
    cblas_dscal(K->n, 1.0 / cblas_dnrm2(K->n, K->V, 1), K->V, 1);
    return AG_OK;
}

/* Arnoldi steps j = k … m − 1: v_{j+1} from S v_j, orthogonalised twice
 * against v_0 … v_j (classical Gram–Schmidt with reorthogonalisation, GVL
 * §10.5.1). Returns 0 on a breakdown (‖w‖ at rounding level: an invariant
 * subspace, left to the dense route). */
static int ks_expand(krylov_schur *K, int k)
{
    int n = K->n, ld = K->m + 1;
    for (int j = k; j < K->m; j++) {
        double *w = K->V + (size_t)(j + 1) * n, *hj = K->H + (size_t)j * ld;
        cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, K->S, n, K->V + (size_t)j * n, 1,
                    0.0, w, 1);
        K->products++;
        double before = cblas_dnrm2(n, w, 1);
        for (int pass = 0; pass < 2; pass++) {
            cblas_dgemv(CblasRowMajor, CblasNoTrans, j + 1, n, 1.0, K->V, n, w, 1, 0.0, K->h, 1);
            cblas_dgemv(CblasRowMajor, CblasTrans, j + 1, n, -1.0, K->V, n, K->h, 1, 1.0, w, 1);
            cblas_daxpy(j + 1, 1.0, K->h, 1, hj, 1);
        }
        double beta = cblas_dnrm2(n, w, 1);
        if (!(beta > 64.0 * DBL_EPSILON * before))
            return 0;
        hj[j + 1] = beta;
        cblas_dscal(n, 1.0 / beta, w, 1);
    }
    return 1;
}

/* Size of the diagonal block of the quasi-triangular t (column-major, m×m)
 * that starts at i. */
static int block_size(const double *t, int m, int i)
{
    return i + 1 < m && t[(size_t)i * m + i + 1] != 0 ? 2 : 1;
}

static double block_modulus(const double *t, int m, int i)
{
    if (block_size(t, m, i) == 1)
        return fabs(t[(size_t)i * m + i]);
    /* |λ|² of a standardised 2×2 block [[a, b], [c, a]] is a² − bc */
    double a = t[(size_t)i * m + i], b = t[(size_t)(i + 1) * m + i], c = t[(size_t)i * m + i + 1];
    return sqrt(a * a - b * c);
}

/* Moves the blocks of T (and Z's columns) into modulus-descending order up
 * to position `upto` (selection sort by dtrexc, GVL §7.6.2). Returns 0 when
 * a swap is refused as ill-conditioned. */
static int ks_sort(krylov_schur *K, int upto)
{
    int m = K->m;
    for (int pos = 0; pos < upto && pos < m;) {
        int best = pos;
        double bm = block_modulus(K->T, m, pos);
        for (int i = pos + block_size(K->T, m, pos); i < m; i += block_size(K->T, m, i)) {
            double mi = block_modulus(K->T, m, i);
            if (mi > bm) {
                bm = mi;
                best = i;
            }
        }
        if (best != pos) {
            lapack_int ifst = best + 1, ilst = pos + 1;
            if (LAPACKE_dtrexc(LAPACK_COL_MAJOR, 'V', m, K->T, m, K->Z, m, &ifst, &ilst) != 0)
                return 0;
        }
        pos += block_size(K->T, m, pos);
    }
    return 1;
}

/* Schur form of H[0:m, 0:m], sorted; b = H[m, 0:m]·Z into row m of H.
 * Returns 0 when LAPACK refuses. */
static int ks_schur(krylov_schur *K)
{
    int m = K->m, ld = m + 1;
    lapack_int sdim;
    for (int j = 0; j < m; j++)
        memcpy(K->T + (size_t)j * m, K->H + (size_t)j * ld, (size_t)m * sizeof *K->T);
    if (LAPACKE_dgees(LAPACK_COL_MAJOR, 'V', 'N', NULL, m, K->T, m, &sdim, K->wr, K->wi, K->Z,
                      m) != 0)
        return 0;
    if (!ks_sort(K, KEEP + 2))
        return 0;
    for (int j = 0; j < m; j++)
        K->h[j] = cblas_ddot(m, K->H + m, ld, K->Z + (size_t)j * m, 1);
    return 1;
}

/* Leading Schur vectors of residual norm ‖b[0:j]‖ ≤ SCHUR_TOL·|θ₂|: the
 * largest such j ≤ KEEP that splits no 2×2 block (0 when none). */
static int ks_converged(const krylov_schur *K)
{
    double tol = SCHUR_TOL * block_modulus(K->T, K->m, block_size(K->T, K->m, 0)), r2 = 0;
    int good = 0;
    for (int j = 0; j < KEEP;) {
        int s = block_size(K->T, K->m, j);
        for (int i = j; i < j + s; i++)
            r2 += K->h[i] * K->h[i];
        if (sqrt(r2) > tol)
            break;
        j += s;
        good = j;
    }
    return good;
}

/* Truncation to the leading k Schur vectors: V_k = Z[:, 0:k]ᵀ V_m, H =
 * [[T_k], [b_k]], v_k = v_m (Stewart §3). */
static void ks_restart(krylov_schur *K, int k)
{
    int n = K->n, m = K->m, ld = m + 1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, n, m, 1.0, K->Z, m, K->V, n, 0.0,
                K->Vk, n);
    memcpy(K->V + (size_t)k * n, K->V + (size_t)m * n, (size_t)n * sizeof *K->V);
    memcpy(K->V, K->Vk, (size_t)k * n * sizeof *K->V);
    memset(K->H, 0, (size_t)ld * m * sizeof *K->H);
    for (int j = 0; j < k; j++) {
        memcpy(K->H + (size_t)j * ld, K->T + (size_t)j * m, (size_t)(j + 2 < k ? j + 2 : k) *
               sizeof *K->H);
        K->H[(size_t)j * ld + k] = K->h[j];
    }
}

/* Runs Krylov–Schur to a converged leading block; *j its size (0: none). */
static int ks_run(krylov_schur *K, int *j)
{
    int k = 0;
    *j = 0;
    while (K->products + K->m - k <= MAX_PRODUCTS) {
        if (!ks_expand(K, k) || !ks_schur(K))
            return 0;
        int good = ks_converged(K);
        if (good >= NEV) {
            *j = good;
            return 1;
        }
        /* a 2×2 block across the cut stays whole */
        k = KEEP + (K->T[(size_t)(KEEP - 1) * K->m + KEEP] != 0);
        ks_restart(K, k);
    }
    return 0;
}

/* Whether every entry of the n×n S is non-negative. */
static int non_negative(const double *S, size_t n)
{
    for (size_t k = 0; k < n * n; k++)
        if (S[k] < 0)
            return 0;
    return 1;
}

/* λ₁ from the leading 1×1 block θ₁ and its Ritz vector x (row 0 of Q):
 * the Collatz–Wielandt bounds of x (made positive) must lie within
 * PERRON_TOL·θ₁ of each other; *l1 is θ₁ clamped to them. y (n) scratch.
 * Returns 0 when x has a non-positive entry or the bounds are loose. */
static int perron_root(const double *S, const double *x0, int n, double theta, double *y,
                       double *l1)
{
    double sign = x0[0] < 0 ? -1.0 : 1.0, lo = INFINITY, hi = -INFINITY;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, sign, S, n, x0, 1, 0.0, y, 1);
    for (int i = 0; i < n; i++) {
        double x = sign * x0[i];
        if (!(x > 0))
            return 0;
        lo = fmin(lo, y[i] / x);
        hi = fmax(hi, y[i] / x);
    }
    if (!(theta > 0 && hi - lo <= PERRON_TOL * theta))
        return 0;
    *l1 = fmin(fmax(theta, lo), hi);
    return 1;
}

/* Whether ρ(M) < limit, by ‖M^K‖_F^{1/K} for K = 2 … 2^SQUARINGS: M in x
 * (overwritten), y scratch, both n×n. Stops early when the bound's last
 * decrease, which halves from step to step once the powers are dominated
 * by their leading eigenvalues (the excess is ln c / K), cannot bring it
 * below the limit. */
static int rest_below(double *x, double *y, int n, double limit)
{
    size_t nn = (size_t)n * n;
    double s = sqrt(cblas_ddot((int)nn, x, 1, x, 1)), logc = log(s), prev = INFINITY;
    if (s == 0)
        return 1;
    cblas_dscal((int)nn, 1.0 / s, x, 1);
    for (int j = 1; j <= SQUARINGS; j++) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, x, n, x, n, 0.0,
                    y, n);
        s = sqrt(cblas_ddot((int)nn, y, 1, y, 1));
        if (s == 0)
            return 1; /* M nilpotent: ρ(M) = 0 */
        logc = 2.0 * logc + log(s);
        double bound = exp(ldexp(logc, -j));
        if (bound < limit)
            return 1;
        if (j >= 4 && bound - (prev - bound) >= limit)
            return 0;
        prev = bound;
        cblas_dscal((int)nn, 1.0 / s, y, 1);
        double *t = x;
        x = y;
        y = t;
    }
    return 0;
}

/* Two steps of inverse iteration from b (overwritten) with the LU factors
 * of the column-major a = Sᵀ − θI: trans 'N' gives y (Sᵀy = θy), 'T' gives
 * x (Sx = θx). A zero pivot (θ exact in floating point) was replaced by
 * the caller. */
static void inverse_steps_real(const double *a, const lapack_int *ipiv, int n, char trans,
                               double *b)
{
    for (int step = 0; step < 2; step++) {
        LAPACKE_dgetrs(LAPACK_COL_MAJOR, trans, n, 1, a, n, ipiv, b, n);
        cblas_dscal(n, 1.0 / cblas_dnrm2(n, b, 1), b, 1);
    }
}

static void inverse_steps_complex(const double complex *a, const lapack_int *ipiv, int n,
                                  char trans, double complex *b)
{
    for (int step = 0; step < 2; step++) {
        LAPACKE_zgetrs(LAPACK_COL_MAJOR, trans, n, 1, a, n, ipiv, b, n);
        cblas_zdscal(n, 1.0 / cblas_dznrm2(n, b, 1), b, 1);
    }
}

/* |uᴴx| over ‖u‖‖x‖ for θ = tr + i·ti of S, u and x LAPACK's left and right
 * eigenvectors (uᴴS = θuᴴ, Sx = θx), by inverse iteration on one LU of
 * Sᵀ − θI (the column-major view of the row-major S). AG_OK, AG_ENOMEM. */
static int theta_rcond(const double *S, int n, double tr, double ti, ag_matrix_work *w,
                       double *rcond)
{
    size_t nn = (size_t)n * n;
    lapack_int *ipiv = ag_work_get(w, AG_WK_IWORK, (size_t)n * sizeof *ipiv);
    double *v[2];
    gsl_rng *rng = ag_work_rng(w, SEED + 1);
    if (!ipiv || !rng || ag_work_vectors(w, AG_WK_VECTORS, 4 * (size_t)n, 2, v) != AG_OK)
        return AG_ENOMEM;
    double *x = v[0], *y = v[1], tiny = DBL_EPSILON * DBL_EPSILON;
    if (ti == 0) {
        double *a = ag_work_doubles(w, AG_WK_COPY2, nn);
        if (!a)
            return AG_ENOMEM;
        memcpy(a, S, nn * sizeof *a);
        for (int i = 0; i < n; i++)
            a[(size_t)i * n + i] -= tr;
        LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
        for (int i = 0; i < n; i++)
            if (a[(size_t)i * n + i] == 0)
                a[(size_t)i * n + i] = tiny;
        ag_fill_gaussian(rng, x, (size_t)n);
        memcpy(y, x, (size_t)n * sizeof *y);
        inverse_steps_real(a, ipiv, n, 'T', x);
        inverse_steps_real(a, ipiv, n, 'N', y);
        *rcond = ag_eigenvector_rcond(y, x, (size_t)n, 0);
        return AG_OK;
    }
    double complex *a = ag_work_get(w, AG_WK_COPY2, nn * sizeof *a), theta = CMPLX(tr, ti);
    if (!a)
        return AG_ENOMEM;
    for (size_t k = 0; k < nn; k++)
        a[k] = S[k];
    for (int i = 0; i < n; i++)
        a[(size_t)i * n + i] -= theta;
    LAPACKE_zgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
    for (int i = 0; i < n; i++)
        if (a[(size_t)i * n + i] == 0)
            a[(size_t)i * n + i] = tiny;
    double complex *xc = (double complex *)x, *yc = (double complex *)y;
    ag_fill_gaussian(rng, x, 2 * (size_t)n);
    memcpy(y, x, 2 * (size_t)n * sizeof *y);
    inverse_steps_complex(a, ipiv, n, 'T', xc);
    inverse_steps_complex(a, ipiv, n, 'N', yc);
    /* ag_eigenvector_rcond wants real parts then imaginary parts, and
     * LAPACK's u = conj(y) (yᵀS = θyᵀ) */
    double *vr = ag_work_doubles(w, AG_WK_COPY, 4 * (size_t)n);
    if (!vr)
        return AG_ENOMEM;
    double *vl = vr + 2 * (size_t)n;
    for (int i = 0; i < n; i++) {
        vr[i] = creal(xc[i]);
        vr[n + i] = cimag(xc[i]);
        vl[i] = creal(yc[i]);
        vl[n + i] = -cimag(yc[i]);
    }
    *rcond = ag_eigenvector_rcond(vl, vr, (size_t)n, 1);
    return AG_OK;
}

/* The eigenvalue of T's block at i with non-negative imaginary part (the
 * dense route's order: modulus, then real, then imaginary part
 * descending). */
static void block_eigenvalue(const double *t, int m, int i, double *tr, double *ti)
{
    *tr = t[(size_t)i * m + i];
    *ti = 0;
    if (block_size(t, m, i) == 2)
        *ti = sqrt(-t[(size_t)(i + 1) * m + i] * t[(size_t)i * m + i + 1]);
}

/* Whether θ₂ = tr + i·ti (the block at i2) is simple as analysis/eigen.c
 * decides it: |yᴴx| above nε and no other eigenvalue within
 * r = 8nε·λ₁/|yᴴx|. T's other eigenvalues (θ₂'s conjugate included) are
 * compared one by one; the rest lie below |θ₂|(1 − MARGIN), so farther
 * than r when r < MARGIN·|θ₂|/2. 1 simple, 0 not, −1 when rounding could
 * decide it either way (a distance within a factor 2 of r, or r reaching
 * the rest): the dense route then. */
static int theta_simple(const double *t, int m, int j, int i2, double tr, double ti,
                        double l1, double rcond, int n)
{
    double r = ag_lambda2_tie_radius((size_t)n, l1, rcond);
    if (r < 0)
        return 0;
    if (!(r < 0.5 * MARGIN * hypot(tr, ti)))
        return -1;
    int simple = 1;
    for (int i = 0; i < j; i += block_size(t, m, i)) {
        double a, b;
        block_eigenvalue(t, m, i, &a, &b);
        for (int sign = 1; sign >= (b > 0 ? -1 : 1); sign -= 2) {
            if (i == i2 && sign == 1)
                continue; /* θ₂ itself */
            double d = hypot(a - tr, sign * b - ti);
            if (d > 0.5 * r && d < 2.0 * r)
                return -1;
            simple &= d >= 2.0 * r;
        }
    }
    return simple;
}

/* ‖R[:, 0:c]‖_F of the n×j row-major R. */
static double leading_residual(const double *R, int n, int j, int c)
{
    double res = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++)
            res = hypot(res, R[(size_t)i * j + k]);
    return res;
}

/* Steps 2–4 on the converged leading j Schur vectors (Q in K->Vk); M is
 * n×n scratch. */
static int certify(krylov_schur *K, const double *S, double *M, int j, int want_cond,
                   ag_matrix_work *w, ag_top_two *out, int *certified)
{
    int n = K->n, m = K->m, i2 = 1, i3 = i2 + block_size(K->T, m, i2);
    double l1, tr, ti, *Q = K->Vk, *W = K->V, *R = K->V + (size_t)n * (KEEP + 2);
    if (block_size(K->T, m, 0) != 1 || i3 > j ||
        !perron_root(S, Q, n, K->T[0], W, &l1))
        return AG_OK;
    block_eigenvalue(K->T, m, i2, &tr, &ti);
    double l2 = hypot(tr, ti), third = i3 < j ? block_modulus(K->T, m, i3) : 0;
    if (!(l2 <= l1 * (1 - GAP_MIN)) || (want_cond && third >= l2 * (1 - TIE_TOL)))
        return AG_OK;
    /* W = SQᵀ, R = W − QᵀT_j, then M = S − WQ */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, j, n, 1.0, S, n, Q, n, 0.0, W, j);
    memcpy(R, W, (size_t)n * j * sizeof *R);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, n, j, j, -1.0, Q, n, K->T, m, 1.0, R, j);
    double res = leading_residual(R, n, j, i3);
    memcpy(M, S, (size_t)n * n * sizeof *M);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, j, -1.0, W, j, Q, n, 1.0, M,
                n);
    double *y = ag_work_doubles(w, AG_WK_COPY2, (size_t)n * n);
    if (!y)
        return AG_ENOMEM;
    if (!rest_below(M, y, n, l2 * (1 - MARGIN)))
        return AG_OK;
    double rcond = 0;
    int status = theta_rcond(S, n, tr, ti, w, &rcond);
    if (status != AG_OK || !(res <= EIG_TOL * l2 * rcond))
        return status;
    int simple = want_cond ? theta_simple(K->T, m, j, i2, tr, ti, l1, rcond, n) : 0;
    if (simple < 0)
        return AG_OK;
    out->l1 = l1;
    out->l2 = l2;
    out->rcond2 = simple ? rcond : 0;
    *certified = 1;
    return AG_OK;
}

int ag_lambda2_krylov(const double *S, size_t n, int want_cond, ag_matrix_work *w,
                      ag_top_two *out, int *certified)
{
    *certified = 0;
    if (n < NCV + 2 || n > 46340 || !non_negative(S, n))
        return AG_OK;
    double *M = ag_work_doubles(w, AG_WK_COPY, n * n);
    if (!M)
        return AG_ENOMEM;
    krylov_schur K = {0};
    int j = 0, status = ks_init(&K, S, (int)n, w);
    if (status == AG_OK)
        status = ks_start(&K, w);
    if (status != AG_OK || !ks_run(&K, &j))
        return status;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j, (int)n, K.m, 1.0, K.Z, K.m, K.V,
                (int)n, 0.0, K.Vk, (int)n);
    return certify(&K, S, M, j, want_cond, w, out, certified);
}
