/* vmath.c — GELU and softmax rows of the float32 pass (vmath.h).
 *
 * exp(x) in float for the softmax (agm_exp_f32), x in [−104, 0]: the same
 * reduction as below in float (k·C1 exact), Cephes' degree-7 expf
 * polynomial for e^r, times 2^k as two powers of 2 of half of k each (both
 * normal floats down to k = −150, so a subnormal result is rounded once).
 * At most 0.982 ulp from exp(x) over every float in [−104, 0] (an
 * exhaustive check against glibc's double exp).
 *
 * exp(x) in double (for tanh) for x in [−110, 0] (callers clamp; below −103.98 every
 * result rounds to float 0 anyway): x = k·ln2 + r with |r| <= ln2/2 (Cody
 * and Waite's split of ln2: k·ln2_hi is exact), e^r by its Taylor
 * polynomial of degree 13 (truncation below 5e-18), times 2^k made from k's
 * bits. k is rounded to nearest by adding and subtracting 1.5·2⁵², which
 * leaves k in the low bits of the sum: no double-to-integer conversion, so
 * the AVX-512F path needs nothing beyond AVX-512F. Relative error below
 * 2⁻⁵⁰.
 *
 * tanh(u) in double: for |u| < 2⁻⁷ its Taylor series to u⁷ (the next term,
 * 62u⁹/2835, is below 2⁻⁶¹ of the value); above, (1 − e)/(1 + e) with
 * e = exp(−2|u|) and the sign of u, |u| capped at 20 (tanh(20) is 1 in
 * double; every float above 9.02 has tanh 1 in float). Relative error below
 * 2⁻⁴⁴ (the subtraction 1 − e loses at most 6 bits at |u| = 2⁻⁷), far under
 * float's 2⁻²⁴.
 *
 * Each AVX-512 function mirrors its plain twin operation for operation (no
 * fused multiply-add on either side: C11 mode keeps -ffp-contract=off). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sgemm.h" /* agm_avx512 */
#include "vmath.h"

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
#define EXP_MIN (-110.0)
#define SHIFTER 0x1.8p52
#define INV_LN2 0x1.71547652b82fep0
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33
/* The softmax's exp in float (exp_f): Cody and Waite's split of ln2 into
 * C1 (9 bits: k·C1 exact for |k| <= 2^15) and C2, and Cephes' expf
 * polynomial (S. L. Moshier, Cephes Math Library, expf.c). */
#define EXPF_MIN (-104.0f) /* exp(−104) < 2⁻¹⁵⁰: rounds to float 0 */
#define SHIFTER_F 0x1.8p23f
#define INV_LN2_F 0x1.715476p0f
#define C1_F 0x1.63p-1f
#define C2_F (-2.12194440e-4f)
static const float expf_poly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
#define T3 (-1.0 / 3)
#define T5 (2.0 / 15)
#define T7 (-17.0 / 315)

/* 1/j! for j = 2..13. */
static const double inv_fact[12] = {
    1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
    1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800};

/* ---- plain C ------------------------------------------------------------ */

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

/* e^x for x in [EXP_MIN, 0] (NaN gives NaN). */
static double exp_d(double x)
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
    double e = exp_d(-2.0 * a), t = (1.0 - e) / (1.0 + e);
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

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float agm_exp_f32(float x)
{
    if (x < EXPF_MIN)
        x = EXPF_MIN;
    float kd = x * INV_LN2_F + SHIFTER_F, k = kd - SHIFTER_F;
    float r = (x - k * C1_F) - k * C2_F, p = expf_poly[0];
    for (int j = 1; j < 6; j++)
        p = p * r + expf_poly[j];
    float y = (p * (r * r) + r) + 1.0f;
    /* 2^k in two halves, each a normal float down to k = −150 */
    int32_t ki = (int32_t)(float_to_bits(kd) - float_to_bits(SHIFTER_F)), k1 = ki >> 1;
    return (y * bits_to_float((uint32_t)(k1 + 127) << 23)) *
           bits_to_float((uint32_t)(ki - k1 + 127) << 23);
}

