/* bench_model_memory.c — peak memory and time of loading a ~1 B-parameter
 * BF16 LLaMA-family model and running one forward pass on it.
 *
 * Writes a synthetic model folder (config.json + model.safetensors, BF16,
 * values from a fixed xorshift generator, small so the pass stays finite)
 * into a temporary folder, then measures with getrusage(RUSAGE_SELF).ru_maxrss
 * (peak resident set, which counts the mapped weight file's resident pages)
 * and CLOCK_MONOTONIC:
 *   load, forward f32 and forward f64 on 32 tokens.
 * Exits 1 if the peak RSS ever exceeds 4e9 bytes: the requirement is that a
 * 1 B-parameter BF16 model works within 4 GB. The folder is removed at the end.
 *
 *   build/bench/bench_model_memory          LLaMA-3.2-1B's shape (1.24e9
 *                                            parameters: vocab 128256, d_ff 8192)
 *   build/bench/bench_model_memory small    a 0.79e9-parameter variant (below)
 *   build/bench/bench_model_memory 8b CLI   LLaMA-3-8B's shape (8.0e9 parameters,
 *                                            16 GB; `make bench-8b`), see below
 *
 * 8b: the folder (16 GB on disk, in TMPDIR or /tmp) is analysed by the CLI
 * as a child process, `CLI analyze DIR --tokens ... (128 ids) --metrics
 * entropy_normalized,effective_rank`, and the child's peak RSS (wait4's
 * ru_maxrss) must stay within 17e9 bytes: the weights stay in the mapping in
 * their stored dtype (a whole f32 copy would be 32 GB). Beside its tokens/s
 * the bench prints the BF16 -> f32 sgemm floor: each layer matrix widened
 * into one f32 buffer and multiplied by 128 rows with OpenBLAS's cblas_sgemm
 * (its kernel for this CPU), the widening and the products timed apart.
 * The folder is removed at the end, also on failure or SIGINT/SIGTERM/SIGHUP.
 * Uses only the public API, libc and CBLAS. */
#include <cblas.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attngeom/model.h"

#define RSS_LIMIT 4e9 /* bytes */
#define RSS_LIMIT_8B 17e9
#define N_TOKENS 32
#define N_TOKENS_8B 128
#define MAX_TENSORS 512 /* 8b: 2 + 9 per layer = 290 */

typedef struct {
    const char *name;
    int d, layers, heads, kv_heads, head_dim, d_ff, vocab;
} shape;

/* The default is LLaMA-3.2-1B's shape: above 1e9 parameters, as the
 * requirement says. "small": hidden 2048, 16 layers, GQA 32/8 heads of 64,
 * SwiGLU 5632, vocab 32000 (TinyLlama-1.1B's shape without its 22 layers). */
static const shape SHAPES[] = {
    {"llama-3.2-1b", 2048, 16, 32, 8, 64, 8192, 128256},
    {"small", 2048, 16, 32, 8, 64, 5632, 32000},
    {"8b", 4096, 32, 32, 8, 128, 14336, 128256}, /* LLaMA-3-8B (Meta-Llama-3-8B config.json) */
};

typedef struct {
    char name[112]; /* "model." + a local name of < 96 bytes */
    size_t rows, cols; /* cols 0: a vector */
    size_t off;        /* byte offset in the data area */
    int ones;          /* RMSNorm weight: all 1.0 */
} tensor;

typedef struct {
    tensor t[MAX_TENSORS];
    int n;
    size_t params;
    size_t bytes; /* of the data area */
} plan;

static void add(plan *p, const char *name, size_t rows, size_t cols, int ones)
{
    if (p->n == MAX_TENSORS) {
        fprintf(stderr, "model_memory: more than %d tensors\n", MAX_TENSORS);
        exit(2);
    }
    tensor *t = &p->t[p->n++];
    snprintf(t->name, sizeof t->name, "model.%s", name);
    t->rows = rows;
    t->cols = cols;
    t->ones = ones;
    t->off = p->bytes;
    p->params += rows * (cols ? cols : 1);
    p->bytes = 2 * p->params;
}

