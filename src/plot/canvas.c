/* canvas.c — the page a figure is drawn on: a cairo surface of the format
 * asked for, written to memory, and the text helpers of the figures.
 *
 * Same input, same bytes (checked by tests/cli/plot.sh and test_plot.c):
 *  - PDF: cairo 1.16 writes the creation date into the document info;
 *    CAIRO_PDF_METADATA_CREATE_DATE and _MOD_DATE set to "" leave both out
 *    (cairo-pdf-interchange.c parses the string and drops one that is no
 *    ISO 8601 date). No /ID is written by 1.16.
 *  - SVG: the page's group and embedded images are named "surfaceN" and
 *    "imageN" after a process-wide counter of cairo surfaces, so a second
 *    figure drawn by the same process would differ; canvas_close renumbers
 *    those names from 1.
 *  - PNG: libpng writes no time chunk; the pixels depend on the fonts
 *    fontconfig finds (DejaVu Sans).
 * Fonts are used unhinted, with unhinted metrics, on every surface: the
 * layout of a PNG is that of its SVG. */
#include <cairo-pdf.h>
#include <fontconfig/fontconfig.h>
#include <cairo-svg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attngeom.h"
#include "plot_int.h"
#include "base/sized_int.h"

static cairo_status_t grow_write(void *closure, const unsigned char *data, unsigned int length)
{
    plot_canvas *c = closure;
    if (agb_buf_put(&c->bytes, data, length) != 0) {
        c->out_of_memory = 1;
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

static int page_ok(const ag_plot_page *p)
{
    int sized = p->width >= AG_PLOT_MIN_POINTS && p->width <= AG_PLOT_MAX_POINTS &&
                p->height >= AG_PLOT_MIN_POINTS && p->height <= AG_PLOT_MAX_POINTS;
    int known = p->format == AG_PLOT_SVG || p->format == AG_PLOT_PDF || p->format == AG_PLOT_PNG;
    return sized && known &&
           (p->format != AG_PLOT_PNG || (p->dpi >= AG_PLOT_MIN_DPI && p->dpi <= AG_PLOT_MAX_DPI));
}

static cairo_surface_t *make_surface(plot_canvas *c, const ag_plot_page *p)
{
    if (p->format == AG_PLOT_SVG)
        return cairo_svg_surface_create_for_stream(grow_write, c, p->width, p->height);
    if (p->format == AG_PLOT_PDF) {
        cairo_surface_t *s = cairo_pdf_surface_create_for_stream(grow_write, c, p->width, p->height);
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATE_DATE, "");
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_MOD_DATE, "");
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "attngeom " AG_VERSION_STRING);
        return s;
    }
    return cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ag_plot_png_pixels(p->width, p->dpi),
                                      (int)ag_plot_png_pixels(p->height, p->dpi));
}

int canvas_open(plot_canvas *c, const ag_plot_page *given, ag_error *err)
{
    memset(c, 0, sizeof *c);
    ag_plot_page known = AG_PLOT_PAGE_DEFAULT;
    if (AG_SIZED_READ(&known, given, ag_plot_page, err) != AG_OK)
        return AG_EINVAL;
    const ag_plot_page *page = &known;
    if (!page_ok(page))
        return ag_error_set(err, AG_EINVAL,
                            "figure page %gx%g points%s is out of range (%g to %g points, %g to "
                            "%g dpi)", page->width, page->height,
                            page->format == AG_PLOT_PNG ? " at the dpi given" : "",
                            AG_PLOT_MIN_POINTS, AG_PLOT_MAX_POINTS, AG_PLOT_MIN_DPI, AG_PLOT_MAX_DPI);
    c->format = page->format;
    c->width = page->width;
    c->height = page->height;
    c->surface = make_surface(c, page);
    cairo_status_t st = cairo_surface_status(c->surface);
    if (st == CAIRO_STATUS_SUCCESS) {
        c->cr = cairo_create(c->surface);
        st = cairo_status(c->cr);
    }
    if (st != CAIRO_STATUS_SUCCESS) {
        canvas_discard(c);
        return ag_error_set(err, st == CAIRO_STATUS_NO_MEMORY ? AG_ENOMEM : AG_EIO,
                            "cannot create the figure: cairo: %s", cairo_status_to_string(st));
    }
    if (page->format == AG_PLOT_PNG)
        cairo_scale(c->cr, page->dpi / 72.0, page->dpi / 72.0);
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_set_font_options(c->cr, fo);
    cairo_font_options_destroy(fo);
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    canvas_font(c, AG_PLOT_FONT_SIZE, 0);
    return AG_OK;
}

void canvas_discard(plot_canvas *c)
{
    if (c->cr)
        cairo_destroy(c->cr);
    if (c->surface) {
        /* finishing writes the rest of an SVG or PDF into c->bytes */
        cairo_surface_finish(c->surface);
        cairo_surface_destroy(c->surface);
    }
    free(c->bytes.b);
    memset(c, 0, sizeof *c);
}

/* The names cairo 1.16 gives SVG elements after process-wide counters: the
 * page's group ("surfaceN") and embedded images ("imageN", the surface's
 * id). */
