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
