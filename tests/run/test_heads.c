/* test_heads.c — attngeom/run.h, the per-head work: ag_run_analyze against
 * the metrics of the forward pass's own attention and inputs (bit for bit),
 * the selection it honours, ag_run_heads's first error for any thread count,
 * ag_run_attention's heads in layer order, ag_run_matrix on C-ordered,
 * Fortran-ordered and transposed views of the same matrices, and
 * ag_run_weights on a model's layer against the same layer's tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

#define TINY_GPT2 "models/tiny-gpt2"

static const int32_t ids[] = {464, 3290, 318, 257, 1332};
enum { NTOK = 5 };

/* Same values, bit for bit, and the same identity, rows and columns. */
static void same_record(const ag_record *got, const ag_record *want, int layer)
{
    cr_assert_eq(got->layer, layer);
    cr_assert_eq(got->head, want->head);
    cr_assert_eq(got->text, want->text);
    cr_assert(got->rows == want->rows && got->cols == want->cols);
    for (int m = 0; m < AG_M_COUNT; m++) {
        cr_assert_eq(got->kind[m], want->kind[m], "%s", ag_metric_name((ag_metric)m));
        if (want->kind[m] >= AG_V_NUMBER)
            cr_assert(memcmp(&got->value[m], &want->value[m], sizeof(double)) == 0,
                      "layer %d head %d %s: %.17g vs %.17g", layer, want->head,
                      ag_metric_name((ag_metric)m), got->value[m], want->value[m]);
    }
}

static ag_run_options *options(int threads, const int *layers, size_t nl, const int *heads,
                               size_t nh)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "layers", layers, nl, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "heads", heads, nh, &err), AG_OK);
    return o;
}

/* ---- analyze ------------------------------------------------------------ */

/* The records analyze must give, computed on the forward pass's own view:
 * the matrix metrics of the head's attention and its stability on the
 * layer's input X (GQA-grouped weights, ag_attn_weights_head_input). */
typedef struct {
    const ag_model *m;
    const ag_metric_set *sel;
    const int *layers, *heads;
    size_t nl, nh;
    ag_record *want; /* (nl * nh) */
} expected;

static int expect_layer(const ag_layer_view *v, void *user)
{
    expected *e = user;
    for (size_t l = 0; l < e->nl; l++) {
        if (e->layers[l] != v->layer)
            continue;
        ag_attn_weights w = {0};
        ag_error err = {0};
        cr_assert_eq(ag_model_attn_weights(e->m, v->layer, &w, &err), AG_OK);
        for (size_t k = 0; k < e->nh; k++) {
            int h = e->heads[k];
            ag_record *r = &e->want[l * e->nh + k];
            ag_record_init(r, v->layer, h, v->n, v->n);
            r->text = 4;
            cr_assert_eq(ag_matrix_metrics(v->attn + (size_t)h * v->n * v->n, v->n, v->n, e->sel,
                                           r, &err), AG_OK, "%s", err.message);
            ag_head_input in;
            ag_attn_weights_head_input(&w, v->x, v->n, v->d, h, &in);
            ag_stability_options so = AG_STABILITY_OPTIONS_DEFAULT;
            cr_assert_eq(ag_stability_metrics(&in, &so, e->sel, r, &err), AG_OK, "%s", err.message);
        }
        ag_attn_weights_free(&w);
    }
    return 0;
}

