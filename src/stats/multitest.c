/* multitest.c — Holm's and Benjamini–Hochberg's adjustments of a family of
 * p-values (stats_int.h), the closed forms of statsmodels' multipletests
 * "holm" and "fdr_bh". */
#include <math.h>
#include <stdlib.h>

#include "stats_int.h"

typedef struct {
    double p;
    size_t i;
} ranked;

static int by_p(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    if (a->p != b->p)
        return a->p < b->p ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The non-NaN p sorted ascending (ties by position: tied p get equal
 * adjusted values either way); *m their count. NULL when out of memory. */
static ranked *sorted(const double *p, size_t n, size_t *m)
{
    ranked *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return NULL;
    *m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(p[i]))
            r[(*m)++] = (ranked){p[i], i};
    qsort(r, *m, sizeof *r, by_p);
    return r;
}

static void nan_fill(const double *p, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(p[i]))
            out[i] = NAN;
}

/* Holm's step-down (holm) or Benjamini–Hochberg's step-up adjustment. */
static int adjust(const double *p, size_t n, double *out, int holm)
{
    size_t m;
    ranked *r = sorted(p, n, &m);
    if (!r)
        return AG_ENOMEM;
    nan_fill(p, n, out);
    if (holm) { /* running max of (m − j + 1)·p_(j), j 1-based */
        double run = 0;
        for (size_t j = 0; j < m; j++) {
            double v = (double)(m - j) * r[j].p;
            run = v > run ? v : run;
            out[r[j].i] = run > 1 ? 1 : run;
        }
    } else { /* running min from the top of m·p_(j)/j */
        double run = INFINITY;
        for (size_t j = m; j-- > 0;) {
            double v = r[j].p * (double)m / (double)(j + 1);
            run = v < run ? v : run;
            out[r[j].i] = run > 1 ? 1 : run;
        }
    }
    free(r);
    return AG_OK;
}

int ags_holm(const double *p, size_t n, double *out)
{
    return adjust(p, n, out, 1);
}

int ags_bh(const double *p, size_t n, double *out)
{
    return adjust(p, n, out, 0);
}
