/* Internal prefix: agc_ (module src/records/: table.c, output.c, records_read.c; no internal header yet). */
/* table.c — tables of records with any keys (records.h), their getters for
 * bindings (access.h), and the table of a command's ag_records. */
#include <stdlib.h>
#include <string.h>

#include "../../analysis/metrics_int.h"

int ag_table_init(ag_table *t, const char *const *keys, size_t ncol, ag_error *err)
{
    memset(t, 0, sizeof *t);
    t->keys = calloc(ncol ? ncol : 1, sizeof *t->keys);
    if (!t->keys)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a table of %zu columns", ncol);
    for (t->ncol = 0; t->ncol < ncol; t->ncol++)
        if (!(t->keys[t->ncol] = strdup(keys[t->ncol]))) {
            ag_table_free(t);
            return ag_error_set(err, AG_ENOMEM, "out of memory for a table's keys");
        }
    return AG_OK;
}

ag_cell *ag_table_add_row(ag_table *t, ag_error *err)
{
    size_t width = t->ncol ? t->ncol : 1;
    if (t->nrow == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        if (cap > (size_t)-1 / sizeof(ag_cell) / width) {
            ag_error_set(err, AG_ELIMIT, "a table of %zu rows is too large", t->nrow);
            return NULL;
        }
        ag_cell *grown = realloc(t->cells, cap * width * sizeof *grown);
        if (!grown) {
            ag_error_set(err, AG_ENOMEM, "out of memory for %zu table rows", cap);
            return NULL;
        }
        t->cells = grown;
        t->cap = cap;
    }
    ag_cell *row = &t->cells[t->nrow++ * t->ncol];
    memset(row, 0, t->ncol * sizeof *row); /* AG_CELL_NULL */
    return row;
}

int ag_table_set_text(ag_table *t, ag_cell *c, const char *s, ag_error *err)
{
    char *copy = strdup(s ? s : "");
    if (!copy)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a table's text");
    if (c->kind == AG_CELL_TEXT)
        free((char *)c->text);
    (void)t;
    c->kind = AG_CELL_TEXT;
    c->text = copy;
    return AG_OK;
}

int ag_table_add_column(ag_table *t, const char *key, ag_cell value, ag_error *err)
{
    size_t w = t->ncol + 1;
    char *k = strdup(key), **keys = realloc(t->keys, w * sizeof *keys);
    ag_cell *cells = t->cap ? malloc(t->cap * w * sizeof *cells) : NULL;
    if (keys)
        t->keys = keys;
    if (!k || !keys || (t->cap && !cells)) {
        free(k);
        free(cells);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a table's column '%s'", key);
    }
    for (size_t r = 0; r < t->nrow; r++) {
        memcpy(cells + r * w, t->cells + r * t->ncol, t->ncol * sizeof *cells);
        cells[r * w + t->ncol] = value.kind == AG_CELL_TEXT ? (ag_cell){.kind = AG_CELL_NULL} : value;
    }
    free(t->cells);
    t->cells = cells;
    t->keys[t->ncol++] = k;
    for (size_t r = 0; value.kind == AG_CELL_TEXT && r < t->nrow; r++)
        if (ag_table_set_text(t, &t->cells[r * w + w - 1], value.text, err) != AG_OK)
            return AG_ENOMEM; /* the cells not set yet stay null: the table is whole */
    return AG_OK;
}

int ag_table_add_text_column(ag_table *t, const char *key, const char *s, ag_error *err)
{
    return ag_table_add_column(t, key, (ag_cell){.kind = AG_CELL_TEXT, .text = s}, err);
}

ag_row ag_table_row(const ag_table *t, size_t r)
{
    ag_row row = {.count = t->ncol, .keys = (const char *const *)t->keys,
                  .cells = t->cells + r * t->ncol};
    return row;
}

