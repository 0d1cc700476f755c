/* attngeom/run.h — the run module: which layers and heads a run computes.
 *
 * One implementation of layer/head selection for the library, the CLI and
 * the Python package (issue 25): a selection over `count` items (the layers
 * or the heads of a model), made from a list spec such as "0,2-3" (the
 * CLI's --layers/--heads) or from an index list (Python's select()), gives
 * the mask, the number selected, the i-th selected index and the last one.
 *
 * ag_selection is opaque (core.h, ABI rule, kind 1): the library allocates
 * it, ag_selection_free releases it.
 */
#ifndef ATTNGEOM_RUN_H
#define ATTNGEOM_RUN_H

#include "core.h"
#include "metrics.h"
#include "model.h"
#include "parallel.h"
#include "stability.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_selection ag_selection;

/* The selection of spec over 0..count-1; every item when spec is NULL.
 * spec is a comma-separated list of indices and ranges "lo-hi" (inclusive),
 * as "0,2-3"; repeats are allowed. `what` names the items in messages
 * ("layers", "heads"). Errors, at the first item at fault, from the left:
 *  - AG_EINVAL, a syntax error: "<what> takes a list like 0,2-3, not '<spec>'";
 *  - AG_ERANGE, an index >= count: "<what> <spec> is out of range: there are
 *    <count> <what> (0-<count-1>)".
 * (The CLI prints them after "--", the first as a usage error, exit 2, the
 * second as a failure, exit 1.) *out is NULL on failure. */
AG_EXPORT int ag_selection_parse(const char *spec, int count, const char *what,
                                 ag_selection **out, ag_error *err);

/* The selection of the n indices idx[] over 0..count-1, in any order, with
 * repeats; every item when idx is NULL. Errors: AG_EINVAL for a negative
 * index ("<what>: negative index <i>"), AG_ERANGE for an index >= count
 * ("<what>: <i> is outside 0..<count-1>"). */
AG_EXPORT int ag_selection_from_list(const int *idx, size_t n, int count, const char *what,
                                     ag_selection **out, ag_error *err);

/* Accepts NULL. */
AG_EXPORT void ag_selection_free(ag_selection *s);

/* The number of items it ranges over (count above). */
AG_EXPORT int ag_selection_limit(const ag_selection *s);
/* How many are selected. */
AG_EXPORT size_t ag_selection_count(const ag_selection *s);
/* The mask[limit]: 1 for a selected item, 0 otherwise. Valid until freed. */
AG_EXPORT const unsigned char *ag_selection_mask(const ag_selection *s);
/* The selected indices, increasing, [ag_selection_count]. Valid until freed. */
AG_EXPORT const int *ag_selection_indices(const ag_selection *s);
/* The i-th selected index (increasing order); -1 when i >= the count. */
AG_EXPORT int ag_selection_index(const ag_selection *s, size_t i);
/* The last (largest) selected index; -1 when none is selected. */
AG_EXPORT int ag_selection_last(const ag_selection *s);


/* ---- options of a run (the object of attngeom/access.h) ----------------- */

typedef struct ag_run_options ag_run_options; /* also in access.h (C11) */

/* ag_run_options (access.h: ag_run_options_new/set/select) holds every
 * option a run computes with; the callers fill it — the CLI from argv,
 * Python from keyword arguments, attngeom-mpi adds the distribution. */

/* The metrics the run computes (families A-F as each entry point says);
 * NULL: the entry point's default. BORROWED: sel must outlive the runs
 * made with opt. */
AG_EXPORT void ag_run_options_set_metrics(ag_run_options *opt, const ag_metric_set *sel);
/* The seed of family E at full width (ag_run_options_set takes seeds up
 * to 2^53 only, as a double holds them). */
AG_EXPORT void ag_run_options_set_seed(ag_run_options *opt, unsigned long seed);
/* The metrics set (NULL when none). */
AG_EXPORT const ag_metric_set *ag_run_options_metrics(const ag_run_options *opt);
/* A number option by its ag_run_options_set key ("threads", "precision"
 * (32 or 64), "edge_threshold", "epsilon", "trials", "seed"); NaN for an
 * unknown key. */
AG_EXPORT double ag_run_options_get(const ag_run_options *opt, const char *key);
/* The selected layers or heads over 0..count-1 (what: "layers", "heads")
 * as a selection (*out the caller's: ag_selection_free); every index when
 * none was selected. AG_ERANGE for a selected index >= count, AG_EINVAL
 * for another `what`. */
