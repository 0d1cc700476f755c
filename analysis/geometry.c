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
#include <string.h>

#include "analysis.h"

#define ON(m) (sel->on[m])

/* One pass over the rows of X: ss[i] = Σ_j x_ij² (in ag_sumsq's order)
 * and, when diff is not NULL, diff[j] = Σ_i (x_ij − x_0j), the centring's
 * column sums, each in the order of the rows. */
static void row_visit(const double *X, size_t i, size_t n, double *ss, double *diff)
{
    const double *x = X + i * n;
    ss[i] = ag_sumsq(x, n);
    for (size_t j = 0; diff && j < n; j++) /* x is in cache now */
        diff[j] += x[j] - X[j];
}

static void row_pass(const double *X, size_t m, size_t n, double *ss, double *diff)
{
    if (diff)
        memset(diff, 0, n * sizeof *diff);
    for (size_t i = 0; i < m; i++)
        row_visit(X, i, n, ss, diff);
}

/* ‖x‖ = 2^k·√s with 2^-k = p[0]·p[1], from s2 = Σ x_j² (row_pass): when s2
 * lies in [2^-800, 2^800], p = 1 and s = s2 (no square overflowed, and
 * those that underflowed are below 2^-200 of the sum, far under its last
 * place). Otherwise p brings max|x| into [0.5, 1) (ag_pow2_factors),
 * exactly, and s is summed again from x·p. s = 0 for x = 0. */
static double norm_parts(const double *x, size_t n, double s2, double p[2])
{
    p[0] = p[1] = 1;
    if (s2 >= 0x1p-800 && s2 <= 0x1p800)
        return s2;
    double amax = ag_max_abs(x, n);
    if (amax == 0)
        return 0;
    ag_pow2_factors(amax, p);
    return ag_scaled_sumsq(x, n, p);
}

/* Row x's unit vector u = (x·p[1])·(p[0]/√s) added to sum (norm_parts; x·p[1]
 * is exact and p[0]/√s finite: p[1] ≠ 1 only for rows below 2^-1000,
 * p[0] ≤ 2^1000, and s ≥ 2^-800 or ≥ 0.25). Returns ‖u‖², summed from the
 * same u. */
static double add_unit_row(const double *x, size_t n, double s2, double *sum)
{
    double p[2], root = sqrt(norm_parts(x, n, s2, p));
    if (root == 0)
        return 0;
    double f[2] = {p[1], p[0] / root}; /* u_j = x_j·f[0]·f[1] */
    for (size_t j = 0; j < n; j++)
        sum[j] += x[j] * f[0] * f[1];
    return ag_scaled_sumsq(x, n, f); /* x is in cache: the same u, squared */
}

/* Mean of cos(x_i, x_j) over ordered pairs i ≠ j of non-zero rows:
 * with u_i = x_i/‖x_i‖, Σ_{i≠j} u_iᵀu_j = ‖Σ_i u_i‖² − Σ_i ‖u_i‖², O(mn).
 * Each row is brought next to 1 by a power of two (exact) when its squares
 * could overflow or underflow (norm_parts): right for rows of any
 * magnitude. Rows with disjoint supports give exactly 0 (both sums add the
 * same squares in the same order). Fills ss and diff as row_pass does, in
 * the same pass (diff may be NULL); sum: n doubles of scratch. Returns 0
 * when fewer than two rows are non-zero. */
static int mean_cosine(const double *X, size_t m, size_t n, double *ss, double *diff,
                       double *sum, double *out)
{
    memset(sum, 0, n * sizeof *sum);
    if (diff)
        memset(diff, 0, n * sizeof *diff);
    size_t k = 0;
    double self = 0;
    for (size_t i = 0; i < m; i++) {
        row_visit(X, i, n, ss, diff); /* row_pass fused: x stays in L1 */
        double u2 = add_unit_row(X + i * n, n, ss[i], sum);
        self += u2;
        k += u2 > 0;
    }
    double total = 0;
    for (size_t j = 0; j < n; j++)
        total += sum[j] * sum[j];
    if (k < 2)
        return 0;
    *out = (total - self) / ((double)k * (double)(k - 1));
    return 1;
}

/* Xc = X − 1x̄ᵀ from diff (row_pass) turned into the mean in place; returns
 * ‖Xc‖_F², each row's squares summed as it is written. The mean is taken
 * as x_0 + mean(x_i − x_0): rows that are all identical then centre to
 * exactly 0 (plain summation can leave rounding residue, which would turn
 * "undefined" into noise). */
