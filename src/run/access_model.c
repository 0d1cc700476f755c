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

/* ---- attention and analyze: wrappers of attngeom/run.h ----------------- */

static int copy_heads(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer;
    double **next = user;
    memcpy(*next, attn, heads * n * n * sizeof **next);
    *next += heads * n * n;
    return 0;
}

int ag_model_attention_into(const ag_model *m, const int32_t *ids, size_t n,
                            const ag_run_options *opt, double *attn, double *hidden,
                            ag_error *err)
{
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = -1};
    return ag_run_attention(m, &in, opt, NULL, attn ? copy_heads : NULL, NULL, &attn, hidden,
                            err);
}

int ag_model_analyze(const ag_model *m, const int32_t *ids, size_t n, long text,
                     const ag_metric_set *sel, const ag_run_options *opt,
                     ag_record_list **out, ag_error *err)
{
    ag_run_options o = *agr_options(opt);
    o.metrics = sel;
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = text};
    return ag_run_analyze(m, &in, &o, NULL, out, err);
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
