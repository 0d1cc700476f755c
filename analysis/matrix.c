/* matrix.c — ag_matrix_metrics: families A, B and C of one matrix, with one
 * SVD shared by every family-A key, and the curvature family F when it is
 * selected (analysis/curvature.c). */
#include <math.h>
#include <stdlib.h>

#include "analysis.h"

int ag_family_selected(const ag_metric_set *sel, ag_family f)
{
    for (int m = 0; m < AG_M_COUNT; m++)
        if (sel->on[m] && ag_metric_family((ag_metric)m) == f)
            return 1;
    return 0;
}

/* Family A from the SVD of S = 2^-e·M. */
static int spectrum_family(const double *S, int e, size_t m, size_t n,
                           const ag_metric_set *sel, ag_record *rec)
{
    size_t q = m < n ? m : n;
    double *sigma = malloc(q * sizeof *sigma);
    if (!sigma)
        return AG_ENOMEM;
    int status = ag_svd_values(S, m, n, sigma);
    if (status == AG_OK)
        ag_spectrum_keys_scaled(sigma, q, m, n, e, AG_M_SIGMA_MAX, sel, rec);
    free(sigma);
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
    return ag_matrix_metrics_ex(M, m, n, sel, NULL, rec, err);
}

int ag_matrix_metrics_ex(const double *M, size_t m, size_t n,
                         const ag_metric_set *sel, const ag_matrix_options *opt,
                         ag_record *rec, ag_error *err)
{
    double tau = opt ? opt->edge_threshold : -1;
    if (isnan(tau) || tau > 1)
        return ag_error_set(err, AG_EINVAL, "edge threshold %g not in [0, 1]", tau);
    if (m == 0 || n == 0)
        return ag_error_set(err, AG_EINVAL, "empty %zux%zu matrix", m, n);
    for (size_t k = 0; k < m * n; k++)
        if (!isfinite(M[k]))
            return ag_error_set(err, AG_ENONFINITE,
                                "non-finite value (%g) at row %zu, column %zu",
                                M[k], k / n, k % n);
    rec->rows = m;
    rec->cols = n;
    for (int k = 0; k < AG_M_COUNT; k++)
        if (!sel->on[k])
            rec->kind[k] = AG_V_ABSENT;

    /* LAPACK and the sums run on S = 2^-e·M, largest entry in [0.5, 1)
     * (analysis/scale.c): exact, and nothing can overflow or underflow. */
    int e = ag_scale_exponent(M, m, n, n);
    double *S = e ? ag_scaled_copy(M, m, n, n, e) : (double *)M;
    int status = S ? AG_OK : AG_ENOMEM;
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_SPECTRUM))
        status = spectrum_family(S, e, m, n, sel, rec);
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_ATTENTION)) {
        if (m == n)
            status = ag_attention_family(M, S, e, n, sel, rec);
        else
            null_family(sel, AG_FAMILY_ATTENTION, rec);
    }
    if (status == AG_OK && ag_family_selected(sel, AG_FAMILY_GEOMETRY))
        status = ag_geometry_family(M, m, n, sel, rec);
    if (S != M)
        free(S);
    if (status != AG_OK)
        return ag_error_set(err, status, "%zux%zu matrix: %s", m, n,
                            lapack_what(status));
    if (ag_family_selected(sel, AG_FAMILY_CURVATURE)) {
        if (m == n)
            return ag_curvature_metrics(M, n, tau, sel, rec, err);
        null_family(sel, AG_FAMILY_CURVATURE, rec);
    }
    return AG_OK;
}
