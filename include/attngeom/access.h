/* attngeom/access.h — the library without struct layouts, for bindings (the
 * Python package python/attngeom/, docs/python.md) and for C programs that
 * must keep working when the library grows: errors on the heap, the options
 * of a run by name, and whole command runs (the matrices of `attngeom
 * matrix`, a model's analyze and weights records, aggregates and tables)
 * behind pointers the library allocates. Records, record lists and metric
 * selections, opaque everywhere, are in attngeom/metrics.h.
 *
 * Why: ag_error and ag_table are public layouts, fixed in size (ABI rule,
 * core.h) but awkward to copy by hand through a foreign-function interface;
 * everything here is reached through pointers and getters, so a binding
 * declares no struct at all.
 *
 * The functions here compute exactly what the attngeom commands compute,
 * through the same library calls and in the same order (docs/python.md
 * lists the command behind each): matrix records equal `attngeom matrix`'s
 * to the last bit, model attention `attngeom attention`'s, and so on.
 *
 * Ownership: every object handed out here (ag_error, ag_run_options,
 * ag_table, an ag_aggregate, an ag_record_list) belongs to the caller and
 * is released with its *_free function (NULL accepted). Pointers a getter
 * returns (a key or a text of a table, an error's message) are borrowed
 * from their object and live until it is freed. Memory the library
 * malloc'ed for the caller (token ids of ag_tokenizer_encode) is released
 * with ag_free, so a binding never needs the C library's free. Inputs are
 * borrowed for the call.
 *
 * Threads: the calls that run a pool (ag_run_options "threads") start and
 * join it inside the call; results are the same bytes for any thread count
 * (attngeom/parallel.h). Nothing here touches process-wide state.
 */
#ifndef ATTNGEOM_ACCESS_H
#define ATTNGEOM_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "core.h"
#include "metrics.h"
#include "model.h"
#include "records.h"
#include "stability.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors and memory -------------------------------------------------- */

/* A zeroed ag_error on the heap (status AG_OK, empty message); NULL when
 * out of memory. */
AG_EXPORT ag_error *ag_error_new(void);
AG_EXPORT void ag_error_free(ag_error *err);
/* Its status and its one-line message (owned by err). */
AG_EXPORT int ag_error_status(const ag_error *err);
AG_EXPORT const char *ag_error_message(const ag_error *err);
/* Release memory the library allocated for the caller (token ids). */
AG_EXPORT void ag_free(void *p);

/* ---- options of a run --------------------------------------------------- */

/* The options of the runs below, by name, with the commands' defaults:
 *   "threads"         1 (1..AG_POOL_THREADS_MAX): tasks as the CLI's -j
 *   "precision"       32 (float32 pass, --precision f32) or 64 (f64)
 *   "edge_threshold"  -1: 1/n; else in [0, 1] (--edge-threshold)
 *   "epsilon"         1e-3 (> 0), "trials" 8 (integer >= 1), "seed" 1
 *                     (integer >= 0): family E's sensitivity
 *   "massive_abs"     100, "massive_ratio" 1000 (finite, >= 0): family I's
 *                     thresholds (`residual --massive-abs/--massive-ratio`)
 *   "flow_max_tokens" 64 (integer 1..2^20): the most tokens attention flow
 *                     takes (n² maximum flows a layer, docs/performance.md;
 *                     `contributions --flow-max-tokens`)
 * and the layers and heads a model run reports (all by default). */
typedef struct ag_run_options ag_run_options;
/* NULL when out of memory. */
AG_EXPORT ag_run_options *ag_run_options_new(void);
AG_EXPORT void ag_run_options_free(ag_run_options *opt);
/* Set option `key`. AG_EINVAL naming the key for an unknown key or a value
 * outside its range. */
AG_EXPORT int ag_run_options_set(ag_run_options *opt, const char *key, double value,
                                 ag_error *err);
/* Report only these layers or heads (what: "layers" or "heads"; idx[count],
 * any order, repeats ignored; count 0: all again). Indices are checked
 * against the model when a run starts (AG_ERANGE). AG_EINVAL for another
 * `what` or a negative index, AG_ENOMEM. */
AG_EXPORT int ag_run_options_select(ag_run_options *opt, const char *what, const int *idx,
                                    size_t count, ag_error *err);

/* ---- matrices (`attngeom matrix`) --------------------------------------- */

