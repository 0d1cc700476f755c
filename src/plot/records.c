/* records.c — the figures of ag_run_plot (`attngeom plot`) drawn from records (any
 * file the record commands or `aggregate` write, read by ag_records_read):
 * a metric over layer × head (heatmap) and a metric against layer (depth).
 *
 * A cell or a point is the mean of the metric over the records that fall
 * on it: one aggregated record (whose K is already the mean), or the
 * per-text records of a corpus. A point of depth gets a band when it is
 * exactly one aggregated record with K_ci_low and K_ci_high: a mean of
 * several intervals is no interval. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "figures_int.h"

typedef struct {
    int model;             /* index into collect.models; 0 when none is named */
    long layer, head;      /* head -1: none */
    double value, lo, hi;  /* lo/hi NaN: no band */
} point;

typedef struct {
    const ag_run_plot_spec *o;
    char *ci_low, *ci_high;  /* "K_ci_low", "K_ci_high" */
    point *pts;
    size_t count, cap;
    char **models;           /* distinct models, first-appearance order */
    size_t nmodels, models_cap;
    json_t *index;           /* model name -> its index in models */
    int metric_seen;         /* some record holds the key */
    char *stack;             /* the first record's "stack" (encoder, decoder, cross) */
} collect;

static int cell_number(const ag_cell *c, double *v)
{
    if (c->kind != AG_CELL_NUMBER && c->kind != AG_CELL_INTEGER && c->kind != AG_CELL_BOOL &&
        c->kind != AG_CELL_MEAN_CI)
        return 0;
    *v = c->value;
    return 1;
}

/* An integral number key (layer, head); -1 when absent or null. */
static int integer_key(const ag_cell *c, const char *key, long *out, ag_error *err)
{
    double v;
    if (!c || c->kind == AG_CELL_NULL) {
        *out = -1;
        return AG_OK;
    }
    if (!cell_number(c, &v) || v != floor(v) || fabs(v) > 1e9)
        return ag_error_set(err, AG_EFORMAT, "\"%s\" is not an integer", key);
    *out = (long)v;
    return AG_OK;
}

static const ag_cell *find(const ag_row *row, const char *key)
{
    for (size_t k = 0; k < row->count; k++)
        if (strcmp(row->keys[k], key) == 0)
            return &row->cells[k];
    return NULL;
}

/* The index of a model's name, a new one at first appearance. The names
 * are looked up in a jansson object (a hash table with a random seed): a
 * linear search made 80,000 models 30 s. */
static int model_index(collect *c, const char *name, ag_error *err)
{
    json_t *known = json_object_get(c->index, name);
    if (known)
        return (int)json_integer_value(known);
    if (c->nmodels == (size_t)INT_MAX)
        return ag_error_set(err, AG_ELIMIT, "more than %d models", INT_MAX), -1;
    if (c->nmodels == c->models_cap) { /* doubled: one more a model copied them all */
        size_t cap = c->models_cap ? 2 * c->models_cap : 16;
        char **grown = realloc(c->models, cap * sizeof *grown);
        if (!grown)
            return ag_error_set(err, AG_ENOMEM, "out of memory"), -1;
        c->models = grown;
        c->models_cap = cap;
    }
    if (!(c->models[c->nmodels] = strdup(name)) ||
        json_object_set_new_nocheck(c->index, name, json_integer((json_int_t)c->nmodels)) != 0)
        return free(c->models[c->nmodels]), ag_error_set(err, AG_ENOMEM, "out of memory"), -1;
    return (int)c->nmodels++;
}

static int add_point(collect *c, const point *p, ag_error *err)
{
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        point *grown = realloc(c->pts, cap * sizeof *grown);
        if (!grown)
            return ag_error_set(err, AG_ENOMEM, "out of memory for the records");
        c->pts = grown;
        c->cap = cap;
    }
    c->pts[c->count++] = *p;
    return AG_OK;
}

/* The records of an encoder–decoder model carry "stack" (issue 30): a
 * layer of the encoder and one of the decoder are different layers, so
 * one figure draws one stack, --stack's or the only one. 1 when the
 * record is of another stack than --stack, -1 (AG_EFORMAT) when the
 * records mix stacks without --stack. */
static int other_stack(collect *c, const ag_row *row, ag_error *err)
{
    const ag_cell *st = find(row, "stack");
    const char *s = st && st->kind == AG_CELL_TEXT ? st->text : NULL;
    if (c->o->stack)
        return !s || strcmp(s, c->o->stack) != 0;
    if (!s || (c->stack && !strcmp(c->stack, s)))
        return 0;
    if (c->stack)
        return ag_error_set(err, AG_EFORMAT, "records of the stacks %s and %s (an "
                            "encoder-decoder model): a figure draws one; choose it with --stack "
                            "encoder|decoder|cross", c->stack, s), -1;
    if (!(c->stack = strdup(s)))
        return ag_error_set(err, AG_ENOMEM, "out of memory"), -1;
    return 0;
}

