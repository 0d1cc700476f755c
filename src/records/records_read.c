/* records_read.c — the records attngeom writes, read back (records.h):
 * JSON documents (one or several, concatenated), JSONL, CSV and TSV. The
 * whole input is read first (capped), then parsed; JSONL and CSV line by
 * line, each line capped before it is parsed. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom.h"

/* Where a record came from, for messages. */
typedef struct {
    const char *name;
    const char *buf;
    size_t len;
    ag_row_fn fn;
    void *user;
    ag_error *err;
    /* scratch for one record */
    const char **keys;
    ag_cell *cells;
    size_t cap;
} reader;

/* "NAME: line N: MESSAGE" (line 0: "record R"), from the message in err. */
static int located(reader *r, size_t line, size_t record, int status)
{
    char msg[AG_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", r->err && r->err->status ? r->err->message
                                                              : ag_strerror(status));
    if (line)
        return ag_error_set(r->err, status, "%s: line %zu: %s", r->name, line, msg);
    return ag_error_set(r->err, status, "%s: record %zu: %s", r->name, record, msg);
}

static int scratch(reader *r, size_t count)
{
    if (count > AG_RECORDS_KEYS_MAX)
        return ag_error_set(r->err, AG_ELIMIT, "more than %d keys in a record",
                            AG_RECORDS_KEYS_MAX);
    if (count <= r->cap)
        return AG_OK;
    const char **keys = realloc(r->keys, count * sizeof *keys);
    if (keys)
        r->keys = keys;
    ag_cell *cells = keys ? realloc(r->cells, count * sizeof *cells) : NULL;
    if (!cells)
        return ag_error_set(r->err, AG_ENOMEM, "out of memory for a record of %zu keys", count);
    r->cells = cells;
    r->cap = count;
    return AG_OK;
}

int ag_record_key_check(const char *key, ag_error *err)
{
    if (!key || !*key)
        return ag_error_set(err, AG_EFORMAT, "an empty key");
    if (strnlen(key, AG_RECORDS_KEY_MAX + 1) > AG_RECORDS_KEY_MAX)
        return ag_error_set(err, AG_ELIMIT, "a key longer than %d bytes", AG_RECORDS_KEY_MAX);
    return AG_OK;
}

static int deliver(reader *r, size_t count)
{
    ag_row row = {.count = count, .keys = r->keys, .cells = r->cells};
    return r->fn(&row, r->user, r->err);
}

/* The line of buf[to], from the line `line` of buf[from] (from <= to):
 * counted forward, so that a whole file is scanned once. */
static size_t line_after(const reader *r, size_t from, size_t line, size_t to)
{
    for (const char *p = r->buf + from; (p = memchr(p, '\n', (size_t)(r->buf + to - p))); p++)
        line++;
    return line;
}

/* ---- JSON ------------------------------------------------------------------------ */

static int json_cell(reader *r, const char *key, const json_t *v, ag_cell *c)
{
    memset(c, 0, sizeof *c);
    switch (json_typeof(v)) {
    case JSON_NULL: return AG_OK;
    case JSON_TRUE:
    case JSON_FALSE:
        c->kind = AG_CELL_BOOL;
        c->value = json_is_true(v);
        return AG_OK;
    case JSON_INTEGER:
        c->kind = AG_CELL_INTEGER;
        c->value = (double)json_integer_value(v);
        return AG_OK;
    case JSON_REAL:
        c->kind = AG_CELL_NUMBER;
        c->value = json_real_value(v);
        return AG_OK;
    case JSON_STRING:
        c->kind = AG_CELL_TEXT;
        c->text = json_string_value(v);
        return AG_OK;
    default:
        return ag_error_set(r->err, AG_EFORMAT, "key '%s' holds %s, not a value", key,
                            json_is_array(v) ? "an array" : "an object");
    }
}

/* One record, a JSON object. */
static int json_record(reader *r, const json_t *o)
{
    if (!json_is_object(o))
        return ag_error_set(r->err, AG_EFORMAT, "a record is a JSON object, not %s",
                            json_is_array(o) ? "an array" : "a value");
    size_t count = json_object_size(o), k = 0;
    int status = scratch(r, count);
    const char *key;
    json_t *v;
    /* nothing is stored past what scratch() granted: a refused record
     * stops here, and k never passes the object's size */
    json_object_foreach((json_t *)o, key, v) {
        if (status != AG_OK || k == count)
            break;
        status = ag_record_key_check(key, r->err);
        if (status == AG_OK)
            status = json_cell(r, key, v, &r->cells[k]);
        r->keys[k++] = key;
    }
    return status == AG_OK ? deliver(r, k) : status;
}

