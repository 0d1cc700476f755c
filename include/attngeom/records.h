/* attngeom/records.h — records with any keys: the tables every command
 * prints, written in every output format, and read back from the JSON,
 * JSONL and CSV/TSV that attngeom writes (docs/cli.md, "Records in, records
 * out"). ag_records_write (metrics.h) is ag_records_table + ag_table_write.
 */
#ifndef ATTNGEOM_RECORDS_H
#define ATTNGEOM_RECORDS_H

#include <stdio.h>
#include "core.h"
#include "metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cells, rows, tables ------------------------------------------------ */

typedef enum {
    AG_CELL_NULL = 0, /* undefined (JSON null, an empty CSV cell) */
    AG_CELL_NUMBER,   /* finite double */
    AG_CELL_INTEGER,  /* integral value, printed without a fraction */
    AG_CELL_BOOL,     /* value 0 or 1 */
    AG_CELL_TEXT,     /* text */
    AG_CELL_MEAN_CI   /* value ± half: a mean and the half-width of its
                       * confidence interval (the human formats of aggregate;
                       * half is NaN when undefined). Machine formats write
                       * the mean alone. */
} ag_cell_kind;

typedef struct {
    ag_cell_kind kind;
    double value;
    double half;      /* AG_CELL_MEAN_CI only */
    const char *text; /* AG_CELL_TEXT only; owned by the table or the reader */
} ag_cell;

/* One record as a list of (key, cell) pairs, borrowed. */
typedef struct {
    size_t count;
    const char *const *keys; /* (count) */
    const ag_cell *cells;    /* (count) */
} ag_row;

/* A table: every row has a cell for each key. Owns its keys and the text of
 * its cells (set through ag_table_set_text). */
typedef struct {
    size_t ncol, nrow, cap;
    char **keys;    /* (ncol) */
    ag_cell *cells; /* (nrow, ncol) row-major; cap rows allocated */
} ag_table;

/* An empty table with these column keys (copied). AG_ENOMEM. */
AG_EXPORT int ag_table_init(ag_table *t, const char *const *keys, size_t ncol, ag_error *err);
/* Append a row of ncol null cells and return it; NULL (err set) when out of
 * memory. The pointer is valid until the next ag_table_add_row. */
AG_EXPORT ag_cell *ag_table_add_row(ag_table *t, ag_error *err);
/* Make *c a text cell holding a copy of s, owned by t. AG_ENOMEM. */
AG_EXPORT int ag_table_set_text(ag_table *t, ag_cell *c, const char *s, ag_error *err);
/* Row r of t as an ag_row (borrowed from t). */
AG_EXPORT ag_row ag_table_row(const ag_table *t, size_t r);
AG_EXPORT void ag_table_free(ag_table *t);

/* The table ag_records_write prints: columns layer, head, rows, cols, the
 * selected metrics in their order, then text when any record has one;
 * "stack" first when any record has one (ag_record_set_stack).
 * recs NULL: no records (the header alone). */
AG_EXPORT int ag_records_table(const ag_record_list *recs, const ag_metric_set *sel,
                               ag_table *out, ag_error *err);
/* Append a column `key` holding the text s in every row (a run's "model").
 * AG_ENOMEM. */
AG_EXPORT int ag_table_add_text_column(ag_table *t, const char *key, const char *s, ag_error *err);
/* Append a column `key` holding `value` in every row (a text cell's text
 * copied into t, as ag_table_set_text does). AG_ENOMEM: t keeps its columns
 * when the column cannot be made, its cells stay null from a text that
 * could not be copied on. */
AG_EXPORT int ag_table_add_column(ag_table *t, const char *key, ag_cell value, ag_error *err);

/* Keep the columns keys[0..n) of t, in that order (--columns): AG_EINVAL
 * for n 0 or a key named twice, AG_ENOTFOUND naming a key t lacks,
 * AG_ENOMEM; on an error t is as it was. */
AG_EXPORT int ag_table_select(ag_table *t, const char *const *keys, size_t n, ag_error *err);
/* Sort the rows of t by column key (--sort), a stable sort: numbers
 * (integers, booleans, means) by value, before text (by bytes), nulls
 * last; descending reverses the order but for the nulls, still last, and
 * tied rows keep their order. AG_ENOTFOUND naming a key t lacks,
 * AG_ENOMEM; on an error t is as it was. */
AG_EXPORT int ag_table_sort(ag_table *t, const char *key, int descending, ag_error *err);

