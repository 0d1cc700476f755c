/* test_attention_kernel.c — the one attention kernel (src/kernel/
 * attention_kernel.c): soft-capping of known scores, the visible sets of the
 * masks, the softmax rows, the rotary rotation (norms, inverse, partial
 * rotary, relative positions), the RoPE scaling types against closed forms
 * derived here from Hugging Face's modeling_rope_utils.py, grouped-query
 * heads and the value mix, and float32 against float64. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "kernel/attention_kernel.h"

TestSuite(attention_kernel);

static void gaussian(unsigned long seed, double sd, double *x, size_t cnt)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    for (size_t i = 0; i < cnt; i++)
        x[i] = gsl_ran_gaussian(r, sd);
    gsl_rng_free(r);
}

/* head_dim 1, q_i = 1, k = (0, 1, 2), scale 3: scores (0, 3, 6); with cap 4
 * they become 4·tanh(0, 3/4, 3/2), whose softmax is computed here. */
Test(attention_kernel, softcap_of_known_scores)
{
    double q[3] = {1, 1, 1}, k[3] = {0, 1, 2}, p[9];
    agk_head c = {.n_head = 1, .n_kv_head = 1, .head_dim = 1, .scale = 3, .softcap = 4};
    agk_head_probs_f64(&c, q, 1, k, 1, 3, p);
    double s[3] = {0, 4 * tanh(0.75), 4 * tanh(1.5)}, z = exp(s[0]) + exp(s[1]) + exp(s[2]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            cr_expect_float_eq(p[i * 3 + j], exp(s[j]) / z, 1e-15, "p[%d][%d] = %.17g", i, j,
                               p[i * 3 + j]);
    /* Without the cap the same row is softmax(0, 3, 6): the cap must act. */
    c.softcap = 0;
    agk_head_probs_f64(&c, q, 1, k, 1, 3, p);
    z = 1 + exp(3) + exp(6);
    cr_expect_float_eq(p[2], exp(6) / z, 1e-15);
    /* A cap far above the scores changes them by O(s³/cap²) only. */
    double p2[9];
    c.softcap = 1e7;
    agk_head_probs_f64(&c, q, 1, k, 1, 3, p2);
    for (int j = 0; j < 9; j++)
        cr_expect_float_eq(p2[j], p[j], 1e-12);
}

/* The scores a head hands out (sd) are the closed forms: q_i = i + 1,
 * k = (0, 1, 2, 3), scale 0.5, causal with window 2: s_ij = 0.5·(i + 1)·j
 * on 0 <= i − j < 2, −inf elsewhere; with cap 1, tanh(s_ij); in float the
 * same numbers rounded to float. */
Test(attention_kernel, scores_are_the_closed_form)
{
    enum { N = 4 };
    double q[N] = {1, 2, 3, 4}, k[N] = {0, 1, 2, 3}, p[N * N], sd[N * N];
    float qf[N] = {1, 2, 3, 4}, kf[N] = {0, 1, 2, 3}, pf[N * N];
    double sdf[N * N];
    agk_head c = {.n_head = 1, .n_kv_head = 1, .head_dim = 1, .scale = 0.5, .causal = 1,
                  .window = 2};
    float *scr = aligned_alloc(64, (agk_attend_scratch_f32(&c, N) * sizeof(float) + 64) / 64 * 64);
    cr_assert_not_null(scr);
    for (int cap = 0; cap < 2; cap++) {
        c.softcap = cap;
        agk_attend_head_f64(&c, N, q, 1, k, 1, NULL, 0, p, NULL, 0, NULL, sd, NULL);
        agk_attend_head_f32(&c, N, qf, 1, kf, 1, NULL, 0, pf, NULL, 0, NULL, sdf, scr);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double s = 0.5 * (i + 1) * j, want = cap ? tanh(s) : s;
                float wf = cap ? tanhf((float)s) : (float)s;
                if (i - j >= 0 && i - j < 2) {
                    cr_expect_eq(sd[i * N + j], want, "cap %d s[%d][%d] = %.17g", cap, i, j, sd[i * N + j]);
                    cr_expect_float_eq(sdf[i * N + j], (double)wf, 1e-7 * (1 + fabs(want)));
                } else {
                    cr_expect(isinf(sd[i * N + j]) && sd[i * N + j] < 0, "s[%d][%d] masked", i, j);
                    cr_expect(isinf(sdf[i * N + j]) && sdf[i * N + j] < 0);
                }
            }
    }
    free(scr);
}

