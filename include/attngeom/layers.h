/* attngeom/layers.h — measurements across the layers of a model (docs/metrics.md, family G):
 * attention rollout and the geometry of the residual stream.
 *
 * Attention rollout (Abnar & Zuidema 2020, "Quantifying attention flow in
 * transformers"), for a model of L layers with H query heads on n tokens:
 *   Ā_l = (1/H) Σ_h A_{l,h}          mean over the query heads of layer l
 *   Ã_l = ½ Ā_l + ½ I                 the residual connection as identity
 *   R_0 = Ã_0,   R_l = Ã_l R_{l−1}    (l = 1 … L−1)
 * R_l[i][j] is how much of token j's input reaches position i after layer l.
 * When every Ā_l is row-stochastic so is every R_l (up to rounding), and
 * causal (lower-triangular) attention gives lower-triangular R_l exactly.
 *
 * The residual stream: the hidden states h_0 … h_L of ag_model_forward's
 * `hidden` buffer (Hugging Face's output_hidden_states order), each an [n, d]
 * matrix measured with families A (spectrum) and C (row geometry):
 * res_ratio falling with depth is rank collapse (Dong, Cordonnier & Loukas
 * 2021), mean_cosine and pc1_share rising is anisotropy (Ethayarajh 2019).
 *
 * docs/layers.md explains both with examples. Conventions as in core.h:
 * int status codes, an optional ag_error, nothing printed; every pointer is
 * borrowed for the duration of the call.
 */
#ifndef ATTNGEOM_LAYERS_H
#define ATTNGEOM_LAYERS_H

#include "core.h"
#include "metrics.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Families computed by `attngeom residual` (A, C and the massive
 * activations I) and `attngeom rollout` (the matrix families A, B, C). */
#define AG_FAMILIES_RESIDUAL (AG_FAMILY_BIT(AG_FAMILY_SPECTRUM) | \
                              AG_FAMILY_BIT(AG_FAMILY_GEOMETRY) | \
                              AG_FAMILY_BIT(AG_FAMILY_ACTIVATIONS))
#define AG_FAMILIES_ROLLOUT AG_FAMILIES_MATRIX

/* One rollout step. attn holds one layer's attention (n_head, n, n),
 * row-major, attn[h][i][j] the weight of query i on key j (what an
 * ag_layer_view gives). R is (n, n), row-major, owned by the caller:
 *   first != 0:  R ← Ã          (R's previous contents are ignored)
 *   first == 0:  R ← Ã R         (cblas_dgemm into a scratch buffer this
 *                                 function allocates and frees, then copied
 *                                 back, so R is updated in place)
 * with Ã = ½ Ā + ½ I, Ā the mean of the n_head matrices (summed in head
 * order, then divided by n_head). The attention need not be row-stochastic:
 * the formula is applied to any finite values.
 * Errors (R is left unchanged): AG_EINVAL for n = 0, n_head < 1 or a NULL
 * pointer; AG_ENONFINITE for a NaN/Inf in attn (or in R when first == 0),
 * the message naming head, row and column; AG_ELIMIT when n² overflows;
 * AG_ENOMEM. */
AG_EXPORT int ag_rollout_step(double *R, const double *attn, int n_head, size_t n,
                              int first, ag_error *err);

/* The whole rollout of a stored attention array attn (n_layer, n_head, n, n)
 * into R_out (n_layer, n, n), caller-allocated: R_out[l] = R_l. Errors as
 * ag_rollout_step (AG_EINVAL also for n_layer < 1), the message then naming
 * the layer. On failure R_out's contents are unspecified. */
AG_EXPORT int ag_rollout(const double *attn, int n_layer, int n_head, size_t n,
                         double *R_out, ag_error *err);

/* Families A and C of one hidden state X (n, d), row-major: the keys of
 * `sel` in those two families are computed (the others are left
 * AG_V_ABSENT), rec->rows = n, rec->cols = d; the caller sets layer/head.
 * Identical rows give res_ratio 0 and pc1_share null (the centred matrix is
 * 0). Errors as ag_matrix_metrics. */
AG_EXPORT int ag_residual_metrics(const double *X, size_t n, size_t d,
                                  const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* docs/metrics.md, family I (Sun et al. 2024, "Massive Activations in
 * Large Language Models", §2): the selected keys of family I of one hidden
 * state h (n, d), row-major, into rec (nothing else touched): act_top1 =
 * max |h_td| at (act_top1_token, act_top1_dim) (the first in row-major
 * order on a tie), act_median = the median of the n·d magnitudes (GSL
 * gsl_stats_median: the mean of the two middle ones for an even count),
 * act_ratio = act_top1 / act_median (null when the median is 0), and
 * act_massive = #{|h_td| >= massive_abs and |h_td| >= massive_ratio ·
 * act_median} (the paper's 100 and 1000: `--massive-abs`,
 * `--massive-ratio`). Thread-safe. Errors: AG_EINVAL (NULL, n or d 0, a
 * threshold negative or not finite), AG_ENONFINITE (NaN/Inf in h, naming
 * token and dimension), AG_ELIMIT, AG_ENOMEM. */
AG_EXPORT int ag_activation_metrics(const double *h, size_t n, size_t d, double massive_abs,
                                    double massive_ratio, const ag_metric_set *sel,
                                    ag_record *rec, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
