/* test_contributions.c — attngeom/contributions.h and ag_run_contributions:
 * the terms rebuild the engine's own attention-block output (ag_block_fn)
 * on every architecture folder of tests/data in f64; identity attention
 * gives ALTI = I and mixing 0 (closed form); the run's matrices and
 * composition equal the layer function's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

/* ---- reconstruction against the pass ------------------------------------ */

typedef struct {
    const ag_model *m;
    const char *name;
    double *h, *y;     /* (n, d) block input, reconstruction */
    double max_err;    /* max |y_rebuilt − y_engine| / max(1, max |y_engine|) */
    double max_row;    /* max |Σ_j C_ij − 1| */
    int layers, blocks;
} rec_ctx;

static int rec_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    rec_ctx *c = user;
    if (!c->h) {
        c->h = calloc(n * d, sizeof *c->h);
        c->y = calloc(n * d, sizeof *c->y);
    }
    if (index < ag_model_get_config(c->m)->n_layer)
        memcpy(c->h, h, n * d * sizeof *h);
    return 0;
}

static int rec_layer(const ag_layer_view *v, void *user)
{
    rec_ctx *c = user;
    ag_error err = {0};
    double *C = malloc(v->n * v->n * sizeof *C), *mix = malloc(v->n * sizeof *mix);
    ag_contrib_output out = {.alti = C, .mixing = mix, .y = c->y};
    cr_assert_eq(ag_run_contributions_layer(c->m, v, c->h, &out, &err), AG_OK, "%s layer %d: %s", c->name,
                 v->layer, err.message);
    for (size_t i = 0; i < v->n; i++) {
        double s = 0;
        for (size_t j = 0; j < v->n; j++) {
            cr_assert(C[i * v->n + j] >= 0);
            s += C[i * v->n + j];
        }
        c->max_row = fmax(c->max_row, fabs(s - 1));
        cr_assert(mix[i] >= 0 && mix[i] <= 1);
    }
    free(C);
    free(mix);
    c->layers++;
    return 0;
}

static int rec_block(int layer, size_t n, size_t d, const double *y, void *user)
{
    rec_ctx *c = user;
    double top = 1, err = 0;
    for (size_t k = 0; k < n * d; k++)
        top = fmax(top, fabs(y[k]));
    for (size_t k = 0; k < n * d; k++)
        err = fmax(err, fabs(c->y[k] - y[k]) / top);
    c->max_err = fmax(c->max_err, err);
    c->blocks++;
    return 0;
}

/* A deterministic input for m: ids, or pixels / features of its shape. */
static int run_pass(const ag_model *m, rec_ctx *c, ag_precision precision, ag_error *err)
{
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = precision;
    o.hidden_fn = rec_hidden;
    o.hidden_user = c;
    o.block_fn = rec_block;
    o.block_user = c;
    const ag_model_config *g = ag_model_get_config(m);
    size_t shape[3] = {0};
    int rank = ag_model_input_shape(m, shape);
    if (rank == 0) {
        int32_t ids[12];
        size_t n = (size_t)(g->max_tokens < 12 ? g->max_tokens : 12);
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)((7 * i + 3) % (size_t)g->vocab_size);
        return ag_model_forward_ex(m, ids, n, &o, rec_layer, c, NULL, err);
    }
    if (rank == 2 && shape[1] > 16)
        shape[1] = 16; /* Whisper: 16 frames, 8 positions */
    size_t cnt = shape[0] * shape[1] * (rank == 3 ? shape[2] : 1);
    double *v = malloc(cnt * sizeof *v);
    for (size_t k = 0; k < cnt; k++)
        v[k] = sin(0.37 * (double)k) * 0.8;
    int rc = ag_model_forward_values(m, v, rank, shape, &o, rec_layer, c, NULL, err);
    free(v);
    return rc;
}

