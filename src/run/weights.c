/* weights.c — family D of attention heads (attngeom/run.h, ag_run_weights),
 * for `attngeom weights` and Python alike: one task per layer (the run's
 * tasks, which a distribution spreads), the layer's heads in parallel
 * inside it. Every head is one ag_weight_metrics call, so the values do not
 * depend on how the tasks nest; the error reported is the lowest layer's
 * lowest failed head, whatever the thread count. On an encoder–decoder pair
 * (m its encoder, ag_model_seq2seq) the tasks are the encoder's layers,
 * then per decoder layer its self-attention and its cross-attention, in the
 * pass's order, each record carrying its stack. */
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "../../analysis/metrics_int.h"

/* One layer task: the weights of (m, stack, layer) and its selected heads. */
typedef struct {
    const ag_model *m; /* NULL: the job's `tensors`, layer 0 */
    int stack;         /* ag_stack; AG_STACK_CROSS: m's cross-attention */
    int layer;
    const int *head;   /* (nh) */
    size_t nh;
} weights_task;

typedef struct {
    const ag_attn_weights *tensors;
    const ag_metric_set *sel;
    ag_workers *w;
    const weights_task *task; /* (count) */
    size_t per_task, d;       /* records a task (the most heads of a stack) */
    ag_record_list *recs;     /* task k fills k * per_task ... */
    ag_error *errs;           /* (count): the task's error, naming the head */
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
    const weights_task *t = &j->task[hj->k];
    int h = t->head[i];
    ag_head_factors f;
    ag_attn_weights_head_factors(hj->aw, j->d, h, &f);
    ag_record *r = ag_record_list_at(j->recs, hj->k * j->per_task + i);
    ag_record_init(r, t->layer, h, j->d, j->d);
    if (t->stack != AG_STACK_NONE)
        ag_record_set_stack(r, t->stack);
    return ag_weight_metrics(&f, j->sel, r, &hj->errs[i]);
}

/* The heads of layer task k run in this process: the task is the unit a
 * distribution hands out. */
static int layer_heads(const weights_job *j, size_t k, const ag_attn_weights *aw)
{
    const weights_task *t = &j->task[k];
    ag_error *errs = calloc(t->nh + 1, sizeof *errs);
    if (!errs)
        return ag_error_set(&j->errs[k], AG_ENOMEM, "out of memory");
    heads_job hj = {j, aw, k, errs};
    ag_run_tasks rt = {.size = sizeof rt, .count = t->nh, .fn = head_task, .user = &hj,
                       .errs = errs};
    size_t i = 0;
    int status = ag_run_tasks_run(j->w, &rt, NULL, &i);
    if (status != AG_OK)
        ag_error_set(&j->errs[k], status, "%s%slayer %d, head %d: %s",
                     t->stack ? ag_stack_name(t->stack) : "", t->stack ? " " : "", t->layer,
                     t->head[i], errs[i].message);
    free(errs);
    return status;
}

static int layer_task(size_t k, int worker, void *user)
{
    (void)worker;
    const weights_job *j = user;
    const weights_task *t = &j->task[k];
    if (!t->m)
        return layer_heads(j, k, j->tensors);
    ag_attn_weights aw = {0};
    int status = t->stack == AG_STACK_CROSS
                     ? ag_model_cross_attn_weights(t->m, t->layer, &aw, &j->errs[k])
                     : ag_model_attn_weights(t->m, t->layer, &aw, &j->errs[k]);
    if (status == AG_OK)
        status = layer_heads(j, k, &aw);
    ag_attn_weights_free(&aw);
    return status;
}

/* ---- the tasks of a run --------------------------------------------------- */

/* The selections of a run: [0] the model's (a pair's encoder), [1] a
 * pair's decoder's, with the stacks they select in. */
typedef struct {
    const ag_model *stack[2];
    ag_selection *layers[2], *heads[2];
    weights_task *task;
    size_t count;
} weights_plan;

static void plan_free(weights_plan *p)
{
    for (int s = 0; s < 2; s++) {
        ag_selection_free(p->layers[s]);
        ag_selection_free(p->heads[s]);
    }
    free(p->task);
}

/* The tasks of one stack s of p, appended: a layer each, two for a
 * decoder's layer (its self-attention, then its cross-attention). */
static void plan_stack(weights_plan *p, int s, int stack)
{
    const int *layer = ag_selection_indices(p->layers[s]);
    for (size_t i = 0; i < ag_selection_count(p->layers[s]); i++)
        for (int c = 0; c < (stack == AG_STACK_DECODER ? 2 : 1); c++)
            p->task[p->count++] = (weights_task){
                .m = p->stack[s], .stack = c ? AG_STACK_CROSS : stack, .layer = layer[i],
                .head = ag_selection_indices(p->heads[s]),
                .nh = ag_selection_count(p->heads[s])};
}

