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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* Within 2^±100 nothing the metrics compute can overflow or underflow (a
 * square is at most 2^200·n), so such matrices, attention among them, are
 * used as they are, exactly as before scaling existed. */
#define SCALE_FREE 100

int ag_scale_exponent(const double *a, size_t rows, size_t cols, size_t ld)
{
    double amax = 0;
    for (size_t i = 0; i < rows; i++) {
        double r = ag_max_abs(a + i * ld, cols);
        amax = r > amax ? r : amax;
    }
    return ag_scale_exponent_of(amax);
}

int ag_scale_exponent_of(double amax)
{
    int e = 0;
    if (amax > 0)
        frexp(amax, &e);
    return e < -SCALE_FREE || e > SCALE_FREE ? e : 0;
}

/* The larger of m and v; m when v is NaN. */
static inline double keep_max(double m, double v)
{
    return v > m ? v : m;
}

/* GCC's and clang's vector extensions, as in analysis/axioms.c: GCC 12's
 * -O2 does not vectorise ag_finite_max_abs, and every head of a forward
 * pass goes through it. */
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4i __attribute__((vector_size(32)));

/* m becomes the larger of m and |v| in each lane; m where v is NaN
 * (keep_max). A macro: a function returning a v4d changes the ABI. */
#define KEEP_MAX4(m, v)                                                                   \
    do {                                                                                  \
        v4i a_ = (v4i)(v) & (v4i){INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};            \
        v4i more_ = (v4i)((v4d)a_ > (m));                                                 \
        (m) = (v4d)((a_ & more_) | ((v4i)(m) & ~more_));                                  \
    } while (0)

/* One pass over x[0..count): the largest |x_k| into *amax (NaN never wins
 * keep_max, so it is that of the finite entries and ±Inf), Σ x_k·0 into
 * *zero (±0 while every x_k is finite, NaN from the first NaN or Inf on:
 * branch-free), *neg |= some x_k < 0 and *nz |= some x_k ≠ 0. The maximum
 * of a set does not depend on the order it is taken in, and Σ x·0 is ±0 or
 * NaN in any order: the lanes give the scalar loop's answers, bit for bit
 * (x86-64: an AVX2 clone chosen at load time where the processor has it).
 * One scan for every fact a family needs: every head of a forward pass
 * goes through it, and the matrix is read once. */
AG_CLONES_AVX2
static void scan_segment(const double *x, size_t count, double *amax, double *zero, int *neg,
                         int *nz)
{
    const v4d zero4 = {0, 0, 0, 0};
    v4d m0 = zero4, m1 = zero4, z0 = zero4, z1 = zero4;
    v4i below = {0, 0, 0, 0}, other = below;
    size_t j = 0;
    for (; j + 8 <= count; j += 8) {
        v4d a, b; /* memcpy: x + j need not be 32-byte aligned */
        memcpy(&a, x + j, sizeof a);
        memcpy(&b, x + j + 4, sizeof b);
        KEEP_MAX4(m0, a);
        KEEP_MAX4(m1, b);
        z0 += a * 0.0;
        z1 += b * 0.0;
        below |= (v4i)(a < zero4) | (v4i)(b < zero4);
        other |= (v4i)(a != zero4) | (v4i)(b != zero4);
    }
    double m = *amax, z = 0;
    int bl = 0, ot = 0;
    for (; j < count; j++) {
        m = keep_max(m, fabs(x[j]));
        z += x[j] * 0.0;
        bl |= x[j] < 0.0;
        ot |= x[j] != 0.0;
    }
    for (int k = 0; k < 4; k++) {
        m = keep_max(keep_max(m, m0[k]), m1[k]);
        z += z0[k] + z1[k];
        bl |= below[k] != 0;
        ot |= other[k] != 0;
    }
    *amax = m;
    *zero += z;
    *neg |= bl;
    *nz |= ot;
}

/* A plain function around the clones: GCC exports a target_clones
 * function's dispatcher whatever -fvisibility says, and the library
 * exports only the ag_ functions its headers declare (tests/cli/install.sh). */
int ag_finite_max_abs(const double *x, size_t count, double *amax)
{
    double z = 0;
    int neg = 0, nz = 0;
    *amax = 0;
    scan_segment(x, count, amax, &z, &neg, &nz);
    return z == 0;
}

void ag_matrix_scan(const double *M, size_t m, size_t n, ag_matrix_facts *f)
{
    double z = 0;
    int lower = 0;
    *f = (ag_matrix_facts){0};
    for (size_t i = 0; i < m; i++) {
        /* a square matrix's strict upper part starts at column i + 1 */
        size_t d = m == n && i + 1 < n ? i + 1 : n;
        scan_segment(M + i * n, d, &f->amax, &z, &f->negative, &lower);
        scan_segment(M + i * n + d, n - d, &f->amax, &z, &f->negative, &f->upper);
    }
    f->finite = z == 0;
}

int ag_matrix_scan_finite(const double *M, size_t m, size_t n, ag_matrix_facts *f,
                          ag_error *err)
{
    ag_matrix_scan(M, m, n, f);
    if (f->finite)
        return AG_OK;
    size_t k = 0;
    while (isfinite(M[k]))
        k++;
    return ag_error_set(err, AG_ENONFINITE, "non-finite value (%g) at row %zu, column %zu",
                        M[k], k / n, k % n);
}

/* The loops below run four independent chains (four maxima, four partial
 * sums added pairwise at the end), unrolled by hand into registers: a fixed
 * order, so the same bits on every run, and four times the throughput of
 * one chain of additions. */

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

double ag_max_abs(const double *x, size_t count)
{
    /* one loop for both: the finiteness sums cost nothing next to the loads */
    double amax;
    ag_finite_max_abs(x, count, &amax);
    return amax;
}

void ag_pow2_factors(double amax, double p[2])
{
    int k = 0;
    if (amax > 0)
        frexp(amax, &k);
    p[0] = k >= -1000 ? ldexp(1.0, -k) : 0x1p600;
    p[1] = k >= -1000 ? 1.0 : ldexp(1.0, -k - 600);
}

double ag_scaled_sum(const double *x, size_t count, const double p[2])
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, p0 = p[0], p1 = p[1];
    size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        s0 += x[j] * p0 * p1;
        s1 += x[j + 1] * p0 * p1;
        s2 += x[j + 2] * p0 * p1;
        s3 += x[j + 3] * p0 * p1;
    }
    for (; j < count; j++)
        s0 += x[j] * p0 * p1;
    return (s0 + s1) + (s2 + s3);
}

double ag_scaled_sumsq(const double *x, size_t count, const double p[2])
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, p0 = p[0], p1 = p[1];
    size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        double y0 = x[j] * p0 * p1, y1 = x[j + 1] * p0 * p1, y2 = x[j + 2] * p0 * p1,
               y3 = x[j + 3] * p0 * p1;
        s0 += y0 * y0;
        s1 += y1 * y1;
        s2 += y2 * y2;
        s3 += y3 * y3;
    }
    for (; j < count; j++) {
        double y = x[j] * p0 * p1;
        s0 += y * y;
    }
    return (s0 + s1) + (s2 + s3);
}

double ag_sumsq(const double *x, size_t count)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        s0 += x[j] * x[j];
        s1 += x[j + 1] * x[j + 1];
        s2 += x[j + 2] * x[j + 2];
        s3 += x[j + 3] * x[j + 3];
    }
    for (; j < count; j++)
        s0 += x[j] * x[j];
    return (s0 + s1) + (s2 + s3);
}
