/* test_weights.c — family D (weight space) in factored form against the
 * dense definition of docs/metrics.md, family D, and closed forms derived below. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

static gsl_rng *rng;

static void setup(void)
{
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20251129);
}

static void teardown(void)
{
    gsl_rng_free(rng);
}

TestSuite(weights, .init = setup, .fini = teardown);

static double *gaussian(size_t n)
{
    double *a = malloc(n * sizeof *a);
    for (size_t k = 0; k < n; k++)
        a[k] = gsl_ran_gaussian(rng, 1.0);
    return a;
}

/* C (m, n) = A (m, k, stride lda) · B (k, n, stride ldb), or with B
 * transposed when bt: B is then (n, k) with stride ldb. */
static double *matmul(const double *a, size_t lda, const double *b, size_t ldb, size_t m,
                      size_t k, size_t n, int bt)
{
    double *c = calloc(m * n, sizeof *c);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t t = 0; t < k; t++)
                c[i * n + j] += a[i * lda + t] * (bt ? b[j * ldb + t] : b[t * ldb + j]);
    return c;
}

static ag_record weight_record(const ag_head_factors *f)
{
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    ag_metric_set_families(&sel, AG_FAMILIES_WEIGHTS);
    ag_record_init(&r, 0, 0, 0, 0);
    cr_assert_eq(ag_weight_metrics(f, &sel, &r, &err), AG_OK, "%s", err.message);
    cr_assert_eq(r.rows, f->d);
    return r;
}

static ag_record dense_record(const double *M, size_t m, size_t n)
{
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    ag_metric_set_parse(&sel, "spectrum,symmetry_score", NULL);
    ag_record_init(&r, 0, 0, 0, 0);
    cr_assert_eq(ag_matrix_metrics(M, m, n, &sel, &r, &err), AG_OK, "%s", err.message);
    return r;
}

static void same(const ag_record *got, ag_metric gk, const ag_record *want, ag_metric wk,
                 double rtol)
{
    cr_assert_eq(got->kind[gk], want->kind[wk], "%s: kind %d, dense %s kind %d",
                 ag_metric_name(gk), got->kind[gk], ag_metric_name(wk), want->kind[wk]);
    double g = got->value[gk], w = want->value[wk];
    cr_assert(fabs(g - w) <= rtol * fabs(w) + 1e-14, "%s = %.17g, dense %.17g",
              ag_metric_name(gk), g, w);
}

static double copying_dense(const double *M, size_t d)
{
    double *re = malloc(d * sizeof *re), *im = malloc(d * sizeof *im), sr = 0, sa = 0;
    cr_assert_eq(ag_eig_general_values(M, d, re, im), AG_OK);
    for (size_t k = 0; k < d; k++) {
        sr += re[k];
        sa += hypot(re[k], im[k]);
    }
    free(re);
    free(im);
    return sr / sa;
}

/* Every key against the dense d×d matrices, for heads that are column blocks
 * of wider projections (row strides > d_h). */
Test(weights, agrees_with_dense_definition)
{
    enum { d = 24, dh = 5, H = 3, dout = 24 };
    double *wq = gaussian(d * H * dh), *wk = gaussian(d * H * dh), *wv = gaussian(d * H * dh),
           *wo = gaussian(H * dh * dout);
    for (size_t h = 0; h < H; h++) {
        ag_head_factors f = {.d = d, .d_h = dh, .d_out = dout,
                             .wq = wq + h * dh, .ldq = H * dh, .wk = wk + h * dh, .ldk = H * dh,
                             .wv = wv + h * dh, .ldv = H * dh, .wo = wo + h * dh * dout, .ldo = dout};
        ag_record r = weight_record(&f);
        double *mqk = matmul(f.wq, f.ldq, f.wk, f.ldk, d, dh, d, 1);   // (d, d)
        double *mov = matmul(f.wv, f.ldv, f.wo, f.ldo, d, dh, dout, 0); // (d, d)
        ag_record qk = dense_record(mqk, d, d), ov = dense_record(mov, d, dout);
        for (int k = 0; k < 6; k++) {
            same(&r, AG_M_QK_SIGMA_MAX + k, &qk, AG_M_SIGMA_MAX + k, 1e-9);
            same(&r, AG_M_OV_SIGMA_MAX + k, &ov, AG_M_SIGMA_MAX + k, 1e-9);
        }
        same(&r, AG_M_QK_SYMMETRY_SCORE, &qk, AG_M_SYMMETRY_SCORE, 1e-9);
        double c = copying_dense(mov, d);
        cr_assert(fabs(r.value[AG_M_OV_COPYING_SCORE] - c) <= 1e-9 * fabs(c),
                  "copying %.17g, dense %.17g", r.value[AG_M_OV_COPYING_SCORE], c);
        cr_assert_eq((int)r.value[AG_M_QK_NUMERICAL_RANK], dh);
        free(mqk);
        free(mov);
    }
    free(wq);
    free(wk);
    free(wv);
    free(wo);
}

