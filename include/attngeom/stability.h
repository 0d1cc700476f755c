/* attngeom/stability.h — stability and angles of one attention head whose
 * input X is known (docs/metrics.md, family E). docs/stability.md gives the definitions, the
 * JVP/VJP formulas, the Lanczos iteration and its convergence test.
 *
 * For one head,
 *     Q = R(XW_Q + b_Q),  K = R(XW_K + b_K),  S = c·QKᵀ,
 *     T = cap·tanh(S/cap) (soft-capping, when selected; T = S otherwise),
 *     A(X) = softmax_rows(T + mask)
 * with X (n, d), W_Q and W_K (d, d_h) in the x ↦ xW convention, c the head's
 * scale, R the rotary rotation of rotary models (rotate-half over the first
 * rotary_dim dims, angle i·inv_freq[j] for position i = 0..n−1 and pair j,
 * inv_freq from ag_rope_inv_freq with the head's n; identity otherwise) and
 * the mask when selected: causal (keys j > i get probability exactly 0),
 * optionally with a sliding window (only keys 0 <= i − j < window visible).
 * The map is the attention kernel's, the one the forward pass runs.
 *
 * Ownership: every pointer passed in is borrowed for the duration of the
 * call (ag_head_linearize keeps none: it copies what it needs). An
 * ag_head_lin handed out by ag_head_linearize belongs to the caller and is
 * released by ag_head_lin_free (NULL allowed). Output buffers are the
 * caller's. Nothing here prints, exits or keeps global state; functions are
 * safe to call concurrently on different objects.
 */
#ifndef ATTNGEOM_STABILITY_H
#define ATTNGEOM_STABILITY_H

#include "core.h"
#include "metrics.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One head and its input. Matrices are row-major with the given row strides
 * (so a head's column block of a wider projection is used in place: pass
 * wq = W + h·d_h with ldq = the full width). */
typedef struct {
    const double *x;  /* (n, d), row stride ldx (0 means d) */
    size_t n, d, ldx;
    const double *wq; /* (d, d_h), row stride ldq (0 means d_h) */
    size_t ldq;
    const double *wk; /* (d, d_h), row stride ldk (0 means d_h) */
    size_t ldk;
    const double *bq; /* (d_h) or NULL */
    const double *bk; /* (d_h) or NULL */
    size_t d_h;
    double scale;      /* c > 0; 0 means 1/sqrt(d_h) */
    int causal;        /* mask keys j > i */
    ag_rope rope;      /* rope.rotary_dim > 0: rotate the first rotary_dim
                          dims of Q and K (rotate-half, positions 0..n-1);
                          0: no rotation */
    double softcap;    /* > 0: scores capped to softcap·tanh(S/softcap) */
    int window;        /* > 0: keys 0 <= i − j < window (causal), |i − j| < window (not) */
} ag_head_input;

/* The QK-norm of a head (issue 29; a new struct, ag_head_input being
 * fixed): Q = R(N(U)), U the projection's columns the norm spans, N(u)_c =
 * g_c·u_c/√(Σ_j u_j²/W + eps) over those W columns, g the scale as it
 * multiplies (RMSNorm w; Gemma-3's 1 + w), the head's d_h columns taken
 * from N's output (likewise K). Kinds (model.h ag_qk_norm):
 *   AG_QK_NORM_NONE  no norm: the same as ag_head_extra's qk NULL
 *   AG_QK_NORM_HEAD  over the head's own columns (Qwen3, Gemma-3): U = the
 *                    input's X W_Q + b_Q; gq, gk (d_h) each; W = d_h
 *   AG_QK_NORM_FULL  over the whole projection (OLMo-2): U = X wq + bq of
 *                    q_width columns (all heads, row-major (d, q_width)),
 *                    the head's from q_off; gq (q_width); likewise K; the
 *                    input's wq, bq, wk, bk are then not read
 * Borrowed for the call. */
typedef struct {
    ag_qk_norm kind;
    double eps;              /* >= 0 */
    const double *gq, *gk;   /* the scales (see above) */
    const double *wq, *wk;   /* FULL: (d, q_width), (d, k_width) */
    const double *bq, *bk;   /* FULL: (q_width), (k_width) or NULL */
    size_t q_width, k_width; /* FULL */
    size_t q_off, k_off;     /* FULL: the head's first column */
} ag_head_qk_norm;

