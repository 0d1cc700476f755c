/* flow.c — attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow
 * in Transformers", §3): the maximum flow from each output token at the top
 * of the layered attention graph to each input token at its bottom, with
 * igraph's maximum flow. See attngeom/layers.h for the graph, its edge
 * direction and how it departs from the authors' compute_flows.
 *
 * Each pair (i, j) gets its own graph: the nodes the source reaches that
 * reach the sink, found from two reach tables made once per graph (what
 * each source reaches going down, what reaches each sink going up). The
 * rest of the graph carries no flow from source to sink, so the value is
 * the maximum flow of the whole graph; for causal attention the pair's
 * graph holds the tokens j … i only, about a sixth of the whole on average.
 * A pair that keeps every node (dense attention) runs instead on the whole
 * graph, made once with a stand-in source and sink whose edges' capacities
 * the pair sets: igraph then builds no graph per pair.
 *
 * Debian 12's igraph is built with IGRAPH_THREAD_SAFE 0: its error handler
 * and the stack of memory it frees on an error are process globals. Every
 * igraph call is therefore made under flow_mu, with an error handler that
 * frees igraph's temporaries and returns (the default one aborts the
 * process) and warnings dropped (a library never prints); both are put back
 * before the lock is released. */
#include "flow.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

/* aga_flow_net's int64_t arrays are handed to igraph as igraph_integer_t. */
_Static_assert(sizeof(igraph_integer_t) == sizeof(int64_t), "igraph built with 64-bit integers");

struct ag_flow_graph {
    int n_layer;
    size_t n;
    double *cap;          /* (n_layer, n, n): cap[l][q][k], edge (l+1, q) → (l, k) */
    unsigned char *down;  /* (n, n_layer + 1, n): node (l, k) is reached from (n_layer, i) */
    unsigned char *up;    /* (n, n_layer + 1, n): node (l, k) reaches (0, j) */
    /* The whole graph, made once (n_layer ≥ 2), for the pairs that keep
     * most of it: the middle nodes (l, k), l = 1 … n_layer − 1, numbered
     * (l − 1)·n + k, then S, the source's stand-in, and T, the sink's; its
     * edges the middle ones of positive capacity, then S → (n_layer − 1, k)
     * and (1, k) → T for every k, whose capacities each pair sets. */
    igraph_t whole;
    int has_whole;
    aga_flow_net whole_net; /* edges and the middle capacities (the last 2n slots free) */
};

/* ---- igraph under one lock ------------------------------------------------ */

static pthread_mutex_t flow_mu = PTHREAD_MUTEX_INITIALIZER;
/* The failure igraph reported during the call under way (guarded by flow_mu). */
static struct {
    igraph_error_t code;
    char reason[AG_ERROR_MESSAGE_MAX / 2];
} flow_fail;

/* igraph's error handler while attngeom calls it: note the failure, free
 * igraph's temporaries (what a handler must do, igraph_error.h), return. */
static void flow_error_handler(const char *reason, const char *file, int line,
                               igraph_error_t code)
{
    (void)file;
    (void)line;
    if (flow_fail.code == IGRAPH_SUCCESS) {
        flow_fail.code = code;
        snprintf(flow_fail.reason, sizeof flow_fail.reason, "%s", reason ? reason : "");
    }
    IGRAPH_FINALLY_FREE();
}

/* The handlers the caller had, put back by flow_leave. */
typedef struct {
    igraph_error_handler_t *error;
    igraph_warning_handler_t *warning;
} handlers;

/* Take the lock and install attngeom's handlers. */
static handlers flow_enter(void)
{
    pthread_mutex_lock(&flow_mu);
    handlers h = {igraph_set_error_handler(flow_error_handler),
                  igraph_set_warning_handler(igraph_warning_handler_ignore)};
    flow_fail.code = IGRAPH_SUCCESS;
    return h;
}

/* rc as a status (err set from what the handler noted), the caller's
 * handlers back, the lock released. */
static int flow_leave(handlers h, igraph_error_t rc, ag_error *err)
{
    igraph_set_warning_handler(h.warning);
    igraph_set_error_handler(h.error);
    int status = AG_OK;
    if (rc != IGRAPH_SUCCESS)
        status = ag_error_set(err, rc == IGRAPH_ENOMEM ? AG_ENOMEM : AG_EINVAL, "igraph: %s (%s)",
                              flow_fail.code ? flow_fail.reason : "failed", igraph_strerror(rc));
    pthread_mutex_unlock(&flow_mu);
    return status;
}

