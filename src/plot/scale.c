/* scale.c — axes: ticks at "nice" steps (1, 2 or 5 times a power of ten,
 * the rule of Heckbert's "Nice numbers for graph labels", Graphics Gems,
 * 1990), log10 axes in decades, positions on an axis, tick labels; and the
 * output format a file name asks for. No cairo here: all of it is
 * arithmetic that tests/plot/test_plot.c checks against closed forms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plot_int.h"

int ag_plot_format_from_path(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return -1;
    if (strcasecmp(dot, ".svg") == 0)
        return AG_PLOT_SVG;
    if (strcasecmp(dot, ".pdf") == 0)
        return AG_PLOT_PDF;
    if (strcasecmp(dot, ".png") == 0)
        return AG_PLOT_PNG;
    return -1;
}

size_t ag_plot_png_pixels(double points, double dpi)
{
    if (!(points >= AG_PLOT_MIN_POINTS && points <= AG_PLOT_MAX_POINTS && dpi >= AG_PLOT_MIN_DPI &&
          dpi <= AG_PLOT_MAX_DPI))
        return 0;
    return (size_t)lround(points * dpi / 72.0);
}

/* 10^e as the double nearest to it: what the literal 1e<e> is (strtod
 * rounds correctly; pow(10, -20) need not, and a decade would be off by
 * one). */
static double pow10i(int e)
{
    char lit[16];
    snprintf(lit, sizeof lit, "1e%d", e);
    return strtod(lit, NULL);
}

/* The j-th multiple of m·10^e: 3·0.1 is 0.3, not 0.30000000000000004,
 * because a negative power is applied as a division by 10^−e, exact up to
 * 10^22. */
static double multiple(long j, int m, int e)
{
    return e >= 0 ? (double)j * m * pow10i(e) : (double)j * m / pow10i(-e);
}

/* The index range of the multiples of step inside [lo, hi]; the slack
 * (a millionth of a step) keeps a bound that is a multiple up to
 * rounding (0.3/0.1 = 2.9999999999999996) inside. */
static void multiples_in(double lo, double hi, double step, long *jmin, long *jmax)
{
    *jmin = (long)ceil(lo / step - 1e-6);
    *jmax = (long)floor(hi / step + 1e-6);
}

/* Walk the steps m·10^e upward from a power of ten below `from`; calls
 * fits(step) until it accepts one. Returns 0, or -1 when none in range. */
typedef int (*step_fits)(int m, int e, void *ctx);
static int first_step(double from, step_fits fits, void *ctx)
{
    static const int mult[3] = {1, 2, 5};
    int e0 = (int)floor(log10(from)) - 1;
    for (int e = e0; e <= e0 + 4 && e < 300; e++)
        for (int k = 0; k < 3; k++)
            if (fits(mult[k], e, ctx))
                return 0;
    return -1;
}

typedef struct {
    double lo, hi;
    int max_ticks, m, e;
    int widen; /* ag_plot_nice_range: count the ticks of the widened range */
} tick_ctx;

static int ticks_fit(int m, int e, void *p)
{
    tick_ctx *c = p;
    double step = m * pow10i(e);
    long jmin, jmax;
    if (c->widen) {
        jmin = (long)floor(c->lo / step + 1e-6);
        jmax = (long)ceil(c->hi / step - 1e-6);
    } else {
        multiples_in(c->lo, c->hi, step, &jmin, &jmax);
    }
    if (jmax - jmin + 1 > c->max_ticks)
        return 0;
    c->m = m;
    c->e = e;
    return 1;
}

static int bad_ticks_args(double lo, double hi, int max_ticks)
{
    return !(isfinite(lo) && isfinite(hi) && lo < hi) || max_ticks < 2 ||
           max_ticks > AG_PLOT_MAX_TICKS || !isfinite(hi - lo);
}

