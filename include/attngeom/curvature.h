/* attngeom/curvature.h — curvature of the thresholded attention graph
 * (docs/metrics.md, family F). docs/curvature.md gives the definitions, their meaning for
 * attention, the exact optimal-transport method and its cost.
 *
 * The graph: W = (A + Aᵀ)/2 on the n tokens, edge {i, j} (i ≠ j) iff
 * W_ij ≥ τ. Per edge:
 *   Forman (Sreejith et al. 2016, unit node weights)
 *     F(i,j) = 2 − Σ_{k∈N(i)∖{j}} √(W_ij/W_ik) − Σ_{k∈N(j)∖{i}} √(W_ij/W_jk)
 *   Ollivier (Ollivier 2009)
 *     κ(i,j) = 1 − W₁(m_i, m_j),  m_i = ½δ_i + ½ Σ_{k∈N(i)} (W_ik/Σ_{k'} W_ik') δ_k,
 *     ground cost the hop distance, W₁ solved exactly.
 */
#ifndef ATTNGEOM_CURVATURE_H
#define ATTNGEOM_CURVATURE_H

#include "core.h"
#include "metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The keys of family F (edges, forman_mean, forman_min, ollivier_mean,
 * ollivier_min) selected in `sel`, of the square n×n row-major A (finite,
 * borrowed), into rec. tau < 0 means the default 1/n.
 *   - any entry < 0 (−0.0 is not): all five keys null;
 *   - no edge: edges = 0 and the four curvature keys null;
 *   - forman_* null when some F(i,j) is not finite: only possible with τ = 0,
 *     where a zero-weight pair is an edge and √(W_ij/W_ik) divides by
 *     W_ik = 0 (+∞, or 0/0 when W_ij = 0 too);
 *   - ollivier_* null when some m_i is undefined: Σ_{k∈N(i)} W_ik = 0, again
 *     only with τ = 0.
 * Unselected keys are left as they are. Only the Ollivier keys pay for the
 * transport problems. Errors: AG_EINVAL (n = 0, tau > 1 or NaN),
 * AG_ENONFINITE, AG_ENOMEM. */
AG_EXPORT int ag_curvature_metrics(const double *A, size_t n, double tau,
                                   const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* Options of ag_curvature_metrics_ex. Carries its size (ABI rule, core.h):
 * start from AG_CURVATURE_OPTIONS_DEFAULT. */
typedef struct {
    size_t size;           /* sizeof(ag_curvature_options), set by the macro */
    double edge_threshold; /* edge iff W_ij >= τ; < 0 means 1/n */
    ag_pool *pool;         /* the edges' transport problems on these threads (borrowed;
                            * NULL: the calling thread alone); each thread's transport
                            * workspace is made for the call */
    ag_workers *workers;   /* in place of pool: the problems on workers' pool, each
                            * thread's workspace carved from its own ag_matrix_work
                            * (ag_workers_work), kept for the next call (borrowed;
                            * NULL: use pool) */
} ag_curvature_options;
#define AG_CURVATURE_OPTIONS_DEFAULT \
    {.size = sizeof(ag_curvature_options), .edge_threshold = -1, .pool = NULL, .workers = NULL}

/* ag_curvature_metrics with options (NULL: the defaults): the same keys, with
 * the edges' Forman and Ollivier curvatures computed on opt->pool's threads
 * in fixed blocks of edges and summed in edge order afterwards, so the record
 * is the same bytes for any pool (a call from inside a task of the pool runs
 * in that task's thread: attngeom/parallel.h). The pool (workers' pool) must
 * not be running another ag_pool_run. Errors: those of ag_curvature_metrics, and AG_EINVAL
 * for an options size of 0 or one this library does not know. */
AG_EXPORT int ag_curvature_metrics_ex(const double *A, size_t n, const ag_metric_set *sel,
                                      const ag_curvature_options *opt, ag_record *rec,
                                      ag_error *err);

/* One edge of the graph and its curvatures (i < j). */
typedef struct {
    size_t i, j;
    double weight;    /* W_ij */
    double forman;    /* may be ±inf or NaN with τ = 0 (see above) */
    double ollivier;  /* NaN when m_i or m_j is undefined */
} ag_curvature_edge;

/* Every edge of the graph of A (no negative entry, finite) at threshold tau
 * (< 0: 1/n), in the order (0,1), (0,2), ..., (1,2), ...; *edges is malloc'ed
 * (NULL when *count = 0) and released with free(). with_ollivier = 0 skips the
 * transport problems (ollivier = NaN). Errors: AG_EINVAL (n = 0, a negative
 * entry, bad tau), AG_ENONFINITE, AG_ENOMEM. */
AG_EXPORT int ag_curvature_edges(const double *A, size_t n, double tau, int with_ollivier,
                                 ag_curvature_edge **edges, size_t *count, ag_error *err);

/* Exact W₁(mu, nu) between two measures of equal total mass on k points,
 * with a ground metric whose values are integers in {0, 1, 2, 3}:
 * hops[u*k + v] (symmetric, 0 exactly on the diagonal, triangle inequality
 * holds — e.g. hop distances within the balls of two adjacent vertices).
 * mu, nu ≥ 0. The solver cancels the common mass min(mu, nu) (optimal for
 * a metric cost) and solves the remaining transportation problem as one
 * maximum flow (see analysis/curvature.c). Errors: AG_EINVAL (negative or
 * non-finite mass, a cost outside 0..3, masses that differ by more than
 * rounding), AG_ENOMEM. */
AG_EXPORT int ag_wasserstein1_hops(const double *mu, const double *nu, size_t k,
                                   const unsigned char *hops, double *w1, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
