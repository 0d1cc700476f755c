/* bench_head.h — what the one-head benchmarks of the matrix metrics share
 * (bench_axioms.c, bench_curvature.c): a random softmax head,
 * and the best wall and CPU time of repeated runs of one metric call.
 * Header-only: each bench/NAME.c links into its own program (Makefile). */
#ifndef AG_BENCH_HEAD_H
#define AG_BENCH_HEAD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <attngeom.h>

#include "bench_clock.h"

/* The repeats of argv[1] (default 3, at least 1). */
static inline int bench_repeats(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    return repeats < 1 ? 1 : repeats;
}

/* Row i of the n×n A: softmax of N(0, 1) logits over keys 0..n−1, or 0..i
 * when causal (the masked entries 0). */
static inline void bench_softmax_head(gsl_rng *rng, size_t n, int causal, double *A)
{
    for (size_t i = 0; i < n; i++) {
        double *row = A + i * n, mx = -INFINITY, s = 0;
        size_t len = causal ? i + 1 : n;
        for (size_t j = 0; j < len; j++) {
            row[j] = gsl_ran_gaussian(rng, 1.0);
            mx = fmax(mx, row[j]);
        }
        for (size_t j = 0; j < n; j++) {
            row[j] = j < len ? exp(row[j] - mx) : 0.0;
            s += row[j];
        }
        for (size_t j = 0; j < len; j++)
            row[j] /= s;
    }
}

/* One call of the metrics of sel on the n×n A into r (a status). */
typedef int (*bench_metrics_fn)(const double *A, size_t n, const ag_metric_set *sel,
                                ag_record *r, ag_error *err);

/* Best wall and CPU times (best[0], best[1]) of `repeats` calls of fn, the
 * last record left in r; exits naming `who` when a call fails. */
static inline void bench_best_time(bench_metrics_fn fn, const double *A, size_t n,
                                   const ag_metric_set *sel, ag_record *r, int repeats,
                                   double best[2], const char *who)
{
    best[0] = best[1] = INFINITY;
    for (int k = 0; k < repeats; k++) {
        ag_error err = {0};
        ag_record_init(r, 0, 0, n, n);
        double w0 = bench_now(CLOCK_MONOTONIC), c0 = bench_now(CLOCK_PROCESS_CPUTIME_ID);
        if (fn(A, n, sel, r, &err) != AG_OK) {
            fprintf(stderr, "%s: %s\n", who, err.message);
            exit(1);
        }
        best[0] = fmin(best[0], bench_now(CLOCK_MONOTONIC) - w0);
        best[1] = fmin(best[1], bench_now(CLOCK_PROCESS_CPUTIME_ID) - c0);
    }
}

#endif