static int on_record(const ag_row *row, void *user, ag_error *err)
{
    collect *c = user;
    const ag_cell *model = find(row, "model"), *m = find(row, c->o->metric);
    int named = model && model->kind == AG_CELL_TEXT;
    if (c->o->model && (!named || strcmp(model->text, c->o->model) != 0))
        return AG_OK;
    int other = m ? other_stack(c, row, err) : 0;
    if (other)
        return other < 0 ? err->status : AG_OK;
    if (!m)
        return AG_OK;
    c->metric_seen = 1;
    point p = {.lo = NAN, .hi = NAN};
    if (m->kind == AG_CELL_TEXT)
        return ag_error_set(err, AG_EFORMAT, "\"%s\" holds text, not a number", c->o->metric);
    if (!cell_number(m, &p.value))
        return AG_OK; /* null: no value */
    int st = integer_key(find(row, "layer"), "layer", &p.layer, err);
    if (st == AG_OK)
        st = integer_key(find(row, "head"), "head", &p.head, err);
    if (st != AG_OK)
        return st;
    if (p.layer < 0)
        return ag_error_set(err, AG_EFORMAT, "no \"layer\" (heatmap and depth draw per layer)");
    const ag_cell *lo = find(row, c->ci_low), *hi = find(row, c->ci_high);
    if (lo && hi && !find(row, "n"))
        lo = hi = NULL; /* K_ci_* of something that is not an aggregate */
    if (lo && hi && (!cell_number(lo, &p.lo) || !cell_number(hi, &p.hi)))
        p.lo = p.hi = NAN;
    if (named && (p.model = model_index(c, model->text, err)) < 0)
        return err->status;
    return add_point(c, &p, err);
}

static void collect_free(collect *c)
{
    free(c->stack);
    free(c->ci_low);
    free(c->ci_high);
    free(c->pts);
    for (size_t k = 0; k < c->nmodels; k++)
        free(c->models[k]);
    free(c->models);
    json_decref(c->index);
}

/* ---- the distinct values of a key, sorted ---- */

