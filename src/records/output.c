/* output.c — tables as a terminal table, JSON, JSONL, CSV, TSV, Markdown or
 * a LaTeX booktabs table: the one writer of every record command. Machine
 * formats (JSON, JSONL, CSV, TSV) print every number with 17 significant
 * digits, so they round-trip exactly; the human formats (table, Markdown,
 * LaTeX) print 6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/sized_int.h"

static const char *const format_names[AG_FORMAT_COUNT] = {
    "table", "json", "csv", "tsv", "md", "latex", "jsonl"};

int ag_format_from_name(const char *name)
{
    for (int f = 0; f < AG_FORMAT_COUNT; f++)
        if (strcmp(name, format_names[f]) == 0)
            return f;
    return -1;
}

/* ---- text cells ------------------------------------------------------------ */

/* A \verb delimiter that does not occur in s, or 0. */
static char verb_delimiter(const char *s)
{
    static const char candidates[] = "|!+=@/:;\"'`~^.,?<>()[]-_0123456789";
    for (const char *c = candidates; *c; c++)
        if (!strchr(s, *c))
            return *c;
    return 0;
}

static void put_quoted(FILE *fp, const char *s, char special, const char *replacement)
{
    for (; *s; s++)
        if (*s == special)
            fputs(replacement, fp);
        else
            fputc(*s, fp);
}

int ag_format_text(FILE *fp, ag_format fmt, const char *s)
{
    char *t = ag_text_escape_dup(s ? s : "", AG_TEXT_CONTROL);
    if (!t)
        return -1;
    if (fmt == AG_FORMAT_CSV) { /* RFC 4180 */
        fputc('"', fp);
        put_quoted(fp, t, '"', "\"\"");
        fputc('"', fp);
    } else if (fmt == AG_FORMAT_MD) { /* a bare | would end the cell */
        put_quoted(fp, t, '|', "\\|");
    } else if (fmt == AG_FORMAT_LATEX) {
        char d = verb_delimiter(t);
        fprintf(fp, "\\verb%c", d ? d : '|');
        put_quoted(fp, t, d ? d : '|', "\\x7c"); /* only when every candidate occurs */
        fputc(d ? d : '|', fp);
    } else {
        fputs(t, fp); /* escaped: no tab or newline can split a TSV or table row */
    }
    free(t);
    return ferror(fp) ? -1 : 0;
}

/* ---- cells as text ---------------------------------------------------------- */

#define CELL_MAX 96

static int human(ag_format fmt)
{
    return fmt == AG_FORMAT_TABLE || fmt == AG_FORMAT_MD || fmt == AG_FORMAT_LATEX;
}

static const char *null_text(ag_format fmt)
{
    switch (fmt) {
    case AG_FORMAT_TABLE: return "null";
    case AG_FORMAT_MD: return "—";
    case AG_FORMAT_LATEX: return "--";
    default: return "";
    }
}

/* "2.5e-07" → "$2.5\times10^{-7}$"; without an exponent as it is. */
static void latex_number(char *buf, size_t size)
{
    char *e = strchr(buf, 'e');
    if (!e)
        return;
    char tmp[CELL_MAX];
    snprintf(tmp, sizeof tmp, "$%.*s\\times10^{%d}$", (int)(e - buf), buf, atoi(e + 1));
    snprintf(buf, size, "%s", tmp);
}

/* mean ± 0 (every value equal): the mean to 6 digits. */
static void mean_exact_text(double mean, ag_format fmt, char *buf, size_t size)
{
    char m[24]; /* "%.6g" needs 13 at most */
    snprintf(m, sizeof m, "%.6g", mean);
    char *e = strchr(m, 'e');
    if (fmt != AG_FORMAT_LATEX)
        snprintf(buf, size, "%s ± 0", m);
    else if (e)
        snprintf(buf, size, "$(%.*s \\pm 0)\\times10^{%d}$", (int)(e - m), m, atoi(e + 1));
    else
        snprintf(buf, size, "$%s \\pm 0$", m);
}

/* mean ± half-width: the half-width to two significant digits, the mean to
 * the same decimal place; a common power of ten outside [1e-4, 1e6). An
 * undefined half-width (one value) leaves the mean alone. */
