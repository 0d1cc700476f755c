/* Internal prefix: agp_ (module src/plot/; today canvas_, renamed in a later step of plan-25). */
/* plot_int.h — private interface of the plotting subsystem (src/plot/):
 * limits, and the canvas every figure draws on (canvas.c): a cairo surface
 * of the page's format whose bytes land in memory, and text helpers. */
#ifndef AG_PLOT_INT_H
#define AG_PLOT_INT_H

#include <cairo.h>

#include "attngeom/plot.h"
#include "base/vec.h"

#define AG_PLOT_MIN_POINTS 72.0
#define AG_PLOT_MAX_POINTS 14400.0
#define AG_PLOT_MIN_DPI 18.0
#define AG_PLOT_MAX_DPI 1200.0
#define AG_PLOT_MAX_TICKS 64

/* The font of every text, as fontconfig names it: DejaVu Sans ships with
 * Debian's fontconfig (fonts-dejavu-core). */
#define AG_PLOT_FONT "DejaVu Sans"
#define AG_PLOT_FONT_SIZE 10.0 /* labels and ticks, points */

/* Okabe & Ito's colour-blind-safe palette (lines.c), for lines and bars. */
extern const double agp_palette[8][3];

typedef struct {
    ag_plot_format format;
    cairo_surface_t *surface;
    cairo_t *cr;
    double width, height; /* points */
    agb_buf bytes;        /* the file's bytes so far (SVG, PDF), or the PNG's */
    int out_of_memory;    /* the stream could not grow */
} plot_canvas;

/* A white page of page->format; AG_EINVAL for a size or dpi out of range,
 * AG_EIO when cairo cannot make the surface. */
int canvas_open(plot_canvas *c, const ag_plot_page *page, ag_error *err);
/* Finish the page and hand its bytes to out (SVG: with cairo's surface ids
 * numbered from 1, see canvas.c). Always releases the canvas. `what` names
 * the figure in messages. */
int canvas_close(plot_canvas *c, const char *what, ag_plot_output *out, ag_error *err);
/* Release a canvas without output (after a failure). */
void canvas_discard(plot_canvas *c);

/* ---- text ---- */

void canvas_font(plot_canvas *c, double size, int bold);
/* Width of s in the current font (s escaped as canvas_text draws it). */
double canvas_text_width(plot_canvas *c, const char *s);
/* A label (a token on an axis, a line's name in the legend) is drawn to
 * its first AG_PLOT_MAX_LABEL characters and an ellipsis: a token of
 * thousands of characters would otherwise take a page of its own. */
#define AG_PLOT_MAX_LABEL 48
double canvas_label_width(plot_canvas *c, const char *s);
void canvas_label(plot_canvas *c, const char *s, double x, double y, double ha, double va,
                  double angle);
/* Draw s with its anchor at (x, y), rotated by `angle` radians
 * (counter-clockwise on the page): ha 0/0.5/1 puts the anchor at the
 * text's left/centre/right, va 0/0.5/1 at its top/middle/bottom (the font's
 * ascent and descent, not the glyphs', so that labels line up). Bytes that
 * are not UTF-8, and control characters, are drawn as \xNN. */
void canvas_text(plot_canvas *c, const char *s, double x, double y, double ha, double va,
                 double angle);
/* "10" with the exponent e raised, anchored as canvas_text (no rotation). */
void canvas_power_of_ten(plot_canvas *c, int e, double x, double y, double ha, double va);
/* Its width. */
double canvas_power_width(plot_canvas *c, int e);

#endif
