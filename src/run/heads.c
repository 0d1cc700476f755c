/* heads.c — the per-head work on a model's input (attngeom/run.h,
 * "per-head work"): the records of a layer's selected heads, analyze's
 * records of one input and attention's selected heads. The CLI, Python and
 * attngeom-mpi all call these, so every command measures a head one way. */
#include <stdlib.h>

#include "run_int.h"
#include "../../analysis/analysis.h"
#include "kernel/vmath.h"
#include "base/sized_int.h"

const ag_run_options *agr_options(const ag_run_options *opt)
{
    static const ag_run_options defaults = AGR_OPTIONS_DEFAULT;
    return opt ? opt : &defaults;
}

int agr_metrics(const ag_run_options *opt, unsigned families, const ag_metric_set **sel,
                ag_metric_set **own, ag_error *err)
{
    *own = NULL;
    if ((*sel = agr_options(opt)->metrics) != NULL)
        return AG_OK;
    int status = ag_metric_set_new(families, NULL, own, err);
    *sel = *own;
    return status;
}

int agr_workers(ag_workers *w, const ag_run_options *opt, size_t tasks, ag_workers **use,
                ag_workers **own, ag_error *err)
{
    *own = NULL;
    *use = w;
    if (w)
        return AG_OK;
    int status = ag_run_workers(opt, tasks, own, err);
    *use = *own;
    return status;
}

int agr_model_selections(const ag_model *m, const ag_run_options *opt, ag_selection **layers,
                         ag_selection **heads, ag_error *err)
{
    *heads = NULL;
    const ag_model_config *g = ag_model_get_config(m);
    int status = ag_run_options_selection(opt, "layers", g->n_layer, layers, err);
    if (status == AG_OK)
        status = ag_run_options_selection(opt, "heads", g->n_head, heads, err);
    return status;
}

/* ---- the selected heads of one layer ------------------------------------ */

typedef struct {
    const ag_run_layer_heads *L;
    const ag_run_options *opt;
    const ag_metric_set *sel;
    ag_workers *w;
    const int *head;      /* (count) selected heads */
    ag_record_list *recs; /* head i's record is first + i */
    size_t first;
    ag_error *errs;       /* (count) */
    int stability, values, lens;
} heads_job;

/* Family H of head h (its task i): the norms of what it writes for each
 * of its keys (a cross-attention's: the source tokens'), from L's
 * callback, then the keys of its attention A and those norms. */
static int head_values(const heads_job *j, size_t i, int h, const double *A, ag_record *r)
{
    size_t cols = agr_layer_cols(j->L);
    double *norms = malloc(cols * sizeof *norms);
    if (!norms)
        return ag_error_set(&j->errs[i], AG_ENOMEM, "out of memory for %zu value norms", cols);
    int status = j->L->norms(j->L->norms_ctx, h, norms, &j->errs[i]);
    if (status == AG_OK)
        status = ag_value_metrics_rect(A, j->L->n, cols, norms, j->sel, r, &j->errs[i]);
    free(norms);
    return status;
}

/* Head h's attention (n, cols) as doubles: L's own, or its float32
 * probabilities widened exactly into the worker's workspace (*own NULL),
 * else into *own (the caller frees it). A head of a few MB is then read
 * from cache by every family, where the layer's whole double copy, tens of
 * MB, came from memory (docs/performance.md, "The forward pass"). NULL
 * when out of memory. */
static const double *head_attention(const heads_job *j, int h, double **own)
{
    const ag_run_layer_heads *L = j->L;
    size_t count = L->n * agr_layer_cols(L);
    *own = NULL;
    if (L->attn)
        return L->attn + (size_t)h * count;
    ag_matrix_work *w = ag_workers_work(j->w);
    double *A = w ? ag_work_doubles(w, AG_WK_INPUT, count) : NULL;
    if (!A && !(A = *own = malloc(count * sizeof *A)))
        return NULL;
    agm_widen_f32(L->attn_f32 + (size_t)h * count, A, count);
    return A;
}

