/* common.c — the options every command shares (cli_common): their
 * defaults, parsing and checks. The option helpers are args.c, the
 * messages messages.c, the output emit.c. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The selections of the cli_common of this process (one per command run;
 * compare's inputs make none of their own). */
static ag_metric_set *selections[4];
static size_t nselections;
/* The distribution of the command being run (cli_command's driver). */
static const ag_run_dist *command_dist;

void cli_common_start(const ag_run_dist *dist)
{
    command_dist = dist;
}

void cli_common_release(void)
{
    while (nselections)
        ag_metric_set_free(selections[--nselections]);
    command_dist = NULL;
}

int cli_common_init(cli_common *c, unsigned families)
{
    memset(c, 0, sizeof *c);
    c->format = AG_FORMAT_TABLE;
    c->families = families;
    ag_error err = {0};
    if (nselections == sizeof selections / sizeof *selections)
        return cli_fail("internal error: too many option sets");
    if (ag_metric_set_new(families, NULL, &c->metrics, &err) != AG_OK)
        return cli_fail_error(&err);
    selections[nselections++] = c->metrics;
    c->rtol = 1e-9;
    c->atol = 1e-12;
    c->epsilon = 1e-3;
    c->trials = 8;
    c->seed = 1;
    c->edge_threshold = -1;
    c->massive_abs = 100;
    c->massive_ratio = 1000;
    c->agg.ci = 0.95;
    c->dist = command_dist;
    return 0;
}

/* --massive-abs, --massive-ratio where the command computes family I
 * (residual): 1 consumed, 0 not one of them, -1 usage error printed. */
static int massive_option(cli_common *c, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    int is_abs = cli_is_option(a, "--massive-abs");
    if (!(c->families & AG_FAMILY_BIT(AG_FAMILY_ACTIVATIONS)) ||
        !(is_abs || cli_is_option(a, "--massive-ratio")))
        return 0;
    const char *name = is_abs ? "--massive-abs" : "--massive-ratio";
    double x;
    if (!(v = cli_option_value(cmd, name, argc, argv, i)))
        return -1;
    if (cli_parse_double(v, &x) != 0) {
        cli_usage_error(cmd, "%s takes a number >= 0, not '%s'", name, v);
        return -1;
    }
    *(is_abs ? &c->massive_abs : &c->massive_ratio) = x;
    return 1;
}

/* --epsilon, --trials, --seed, --edge-threshold: 1 consumed, 0 not one of
 * them, -1 usage error printed. */
static int stability_option(cli_common *c, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    char *end;
    if (cli_is_option(a, "--epsilon") || cli_is_option(a, "--edge-threshold")) {
        int eps = cli_is_option(a, "--epsilon");
        const char *name = eps ? "--epsilon" : "--edge-threshold";
        double x;
        if (!(v = cli_option_value(cmd, name, argc, argv, i)))
            return -1;
        if (cli_parse_double(v, &x) != 0 || (eps && x == 0) || (!eps && x > 1)) {
            cli_usage_error(cmd, "%s takes a number %s, not '%s'", name,
                            eps ? "> 0" : "in [0, 1]", v);
            return -1;
        }
        *(eps ? &c->epsilon : &c->edge_threshold) = x;
        return 1;
    }
    if (cli_is_option(a, "--trials") || cli_is_option(a, "--seed")) {
        int trials = cli_is_option(a, "--trials");
        const char *name = trials ? "--trials" : "--seed";
        if (!(v = cli_option_value(cmd, name, argc, argv, i)))
            return -1;
        errno = 0;
        unsigned long x = strtoul(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-' || (trials && (x == 0 || x > 1000000))) {
            cli_usage_error(cmd, "%s takes %s, not '%s'", name,
                            trials ? "a number of trials from 1 to 1000000" : "a non-negative integer", v);
            return -1;
        }
        if (trials)
            c->trials = (int)x;
        else
            c->seed = x;
        return 1;
    }
    return massive_option(c, cmd, argc, argv, i);
}

/* -j N, -jN: threads, 1..AG_POOL_THREADS_MAX. 1 consumed, -1 usage error. */
static int jobs_option(cli_common *c, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = a[2] && a[2] != '=' ? a + 2
                                                       : cli_option_value(cmd, "-j", argc, argv, i);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < 1 || n > AG_POOL_THREADS_MAX) {
        cli_usage_error(cmd, "-j takes a number of threads from 1 to %d, not '%s'",
                        AG_POOL_THREADS_MAX, v);
        return -1;
    }
    c->jobs = (int)n;
    return 1;
}

