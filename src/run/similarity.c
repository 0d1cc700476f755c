/* similarity.c — attngeom/run.h, `attngeom similarity` on one input: the
 * Jensen–Shannon distance between the attention of every pair of selected
 * heads (ag_js_distance; Clark et al. 2019, §6). What is held is the
 * selected heads' attention of the input (K·n² doubles for K heads), copied
 * as the layers come; the pass stops after the last selected layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "layers_int.h"

/* The stacks whose heads are compared: m's one (slot 0), or an
 * encoder–decoder model's encoder, decoder self-attention and
 * cross-attention (slots 0, 1, 2: the cross heads are the decoder's). Each
 * slot's model into stacks; returns the count. */
static int stacks_of(const ag_model *m, const ag_model *stacks[3])
{
    const ag_model *dec = ag_seq2seq_stack(ag_model_seq2seq(m), AG_STACK_DECODER);
    stacks[0] = m;
    stacks[1] = stacks[2] = dec;
    return dec ? 3 : 1;
}

/* The ag_stack of slot k of a model of ns stacks (AG_STACK_NONE for one). */
static int slot_stack(int ns, int k)
{
    return ns == 1 ? AG_STACK_NONE : AG_STACK_ENCODER + k;
}

/* (stack, layer, head) of the selected heads of stack model s, layer-major,
 * appended to heads at *K. */
static int heads_add(const ag_model *s, int stack, const ag_run_options *opt, int *heads,
                     size_t *K, ag_error *err)
{
    ag_selection *layers = NULL, *sel = NULL;
    int status = agr_model_selections(s, opt, &layers, &sel, err);
    size_t nl = ag_selection_count(layers), nh = ag_selection_count(sel);
    for (size_t i = 0; status == AG_OK && i < nl; i++)
        for (size_t k = 0; k < nh; k++, (*K)++) {
            heads[3 * *K] = stack;
            heads[3 * *K + 1] = ag_selection_index(layers, i);
            heads[3 * *K + 2] = ag_selection_index(sel, k);
        }
    ag_selection_free(layers);
    ag_selection_free(sel);
    return status;
}

int ag_run_similarity_stack_heads(const ag_model *m, const ag_run_options *opt, int **heads,
                                  size_t *count, ag_error *err)
{
    *heads = NULL;
    *count = 0;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    const ag_model *stacks[3];
    int ns = stacks_of(m, stacks);
    size_t cap = 0;
    for (int k = 0; k < ns; k++) {
        const ag_model_config *g = ag_model_get_config(stacks[k]);
        cap += (size_t)g->n_layer * (size_t)g->n_head;
    }
    if (!(*heads = malloc((cap + 1) * 3 * sizeof **heads)))
        return ag_error_set(err, AG_ENOMEM, "out of memory for %zu heads", cap);
    int status = AG_OK;
    for (int k = 0; status == AG_OK && k < ns; k++)
        status = heads_add(stacks[k], slot_stack(ns, k), opt, *heads, count, err);
    if (status != AG_OK) {
        free(*heads);
        *heads = NULL;
        *count = 0;
    }
    return status;
}

int ag_run_similarity_heads(const ag_model *m, const ag_run_options *opt, int **pairs,
                            size_t *count, ag_error *err)
{
    int status = ag_run_similarity_stack_heads(m, opt, pairs, count, err);
    for (size_t k = 0; status == AG_OK && k < *count; k++) { /* drop the stack column */
        (*pairs)[2 * k] = (*pairs)[3 * k + 1];
        (*pairs)[2 * k + 1] = (*pairs)[3 * k + 2];
    }
    return status;
}

/* ---- one input ----------------------------------------------------------- */

/* One stack's selected heads of the input, copied as the layers come. */
typedef struct {
    ag_selection *layers, *heads;
    size_t K, rows, cols;
    double *attn;     /* (K, rows, cols), made at its first selected layer */
    size_t copied;    /* heads copied so far */
} stack_copy;

typedef struct {
    stack_copy s[3];  /* by slot (stacks_of) */
    int ns;
    int last;         /* a model of one stack: its last selected layer */
    ag_error err;
} copy_ctx;

static int copy_alloc(copy_ctx *c, stack_copy *s, size_t rows, size_t cols)
{
    if (rows > (size_t)-1 / sizeof(double) / cols / s->K)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: the attention of %zu heads is too large",
                            cols, s->K);
    if (!(s->attn = malloc(s->K * rows * cols * sizeof *s->attn)))
        return ag_error_set(&c->err, AG_ENOMEM,
                            "out of memory for the attention of %zu heads on %zu tokens", s->K, cols);
    s->rows = rows;
    s->cols = cols;
    return AG_OK;
}

