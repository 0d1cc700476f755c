/* test_plot.c — the plotting library (attngeom/plot.h): the viridis table
 * against published colours and its smoothness, tick steps against closed
 * forms and a brute-force minimality check, log axes and positions, tick
 * labels, and rendered figures: PNG pixels of the mapped colours, SVG and
 * PDF headers, the same bytes for the same input within one process. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>
#include <criterion/criterion.h>

#include "attngeom.h"

/* cairo's font caches live for the process: each test's process releases
 * them, so that LeakSanitizer (make sanitize) sees no leak. */
TestSuite(plot, .fini = ag_plot_release_caches);

/* ---- the colour map ------------------------------------------------------- */

static void expect_rgb(double t, double r, double g, double b)
{
    double rgb[3];
    ag_plot_viridis(t, rgb);
    cr_expect(rgb[0] == r && rgb[1] == g && rgb[2] == b,
              "viridis(%.17g) = (%.6f, %.6f, %.6f), expected (%.6f, %.6f, %.6f)", t, rgb[0],
              rgb[1], rgb[2], r, g, b);
}

/* matplotlib's _viridis_data: entries 0, 128 and 255, looked up as its
 * ListedColormap does (index floor(256·t), t = 1 included in the last). */
Test(plot, viridis_endpoints_and_midpoint)
{
    expect_rgb(0, 0.267004, 0.004874, 0.329415);
    expect_rgb(0.5, 0.127568, 0.566949, 0.550556);
    expect_rgb(1, 0.993248, 0.906157, 0.143936);
    /* just below a boundary stays in the entry below it */
    expect_rgb(nextafter(0.5, 0), 0.128729, 0.563265, 0.551229);
    expect_rgb(1.0 / 256, 0.268510, 0.009605, 0.335427);
    /* outside [0, 1]: the end colours, as matplotlib's under/over */
    expect_rgb(-3, 0.267004, 0.004874, 0.329415);
    expect_rgb(1e300, 0.993248, 0.906157, 0.143936);
    expect_rgb(-INFINITY, 0.267004, 0.004874, 0.329415);
    expect_rgb(NAN, 0.85, 0.85, 0.85);
}

/* The 8-bit colours everyone quotes for viridis's ends (#440154, #FDE725,
 * e.g. R's viridisLite), from the table by rounding: an independent check
 * of the first and last rows. */
Test(plot, viridis_matches_published_hex)
{
    static const int hex[2][3] = {{0x44, 0x01, 0x54}, {0xfd, 0xe7, 0x25}};
    for (int e = 0; e < 2; e++)
        for (int c = 0; c < 3; c++)
            cr_expect_eq((int)lround(255 * ag_plot_viridis_table[e ? 255 : 0][c]), hex[e][c]);
}

/* A mistyped digit in the table would show as a kink: the second
 * differences of the published map stay below 0.001 (measured 0.00084),
 * a typo in the third decimal gives 0.002 or more. And viridis's lightness
 * grows monotonically: relative luminance strictly increases. */
Test(plot, viridis_smooth_and_monotone)
{
    double prev_y = -1;
    for (int k = 0; k < 256; k++) {
        const double *c = ag_plot_viridis_table[k];
        double y = 0;
        static const double w[3] = {0.2126, 0.7152, 0.0722};
        for (int j = 0; j < 3; j++) {
            cr_expect(c[j] >= 0 && c[j] <= 1);
            y += w[j] * (c[j] <= 0.04045 ? c[j] / 12.92 : pow((c[j] + 0.055) / 1.055, 2.4));
            if (k >= 2) {
                double d2 = c[j] - 2 * ag_plot_viridis_table[k - 1][j] +
                            ag_plot_viridis_table[k - 2][j];
                cr_expect(fabs(d2) < 1e-3, "entry %d channel %d: second difference %g", k, j, d2);
            }
        }
        cr_expect(y > prev_y, "luminance falls at entry %d", k);
        prev_y = y;
    }
}

/* ---- ticks ------------------------------------------------------------------ */

