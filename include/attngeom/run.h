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

#include "audio.h"
#include "contributions.h"
#include "core.h"
#include "image.h"
#include "metrics.h"
#include "model.h"
#include "normalizers.h"
#include "parallel.h"
#include "stability.h"
#include "tokenizer.h"

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
/* The normaliser whose probabilities ag_run_analyze measures instead of
 * the model's softmax (attngeom/normalizers.h), from the pass's own scores
 * (ag_forward_options.want_scores): softmax with param the temperature T
 * (T = 1, the default: the model's probabilities, no scores taken),
 * sparsemax, entmax15, entmax with param α in (1, 2]; linear from each
 * head's Q and K (ag_head_linear_attention on the layer's X and weights).
 * The forward pass is unchanged. Family E (which perturbs the head's own
 * softmax) is null under another normaliser. Errors: AG_EINVAL (NULL, a
 * parameter the normaliser refuses, an unknown kind). */
AG_EXPORT int ag_run_options_set_normalizer(ag_run_options *opt, ag_normalizer kind, double param,
                                            ag_error *err);
/* The most temperatures one run takes (ag_run_options_set_temperatures). */
#define AG_TEMPERATURES_MAX 64
/* Several softmax temperatures in one run (issue 28: `--temperatures
 * 0.25,0.5,1,2,4`): ag_run_analyze, ag_run_rollout and ag_run_similarity
 * then give, for each T[k] in the order given, exactly what they give
 * under ag_run_options_set_normalizer(opt, AG_NORMALIZER_SOFTMAX, T[k]),
 * one after the other; their records carry their T
 * (ag_record_temperature). Sets the normaliser to softmax; count 0 clears
 * the list, and so does ag_run_options_set_normalizer (the last set is
 * the run's). T is copied. Errors:
 * AG_EINVAL (NULL opt or T with count > 0, a T not finite > 0, more than
 * AG_TEMPERATURES_MAX). */
AG_EXPORT int ag_run_options_set_temperatures(ag_run_options *opt, const double *T, size_t count,
                                              ag_error *err);
/* The seed of family E at full width (ag_run_options_set takes seeds up
 * to 2^53 only, as a double holds them). */
AG_EXPORT void ag_run_options_set_seed(ag_run_options *opt, unsigned long seed);
/* The metrics set (NULL when none). */
AG_EXPORT const ag_metric_set *ag_run_options_metrics(const ag_run_options *opt);
/* A number option by its ag_run_options_set key ("threads", "precision"
 * (32 or 64), "edge_threshold", "epsilon", "trials", "seed", "massive_abs",
 * "massive_ratio", "flow_max_tokens"); NaN for an
 * unknown key. */
AG_EXPORT double ag_run_options_get(const ag_run_options *opt, const char *key);
/* The selected layers or heads over 0..count-1 (what: "layers", "heads")
 * as a selection (*out the caller's: ag_selection_free); every index when
 * none was selected. AG_ERANGE for a selected index >= count, AG_EINVAL
 * for another `what`. */
AG_EXPORT int ag_run_options_selection(const ag_run_options *opt, const char *what, int count,
                                       ag_selection **out, ag_error *err);
/* Select sel's items as the layers or heads (what) of runs made with opt
 * (ag_run_options_select of its indices; the CLI's parsed --layers and
 * --heads). sel is copied. AG_EINVAL for another `what`, AG_ENOMEM. */
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
    const int32_t *target; /* appended: (n_target) an encoder–decoder model's
                              decoder_input_ids, verbatim (they start with
                              the decoder start token: ag_run_shift_right);
                              ids or values are the source. NULL: none —
                              required for such a model, refused for others */
    size_t n_target;
} ag_run_input;
#define AG_RUN_INPUT_DEFAULT {.size = sizeof(ag_run_input), .text = -1}

/* The options of a pass for opt: its precision, w's pool (w may be NULL:
 * the calling thread), no hidden callback. */
AG_EXPORT ag_forward_options ag_run_forward_options(const ag_run_options *opt, ag_workers *w);
/* The forward pass on `in` (ag_model_forward_ex on ids, else
 * ag_model_forward_values), the layers streamed to fn, hidden as those
 * take it. With a target, m is the encoder of an encoder–decoder model
 * (ag_seq2seq_stack; ag_model_seq2seq reaches its pair) and the pass is
 * ag_seq2seq_forward (or _values) with hidden the encoder's
 * (ag_run_forward_seq2seq). AG_EINVAL when `in` has neither ids nor
 * values, a target on a model of one stack ("a target needs an
 * encoder-decoder model") or no target on an encoder–decoder model. */
AG_EXPORT int ag_run_forward(const ag_model *m, const ag_run_input *in,
                             const ag_forward_options *fo, ag_layer_fn fn, void *user,
                             double *hidden, ag_error *err);
/* ag_run_forward, with the hidden states of both stacks of an
 * encoder–decoder model: enc_hidden (L_enc + 1, n_src, d) and dec_hidden
 * (L_dec + 1, n_tgt, d), each optional, as ag_seq2seq_forward gives them
 * (dec_hidden must be NULL for a model of one stack: AG_EINVAL). */
AG_EXPORT int ag_run_forward_seq2seq(const ag_model *m, const ag_run_input *in,
                                     const ag_forward_options *fo, ag_layer_fn fn, void *user,
                                     double *enc_hidden, double *dec_hidden, ag_error *err);