int ag_plot_ticks(double lo, double hi, int max_ticks, double *ticks, int *count, double *step)
{
    *count = 0;
    if (bad_ticks_args(lo, hi, max_ticks))
        return AG_EINVAL;
    tick_ctx c = {.lo = lo, .hi = hi, .max_ticks = max_ticks};
    if (first_step((hi - lo) / (max_ticks - 1), ticks_fit, &c) != 0)
        return AG_EINVAL;
    long jmin, jmax;
    multiples_in(lo, hi, c.m * pow10i(c.e), &jmin, &jmax);
    for (long j = jmin; j <= jmax; j++)
        ticks[(*count)++] = multiple(j, c.m, c.e);
    *step = c.m * pow10i(c.e);
    return AG_OK;
}

int ag_plot_nice_range(double dmin, double dmax, int max_ticks, double *lo, double *hi)
{
    /* two ticks cannot hold a range that straddles a multiple of its step */
    if (!(isfinite(dmin) && isfinite(dmax)) || dmin > dmax || max_ticks < 3 ||
        max_ticks > AG_PLOT_MAX_TICKS)
        return AG_EINVAL;
    if (dmin == dmax) {
        double half = dmin == 0 ? 1 : fabs(dmin) / 2;
        dmin -= half;
        dmax += half;
    }
    if (!isfinite(dmax - dmin))
        return AG_EINVAL;
    tick_ctx c = {.lo = dmin, .hi = dmax, .max_ticks = max_ticks, .widen = 1};
    if (first_step((dmax - dmin) / (max_ticks - 1), ticks_fit, &c) != 0)
        return AG_EINVAL;
    double step = c.m * pow10i(c.e);
    *lo = multiple((long)floor(dmin / step + 1e-6), c.m, c.e);
    *hi = multiple((long)ceil(dmax / step - 1e-6), c.m, c.e);
    return AG_OK;
}

/* floor(log10 v) exactly, for finite v > 0: log10 may round across a
 * power of ten (log10(1000) can be 2.9999999999999996). */
static int decade_of(double v)
{
    int e = (int)floor(log10(v));
    if (pow10i(e + 1) <= v)
        e++;
    else if (pow10i(e) > v)
        e--;
    return e;
}

int ag_plot_log_axis(double dmin, double dmax, int max_ticks, double *lo, double *hi,
                     int *exponents, int *count)
{
    *count = 0;
    if (!(isfinite(dmin) && isfinite(dmax) && dmin > 0 && dmin <= dmax) || max_ticks < 2 ||
        max_ticks > AG_PLOT_MAX_TICKS)
        return AG_EINVAL;
    int elo = decade_of(dmin), ehi = decade_of(dmax);
    if (pow10i(ehi) < dmax)
        ehi++; /* dmax not a power of ten: the decade above it */
    if (ehi == elo)
        ehi++;
    /* exponents at multiples of a 1-2-5 stride, so that decades 10^-20,
     * 10^-10, 10^0 are marked rather than 10^-20, 10^-11, 10^-2 */
    static const int mult[3] = {1, 2, 5};
    for (int k = 0;; k++) {
        int s = mult[k % 3] * (int)pow10i(k / 3);
        int first = (int)ceil(elo / (double)s), last = (int)floor(ehi / (double)s);
        if (last - first + 1 <= max_ticks) {
            for (int j = first; j <= last; j++)
                exponents[(*count)++] = j * s;
            break;
        }
    }
    *lo = pow10i(elo);
    *hi = pow10i(ehi);
    return AG_OK;
}

double ag_plot_position(double v, double lo, double hi, int log_scale)
{
    if (!log_scale)
        return (v - lo) / (hi - lo);
    if (!(v > 0))
        return NAN;
    return (log10(v) - log10(lo)) / (log10(hi) - log10(lo));
}

int ag_plot_tick_label(char *buf, size_t size, double v, double step)
{
    if (v == 0 || fabs(v) < step * 1e-9)
        return snprintf(buf, size, "0"); /* no "-0", no 1e-17 for a rounded 0 */
    if (step < 1e-3 || fabs(v) >= 1e6) {
        int digits = decade_of(fabs(v)) - decade_of(step);
        return snprintf(buf, size, "%.*e", digits > 0 ? digits : 0, v);
    }
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    return snprintf(buf, size, "%.*f", decimals, v);
}