/* W_K = W_Q: M = W_Q W_Qᵀ is symmetric positive semidefinite, so the score
 * is 1 and its singular values are the squares of W_Q's. */
Test(weights, equal_factors_symmetric)
{
    enum { d = 30, dh = 6 };
    double *wq = gaussian(d * dh), sq[dh];
    ag_head_factors f = {.d = d, .d_h = dh, .wq = wq, .ldq = dh, .wk = wq, .ldk = dh};
    ag_record r = weight_record(&f);
    cr_assert_eq(ag_svd_values(wq, d, dh, sq), AG_OK);
    cr_assert(fabs(r.value[AG_M_QK_SYMMETRY_SCORE] - 1) <= 64 * DBL_EPSILON);
    cr_assert(fabs(r.value[AG_M_QK_SIGMA_MAX] - sq[0] * sq[0]) <= 1e-12 * sq[0] * sq[0]);
    double s2 = 0, s1 = sq[0] * sq[0];
    for (int k = 0; k < dh; k++)
        s2 += pow(sq[k] * sq[k] / s1, 2);
    cr_assert(fabs(r.value[AG_M_QK_STABLE_RANK] - s2) <= 1e-12 * s2);
    cr_assert(fabs(r.value[AG_M_QK_SIGMA_GAP] - (1 - sq[1] * sq[1] / s1)) <= 1e-12);
    /* No W_V/W_O: the OV keys are null. */
    cr_assert_eq(r.kind[AG_M_OV_SIGMA_MAX], AG_V_NULL);
    cr_assert_eq(r.kind[AG_M_OV_COPYING_SCORE], AG_V_NULL);
    free(wq);
}

/* W_K = W_Q J with Jᵀ = −J: M = W_Q Jᵀ W_Qᵀ = −M ᵀ, antisymmetric, score 0. */
Test(weights, antisymmetric_core_scores_zero)
{
    enum { d = 20, dh = 4 };
    double *wq = gaussian(d * dh), J[dh * dh] = {0};
    for (int i = 0; i < dh; i++)
        for (int j = i + 1; j < dh; j++) {
            J[i * dh + j] = gsl_ran_gaussian(rng, 1.0);
            J[j * dh + i] = -J[i * dh + j];
        }
    double *wk = matmul(wq, dh, J, dh, d, dh, dh, 0);
    ag_head_factors f = {.d = d, .d_h = dh, .wq = wq, .ldq = dh, .wk = wk, .ldk = dh};
    ag_record r = weight_record(&f);
    cr_assert_eq(r.kind[AG_M_QK_SYMMETRY_SCORE], AG_V_NUMBER);
    cr_assert(fabs(r.value[AG_M_QK_SYMMETRY_SCORE]) <= 1e-14, "score %g",
              r.value[AG_M_QK_SYMMETRY_SCORE]);
    free(wq);
    free(wk);
}

/* W_O = c (W_VᵀW_V)⁻¹W_Vᵀ = c W_V⁺: W_V W_O = c P with P the orthogonal
 * projection onto W_V's columns — eigenvalues c (d_h times) and 0, singular
 * values |c| (d_h times): copying score sign(c), effective rank d_h. */
