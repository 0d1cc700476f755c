/* bench_flow.c — attention flow (Abnar & Zuidema 2020, §3; attngeom/layers.h)
 * at GPT-2 small's shape: L = 12 layers of H = 12 heads, n = 128 tokens of
 * random causal attention (softmax of uniform scores on [0, 6)), and the same on
 * n = 48 without the mask. The n² maximum flows on the L·n-node graph are
 * timed through ag_run_flow_matrix at 1 and 2 threads (the bytes must be
 * the same), and the causal matrix checked against its invariants
 * (F[i][j] = 0 for j > i, R ≤ F ≤ 1 for the rollout R). The goal: under a
 * minute on 2 cores at n = 128 (issue 27).
 *
 *   make bench   (or build/bench/bench_flow [n]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include <attngeom.h>

#include "bench_clock.h"

enum { L = 12, H = 12 };

/* The capacities Ã_l of L layers of H random softmax heads (ag_rollout_mix). */
static int capacities(size_t n, int causal, double *cap, double *attn, gsl_rng *rng)
{
    for (int l = 0; l < L; l++) {
        for (size_t m = 0; m < (size_t)H * n; m++) {
            double *row = attn + m * n, sum = 0;
            size_t i = m % n;
            for (size_t j = 0; j < n; j++)
                sum += row[j] = causal && j > i ? 0 : exp(6 * gsl_rng_uniform(rng));
            for (size_t j = 0; j < n; j++)
                row[j] /= sum;
        }
        ag_error err = {0};
        if (ag_rollout_mix(attn, H, n, cap + (size_t)l * n * n, &err) != AG_OK)
            return fprintf(stderr, "bench_flow: %s\n", err.message), 1;
    }
    return 0;
}

/* Violations of the causal invariants of F against the rollout R_{L-1}. */
static size_t violations(const double *F, const double *R, size_t n, int causal)
{
    size_t bad = 0;
    for (size_t k = 0; k < n * n; k++) {
        size_t i = k / n, j = k % n;
        bad += (causal && j > i && F[k] != 0) || F[k] > 1 + 1e-12 || F[k] < R[k] - 1e-12;
    }
    return bad;
}

static int run(size_t n, int causal, gsl_rng *r)
{
    double *cap = malloc(L * n * n * sizeof *cap), *attn = malloc(H * n * n * sizeof *attn);
    double *F1 = malloc(n * n * sizeof *F1), *F2 = malloc(n * n * sizeof *F2);
    double *R = malloc(L * n * n * sizeof *R);
    ag_run_options *opt = ag_run_options_new();
    if (!cap || !attn || !F1 || !F2 || !R || !opt)
        return fprintf(stderr, "bench_flow: out of memory\n"), 1;
    if (capacities(n, causal, cap, attn, r))
        return 1;
    /* the rollout of the same capacities: R_l = Ã_l R_{l-1} */
    memcpy(R, cap, n * n * sizeof *R);
    for (int l = 1; l < L; l++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t k = 0; k < n; k++)
                    s += cap[((size_t)l * n + i) * n + k] * R[((size_t)(l - 1) * n + k) * n + j];
                R[((size_t)l * n + i) * n + j] = s;
            }
    double t[2], cpu[2];
    double *F[2] = {F1, F2};
    for (int threads = 1; threads <= 2; threads++) {
        ag_error err = {0};
        if (ag_run_options_set(opt, "threads", threads, &err) != AG_OK)
            return fprintf(stderr, "bench_flow: %s\n", err.message), 1;
        double t0 = bench_now(CLOCK_MONOTONIC), c0 = bench_now(CLOCK_PROCESS_CPUTIME_ID);
        if (ag_run_flow_matrix(cap, L, n, opt, NULL, F[threads - 1], &err) != AG_OK)
            return fprintf(stderr, "bench_flow: %s\n", err.message), 1;
        t[threads - 1] = bench_now(CLOCK_MONOTONIC) - t0;
        cpu[threads - 1] = bench_now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    size_t bad = violations(F1, R + (size_t)(L - 1) * n * n, n, causal);
    int same = memcmp(F1, F2, n * n * sizeof *F1) == 0;
    printf("  %-6s n = %3zu: %5zu flows on %4zu nodes  -j1 %6.2f s (CPU %6.2f s)  -j2 %6.2f s "
           "(CPU %6.2f s)  same bytes: %s  invariant violations: %zu\n",
           causal ? "causal" : "dense", n, n * n, (L + 1) * n, t[0], cpu[0], t[1], cpu[1],
           same ? "yes" : "NO", bad);
    ag_run_options_free(opt);
    free(cap), free(attn), free(F1), free(F2), free(R);
    return !same || bad;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 128;
    if (n < 2)
        n = 2;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return fprintf(stderr, "bench_flow: out of memory\n"), 1;
    gsl_rng_set(r, 7);
    printf("bench_flow: attention flow, L = %d layers of %d random heads\n", L, H);
    int rc = run(n, 1, r) || run(n < 48 ? n : 48, 0, r);
    gsl_rng_free(r);
    return rc;
}
