/* gelu.c — the tanh-form GELU of the float32 pass (gelu.h).
 *
 * tanh in double: for |u| < 2⁻⁷ its Taylor series to u⁷ (the next term,
 * 62u⁹/2835, is below 2⁻⁶¹ of the value); above, (1 − e)/(1 + e) with
 * e = exp(−2|u|) and the sign of u, |u| capped at 20 (tanh(20) is 1 in
 * double, and every float above 9.02 has tanh 1 in float). exp(x) for
 * x in [−40, −2⁻⁶]: x = k·ln2 + r, |r| <= ln2/2 (Cody and Waite's split of
 * ln2, so k·ln2_hi is exact), e^r by its Taylor polynomial of degree 13
 * (truncation below 5e-18), times 2^k built from k's bits. The relative
 * error of the double tanh stays below 2⁻⁴⁴, far under float's 2⁻²⁴.
 *
 * k is rounded to nearest by adding and subtracting 1.5·2⁵², which leaves k
 * in the low bits of the sum: no double-to-integer conversion, so the
 * AVX-512F path needs no AVX-512DQ and matches the C path bit for bit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gelu.h"
#include "sgemm.h" /* agm_cpu_avx512 */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AGM_HAVE_AVX512 1
#include <immintrin.h>
#else
#define AGM_HAVE_AVX512 0
#endif

#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_K 0.044715f
#define SMALL 0x1p-7
#define CAP 20.0
#define SHIFTER 0x1.8p52
#define INV_LN2 0x1.71547652b82fep0
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33
#define T3 (-1.0 / 3)
#define T5 (2.0 / 15)
#define T7 (-17.0 / 315)

/* 1/j! for j = 2..13. */
static const double inv_fact[12] = {
    1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
    1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800};

static double bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* e^x for x in [−40, 0]. */
static double exp_neg(double x)
{
    double kd = x * INV_LN2 + SHIFTER, k = kd - SHIFTER;
    double r = (x - k * LN2_HI) - k * LN2_LO;
    double p = inv_fact[11];
    for (int j = 10; j >= 0; j--)
        p = p * r + inv_fact[j];
    p = (p * r + 1.0) * r + 1.0;
    return p * bits_to_double((double_to_bits(kd) + 1023) << 52);
}

static double tanh_d(double u)
{
    double a = fabs(u);
    if (a != a)
        return u;
    if (a < SMALL) {
        double u2 = u * u;
        return u + u * (u2 * (T3 + u2 * (T5 + u2 * T7)));
    }
    if (a > CAP)
        a = CAP;
    double e = exp_neg(-2.0 * a), t = (1.0 - e) / (1.0 + e);
    return u < 0 ? -t : t;
}

static float gelu1(float v)
{
    float u = SQRT_2_OVER_PI * (v + GELU_K * v * v * v);
    float t = (float)tanh_d(u);
    return 0.5f * v * (1.0f + t);
}

void agm_gelu_tanh_f32_plain(float *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        x[i] = gelu1(x[i]);
}

#if AGM_HAVE_AVX512

#define TGT __attribute__((target("avx512f")))

TGT static __m512d exp_neg8(__m512d x)
{
    __m512d kd = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(INV_LN2)), _mm512_set1_pd(SHIFTER));
    __m512d k = _mm512_sub_pd(kd, _mm512_set1_pd(SHIFTER));
    __m512d r = _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(k, _mm512_set1_pd(LN2_HI))),
                              _mm512_mul_pd(k, _mm512_set1_pd(LN2_LO)));
    __m512d p = _mm512_set1_pd(inv_fact[11]);
    for (int j = 10; j >= 0; j--)
        p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(inv_fact[j]));
    __m512d one = _mm512_set1_pd(1.0);
    p = _mm512_add_pd(_mm512_mul_pd(_mm512_add_pd(_mm512_mul_pd(p, r), one), r), one);
    __m512i e = _mm512_slli_epi64(
        _mm512_add_epi64(_mm512_castpd_si512(kd), _mm512_set1_epi64(1023)), 52);
    return _mm512_mul_pd(p, _mm512_castsi512_pd(e));
}

/* tanh_d on 8 lanes: both formulas, then the one each lane needs. */
TGT static __m512d tanh8(__m512d u)
{
    const __m512i sign = _mm512_set1_epi64((long long)0x8000000000000000ull);
    __m512d a = _mm512_castsi512_pd(_mm512_andnot_si512(sign, _mm512_castpd_si512(u)));
    __m512d u2 = _mm512_mul_pd(u, u);
    __m512d poly = _mm512_add_pd(_mm512_set1_pd(T5), _mm512_mul_pd(u2, _mm512_set1_pd(T7)));
    poly = _mm512_add_pd(_mm512_set1_pd(T3), _mm512_mul_pd(u2, poly));
    __m512d small = _mm512_add_pd(u, _mm512_mul_pd(u, _mm512_mul_pd(u2, poly)));
    __m512d capped = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, _mm512_set1_pd(CAP), _CMP_GT_OQ),
                                          a, _mm512_set1_pd(CAP));
    __m512d e = exp_neg8(_mm512_mul_pd(_mm512_set1_pd(-2.0), capped));
    __m512d one = _mm512_set1_pd(1.0);
    __m512d t = _mm512_div_pd(_mm512_sub_pd(one, e), _mm512_add_pd(one, e));
    __mmask8 neg = _mm512_cmp_pd_mask(u, _mm512_setzero_pd(), _CMP_LT_OQ);
    t = _mm512_mask_sub_pd(t, neg, _mm512_setzero_pd(), t);
    t = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, _mm512_set1_pd(SMALL), _CMP_LT_OQ), t, small);
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), t, u);
}

TGT static void gelu_avx512(float *x, size_t cnt)
{
    size_t i = 0;
    for (; i + 16 <= cnt; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 c3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(GELU_K), v), v), v);
        __m512 u = _mm512_mul_ps(_mm512_set1_ps(SQRT_2_OVER_PI), _mm512_add_ps(v, c3));
        __m256 lo = _mm512_cvtpd_ps(tanh8(_mm512_cvtps_pd(_mm512_castps512_ps256(u))));
        __m256 hi = _mm512_cvtpd_ps(tanh8(_mm512_cvtps_pd(
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1)))));
        __m512 t = _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
        __m512 half_v = _mm512_mul_ps(_mm512_set1_ps(0.5f), v);
        _mm512_storeu_ps(x + i, _mm512_mul_ps(half_v, _mm512_add_ps(_mm512_set1_ps(1.0f), t)));
    }
    agm_gelu_tanh_f32_plain(x + i, cnt - i);
}

#endif

void agm_gelu_tanh_f32(float *x, size_t cnt)
{
#if AGM_HAVE_AVX512
    if (agm_cpu_avx512()) {
        gelu_avx512(x, cnt);
        return;
    }
#endif
    agm_gelu_tanh_f32_plain(x, cnt);
}
