/* driver.h — the attngeom command line as a function, for the programs that
 * run it: attngeom's own main and attngeom-mpi (src/mpi/), which reach the
 * CLI only through this header and the public API. */
#ifndef AG_CLI_DRIVER_H
#define AG_CLI_DRIVER_H

#include "attngeom.h"

/* Lines of messages kept instead of printed (not NUL-terminated). */
typedef struct {
    char *text;
    size_t len;
} cli_held;

/* How a program runs a command (cli_command). */
typedef struct {
    /* spread the runs of the command over these processes (attngeom/run.h;
     * borrowed); NULL: one process */
    const ag_run_dist *dist;
    /* set: every message of the calling thread is appended here, not
     * printed (a rank that is not the root); its text the caller's */
    cli_held *held;
    /* set: called once the command is known and ready, before it runs
     * (attngeom-mpi shares standard input): AG_OK, else the command is
     * not run and err is printed as its failure */
    int (*ready)(void *user, ag_error *err);
    void *user;
} cli_driver;

/* Run `attngeom COMMAND ...` (argv[0] the command, argv[1..] its options)
 * as drv says (NULL: one process, messages on stderr). Returns the exit
 * status: 0, 1 failure (printed), 2 usage error (an unknown command too),
 * 3 --expect mismatch. */
int cli_command(int argc, char **argv, const cli_driver *drv);

#endif