static void expect_ticks(double lo, double hi, int max, double step, const double *want, int n)
{
    double t[64], s = 0;
    int count = 0;
    cr_assert_eq(ag_plot_ticks(lo, hi, max, t, &count, &s), AG_OK);
    cr_expect_eq(s, step, "[%g, %g] max %d: step %.17g, expected %g", lo, hi, max, s, step);
    cr_assert_eq(count, n, "[%g, %g] max %d: %d ticks, expected %d", lo, hi, max, count, n);
    for (int k = 0; k < n; k++)
        cr_expect_eq(t[k], want[k], "[%g, %g] tick %d: %.17g, expected %.17g", lo, hi, k, t[k],
                     want[k]);
}

Test(plot, ticks_closed_forms)
{
    /* [0, 1] in at most 6: steps 0.1 (11 ticks) too many, 0.2 (6) fits */
    expect_ticks(0, 1, 6, 0.2, (double[]){0, 0.2, 0.4, 0.6, 0.8, 1}, 6);
    /* 11 allow 0.1; the fourth tick is the double 0.3, not 3·0.1 summed */
    expect_ticks(0, 1, 11, 0.1, (double[]){0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}, 11);
    /* [0, 10] in 5: step 2 gives 6, step 5 gives 0, 5, 10 */
    expect_ticks(0, 10, 5, 5, (double[]){0, 5, 10}, 3);
    /* [-3.7, 12.1] in 8: step 2, the even numbers from -2 to 12 */
    expect_ticks(-3.7, 12.1, 8, 2, (double[]){-2, 0, 2, 4, 6, 8, 10, 12}, 8);
    /* ends that are no multiple: [0.13, 0.87] in 4, step 0.2 */
    expect_ticks(0.13, 0.87, 4, 0.2, (double[]){0.2, 0.4, 0.6, 0.8}, 4);
    /* large and small magnitudes */
    expect_ticks(0, 3e6, 4, 1e6, (double[]){0, 1e6, 2e6, 3e6}, 4);
    expect_ticks(1e-5, 4e-5, 4, 1e-5, (double[]){1e-5, 2e-5, 3e-5, 4e-5}, 4);
}

/* The rule itself, over many ranges: at most max ticks, all inside the
 * range, evenly spaced by the step, and the next smaller step of the
 * 1-2-5 sequence would give more than max. */
Test(plot, ticks_minimal_step)
{
    static const double below[3] = {0.5, 0.5, 0.4}; /* 1·10^k → 5·10^(k−1), 2 → 1, 5 → 2 */
    srand(7);
    for (int trial = 0; trial < 2000; trial++) {
        double lo = (rand() / (double)RAND_MAX - 0.5) * pow(10, rand() % 9 - 4);
        double hi = lo + (rand() / (double)RAND_MAX + 1e-3) * pow(10, rand() % 9 - 4);
        int max = 2 + rand() % 12, count;
        double t[64], step;
        cr_assert_eq(ag_plot_ticks(lo, hi, max, t, &count, &step), AG_OK);
        cr_assert(count >= 1 && count <= max, "[%g, %g] max %d: %d ticks", lo, hi, max, count);
        for (int k = 0; k < count; k++) {
            cr_assert(t[k] >= lo - 1e-6 * step && t[k] <= hi + 1e-6 * step);
            if (k)
                /* the rounding of two ticks far from 0 is an ulp of theirs */
                cr_assert(fabs(t[k] - t[k - 1] - step) <= 2 * DBL_EPSILON * fabs(t[k]) + 1e-12 * step,
                          "[%g, %g] max %d: ticks %.17g %.17g, step %g", lo, hi, max, t[k - 1], t[k], step);
        }
        double mant = step / pow(10, floor(log10(step) + 1e-9));
        int m = mant < 1.5 ? 0 : mant < 3.5 ? 1 : 2;
        double smaller = step * below[m];
        double n_smaller = floor(hi / smaller + 1e-6) - ceil(lo / smaller - 1e-6) + 1;
        cr_assert(n_smaller > max, "[%g, %g] max %d: step %g, but %g gives %g ticks", lo, hi, max,
                  step, smaller, n_smaller);
    }
}

