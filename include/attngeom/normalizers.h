/* attngeom/normalizers.h — the same attention scores under other
 * normalisers (issue 28, "Softmax as a lens"): a counterfactual on one row
 * of a head's pre-softmax scores (ag_layer_view.scores, `attention
 * --scores`), never a change to the forward pass.
 *
 * A row is n scores s_j; an entry −inf is a masked key (causal, sliding
 * window) and gets probability exactly 0; the others are the row's allowed
 * keys, over which each normaliser gives a probability vector:
 *   softmax, temperature T  p_j = exp(s_j/T) / Σ_k exp(s_k/T)
 *   sparsemax               p = argmin_{p∈Δ} ‖p − s‖² = [s − τ]₊
 *                           (Martins & Astudillo 2016, §2.2, Algorithm 1:
 *                           exact, by sorting)
 *   entmax15                1.5-entmax, p = [s/2 − τ]₊² (Peters, Niculae
 *                           & Martins 2019, §3.2 and Algorithm 2: exact,
 *                           by sorting)
 *   entmax:α, α ∈ (1, 2]    α-entmax, p = [(α−1)s − τ]₊^{1/(α−1)}, τ by
 *                           bisection until Σp = 1 within 1e-12 (the
 *                           `entmax` package's entmax_bisect, Peters et
 *                           al. 2019, §3.1), then p / Σp; α = 2 is
 *                           sparsemax, α → 1 softmax
 *   linear                  p_j = φ(q)ᵀφ(k_j) / Σ_k φ(q)ᵀφ(k_k), φ = elu + 1
 *                           (Katharopoulos et al. 2020, §3.2, eq. 7), from
 *                           the head's query and keys rather than scores.
 * Every row function is pure (no allocation, no state) and thread-safe.
 * ag_lens_metrics (family K, at the end) measures a head's own scores with
 * them.
 */
#ifndef ATTNGEOM_NORMALIZERS_H
#define ATTNGEOM_NORMALIZERS_H

#include "core.h"
#include "stability.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which normaliser (the values are part of the ABI). */
typedef enum {
    AG_NORMALIZER_SOFTMAX,   /* parameter: the temperature T > 0 (1: the model's) */
    AG_NORMALIZER_SPARSEMAX,
    AG_NORMALIZER_ENTMAX15,
    AG_NORMALIZER_ENTMAX,    /* parameter: α in (1, 2] */
    AG_NORMALIZER_LINEAR,    /* from Q and K: ag_linear_attention_row */
    AG_NORMALIZER_COUNT
} ag_normalizer;

/* Parse a normaliser's name as the CLI's --normalizer takes it: "softmax",
 * "sparsemax", "entmax15", "entmax:ALPHA" (α in (1, 2]; *param = α), or
 * "linear"; *param is 1 for the others (softmax's temperature). Errors:
 * AG_EINVAL naming the text and the accepted names, or α outside (1, 2]. */
AG_EXPORT int ag_normalizer_parse(const char *name, ag_normalizer *kind, double *param,
                                  ag_error *err);

/* The canonical name of kind ("softmax", ..., "linear"; "entmax" for
 * AG_NORMALIZER_ENTMAX), NULL for a value outside the enum. Static. */
AG_EXPORT const char *ag_normalizer_name(ag_normalizer kind);

/* softmax(s/T) over the allowed keys of s[0..n-1] into p[0..n-1] (masked
 * keys 0), max-subtracted: a large T gives the uniform row, a small one
 * the argmax with ties split evenly. Errors: AG_EINVAL (n = 0, NULL, T not
 * finite and > 0, no allowed key), AG_ENONFINITE (a NaN or +inf score). s
 * and p may be the same array. */
AG_EXPORT int ag_softmax_row(const double *s, size_t n, double T, double *p, ag_error *err);

/* sparsemax of the allowed keys of s into p (masked keys 0): the scores
 * less their maximum, sorted in p (no other memory), k = max{k : 1 + k·z_(k)
 * > Σ_{j≤k} z_(j)}, τ = (Σ_{j≤k} z_(j) − 1)/k, p_j = max(z_j − τ, 0).
 * Errors as ag_softmax_row's. s and p must not overlap. */
AG_EXPORT int ag_sparsemax_row(const double *s, size_t n, double *p, ag_error *err);

