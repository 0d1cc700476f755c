/* lens.c — family K (docs/metrics.md, "K. Lens"): what a head's own
 * pre-softmax scores say about the softmax that follows them (issue 28,
 * "Softmax as a lens").
 *
 * Row keys, over each query's allowed (finite) scores s:
 *   score_std          the population standard deviation of s: the logit
 *                      spread that sets how sharp softmax(s) is;
 *   sparsemax_support  the fraction of allowed keys sparsemax keeps
 *                      (Martins & Astudillo 2016, "From softmax to sparsemax",
 *                      §2.2, Algorithm 1), entmax_support the same for
 *                      1.5-entmax (Peters, Niculae & Martins 2019, "Sparse
 *                      sequence-to-sequence models", §3.2);
 *   sparsemax_js       the Jensen–Shannon distance √JS(p, q) between
 *                      p = softmax(s) and q = sparsemax(s), JS = ½KL(p‖m) +
 *                      ½KL(q‖m), m = (p + q)/2, natural log (Lin 1991,
 *                      "Divergence measures based on the Shannon entropy",
 *                      §4; scipy.spatial.distance.jensenshannon's
 *                      convention), in [0, √ln 2].
 * Form keys, of the unmasked bilinear form S° = c·QKᵀ (n × n, rank ≤ d_h:
 * Bhojanapalli et al. 2020, "Low-Rank Bottleneck in Multi-head Attention
 * Models", §3): one thin QR [Q K] = U[R₁ R₂] (U orthonormal columns) gives
 * S° = c·U(R₁R₂ᵀ)Uᵀ, so S°'s non-zero singular values are c times those of
 * the core C = R₁R₂ᵀ (at most 2d_h × 2d_h), ‖S°‖_F = c‖C‖_F and
 * ‖S° − S°ᵀ‖_F = c‖C − Cᵀ‖_F (Golub & Van Loan, Matrix Computations, §5.2):
 * exact, O(n·d_h²) instead of the O(n³) SVD of S°.
 */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "analysis.h"

#define ON(m) (sel->on[m])

/* ---- row keys ------------------------------------------------------------ */

typedef struct {
    double std, sparse, entmax, js; /* sums over the counted rows */
    size_t rows;
} row_sums;

/* A key counts as kept when its score is more than AG_SUPPORT_TIE above
 * the threshold (normalizers.h: the rule ag_normalizer_support applies to
 * probabilities). */

/* Values of c[0..nc-1] that exceed tau by more than tie. */
static size_t kept_above(const double *c, size_t nc, double tau, double tie)
{
    size_t cnt = 0;
    for (size_t j = 0; j < nc; j++)
        cnt += c[j] - tau > tie;
    return cnt;
}

/* The thresholds, without sorting: a pass over the row's n scores costs
 * less than the O(k log k) sort of ag_sparsemax_row / ag_entmax15_row (two
 * sorts a row were most of the family's time at n = 512), and both
 * thresholds are the exact ones (test_lens.c checks them against those
 * functions' supports). c is scratch for n values. */

/* sparsemax's τ of z − m (z a row's k allowed scores, m their maximum) by
 * Michelot's algorithm ("A finite algorithm for finding the projection of a
 * point onto the canonical simplex of Rⁿ", JOTA 1986): from a set V
 * holding the support, τ_V = (Σ_V (z − m) − 1)/|V| ≤ τ, so the keys above
 * τ_V still hold it; V stops shrinking exactly at the support. V starts as
 * {z − m > −1}: τ ≥ −1, since the top key's p = −τ ≤ 1. Each pass keeps
 * only V's members in c (in order: the sums are those over V), so the
 * passes shrink with V. On return c[0..*kept-1] holds the support's z − m,
 * *kept = |support|. */
