/* analysis.h — private interface between the metric families and the
 * ag_matrix_metrics driver (analysis/matrix.c). */
#ifndef AG_ANALYSIS_H
#define AG_ANALYSIS_H

#include <gsl/gsl_rng.h>

#include "attngeom.h"

/* Family B of the square n×n row-major A (finite entries). */
int ag_attention_family(const double *A, size_t n, const ag_metric_set *sel,
                        ag_record *rec);
/* Family C of the m×n row-major X (finite entries). */
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
