/* test_layers.c — attngeom/run.h, per-layer and across-layer work of one
 * input on models/tiny-gpt2: ag_run_residual equals ag_residual_metrics on
 * the pass's hidden states, ag_run_rollout a direct ag_rollout_step chain,
 * ag_run_similarity ag_js_distance between the heads' attention, ag_run_flow
 * ag_attention_flow of the mixed attention (and keeps flow's invariants on
 * every architecture folder of tests/data/models/arch) — to the
 * last bit, for any thread count. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define TINY_GPT2 "models/tiny-gpt2"

static const int32_t ids[] = {464, 2068, 7586, 21831, 11687, 625};
enum { N = sizeof ids / sizeof *ids };

static ag_model *load(void)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    return m;
}

static ag_run_input input(long text)
{
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = N;
    in.text = text;
    return in;
}

/* Options with `threads` and the layers (heads) idx[n] selected (n 0: all). */
static ag_run_options *options(int threads, const int *layers, size_t nl, const int *heads,
                               size_t nh)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    cr_assert_not_null(o);
    cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "layers", layers, nl, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "heads", heads, nh, &err), AG_OK);
    return o;
}

/* Every layer's attention (n_layer, n_head, N, N), as the pass hands it. */
typedef struct {
    double *attn;
    size_t per_layer;
} grab;

static int grab_layer(const ag_layer_view *v, void *user)
{
    grab *g = user;
    memcpy(g->attn + (size_t)v->layer * g->per_layer, v->attn, g->per_layer * sizeof(double));
    return 0;
}

static void forward(const ag_model *m, double *attn, double *hidden)
{
    const ag_model_config *c = ag_model_get_config(m);
    grab g = {attn, (size_t)c->n_head * N * N};
    ag_error err = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    cr_assert_eq(ag_model_forward_ex(m, ids, N, &fo, attn ? grab_layer : NULL, &g, hidden, &err),
                 AG_OK, "%s", err.message);
}

static void assert_same_record(const ag_record *got, const ag_record *want)
{
    for (int k = 0; k < ag_metric_count(); k++) {
        double a = 0, b = 0;
        cr_assert_eq(ag_record_value(got, k, &a), ag_record_value(want, k, &b), "%s",
                     ag_metric_name(k));
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "%s: %.17g != %.17g", ag_metric_name(k), a, b);
    }
}

Test(layers, residual_equals_metrics_of_the_hidden_states)
{
    ag_model *m = load();
    const ag_model_config *c = ag_model_get_config(m);
    size_t d = (size_t)c->d_model;
    double *hidden = malloc(((size_t)c->n_layer + 1) * N * d * sizeof *hidden);
    forward(m, NULL, hidden);
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_RESIDUAL, NULL, &sel, &err), AG_OK);
    const int layers[] = {4, 0, 2}; /* 0..n_layer: the last is after the final norm */
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_run_options *o = options(threads, layers, 3, NULL, 0);
        ag_run_input in = input(7);
        ag_record_list *out = NULL;
        cr_assert_eq(ag_run_residual(m, &in, o, NULL, &out, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_record_list_count(out), 3);
        for (size_t k = 0; k < 3; k++) {
            int l = (int[]){0, 2, 4}[k];
            const ag_record *r = ag_record_list_get(out, k);
            cr_assert_eq(ag_record_layer(r), l);
            cr_assert_eq(ag_record_head(r), -1);
            cr_assert_eq(ag_record_text(r), 7);
            cr_assert_eq(ag_record_rows(r), N);
            cr_assert_eq(ag_record_cols(r), d);
            ag_record *want = ag_record_new();
            ag_record_init(want, l, -1, N, d);
            cr_assert_eq(ag_residual_metrics(hidden + (size_t)l * N * d, N, d, sel, want, &err),
                         AG_OK);
            assert_same_record(r, want);
            ag_record_free(want);
        }
        ag_record_list_free(out);
        ag_run_options_free(o);
    }
    ag_metric_set_free(sel);
    free(hidden);
    ag_model_free(m);
}

/* What rollout's callback saw: the R_l in order. */
typedef struct {
    double R[8][N * N];
    int layer[8];
    int count, fail_at;
} seen;

static int keep(int layer, const double *M, size_t n, void *user, ag_error *err)
{
    seen *s = user;
    cr_assert_eq(n, N);
    if (layer == s->fail_at)
        return ag_error_set(err, AG_EIO, "cannot keep R_%d", layer);
    memcpy(s->R[s->count], M, N * N * sizeof *M);
    s->layer[s->count++] = layer;
    return AG_OK;
}

