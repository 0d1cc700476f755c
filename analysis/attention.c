/* attention.c — family B: properties of a square, normally row-stochastic,
 * attention matrix A (docs/metrics.md, family B).
 *
 * entropy: the Shannon entropy of each query's attention distribution
 *   (Clark et al. 2019, "What does BERT look at?", §3; Vig & Belinkov 2019).
 * lambda2_abs / spectral_gap: for a row-stochastic A, the second eigenvalue
 *   modulus bounds the mixing rate of the Markov chain A (Levin, Peres &
 *   Wilmer, Markov Chains and Mixing Times, §12.2).
 * fiedler: second-smallest eigenvalue of the normalised Laplacian of the
 *   symmetrised graph W = (A + Aᵀ)/2 (Chung, Spectral Graph Theory, §1.2).
 * lambda2_condition: 1/|y₂ᴴx₂| for unit left/right eigenvectors of λ₂, how
 *   much λ₂ (and so the gap) can move under a perturbation of A (Wilkinson,
 *   The Algebraic Eigenvalue Problem, §2.8; Golub & Van Loan §7.2.2).
 * asymmetry / symmetry_score: split A = S + N into symmetric and antisymmetric
 *   parts, ‖A‖² = ‖S‖² + ‖N‖² (Saponati et al. 2025).
 * head roles: attention_distance, the attention-weighted mean of |i − j|
 *   (Vig & Belinkov 2019, "Analyzing the structure of attention in a
 *   transformer language model"); self_mass and prev_token_mass, the
 *   positional heads of Clark et al. 2019 §3; max_mass, the "confidence" of
 *   Voita et al. 2019 ("Analyzing multi-head self-attention: specialized
 *   heads do the heavy lifting"); sink_ratio, the first key's mass against
 *   what uniform attention over the allowed keys gives it (the attention
 *   sink of Xiao et al. 2023), so that it does not fall with the length.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "analysis.h"

#define ON(m) (sel->on[m])
#define AT(i, j) A[(i) * n + (j)]

static int is_causal(const double *A, size_t n)
{
    if (n < 2)
        return 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (AT(i, j) != 0.0)
                return 0;
    return 1;
}

static int has_negative(const double *A, size_t n)
{
    for (size_t k = 0; k < n * n; k++)
        if (A[k] < 0.0)
            return 1;
    return 0;
}

/* Σ x_k with Neumaier's compensation, so that row_sum_error of an exactly
 * stochastic row is not swamped by rounding of the sum itself. */
static double row_sum(const double *row, size_t n)
{
    double s = 0, c = 0;
    for (size_t j = 0; j < n; j++) {
        double t = s + row[j];
        c += fabs(s) >= fabs(row[j]) ? (s - t) + row[j] : (row[j] - t) + s;
        s = t;
    }
    return s + c;
}

/* H·2^-e for a row whose entries are a_j = s_j·2^e:
 * −Σ a ln a = −2^e Σ s (ln s + e ln 2). */
static double row_entropy(const double *row, size_t n, int e)
{
    double h = 0, shift = (double)e * M_LN2;
    for (size_t j = 0; j < n; j++)
        if (row[j] > 0.0)
            h -= row[j] * (log(row[j]) + shift);
    return h;
}

/* Entropies of S = 2^-e·A when A is scaled (e ≠ 0: max|A| outside 2^±100),
 * where a ln a would overflow or be rounded to the subnormal grid term by
 * term; for 0 < e ≤ 512 of A itself, since ln s + e ln 2 cancels for the
 * entries a near 1 and a ln a cannot overflow there yet. */