static double centre_rows(const double *X, size_t m, size_t n, double *mean, double *Xc)
{
    double sc = 0;
    for (size_t j = 0; j < n; j++)
        mean[j] = X[j] + mean[j] / (double)m;
    for (size_t i = 0; i < m; i++) {
        const double *x = X + i * n;
        double *c = Xc + i * n, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        size_t j = 0;
        for (; j + 4 <= n; j += 4) {
            c[j] = x[j] - mean[j];
            c[j + 1] = x[j + 1] - mean[j + 1];
            c[j + 2] = x[j + 2] - mean[j + 2];
            c[j + 3] = x[j + 3] - mean[j + 3];
            s0 += c[j] * c[j];
            s1 += c[j + 1] * c[j + 1];
            s2 += c[j + 2] * c[j + 2];
            s3 += c[j + 3] * c[j + 3];
        }
        for (; j < n; j++) {
            c[j] = x[j] - mean[j];
            s0 += c[j] * c[j];
        }
        sc += (s0 + s1) + (s2 + s3);
    }
    return sc;
}

/* x ← x·p[0]·p[1] (exact: powers of two) and Σ of the new x², in four
 * partial sums as ag_scaled_sumsq. */
static double scale_sumsq(double *x, size_t count, const double p[2])
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, p0 = p[0], p1 = p[1];
    size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        double y0 = x[j] * p0 * p1, y1 = x[j + 1] * p0 * p1, y2 = x[j + 2] * p0 * p1,
               y3 = x[j + 3] * p0 * p1;
        x[j] = y0;
        x[j + 1] = y1;
        x[j + 2] = y2;
        x[j + 3] = y3;
        s0 += y0 * y0;
        s1 += y1 * y1;
        s2 += y2 * y2;
        s3 += y3 * y3;
    }
    for (; j < count; j++) {
        x[j] = x[j] * p0 * p1;
        s0 += x[j] * x[j];
    }
    return (s0 + s1) + (s2 + s3);
}

/* pc1_share and res_ratio from S = 2^-e·X (analysis/scale.c), with ss
 * (Σx² of S's rows) and diff (the centring's column sums) from row_pass:
 * the centring's differences and sums cannot overflow, subnormal entries
 * become normal, and both keys are ratios, unchanged by the scaling. S lies
 * within 2^±100, so σ₁² and ‖Xc‖_F² cannot overflow; a centred matrix with
 * ‖Xc‖_F² below 2^-800 is brought next to 1 by a power of two (exact), so
 * that they cannot underflow either. σ₁² comes from ag_sigma1_squared
 * (analysis/lanczos.c), not from an SVD. */
static int centred_keys(const double *S, size_t m, size_t n, const ag_metric_set *sel,
                        const double *ss, double *diff, ag_matrix_work *w, ag_record *rec)
{
    double *Xc = ag_work_doubles(w, AG_WK_COPY, m * n), ss_x = 0;
    if (!Xc)
        return AG_ENOMEM;
    for (size_t i = 0; i < m; i++)
        ss_x += ss[i];
    double ss_c = centre_rows(S, m, n, diff, Xc);
    int kc = 0;
    double amax_c = ss_c < 0x1p-800 ? ag_max_abs(Xc, m * n) : 0;
    if (amax_c > 0) { /* Xc·2^-kc: its squares underflow */
        double pc[2];
        frexp(amax_c, &kc);
        ag_pow2_factors(amax_c, pc);
        ss_c = scale_sumsq(Xc, m * n, pc);
    }
    if (ON(AG_M_RES_RATIO))
        ag_record_set(rec, AG_M_RES_RATIO, ss_x == 0 ? AG_V_NULL : AG_V_NUMBER,
                      ss_x == 0 ? 0 : ldexp(sqrt(ss_c) / sqrt(ss_x), kc));
    if (!ON(AG_M_PC1_SHARE))
        return AG_OK;
    if (ss_c == 0) {
        ag_record_set(rec, AG_M_PC1_SHARE, AG_V_NULL, 0);
        return AG_OK;
    }
    double theta = 0;
    int steps, status = ag_sigma1_squared(Xc, m, n, w, &theta, &steps);
    if (status == AG_OK)
        ag_record_set(rec, AG_M_PC1_SHARE, AG_V_NUMBER, theta / ss_c);
    return status;
}

/* One pass over X's rows serves mean_cosine's norms and, when S is X (no
 * scaling), ‖X‖_F² and the centring's column sums too. */
int ag_geometry_family(const double *X, const double *S, size_t m, size_t n,
                       const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec)
{
    int centred = ON(AG_M_PC1_SHARE) || ON(AG_M_RES_RATIO), shared = centred && S == X;
    double *v[3];
    if (ag_work_vectors(w, AG_WK_VECTORS, m > n ? m : n, 3, v) != AG_OK)
        return AG_ENOMEM;
    double *ss = v[0], *diff = v[1], *sum = v[2];
    if (ON(AG_M_MEAN_COSINE)) {
        double mc = 0;
        int ok = mean_cosine(X, m, n, ss, shared ? diff : NULL, sum, &mc);
        ag_record_set(rec, AG_M_MEAN_COSINE, ok ? AG_V_NUMBER : AG_V_NULL, mc);
    }
    if (!centred)
        return AG_OK;
    if (!ON(AG_M_MEAN_COSINE) || !shared)
        row_pass(S, m, n, ss, diff);
    return centred_keys(S, m, n, sel, ss, diff, w, rec);
}
