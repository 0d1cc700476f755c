/* Internal prefix: cli_ (module src/cli/); the pieces of `attngeom plot` declared here keep plot_. */
/* plot_cli.h — the pieces of `attngeom plot` (cmd_plot.c): its options, and
 * the readers that turn its input into a figure. */
#ifndef AG_PLOT_CLI_H
#define AG_PLOT_CLI_H

#include "attngeom.h"

enum { PLOT_HEATMAP, PLOT_DEPTH, PLOT_ATTENTION, PLOT_SPECTRUM, PLOT_SIMILARITY, PLOT_PATCHES,
       PLOT_KIND_COUNT };

typedef struct {
    const char *input, *out_path;
    int kind;
    const char *metric, *model, *tokens, *title; /* title "" is none; NULL the default */
    int by_head, values;
    int layer, head, layer_given, head_given;
    int heads_per_layer; /* 0: not given */
    size_t grid_rows, grid_cols; /* --grid RxC: a ViT's patches (0: not given) */
    int query, query_given;      /* --query Q: patches' query row (default 0, CLS) */
    int relative;                /* --relative: depth against layer / last layer */
    double vmin, vmax;   /* NaN: not given */
    ag_plot_page page;
} plot_opts;

/* The figure of an attention, spectrum or similarity kind, from the .npy
 * INPUT (plot_npy.c); heatmap and depth, from records (plot_records.c).
 * Return 0, or 1 after printing the error. */
int plot_npy(const plot_opts *o, ag_plot_output *fig);
int plot_records(const plot_opts *o, ag_plot_output *fig);

/* 0, or 1 after printing when a grid of rows x cols is more than a figure
 * draws (AG_PLOT_MAX_CELLS): the message names the file, `what` ("a
 * heatmap") with its size in row_noun and col_noun, the cap, and `advice`,
 * how to get a figure. Checked before anything is drawn or allocated. */
int plot_grid_fits(const plot_opts *o, const char *what, size_t rows, const char *row_noun,
                   size_t cols, const char *col_noun, const char *advice);
/* n with thousands separated by commas ("65,536"), in buf. */
const char *plot_count(char buf[32], size_t n);

/* The title to draw: --title ("" for none) or the default. */
const char *plot_title(const plot_opts *o, const char *dflt);

#endif
