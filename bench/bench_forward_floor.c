/* bench_forward_floor — the sgemm floor of the float32 forward pass (issue 31,
 * item 2): the time of the pass's matrix products alone, for the bench's
 * forward workload (bench/peers.py: GPT-2-small shape, 16 texts × 470
 * tokens), through OpenBLAS's cblas_sgemm with the kernel in force
 * (openblas_get_corename(); bench/peers.py sets OPENBLAS_CORETYPE=SkylakeX on
 * an AVX-512 CPU, the fastest sgemm this machine has: attngeom's own AVX-512
 * kernel, which the pass runs when OpenBLAS's kernel is older, measured
 * 93-122 GFLOP/s against OpenBLAS SkylakeX's 121-152 on this round's Xeon;
 * docs/performance.md) — on one thread.
 *
 * Per layer and text (n = 470, d = 768, 12 heads of 64, d_ff = 3072):
 *   QKV        [n, 768] × [768, 2304]   (Conv1D weights, [in, out] as stored)
 *   QKᵀ, A·V   per head, causal, as the pass computes them: blocks of 48
 *              queries against the keys up to the block's last query
 *   c_proj     [n, 768] × [768, 768]
 *   c_fc       [n, 768] × [768, 3072]
 *   mlp c_proj [n, 3072] × [3072, 768]
 * 12 layers × 16 texts; thread CPU time (the machine is shared), the best of
 * REPS runs of one layer × 16 texts, scaled by 12.
 *
 * Usage: bench_forward_floor [ATTNGEOM MODEL TOKENS_FILE]
 * With the three arguments (bench/peers.py passes them: its random
 * GPT-2-small folder and its 16 texts), it also runs `ATTNGEOM analyze MODEL
 * --tokens-file TOKENS_FILE --metrics entropy_mean -j 1` pinned to this
 * process's CPU with one BLAS thread and prints the pass's CPU time beside
 * the floor and their ratio (issue 31's goal: ≤ 1.2×).
 *
 * Like every bench it uses only the public API (and OpenBLAS): under an
 * AVX-512 OpenBLAS kernel the pass's products are these cblas_sgemm calls
 * (src/kernel/sgemm.c). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

#include "bench_clock.h"

extern char *openblas_get_corename(void);
extern void openblas_set_num_threads(int);

enum { TEXTS = 16, N = 470, D = 768, HEADS = 12, HD = 64, DFF = 3072, LAYERS = 12, QB = 48 };
enum { REPS = 3 };

typedef struct {
    float *x, *w_qkv, *w_o, *w_fc, *w_fc2, *qkv, *s, *ctx, *h, *f;
} buffers;

typedef void (*gemm_fn)(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
                        const float *b, size_t ldb, float *c, size_t ldc, const buffers *bf);

static void gemm_blas(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
                      const float *b, size_t ldb, float *c, size_t ldc, const buffers *bf)
{
    (void)bf;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

static float *fill(size_t cnt, unsigned *seed)
{
    float *p = aligned_alloc(64, (cnt * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_forward_floor: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < cnt; i++)
        p[i] = (float)rand_r(seed) / (float)RAND_MAX * 0.04f - 0.02f;
    return p;
}

/* Every head's QKᵀ and A·V for one text, causal, by blocks of QB queries. */
static void heads(gemm_fn g, const buffers *bf)
{
    size_t ld = 3 * D;
    for (size_t hh = 0; hh < HEADS; hh++) {
        const float *q = bf->qkv + hh * HD, *k = q + D, *v = q + 2 * D;
        for (size_t i0 = 0; i0 < N; i0 += QB) {
            size_t qb = N - i0 < QB ? N - i0 : QB, vis = i0 + qb;
            g(1, qb, vis, HD, q + i0 * ld, ld, k, ld, bf->s, N, bf);
            g(0, qb, HD, vis, bf->s, N, v, ld, bf->ctx + i0 * D + hh * HD, D, bf);
        }
    }
}

/* One layer's products for one text; seconds of each group in t[0..1]
 * (projections and MLP, heads). */
