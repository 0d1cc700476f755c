/* test_attention_layer.c — the architecture-free attention layer
 * (src/engine/attention_layer.c): USE-lite's real attention maps (TF.js fixtures)
 * from its layer inputs and fused Q|K|V tensors, closed forms, the tensor
 * helpers and the errors. Run from the repository root. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/model.h"

TestSuite(layer);

#define USE_QKV "tests/data/use-lite/qkv.safetensors"
#define USE_FIX "tests/data/fixtures/use-lite"
#define USE_K "module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0"
#define USE_B "module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat"

static void read_npy(const char *fmt, int k, int l, ag_array *a)
{
    char p[512];
    ag_error err = {0};
    snprintf(p, sizeof p, fmt, k, l);
    cr_assert_eq(ag_npy_read(p, a, &err), AG_OK, "%s", err.message);
}

static void read_st(const ag_safetensors *st, const char *fmt, int l, ag_array *a)
{
    char name[512];
    ag_error err = {0};
    snprintf(name, sizeof name, fmt, l);
    cr_assert_eq(ag_st_read(st, name, a, &err), AG_OK, "%s", err.message);
}

/* One sentence k, layer l, one precision: max |A - fixture|. */
static double use_case(const ag_safetensors *st, int k, int l, ag_precision prec)
{
    static const double scale[2] = {0.125, 0.0883883461356163};
    ag_array x = {0}, ref = {0}, w = {0}, b = {0}, wq = {0}, wk = {0}, bq = {0}, bk = {0}, a = {0};
    ag_error err = {0};
    read_npy(USE_FIX "/x_%d_layer%d.npy", k, l, &x);
    read_npy(USE_FIX "/attn_%d_layer%d.npy", k, l, &ref);
    read_st(st, USE_K, l, &w);
    read_st(st, USE_B, l, &b);
    cr_assert_eq(w.ndim, 4);
    cr_assert_eq(ag_qkv_split(&w, "kernel", &wq, &wk, NULL, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_qkv_split(&b, "bias", &bq, &bk, NULL, &err), AG_OK, "%s", err.message);
    cr_assert_eq(wq.ndim, 2);
    cr_assert_eq(wq.shape[0], x.shape[1]);
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = x.data, .n = x.shape[0], .d = x.shape[1], .wq = wq.data,
                            .wk = wk.data, .bq = bq.data, .bk = bk.data, .d_a = wq.shape[1],
                            .n_head = 4, .scale = scale[l], .precision = prec};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_array_size(&a), ag_array_size(&ref));
    double e = 0;
    for (size_t i = 0; i < ag_array_size(&a); i++)
        e = fmax(e, fabs(a.data[i] - ref.data[i]));
    ag_array *all[] = {&x, &ref, &w, &b, &wq, &wk, &bq, &bk, &a};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ag_array_free(all[i]);
    return e;
}

Test(layer, use_lite_matches_tfjs)
{
    ag_safetensors *st = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_st_open(USE_QKV, &st, &err), AG_OK, "%s", err.message);
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < 2; p++) {
                double e = use_case(st, k, l, (ag_precision)p);
                fprintf(stderr, "[layer] use-lite sentence %d layer %d %s: max |attn err| %.3g\n", k, l,
                        p ? "f64" : "f32", e);
                cr_expect_leq(e, 1e-5, "sentence %d layer %d: %g", k, l, e);
            }
    ag_st_close(st);
}

/* Zero W_K: all scores equal, so rows are uniform (1/n, or 1/(i+1) causal)
 * whatever X, W_Q and the scale. */
Test(layer, uniform_when_keys_are_constant)
{
    double x[3 * 2] = {1, 2, -3, 0.5, 4, 1}, wq[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, wk[8] = {0};
    double bk[4] = {1, -1, 2, 0};
    for (int causal = 0; causal < 2; causal++)
        for (int p = 0; p < 2; p++) {
            ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                                    .x = x, .n = 3, .d = 2, .wq = wq, .wk = wk, .bk = bk, .d_a = 4,
                                    .n_head = 2, .causal = causal, .precision = (ag_precision)p};
            ag_array a = {0};
            ag_error err = {0};
            cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
            cr_assert_eq(a.shape[0], 2);
            for (size_t h = 0; h < 2; h++)
                for (size_t i = 0; i < 3; i++)
                    for (size_t j = 0; j < 3; j++) {
                        double want = causal ? (j <= i ? 1.0 / (i + 1) : 0.0) : 1.0 / 3;
                        cr_assert_float_eq(a.data[h * 9 + i * 3 + j], want, 1e-7);
                    }
            ag_array_free(&a);
        }
}

