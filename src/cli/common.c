/* common.c — option parsing, messages and output shared by the subcommands. */
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

void cli_common_release(void)
{
    while (nselections)
        ag_metric_set_free(selections[--nselections]);
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
    c->agg.ci = 0.95;
    return 0;
}

/* Where this thread's messages go: stderr, or a task's held lines. */
static _Thread_local cli_held *held;

void cli_hold(cli_held *h)
{
    held = h;
}

void cli_held_print(cli_held *h)
{
    if (h->len) {
        cli_progress_erase();
        fwrite(h->text, 1, h->len, stderr);
    }
    free(h->text);
    *h = (cli_held){0};
}

/* Append a line to the held ones; -1 when out of memory. */
static int hold_line(cli_held *h, const char *head, const char *msg, const char *tail)
{
    char *line = NULL;
    int n = asprintf(&line, "%s%s%s\n", head, msg, tail);
    char *grown = n < 0 ? NULL : realloc(h->text, h->len + (size_t)n);
    if (grown) {
        memcpy(grown + h->len, line, (size_t)n);
        h->text = grown;
        h->len += (size_t)n;
    }
    free(line);
    return grown ? 0 : -1;
}

/* head, the formatted message, tail: one escaped line on stderr (or held). */
static void message_line(const char *head, const char *fmt, va_list ap, const char *tail)
{
    char *raw = NULL, *safe = NULL;
    if (vasprintf(&raw, fmt, ap) >= 0)
        safe = ag_text_escape_dup(raw, AG_TEXT_CONTROL);
    const char *msg = safe ? safe : "out of memory formatting a message";
    if (!held || hold_line(held, head, msg, tail) != 0) {
        if (!held)
            cli_progress_erase();
        fprintf(stderr, "%s%s%s\n", head, msg, tail);
    }
    free(safe);
    free(raw);
}

void cli_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line("", fmt, ap, "");
    va_end(ap);
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line("attngeom: ", fmt, ap, "");
    va_end(ap);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char head[64], tail[80];
    snprintf(head, sizeof head, "attngeom %s: ", cmd);
    snprintf(tail, sizeof tail, " (see attngeom %s --help)", cmd);
    va_list ap;
    va_start(ap, fmt);
    message_line(head, fmt, ap, tail);
    va_end(ap);
    return EXIT_USAGE;
}

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
    return 0;
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
    } else if (cli_is_option(a, "--label")) {
        if (!(v = cli_option_value(cmd, "--label", argc, argv, i)))
            return -1;
        if (!*v) {
            cli_usage_error(cmd, "--label takes a non-empty name");
            return -1;
        }
        c->label = v;
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
    if (!c->agg.on && (c->agg.by || c->agg.ci_given))
        return cli_usage_error(cmd, "%s goes with --aggregate", c->agg.by ? "--by" : "--ci");
    if (c->agg.on && c->expect_path)
        return cli_usage_error(cmd, "--expect compares per-head records, not --aggregate's");
    return 0;
}

int cli_reject_expect(const cli_common *c, const char *cmd)
{
    if (c->expect_path)
        return cli_usage_error(cmd, "--expect compares printed records; this command prints none");
    if (c->label)
        return cli_usage_error(cmd, "--label names the model in records; this command prints none");
    return 0;
}

int cli_format_has_settings(ag_format fmt)
{
    return fmt == AG_FORMAT_JSON || fmt == AG_FORMAT_JSONL;
}

int cli_write_output(const char *path, const char *buf, size_t len)
{
    cli_outputs tx = {0};
    return cli_outputs_finish(&tx, cli_outputs_add(&tx, path ? path : "-", buf, len));
}

const char *cli_output_name(const cli_common *c)
{
    return c->out_path && strcmp(c->out_path, "-") != 0 ? c->out_path : "standard output";
}

int cli_format_fail(const cli_common *c, int status)
{
    if (status == AG_ENOMEM)
        return cli_fail("%s: out of memory formatting the output", cli_output_name(c));
    return cli_fail("%s: cannot format the output: %s", cli_output_name(c), ag_strerror(status));
}

/* Format t in c's format and stage it for c's -o (or standard output).
 * 0, or 1 after printing. */
static int stage_table(const cli_common *c, const ag_table *t, const ag_output_meta *meta,
                       cli_outputs *tx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return cli_format_fail(c, AG_ENOMEM);
    int status = ag_table_write(mem, c->format, t, meta);
    /* a stream in memory fails to write only when it cannot grow */
    if (fclose(mem) != 0 || status == AG_EIO)
        status = status == AG_OK || status == AG_EIO ? AG_ENOMEM : status;
    int rc = status == AG_OK ? cli_outputs_add(tx, c->out_path ? c->out_path : "-", buf, len)
                             : cli_format_fail(c, status);
    free(buf);
    return rc;
}

int cli_emit_table(const cli_common *c, const ag_table *t, const ag_output_meta *meta,
                   cli_outputs *tx)
{
    cli_outputs none = {0};
    if (!tx)
        tx = &none;
    return cli_outputs_finish(tx, stage_table(c, t, meta, tx));
}

/* "input": the image or sound file each row's "text" (its line in the
 * list) names; one input (no "text") names its file in every row. */
static int add_input_column(const cli_common *c, ag_table *t, ag_error *err)
{
    size_t tc = t->ncol, w = t->ncol + 1;
    for (size_t j = 0; j < t->ncol; j++)
        if (strcmp(t->keys[j], "text") == 0)
            tc = j;
    const char *one = tc == t->ncol ? c->input_name(c->input_ctx, -1) : "";
    int status = ag_table_add_text_column(t, "input", one ? one : "", err);
    for (size_t r = 0; status == AG_OK && tc < t->ncol && r < t->nrow; r++) {
        const ag_cell *text = &t->cells[r * w + tc];
        const char *name = text->kind == AG_CELL_INTEGER ? c->input_name(c->input_ctx, (long)text->value)
                                                         : NULL;
        if (name)
            status = ag_table_set_text(t, &t->cells[r * w + w - 1], name, err);
    }
    return status;
}

int cli_records_table(const cli_common *c, const ag_record_list *recs, ag_table *out)
{
    ag_error err = {0};
    int status = ag_records_table(recs, c->metrics, out, &err);
    if (status != AG_OK)
        return cli_fail_error(&err);
    if (cli_model(c))
        status = ag_table_add_text_column(out, "model", cli_model(c), &err);
    if (status == AG_OK && c->input_name)
        status = add_input_column(c, out, &err);
    if (status != AG_OK)
        ag_table_free(out);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

int cli_emit_outputs(const cli_common *c, const ag_record_list *recs,
                     const ag_output_meta *meta, cli_outputs *tx)
{
    cli_outputs none = {0};
    ag_table t = {0};
    if (!tx)
        tx = &none;
    /* --aggregate: the aggregate of the records instead of them */
    int rc = c->agg.on ? cli_aggregate_records(c, recs, &t) : cli_records_table(c, recs, &t);
    /* The golden file is read before anything is committed, so that a
     * broken one leaves every output as it was. */
    int expect_rc = rc == 0 && c->expect_path ? cli_expect(c, recs) : 0;
    if (rc == 0)
        rc = expect_rc == 1 ? 1 : stage_table(c, &t, meta, tx);
    ag_table_free(&t);
    rc = cli_outputs_finish(tx, rc);
    return rc ? rc : expect_rc;
}

int cli_emit(const cli_common *c, const ag_record_list *recs, const ag_output_meta *meta)
{
    return cli_emit_outputs(c, recs, meta, NULL);
}
