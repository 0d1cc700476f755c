/* grid.c — a grid of values as coloured cells (ag_plot_grid_render): a
 * metric over layer × head, an attention matrix, a similarity matrix. The
 * colours are viridis over [vmin, vmax], shown by a colour bar on the right
 * that carries the quantity's name; rows run top to bottom, as in a matrix.
 *
 * The layout is computed, not fixed: the margins hold the widest labels,
 * the cells take the rest of the page (square when asked), and labels
 * shrink with the cells down to MIN_LABEL points, below which only every
 * k-th is written. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "base/sized_int.h"

#define MARGIN 8.0     /* around the page, points */
#define TICK 3.0       /* tick marks */
#define GAP 4.0        /* between a tick and its label */
#define BAR_GAP 14.0   /* grid to colour bar */
#define BAR_WIDTH 12.0
#define MIN_LABEL 5.0  /* smallest label font */
#define MIN_VALUE 4.0  /* smallest cell-value font; below it no values */
#define TITLE_SIZE 11.0
#define DENDRO 48.0    /* the dendrogram's height above the grid */

typedef struct {
    double F, lf;                /* base and label font sizes */
    int row_stride, col_stride;  /* label every k-th row/column */
    int rotate_cols;             /* column labels vertical */
    double x0, y0, cw, ch;       /* grid origin (top left) and cell size */
    double row_w, col_w;         /* widest row / column label at lf */
    double vmin, vmax;           /* the colour range */
    double ticks[8], step;       /* the colour bar's ticks */
    int nticks;
    double bar_label_w;          /* widest tick label of the colour bar */
} grid_layout;

/* ---- labels ---- */

typedef struct {
    char **owned; /* the numbers written for labels not given */
    const char *const *text;
} label_set;

static int labels_make(label_set *ls, const char *const *given, size_t n)
{
    memset(ls, 0, sizeof *ls);
    if (given) {
        ls->text = given;
        return 0;
    }
    if (!(ls->owned = calloc(n ? n : 1, sizeof *ls->owned)))
        return -1;
    for (size_t k = 0; k < n; k++)
        if (asprintf(&ls->owned[k], "%zu", k) < 0) {
            ls->owned[k] = NULL;
            return -1;
        }
    ls->text = (const char *const *)ls->owned;
    return 0;
}

static void labels_free(label_set *ls, size_t n)
{
    for (size_t k = 0; ls->owned && k < n; k++)
        free(ls->owned[k]);
    free(ls->owned);
}

static double widest(plot_canvas *c, const char *const *text, size_t n)
{
    double w = 0;
    for (size_t k = 0; k < n; k++) {
        double t = canvas_label_width(c, text[k]);
        w = t > w ? t : w;
    }
    return w;
}

/* ---- the values in the cells (--values) ---- */

#define VALUE_FIT 7.0  /* a fitted page's cells hold the values at this size */

static void value_text(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.3g", v == 0 ? 0.0 : v);
}

/* The widest value's width per point of font size (text scales linearly). */
static double value_width(plot_canvas *c, const ag_plot_grid *g)
{
    double w = 0;
    char buf[48];
    canvas_font(c, 10, 0);
    for (size_t k = 0; k < g->rows * g->cols; k++)
        if (isfinite(g->values[k])) {
            value_text(buf, sizeof buf, g->values[k]);
            w = fmax(w, canvas_text_width(c, buf));
        }
    canvas_font(c, AG_PLOT_FONT_SIZE, 0);
    return w / 10;
}

/* The values' font in cells of cw x ch: at most the labels' size and 45 %
 * of the cell's height, its widest value at most 90 % of the cell's width. */
static double value_font(double F, double unit_w, double cw, double ch)
{
    double vf = fmin(F, 0.45 * ch);
    return unit_w * vf > 0.9 * cw ? 0.9 * cw / unit_w : vf;
}

/* ---- the colour range and the layout ---- */