Test(plot, ticks_reject_bad_ranges)
{
    double t[64], s;
    int n;
    cr_expect_eq(ag_plot_ticks(1, 1, 5, t, &n, &s), AG_EINVAL);
    cr_expect_eq(ag_plot_ticks(2, 1, 5, t, &n, &s), AG_EINVAL);
    cr_expect_eq(ag_plot_ticks(0, NAN, 5, t, &n, &s), AG_EINVAL);
    cr_expect_eq(ag_plot_ticks(0, INFINITY, 5, t, &n, &s), AG_EINVAL);
    cr_expect_eq(ag_plot_ticks(-1e308, 1e308, 5, t, &n, &s), AG_EINVAL); /* width overflows */
    cr_expect_eq(ag_plot_ticks(0, 1, 1, t, &n, &s), AG_EINVAL);
    cr_expect_eq(ag_plot_ticks(0, 1, 65, t, &n, &s), AG_EINVAL);
}

static void expect_range(double dmin, double dmax, int max, double lo, double hi)
{
    double a, b;
    cr_assert_eq(ag_plot_nice_range(dmin, dmax, max, &a, &b), AG_OK);
    cr_expect(a == lo && b == hi, "[%g, %g] max %d: [%.17g, %.17g], expected [%g, %g]", dmin, dmax,
              max, a, b, lo, hi);
}

Test(plot, nice_range_closed_forms)
{
    /* step 0.1 would need 0.1..0.9 = 9 ticks; 0.2 widens to [0, 1], 6 */
    expect_range(0.13, 0.87, 6, 0, 1);
    /* widening counts: [0.05, 0.95] at step 0.2 is [0, 1] again */
    expect_range(0.05, 0.95, 6, 0, 1);
    /* one value v: [v/2, 3v/2] = [1.5, 4.5], step 1 widens to [1, 5] (5 ticks) */
    expect_range(3, 3, 5, 1, 5);
    /* zero: [-1, 1], step 0.5 (5 ticks) */
    expect_range(0, 0, 5, -1, 1);
    /* negative data */
    expect_range(-7.5, -2.2, 7, -8, -2);
    double a, b;
    cr_expect_eq(ag_plot_nice_range(0, 1, 2, &a, &b), AG_EINVAL);
    cr_expect_eq(ag_plot_nice_range(1, 0, 5, &a, &b), AG_EINVAL);
    cr_expect_eq(ag_plot_nice_range(NAN, 1, 5, &a, &b), AG_EINVAL);
}

static void expect_log(double dmin, double dmax, int max, double lo, double hi, const int *exps,
                       int n)
{
    double a, b;
    int e[64], count;
    cr_assert_eq(ag_plot_log_axis(dmin, dmax, max, &a, &b, e, &count), AG_OK);
    cr_expect(a == lo && b == hi, "[%g, %g]: axis [%g, %g], expected [%g, %g]", dmin, dmax, a, b,
              lo, hi);
    cr_assert_eq(count, n, "[%g, %g]: %d ticks, expected %d", dmin, dmax, count, n);
    for (int k = 0; k < n; k++)
        cr_expect_eq(e[k], exps[k], "[%g, %g]: exponent %d is %d, expected %d", dmin, dmax, k, e[k], exps[k]);
}

Test(plot, log_axis_decades)
{
    expect_log(0.025, 1.4, 8, 0.01, 10, (int[]){-2, -1, 0, 1}, 4);
    /* exact powers of ten are their own ends (log10(1000) may round low) */
    expect_log(1, 1000, 8, 1, 1000, (int[]){0, 1, 2, 3}, 4);
    expect_log(1e-3, 1e-3, 8, 1e-3, 1e-2, (int[]){-3, -2}, 2);
    /* one value inside a decade: that decade */
    expect_log(5, 5, 8, 1, 10, (int[]){0, 1}, 2);
    /* 7 decades in 4 ticks: stride 2, at even exponents */
    expect_log(1e-3, 1e3, 4, 1e-3, 1e3, (int[]){-2, 0, 2}, 3);
    /* 40 decades in 5 ticks: every 10th */
    expect_log(1e-20, 1e20, 5, 1e-20, 1e20, (int[]){-20, -10, 0, 10, 20}, 5);
    double a, b;
    int e[64], n;
    cr_expect_eq(ag_plot_log_axis(0, 1, 8, &a, &b, e, &n), AG_EINVAL);
    cr_expect_eq(ag_plot_log_axis(-1, 1, 8, &a, &b, e, &n), AG_EINVAL);
    cr_expect_eq(ag_plot_log_axis(1, NAN, 8, &a, &b, e, &n), AG_EINVAL);
}