/* exp(x − m), x − m in float first (HF's `x - max`). */
static float softmax_exp(float x, float m)
{
    return agm_exp_f32(x - m);
}

static double pairwise8(const double s[8])
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* The division, and whether a probability is not finite. */
static int softmax_divide(float *r, size_t i0, size_t cnt, float sum)
{
    int bad = 0;
    for (size_t j = i0; j < cnt; j++) {
        r[j] /= sum;
        bad |= !isfinite(r[j]);
    }
    return bad;
}

int agm_softmax_f32_plain(float *r, size_t cnt, float scale)
{
    float m = -INFINITY;
    for (size_t j = 0; j < cnt; j++) {
        r[j] *= scale;
        m = r[j] > m ? r[j] : m;
    }
    double part[8] = {0};
    for (size_t j = 0; j < cnt; j++) {
        r[j] = softmax_exp(r[j], m);
        part[j & 7] += r[j];
    }
    return softmax_divide(r, 0, cnt, (float)pairwise8(part));
}

static void widen_plain(const float *x, double *y, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        y[i] = x[i];
}

static void add_plain(float *acc, const float *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        acc[i] += x[i];
}

static int any_nonfinite(const float *y, size_t d)
{
    int bad = 0;
    for (size_t j = 0; j < d; j++)
        bad |= !isfinite(y[j]);
    return bad;
}

int agm_layernorm_f32_plain(const float *x, float *y, size_t d, const float *w, const float *b,
                            float eps)
{
    double s[8] = {0}, ss[8] = {0};
    for (size_t j = 0; j < d; j++)
        s[j & 7] += x[j];
    float mean = (float)(pairwise8(s) / (double)d);
    for (size_t j = 0; j < d; j++) {
        float c = x[j] - mean;
        ss[j & 7] += (double)c * c;
    }
    float var = (float)(pairwise8(ss) / (double)d), inv = 1.0f / sqrtf(var + eps);
    for (size_t j = 0; j < d; j++)
        y[j] = w ? (x[j] - mean) * inv * w[j] + b[j] : (x[j] - mean) * inv;
    return !isfinite(var) || any_nonfinite(y, d);
}

int agm_rmsnorm_f32_plain(const float *x, float *y, size_t d, const float *w, float eps,
                          int one_plus)
{
    double ss[8] = {0};
    for (size_t j = 0; j < d; j++)
        ss[j & 7] += (double)x[j] * x[j];
    float ms = (float)(pairwise8(ss) / (double)d), inv = 1.0f / sqrtf(ms + eps);
    for (size_t j = 0; j < d; j++)
        y[j] = one_plus ? (x[j] * inv) * (1.0f + w[j]) : w[j] * (x[j] * inv);
    return !isfinite(ms) || any_nonfinite(y, d);
}

/* ---- AVX-512 ------------------------------------------------------------ */

#if AGM_HAVE_AVX512

#define TGT __attribute__((target("avx512f")))

/* exp_d on cnt vectors of 8 lanes at once, in place: each lane is exp_d's
 * operations in exp_d's order (the same bits); the cnt chains are
 * interleaved step by step so that Horner's dependent multiply-adds of one
 * overlap those of the others (one chain alone waits on each step's
 * latency: the softmax spent most of its time there). cnt is a constant at
 * every call, so the loops unroll. */
