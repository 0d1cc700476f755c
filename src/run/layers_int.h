/* Internal prefix: agr_ (module src/run/). */
/* layers_int.h — what the per-layer runs (layers.c, similarity.c) share:
 * the run of one input over a model's selected layers. */
#ifndef AG_LAYERS_INT_H
#define AG_LAYERS_INT_H

#include "attngeom/run.h"

/* Returned by a layer callback after the last selected layer: the layers
 * after it are not computed. Not an AG_ status, so never a failure. */
#define AGR_PASS_DONE 1000

/* One input's run over the layers: the input (read by its size: NULL is
 * one with neither ids nor values), the selection of opt's "layers" over
 * n_layer + extra (extra 1: the hidden states 0..n_layer), the workers
 * (w, or a pool of opt's threads owned here) and the pass's options on
 * them. */
typedef struct {
    ag_run_input in;
    ag_selection *layers;
    ag_workers *w, *own;
    ag_forward_options fo;
    const ag_run_options *opt; /* borrowed: its normaliser (agr_forward) */
} agr_pass;

int agr_pass_begin(agr_pass *p, const ag_model *m, const ag_run_input *in,
                   const ag_run_options *opt, int extra, ag_workers *w, ag_error *err);
void agr_pass_end(agr_pass *p);
/* The pass on p's input with fn per layer; the callbacks' own error (ctx_err,
 * set when they failed) wins over the pass's, AGR_PASS_DONE is AG_OK. */
int agr_pass_run(const agr_pass *p, const ag_model *m, ag_layer_fn fn, void *user,
                 const ag_error *ctx_err, ag_error *err);

/* `residual`'s measure of hidden states: the selected ones (layer_on over
 * 0..n_layer) of one stack (AG_STACK_NONE: a model of one stack, records
 * without stack), appended to *out. */
typedef struct {
    const unsigned char *layer_on; /* (n_layer + 1) */
    const ag_metric_set *sel;
    const ag_run_options *opt;     /* family I's thresholds */
    int activations;               /* family I selected */
    int stack;
    long text;
    ag_record_list **out;
    ag_error err; /* the metrics' failure */
} agr_residual_ctx;
/* Hidden state l (n, d) of c (an ag_hidden_fn): its record when selected;
 * a failure named "[stack ]hidden state l: <message>" in c->err. */
int agr_residual_state(int l, size_t n, size_t d, const double *h, void *user);
/* ag_run_residual on an encoder–decoder model (residual_pair.c): both
 * stacks' hidden states of one pass, the encoder's then the decoder's. */
int agr_residual_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                      ag_workers *w, ag_record_list **out, ag_error *err);

/* A record appended to *out (made when NULL); NULL with err set when out
 * of memory. */
ag_record *agr_record_add(ag_record_list **out, ag_error *err);
/* opt's metrics, or the default of `families` made into *own (the
 * caller frees it); NULL with err set on failure. */
const ag_metric_set *agr_metrics_or_default(const ag_run_options *opt, unsigned families,
                                            ag_metric_set **own, ag_error *err);
/* A record (layer, -1, n, n) of the matrix M's families (sel; opt's edge
 * threshold; the calling thread's workspace of w), text `text`, appended to
 * *out (made when NULL). AG_ENOMEM "out of memory for records", or the
 * metrics' failure as "<what>_<layer>: <message>". */
int agr_matrix_record(const ag_run_options *opt, const ag_metric_set *sel, ag_workers *w,
                      long text, int layer, const double *M, size_t n, const char *what,
                      ag_record_list **out, ag_error *err);

/* Where a matrix record sits: its layer, stack (AG_STACK_NONE: none
 * recorded) and shape (rows, cols). */
typedef struct {
    int layer, stack;
    size_t rows, cols;
} agr_matrix_at;
/* agr_matrix_record of a (rows, cols) matrix at `at`, the record carrying
 * its stack. */
int agr_matrix_record_at(const ag_run_options *opt, const ag_metric_set *sel, ag_workers *w,
                         long text, const agr_matrix_at *at, const double *M, const char *what,
                         ag_record_list **out, ag_error *err);
/* ag_run_rollout on an encoder–decoder model (rollout_pair.c): the
 * encoder's and the decoder's rollouts and the encoder-through-cross
 * composition, records carrying their stack. */
int agr_rollout_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                     ag_workers *w, ag_record_list **out, ag_error *err);

#endif
