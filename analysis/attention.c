/* attention.c — family B: properties of a normally row-stochastic
 * attention matrix A (docs/metrics.md, family B): m×n, the row keys
 * (row_sum_error, entropy_mean, entropy_normalized, sink_mass, max_mass,
 * sink_ratio) for any shape, cross-attention's [targets × sources] among
 * them; the keys that compare a row with its own column (the diagonal,
 * Aᵀ, eigenvalues, token positions i − j) for a square A only, null
 * otherwise.
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
 * head detectors: prev_token_ratio and self_ratio, A_{i,i−1} and A_ii
 *   against uniform attention as sink_ratio measures A_i0 (the previous-token
 *   and self heads of Clark et al. 2019 §3 and of TransformerLens's
 *   head_detector); with the token ids, ag_token_pattern_metrics:
 *   duplicate_token_score and induction_score, TransformerLens's
 *   head_detector patterns and "mul" score (the induction heads of Olsson
 *   et al. 2022, "In-context learning and induction heads"), and their
 *   scores under uniform attention.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define ON(m) (sel->on[m])
#define AT(i, j) A[(i) * n + (j)]

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
 * −Σ a ln a = −2^e Σ s (ln s + e ln 2), summed in j's order; the logs a
 * block at a time (ag_log_positive, analysis/vlog.c). */
static double row_entropy(const double *row, size_t n, int e)
{
    enum { BLOCK = 256 };
    double h = 0, shift = (double)e * M_LN2, lg[BLOCK];
    for (size_t j0 = 0; j0 < n; j0 += BLOCK) {
        size_t cnt = n - j0 < BLOCK ? n - j0 : BLOCK;
        ag_log_positive(row + j0, lg, cnt);
        for (size_t j = 0; j < cnt; j++)
            if (row[j0 + j] > 0.0)
                h -= row[j0 + j] * (lg[j] + shift);
    }
    return h;
}

/* Entropies of S = 2^-e·A when A is scaled (e ≠ 0: max|A| outside 2^±100),
 * where a ln a would overflow or be rounded to the subnormal grid term by
 * term; for 0 < e ≤ 512 of A itself, since ln s + e ln 2 cancels for the
 * entries a near 1 and a ln a cannot overflow there yet: the exponent the
 * row entropies are scaled by, and the matrix they are read from. */
static int entropy_scale(const double *A, const double *S, int e, const double **H)
{
    int eh = e < 0 || e > 512 ? e : 0;
    *H = eh ? S : A;
    return eh;
}

double ag_entropy_sum(const double *A, const double *S, int e, size_t m, size_t n, int *eh)
{
    const double *H;
    *eh = entropy_scale(A, S, e, &H);
    double sum = 0;
    for (size_t i = 0; i < m; i++)
        sum += row_entropy(H + i * n, n, *eh);
    return sum;
}

/* The entropy keys and sink_mass of the m×n A (S = 2^-e·A): means over the
 * m rows; s_i, the keys row i may attend to, is n unless A is causal. */
static void entropy_keys(const double *A, const double *S, int e, size_t m, size_t n, int causal,
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
    const double *H;
    int eh = entropy_scale(A, S, e, &H);
    double sum_h = 0, sum_norm = 0, sink = 0;
    size_t rows_norm = 0;
    const int normalized = ON(AG_M_ENTROPY_NORMALIZED);
    for (size_t i = 0; i < m; i++) {
        size_t s = causal ? i + 1 : n; /* keys the query may attend to */
        /* a causal row's entries past s are 0 and add nothing: the same sum */
        double h = row_entropy(H + i * n, s, eh);
        sum_h += h;
        if (normalized && s >= 2) {
            sum_norm += h / log((double)s);
            rows_norm++;
        }
        sink += S[i * n]; /* mean ≤ max|A|: 2^e·(Σ/n) cannot overflow */
    }
    if (ON(AG_M_ENTROPY_MEAN))
        ag_record_put(rec, AG_M_ENTROPY_MEAN, sum_h / (double)m, eh);
    if (ON(AG_M_ENTROPY_NORMALIZED) && !rows_norm)
        ag_record_set(rec, AG_M_ENTROPY_NORMALIZED, AG_V_NULL, 0);
    else if (ON(AG_M_ENTROPY_NORMALIZED))
        ag_record_put(rec, AG_M_ENTROPY_NORMALIZED, sum_norm / (double)rows_norm, eh);
    if (ON(AG_M_SINK_MASS))
        ag_record_put(rec, AG_M_SINK_MASS, sink / (double)m, e);
}

