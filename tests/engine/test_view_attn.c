/* test_view_attn.c — the probabilities a pass hands its layer callback
 * (ag_layer_view.attn, .attn_f32, ag_forward_options.attn_f32): a float32
 * pass gives its own float probabilities beside their double widening, and
 * with attn_f32 those alone (attn NULL), the same bits; a float64 pass
 * ignores the option. Decoder-only, sliding-window, GQA and an
 * encoder–decoder pair (its three stacks, cross-attention rectangular). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"

#define ARCH_DIR "tests/data/models/arch"

enum { MAX_VIEWS = 64 };

/* Every view's attention of one pass, as doubles, in call order. */
typedef struct {
    double *attn[MAX_VIEWS];
    size_t count[MAX_VIEWS];
    int views, with_attn, with_f32;
    ag_precision prec;
} views;

static int keep_view(const ag_layer_view *v, void *user)
{
    views *c = user;
    cr_assert_lt(c->views, MAX_VIEWS);
    size_t count = (size_t)v->n_head * v->n * v->n_kv;
    double *a = malloc(count * sizeof *a);
    cr_assert_not_null(a);
    c->with_attn += v->attn != NULL;
    c->with_f32 += v->attn_f32 != NULL;
    if (v->attn && v->attn_f32) /* both: attn is the widening of attn_f32 */
        for (size_t k = 0; k < count; k++)
            cr_assert(v->attn[k] == (double)v->attn_f32[k], "entry %zu", k);
    for (size_t k = 0; k < count; k++)
        a[k] = v->attn ? v->attn[k] : (double)v->attn_f32[k];
    c->attn[c->views] = a;
    c->count[c->views++] = count;
    return 0;
}

static void free_views(views *c)
{
    for (int k = 0; k < c->views; k++)
        free(c->attn[k]);
}

/* One pass of the model in dir (a pair when pair), with or without the
 * option, into c. */
static void pass(const char *dir, int pair, ag_precision prec, int f32_only, views *c)
{
    static const int32_t ids[7] = {3, 17, 5, 42, 8, 8, 23};
    ag_error err = {0};
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = prec;
    o.attn_f32 = f32_only;
    memset(c, 0, sizeof *c);
    if (pair) {
        ag_seq2seq *s = NULL;
        cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s: %s", dir, err.message);
        cr_assert_eq(ag_seq2seq_forward(s, ids, 7, ids, 4, &o, keep_view, c, NULL, NULL, &err),
                     AG_OK, "%s: %s", dir, err.message);
        ag_seq2seq_free(s);
    } else {
        ag_model *m = NULL;
        cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
        cr_assert_eq(ag_model_forward_ex(m, ids, 7, &o, keep_view, c, NULL, &err), AG_OK, "%s: %s",
                     dir, err.message);
        ag_model_free(m);
    }
}

static void check(const char *name, int pair)
{
    char dir[256];
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    views full, only;
    pass(dir, pair, AG_PRECISION_F32, 0, &full);
    pass(dir, pair, AG_PRECISION_F32, 1, &only);
    cr_assert_gt(full.views, 0);
    cr_assert_eq(only.views, full.views, "%s", name);
    cr_assert_eq(full.with_attn, full.views, "%s: attn in a plain float32 pass", name);
    cr_assert_eq(full.with_f32, full.views, "%s: attn_f32 in every float32 view", name);
    cr_assert_eq(only.with_attn, 0, "%s: attn NULL with the option", name);
    cr_assert_eq(only.with_f32, only.views, "%s", name);
    for (int k = 0; k < full.views; k++) {
        cr_assert_eq(only.count[k], full.count[k]);
        cr_assert(memcmp(only.attn[k], full.attn[k], full.count[k] * sizeof(double)) == 0,
                  "%s view %d: other probabilities with the option", name, k);
    }
    views wide;
    pass(dir, pair, AG_PRECISION_F64, 1, &wide); /* the option means nothing in f64 */
    cr_assert_eq(wide.with_attn, wide.views, "%s: a float64 pass gives attn", name);
    cr_assert_eq(wide.with_f32, 0, "%s: and no float32 probabilities", name);
    free_views(&full);
    free_views(&only);
    free_views(&wide);
}

Test(view_attn, float32_probabilities_alone_are_the_same_bits)
{
    check("llama3", 0);         /* GQA, RoPE, causal */
    check("mistral-window", 0); /* a sliding window */
    check("distilbert", 0);     /* bidirectional */
    check("t5", 1);             /* encoder, decoder self and cross (7 x 4) */
}