/* Write t in fmt. Machine formats (JSON, JSONL, CSV, TSV) write numbers
 * with 17 significant digits, so they read back exactly; the human formats
 * (table, Markdown, LaTeX) 6, and a mean ± half-width cell with the
 * half-width rounded to two significant digits and the mean to the same
 * place. The settings object S is {"command", "source", "version"} (those
 * given, and the version) followed by the keys of meta->settings. JSON:
 * {"command", "source", "version", "settings": S, "records": [...]}; JSONL:
 * a first line {"settings": S}, then one record per line, the stream
 * flushed after each. Text cells are escaped as ag_text_escape says and
 * quoted as their format needs (ag_format_text). AG_EIO when a write fails,
 * AG_ENOMEM, AG_EINVAL when meta->settings is not the text of a JSON
 * object or meta->size is refused (0, or larger than this library knows:
 * core.h's ABI rule). The table format with meta->width above 0 fits
 * that many characters a line: a wider table is folded into blocks, each
 * the identifying columns (layer, head, text, input, metric) and as many of
 * the others, in order, as fit; text and headers too wide for any block are
 * cut, ending in "…", numbers never (docs/cli.md, "The terminal table"). */
AG_EXPORT int ag_table_write(FILE *fp, ag_format fmt, const ag_table *t, const ag_output_meta *meta);

/* A table written in pieces as its rows come (a corpus run that streams):
 * the head (JSONL's settings line, the CSV/TSV header, Markdown's header
 * lines, LaTeX's preamble), rows, the tail (LaTeX's end). ag_table_write is
 * all three at once, and a table written as head + rows of t1 + rows of t2
 * + tail is byte for byte ag_table_write of t1's rows then t2's when t1
 * and t2 have the same keys (LaTeX: and their columns hold text alike). */
enum { AG_WRITE_HEAD = 1, AG_WRITE_ROWS = 2, AG_WRITE_TAIL = 4, AG_WRITE_ALL = 7 };
/* 1 when fmt can be written in pieces: JSONL, CSV, TSV, Markdown, LaTeX.
 * Not the aligned table (its widths need every row) nor JSON (one
 * document). */
AG_EXPORT int ag_format_streams(ag_format fmt);
/* The pieces `parts` (AG_WRITE_*) of ag_table_write's output. AG_EINVAL
 * for a format that does not stream and parts other than AG_WRITE_ALL. */
AG_EXPORT int ag_table_write_parts(FILE *fp, ag_format fmt, const ag_table *t, const ag_output_meta *meta,
                                   unsigned parts);

/* Write one text cell of a text format: s escaped with AG_TEXT_CONTROL,
 * then quoted for fmt (CSV: RFC 4180 quotes; Markdown: \|; LaTeX: \verb
 * with a delimiter s does not hold; TSV and table: as escaped). Returns 0,
 * or -1 on a write error or when out of memory. */
AG_EXPORT int ag_format_text(FILE *fp, ag_format fmt, const char *s);

/* ---- reading records ---------------------------------------------------- */

/* Caps, checked before anything is allocated for them. */
#define AG_RECORDS_FILE_MAX ((size_t)1 << 30)       /* bytes of one input */
#define AG_RECORDS_DOCUMENT_MAX ((size_t)256 << 20) /* a JSON document (JSONL is not capped but by the file) */
#define AG_RECORDS_LINE_MAX ((size_t)16 << 20)      /* one JSONL or CSV line */
#define AG_RECORDS_KEYS_MAX 4096                    /* keys of one record */
#define AG_RECORDS_KEY_MAX 256                      /* bytes of one key */

/* The one check of a record's key, wherever records come from (the reader
 * below, ag_aggregate_add for records built in memory): AG_EFORMAT "an
 * empty key", AG_ELIMIT "a key longer than 256 bytes" (AG_RECORDS_KEY_MAX). */
AG_EXPORT int ag_record_key_check(const char *key, ag_error *err);

/* Called once per record, in file order. Keys and text are valid during the
 * call only. A non-zero return stops the reading and is returned; a message
 * set in err is prefixed with the file and the line (or record). */
typedef int (*ag_row_fn)(const ag_row *row, void *user, ag_error *err);

/* Read the records of path ("-": standard input), format told by the
 * content:
 *  - JSON: one document {"records": [...], ...} (its other keys ignored) or
 *    an array of records, as --format json writes it;
 *  - JSONL: one JSON object per line; an object holding "settings" is
 *    skipped, one holding "records" gives those records; blank lines skip;
 *  - CSV or TSV (a header line with a tab and no comma): header, then rows;
 *    an empty cell or `null` is null, `true`/`false` booleans, a cell that
 *    is a whole decimal number (`12`, `-0.5`, `1e-08`) a number (an integer
 *    without '.', 'e', or 'E'), a quoted cell always text, anything else text.
 * Each record is a JSON object of nulls, booleans, numbers and strings
 * (nothing nested), or a CSV row with as many cells as the header. Errors
 * (AG_EFORMAT; AG_ELIMIT over a cap; AG_EIO) name the file and the line
 * ("records.jsonl: line 4: ...") or, in a JSON document, the record
 * ("records.json: record 3: ..."). Empty input is no records. */
AG_EXPORT int ag_records_read(const char *path, ag_row_fn fn, void *user, ag_error *err);
/* The same from a buffer (buf[len], not necessarily NUL-terminated); name
 * is the file in messages. */
AG_EXPORT int ag_records_read_buffer(const char *name, const char *buf, size_t len, ag_row_fn fn,
                                     void *user, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