/* Two tokens, one head of width 1: A = softmax over [c·q·k_0, c·q·k_1] in
 * closed form, default scale 1/sqrt(1) = 1 and an explicit one. */
Test(layer, two_token_closed_form)
{
    double x[2] = {1, 2}, wq[1] = {0.5}, wk[1] = {1.5}, bq[1] = {0.25};
    for (int sc = 0; sc < 2; sc++) {
        double c = sc ? 0.3 : 1.0;
        ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                                .x = x, .n = 2, .d = 1, .wq = wq, .wk = wk, .bq = bq, .d_a = 1,
                                .n_head = 1, .scale = sc ? 0.3 : 0, .precision = AG_PRECISION_F64};
        ag_array a = {0};
        cr_assert_eq(ag_attention_layer(&s, &a, NULL), AG_OK);
        for (int i = 0; i < 2; i++) {
            double q = c * (x[i] * 0.5 + 0.25), s0 = q * 1.5, s1 = q * 3.0;
            double p0 = 1 / (1 + exp(s1 - s0));
            cr_assert_float_eq(a.data[i * 2], p0, 1e-15);
            cr_assert_float_eq(a.data[i * 2 + 1], 1 - p0, 1e-15);
        }
        ag_array_free(&a);
    }
}

/* RoPE over positions 0..1 with one pair (rotary_dim 2, inv_freq θ⁰ = 1):
 * X = (1, 1), every q and k is e_0 before the rotation, so position 1 turns
 * by 1 rad and the scores are c·cos(i − j). With d_h = 4 and rotary_dim 2
 * the last two dims (here q = k = (0, 0, 2, 2)·x, not rotated) add c·8 to
 * every score, which the softmax ignores; rotating them too does not:
 * rotary_dim 4 pairs dims (0, 2) at frequency 1 and (1, 3) at θ^(−1/2). */
Test(layer, rope_closed_form)
{
    double x[2] = {1, 1}, w2[2] = {1, 0}, w4[4] = {1, 0, 2, 2};
    for (int p = 0; p < 2; p++)
        for (int wide = 0; wide < 2; wide++) {
            double c = 0.7, th = 100;
            ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                                    .x = x, .n = 2, .d = 1, .wq = wide ? w4 : w2,
                                    .wk = wide ? w4 : w2, .d_a = wide ? 4 : 2, .n_head = 1,
                                    .scale = c, .rope = {.rotary_dim = 2, .theta = th},
                                    .precision = (ag_precision)p};
            ag_array a = {0};
            ag_error err = {0};
            cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
            double p0 = 1 / (1 + exp(c * cos(1.0) - c)); /* row 0: scores c, c·cos 1 */
            /* f32: scores up to 9c ≈ 6 carry a few float ulps (≈ 5e-7). */
            double tol = p ? 1e-15 : 16 * FLT_EPSILON;
            cr_expect_float_eq(a.data[0], p0, tol);
            cr_expect_float_eq(a.data[1], 1 - p0, tol);
            cr_expect_float_eq(a.data[2], 1 - p0, tol); /* row 1: c·cos 1, c */
            cr_expect_float_eq(a.data[3], p0, tol);
            ag_array_free(&a);
            if (!wide)
                continue;
            /* All four dims rotated: pair (0, 2) holds (1, 2) and turns by 1,
             * pair (1, 3) holds (0, 2) and turns by 1/sqrt(100) at position 1:
             * the off-diagonal score is c·(5·cos 1 + 4·cos 0.1). */
            s.rope.rotary_dim = 4;
            cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
            double off = c * (5 * cos(1.0) + 4 * cos(0.1)), on = c * 9;
            p0 = 1 / (1 + exp(off - on));
            cr_expect_float_eq(a.data[0], p0, tol);
            cr_expect_float_eq(a.data[3], p0, tol);
            ag_array_free(&a);
        }
}