/* Huge scores saturate at ±cap: a row of scores (−1e6, 0, 1e6) with cap 2
 * has softmax(−2, 0, 2), finite; without the cap it is one-hot. */
Test(attention_kernel, softcap_bounds_the_logits)
{
    double q[3] = {1e6, 1e6, 1e6}, k[3] = {-1, 0, 1}, p[9];
    agk_head c = {.n_head = 1, .n_kv_head = 1, .head_dim = 1, .scale = 1, .softcap = 2};
    agk_head_probs_f64(&c, q, 1, k, 1, 3, p);
    double z = exp(-2) + 1 + exp(2);
    for (int i = 0; i < 3; i++) {
        cr_expect_float_eq(p[3 * i], exp(-2) / z, 1e-15);
        cr_expect_float_eq(p[3 * i + 1], 1 / z, 1e-15);
        cr_expect_float_eq(p[3 * i + 2], exp(2) / z, 1e-15);
    }
}

Test(attention_kernel, visible_sets)
{
    size_t n = 7;
    for (int causal = 0; causal < 2; causal++)
        for (int w = 0; w <= 9; w++) {
            agk_head c = {.n_head = 1, .n_kv_head = 1, .head_dim = 1, .causal = causal,
                          .window = w};
            for (size_t i = 0; i < n; i++) {
                size_t lo, hi;
                agk_visible(&c, n, i, &lo, &hi);
                for (size_t j = 0; j < n; j++) {
                    long dist = (long)i - (long)j;
                    /* not causal with a window: the band |i − j| < w (ModernBERT) */
                    int want = !causal ? w == 0 || labs(dist) < w
                               : w == 0 ? dist >= 0 : dist >= 0 && dist < w;
                    int got = j >= lo && j < hi;
                    cr_expect_eq(got, want, "causal %d window %d: (%zu, %zu) %d", causal, w, i, j,
                                 got);
                }
            }
        }
}

/* Random scores: every row sums to 1, visible entries are positive and
 * hidden ones exactly 0; a window of at least n is the causal mask, bit for
 * bit; a window of 1 is the identity. */
Test(attention_kernel, rows_and_masks)
{
    enum { N = 9, HD = 4 };
    double q[N * HD], k[N * HD], p[N * N], pc[N * N];
    gaussian(3, 1.0, q, N * HD);
    gaussian(4, 1.0, k, N * HD);
    int windows[] = {1, 2, 4, N, N + 3};
    agk_head c = {.n_head = 1, .n_kv_head = 1, .head_dim = HD, .scale = 0.7, .causal = 1};
    agk_head_probs_f64(&c, q, HD, k, HD, N, pc);
    for (size_t t = 0; t < sizeof windows / sizeof *windows; t++) {
        c.window = windows[t];
        c.softcap = t % 2 ? 1.5 : 0;
        agk_head_probs_f64(&c, q, HD, k, HD, N, p);
        for (size_t i = 0; i < N; i++) {
            double sum = 0;
            for (size_t j = 0; j < N; j++) {
                int vis = j <= i && i - j < (size_t)c.window;
                if (vis)
                    cr_expect_gt(p[i * N + j], 0);
                else
                    cr_expect_eq(p[i * N + j], 0.0, "window %d (%zu, %zu)", c.window, i, j);
                sum += p[i * N + j];
            }
            cr_expect_float_eq(sum, 1.0, 4 * DBL_EPSILON, "window %d row %zu: %.17g", c.window,
                               i, sum);
        }
        if (c.window == 1)
            for (size_t i = 0; i < N * N; i++)
                cr_expect_eq(p[i], i % (N + 1) == 0 ? 1.0 : 0.0);
        if (c.window >= N && c.softcap == 0)
            cr_expect_eq(memcmp(p, pc, sizeof p), 0, "window %d differs from causal", c.window);
    }
}

/* A rotation by angle i·f of pair (j, j + r/2): the formula, norms kept, the
 * tail past rotary_dim untouched, dir −1 undoing dir +1. Two heads of
 * head_dim 6 with rotary_dim 4, rows of stride 15 (a wider buffer). */
