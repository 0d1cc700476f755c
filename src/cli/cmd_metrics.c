/* cmd_metrics.c — `attngeom metrics [FAMILY|KEY]`: every metric key with
 * its family, one-line definition, null case and reference, from the
 * library's one registry (ag_metric_definition ...; analysis/registry.c),
 * the table docs/metrics.md is checked against (tests/cli/help.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char metrics_usage[] =
    "usage: attngeom metrics [FAMILY|KEY[,...]] [--format F] [-o FILE]\n"
    "\n"
    "Every metric key --metrics accepts, in the column order of the records:\n"
    "key, family, its one-line definition, when it is null (\"—\": never) and\n"
    "the reference it follows (docs/metrics.md explains each); the table format\n"
    "gives a block of lines per key, the others a row. FAMILY (spectrum,\n"
    "attention, geometry, weights, stability, curvature, values, activations,\n"
    "mixing, axioms, lens, cross, all) or KEY, or a comma-separated list of\n"
    "them as --metrics takes it, lists those only.\n";

/* every family some command computes */
#define METRICS_FAMILIES \
    (AG_FAMILIES_ANALYZE | AG_FAMILIES_WEIGHTS | AG_FAMILIES_RESIDUAL | AG_FAMILIES_CONTRIBUTIONS)

static const cli_option metrics_own[] = {{"--metrics", "LIST", "the same as FAMILY|KEY[,...]"}, {NULL}};
static const cli_option_group *const metrics_groups[] = {
    CLI_OWN("metrics", metrics_own), &cli_group_output, &cli_group_help, NULL};
const cli_usage cli_usage_metrics = {"metrics", metrics_usage, metrics_groups, NULL};

/* The selected keys as a table of text cells. AG_ENOMEM. */
static int build_rows(ag_table *t, const ag_metric_set *set, ag_error *err)
{
    static const char *const cols[] = {"key", "family", "definition", "null_when", "reference"};
    int status = ag_table_init(t, cols, 5, err);
    for (int m = 0; status == AG_OK && m < ag_metric_count(); m++) {
        if (!ag_metric_set_has(set, m))
            continue;
        const char *cells[5] = {ag_metric_name(m), ag_family_name(ag_metric_family(m)),
                                ag_metric_definition(m), ag_metric_null_when(m),
                                ag_metric_reference(m)};
        ag_cell *row = ag_table_add_row(t, err);
        if (!row)
            return AG_ENOMEM;
        for (size_t i = 0; status == AG_OK && i < 5; i++)
            status = ag_table_set_text(t, &row[i], cells[i], err);
    }
    return status;
}

/* The table format: one block per key, so that definitions of any length
 * read on a terminal (a table of five text columns would run to hundreds
 * of characters a line). */
static int write_blocks(const cli_common *c, const ag_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return cli_format_fail(c, AG_ENOMEM);
    for (size_t r = 0; r < t->nrow; r++) {
        const ag_cell *row = &t->cells[r * t->ncol];
        fprintf(mem, "%s%s (%s)\n  %s\n  null when: %s\n  reference: %s\n", r ? "\n" : "",
                row[0].text, row[1].text, row[2].text, row[3].text, row[4].text);
    }
    int rc = fclose(mem) != 0 ? cli_format_fail(c, AG_ENOMEM) : cli_write_output(c->out_path, buf, len);
    free(buf);
    return rc;
}

int cmd_metrics(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, METRICS_FAMILIES))
        return 1;
    const char *list = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = argv[i];
        if (cli_usage_check(&cli_usage_metrics, argv[i]))
            return EXIT_USAGE;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_metrics);
        if (cli_is_option(argv[i], "--metrics")) {
            if (!(v = cli_option_value("metrics", "--metrics", argc, argv, &i)))
                return EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            int used = cli_common_option(&common, "metrics", argc, argv, &i); /* --format, -o */
            if (used <= 0)
                return used < 0 ? EXIT_USAGE : cli_usage_unparsed(&cli_usage_metrics, argv[i]);
            continue;
        }
        if (list)
            return cli_usage_error("metrics", "one FAMILY|KEY list only");
        list = v;
    }
    cli_path outs[] = {{"-o", common.out_path}};
    if (cli_paths_check(outs, 1, NULL, 0))
        return 1;
    ag_error err = {0};
    ag_metric_set *set = NULL;
    /* the default of ag_metric_set_new is the cheap families: all keys here */
    if (ag_metric_set_new(METRICS_FAMILIES, list ? list : "all", &set,
                          &err) != AG_OK)
        return cli_usage_error("metrics", "%s", err.message);
    ag_table t = {0};
    int rc = build_rows(&t, set, &err) != AG_OK         ? cli_fail_error(&err)
             : common.format == AG_FORMAT_TABLE ? write_blocks(&common, &t)
                                                : cli_emit_table(&common, &t, NULL, NULL);
    ag_table_free(&t);
    ag_metric_set_free(set);
    return rc;
}
