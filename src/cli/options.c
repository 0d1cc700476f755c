/* options.c — a command's options as one table (cli_option): its parser
 * looks arguments up in it, its --help prints its option list from it and
 * "did you mean" suggests from it, so the three name the same options. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const cli_option *cli_option_find(const cli_option *opts, const char *arg)
{
    for (const cli_option *o = opts; o->name; o++) {
        size_t n = strlen(o->name);
        if (strncmp(arg, o->name, n) == 0 && (arg[n] == '\0' || (arg[n] == '=' && o->value)))
            return o;
    }
    return NULL;
}

void cli_options_help(FILE *fp, const cli_option *opts)
{
    enum { COLUMN = 21 }; /* where every other command's help aligns its text */
    fputs("\noptions:\n", fp);
    for (const cli_option *o = opts; o->name; o++) {
        int w = fprintf(fp, "  %s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
        fprintf(fp, "%*s%s\n", w < COLUMN - 1 ? COLUMN - w : 1, "", o->help);
    }
}

int cli_options_unknown(const char *cmd, const cli_option *opts, const char *arg)
{
    const char *names[64];
    size_t n = 0;
    for (const cli_option *o = opts; o->name && n < 64; o++)
        names[n++] = o->name;
    return cli_unknown_option_among(cmd, names, n, arg);
}
