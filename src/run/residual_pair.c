/* residual_pair.c — attngeom/run.h, ag_run_residual on an encoder–decoder
 * model (docs/metrics.md, family G "residual"): one pass of the source and
 * its target gives both stacks' hidden states in Hugging Face's
 * output_hidden_states order (encoder_hidden_states: L_enc + 1 of the
 * source's positions, decoder_hidden_states: L_dec + 1 of the target's;
 * ag_seq2seq_forward), each measured as a model of one stack's (families
 * A, C and, when selected, I), records carrying their stack. The pass of a
 * pair hands its hidden states over whole, so both stacks' are held. */
#include <stdint.h>
#include <stdlib.h>

#include "run_int.h"
#include "base/sized_int.h"
#include "layers_int.h"
#include "../../analysis/analysis.h"

/* A (L + 1, n, d) buffer of one stack's hidden states, its size capped
 * (n 0: one value, the pass then names the empty input). */
static double *hidden_alloc(const ag_model *m, size_t n, ag_error *err)
{
    const ag_model_config *g = ag_model_get_config(m);
    size_t rows = (size_t)g->n_layer + 1, d = (size_t)g->d_model;
    if (n > SIZE_MAX / sizeof(double) / rows / d) {
        ag_error_set(err, AG_ELIMIT, "%s hidden states of %zu positions: too large",
                     ag_model_type(m), n);
        return NULL;
    }
    double *h = malloc((n ? rows * n * d : 1) * sizeof *h);
    if (!h)
        ag_error_set(err, AG_ENOMEM, "out of memory for %zu hidden states of %zu positions",
                     rows, n);
    return h;
}

/* The source's positions: its ids, or the encoder's for its input tensor
 * (Whisper: ⌈T/2⌉ frames). */
static int source_positions(const ag_model *m, const ag_run_input *in, size_t *n, ag_error *err)
{
    *n = in->n;
    if (in->ids || !in->values)
        return AG_OK;
    return ag_model_input_positions(m, in->ndim, in->shape, n, err);
}

/* Stack k's selected hidden states (h: (L + 1, n, d)) into c's records. */
static int stack_records(agr_residual_ctx *c, const ag_model *m, const double *h, size_t n,
                         ag_error *err)
{
    size_t d = (size_t)ag_model_get_config(m)->d_model;
    int status = AG_OK;
    for (int l = 0; status == AG_OK && l <= ag_model_get_config(m)->n_layer; l++)
        status = agr_residual_state(l, n, d, h + (size_t)l * n * d, c);
    if (status != AG_OK && c->err.status != AG_OK)
        *err = c->err;
    return status;
}

int agr_residual_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                      ag_workers *w, ag_record_list **out, ag_error *err)
{
    const ag_model *st[2] = {m, ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER)};
    ag_run_input given = AG_RUN_INPUT_DEFAULT;
    ag_selection *layers[2] = {NULL, NULL};
    ag_metric_set *own = NULL;
    ag_workers *own_w = NULL;
    double *h[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    int status = in ? AG_SIZED_READ(&given, in, ag_run_input, err) : AG_OK;
    agr_residual_ctx c = {.text = given.text, .out = out, .opt = agr_options(opt)};
    if (status == AG_OK && !given.target) /* the pass's own message */
        status = ag_run_forward_seq2seq(m, &given, NULL, NULL, NULL, NULL, NULL, err);
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_RESIDUAL, &own, err)))
        status = err->status;
    for (int k = 0; k < 2 && status == AG_OK; k++)
        status = ag_run_options_selection(opt, "layers", ag_model_get_config(st[k])->n_layer + 1,
                                          &layers[k], err);
    if (status == AG_OK)
        status = source_positions(m, &given, &n[0], err);
    n[1] = given.n_target;
    for (int k = 0; k < 2 && status == AG_OK; k++)
        if (!(h[k] = hidden_alloc(st[k], n[k], err)))
            status = err->status;
    if (status == AG_OK && !w)
        status = ag_run_workers(opt, SIZE_MAX, &own_w, err);
    if (status == AG_OK) {
        ag_forward_options fo = ag_run_forward_options(opt, w ? w : own_w);
        status = ag_run_forward_seq2seq(m, &given, &fo, NULL, NULL, h[0], h[1], err);
    }
    c.activations = status == AG_OK && ag_family_selected(c.sel, AG_FAMILY_ACTIVATIONS);
    for (int k = 0; k < 2 && status == AG_OK; k++) {
        c.layer_on = ag_selection_mask(layers[k]);
        c.stack = k ? AG_STACK_DECODER : AG_STACK_ENCODER;
        status = stack_records(&c, st[k], h[k], n[k], err);
    }
    for (int k = 0; k < 2; k++) {
        free(h[k]);
        ag_selection_free(layers[k]);
    }
    ag_workers_free(own_w);
    ag_metric_set_free(own);
    return status;
}
