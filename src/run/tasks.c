/* tasks.c — the one fan-out of the library (attngeom/run.h, "tasks"):
 * tasks run on a pool in any order, each writing its own slots, and the
 * error reported is the lowest failed task's — every task below it ran —
 * so results and errors are the same for any thread count. With a
 * distribution (ag_run_dist) each rank runs its share and the root gathers
 * every task's records and error; the share pieces here serve the corpus
 * run (corpus.c) too. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "access_int.h"
#include "base/sized_int.h"

/* The task to report after a failed run: the first whose slot holds an
 * error (the tasks below the lowest failed one all ran and succeeded). */
static size_t first_error(const ag_error *errs, size_t count)
{
    size_t k = 0;
    while (k + 1 < count && errs[k].status == AG_OK)
        k++;
    return k;
}

int agr_tasks_local(ag_workers *w, const ag_run_tasks *t)
{
    if (t->count == 1)
        return t->fn(0, ag_pool_worker(), t->user);
    return ag_pool_run(ag_workers_pool(w), t->count, t->fn, t->user);
}

static int tasks_dist(ag_workers *w, const ag_run_tasks *t, const agr_share *s);

int ag_run_tasks_run(ag_workers *w, const ag_run_tasks *t, const ag_run_options *opt,
                     size_t *first)
{
    if (first)
        *first = 0;
    if (!t || !t->fn || !t->errs)
        return AG_EINVAL;
    ag_run_tasks given = AG_RUN_TASKS_DEFAULT;
    int status = AG_SIZED_READ(&given, t, ag_run_tasks, &t->errs[0]);
    if (status != AG_OK || given.count == 0)
        return status;
    t = &given;
    ag_workers *own = NULL;
    agr_share s;
    status = agr_share_begin(&s, opt, t->cost, t->count, &t->errs[0]);
    if (status == AG_OK && !w && t->count > 1 &&
        (status = ag_run_workers(opt, t->count, &own, &t->errs[0])) == AG_OK)
        w = own;
    if (status == AG_OK)
        status = s.dist ? tasks_dist(w, t, &s) : agr_tasks_local(w, t);
    if (status != AG_OK && first)
        *first = first_error(t->errs, t->count);
    ag_workers_free(own);
    agr_share_end(&s);
    return status;
}

/* ---- a run's share of a distribution ----------------------------------- */

/* The distributed runs under way in this process, linked by next: the
 * runs their work makes (a text's heads, a layer's) stay on their rank. */
static pthread_mutex_t spreading_lock = PTHREAD_MUTEX_INITIALIZER;
static agr_share *spreading;

/* Push s when no run over d is under way. 1 when pushed. */
static int spread(agr_share *s, const ag_run_dist *d)
{
    pthread_mutex_lock(&spreading_lock);
    agr_share *u = spreading;
    while (u && u->given != d)
        u = u->next;
    if (!u) {
        s->given = d;
        s->next = spreading;
        spreading = s;
    }
    pthread_mutex_unlock(&spreading_lock);
    return !u;
}

static void unspread(agr_share *s)
{
    pthread_mutex_lock(&spreading_lock);
    agr_share **link = &spreading;
    while (*link && *link != s)
        link = &(*link)->next;
    if (*link)
        *link = s->next;
    pthread_mutex_unlock(&spreading_lock);
}

int agr_share_begin(agr_share *s, const ag_run_options *opt, const uint64_t *cost,
                    size_t count, ag_error *err)
{
    memset(s, 0, sizeof *s);
    const ag_run_dist *d = opt ? opt->dist : NULL;
    if (!d || !spread(s, d))
        return AG_OK;
    s->dist = &s->d;
    ag_run_dist dflt = AG_RUN_DIST_DEFAULT;
    s->d = dflt;
    if (AG_SIZED_READ(&s->d, d, ag_run_dist, err) != AG_OK)
        return AG_EINVAL;
    d = &s->d;
    if (!d->gate(d->user, 1))
        return ag_error_set(err, AG_EIO, "another process of the run failed");
    uint64_t *ones = cost ? NULL : malloc((count + 1) * sizeof *ones);
    s->owner = malloc((count + 1) * sizeof *s->owner);
    s->mine = malloc((count + 1) * sizeof *s->mine);
    if ((!cost && !ones) || !s->owner || !s->mine) {
        free(ones);
        return ag_error_set(err, AG_ENOMEM, "out of memory assigning %zu items", count);
    }
    for (size_t k = 0; ones && k < count; k++)
        ones[k] = 1; /* a layer or a matrix costs what the next does */
    int status = ag_run_assign(cost ? cost : ones, count, d->ranks, s->owner, err);
    free(ones);
    for (size_t k = 0; status == AG_OK && k < count; k++)
        if (s->owner[k] == d->rank)
            s->mine[s->nmine++] = k;
    return status;
}

void agr_share_end(agr_share *s)
{
    if (s->given)
        unspread(s);
    free(s->owner);
    free(s->mine);
    memset(s, 0, sizeof *s);
}

