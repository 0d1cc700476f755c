/* tasks.c — the one fan-out of the library (attngeom/run.h, "tasks"):
 * tasks run on a pool in any order, each writing its own slots, and the
 * error reported is the lowest failed task's — every task below it ran —
 * so results and errors are the same for any thread count. */
#include <stdlib.h>

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

static int run_local(ag_workers *w, const ag_run_tasks *t)
{
    if (t->count == 1)
        return t->fn(0, ag_pool_worker(), t->user);
    return ag_pool_run(ag_workers_pool(w), t->count, t->fn, t->user);
}

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
    if (!w && t->count > 1) {
        if ((status = ag_run_workers(opt, t->count, &own, &t->errs[0])) != AG_OK)
            return status;
        w = own;
    }
    status = opt && opt->dist ? agr_tasks_dist(w, t, opt) : run_local(w, t);
    if (status != AG_OK && first)
        *first = first_error(t->errs, t->count);
    ag_workers_free(own);
    return status;
}

/* Until the distribution lands (issue 25, plan step 13). */
int agr_tasks_dist(ag_workers *w, const ag_run_tasks *t, const ag_run_options *opt)
{
    (void)w;
    (void)opt;
    return ag_error_set(&t->errs[0], AG_EUNSUPPORTED, "no distribution yet");
}