/* HF's shift_tokens_right for teacher forcing: out[0] = start (the
 * config's decoder_start_token_id), out[i] = labels[i - 1] for i < n — the
 * decoder_input_ids of labels (n ids, their special tokens included). out
 * has n entries (n >= 1). */
AG_EXPORT void ag_run_shift_right(const int32_t *labels, size_t n, int32_t start, int32_t *out);
/* The decoder_input_ids of a target text for the encoder–decoder model m
 * (its encoder: ag_model_seq2seq reaches the pair) as Hugging Face's
 * teacher forcing makes them: labels = tok's encoding of text (its special
 * tokens included: T5 and BART end it with </s>, BART starts it with <s>),
 * then shift_tokens_right with the config's decoder_start_token_id
 * (ag_seq2seq_decoder_start). Whisper (m its encoder; its tokenizer's
 * template "<|startoftranscript|> ... $A <|endoftext|>"): a leading
 * decoder_start_token_id is first dropped from the labels, as HF's Whisper
 * fine-tuning collator does, so the ids are the labels less their last.
 * *ids (n ids: as many as the labels, Whisper's one fewer when dropped) is
 * the caller's (free). Errors: AG_EINVAL (m of one stack, a text without
 * tokens, a config without decoder_start_token_id), the tokenizer's. */
AG_EXPORT int ag_run_target_ids(const ag_model *m, const ag_tokenizer *tok, const char *text,
                                size_t len, int32_t **ids, size_t *n, ag_error *err);

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

/* Messages below name no source: the caller puts in front where the input
 * came from ("--text", "F: line 3", a file) and the model folder, as its
 * own messages do. */

/* The token ids of text (len bytes) by tok, special tokens included, cut
 * when longer than max_tokens (0: no cut) as Hugging Face's
 * truncation=True, max_length=max_tokens: the text's own tokens are cut on
 * the right, the special tokens around them stay. *ids (n kept, ag_free)
 * the caller's; *tokens (may be NULL) the count before the cut. Errors:
 * the tokenizer's; AG_EINVAL "the text gives no tokens"; AG_EFORMAT when
 * the special tokens do not surround the text's own; AG_EINVAL
 * "--max-tokens N leaves no token of the text: ..." (*ids NULL then). */
AG_EXPORT int ag_run_tokenize(const ag_tokenizer *tok, const char *text, size_t len,
                              size_t max_tokens, int32_t **ids, size_t *n, size_t *tokens,
                              ag_error *err);

/* A warning of an input (one line, no newline, without the program's
 * "name: warning: "); the caller prints it. */
typedef void (*ag_run_note_fn)(const char *line, void *user);

/* How a sequence of `tokens` tokens, cut to n (n <= tokens), fits m: a cut
 * gives the note "PLACE: T tokens, cut to the first N (--max-tokens)"; n
 * above the positions m takes is AG_ERANGE "PLACE: N tokens, more than the
 * P the model takes (FIELD = P): --skip-long skips such texts,
 * --max-tokens P cuts them", or with skip_long *skip = 1 and the note
 * "PLACE: ... skipped (--skip-long)". note may be NULL. */
AG_EXPORT int ag_run_fit(const ag_model *m, const char *place, size_t tokens, size_t n,
                         int skip_long, ag_run_note_fn note, void *user, int *skip,
                         ag_error *err);
/* AG_ERANGE "--max-tokens N is more than the P the model takes (FIELD =
 * P)" when a cut to max_tokens could still not fit m; AG_OK otherwise. */
AG_EXPORT int ag_run_check_max_tokens(const ag_model *m, size_t max_tokens, ag_error *err);

/* What a ViT's or a Whisper encoder's input is given as. */
typedef enum {
    AG_RUN_IMAGE,   /* a PNG or JPEG file, preprocessed (ViT) */
    AG_RUN_PIXELS,  /* pixel_values (3, H, W), leading axes of 1 dropped (ViT) */
    AG_RUN_AUDIO,   /* a sound file, as log-mel input_features (Whisper) */
    AG_RUN_FEATURES /* input_features (n_mels, T) or (1, n_mels, T) (Whisper) */
} ag_run_media_kind;

/* The preprocessing of a model folder's inputs: its
 * preprocessor_config.json or, absent, the processor's defaults made to
 * fit the model (a ViT's image size, a Whisper's mel bins). */
typedef struct {
    ag_input_kind kind;         /* the model's */
    ag_image_config image;      /* AG_INPUT_PIXELS */
    ag_whisper_fe_config audio; /* AG_INPUT_FEATURES */
} ag_run_media_config;

/* cfg for m, loaded from folder dir. Errors: those of ag_image_config_load
 * / ag_whisper_fe_config_load naming the file; AG_EINVAL for a token
 * model or a path too long ("DIR: path too long"). */
AG_EXPORT int ag_run_media_config_load(const ag_model *m, const char *dir,
                                       ag_run_media_config *cfg, ag_error *err);
/* The same taking BitImageProcessor's and CLIPImageProcessor's files too
 * (ag_image_processor_load): their resize and crop go to *crop, zeroed
 * otherwise (a new struct beside cfg, as core.h's ABI rule has fixed
 * structs grow). */
AG_EXPORT int ag_run_media_config_load_crop(const ag_model *m, const char *dir,
                                            ag_run_media_config *cfg, ag_image_crop *crop,
                                            ag_error *err);

