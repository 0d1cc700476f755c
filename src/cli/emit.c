/* emit.c — the top of the output path: records (or their --aggregate)
 * formatted in the chosen format, compared with --expect, with their
 * settings, and staged for -o or standard output (outputs.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

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

size_t cli_terminal_width(void)
{
    /* COLUMNS as the shell sets it (a positive integer; anything else is
     * not a width and is passed over), then the terminal standard output
     * is, then 80: the width a table fits when written to a file or pipe */
    const char *env = getenv("COLUMNS");
    if (env && *env >= '1' && *env <= '9' && strspn(env, "0123456789") == strlen(env) &&
        strlen(env) <= 6)
        return (size_t)strtoul(env, NULL, 10);
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

void cli_output_meta_apply(const cli_common *c, ag_output_meta *m)
{
    /* the terminal table fits the terminal (the library reads no
     * environment: the width comes from here) */
    if (c->format == AG_FORMAT_TABLE)
        m->width = cli_terminal_width();
    m->caption = c->caption;
    m->tex_label = c->tex_label;
    m->digits = c->digits;
    m->keep_constant = c->columns != NULL; /* the columns named stay */
}

int cli_table_arrange(const cli_common *c, ag_table *t)
{
    ag_error err = {0};
    if ((c->caption || c->tex_label) && c->format != AG_FORMAT_LATEX)
        return cli_usage_error(c->table_cmd ? c->table_cmd : "attngeom", "%s goes with --format latex",
                               c->caption ? "--caption" : "--tex-label");
    int status = AG_OK;
    const char *option = "--sort";
    if (c->sort) {
        char *key = strndup(c->sort, strcspn(c->sort, ":"));
        status = key ? ag_table_sort(t, key, c->sort_desc, &err) : AG_ENOMEM;
        free(key);
    }
    if (status == AG_OK && c->columns) {
        option = "--columns";
        char *list = strdup(c->columns);
        /* n keys need 2n - 1 characters at least */
        const char **keys = calloc(strlen(c->columns) / 2 + 1, sizeof *keys);
        size_t n = 0;
        status = list && keys ? AG_OK : AG_ENOMEM;
        for (char *save = NULL, *k = status == AG_OK ? strtok_r(list, ",", &save) : NULL; k;
             k = strtok_r(NULL, ",", &save))
            keys[n++] = k;
        if (status == AG_OK)
            status = ag_table_select(t, keys, n, &err);
        free(keys);
        free(list);
    }
    if (status == AG_ENOTFOUND || status == AG_EINVAL)
        return cli_usage_error(c->table_cmd ? c->table_cmd : "attngeom", "%s: %s", option, err.message);
    return status == AG_OK ? 0 : cli_format_fail(c, status);
}

/* Format t in c's format and stage it for c's -o (or standard output).
 * 0, or 1 after printing. */
static int stage_table(const cli_common *c, ag_table *t, const ag_output_meta *meta,
                       cli_outputs *tx)
{
    int arranged = cli_table_arrange(c, t);
    if (arranged)
        return arranged;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return cli_format_fail(c, AG_ENOMEM);
    ag_output_meta fit = meta ? *meta : (ag_output_meta)AG_OUTPUT_META_DEFAULT;
    cli_output_meta_apply(c, &fit);
    int status = ag_table_write(mem, c->format, t, &fit);
    /* a stream in memory fails to write only when it cannot grow */
    if (fclose(mem) != 0 || status == AG_EIO)
        status = status == AG_OK || status == AG_EIO ? AG_ENOMEM : status;
    int rc = status == AG_OK ? cli_outputs_add(tx, c->out_path ? c->out_path : "-", buf, len)
                             : cli_format_fail(c, status);
    free(buf);
    return rc;
}

int cli_emit_table(const cli_common *c, ag_table *t, const ag_output_meta *meta,
                   cli_outputs *tx)
{
    cli_outputs none = {0};
    if (!tx)
        tx = &none;
    return cli_outputs_finish(tx, stage_table(c, t, meta, tx));
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

int cli_emit_settings(const cli_common *c, const ag_record_list *recs, const char *command,
                      const char *source, const cli_settings_in *in, cli_outputs *tx)
{
    cli_outputs none = {0};
    char *settings = NULL;
    int rc = cli_settings_text(c, in, &settings);
    ag_output_meta meta = {.size = sizeof(ag_output_meta),
                           .command = command, .source = source, .settings = settings};
    rc = rc ? cli_outputs_finish(tx ? tx : &none, rc) : cli_emit_outputs(c, recs, &meta, tx);
    free(settings);
    return rc;
}
