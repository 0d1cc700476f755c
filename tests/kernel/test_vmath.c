/* test_vmath.c — the float32 pass's own products and elementwise math
 * (src/kernel/sgemm.h, src/kernel/vmath.h):
 *   sgemm: every element within the standard error bound of a k-term dot
 *     product, γ_k·Σ|a||b| (Higham, Accuracy and Stability of Numerical
 *     Algorithms, 2nd ed., §3.1), on both paths, with and without a bias
 *     (agm_sgemm_bias: BLAS's beta = 1 start, or added after the own
 *     kernel's product, each bit for bit); with the AVX-512 kernel,
 *     the same bytes however C is split into calls (rows, columns, k at
 *     multiples of AGM_SGEMM_KC) and whether B comes transposed or not;
 *   vmath: the AVX-512 and plain paths give the same bits (every function,
 *     lengths with and without a remainder, special values); GELU's tanh is
 *     the correctly rounded float but within 2⁻⁴⁰ of a tie; softmax rows
 *     within 3 roundings of a long double softmax; norms within a few ulp of
 *     the formula evaluated in long double. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <cblas.h>

#include "kernel/sgemm.h"
#include "kernel/vmath.h"

static unsigned long long rng_state = 1;

static double urand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

static float *frand(size_t cnt, double scale)
{
    float *v = malloc((cnt ? cnt : 1) * sizeof *v);
    for (size_t i = 0; i < cnt; i++)
        v[i] = (float)(scale * urand());
    return v;
}

static float *scratch_for(size_t k, size_t n)
{
    size_t a = agm_sgemm_packed_size(k, n), b = agm_sgemm_scratch(n);
    size_t bytes = ((a > b ? a : b) * sizeof(float) + 64) / 64 * 64;
    return aligned_alloc(64, bytes);
}

/* ---- sgemm ------------------------------------------------------------------ */

TestSuite(sgemm);

static const size_t shapes[][3] = {{1, 1, 1},    {5, 3, 7},     {6, 64, 256},  {7, 65, 257},
                                   {13, 130, 600}, {48, 17, 513}, {2, 200, 31}, {61, 64, 64}};

/* op(B)[l][j] of B stored (k, n) or, trans, (n, k). */
static float op_b(const float *b, int trans, size_t k, size_t n, size_t l, size_t j)
{
    return trans ? b[j * k + l] : b[l * n + j];
}

/* C = A·op(B) (+ bias) within the bound of a dot product of k (+ 1) terms
 * (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §3.1:
 * |fl(xᵀy) − xᵀy| ≤ γ_k·|x|ᵀ|y|); the bias is one more term, whichever order
 * it is added in. */
static void check_bound(int trans, int with_bias)
{
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = frand(m * k, 1), *b = frand(k * n, 1), *c = frand(m * n, 9);
        float *bias = with_bias ? frand(n, 9) : NULL;
        float *scr = scratch_for(k, n);
        if (with_bias)
            agm_sgemm_bias(trans, m, n, k, a, k, b, trans ? k : n, bias, c, n, scr);
        else
            agm_sgemm(trans, m, n, k, a, k, b, trans ? k : n, c, n, scr);
        size_t terms = k + (with_bias ? 1 : 0);
        double u = ldexp(1, -24), gamma = terms * u / (1 - terms * u);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double exact = bias ? bias[j] : 0, mag = fabs(exact);
                for (size_t l = 0; l < k; l++) {
                    double p = (double)a[i * k + l] * op_b(b, trans, k, n, l, j);
                    exact += p;
                    mag += fabs(p);
                }
                cr_assert_leq(fabs(c[i * n + j] - exact), gamma * mag,
                              "(%zu, %zu, %zu) trans %d bias %d: C[%zu][%zu] = %.9g, exact %.17g",
                              m, n, k, trans, with_bias, i, j, c[i * n + j], exact);
            }
        free(a);
        free(b);
        free(c);
        free(bias);
        free(scr);
    }
}

/* Each product the pass may run: the own kernel, and cblas_sgemm both as
 * the machine's choice for AVX-512 (agm_sgemm_own) and as the plain path;
 * with and without a bias. */
