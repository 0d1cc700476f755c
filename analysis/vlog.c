/* vlog.c — the natural logarithm of many positive doubles at once, for the
 * row entropies of family B (analysis/attention.c), which take one log per
 * attention entry: glibc's scalar log was 6 % of a GPT-2 forward pass with
 * its entropies (docs/performance.md).
 *
 * ln x = k·ln 2 + ln(1 + f) with x = (1 + f)·2^k, 1 + f in (√½, √2]
 * (Cody & Waite, "Software Manual for the Elementary Functions", 1980,
 * ch. 5), and with s = f/(2 + f), so that 1 + f = (1 + s)/(1 − s),
 *   ln(1 + f) = 2·atanh(s) = 2s + s·R,  R = Σ_{j≥1} 2 s^{2j}/(2j + 1)
 * (Abramowitz & Stegun 4.1.27). Written as f − (h − s·(h + R)) with
 * h = f²/2 (2s = f − s·f = f − h + s·h), the leading f is exact (Sterbenz)
 * and the rest a small correction, as in fdlibm's e_log.c: |s| < 0.1716, so
 * s² < 0.02944 and ten terms of R leave less than 2⁻⁵⁴ of it (summed
 * by Estrin's scheme). k·ln 2 is
 * split as ln2_hi (trailing zeros: k·ln2_hi exact for every exponent) plus
 * ln2_lo. Within 1 ulp of glibc's log on 4·10⁶ doubles over the binades
 * an attention matrix holds; tests/analysis/test_vlog.c holds it to 2 ulp
 * on every binade and on the reduction's edges.
 *
 * Eight lanes at a time, a short last block padded: every value takes the
 * same operations in the same order, with no fused multiply-add (-std=c11
 * contracts none), so the AVX-512, AVX2 and baseline clones give the same
 * bits, on any machine, wherever the value sits in its block:
 * tests/analysis/test_vlog.c compiles this file again as each clone alone
 * and compares them with the dispatched one on 3·10⁶ values (every binade,
 * subnormals, every lane of a padded block), and checks that a build with
 * fused multiply-adds does differ. */
#include <stdint.h>
#include <string.h>

#include "analysis.h"

#define LN2_HI 6.93147180369123816490e-01 /* ln 2 rounded to 32 bits */
#define LN2_LO 1.90821492927058770002e-10 /* ln 2 − LN2_HI */
#define SQRT2 1.41421356237309504880
#define TWO54 18014398509481984.0        /* 2^54: lifts a subnormal */
#define TINY 2.2250738585072014e-308     /* 2^-1022, the least normal */
#define EXP_MASK 0x7ff0000000000000LL
#define MANT_MASK 0x000fffffffffffffLL
#define ONE_BITS 0x3ff0000000000000LL    /* exponent of [1, 2) */
#define MAGIC_BITS 0x4330000000000000LL  /* 2^52: its low bits an integer */
#define MAGIC 4503599627370496.0         /* 2^52 */

/* C_j = 2/(2j + 1), the series' coefficients. */
#define C10 (2.0 / 21)
#define C9 (2.0 / 19)
#define C8 (2.0 / 17)
#define C7 (2.0 / 15)
#define C6 (2.0 / 13)
#define C5 (2.0 / 11)
#define C4 (2.0 / 9)
#define C3 (2.0 / 7)
#define C2 (2.0 / 5)
#define C1 (2.0 / 3)

/* ln x = k·ln 2 + ln(1 + f) into out (s, z, r, h: scratch), summed as
 * fdlibm's e_log.c does, the small terms first. */
#define LOG_OF(k, f, s, z, r, h, out)                                                          \
    do {                                                                                       \
        (s) = (f) / (2 + (f));                                                                 \
        (z) = (s) * (s);                                                                       \
        ESTRIN(z, r);                                                                          \
        (h) = 0.5 * (f) * (f);                                                                 \
        (out) = (k) * LN2_HI - (((h) - ((s) * ((h) + (r)) + (k) * LN2_LO)) - (f));             \
    } while (0)

/* r = Σ_{j=1..10} C_j z^j by Estrin's scheme (Knuth, TAOCP vol. 2, §4.6.4):
 * five levels of products instead of Horner's ten. */
#define ESTRIN(z, r)                                                                           \
    do {                                                                                       \
        __typeof__(z) z2_ = (z) * (z), z4_ = z2_ * z2_, z8_ = z4_ * z4_;                       \
        __typeof__(z) q0_ = (C1 + C2 * (z)) + (C3 + C4 * (z)) * z2_;                           \
        __typeof__(z) q1_ = (C5 + C6 * (z)) + (C7 + C8 * (z)) * z2_;                           \
        (r) = ((q0_ + q1_ * z4_) + (C9 + C10 * (z)) * z8_) * (z);                              \
    } while (0)

/* Eight lanes: two AVX2 registers or one AVX-512 register, independent
 * chains for the divider and the multipliers to overlap. */
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8i __attribute__((vector_size(64)));
#define SPLAT(c) {c, c, c, c, c, c, c, c}

/* out = ln of each lane of v (x > 0); a macro: a function taking or
 * returning a v8d changes the ABI between the clones. */
#define LOG8(v, out)                                                                           \
    do {                                                                                       \
        const v8d tiny_ = SPLAT(TINY), sqrt2_ = SPLAT(SQRT2), lift_ = SPLAT(54.0);             \
        v8i sub_ = (v) < tiny_; /* all ones where subnormal (or ≤ 0: never used) */            \
        v8d x_ = (v8d)(((v8i)((v) * TWO54) & sub_) | ((v8i)(v) & ~sub_));                      \
        v8d adj_ = (v8d)((v8i)lift_ & sub_);                                                   \
        v8i b_ = (v8i)x_;                                                                      \
        v8d e_ = (v8d)(((b_ & EXP_MASK) >> 52) | MAGIC_BITS);                                  \
        v8d m_ = (v8d)((b_ & MANT_MASK) | ONE_BITS);                                           \
        v8d k_ = (e_ - MAGIC) - 1023 - adj_;                                                   \
        v8i big_ = m_ > sqrt2_;                                                                \
        m_ = (v8d)(((v8i)(m_ * 0.5) & big_) | ((v8i)m_ & ~big_));                              \
        k_ = (v8d)(((v8i)(k_ + 1) & big_) | ((v8i)k_ & ~big_));                                \
        v8d f_ = m_ - 1, s_, z_, r_, h_;                                                       \
        LOG_OF(k_, f_, s_, z_, r_, h_, out);                                                   \
    } while (0)

AG_CLONES_AVX512
static void log_pos(const double *x, double *y, size_t count)
{
    size_t j = 0;
    for (; j + 8 <= count; j += 8) {
        v8d v, out; /* memcpy: x + j need not be 64-byte aligned */
        memcpy(&v, x + j, sizeof v);
        LOG8(v, out);
        memcpy(y + j, &out, sizeof out);
    }
    if (j < count) { /* the short last block, its other lanes padded with 1 */
        double in[8] = {1, 1, 1, 1, 1, 1, 1, 1}, res[8];
        memcpy(in, x + j, (count - j) * sizeof *in);
        v8d v, out;
        memcpy(&v, in, sizeof v);
        LOG8(v, out);
        memcpy(res, &out, sizeof out);
        memcpy(y + j, res, (count - j) * sizeof *res);
    }
}

void ag_log_positive(const double *x, double *y, size_t count)
{
    log_pos(x, y, count);
}