Test(contributions, rebuild_block_output_every_architecture)
{
    const char *dirs[] = {
        "models/tiny-gpt2", "tests/data/models/tiny-bert", "tests/data/models/tiny-vit",
        "tests/data/models/tiny-vit-cls", "tests/data/models/tiny-whisper",
        "tests/data/models/arch/distilbert", "tests/data/models/arch/gemma",
        "tests/data/models/arch/gemma2", "tests/data/models/arch/gpt-neox-parallel",
        "tests/data/models/arch/gpt-neox-sequential", "tests/data/models/arch/llama-dynamic",
        "tests/data/models/arch/llama-linear", "tests/data/models/arch/llama3",
        "tests/data/models/arch/mistral-window", "tests/data/models/arch/opt",
        "tests/data/models/arch/opt-350m-like", "tests/data/models/arch/phi3",
        "tests/data/models/arch/qwen2-window", "tests/data/models/arch/roberta",
        "tests/data/models/arch/xlm-roberta", "tests/data/models/arch/qwen3",
        "tests/data/models/arch/olmo2", "tests/data/models/arch/gemma3"};
    for (size_t k = 0; k < sizeof dirs / sizeof *dirs; k++) {
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_model_load(dirs[k], &m, &err), AG_OK, "%s: %s", dirs[k], err.message);
        rec_ctx c = {.m = m, .name = dirs[k]};
        cr_assert_eq(run_pass(m, &c, AG_PRECISION_F64, &err), AG_OK, "%s: %s", dirs[k], err.message);
        int L = ag_model_get_config(m)->n_layer;
        cr_assert_eq(c.layers, L, "%s", dirs[k]);
        cr_assert_eq(c.blocks, L, "%s", dirs[k]);
        cr_log_info("%s: max |rebuilt y - engine y| %.3g, max |row sum - 1| %.3g", dirs[k],
                    c.max_err, c.max_row);
        cr_assert_lt(c.max_err, 1e-12, "%s: %g", dirs[k], c.max_err);
        cr_assert_lt(c.max_row, 1e-12, "%s: %g", dirs[k], c.max_row);
        free(c.h);
        free(c.y);
        ag_model_free(m);
    }
}

/* The float32 pass: its activations, decomposed in double, give its y up
 * to the rounding of its last float32 operations (the output projection's
 * sums and the add or norm, a few ulps of 2^-24 ≈ 6e-8): within 1e-6 of
 * max(1, |y|), above 0. */
Test(contributions, rebuild_block_output_f32)
{
    const char *dirs[] = {"models/tiny-gpt2", "tests/data/models/tiny-bert",
                          "tests/data/models/arch/gemma2", "tests/data/models/arch/gpt-neox-parallel"};
    for (size_t k = 0; k < sizeof dirs / sizeof *dirs; k++) {
        ag_model *m = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_model_load(dirs[k], &m, &err), AG_OK, "%s: %s", dirs[k], err.message);
        rec_ctx c = {.m = m, .name = dirs[k]};
        cr_assert_eq(run_pass(m, &c, AG_PRECISION_F32, &err), AG_OK, "%s: %s", dirs[k], err.message);
        cr_log_info("%s f32: max |rebuilt y - engine y| %.3g", dirs[k], c.max_err);
        cr_assert_lt(c.max_err, 1e-6, "%s: %g", dirs[k], c.max_err);
        cr_assert_gt(c.max_err, 0, "%s: the f32 pass rounds", dirs[k]);
        free(c.h);
        free(c.y);
        ag_model_free(m);
    }
}

/* ---- closed forms --------------------------------------------------------- */

static ag_contrib_input input_of(size_t n, size_t d, const double *attn, const double *x,
                                 const double *h, const ag_attn_weights *w,
                                 const ag_block_params *p)
{
    ag_contrib_input in = AG_CONTRIB_INPUT_DEFAULT;
    in.n = n;
    in.d = d;
    in.attn = attn;
    in.x = x;
    in.h = h;
    in.w = w;
    in.p = p;
    return in;
}

/* n = 3 tokens, d = 4, one head of width 2, A = I: T_i(x_j) = 0 for j ≠ i,
 * so with b_O = 0 every y_i = T_i(x_i), C = I exactly and r_i = 0, for any
 * wiring. */
