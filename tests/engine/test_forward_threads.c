/* test_forward_threads.c — the forward pass gives the same bytes whatever
 * runs it: without a pool and with pools of 1, 2 and 3 threads, and as
 * nested passes inside the tasks of a pool (texts in parallel), every
 * layer's X and attention handed to the callback and every hidden state
 * are memcmp-equal, at f32 and f64, on the AVX-512 paths (when the CPU has
 * them) and on the plain/cblas ones. Models: two synthetic folders written
 * here, big enough that a pass splits into many tasks of every kind (GPT-2
 * with Conv1D weights, d = 192, 3 heads of 64, d_ff 768: six column blocks
 * per projection; LLaMA in BF16 with nn.Linear weights, grouped-query heads
 * and d_ff 320, a partial column block), on 100 tokens (seven row blocks,
 * three query blocks per head), and folders of tests/data/models/arch/ on
 * as many tokens as they take (up to 60). Run from the repository root. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attngeom/model.h"
#include "attngeom/parallel.h"
#include "kernel/sgemm.h" /* agm_avx512_force, agm_sgemm_force_own */
#include "../util/test_io_util.h"

TestSuite(forward_threads, .fini = tio_cleanup);

/* ---- synthetic folders ----------------------------------------------------- */

typedef struct {
    unsigned long long seed;
    json_t *hdr;
    unsigned char *data;
    size_t off;
    const char *dtype;
} writer;

static double lcg(writer *w)
{
    w->seed = w->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(w->seed >> 11) / 9007199254740992.0 * 2 - 1;
}

/* A tensor of r (and c, 0 for a vector) values: weights uniform in
 * ±1.5/√(fan), norm weights 1 ± 0.2, biases ± 0.1. */
static void put(writer *w, const char *name, size_t r, size_t c, int norm)
{
    size_t cnt = r * (c ? c : 1), esz = strcmp(w->dtype, "F32") ? 2 : 4;
    double *v = malloc(cnt * sizeof *v), a = c ? 1.5 / sqrt((double)(r < c ? r : c)) : 0.1;
    for (size_t i = 0; i < cnt; i++)
        v[i] = (norm ? 1 : 0) + (norm ? 0.2 : a) * lcg(w);
    w->data = realloc(w->data, w->off + cnt * esz);
    tio_encode_st(w->dtype, v, cnt, w->data + w->off);
    free(v);
    json_t *shape = c ? json_pack("[I,I]", (json_int_t)r, (json_int_t)c) : json_pack("[I]", (json_int_t)r);
    json_object_set_new(w->hdr, name, json_pack("{s:s, s:o, s:[I,I]}", "dtype", w->dtype, "shape", shape,
                                                "data_offsets", (json_int_t)w->off,
                                                (json_int_t)(w->off + cnt * esz)));
    w->off += cnt * esz;
}

static const char *finish(writer *w, const char *name, const char *config)
{
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s", tio_path(name));
    mkdir(dir, 0700);
    char p[4400];
    snprintf(p, sizeof p, "%s/config.json", dir);
    cr_assert_eq(tio_write_bytes(p, config, strlen(config)), 0);
    char *js = json_dumps(w->hdr, JSON_COMPACT);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(tio_write_safetensors(p, js, w->data, w->off), 0);
    free(js);
    free(w->data);
    json_decref(w->hdr);
    return dir;
}

enum { SD = 192, SH = 3, SV = 50, SP = 128, SL = 2 };

static const char *gpt2_folder(void)
{
    writer w = {.seed = 7, .hdr = json_object(), .dtype = "F32"};
    char s[128];
    put(&w, "wte.weight", SV, SD, 0);
    put(&w, "wpe.weight", SP, SD, 0);
    for (int l = 0; l < SL; l++) {
#define N(x) (snprintf(s, sizeof s, "h.%d.%s", l, x), s)
        put(&w, N("ln_1.weight"), SD, 0, 1);
        put(&w, N("ln_1.bias"), SD, 0, 0);
        put(&w, N("attn.c_attn.weight"), SD, 3 * SD, 0);
        put(&w, N("attn.c_attn.bias"), 3 * SD, 0, 0);
        put(&w, N("attn.c_proj.weight"), SD, SD, 0);
        put(&w, N("attn.c_proj.bias"), SD, 0, 0);
        put(&w, N("ln_2.weight"), SD, 0, 1);
        put(&w, N("ln_2.bias"), SD, 0, 0);
        put(&w, N("mlp.c_fc.weight"), SD, 4 * SD, 0);
        put(&w, N("mlp.c_fc.bias"), 4 * SD, 0, 0);
        put(&w, N("mlp.c_proj.weight"), 4 * SD, SD, 0);
        put(&w, N("mlp.c_proj.bias"), SD, 0, 0);
#undef N
    }
    put(&w, "ln_f.weight", SD, 0, 1);
    put(&w, "ln_f.bias", SD, 0, 0);
    return finish(&w, "gpt2-big",
                  "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 3, \"n_embd\": 192,"
                  " \"n_positions\": 128, \"vocab_size\": 50, \"n_inner\": null}");
}

