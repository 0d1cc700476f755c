/* lines.c — a line chart (ag_plot_lines_render): a metric against depth,
 * one line per model or head, with its confidence band; a spectrum on a
 * log axis. The colours are Okabe & Ito's palette ("Color Universal
 * Design", 2008), which stays distinct for the common colour-vision
 * deficiencies; past eight lines they repeat, dashed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot_int.h"
#include "base/sized_int.h"

#define MARGIN 8.0
#define TICK 3.0
#define GAP 4.0
#define TITLE_SIZE 11.0
#define LEGEND_GAP 12.0
#define SWATCH 20.0
#define MIN_LEGEND 5.0

/* Okabe & Ito, in an order that keeps the faint yellow last. */
const double agp_palette[8][3] = {
    {0, 114 / 255.0, 178 / 255.0},             /* blue */
    {213 / 255.0, 94 / 255.0, 0},              /* vermillion */
    {0, 158 / 255.0, 115 / 255.0},             /* bluish green */
    {204 / 255.0, 121 / 255.0, 167 / 255.0},   /* reddish purple */
    {230 / 255.0, 159 / 255.0, 0},             /* orange */
    {86 / 255.0, 180 / 255.0, 233 / 255.0},    /* sky blue */
    {0, 0, 0},                                 /* black */
    {240 / 255.0, 228 / 255.0, 66 / 255.0},    /* yellow */
};

typedef struct {
    double lo, hi;    /* the axis */
    double ticks[AG_PLOT_MAX_TICKS], step;
    int exps[AG_PLOT_MAX_TICKS]; /* log axis: the ticks' exponents */
    int nticks, log;
} axis;

typedef struct {
    double F, lf;             /* base and legend font sizes */
    double px, py, pw, ph;    /* the plot area */
    axis x, y;
    int legend;               /* entries drawn */
    double legend_w;
} lines_layout;

/* A value that can be drawn on the axis. */
static int usable(double v, int log_scale)
{
    return isfinite(v) && (!log_scale || v > 0);
}

static int has_band(const ag_plot_series *s, size_t i, int log_scale)
{
    return s->lo && s->hi && usable(s->lo[i], log_scale) && usable(s->hi[i], log_scale);
}

static void extend(double v, double *lo, double *hi)
{
    *lo = v < *lo ? v : *lo;
    *hi = v > *hi ? v : *hi;
}

/* The data's extent: x over the points drawn, y over the points and bands. */
static int data_range(const ag_plot_lines *p, double x[2], double y[2])
{
    x[0] = y[0] = INFINITY;
    x[1] = y[1] = -INFINITY;
    for (size_t s = 0; s < p->nseries; s++) {
        const ag_plot_series *se = &p->series[s];
        for (size_t i = 0; i < se->count; i++) {
            int point = usable(se->y[i], p->log_y), band = has_band(se, i, p->log_y);
            if (!isfinite(se->x[i]) || !(point || band))
                continue;
            extend(se->x[i], &x[0], &x[1]);
            if (point)
                extend(se->y[i], &y[0], &y[1]);
            if (band) {
                extend(se->lo[i], &y[0], &y[1]);
                extend(se->hi[i], &y[0], &y[1]);
            }
        }
    }
    return isfinite(x[0]) && isfinite(y[0]) && isfinite(x[1] - x[0]) && isfinite(y[1] - y[0]);
}

/* x: the data's range padded by 4% (half a unit for one value); ticks in
 * the data's range, integers only when asked. */
static void x_axis(axis *a, const double d[2], int integer_x, int max_ticks)
{
    double pad = d[1] > d[0] ? 0.04 * (d[1] - d[0]) : 0.5;
    a->lo = d[0] - pad;
    a->hi = d[1] + pad;
    a->log = 0;
    a->nticks = 0;
    if (d[1] == d[0]) {
        a->ticks[a->nticks++] = d[0];
        a->step = 1;
        return;
    }
    if (ag_plot_ticks(d[0], d[1], max_ticks, a->ticks, &a->nticks, &a->step) != AG_OK)
        a->nticks = 0;
    if (integer_x && a->step < 1) { /* every integer fits */
        a->nticks = 0;
        a->step = 1;
        for (double v = ceil(d[0]); v <= d[1] && a->nticks < AG_PLOT_MAX_TICKS; v++)
            a->ticks[a->nticks++] = v;
    }
}

static void y_axis(axis *a, const double d[2], int log_scale, int max_ticks)
{
    a->log = log_scale;
    a->nticks = 0;
    if (log_scale) {
        if (ag_plot_log_axis(d[0], d[1], max_ticks, &a->lo, &a->hi, a->exps, &a->nticks) == AG_OK)
            for (int k = 0; k < a->nticks; k++)
                a->ticks[k] = pow(10, a->exps[k]);
        return;
    }
    if (ag_plot_nice_range(d[0], d[1], max_ticks, &a->lo, &a->hi) != AG_OK ||
        ag_plot_ticks(a->lo, a->hi, max_ticks, a->ticks, &a->nticks, &a->step) != AG_OK)
        a->nticks = 0;
}