/* The selected families of head h (its task i) on its attention A. */
static int head_metrics(const heads_job *j, size_t i, int h, const double *A)
{
    const ag_run_layer_heads *L = j->L;
    size_t cols = agr_layer_cols(L);
    ag_record *r = ag_record_list_at(j->recs, j->first + i);
    ag_matrix_options mo = AG_MATRIX_OPTIONS_DEFAULT;
    mo.edge_threshold = j->opt->edge_threshold;
    mo.workers = j->w; /* its pool used when this head is not itself a task */
    int status = ag_matrix_metrics_work(A, L->n, cols, j->sel, &mo, ag_workers_work(j->w), r,
                                        &j->errs[i]);
    if (status == AG_OK && L->ids && cols == L->n)
        status = ag_token_pattern_metrics(A, L->n, -1, L->ids, j->sel, r, &j->errs[i]);
    ag_head_input in;
    ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
    int lens_qk = j->lens && L->q && L->k; /* family K from the pass's own Q and K */
    if (j->stability || (j->lens && !lens_qk)) {
        L->input(L->input_ctx, h, &in);
        if (L->extra)
            L->extra(L->input_ctx, h, &ex);
    }
    if (status == AG_OK && j->stability) {
        ag_stability_options so = {.size = sizeof(ag_stability_options),
                                   .epsilon = j->opt->epsilon, .trials = j->opt->trials,
                                   .seed = j->opt->seed};
        status = ag_stability_metrics_ex(&in, &ex, &so, j->sel, r, &j->errs[i]);
    }
    if (status == AG_OK && j->values)
        status = head_values(j, i, h, A, r);
    const double *S = j->lens ? L->scores + (size_t)h * L->n * cols : NULL;
    size_t hd = L->head_dim;
    if (status == AG_OK && lens_qk) /* a cross-attention's m×n form: n_kv key rows */
        status = ag_lens_metrics_qk_rect(S, L->n, cols, L->q + (size_t)h * L->n * hd,
                                         L->k + (size_t)h * cols * hd, hd, A, j->sel, r,
                                         &j->errs[i]);
    else if (status == AG_OK && j->lens)
        status = ag_lens_metrics(S, &in, &ex, A, j->sel, r, &j->errs[i]);
    return status;
}

static int head_task(size_t i, int worker, void *user)
{
    (void)worker;
    const heads_job *j = user;
    const ag_run_layer_heads *L = j->L;
    int h = j->head[i];
    ag_record *r = ag_record_list_at(j->recs, j->first + i);
    ag_record_init(r, L->layer, h, L->n, agr_layer_cols(L));
    ag_record_set_text(r, L->text);
    ag_record_set_stack(r, L->stack);
    double *own;
    const double *A = head_attention(j, h, &own);
    int status = A ? head_metrics(j, i, h, A)
                   : ag_error_set(&j->errs[i], AG_ENOMEM, "out of memory for a %zux%zu head",
                                  L->n, agr_layer_cols(L));
    free(own);
    return status;
}

/* The heads' tasks on w, in this process: they are one input's, and a
 * distribution spreads inputs, never the heads inside one. */
static int run_heads(heads_job *j, size_t count, int *failed, ag_error *err)
{
    ag_run_tasks t = {.size = sizeof t, .count = count, .fn = head_task, .user = j,
                      .errs = j->errs};
    size_t k = 0;
    int status = ag_run_tasks_run(j->w, &t, NULL, &k);
    if (status != AG_OK) {
        *failed = j->head[k];
        *err = j->errs[k];
    }
    return status;
}

