/* test_archs.c — the engine on the random-weight architecture folders of
 * tests/data/models/arch/ (made by tools/make_arch_models.py): for each one,
 * ag_model_load and ag_model_forward in f64 and f32 on the ids of
 * tests/data/archref/<name>/ids.json, compared with the float64 references
 * attn.npy (L, H, n, n) and hidden.npy (L+1, n, d) of tests/ref/hf_forward.py,
 * an independent port of Hugging Face's modeling code:
 *   f64: |attn − ref| <= 1e-9,  |hidden − ref| <= 1e-9 · max(1, |ref|)
 *   f32: |attn − ref| <= 1e-5,  |hidden − ref| <= 1e-4 · max(1, |ref|)
 * and every probability the reference has at exactly 0 (a key the causal or
 * sliding-window mask hides) exactly 0. Run from the repository root. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/access.h"
#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/metrics.h"
#include "attngeom/model.h"
#include "attngeom/run.h"
#include "../util/test_model_util.h"

#define ARCH_DIR "tests/data/models/arch"
#define REF_DIR "tests/data/archref"

static int32_t *arch_ids(const char *name, size_t *n)
{
    char p[512];
    snprintf(p, sizeof p, REF_DIR "/%s/ids.json", name);
    return read_ids_json(p, n);
}

typedef struct {
    const char *name;
    const ag_array *ref; /* (L, H, n, n) */
    double max_err;
    int layers_seen;
} arch_cmp;

static int arch_cmp_layer(const ag_layer_view *v, void *user)
{
    arch_cmp *c = user;
    const ag_array *a = c->ref;
    cr_assert_eq(v->layer, c->layers_seen, "%s: layers out of order", c->name);
    cr_assert_eq((size_t)v->n_head, a->shape[1], "%s layer %d: %d heads, reference %zu", c->name, v->layer,
                 v->n_head, a->shape[1]);
    size_t cnt = (size_t)v->n_head * v->n * v->n;
    const double *ref = a->data + (size_t)v->layer * cnt;
    for (size_t i = 0; i < cnt; i++) {
        double e = fabs(v->attn[i] - ref[i]);
        if (!(e <= c->max_err))
            c->max_err = e; /* NaN too */
        if (ref[i] == 0.0)
            cr_assert_eq(v->attn[i], 0.0, "%s layer %d head %zu query %zu key %zu: masked, yet %g", c->name,
                         v->layer, i / (v->n * v->n), i / v->n % v->n, i % v->n, v->attn[i]);
    }
    c->layers_seen++;
    return 0;
}

static void check_arch_precision(const ag_model *m, const char *name, const int32_t *ids, size_t n,
                                 const ag_array *attn, const ag_array *hid, ag_precision prec, double tol_a,
                                 double tol_h)
{
    const char *pn = prec == AG_PRECISION_F64 ? "f64" : "f32";
    ag_error err = {0};
    double *h = calloc(ag_array_size(hid), sizeof *h); // (L+1, n, d)
    arch_cmp c = {.name = name, .ref = attn};
    int rc = ag_model_forward(m, ids, n, prec, arch_cmp_layer, &c, h, &err);
    cr_assert_eq(rc, AG_OK, "%s %s: forward failed: %s", name, pn, err.message);
    cr_assert_eq(c.layers_seen, (int)attn->shape[0], "%s %s: %d layers, reference %zu", name, pn, c.layers_seen,
                 attn->shape[0]);
    double eh = 0;
    size_t worst = 0;
    for (size_t i = 0; i < ag_array_size(hid); i++) {
        double e = fabs(h[i] - hid->data[i]) / fmax(1.0, fabs(hid->data[i]));
        if (!(e <= eh)) {
            eh = e;
            worst = i;
        }
    }
    fprintf(stderr, "[archs] %-20s %s: max |attn err| %.3g, max hidden err %.3g\n", name, pn, c.max_err, eh);
    cr_expect_leq(c.max_err, tol_a, "%s %s: attention error %g > %g", name, pn, c.max_err, tol_a);
    cr_expect_leq(eh, tol_h, "%s %s: hidden error %g > %g at element %zu (got %.17g, expected %.17g)", name, pn, eh,
                  tol_h, worst, h[worst], hid->data[worst]);
    free(h);
}

