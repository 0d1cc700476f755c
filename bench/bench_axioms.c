/* bench_axioms.c — docs/metrics.md, family L: triangle_violation (n³
 * comparisons) of one random softmax head (logits N(0, 1)) and of a
 * causal one, n = 256, 512, 1024, one thread. The target (issue 28): under
 * a second per head at n = 1024. Public API only. Prints milliseconds per
 * head, wall and CPU (best of the repeats each), with the value, and the
 * same for symmetry_gap,self_cost alone (O(n²)).
 *
 *   make bench   (or build/bench/bench_axioms [repeats]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <attngeom.h>

/* Seconds of the clock: CLOCK_MONOTONIC (wall) or CLOCK_PROCESS_CPUTIME_ID
 * (this process's CPU time: on a shared machine, what the head costs). */
static double now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Row i: softmax of N(0, 1) logits over keys 0..n−1, or 0..i when causal. */
static void random_head(gsl_rng *rng, size_t n, int causal, double *A)
{
    for (size_t i = 0; i < n; i++) {
        double *row = A + i * n, total = 0;
        size_t keys = causal ? i + 1 : n;
        for (size_t j = 0; j < n; j++) {
            row[j] = j < keys ? exp(gsl_ran_gaussian(rng, 1.0)) : 0.0;
            total += row[j];
        }
        for (size_t j = 0; j < keys; j++)
            row[j] /= total;
    }
}

/* Best wall and CPU times (best[0], best[1]) of `repeats` runs of sel on
 * A, the record left in r. */
static void best_time(const double *A, size_t n, const ag_metric_set *sel, ag_record *r,
                      int repeats, double best[2])
{
    best[0] = best[1] = INFINITY;
    for (int k = 0; k < repeats; k++) {
        ag_error err = {0};
        ag_record_init(r, 0, 0, n, n);
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        if (ag_matrix_metrics(A, n, n, sel, r, &err) != AG_OK) {
            fprintf(stderr, "bench_axioms: %s\n", err.message);
            exit(1);
        }
        best[0] = fmin(best[0], now(CLOCK_MONOTONIC) - w0);
        best[1] = fmin(best[1], now(CLOCK_PROCESS_CPUTIME_ID) - c0);
    }
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    if (repeats < 1)
        repeats = 1;
    const size_t sizes[] = {256, 512, 1024};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    ag_metric_set *tri = NULL, *rest = NULL;
    ag_record *r = ag_record_new();
    if (!rng || !r ||
        ag_metric_set_new(AG_FAMILIES_MATRIX, "triangle_violation", &tri, NULL) != AG_OK ||
        ag_metric_set_new(AG_FAMILIES_MATRIX, "symmetry_gap,self_cost", &rest, NULL) != AG_OK)
        return fprintf(stderr, "bench_axioms: out of memory\n"), 1;
    printf("bench_axioms: one head, one thread, best of %d (target: n = 1024 under 1000 ms)\n",
           repeats);
    printf("  %-8s %5s %24s %20s %22s\n", "kind", "n", "triangle ms/head (CPU)",
           "triangle_violation", "symmetry+self ms (CPU)");
    for (int causal = 0; causal <= 1; causal++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            double *A = malloc(n * n * sizeof *A);
            if (!A)
                return 1;
            random_head(rng, n, causal, A);
            double t_rest[2], t_tri[2], v = 0;
            best_time(A, n, rest, r, repeats, t_rest);
            best_time(A, n, tri, r, repeats, t_tri);
            ag_record_value(r, AG_M_TRIANGLE_VIOLATION, &v);
            printf("  %-8s %5zu %15.1f (%6.1f) %20.3e %14.2f (%5.2f)\n",
                   causal ? "causal" : "softmax", n, 1e3 * t_tri[0], 1e3 * t_tri[1], v,
                   1e3 * t_rest[0], 1e3 * t_rest[1]);
            free(A);
        }
    ag_record_free(r);
    ag_metric_set_free(tri);
    ag_metric_set_free(rest);
    gsl_rng_free(rng);
    return 0;
}