static double sparsemax_tau(const double *z, size_t k, double m, double *c, size_t *kept)
{
    size_t nc = 0, prev = 0;
    for (size_t j = 0; j < k; j++) { /* branch-free compaction */
        c[nc] = z[j] - m;
        nc += c[nc] > -1;
    }
    double tau = -1; /* below every candidate: the first V is all of them */
    for (;;) {
        size_t cnt = 0;
        double sum = 0;
        for (size_t j = 0; j < nc; j++) { /* V ∩ {c > τ}, compacted */
            double x = c[j], in = x > tau;
            c[cnt] = x;
            cnt += (size_t)in;
            sum += in * x;
        }
        if (cnt == prev) { /* V = {c > τ_V}: the support */
            *kept = cnt;
            return tau;
        }
        tau = (sum - 1) / (double)cnt;
        prev = nc = cnt;
    }
}

/* 1.5-entmax's τ of x = (z − m)/2: the root of g(τ) = Σ [x − τ]₊² = 1,
 * convex and decreasing, from a τ₀ ≤ τ (g(τ₀) ≥ 1; the keys x ≤ τ₀ are out
 * of the support): −1 (the top key's p = τ² ≤ 1), or sparsemax's bound
 * below. With V = {x > τ}, τ_V = M_V − √((1 − S_V)/|V|) (Peters et
 * al. 2019, §3.2: the root when V is the support) is it exactly when
 * min_V x > τ_V; otherwise a Newton step from the left, which stays left of
 * the root (convexity) and passes the breakpoints. Sums are of x − τ ∈
 * (0, 1]: no cancellation. 0 when the steps stall (the caller then sorts:
 * ag_entmax15_row); else 1, *kept = |V|. */
static int entmax15_tau(const double *z, size_t k, double m, double tau0, double *c,
                        double *out, size_t *kept)
{
    double tau = fmax(-1, tau0);
    size_t nc = 0;
    for (size_t j = 0; j < k; j++) {
        c[nc] = (z[j] - m) / 2;
        nc += c[nc] > tau;
    }
    for (int it = 0; it < 200; it++) {
        size_t cnt = 0;
        double s1 = 0, s2 = 0, lo = 2; /* min_V (x − τ) */
        for (size_t j = 0; j < nc; j++) { /* V = {x > τ}, compacted: τ only grows */
            double x = c[j], y = x - tau, in = y > 0, yin = in * y;
            c[cnt] = x;
            cnt += (size_t)in;
            s1 += yin;
            s2 += yin * y;
            lo = y > 0 && y < lo ? y : lo;
        }
        nc = cnt;
        lo += tau;
        double ss = fmax(0, s2 - s1 * s1 / (double)cnt); /* Σ (x − M_V)² */
        double tv = tau + s1 / (double)cnt - sqrt(fmax(0, (1 - ss) / (double)cnt));
        if (tv < lo) {
            *out = tv;
            *kept = cnt;
            return 1;
        }
        double next = tau + (s2 - 1) / (2 * s1);
        if (!(next > tau))
            return 0;
        tau = next;
    }
    return 0;
}

/* √JS(p, q) in nats (0·ln 0 = 0) of p = softmax(z) and sparsemax's q_j =
 * [z_j − m − τ]₊. Where q_j = 0 (most keys) p_j's term is p_j ln 2: one
 * pass of exp (into e) gives the normaliser Σ e_j (summed in order, as
 * ag_softmax_row, so each p_j is its bits) and Σ e_j over q_j = 0; logs
 * over the support only. */
static double js_distance(const double *z, size_t k, double m, double tau, double *e)
{
    double norm = 0, out = 0, js = 0;
    for (size_t j = 0; j < k; j++) {
        norm += e[j] = exp(z[j] - m);
        out += z[j] - m - tau > 0 ? 0 : e[j];
    }
    for (size_t j = 0; j < k; j++) {
        double q = z[j] - m - tau;
        if (q > 0) {
            double p = e[j] / norm, sum = p + q;
            js += q * log(2 * q / sum) + (p > 0 ? p * log(2 * p / sum) : 0);
        }
    }
    return sqrt(fmax((js + out / norm * M_LN2) / 2, 0));
}