static void layer(gemm_fn g, const buffers *bf, double t[2])
{
    double t0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    g(0, N, 3 * D, D, bf->x, D, bf->w_qkv, 3 * D, bf->qkv, 3 * D, bf);
    double t1 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    heads(g, bf);
    double t2 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    g(0, N, D, D, bf->ctx, D, bf->w_o, D, bf->h, D, bf);
    g(0, N, DFF, D, bf->h, D, bf->w_fc, DFF, bf->f, DFF, bf);
    g(0, N, D, DFF, bf->f, DFF, bf->w_fc2, D, bf->x, D, bf);
    double t3 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    t[0] += (t1 - t0) + (t3 - t2);
    t[1] += t2 - t1;
}

/* The best of REPS runs of 16 texts through one layer, × LAYERS: seconds
 * of the whole pass's products; parts[0..1] as layer()'s. */
static double floor_of(gemm_fn g, const buffers *bf, double parts[2])
{
    double best = 1e300;
    for (int r = 0; r < REPS; r++) {
        double t[2] = {0, 0};
        for (int text = 0; text < TEXTS; text++)
            layer(g, bf, t);
        if (t[0] + t[1] < best) {
            best = t[0] + t[1];
            parts[0] = t[0] * LAYERS;
            parts[1] = t[1] * LAYERS;
        }
    }
    return best * LAYERS;
}

static double flops(void)
{
    double lin = 2.0 * N * D * (3.0 * D + D + DFF) + 2.0 * N * DFF * D, att = 0;
    for (size_t i0 = 0; i0 < N; i0 += QB) {
        size_t qb = N - i0 < QB ? N - i0 : QB;
        att += 2.0 * 2.0 * (double)qb * (double)(i0 + qb) * HD;
    }
    return (lin + HEADS * att) * LAYERS * TEXTS;
}

/* CPU seconds (user + system) of `cli analyze model --tokens-file tokens
 * --metrics entropy_mean -j 1`, on this process's CPU, one BLAS thread;
 * negative if it failed. */
static double pass_cpu(const char *cli, const char *model, const char *tokens)
{
    fflush(stdout); /* the child's freopen would write the buffer again */
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        setenv("OMP_NUM_THREADS", "1", 1);
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execl(cli, cli, "analyze", model, "--tokens-file", tokens, "--metrics", "entropy_mean",
              "--format", "csv", "--no-progress", "-j", "1", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Pin this process (and what it starts) to the last CPU it may use. */
static int pin(void)
{
    cpu_set_t set;
    int cpu = -1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cpu = c;
    if (cpu >= 0) {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    return cpu;
}

int main(int argc, char **argv)
{
    if (argc != 1 && argc != 4) {
        fprintf(stderr, "usage: bench_forward_floor [ATTNGEOM MODEL TOKENS_FILE]\n");
        return 2;
    }
    int cpu = pin();
    openblas_set_num_threads(1);
    unsigned seed = 31;
    buffers bf = {fill(N * D, &seed),          fill(D * 3 * D, &seed), fill(D * D, &seed),
                  fill(D * DFF, &seed),        fill(DFF * D, &seed),   fill(N * 3 * D, &seed),
                  fill(QB * N, &seed),         fill(N * D, &seed),     fill(N * D, &seed),
                  fill(N * DFF, &seed)};
    const char *core = openblas_get_corename();
    double pb[2] = {0, 0};
    double fl = floor_of(gemm_blas, &bf, pb), gf = flops() / 1e9;
    printf("forward floor: GPT-2-small products, %d texts x %d tokens, f32, one thread (CPU %d)\n",
           TEXTS, N, cpu);
    printf("  OpenBLAS sgemm (%-10s)   %7.2f s CPU  %6.1f GFLOP/s  (projections+MLP %.2f s, heads "
           "%.2f s)\n",
           core ? core : "?", fl, gf / fl, pb[0], pb[1]);
    printf("  floor                        %7.2f s  (%.1f GFLOP)\n", fl, gf);
    if (argc == 4) {
        double pass = pass_cpu(argv[1], argv[2], argv[3]);
        if (pass < 0) {
            fprintf(stderr, "bench_forward_floor: %s analyze failed\n", argv[1]);
            return 1;
        }
        printf("  whole pass (analyze -j 1)    %7.2f s CPU  = %.2fx the floor (goal <= 1.2x)\n",
               pass, pass / fl);
    }
    return 0;
}