/* Every tensor LlamaModel has (no lm_head: the engine never reads it). */
static void make_plan(const shape *s, plan *p)
{
    size_t d = (size_t)s->d, dq = (size_t)s->heads * s->head_dim,
           dkv = (size_t)s->kv_heads * s->head_dim, ff = (size_t)s->d_ff;
    char n[96];
    memset(p, 0, sizeof *p);
    add(p, "embed_tokens.weight", (size_t)s->vocab, d, 0);
    for (int l = 0; l < s->layers; l++) {
#define T(x, r, c, o) (snprintf(n, sizeof n, "layers.%d.%s", l, x), add(p, n, r, c, o))
        T("input_layernorm.weight", d, 0, 1);
        T("self_attn.q_proj.weight", dq, d, 0);
        T("self_attn.k_proj.weight", dkv, d, 0);
        T("self_attn.v_proj.weight", dkv, d, 0);
        T("self_attn.o_proj.weight", d, dq, 0);
        T("post_attention_layernorm.weight", d, 0, 1);
        T("mlp.gate_proj.weight", ff, d, 0);
        T("mlp.up_proj.weight", ff, d, 0);
        T("mlp.down_proj.weight", d, ff, 0);
#undef T
    }
    add(p, "norm.weight", d, 0, 1);
}

static size_t nelem(const tensor *t) { return t->rows * (t->cols ? t->cols : 1); }

/* The safetensors JSON header, padded with spaces to a multiple of 8 so the
 * data area is aligned. Returns its length (0 if buf is too small). */
static size_t header(const plan *p, char *buf, size_t size)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, size - k, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < p->n && k < size; i++) {
        const tensor *t = &p->t[i];
        size_t off = t->off, bytes = 2 * nelem(t);
        if (t->cols)
            k += (size_t)snprintf(buf + k, size - k, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%zu,%zu],\"data_offsets\":[%zu,%zu]}",
                                  t->name, t->rows, t->cols, off, off + bytes);
        else
            k += (size_t)snprintf(buf + k, size - k, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}",
                                  t->name, t->rows, off, off + bytes);
    }
    while (k < size && (k + 1) % 8)
        buf[k++] = ' ';
    if (k + 1 >= size)
        return 0;
    buf[k++] = '}';
    return k;
}

/* xorshift32: cheap, deterministic. Values uniform in ±0.03, truncated to
 * BF16 (the top 16 bits of the float). */
static uint16_t next_bf16(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    float f = ((float)(*x >> 8) / 16777216.0f - 0.5f) * 0.06f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

/* One tensor's data in 16 MiB sequential writes (little-endian host). */
static int write_tensor(FILE *f, const tensor *t, uint32_t *rng, uint16_t *buf, size_t cap)
{
    size_t left = nelem(t);
    while (left) {
        size_t c = left < cap ? left : cap;
        for (size_t i = 0; i < c; i++)
            buf[i] = t->ones ? 0x3f80 : next_bf16(rng); /* 0x3f80 = 1.0 */
        if (fwrite(buf, 2, c, f) != c)
            return -1;
        left -= c;
    }
    return 0;
}

static int write_weights(const char *path, const plan *p, size_t *file_bytes)
{
    size_t hsize = 64 + (size_t)p->n * 200, cap = (size_t)8 << 20;
    char *h = malloc(hsize);
    uint16_t *buf = malloc(cap * sizeof *buf);
    FILE *f = fopen(path, "wb");
    size_t n = h ? header(p, h, hsize) : 0;
    uint64_t n64 = n;
    uint32_t rng = 2463534242u;
    int rc = f && buf && n && fwrite(&n64, 8, 1, f) == 1 && fwrite(h, 1, n, f) == n ? 0 : -1;
    for (int i = 0; rc == 0 && i < p->n; i++)
        rc = write_tensor(f, &p->t[i], &rng, buf, cap);
    *file_bytes = 8 + n + 2 * p->params;
    if (f && fclose(f))
        rc = -1;
    free(h);
    free(buf);
    return rc;
}

static int write_config(const char *path, const shape *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"model_type\": \"llama\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
               "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
               "\"intermediate_size\": %d, \"vocab_size\": %d, \"max_position_embeddings\": 2048, "
               "\"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"hidden_act\": \"silu\", "
               "\"torch_dtype\": \"bfloat16\"}\n",
            s->d, s->layers, s->heads, s->kv_heads, s->head_dim, s->d_ff, s->vocab);
    return fclose(f) ? -1 : 0;
}

