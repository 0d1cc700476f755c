/* command.c — one command of attngeom by name (driver.h, cli_command): for
 * attngeom's main and for attngeom-mpi, which brings its distribution. */
#include <string.h>

#include "cli.h"

int cli_command(int argc, char **argv, const cli_driver *drv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
        int runs_blas; /* see cli_blas_setup */
    } commands[] = {
        {"matrix", cmd_matrix, 1}, {"info", cmd_info, 0}, {"tokenize", cmd_tokenize, 0}, {"decode", cmd_decode, 0},
        {"attention", cmd_attention, 1}, {"analyze", cmd_analyze, 1}, {"layer", cmd_layer, 1},
        {"weights", cmd_weights, 1}, {"residual", cmd_residual, 1}, {"rollout", cmd_rollout, 1},
        {"similarity", cmd_similarity, 1},
        {"aggregate", cmd_aggregate, 0}, {"compare", cmd_compare, 0},
        {"plot", cmd_plot, 1}, {"metrics", cmd_metrics, 0},
    };
    const cli_driver one = {0};
    drv = drv ? drv : &one;
    cli_held *was = cli_hold(drv->held);
    size_t k = 0;
    while (k < sizeof commands / sizeof *commands && strcmp(argv[0], commands[k].name) != 0)
        k++;
    int rc;
    if (k == sizeof commands / sizeof *commands) {
        const char *names[sizeof commands / sizeof *commands];
        for (size_t c = 0; c < k; c++)
            names[c] = commands[c].name;
        long near = ag_text_closest(argv[0], names, k, 2); /* Damerau–Levenshtein ≤ 2 */
        if (near >= 0)
            cli_fail("unknown command '%s' (did you mean %s? see attngeom --help)", argv[0],
                     names[near]);
        else
            cli_fail("unknown command '%s' (see attngeom --help)", argv[0]);
        rc = EXIT_USAGE;
    } else if ((rc = cli_blas_setup(commands[k].runs_blas)) == 0) {
        ag_error err = {0};
        if (drv->ready && drv->ready(drv->user, &err) != AG_OK)
            rc = cli_fail_error(&err);
        cli_common_start(drv->dist);
        rc = rc ? rc : commands[k].run(argc, argv);
    }
    cli_common_release();
    cli_hold(was);
    return rc;
}
