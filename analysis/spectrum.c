/* spectrum.c — family A: scalar summaries of the singular values.
 *
 * effective_rank: Roy & Vetterli, "The effective rank: a measure of effective
 *   dimensionality", EUSIPCO 2007, Def. 2 (exp of the Shannon entropy of the
 *   normalised singular values).
 * stable_rank: Rudelson & Vershynin 2007, ‖M‖_F² / ‖M‖₂².
 * participation_ratio: (Σσ²)² / Σσ⁴, the inverse participation of the
 *   squared spectrum (Gao et al. 2017 use it for neural dimensionality).
 * numerical_rank: the rank test of LAPACK/NumPy matrix_rank, tolerance
 *   σ₁ · max(m, n) · ε (Golub & Van Loan, Matrix Computations, §5.4.1).
 *
 * The singular values come from 2^-e·M (analysis/scale.c), so every key but
 * sigma_max = σ₁·2^e is a ratio of numbers near 1, formed from σ/σ₁ so that
 * Σσ⁴ cannot overflow or underflow either.
 */
#include <float.h>
#include <math.h>

#include "analysis.h"

/* Key k of family A, shifted to the block starting at `first`. */
#define KEY(k) ((ag_metric)(first + ((k) - AG_M_SIGMA_MAX)))
#define ON(k) (sel->on[KEY(k)])

double ag_sigma_effective_rank(const double *sigma, size_t q)
{
    const double s1 = sigma[0];
    double sum_r = 0, h = 0; /* over r_k = σ_k / σ₁ */
    for (size_t k = 0; k < q; k++)
        sum_r += sigma[k] / s1;
    for (size_t k = 0; k < q; k++) {
        double p = sigma[k] / s1 / sum_r; /* = σ_k / Σσ */
        if (p > 0)
            h -= p * log(p);
    }
    return exp(h);
}

size_t ag_sigma_numerical_rank(const double *sigma, size_t q, size_t m, size_t n)
{
    /* ε first: σ₁·max(m, n) alone can overflow */
    double tol = (q ? sigma[0] : 0.0) * DBL_EPSILON * (double)(m > n ? m : n);
    size_t r = 0;
    for (size_t k = 0; k < q; k++)
        r += sigma[k] > tol;
    return r;
}

void ag_spectrum_from_sigma(const double *sigma, size_t q, size_t m, size_t n,
                            const ag_metric_set *sel, ag_record *rec)
{
    ag_spectrum_keys(sigma, q, m, n, AG_M_SIGMA_MAX, sel, rec);
}

void ag_spectrum_keys(const double *sigma, size_t q, size_t m, size_t n,
                      ag_metric first, const ag_metric_set *sel, ag_record *rec)
{
    ag_spectrum_keys_scaled(sigma, q, m, n, 0, first, sel, rec);
}

void ag_spectrum_keys_scaled(const double *sigma, size_t q, size_t m, size_t n, int e,
                             ag_metric first, const ag_metric_set *sel, ag_record *rec)
{
    const double s1 = q ? sigma[0] : 0.0;
    const int zero = !(s1 > 0.0);

    if (ON(AG_M_SIGMA_MAX))
        ag_record_put(rec, KEY(AG_M_SIGMA_MAX), s1, e);
    if (ON(AG_M_SIGMA_GAP)) {
        if (q < 2 || zero)
            ag_record_set(rec, KEY(AG_M_SIGMA_GAP), AG_V_NULL, 0);
        else
            ag_record_set(rec, KEY(AG_M_SIGMA_GAP), AG_V_NUMBER, 1.0 - sigma[1] / s1);
    }

    double sum_r2 = 0, sum_r4 = 0; /* over r_k = σ_k / σ₁ */
    for (size_t k = 0; !zero && k < q; k++) {
        double r = sigma[k] / s1;
        sum_r2 += r * r;
        sum_r4 += r * r * r * r;
    }
    if (ON(AG_M_EFFECTIVE_RANK))
        ag_record_set(rec, KEY(AG_M_EFFECTIVE_RANK), zero ? AG_V_NULL : AG_V_NUMBER,
                      zero ? 0 : ag_sigma_effective_rank(sigma, q));
    if (ON(AG_M_STABLE_RANK))
        ag_record_set(rec, KEY(AG_M_STABLE_RANK), zero ? AG_V_NULL : AG_V_NUMBER,
                      sum_r2);
    if (ON(AG_M_PARTICIPATION_RATIO))
        ag_record_set(rec, KEY(AG_M_PARTICIPATION_RATIO),
                      zero ? AG_V_NULL : AG_V_NUMBER, sum_r2 * sum_r2 / sum_r4);
    if (ON(AG_M_NUMERICAL_RANK))
        ag_record_set(rec, KEY(AG_M_NUMERICAL_RANK), AG_V_INTEGER,
                      (double)ag_sigma_numerical_rank(sigma, q, m, n));
}