/* One input tensor of a model: values (shape; ndim 3 for a ViT, 2 for a
 * Whisper) OWNED (ag_run_tensor_free) and the positions n of its pass. */
typedef struct {
    double *values;
    int ndim;
    size_t shape[3];
    size_t n;
} ag_run_tensor;

/* The tensor m's pass takes for the file `path` given as kind (an image,
 * a .npy of pixels or features, a sound file), preprocessed as cfg says,
 * audio and features cut to their first `frames` frames (0: all), with its
 * positions. was (NULL: first read) is the tensor an earlier read gave:
 * a read again must give its shape (AG_ESHAPE "PATH: changed shape during
 * the run"). Errors name the file: the readers' and decoders', AG_ESHAPE
 * for a shape m does not take, AG_EINVAL for a kind m does not take. *out
 * zeroed on failure. */
AG_EXPORT int ag_run_media_read(const ag_model *m, const ag_run_media_config *cfg,
                                ag_run_media_kind kind, const char *path, size_t frames,
                                const ag_run_tensor *was, ag_run_tensor *out, ag_error *err);
/* The same with an image's BiT / CLIP crop (NULL: none; see
 * ag_run_media_config_load_crop). */
AG_EXPORT int ag_run_media_read_crop(const ag_model *m, const ag_run_media_config *cfg,
                                     const ag_image_crop *crop, ag_run_media_kind kind,
                                     const char *path, size_t frames, const ag_run_tensor *was,
                                     ag_run_tensor *out, ag_error *err);
/* The same for an array a (BORROWED) of pixels or features, named `name`
 * in messages, checked as the .npy file holding it would be. */
AG_EXPORT int ag_run_media_array(const ag_model *m, const ag_run_media_config *cfg,
                                 ag_run_media_kind kind, const ag_array *a, const char *name,
                                 size_t frames, ag_run_tensor *out, ag_error *err);
/* Accepts NULL; zeroes t. */
AG_EXPORT void ag_run_tensor_free(ag_run_tensor *t);
/* The run input of t (text -1), values borrowed from t. */
AG_EXPORT ag_run_input ag_run_tensor_input(const ag_run_tensor *t);


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
/* What head h has beyond its input (same ctx; attngeom/stability.h
 * ag_head_extra: QK-norm, yarn/longrope, ALiBi): sets ex's members, ex having
 * come from AG_HEAD_EXTRA_DEFAULT (all none); what they point to is ctx's
 * and must outlive the ag_run_heads call. */
typedef void (*ag_run_head_extra_fn)(const void *ctx, int h, ag_head_extra *ex);

/* Family H's input of head h: the norms ‖f_h(x_j)‖ of the vectors it
 * writes for the n tokens into norms (n doubles), filled by the caller
 * (ag_value_norms; for a model's layer, of its GQA key/value head).
 * AG_OK, or a status with err set. */
typedef int (*ag_run_head_norms_fn)(const void *ctx, int h, double *norms, ag_error *err);

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
    const int32_t *ids;         /* (n) the input's token ids: the token-pattern
                                   keys (ag_token_pattern_metrics); NULL: null */
    ag_run_head_norms_fn norms; /* NULL: no family H even when selected */
    const void *norms_ctx;
    const double *scores;       /* appended: (n_head, n, n) the heads' own
                                   pre-softmax scores (ag_layer_view.scores);
                                   with input, family K (ag_lens_metrics);
                                   NULL: none even when selected */
    ag_run_head_extra_fn extra; /* appended: families E and K's extras of
                                   head h (input_ctx; ag_stability_metrics_ex,
                                   ag_lens_metrics); NULL: none */
    const double *q, *k;        /* appended: (n_head, n, head_dim) the heads'
                                   q and k rows (ag_layer_view.q, .k): with
                                   scores, family K from them
                                   (ag_lens_metrics_qk) instead of input;
                                   NULL: from input */
    size_t head_dim;            /* appended: their width */
    size_t n_kv;                /* appended: keys per query: attn is
                                   (n_head, n, n_kv), rectangular for a
                                   cross-attention (ag_layer_view.n_kv);
                                   0: n (square). Only n_kv = n takes ids
                                   and family E; H takes norms of the
                                   n_kv keys, K q (n) and k (n_kv) rows */
    int stack;                  /* appended: the records' ag_stack (0: none;
                                   ag_record_set_stack) */
    const float *attn_f32;      /* appended: with attn NULL, the attention in
                                   float32 (ag_layer_view.attn_f32), each head
                                   widened exactly when its task runs, into
                                   its worker's workspace: no double copy of
                                   the layer */
} ag_run_layer_heads;
/* Kind 3 of core.h's ABI rule: start from it. */
#define AG_RUN_LAYER_HEADS_DEFAULT {.size = sizeof(ag_run_layer_heads), .text = -1}

/* Append to out one record per selected head of L, in head order (layer,
 * head, rows = cols = n, text): families A-C and F of its attention
 * (ag_matrix_metrics_work, opt's "edge_threshold"), with L's ids the
 * token-pattern keys (ag_token_pattern_metrics, the mask detected from A)
 * and, when opt's metrics select family E and L has an input,
 * ag_stability_metrics_ex with L's extra ("epsilon", "trials", "seed"; never under opt's
 * normaliser: it perturbs the head's own softmax), family H when they
 * select it and L has norms (ag_value_metrics), family K when they select
 * it and L has scores and an input (ag_lens_metrics, on the scores and the
 * attention L gives, after families A-C so that rank_lift reuses its
 * effective_rank); heads in parallel (default metrics AG_FAMILIES_HEADS).
 * Returns AG_OK, or the status of the lowest failed head with *failed its
 * number and err its own message (the caller names layer and head); a
 * failure before any head ran (AG_ENOMEM "out of memory for records")
 * leaves *failed -1, as does AG_EINVAL for L's size (ABI rule). After a
 * head's failure out holds a record per selected head, those from the
 * failed one on not to be used. out is the caller's and stays so. */