Test(heads, analyze_is_the_metrics_of_the_pass)
{
    ag_model *m = NULL;
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_HEADS, "all", &sel, &err), AG_OK);
    int layers[] = {2, 0}, heads[] = {3, 1, 3}; /* any order, repeats: sorted, unique */
    int want_layers[] = {0, 2}, want_heads[] = {1, 3};
    ag_record want[4];
    expected e = {m, sel, want_layers, want_heads, 2, 2, want};
    cr_assert_eq(ag_model_forward(m, ids, NTOK, AG_PRECISION_F32, expect_layer, &e, NULL, &err),
                 AG_OK);
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = NTOK, .text = 4};
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_run_options *o = options(threads, layers, 2, heads, 3);
        ag_run_options_set_metrics(o, sel);
        ag_record_list *list = NULL;
        cr_assert_eq(ag_run_analyze(m, &in, o, NULL, &list, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_record_list_count(list), 4);
        for (size_t k = 0; k < 4; k++)
            same_record(ag_record_list_get(list, k), &want[k], want[k].layer);
        ag_record_list_free(list);
        ag_run_options_free(o);
    }
    /* a head outside the model, and no model */
    int far = 4;
    ag_run_options *o = options(1, NULL, 0, &far, 1);
    ag_record_list *list = (ag_record_list *)&err;
    cr_assert_eq(ag_run_analyze(m, &in, o, NULL, &list, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "heads: 4 is outside 0..3");
    cr_assert_null(list);
    cr_assert_eq(ag_run_analyze(NULL, &in, o, NULL, &list, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no model (NULL)");
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    ag_model_free(m);
}

/* ---- the heads of one layer --------------------------------------------- */

/* H heads of n x n row-stochastic attention (seeded, deterministic). */
static double *stochastic(size_t H, size_t n)
{
    double *a = malloc(H * n * n * sizeof *a);
    unsigned s = 12345;
    for (size_t r = 0; r < H * n; r++) {
        double sum = 0;
        for (size_t j = 0; j < n; j++) {
            s = s * 1103515245u + 12345u;
            sum += a[r * n + j] = 0.05 + (double)(s >> 16 & 0x7fff) / 32768.0;
        }
        for (size_t j = 0; j < n; j++)
            a[r * n + j] /= sum;
    }
    return a;
}

static void no_input(const void *ctx, int h, ag_head_input *in)
{
    (void)ctx;
    (void)h;
    (void)in;
    cr_assert_fail("family E's input asked for when the metrics do not select it");
}

Test(heads, first_error_for_any_thread_count)
{
    enum { H = 6, N = 4 };
    double *attn = stochastic(H, N);
    attn[1 * N * N + 5] = NAN; /* heads 1 and 4 fail */
    attn[4 * N * N + 2] = INFINITY;
    ag_error want = {0};
    ag_record r;
    ag_record_init(&r, 0, 1, N, N);
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, NULL, &sel, &want), AG_OK);
    int want_status = ag_matrix_metrics(attn + N * N, N, N, sel, &r, &want);
    cr_assert_neq(want_status, AG_OK);
    for (int threads = 1; threads <= 4; threads++) {
        ag_workers *w = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_workers_new(threads, &w, &err), AG_OK);
        ag_record_list *out = ag_record_list_new();
        ag_run_layer_heads L = AG_RUN_LAYER_HEADS_DEFAULT;
        L.attn = attn;
        L.n = N;
        L.n_head = H;
        L.layer = 7;
        L.input = no_input;
        int failed = -2;
        cr_assert_eq(ag_run_heads(w, &L, NULL, out, &failed, &err), want_status);
        cr_assert_eq(failed, 1, "threads %d", threads);
        cr_assert_str_eq(err.message, want.message);
        cr_assert_eq(ag_record_list_count(out), H);
        cr_assert_eq(ag_record_head(ag_record_list_get(out, 0)), 0);
        /* a selection without head 1: head 4 is the first to fail */
        ag_selection *s = NULL;
        cr_assert_eq(ag_selection_parse("5,2-4", H, "heads", &s, &err), AG_OK);
        L.heads = s;
        cr_assert_eq(ag_run_heads(w, &L, NULL, out, &failed, &err), want_status);
        cr_assert_eq(failed, 4);
        cr_assert_eq(ag_record_list_count(out), H + 4);
        cr_assert_eq(ag_record_head(ag_record_list_get(out, H)), 2);
        cr_assert_eq(ag_record_layer(ag_record_list_get(out, H)), 7);
        ag_selection_free(s);
        ag_record_list_free(out);
        ag_workers_free(w);
    }
    /* a size of 0: the struct did not start from its macro */
    ag_run_layer_heads bad = {0};
    ag_record_list *out = ag_record_list_new();
    int failed = 0;
    ag_error err = {0};
    cr_assert_eq(ag_run_heads(NULL, &bad, NULL, out, &failed, &err), AG_EINVAL);
    cr_assert_eq(failed, -1);
    cr_assert_eq(ag_record_list_count(out), 0);
    ag_record_list_free(out);
    ag_metric_set_free(sel);
    free(attn);
}

/* The float32 attention widened head by head (ag_run_layer_heads.attn_f32,
 * with and without a pool's workspaces) gives the records of its double
 * widening, bit for bit; a non-finite float is still refused by its head;
 * neither attn nor attn_f32 is AG_EINVAL before any head runs. */
