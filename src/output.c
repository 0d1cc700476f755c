/* output.c — records as a terminal table, JSON, CSV, TSV, Markdown or a
 * LaTeX booktabs table. Machine formats (JSON, CSV, TSV) print every number
 * with 17 significant digits, so they round-trip exactly; the human formats
 * (table, Markdown, LaTeX) print 6. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom.h"

static const char *const format_names[AG_FORMAT_COUNT] = {
    "table", "json", "csv", "tsv", "md", "latex"};

int ag_format_from_name(const char *name)
{
    for (int f = 0; f < AG_FORMAT_COUNT; f++)
        if (strcmp(name, format_names[f]) == 0)
            return f;
    return -1;
}

/* ---- columns ------------------------------------------------------------ */

enum { COL_LAYER = -5, COL_HEAD, COL_TEXT, COL_ROWS, COL_COLS };

typedef struct {
    int ids[AG_M_COUNT + 5];
    size_t count;
} column_list;

static void columns_for(const ag_record *recs, size_t count,
                        const ag_metric_set *sel, column_list *cols)
{
    int has_text = 0;
    for (size_t r = 0; r < count; r++)
        has_text |= recs[r].text >= 0;
    /* SPEC §2 fixes layer, head, rows, cols, then the metrics; "text" (the
     * line of --text-file) comes last so those positions never shift. */
    cols->count = 0;
    cols->ids[cols->count++] = COL_LAYER;
    cols->ids[cols->count++] = COL_HEAD;
    cols->ids[cols->count++] = COL_ROWS;
    cols->ids[cols->count++] = COL_COLS;
    for (int m = 0; m < AG_M_COUNT; m++)
        if (sel->on[m])
            cols->ids[cols->count++] = m;
    if (has_text)
        cols->ids[cols->count++] = COL_TEXT;
}

static const char *column_name(int id)
{
    switch (id) {
    case COL_LAYER: return "layer";
    case COL_HEAD: return "head";
    case COL_TEXT: return "text";
    case COL_ROWS: return "rows";
    case COL_COLS: return "cols";
    default: return ag_metric_name((ag_metric)id);
    }
}

/* Text of one cell. `digits` significant digits for numbers; `null_text`
 * for undefined values. */
static void cell_text(const ag_record *r, int id, int digits,
                      const char *null_text, char *buf, size_t size)
{
    switch (id) {
    case COL_LAYER: snprintf(buf, size, "%d", r->layer); return;
    case COL_HEAD: snprintf(buf, size, "%d", r->head); return;
    case COL_TEXT: snprintf(buf, size, "%ld", r->text); return;
    case COL_ROWS: snprintf(buf, size, "%zu", r->rows); return;
    case COL_COLS: snprintf(buf, size, "%zu", r->cols); return;
    default: break;
    }
    switch (r->kind[id]) {
    case AG_V_NUMBER: snprintf(buf, size, "%.*g", digits, r->value[id]); return;
    case AG_V_INTEGER: snprintf(buf, size, "%.0f", r->value[id]); return;
    case AG_V_BOOL: snprintf(buf, size, "%s", r->value[id] != 0 ? "true" : "false"); return;
    default: snprintf(buf, size, "%s", null_text); return;
    }
}

#define CELL_MAX 64

/* ---- JSON --------------------------------------------------------------- */

