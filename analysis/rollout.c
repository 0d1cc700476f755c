/* rollout.c — docs/metrics.md, family G: attention rollout (Abnar & Zuidema 2020) and the
 * metrics of one hidden state of the residual stream. See attngeom/layers.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "analysis.h"

/* First non-finite entry of M (count values), or SIZE_MAX. */
static size_t first_nonfinite(const double *M, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (!isfinite(M[k]))
            return k;
    return SIZE_MAX;
}

/* The checks every use of one layer's attention shares (rollout, flow). */
static int attn_check(const double *attn, int n_head, size_t n, ag_error *err)
{
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "rollout: empty attention (n = 0)");
    if (n_head < 1)
        return ag_error_set(err, AG_EINVAL, "rollout: %d heads", n_head);
    if (n > SIZE_MAX / n / sizeof(double) / 2 / (size_t)n_head || n > (size_t)INT32_MAX)
        return ag_error_set(err, AG_ELIMIT, "rollout: %zu tokens is too many", n);
    size_t nn = n * n;
    size_t bad = first_nonfinite(attn, nn * (size_t)n_head);
    if (bad != SIZE_MAX)
        return ag_error_set(err, AG_ENONFINITE,
                            "rollout: non-finite attention (%g) at head %zu, row %zu, column %zu",
                            attn[bad], bad / nn, bad % nn / n, bad % n);
    return AG_OK;
}

/* Ã = ½ Ā + ½ I into T, with Ā summed in head order, then divided by H
 * (Abnar & Zuidema 2020, §3: the residual connection as an identity). */
static void mix(const double *attn, int n_head, size_t n, double *T)
{
    size_t nn = n * n;
    memcpy(T, attn, nn * sizeof *T);
    for (int h = 1; h < n_head; h++) {
        const double *A = attn + (size_t)h * nn;
        for (size_t k = 0; k < nn; k++)
            T[k] += A[k];
    }
    for (size_t k = 0; k < nn; k++)
        T[k] = 0.5 * (T[k] / n_head);
    for (size_t i = 0; i < n; i++)
        T[i * n + i] += 0.5;
}

int ag_rollout_mix(const double *attn, int n_head, size_t n, double *T, ag_error *err)
{
    if (!T || !attn)
        return ag_error_set(err, AG_EINVAL, "rollout: NULL matrix");
    int status = attn_check(attn, n_head, n, err);
    if (status == AG_OK)
        mix(attn, n_head, n, T);
    return status;
}

int ag_rollout_step(double *R, const double *attn, int n_head, size_t n,
                    int first, ag_error *err)
{
    if (!R || !attn)
        return ag_error_set(err, AG_EINVAL, "rollout: NULL matrix");
    int status = attn_check(attn, n_head, n, err);
    if (status != AG_OK)
        return status;
    size_t nn = n * n, bad;
    if (!first && (bad = first_nonfinite(R, nn)) != SIZE_MAX)
        return ag_error_set(err, AG_ENONFINITE,
                            "rollout: non-finite value (%g) in R at row %zu, column %zu",
                            R[bad], bad / n, bad % n);

    double *T = malloc((first ? 1 : 2) * nn * sizeof *T);
    if (!T)
        return ag_error_set(err, AG_ENOMEM, "rollout: out of memory for %zux%zu scratch", n, n);
    mix(attn, n_head, n, T);
    if (first) {
        memcpy(R, T, nn * sizeof *R);
    } else {
        double *P = T + nn; /* P = Ã R */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
                    1.0, T, (int)n, R, (int)n, 0.0, P, (int)n);
        memcpy(R, P, nn * sizeof *R);
    }
    free(T);
    return AG_OK;
}

int ag_rollout_cross(const double *cross, int n_head, size_t m, size_t n, const double *R_enc,
                     double *out, ag_error *err)
{
    if (!cross || !R_enc || !out)
        return ag_error_set(err, AG_EINVAL, "cross rollout: NULL matrix");
    if (m == 0 || n == 0 || n_head < 1)
        return ag_error_set(err, AG_EINVAL, "cross rollout: %zu targets, %zu sources, %d heads",
                            m, n, n_head);
    if (m > (size_t)INT32_MAX || n > (size_t)INT32_MAX || n > SIZE_MAX / sizeof(double) / n ||
        m > SIZE_MAX / sizeof(double) / n / (size_t)n_head)
        return ag_error_set(err, AG_ELIMIT, "cross rollout: %zux%zu is too large", m, n);
    size_t mn = m * n, bad;
    if ((bad = first_nonfinite(cross, mn * (size_t)n_head)) != SIZE_MAX)
        return ag_error_set(err, AG_ENONFINITE, "cross rollout: non-finite cross-attention (%g) "
                            "at head %zu, row %zu, column %zu", cross[bad], bad / mn,
                            bad % mn / n, bad % n);
    if ((bad = first_nonfinite(R_enc, n * n)) != SIZE_MAX)
        return ag_error_set(err, AG_ENONFINITE, "cross rollout: non-finite value (%g) in the "
                            "encoder's rollout at row %zu, column %zu", R_enc[bad], bad / n,
                            bad % n);
    double *A = malloc(mn * sizeof *A);
    if (!A)
        return ag_error_set(err, AG_ENOMEM, "cross rollout: out of memory for %zux%zu", m, n);
    /* Ā_cross: the heads summed in head order, then divided by H (as mix);
     * no ½ I: a target row has no source token of its own to keep */
    memcpy(A, cross, mn * sizeof *A);
    for (int h = 1; h < n_head; h++)
        cblas_daxpy((int)mn, 1.0, cross + (size_t)h * mn, 1, A, 1);
    cblas_dscal((int)mn, 1.0 / n_head, A, 1);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)n, 1.0, A,
                (int)n, R_enc, (int)n, 0.0, out, (int)n);
    free(A);
    return AG_OK;
}

int ag_rollout(const double *attn, int n_layer, int n_head, size_t n,
               double *R_out, ag_error *err)
{
    if (!attn || !R_out)
        return ag_error_set(err, AG_EINVAL, "rollout: NULL array");
    if (n_layer < 1)
        return ag_error_set(err, AG_EINVAL, "rollout: %d layers", n_layer);
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "rollout: empty attention (n = 0)");
    if (n_head < 1)
        return ag_error_set(err, AG_EINVAL, "rollout: %d heads", n_head);
    size_t nn = n * n;
    for (int l = 0; l < n_layer; l++) {
        double *R = R_out + (size_t)l * nn;
        if (l > 0)
            memcpy(R, R - nn, nn * sizeof *R);
        ag_error e = {0};
        int status = ag_rollout_step(R, attn + (size_t)l * n_head * nn, n_head, n, l == 0, &e);
        if (status != AG_OK)
            return ag_error_set(err, status, "layer %d: %s", l, e.message);
    }
    return AG_OK;
}

int ag_residual_metrics(const double *X, size_t n, size_t d,
                        const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    if (!X || !sel || !rec)
        return ag_error_set(err, AG_EINVAL, "residual: NULL argument");
    ag_metric_set only;
    memset(&only, 0, sizeof only);
    for (int k = 0; k < AG_M_COUNT; k++) {
        ag_family f = ag_metric_family((ag_metric)k);
        only.on[k] = sel->on[k] && (f == AG_FAMILY_SPECTRUM || f == AG_FAMILY_GEOMETRY);
    }
    int status = ag_matrix_metrics(X, n, d, &only, rec, err);
    if (status == AG_OK)
        for (int k = 0; k < AG_M_COUNT; k++)
            if (!only.on[k])
                rec->kind[k] = AG_V_ABSENT;
    return status;
}
