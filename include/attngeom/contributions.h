/* attngeom/contributions.h — residual- and norm-aware contributions of an
 * attention block (docs/metrics.md, "Contributions").
 *
 * Layer l's attention block maps the block input h (n, d) to its output y
 * (ag_block_fn). y_i is decomposed into one term per source token and a
 * bias, Σ_j T_i(x_j) + bias_i = y_i exactly (up to rounding), with
 * f_h(x) = (x W_V^h + b_V^h) W_O^h (W_O^h the head's rows; grouped-query
 * heads share their V) and x_j the heads' input (after any pre-attention
 * norm). b_V stays in the terms (Σ_j A_ij = 1 carries it), b_O goes to the
 * bias: as Kobayashi et al.'s and Ferrando et al.'s code do (modeling_bert.py
 * of gorokoba560/norm-analysis-of-transformer, contributions.py of
 * mt-upc/transformer-contributions: value_layer is the biased V projection,
 * the dense bias a separate term).
 *   a_i(x_j) = Σ_h A^h_ij f_h(x_j)
 *   PRE, PARALLEL (AG_AFTER_NONE)   T_i(x_j) = a_i(x_j) + δ_ij h_i, bias_i = b_O;
 *            a parallel block's MLP branch is not decomposed (y is the
 *            attention branch plus the residual).
 *   POST (AG_AFTER_SUM)             T_i(x_j) = g_i(a_i(x_j) + δ_ij h_i),
 *            bias_i = g_i(b_O) + β (Kobayashi et al. 2021, "Incorporating
 *            Residual and Normalization Layers into Analysis of Masked
 *            Language Models", §3);
 *   sandwich (AG_AFTER_BRANCH)      T_i(x_j) = g_i(a_i(x_j)) + δ_ij h_i,
 *            bias_i = g_i(b_O) (+ β for a LayerNorm);
 * g_i the norm applied term by term with the statistics of the whole
 * pre-norm vector z_i: LayerNorm g_i(v) = γ ⊙ (v − mean(v)) / s_i,
 * s_i = √(var(z_i) + ε) (biased variance, ε under the root: the exact
 * LayerNorm); RMSNorm g_i(v) = γ ⊙ v / s_i, s_i = √(mean(z_i²) + ε).
 *
 * From the terms:
 *   norms   N_ij = ‖T_i(x_j)‖₂ (Kobayashi et al. 2021's norm-based analysis)
 *   mixing  r_i = ‖Σ_{j≠i} T_i(x_j)‖₂ / (‖Σ_{j≠i} T_i(x_j)‖₂ + ‖T_i(x_i)‖₂),
 *           their context-mixing ratio (§5)
 *   alti    C_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁) / Σ_k (the same)
 *           (Ferrando et al. 2022, "Measuring the Mixing of Contextual
 *           Information in the Transformer", §3), each row summing to 1;
 *           across layers R_0 = C_0, R_l = C_l R_{l−1} (their rollout, no
 *           identity added: the residual is in C already).
 * Their code departs from these definitions in two places this library
 * does not follow: a standard deviation without ε under the root (and
 * unbiased), and pairwise_distance's eps = 1e-6 added to y_i − T_i(x_j).
 *
 * Conventions as core.h: status codes and ag_error, nothing printed,
 * every pointer borrowed for the call.
 */
#ifndef ATTNGEOM_CONTRIBUTIONS_H
#define ATTNGEOM_CONTRIBUTIONS_H

#include "core.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which matrix a contributions run gives per layer. */
typedef enum {
    AG_CONTRIB_NORMS_RES, /* N_ij = ‖T_i(x_j)‖₂ (`--method norms-res`) */
    AG_CONTRIB_ALTI,      /* C_ij (`--method alti`) */
    /* through attngeom/run.h's ag_run_contributions only: */
    AG_CONTRIB_NORMS,     /* per head N^h_ij = A^h_ij ‖f_h(x_j)‖₂ (Kobayashi et al.
                             2020, §3: ag_run_value_norms; `--method norms`) */
    AG_CONTRIB_FLOW       /* attention flow F_l (Abnar & Zuidema 2020, §3:
                             ag_run_flow; `--method flow`) */
} ag_contrib_method;

/* One layer's attention block. Kind 3 of core.h's ABI rule: start from
 * AG_CONTRIB_INPUT_DEFAULT. */
typedef struct {
    size_t size;               /* sizeof(ag_contrib_input), set by the macro */
    size_t n, d;               /* tokens, model width */
    const double *attn;        /* (n_head, n, n) probabilities (ag_layer_view.attn) */
    const double *x;           /* (n, d) the heads' input (ag_layer_view.x) */
    const double *h;           /* (n, d) the block input: the hidden state
                                  (ag_hidden_fn index = layer) */
    const ag_attn_weights *w;  /* the layer's W_V, b_V, W_O (ag_model_attn_weights) */
    const ag_block_params *p;  /* wiring, after-norm, b_O (ag_model_block_params) */
} ag_contrib_input;
#define AG_CONTRIB_INPUT_DEFAULT {.size = sizeof(ag_contrib_input)}

/* What to compute; each pointer the caller's, NULL: not wanted. */
typedef struct {
    double *norms;  /* (n, n) N_ij */
    double *alti;   /* (n, n) C_ij */
    double *mixing; /* (n) r_i */
    double *y;      /* (n, d) Σ_j T_i(x_j) + bias_i: the reconstruction */
    double *bias;   /* (n, d) bias_i */
} ag_contrib_output;

/* Decompose one layer (see above) into out's arrays. Errors: AG_EINVAL
 * (NULL or inconsistent arguments: n, d, the weights' shapes, a size the
 * library refuses), AG_ELIMIT (n_head·n·d doubles overflow), AG_ENOMEM,
 * AG_ENONFINITE (a NaN or Inf in attn, x or h, named; "row i: no source
 * contributes" when every C_ij of a row is 0, so the row cannot be
 * normalised, or a term overflows). */
AG_EXPORT int ag_contributions_layer(const ag_contrib_input *in, const ag_contrib_output *out,
                                     ag_error *err);

/* One step of the composition: first != 0: R ← C; else R ← C R (both
 * (n, n), R updated in place). AG_EINVAL for NULL or n = 0, AG_ELIMIT,
 * AG_ENOMEM. */
AG_EXPORT int ag_contributions_compose(double *R, const double *C, size_t n, int first,
                                       ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
