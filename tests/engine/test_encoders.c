/* test_encoders.c — ViT and the Whisper encoder (issue 15): the committed
 * folders tests/data/models/tiny-vit, tiny-vit-cls and tiny-whisper
 * (tests/ref/make_encoders.py), and variants of them written here with
 * tensors zeroed, dropped or config fields changed. Closed forms: attention
 * rows sum to 1; zero Q/K (ViT) or zero Q (Whisper, whose K has no bias)
 * gives exactly 1/n; zero convolutions give Whisper's hidden[0] = its stored
 * sinusoidal embed_positions rows (modeling_whisper.py sinusoids) and zero
 * pixels give ViT's hidden[0] = [cls; conv bias] + position_embeddings;
 * ag_model_attn_weights through ag_attention_layer reproduces the pass;
 * pools of 1 and 3 threads give the same bytes. Refusals: wrong input shapes
 * (messages naming both shapes), token ids on an image model and values on
 * a token model, missing tensors (named with their prefix), bad config
 * fields. Numerics against Hugging Face are tests/ref/check_encoders.py's. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attngeom/access.h"
#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/model.h"
#include "attngeom/parallel.h"
#include "../util/test_io_util.h"
#include "../util/test_model_util.h"

#define MODELS "tests/data/models/"

TestSuite(encoders, .fini = tio_cleanup);

static ag_model *load(const char *dir)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
    return m;
}

/* ---- variants of a committed folder -------------------------------------- */

/* Called per tensor: return 0 to leave it out; may change a's values. */
typedef int (*edit_fn)(const char *name, ag_array *a);

/* <tmp>/<out>: the committed folder `name` with edit applied to every
 * tensor (NULL: none) and the JSON object `extra` merged into config.json. */
static const char *variant(const char *name, const char *out, edit_fn edit, const char *extra)
{
    static char dir[4200];
    char p[4400];
    ag_error err = {0};
    ag_safetensors *st = NULL;
    snprintf(p, sizeof p, MODELS "%s/model.safetensors", name);
    cr_assert_eq(ag_st_open(p, &st, &err), AG_OK, "%s", err.message);
    json_t *hdr = json_object();
    unsigned char *data = NULL;
    size_t off = 0;
    for (size_t i = 0; i < ag_st_count(st); i++) {
        const ag_tensor_info *t = ag_st_info(st, i);
        ag_array a = {0};
        cr_assert_eq(ag_st_read(st, t->name, &a, &err), AG_OK, "%s", err.message);
        if (!edit || edit(t->name, &a)) {
            size_t cnt = ag_array_size(&a);
            data = realloc(data, off + 4 * cnt);
            tio_encode_st("F32", a.data, cnt, data + off);
            json_t *shape = json_array();
            for (int k = 0; k < a.ndim; k++)
                json_array_append_new(shape, json_integer((json_int_t)a.shape[k]));
            json_object_set_new(hdr, t->name, json_pack("{s:s, s:o, s:[I,I]}", "dtype", "F32", "shape", shape,
                                                        "data_offsets", (json_int_t)off, (json_int_t)(off + 4 * cnt)));
            off += 4 * cnt;
        }
        ag_array_free(&a);
    }
    ag_st_close(st);
    snprintf(dir, sizeof dir, "%s", tio_path(out));
    mkdir(dir, 0700);
    char *js = json_dumps(hdr, JSON_COMPACT);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(tio_write_safetensors(p, js, data, off), 0);
    free(js);
    free(data);
    json_decref(hdr);
    json_error_t je;
    snprintf(p, sizeof p, MODELS "%s/config.json", name);
    json_t *cfg = json_load_file(p, 0, &je);
    cr_assert_not_null(cfg, "%s: %s", p, je.text);
    if (extra) {
        json_t *x = json_loads(extra, 0, &je);
        cr_assert_not_null(x, "extra: %s", je.text);
        json_object_update(cfg, x);
        json_decref(x);
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    cr_assert_eq(json_dump_file(cfg, p, 0), 0);
    json_decref(cfg);
    return dir;
}

static void zero(ag_array *a)
{
    memset(a->data, 0, ag_array_size(a) * sizeof *a->data);
}

/* ---- inputs -------------------------------------------------------------- */

/* Deterministic float32-exact values in [-1, 1). */
static double *values(size_t cnt, unsigned long long seed)
{
    double *v = malloc(cnt * sizeof *v);
    for (size_t i = 0; i < cnt; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (float)((double)(seed >> 11) / 4503599627370496.0 - 1.0);
    }
    return v;
}

typedef struct {
    const ag_model *m;
    int layers, prec;
    double min_p, row_err, weights_err;
    double uniform; /* > 0: every probability must be this */
    double **attn;  /* (L) copies, when non-NULL */
} fwd_check;

/* Every row a distribution; with `uniform`, every entry equal to it;
 * ag_model_attn_weights through ag_attention_layer gives these rows. */
static int check_layer(const ag_layer_view *v, void *user)
{
    fwd_check *c = user;
    cr_assert_eq(v->layer, c->layers, "layers out of order");
    c->layers++;
    for (size_t r = 0; r < (size_t)v->n_head * v->n; r++) {
        double s = 0;
        for (size_t j = 0; j < v->n; j++) {
            double p = v->attn[r * v->n + j];
            s += p;
            c->min_p = fmin(c->min_p, p);
            if (c->uniform > 0)
                cr_assert(c->prec == AG_PRECISION_F64 ? p == c->uniform : fabs(p - c->uniform) <= 6e-8 * c->uniform,
                          "layer %d row %zu key %zu: %.17g, want %.17g", v->layer, r, j, p, c->uniform);
        }
        c->row_err = fmax(c->row_err, fabs(s - 1));
    }
    if (c->attn) {
        size_t cnt = (size_t)v->n_head * v->n * v->n;
        c->attn[v->layer] = malloc(cnt * sizeof(double));
        memcpy(c->attn[v->layer], v->attn, cnt * sizeof(double));
    }
    ag_attn_weights w;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(c->m, v->layer, &w, &err), AG_OK, "%s", err.message);
    ag_attn_layer_spec s = {.size = sizeof s, .x = v->x, .n = v->n, .d = v->d, .wq = w.wq.data,
                            .wk = w.wk.data, .bq = w.bq.data, .bk = w.bk.data, .d_a = w.wq.shape[1],
                            .n_head = w.n_head, .scale = w.scale, .causal = w.causal,
                            .precision = AG_PRECISION_F64};
    ag_array a = {0};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
    for (size_t i = 0; i < ag_array_size(&a); i++)
        c->weights_err = fmax(c->weights_err, fabs(a.data[i] - v->attn[i]));
    ag_array_free(&a);
    ag_attn_weights_free(&w);
    return 0;
}

