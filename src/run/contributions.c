/* contributions.c — attngeom/run.h, `attngeom contributions`: one input's
 * pass, each layer's attention block decomposed as it runs
 * (ag_contributions_layer: Kobayashi et al. 2021's norms, Ferrando et al.
 * 2022's ALTI) and ALTI composed through the layers. Streams the pass: the
 * hidden state entering the layer and the matrices in hand are all it
 * holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "run_int.h"
#include "attngeom/layers.h"
#include "layers_int.h"

typedef struct {
    const ag_model *m;
    const ag_run_options *opt;
    const ag_metric_set *sel;
    ag_workers *w;
    ag_contrib_method method;
    int compose;
    const unsigned char *layer_on; /* (n_layer) */
    int last;                      /* the last selected layer */
    int stack;                     /* an encoder–decoder model's ag_stack, or AG_STACK_NONE */
    long text;
    double *h;                     /* (n, d) the hidden state entering the layer */
    double *M, *R, *mix;           /* (n, n), (n, n) when composing, (n) */
    ag_run_contrib_fn fn;
    void *user;
    ag_record_list **out;
    ag_error err;
} contrib_ctx;

static int contrib_alloc(contrib_ctx *c, size_t n, size_t d)
{
    if (n > SIZE_MAX / sizeof(double) / n / 2 || n > SIZE_MAX / sizeof(double) / d)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: contribution matrix too large", n);
    c->h = malloc(n * d * sizeof *c->h);
    c->M = malloc(n * n * sizeof *c->M);
    c->mix = malloc(n * sizeof *c->mix);
    c->R = c->compose ? malloc(n * n * sizeof *c->R) : NULL;
    if (!c->h || !c->M || !c->mix || (c->compose && !c->R))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for the %zux%zu contributions", n, n);
    return AG_OK;
}

/* Hidden state l (< n_layer) is the input of block l. */
static int contrib_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    contrib_ctx *c = user;
    if (index > c->last)
        return AG_OK;
    int status = c->h ? AG_OK : contrib_alloc(c, n, d);
    if (status == AG_OK)
        memcpy(c->h, h, n * d * sizeof *h);
    return status;
}

int ag_run_contributions_layer(const ag_model *m, const ag_layer_view *v, const double *h,
                               const ag_contrib_output *out, ag_error *err)
{
    if (!m || !v || !h || !out)
        return ag_error_set(err, AG_EINVAL, "contributions: missing argument");
    ag_attn_weights aw;
    ag_block_params bp;
    int status = ag_model_attn_weights(m, v->layer, &aw, err);
    if (status != AG_OK)
        return status;
    if ((status = ag_model_block_params(m, v->layer, &bp, err)) == AG_OK) {
        ag_contrib_input in = AG_CONTRIB_INPUT_DEFAULT;
        in.n = v->n;
        in.d = v->d;
        in.attn = v->attn;
        in.x = v->x;
        in.h = h;
        in.w = &aw;
        in.p = &bp;
        status = ag_contributions_layer(&in, out, err);
    }
    ag_block_params_free(&bp);
    ag_attn_weights_free(&aw);
    return status;
}

/* Layer v->layer's matrix into c->M, its context mixing into c->mix: the
 * ratio r_i (Kobayashi et al. 2021, §5) with norms-res, 1 − C_ii with ALTI
 * (the share of token i's output that comes from the other tokens,
 * Ferrando et al. 2022, §3). */
static int contrib_decompose(contrib_ctx *c, const ag_layer_view *v, ag_error *e)
{
    ag_contrib_output out = {0};
    if (c->method == AG_CONTRIB_ALTI)
        out.alti = c->M;
    else {
        out.norms = c->M;
        out.mixing = c->mix;
    }
    int status = ag_run_contributions_layer(c->m, v, c->h, &out, e);
    for (size_t i = 0; status == AG_OK && out.alti && i < v->n; i++)
        c->mix[i] = 1 - c->M[i * v->n + i];
    return status;
}

/* Layer l's record, with context_mixing the mean of c->mix (GSL's
 * running mean), and callback. */
static int contrib_give(contrib_ctx *c, int layer, size_t n)
{
    const double *M = c->compose ? c->R : c->M;
    agr_matrix_at at = {layer, c->stack, n, n};
    int status = agr_matrix_record_at(c->opt, c->sel, c->w, c->text, &at, M,
                                      c->compose ? "contributions R" : "contributions M", c->out,
                                      &c->err);
    if (status != AG_OK)
        return status;
    if (ag_metric_set_has(c->sel, AG_M_CONTEXT_MIXING))
        ag_record_set(ag_record_list_at(*c->out, ag_record_list_count(*c->out) - 1),
                      AG_M_CONTEXT_MIXING, AG_V_NUMBER, gsl_stats_mean(c->mix, 1, n));
    ag_run_contrib_view view = {.layer = layer, .n = n, .M = c->M, .R = c->R, .mixing = c->mix,
                                .heads = 1, .stack = c->stack};
    return c->fn ? c->fn(&view, c->user, &c->err) : AG_OK;
}

