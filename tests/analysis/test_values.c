/* test_values.c — family H (docs/metrics.md, "H. Value norms"; Kobayashi
 * et al. 2020, §3) and family I (Sun et al. 2024, §2) from closed forms:
 * identity value and output maps on unit-norm tokens make the norm matrix
 * N the attention A itself; a bias that cancels token 0 gives a sink value
 * ratio of 0 and norms ‖x_j − x_0‖; hand-computed totals-variation shifts,
 * medians and counts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/access.h"
#include "attngeom/layers.h"
#include "attngeom/metrics.h"
#include "attngeom/model.h"
#include "attngeom/run.h"

TestSuite(values);

#define D 3
#define N 4

/* Unit-norm rows (n = 4, d = 3). */
static const double X[N * D] = {
    1, 0, 0,
    0.6, 0.8, 0,
    0, 0, 1,
    0.48, 0.6, 0.64, /* 0.2304 + 0.36 + 0.4096 = 1 */
};

static ag_metric_set *values_set(void)
{
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ANALYZE, "values", &sel, NULL), AG_OK);
    return sel;
}

static double value_of(const ag_record *r, ag_metric m)
{
    double v = NAN;
    cr_assert_eq(ag_record_value(r, m, &v), AG_V_NUMBER, "%s not a number", ag_metric_name(m));
    return v;
}

/* H query heads sharing kv value heads, every W_V^g = I (d x d) and every
 * W_O^h = I: wv (d, kv·d), wo (H·d, d). */
static void identity_weights(ag_attn_weights *w, int heads, int kv)
{
    memset(w, 0, sizeof *w);
    w->n_head = heads;
    w->n_kv_head = kv;
    w->head_dim = D;
    size_t sv[2] = {D, (size_t)kv * D}, so[2] = {(size_t)heads * D, D};
    cr_assert_eq(ag_array_alloc(&w->wv, 2, sv, NULL), AG_OK);
    cr_assert_eq(ag_array_alloc(&w->wo, 2, so, NULL), AG_OK);
    for (int g = 0; g < kv; g++)
        for (int k = 0; k < D; k++)
            w->wv.data[k * kv * D + g * D + k] = 1;
    for (int h = 0; h < heads; h++)
        for (int k = 0; k < D; k++)
            w->wo.data[(h * D + k) * D + k] = 1;
}

/* The attention of two heads on X, from the library's own layer. */
static void layer_attention(ag_array *attn)
{
    static const double wq[D * 6] = {0.3, -1, 0.2, 0.5, 1.1, 0,  0.7, 0.1, -0.4, 0, 0.9, 0.2,
                                     -0.6, 0.4, 1, 0.3, -0.2, 0.8};
    static const double wk[D * 6] = {1, 0.2, -0.3, 0.4, 0, 0.6,  -0.5, 0.8, 0.1, 0.9, 0.3, -1,
                                     0.2, -0.7, 0.5, 0.1, 1.2, 0.4};
    ag_attn_layer_spec s = AG_ATTN_LAYER_SPEC_DEFAULT;
    s.x = X;
    s.n = N;
    s.d = D;
    s.wq = wq;
    s.wk = wk;
    s.d_a = 6;
    s.n_head = 2;
    s.precision = AG_PRECISION_F64;
    ag_error err = {0};
    cr_assert_eq(ag_attention_layer(&s, attn, &err), AG_OK, "%s", err.message);
}

