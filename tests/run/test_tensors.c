/* test_tensors.c — one layer's named tensors (attngeom/run.h,
 * src/run/tensors.c): read as [in, out] with X's leading 1s dropped, shape
 * checks with and without X (grouped-query K only without), the layer's
 * attention equal to ag_attention_layer's, RoPE's limit, and a head's input
 * taken from Q's and K's columns as they are. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../util/test_io_util.h"

TestSuite(tensors, .fini = tio_cleanup);

/* d = 2, d_a = 4 (2 heads of 2): wq, wk [2, 4], wkg [2, 2] (one KV head),
 * bq [4], all F64; entry k of the file's data is k / 8. */
static const char *weights_file(void)
{
    static const char header[] =
        "{\"wq\":{\"dtype\":\"F64\",\"shape\":[2,4],\"data_offsets\":[0,64]},"
        "\"wk\":{\"dtype\":\"F64\",\"shape\":[2,4],\"data_offsets\":[64,128]},"
        "\"wkg\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[128,160]},"
        "\"bq\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[160,192]}}";
    double data[24];
    for (int k = 0; k < 24; k++)
        data[k] = k / 8.0;
    const char *path = tio_path("w.safetensors");
    cr_assert_eq(tio_write_safetensors(path, header, data, sizeof data), 0);
    return path;
}

/* X [1, 3, 2]: three tokens of width 2. */
static const char *x_file(void)
{
    const double x[6] = {1, 0, 0, 1, 0.5, -0.5};
    size_t shape[3] = {1, 3, 2};
    const char *path = tio_path("x.npy");
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 3, shape, x), 0);
    return path;
}

static ag_run_layer_spec spec_of(const char *x, const char *w, const char *k)
{
    ag_run_layer_spec s = AG_RUN_LAYER_SPEC_DEFAULT;
    s.x = x, s.weights = w, s.q = "wq", s.k = k, s.q_bias = "bq", s.heads = 2;
    s.causal = 1;
    s.precision = AG_PRECISION_F64;
    return s;
}

Test(tensors, load_reads_and_squeezes)
{
    ag_run_layer_spec s = spec_of(x_file(), weights_file(), "wk");
    ag_run_tensors t;
    ag_error err = {0};
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_OK, "%s", err.message);
    cr_expect_eq(t.x.ndim, 2);
    cr_expect(t.x.shape[0] == 3 && t.x.shape[1] == 2);
    cr_expect(t.q.shape[0] == 2 && t.q.shape[1] == 4);
    cr_expect_eq(t.q.data[5], 5 / 8.0);
    cr_expect_eq(t.k.data[0], 8 / 8.0);
    cr_expect_eq(t.bq.data[3], 23 / 8.0);
    cr_expect_null(t.v.data);
    ag_run_tensors_free(&t);
}

Test(tensors, grouped_query_k_only_without_x)
{
    const char *w = weights_file();
    ag_run_layer_spec s = spec_of(x_file(), w, "wkg");
    ag_run_tensors t;
    ag_error err = {0};
    char want[600];
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_ESHAPE);
    snprintf(want, sizeof want, "%s: tensor 'wkg' has shape (2, 2) as [in, out]; expected "
             "(2, 4)", w);
    cr_expect_str_eq(err.message, want);
    ag_run_tensors_free(&t);
    s.x = NULL; /* weights --weights: one KV head for two query heads */
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_OK, "%s", err.message);
    cr_expect_eq(t.k.shape[1], 2);
    ag_run_tensors_free(&t);
    s.heads = 3;
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_ESHAPE);
    snprintf(want, sizeof want, "%s: tensor 'wq': width 4 is not divisible by --heads 3", w);
    cr_expect_str_eq(err.message, want);
    ag_run_tensors_free(&t);
}

