/* test_model.c — the attention engine (src/engine/model.c, src/engine/forward.c):
 * Hugging Face reference fixtures for tiny-gpt2/-bert/-llama in f64 and f32
 * (tiny-gpt2 from models/tiny-gpt2 and tiny-bert from tests/data/models/tiny-bert
 * always run; tiny-llama needs AG_TEST_MODELS and is skipped otherwise),
 * closed forms and layouts on tiny synthetic folders written here, and every
 * load/input error. Run from the repository root. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/model.h"
#include "../util/test_io_util.h"
#include "../util/test_model_util.h"

/* ---- tiny synthetic model folders ----------------------------------------
 * 2 layers, 2 heads, d = 8, vocab 11,
 * 6 positions, deterministic pseudo-random float32 weights. Options break the
 * folder in one controlled way (missing tensor, wrong shape, I32 dtype, NaN)
 * or vary its layout (name prefix, legacy LayerNorm names, two shards).
 */

#define SY_D 8
#define SY_FF 16
#define SY_V 11
#define SY_P 6
#define SY_L 2

typedef struct {
    const char *drop;     /* tensor (unprefixed name) left out */
    const char *reshape;  /* tensor whose first dimension gets +1 */
    const char *as_i32;   /* tensor stored as I32 */
    const char *nan;      /* tensor whose first value is NaN */
    const char *prefix;   /* "transformer.", "bert.", "model." or NULL */
    int zero_qk;          /* Q and K projections all zero: uniform attention */
    int legacy_ln;        /* BERT LayerNorm.gamma/beta names */
    int shards;           /* write two shards + model.safetensors.index.json */
    struct {
        const char *name; /* tensor whose values are multiplied by `by` */
        double by;
    } scale[4];
} sy_opts;

typedef struct {
    char name[160];
    int ndim;
    size_t shape[2];
    double *v;
    size_t cnt;
} sy_tensor;

typedef struct {
    sy_tensor t[64];
    int n;
    unsigned long long seed;
} sy_model;

static inline double sy_rand(sy_model *m)
{
    m->seed = m->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(m->seed >> 11) / 9007199254740992.0 - 0.5) * 0.8;
}

/* fill: NAN = random, otherwise the constant. */
static inline void sy_add(sy_model *m, const char *name, size_t r, size_t c, double fill)
{
    sy_tensor *t = &m->t[m->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = c ? 2 : 1;
    t->shape[0] = r;
    t->shape[1] = c;
    t->cnt = r * (c ? c : 1);
    t->v = malloc(t->cnt * sizeof *t->v);
    for (size_t i = 0; i < t->cnt; i++)
        t->v[i] = isnan(fill) ? (float)sy_rand(m) : fill;
}

static inline void sy_free(sy_model *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->t[i].v);
    m->n = 0;
}

static inline void sy_gpt2(sy_model *m, const sy_opts *o)
{
    char s[160];
    sy_add(m, "wte.weight", SY_V, SY_D, NAN);
    sy_add(m, "wpe.weight", SY_P, SY_D, NAN);
    for (int l = 0; l < SY_L; l++) {
#define N(x) (snprintf(s, sizeof s, "h.%d.%s", l, x), s)
        sy_add(m, N("ln_1.weight"), SY_D, 0, NAN);
        sy_add(m, N("ln_1.bias"), SY_D, 0, NAN);
        sy_add(m, N("attn.bias"), 1, SY_P * SY_P, 1.0); /* mask buffer, skipped */
        sy_add(m, N("attn.c_attn.weight"), SY_D, 3 * SY_D, NAN);
        sy_add(m, N("attn.c_attn.bias"), 3 * SY_D, 0, NAN);
        if (o->zero_qk) {
            sy_tensor *w = &m->t[m->n - 2], *b = &m->t[m->n - 1];
            for (size_t i = 0; i < SY_D; i++)
                for (size_t j = 0; j < 2 * SY_D; j++)
                    w->v[i * 3 * SY_D + j] = 0;
            for (size_t j = 0; j < 2 * SY_D; j++)
                b->v[j] = 0;
        }
        sy_add(m, N("attn.c_proj.weight"), SY_D, SY_D, NAN);
        sy_add(m, N("attn.c_proj.bias"), SY_D, 0, NAN);
        sy_add(m, N("ln_2.weight"), SY_D, 0, NAN);
        sy_add(m, N("ln_2.bias"), SY_D, 0, NAN);
        sy_add(m, N("mlp.c_fc.weight"), SY_D, 4 * SY_D, NAN);
        sy_add(m, N("mlp.c_fc.bias"), 4 * SY_D, 0, NAN);
        sy_add(m, N("mlp.c_proj.weight"), 4 * SY_D, SY_D, NAN);
        sy_add(m, N("mlp.c_proj.bias"), SY_D, 0, NAN);
#undef N
    }
    sy_add(m, "ln_f.weight", SY_D, 0, NAN);
    sy_add(m, "ln_f.bias", SY_D, 0, NAN);
}

