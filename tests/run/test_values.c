/* test_values.c — family H through the run pipeline (attngeom/run.h):
 * ag_run_analyze's value keys, for any thread count and head selection, are
 * ag_value_metrics of the pass's own attention and of ag_value_norms on the
 * layer's input X with the head's key/value head's W_V, b_V and its rows of
 * W_O (bit for bit), and ag_run_value_norms's N[h] is A[h] times those
 * norms, column by column, on a grouped-query model (llama3: 2 query heads,
 * 1 key/value head) and a model with value biases (tiny-gpt2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records

TestSuite(run_values);

enum { NTOK = 6, MAXH = 8 };

typedef struct {
    const ag_model *m;
    const ag_metric_set *sel;
    ag_record want[16][MAXH]; /* [layer][head] */
} expected;

/* What analyze must give for every head of the layer, from the view and
 * the layer's weights; and N of ag_run_value_norms checked on the way. */
static int expect_layer(const ag_layer_view *v, void *user)
{
    expected *e = user;
    ag_attn_weights w = {0};
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(e->m, v->layer, &w, &err), AG_OK);
    size_t nn = v->n * v->n;
    double *N = malloc((size_t)v->n_head * nn * sizeof *N), norms[NTOK];
    cr_assert_not_null(N);
    cr_assert_eq(ag_run_value_norms(&w, v, N, &err), AG_OK, "%s", err.message);
    for (int h = 0; h < v->n_head; h++) {
        ag_head_factors f;
        ag_attn_weights_head_factors(&w, v->d, h, &f);
        int g = h / (w.n_head / w.n_kv_head);
        const double *bv = w.bv.data ? w.bv.data + (size_t)g * (size_t)w.head_dim : NULL;
        cr_assert_eq(ag_value_norms(&f, bv, v->x, v->n, norms, &err), AG_OK, "%s", err.message);
        const double *A = v->attn + (size_t)h * nn;
        for (size_t k = 0; k < nn; k++)
            cr_assert_eq(N[(size_t)h * nn + k], A[k] * norms[k % v->n], "layer %d head %d", v->layer,
                         h);
        ag_record *r = &e->want[v->layer][h];
        ag_record_init(r, v->layer, h, v->n, v->n);
        cr_assert_eq(ag_value_metrics(A, v->n, norms, e->sel, r, &err), AG_OK);
    }
    free(N);
    ag_attn_weights_free(&w);
    return 0;
}

static void check_model(const char *dir, const int32_t *ids)
{
    ag_model *m = NULL;
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ANALYZE, "values", &sel, &err), AG_OK);
    const ag_model_config *c = ag_model_get_config(m);
    cr_assert(c->n_layer <= 16 && c->n_head <= MAXH);
    expected *e = calloc(1, sizeof *e);
    e->m = m;
    e->sel = sel;
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = AG_PRECISION_F64;
    cr_assert_eq(ag_model_forward_ex(m, ids, NTOK, &fo, expect_layer, e, NULL, &err), AG_OK);
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = NTOK;
    int last = c->n_head - 1;
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_run_options *o = ag_run_options_new();
        cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
        cr_assert_eq(ag_run_options_set(o, "precision", 64, &err), AG_OK);
        cr_assert_eq(ag_run_options_select(o, "heads", &last, 1, &err), AG_OK);
        ag_run_options_set_metrics(o, sel);
        ag_record_list *list = NULL;
        cr_assert_eq(ag_run_analyze(m, &in, o, NULL, &list, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_record_list_count(list), (size_t)c->n_layer);
        for (int l = 0; l < c->n_layer; l++) {
            const ag_record *got = ag_record_list_get(list, (size_t)l), *want = &e->want[l][last];
            cr_assert(got->layer == l && got->head == last);
            for (int k = AG_M_VALUE_NORM_MEAN; k <= AG_M_NORM_ATTENTION_SHIFT; k++) {
                cr_assert_eq(got->kind[k], AG_V_NUMBER, "%s", ag_metric_name((ag_metric)k));
                cr_assert(memcmp(&got->value[k], &want->value[k], sizeof(double)) == 0,
                          "%s layer %d %s: %.17g vs %.17g", dir, l, ag_metric_name((ag_metric)k),
                          got->value[k], want->value[k]);
            }
        }
        ag_record_list_free(list);
        ag_run_options_free(o);
    }
    free(e);
    ag_metric_set_free(sel);
    ag_model_free(m);
}

Test(run_values, analyze_gives_the_heads_value_norms_on_a_gqa_model)
{
    static const int32_t ids[NTOK] = {1, 5, 9, 17, 33, 2};
    check_model("tests/data/models/arch/llama3", ids);
}

Test(run_values, analyze_gives_the_heads_value_norms_with_value_biases)
{
    static const int32_t ids[NTOK] = {464, 3290, 318, 257, 1332, 13};
    check_model("models/tiny-gpt2", ids);
}
