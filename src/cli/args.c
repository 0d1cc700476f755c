/* args.c — the option-parsing helpers of every command: --name VALUE or
 * --name=VALUE, and the non-negative numbers options take. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

const char *cli_option_value(const char *cmd, const char *name, int argc,
                             char **argv, int *i)
{
    /* cli_is_option matched `name` followed by '=' or the end. */
    const char *eq = argv[*i] + strlen(name);
    if (*eq == '=')
        return eq + 1;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}
