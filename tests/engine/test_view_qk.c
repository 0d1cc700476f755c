/* test_view_qk.c — the q and k rows a pass hands its layer callback with
 * the scores (ag_layer_view.q, .k, ag_forward_options.want_qk): every
 * allowed score is scale·q_i·k_j of them, for plain, grouped-query (its kv
 * head's k), rotary (rotate-half and GPT-J's interleaved pairs), QK-norm and
 * OPT's pre-scaled q heads, in f64 to rounding and in f32 to float rounding;
 * family K's form keys from them (ag_lens_metrics_qk) are the ones
 * ag_lens_metrics finds by projecting the head input itself. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "attngeom.h"

#define ARCH_DIR "tests/data/models/arch"

typedef struct {
    const ag_model_config *g;
    double worst;    /* max |s − c·q·k| / max(1, |s|) over allowed entries */
    size_t checked;  /* allowed entries seen */
    int layers, no_qk;
} qk_check;

static int check_layer(const ag_layer_view *v, void *user)
{
    qk_check *c = user;
    c->layers++;
    if (!v->q || !v->k || !v->scores || v->head_dim != c->g->head_dim) {
        c->no_qk++;
        return 0;
    }
    /* OPT scales q itself (scale_query): the kernel's scale is then 1 */
    double scale = c->g->scale_query ? 1
                   : c->g->attn_scale / (c->g->scale_by_inverse_layer ? v->layer + 1 : 1);
    size_t n = v->n, hd = (size_t)v->head_dim;
    for (size_t h = 0; h < (size_t)v->n_head; h++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double s = v->scores[(h * n + i) * n + j], dot = 0;
                if (s == -INFINITY)
                    continue;
                for (size_t t = 0; t < hd; t++)
                    dot += v->q[(h * n + i) * hd + t] * v->k[(h * n + j) * hd + t];
                double e = fabs(s - scale * dot) / fmax(1, fabs(s));
                c->worst = e > c->worst ? e : c->worst;
                c->checked++;
            }
    return 0;
}

static void check_arch(const char *name, ag_precision prec, double tol)
{
    char dir[256];
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_error err = {0};
    ag_model *m = NULL;
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", name, err.message);
    qk_check c = {.g = ag_model_get_config(m)};
    int32_t ids[11] = {3, 17, 5, 42, 8, 8, 23, 1, 30, 12, 7};
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = prec;
    o.want_scores = o.want_qk = 1;
    cr_assert_eq(ag_model_forward_ex(m, ids, 11, &o, check_layer, &c, NULL, &err), AG_OK, "%s: %s",
                 name, err.message);
    cr_assert_eq(c.layers, c.g->n_layer, "%s: every layer's callback", name);
    cr_assert_eq(c.no_qk, 0, "%s: a view without q and k", name);
    cr_assert_gt(c.checked, (size_t)c.g->n_layer * c.g->n_head * 11, "%s: allowed entries", name);
    cr_expect_leq(c.worst, tol, "%s (%s): a score differs from scale·q·k by %g (relative)", name,
                  prec == AG_PRECISION_F64 ? "f64" : "f32", c.worst);
    ag_model_free(m);
}

Test(view_qk, scores_are_scaled_dot_products_of_q_and_k)
{
    /* plain, GQA + RoPE, QK-norm + GQA, interleaved RoPE, pre-scaled q */
    const char *names[] = {"opt", "llama3", "qwen3", "gptj", "mistral-window"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        check_arch(names[i], AG_PRECISION_F64, 1e-13);
        /* f32: s and q·k are each float products of hd terms */
        check_arch(names[i], AG_PRECISION_F32, 1e-5);
    }
}

/* q and k only when asked for (want_qk): the scores alone (attention
 * --scores, a normaliser's run) do not pay for their copies. */
Test(view_qk, none_without_want_qk)
{
    ag_error err = {0};
    ag_model *m = NULL;
    cr_assert_eq(ag_model_load(ARCH_DIR "/llama3", &m, &err), AG_OK, "%s", err.message);
    int32_t ids[4] = {1, 2, 3, 4};
    for (int scores = 0; scores < 2; scores++) {
        qk_check c = {.g = ag_model_get_config(m)};
        ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
        o.want_scores = scores;
        cr_assert_eq(ag_model_forward_ex(m, ids, 4, &o, check_layer, &c, NULL, &err), AG_OK,
                     "%s", err.message);
        cr_assert_eq(c.no_qk, c.g->n_layer, "q and k come only with want_qk");
    }
    ag_model_free(m);
}