static int by_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Sorted distinct values of layer (which 0), head (1) or model (2). */
static long *distinct(const collect *c, int which, size_t *n)
{
    long *v = malloc((c->count + 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t k = 0; k < c->count; k++)
        v[(*n)++] = which == 0 ? c->pts[k].layer : which == 1 ? c->pts[k].head : c->pts[k].model;
    qsort(v, *n, sizeof *v, by_long);
    size_t u = 0;
    for (size_t k = 0; k < *n; k++)
        if (u == 0 || v[u - 1] != v[k])
            v[u++] = v[k];
    *n = u;
    return v;
}

static size_t position(const long *v, size_t n, long x)
{
    const long *p = bsearch(&x, v, n, sizeof *v, by_long);
    return (size_t)(p - v);
}

/* The numbers v[n] as labels: the layers and heads present, which need not
 * be 0..n-1 (records of --layers 1,3). */
static char **number_labels(const long *v, size_t n)
{
    char **l = calloc(n ? n : 1, sizeof *l);
    for (size_t k = 0; l && k < n; k++)
        if (asprintf(&l[k], "%ld", v[k]) < 0) {
            l[k] = NULL;
            for (size_t j = 0; j < k; j++)
                free(l[j]);
            free(l);
            return NULL;
        }
    return l;
}

static void labels_free(char **l, size_t n)
{
    for (size_t k = 0; l && k < n; k++)
        free(l[k]);
    free(l);
}

/* AG_EFORMAT when the records name more than one model: a figure of one
 * model (`what`) cannot mix them. */
static int one_model(const ag_run_plot_spec *o, const collect *c, const char *what,
                     ag_error *err)
{
    if (c->nmodels < 2)
        return AG_OK;
    return ag_error_set(err, AG_EFORMAT, "%s: records of %zu models (%s, %s%s): %s draws one; choose it with --model "
                    "NAME", o->input, c->nmodels, c->models[0], c->models[1],
                    c->nmodels > 2 ? ", ..." : "", what);
}

/* AG_EFORMAT when a record has no head (a per-layer record). */
static int every_head(const ag_run_plot_spec *o, const collect *c, const char *what,
                      ag_error *err)
{
    for (size_t k = 0; k < c->count; k++)
        if (c->pts[k].head < 0)
            return ag_error_set(err, AG_EFORMAT, "%s: records without \"head\" (per layer, as "
                                "residual writes them): %s draws heads", o->input, what);
    return AG_OK;
}

/* ---- heatmap ---- */

static int heatmap(const ag_run_plot_spec *o, const collect *c, ag_plot_output *fig,
                   ag_error *err)
{
    int rc = one_model(o, c, "a heatmap", err);
    if (rc == AG_OK)
        rc = every_head(o, c, "a heatmap", err);
    if (rc != AG_OK)
        return rc;
    size_t nl, nh;
    long *layers = distinct(c, 0, &nl), *heads = distinct(c, 1, &nh);
    if (layers && heads &&
        (rc = agp_grid_fits(o, "a heatmap", nl, "layers", nh, "heads",
                            "make the records of fewer layers and heads (--layers/--heads of "
                            "the command that wrote them)", err)) != AG_OK) {
        free(layers);
        free(heads);
        return rc;
    }
    double *sum = layers && heads ? calloc(2 * nl * nh, sizeof *sum) : NULL;
    char **rl = sum ? number_labels(layers, nl) : NULL;
    char **hl = rl ? number_labels(heads, nh) : NULL;
    rc = hl ? AG_OK : ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    double *cnt = sum ? sum + nl * nh : NULL;
    for (size_t k = 0; rc == AG_OK && k < c->count; k++) {
        size_t cell = position(layers, nl, c->pts[k].layer) * nh +
                      position(heads, nh, c->pts[k].head);
        sum[cell] += c->pts[k].value;
        cnt[cell] += 1;
    }
    for (size_t k = 0; rc == AG_OK && k < nl * nh; k++)
        sum[k] = cnt[k] > 0 ? sum[k] / cnt[k] : NAN;
    char title[256];
    const char *stack = o->stack ? o->stack : c->stack;
    snprintf(title, sizeof title, "%s%s%s%s%s", o->metric, c->nmodels ? ", " : "",
             c->nmodels ? c->models[0] : "", stack ? ", " : "", stack ? stack : "");
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
                      .rows = nl, .cols = nh, .values = sum, .row_labels = (const char *const *)rl,
                      .col_labels = (const char *const *)hl, .title = agp_title(o, title),
                      .row_title = "layer", .col_title = "head", .value_title = o->metric,
                      .show_values = o->values, .vmin = o->vmin, .vmax = o->vmax};
    if (rc == AG_OK)
        rc = agp_draw_grid(o, &g, fig, err);
    labels_free(rl, nl);
    labels_free(hl, nh);
    free(sum);
    free(layers);
    free(heads);
    return rc;
}

/* ---- depth ---- */

typedef struct {
    double *x, *y, *lo, *hi; /* (nl) each, one block */
    char *label;
} depth_line;

/* The mean of each (line, layer), a line being a model; the band of a
 * lone aggregated record. */
static void depth_values(const collect *c, long line, const long *layers, size_t nl,
                         depth_line *d, double *cnt)
{
    for (size_t j = 0; j < nl; j++) {
        d->x[j] = (double)layers[j];
        d->y[j] = d->lo[j] = d->hi[j] = 0;
        cnt[j] = 0;
    }
    for (size_t k = 0; k < c->count; k++) {
        const point *p = &c->pts[k];
        if (p->model != line)
            continue;
        size_t j = position(layers, nl, p->layer);
        d->y[j] += p->value;
        d->lo[j] = p->lo;
        d->hi[j] = p->hi;
        cnt[j] += 1;
    }
    for (size_t j = 0; j < nl; j++) {
        d->y[j] = cnt[j] > 0 ? d->y[j] / cnt[j] : NAN;
        if (cnt[j] != 1)
            d->lo[j] = d->hi[j] = NAN;
    }
}

/* --relative: x = layer / the line's last layer (0 when it has one layer),
 * so that models of different depths share the axis 0..1. */
static void relative_depth(depth_line *d, const double *cnt, size_t nl)
{
    double last = 0;
    for (size_t j = 0; j < nl; j++)
        if (cnt[j] > 0 && d->x[j] > last)
            last = d->x[j];
    for (size_t j = 0; j < nl; j++)
        d->x[j] = cnt[j] == 0 ? NAN : last > 0 ? d->x[j] / last : 0;
}

/* The most lines a depth figure draws: its line styles (Okabe & Ito's
 * eight colours, solid then dashed) repeat after 16, and its legend holds
 * about 32 entries at the smallest font; past that a line cannot be told
 * from another, and every line of every record was a figure of minutes. */
#define DEPTH_MAX_LINES 32

/* AG_ELIMIT when nlines lines of nl layers are more than a depth figure
 * draws (checked before anything is allocated for them). */
