/* test_access.c — attngeom/access.h, the layout-free API: its objects
 * against the structs they hide (run-time counts, records, selections),
 * ag_matrix_records on every memory layout against ag_matrix_metrics on the
 * C-ordered copy (bit for bit), its checks' messages, model runs against
 * the forward pass and ag_weight_metrics, and tables of aggregates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

#define TINY_GPT2 "models/tiny-gpt2"

Test(access, counts_errors_and_selections)
{
    cr_assert_eq(ag_metric_count(), AG_M_COUNT);
    cr_assert_eq(ag_command_families("matrix"), AG_FAMILIES_MATRIX);
    cr_assert_eq(ag_command_families("analyze"), AG_FAMILIES_ANALYZE);
    cr_assert_eq(ag_command_families("layer"), AG_FAMILIES_HEADS);
    cr_assert_eq(ag_command_families("weights"), AG_FAMILIES_WEIGHTS);
    cr_assert_eq(ag_command_families("nope"), 0);
    ag_error *err = ag_error_new();
    cr_assert_eq(ag_error_status(err), AG_OK);
    cr_assert_str_empty(ag_error_message(err));
    ag_metric_set *set = NULL, ref;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_HEADS, NULL, &set, err), AG_OK);
    ag_metric_set_default(&ref);
    for (int m = 0; m < AG_M_COUNT; m++)
        cr_assert_eq(ag_metric_set_has(set, m), ref.on[m], "metric %d", m);
    cr_assert_eq(ag_metric_set_has(set, AG_M_COUNT), 0);
    cr_assert_eq(ag_metric_set_has(set, -1), 0);
    ag_metric_set_free(set);
    /* weights has none of the default families: all of its own */
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_WEIGHTS, NULL, &set, err), AG_OK);
    cr_assert_eq(ag_metric_set_count(set), (size_t)(AG_M_OV_COPYING_SCORE - AG_M_QK_SIGMA_MAX + 1));
    ag_metric_set_free(set);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "stability", &set, err), AG_EINVAL);
    cr_assert_null(set);
    cr_assert_str_eq(ag_error_message(err), "--metrics: 'stability' is not computed by this command");
    cr_assert_eq(ag_error_status(err), AG_EINVAL);
    ag_error_free(err);
    ag_metric_set_free(NULL);
}

Test(access, run_options)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    cr_assert_eq(ag_run_options_set(o, "threads", 4, &err), AG_OK);
    cr_assert_eq(ag_run_options_set(o, "threads", 0, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "option threads: 0 is out of range");
    cr_assert_eq(ag_run_options_set(o, "threads", 1.5, &err), AG_EINVAL);
    cr_assert_eq(ag_run_options_set(o, "precision", 16, &err), AG_EINVAL);
    cr_assert_eq(ag_run_options_set(o, "edge_threshold", NAN, &err), AG_EINVAL);
    cr_assert_eq(ag_run_options_set(o, "epsilon", 0, &err), AG_EINVAL);
    cr_assert_eq(ag_run_options_set(o, "colour", 1, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "unknown option 'colour'"), "%s", err.message);
    int bad[] = {1, -2};
    cr_assert_eq(ag_run_options_select(o, "layers", bad, 2, &err), AG_EINVAL);
    cr_assert_eq(ag_run_options_select(o, "rows", bad, 1, &err), AG_EINVAL);
    ag_run_options_free(o);
    ag_run_options_free(NULL);
}

/* A row-stochastic (L, H, n, n) array, entries from a fixed recurrence. */
static double *stochastic(size_t count, size_t n)
{
    double *a = malloc(count * n * n * sizeof *a);
    unsigned long s = 12345;
    for (size_t r = 0; r < count * n; r++) {
        double sum = 0;
        for (size_t c = 0; c < n; c++) {
            s = s * 6364136223846793005UL + 1442695040888963407UL;
            sum += a[r * n + c] = 0.05 + (double)(s >> 11) / 9007199254740992.0;
        }
        for (size_t c = 0; c < n; c++)
            a[r * n + c] /= sum;
    }
    return a;
}

