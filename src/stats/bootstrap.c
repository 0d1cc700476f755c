/* bootstrap.c — resampling statistics over units: percentile and BCa
 * bootstrap intervals of a mean, and the sign-flip permutation test of
 * paired differences (stats_int.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "stats_int.h"

static int ascending(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

double ags_quantile_sorted(const double *x, size_t n, double q)
{
    if (n == 0 || !(q >= 0 && q <= 1))
        return NAN;
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return x[n - 1];
    return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}

/* The sorted copy of x[n]; NULL when out of memory. */
static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    if (s) {
        memcpy(s, x, n * sizeof *x);
        qsort(s, n, sizeof *s, ascending);
    }
    return s;
}

void ags_bca_levels(const double *x, size_t n, double theta, const double *boot, size_t B,
                       double level, double *q1, double *q2)
{
    size_t below = 0;
    for (size_t b = 0; b < B; b++)
        below += boot[b] < theta;
    double z0 = gsl_cdf_ugaussian_Pinv((double)below / (double)B);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    /* jackknife means θ_(i) = (Σx − x_i)/(n − 1) and their mean */
    double dot = 0;
    for (size_t i = 0; i < n; i++)
        dot += (sum - x[i]) / (double)(n - 1);
    dot /= (double)n;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double u = dot - (sum - x[i]) / (double)(n - 1);
        num += u * u * u;
        den += u * u;
    }
    double a = num / (6 * pow(den, 1.5));
    double za = gsl_cdf_ugaussian_Pinv((1 - level) / 2), z1 = -za;
    *q1 = gsl_cdf_ugaussian_P(z0 + (z0 + za) / (1 - a * (z0 + za)));
    *q2 = gsl_cdf_ugaussian_P(z0 + (z0 + z1) / (1 - a * (z0 + z1)));
    if (!isfinite(z0) || !isfinite(a))
        *q1 = *q2 = NAN;
}

int ags_bootstrap(const double *x0, size_t n, unsigned long resamples, unsigned long seed,
                  double level, double bounds[4], ag_error *err)
{
    bounds[0] = bounds[1] = bounds[2] = bounds[3] = NAN;
    if (n < 2 || resamples == 0 || !(level > 0 && level < 1))
        return AG_OK;
    double *x = sorted_copy(x0, n), *boot = malloc(resamples * sizeof *boot);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!x || !boot || !rng) {
        free(x);
        free(boot);
        gsl_rng_free(rng);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a bootstrap");
    }
    gsl_rng_set(rng, seed);
    for (unsigned long b = 0; b < resamples; b++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += x[gsl_rng_uniform_int(rng, (unsigned long)n)];
        boot[b] = s / (double)n;
    }
    double theta = 0;
    for (size_t i = 0; i < n; i++)
        theta += x[i];
    theta /= (double)n;
    double q1, q2;
    ags_bca_levels(x, n, theta, boot, resamples, level, &q1, &q2);
    qsort(boot, resamples, sizeof *boot, ascending);
    bounds[0] = ags_quantile_sorted(boot, resamples, (1 - level) / 2);
    bounds[1] = ags_quantile_sorted(boot, resamples, (1 + level) / 2);
    bounds[2] = ags_quantile_sorted(boot, resamples, q1);
    bounds[3] = ags_quantile_sorted(boot, resamples, q2);
    free(x);
    free(boot);
    gsl_rng_free(rng);
    return AG_OK;
}

int ags_signflip_p(const double *d0, size_t n, unsigned long permutations, unsigned long seed,
                   double *p, ag_error *err)
{
    *p = NAN;
    if (n == 0 || permutations == 0)
        return AG_OK;
    double *d = sorted_copy(d0, n);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!d || !rng) {
        free(d);
        gsl_rng_free(rng);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a permutation test");
    }
    double observed = 0;
    for (size_t i = 0; i < n; i++)
        observed += d[i];
    double bar = fabs(observed) * (1 - 1e-12);
    unsigned long extreme = 0;
    gsl_rng_set(rng, seed);
    for (unsigned long k = 0; k < permutations; k++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += gsl_rng_uniform_int(rng, 2) ? d[i] : -d[i];
        extreme += fabs(s) >= bar;
    }
    *p = (1.0 + (double)extreme) / (1.0 + (double)permutations);
    free(d);
    gsl_rng_free(rng);
    return AG_OK;
}
