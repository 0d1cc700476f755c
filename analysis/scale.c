/* scale.c — exact power-of-two scaling, so that metrics of matrices with
 * entries near the overflow threshold (1e308) or deep in the subnormal range
 * come out right (docs/metrics.md, "Range").
 *
 * The practice is LAPACK's (dlascl after dlange in dgesdd, dgeev): bring the
 * largest entry near 1, compute, scale back. Here the factor is a power of
 * two, so scaling is exact (no rounding) and undone exactly. A scaled matrix
 * always becomes the same S (largest entry in [0.5, 1)), so scale-invariant
 * metrics of 2^k·M, |k| large, are bit-identical to those of M when M's
 * largest entry is in [0.5, 1), and homogeneous ones are 2^k times them. */
#include <math.h>
#include <stdlib.h>

#include "analysis.h"

/* Within 2^±100 nothing the metrics compute can overflow or underflow (a
 * square is at most 2^200·n), so such matrices, attention among them, are
 * used as they are, exactly as before scaling existed. */
#define SCALE_FREE 100

int ag_scale_exponent(const double *a, size_t rows, size_t cols, size_t ld)
{
    double amax = 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            amax = fmax(amax, fabs(a[i * ld + j]));
    int e = 0;
    if (amax > 0)
        frexp(amax, &e);
    return e < -SCALE_FREE || e > SCALE_FREE ? e : 0;
}

double *ag_scaled_copy(const double *a, size_t rows, size_t cols, size_t ld, int e)
{
    size_t count = rows * cols;
    double *s = malloc((count ? count : 1) * sizeof *s);
    for (size_t i = 0; s && i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            s[i * cols + j] = ldexp(a[i * ld + j], -e);
    return s;
}

void ag_record_put(ag_record *rec, ag_metric key, double v, int e)
{
    double x = ldexp(v, e);
    /* beyond the double range: no number would be right (docs/metrics.md) */
    ag_record_set(rec, key, isfinite(x) ? AG_V_NUMBER : AG_V_NULL, isfinite(x) ? x : 0);
}