TGT static inline __attribute__((always_inline)) void exp8n(__m512d *x, int cnt)
{
    __m512d kd[4], r[4], p[4];
#pragma GCC unroll 4
    for (int u = 0; u < cnt; u++) {
        kd[u] = _mm512_add_pd(_mm512_mul_pd(x[u], _mm512_set1_pd(INV_LN2)),
                              _mm512_set1_pd(SHIFTER));
        __m512d k = _mm512_sub_pd(kd[u], _mm512_set1_pd(SHIFTER));
        r[u] = _mm512_sub_pd(_mm512_sub_pd(x[u], _mm512_mul_pd(k, _mm512_set1_pd(LN2_HI))),
                             _mm512_mul_pd(k, _mm512_set1_pd(LN2_LO)));
        p[u] = _mm512_set1_pd(inv_fact[11]);
    }
#pragma GCC unroll 11
    for (int j = 10; j >= 0; j--) {
        __m512d c = _mm512_set1_pd(inv_fact[j]);
#pragma GCC unroll 4
        for (int u = 0; u < cnt; u++)
            p[u] = _mm512_add_pd(_mm512_mul_pd(p[u], r[u]), c);
    }
    __m512d one = _mm512_set1_pd(1.0);
#pragma GCC unroll 4
    for (int u = 0; u < cnt; u++) {
        __m512d q = _mm512_add_pd(_mm512_mul_pd(_mm512_add_pd(_mm512_mul_pd(p[u], r[u]), one), r[u]), one);
        __m512i e = _mm512_slli_epi64(
            _mm512_add_epi64(_mm512_castpd_si512(kd[u]), _mm512_set1_epi64(1023)), 52);
        x[u] = _mm512_mul_pd(q, _mm512_castsi512_pd(e));
    }
}

/* tanh_d on cnt vectors of 8 lanes, in place: both formulas, then the one
 * each lane needs; the exponentials interleaved as exp8n's. */
TGT static inline __attribute__((always_inline)) void tanh8n(__m512d *u, int cnt)
{
    const __m512i sign = _mm512_set1_epi64((long long)0x8000000000000000ull);
    __m512d a[4], e[4];
#pragma GCC unroll 4
    for (int v = 0; v < cnt; v++) {
        a[v] = _mm512_castsi512_pd(_mm512_andnot_si512(sign, _mm512_castpd_si512(u[v])));
        __m512d capped = _mm512_mask_blend_pd(
            _mm512_cmp_pd_mask(a[v], _mm512_set1_pd(CAP), _CMP_GT_OQ), a[v], _mm512_set1_pd(CAP));
        e[v] = _mm512_mul_pd(_mm512_set1_pd(-2.0), capped);
    }
    exp8n(e, cnt);
#pragma GCC unroll 4
    for (int v = 0; v < cnt; v++) {
        __m512d u2 = _mm512_mul_pd(u[v], u[v]);
        __m512d poly = _mm512_add_pd(_mm512_set1_pd(T5), _mm512_mul_pd(u2, _mm512_set1_pd(T7)));
        poly = _mm512_add_pd(_mm512_set1_pd(T3), _mm512_mul_pd(u2, poly));
        __m512d small = _mm512_add_pd(u[v], _mm512_mul_pd(u[v], _mm512_mul_pd(u2, poly)));
        __m512d one = _mm512_set1_pd(1.0);
        __m512d t = _mm512_div_pd(_mm512_sub_pd(one, e[v]), _mm512_add_pd(one, e[v]));
        __mmask8 neg = _mm512_cmp_pd_mask(u[v], _mm512_setzero_pd(), _CMP_LT_OQ);
        t = _mm512_mask_sub_pd(t, neg, _mm512_setzero_pd(), t);
        t = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a[v], _mm512_set1_pd(SMALL), _CMP_LT_OQ), t,
                                 small);
        u[v] = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a[v], a[v], _CMP_UNORD_Q), t, u[v]);
    }
}

/* 16 floats as two halves of 8, to and from double. */
TGT static __m512d lo8(__m512 v)
{
    return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}

TGT static __m512d hi8(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

TGT static __m512 join16(__m512d lo, __m512d hi)
{
    __m256 l = _mm512_cvtpd_ps(lo), h = _mm512_cvtpd_ps(hi);
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(l)), _mm256_castps_pd(h), 1));
}

/* gelu1 on `blocks` blocks of 16 floats at x (1 or 2): the tanh of every
 * lane in one tanh8n call, whose four chains of the exponential's Horner
 * steps then overlap (two alone wait on each step's latency, GELU's main
 * cost). Lane-wise the same operations either way: the same bits. */
