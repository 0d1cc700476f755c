/* activations.c — family I (docs/metrics.md, "I. Massive activations"):
 * Sun et al. 2024 ("Massive Activations in Large Language Models", §2)
 * find a few entries of the hidden states, at fixed dimensions and mostly
 * on the first or delimiter tokens, about 10⁴ times the median magnitude,
 * and call an activation massive when its magnitude is above 100 and about
 * 1000 times the median magnitude of its hidden state. These keys give that
 * test on one hidden state h (n tokens × d dimensions), with both thresholds
 * the caller's. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_statistics_double.h>

#include "attngeom/layers.h"
#include "analysis.h"

#define ON(m) (sel->on[m])

int ag_activation_metrics(const double *h, size_t n, size_t d, double massive_abs,
                          double massive_ratio, const ag_metric_set *sel, ag_record *rec,
                          ag_error *err)
{
    if (!h || !sel || !rec || n == 0 || d == 0)
        return ag_error_set(err, AG_EINVAL, "activations: NULL argument or an empty state");
    if (!(massive_abs >= 0 && isfinite(massive_abs)) ||
        !(massive_ratio >= 0 && isfinite(massive_ratio)))
        return ag_error_set(err, AG_EINVAL, "activations: thresholds %g and %g must be finite "
                            "and >= 0", massive_abs, massive_ratio);
    if (n > SIZE_MAX / sizeof(double) / d)
        return ag_error_set(err, AG_ELIMIT, "activations: %zu x %zu state too large", n, d);
    size_t count = n * d, top = 0;
    double top1 = -1;
    double *mag = malloc(count * sizeof *mag);
    if (!mag)
        return ag_error_set(err, AG_ENOMEM, "out of memory for %zu activations", count);
    for (size_t k = 0; k < count; k++) {
        if (!isfinite(h[k])) {
            free(mag);
            return ag_error_set(err, AG_ENONFINITE, "activations: token %zu dimension %zu is "
                                "not finite", k / d, k % d);
        }
        mag[k] = fabs(h[k]);
        if (mag[k] > top1) { /* strictly: the first of equal ones stays */
            top1 = mag[k];
            top = k;
        }
    }
    /* GSL reorders mag; the even count's median is the mean of the middle two */
    double median = gsl_stats_median(mag, 1, count);
    free(mag);
    size_t massive = 0;
    for (size_t k = 0; k < count; k++)
        massive += fabs(h[k]) >= massive_abs && fabs(h[k]) >= massive_ratio * median;
    if (ON(AG_M_ACT_TOP1))
        ag_record_set(rec, AG_M_ACT_TOP1, AG_V_NUMBER, top1);
    if (ON(AG_M_ACT_TOP1_TOKEN))
        ag_record_set(rec, AG_M_ACT_TOP1_TOKEN, AG_V_INTEGER, (double)(top / d));
    if (ON(AG_M_ACT_TOP1_DIM))
        ag_record_set(rec, AG_M_ACT_TOP1_DIM, AG_V_INTEGER, (double)(top % d));
    if (ON(AG_M_ACT_MEDIAN))
        ag_record_set(rec, AG_M_ACT_MEDIAN, AG_V_NUMBER, median);
    if (ON(AG_M_ACT_RATIO))
        ag_record_set(rec, AG_M_ACT_RATIO, AG_V_NUMBER, median > 0 ? top1 / median : NAN);
    if (ON(AG_M_ACT_MASSIVE))
        ag_record_set(rec, AG_M_ACT_MASSIVE, AG_V_INTEGER, (double)massive);
    return AG_OK;
}