/* One pass (must succeed); hidden (L + 1, n, d) when non-NULL. */
static void run(const ag_model *m, const double *x, int ndim, const size_t *shape, int prec, ag_pool *pool,
                fwd_check *c, double *hidden)
{
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = (ag_precision)prec;
    o.pool = pool;
    ag_error err = {0};
    c->m = m;
    c->prec = prec;
    c->min_p = 1;
    cr_assert_eq(ag_model_forward_values(m, x, ndim, shape, &o, check_layer, c, hidden, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(c->layers, ag_model_get_config(m)->n_layer);
}

/* ---- configuration ------------------------------------------------------- */

Test(encoders, config_and_input_shapes)
{
    ag_model *v = load(MODELS "tiny-vit"), *vc = load(MODELS "tiny-vit-cls"), *w = load(MODELS "tiny-whisper");
    const ag_model_config *g = ag_model_get_config(v);
    cr_assert_eq(g->arch, AG_ARCH_VIT);
    cr_assert_eq(ag_model_input_kind(v), AG_INPUT_PIXELS);
    cr_assert(g->norm_eps == 1e-12 && g->qkv_bias && !g->final_norm && !g->causal && !g->vocab_size);
    cr_assert(!ag_model_get_config(vc)->qkv_bias);
    cr_assert_str_eq(ag_model_get_config(vc)->activation, "gelu_new");
    size_t s[3] = {0}, n = 0;
    cr_assert_eq(ag_model_input_shape(v, s), 3);
    cr_assert(s[0] == 3 && s[1] == 32 && s[2] == 32);
    cr_assert_eq(g->max_positions, 17); /* 1 + (32/8)^2 */
    ag_error err = {0};
    size_t batch[4] = {1, 3, 32, 32};
    cr_assert_eq(ag_model_input_positions(v, 4, batch, &n, &err), AG_OK, "%s", err.message);
    cr_assert_eq(n, 17);

    g = ag_model_get_config(w);
    cr_assert_eq(g->arch, AG_ARCH_WHISPER);
    cr_assert_eq(ag_model_input_kind(w), AG_INPUT_FEATURES);
    cr_assert(g->norm_eps == 1e-5 && g->final_norm && g->scale_query && g->max_positions == 1500);
    cr_assert_eq(ag_model_input_shape(w, s), 2);
    cr_assert(s[0] == 80 && s[1] == 3000);
    size_t frames[][2] = {{3000, 1500}, {200, 100}, {199, 100}, {2, 1}, {1, 1}};
    for (size_t i = 0; i < 5; i++) {
        size_t sh[2] = {80, frames[i][0]};
        cr_assert_eq(ag_model_input_positions(w, 2, sh, &n, &err), AG_OK, "%s", err.message);
        cr_assert_eq(n, frames[i][1], "T = %zu: n = %zu", frames[i][0], n);
    }
    /* the layout-free getter of attngeom/access.h */
    const char *keys[] = {"input_kind", "in_channels", "max_frames", "n_layer"};
    long want[] = {AG_INPUT_FEATURES, 80, 3000, 2}, got = -1;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ag_model_dim(w, keys[i], &got, &err), AG_OK, "%s", err.message);
        cr_assert_eq(got, want[i], "%s = %ld", keys[i], got);
    }
    const char *vkeys[] = {"input_kind", "image_height", "image_width", "patch_height", "patch_width"};
    long vwant[] = {AG_INPUT_PIXELS, 32, 32, 8, 8};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(ag_model_dim(v, vkeys[i], &got, &err), AG_OK, "%s", err.message);
        cr_assert_eq(got, vwant[i], "%s = %ld", vkeys[i], got);
    }
    cr_assert_eq(ag_model_input_kind(NULL), AG_INPUT_TOKENS);
    ag_model *gpt2 = load("models/tiny-gpt2");
    cr_assert_eq(ag_model_input_shape(gpt2, s), 0);
    cr_assert_eq(ag_model_input_kind(gpt2), AG_INPUT_TOKENS);
    ag_model_free(gpt2);
    ag_model_free(v);
    ag_model_free(vc);
    ag_model_free(w);
}

