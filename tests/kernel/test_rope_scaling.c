/* test_rope_scaling.c — the rope_scaling types yarn and longrope and GPT-J's
 * interleaved pairs, in closed form:
 *   - YaRN (Peng et al. 2023, arXiv:2309.00071, sec. 3.2; HF
 *     modeling_rope_utils.py _compute_yarn_parameters): the correction dims
 *     d(b) = r·ln(L/(2πb)) / (2 ln θ) of beta_fast and beta_slow, floored /
 *     ceiled (truncate) into [0, r − 1], the ramp (j − low)/(high − low)
 *     clamped to [0, 1], inv_freq = θ^(−2j/r)·((ramp)/s + (1 − ramp)):
 *     extrapolation below low, interpolation (/ s) from high on;
 *   - the attention factors of config.json: 0.1·ln(s) + 1, the mscale ratio,
 *     LongRoPE's sqrt(1 + ln(s)/ln(L));
 *   - LongRoPE: inv_freq = 1/(f_j·θ^(2j/r)), f = short_factor up to L
 *     tokens, long_factor beyond;
 *   - GPT-J's pairs (2j, 2j + 1) turn like rotate-half pairs (j, j + r/2)
 *     of the permuted vector;
 *   - family E (ag_head_linearize_ex) gives the pass's probabilities on
 *     the yarn / longrope / gptj folders, and refuses a yarn rope without
 *     its ag_rope_extra.
 * Run from the repository root (the model folders of tests/data/models/arch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom/access.h"
#include "attngeom/model.h"
#include "attngeom/stability.h"
#include "kernel/attention_kernel.h"

TestSuite(rope_scaling);

/* d(b) of YaRN: the dim whose wavelength makes b turns over L tokens. */
static double correction_dim(double b, int r, double theta, double L)
{
    return r * log(L / (2 * M_PI * b)) / (2 * log(theta));
}

/* θ = 10000, r = 16, L = 256, s = 4, betas 32 / 1: d(32) = 0.2098…, d(1) =
 * 3.2201…, so low = 0, high = 4: j = 0 extrapolated, 1..3 blended with ramp
 * j/4, 4..7 interpolated. */
Test(rope_scaling, yarn_bands_truncated)
{
    enum { R = 16 };
    double f[R / 2];
    ag_rope r = {.rotary_dim = R, .theta = 10000, .type = AG_ROPE_YARN, .factor = 4,
                 .original_max_positions = 256};
    ag_rope_extra x = {.attention_factor = 1, .beta_fast = 32, .beta_slow = 1, .truncate = 1};
    double lo = floor(correction_dim(32, R, 1e4, 256)), hi = ceil(correction_dim(1, R, 1e4, 256));
    cr_assert_eq(lo, 0.0);
    cr_assert_eq(hi, 4.0);
    ag_rope_inv_freq_extra(&r, &x, 10, f);
    for (int j = 0; j < R / 2; j++) {
        double base = pow(1e4, -2.0 * j / R), ramp = j < 4 ? j / 4.0 : 1.0;
        double want = base * (ramp / 4 + (1 - ramp));
        cr_expect_float_eq(f[j], want, 1e-15 * want, "j = %d: %.17g vs %.17g", j, f[j], want);
    }
    cr_expect_eq(f[0], 1.0);                     /* pure extrapolation */
    cr_expect_float_eq(f[7], pow(1e4, -14.0 / 16) / 4, 1e-17); /* pure interpolation */
    /* the public form without extra uses HF's defaults 32 / 1 and truncation */
    double g[R / 2];
    ag_rope_inv_freq(&r, 10, g);
    cr_expect_arr_eq(f, g, sizeof f);
}

/* truncate = false: the ramp runs between the unrounded d(32) and d(1). */
Test(rope_scaling, yarn_untruncated_ramp)
{
    enum { R = 16 };
    double f[R / 2];
    ag_rope r = {.rotary_dim = R, .theta = 10000, .type = AG_ROPE_YARN, .factor = 8,
                 .original_max_positions = 256};
    ag_rope_extra x = {.attention_factor = 1, .beta_fast = 32, .beta_slow = 1, .truncate = 0};
    double lo = correction_dim(32, R, 1e4, 256), hi = correction_dim(1, R, 1e4, 256);
    cr_assert(lo > 0.2 && lo < 0.21 && hi > 3.22 && hi < 3.23, "%g %g", lo, hi);
    ag_rope_inv_freq_extra(&r, &x, 10, f);
    for (int j = 0; j < R / 2; j++) {
        double ramp = fmin(1, fmax(0, (j - lo) / (hi - lo)));
        double base = pow(1e4, -2.0 * j / R), want = base * (ramp / 8 + (1 - ramp));
        cr_expect_float_eq(f[j], want, 1e-15 * want, "j = %d", j);
    }
    cr_expect_eq(f[0], 1.0);
    cr_expect(f[1] < 0.9 * pow(1e4, -2.0 / R), "dim 1 already partly interpolated");
}