static const char *const counted_names[2] = {"surface", "image"};

/* Does one of counted_names followed by digits start at s[i], as an id or a
 * reference ('"' or '#' before it, '"' after)? Returns the end of the
 * digits (0 if not) and the name's index in *which. */
static size_t counted_name_end(const unsigned char *s, size_t len, size_t i, int *which)
{
    if (i == 0 || (s[i - 1] != '"' && s[i - 1] != '#'))
        return 0;
    for (*which = 0; *which < 2; ++*which) {
        size_t w = strlen(counted_names[*which]), k = i + w;
        if (len - i < w + 2 || memcmp(s + i, counted_names[*which], w) != 0)
            continue;
        while (k < len && s[k] >= '0' && s[k] <= '9')
            k++;
        return k > i + w && k < len && s[k] == '"' ? k : 0;
    }
    return 0;
}

/* Rename them name1, name2, ... per name, in order of first appearance.
 * A new number is never longer than the old one (cairo's counters are past
 * its own surfaces before ours), else the old one is kept, so the output
 * fits in len bytes. At most 64 distinct numbers per name (a figure has
 * one or two). Returns 0, or -1 when out of memory. */
static int renumber_ids(plot_canvas *c)
{
    long seen[2][64];
    int nseen[2] = {0, 0}, which;
    const unsigned char *data = (const unsigned char *)c->bytes.b;
    size_t len = c->bytes.n;
    char *out = malloc(len + 1);
    if (!out)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t end = counted_name_end(data, len, i, &which);
        if (!end) {
            out[o++] = (char)data[i++];
            continue;
        }
        size_t w0 = strlen(counted_names[which]);
        long n = strtol(c->bytes.b + i + w0, NULL, 10);
        int k = 0;
        while (k < nseen[which] && seen[which][k] != n)
            k++;
        if (k == nseen[which] && k < 64)
            seen[which][nseen[which]++] = n;
        char name[48];
        int w = snprintf(name, sizeof name, "%s%d", counted_names[which], k + 1);
        if (k < 64 && w > 0 && (size_t)w <= end - i)
            memcpy(out + o, name, (size_t)w);
        else
            memcpy(out + o, data + i, (size_t)(w = (int)(end - i)));
        o += (size_t)w;
        i = end;
    }
    out[o] = '\0';
    free(c->bytes.b);
    c->bytes = (agb_buf){out, o, len + 1};
    return 0;
}

int canvas_close(plot_canvas *c, const char *what, ag_plot_output *out, ag_error *err)
{
    cairo_status_t st = cairo_status(c->cr);
    cairo_destroy(c->cr);
    c->cr = NULL;
    if (st == CAIRO_STATUS_SUCCESS && c->format == AG_PLOT_PNG) {
        cairo_surface_flush(c->surface);
        st = cairo_surface_write_to_png_stream(c->surface, grow_write, c);
        /* libpng, writing a whole image to memory, fails only when its
         * own allocations do */
        if (st == CAIRO_STATUS_PNG_ERROR)
            st = CAIRO_STATUS_NO_MEMORY;
    }
    cairo_surface_finish(c->surface);
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(c->surface);
    cairo_surface_destroy(c->surface);
    c->surface = NULL;
    int status = AG_OK;
    if (c->out_of_memory || st == CAIRO_STATUS_NO_MEMORY)
        status = ag_error_set(err, AG_ENOMEM, "%s: out of memory drawing the figure", what);
    else if (st != CAIRO_STATUS_SUCCESS)
        status = ag_error_set(err, AG_EIO, "%s: cairo: %s", what, cairo_status_to_string(st));
    else if (c->format == AG_PLOT_SVG && renumber_ids(c) != 0)
        status = ag_error_set(err, AG_ENOMEM, "%s: out of memory drawing the figure", what);
    if (status == AG_OK) {
        out->data = (unsigned char *)c->bytes.b;
        out->len = c->bytes.n;
        c->bytes.b = NULL;
    }
    canvas_discard(c);
    return status;
}

void ag_plot_output_free(ag_plot_output *out)
{
    if (!out)
        return;
    free(out->data);
    out->data = NULL;
    out->len = 0;
}

void ag_plot_release_caches(void)
{
    /* cairo's font faces hold fontconfig patterns: cairo first */
    cairo_debug_reset_static_data();
    FcFini();
}

/* fontconfig (Debian 12's 2.14) dereferences NULL when an allocation fails
 * while expat parses its configuration: seen at the edge of ulimit -v, one
 * run in ~600 of plot_limits.sh's sweep. Starting it takes about 0.3 MiB of
 * address space; it is started only when FONTS_HEADROOM is free (a probe
 * mapping, counted against RLIMIT_AS like the real allocations, as the
 * CLI's OpenBLAS buffer check does), else refused as out of memory. */
#define FONTS_HEADROOM ((size_t)8 << 20)