/* The population standard deviation of z[0..k-1]. */
static double population_std(const double *z, size_t k)
{
    double mean = 0, ss = 0;
    for (size_t j = 0; j < k; j++)
        mean += z[j];
    mean /= (double)k;
    for (size_t j = 0; j < k; j++)
        ss += (z[j] - mean) * (z[j] - mean);
    return sqrt(ss / (double)k);
}

/* A lower bound of 1.5-entmax's τ from sparsemax's support (a keys) and
 * threshold τ_s on z − m: in x = (z − m)/2 units Σ_support (x − τ_s/2) =
 * 1/2, so for τ ≤ τ_s/2, by Cauchy–Schwarz, g(τ) ≥ (1/2 + a(τ_s/2 − τ))²/a,
 * which is 1 at τ_s/2 − (√a − 1/2)/a; 1e-12 lower absorbs its rounding (a
 * lower start only costs steps). */
static double entmax15_floor(double tau_s, size_t a)
{
    double sa = sqrt((double)a);
    return tau_s / 2 - (sa - 0.5) / (double)a - 1e-12;
}

/* 1.5-entmax's kept keys of z, from the lower bound tau0 of its τ, sorting
 * (ag_entmax15_row) only when the sort-free threshold stalls. */
static int entmax_kept(const double *z, size_t k, double m, double tau0, double *p,
                       size_t *count, ag_error *err)
{
    double tau;
    if (entmax15_tau(z, k, m, tau0, p, &tau, count)) { /* p[0..*count-1]: V's x */
        *count = kept_above(p, *count, tau, AG_SUPPORT_TIE / 2); /* in x = s/2 units */
        return AG_OK;
    }
    int rc = ag_entmax15_row(z, k, p, err);
    *count = rc == AG_OK ? ag_normalizer_support(AG_NORMALIZER_ENTMAX15, 1.5, p, k) : 0;
    return rc;
}

/* Row s's terms into t; z, p, c scratch (n each): z the allowed scores in
 * order (masked keys add nothing to any key, and a causal row's half of
 * them would be half the work). A row with no allowed key adds nothing. */
static int row_terms(const double *s, size_t n, const ag_metric_set *sel, double *z, double *p,
                     double *c, row_sums *t, ag_error *err)
{
    size_t k = 0;
    double m = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        if (isnan(s[j]) || s[j] == INFINITY)
            return ag_error_set(err, AG_ENONFINITE, "score %zu is %g", j, s[j]);
        if (s[j] != -INFINITY)
            m = fmax(m, z[k++] = s[j]);
    }
    if (k == 0)
        return AG_OK;
    int rc = AG_OK;
    if (ON(AG_M_SCORE_STD))
        t->std += population_std(z, k);
    size_t ks = 0, ke = 0;
    double tau = 0; /* sparsemax's, also a start for 1.5-entmax's */
    if (ON(AG_M_SPARSEMAX_SUPPORT) || ON(AG_M_SPARSEMAX_JS) || ON(AG_M_ENTMAX_SUPPORT))
        tau = sparsemax_tau(z, k, m, c, &ks); /* ks: Michelot's support, for the floor */
    if (ON(AG_M_SPARSEMAX_SUPPORT))
        t->sparse += (double)kept_above(c, ks, tau, AG_SUPPORT_TIE) / (double)k; /* c: the support */
    if (ON(AG_M_SPARSEMAX_JS))
        t->js += js_distance(z, k, m, tau, p);
    if (rc == AG_OK && ON(AG_M_ENTMAX_SUPPORT) &&
        (rc = entmax_kept(z, k, m, entmax15_floor(tau, ks), p, &ke, err)) == AG_OK)
        t->entmax += (double)ke / (double)k;
    t->rows += rc == AG_OK;
    return rc;
}