/* Check what `attngeom matrix` checks before it measures: ndim 2 to 4
 * (AG_ESHAPE "3-D array of shape (1, 2, 3) ..."; a 5-D array too), no
 * empty array (AG_EINVAL "empty array of shape (0, 4)"), every value finite
 * (AG_ENONFINITE "non-finite value (NaN) at index [0, 1]", the first in C
 * order). data[sum_k i_k·strides[k]] is element (i_0, ..., i_{ndim-1});
 * strides count doubles and may be negative or zero, so every element is
 * aligned when data is: data not aligned for a double is AG_EINVAL "data
 * at 0x... is not aligned for float64 (8 bytes)", NULL data AG_EINVAL too
 * (a binding copies a misaligned array first; nothing is read through a
 * misaligned pointer). */
AG_EXPORT int ag_matrices_check(const double *data, int ndim, const size_t *shape,
                                const ptrdiff_t *strides, ag_error *err);

/* Families A–C and F (sel) of every matrix of the array: 2-D [n,m] one
 * matrix, 3-D [H,n,m] heads, 4-D [L,H,n,m] layers × heads, in that order
 * with records (layer, head) as `attngeom matrix` gives them. Any strides
 * (see ag_matrices_check): a matrix whose rows are contiguous (strides[ndim-1]
 * = 1, strides[ndim-2] = m) is measured in place, any other is gathered into
 * the task's buffer first (exact copies: the same values). Options
 * "threads" and "edge_threshold". After ag_matrices_check's errors, a
 * matrix's failure is "layer L, head H: <message>" with its status. *out
 * owns the records. */
AG_EXPORT int ag_matrix_records(const double *data, int ndim, const size_t *shape,
                                const ptrdiff_t *strides, const ag_metric_set *sel,
                                const ag_run_options *opt, ag_record_list **out, ag_error *err);

/* ---- models ------------------------------------------------------------- */

/* Every function below taking a model refuses a NULL one (a closed
 * binding's handle) with AG_EINVAL "no model (NULL)"; ag_model_type gives "". */

/* A config value of a loaded model by its ag_model_config name: "n_layer",
 * "n_head", "n_kv_head", "d_model", "head_dim", "d_ff", "max_positions",
 * "max_tokens", "vocab_size", "causal", and for models whose input is a
 * tensor (attngeom/model.h) "input_kind" (an ag_input_kind), "in_channels",
 * "image_height", "image_width", "patch_height", "patch_width",
 * "max_frames" (0 for token models), "n_expert", "top_k",
 * "d_ff_expert", "d_ff_shared" (0 without experts), and "n_registers"
 * (DINOv2's register tokens, 0 without). AG_ENOTFOUND for another name. */
AG_EXPORT int ag_model_dim(const ag_model *m, const char *name, long *value, ag_error *err);
/* config.json's model_type ("gpt2", ...), owned by m. */
AG_EXPORT const char *ag_model_type(const ag_model *m);

/* The forward pass on ids[0..n-1] (ag_model_forward_ex with the options'
 * precision and a pool of "threads"), copying the attention of the selected
 * layers and heads into attn (caller's, (layers, heads, n, n) doubles in
 * C order, as `attngeom attention -o` writes it; NULL: not wanted) and the
 * hidden states into hidden (caller's, (n_layer + 1, n, d_model); NULL: not
 * wanted; --hidden). Errors: ag_model_forward's, AG_ERANGE for a selected
 * layer or head the model lacks. */
AG_EXPORT int ag_model_attention_into(const ag_model *m, const int32_t *ids, size_t n,
                                      const ag_run_options *opt, double *attn, double *hidden,
                                      ag_error *err);
/* The sizes of attn for these options: the selected layers and heads. */
AG_EXPORT int ag_model_selected(const ag_model *m, const ag_run_options *opt, size_t *layers,
                                size_t *heads, ag_error *err);

/* `attngeom analyze`'s records of one text: per selected layer in order, its
 * selected heads in order, the matrix metrics (sel, "edge_threshold") of
 * the head's attention and, when sel holds a key of family E, the head's
 * stability (ag_stability_metrics on the layer's input X, "epsilon",
 * "trials", "seed"). Records carry text = `text` (-1 for none). A head's
 * failure is "layer L head H: <message>". *out owns the records. */
AG_EXPORT int ag_model_analyze(const ag_model *m, const int32_t *ids, size_t n, long text,
                               const ag_metric_set *sel, const ag_run_options *opt,
                               ag_record_list **out, ag_error *err);