TGT static inline __attribute__((always_inline)) void gelu16n(float *x, int blocks)
{
    __m512 v[2], h16[2];
    __m512d h[4];
#pragma GCC unroll 2
    for (int b = 0; b < blocks; b++) {
        v[b] = _mm512_loadu_ps(x + 16 * b);
        __m512 c3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(GELU_K), v[b]), v[b]),
                                  v[b]);
        __m512 u = _mm512_mul_ps(_mm512_set1_ps(SQRT_2_OVER_PI), _mm512_add_ps(v[b], c3));
        h[2 * b] = lo8(u);
        h[2 * b + 1] = hi8(u);
    }
    tanh8n(h, 2 * blocks);
#pragma GCC unroll 2
    for (int b = 0; b < blocks; b++) {
        h16[b] = join16(h[2 * b], h[2 * b + 1]);
        __m512 half_v = _mm512_mul_ps(_mm512_set1_ps(0.5f), v[b]);
        _mm512_storeu_ps(x + 16 * b,
                         _mm512_mul_ps(half_v, _mm512_add_ps(_mm512_set1_ps(1.0f), h16[b])));
    }
}

TGT static void gelu_avx512(float *x, size_t cnt)
{
    size_t i = 0;
    for (; i + 32 <= cnt; i += 32)
        gelu16n(x + i, 2);
    for (; i + 16 <= cnt; i += 16)
        gelu16n(x + i, 1);
    agm_gelu_tanh_f32_plain(x + i, cnt - i);
}

static __mmask16 first_lanes(size_t cnt)
{
    return cnt >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cnt) - 1);
}

TGT static __m512d acc16(__m512d acc, __m512 v, __mmask16 k);

/* agm_exp_f32 on cnt vectors of 16 lanes at once, in place: each lane its
 * operations in its order (the same bits), the chains interleaved as
 * exp8n's. */
TGT static inline __attribute__((always_inline)) void exp16n(__m512 *x, int cnt)
{
    __m512 kd[2], r[2], p[2];
    const __m512i sh = _mm512_castps_si512(_mm512_set1_ps(SHIFTER_F));
#pragma GCC unroll 2
    for (int u = 0; u < cnt; u++) {
        x[u] = _mm512_max_ps(_mm512_set1_ps(EXPF_MIN), x[u]); /* NaN stays NaN */
        kd[u] = _mm512_add_ps(_mm512_mul_ps(x[u], _mm512_set1_ps(INV_LN2_F)),
                              _mm512_set1_ps(SHIFTER_F));
        __m512 k = _mm512_sub_ps(kd[u], _mm512_set1_ps(SHIFTER_F));
        r[u] = _mm512_sub_ps(_mm512_sub_ps(x[u], _mm512_mul_ps(k, _mm512_set1_ps(C1_F))),
                             _mm512_mul_ps(k, _mm512_set1_ps(C2_F)));
        p[u] = _mm512_set1_ps(expf_poly[0]);
    }
#pragma GCC unroll 5
    for (int j = 1; j < 6; j++)
#pragma GCC unroll 2
        for (int u = 0; u < cnt; u++)
            p[u] = _mm512_add_ps(_mm512_mul_ps(p[u], r[u]), _mm512_set1_ps(expf_poly[j]));
#pragma GCC unroll 2
    for (int u = 0; u < cnt; u++) {
        __m512 y = _mm512_add_ps(
            _mm512_add_ps(_mm512_mul_ps(p[u], _mm512_mul_ps(r[u], r[u])), r[u]),
            _mm512_set1_ps(1.0f));
        __m512i ki = _mm512_sub_epi32(_mm512_castps_si512(kd[u]), sh);
        __m512i k1 = _mm512_srai_epi32(ki, 1), k2 = _mm512_sub_epi32(ki, k1);
        __m512i b = _mm512_set1_epi32(127);
        __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k1, b), 23));
        __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k2, b), 23));
        x[u] = _mm512_mul_ps(_mm512_mul_ps(y, s1), s2);
    }
}

/* softmax_exp of the cnt values at r (in place) into acc as
 * agm_softmax_f32_plain adds them (value j into lane j mod 8, in order);
 * two vectors of 16 at a time while they last. */