/* Every record of list equals ag_matrix_metrics on the C-ordered matrix
 * (layer, head) of c (L, H, n, n), bit for bit. */
static void expect_records(const ag_record_list *list, const double *c, size_t L, size_t H,
                           size_t n, const ag_metric_set *sel)
{
    cr_assert_eq(ag_record_list_count(list), L * H);
    cr_assert_null(ag_record_list_get(list, L * H));
    for (size_t i = 0; i < L * H; i++) {
        const ag_record *r = ag_record_list_get(list, i);
        ag_record want;
        ag_error err = {0};
        ag_record_init(&want, (int)(i / H), (int)(i % H), n, n);
        cr_assert_eq(ag_matrix_metrics(c + i * n * n, n, n, sel, &want, &err), AG_OK);
        cr_assert_eq(ag_record_layer(r), (int)(i / H));
        cr_assert_eq(ag_record_head(r), (int)(i % H));
        cr_assert_eq(ag_record_text(r), -1);
        cr_assert_eq(ag_record_rows(r), n);
        cr_assert_eq(ag_record_cols(r), n);
        for (int m = 0; m < AG_M_COUNT; m++) {
            double v;
            cr_assert_eq(ag_record_value(r, m, &v), want.kind[m], "matrix %zu metric %d", i, m);
            if (want.kind[m] >= AG_V_NUMBER)
                cr_assert(memcmp(&v, &want.value[m], sizeof v) == 0, "matrix %zu %s: %.17g vs %.17g",
                          i, ag_metric_name((ag_metric)m), v, want.value[m]);
        }
    }
}

Test(access, matrix_records_every_layout)
{
    enum { L = 2, H = 3, N = 5 };
    double *c = stochastic(L * H, N);
    double *f = malloc(sizeof(double) * L * H * N * N); /* Fortran order */
    size_t shape[4] = {L, H, N, N};
    for (size_t l = 0; l < L; l++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < N; i++)
                for (size_t j = 0; j < N; j++)
                    f[l + L * (h + H * (i + N * j))] = c[((l * H + h) * N + i) * N + j];
    ag_metric_set *sel = NULL;
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "all", &sel, &err), AG_OK);
    ptrdiff_t cs[4] = {H * N * N, N * N, N, 1}, fs[4] = {1, L, L * H, L * H * N};
    for (int threads = 1; threads <= 3; threads += 2) {
        cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
        ag_record_list *list = NULL;
        cr_assert_eq(ag_matrix_records(c, 4, shape, cs, sel, o, &list, &err), AG_OK, "%s", err.message);
        expect_records(list, c, L, H, N, sel);
        ag_record_list_free(list);
        cr_assert_eq(ag_matrix_records(f, 4, shape, fs, sel, o, &list, &err), AG_OK, "%s", err.message);
        expect_records(list, c, L, H, N, sel);
        ag_record_list_free(list);
    }
    ag_metric_set_free(sel);
    ag_run_options_free(o);
    free(c);
    free(f);
}

Test(access, matrix_checks)
{
    double a[6] = {0.5, 0.5, 1, 0, NAN, 1};
    size_t shape[2] = {3, 2}, flat[1] = {6}, empty[2] = {0, 2};
    ptrdiff_t st[2] = {2, 1}, rev[2] = {-2, -1};
    ag_error err = {0};
    cr_assert_eq(ag_matrices_check(a, 2, shape, st, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "non-finite value (NaN) at index [2, 0]");
    cr_assert_eq(ag_matrices_check(a + 5, 2, shape, rev, &err), AG_ENONFINITE);
    cr_assert_str_eq(err.message, "non-finite value (NaN) at index [0, 1]");
    cr_assert_eq(ag_matrices_check(a, 1, flat, st, &err), AG_ESHAPE);
    cr_assert_str_eq(err.message, "1-D array of shape (6,); expected 2-D [n,m], 3-D [H,n,m] or 4-D [L,H,n,m]");
    cr_assert_eq(ag_matrices_check(a, 2, empty, st, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "empty array of shape (0, 2)");
    ag_metric_set *sel = NULL;
    ag_record_list *list = (ag_record_list *)&err; /* must be reset */
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, NULL, &sel, &err), AG_OK);
    cr_assert_eq(ag_matrix_records(a, 2, shape, st, sel, NULL, &list, &err), AG_ENONFINITE);
    cr_assert_null(list);
    ag_metric_set_free(sel);
}

