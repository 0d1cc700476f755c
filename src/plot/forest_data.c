/* forest_data.c — the forest plot of ag_run_plot (`attngeom plot --kind
 * forest`): records grouped and summarised exactly as `aggregate` does
 * (ag_aggregate_*, attngeom/aggregate.h: the unit means first, then the
 * mean and the Student-t interval over the units), one row per group with
 * a value, sorted by the mean, largest at the top. Ties keep the order in
 * which the groups first appear, so the figure is the same bytes for the
 * same input. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "figures_int.h"

typedef struct {
    const ag_run_plot_spec *o;
    ag_aggregate *agg;
} forest_read;

static const ag_cell *find(const ag_row *row, const char *key)
{
    for (size_t k = 0; k < row->count; k++)
        if (strcmp(row->keys[k], key) == 0)
            return &row->cells[k];
    return NULL;
}

static int on_record(const ag_row *row, void *user, ag_error *err)
{
    forest_read *r = user;
    if (r->o->model) {
        const ag_cell *m = find(row, "model");
        if (!m || m->kind != AG_CELL_TEXT || strcmp(m->text, r->o->model) != 0)
            return AG_OK;
    }
    return ag_aggregate_add(r->agg, row, err);
}

/* The --by keys, split at commas into keys[] (pointers into buf); empty
 * keys are kept, for ag_aggregate_new to refuse. (size_t)-1 for more than
 * max keys. */
static size_t split_keys(char *buf, const char **keys, size_t max)
{
    size_t n = 0;
    for (char *t = buf;; t++) {
        char *comma = strchr(t, ',');
        if (n == max)
            return (size_t)-1;
        keys[n++] = t;
        if (!comma)
            return n;
        *comma = '\0';
        t = comma;
    }
}

static ptrdiff_t column(const ag_table *t, const char *key)
{
    for (size_t k = 0; k < t->ncol; k++)
        if (strcmp(t->keys[k], key) == 0)
            return (ptrdiff_t)k;
    return -1;
}

static double number(const ag_cell *c)
{
    return c->kind == AG_CELL_NUMBER || c->kind == AG_CELL_INTEGER || c->kind == AG_CELL_BOOL
               ? c->value : NAN;
}

static int cells_equal(const ag_cell *a, const ag_cell *b)
{
    if (a->kind == AG_CELL_TEXT || b->kind == AG_CELL_TEXT)
        return a->kind == b->kind && strcmp(a->text, b->text) == 0;
    if (a->kind == AG_CELL_NULL || b->kind == AG_CELL_NULL)
        return a->kind == b->kind;
    return a->value == b->value;
}

/* One group key's value in a label: "L3" and "H2" for layer and head (the
 * papers' shorthand), the text of a text key, "key=value" for a number. */
static int append_key(char **label, const char *key, const ag_cell *c)
{
    char *old = *label, *add = NULL;
    int rc;
    if (c->kind == AG_CELL_TEXT)
        rc = asprintf(&add, "%s", c->text);
    else if (c->kind == AG_CELL_NULL)
        rc = asprintf(&add, "%s=-", key);
    else if (!strcmp(key, "layer") || !strcmp(key, "head"))
        rc = asprintf(&add, "%c%.15g", key[0] == 'l' ? 'L' : 'H', c->value);
    else
        rc = asprintf(&add, "%s=%.15g", key, c->value);
    if (rc < 0)
        return -1;
    if (!old) {
        *label = add;
        return 0;
    }
    rc = asprintf(label, "%s %s", old, add);
    free(old);
    free(add);
    return rc < 0 ? (*label = NULL, -1) : 0;
}

typedef struct {
    double mean;
    size_t row;
} order;

static int by_mean_desc(const void *a, const void *b)
{
    const order *x = a, *y = b;
    if (x->mean != y->mean)
        return x->mean < y->mean ? 1 : -1;
    return (x->row > y->row) - (x->row < y->row);
}

