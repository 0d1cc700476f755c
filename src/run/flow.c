/* flow.c — attngeom/run.h, attention flow (Abnar & Zuidema 2020, §3; the
 * graph is attngeom/layers.h's) through the run: the n² maximum flows of a
 * flow matrix fanned out over threads, and one input's F_l for the selected
 * layers. What is held is the capacities Ã_0 … Ã_last (ag_rollout_mix of
 * each layer's attention, as the pass gives it) and one F.
 *
 * A task is one row i of F (its n pairs (i, j)), not one pair: a pair takes
 * from microseconds (no path) to milliseconds, and a slot per pair for its
 * error would cost n² messages. The rows run from the last: for causal
 * attention row i's graphs hold tokens j … i, so the late rows are the long
 * ones, and taking them first lets the threads end together. igraph's calls
 * take one lock (analysis/flow.c), so the threads overlap the building of
 * each pair's graph, not the maximum flows themselves. */
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "attngeom/layers.h"
#include "layers_int.h"

/* ---- a flow matrix -------------------------------------------------------- */

typedef struct {
    const ag_flow_graph *g;
    size_t n;
    double *F;      /* (n, n) */
    ag_error *errs; /* (n) one per task */
} flow_job;

/* Task k: row n − 1 − k of F. */
static int flow_row(size_t k, int worker, void *user)
{
    (void)worker;
    flow_job *j = user;
    size_t i = j->n - 1 - k;
    return ag_flow_graph_row(j->g, i, j->F + i * j->n, &j->errs[k]);
}

int ag_run_flow_matrix(const double *cap, int n_layer, size_t n, const ag_run_options *opt,
                       ag_workers *w, double *F, ag_error *err)
{
    if (!F)
        return ag_error_set(err, AG_EINVAL, "flow: NULL result");
    ag_flow_graph *g = NULL;
    int status = ag_flow_graph_new(cap, n_layer, n, &g, err);
    if (status != AG_OK)
        return status;
    ag_error *errs = calloc(n, sizeof *errs);
    if (!errs) {
        ag_flow_graph_free(g);
        return ag_error_set(err, AG_ENOMEM, "flow: out of memory for %zu rows", n);
    }
    /* a text's flows are one process's work: a distribution spreads inputs */
    ag_run_options here = *agr_options(opt);
    here.dist = NULL;
    flow_job j = {g, n, F, errs};
    ag_run_tasks t = {.size = sizeof t, .count = n, .fn = flow_row, .user = &j, .errs = errs};
    size_t first = 0;
    status = ag_run_tasks_run(w, &t, &here, &first);
    if (status != AG_OK)
        *err = errs[first];
    free(errs);
    ag_flow_graph_free(g);
    return status;
}

/* ---- one input ------------------------------------------------------------ */

typedef struct {
    int last;    /* the last selected layer */
    int max_n;   /* opt's flow_max_tokens */
    size_t n;
    double *cap; /* (last + 1, n, n): Ã_l, made at layer 0 */
    ag_error err;
} cap_ctx;

static int cap_alloc(cap_ctx *c, size_t n)
{
    size_t layers = (size_t)c->last + 1;
    /* refused before any flow runs: a layer costs n² maximum flows, each
     * growing with n and the layers (docs/performance.md) */
    if (n > (size_t)c->max_n)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: attention flow takes at most %d "
                            "(n² maximum flows a layer, docs/performance.md); raise the limit "
                            "with --flow-max-tokens or flow_max_tokens", n, c->max_n);
    if (n > (size_t)-1 / sizeof(double) / n / layers)
        return ag_error_set(&c->err, AG_ELIMIT, "%zu tokens: %zu flow layers too large", n,
                            layers);
    if (!(c->cap = malloc(layers * n * n * sizeof *c->cap)))
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for %zu layers of %zux%zu "
                            "capacities", layers, n, n);
    c->n = n;
    return AG_OK;
}

/* Ã_l of each layer up to the last selected, then the pass stops. */
static int cap_layer(const ag_layer_view *v, void *user)
{
    cap_ctx *c = user;
    int status = c->cap ? AG_OK : cap_alloc(c, v->n);
    ag_error e = {0};
    if (status == AG_OK &&
        (status = ag_rollout_mix(v->attn, v->n_head, v->n, c->cap + (size_t)v->layer * v->n * v->n,
                                 &e)) != AG_OK)
        return ag_error_set(&c->err, status, "layer %d: %s", v->layer, e.message);
    if (status != AG_OK)
        return status;
    return v->layer == c->last ? AGR_PASS_DONE : AG_OK;
}

/* F_l of each selected layer l: its record, then fn. */
static int flow_layers(const agr_pass *p, const ag_run_options *opt, const ag_metric_set *sel,
                       const cap_ctx *c, ag_run_matrix_fn fn, void *user, ag_record_list **out,
                       ag_error *err)
{
    double *F = malloc(c->n * c->n * sizeof *F);
    if (!F)
        return ag_error_set(err, AG_ENOMEM, "out of memory for the %zux%zu flow", c->n, c->n);
    int status = AG_OK;
    for (size_t s = 0; status == AG_OK && s < ag_selection_count(p->layers); s++) {
        int l = ag_selection_index(p->layers, s);
        ag_error e = {0};
        if ((status = ag_run_flow_matrix(c->cap, l + 1, c->n, opt, p->w, F, &e)) != AG_OK)
            ag_error_set(err, status, "flow F_%d: %s", l, e.message);
        if (status == AG_OK)
            status = agr_matrix_record(opt, sel, p->w, p->in.text, l, F, c->n, "flow F", out,
                                       err);
        if (status == AG_OK && fn)
            status = fn(l, F, c->n, user, err);
    }
    free(F);
    return status;
}

int ag_run_flow(const ag_model *m, const ag_run_input *in, const ag_run_options *opt,
                ag_workers *w, ag_run_matrix_fn fn, void *user, ag_record_list **out,
                ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "flow: no record list (NULL)");
    agr_pass p;
    ag_metric_set *own = NULL;
    const ag_metric_set *sel = NULL;
    int status = agr_pass_begin(&p, m, in, opt, 0, w, err);
    cap_ctx c = {.max_n = agr_options(opt)->flow_max_tokens};
    if (status == AG_OK)
        status = agr_metrics(opt, AG_FAMILIES_ROLLOUT, &sel, &own, err);
    if (status == AG_OK && (c.last = ag_selection_last(p.layers)) >= 0)
        status = agr_pass_run(&p, m, cap_layer, &c, &c.err, err);
    if (status == AG_OK && c.cap)
        status = flow_layers(&p, opt, sel, &c, fn, user, out, err);
    free(c.cap);
    ag_metric_set_free(own);
    agr_pass_end(&p);
    return status;
}
