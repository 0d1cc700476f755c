/* Internal prefix: ags_ (module src/stats/). */
/* stats_int.h — the statistics of aggregate and compare that are plain
 * functions of numbers: multiple-comparison adjustments (multitest.c), the
 * Wilcoxon signed-rank test (wilcoxon.c), bootstrap intervals, sign-flip
 * permutations (bootstrap.c) and standardised effect sizes (compare.c).
 * Private to the library; tests/stats/ calls them directly. */
#ifndef AG_STATS_INT_H
#define AG_STATS_INT_H

#include <stddef.h>

#include "attngeom.h"

/* Holm's step-down adjustment (Holm 1979, "A simple sequentially rejective
 * multiple test procedure", Scand. J. Statist. 6:65–70, section 2): with
 * p_(1) ≤ … ≤ p_(m), adj_(i) = min(1, max_{j ≤ i} (m − j + 1)·p_(j)).
 * NaN entries are not tests: their out is NaN and m counts the others.
 * out may be p. AG_ENOMEM. */
int ags_holm(const double *p, size_t n, double *out);
/* Benjamini & Hochberg's step-up adjustment (Benjamini & Hochberg 1995,
 * "Controlling the false discovery rate", JRSS B 57:289–300, section 3):
 * q_(i) = min(1, min_{j ≥ i} m·p_(j)/j). NaN as ags_holm. AG_ENOMEM. */
int ags_bh(const double *p, size_t n, double *out);

/* The two-sided p of the Wilcoxon signed-rank test of the differences
 * d[n] (Wilcoxon 1945), as scipy.stats.wilcoxon (1.10) with its defaults
 * (zero_method "wilcox", correction False, method "auto"): exact null
 * distribution of the positive rank sum when n ≤ 50 and no d is 0 (the
 * rank sum truncated to an integer when |d| has ties, as scipy does), else
 * the normal approximation over the non-zero d with the tie correction
 * −Σ t(t²−1)/48 of the variance. NaN for n = 0 or every d zero. AG_ENOMEM. */
int ags_wilcoxon_p(const double *d, size_t n, double *p, ag_error *err);
/* P(R⁺ = r) for r = 0..n(n+1)/2 under the null (pmf[n(n+1)/2 + 1]), by the
 * recursion of adding rank k with probability ½ (n ≤ 50 here). */
void ags_wilcoxon_pmf(size_t n, double *pmf);

/* The q-quantile of sorted x[n] by linear interpolation between order
 * statistics (Hyndman & Fan 1996 type 7, numpy's default). NaN for n = 0
 * or q outside [0, 1]. */
double ags_quantile_sorted(const double *x, size_t n, double q);

/* Bootstrap intervals for the mean of x[n] (n ≥ 2) at confidence level:
 * `resamples` resamples of n drawn with replacement (GSL's MT19937 seeded
 * with seed; x is sorted first, so the draws do not depend on the order of
 * x), the percentile interval (Efron & Tibshirani 1993, section 13.3) and
 * the BCa interval (Efron 1987, "Better bootstrap confidence intervals",
 * JASA 82:171–185, section 2: z0 = Φ⁻¹(#{θ* < θ̂}/B), acceleration from
 * the jackknife (eq. 6.6), quantiles Φ(z0 + (z0 + z_α)/(1 − a(z0 + z_α)))),
 * both read from the bootstrap means by ags_quantile_sorted as
 * scipy.stats.bootstrap does. NaN bounds when undefined (n < 2; BCa with
 * every resample on one side of θ̂ or no spread). AG_ENOMEM. */
int ags_bootstrap(const double *x, size_t n, unsigned long resamples, unsigned long seed,
                  double level, double bounds[4], ag_error *err);

/* The BCa interval's quantile levels q1, q2 of the bootstrap means boot[B]
 * of the mean theta of x[n] (Efron 1987, section 2, with the jackknife
 * acceleration of section 6): NaN when z0 or the acceleration is not finite. */
void ags_bca_levels(const double *x, size_t n, double theta, const double *boot, size_t B,
                    double level, double *q1, double *q2);

/* Two-sided sign-flip permutation test of mean(d) = 0 for paired
 * differences d[n] (Fisher 1935, section 21): `permutations` random sign
 * vectors (GSL's MT19937 seeded with seed, one gsl_rng_uniform_int(rng, 2)
 * per difference, d sorted first), p = (1 + #{|Σ s·d| ≥ |Σ d|}) /
 * (1 + permutations), "≥" within 1e-12 relative. NaN for n = 0. AG_ENOMEM. */
int ags_signflip_p(const double *d, size_t n, unsigned long permutations, unsigned long seed,
                   double *p, ag_error *err);

/* Hedges' g of two samples given by their moments (Hedges & Olkin 1985,
 * "Statistical methods for meta-analysis", chapter 5, section A.2 and B):
 * d = (mean_a − mean_b)/s_p with s_p² = (M2_a + M2_b)/(n_a + n_b − 2),
 * g = J·d with J = 1 − 3/(4(n_a + n_b − 2) − 1) (their approximation to
 * the exact Γ ratio), and the interval g ± z_{(1+level)/2}·σ with the
 * large-sample variance σ² = (n_a + n_b)/(n_a·n_b) + g²/(2(n_a + n_b))
 * (chapter 5, eq. 14). NaN when n_a or n_b < 2 or s_p = 0. */
void ags_hedges_g(const ag_moments *a, const ag_moments *b, double level, double out[3]);

#endif