/* A window of 1 leaves each query its own key only: the identity, exactly.
 * A window of 2 with soft-capping: row i sees keys i − 1 and i, with the
 * scores capped, in closed form (one head of width 1, q = k = x). */
Test(layer, window_and_softcap)
{
    double x[4] = {0.5, -1, 2, 3}, w[1] = {1};
    for (int p = 0; p < 2; p++) {
        ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                                .x = x, .n = 4, .d = 1, .wq = w, .wk = w, .d_a = 1,
                                .n_head = 1, .causal = 1, .window = 1,
                                .precision = (ag_precision)p};
        ag_array a = {0};
        ag_error err = {0};
        cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
        for (int i = 0; i < 16; i++)
            cr_expect_eq(a.data[i], i % 5 == 0 ? 1.0 : 0.0, "entry %d: %g", i, a.data[i]);
        ag_array_free(&a);
        s.window = 2;
        s.softcap = 1.5;
        cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
        cr_expect_eq(a.data[0], 1.0);
        for (int i = 1; i < 4; i++) {
            double s0 = 1.5 * tanh(x[i] * x[i - 1] / 1.5), s1 = 1.5 * tanh(x[i] * x[i] / 1.5);
            double p0 = 1 / (1 + exp(s1 - s0));
            for (int j = 0; j < 4; j++) {
                double want = j == i - 1 ? p0 : j == i ? 1 - p0 : 0;
                cr_expect_float_eq(a.data[i * 4 + j], want, p ? 1e-15 : 1e-7, "(%d, %d)", i, j);
                if (want == 0)
                    cr_expect_eq(a.data[i * 4 + j], 0.0);
            }
        }
        ag_array_free(&a);
    }
}

/* A bidirectional window (ModernBERT's local layers) is the band
 * |i − j| < window: with Q = K = 0 every visible key scores 0, so row i is
 * uniform, exactly 1/count, over keys max(0, i − w + 1) .. min(n − 1, i + w − 1)
 * and exactly 0 elsewhere; window 1 is the identity. */
Test(layer, bidirectional_band)
{
    double x[6] = {0.5, -1, 2, 3, 1, -2}, w[1] = {0};
    for (int p = 0; p < 2; p++)
        for (int win = 1; win <= 3; win++) {
            ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                                    .x = x, .n = 6, .d = 1, .wq = w, .wk = w, .d_a = 1,
                                    .n_head = 1, .window = win, .precision = (ag_precision)p};
            ag_array a = {0};
            ag_error err = {0};
            cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
            for (int i = 0; i < 6; i++) {
                int lo = i - win + 1 > 0 ? i - win + 1 : 0, hi = i + win - 1 < 5 ? i + win - 1 : 5;
                for (int j = 0; j < 6; j++) {
                    double want = j >= lo && j <= hi ? 1.0 / (hi - lo + 1) : 0.0;
                    if (!p) /* f32: 1/count rounded to float; f64: exactly */
                        want = want ? (double)(float)want : 0.0;
                    cr_expect_eq(a.data[i * 6 + j], want, "precision %d window %d (%d, %d): %.17g",
                                 p, win, i, j, a.data[i * 6 + j]);
                }
            }
            ag_array_free(&a);
        }
}

/* The kernel's options are checked: each bad value is AG_EINVAL naming it. */
Test(layer, kernel_option_errors)
{
    double x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1};
    ag_array a = {0};
    ag_error err = {0};
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = x, .n = 2, .d = 2, .wq = w, .wk = w, .d_a = 2, .n_head = 1};
    struct {
        ag_rope rope;
        double softcap;
        int window, causal;
        const char *word;
    } bad[] = {
        {{.rotary_dim = 1, .theta = 10}, 0, 0, 0, "rotary_dim 1"},
        {{.rotary_dim = 4, .theta = 10}, 0, 0, 0, "rotary_dim 4"},
        {{.rotary_dim = 2, .theta = 0}, 0, 0, 0, "rope_theta 0"},
        {{.rotary_dim = 2, .theta = 10, .type = AG_ROPE_LINEAR, .factor = 0.5}, 0, 0, 0, "factor 0.5"},
        {{0}, -1, 0, 0, "softcap -1"},
        {{0}, NAN, 0, 0, "softcap nan"},
        {{0}, 0, -1, 1, "window -1"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
        s.rope = bad[t].rope;
        s.softcap = bad[t].softcap;
        s.window = bad[t].window;
        s.causal = bad[t].causal;
        cr_expect_eq(ag_attention_layer(&s, &a, &err), AG_EINVAL, "case %zu", t);
        cr_expect(strstr(err.message, bad[t].word), "case %zu: %s", t, err.message);
        cr_expect_null(a.data);
    }
}

