/* main.c — the attngeom command: dispatch to subcommands. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char main_help[] =
    "usage: attngeom COMMAND [options]\n"
    "\n"
    "Measure the geometry of attention: exact spectral, entropy, symmetry and\n"
    "row-geometry metrics of attention matrices (see docs/metrics.md).\n"
    "\n"
    "commands:\n"
    "  matrix FILE       metrics of the matrices in a .npy or .safetensors file\n"
    "  info PATH         what a model folder or tensor file holds\n"
    "  tokenize MODEL    token ids of --text S, as the model's HF tokenizer gives them\n"
    "  attention MODEL   forward pass; write attention [L,H,n,n] (and hidden states)\n"
    "  analyze MODEL     forward pass; metrics of every head of every layer\n"
    "  layer             one attention layer of any architecture, tensors by name\n"
    "  weights MODEL     weight-space geometry (QK and OV circuits) of every head\n"
    "  residual MODEL    forward pass; spectrum and geometry of every hidden state\n"
    "  rollout MODEL     forward pass; attention rollout R_l of every layer (its\n"
    "                    -o R.npy writes the R_l; the records go to stdout)\n"
    "  similarity MODEL  forward pass; Jensen-Shannon distance between every pair\n"
    "                    of heads (its -o S.npy writes the matrix)\n"
    "  aggregate FILE... mean, std and confidence interval of every metric per\n"
    "                    group (model, layer, head) of saved records\n"
    "  compare A B       Welch t-test (and permutation test) of every metric of\n"
    "                    two sets of saved records\n"
    "  plot INPUT        a figure (SVG, PDF, PNG) of records or of a .npy\n"
    "\n"
    "Every command takes --format table|json|jsonl|csv|tsv|md|latex, -o FILE,\n"
    "--metrics LIST, --expect GOLDEN.json and --help; analyze, residual,\n"
    "rollout, weights and matrix take --aggregate [--by KEYS] [--ci LEVEL];\n"
    "those and layer, similarity and attention take -j N (threads; the same\n"
    "output for any N).\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 3 --expect mismatch.\n";

static int run(int argc, char **argv)
{
    if (argc < 2)
        return fputs("attngeom: missing COMMAND (see attngeom --help)\n", stderr), EXIT_USAGE;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return fputs(main_help, stdout), 0;
    if (strcmp(cmd, "--version") == 0)
        return printf("attngeom %s\n", ag_version()), 0;
    static const struct {
        const char *name;
        int (*run)(int, char **);
        int runs_blas; /* see cli_blas_setup */
    } commands[] = {
        {"matrix", cmd_matrix, 1}, {"info", cmd_info, 0}, {"tokenize", cmd_tokenize, 0},
        {"attention", cmd_attention, 1}, {"analyze", cmd_analyze, 1}, {"layer", cmd_layer, 1},
        {"weights", cmd_weights, 1}, {"residual", cmd_residual, 1}, {"rollout", cmd_rollout, 1},
        {"similarity", cmd_similarity, 1},
        {"aggregate", cmd_aggregate, 0}, {"compare", cmd_compare, 0},
        {"plot", cmd_plot, 1},
    };
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
        if (strcmp(cmd, commands[k].name) == 0) {
            int rc = cli_blas_setup(commands[k].runs_blas);
            return rc ? rc : commands[k].run(argc - 1, argv + 1);
        }
    cli_fail("unknown command '%s' (see attngeom --help)", cmd);
    return EXIT_USAGE;
}

/* Whatever went to stdout through stdio (--help, --version) is checked
 * here: a full device or a closed descriptor is a failure, not exit 0. A
 * command that failed already said so. */
int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    cli_common_release();
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0)
        rc = cli_fail("standard output: cannot write: %s", strerror(errno));
    return rc;
}
