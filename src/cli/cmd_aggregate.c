/* cmd_aggregate.c — `attngeom aggregate` and `attngeom compare`
 * (docs/cli.md, "Corpus statistics"). Both commands and the --aggregate
 * option of the record commands (agg.c) go through one path: records (read
 * from files, or this run's) into an ag_aggregate, its table out through
 * the one writer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- reading files ---------------------------------------------------------------- */

static int add_row(const ag_row *row, void *user, ag_error *err)
{
    return ag_aggregate_add(user, row, err);
}

/* Every record of path into a. 0 or 1 after printing. */
static int read_into(ag_aggregate *a, const char *path)
{
    ag_error err = {0};
    if (ag_records_read(path, add_row, a, &err) != AG_OK)
        return cli_fail_error(&err);
    return 0;
}

/* One "-" at most, and the outputs distinct from the inputs. */
static int check_inputs(const char *cmd, const cli_common *c, char **files, size_t n)
{
    size_t dashes = 0;
    for (size_t k = 0; k < n; k++)
        dashes += strcmp(files[k], "-") == 0;
    if (dashes > 1)
        return cli_usage_error(cmd, "standard input ('-') can be read once only");
    cli_path outs[] = {{"-o", c->out_path}}, ins[64];
    for (size_t k = 0; k < n; k += 64) {
        size_t m = n - k < 64 ? n - k : 64;
        for (size_t j = 0; j < m; j++)
            ins[j] = (cli_path){"FILE", files[k + j]};
        if (cli_paths_check(outs, 1, ins, m))
            return 1;
    }
    for (size_t k = 0; k < n; k++)
        if (cli_wrong_reader(cmd, files[k], CLI_NOT_RECORDS, "records (JSON/JSONL/CSV/TSV)"))
            return 1;
    return 0;
}

/* --format, -o, --sort, --columns, --caption, --tex-label, --digits and
 * (aggregate) -j: 1 consumed, 0 not, -1 usage error printed. */
static int output_option(cli_common *c, const char *cmd, int argc, char **argv, int *i)
{
    if ((c->jobs_allowed && strncmp(argv[*i], "-j", 2) == 0) || cli_is_option(argv[*i], "--format") || cli_is_option(argv[*i], "-o") ||
        cli_is_option(argv[*i], "--output") || cli_is_option(argv[*i], "--sort") ||
        cli_is_option(argv[*i], "--columns") || cli_is_option(argv[*i], "--caption") ||
        cli_is_option(argv[*i], "--tex-label") || cli_is_option(argv[*i], "--digits"))
        return cli_common_option(c, cmd, argc, argv, i);
    return 0;
}

/* ---- aggregate -------------------------------------------------------------------- */

static const char aggregate_help[] =
    "usage: attngeom aggregate FILE... [--by KEYS] [--unit KEYS] [--ci LEVEL]\n"
    "                          [--bootstrap N [--seed S]] [--format F] [-o FILE]\n"
    "\n"
    "One record per group of the records in FILE... (JSON, JSONL, CSV or TSV as\n"
    "attngeom writes them; '-' is standard input). The records of one unit (by\n"
    "default one input: its text or input key; a record without one is a unit of\n"
    "its own) are averaged first; every statistic is over the unit means: the\n"
    "group keys, unit (the unit keys), n (records), n_units, and for every\n"
    "numeric key K: K (mean of the unit means), K_std (their standard deviation),\n"
    "K_ci_low, K_ci_high (Student-t interval for the mean) and K_n (units with a\n"
    "value); booleans count as 0/1. With --bootstrap also K_pct_low, K_pct_high\n"
    "(percentile) and K_bca_low, K_bca_high (BCa) intervals from resampling units.\n"
    "Aggregated records aggregate again: shards of a corpus combine exactly.\n"
    "The table, md and latex formats print K as mean ± half-width.\n";