static inline void sy_bert(sy_model *m, const sy_opts *o)
{
    char s[160];
    const char *g = o->legacy_ln ? "gamma" : "weight", *b = o->legacy_ln ? "beta" : "bias";
    sy_add(m, "embeddings.word_embeddings.weight", SY_V, SY_D, NAN);
    sy_add(m, "embeddings.position_embeddings.weight", SY_P, SY_D, NAN);
    sy_add(m, "embeddings.token_type_embeddings.weight", 2, SY_D, NAN);
    snprintf(s, sizeof s, "embeddings.LayerNorm.%s", g);
    sy_add(m, s, SY_D, 0, NAN);
    snprintf(s, sizeof s, "embeddings.LayerNorm.%s", b);
    sy_add(m, s, SY_D, 0, NAN);
    for (int l = 0; l < SY_L; l++) {
#define N(x, y) (snprintf(s, sizeof s, "encoder.layer.%d.%s.%s", l, x, y), s)
        const char *lin[] = {"attention.self.query", "attention.self.key",
                             "attention.self.value", "attention.output.dense"};
        for (int k = 0; k < 4; k++) {
            double f = o->zero_qk && k < 2 ? 0.0 : NAN;
            sy_add(m, N(lin[k], "weight"), SY_D, SY_D, f);
            sy_add(m, N(lin[k], "bias"), SY_D, 0, f);
        }
        sy_add(m, N("attention.output.LayerNorm", g), SY_D, 0, NAN);
        sy_add(m, N("attention.output.LayerNorm", b), SY_D, 0, NAN);
        sy_add(m, N("intermediate.dense", "weight"), SY_FF, SY_D, NAN);
        sy_add(m, N("intermediate.dense", "bias"), SY_FF, 0, NAN);
        sy_add(m, N("output.dense", "weight"), SY_D, SY_FF, NAN);
        sy_add(m, N("output.dense", "bias"), SY_D, 0, NAN);
        sy_add(m, N("output.LayerNorm", g), SY_D, 0, NAN);
        sy_add(m, N("output.LayerNorm", b), SY_D, 0, NAN);
#undef N
    }
}

/* LLaMA with GQA (2 query heads, 1 kv head, head_dim 4); qwen2 adds q/k/v biases. */
static inline void sy_llama(sy_model *m, const sy_opts *o, int qwen)
{
    char s[160];
    sy_add(m, "embed_tokens.weight", SY_V, SY_D, NAN);
    for (int l = 0; l < SY_L; l++) {
#define N(x) (snprintf(s, sizeof s, "layers.%d.%s", l, x), s)
        sy_add(m, N("input_layernorm.weight"), SY_D, 0, NAN);
        sy_add(m, N("self_attn.q_proj.weight"), SY_D, SY_D, o->zero_qk ? 0.0 : NAN);
        sy_add(m, N("self_attn.k_proj.weight"), SY_D / 2, SY_D, NAN);
        sy_add(m, N("self_attn.v_proj.weight"), SY_D / 2, SY_D, NAN);
        if (qwen) {
            sy_add(m, N("self_attn.q_proj.bias"), SY_D, 0, o->zero_qk ? 0.0 : NAN);
            sy_add(m, N("self_attn.k_proj.bias"), SY_D / 2, 0, NAN);
            sy_add(m, N("self_attn.v_proj.bias"), SY_D / 2, 0, NAN);
        }
        sy_add(m, N("self_attn.o_proj.weight"), SY_D, SY_D, NAN);
        sy_add(m, N("post_attention_layernorm.weight"), SY_D, 0, NAN);
        sy_add(m, N("mlp.gate_proj.weight"), SY_FF, SY_D, NAN);
        sy_add(m, N("mlp.up_proj.weight"), SY_FF, SY_D, NAN);
        sy_add(m, N("mlp.down_proj.weight"), SY_D, SY_FF, NAN);
#undef N
    }
    sy_add(m, "norm.weight", SY_D, 0, NAN);
    sy_add(m, "lm_head.weight", SY_V, SY_D, NAN);
}

static inline const char *sy_config(const char *arch)
{
    if (!strcmp(arch, "gpt2"))
        return "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8,"
               " \"n_positions\": 6, \"vocab_size\": 11, \"layer_norm_epsilon\": 1e-05,"
               " \"activation_function\": \"gelu_new\", \"n_inner\": null}";
    if (!strcmp(arch, "bert"))
        return "{\"model_type\": \"bert\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
               " \"hidden_size\": 8, \"intermediate_size\": 16, \"max_position_embeddings\": 6,"
               " \"vocab_size\": 11, \"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12,"
               " \"hidden_act\": \"gelu\"}";
    if (!strcmp(arch, "qwen2"))
        return "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
               " \"num_key_value_heads\": 1, \"hidden_size\": 8, \"intermediate_size\": 16,"
               " \"max_position_embeddings\": 6, \"vocab_size\": 11, \"rms_norm_eps\": 1e-06,"
               " \"rope_theta\": 1000000.0, \"hidden_act\": \"silu\", \"use_sliding_window\": false}";
    return "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
           " \"num_key_value_heads\": 1, \"hidden_size\": 8, \"intermediate_size\": 16,"
           " \"max_position_embeddings\": 6, \"vocab_size\": 11, \"rms_norm_eps\": 1e-05,"
           " \"rope_theta\": 10000.0, \"hidden_act\": \"silu\", \"rope_scaling\": null}";
}

static inline int sy_match(const char *opt, const char *name)
{
    return opt && !strcmp(opt, name);
}

/* Write tensors [from, to) of m as a safetensors file; their full names
 * go into weight_map (if non-NULL) pointing at `file`. */