static void check_arch(const char *name)
{
    char dir[512], p[512];
    ag_error err = {0};
    ag_array attn = {0}, hid = {0};
    snprintf(p, sizeof p, REF_DIR "/%s/attn.npy", name);
    cr_assert_eq(ag_npy_read(p, &attn, &err), AG_OK, "%s", err.message);
    snprintf(p, sizeof p, REF_DIR "/%s/hidden.npy", name);
    cr_assert_eq(ag_npy_read(p, &hid, &err), AG_OK, "%s", err.message);
    cr_assert_eq(attn.ndim, 4);
    cr_assert_eq(hid.ndim, 3);
    size_t n;
    int32_t *ids = arch_ids(name, &n);
    cr_assert_eq(attn.shape[2], n);

    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_model *m = NULL;
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: load failed: %s", name, err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq((size_t)g->n_layer + 1, hid.shape[0], "%s: %d layers, reference %zu", name, g->n_layer,
                 hid.shape[0] - 1);
    cr_assert_eq((size_t)g->d_model, hid.shape[2], "%s: d_model %d, reference %zu", name, g->d_model, hid.shape[2]);

    check_arch_precision(m, name, ids, n, &attn, &hid, AG_PRECISION_F64, 1e-9, 1e-9);
    check_arch_precision(m, name, ids, n, &attn, &hid, AG_PRECISION_F32, 1e-5, 1e-4);
    ag_model_free(m);
    free(ids);
    ag_array_free(&attn);
    ag_array_free(&hid);
}

Test(archs, gpt_neox_parallel) { check_arch("gpt-neox-parallel"); }
Test(archs, gpt_neox_sequential) { check_arch("gpt-neox-sequential"); }
Test(archs, opt) { check_arch("opt"); }
Test(archs, opt_350m_like) { check_arch("opt-350m-like"); }
Test(archs, roberta) { check_arch("roberta"); }
Test(archs, xlm_roberta) { check_arch("xlm-roberta"); }
Test(archs, distilbert) { check_arch("distilbert"); }
Test(archs, gemma) { check_arch("gemma"); }
Test(archs, gemma2) { check_arch("gemma2"); }
Test(archs, phi3) { check_arch("phi3"); }
Test(archs, llama_linear) { check_arch("llama-linear"); }
Test(archs, llama_dynamic) { check_arch("llama-dynamic"); }
Test(archs, llama3) { check_arch("llama3"); }
Test(archs, mistral_window) { check_arch("mistral-window"); }
Test(archs, qwen2_window) { check_arch("qwen2-window"); }
Test(archs, gptj) { check_arch("gptj"); }
Test(archs, llama_yarn) { check_arch("llama-yarn"); }
Test(archs, qwen2_yarn) { check_arch("qwen2-yarn"); }
Test(archs, phi3_longrope) { check_arch("phi3-longrope"); }
Test(archs, phi3_longrope_short) { check_arch("phi3-longrope-short"); }
Test(archs, qwen3_yarn) { check_arch("qwen3-yarn"); }
Test(archs, clip_text) { check_arch("clip-text"); }
Test(archs, qwen3) { check_arch("qwen3"); }
Test(archs, olmo2) { check_arch("olmo2"); }
Test(archs, gemma3) { check_arch("gemma3"); }
Test(archs, modernbert) { check_arch("modernbert"); }
Test(archs, modernbert_v5_bias) { check_arch("modernbert-v5-bias"); }
Test(archs, mixtral) { check_arch("mixtral"); }
Test(archs, qwen2_moe) { check_arch("qwen2-moe"); }
Test(archs, olmoe) { check_arch("olmoe"); }
/* Transformers v5's fused expert tensors (mlp.experts.gate_up_proj, down_proj) */
Test(archs, mixtral_v5) { check_arch("mixtral-v5"); }
Test(archs, qwen2_moe_v5) { check_arch("qwen2-moe-v5"); }