static void put_mean(ag_record *rec, ag_metric key, double sum, size_t rows)
{
    ag_record_set(rec, key, rows ? AG_V_NUMBER : AG_V_NULL, rows ? sum / (double)rows : 0);
}

/* The row keys of the m rows of S, n keys each. */
static int row_keys(const double *S, size_t m, size_t n, const ag_metric_set *sel,
                    ag_record *rec, ag_error *err)
{
    double *z = malloc(3 * n * sizeof *z);
    if (!z)
        return ag_error_set(err, AG_ENOMEM, "lens: out of memory for %zu scores", n);
    row_sums t = {0};
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < m; i++)
        if ((rc = row_terms(S + i * n, n, sel, z, z + n, z + 2 * n, &t, err)) != AG_OK) {
            ag_error inner = *err;
            ag_error_set(err, rc, "lens: row %zu: %s", i, inner.message);
        }
    free(z);
    if (rc != AG_OK)
        return rc;
    const ag_metric keys[] = {AG_M_SCORE_STD, AG_M_SPARSEMAX_SUPPORT, AG_M_ENTMAX_SUPPORT,
                              AG_M_SPARSEMAX_JS};
    const double sums[] = {t.std, t.sparse, t.entmax, t.js};
    for (size_t k = 0; k < 4; k++)
        if (ON(keys[k]))
            put_mean(rec, keys[k], sums[k], t.rows);
    return AG_OK;
}

/* ---- the bilinear form --------------------------------------------------- */

/* ‖M‖_F of the (r, r) M, scaled by its largest entry so that it cannot
 * overflow; *asym ‖M − Mᵀ‖_F the same way. */
static double frob_pair(const double *M, size_t r, double *asym)
{
    double amax = ag_max_abs(M, r * r), s2 = 0, a2 = 0;
    for (size_t i = 0; amax > 0 && i < r; i++)
        for (size_t j = 0; j < r; j++) {
            double x = M[i * r + j] / amax, y = M[j * r + i] / amax;
            s2 += x * x;
            a2 += (x - y) * (x - y);
        }
    *asym = amax * sqrt(a2);
    return amax * sqrt(s2);
}

/* The core C = R₁R₂ᵀ ((r, r), *core the caller's) of [Q K] = U[R₁ R₂]:
 * [Q K] packed column-major once, as dgeqrf takes it. */
static int form_core(const double *q, const double *k, size_t n, size_t dh, double **core,
                     size_t *r_out)
{
    double *qk = malloc(n * 2 * dh * sizeof *qk), *R = NULL;
    size_t r = 0;
    if (!qk)
        return AG_ENOMEM;
    for (size_t j = 0; j < dh; j++)
        for (size_t i = 0; i < n; i++) {
            qk[i + j * n] = q[i * dh + j];
            qk[i + (dh + j) * n] = k[i * dh + j];
        }
    int rc = ag_thin_r_cm(qk, n, 2 * dh, &R, &r);
    free(qk);
    if (rc == AG_OK && !(*core = malloc(r * r * sizeof **core)))
        rc = AG_ENOMEM;
    if (rc == AG_OK) /* C (r, r) = R₁ (r, dh) · R₂ᵀ, R (r, 2dh) row-major */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)r, (int)r, (int)dh, 1.0, R,
                    (int)(2 * dh), R + dh, (int)(2 * dh), 0.0, *core, (int)r);
    free(R);
    *r_out = r;
    return rc;
}

/* effective_rank(A) of the m×n A: rec's family-A key when it holds a
 * number, else from A's singular values; 0 for a zero A. */
static int attention_rank(const double *A, size_t m, size_t n, const ag_record *rec,
                          double *out)
{
    if (ag_record_value(rec, AG_M_EFFECTIVE_RANK, out) == AG_V_NUMBER)
        return AG_OK;
    size_t q = m < n ? m : n;
    double *sigma = malloc(q * sizeof *sigma);
    if (!sigma)
        return AG_ENOMEM;
    int rc = ag_svd_values(A, m, n, sigma);
    *out = rc == AG_OK && sigma[0] > 0 ? ag_sigma_effective_rank(sigma, q) : 0;
    free(sigma);
    return rc;
}