static inline int sy_write_st(const sy_model *m, int from, int to, const sy_opts *o,
                              const char *dir, const char *file, json_t *weight_map)
{
    json_t *hdr = json_object();
    size_t off = 0, cap = 0;
    unsigned char *data = NULL;
    for (int i = from; i < to; i++) {
        const sy_tensor *t = &m->t[i];
        if (sy_match(o->drop, t->name))
            continue;
        char full[200];
        snprintf(full, sizeof full, "%s%s", o->prefix ? o->prefix : "", t->name);
        const char *dt = sy_match(o->as_i32, t->name) ? "I32" : "F32";
        size_t extra = sy_match(o->reshape, t->name) ? (t->ndim == 2 ? t->shape[1] : 1) : 0;
        size_t cnt = t->cnt + extra, nb = cnt * 4;
        data = realloc(data, cap = off + nb);
        double *v = calloc(cnt, sizeof *v);
        memcpy(v, t->v, t->cnt * sizeof *v);
        if (sy_match(o->nan, t->name))
            v[0] = NAN;
        for (int k = 0; k < 4; k++)
            for (size_t e = 0; sy_match(o->scale[k].name, t->name) && e < t->cnt; e++)
                v[e] *= o->scale[k].by;
        tio_encode_st(dt, v, cnt, data + off);
        free(v);
        json_t *shape = json_array();
        json_array_append_new(shape, json_integer((json_int_t)(t->shape[0] + (extra ? 1 : 0))));
        if (t->ndim == 2)
            json_array_append_new(shape, json_integer((json_int_t)t->shape[1]));
        json_object_set_new(hdr, full, json_pack("{s:s, s:o, s:[I,I]}", "dtype", dt, "shape", shape,
                                                 "data_offsets", (json_int_t)off, (json_int_t)(off + nb)));
        if (weight_map)
            json_object_set_new(weight_map, full, json_string(file));
        off += nb;
    }
    char *js = json_dumps(hdr, JSON_COMPACT);
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int rc = tio_write_safetensors(path, js, data, cap);
    free(js);
    free(data);
    json_decref(hdr);
    return rc;
}

/* Write a whole folder <tmpdir>/<name>: config.json (config, or the
 * architecture's default if NULL) and the weights. Returns the folder. */
static inline const char *sy_folder(const char *name, const char *arch, const char *config,
                                    const sy_opts *opts)
{
    static char dir[4200];
    sy_opts none = {0};
    const sy_opts *o = opts ? opts : &none;
    sy_model m = {.seed = 12345};
    snprintf(dir, sizeof dir, "%s", tio_path(name));
    mkdir(dir, 0700);
    if (!strcmp(arch, "gpt2"))
        sy_gpt2(&m, o);
    else if (!strcmp(arch, "bert"))
        sy_bert(&m, o);
    else
        sy_llama(&m, o, !strcmp(arch, "qwen2"));
    char p[4400];
    snprintf(p, sizeof p, "%s/config.json", dir);
    const char *cfg = config ? config : sy_config(arch);
    tio_write_bytes(p, cfg, strlen(cfg));
    if (!o->shards) {
        sy_write_st(&m, 0, m.n, o, dir, "model.safetensors", NULL);
    } else {
        json_t *wm = json_object();
        sy_write_st(&m, 0, m.n / 2, o, dir, "model-00001-of-00002.safetensors", wm);
        sy_write_st(&m, m.n / 2, m.n, o, dir, "model-00002-of-00002.safetensors", wm);
        json_t *idx = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", wm);
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        json_dump_file(idx, p, 0);
        json_decref(idx);
    }
    sy_free(&m);
    return dir;
}


TestSuite(model, .fini = tio_cleanup);

/* ---- reference fixtures ------------------------------------------------- */

#define FIX "tests/data/fixtures"

/* Folder of a model: the repository copy if any, else $AG_TEST_MODELS/<name>;
 * NULL when neither exists. */
static const char *model_dir(const char *name)
{
    static char buf[4096];
    const char *cands[] = {"models", "tests/data/models"};
    struct stat sb;
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof buf, "%s/%s/config.json", cands[i], name);
        if (stat(buf, &sb) == 0) {
            snprintf(buf, sizeof buf, "%s/%s", cands[i], name);
            return buf;
        }
    }
    const char *env = getenv("AG_TEST_MODELS");
    if (env && *env) {
        snprintf(buf, sizeof buf, "%s/%s/config.json", env, name);
        if (stat(buf, &sb) == 0) {
            snprintf(buf, sizeof buf, "%s/%s", env, name);
            return buf;
        }
    }
    return NULL;
}

static int32_t *fixture_ids(const char *model, int k, size_t *n)
{
    char p[512];
    snprintf(p, sizeof p, FIX "/%s/tokens_%d.json", model, k);
    return read_ids_json(p, n);
}

typedef struct {
    const ag_array *attn; /* (L, H, n, n) fixture */
    double max_err;
    int layers_seen;
} cmp_ctx;

static int cmp_layer(const ag_layer_view *v, void *user)
{
    cmp_ctx *c = user;
    const ag_array *a = c->attn;
    cr_assert_eq(v->layer, c->layers_seen, "layers out of order");
    cr_assert_eq((size_t)v->n_head, a->shape[1]);
    cr_assert_eq(v->n, a->shape[2]);
    size_t cnt = (size_t)v->n_head * v->n * v->n;
    const double *ref = a->data + (size_t)v->layer * cnt;
    for (size_t i = 0; i < cnt; i++) {
        double e = fabs(v->attn[i] - ref[i]);
        c->max_err = e > c->max_err ? e : c->max_err;
        if (ref[i] == 0.0) /* causal zeros must be exact */
            cr_assert_eq(v->attn[i], 0.0, "masked entry %zu of layer %d is %g", i, v->layer, v->attn[i]);
    }
    c->layers_seen++;
    return 0;
}

/* Run one fixture text through the model and compare attention and hidden
 * states; returns the max errors through ea/eh. */