static ag_model *load_arch(const char *name)
{
    char dir[512];
    ag_error err = {0};
    ag_model *m = NULL;
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", name, err.message);
    return m;
}

/* What the two QK-norm rows read from their config.json (make_arch_models.py
 * qwen3, olmo2): Qwen3's head_dim 16 != 32 / 4 and its layer_types windows,
 * OLMo-2's default eps and no-pre-norm wiring. */
Test(archs, qk_norm_configs)
{
    ag_model *m = load_arch("qwen3");
    const ag_model_config *g = ag_model_get_config(m);
    cr_expect_eq(g->qk_norm, AG_QK_NORM_HEAD);
    cr_expect_eq(g->head_dim, 16);
    cr_expect_eq(g->no_pre_norms, 0);
    cr_expect_eq(g->sandwich_norms, 0);
    cr_expect(g->qkv_bias && g->o_bias && !g->mlp_bias);
    cr_expect_eq(g->rope.theta, 1e6);
    int want[3] = {0, 5, 5}; /* layer_types: full, sliding, sliding */
    for (int l = 0; l < 3; l++)
        cr_expect_eq(ag_model_layer_window(m, l), want[l], "qwen3 layer %d", l);
    ag_model_free(m);
    m = load_arch("olmo2");
    g = ag_model_get_config(m);
    cr_expect_eq(g->qk_norm, AG_QK_NORM_FULL);
    cr_expect_eq(g->head_dim, 8);
    cr_expect_eq(g->no_pre_norms, 1);
    cr_expect_eq(g->sandwich_norms, 1);
    cr_expect_eq(g->norm_eps, 1e-5);
    cr_expect_eq(g->residual, AG_RESIDUAL_PRE);
    cr_expect(!g->qkv_bias && !g->o_bias);
    ag_model_free(m);
    /* Gemma-3: sliding_window_pattern 3 (layers 0, 1 sliding), their RoPE
     * base rope_local_base_freq without scaling, the full layer's rope_theta
     * with linear x8; no soft-capping; query_pre_attn_scalar 24 */
    m = load_arch("gemma3");
    g = ag_model_get_config(m);
    cr_expect_eq(g->qk_norm, AG_QK_NORM_HEAD);
    cr_expect_eq(g->norm, AG_NORM_RMS_1P);
    cr_expect_eq(g->sandwich_norms, 1);
    cr_expect_eq(g->softcap, 0);
    cr_expect_eq(g->attn_scale, 1 / sqrt(24.0));
    cr_expect_eq(g->rope.theta, 1e6);
    cr_expect_eq(g->rope.type, AG_ROPE_LINEAR);
    cr_expect_eq(g->rope.factor, 8);
    cr_expect_eq(g->rope_local.theta, 1e4);
    cr_expect_eq(g->rope_local.type, AG_ROPE_DEFAULT);
    cr_expect_eq(g->rope_local.rotary_dim, 16);
    int want3[3] = {6, 6, 0};
    for (int l = 0; l < 3; l++) {
        ag_attn_weights w = {0};
        ag_error err = {0};
        cr_expect_eq(ag_model_layer_window(m, l), want3[l], "gemma3 layer %d", l);
        cr_assert_eq(ag_model_attn_weights(m, l, &w, &err), AG_OK, "%s", err.message);
        cr_expect_eq(w.rope.theta, want3[l] ? 1e4 : 1e6, "gemma3 layer %d: the layer's RoPE", l);
        ag_attn_weights_free(&w);
    }
    ag_model_free(m);
}

/* What the mixture-of-experts rows read (make_arch_models.py mixtral,
 * qwen2_moe, olmoe): experts, top-k, widths, renormalisation (Mixtral
 * always; the others norm_topk_prob), which layers are sparse (Qwen2-MoE
 * mlp_only_layers [1]), windows, OLMoE's QK-norm over the projections. */
