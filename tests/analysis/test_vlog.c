/* test_vlog.c — ag_log_positive (analysis/vlog.c), the entropies' log:
 * within 2 ulp of glibc's log (itself within 1 ulp of ln) on doubles spread
 * over every binade, subnormals and the reduction's edges (powers of two, 1
 * and √2 and their neighbours), and the same bits whether a value goes
 * through the vector lanes or the scalar tail. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../../analysis/analysis.h"

enum { COUNT = 4096 + 3 }; /* not a multiple of the lanes: a scalar tail too */

/* |y − ln x| in units of the last place of glibc's ln x. */
static double ulps(double y, double want)
{
    double ulp = nextafter(fabs(want), INFINITY) - fabs(want);
    return fabs(y - want) / ulp;
}

/* The test's doubles: the edges first, then 2^u with u uniform over the
 * whole exponent range, each times a mantissa from a fixed generator. */
static void fill(double *x)
{
    const double edges[] = {1.0, 2.0, 0.5, M_SQRT2, nextafter(M_SQRT2, 0), nextafter(M_SQRT2, 3),
                            nextafter(1.0, 0), nextafter(1.0, 2), DBL_MIN, nextafter(DBL_MIN, 0),
                            4.9406564584124654e-324, DBL_MAX, 1e-300, 0.7071067811865476,
                            1.0 / 470, 0.999, 1.001, 3.0};
    size_t k = 0;
    for (; k < sizeof edges / sizeof *edges; k++)
        x[k] = edges[k];
    uint64_t s = 0x9E3779B97F4A7C15u;
    for (; k < COUNT; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
        int e = (int)(s % 2098) - 1074;                      /* subnormal to huge */
        x[k] = ldexp(1 + u, e);
        if (!isfinite(x[k]) || x[k] == 0)
            x[k] = 1 + u;
    }
}

Test(vlog, within_two_ulp_of_log)
{
    static double x[COUNT], y[COUNT];
    fill(x);
    ag_log_positive(x, y, COUNT);
    double worst = 0;
    size_t at = 0;
    for (size_t k = 0; k < COUNT; k++) {
        double want = log(x[k]);
        if (want == 0) {
            cr_assert_eq(y[k], 0.0, "ln 1");
            continue;
        }
        double u = ulps(y[k], want);
        if (u > worst)
            worst = u, at = k;
    }
    cr_assert_leq(worst, 2.0, "%.3g ulp at x = %a: %a vs %a", worst, x[at], y[at], log(x[at]));
}

/* Entry k alone (count 1: the scalar formula) and among its neighbours
 * (lanes of four): the same bits. */
Test(vlog, lanes_and_scalar_agree)
{
    static double x[COUNT], y[COUNT];
    fill(x);
    for (size_t off = 0; off < 4; off++) {
        ag_log_positive(x + off, y + off, COUNT - off);
        for (size_t k = off; k < COUNT; k++) {
            double one;
            ag_log_positive(x + k, &one, 1);
            cr_assert(memcmp(&one, &y[k], sizeof one) == 0, "x = %a: %a (lanes) vs %a (scalar)",
                      x[k], y[k], one);
        }
    }
}