Test(plot, positions)
{
    cr_expect_eq(ag_plot_position(3, 1, 5, 0), 0.5);
    cr_expect_eq(ag_plot_position(1, 1, 5, 0), 0);
    cr_expect_eq(ag_plot_position(7, 1, 5, 0), 1.5);
    /* log: 10 halfway between 1 and 100, √10 between 1 and 10 */
    cr_expect_eq(ag_plot_position(10, 1, 100, 1), 0.5);
    cr_expect(fabs(ag_plot_position(sqrt(10), 1, 10, 1) - 0.5) < 1e-15);
    cr_expect(fabs(ag_plot_position(1e-3, 1e-4, 1e1, 1) - 0.2) < 1e-15);
    cr_expect(isnan(ag_plot_position(0, 1, 10, 1)));
    cr_expect(isnan(ag_plot_position(-2, 1, 10, 1)));
}

static void expect_label(double v, double step, const char *want)
{
    char buf[48];
    ag_plot_tick_label(buf, sizeof buf, v, step);
    cr_expect_str_eq(buf, want, "label(%.17g, %g) = '%s', expected '%s'", v, step, buf, want);
}

Test(plot, tick_labels)
{
    expect_label(0.2, 0.2, "0.2");
    expect_label(5, 5, "5");
    expect_label(0.05, 0.05, "0.05");
    expect_label(1.5, 0.5, "1.5");
    expect_label(-2, 2, "-2");
    expect_label(0.30000000000000004, 0.1, "0.3");
    expect_label(-0.0, 0.1, "0");
    expect_label(1e-17, 0.1, "0"); /* a rounded zero */
    expect_label(2e-5, 1e-5, "2e-05");
    expect_label(1.5e6, 5e5, "1.5e+06");
    expect_label(3e6, 1e6, "3e+06");
}

Test(plot, format_from_path)
{
    cr_expect_eq(ag_plot_format_from_path("fig.svg"), AG_PLOT_SVG);
    cr_expect_eq(ag_plot_format_from_path("out/Fig.PDF"), AG_PLOT_PDF);
    cr_expect_eq(ag_plot_format_from_path("a.b.png"), AG_PLOT_PNG);
    cr_expect_eq(ag_plot_format_from_path("fig.jpg"), -1);
    cr_expect_eq(ag_plot_format_from_path("svg"), -1);
    cr_expect_eq(ag_plot_format_from_path(".svg"), -1);
    cr_expect_eq(ag_plot_format_from_path("x.svg/fig"), -1);
    cr_expect_eq(ag_plot_format_from_path("fig.svg.gz"), -1);
}

Test(plot, png_pixels)
{
    cr_expect_eq(ag_plot_png_pixels(432, 150), 900);
    cr_expect_eq(ag_plot_png_pixels(72, 72), 72);
    cr_expect_eq(ag_plot_png_pixels(100, 96), 133); /* 133.33 */
    cr_expect_eq(ag_plot_png_pixels(100, 97.2), 135);
    cr_expect_eq(ag_plot_png_pixels(71, 150), 0);
    cr_expect_eq(ag_plot_png_pixels(432, 10), 0);
    cr_expect_eq(ag_plot_png_pixels(NAN, 150), 0);
}

/* ---- rendered figures ------------------------------------------------------ */

static const double two_by_three[6] = {0, 0.25, 0.5, 0.75, 1, NAN};

static ag_plot_grid small_grid(void)
{
    return (ag_plot_grid){.size = sizeof(ag_plot_grid),
                          .rows = 2, .cols = 3, .values = two_by_three, .title = "t",
                          .row_title = "layer", .col_title = "head", .value_title = "metric",
                          .vmin = NAN, .vmax = NAN};
}

static ag_plot_output render_grid(const ag_plot_grid *g, ag_plot_format f)
{
    ag_plot_page page = {.size = sizeof(ag_plot_page),
                         .format = f, .width = 300, .height = 200, .dpi = 144};
    ag_plot_output out = {0};
    ag_error err = {0};
    cr_assert_eq(ag_plot_grid_render(g, &page, &out, &err), AG_OK, "%s", err.message);
    cr_assert(out.data && out.len > 0);
    return out;
}

typedef struct {
    const unsigned char *p;
    size_t len, at;
} reader;

