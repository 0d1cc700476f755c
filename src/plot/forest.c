/* forest.c — a forest plot (ag_plot_forest_render): one row per head or
 * group, its mean as a dot and its confidence interval as a horizontal
 * bar, the rows in the caller's order (ag_run_plot sorts them by the mean),
 * a dashed vertical reference line at a baseline (1 for the ratio scores,
 * whose uniform-attention value is 1). The form is the meta-analyses'
 * (Lewis & Clarke 2001, "Forest plots: trying to see the wood and the
 * trees", BMJ 322:1479): a label per row on the left, one shared x axis. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot_int.h"
#include "base/sized_int.h"

#define MARGIN 8.0
#define TICK 3.0
#define GAP 4.0
#define TITLE_SIZE 11.0
#define MIN_FONT 4.0  /* the smallest row label; rows of less are refused */
#define ROW 1.4       /* a row's height, in label font sizes */
#define FIT_PLOT 300.0
#define FIT_PAGE 2880.0

typedef struct {
    double F;                 /* the labels' font size (shrinks with many rows) */
    double px, py, pw, ph;    /* the plot area */
    double lo, hi, step;      /* the x axis */
    double ticks[AG_PLOT_MAX_TICKS];
    int nticks;
} forest_layout;

static void extend(double v, double r[2])
{
    if (isfinite(v)) {
        r[0] = fmin(r[0], v);
        r[1] = fmax(r[1], v);
    }
}

/* The x extent: every mean, interval end and the reference. */
static int data_range(const ag_plot_forest *f, double r[2])
{
    r[0] = INFINITY, r[1] = -INFINITY;
    for (size_t k = 0; k < f->rows; k++) {
        extend(f->mean[k], r);
        if (f->lo && f->hi && isfinite(f->lo[k]) && isfinite(f->hi[k]))
            extend(f->lo[k], r), extend(f->hi[k], r);
    }
    extend(f->ref, r);
    return isfinite(r[0]) && isfinite(r[1]) && isfinite(r[1] - r[0]);
}

static double label_width(plot_canvas *c, const ag_plot_forest *f)
{
    double w = 0;
    char buf[32];
    for (size_t k = 0; k < f->rows; k++) {
        if (f->labels)
            w = fmax(w, canvas_label_width(c, f->labels[k]));
        else
            snprintf(buf, sizeof buf, "%zu", k), w = fmax(w, canvas_text_width(c, buf));
    }
    return w;
}

static int layout(plot_canvas *c, const ag_plot_forest *f, forest_layout *L, ag_error *err)
{
    double r[2];
    if (!data_range(f, r))
        return ag_error_set(err, AG_EINVAL, "a forest plot needs a finite mean");
    double top = MARGIN + (f->title ? 1.3 * TITLE_SIZE + GAP : 0) + GAP;
    double bottom = MARGIN + (f->x_title ? 1.2 * AG_PLOT_FONT_SIZE + GAP : 0) +
                    1.2 * AG_PLOT_FONT_SIZE + GAP + TICK;
    L->py = top;
    L->ph = c->height - top - bottom;
    /* the labels' font: the full size, or what lets every row fit */
    L->F = fmin(AG_PLOT_FONT_SIZE, L->ph / (ROW * (double)f->rows));
    if (L->F < MIN_FONT)
        return ag_error_set(err, AG_EINVAL, "the page (%gx%g points) is too small for %zu rows "
                            "(each needs %g points at the smallest font)", c->width, c->height,
                            f->rows, ROW * MIN_FONT);
    canvas_font(c, L->F, 0);
    L->px = MARGIN + label_width(c, f) + GAP + TICK;
    canvas_font(c, AG_PLOT_FONT_SIZE, 0);
    L->pw = c->width - L->px - MARGIN;
    if (L->pw < 40 || L->ph < 20)
        return ag_error_set(err, AG_EINVAL, "the page (%gx%g points) is too small for the forest "
                            "plot", c->width, c->height);
    int max_x = (int)(L->pw / 45);
    max_x = max_x < 3 ? 3 : max_x > 12 ? 12 : max_x;
    if (ag_plot_nice_range(r[0], r[1], max_x, &L->lo, &L->hi) != AG_OK ||
        ag_plot_ticks(L->lo, L->hi, max_x, L->ticks, &L->nticks, &L->step) != AG_OK)
        L->nticks = 0;
    return AG_OK;
}

static double X(const forest_layout *L, double v)
{
    return L->px + ag_plot_position(v, L->lo, L->hi, 0) * L->pw;
}

/* The middle of row k, the first row at the top. */
static double Y(const forest_layout *L, const ag_plot_forest *f, size_t k)
{
    return L->py + L->ph * ((double)k + 0.5) / (double)f->rows;
}