/* The records a JSON value holds: a document {"records": [...]}, an array
 * of records, a settings line (none) or one record. */
static int json_value(reader *r, const json_t *v, size_t line, size_t *record)
{
    const json_t *list = json_is_array(v) ? v : json_object_get(v, "records");
    if (!list && json_is_object(v) && json_object_get(v, "settings"))
        return AG_OK;
    if (!list) {
        ++*record;
        int status = json_record(r, v);
        return status == AG_OK ? AG_OK : located(r, line, *record, status);
    }
    if (!json_is_array(list))
        return ag_error_set(r->err, AG_EFORMAT, "%s: line %zu: \"records\" is not an array",
                            r->name, line);
    size_t i;
    const json_t *rec;
    json_array_foreach(list, i, rec) {
        ++*record;
        int status = json_record(r, rec);
        /* named by its number: jansson keeps no positions inside a value */
        if (status != AG_OK)
            return located(r, 0, *record, status);
    }
    return AG_OK;
}

/* jansson names few of its allocation failures (a NULL result with no
 * reason is one): either is "out of memory", never an empty message. */
static int json_failed(reader *r, size_t base_line, const json_error_t *je)
{
    size_t line = base_line + (je->line > 0 ? (size_t)je->line - 1 : 0);
    if (json_error_code(je) == json_error_out_of_memory || !je->text[0])
        return ag_error_set(r->err, AG_ENOMEM, "%s: line %zu: out of memory", r->name, line);
    return ag_error_set(r->err, AG_EFORMAT, "%s: line %zu: %s", r->name, line, je->text);
}

/* The next JSON value from off (after blanks) into *v: a one-line value
 * alone (JSONL), else a document over several lines, parsed whole
 * (capped). */
static int next_value(reader *r, size_t off, size_t line, json_t **v, size_t *used)
{
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK;
    const char *nl = memchr(r->buf + off, '\n', r->len - off);
    size_t n = nl ? (size_t)(nl - r->buf) - off : r->len - off;
    json_error_t je;
    *v = NULL;
    if (n <= AG_RECORDS_LINE_MAX) {
        *v = json_loadb(r->buf + off, n, flags, &je);
        if (!*v && json_error_code(&je) == json_error_out_of_memory)
            return json_failed(r, line, &je);
    }
    if (!*v && r->len - off > AG_RECORDS_DOCUMENT_MAX)
        return ag_error_set(r->err, AG_ELIMIT, "%s: line %zu: a JSON document larger than %zu "
                            "bytes (write --format jsonl for larger outputs)", r->name, line,
                            AG_RECORDS_DOCUMENT_MAX);
    if (!*v)
        *v = json_loadb(r->buf + off, r->len - off, flags, &je);
    if (!*v)
        return json_failed(r, line, &je);
    *used = je.position;
    return AG_OK;
}

/* JSON values one after another: JSONL lines, documents (`cat a.json
 * b.json`), or both. */
static int read_json(reader *r, size_t start)
{
    size_t record = 0, line = line_after(r, 0, 1, start), counted = start;
    for (size_t off = start; off < r->len;) {
        if (isspace((unsigned char)r->buf[off])) {
            off++;
            continue;
        }
        line = line_after(r, counted, line, off);
        counted = off;
        size_t used = 0;
        json_t *v;
        int status = next_value(r, off, line, &v, &used);
        if (status != AG_OK)
            return status;
        status = json_value(r, v, line, &record);
        json_decref(v);
        if (status != AG_OK)
            return status;
        off += used;
    }
    return AG_OK;
}

/* ---- CSV and TSV ------------------------------------------------------------------- */

/* "12", "-0.5", "1e-08": a whole decimal number (no hex, inf or nan). */
static int decimal_number(const char *s, int *integral)
{
    const char *p = s;
    int digits = 0;
    *integral = 1;
    if (*p == '-' || *p == '+')
        p++;
    for (; isdigit((unsigned char)*p); p++)
        digits++;
    if (*p == '.') {
        *integral = 0;
        for (p++; isdigit((unsigned char)*p); p++)
            digits++;
    }
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        *integral = 0;
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

static int csv_cell(reader *r, const char *key, char *s, int quoted, ag_cell *c)
{
    int integral;
    memset(c, 0, sizeof *c);
    if (quoted) {
        c->kind = AG_CELL_TEXT;
        c->text = s;
    } else if (!*s || strcmp(s, "null") == 0) {
        c->kind = AG_CELL_NULL;
    } else if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        c->kind = AG_CELL_BOOL;
        c->value = s[0] == 't';
    } else if (decimal_number(s, &integral)) {
        c->value = strtod(s, NULL);
        /* an integer beyond ±2⁵³ is no longer exact: a number */
        c->kind = integral && fabs(c->value) <= 9007199254740992.0 ? AG_CELL_INTEGER : AG_CELL_NUMBER;
        if (!isfinite(c->value))
            return ag_error_set(r->err, AG_EFORMAT, "key '%s': '%s' is out of range", key, s);
    } else {
        c->kind = AG_CELL_TEXT;
        c->text = s;
    }
    return AG_OK;
}