static void identity_case(ag_after_norm after, ag_norm_kind kind)
{
    enum { n = 3, d = 4, hd = 2 };
    double attn[n * n] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double x[n * d], h[n * d], wv[d * hd], wo[hd * d], gamma[d] = {1.5, -0.5, 2, 0.25},
           beta[d] = {0.1, 0.2, -0.3, 0.4};
    for (int k = 0; k < n * d; k++) {
        x[k] = sin(1.3 * k + 0.2);
        h[k] = cos(0.7 * k) - 0.1;
    }
    for (int k = 0; k < d * hd; k++) {
        wv[k] = sin(0.9 * k + 1);
        wo[k] = cos(1.7 * k);
    }
    ag_attn_weights w = {.n_head = 1, .n_kv_head = 1, .head_dim = hd,
                         .wv = {.data = wv, .ndim = 2, .shape = {d, hd}},
                         .wo = {.data = wo, .ndim = 2, .shape = {hd, d}}};
    ag_block_params p = {.after = after, .norm = kind, .eps = 1e-5};
    if (after != AG_AFTER_NONE)
        p.gamma = (ag_array){.data = gamma, .ndim = 1, .shape = {d}};
    if (after != AG_AFTER_NONE && kind == AG_NORM_LAYER)
        p.beta = (ag_array){.data = beta, .ndim = 1, .shape = {d}};
    ag_contrib_input in = input_of(n, d, attn, x, h, &w, &p);
    double C[n * n], N[n * n], mix[n];
    ag_contrib_output out = {.alti = C, .norms = N, .mixing = mix};
    ag_error err = {0};
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_OK, "%s", err.message);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(mix[i], 0.0);
        for (int j = 0; j < n; j++) {
            cr_assert_eq(C[i * n + j], i == j ? 1.0 : 0.0, "C[%d][%d] = %g", i, j, C[i * n + j]);
            if (i != j)
                cr_assert_eq(N[i * n + j], 0.0);
            else
                cr_assert_gt(N[i * n + j], 0.0);
        }
    }
}

Test(contributions, identity_attention_gives_identity_alti)
{
    identity_case(AG_AFTER_NONE, AG_NORM_LAYER);
    identity_case(AG_AFTER_SUM, AG_NORM_LAYER);
    identity_case(AG_AFTER_SUM, AG_NORM_RMS);
    identity_case(AG_AFTER_BRANCH, AG_NORM_RMS_1P);
}

/* Uniform attention over two tokens, W_V W_O = I, x = h = e_0, e_1, no
 * norm, no bias: T_0(x_0) = ½e_0 + e_0 = (1.5, 0), T_0(x_1) = (0, 0.5),
 * y_0 = (1.5, 0.5): ‖y‖₁ = 2, ‖y − T_0(x_0)‖₁ = 0.5, ‖y − T_0(x_1)‖₁ = 1.5,
 * so C_0 = (1.5, 0.5)/2; N_0 = (1.5, 0.5); r_0 = 0.5/(0.5 + 1.5). */
Test(contributions, two_tokens_by_hand)
{
    double attn[4] = {0.5, 0.5, 0.5, 0.5}, x[4] = {1, 0, 0, 1}, I[4] = {1, 0, 0, 1};
    ag_attn_weights w = {.n_head = 1, .n_kv_head = 1, .head_dim = 2,
                         .wv = {.data = I, .ndim = 2, .shape = {2, 2}},
                         .wo = {.data = I, .ndim = 2, .shape = {2, 2}}};
    ag_block_params p = {.after = AG_AFTER_NONE};
    ag_contrib_input in = input_of(2, 2, attn, x, x, &w, &p);
    double C[4], N[4], mix[2];
    ag_contrib_output out = {.alti = C, .norms = N, .mixing = mix};
    ag_error err = {0};
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_OK, "%s", err.message);
    cr_assert_float_eq(C[0], 0.75, 1e-15);
    cr_assert_float_eq(C[1], 0.25, 1e-15);
    cr_assert_float_eq(C[2], 0.25, 1e-15);
    cr_assert_float_eq(C[3], 0.75, 1e-15);
    cr_assert_float_eq(N[0], 1.5, 1e-15);
    cr_assert_float_eq(N[1], 0.5, 1e-15);
    cr_assert_float_eq(mix[0], 0.25, 1e-15);
}

/* ---- the run ---------------------------------------------------------------- */

typedef struct {
    double *C;   /* (L, n, n) each layer's M */
    double *R;   /* (L, n, n) each layer's composition */
    int count;
} run_ctx;