static void run_fixture(const ag_model *m, const char *name, int k, ag_precision prec,
                        double tol_a, double tol_h, double *ea, double *eh)
{
    char p[512];
    ag_error err = {0};
    ag_array attn = {0}, hid = {0};
    size_t n;
    int32_t *ids = fixture_ids(name, k, &n);
    snprintf(p, sizeof p, FIX "/%s/attn_%d.npy", name, k);
    cr_assert_eq(ag_npy_read(p, &attn, &err), AG_OK, "%s", err.message);
    snprintf(p, sizeof p, FIX "/%s/hidden_%d.npy", name, k);
    cr_assert_eq(ag_npy_read(p, &hid, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(hid.shape[0], (size_t)g->n_layer + 1);
    cr_assert_eq(hid.shape[2], (size_t)g->d_model);
    double *h = calloc(ag_array_size(&hid), sizeof *h); // (L+1, n, d)
    cmp_ctx c = {.attn = &attn};
    int rc = ag_model_forward(m, ids, n, prec, cmp_layer, &c, h, &err);
    cr_assert_eq(rc, AG_OK, "%s", err.message);
    cr_assert_eq(c.layers_seen, g->n_layer);
    *eh = 0;
    for (size_t i = 0; i < ag_array_size(&hid); i++)
        *eh = fmax(*eh, fabs(h[i] - hid.data[i]));
    *ea = c.max_err;
    cr_log_info("%s text %d %s: max |attn err| %.3g, max |hidden err| %.3g", name, k,
                prec == AG_PRECISION_F64 ? "f64" : "f32", *ea, *eh);
    fprintf(stderr, "[model] %s text %d %s: max |attn err| %.3g, max |hidden err| %.3g\n", name, k,
            prec == AG_PRECISION_F64 ? "f64" : "f32", *ea, *eh);
    cr_expect_leq(*ea, tol_a, "%s text %d: attention error %g", name, k, *ea);
    cr_expect_leq(*eh, tol_h, "%s text %d: hidden error %g", name, k, *eh);
    free(h);
    free(ids);
    ag_array_free(&attn);
    ag_array_free(&hid);
}

/* in_repo: the folder is part of the repository (models/ or
 * tests/data/models/), so a missing folder is a failure, not a skip. */
static void check_model_fixtures(const char *name, int in_repo)
{
    const char *dir = model_dir(name);
    cr_assert(dir || !in_repo, "model folder %s missing: expected models/%s or tests/data/models/%s", name, name,
              name);
    if (!dir) {
        cr_skip_test("model folder %s not in the repository; set AG_TEST_MODELS to a folder holding %s/ "
                     "to run this test", name, name);
        return;
    }
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    double ea, eh;
    for (int k = 0; k < 2; k++) {
        run_fixture(m, name, k, AG_PRECISION_F64, 1e-9, 1e-9, &ea, &eh);
        run_fixture(m, name, k, AG_PRECISION_F32, 1e-5, 1e-4, &ea, &eh);
    }
    ag_model_free(m);
}

Test(model, gpt2_matches_fixtures) { check_model_fixtures("tiny-gpt2", 1); }
Test(model, bert_matches_fixtures) { check_model_fixtures("tiny-bert", 1); }
Test(model, llama_matches_fixtures) { check_model_fixtures("tiny-llama", 0); }

Test(model, gpt2_config)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load("models/tiny-gpt2", &m, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->arch, AG_ARCH_GPT2);
    cr_assert_str_eq(g->model_type, "gpt2");
    cr_assert_eq(g->n_layer, 4);
    cr_assert_eq(g->n_head, 4);
    cr_assert_eq(g->n_kv_head, 4);
    cr_assert_eq(g->d_model, 128);
    cr_assert_eq(g->head_dim, 32);
    cr_assert_eq(g->d_ff, 512);
    cr_assert_eq(g->max_positions, 256);
    cr_assert_eq(g->vocab_size, 50257);
    cr_assert_eq(g->causal, 1);
    ag_model_free(m);
}

/* ---- synthetic folders: closed forms and layouts ------------------------ */

typedef struct {
    double *attn;   /* (L, H, n, n) collected */
    double *x;      /* (L, n, d) collected */
    size_t n, d;
    int H;
} collect_ctx;

static int collect(const ag_layer_view *v, void *user)
{
    collect_ctx *c = user;
    size_t a = (size_t)v->n_head * v->n * v->n, xs = v->n * v->d;
    memcpy(c->attn + (size_t)v->layer * a, v->attn, a * sizeof(double));
    memcpy(c->x + (size_t)v->layer * xs, v->x, xs * sizeof(double));
    return 0;
}

/* Forward on a synthetic folder; the caller frees c->attn, c->x, *hidden. */
static void synth_run(const char *dir, const int32_t *ids, size_t n, ag_precision p,
                      collect_ctx *c, double **hidden)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    c->n = n;
    c->d = (size_t)g->d_model;
    c->H = g->n_head;
    c->attn = calloc((size_t)g->n_layer * g->n_head * n * n, sizeof(double)); // (L, H, n, n)
    c->x = calloc((size_t)g->n_layer * n * c->d, sizeof(double));             // (L, n, d)
    *hidden = calloc((size_t)(g->n_layer + 1) * n * c->d, sizeof(double));    // (L+1, n, d)
    cr_assert_eq(ag_model_forward(m, ids, n, p, collect, c, *hidden, &err), AG_OK, "%s", err.message);
    ag_model_free(m);
}

static void collect_free(collect_ctx *c, double *hidden)
{
    free(c->attn);
    free(c->x);
    free(hidden);
}