/* ---- the pass ------------------------------------------------------------ */

Test(encoders, rows_are_distributions_and_weights_reproduce_them)
{
    const char *names[] = {"tiny-vit", "tiny-vit-cls", "tiny-whisper"};
    for (int k = 0; k < 3; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, MODELS "%s", names[k]);
        ag_model *m = load(dir);
        size_t s[3];
        int nd = ag_model_input_shape(m, s);
        if (nd == 2)
            s[1] = 301; /* odd: n = 151 */
        double *x = values(s[0] * s[1] * (nd == 3 ? s[2] : 1), 7 + (unsigned)k);
        for (int prec = 0; prec < 2; prec++) {
            fwd_check c = {0};
            run(m, x, nd, s, prec, NULL, &c, NULL);
            cr_assert(c.min_p >= 0);
            cr_assert(c.row_err < (prec ? 1e-14 : 1e-6), "%s: row sums off by %g", names[k], c.row_err);
            cr_assert(c.weights_err < (prec ? 1e-13 : 1e-5), "%s: weights give %g", names[k], c.weights_err);
        }
        free(x);
        ag_model_free(m);
    }
}

static int zero_vit_qk(const char *name, ag_array *a)
{
    if (strstr(name, "attention.attention.query") || strstr(name, "attention.attention.key"))
        zero(a);
    return 1;
}

/* Whisper's K has no bias: zero Q alone makes every score 0. */
static int zero_whisper_q(const char *name, ag_array *a)
{
    if (strstr(name, "encoder.layers.") && strstr(name, "q_proj"))
        zero(a);
    return 1;
}

Test(encoders, zero_queries_give_exactly_uniform_attention)
{
    const char *dirs[] = {variant("tiny-vit", "vit0", zero_vit_qk, NULL),
                          variant("tiny-vit-cls", "vitc0", zero_vit_qk, NULL),
                          variant("tiny-whisper", "wh0", zero_whisper_q, NULL)};
    for (int k = 0; k < 3; k++) {
        ag_model *m = load(dirs[k]);
        size_t s[3];
        int nd = ag_model_input_shape(m, s);
        if (nd == 2)
            s[1] = 50; /* n = 25 */
        size_t n = nd == 3 ? 17 : 25;
        double *x = values(s[0] * s[1] * (nd == 3 ? s[2] : 1), 3);
        for (int prec = 0; prec < 2; prec++) {
            fwd_check c = {.uniform = 1.0 / (double)n};
            run(m, x, nd, s, prec, NULL, &c, NULL);
        }
        free(x);
        ag_model_free(m);
    }
}

static int zero_convs(const char *name, ag_array *a)
{
    if (strstr(name, "encoder.conv"))
        zero(a);
    return 1;
}

/* gelu(0) = 0, so hidden[0] is embed_positions[0..n): the stored rows
 * exactly, and modeling_whisper.py sinusoids(1500, 32) to float32. */