static int colour_range(const ag_plot_grid *g, grid_layout *L, ag_error *err)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < g->rows * g->cols; k++)
        if (isfinite(g->values[k])) {
            lo = g->values[k] < lo ? g->values[k] : lo;
            hi = g->values[k] > hi ? g->values[k] : hi;
        }
    if (!isfinite(lo)) /* no value at all: an empty scale */
        lo = 0, hi = 1;
    L->vmin = isnan(g->vmin) ? lo : g->vmin;
    L->vmax = isnan(g->vmax) ? hi : g->vmax;
    if (!isnan(g->vmin) && !isnan(g->vmax) && !(g->vmin < g->vmax))
        return ag_error_set(err, AG_EINVAL, "the colour range [%g, %g] is empty", g->vmin, g->vmax);
    if (L->vmin >= L->vmax) { /* one value (or a bound beyond the data) */
        double v = isnan(g->vmin) ? L->vmax : L->vmin, half = v == 0 ? 1 : fabs(v) / 2;
        if (isnan(g->vmin))
            L->vmin = L->vmax - 2 * half;
        if (isnan(g->vmax))
            L->vmax = L->vmin + 2 * half;
    }
    return AG_OK;
}

/* The colour bar's ticks, and the right margin they need. */
static double bar_margin(plot_canvas *c, const ag_plot_grid *g, grid_layout *L, double bar_h)
{
    int max = (int)(bar_h / (2.2 * L->F));
    max = max < 2 ? 2 : max > 8 ? 8 : max;
    if (ag_plot_ticks(L->vmin, L->vmax, max, L->ticks, &L->nticks, &L->step) != AG_OK)
        L->nticks = 0;
    L->bar_label_w = 0;
    for (int k = 0; k < L->nticks; k++) {
        char buf[48];
        ag_plot_tick_label(buf, sizeof buf, L->ticks[k], L->step);
        double w = canvas_text_width(c, buf);
        L->bar_label_w = w > L->bar_label_w ? w : L->bar_label_w;
    }
    return BAR_GAP + BAR_WIDTH + TICK + GAP + L->bar_label_w +
           (g->value_title ? GAP + 1.2 * L->F : 0) + MARGIN;
}

/* One pass of the layout for label font lf; returns the font the cells
 * allow, so that the caller can iterate to a fixed point. */
static double layout_pass(plot_canvas *c, const ag_plot_grid *g, const label_set *rl,
                          const label_set *cl, double lf, grid_layout *L, double *avail_w,
                          double *avail_h)
{
    double W = c->width, H = c->height, F = L->F;
    canvas_font(c, lf, 0);
    L->row_w = widest(c, rl->text, g->rows);
    L->col_w = widest(c, cl->text, g->cols);
    canvas_font(c, F, 0);
    double top = MARGIN + (g->title ? 1.3 * TITLE_SIZE + GAP : 0) +
                 (g->linkage ? DENDRO + GAP : 0);
    double left = MARGIN + (g->row_title ? 1.2 * F + GAP : 0) + L->row_w + GAP + TICK;
    double right = bar_margin(c, g, L, H - top - 2 * MARGIN);
    *avail_w = W - left - right;
    L->rotate_cols = L->col_w > 0.9 * (*avail_w / (double)g->cols);
    double bottom = MARGIN + (g->col_title ? 1.2 * F + GAP : 0) +
                    (L->rotate_cols ? L->col_w : 1.2 * lf) + GAP + TICK;
    *avail_h = H - top - bottom;
    L->cw = *avail_w / (double)g->cols;
    L->ch = *avail_h / (double)g->rows;
    if (g->square)
        L->cw = L->ch = L->cw < L->ch ? L->cw : L->ch;
    L->x0 = left + (*avail_w - L->cw * (double)g->cols) / 2;
    L->y0 = top + (*avail_h - L->ch * (double)g->rows) / 2;
    double fit = 0.85 * L->ch;
    if (L->rotate_cols && 0.85 * L->cw < fit)
        fit = 0.85 * L->cw;
    return fit > F ? F : fit < MIN_LABEL ? MIN_LABEL : fit;
}

static int grid_layout_compute(plot_canvas *c, const ag_plot_grid *g, const label_set *rl,
                               const label_set *cl, grid_layout *L, ag_error *err)
{
    double aw = 0, ah = 0, lf = L->F;
    for (int pass = 0; pass < 4; pass++) {
        double next = layout_pass(c, g, rl, cl, lf, L, &aw, &ah);
        if (next == lf)
            break;
        lf = next;
    }
    layout_pass(c, g, rl, cl, lf, L, &aw, &ah);
    L->lf = lf;
    if (aw < 10 || ah < 10)
        return ag_error_set(err, AG_EINVAL,
                            "the page (%gx%g points) is too small for the labels of a %zux%zu grid",
                            c->width, c->height, g->rows, g->cols);
    L->row_stride = (int)ceil(1.1 * lf / L->ch);
    L->col_stride = L->rotate_cols ? (int)ceil(1.1 * lf / L->cw) : 1;
    return AG_OK;
}