/* What a head has beyond ag_head_input, which the ABI rule keeps fixed
 * (core.h, kind 3: sized; start from AG_HEAD_EXTRA_DEFAULT, members are
 * appended). The *_ex functions below take it; NULL, or a NULL member,
 * means none (the plain functions are the *_ex ones with NULL):
 *   qk    the QK-norm (Qwen3, OLMo-2, Gemma-3; ag_attn_weights_head_qk_norm);
 *         NULL or kind AG_QK_NORM_NONE: none
 *   rope  RoPE parameters ag_rope has no field for (a model's
 *         cfg.rope_extra): yarn's and longrope's frequencies
 *         (ag_rope_inv_freq_extra) and their attention factor on cos and
 *         sin, as the engine's pass uses them. Without it a yarn or
 *         longrope rope is refused (AG_EINVAL naming it). rope->interleaved
 *         is refused: GPT-J's pairs come as rotate-half pairs of permuted
 *         W_Q, W_K columns (ag_model_attn_weights lists them so)
 *   alibi, alibi_slope  ALiBi (Press et al. 2022, sec. 3): the kind
 *         (attngeom/model.h ag_alibi_kind; whose HF formula places the bias)
 *         and this head's slope m (ag_attn_weights' alibi_slopes[h]);
 *         AG_ALIBI_NONE (0): none. BLOOM and MPT add m·(j − off) after the
 *         scale (off 0; MPT n − 1), Falcon adds m·j before it. The bias is
 *         constant in X: the derivatives are those of the biased softmax.
 *         A caller whose size ends before them gets no ALiBi
 * Every pointer member is borrowed for the call. */
typedef struct {
    size_t size;                /* sizeof(ag_head_extra), set by the macro */
    const ag_head_qk_norm *qk;  /* NULL: no QK-norm */
    const ag_rope_extra *rope;  /* NULL: ag_rope alone */
    ag_alibi_kind alibi;        /* appended: AG_ALIBI_NONE (0) none */
    double alibi_slope;         /* appended: finite; read when alibi is set */
    const double *bias;         /* appended: (n, n) this head's additive score
                                   bias, added after the scale, before the
                                   mask: T5's relative position bias
                                   (ag_model_position_bias; Raffel et al.
                                   2020, §2.1), constant in X like ALiBi's;
                                   NULL: none */
} ag_head_extra;
#define AG_HEAD_EXTRA_DEFAULT {.size = sizeof(ag_head_extra)}

/* Options of the stochastic and iterative keys. Carries its size (ABI
 * rule, core.h): start from AG_STABILITY_OPTIONS_DEFAULT. */
typedef struct {
    size_t size;        /* sizeof(ag_stability_options), set by the macro */
    double epsilon;     /* sensitivity: ‖E‖_F = ε‖X‖_F, ε > 0 (default 1e-3) */
    int trials;         /* sensitivity: T ≥ 1 trials (default 8) */
    unsigned long seed; /* gsl_rng_mt19937 seed (default 1; GSL maps 0 to 4357) */
} ag_stability_options;
#define AG_STABILITY_OPTIONS_DEFAULT \
    {.size = sizeof(ag_stability_options), .epsilon = 1e-3, .trials = 8, .seed = 1}

/* The defaults above (AG_STABILITY_OPTIONS_DEFAULT). */
AG_EXPORT void ag_stability_options_init(ag_stability_options *opt);

/* docs/metrics.md, family E: the selected keys of family E (jacobian_norm,
 * jacobian_norm_rel, sensitivity, q_mean_cosine, k_mean_cosine,
 * qk_cos_mean) into rec; nothing else in rec is touched (the caller sets
 * layer, head, rows, cols). opt NULL means the defaults. Keys:
 *   jacobian_norm      ‖∂vec(A)/∂vec(X)‖₂ by Lanczos on JᵀJ (see
 *                      ag_head_jacobian_norm)
 *   jacobian_norm_rel  ‖J‖₂·‖X‖_F/‖A‖_F
 *   sensitivity        mean over opt->trials of
 *                      (‖A(X+E)−A(X)‖_F/‖A(X)‖_F)/(‖E‖_F/‖X‖_F), E Gaussian
 *                      rescaled to ‖E‖_F = ε‖X‖_F; one gsl_rng_mt19937 per
 *                      call seeded with opt->seed, E drawn row-major, trial
 *                      after trial (gsl_ran_gaussian). null if ‖X‖_F = 0.
 *   q_mean_cosine,     family C's mean_cosine of the rows of the UNROTATED
 *   k_mean_cosine      XW_Q + b_Q and XW_K + b_K
 *   qk_cos_mean        mean of cos(q_i, k_j) over the pairs the mask allows,
 *                      with the ROTATED q, k of the scores (pairs with a zero
 *                      vector skipped; null if none)
 * Errors: AG_EINVAL (null pointer, zero size, stride below its width, scale
 * < 0, a rope with rotary_dim odd or above d_h, θ ≤ 0 or bad scaling factors,
 * softcap < 0, window < 0, ε ≤ 0 or trials < 1), AG_ENONFINITE (NaN
 * or Inf in X, a weight or a bias; the message names it), AG_ENOMEM,
 * AG_ELAPACK (the tridiagonal eigensolver failed, or Lanczos did not reach
 * 1e-6 relative accuracy within its iteration cap). */