AG_EXPORT int ag_run_heads(ag_workers *w, const ag_run_layer_heads *L, const ag_run_options *opt,
                           ag_record_list *out, int *failed, ag_error *err);

/* `attngeom analyze`'s records of one input: the pass on `in`
 * (ag_run_forward, opt's precision) and, per selected layer in order
 * (ag_run_options_selection), ag_run_heads of its selected heads with the
 * layer's input X as family E's (GQA-grouped keys) and family H's (the
 * layer's weights fetched once per layer when E, H or K is selected; with
 * K the pass also forms the scores, ag_lens_metrics' input); records carry
 * in->text. With opt's temperatures (ag_run_options_set_temperatures),
 * each T's records in turn, stamped with T. Errors: the selections' (AG_ERANGE "heads: 9 is outside
 * 0..3"), the pass's, ag_model_attn_weights's, and a head's as "layer L
 * head H: <message>" (the lowest failed head of the first failed layer).
 * Family E and the linear normaliser of a QK-norm model (cfg.qk_norm) go
 * through its norm (ag_model_qk_norm, stability.h ag_head_qk_norm). *out
 * the caller's (ag_record_list_free); NULL on failure. w NULL: a pool of
 * "threads", at most the selected heads. An encoder–decoder model (m its
 * encoder, in with its target; ag_run_forward): one record per (stack,
 * layer, head) in pass order, stamped with its stack (ag_record_stack),
 * cross records (n_tgt, n_src); the selections apply in each stack;
 * families E, H and K are null on them, the token-pattern keys read the
 * target's ids on decoder records and are null on cross records; opt's
 * default metrics take family M too (ag_metric_set_default_shape). */
AG_EXPORT int ag_run_analyze(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                             ag_workers *w, ag_record_list **out, ag_error *err);

/* The norm matrices of every head of one layer (Kobayashi et al. 2020,
 * §3; docs/metrics.md, family H): N[h][i][j] = A^h_ij ‖f_h(x_j)‖₂ with
 * f_h(x) = (x W_V^g + b_V^g) W_O^h, g = h / (n_head / n_kv_head) the head's
 * key/value head, x the rows of v->x and A^h v->attn's head h — a layer
 * callback's view with its ag_model_attn_weights w. N is the caller's
 * (v->n_head, v->n, v->n) doubles. Errors: AG_EINVAL (NULL, w without
 * W_V or W_O, or weights that do not fit v: head count, width), and
 * ag_value_norms's as "layer L head H: <message>". */
AG_EXPORT int ag_run_value_norms(const ag_attn_weights *w, const ag_layer_view *v, double *N,
                                 ag_error *err);

/* The attention of one selected layer: its selected heads (heads, n, n)
 * contiguous in head order, borrowed for the call. Non-zero stops the
 * pass and is returned (keep your own error, as for ag_layer_fn). */
typedef int (*ag_run_heads_fn)(int layer, const double *attn, size_t heads, size_t n, void *user);

/* `attngeom attention`'s pass on `in`: fn (may be NULL) gets every
 * selected layer's selected heads in layer order, hidden_fn (may be NULL)
 * every hidden state as the pass makes it, and hidden (may be NULL) all of
 * them, (n_layer + 1, n, d_model) as ag_run_forward fills it. Errors: the
 * selections', the pass's, AG_ENOMEM (a copy of the selected heads when
 * not all are), a callback's status. w NULL: a pool of
 * "threads", at most n_head. */
AG_EXPORT int ag_run_attention(const ag_model *m, const ag_run_input *in,
                               const ag_run_options *opt, ag_workers *w, ag_run_heads_fn fn,
                               ag_hidden_fn hidden_fn, void *user, double *hidden,
                               ag_error *err);

/* ag_run_attention with, from the same pass (ag_forward_options.
 * want_scores: no second one), scores_fn (may be NULL) given each selected
 * layer's selected heads' pre-softmax scores (heads, n, n) after fn has its
 * probabilities: scale·q_i·k_j (Gemma-2 soft-capped) as the pass's
 * precision forms them, −inf where masked, so that softmax of a row is the
 * row of fn's (ag_layer_view.scores). Errors: ag_run_attention's. */
AG_EXPORT int ag_run_attention_scores(const ag_model *m, const ag_run_input *in,
                                      const ag_run_options *opt, ag_workers *w,
                                      ag_run_heads_fn fn, ag_run_heads_fn scores_fn,
                                      ag_hidden_fn hidden_fn, void *user, double *hidden,
                                      ag_error *err);

/* The attention of one selected layer of an encoder–decoder pass: stack
 * (ag_stack: encoder, decoder, cross), its selected heads (heads, n, n_kv)
 * contiguous in head order (n_kv = n but for cross-attention: the
 * source's length), borrowed for the call. Non-zero stops the pass. */