int ag_run_heads(ag_workers *w, const ag_run_layer_heads *L, const ag_run_options *opt,
                 ag_record_list *out, int *failed, ag_error *err)
{
    *failed = -1;
    ag_run_layer_heads given = AG_RUN_LAYER_HEADS_DEFAULT;
    if (AG_SIZED_READ(&given, L, ag_run_layer_heads, err) != AG_OK)
        return AG_EINVAL;
    L = &given;
    opt = agr_options(opt);
    heads_job j = {.L = L, .opt = opt, .recs = out, .first = ag_record_list_count(out)};
    ag_metric_set *own_sel = NULL;
    ag_workers *own = NULL;
    ag_selection *all = NULL;
    int status = agr_metrics(opt, AG_FAMILIES_HEADS, &j.sel, &own_sel, err);
    if (status == AG_OK && !L->heads)
        status = ag_selection_parse(NULL, L->n_head, "heads", &all, err);
    const ag_selection *heads = L->heads ? L->heads : all;
    size_t count = ag_selection_count(heads);
    if (status == AG_OK)
        status = agr_workers(w, opt, count, &j.w, &own, err);
    if (status == AG_OK && !(j.errs = calloc(count + 1, sizeof *j.errs)))
        status = AG_ENOMEM;
    for (size_t k = 0; status == AG_OK && k < count; k++)
        if (!ag_record_list_add(out, NULL))
            status = AG_ENOMEM;
    if (status == AG_ENOMEM)
        ag_error_set(err, status, "out of memory for records");
    if (status == AG_OK && !L->attn && !L->attn_f32)
        status = ag_error_set(err, AG_EINVAL, "no attention (attn and attn_f32 NULL)");
    if (status == AG_OK && agr_layer_cols(L) != L->n &&
        (L->input || (L->scores && !(L->q && L->k))))
        status = ag_error_set(err, AG_EINVAL, "family E, and family K without q and k, need "
                              "square attention (a head's own keys)");
    if (status == AG_OK) {
        j.head = ag_selection_indices(heads);
        /* family E perturbs the head's own softmax: none under a lens */
        j.stability = L->input && ag_family_selected(j.sel, AG_FAMILY_STABILITY) &&
                      !agr_lens_active(opt);
        j.values = L->norms && ag_family_selected(j.sel, AG_FAMILY_VALUES);
        j.lens = (L->input || (L->q && L->k)) && L->scores &&
                 ag_family_selected(j.sel, AG_FAMILY_LENS);
        status = run_heads(&j, count, failed, err);
    }
    free(j.errs);
    ag_selection_free(all);
    ag_workers_free(own);
    ag_metric_set_free(own_sel);
    return status;
}

/* ---- analyze: one input's records --------------------------------------- */

typedef struct {
    const ag_model *m;
    const ag_run_options *opt; /* its metrics set */
    ag_workers *w;
    const unsigned char *layer_on;
    const ag_selection *heads;
    const unsigned char *dec_layer_on; /* an encoder–decoder pass: the decoder's */
    const ag_selection *dec_heads;     /* selections (its self and cross views) */
    const int32_t *target;     /* (n_tgt) the decoder's input ids, or NULL */
    int stability, values;     /* families E, H selected: the layer's weights needed */
    int lens;                  /* family K selected: the scores and weights needed */
    long text;
    const int32_t *ids;        /* (n) the input's token ids; NULL for a tensor input */
    ag_record_list *recs;
    agr_stack_bias bias[2];    /* T5's position bias per stack: [0] the model's
                                  (encoder's), [1] the decoder's */
    ag_error err; /* the failure, naming layer and head */
} analyze_job;

typedef struct {
    const ag_layer_view *v;
    const ag_attn_weights *w;
    agr_layer_extra extra; /* the heads' QK-norm, yarn/longrope */
} layer_input;

/* Family E of query head h: the view's X (the Q/K input, used in double
 * whatever the pass precision) and the layer's weights. */
static void view_head_input(const void *ctx, int h, ag_head_input *in)
{
    const layer_input *li = ctx;
    ag_attn_weights_head_input(li->w, li->v->x, li->v->n, li->v->d, h, in);
}

/* What it has beyond that (QK-norm: Qwen3, OLMo-2, Gemma-3; yarn, longrope). */
static void view_head_extra(const void *ctx, int h, ag_head_extra *ex)
{
    const layer_input *li = ctx;
    agr_layer_extra_head(&li->extra, h, ex);
}

