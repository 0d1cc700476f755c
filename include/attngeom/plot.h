/* attngeom/plot.h — figures: a grid of values (a metric over layer × head,
 * an attention matrix, a head-similarity matrix), lines (a metric against
 * depth, a spectrum on a log scale) and small multiples of bars (one query
 * under several normalisers), drawn with cairo as SVG, PDF or PNG.
 * docs/cli.md, "plot", shows what `attngeom plot` makes of them.
 *
 * Publication figures: vector output (SVG, PDF; PNG at a chosen
 * resolution), the viridis colour map (sequential, perceptually uniform,
 * readable with colour-vision deficiencies), DejaVu Sans text, labelled axes
 * with "nice" ticks, a colour bar naming the quantity. The same input gives
 * the same bytes: no dates, no ids that depend on what the process drew
 * before. Missing values (NaN) are drawn as light grey cells or as gaps in
 * a line.
 *
 * Conventions as in core.h: int status codes, an optional ag_error, nothing
 * printed; every pointer is borrowed for the duration of the call.
 */
#ifndef ATTNGEOM_PLOT_H
#define ATTNGEOM_PLOT_H

#include <math.h> /* NAN, in AG_PLOT_GRID_DEFAULT */
#include <stddef.h>
#include "core.h"
#include "normalizers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- output ------------------------------------------------------------- */

typedef enum { AG_PLOT_SVG, AG_PLOT_PDF, AG_PLOT_PNG } ag_plot_format;

/* The format a file name asks for by its suffix (".svg", ".pdf", ".png",
 * any case); -1 for any other name. */
AG_EXPORT int ag_plot_format_from_path(const char *path);

/* The page: its size in points (1/72 inch) and, for PNG, the resolution:
 * the image is round(width·dpi/72) × round(height·dpi/72) pixels. Carries
 * its size (ABI rule, core.h): start from AG_PLOT_PAGE_DEFAULT (SVG, 432 ×
 * 324 points, 150 dpi). A width and height of 0 ask for the page that fits
 * the figure: 432 × 324, grown (to at most 2880 points a side) where the
 * labels, cells or legend need room: a grid's margins hold every label at
 * the full 10-point font and its cells get 12 points each (up to a grid of
 * 1152 points a side); a line chart's legend holds every entry at 10
 * points beside a plot 240 points wide. */
typedef struct {
    size_t size;          /* sizeof(ag_plot_page), set by the macro */
    ag_plot_format format;
    double width, height; /* points, each in [72, 14400]; both 0: fit the figure */
    double dpi;           /* PNG: in [18, 1200] */
} ag_plot_page;
#define AG_PLOT_PAGE_DEFAULT \
    {.size = sizeof(ag_plot_page), .format = AG_PLOT_SVG, .width = 432, .height = 324, .dpi = 150}

/* The pixel size of a PNG page (0 for a size out of range). */
AG_EXPORT size_t ag_plot_png_pixels(double points, double dpi);

/* A rendered figure: the bytes of the file (malloc'd; free with
 * ag_plot_output_free). */
typedef struct {
    unsigned char *data;
    size_t len;
} ag_plot_output;
AG_EXPORT void ag_plot_output_free(ag_plot_output *out);

/* Release what cairo and fontconfig keep for the whole process (font
 * caches, which a leak checker would otherwise report): for a program about
 * to exit, when no figure is being drawn by any thread. Drawing afterwards
 * works (the caches fill again). */
AG_EXPORT void ag_plot_release_caches(void);

/* Load fontconfig's configuration and find the figures' font (DejaVu
 * Sans, or what fontconfig substitutes): what the first figure would do,
 * done when the caller chooses. fontconfig writes its own diagnostics on
 * standard error (dozens of lines when memory runs out while it parses its
 * configuration); a program that keeps its stderr to itself calls this
 * once, with stderr pointed elsewhere, before drawing. AG_ENOMEM when
 * fontconfig cannot load (it fails only for want of memory). */
AG_EXPORT int ag_plot_fonts_init(ag_error *err);

/* ---- the colour map ------------------------------------------------------ */

