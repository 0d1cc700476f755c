/* workers.c — the threads of a command run (-j; docs/cli.md, "Threads"):
 * one pool per run, tasks split by a rule that ignores the thread count
 * (one per matrix, head, layer or text), each task writing its own slot and
 * its own error, so the output — values, order and the error reported (the
 * lowest failed task's) — is the same bytes for any -j. BLAS is one thread
 * inside every task (blas.c). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The CPUs this process may run on (its affinity mask, as nproc counts). */
static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < AG_POOL_THREADS_MAX ? (int)n : n > 0 ? AG_POOL_THREADS_MAX : 1;
}

int cli_workers_new(const cli_common *c, cli_workers *w)
{
    memset(w, 0, sizeof *w);
    int threads = c->jobs ? c->jobs : cpus_available();
    if (threads > AG_POOL_THREADS_MAX)
        threads = AG_POOL_THREADS_MAX;
    if (threads > cli_blas_callers_max())
        threads = cli_blas_callers_max();
    ag_error err = {0};
    if (ag_workers_new(threads, &w->workers, &err) != AG_OK)
        return cli_fail_error(&err); /* a failed start leaves nothing to free */
    return 0;
}

void cli_workers_free(cli_workers *w)
{
    ag_workers_free(w->workers);
    w->workers = NULL;
}

int cli_workers_run(const cli_workers *w, size_t count, ag_task_fn fn, void *user)
{
    if (count == 1)
        return fn(0, ag_pool_worker(), user);
    return ag_pool_run(ag_workers_pool(w->workers), count, fn, user);
}

size_t cli_first_error(const ag_error *errs, size_t count)
{
    size_t k = 0;
    while (k + 1 < count && errs[k].status == AG_OK)
        k++;
    return k;
}

int cli_matrix_metrics(const cli_workers *w, const cli_common *c, const double *M, size_t m,
                       size_t n, ag_record *rec, ag_error *err)
{
    ag_matrix_work *work = w ? ag_workers_work(w->workers) : NULL;
    ag_matrix_options opt = {.size = sizeof(ag_matrix_options),
                             .edge_threshold = c->edge_threshold};
    return ag_matrix_metrics_work(M, m, n, c->metrics, &opt, work, rec, err);
}

int cli_stability_selected(const ag_metric_set *sel)
{
    for (int m = 0; m < ag_metric_count(); m++)
        if (ag_metric_set_has(sel, m) && ag_metric_family((ag_metric)m) == AG_FAMILY_STABILITY)
            return 1;
    return 0;
}

/* ---- the heads of one layer --------------------------------------------- */

typedef struct {
    const cli_workers *w;
    const cli_common *c;
    const cli_layer_heads *L;
    const int *head;  /* (count) selected heads */
    ag_record_list *recs; /* records first..first+count-1 are the heads' */
    size_t first;
    ag_error *errs;   /* (count) */
    int stability;
} heads_job;

static int head_task(size_t i, int worker, void *user)
{
    (void)worker;
    heads_job *j = user;
    const cli_layer_heads *L = j->L;
    int h = j->head[i];
    ag_record *r = ag_record_list_at(j->recs, j->first + i);
    ag_record_init(r, L->layer, h, L->n, L->n);
    ag_record_set_text(r, L->text);
    int status = cli_matrix_metrics(j->w, j->c, L->attn + (size_t)h * L->n * L->n, L->n, L->n,
                                    r, &j->errs[i]);
    if (status == AG_OK && j->stability) {
        ag_head_input in;
        L->input(L->input_ctx, h, &in);
        ag_stability_options opt = {.size = sizeof(ag_stability_options),
                                    .epsilon = j->c->epsilon, .trials = j->c->trials,
                                    .seed = j->c->seed};
        status = ag_stability_metrics(&in, &opt, j->c->metrics, r, &j->errs[i]);
    }
    return status;
}

int cli_layer_records(const cli_workers *w, const cli_common *c, const cli_layer_heads *L,
                      ag_record_list **out, int *failed, ag_error *err)
{
    size_t first = ag_record_list_count(*out);
    ag_selection *all = NULL;
    int status = L->heads ? AG_OK : ag_selection_parse(NULL, L->n_head, "heads", &all, NULL);
    const ag_selection *heads = L->heads ? L->heads : all;
    const int *head = ag_selection_indices(heads);
    size_t count = ag_selection_count(heads);
    ag_error *errs = status == AG_OK ? calloc(count + 1, sizeof *errs) : NULL;
    if (status == AG_OK && !errs)
        status = AG_ENOMEM;
    for (size_t k = 0; status == AG_OK && k < count; k++)
        if (!cli_records_add(out))
            status = AG_ENOMEM;
    *failed = -1;
    if (status != AG_OK) {
        ag_error_set(err, status, "out of memory for records");
    } else {
        heads_job j = {w, c, L, head, *out, first, errs,
                       L->input && cli_stability_selected(c->metrics)};
        status = cli_workers_run(w, count, head_task, &j);
        if (status != AG_OK) {
            size_t k = cli_first_error(errs, count);
            *failed = head[k];
            *err = errs[k];
        }
    }
    free(errs);
    ag_selection_free(all);
    return status;
}
