/* main.c — attngeom-mpi: the corpus and weight commands of attngeom run over
 * the ranks of an MPI job (docs/scaling.md). `mpirun -n K attngeom-mpi
 * COMMAND ...` takes the options of `attngeom COMMAND` and writes, at rank
 * 0, the bytes the one-process run writes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "dist.h"

static const char main_help[] =
    "usage: mpirun [-q] -n K attngeom-mpi COMMAND [options]\n"
    "\n"
    "attngeom's commands over the K ranks of an MPI job: the same options, and\n"
    "rank 0 writes the same bytes as `attngeom COMMAND` (docs/scaling.md).\n"
    "\n"
    "commands (see attngeom COMMAND --help):\n"
    "  analyze MODEL     texts of --text-file / --tokens-file split over the ranks\n"
    "  residual MODEL    the same\n"
    "  rollout MODEL     the same\n"
    "  contributions MODEL  the same\n"
    "  similarity MODEL  the same\n"
    "  matrix FILE       the matrices of FILE split over the ranks\n"
    "  weights MODEL     the layers split over the ranks\n"
    "\n"
    "Texts go to ranks by token count (longest first, to the least loaded\n"
    "rank), never by line; each rank runs its own on -j threads. A failure on\n"
    "any rank prints one line at rank 0 and every rank exits 1 (mpirun -q\n"
    "leaves out mpirun's own report). --text-file - reads standard input at\n"
    "rank 0 and hands it to every rank.\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 3 --expect mismatch.\n";

static int run(int argc, char **argv)
{
    if (argc < 2)
        return dist_say("attngeom-mpi: missing COMMAND (see attngeom-mpi --help)"), 2;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return fputs(main_help, stdout), 0;
    if (strcmp(cmd, "--version") == 0)
        return printf("attngeom-mpi %s\n", ag_version()), 0;
    static const char *const commands[] = {"analyze", "residual", "rollout", "contributions",
                                           "similarity", "matrix", "weights"};
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
        if (strcmp(cmd, commands[k]) == 0)
            return cli_command(argc - 1, argv + 1, dist_driver(argc, argv));
    dist_say("attngeom-mpi: unknown command '%s' (it runs analyze, residual, rollout, "
             "contributions, similarity, matrix and weights; the others run in attngeom)", cmd);
    return 2;
}

int main(int argc, char **argv)
{
    int provided;
    /* only the main thread calls MPI; the CLI's own threads never do */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    dist_start();
    int rc = run(argc, argv);
    if (dist_rank() == 0 && (fflush(stdout) != 0 || ferror(stdout)) && rc == 0)
        dist_say("attngeom: standard output: cannot write: %s", strerror(errno)), rc = 1;
    rc = dist_end(rc);
    MPI_Finalize();
    return rc;
}
