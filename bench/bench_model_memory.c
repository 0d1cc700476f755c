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
 * Uses only the public API and libc. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "attngeom/model.h"

#define RSS_LIMIT 4e9 /* bytes */
#define N_TOKENS 32
#define MAX_TENSORS 256

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
};

typedef struct {
    char name[112]; /* "model." + a local name of < 96 bytes */
    size_t rows, cols; /* cols 0: a vector */
    int ones;          /* RMSNorm weight: all 1.0 */
} tensor;

typedef struct {
    tensor t[MAX_TENSORS];
    int n;
    size_t params;
} plan;

static void add(plan *p, const char *name, size_t rows, size_t cols, int ones)
{
    tensor *t = &p->t[p->n++];
    snprintf(t->name, sizeof t->name, "model.%s", name);
    t->rows = rows;
    t->cols = cols;
    t->ones = ones;
    p->params += rows * (cols ? cols : 1);
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
    size_t k = 0, off = 0;
    k += (size_t)snprintf(buf + k, size - k, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < p->n && k < size; i++) {
        const tensor *t = &p->t[i];
        size_t bytes = 2 * nelem(t);
        if (t->cols)
            k += (size_t)snprintf(buf + k, size - k, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%zu,%zu],\"data_offsets\":[%zu,%zu]}",
                                  t->name, t->rows, t->cols, off, off + bytes);
        else
            k += (size_t)snprintf(buf + k, size - k, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}",
                                  t->name, t->rows, off, off + bytes);
        off += bytes;
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

int main(int argc, char **argv)
{
    const shape *s = &SHAPES[0];
    if (argc > 1 && !strcmp(argv[1], SHAPES[1].name))
        s = &SHAPES[1];
    else if (argc > 1) {
        fprintf(stderr, "usage: %s [%s]\n", argv[0], SHAPES[1].name);
        return 2;
    }
    static plan p;
    make_plan(s, &p);
    const char *tmp = getenv("TMPDIR");
    char dir[512], cfg[600], st[600];
    snprintf(dir, sizeof dir, "%s/ag_bench_mem.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("model_memory: mkdtemp");
        return 1;
    }
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    size_t file_bytes = 0;
    double t0 = now();
    int bad = write_config(cfg, s) || write_weights(st, &p, &file_bytes);
    if (bad)
        fprintf(stderr, "model_memory: cannot write %s\n", dir);
    else
        printf("model_memory: wrote %s in %.1f s\n", dir, now() - t0);
    if (!bad)
        bad = measure(dir, s, &p, file_bytes);
    unlink(st);
    unlink(cfg);
    rmdir(dir);
    return bad ? 1 : 0;
}
