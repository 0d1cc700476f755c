/* main.c — the attngeom command: its help, then the command (command.c). */
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
    "  decode MODEL      the text of --tokens 1,2,3, as the model's HF tokenizer decodes them\n"
    "  attention MODEL   forward pass; write attention [L,H,n,n] (and hidden states)\n"
    "  analyze MODEL     forward pass; metrics of every head of every layer\n"
    "  layer             one attention layer of any architecture, tensors by name\n"
    "  weights MODEL     weight-space geometry (QK and OV circuits) of every head\n"
    "  residual MODEL    forward pass; spectrum and geometry of every hidden state\n"
    "  rollout MODEL     forward pass; attention rollout R_l of every layer (its\n"
    "                    -o R.npy writes the R_l; the records go to stdout)\n"
    "  contributions MODEL  forward pass; residual- and norm-aware contributions\n"
    "                    (--method norms-res|alti, --rollout) of every layer\n"
    "  similarity MODEL  forward pass; Jensen-Shannon distance between every pair\n"
    "                    of heads (its -o S.npy writes the matrix)\n"
    "  heads MODEL       a probe's score of every head (--probe induction\n"
    "                    --length T: Olsson et al.'s repeated random block)\n"
    "  aggregate FILE... mean, std and confidence interval of every metric per\n"
    "                    group (model, layer, head) of saved records\n"
    "  compare A B       Welch t-test (and permutation test) of every metric of\n"
    "                    two sets of saved records\n"
    "  plot INPUT        a figure (SVG, PDF, PNG) of records or of a .npy\n"
    "  metrics [KEYS]    every metric key: family, definition, null case, reference\n"
    "\n"
    "Every command takes -o FILE and --help, every one but plot and attention\n"
    "--format table|json|jsonl|csv|tsv|md|latex; the record commands (matrix,\n"
    "analyze, layer, weights, residual, rollout) take --metrics LIST and --expect\n"
    "GOLDEN.json, compare and metrics --metrics LIST; analyze, residual,\n"
    "rollout, weights and matrix take --aggregate [--by KEYS] [--ci LEVEL];\n"
    "those and layer, similarity and attention take -j N (threads; the same\n"
    "output for any N). `attngeom COMMAND --help` lists a command's options.\n"
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
    return cli_command(argc - 1, argv + 1, NULL);
}

/* Whatever went to stdout through stdio (--help, --version) is checked
 * here: a full device or a closed descriptor is a failure, not exit 0. A
 * command that failed already said so. */
int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0)
        rc = cli_fail("standard output: cannot write: %s", strerror(errno));
    return rc;
}
