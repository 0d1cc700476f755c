/* weights.c — family D of attention heads (attngeom/run.h, ag_run_weights),
 * for `attngeom weights` and Python alike: one task per layer (the run's
 * tasks, which a distribution spreads), the layer's heads in parallel
 * inside it. Every head is one ag_weight_metrics call, so the values do not
 * depend on how the tasks nest; the error reported is the lowest layer's
 * lowest failed head, whatever the thread count. */
#include <stdlib.h>

#include "run_int.h"

typedef struct {
    const ag_model *m;               /* NULL: `tensors`, layer 0 */
    const ag_attn_weights *tensors;
    const ag_metric_set *sel;
    ag_workers *w;
    const int *layer, *head;         /* (nl), (nh) */
    size_t nh, d;
    ag_record_list *recs;            /* layer task k fills k * nh ... */
    ag_error *errs;                  /* (nl): the layer's error, naming the head */
} weights_job;

typedef struct {
    const weights_job *j;
    const ag_attn_weights *aw;
    size_t k;       /* the layer task */
    ag_error *errs; /* (nh) */
} heads_job;

static int head_task(size_t i, int worker, void *user)
{
    (void)worker;
    const heads_job *hj = user;
    const weights_job *j = hj->j;
    int h = j->head[i];
    ag_head_factors f;
    ag_attn_weights_head_factors(hj->aw, j->d, h, &f);
    ag_record *r = ag_record_list_at(j->recs, hj->k * j->nh + i);
    ag_record_init(r, j->layer[hj->k], h, j->d, j->d);
    return ag_weight_metrics(&f, j->sel, r, &hj->errs[i]);
}

/* The heads of layer task k run in this process: the task is the unit a
 * distribution hands out. */
static int layer_heads(const weights_job *j, size_t k, const ag_attn_weights *aw)
{
    ag_error *errs = calloc(j->nh + 1, sizeof *errs);
    if (!errs)
        return ag_error_set(&j->errs[k], AG_ENOMEM, "out of memory");
    heads_job hj = {j, aw, k, errs};
    ag_run_tasks t = {.size = sizeof t, .count = j->nh, .fn = head_task, .user = &hj,
                      .errs = errs};
    size_t i = 0;
    int status = ag_run_tasks_run(j->w, &t, NULL, &i);
    if (status != AG_OK)
        ag_error_set(&j->errs[k], status, "layer %d, head %d: %s", j->layer[k], j->head[i],
                     errs[i].message);
    free(errs);
    return status;
}

static int layer_task(size_t k, int worker, void *user)
{
    (void)worker;
    const weights_job *j = user;
    if (!j->m)
        return layer_heads(j, k, j->tensors);
    ag_attn_weights aw = {0};
    int status = ag_model_attn_weights(j->m, j->layer[k], &aw, &j->errs[k]);
    if (status == AG_OK)
        status = layer_heads(j, k, &aw);
    ag_attn_weights_free(&aw);
    return status;
}

/* The layers and heads to measure: the model's selected ones, or layer 0
 * and every head of the tensors. */
static int weights_selections(weights_job *j, const ag_run_options *opt, ag_selection **layers,
                              ag_selection **heads, ag_error *err)
{
    static const int zero = 0;
    *layers = NULL;
    if (!j->m) {
        j->layer = &zero;
        j->d = j->tensors->wq.shape[0];
        return ag_selection_parse(NULL, j->tensors->n_head, "heads", heads, err);
    }
    int status = agr_model_selections(j->m, opt, layers, heads, err);
    j->layer = ag_selection_indices(*layers);
    j->d = (size_t)ag_model_get_config(j->m)->d_model;
    return status;
}

int ag_run_weights(const ag_model *m, const ag_attn_weights *tensors, const ag_run_options *opt,
                   ag_workers *w, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m && !tensors)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    weights_job j = {.m = m, .tensors = tensors};
    ag_metric_set *own_sel = NULL;
    ag_workers *own = NULL;
    ag_selection *layers = NULL, *heads = NULL;
    int status = agr_metrics(opt, AG_FAMILIES_WEIGHTS, &j.sel, &own_sel, err);
    if (status == AG_OK)
        status = weights_selections(&j, opt, &layers, &heads, err);
    size_t nl = m ? ag_selection_count(layers) : 1;
    j.head = ag_selection_indices(heads);
    j.nh = ag_selection_count(heads);
    if (status == AG_OK)
        status = agr_workers(w, opt, nl, &j.w, &own, err);
    if (status == AG_OK && !(j.recs = ag_record_list_alloc(nl * j.nh, err)))
        status = AG_ENOMEM;
    if (status == AG_OK && !(j.errs = calloc(nl + 1, sizeof *j.errs)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK) {
        ag_run_tasks t = {.size = sizeof t, .count = nl, .fn = layer_task, .user = &j,
                          .recs = j.recs, .per_task = j.nh, .errs = j.errs};
        size_t k = 0;
        if ((status = ag_run_tasks_run(j.w, &t, opt, &k)) != AG_OK)
            *err = j.errs[k];
    }
    if (status == AG_OK)
        *out = j.recs;
    else
        ag_record_list_free(j.recs);
    free(j.errs);
    ag_selection_free(layers);
    ag_selection_free(heads);
    ag_workers_free(own);
    ag_metric_set_free(own_sel);
    return status;
}