/* The forward pass's attention of layer l, head h copied by a callback. */
typedef struct {
    int layer, head;
    double *out;
} grab;

static int grab_head(const ag_layer_view *v, void *user)
{
    grab *g = user;
    if (v->layer == g->layer)
        memcpy(g->out, v->attn + (size_t)g->head * v->n * v->n, v->n * v->n * sizeof(double));
    return 0;
}

Test(access, model_attention_analyze_weights)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    long nl = 0, nh = 0;
    cr_assert_eq(ag_model_dim(m, "n_layer", &nl, &err), AG_OK);
    cr_assert_eq(ag_model_dim(m, "n_head", &nh, &err), AG_OK);
    cr_assert_eq(ag_model_dim(m, "colour", &nh, &err), AG_ENOTFOUND);
    cr_assert_str_eq(ag_model_type(m), "gpt2");
    int32_t ids[] = {464, 3290, 318, 257, 1332};
    size_t n = 5, sl, sh;
    ag_run_options *o = ag_run_options_new();
    int layer = 2, heads[] = {3, 1, 3};
    cr_assert_eq(ag_run_options_select(o, "layers", &layer, 1, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "heads", heads, 3, &err), AG_OK);
    cr_assert_eq(ag_model_selected(m, o, &sl, &sh, &err), AG_OK);
    cr_assert(sl == 1 && sh == 2);
    double attn[2 * 25], want[25];
    cr_assert_eq(ag_model_attention_into(m, ids, n, o, attn, NULL, &err), AG_OK, "%s", err.message);
    grab g = {2, 3, want};
    cr_assert_eq(ag_model_forward(m, ids, n, AG_PRECISION_F32, grab_head, &g, NULL, &err), AG_OK);
    cr_assert(memcmp(attn + 25, want, sizeof want) == 0, "head 3 differs from the forward pass");
    /* analyze: the matrix metrics of that head's attention */
    ag_metric_set *sel = NULL;
    ag_record_list *list = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_HEADS, NULL, &sel, &err), AG_OK);
    cr_assert_eq(ag_model_analyze(m, ids, n, 7, sel, o, &list, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(list), 2);
    const ag_record *r = ag_record_list_get(list, 1);
    ag_record rec;
    ag_record_init(&rec, 2, 3, n, n);
    cr_assert_eq(ag_matrix_metrics(want, n, n, sel, &rec, &err), AG_OK);
    cr_assert(ag_record_layer(r) == 2 && ag_record_head(r) == 3 && ag_record_text(r) == 7);
    double v;
    cr_assert_eq(ag_record_value(r, AG_M_ENTROPY_MEAN, &v), AG_V_NUMBER);
    cr_assert(v == rec.value[AG_M_ENTROPY_MEAN]);
    ag_record_list_free(list);
    ag_metric_set_free(sel);
    /* out-of-range selections name the model's limit */
    int far = 9;
    cr_assert_eq(ag_run_options_select(o, "heads", &far, 1, &err), AG_OK);
    cr_assert_eq(ag_model_attention_into(m, ids, n, o, attn, NULL, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "heads: 9 is outside 0..3");
    /* weights: every head of every layer */
    cr_assert_eq(ag_run_options_select(o, "heads", NULL, 0, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "layers", NULL, 0, &err), AG_OK);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_WEIGHTS, NULL, &sel, &err), AG_OK);
    cr_assert_eq(ag_model_weight_records(m, sel, o, &list, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(list), (size_t)(nl * nh));
    cr_assert_eq(ag_record_rows(ag_record_list_get(list, 5)), 128);
    cr_assert_eq(ag_record_value(ag_record_list_get(list, 5), AG_M_ENTROPY_MEAN, NULL), AG_V_ABSENT);
    ag_record_list_free(list);
    ag_metric_set_free(sel);
    ag_run_options_free(o);
    ag_model_free(m);
}