/* The 256 colours of viridis (van der Walt & Smith 2015), sRGB in [0, 1]:
 * matplotlib's table (lib/matplotlib/_cm_listed.py, _viridis_data; CC0). */
extern const double ag_plot_viridis_table[256][3];

/* The colour of t in [0, 1] as matplotlib's 256-colour ListedColormap maps
 * it: entry min(floor(256·t), 255); t below 0 is entry 0, above 1 entry 255.
 * NaN gives the colour of missing values (light grey, 0.85). */
AG_EXPORT void ag_plot_viridis(double t, double rgb[3]);

/* ---- axes ----------------------------------------------------------------- */

/* Linear ticks for [lo, hi] (lo < hi, finite): the step is the smallest
 * m·10^k with m in {1, 2, 5} that gives at most max_ticks (2 to 64) ticks,
 * and the ticks are the multiples j·step in [lo, hi], each computed as
 * j·m·10^k (j·m/10^−k for k < 0, so that the third tick of step 0.1 is
 * 0.3, not 0.30000000000000004). ticks has room for max_ticks values. AG_EINVAL for
 * an empty or non-finite range or max_ticks out of range. */
AG_EXPORT int ag_plot_ticks(double lo, double hi, int max_ticks, double *ticks, int *count,
                            double *step);

/* A linear axis [lo, hi] for data in [dmin, dmax]: the data range widened
 * to the multiples of a step around it, the smallest step m·10^k (m in {1,
 * 2, 5}) for which the widened range holds at most max_ticks (3 to 64)
 * multiples, so that its first and last tick are its ends. A single
 * value v (dmin == dmax) becomes [v − 1, v + 1] when v is 0, else
 * [v − |v|/2, v + |v|/2] before widening. AG_EINVAL for non-finite data. */
AG_EXPORT int ag_plot_nice_range(double dmin, double dmax, int max_ticks, double *lo, double *hi);

/* A log10 axis for positive data in [dmin, dmax]: lo = 10^floor(log10 dmin),
 * hi = 10^ceil(log10 dmax), one decade more above when they are equal. The
 * ticks are the powers of ten 10^e in [lo, hi] whose e is a multiple of s,
 * s the first of 1, 2, 5, 10, 20, 50, ... that gives at most max_ticks (2 to
 * 64); *exponents receives each e. AG_EINVAL for data that are not finite
 * and positive. */
AG_EXPORT int ag_plot_log_axis(double dmin, double dmax, int max_ticks, double *lo, double *hi,
                               int *exponents, int *count);

/* Where v lies on an axis from lo to hi, as a fraction (0 at lo, 1 at hi):
 * (v − lo)/(hi − lo) on a linear axis, (log10 v − log10 lo)/(log10 hi −
 * log10 lo) on a log axis (NaN for v ≤ 0). */
AG_EXPORT double ag_plot_position(double v, double lo, double hi, int log_scale);

/* A tick label: j·step written with as many decimals as step needs (0.2 →
 * "0.2", 5 → "5", 0.05 → "0.05"), in scientific notation ("2e-05",
 * "1.5e+06") when step < 1e-3 or |v| ≥ 1e6; "-0" is "0". Returns what
 * snprintf returns. */
AG_EXPORT int ag_plot_tick_label(char *buf, size_t size, double v, double step);

/* ---- figures ------------------------------------------------------------- */

/* The most cells a grid figure draws (256 x 256) and the most points a
 * line chart draws over all its lines. An SVG or PDF holds a shape per cell
 * or point (about 200 bytes of SVG a cell): a grid whose sides come from a
 * small input (a heatmap of 1000 layers x 1000 heads from 1000 records)
 * would be hundreds of megabytes that no viewer shows at a readable size.
 * More is AG_ELIMIT, refused before anything is drawn. */
#define AG_PLOT_MAX_CELLS 65536
#define AG_PLOT_MAX_LINE_POINTS 65536

/* A grid of values, one coloured cell each, with a colour bar. Carries its
 * size (ABI rule, core.h): start from AG_PLOT_GRID_DEFAULT (no cells, no
 * labels, the colour range the data's). */
