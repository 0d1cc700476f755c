/* normalizers.c — softmax at a temperature, sparsemax, 1.5-entmax, α-entmax
 * and linear attention on one row (attngeom/normalizers.h).
 *
 * sparsemax follows Martins & Astudillo (2016), "From Softmax to
 * Sparsemax", §2.2 Algorithm 1; 1.5-entmax Peters, Niculae & Martins
 * (2019), "Sparse Sequence-to-Sequence Models", §3.2 Algorithm 2; α-entmax
 * the bisection of their §3.1 as the authors' package implements it
 * (github.com/deep-spin/entmax, entmax/root_finding.py entmax_bisect:
 * x = (α − 1)s, τ in [max x − 1, max x − d^{1−α}], halving dm, the lower
 * end kept while f ≥ 0, p / Σp); linear attention Katharopoulos et al.
 * (2020), "Transformers are RNNs", §3.2 eq. 7 with φ(x) = elu(x) + 1 (§3.2.1).
 * tests/ref/check_normalizers.py ports the package's three functions to
 * numpy. Every sort-based row sorts its allowed scores in the output
 * buffer, so nothing is allocated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/normalizers.h"

/* The allowed keys' count and maximum of s (entries other than −inf),
 * checking the row: AG_OK, or AG_EINVAL / AG_ENONFINITE with err set. */
static int row_scan(const char *what, const double *s, size_t n, const void *p, size_t *k,
                    double *max, ag_error *err)
{
    if (!s || !p || n == 0)
        return ag_error_set(err, AG_EINVAL, "%s: empty row or NULL buffer", what);
    *k = 0;
    *max = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        if (isnan(s[j]) || s[j] == INFINITY)
            return ag_error_set(err, AG_ENONFINITE, "%s: score %zu is %g", what, j, s[j]);
        if (s[j] == -INFINITY)
            continue;
        ++*k;
        *max = s[j] > *max ? s[j] : *max;
    }
    if (*k == 0)
        return ag_error_set(err, AG_EINVAL, "%s: every key of the row is masked (-inf)", what);
    return AG_OK;
}

int ag_softmax_row(const double *s, size_t n, double T, double *p, ag_error *err)
{
    size_t k;
    double m;
    if (!(T > 0) || !isfinite(T))
        return ag_error_set(err, AG_EINVAL, "softmax: temperature %g is not a finite number > 0", T);
    int rc = row_scan("softmax", s, n, p, &k, &m, err);
    if (rc != AG_OK)
        return rc;
    /* max-subtracted, summed in order as the attention kernel's softmax_f64:
     * at T = 1 the same operations, so the same bits as the model's row */
    double sum = 0;
    for (size_t j = 0; j < n; j++)
        sum += (p[j] = s[j] == -INFINITY ? 0 : exp(T == 1 ? s[j] - m : (s[j] - m) / T));
    for (size_t j = 0; j < n; j++)
        p[j] /= sum;
    return AG_OK;
}

static int descending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The allowed scores of s, shifted by −m and times c, sorted descending
 * into z[0..k-1]. */
static void sorted_allowed(const double *s, size_t n, double m, double c, double *z)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        if (s[j] != -INFINITY)
            z[k++] = (s[j] - m) * c;
    qsort(z, k, sizeof *z, descending);
}

/* Martins & Astudillo (2016), Algorithm 1, on z = s − max s. */
int ag_sparsemax_row(const double *s, size_t n, double *p, ag_error *err)
{
    size_t k;
    double m;
    int rc = row_scan("sparsemax", s, n, p, &k, &m, err);
    if (rc != AG_OK)
        return rc;
    sorted_allowed(s, n, m, 1, p);
    /* the support size is the count of ρ with 1 + ρ·z_(ρ) > Σ_{j≤ρ} z_(j)
     * (a prefix in exact arithmetic; counted as the authors' package does) */
    double cum = 0;
    size_t support = 0;
    for (size_t r = 1; r <= k; r++) {
        cum += p[r - 1];
        support += 1 + (double)r * p[r - 1] > cum;
    }
    cum = 0;
    for (size_t r = 0; r < support; r++)
        cum += p[r];
    double tau = (cum - 1) / (double)support;
    for (size_t j = 0; j < n; j++)
        p[j] = s[j] == -INFINITY ? 0 : fmax(s[j] - m - tau, 0);
    return AG_OK;
}

