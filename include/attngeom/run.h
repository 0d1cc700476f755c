/* attngeom/run.h — the run module: which layers and heads a run computes,
 * the fan-out of its tasks, the corpus run (inputs in batches, turns in
 * input order) and their distribution over processes (ag_run_dist).
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


/* ---- what a path holds (`attngeom info`) ---------------------------------- */

/* What path holds, as one JSON object (UTF-8, compact, keys in this order):
 * "path"; for a model folder "kind": "model", "config" (the architecture as
 * the engine reads it: model_type, modeling, input, causal, layers, heads,
 * kv_heads, sizes, norm, residual wiring, Q/K/V and MLP layouts, biases,
 * positions and RoPE scaling, scales, softcap, sliding window and the
 * layers that use it), "tokenizer" ("BPE", "WordPiece", "Unigram",
 * "WordLevel" or null) and "tensors" (every *.safetensors file's tensors,
 * files in name order: name, dtype, shape, file); for a .npy file "kind":
 * "npy", "shape"; for a .safetensors file "kind": "safetensors",
 * "tensors". Strings carry their non-UTF-8 bytes escaped (AG_TEXT_UTF8).
 * *json (NUL-terminated, *len bytes) is the caller's: ag_free. Errors are
 * those of ag_model_load, ag_st_open and ag_npy_read, naming the file. */
AG_EXPORT int ag_info(const char *path, char **json, size_t *len, ag_error *err);

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
#define AG_RUN_TASKS_DEFAULT {.size = sizeof(ag_run_tasks)}

/* Run t's tasks on w's threads (one task: inline in the calling thread,
 * so that the runs it makes itself still spread over the threads) or,
 * with opt's distribution, over its processes (then the root holds every
 * task's records and error as if all ran here; the other ranks return
 * AG_EINVAL "not the root"). Returns AG_OK, or the status of the LOWEST
 * failed task with *first (may be NULL) its index: every task below it
 * ran, so the answer is the same for any thread and process count. A run
 * made inside the tasks or work of a run over the same distribution runs
 * on its own process (a text's heads stay on the text's rank). w may be
 * NULL: a pool of opt's "threads" (at most count) for this call. */
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
#define AG_RUN_INPUT_DEFAULT {.size = sizeof(ag_run_input), .text = -1}

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

/* What a process transport (attngeom-mpi's MPI, a test's loopback) gives
 * the runs made with ag_run_options_set_dist: every rank makes the same
 * run, each computes the items ag_run_assign gives it, the others send
 * their results to the root (rank 0) as bytes, and the root delivers every
 * turn, records and error exactly as one process does. Kind 3 of core.h's
 * ABI rule (leading size). The library calls these on the thread that
 * called the run, never on a worker. Start from AG_RUN_DIST_DEFAULT. */
struct ag_run_dist {
    size_t size; /* sizeof(ag_run_dist) */
    void *user;  /* the transport's, passed to every call */
    int rank;    /* this process, 0..ranks-1; 0 is the root */
    int ranks;
    /* Collective, on every rank at the start of a distributed run: 1 when
     * every rank's ok is 1, else 0 (each rank's run then fails, AG_EIO;
     * the transport reports the failing rank's error as it sees fit). */
    int (*gate)(void *user, int ok);
    /* Not the root: one result's bytes (ag_run_result_pack's, borrowed
     * for the call) to the root. 0, or non-zero when they cannot go. */
    int (*send)(void *user, const unsigned char *bytes, size_t len);
    /* The root: the next result any rank sent; with wait 0 it returns at
     * once when none has come. 1 with *bytes (malloc'd: the run frees
     * them) and *len, 0 when none has come, -1 on a failure. */
    int (*receive)(void *user, int wait, unsigned char **bytes, size_t *len);
    /* The root: no more results are needed; returns once every other rank
     * has stopped, what they sent since dropped. */
    void (*stop)(void *user);
    /* Not the root: 1 once the root has stopped; with wait, returns only
     * then (after every send of this rank has gone). */
    int (*stopped)(void *user, int wait);
};
#define AG_RUN_DIST_DEFAULT {.size = sizeof(ag_run_dist), .ranks = 1}

/* Which rank runs each of count items of cost cost[i]: the longest first
 * (ties: the lower index), each to the least loaded rank (ties: the lower
 * rank) — Graham's LPT rule; cost 0 is an item not run (owner -1).
 * owner[count] is the caller's. Deterministic: every rank computes the
 * same. AG_OK, or AG_ENOMEM / AG_EINVAL (ranks < 1). */
AG_EXPORT int ag_run_assign(const uint64_t *cost, size_t count, int ranks, int *owner,
                            ag_error *err);


/* ---- a corpus: inputs run in order, results delivered in input order ---- */