AG_EXPORT int ag_run_options_selection(const ag_run_options *opt, const char *what, int count,
                                       ag_selection **out, ag_error *err);
/* Select sel's indices (what: "layers", "heads"), as ag_run_options_select
 * does with an index list (copied: sel may be freed after). AG_EINVAL for
 * another `what`. */
AG_EXPORT int ag_run_options_set_selection(ag_run_options *opt, const char *what,
                                           const ag_selection *sel, ag_error *err);

/* The distribution of a run over processes (attngeom-mpi implements it;
 * no MPI in the library). Its layout is below (section "distribution"). */
typedef struct ag_run_dist ag_run_dist;
/* Spread the tasks and inputs of runs made with opt over d's processes
 * (NULL: one process). BORROWED. */
AG_EXPORT void ag_run_options_set_dist(ag_run_options *opt, const ag_run_dist *d);
AG_EXPORT const ag_run_dist *ag_run_options_dist(const ag_run_options *opt);

/* ---- tasks: the deterministic fan-out ------------------------------------ */

/* Tasks 0..count-1 of one run. Task k writes only its own slots: errs[k]
 * and, when recs is set, records k*per_task .. k*per_task+per_task-1 of
 * recs (ag_record_list_at; the caller makes recs with count*per_task
 * records). cost[k] (NULL: all 1) is what a distribution balances. */
typedef struct {
    size_t size;          /* sizeof(ag_run_tasks) */
    size_t count;
    ag_task_fn fn;
    void *user;
    ag_record_list *recs; /* (count * per_task) or NULL */
    size_t per_task;
    ag_error *errs;       /* (count) */
    const uint64_t *cost; /* (count) or NULL */
} ag_run_tasks;

/* Run t's tasks on w's threads (one task: inline in the calling thread,
 * so that the runs it makes itself still spread over the threads) or,
 * with opt's distribution, over its processes (then the root holds every
 * task's records and error as if all ran here; the other ranks return
 * AG_EINVAL "not the root"). Returns AG_OK, or the status of the LOWEST
 * failed task with *first (may be NULL) its index: every task below it
 * ran, so the answer is the same for any thread and process count. w may
 * be NULL: a pool of opt's "threads" (at most count) for this call. */
AG_EXPORT int ag_run_tasks_run(ag_workers *w, const ag_run_tasks *t, const ag_run_options *opt,
                               size_t *first);

/* ---- one input of a model run ------------------------------------------- */

/* What a model run is fed: token ids (token models), or the model's input
 * tensor (ViT pixel_values (C, H, W), Whisper input_features (n_mels, T);
 * attngeom/model.h, ag_model_forward_values). */
typedef struct {
    size_t size;           /* sizeof(ag_run_input) */
    const int32_t *ids;    /* (n) token ids, or NULL: */
    size_t n;
    const double *values;  /* (shape) the input tensor */
    int ndim;
    const size_t *shape;
    long text;             /* the records' "text" (-1: one input) */
} ag_run_input;

/* The options of a pass for opt: its precision, w's pool (w may be NULL:
 * the calling thread), no hidden callback. */
AG_EXPORT ag_forward_options ag_run_forward_options(const ag_run_options *opt, ag_workers *w);
/* The forward pass on `in` (ag_model_forward_ex on ids, else
 * ag_model_forward_values), the layers streamed to fn, hidden as those
 * take it. AG_EINVAL when `in` has neither ids nor values. */
AG_EXPORT int ag_run_forward(const ag_model *m, const ag_run_input *in,
                             const ag_forward_options *fo, ag_layer_fn fn, void *user,
                             double *hidden, ag_error *err);

/* ---- distribution over processes: the layout of ag_run_dist ------------ */

/* (step 13) */


/* ---- a corpus: inputs run in order, results delivered in input order ---- */

/* (step 16) */


/* ---- inputs: texts, token ids, images and audio for a model ------------- */

/* (step 17) */


/* ---- per-head work: analyze, attention, weights, matrices ---------------- */

/* These run in this process: a distribution in opt is used by
 * ag_run_weights and ag_run_matrix only (their tasks are the run's); the
 * per-input ones (heads, analyze, attention) leave it to the corpus loop.
 * w (may be NULL: a pool of opt's "threads" for the call) runs the tasks
 * and lends each its worker's matrix workspace. opt may be NULL (the
 * defaults); its metrics NULL: the entry point's default families. */