Test(encoders, whisper_zero_convolutions_leave_the_sinusoids)
{
    ag_model *m = load(variant("tiny-whisper", "whz", zero_convs, NULL));
    ag_error err = {0};
    ag_safetensors *st = NULL;
    ag_array pos = {0};
    cr_assert_eq(ag_st_open(MODELS "tiny-whisper/model.safetensors", &st, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_st_read(st, "model.encoder.embed_positions.weight", &pos, &err), AG_OK, "%s", err.message);
    ag_st_close(st);
    size_t T = 2999, n = 1500, d = 32, s[2] = {80, T};
    double *x = values(80 * T, 5), *hidden = malloc(3 * n * d * sizeof *hidden);
    double inc = log(10000.0) / (d / 2 - 1);
    for (int prec = 0; prec < 2; prec++) {
        fwd_check c = {0};
        run(m, x, 2, s, prec, NULL, &c, hidden);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < d; j++) {
                double t = (double)i * exp(-inc * (double)(j % (d / 2)));
                double want = j < d / 2 ? sin(t) : cos(t);
                cr_assert_eq(hidden[i * d + j], pos.data[i * d + j], "row %zu col %zu", i, j);
                cr_assert(fabs(hidden[i * d + j] - want) < 1e-6, "row %zu col %zu: %g, sinusoid %g", i, j,
                          hidden[i * d + j], want);
            }
    }
    free(x);
    free(hidden);
    ag_array_free(&pos);
    ag_model_free(m);
}

/* Zero pixels: every patch is the convolution's bias; hidden[0] row 0 is
 * cls_token + position 0, row r the bias + position r (in double, exactly). */
Test(encoders, vit_zero_pixels_give_cls_bias_and_positions)
{
    const char *names[] = {"tiny-vit", "tiny-vit-cls"}, *pre[] = {"", "vit."};
    for (int k = 0; k < 2; k++) {
        char dir[256], nm[3][128];
        snprintf(dir, sizeof dir, MODELS "%s/model.safetensors", names[k]);
        const char *stems[3] = {"embeddings.cls_token", "embeddings.position_embeddings",
                                "embeddings.patch_embeddings.projection.bias"};
        ag_array t[3] = {{0}};
        ag_safetensors *st = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_st_open(dir, &st, &err), AG_OK, "%s", err.message);
        for (int i = 0; i < 3; i++) {
            snprintf(nm[i], sizeof nm[i], "%s%s", pre[k], stems[i]);
            cr_assert_eq(ag_st_read(st, nm[i], &t[i], &err), AG_OK, "%s", err.message);
        }
        ag_st_close(st);
        snprintf(dir, sizeof dir, MODELS "%s", names[k]);
        ag_model *m = load(dir);
        size_t s[3] = {3, 32, 32}, n = 17, d = 32;
        double *x = calloc(3 * 32 * 32, sizeof *x), *hidden = malloc(3 * n * d * sizeof *hidden);
        fwd_check c = {0};
        run(m, x, 3, s, AG_PRECISION_F64, NULL, &c, hidden);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < d; j++) {
                double want = (i ? t[2].data[j] : t[0].data[j]) + t[1].data[i * d + j];
                cr_assert_eq(hidden[i * d + j], want, "%s row %zu col %zu", names[k], i, j);
            }
        for (int i = 0; i < 3; i++)
            ag_array_free(&t[i]);
        free(x);
        free(hidden);
        ag_model_free(m);
    }
}

/* Keys' cubic convolution, A = -3/4, at t = 1/4 and 3/4 (dyadic, so exact):
 * cc1(x) = ((A+2)x - (A+3))x² + 1, cc2(x) = ((Ax - 5A)x + 8A)x - 4A; the
 * weights of neighbours i0-1 .. i0+2 for t = 3/4 are cc2(7/4), cc1(3/4),
 * cc1(1/4), cc2(5/4), reversed for t = 1/4. */
static const double W75[4] = {-0.03515625, 0.26171875, 0.87890625, -0.10546875};
static const double W25[4] = {-0.10546875, 0.87890625, 0.26171875, -0.03515625};

/* Output o of a 2x bicubic upsampling of g0 rows (torch, align_corners
 * False): source o/2 - 1/4, so even o = 2k: i0 = k - 1, t = 3/4; odd
 * o = 2k + 1: i0 = k, t = 1/4; neighbours clamped to 0..g0-1. */
