/* test_model_archs.c — descriptor-driven loading of the model_types of
 * issue 10 (src/engine/arch.c, config.c, load.c): tiny folders written here
 * with Hugging Face's tensor names (listed in this file, independently of the
 * descriptors) and config.json built per test. Closed forms (Q = K = 0 gives
 * uniform attention over exactly the keys each layer's mask shows: causal,
 * sliding window, bidirectional; hidden[0] of Gemma, OPT with project_in and
 * RoBERTa with a pad token inside, computed here), weight layouts read by
 * ag_model_attn_weights (GPT-NeoX interleave, Phi-3 fused, Gemma's head_dim
 * and multi-query), windows per layer, position limits, and every config
 * error: unknown model_type, refused rope types, bad windows or layer_types.
 * Numerics against Hugging Face are tests/engine/test_archs.c's. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attngeom/core.h"
#include "attngeom/model.h"
#include "../util/test_io_util.h"
#include "../util/test_model_util.h"

#define D 8   /* hidden */
#define H 2   /* query heads */
#define HD 4  /* head dim (Gemma: 8) */
#define FF 16
#define V 11
#define P 12  /* max_position_embeddings */
#define L 3

TestSuite(model_archs, .fini = tio_cleanup);

/* ---- folders ------------------------------------------------------------- */

typedef struct {
    char name[128];
    size_t r, c; /* c 0: a vector of r */
    double *v;
} at_t;

typedef struct {
    at_t t[128];
    int n;
    unsigned long long seed;
} at_list;

static double at_rand(at_list *l)
{
    l->seed = l->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(l->seed >> 11) / 9007199254740992.0 - 0.5) * 0.8;
}

/* A tensor named by fmt (one %d: layer) with float32-exact random values. */
static void at_add(at_list *l, const char *fmt, int layer, size_t r, size_t c)
{
    at_t *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, fmt, layer);
    t->r = r;
    t->c = c;
    t->v = malloc(r * (c ? c : 1) * sizeof *t->v);
    for (size_t i = 0; i < r * (c ? c : 1); i++)
        t->v[i] = (float)at_rand(l);
}

static void at_free(at_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->t[i].v);
    l->n = 0;
}

static at_t *at_find(at_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->t[i].name, name))
            return &l->t[i];
    return NULL;
}

static void add_ln(at_list *l, const char *stem, int layer, int bias)
{
    char s[128];
    snprintf(s, sizeof s, "%s.weight", stem);
    at_add(l, s, layer, D, 0);
    snprintf(s, sizeof s, "%s.bias", stem);
    if (bias)
        at_add(l, s, layer, D, 0);
}

static void add_lin(at_list *l, const char *stem, int layer, size_t out, size_t in, int bias)
{
    char s[128];
    snprintf(s, sizeof s, "%s.weight", stem);
    at_add(l, s, layer, out, in);
    snprintf(s, sizeof s, "%s.bias", stem);
    if (bias)
        at_add(l, s, layer, out, 0);
}

static void bert_like(at_list *l, const char *p)
{
    char s[128];
#define S(x) (snprintf(s, sizeof s, "%s%s", p, x), s)
    at_add(l, S("embeddings.word_embeddings.weight"), 0, V, D);
    at_add(l, S("embeddings.position_embeddings.weight"), 0, P, D);
    at_add(l, S("embeddings.token_type_embeddings.weight"), 0, 1, D);
    add_ln(l, S("embeddings.LayerNorm"), 0, 1);
    for (int i = 0; i < L; i++) {
        add_lin(l, S("encoder.layer.%d.attention.self.query"), i, D, D, 1);
        add_lin(l, S("encoder.layer.%d.attention.self.key"), i, D, D, 1);
        add_lin(l, S("encoder.layer.%d.attention.self.value"), i, D, D, 1);
        add_lin(l, S("encoder.layer.%d.attention.output.dense"), i, D, D, 1);
        add_ln(l, S("encoder.layer.%d.attention.output.LayerNorm"), i, 1);
        add_lin(l, S("encoder.layer.%d.intermediate.dense"), i, FF, D, 1);
        add_lin(l, S("encoder.layer.%d.output.dense"), i, D, FF, 1);
        add_ln(l, S("encoder.layer.%d.output.LayerNorm"), i, 1);
    }
#undef S
}

/* LLaMA-style layers (no biases): q/k/v or Phi-3's qkv_proj, gate/up or
 * Phi-3's gate_up_proj, Gemma-2's four norms. kv heads 1, head_dim hd. */
static void llama_like(at_list *l, const char *mt, int hd)
{
    int phi3 = !strcmp(mt, "phi3"), g2 = !strcmp(mt, "gemma2");
    at_add(l, "model.embed_tokens.weight", 0, V, D);
    at_add(l, "model.norm.weight", 0, D, 0);
    for (int i = 0; i < L; i++) {
        at_add(l, "model.layers.%d.input_layernorm.weight", i, D, 0);
        at_add(l, "model.layers.%d.post_attention_layernorm.weight", i, D, 0);
        if (g2) {
            at_add(l, "model.layers.%d.pre_feedforward_layernorm.weight", i, D, 0);
            at_add(l, "model.layers.%d.post_feedforward_layernorm.weight", i, D, 0);
        }
        if (phi3) {
            at_add(l, "model.layers.%d.self_attn.qkv_proj.weight", i, (size_t)(H + 2) * hd, D);
            at_add(l, "model.layers.%d.mlp.gate_up_proj.weight", i, 2 * FF, D);
        } else {
            at_add(l, "model.layers.%d.self_attn.q_proj.weight", i, (size_t)H * hd, D);
            at_add(l, "model.layers.%d.self_attn.k_proj.weight", i, (size_t)hd, D);
            at_add(l, "model.layers.%d.self_attn.v_proj.weight", i, (size_t)hd, D);
            if (!strcmp(mt, "qwen2")) { /* modeling_qwen2.py: q/k/v always biased */
                at_add(l, "model.layers.%d.self_attn.q_proj.bias", i, (size_t)H * hd, 0);
                at_add(l, "model.layers.%d.self_attn.k_proj.bias", i, (size_t)hd, 0);
                at_add(l, "model.layers.%d.self_attn.v_proj.bias", i, (size_t)hd, 0);
            }
            at_add(l, "model.layers.%d.mlp.gate_proj.weight", i, FF, D);
            at_add(l, "model.layers.%d.mlp.up_proj.weight", i, FF, D);
        }
        at_add(l, "model.layers.%d.self_attn.o_proj.weight", i, D, (size_t)H * hd);
        at_add(l, "model.layers.%d.mlp.down_proj.weight", i, D, FF);
    }
    at_add(l, "lm_head.weight", 0, V, D);
}