Test(layer, qkv_split_and_squeeze)
{
    ag_array f = {0}, q = {0}, k = {0}, v = {0};
    size_t shape[4] = {1, 1, 2, 6};
    cr_assert_eq(ag_array_alloc(&f, 4, shape, NULL), AG_OK);
    for (size_t i = 0; i < 12; i++)
        f.data[i] = (double)i; /* row 0: 0..5, row 1: 6..11 */
    cr_assert_eq(ag_qkv_split(&f, "w", &q, &k, &v, NULL), AG_OK);
    cr_assert_eq(f.ndim, 4, "input untouched");
    cr_assert_eq(q.ndim, 2);
    cr_assert_eq(q.shape[0], 2);
    cr_assert_eq(q.shape[1], 2);
    double wq[4] = {0, 1, 6, 7}, wk[4] = {2, 3, 8, 9}, wv[4] = {4, 5, 10, 11};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(q.data[i], wq[i]);
        cr_assert_eq(k.data[i], wk[i]);
        cr_assert_eq(v.data[i], wv[i]);
    }
    cr_assert_eq(ag_array_transpose2d(&q, NULL), AG_OK);
    cr_assert_eq(q.data[1], 6);
    cr_assert_eq(q.data[2], 1);
    ag_array_free(&q);
    ag_array_free(&k);
    ag_array_free(&v);
    /* bias [3·d_a] */
    f.ndim = 1;
    f.shape[0] = 12;
    cr_assert_eq(ag_qkv_split(&f, "b", &q, &k, NULL, NULL), AG_OK);
    cr_assert_eq(q.ndim, 1);
    cr_assert_eq(q.shape[0], 4);
    cr_assert_eq(k.data[0], 4);
    ag_array_free(&q);
    ag_array_free(&k);
    /* not a multiple of 3 */
    ag_error err = {0};
    f.shape[0] = 11;
    cr_assert_eq(ag_qkv_split(&f, "bad_qkv", &q, &k, NULL, &err), AG_ESHAPE);
    cr_assert(strstr(err.message, "bad_qkv"), "%s", err.message);
    ag_array_free(&f);
}

/* Leading 1s are dropped only down to the rank asked for: a (1, d) X is one
 * token and a (1, 3·d_a) kernel is a matrix of one input row. */
Test(layer, squeeze_keeps_the_rank)
{
    ag_array a = {0}, q = {0}, k = {0};
    size_t shape[4] = {1, 1, 1, 6};
    cr_assert_eq(ag_array_alloc(&a, 4, shape, NULL), AG_OK);
    for (size_t i = 0; i < 6; i++)
        a.data[i] = (double)i;
    ag_array_squeeze_to(&a, 2);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 1);
    cr_assert_eq(a.shape[1], 6);
    ag_array_squeeze_to(&a, 3); /* rank already below 3: unchanged */
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(ag_qkv_split(&a, "w", &q, &k, NULL, NULL), AG_OK);
    cr_assert_eq(q.ndim, 2);
    cr_assert_eq(q.shape[0], 1);
    cr_assert_eq(q.shape[1], 2);
    cr_assert_eq(k.data[0], 2);
    cr_assert_eq(k.data[1], 3);
    cr_assert_eq(ag_array_transpose2d(&q, NULL), AG_OK);
    cr_assert_eq(q.shape[0], 2);
    cr_assert_eq(q.shape[1], 1);
    cr_assert_eq(q.data[1], 1);
    ag_array_squeeze_leading(&a); /* the old rule: down to one dimension */
    cr_assert_eq(a.ndim, 1);
    cr_assert_eq(a.shape[0], 6);
    ag_array_free(&a);
    ag_array_free(&q);
    ag_array_free(&k);
}