/* Split the record at r->buf[*off] into NUL-terminated fields of `rec`
 * (a copy, unquoted), advancing *off past it and *line over its lines.
 * fields[k] and quoted[k] for k < *count. */
typedef struct {
    char *text;
    size_t cap;
    size_t *starts;
    unsigned char *quoted;
    size_t count, fcap;
} csv_record;

static int csv_field_start(reader *r, csv_record *rec, size_t pos, int quoted)
{
    if (rec->count == AG_RECORDS_KEYS_MAX)
        return ag_error_set(r->err, AG_ELIMIT, "more than %d cells", AG_RECORDS_KEYS_MAX);
    if (rec->count == rec->fcap) {
        size_t cap = rec->fcap ? 2 * rec->fcap : 64;
        size_t *s = realloc(rec->starts, cap * sizeof *s);
        if (s)
            rec->starts = s;
        unsigned char *q = s ? realloc(rec->quoted, cap) : NULL;
        if (!q)
            return ag_error_set(r->err, AG_ENOMEM, "out of memory for a CSV record");
        rec->quoted = q;
        rec->fcap = cap;
    }
    rec->starts[rec->count] = pos;
    rec->quoted[rec->count++] = (unsigned char)quoted;
    return AG_OK;
}

static int csv_split(reader *r, char sep, size_t *off, size_t *line, csv_record *rec)
{
    size_t start = *off, end = start, out = 0;
    /* the record's extent: to the first newline outside quotes */
    int inq = 0;
    for (; end < r->len && (inq || r->buf[end] != '\n'); end++) {
        if (sep == ',' && r->buf[end] == '"')
            inq = !inq;
        else if (r->buf[end] == '\n')
            ++*line;
        if (end - start > AG_RECORDS_LINE_MAX)
            return ag_error_set(r->err, AG_ELIMIT, "longer than %zu bytes", AG_RECORDS_LINE_MAX);
    }
    if (inq)
        return ag_error_set(r->err, AG_EFORMAT, "a quoted cell is not closed");
    *off = end + 1;
    size_t n = end - start;
    if (n && r->buf[start + n - 1] == '\r')
        n--;
    /* a cell is a C string from here on: a NUL would cut it short */
    if (memchr(r->buf + start, '\0', n))
        return ag_error_set(r->err, AG_EFORMAT, "a NUL byte in a cell");
    if (n + 1 > rec->cap) {
        char *t = realloc(rec->text, n + 1);
        if (!t)
            return ag_error_set(r->err, AG_ENOMEM, "out of memory for a line of %zu bytes", n);
        rec->text = t;
        rec->cap = n + 1;
    }
    rec->count = 0;
    const char *p = r->buf + start, *e = p + n;
    for (;;) {
        int quoted = sep == ',' && p < e && *p == '"';
        int status = csv_field_start(r, rec, out, quoted);
        if (status != AG_OK)
            return status;
        if (quoted) {
            for (p++; p < e; p++) {
                if (*p == '"' && p + 1 < e && p[1] == '"')
                    rec->text[out++] = *p++;
                else if (*p == '"')
                    break;
                else
                    rec->text[out++] = *p;
            }
            p++; /* the closing quote */
            if (p < e && *p != sep)
                return ag_error_set(r->err, AG_EFORMAT, "text after a quoted cell");
        } else {
            while (p < e && *p != sep)
                rec->text[out++] = *p++;
        }
        rec->text[out++] = '\0';
        if (p >= e)
            break;
        p++; /* the separator */
    }
    return AG_OK;
}