/* ---- the page that fits (a page of 0 x 0) ---- */

#define FIT_CELL 12.0   /* a cell of a fitted page: room for a 10-point label */
#define FIT_MIN_GRID 216.0 /* the grid at least 3 inches a side, however long the labels */
#define FIT_GRID 1152.0 /* ... up to a grid of 16 inches a side; smaller cells past it */
#define FIT_PAGE 2880.0 /* and a page of 40 inches: a PNG of 150 dpi stays 6000 pixels */

/* The default page (432 x 324) grown where the grid needs it: the margins
 * then hold every label at the full font, and the cells get FIT_CELL
 * points each, the grid FIT_MIN_GRID to FIT_GRID a side. Measured on a
 * probe page twice, as the column labels turn upright or not with the
 * width. */
static int fit_page(const ag_plot_grid *g, const label_set *rl, const label_set *cl,
                    grid_layout *L, ag_plot_page *page, ag_error *err)
{
    ag_plot_page probe = AG_PLOT_PAGE_DEFAULT;
    double cell_w = FIT_CELL, cell_h = FIT_CELL;
    if (g->show_values) { /* cells that hold the values at VALUE_FIT points */
        plot_canvas c;
        int status = canvas_open(&c, &probe, err);
        if (status != AG_OK)
            return status;
        cell_w = fmax(cell_w, ceil(value_width(&c, g) * VALUE_FIT / 0.9));
        cell_h = fmax(cell_h, ceil(VALUE_FIT / 0.45));
        if (g->square) /* square cells: the larger side for both */
            cell_w = cell_h = fmax(cell_w, cell_h);
        canvas_discard(&c);
    }
    double need_w = fmin(fmax(cell_w * (double)g->cols, FIT_MIN_GRID), FIT_GRID);
    double need_h = fmin(fmax(cell_h * (double)g->rows, FIT_MIN_GRID), FIT_GRID), aw, ah;
    for (int pass = 0; pass < 2; pass++) {
        plot_canvas c;
        int status = canvas_open(&c, &probe, err);
        if (status != AG_OK)
            return status;
        layout_pass(&c, g, rl, cl, L->F, L, &aw, &ah);
        canvas_discard(&c);
        double w = fmax(432, probe.width - aw + need_w), h = fmax(324, probe.height - ah + need_h);
        probe.width = fmin(ceil(w), FIT_PAGE); /* whole points */
        probe.height = fmin(ceil(h), FIT_PAGE);
    }
    page->width = probe.width;
    page->height = probe.height;
    return AG_OK;
}

/* ---- drawing ---- */

static void set_rgb(plot_canvas *c, const double rgb[3])
{
    cairo_set_source_rgb(c->cr, rgb[0], rgb[1], rgb[2]);
}

/* Black or white, whichever reads on the colour: relative luminance (sRGB
 * linearised, Rec. 709 weights) above 0.18, mid-grey, takes black. */
