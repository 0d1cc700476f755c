/* bench_weights.c — family D of a GPT-2-small-sized layer (d = 768,
 * d_h = 64, 12 heads) in factored form against the dense definition (forming
 * the d×d M_QK and M_OV, a d×d SVD each and a d×d general eigenproblem),
 * timed in one run on the same random weights. Prints the ratio.
 *
 *   make bench   (or build/bench/bench_weights [repeats]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>
#include <gsl/gsl_rng.h>

#include <attngeom.h>

#include "bench_clock.h"

enum { D = 768, DH = 64, H = 12 };

/* The dense definition: every key of SPEC §3 D from the d×d products. */
static int dense_head(const double *wq, const double *wk, const double *wv, const double *wo,
                      double *m, double *sigma, double *re, double *im, double *checksum)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, D, D, DH, 1.0, wq, H * DH, wk,
                H * DH, 0.0, m, D); // M_QK (D, D)
    if (ag_svd_values(m, D, D, sigma) != AG_OK)
        return 1;
    double tr = 0, f2 = 0;
    for (size_t i = 0; i < D; i++)
        for (size_t j = 0; j < D; j++) {
            tr += m[i * D + j] * m[j * D + i];
            f2 += m[i * D + j] * m[i * D + j];
        }
    *checksum += sigma[0] + 0.5 * (1 + tr / f2);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, D, DH, 1.0, wv, H * DH, wo, D,
                0.0, m, D); // M_OV (D, D)
    if (ag_svd_values(m, D, D, sigma) != AG_OK || ag_eig_general_values(m, D, re, im) != AG_OK)
        return 1;
    double sr = 0, sa = 0;
    for (size_t k = 0; k < D; k++) {
        sr += re[k];
        sa += hypot(re[k], im[k]);
    }
    *checksum += sigma[0] + sr / sa;
    return 0;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    size_t nw = (size_t)D * H * DH;
    double *wq = malloc(nw * sizeof *wq), *wk = malloc(nw * sizeof *wk),
           *wv = malloc(nw * sizeof *wv), *wo = malloc(nw * sizeof *wo);
    double *m = malloc((size_t)D * D * sizeof *m), *sigma = malloc(D * sizeof *sigma),
           *re = malloc(D * sizeof *re), *im = malloc(D * sizeof *im);
    for (size_t k = 0; k < nw; k++) {
        wq[k] = 0.04 * (gsl_rng_uniform(rng) - 0.5);
        wk[k] = 0.04 * (gsl_rng_uniform(rng) - 0.5);
        wv[k] = 0.04 * (gsl_rng_uniform(rng) - 0.5);
        wo[k] = 0.04 * (gsl_rng_uniform(rng) - 0.5);
    }
    ag_metric_set *sel = NULL;
    ag_record *r = ag_record_new();
    if (ag_metric_set_new(AG_FAMILIES_WEIGHTS, NULL, &sel, NULL) != AG_OK || !r)
        return fprintf(stderr, "bench_weights: out of memory\n"), 1;
    double best_f = INFINITY, best_d = INFINITY, sum_f = 0, sum_d = 0;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = bench_now(CLOCK_MONOTONIC);
        for (size_t h = 0; h < H; h++) {
            ag_head_factors f = {.d = D, .d_h = DH, .d_out = D,
                                 .wq = wq + h * DH, .ldq = H * DH, .wk = wk + h * DH, .ldk = H * DH,
                                 .wv = wv + h * DH, .ldv = H * DH, .wo = wo + h * DH * D, .ldo = D};
            ag_record_init(r, 0, (int)h, D, D);
            if (ag_weight_metrics(&f, sel, r, NULL) != AG_OK)
                return fprintf(stderr, "bench_weights: factored failed\n"), 1;
            const ag_metric keys[] = {AG_M_QK_SIGMA_MAX, AG_M_QK_SYMMETRY_SCORE,
                                      AG_M_OV_SIGMA_MAX, AG_M_OV_COPYING_SCORE};
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
                double v;
                ag_record_value(r, keys[k], &v);
                sum_f += v;
            }
        }
        double t1 = bench_now(CLOCK_MONOTONIC);
        for (size_t h = 0; h < H; h++)
            if (dense_head(wq + h * DH, wk + h * DH, wv + h * DH, wo + h * DH * D, m, sigma, re,
                           im, &sum_d))
                return fprintf(stderr, "bench_weights: dense failed\n"), 1;
        double t2 = bench_now(CLOCK_MONOTONIC);
        best_f = fmin(best_f, t1 - t0);
        best_d = fmin(best_d, t2 - t1);
    }
    /* The same four keys summed over heads and repeats: the two paths must
     * agree, or the timing compares different work. */
    int agree = fabs(sum_f - sum_d) <= 1e-9 * fabs(sum_d);
    printf("bench_weights: d=%d d_h=%d heads=%d (GPT-2 small layer), best of %d: "
           "factored %.1f ms, dense %.1f ms, dense/factored = %.0fx; results %s\n",
           D, DH, H, repeats, 1e3 * best_f, 1e3 * best_d, best_d / best_f,
           agree ? "agree" : "DISAGREE");
    free(wq); free(wk); free(wv); free(wo); free(m); free(sigma); free(re); free(im);
    ag_record_free(r);
    ag_metric_set_free(sel);
    gsl_rng_free(rng);
    return agree ? 0 : 1;
}