/* ---- measurements ------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Peak resident set so far, bytes (Linux reports ru_maxrss in KiB). */
static double peak_rss(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0;
}

/* One pass on N_TOKENS ids; 0 if it succeeded and every hidden state is finite. */
static int run_pass(const ag_model *m, const ag_model_config *g, ag_precision pr, double *secs)
{
    int32_t ids[N_TOKENS];
    size_t cnt = (size_t)(g->n_layer + 1) * N_TOKENS * g->d_model;
    double *hidden = malloc(cnt * sizeof *hidden);
    ag_error err = {0};
    for (int i = 0; i < N_TOKENS; i++)
        ids[i] = (int32_t)((i * 7919u + 13u) % (unsigned)g->vocab_size);
    double t0 = now();
    int rc = hidden ? ag_model_forward(m, ids, N_TOKENS, pr, NULL, NULL, hidden, &err) : AG_ENOMEM;
    *secs = now() - t0;
    if (rc != AG_OK)
        fprintf(stderr, "model_memory: forward failed: %s\n", err.message);
    for (size_t i = 0; rc == AG_OK && i < cnt; i++)
        if (!isfinite(hidden[i])) {
            fprintf(stderr, "model_memory: non-finite hidden state at %zu\n", i);
            rc = AG_ENONFINITE;
        }
    free(hidden);
    return rc;
}

static int measure(const char *dir, const shape *s, const plan *p, size_t file_bytes)
{
    ag_model *m = NULL;
    ag_error err = {0};
    double rss0 = peak_rss(), t0 = now(), secs;
    if (ag_model_load(dir, &m, &err) != AG_OK) {
        fprintf(stderr, "model_memory: load failed: %s\n", err.message);
        return 1;
    }
    double load_s = now() - t0, load_rss = peak_rss();
    printf("model_memory: %s shape, %zu params (%.2fe9) BF16, file %.2f GB; before load peak RSS %.2f GB\n",
           s->name, p->params, p->params / 1e9, file_bytes / 1e9, rss0 / 1e9);
    printf("model_memory: load %.2f s, peak RSS %.2f GB\n", load_s, load_rss / 1e9);
    int bad = 0;
    const char *names[2] = {"f32", "f64"};
    ag_precision prs[2] = {AG_PRECISION_F32, AG_PRECISION_F64};
    for (int i = 0; i < 2 && !bad; i++) {
        bad = run_pass(m, ag_model_get_config(m), prs[i], &secs) != AG_OK;
        printf("model_memory: forward %s %d tokens %.2f s, peak RSS %.2f GB\n", names[i],
               N_TOKENS, secs, peak_rss() / 1e9);
    }
    ag_model_free(m);
    if (peak_rss() > RSS_LIMIT) {
        printf("model_memory: FAIL: peak RSS %.2f GB exceeds %.1f GB\n", peak_rss() / 1e9, RSS_LIMIT / 1e9);
        bad = 1;
    }
    return bad;
}

/* ---- 8b: the CLI as a child, and the sgemm floor ---------------------- */

/* 128 ids, spread over the vocabulary, as "--tokens" wants them. */
static void token_list(int vocab, char *buf, size_t size)
{
    size_t k = 0;
    for (int i = 0; i < N_TOKENS_8B && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%u", i ? "," : "",
                              (unsigned)((i * 7919u + 13u) % (unsigned)vocab));
}