static void entropy_keys(const double *A, const double *S, int e, size_t n, int causal,
                         int negative, const ag_metric_set *sel, ag_record *rec)
{
    if (negative) {
        if (ON(AG_M_ENTROPY_MEAN))
            ag_record_set(rec, AG_M_ENTROPY_MEAN, AG_V_NULL, 0);
        if (ON(AG_M_ENTROPY_NORMALIZED))
            ag_record_set(rec, AG_M_ENTROPY_NORMALIZED, AG_V_NULL, 0);
        if (ON(AG_M_SINK_MASS))
            ag_record_set(rec, AG_M_SINK_MASS, AG_V_NULL, 0);
        return;
    }
    int eh = e < 0 || e > 512 ? e : 0;
    const double *H = eh ? S : A;
    double sum_h = 0, sum_norm = 0, sink = 0;
    size_t rows_norm = 0;
    for (size_t i = 0; i < n; i++) {
        double h = row_entropy(H + i * n, n, eh);
        size_t s = causal ? i + 1 : n; /* keys the query may attend to */
        sum_h += h;
        if (s >= 2) {
            sum_norm += h / log((double)s);
            rows_norm++;
        }
        sink += S[i * n]; /* mean ≤ max|A|: 2^e·(Σ/n) cannot overflow */
    }
    if (ON(AG_M_ENTROPY_MEAN))
        ag_record_put(rec, AG_M_ENTROPY_MEAN, sum_h / (double)n, eh);
    if (ON(AG_M_ENTROPY_NORMALIZED) && !rows_norm)
        ag_record_set(rec, AG_M_ENTROPY_NORMALIZED, AG_V_NULL, 0);
    else if (ON(AG_M_ENTROPY_NORMALIZED))
        ag_record_put(rec, AG_M_ENTROPY_NORMALIZED, sum_norm / (double)rows_norm, eh);
    if (ON(AG_M_SINK_MASS))
        ag_record_put(rec, AG_M_SINK_MASS, sink / (double)n, e);
}

/* Whether λ₂ (re[1], im[1] of the sorted eigenvalues) is a simple eigenvalue
 * in floating point. The condition number 1/|y₂ᴴx₂| is defined only then: a
 * repeated λ₂ has no unique eigenvector pair (its value would depend on which
 * basis LAPACK happens to return), and a defective one has y₂ᴴx₂ = 0, which
 * rounding turns into |y₂ᴴx₂| ~ ε. So: no other eigenvalue within
 * 8·n·ε·|λ₁| of λ₂, and |y₂ᴴx₂| above n·ε. */
static int lambda2_simple(const double *re, const double *im, size_t n, double rcond2)
{
    double scale = hypot(re[0], im[0]), tol = 8.0 * (double)n * DBL_EPSILON * scale;
    if (!(rcond2 > (double)n * DBL_EPSILON))
        return 0;
    for (size_t k = 0; k < n; k++)
        if (k != 1 && hypot(re[k] - re[1], im[k] - im[1]) <= tol)
            return 0;
    return 1;
}

/* |λ₁|, |λ₂| and, when want_cond, |y₂ᴴx₂| (the reciprocal condition number
 * of λ₂). For a causal (lower-triangular) A the eigenvalues are its diagonal
 * exactly, so no eigensolver runs (docs/metrics.md, family B); its eigenvectors come from
 * back substitution. */
static int top_two(const double *A, size_t n, int causal, int want_cond, double *l1,
                   double *l2, double *rcond2)
{
    double *re = malloc(n * sizeof *re), *im = calloc(n, sizeof *im);
    double *rc = want_cond && !causal ? malloc(n * sizeof *rc) : NULL;
    int status = (re && im && (rc || !want_cond || causal)) ? AG_OK : AG_ENOMEM;
    if (status == AG_OK) {
        if (causal && want_cond) {
            status = ag_eig_triangular_condition(A, n, re, im, rcond2);
        } else if (causal) {
            for (size_t i = 0; i < n; i++)
                re[i] = AT(i, i);
            status = ag_eig_sort_by_modulus(re, im, n);
        } else if (want_cond) {
            status = ag_eig_general_condition(A, n, re, im, rc);
            if (status == AG_OK)
                *rcond2 = rc[1];
        } else {
            status = ag_eig_general_values(A, n, re, im);
        }
    }
    if (status == AG_OK) {
        *l1 = hypot(re[0], im[0]);
        *l2 = hypot(re[1], im[1]);
        if (want_cond && !lambda2_simple(re, im, n, *rcond2))
            *rcond2 = 0; /* no condition number: reported as null */
    }
    free(re);
    free(im);
    free(rc);
    return status;
}

/* 2W_ij = A_ij + A_ji, or W_ij = A_ij/2 + A_ji/2 when the sum could
 * overflow (max|A| ≥ 2^1023, `halve`): only ratios of W are used below. */
static double wpair(const double *A, size_t n, size_t i, size_t j, int halve)
{
    return halve ? 0.5 * AT(i, j) + 0.5 * AT(j, i) : AT(i, j) + AT(j, i);
}

