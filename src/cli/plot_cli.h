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

/* The title to draw: --title ("" for none) or the default. */
const char *plot_title(const plot_opts *o, const char *dflt);

#endif
