/* weights.c — family D: the weight-space geometry of one head (docs/metrics.md, family D),
 * in factored form.
 *
 * M_QK = W_Q W_Kᵀ decides which token pairs can attend to each other and
 * M_OV = W_V W_O what is written back (Elhage et al. 2021, "A mathematical
 * framework for transformer circuits", §"QK and OV circuits"). Both are d×d
 * of rank ≤ d_h; forming them costs O(d²·d_h) and an SVD O(d³). Here:
 *  - W_Q = Q₁R₁, W_K = Q₂R₂ (thin QR, LAPACK dgeqrf): M_QK = Q₁(R₁R₂ᵀ)Q₂ᵀ, so
 *    the non-zero singular values of M_QK are those of the d_h×d_h core
 *    R₁R₂ᵀ; the other d − d_h are 0 (Golub & Van Loan, Matrix Computations,
 *    §5.2 and §8.6);
 *  - the same for M_OV with W_V = Q₃R₃ and W_Oᵀ = Q₄R₄;
 *  - the non-zero eigenvalues of W_V W_O are those of W_O W_V (d_h×d_h)
 *    (Horn & Johnson, Matrix Analysis, Thm 1.3.22);
 *  - ‖M_QK‖_F = ‖R₁R₂ᵀ‖_F and tr(M_QK²) = tr((W_KᵀW_Q)²), so the symmetry
 *    score ‖S‖²/‖M‖² = (1 + tr(M²)/‖M‖²)/2 (Saponati et al. 2025) needs
 *    only d_h×d_h products.
 * Cost per head O(d·d_h²).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "analysis.h"

#define ON(m) (sel->on[m])

/* Copy the (rows, cols) block with row stride ld into column-major storage. */
static double *to_col_major(const double *a, size_t rows, size_t cols, size_t ld)
{
    double *c = malloc(rows * cols * sizeof *c);
    if (c)
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++)
                c[i + j * rows] = a[i * ld + j];
    return c;
}

int ag_thin_r(const double *a, size_t rows, size_t cols, size_t ld, double **r_out,
                  size_t *k_out)
{
    double *c = to_col_major(a, rows, cols, ld); // (rows, cols) column-major
    if (!c)
        return AG_ENOMEM;
    int status = ag_thin_r_cm(c, rows, cols, r_out, k_out);
    free(c);
    return status;
}

int ag_thin_r_cm(double *c, size_t rows, size_t cols, double **r_out, size_t *k_out)
{
    size_t k = rows < cols ? rows : cols;
    double *tau = malloc(k * sizeof *tau);
    double *r = calloc(k * cols, sizeof *r);     // (k, cols)
    int status = (tau && r) ? AG_OK : AG_ENOMEM;
    if (status == AG_OK &&
        LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)rows, (lapack_int)cols, c,
                       (lapack_int)rows, tau) != 0)
        status = AG_ELAPACK;
    if (status == AG_OK)
        for (size_t i = 0; i < k; i++)
            for (size_t j = i; j < cols; j++)
                r[i * cols + j] = c[i + j * rows];
    free(tau);
    if (status != AG_OK) {
        free(r);
        return status;
    }
    *r_out = r;
    *k_out = k;
    return AG_OK;
}

int ag_product_sigma(const double *a, size_t m, size_t lda, const double *b, size_t n,
                     size_t ldb, size_t h, double *sigma, size_t q, double *frob)
{
    double *ra = NULL, *rb = NULL, *core = NULL;
    size_t ka = 0, kb = 0;
    int status = ag_thin_r(a, m, h, lda, &ra, &ka);
    if (status == AG_OK)
        status = ag_thin_r(b, n, h, ldb, &rb, &kb);
    if (status == AG_OK && !(core = malloc(ka * kb * sizeof *core)))
        status = AG_ENOMEM;
    if (status == AG_OK) {
        // core (ka, kb) = R_A (ka, h) · R_Bᵀ (h, kb)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ka, (int)kb, (int)h,
                    1.0, ra, (int)h, rb, (int)h, 0.0, core, (int)kb);
        double amax = 0, s2 = 0;
        for (size_t k = 0; k < ka * kb; k++)
            amax = fmax(amax, fabs(core[k]));
        for (size_t k = 0; amax > 0 && k < ka * kb; k++)
            s2 += (core[k] / amax) * (core[k] / amax);
        *frob = amax * sqrt(s2);
        memset(sigma, 0, q * sizeof *sigma);
        status = ag_svd_values(core, ka, kb, sigma); /* min(ka, kb) ≤ q values */
    }
    free(ra);
    free(rb);
    free(core);
    return status;
}

/* tr((W_KᵀW_Q)²): C = W_KᵀW_Q (d_h, d_h), tr(C²) = Σ_ij C_ij C_ji. */
static int qk_trace_square(const ag_head_factors *f, double *out)
{
    size_t h = f->d_h;
    double *c = malloc(h * h * sizeof *c); // (d_h, d_h)
    if (!c)
        return AG_ENOMEM;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)h, (int)h, (int)f->d, 1.0,
                f->wk, (int)f->ldk, f->wq, (int)f->ldq, 0.0, c, (int)h);
    double t = 0;
    for (size_t i = 0; i < h; i++)
        for (size_t j = 0; j < h; j++)
            t += c[i * h + j] * c[j * h + i];
    free(c);
    *out = t;
    return AG_OK;
}