typedef int (*ag_run_stack_heads_fn)(int stack, int layer, const double *attn, size_t heads,
                                     size_t n, size_t n_kv, void *user);

/* `attngeom attention`'s pass on an encoder–decoder model (m its encoder,
 * ag_model_seq2seq; in with its target): fn (may be NULL) gets in pass
 * order every selected encoder layer's selected heads, then per selected
 * decoder layer its self-attention and its cross-attention. --layers and
 * --heads select in each stack (an index must exist in both: AG_ERANGE).
 * enc_hidden (L_enc + 1, n_src, d) and dec_hidden (L_dec + 1, n_tgt, d),
 * each optional, as ag_seq2seq_forward fills them. Under opt's
 * normaliser or temperature fn gets each view's heads under it (a cross
 * view's rows over the sources). Errors: AG_EINVAL (a model of one stack,
 * no target, linear attention), the selections', the pass's, AG_ENOMEM,
 * fn's status.
 * (ag_run_attention and ag_run_attention_scores refuse such a model.) */
AG_EXPORT int ag_run_attention_seq2seq(const ag_model *m, const ag_run_input *in,
                                       const ag_run_options *opt, ag_workers *w,
                                       ag_run_stack_heads_fn fn, void *user,
                                       double *enc_hidden, double *dec_hidden, ag_error *err);

/* ag_run_attention_seq2seq with, from the same pass, scores_fn (may be
 * NULL) given each selected view's selected heads' pre-softmax scores
 * right after fn's attention: (heads, n, n_kv), −inf where masked, T5's
 * q·k plus its position bias (no scale), BART's and Whisper's scaled q·k;
 * cross-attention's unmasked over the n_kv sources. Errors as
 * ag_run_attention_seq2seq's, and scores_fn's status. */
AG_EXPORT int ag_run_attention_seq2seq_scores(const ag_model *m, const ag_run_input *in,
                                              const ag_run_options *opt, ag_workers *w,
                                              ag_run_stack_heads_fn fn,
                                              ag_run_stack_heads_fn scores_fn, void *user,
                                              double *enc_hidden, double *dec_hidden,
                                              ag_error *err);

/* ag_run_attention_seq2seq_scores with both stacks' hidden states streamed
 * rather than filled: hidden_fn (may be NULL) gets the encoder's L_enc + 1
 * states (index 0..L_enc, n the source's length), then the decoder's
 * L_dec + 1 (index 0..L_dec again, n the target's length), each (n, d)
 * borrowed for the call as the pass makes it — one held at a time, where
 * enc_hidden and dec_hidden hold all of them. user goes to every callback.
 * Errors as ag_run_attention_seq2seq_scores's, and hidden_fn's status. */
AG_EXPORT int ag_run_attention_seq2seq_stream(const ag_model *m, const ag_run_input *in,
                                              const ag_run_options *opt, ag_workers *w,
                                              ag_run_stack_heads_fn fn,
                                              ag_run_stack_heads_fn scores_fn,
                                              ag_hidden_fn hidden_fn, void *user, ag_error *err);

/* ---- the induction probe (`attngeom heads --probe induction`) ----------- */

/* The token sequence of Olsson et al. (2022)'s induction probe: a block of
 * `length` (T ≥ 1) tokens drawn uniformly with replacement (as
 * TransformerLens's tutorial's generate_repeated_tokens) from the ids below
 * both m's vocab_size and tok's vocabulary that name a token and are not
 * special (ag_tokenizer_is_special), with GSL's MT19937 set to seed;
 * the block repeated `repeats` (R ≥ 2) times; the whole framed by tok's
 * post-processor as a text is (ag_tokenizer_with_special: a BOS or CLS
 * before, an EOS or SEP after, or nothing). *ids (*n ids, malloc'd: the
 * caller's, free()) and *start, the position of the first block (the
 * special tokens before it). The same ids for the same model, tokenizer,
 * sizes and seed. Errors, checked before anything is drawn: AG_EINVAL for
 * NULL arguments, a model whose input is not token ids, length 0, repeats
 * < 2, a vocabulary without a token that is not special; AG_ERANGE
 * "--length T --repeats R: N tokens with the special ones, more than the
 * P the model takes (n_positions = P)"; AG_EFORMAT when the special tokens
 * do not frame the block; AG_ENOMEM. */
AG_EXPORT int ag_run_probe_tokens(const ag_model *m, const ag_tokenizer *tok, size_t length,
                                  int repeats, unsigned long seed, int32_t **ids, size_t *n,
                                  size_t *start, ag_error *err);

/* The probe's records: one pass on ids[n] (ag_run_attention, opt's
 * precision, layers and heads) and for each selected head of each selected
 * layer, in that order, a record (layer, head, rows = cols = n) of
 * induction_score and induction_baseline (ag_induction_probe_metrics of
 * its attention, blocks of `length` from `start`, `repeats` of them; k_i
 * causal when the matrix is). ids as ag_run_probe_tokens gives them, or any
 * sequence whose ids[start ..] repeat a block so. Errors: AG_EINVAL when
 * they do not ("token I (id X) is not a copy of token J (id Y)") and for
 * sizes that do not fit n, the selections', the pass's, a head's as "layer
 * L head H: <message>". *out the caller's (ag_record_list_free); NULL on
 * failure. w NULL: a pool of opt's "threads", at most n_head. On an
 * encoder–decoder model (m its encoder, ag_model_seq2seq): ids the source,
 * [decoder start] + ids the target (its blocks from start + 1), records in
 * pass order carrying their stack, a cross head's (n + 1, n) with both
 * keys null; heads selected in each stack; AG_EINVAL when config.json gives
 * no decoder_start_token_id. */