static void up2(int o, int g0, int idx[4], const double **w)
{
    int i0 = o % 2 ? o / 2 : o / 2 - 1;
    *w = o % 2 ? W25 : W75;
    for (int j = 0; j < 4; j++) {
        int k = i0 - 1 + j;
        idx[j] = k < 0 ? 0 : k > g0 - 1 ? g0 - 1 : k;
    }
}

/* 64 x 64 zero pixels on the 32 x 32 model (a 4 x 4 grid): row 0 cls +
 * position row 0, patch (y, x) the conv bias + the position grid upsampled
 * 2x with the closed-form weights above (ViTModel(interpolate_pos_encoding
 * =True)). */
Test(encoders, vit_other_size_interpolates_positions_bicubically)
{
    char path[256] = MODELS "tiny-vit/model.safetensors";
    const char *stems[3] = {"embeddings.cls_token", "embeddings.position_embeddings",
                            "embeddings.patch_embeddings.projection.bias"};
    ag_array t[3] = {{0}};
    ag_safetensors *st = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_st_open(path, &st, &err), AG_OK, "%s", err.message);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(ag_st_read(st, stems[i], &t[i], &err), AG_OK, "%s", err.message);
    ag_st_close(st);
    ag_model *m = load(MODELS "tiny-vit");
    size_t s[3] = {3, 64, 64}, n = 65, d = 32, got = 0;
    cr_assert_eq(ag_model_input_positions(m, 3, s, &got, &err), AG_OK, "%s", err.message);
    cr_assert_eq(got, n);
    double *x = calloc(3 * 64 * 64, sizeof *x), *hidden = malloc(3 * n * d * sizeof *hidden);
    fwd_check c = {0};
    run(m, x, 3, s, AG_PRECISION_F64, NULL, &c, hidden);
    const double *P = t[1].data + d; // the 4 x 4 grid's rows
    for (size_t j = 0; j < d; j++)
        cr_assert_eq(hidden[j], t[0].data[j] + t[1].data[j]);
    for (int y = 0; y < 8; y++)
        for (int xx = 0; xx < 8; xx++) {
            int iy[4], ix[4];
            const double *wy, *wx;
            up2(y, 4, iy, &wy);
            up2(xx, 4, ix, &wx);
            for (size_t j = 0; j < d; j++) {
                double want = 0;
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++)
                        want += wy[a] * wx[b] * P[(size_t)(iy[a] * 4 + ix[b]) * d + j];
                double h = hidden[(size_t)(1 + y * 8 + xx) * d + j];
                cr_assert(fabs(h - (t[2].data[j] + want)) <= 1e-14, "patch (%d, %d) col %zu: %.17g, want %.17g",
                          y, xx, j, h, t[2].data[j] + want);
            }
        }
    for (int i = 0; i < 3; i++)
        ag_array_free(&t[i]);
    free(x);
    free(hidden);
    ag_model_free(m);
}

/* DINOv2: configuration (mlp_ratio 2.5 -> 80, eps 1e-6) and W_O from
 * ag_model_attn_weights = attention.output.dense.weightᵀ times λ1 per
 * column (layer_scale1.lambda1, modeling_dinov2.py Dinov2LayerScale). */
