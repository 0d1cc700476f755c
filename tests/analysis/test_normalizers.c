/* test_normalizers.c — attngeom/normalizers.h against closed forms derived
 * here (issue 28, "Done when"): sparsemax one-hot when the top score leads
 * by >= 1 and uniform on equal scores, 1.5-entmax's two-key solution,
 * entmax:2 = sparsemax and entmax:1.5 = entmax15, softmax's limits in the
 * temperature, linear attention uniform when φ(q)ᵀφ(k_j) is constant, and
 * the errors. tests/ref/check_normalizers.py checks the same functions
 * against a numpy port of the authors' package. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "attngeom.h"

TestSuite(normalizers);

#define NEG (-INFINITY)

static void expect_row(const double *got, const double *want, size_t n, double tol,
                       const char *what)
{
    for (size_t j = 0; j < n; j++)
        cr_expect(fabs(got[j] - want[j]) <= tol, "%s[%zu] = %.17g, expected %.17g", what, j,
                  got[j], want[j]);
}

/* Top score 3 leads the next (2) by exactly 1: τ = 2 and p = e_0, exactly. */
Test(normalizers, sparsemax_one_hot_when_top_leads_by_one)
{
    double s[5] = {2, 3, 0.5, NEG, 1.9}, p[5], want[5] = {0, 1, 0, 0, 0};
    ag_error err = {0};
    cr_assert_eq(ag_sparsemax_row(s, 5, p, &err), AG_OK, "%s", err.message);
    cr_expect_eq(memcmp(p, want, sizeof p), 0);
    /* a lead below 1 keeps the runner-up: (3, 2.5) -> (0.75, 0.25) */
    s[0] = 2.5;
    cr_assert_eq(ag_sparsemax_row(s, 5, p, &err), AG_OK);
    double w2[5] = {0.25, 0.75, 0, 0, 0};
    expect_row(p, w2, 5, 0, "lead 1/2");
}

/* Equal allowed scores: τ = s − 1/k, p = 1/k on each, 0 on the masked. */
Test(normalizers, equal_scores_are_uniform)
{
    double s[6] = {0.7, NEG, 0.7, 0.7, NEG, 0.7}, p[6], want[6] = {0.25, 0, 0.25, 0.25, 0, 0.25};
    ag_error err = {0};
    cr_assert_eq(ag_sparsemax_row(s, 6, p, &err), AG_OK);
    expect_row(p, want, 6, 1e-16, "sparsemax");
    cr_assert_eq(ag_entmax15_row(s, 6, p, &err), AG_OK);
    expect_row(p, want, 6, 1e-16, "entmax15");
    cr_assert_eq(ag_entmax_bisect_row(s, 6, 1.3, p, &err), AG_OK, "%s", err.message);
    expect_row(p, want, 6, 1e-15, "entmax:1.3");
    cr_assert_eq(ag_softmax_row(s, 6, 0.1, p, &err), AG_OK);
    expect_row(p, want, 6, 1e-16, "softmax");
}

/* Sparsemax of (1, 0.5, 0, −1): sorted z = (0, −0.5, −1, −2) after the
 * shift; ρ = 2 is the last with 1 + ρz_(ρ) > Σ z (0 > −0.5; ρ = 3: −2 <
 * −1.5), τ = (−0.5 − 1)/2 = −0.75, p = (0.75, 0.25, 0, 0). */
Test(normalizers, sparsemax_closed_form)
{
    double s[4] = {0, 1, -1, 0.5}, p[4], want[4] = {0, 0.75, 0, 0.25};
    cr_assert_eq(ag_sparsemax_row(s, 4, p, NULL), AG_OK);
    expect_row(p, want, 4, 0, "sparsemax");
}

/* 1.5-entmax of two keys (1, 0): z = (0, −1/2), both in the support, so
 * τ² + (1/2 + τ)² = 1, τ = −(1 + √7)/4 and p = (((1 + √7)/4)², ((√7 − 1)/4)²);
 * a lead of 2 (z gap 1) or more gives the one-hot row. */
Test(normalizers, entmax15_closed_forms)
{
    double s[3] = {NEG, 1, 0}, p[3], r7 = sqrt(7.0);
    double want[3] = {0, (1 + r7) * (1 + r7) / 16, (r7 - 1) * (r7 - 1) / 16};
    cr_assert_eq(ag_entmax15_row(s, 3, p, NULL), AG_OK);
    expect_row(p, want, 3, 2e-16, "entmax15");
    cr_assert_eq(ag_entmax_bisect_row(s, 3, 1.5, p, NULL), AG_OK);
    expect_row(p, want, 3, 1e-14, "entmax:1.5");
    double t[4] = {0, 4, 2, 1.5}, q[4], one[4] = {0, 1, 0, 0};
    cr_assert_eq(ag_entmax15_row(t, 4, q, NULL), AG_OK);
    expect_row(q, one, 4, 0, "entmax15 lead 2");
}