static void check_identity_layer(int kv)
{
    ag_array attn = {0};
    layer_attention(&attn);
    ag_attn_weights w;
    identity_weights(&w, 2, kv);
    ag_layer_view v = {.layer = 0, .n = N, .d = D, .n_head = 2, .x = X, .attn = attn.data};
    double Nm[2 * N * N];
    ag_error err = {0};
    cr_assert_eq(ag_run_value_norms(&w, &v, Nm, &err), AG_OK, "%s", err.message);
    for (size_t k = 0; k < 2 * N * N; k++) /* ‖x_j‖ = 1: N = A up to the norm's rounding */
        cr_assert(fabs(Nm[k] - attn.data[k]) <= 4e-16, "N %zu: %.17g vs A %.17g", k, Nm[k],
                  attn.data[k]);
    ag_metric_set *sel = values_set();
    ag_head_factors f;
    ag_attn_weights_head_factors(&w, D, 1, &f);
    double norms[N];
    cr_assert_eq(ag_value_norms(&f, NULL, X, N, norms, &err), AG_OK, "%s", err.message);
    ag_record *r = ag_record_new();
    cr_assert_eq(ag_value_metrics(attn.data + N * N, N, norms, sel, r, &err), AG_OK);
    cr_assert_float_eq(value_of(r, AG_M_VALUE_NORM_MEAN), 1.0, 4e-16);
    cr_assert_float_eq(value_of(r, AG_M_VALUE_NORM_CV), 0.0, 4e-16);
    cr_assert_float_eq(value_of(r, AG_M_SINK_VALUE_RATIO), 1.0, 4e-16);
    cr_assert_float_eq(value_of(r, AG_M_NORM_ATTENTION_SHIFT), 0.0, 4e-16);
    ag_record_free(r);
    ag_metric_set_free(sel);
    ag_attn_weights_free(&w);
    ag_array_free(&attn);
}

Test(values, identity_maps_on_unit_tokens_give_n_equal_a)
{
    check_identity_layer(2);
}

Test(values, grouped_query_heads_share_their_value_head)
{
    check_identity_layer(1); /* two query heads, one W_V: the same N = A */
}

/* W_V = I, b_V = −x_0: f(x_j) = x_j − x_0, so f(x_0) = 0 exactly. */
Test(values, a_bias_cancelling_token_0_gives_sink_value_ratio_0)
{
    ag_attn_weights w;
    identity_weights(&w, 1, 1);
    ag_head_factors f;
    ag_attn_weights_head_factors(&w, D, 0, &f);
    double bv[D] = {-X[0], -X[1], -X[2]}, norms[N];
    ag_error err = {0};
    cr_assert_eq(ag_value_norms(&f, bv, X, N, norms, &err), AG_OK, "%s", err.message);
    double want[N], mean = 0;
    for (int j = 0; j < N; j++) {
        double s = 0;
        for (int k = 0; k < D; k++)
            s += (X[j * D + k] - X[k]) * (X[j * D + k] - X[k]);
        want[j] = sqrt(s);
        mean += want[j] / N;
        cr_assert_float_eq(norms[j], want[j], 1e-15, "token %d", j);
    }
    cr_assert_eq(norms[0], 0.0);
    double A[N * N];
    for (int k = 0; k < N * N; k++)
        A[k] = 1.0 / N;
    ag_metric_set *sel = values_set();
    ag_record *r = ag_record_new();
    cr_assert_eq(ag_value_metrics(A, N, norms, sel, r, &err), AG_OK);
    cr_assert_eq(value_of(r, AG_M_SINK_VALUE_RATIO), 0.0);
    cr_assert_float_eq(value_of(r, AG_M_VALUE_NORM_MEAN), mean, 1e-15);
    ag_record_free(r);
    ag_metric_set_free(sel);
    ag_attn_weights_free(&w);
}

/* A = [[1, 0], [½, ½]], norms (1, 3): row 0 has N̄ = Ā (shift 0); row 1
 * N = (½, 3/2), N̄ = (¼, ¾) against (½, ½): ½(¼ + ¼) = ¼; mean ⅛. Mean
 * norm 2, standard deviation 1 (divisor n): cv ½, sink ratio ½. */