static double cpu_of(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec * 1e-6 +
           (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec * 1e-6;
}

/* This process's CPU time so far, all its threads. */
static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return cpu_of(&ru);
}

/* Runs CLI analyze on dir (stdout to /dev/null); its wall time, CPU time
 * and peak RSS (wait4's rusage). 0 if it exited 0. */
static int run_child(const char *cli, const char *dir, int vocab, double *secs, double *cpu,
                     double *rss)
{
    static char ids[N_TOKENS_8B * 8];
    token_list(vocab, ids, sizeof ids);
    char *argv[] = {(char *)cli, "analyze", (char *)dir, "--tokens", ids, "--metrics",
                    "entropy_normalized,effective_rank", "--format", "csv", NULL};
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        execv(cli, argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
        return -1;
    *secs = now() - t0;
    *cpu = cpu_of(&ru);
    *rss = (double)ru.ru_maxrss * 1024.0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The pass's matrix products alone: every layer matrix (stored [out, in],
 * as nn.Linear) widened BF16 -> f32 into one buffer, then
 * C (128, out) = X (128, in) · Wᵀ by cblas_sgemm. Seconds of the widening
 * and of the products, apart, and the CPU time of both. */
static int sgemm_floor(const char *path, const plan *p, size_t data0, double *widen_s, double *gemm_s,
                       double *cpu)
{
    size_t maxw = 0, maxin = 0, maxout = 0;
    for (int i = 0; i < p->n; i++)
        if (p->t[i].cols && strstr(p->t[i].name, "layers.")) {
            maxw = nelem(&p->t[i]) > maxw ? nelem(&p->t[i]) : maxw;
            maxin = p->t[i].cols > maxin ? p->t[i].cols : maxin;
            maxout = p->t[i].rows > maxout ? p->t[i].rows : maxout;
        }
    int fd = open(path, O_RDONLY);
    struct stat sb;
    const unsigned char *map = NULL;
    if (fd >= 0 && fstat(fd, &sb) == 0)
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    float *w = malloc(maxw * sizeof *w), *x = malloc(N_TOKENS_8B * maxin * sizeof *x),
          *c = malloc(N_TOKENS_8B * maxout * sizeof *c);
    int rc = map && map != MAP_FAILED && w && x && c ? 0 : -1;
    uint32_t rng = 88172645u;
    for (size_t i = 0; rc == 0 && i < N_TOKENS_8B * maxin; i++) {
        uint16_t b = next_bf16(&rng);
        uint32_t u = (uint32_t)b << 16;
        memcpy(&x[i], &u, sizeof u);
    }
    *widen_s = *gemm_s = 0;
    double cpu0 = cpu_self();
    for (int i = 0; rc == 0 && i < p->n; i++) {
        const tensor *t = &p->t[i];
        if (!t->cols || !strstr(t->name, "layers."))
            continue;
        const uint16_t *src = (const uint16_t *)(map + data0 + t->off);
        double t0 = now();
        for (size_t e = 0; e < nelem(t); e++) {
            uint32_t u = (uint32_t)src[e] << 16;
            memcpy(&w[e], &u, sizeof u);
        }
        double t1 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N_TOKENS_8B, (int)t->rows, (int)t->cols,
                    1.0f, x, (int)t->cols, w, (int)t->cols, 0.0f, c, (int)t->rows);
        *widen_s += t1 - t0;
        *gemm_s += now() - t1;
    }
    *cpu = cpu_self() - cpu0;
    if (map && map != MAP_FAILED)
        munmap((void *)map, (size_t)sb.st_size);
    if (fd >= 0)
        close(fd);
    free(w);
    free(x);
    free(c);
    return rc;
}

