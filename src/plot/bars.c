/* bars.c — small multiples of bar charts (ag_plot_bars_render): the same
 * categories (one query's keys) in panels stacked top to bottom, one per
 * row of values (one normaliser each), on one y range, so that a key's
 * bars line up down the page and are read as positions on a common scale
 * (Cleveland & McGill 1984, "Graphical Perception", JASA 79:531, whose
 * ranking puts that comparison first; Tufte's small multiples). The
 * categories are labelled once, under the last panel; a category a panel
 * lacks (NaN: a masked key) is a light grey column, as a grid's missing
 * cell is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"
#include "base/sized_int.h"

#define MARGIN 8.0
#define TICK 3.0
#define GAP 4.0
#define TITLE_SIZE 11.0
#define PANEL_TITLE 9.0  /* a panel's title, points */
#define PANEL_GAP 10.0   /* between a panel and the next one's title */
#define MIN_LABEL 5.0    /* the smallest category label */
#define FIT_BAR 8.0      /* a fitted page gives each bar this many points, */
#define FIT_WIDTH 864.0  /* up to a page 12 inches wide (thinner bars past it) */
#define FIT_PANEL 72.0   /* ... and each panel this height */
#define FIT_PAGE 2880.0

typedef struct {
    double F, lf;           /* base and category-label font sizes */
    double px, py, pw, ph;  /* the first panel's plot area; the others below it */
    double pitch;           /* points per category */
    double lo, hi, step;    /* the y axis */
    double ticks[AG_PLOT_MAX_TICKS];
    int nticks, rotate, stride;
    double label_w;         /* the widest category label at lf */
    double tick_w;          /* the widest y tick label */
} bars_layout;

/* The text of category k: its label, or its index in buf. */
static const char *category(const ag_plot_bars *b, size_t k, char buf[32])
{
    if (b->labels)
        return b->labels[k];
    snprintf(buf, 32, "%zu", k);
    return buf;
}

static double widest_category(plot_canvas *c, const ag_plot_bars *b)
{
    double w = 0;
    char buf[32];
    for (size_t k = 0; k < b->bars; k++)
        w = fmax(w, canvas_label_width(c, category(b, k, buf)));
    return w;
}

/* Indices as labels: every k-th, k the step of a numeric axis over 0 to
 * bars − 1 (1, 2 or 5 × 10^e: 0, 50, 100, ...) with at most `fit` labels. */
static int index_stride(size_t bars, double fit)
{
    double ticks[AG_PLOT_MAX_TICKS], step = 1;
    int count, max = fit < 2 ? 2 : fit > AG_PLOT_MAX_TICKS ? AG_PLOT_MAX_TICKS : (int)fit;
    if (bars < 2 || ag_plot_ticks(0, (double)(bars - 1), max, ticks, &count, &step) != AG_OK)
        return 1;
    return step < 1 ? 1 : (int)step;
}

/* The y range: given, or the data's widened to nice ticks, with 0 in it
 * (a bar starts at 0). */
static int y_range(const ag_plot_bars *b, bars_layout *L, ag_error *err)
{
    double lo = 0, hi = -INFINITY;
    for (size_t k = 0; k < b->panels * b->bars; k++)
        if (isfinite(b->values[k]))
            lo = fmin(lo, b->values[k]), hi = fmax(hi, b->values[k]);
    if (!isfinite(hi))
        return ag_error_set(err, AG_EINVAL, "a bar chart needs a finite value");
    if (!isnan(b->ymin) || !isnan(b->ymax)) {
        lo = isnan(b->ymin) ? lo : b->ymin;
        hi = isnan(b->ymax) ? fmax(hi, lo + 1) : b->ymax;
        if (!(lo < hi) || !isfinite(hi - lo))
            return ag_error_set(err, AG_EINVAL, "the y range [%g, %g] is empty", lo, hi);
        L->lo = lo, L->hi = hi;
        return AG_OK;
    }
    return ag_plot_nice_range(lo, hi, 6, &L->lo, &L->hi) == AG_OK
               ? AG_OK
               : ag_error_set(err, AG_EINVAL, "the values have no finite range");
}

static double chrome_top(const ag_plot_bars *b)
{
    return MARGIN + (b->title ? 1.3 * TITLE_SIZE + GAP : 0);
}

static double panel_head(const ag_plot_bars *b)
{
    return b->panel_titles ? 1.3 * PANEL_TITLE + 2 : 2;
}

