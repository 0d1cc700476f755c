/* sgemm.c — the forward pass's float32 products (sgemm.h): an AVX-512
 * kernel in the usual blocked form (Goto and van de Geijn, "Anatomy of
 * high-performance matrix multiplication", ACM TOMS 34(3), 2008; the loop
 * names pc, jc, ir, jr are theirs), cblas_sgemm elsewhere.
 *
 * For each block of KC of the k products and each block of NC columns
 * (B's block stays in L2), every MR rows of A (their KC values stay in L1)
 * meet every panel of NR columns of B: the micro-kernel keeps the (MR, NR)
 * tile of C in MR·NR/16 = 24 zmm registers; each k step loads 4 vectors of
 * B, broadcasts 6 values of A and does 24 fused multiply-adds. A is read in
 * place (rows past the last repeat it: computed, never stored); B too when
 * it is not transposed (lanes past the last column masked), else from a
 * copy in panels of NR columns, each panel's KC rows one after the other
 * (zeros past the last column).
 *
 * Which of the two runs is chosen by what the machine is, never by timing:
 * the own kernel on a CPU with AVX-512F unless OpenBLAS's kernel in force is
 * one of its AVX-512 ones, which is faster (bench/bench_forward_floor.c:
 * OpenBLAS 0.3.21's SkylakeX sgemm 131-147 GFLOP/s, this kernel 112-117, on
 * the pass's products on a Xeon, model 207), or, on AMD Zen 4, one of its
 * AVX2 ones (agm_blas_core_beats_own). */
#include <cblas.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "sgemm.h"
#include "vmath.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AGM_HAVE_AVX512 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define AGM_HAVE_AVX512 0
#endif

#define MR 6
#define NR 64
#define KC AGM_SGEMM_KC
#define NC 256

