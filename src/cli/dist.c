/* dist.c — the hook through which attngeom-mpi spreads a command's work over
 * processes (docs/scaling.md). attngeom leaves it NULL: every run is one
 * process and the CLI has no MPI dependency. */
#include "cli.h"

const cli_dist *cli_dist_hook = NULL;

int cli_tasks_run(const cli_workers *w, const cli_dist_tasks *t)
{
    if (cli_dist_hook)
        return cli_dist_hook->tasks(w, t);
    return cli_workers_run(w, t->count, t->fn, t->user);
}