/* 1.5-entmax of the allowed keys of s into p (masked keys 0): z = (s −
 * max)/2 sorted in p; for ρ = 1..k the mean M_ρ and the sum of squared
 * deviations S_ρ of the top ρ, τ_ρ = M_ρ − √max(0, (1 − S_ρ)/ρ); the
 * support is #{ρ : τ_ρ ≤ z_(ρ)}, τ = τ_support, p_j = max(z_j − τ, 0)².
 * Errors as ag_sparsemax_row's. */
AG_EXPORT int ag_entmax15_row(const double *s, size_t n, double *p, ag_error *err);

/* α-entmax of the allowed keys of s into p (masked keys 0), for α in
 * (1, 2]: x = (α − 1)s, τ bisected in [max x − 1, max x − k^{1−α}] (k the
 * allowed keys) on f(τ) = Σ_j max(x_j − τ, 0)^{1/(α−1)} − 1 (decreasing)
 * until the interval cannot halve in double, then p / Σp. Errors as
 * ag_sparsemax_row's, AG_EINVAL for α outside (1, 2], AG_ENOCONV if the
 * bisected row does not sum to 1 within 1e-12. */
AG_EXPORT int ag_entmax_bisect_row(const double *s, size_t n, double alpha, double *p,
                                   ag_error *err);

/* The normaliser `kind` with its parameter (softmax: T; entmax: α) on the
 * scores row s into p: one of the functions above. AG_EINVAL for
 * AG_NORMALIZER_LINEAR (it needs Q and K) or an unknown kind. */
AG_EXPORT int ag_normalize_row(ag_normalizer kind, double param, const double *s, size_t n,
                               double *p, ag_error *err);

/* A key counts as kept by a sparse normaliser when its score is more than
 * AG_SUPPORT_TIE above the threshold τ: a key at the threshold has p = 0 in
 * exact arithmetic and a computed p of rounding noise of either sign
 * (ALiBi's slope·Δposition makes exact score gaps that sit on sparsemax's
 * and 1.5-entmax's one-hot boundaries). 1e-12 is far above that noise for
 * scores of order 1 and far below a probability anyone reads. */
#define AG_SUPPORT_TIE 1e-12

/* The probability of a key AG_SUPPORT_TIE above the threshold under kind
 * (param as ag_normalize_row's): sparsemax 1e-12, α-entmax ((α − 1)·1e-12)
 * ^(1/(α − 1)) (1.5-entmax (0.5e-12)²), softmax and linear 0. */
AG_EXPORT double ag_normalizer_kept_floor(ag_normalizer kind, double param);

/* The keys a row p of n probabilities from kind (ag_normalize_row) keeps:
 * #{j : p_j > ag_normalizer_kept_floor(kind, param)} — the one support
 * count of family K's sparsemax_support / entmax_support and `plot --kind
 * lens`' "k of K keys kept". Masked keys (p_j = 0 or NaN) are not kept. */
AG_EXPORT size_t ag_normalizer_support(ag_normalizer kind, double param, const double *p,
                                       size_t n);

/* ag_normalize_row on each of the `rows` rows of n scores in S (row-major,
 * rows·n doubles) into P (the same shape; may be S for softmax only): the
 * normaliser of a whole array of scores, e.g. `attention --scores`' [L, H,
 * n, n] as L·H·n rows. Errors: ag_normalize_row's, the message prefixed
 * with "row R: " (the first failing row; P's rows before it are done). */
AG_EXPORT int ag_normalize_rows(ag_normalizer kind, double param, const double *S, size_t rows,
                                size_t n, double *P, ag_error *err);

/* Linear attention's row of query q (d values) over keys K (n rows of d,
 * row stride ldk): p_j = φ(q)·φ(k_j) / Σ_{k allowed} φ(q)·φ(k_k) with
 * φ(x) = elu(x) + 1 (x + 1 for x > 0, eˣ otherwise: always > 0),
 * Katharopoulos et al. 2020, §3.2. allowed (n flags) says which keys the
 * row may see (NULL: all); the others get 0. Errors: AG_EINVAL (n or d 0,
 * NULL, ldk < d, no allowed key), AG_ENONFINITE (a NaN/Inf in q or an
 * allowed key, or a sum that overflows). */
AG_EXPORT int ag_linear_attention_row(const double *q, const double *K, size_t n, size_t d,
                                      size_t ldk, const unsigned char *allowed, double *p,
                                      ag_error *err);