static size_t min_z(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

size_t agm_sgemm_packed_size(size_t k, size_t n)
{
    return k * round_up(n, NR);
}

size_t agm_sgemm_scratch(size_t n)
{
    return agm_sgemm_packed_size(KC, n);
}

/* The copy of op(B) = Bᵀ (B (n, k), rows ldb apart): blocks of KC rows of
 * op(B) (the last one shorter), each (rows, round_up(n, NR)) as panels of
 * NR columns, each panel its rows one after the other. Sixteen rows of the
 * panel at a time, so reads and writes both stay in a few cache lines. */
static void pack_trans(const float *b, size_t ldb, size_t k, size_t n, float *buf)
{
    size_t npad = round_up(n, NR);
    for (size_t pc = 0; pc < k; pc += KC) {
        size_t kcb = min_z(KC, k - pc);
        for (size_t jr = 0; jr < n; jr += NR) {
            size_t nr = min_z(NR, n - jr);
            float *dst = buf + pc * npad + jr * kcb;
            for (size_t k0 = 0; k0 < kcb; k0 += 16) {
                size_t k1 = min_z(k0 + 16, kcb);
                for (size_t j = 0; j < nr; j++) {
                    const float *col = b + (jr + j) * ldb + pc;
                    for (size_t kk = k0; kk < k1; kk++)
                        dst[kk * NR + j] = col[kk];
                }
                for (size_t kk = k0; nr < NR && kk < k1; kk++)
                    memset(dst + kk * NR + nr, 0, (NR - nr) * sizeof *dst);
            }
        }
    }
}

/* ---- the AVX-512 micro-kernel ----------------------------------------- */

#if AGM_HAVE_AVX512

/* Lanes of column group g (16 columns) that lie inside the nr columns. */
static __mmask16 group_mask(size_t nr, int g)
{
    size_t lo = (size_t)g * 16;
    if (nr >= lo + 16)
        return 0xFFFF;
    return nr > lo ? (__mmask16)((1u << (nr - lo)) - 1) : 0;
}

#define AGM_ROW(i)                                                                                 \
    do {                                                                                           \
        __m512 ai = _mm512_set1_ps(a##i[kk]);                                                      \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                                                \
        c##i##2 = _mm512_fmadd_ps(ai, b2, c##i##2);                                                \
        c##i##3 = _mm512_fmadd_ps(ai, b3, c##i##3);                                                \
    } while (0)

#define AGM_STORE1(i, g)                                                                           \
    do {                                                                                           \
        float *p = c + (i) * ldc + (g) * 16;                                                       \
        __m512 v = c##i##g;                                                                        \
        if (!first)                                                                                \
            v = _mm512_add_ps(_mm512_maskz_loadu_ps(m##g, p), v);                                  \
        _mm512_mask_storeu_ps(p, m##g, v);                                                         \
    } while (0)

#define AGM_STORE(i)                                                                               \
    do {                                                                                           \
        if ((i) < mr) {                                                                            \
            AGM_STORE1(i, 0);                                                                      \
            AGM_STORE1(i, 1);                                                                      \
            AGM_STORE1(i, 2);                                                                      \
            AGM_STORE1(i, 3);                                                                      \
        }                                                                                          \
    } while (0)

/* The C tile of mr <= MR rows and nr <= NR columns (rows ldc apart) = the
 * product over kc of A's rows (lda apart) and B's panel (rows ldb apart)
 * (first), or C + that product. Rows past mr repeat the last row, columns
 * past nr are neither read nor stored. */
__attribute__((target("avx512f"))) static void kernel(size_t kc, const float *a, size_t lda,
                                                      size_t mr, const float *b, size_t ldb,
                                                      float *c, size_t ldc, size_t nr, int first)
{
    const float *a0 = a, *a1 = a + min_z(1, mr - 1) * lda, *a2 = a + min_z(2, mr - 1) * lda,
                *a3 = a + min_z(3, mr - 1) * lda, *a4 = a + min_z(4, mr - 1) * lda,
                *a5 = a + min_z(5, mr - 1) * lda;
    __mmask16 m0 = group_mask(nr, 0), m1 = group_mask(nr, 1), m2 = group_mask(nr, 2),
              m3 = group_mask(nr, 3);
    __m512 z = _mm512_setzero_ps();
    __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
    __m512 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
    __m512 c40 = z, c41 = z, c42 = z, c43 = z, c50 = z, c51 = z, c52 = z, c53 = z;
    for (size_t kk = 0; kk < kc; kk++) {
        const float *bk = b + kk * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(m0, bk), b1 = _mm512_maskz_loadu_ps(m1, bk + 16);
        __m512 b2 = _mm512_maskz_loadu_ps(m2, bk + 32), b3 = _mm512_maskz_loadu_ps(m3, bk + 48);
        AGM_ROW(0);
        AGM_ROW(1);
        AGM_ROW(2);
        AGM_ROW(3);
        AGM_ROW(4);
        AGM_ROW(5);
    }
    AGM_STORE(0);
    AGM_STORE(1);
    AGM_STORE(2);
    AGM_STORE(3);
    AGM_STORE(4);
    AGM_STORE(5);
}

#undef AGM_ROW
#undef AGM_STORE1
#undef AGM_STORE

/* Blocks of k, then of NC columns, then MR rows against each NR panel. */
static void run_native(const agm_bmat *bm, size_t m, size_t n, size_t k, const float *a,
                       size_t lda, float *c, size_t ldc, int add)
{
    size_t npad = round_up(bm->n, NR);
    for (size_t pc = 0; pc < k; pc += KC) {
        size_t kcb = min_z(KC, bm->k - pc), kc = min_z(KC, k - pc);
        int first = !add && pc == 0;
        for (size_t jc = 0; jc < n; jc += NC)
            for (size_t ir = 0; ir < m; ir += MR)
                for (size_t jr = jc; jr < min_z(jc + NC, n); jr += NR) {
                    const float *b = bm->packed ? bm->packed + pc * npad + jr * kcb
                                                : bm->b + pc * bm->ldb + jr;
                    kernel(kc, a + ir * lda + pc, lda, min_z(MR, m - ir), b,
                           bm->packed ? NR : bm->ldb, c + ir * ldc + jr, ldc, min_z(NR, n - jr),
                           first);
                }
    }
}

#else

static void run_native(const agm_bmat *bm, size_t m, size_t n, size_t k, const float *a,
                       size_t lda, float *c, size_t ldc, int add)
{
    (void)bm, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)c, (void)ldc, (void)add;
}

#endif

/* ---- dispatch ---------------------------------------------------------- */

static atomic_int has_avx512 = -1, forced = -1, blas_wins = -1, own_forced = -1;

int agm_avx512(void)
{
    int has = atomic_load_explicit(&has_avx512, memory_order_relaxed);
    if (has < 0) { /* threads racing here all store the same value */
#if AGM_HAVE_AVX512
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx512f") != 0;
#else
        has = 0;
#endif
        atomic_store_explicit(&has_avx512, has, memory_order_relaxed);
    }
    int f = atomic_load_explicit(&forced, memory_order_relaxed);
    return f >= 0 ? f && has : has;
}

void agm_avx512_force(int on)
{
    atomic_store_explicit(&forced, on, memory_order_relaxed);
}

/* 1 on AMD's family 19h (Zen 3 and Zen 4; of the two only Zen 4 has
 * AVX-512F), whose cores run each 512-bit operation as two 256-bit halves:
 * there OpenBLAS's AVX2 sgemm kernels are as fast as its AVX-512 ones, and
 * faster than the own kernel (docs/engine.md, "Speed"). Read with CPUID
 * (vendor string, then the family: base family, plus the extended family
 * when the base is 0xf). Zen 5 (family 1Ah) has full-width units on its
 * desktop and server parts and keeps the own kernel. */
static int cpu_avx512_halved(void)
{
#if AGM_HAVE_AVX512
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u || d != 0x69746e65u ||
        c != 0x444d4163u) /* "Auth" "enti" "cAMD" */
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned family = (a >> 8) & 0xf;
    if (family == 0xf)
        family += (a >> 20) & 0xff;
    return family == 0x19;
#else
    return 0;
#endif
}

int agm_blas_core_beats_own(const char *core, int avx512_halved)
{
    /* driver/others/dynamic.c's names; its SkylakeX sgemm serves the three
     * AVX-512 cores in 0.3.21, its Haswell sgemm the two AVX2 ones */
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *const avx2[] = {"Haswell", "Zen"};
    for (size_t i = 0; core && i < sizeof avx512 / sizeof *avx512; i++)
        if (strncasecmp(core, avx512[i], strlen(avx512[i])) == 0)
            return 1;
    for (size_t i = 0; core && avx512_halved && i < sizeof avx2 / sizeof *avx2; i++)
        if (strncasecmp(core, avx2[i], strlen(avx2[i])) == 0)
            return 1;
    return 0;
}

int agm_sgemm_own(void)
{
    if (!agm_avx512())
        return 0;
    int f = atomic_load_explicit(&own_forced, memory_order_relaxed);
    if (f >= 0)
        return f;
    int blas = atomic_load_explicit(&blas_wins, memory_order_relaxed);
    if (blas < 0) { /* threads racing here all store the same value */
        blas = agm_blas_core_beats_own(openblas_get_corename(), cpu_avx512_halved());
        atomic_store_explicit(&blas_wins, blas, memory_order_relaxed);
    }
    return !blas;
}

void agm_sgemm_force_own(int own)
{
    atomic_store_explicit(&own_forced, own, memory_order_relaxed);
}

void agm_sgemm_prepare(agm_bmat *bm, int trans, const float *b, size_t ldb, size_t k, size_t n,
                       float *buf)
{
    *bm = (agm_bmat){b, ldb, trans, k, n, NULL};
    if (trans && agm_sgemm_own()) {
        pack_trans(b, ldb, k, n, buf);
        bm->packed = buf;
    }
}

void agm_sgemm_run(const agm_bmat *bm, size_t m, size_t n, size_t k, const float *a, size_t lda,
                   float *c, size_t ldc, int add)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; !add && i < m; i++)
            memset(c + i * ldc, 0, n * sizeof *c);
        return;
    }
    if (agm_sgemm_own())
        run_native(bm, m, n, k, a, lda, c, ldc, add);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, bm->trans ? CblasTrans : CblasNoTrans, (int)m,
                    (int)n, (int)k, 1.0f, a, (int)lda, bm->b, (int)bm->ldb, add ? 1.0f : 0.0f, c,
                    (int)ldc);
}