/* `attngeom weights MODEL`'s records: family D (sel) of every selected head
 * of every selected layer, rows = cols = d_model. A failure is "layer L,
 * head H: <message>". *out owns the records. */
AG_EXPORT int ag_model_weight_records(const ag_model *m, const ag_metric_set *sel,
                                      const ag_run_options *opt, ag_record_list **out,
                                      ag_error *err);

/* ---- heads of a layer's weights (shared by the commands and the above) -- */

/* Family E's input of query head h: X (n, d) and the layer's weights, the
 * head's column block of W_Q and its key/value head's (h / (H / H_kv)) of
 * W_K, in place. */
AG_EXPORT void ag_attn_weights_head_input(const ag_attn_weights *w, const double *x, size_t n,
                                          size_t d, int h, ag_head_input *in);
/* Family E's QK-norm of query head h (stability.h ag_head_qk_norm) from
 * the layer's weights and ag_model_qk_norm's scales gq, gk: kind and eps
 * the model's (cfg.qk_norm, cfg.norm_eps); per head, the scales alone;
 * over the projections, also the whole W_Q, b_Q (W_K, b_K) and the head's
 * columns in them (its key/value head's for K). Empty scales: no norm.
 * Everything borrowed from w, gq, gk. */
AG_EXPORT void ag_attn_weights_head_qk_norm(const ag_attn_weights *w, ag_qk_norm kind, double eps,
                                            const ag_array *gq, const ag_array *gk, int h,
                                            ag_head_qk_norm *out);
/* Family D's factors of query head h of a layer of width d (W_V and W_O
 * NULL when the layer has none). */
AG_EXPORT void ag_attn_weights_head_factors(const ag_attn_weights *w, size_t d, int h,
                                            ag_head_factors *f);

/* ---- corpus statistics (`attngeom aggregate`, `attngeom compare`) ------- */

/* A new aggregate (ag_aggregate_new): by NULL groups by the identifying
 * keys (--by not given), "" makes one group, else the comma-separated keys
 * (--by KEYS; AG_EINVAL "--by 'a,,b': an empty key"); level as --ci;
 * keep_values for a permutation test. */
AG_EXPORT int ag_aggregate_create(const char *by, double level, int keep_values,
                                  ag_aggregate **out, ag_error *err);
/* Add one record of count (key, cell) pairs: kinds[i] an ag_cell_kind
 * (AG_CELL_NULL, NUMBER, INTEGER, BOOL, TEXT), values[i] its number (0/1
 * for a bool), texts[i] its text (AG_CELL_TEXT; else ignored, may be NULL
 * throughout). As ag_aggregate_add; AG_EINVAL for another kind. */
AG_EXPORT int ag_aggregate_add_cells(ag_aggregate *a, size_t count, const char *const *keys,
                                     const int *kinds, const double *values,
                                     const char *const *texts, ag_error *err);
/* ag_aggregate_table(a, human = 0) on the heap (*out, the caller's:
 * ag_table_delete). */
AG_EXPORT int ag_aggregate_result(const ag_aggregate *a, ag_table **out, ag_error *err);
/* ag_compare_table on the heap: metrics a comma-separated list (NULL:
 * every metric a and b share; AG_EINVAL "--metrics 'a,,b': an empty key"),
 * the other options as `attngeom compare` (--ci, --permutations, --seed);
 * name_a, name_b name the inputs in messages. */
AG_EXPORT int ag_compare_result(const ag_aggregate *a, const ag_aggregate *b,
                                const char *metrics, double level, unsigned long permutations,
                                unsigned long seed, const char *name_a, const char *name_b,
                                ag_table **out, ag_error *err);

/* A table's columns and rows, its keys (borrowed), and cell (r, c): its
 * ag_cell_kind, its value in *value (the mean of a mean ± half cell) and
 * its text in *text (borrowed; NULL unless AG_CELL_TEXT). Out of range:
 * AG_CELL_NULL. value and text may be NULL. */
AG_EXPORT size_t ag_table_columns(const ag_table *t);
AG_EXPORT size_t ag_table_rows(const ag_table *t);
AG_EXPORT const char *ag_table_key(const ag_table *t, size_t c);
AG_EXPORT int ag_table_cell(const ag_table *t, size_t r, size_t c, double *value,
                            const char **text);
/* ag_table_free and free the table itself. */
AG_EXPORT void ag_table_delete(ag_table *t);

#ifdef __cplusplus
}
#endif
#endif