AG_EXPORT int ag_run_probe_induction(const ag_model *m, const int32_t *ids, size_t n,
                                     size_t start, size_t length, int repeats,
                                     const ag_run_options *opt, ag_workers *w,
                                     ag_record_list **out, ag_error *err);

/* `attngeom weights`'s records: family D (ag_weight_metrics; default
 * metrics AG_FAMILIES_WEIGHTS) of every selected head of every selected
 * layer of m, or (m NULL) of every head 0..n_head-1 of the one layer
 * `tensors` as layer 0; rows = cols = d (m's d_model, tensors' wq rows).
 * One task per layer (through ag_run_tasks_run with opt: its distribution
 * spreads the layers), the layer's heads in parallel inside it. Errors:
 * AG_EINVAL "no model (NULL)" when both are NULL, the selections',
 * ag_model_attn_weights's, and a head's as "layer L, head H: <message>"
 * (the lowest failed head of the lowest failed layer). *out the caller's
 * (ag_record_list_free); NULL on failure. w NULL: a pool of "threads", at
 * most the layers. On an encoder–decoder model (m its encoder,
 * ag_model_seq2seq): the encoder's layers, then per decoder layer its
 * self-attention and its cross-attention (ag_model_cross_attn_weights),
 * each a task, records carrying their stack; layers and heads selected in
 * each stack (an index must exist in both: AG_ERANGE). */
AG_EXPORT int ag_run_weights(const ag_model *m, const ag_attn_weights *tensors,
                             const ag_run_options *opt, ag_workers *w, ag_record_list **out,
                             ag_error *err);

/* `attngeom matrix`'s records: families A-C and F (default metrics
 * AG_FAMILIES_MATRIX, opt's "edge_threshold") of every matrix of the array
 * (2-D [n,m] one matrix, 3-D [H,n,m] heads, 4-D [L,H,n,m] layers x heads;
 * records (layer, head) in that order) with any strides in doubles
 * (ag_matrices_check, which runs first); a matrix whose rows are not
 * contiguous is gathered into its worker's buffer first (exact copies: the
 * same values). One task per matrix, through ag_run_tasks_run with opt.
 * Errors: ag_matrices_check's, AG_ENOMEM "out of memory for N records", a
 * matrix's as "layer L, head H: <message>" (the lowest failed one). *out
 * the caller's (ag_record_list_free); NULL on failure. w NULL: a pool of
 * "threads", at most the matrices. */
AG_EXPORT int ag_run_matrix(const double *data, int ndim, const size_t *shape,
                            const ptrdiff_t *strides, const ag_run_options *opt, ag_workers *w,
                            ag_record_list **out, ag_error *err);


/* ---- per-layer and across-layer work: residual, rollout, similarity ----- */

/* One input's pass (ag_run_forward on w's pool; w NULL: a pool of opt's
 * "threads" for the call) measured layer by layer as it runs: no array of
 * every layer is held. Records carry layer l, head -1 and text in->text.
 * They are appended to *out (a new list when *out is NULL; the caller's:
 * ag_record_list_free), those made before a failure included. Errors: the
 * pass's (ag_run_forward), AG_ERANGE for a selected layer the model lacks
 * (ag_run_options_selection), then the run's own as each function says. */

/* `attngeom residual`: families A and C (opt's metrics; NULL: the default,
 * spectrum and geometry) and, when selected, family I (ag_activation_metrics
 * with opt's "massive_abs" and "massive_ratio") of every selected hidden
 * state h_l, one record (l, -1, n, d) each in order. opt's "layers" range over the n_layer + 1
 * hidden states 0..n_layer (Hugging Face's output_hidden_states order).
 * A state's failure: "hidden state l: <message>". On an encoder–decoder
 * model (m its encoder, in with its target): the encoder's states (records
 * with stack AG_STACK_ENCODER, n_src rows) then the decoder's
 * (AG_STACK_DECODER, n_tgt rows) of one pass, both held whole
 * ((L + 1)·n·d each; AG_ELIMIT past SIZE_MAX), "layers" selecting in each
 * stack; a failure "<stack> hidden state l: <message>". */
AG_EXPORT int ag_run_residual(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                              ag_workers *w, ag_record_list **out, ag_error *err);

/* What a run hands over of each selected layer l: an (n, n) matrix,
 * borrowed for the call. Return AG_OK to go on; another status stops the
 * run, which returns it with err as the callback set it. */
typedef int (*ag_run_matrix_fn)(int layer, const double *M, size_t n, void *user, ag_error *err);