static const cli_option aggregate_own[] = {
    {"--by", "KEYS", "group keys (default: model, layer, head, ... as present, never text); --by '' pools every record into one group"},
    {"--unit", "KEYS", "the unit of replication (default: text/input, else the record); e.g. --unit layer,head: one value per head"},
    {"--ci", "LEVEL", "confidence of the intervals (default 0.95)"},
    {"--bootstrap", "N", "bootstrap resamples of the units, 1 to 1000000"},
    {"--seed", "S", "seed of the resamples (GSL MT19937; default 1)"},
    {NULL}};
static const cli_option_group aggregate_jobs = {"aggregate-jobs", NULL, (const cli_option[]){
    {"-j", "N", "accepted as every command takes it; the aggregate is computed in one thread, the same for any N"},
    {NULL}}, CLI_GROUP_ATTACHED};
static const cli_option_group *const aggregate_groups[] = {
    CLI_OWN("aggregate", aggregate_own), &aggregate_jobs, &cli_group_output, &cli_group_table,
    &cli_group_help, NULL};
const cli_usage cli_usage_aggregate = {"aggregate", aggregate_help, aggregate_groups, NULL};

typedef struct {
    unsigned long bootstrap, seed;
    int seed_given;
} aggregate_opts;

static int parse_count(const char *cmd, const char *name, const char *v, unsigned long lo,
                       unsigned long hi, unsigned long *out);

/* --bootstrap N and --seed S: 1 consumed, 0 not, -1 usage error printed. */
static int aggregate_option(aggregate_opts *o, int argc, char **argv, int *i)
{
    int boot = cli_is_option(argv[*i], "--bootstrap");
    if (!boot && !cli_is_option(argv[*i], "--seed"))
        return 0;
    const char *name = boot ? "--bootstrap" : "--seed";
    const char *v = cli_option_value("aggregate", name, argc, argv, i);
    if (!v)
        return -1;
    o->seed_given |= !boot;
    if (boot)
        return parse_count("aggregate", name, v, 1, AG_AGGREGATE_BOOTSTRAP_MAX, &o->bootstrap)
                   ? -1 : 1;
    return parse_count("aggregate", name, v, 0, (unsigned long)-1, &o->seed) ? -1 : 1;
}

static int aggregate_files(const cli_common *c, const aggregate_opts *o, char **files, size_t n)
{
    ag_aggregate *a = NULL;
    int rc = cli_agg_new(&c->agg, "aggregate", 0, 0, &a);
    ag_error berr = {0};
    if (rc == 0 && ag_aggregate_set_bootstrap(a, o->bootstrap, o->seed, &berr) != AG_OK)
        rc = cli_usage_error("aggregate", "%s", berr.message);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        ag_aggregate_set_source(a, (unsigned)k); /* text 0 of two files: two units */
        rc = read_into(a, files[k]);
    }
    if (rc == 0 && ag_aggregate_records(a) == 0)
        rc = cli_fail("%s: no records", n == 1 ? files[0] : "the inputs");
    ag_table t = {0};
    ag_error err = {0};
    if (rc == 0 && ag_aggregate_table(a, cli_agg_human_format(c->format), &t, &err) != AG_OK)
        rc = cli_fail("%s: %s", n == 1 ? files[0] : "the inputs", err.message);
    if (rc == 0) {
        ag_output_meta meta = {.size = sizeof(ag_output_meta),
                               .command = "aggregate", .source = n == 1 ? files[0] : NULL};
        rc = cli_emit_table(c, &t, &meta, NULL);
    }
    ag_table_free(&t);
    ag_aggregate_free(a);
    return rc;
}