typedef struct {
    size_t size;                    /* sizeof(ag_plot_grid), set by the macro */
    size_t rows, cols;
    const double *values;           /* (rows, cols) row-major; NaN: no value */
    const char *const *row_labels;  /* (rows), or NULL: 0, 1, ... */
    const char *const *col_labels;  /* (cols), or NULL: 0, 1, ... */
    const char *title;              /* above the grid, or NULL */
    const char *row_title;          /* the vertical axis ("layer"), or NULL */
    const char *col_title;          /* the horizontal axis ("head"), or NULL */
    const char *value_title;        /* the colour bar's label (the metric) */
    int show_values;                /* write each value (3 digits) in its cell, at the
                                       size that fits (a fitted page grows the cells
                                       until the values fit at 7 points) */
    int square;                     /* square cells (a matrix), else fill the page */
    double vmin, vmax;              /* the colour range; NaN: the data's */
    /* A dendrogram above the grid: the (cols − 1) × 4 linkage matrix of
     * ag_plot_cluster_order over the columns' items, the columns being in
     * its leaf order (leaves_list); NULL: none. */
    const double *linkage;
} ag_plot_grid;
#define AG_PLOT_GRID_DEFAULT {.size = sizeof(ag_plot_grid), .vmin = NAN, .vmax = NAN}

/* Render a grid. Labels are drawn as given (UTF-8; bytes that are not are
 * shown as \xNN); when the cells are too small for every label, every k-th
 * is drawn. AG_EINVAL (no cells, vmin ≥ vmax, a page out of range,
 * show_values on cells too small for the values at 4 points: the message
 * gives the cell size they need; a linkage that is not a tree), AG_ELIMIT (more than AG_PLOT_MAX_CELLS cells), AG_ENOMEM, AG_EIO (cairo
 * failed; the message says why). */
AG_EXPORT int ag_plot_grid_render(const ag_plot_grid *g, const ag_plot_page *page, ag_plot_output *out,
                                  ag_error *err);

/* One line of a line chart: points (x[i], y[i]); a NaN y (or a y ≤ 0 on a
 * log axis) breaks the line there. lo/hi, when given, are a band drawn
 * behind the line (a confidence interval) where both are finite. */
typedef struct {
    const char *label; /* legend entry, or NULL */
    size_t count;
    const double *x, *y;   /* (count) */
    const double *lo, *hi; /* (count) or NULL */
} ag_plot_series;

/* A line chart. Carries its size (ABI rule, core.h): start from
 * AG_PLOT_LINES_DEFAULT (no series, linear axes). ag_plot_series, an
 * element of an array, is fixed (a new property of a line would come as a
 * new field here). */
typedef struct {
    size_t size;   /* sizeof(ag_plot_lines), set by the macro */
    size_t nseries;
    const ag_plot_series *series;
    const char *title, *x_title, *y_title;
    int log_y;     /* log10 y axis */
    int integer_x; /* x ticks at integers only (layers, indices) */
    int markers;   /* a dot at each point */
} ag_plot_lines;
#define AG_PLOT_LINES_DEFAULT {.size = sizeof(ag_plot_lines)}

/* Render a line chart: Okabe & Ito's colour-blind-safe palette of eight
 * colours, then the same with dashes; a legend right of the axes when any
 * series has a label. AG_EINVAL (no finite point, a page out of range),
 * AG_ELIMIT (more than AG_PLOT_MAX_LINE_POINTS points), AG_ENOMEM, AG_EIO. */
AG_EXPORT int ag_plot_lines_render(const ag_plot_lines *p, const ag_plot_page *page, ag_plot_output *out,
                                   ag_error *err);

/* ---- clustering ---------------------------------------------------------- */

/* The most items ag_plot_cluster_order clusters (its time is O(n³)). */
#define AG_PLOT_MAX_CLUSTER 2048