int agr_share_send(const agr_share *s, size_t k, const ag_run_result *res, ag_error *err)
{
    unsigned char *bytes;
    size_t len;
    int status = ag_run_result_pack(k, res, &bytes, &len, err);
    if (status == AG_OK && s->dist->send(s->dist->user, bytes, len) != 0)
        status = ag_error_set(err, AG_EIO, "cannot send a result to the root");
    free(bytes);
    return status;
}

int agr_share_receive(const agr_share *s, size_t count, int wait, int *got, size_t *k,
                      ag_run_result *res, ag_error *err)
{
    unsigned char *bytes = NULL;
    size_t len = 0;
    *res = (ag_run_result){.size = sizeof *res};
    *got = s->dist->receive(s->dist->user, wait, &bytes, &len);
    if (*got < 0)
        return ag_error_set(err, AG_EIO, "cannot receive a result");
    if (*got == 0)
        return AG_OK;
    int status = ag_run_result_unpack(bytes, len, k, res, err);
    free(bytes);
    if (status == AG_OK && (*k >= count || s->owner[*k] <= 0)) {
        ag_run_result_clear(res);
        status = ag_error_set(err, AG_EINVAL, "a result for item %zu, not another rank's", *k);
    }
    return status;
}

/* ---- tasks over a distribution ----------------------------------------- */

typedef struct {
    const ag_run_tasks *t;
    const size_t *index; /* this rank's tasks */
} my_tasks;

static int my_task(size_t i, int worker, void *user)
{
    const my_tasks *m = user;
    size_t k = m->index[i];
    int status = m->t->fn(k, worker, m->t->user);
    if (status != AG_OK && m->t->errs[k].status == AG_OK)
        m->t->errs[k].status = status;
    return status;
}

/* Task k's error and its per_task records as a result (its records a copy). */
static int task_result(const ag_run_tasks *t, size_t k, ag_run_result *res, ag_error *err)
{
    *res = (ag_run_result){.size = sizeof *res, .status = t->errs[k].status, .err = t->errs[k]};
    if (!t->recs || t->per_task == 0)
        return AG_OK;
    if (!(res->recs = ag_record_list_alloc(t->per_task, err)))
        return AG_ENOMEM;
    memcpy(res->recs->items, t->recs->items + k * t->per_task, t->per_task * sizeof(ag_record));
    return AG_OK;
}

/* The root: a task's result into its slots. */
static int take_task(const ag_run_tasks *t, size_t k, const ag_run_result *res, ag_error *err)
{
    size_t n = res->recs ? res->recs->count : 0;
    if (n != (t->recs ? t->per_task : 0))
        return ag_error_set(err, AG_EINVAL, "task %zu: %zu records, not %zu", k, n, t->per_task);
    if (n)
        memcpy(t->recs->items + k * t->per_task, res->recs->items, n * sizeof(ag_record));
    t->errs[k] = res->err;
    t->errs[k].status = res->status;
    return AG_OK;
}

/* Not the root: this rank's results sent. */
static int send_tasks(const ag_run_tasks *t, const agr_share *s)
{
    int status = AG_OK;
    for (size_t i = 0; status == AG_OK && i < s->nmine; i++) {
        ag_run_result res;
        status = task_result(t, s->mine[i], &res, &t->errs[0]);
        if (status == AG_OK)
            status = agr_share_send(s, s->mine[i], &res, &t->errs[0]);
        ag_run_result_clear(&res);
    }
    s->dist->stopped(s->dist->user, 1);
    return status != AG_OK ? status : ag_error_set(&t->errs[0], AG_EINVAL, "not the root");
}

/* The root: every other rank's results. */
static int gather_tasks(const ag_run_tasks *t, const agr_share *s)
{
    size_t left = t->count - s->nmine;
    int status = AG_OK;
    for (size_t k = 0; k < t->count; k++)
        left -= s->owner[k] < 0; /* none: a task costs 1 */
    ag_error err = {0};
    while (status == AG_OK && left > 0) {
        ag_run_result res;
        size_t k;
        int got;
        status = agr_share_receive(s, t->count, 1, &got, &k, &res, &err);
        if (status == AG_OK && got)
            status = take_task(t, k, &res, &err), left--;
        ag_run_result_clear(&res);
    }
    s->dist->stop(s->dist->user);
    if (status != AG_OK)
        t->errs[0] = err;
    for (size_t k = 0; status == AG_OK && k < t->count; k++)
        status = t->errs[k].status;
    return status;
}

static int tasks_dist(ag_workers *w, const ag_run_tasks *t, const agr_share *s)
{
    my_tasks m = {t, s->mine};
    ag_run_tasks mine = *t;
    mine.count = s->nmine;
    mine.fn = my_task;
    mine.user = &m;
    if (mine.count)
        agr_tasks_local(w, &mine); /* each task's status is its slot's */
    return s->dist->rank == 0 ? gather_tasks(t, s) : send_tasks(t, s);
}
