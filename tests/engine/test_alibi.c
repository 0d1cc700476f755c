/* test_alibi.c — ALiBi (Press et al. 2022, "Train Short, Test Long", Sec. 3)
 * in the engine: the slopes of each kind against closed forms derived here,
 * and the closed form of a BLOOM layer whose queries and keys are zero (zero
 * query/key weights and biases): every score is then its bias alone, so row i
 * of head h is softmax_j(slope_h·j) over the keys j <= i.
 *
 * The slopes, derived from the HF code (cited in attngeom/model.h):
 *   BLOOM, 8 heads: the closest power of two is 8, base 2^(−2^−(3−3)) = 2^−1,
 *     slopes 2^−1, 2^−2, ..., 2^−8.
 *   BLOOM, 12 heads: those 8, then extra_base 2^(−2^−(4−3)) = 2^−1/2 (a
 *     float32 tensor) to the odd powers 1, 3, 5, 7: ≈ 2^−0.5, ..., 2^−3.5.
 *   MPT (alibi_bias_max 8), 8 heads: m = k·8/8 = k, slopes 2^−k, k = 1..8.
 *   MPT, 12 heads: P = 16, m = k/2, slopes 2^−k/2; the odd-indexed ones
 *     (k = 2, 4, ..., 16: 2^−1..2^−8) then the even-indexed (k = 1, 3, 5, 7:
 *     ≈ 2^−0.5..2^−3.5, as 1/fl32(2^(k/2))), cut to 12: BLOOM's list up to
 *     float32 rounding, formed differently.
 *   Falcon: BLOOM's rounded to bfloat16: 2^−k are exact; 2^−0.5 =
 *     0.70710678 has 8 significant bits 0.70703125 (181/256).
 * Each is then the float32 value (HF's float32 tensors). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attngeom/core.h"
#include "attngeom/model.h"
#include "attngeom/stability.h"
#include "../util/test_io_util.h"

/* BLOOM's head h of H (8 or 12): 2^−(h+1) for the first 8 (exact in
 * float32); past them the float32 base b = fl32(2^−1/2) to the odd power
 * 2(h − 8) + 1, rounded to float32 (torch.pow of a float32 tensor). */
static double bloom_expected(int h)
{
    if (h < 8)
        return ldexp(1.0, -(h + 1));
    return (float)pow((double)(float)M_SQRT1_2, 2 * (h - 8) + 1);
}

/* MPT's head h of 8 (P = 8, m = k): 2^−(h+1); of 12 (P = 16, m = k/2 exact
 * in float32): the odd-indexed k = 2, 4, ..., 16 give 2^−1..2^−8 exactly,
 * then the even-indexed k = 1, 3, 5, 7 give 1/fl32(2^(k/2)) in float32. */
static double mpt_expected(int h)
{
    if (h < 8)
        return ldexp(1.0, -(h + 1));
    return 1.0f / (float)pow(2.0, (2 * (h - 8) + 1) / 2.0);
}

static void check_slopes(ag_alibi_kind kind, int H)
{
    double s[16];
    cr_assert_eq(ag_alibi_slopes(kind, H, 8, s), AG_OK);
    for (int h = 0; h < H; h++) {
        double want = kind == AG_ALIBI_MPT ? mpt_expected(h) : bloom_expected(h);
        if (kind == AG_ALIBI_FALCON && h >= 8) /* 2^−1/2 to 8 bits is 181/256; ·2^−k */
            want = ldexp(181.0 / 256, -(h - 8));
        cr_expect_eq(s[h], want, "kind %d, %d heads, head %d: slope %.17g, expected %.17g", (int)kind, H, h,
                     s[h], want);
    }
}

Test(alibi, slopes_closed_forms)
{
    check_slopes(AG_ALIBI_BLOOM, 8);
    check_slopes(AG_ALIBI_BLOOM, 12);
    check_slopes(AG_ALIBI_MPT, 8);
    check_slopes(AG_ALIBI_MPT, 12);
    check_slopes(AG_ALIBI_FALCON, 12);
    double s[8];
    cr_expect_eq(ag_alibi_slopes(AG_ALIBI_NONE, 8, 8, s), AG_EINVAL);
    cr_expect_eq(ag_alibi_slopes(AG_ALIBI_BLOOM, 0, 8, s), AG_EINVAL);
    cr_expect_eq(ag_alibi_slopes(AG_ALIBI_MPT, 8, 0, s), AG_EINVAL);
}

