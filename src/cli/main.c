/* main.c — the attngeom command: dispatch to subcommands. */
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
    "  matrix FILE     metrics of the matrices in a .npy or .safetensors file\n"
    "\n"
    "Every command takes --format table|json|csv|tsv|md|latex, -o FILE,\n"
    "--metrics LIST, --expect GOLDEN.json and --help.\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 3 --expect mismatch.\n";

int main(int argc, char **argv)
{
    if (argc < 2)
        return fputs(main_help, stderr), EXIT_USAGE;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return fputs(main_help, stdout), 0;
    if (strcmp(cmd, "--version") == 0)
        return puts("attngeom " AG_VERSION_STRING), 0;
    if (strcmp(cmd, "matrix") == 0)
        return cmd_matrix(argc - 1, argv + 1);
    fprintf(stderr, "attngeom: unknown command '%s' (see attngeom --help)\n", cmd);
    return EXIT_USAGE;
}