static int contrib_layer(const ag_layer_view *v, void *user)
{
    contrib_ctx *c = user;
    ag_error e = {0};
    int status = contrib_decompose(c, v, &e);
    if (status == AG_OK && c->compose)
        status = ag_contributions_compose(c->R, c->M, v->n, v->layer == 0, &e);
    if (status != AG_OK)
        return ag_error_set(&c->err, status, "%s%slayer %d: %s",
                            c->stack ? ag_stack_name(c->stack) : "", c->stack ? " " : "",
                            v->layer, e.message);
    if (c->layer_on[v->layer] && (status = contrib_give(c, v->layer, v->n)) != AG_OK)
        return status;
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

/* What ag_run_contributions' run at each temperature shares. */
typedef struct {
    const ag_model *m;
    const ag_run_input *in;
    ag_workers *w;
    ag_contrib_method method;
    int compose;
    ag_run_contrib_fn fn;
    void *user;
} contrib_call;

/* ---- an encoder–decoder model: each stack's self-attention -------------- */

/* The pair's run: one contrib_ctx per stack (0 the encoder, 1 the
 * decoder), the pass's hidden states handed to the stack they belong to
 * (the encoder's L_enc + 1 come first, then the decoder's from index 0). */
typedef struct {
    contrib_ctx c[2];
    int k;          /* the stack whose hidden states are coming */
    int seen;       /* a hidden state has come */
} contrib_pair;

static int pair_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    contrib_pair *p = user;
    if (index == 0 && p->seen)
        p->k = 1;
    p->seen = 1;
    return contrib_hidden(index, n, d, h, &p->c[p->k]);
}

/* Encoder and decoder self-attention views decomposed as one stack's
 * (the decoder's is its self-attention sublayer: y = h + SA(x), or
 * LN(h + SA(h)) post-LN, before the cross-attention adds to it); the
 * cross-attention views are not (docs/metrics.md, "Contributions"). The
 * encoder's last selected layer does not end the pass. */
static int pair_layer(const ag_layer_view *v, void *user)
{
    contrib_pair *p = user;
    if (v->stack == AG_STACK_CROSS)
        return AG_OK;
    int k = v->stack == AG_STACK_DECODER;
    if (k && v->layer > p->c[1].last)
        return AGR_PASS_DONE;
    if (!k && v->layer > p->c[0].last)
        return AG_OK;
    int status = contrib_layer(v, &p->c[k]);
    return status == AGR_PASS_DONE && !k ? AG_OK : status;
}

/* What a pair's run does not yet give, refused in one line (err set,
 * non-zero): the per-head norms (they include the cross-attention's, whose
 * W_V, W_O are not read here), attention flow (ag_run_flow's stream is
 * one square stack). */
static int contrib_pair_refused(const contrib_call *k, ag_error *err)
{
    const char *type = ag_model_type(k->m);
    if (k->method == AG_CONTRIB_NORMS)
        return ag_error_set(err, AG_EINVAL, "%s is an encoder-decoder model: --method norms is "
                            "not yet taken (its cross-attention heads' W_V, W_O are not read; "
                            "norms-res and alti are)", type);
    if (k->method == AG_CONTRIB_FLOW)
        return ag_error_set(err, AG_EINVAL, "%s is an encoder-decoder model: --method flow is "
                            "not yet taken (norms-res and alti are)", type);
    return 0;
}

/* contrib_at on an encoder–decoder model: ALTI or norms-res of each
 * stack, records carrying their stack; --layers selects in each. */