/* LongRoPE: short factors up to original_max_positions tokens, long ones
 * beyond (longrope_frequency_update: seq_len > original). */
Test(rope_scaling, longrope_factors_by_length)
{
    enum { R = 8 };
    const double sh[R / 2] = {1.0, 1.05, 1.3, 1.9}, lg[R / 2] = {1.0, 1.7, 3.1, 5.5};
    double f[R / 2];
    ag_rope r = {.rotary_dim = R, .theta = 10000, .type = AG_ROPE_LONGROPE, .factor = 4,
                 .original_max_positions = 8};
    ag_rope_extra x = {.attention_factor = 1, .short_factor = sh, .long_factor = lg};
    for (size_t n = 1; n <= 9; n++) {
        ag_rope_inv_freq_extra(&r, &x, n, f);
        const double *e = n > 8 ? lg : sh;
        for (int j = 0; j < R / 2; j++) {
            double want = 1 / (e[j] * pow(1e4, 2.0 * j / R));
            cr_expect_float_eq(f[j], want, 1e-15 * want, "n = %zu j = %d", n, j);
        }
    }
}

/* Without its ag_rope_extra a yarn / longrope rope is refused by name;
 * with it, a bad attention factor or missing factor lists are. */
Test(rope_scaling, problems)
{
    char buf[200];
    ag_rope r = {.rotary_dim = 8, .theta = 10000, .type = AG_ROPE_YARN, .factor = 2,
                 .original_max_positions = 16};
    const char *why = agk_rope_problem(&r, 8, buf, sizeof buf);
    cr_assert(why && strstr(why, "yarn"), "%s", why ? why : "(accepted)");
    why = agk_rope_extra_problem(&r, NULL, 8, buf, sizeof buf);
    cr_assert(why && strstr(why, "yarn"), "%s", why ? why : "(accepted)");
    ag_rope_extra x = {.attention_factor = 1.1, .beta_fast = 32, .beta_slow = 1, .truncate = 1};
    cr_expect_null(agk_rope_extra_problem(&r, &x, 8, buf, sizeof buf));
    x.attention_factor = -1;
    cr_expect_not_null(agk_rope_extra_problem(&r, &x, 8, buf, sizeof buf));
    r.type = AG_ROPE_LONGROPE;
    x.attention_factor = 1;
    why = agk_rope_extra_problem(&r, &x, 8, buf, sizeof buf);
    cr_expect(why && strstr(why, "short_factor"), "%s", why ? why : "(accepted)");
}

/* GPT-J's pair (2j, 2j + 1) is the rotate-half pair (j, j + r/2) of the
 * vector with those columns moved: rotating x in pairs equals permuting,
 * rotating half-wise, permuting back. Partial: dims >= r untouched. */
Test(rope_scaling, interleaved_pairs)
{
    enum { N = 5, HD = 10, RD = 6 };
    double inv[RD / 2], cs[N * RD / 2], sn[N * RD / 2], a[N * HD], b[N * HD];
    ag_rope r = {.rotary_dim = RD, .theta = 100};
    ag_rope_inv_freq(&r, N, inv);
    agk_rope_tables_f64(inv, RD, N, cs, sn);
    for (int i = 0; i < N * HD; i++)
        a[i] = sin(1.0 + 0.7 * i);
    for (int i = 0; i < N; i++) /* b: a's pairs moved to (j, j + RD/2) */
        for (int c = 0; c < HD; c++)
            b[i * HD + c] = c >= RD ? a[i * HD + c]
                            : a[i * HD + (c < RD / 2 ? 2 * c : 2 * (c - RD / 2) + 1)];
    agk_rope_apply_pairs_f64(a, N, HD, 1, HD, RD, cs, sn, 1);
    agk_rope_apply_f64(b, N, HD, 1, HD, RD, cs, sn, 1);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < HD; c++) {
            int src = c >= RD ? c : c < RD / 2 ? 2 * c : 2 * (c - RD / 2) + 1;
            cr_expect_eq(a[i * HD + src], b[i * HD + c], "row %d col %d", i, c);
        }
    /* the position-0 row is unrotated (angle 0) */
    cr_expect_float_eq(a[0], sin(1.0), 1e-15);
}

/* config.json's attention factors and lengths as modeling_rope_utils.py
 * derives them. */
