/* access_model.c — attngeom/access.h's model runs (attention, analyze,
 * weights), each through the library calls of the command it stands for. */
#include <stdlib.h>
#include <string.h>

#include "access_int.h"

/* ---- model config and selections ---------------------------------------- */

/* A binding's closed handle arrives as NULL: refused, never dereferenced. */
static int no_model(ag_error *err)
{
    return ag_error_set(err, AG_EINVAL, "no model (NULL)");
}

/* The run's layer and head selections (attngeom/run.h; free with
 * selection_free): AG_ERANGE for an index the model lacks. */
typedef struct {
    ag_selection *layers, *heads;
    const unsigned char *layer_on, *head_on; /* their masks */
    size_t nl, nh;                           /* their counts */
} selection;

static int selection_new(const ag_model *m, const ag_run_options *opt, selection *s,
                         ag_error *err)
{
    const ag_model_config *g = ag_model_get_config(m);
    int status = ag_selection_from_list(opt ? opt->layers : NULL, opt ? opt->nlayers : 0,
                                        g->n_layer, "layers", &s->layers, err);
    if (status == AG_OK)
        status = ag_selection_from_list(opt ? opt->heads : NULL, opt ? opt->nheads : 0,
                                        g->n_head, "heads", &s->heads, err);
    s->layer_on = ag_selection_mask(s->layers);
    s->head_on = ag_selection_mask(s->heads);
    s->nl = ag_selection_count(s->layers);
    s->nh = ag_selection_count(s->heads);
    return status;
}

static void selection_free(selection *s)
{
    ag_selection_free(s->layers);
    ag_selection_free(s->heads);
}

int ag_model_selected(const ag_model *m, const ag_run_options *opt, size_t *layers,
                      size_t *heads, ag_error *err)
{
    selection s = {0};
    int status = m ? selection_new(m, opt, &s, err) : no_model(err);
    *layers = s.nl;
    *heads = s.nh;
    selection_free(&s);
    return status;
}

/* ---- attention (`attngeom attention`) ----------------------------------- */

typedef struct {
    const selection *s;
    double *attn; /* where the next selected head goes */
} attention_ctx;

static int copy_layer(const ag_layer_view *v, void *user)
{
    attention_ctx *c = user;
    if (!c->s->layer_on[v->layer])
        return 0;
    c->attn += ag_layer_view_copy_heads(v, c->s->head_on, c->attn) * v->n * v->n;
    return 0;
}

static ag_forward_options forward_options(const ag_run_options *opt, const ag_workers *w)
{
    return (ag_forward_options){.size = sizeof(ag_forward_options),
                                .precision = opt ? opt->precision : AG_PRECISION_F32,
                                .pool = ag_workers_pool(w)};
}

int ag_model_attention_into(const ag_model *m, const int32_t *ids, size_t n,
                            const ag_run_options *opt, double *attn, double *hidden,
                            ag_error *err)
{
    selection s = {0};
    ag_workers *w = NULL;
    int status = m ? selection_new(m, opt, &s, err) : no_model(err);
    if (status == AG_OK)
        status = ag_run_workers(opt, (size_t)ag_model_get_config(m)->n_head, &w, err);
    if (status == AG_OK) {
        attention_ctx c = {&s, attn};
        ag_forward_options fo = forward_options(opt, w);
        status = ag_model_forward_ex(m, ids, n, &fo, attn ? copy_layer : NULL, &c, hidden, err);
    }
    ag_workers_free(w);
    selection_free(&s);
    return status;
}

/* ---- analyze (`attngeom analyze`) --------------------------------------- */

typedef struct {
    const ag_model *m;
    const ag_run_options *opt;
    const ag_metric_set *sel;
    const selection *s;
    const ag_workers *w;
    long text;
    int stability;           /* sel holds a key of family E */
    ag_record *next;         /* where the next layer's records go */
    ag_error err;            /* the failure, naming layer and head */
    /* the layer in hand */
    const ag_layer_view *v;
    const ag_attn_weights *weights;
    const int *head;         /* (nh) selected heads */
    ag_error *errs;          /* (nh) */
} analyze_ctx;

static int head_task(size_t i, int worker, void *user)
{
    (void)worker;
    const analyze_ctx *c = user;
    const ag_layer_view *v = c->v;
    int h = c->head[i];
    ag_record *r = &c->next[i];
    ag_record_init(r, v->layer, h, v->n, v->n);
    r->text = c->text;
    ag_matrix_options mo = {.size = sizeof(ag_matrix_options),
                            .edge_threshold = c->opt ? c->opt->edge_threshold : -1};
    int status = ag_matrix_metrics_work(v->attn + (size_t)h * v->n * v->n, v->n, v->n, c->sel,
                                        &mo, ag_workers_work(c->w), r, &c->errs[i]);
    if (status == AG_OK && c->stability) {
        ag_head_input in;
        ag_attn_weights_head_input(c->weights, v->x, v->n, v->d, h, &in);
        ag_stability_options so;
        ag_stability_options_init(&so);
        if (c->opt)
            so = (ag_stability_options){.size = sizeof(ag_stability_options),
                                        .epsilon = c->opt->epsilon, .trials = c->opt->trials,
                                        .seed = c->opt->seed};
        status = ag_stability_metrics(&in, &so, c->sel, r, &c->errs[i]);
    }
    return status;
}