/* W = (S + Sᵀ)·2 into Wm, in tiles so that S's columns are read from
 * cache. S = 2^-e·A: the sums cannot overflow. */
#define TILE 64
static void symmetrise(const double *S, size_t n, double *Wm)
{
    for (size_t i0 = 0; i0 < n; i0 += TILE)
        for (size_t j0 = 0; j0 < n; j0 += TILE)
            for (size_t i = i0; i < n && i < i0 + TILE; i++)
                for (size_t j = j0; j < n && j < j0 + TILE; j++)
                    Wm[i * n + j] = S[i * n + j] + S[j * n + i];
}

/* From this n on, Lanczos beats dsyevr (docs/performance.md, "Krylov
 * routes": 1.1× at n = 256, 2× at 512, 3× at 1024; below, dsyevr is
 * faster). */
#define FIEDLER_KRYLOV_MIN 256

/* u = D^{1/2}𝟙 normalised, L's null vector (analysis/fiedler.c), with
 * d_i = t_i·p_i and p_i = 1/(p0[i]·p1[i]); 0 when a vertex is isolated
 * (t_i = 0: L_ii = 1 there, and D^{1/2}𝟙 is no null vector). */
static int null_vector(const double *p0, const double *p1, const double *t, size_t n,
                       double *u)
{
    double norm2 = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i] > 0))
            return 0;
        u[i] = sqrt(t[i]) / sqrt(p0[i]) / sqrt(p1[i]);
        big = u[i] > big ? u[i] : big;
    }
    for (size_t i = 0; i < n; i++) {
        u[i] /= big;
        norm2 += u[i] * u[i];
    }
    for (size_t i = 0; i < n; i++)
        u[i] /= sqrt(norm2);
    return 1;
}

/* Second-smallest eigenvalue of L = I − D^{-1/2} W D^{-1/2}, from
 * S = 2^-e·A (only ratios of W enter). Each row is measured against the
 * power of two p_i at or above its largest weight (exact): with
 * t_i = Σ_j W_ij/p_i (in [0.5, n]), W_ij/d_i = (W_ij/p_i)/t_i and
 * L_ij = −√(W_ij/d_i)·√(W_ij/d_j), factors in [0, 1]: no overflow, no loss
 * for a row of tiny weights next to large ones, and exactly invariant under
 * 2^k·A. L is formed over W in place, only the triangle dsyevr reads
 * (row-major j ≤ i, the column-major upper one). */
static int fiedler_value(const double *S, size_t n, ag_matrix_work *w, double *value)
{
    double *L = ag_work_doubles(w, AG_WK_COPY, n * n), *v[4];
    if (!L || ag_work_vectors(w, AG_WK_VECTORS, n, 4, v) != AG_OK)
        return AG_ENOMEM;
    double *p0 = v[0], *p1 = v[1], *t = v[2]; /* row i: 1/p_i = p0[i]·p1[i] */
    symmetrise(S, n, L);
    for (size_t i = 0; i < n; i++) {
        double p[2];
        ag_pow2_factors(ag_max_abs(L + i * n, n), p);
        p0[i] = p[0];
        p1[i] = p[1];
        t[i] = ag_scaled_sum(L + i * n, n, p);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double wij = L[i * n + j], ri = t[i] > 0 ? wij * p0[i] * p1[i] / t[i] : 0,
                   rj = t[j] > 0 ? wij * p0[j] * p1[j] / t[j] : 0;
            L[i * n + j] = (i == j ? 1.0 - ri : -sqrt(ri) * sqrt(rj));
        }
    int certified = 0;
    if (n >= FIEDLER_KRYLOV_MIN && null_vector(p0, p1, t, n, v[3])) {
        int status = ag_fiedler_krylov(L, v[3], n, w, value, &certified);
        if (status != AG_OK)
            return status;
    }
    ag_work_count(w, certified ? AG_WC_FIEDLER_KRYLOV : AG_WC_FIEDLER_DENSE);
    return certified ? AG_OK : ag_lapack_sym_kth(L, n, 2, value, w);
}