Test(attention_kernel, rotation)
{
    enum { N = 5, HEADS = 2, HD = 6, RD = 4, LD = 15 };
    double inv_freq[RD / 2] = {1.0, 0.3}, cs[N * RD / 2], sn[N * RD / 2];
    double x[N * LD], y[N * LD];
    gaussian(7, 1.0, x, N * LD);
    agk_rope_tables_f64(inv_freq, RD, N, cs, sn);
    for (size_t i = 0; i < N; i++)
        for (int j = 0; j < RD / 2; j++) {
            cr_expect_eq(cs[i * 2 + j], cos((double)i * inv_freq[j]));
            cr_expect_eq(sn[i * 2 + j], sin((double)i * inv_freq[j]));
        }
    memcpy(y, x, sizeof x);
    agk_rope_apply_f64(y, N, LD, HEADS, HD, RD, cs, sn, 1);
    for (size_t i = 0; i < N; i++) {
        for (int h = 0; h < HEADS; h++) {
            const double *a = x + i * LD + h * HD, *b = y + i * LD + h * HD;
            for (int j = 0; j < RD / 2; j++) {
                double t = (double)i * inv_freq[j];
                double u = a[j], v = a[j + RD / 2];
                cr_expect_float_eq(b[j], u * cos(t) - v * sin(t), 1e-15);
                cr_expect_float_eq(b[j + RD / 2], v * cos(t) + u * sin(t), 1e-15);
                cr_expect_float_eq(hypot(b[j], b[j + RD / 2]), hypot(u, v), 1e-14);
            }
            for (int j = RD; j < HD; j++)
                cr_expect_eq(b[j], a[j], "tail dim %d of head %d moved", j, h);
        }
        for (int j = HEADS * HD; j < LD; j++) /* beyond the heads: not touched */
            cr_expect_eq(y[i * LD + j], x[i * LD + j]);
    }
    agk_rope_apply_f64(y, N, LD, HEADS, HD, RD, cs, sn, -1);
    for (size_t i = 0; i < N * LD; i++)
        cr_expect_float_eq(y[i], x[i], 1e-15, "entry %zu", i);
    /* Row 0 has angle 0: unchanged exactly. */
    memcpy(y, x, sizeof x);
    agk_rope_apply_f64(y, 1, LD, HEADS, HD, RD, cs, sn, 1);
    cr_expect_eq(memcmp(x, y, sizeof x), 0);
}

/* RoPE makes the score depend on positions only through i − j: the same q
 * at position i and k at position j score as at i + t and j + t. */
Test(attention_kernel, rope_scores_are_relative)
{
    enum { N = 8, HD = 8 };
    double inv_freq[HD / 2], cs[N * HD / 2], sn[N * HD / 2], q[N * HD], k[N * HD], v[HD], w[HD];
    ag_rope r = {.rotary_dim = HD, .theta = 10.0};
    ag_rope_inv_freq(&r, N, inv_freq);
    agk_rope_tables_f64(inv_freq, HD, N, cs, sn);
    gaussian(11, 1.0, v, HD);
    gaussian(12, 1.0, w, HD);
    for (size_t i = 0; i < N; i++) {
        memcpy(q + i * HD, v, sizeof v);
        memcpy(k + i * HD, w, sizeof w);
    }
    agk_rope_apply_f64(q, N, HD, 1, HD, HD, cs, sn, 1);
    agk_rope_apply_f64(k, N, HD, 1, HD, HD, cs, sn, 1);
    for (size_t i = 2; i < N; i++) {
        double a = 0, b = 0;
        for (int j = 0; j < HD; j++) {
            a += q[i * HD + j] * k[(i - 2) * HD + j];
            b += q[2 * HD + j] * k[0 * HD + j];
        }
        cr_expect_float_eq(a, b, 1e-13, "i = %zu: %.17g vs %.17g", i, a, b);
    }
}

/* Default: θ^(−2j/r); with θ = 10000 and r = 4 that is (1, 1/100). Linear:
 * the default divided by the factor. */
Test(attention_kernel, inv_freq_default_and_linear)
{
    double f[2], g[2], e[8];
    ag_rope r = {.rotary_dim = 4, .theta = 10000};
    ag_rope_inv_freq(&r, 10, f);
    cr_expect_eq(f[0], 1.0);
    cr_expect_float_eq(f[1], 0.01, 1e-17);
    r.type = AG_ROPE_LINEAR;
    r.factor = 4;
    ag_rope_inv_freq(&r, 10, g);
    cr_expect_eq(g[0], 0.25);
    cr_expect_eq(g[1], f[1] / 4);
    r = (ag_rope){.rotary_dim = 16, .theta = 500000};
    ag_rope_inv_freq(&r, 3, e);
    for (int j = 0; j < 8; j++)
        cr_expect_float_eq(e[j], 1 / pow(500000, j / 8.0), 1e-15 * e[j]);
}

/* Dynamic NTK (max_position_embeddings 8, factor 2, r = 4): up to 8 tokens
 * the frequencies are the default ones; for n = 16 the base becomes
 * θ·(2·16/8 − 1)^(4/2) = 9θ, so inv_freq = (1, (9θ)^(−1/2)) = (1, 1/300)
 * with θ = 10000. */