static const char *llama_folder(void)
{
    enum { FF = 320, HD = SD / SH };
    writer w = {.seed = 11, .hdr = json_object(), .dtype = "BF16"};
    char s[128];
    put(&w, "embed_tokens.weight", SV, SD, 0);
    for (int l = 0; l < SL; l++) {
#define N(x) (snprintf(s, sizeof s, "layers.%d.%s", l, x), s)
        put(&w, N("input_layernorm.weight"), SD, 0, 1);
        put(&w, N("self_attn.q_proj.weight"), SH * HD, SD, 0);
        put(&w, N("self_attn.k_proj.weight"), HD, SD, 0);
        put(&w, N("self_attn.v_proj.weight"), HD, SD, 0);
        put(&w, N("self_attn.o_proj.weight"), SD, SH * HD, 0);
        put(&w, N("post_attention_layernorm.weight"), SD, 0, 1);
        put(&w, N("mlp.gate_proj.weight"), FF, SD, 0);
        put(&w, N("mlp.up_proj.weight"), FF, SD, 0);
        put(&w, N("mlp.down_proj.weight"), SD, FF, 0);
#undef N
    }
    put(&w, "norm.weight", SD, 0, 1);
    return finish(&w, "llama-big",
                  "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 3,"
                  " \"num_key_value_heads\": 1, \"hidden_size\": 192, \"intermediate_size\": 320,"
                  " \"max_position_embeddings\": 128, \"vocab_size\": 50, \"rms_norm_eps\": 1e-05,"
                  " \"rope_theta\": 10000.0, \"hidden_act\": \"silu\"}");
}

/* ---- one pass, everything it hands out ------------------------------------ */

typedef struct {
    double *v; /* every layer's X then attention, in callback order */
    size_t len, cap;
    double *hidden; /* (L+1, n, d) */
    size_t hlen;
} outputs;

static void append(outputs *o, const double *x, size_t cnt)
{
    if (o->len + cnt > o->cap) {
        o->cap = 2 * (o->len + cnt);
        o->v = realloc(o->v, o->cap * sizeof *o->v);
    }
    memcpy(o->v + o->len, x, cnt * sizeof *x);
    o->len += cnt;
}

static int record(const ag_layer_view *v, void *user)
{
    append(user, v->x, v->n * v->d);
    append(user, v->attn, (size_t)v->n_head * v->n * v->n);
    return 0;
}

typedef struct {
    const ag_model *m;
    const int32_t *ids;
    size_t n;
    ag_precision prec;
    ag_pool *pool;
} pass;

static void run(const pass *p, outputs *o)
{
    const ag_model_config *g = ag_model_get_config(p->m);
    memset(o, 0, sizeof *o);
    o->hlen = (size_t)(g->n_layer + 1) * p->n * (size_t)g->d_model;
    o->hidden = malloc(o->hlen * sizeof *o->hidden);
    ag_forward_options opt = {.size = sizeof(ag_forward_options),
                              .precision = p->prec, .pool = p->pool};
    ag_error err = {0};
    int rc = ag_model_forward_ex(p->m, p->ids, p->n, &opt, record, o, o->hidden, &err);
    cr_assert_eq(rc, AG_OK, "forward: %s", err.message);
}

static void outputs_free(outputs *o)
{
    free(o->v);
    free(o->hidden);
}