/* With W_Q = W_K = 0 (and zero biases) every score is 0: the attention is
 * uniform over the allowed keys, 1/(i+1) when causal, 1/n otherwise. */
static void check_uniform(const char *arch, int causal)
{
    sy_opts o = {.zero_qk = 1};
    const char *dir = sy_folder(arch, arch, NULL, &o);
    int32_t ids[5] = {3, 1, 4, 1, 5};
    for (int prec = 0; prec < 2; prec++) {
        collect_ctx c;
        double *hid;
        synth_run(dir, ids, 5, (ag_precision)prec, &c, &hid);
        for (size_t lh = 0; lh < (size_t)SY_L * c.H; lh++)
            for (size_t i = 0; i < 5; i++)
                for (size_t j = 0; j < 5; j++) {
                    double want = causal ? (j <= i ? 1.0 / (i + 1) : 0.0) : 0.2;
                    double got = c.attn[lh * 25 + i * 5 + j];
                    cr_assert(fabs(got - want) < 1e-6, "%s: A[%zu][%zu] = %.17g, want %.17g", arch, i, j, got, want);
                    if (want == 0.0)
                        cr_assert_eq(got, 0.0);
                }
        collect_free(&c, hid);
    }
}

Test(model, uniform_attention_gpt2) { check_uniform("gpt2", 1); }
Test(model, uniform_attention_bert) { check_uniform("bert", 0); }
Test(model, uniform_attention_llama) { check_uniform("llama", 1); }
Test(model, uniform_attention_qwen2) { check_uniform("qwen2", 1); }

/* GPT-2: hidden[0] = wte + wpe and layer 0's X = ln_1(hidden[0]), computed
 * here from the weights in double. */
Test(model, gpt2_embedding_and_ln1_closed_form)
{
    const char *dir = sy_folder("g", "gpt2", NULL, NULL);
    sy_model sm = {.seed = 12345};
    sy_opts none = {0};
    sy_gpt2(&sm, &none);
    const double *wte = sm.t[0].v, *wpe = sm.t[1].v, *g1 = sm.t[2].v, *b1 = sm.t[3].v;
    int32_t ids[4] = {7, 0, 10, 7};
    collect_ctx c;
    double *hid;
    synth_run(dir, ids, 4, AG_PRECISION_F64, &c, &hid);
    for (size_t i = 0; i < 4; i++) {
        double e[SY_D], mean = 0, var = 0;
        for (size_t j = 0; j < SY_D; j++) {
            e[j] = wte[ids[i] * SY_D + j] + wpe[i * SY_D + j];
            cr_assert_float_eq(hid[i * SY_D + j], e[j], 1e-15);
            mean += e[j] / SY_D;
        }
        for (size_t j = 0; j < SY_D; j++)
            var += (e[j] - mean) * (e[j] - mean) / SY_D;
        for (size_t j = 0; j < SY_D; j++) {
            double want = (e[j] - mean) / sqrt(var + 1e-5) * g1[j] + b1[j];
            cr_assert_float_eq(c.x[i * SY_D + j], want, 1e-12);
        }
    }
    collect_free(&c, hid);
    sy_free(&sm);
}

/* Same results whatever the layout: prefixes, legacy names, shards; and f32
 * close to f64. */
static void check_same(const char *arch, const sy_opts *o, const char *name)
{
    const char *base = sy_folder("base", arch, NULL, NULL);
    char b[4200];
    snprintf(b, sizeof b, "%s", base);
    const char *other = sy_folder(name, arch, NULL, o);
    int32_t ids[6] = {1, 2, 3, 10, 0, 5};
    collect_ctx c1, c2, c3;
    double *h1, *h2, *h3;
    synth_run(b, ids, 6, AG_PRECISION_F64, &c1, &h1);
    synth_run(other, ids, 6, AG_PRECISION_F64, &c2, &h2);
    synth_run(other, ids, 6, AG_PRECISION_F32, &c3, &h3);
    size_t na = (size_t)SY_L * c1.H * 36, nh = (size_t)(SY_L + 1) * 6 * SY_D;
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(c1.attn[i], c2.attn[i], "%s %s: attention differs at %zu", arch, name, i);
        cr_assert(fabs(c1.attn[i] - c3.attn[i]) < 1e-5, "%s: f32 attention off at %zu", arch, i);
    }
    for (size_t i = 0; i < nh; i++) {
        cr_assert_eq(h1[i], h2[i], "%s %s: hidden differs at %zu", arch, name, i);
        cr_assert(fabs(h1[i] - h3[i]) < 1e-4, "%s: f32 hidden off at %zu", arch, i);
    }
    /* rows sum to 1 */
    for (size_t r = 0; r < na / 6; r++) {
        double s = 0;
        for (size_t j = 0; j < 6; j++)
            s += c1.attn[r * 6 + j];
        cr_assert(fabs(s - 1) < 1e-12);
    }
    collect_free(&c1, h1);
    collect_free(&c2, h2);
    collect_free(&c3, h3);
}

Test(model, gpt2_transformer_prefix) { sy_opts o = {.prefix = "transformer."}; check_same("gpt2", &o, "p"); }
Test(model, gpt2_sharded) { sy_opts o = {.shards = 1}; check_same("gpt2", &o, "s"); }
Test(model, bert_prefix_and_legacy_names) { sy_opts o = {.prefix = "bert.", .legacy_ln = 1}; check_same("bert", &o, "p"); }
Test(model, llama_model_prefix_sharded) { sy_opts o = {.prefix = "model.", .shards = 1}; check_same("llama", &o, "p"); }
Test(model, qwen2_runs) { sy_opts o = {.prefix = "model."}; check_same("qwen2", &o, "p"); }