/* τ_ρ of the sorted z for ρ = 1..k in turn (Peters et al. 2019, Algorithm
 * 2): M_ρ the mean of the top ρ, S_ρ their squared deviations (Welford's
 * update), τ_ρ = M_ρ − √max(0, (1 − S_ρ)/ρ). Returns the count of ρ with
 * τ_ρ ≤ z_(ρ) when stop is 0, else τ_stop. */
static double tsallis_tau(const double *z, size_t k, size_t stop, size_t *count)
{
    double mean = 0, ss = 0, t = 0;
    *count = 0;
    for (size_t r = 1; r <= k; r++) {
        double prev = mean;
        mean += (z[r - 1] - mean) / (double)r;
        ss += (z[r - 1] - prev) * (z[r - 1] - mean);
        t = mean - sqrt(fmax(0, (1 - ss) / (double)r));
        *count += t <= z[r - 1];
        if (r == stop)
            break;
    }
    return t;
}

/* Peters et al. (2019), Algorithm 2, on z = (s − max s)/2: τ = τ_support,
 * support the count of ρ with τ_ρ ≤ z_(ρ) (a prefix in exact arithmetic;
 * counted as the authors' package does). */
int ag_entmax15_row(const double *s, size_t n, double *p, ag_error *err)
{
    size_t k, support, unused;
    double m;
    int rc = row_scan("entmax15", s, n, p, &k, &m, err);
    if (rc != AG_OK)
        return rc;
    sorted_allowed(s, n, m, 0.5, p);
    tsallis_tau(p, k, 0, &support);
    double tau = tsallis_tau(p, k, support, &unused);
    for (size_t j = 0; j < n; j++) {
        double y = s[j] == -INFINITY ? 0 : fmax((s[j] - m) / 2 - tau, 0);
        p[j] = y * y;
    }
    return AG_OK;
}

/* Σ_j max(x_j − τ, 0)^{1/(α−1)} with x = (α − 1)(s − m), into p. */
static double entmax_mass(const double *s, size_t n, double m, double a1, double tau, double *p)
{
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        double y = s[j] == -INFINITY ? 0 : fmax(a1 * (s[j] - m) - tau, 0);
        sum += (p[j] = a1 == 1 ? y : pow(y, 1 / a1));
    }
    return sum;
}

int ag_entmax_bisect_row(const double *s, size_t n, double alpha, double *p, ag_error *err)
{
    size_t k;
    double m;
    if (!(alpha > 1 && alpha <= 2))
        return ag_error_set(err, AG_EINVAL, "entmax: alpha %g is outside (1, 2]", alpha);
    int rc = row_scan("entmax", s, n, p, &k, &m, err);
    if (rc != AG_OK)
        return rc;
    double a1 = alpha - 1, lo = -1, hi = -pow((double)k, -a1), dm = hi - lo;
    /* f(lo) >= 0 >= f(hi): halve until the midpoint is an end in double */
    for (;;) {
        dm /= 2;
        double mid = lo + dm;
        if (mid == lo || mid == hi)
            break;
        if (entmax_mass(s, n, m, a1, mid, p) - 1 >= 0)
            lo = mid;
    }
    double sum = entmax_mass(s, n, m, a1, lo, p);
    if (!(fabs(sum - 1) <= 1e-12))
        return ag_error_set(err, AG_EUNSUPPORTED, "entmax: alpha %g: the bisected row sums to 1%+.3g (alpha too close to 1 for %zu keys)",
                            alpha, sum - 1, k);
    for (size_t j = 0; j < n; j++)
        p[j] /= sum;
    return AG_OK;
}

int ag_normalize_row(ag_normalizer kind, double param, const double *s, size_t n, double *p,
                     ag_error *err)
{
    switch (kind) {
    case AG_NORMALIZER_SOFTMAX:
        return ag_softmax_row(s, n, param, p, err);
    case AG_NORMALIZER_SPARSEMAX:
        return ag_sparsemax_row(s, n, p, err);
    case AG_NORMALIZER_ENTMAX15:
        return ag_entmax15_row(s, n, p, err);
    case AG_NORMALIZER_ENTMAX:
        return ag_entmax_bisect_row(s, n, param, p, err);
    case AG_NORMALIZER_LINEAR:
        return ag_error_set(err, AG_EINVAL, "linear attention needs the head's Q and K, not its scores");
    default:
        return ag_error_set(err, AG_EINVAL, "unknown normalizer %d", (int)kind);
    }
}