Test(attention_kernel, inv_freq_dynamic)
{
    double d[2], f[2];
    ag_rope r = {.rotary_dim = 4, .theta = 10000};
    ag_rope_inv_freq(&r, 8, d);
    r.type = AG_ROPE_DYNAMIC;
    r.factor = 2;
    r.original_max_positions = 8;
    for (size_t n = 1; n <= 8; n++) {
        ag_rope_inv_freq(&r, n, f);
        cr_expect_eq(f[0], d[0]);
        cr_expect_eq(f[1], d[1], "n = %zu: %.17g vs %.17g", n, f[1], d[1]);
    }
    ag_rope_inv_freq(&r, 16, f);
    cr_expect_eq(f[0], 1.0);
    cr_expect_float_eq(f[1], 1.0 / 300, 1e-17);
    /* n = 12: base θ·(3 − 1)^2 = 4θ, inv_freq[1] = 1/200. */
    ag_rope_inv_freq(&r, 12, f);
    cr_expect_float_eq(f[1], 1.0 / 200, 1e-17);
}

/* Llama 3.1's values (θ = 500000, factor 8, low 1, high 4, original 8192;
 * r = 128): every band occurs; high frequencies (wavelength < 8192/4) are
 * kept, low ones (wavelength > 8192) divided by 8, the middle ones
 * interpolated: s = (8192/λ − 1)/3, f' = (1 − s)·f/8 + s·f. */
Test(attention_kernel, inv_freq_llama3)
{
    enum { RD = 128 };
    double d[RD / 2], f[RD / 2];
    ag_rope r = {.rotary_dim = RD, .theta = 500000};
    ag_rope_inv_freq(&r, 5, d);
    r.type = AG_ROPE_LLAMA3;
    r.factor = 8;
    r.low_freq_factor = 1;
    r.high_freq_factor = 4;
    r.original_max_positions = 8192;
    ag_rope_inv_freq(&r, 5, f);
    int bands[3] = {0, 0, 0};
    for (int j = 0; j < RD / 2; j++) {
        double lambda = 2 * M_PI / d[j];
        if (lambda < 2048) {
            cr_expect_eq(f[j], d[j], "pair %d (wavelength %g) changed", j, lambda);
            bands[0]++;
        } else if (lambda > 8192) {
            cr_expect_float_eq(f[j], d[j] / 8, 1e-16 * d[j], "pair %d", j);
            bands[2]++;
        } else {
            double s = (8192 / lambda - 1) / 3, want = (1 - s) * d[j] / 8 + s * d[j];
            cr_expect_float_eq(f[j], want, 1e-15 * want, "pair %d", j);
            cr_expect(f[j] > d[j] / 8 && f[j] < d[j], "pair %d not between", j);
            bands[1]++;
        }
    }
    for (int b = 0; b < 3; b++)
        cr_expect_gt(bands[b], 0, "band %d empty", b);
}

/* Every head of a layer through agk_attend_head, as the forward pass runs
 * them: query head h on kv head h / (H / H_kv). */