void agm_sgemm(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
               const float *b, size_t ldb, float *c, size_t ldc, float *scratch)
{
    agm_bmat bm;
    if (!trans || !agm_sgemm_own() || k == 0) {
        agm_sgemm_prepare(&bm, trans, b, ldb, k, n, NULL);
        agm_sgemm_run(&bm, m, n, k, a, lda, c, ldc, 0);
        return;
    }
    for (size_t pc = 0; pc < k; pc += KC) { /* op(B)'s rows pc .. pc + kc: B's columns */
        agm_sgemm_prepare(&bm, 1, b + pc, ldb, min_z(KC, k - pc), n, scratch);
        agm_sgemm_run(&bm, m, n, bm.k, a + pc, lda, c, ldc, pc > 0);
    }
}

void agm_sgemm_bias(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
                    const float *b, size_t ldb, const float *bias, float *c, size_t ldc,
                    float *scratch)
{
    if (bias && k > 0 && m > 0 && n > 0 && !agm_sgemm_own()) {
        for (size_t i = 0; i < m; i++)
            memcpy(c + i * ldc, bias, n * sizeof *c);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans, (int)m,
                    (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, 1.0f, c, (int)ldc);
        return;
    }
    agm_sgemm(trans, m, n, k, a, lda, b, ldb, c, ldc, scratch);
    for (size_t i = 0; bias && i < m; i++)
        agm_add_f32(c + i * ldc, bias, n);
}