/* Second-smallest eigenvalue of L = I − D^{-1/2} W D^{-1/2}, max|A| in
 * [2^(e-1), 2^e). Each row is measured against its own largest weight m_i:
 * with t_i = Σ_j W_ij/m_i (in [1, n]), W_ij/d_i = (W_ij/m_i)/t_i and
 * L_ij = −√(W_ij/d_i)·√(W_ij/d_j), factors in [0, 1]: no overflow for
 * weights near 1e308, no loss for a row of tiny weights next to large ones,
 * and exactly invariant under 2^k·A. */
static int fiedler_value(const double *A, size_t n, int e, double *value)
{
    double *L = malloc(n * n * sizeof *L), *mx = calloc(n, sizeof *mx), *t = calloc(n, sizeof *t);
    int status = L && mx && t ? AG_OK : AG_ENOMEM, halve = e > 1023;
    for (size_t i = 0; status == AG_OK && i < n; i++) {
        for (size_t j = 0; j < n; j++)
            mx[i] = fmax(mx[i], wpair(A, n, i, j, halve));
        for (size_t j = 0; mx[i] > 0 && j < n; j++)
            t[i] += wpair(A, n, i, j, halve) / mx[i];
    }
    for (size_t i = 0; status == AG_OK && i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double w = wpair(A, n, i, j, halve), ri = mx[i] > 0 ? w / mx[i] / t[i] : 0,
                   rj = mx[j] > 0 ? w / mx[j] / t[j] : 0;
            L[i * n + j] = (i == j ? 1.0 - ri : -sqrt(ri) * sqrt(rj));
        }
    if (status == AG_OK)
        status = ag_eig_symmetric_kth(L, n, 2, value);
    free(L);
    free(mx);
    free(t);
    return status;
}

/* ‖S‖_F² and ‖N‖_F² relative to ‖A‖_F², computed on A / max|A| so that
 * squares cannot overflow. Returns 0 when A = 0. */
static int symmetry_split(const double *A, size_t n, double *sym2, double *anti2)
{
    double amax = 0;
    for (size_t k = 0; k < n * n; k++)
        amax = fmax(amax, fabs(A[k]));
    if (amax == 0)
        return 0;
    double s2 = 0, n2 = 0, a2 = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double a = AT(i, j) / amax, b = AT(j, i) / amax;
            s2 += 0.25 * (a + b) * (a + b);
            n2 += 0.25 * (a - b) * (a - b);
            a2 += a * a;
        }
    *sym2 = s2 / a2;
    *anti2 = n2 / a2;
    return 1;
}

/* Eigenvalues from S = 2^-e·A, moduli scaled back by 2^e; the Laplacian
 * from A (fiedler_value is scale-free by construction). */
static int spectral_keys(const double *A, const double *S, int e, size_t n, int causal,
                         int negative, const ag_metric_set *sel, ag_record *rec)
{
    int want_cond = ON(AG_M_LAMBDA2_CONDITION);
    int want_eig = ON(AG_M_LAMBDA2_ABS) || ON(AG_M_SPECTRAL_GAP) || want_cond;
    if (want_eig) {
        double l1 = 0, l2 = 0, rcond2 = 0;
        int ok = n >= 2;
        if (ok) {
            int status = top_two(S, n, causal, want_cond, &l1, &l2, &rcond2);
            if (status != AG_OK)
                return status;
        }
        /* 1/|y₂ᴴx₂|, null when λ₂ is not simple (see lambda2_simple). */
        if (want_cond)
            ag_record_set(rec, AG_M_LAMBDA2_CONDITION,
                          ok && rcond2 > 0 ? AG_V_NUMBER : AG_V_NULL,
                          ok && rcond2 > 0 ? 1.0 / rcond2 : 0);
        if (ON(AG_M_LAMBDA2_ABS))
            ag_record_put(rec, AG_M_LAMBDA2_ABS, ok ? l2 : NAN, e);
        if (ON(AG_M_SPECTRAL_GAP))
            ag_record_put(rec, AG_M_SPECTRAL_GAP, ok ? l1 - l2 : NAN, e);
    }
    if (ON(AG_M_FIEDLER)) {
        double f = 0;
        int ok = n >= 2 && !negative;
        if (ok) {
            int status = fiedler_value(A, n, e, &f);
            if (status != AG_OK)
                return status;
        }
        ag_record_set(rec, AG_M_FIEDLER, ok ? AG_V_NUMBER : AG_V_NULL, f);
    }
    return AG_OK;
}