/* ---- family K: the lens metrics of one head -------------------------- */

/* docs/metrics.md, family K (`lens`): the selected keys of family K of one
 * head into rec (nothing else in rec is touched), from its own scores S
 * (in->n × in->n row-major, −inf where masked: ag_layer_view.scores), its
 * input `in` and what ex adds to it (NULL: none; attngeom/stability.h
 * ag_head_extra: QK-norm, yarn/longrope) for the unmasked bilinear form
 * S° = c·QKᵀ, Q and K as the head forms them (biases, QK-norm, rotation,
 * its GQA key head), and the
 * matrix A the run measures (n × n; the model's attention, or the lensed
 * one under a normaliser: rank_lift uses it). Over the rows with at least
 * one allowed (finite) score:
 *   score_std          mean of the population standard deviation of the
 *                      allowed scores
 *   sparsemax_support  mean of #{j : sparsemax(s)_j > 0} / #allowed
 *                      (Martins & Astudillo 2016, Algorithm 1)
 *   entmax_support     the same for 1.5-entmax (Peters et al. 2019, §3.2)
 *   sparsemax_js       mean Jensen–Shannon distance √JS (natural log, as
 *                      scipy.spatial.distance.jensenshannon; Lin 1991)
 *                      between softmax(s) and sparsemax(s)
 * and of the n × n S° (rank ≤ d_h; Bhojanapalli et al. 2020):
 *   score_effective_rank, score_numerical_rank  family A's effective_rank
 *                      and numerical_rank (tolerance σ₁·n·ε) of S°, its
 *                      singular values those of R_1R_2ᵀ from one thin QR
 *                      [Q K] = U[R_1 R_2] (exact, O(n·d_h²))
 *   rank_lift          effective_rank(A) / score_effective_rank (rec's
 *                      effective_rank when it holds one, else A's SVD)
 *   score_asymmetry    ‖(S° − S°ᵀ)/2‖_F / ‖S°‖_F = ‖C − Cᵀ‖_F / (2‖C‖_F),
 *                      C = R_1R_2ᵀ.
 * Null: the row keys when no row has an allowed score; rank_lift and
 * score_asymmetry when S° = 0 (score_effective_rank then null too).
 * Errors: AG_EINVAL (NULL S, in, A, sel or rec; the head input's own
 * checks, as ag_stability_metrics_ex's), AG_ENONFINITE (a NaN or +inf score;
 * Q or K overflowing double), AG_ENOMEM, AG_ELAPACK. All memory is the
 * caller's or freed before return; thread-safe. */
AG_EXPORT int ag_lens_metrics(const double *S, const ag_head_input *in,
                              const ag_head_extra *ex, const double *A,
                              const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* ag_lens_metrics with the head's Q and K given ((n, d_h) each, row-major,
 * as the scores use them — ag_layer_view.q and .k of the same pass) instead
 * of projected from a head input: the same keys, without the O(n·d·d_h)
 * projection. The keys of S° do not depend on the positive scale c, so
 * none is taken. Errors: AG_EINVAL (NULL S, q, k, A, sel or rec; n or d_h
 * 0), AG_ENONFINITE (a NaN or +inf score, a non-finite q or k), AG_ENOMEM,
 * AG_ELAPACK. */
AG_EXPORT int ag_lens_metrics_qk(const double *S, size_t n, const double *q, const double *k,
                                 size_t d_h, const double *A, const ag_metric_set *sel,
                                 ag_record *rec, ag_error *err);

/* ag_lens_metrics_qk of m queries over n keys (cross-attention: m = n_tgt
 * decoder tokens, n = n_src encoder tokens): S and A (m, n), q (m, d_h), k
 * (n, d_h). The row keys run over S's m rows of n scores; the form keys
 * are of the m×n S° = c·QKᵀ, whose singular values come from the core of
 * Q's and K's own thin QRs (two row counts); score_asymmetry, defined for
 * a square form only, is null when m ≠ n. m = n is ag_lens_metrics_qk,
 * the same bytes. Errors as ag_lens_metrics_qk's (AG_EINVAL for m 0). */
AG_EXPORT int ag_lens_metrics_qk_rect(const double *S, size_t m, size_t n, const double *q,
                                      const double *k, size_t d_h, const double *A,
                                      const ag_metric_set *sel, ag_record *rec,
                                      ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