static void expect_same(const outputs *a, const outputs *b, const char *what)
{
    cr_assert_eq(a->len, b->len, "%s: %zu values, reference %zu", what, a->len, b->len);
    cr_assert_eq(a->hlen, b->hlen);
    cr_expect_eq(memcmp(a->v, b->v, a->len * sizeof *a->v), 0, "%s: X or attention differs", what);
    cr_expect_eq(memcmp(a->hidden, b->hidden, a->hlen * sizeof *a->hidden), 0,
                 "%s: hidden states differ", what);
}

/* Two passes at once, each inside a task of `pool` with the same pool in
 * its options: their runs are nested, so they happen in place. */
typedef struct {
    const pass *p;
    outputs out[2];
} nested_job;

static int nested_task(size_t t, int worker, void *user)
{
    (void)worker;
    nested_job *j = user;
    run(j->p, &j->out[t]);
    return 0;
}

/* The reference (no pool) against pools of 1..3 threads and nested runs. */
static void check_pools(const ag_model *m, const int32_t *ids, size_t n, ag_precision prec,
                        const char *name)
{
    char what[160];
    outputs ref, got;
    pass p = {m, ids, n, prec, NULL};
    run(&p, &ref);
    /* a pass whose attention were uniform or empty would prove little */
    cr_assert_gt(ref.len, 0);
    for (int t = 1; t <= 3; t++) {
        cr_assert_eq(ag_pool_new(t, &p.pool, NULL), AG_OK);
        run(&p, &got);
        snprintf(what, sizeof what, "%s %s, pool of %d", name, prec == AG_PRECISION_F64 ? "f64" : "f32", t);
        expect_same(&got, &ref, what);
        outputs_free(&got);
        nested_job j = {.p = &p};
        cr_assert_eq(ag_pool_run(p.pool, 2, nested_task, &j), 0);
        for (int k = 0; k < 2; k++) {
            snprintf(what, sizeof what, "%s %s, nested pass %d in a pool of %d", name,
                     prec == AG_PRECISION_F64 ? "f64" : "f32", k, t);
            expect_same(&j.out[k], &ref, what);
            outputs_free(&j.out[k]);
        }
        ag_pool_free(p.pool);
        p.pool = NULL;
    }
    outputs_free(&ref);
}

/* Both precisions, on the AVX-512 paths (if any) and the plain ones. */
static void check_folder(const char *dir, size_t want_n, const char *name)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
    const ag_model_config *g = ag_model_get_config(m);
    size_t n = want_n < (size_t)g->max_tokens ? want_n : (size_t)g->max_tokens;
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)((7 * i + 3) % (size_t)g->vocab_size);
    /* the AVX-512 paths with each sgemm (the own kernel, then cblas_sgemm,
     * whichever this machine would choose: agm_sgemm_own), the plain ones */
    static const char *const modes[] = {"AVX-512, own sgemm", "AVX-512, cblas_sgemm", "plain"};
    for (int mode = 0; mode < 3; mode++) {
        agm_avx512_force(mode == 2 ? 0 : -1);
        agm_sgemm_force_own(mode == 2 ? -1 : mode == 0);
        char label[128];
        snprintf(label, sizeof label, "%s (%s paths)", name, modes[mode]);
        check_pools(m, ids, n, AG_PRECISION_F32, label);
        check_pools(m, ids, n, AG_PRECISION_F64, label);
    }
    agm_sgemm_force_own(-1);
    agm_avx512_force(-1);
    free(ids);
    ag_model_free(m);
}

static void check_arch(const char *name)
{
    char dir[256];
    snprintf(dir, sizeof dir, "tests/data/models/arch/%s", name);
    check_folder(dir, 60, name);
}

Test(forward_threads, gpt2_conv1d_many_tasks) { check_folder(gpt2_folder(), 100, "gpt2-big"); }
Test(forward_threads, llama_bf16_linear_gqa) { check_folder(llama_folder(), 100, "llama-big"); }
Test(forward_threads, gpt_neox_parallel) { check_arch("gpt-neox-parallel"); }
Test(forward_threads, opt_post_ln_project_in) { check_arch("opt-350m-like"); }
Test(forward_threads, roberta) { check_arch("roberta"); }
Test(forward_threads, gemma2_softcap_windows) { check_arch("gemma2"); }
Test(forward_threads, phi3_fused) { check_arch("phi3"); }
Test(forward_threads, mistral_window) { check_arch("mistral-window"); }