static int dark_text_on(const double rgb[3])
{
    double y = 0;
    static const double w[3] = {0.2126, 0.7152, 0.0722};
    for (int k = 0; k < 3; k++) {
        double v = rgb[k];
        y += w[k] * (v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
    }
    return y > 0.18;
}

static double scaled(const grid_layout *L, double v)
{
    return (v - L->vmin) / (L->vmax - L->vmin);
}

/* Each cell reaches a little into its right and lower neighbours, which are
 * drawn after it and cover that: no hairline seams where antialiased edges
 * meet, in any viewer. */
static void draw_cells(plot_canvas *c, const ag_plot_grid *g, const grid_layout *L)
{
    double over = fmin(0.5, fmin(L->cw, L->ch) / 4);
    for (size_t i = 0; i < g->rows; i++)
        for (size_t j = 0; j < g->cols; j++) {
            double rgb[3];
            ag_plot_viridis(isfinite(g->values[i * g->cols + j])
                                ? scaled(L, g->values[i * g->cols + j]) : NAN, rgb);
            set_rgb(c, rgb);
            cairo_rectangle(c->cr, L->x0 + (double)j * L->cw, L->y0 + (double)i * L->ch,
                            L->cw + (j + 1 < g->cols ? over : 0),
                            L->ch + (i + 1 < g->rows ? over : 0));
            cairo_fill(c->cr);
        }
}

static void draw_values(plot_canvas *c, const ag_plot_grid *g, const grid_layout *L, double vf)
{
    char buf[48];
    canvas_font(c, vf, 0);
    for (size_t i = 0; i < g->rows; i++)
        for (size_t j = 0; j < g->cols; j++) {
            double v = g->values[i * g->cols + j], rgb[3];
            if (!isfinite(v))
                continue;
            ag_plot_viridis(scaled(L, v), rgb);
            double ink = dark_text_on(rgb) ? 0 : 1;
            cairo_set_source_rgb(c->cr, ink, ink, ink);
            value_text(buf, sizeof buf, v);
            canvas_text(c, buf, L->x0 + ((double)j + 0.5) * L->cw,
                        L->y0 + ((double)i + 0.5) * L->ch, 0.5, 0.5, 0);
        }
}

static void draw_axes(plot_canvas *c, const ag_plot_grid *g, const grid_layout *L,
                      const label_set *rl, const label_set *cl)
{
    double gw = L->cw * (double)g->cols, gh = L->ch * (double)g->rows;
    cairo_set_source_rgb(c->cr, 0, 0, 0);
    cairo_set_line_width(c->cr, 0.8);
    cairo_rectangle(c->cr, L->x0, L->y0, gw, gh);
    cairo_stroke(c->cr);
    cairo_set_line_width(c->cr, 0.6);
    canvas_font(c, L->lf, 0);
    for (size_t i = 0; i < g->rows; i += (size_t)L->row_stride) {
        double y = L->y0 + ((double)i + 0.5) * L->ch;
        cairo_move_to(c->cr, L->x0, y);
        cairo_line_to(c->cr, L->x0 - TICK, y);
        cairo_stroke(c->cr);
        canvas_label(c, rl->text[i], L->x0 - TICK - GAP, y, 1, 0.5, 0);
    }
    for (size_t j = 0; j < g->cols; j += (size_t)L->col_stride) {
        double x = L->x0 + ((double)j + 0.5) * L->cw, y = L->y0 + gh;
        cairo_move_to(c->cr, x, y);
        cairo_line_to(c->cr, x, y + TICK);
        cairo_stroke(c->cr);
        if (L->rotate_cols) /* reads upward, its end at the tick */
            canvas_label(c, cl->text[j], x, y + TICK + GAP, 1, 0.5, M_PI / 2);
        else
            canvas_label(c, cl->text[j], x, y + TICK + GAP, 0.5, 0, 0);
    }
    canvas_font(c, L->F, 0);
    if (g->row_title)
        canvas_text(c, g->row_title, L->x0 - TICK - GAP - L->row_w - GAP, L->y0 + gh / 2, 0.5, 1,
                    M_PI / 2);
    if (g->col_title)
        canvas_text(c, g->col_title, L->x0 + gw / 2,
                    L->y0 + gh + TICK + GAP + (L->rotate_cols ? L->col_w : 1.2 * L->lf) + GAP,
                    0.5, 0, 0);
    if (g->title) {
        canvas_font(c, TITLE_SIZE, 1);
        canvas_text(c, g->title, L->x0 + gw / 2, MARGIN, 0.5, 0, 0);
        canvas_font(c, L->F, 0);
    }
}

/* Z is a linkage of n leaves: row k joins two distinct clusters made
 * before it (ids below n + k), each used once, at a finite height. */
static int linkage_valid(const double *Z, size_t n)
{
    unsigned char *used = calloc(2 * n, 1);
    int ok = used != NULL;
    for (size_t k = 0; ok && k + 1 < n; k++)
        for (int side = 0; ok && side < 2; side++) {
            double v = Z[4 * k + side];
            ok = v >= 0 && v < (double)(n + k) && v == floor(v) && !used[(size_t)v] &&
                 isfinite(Z[4 * k + 2]) && Z[4 * k + 2] >= 0;
            if (ok)
                used[(size_t)v] = 1;
        }
    free(used);
    return ok;
}

/* The dendrogram of g->linkage above the columns (scipy's dendrogram
 * drawing: each merge a ⊓ joining its two parts at its height, a leaf at
 * its column's centre, a cluster at the middle of its parts), the largest
 * merge DENDRO points above the grid. */
static void draw_dendrogram(plot_canvas *c, const ag_plot_grid *g, const grid_layout *L)
{
    size_t n = g->cols;
    double *x = malloc(3 * n * sizeof *x), *h = x ? x + 2 * n - 1 : NULL; /* (2n − 1), (n − 1) */
    size_t *stack = x ? malloc(2 * n * sizeof *stack) : NULL;
    if (!stack) { /* out of memory: the figure without its dendrogram */
        free(x);
        return;
    }
    /* the leaves in pre-order are the columns, left to right */
    size_t top = 0, col = 0;
    stack[top++] = 2 * n - 2;
    while (top > 0) {
        size_t k = stack[--top];
        if (k < n) {
            x[k] = L->x0 + ((double)col++ + 0.5) * L->cw;
            continue;
        }
        stack[top++] = (size_t)g->linkage[4 * (k - n) + 1];
        stack[top++] = (size_t)g->linkage[4 * (k - n)];
    }
    double hmax = g->linkage[4 * (n - 2) + 2], base = L->y0 - GAP;
    hmax = hmax > 0 ? hmax : 1;
    cairo_set_source_rgb(c->cr, 0.25, 0.25, 0.25);
    cairo_set_line_width(c->cr, 0.8);
    for (size_t k = 0; k + 1 < n; k++) {
        const double *row = &g->linkage[4 * k];
        size_t a = (size_t)row[0], b = (size_t)row[1];
        double ha = a < n ? 0 : h[a - n], hb = b < n ? 0 : h[b - n];
        double y = base - row[2] / hmax * DENDRO;
        cairo_move_to(c->cr, x[a], base - ha / hmax * DENDRO);
        cairo_line_to(c->cr, x[a], y);
        cairo_line_to(c->cr, x[b], y);
        cairo_line_to(c->cr, x[b], base - hb / hmax * DENDRO);
        x[n + k] = (x[a] + x[b]) / 2;
        h[k] = row[2];
    }
    cairo_stroke(c->cr);
    free(x);
    free(stack);
}

/* The 256 colours of the map as a 1×256 image, vmax's at the top: one
 * small image instead of 256 rectangles (a 50 kB SVG). NULL when out of
 * memory (cairo's error then fails the figure). */
static cairo_surface_t *colour_ramp(void)
{
    cairo_surface_t *im = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 256);
    if (cairo_surface_status(im) != CAIRO_STATUS_SUCCESS)
        return im;
    unsigned char *px = cairo_image_surface_get_data(im);
    int stride = cairo_image_surface_get_stride(im);
    cairo_surface_flush(im);
    for (int k = 0; k < 256; k++) {
        uint32_t v = 0;
        for (int ch = 0; ch < 3; ch++)
            v = v << 8 | (uint32_t)lround(255 * ag_plot_viridis_table[255 - k][ch]);
        memcpy(px + (size_t)k * (size_t)stride, &v, sizeof v);
    }
    cairo_surface_mark_dirty(im);
    return im;
}