/* The views of net's arrays (igraph's view functions fill a struct whose
 * parameter is const; they allocate nothing and cannot fail). */
static void views(const aga_flow_net *net, igraph_vector_int_t *ev, igraph_vector_t *cv)
{
    igraph_vector_int_view(ev, net->edges, 2 * net->n_edges);
    igraph_vector_view(cv, net->cap, net->n_cap);
}

int aga_flow_igraph(const aga_flow_net *net, double *value, ag_error *err)
{
    igraph_vector_int_t ev = {0};
    igraph_vector_t cv = {0};
    views(net, &ev, &cv);
    igraph_t g;
    igraph_real_t v = 0;
    handlers h = flow_enter();
    igraph_error_t rc = igraph_create(&g, &ev, net->n_nodes, IGRAPH_DIRECTED);
    if (rc == IGRAPH_SUCCESS) {
        rc = igraph_maxflow_value(&g, &v, net->source, net->sink, &cv, NULL);
        igraph_destroy(&g);
    }
    *value = rc == IGRAPH_SUCCESS ? v : 0;
    return flow_leave(h, rc, err);
}

/* The maximum flow of the made graph g with net's capacities. */
static int maxflow_on(const igraph_t *g, const aga_flow_net *net, double *value, ag_error *err)
{
    igraph_vector_int_t ev = {0};
    igraph_vector_t cv = {0};
    views(net, &ev, &cv);
    igraph_real_t v = 0;
    handlers h = flow_enter();
    igraph_error_t rc = igraph_maxflow_value(g, &v, net->source, net->sink, &cv, NULL);
    *value = rc == IGRAPH_SUCCESS ? v : 0;
    return flow_leave(h, rc, err);
}

/* ---- the graph ------------------------------------------------------------ */

static int cap_check(const double *cap, int n_layer, size_t n, ag_error *err)
{
    size_t nn = n * n, count = (size_t)n_layer * nn;
    for (size_t k = 0; k < count; k++) {
        if (isfinite(cap[k]) && cap[k] >= 0)
            continue;
        int finite = isfinite(cap[k]);
        return ag_error_set(err, finite ? AG_EINVAL : AG_ENONFINITE,
                            "flow: %s capacity (%g) at layer %zu, row %zu, column %zu%s",
                            finite ? "negative" : "non-finite", cap[k], k / nn, k % nn / n, k % n,
                            finite ? " (a flow needs capacities >= 0)" : "");
    }
    return AG_OK;
}

/* The nodes reached from (top, i) going down: R[l][k] for l = 0 … top. */
static void reach_down(const ag_flow_graph *g, size_t i, unsigned char *R)
{
    size_t n = g->n;
    int top = g->n_layer;
    memset(R, 0, (size_t)(top + 1) * n);
    R[(size_t)top * n + i] = 1;
    for (int l = top; l > 0; l--) {
        const double *C = g->cap + (size_t)(l - 1) * n * n;
        const unsigned char *from = R + (size_t)l * n;
        unsigned char *to = R + (size_t)(l - 1) * n;
        for (size_t q = 0; q < n; q++)
            if (from[q])
                for (size_t k = 0; k < n; k++)
                    to[k] |= C[q * n + k] > 0;
    }
}

/* The nodes that reach (0, j) going down: R[l][q] for l = 0 … top. */
static void reach_up(const ag_flow_graph *g, size_t j, unsigned char *R)
{
    size_t n = g->n;
    memset(R, 0, (size_t)(g->n_layer + 1) * n);
    R[j] = 1;
    for (int l = 1; l <= g->n_layer; l++) {
        const double *C = g->cap + (size_t)(l - 1) * n * n;
        const unsigned char *below = R + (size_t)(l - 1) * n;
        unsigned char *at = R + (size_t)l * n;
        for (size_t q = 0; q < n; q++)
            for (size_t k = 0; k < n && !at[q]; k++)
                at[q] = below[k] && C[q * n + k] > 0;
    }
}

/* ---- the whole graph ------------------------------------------------------- */