/* `attngeom rollout` (Abnar & Zuidema 2020; ag_rollout_step): R_l composed
 * layer by layer up to the last selected layer (the later ones are not
 * computed), and for each selected l, in order, one record (l, -1, n, n) of
 * the matrix families of R_l (opt's metrics, NULL: spectrum, attention,
 * geometry; opt's edge_threshold; the worker's workspace), then fn (may be
 * NULL) with R_l (`rollout -o`); with opt's temperatures, each T's run in
 * turn, fn seeing each T's R_l. Failures: "layer l: <message>" (a step),
 * "rollout R_l: <message>" (the metrics), AG_ELIMIT/AG_ENOMEM "<n> tokens:
 * rollout matrix too large", "out of memory for the nxn rollout".
 * On an encoder–decoder model (ag_model_seq2seq; in's target given) one
 * pass gives the encoder's R_l (records with stack AG_STACK_ENCODER), the
 * decoder's self-attention R_l (AG_STACK_DECODER), each over its own
 * layers as opt's "layers" select them (an index must exist in both), and
 * at the decoder's last layer, when selected, the encoder-through-cross
 * composition ag_rollout_cross (AG_STACK_CROSS, (n_tgt, n_src)); fn must
 * be NULL there (AG_EINVAL: the three shapes are not one stream; the
 * matrices are ag_run_rollout_seq2seq's); under a normaliser or
 * temperature each stack composes its lensed heads (linear attention is
 * AG_EINVAL on a pair). */
AG_EXPORT int ag_run_rollout(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                             ag_workers *w, ag_run_matrix_fn fn, void *user, ag_record_list **out,
                             ag_error *err);

/* ag_run_rollout on an encoder–decoder model (m its encoder,
 * ag_model_seq2seq; in with its target): the same records, and fn (may
 * be NULL) given each recorded matrix, borrowed for the call, as
 * (stack, layer, M, 1, rows, cols, user) in record order: the encoder's
 * R_l (AG_STACK_ENCODER, n_src × n_src), the decoder's self-attention
 * R_l (AG_STACK_DECODER, n_tgt × n_tgt), then R_cross (AG_STACK_CROSS,
 * the decoder's last layer, n_tgt × n_src) when that layer is selected.
 * fn's non-zero stops the pass: AG_EIO "<stack> layer l: the rollout's
 * function stopped the pass" (the caller knows why). Other errors:
 * ag_run_rollout's; AG_EINVAL for a model of one stack. */
AG_EXPORT int ag_run_rollout_seq2seq(const ag_model *m, const ag_run_input *in,
                                     const ag_run_options *opt, ag_workers *w,
                                     ag_run_stack_heads_fn fn, void *user,
                                     ag_record_list **out, ag_error *err);

/* What ag_run_contributions hands over of each selected layer, borrowed
 * for the call: the layer's matrices M (heads, n, n) — one (heads = 1) N,
 * C or F_l by the method, or with AG_CONTRIB_NORMS the selected heads' N^h
 * in head order —, the composition R (n, n) through layers 0..layer when
 * the run composes, else NULL, and the context mixing (n): 1 − C_ii with
 * ALTI, the ratio r_i with norms-res (attngeom/contributions.h), NULL with
 * norms and flow. */
typedef struct {
    int layer;
    size_t n;
    const double *M, *R, *mixing;
    size_t heads;
    int stack;  /* appended: an encoder–decoder model's stack of the layer
                   (AG_STACK_ENCODER, AG_STACK_DECODER: its self-attention
                   sublayer), AG_STACK_NONE for a model of one stack */
} ag_run_contrib_view;
/* AG_OK to go on; another status stops the run (err as the callback set it). */
typedef int (*ag_run_contrib_fn)(const ag_run_contrib_view *v, void *user, ag_error *err);

/* One layer of m decomposed (ag_contributions_layer) from what a pass
 * gives: the layer callback's view v (X, A) and h (n, d), the hidden state
 * entering the layer (ag_hidden_fn index v->layer), with the layer's
 * ag_model_attn_weights and ag_model_block_params. Errors: theirs. */
AG_EXPORT int ag_run_contributions_layer(const ag_model *m, const ag_layer_view *v,
                                         const double *h, const ag_contrib_output *out,
                                         ag_error *err);

/* `attngeom contributions`: per layer, up to the last selected one, the
 * decomposition of the attention block (ag_contributions_layer, inputs from
 * the pass: the hidden state, the callback's X and A, ag_model_attn_weights,
 * ag_model_block_params), the method's matrix M_l and, with compose (ALTI
 * only), R_0 = C_0, R_l = C_l R_{l−1}; for each selected layer, in order,
 * one record (l, -1, n, n) of the matrix families (opt's metrics, NULL:
 * AG_FAMILIES_ROLLOUT) of R_l (compose) or M_l, then fn (may be NULL). With
 * precision f32 the terms decompose the float32 pass's activations in
 * double: they sum to its y up to float32 rounding. Two methods take other
 * routes: AG_CONTRIB_NORMS gives per selected layer the norm matrices of
 * opt's selected heads (ag_run_value_norms) and one record (l, h, n, n) per
 * head (ag_run_heads on them); AG_CONTRIB_FLOW is ag_run_flow (its
 * flow_max_tokens cap). Under opt's normaliser (ag_run_options_set_normalizer)
 * every method takes the lensed A' as its factor (norms: A'_ij |f_h(x_j)|;
 * flow: the lensed head mean), and norms-res and ALTI decompose the
 * counterfactual output y'_i = sum_j T'_i(x_j) + bias, which ALTI measures
 * its distances to; the hidden states entering the layers stay the
 * model's. With opt's temperatures, each T's run in turn (fn sees each T's
 * matrices). Failures: AG_EINVAL "composing needs --method
 * alti" for compose with another method, "layer l: <message>" (a
 * decomposition, the weights), "contributions M_l: <message>" (the
 * metrics), "layer l head h: <message>" (norms), ag_run_flow's,
 * AG_ELIMIT/AG_ENOMEM.
 * On an encoder–decoder model (ag_model_seq2seq; in with its target) one
 * pass decomposes AG_CONTRIB_NORMS_RES and AG_CONTRIB_ALTI per stack: the
 * encoder's layers, then the decoder's self-attention sublayers (the
 * decoder's block input h_l, its self-attention and the norm after it:
 * y = h + SA(x), or LN(h + SA(h)) post-LN; the cross-attention adds to
 * the stream after y and enters the next layer's h, not the terms), each
 * stack composed over its own layers; records and fn's views carry the
 * stack, opt's "layers" select in each (an index must exist in both).
 * AG_CONTRIB_NORMS and AG_CONTRIB_FLOW are AG_EINVAL there ("<type> is an
 * encoder-decoder model: --method norms|flow is not yet taken ..."). */