static int contrib_pair_at(const ag_run_options *opt, const contrib_call *k,
                           ag_record_list **out, ag_error *err)
{
    const ag_model *stacks[2] = {k->m, ag_seq2seq_stack(ag_model_seq2seq(k->m), AG_STACK_DECODER)};
    ag_selection *layers[2] = {NULL, NULL}, *heads[2] = {NULL, NULL};
    ag_workers *own = NULL;
    ag_metric_set *mine = NULL;
    contrib_pair p = {0};
    int status = AG_OK;
    for (int s = 0; s < 2 && status == AG_OK; s++)
        status = agr_model_selections(stacks[s], opt, &layers[s], &heads[s], err);
    if (status == AG_OK && !k->w)
        status = ag_run_workers(opt, SIZE_MAX, &own, err);
    const ag_metric_set *sel = status == AG_OK
                                   ? agr_metrics_or_default(opt, AG_FAMILIES_CONTRIBUTIONS, &mine, err)
                                   : NULL;
    if (status == AG_OK && !sel)
        status = err->status;
    for (int s = 0; s < 2 && status == AG_OK; s++)
        p.c[s] = (contrib_ctx){.m = stacks[s], .opt = opt, .sel = sel, .w = k->w ? k->w : own,
                               .method = k->method, .compose = k->compose,
                               .layer_on = ag_selection_mask(layers[s]),
                               .last = ag_selection_last(layers[s]),
                               .stack = s ? AG_STACK_DECODER : AG_STACK_ENCODER,
                               .text = k->in ? k->in->text : -1, .fn = k->fn, .user = k->user,
                               .out = out};
    if (status == AG_OK) {
        ag_forward_options fo = ag_run_forward_options(opt, p.c[0].w);
        fo.hidden_fn = pair_hidden;
        fo.hidden_user = &p;
        ag_error e = {0};
        status = agr_forward(k->m, k->in, &fo, agr_options(opt), pair_layer, &p, NULL, &e);
        if (status == AGR_PASS_DONE) /* the decoder's last selected layer: its note in e */
            status = AG_OK;
        if (status != AG_OK)
            *err = p.c[0].err.status ? p.c[0].err : p.c[1].err.status ? p.c[1].err : e;
    }
    for (int s = 0; s < 2; s++) {
        free(p.c[s].h);
        free(p.c[s].M);
        free(p.c[s].R);
        free(p.c[s].mix);
        ag_selection_free(layers[s]);
        ag_selection_free(heads[s]);
    }
    ag_metric_set_free(mine);
    ag_workers_free(own);
    return status;
}

/* ---- --method norms: the value norms of each head ----------------------- */

typedef struct {
    const ag_model *m;
    ag_run_options opt;            /* the caller's, its metrics the run's */
    ag_workers *w;
    const ag_selection *heads;     /* over n_head */
    const unsigned char *layer_on; /* (n_layer) */
    int last;
    long text;
    double *N;                     /* (n_head, n, n) */
    ag_run_contrib_fn fn;
    void *user;
    ag_record_list **out;
    ag_error err;
} norms_ctx;

static int norms_alloc(norms_ctx *c, const ag_layer_view *v)
{
    size_t n = v->n, H = (size_t)v->n_head;
    if (n && n > SIZE_MAX / sizeof(double) / n / H)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: %zu heads' norm matrices too large",
                            n, H);
    if (!(c->N = malloc((n ? H * n * n : 1) * sizeof *c->N)))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for %zu heads' %zux%zu norms", H,
                            n, n);
    if (!*c->out && !(*c->out = ag_record_list_new()))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for records");
    return AG_OK;
}

/* The records of the selected heads' N^h (ag_run_heads: families of a
 * matrix, heads in parallel), then fn with them contiguous in head order
 * (moved down in place: the k-th selected head is at k or above). */
static int norms_give(norms_ctx *c, const ag_layer_view *v)
{
    ag_run_layer_heads L = agr_layer_heads(v, c->N, c->text, c->heads);
    int h = -1;
    ag_error e = {0};
    int status = ag_run_heads(c->w, &L, &c->opt, *c->out, &h, &e);
    if (status != AG_OK)
        return h < 0 ? (c->err = e, status)
                     : ag_error_set(&c->err, status, "layer %d head %d: %s", v->layer, h,
                                    e.message);
    size_t count = ag_selection_count(c->heads), nn = v->n * v->n;
    const int *idx = ag_selection_indices(c->heads);
    for (size_t k = 0; k < count; k++)
        memmove(c->N + k * nn, c->N + (size_t)idx[k] * nn, nn * sizeof *c->N);
    ag_run_contrib_view view = {.layer = v->layer, .n = v->n, .M = c->N, .heads = count};
    return c->fn ? c->fn(&view, c->user, &c->err) : AG_OK;
}

