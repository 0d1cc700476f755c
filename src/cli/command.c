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
        const cli_usage *usage; /* its options (cli.h, "option tables") */
    } commands[] = {
        {"matrix", cmd_matrix, 1, &cli_usage_matrix}, {"info", cmd_info, 0, &cli_usage_info},
        {"tokenize", cmd_tokenize, 0, &cli_usage_tokenize},
        {"decode", cmd_decode, 0, &cli_usage_decode},
        {"attention", cmd_attention, 1, &cli_usage_attention},
        {"analyze", cmd_analyze, 1, &cli_usage_analyze}, {"layer", cmd_layer, 1, &cli_usage_layer},
        {"weights", cmd_weights, 1, &cli_usage_weights},
        {"residual", cmd_residual, 1, &cli_usage_residual},
        {"rollout", cmd_rollout, 1, &cli_usage_rollout},
        {"contributions", cmd_contributions, 1, &cli_usage_contributions},
        {"similarity", cmd_similarity, 1, &cli_usage_similarity},
        {"aggregate", cmd_aggregate, 0, &cli_usage_aggregate},
        {"compare", cmd_compare, 0, &cli_usage_compare},
        {"plot", cmd_plot, 1, &cli_usage_plot}, {"metrics", cmd_metrics, 0, &cli_usage_metrics},
        {"heads", cmd_heads, 1, &cli_usage_heads},
    };
    enum { NCOMMANDS = sizeof commands / sizeof *commands };
    const cli_driver one = {0};
    drv = drv ? drv : &one;
    cli_held *was = cli_hold(drv->held);
    size_t k = 0;
    while (k < sizeof commands / sizeof *commands && strcmp(argv[0], commands[k].name) != 0)
        k++;
    int rc;
    if (k == NCOMMANDS && strcmp(argv[0], "options-doc") == 0) {
        /* not listed: the option lists of the docs (scripts/options_docs.py) */
        const cli_usage *usages[NCOMMANDS];
        for (size_t c = 0; c < NCOMMANDS; c++)
            usages[c] = commands[c].usage;
        rc = cli_options_doc(argc, argv, usages, NCOMMANDS);
    } else if (k == NCOMMANDS) {
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