static json_t *record_json(const ag_record *r, const column_list *cols)
{
    json_t *o = json_object();
    for (size_t c = 0; o && c < cols->count; c++) {
        int id = cols->ids[c];
        json_t *v;
        switch (id) {
        case COL_LAYER: v = json_integer(r->layer); break;
        case COL_HEAD: v = json_integer(r->head); break;
        case COL_TEXT: v = r->text >= 0 ? json_integer(r->text) : json_null(); break;
        case COL_ROWS: v = json_integer((json_int_t)r->rows); break;
        case COL_COLS: v = json_integer((json_int_t)r->cols); break;
        default:
            switch (r->kind[id]) {
            case AG_V_NUMBER: v = json_real(r->value[id]); break;
            case AG_V_INTEGER: v = json_integer((json_int_t)r->value[id]); break;
            case AG_V_BOOL: v = json_boolean(r->value[id] != 0); break;
            default: v = json_null(); break;
            }
        }
        if (!v || json_object_set_new(o, column_name(id), v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* A file name need not be UTF-8, which JSON requires: its other bytes are
 * written \xNN (ag_text_escape). */
static json_t *json_text(const char *s)
{
    char *t = ag_text_escape_dup(s, AG_TEXT_UTF8);
    json_t *j = t ? json_string(t) : NULL;
    free(t);
    return j;
}

static int write_json(FILE *fp, const ag_record *recs, size_t count,
                      const column_list *cols, const ag_output_meta *meta)
{
    json_t *root = json_object(), *arr = json_array();
    int ok = root && arr;
    if (ok && meta && meta->command)
        ok = json_object_set_new(root, "command", json_string(meta->command)) == 0;
    if (ok && meta && meta->source)
        ok = json_object_set_new(root, "source", json_text(meta->source)) == 0;
    if (ok)
        ok = json_object_set_new(root, "version", json_string(AG_VERSION_STRING)) == 0;
    for (size_t r = 0; ok && r < count; r++)
        ok = json_array_append_new(arr, record_json(&recs[r], cols)) == 0;
    if (ok) {
        ok = json_object_set_new(root, "records", arr) == 0;
        arr = NULL;
    }
    if (ok)
        ok = json_dumpf(root, fp, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                      JSON_REAL_PRECISION(17)) == 0 &&
             fputc('\n', fp) != EOF;
    json_decref(arr);
    json_decref(root);
    return ok ? AG_OK : AG_EIO;
}

/* ---- delimited and aligned text ----------------------------------------- */

static void write_delimited(FILE *fp, const ag_record *recs, size_t count,
                            const column_list *cols, char sep)
{
    char buf[CELL_MAX];
    for (size_t c = 0; c < cols->count; c++)
        fprintf(fp, "%s%c", column_name(cols->ids[c]),
                c + 1 < cols->count ? sep : '\n');
    for (size_t r = 0; r < count; r++)
        for (size_t c = 0; c < cols->count; c++) {
            cell_text(&recs[r], cols->ids[c], 17, "", buf, sizeof buf);
            fprintf(fp, "%s%c", buf, c + 1 < cols->count ? sep : '\n');
        }
}

static void write_table(FILE *fp, const ag_record *recs, size_t count,
                        const column_list *cols)
{
    size_t width[AG_M_COUNT + 5];
    char buf[CELL_MAX];
    for (size_t c = 0; c < cols->count; c++) {
        width[c] = strlen(column_name(cols->ids[c]));
        for (size_t r = 0; r < count; r++) {
            cell_text(&recs[r], cols->ids[c], 6, "null", buf, sizeof buf);
            if (strlen(buf) > width[c])
                width[c] = strlen(buf);
        }
    }
    for (size_t c = 0; c < cols->count; c++)
        fprintf(fp, "%*s%s", (int)width[c], column_name(cols->ids[c]),
                c + 1 < cols->count ? "  " : "\n");
    for (size_t r = 0; r < count; r++)
        for (size_t c = 0; c < cols->count; c++) {
            cell_text(&recs[r], cols->ids[c], 6, "null", buf, sizeof buf);
            fprintf(fp, "%*s%s", (int)width[c], buf,
                    c + 1 < cols->count ? "  " : "\n");
        }
}

static void write_markdown(FILE *fp, const ag_record *recs, size_t count,
                           const column_list *cols)
{
    char buf[CELL_MAX];
    fputs("|", fp);
    for (size_t c = 0; c < cols->count; c++)
        fprintf(fp, " %s |", column_name(cols->ids[c]));
    fputs("\n|", fp);
    for (size_t c = 0; c < cols->count; c++)
        fputs(" ---: |", fp);
    fputs("\n", fp);
    for (size_t r = 0; r < count; r++) {
        fputs("|", fp);
        for (size_t c = 0; c < cols->count; c++) {
            cell_text(&recs[r], cols->ids[c], 6, "—", buf, sizeof buf);
            fprintf(fp, " %s |", buf);
        }
        fputs("\n", fp);
    }
}

static void latex_escaped(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '_' || *s == '%' || *s == '&' || *s == '#' || *s == '$')
            fputc('\\', fp);
        fputc(*s, fp);
    }
}

/* "2.5e-07" → "$2.5\times10^{-7}$"; anything else as it is. */
static void latex_number(FILE *fp, const char *text)
{
    const char *e = strchr(text, 'e');
    if (!e) {
        fputs(text, fp);
        return;
    }
    fprintf(fp, "$%.*s\\times10^{%d}$", (int)(e - text), text, atoi(e + 1));
}

static void write_latex(FILE *fp, const ag_record *recs, size_t count,
                        const column_list *cols, const ag_output_meta *meta)
{
    char buf[CELL_MAX];
    fputs("% attngeom " AG_VERSION_STRING ": needs \\usepackage{booktabs}\n", fp);
    fputs("\\begin{tabular}{", fp);
    for (size_t c = 0; c < cols->count; c++)
        fputc('r', fp);
    fputs("}\n\\toprule\n", fp);
    for (size_t c = 0; c < cols->count; c++) {
        latex_escaped(fp, column_name(cols->ids[c]));
        fputs(c + 1 < cols->count ? " & " : " \\\\\n", fp);
    }
    fputs("\\midrule\n", fp);
    for (size_t r = 0; r < count; r++)
        for (size_t c = 0; c < cols->count; c++) {
            cell_text(&recs[r], cols->ids[c], 6, "--", buf, sizeof buf);
            latex_number(fp, buf);
            fputs(c + 1 < cols->count ? " & " : " \\\\\n", fp);
        }
    fputs("\\bottomrule\n\\end{tabular}\n", fp);
    (void)meta;
}

int ag_records_write(FILE *fp, ag_format fmt, const ag_record *recs,
                     size_t count, const ag_metric_set *sel,
                     const ag_output_meta *meta)
{
    column_list cols;
    columns_for(recs, count, sel, &cols);
    switch (fmt) {
    case AG_FORMAT_JSON:
        if (write_json(fp, recs, count, &cols, meta) != AG_OK)
            return AG_EIO;
        break;
    case AG_FORMAT_CSV: write_delimited(fp, recs, count, &cols, ','); break;
    case AG_FORMAT_TSV: write_delimited(fp, recs, count, &cols, '\t'); break;
    case AG_FORMAT_MD: write_markdown(fp, recs, count, &cols); break;
    case AG_FORMAT_LATEX: write_latex(fp, recs, count, &cols, meta); break;
    case AG_FORMAT_TABLE: write_table(fp, recs, count, &cols); break;
    default: return AG_EINVAL;
    }
    return ferror(fp) ? AG_EIO : AG_OK;
}
