/* layers.c — attngeom/run.h, per-layer and across-layer work of one input:
 * `attngeom residual` (families A and C of each selected hidden state) and
 * `attngeom rollout` (the metrics of R_l). Both stream one forward pass:
 * no (L+1, n, d) or (L, n, n) array is held, only the state or R in hand. */
#include <stdint.h>
#include <stdlib.h>

#include "run_int.h"
#include "attngeom/layers.h"
#include "base/sized_int.h"
#include "layers_int.h"
#include "../../analysis/analysis.h"

/* ---- one input's run over the layers ------------------------------------ */

int agr_pass_begin(agr_pass *p, const ag_model *m, const ag_run_input *in,
                   const ag_run_options *opt, int extra, ag_workers *w, ag_error *err)
{
    *p = (agr_pass){.in = AG_RUN_INPUT_DEFAULT};
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    int status = in ? AG_SIZED_READ(&p->in, in, ag_run_input, err) : AG_OK;
    if (status == AG_OK)
        status = ag_run_options_selection(opt, "layers", ag_model_get_config(m)->n_layer + extra,
                                          &p->layers, err);
    if (status == AG_OK && !w)
        status = ag_run_workers(opt, SIZE_MAX, &p->own, err);
    p->w = w ? w : p->own;
    p->fo = ag_run_forward_options(opt, p->w);
    p->opt = agr_options(opt);
    if (status != AG_OK)
        agr_pass_end(p);
    return status;
}

void agr_pass_end(agr_pass *p)
{
    ag_selection_free(p->layers);
    ag_workers_free(p->own);
    *p = (agr_pass){0};
}

int agr_pass_run(const agr_pass *p, const ag_model *m, ag_layer_fn fn, void *user,
                 const ag_error *ctx_err, ag_error *err)
{
    ag_error e = {0}; /* a pass stopped at AGR_PASS_DONE leaves its note here */
    if (ag_model_seq2seq(m)) /* the layers of one stack, square: not a pair's views */
        return ag_error_set(err, AG_EINVAL, "%s is an encoder-decoder model: this run takes "
                            "a model of one stack (docs/cli.md, encoder-decoder models: "
                            "what runs a pair)",
                            ag_model_type(m));
    int status = agr_forward(m, &p->in, &p->fo, p->opt, fn, user, NULL, &e);
    if (status == AGR_PASS_DONE || status == AG_OK)
        return AG_OK;
    *err = ctx_err->status ? *ctx_err : e;
    return status;
}

/* A record appended to *out (made when NULL). */
ag_record *agr_record_add(ag_record_list **out, ag_error *err)
{
    if (!*out && !(*out = ag_record_list_new())) {
        ag_error_set(err, AG_ENOMEM, "out of memory for records");
        return NULL;
    }
    ag_record *rec = ag_record_list_add(*out, err);
    if (!rec)
        ag_error_set(err, AG_ENOMEM, "out of memory for records");
    return rec;
}

/* opt's metrics, or the default of `families` made into *own. */
const ag_metric_set *agr_metrics_or_default(const ag_run_options *opt, unsigned families,
                                           ag_metric_set **own, ag_error *err)
{
    *own = NULL;
    if (opt && opt->metrics)
        return opt->metrics;
    return ag_metric_set_new(families, NULL, own, err) == AG_OK ? *own : NULL;
}

int agr_matrix_record(const ag_run_options *opt, const ag_metric_set *sel, ag_workers *w,
                      long text, int layer, const double *M, size_t n, const char *what,
                      ag_record_list **out, ag_error *err)
{
    agr_matrix_at at = {layer, AG_STACK_NONE, n, n};
    return agr_matrix_record_at(opt, sel, w, text, &at, M, what, out, err);
}

int agr_matrix_record_at(const ag_run_options *opt, const ag_metric_set *sel, ag_workers *w,
                         long text, const agr_matrix_at *at, const double *M, const char *what,
                         ag_record_list **out, ag_error *err)
{
    ag_record *rec = agr_record_add(out, err);
    if (!rec)
        return AG_ENOMEM;
    int layer = at->layer;
    size_t n = at->cols;
    ag_record_init(rec, layer, -1, at->rows, n);
    ag_record_set_text(rec, text);
    if (at->stack != AG_STACK_NONE)
        ag_record_set_stack(rec, at->stack);
    ag_matrix_options mo = {.size = sizeof(ag_matrix_options),
                            .edge_threshold = opt ? opt->edge_threshold : -1};
    ag_error e = {0};
    int status = ag_matrix_metrics_work(M, at->rows, n, sel, &mo, ag_workers_work(w), rec, &e);
    if (status != AG_OK)
        return ag_error_set(err, status, "%s_%d: %s", what, layer, e.message);
    return AG_OK;
}

/* ---- residual ------------------------------------------------------------ */

int agr_residual_state(int l, size_t n, size_t d, const double *h, void *user)
{
    agr_residual_ctx *c = user;
    if (!c->layer_on[l])
        return 0;
    ag_record *rec = agr_record_add(c->out, &c->err);
    if (!rec)
        return AG_ENOMEM;
    ag_record_init(rec, l, -1, n, d);
    ag_record_set_text(rec, c->text);
    if (c->stack != AG_STACK_NONE)
        ag_record_set_stack(rec, c->stack);
    ag_error e = {0};
    int status = ag_residual_metrics(h, n, d, c->sel, rec, &e);
    if (status == AG_OK && c->activations)
        status = ag_activation_metrics(h, n, d, c->opt->massive_abs, c->opt->massive_ratio,
                                       c->sel, rec, &e);
    if (status != AG_OK)
        ag_error_set(&c->err, status, "%s%shidden state %d: %s",
                     c->stack ? ag_stack_name(c->stack) : "", c->stack ? " " : "", l, e.message);
    return status;
}