Test(sgemm, within_the_dot_product_bound)
{
    for (int mode = 0; mode < 3; mode++) {
        agm_avx512_force(mode == 2 ? 0 : -1);
        agm_sgemm_force_own(mode == 2 ? -1 : mode == 0);
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            check_bound(0, with_bias);
            check_bound(1, with_bias);
        }
    }
    agm_sgemm_force_own(-1);
    agm_avx512_force(-1);
}

/* Which OpenBLAS kernels the pass prefers to its own (sgemm.h): the
 * AVX-512 ones everywhere, the AVX2 ones only on a CPU whose AVX-512 runs
 * on 256-bit halves (Zen 4), never an SSE or AVX one. */
Test(sgemm, blas_core_beats_own)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids",
                                         "skylakex", "SkylakeX  "};
    static const char *const avx2[] = {"Haswell", "Zen", "HASWELL"};
    static const char *const older[] = {"Prescott", "Nehalem", "Sandybridge", "Core2",
                                        "Barcelona", "", "Skylake"};
    for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
        for (int halved = 0; halved < 2; halved++)
            cr_expect_eq(agm_blas_core_beats_own(avx512[i], halved), 1, "%s", avx512[i]);
    for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++) {
        cr_expect_eq(agm_blas_core_beats_own(avx2[i], 0), 0, "%s", avx2[i]);
        cr_expect_eq(agm_blas_core_beats_own(avx2[i], 1), 1, "%s", avx2[i]);
    }
    for (size_t i = 0; i < sizeof older / sizeof *older; i++)
        for (int halved = 0; halved < 2; halved++)
            cr_expect_eq(agm_blas_core_beats_own(older[i], halved), 0, "%s", older[i]);
    cr_expect_eq(agm_blas_core_beats_own(NULL, 1), 0);
}

/* The bias's two ways (sgemm.h, agm_sgemm_bias): under cblas_sgemm it is
 * C's starting value, so C = bias + A·op(B) summed as BLAS sums it with
 * beta 1; under the own kernel the product first, then bias added (the
 * pass's bits there unchanged). Each is checked bit for bit against what
 * it stands for. */
Test(sgemm, bias_as_start_or_added_after)
{
    enum { M = 37, N = 70, K = 300 };
    float *a = frand(M * K, 1), *b = frand(K * N, 1), *bias = frand(N, 3);
    float *got = frand(M * N, 9), *want = frand(M * N, 9), *scr = scratch_for(K, N);
    for (int own = 0; own < 2; own++) {
        if (own && !agm_avx512())
            continue;
        agm_sgemm_force_own(own);
        agm_sgemm_bias(0, M, N, K, a, K, b, N, bias, got, N, scr);
        if (own) {
            agm_sgemm(0, M, N, K, a, K, b, N, want, N, scr);
            for (size_t i = 0; i < M; i++)
                for (size_t j = 0; j < N; j++)
                    want[i * N + j] += bias[j];
        } else {
            for (size_t i = 0; i < M; i++)
                memcpy(want + i * N, bias, N * sizeof *want);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N,
                        1.0f, want, N);
        }
        cr_assert_arr_eq(got, want, M * N * sizeof *got, "own %d", own);
    }
    agm_sgemm_force_own(-1);
    free(a);
    free(b);
    free(bias);
    free(got);
    free(want);
    free(scr);
}

/* k = 0: C = 0, as BLAS with beta 0. */
Test(sgemm, empty_sum_is_zero)
{
    float c[6] = {1, 2, 3, 4, 5, 6}, a[1] = {0}, b[1] = {0};
    agm_sgemm(0, 2, 3, 0, a, 1, b, 3, c, 3, NULL);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(c[i], 0.0f);
}

/* The kernel's promise (sgemm.h): an element is one fixed sequence of
 * operations, so tiles, k split at AGM_SGEMM_KC, and B or Bᵀ give the same
 * bytes as one call. */