static void mean_ci_text(double mean, double half, ag_format fmt, char *buf, size_t size)
{
    if (!isfinite(half)) {
        snprintf(buf, size, "%.6g", mean);
        if (fmt == AG_FORMAT_LATEX)
            latex_number(buf, size);
        return;
    }
    if (half <= 0) {
        mean_exact_text(mean, fmt, buf, size);
        return;
    }
    const char *pm = fmt == AG_FORMAT_LATEX ? " \\pm " : " ± ";
    const char *dollar = fmt == AG_FORMAT_LATEX ? "$" : "";
    double top = fmax(fabs(mean), half);
    int exp10 = 0;
    if (top >= 1e6 || top < 1e-4)
        exp10 = (int)floor(log10(top));
    double scale = pow(10.0, -exp10), m = mean * scale, h = half * scale;
    int decimals = 1 - (int)floor(log10(h));
    if (decimals >= 0 && decimals <= 17 && round(h * pow(10.0, decimals)) >= 100)
        decimals--; /* 0.9996 rounds to 1.0, not 1.00 */
    if (decimals < 0) { /* round to tens, hundreds, ... */
        double unit = pow(10.0, -decimals);
        m = round(m / unit) * unit;
        h = round(h / unit) * unit;
        decimals = 0;
    }
    if (decimals > 17)
        decimals = 17;
    if (exp10 == 0)
        snprintf(buf, size, "%s%.*f%s%.*f%s", dollar, decimals, m, pm, decimals, h, dollar);
    else if (fmt == AG_FORMAT_LATEX)
        snprintf(buf, size, "$(%.*f%s%.*f)\\times10^{%d}$", decimals, m, pm, decimals, h, exp10);
    else
        snprintf(buf, size, "(%.*f%s%.*f)e%+03d", decimals, m, pm, decimals, h, exp10);
}

/* The significant digits of the human formats' plain numbers for the
 * write under way on this thread (ag_output_meta.digits): set by
 * ag_table_write_parts for the length of one call, so that every cell
 * writer below need not carry it; thread-local, so that writers on other
 * threads do not see it. */
static _Thread_local int human_digits = 6;

/* The text of a non-text cell in fmt. */
static void cell_text(const ag_cell *c, ag_format fmt, char *buf, size_t size)
{
    int digits = human(fmt) ? human_digits : 17;
    switch (c->kind) {
    case AG_CELL_NUMBER:
        snprintf(buf, size, "%.*g", digits, c->value);
        break;
    case AG_CELL_INTEGER: snprintf(buf, size, "%.0f", c->value); return;
    case AG_CELL_BOOL: snprintf(buf, size, "%s", c->value != 0 ? "true" : "false"); return;
    case AG_CELL_MEAN_CI:
        if (human(fmt))
            mean_ci_text(c->value, c->half, fmt, buf, size);
        else
            snprintf(buf, size, "%.17g", c->value);
        return;
    default: snprintf(buf, size, "%s", null_text(fmt)); return;
    }
    if (fmt == AG_FORMAT_LATEX)
        latex_number(buf, size);
}

/* Write cell c; text cells quoted for fmt. 0 or -1. */
static int put_cell(FILE *fp, ag_format fmt, const ag_cell *c)
{
    if (c->kind == AG_CELL_TEXT)
        return ag_format_text(fp, fmt, c->text);
    char buf[CELL_MAX];
    cell_text(c, fmt, buf, sizeof buf);
    fputs(buf, fp);
    return 0;
}

/* Characters on a terminal: UTF-8 bytes but continuation bytes. */
static size_t display_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* The cell as the table shows it (text escaped), in buf or a new string. */
static char *table_cell(const ag_cell *c, char *buf, size_t size)
{
    if (c->kind != AG_CELL_TEXT) {
        cell_text(c, AG_FORMAT_TABLE, buf, size);
        return buf;
    }
    return ag_text_escape_dup(c->text ? c->text : "", AG_TEXT_CONTROL);
}

/* A key as fmt shows it: a key read from a CSV header may hold any byte.
 * JSON: not-UTF-8 bytes escaped; the text formats: control characters
 * escaped too, and quoted where a bare key would break a row (a CSV key
 * with a comma or a quote, a Markdown key with |). NULL when out of memory. */