/* ‖S‖_F² and ‖N‖_F² relative to ‖A‖_F², from S = 2^-e·A (the same
 * ratios; its squares cannot overflow, and those that underflow are below
 * 2^-800 of the largest). Each pair {i, j} once, in tiles so that the
 * transposed entries are read from cache:
 * ‖S‖² = Σ_i a_ii² + ½Σ_{i<j}(a_ij + a_ji)², ‖N‖² = ½Σ_{i<j}(a_ij − a_ji)².
 * Returns 0 when A = 0. */
static int symmetry_split(const double *S, size_t n, double *sym2, double *anti2)
{
    double diag = 0, plus = 0, minus = 0, off = 0;
    for (size_t i = 0; i < n; i++)
        diag += S[i * n + i] * S[i * n + i];
    for (size_t i0 = 0; i0 < n; i0 += TILE)
        for (size_t j0 = i0; j0 < n; j0 += TILE)
            for (size_t i = i0; i < n && i < i0 + TILE; i++)
                for (size_t j = j0 > i ? j0 : i + 1; j < n && j < j0 + TILE; j++) {
                    double a = S[i * n + j], b = S[j * n + i];
                    plus += (a + b) * (a + b);
                    minus += (a - b) * (a - b);
                    off += a * a + b * b;
                }
    double all = diag + off;
    if (all == 0)
        return 0;
    *sym2 = (diag + 0.5 * plus) / all;
    *anti2 = 0.5 * minus / all;
    return 1;
}

/* Eigenvalues from S = 2^-e·A, moduli scaled back by 2^e; fiedler is
 * scale-free by construction. */