/* Family H of query head h: the norms of f_h on the view's key/value
 * input (X; a cross-attention's: the encoder output). */
static int view_head_norms(const void *ctx, int h, double *norms, ag_error *err)
{
    const layer_input *li = ctx;
    return agr_head_value_norms(li->w, li->v->x_kv, li->v->n_kv, li->v->d, h, norms, err);
}

ag_run_layer_heads agr_layer_heads(const ag_layer_view *v, const double *attn, long text,
                                   const ag_selection *heads)
{
    ag_run_layer_heads L = AG_RUN_LAYER_HEADS_DEFAULT;
    L.attn = attn;
    L.n = v->n;
    L.n_head = v->n_head;
    L.layer = v->layer;
    L.text = text;
    L.heads = heads;
    L.n_kv = v->n_kv;
    L.stack = v->stack;
    return L;
}

static int analyze_layer(const ag_layer_view *v, void *user)
{
    analyze_job *a = user;
    int dec = v->stack == AG_STACK_DECODER || v->stack == AG_STACK_CROSS;
    if (!(dec ? a->dec_layer_on : a->layer_on)[v->layer])
        return 0;
    /* Family E re-forms a head's softmax from X and its stack's weights
     * (T5's position bias added, constant in X as ALiBi's): null on a
     * cross-attention, whose keys do not move with X (docs/metrics.md).
     * Family K takes Q and K from the pass (the scores' own, any stack); H
     * the values of the view's key side (a cross view's: the encoder
     * output). */
    int one = v->stack == AG_STACK_NONE, lens = a->lens && (one || v->q), values = a->values;
    int head_input = v->stack != AG_STACK_CROSS && (a->stability || (lens && !v->q));
    const ag_model *m = dec ? ag_seq2seq_stack(ag_model_seq2seq(a->m), AG_STACK_DECODER) : a->m;
    ag_attn_weights weights = {0}; /* once per layer, for all its heads */
    int status = AG_OK;
    if (head_input || values)
        status = v->stack == AG_STACK_CROSS
                     ? ag_model_cross_attn_weights(m, v->layer, &weights, &a->err)
                     : ag_model_attn_weights(m, v->layer, &weights, &a->err);
    layer_input li = {.v = v, .w = &weights};
    if (status == AG_OK && head_input)
        status = agr_layer_extra_init(&li.extra, m, v->layer, &weights, &a->err);
    if (status == AG_OK && head_input)
        status = agr_layer_extra_bias(&li.extra, &a->bias[dec], m, v->n, &a->err);
    ag_run_layer_heads L = agr_layer_heads(v, v->attn, a->text, dec ? a->dec_heads : a->heads);
    L.attn_f32 = v->attn ? NULL : v->attn_f32; /* the pass's own, widened head by head */
    L.input = head_input ? view_head_input : NULL;
    L.extra = head_input ? view_head_extra : NULL;
    L.scores = lens ? v->scores : NULL;
    L.q = lens ? v->q : NULL;
    L.k = lens ? v->k : NULL;
    L.head_dim = (size_t)v->head_dim;
    L.input_ctx = &li;
    /* the token-pattern keys read the ids of the queries' own sequence */
    L.ids = v->stack == AG_STACK_DECODER ? a->target : v->stack == AG_STACK_CROSS ? NULL : a->ids;
    L.norms = values ? view_head_norms : NULL;
    L.norms_ctx = &li;
    int h = -1;
    ag_error e = {0};
    if (status == AG_OK && (status = ag_run_heads(a->w, &L, a->opt, a->recs, &h, &e)) != AG_OK) {
        if (h >= 0)
            ag_error_set(&a->err, status, "layer %d head %d: %s", v->layer, h, e.message);
        else
            a->err = e;
    }
    ag_attn_weights_free(&weights);
    agr_layer_extra_free(&li.extra);
    return status;
}