Test(archs, moe_configs)
{
    ag_model *m = load_arch("mixtral");
    const ag_model_config *g = ag_model_get_config(m);
    cr_expect(g->n_expert == 4 && g->top_k == 2 && g->d_ff_expert == 16 && g->d_ff_shared == 0);
    cr_expect_eq(g->norm_topk, 1);
    cr_expect_eq(g->rope.theta, 1e6);
    cr_expect(!g->qkv_bias && !g->o_bias);
    for (int l = 0; l < 2; l++)
        cr_expect(ag_model_layer_experts(m, l) && ag_model_layer_window(m, l) == 6, "mixtral layer %d", l);
    cr_expect_eq(ag_model_layer_experts(m, 2), 0);
    ag_model_free(m);
    m = load_arch("qwen2-moe");
    g = ag_model_get_config(m);
    cr_expect(g->n_expert == 4 && g->top_k == 2 && g->d_ff_expert == 16 && g->d_ff_shared == 24);
    cr_expect(g->d_ff == 32 && g->norm_topk == 0 && g->qkv_bias && !g->o_bias);
    const char *dims[] = {"n_expert", "top_k", "d_ff_expert", "d_ff_shared", "d_ff"};
    long want_dim[] = {4, 2, 16, 24, 32}, got;
    ag_error derr = {0};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(ag_model_dim(m, dims[i], &got, &derr), AG_OK, "%s", derr.message);
        cr_expect_eq(got, want_dim[i], "ag_model_dim %s", dims[i]);
    }
    /* Every layer windowed: the eager mask ignores max_window_layers (1) */
    int sparse[3] = {1, 0, 1}, win[3] = {5, 5, 5};
    for (int l = 0; l < 3; l++) {
        cr_expect_eq(ag_model_layer_experts(m, l), sparse[l], "qwen2_moe layer %d", l);
        cr_expect_eq(ag_model_layer_window(m, l), win[l], "qwen2_moe layer %d", l);
    }
    ag_model_free(m);
    m = load_arch("olmoe");
    g = ag_model_get_config(m);
    cr_expect(g->n_expert == 4 && g->top_k == 2 && g->d_ff_expert == 16 && g->norm_topk == 1);
    cr_expect(g->qk_norm == AG_QK_NORM_FULL && !g->no_pre_norms && !g->sandwich_norms);
    cr_expect_eq(g->norm_eps, 1e-5);
    cr_expect_eq(ag_model_layer_window(m, 0), 0);
    ag_model_free(m);
    m = load_arch("qwen3"); /* no experts */
    cr_expect(ag_model_get_config(m)->n_expert == 0 && !ag_model_layer_experts(m, 0));
    ag_model_free(m);
}

/* Family E's map of a head of a QK-norm model: ag_head_attention_ex on the
 * callback's X, the layer's weights, ag_model_qk_norm's scales and the
 * model's cfg.rope_extra (qwen3-yarn: both members of ag_head_extra) is the
 * pass's attention (1e-12, f64), every layer and head; without the norm it
 * is not (the norm moves it by far more). */
typedef struct {
    const ag_model *m;
    const char *name;
    double err, err_plain;
} qk_map_ctx;