int agp_forest_rows(const ag_run_plot_spec *o, agp_forest *out, ag_error *err)
{
    memset(out, 0, sizeof *out);
    char *by_buf = o->group_by ? strdup(o->group_by) : NULL;
    const char *by[64];
    ag_aggregate_options opt = AG_AGGREGATE_OPTIONS_DEFAULT;
    opt.level = o->level;
    if (o->group_by) {
        if (!by_buf)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
        opt.by_default = 0;
        opt.by = by;
        opt.nby = split_keys(by_buf, by, sizeof by / sizeof *by);
        if (opt.nby == (size_t)-1) {
            free(by_buf);
            return ag_error_set(err, AG_EINVAL, "--by: more than %zu keys", sizeof by / sizeof *by);
        }
    }
    forest_read r = {.o = o};
    ag_table t = {0};
    int rc = ag_aggregate_new(&opt, &r.agg, err);
    if (rc == AG_OK && o->unit)
        rc = ag_aggregate_set_unit(r.agg, o->unit, err);
    if (rc == AG_OK)
        rc = ag_records_read(o->input, on_record, &r, err);
    if (rc == AG_OK)
        rc = ag_aggregate_table(r.agg, 0, &t, err);
    ag_aggregate_free(r.agg);
    free(by_buf);
    if (rc != AG_OK)
        return rc;
    char lo_key[300], hi_key[300];
    snprintf(lo_key, sizeof lo_key, "%s_ci_low", o->metric);
    snprintf(hi_key, sizeof hi_key, "%s_ci_high", o->metric);
    ptrdiff_t km = column(&t, o->metric), klo = column(&t, lo_key), khi = column(&t, hi_key);
    ptrdiff_t kunit = column(&t, "unit");
    if (km < 0 || klo < 0 || khi < 0 || kunit < 0) {
        ag_table_free(&t);
        return ag_error_set(err, AG_EFORMAT, "%s: no record holds \"%s\"%s%s as a number",
                            o->input, o->metric, o->model ? " for --model " : "",
                            o->model ? o->model : "");
    }
    order *ord = malloc((t.nrow + 1) * sizeof *ord);
    size_t n = 0;
    for (size_t i = 0; ord && i < t.nrow; i++) {
        double m = number(&t.cells[i * t.ncol + (size_t)km]);
        if (isfinite(m))
            ord[n++] = (order){m, i};
    }
    if (ord && n == 0) {
        free(ord);
        ag_table_free(&t);
        return ag_error_set(err, AG_EFORMAT, "%s: \"%s\" is null in every group", o->input,
                            o->metric);
    }
    if (ord && n > AG_PLOT_MAX_FOREST_ROWS) {
        free(ord);
        ag_table_free(&t);
        return ag_error_set(err, AG_ELIMIT, "%s: %zu groups: a forest plot draws at most %d rows; "
                            "group coarser (--by) or choose a model (--model NAME)", o->input, n,
                            AG_PLOT_MAX_FOREST_ROWS);
    }
    if (ord)
        qsort(ord, n, sizeof *ord, by_mean_desc);
    out->rows = n;
    out->labels = ord ? calloc(n, sizeof *out->labels) : NULL;
    out->mean = out->labels ? malloc(3 * n * sizeof *out->mean) : NULL;
    rc = out->mean ? AG_OK : AG_ENOMEM;
    if (rc == AG_OK) {
        out->lo = out->mean + n;
        out->hi = out->mean + 2 * n;
    }
    /* the group keys are the columns before "unit"; one constant over every
     * row names the figure, not a row (unless it is the only one) */
    size_t ng = (size_t)kunit;
    for (size_t k = 0; rc == AG_OK && k < n; k++) {
        const ag_cell *row = &t.cells[ord[k].row * t.ncol];
        out->mean[k] = ord[k].mean;
        out->lo[k] = number(&row[klo]);
        out->hi[k] = number(&row[khi]);
        for (size_t g = 0; rc == AG_OK && g < ng; g++) {
            int constant = 1;
            for (size_t j = 0; constant && j < n; j++)
                constant = cells_equal(&row[g], &t.cells[ord[j].row * t.ncol + g]);
            if (!constant || ng == 1 || n == 1)
                rc = append_key(&out->labels[k], t.keys[g], &row[g]) == 0 ? AG_OK : AG_ENOMEM;
            else if (k == 0 && row[g].kind == AG_CELL_TEXT && !out->constant)
                out->constant = strdup(row[g].text); /* the model, in the title */
        }
        if (rc == AG_OK && !out->labels[k])
            rc = append_key(&out->labels[k], t.keys[0], &row[0]) == 0 ? AG_OK : AG_ENOMEM;
    }
    free(ord);
    ag_table_free(&t);
    if (rc != AG_OK) {
        agp_forest_free(out);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    }
    return AG_OK;
}

void agp_forest_free(agp_forest *f)
{
    for (size_t k = 0; f->labels && k < f->rows; k++)
        free(f->labels[k]);
    free(f->labels);
    free(f->mean);
    free(f->constant);
    memset(f, 0, sizeof *f);
}

int agp_plot_forest(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err)
{
    agp_forest f;
    int rc = agp_forest_rows(o, &f, err);
    if (rc != AG_OK)
        return rc;
    char title[512];
    snprintf(title, sizeof title, "%s: mean and %.4g%% interval per %s%s%s", o->metric,
             100 * o->level, o->group_by ? o->group_by : "head", f.constant ? ", " : "",
             f.constant ? f.constant : "");
    ag_plot_forest p = AG_PLOT_FOREST_DEFAULT;
    p.rows = f.rows;
    p.labels = (const char *const *)f.labels;
    p.mean = f.mean, p.lo = f.lo, p.hi = f.hi;
    p.ref = o->ref;
    p.title = agp_title(o, title);
    p.x_title = o->metric;
    ag_error inner = {0};
    rc = ag_plot_forest_render(&p, &o->page, fig, &inner);
    if (rc != AG_OK)
        ag_error_set(err, rc, "%s: %s", o->name, inner.message);
    agp_forest_free(&f);
    return rc;
}
