/* seq2seq.c — the arrays of an encoder–decoder folder (t5, bart, whisper;
 * issue 30): `attention`'s encoder, decoder and cross-attention arrays and
 * both stacks' hidden states of one source and its target, streamed as
 * the pass gives the layers, and the files of `rollout`'s R per stack
 * (docs/cli.md, "Encoder-decoder models"). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef cli_s2s_writers s2s_ctx;

/* Appended to w (NULL: nothing). */
static int write_to(ag_npy_writer *w, const double *a, size_t count, s2s_ctx *c)
{
    return w ? ag_npy_writer_write(w, a, count, &c->err) : 0;
}

int cli_s2s_write(int stack, int layer, const double *attn, size_t heads, size_t n, size_t n_kv,
                  void *user)
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

int cli_s2s_decoder_counts(const cli_model_run *r, const char *cmd, size_t *nl, size_t *nh,
                           int *last)
{
    const ag_model *dec = ag_seq2seq_stack(r->pair, AG_STACK_DECODER);
    const ag_model_config *g = ag_model_get_config(dec);
    ag_selection *l = NULL, *h = NULL;
    int rc = cli_selection(cmd, r->input.layers, g->n_layer, "layers", r->model_dir, &l);
    if (rc == 0)
        rc = cli_selection(cmd, r->input.heads, g->n_head, "heads", r->model_dir, &h);
    *nl = ag_selection_count(l);
    *nh = ag_selection_count(h);
    if (last)
        *last = rc == 0 && ag_selection_last(l) == g->n_layer - 1;
    ag_selection_free(l);
    ag_selection_free(h);
    return rc;
}

/* An ag_hidden_fn: a hidden state appended to its stack's array (the
 * pass streams the encoder's L_enc + 1, then the decoder's). */
static int write_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    (void)index;
    s2s_ctx *c = user;
    return write_to(c->wh[c->states++ >= c->n_enc_states], h, n * d, c);
}

/* An output array: its path (NULL: not asked for), shape and writer. */
typedef struct {
    const char *path;
    int ndim;
    const size_t *shape;
    ag_npy_writer **w;
} s2s_array;

/* Opens each array asked for, in order, until one fails. */
static int open_arrays(cli_outputs *tx, const s2s_array *a, size_t count)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < count; i++)
        if (a[i].path)
            rc = cli_outputs_npy(tx, a[i].path, a[i].ndim, a[i].shape, a[i].w);
    return rc;
}

/* The pass, every array written as it comes. */
static int s2s_pass(cli_model_run *r, const cli_seq *s, s2s_ctx *c)
{
    ag_run_input in;
    double *owned = NULL;
    ag_error err = {0};
    int status = cli_seq_input(r, s, &in, &owned, &err);
    int scores = c->ws[AG_STACK_ENCODER] || c->ws[AG_STACK_DECODER] || c->ws[AG_STACK_CROSS];
    c->n_enc_states = ag_model_get_config(r->model)->n_layer + 1;
    if (status == AG_OK)
        status = ag_run_attention_seq2seq_stream(
            r->model, &in, r->opt, r->workers.workers, cli_s2s_write,
            scores ? write_stack_scores : NULL, c->wh[0] || c->wh[1] ? write_hidden : NULL, c,
            &err);
    free(owned);
    if (status == AG_OK)
        return 0;
    return c->err.status ? cli_fail_error(&c->err) : cli_model_run_fail(r, s, &err);
}

/* `attention`'s arrays of a pair: probabilities and scores per stack
 * (layers, heads, queries, keys), hidden states (L + 1, n, d) per stack. */