static int take(const ag_run_contrib_view *v, void *user, ag_error *err)
{
    run_ctx *c = user;
    size_t nn = v->n * v->n;
    memcpy(c->C + (size_t)v->layer * nn, v->M, nn * sizeof *v->M);
    if (v->R)
        memcpy(c->R + (size_t)v->layer * nn, v->R, nn * sizeof *v->R);
    c->count++;
    return AG_OK;
}

/* tiny-gpt2: R_0 = C_0, R_l = C_l R_{l−1} (checked by hand here), each R_l
 * row-stochastic and lower-triangular; records one per layer; norms-res
 * refuses to compose. */
Test(contributions, run_composes_alti)
{
    static const int32_t ids[] = {464, 2068, 7586, 21831, 11687, 625};
    enum { N = 6 };
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load("models/tiny-gpt2", &m, &err), AG_OK, "%s", err.message);
    int L = ag_model_get_config(m)->n_layer;
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = N;
    ag_run_options *o = ag_run_options_new();
    cr_assert_eq(ag_run_options_set(o, "precision", 64, &err), AG_OK, "%s", err.message);
    run_ctx c = {.C = calloc((size_t)L * N * N, sizeof(double)),
                 .R = calloc((size_t)L * N * N, sizeof(double))};
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_ALTI, 1, take, &c, &recs, &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(c.count, L);
    cr_assert_eq(ag_record_list_count(recs), (size_t)L);
    for (int l = 0; l < L; l++) {
        const double *C = c.C + (size_t)l * N * N, *R = c.R + (size_t)l * N * N;
        for (int i = 0; i < N; i++) {
            double s = 0;
            for (int j = 0; j < N; j++) {
                double want = C[i * N + j];
                if (l > 0) {
                    want = 0;
                    for (int k = 0; k < N; k++)
                        want += C[i * N + k] * c.R[(size_t)(l - 1) * N * N + k * N + j];
                }
                cr_assert_float_eq(R[i * N + j], want, 1e-14, "l %d (%d, %d)", l, i, j);
                if (j > i)
                    cr_assert_eq(R[i * N + j], 0.0);
                s += R[i * N + j];
            }
            cr_assert_float_eq(s, 1.0, 1e-12);
        }
    }
    ag_record_list_free(recs);
    recs = NULL;
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_NORMS_RES, 1, NULL, NULL, &recs,
                                      &err),
                 AG_EINVAL);
    cr_assert(strstr(err.message, "--method alti"), "%s", err.message);
    free(c.C);
    free(c.R);
    ag_run_options_free(o);
    ag_model_free(m);
}

/* Refusals, named: a NaN in the attention; a row whose terms cancel (d = 1:
 * T_0(x_0) = 0·f + h_0 = 1, T_0(x_1) = ½·(−2) = −1, y_0 = 0, every c_0j < 0);
 * weights that do not fit d; a size of 0 (ABI rule). */
Test(contributions, errors)
{
    double one = 1, attn[4] = {0.5, 0.5, 0.5, 0.5}, x[2] = {0, -2}, h[2] = {1, 0}, C[4];
    ag_attn_weights w = {.n_head = 1, .n_kv_head = 1, .head_dim = 1,
                         .wv = {.data = &one, .ndim = 2, .shape = {1, 1}},
                         .wo = {.data = &one, .ndim = 2, .shape = {1, 1}}};
    ag_block_params p = {.after = AG_AFTER_NONE};
    ag_contrib_input in = input_of(2, 1, attn, x, h, &w, &p);
    ag_contrib_output out = {.alti = C};
    ag_error err = {0};
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "row 0: no source contributes"), "%s", err.message);
    double bad[4] = {0.5, NAN, 0.5, 0.5};
    in.attn = bad;
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "attention holds a NaN"), "%s", err.message);
    in.attn = attn;
    in.d = 2;
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "do not fit"), "%s", err.message);
    in.d = 1;
    in.size = 0;
    cr_assert_eq(ag_contributions_layer(&in, &out, &err), AG_EINVAL);
    cr_assert_eq(ag_contributions_layer(NULL, &out, &err), AG_EINVAL);
}

/* ---- --method norms and flow through ag_run_contributions ---------------- */

