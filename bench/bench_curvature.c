/* bench_curvature.c — SPEC §3 F (edges, Forman, exact Ollivier) of one
 * random softmax attention head (logits N(0, 1), row softmax) at the
 * default threshold τ = 1/n, for n = 64, 256, 512; and a causal head of the
 * same size. Public API only. Prints milliseconds per head, wall and CPU
 * (best of the repeats; on a shared machine the CPU time is what the work
 * costs; CPU sums the threads), on the calling thread alone (-j 1) and on a
 * pool of 2 threads (-j 2: the edges' transport problems in parallel; the
 * bench exits if the two records differ in a bit), and the number of edges
 * (= transport problems).
 *
 *   make bench   (or build/bench/bench_curvature [repeats]) */
#include <string.h>

#include "bench_head.h"

static ag_pool *bench_pool; /* the threads of the -j 2 columns */

/* Family F at the default threshold τ = 1/n, on the calling thread. */
static int curvature(const double *A, size_t n, const ag_metric_set *sel, ag_record *r,
                     ag_error *err)
{
    return ag_curvature_metrics(A, n, -1, sel, r, err);
}

/* The same on bench_pool's threads. */
static int curvature_pool(const double *A, size_t n, const ag_metric_set *sel, ag_record *r,
                          ag_error *err)
{
    ag_curvature_options o = AG_CURVATURE_OPTIONS_DEFAULT;
    o.pool = bench_pool;
    return ag_curvature_metrics_ex(A, n, sel, &o, r, err);
}

/* Exit unless the keys of family F are the same bytes in a and b. */
static void same_bytes(const ag_record *a, const ag_record *b)
{
    static const ag_metric keys[] = {AG_M_EDGES, AG_M_FORMAN_MEAN, AG_M_FORMAN_MIN,
                                     AG_M_OLLIVIER_MEAN, AG_M_OLLIVIER_MIN};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        double x = 0, y = 0;
        ag_record_value(a, keys[k], &x);
        ag_record_value(b, keys[k], &y);
        if (memcmp(&x, &y, sizeof x) != 0) {
            fprintf(stderr, "bench_curvature: %s differs on 2 threads (%.17g, %.17g)\n",
                    ag_metric_name(keys[k]), x, y);
            exit(1);
        }
    }
}

/* Metric m of r (0 unless a number). */
static double value(const ag_record *r, ag_metric m)
{
    double v;
    ag_record_value(r, m, &v);
    return v;
}

int main(int argc, char **argv)
{
    int repeats = bench_repeats(argc, argv);
    const size_t sizes[] = {64, 256, 512};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    ag_metric_set *sel = NULL, *fsel = NULL; /* every key of F; its Forman keys */
    ag_record *r = ag_record_new(), *rf = ag_record_new(), *r2 = ag_record_new();
    if (ag_metric_set_new(AG_FAMILIES_MATRIX, "curvature", &sel, NULL) != AG_OK ||
        ag_metric_set_new(AG_FAMILIES_MATRIX, "edges,forman_mean,forman_min", &fsel, NULL) !=
            AG_OK ||
        !r || !rf || !r2 || ag_pool_new(2, &bench_pool, NULL) != AG_OK)
        return fprintf(stderr, "bench_curvature: out of memory\n"), 1;
    printf("bench_curvature: one head, default tau = 1/n, best of %d\n", repeats);
    printf("  %-8s %5s %9s %12s %12s %12s %12s %12s %14s\n", "kind", "n", "edges", "ms/head",
           "CPU ms", "-j 2 ms", "-j 2 CPU ms", "forman only", "ollivier_mean");
    for (int causal = 0; causal <= 1; causal++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            double *A = malloc(n * n * sizeof *A);
            if (!A)
                return 1;
            bench_softmax_head(rng, n, causal, A);
            double best[2], best2[2], bestf[2];
            bench_best_time(curvature, A, n, sel, r, repeats, best, "bench_curvature");
            bench_best_time(curvature_pool, A, n, sel, r2, repeats, best2, "bench_curvature");
            same_bytes(r, r2);
            bench_best_time(curvature, A, n, fsel, rf, repeats, bestf, "bench_curvature");
            printf("  %-8s %5zu %9.0f %12.1f %12.1f %12.1f %12.1f %12.2f %14.6f\n",
                   causal ? "causal" : "softmax", n, value(r, AG_M_EDGES), 1e3 * best[0],
                   1e3 * best[1], 1e3 * best2[0], 1e3 * best2[1], 1e3 * bestf[0],
                   value(r, AG_M_OLLIVIER_MEAN));
            free(A);
        }
    ag_record_free(r);
    ag_record_free(rf);
    ag_record_free(r2);
    ag_pool_free(bench_pool);
    ag_metric_set_free(sel);
    ag_metric_set_free(fsel);
    gsl_rng_free(rng);
    return 0;
}