/* The tensors (HF names) and config of a model_type, d = 8, 2 heads, 3
 * layers, vocab 11, 12 positions. */
static json_t *at_spec(const char *mt, at_list *l)
{
    json_t *c = json_pack("{s:s, s:i, s:i, s:i}", "model_type", mt, "vocab_size", V,
                          "max_position_embeddings", P, "num_hidden_layers", L);
    json_object_set_new(c, "num_attention_heads", json_integer(H));
    json_object_set_new(c, "hidden_size", json_integer(D));
    json_object_set_new(c, "intermediate_size", json_integer(FF));
    if (!strcmp(mt, "gpt_neox")) {
        json_object_set_new(c, "rotary_pct", json_real(0.5));
        at_add(l, "gpt_neox.embed_in.weight", 0, V, D);
        add_ln(l, "gpt_neox.final_layer_norm", 0, 1);
        for (int i = 0; i < L; i++) {
            add_ln(l, "gpt_neox.layers.%d.input_layernorm", i, 1);
            add_ln(l, "gpt_neox.layers.%d.post_attention_layernorm", i, 1);
            add_lin(l, "gpt_neox.layers.%d.attention.query_key_value", i, 3 * D, D, 1);
            add_lin(l, "gpt_neox.layers.%d.attention.dense", i, D, D, 1);
            add_lin(l, "gpt_neox.layers.%d.mlp.dense_h_to_4h", i, FF, D, 1);
            add_lin(l, "gpt_neox.layers.%d.mlp.dense_4h_to_h", i, D, FF, 1);
            at_add(l, "gpt_neox.layers.%d.attention.rotary_emb.inv_freq", i, 1, 0); /* ignored */
        }
        at_add(l, "embed_out.weight", 0, V, D);
    } else if (!strcmp(mt, "opt")) {
        json_object_del(c, "intermediate_size");
        json_object_set_new(c, "ffn_dim", json_integer(FF));
        at_add(l, "model.decoder.embed_tokens.weight", 0, V, D);
        at_add(l, "model.decoder.embed_positions.weight", 0, P + 2, D);
        add_ln(l, "model.decoder.final_layer_norm", 0, 1);
        for (int i = 0; i < L; i++) {
            const char *pr[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
            char s[128];
            for (int k = 0; k < 4; k++) {
                snprintf(s, sizeof s, "model.decoder.layers.%%d.self_attn.%s", pr[k]);
                add_lin(l, s, i, D, D, 1);
            }
            add_ln(l, "model.decoder.layers.%d.self_attn_layer_norm", i, 1);
            add_ln(l, "model.decoder.layers.%d.final_layer_norm", i, 1);
            add_lin(l, "model.decoder.layers.%d.fc1", i, FF, D, 1);
            add_lin(l, "model.decoder.layers.%d.fc2", i, D, FF, 1);
        }
    } else if (!strcmp(mt, "roberta") || !strcmp(mt, "xlm-roberta")) {
        json_object_set_new(c, "type_vocab_size", json_integer(1));
        json_object_set_new(c, "pad_token_id", json_integer(1));
        bert_like(l, "roberta.");
    } else if (!strcmp(mt, "distilbert")) {
        json_object_clear(c);
        json_t *d = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i}", "model_type", mt, "vocab_size", V,
                              "max_position_embeddings", P, "n_layers", L, "n_heads", H, "dim", D,
                              "hidden_dim", FF);
        json_object_update(c, d);
        json_decref(d);
        at_add(l, "distilbert.embeddings.word_embeddings.weight", 0, V, D);
        at_add(l, "distilbert.embeddings.position_embeddings.weight", 0, P, D);
        add_ln(l, "distilbert.embeddings.LayerNorm", 0, 1);
        for (int i = 0; i < L; i++) {
            add_lin(l, "distilbert.transformer.layer.%d.attention.q_lin", i, D, D, 1);
            add_lin(l, "distilbert.transformer.layer.%d.attention.k_lin", i, D, D, 1);
            add_lin(l, "distilbert.transformer.layer.%d.attention.v_lin", i, D, D, 1);
            add_lin(l, "distilbert.transformer.layer.%d.attention.out_lin", i, D, D, 1);
            add_ln(l, "distilbert.transformer.layer.%d.sa_layer_norm", i, 1);
            add_lin(l, "distilbert.transformer.layer.%d.ffn.lin1", i, FF, D, 1);
            add_lin(l, "distilbert.transformer.layer.%d.ffn.lin2", i, D, FF, 1);
            add_ln(l, "distilbert.transformer.layer.%d.output_layer_norm", i, 1);
        }
    } else { /* llama, mistral, qwen2, gemma, gemma2, phi3 */
        int gemma = !strncmp(mt, "gemma", 5);
        json_object_set_new(c, "num_key_value_heads", json_integer(1));
        if (gemma)
            json_object_set_new(c, "head_dim", json_integer(8));
        llama_like(l, mt, gemma ? 8 : HD);
    }
    return c;
}

typedef struct {
    const char *extra; /* JSON object merged into config.json */
    const char *drop;  /* tensor left out */
    const char *zero_qk; /* tensors whose Q and K rows are zeroed, see zero_rows */
    size_t period, limit; /* rows r with r % period < limit are zeroed */
    const char *zero_qk2;
    int no_norms;      /* leave out every LayerNorm (OPT elementwise_affine false) */
} at_opts;

/* Zero rows r % period < limit of every tensor whose name contains pat
 * (weights [out, in]: row = output; biases: entry). */
static void zero_rows(at_list *l, const char *pat, size_t period, size_t limit)
{
    for (int i = 0; pat && i < l->n; i++) {
        at_t *t = &l->t[i];
        if (!strstr(t->name, pat))
            continue;
        size_t w = t->c ? t->c : 1;
        for (size_t r = 0; r < t->r; r++)
            if (r % period < limit)
                memset(t->v + r * w, 0, w * sizeof *t->v);
    }
}

static int is_norm(const char *name)
{
    return strstr(name, "layer_norm") || strstr(name, "layernorm") || strstr(name, "LayerNorm");
}

static void write_st(const at_list *l, const at_opts *o, const char *path)
{
    json_t *hdr = json_object();
    size_t off = 0;
    unsigned char *data = NULL;
    for (int i = 0; i < l->n; i++) {
        const at_t *t = &l->t[i];
        if ((o->drop && !strcmp(o->drop, t->name)) || (o->no_norms && is_norm(t->name)))
            continue;
        size_t cnt = t->r * (t->c ? t->c : 1);
        data = realloc(data, off + 4 * cnt);
        tio_encode_st("F32", t->v, cnt, data + off);
        json_t *shape = t->c ? json_pack("[I,I]", (json_int_t)t->r, (json_int_t)t->c)
                             : json_pack("[I]", (json_int_t)t->r);
        json_object_set_new(hdr, t->name, json_pack("{s:s, s:o, s:[I,I]}", "dtype", "F32", "shape", shape,
                                                    "data_offsets", (json_int_t)off, (json_int_t)(off + 4 * cnt)));
        off += 4 * cnt;
    }
    char *js = json_dumps(hdr, JSON_COMPACT);
    cr_assert_eq(tio_write_safetensors(path, js, data, off), 0);
    free(js);
    free(data);
    json_decref(hdr);
}