void ag_table_free(ag_table *t)
{
    if (!t)
        return;
    for (size_t k = 0; k < t->nrow * t->ncol; k++)
        if (t->cells[k].kind == AG_CELL_TEXT)
            free((char *)t->cells[k].text);
    for (size_t c = 0; c < t->ncol; c++)
        free(t->keys[c]);
    free(t->keys);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* ---- on the heap, through getters (attngeom/access.h) ----------------------- */

size_t ag_table_columns(const ag_table *t)
{
    return t ? t->ncol : 0;
}

size_t ag_table_rows(const ag_table *t)
{
    return t ? t->nrow : 0;
}

const char *ag_table_key(const ag_table *t, size_t c)
{
    return t && c < t->ncol ? t->keys[c] : NULL;
}

int ag_table_cell(const ag_table *t, size_t r, size_t c, double *value, const char **text)
{
    const ag_cell *cell = t && r < t->nrow && c < t->ncol ? &t->cells[r * t->ncol + c] : NULL;
    if (value)
        *value = cell && cell->kind != AG_CELL_NULL && cell->kind != AG_CELL_TEXT ? cell->value : 0;
    if (text)
        *text = cell && cell->kind == AG_CELL_TEXT ? cell->text : NULL;
    return cell ? (int)cell->kind : AG_CELL_NULL;
}

void ag_table_delete(ag_table *t)
{
    if (t)
        ag_table_free(t);
    free(t);
}

/* ---- the records of a command ----------------------------------------------- */

enum { COL_STACK = -6, COL_LAYER, COL_HEAD, COL_TEXT, COL_ROWS, COL_COLS };

static const char *column_name(int id)
{
    switch (id) {
    case COL_STACK: return "stack";
    case COL_LAYER: return "layer";
    case COL_HEAD: return "head";
    case COL_TEXT: return "text";
    case COL_ROWS: return "rows";
    case COL_COLS: return "cols";
    default: return ag_metric_name((ag_metric)id);
    }
}

static ag_cell record_cell(const ag_record *r, int id)
{
    ag_cell c = {.kind = AG_CELL_INTEGER};
    switch (id) {
    case COL_LAYER: c.value = r->layer; return c;
    case COL_HEAD: c.value = r->head; return c;
    case COL_ROWS: c.value = (double)r->rows; return c;
    case COL_COLS: c.value = (double)r->cols; return c;
    case COL_STACK: c.kind = AG_CELL_NULL; return c; /* its text: ag_records_table */
    case COL_TEXT:
        c.value = (double)r->text;
        c.kind = r->text >= 0 ? AG_CELL_INTEGER : AG_CELL_NULL;
        return c;
    default: break;
    }
    static const ag_cell_kind kinds[] = {
        [AG_V_ABSENT] = AG_CELL_NULL, [AG_V_NULL] = AG_CELL_NULL, [AG_V_NUMBER] = AG_CELL_NUMBER,
        [AG_V_INTEGER] = AG_CELL_INTEGER, [AG_V_BOOL] = AG_CELL_BOOL};
    c.kind = r->kind[id] <= AG_V_BOOL ? kinds[r->kind[id]] : AG_CELL_NULL;
    c.value = c.kind == AG_CELL_NULL ? 0 : r->value[id];
    return c;
}

int ag_records_table(const ag_record_list *list, const ag_metric_set *sel, ag_table *out,
                     ag_error *err)
{
    const ag_record *recs = list ? list->items : NULL;
    size_t count = list ? list->count : 0;
    int ids[AG_M_COUNT + 6], has_text = 0, has_stack = 0;
    const char *keys[AG_M_COUNT + 6];
    size_t ncol = 0;
    for (size_t r = 0; r < count; r++) {
        has_text |= recs[r].text >= 0;
        has_stack |= ag_stack_name(recs[r].stack) != NULL;
    }
    /* "stack" (an encoder–decoder pass's) first, only when a record has
     * one: the records of a model of one stack keep their columns */
    if (has_stack)
        ids[ncol++] = COL_STACK;
    /* layer, head, rows, cols, then the metrics (docs/metrics.md's order);
     * "text" (the line of --text-file) comes after them, and the CLI's
     * "model" after it, so those positions never shift. */
    ids[ncol++] = COL_LAYER;
    ids[ncol++] = COL_HEAD;
    ids[ncol++] = COL_ROWS;
    ids[ncol++] = COL_COLS;
    for (int m = 0; m < AG_M_COUNT; m++)
        if (sel->on[m])
            ids[ncol++] = m;
    if (has_text)
        ids[ncol++] = COL_TEXT;
    for (size_t c = 0; c < ncol; c++)
        keys[c] = column_name(ids[c]);
    int status = ag_table_init(out, keys, ncol, err);
    for (size_t r = 0; status == AG_OK && r < count; r++) {
        ag_cell *row = ag_table_add_row(out, err);
        if (!row)
            status = err && err->status ? err->status : AG_ENOMEM;
        for (size_t c = 0; row && c < ncol; c++)
            row[c] = record_cell(&recs[r], ids[c]);
        const char *stack = ag_stack_name(recs[r].stack);
        if (row && has_stack && stack)
            status = ag_table_set_text(out, &row[0], stack, err);
    }
    if (status != AG_OK)
        ag_table_free(out);
    return status;
}

/* ---- --columns and --sort (docs/cli.md, "Choosing and ordering rows and
 * columns") ------------------------------------------------------------------ */

static long column_of(const ag_table *t, const char *key)
{
    for (size_t c = 0; c < t->ncol; c++)
        if (strcmp(t->keys[c], key) == 0)
            return (long)c;
    return -1;
}

int ag_table_select(ag_table *t, const char *const *keys, size_t n, ag_error *err)
{
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "no column chosen");
    size_t *from = malloc(n * sizeof *from);
    if (!from)
        return ag_error_set(err, AG_ENOMEM, "out of memory choosing %zu columns", n);
    for (size_t i = 0; i < n; i++) {
        long c = column_of(t, keys[i]);
        if (c < 0) {
            free(from);
            return ag_error_set(err, AG_ENOTFOUND, "no column '%s' in these records", keys[i]);
        }
        for (size_t j = 0; j < i; j++)
            if (from[j] == (size_t)c) {
                free(from);
                return ag_error_set(err, AG_EINVAL, "column '%s' named twice", keys[i]);
            }
        from[i] = (size_t)c;
    }
    /* everything allocated before the table changes: a failure leaves it whole */
    char **nk = calloc(n, sizeof *nk);
    ag_cell *cells = t->nrow ? malloc(t->nrow * n * sizeof *cells) : NULL;
    unsigned char *kept = calloc(t->ncol ? t->ncol : 1, 1);
    if (!nk || (t->nrow && !cells) || !kept) {
        free(from), free(nk), free(cells), free(kept);
        return ag_error_set(err, AG_ENOMEM, "out of memory choosing %zu columns", n);
    }
    for (size_t i = 0; i < n; i++) {
        nk[i] = t->keys[from[i]];
        kept[from[i]] = 1;
        for (size_t r = 0; r < t->nrow; r++)
            cells[r * n + i] = t->cells[r * t->ncol + from[i]];
    }
    for (size_t c = 0; c < t->ncol; c++) /* the columns left out: their keys and text */
        if (!kept[c]) {
            free(t->keys[c]);
            for (size_t r = 0; r < t->nrow; r++)
                if (t->cells[r * t->ncol + c].kind == AG_CELL_TEXT)
                    free((char *)t->cells[r * t->ncol + c].text);
        }
    free(t->keys);
    free(t->cells);
    t->keys = nk;
    t->cells = cells;
    t->ncol = n;
    t->cap = t->nrow;
    free(from);
    free(kept);
    return AG_OK;
}