/* Family E's input of head h: the Q/K projection input and weights of
 * the head, filled by the caller (ag_attn_weights_head_input for a model's
 * layer, which groups keys by GQA; `attngeom layer` its own tensors). */
typedef void (*ag_run_head_input_fn)(const void *ctx, int h, ag_head_input *in);

/* One layer's attention and what to measure of it. */
typedef struct {
    size_t size;                /* set by AG_RUN_LAYER_HEADS_DEFAULT */
    const double *attn;         /* (n_head, n, n) */
    size_t n;
    int n_head, layer;
    long text;                  /* the records' "text" (-1: none) */
    const ag_selection *heads;  /* over n_head; NULL: every head */
    ag_run_head_input_fn input; /* NULL: no family E even when selected */
    const void *input_ctx;
} ag_run_layer_heads;
/* Kind 3 of core.h's ABI rule: start from it. */
#define AG_RUN_LAYER_HEADS_DEFAULT {.size = sizeof(ag_run_layer_heads), .text = -1}

/* Append to out one record per selected head of L, in head order (layer,
 * head, rows = cols = n, text): families A-C and F of its attention
 * (ag_matrix_metrics_work, opt's "edge_threshold") and, when opt's metrics
 * select family E and L has an input, ag_stability_metrics ("epsilon",
 * "trials", "seed"); heads in parallel (default metrics AG_FAMILIES_HEADS).
 * Returns AG_OK, or the status of the lowest failed head with *failed its
 * number and err its own message (the caller names layer and head); a
 * failure before any head ran (AG_ENOMEM "out of memory for records")
 * leaves *failed -1, as does AG_EINVAL for L's size (ABI rule). out holds
 * the records of the heads that ran. */
AG_EXPORT int ag_run_heads(ag_workers *w, const ag_run_layer_heads *L, const ag_run_options *opt,
                           ag_record_list *out, int *failed, ag_error *err);

/* `attngeom analyze`'s records of one input: the pass on `in`
 * (ag_run_forward, opt's precision) and, per selected layer in order
 * (ag_run_options_selection), ag_run_heads of its selected heads with the
 * layer's input X as family E's (GQA-grouped keys); records carry
 * in->text. Errors: the selections' (AG_ERANGE "heads: 9 is outside
 * 0..3"), the pass's, ag_model_attn_weights's, and a head's as "layer L
 * head H: <message>" (the lowest failed head of the first failed layer).
 * *out the caller's (ag_record_list_free); NULL on failure. w NULL: a pool
 * of "threads", at most the selected heads. */
AG_EXPORT int ag_run_analyze(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                             ag_workers *w, ag_record_list **out, ag_error *err);

/* The attention of one selected layer: its selected heads (heads, n, n)
 * contiguous in head order, borrowed for the call. Non-zero stops the
 * pass and is returned (keep your own error, as for ag_layer_fn). */
typedef int (*ag_run_heads_fn)(int layer, const double *attn, size_t heads, size_t n, void *user);

/* `attngeom attention`'s pass on `in`: fn (may be NULL) gets every
 * selected layer's selected heads in layer order, hidden_fn (may be NULL)
 * every hidden state as the pass makes it, and hidden (may be NULL) all of
 * them, (n_layer + 1, n, d_model) as ag_run_forward fills it. Errors: the
 * selections', the pass's, a callback's status. w NULL: a pool of
 * "threads", at most n_head. */
AG_EXPORT int ag_run_attention(const ag_model *m, const ag_run_input *in,
                               const ag_run_options *opt, ag_workers *w, ag_run_heads_fn fn,
                               ag_hidden_fn hidden_fn, void *user, double *hidden,
                               ag_error *err);


/* ---- per-layer and across-layer work: residual, rollout, similarity ----- */

/* (step 18) */


/* ---- tensors of one layer (`attngeom layer`) and figures (`attngeom plot`) */

/* One attention layer of any architecture from named tensors: the options
 * of `attngeom layer` (and of `weights --weights`, which takes no x).
 * Carries its size (ABI rule, core.h): start from AG_RUN_LAYER_SPEC_DEFAULT.
 * Every pointer is borrowed for the call. The figures of `attngeom plot`
 * are attngeom/plot.h's ag_run_plot. */