Test(encoders, dinov2_config_and_layer_scale_in_wo)
{
    ag_model *m = load(MODELS "tiny-dinov2");
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq(g->arch, AG_ARCH_DINOV2);
    cr_assert_eq(ag_model_input_kind(m), AG_INPUT_PIXELS);
    cr_assert(g->d_ff == 80 && g->norm_eps == 1e-6 && g->qkv_bias && g->max_positions == 17);
    ag_safetensors *st = NULL;
    ag_error err = {0};
    ag_array wo = {0}, ls = {0}, bo = {0};
    cr_assert_eq(ag_st_open(MODELS "tiny-dinov2/model.safetensors", &st, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_st_read(st, "encoder.layer.1.attention.output.dense.weight", &wo, &err), AG_OK);
    cr_assert_eq(ag_st_read(st, "encoder.layer.1.layer_scale1.lambda1", &ls, &err), AG_OK);
    cr_assert_eq(ag_st_read(st, "encoder.layer.1.attention.output.dense.bias", &bo, &err), AG_OK);
    ag_st_close(st);
    ag_attn_weights w;
    cr_assert_eq(ag_model_attn_weights(m, 1, &w, &err), AG_OK, "%s", err.message);
    for (size_t i = 0; i < 32; i++)
        for (size_t o = 0; o < 32; o++)
            cr_assert_eq(w.wo.data[i * 32 + o], wo.data[o * 32 + i] * ls.data[o], "W_O[%zu, %zu]", i, o);
    ag_attn_weights_free(&w);
    ag_block_params bp;
    cr_assert_eq(ag_model_block_params(m, 1, &bp, &err), AG_OK, "%s", err.message);
    for (size_t o = 0; o < 32; o++)
        cr_assert_eq(bp.bo.data[o], bo.data[o] * ls.data[o]);
    ag_block_params_free(&bp);
    ag_array_free(&wo);
    ag_array_free(&ls);
    ag_array_free(&bo);
    ag_model_free(m);
}

/* Keys' cubic with a = -0.5 (torch's antialiased bicubic, PIL's
 * convention): 1.5|x|^3 - 2.5|x|^2 + 1 for |x| < 1. */
static double keys_half(double x)
{
    x = fabs(x);
    return (1.5 * x - 2.5) * x * x + 1;
}

/* DINOv2 with registers (tiny-dinov2-reg, 3 registers; modeling_dinov2_
 * with_registers.py Dinov2WithRegistersEmbeddings): zero pixels give
 * hidden[0] = [cls + pos_0; register_tokens; conv bias + pos_1..16] —
 * the registers without a position. An 8 x 8 image (one patch) shrinks
 * the 4 x 4 grid to 1 x 1 with torch's antialiased bicubic: scale 4,
 * support 2·4 = 8, centre 4·0.5 = 2, taps 0..3 at (j + 0.5 − 2)/4 =
 * ∓0.375, ∓0.125, weights keys(·) / Σ: w = (k(.375), k(.125), k(.125),
 * k(.375)) / 2(k(.125) + k(.375)), and the patch row is Σ w_y w_x P[y, x]. */
Test(encoders, dinov2_registers_rows_and_antialiased_positions)
{
    const char *stems[4] = {"embeddings.cls_token", "embeddings.position_embeddings",
                            "embeddings.patch_embeddings.projection.bias", "embeddings.register_tokens"};
    ag_array t[4] = {{0}};
    ag_safetensors *st = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_st_open(MODELS "tiny-dinov2-reg/model.safetensors", &st, &err), AG_OK, "%s", err.message);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ag_st_read(st, stems[i], &t[i], &err), AG_OK, "%s", err.message);
    ag_st_close(st);
    ag_model *m = load(MODELS "tiny-dinov2-reg");
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert(g->arch == AG_ARCH_DINOV2_REGISTERS && g->n_registers == 3 && g->max_positions == 17);
    size_t d = 32, s32[3] = {3, 32, 32}, s8[3] = {3, 8, 8}, n = 0;
    cr_assert_eq(ag_model_input_positions(m, 3, s32, &n, &err), AG_OK, "%s", err.message);
    cr_assert_eq(n, 20); /* CLS, 3 registers, 16 patches */
    double *x = calloc(3 * 32 * 32, sizeof *x), *hidden = malloc(3 * 20 * d * sizeof *hidden);
    fwd_check c = {0};
    run(m, x, 3, s32, AG_PRECISION_F64, NULL, &c, hidden);
    cr_assert(c.row_err < 1e-12 && c.weights_err < 1e-12, "rows %g, weights %g", c.row_err, c.weights_err);
    for (size_t j = 0; j < d; j++) {
        cr_assert_eq(hidden[j], t[0].data[j] + t[1].data[j]);
        for (size_t r = 0; r < 3; r++)
            cr_assert_eq(hidden[(1 + r) * d + j], t[3].data[r * d + j], "register %zu col %zu", r, j);
        for (size_t p = 0; p < 16; p++)
            cr_assert_eq(hidden[(4 + p) * d + j], t[2].data[j] + t[1].data[(1 + p) * d + j]);
    }
    cr_assert_eq(ag_model_input_positions(m, 3, s8, &n, &err), AG_OK, "%s", err.message);
    cr_assert_eq(n, 5);
    fwd_check c8 = {0};
    run(m, x, 3, s8, AG_PRECISION_F64, NULL, &c8, hidden);
    double k1 = keys_half(0.125), k3 = keys_half(0.375), w[4] = {k3, k1, k1, k3};
    for (int i = 0; i < 4; i++)
        w[i] /= 2 * (k1 + k3);
    for (size_t j = 0; j < d; j++) {
        double want = 0;
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                want += w[a] * w[b] * t[1].data[(size_t)(1 + a * 4 + b) * d + j];
        cr_assert_eq(hidden[j], t[0].data[j] + t[1].data[j]);
        cr_assert_eq(hidden[d + j], t[3].data[j]);
        double h = hidden[4 * d + j];
        cr_assert(fabs(h - (t[2].data[j] + want)) <= 1e-14, "col %zu: %.17g, want %.17g", j, h, t[2].data[j] + want);
    }
    for (int i = 0; i < 4; i++)
        ag_array_free(&t[i]);
    free(x);
    free(hidden);
    ag_model_free(m);
}