static char *shown_key(const char *key, ag_format fmt)
{
    if (fmt == AG_FORMAT_JSON || fmt == AG_FORMAT_JSONL)
        return ag_text_escape_dup(key, AG_TEXT_UTF8);
    if ((fmt == AG_FORMAT_CSV && strpbrk(key, ",\"")) || (fmt == AG_FORMAT_MD && strchr(key, '|'))) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        int ok = mem && ag_format_text(mem, fmt, key) == 0;
        if (mem)
            fclose(mem);
        if (!ok)
            free(buf);
        return ok ? buf : NULL;
    }
    return ag_text_escape_dup(key, AG_TEXT_CONTROL);
}

static const ag_cell *cell_at(const ag_table *t, size_t r, size_t c)
{
    return &t->cells[r * t->ncol + c];
}

/* ---- JSON and JSONL ----------------------------------------------------------- */

/* A file name need not be UTF-8, which JSON requires: its other bytes are
 * written \xNN (ag_text_escape). */
static json_t *json_text(const char *s)
{
    char *t = ag_text_escape_dup(s ? s : "", AG_TEXT_UTF8);
    json_t *j = t ? json_string(t) : NULL;
    free(t);
    return j;
}

static json_t *cell_json(const ag_cell *c)
{
    switch (c->kind) {
    case AG_CELL_NUMBER:
    case AG_CELL_MEAN_CI: return json_real(c->value);
    case AG_CELL_INTEGER: /* beyond ±2⁵³ a double holds no exact integer anyway */
        return fabs(c->value) <= 9007199254740992.0 ? json_integer((json_int_t)c->value)
                                                    : json_real(c->value);
    case AG_CELL_BOOL: return json_boolean(c->value != 0);
    case AG_CELL_TEXT: return json_text(c->text);
    default: return json_null();
    }
}

