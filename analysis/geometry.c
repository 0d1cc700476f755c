/* geometry.c — family C: the geometry of the rows of a matrix as vectors.
 *
 * mean_cosine: anisotropy as the average cosine between distinct vectors
 *   (Ethayarajh 2019, "How contextual are contextualized word
 *   representations?", §3.2).
 * pc1_share: the fraction of the variance along the first principal
 *   component of the centred rows.
 * res_ratio: ‖X − 1x̄ᵀ‖_F / ‖X‖_F, the Frobenius form of the residual used to
 *   show rank collapse in pure attention (Dong, Cordonnier & Loukas 2021, §2).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define ON(m) (sel->on[m])

/* ‖x‖ as amax·√s with amax = max|x_j| and s = Σ(x_j/amax)² (in [1, n]);
 * the norm itself is amax·√s, which overflows for entries near 1e308, so
 * callers divide by amax first, then by √s. Returns amax (0: x = 0). */
static double norm_parts(const double *x, size_t n, double *root_s)
{
    double amax = 0;
    for (size_t j = 0; j < n; j++)
        amax = fmax(amax, fabs(x[j]));
    double s = 0;
    for (size_t j = 0; amax > 0 && j < n; j++)
        s += (x[j] / amax) * (x[j] / amax);
    *root_s = sqrt(s);
    return amax;
}

/* ‖x‖ of a vector whose norm cannot overflow (entries within 2^±100, or
 * scaled there). */
static double scaled_norm(const double *x, size_t n)
{
    double r, amax = norm_parts(x, n, &r);
    return amax * r;
}

/* Mean of cos(x_i, x_j) over ordered pairs i ≠ j of non-zero rows:
 * with u_i = x_i/‖x_i‖, Σ_{i≠j} u_iᵀu_j = ‖Σ_i u_i‖² − Σ_i ‖u_i‖², O(mn).
 * u_i = (x_i/amax_i)/√s_i: right for rows of any magnitude. */
static int mean_cosine(const double *X, size_t m, size_t n, double *out)
{
    double *sum = calloc(n, sizeof *sum);
    if (!sum)
        return -1;
    size_t k = 0;
    double self = 0;
    for (size_t i = 0; i < m; i++) {
        const double *x = X + i * n;
        double root, amax = norm_parts(x, n, &root);
        if (amax == 0)
            continue;
        double u2 = 0;
        for (size_t j = 0; j < n; j++) {
            double u = x[j] / amax / root;
            sum[j] += u;
            u2 += u * u;
        }
        self += u2;
        k++;
    }
    double total = 0;
    for (size_t j = 0; j < n; j++)
        total += sum[j] * sum[j];
    free(sum);
    if (k < 2)
        return 0;
    *out = (total - self) / ((double)k * (double)(k - 1));
    return 1;
}

/* X − 1x̄ᵀ into Xc. The mean is taken as x_0 + mean(x_i − x_0): rows that are
 * all identical then centre to exactly 0 (plain summation can leave rounding
 * residue, which would turn "undefined" into noise). */
static void centre_rows(const double *X, size_t m, size_t n, double *Xc)
{
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < m; i++)
            s += X[i * n + j] - X[j];
        double mean = X[j] + s / (double)m;
        for (size_t i = 0; i < m; i++)
            Xc[i * n + j] = X[i * n + j] - mean;
    }
}

int ag_geometry_family(const double *X, size_t m, size_t n,
                       const ag_metric_set *sel, ag_record *rec)
{
    if (ON(AG_M_MEAN_COSINE)) {
        double mc = 0;
        int ok = mean_cosine(X, m, n, &mc);
        if (ok < 0)
            return AG_ENOMEM;
        ag_record_set(rec, AG_M_MEAN_COSINE, ok ? AG_V_NUMBER : AG_V_NULL, mc);
    }
    if (!ON(AG_M_PC1_SHARE) && !ON(AG_M_RES_RATIO))
        return AG_OK;

    /* On S = 2^-e·X (analysis/scale.c): the centring's differences and sums
     * cannot overflow, subnormal entries become normal, and both keys are
     * ratios, unchanged by the scaling. */
    int e = ag_scale_exponent(X, m, n, n);
    double *S = e ? ag_scaled_copy(X, m, n, n, e) : NULL, *Xc = malloc(m * n * sizeof *Xc);
    if ((e && !S) || !Xc) {
        free(S);
        free(Xc);
        return AG_ENOMEM;
    }
    const double *src = S ? S : X;
    centre_rows(src, m, n, Xc);
    double norm_c = scaled_norm(Xc, m * n), norm_x = scaled_norm(src, m * n);
    free(S);
    int status = AG_OK;
    if (ON(AG_M_PC1_SHARE)) {
        if (norm_c == 0) {
            ag_record_set(rec, AG_M_PC1_SHARE, AG_V_NULL, 0);
        } else {
            size_t q = m < n ? m : n;
            double *sigma = malloc(q * sizeof *sigma);
            status = sigma ? ag_svd_values(Xc, m, n, sigma) : AG_ENOMEM;
            if (status == AG_OK) {
                double r = sigma[0] / norm_c;
                ag_record_set(rec, AG_M_PC1_SHARE, AG_V_NUMBER, r * r);
            }
            free(sigma);
        }
    }
    if (status == AG_OK && ON(AG_M_RES_RATIO))
        ag_record_set(rec, AG_M_RES_RATIO, norm_x == 0 ? AG_V_NULL : AG_V_NUMBER,
                      norm_x == 0 ? 0 : norm_c / norm_x);
    free(Xc);
    return status;
}