static int qk_map_layer(const ag_layer_view *v, void *user)
{
    qk_map_ctx *c = user;
    const ag_model_config *g = ag_model_get_config(c->m);
    ag_attn_weights w = {0};
    ag_array gq = {0}, gk = {0};
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(c->m, v->layer, &w, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_model_qk_norm(c->m, v->layer, &gq, &gk, &err), AG_OK, "%s", err.message);
    cr_assert_not_null(gq.data);
    double *A = malloc(v->n * v->n * sizeof *A);
    for (int h = 0; h < v->n_head; h++) {
        ag_head_input in;
        ag_head_qk_norm qk;
        ag_attn_weights_head_input(&w, v->x, v->n, v->d, h, &in);
        ag_attn_weights_head_qk_norm(&w, g->qk_norm, g->norm_eps, &gq, &gk, h, &qk);
        const double *P = v->attn + (size_t)h * v->n * v->n;
        ag_rope_extra x = g->rope_extra; /* qwen3-yarn's frequencies, factor */
        ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
        ex.qk = &qk;
        ex.rope = &x;
        cr_assert_eq(ag_head_attention_ex(&in, &ex, A, &err), AG_OK, "%s", err.message);
        for (size_t i = 0; i < v->n * v->n; i++)
            c->err = fmax(c->err, fabs(A[i] - P[i]));
        ex.qk = NULL; /* the same head without its norm */
        cr_assert_eq(ag_head_attention_ex(&in, &ex, A, &err), AG_OK, "%s", err.message);
        for (size_t i = 0; i < v->n * v->n; i++)
            c->err_plain = fmax(c->err_plain, fabs(A[i] - P[i]));
    }
    free(A);
    ag_array_free(&gq);
    ag_array_free(&gk);
    ag_attn_weights_free(&w);
    return 0;
}

Test(archs, qk_norm_head_map_is_the_pass)
{
    const char *names[] = {"qwen3", "olmo2", "gemma3", "olmoe", "qwen3-yarn"};
    for (int i = 0; i < 5; i++) {
        ag_model *m = load_arch(names[i]);
        size_t n;
        int32_t *ids = arch_ids(names[i], &n);
        qk_map_ctx c = {.m = m, .name = names[i]};
        ag_error err = {0};
        cr_assert_eq(ag_model_forward(m, ids, n, AG_PRECISION_F64, qk_map_layer, &c, NULL, &err), AG_OK,
                     "%s: %s", names[i], err.message);
        cr_log_info("%s: head map with QK-norm %.3g, without %.3g", names[i], c.err, c.err_plain);
        cr_expect_lt(c.err, 1e-12, "%s: %g", names[i], c.err);
        cr_expect_gt(c.err_plain, 1e-2, "%s: without its norm the head is still the pass (%g)", names[i],
                     c.err_plain);
        free(ids);
        ag_model_free(m);
    }
}

/* A model without QK-norm: empty scales, and the head's QK-norm is none. */
Test(archs, qk_norm_absent)
{
    ag_model *m = load_arch("qwen2-window");
    ag_array gq = {0}, gk = {0};
    ag_attn_weights w = {0};
    ag_error err = {0};
    cr_assert_eq(ag_model_qk_norm(m, 0, &gq, &gk, &err), AG_OK, "%s", err.message);
    cr_expect_null(gq.data);
    cr_expect_null(gk.data);
    cr_assert_eq(ag_model_attn_weights(m, 0, &w, &err), AG_OK);
    ag_head_qk_norm qk;
    ag_attn_weights_head_qk_norm(&w, AG_QK_NORM_HEAD, 1e-6, &gq, &gk, 1, &qk);
    cr_expect_eq(qk.kind, AG_QK_NORM_NONE);
    cr_expect_eq(ag_model_qk_norm(m, 3, &gq, &gk, &err), AG_ERANGE);
    ag_attn_weights_free(&w);
    ag_model_free(m);
}

/* Family E and the linear normaliser run on them (their values are checked
 * against a complex-step Jacobian in tests/ref/check_stability.py and
 * against hf_forward's q, k in tests/ref/check_scores.py). */
static int analyze_status(ag_model *m, const char *metrics, ag_normalizer nz, ag_error *err)
{
    static const int32_t ids[] = {3, 11, 29, 7, 52, 11, 29, 60, 4};
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ANALYZE, metrics, &sel, err), AG_OK, "%s", err->message);
    ag_run_options *o = ag_run_options_new();
    ag_run_options_set_metrics(o, sel);
    cr_assert_eq(ag_run_options_set_normalizer(o, nz, 1, err), AG_OK, "%s", err->message);
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = 9, .text = -1};
    ag_record_list *list = NULL;
    int rc = ag_run_analyze(m, &in, o, NULL, &list, err);
    ag_record_list_free(list);
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    return rc;
}

