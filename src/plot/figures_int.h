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

/* The forest plot (forest_data.c): its rows, the groups of `aggregate`
 * over o->input (o->group_by, o->unit, o->level) with a value of
 * o->metric, sorted by the mean, largest first (ties: first appearance).
 * A label names the group keys that vary over the rows ("L3 H2"); constant
 * is the text of the first constant text key (the model), or NULL. */
typedef struct {
    size_t rows;
    char **labels;
    double *mean, *lo, *hi; /* one block from mean */
    char *constant;
} agp_forest;
int agp_forest_rows(const ag_run_plot_spec *o, agp_forest *out, ag_error *err);
void agp_forest_free(agp_forest *f);
int agp_plot_forest(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err);

/* The lens figure (lens.c): one query's scores under each normaliser. */
int agp_plot_lens(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                  ag_error *err);

/* The pieces of the array figures (npy.c) that lens.c shares: the (n, n)
 * matrix of --layer/--head in a [L, H, n, n], [L, n, n] or [n, n] array
 * (AG_ESHAPE, AG_ERANGE naming o->input); the n labels of `attngeom
 * tokenize --format json` as new strings, freed with agp_free_tokens. */
int agp_pick_matrix(const ag_run_plot_spec *o, const ag_array *a, const double **M, size_t *n,
                    ag_error *err);
int agp_read_tokens(const char *path, size_t n, char ***tokens, ag_error *err);
void agp_free_tokens(char **tokens, size_t n);
/* Render b on o's page; a renderer's error is prefixed by o->name. */
int agp_draw_bars(const ag_run_plot_spec *o, const ag_plot_bars *b, ag_plot_output *fig,
                  ag_error *err);

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