typedef struct {
    size_t size;                   /* sizeof(ag_run_layer_spec), set by the macro */
    const char *x;                 /* X.npy, [n, d] after dropping leading 1s; NULL: none */
    const char *weights;           /* the safetensors file holding the tensors below */
    const char *qkv;               /* fused [d, 3 d_a] Q|K|V, or NULL and: */
    const char *q, *k, *v;         /* separate [d, d_a] (v optional) */
    const char *o;                 /* output projection [d_a, d_out] or NULL */
    const char *qkv_bias, *q_bias, *k_bias, *v_bias; /* or NULL */
    int heads;                     /* H */
    int causal, linear;            /* mask keys after the query; tensors are [out, in] */
    double scale;                  /* 0: 1/sqrt(d_a/H) */
    int rotary_dim;                /* RoPE on the first R dims of each head; 0 with */
    double rope_theta;             /* theta 0: no RoPE (either given: the other's default) */
    double softcap;                /* 0: none */
    int window;                    /* sliding window (needs causal); 0: none */
    ag_precision precision;
} ag_run_layer_spec;
#define AG_RUN_LAYER_SPEC_DEFAULT {.size = sizeof(ag_run_layer_spec), .precision = AG_PRECISION_F32}

/* The tensors of a spec as [in, out] doubles (fixed: ABI kind 4). */
typedef struct {
    ag_array x, q, k, v, o, bq, bk, bv; /* absent ones empty (data NULL) */
} ag_run_tensors;

/* Read s's X (when s->x) and named tensors into *t (zeroed first; the
 * caller's: ag_run_tensors_free, also after a failure) and check their
 * shapes against each other; without X, K and V may be grouped-query
 * narrower. Errors name the file and tensor (the CLI's text): those of
 * reading (AG_EIO, AG_EFORMAT, AG_ENOTFOUND, ...), AG_ESHAPE for a shape
 * that does not fit. */
AG_EXPORT int ag_run_tensors_load(const ag_run_layer_spec *s, ag_run_tensors *t, ag_error *err);
AG_EXPORT void ag_run_tensors_free(ag_run_tensors *t);

/* The RoPE of s for heads of d_h dims (*r zero when s asks for none).
 * AG_EINVAL "--rotary-dim R exceeds the head dim D" (the CLI's usage
 * error). */
AG_EXPORT int ag_run_layer_rope(const ag_run_layer_spec *s, size_t d_h, ag_rope *r, ag_error *err);

/* The attention probabilities [H, n, n] of the loaded tensors t (X
 * needed) into *attn (the caller's: ag_array_free): ag_attention_layer
 * with s's kernel options, RoPE from ag_run_layer_rope. Its errors. */
AG_EXPORT int ag_run_layer_attention(const ag_run_layer_spec *s, const ag_run_tensors *t,
                                     ag_array *attn, ag_error *err);

/* Head h's input for family E (ag_stability_metrics) from t: its columns
 * of Q and K taken as they are (K not grouped by query group: `attngeom
 * layer`'s values), s's kernel options. Borrows t's data. */
AG_EXPORT void ag_run_layer_head_input(const ag_run_layer_spec *s, const ag_run_tensors *t, int h,
                                       ag_head_input *in);

/* Append to out a record per head of attn (ag_run_layer_attention's):
 * ag_run_heads of every head, family E's input ag_run_layer_head_input's.
 * Errors: ag_run_heads's, a head's as "<s->weights>: head H: <message>"
 * (the lowest failed head). w NULL: a pool of opt's "threads". */
AG_EXPORT int ag_run_layer_records(const ag_run_layer_spec *s, const ag_run_tensors *t,
                                   const ag_array *attn, const ag_run_options *opt, ag_workers *w,
                                   ag_record_list *out, ag_error *err);

/* `attngeom layer` whole: ag_run_tensors_load (s->x required, else
 * AG_EINVAL), ag_run_layer_attention, ag_run_layer_records. *out (a new
 * list) and *attn ([H, n, n]; attn may be NULL: not kept) are the
 * caller's (ag_record_list_free, ag_array_free); on failure *out is NULL
 * and *attn untouched. Errors: those of the three steps, in that order. */
AG_EXPORT int ag_run_layer(const ag_run_layer_spec *s, const ag_run_options *opt, ag_workers *w,
                           ag_array *attn, ag_record_list **out, ag_error *err);


#ifdef __cplusplus
}
#endif

#endif