static int spectral_keys(const double *A, const double *S, int e, size_t n, int causal,
                         int negative, const ag_metric_set *sel, ag_matrix_work *w,
                         ag_record *rec)
{
    int want_cond = ON(AG_M_LAMBDA2_CONDITION);
    int want_eig = ON(AG_M_LAMBDA2_ABS) || ON(AG_M_SPECTRAL_GAP) || want_cond;
    if (want_eig) {
        ag_top_two t = {0};
        int ok = n >= 2;
        if (ok) {
            int status = ag_eig_top_two(S, n, causal, want_cond, w, &t);
            if (status != AG_OK)
                return status;
        }
        /* 1/|y₂ᴴx₂|, null when λ₂ is not simple (analysis/eigen.c). */
        if (want_cond)
            ag_record_set(rec, AG_M_LAMBDA2_CONDITION,
                          ok && t.rcond2 > 0 ? AG_V_NUMBER : AG_V_NULL,
                          ok && t.rcond2 > 0 ? 1.0 / t.rcond2 : 0);
        if (ON(AG_M_LAMBDA2_ABS))
            ag_record_put(rec, AG_M_LAMBDA2_ABS, ok ? t.l2 : NAN, e);
        if (ON(AG_M_SPECTRAL_GAP))
            ag_record_put(rec, AG_M_SPECTRAL_GAP, ok ? t.l1 - t.l2 : NAN, e);
    }
    if (ON(AG_M_FIEDLER)) {
        double f = 0;
        int ok = n >= 2 && !negative;
        if (ok) {
            int status = fiedler_value(S, n, w, &f);
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
 * 1×1 matrix) says nothing about a sink and is left out of sink_ratio;
 * self_ratio and prev_token_ratio weigh A_ii and A_{i,i−1} by k_i the same
 * way, over the same rows (prev_token_ratio: those with i ≥ 1). For an
 * m×n S (m ≠ n) only max_mass and sink_ratio (k_i = n) are defined: the
 * others read the diagonal or the distance |i − j| between a query's and a
 * key's positions, which two different sequences (cross-attention's
 * targets and sources) do not share; they are null. */
static void role_keys(const double *S, int e, size_t m, size_t n, int causal,
                      const ag_metric_set *sel, ag_record *rec)
{
    const int square = m == n;
    double dist = 0, self = 0, prev = 0, top = 0, sink = 0, self_k = 0, prev_k = 0;
    size_t sink_rows = 0, prev_rows = 0;
    for (size_t i = 0; i < m; i++) {
        const double *row = S + i * n;
        double d = 0, mx = row[0];
        for (size_t j = 0; j < n; j++) {
            if (square)
                d += row[j] * (double)(i > j ? i - j : j - i);
            mx = row[j] > mx ? row[j] : mx;
        }
        size_t k = causal ? i + 1 : n;
        dist += d;
        self += square ? row[i] : 0;
        prev += square && i ? row[i - 1] : 0;
        top += mx;
        if (k >= 2) { /* the rows of sink_ratio, self_ratio and (i ≥ 1) prev_token_ratio */
            sink += row[0] * (double)k;
            self_k += square ? row[i] * (double)k : 0;
            sink_rows++;
            if (i && square) {
                prev_k += row[i - 1] * (double)k;
                prev_rows++;
            }
        }
    }
    if (ON(AG_M_ATTENTION_DISTANCE))
        ag_record_put(rec, AG_M_ATTENTION_DISTANCE, square ? dist / (double)n : NAN, e);
    if (ON(AG_M_SELF_MASS))
        ag_record_put(rec, AG_M_SELF_MASS, square ? self / (double)n : NAN, e);
    if (ON(AG_M_PREV_TOKEN_MASS))
        ag_record_put(rec, AG_M_PREV_TOKEN_MASS, square && n >= 2 ? prev / (double)(n - 1) : NAN, e);
    if (ON(AG_M_MAX_MASS))
        ag_record_put(rec, AG_M_MAX_MASS, top / (double)m, e);
    if (ON(AG_M_SINK_RATIO))
        ag_record_put(rec, AG_M_SINK_RATIO, sink_rows ? sink / (double)sink_rows : NAN, e);
    if (ON(AG_M_PREV_TOKEN_RATIO))
        ag_record_put(rec, AG_M_PREV_TOKEN_RATIO, prev_rows ? prev_k / (double)prev_rows : NAN, e);
    if (ON(AG_M_SELF_RATIO))
        ag_record_put(rec, AG_M_SELF_RATIO, square && sink_rows ? self_k / (double)sink_rows : NAN, e);
}

/* max_i |Σ_j A_ij − 1| from the m rows of S = 2^-e·A, whose sums cannot
 * overflow; null when a row's sum lies beyond the double range. */
static void row_sum_error(const double *S, int e, size_t m, size_t n, ag_record *rec)
{
    double worst = 0;
    for (size_t i = 0; i < m; i++) {
        double err = fabs(ldexp(row_sum(S + i * n, n), e) - 1.0);
        worst = err > worst ? err : worst;
    }
    ag_record_set(rec, AG_M_ROW_SUM_ERROR, isfinite(worst) ? AG_V_NUMBER : AG_V_NULL,
                  isfinite(worst) ? worst : 0);
}

/* The keys of a square matrix only: null for an m×n one, m ≠ n. */
static void square_only_null(const ag_metric_set *sel, ag_record *rec)
{
    static const ag_metric keys[] = {AG_M_CAUSAL, AG_M_LAMBDA2_ABS, AG_M_SPECTRAL_GAP,
                                     AG_M_LAMBDA2_CONDITION, AG_M_FIEDLER, AG_M_ASYMMETRY,
                                     AG_M_SYMMETRY_SCORE};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (ON(keys[k]))
            ag_record_set(rec, keys[k], AG_V_NULL, 0);
}

/* The keys that need A's shape to be square (eigenvalues, Aᵀ). */
static int square_keys(const double *A, const double *S, int e, size_t n, int causal,
                       int negative, const ag_metric_set *sel, ag_matrix_work *w,
                       ag_record *rec)
{
    if (ON(AG_M_CAUSAL))
        ag_record_set(rec, AG_M_CAUSAL, AG_V_BOOL, causal);
    int status = spectral_keys(A, S, e, n, causal, negative, sel, w, rec);
    if (status != AG_OK)
        return status;
    if (ON(AG_M_ASYMMETRY) || ON(AG_M_SYMMETRY_SCORE)) {
        double sym2 = 0, anti2 = 0;
        int ok = symmetry_split(S, n, &sym2, &anti2);
        if (ON(AG_M_ASYMMETRY))
            ag_record_set(rec, AG_M_ASYMMETRY, ok ? AG_V_NUMBER : AG_V_NULL,
                          sqrt(anti2));
        if (ON(AG_M_SYMMETRY_SCORE))
            ag_record_set(rec, AG_M_SYMMETRY_SCORE, ok ? AG_V_NUMBER : AG_V_NULL,
                          sym2);
    }
    return AG_OK;
}

int ag_attention_family(const double *A, const double *S, int e, size_t m, size_t n,
                        const ag_matrix_facts *f, const ag_metric_set *sel, ag_matrix_work *w,
                        ag_record *rec)
{
    const int square = m == n;
    const int causal = ag_facts_causal(f, m, n), negative = f->negative;

    if (ON(AG_M_ROW_SUM_ERROR))
        row_sum_error(S, e, m, n, rec);
    if (ON(AG_M_ENTROPY_MEAN) || ON(AG_M_ENTROPY_NORMALIZED) || ON(AG_M_SINK_MASS))
        entropy_keys(A, S, e, m, n, causal, negative, sel, rec);
    static const ag_metric roles[] = {AG_M_ATTENTION_DISTANCE, AG_M_SELF_MASS,
                                      AG_M_PREV_TOKEN_MASS,    AG_M_MAX_MASS,
                                      AG_M_SINK_RATIO,         AG_M_PREV_TOKEN_RATIO,
                                      AG_M_SELF_RATIO};
    for (size_t k = 0; k < sizeof roles / sizeof *roles; k++)
        if (ON(roles[k])) {
            role_keys(S, e, m, n, causal, sel, rec);
            break;
        }
    /* the token-pattern keys need the ids: ag_token_pattern_metrics */
    for (int k = AG_M_DUPLICATE_TOKEN_SCORE; k <= AG_M_INDUCTION_BASELINE; k++)
        if (ON(k))
            ag_record_set(rec, (ag_metric)k, AG_V_NULL, 0);
    if (!square) {
        square_only_null(sel, rec);
        return AG_OK;
    }
    return square_keys(A, S, e, n, causal, negative, sel, w, rec);
}

/* ---- head detectors that need the token ids (attngeom/metrics.h) -------- */

/* TransformerLens's patterns (transformer_lens/head_detector.py):
 * get_duplicate_token_head_detection_pattern is tril(ids_i = ids_j) with
 * its diagonal set to 0, so D_ij = 1 iff j < i and ids[j] = ids[i];
 * get_induction_head_detection_pattern rolls it one column right, zeroes
 * column 0 and takes tril again, so D_i,j+1 = 1 for the same pairs (j + 1
 * ≤ i: no 1 is lost). Each pair (i, j) with j < i and ids[j] = ids[i] is a
 * 1 of row i in both; R, the rows holding one, is the same for both, and so
 * is each row's count c_i. The score, their "mul" measure over R (see
 * metrics.h), is a ratio: it is summed on 2^-e·A (largest entry in
 * [0.5, 1), ag_pow2_factors), where no sum can overflow nor a subnormal
 * lose its digits. */
int ag_token_pattern_metrics(const double *A, size_t n, int causal, const int32_t *ids,
                             const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    static const ag_metric keys[] = {AG_M_DUPLICATE_TOKEN_SCORE, AG_M_DUPLICATE_TOKEN_BASELINE,
                                     AG_M_INDUCTION_SCORE, AG_M_INDUCTION_BASELINE};
    if (!A || !sel || !rec || n == 0)
        return ag_error_set(err, AG_EINVAL, "token patterns: %s",
                            n ? "no matrix, selection or record" : "empty matrix");
    if (n > SIZE_MAX / sizeof(double) / n)
        return ag_error_set(err, AG_ELIMIT, "token patterns: %zux%zu matrix: too large", n, n);
    int any = 0;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        any |= ON(keys[k]);
    if (!any) /* nothing to read A for: every head of a pass comes here */
        return AG_OK;
    ag_matrix_facts f;
    if (ag_matrix_scan_finite(A, n, n, &f, err) != AG_OK)
        return AG_ENONFINITE;
    double dup = 0, ind = 0, mass = 0, base = 0;
    size_t rows = 0;
    if (ids) {
        if (causal < 0)
            causal = ag_facts_causal(&f, n, n);
        double p[2];
        ag_pow2_factors(f.amax, p);
        for (size_t i = 0; i < n; i++) {
            const double *row = A + i * n;
            double d = 0, t = 0;
            size_t c = 0;
            for (size_t j = 0; j < i; j++)
                if (ids[j] == ids[i]) {
                    d += row[j] * p[0] * p[1];
                    t += row[j + 1] * p[0] * p[1];
                    c++;
                }
            if (!c)
                continue;
            dup += d;
            ind += t;
            mass += ag_scaled_sum(row, n, p);
            base += (double)c / (double)(causal ? i + 1 : n);
            rows++;
        }
    }
    int scored = rows && mass != 0;
    const double value[] = {scored ? dup / mass : NAN, rows ? base / (double)rows : NAN,
                            scored ? ind / mass : NAN, rows ? base / (double)rows : NAN};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (ON(keys[k]))
            ag_record_set(rec, keys[k], isfinite(value[k]) ? AG_V_NUMBER : AG_V_NULL,
                          isfinite(value[k]) ? value[k] : 0);
    return AG_OK;
}

/* ---- the induction probe (attngeom/metrics.h) ---------------------------- */

/* Olsson et al. 2022 (§"Induction heads", and their appendix's repeated
 * random tokens) measure an induction head on a random block repeated: at
 * each position of a later copy, the attention on the key right after the
 * previous copy of the same token, i − T + 1. ARENA's induction_score_hook
 * (the TransformerLens tutorial) is that stripe's mean; here it is taken
 * over the rows of blocks 2..R only, so that no row of the first block,
 * whose token has no earlier copy, counts. */
int ag_induction_probe_metrics(const double *A, size_t n, int causal, size_t start, size_t length,
                               int repeats, ag_record *rec, ag_error *err)
{
    if (!A || !rec || n == 0)
        return ag_error_set(err, AG_EINVAL, "induction probe: %s",
                            n ? "no matrix or record" : "empty matrix");
    if (length == 0 || repeats < 2 || start > n || (n - start) / length < (size_t)repeats)
        return ag_error_set(err, AG_EINVAL, "induction probe: %d blocks of %zu tokens from "
                            "position %zu do not fit a %zux%zu matrix (2 blocks of 1 at least)",
                            repeats, length, start, n, n);
    ag_matrix_facts f;
    if (ag_matrix_scan_finite(A, n, n, &f, err) != AG_OK)
        return AG_ENONFINITE;
    if (causal < 0)
        causal = ag_facts_causal(&f, n, n);
    double score = 0, base = 0;
    size_t first = start + length, end = start + (size_t)repeats * length;
    for (size_t i = first; i < end; i++) {
        score += AT(i, i - length + 1);
        base += 1.0 / (double)(causal ? i + 1 : n);
    }
    ag_record_set(rec, AG_M_INDUCTION_SCORE, AG_V_NUMBER, score / (double)(end - first));
    ag_record_set(rec, AG_M_INDUCTION_BASELINE, AG_V_NUMBER, base / (double)(end - first));
    return AG_OK;
}