Test(tensors, attention_is_the_layer_kernels)
{
    ag_run_layer_spec s = spec_of(x_file(), weights_file(), "wk");
    s.rope_theta = 100; /* RoPE over the whole head (d_h = 2) */
    ag_run_tensors t;
    ag_array got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_run_layer_attention(&s, &t, &got, &err), AG_OK, "%s", err.message);
    ag_attn_layer_spec a = AG_ATTN_LAYER_SPEC_DEFAULT;
    a.x = t.x.data, a.n = 3, a.d = 2, a.wq = t.q.data, a.wk = t.k.data, a.bq = t.bq.data;
    a.d_a = 4, a.n_head = 2, a.causal = 1, a.precision = AG_PRECISION_F64;
    a.rope = (ag_rope){.rotary_dim = 2, .theta = 100};
    cr_assert_eq(ag_attention_layer(&a, &want, &err), AG_OK, "%s", err.message);
    cr_assert(got.ndim == 3 && got.shape[0] == 2 && got.shape[1] == 3 && got.shape[2] == 3);
    cr_expect_eq(memcmp(got.data, want.data, 18 * sizeof(double)), 0);
    cr_expect_eq(got.data[0], 1.0); /* the first query sees itself only */
    cr_expect_eq(got.data[1], 0.0);
    ag_array_free(&got);
    ag_array_free(&want);

    s.rotary_dim = 4;
    ag_rope r;
    cr_expect_eq(ag_run_layer_rope(&s, 2, &r, &err), AG_EINVAL);
    cr_expect_str_eq(err.message, "--rotary-dim 4 exceeds the head dim 2");
    cr_expect_eq(ag_run_layer_attention(&s, &t, &got, &err), AG_EINVAL);
    ag_run_tensors_free(&t);
}

Test(tensors, head_input_takes_the_columns_as_they_are)
{
    ag_run_layer_spec s = spec_of(x_file(), weights_file(), "wk");
    s.softcap = 30, s.window = 2;
    ag_run_tensors t;
    ag_error err = {0};
    cr_assert_eq(ag_run_tensors_load(&s, &t, &err), AG_OK, "%s", err.message);
    ag_head_input in;
    ag_run_layer_head_input(&s, &t, 1, &in);
    cr_expect(in.x == t.x.data && in.n == 3 && in.d == 2 && in.d_h == 2);
    cr_expect(in.wq == t.q.data + 2 && in.ldq == 4);
    cr_expect(in.wk == t.k.data + 2 && in.ldk == 4);
    cr_expect(in.bq == t.bq.data + 2 && in.bk == NULL);
    cr_expect(in.causal == 1 && in.window == 2 && in.softcap == 30 && in.scale == 0);
    cr_expect_eq(in.rope.rotary_dim, 0);
    ag_run_tensors_free(&t);
}

/* ag_run_layer: a record per head whose entropy is that of the head's
 * attention as ag_matrix_metrics_ex measures it; a missing X refused. */
Test(tensors, layer_records_per_head)
{
    ag_run_layer_spec s = spec_of(x_file(), weights_file(), "wk");
    ag_array attn = {0};
    ag_record_list *recs = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_run_layer(&s, NULL, NULL, &attn, &recs, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(recs), 2);
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "entropy_mean", &sel, &err), AG_OK);
    ag_record_list *one = ag_record_list_new();
    ag_matrix_options opt = AG_MATRIX_OPTIONS_DEFAULT;
    for (int h = 0; h < 2; h++) {
        const ag_record *r = ag_record_list_get(recs, (size_t)h);
        ag_record *want = ag_record_list_add(one, &err);
        ag_record_init(want, 0, h, 3, 3);
        cr_assert_eq(ag_matrix_metrics_ex(attn.data + 9 * h, 3, 3, sel, &opt, want, &err), AG_OK);
        double a, b;
        ag_record_value(r, AG_M_ENTROPY_MEAN, &a);
        ag_record_value(want, AG_M_ENTROPY_MEAN, &b);
        cr_expect_eq(ag_record_head(r), h);
        cr_expect_eq(a, b, "head %d: entropy %.17g, expected %.17g", h, a, b);
    }
    ag_record_list_free(one);
    ag_metric_set_free(sel);
    ag_record_list_free(recs);
    ag_array_free(&attn);
    s.x = NULL;
    cr_expect_eq(ag_run_layer(&s, NULL, NULL, NULL, &recs, &err), AG_EINVAL);
    cr_expect_str_eq(err.message, "ag_run_layer: needs x");
    cr_expect_null(recs);
}