AG_EXPORT int ag_stability_metrics(const ag_head_input *in, const ag_stability_options *opt,
                                   const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* ag_stability_metrics of a head with what ex adds (NULL: none; see
 * ag_head_extra). With a QK-norm q_mean_cosine and k_mean_cosine take the
 * normed, unrotated Q and K, and the Jacobian differentiates through the
 * norm. Errors as ag_stability_metrics, and AG_EINVAL for ex->size not set
 * (or from a newer header), a QK-norm whose kind is unknown, eps < 0, a
 * scale or projection missing or widths that do not hold the head's
 * columns, a yarn or longrope rope without ex->rope, ex->rope->interleaved
 * or its factors not fitting the rope; AG_ENONFINITE for NaN or Inf in the
 * norm's scales or projections. */
AG_EXPORT int ag_stability_metrics_ex(const ag_head_input *in, const ag_head_extra *ex,
                                      const ag_stability_options *opt, const ag_metric_set *sel,
                                      ag_record *rec, ag_error *err);

/* ---- building blocks ---------------------------------------------------- */

/* A(X) of the head into A (n·n doubles, caller's; masked entries 0).
 * Errors as ag_stability_metrics. */
AG_EXPORT int ag_head_attention(const ag_head_input *in, double *A, ag_error *err);

/* The head under linear attention instead of its softmax (Katharopoulos et
 * al. 2020, §3.2; attngeom/normalizers.h ag_linear_attention_row) into A
 * (n·n, caller's): A_ij = φ(q_i)·φ(k_j) / Σ_{j' visible} φ(q_i)·φ(k_j'),
 * φ = elu + 1, with q, k the head's rows of XW_Q + b_Q and XW_K + b_K as its
 * scores use them (rotated by RoPE; without the scale, which the linear
 * form does not take), over the keys its mask lets query i see (causal,
 * window), 0 elsewhere. Errors as ag_head_attention's. */
AG_EXPORT int ag_head_linear_attention(const ag_head_input *in, double *A, ag_error *err);

/* ag_head_attention and ag_head_linear_attention of a head with what ex
 * adds (NULL: none). Errors as ag_stability_metrics_ex's. */
AG_EXPORT int ag_head_attention_ex(const ag_head_input *in, const ag_head_extra *ex, double *A,
                                   ag_error *err);
AG_EXPORT int ag_head_linear_attention_ex(const ag_head_input *in, const ag_head_extra *ex,
                                          double *A, ag_error *err);

/* The head linearised at X: A(X) and what the Jacobian-vector products need
 * (rotated Q and K, copies of the weights). Memory O(n² + (n + d)·d_h). */
typedef struct ag_head_lin ag_head_lin;

AG_EXPORT int ag_head_linearize(const ag_head_input *in, ag_head_lin **out, ag_error *err);
/* The same with what ex adds (NULL: none; errors as
 * ag_stability_metrics_ex's): the JVP, VJP and ‖J‖₂ below then
 * differentiate through a QK-norm (memory adds O((n + d)·width) per side)
 * and take yarn's / longrope's rotation. */
AG_EXPORT int ag_head_linearize_ex(const ag_head_input *in, const ag_head_extra *ex,
                                   ag_head_lin **out, ag_error *err);
AG_EXPORT void ag_head_lin_free(ag_head_lin *lin);
/* A(X) (n, n), owned by lin. */
AG_EXPORT const double *ag_head_lin_attention(const ag_head_lin *lin);

/* Forward mode: dA = J·dX. dX (n, d) row-major, dA (n, n) row-major; masked
 * entries of dA are 0. O(n²d_h + n·d·d_h). Returns AG_OK or AG_ENOMEM. */
AG_EXPORT int ag_head_jvp(const ag_head_lin *lin, const double *dX, double *dA);
/* Reverse mode: dX = Jᵀ·dA (same shapes; masked entries of dA ignored). */
AG_EXPORT int ag_head_vjp(const ag_head_lin *lin, const double *dA, double *dX);

/* Diagnostics of the Lanczos iteration. */
typedef struct {
    int products;       /* JᵀJ products used (each one JVP and one VJP) */
    int restarts;       /* explicit restarts (basis full before convergence) */
    double residual;    /* final residual bound |λ − θ| ≤ residual on JᵀJ */
    double rel_bound;   /* bound on the relative error of ‖J‖₂: residual/(2θ) */
} ag_lanczos_info;

/* ‖J‖₂ of the linearised head: Lanczos on JᵀJ with full (twice-applied)
 * reorthogonalisation, from a deterministic start vector (Gaussian entries
 * of gsl_rng_mt19937 seeded with 20210701, independent of any user seed),
 * stopping when the top Ritz value θ of the tridiagonal matrix has residual
 * β_k|s_k| ≤ 1e-10·θ (‖J‖₂ = √θ is then within 5e-11 relative of a singular
 * value), or when the Krylov space is exhausted (exact). The basis holds at
 * most 40 vectors of n·d doubles; when full, the iteration restarts from the
 * top Ritz vector; after 600 products it accepts a bound ≤ 1e-6 relative or
 * fails with AG_ELAPACK. info may be NULL. */
AG_EXPORT int ag_head_jacobian_norm(const ag_head_lin *lin, double *norm, ag_lanczos_info *info,
                                    ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