/* f's blocks are 2^-e_q·W_Q etc. (scaled_factors), e the exponent of
 * their product: M_QK = 2^(e_q+e_k)·(the product of the scaled blocks). */
static int qk_keys(const ag_head_factors *f, int e, const ag_metric_set *sel, ag_record *rec)
{
    double *sigma = calloc(f->d, sizeof *sigma), frob = 0, tr2 = 0;
    if (!sigma)
        return AG_ENOMEM;
    int status = ag_product_sigma(f->wq, f->d, f->ldq, f->wk, f->d, f->ldk, f->d_h,
                               sigma, f->d, &frob);
    if (status == AG_OK)
        ag_spectrum_keys_scaled(sigma, f->d, f->d, f->d, e, AG_M_QK_SIGMA_MAX, sel, rec);
    if (status == AG_OK && ON(AG_M_QK_SYMMETRY_SCORE)) {
        status = qk_trace_square(f, &tr2);
        if (status == AG_OK && frob > 0)
            ag_record_set(rec, AG_M_QK_SYMMETRY_SCORE, AG_V_NUMBER,
                          0.5 * (1.0 + tr2 / frob / frob));
        else if (status == AG_OK)
            ag_record_set(rec, AG_M_QK_SYMMETRY_SCORE, AG_V_NULL, 0);
    }
    free(sigma);
    return status;
}

/* Σ Re λ / Σ |λ| over the eigenvalues of W_O W_V (d_h, d_h), which are the
 * non-zero eigenvalues of M_OV. */
static int ov_copying(const ag_head_factors *f, ag_record *rec)
{
    size_t h = f->d_h;
    double *p = malloc(h * h * sizeof *p), *re = malloc(h * sizeof *re),
           *im = malloc(h * sizeof *im);
    int status = (p && re && im) ? AG_OK : AG_ENOMEM;
    if (status == AG_OK) {
        // p (d_h, d_h) = W_O (d_h, d) · W_V (d, d_h)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)h, (int)h, (int)f->d,
                    1.0, f->wo, (int)f->ldo, f->wv, (int)f->ldv, 0.0, p, (int)h);
        status = ag_eig_general_values(p, h, re, im);
    }
    if (status == AG_OK) {
        double sum_re = 0, sum_abs = 0;
        for (size_t k = 0; k < h; k++) {
            sum_re += re[k];
            sum_abs += hypot(re[k], im[k]);
        }
        ag_record_set(rec, AG_M_OV_COPYING_SCORE, sum_abs > 0 ? AG_V_NUMBER : AG_V_NULL,
                      sum_abs > 0 ? sum_re / sum_abs : 0);
    }
    free(p);
    free(re);
    free(im);
    return status;
}

static void null_ov(const ag_metric_set *sel, ag_record *rec)
{
    for (int k = AG_M_OV_SIGMA_MAX; k <= AG_M_OV_COPYING_SCORE; k++)
        if (sel->on[k])
            ag_record_set(rec, (ag_metric)k, AG_V_NULL, 0);
}

static int ov_keys(const ag_head_factors *f, int e, const ag_metric_set *sel, ag_record *rec)
{
    if (!f->wv || !f->wo) {
        null_ov(sel, rec);
        return AG_OK;
    }
    size_t q = f->d < f->d_out ? f->d : f->d_out;
    double *sigma = calloc(q, sizeof *sigma), frob = 0;
    if (!sigma)
        return AG_ENOMEM;
    /* M_OV = W_V W_O = W_V (W_Oᵀ)ᵀ with W_Oᵀ (d_out, d_h): the block of W_O
     * transposed, so copy it. */
    double *wot = malloc(f->d_out * f->d_h * sizeof *wot); // (d_out, d_h)
    int status = wot ? AG_OK : AG_ENOMEM;
    if (status == AG_OK) {
        for (size_t i = 0; i < f->d_h; i++)
            for (size_t j = 0; j < f->d_out; j++)
                wot[j * f->d_h + i] = f->wo[i * f->ldo + j];
        status = ag_product_sigma(f->wv, f->d, f->ldv, wot, f->d_out, f->d_h, f->d_h,
                               sigma, q, &frob);
    }
    if (status == AG_OK)
        ag_spectrum_keys_scaled(sigma, q, f->d, f->d_out, e, AG_M_OV_SIGMA_MAX, sel, rec);
    if (status == AG_OK && ON(AG_M_OV_COPYING_SCORE)) {
        if (f->d_out == f->d)
            status = ov_copying(f, rec);
        else
            ag_record_set(rec, AG_M_OV_COPYING_SCORE, AG_V_NULL, 0);
    }
    free(wot);
    free(sigma);
    return status;
}

