/* matrix.c — ag_matrix_metrics: families A, B and C of one matrix, with one
 * SVD shared by every family-A key, and the curvature family F, the metric
 * axioms L and the cross-attention family M when selected
 * (analysis/curvature.c, analysis/axioms.c, analysis/cross.c). Every buffer
 * comes from one workspace (analysis/work.c), the caller's or a temporary
 * one. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "base/sized_int.h"

int ag_family_selected(const ag_metric_set *sel, ag_family f)
{
    for (int m = 0; m < AG_M_COUNT; m++)
        if (sel->on[m] && ag_metric_family((ag_metric)m) == f)
            return 1;
    return 0;
}

/* Family A from the SVD of S = 2^-e·M (dgesdd on a copy: it overwrites). */
static int spectrum_family(const double *S, int e, size_t m, size_t n,
                           const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec)
{
    size_t q = m < n ? m : n, ld = ag_lapack_ld(n);
    double *a = ag_lapack_work_copy(w, AG_WK_COPY, S, m, n, ld);
    double *sigma = ag_work_doubles(w, AG_WK_VECTORS, q);
    if (!a || !sigma)
        return AG_ENOMEM;
    int status = ag_lapack_svd_values(a, m, n, ld, sigma, w);
    if (status == AG_OK)
        ag_spectrum_keys_scaled(sigma, q, m, n, e, AG_M_SIGMA_MAX, sel, rec);
    return status;
}

static void null_family(const ag_metric_set *sel, ag_family f, ag_record *rec)
{
    for (int k = 0; k < AG_M_COUNT; k++)
        if (sel->on[k] && ag_metric_family((ag_metric)k) == f)
            ag_record_set(rec, (ag_metric)k, AG_V_NULL, 0);
}

static const char *lapack_what(int status)
{
    return status == AG_ELAPACK ? "a LAPACK routine did not converge"
                                : ag_strerror(status);
}

int ag_matrix_metrics(const double *M, size_t m, size_t n,
                      const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    return ag_matrix_metrics_work(M, m, n, sel, NULL, NULL, rec, err);
}

int ag_matrix_metrics_ex(const double *M, size_t m, size_t n,
                         const ag_metric_set *sel, const ag_matrix_options *opt,
                         ag_record *rec, ag_error *err)
{
    return ag_matrix_metrics_work(M, m, n, sel, opt, NULL, rec, err);
}

/* Families A, B, C, L and M of the finite M. LAPACK and the sums run on
 * S = 2^-e·M, largest entry in [0.5, 1) (analysis/scale.c): exact, and
 * nothing can overflow or underflow; within 2^±100, S is M itself. */
static int matrix_families(const double *M, size_t m, size_t n, const ag_matrix_facts *f,
                           const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec)
{
    int e = ag_scale_exponent_of(f->amax);
    double *S = e ? ag_work_doubles(w, AG_WK_SCALED, m * n) : (double *)M;
    if (!S)
        return AG_ENOMEM;
    for (size_t k = 0; e && k < m * n; k++)
        S[k] = ldexp(M[k], -e);
    int status = AG_OK;
    if (ag_family_selected(sel, AG_FAMILY_SPECTRUM))
        status = spectrum_family(S, e, m, n, sel, w, rec);
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_ATTENTION))
        status = ag_attention_family(M, S, e, m, n, f, sel, w, rec);
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_GEOMETRY))
        status = ag_geometry_family(M, S, m, n, sel, w, rec);
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_AXIOMS)) {
        if (m == n)
            status = ag_axioms_family(M, n, sel, w, rec);
        else
            null_family(sel, AG_FAMILY_AXIOMS, rec);
    }
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_CROSS))
        status = ag_cross_family(M, S, e, m, n, sel, w, rec);
    return status;
}

int ag_matrix_metrics_work(const double *M, size_t m, size_t n, const ag_metric_set *sel,
                           const ag_matrix_options *opt, ag_matrix_work *work, ag_record *rec,
                           ag_error *err)
{
    ag_matrix_options o = AG_MATRIX_OPTIONS_DEFAULT;
    if (opt && AG_SIZED_READ(&o, opt, ag_matrix_options, err) != AG_OK)
        return AG_EINVAL;
    double tau = o.edge_threshold;
    if (isnan(tau) || tau > 1)
        return ag_error_set(err, AG_EINVAL, "edge threshold %g not in [0, 1]", tau);
    if (m == 0 || n == 0)
        return ag_error_set(err, AG_EINVAL, "empty %zux%zu matrix", m, n);
    if (m > SIZE_MAX / sizeof(double) / n)
        return ag_error_set(err, AG_ELIMIT, "%zux%zu matrix: too large", m, n);
    ag_matrix_facts facts;
    if (ag_matrix_scan_finite(M, m, n, &facts, err) != AG_OK)
        return AG_ENONFINITE;
    rec->rows = m;
    rec->cols = n;
    for (int k = 0; k < AG_M_COUNT; k++)
        if (!sel->on[k])
            rec->kind[k] = AG_V_ABSENT;

    ag_matrix_work *own = NULL;
    int status = work ? AG_OK : ag_matrix_work_new(&own, NULL);
    if (status == AG_OK)
        status = matrix_families(M, m, n, &facts, sel, work ? work : own, rec);
    ag_matrix_work_free(own);
    if (status != AG_OK)
        return ag_error_set(err, status, "%zux%zu matrix: %s", m, n,
                            lapack_what(status));
    if (ag_family_selected(sel, AG_FAMILY_CURVATURE)) {
        if (m == n)
            return ag_curvature_metrics_ex(
                M, n, sel,
                &(ag_curvature_options){.size = sizeof(ag_curvature_options),
                                        .edge_threshold = tau, .pool = o.pool,
                                        .workers = o.workers},
                rec, err);
        null_family(sel, AG_FAMILY_CURVATURE, rec);
    }
    return AG_OK;
}
