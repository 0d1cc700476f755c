/* contributions.c — attngeom/run.h, `attngeom contributions`: one input's
 * pass, each layer's attention block decomposed as it runs
 * (ag_contributions_layer: Kobayashi et al. 2021's norms, Ferrando et al.
 * 2022's ALTI) and ALTI composed through the layers. Streams the pass: the
 * hidden state entering the layer and the matrices in hand are all it
 * holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Layer v->layer's matrix into c->M, its mixing ratio into c->mix. */
static int contrib_decompose(contrib_ctx *c, const ag_layer_view *v, ag_error *e)
{
    ag_contrib_output out = {.mixing = c->mix};
    if (c->method == AG_CONTRIB_ALTI)
        out.alti = c->M;
    else
        out.norms = c->M;
    return ag_run_contributions_layer(c->m, v, c->h, &out, e);
}

/* Layer l's record and callback. */
static int contrib_give(contrib_ctx *c, int layer, size_t n)
{
    const double *M = c->compose ? c->R : c->M;
    int status = agr_matrix_record(c->opt, c->sel, c->w, c->text, layer, M, n,
                                   c->compose ? "contributions R" : "contributions M", c->out,
                                   &c->err);
    if (status != AG_OK)
        return status;
    ag_run_contrib_view view = {.layer = layer, .n = n, .M = c->M, .R = c->R, .mixing = c->mix};
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
        return ag_error_set(&c->err, status, "layer %d: %s", v->layer, e.message);
    if (c->layer_on[v->layer] && (status = contrib_give(c, v->layer, v->n)) != AG_OK)
        return status;
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

int ag_run_contributions(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                         ag_workers *w, ag_contrib_method method, int compose,
                         ag_run_contrib_fn fn, void *user, ag_record_list **out, ag_error *err)
{
    if (method != AG_CONTRIB_NORMS_RES && method != AG_CONTRIB_ALTI)
        return ag_error_set(err, AG_EINVAL, "contributions: unknown method %d", (int)method);
    if (compose && method != AG_CONTRIB_ALTI)
        return ag_error_set(err, AG_EINVAL, "composing needs --method alti (norms are not a mixing of contributions)");
    agr_pass p;
    ag_metric_set *own = NULL;
    int status = agr_pass_begin(&p, m, in, opt, 0, w, err);
    contrib_ctx c = {.m = m, .opt = opt, .w = p.w, .method = method, .compose = compose,
                     .text = p.in.text, .fn = fn, .user = user, .out = out};
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_ROLLOUT, &own, err)))
        status = err->status;
    if (status == AG_OK) {
        c.layer_on = ag_selection_mask(p.layers);
        c.last = ag_selection_last(p.layers);
        p.fo.hidden_fn = contrib_hidden;
        p.fo.hidden_user = &c;
        status = agr_pass_run(&p, m, contrib_layer, &c, &c.err, err);
    }
    free(c.h);
    free(c.M);
    free(c.R);
    free(c.mix);
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}
