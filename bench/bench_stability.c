/* bench_stability.c — jacobian_norm (SPEC §3 E) of random heads, d = 128,
 * d_h = 32, n = 200 and n = 1024, causal and not, through the public API
 * only (ag_stability_metrics, and ag_head_linearize + ag_head_jacobian_norm
 * for the Lanczos diagnostics). Prints ms per head and the JᵀJ products used.
 *
 *   make bench   (or build/bench/bench_stability [heads per size]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include <attngeom.h>

#include "bench_clock.h"

enum { D = 128, DH = 32 };

/* Box–Muller from the uniform generator (keeps GSL's randist header, whose
 * cblas declarations clash with OpenBLAS's, out of the picture). */
static double gauss(gsl_rng *r)
{
    double u = gsl_rng_uniform_pos(r), v = gsl_rng_uniform(r);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* X like a normed residual stream: N(0, 1) entries plus a shared mean
 * direction (real inputs are anisotropic); W ~ N(0, 1/d). */
static void fill(gsl_rng *r, double *x, size_t n, double *wq, double *wk, double *b)
{
    double mean[D];
    for (size_t j = 0; j < D; j++)
        mean[j] = gauss(r);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < D; j++)
            x[i * D + j] = gauss(r) + 0.5 * mean[j];
    for (size_t i = 0; i < (size_t)D * DH; i++) {
        wq[i] = gauss(r) / sqrt((double)D);
        wk[i] = gauss(r) / sqrt((double)D);
    }
    for (size_t i = 0; i < 2 * DH; i++)
        b[i] = 0.1 * gauss(r);
}

int main(int argc, char **argv)
{
    int heads = argc > 1 ? atoi(argv[1]) : 3;
    if (heads < 1)
        heads = 1;
    const size_t sizes[2] = {200, 1024};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    double *x = malloc(sizes[1] * D * sizeof *x), *wq = malloc(D * DH * sizeof *wq),
           *wk = malloc(D * DH * sizeof *wk), *b = malloc(2 * DH * sizeof *b);
    if (!rng || !x || !wq || !wk || !b)
        return fprintf(stderr, "bench_stability: out of memory\n"), 1;
    ag_metric_set *sel = NULL;
    ag_record *rec = ag_record_new();
    if (ag_metric_set_new(AG_FAMILIES_HEADS, "jacobian_norm", &sel, NULL) != AG_OK || !rec)
        return fprintf(stderr, "bench_stability: out of memory\n"), 1;
    printf("bench_stability: jacobian_norm of random heads, d = %d, d_h = %d, %d heads per size\n",
           D, DH, heads);
    for (int s = 0; s < 2; s++)
        for (int causal = 1; causal >= 0; causal--) {
            size_t n = sizes[s];
            double total = 0, worst = 0, sum_norm = 0;
            int products = 0, restarts = 0;
            double bound = 0;
            for (int k = 0; k < heads; k++) {
                fill(rng, x, n, wq, wk, b);
                ag_head_input in = {.x = x, .n = n, .d = D, .wq = wq, .wk = wk, .bq = b,
                                    .bk = b + DH, .d_h = DH, .causal = causal};
                ag_record_init(rec, 0, k, n, n);
                ag_error err = {0};
                double t0 = bench_now(CLOCK_MONOTONIC);
                if (ag_stability_metrics(&in, NULL, sel, rec, &err) != AG_OK)
                    return fprintf(stderr, "bench_stability: %s\n", err.message), 1;
                double dt = bench_now(CLOCK_MONOTONIC) - t0;
                total += dt;
                worst = fmax(worst, dt);
                double norm;
                ag_record_value(rec, AG_M_JACOBIAN_NORM, &norm);
                sum_norm += norm;
                /* the same head again for the iteration's diagnostics */
                ag_head_lin *lin = NULL;
                ag_lanczos_info info;
                double jn;
                if (ag_head_linearize(&in, &lin, &err) != AG_OK ||
                    ag_head_jacobian_norm(lin, &jn, &info, &err) != AG_OK)
                    return fprintf(stderr, "bench_stability: %s\n", err.message), 1;
                ag_head_lin_free(lin);
                products += info.products;
                restarts += info.restarts;
                bound = fmax(bound, info.rel_bound);
            }
            printf("  n = %4zu %-10s %8.1f ms per head (worst %.1f), %.1f JtJ products per head, "
                   "%d restarts, rel bound <= %.1e, mean |J|_2 %.4g\n",
                   n, causal ? "causal" : "non-causal", 1e3 * total / heads, 1e3 * worst,
                   (double)products / heads, restarts, bound, sum_norm / heads);
        }
    free(x);
    free(wq);
    free(wk);
    free(b);
    ag_record_free(rec);
    ag_metric_set_free(sel);
    gsl_rng_free(rng);
    return 0;
}