/* ---- errors --------------------------------------------------------------- */


Test(model, missing_tensor)
{
    sy_opts o = {.drop = "h.1.attn.c_proj.weight"};
    expect_load_error(sy_folder("e", "gpt2", NULL, &o), AG_ENOTFOUND, "'h.1.attn.c_proj.weight'");
    sy_opts o2 = {.drop = "layers.0.self_attn.k_proj.weight", .prefix = "model."};
    expect_load_error(sy_folder("e2", "llama", NULL, &o2), AG_ENOTFOUND, "'model.layers.0.self_attn.k_proj.weight'");
    sy_opts o3 = {.drop = "layers.1.self_attn.v_proj.bias"};
    expect_load_error(sy_folder("e3", "qwen2", NULL, &o3), AG_ENOTFOUND, "'layers.1.self_attn.v_proj.bias'");
}

Test(model, wrong_shape)
{
    sy_opts o = {.reshape = "h.0.attn.c_attn.weight"};
    expect_load_error(sy_folder("e", "gpt2", NULL, &o), AG_ESHAPE, "'h.0.attn.c_attn.weight' has shape (9, 24), expected (8, 24)");
    sy_opts o2 = {.reshape = "encoder.layer.1.attention.self.query.bias"};
    expect_load_error(sy_folder("e2", "bert", NULL, &o2), AG_ESHAPE, "(9,), expected (8,)");
}

Test(model, unknown_model_type)
{
    expect_load_error(sy_folder("e", "gpt2", "{\"model_type\": \"mamba\", \"n_layer\": 2}", NULL),
                      AG_EUNSUPPORTED, "\"mamba\"");
}

Test(model, broken_config)
{
    expect_load_error(sy_folder("e1", "gpt2", "{\"model_type\": \"gpt2\", ", NULL), AG_EFORMAT, "config.json");
    expect_load_error(sy_folder("e2", "gpt2", "{\"n_layer\": 2}", NULL), AG_EFORMAT, "'model_type' is missing");
    expect_load_error(sy_folder("e3", "gpt2",
                                "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, \"n_embd\": \"8\","
                                " \"n_positions\": 6, \"vocab_size\": 11}", NULL),
                      AG_EFORMAT, "'n_embd' must be an integer");
    expect_load_error(sy_folder("e4", "bert",
                                "{\"model_type\": \"bert\", \"num_hidden_layers\": 2, \"hidden_size\": 8,"
                                " \"intermediate_size\": 16, \"max_position_embeddings\": 6, \"vocab_size\": 11}", NULL),
                      AG_EFORMAT, "'num_attention_heads' is missing");
    expect_load_error(sy_folder("e5", "gpt2",
                                "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 3, \"n_embd\": 8,"
                                " \"n_positions\": 6, \"vocab_size\": 11}", NULL),
                      AG_EFORMAT, "'n_head'");
    expect_load_error(sy_folder("e6", "llama", "[1, 2]", NULL), AG_EFORMAT, "config.json");
    /* found by tests/fuzz (fuzz_model_config): 65536 * 65536 overflowed int */
    expect_load_error(sy_folder("e7", "llama",
                                "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 65536,"
                                " \"num_key_value_heads\": 1, \"hidden_size\": 8, \"intermediate_size\": 16,"
                                " \"max_position_embeddings\": 6, \"vocab_size\": 11, \"head_dim\": 65536}", NULL),
                      AG_EFORMAT, "head_dim");
    expect_load_error(tio_path("no-such-model"), AG_EIO, "config.json");
}

Test(model, i32_weight)
{
    sy_opts o = {.as_i32 = "layers.1.mlp.up_proj.weight"};
    expect_load_error(sy_folder("e", "llama", NULL, &o), AG_EDTYPE, "'layers.1.mlp.up_proj.weight' has dtype I32");
}

Test(model, nonfinite_weight)
{
    sy_opts o = {.nan = "embeddings.LayerNorm.weight"};
    expect_load_error(sy_folder("e", "bert", NULL, &o), AG_ENONFINITE, "'embeddings.LayerNorm.weight'");
}