static double tick_width(plot_canvas *c, const axis *a, int k)
{
    char buf[48];
    if (a->log)
        return canvas_power_width(c, a->exps[k]);
    ag_plot_tick_label(buf, sizeof buf, a->ticks[k], a->step);
    return canvas_text_width(c, buf);
}

static void tick_label(plot_canvas *c, const axis *a, int k, double x, double y, double ha,
                       double va)
{
    char buf[48];
    if (a->log) {
        canvas_power_of_ten(c, a->exps[k], x, y, ha, va);
        return;
    }
    ag_plot_tick_label(buf, sizeof buf, a->ticks[k], a->step);
    canvas_text(c, buf, x, y, ha, va, 0);
}

static double legend_width(plot_canvas *c, const ag_plot_lines *p, int *entries)
{
    double w = 0;
    *entries = 0;
    for (size_t s = 0; s < p->nseries; s++)
        if (p->series[s].label) {
            w = fmax(w, canvas_label_width(c, p->series[s].label));
            ++*entries;
        }
    return *entries ? LEGEND_GAP + SWATCH + GAP + w : 0;
}

static int lines_layout_compute(plot_canvas *c, const ag_plot_lines *p, lines_layout *L,
                                ag_error *err)
{
    double dx[2], dy[2];
    if (!data_range(p, dx, dy))
        return ag_error_set(err, AG_EINVAL, "a line chart needs a finite point%s",
                            p->log_y ? " above 0 (log scale)" : "");
    double W = c->width, H = c->height, F = L->F;
    double top = MARGIN + (p->title ? 1.3 * TITLE_SIZE + GAP : 0) + GAP;
    double bottom = MARGIN + (p->x_title ? 1.2 * F + GAP : 0) + 1.2 * F + GAP + TICK;
    L->ph = H - top - bottom;
    int max_y = (int)(L->ph / (2.5 * F));
    y_axis(&L->y, dy, p->log_y, max_y < 3 ? 3 : max_y > 10 ? 10 : max_y);
    double yw = 0;
    for (int k = 0; k < L->y.nticks; k++)
        yw = fmax(yw, tick_width(c, &L->y, k));
    double left = MARGIN + (p->y_title ? 1.2 * F + GAP : 0) + yw + GAP + TICK;
    /* the legend's font shrinks until its entries fit the plot's height */
    int entries;
    L->lf = F;
    L->legend_w = legend_width(c, p, &entries);
    if (entries && 1.4 * F * entries > L->ph) {
        L->lf = fmax(MIN_LEGEND, L->ph / (1.4 * entries));
        canvas_font(c, L->lf, 0);
        L->legend_w = legend_width(c, p, &entries);
        canvas_font(c, F, 0);
    }
    L->legend = entries;
    L->pw = W - left - MARGIN - L->legend_w;
    L->px = left;
    L->py = top;
    if (L->pw < 20 || L->ph < 20)
        return ag_error_set(err, AG_EINVAL, "the page (%gx%g points) is too small for the chart",
                            W, H);
    int max_x = (int)(L->pw / 45);
    x_axis(&L->x, dx, p->integer_x, max_x < 2 ? 2 : max_x > 12 ? 12 : max_x);
    return AG_OK;
}

static double X(const lines_layout *L, double v)
{
    return L->px + ag_plot_position(v, L->x.lo, L->x.hi, 0) * L->pw;
}

static double Y(const lines_layout *L, double v)
{
    return L->py + L->ph - ag_plot_position(v, L->y.lo, L->y.hi, L->y.log) * L->ph;
}

static void series_style(plot_canvas *c, size_t s, double alpha)
{
    const double *rgb = agp_palette[s % 8];
    cairo_set_source_rgba(c->cr, rgb[0], rgb[1], rgb[2], alpha);
    static const double dash[2] = {5, 2.5};
    cairo_set_dash(c->cr, dash, s / 8 % 2 ? 2 : 0, 0);
}

/* A band over each run of consecutive points that have one; a run of one
 * point is an error bar. */