static int measure_8b(const char *cli, const char *dir, const char *st, const shape *s, const plan *p,
                      size_t file_bytes)
{
    double secs = 0, cpu = 0, rss = 0, widen_s = 0, gemm_s = 0, fcpu = 0;
    printf("model_memory: %s shape, %zu params (%.2fe9) BF16, file %.2f GB\n", s->name, p->params,
           p->params / 1e9, file_bytes / 1e9);
    if (run_child(cli, dir, s->vocab, &secs, &cpu, &rss)) {
        fprintf(stderr, "model_memory: %s analyze %s failed\n", cli, dir);
        return 1;
    }
    printf("model_memory: analyze --metrics entropy_normalized,effective_rank, %d tokens: %.1f s "
           "(load included; CPU %.1f s), %.2f tokens/s, child peak RSS %.2f GB\n",
           N_TOKENS_8B, secs, cpu, N_TOKENS_8B / secs, rss / 1e9);
    if (sgemm_floor(st, p, file_bytes - p->bytes, &widen_s, &gemm_s, &fcpu)) {
        fprintf(stderr, "model_memory: sgemm floor: cannot map %s or allocate\n", st);
        return 1;
    }
    printf("model_memory: sgemm floor (cblas_sgemm, %d OpenBLAS threads, kernel %s), %d tokens: "
           "products %.1f s (%.2f tokens/s), BF16->f32 widening %.1f s; both %.2f tokens/s, CPU %.1f s\n",
           openblas_get_num_threads(), openblas_get_corename(), N_TOKENS_8B, gemm_s,
           N_TOKENS_8B / gemm_s, widen_s, N_TOKENS_8B / (gemm_s + widen_s), fcpu);
    if (rss > RSS_LIMIT_8B) {
        printf("model_memory: FAIL: child peak RSS %.2f GB exceeds %.0f GB\n", rss / 1e9, RSS_LIMIT_8B / 1e9);
        return 1;
    }
    return 0;
}

/* OpenBLAS 0.3.21 runs SSE3 "Prescott" kernels on CPUs it does not know
 * (Intel family 6 model 207 among them): where the CPU has AVX-512
 * F/BW/DQ/VL and the caller set no OPENBLAS_CORETYPE, run again with
 * SkylakeX, as bench/peers.py does (OpenBLAS reads it when it loads, before
 * main). The child analyze inherits it. */
static void tune_openblas(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") || !__builtin_cpu_supports("avx512f") ||
        !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512vl"))
        return;
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    execv("/proc/self/exe", argv);
    perror("model_memory: re-exec with OPENBLAS_CORETYPE=SkylakeX"); /* runs on as it is */
}

/* The folder's paths, removed at the end, also on a signal. */
static char g_dir[512], g_cfg[600], g_st[600];

static void cleanup(void)
{
    unlink(g_st);
    unlink(g_cfg);
    rmdir(g_dir);
}

static void on_signal(int sig)
{
    cleanup(); /* unlink and rmdir are async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    const shape *s = &SHAPES[0];
    const char *cli = NULL;
    if (argc == 2 && !strcmp(argv[1], SHAPES[1].name))
        s = &SHAPES[1];
    else if (argc == 3 && !strcmp(argv[1], SHAPES[2].name))
        s = &SHAPES[2], cli = argv[2];
    else if (argc > 1) {
        fprintf(stderr, "usage: %s [%s | %s CLI]\n", argv[0], SHAPES[1].name, SHAPES[2].name);
        return 2;
    }
    if (cli)
        tune_openblas(argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    static plan p;
    make_plan(s, &p);
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/ag_bench_mem.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("model_memory: mkdtemp");
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    snprintf(g_cfg, sizeof g_cfg, "%s/config.json", g_dir);
    snprintf(g_st, sizeof g_st, "%s/model.safetensors", g_dir);
    size_t file_bytes = 0;
    double t0 = now();
    int bad = write_config(g_cfg, s) || write_weights(g_st, &p, &file_bytes);
    if (bad)
        fprintf(stderr, "model_memory: cannot write %s\n", g_dir);
    else
        printf("model_memory: wrote %s in %.1f s\n", g_dir, now() - t0);
    fflush(stdout);
    if (!bad)
        bad = cli ? measure_8b(cli, g_dir, g_st, s, &p, file_bytes) : measure(g_dir, s, &p, file_bytes);
    cleanup();
    return bad ? 1 : 0;
}