Test(values, hand_computed_shift_and_dispersion)
{
    const double A[4] = {1, 0, 0.5, 0.5}, norms[2] = {1, 3};
    ag_metric_set *sel = values_set();
    ag_record *r = ag_record_new();
    cr_assert_eq(ag_value_metrics(A, 2, norms, sel, r, NULL), AG_OK);
    cr_assert_eq(value_of(r, AG_M_VALUE_NORM_MEAN), 2.0);
    cr_assert_eq(value_of(r, AG_M_VALUE_NORM_CV), 0.5);
    cr_assert_eq(value_of(r, AG_M_SINK_VALUE_RATIO), 0.5);
    cr_assert_eq(value_of(r, AG_M_NORM_ATTENTION_SHIFT), 0.125);
    ag_record_free(r);
    ag_metric_set_free(sel);
}

Test(values, zero_values_are_null_and_bad_input_an_error)
{
    const double A[4] = {1, 0, 0.5, 0.5}, zero[2] = {0, 0};
    ag_metric_set *sel = values_set();
    ag_record *r = ag_record_new();
    cr_assert_eq(ag_value_metrics(A, 2, zero, sel, r, NULL), AG_OK);
    cr_assert_eq(value_of(r, AG_M_VALUE_NORM_MEAN), 0.0);
    cr_assert_eq(ag_record_value(r, AG_M_VALUE_NORM_CV, NULL), AG_V_NULL);
    cr_assert_eq(ag_record_value(r, AG_M_SINK_VALUE_RATIO, NULL), AG_V_NULL);
    cr_assert_eq(ag_record_value(r, AG_M_NORM_ATTENTION_SHIFT, NULL), AG_V_NULL);
    const double bad[4] = {1, 0, NAN, 0.5}, norms[2] = {1, 1};
    ag_error err = {0};
    cr_assert_eq(ag_value_metrics(bad, 2, norms, sel, r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "(1, 0)"), "%s", err.message);
    ag_record_free(r);
    ag_metric_set_free(sel);
}

Test(values, weights_that_do_not_fit_the_view_are_refused)
{
    ag_attn_weights w;
    identity_weights(&w, 2, 2);
    double A[3 * N * N] = {0}, Nm[3 * N * N];
    ag_layer_view v = {.layer = 5, .n = N, .d = D, .n_head = 3, .x = X, .attn = A};
    ag_error err = {0};
    cr_assert_eq(ag_run_value_norms(&w, &v, Nm, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "layer 5"), "%s", err.message);
    ag_attn_weights_free(&w);
}

/* ---- family I ------------------------------------------------------------ */

static ag_metric_set *activations_set(void)
{
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_RESIDUAL, "activations", &sel, NULL), AG_OK);
    return sel;
}

/* |h| = 1, 200, 3, 0.1, 2, 0.5: sorted 0.1 0.5 1 2 3 200, an even count,
 * median (1 + 2)/2 = 1.5 (numpy.median); top 200 at token 0, dim 1. */
Test(values, massive_activations_of_a_hand_built_state)
{
    const double h[6] = {1, -200, 3, 0.1, 2, -0.5};
    ag_metric_set *sel = activations_set();
    ag_record *r = ag_record_new();
    ag_error err = {0};
    cr_assert_eq(ag_activation_metrics(h, 2, 3, 100, 1000, sel, r, &err), AG_OK, "%s",
                 err.message);
    double v;
    cr_assert_eq(value_of(r, AG_M_ACT_TOP1), 200.0);
    cr_assert_eq(ag_record_value(r, AG_M_ACT_TOP1_TOKEN, &v), AG_V_INTEGER);
    cr_assert_eq(v, 0);
    cr_assert_eq(ag_record_value(r, AG_M_ACT_TOP1_DIM, &v), AG_V_INTEGER);
    cr_assert_eq(v, 1);
    cr_assert_eq(value_of(r, AG_M_ACT_MEDIAN), 1.5);
    cr_assert_eq(value_of(r, AG_M_ACT_RATIO), 200.0 / 1.5);
    cr_assert_eq(ag_record_value(r, AG_M_ACT_MASSIVE, &v), AG_V_INTEGER);
    cr_assert_eq(v, 0, "200 < 1000 x 1.5");
    cr_assert_eq(ag_activation_metrics(h, 2, 3, 100, 100, sel, r, &err), AG_OK);
    ag_record_value(r, AG_M_ACT_MASSIVE, &v);
    cr_assert_eq(v, 1, "200 >= 100 and >= 100 x 1.5");
    cr_assert_eq(ag_activation_metrics(h, 2, 3, 2, 1, sel, r, &err), AG_OK);
    ag_record_value(r, AG_M_ACT_MASSIVE, &v);
    cr_assert_eq(v, 3, "200, 3 and 2 are >= 2 and >= 1.5");
    ag_record_free(r);
    ag_metric_set_free(sel);
}