static int analyze_heads(analyze_ctx *c)
{
    int status = ag_pool_run(ag_workers_pool(c->w), c->s->nh, head_task, c);
    if (status != AG_OK) {
        size_t k = 0;
        while (k + 1 < c->s->nh && c->errs[k].status == AG_OK)
            k++;
        ag_error_set(&c->err, status, "layer %d head %d: %s", c->v->layer, c->head[k],
                     c->errs[k].message);
    }
    return status;
}

static int analyze_layer(const ag_layer_view *v, void *user)
{
    analyze_ctx *c = user;
    if (!c->s->layer_on[v->layer])
        return 0;
    ag_attn_weights weights = {0};
    int status = c->stability ? ag_model_attn_weights(c->m, v->layer, &weights, &c->err) : AG_OK;
    c->v = v;
    c->weights = &weights;
    if (status == AG_OK)
        status = analyze_heads(c);
    ag_attn_weights_free(&weights);
    c->next += c->s->nh;
    return status;
}

static int family_selected(const ag_metric_set *sel, ag_family f)
{
    for (int m = 0; m < AG_M_COUNT; m++)
        if (sel->on[m] && ag_metric_family((ag_metric)m) == f)
            return 1;
    return 0;
}

int ag_model_analyze(const ag_model *m, const int32_t *ids, size_t n, long text,
                     const ag_metric_set *sel, const ag_run_options *opt,
                     ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m)
        return no_model(err);
    selection s = {0};
    ag_workers *w = NULL;
    ag_record_list *list = NULL;
    int n_head = ag_model_get_config(m)->n_head;
    ag_error *errs = calloc((size_t)n_head + 1, sizeof *errs);
    int status = errs ? selection_new(m, opt, &s, err)
                              : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK)
        status = ag_run_workers(opt, s.nh, &w, err);
    if (status == AG_OK && !(list = ag_record_list_alloc(s.nl * s.nh, err)))
        status = AG_ENOMEM;
    if (status == AG_OK) {
        const int *head = ag_selection_indices(s.heads);
        analyze_ctx c = {.m = m, .opt = opt, .sel = sel, .s = &s, .w = w, .text = text,
                         .stability = family_selected(sel, AG_FAMILY_STABILITY),
                         .next = list->items, .head = head, .errs = errs};
        ag_forward_options fo = forward_options(opt, w);
        status = ag_model_forward_ex(m, ids, n, &fo, analyze_layer, &c, NULL, err);
        if (status != AG_OK && c.err.status != AG_OK)
            *err = c.err;
    }
    if (status == AG_OK)
        *out = list;
    else
        ag_record_list_free(list);
    ag_workers_free(w);
    selection_free(&s);
    free(errs);
    return status;
}

/* ---- weights (`attngeom weights MODEL`) --------------------------------- */

typedef struct {
    const ag_model *m;
    const ag_metric_set *sel;
    const int *layer, *head; /* (nl), (nh) */
    size_t nh, d;
    ag_record *recs;         /* (nl * nh) */
    ag_error *errs;          /* (nl) */
} weights_job;

/* One task per layer, its heads in order (the CLI's tasks compute the same
 * values: every head is one ag_weight_metrics call). */
static int weights_layer(size_t k, int worker, void *user)
{
    (void)worker;
    const weights_job *j = user;
    ag_attn_weights w = {0};
    ag_error e = {0};
    int status = ag_model_attn_weights(j->m, j->layer[k], &w, &j->errs[k]);
    for (size_t i = 0; status == AG_OK && i < j->nh; i++) {
        ag_head_factors f;
        ag_attn_weights_head_factors(&w, j->d, j->head[i], &f);
        ag_record *r = &j->recs[k * j->nh + i];
        ag_record_init(r, j->layer[k], j->head[i], j->d, j->d);
        if ((status = ag_weight_metrics(&f, j->sel, r, &e)) != AG_OK)
            ag_error_set(&j->errs[k], status, "layer %d, head %d: %s", j->layer[k], j->head[i],
                         e.message);
    }
    ag_attn_weights_free(&w);
    return status;
}

static int weights_run(weights_job *j, size_t nl, const ag_run_options *opt, ag_error *err)
{
    ag_workers *w = NULL;
    int status = ag_run_workers(opt, nl, &w, err);
    if (status == AG_OK &&
        (status = ag_pool_run(ag_workers_pool(w), nl, weights_layer, j)) != AG_OK) {
        size_t k = 0;
        while (k + 1 < nl && j->errs[k].status == AG_OK)
            k++;
        *err = j->errs[k];
    }
    ag_workers_free(w);
    return status;
}

int ag_model_weight_records(const ag_model *m, const ag_metric_set *sel,
                            const ag_run_options *opt, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m)
        return no_model(err);
    const ag_model_config *g = ag_model_get_config(m);
    selection s = {0};
    ag_record_list *list = NULL;
    ag_error *errs = calloc((size_t)g->n_layer + 1, sizeof *errs);
    int status = errs ? selection_new(m, opt, &s, err)
                      : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK && !(list = ag_record_list_alloc(s.nl * s.nh, err)))
        status = AG_ENOMEM;
    if (status == AG_OK) {
        weights_job j = {m, sel, ag_selection_indices(s.layers), ag_selection_indices(s.heads), s.nh, (size_t)g->d_model, list->items, errs};
        status = weights_run(&j, s.nl, opt, err);
    }
    if (status == AG_OK)
        *out = list;
    else
        ag_record_list_free(list);
    selection_free(&s);
    free(errs);
    return status;
}
