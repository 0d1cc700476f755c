/* values.c — family H (docs/metrics.md, "H. Value norms"): what a head
 * writes, not only where it looks.
 *
 * Kobayashi et al. 2020 ("Attention is Not Only a Weight: Analyzing
 * Transformers with Vector Norms", §3) rewrite a head's output for query i
 * as Σ_j A_ij f(x_j), f(x) = (x W_V + b_V) W_O (the head's rows of the output
 * projection; the output bias is not the head's), and measure token j's
 * share by ‖A_ij f(x_j)‖ = A_ij ‖f(x_j)‖ rather than by A_ij alone. Their
 * code (gorokoba560/norm-analysis-of-transformer, modeling_bert.py:
 * transformed_layer = einsum('bhsv,dhv->bhsd', value_layer, dense), then
 * the norm of attention_probs times it) is what ag_value_norms computes,
 * for one head: the value layer with its bias, times the head's block of
 * W_O. A head that puts its mass on a token whose f(x_j) is small (the
 * attention-sink "no-op") looks sharp to A and empty to N. */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "analysis.h"

#define ON(m) (sel->on[m])

int ag_value_norms(const ag_head_factors *f, const double *bv, const double *x, size_t n,
                   double *norms, ag_error *err)
{
    if (!f || !f->wv || !f->wo || !x || !norms)
        return ag_error_set(err, AG_EINVAL, "value norms: NULL argument (W_V, W_O, X or norms)");
    size_t d = f->d, dh = f->d_h, dout = f->d_out;
    if (n == 0 || d == 0 || dh == 0 || dout == 0)
        return ag_error_set(err, AG_EINVAL, "value norms: a zero size (n %zu, d %zu, d_h %zu, "
                            "d_out %zu)", n, d, dh, dout);
    if (f->ldv < dh || f->ldo < dout)
        return ag_error_set(err, AG_EINVAL, "value norms: a row stride below its width");
    if (dh + dout < dh || n > SIZE_MAX / sizeof(double) / (dh + dout))
        return ag_error_set(err, AG_ELIMIT, "value norms: %zu tokens x %zu values too large",
                            n, dh + dout);
    double *v = malloc(n * (dh + dout) * sizeof *v);
    if (!v)
        return ag_error_set(err, AG_ENOMEM, "out of memory for the value vectors");
    double *y = v + n * dh;
    for (size_t j = 0; j < n; j++) /* b_V in every row, added by dgemm's beta = 1 */
        for (size_t k = 0; k < dh; k++)
            v[j * dh + k] = bv ? bv[k] : 0.0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)dh, (int)d, 1.0, x,
                (int)d, f->wv, (int)f->ldv, 1.0, v, (int)dh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)dout, (int)dh, 1.0, v,
                (int)dh, f->wo, (int)f->ldo, 0.0, y, (int)dout);
    int status = AG_OK;
    for (size_t j = 0; j < n && status == AG_OK; j++) {
        norms[j] = cblas_dnrm2((int)dout, y + j * dout, 1); /* scaled: no overflow of Σy² */
        if (!isfinite(norms[j]))
            status = ag_error_set(err, AG_ENONFINITE, "value norms: f(x_%zu) is not finite "
                                  "(NaN or Inf in X, W_V, b_V or W_O, or an overflow)", j);
    }
    free(v);
    return status;
}

/* ½ Σ_j |A_ij/Σ A_i − N_ij/Σ N_i| for row i, N_ij = A_ij·norms_j; NaN when
 * a sum is not positive (the row has no norm-based distribution). */
static double row_shift(const double *a, const double *norms, size_t n)
{
    double sa = 0, sn = 0, tv = 0;
    for (size_t j = 0; j < n; j++) {
        sa += a[j];
        sn += a[j] * norms[j];
    }
    if (!(sa > 0 && sn > 0))
        return NAN;
    for (size_t j = 0; j < n; j++)
        tv += fabs(a[j] / sa - a[j] * norms[j] / sn);
    return 0.5 * tv;
}

/* The mean over the m rows (n keys each) that have both distributions
 * (null when none). */
static double attention_shift(const double *A, const double *norms, size_t m, size_t n)
{
    double sum = 0;
    size_t rows = 0;
    for (size_t i = 0; i < m; i++) {
        double t = row_shift(A + i * n, norms, n);
        if (!isnan(t)) {
            sum += t;
            rows++;
        }
    }
    return rows ? sum / (double)rows : NAN;
}

int ag_value_metrics(const double *A, size_t n, const double *norms, const ag_metric_set *sel,
                     ag_record *rec, ag_error *err)
{
    return ag_value_metrics_rect(A, n, n, norms, sel, rec, err);
}

int ag_value_metrics_rect(const double *A, size_t m, size_t n, const double *norms,
                          const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    if (!A || !norms || !sel || !rec || m == 0 || n == 0)
        return ag_error_set(err, AG_EINVAL, "value metrics: NULL argument or a zero size");
    for (size_t k = 0; k < m * n; k++)
        if (!isfinite(A[k]) || A[k] < 0)
            return ag_error_set(err, isfinite(A[k]) ? AG_EINVAL : AG_ENONFINITE,
                                "value metrics: attention (%zu, %zu) is %g, not a weight",
                                k / n, k % n, A[k]);
    double mean = 0, ss = 0;
    for (size_t j = 0; j < n; j++) {
        if (!isfinite(norms[j]) || norms[j] < 0)
            return ag_error_set(err, AG_EINVAL, "value metrics: norm %zu is %g", j, norms[j]);
        mean += norms[j];
    }
    mean /= (double)n;
    for (size_t j = 0; j < n; j++) /* two passes: the deviations from the mean */
        ss += (norms[j] - mean) * (norms[j] - mean);
    double cv = mean > 0 ? sqrt(ss / (double)n) / mean : NAN;
    double sink = mean > 0 ? norms[0] / mean : NAN;
    if (ON(AG_M_VALUE_NORM_MEAN))
        ag_record_set(rec, AG_M_VALUE_NORM_MEAN, AG_V_NUMBER, mean);
    if (ON(AG_M_VALUE_NORM_CV))
        ag_record_set(rec, AG_M_VALUE_NORM_CV, AG_V_NUMBER, cv);
    if (ON(AG_M_SINK_VALUE_RATIO))
        ag_record_set(rec, AG_M_SINK_VALUE_RATIO, AG_V_NUMBER, sink);
    if (ON(AG_M_NORM_ATTENTION_SHIFT))
        ag_record_set(rec, AG_M_NORM_ATTENTION_SHIFT, AG_V_NUMBER, attention_shift(A, norms, m, n));
    return AG_OK;
}