/* What the work on one input leaves for its turn. The run zeroes it
 * before the work and frees what the turn leaves in it (recs with
 * ag_record_list_free, data and notes with free). */
typedef struct {
    size_t size;          /* sizeof(ag_run_result), set by the run */
    int skipped;          /* set by the run: the input is not run (cost 0) */
    ag_record_list *recs; /* its records (NULL: none); the turn may take them */
    void *data;           /* malloc'd bytes of the caller's own (NULL: none) */
    size_t data_size;     /* bytes of data (what a distribution sends) */
    char *notes;          /* malloc'd lines the caller prints at the turn */
    size_t notes_len;
    int status;           /* 0, or the input's failure: any non-zero int,
                             the run returns it as it is */
    ag_error err;         /* the failure's message, when the work sets one */
} ag_run_result;

/* The work on input k, on any thread (worker: ag_pool_worker()'s number).
 * Fills res; a failure is res->status (returned: the run reads res). */
typedef int (*ag_run_work_fn)(size_t k, int worker, ag_run_result *res, void *user);
/* Input k's turn, on the thread that called the run, in input order:
 * 0 to go on, else the run stops and returns it. */
typedef int (*ag_run_turn_fn)(size_t k, ag_run_result *res, void *user);

/* An ordered parallel map over inputs 0..count-1 (kind 3 of core.h's ABI
 * rule: start from AG_RUN_MAP_DEFAULT). */
typedef struct {
    size_t size;          /* sizeof(ag_run_map) */
    size_t count;
    /* (count) what a distribution balances (ag_run_input_cost); 0: the
     * input is skipped — a turn, no work. NULL: every input costs 1. */
    const uint64_t *cost;
    /* inputs run at once; 0: one with one thread, else 4 per thread —
     * enough that a thread seldom waits for a batch's slowest input, few
     * enough that turns come soon after their input is done. A batch of
     * one input runs on the calling thread, so that the runs its work
     * makes itself spread over the threads. */
    size_t batch;
    ag_run_work_fn work;
    ag_run_turn_fn turn;  /* NULL: none */
    void *user;
} ag_run_map;
#define AG_RUN_MAP_DEFAULT {.size = sizeof(ag_run_map)}

/* The cost of an input of n positions for ag_run_map.cost: n^3 (the
 * spectra of its n x n attention matrices dominate), at least 1. */
AG_EXPORT uint64_t ag_run_input_cost(size_t n);

/* Run m: its inputs in batches on w's threads, every input's turn in input
 * order — a skipped input's too (res->skipped). The first input (in input
 * order) whose status or turn fails stops the run: every input before it
 * had its turn, it had its own (res->status set), no later input has one;
 * its status is returned, its res->err copied to *err (may be NULL). So
 * turns, results and the error are the same for any thread count. With
 * opt's distribution (ag_run_options_dist) each rank runs the inputs
 * ag_run_assign gives it (by cost) and the root takes every turn exactly as
 * one process does; the other ranks take none and return AG_EINVAL ("not
 * the root"). A run that cannot start returns AG_ENOMEM or AG_EIO (a
 * failed gate) before any turn. Runs made inside a distributed run's work
 * or tasks run on this process only. w may be NULL: a pool of opt's
 * "threads" for this call. */
AG_EXPORT int ag_run_map_run(ag_workers *w, const ag_run_map *m, const ag_run_options *opt,
                             ag_error *err);

/* The bytes a distribution sends for input or task k's result: its
 * status, error, notes, data and records (every value's bits as stored).
 * *bytes is malloc'd (the caller frees). AG_OK or AG_ENOMEM. */
AG_EXPORT int ag_run_result_pack(size_t k, const ag_run_result *res, unsigned char **bytes,
                                 size_t *len, ag_error *err);
/* The same read back into a zeroed *res, its k in *k. AG_OK, AG_EINVAL
 * for bytes that are not a result (res left zeroed) or AG_ENOMEM. */
AG_EXPORT int ag_run_result_unpack(const unsigned char *bytes, size_t len, size_t *k,
                                   ag_run_result *res, ag_error *err);
/* Free what res holds and zero it but its size (not res itself). */
AG_EXPORT void ag_run_result_clear(ag_run_result *res);


/* ---- inputs: texts, token ids, images and audio for a model ------------- */

/* (step 17) */


/* ---- per-head work: analyze, attention, weights, matrices ---------------- */

/* (steps 14, 15) */


/* ---- per-layer and across-layer work: residual, rollout, similarity ----- */

/* (step 18) */


/* ---- tensors of one layer (`attngeom layer`) and figures (`attngeom plot`) */

/* (step 19) */


#ifdef __cplusplus
}
#endif

#endif