int cli_common_option(cli_common *c, const char *cmd, int argc, char **argv,
                      int *i)
{
    const char *a = argv[*i], *v;
    ag_error err = {0};
    c->table_cmd = cmd;
    if (c->jobs_allowed && strncmp(a, "-j", 2) == 0)
        return jobs_option(c, cmd, argc, argv, i);
    if (cli_is_option(a, "--format")) {
        if (!(v = cli_option_value(cmd, "--format", argc, argv, i)))
            return -1;
        int f = ag_format_from_name(v);
        if (f < 0) {
            cli_usage_error(cmd, "unknown --format '%s' (table, json, jsonl, csv, tsv, md, latex)", v);
            return -1;
        }
        c->format = (ag_format)f;
    } else if (cli_is_option(a, "-o") || cli_is_option(a, "--output")) {
        if (!(v = cli_option_value(cmd, "-o", argc, argv, i)))
            return -1;
        c->out_path = v;
    } else if (cli_is_option(a, "--metrics")) {
        if (!(v = cli_option_value(cmd, "--metrics", argc, argv, i)))
            return -1;
        if (ag_metric_set_parse_families(c->metrics, v, c->families, &err) != AG_OK) {
            cli_usage_error(cmd, "%s", err.message);
            return -1;
        }
        c->metrics_given = 1;
    } else if (cli_is_option(a, "--label")) {
        if (!(v = cli_option_value(cmd, "--label", argc, argv, i)))
            return -1;
        if (!*v) {
            cli_usage_error(cmd, "--label takes a non-empty name");
            return -1;
        }
        c->label = v;
    } else if (cli_is_option(a, "--sort") || cli_is_option(a, "--columns")) {
        int sort = cli_is_option(a, "--sort");
        const char *name = sort ? "--sort" : "--columns";
        if (!(v = cli_option_value(cmd, name, argc, argv, i)))
            return -1;
        size_t len = strlen(v);
        if (!*v || v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,") || v[0] == ':' ||
            (sort && strchr(v, ','))) {
            cli_usage_error(cmd, "%s takes %s, not '%s'", name,
                            sort ? "a column KEY or KEY:desc" : "a comma-separated list of columns", v);
            return -1;
        }
        if (!sort) {
            c->columns = v;
        } else {
            const char *colon = strchr(v, ':');
            if (colon && strcmp(colon, ":desc") != 0 && strcmp(colon, ":asc") != 0) {
                cli_usage_error(cmd, "--sort takes KEY, KEY:asc or KEY:desc, not '%s'", v);
                return -1;
            }
            c->sort = v;
            c->sort_desc = colon && strcmp(colon, ":desc") == 0;
        }
    } else if (cli_is_option(a, "--caption") || cli_is_option(a, "--tex-label")) {
        int cap = cli_is_option(a, "--caption");
        if (!(v = cli_option_value(cmd, cap ? "--caption" : "--tex-label", argc, argv, i)))
            return -1;
        if (!*v) {
            cli_usage_error(cmd, "%s takes a non-empty text", cap ? "--caption" : "--tex-label");
            return -1;
        }
        *(cap ? &c->caption : &c->tex_label) = v;
    } else if (cli_is_option(a, "--digits")) {
        if (!(v = cli_option_value(cmd, "--digits", argc, argv, i)))
            return -1;
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 1 || n > 17) {
            cli_usage_error(cmd, "--digits takes a number of significant digits from 1 to 17, not '%s'", v);
            return -1;
        }
        c->digits = (int)n;
    } else if (cli_is_option(a, "--expect")) {
        if (!(v = cli_option_value(cmd, "--expect", argc, argv, i)))
            return -1;
        c->expect_path = v;
    } else if (cli_is_option(a, "--rtol") || cli_is_option(a, "--atol")) {
        int is_r = cli_is_option(a, "--rtol");
        if (!(v = cli_option_value(cmd, is_r ? "--rtol" : "--atol", argc, argv, i)))
            return -1;
        if (cli_parse_double(v, is_r ? &c->rtol : &c->atol) != 0) {
            cli_usage_error(cmd, "%s needs a non-negative number, not '%s'",
                            is_r ? "--rtol" : "--atol", v);
            return -1;
        }
    } else if (c->agg.allowed) {
        int used = cli_agg_option(&c->agg, cmd, argc, argv, i);
        return used ? used : stability_option(c, cmd, argc, argv, i);
    } else {
        return stability_option(c, cmd, argc, argv, i);
    }
    return 1;
}

int cli_common_check(const cli_common *c, const char *cmd)
{
    if (!c->agg.on && (c->agg.by || c->agg.unit || c->agg.ci_given))
        return cli_usage_error(cmd, "%s goes with --aggregate",
                               c->agg.by ? "--by" : c->agg.unit ? "--unit" : "--ci");
    if (c->agg.on && c->expect_path)
        return cli_usage_error(cmd, "--expect compares per-head records, not --aggregate's");
    return 0;
}