/* The heads on pools of 1 and 3 threads: the same bytes, both precisions. */
Test(encoders, threads_give_the_same_bytes)
{
    const char *names[] = {"tiny-vit", "tiny-whisper", "tiny-dinov2-reg"};
    ag_pool *pool = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_pool_new(3, &pool, &err), AG_OK, "%s", err.message);
    for (int k = 0; k < 3; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, MODELS "%s", names[k]);
        ag_model *m = load(dir);
        const ag_model_config *g = ag_model_get_config(m);
        size_t s[3], n = 0;
        int nd = ag_model_input_shape(m, s);
        if (nd == 2)
            s[1] = 400;
        cr_assert_eq(ag_model_input_positions(m, nd, s, &n, &err), AG_OK);
        size_t L = (size_t)g->n_layer, d = (size_t)g->d_model, H = (size_t)g->n_head;
        double *x = values(s[0] * s[1] * (nd == 3 ? s[2] : 1), 11);
        for (int prec = 0; prec < 2; prec++) {
            double *hid[2], *att[2][8];
            for (int p = 0; p < 2; p++) {
                fwd_check c = {.attn = att[p]};
                hid[p] = malloc((L + 1) * n * d * sizeof(double));
                run(m, x, nd, s, prec, p ? pool : NULL, &c, hid[p]);
            }
            cr_assert(!memcmp(hid[0], hid[1], (L + 1) * n * d * sizeof(double)), "%s: hidden differs", names[k]);
            for (size_t l = 0; l < L; l++) {
                cr_assert(!memcmp(att[0][l], att[1][l], H * n * n * sizeof(double)), "%s layer %zu", names[k], l);
                free(att[0][l]);
                free(att[1][l]);
            }
            free(hid[0]);
            free(hid[1]);
        }
        free(x);
        ag_model_free(m);
    }
    ag_pool_free(pool);
}

/* ---- refusals ------------------------------------------------------------ */

static void expect_values_error(const ag_model *m, int ndim, const size_t *shape, int status, const char *n1,
                                const char *n2)
{
    size_t cnt = 1;
    for (int i = 0; i < ndim; i++)
        cnt *= shape[i];
    double *x = calloc(cnt ? cnt : 1, sizeof *x);
    ag_error err = {0};
    int rc = ag_model_forward_values(m, x, ndim, shape, NULL, NULL, NULL, NULL, &err);
    free(x);
    cr_assert_eq(rc, status, "status %d, expected %d: %s", rc, status, err.message);
    cr_assert(strstr(err.message, n1) && strstr(err.message, n2), "message lacks \"%s\" or \"%s\": %s", n1, n2,
              err.message);
    cr_assert_null(strchr(err.message, '\n'));
}

Test(encoders, wrong_inputs_are_refused_naming_the_shapes)
{
    ag_model *v = load(MODELS "tiny-vit"), *w = load(MODELS "tiny-whisper"), *gpt2 = load("models/tiny-gpt2");
    size_t thin[3] = {3, 4, 64}, gray[3] = {1, 32, 32}, flat[1] = {3072}, two[4] = {2, 3, 32, 32};
    expect_values_error(v, 3, thin, AG_ESHAPE, "(3, 4, 64)", "patches of 8x8");
    expect_values_error(v, 3, gray, AG_ESHAPE, "(1, 32, 32)", "num_channels");
    expect_values_error(v, 1, flat, AG_ESHAPE, "(3072,)", "(num_channels, height, width)");
    expect_values_error(v, 4, two, AG_ESHAPE, "(2, 3, 32, 32)", "(num_channels, height, width)");
    size_t long_t[2] = {80, 3001}, none[2] = {80, 0}, mels[2] = {128, 100};
    expect_values_error(w, 2, long_t, AG_ESHAPE, "(80, 3001)", "1..3000");
    expect_values_error(w, 2, none, AG_ESHAPE, "(80, 0)", "1..3000");
    expect_values_error(w, 2, mels, AG_ESHAPE, "128", "80 mel bins");
    size_t tok[2] = {1, 4};
    expect_values_error(gpt2, 2, tok, AG_EINVAL, "takes token ids", "gpt2");

    int32_t ids[3] = {1, 2, 3};
    ag_error err = {0};
    cr_assert_eq(ag_model_forward(v, ids, 3, AG_PRECISION_F64, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "takes pixels"), "%s", err.message);
    cr_assert_eq(ag_model_forward(w, ids, 3, AG_PRECISION_F32, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "takes log-mel features"), "%s", err.message);

    size_t s[3] = {3, 32, 32};
    double *x = calloc(3 * 32 * 32, sizeof *x);
    x[100] = INFINITY;
    cr_assert_eq(ag_model_forward_values(v, x, 3, s, NULL, NULL, NULL, NULL, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "input value 100"), "%s", err.message);
    x[100] = 1e39; /* finite, beyond float32: refused by the f32 pass only */
    cr_assert_eq(ag_model_forward_values(v, x, 3, s, NULL, NULL, NULL, NULL, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "float32"), "%s", err.message);
    ag_forward_options o64 = AG_FORWARD_OPTIONS_DEFAULT;
    o64.precision = AG_PRECISION_F64;
    x[100] = 0;
    cr_assert_eq(ag_model_forward_values(v, x, 3, s, &o64, NULL, NULL, NULL, &err), AG_OK, "%s", err.message);
    free(x);
    ag_model_free(v);
    ag_model_free(w);
    ag_model_free(gpt2);
}