typedef struct {
    double N[2 * 6 * 6]; /* the selected heads' N of the selected layer */
    double A[4 * 6 * 6]; /* that layer's attention, every head */
    size_t heads, n;
    int layer, calls, mixing;
} norms_seen;

static int keep_norms(const ag_run_contrib_view *v, void *user, ag_error *err)
{
    (void)err;
    norms_seen *s = user;
    s->heads = v->heads;
    s->n = v->n;
    s->layer = v->layer;
    s->mixing = v->mixing != NULL;
    s->calls++;
    memcpy(s->N, v->M, v->heads * v->n * v->n * sizeof *v->M);
    return AG_OK;
}

static int keep_attention(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer;
    memcpy(((norms_seen *)user)->A, attn, heads * n * n * sizeof *attn);
    return 0;
}

/* tiny-gpt2, layer 2, heads 1 and 3: the view holds those heads' N^h in
 * order, with N^h_ij = A^h_ij ‖f_h(x_j)‖ (Kobayashi et al. 2020, §3): each
 * column j of N^h is A^h's column j times one norm, here N_jj / A_jj (the
 * diagonal of causal attention is positive), with A from ag_run_attention;
 * one record (2, h) per head; no mixing. Flow: one matrix per layer, no
 * mixing, and an input above flow_max_tokens refused by name. */
Test(contributions, run_norms_and_flow)
{
    static const int32_t ids[] = {464, 2068, 7586, 21831, 11687, 625};
    static const int heads[] = {1, 3}, layer[] = {2};
    enum { N = 6 };
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load("models/tiny-gpt2", &m, &err), AG_OK, "%s", err.message);
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = N;
    ag_run_options *o = ag_run_options_new();
    cr_assert_eq(ag_run_options_set(o, "precision", 64, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_run_options_select(o, "layers", layer, 1, &err), AG_OK, "%s", err.message);
    norms_seen s = {0};
    cr_assert_eq(ag_run_attention(m, &in, o, NULL, keep_attention, NULL, &s, NULL, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(ag_run_options_select(o, "heads", heads, 2, &err), AG_OK, "%s", err.message);
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_NORMS, 0, keep_norms, &s, &recs,
                                      &err),
                 AG_OK, "%s", err.message);
    cr_assert(s.calls == 1 && s.layer == 2 && s.heads == 2 && s.n == N && !s.mixing);
    cr_assert_eq(ag_record_list_count(recs), 2);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ag_record_head(ag_record_list_at(recs, (size_t)k)), heads[k]);
        const double *Nh = s.N + (size_t)k * N * N, *Ah = s.A + (size_t)heads[k] * N * N;
        for (int j = 0; j < N; j++) {
            double norm = Nh[j * N + j] / Ah[j * N + j];
            cr_assert(norm > 0);
            for (int i = 0; i < N; i++)
                cr_assert_float_eq(Nh[i * N + j], Ah[i * N + j] * norm, 1e-14 * norm,
                                   "head %d (%d, %d)", heads[k], i, j);
        }
    }
    ag_record_list_free(recs);
    recs = NULL;
    s.calls = 0;
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_FLOW, 0, keep_norms, &s, &recs,
                                      &err),
                 AG_OK, "%s", err.message);
    cr_assert(s.calls == 1 && s.heads == 1 && !s.mixing);
    cr_assert_eq(ag_record_list_count(recs), 1);
    ag_record_list_free(recs);
    recs = NULL;
    cr_assert_eq(ag_run_options_set(o, "flow_max_tokens", 5, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_run_options_get(o, "flow_max_tokens"), 5);
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_FLOW, 0, NULL, NULL, &recs,
                                      &err),
                 AG_ELIMIT);
    cr_assert(strstr(err.message, "6 tokens: attention flow takes at most 5"), "%s", err.message);
    ag_record_list_free(recs);
    recs = NULL;
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, AG_CONTRIB_FLOW, 1, NULL, NULL, &recs, &err),
                 AG_EINVAL);
    cr_assert_eq(ag_run_contributions(m, &in, o, NULL, (ag_contrib_method)4, 0, NULL, NULL, &recs,
                                      &err),
                 AG_EINVAL);
    ag_record_list_free(recs);
    ag_run_options_free(o);
    ag_model_free(m);
}