static int layout(plot_canvas *c, const ag_plot_bars *b, bars_layout *L, ag_error *err)
{
    double F = L->F, W = c->width, H = c->height;
    char buf[48];
    int st = y_range(b, L, err);
    if (st != AG_OK)
        return st;
    L->tick_w = 0;
    if (ag_plot_ticks(L->lo, L->hi, 3, L->ticks, &L->nticks, &L->step) != AG_OK)
        L->nticks = 0;
    for (int k = 0; k < L->nticks; k++) {
        ag_plot_tick_label(buf, sizeof buf, L->ticks[k], L->step);
        L->tick_w = fmax(L->tick_w, canvas_text_width(c, buf));
    }
    L->px = MARGIN + (b->y_title ? 1.2 * F + GAP : 0) + L->tick_w + GAP + TICK;
    L->pw = W - L->px - MARGIN;
    L->pitch = L->pw / (double)b->bars;
    canvas_font(c, F, 0);
    L->label_w = widest_category(c, b);
    L->rotate = b->labels && L->label_w > 0.9 * L->pitch;
    L->lf = L->rotate ? fmax(MIN_LABEL, fmin(F, 0.85 * L->pitch)) : F;
    canvas_font(c, L->lf, 0);
    L->label_w = widest_category(c, b);
    canvas_font(c, F, 0);
    L->stride = L->rotate ? (int)ceil(1.1 * L->lf / L->pitch) : 1;
    if (!b->labels && L->label_w + GAP > L->pitch)
        L->stride = index_stride(b->bars, L->pw / (L->label_w + GAP));
    double bottom = MARGIN + (b->x_title ? 1.2 * F + GAP : 0) +
                    (L->rotate ? L->label_w : 1.2 * L->lf) + GAP + TICK;
    double panels = (double)b->panels;
    L->py = chrome_top(b) + panel_head(b);
    L->ph = (H - bottom - chrome_top(b) - panels * panel_head(b) - (panels - 1) * PANEL_GAP) /
            panels;
    if (L->pw < 20 || L->ph < 20)
        return ag_error_set(err, AG_EINVAL, "the page (%gx%g points) is too small for %zu "
                            "panels of %zu bars", W, H, b->panels, b->bars);
    return AG_OK;
}

/* The top of panel p's plot area. */
static double panel_top(const ag_plot_bars *b, const bars_layout *L, size_t p)
{
    return L->py + (double)p * (L->ph + PANEL_GAP + panel_head(b));
}

static double Y(const bars_layout *L, double top, double v)
{
    double t = ag_plot_position(fmin(fmax(v, L->lo), L->hi), L->lo, L->hi, 0);
    return top + L->ph - t * L->ph;
}

static void draw_panel(plot_canvas *c, const ag_plot_bars *b, const bars_layout *L, size_t p)
{
    cairo_t *cr = c->cr;
    double top = panel_top(b, L, p);
    const double *v = b->values + p * b->bars;
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9); /* absent categories */
    for (size_t k = 0; k < b->bars; k++)
        if (isnan(v[k]))
            cairo_rectangle(cr, L->px + (double)k * L->pitch, top, L->pitch, L->ph);
    cairo_fill(cr);
    cairo_set_line_width(cr, 0.5); /* light grid lines at the ticks, behind the bars */
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    for (int k = 0; k < L->nticks; k++) {
        cairo_move_to(cr, L->px, Y(L, top, L->ticks[k]));
        cairo_line_to(cr, L->px + L->pw, Y(L, top, L->ticks[k]));
    }
    cairo_stroke(cr);
    const double *rgb = agp_palette[(b->colours ? (unsigned)b->colours[p] : 0) % 8];
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    double base = Y(L, top, 0), w = 0.8 * L->pitch;
    for (size_t k = 0; k < b->bars; k++)
        if (isfinite(v[k]) && v[k] != 0) {
            double y = Y(L, top, v[k]);
            cairo_rectangle(cr, L->px + ((double)k + 0.1) * L->pitch, fmin(y, base), w,
                            fabs(base - y));
        }
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 0.8);
    cairo_rectangle(cr, L->px, top, L->pw, L->ph);
    cairo_stroke(cr);
    cairo_set_line_width(cr, 0.6);
    char buf[48];
    for (int k = 0; k < L->nticks; k++) {
        double y = Y(L, top, L->ticks[k]);
        cairo_move_to(cr, L->px, y);
        cairo_line_to(cr, L->px - TICK, y);
        cairo_stroke(cr);
        ag_plot_tick_label(buf, sizeof buf, L->ticks[k], L->step);
        canvas_text(c, buf, L->px - TICK - GAP, y, 1, 0.5, 0);
    }
    if (b->panel_titles && b->panel_titles[p]) {
        canvas_font(c, PANEL_TITLE, 0);
        canvas_text(c, b->panel_titles[p], L->px, top - 2, 0, 1, 0);
        canvas_font(c, L->F, 0);
    }
}