double ag_normalizer_kept_floor(ag_normalizer kind, double param)
{
    switch (kind) {
    case AG_NORMALIZER_SPARSEMAX:
        return AG_SUPPORT_TIE;
    case AG_NORMALIZER_ENTMAX15:
        return (AG_SUPPORT_TIE / 2) * (AG_SUPPORT_TIE / 2);
    case AG_NORMALIZER_ENTMAX: /* p = ((α − 1)(s − τ))^(1/(α − 1)), entmax_bisect's */
        return pow((param - 1) * AG_SUPPORT_TIE, 1 / (param - 1));
    default:
        return 0;
    }
}

size_t ag_normalizer_support(ag_normalizer kind, double param, const double *p, size_t n)
{
    double floor = ag_normalizer_kept_floor(kind, param);
    size_t kept = 0;
    for (size_t j = 0; p && j < n; j++)
        kept += p[j] > floor; /* false for NaN */
    return kept;
}

int ag_normalize_rows(ag_normalizer kind, double param, const double *S, size_t rows, size_t n,
                      double *P, ag_error *err)
{
    if (!S || !P || rows == 0)
        return ag_error_set(err, AG_EINVAL, "normalize: no rows");
    for (size_t r = 0; r < rows; r++) {
        int rc = ag_normalize_row(kind, param, S + r * n, n, P + r * n, err);
        if (rc != AG_OK) {
            if (err) {
                char msg[AG_ERROR_MESSAGE_MAX];
                memcpy(msg, err->message, sizeof msg);
                ag_error_set(err, rc, "row %zu: %s", r, msg);
            }
            return rc;
        }
    }
    return AG_OK;
}

/* ---- linear attention ----------------------------------------------------- */

/* φ(x) = elu(x) + 1 (Katharopoulos et al. 2020, §3.2.1). */
static double phi(double x)
{
    return x > 0 ? x + 1 : exp(x);
}

static int finite_vec(const double *v, size_t d)
{
    for (size_t e = 0; e < d; e++)
        if (!isfinite(v[e]))
            return 0;
    return 1;
}

int ag_linear_attention_row(const double *q, const double *K, size_t n, size_t d, size_t ldk,
                            const unsigned char *allowed, double *p, ag_error *err)
{
    if (!q || !K || !p || n == 0 || d == 0 || ldk < d)
        return ag_error_set(err, AG_EINVAL, "linear attention: empty row, NULL buffer or key stride %zu < %zu",
                            ldk, d);
    if (!finite_vec(q, d))
        return ag_error_set(err, AG_ENONFINITE, "linear attention: the query is not finite");
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        p[j] = 0;
        if (allowed && !allowed[j])
            continue;
        const double *kj = K + j * ldk;
        if (!finite_vec(kj, d))
            return ag_error_set(err, AG_ENONFINITE, "linear attention: key %zu is not finite", j);
        for (size_t e = 0; e < d; e++)
            p[j] += phi(q[e]) * phi(kj[e]);
        sum += p[j];
    }
    if (sum == 0)
        return ag_error_set(err, AG_EINVAL, "linear attention: every key of the row is masked");
    if (!isfinite(sum))
        return ag_error_set(err, AG_ENONFINITE, "linear attention: the row's sum overflows");
    for (size_t j = 0; j < n; j++)
        p[j] /= sum;
    return AG_OK;
}

/* ---- names ------------------------------------------------------------------ */

static const char *const names[AG_NORMALIZER_COUNT] = {"softmax", "sparsemax", "entmax15",
                                                       "entmax", "linear"};

const char *ag_normalizer_name(ag_normalizer kind)
{
    return (unsigned)kind < AG_NORMALIZER_COUNT ? names[kind] : NULL;
}

int ag_normalizer_parse(const char *name, ag_normalizer *kind, double *param, ag_error *err)
{
    if (!name || !kind || !param)
        return ag_error_set(err, AG_EINVAL, "normalizer: NULL argument");
    *param = 1;
    if (strncmp(name, "entmax:", 7) == 0) {
        char *end;
        double a = strtod(name + 7, &end);
        if (end == name + 7 || *end || !(a > 1 && a <= 2))
            return ag_error_set(err, AG_EINVAL, "normalizer '%s': entmax:ALPHA takes alpha in (1, 2] (entmax:2 is sparsemax)",
                                name);
        *kind = AG_NORMALIZER_ENTMAX;
        *param = a;
        return AG_OK;
    }
    for (int k = 0; k < AG_NORMALIZER_COUNT; k++)
        if (k != AG_NORMALIZER_ENTMAX && strcmp(name, names[k]) == 0) {
            *kind = (ag_normalizer)k;
            return AG_OK;
        }
    return ag_error_set(err, AG_EINVAL, "unknown normalizer '%s' (softmax, sparsemax, entmax15, entmax:ALPHA, linear)",
                        name);
}