TGT static __m512d softmax_exps(float *r, size_t cnt, __m512 m, __m512d acc)
{
    size_t j = 0;
    for (; j + 32 <= cnt; j += 32) {
        __m512 x[2] = {_mm512_sub_ps(_mm512_loadu_ps(r + j), m),
                       _mm512_sub_ps(_mm512_loadu_ps(r + j + 16), m)};
        exp16n(x, 2);
        for (int u = 0; u < 2; u++) {
            _mm512_storeu_ps(r + j + 16 * u, x[u]);
            acc = acc16(acc, x[u], 0xFFFF);
        }
    }
    for (; j < cnt; j += 16) {
        __mmask16 k = first_lanes(cnt - j);
        __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, r + j), m);
        exp16n(&x, 1);
        _mm512_mask_storeu_ps(r + j, k, x);
        acc = acc16(acc, x, k);
    }
    return acc;
}

TGT static int softmax_avx512(float *r, size_t cnt, float scale)
{
    __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(-INFINITY);
    for (size_t j = 0; j < cnt; j += 16) {
        __mmask16 k = first_lanes(cnt - j);
        __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, r + j), vs);
        _mm512_mask_storeu_ps(r + j, k, x);
        vm = _mm512_mask_max_ps(vm, k, x, vm);
    }
    __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
    __m512d acc = softmax_exps(r, cnt, m, _mm512_setzero_pd());
    double part[8];
    _mm512_storeu_pd(part, acc);
    __m512 sum = _mm512_set1_ps((float)pairwise8(part));
    const __m512i exp_bits = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    for (size_t j = 0; j < cnt; j += 16) {
        __mmask16 k = first_lanes(cnt - j);
        __m512 p = _mm512_div_ps(_mm512_maskz_loadu_ps(k, r + j), sum);
        _mm512_mask_storeu_ps(r + j, k, p);
        __m512i e = _mm512_and_si512(_mm512_castps_si512(p), exp_bits);
        bad |= _mm512_mask_cmpeq_epi32_mask(k, e, exp_bits);
    }
    return bad != 0;
}

TGT static void widen_avx512(const float *x, double *y, size_t cnt)
{
    for (size_t i = 0; i < cnt; i += 8) {
        __mmask16 k = first_lanes(cnt - i < 8 ? cnt - i : 8);
        _mm512_mask_storeu_pd(y + i, (__mmask8)k, lo8(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

TGT static void add_avx512(float *acc, const float *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i += 16) {
        __mmask16 k = first_lanes(cnt - i);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, acc + i), _mm512_maskz_loadu_ps(k, x + i));
        _mm512_mask_storeu_ps(acc + i, k, v);
    }
}

/* acc lane l += the values v_j (j = l mod 8 of the 16 in v, masked by k),
 * in order of j: element j into partial sum j mod 8. */
TGT static __m512d acc16(__m512d acc, __m512 v, __mmask16 k)
{
    acc = _mm512_mask_add_pd(acc, (__mmask8)k, acc, lo8(v));
    return _mm512_mask_add_pd(acc, (__mmask8)(k >> 8), acc, hi8(v));
}

TGT static double sum8(__m512d acc)
{
    double part[8];
    _mm512_storeu_pd(part, acc);
    return pairwise8(part);
}

TGT static int bad16(__m512 y, __mmask16 k)
{
    const __m512i e = _mm512_set1_epi32(0x7f800000);
    return _mm512_mask_cmpeq_epi32_mask(k, _mm512_and_si512(_mm512_castps_si512(y), e), e) != 0;
}

TGT static int layernorm_avx512(const float *x, float *y, size_t d, const float *w,
                                const float *b, float eps)
{
    __m512d s = _mm512_setzero_pd(), ss = _mm512_setzero_pd();
    for (size_t j = 0; j < d; j += 16) {
        __mmask16 k = first_lanes(d - j);
        s = acc16(s, _mm512_maskz_loadu_ps(k, x + j), k);
    }
    float mean = (float)(sum8(s) / (double)d);
    __m512 vm = _mm512_set1_ps(mean);
    for (size_t j = 0; j < d; j += 16) {
        __mmask16 k = first_lanes(d - j);
        __m512 c = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm);
        __m512d lo = lo8(c), hi = hi8(c);
        ss = _mm512_mask_add_pd(ss, (__mmask8)k, ss, _mm512_mul_pd(lo, lo));
        ss = _mm512_mask_add_pd(ss, (__mmask8)(k >> 8), ss, _mm512_mul_pd(hi, hi));
    }
    float var = (float)(sum8(ss) / (double)d), inv = 1.0f / sqrtf(var + eps);
    __m512 vi = _mm512_set1_ps(inv);
    int bad = !isfinite(var);
    for (size_t j = 0; j < d; j += 16) {
        __mmask16 k = first_lanes(d - j);
        __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vm), vi);
        if (w)
            v = _mm512_add_ps(_mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, w + j)),
                              _mm512_maskz_loadu_ps(k, b + j));
        _mm512_mask_storeu_ps(y + j, k, v);
        bad |= bad16(v, k);
    }
    return bad;
}