/* Average-linkage (UPGMA) hierarchical clustering of n items from their
 * (n, n) distance matrix dist (row-major, symmetric, finite; the diagonal
 * is not read): the order of the leaves of its dendrogram into order (n),
 * as scipy.cluster.hierarchy.leaves_list(linkage(squareform(dist),
 * method="average")) gives it, and, when linkage is not NULL, scipy's
 * linkage matrix Z into it ((n − 1) × 4: the two clusters merged, smaller
 * id first, leaves 0..n−1 and row i's cluster n + i; their distance; the
 * new cluster's size), rows by increasing distance. The same tree as
 * scipy's when no two distances tie; ties merge the pair of least (smaller
 * id, larger id). AG_EINVAL (n = 0, a matrix that is not finite and
 * symmetric), AG_ELIMIT (n > AG_PLOT_MAX_CLUSTER), AG_ENOMEM. */
AG_EXPORT int ag_plot_cluster_order(const double *dist, size_t n, size_t *order,
                                    double *linkage, ag_error *err);

/* A forest plot: one row per head or group, its mean as a dot and its
 * confidence interval as a bar, the first row at the top, with a dashed
 * vertical reference line (a baseline: 1 for the ratio scores). Carries
 * its size (ABI rule, core.h): start from AG_PLOT_FOREST_DEFAULT (no rows,
 * no reference line). */
typedef struct {
    size_t size;                 /* sizeof(ag_plot_forest), set by the macro */
    size_t rows;
    const char *const *labels;   /* (rows), or NULL: 0, 1, ... */
    const double *mean;          /* (rows); NaN: no dot */
    const double *lo, *hi;       /* (rows) or NULL; NaN: no bar */
    double ref;                  /* the reference line's x; NaN: none */
    const char *title, *x_title; /* or NULL */
} ag_plot_forest;
#define AG_PLOT_FOREST_DEFAULT {.size = sizeof(ag_plot_forest), .ref = NAN}
/* The most rows a forest plot draws: on the largest fitted page (2880
 * points) each of them has 5.6 points, the smallest readable label. */
#define AG_PLOT_MAX_FOREST_ROWS 480

/* Render a forest plot. The labels' font is 10 points, smaller when the
 * page (given) is too short for the rows at that size, down to 4 points.
 * AG_EINVAL (no rows, no finite value, a page out of range or too small),
 * AG_ELIMIT (more than AG_PLOT_MAX_FOREST_ROWS rows), AG_ENOMEM, AG_EIO. */
AG_EXPORT int ag_plot_forest_render(const ag_plot_forest *f, const ag_plot_page *page,
                                    ag_plot_output *out, ag_error *err);

/* ---- small multiples of bars --------------------------------------------- */

/* The most bars a bar figure draws over all its panels (a shape each). */
#define AG_PLOT_MAX_BARS 65536
/* The most panels a bar figure stacks. */
#define AG_PLOT_MAX_PANELS 32

/* Small multiples of bar charts over the same categories (the keys of one
 * query row under several normalisers): one panel per row of values,
 * stacked top to bottom, each on the same y range, so that a category's
 * bars line up across the panels (Cleveland & McGill 1984: position on a
 * common aligned scale is the comparison read best). The categories are
 * labelled once, under the last panel. Carries its size (ABI rule,
 * core.h): start from AG_PLOT_BARS_DEFAULT (no panels, the y range the
 * data's). */
typedef struct {
    size_t size;                       /* sizeof(ag_plot_bars), set by the macro */
    size_t panels, bars;
    const double *values;              /* (panels, bars) row-major; NaN: the category is
                                          absent from that panel (a light grey column) */
    const char *const *panel_titles;   /* (panels), or NULL: none */
    const int *colours;                /* (panels): index into Okabe & Ito's palette of
                                          eight (lines.c's order), or NULL: the first */
    const char *const *labels;         /* (bars), or NULL: 0, 1, ... */
    const char *title, *x_title, *y_title; /* or NULL */
    double ymin, ymax;                 /* the shared y range; NaN: the data's (and 0) */
} ag_plot_bars;
#define AG_PLOT_BARS_DEFAULT {.size = sizeof(ag_plot_bars), .ymin = NAN, .ymax = NAN}