Test(model, input_range)
{
    ag_model *m = NULL;
    ag_error err = {0};
    const char *names[] = {"gpt2", "bert", "llama"};
    const char *fields[] = {"n_positions", "max_position_embeddings", "max_position_embeddings"};
    int32_t ids[7] = {1, 2, 3, 4, 5, 6, 7};
    for (int a = 0; a < 3; a++) {
        cr_assert_eq(ag_model_load(sy_folder(names[a], names[a], NULL, NULL), &m, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_model_forward(m, ids, 7, AG_PRECISION_F32, NULL, NULL, NULL, &err), AG_ERANGE);
        cr_assert(strstr(err.message, fields[a]), "%s", err.message);
        ids[2] = SY_V;
        cr_assert_eq(ag_model_forward(m, ids, 3, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_ERANGE);
        cr_assert(strstr(err.message, "vocab"), "%s", err.message);
        ids[2] = -1;
        cr_assert_eq(ag_model_forward(m, ids, 3, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_ERANGE);
        ids[2] = 3;
        cr_assert_eq(ag_model_forward(m, ids, 0, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_EINVAL);
        cr_assert_eq(ag_model_forward(m, ids, 6, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_OK, "%s", err.message);
        ag_model_free(m);
    }
}

/* ---- overflow: every number is right or the pass fails ------------------ */

static int count_layers(const ag_layer_view *v, void *user)
{
    (*(int *)user)++;
    for (size_t i = 0; i < (size_t)v->n_head * v->n * v->n; i++)
        cr_assert(isfinite(v->attn[i]), "layer %d: a callback saw a non-finite probability", v->layer);
    return 0;
}

/* Layer 1's Q/K weights ×1e20: its scores (~1e39) overflow float32, so the
 * f32 pass stops there naming layer and head; in double they are finite. */
Test(model, f32_score_overflow_names_layer_and_head)
{
    sy_opts o = {.scale = {{"h.1.attn.c_attn.weight", 1e20}}};
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(sy_folder("ov", "gpt2", NULL, &o), &m, &err), AG_OK, "%s", err.message);
    int32_t ids[5] = {3, 1, 4, 1, 5};
    double *hidden = calloc(3 * 5 * SY_D, sizeof *hidden);
    int calls = 0;
    cr_assert_eq(ag_model_forward(m, ids, 5, AG_PRECISION_F32, count_layers, &calls, hidden, &err),
                 AG_ENONFINITE);
    cr_assert_eq(calls, 1, "layer 0 is fine, layer 1 must not reach the callback");
    cr_assert(strncmp(err.message, "layer 1 head ", 13) == 0, "%s", err.message);
    cr_assert(strstr(err.message, ": attention is not finite at query "), "%s", err.message);
    cr_assert(strstr(err.message, "(float32 overflow; try --precision f64)"), "%s", err.message);
    calls = 0;
    cr_assert_eq(ag_model_forward(m, ids, 5, AG_PRECISION_F64, count_layers, &calls, hidden, &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(calls, 2);
    for (size_t i = 0; i < 3 * 5 * SY_D; i++)
        cr_assert(isfinite(hidden[i]));
    free(hidden);
    ag_model_free(m);
}

/* LLaMA with ReLU MLPs: scaling layer 0's post_attention_layernorm, gate,
 * up and down weights by c (a power of two: exact in float32) scales its MLP
 * output by c⁵ exactly (ReLU and the products are homogeneous), so once that
 * dwarfs the residual, h₁ = c⁵·MLP and layer 1's RMSNorm(h₁), hence its
 * attention, no longer depend on c. With c = 2^126 (h₁ ~ 1e190: h₁²
 * overflows double) layer 1 must match c = 2^83 (nothing overflows). An unscaled RMSNorm
 * gave mean(h²) = inf, X = 0 and uniform attention there. In f32 the MLP
 * output itself overflows, which the pass reports. */
static const char *relu_llama(const char *name, double c)
{
    sy_opts o = {.scale = {{"layers.0.post_attention_layernorm.weight", c},
                           {"layers.0.mlp.gate_proj.weight", c},
                           {"layers.0.mlp.up_proj.weight", c},
                           {"layers.0.mlp.down_proj.weight", c}}};
    return sy_folder(name, "llama",
                     "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
                     " \"num_key_value_heads\": 1, \"hidden_size\": 8, \"intermediate_size\": 16,"
                     " \"max_position_embeddings\": 6, \"vocab_size\": 11, \"rms_norm_eps\": 1e-05,"
                     " \"rope_theta\": 10000.0, \"hidden_act\": \"relu\"}", &o);
}

Test(model, f64_norm_of_huge_hidden_state)
{
    int32_t ids[5] = {3, 1, 4, 1, 5};
    collect_ctx big, mid;
    double *hb, *hm;
    synth_run(relu_llama("big", 0x1p126), ids, 5, AG_PRECISION_F64, &big, &hb);
    synth_run(relu_llama("mid", 0x1p83), ids, 5, AG_PRECISION_F64, &mid, &hm);
    size_t per = (size_t)big.H * 25;
    double worst = 0, spread = 0;
    for (size_t k = 0; k < per; k++) {
        worst = fmax(worst, fabs(big.attn[per + k] - mid.attn[per + k]));
        spread = fmax(spread, fabs(mid.attn[per + k] - big.attn[per + k / 5 * 5]));
    }
    cr_assert_lt(worst, 1e-12, "layer 1 attention differs by %g", worst);
    cr_assert_gt(spread, 1e-3, "layer 1 attention should not be uniform");
    double hmax = 0;
    for (size_t k = 0; k < 5 * SY_D; k++)
        hmax = fmax(hmax, fabs(hb[2 * 5 * SY_D + k]));
    cr_assert(isfinite(hmax) && hmax > 0);
    cr_assert_gt(fabs(hb[1 * 5 * SY_D]), 1e154, "h1 must be large enough for h1² to overflow");
    collect_free(&big, hb);
    collect_free(&mid, hm);

    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(relu_llama("big32", 0x1p126), &m, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_model_forward(m, ids, 5, AG_PRECISION_F32, NULL, NULL, NULL, &err), AG_ENONFINITE);
    cr_assert(strncmp(err.message, "layer 0: hidden state is not finite at token ", 45) == 0,
              "%s", err.message);
    cr_assert(strstr(err.message, "(float32 overflow; try --precision f64)"), "%s", err.message);
    ag_model_free(m);
}

static int stop_at_1(const ag_layer_view *v, void *user)
{
    (*(int *)user)++;
    return v->layer == 1 ? AG_ERANGE : 0;
}

Test(model, callback_stops_pass)
{
    ag_model *m = NULL;
    ag_error err = {0};
    int calls = 0;
    int32_t ids[3] = {1, 2, 3};
    cr_assert_eq(ag_model_load(sy_folder("c", "gpt2", NULL, NULL), &m, &err), AG_OK);
    cr_assert_eq(ag_model_forward(m, ids, 3, AG_PRECISION_F32, stop_at_1, &calls, NULL, &err), AG_ERANGE);
    cr_assert_eq(calls, 2);
    ag_model_free(m);
    ag_model_free(NULL);
}

/* ag_model_attn_weights + ag_attention_layer on the callback's X reproduce
 * the forward pass's attention (non-rotary models: GPT-2 and BERT). */
typedef struct {
    const ag_model *m;
    double max_err;
} relayer_ctx;

static int relayer(const ag_layer_view *v, void *user)
{
    relayer_ctx *c = user;
    ag_attn_weights w;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(c->m, v->layer, &w, &err), AG_OK, "%s", err.message);
    cr_assert_eq(w.wq.shape[0], v->d);
    cr_assert_eq(w.wo.shape[1], v->d);
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = v->x, .n = v->n, .d = v->d, .wq = w.wq.data, .wk = w.wk.data,
                            .bq = w.bq.data, .bk = w.bk.data, .d_a = w.wq.shape[1],
                            .n_head = w.n_head, .scale = w.scale, .causal = w.causal,
                            .precision = AG_PRECISION_F64};
    ag_array a = {0};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
    for (size_t i = 0; i < ag_array_size(&a); i++)
        c->max_err = fmax(c->max_err, fabs(a.data[i] - v->attn[i]));
    ag_array_free(&a);
    ag_attn_weights_free(&w);
    return 0;
}

static void check_relayer(const char *dir)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    int32_t ids[5] = {1, 7, 3, 9, 0};
    relayer_ctx c = {.m = m};
    cr_assert_eq(ag_model_forward(m, ids, 5, AG_PRECISION_F64, relayer, &c, NULL, &err), AG_OK);
    cr_assert_lt(c.max_err, 1e-13, "%s: %g", dir, c.max_err);
    ag_attn_weights w;
    cr_assert_eq(ag_model_attn_weights(m, ag_model_get_config(m)->n_layer, &w, &err), AG_ERANGE);
    ag_model_free(m);
}

Test(model, attn_weights_reproduce_attention)
{
    check_relayer("models/tiny-gpt2");
    check_relayer(sy_folder("b", "bert", NULL, NULL));
    check_relayer(sy_folder("g", "gpt2", NULL, NULL));
}

Test(model, attn_weights_gqa_layout)
{
    ag_model *m = NULL;
    ag_attn_weights w;
    sy_opts o = {0};
    sy_model sm = {.seed = 12345};
    sy_llama(&sm, &o, 1); /* qwen2 tensors, same seed as the folder */
    cr_assert_eq(ag_model_load(sy_folder("q", "qwen2", NULL, NULL), &m, NULL), AG_OK);
    cr_assert_eq(ag_model_attn_weights(m, 0, &w, NULL), AG_OK);
    cr_assert_eq(w.n_kv_head, 1);
    cr_assert_eq(w.rope.rotary_dim, SY_D / 2);
    cr_assert_eq(w.wk.shape[0], SY_D);
    cr_assert_eq(w.wk.shape[1], SY_D / 2);
    const double *kproj = sm.t[3].v; /* layers.0.self_attn.k_proj.weight [out, in] */
    for (size_t i = 0; i < SY_D; i++)
        for (size_t j = 0; j < SY_D / 2; j++)
            cr_assert_eq(w.wk.data[i * (SY_D / 2) + j], kproj[j * SY_D + i]);
    cr_assert_not_null(w.bq.data);
    ag_attn_weights_free(&w);
    ag_model_free(m);
    sy_free(&sm);
}

/* ag_forward_options.hidden_fn streams the same hidden states, bit for bit,
 * as the (L+1, n, d) array, in order; its non-zero status stops the pass. */
typedef struct {
    const double *all; /* (L+1, n, d) from the array route */
    int next, stop_at, mismatches;
} hidden_stream;

static int take_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    hidden_stream *st = user;
    if (index != st->next++)
        st->mismatches++;
    if (memcmp(h, st->all + (size_t)index * n * d, n * d * sizeof *h) != 0)
        st->mismatches++;
    return index == st->stop_at ? 77 : 0;
}

Test(model, hidden_states_streamed_equal_array)
{
    ag_model *m;
    ag_error err = {0};
    cr_assert_eq(ag_model_load("models/tiny-gpt2", &m, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    int32_t ids[] = {464, 3290, 318, 257, 1332, 13};
    size_t n = 6, d = (size_t)g->d_model, L = (size_t)g->n_layer;
    double *all = calloc((L + 1) * n * d, sizeof *all);
    for (int p = 0; p < 2; p++) {
        ag_precision prec = p ? AG_PRECISION_F64 : AG_PRECISION_F32;
        cr_assert_eq(ag_model_forward(m, ids, n, prec, NULL, NULL, all, &err), AG_OK, "%s", err.message);
        hidden_stream st = {.all = all, .stop_at = -1};
        ag_forward_options o = {.size = sizeof(ag_forward_options),
                                .precision = prec, .hidden_fn = take_hidden, .hidden_user = &st};
        cr_assert_eq(ag_model_forward_ex(m, ids, n, &o, NULL, NULL, NULL, &err), AG_OK, "%s", err.message);
        cr_assert_eq(st.next, (int)L + 1);
        cr_assert_eq(st.mismatches, 0);
        hidden_stream stop = {.all = all, .stop_at = 1};
        o.hidden_user = &stop;
        cr_assert_eq(ag_model_forward_ex(m, ids, n, &o, NULL, NULL, NULL, &err), 77);
        cr_assert_eq(stop.next, 2);
    }
    free(all);
    ag_model_free(m);
}