/* The m×n form S° and the measured A (m×n): its r singular values sigma
 * (descending), ‖S°‖_F and, for a square S°, ‖S° − S°ᵀ‖_F (asym; NAN: not
 * square, score_asymmetry null). */
typedef struct {
    const double *sigma;
    size_t r, m, n;
    double frob, asym;
} form_sv;

static int form_keys_of_sigma(const form_sv *f, const double *A, const ag_metric_set *sel,
                              ag_record *rec)
{
    double frob = f->frob, er = frob > 0 ? ag_sigma_effective_rank(f->sigma, f->r) : 0, era = 0;
    int rc = AG_OK;
    if (ON(AG_M_SCORE_EFFECTIVE_RANK))
        ag_record_set(rec, AG_M_SCORE_EFFECTIVE_RANK, frob > 0 ? AG_V_NUMBER : AG_V_NULL, er);
    if (ON(AG_M_SCORE_NUMERICAL_RANK))
        ag_record_set(rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER,
                      frob > 0 ? (double)ag_sigma_numerical_rank(f->sigma, f->r, f->m, f->n) : 0);
    if (ON(AG_M_SCORE_ASYMMETRY)) /* only a square form has a transpose to compare */
        ag_record_set(rec, AG_M_SCORE_ASYMMETRY,
                      frob > 0 && !isnan(f->asym) ? AG_V_NUMBER : AG_V_NULL, f->asym / 2 / frob);
    if (ON(AG_M_RANK_LIFT) && frob > 0)
        rc = attention_rank(A, f->m, f->n, rec, &era);
    if (rc == AG_OK && ON(AG_M_RANK_LIFT))
        ag_record_set(rec, AG_M_RANK_LIFT, frob > 0 && era > 0 ? AG_V_NUMBER : AG_V_NULL,
                      era / er);
    return rc;
}

/* The keys of the square S° from its core C (r, r) and the measured A. */
static int form_keys_of_core(double *C, size_t r, size_t n, const double *A,
                             const ag_metric_set *sel, ag_record *rec)
{
    form_sv f = {.r = r, .m = n, .n = n};
    f.frob = frob_pair(C, r, &f.asym);
    double *sigma = malloc(r * sizeof *sigma);
    if (!sigma)
        return AG_ENOMEM;
    int rc = f.frob > 0 ? ag_svd_values(C, r, r, sigma) : AG_OK;
    f.sigma = sigma;
    if (rc == AG_OK)
        rc = form_keys_of_sigma(&f, A, sel, rec);
    free(sigma);
    return rc;
}

/* The keys of the m×n S° = c·QKᵀ, Q (m, dh) and K (n, dh) with m ≠ n
 * (cross-attention): its singular values are those of the core R_QR_Kᵀ of
 * two thin QRs (ag_product_sigma: the [Q K] of the square case needs one
 * row count); no asymmetry. */
static int form_keys_rect(const double *q, const double *k, size_t m, size_t n, size_t dh,
                          const double *A, const ag_metric_set *sel, ag_record *rec)
{
    form_sv f = {.r = dh, .m = m, .n = n, .asym = NAN};
    double *sigma = malloc(dh * sizeof *sigma);
    if (!sigma)
        return AG_ENOMEM;
    int rc = ag_product_sigma(q, m, dh, k, n, dh, dh, sigma, dh, &f.frob);
    f.sigma = sigma;
    if (rc == AG_OK)
        rc = form_keys_of_sigma(&f, A, sel, rec);
    free(sigma);
    return rc;
}