/* The head-role keys from S = 2^-e·A (each is homogeneous of degree 1 in
 * A, so it is S's value times 2^e). k_i, the keys row i may attend to, is
 * i + 1 in a causal matrix and n otherwise, as for entropy_normalized: a
 * row whose first key is its only one (row 0 of a causal head, any row of a
 * 1×1 matrix) says nothing about a sink and is left out of sink_ratio. */
static void role_keys(const double *S, int e, size_t n, int causal, const ag_metric_set *sel,
                      ag_record *rec)
{
    double dist = 0, self = 0, prev = 0, top = 0, sink = 0;
    size_t sink_rows = 0;
    for (size_t i = 0; i < n; i++) {
        const double *row = S + i * n;
        double d = 0, mx = row[0];
        for (size_t j = 0; j < n; j++) {
            d += row[j] * (double)(i > j ? i - j : j - i);
            mx = fmax(mx, row[j]);
        }
        size_t k = causal ? i + 1 : n;
        dist += d;
        self += row[i];
        prev += i ? row[i - 1] : 0;
        top += mx;
        if (k >= 2) {
            sink += row[0] * (double)k;
            sink_rows++;
        }
    }
    if (ON(AG_M_ATTENTION_DISTANCE))
        ag_record_put(rec, AG_M_ATTENTION_DISTANCE, dist / (double)n, e);
    if (ON(AG_M_SELF_MASS))
        ag_record_put(rec, AG_M_SELF_MASS, self / (double)n, e);
    if (ON(AG_M_PREV_TOKEN_MASS))
        ag_record_put(rec, AG_M_PREV_TOKEN_MASS, n >= 2 ? prev / (double)(n - 1) : NAN, e);
    if (ON(AG_M_MAX_MASS))
        ag_record_put(rec, AG_M_MAX_MASS, top / (double)n, e);
    if (ON(AG_M_SINK_RATIO))
        ag_record_put(rec, AG_M_SINK_RATIO, sink_rows ? sink / (double)sink_rows : NAN, e);
}

/* max_i |Σ_j A_ij − 1| from the rows of S = 2^-e·A, whose sums cannot
 * overflow; null when a row's sum lies beyond the double range. */
static void row_sum_error(const double *S, int e, size_t n, ag_record *rec)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(ldexp(row_sum(S + i * n, n), e) - 1.0));
    ag_record_set(rec, AG_M_ROW_SUM_ERROR, isfinite(worst) ? AG_V_NUMBER : AG_V_NULL,
                  isfinite(worst) ? worst : 0);
}

int ag_attention_family(const double *A, const double *S, int e, size_t n,
                        const ag_metric_set *sel, ag_record *rec)
{
    const int causal = is_causal(A, n);
    const int negative = has_negative(A, n);

    if (ON(AG_M_CAUSAL))
        ag_record_set(rec, AG_M_CAUSAL, AG_V_BOOL, causal);
    if (ON(AG_M_ROW_SUM_ERROR))
        row_sum_error(S, e, n, rec);
    entropy_keys(A, S, e, n, causal, negative, sel, rec);
    role_keys(S, e, n, causal, sel, rec);
    int status = spectral_keys(A, S, e, n, causal, negative, sel, rec);
    if (status != AG_OK)
        return status;
    if (ON(AG_M_ASYMMETRY) || ON(AG_M_SYMMETRY_SCORE)) {
        double sym2 = 0, anti2 = 0;
        int ok = symmetry_split(A, n, &sym2, &anti2);
        if (ON(AG_M_ASYMMETRY))
            ag_record_set(rec, AG_M_ASYMMETRY, ok ? AG_V_NUMBER : AG_V_NULL,
                          sqrt(anti2));
        if (ON(AG_M_SYMMETRY_SCORE))
            ag_record_set(rec, AG_M_SYMMETRY_SCORE, ok ? AG_V_NUMBER : AG_V_NULL,
                          sym2);
    }
    return AG_OK;
}