/* The colour bar, vmin at the bottom; ticks and labels on the right, then
 * the quantity's name, reading upward. */
static void draw_colour_bar(plot_canvas *c, const ag_plot_grid *g, const grid_layout *L)
{
    double gh = L->ch * (double)g->rows, x = L->x0 + L->cw * (double)g->cols + BAR_GAP;
    /* as tall as the grid, and not less than 120 points when the page has them */
    double h = fmax(gh, fmin(120, c->height - 2 * MARGIN));
    double top = fmax(MARGIN, fmin(L->y0 + (gh - h) / 2, c->height - MARGIN - h));
    double bottom = top + h;
    cairo_surface_t *ramp = colour_ramp();
    cairo_save(c->cr);
    cairo_translate(c->cr, x, top);
    cairo_scale(c->cr, BAR_WIDTH, h / 256);
    cairo_set_source_surface(c->cr, ramp, 0, 0);
    /* a PNG shows the 256 bands as they are; SVG viewers may smooth them */
    cairo_pattern_set_filter(cairo_get_source(c->cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(c->cr, 0, 0, 1, 256);
    cairo_fill(c->cr);
    cairo_restore(c->cr);
    cairo_surface_destroy(ramp);
    cairo_set_source_rgb(c->cr, 0, 0, 0);
    cairo_set_line_width(c->cr, 0.6);
    cairo_rectangle(c->cr, x, top, BAR_WIDTH, h);
    cairo_stroke(c->cr);
    for (int k = 0; k < L->nticks; k++) {
        double y = bottom - scaled(L, L->ticks[k]) * h;
        char buf[48];
        cairo_move_to(c->cr, x + BAR_WIDTH, y);
        cairo_line_to(c->cr, x + BAR_WIDTH + TICK, y);
        cairo_stroke(c->cr);
        ag_plot_tick_label(buf, sizeof buf, L->ticks[k], L->step);
        canvas_text(c, buf, x + BAR_WIDTH + TICK + GAP, y, 0, 0.5, 0);
    }
    if (g->value_title)
        canvas_text(c, g->value_title, x + BAR_WIDTH + TICK + GAP + L->bar_label_w + GAP,
                    top + h / 2, 0.5, 0, M_PI / 2);
}

int ag_plot_grid_render(const ag_plot_grid *grid, const ag_plot_page *page, ag_plot_output *out,
                        ag_error *err)
{
    memset(out, 0, sizeof *out);
    ag_plot_grid given = AG_PLOT_GRID_DEFAULT;
    if (AG_SIZED_READ(&given, grid, ag_plot_grid, err) != AG_OK)
        return AG_EINVAL;
    const ag_plot_grid *g = &given;
    if (!g->values || g->rows == 0 || g->cols == 0)
        return ag_error_set(err, AG_EINVAL, "a grid figure needs a row and a column, not %zux%zu",
                            g->rows, g->cols);
    if (g->rows > AG_PLOT_MAX_CELLS / g->cols) /* plot.h: the figure's size */
        return ag_error_set(err, AG_ELIMIT, "a grid figure draws at most %d cells, not %zux%zu",
                            AG_PLOT_MAX_CELLS, g->rows, g->cols);
    if (g->linkage && !linkage_valid(g->linkage, g->cols))
        return ag_error_set(err, AG_EINVAL, "the dendrogram's linkage is not a tree over the "
                            "%zu columns", g->cols);
    grid_layout L = {.F = AG_PLOT_FONT_SIZE};
    int status = colour_range(g, &L, err);
    if (status != AG_OK)
        return status;
    ag_plot_page pg = AG_PLOT_PAGE_DEFAULT;
    if (AG_SIZED_READ(&pg, page, ag_plot_page, err) != AG_OK)
        return AG_EINVAL;
    label_set rl, cl;
    int ok = labels_make(&rl, g->row_labels, g->rows) == 0;
    ok = labels_make(&cl, g->col_labels, g->cols) == 0 && ok;
    if (!ok)
        status = ag_error_set(err, AG_ENOMEM, "out of memory for the labels of a %zux%zu grid",
                              g->rows, g->cols);
    else if (pg.width == 0 && pg.height == 0)
        status = fit_page(g, &rl, &cl, &L, &pg, err);
    plot_canvas c = {0};
    if (status == AG_OK)
        status = canvas_open(&c, &pg, err);
    if (status == AG_OK)
        status = grid_layout_compute(&c, g, &rl, &cl, &L, err);
    double vf = 0, unit_w = 0;
    if (status == AG_OK && g->show_values) {
        /* the values at the size that fits the cells, or the reason none does */
        unit_w = value_width(&c, g);
        vf = value_font(L.F, unit_w, L.cw, L.ch);
        if (vf < MIN_VALUE)
            status = ag_error_set(err, AG_EINVAL, "the cells (%.3gx%.3g points) are too small "
                                  "for the values: at the smallest font (%g points) they need "
                                  "%.3gx%.3g points; give a larger --size, draw fewer cells, or "
                                  "leave out --values", L.cw, L.ch, MIN_VALUE,
                                  ceil(unit_w * MIN_VALUE / 0.9 * 10) / 10,
                                  ceil(MIN_VALUE / 0.45 * 10) / 10);
    }
    if (status == AG_OK) {
        draw_cells(&c, g, &L);
        if (g->show_values)
            draw_values(&c, g, &L, vf);
        draw_axes(&c, g, &L, &rl, &cl);
        if (g->linkage && g->cols > 1)
            draw_dendrogram(&c, g, &L);
        draw_colour_bar(&c, g, &L);
        status = canvas_close(&c, g->title ? g->title : "grid figure", out, err);
    } else {
        canvas_discard(&c);
    }
    labels_free(&rl, g->rows);
    labels_free(&cl, g->cols);
    return status;
}