Test(heads, float32_attention_widened_per_head)
{
    enum { H = 5, N = 9 };
    double *wide = stochastic(H, N);
    float *narrow = malloc(H * N * N * sizeof *narrow);
    for (size_t k = 0; k < (size_t)H * N * N; k++)
        wide[k] = narrow[k] = (float)wide[k]; /* exactly representable both ways */
    narrow[3 * N * N + 7] = NAN;              /* head 3 fails in the float copy only */
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, NULL, &sel, &err), AG_OK);
    ag_run_options *o = ag_run_options_new();
    ag_run_options_set_metrics(o, sel);
    for (int threads = 0; threads <= 3; threads++) {
        ag_workers *w = NULL;
        cr_assert(threads == 0 || ag_workers_new(threads, &w, &err) == AG_OK);
        ag_record_list *want = ag_record_list_new(), *got = ag_record_list_new();
        ag_run_layer_heads L = AG_RUN_LAYER_HEADS_DEFAULT;
        L.attn = wide;
        L.n = N;
        L.n_head = H;
        int failed = -2;
        cr_assert_eq(ag_run_heads(w, &L, o, want, &failed, &err), AG_OK, "%s", err.message);
        L.attn = NULL;
        L.attn_f32 = narrow;
        cr_assert_eq(ag_run_heads(w, &L, o, got, &failed, &err), AG_ENONFINITE);
        cr_assert_eq(failed, 3, "threads %d", threads);
        cr_assert_str_eq(err.message, "non-finite value (nan) at row 0, column 7");
        for (size_t k = 0; k < 3; k++)
            same_record(ag_record_list_get(got, k), ag_record_list_get(want, k), 0);
        ag_record_list_free(got);
        got = ag_record_list_new();
        narrow[3 * N * N + 7] = (float)wide[3 * N * N + 7];
        cr_assert_eq(ag_run_heads(w, &L, o, got, &failed, &err), AG_OK, "%s", err.message);
        narrow[3 * N * N + 7] = NAN;
        for (size_t k = 0; k < H; k++)
            same_record(ag_record_list_get(got, k), ag_record_list_get(want, k), 0);
        L.attn_f32 = NULL;
        cr_assert_eq(ag_run_heads(w, &L, o, got, &failed, &err), AG_EINVAL);
        cr_assert_eq(failed, -1);
        cr_assert_str_eq(err.message, "no attention (attn and attn_f32 NULL)");
        ag_record_list_free(want);
        ag_record_list_free(got);
        ag_workers_free(w);
    }
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    free(narrow);
    free(wide);
}

Test(heads, selected_heads_records)
{
    enum { H = 4, N = 5 };
    double *attn = stochastic(H, N);
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "all", &sel, &err), AG_OK);
    ag_run_options *o = ag_run_options_new();
    ag_run_options_set_metrics(o, sel);
    cr_assert_eq(ag_run_options_set(o, "edge_threshold", 0.2, &err), AG_OK);
    ag_selection *s = NULL;
    cr_assert_eq(ag_selection_parse("3,0", H, "heads", &s, &err), AG_OK);
    ag_run_layer_heads L = AG_RUN_LAYER_HEADS_DEFAULT;
    L.attn = attn;
    L.n = N;
    L.n_head = H;
    L.layer = 2;
    L.text = 9;
    L.heads = s;
    ag_record_list *out = ag_record_list_new();
    int failed = 0;
    cr_assert_eq(ag_run_heads(NULL, &L, o, out, &failed, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(out), 2);
    ag_matrix_options mo = AG_MATRIX_OPTIONS_DEFAULT;
    mo.edge_threshold = 0.2;
    for (size_t k = 0; k < 2; k++) {
        int h = k ? 3 : 0;
        ag_record want;
        ag_record_init(&want, 2, h, N, N);
        want.text = 9;
        cr_assert_eq(ag_matrix_metrics_ex(attn + (size_t)h * N * N, N, N, sel, &mo, &want, &err),
                     AG_OK);
        same_record(ag_record_list_get(out, k), &want, 2);
    }
    ag_record_list_free(out);
    ag_selection_free(s);
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    free(attn);
}

/* ---- attention ---------------------------------------------------------- */

typedef struct {
    int calls, layers[8];
    double *got; /* where the next layer goes */
} heads_seen;

static int take_heads(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    heads_seen *s = user;
    s->layers[s->calls++] = layer;
    memcpy(s->got, attn, heads * n * n * sizeof *attn);
    s->got += heads * n * n;
    return 0;
}

typedef struct {
    const unsigned char *layer_on, *head_on;
    double *want;
} heads_copy;

static int copy_selected(const ag_layer_view *v, void *user)
{
    heads_copy *c = user;
    if (c->layer_on[v->layer])
        c->want += ag_layer_view_copy_heads(v, c->head_on, c->want) * v->n * v->n;
    return 0;
}

static int stop_at_first(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer, (void)attn, (void)heads, (void)n, (void)user;
    return AG_EIO;
}