Test(rope_scaling, config_attention_factors)
{
    struct {
        const char *dir;
        ag_rope_type type;
        double af, factor;
        int original, truncate, interleaved;
    } cases[] = {
        {"llama-yarn", AG_ROPE_YARN, 0.1 * log(4) + 1, 4, 256, 1, 0},
        {"qwen2-yarn", AG_ROPE_YARN, (0.1 * log(8) + 1) / (0.05 * log(8) + 1), 8, 64, 0, 0},
        {"phi3-longrope", AG_ROPE_LONGROPE, sqrt(1 + log(4) / log(8)), 4, 8, 0, 0},
        {"gptj", AG_ROPE_DEFAULT, 0, 0, 0, 0, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/data/models/arch/%s", cases[k].dir);
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
        const ag_model_config *g = ag_model_get_config(m);
        cr_expect_eq(g->rope.type, cases[k].type, "%s", dir);
        cr_expect_float_eq(g->rope_extra.attention_factor, cases[k].af, 1e-15, "%s: %.17g",
                           dir, g->rope_extra.attention_factor);
        cr_expect_eq(g->rope_extra.interleaved, cases[k].interleaved, "%s", dir);
        if (cases[k].type != AG_ROPE_DEFAULT) {
            cr_expect_float_eq(g->rope.factor, cases[k].factor, 1e-15, "%s", dir);
            cr_expect_eq(g->rope.original_max_positions, cases[k].original, "%s", dir);
        }
        if (cases[k].type == AG_ROPE_YARN)
            cr_expect_eq(g->rope_extra.truncate, cases[k].truncate, "%s", dir);
        if (cases[k].interleaved) /* GPT-J: rotary_dim 4 of head_dim 8 */
            cr_expect_eq(g->rope.rotary_dim, 4);
        ag_model_free(m);
    }
}

/* ---- family E on the pass's heads --------------------------------------- */

typedef struct {
    const ag_model *m;
    int checked;
} fam_e;

/* Every head of the layer through family E's linearisation: the same
 * probabilities as the pass (f64), with the model's rope_extra (yarn,
 * longrope) or none (GPT-J, whose pairs ag_model_attn_weights permutes);
 * and a yarn / longrope rope without it is refused by name. */
static int fam_e_layer(const ag_layer_view *v, void *user)
{
    fam_e *c = user;
    const ag_model_config *g = ag_model_get_config(c->m);
    ag_attn_weights w;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(c->m, v->layer, &w, &err), AG_OK, "%s", err.message);
    ag_rope_extra x = g->rope_extra;
    x.interleaved = 0;
    ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
    ex.rope = &x;
    int scaled = g->rope.type == AG_ROPE_YARN || g->rope.type == AG_ROPE_LONGROPE;
    for (int h = 0; h < v->n_head; h++) {
        ag_head_input in;
        ag_attn_weights_head_input(&w, v->x, v->n, v->d, h, &in);
        ag_head_lin *L = NULL;
        int rc = ag_head_linearize_ex(&in, scaled ? &ex : NULL, &L, &err);
        cr_assert_eq(rc, AG_OK, "layer %d head %d: %s", v->layer, h, err.message);
        const double *A = ag_head_lin_attention(L), *P = v->attn + (size_t)h * v->n * v->n;
        for (size_t i = 0; i < v->n * v->n; i++)
            cr_expect_float_eq(A[i], P[i], 1e-12, "layer %d head %d entry %zu", v->layer, h, i);
        ag_head_lin_free(L);
        if (scaled) { /* the ag_rope alone cannot say yarn's frequencies */
            rc = ag_head_linearize(&in, &L, &err);
            cr_expect_eq(rc, AG_EINVAL);
            cr_expect(strstr(err.message, g->rope.type == AG_ROPE_YARN ? "yarn" : "longrope"),
                      "%s", err.message);
        } else { /* GPT-J's pairs are not taken as a flag */
            x = g->rope_extra;
            rc = ag_head_linearize_ex(&in, &ex, &L, &err);
            cr_expect_eq(rc, AG_EINVAL);
            cr_expect(strstr(err.message, "interleaved"), "%s", err.message);
        }
    }
    ag_attn_weights_free(&w);
    c->checked++;
    return 0;
}

static void family_e_matches(const char *name, size_t n)
{
    char dir[256];
    snprintf(dir, sizeof dir, "tests/data/models/arch/%s", name);
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    int32_t ids[16];
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)(3 + 7 * i % 70);
    fam_e c = {m, 0};
    cr_assert_eq(ag_model_forward(m, ids, n, AG_PRECISION_F64, fam_e_layer, &c, NULL, &err), AG_OK,
                 "%s", err.message);
    cr_expect_eq(c.checked, ag_model_get_config(m)->n_layer);
    ag_model_free(m);
}

Test(rope_scaling, family_e_yarn) { family_e_matches("llama-yarn", 12); }
Test(rope_scaling, family_e_longrope_long) { family_e_matches("phi3-longrope", 12); }
Test(rope_scaling, family_e_longrope_short) { family_e_matches("phi3-longrope-short", 6); }
Test(rope_scaling, family_e_gptj) { family_e_matches("gptj", 10); }