/* Every layer's attention of m on ids (the caller frees it). */
static double *all_attention(const ag_model *m)
{
    const ag_model_config *c = ag_model_get_config(m);
    double *attn = malloc((size_t)c->n_layer * c->n_head * N * N * sizeof *attn);
    cr_assert_not_null(attn);
    forward(m, attn, NULL);
    return attn;
}

Test(layers, rollout_equals_a_direct_chain_and_stops_after_the_last_layer)
{
    ag_model *m = load();
    const ag_model_config *c = ag_model_get_config(m);
    size_t per_layer = (size_t)c->n_head * N * N;
    double *attn = all_attention(m);
    ag_error err = {0};
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ROLLOUT, NULL, &sel, &err), AG_OK);
    const int layers[] = {2, 1};
    ag_run_options *o = options(2, layers, 2, NULL, 0);
    ag_run_input in = input(-1);
    ag_record_list *out = NULL;
    seen s = {.fail_at = -1};
    cr_assert_eq(ag_run_rollout(m, &in, o, NULL, keep, &s, &out, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(s.count, 2); /* layer 3 is never composed: the pass stopped at 2 */
    cr_assert_eq(ag_record_list_count(out), 2);
    double R[N * N];
    for (int l = 0, k = 0; l <= 2; l++) {
        cr_assert_eq(ag_rollout_step(R, attn + (size_t)l * per_layer, c->n_head, N, l == 0, &err),
                     AG_OK);
        if (l == 0)
            continue;
        cr_assert_eq(s.layer[k], l);
        cr_assert_eq(memcmp(s.R[k], R, sizeof R), 0, "R_%d", l);
        const ag_record *r = ag_record_list_get(out, (size_t)k);
        cr_assert_eq(ag_record_layer(r), l);
        cr_assert_eq(ag_record_head(r), -1);
        ag_record *want = ag_record_new();
        ag_record_init(want, l, -1, N, N);
        cr_assert_eq(ag_matrix_metrics(R, N, N, sel, want, &err), AG_OK);
        assert_same_record(r, want);
        ag_record_free(want);
        k++;
    }
    /* the callback's failure stops the run with its own status and message,
     * after the record of that layer */
    ag_record_list_free(out);
    out = NULL;
    s = (seen){.fail_at = 2};
    cr_assert_eq(ag_run_rollout(m, &in, o, NULL, keep, &s, &out, &err), AG_EIO);
    cr_assert_str_eq(err.message, "cannot keep R_2");
    cr_assert_eq(s.count, 1);
    cr_assert_eq(ag_record_list_count(out), 2);
    ag_record_list_free(out);
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    free(attn);
    ag_model_free(m);
}

Test(layers, similarity_is_the_js_distance_of_the_selected_heads)
{
    ag_model *m = load();
    const ag_model_config *c = ag_model_get_config(m);
    size_t per_layer = (size_t)c->n_head * N * N, nn = (size_t)N * N;
    double *attn = malloc((size_t)c->n_layer * per_layer * sizeof *attn);
    forward(m, attn, NULL);
    const int layers[] = {3, 1}, heads[] = {2, 0};
    ag_error err = {0};
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_run_options *o = options(threads, layers, 2, heads, 2);
        int *pairs = NULL;
        size_t K = 0;
        cr_assert_eq(ag_run_similarity_heads(m, o, &pairs, &K, &err), AG_OK, "%s", err.message);
        cr_assert_eq(K, 4);
        const int want_pairs[] = {1, 0, 1, 2, 3, 0, 3, 2}; /* layer-major */
        cr_assert_eq(memcmp(pairs, want_pairs, sizeof want_pairs), 0);
        double S[16];
        ag_run_input in = input(-1);
        cr_assert_eq(ag_run_similarity(m, &in, o, NULL, S, &err), AG_OK, "%s", err.message);
        for (size_t a = 0; a < K; a++)
            for (size_t b = 0; b < K; b++) {
                const double *A = attn + (size_t)pairs[2 * a] * per_layer + pairs[2 * a + 1] * nn;
                const double *B = attn + (size_t)pairs[2 * b] * per_layer + pairs[2 * b + 1] * nn;
                double want = 0;
                if (a != b)
                    cr_assert_eq(ag_js_distance(a < b ? A : B, a < b ? B : A, N, N, &want, &err),
                                 AG_OK);
                cr_assert_eq(memcmp(&S[a * K + b], &want, sizeof want), 0, "S[%zu][%zu]", a, b);
            }
        cr_assert(S[0 * K + 1] > 0 && S[0 * K + 1] < 0.8326);
        ag_free(pairs);
        ag_run_options_free(o);
    }
    free(attn);
    ag_model_free(m);
}