/* The whole graph's edges into g->whole_net: the middle ones of positive
 * capacity from the top, then S → (n_layer − 1, k) and (1, k) → T. */
static int whole_edges(ag_flow_graph *g)
{
    size_t n = g->n, L = (size_t)g->n_layer, mid = 0, e = 0;
    for (size_t k = n * n; k < (L - 1) * n * n; k++)
        mid += g->cap[k] > 0;
    aga_flow_net *w = &g->whole_net;
    w->n_edges = w->n_cap = (int64_t)(mid + 2 * n);
    w->n_nodes = (int64_t)((L - 1) * n + 2);
    w->source = w->n_nodes - 2;
    w->sink = w->n_nodes - 1;
    w->edges = malloc(2 * (mid + 2 * n) * sizeof *w->edges);
    w->cap = calloc(mid + 2 * n, sizeof *w->cap);
    if (!w->edges || !w->cap)
        return AG_ENOMEM;
    for (size_t l = L - 2; l >= 1; l--) /* edges (l + 1, q) → (l, k): cap[l][q][k] */
        for (size_t q = 0; q < n; q++)
            for (size_t k = 0; k < n; k++)
                if (g->cap[(l * n + q) * n + k] > 0) {
                    w->edges[2 * e] = (int64_t)(l * n + q);
                    w->edges[2 * e + 1] = (int64_t)((l - 1) * n + k);
                    w->cap[e++] = g->cap[(l * n + q) * n + k];
                }
    for (size_t k = 0; k < n; k++, e++) {
        w->edges[2 * e] = w->source;
        w->edges[2 * e + 1] = (int64_t)((L - 2) * n + k);
        w->edges[2 * (e + n)] = (int64_t)k;
        w->edges[2 * (e + n) + 1] = w->sink;
    }
    return AG_OK;
}

/* The whole graph made once, under the lock (n_layer ≥ 2). */
static int whole_make(ag_flow_graph *g, ag_error *err)
{
    if (whole_edges(g) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "flow: out of memory for the whole graph");
    igraph_vector_int_t ev = {0};
    igraph_vector_t cv = {0};
    views(&g->whole_net, &ev, &cv);
    handlers h = flow_enter();
    igraph_error_t rc = igraph_create(&g->whole, &ev, g->whole_net.n_nodes, IGRAPH_DIRECTED);
    g->has_whole = rc == IGRAPH_SUCCESS;
    return flow_leave(h, rc, err);
}

static void whole_free(ag_flow_graph *g)
{
    if (g->has_whole) {
        handlers h = flow_enter();
        igraph_destroy(&g->whole);
        flow_leave(h, IGRAPH_SUCCESS, NULL);
    }
    free(g->whole_net.edges);
    free(g->whole_net.cap);
}

int ag_flow_graph_new(const double *cap, int n_layer, size_t n, ag_flow_graph **out,
                      ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "flow: NULL result");
    *out = NULL;
    if (!cap)
        return ag_error_set(err, AG_EINVAL, "flow: NULL capacities");
    if (n == 0 || n_layer < 1)
        return ag_error_set(err, AG_EINVAL, "flow: %d layers of %zu tokens (need >= 1 of >= 1)",
                            n_layer, n);
    size_t L1 = (size_t)n_layer + 1;
    if (n > (size_t)INT32_MAX || n > SIZE_MAX / sizeof(double) / n / L1 / n)
        return ag_error_set(err, AG_ELIMIT, "flow: %d layers of %zu tokens is too many",
                            n_layer, n);
    int status = cap_check(cap, n_layer, n, err);
    if (status != AG_OK)
        return status;
    ag_flow_graph *g = calloc(1, sizeof *g);
    size_t nn = n * n;
    if (g) {
        *g = (ag_flow_graph){.n_layer = n_layer, .n = n,
                             .cap = malloc((size_t)n_layer * nn * sizeof *g->cap),
                             .down = malloc(n * L1 * n), .up = malloc(n * L1 * n)};
    }
    if (!g || !g->cap || !g->down || !g->up) {
        ag_flow_graph_free(g);
        return ag_error_set(err, AG_ENOMEM, "flow: out of memory for %d layers of %zu tokens",
                            n_layer, n);
    }
    memcpy(g->cap, cap, (size_t)n_layer * nn * sizeof *g->cap);
    for (size_t t = 0; t < n; t++) {
        reach_down(g, t, g->down + t * L1 * n);
        reach_up(g, t, g->up + t * L1 * n);
    }
    if (n_layer >= 2 && (status = whole_make(g, err)) != AG_OK) {
        ag_flow_graph_free(g);
        return status;
    }
    *out = g;
    return AG_OK;
}

