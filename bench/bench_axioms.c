/* bench_axioms.c — docs/metrics.md, family L: triangle_violation (n³
 * comparisons) of one random softmax head (logits N(0, 1)) and of a
 * causal one, n = 256, 512, 1024, one thread. The target (issue 28): under
 * a second per head at n = 1024. Public API only. Prints milliseconds per
 * head, wall and CPU (best of the repeats each), with the value, and the
 * same for symmetry_gap,self_cost alone (O(n²)).
 *
 *   make bench   (or build/bench/bench_axioms [repeats]) */
#include "bench_head.h"

/* triangle_violation and the rest are matrix metrics of the square A. */
static int matrix_metrics(const double *A, size_t n, const ag_metric_set *sel, ag_record *r,
                          ag_error *err)
{
    return ag_matrix_metrics(A, n, n, sel, r, err);
}

int main(int argc, char **argv)
{
    int repeats = bench_repeats(argc, argv);
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
            bench_softmax_head(rng, n, causal, A);
            double t_rest[2], t_tri[2], v = 0;
            bench_best_time(matrix_metrics, A, n, rest, r, repeats, t_rest, "bench_axioms");
            bench_best_time(matrix_metrics, A, n, tri, r, repeats, t_tri, "bench_axioms");
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