static void random_row(gsl_rng *r, double *s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        s[j] = gsl_rng_uniform(r) < 0.2 ? NEG : gsl_ran_gaussian(r, 2.0);
    s[gsl_rng_uniform_int(r, n)] = 0.3; // at least one allowed key
}

/* α = 2 is sparsemax and α = 1.5 is 1.5-entmax (Peters et al. 2019, §3):
 * the bisection reaches the sort-based rows on random rows with masks. */
Test(normalizers, entmax_bisect_reaches_the_exact_cases)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 28);
    enum { N = 40 };
    double s[N], a[N], b[N];
    for (int t = 0; t < 50; t++) {
        random_row(r, s, N);
        cr_assert_eq(ag_sparsemax_row(s, N, a, NULL), AG_OK);
        cr_assert_eq(ag_entmax_bisect_row(s, N, 2, b, NULL), AG_OK);
        expect_row(b, a, N, 1e-13, "entmax:2 vs sparsemax");
        cr_assert_eq(ag_entmax15_row(s, N, a, NULL), AG_OK);
        cr_assert_eq(ag_entmax_bisect_row(s, N, 1.5, b, NULL), AG_OK);
        expect_row(b, a, N, 1e-13, "entmax:1.5 vs entmax15");
        double sum = 0;
        for (int j = 0; j < N; j++) {
            sum += a[j];
            cr_expect(s[j] != NEG || a[j] == 0);
        }
        cr_expect(fabs(sum - 1) < 1e-14, "sum %.17g", sum);
    }
    gsl_rng_free(r);
}

/* T = 1 is exp(s_j − max)/Σ; T large the uniform row; T small the argmax,
 * ties split evenly (exp(−1/T) underflows to 0 exactly at T = 1e-6). */
Test(normalizers, softmax_temperature_limits)
{
    double s[5] = {1, 3, 3, NEG, 2}, p[5];
    double z = exp(-2.0) + 1 + 1 + exp(-1.0);
    double one[5] = {exp(-2.0) / z, 1 / z, 1 / z, 0, exp(-1.0) / z};
    cr_assert_eq(ag_softmax_row(s, 5, 1, p, NULL), AG_OK);
    expect_row(p, one, 5, 1e-16, "T = 1");
    double hot[5] = {0, 0.5, 0.5, 0, 0};
    cr_assert_eq(ag_softmax_row(s, 5, 1e-6, p, NULL), AG_OK);
    expect_row(p, hot, 5, 0, "T = 1e-6");
    double flat[5] = {0.25, 0.25, 0.25, 0, 0.25};
    cr_assert_eq(ag_softmax_row(s, 5, 1e12, p, NULL), AG_OK);
    expect_row(p, flat, 5, 1e-12, "T = 1e12");
    /* in place */
    cr_assert_eq(ag_softmax_row(s, 5, 1, s, NULL), AG_OK);
    expect_row(s, one, 5, 1e-16, "in place");
}

/* q = 0: φ(q) = (1, 1, 1), so φ(q)ᵀφ(k_j) = Σ_e φ(k_je), the same for keys
 * that permute one vector: uniform over the allowed keys. A general row
 * against φ computed here. */
Test(normalizers, linear_attention)
{
    double q[3] = {0, 0, 0}, K[4 * 3] = {0.3, -1, 2, 2, 0.3, -1, -1, 2, 0.3, 0.3, 2, -1}, p[4];
    unsigned char allowed[4] = {1, 1, 0, 1};
    double want[4] = {1.0 / 3, 1.0 / 3, 0, 1.0 / 3};
    cr_assert_eq(ag_linear_attention_row(q, K, 4, 3, 3, allowed, p, NULL), AG_OK);
    expect_row(p, want, 4, 1e-16, "uniform");
    double q2[3] = {0.5, -2, 1};
    double fq[3] = {1.5, exp(-2.0), 2}, num[4], sum = 0;
    for (int j = 0; j < 4; j++) {
        num[j] = 0;
        for (int e = 0; e < 3; e++) {
            double k = K[j * 3 + e];
            num[j] += fq[e] * (k > 0 ? k + 1 : exp(k));
        }
        sum += num[j];
    }
    for (int j = 0; j < 4; j++)
        want[j] = num[j] / sum;
    cr_assert_eq(ag_linear_attention_row(q2, K, 4, 3, 3, NULL, p, NULL), AG_OK);
    expect_row(p, want, 4, 1e-15, "general");
}

