/* figures.c — ag_run_plot: the figure `attngeom plot` writes, as bytes.
 * The input is read and turned into a grid or lines: heatmap and depth
 * from records (records.c), attention, spectrum, similarity and patches
 * from a .npy (npy.c); the drawing is grid.c's and lines.c's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/sized_int.h"
#include "figures_int.h"

static const char *const kind_names[AG_PLOT_KIND_COUNT] = {
    [AG_PLOT_HEATMAP] = "heatmap", [AG_PLOT_DEPTH] = "depth", [AG_PLOT_ATTENTION] = "attention",
    [AG_PLOT_SPECTRUM] = "spectrum", [AG_PLOT_SIMILARITY] = "similarity",
    [AG_PLOT_PATCHES] = "patches", [AG_PLOT_FOREST] = "forest", [AG_PLOT_LENS] = "lens"};

const char *const ag_plot_by_head_refusal =
    "depth --by head would join head h of one layer to head h of the next, which are "
    "unrelated heads (a head's index names no head across layers); draw the heads with "
    "--kind heatmap (layer x head) or --kind forest (each head's mean and interval)";

const char *ag_plot_kind_name(int kind)
{
    return kind >= 0 && kind < AG_PLOT_KIND_COUNT ? kind_names[kind] : NULL;
}

int ag_plot_kind_from_name(const char *name)
{
    for (int k = 0; name && k < AG_PLOT_KIND_COUNT; k++)
        if (!strcmp(name, kind_names[k]))
            return k;
    return -1;
}

const char *agp_title(const ag_run_plot_spec *o, const char *dflt)
{
    if (o->title)
        return *o->title ? o->title : NULL;
    return dflt;
}

const char *agp_count(char buf[32], size_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%zu", n), o = 0;
    for (int k = 0; k < len; k++) {
        if (k && (len - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[k];
    }
    buf[o] = '\0';
    return buf;
}

int agp_grid_fits(const ag_run_plot_spec *o, const char *what, size_t rows, const char *row_noun,
                  size_t cols, const char *col_noun, const char *advice, ag_error *err)
{
    if (rows <= AG_PLOT_MAX_CELLS / cols)
        return AG_OK;
    char cells[32], cap[32];
    /* rows·cols may overflow only past 2^64: say "more than" then */
    size_t n = rows > SIZE_MAX / cols ? SIZE_MAX : rows * cols;
    return ag_error_set(err, AG_ELIMIT, "%s: %s of %zu %s x %zu %s has %s%s cells, more than the "
                        "%s a figure draws (each cell is a shape in the file); %s", o->input, what,
                        rows, row_noun, cols, col_noun, n == SIZE_MAX ? "over " : "",
                        agp_count(cells, n), agp_count(cap, AG_PLOT_MAX_CELLS), advice);
}

/* A renderer's status, its message after the figure's name. */
static int drawn(const ag_run_plot_spec *o, int st, const ag_error *inner, ag_error *err)
{
    return st == AG_OK ? AG_OK : ag_error_set(err, st, "%s: %s", o->name, inner->message);
}

int agp_draw_grid(const ag_run_plot_spec *o, const ag_plot_grid *g, ag_plot_output *fig,
                  ag_error *err)
{
    ag_error inner = {0};
    return drawn(o, ag_plot_grid_render(g, &o->page, fig, &inner), &inner, err);
}

int agp_draw_lines(const ag_run_plot_spec *o, const ag_plot_lines *p, ag_plot_output *fig,
                   ag_error *err)
{
    ag_error inner = {0};
    return drawn(o, ag_plot_lines_render(p, &o->page, fig, &inner), &inner, err);
}

int agp_draw_bars(const ag_run_plot_spec *o, const ag_plot_bars *b, ag_plot_output *fig,
                  ag_error *err)
{
    ag_error inner = {0};
    return drawn(o, ag_plot_bars_render(b, &o->page, fig, &inner), &inner, err);
}

int ag_run_plot(const ag_run_plot_spec *s, ag_plot_output *out, ag_error *err)
{
    ag_run_plot_spec o = AG_RUN_PLOT_SPEC_DEFAULT;
    *out = (ag_plot_output){0};
    int st = AG_SIZED_READ(&o, s, ag_run_plot_spec, err);
    if (st != AG_OK)
        return st;
    if (!ag_plot_kind_name(o.kind) || !o.input)
        return ag_error_set(err, AG_EINVAL, "ag_run_plot: %s", o.input ? "unknown kind" : "no input");
    if (!o.name)
        o.name = "figure";
    int records = o.kind == AG_PLOT_HEATMAP || o.kind == AG_PLOT_DEPTH || o.kind == AG_PLOT_FOREST;
    if (records && !o.metric)
        return ag_error_set(err, AG_EINVAL, "--kind %s needs --metric K", kind_names[o.kind]);
    if (o.kind == AG_PLOT_DEPTH && o.by_head)
        return ag_error_set(err, AG_EINVAL, "%s", ag_plot_by_head_refusal);
    if (o.kind == AG_PLOT_FOREST && !(o.level > 0 && o.level < 1))
        return ag_error_set(err, AG_EINVAL, "--ci takes a level in (0, 1), not %g", o.level);
    if (o.kind == AG_PLOT_FOREST)
        return agp_plot_forest(&o, out, err);
    return records ? agp_plot_records(&o, out, err) : agp_plot_npy(&o, out, err);
}