/* The keys of S° = c·QKᵀ from Q (m, dh) and K (n, dh). */
static int form_keys(const double *q, const double *k, size_t m, size_t n, size_t dh,
                     const double *A, const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    double *C = NULL;
    size_t r = 0;
    int rc = AG_OK;
    if (m != n)
        rc = form_keys_rect(q, k, m, n, dh, A, sel, rec);
    else if ((rc = form_core(q, k, n, dh, &C, &r)) == AG_OK)
        rc = form_keys_of_core(C, r, n, A, sel, rec);
    if (rc != AG_OK) /* the linear algebra's status, no message */
        ag_error_set(err, rc, "lens: the bilinear form of %zu x %zu tokens: %s", m, n,
                     ag_strerror(rc));
    free(C);
    return rc;
}

/* ---- the family ---------------------------------------------------------- */

static int row_keys_on(const ag_metric_set *sel)
{
    return ON(AG_M_SCORE_STD) || ON(AG_M_SPARSEMAX_SUPPORT) || ON(AG_M_ENTMAX_SUPPORT) ||
           ON(AG_M_SPARSEMAX_JS);
}

static int form_keys_on(const ag_metric_set *sel)
{
    return ON(AG_M_SCORE_EFFECTIVE_RANK) || ON(AG_M_SCORE_NUMERICAL_RANK) || ON(AG_M_RANK_LIFT) ||
           ON(AG_M_SCORE_ASYMMETRY);
}

int ag_lens_metrics_qk(const double *S, size_t n, const double *q, const double *k, size_t d_h,
                       const double *A, const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    return ag_lens_metrics_qk_rect(S, n, n, q, k, d_h, A, sel, rec, err);
}

/* The first row of the (rows, d_h) x that is not finite, or rows. */
static size_t first_bad_row(const double *x, size_t rows, size_t d_h)
{
    for (size_t i = 0; i < rows * d_h; i++)
        if (!isfinite(x[i]))
            return i / d_h;
    return rows;
}

int ag_lens_metrics_qk_rect(const double *S, size_t m, size_t n, const double *q,
                            const double *k, size_t d_h, const double *A,
                            const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    if (!S || !q || !k || !A || !sel || !rec || !m || !n || !d_h)
        return ag_error_set(err, AG_EINVAL, "lens: missing %s",
                            !S ? "scores" : !q ? "Q" : !k ? "K" : !A ? "attention"
                            : !sel ? "selection" : !rec ? "record" : "tokens or head width");
    size_t bq = form_keys_on(sel) ? first_bad_row(q, m, d_h) : m,
           bk = form_keys_on(sel) ? first_bad_row(k, n, d_h) : n;
    if (bq < m || bk < n)
        return ag_error_set(err, AG_ENONFINITE, "lens: %s row %zu is not finite",
                            bq < m ? "Q" : "K", bq < m ? bq : bk);
    int rc = row_keys_on(sel) ? row_keys(S, m, n, sel, rec, err) : AG_OK;
    if (rc == AG_OK && form_keys_on(sel))
        rc = form_keys(q, k, m, n, d_h, A, sel, rec, err);
    return rc;
}

int ag_lens_metrics(const double *S, const ag_head_input *in, const ag_head_extra *ex,
                    const double *A, const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    if (!S || !in || !A || !sel || !rec)
        return ag_error_set(err, AG_EINVAL, "lens: missing %s",
                            !S ? "scores" : !in ? "head input" : !A ? "attention"
                                                : !sel ? "selection" : "record");
    size_t n = in->n, dh = in->d_h;
    if (!form_keys_on(sel)) /* no Q or K needed */
        return row_keys_on(sel) ? row_keys(S, n, n, sel, rec, err) : AG_OK;
    double *q = malloc(2 * n * dh * sizeof *q), scale;
    if (!q)
        return ag_error_set(err, AG_ENOMEM, "lens: out of memory for Q and K");
    int rc = ag_head_qk(in, ex, q, q + n * dh, &scale, err);
    if (rc == AG_OK)
        rc = ag_lens_metrics_qk(S, n, q, q + n * dh, dh, A, sel, rec, err);
    free(q);
    return rc;
}