static int drop_vit_key1(const char *name, ag_array *a)
{
    (void)a;
    return !strstr(name, "encoder.layer.1.attention.attention.key.weight");
}

static int drop_conv2(const char *name, ag_array *a)
{
    (void)a;
    return !strstr(name, "conv2.weight");
}

static int drop_cls(const char *name, ag_array *a)
{
    (void)a;
    return !strstr(name, "cls_token");
}

/* Whisper's k_proj must have no bias; the decoder's tensors are never read
 * (dropping them all changes nothing). */
static int drop_decoder(const char *name, ag_array *a)
{
    (void)a;
    return !strstr(name, "decoder.") && strcmp(name, "proj_out.weight");
}

Test(encoders, missing_tensors_and_bad_configs_are_named)
{
    expect_load_error(variant("tiny-vit", "vk", drop_vit_key1, NULL), AG_ENOTFOUND,
                      "'encoder.layer.1.attention.attention.key.weight'");
    expect_load_error(variant("tiny-vit-cls", "vck", drop_vit_key1, NULL), AG_ENOTFOUND,
                      "'vit.encoder.layer.1.attention.attention.key.weight'");
    /* without cls_token the "vit." prefix is not detected: named unprefixed */
    expect_load_error(variant("tiny-vit-cls", "vcc", drop_cls, NULL), AG_ENOTFOUND, "'embeddings.cls_token'");
    expect_load_error(variant("tiny-whisper", "wc2", drop_conv2, NULL), AG_ENOTFOUND,
                      "'model.encoder.conv2.weight'");
    expect_load_error(variant("tiny-vit-cls", "vcb", NULL, "{\"qkv_bias\": true}"), AG_ENOTFOUND,
                      "'vit.encoder.layer.0.attention.attention.query.bias'");
    expect_load_error(variant("tiny-vit", "vimg", NULL, "{\"image_size\": 64}"), AG_ESHAPE,
                      "'embeddings.position_embeddings' has shape (1, 17, 32), expected (1, 65, 32)");
    expect_load_error(variant("tiny-vit", "vpatch", NULL, "{\"patch_size\": 64}"), AG_EFORMAT,
                      "patch_size 64x64 is larger than image_size 32x32");
    expect_load_error(variant("tiny-vit", "vpair", NULL, "{\"image_size\": [32, \"a\"]}"), AG_EFORMAT,
                      "field 'image_size' entry 1");
    expect_load_error(variant("tiny-whisper", "wmel", NULL, "{\"num_mel_bins\": 128}"), AG_ESHAPE,
                      "'model.encoder.conv1.weight' has shape (32, 80, 3), expected (32, 128, 3)");
    expect_load_error(variant("tiny-whisper", "wact", NULL, "{\"activation_function\": \"gelu_fast\"}"),
                      AG_EUNSUPPORTED, "gelu_fast");
    ag_model *m = load(variant("tiny-whisper", "wnodec", drop_decoder, NULL));
    ag_model_free(m);
    ag_attn_weights w;
    ag_error err = {0};
    m = load(MODELS "tiny-whisper");
    cr_assert_eq(ag_model_attn_weights(m, 1, &w, &err), AG_OK, "%s", err.message);
    cr_assert(w.bq.data && !w.bk.data && w.bv.data, "Whisper: q and v biased, k not");
    cr_assert(w.scale == 1 / sqrt(8.0) && !w.causal && !w.rope.rotary_dim);
    ag_attn_weights_free(&w);
    ag_model_free(m);
}