/* MPT's alibi_bias_max scales every exponent: 4 heads, bias_max 2: m = k/2. */
Test(alibi, mpt_bias_max)
{
    double s[4];
    cr_assert_eq(ag_alibi_slopes(AG_ALIBI_MPT, 4, 2, s), AG_OK);
    for (int k = 1; k <= 4; k++)
        cr_expect_eq(s[k - 1], (double)(float)pow(2.0, -k / 2.0), "head %d: %.17g", k - 1, s[k - 1]);
}

/* ---- a BLOOM folder with Q = K = 0 ----------------------------------------- */

typedef struct {
    char *json;
    size_t jlen, jcap;
    float *data;
    size_t count, cap;
} st_builder;

static void st_add(st_builder *b, const char *name, size_t rows, size_t cols, float (*fill)(size_t, size_t))
{
    size_t cnt = rows * (cols ? cols : 1);
    if (b->count + cnt > b->cap) {
        b->cap = (b->count + cnt) * 2;
        b->data = realloc(b->data, b->cap * sizeof *b->data);
        cr_assert_not_null(b->data);
    }
    for (size_t i = 0; i < cnt; i++)
        b->data[b->count + i] = fill(i / (cols ? cols : 1), i % (cols ? cols : 1));
    char shape[64], entry[512];
    if (cols)
        snprintf(shape, sizeof shape, "[%zu, %zu]", rows, cols);
    else
        snprintf(shape, sizeof shape, "[%zu]", rows);
    int k = snprintf(entry, sizeof entry, "%s\"%s\": {\"dtype\": \"F32\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                     b->jlen ? ", " : "{", name, shape, b->count * 4, (b->count + cnt) * 4);
    if (b->jlen + (size_t)k + 2 > b->jcap) {
        b->jcap = (b->jlen + (size_t)k + 2) * 2;
        b->json = realloc(b->json, b->jcap);
        cr_assert_not_null(b->json);
    }
    memcpy(b->json + b->jlen, entry, (size_t)k + 1);
    b->jlen += (size_t)k;
    b->count += cnt;
}

static int g_d; /* the width, for the fills of query_key_value */

static float f_wave(size_t i, size_t j) { return (float)(0.3 * sin(1.7 * (double)i + 0.9 * (double)j + 0.4)); }
static float f_one(size_t i, size_t j) { (void)j; return 1.0f + 0.01f * (float)(i % 7); }
static float f_zero(size_t i, size_t j) { (void)i, (void)j; return 0.0f; }
/* Rows of query_key_value viewed (H, 3, head_dim): q and k rows zero. */
static int g_hd;
static float f_qkv(size_t i, size_t j) { return (i / (size_t)g_hd) % 3 == 2 ? f_wave(i, j) : 0.0f; }
static float f_qkv_b(size_t i, size_t j) { return (i / (size_t)g_hd) % 3 == 2 ? 0.1f : 0.0f; }

/* A one-layer BLOOM of H heads of 2 dims, Q = K = 0, in dir. */
static void write_zero_qk_bloom(const char *dir, int H)
{
    int d = 2 * H;
    g_d = d;
    g_hd = 2;
    char p[600];
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"model_type\": \"bloom\", \"hidden_size\": %d, \"n_head\": %d, \"n_layer\": 1, "
               "\"vocab_size\": 5, \"layer_norm_epsilon\": 1e-5}\n", d, H);
    fclose(f);
    st_builder b = {0};
    st_add(&b, "word_embeddings.weight", 5, (size_t)d, f_wave);
    st_add(&b, "word_embeddings_layernorm.weight", (size_t)d, 0, f_one);
    st_add(&b, "word_embeddings_layernorm.bias", (size_t)d, 0, f_zero);
    st_add(&b, "h.0.input_layernorm.weight", (size_t)d, 0, f_one);
    st_add(&b, "h.0.input_layernorm.bias", (size_t)d, 0, f_zero);
    st_add(&b, "h.0.self_attention.query_key_value.weight", 3 * (size_t)d, (size_t)d, f_qkv);
    st_add(&b, "h.0.self_attention.query_key_value.bias", 3 * (size_t)d, 0, f_qkv_b);
    st_add(&b, "h.0.self_attention.dense.weight", (size_t)d, (size_t)d, f_wave);
    st_add(&b, "h.0.self_attention.dense.bias", (size_t)d, 0, f_zero);
    st_add(&b, "h.0.post_attention_layernorm.weight", (size_t)d, 0, f_one);
    st_add(&b, "h.0.post_attention_layernorm.bias", (size_t)d, 0, f_zero);
    st_add(&b, "h.0.mlp.dense_h_to_4h.weight", 4 * (size_t)d, (size_t)d, f_wave);
    st_add(&b, "h.0.mlp.dense_h_to_4h.bias", 4 * (size_t)d, 0, f_zero);
    st_add(&b, "h.0.mlp.dense_4h_to_h.weight", (size_t)d, 4 * (size_t)d, f_wave);
    st_add(&b, "h.0.mlp.dense_4h_to_h.bias", (size_t)d, 0, f_zero);
    st_add(&b, "ln_f.weight", (size_t)d, 0, f_one);
    st_add(&b, "ln_f.bias", (size_t)d, 0, f_zero);
    b.json[b.jlen++] = '}';
    b.json[b.jlen] = 0;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(tio_write_safetensors(p, b.json, b.data, b.count * 4), 0);
    free(b.json);
    free(b.data);
}

typedef struct {
    int H;
    const double *slopes;
    double max_err, max_score_err;
    int layers;
} zero_qk;

/* Row i of head h: softmax_j(slope·j), j <= i, computed here in double;
 * the scores are slope·j on the visible keys. */
static int zero_qk_layer(const ag_layer_view *v, void *user)
{
    zero_qk *z = user;
    size_t n = v->n;
    for (int h = 0; h < v->n_head; h++)
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (size_t j = 0; j <= i; j++)
                sum += exp(z->slopes[h] * (double)j - z->slopes[h] * (double)i);
            for (size_t j = 0; j < n; j++) {
                double want = j <= i ? exp(z->slopes[h] * (double)j - z->slopes[h] * (double)i) / sum : 0;
                double got = v->attn[((size_t)h * n + i) * n + j];
                z->max_err = fmax(z->max_err, fabs(got - want));
                if (j > i)
                    cr_assert_eq(got, 0.0);
                if (v->scores && j <= i)
                    z->max_score_err = fmax(z->max_score_err,
                                            fabs(v->scores[((size_t)h * n + i) * n + j] - z->slopes[h] * (double)j));
            }
        }
    z->layers++;
    return 0;
}