static void draw_bands(plot_canvas *c, const ag_plot_lines *p, const lines_layout *L)
{
    for (size_t s = 0; s < p->nseries; s++) {
        const ag_plot_series *se = &p->series[s];
        for (size_t i = 0; se->lo && se->hi && i < se->count;) {
            size_t j = i;
            while (j < se->count && has_band(se, j, p->log_y) && isfinite(se->x[j]))
                j++;
            if (j == i) {
                i++;
                continue;
            }
            series_style(c, s, 0.22);
            cairo_set_dash(c->cr, NULL, 0, 0);
            if (j - i == 1) {
                cairo_set_line_width(c->cr, 1.2);
                cairo_move_to(c->cr, X(L, se->x[i]), Y(L, se->lo[i]));
                cairo_line_to(c->cr, X(L, se->x[i]), Y(L, se->hi[i]));
                cairo_stroke(c->cr);
            } else {
                for (size_t k = i; k < j; k++)
                    cairo_line_to(c->cr, X(L, se->x[k]), Y(L, se->hi[k]));
                for (size_t k = j; k-- > i;)
                    cairo_line_to(c->cr, X(L, se->x[k]), Y(L, se->lo[k]));
                cairo_close_path(c->cr);
                cairo_fill(c->cr);
            }
            i = j;
        }
    }
}

static void draw_lines(plot_canvas *c, const ag_plot_lines *p, const lines_layout *L)
{
    for (size_t s = 0; s < p->nseries; s++) {
        const ag_plot_series *se = &p->series[s];
        series_style(c, s, 1);
        cairo_set_line_width(c->cr, 1.5);
        int open = 0;
        for (size_t i = 0; i < se->count; i++) {
            if (!usable(se->y[i], p->log_y) || !isfinite(se->x[i])) {
                open = 0; /* a gap */
                continue;
            }
            (open ? cairo_line_to : cairo_move_to)(c->cr, X(L, se->x[i]), Y(L, se->y[i]));
            open = 1;
        }
        cairo_stroke(c->cr);
        cairo_set_dash(c->cr, NULL, 0, 0);
        for (size_t i = 0; p->markers && i < se->count; i++)
            if (usable(se->y[i], p->log_y) && isfinite(se->x[i])) {
                cairo_new_sub_path(c->cr);
                cairo_arc(c->cr, X(L, se->x[i]), Y(L, se->y[i]), 2.2, 0, 2 * M_PI);
                cairo_fill(c->cr);
            }
    }
}

/* Light grid lines at the y ticks, behind the data. */
static void draw_grid_lines(plot_canvas *c, const lines_layout *L)
{
    cairo_set_line_width(c->cr, 0.5);
    cairo_set_source_rgb(c->cr, 0.88, 0.88, 0.88);
    for (int k = 0; k < L->y.nticks; k++) {
        cairo_move_to(c->cr, L->px, Y(L, L->y.ticks[k]));
        cairo_line_to(c->cr, L->px + L->pw, Y(L, L->y.ticks[k]));
    }
    cairo_stroke(c->cr);
}

static void draw_axes(plot_canvas *c, const ag_plot_lines *p, const lines_layout *L)
{
    double bottom = L->py + L->ph;
    cairo_set_source_rgb(c->cr, 0, 0, 0);
    cairo_set_line_width(c->cr, 0.8);
    cairo_rectangle(c->cr, L->px, L->py, L->pw, L->ph);
    cairo_stroke(c->cr);
    cairo_set_line_width(c->cr, 0.6);
    double yw = 0;
    for (int k = 0; k < L->y.nticks; k++) {
        double y = Y(L, L->y.ticks[k]);
        cairo_move_to(c->cr, L->px, y);
        cairo_line_to(c->cr, L->px - TICK, y);
        cairo_stroke(c->cr);
        tick_label(c, &L->y, k, L->px - TICK - GAP, y, 1, 0.5);
        yw = fmax(yw, tick_width(c, &L->y, k));
    }
    for (int k = 0; k < L->x.nticks; k++) {
        double x = X(L, L->x.ticks[k]);
        cairo_move_to(c->cr, x, bottom);
        cairo_line_to(c->cr, x, bottom + TICK);
        cairo_stroke(c->cr);
        tick_label(c, &L->x, k, x, bottom + TICK + GAP, 0.5, 0);
    }
    if (p->x_title)
        canvas_text(c, p->x_title, L->px + L->pw / 2, bottom + TICK + GAP + 1.2 * L->F + GAP, 0.5,
                    0, 0);
    if (p->y_title)
        canvas_text(c, p->y_title, L->px - TICK - GAP - yw - GAP, L->py + L->ph / 2, 0.5, 1,
                    M_PI / 2);
    if (p->title) {
        canvas_font(c, TITLE_SIZE, 1);
        canvas_text(c, p->title, L->px + L->pw / 2, MARGIN, 0.5, 0, 0);
        canvas_font(c, L->F, 0);
    }
}