/* What ag_run_analyze's run at each temperature shares. */
typedef struct {
    const ag_model *m;
    const ag_run_input *in;
    ag_workers *w;
} analyze_call;

/* One input's records under one normaliser (opt's, no list). */
static int analyze_at(const ag_run_options *opt, void *user, ag_record_list **out, ag_error *err)
{
    const analyze_call *call = user;
    const ag_model *m = call->m;
    const ag_run_input *in = call->in;
    ag_workers *w = call->w;
    ag_run_input given = AG_RUN_INPUT_DEFAULT; /* for its text; the pass reads the rest */
    if (in && AG_SIZED_READ(&given, in, ag_run_input, err) != AG_OK)
        return AG_EINVAL;
    ag_run_options o = *opt;
    ag_metric_set *own_sel = NULL;
    ag_workers *own = NULL;
    ag_selection *layers = NULL, *heads = NULL, *dec_layers = NULL, *dec_heads = NULL;
    ag_record_list *recs = NULL;
    /* an encoder–decoder pass: the selections also over the decoder's
     * layers and heads (its self- and cross-attention) */
    const ag_model *dec = ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER);
    int status = agr_metrics(&o, AG_FAMILIES_ANALYZE, &o.metrics, &own_sel, err);
    if (status == AG_OK && own_sel && dec) /* the default of a pair: family M too */
        ag_metric_set_default_shape(own_sel, AG_FAMILIES_ANALYZE, 1, 2);
    if (status == AG_OK)
        status = agr_model_selections(m, &o, &layers, &heads, err);
    if (status == AG_OK && dec)
        status = agr_model_selections(dec, &o, &dec_layers, &dec_heads, err);
    if (status == AG_OK)
        status = agr_workers(w, &o, ag_selection_count(heads), &w, &own, err);
    if (status == AG_OK && !(recs = ag_record_list_new()))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK) {
        analyze_job a = {.m = m, .opt = &o, .w = w, .layer_on = ag_selection_mask(layers),
                         .heads = heads, .text = given.text, .ids = given.ids, .recs = recs,
                         .dec_layer_on = ag_selection_mask(dec_layers), .dec_heads = dec_heads,
                         .target = given.target,
                         /* family E perturbs the head's own softmax: none under a lens */
                         .stability = ag_family_selected(o.metrics, AG_FAMILY_STABILITY) &&
                                      !agr_lens_active(&o),
                         .values = ag_family_selected(o.metrics, AG_FAMILY_VALUES),
                         .lens = ag_family_selected(o.metrics, AG_FAMILY_LENS)};
        ag_forward_options fo = ag_run_forward_options(&o, w);
        fo.want_scores = fo.want_qk = a.lens; /* family K: the scores and their Q, K */
        /* the heads widen their own attention (head_attention); a lens
         * re-forms the view's attention in doubles (src/run/lens.c) */
        fo.attn_f32 = !agr_lens_active(&o);
        status = agr_forward(m, in, &fo, &o, analyze_layer, &a, NULL, err);
        if (status != AG_OK && a.err.status != AG_OK)
            *err = a.err;
        agr_stack_bias_free(&a.bias[0]);
        agr_stack_bias_free(&a.bias[1]);
    }
    if (status == AG_OK)
        *out = recs;
    else
        ag_record_list_free(recs);
    ag_selection_free(layers);
    ag_selection_free(heads);
    ag_selection_free(dec_layers);
    ag_selection_free(dec_heads);
    ag_workers_free(own);
    ag_metric_set_free(own_sel);
    return status;
}

int ag_run_analyze(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                   ag_workers *w, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    analyze_call call = {m, in, w};
    int status = agr_each_temperature(agr_options(opt), analyze_at, &call, out, err);
    if (status != AG_OK) {
        ag_record_list_free(*out);
        *out = NULL;
    }
    return status;
}

/* ---- attention: the selected heads of the selected layers --------------- */