/* Render small multiples of bars. A page of 0 x 0 fits the figure: 432
 * points wide or as wide as 8 points a bar needs, up to 864 (thinner bars
 * past it), and 72 points of plot a panel (at most 2880 points high).
 * Labels wider than a bar are drawn upright, every k-th when too close;
 * without labels the indices are drawn at the steps of a numeric axis. AG_EINVAL (no
 * panels or bars, no finite value, ymin ≥ ymax, a page out of range or too
 * small), AG_ELIMIT (more than AG_PLOT_MAX_BARS bars or AG_PLOT_MAX_PANELS
 * panels), AG_ENOMEM, AG_EIO. */
AG_EXPORT int ag_plot_bars_render(const ag_plot_bars *b, const ag_plot_page *page,
                                  ag_plot_output *out, ag_error *err);

/* ---- the lens figure's data ------------------------------------------------ */

/* One panel of the lens figure: a normaliser and its parameter (softmax:
 * the temperature T; entmax: α; 1 for the others), as ag_normalize_row
 * takes them. */
typedef struct {
    ag_normalizer kind;
    double param;
} ag_plot_lens_panel;

/* One query's row of scores s[0..n-1] (−inf: a masked key) under each of
 * the `count` panels' normalisers (issue 28, "Softmax as a lens";
 * attngeom/normalizers.h): P (count, n) row-major, masked keys NaN (absent
 * from the figure, not a probability of 0), kept[k] the keys panel k keeps
 * (ag_normalizer_support: a probability above the tie floor of
 * normalizers.h; all allowed keys for softmax unless exp underflows, fewer
 * for sparsemax and entmax), *allowed the keys not
 * masked. Errors: AG_EINVAL (n or count 0, NULL, a linear panel: it needs
 * Q and K, not scores; a row with no allowed key, naming it), those of
 * ag_normalize_row (AG_ENONFINITE for a NaN or +inf score) prefixed by the
 * panel. Nothing is allocated; P and kept are the caller's. */
AG_EXPORT int ag_plot_lens_rows(const double *s, size_t n, const ag_plot_lens_panel *panels,
                                size_t count, double *P, size_t *kept, size_t *allowed,
                                ag_error *err);

/* ---- figures of attngeom's outputs (`attngeom plot`) ------------------- */

/* What a figure of ag_run_plot draws (`attngeom plot --help`). */
typedef enum {
    AG_PLOT_HEATMAP,    /* a metric over layer x head, from records */
    AG_PLOT_DEPTH,      /* a metric against layer, one line per model or head, from records */
    AG_PLOT_ATTENTION,  /* one head's attention matrix, from a .npy */
    AG_PLOT_SPECTRUM,   /* that matrix's singular values, log scale */
    AG_PLOT_SIMILARITY, /* the [K, K] matrix of `attngeom similarity -o` */
    AG_PLOT_PATCHES,    /* one query's weights on a ViT's patch grid */
    AG_PLOT_FOREST,     /* a metric's mean and interval per head or group, from records */
    AG_PLOT_LENS,       /* one query's scores under several normalisers, from a scores .npy */
    AG_PLOT_KIND_COUNT
} ag_plot_kind;

/* The kind's name ("heatmap", ...), NULL out of range; the kind of a
 * name, -1 for an unknown one. */
AG_EXPORT const char *ag_plot_kind_name(int kind);
AG_EXPORT int ag_plot_kind_from_name(const char *name);

/* Why depth --by head is refused (AG_EINVAL): a line per head index
 * joins unrelated heads of successive layers. */
extern const char *const ag_plot_by_head_refusal;

/* What to draw and from what: the options of `attngeom plot`. Carries its
 * size (ABI rule, core.h): start from AG_RUN_PLOT_SPEC_DEFAULT. Every
 * pointer is borrowed for the call. */