Test(layer, errors)
{
    double x[4] = {1, 2, 3, NAN}, w[4] = {1, 0, 0, 1};
    ag_array a = {0};
    ag_error err = {0};
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = x, .n = 2, .d = 2, .wq = w, .wk = w, .d_a = 2, .n_head = 1};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_null(a.data);
    x[3] = 4;
    s.n_head = 3;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "heads"), "%s", err.message);
    s.n_head = 1;
    s.wk = NULL;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_EINVAL);
    s.wk = w;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK);
    ag_array_free(&a);
}

/* Every failure names the input it comes from: NaN in X names x_name (not
 * the weights), a weight names w_name and the tensor, values beyond float32
 * fail the f32 run, and scores that overflow name w_name and the head. */
Test(layer, nonfinite_names_file_and_place)
{
    double x[4] = {1, 2, 3, NAN}, w[4] = {1, 0, 0, 1}, wbad[4] = {1, 0, INFINITY, 1};
    ag_array a = {0};
    ag_error err = {0};
    ag_attn_layer_spec s = {.size = sizeof(ag_attn_layer_spec),
                            .x = x, .n = 2, .d = 2, .wq = w, .wk = w, .d_a = 2, .n_head = 2,
                            .x_name = "x.npy", .w_name = "w.safetensors"};
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "x.npy: X holds a non-finite value (nan) at row 1, column 1");
    x[3] = 4;
    s.wk = wbad;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "w.safetensors: W_K holds a non-finite value (inf) at row 1, column 0");
    s.wk = w;
    x[2] = 1e39; /* finite in double, Inf in float */
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "x.npy: X value 1e+39 at row 1, column 0 overflows float32 (try --precision f64)");
    /* head 1 sees x·1e20 (column 1): scores 1e40 and more overflow float32 */
    double wh[4] = {1, 0, 0, 1e20};
    x[2] = 3;
    s.wq = s.wk = wh;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_null(a.data);
    cr_assert_str_eq(err.message, "w.safetensors: head 1: attention is not finite at query 0 "
                                  "(float32 overflow; try --precision f64)");
    s.precision = AG_PRECISION_F64; /* in double: scores 4e40, 1.6e41 are fine */
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(a.data[4 + 3], 1.0); /* query 1 of head 1 attends to key 1 only */
    ag_array_free(&a);
    wh[3] = 1e160; /* now 1e320 overflows double too */
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "w.safetensors: head 1: attention is not finite at query 0 (float64 overflow)");
    s.x_name = s.w_name = NULL;
    x[0] = NAN;
    cr_assert_eq(ag_attention_layer(&s, &a, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "attention layer: X holds a non-finite value (nan) at row 0, column 0");
}

/* The small extract holds exactly the full model's tensors (only checked
 * when $AG_TEST_MODELS/use-lite/model.safetensors is there). */
Test(layer, use_lite_extract_is_exact)
{
    const char *env = getenv("AG_TEST_MODELS");
    char full[4096];
    snprintf(full, sizeof full, "%s/use-lite/model.safetensors", env ? env : "");
    ag_safetensors *big = NULL, *small = NULL;
    if (!env || !*env || ag_st_open(full, &big, NULL) != AG_OK) {
        cr_skip_test("set AG_TEST_MODELS to a folder holding use-lite/ to compare the extract with the full model");
        return;
    }
    cr_assert_eq(ag_st_open(USE_QKV, &small, NULL), AG_OK);
    cr_assert_eq(ag_st_count(small), 4);
    for (size_t i = 0; i < 4; i++) {
        const ag_tensor_info *t = ag_st_info(small, i);
        ag_array a = {0}, b = {0};
        cr_assert_eq(ag_st_read(small, t->name, &a, NULL), AG_OK);
        cr_assert_eq(ag_st_read(big, t->name, &b, NULL), AG_OK, "%s", t->name);
        cr_assert_eq(ag_array_size(&a), ag_array_size(&b));
        cr_assert_eq(memcmp(a.data, b.data, ag_array_size(&a) * sizeof(double)), 0, "%s", t->name);
        ag_array_free(&a);
        ag_array_free(&b);
    }
    ag_st_close(big);
    ag_st_close(small);
}
