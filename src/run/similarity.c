/* similarity.c — attngeom/run.h, `attngeom similarity` on one input: the
 * Jensen–Shannon distance between the attention of every pair of selected
 * heads (ag_js_distance; Clark et al. 2019, §6). What is held is the
 * selected heads' attention of the input (K·n² doubles for K heads), copied
 * as the layers come; the pass stops after the last selected layer. */
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "layers_int.h"

/* The selected heads of the selected layers over m's layers and heads. */
static int heads_select(const ag_model *m, const ag_run_options *opt, ag_selection **heads,
                        ag_error *err)
{
    return ag_run_options_selection(opt, "heads", ag_model_get_config(m)->n_head, heads, err);
}

/* (layer, head) of the K = layers × heads compared, layer-major. */
static int *pairs_new(const ag_selection *layers, const ag_selection *heads, size_t *K)
{
    size_t nl = ag_selection_count(layers), nh = ag_selection_count(heads);
    int *pairs = malloc((nl * nh + 1) * 2 * sizeof *pairs);
    *K = 0;
    for (size_t i = 0; pairs && i < nl; i++)
        for (size_t k = 0; k < nh; k++, (*K)++) {
            pairs[2 * *K] = ag_selection_index(layers, i);
            pairs[2 * *K + 1] = ag_selection_index(heads, k);
        }
    return pairs;
}

int ag_run_similarity_heads(const ag_model *m, const ag_run_options *opt, int **pairs,
                            size_t *count, ag_error *err)
{
    *pairs = NULL;
    *count = 0;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    ag_selection *layers = NULL, *heads = NULL;
    int status = ag_run_options_selection(opt, "layers", ag_model_get_config(m)->n_layer, &layers,
                                          err);
    if (status == AG_OK)
        status = heads_select(m, opt, &heads, err);
    if (status == AG_OK && !(*pairs = pairs_new(layers, heads, count)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory for %zu heads",
                              ag_selection_count(layers) * ag_selection_count(heads));
    ag_selection_free(layers);
    ag_selection_free(heads);
    return status;
}

/* ---- one input ----------------------------------------------------------- */

typedef struct {
    const unsigned char *layer_on, *head_on;
    int last;         /* last selected layer */
    size_t K, n;
    double *attn;     /* (K, n, n): this input's selected heads, made at the first layer */
    size_t copied;    /* heads copied so far */
    ag_error err;
} copy_ctx;

static int copy_alloc(copy_ctx *c, size_t n)
{
    if (n > (size_t)-1 / sizeof(double) / n / c->K)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: the attention of %zu heads is too large",
                            n, c->K);
    if (!(c->attn = malloc(c->K * n * n * sizeof *c->attn)))
        return ag_error_set(&c->err, AG_ENOMEM,
                            "out of memory for the attention of %zu heads on %zu tokens", c->K, n);
    c->n = n;
    return AG_OK;
}

static int copy_heads(const ag_layer_view *v, void *user)
{
    copy_ctx *c = user;
    if (!c->layer_on[v->layer])
        return AG_OK;
    int status = c->attn ? AG_OK : copy_alloc(c, v->n);
    if (status != AG_OK)
        return status;
    c->copied += ag_layer_view_copy_heads(v, c->head_on, c->attn + c->copied * v->n * v->n);
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

/* The distances d(a, b), b > a, one task per head a. */
typedef struct {
    const double *attn; /* (K, n, n) */
    size_t K, n;
    double *d;          /* (K, K) */
    ag_error *errs;     /* (K) */
} pairs_job;

static int pairs_task(size_t a, int worker, void *user)
{
    (void)worker;
    pairs_job *j = user;
    size_t nn = j->n * j->n;
    int status = AG_OK;
    for (size_t b = a + 1; status == AG_OK && b < j->K; b++)
        status = ag_js_distance(j->attn + a * nn, j->attn + b * nn, j->n, j->n,
                                &j->d[a * j->K + b], &j->errs[a]);
    return status;
}

/* The pairs of c's heads into d's upper triangle, then mirrored. A text's
 * pairs are one process's work: a distribution spreads inputs, not these. */
static int pairs_run(ag_workers *w, const ag_run_options *opt, const copy_ctx *c, double *d,
                     ag_error *err)
{
    ag_error *errs = calloc(c->K + 1, sizeof *errs);
    if (!errs)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    ag_run_options here = opt ? *opt : (ag_run_options)AGR_OPTIONS_DEFAULT;
    here.dist = NULL;
    pairs_job j = {c->attn, c->K, c->n, d, errs};
    ag_run_tasks t = {.size = sizeof t, .count = c->K, .fn = pairs_task, .user = &j,
                      .errs = errs};
    size_t first = 0;
    memset(d, 0, c->K * c->K * sizeof *d);
    int status = ag_run_tasks_run(w, &t, &here, &first);
    if (status != AG_OK)
        *err = errs[first];
    for (size_t a = 0; status == AG_OK && a < c->K; a++)
        for (size_t b = a + 1; b < c->K; b++)
            d[b * c->K + a] = d[a * c->K + b];
    free(errs);
    return status;
}

/* One input's distances under one normaliser (opt's, no list). */
static int similarity_at(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                         ag_workers *w, double *dist, ag_error *err)
{
    agr_pass p;
    ag_selection *heads = NULL;
    int status = agr_pass_begin(&p, m, in, opt, 0, w, err);
    if (status == AG_OK)
        status = heads_select(m, opt, &heads, err);
    copy_ctx c = {0};
    if (status == AG_OK) {
        c = (copy_ctx){.layer_on = ag_selection_mask(p.layers),
                       .head_on = ag_selection_mask(heads), .last = ag_selection_last(p.layers),
                       .K = ag_selection_count(p.layers) * ag_selection_count(heads)};
        status = agr_pass_run(&p, m, copy_heads, &c, &c.err, err);
    }
    if (status == AG_OK)
        status = pairs_run(p.w, opt, &c, dist, err);
    free(c.attn);
    ag_selection_free(heads);
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
