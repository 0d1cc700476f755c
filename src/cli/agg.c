/* agg.c — --aggregate, --by KEYS, --unit KEYS and --ci LEVEL, and the aggregate of a
 * run's records in place of them (docs/cli.md, "Corpus statistics"); the
 * commands aggregate and compare are cmd_aggregate.c. */
#include <string.h>

#include "cli.h"

static int parse_level(const char *cmd, const char *v, double *out)
{
    double x;
    if (cli_parse_double(v, &x) != 0 || !(x > 0 && x < 1))
        return cli_usage_error(cmd, "--ci takes a confidence level in (0, 1), not '%s'", v);
    *out = x;
    return 0;
}

int cli_agg_option(cli_agg *g, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    if (g->allowed && strcmp(a, "--aggregate") == 0) {
        g->on = 1;
        return 1;
    }
    if (cli_is_option(a, "--by")) {
        if (!(g->by = cli_option_value(cmd, "--by", argc, argv, i)))
            return -1;
        return 1;
    }
    if (cli_is_option(a, "--unit")) {
        if (!(g->unit = cli_option_value(cmd, "--unit", argc, argv, i)))
            return -1;
        return 1;
    }
    if (cli_is_option(a, "--ci")) {
        if (!(v = cli_option_value(cmd, "--ci", argc, argv, i)))
            return -1;
        g->ci_given = 1;
        return parse_level(cmd, v, &g->ci) ? -1 : 1;
    }
    return 0;
}

int cli_agg_new(const cli_agg *g, const char *cmd, int pooled, int keep_values,
                ag_aggregate **out)
{
    ag_error err = {0};
    int status = ag_aggregate_create(g->by ? g->by : pooled ? "" : NULL,
                                     g->ci_given ? g->ci : 0.95, keep_values, out, &err);
    if (status == AG_OK && g->unit && (status = ag_aggregate_set_unit(*out, g->unit, &err)) != AG_OK) {
        ag_aggregate_free(*out);
        *out = NULL;
    }
    if (status == AG_EINVAL)
        return cli_usage_error(cmd, "%s", err.message);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

int cli_agg_human_format(ag_format f)
{
    return f == AG_FORMAT_TABLE || f == AG_FORMAT_MD || f == AG_FORMAT_LATEX;
}

int cli_aggregate_records(const cli_common *c, const ag_record_list *recs, ag_table *out)
{
    ag_aggregate *a = NULL;
    ag_table t;
    ag_error err = {0};
    int rc = cli_agg_new(&c->agg, "--aggregate", 0, 0, &a);
    if (rc)
        return rc;
    /* the records as the writer would print them, then aggregated like
     * records read back from a file */
    if (cli_records_table(c, recs, &t) != 0) {
        ag_aggregate_free(a);
        return 1;
    }
    int status = ag_aggregate_add_table(a, &t, &err);
    if (status == AG_OK)
        status = ag_aggregate_table(a, cli_agg_human_format(c->format), out, &err);
    ag_table_free(&t);
    ag_aggregate_free(a);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}
