/* figures_int.h — the figures of ag_run_plot (attngeom/plot.h): the
 * pieces shared by those drawn from records (records.c) and from a .npy
 * (npy.c), and their entry points (figures.c dispatches). */
#ifndef AG_PLOT_FIGURES_INT_H
#define AG_PLOT_FIGURES_INT_H

#include "attngeom.h"

/* The figures of heatmap and depth (records.c), and of the array kinds
 * (npy.c). o is the caller's spec read whole, o->name set. */
int agp_plot_records(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err);
int agp_plot_npy(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err);

/* AG_OK, or AG_ELIMIT when a grid of rows x cols is more than a figure
 * draws (AG_PLOT_MAX_CELLS): the message names the input, `what` ("a
 * heatmap") with its size in row_noun and col_noun, the cap, and `advice`,
 * how to get a figure. Checked before anything is drawn or allocated. */
int agp_grid_fits(const ag_run_plot_spec *o, const char *what, size_t rows, const char *row_noun,
                  size_t cols, const char *col_noun, const char *advice, ag_error *err);
/* n with thousands separated by commas ("65,536"), in buf. */
const char *agp_count(char buf[32], size_t n);
/* The title to draw: o->title ("" for none) or the default. */
const char *agp_title(const ag_run_plot_spec *o, const char *dflt);
/* Render g or p on o's page; a renderer's error is prefixed by o->name. */
int agp_draw_grid(const ag_run_plot_spec *o, const ag_plot_grid *g, ag_plot_output *fig,
                  ag_error *err);
int agp_draw_lines(const ag_run_plot_spec *o, const ag_plot_lines *p, ag_plot_output *fig,
                   ag_error *err);

#endif