static cairo_status_t read_png(void *closure, unsigned char *data, unsigned int length)
{
    reader *r = closure;
    if (r->len - r->at < length)
        return CAIRO_STATUS_READ_ERROR;
    memcpy(data, r->p + r->at, length);
    r->at += length;
    return CAIRO_STATUS_SUCCESS;
}

/* Pixels of the PNG within 1 (8-bit quantisation) of the colour rgb. */
static long count_colour(const ag_plot_output *png, const double rgb[3], int *w, int *h)
{
    reader r = {png->data, png->len, 0};
    cairo_surface_t *s = cairo_image_surface_create_from_png_stream(read_png, &r);
    cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    *w = cairo_image_surface_get_width(s);
    *h = cairo_image_surface_get_height(s);
    int stride = cairo_image_surface_get_stride(s);
    const unsigned char *px = cairo_image_surface_get_data(s);
    long n = 0;
    for (int y = 0; y < *h; y++)
        for (int x = 0; x < *w; x++) {
            uint32_t v = *(const uint32_t *)(px + (size_t)y * (size_t)stride + 4 * (size_t)x);
            int c[3] = {(int)(v >> 16 & 255), (int)(v >> 8 & 255), (int)(v & 255)}, ok = 1;
            for (int k = 0; k < 3; k++)
                ok &= abs(c[k] - (int)lround(255 * rgb[k])) <= 1;
            n += ok;
        }
    cairo_surface_destroy(s);
    return n;
}

/* The cells of a 2×3 grid on 300×200 points at 144 dpi are dozens of
 * pixels each: the values 0 and 1 give viridis's end colours, 0.5 its
 * entry 128, NaN the grey of missing values; and the image has the size
 * the page asks for. */
Test(plot, grid_png_colours_and_size)
{
    ag_plot_grid g = small_grid();
    ag_plot_output out = render_grid(&g, AG_PLOT_PNG);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    cr_assert(out.len > 24 && memcmp(out.data, sig, 8) == 0);
    int w, h;
    double lo[3], mid[3], hi[3], grey[3];
    ag_plot_viridis(0, lo);
    ag_plot_viridis(0.5, mid);
    ag_plot_viridis(1, hi);
    ag_plot_viridis(NAN, grey);
    /* a cell is at least 40×40 pixels: most of them carry its colour exactly
     * (the colour bar adds a band of each colour too) */
    cr_expect_gt(count_colour(&out, lo, &w, &h), 1000);
    cr_expect_gt(count_colour(&out, mid, &w, &h), 1000);
    cr_expect_gt(count_colour(&out, hi, &w, &h), 1000);
    cr_expect_gt(count_colour(&out, grey, &w, &h), 1000);
    cr_expect_eq(w, 600);
    cr_expect_eq(h, 400);
    ag_plot_output_free(&out);
}

/* A fixed colour range beyond the data: 0.5 of [0, 2] is a quarter of the
 * way, entry 64, and no cell takes the top colour. */
Test(plot, grid_fixed_range)
{
    const double v[2] = {0.5, 0};
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
                      .rows = 1, .cols = 2, .values = v, .vmin = 0, .vmax = 2};
    ag_plot_output out = render_grid(&g, AG_PLOT_PNG);
    double q[3], top[3];
    int w, h;
    ag_plot_viridis(0.25, q);
    cr_expect_eq(q[0], ag_plot_viridis_table[64][0]);
    ag_plot_viridis(1, top);
    long nq = count_colour(&out, q, &w, &h), ntop = count_colour(&out, top, &w, &h);
    cr_expect_gt(nq, 1000);
    /* the top colour only in the colour bar: its band is < 2 pixels high */
    cr_expect_lt(ntop, 100);
    ag_plot_output_free(&out);
}

static int contains(const ag_plot_output *o, const char *s)
{
    return memmem(o->data, o->len, s, strlen(s)) != NULL;
}

/* Two renders of one input: the same bytes. */
static void expect_same_bytes(ag_plot_output *a, ag_plot_output *b)
{
    cr_assert_eq(a->len, b->len);
    cr_expect(memcmp(a->data, b->data, a->len) == 0);
    ag_plot_output_free(a);
    ag_plot_output_free(b);
}