static void check_zero_qk(int H, ag_precision prec, double tol)
{
    char dir[] = "/tmp/ag_alibi_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    write_zero_qk_bloom(dir, H);
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->positions, AG_POS_ALIBI);
    cr_assert_eq(g->alibi, AG_ALIBI_BLOOM);
    double slopes[12];
    for (int h = 0; h < H; h++)
        slopes[h] = bloom_expected(h);
    zero_qk z = {.H = H, .slopes = slopes};
    int32_t ids[9] = {0, 1, 2, 3, 4, 3, 2, 1, 0};
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = prec;
    o.want_scores = 1;
    cr_assert_eq(ag_model_forward_ex(m, ids, 9, &o, zero_qk_layer, &z, NULL, &err), AG_OK, "%s", err.message);
    cr_assert_eq(z.layers, 1);
    cr_expect_leq(z.max_err, tol, "%d heads: attention differs from softmax(slope·j) by %g", H, z.max_err);
    cr_expect_leq(z.max_score_err, prec == AG_PRECISION_F64 ? 0 : 1e-6,
                  "%d heads: scores differ from slope·j by %g", H, z.max_score_err);
    ag_model_free(m);
    char p[600];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

Test(alibi, zero_qk_rows_are_softmax_of_bias)
{
    check_zero_qk(8, AG_PRECISION_F64, 1e-15);
    check_zero_qk(12, AG_PRECISION_F64, 1e-15);
    check_zero_qk(8, AG_PRECISION_F32, 1e-6);
    check_zero_qk(12, AG_PRECISION_F32, 1e-6);
}