Test(sgemm, same_bytes_however_split)
{
    if (!agm_avx512())
        cr_skip_test("no AVX-512 on this CPU: the cblas fallback makes no such promise");
    agm_sgemm_force_own(1); /* the kernel's promise, whichever the machine would choose */
    enum { M = 50, N = 150, K = 3 * AGM_SGEMM_KC + 40 };
    float *a = frand(M * K, 1), *b = frand(K * N, 1), *bt = malloc(K * N * sizeof *bt);
    for (size_t l = 0; l < K; l++)
        for (size_t j = 0; j < N; j++)
            bt[j * K + l] = b[l * N + j];
    float *full = malloc(M * N * sizeof *full), *part = malloc(M * N * sizeof *part);
    float *scr = scratch_for(K, N);
    agm_sgemm(0, M, N, K, a, K, b, N, full, N, scr);
    /* transposed storage */
    agm_sgemm(1, M, N, K, a, K, bt, K, part, N, scr);
    cr_expect_eq(memcmp(part, full, M * N * sizeof *full), 0, "Bᵀ differs from B");
    /* irregular tiles */
    size_t rows[] = {0, 1, 7, 30, M}, cols[] = {0, 5, 64, 100, N};
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++)
            agm_sgemm(q % 2, rows[r + 1] - rows[r], cols[q + 1] - cols[q], K, a + rows[r] * K, K,
                      q % 2 ? bt + cols[q] * K : b + cols[q], q % 2 ? K : N,
                      part + rows[r] * N + cols[q], N, scr);
    cr_expect_eq(memcmp(part, full, M * N * sizeof *full), 0, "tiles differ");
    /* k in calls at multiples of KC, prepared once */
    agm_bmat bm;
    agm_sgemm_prepare(&bm, 1, bt, K, K, N, scr);
    for (size_t pc = 0; pc < K; pc += AGM_SGEMM_KC) {
        size_t kc = K - pc < AGM_SGEMM_KC ? K - pc : AGM_SGEMM_KC;
        agm_bmat sub;
        agm_sgemm_prepare(&sub, 0, b + pc * N, N, kc, N, NULL);
        agm_sgemm_run(&sub, M, N, kc, a + pc, K, part, N, pc > 0);
    }
    cr_expect_eq(memcmp(part, full, M * N * sizeof *full), 0, "k in blocks differs");
    agm_sgemm_run(&bm, M, N, K, a, K, part, N, 0);
    cr_expect_eq(memcmp(part, full, M * N * sizeof *full), 0, "prepared Bᵀ differs");
    agm_sgemm_force_own(-1);
    free(a);
    free(b);
    free(bt);
    free(full);
    free(part);
    free(scr);
}

/* ---- vmath -------------------------------------------------------------------- */

TestSuite(vmath);

/* Values that stress each function: signs, zeros, tiny, huge, Inf, NaN,
 * and the ranges the pass sees. */
static float sample(size_t i)
{
    static const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, 1e30f, -1e30f, INFINITY,
                                    -INFINITY, NAN, 9.5f, -9.5f, 0.0078125f, -0.0078125f, 20.0f};
    if (i % 17 == 0)
        return special[(i / 17) % (sizeof special / sizeof *special)];
    double v = urand();
    return (float)(i % 3 == 0 ? v * 1e-3 : i % 3 == 1 ? v * 12 : v * 3);
}

static int same_bits(const float *a, const float *b, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        if (memcmp(a + i, b + i, sizeof *a) && !(isnan(a[i]) && isnan(b[i])))
            return 0;
    return 1;
}