/* cairo names an SVG page after a process-wide count of surfaces: two
 * renders in one process would differ, but for the renumbering. */
Test(plot, svg_same_bytes_in_one_process)
{
    ag_plot_grid g = small_grid();
    ag_plot_output a = render_grid(&g, AG_PLOT_SVG), b = render_grid(&g, AG_PLOT_SVG);
    cr_assert(a.len > 5 && memcmp(a.data, "<?xml", 5) == 0);
    cr_expect(contains(&a, "width=\"300pt\"") && contains(&a, "height=\"200pt\""));
    cr_expect(contains(&a, "id=\"surface1\""));
    expect_same_bytes(&a, &b);
}

/* After the process-wide caches are released, figures draw as before. */
Test(plot, release_caches_then_draw)
{
    ag_plot_grid g = small_grid();
    ag_plot_output a = render_grid(&g, AG_PLOT_SVG);
    ag_plot_release_caches();
    ag_plot_output b = render_grid(&g, AG_PLOT_SVG);
    expect_same_bytes(&a, &b);
}

Test(plot, pdf_has_no_date_and_repeats)
{
    ag_plot_grid g = small_grid();
    ag_plot_output a = render_grid(&g, AG_PLOT_PDF), b = render_grid(&g, AG_PLOT_PDF);
    cr_assert(a.len > 5 && memcmp(a.data, "%PDF-", 5) == 0);
    cr_expect(!contains(&a, "CreationDate") && !contains(&a, "ModDate"));
    cr_expect(contains(&a, "/MediaBox [ 0 0 300 200 ]"));
    expect_same_bytes(&a, &b);
}

/* Labels from files may be anything; cairo would refuse text that is not
 * UTF-8 and stay in error. */
Test(plot, labels_that_are_not_utf8)
{
    const char *rows[2] = {"\xff\xfe", "a\x01" "b"}, *cols[3] = {"\xc3", "ok", ""};
    ag_plot_grid g = small_grid();
    g.row_labels = rows;
    g.col_labels = cols;
    g.show_values = 1;
    ag_plot_output out = render_grid(&g, AG_PLOT_SVG);
    ag_plot_output_free(&out);
}

Test(plot, grid_errors)
{
    ag_plot_page page = {.size = sizeof(ag_plot_page),
                         .format = AG_PLOT_SVG, .width = 300, .height = 200, .dpi = 144};
    ag_plot_output out;
    ag_error err = {0};
    ag_plot_grid g = small_grid();
    g.rows = 0;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    g = small_grid();
    g.vmin = 1, g.vmax = 1;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "colour range") != NULL, "%s", err.message);
    g = small_grid();
    page.width = 50;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    page.width = 300;
    page.format = AG_PLOT_PNG;
    page.dpi = 5000;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    /* labels wider than the page */
    static char wide[400];
    memset(wide, 'W', sizeof wide - 1);
    const char *rows[2] = {wide, wide};
    g.row_labels = rows;
    page.format = AG_PLOT_SVG;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "too small") != NULL, "%s", err.message);
    cr_expect_null(out.data);
}

/* A line chart: its colour (Okabe & Ito's blue) is drawn, a band too; a
 * log axis takes the positive values only. */
Test(plot, lines_render)
{
    const double x[4] = {0, 1, 2, 3}, y[4] = {1, 0.5, NAN, 0.1};
    const double lo[4] = {0.8, 0.4, NAN, 0.05}, hi[4] = {1.2, 0.6, NAN, 0.2};
    ag_plot_series s = {.label = "a", .count = 4, .x = x, .y = y, .lo = lo, .hi = hi};
    ag_plot_lines p = {.size = sizeof(ag_plot_lines),
                       .nseries = 1, .series = &s, .x_title = "layer", .y_title = "v",
                       .integer_x = 1, .markers = 1};
    ag_plot_page page = {.size = sizeof(ag_plot_page),
                         .format = AG_PLOT_PNG, .width = 300, .height = 200, .dpi = 144};
    ag_plot_output out = {0};
    ag_error err = {0};
    for (int log_y = 0; log_y < 2; log_y++) {
        p.log_y = log_y;
        cr_assert_eq(ag_plot_lines_render(&p, &page, &out, &err), AG_OK, "%s", err.message);
        int w, h;
        const double blue[3] = {0, 114 / 255.0, 178 / 255.0};
        cr_expect_gt(count_colour(&out, blue, &w, &h), 100);
        cr_expect(w == 600 && h == 400);
        ag_plot_output_free(&out);
    }
    const double neg[4] = {-1, -2, 0, NAN};
    s = (ag_plot_series){.count = 4, .x = x, .y = neg};
    p.log_y = 1;
    cr_expect_eq(ag_plot_lines_render(&p, &page, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "log scale") != NULL, "%s", err.message);
    p.log_y = 0;
    cr_expect_eq(ag_plot_lines_render(&p, &page, &out, &err), AG_OK, "%s", err.message);
    ag_plot_output_free(&out);
}