/* 0 numbers (integers, booleans, means), 1 text, 2 null. */
static int cell_class(const ag_cell *c)
{
    return c->kind == AG_CELL_NULL ? 2 : c->kind == AG_CELL_TEXT ? 1 : 0;
}

/* a before b (<0), after (>0) or tied (0) in the column's ascending order;
 * descending reverses the order of the cells that are not null, which
 * stay last. */
static int cell_order(const ag_cell *a, const ag_cell *b, int descending)
{
    int ca = cell_class(a), cb = cell_class(b);
    if (ca == 2 || cb == 2)
        return (ca == 2) - (cb == 2);
    int o = ca != cb ? ca - cb
            : ca == 1 ? strcmp(a->text ? a->text : "", b->text ? b->text : "")
                      : (a->value > b->value) - (a->value < b->value);
    return descending ? -o : o;
}

/* Merge sort of the row indices idx[0..n) by column c (tmp: n more):
 * stable, as qsort is not. */
static void sort_rows(const ag_table *t, size_t c, int descending, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_rows(t, c, descending, idx, tmp, h);
    sort_rows(t, c, descending, idx + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        const ag_cell *a = &t->cells[idx[i] * t->ncol + c], *b = &t->cells[idx[j] * t->ncol + c];
        tmp[k++] = cell_order(b, a, descending) < 0 ? idx[j++] : idx[i++];
    }
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

int ag_table_sort(ag_table *t, const char *key, int descending, ag_error *err)
{
    long c = column_of(t, key);
    if (c < 0)
        return ag_error_set(err, AG_ENOTFOUND, "no column '%s' in these records", key);
    size_t n = t->nrow, w = t->ncol;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    ag_cell *cells = n ? malloc(n * w * sizeof *cells) : NULL;
    if (!idx || !tmp || (n && !cells)) {
        free(idx), free(tmp), free(cells);
        return ag_error_set(err, AG_ENOMEM, "out of memory sorting %zu rows", n);
    }
    for (size_t r = 0; r < n; r++)
        idx[r] = r;
    sort_rows(t, (size_t)c, descending, idx, tmp, n);
    for (size_t r = 0; r < n; r++)
        memcpy(cells + r * w, t->cells + idx[r] * w, w * sizeof *cells);
    free(t->cells);
    t->cells = cells;
    t->cap = n;
    free(idx);
    free(tmp);
    return AG_OK;
}