static int depth_fits(const ag_run_plot_spec *o, size_t nlines, size_t nl, ag_error *err)
{
    char cap[32];
    if (nlines > DEPTH_MAX_LINES)
        return ag_error_set(err, AG_ELIMIT, "%s: records of %zu %s: a depth figure draws at most "
                            "%d lines (past 16 their styles repeat, past 32 the legend cannot "
                            "name them); choose one with --model NAME", o->input, nlines,
                            "models", DEPTH_MAX_LINES);
    if (nl > AG_PLOT_MAX_LINE_POINTS / nlines)
        return ag_error_set(err, AG_ELIMIT, "%s: %zu lines of %zu layers are more than the %s "
                            "points a figure draws; make the records of fewer layers (--layers "
                            "of the command that wrote them)", o->input, nlines, nl,
                            agp_count(cap, AG_PLOT_MAX_LINE_POINTS));
    return AG_OK;
}

static int depth(const ag_run_plot_spec *o, const collect *c, ag_plot_output *fig,
                 ag_error *err)
{
    int rc;
    size_t nl, nlines;
    long *layers = distinct(c, 0, &nl), *lines = distinct(c, 2, &nlines);
    if (layers && lines && (rc = depth_fits(o, nlines, nl, err)) != AG_OK) {
        free(layers);
        free(lines);
        return rc;
    }
    depth_line *d = layers && lines ? calloc(nlines, sizeof *d) : NULL;
    ag_plot_series *s = d ? calloc(nlines, sizeof *s) : NULL;
    double *cnt = s ? malloc(nl * sizeof *cnt) : NULL;
    rc = cnt ? AG_OK : ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    for (size_t k = 0; rc == AG_OK && k < nlines; k++) {
        double *block = malloc(4 * nl * sizeof *block);
        int named = c->nmodels > 1 ? asprintf(&d[k].label, "%s", c->models[lines[k]]) : 0;
        if (!block || named < 0) {
            d[k].label = NULL;
            free(block);
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
            break;
        }
        d[k].x = block, d[k].y = block + nl, d[k].lo = block + 2 * nl, d[k].hi = block + 3 * nl;
        depth_values(c, lines[k], layers, nl, &d[k], cnt);
        if (o->relative)
            relative_depth(&d[k], cnt, nl);
        s[k] = (ag_plot_series){.label = d[k].label, .count = nl, .x = d[k].x, .y = d[k].y,
                                .lo = d[k].lo, .hi = d[k].hi};
    }
    char title[256];
    const char *stack = o->stack ? o->stack : c->stack;
    snprintf(title, sizeof title, "%s by %s%s%s%s%s", o->metric,
             o->relative ? "relative depth" : "layer", c->nmodels == 1 ? ", " : "",
             c->nmodels == 1 ? c->models[0] : "", stack ? ", " : "", stack ? stack : "");
    ag_plot_lines p = {.size = sizeof(ag_plot_lines),
                       .nseries = nlines, .series = s, .title = agp_title(o, title),
                       .x_title = o->relative ? "relative depth (layer / last layer)" : "layer",
                       .y_title = o->metric, .integer_x = !o->relative, .markers = 1};
    if (rc == AG_OK)
        rc = agp_draw_lines(o, &p, fig, err);
    for (size_t k = 0; d && k < nlines; k++) {
        free(d[k].x);
        free(d[k].label);
    }
    free(d);
    free(s);
    free(cnt);
    free(layers);
    free(lines);
    return rc;
}

int agp_plot_records(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err)
{
    collect c = {.o = o, .index = json_object()};
    int ok = c.index != NULL;
    if (ok && asprintf(&c.ci_low, "%s_ci_low", o->metric) < 0)
        c.ci_low = NULL, ok = 0;
    if (ok && asprintf(&c.ci_high, "%s_ci_high", o->metric) < 0)
        c.ci_high = NULL, ok = 0;
    if (!ok) {
        collect_free(&c);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    }
    int rc = ag_records_read(o->input, on_record, &c, err);
    if (rc == AG_OK && !c.metric_seen)
        rc = ag_error_set(err, AG_EFORMAT, "%s: no record holds \"%s\"%s%s%s%s", o->input,
                          o->metric, o->model ? " for --model " : "", o->model ? o->model : "",
                          o->stack ? " in --stack " : "", o->stack ? o->stack : "");
    else if (rc == AG_OK && c.count == 0)
        rc = ag_error_set(err, AG_EFORMAT, "%s: \"%s\" is null in every record", o->input,
                          o->metric);
    else if (rc == AG_OK)
        rc = o->kind == AG_PLOT_HEATMAP ? heatmap(o, &c, fig, err) : depth(o, &c, fig, err);
    collect_free(&c);
    return rc;
}