Test(layers, errors)
{
    ag_model *m = load();
    ag_error err = {0};
    ag_run_input in = input(-1);
    ag_record_list *out = NULL;
    /* residual ranges over the n_layer + 1 hidden states, rollout over the layers */
    ag_run_options *o = options(1, (int[]){4}, 1, NULL, 0);
    cr_assert_eq(ag_run_residual(m, &in, o, NULL, &out, &err), AG_OK);
    cr_assert_eq(ag_run_rollout(m, &in, o, NULL, NULL, NULL, &out, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "layers: 4 is outside 0..3");
    ag_run_options_free(o);
    o = options(1, NULL, 0, (int[]){4}, 1);
    int *pairs = (int *)1;
    size_t K = 9;
    cr_assert_eq(ag_run_similarity_heads(m, o, &pairs, &K, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "heads: 4 is outside 0..3");
    cr_assert_null(pairs);
    cr_assert_eq(K, 0);
    ag_run_options_free(o);
    cr_assert_eq(ag_run_residual(NULL, &in, NULL, NULL, &out, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "no model (NULL)");
    ag_run_input none = AG_RUN_INPUT_DEFAULT, unsized = {.ids = ids, .n = N};
    cr_assert_eq(ag_run_residual(m, &none, NULL, NULL, &out, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "an input needs token ids or an input tensor");
    cr_assert_eq(ag_run_rollout(m, &unsized, NULL, NULL, NULL, NULL, &out, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_run_input"), "%s", err.message);
    cr_assert_eq(ag_record_list_count(out), 1); /* the one made above, kept */
    ag_record_list_free(out);
    ag_model_free(m);
}

/* ag_run_flow: F_l of the selected layers from the capacities ag_rollout_mix
 * makes of the pass's attention, equal to ag_attention_flow on them, the
 * same bytes for 1 and 3 threads; F_0 is Ã_0 (one edge per pair), and the
 * causal model's F_2 is lower-triangular and at least the rollout R_2. */
Test(layers, flow_equals_the_library_flow_of_the_mixed_attention)
{
    ag_model *m = load();
    const ag_model_config *c = ag_model_get_config(m);
    size_t per_layer = (size_t)c->n_head * N * N;
    double *attn = all_attention(m);
    ag_error err = {0};
    double cap[3][N * N], F[N * N], R[3][N * N];
    for (int l = 0; l < 3; l++)
        cr_assert_eq(ag_rollout_mix(attn + (size_t)l * per_layer, c->n_head, N, cap[l], &err),
                     AG_OK);
    cr_assert_eq(ag_rollout(attn, 3, c->n_head, N, R[0], &err), AG_OK);
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ROLLOUT, NULL, &sel, &err), AG_OK);
    const int layers[] = {2, 0};
    for (int threads = 1; threads <= 3; threads += 2) {
        ag_run_options *o = options(threads, layers, 2, NULL, 0);
        ag_run_input in = input(5);
        ag_record_list *out = NULL;
        seen s = {.fail_at = -1};
        cr_assert_eq(ag_run_flow(m, &in, o, NULL, keep, &s, &out, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(s.count, 2);
        cr_assert_eq(ag_record_list_count(out), 2);
        for (int k = 0; k < 2; k++) {
            int l = k ? 2 : 0;
            cr_assert_eq(s.layer[k], l);
            cr_assert_eq(ag_attention_flow(cap[0], l + 1, N, F, &err), AG_OK, "%s", err.message);
            cr_assert_eq(memcmp(s.R[k], F, sizeof F), 0, "F_%d", l);
            const ag_record *r = ag_record_list_get(out, (size_t)k);
            cr_assert_eq(ag_record_layer(r), l);
            cr_assert_eq(ag_record_text(r), 5);
            ag_record *want = ag_record_new();
            ag_record_init(want, l, -1, N, N);
            cr_assert_eq(ag_matrix_metrics(F, N, N, sel, want, &err), AG_OK);
            assert_same_record(r, want);
            ag_record_free(want);
        }
        cr_assert_eq(memcmp(s.R[0], R[0], sizeof F), 0, "F_0 = R_0 = Ã_0");
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++) {
                double f = s.R[1][i * N + j];
                cr_assert(j <= i || f == 0, "F_2[%zu][%zu] = %g above the diagonal", i, j, f);
                cr_assert(f >= R[2][i * N + j] - 1e-12 && f <= 1 + 1e-12, "F_2[%zu][%zu] = %.17g",
                          i, j, f);
            }
        ag_record_list_free(out);
        ag_run_options_free(o);
    }
    /* the callback's failure stops the run with its status and message */
    ag_run_options *o = options(1, layers, 2, NULL, 0);
    ag_run_input in = input(-1);
    seen s = {.fail_at = 0};
    ag_record_list *out = NULL;
    cr_assert_eq(ag_run_flow(m, &in, o, NULL, keep, &s, &out, &err), AG_EIO);
    cr_assert_str_eq(err.message, "cannot keep R_0");
    cr_assert_eq(ag_record_list_count(out), 1);
    cr_assert_eq(ag_run_flow(m, &in, o, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "flow: no record list (NULL)");
    ag_record_list_free(out);
    ag_run_options_free(o);
    ag_metric_set_free(sel);
    free(attn);
    ag_model_free(m);
}

/* What a flow run's or a rollout run's callback saw, by layer. */
typedef struct {
    double M[4][12 * 12];
} by_layer;

static int keep_by_layer(int layer, const double *M, size_t n, void *user, ag_error *err)
{
    (void)err;
    cr_assert(layer < 4 && n == 12);
    memcpy(((by_layer *)user)->M[layer], M, n * n * sizeof *M);
    return AG_OK;
}

/* ag_run_flow on every architecture folder of tests/data/models/arch
 * (bidirectional encoders, decoders with and without sliding windows, whose
 * pairs far apart have no path at all): against the rollout of the same
 * pass, F_0 = R_0, R_l ≤ F_l ≤ 1, F_l[i][i] ≥ ½, and a decoder's F_l is
 * lower-triangular. */
Test(layers, flow_on_every_architecture)
{
    static const char *archs[] = {"distilbert", "gemma", "gemma2", "gpt-neox-parallel",
                                  "gpt-neox-sequential", "llama-dynamic", "llama-linear",
                                  "llama3", "mistral-window", "opt", "opt-350m-like", "phi3",
                                  "qwen2-window", "roberta", "xlm-roberta"};
    static const int32_t tok[12] = {5, 17, 42, 9, 33, 21, 60, 8, 14, 50, 27, 11};
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/data/models/arch/%s", archs[a]);
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
        const ag_model_config *c = ag_model_get_config(m);
        cr_assert(c->n_layer <= 4, "%s", dir);
        ag_run_input in = AG_RUN_INPUT_DEFAULT;
        in.ids = tok;
        in.n = 12;
        ag_run_options *o = options(1, NULL, 0, NULL, 0);
        cr_assert_eq(ag_run_options_set(o, "precision", 64, &err), AG_OK);
        by_layer F, R;
        ag_record_list *out = NULL;
        cr_assert_eq(ag_run_flow(m, &in, o, NULL, keep_by_layer, &F, &out, &err), AG_OK, "%s: %s",
                     dir, err.message);
        cr_assert_eq(ag_run_rollout(m, &in, o, NULL, keep_by_layer, &R, &out, &err), AG_OK);
        cr_assert_eq(ag_record_list_count(out), 2 * (size_t)c->n_layer);
        ag_record_list_free(out);
        cr_assert_eq(memcmp(F.M[0], R.M[0], sizeof F.M[0]), 0, "%s: F_0 != R_0", dir);
        for (int l = 0; l < c->n_layer; l++)
            for (size_t k = 0; k < 12 * 12; k++) {
                size_t i = k / 12, j = k % 12;
                double f = F.M[l][k], r = R.M[l][k];
                cr_assert(f >= r - 1e-12 && f <= 1 + 1e-12, "%s: F_%d[%zu][%zu] = %.17g, R = %.17g",
                          dir, l, i, j, f, r);
                cr_assert(i != j || f >= 0.5 - 1e-12, "%s: F_%d[%zu][%zu] = %g", dir, l, i, i, f);
                cr_assert(!c->causal || j <= i || f == 0, "%s: F_%d[%zu][%zu] = %g", dir, l, i, j,
                          f);
            }
        ag_run_options_free(o);
        ag_model_free(m);
    }
}