static double *scaled_pinv(const double *wv, size_t d, size_t dh, double c)
{
    double *gram = calloc(dh * dh, sizeof *gram); // W_VᵀW_V (d_h, d_h)
    for (size_t i = 0; i < dh; i++)
        for (size_t j = 0; j < dh; j++)
            for (size_t t = 0; t < d; t++)
                gram[i * dh + j] += wv[t * dh + i] * wv[t * dh + j];
    /* Invert the SPD Gram by Gauss–Jordan (d_h is tiny). */
    double *inv = calloc(dh * dh, sizeof *inv);
    for (size_t i = 0; i < dh; i++)
        inv[i * dh + i] = 1;
    for (size_t p = 0; p < dh; p++) {
        double piv = gram[p * dh + p];
        for (size_t j = 0; j < dh; j++) {
            gram[p * dh + j] /= piv;
            inv[p * dh + j] /= piv;
        }
        for (size_t i = 0; i < dh; i++)
            if (i != p) {
                double f = gram[i * dh + p];
                for (size_t j = 0; j < dh; j++) {
                    gram[i * dh + j] -= f * gram[p * dh + j];
                    inv[i * dh + j] -= f * inv[p * dh + j];
                }
            }
    }
    double *wo = calloc(dh * d, sizeof *wo); // c·inv·W_Vᵀ (d_h, d)
    for (size_t i = 0; i < dh; i++)
        for (size_t j = 0; j < d; j++)
            for (size_t t = 0; t < dh; t++)
                wo[i * d + j] += c * inv[i * dh + t] * wv[j * dh + t];
    free(gram);
    free(inv);
    return wo;
}

Test(weights, projection_copying_score_sign)
{
    enum { d = 16, dh = 3 };
    const double cs[2] = {2.0, -0.5};
    double *wq = gaussian(d * dh), *wv = gaussian(d * dh);
    for (int t = 0; t < 2; t++) {
        double *wo = scaled_pinv(wv, d, dh, cs[t]);
        ag_head_factors f = {.d = d, .d_h = dh, .d_out = d, .wq = wq, .ldq = dh, .wk = wq,
                             .ldk = dh, .wv = wv, .ldv = dh, .wo = wo, .ldo = d};
        ag_record r = weight_record(&f);
        double want = cs[t] > 0 ? 1.0 : -1.0;
        cr_assert(fabs(r.value[AG_M_OV_COPYING_SCORE] - want) <= 1e-12, "c = %g: score %.17g",
                  cs[t], r.value[AG_M_OV_COPYING_SCORE]);
        cr_assert(fabs(r.value[AG_M_OV_SIGMA_MAX] - fabs(cs[t])) <= 1e-12);
        cr_assert(fabs(r.value[AG_M_OV_EFFECTIVE_RANK] - dh) <= 1e-10);
        cr_assert(fabs(r.value[AG_M_OV_SIGMA_GAP]) <= 1e-12);
        cr_assert_eq((int)r.value[AG_M_OV_NUMERICAL_RANK], dh);
        free(wo);
    }
    free(wq);
    free(wv);
}

/* W_Q = A B with A (d, r), B (r, d_h): rank r, so M_QK has rank r. */
Test(weights, rank_deficient_factor)
{
    enum { d = 40, dh = 8, r = 3 };
    double *A = gaussian(d * r), *B = gaussian(r * dh), *wk = gaussian(d * dh);
    double *wq = matmul(A, r, B, dh, d, r, dh, 0);
    ag_head_factors f = {.d = d, .d_h = dh, .wq = wq, .ldq = dh, .wk = wk, .ldk = dh};
    ag_record rec = weight_record(&f);
    cr_assert_eq((int)rec.value[AG_M_QK_NUMERICAL_RANK], r);
    double *mqk = matmul(wq, dh, wk, dh, d, dh, d, 1);
    ag_record dense = dense_record(mqk, d, d);
    cr_assert_eq((int)dense.value[AG_M_NUMERICAL_RANK], r);
    same(&rec, AG_M_QK_EFFECTIVE_RANK, &dense, AG_M_EFFECTIVE_RANK, 1e-9);
    free(A);
    free(B);
    free(wk);
    free(wq);
    free(mqk);
}