AG_EXPORT int ag_run_contributions(const ag_model *m, const ag_run_input *in,
                                   const ag_run_options *opt, ag_workers *w,
                                   ag_contrib_method method, int compose, ag_run_contrib_fn fn,
                                   void *user, ag_record_list **out, ag_error *err);

/* Attention flow (Abnar & Zuidema 2020, §3; the graph, its direction and
 * its departures from the authors' code are attngeom/layers.h's): F (n, n),
 * caller-allocated, the maximum flow from each output token i of the top
 * of the capacities cap (n_layer, n, n) to each input token j, its rows
 * fanned out as tasks over w (NULL: a pool of opt's "threads", at most n)
 * in this process whatever opt's distribution; the same bytes for any
 * thread count. Errors: those of ag_flow_graph_new; a pair's failure (the
 * lowest task's) "F[i][j]: <message>"; AG_ENOMEM. */
AG_EXPORT int ag_run_flow_matrix(const double *cap, int n_layer, size_t n,
                                 const ag_run_options *opt, ag_workers *w, double *F,
                                 ag_error *err);

/* The attention flow of one input (`contributions --method flow`): the
 * capacities Ã_l = ½ Ā_l + ½ I (ag_rollout_mix) of every layer up to the
 * last selected one (the later ones are not computed), then for each
 * selected l, in order, F_l — the flow through layers 0 … l, as the
 * authors' compute_flows gives for the nodes of layer l + 1 — by
 * ag_run_flow_matrix, one record (l, -1, n, n) of its matrix families
 * (opt's metrics, NULL: spectrum, attention, geometry; opt's
 * edge_threshold) and fn (may be NULL) with F_l. Each F_l costs its own n²
 * flows, so an input of more than opt's "flow_max_tokens" (default 64)
 * tokens is refused at the first layer, before any flow runs: AG_ELIMIT
 * "<n> tokens: attention flow takes at most <max> ...". Other failures:
 * AG_EINVAL "flow: no record list (NULL)" for out NULL;
 * "layer l: <message>" (a layer's attention), "flow F_l:
 * <message>" (the flows or the metrics), AG_ELIMIT/AG_ENOMEM "<n> tokens:
 * <L> flow layers too large", "out of memory for ..." */
AG_EXPORT int ag_run_flow(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                          ag_workers *w, ag_run_matrix_fn fn, void *user, ag_record_list **out,
                          ag_error *err);

/* The K heads `attngeom similarity` compares: the selected heads (opt's
 * "heads") of every selected layer, layer-major; on an encoder–decoder
 * model (ag_model_seq2seq) the encoder's, then the decoder's
 * self-attention heads, then its cross-attention heads, each stack
 * selected as ag_run_analyze does (an index must exist in both stacks).
 * *pairs gets (K, 2) ints, (layer, head) each (the caller's: ag_free),
 * *count K. AG_ERANGE for a selected layer or head the model lacks. */
AG_EXPORT int ag_run_similarity_heads(const ag_model *m, const ag_run_options *opt, int **pairs,
                                      size_t *count, ag_error *err);
/* ag_run_similarity_heads with each head's stack: *heads gets (K, 3) ints,
 * (stack, layer, head) each, stack an ag_stack (AG_STACK_NONE on a model
 * of one stack; the caller's: ag_free). Errors as ag_run_similarity_heads. */
AG_EXPORT int ag_run_similarity_stack_heads(const ag_model *m, const ag_run_options *opt,
                                            int **heads, size_t *count, ag_error *err);
/* One input's Jensen–Shannon distance (ag_js_distance, averaged over the
 * rows) between the attention of every pair of those K heads into dist
 * (the caller's, (K, K) doubles: symmetric, zero diagonal; on an
 * encoder–decoder model (in's target given) only heads of one stack are
 * compared, a pair across stacks NaN; cross heads over their (n_tgt,
 * n_src) rows; with opt's
 * temperatures, one (K, K) block per T in their order, count × K × K
 * doubles, each T its own pass). The pass stops
 * after the last selected layer; the pairs run one task per head a through
 * ag_run_tasks_run on w (in this process, whatever opt's distribution).
 * Failures: a pair's ag_js_distance error (the lowest head a), AG_ELIMIT/
 * AG_ENOMEM "<n> tokens: the attention of K heads is too large", "out of
 * memory for the attention of K heads on n tokens". */
AG_EXPORT int ag_run_similarity(const ag_model *m, const ag_run_input *in,
                                const ag_run_options *opt, ag_workers *w, double *dist,
                                ag_error *err);


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
    int window;                    /* sliding window (band when not causal); 0: none */
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