Test(vmath, avx512_equals_plain)
{
    if (!agm_avx512())
        cr_skip_test("no AVX-512 on this CPU: only the plain paths run");
    for (size_t cnt = 0; cnt < 80; cnt += cnt < 40 ? 1 : 13) {
        float *x = malloc((cnt + 1) * sizeof *x), *y = malloc((cnt + 1) * sizeof *y);
        float *w = frand(cnt + 1, 1), *b = frand(cnt + 1, 1);
        for (size_t i = 0; i < cnt; i++)
            x[i] = sample(i + cnt);
        memcpy(y, x, cnt * sizeof *x);
        agm_gelu_tanh_f32(x, cnt);
        agm_gelu_tanh_f32_plain(y, cnt);
        cr_expect(same_bits(x, y, cnt), "gelu, %zu values", cnt);
        for (int finite = 0; cnt && finite < 2; finite++) {
            for (size_t i = 0; i < cnt; i++)
                x[i] = y[i] = finite ? (float)(8 * urand()) : sample(i + 3 * cnt);
            int bx = agm_softmax_f32(x, cnt, 0.125f), by = agm_softmax_f32_plain(y, cnt, 0.125f);
            cr_expect_eq(bx, by, "softmax flag, %zu values", cnt);
            cr_expect(same_bits(x, y, cnt), "softmax, %zu values", cnt);
            for (int affine = 0; affine < 2; affine++) {
                float *nx = frand(cnt, 4), *ny = malloc(cnt * sizeof *ny), *nz = malloc(cnt * sizeof *nz);
                if (!finite)
                    nx[cnt / 2] = sample(17 * cnt);
                int lx = agm_layernorm_f32(nx, ny, cnt, affine ? w : NULL, affine ? b : NULL, 1e-5f);
                int ly = agm_layernorm_f32_plain(nx, nz, cnt, affine ? w : NULL, affine ? b : NULL, 1e-5f);
                cr_expect_eq(lx, ly, "layernorm flag, %zu values", cnt);
                cr_expect(same_bits(ny, nz, cnt), "layernorm, %zu values", cnt);
                lx = agm_rmsnorm_f32(nx, ny, cnt, w, 1e-6f, affine);
                ly = agm_rmsnorm_f32_plain(nx, nz, cnt, w, 1e-6f, affine);
                cr_expect_eq(lx, ly, "rmsnorm flag, %zu values", cnt);
                cr_expect(same_bits(ny, nz, cnt), "rmsnorm, %zu values", cnt);
                free(nx);
                free(ny);
                free(nz);
            }
        }
        free(x);
        free(y);
        free(w);
        free(b);
    }
    /* widen and add: one rounding-free operation each, checked directly */
    float f[37];
    double d[37];
    for (int i = 0; i < 37; i++)
        f[i] = sample((size_t)i * 5 + 1);
    agm_widen_f32(f, d, 37);
    for (int i = 0; i < 37; i++)
        cr_expect(d[i] == (double)f[i] || (isnan(d[i]) && isnan(f[i])));
    float acc[37], acc2[37];
    for (int i = 0; i < 37; i++)
        acc[i] = acc2[i] = (float)urand();
    agm_add_f32(acc, f, 37);
    for (int i = 0; i < 37; i++) {
        float want = acc2[i] + f[i];
        cr_expect(same_bits(&acc[i], &want, 1), "add [%d]", i);
    }
}

/* GELU's tanh(u) is the float nearest tanh(u) unless tanh(u) lies within
 * 2⁻⁴⁰ (relative) of the midpoint of two floats: gelu(v) is then the
 * formula with that float (or, near a tie, with its neighbour). */
Test(vmath, gelu_tanh_correctly_rounded)
{
    enum { CNT = 200000 };
    float *x = malloc(CNT * sizeof *x), *v = malloc(CNT * sizeof *v);
    for (size_t i = 0; i < CNT; i++)
        v[i] = x[i] = (float)(i % 2 ? 10 * urand() : 0.05 * urand());
    agm_gelu_tanh_f32(x, CNT);
    size_t near_ties = 0;
    for (size_t i = 0; i < CNT; i++) {
        float u = 0.7978845608028654f * (v[i] + 0.044715f * v[i] * v[i] * v[i]);
        long double t = tanhl((long double)u);
        float tr = (float)t, other = nextafterf(tr, (long double)tr < t ? INFINITY : -INFINITY);
        float want = 0.5f * v[i] * (1.0f + tr), alt = 0.5f * v[i] * (1.0f + other);
        if (x[i] == want)
            continue;
        long double mid = ((long double)tr + other) / 2;
        cr_expect(x[i] == alt && fabsl(t - mid) <= ldexpl(fabsl(t), -40),
                  "gelu(%.9g) = %.9g, want %.9g (tanh %.21Lg)", v[i], x[i], want, t);
        near_ties++;
    }
    cr_expect_leq(near_ties, 2, "%zu near-ties in %d values", near_ties, CNT);
    free(x);
    free(v);
}

/* Each probability within 3u (u = 2⁻²⁴: the rounding of e_j, of the sum
 * and of the quotient), plus the smallest subnormal, of the softmax computed
 * in long double from the same float differences scale·s_j − max (HF's
 * float32 semantics round them to float). */