static void draw(plot_canvas *c, const ag_plot_forest *f, const forest_layout *L)
{
    cairo_t *cr = c->cr;
    double bottom = L->py + L->ph;
    /* light grid lines at the ticks, then the reference line, behind the data */
    cairo_set_line_width(cr, 0.5);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    for (int k = 0; k < L->nticks; k++) {
        cairo_move_to(cr, X(L, L->ticks[k]), L->py);
        cairo_line_to(cr, X(L, L->ticks[k]), bottom);
    }
    cairo_stroke(cr);
    if (isfinite(f->ref)) {
        static const double dash[2] = {4, 3};
        cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
        cairo_set_line_width(cr, 1.0);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, X(L, f->ref), L->py);
        cairo_line_to(cr, X(L, f->ref), bottom);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    /* the rows: Okabe & Ito's blue (lines.c's first colour) */
    cairo_set_source_rgb(cr, 0, 114 / 255.0, 178 / 255.0);
    double cap = fmin(3.0, 0.25 * L->F * ROW), dot = fmin(2.6, 0.22 * L->F * ROW);
    for (size_t k = 0; k < f->rows; k++) {
        double y = Y(L, f, k);
        if (f->lo && f->hi && isfinite(f->lo[k]) && isfinite(f->hi[k])) {
            cairo_set_line_width(cr, 1.2);
            cairo_move_to(cr, X(L, f->lo[k]), y);
            cairo_line_to(cr, X(L, f->hi[k]), y);
            cairo_move_to(cr, X(L, f->lo[k]), y - cap);
            cairo_line_to(cr, X(L, f->lo[k]), y + cap);
            cairo_move_to(cr, X(L, f->hi[k]), y - cap);
            cairo_line_to(cr, X(L, f->hi[k]), y + cap);
            cairo_stroke(cr);
        }
        if (isfinite(f->mean[k])) {
            cairo_new_sub_path(cr);
            cairo_arc(cr, X(L, f->mean[k]), y, dot, 0, 2 * M_PI);
            cairo_fill(cr);
        }
    }
    /* the frame, ticks, labels and titles */
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 0.8);
    cairo_rectangle(cr, L->px, L->py, L->pw, L->ph);
    cairo_stroke(cr);
    cairo_set_line_width(cr, 0.6);
    char buf[48];
    for (int k = 0; k < L->nticks; k++) {
        double x = X(L, L->ticks[k]);
        cairo_move_to(cr, x, bottom);
        cairo_line_to(cr, x, bottom + TICK);
        cairo_stroke(cr);
        ag_plot_tick_label(buf, sizeof buf, L->ticks[k], L->step);
        canvas_text(c, buf, x, bottom + TICK + GAP, 0.5, 0, 0);
    }
    if (f->x_title)
        canvas_text(c, f->x_title, L->px + L->pw / 2,
                    bottom + TICK + GAP + 1.2 * AG_PLOT_FONT_SIZE + GAP, 0.5, 0, 0);
    canvas_font(c, L->F, 0);
    for (size_t k = 0; k < f->rows; k++) {
        double y = Y(L, f, k);
        cairo_move_to(cr, L->px, y);
        cairo_line_to(cr, L->px - TICK, y);
        cairo_stroke(cr);
        if (f->labels)
            canvas_label(c, f->labels[k], L->px - TICK - GAP, y, 1, 0.5, 0);
        else
            snprintf(buf, sizeof buf, "%zu", k), canvas_text(c, buf, L->px - TICK - GAP, y, 1, 0.5, 0);
    }
    if (f->title) {
        canvas_font(c, TITLE_SIZE, 1);
        canvas_text(c, f->title, L->px + L->pw / 2, MARGIN, 0.5, 0, 0);
    }
    canvas_font(c, AG_PLOT_FONT_SIZE, 0);
}

/* The default page (432 x 324) grown where the rows need it (a page of 0 x
 * 0): taller until every row has ROW·10 points, wider until the labels
 * leave the plot FIT_PLOT points; at most FIT_PAGE a side. */
static int fit_page(const ag_plot_forest *f, ag_plot_page *page, ag_error *err)
{
    ag_plot_page probe = AG_PLOT_PAGE_DEFAULT;
    plot_canvas c;
    int st = canvas_open(&c, &probe, err);
    if (st != AG_OK)
        return st;
    canvas_font(&c, AG_PLOT_FONT_SIZE, 0);
    double labels = label_width(&c, f);
    canvas_discard(&c);
    double chrome = MARGIN + (f->title ? 1.3 * TITLE_SIZE + GAP : 0) + GAP + MARGIN +
                    (f->x_title ? 1.2 * AG_PLOT_FONT_SIZE + GAP : 0) + 1.2 * AG_PLOT_FONT_SIZE +
                    GAP + TICK;
    double w = fmax(probe.width, MARGIN + labels + GAP + TICK + FIT_PLOT + MARGIN);
    double h = fmax(probe.height, chrome + ROW * AG_PLOT_FONT_SIZE * (double)f->rows);
    page->width = fmin(ceil(w), FIT_PAGE);
    page->height = fmin(ceil(h), FIT_PAGE);
    return AG_OK;
}

int ag_plot_forest_render(const ag_plot_forest *forest, const ag_plot_page *page,
                          ag_plot_output *out, ag_error *err)
{
    memset(out, 0, sizeof *out);
    ag_plot_forest f = AG_PLOT_FOREST_DEFAULT;
    if (AG_SIZED_READ(&f, forest, ag_plot_forest, err) != AG_OK)
        return AG_EINVAL;
    if (f.rows == 0 || !f.mean)
        return ag_error_set(err, AG_EINVAL, "a forest plot needs rows");
    if (f.rows > AG_PLOT_MAX_FOREST_ROWS)
        return ag_error_set(err, AG_ELIMIT, "a forest plot draws at most %d rows, not %zu",
                            AG_PLOT_MAX_FOREST_ROWS, f.rows);
    ag_plot_page pg = AG_PLOT_PAGE_DEFAULT;
    if (AG_SIZED_READ(&pg, page, ag_plot_page, err) != AG_OK)
        return AG_EINVAL;
    int st = pg.width == 0 && pg.height == 0 ? fit_page(&f, &pg, err) : AG_OK;
    plot_canvas c;
    if (st == AG_OK)
        st = canvas_open(&c, &pg, err);
    if (st != AG_OK)
        return st;
    forest_layout L = {0};
    canvas_font(&c, AG_PLOT_FONT_SIZE, 0);
    if ((st = layout(&c, &f, &L, err)) != AG_OK) {
        canvas_discard(&c);
        return st;
    }
    draw(&c, &f, &L);
    return canvas_close(&c, f.title ? f.title : "forest plot", out, err);
}