static int norms_layer(const ag_layer_view *v, void *user)
{
    norms_ctx *c = user;
    if (!c->layer_on[v->layer])
        return AG_OK;
    int status = c->N ? AG_OK : norms_alloc(c, v);
    ag_attn_weights aw;
    if (status == AG_OK &&
        (status = ag_model_attn_weights(c->m, v->layer, &aw, &c->err)) == AG_OK) {
        status = ag_run_value_norms(&aw, v, c->N, &c->err);
        ag_attn_weights_free(&aw);
    }
    if (status == AG_OK)
        status = norms_give(c, v);
    if (status != AG_OK)
        return status;
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

static int run_norms(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                     ag_workers *w, ag_run_contrib_fn fn, void *user, ag_record_list **out,
                     ag_error *err)
{
    agr_pass p;
    ag_metric_set *own = NULL;
    ag_selection *heads = NULL;
    int status = agr_pass_begin(&p, m, in, opt, 0, w, err);
    norms_ctx c = {.m = m, .opt = *agr_options(opt), .w = p.w, .text = p.in.text, .fn = fn,
                   .user = user, .out = out};
    if (status == AG_OK && !(c.opt.metrics = agr_metrics_or_default(opt, AG_FAMILIES_CONTRIBUTIONS,
                                                                    &own, err)))
        status = err->status;
    if (status == AG_OK)
        status = ag_run_options_selection(opt, "heads", ag_model_get_config(m)->n_head, &heads,
                                          err);
    if (status == AG_OK) {
        c.heads = heads;
        c.layer_on = ag_selection_mask(p.layers);
        c.last = ag_selection_last(p.layers);
        status = agr_pass_run(&p, m, norms_layer, &c, &c.err, err);
    }
    free(c.N);
    ag_selection_free(heads);
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}

/* ---- --method flow: ag_run_flow's F_l as the method's matrices --------- */

typedef struct {
    ag_run_contrib_fn fn;
    void *user;
} flow_give_ctx;

static int flow_give(int layer, const double *F, size_t n, void *user, ag_error *err)
{
    const flow_give_ctx *g = user;
    ag_run_contrib_view view = {.layer = layer, .n = n, .M = F, .heads = 1};
    return g->fn(&view, g->user, err);
}

/* ag_run_flow with the contributions' default metrics (context_mixing,
 * null) when opt has none: the records of every method have one layout. */
static int run_flow(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                    ag_workers *w, ag_run_contrib_fn fn, void *user, ag_record_list **out,
                    ag_error *err)
{
    flow_give_ctx g = {fn, user};
    ag_metric_set *own = NULL;
    ag_run_options o = *agr_options(opt);
    if (!(o.metrics = agr_metrics_or_default(opt, AG_FAMILIES_CONTRIBUTIONS, &own, err)))
        return err->status;
    int status = ag_run_flow(m, in, &o, w, fn ? flow_give : NULL, &g, out, err);
    ag_metric_set_free(own);
    return status;
}

/* ---- the entry point ------------------------------------------------------ */


/* One input's contributions under one normaliser (opt's, no list). Under
 * a lens every method takes the lensed A as its factor: the norms are
 * A'_ij |f(x_j)|, and norms-res and ALTI decompose the counterfactual
 * block output y'_i = sum_j T'_i(x_j) + bias (ag_contributions_layer sums
 * the terms it decomposes; with an after-norm, its scale is y''s), to
 * which ALTI's distances are measured. */
static int contrib_at(const ag_run_options *opt, void *user, ag_record_list **out, ag_error *err)
{
    const contrib_call *k = user;
    if (ag_model_seq2seq(k->m))
        return contrib_pair_refused(k, err) ? err->status : contrib_pair_at(opt, k, out, err);
    if (k->method == AG_CONTRIB_NORMS)
        return run_norms(k->m, k->in, opt, k->w, k->fn, k->user, out, err);
    if (k->method == AG_CONTRIB_FLOW)
        return run_flow(k->m, k->in, opt, k->w, k->fn, k->user, out, err);
    agr_pass p;
    ag_metric_set *own = NULL;
    int status = agr_pass_begin(&p, k->m, k->in, opt, 0, k->w, err);
    contrib_ctx c = {.m = k->m, .opt = opt, .w = p.w, .method = k->method,
                     .compose = k->compose, .text = p.in.text, .fn = k->fn, .user = k->user,
                     .out = out};
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_CONTRIBUTIONS, &own, err)))
        status = err->status;
    if (status == AG_OK) {
        c.layer_on = ag_selection_mask(p.layers);
        c.last = ag_selection_last(p.layers);
        p.fo.hidden_fn = contrib_hidden;
        p.fo.hidden_user = &c;
        status = agr_pass_run(&p, k->m, contrib_layer, &c, &c.err, err);
    }
    free(c.h);
    free(c.M);
    free(c.R);
    free(c.mix);
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}

int ag_run_contributions(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                         ag_workers *w, ag_contrib_method method, int compose,
                         ag_run_contrib_fn fn, void *user, ag_record_list **out, ag_error *err)
{
    if ((unsigned)method > AG_CONTRIB_FLOW)
        return ag_error_set(err, AG_EINVAL, "contributions: unknown method %d", (int)method);
    if (compose && method != AG_CONTRIB_ALTI)
        return ag_error_set(err, AG_EINVAL, "composing needs --method alti (norms are not a mixing of contributions)");
    contrib_call call = {m, in, w, method, compose, fn, user};
    return agr_each_temperature(agr_options(opt), contrib_at, &call, out, err);
}