/* ---- caps, and the page that fits ------------------------------------------- */

/* A grid of more than AG_PLOT_MAX_CELLS cells is refused before drawing
 * (a 1000 x 1000 heatmap was a 207 MB SVG); 256 x 256 is drawn. */
Test(plot, grid_cells_cap)
{
    static double v[257 * 256];
    for (size_t k = 0; k < sizeof v / sizeof *v; k++)
        v[k] = (double)(k % 7);
    ag_plot_grid g = {.size = sizeof(ag_plot_grid), .rows = 257, .cols = 256, .values = v,
                      .vmin = NAN, .vmax = NAN};
    ag_plot_page page = {.size = sizeof(ag_plot_page),
                         .format = AG_PLOT_PNG, .width = 300, .height = 200, .dpi = 36};
    ag_plot_output out = {0};
    ag_error err = {0};
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_ELIMIT);
    cr_expect(strstr(err.message, "at most 65536 cells, not 257x256") != NULL, "%s", err.message);
    cr_expect_null(out.data);
    g.rows = 256;
    cr_assert_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_OK, "%s", err.message);
    cr_expect_gt(out.len, 0);
    ag_plot_output_free(&out);
}

/* More than AG_PLOT_MAX_LINE_POINTS points over the lines: refused. */
Test(plot, lines_points_cap)
{
    static double x[40000], y[40000];
    for (size_t k = 0; k < 40000; k++)
        x[k] = (double)k, y[k] = 1;
    ag_plot_series s[2] = {{.count = 40000, .x = x, .y = y}, {.count = 25536, .x = x, .y = y}};
    ag_plot_lines p = {.size = sizeof(ag_plot_lines), .nseries = 2, .series = s};
    ag_plot_page page = {.size = sizeof(ag_plot_page),
                         .format = AG_PLOT_PNG, .width = 300, .height = 200, .dpi = 36};
    ag_plot_output out = {0};
    ag_error err = {0};
    cr_assert_eq(ag_plot_lines_render(&p, &page, &out, &err), AG_OK, "%s", err.message);
    ag_plot_output_free(&out);
    s[1].count = 25537; /* 65,537 */
    cr_expect_eq(ag_plot_lines_render(&p, &page, &out, &err), AG_ELIMIT);
    cr_expect(strstr(err.message, "at most 65536 points") != NULL, "%s", err.message);
    cr_expect_null(out.data);
}

/* The PNG of a 0 x 0 page (the page that fits) at 72 dpi: its pixels are
 * its points. */
static void fitted_size(const ag_plot_grid *g, const ag_plot_lines *p, int *w, int *h)
{
    ag_plot_page page = {.size = sizeof(ag_plot_page), .format = AG_PLOT_PNG, .dpi = 72};
    ag_plot_output out = {0};
    ag_error err = {0};
    int st = g ? ag_plot_grid_render(g, &page, &out, &err) : ag_plot_lines_render(p, &page, &out, &err);
    cr_assert_eq(st, AG_OK, "%s", err.message);
    const double none[3] = {-1, -1, -1};
    count_colour(&out, none, w, h);
    ag_plot_output_free(&out);
}

/* A small grid keeps 432 x 324; labels wider than that page, refused on
 * it, and 40 x 40 cells get a page that holds them: 12 points a cell. */
