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
/* `attngeom contributions`: the matrix families and the context mixing J,
 * selected by default with A, B, C. */
#define AG_FAMILIES_CONTRIBUTIONS (AG_FAMILIES_ROLLOUT | AG_FAMILY_BIT(AG_FAMILY_MIXING))

/* Ã = ½ Ā + ½ I of one layer's attention attn (n_head, n, n) into T (n, n),
 * caller-allocated: the matrix ag_rollout_step composes and the capacities
 * of attention flow (ag_flow_graph_new). Ā is the mean of the heads, summed
 * in head order, then divided by n_head. Errors as ag_rollout_step (for
 * attn; T is left unchanged). */
AG_EXPORT int ag_rollout_mix(const double *attn, int n_head, size_t n, double *T, ag_error *err);

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

/* The encoder-through-cross composition of an encoder–decoder pass
 * (docs/metrics.md, "rollout"): out (m, n), caller-allocated, is
 *   R_cross = Ā_cross · R_enc
 * with Ā_cross the mean of the n_head cross-attention matrices cross
 * (n_head, m, n), m targets over n sources (summed in head order, then
 * divided by n_head; no ½ I: the matrix is rectangular, a target has no
 * source token of its own), and R_enc (n, n) the encoder's rollout after
 * its last layer (ag_rollout_step: ½ Ā + ½ I per encoder layer). Row i is
 * how much of each source token's input reaches target i through the
 * encoder and this cross-attention (Abnar & Zuidema 2020, §3, the rollout
 * carried through one more attention). Row-stochastic inputs give a
 * row-stochastic out. Errors (out unchanged): AG_EINVAL for a NULL pointer,
 * m = 0, n = 0 or n_head < 1; AG_ELIMIT when the sizes overflow;
 * AG_ENONFINITE naming the entry of cross or R_enc; AG_ENOMEM. */
AG_EXPORT int ag_rollout_cross(const double *cross, int n_head, size_t m, size_t n,
                               const double *R_enc, double *out, ag_error *err);

/* The whole rollout of a stored attention array attn (n_layer, n_head, n, n)
 * into R_out (n_layer, n, n), caller-allocated: R_out[l] = R_l. Errors as
 * ag_rollout_step (AG_EINVAL also for n_layer < 1), the message then naming
 * the layer. On failure R_out's contents are unspecified. */
AG_EXPORT int ag_rollout(const double *attn, int n_layer, int n_head, size_t n,
                         double *R_out, ag_error *err);

/* Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
 * Transformers", §3). The attention graph of L layers on n tokens has one
 * node (l, k) per layer l = 0 … L (0: the input embeddings, l: the output of
 * layer l) and token k, and an edge from (l, q) down to (l−1, k) of capacity
 * cap[l−1][q][k] wherever that is > 0: the query's node points at the keys
 * it reads, as the authors' get_adjmat builds their networkx graph
 * (adj_mat[(l)·n + q][(l−1)·n + k] = mat[l−1][q][k]). With Ã_l = ½ Ā_l + ½ I
 * (ag_rollout_mix: the residual connection as an identity, §3) as the
 * capacities, F[i][j] is the maximum flow from the source (L, i), output
 * token i at the top, to the sink (0, j), input token j at the bottom
 * (their compute_flows: maximum_flow_value(G, u, v) from u = (L, i) to the
 * input node v = j).
 *
 * F is the paper's definition, the maximum-flow value itself. The authors'
 * compute_flows then divides each row by its sum; attngeom does not (divide
 * row i by Σ_j F[i][j] for their numbers). Their capacities are
 * (Ā + I) / rowsum(Ā + I), the same as ½ Ā + ½ I for row-stochastic Ā.
 *
 * With row-stochastic non-negative attention: 0 ≤ F[i][j] ≤ 1 (the source
 * sends at most its out-capacity Σ_k Ã[i][k] = 1), F ≥ R elementwise for
 * the rollout R of the same layers (the rollout's walk is a feasible flow),
 * 1 ≤ Σ_j F[i][j] ≤ the number of layer-1 nodes the source reaches (the
 * capacity into the sinks from them), F[i][i] ≥ ½ (the diagonal path has
 * capacities ≥ ½), F = Ã_0 for one layer, F = I for identity attention,
 * and causal (lower-triangular) attention gives F[i][j] = 0 for j > i.
 *
 * The maximum flows are igraph's (igraph_maxflow_value: push-relabel,
 * Goldberg & Tarjan 1988) on the part of the graph that matters for the
 * pair: the nodes reachable from the source that can reach the sink (for
 * causal attention the tokens j … i of every layer); the other nodes carry
 * no flow from source to sink, so the value is exact. A pair that keeps
 * every node runs on the whole graph, made once by ag_flow_graph_new. igraph's errors come
 * back as statuses (its error handler is replaced during the call, its
 * warnings are dropped; only its fatal errors, internal assertions that
 * igraph requires never to return, still abort). Debian's igraph is built without thread support:
 * attngeom serialises its igraph calls under one lock, so a program that
 * calls igraph itself must not do so while a flow is computed. */
typedef struct ag_flow_graph ag_flow_graph;

/* The attention graph of the capacities cap (n_layer, n, n), row-major,
 * cap[l][q][k] the edge from (l+1, q) to (l, k), copied, and what each
 * source reaches and each sink is reached from. *out is the caller's
 * (ag_flow_graph_free), NULL on failure. Errors: AG_EINVAL for a NULL
 * pointer, n = 0, n_layer < 1 or a negative capacity (naming layer, row and
 * column: flow needs capacities ≥ 0); AG_ENONFINITE for a NaN/Inf
 * capacity, likewise named; AG_ELIMIT when n_layer·n² overflows or
 * n > 2^31 − 1; AG_ENOMEM. */
AG_EXPORT int ag_flow_graph_new(const double *cap, int n_layer, size_t n, ag_flow_graph **out,
                                ag_error *err);
/* Accepts NULL. */
AG_EXPORT void ag_flow_graph_free(ag_flow_graph *g);
/* F[i][j] of g into *value: 0 without an igraph call when no path joins
 * the source (n_layer, i) to the sink (0, j). Safe to call from several
 * threads on one graph. Errors: AG_ERANGE for i or j ≥ n, AG_ENOMEM,
 * AG_EINVAL "igraph: <its message>" for a failure igraph reports. */
AG_EXPORT int ag_flow_graph_value(const ag_flow_graph *g, size_t i, size_t j, double *value,
                                  ag_error *err);
/* Row i of F, F[i][0 … n−1], into F_row (n doubles, the caller's), the
 * pairs' graphs built in buffers reused along the row. Safe to call from
 * several threads on one graph. Errors: AG_EINVAL (NULL), AG_ERANGE for
 * i ≥ n, a pair's as ag_flow_graph_value's, named "F[i][j]: <message>". */
AG_EXPORT int ag_flow_graph_row(const ag_flow_graph *g, size_t i, double *F_row, ag_error *err);
/* The whole flow matrix F (n, n), caller-allocated, of the capacities cap
 * (n_layer, n, n) in this thread: ag_flow_graph_new, then every pair.
 * (ag_run_flow_matrix spreads the pairs over threads.) Errors as those
 * two, the message of a pair's naming it ("F[i][j]: ..."); on failure F's
 * contents are unspecified. */
AG_EXPORT int ag_attention_flow(const double *cap, int n_layer, size_t n, double *F,
                                ag_error *err);

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
