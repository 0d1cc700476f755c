/* wilcoxon.c — the Wilcoxon signed-rank test (Wilcoxon 1945, "Individual
 * comparisons by ranking methods", Biometrics Bulletin 1:80–83), p-value as
 * scipy.stats.wilcoxon 1.10 computes it with its defaults (stats_int.h). */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

#include "stats_int.h"

/* scipy 1.10's "auto": exact up to this many differences (without zeros). */
#define EXACT_MAX 50

void ags_wilcoxon_pmf(size_t n, double *pmf)
{
    /* c_k(r) = ½ c_{k−1}(r) + ½ c_{k−1}(r − k): rank k counts in R⁺ or not */
    size_t len = 1;
    pmf[0] = 1;
    for (size_t k = 1; k <= n; k++) {
        size_t next = k * (k + 1) / 2 + 1;
        for (size_t r = len; r < next; r++)
            pmf[r] = 0;
        for (size_t r = next; r-- > 0;) {
            double keep = r < len ? pmf[r] * 0.5 : 0;
            double add = r >= k && r - k < len ? pmf[r - k] * 0.5 : 0;
            pmf[r] = keep + add;
        }
        len = next;
    }
}

typedef struct {
    double a;
    size_t i;
} absval;

static int by_abs(const void *x, const void *y)
{
    const absval *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* Average ranks of |d| (1-based) into rank[n]; *tie the Σ t(t² − 1) over
 * groups of equal |d|. */
static int ranks(const double *d, size_t n, double *rank, double *tie)
{
    absval *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return AG_ENOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = (absval){fabs(d[i]), i};
    qsort(v, n, sizeof *v, by_abs);
    *tie = 0;
    for (size_t s = 0; s < n;) {
        size_t e = s + 1;
        while (e < n && v[e].a == v[s].a)
            e++;
        double avg = ((double)s + 1 + (double)e) / 2; /* ranks s+1..e */
        for (size_t k = s; k < e; k++)
            rank[v[k].i] = avg;
        double t = (double)(e - s);
        *tie += t * (t * t - 1);
        s = e;
    }
    free(v);
    return AG_OK;
}

int ags_wilcoxon_p(const double *d, size_t n, double *p, ag_error *err)
{
    *p = NAN;
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++)
        zeros += d[i] == 0;
    if (n == 0 || zeros == n)
        return AG_OK;
    int exact = n <= EXACT_MAX && zeros == 0;
    double *nz = malloc(n * sizeof *nz), *rank = malloc(n * sizeof *rank);
    if (!nz || !rank) {
        free(nz);
        free(rank);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a Wilcoxon test");
    }
    size_t count = 0;
    for (size_t i = 0; i < n; i++) /* zero_method "wilcox": zeros dropped */
        if (d[i] != 0)
            nz[count++] = d[i];
    double tie;
    int status = ranks(nz, count, rank, &tie);
    double rplus = 0, rminus = 0;
    for (size_t i = 0; status == AG_OK && i < count; i++) {
        if (nz[i] > 0)
            rplus += rank[i];
        else
            rminus += rank[i];
    }
    double *pmf = status == AG_OK && exact ? malloc((count * (count + 1) / 2 + 1) * sizeof *pmf)
                                           : NULL;
    if (status == AG_OK && exact && !pmf)
        status = AG_ENOMEM;
    if (status == AG_OK && exact) {
        size_t top = count * (count + 1) / 2, r = (size_t)rplus; /* scipy: int(r_plus) */
        ags_wilcoxon_pmf(count, pmf);
        if (r == top / 2) {
            *p = 1;
        } else {
            double less = 0, greater = 0;
            for (size_t k = 0; k <= r; k++)
                less += pmf[k];
            for (size_t k = r; k <= top; k++)
                greater += pmf[k];
            *p = 2 * (less < greater ? less : greater);
            *p = *p > 1 ? 1 : *p;
        }
    } else if (status == AG_OK) {
        double c = (double)count, T = rplus < rminus ? rplus : rminus;
        double mean = c * (c + 1) * 0.25;
        double var = (c * (c + 1) * (2 * c + 1) - 0.5 * tie) / 24;
        double z = (T - mean) / sqrt(var);
        *p = 2 * gsl_cdf_ugaussian_Q(fabs(z));
    }
    free(pmf);
    free(nz);
    free(rank);
    return status == AG_OK ? AG_OK : ag_error_set(err, status, "out of memory for a Wilcoxon test");
}