typedef struct {
    size_t size;               /* sizeof(ag_run_plot_spec), set by the macro */
    int kind;                  /* ag_plot_kind */
    const char *input;         /* records (heatmap, depth: JSON, JSONL, CSV) or a .npy */
    const char *name;          /* the figure in messages of drawing (the CLI: -o); NULL: "figure" */
    const char *metric;        /* heatmap, depth: the record key (required) */
    const char *model;         /* heatmap, depth: only this model's records; NULL: all */
    const char *tokens;        /* attention: `tokenize --format json` file; NULL: indices */
    const char *title;         /* NULL: what the figure shows; "": none */
    int by_head;               /* depth: refused (ag_plot_by_head_refusal says why) */
    int values;                /* write each value in its cell */
    int relative;              /* depth: x = layer / last layer */
    int layer, head;           /* attention, spectrum, patches: -1 not given (0; given, the
                                  array must have that axis) */
    int heads_per_layer;       /* similarity: labels L<k/H>H<k%H>; 0: indices */
    size_t grid_rows, grid_cols; /* attention, patches: a ViT's patch grid; 0: square */
    int query;                 /* patches, lens: the query row; -1 not given (patches: 0,
                                  the CLS token; lens: the last row) */
    double vmin, vmax;         /* the colour range; NaN: the data's (0 for the matrices) */
    ag_plot_page page;         /* format, size (0 x 0: fit), dpi */
    /* forest: the groups and their intervals as `aggregate` makes them
     * (attngeom/aggregate.h): group_by the --by keys, comma-separated
     * (NULL: the default grouping, one row per model, layer and head);
     * unit the --unit keys (NULL: the default unit); level the interval's
     * confidence, in (0, 1); ref the reference line (NaN: none). */
    const char *group_by, *unit;
    double level, ref;
    /* similarity: 0 the heads ordered by average-linkage clustering of the
     * distances, with its dendrogram (ag_plot_cluster_order); 1 in the
     * matrix's order (--order layer) */
    int order_layer;
    /* lens: the normalisers, comma-separated names as ag_normalizer_parse
     * takes them (not linear; NULL: "softmax,sparsemax,entmax15"), and
     * softmax's temperatures, a panel each (NULL or 0 of them: 0.5, 1, 2);
     * the row is --layer/--head's query `query` (-1: the last). */
    const char *normalizers;
    const double *temperatures;
    size_t ntemperatures;
    /* attention, patches: register tokens between the CLS token and the
     * patch grid (DINOv2 with registers: `info`'s "registers"; Darcet et
     * al. 2024, Sec. 2.2): tokens 1..registers, labelled [REG0]...; 0: none */
    size_t registers;
    /* encoder–decoder models (issue 30). attention: the target's
     * `tokenize --format json` file, labels of the rows of a rectangular
     * [.., n_target, n_source] cross-attention (tokens then labels its
     * columns, the source); NULL: indices. heatmap, depth: only the records
     * whose "stack" is this (encoder, decoder, cross); NULL: the records
     * must not mix stacks (AG_EFORMAT naming --stack). */
    const char *target_tokens;
    const char *stack;
} ag_run_plot_spec;
#define AG_RUN_PLOT_SPEC_DEFAULT                                                          \
    {.size = sizeof(ag_run_plot_spec), .kind = AG_PLOT_HEATMAP, .layer = -1, .head = -1, \
     .query = -1, .vmin = NAN, .vmax = NAN, .level = 0.95, .ref = NAN,                   \
     .page = {.size = sizeof(ag_plot_page), .format = AG_PLOT_SVG, .dpi = 150}}

/* The bytes of the figure `attngeom plot` writes for s, into *out (the
 * caller's: ag_plot_output_free). Reads s->input (and s->tokens); writes
 * nothing. Errors, the CLI's messages after "attngeom: ": those of reading
 * the input (AG_EIO, AG_EFORMAT, ...); AG_EFORMAT for records or arrays
 * that do not make the figure (no record holds the metric, records of
 * several models for one-model figures, an array of the wrong shape);
 * AG_ERANGE for --layer/--head/--query outside the array; AG_ELIMIT for a
 * figure past AG_PLOT_MAX_CELLS or the lines a depth figure draws; AG_EINVAL
 * for a spec without metric where one is needed, or an unknown kind; then
 * the renderers' (prefixed by s->name). Fonts: ag_plot_fonts_init first if
 * fontconfig's own messages must not reach stderr. */
AG_EXPORT int ag_run_plot(const ag_run_plot_spec *s, ag_plot_output *out, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