static int csv_header(reader *r, csv_record *rec, char ***keys)
{
    *keys = calloc(rec->count, sizeof **keys);
    if (!*keys)
        return ag_error_set(r->err, AG_ENOMEM, "out of memory for the header");
    for (size_t k = 0; k < rec->count; k++) {
        const char *key = rec->text + rec->starts[k];
        int status = ag_record_key_check(key, r->err);
        for (size_t j = 0; status == AG_OK && j < k; j++)
            if (strcmp((*keys)[j], key) == 0)
                status = ag_error_set(r->err, AG_EFORMAT, "key '%s' twice in the header", key);
        if (status == AG_OK && !((*keys)[k] = strdup(key)))
            status = ag_error_set(r->err, AG_ENOMEM, "out of memory for the header");
        if (status != AG_OK)
            return status;
    }
    return AG_OK;
}

static int csv_row(reader *r, csv_record *rec, char **keys, size_t ncol)
{
    if (rec->count != ncol)
        return ag_error_set(r->err, AG_EFORMAT, "%zu cell%s, the header has %zu", rec->count,
                            rec->count == 1 ? "" : "s", ncol);
    int status = scratch(r, ncol);
    for (size_t k = 0; status == AG_OK && k < ncol; k++) {
        r->keys[k] = keys[k];
        status = csv_cell(r, keys[k], rec->text + rec->starts[k], rec->quoted[k], &r->cells[k]);
    }
    return status == AG_OK ? deliver(r, ncol) : status;
}

static int blank_line(const reader *r, size_t off)
{
    for (; off < r->len && r->buf[off] != '\n'; off++)
        if (!isspace((unsigned char)r->buf[off]))
            return 0;
    return 1;
}

static int read_csv(reader *r, size_t start)
{
    /* TSV when the header has a tab and no comma */
    const char *nl = memchr(r->buf + start, '\n', r->len - start);
    size_t hn = nl ? (size_t)(nl - r->buf) - start : r->len - start;
    char sep = memchr(r->buf + start, '\t', hn) && !memchr(r->buf + start, ',', hn) ? '\t' : ',';
    csv_record rec = {0};
    char **keys = NULL;
    size_t ncol = 0, line = line_after(r, 0, 1, start), off = start;
    int status = csv_split(r, sep, &off, &line, &rec);
    if (status == AG_OK) {
        ncol = rec.count;
        status = csv_header(r, &rec, &keys);
    }
    if (status != AG_OK)
        status = located(r, line, 0, status);
    while (status == AG_OK && off < r->len) {
        size_t first = ++line;
        if (blank_line(r, off)) {
            const char *next = memchr(r->buf + off, '\n', r->len - off);
            off = next ? (size_t)(next - r->buf) + 1 : r->len;
            continue;
        }
        status = csv_split(r, sep, &off, &line, &rec);
        if (status == AG_OK)
            status = csv_row(r, &rec, keys, ncol);
        if (status != AG_OK)
            status = located(r, first, 0, status);
    }
    for (size_t k = 0; keys && k < ncol; k++)
        free(keys[k]);
    free(keys);
    free(rec.text);
    free(rec.starts);
    free(rec.quoted);
    return status;
}

/* ---- entry points ---------------------------------------------------------------- */

int ag_records_read_buffer(const char *name, const char *buf, size_t len, ag_row_fn fn,
                           void *user, ag_error *err)
{
    reader r = {.name = name, .buf = buf, .len = len, .fn = fn, .user = user, .err = err};
    size_t start = 0;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) /* a byte-order mark */
        start = 3;
    /* the first line that is not blank decides the format */
    size_t first = start;
    while (first < len && isspace((unsigned char)buf[first]))
        first++;
    int status = AG_OK;
    if (first == len)
        status = AG_OK; /* no records */
    else if (buf[first] == '{' || buf[first] == '[')
        status = read_json(&r, first);
    else {
        while (start < first && blank_line(&r, start)) { /* blank lines before the header */
            const char *nl = memchr(buf + start, '\n', len - start);
            start = nl ? (size_t)(nl - buf) + 1 : len;
        }
        status = read_csv(&r, start);
    }
    free(r.keys);
    free(r.cells);
    return status;
}

int ag_records_read(const char *path, ag_row_fn fn, void *user, ag_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int stdin_ = strcmp(path, "-") == 0;
    const char *name = stdin_ ? "standard input" : path;
    int status = stdin_ ? ag_read_fd(0, name, AG_RECORDS_FILE_MAX, &buf, &len, err)
                        : ag_read_file(path, AG_RECORDS_FILE_MAX, &buf, &len, err);
    if (status == AG_OK)
        status = ag_records_read_buffer(name, buf, len, fn, user, err);
    free(buf);
    return status;
}