/* <tmp>/<dir>: config.json (the spec's, extra merged) and model.safetensors.
 * l (may be NULL) receives the tensors, as written before drop/no_norms. */
static const char *at_folder(const char *dir, const char *mt, const at_opts *opts, at_list *keep)
{
    static char path[4200];
    at_opts none = {0};
    const at_opts *o = opts ? opts : &none;
    at_list tmp = {.seed = 99};
    at_list *l = keep ? keep : &tmp;
    memset(l, 0, sizeof *l);
    l->seed = 99;
    json_t *cfg = at_spec(mt, l);
    if (o->extra) {
        json_error_t je;
        json_t *x = json_loads(o->extra, 0, &je);
        cr_assert_not_null(x, "extra config: %s", je.text);
        json_object_update(cfg, x);
        json_decref(x);
    }
    zero_rows(l, o->zero_qk, o->period, o->limit);
    zero_rows(l, o->zero_qk2, o->period, o->limit);
    snprintf(path, sizeof path, "%s", tio_path(dir));
    mkdir(path, 0700);
    char p[4400];
    snprintf(p, sizeof p, "%s/config.json", path);
    cr_assert_eq(json_dump_file(cfg, p, 0), 0);
    json_decref(cfg);
    snprintf(p, sizeof p, "%s/model.safetensors", path);
    write_st(l, o, p);
    if (!keep)
        at_free(&tmp);
    return path;
}

static ag_model *at_load(const char *dir)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    return m;
}


/* ---- Q = K = 0: uniform attention over exactly the visible keys --------- */

typedef struct {
    const int *window; /* per layer */
    int causal, layers;
    size_t n;
} uni_ctx;

static int check_uniform_layer(const ag_layer_view *v, void *user)
{
    uni_ctx *c = user;
    int w = c->window[v->layer];
    for (int h = 0; h < v->n_head; h++)
        for (size_t i = 0; i < v->n; i++)
            for (size_t j = 0; j < v->n; j++) {
                int vis = !c->causal || (j <= i && (!w || i - j < (size_t)w));
                size_t cnt = !c->causal ? v->n : w && i + 1 > (size_t)w ? (size_t)w : i + 1;
                double got = v->attn[((size_t)h * v->n + i) * v->n + j];
                if (!vis)
                    cr_assert_eq(got, 0.0, "layer %d head %d: A[%zu][%zu] = %g must be exactly 0", v->layer, h, i,
                                 j, got);
                else
                    cr_assert(fabs(got - 1.0 / cnt) < 1e-6, "layer %d head %d: A[%zu][%zu] = %.17g, want 1/%zu",
                              v->layer, h, i, j, got, cnt);
            }
    c->layers++;
    return 0;
}

/* windows: the window every layer must have (checked through
 * ag_model_layer_window too). */
static void check_uniform(const char *mt, const at_opts *o, const int windows[L], int causal)
{
    ag_model *m = at_load(at_folder(mt, mt, o, NULL));
    for (int l = 0; l < L; l++)
        cr_assert_eq(ag_model_layer_window(m, l), windows[l], "%s layer %d: window %d, want %d", mt, l,
                     ag_model_layer_window(m, l), windows[l]);
    int32_t ids[9] = {3, 1, 4, 1, 5, 9, 2, 6, 5};
    for (int prec = 0; prec < 2; prec++) {
        uni_ctx c = {.window = windows, .causal = causal, .n = 9};
        ag_error err = {0};
        cr_assert_eq(ag_model_forward(m, ids, 9, (ag_precision)prec, check_uniform_layer, &c, NULL, &err), AG_OK,
                     "%s", err.message);
        cr_assert_eq(c.layers, L);
    }
    ag_model_free(m);
}

static const int no_windows[L] = {0, 0, 0};

/* query_key_value rows: per head q (4) | k (4) | v (4): zero q and k. */
Test(model_archs, uniform_gpt_neox_interleaved)
{
    at_opts o = {.zero_qk = "query_key_value", .period = 3 * HD, .limit = 2 * HD};
    check_uniform("gpt_neox", &o, no_windows, 1);
    at_opts s = {.zero_qk = "query_key_value", .period = 3 * HD, .limit = 2 * HD,
                 .extra = "{\"use_parallel_residual\": false}"};
    check_uniform("gpt_neox", &s, no_windows, 1);
}

Test(model_archs, uniform_opt_pre_and_post)
{
    at_opts o = {.zero_qk = "q_proj", .zero_qk2 = "k_proj", .period = D, .limit = D};
    check_uniform("opt", &o, no_windows, 1);
    at_opts p = o;
    p.extra = "{\"do_layer_norm_before\": false}";
    check_uniform("opt", &p, no_windows, 1);
}

Test(model_archs, uniform_bidirectional_encoders)
{
    at_opts o = {.zero_qk = "self.query", .zero_qk2 = "self.key", .period = D, .limit = D};
    check_uniform("roberta", &o, no_windows, 0);
    check_uniform("xlm-roberta", &o, no_windows, 0);
    at_opts d = {.zero_qk = "q_lin", .zero_qk2 = "k_lin", .period = D, .limit = D};
    check_uniform("distilbert", &d, no_windows, 0);
}

/* Gemma-2: layer_types default, the even layers windowed; softcap of 0 is 0. */
Test(model_archs, uniform_gemma2_alternate_windows)
{
    at_opts o = {.zero_qk = "q_proj", .zero_qk2 = "k_proj", .period = 64, .limit = 64,
                 .extra = "{\"sliding_window\": 3, \"attn_logit_softcapping\": 5.0}"};
    const int w[L] = {3, 0, 3};
    check_uniform("gemma2", &o, w, 1);
    at_opts t = o;
    t.extra = "{\"sliding_window\": 4, \"layer_types\": [\"full_attention\", \"sliding_attention\", "
              "\"sliding_attention\"]}";
    const int w2[L] = {0, 4, 4};
    check_uniform("gemma2", &t, w2, 1);
}

