/* contributions.c — docs/metrics.md, "Contributions": one attention block
 * decomposed into per-source terms (Kobayashi et al. 2021, §3), their
 * norms, the context-mixing ratio and ALTI (Ferrando et al. 2022, §3). See
 * attngeom/contributions.h for the definitions. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "analysis.h"
#include "attngeom/contributions.h"
#include "base/sized_int.h"

/* One row i's work: its terms T (n, d), the pre-norm sum z (d), y_i (d). */
typedef struct {
    const ag_contrib_input *in;
    const double *F; /* (H, n, d) f_h(x_j) */
    double *T, *z, *y;
} row_ws;

static int check_input(const ag_contrib_input *in, ag_error *err)
{
    const ag_attn_weights *w = in->w;
    if (!in->attn || !in->x || !in->h || !w || !in->p || !w->wv.data || !w->wo.data)
        return ag_error_set(err, AG_EINVAL, "contributions: missing argument");
    size_t hd = (size_t)w->head_dim, d = in->d;
    if (in->n == 0 || d == 0 || w->n_head < 1 || w->n_kv_head < 1 ||
        w->n_head % w->n_kv_head || w->wv.shape[0] != d ||
        w->wv.shape[1] != (size_t)w->n_kv_head * hd ||
        w->wo.shape[0] != (size_t)w->n_head * hd || w->wo.shape[1] != d)
        return ag_error_set(err, AG_EINVAL, "contributions: the weights do not fit n = %zu, d = %zu",
                            in->n, d);
    const ag_block_params *p = in->p;
    if ((p->bo.data && p->bo.shape[0] != d) ||
        (p->after != AG_AFTER_NONE && (!p->gamma.data || p->gamma.shape[0] != d)) ||
        (p->beta.data && p->beta.shape[0] != d))
        return ag_error_set(err, AG_EINVAL, "contributions: the block's norm or b_O does not fit d = %zu", d);
    if (in->n > SIZE_MAX / sizeof(double) / d / ((size_t)w->n_head + 1) / in->n ||
        in->n > (size_t)INT32_MAX || d > (size_t)INT32_MAX)
        return ag_error_set(err, AG_ELIMIT, "contributions: %zu tokens of width %zu are too many", in->n, d);
    /* the weights were checked finite at load; the activations are the caller's */
    double amax;
    const char *bad = !ag_finite_max_abs(in->attn, (size_t)w->n_head * in->n * in->n, &amax) ? "attention"
                      : !ag_finite_max_abs(in->x, in->n * d, &amax)                           ? "X"
                      : !ag_finite_max_abs(in->h, in->n * d, &amax) ? "the block input h" : NULL;
    if (bad)
        return ag_error_set(err, AG_ENONFINITE, "contributions: %s holds a NaN or Inf", bad);
    return AG_OK;
}

/* F (H, n, d): f_h(x_j) = (x_j W_V^g + b_V^g) W_O^h, g the kv head of h. */
static int value_outputs(const ag_contrib_input *in, double *F)
{
    const ag_attn_weights *w = in->w;
    size_t n = in->n, d = in->d, hd = (size_t)w->head_dim, dv = w->wv.shape[1];
    double *V = malloc(n * dv * sizeof *V);
    if (!V)
        return AG_ENOMEM;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)dv, (int)d, 1.0, in->x,
                (int)d, w->wv.data, (int)dv, 0.0, V, (int)dv);
    for (size_t i = 0; w->bv.data && i < n; i++)
        for (size_t c = 0; c < dv; c++)
            V[i * dv + c] += w->bv.data[c];
    int group = w->n_head / w->n_kv_head;
    for (int h = 0; h < w->n_head; h++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)d, (int)hd, 1.0,
                    V + (size_t)(h / group) * hd, (int)dv, w->wo.data + (size_t)h * hd * d,
                    (int)d, 0.0, F + (size_t)h * n * d, (int)d);
    free(V);
    return AG_OK;
}

/* s_i of the after-norm for the pre-norm vector z (d). */
static double norm_scale(const ag_block_params *p, const double *z, size_t d)
{
    double mean = 0, ss = 0;
    if (p->norm == AG_NORM_LAYER) {
        for (size_t c = 0; c < d; c++)
            mean += z[c];
        mean /= (double)d;
    }
    for (size_t c = 0; c < d; c++)
        ss += (z[c] - mean) * (z[c] - mean);
    return sqrt(ss / (double)d + p->eps);
}

/* v ← g_i(v) = γ ⊙ (v − mean(v)) / s (RMSNorm: no mean). */
static void norm_apply(const ag_block_params *p, double s, double *v, size_t d)
{
    double mean = 0;
    if (p->norm == AG_NORM_LAYER) {
        for (size_t c = 0; c < d; c++)
            mean += v[c];
        mean /= (double)d;
    }
    for (size_t c = 0; c < d; c++)
        v[c] = p->gamma.data[c] * ((v[c] - mean) / s);
}