Test(vmath, softmax_close_to_exact)
{
    for (size_t cnt = 1; cnt < 600; cnt = cnt * 3 + 1) {
        float *r = malloc(cnt * sizeof *r), *s = malloc(cnt * sizeof *s);
        for (size_t i = 0; i < cnt; i++)
            r[i] = (float)(30 * urand());
        memcpy(s, r, cnt * sizeof *r);
        cr_assert_eq(agm_softmax_f32(r, cnt, 0.5f), 0);
        float mx = -INFINITY;
        long double z = 0;
        for (size_t i = 0; i < cnt; i++)
            mx = fmaxf(mx, s[i] * 0.5f);
        for (size_t i = 0; i < cnt; i++)
            z += expl((long double)(s[i] * 0.5f - mx));
        for (size_t i = 0; i < cnt; i++) {
            long double p = expl((long double)(s[i] * 0.5f - mx)) / z;
            cr_expect_leq(fabsl(r[i] - p), 3 * ldexpl(p, -24) + ldexpl(1, -149),
                          "row of %zu, p[%zu] = %.9g, exact %.12Lg", cnt, i, r[i], p);
        }
        free(r);
        free(s);
    }
}

/* The norms against their formula in long double: each output within 4 ulp
 * of the size of its terms, |x − mean|·inv·|w| + |b|. */
Test(vmath, norms_close_to_exact)
{
    for (size_t d = 1; d < 1000; d = d * 2 + 3) {
        float *x = frand(d, 5), *w = frand(d, 1), *b = frand(d, 1), *y = malloc(d * sizeof *y);
        for (size_t i = 0; i < d; i++)
            x[i] += 2; /* a mean far from 0 */
        cr_assert_eq(agm_layernorm_f32(x, y, d, w, b, 1e-5f), 0);
        long double mean = 0, var = 0;
        for (size_t i = 0; i < d; i++)
            mean += x[i];
        mean /= d;
        for (size_t i = 0; i < d; i++)
            var += (x[i] - mean) * (x[i] - mean);
        var /= d;
        long double inv = 1 / sqrtl(var + 1e-5f);
        for (size_t i = 0; i < d; i++) {
            long double want = (x[i] - mean) * inv * w[i] + b[i];
            long double size = fabsl((x[i] - mean) * inv * w[i]) + fabsl(b[i]) + inv * fabsl(w[i]) * fabsl(mean);
            cr_expect_leq(fabsl(y[i] - want), ldexpl(size, -22), "layernorm d %zu [%zu]", d, i);
        }
        cr_assert_eq(agm_rmsnorm_f32(x, y, d, w, 1e-6f, 0), 0);
        long double ms = 0;
        for (size_t i = 0; i < d; i++)
            ms += (long double)x[i] * x[i];
        inv = 1 / sqrtl(ms / d + 1e-6f);
        for (size_t i = 0; i < d; i++) {
            long double want = w[i] * (x[i] * inv);
            cr_expect_leq(fabsl(y[i] - want), ldexpl(fabsl(want), -22), "rmsnorm d %zu [%zu]", d, i);
        }
        free(x);
        free(w);
        free(b);
        free(y);
    }
}

/* vmath.h's bound for the softmax's exp: within 1 ulp of exp(x) (glibc's
 * double exp, correctly rounded to far below a float ulp) on a sample of
 * every float in [−104, 0] (one in 997, from 0 down; the exhaustive check
 * found at most 0.982 ulp), 0 below −104, NaN for NaN. The ulp is the
 * spacing of floats at the exact value (2⁻¹⁴⁹ among the subnormals). */
Test(vmath, exp_within_one_ulp)
{
    size_t checked = 0;
    for (uint32_t b = 0x80000000u; b <= 0xC2D00000u; b += 997) { /* −0 .. −104 */
        float x;
        memcpy(&x, &b, sizeof x);
        double exact = exp((double)x);
        float near = (float)exact;
        double ulp = (double)nextafterf(near, INFINITY) - (double)near;
        double err = fabs((double)agm_exp_f32(x) - exact);
        cr_assert_leq(err, ulp, "exp(%a) = %a, exact %.17g", (double)x, (double)agm_exp_f32(x),
                      exact);
        checked++;
    }
    cr_assert_gt(checked, 1000000);
    cr_expect_eq(agm_exp_f32(-104.5f), 0.0f);
    cr_expect_eq(agm_exp_f32(-INFINITY), 0.0f);
    cr_expect_eq(agm_exp_f32(0.0f), 1.0f);
    cr_expect(isnan(agm_exp_f32(NAN)));
}
