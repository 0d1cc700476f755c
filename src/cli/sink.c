/* sink.c — where the records of a corpus run go as its texts finish
 * (docs/cli.md, "Corpus runs"). In a format that can be written in pieces
 * (JSONL, CSV, TSV: ag_format_streams) each text's records are written and flushed as soon as it is done: on standard output, a
 * device or a FIFO they can be read at once; a file gets them in its
 * temporary, renamed over it only when the run succeeds, so it is still
 * written whole or not at all. The aligned table and JSON need every record
 * first, and so do Markdown and LaTeX (a paper's table leaves out the
 * identifying columns that hold one value in every row, known only from
 * them all); --expect compares them all, --sort orders them all (and
 * --columns checks its keys against them); those keep the records to the end.
 * --aggregate keeps only the running aggregate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_sink_open(cli_sink *k, const cli_common *c, const char *command, const char *source,
                  const cli_settings_in *in, int may_stream)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    k->meta = (ag_output_meta){.size = sizeof(ag_output_meta),
                               .command = command, .source = source};
    int rc = cli_settings_text(c, in, &k->settings);
    k->meta.settings = k->settings;
    cli_output_meta_apply(c, &k->meta);
    if (rc == 0 && (c->caption || c->tex_label) && c->format != AG_FORMAT_LATEX)
        rc = cli_usage_error(command, "%s goes with --format latex",
                             c->caption ? "--caption" : "--tex-label");
    if (rc == 0 && c->agg.on)
        rc = cli_agg_new(&c->agg, "--aggregate", 0, 0, &k->agg);
    else if (rc == 0 && may_stream && ag_format_streams(c->format) &&
             c->format != AG_FORMAT_MD && c->format != AG_FORMAT_LATEX && !c->expect_path &&
             !c->sort && !c->columns) /* both need the whole table */
        rc = cli_outputs_stream(&k->tx, c->out_path ? c->out_path : "-", &k->fp);
    return rc;
}

/* The records of this text written (with the head before the first). */
static int stream_text(cli_sink *k)
{
    ag_table t;
    if (cli_records_table(k->c, k->recs, &t) != 0)
        return 1;
    unsigned parts = AG_WRITE_ROWS | (k->head ? 0 : AG_WRITE_HEAD);
    /* records and progress on one terminal: the records scroll, the
     * progress line is drawn again below them */
    if (k->fp == stdout && isatty(STDOUT_FILENO))
        cli_progress_erase();
    int status = ag_table_write_parts(k->fp, k->c->format, &t, &k->meta, parts);
    ag_table_free(&t);
    k->head = 1;
    /* a failed write: whatever the writer took it for (its text cells
     * report -1 for both a write error and a full memory) */
    if ((status == AG_OK && fflush(k->fp) != 0) || ferror(k->fp))
        status = AG_EIO;
    if (status == AG_EIO)
        return cli_fail("%s: cannot write: %s", cli_output_name(k->c),
                        strerror(errno ? errno : EIO));
    return status == AG_OK ? 0 : cli_format_fail(k->c, status);
}

static int aggregate_text(cli_sink *k)
{
    ag_table t;
    ag_error err = {0};
    if (cli_records_table(k->c, k->recs, &t) != 0)
        return 1;
    int status = ag_aggregate_add_table(k->agg, &t, &err);
    ag_table_free(&t);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

int cli_sink_text(cli_sink *k)
{
    if (!k->fp && !k->agg)
        return 0; /* kept to the end */
    int rc = k->fp ? stream_text(k) : aggregate_text(k);
    if (k->recs)
        ag_record_list_clear(k->recs);
    return rc;
}

/* The streamed output finished: a head for a run with no record (every
 * text skipped), the tail, then the commit. */
static int finish_stream(cli_sink *k)
{
    ag_table t;
    unsigned parts = AG_WRITE_TAIL | (k->head ? 0 : AG_WRITE_HEAD);
    int status = cli_records_table(k->c, NULL, &t) == 0 ? AG_OK : AG_ENOMEM;
    if (status == AG_OK) {
        status = ag_table_write_parts(k->fp, k->c->format, &t, &k->meta, parts);
        ag_table_free(&t);
    }
    if (status != AG_OK)
        return cli_outputs_finish(&k->tx, cli_format_fail(k->c, status));
    return cli_outputs_commit(&k->tx);
}

static int finish_aggregate(cli_sink *k, cli_outputs *more)
{
    ag_table t = {0};
    ag_error err = {0};
    int human = k->c->format == AG_FORMAT_TABLE || k->c->format == AG_FORMAT_MD ||
                k->c->format == AG_FORMAT_LATEX;
    if (ag_aggregate_table(k->agg, human, &t, &err) != AG_OK)
        return cli_outputs_finish(more, cli_fail_error(&err));
    int rc = cli_emit_table(k->c, &t, &k->meta, more);
    ag_table_free(&t);
    return rc;
}

int cli_sink_close(cli_sink *k, int rc, cli_outputs *more)
{
    cli_outputs none = {0};
    if (!more)
        more = &none;
    if (rc) {
        cli_outputs_abort(&k->tx);
        cli_outputs_abort(more);
    } else if (k->fp) {
        cli_outputs_abort(more); /* a streamed run stages nothing else */
        rc = finish_stream(k);
    } else if (k->agg) {
        rc = finish_aggregate(k, more);
    } else {
        rc = cli_emit_outputs(k->c, k->recs, &k->meta, more);
    }
    ag_aggregate_free(k->agg);
    ag_record_list_free(k->recs);
    free(k->settings);
    memset(k, 0, sizeof *k);
    return rc;
}