static int copy_heads(const ag_layer_view *v, void *user)
{
    copy_ctx *c = user;
    stack_copy *s = &c->s[v->stack == AG_STACK_NONE ? 0 : v->stack - AG_STACK_ENCODER];
    if (!ag_selection_mask(s->layers)[v->layer])
        return AG_OK;
    size_t cols = v->n_kv ? v->n_kv : v->n;
    int status = s->attn ? AG_OK : copy_alloc(c, s, v->n, cols);
    if (status != AG_OK)
        return status;
    s->copied += ag_layer_view_copy_heads(v, ag_selection_mask(s->heads),
                                          s->attn + s->copied * v->n * cols);
    return c->ns == 1 && v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

/* The distances d(a, b), b > a, of one stack's heads, one task per head a;
 * its block of d starts at (off, off) of the (stride, stride) matrix. */
typedef struct {
    const stack_copy *s;
    size_t off, stride;
    double *d;
    ag_error *errs;     /* (K) */
} pairs_job;

static int pairs_task(size_t a, int worker, void *user)
{
    (void)worker;
    pairs_job *j = user;
    const stack_copy *s = j->s;
    size_t rc = s->rows * s->cols;
    int status = AG_OK;
    for (size_t b = a + 1; status == AG_OK && b < s->K; b++)
        status = ag_js_distance(s->attn + a * rc, s->attn + b * rc, s->rows, s->cols,
                                &j->d[(j->off + a) * j->stride + j->off + b], &j->errs[a]);
    return status;
}

/* One stack's pairs into its block of d's upper triangle. A text's pairs
 * are one process's work: a distribution spreads inputs, not these. */
static int pairs_block(ag_workers *w, const ag_run_options *opt, const stack_copy *s,
                       size_t off, size_t stride, double *d, ag_error *err)
{
    ag_error *errs = calloc(s->K + 1, sizeof *errs);
    if (!errs)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    ag_run_options here = opt ? *opt : (ag_run_options)AGR_OPTIONS_DEFAULT;
    here.dist = NULL;
    pairs_job j = {s, off, stride, d, errs};
    ag_run_tasks t = {.size = sizeof t, .count = s->K, .fn = pairs_task, .user = &j,
                      .errs = errs};
    size_t first = 0;
    int status = s->K ? ag_run_tasks_run(w, &t, &here, &first) : AG_OK;
    if (status != AG_OK)
        *err = errs[first];
    free(errs);
    return status;
}

/* Every stack's pairs, then mirrored; a pair of two stacks is not compared
 * (NaN: their matrices are of different tokens or shapes). */
static int pairs_run(ag_workers *w, const ag_run_options *opt, const copy_ctx *c, double *d,
                     ag_error *err)
{
    size_t K = 0, off = 0;
    for (int k = 0; k < c->ns; k++)
        K += c->s[k].K;
    for (size_t a = 0; a < K * K; a++)
        d[a] = c->ns == 1 ? 0 : NAN;
    int status = AG_OK;
    for (int k = 0; status == AG_OK && k < c->ns; off += c->s[k++].K) {
        for (size_t a = off; a < off + c->s[k].K; a++)
            memset(d + a * K + off, 0, c->s[k].K * sizeof *d);
        status = pairs_block(w, opt, &c->s[k], off, K, d, err);
    }
    for (size_t a = 0; status == AG_OK && a < K; a++)
        for (size_t b = a + 1; b < K; b++)
            d[b * K + a] = d[a * K + b];
    return status;
}

/* Each stack's selections and head count into c. */
static int copy_begin(copy_ctx *c, const ag_model *m, const ag_run_options *opt, ag_error *err)
{
    const ag_model *stacks[3];
    c->ns = stacks_of(m, stacks);
    int status = AG_OK;
    for (int k = 0; status == AG_OK && k < c->ns; k++) {
        stack_copy *s = &c->s[k];
        status = agr_model_selections(stacks[k], opt, &s->layers, &s->heads, err);
        s->K = ag_selection_count(s->layers) * ag_selection_count(s->heads);
    }
    if (status == AG_OK)
        c->last = ag_selection_last(c->s[0].layers);
    return status;
}

static void copy_end(copy_ctx *c)
{
    for (int k = 0; k < 3; k++) {
        free(c->s[k].attn);
        ag_selection_free(c->s[k].layers);
        ag_selection_free(c->s[k].heads);
    }
}

/* One input's distances under one normaliser (opt's, no list). */
static int similarity_at(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                         ag_workers *w, double *dist, ag_error *err)
{
    agr_pass p;
    int status = agr_pass_begin(&p, m, in, opt, 0, w, err);
    copy_ctx c = {0};
    if (status == AG_OK)
        status = copy_begin(&c, m, opt, err);
    if (status == AG_OK && c.ns == 1) {
        status = agr_pass_run(&p, m, copy_heads, &c, &c.err, err);
    } else if (status == AG_OK) { /* both stacks' pass: agr_pass_run takes one */
        ag_error e = {0};
        status = agr_forward(m, &p.in, &p.fo, p.opt, copy_heads, &c, NULL, &e);
        if (status != AG_OK)
            *err = c.err.status ? c.err : e;
    }
    if (status == AG_OK)
        status = pairs_run(p.w, opt, &c, dist, err);
    copy_end(&c);
    agr_pass_end(&p);
    return status;
}

int ag_run_similarity(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                      ag_workers *w, double *dist, ag_error *err)
{
    const ag_run_options *o = agr_options(opt);
    if (o->ntemperatures == 0)
        return similarity_at(m, in, opt, w, dist, err);
    size_t K = 0;
    int *pairs = NULL;
    int status = ag_run_similarity_heads(m, o, &pairs, &K, err);
    ag_free(pairs);
    ag_run_options at = *o; /* each T its own run, its own (K, K) block */
    at.ntemperatures = 0;
    for (size_t k = 0; status == AG_OK && k < o->ntemperatures; k++) {
        at.normalizer_param = o->temperatures[k];
        status = similarity_at(m, in, &at, w, dist + k * K * K, err);
    }
    return status;
}