Test(heads, attention_selected_heads_in_layer_order)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    int layers[] = {2, 0}, heads[] = {3, 1};
    ag_run_options *o = options(2, layers, 2, heads, 2);
    enum { NN = NTOK * NTOK };
    double got[2 * 2 * NN], want[2 * 2 * NN];
    unsigned char layer_on[8] = {1, 0, 1}, head_on[4] = {0, 1, 0, 1};
    heads_copy c = {layer_on, head_on, want};
    cr_assert_eq(ag_model_forward(m, ids, NTOK, AG_PRECISION_F32, copy_selected, &c, NULL, &err),
                 AG_OK);
    heads_seen s = {.got = got};
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = NTOK, .text = -1};
    cr_assert_eq(ag_run_attention(m, &in, o, NULL, take_heads, NULL, &s, NULL, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(s.calls, 2);
    cr_assert(s.layers[0] == 0 && s.layers[1] == 2);
    cr_assert(memcmp(got, want, sizeof got) == 0);
    /* a callback's status stops the pass and is returned */
    cr_assert_eq(ag_run_attention(m, &in, o, NULL, stop_at_first, NULL, NULL, NULL, &err), AG_EIO);
    ag_run_options_free(o);
    ag_model_free(m);
}

/* ---- matrices ----------------------------------------------------------- */

static void same_lists(const ag_record_list *a, const ag_record_list *b)
{
    cr_assert_eq(ag_record_list_count(a), ag_record_list_count(b));
    for (size_t k = 0; k < ag_record_list_count(a); k++) {
        const ag_record *r = ag_record_list_get(b, k);
        same_record(ag_record_list_get(a, k), r, r->layer);
    }
}

Test(heads, matrix_views_give_the_same_bits)
{
    enum { H = 3, N = 5 };
    double *c = stochastic(H, N);
    double *f = malloc(sizeof(double) * H * N * N), *t = malloc(sizeof(double) * H * N * N);
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++) {
                f[h + H * (i + N * j)] = c[(h * N + i) * N + j]; /* Fortran order */
                t[(h * N + j) * N + i] = c[(h * N + i) * N + j]; /* each head transposed */
            }
    size_t shape[3] = {H, N, N};
    ptrdiff_t cs[3] = {N * N, N, 1}, fs[3] = {1, H, H * N}, ts[3] = {N * N, 1, N};
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "all", &sel, &err), AG_OK);
    ag_run_options *o = ag_run_options_new();
    ag_run_options_set_metrics(o, sel);
    ag_record_list *ref = NULL;
    cr_assert_eq(ag_run_matrix(c, 3, shape, cs, o, NULL, &ref, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(ref), H);
    cr_assert_eq(ag_record_head(ag_record_list_get(ref, 2)), 2);
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_workers *w = NULL;
        cr_assert_eq(ag_workers_new(threads, &w, &err), AG_OK);
        const double *data[] = {c, f, t};
        const ptrdiff_t *strides[] = {cs, fs, ts};
        for (int v = 0; v < 3; v++) {
            ag_record_list *list = NULL;
            cr_assert_eq(ag_run_matrix(data[v], 3, shape, strides[v], o, w, &list, &err), AG_OK,
                         "%s", err.message);
            same_lists(list, ref);
            ag_record_list_free(list);
        }
        ag_workers_free(w);
    }
    /* the checks come first, naming the element in C order */
    t[(2 * N + 3) * N + 1] = NAN; /* element [2, 1, 3] of the transposed view */
    ag_record_list *list = (ag_record_list *)&err;
    cr_assert_eq(ag_run_matrix(t, 3, shape, ts, o, NULL, &list, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "non-finite value (NaN) at index [2, 1, 3]");
    cr_assert_null(list);
    ag_record_list_free(ref);
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    free(c);
    free(f);
    free(t);
}

/* ---- weights ------------------------------------------------------------ */

Test(heads, weights_of_a_layer_model_or_tensors)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    int layer = 1;
    ag_run_options *o = options(3, &layer, 1, NULL, 0);
    ag_record_list *from_model = NULL, *from_tensors = NULL;
    cr_assert_eq(ag_run_weights(m, NULL, o, NULL, &from_model, &err), AG_OK, "%s", err.message);
    ag_attn_weights w = {0};
    cr_assert_eq(ag_model_attn_weights(m, 1, &w, &err), AG_OK);
    cr_assert_eq(ag_run_weights(NULL, &w, NULL, NULL, &from_tensors, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(ag_record_list_count(from_model), 4);
    cr_assert_eq(ag_record_list_count(from_tensors), 4);
    for (size_t k = 0; k < 4; k++) {
        const ag_record *a = ag_record_list_get(from_model, k),
                        *b = ag_record_list_get(from_tensors, k);
        cr_assert_eq(a->layer, 1);
        cr_assert_eq(b->layer, 0);
        cr_assert_eq(a->head, (int)k);
        cr_assert_eq(a->rows, (size_t)ag_model_get_config(m)->d_model);
        cr_assert(a->kind[AG_M_ENTROPY_MEAN] == AG_V_ABSENT);
        same_record(b, a, 0);
    }
    ag_record_list_free(from_model);
    ag_record_list *none = (ag_record_list *)&err;
    cr_assert_eq(ag_run_weights(NULL, NULL, o, NULL, &none, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no model (NULL)");
    cr_assert_null(none);
    ag_record_list_free(from_tensors);
    ag_attn_weights_free(&w);
    ag_run_options_free(o);
    ag_model_free(m);
}
