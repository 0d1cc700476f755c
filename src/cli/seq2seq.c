/* seq2seq.c — `attngeom attention` on an encoder–decoder folder (t5,
 * bart; issue 30): the encoder's, the decoder's and the cross-attention's
 * arrays and both stacks' hidden states of one source and its target,
 * streamed as the pass gives the layers (docs/cli.md, "Encoder-decoder
 * models"). */
#include <stdlib.h>

#include "cli.h"

typedef struct {
    ag_npy_writer *w[4];  /* indexed by ag_stack: [1] -o, [2] --decoder, [3] --cross */
    ag_npy_writer *ws[4]; /* the same of --scores, --decoder-scores, --cross-scores */
    ag_error err;         /* the write that failed */
} s2s_ctx;

/* Appended to w (NULL: nothing). */
static int write_to(ag_npy_writer *w, const double *a, size_t count, s2s_ctx *c)
{
    return w ? ag_npy_writer_write(w, a, count, &c->err) : 0;
}

/* A selected layer's selected heads, appended to its stack's array. */
static int write_stack(int stack, int layer, const double *attn, size_t heads, size_t n,
                       size_t n_kv, void *user)
{
    (void)layer;
    s2s_ctx *c = user;
    return write_to(stack > 0 && stack < 4 ? c->w[stack] : NULL, attn, heads * n * n_kv, c);
}

/* Their scores, appended to the stack's scores array. */
static int write_stack_scores(int stack, int layer, const double *s, size_t heads, size_t n,
                              size_t n_kv, void *user)
{
    (void)layer;
    s2s_ctx *c = user;
    return write_to(stack > 0 && stack < 4 ? c->ws[stack] : NULL, s, heads * n * n_kv, c);
}

/* The decoder's selections (over its own layers and heads). */
static int dec_counts(const cli_model_run *r, const ag_model *dec, size_t *nl, size_t *nh)
{
    const ag_model_config *g = ag_model_get_config(dec);
    ag_selection *l = NULL, *h = NULL;
    int rc = cli_selection("attention", r->input.layers, g->n_layer, "layers", r->model_dir, &l);
    if (rc == 0)
        rc = cli_selection("attention", r->input.heads, g->n_head, "heads", r->model_dir, &h);
    *nl = ag_selection_count(l);
    *nh = ag_selection_count(h);
    ag_selection_free(l);
    ag_selection_free(h);
    return rc;
}

/* One stack's hidden states (L + 1, n, d) in a buffer, capped: NULL after
 * printing. */
static double *hidden_buffer(const ag_model *m, size_t n)
{
    const ag_model_config *g = ag_model_get_config(m);
    size_t rows = (size_t)g->n_layer + 1, d = (size_t)g->d_model;
    if (n > SIZE_MAX / sizeof(double) / rows / d) {
        cli_fail("hidden states of %zu tokens: too large", n);
        return NULL;
    }
    double *h = malloc(rows * n * d * sizeof *h);
    if (!h)
        cli_fail("out of memory for hidden states of %zu tokens", n);
    return h;
}

/* Open path (when given) for an array of the given shape. */
static int open_npy(cli_outputs *tx, const char *path, int ndim, const size_t *shape,
                    ag_npy_writer **w)
{
    return path ? cli_outputs_npy(tx, path, ndim, shape, w) : 0;
}

/* The pass, then the hidden states written whole. */
static int s2s_pass(cli_model_run *r, const cli_seq *s, s2s_ctx *c, double *eh, double *dh,
                    ag_npy_writer *hw[2])
{
    ag_run_input in;
    double *owned = NULL;
    ag_error err = {0};
    int status = cli_seq_input(r, s, &in, &owned, &err);
    int scores = c->ws[AG_STACK_ENCODER] || c->ws[AG_STACK_DECODER] || c->ws[AG_STACK_CROSS];
    if (status == AG_OK)
        status = ag_run_attention_seq2seq_scores(r->model, &in, r->opt, r->workers.workers,
                                                 write_stack, scores ? write_stack_scores : NULL,
                                                 c, eh, dh, &err);
    free(owned);
    const ag_model *m[2] = {r->model, ag_seq2seq_stack(r->pair, AG_STACK_DECODER)};
    size_t n[2] = {s->n, s->target ? s->n_target : r->n_target};
    double *h[2] = {eh, dh};
    for (int k = 0; k < 2 && status == AG_OK; k++) {
        const ag_model_config *g = ag_model_get_config(m[k]);
        if (hw[k])
            status = ag_npy_writer_write(hw[k], h[k],
                                         ((size_t)g->n_layer + 1) * n[k] * (size_t)g->d_model,
                                         &c->err);
    }
    if (status == AG_OK)
        return 0;
    return c->err.status ? cli_fail_error(&c->err) : cli_model_run_fail(r, s, &err);
}

int cli_attention_seq2seq(cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p)
{
    const ag_model *dec = ag_seq2seq_stack(r->pair, AG_STACK_DECODER);
    const ag_model_config *ge = ag_model_get_config(r->model), *gd = ag_model_get_config(dec);
    size_t ns = s->n, nt = s->target ? s->n_target : r->n_target, dl = 0, dh = 0;
    size_t el = ag_selection_count(r->layers), eh = ag_selection_count(r->heads);
    int rc = dec_counts(r, dec, &dl, &dh);
    size_t enc_shape[4] = {el, eh, ns, ns}, dec_shape[4] = {dl, dh, nt, nt},
           cross_shape[4] = {dl, dh, nt, ns},
           ehs[3] = {(size_t)ge->n_layer + 1, ns, (size_t)ge->d_model},
           dhs[3] = {(size_t)gd->n_layer + 1, nt, (size_t)gd->d_model};
    s2s_ctx c = {0};
    ag_npy_writer *hw[2] = {NULL, NULL};
    double *ebuf = NULL, *dbuf = NULL;
    cli_outputs tx = {0};
    if (rc == 0)
        rc = open_npy(&tx, p->out, 4, enc_shape, &c.w[AG_STACK_ENCODER]);
    if (rc == 0)
        rc = open_npy(&tx, p->decoder, 4, dec_shape, &c.w[AG_STACK_DECODER]);
    if (rc == 0)
        rc = open_npy(&tx, p->cross, 4, cross_shape, &c.w[AG_STACK_CROSS]);
    if (rc == 0)
        rc = open_npy(&tx, p->scores, 4, enc_shape, &c.ws[AG_STACK_ENCODER]);
    if (rc == 0)
        rc = open_npy(&tx, p->decoder_scores, 4, dec_shape, &c.ws[AG_STACK_DECODER]);
    if (rc == 0)
        rc = open_npy(&tx, p->cross_scores, 4, cross_shape, &c.ws[AG_STACK_CROSS]);
    if (rc == 0)
        rc = open_npy(&tx, p->hidden, 3, ehs, &hw[0]);
    if (rc == 0)
        rc = open_npy(&tx, p->decoder_hidden, 3, dhs, &hw[1]);
    if (rc == 0 && p->hidden && !(ebuf = hidden_buffer(r->model, ns)))
        rc = 1;
    if (rc == 0 && p->decoder_hidden && !(dbuf = hidden_buffer(dec, nt)))
        rc = 1;
    if (rc == 0)
        rc = s2s_pass(r, s, &c, ebuf, dbuf, hw);
    free(ebuf);
    free(dbuf);
    return cli_outputs_finish(&tx, rc);
}