/* Row i's terms into r->T and y_i into r->y; bias_i into bias (d). */
static void row_terms(row_ws *r, size_t i, double *bias)
{
    const ag_contrib_input *in = r->in;
    const ag_block_params *p = in->p;
    size_t n = in->n, d = in->d, H = (size_t)in->w->n_head;
    memset(r->T, 0, n * d * sizeof *r->T);
    for (size_t h = 0; h < H; h++)
        for (size_t j = 0; j < n; j++) {
            double a = in->attn[(h * n + i) * n + j];
            if (a != 0)
                cblas_daxpy((int)d, a, r->F + (h * n + j) * d, 1, r->T + j * d, 1);
        }
    double *Ti = r->T + i * d;
    if (p->after != AG_AFTER_BRANCH) /* the residual enters before the norm */
        cblas_daxpy((int)d, 1.0, in->h + i * d, 1, Ti, 1);
    for (size_t c = 0; c < d; c++)
        bias[c] = p->bo.data ? p->bo.data[c] : 0;
    if (p->after != AG_AFTER_NONE) {
        memcpy(r->z, bias, d * sizeof *r->z); /* z_i = Σ_j t_i(x_j) + b_O */
        for (size_t j = 0; j < n; j++)
            cblas_daxpy((int)d, 1.0, r->T + j * d, 1, r->z, 1);
        double s = norm_scale(p, r->z, d);
        for (size_t j = 0; j < n; j++)
            norm_apply(p, s, r->T + j * d, d);
        norm_apply(p, s, bias, d);
        for (size_t c = 0; p->beta.data && c < d; c++)
            bias[c] += p->beta.data[c];
        if (p->after == AG_AFTER_BRANCH)
            cblas_daxpy((int)d, 1.0, in->h + i * d, 1, Ti, 1);
    }
    memcpy(r->y, bias, d * sizeof *r->y);
    for (size_t j = 0; j < n; j++)
        cblas_daxpy((int)d, 1.0, r->T + j * d, 1, r->y, 1);
}

/* ‖a − b‖₁ (b NULL: ‖a‖₁). */
static double l1(const double *a, const double *b, size_t d)
{
    double s = 0;
    for (size_t c = 0; c < d; c++)
        s += fabs(b ? a[c] - b[c] : a[c]);
    return s;
}

/* Row i of N, C and r from its terms. */
static int row_outputs(const row_ws *r, size_t i, const ag_contrib_output *out, ag_error *err)
{
    size_t n = r->in->n, d = r->in->d;
    const double *Ti = r->T + i * d;
    for (size_t j = 0; out->norms && j < n; j++)
        out->norms[i * n + j] = cblas_dnrm2((int)d, r->T + j * d, 1);
    if (out->mixing) { /* Σ_{j≠i} T = y_i − bias_i − T_i(x_i): into z */
        for (size_t c = 0; c < d; c++)
            r->z[c] = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i)
                cblas_daxpy((int)d, 1.0, r->T + j * d, 1, r->z, 1);
        double mix = cblas_dnrm2((int)d, r->z, 1), keep = cblas_dnrm2((int)d, Ti, 1);
        out->mixing[i] = mix + keep > 0 ? mix / (mix + keep) : 0;
    }
    if (!out->alti)
        return AG_OK;
    double *C = out->alti + i * n, y1 = l1(r->y, NULL, d), sum = 0;
    for (size_t j = 0; j < n; j++) {
        C[j] = fmax(0.0, y1 - l1(r->y, r->T + j * d, d));
        sum += C[j];
    }
    if (!(sum > 0) || !isfinite(sum))
        return ag_error_set(err, AG_ENONFINITE, "contributions: row %zu: no source contributes (ALTI row sum %g)", i, sum);
    for (size_t j = 0; j < n; j++)
        C[j] /= sum;
    return AG_OK;
}

int ag_contributions_layer(const ag_contrib_input *in_user, const ag_contrib_output *out,
                           ag_error *err)
{
    ag_contrib_input in = AG_CONTRIB_INPUT_DEFAULT;
    if (!in_user || !out)
        return ag_error_set(err, AG_EINVAL, "contributions: missing argument");
    int status = AG_SIZED_READ(&in, in_user, ag_contrib_input, err);
    if (status == AG_OK)
        status = check_input(&in, err);
    if (status != AG_OK)
        return status;
    size_t n = in.n, d = in.d, H = (size_t)in.w->n_head;
    double *F = malloc((H * n * d + n * d + 2 * d) * sizeof *F), *bias = NULL;
    if (!F)
        return ag_error_set(err, AG_ENOMEM, "contributions: out of memory for %zu tokens", n);
    row_ws r = {.in = &in, .F = F, .T = F + H * n * d};
    r.z = r.T + n * d;
    r.y = r.z + d;
    if (value_outputs(&in, F) != AG_OK || !(bias = malloc(d * sizeof *bias)))
        status = ag_error_set(err, AG_ENOMEM, "contributions: out of memory for %zu tokens", n);
    for (size_t i = 0; status == AG_OK && i < n; i++) {
        row_terms(&r, i, out->bias ? out->bias + i * d : bias);
        if (out->y)
            memcpy(out->y + i * d, r.y, d * sizeof *r.y);
        status = row_outputs(&r, i, out, err);
    }
    free(bias);
    free(F);
    return status;
}

int ag_contributions_compose(double *R, const double *C, size_t n, int first, ag_error *err)
{
    if (!R || !C || n == 0)
        return ag_error_set(err, AG_EINVAL, "contributions: missing matrix");
    if (n > SIZE_MAX / sizeof(double) / n || n > (size_t)INT32_MAX)
        return ag_error_set(err, AG_ELIMIT, "contributions: %zu tokens is too many", n);
    size_t nn = n * n;
    if (first) {
        memcpy(R, C, nn * sizeof *R);
        return AG_OK;
    }
    double *P = malloc(nn * sizeof *P);
    if (!P)
        return ag_error_set(err, AG_ENOMEM, "contributions: out of memory for %zux%zu", n, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, C, (int)n,
                R, (int)n, 0.0, P, (int)n);
    memcpy(R, P, nn * sizeof *R);
    free(P);
    return AG_OK;
}