/* ---- settings refused by name ---------------------------------------------- */

/* Load tests/data/models/arch/<name> with config.json edited: `key` =
 * `value` (a JSON text; inside attn_config when nested; NULL: removed), and
 * `rename` (if not NULL) moved to the key `to`. The status, and *out the
 * model (or NULL) and *err. */
static int load_edited(const char *name, const char *key, const char *value, int nested,
                       const char *rename, const char *to, ag_model **out, ag_error *err)
{
    char src[600], dir[] = "/tmp/ag_alibi_cfg_XXXXXX", p[700], st[PATH_MAX];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(src, sizeof src, "tests/data/models/arch/%s/config.json", name);
    json_error_t je;
    json_t *cfg = json_load_file(src, 0, &je);
    cr_assert_not_null(cfg, "%s", je.text);
    json_t *obj = nested ? json_object_get(cfg, "attn_config") : cfg;
    if (key) {
        json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
        cr_assert_not_null(v, "%s", je.text);
        json_object_set_new(obj, key, v);
    }
    if (rename) {
        json_object_set(cfg, to, json_object_get(cfg, rename));
        json_object_del(cfg, rename);
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    cr_assert_eq(json_dump_file(cfg, p, 0), 0);
    json_decref(cfg);
    snprintf(src, sizeof src, "tests/data/models/arch/%s/model.safetensors", name);
    cr_assert_not_null(realpath(src, st));
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(symlink(st, p), 0);
    int rc = ag_model_load(dir, out, err);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
    return rc;
}

/* The edited folder fails with AG_EUNSUPPORTED, one line naming `needle`. */
static void expect_refused(const char *name, const char *key, const char *value, int nested,
                           const char *needle)
{
    ag_model *m = NULL;
    ag_error err = {0};
    int rc = load_edited(name, key, value, nested, NULL, NULL, &m, &err);
    cr_expect_eq(rc, AG_EUNSUPPORTED, "%s %s = %s: status %d (%s)", name, key, value, rc, err.message);
    cr_expect_null(m);
    cr_expect(strstr(err.message, needle) && !strchr(err.message, '\n'), "%s %s: message %s", name, key,
              err.message);
    ag_model_free(m);
}

/* configuration_bloom.py: n_embed (old configs) is hidden_size, and the
 * attribute_map names num_attention_heads, num_hidden_layers. */
Test(alibi, bloom_config_aliases)
{
    const char *pairs[][2] = {{"hidden_size", "n_embed"}, {"n_head", "num_attention_heads"},
                              {"n_layer", "num_hidden_layers"}};
    for (size_t i = 0; i < 3; i++) {
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(load_edited("bloom", NULL, NULL, 0, pairs[i][0], pairs[i][1], &m, &err), AG_OK,
                     "%s as %s: %s", pairs[i][0], pairs[i][1], err.message);
        const ag_model_config *g = ag_model_get_config(m);
        cr_expect(g->d_model == 48 && g->n_head == 6 && g->n_layer == 2, "%s as %s: %d %d %d", pairs[i][0],
                  pairs[i][1], g->d_model, g->n_head, g->n_layer);
        ag_model_free(m);
    }
}

Test(alibi, refused_settings)
{
    expect_refused("bloom", "apply_residual_connection_post_layernorm", "true", 0,
                   "apply_residual_connection_post_layernorm");
    expect_refused("mpt", "no_bias", "false", 0, "no_bias");
    expect_refused("mpt", "expansion_ratio", "8", 0, "expansion_ratio");
    expect_refused("mpt", "clip_qkv", "6.0", 1, "attn_config.clip_qkv");
    expect_refused("mpt", "qk_ln", "true", 1, "attn_config.qk_ln");
    expect_refused("mpt", "alibi", "false", 1, "attn_config.alibi'");
    expect_refused("mpt", "attn_type", "\"multiquery_attention\"", 1, "attn_config.attn_type");
    expect_refused("mpt", "alibi_bias_max", "4", 1, "attn_config.alibi_bias_max");
    expect_refused("falcon", "parallel_attn", "false", 0, "new_decoder_architecture");
}

/* ALiBi through ag_head_extra (stability.h): a head with W_Q = 0 has every
 * score 0, so its row i is softmax_j(m·(j − off)) over the keys j <= i —
 * off 0 (BLOOM) or n − 1 (MPT) cancels in the softmax, and Falcon's
 * (0 + m·j)·c scales the slope by c = 1/√d_h. A caller whose size ends
 * before the ALiBi members gets the unbiased head (uniform rows), and the
 * linear normaliser refuses an ALiBi head. */
static void expect_bias_rows(const double *A, size_t n, double m)
{
    for (size_t i = 0; i < n; i++) {
        double z = 0;
        for (size_t j = 0; j <= i; j++)
            z += exp(m * (double)j);
        for (size_t j = 0; j < n; j++)
            cr_expect_float_eq(A[i * n + j], j <= i ? exp(m * (double)j) / z : 0.0, 1e-14,
                               "m %g (%zu, %zu)", m, i, j);
    }
}

Test(alibi, head_extra_bias_rows)
{
    enum { N = 4, D = 2 };
    double x[N * D] = {1, 0, 0.5, -1, -2, 0.25, 3, 1}, zero[D * D] = {0}, wk[D * D] = {1, 2, -1, 0};
    ag_head_input in = {.x = x, .n = N, .d = D, .wq = zero, .wk = wk, .d_h = D, .causal = 1};
    double A[N * N];
    ag_error err = {0};
    const ag_alibi_kind kinds[] = {AG_ALIBI_BLOOM, AG_ALIBI_MPT, AG_ALIBI_FALCON};
    for (int k = 0; k < 3; k++) {
        ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
        ex.alibi = kinds[k];
        ex.alibi_slope = 0.5;
        cr_assert_eq(ag_head_attention_ex(&in, &ex, A, &err), AG_OK, "%s", err.message);
        expect_bias_rows(A, N, kinds[k] == AG_ALIBI_FALCON ? 0.5 / sqrt((double)D) : 0.5);
        cr_expect_eq(ag_head_linear_attention_ex(&in, &ex, A, &err), AG_EUNSUPPORTED);
    }
    ag_head_extra old = AG_HEAD_EXTRA_DEFAULT;
    old.alibi = AG_ALIBI_BLOOM;
    old.alibi_slope = 0.5;
    old.size = offsetof(ag_head_extra, alibi); /* an older caller's header */
    cr_assert_eq(ag_head_attention_ex(&in, &old, A, &err), AG_OK, "%s", err.message);
    expect_bias_rows(A, N, 0);
    ag_head_extra bad = AG_HEAD_EXTRA_DEFAULT;
    bad.alibi = AG_ALIBI_BLOOM;
    bad.alibi_slope = NAN;
    cr_expect_eq(ag_head_attention_ex(&in, &bad, A, &err), AG_EINVAL);
}

/* ag_model_alibi_slopes: the model's own slopes are ag_alibi_slopes of its
 * config, value for value (what the pass adds and the runs by head reuse);
 * NULL for a model without ALiBi and for no model. */
Test(alibi, model_slopes_are_the_configs)
{
    const char *names[] = {"bloom", "mpt", "falcon-alibi", "falcon"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/data/models/arch/%s", names[i]);
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", names[i], err.message);
        const ag_model_config *g = ag_model_get_config(m);
        const double *s = ag_model_alibi_slopes(m);
        if (g->alibi == AG_ALIBI_NONE) {
            cr_expect_null(s, "%s has no ALiBi", names[i]);
        } else {
            double want[64];
            cr_assert(g->n_head <= 64);
            cr_assert_eq(ag_alibi_slopes(g->alibi, g->n_head, g->alibi_bias_max, want), AG_OK);
            cr_assert_not_null(s, "%s", names[i]);
            for (int h = 0; h < g->n_head; h++)
                cr_expect_eq(s[h], want[h], "%s head %d: %.17g, expected %.17g", names[i], h, s[h],
                             want[h]);
        }
        ag_model_free(m);
    }
    cr_expect_null(ag_model_alibi_slopes(NULL));
}
