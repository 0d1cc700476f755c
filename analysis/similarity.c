/* similarity.c — how alike two heads attend: the Jensen–Shannon distance
 * between their attention rows, averaged over the rows (Clark et al. 2019,
 * "What does BERT look at?", §6, who cluster BERT's heads by the
 * Jensen–Shannon divergence of their attention; here its square root, which
 * is a metric: Endres & Schindelin 2003, "A new metric for probability
 * distributions", IEEE Trans. Inf. Theory 49(7)). */
#include <math.h>

#include "analysis.h"

/* p ln(p/m) + q ln(q/m) with m = (p+q)/2, written m·f(d), d = (p−q)/(p+q),
 * f(d) = (1+d)ln(1+d) + (1−d)ln(1−d) = 2d·atanh(d) + ln(1 − d²). For rows
 * that nearly agree f(d) ≈ d² is formed without the cancellation of the
 * textbook sum (whose terms are O(1) while their total is O(d²)), so the
 * distance √JSD of two close heads keeps its digits. For |d| > ½ the
 * textbook terms are used: there they do not cancel, while for p ≪ q
 * (T5's attention has 1e-18 next to 0.2) d rounds to ∓1 and
 * 2d·atanh(d) + ln(1 − d²) is ∞ − ∞. p = 0 or q = 0 gives
 * f(±1) = 2 ln 2, the limit (0·ln 0 = 0). */
static double js_pair_term(double p, double q)
{
    double s = p + q;
    if (s == 0 || p == q)
        return 0;
    if (p == 0 || q == 0)
        return s * M_LN2;
    double d = (p - q) / s, m = 0.5 * s;
    if (fabs(d) > 0.5) /* far apart: no cancellation, and d may have rounded to ±1 */
        return p * log(p / m) + q * log(q / m);
    return m * (2 * d * atanh(d) + log1p(-d * d));
}

/* JSD of one pair of rows, clamped at 0 against rounding. */
static double js_divergence(const double *p, const double *q, size_t n)
{
    double t = 0;
    for (size_t j = 0; j < n; j++)
        t += js_pair_term(p[j], q[j]);
    return t > 0 ? 0.5 * t : 0;
}

static int check_entries(const double *M, size_t count, const char *which, ag_error *err)
{
    for (size_t k = 0; k < count; k++) {
        if (!isfinite(M[k]))
            return ag_error_set(err, AG_ENONFINITE, "JS distance: %s entry %zu is %g", which,
                                k, M[k]);
        if (M[k] < 0 || M[k] > 1)
            return ag_error_set(err, AG_EINVAL,
                                "JS distance: %s entry %zu is %g, not a probability in [0, 1]",
                                which, k, M[k]);
    }
    return AG_OK;
}

int ag_js_distance(const double *A, const double *B, size_t rows, size_t cols, double *dist,
                   ag_error *err)
{
    if (rows == 0 || cols == 0)
        return ag_error_set(err, AG_EINVAL, "JS distance: empty %zux%zu rows", rows, cols);
    int status = check_entries(A, rows * cols, "first", err);
    if (status == AG_OK)
        status = check_entries(B, rows * cols, "second", err);
    if (status != AG_OK)
        return status;
    double sum = 0;
    for (size_t i = 0; i < rows; i++)
        sum += sqrt(js_divergence(A + i * cols, B + i * cols, cols));
    *dist = sum / (double)rows;
    return AG_OK;
}