#define DEFINE_ATTEND_ALL(R, SFX)                                                                   \
    static void attend_all_##SFX(const agk_head *c, const R *q, const R *k, const R *v, size_t n, \
                                 R *p, R *ctx)                                                    \
    {                                                                                             \
        size_t hd = (size_t)c->head_dim, lq = (size_t)c->n_head * hd,                             \
               lkv = (size_t)c->n_kv_head * hd;                                                   \
        R *scr = aligned_alloc(64, (agk_attend_scratch_##SFX(c, n) * sizeof(R) + 64) / 64 * 64);  \
        cr_assert_not_null(scr);                                                                  \
        for (int h = 0; h < c->n_head; h++) {                                                     \
            size_t g = (size_t)(h / (c->n_head / c->n_kv_head));                                  \
            agk_attend_head_##SFX(c, n, q + h * hd, lq, k + g * hd, lkv, v + g * hd, lkv,         \
                                  p + (size_t)h * n * n, ctx + h * hd, lq, NULL, NULL, scr);     \
        }                                                                                         \
        free(scr);                                                                                \
    }
DEFINE_ATTEND_ALL(float, f32)
DEFINE_ATTEND_ALL(double, f64)

/* Every head with grouped-query attention (4 query heads on 2 kv heads):
 * head h's probabilities are agk_head_probs of q_h and k_{h/2}, its context
 * the sum Σ_j p_ij v_{g,j} computed here. */
Test(attention_kernel, attend_grouped_heads)
{
    enum { N = 6, H = 4, HKV = 2, HD = 3 };
    double q[N * H * HD], k[N * HKV * HD], v[N * HKV * HD], p[H * N * N], ctx[N * H * HD],
        ph[N * N];
    gaussian(21, 1.0, q, sizeof q / sizeof *q);
    gaussian(22, 1.0, k, sizeof k / sizeof *k);
    gaussian(23, 1.0, v, sizeof v / sizeof *v);
    agk_head c = {.n_head = H, .n_kv_head = HKV, .head_dim = HD, .scale = 0.6, .softcap = 2,
                  .causal = 1, .window = 3};
    attend_all_f64(&c, q, k, v, N, p, ctx);
    for (int h = 0; h < H; h++) {
        int g = h / 2;
        agk_head_probs_f64(&c, q + h * HD, H * HD, k + g * HD, HKV * HD, N, ph);
        cr_expect_eq(memcmp(ph, p + h * N * N, sizeof ph), 0, "head %d", h);
        for (int i = 0; i < N; i++)
            for (int e = 0; e < HD; e++) {
                double s = 0;
                for (int j = 0; j < N; j++)
                    s += ph[i * N + j] * v[j * HKV * HD + g * HD + e];
                cr_expect_float_eq(ctx[i * H * HD + h * HD + e], s, 1e-14);
            }
    }
}

/* The float32 kernel against the float64 one on the same inputs (rounded to
 * float): scores O(1), so the probabilities agree to float32 rounding. */
Test(attention_kernel, f32_matches_f64)
{
    enum { N = 10, H = 4, HKV = 2, HD = 8, RD = 6 };
    enum { NQ = N * H * HD, NK = N * HKV * HD };
    double q[NQ], k[NK], v[NK], p[H * N * N], ctx[NQ], cs[N * RD / 2], sn[N * RD / 2],
        inv_freq[RD / 2];
    float qf[NQ], kf[NK], vf[NK], pf[H * N * N], ctxf[NQ], csf[N * RD / 2], snf[N * RD / 2];
    gaussian(31, 0.7, q, NQ);
    gaussian(32, 0.7, k, NK);
    gaussian(33, 1.0, v, NK);
    for (int i = 0; i < NQ; i++)
        q[i] = qf[i] = (float)q[i];
    for (int i = 0; i < NK; i++) {
        k[i] = kf[i] = (float)k[i];
        v[i] = vf[i] = (float)v[i];
    }
    ag_rope r = {.rotary_dim = RD, .theta = 100, .type = AG_ROPE_LINEAR, .factor = 2};
    ag_rope_inv_freq(&r, N, inv_freq);
    agk_rope_tables_f64(inv_freq, RD, N, cs, sn);
    agk_rope_tables_f32(inv_freq, RD, N, csf, snf);
    for (int i = 0; i < N * RD / 2; i++) {
        cr_expect_eq(csf[i], (float)cs[i]);
        cr_expect_eq(snf[i], (float)sn[i]);
    }
    agk_rope_apply_f64(q, N, H * HD, H, HD, RD, cs, sn, 1);
    agk_rope_apply_f64(k, N, HKV * HD, HKV, HD, RD, cs, sn, 1);
    agk_rope_apply_f32(qf, N, H * HD, H, HD, RD, csf, snf, 1);
    agk_rope_apply_f32(kf, N, HKV * HD, HKV, HD, RD, csf, snf, 1);
    for (int causal = 0; causal < 2; causal++) {
        agk_head c = {.n_head = H, .n_kv_head = HKV, .head_dim = HD, .scale = 1 / sqrt(HD),
                      .softcap = 3, .causal = causal, .window = causal ? 4 : 0};
        attend_all_f64(&c, q, k, v, N, p, ctx);
        attend_all_f32(&c, qf, kf, vf, N, pf, ctxf);
        double ep = 0, ec = 0;
        for (int i = 0; i < H * N * N; i++) {
            ep = fmax(ep, fabs(pf[i] - p[i]));
            if (p[i] == 0)
                cr_expect_eq(pf[i], 0.0f);
        }
        for (int i = 0; i < NQ; i++)
            ec = fmax(ec, fabs(ctxf[i] - ctx[i]));
        cr_expect_leq(ep, 1e-6, "causal %d: max |p32 - p64| = %g", causal, ep);
        cr_expect_leq(ec, 1e-5, "causal %d: max |ctx32 - ctx64| = %g", causal, ec);
    }
}