/* An output projection that changes the width: M_OV is d×d_out, so the
 * copying score is null while its singular values are defined. */
Test(weights, width_changing_output)
{
    enum { d = 12, dh = 4, dout = 20 };
    double *wq = gaussian(d * dh), *wv = gaussian(d * dh), *wo = gaussian(dh * dout);
    ag_head_factors f = {.d = d, .d_h = dh, .d_out = dout, .wq = wq, .ldq = dh, .wk = wq,
                         .ldk = dh, .wv = wv, .ldv = dh, .wo = wo, .ldo = dout};
    ag_record r = weight_record(&f);
    cr_assert_eq(r.kind[AG_M_OV_COPYING_SCORE], AG_V_NULL);
    double *mov = matmul(wv, dh, wo, dout, d, dh, dout, 0);
    ag_record dense = dense_record(mov, d, dout);
    for (int k = 0; k < 6; k++)
        same(&r, AG_M_OV_SIGMA_MAX + k, &dense, AG_M_SIGMA_MAX + k, 1e-9);
    free(wq);
    free(wv);
    free(wo);
    free(mov);
}

/* W_Q = 0: M_QK = 0, so only sigma_max (0) and numerical_rank (0) are
 * defined; W_O = 0 likewise makes every eigenvalue 0 (copying null). */
Test(weights, zero_factors)
{
    enum { d = 10, dh = 2 };
    double wq[d * dh] = {0}, wo[dh * d] = {0}, *wk = gaussian(d * dh);
    ag_head_factors f = {.d = d, .d_h = dh, .d_out = d, .wq = wq, .ldq = dh, .wk = wk,
                         .ldk = dh, .wv = wk, .ldv = dh, .wo = wo, .ldo = d};
    ag_record r = weight_record(&f);
    cr_assert_eq(r.kind[AG_M_QK_SIGMA_MAX], AG_V_NUMBER);
    cr_assert_eq(r.value[AG_M_QK_SIGMA_MAX], 0.0);
    cr_assert_eq(r.value[AG_M_QK_NUMERICAL_RANK], 0.0);
    cr_assert_eq(r.kind[AG_M_QK_EFFECTIVE_RANK], AG_V_NULL);
    cr_assert_eq(r.kind[AG_M_QK_SYMMETRY_SCORE], AG_V_NULL);
    cr_assert_eq(r.kind[AG_M_OV_COPYING_SCORE], AG_V_NULL);
    free(wk);
}

Test(weights, errors)
{
    enum { d = 6, dh = 2 };
    double wq[d * dh], wv[d * dh], wo[dh * d];
    for (int k = 0; k < d * dh; k++)
        wq[k] = wv[k] = wo[k] = 1.0 / (k + 1);
    ag_head_factors f = {.d = d, .d_h = dh, .d_out = d, .wq = wq, .ldq = dh, .wk = wq,
                         .ldk = dh, .wv = wv, .ldv = dh, .wo = wo, .ldo = d};
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    ag_metric_set_families(&sel, AG_FAMILIES_WEIGHTS);
    wv[3] = NAN;
    cr_assert_eq(ag_weight_metrics(&f, &sel, &r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "W_V") != NULL, "%s", err.message);
    wv[3] = 0;
    f.d_h = 0;
    cr_assert_eq(ag_weight_metrics(&f, &sel, &r, &err), AG_EINVAL);
    f.d_h = dh;
    f.ldq = 1;
    cr_assert_eq(ag_weight_metrics(&f, &sel, &r, &err), AG_EINVAL);
    /* --metrics of another family is refused for this command's families. */
    cr_assert_eq(ag_metric_set_parse_families(&sel, "sigma_max", AG_FAMILIES_WEIGHTS, &err), AG_EINVAL);
    cr_assert_eq(ag_metric_set_parse_families(&sel, "all", AG_FAMILIES_WEIGHTS, &err), AG_OK);
    cr_assert_eq(ag_metric_set_count(&sel), 14);
}