/* Phi-3 qkv_proj rows: Q (2·4) | K (4) | V (4): zero the first 12. */
Test(model_archs, uniform_phi3_window_on_every_layer)
{
    at_opts o = {.zero_qk = "qkv_proj", .period = 16, .limit = 12, .extra = "{\"sliding_window\": 4}"};
    const int w[L] = {4, 4, 4};
    check_uniform("phi3", &o, w, 1);
    at_opts n = o;
    n.extra = "{\"sliding_window\": null}";
    check_uniform("phi3", &n, no_windows, 1);
}

Test(model_archs, uniform_mistral_qwen2_windows)
{
    at_opts o = {.zero_qk = "q_proj", .zero_qk2 = "k_proj", .period = 64, .limit = 64,
                 .extra = "{\"sliding_window\": 2}"};
    const int all2[L] = {2, 2, 2};
    check_uniform("mistral", &o, all2, 1);
    at_opts q = o;
    q.extra = "{\"use_sliding_window\": true, \"sliding_window\": 5, \"max_window_layers\": 2}";
    const int last[L] = {0, 0, 5};
    check_uniform("qwen2", &q, last, 1);
    q.extra = "{\"use_sliding_window\": false, \"sliding_window\": 5, \"max_window_layers\": 0}";
    check_uniform("qwen2", &q, no_windows, 1);
    q.extra = "{\"use_sliding_window\": true, \"sliding_window\": 3, \"layer_types\": [\"sliding_attention\", "
              "\"full_attention\", \"sliding_attention\"]}";
    const int typed[L] = {3, 0, 3};
    check_uniform("qwen2", &q, typed, 1);
}

/* Mistral without the key: HF's default 4096; null: none. */
Test(model_archs, window_defaults)
{
    ag_model *m = at_load(at_folder("m1", "mistral", NULL, NULL));
    cr_assert_eq(ag_model_layer_window(m, 0), 4096);
    cr_assert_eq(ag_model_get_config(m)->sliding_window, 4096);
    cr_assert_eq(ag_model_layer_window(m, L), 0, "a layer outside the model has none");
    ag_model_free(m);
    at_opts o = {.extra = "{\"sliding_window\": null}"};
    m = at_load(at_folder("m2", "mistral", &o, NULL));
    cr_assert_eq(ag_model_layer_window(m, 0), 0);
    cr_assert_eq(ag_model_get_config(m)->sliding_window, 0);
    ag_model_free(m);
    m = at_load(at_folder("g", "gemma2", NULL, NULL));
    cr_assert_eq(ag_model_layer_window(m, 0), 4096);
    cr_assert_eq(ag_model_layer_window(m, 1), 0);
    ag_model_free(m);
    m = at_load(at_folder("q", "qwen2", NULL, NULL));
    cr_assert_eq(ag_model_get_config(m)->sliding_window, 0, "qwen2 without use_sliding_window");
    ag_model_free(m);
}

/* ---- embeddings, closed forms -------------------------------------------- */

static double *run_hidden(ag_model *m, const int32_t *ids, size_t n, ag_precision p)
{
    const ag_model_config *g = ag_model_get_config(m);
    double *h = calloc((size_t)(g->n_layer + 1) * n * (size_t)g->d_model, sizeof *h);
    ag_error err = {0};
    cr_assert_eq(ag_model_forward(m, ids, n, p, NULL, NULL, h, &err), AG_OK, "%s", err.message);
    return h;
}

/* GemmaModel: hidden[0] = embed_tokens[id] · √hidden_size (f64: in double). */
Test(model_archs, gemma_embedding_scale)
{
    at_list l;
    ag_model *m = at_load(at_folder("g", "gemma", NULL, &l));
    const at_t *e = at_find(&l, "model.embed_tokens.weight");
    int32_t ids[4] = {10, 0, 7, 7};
    double *h = run_hidden(m, ids, 4, AG_PRECISION_F64);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < D; j++)
            cr_assert_eq(h[i * D + j], e->v[ids[i] * D + j] * sqrt(8.0), "token %zu dim %zu", i, j);
    cr_assert_float_eq(ag_model_get_config(m)->embed_scale, sqrt(8.0), 0);
    free(h);
    ag_model_free(m);
    at_free(&l);
}

/* OPTDecoder: hidden[0] = project_in(embed_tokens[id]) + embed_positions[i + 2]. */
Test(model_archs, opt_project_in_and_offset_positions)
{
    at_list l;
    ag_model *m = NULL;
    /* word_embed_proj_dim 4: embed_tokens (V, 4), project_in (8, 4) */
    at_opts o = {.extra = "{\"word_embed_proj_dim\": 4}"};
    const char *dir = at_folder("o", "opt", &o, &l);
    expect_load_error(dir, AG_ESHAPE, "'model.decoder.embed_tokens.weight' has shape (11, 8), expected (11, 4)");
    at_t *e = at_find(&l, "model.decoder.embed_tokens.weight");
    e->c = 4; /* its first 11·4 values */
    char p[4400];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    at_opts keep = {0};
    write_st(&l, &keep, p);
    expect_load_error(dir, AG_ENOTFOUND, "'model.decoder.project_in.weight'");
    at_add(&l, "model.decoder.project_in.weight", 0, D, 4);
    at_add(&l, "model.decoder.project_out.weight", 0, 4, D);
    write_st(&l, &keep, p);
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->d_embed, 4);
    cr_assert_eq(g->max_tokens, P, "12 positions: rows 2..13 of 14");
    const at_t *pin = at_find(&l, "model.decoder.project_in.weight"), *pos = at_find(&l, "model.decoder.embed_positions.weight");
    int32_t ids[3] = {5, 2, 9};
    double *h = run_hidden(m, ids, 3, AG_PRECISION_F64);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < D; j++) {
            double s = 0;
            for (size_t k = 0; k < 4; k++)
                s += pin->v[j * 4 + k] * e->v[ids[i] * 4 + k];
            cr_assert(fabs(h[i * D + j] - (s + pos->v[(i + 2) * D + j])) < 1e-14, "token %zu dim %zu", i, j);
        }
    cr_assert_eq(g->final_norm, 1);
    free(h);
    ag_model_free(m);
    at_free(&l);
}

/* RobertaEmbeddings: LN((word + type0) + pos[pad + count]), a pad token at
 * pad's own row; position_embeddings rows 0, 1 never used otherwise. */
