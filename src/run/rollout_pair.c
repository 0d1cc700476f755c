/* rollout_pair.c — attngeom/run.h, ag_run_rollout on an encoder–decoder
 * model (docs/metrics.md, "rollout"): in one pass, the encoder's rollout
 * R_enc,l over its layers and the decoder's self-attention rollout
 * R_dec,l over its layers (Abnar & Zuidema 2020, §3, as a model of one
 * stack's), and at the decoder's last layer the encoder-through-cross
 * composition R_cross = Ā_cross,L · R_enc,last (ag_rollout_cross); each
 * recorded matrix also goes to the caller's function as it is recorded
 * (ag_run_rollout_seq2seq: `rollout -o --decoder --cross`). */
#include <stdlib.h>

#include "run_int.h"
#include "attngeom/layers.h"
#include "layers_int.h"

typedef struct {
    const ag_run_options *opt;
    const ag_metric_set *sel;
    ag_workers *w;
    const unsigned char *on[2]; /* the layers recorded: encoder's, decoder's */
    int last_dec;               /* the decoder's last layer (its cross composes) */
    long text;
    double *R[2];               /* (n, n) each stack's rollout, made at its layer 0 */
    size_t n[2];
    ag_run_stack_heads_fn fn;   /* each recorded matrix, or NULL */
    void *user;
    ag_record_list **out;
    ag_error err;
} pair_ctx;

static int pair_alloc(pair_ctx *c, int k, size_t n)
{
    if (n > (size_t)-1 / sizeof(double) / n)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: rollout matrix too large", n);
    if (!(c->R[k] = malloc(n * n * sizeof *c->R[k])))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for the %zux%zu rollout", n, n);
    c->n[k] = n;
    return AG_OK;
}

/* The record of a (rows, cols) matrix at `at`, then fn's turn with it
 * (its status, non-zero, stops the pass: the failed write is the
 * caller's to report). */
static int pair_record(pair_ctx *c, const agr_matrix_at *at, const double *M, const char *what)
{
    int status = agr_matrix_record_at(c->opt, c->sel, c->w, c->text, at, M, what, c->out,
                                      &c->err);
    if (status == AG_OK && c->fn && c->fn(at->stack, at->layer, M, 1, at->rows, at->cols, c->user))
        status = ag_error_set(&c->err, AG_EIO, "%s layer %d: the rollout's function stopped "
                              "the pass", ag_stack_name(at->stack), at->layer);
    return status;
}

/* One stack's rollout step (k 0 encoder, 1 decoder) and its record. */
static int pair_self(pair_ctx *c, int k, const ag_layer_view *v)
{
    ag_error e = {0};
    int status = c->R[k] ? AG_OK : pair_alloc(c, k, v->n);
    if (status == AG_OK &&
        (status = ag_rollout_step(c->R[k], v->attn, v->n_head, v->n, v->layer == 0, &e)) != AG_OK)
        return ag_error_set(&c->err, status, "%s layer %d: %s", ag_stack_name(v->stack),
                            v->layer, e.message);
    if (status != AG_OK || !c->on[k][v->layer])
        return status;
    agr_matrix_at at = {v->layer, v->stack, v->n, v->n};
    return pair_record(c, &at, c->R[k], "rollout R");
}

/* The last decoder layer's cross-attention composed with the encoder's
 * rollout, recorded when that layer is selected. */
static int pair_cross(pair_ctx *c, const ag_layer_view *v)
{
    if (v->layer != c->last_dec || !c->on[1][v->layer])
        return AG_OK;
    size_t m = v->n, n = v->n_kv;
    if (!c->R[0] || c->n[0] != n)
        return ag_error_set(&c->err, AG_EINVAL, "cross layer %d: no encoder rollout over its "
                            "%zu sources", v->layer, n);
    double *C = malloc(m * n * sizeof *C); /* m, n: the pass's, already held as (H, m, n) */
    if (!C)
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for the %zux%zu cross rollout",
                            m, n);
    ag_error e = {0};
    int status = ag_rollout_cross(v->attn, v->n_head, m, n, c->R[0], C, &e);
    if (status != AG_OK)
        ag_error_set(&c->err, status, "cross layer %d: %s", v->layer, e.message);
    agr_matrix_at at = {v->layer, AG_STACK_CROSS, m, n};
    if (status == AG_OK)
        status = pair_record(c, &at, C, "rollout R_cross");
    free(C);
    return status;
}

static int pair_layer(const ag_layer_view *v, void *user)
{
    pair_ctx *c = user;
    if (v->stack == AG_STACK_CROSS)
        return pair_cross(c, v);
    return pair_self(c, v->stack == AG_STACK_DECODER, v);
}

int agr_rollout_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                     ag_workers *w, ag_run_stack_heads_fn fn, void *user,
                     ag_record_list **out, ag_error *err)
{
    const ag_model *stacks[2] = {m, ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER)};
    ag_selection *layers[2] = {NULL, NULL}, *heads[2] = {NULL, NULL};
    ag_workers *own = NULL;
    ag_metric_set *mine = NULL;
    pair_ctx c = {.opt = opt, .fn = fn, .user = user, .out = out,
                  .last_dec = ag_model_get_config(stacks[1])->n_layer - 1};
    int status = AG_OK;
    for (int k = 0; k < 2 && status == AG_OK; k++)
        status = agr_model_selections(stacks[k], opt, &layers[k], &heads[k], err);
    if (status == AG_OK && !w)
        status = ag_run_workers(opt, SIZE_MAX, &own, err);
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_ROLLOUT, &mine, err)))
        status = err->status;
    if (status == AG_OK) {
        c.w = w ? w : own;
        c.text = in ? in->text : -1;
        c.on[0] = ag_selection_mask(layers[0]);
        c.on[1] = ag_selection_mask(layers[1]);
        ag_forward_options fo = ag_run_forward_options(opt, c.w);
        ag_error e = {0};
        status = agr_forward(m, in, &fo, agr_options(opt), pair_layer, &c, NULL, &e);
        if (status != AG_OK)
            *err = c.err.status ? c.err : e;
    }
    for (int k = 0; k < 2; k++) {
        free(c.R[k]);
        ag_selection_free(layers[k]);
        ag_selection_free(heads[k]);
    }
    ag_metric_set_free(mine);
    ag_workers_free(own);
    return status;
}