int ag_plot_fonts_init(ag_error *err)
{
    void *probe = mmap(NULL, FONTS_HEADROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
    if (probe == MAP_FAILED)
        return ag_error_set(err, AG_ENOMEM,
                            "out of memory: less than the %zu MiB of address space fontconfig "
                            "needs to start is left", FONTS_HEADROOM >> 20);
    munmap(probe, FONTS_HEADROOM);
    FcPattern *want = FcInit() ? FcNameParse((const FcChar8 *)AG_PLOT_FONT) : NULL, *got = NULL;
    FcResult res;
    if (want && FcConfigSubstitute(NULL, want, FcMatchPattern)) {
        FcDefaultSubstitute(want);
        got = FcFontMatch(NULL, want, &res);
    }
    if (want)
        FcPatternDestroy(want);
    if (!got)
        return ag_error_set(err, AG_ENOMEM, "out of memory loading the fonts (fontconfig)");
    FcPatternDestroy(got);
    return AG_OK;
}

/* ---- text ------------------------------------------------------------------ */

void canvas_font(plot_canvas *c, double size, int bold)
{
    cairo_select_font_face(c->cr, AG_PLOT_FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(c->cr, size);
}

/* cairo refuses text that is not UTF-8 (and the context stays in error):
 * what is drawn is always the escaped text, cut to its first max
 * characters and an ellipsis when max is not 0. NULL when out of memory. */
static char *drawable(const char *s, size_t max)
{
    char *t = ag_text_escape_dup(s ? s : "", AG_TEXT_CONTROL);
    if (!t || !max)
        return t;
    size_t at = 0, chars = 0; /* at: where the (max+1)-th character begins */
    for (; t[at]; at++)
        if (((unsigned char)t[at] & 0xC0) != 0x80 && chars++ == max) /* a UTF-8 lead byte */
            break;
    if (!t[at])
        return t;
    char *cut = realloc(t, at + 4);
    if (!cut)
        return free(t), NULL;
    memcpy(cut + at, "\xe2\x80\xa6", 4); /* U+2026 and the NUL */
    return cut;
}

static double width_of(plot_canvas *c, const char *s, size_t max)
{
    char *t = drawable(s, max);
    cairo_text_extents_t ext = {0};
    if (t)
        cairo_text_extents(c->cr, t, &ext);
    free(t);
    return ext.x_advance;
}

double canvas_text_width(plot_canvas *c, const char *s)
{
    return width_of(c, s, 0);
}

double canvas_label_width(plot_canvas *c, const char *s)
{
    return width_of(c, s, AG_PLOT_MAX_LABEL);
}

/* The baseline of text anchored at y with vertical alignment va, in the
 * current font. */
static double baseline(plot_canvas *c, double y, double va)
{
    cairo_font_extents_t fe;
    cairo_font_extents(c->cr, &fe);
    return y + fe.ascent - va * (fe.ascent + fe.descent);
}

static void draw_text(plot_canvas *c, const char *s, size_t max, double x, double y, double ha,
                      double va, double angle)
{
    char *t = drawable(s, max);
    if (!t)
        return;
    cairo_text_extents_t te;
    cairo_text_extents(c->cr, t, &te);
    cairo_save(c->cr);
    cairo_translate(c->cr, x, y);
    cairo_rotate(c->cr, -angle);
    cairo_move_to(c->cr, -ha * te.x_advance, baseline(c, 0, va));
    cairo_show_text(c->cr, t);
    cairo_restore(c->cr);
    free(t);
}

void canvas_text(plot_canvas *c, const char *s, double x, double y, double ha, double va,
                 double angle)
{
    draw_text(c, s, 0, x, y, ha, va, angle);
}

void canvas_label(plot_canvas *c, const char *s, double x, double y, double ha, double va,
                  double angle)
{
    draw_text(c, s, AG_PLOT_MAX_LABEL, x, y, ha, va, angle);
}

/* The exponent's size and rise above the baseline, relative to the font
 * size. */
#define SUP_SCALE 0.7
#define SUP_RISE 0.45

static double font_size(plot_canvas *c)
{
    cairo_matrix_t m;
    cairo_get_font_matrix(c->cr, &m);
    return m.yy;
}

double canvas_power_width(plot_canvas *c, int e)
{
    char exp[16];
    snprintf(exp, sizeof exp, "%d", e);
    double size = font_size(c), w = canvas_text_width(c, "10");
    cairo_set_font_size(c->cr, size * SUP_SCALE);
    w += canvas_text_width(c, exp);
    cairo_set_font_size(c->cr, size);
    return w;
}

void canvas_power_of_ten(plot_canvas *c, int e, double x, double y, double ha, double va)
{
    char exp[16];
    snprintf(exp, sizeof exp, "%d", e);
    double size = font_size(c), left = x - ha * canvas_power_width(c, e);
    double base = baseline(c, y, va);
    cairo_move_to(c->cr, left, base);
    cairo_show_text(c->cr, "10");
    double x_exp = left + canvas_text_width(c, "10");
    cairo_set_font_size(c->cr, size * SUP_SCALE);
    cairo_move_to(c->cr, x_exp, base - SUP_RISE * size);
    cairo_show_text(c->cr, exp);
    cairo_set_font_size(c->cr, size);
}