void ag_flow_graph_free(ag_flow_graph *g)
{
    if (!g)
        return;
    whole_free(g);
    free(g->cap);
    free(g->down);
    free(g->up);
    free(g);
}

/* ---- one pair ------------------------------------------------------------- */

/* The pair's nodes (those both tables hold) numbered from the top: id[l][k]
 * their number or -1; returns how many. The source is node 0, the sink the
 * last. */
static igraph_integer_t pair_nodes(const ag_flow_graph *g, const unsigned char *down,
                                   const unsigned char *up, igraph_integer_t *id,
                                   size_t *per_layer)
{
    size_t n = g->n;
    igraph_integer_t count = 0;
    for (int l = g->n_layer; l >= 0; l--) {
        per_layer[l] = 0;
        for (size_t k = 0; k < n; k++) {
            size_t at = (size_t)l * n + k;
            id[at] = down[at] && up[at] ? count++ : -1;
            per_layer[l] += id[at] >= 0;
        }
    }
    return count;
}

/* The pair's edges, layer by layer from the top, into net (sized by the
 * caller for Σ per_layer[l]·per_layer[l−1] edges). */
static void pair_edges(const ag_flow_graph *g, const igraph_integer_t *id, aga_flow_net *net)
{
    size_t n = g->n, e = 0;
    for (int l = g->n_layer; l > 0; l--) {
        const double *C = g->cap + (size_t)(l - 1) * n * n;
        const igraph_integer_t *at = id + (size_t)l * n, *below = id + (size_t)(l - 1) * n;
        for (size_t q = 0; q < n; q++) {
            if (at[q] < 0)
                continue;
            for (size_t k = 0; k < n; k++)
                if (below[k] >= 0 && C[q * n + k] > 0) {
                    net->edges[2 * e] = at[q];
                    net->edges[2 * e + 1] = below[k];
                    net->cap[e++] = C[q * n + k];
                }
        }
    }
    net->n_edges = net->n_cap = (igraph_integer_t)e;
}

/* What the pairs of one row reuse: the node numbers and the edge arrays,
 * grown to the largest pair's graph (fresh buffers per pair would cost a
 * page fault per page of each). */
typedef struct {
    size_t *per_layer;   /* (n_layer + 1) */
    igraph_integer_t *id; /* (n_layer + 1, n) */
    size_t room;         /* edges the arrays hold */
    aga_flow_net net;
    double *whole_cap;   /* (the whole graph's edges), or NULL */
} pair_scratch;

static void scratch_free(pair_scratch *s)
{
    free(s->per_layer);
    free(s->id);
    free(s->net.edges);
    free(s->net.cap);
    free(s->whole_cap);
}

/* Room for `edges` edges (the arrays keep their size otherwise). */
static int scratch_room(pair_scratch *s, size_t edges)
{
    if (edges <= s->room)
        return AG_OK;
    int64_t *e = realloc(s->net.edges, 2 * edges * sizeof *e);
    if (e)
        s->net.edges = e;
    double *c = e ? realloc(s->net.cap, edges * sizeof *c) : NULL;
    if (c)
        s->net.cap = c;
    if (!e || !c)
        return AG_ENOMEM;
    s->room = edges;
    return AG_OK;
}

/* F[i][j] on the whole graph, S and T given the capacities of (n_layer, i)
 * and (0, j): the same maximum flow as on the pair's own graph, used when
 * that would be the whole graph anyway (dense attention): igraph then
 * builds no graph for the pair (bench_flow: about half the time at n = 48
 * without a mask). */
static int whole_value(const ag_flow_graph *g, size_t i, size_t j, pair_scratch *s,
                       double *value, ag_error *err)
{
    size_t n = g->n, E = (size_t)g->whole_net.n_edges, L = (size_t)g->n_layer;
    memcpy(s->whole_cap, g->whole_net.cap, (E - 2 * n) * sizeof *s->whole_cap);
    for (size_t k = 0; k < n; k++) {
        s->whole_cap[E - 2 * n + k] = g->cap[((L - 1) * n + i) * n + k];
        s->whole_cap[E - n + k] = g->cap[k * n + j];
    }
    aga_flow_net w = g->whole_net;
    w.cap = s->whole_cap;
    return maxflow_on(&g->whole, &w, value, err);
}