Test(model_archs, roberta_positions_skip_padding)
{
    at_list l;
    at_opts o = {.extra = "{\"layer_norm_eps\": 1e-5}"};
    ag_model *m = at_load(at_folder("r", "roberta", &o, &l));
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->position_offset, 2);
    cr_assert_eq(g->max_tokens, P - 2);
    const at_t *w = at_find(&l, "roberta.embeddings.word_embeddings.weight"),
               *pe = at_find(&l, "roberta.embeddings.position_embeddings.weight"),
               *ty = at_find(&l, "roberta.embeddings.token_type_embeddings.weight"),
               *lw = at_find(&l, "roberta.embeddings.LayerNorm.weight"),
               *lb = at_find(&l, "roberta.embeddings.LayerNorm.bias");
    int32_t ids[5] = {0, 4, 1, 6, 1}; /* 1 = pad_token_id */
    const size_t rows[5] = {2, 3, 1, 4, 1};
    double *h = run_hidden(m, ids, 5, AG_PRECISION_F64);
    for (size_t i = 0; i < 5; i++) {
        double e[D], mean = 0, var = 0;
        for (size_t j = 0; j < D; j++) {
            e[j] = (w->v[ids[i] * D + j] + ty->v[j]) + pe->v[rows[i] * D + j];
            mean += e[j] / D;
        }
        for (size_t j = 0; j < D; j++)
            var += (e[j] - mean) * (e[j] - mean) / D;
        for (size_t j = 0; j < D; j++)
            cr_assert(fabs(h[i * D + j] - ((e[j] - mean) / sqrt(var + 1e-5) * lw->v[j] + lb->v[j])) < 1e-12,
                      "token %zu dim %zu", i, j);
    }
    free(h);
    ag_error err = {0};
    int32_t many[P] = {0};
    cr_assert_eq(ag_model_forward(m, many, P - 2, AG_PRECISION_F32, NULL, NULL, NULL, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(ag_model_forward(m, many, P - 1, AG_PRECISION_F32, NULL, NULL, NULL, &err), AG_ERANGE);
    cr_assert(strstr(err.message, "max_position_embeddings = 12"), "%s", err.message);
    ag_model_free(m);
    at_free(&l);
}

/* OPT with layer_norm_elementwise_affine false: no norm tensors at all. */
Test(model_archs, opt_norms_without_parameters)
{
    at_opts o = {.no_norms = 1, .extra = "{\"layer_norm_elementwise_affine\": false}"};
    ag_model *m = at_load(at_folder("o", "opt", &o, NULL));
    int32_t ids[4] = {1, 2, 3, 4};
    double *h = run_hidden(m, ids, 4, AG_PRECISION_F64);
    for (size_t i = 0; i < 4; i++) { /* the final norm's output: mean 0, variance 1/(1 + eps/var) */
        double mean = 0, var = 0;
        for (size_t j = 0; j < D; j++)
            mean += h[(L * 4 + i) * D + j] / D;
        for (size_t j = 0; j < D; j++)
            var += pow(h[(L * 4 + i) * D + j] - mean, 2) / D;
        cr_assert(fabs(mean) < 1e-14 && fabs(var - 1) < 1e-3, "token %zu: mean %g var %g", i, mean, var);
    }
    free(h);
    ag_model_free(m);
    at_opts missing = {.no_norms = 1};
    expect_load_error(at_folder("o2", "opt", &missing, NULL), AG_ENOTFOUND, "'model.decoder.final_layer_norm.weight'");
}

/* ---- weights of every head ------------------------------------------------ */

/* ag_model_attn_weights: [in, out] columns of head h from the file's rows. */
Test(model_archs, attn_weights_gpt_neox_interleave)
{
    at_list l;
    ag_model *m = at_load(at_folder("n", "gpt_neox", NULL, &l));
    const at_t *w = at_find(&l, "gpt_neox.layers.1.attention.query_key_value.weight"),
               *b = at_find(&l, "gpt_neox.layers.1.attention.query_key_value.bias");
    ag_attn_weights a;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(m, 1, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(a.rope.rotary_dim, 2, "int(4 * 0.5)");
    cr_assert_float_eq(a.rope.theta, 10000, 0);
    cr_assert_float_eq(a.scale, 0.5, 0);
    const ag_array *parts[3] = {&a.wq, &a.wk, &a.wv}, *bias[3] = {&a.bq, &a.bk, &a.bv};
    for (int p = 0; p < 3; p++)
        for (size_t h = 0; h < H; h++)
            for (size_t c = 0; c < HD; c++) {
                size_t row = h * 3 * HD + (size_t)p * HD + c; /* view(..., heads, 3·hd).chunk(3) */
                for (size_t i = 0; i < D; i++)
                    cr_assert_eq(parts[p]->data[i * H * HD + h * HD + c], w->v[row * D + i]);
                cr_assert_eq(bias[p]->data[h * HD + c], b->v[row]);
            }
    ag_attn_weights_free(&a);
    ag_model_free(m);
    at_free(&l);
}

Test(model_archs, attn_weights_phi3_fused_grouped)
{
    at_list l;
    at_opts o = {.extra = "{\"partial_rotary_factor\": 0.5, \"sliding_window\": 7}"};
    ag_model *m = at_load(at_folder("p", "phi3", &o, &l));
    const at_t *w = at_find(&l, "model.layers.2.self_attn.qkv_proj.weight");
    ag_attn_weights a;
    cr_assert_eq(ag_model_attn_weights(m, 2, &a, NULL), AG_OK);
    cr_assert_eq(a.n_kv_head, 1);
    cr_assert_eq(a.wq.shape[1], H * HD);
    cr_assert_eq(a.wk.shape[1], HD);
    cr_assert_eq(a.rope.rotary_dim, 2);
    cr_assert_eq(a.window, 7);
    cr_assert_null(a.bq.data);
    for (size_t i = 0; i < D; i++)
        for (size_t c = 0; c < HD; c++) {
            cr_assert_eq(a.wq.data[i * H * HD + HD + c], w->v[(HD + c) * D + i], "Q head 1");
            cr_assert_eq(a.wk.data[i * HD + c], w->v[(H * HD + c) * D + i], "K after the H·hd Q rows");
            cr_assert_eq(a.wv.data[i * HD + c], w->v[(H * HD + HD + c) * D + i], "V last");
        }
    ag_attn_weights_free(&a);
    ag_model_free(m);
    at_free(&l);
}

/* Gemma-2: head_dim 8 (not 8/2), one kv head, query_pre_attn_scalar^-0.5,
 * softcap, the window of even layers only. */
Test(model_archs, attn_weights_gemma2_scale_softcap_window)
{
    at_opts o = {.extra = "{\"query_pre_attn_scalar\": 16, \"attn_logit_softcapping\": 30.0, "
                          "\"sliding_window\": 5, \"rope_theta\": 5000}"};
    ag_model *m = at_load(at_folder("g", "gemma2", &o, NULL));
    for (int l = 0; l < L; l++) {
        ag_attn_weights a;
        cr_assert_eq(ag_model_attn_weights(m, l, &a, NULL), AG_OK);
        cr_assert_eq(a.head_dim, 8);
        cr_assert_eq(a.n_kv_head, 1);
        cr_assert_eq(a.wq.shape[0], D);
        cr_assert_eq(a.wq.shape[1], H * 8);
        cr_assert_eq(a.wo.shape[0], H * 8);
        cr_assert_eq(a.wo.shape[1], D);
        cr_assert_float_eq(a.scale, 0.25, 0);
        cr_assert_float_eq(a.softcap, 30.0, 0);
        cr_assert_eq(a.window, l % 2 ? 0 : 5);
        cr_assert_eq(a.rope.rotary_dim, 8);
        cr_assert_float_eq(a.rope.theta, 5000, 0);
        ag_attn_weights_free(&a);
    }
    ag_model_free(m);
    at_opts n = {.extra = "{\"attn_logit_softcapping\": null}"};
    m = at_load(at_folder("g2", "gemma2", &n, NULL));
    cr_assert_float_eq(ag_model_get_config(m)->softcap, 0, 0);
    ag_model_free(m);
}

Test(model_archs, attn_weights_scale_of_query_scaling_models)
{
    const char *mts[2] = {"opt", "distilbert"};
    for (int k = 0; k < 2; k++) {
        ag_model *m = at_load(at_folder(mts[k], mts[k], NULL, NULL));
        const ag_model_config *g = ag_model_get_config(m);
        cr_assert_eq(g->scale_query, 1);
        ag_attn_weights a;
        cr_assert_eq(ag_model_attn_weights(m, 0, &a, NULL), AG_OK);
        cr_assert_float_eq(a.scale, 0.5, 0, "%s: head_dim^-0.5", mts[k]);
        cr_assert_eq(a.rope.rotary_dim, 0);
        cr_assert_eq(a.causal, k == 0);
        cr_assert_not_null(a.bq.data);
        ag_attn_weights_free(&a);
        ag_model_free(m);
    }
}

/* ---- RoPE: scaling types and their limits ---------------------------------- */

Test(model_archs, rope_scaling_types_read)
{
    at_opts o = {.extra = "{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.5}}"};
    ag_model *m = at_load(at_folder("d", "llama", &o, NULL));
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->rope.type, AG_ROPE_DYNAMIC);
    cr_assert_eq(g->rope.original_max_positions, P);
    cr_assert_eq(g->max_tokens, 30, "floor(2.5 · 12)");
    int32_t ids[31] = {0};
    ag_error err = {0};
    cr_assert_eq(ag_model_forward(m, ids, 30, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_model_forward(m, ids, 31, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_ERANGE);
    cr_assert(strstr(err.message, "dynamic rope_scaling factor 2.5"), "%s", err.message);
    ag_model_free(m);

    at_opts l3 = {.extra = "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
                           "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8}}"};
    m = at_load(at_folder("l3", "llama", &l3, NULL));
    g = ag_model_get_config(m);
    cr_assert_eq(g->rope.type, AG_ROPE_LLAMA3);
    cr_assert_eq(g->rope.original_max_positions, 8);
    cr_assert_float_eq(g->rope.high_freq_factor, 4, 0);
    cr_assert_eq(g->max_tokens, P);
    ag_model_free(m);

    /* Transformers v5: everything in rope_parameters */
    at_opts v5 = {.extra = "{\"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2, \"rope_theta\": 500, "
                           "\"partial_rotary_factor\": 0.5}}"};
    m = at_load(at_folder("v5", "phi3", &v5, NULL));
    g = ag_model_get_config(m);
    cr_assert_eq(g->rope.type, AG_ROPE_LINEAR);
    cr_assert_float_eq(g->rope.theta, 500, 0);
    cr_assert_eq(g->rope.rotary_dim, 2);
    ag_model_free(m);
}

Test(model_archs, rope_scaling_refused)
{
    const char *types[3] = {"ntk", "xpos", "su"}; /* yarn, longrope: see rope_scaling_yarn_longrope */
    for (int k = 0; k < 3; k++) {
        char extra[200], needle[64], dir[16];
        snprintf(extra, sizeof extra, "{\"rope_scaling\": {\"rope_type\": \"%s\", \"factor\": 4}}", types[k]);
        snprintf(needle, sizeof needle, "'rope_scaling' has rope_type \"%s\"", types[k]);
        snprintf(dir, sizeof dir, "y%d", k);
        at_opts o = {.extra = extra};
        const char *d = at_folder(dir, k == 1 ? "phi3" : "llama", &o, NULL);
        expect_load_error(d, AG_EUNSUPPORTED, needle);
        expect_load_error(d, AG_EUNSUPPORTED, "config.json");
    }
    at_opts legacy = {.extra = "{\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 4}}"};
    expect_load_error(at_folder("y3", "mistral", &legacy, NULL), AG_EUNSUPPORTED, "\"ntk\"");
    at_opts v5 = {.extra = "{\"rope_parameters\": {\"rope_type\": \"ntk\", \"factor\": 4}}"};
    expect_load_error(at_folder("y4", "gemma", &v5, NULL), AG_EUNSUPPORTED, "'rope_parameters' has rope_type \"ntk\"");
    at_opts layered = {.extra = "{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}}}"};
    expect_load_error(at_folder("y5", "gemma2", &layered, NULL), AG_EUNSUPPORTED, "per-layer-type");
    at_opts small = {.extra = "{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0.5}}"};
    expect_load_error(at_folder("y6", "llama", &small, NULL), AG_EFORMAT, "factor must be a number >= 1");
    at_opts l3 = {.extra = "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}"};
    expect_load_error(at_folder("y7", "llama", &l3, NULL), AG_EFORMAT, "llama3 needs");
    at_opts odd = {.extra = "{\"rotary_pct\": 0.25}"}; /* int(4 · 0.25) = 1 */
    expect_load_error(at_folder("y8", "gpt_neox", &odd, NULL), AG_EFORMAT, "must be even");
}

/* ---- errors ----------------------------------------------------------------- */

Test(model_archs, unknown_model_type_lists_supported)
{
    at_opts o = {.extra = "{\"model_type\": \"rwkv\"}"};
    const char *d = at_folder("u", "llama", &o, NULL);
    expect_load_error(d, AG_EUNSUPPORTED, "\"rwkv\" is not supported");
    expect_load_error(d, AG_EUNSUPPORTED, "gpt_neox, opt, llama, mistral, qwen2, gemma, gemma2, phi3");
}

/* A missing tensor: its full name with the base-model prefix detected from
 * the token embedding. */
Test(model_archs, missing_tensor_named_in_full)
{
    const char *cases[][2] = {
        {"gpt_neox", "gpt_neox.layers.2.attention.query_key_value.bias"},
        {"opt", "model.decoder.layers.0.fc1.bias"},
        {"opt", "model.decoder.embed_positions.weight"},
        {"roberta", "roberta.embeddings.token_type_embeddings.weight"},
        {"distilbert", "distilbert.transformer.layer.1.sa_layer_norm.weight"},
        {"gemma2", "model.layers.1.post_feedforward_layernorm.weight"},
        {"phi3", "model.layers.0.mlp.gate_up_proj.weight"},
        {"gemma", "model.norm.weight"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char dir[16], needle[160];
        snprintf(dir, sizeof dir, "x%zu", k);
        snprintf(needle, sizeof needle, "tensor '%s' not found", cases[k][1]);
        at_opts o = {.drop = cases[k][1]};
        expect_load_error(at_folder(dir, cases[k][0], &o, NULL), AG_ENOTFOUND, needle);
    }
}

Test(model_archs, config_errors)
{
    const char *cases[][4] = {
        {"gemma2", "{\"layer_types\": [\"full_attention\"]}", "layer_types", "f"},
        {"gemma2", "{\"layer_types\": [\"chunked_attention\", \"full_attention\", \"full_attention\"]}",
         "\"chunked_attention\"", "u"},
        {"mistral", "{\"sliding_window\": 0}", "'sliding_window' = 0", "f"},
        {"gemma", "{\"use_bidirectional_attention\": true}", "use_bidirectional_attention", "u"},
        {"roberta", "{\"pad_token_id\": 11}", "pad_token_id", "f"},
        {"roberta", "{\"position_embedding_type\": \"relative_key\"}", "relative_key", "u"},
        {"opt", "{\"do_layer_norm_before\": 1}", "'do_layer_norm_before' must be true or false", "f"},
        {"gpt_neox", "{\"hidden_act\": \"gelu_fast\"}", "\"gelu_fast\"", "u"},
        {"phi3", "{\"num_key_value_heads\": 3}", "does not divide", "f"},
        {"gemma2", "{\"query_pre_attn_scalar\": -1}", "query_pre_attn_scalar", "f"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char dir[16];
        snprintf(dir, sizeof dir, "c%zu", k);
        at_opts o = {.extra = cases[k][1]};
        expect_load_error(at_folder(dir, cases[k][0], &o, NULL), cases[k][3][0] == 'u' ? AG_EUNSUPPORTED : AG_EFORMAT,
                          cases[k][2]);
    }
}

/* The normalised config of each architecture. */
Test(model_archs, config_per_architecture)
{
    ag_model *m = at_load(at_folder("n", "gpt_neox", NULL, NULL));
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->arch, AG_ARCH_GPT_NEOX);
    cr_assert_str_eq(g->modeling, "modeling_gpt_neox.py");
    cr_assert_eq(g->residual, AG_RESIDUAL_PARALLEL);
    cr_assert_eq(g->qkv, AG_QKV_PER_HEAD);
    cr_assert(g->qkv_bias && g->o_bias && g->mlp_bias);
    cr_assert_str_eq(g->activation, "gelu");
    cr_assert_float_eq(g->norm_eps, 1e-5, 0);
    ag_model_free(m);

    at_opts post = {.extra = "{\"do_layer_norm_before\": false}", .drop = "model.decoder.final_layer_norm.weight"};
    m = at_load(at_folder("o", "opt", &post, NULL)); /* post-LN OPT has no final norm: not read */
    g = ag_model_get_config(m);
    cr_assert_eq(g->residual, AG_RESIDUAL_POST);
    cr_assert_eq(g->final_norm, 0);
    cr_assert_eq(g->scale_query, 1);
    cr_assert_str_eq(g->activation, "relu");
    ag_model_free(m);

    m = at_load(at_folder("d", "distilbert", NULL, NULL));
    g = ag_model_get_config(m);
    cr_assert_eq(g->n_layer, L);
    cr_assert_eq(g->d_ff, FF);
    cr_assert_float_eq(g->norm_eps, 1e-12, 0);
    cr_assert_eq(g->causal, 0);
    cr_assert_eq(g->type_vocab_size, 0);
    ag_model_free(m);

    m = at_load(at_folder("g", "gemma", NULL, NULL));
    g = ag_model_get_config(m);
    cr_assert_eq(g->norm, AG_NORM_RMS_1P);
    cr_assert_str_eq(g->activation, "gelu_pytorch_tanh", "hidden_activation's default, hidden_act ignored");
    cr_assert_eq(g->head_dim, 8);
    cr_assert_eq(g->n_kv_head, 1);
    ag_model_free(m);

    m = at_load(at_folder("p", "phi3", NULL, NULL));
    g = ag_model_get_config(m);
    cr_assert_eq(g->qkv, AG_QKV_BLOCKS);
    cr_assert_eq(g->mlp, AG_MLP_GATED_FUSED);
    cr_assert_eq(g->qkv_bias + g->o_bias + g->mlp_bias, 0);
    cr_assert_eq(g->sliding_window, 0);
    ag_model_free(m);
}

/* ---- the weights of every layer reproduce its attention ----------------- */

typedef struct {
    const ag_model *m;
    const char *name;
    double max_err;
} relayer_ctx;

/* K (and its bias) with kv head g repeated for its H/H_kv query heads, so
 * that head h of ag_attention_layer reads kv head h / (H/H_kv). */
static double *repeat_kv(const ag_array *a, size_t rows, int nq, int nkv, int hd)
{
    if (!a->data)
        return NULL;
    size_t w = (size_t)nq * hd, wkv = (size_t)nkv * hd;
    double *out = malloc(rows * w * sizeof *out);
    for (size_t i = 0; i < rows; i++)
        for (int h = 0; h < nq; h++)
            memcpy(out + i * w + (size_t)h * hd, a->data + i * wkv + (size_t)(h / (nq / nkv)) * hd,
                   (size_t)hd * sizeof *out);
    return out;
}

static int relayer(const ag_layer_view *v, void *user)
{
    relayer_ctx *c = user;
    ag_attn_weights w;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(c->m, v->layer, &w, &err), AG_OK, "%s", err.message);
    cr_assert_eq(w.window, ag_model_layer_window(c->m, v->layer));
    double *wk = repeat_kv(&w.wk, v->d, w.n_head, w.n_kv_head, w.head_dim);
    double *bk = repeat_kv(&w.bk, 1, w.n_head, w.n_kv_head, w.head_dim);
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = v->x, .n = v->n, .d = v->d, .wq = w.wq.data, .wk = wk,
                            .bq = w.bq.data, .bk = bk, .d_a = w.wq.shape[1],
                            .n_head = w.n_head, .scale = w.scale, .causal = w.causal,
                            .rope = w.rope, .softcap = w.softcap, .window = w.window,
                            .precision = AG_PRECISION_F64};
    ag_array a = {0};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s layer %d: %s", c->name, v->layer, err.message);
    for (size_t i = 0; i < ag_array_size(&a); i++) {
        c->max_err = fmax(c->max_err, fabs(a.data[i] - v->attn[i]));
        if (v->attn[i] == 0)
            cr_assert_eq(a.data[i], 0.0, "%s layer %d: a masked key is visible", c->name, v->layer);
    }
    ag_array_free(&a);
    free(wk);
    free(bk);
    ag_attn_weights_free(&w);
    return 0;
}

/* Every folder of tests/data/models/arch/ (one per architecture case, see
 * its README): ag_model_attn_weights' W_Q, W_K, biases, scale, rope,
 * softcap and window, through ag_attention_layer on the callback's X, give
 * the forward pass's probabilities (GPT-J: its pairs listed as rotate-half
 * pairs). The yarn and longrope folders need ag_rope_extra, which
 * ag_attn_layer_spec lacks: tests/kernel/test_rope_scaling.c checks them
 * through family E. */
Test(model_archs, attn_weights_reproduce_attention_every_architecture)
{
    const char *names[] = {"gpt-neox-parallel", "gpt-neox-sequential", "opt", "opt-350m-like", "roberta",
                           "xlm-roberta", "distilbert", "gemma", "gemma2", "phi3", "llama-linear",
                           "llama-dynamic", "llama3", "mistral-window", "qwen2-window", "gptj"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/data/models/arch/%s", names[k]);
        ag_model *m = at_load(dir);
        const ag_model_config *g = ag_model_get_config(m);
        size_t n = (size_t)(g->max_tokens < 18 ? g->max_tokens : 18);
        int32_t ids[18];
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)((7 * i + 3) % (size_t)g->vocab_size);
        relayer_ctx c = {.m = m, .name = names[k]};
        ag_error err = {0};
        cr_assert_eq(ag_model_forward(m, ids, n, AG_PRECISION_F64, relayer, &c, NULL, &err), AG_OK, "%s: %s",
                     names[k], err.message);
        cr_log_info("%s: max |attention from weights - pass| %.3g", names[k], c.max_err);
        cr_assert_lt(c.max_err, 1e-12, "%s: %g", names[k], c.max_err);
        ag_model_free(m);
    }
}

/* yarn and longrope load from every spelling (legacy "type", v5
 * rope_parameters) with HF's defaults; longrope's factor lists are
 * required, rotary_dim / 2 long. */
Test(model_archs, rope_scaling_yarn_longrope)
{
    at_opts legacy = {.extra = "{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4}}"};
    ag_model *m = at_load(at_folder("z0", "mistral", &legacy, NULL));
    const ag_model_config *g = ag_model_get_config(m);
    cr_expect_eq(g->rope.type, AG_ROPE_YARN);
    cr_expect_eq(g->rope_extra.beta_fast, 32.0);
    cr_expect_eq(g->rope_extra.beta_slow, 1.0);
    cr_expect_eq(g->rope_extra.truncate, 1);
    cr_expect_eq(g->rope.original_max_positions, g->max_positions); /* no original: max_position_embeddings */
    cr_expect_float_eq(g->rope_extra.attention_factor, 0.1 * log(4) + 1, 1e-15);
    cr_expect_eq(g->max_tokens, 4 * P); /* factor · original (here max_position_embeddings) */
    int32_t ids[4 * P + 1] = {0};
    ag_error err = {0};
    cr_expect_eq(ag_model_check_ids(m, ids, 4 * P, &err), AG_OK, "%s", err.message);
    cr_expect_eq(ag_model_check_ids(m, ids, 4 * P + 1, &err), AG_ERANGE);
    cr_expect(strstr(err.message, "yarn rope_scaling factor 4"), "%s", err.message);
    ag_model_free(m);
    at_opts v5 = {.extra = "{\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 2, \"attention_factor\": 0.75, "
                           "\"rope_theta\": 500}}"};
    m = at_load(at_folder("z1", "gemma", &v5, NULL));
    g = ag_model_get_config(m);
    cr_expect_eq(g->rope_extra.attention_factor, 0.75);
    cr_expect_eq(g->rope.theta, 500);
    ag_model_free(m);
    /* 0 reads as absent (HF's `or`): GLM-style mscale_all_dim 0.0 */
    at_opts zero = {.extra = "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"mscale\": 1.0, "
                             "\"mscale_all_dim\": 0.0, \"beta_fast\": 0}}"};
    m = at_load(at_folder("z4", "llama", &zero, NULL));
    g = ag_model_get_config(m);
    cr_expect_float_eq(g->rope_extra.attention_factor, 0.1 * log(4) + 1, 1e-15);
    cr_expect_eq(g->rope_extra.beta_fast, 32.0);
    ag_model_free(m);
    at_opts dsv3 = {.extra = "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 40, \"mscale\": 1.0, "
                             "\"mscale_all_dim\": 1.0}}"}; /* DeepSeek-V3: the ratio is 1 */
    m = at_load(at_folder("z5", "llama", &dsv3, NULL));
    cr_expect_eq(ag_model_get_config(m)->rope_extra.attention_factor, 1.0);
    ag_model_free(m);
    /* configuration_phi3.py: Phi-3's "su" and "yarn" are longrope */
    const char *alias[2] = {"su", "yarn"};
    for (int k = 0; k < 2; k++) {
        char extra[240], dir[8];
        snprintf(extra, sizeof extra, "{\"original_max_position_embeddings\": 4, \"rope_scaling\": {\"type\": \"%s\", "
                 "\"short_factor\": [1, 2], \"long_factor\": [3, 4]}}", alias[k]);
        snprintf(dir, sizeof dir, "z6%d", k);
        at_opts o = {.extra = extra};
        m = at_load(at_folder(dir, "phi3", &o, NULL));
        g = ag_model_get_config(m);
        cr_expect_eq(g->rope.type, AG_ROPE_LONGROPE, "%s", alias[k]);
        cr_expect_float_eq(g->rope.factor, 3.0, 1e-15); /* max_position_embeddings 12 / 4 */
        cr_expect_eq(g->rope_extra.long_factor[1], 4.0);
        ag_model_free(m);
    }
    at_opts nolists = {.extra = "{\"rope_scaling\": {\"type\": \"longrope\", \"factor\": 4}}"};
    expect_load_error(at_folder("z2", "phi3", &nolists, NULL), AG_EFORMAT, "'short_factor' must be a list");
    at_opts trunc = {.extra = "{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4, \"truncate\": 1}}"};
    expect_load_error(at_folder("z3", "llama", &trunc, NULL), AG_EFORMAT, "truncate must be true or false");
}
