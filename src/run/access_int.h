/* Internal prefix: agr_ (module src/run/). access.c and access_model.c are the Python facade of attngeom/access.h, moved here whole: they are to be split and folded into the run module (plan-25 C: errors -> base, head inputs -> engine, aggregate results -> stats). */
/* access_int.h — what the two halves of attngeom/access.h share: the
 * layout of ag_run_options, private to the library. */
#ifndef AG_ACCESS_INT_H
#define AG_ACCESS_INT_H

#include "../../analysis/metrics_int.h"

struct ag_run_options {
    int threads;
    ag_precision precision;
    double edge_threshold, epsilon;
    int trials;
    unsigned long seed;
    int *layers, *heads; /* selected indices, sorted, no repeats; NULL: all */
    size_t nlayers, nheads;
    const ag_metric_set *metrics; /* borrowed; NULL: the entry point's default */
    const ag_run_dist *dist;      /* borrowed; NULL: one process */
};
#define AGR_OPTIONS_DEFAULT                                                                  \
    {.threads = 1, .precision = AG_PRECISION_F32, .edge_threshold = -1, .epsilon = 1e-3,    \
     .trials = 8, .seed = 1}

/* t's tasks over opt's distribution (attngeom/run.h, ag_run_tasks_run);
 * called only when opt has one. */
int agr_tasks_dist(ag_workers *w, const ag_run_tasks *t, const ag_run_options *opt);

/* Workers (attngeom/parallel.h) for the tasks of one call: opt's threads,
 * no more than there are tasks. */
int ag_run_workers(const ag_run_options *opt, size_t tasks, ag_workers **w, ag_error *err);

/* opt, or (NULL) the defaults (AGR_OPTIONS_DEFAULT). */
const ag_run_options *agr_options(const ag_run_options *opt);
/* opt's selected layers over m's n_layer and heads over its n_head, both
 * the caller's to free (also on failure). */
int agr_model_selections(const ag_model *m, const ag_run_options *opt, ag_selection **layers,
                         ag_selection **heads, ag_error *err);
/* What a run computes: opt's metrics, or (none set) a new set of
 * `families` into *own, the caller's to free. */
int agr_metrics(const ag_run_options *opt, unsigned families, const ag_metric_set **sel,
                ag_metric_set **own, ag_error *err);
/* The workers of a call: w, or (NULL) new ones for `tasks` tasks of opt
 * into *own, the caller's to free. */
int agr_workers(ag_workers *w, const ag_run_options *opt, size_t tasks, ag_workers **use,
                ag_workers **own, ag_error *err);

#endif