int cmd_aggregate(int argc, char **argv)
{
    cli_common c;
    if (cli_common_init(&c, AG_FAMILIES_MATRIX))
        return 1;
    c.jobs_allowed = 1;
    char **files = calloc((size_t)argc, sizeof *files);
    size_t n = 0;
    if (!files)
        return cli_fail("out of memory");
    int rc = 0;
    aggregate_opts o = {.seed = 1};
    for (int i = 1; rc == 0 && i < argc; i++) {
        if ((rc = cli_usage_check(&cli_usage_aggregate, argv[i])) != 0)
            break;
        int used = output_option(&c, "aggregate", argc, argv, &i);
        if (used == 0)
            used = cli_agg_option(&c.agg, "aggregate", argc, argv, &i);
        if (used == 0)
            used = aggregate_option(&o, argc, argv, &i);
        if (used < 0)
            rc = EXIT_USAGE;
        else if (used)
            continue;
        else if (strcmp(argv[i], "--help") == 0)
            rc = -1;
        else if (argv[i][0] == '-' && argv[i][1])
            rc = cli_usage_unparsed(&cli_usage_aggregate, argv[i]);
        else
            files[n++] = argv[i];
    }
    if (rc == 0 && n == 0)
        rc = cli_usage_error("aggregate", "missing FILE (records of any command; '-' for standard input)");
    if (rc == 0 && o.seed_given && !o.bootstrap)
        rc = cli_usage_error("aggregate", "--seed seeds --bootstrap, which is not given");
    if (rc == 0)
        rc = check_inputs("aggregate", &c, files, n);
    if (rc == 0)
        rc = aggregate_files(&c, &o, files, n);
    free(files);
    return rc < 0 ? cli_usage_help(&cli_usage_aggregate) : rc;
}

/* ---- compare ------------------------------------------------------------------------ */

static const char compare_help[] =
    "usage: attngeom compare A B [--by KEYS] [--unit KEYS] [--paired] [--metrics KEYS]\n"
    "                        [--ci LEVEL] [--permutations N [--seed S]] [--format F]\n"
    "                        [-o FILE]\n"
    "\n"
    "Compare the records of A with those of B (files as for aggregate; '-' is\n"
    "standard input), each pooled, or grouped by --by, over their units (the\n"
    "records of a unit averaged first; see aggregate): one record per (group,\n"
    "metric) with metric, unit, n_a, n_b, n_units (units), mean_a, mean_b, diff\n"
    "(mean_a - mean_b), ci_low, ci_high (Welch interval for diff), t, df\n"
    "(Welch-Satterthwaite), p (two-sided Welch t-test), p_holm and q_bh (Holm and\n"
    "Benjamini-Hochberg over every row), hedges_g with hedges_g_ci_low/high.\n"
    "--paired: the same units on both sides; t, df, p, the interval from the\n"
    "per-unit differences (paired t-test), p_wilcoxon (signed-rank) and dz.\n"
    "With --permutations also p_perm (relabelling, or sign flips when paired),\n"
    "p_perm_holm and q_perm_bh.\n";

static const cli_option compare_own[] = {
    {"--by", "KEYS", "compare group by group (default: everything pooled)"},
    {"--unit", "KEYS", "the unit of replication (default: text/input, else the record)"},
    {"--paired", NULL, "paired design: every unit in both A and B"},
    {"--metrics", "KEYS", "keys to compare (default: every numeric key both share but the sizes rows, cols)"},
    {"--ci", "LEVEL", "confidence of the interval (default 0.95)"},
    {"--permutations", "N", "random relabellings, 1 to 10000000 (default none)"},
    {"--seed", "S", "seed of the permutations (GSL MT19937; default 1)"},
    {NULL}};
static const cli_option_group *const compare_groups[] = {
    CLI_OWN("compare", compare_own), &cli_group_output, &cli_group_table,
    &cli_group_help, NULL};
const cli_usage cli_usage_compare = {"compare", compare_help, compare_groups, NULL};

typedef struct {
    const char *metrics;
    unsigned long permutations, seed;
    int seed_given, paired;
} compare_opts;

/* A non-negative decimal count into *out, else a usage error naming the
 * range lo..hi (what the option takes) and the text given. */
static int parse_count(const char *cmd, const char *name, const char *v, unsigned long lo,
                       unsigned long hi, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (end == v || *end || errno || v[0] == '-' || x < lo || x > hi)
        return cli_usage_error(cmd, "%s takes an integer from %lu to %lu, not '%s'", name,
                               lo, hi, v);
    *out = x;
    return 0;
}