/* The categories under the last panel, the axis titles and the title. */
static void draw_axes(plot_canvas *c, const ag_plot_bars *b, const bars_layout *L)
{
    cairo_t *cr = c->cr;
    double bottom = panel_top(b, L, b->panels - 1) + L->ph;
    char buf[32];
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 0.6);
    canvas_font(c, L->lf, 0);
    for (size_t k = 0; k < b->bars; k += (size_t)L->stride) {
        double x = L->px + ((double)k + 0.5) * L->pitch;
        cairo_move_to(cr, x, bottom);
        cairo_line_to(cr, x, bottom + TICK);
        cairo_stroke(cr);
        if (L->rotate) /* reads upward, its end at the tick */
            canvas_label(c, category(b, k, buf), x, bottom + TICK + GAP, 1, 0.5, M_PI / 2);
        else
            canvas_label(c, category(b, k, buf), x, bottom + TICK + GAP, 0.5, 0, 0);
    }
    canvas_font(c, L->F, 0);
    if (b->x_title)
        canvas_text(c, b->x_title, L->px + L->pw / 2,
                    bottom + TICK + GAP + (L->rotate ? L->label_w : 1.2 * L->lf) + GAP, 0.5, 0, 0);
    if (b->y_title)
        canvas_text(c, b->y_title, L->px - TICK - GAP - L->tick_w - GAP,
                    (L->py + bottom) / 2, 0.5, 1, M_PI / 2);
    if (b->title) {
        canvas_font(c, TITLE_SIZE, 1);
        canvas_text(c, b->title, L->px + L->pw / 2, MARGIN, 0.5, 0, 0);
        canvas_font(c, L->F, 0);
    }
}

/* The default page (432 x 324) grown where the figure needs it (a page of
 * 0 x 0): FIT_BAR points a bar, FIT_PANEL points a panel; measured on a
 * probe page twice, as the labels turn upright or not with the width. A
 * figure that does not lay out keeps the probe's size (its error comes
 * from the render). */
static int fit_page(const ag_plot_bars *b, ag_plot_page *page, ag_error *err)
{
    ag_plot_page probe = AG_PLOT_PAGE_DEFAULT;
    ag_error ignored = {0};
    for (int pass = 0; pass < 2; pass++) {
        plot_canvas c;
        int st = canvas_open(&c, &probe, err);
        if (st != AG_OK)
            return st;
        bars_layout L = {.F = AG_PLOT_FONT_SIZE};
        canvas_font(&c, L.F, 0);
        st = layout(&c, b, &L, &ignored);
        canvas_discard(&c);
        if (st != AG_OK && st != AG_EINVAL)
            return ag_error_set(err, st, "%s", ignored.message);
        double panels = (double)b->panels;
        double w = fmax(432, probe.width - L.pw + FIT_BAR * (double)b->bars);
        w = fmin(w, fmax(432, FIT_WIDTH));
        double h = fmax(324, probe.height - panels * L.ph + panels * FIT_PANEL);
        probe.width = fmin(ceil(w), FIT_PAGE); /* whole points */
        probe.height = fmin(ceil(h), FIT_PAGE);
    }
    page->width = probe.width;
    page->height = probe.height;
    return AG_OK;
}

int ag_plot_bars_render(const ag_plot_bars *bars, const ag_plot_page *page, ag_plot_output *out,
                        ag_error *err)
{
    memset(out, 0, sizeof *out);
    ag_plot_bars b = AG_PLOT_BARS_DEFAULT;
    if (AG_SIZED_READ(&b, bars, ag_plot_bars, err) != AG_OK)
        return AG_EINVAL;
    if (!b.panels || !b.bars || !b.values)
        return ag_error_set(err, AG_EINVAL, "a bar chart needs panels and bars");
    if (b.panels > AG_PLOT_MAX_PANELS)
        return ag_error_set(err, AG_ELIMIT, "a bar chart stacks at most %d panels, not %zu",
                            AG_PLOT_MAX_PANELS, b.panels);
    if (b.bars > AG_PLOT_MAX_BARS / b.panels)
        return ag_error_set(err, AG_ELIMIT, "a bar chart draws at most %d bars over its panels, "
                            "not %zu x %zu", AG_PLOT_MAX_BARS, b.panels, b.bars);
    ag_plot_page pg = AG_PLOT_PAGE_DEFAULT;
    if (AG_SIZED_READ(&pg, page, ag_plot_page, err) != AG_OK)
        return AG_EINVAL;
    int st = pg.width == 0 && pg.height == 0 ? fit_page(&b, &pg, err) : AG_OK;
    plot_canvas c;
    if (st == AG_OK)
        st = canvas_open(&c, &pg, err);
    if (st != AG_OK)
        return st;
    bars_layout L = {.F = AG_PLOT_FONT_SIZE};
    canvas_font(&c, L.F, 0);
    if ((st = layout(&c, &b, &L, err)) != AG_OK) {
        canvas_discard(&c);
        return st;
    }
    for (size_t p = 0; p < b.panels; p++)
        draw_panel(&c, &b, &L, p);
    draw_axes(&c, &b, &L);
    return canvas_close(&c, b.title ? b.title : "bar chart", out, err);
}