Test(access, aggregate_tables)
{
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_create("", 0.95, 0, &a, &err), AG_OK, "%s", err.message);
    const char *keys[] = {"model", "x", "flag"};
    const char *texts[] = {"m", NULL, NULL};
    int kinds[] = {AG_CELL_TEXT, AG_CELL_NUMBER, AG_CELL_BOOL};
    for (int k = 1; k <= 3; k++) {
        double values[] = {0, k, k != 2};
        cr_assert_eq(ag_aggregate_add_cells(a, 3, keys, kinds, values, texts, &err), AG_OK,
                     "%s", err.message);
    }
    int bad[] = {AG_CELL_MEAN_CI, AG_CELL_NUMBER, AG_CELL_BOOL};
    cr_assert_eq(ag_aggregate_add_cells(a, 3, keys, bad, NULL, NULL, &err), AG_EINVAL);
    ag_table *t = NULL;
    cr_assert_eq(ag_aggregate_result(a, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_table_rows(t), 1);
    cr_assert_str_eq(ag_table_key(t, 0), "unit"); /* records as units: "record" */
    cr_assert_str_eq(ag_table_key(t, 1), "n");
    double v;
    const char *s;
    cr_assert_eq(ag_table_cell(t, 0, 0, &v, &s), AG_CELL_TEXT);
    cr_assert_str_eq(s, "record");
    cr_assert_eq(ag_table_cell(t, 0, 1, &v, &s), AG_CELL_INTEGER);
    cr_assert(v == 3 && s == NULL);
    cr_assert_str_eq(ag_table_key(t, 3), "x");
    cr_assert_eq(ag_table_cell(t, 0, 3, &v, NULL), AG_CELL_NUMBER);
    cr_assert(v == 2, "mean of 1, 2, 3: %.17g", v);
    cr_assert_eq(ag_table_cell(t, 9, 9, &v, &s), AG_CELL_NULL);
    cr_assert_null(ag_table_key(t, 99));
    ag_table_delete(t);
    ag_aggregate_free(a);
    cr_assert_eq(ag_aggregate_create("a,,b", 0.95, 0, &a, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "--by 'a,,b': an empty key");
    cr_assert_null(a);
}

/* A closed binding's model arrives as NULL: refused with one message,
 * never dereferenced (it segfaulted in ag_model_selected). */
Test(access, null_model_refused)
{
    ag_error err = {0};
    ag_record_list *list = (ag_record_list *)&err; /* must be reset */
    size_t nl = 7, nh = 7;
    long v = 5;
    int32_t ids[] = {1, 2, 3};
    double attn[9];
    cr_assert_eq(ag_model_dim(NULL, "n_layer", &v, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no model (NULL)");
    cr_assert_eq(v, 5);
    cr_assert_str_eq(ag_model_type(NULL), "");
    memset(&err, 0, sizeof err);
    cr_assert_eq(ag_model_selected(NULL, NULL, &nl, &nh, &err), AG_EINVAL);
    cr_assert(nl == 0 && nh == 0 && strcmp(err.message, "no model (NULL)") == 0);
    memset(&err, 0, sizeof err);
    cr_assert_eq(ag_model_attention_into(NULL, ids, 3, NULL, attn, NULL, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no model (NULL)");
    memset(&err, 0, sizeof err);
    cr_assert_eq(ag_model_analyze(NULL, ids, 3, -1, NULL, NULL, &list, &err), AG_EINVAL);
    cr_assert(list == NULL && strcmp(err.message, "no model (NULL)") == 0);
    memset(&err, 0, sizeof err);
    list = (ag_record_list *)&err;
    cr_assert_eq(ag_model_weight_records(NULL, NULL, NULL, &list, &err), AG_EINVAL);
    cr_assert(list == NULL && strcmp(err.message, "no model (NULL)") == 0);
}

/* A pointer not aligned for a double is refused before anything is read
 * through it (UBSan: misaligned load in find_nonfinite); the same values
 * aligned are measured. */
Test(access, misaligned_data_refused)
{
    _Alignas(double) unsigned char buf[4 * sizeof(double) + 8];
    const double vals[4] = {0.25, 0.75, 0.5, 0.5};
    size_t shape[2] = {2, 2};
    ptrdiff_t st[2] = {2, 1};
    ag_error err = {0};
    char want[96];
    for (size_t off = 1; off < 8; off++) {
        memcpy(buf + off, vals, sizeof vals);
        const double *p = (const double *)(const void *)(buf + off);
        cr_assert_eq(ag_matrices_check(p, 2, shape, st, &err), AG_EINVAL, "offset %zu", off);
        snprintf(want, sizeof want, "data at %p is not aligned for float64 (8 bytes)",
                 (const void *)p);
        cr_assert_str_eq(err.message, want);
    }
    cr_assert_eq(ag_matrices_check(vals, 2, shape, st, &err), AG_OK);
    cr_assert_eq(ag_matrices_check(NULL, 2, shape, st, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no data (NULL) for an array of shape (2, 2)");
}

/* Limits the CLI had to itself, now the library's, met by the Python
 * package too: an empty or 257-byte record key, and more permutations
 * than AG_COMPARE_PERMUTATIONS_MAX. A refused record adds nothing. */
Test(access, aggregate_and_compare_limits)
{
    ag_aggregate *a = NULL, *b = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_create("", 0.95, 1, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_create("", 0.95, 1, &b, &err), AG_OK, "%s", err.message);
    char longest[AG_RECORDS_KEY_MAX + 2];
    memset(longest, 'k', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    const char *keys[2] = {"x", ""};
    int kinds[2] = {AG_CELL_NUMBER, AG_CELL_NUMBER};
    double values[2] = {1, 2};
    cr_assert_eq(ag_aggregate_add_cells(a, 2, keys, kinds, values, NULL, &err), AG_EFORMAT);
    cr_assert_str_eq(err.message, "an empty key");
    keys[1] = longest;
    cr_assert_eq(ag_aggregate_add_cells(a, 2, keys, kinds, values, NULL, &err), AG_ELIMIT);
    cr_assert_str_eq(err.message, "a key longer than 256 bytes");
    cr_assert_eq(ag_aggregate_records(a), 0);
    longest[AG_RECORDS_KEY_MAX] = '\0'; /* 256 bytes: allowed */
    for (int k = 0; k < 4; k++) {
        values[0] = k;
        cr_assert_eq(ag_aggregate_add_cells(k % 2 ? b : a, 2, keys, kinds, values, NULL, &err),
                     AG_OK, "%s", err.message);
    }
    ag_table *t = (ag_table *)&err; /* must be reset */
    cr_assert_eq(ag_compare_result(a, b, "x", 0.95, AG_COMPARE_PERMUTATIONS_MAX + 1, 1, "a", "b",
                                   &t, &err), AG_EINVAL);
    cr_assert_str_eq(err.message,
                     "--permutations takes an integer from 1 to 10000000, not '10000001'");
    cr_assert_null(t);
    ag_compare_options opt = AG_COMPARE_OPTIONS_DEFAULT;
    opt.permutations = AG_COMPARE_PERMUTATIONS_MAX;
    cr_assert_eq(ag_compare_options_check(&opt, &err), AG_OK);
    cr_assert_eq(ag_compare_result(a, b, "x", 0.95, 100, 1, "a", "b", &t, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(ag_table_rows(t), 1);
    ag_table_delete(t);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
}