Test(plot, grid_page_fits)
{
    int w, h;
    ag_plot_grid g = small_grid();
    fitted_size(&g, NULL, &w, &h);
    cr_expect(w == 432 && h == 324, "%dx%d", w, h);
    static char wide[61];
    memset(wide, 'W', sizeof wide - 1);
    const char *rows[2] = {wide, wide}, *cols[3] = {wide, wide, wide};
    g.row_labels = rows, g.col_labels = cols;
    ag_plot_page page = AG_PLOT_PAGE_DEFAULT;
    ag_plot_output out = {0};
    ag_error err = {0};
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    fitted_size(&g, NULL, &w, &h);
    cr_expect(w > 432 + 216 && h > 324, "%dx%d", w, h); /* the labels, and 216 points of grid */
    static double v[1600];
    g = (ag_plot_grid){.size = sizeof(ag_plot_grid), .rows = 40, .cols = 40, .values = v,
                       .square = 1, .vmin = NAN, .vmax = NAN};
    fitted_size(&g, NULL, &w, &h);
    cr_expect(w >= 480 && h >= 480 && w < 700 && h < 650, "%dx%d", w, h);
}

/* 32 named lines: the page grows until the legend holds each at 10 points
 * (1.4 x 10 points a row). */
Test(plot, lines_page_fits)
{
    const double x[2] = {0, 1}, y[2] = {0, 1};
    ag_plot_series s[32];
    for (int k = 0; k < 32; k++)
        s[k] = (ag_plot_series){.label = "line", .count = 2, .x = x, .y = y};
    ag_plot_lines p = {.size = sizeof(ag_plot_lines), .nseries = 1, .series = s, .title = "t"};
    int w, h;
    fitted_size(NULL, &p, &w, &h);
    cr_expect(w == 432 && h == 324, "%dx%d", w, h);
    p.nseries = 32;
    fitted_size(NULL, &p, &w, &h);
    cr_expect(w == 432 && h >= 32 * 14 && h < 32 * 14 + 100, "%dx%d", w, h);
}

Test(plot, fonts_init)
{
    ag_error err = {0};
    cr_expect_eq(ag_plot_fonts_init(&err), AG_OK, "%s", err.message);
    cr_expect_eq(ag_plot_fonts_init(&err), AG_OK, "%s", err.message); /* again: a no-op */
}

/* A label is drawn to its first 48 characters and an ellipsis: a token of
 * 3000 gets the page of that cut (it would need 30,000 points). */
Test(plot, long_labels_cut)
{
    static char long_label[3001], cut_label[52];
    memset(long_label, 'W', 3000);
    memset(cut_label, 'W', 48);
    memcpy(cut_label + 48, "\xe2\x80\xa6", 4);
    const char *rows_long[2] = {long_label, "a"}, *rows_cut[2] = {cut_label, "a"};
    ag_plot_grid g = small_grid();
    int w1, h1, w2, h2;
    g.row_labels = rows_long;
    fitted_size(&g, NULL, &w1, &h1);
    g.row_labels = rows_cut;
    fitted_size(&g, NULL, &w2, &h2);
    cr_expect(w1 == w2 && h1 == h2 && w1 > 432 && w1 < 1000, "%dx%d, %dx%d", w1, h1, w2, h2);
}

/* --values: the fitted page grows until the values fit at 7 points; on a
 * given page too small for 4-point values the render says so */
Test(plot, values_fit_or_are_refused)
{
    static double v[40 * 40];
    for (size_t k = 0; k < 40 * 40; k++)
        v[k] = 0.123 + (double)k / 1e4;
    ag_plot_grid g = AG_PLOT_GRID_DEFAULT;
    g.rows = g.cols = 40;
    g.values = v;
    g.show_values = 1;
    ag_plot_page page = AG_PLOT_PAGE_DEFAULT;
    ag_plot_output out = {0};
    ag_error err = {0};
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "too small for the values") != NULL, "%s", err.message);
    g.show_values = 0; /* the same page without values draws */
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_OK, "%s", err.message);
    ag_plot_output_free(&out);
    /* fitted: 40 cells of 16 points (7 / 0.45) and more fit in 1152 points */
    g.show_values = 1;
    page.width = page.height = 0;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_OK, "%s", err.message);
    ag_plot_output_free(&out);
    /* 256 x 256 cells: the fitted grid's 1152 points give 4.5 points a cell */
    static double big[256 * 256];
    g.rows = g.cols = 256;
    g.values = big;
    cr_expect_eq(ag_plot_grid_render(&g, &page, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "leave out --values") != NULL, "%s", err.message);
}