static void draw_legend(plot_canvas *c, const ag_plot_lines *p, const lines_layout *L)
{
    double x = L->px + L->pw + LEGEND_GAP, y = L->py, row = 1.4 * L->lf;
    canvas_font(c, L->lf, 0);
    for (size_t s = 0; s < p->nseries; s++) {
        if (!p->series[s].label)
            continue;
        if (y + row > L->py + L->ph)
            break; /* what does not fit at MIN_LEGEND points is left out */
        double mid = y + row / 2;
        series_style(c, s, 1);
        cairo_set_line_width(c->cr, 1.5);
        cairo_move_to(c->cr, x, mid);
        cairo_line_to(c->cr, x + SWATCH, mid);
        cairo_stroke(c->cr);
        cairo_set_dash(c->cr, NULL, 0, 0);
        if (p->markers) {
            cairo_arc(c->cr, x + SWATCH / 2, mid, 2.2, 0, 2 * M_PI);
            cairo_fill(c->cr);
        }
        cairo_set_source_rgb(c->cr, 0, 0, 0);
        canvas_label(c, p->series[s].label, x + SWATCH + GAP, mid, 0, 0.5, 0);
        y += row;
    }
    canvas_font(c, L->F, 0);
}

#define FIT_PLOT 240.0   /* the plot area of a fitted page is at least this wide */
#define FIT_PAGE 2880.0  /* and the page at most 40 inches a side */

/* The default page (432 x 324) grown where the chart needs it (a page of
 * 0 x 0): taller until the legend's entries fit at the full font, wider
 * until the legend leaves the plot FIT_PLOT points. A chart with no finite
 * point keeps the default (its error comes from the render). */
static int fit_page(const ag_plot_lines *p, ag_plot_page *page, ag_error *err)
{
    ag_plot_page probe = AG_PLOT_PAGE_DEFAULT;
    plot_canvas c;
    int status = canvas_open(&c, &probe, err), entries;
    if (status != AG_OK)
        return status;
    lines_layout L = {.F = AG_PLOT_FONT_SIZE};
    ag_error ignored = {0};
    double dx[2], dy[2], w = probe.width, h = probe.height;
    if (data_range(p, dx, dy)) {
        lines_layout_compute(&c, p, &L, &ignored); /* sets px and ph, whether or not they fit */
        double legend = legend_width(&c, p, &entries); /* at the full font */
        w = fmax(w, L.px + FIT_PLOT + legend + MARGIN);
        h = fmax(h, probe.height - L.ph + 1.4 * L.F * entries);
    }
    canvas_discard(&c);
    page->width = fmin(ceil(w), FIT_PAGE); /* whole points */
    page->height = fmin(ceil(h), FIT_PAGE);
    return AG_OK;
}

int ag_plot_lines_render(const ag_plot_lines *lines, const ag_plot_page *page, ag_plot_output *out,
                         ag_error *err)
{
    memset(out, 0, sizeof *out);
    ag_plot_lines given = AG_PLOT_LINES_DEFAULT;
    if (AG_SIZED_READ(&given, lines, ag_plot_lines, err) != AG_OK)
        return AG_EINVAL;
    const ag_plot_lines *p = &given;
    size_t points = 0;
    for (size_t s = 0; s < p->nseries; s++) {
        if (p->series[s].count && (!p->series[s].x || !p->series[s].y))
            return ag_error_set(err, AG_EINVAL, "line %zu of the chart has no values", s);
        points += p->series[s].count > AG_PLOT_MAX_LINE_POINTS ? AG_PLOT_MAX_LINE_POINTS + 1
                                                                : p->series[s].count;
        if (points > AG_PLOT_MAX_LINE_POINTS) /* plot.h: the figure's size */
            return ag_error_set(err, AG_ELIMIT, "a line chart draws at most %d points over its "
                                "lines; these have more", AG_PLOT_MAX_LINE_POINTS);
    }
    ag_plot_page pg = AG_PLOT_PAGE_DEFAULT;
    if (AG_SIZED_READ(&pg, page, ag_plot_page, err) != AG_OK)
        return AG_EINVAL;
    int status = pg.width == 0 && pg.height == 0 ? fit_page(p, &pg, err) : AG_OK;
    plot_canvas c;
    if (status == AG_OK)
        status = canvas_open(&c, &pg, err);
    if (status != AG_OK)
        return status;
    lines_layout L = {.F = AG_PLOT_FONT_SIZE};
    if ((status = lines_layout_compute(&c, p, &L, err)) != AG_OK) {
        canvas_discard(&c);
        return status;
    }
    draw_grid_lines(&c, &L);
    cairo_save(c.cr);
    cairo_rectangle(c.cr, L.px, L.py, L.pw, L.ph);
    cairo_clip(c.cr);
    draw_bands(&c, p, &L);
    draw_lines(&c, p, &L);
    cairo_restore(c.cr);
    draw_axes(&c, p, &L);
    draw_legend(&c, p, &L);
    return canvas_close(&c, p->title ? p->title : "line chart", out, err);
}