static json_t *row_json(const ag_table *t, char *const *keys, size_t r)
{
    json_t *o = json_object();
    for (size_t c = 0; o && c < t->ncol; c++) {
        json_t *v = cell_json(cell_at(t, r, c));
        if (!v || json_object_set_new(o, keys[c], v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* command, source, version (the keys given) into o. */
static int meta_json(json_t *o, const ag_output_meta *meta)
{
    int ok = o != NULL;
    if (ok && meta && meta->command)
        ok = json_object_set_new(o, "command", json_string(meta->command)) == 0;
    if (ok && meta && meta->source)
        ok = json_object_set_new(o, "source", json_text(meta->source)) == 0;
    if (ok)
        ok = json_object_set_new(o, "version", json_string(ag_version())) == 0;
    return ok;
}

#define JSON_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* The settings object: command, source, version, then meta->settings'
 * keys. NULL when out of memory or when meta->settings is not an object. */
static json_t *settings_json(const ag_output_meta *meta)
{
    json_t *o = json_object();
    if (!meta_json(o, meta)) {
        json_decref(o);
        return NULL;
    }
    if (!meta || !meta->settings)
        return o;
    json_t *more = json_loads(meta->settings, JSON_REJECT_DUPLICATES, NULL);
    int ok = json_is_object(more) && json_object_update(o, more) == 0;
    json_decref(more);
    if (!ok)
        json_decref(o);
    return ok ? o : NULL;
}

static int write_json(FILE *fp, const ag_table *t, char *const *keys, const ag_output_meta *meta)
{
    json_t *root = json_object(), *arr = json_array(), *settings = settings_json(meta);
    if (!settings) {
        json_decref(arr);
        json_decref(root);
        return meta && meta->settings ? AG_EINVAL : AG_ENOMEM;
    }
    int ok = arr && meta_json(root, meta);
    ok = ok ? json_object_set_new(root, "settings", settings) == 0 : (json_decref(settings), 0);
    for (size_t r = 0; ok && r < t->nrow; r++)
        ok = json_array_append_new(arr, row_json(t, keys, r)) == 0;
    if (ok) {
        ok = json_object_set_new(root, "records", arr) == 0;
        arr = NULL;
    }
    int wrote = ok && json_dumpf(root, fp, JSON_INDENT(1) | JSON_FLAGS) == 0 &&
                fputc('\n', fp) != EOF;
    json_decref(arr);
    json_decref(root);
    /* a document that could not be built is memory; one not written, the stream */
    return !ok ? AG_ENOMEM : wrote ? AG_OK : AG_EIO;
}

/* One object a line: the settings first, then every record, each line
 * flushed as it is written so that a reader of a pipe sees it at once. */
static int write_jsonl(FILE *fp, const ag_table *t, char *const *keys, const ag_output_meta *meta,
                       unsigned parts)
{
    int ok = 1;
    if (parts & AG_WRITE_HEAD) {
        json_t *settings = settings_json(meta), *head = json_object();
        if (!settings) {
            json_decref(head);
            return meta && meta->settings ? AG_EINVAL : AG_ENOMEM;
        }
        if (!head)
            return json_decref(settings), AG_ENOMEM;
        ok = json_object_set_new(head, "settings", settings) == 0 &&
             json_dumpf(head, fp, JSON_COMPACT | JSON_FLAGS) == 0 && fputc('\n', fp) != EOF &&
             fflush(fp) == 0;
        json_decref(head);
    }
    for (size_t r = 0; ok && (parts & AG_WRITE_ROWS) && r < t->nrow; r++) {
        json_t *o = row_json(t, keys, r);
        if (!o)
            return AG_ENOMEM; /* not the stream's fault */
        ok = json_dumpf(o, fp, JSON_COMPACT | JSON_FLAGS) == 0 && fputc('\n', fp) != EOF &&
             fflush(fp) == 0;
        json_decref(o);
    }
    return ok ? AG_OK : AG_EIO;
}

/* ---- delimited and aligned text ------------------------------------------------ */

static int write_delimited(FILE *fp, const ag_table *t, char *const *keys, ag_format fmt,
                           unsigned parts)
{
    char sep = fmt == AG_FORMAT_CSV ? ',' : '\t';
    for (size_t c = 0; (parts & AG_WRITE_HEAD) && c < t->ncol; c++)
        fprintf(fp, "%s%c", keys[c], c + 1 < t->ncol ? sep : '\n');
    for (size_t r = 0; (parts & AG_WRITE_ROWS) && r < t->nrow; r++)
        for (size_t c = 0; c < t->ncol; c++) {
            if (put_cell(fp, fmt, cell_at(t, r, c)) != 0)
                return AG_ENOMEM;
            fputc(c + 1 < t->ncol ? sep : '\n', fp);
        }
    return AG_OK;
}

/* 1 when column c holds text in every row that is not null, and some. */
static int text_column(const ag_table *t, size_t c)
{
    size_t text = 0;
    for (size_t r = 0; r < t->nrow; r++) {
        ag_cell_kind k = cell_at(t, r, c)->kind;
        if (k != AG_CELL_TEXT && k != AG_CELL_NULL)
            return 0;
        text += k == AG_CELL_TEXT;
    }
    return text > 0;
}

/* One cell of the table format, padded to width by characters, not bytes:
 * numbers right-aligned, text left-aligned (no trailing blanks at the end
 * of a line). Text wider than width (only a folded table narrows a column
 * below its widest cell) is cut at a character and ends in "…", so that
 * the cut shows. */
static void put_aligned(FILE *fp, const char *s, size_t width, int left, int last)
{
    size_t shown = display_width(s);
    if (shown > width && width > 0) {
        size_t keep = width - 1, n = 0;
        const char *p = s;
        for (; *p; p++) { /* stop before the lead byte of character keep + 1 */
            if (((unsigned char)*p & 0xC0) != 0x80 && n++ == keep)
                break;
        }
        fwrite(s, 1, (size_t)(p - s), fp);
        fputs("…", fp);
        fputs(last ? "\n" : "  ", fp);
        return;
    }
    int pad = shown > width ? 0 : (int)(width - shown);
    if (left)
        fprintf(fp, "%s%*s%s", s, last ? 0 : pad, "", last ? "\n" : "  ");
    else
        fprintf(fp, "%*s%s%s", pad, "", s, last ? "\n" : "  ");
}

/* The identifying columns a folded table repeats in every block, so that
 * each line of a block says which record it is (docs/cli.md, "The terminal
 * table"). */
static int id_column(const char *key)
{
    static const char *const ids[] = {"layer", "head", "text", "input", "metric"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        if (strcmp(key, ids[i]) == 0)
            return 1;
    return 0;
}

/* The header and the rows of the columns cols[0..n) of t. */
static int write_block(FILE *fp, const ag_table *t, char *const *keys, const size_t *cols, size_t n,
                       const size_t *width, const unsigned char *left)
{
    char buf[CELL_MAX];
    for (size_t i = 0; i < n; i++)
        put_aligned(fp, keys[cols[i]], width[cols[i]], left[cols[i]], i + 1 == n);
    for (size_t r = 0; r < t->nrow; r++)
        for (size_t i = 0; i < n; i++) {
            size_t c = cols[i];
            char *s = table_cell(cell_at(t, r, c), buf, sizeof buf);
            if (!s)
                return AG_ENOMEM;
            put_aligned(fp, s, width[c], left[c], i + 1 == n);
            if (s != buf)
                free(s);
        }
    return AG_OK;
}

/* A text column of a folded table is never cut below this many characters
 * (nor a number column's header): fewer say too little to tell rows apart. */
#define FOLD_TEXT_MIN 8

/* Fold the columns into blocks no wider than limit characters: each block
 * is the identifying columns then as many of the others, in table order, as
 * fit; blocks are separated by an empty line. Numbers are never cut: when
 * the identifying columns and one number column do not fit in limit, the
 * text identifying columns are narrowed first (down to FOLD_TEXT_MIN), then
 * headers and text cells are cut with "…"; a line is wider than limit only
 * when the numbers alone do not fit. cellw[c] is column c's widest cell. */
static int write_folded(FILE *fp, const ag_table *t, char *const *keys, size_t *width,
                        const size_t *cellw, const unsigned char *left, size_t limit)
{
    size_t *order = malloc(t->ncol * sizeof *order), *block = malloc(t->ncol * sizeof *block);
    size_t *floor_w = malloc(t->ncol * sizeof *floor_w);
    if (!order || !block || !floor_w)
        return free(order), free(block), free(floor_w), AG_ENOMEM;
    size_t nid = 0, keyw = 0, need = 0;
    for (size_t c = 0; c < t->ncol; c++) {
        size_t m = width[c] < FOLD_TEXT_MIN ? width[c] : FOLD_TEXT_MIN;
        floor_w[c] = left[c] || cellw[c] < m ? m : cellw[c];
        if (id_column(t->keys[c])) {
            order[nid++] = c;
            keyw += width[c] + 2;
        } else if (floor_w[c] > need) {
            need = floor_w[c];
        }
    }
    size_t nother = 0;
    for (size_t c = 0; c < t->ncol; c++)
        if (!id_column(t->keys[c]))
            order[nid + nother++] = c;
    /* the narrowest block: the identifying columns and the widest number;
     * without other columns, the identifying columns alone (no separator) */
    size_t narrowest = nother ? keyw + need : keyw - 2;
    for (size_t i = 0; i < nid && narrowest > limit; i++) {
        size_t c = order[i];
        if (!left[c] || width[c] <= floor_w[c])
            continue;
        size_t cut = width[c] - floor_w[c];
        if (cut > narrowest - limit)
            cut = narrowest - limit;
        width[c] -= cut;
        keyw -= cut;
        narrowest -= cut;
    }
    size_t room = limit > keyw ? limit - keyw : 0;
    for (size_t i = nid; i < t->ncol; i++) {
        size_t c = order[i];
        if (width[c] > room)
            width[c] = room > floor_w[c] ? room : floor_w[c];
    }
    int status = AG_OK;
    size_t i = nid;
    if (nother == 0)
        status = write_block(fp, t, keys, order, nid, width, left);
    while (status == AG_OK && i < t->ncol) {
        size_t n = nid, line = keyw, first = i;
        memcpy(block, order, nid * sizeof *block);
        do { /* at least one column a block, whatever its width */
            block[n++] = order[i];
            line += width[order[i]] + 2;
            i++;
        } while (i < t->ncol && line + width[order[i]] <= limit);
        if (first != nid && fputc('\n', fp) == EOF) /* not before the first block */
            status = AG_EIO;
        if (status == AG_OK)
            status = write_block(fp, t, keys, block, n, width, left);
    }
    free(order);
    free(block);
    free(floor_w);
    return status;
}

/* The aligned table: as wide as its cells, or folded into blocks when
 * limit (characters, 0 none) is narrower. */
static int write_table(FILE *fp, const ag_table *t, char *const *keys, size_t limit)
{
    size_t *width = calloc(t->ncol ? t->ncol : 1, sizeof *width);
    size_t *cellw = calloc(t->ncol ? t->ncol : 1, sizeof *cellw);
    /* each column's alignment, found once: text_column reads every row */
    unsigned char *left = calloc(t->ncol ? t->ncol : 1, 1);
    size_t *all = malloc((t->ncol ? t->ncol : 1) * sizeof *all);
    char buf[CELL_MAX];
    int status = width && cellw && left && all ? AG_OK : AG_ENOMEM;
    for (size_t c = 0; status == AG_OK && c < t->ncol; c++) {
        width[c] = display_width(keys[c]);
        left[c] = (unsigned char)text_column(t, c);
        all[c] = c;
    }
    for (size_t r = 0; status == AG_OK && r < t->nrow; r++)
        for (size_t c = 0; status == AG_OK && c < t->ncol; c++) {
            char *s = table_cell(cell_at(t, r, c), buf, sizeof buf);
            if (!s) {
                status = AG_ENOMEM;
                break;
            }
            if (display_width(s) > cellw[c])
                cellw[c] = display_width(s);
            if (s != buf)
                free(s);
        }
    size_t line = 0;
    for (size_t c = 0; status == AG_OK && c < t->ncol; c++) {
        if (cellw[c] > width[c])
            width[c] = cellw[c];
        line += width[c] + (c ? 2 : 0);
    }
    if (status == AG_OK)
        status = limit == 0 || line <= limit || t->ncol == 0
                     ? write_block(fp, t, keys, all, t->ncol, width, left)
                     : write_folded(fp, t, keys, width, cellw, left, limit);
    free(width);
    free(cellw);
    free(left);
    free(all);
    return status;
}

/* ---- md and latex: a paper's table ------------------------------------------- */

/* The identifying keys a paper's table leaves out when they are the same in
 * every row (docs/cli.md, "Tables for a paper"): what they would say goes
 * into one comment line above the table. */
static int paper_id_column(const char *key)
{
    static const char *const ids[] = {"model", "layer", "head", "text", "input", "rows",
                                      "cols", "n", "n_units", "unit",
                                      "length", "repeats", "seed"}; /* a probe's */
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        if (strcmp(key, ids[i]) == 0)
            return 1;
    return 0;
}

static int same_cell(const ag_cell *a, const ag_cell *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == AG_CELL_TEXT)
        return strcmp(a->text ? a->text : "", b->text ? b->text : "") == 0;
    return a->kind == AG_CELL_NULL || (a->value == b->value && a->half == b->half);
}

/* 1 when column c of the whole table t may be left out: an identifying key
 * with one label in every row (a mean or a text that could close the
 * comment it would be named in stays). */
static int constant_column(const ag_table *t, size_t c)
{
    if (t->nrow < 2 || !paper_id_column(t->keys[c])) /* one row: its labels say which */
        return 0;
    const ag_cell *first = cell_at(t, 0, c);
    if (first->kind == AG_CELL_MEAN_CI || first->kind == AG_CELL_NUMBER ||
        (first->kind == AG_CELL_TEXT && first->text && strstr(first->text, "--")))
        return 0; /* a statistic (aggregate's mean rows) says more than a label */
    for (size_t r = 1; r < t->nrow; r++)
        if (!same_cell(first, cell_at(t, r, c)))
            return 0;
    return 1;
}

/* The columns md and latex show: all of them when written in parts (the
 * rows to come are unknown) or when the caller named them (keep_constant),
 * else all but the constant identifying ones. cols (t->ncol entries) gets
 * their indices; returns their count. */
static size_t paper_columns(const ag_table *t, const ag_output_meta *meta, unsigned parts,
                            size_t *cols)
{
    int drop = parts == AG_WRITE_ALL && !(meta && meta->keep_constant);
    size_t n = 0;
    for (size_t c = 0; c < t->ncol; c++)
        if (!drop || !constant_column(t, c))
            cols[n++] = c;
    if (n == 0) /* a table of nothing but those keeps them */
        for (; n < t->ncol; n++)
            cols[n] = n;
    return n;
}

/* The comment line naming the columns left out and their one value:
 * "% constant: model = tiny-gpt2, rows = 3" (LaTeX), the same in <!-- -->
 * (Markdown); nothing when none is. */
static int put_left_out(FILE *fp, ag_format fmt, const ag_table *t, char *const *keys,
                        const size_t *cols, size_t n)
{
    if (n == t->ncol)
        return 0;
    fputs(fmt == AG_FORMAT_LATEX ? "% constant:" : "<!-- constant:", fp);
    for (size_t c = 0, k = 0, first = 1; c < t->ncol; c++) {
        if (k < n && cols[k] == c) {
            k++;
            continue;
        }
        char buf[CELL_MAX];
        char *text = table_cell(cell_at(t, 0, c), buf, sizeof buf);
        if (!text)
            return -1;
        fprintf(fp, "%s %s = %s", first ? "" : ",", keys[c], text);
        if (text != buf)
            free(text);
        first = 0;
    }
    fputs(fmt == AG_FORMAT_LATEX ? "\n" : " -->\n", fp);
    return 0;
}

static int write_markdown(FILE *fp, const ag_table *t, char *const *keys, const size_t *cols,
                          size_t n, unsigned parts)
{
    if (parts & AG_WRITE_HEAD) {
        if (put_left_out(fp, AG_FORMAT_MD, t, keys, cols, n) != 0)
            return AG_ENOMEM;
        fputs("|", fp);
        for (size_t k = 0; k < n; k++) { /* a paper's header: the display name */
            const char *name = ag_key_display_name(t->keys[cols[k]]);
            fprintf(fp, " %s |", name ? name : keys[cols[k]]);
        }
        fputs("\n|", fp); /* text columns left-aligned, numbers right-aligned */
        for (size_t k = 0; k < n; k++)
            fputs(text_column(t, cols[k]) ? " --- |" : " ---: |", fp);
        fputs("\n", fp);
    }
    for (size_t r = 0; (parts & AG_WRITE_ROWS) && r < t->nrow; r++) {
        fputs("|", fp);
        for (size_t k = 0; k < n; k++) {
            fputc(' ', fp);
            if (put_cell(fp, AG_FORMAT_MD, cell_at(t, r, cols[k])) != 0)
                return AG_ENOMEM;
            fputs(" |", fp);
        }
        fputs("\n", fp);
    }
    return AG_OK;
}

static void latex_escaped(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '_' || *s == '%' || *s == '&' || *s == '#' || *s == '$')
            fputc('\\', fp);
        fputc(*s, fp);
    }
}

/* A caption or a label puts the tabular in a table float. */
static int latex_float(const ag_output_meta *meta)
{
    return meta && (meta->caption || meta->tex_label);
}

static int latex_head(FILE *fp, const ag_table *t, char *const *keys, const size_t *cols,
                      size_t n, const ag_output_meta *meta)
{
    fputs("% attngeom " AG_VERSION_STRING ": needs \\usepackage{booktabs}\n", fp);
    if (put_left_out(fp, AG_FORMAT_LATEX, t, keys, cols, n) != 0)
        return AG_ENOMEM;
    if (latex_float(meta)) {
        fputs("\\begin{table}\n\\centering\n", fp);
        if (meta->caption)
            fprintf(fp, "\\caption{%s}\n", meta->caption);
        if (meta->tex_label)
            fprintf(fp, "\\label{%s}\n", meta->tex_label);
    }
    fputs("\\begin{tabular}{", fp);
    for (size_t k = 0; k < n; k++)
        fputc(text_column(t, cols[k]) ? 'l' : 'r', fp);
    fputs("}\n\\toprule\n", fp);
    for (size_t k = 0; k < n; k++) { /* the display name and symbol */
        const char *key = t->keys[cols[k]];
        const char *name = ag_key_display_name(key), *sym = ag_key_symbol(key);
        latex_escaped(fp, name ? name : keys[cols[k]]);
        if (sym)
            fprintf(fp, " %s", sym);
        fputs(k + 1 < n ? " & " : " \\\\\n", fp);
    }
    fputs("\\midrule\n", fp);
    return AG_OK;
}

static int write_latex(FILE *fp, const ag_table *t, char *const *keys, const size_t *cols,
                       size_t n, const ag_output_meta *meta, unsigned parts)
{
    if ((parts & AG_WRITE_HEAD) && latex_head(fp, t, keys, cols, n, meta) != AG_OK)
        return AG_ENOMEM;
    for (size_t r = 0; (parts & AG_WRITE_ROWS) && r < t->nrow; r++)
        for (size_t k = 0; k < n; k++) {
            if (put_cell(fp, AG_FORMAT_LATEX, cell_at(t, r, cols[k])) != 0)
                return AG_ENOMEM;
            fputs(k + 1 < n ? " & " : " \\\\\n", fp);
        }
    if (parts & AG_WRITE_TAIL)
        fputs(latex_float(meta) ? "\\bottomrule\n\\end{tabular}\n\\end{table}\n"
                                : "\\bottomrule\n\\end{tabular}\n", fp);
    return AG_OK;
}

/* md or latex: the columns chosen, then the table. */
static int write_paper(FILE *fp, ag_format fmt, const ag_table *t, char *const *keys,
                       const ag_output_meta *meta, unsigned parts)
{
    size_t *cols = malloc((t->ncol ? t->ncol : 1) * sizeof *cols);
    if (!cols)
        return AG_ENOMEM;
    size_t n = paper_columns(t, meta, parts, cols);
    int status = fmt == AG_FORMAT_MD ? write_markdown(fp, t, keys, cols, n, parts)
                                     : write_latex(fp, t, keys, cols, n, meta, parts);
    free(cols);
    return status;
}

static int write_format(FILE *fp, ag_format fmt, const ag_table *t, char *const *keys,
                        const ag_output_meta *meta, unsigned parts)
{
    size_t limit = meta ? meta->width : 0;
    switch (fmt) {
    case AG_FORMAT_JSON: return write_json(fp, t, keys, meta);
    case AG_FORMAT_JSONL: return write_jsonl(fp, t, keys, meta, parts);
    case AG_FORMAT_CSV:
    case AG_FORMAT_TSV: return write_delimited(fp, t, keys, fmt, parts);
    case AG_FORMAT_MD:
    case AG_FORMAT_LATEX: return write_paper(fp, fmt, t, keys, meta, parts);
    case AG_FORMAT_TABLE: return write_table(fp, t, keys, limit);
    default: return AG_EINVAL;
    }
}

int ag_format_streams(ag_format fmt)
{
    return fmt == AG_FORMAT_JSONL || fmt == AG_FORMAT_CSV || fmt == AG_FORMAT_TSV ||
           fmt == AG_FORMAT_MD || fmt == AG_FORMAT_LATEX;
}

int ag_table_write(FILE *fp, ag_format fmt, const ag_table *t, const ag_output_meta *meta)
{
    return ag_table_write_parts(fp, fmt, t, meta, AG_WRITE_ALL);
}

int ag_table_write_parts(FILE *fp, ag_format fmt, const ag_table *t, const ag_output_meta *given,
                         unsigned parts)
{
    if ((int)fmt < 0 || fmt >= AG_FORMAT_COUNT || (parts & ~(unsigned)AG_WRITE_ALL) ||
        (!ag_format_streams(fmt) && parts != AG_WRITE_ALL))
        return AG_EINVAL;
    ag_output_meta known = AG_OUTPUT_META_DEFAULT;
    if (given && AG_SIZED_READ(&known, given, ag_output_meta, NULL) != AG_OK)
        return AG_EINVAL;
    const ag_output_meta *meta = given ? &known : NULL;
    if (meta && (meta->digits < 0 || meta->digits > 17))
        return AG_EINVAL;
    human_digits = meta && meta->digits ? meta->digits : 6;
    char **keys = calloc(t->ncol ? t->ncol : 1, sizeof *keys);
    int status = keys ? AG_OK : AG_ENOMEM;
    for (size_t c = 0; status == AG_OK && c < t->ncol; c++)
        if (!(keys[c] = shown_key(t->keys[c], fmt)))
            status = AG_ENOMEM;
    if (status == AG_OK)
        status = write_format(fp, fmt, t, keys, meta, parts);
    for (size_t c = 0; keys && c < t->ncol; c++)
        free(keys[c]);
    free(keys);
    human_digits = 6;
    if (status != AG_OK)
        return status;
    return ferror(fp) ? AG_EIO : AG_OK;
}

int ag_records_write(FILE *fp, ag_format fmt, const ag_record_list *recs,
                     const ag_metric_set *sel, const ag_output_meta *meta)
{
    ag_table t;
    int status = ag_records_table(recs, sel, &t, NULL);
    if (status == AG_OK)
        status = ag_table_write(fp, fmt, &t, meta);
    ag_table_free(&t);
    return status;
}
