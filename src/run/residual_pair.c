/* residual_pair.c — attngeom/run.h, ag_run_residual on an encoder–decoder
 * model (docs/metrics.md, family G "residual"): one pass of the source and
 * its target gives both stacks' hidden states in Hugging Face's
 * output_hidden_states order (encoder_hidden_states: L_enc + 1 of the
 * source's positions, decoder_hidden_states: L_dec + 1 of the target's;
 * ag_seq2seq_forward), each measured as a model of one stack's (families
 * A, C and, when selected, I), records carrying their stack. The pass
 * streams them (hidden_fn: the encoder's, then the decoder's), each
 * measured as it comes: one hidden state is held at a time, as for a model
 * of one stack. */
#include <stdint.h>
#include <stdlib.h>

#include "run_int.h"
#include "base/sized_int.h"
#include "layers_int.h"
#include "../../analysis/analysis.h"

/* The pass's hidden states to c, the first n_enc the encoder's. */
typedef struct {
    agr_residual_ctx *c;
    const unsigned char *layer_on[2]; /* the encoder's, the decoder's selection */
    int n_enc;                        /* L_enc + 1 */
    int calls;
} pair_stream;

/* An ag_hidden_fn: hidden state l of the stack the pass is in. */
static int pair_state(int l, size_t n, size_t d, const double *h, void *user)
{
    pair_stream *p = user;
    int k = p->calls++ >= p->n_enc;
    p->c->layer_on = p->layer_on[k];
    p->c->stack = k ? AG_STACK_DECODER : AG_STACK_ENCODER;
    return agr_residual_state(l, n, d, h, p->c);
}

int agr_residual_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                      ag_workers *w, ag_record_list **out, ag_error *err)
{
    const ag_model *st[2] = {m, ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER)};
    ag_run_input given = AG_RUN_INPUT_DEFAULT;
    ag_selection *layers[2] = {NULL, NULL};
    ag_metric_set *own = NULL;
    ag_workers *own_w = NULL;
    int status = in ? AG_SIZED_READ(&given, in, ag_run_input, err) : AG_OK;
    agr_residual_ctx c = {.text = given.text, .out = out, .opt = agr_options(opt)};
    if (status == AG_OK && !given.target) /* the pass's own message */
        status = ag_run_forward_seq2seq(m, &given, NULL, NULL, NULL, NULL, NULL, err);
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_RESIDUAL, &own, err)))
        status = err->status;
    for (int k = 0; k < 2 && status == AG_OK; k++)
        status = ag_run_options_selection(opt, "layers", ag_model_get_config(st[k])->n_layer + 1,
                                          &layers[k], err);
    if (status == AG_OK && !w)
        status = ag_run_workers(opt, SIZE_MAX, &own_w, err);
    if (status == AG_OK) {
        c.activations = ag_family_selected(c.sel, AG_FAMILY_ACTIVATIONS);
        pair_stream p = {.c = &c, .n_enc = ag_model_get_config(m)->n_layer + 1,
                         .layer_on = {ag_selection_mask(layers[0]), ag_selection_mask(layers[1])}};
        ag_forward_options fo = ag_run_forward_options(opt, w ? w : own_w);
        fo.hidden_fn = pair_state;
        fo.hidden_user = &p;
        status = ag_run_forward_seq2seq(m, &given, &fo, NULL, NULL, NULL, NULL, err);
        if (status != AG_OK && c.err.status != AG_OK) /* the metrics' failure */
            *err = c.err;
    }
    for (int k = 0; k < 2; k++)
        ag_selection_free(layers[k]);
    ag_workers_free(own_w);
    ag_metric_set_free(own);
    return status;
}
