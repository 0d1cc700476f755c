/* test_vlog.c — ag_log_positive (analysis/vlog.c), the entropies' log:
 * within 2 ulp of glibc's log (itself within 1 ulp of ln) on doubles spread
 * over every binade, subnormals and the reduction's edges (powers of two, 1
 * and √2 and their neighbours); the same bits wherever a value sits in its
 * block of eight lanes (a full block or the padded last one); and the same
 * bits from each of its target_clones (AVX-512, AVX2, default), each
 * compiled again on its own (tests/analysis/vlog_clone.h), as from the
 * library's dispatched one. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../../analysis/analysis.h"

enum { COUNT = 4096 + 3 }; /* not a multiple of the lanes: a padded tail too */

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

/* Entry k alone (count 1: lane 0 of a padded block) and among its
 * neighbours at four offsets (every lane of a full block, and the padded
 * tail): the same bits. */
Test(vlog, same_bits_at_any_block_position)
{
    static double x[COUNT], y[COUNT];
    fill(x);
    for (size_t off = 0; off < 4; off++) {
        ag_log_positive(x + off, y + off, COUNT - off);
        for (size_t k = off; k < COUNT; k++) {
            double one;
            ag_log_positive(x + k, &one, 1);
            cr_assert(memcmp(&one, &y[k], sizeof one) == 0, "x = %a: %a (in a block) vs %a (alone)",
                      x[k], y[k], one);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* analysis/vlog.c compiled again as each clone alone (vlog_clone_*.c), and
 * once with its multiply-adds fused: code that differs from the library's
 * in the last bits, which the comparison must find. */
void agt_vlog_avx512(const double *x, double *y, size_t count);
void agt_vlog_avx2(const double *x, double *y, size_t count);
void agt_vlog_default(const double *x, double *y, size_t count);
void agt_vlog_fma(const double *x, double *y, size_t count);
typedef void (*vlog_fn)(const double *, double *, size_t);

enum { BINADES = 2098, PER_BINADE = 1024, RANDOM = 1 << 20, CHUNK = 1 << 16 };

/* Value k of the comparison's set: first PER_BINADE mantissas in each
 * binade 2^-1074 .. 2^1023 (the subnormal ones rounded to what they hold),
 * then RANDOM uniform bit patterns of positive finite doubles. */
static double clone_input(size_t k, uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    if (k < (size_t)BINADES * PER_BINADE) {
        double u = ((double)(k % PER_BINADE) + (double)(*s >> 11) / 9007199254740992.0) /
                   PER_BINADE;
        return ldexp(1 + u, (int)(k / PER_BINADE) - 1074);
    }
    uint64_t bits = *s >> 1;                     /* sign 0 */
    if ((bits >> 52) == 0x7ff || bits == 0)      /* Inf/NaN, 0: not positive finite */
        bits = 0x3ff0000000000000u ^ (bits & 0xfffffffffffffu);
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The values where fn's bits differ from the library's ag_log_positive's:
 * over the whole set, in chunks, and over short counts 1..17 at offsets
 * 0..8 (every lane of the padded last block); *checked counts the values
 * compared, *first the first that differs. */
static size_t clone_differs(vlog_fn fn, size_t *checked, double *first)
{
    static double x[CHUNK], want[CHUNK], got[CHUNK];
    uint64_t s = 0x2545F4914F6CDD1Du;
    size_t total = (size_t)BINADES * PER_BINADE + RANDOM, bad = 0;
    *checked = 0;
    for (size_t at = 0; at < total; at += CHUNK) {
        size_t m = total - at < CHUNK ? total - at : CHUNK;
        for (size_t k = 0; k < m; k++)
            x[k] = clone_input(at + k, &s);
        ag_log_positive(x, want, m);
        fn(x, got, m);
        for (size_t k = 0; k < m; k++)
            if (memcmp(&want[k], &got[k], sizeof *got) != 0 && bad++ == 0)
                *first = x[k];
        *checked += m;
        for (size_t off = 0; at == 0 && off <= 8; off++)
            for (size_t c = 1; c <= 17; c++) {
                fn(x + off, got, c);
                for (size_t k = 0; k < c; k++)
                    if (memcmp(&want[off + k], &got[k], sizeof *got) != 0 && bad++ == 0)
                        *first = x[off + k];
                *checked += c;
            }
    }
    return bad;
}

/* vlog.c's claim: every clone gives the library's bits (which run here is
 * the dispatcher's choice: AVX-512 where the processor has it), on 3.2e6
 * values over every binade, the subnormals, random bit patterns and every
 * position in a padded last block. The clones this processor cannot run
 * are skipped (and said so). The fused variant must differ: the
 * comparison sees a last-bit change. */
Test(vlog, clones_same_bits)
{
    /* __builtin_cpu_supports takes a literal only */
    const struct {
        const char *name;
        int runs;
        vlog_fn fn;
    } clones[] = {{"avx512f", __builtin_cpu_supports("avx512f"), agt_vlog_avx512},
                  {"avx2", __builtin_cpu_supports("avx2"), agt_vlog_avx2},
                  {"default", 1, agt_vlog_default}};
    size_t checked = 0, ran = 0;
    double first = 0;
    for (size_t c = 0; c < sizeof clones / sizeof *clones; c++) {
        if (!clones[c].runs) {
            cr_log_warn("vlog: this processor has no %s: that clone is not compared",
                        clones[c].name);
            continue;
        }
        size_t bad = clone_differs(clones[c].fn, &checked, &first);
        cr_assert_eq(bad, 0, "the %s clone: %zu of %zu values differ, the first at x = %a",
                     clones[c].name, bad, checked, first);
        cr_assert_geq(checked, 3000000);
        ran++;
    }
    cr_assert_geq(ran, 2, "the default clone and the one the library dispatches to at least");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        size_t bad = clone_differs(agt_vlog_fma, &checked, &first);
        cr_assert_gt(bad, 0, "fused multiply-adds: no value of %zu differs", checked);
    }
}
#endif
