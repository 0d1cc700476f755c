/* Internal prefix: dist_ (module src/mpi/). */
/* dist.h — attngeom-mpi's pieces (docs/scaling.md): the CLI's commands run
 * on every rank (src/cli/driver.h), their runs spread by the library over
 * the transport made here (an ag_run_dist over MPI: attngeom/run.h), the
 * results sent to rank 0 as bytes and written there exactly as one process
 * writes them. */
#ifndef AG_MPI_DIST_H
#define AG_MPI_DIST_H

#include "../cli/driver.h"

/* After MPI_Init: this rank and the count; ranks other than 0 write
 * nothing on standard output. */
void dist_start(void);
int dist_rank(void);
/* The driver of cli_command for the command line argc/argv: the runs'
 * distribution, every message of a rank other than 0 held (rank 0 prints
 * the one that matters), and with --text-file - or --tokens-file - rank
 * 0's standard input handed to every rank before the command runs.
 * Valid until the next call. */
const cli_driver *dist_driver(int argc, char **argv);
/* Print a message of the driver itself (rank 0 only; the others hold it). */
void dist_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command's status rc on this rank -> the job's status (rank 0's, or 1
 * when another rank failed before the work was spread), the same on every
 * rank. Collective. */
int dist_end(int rc);

#endif