/* F[i][j] with s's buffers (made by the caller for g). */
static int pair_value(const ag_flow_graph *g, size_t i, size_t j, pair_scratch *s,
                      double *value, ag_error *err)
{
    *value = 0;
    size_t L1 = (size_t)g->n_layer + 1, n = g->n;
    const unsigned char *down = g->down + i * L1 * n, *up = g->up + j * L1 * n;
    if (!up[(size_t)g->n_layer * n + i])
        return AG_OK; /* no path: the flow is 0 */
    s->net.n_nodes = pair_nodes(g, down, up, s->id, s->per_layer);
    size_t edges = 0;
    for (size_t l = 1; l < L1; l++)
        edges += s->per_layer[l] * s->per_layer[l - 1];
    if (s->whole_cap && s->net.n_nodes == g->whole_net.n_nodes)
        return whole_value(g, i, j, s, value, err); /* the pair keeps every node */
    if (scratch_room(s, edges) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "flow: out of memory for the graph of (%zu, %zu)",
                            i, j);
    s->net.source = 0;
    s->net.sink = s->net.n_nodes - 1;
    pair_edges(g, s->id, &s->net);
    return aga_flow_igraph(&s->net, value, err);
}

/* The pairs (i, j) of j in [j0, j1) into F_row[j − j0]; a pair's failure
 * is "F[i][j]: <message>" when `name` is set. */
static int pairs(const ag_flow_graph *g, size_t i, size_t j0, size_t j1, double *F_row,
                 int name, ag_error *err)
{
    size_t L1 = (size_t)g->n_layer + 1;
    pair_scratch s = {.per_layer = malloc(L1 * sizeof *s.per_layer),
                      .id = malloc(L1 * g->n * sizeof *s.id)};
    if (g->has_whole)
        s.whole_cap = malloc((size_t)g->whole_net.n_edges * sizeof *s.whole_cap);
    int status = s.per_layer && s.id && (s.whole_cap || !g->has_whole) ? AG_OK
                 : ag_error_set(err, AG_ENOMEM, "flow: out of memory for %zu tokens", g->n);
    for (size_t j = j0; status == AG_OK && j < j1; j++) {
        ag_error e = {0};
        status = pair_value(g, i, j, &s, &F_row[j - j0], &e);
        if (status != AG_OK && name)
            ag_error_set(err, status, "F[%zu][%zu]: %s", i, j, e.message);
        else if (status != AG_OK)
            *err = e;
    }
    scratch_free(&s);
    return status;
}

int ag_flow_graph_value(const ag_flow_graph *g, size_t i, size_t j, double *value,
                        ag_error *err)
{
    if (!g || !value)
        return ag_error_set(err, AG_EINVAL, "flow: NULL argument");
    *value = 0;
    if (i >= g->n || j >= g->n)
        return ag_error_set(err, AG_ERANGE, "flow: pair (%zu, %zu) outside %zu tokens", i, j, g->n);
    return pairs(g, i, j, j + 1, value, 0, err);
}

int ag_flow_graph_row(const ag_flow_graph *g, size_t i, double *F_row, ag_error *err)
{
    if (!g || !F_row)
        return ag_error_set(err, AG_EINVAL, "flow: NULL argument");
    if (i >= g->n)
        return ag_error_set(err, AG_ERANGE, "flow: row %zu outside %zu tokens", i, g->n);
    return pairs(g, i, 0, g->n, F_row, 1, err);
}

int ag_attention_flow(const double *cap, int n_layer, size_t n, double *F, ag_error *err)
{
    if (!F)
        return ag_error_set(err, AG_EINVAL, "flow: NULL result");
    ag_flow_graph *g = NULL;
    int status = ag_flow_graph_new(cap, n_layer, n, &g, err);
    for (size_t i = 0; status == AG_OK && i < n; i++)
        status = ag_flow_graph_row(g, i, F + i * n, err);
    ag_flow_graph_free(g);
    return status;
}