Test(normalizers, errors_and_names)
{
    double s[3] = {NEG, NEG, NEG}, p[3];
    ag_error err = {0};
    cr_expect_eq(ag_sparsemax_row(s, 3, p, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "masked"), "%s", err.message);
    s[1] = NAN;
    cr_expect_eq(ag_entmax15_row(s, 3, p, &err), AG_ENONFINITE);
    s[1] = 0;
    cr_expect_eq(ag_softmax_row(s, 3, 0, p, &err), AG_EINVAL);
    cr_expect_eq(ag_entmax_bisect_row(s, 3, 1, p, &err), AG_EINVAL);
    cr_expect_eq(ag_entmax_bisect_row(s, 3, 2.5, p, &err), AG_EINVAL);
    cr_expect_eq(ag_normalize_row(AG_NORMALIZER_LINEAR, 1, s, 3, p, &err), AG_EINVAL);
    ag_normalizer k;
    double a;
    cr_expect_eq(ag_normalizer_parse("entmax:1.25", &k, &a, &err), AG_OK);
    cr_expect(k == AG_NORMALIZER_ENTMAX && a == 1.25);
    cr_expect_eq(ag_normalizer_parse("sparsemax", &k, &a, &err), AG_OK);
    cr_expect(k == AG_NORMALIZER_SPARSEMAX && a == 1);
    cr_expect_eq(ag_normalizer_parse("entmax:1", &k, &a, &err), AG_EINVAL);
    cr_expect_eq(ag_normalizer_parse("entmax:", &k, &a, &err), AG_EINVAL);
    cr_expect_eq(ag_normalizer_parse("softmin", &k, &a, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "entmax15"), "%s", err.message);
    cr_expect_str_eq(ag_normalizer_name(AG_NORMALIZER_ENTMAX15), "entmax15");
    cr_expect_null(ag_normalizer_name(AG_NORMALIZER_COUNT));
}

/* The one support rule (normalizers.h AG_SUPPORT_TIE): a key counts when
 * its score is more than 1e-12 above the threshold, i.e. its probability
 * above p(1e-12): sparsemax 1e-12, 1.5-entmax (0.5e-12)², α-entmax
 * ((α − 1)·1e-12)^(1/(α − 1)) (α = 2 is sparsemax's), softmax 0; NaN
 * (a masked key in a plotted row) never counts. */
Test(normalizers, support_counts_keys_above_the_tie_floor)
{
    cr_expect_eq(ag_normalizer_kept_floor(AG_NORMALIZER_SPARSEMAX, 1), 1e-12);
    cr_expect(fabs(ag_normalizer_kept_floor(AG_NORMALIZER_ENTMAX15, 1.5) - 2.5e-25) < 1e-40);
    cr_expect(fabs(ag_normalizer_kept_floor(AG_NORMALIZER_ENTMAX, 2) - 1e-12) < 1e-27);
    cr_expect(fabs(ag_normalizer_kept_floor(AG_NORMALIZER_ENTMAX, 1.5) - 2.5e-25) < 1e-38);
    cr_expect_eq(ag_normalizer_kept_floor(AG_NORMALIZER_SOFTMAX, 1), 0);
    double p[6] = {0.7, 0.3 - 2e-12, 2e-12, 5e-13, 0, NAN};
    cr_expect_eq(ag_normalizer_support(AG_NORMALIZER_SPARSEMAX, 1, p, 6), 3);
    cr_expect_eq(ag_normalizer_support(AG_NORMALIZER_ENTMAX15, 1.5, p, 6), 4);
    cr_expect_eq(ag_normalizer_support(AG_NORMALIZER_SOFTMAX, 1, p, 6), 4);
    /* a tie at sparsemax's threshold: scores (1, 0, 0) − the exact one-hot
     * boundary gives p = (1, 0, 0) up to rounding; one key kept */
    double s[3] = {1, 0, 0}, q[3];
    ag_error err = {0};
    cr_assert_eq(ag_sparsemax_row(s, 3, q, &err), AG_OK, "%s", err.message);
    cr_expect_eq(ag_normalizer_support(AG_NORMALIZER_SPARSEMAX, 1, q, 3), 1);
}