Test(archs, qk_norm_family_e_and_linear_run)
{
    const char *names[] = {"qwen3", "olmo2", "gemma3", "olmoe", "qwen3-yarn"};
    for (int i = 0; i < 5; i++) {
        ag_model *m = load_arch(names[i]);
        ag_error err = {0};
        cr_expect_eq(analyze_status(m, "all", AG_NORMALIZER_SOFTMAX, &err), AG_OK, "%s: %s", names[i],
                     err.message);
        cr_expect_eq(analyze_status(m, "entropy_mean", AG_NORMALIZER_LINEAR, &err), AG_OK, "%s: %s",
                     names[i], err.message);
        ag_model_free(m);
    }
}
Test(archs, bloom) { check_arch("bloom"); }
Test(archs, mpt) { check_arch("mpt"); }
Test(archs, falcon) { check_arch("falcon"); }
Test(archs, falcon_alibi) { check_arch("falcon-alibi"); }
Test(archs, falcon_7b_like) { check_arch("falcon-7b-like"); }
Test(archs, falcon_one_ln) { check_arch("falcon-one-ln"); }
Test(archs, falcon_mq_seq) { check_arch("falcon-mq-seq"); }

/* What the ModernBERT row reads (make_arch_models.py modernbert): layer 0
 * global with global_rope_theta, layers 1 and 2 local (every 3rd global)
 * with local_rope_theta and the band local_attention // 2 + 1 (6 -> 4; the
 * v5 folder's 5 -> 3, its thetas from rope_parameters per layer type), not
 * causal, LayerNorm, no pre-attention norm in layer 0, no final norm (it is
 * not in HF's hidden states), biases as norm_bias / attention_bias. */
Test(archs, modernbert_configs)
{
    const char *names[2] = {"modernbert", "modernbert-v5-bias"};
    const int band[2] = {4, 3};
    for (int f = 0; f < 2; f++) {
        ag_model *m = load_arch(names[f]);
        const ag_model_config *g = ag_model_get_config(m);
        cr_expect_eq(g->arch, AG_ARCH_MODERNBERT);
        cr_expect_eq(g->causal, 0);
        cr_expect_eq(g->norm, AG_NORM_LAYER);
        cr_expect_eq(g->residual, AG_RESIDUAL_PRE);
        cr_expect_eq(g->first_no_pre_norm, 1);
        cr_expect_eq(g->final_norm, 0);
        cr_expect_eq(g->embed_norm, 1);
        cr_expect_eq(g->mlp, AG_MLP_GATED_FUSED);
        cr_expect_eq(g->qkv, AG_QKV_BLOCKS);
        cr_expect_eq(g->qkv_bias, f == 1);
        cr_expect_eq(g->o_bias, f == 1);
        cr_expect_eq(g->mlp_bias, f == 1);
        cr_expect_eq(g->attn_scale, 1 / sqrt(8.0));
        cr_expect_eq(g->rope.theta, 160000.0);
        cr_expect_eq(g->rope.rotary_dim, 8);
        cr_expect_eq(g->rope_local.theta, 1e4);
        cr_expect_eq(g->sliding_window, band[f]);
        for (int l = 0; l < 3; l++) {
            ag_attn_weights w = {0};
            ag_error err = {0};
            cr_expect_eq(ag_model_layer_window(m, l), l ? band[f] : 0, "%s layer %d", names[f], l);
            cr_assert_eq(ag_model_attn_weights(m, l, &w, &err), AG_OK, "%s", err.message);
            cr_expect_eq(w.causal, 0);
            cr_expect_eq(w.window, l ? band[f] : 0);
            cr_expect_eq(w.rope.theta, l ? 1e4 : 160000.0, "%s layer %d: the layer's RoPE", names[f], l);
            ag_attn_weights_free(&w);
        }
        ag_model_free(m);
    }
}