int ag_run_residual(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                    ag_workers *w, ag_record_list **out, ag_error *err)
{
    if (ag_model_seq2seq(m)) /* both stacks' hidden states, from one pass */
        return agr_residual_pair(m, in, opt, w, out, err);
    agr_pass p;
    ag_metric_set *own = NULL;
    int status = agr_pass_begin(&p, m, in, opt, 1, w, err);
    agr_residual_ctx c = {.text = p.in.text, .out = out, .opt = agr_options(opt)};
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_RESIDUAL, &own, err)))
        status = err->status;
    if (status == AG_OK) {
        c.layer_on = ag_selection_mask(p.layers);
        c.activations = ag_family_selected(c.sel, AG_FAMILY_ACTIVATIONS);
        p.fo.hidden_fn = agr_residual_state;
        p.fo.hidden_user = &c;
        status = agr_pass_run(&p, m, NULL, NULL, &c.err, err);
    }
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}

/* ---- rollout ------------------------------------------------------------- */

typedef struct {
    const ag_run_options *opt;
    const ag_metric_set *sel;
    ag_workers *w;
    const unsigned char *layer_on; /* (n_layer) */
    int last;                      /* the last selected layer */
    long text;
    double *R;                     /* (n, n), made at layer 0 */
    ag_run_matrix_fn fn;           /* each selected R_l, or NULL */
    void *user;
    ag_record_list **out;
    ag_error err;
} rollout_ctx;

static int rollout_alloc(rollout_ctx *c, size_t n)
{
    if (n > (size_t)-1 / sizeof(double) / n)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: rollout matrix too large", n);
    if (!(c->R = malloc(n * n * sizeof *c->R)))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for the %zux%zu rollout", n, n);
    return AG_OK;
}

static int rollout_layer(const ag_layer_view *v, void *user)
{
    rollout_ctx *c = user;
    ag_error e = {0};
    int status = c->R ? AG_OK : rollout_alloc(c, v->n);
    if (status == AG_OK &&
        (status = ag_rollout_step(c->R, v->attn, v->n_head, v->n, v->layer == 0, &e)) != AG_OK)
        return ag_error_set(&c->err, status, "layer %d: %s", v->layer, e.message);
    if (status != AG_OK || !c->layer_on[v->layer])
        return status;
    if ((status = agr_matrix_record(c->opt, c->sel, c->w, c->text, v->layer, c->R, v->n, "rollout R",
                                    c->out, &c->err)) != AG_OK)
        return status;
    if (c->fn && (status = c->fn(v->layer, c->R, v->n, c->user, &c->err)) != AG_OK)
        return status;
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

/* What ag_run_rollout's run at each temperature shares. */
typedef struct {
    const ag_model *m;
    const ag_run_input *in;
    ag_workers *w;
    ag_run_matrix_fn fn;             /* a model of one stack's */
    ag_run_stack_heads_fn stack_fn;  /* an encoder–decoder model's */
    void *user;
} rollout_call;

/* One input's rollout under one normaliser (opt's, no list). */
static int rollout_at(const ag_run_options *opt, void *user, ag_record_list **out, ag_error *err)
{
    const rollout_call *call = user;
    if (ag_model_seq2seq(call->m) && call->fn) /* R arrays of three shapes: not one stream */
        return ag_error_set(err, AG_EINVAL, "%s is an encoder-decoder model: its rollout "
                            "matrices are ag_run_rollout_seq2seq's", ag_model_type(call->m));
    if (ag_model_seq2seq(call->m))
        return agr_rollout_pair(call->m, call->in, opt, call->w, call->stack_fn, call->user, out,
                                err);
    agr_pass p;
    ag_metric_set *own = NULL;
    int status = agr_pass_begin(&p, call->m, call->in, opt, 0, call->w, err);
    rollout_ctx c = {.opt = opt, .w = p.w, .text = p.in.text, .fn = call->fn,
                     .user = call->user, .out = out};
    if (status == AG_OK && !(c.sel = agr_metrics_or_default(opt, AG_FAMILIES_ROLLOUT, &own, err)))
        status = err->status;
    if (status == AG_OK) {
        c.layer_on = ag_selection_mask(p.layers);
        c.last = ag_selection_last(p.layers);
        status = agr_pass_run(&p, call->m, rollout_layer, &c, &c.err, err);
    }
    free(c.R);
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}

int ag_run_rollout(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                   ag_workers *w, ag_run_matrix_fn fn, void *user, ag_record_list **out,
                   ag_error *err)
{
    rollout_call call = {m, in, w, fn, NULL, user};
    return agr_each_temperature(agr_options(opt), rollout_at, &call, out, err);
}

int ag_run_rollout_seq2seq(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                           ag_workers *w, ag_run_stack_heads_fn fn, void *user,
                           ag_record_list **out, ag_error *err)
{
    if (!ag_model_seq2seq(m))
        return ag_error_set(err, AG_EINVAL, "ag_run_rollout_seq2seq: not an encoder-decoder "
                            "model");
    rollout_call call = {m, in, w, NULL, fn, user};
    return agr_each_temperature(agr_options(opt), rollout_at, &call, out, err);
}