/* The tasks of m (both stacks of a pair, opt's layers and heads selected
 * in each) or of every head of `tensors` as layer 0. */
static int plan_tasks(const ag_model *m, const ag_attn_weights *tensors,
                      const ag_run_options *opt, weights_plan *p, ag_error *err)
{
    const ag_seq2seq *pair = m ? ag_model_seq2seq(m) : NULL;
    p->stack[0] = m;
    p->stack[1] = pair ? ag_seq2seq_stack(pair, AG_STACK_DECODER) : NULL;
    if (!m) {
        int status = ag_selection_parse(NULL, tensors->n_head, "heads", &p->heads[0], err);
        if (status == AG_OK && !(p->task = malloc(sizeof *p->task)))
            status = ag_error_set(err, AG_ENOMEM, "out of memory");
        if (status == AG_OK)
            p->task[p->count++] = (weights_task){.layer = 0,
                                                 .head = ag_selection_indices(p->heads[0]),
                                                 .nh = ag_selection_count(p->heads[0])};
        return status;
    }
    int status = AG_OK;
    size_t total = 0;
    for (int s = 0; s < 2 && status == AG_OK && p->stack[s]; s++) {
        ag_error e = {0};
        status = agr_model_selections(p->stack[s], opt, &p->layers[s], &p->heads[s], &e);
        if (status != AG_OK) /* a pair's: which stack lacks the index */
            ag_error_set(err, status, "%s%s%s", pair ? ag_stack_name(s ? AG_STACK_DECODER
                                                                       : AG_STACK_ENCODER)
                                                     : "", pair ? " " : "", e.message);
        total += ag_selection_count(p->layers[s]) * (s ? 2 : 1);
    }
    if (status == AG_OK && !(p->task = calloc(total + 1, sizeof *p->task)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK)
        plan_stack(p, 0, pair ? AG_STACK_ENCODER : AG_STACK_NONE);
    if (status == AG_OK && pair)
        plan_stack(p, 1, AG_STACK_DECODER);
    return status;
}

/* The records of tasks with fewer heads than per_task (a pair whose
 * stacks select different head counts) closed up, in task order. */
static void close_up(const weights_job *j, size_t count)
{
    ag_record_list *r = j->recs;
    size_t to = 0;
    for (size_t k = 0; k < count; k++) {
        memmove(r->items + to, r->items + k * j->per_task, j->task[k].nh * sizeof *r->items);
        to += j->task[k].nh;
    }
    r->count = to;
}

int ag_run_weights(const ag_model *m, const ag_attn_weights *tensors, const ag_run_options *opt,
                   ag_workers *w, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m && !tensors)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    weights_plan p = {0};
    weights_job j = {.tensors = tensors};
    ag_metric_set *own_sel = NULL;
    ag_workers *own = NULL;
    int status = agr_metrics(opt, AG_FAMILIES_WEIGHTS, &j.sel, &own_sel, err);
    if (status == AG_OK)
        status = plan_tasks(m, tensors, opt, &p, err);
    j.task = p.task;
    j.d = m ? (size_t)ag_model_get_config(m)->d_model : tensors->wq.shape[0];
    for (size_t k = 0; k < p.count; k++)
        j.per_task = j.task[k].nh > j.per_task ? j.task[k].nh : j.per_task;
    if (status == AG_OK)
        status = agr_workers(w, opt, p.count, &j.w, &own, err);
    if (status == AG_OK && !(j.recs = ag_record_list_alloc(p.count * j.per_task, err)))
        status = AG_ENOMEM;
    if (status == AG_OK && !(j.errs = calloc(p.count + 1, sizeof *j.errs)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK) {
        ag_run_tasks t = {.size = sizeof t, .count = p.count, .fn = layer_task, .user = &j,
                          .recs = j.recs, .per_task = j.per_task, .errs = j.errs};
        size_t k = 0;
        if ((status = ag_run_tasks_run(j.w, &t, opt, &k)) != AG_OK)
            *err = j.errs[k];
    }
    if (status == AG_OK) {
        close_up(&j, p.count);
        *out = j.recs;
    } else
        ag_record_list_free(j.recs);
    free(j.errs);
    plan_free(&p);
    ag_workers_free(own);
    ag_metric_set_free(own_sel);
    return status;
}