/* --permutations N: at least 1 (given means a test); the upper limit is the
 * library's (ag_compare_options_check, the one check Python meets too),
 * made now so that the usage error comes before any input is read. */
static int parse_permutations(const char *v, unsigned long *out)
{
    if (parse_count("compare", "--permutations", v, 1, (unsigned long)-1, out) != 0)
        return -1;
    ag_compare_options opt = AG_COMPARE_OPTIONS_DEFAULT;
    ag_error err = {0};
    opt.permutations = *out;
    if (ag_compare_options_check(&opt, &err) != AG_OK)
        return cli_usage_error("compare", "%s", err.message);
    return 0;
}

static int compare_option(compare_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    if (cli_is_option(a, "--metrics"))
        return (o->metrics = cli_option_value("compare", "--metrics", argc, argv, i)) ? 1 : -1;
    if (strcmp(a, "--paired") == 0)
        return o->paired = 1;
    int perm = cli_is_option(a, "--permutations");
    if (!perm && !cli_is_option(a, "--seed"))
        return 0;
    const char *name = perm ? "--permutations" : "--seed";
    if (!(v = cli_option_value("compare", name, argc, argv, i)))
        return -1;
    o->seed_given |= !perm;
    if (perm)
        return parse_permutations(v, &o->permutations) ? -1 : 1;
    return parse_count("compare", name, v, 0, (unsigned long)-1, &o->seed) ? -1 : 1;
}

static int compare_files(const cli_common *c, const compare_opts *o, char **files)
{
    ag_aggregate *a = NULL, *b = NULL;
    int keep = o->permutations > 0 || o->paired;
    int rc = cli_agg_new(&c->agg, "compare", 1, keep, &a);
    if (rc == 0)
        rc = cli_agg_new(&c->agg, "compare", 1, keep, &b);
    if (rc == 0)
        rc = read_into(a, files[0]);
    if (rc == 0)
        rc = read_into(b, files[1]);
    for (int k = 0; rc == 0 && k < 2; k++)
        if (ag_aggregate_records(k ? b : a) == 0)
            rc = cli_fail("%s: no records", files[k]);
    ag_table *t = NULL;
    ag_error err = {0};
    int status = rc ? AG_OK
                    : ag_compare_result_paired(a, b, o->metrics, c->agg.ci_given ? c->agg.ci : 0.95,
                                               o->permutations, o->seed, o->paired, files[0],
                                               files[1], &t, &err);
    if (status == AG_EINVAL && strncmp(err.message, "--metrics", 9) == 0)
        rc = cli_usage_error("compare", "%s", err.message);
    else if (status != AG_OK)
        rc = cli_fail_error(&err);
    if (rc == 0) {
        ag_output_meta meta = {.size = sizeof(ag_output_meta), .command = "compare"};
        rc = cli_emit_table(c, t, &meta, NULL);
    }
    ag_table_delete(t);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    cli_common c;
    if (cli_common_init(&c, AG_FAMILIES_MATRIX))
        return 1;
    compare_opts o = {.seed = 1};
    char *files[2];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_compare, argv[i]))
            return EXIT_USAGE;
        int used = output_option(&c, "compare", argc, argv, &i);
        if (used == 0)
            used = cli_agg_option(&c.agg, "compare", argc, argv, &i);
        if (used == 0)
            used = compare_option(&o, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_compare);
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_unparsed(&cli_usage_compare, argv[i]);
        if (n == 2)
            return cli_usage_error("compare", "two record files, A and B ('%s' is a third)", argv[i]);
        files[n++] = argv[i];
    }
    if (n < 2)
        return cli_usage_error("compare", "needs two record files, A and B");
    if (o.seed_given && !o.permutations)
        return cli_usage_error("compare", "--seed seeds --permutations, which is not given");
    int rc = check_inputs("compare", &c, files, 2);
    return rc ? rc : compare_files(&c, &o, files);
}