Test(values, odd_count_median_ties_and_errors)
{
    const double h[3] = {-5, 1, 5}; /* |h| 5 1 5: median 5, the first 5 is the top */
    ag_metric_set *sel = activations_set();
    ag_record *r = ag_record_new();
    ag_error err = {0};
    cr_assert_eq(ag_activation_metrics(h, 1, 3, 100, 1000, sel, r, &err), AG_OK);
    double v;
    cr_assert_eq(value_of(r, AG_M_ACT_MEDIAN), 5.0);
    cr_assert_eq(value_of(r, AG_M_ACT_RATIO), 1.0);
    ag_record_value(r, AG_M_ACT_TOP1_DIM, &v);
    cr_assert_eq(v, 0);
    const double zero[4] = {0, 0, 0, 0};
    cr_assert_eq(ag_activation_metrics(zero, 2, 2, 100, 1000, sel, r, &err), AG_OK);
    cr_assert_eq(ag_record_value(r, AG_M_ACT_RATIO, NULL), AG_V_NULL);
    const double bad[2] = {1, INFINITY};
    cr_assert_eq(ag_activation_metrics(bad, 1, 2, 100, 1000, sel, r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "token 0 dimension 1"), "%s", err.message);
    cr_assert_eq(ag_activation_metrics(h, 1, 3, -1, 1000, sel, r, &err), AG_EINVAL);
    ag_record_free(r);
    ag_metric_set_free(sel);
}

/* A cross-attention's 2×3 A = [[1, 0, 0], [0, ½, ½]] over three source
 * keys with norms (1, 2, 3): mean 2, standard deviation √(2/3) (divisor
 * n = 3 keys), cv √(2/3)/2, sink ratio ½; row 0 N̄ = Ā (shift 0), row 1
 * N = (0, 1, 3/2), N̄ = (0, 0.4, 0.6) against (0, ½, ½): ½(0.1 + 0.1) =
 * 0.1; mean over the 2 rows 0.05. */
Test(values, rectangular_attention_over_source_keys)
{
    const double A[6] = {1, 0, 0, 0, 0.5, 0.5}, norms[3] = {1, 2, 3};
    ag_metric_set *sel = values_set();
    ag_record *r = ag_record_new();
    ag_error err = {0};
    cr_assert_eq(ag_value_metrics_rect(A, 2, 3, norms, sel, r, &err), AG_OK, "%s", err.message);
    cr_assert_eq(value_of(r, AG_M_VALUE_NORM_MEAN), 2.0);
    cr_assert_float_eq(value_of(r, AG_M_VALUE_NORM_CV), sqrt(2.0 / 3) / 2, 1e-15);
    cr_assert_eq(value_of(r, AG_M_SINK_VALUE_RATIO), 0.5);
    cr_assert_float_eq(value_of(r, AG_M_NORM_ATTENTION_SHIFT), 0.05, 1e-15);
    cr_assert_eq(ag_value_metrics_rect(A, 0, 3, norms, sel, r, &err), AG_EINVAL);
    ag_record_free(r);
    ag_metric_set_free(sel);
}