typedef struct {
    /* [0]: the model's (an encoder–decoder pass: the encoder's), [1]: the
     * decoder's, for its self- and cross-attention views */
    const unsigned char *layer_on[2], *head_on[2];
    size_t nh[2];
    double *buf; /* (nh, n, n_kv): the selected heads when not all are */
    size_t cap;  /* its doubles */
    ag_run_heads_fn fn, scores_fn;
    ag_run_stack_heads_fn stack_fn, stack_scores_fn;
    void *user;
    ag_error err;
} attention_job;

/* The selected heads of all (v->n_head, n, n_kv) of selection k: all
 * itself when every head is selected, else copied into a->buf; NULL
 * when out of memory (a->err set). */
static const double *select_heads(attention_job *a, const ag_layer_view *v, const double *all,
                                  int k)
{
    if (a->nh[k] >= (size_t)v->n_head)
        return all;
    size_t kv = v->n_kv ? v->n_kv : v->n, need = a->nh[k] * v->n * kv;
    if (need > a->cap) {
        free(a->buf);
        a->cap = 0;
        if (!(a->buf = malloc(need * sizeof *a->buf))) {
            ag_error_set(&a->err, AG_ENOMEM, "out of memory for %zu heads", a->nh[k]);
            return NULL;
        }
        a->cap = need;
    }
    ag_layer_view sel = *v;
    sel.attn = all;
    ag_layer_view_copy_heads(&sel, a->head_on[k], a->buf);
    return a->buf;
}

static int attention_layer(const ag_layer_view *v, void *user)
{
    attention_job *a = user;
    int k = v->stack == AG_STACK_DECODER || v->stack == AG_STACK_CROSS;
    if (!a->layer_on[k][v->layer])
        return 0;
    const double *p = a->fn || a->stack_fn ? select_heads(a, v, v->attn, k) : NULL;
    if ((a->fn || a->stack_fn) && !p)
        return AG_ENOMEM;
    int rc = a->fn ? a->fn(v->layer, p, a->nh[k], v->n, a->user) : 0;
    if (rc == 0 && a->stack_fn)
        rc = a->stack_fn(v->stack, v->layer, p, a->nh[k], v->n, v->n_kv ? v->n_kv : v->n,
                         a->user);
    if (rc == 0 && a->scores_fn) {
        const double *s = select_heads(a, v, v->scores, k);
        rc = s ? a->scores_fn(v->layer, s, a->nh[k], v->n, a->user) : AG_ENOMEM;
    }
    if (rc == 0 && a->stack_scores_fn) {
        const double *s = select_heads(a, v, v->scores, k);
        rc = s ? a->stack_scores_fn(v->stack, v->layer, s, a->nh[k], v->n,
                                    v->n_kv ? v->n_kv : v->n, a->user)
               : AG_ENOMEM;
    }
    return rc;
}

/* What one attention run computes with: the pass's callbacks and buffers. */
typedef struct {
    ag_run_heads_fn fn, scores_fn;
    ag_run_stack_heads_fn stack_fn, stack_scores_fn;
    ag_hidden_fn hidden_fn;
    void *user;
    double *hidden, *dec_hidden;
} attention_call;