static int open_attention_arrays(cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p,
                                 cli_outputs *tx, s2s_ctx *c)
{
    const ag_model *dec = ag_seq2seq_stack(r->pair, AG_STACK_DECODER);
    const ag_model_config *ge = ag_model_get_config(r->model), *gd = ag_model_get_config(dec);
    size_t ns = s->n, nt = s->target ? s->n_target : r->n_target, dl = 0, dh = 0;
    size_t el = ag_selection_count(r->layers), eh = ag_selection_count(r->heads);
    int rc = cli_s2s_decoder_counts(r, "attention", &dl, &dh, NULL);
    size_t enc_shape[4] = {el, eh, ns, ns}, dec_shape[4] = {dl, dh, nt, nt},
           cross_shape[4] = {dl, dh, nt, ns},
           ehs[3] = {(size_t)ge->n_layer + 1, ns, (size_t)ge->d_model},
           dhs[3] = {(size_t)gd->n_layer + 1, nt, (size_t)gd->d_model};
    const s2s_array a[] = {
        {p->out, 4, enc_shape, &c->w[AG_STACK_ENCODER]},
        {p->decoder, 4, dec_shape, &c->w[AG_STACK_DECODER]},
        {p->cross, 4, cross_shape, &c->w[AG_STACK_CROSS]},
        {p->scores, 4, enc_shape, &c->ws[AG_STACK_ENCODER]},
        {p->decoder_scores, 4, dec_shape, &c->ws[AG_STACK_DECODER]},
        {p->cross_scores, 4, cross_shape, &c->ws[AG_STACK_CROSS]},
        {p->hidden, 3, ehs, &c->wh[0]},
        {p->decoder_hidden, 3, dhs, &c->wh[1]},
    };
    return rc == 0 ? open_arrays(tx, a, sizeof a / sizeof *a) : rc;
}

int cli_attention_seq2seq(cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p)
{
    s2s_ctx c = {0};
    cli_outputs tx = {0};
    int rc = open_attention_arrays(r, s, p, &tx, &c);
    if (rc == 0)
        rc = s2s_pass(r, s, &c);
    return cli_outputs_finish(&tx, rc);
}

int cli_rollout_seq2seq_open(cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p,
                             cli_outputs *tx, cli_s2s_writers *w)
{
    const ag_model *dec = ag_seq2seq_stack(r->pair, AG_STACK_DECODER);
    size_t ns = s->n, nt = s->target ? s->n_target : r->n_target, dl = 0, dh = 0;
    int last = 0, rc = cli_s2s_decoder_counts(r, "rollout", &dl, &dh, &last);
    if (rc == 0 && p->cross && !last)
        rc = cli_fail("%s: --cross %s is R_cross of the decoder's last layer (%d), which "
                      "--layers leaves out", r->model_dir, p->cross,
                      ag_model_get_config(dec)->n_layer - 1);
    size_t enc_shape[3] = {ag_selection_count(r->layers), ns, ns}, dec_shape[3] = {dl, nt, nt},
           cross_shape[2] = {nt, ns};
    const s2s_array a[] = {
        {p->out, 3, enc_shape, &w->w[AG_STACK_ENCODER]},
        {p->decoder, 3, dec_shape, &w->w[AG_STACK_DECODER]},
        {p->cross, 2, cross_shape, &w->w[AG_STACK_CROSS]},
    };
    return rc == 0 ? open_arrays(tx, a, sizeof a / sizeof *a) : rc;
}

int cli_s2s_need_pair(const cli_model_run *r, const cli_s2s_paths *p, const char *options)
{
    if (r->pair || !(p->decoder || p->cross || p->decoder_hidden || p->decoder_scores ||
                     p->cross_scores))
        return 0;
    return cli_fail("%s: %s need%s an encoder-decoder model (t5, bart, whisper) and its target",
                    r->model_dir, options, strchr(options, ' ') ? "" : "s");
}

int cli_s2s_option(cli_s2s_paths *p, const char *cmd, int argc, char **argv, int *i)
{
    const char **dst = cli_is_option(argv[*i], "--decoder") ? &p->decoder
                       : cli_is_option(argv[*i], "--cross") ? &p->cross
                                                            : NULL;
    if (!dst)
        return 0;
    return (*dst = cli_option_value(cmd, argv[*i], argc, argv, i)) ? 1 : -1;
}

const char *cli_s2s_arrays(cli_model_run *r, cli_s2s_paths *p, const char **opt)
{
    p->out = r->common.out_path;
    r->common.out_path = NULL;
    r->outs[0] = (cli_path){"-o", p->out};
    r->outs[1] = (cli_path){"--decoder", p->decoder};
    r->outs[2] = (cli_path){"--cross", p->cross};
    r->outs[3] = (cli_path){"the records", "-"};
    *opt = p->out ? "-o" : p->decoder ? "--decoder" : "--cross";
    return p->out ? p->out : p->decoder ? p->decoder : p->cross;
}