TGT static int rmsnorm_avx512(const float *x, float *y, size_t d, const float *w, float eps,
                              int one_plus)
{
    __m512d ss = _mm512_setzero_pd();
    for (size_t j = 0; j < d; j += 16) {
        __mmask16 k = first_lanes(d - j);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512d lo = lo8(v), hi = hi8(v);
        ss = _mm512_mask_add_pd(ss, (__mmask8)k, ss, _mm512_mul_pd(lo, lo));
        ss = _mm512_mask_add_pd(ss, (__mmask8)(k >> 8), ss, _mm512_mul_pd(hi, hi));
    }
    float ms = (float)(sum8(ss) / (double)d), inv = 1.0f / sqrtf(ms + eps);
    __m512 vi = _mm512_set1_ps(inv), one = _mm512_set1_ps(1.0f);
    int bad = !isfinite(ms);
    for (size_t j = 0; j < d; j += 16) {
        __mmask16 k = first_lanes(d - j);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + j), vi);
        __m512 wj = _mm512_maskz_loadu_ps(k, w + j);
        v = one_plus ? _mm512_mul_ps(v, _mm512_add_ps(one, wj)) : _mm512_mul_ps(wj, v);
        _mm512_mask_storeu_ps(y + j, k, v);
        bad |= bad16(v, k);
    }
    return bad;
}

#endif

/* ---- dispatch ------------------------------------------------------------ */

void agm_gelu_tanh_f32(float *x, size_t cnt)
{
#if AGM_HAVE_AVX512
    if (agm_avx512()) {
        gelu_avx512(x, cnt);
        return;
    }
#endif
    agm_gelu_tanh_f32_plain(x, cnt);
}

int agm_softmax_f32(float *r, size_t cnt, float scale)
{
#if AGM_HAVE_AVX512
    if (agm_avx512())
        return softmax_avx512(r, cnt, scale);
#endif
    return agm_softmax_f32_plain(r, cnt, scale);
}

void agm_widen_f32(const float *x, double *y, size_t cnt)
{
#if AGM_HAVE_AVX512
    if (agm_avx512()) {
        widen_avx512(x, y, cnt);
        return;
    }
#endif
    widen_plain(x, y, cnt);
}

void agm_add_f32(float *acc, const float *x, size_t cnt)
{
#if AGM_HAVE_AVX512
    if (agm_avx512()) {
        add_avx512(acc, x, cnt);
        return;
    }
#endif
    add_plain(acc, x, cnt);
}

int agm_layernorm_f32(const float *x, float *y, size_t d, const float *w, const float *b,
                      float eps)
{
#if AGM_HAVE_AVX512
    if (agm_avx512())
        return layernorm_avx512(x, y, d, w, b, eps);
#endif
    return agm_layernorm_f32_plain(x, y, d, w, b, eps);
}

int agm_rmsnorm_f32(const float *x, float *y, size_t d, const float *w, float eps, int one_plus)
{
#if AGM_HAVE_AVX512
    if (agm_avx512())
        return rmsnorm_avx512(x, y, d, w, eps, one_plus);
#endif
    return agm_rmsnorm_f32_plain(x, y, d, w, eps, one_plus);
}