static int check_block(const double *a, size_t rows, size_t cols, size_t ld,
                       const char *name, ag_error *err)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            if (!isfinite(a[i * ld + j]))
                return ag_error_set(err, AG_ENONFINITE,
                                    "%s: non-finite value at row %zu, column %zu", name, i, j);
    return AG_OK;
}

static int check_factors(const ag_head_factors *f, ag_error *err)
{
    if (!f->wq || !f->wk || f->d == 0 || f->d_h == 0)
        return ag_error_set(err, AG_EINVAL, "weight metrics: W_Q, W_K and their sizes are required");
    if (f->ldq < f->d_h || f->ldk < f->d_h || (f->wv && f->ldv < f->d_h) ||
        (f->wo && (f->d_out == 0 || f->ldo < f->d_out)))
        return ag_error_set(err, AG_EINVAL, "weight metrics: a row stride is smaller than the width");
    int status = check_block(f->wq, f->d, f->d_h, f->ldq, "W_Q", err);
    if (status == AG_OK)
        status = check_block(f->wk, f->d, f->d_h, f->ldk, "W_K", err);
    if (status == AG_OK && f->wv)
        status = check_block(f->wv, f->d, f->d_h, f->ldv, "W_V", err);
    if (status == AG_OK && f->wo)
        status = check_block(f->wo, f->d_h, f->d_out, f->ldo, "W_O", err);
    return status;
}

/* ---- exact scaling of the factors (analysis/scale.c) ---- */

typedef struct {
    ag_head_factors f; /* the blocks, each scaled by 2^-e of its own */
    int e_qk, e_ov;    /* exponents of M_QK and M_OV */
    double *own[4];    /* the scaled copies (NULL: block used as it is) */
} scaled_factors;

/* One block into *p and *ld: itself within 2^±100, else a scaled copy. */
static int scale_block(const double **p, size_t *ld, size_t rows, size_t cols, int *e,
                       double **own)
{
    *e = *p ? ag_scale_exponent(*p, rows, cols, *ld) : 0;
    if (!*e)
        return AG_OK;
    if (!(*own = ag_scaled_copy(*p, rows, cols, *ld, *e)))
        return AG_ENOMEM;
    *p = *own;
    *ld = cols;
    return AG_OK;
}

/* Products of factors near 1e308 (or 1e-308) overflow (underflow) long
 * before their singular values do: run on the scaled blocks, scale back. */
static int scale_factors(const ag_head_factors *f, scaled_factors *s)
{
    memset(s, 0, sizeof *s);
    s->f = *f;
    int e[4];
    int rc = scale_block(&s->f.wq, &s->f.ldq, f->d, f->d_h, &e[0], &s->own[0]);
    if (rc == AG_OK)
        rc = scale_block(&s->f.wk, &s->f.ldk, f->d, f->d_h, &e[1], &s->own[1]);
    if (rc == AG_OK)
        rc = scale_block(&s->f.wv, &s->f.ldv, f->d, f->d_h, &e[2], &s->own[2]);
    if (rc == AG_OK)
        rc = scale_block(&s->f.wo, &s->f.ldo, f->d_h, f->d_out, &e[3], &s->own[3]);
    s->e_qk = e[0] + e[1];
    s->e_ov = rc == AG_OK ? e[2] + e[3] : 0;
    return rc;
}

static void scaled_factors_free(scaled_factors *s)
{
    for (int k = 0; k < 4; k++)
        free(s->own[k]);
}

int ag_weight_metrics(const ag_head_factors *f, const ag_metric_set *sel,
                      ag_record *rec, ag_error *err)
{
    int status = check_factors(f, err);
    if (status != AG_OK)
        return status;
    scaled_factors sf;
    if (scale_factors(f, &sf) != AG_OK) {
        scaled_factors_free(&sf);
        return ag_error_set(err, AG_ENOMEM, "weight metrics (d %zu, d_h %zu): out of memory", f->d, f->d_h);
    }
    rec->rows = rec->cols = f->d;
    for (int k = 0; k < AG_M_COUNT; k++)
        if (!sel->on[k])
            rec->kind[k] = AG_V_ABSENT;
    int want_qk = 0, want_ov = 0;
    for (int k = AG_M_QK_SIGMA_MAX; k <= AG_M_QK_SYMMETRY_SCORE; k++)
        want_qk |= sel->on[k];
    for (int k = AG_M_OV_SIGMA_MAX; k <= AG_M_OV_COPYING_SCORE; k++)
        want_ov |= sel->on[k];
    if (want_qk)
        status = qk_keys(&sf.f, sf.e_qk, sel, rec);
    if (status == AG_OK && want_ov)
        status = ov_keys(&sf.f, sf.e_ov, sel, rec);
    scaled_factors_free(&sf);
    if (status != AG_OK)
        return ag_error_set(err, status, "weight metrics (d %zu, d_h %zu): %s", f->d, f->d_h,
                            status == AG_ELAPACK ? "a LAPACK routine failed" : ag_strerror(status));
    return AG_OK;
}
