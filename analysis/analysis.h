/* analysis.h — private interface between the metric families and the
 * ag_matrix_metrics driver (analysis/matrix.c). */
#ifndef AG_ANALYSIS_H
#define AG_ANALYSIS_H

#include <gsl/gsl_rng.h>

#include "attngeom.h"

/* ---- exact power-of-two scaling (analysis/scale.c) ---- */

/* e with max|a_ij| = f·2^e, f in [0.5, 1), when that is outside
 * [2^-100, 2^100]; 0 inside (no scaling needed) and for a zero block. */
int ag_scale_exponent(const double *a, size_t rows, size_t cols, size_t ld);
/* A compact (rows, cols) copy of a·2^-e (NULL when out of memory). */
double *ag_scaled_copy(const double *a, size_t rows, size_t cols, size_t ld, int e);
/* Store v·2^e as a number; null when that lies beyond the double range
 * (|v·2^e| > 1.8e308: the value exists but no double is right). */
void ag_record_put(ag_record *rec, ag_metric key, double v, int e);

/* Family A from the singular values of 2^-e·M: sigma_max is σ₁·2^e, every
 * other key a ratio. */
void ag_spectrum_keys_scaled(const double *sigma, size_t q, size_t m, size_t n, int e,
                             ag_metric first, const ag_metric_set *sel, ag_record *rec);

/* Family B of the square n×n row-major A (finite entries), S = 2^-e·A. */
int ag_attention_family(const double *A, const double *S, int e, size_t n,
                        const ag_metric_set *sel, ag_record *rec);
/* Family C of the m×n row-major X (finite entries, any magnitude). */
int ag_geometry_family(const double *X, size_t m, size_t n,
                       const ag_metric_set *sel, ag_record *rec);
/* v[0..n-1] = independent standard Gaussian draws from rng (GSL's
 * gsl_ran_gaussian; analysis/random.c). */
void ag_fill_gaussian(gsl_rng *rng, double *v, size_t n);

/* ag_head_jacobian_norm with a Lanczos basis of `basis` vectors (≥ 2)
 * instead of the default; a small basis forces restarts, which is how the
 * tests exercise them. */
int ag_jacobian_norm_basis(const ag_head_lin *L, size_t basis, double *norm,
                           ag_lanczos_info *info, ag_error *err);

/* 1 if any key of family f is selected. */
int ag_family_selected(const ag_metric_set *sel, ag_family f);

#endif