static int attention_run(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                         ag_workers *w, const attention_call *c, ag_error *err)
{
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    const ag_model *stacks[2] = {m, ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER)};
    ag_selection *layers[2] = {NULL, NULL}, *heads[2] = {NULL, NULL};
    ag_workers *own = NULL;
    attention_job a = {.fn = c->fn, .scores_fn = c->scores_fn, .stack_fn = c->stack_fn,
                       .stack_scores_fn = c->stack_scores_fn, .user = c->user};
    int status = AG_OK;
    for (int k = 0; k < 2 && status == AG_OK && stacks[k]; k++) {
        status = agr_model_selections(stacks[k], opt, &layers[k], &heads[k], err);
        a.layer_on[k] = ag_selection_mask(layers[k]);
        a.head_on[k] = ag_selection_mask(heads[k]);
        a.nh[k] = ag_selection_count(heads[k]);
    }
    if (status == AG_OK)
        status = agr_workers(w, opt, (size_t)ag_model_get_config(m)->n_head, &w, &own, err);
    if (status == AG_OK) {
        ag_forward_options fo = ag_run_forward_options(opt, w);
        fo.hidden_fn = c->hidden_fn;
        fo.hidden_user = c->user;
        fo.want_scores = c->scores_fn || c->stack_scores_fn;
        int any = c->fn || c->scores_fn || c->stack_fn || c->stack_scores_fn;
        status = agr_forward_pair(m, in, &fo, agr_options(opt), any ? attention_layer : NULL, &a,
                                  c->hidden, c->dec_hidden, err);
        if (status != AG_OK && a.err.status != AG_OK)
            *err = a.err;
    }
    free(a.buf);
    for (int k = 0; k < 2; k++) {
        ag_selection_free(layers[k]);
        ag_selection_free(heads[k]);
    }
    ag_workers_free(own);
    return status;
}

int ag_run_attention(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                     ag_workers *w, ag_run_heads_fn fn, ag_hidden_fn hidden_fn, void *user,
                     double *hidden, ag_error *err)
{
    return ag_run_attention_scores(m, in, opt, w, fn, NULL, hidden_fn, user, hidden, err);
}

int ag_run_attention_scores(const ag_model *m, const ag_run_input *in,
                            const ag_run_options *opt, ag_workers *w, ag_run_heads_fn fn,
                            ag_run_heads_fn scores_fn, ag_hidden_fn hidden_fn, void *user,
                            double *hidden, ag_error *err)
{
    if (ag_model_seq2seq(m))
        return ag_error_set(err, AG_EINVAL, "an encoder-decoder model's attention is "
                            "ag_run_attention_seq2seq's");
    attention_call c = {.fn = fn, .scores_fn = scores_fn, .hidden_fn = hidden_fn,
                        .user = user, .hidden = hidden};
    return attention_run(m, in, opt, w, &c, err);
}

/* attention_run on an encoder–decoder model only. */
static int attention_pair(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                          ag_workers *w, const attention_call *c, ag_error *err)
{
    if (!ag_model_seq2seq(m))
        return ag_error_set(err, AG_EINVAL, "ag_run_attention_seq2seq: not an encoder-decoder "
                            "model");
    return attention_run(m, in, opt, w, c, err);
}

int ag_run_attention_seq2seq(const ag_model *m, const ag_run_input *in,
                             const ag_run_options *opt, ag_workers *w, ag_run_stack_heads_fn fn,
                             void *user, double *enc_hidden, double *dec_hidden, ag_error *err)
{
    return ag_run_attention_seq2seq_scores(m, in, opt, w, fn, NULL, user, enc_hidden,
                                           dec_hidden, err);
}

int ag_run_attention_seq2seq_scores(const ag_model *m, const ag_run_input *in,
                                    const ag_run_options *opt, ag_workers *w,
                                    ag_run_stack_heads_fn fn, ag_run_stack_heads_fn scores_fn,
                                    void *user, double *enc_hidden, double *dec_hidden,
                                    ag_error *err)
{
    attention_call c = {.stack_fn = fn, .stack_scores_fn = scores_fn, .user = user,
                        .hidden = enc_hidden, .dec_hidden = dec_hidden};
    return attention_pair(m, in, opt, w, &c, err);
}

int ag_run_attention_seq2seq_stream(const ag_model *m, const ag_run_input *in,
                                    const ag_run_options *opt, ag_workers *w,
                                    ag_run_stack_heads_fn fn, ag_run_stack_heads_fn scores_fn,
                                    ag_hidden_fn hidden_fn, void *user, ag_error *err)
{
    attention_call c = {.stack_fn = fn, .stack_scores_fn = scores_fn, .hidden_fn = hidden_fn,
                        .user = user};
    return attention_pair(m, in, opt, w, &c, err);
}
