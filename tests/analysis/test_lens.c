/* test_lens.c — family K (ag_lens_metrics, analysis/lens.c) against closed
 * forms derived here: a row with one allowed key or equal scores (std 0,
 * supports 1, JS 0), a row whose top score leads by ≥ 1 (sparsemax one-hot,
 * 1.5-entmax's two-key support, JS from the softmax in closed form), a
 * symmetric form Q = K of known rank (asymmetry 0, numerical rank d,
 * effective rank d for equal singular values), an antisymmetric form
 * (asymmetry 1), rank_lift from the record's effective_rank or A's, the
 * zero form (nulls) and the errors. tests/ref/check_lens.py checks real
 * heads (RoPE, GQA) against a float64 numpy reference. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

TestSuite(lens);

#define NEG (-INFINITY)

typedef struct {
    ag_metric_set *sel;
    ag_record *rec;
} fixture;

static fixture setup(const char *list)
{
    fixture f = {NULL, ag_record_new()};
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILY_BIT(AG_FAMILY_LENS) |
                                       AG_FAMILY_BIT(AG_FAMILY_SPECTRUM), list, &f.sel, &err),
                 AG_OK, "%s", err.message);
    cr_assert_not_null(f.rec);
    return f;
}

static void teardown(fixture *f)
{
    ag_metric_set_free(f->sel);
    ag_record_free(f->rec);
}

static double value(const ag_record *r, ag_metric m, int want_kind)
{
    double v = NAN;
    int kind = ag_record_value(r, m, &v);
    cr_assert_eq(kind, want_kind, "%s: kind %d, expected %d", ag_metric_name(m), kind,
                 want_kind);
    return v;
}

/* X (n, d) = the first d columns of the n×n identity: orthonormal columns,
 * so with W_Q = W_K = I (d = d_h) Q = K = X and S° = c·XXᵀ has d equal
 * singular values c. */
enum { N = 6, D = 3 };
static double X[N * D], I3[D * D], A_ID[N * N];

static void fill(void)
{
    memset(X, 0, sizeof X);
    memset(I3, 0, sizeof I3);
    memset(A_ID, 0, sizeof A_ID);
    for (int j = 0; j < D; j++)
        X[j * D + j] = I3[j * D + j] = 1;
    for (int i = 0; i < N; i++)
        A_ID[i * N + i] = 1;
}

static ag_head_input head(const double *wq, const double *wk)
{
    return (ag_head_input){.x = X, .n = N, .d = D, .wq = wq, .wk = wk, .d_h = D, .causal = 1};
}

/* Rows: one allowed key; two equal scores; (3, 1.5, 0), top leading by 1.5.
 * Row 2: scores' mean 1.5, variance (2.25 + 0 + 2.25)/3 = 1.5; sparsemax
 * (τ = 2, Martins & Astudillo 2016, Algorithm 1) keeps 1 of 3; 1.5-entmax on
 * z = (s − 3)/2 = (0, −0.75, −1.5): τ₂ = −0.375 − √((1 − 2·0.375²)/2) =
 * −0.9745 ≤ z₂ but τ₃ = −0.75 > z₃, so 2 of 3; JS(p, e₀) with p = softmax:
 * ½[p₀ ln(2p₀/(p₀+1)) + (p₁ + p₂) ln 2] + ½ ln(2/(p₀+1)). */
Test(lens, row_keys_closed_forms)
{
    fill();
    double S[9] = {0, NEG, NEG, 1, 1, NEG, 3, 1.5, 0};
    fixture f = setup("score_std,sparsemax_support,entmax_support,sparsemax_js");
    ag_head_input in = head(I3, I3);
    in.n = 3;
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    double z = exp(3) + exp(1.5) + 1, p0 = exp(3) / z;
    double js2 = 0.5 * (p0 * log(2 * p0 / (p0 + 1)) + (1 - p0) * log(2)) +
                 0.5 * log(2 / (p0 + 1));
    cr_expect(fabs(value(f.rec, AG_M_SCORE_STD, AG_V_NUMBER) - sqrt(1.5) / 3) < 1e-15);
    cr_expect(fabs(value(f.rec, AG_M_SPARSEMAX_SUPPORT, AG_V_NUMBER) - (2 + 1.0 / 3) / 3) <
              1e-15);
    cr_expect(fabs(value(f.rec, AG_M_ENTMAX_SUPPORT, AG_V_NUMBER) - (2 + 2.0 / 3) / 3) < 1e-15);
    double js = value(f.rec, AG_M_SPARSEMAX_JS, AG_V_NUMBER);
    cr_expect(fabs(js - sqrt(js2) / 3) < 1e-15, "js %.17g, expected %.17g", js, sqrt(js2) / 3);
    /* not selected: absent */
    cr_expect_eq(ag_record_value(f.rec, AG_M_SCORE_ASYMMETRY, NULL), AG_V_ABSENT);
    teardown(&f);
}

/* Ties at the threshold: two keys a gap g apart are one-hot exactly when
 * g ≥ 1 for sparsemax (τ = max − 1, p₂ = [−g + 1]₊) and g ≥ 2 for
 * 1.5-entmax (τ = max/2 − 1 in x = s/2, p₂ = [−g/2 + 1]₊²): at g = 1 and 2
 * exactly the second key's p is 0. Rows (a + g, a) with the gap formed in
 * floating point, as ALiBi forms slope·Δposition on two equal tokens, give
 * gaps a few ulps either side of g: each must still keep 1 of 2 keys
 * (LENS_TIE), where counting p > 0 splits them by rounding. */
Test(lens, ties_at_the_threshold_are_not_kept)
{
    fill();
    ag_error err = {0};
    ag_head_input in = head(I3, I3);
    in.n = 2;
    in.causal = 0;
    for (int r = 0; r < 80; r++) {
        double a = 0.1 * (r / 2 + 1) + 1.0 / 3, g = r % 2 ? 2 : 1;
        double S[4] = {a + g, a, a + g, a}; /* both queries see (a + g, a) */
        double gap = S[0] - S[1];
        fixture f = setup("sparsemax_support,entmax_support");
        cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s",
                     err.message);
        /* gap 1: sparsemax one-hot, 1.5-entmax keeps both; gap 2: both one-hot */
        cr_expect_eq(value(f.rec, AG_M_SPARSEMAX_SUPPORT, AG_V_NUMBER), 0.5,
                     "gap %.17g: sparsemax_support", gap);
        cr_expect_eq(value(f.rec, AG_M_ENTMAX_SUPPORT, AG_V_NUMBER), g == 2 ? 0.5 : 1,
                     "gap %.17g: entmax_support", gap);
        teardown(&f);
    }
}

/* Every row masked: the row keys are null, not an error. */
Test(lens, no_allowed_score_is_null)
{
    fill();
    double S[4] = {NEG, NEG, NEG, NEG};
    fixture f = setup("score_std,sparsemax_js");
    ag_head_input in = head(I3, I3);
    in.n = 2;
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    value(f.rec, AG_M_SCORE_STD, AG_V_NULL);
    value(f.rec, AG_M_SPARSEMAX_JS, AG_V_NULL);
    teardown(&f);
}

/* Q = K = X: S° = c·XXᵀ symmetric, rank 3 with equal singular values, so
 * effective rank exp(ln 3) = 3, numerical rank 3, asymmetry 0; rank_lift
 * from A = I (effective rank N) is N/3, and from the record's own
 * effective_rank when it holds one. */
Test(lens, symmetric_form_of_known_rank)
{
    fill();
    double S[N * N] = {0};
    fixture f = setup("lens");
    ag_head_input in = head(I3, I3);
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_EFFECTIVE_RANK, AG_V_NUMBER) - 3) < 1e-14);
    cr_expect_eq(value(f.rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER), 3);
    cr_expect_eq(value(f.rec, AG_M_SCORE_ASYMMETRY, AG_V_NUMBER), 0);
    cr_expect(fabs(value(f.rec, AG_M_RANK_LIFT, AG_V_NUMBER) - N / 3.0) < 1e-14);
    /* rank_lift takes the record's effective_rank when it has one */
    ag_record_set(f.rec, AG_M_EFFECTIVE_RANK, AG_V_NUMBER, 4.5);
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    cr_expect(fabs(value(f.rec, AG_M_RANK_LIFT, AG_V_NUMBER) - 1.5) < 1e-14);
    teardown(&f);
}

/* W_K = W_Q·J, J the 90° rotation in the first two dims (J₃₃ = 0): S° =
 * c·X Jᵀ Xᵀ is antisymmetric, so ‖(S° − S°ᵀ)/2‖ = ‖S°‖: asymmetry 1, rank
 * 2, two equal singular values (X orthonormal). */
Test(lens, antisymmetric_form)
{
    fill();
    double J[D * D] = {0, 1, 0, -1, 0, 0, 0, 0, 0}, S[N * N] = {0};
    fixture f = setup("score_asymmetry,score_numerical_rank,score_effective_rank");
    ag_head_input in = head(I3, J);
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_ASYMMETRY, AG_V_NUMBER) - 1) < 1e-15);
    cr_expect_eq(value(f.rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER), 2);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_EFFECTIVE_RANK, AG_V_NUMBER) - 2) < 1e-14);
    teardown(&f);
}

/* W_Q = 0: S° = 0, its ratio keys null, numerical rank 0. */
Test(lens, zero_form_is_null)
{
    fill();
    double Z[D * D] = {0}, S[N * N] = {0};
    fixture f = setup("lens");
    ag_head_input in = head(Z, I3);
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    value(f.rec, AG_M_SCORE_EFFECTIVE_RANK, AG_V_NULL);
    value(f.rec, AG_M_RANK_LIFT, AG_V_NULL);
    value(f.rec, AG_M_SCORE_ASYMMETRY, AG_V_NULL);
    cr_expect_eq(value(f.rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER), 0);
    teardown(&f);
}

Test(lens, errors)
{
    fill();
    double S[4] = {0, NEG, NAN, 1};
    fixture f = setup("lens");
    ag_head_input in = head(I3, I3);
    in.n = 2;
    ag_error err = {0};
    cr_expect_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "row 1") != NULL, "%s", err.message);
    cr_expect_eq(ag_lens_metrics(NULL, &in, NULL, A_ID, f.sel, f.rec, &err), AG_EINVAL);
    S[2] = 0;
    in.wq = NULL;
    cr_expect_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_EINVAL);
    teardown(&f);
}

/* The sort-free thresholds against the sorting normalisers
 * (attngeom/normalizers.h) on random rows of 1..40 keys, some masked, some
 * tied, at spreads from near-uniform to peaked: each row's supports must be
 * the counts ag_normalizer_support gives of ag_sparsemax_row's and
 * ag_entmax15_row's rows exactly,
 * and its JS distance the one of the sorted sparsemax row and
 * ag_softmax_row's (formed here), to the rounding of a mean. */
static double lcg(unsigned long long *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*x >> 11) / 9007199254740992.0;
}

Test(lens, thresholds_match_the_sorting_normalisers)
{
    fill();
    fixture f = setup("sparsemax_support,entmax_support,sparsemax_js");
    unsigned long long x = 28;
    double s[40], p[40], q[40];
    ag_error err = {0};
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = 1 + (size_t)(lcg(&x) * 40);
        double spread = pow(10, 3 * lcg(&x) - 2);
        for (size_t j = 0; j < n; j++) {
            double u = lcg(&x);
            s[j] = u < 0.15 ? NEG : u < 0.3 && j > 0 ? s[j - 1] : spread * (2 * lcg(&x) - 1);
        }
        s[(size_t)(lcg(&x) * n)] = 0.5; /* at least one allowed key */
        ag_head_input in = head(I3, I3);
        in.n = 1; /* one row of n scores: S is 1 × n, read as its only row */
        double sp, en, js = 0, k = 0;
        cr_assert_eq(ag_sparsemax_row(s, n, q, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_softmax_row(s, n, 1, p, &err), AG_OK);
        sp = (double)ag_normalizer_support(AG_NORMALIZER_SPARSEMAX, 1, q, n);
        for (size_t j = 0; j < n; j++) {
            k += s[j] != NEG;
            double m = p[j] + q[j];
            js += (p[j] > 0 ? p[j] * log(2 * p[j] / m) : 0) + (q[j] > 0 ? q[j] * log(2 * q[j] / m) : 0);
        }
        cr_assert_eq(ag_entmax15_row(s, n, p, &err), AG_OK);
        en = (double)ag_normalizer_support(AG_NORMALIZER_ENTMAX15, 1.5, p, n);
        /* ag_lens_metrics reads rows of in.n scores: give it n × n with the
         * row repeated, so every row is this one */
        double S[40 * 40];
        for (size_t i = 0; i < n; i++)
            memcpy(S + i * n, s, n * sizeof *s);
        in.n = n;
        cr_assert_eq(ag_lens_metrics(S, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
        /* the mean of n equal terms rounds: compare the count it carries */
        double vs = value(f.rec, AG_M_SPARSEMAX_SUPPORT, AG_V_NUMBER) * k,
               ve = value(f.rec, AG_M_ENTMAX_SUPPORT, AG_V_NUMBER) * k;
        cr_expect(fabs(vs - sp) < 1e-9 && fabs(ve - en) < 1e-9, "trial %d: supports %.17g, %.17g of %g keys, expected %g, %g",
                  trial, vs, ve, k, sp, en);
        double want = sqrt(fmax(js / 2, 0));
        /* the mean of n ≤ 40 equal terms rounds by up to 40 ulps (< 4e-15 here) */
        cr_expect(fabs(value(f.rec, AG_M_SPARSEMAX_JS, AG_V_NUMBER) - want) <= 1e-14,
                  "trial %d: js %.17g, expected %.17g", trial, value(f.rec, AG_M_SPARSEMAX_JS, AG_V_NUMBER), want);
    }
    teardown(&f);
}

/* Q and K given (ag_lens_metrics_qk, the pass's own) against the head input
 * projected by ag_lens_metrics: the antisymmetric form's closed forms
 * (Q = X, K = XJ), then every key equal on a random head. */
Test(lens, given_q_and_k_match_the_projected_head)
{
    fill();
    double J[D * D] = {0, 1, 0, -1, 0, 0, 0, 0, 0}, S[N * N] = {0}, K[N * D] = {0};
    for (int i = 0; i < N; i++) /* K = X J */
        for (int c = 0; c < D; c++)
            for (int t = 0; t < D; t++)
                K[i * D + c] += X[i * D + t] * J[t * D + c];
    fixture f = setup("lens");
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics_qk(S, N, X, K, D, A_ID, f.sel, f.rec, &err), AG_OK, "%s",
                 err.message);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_ASYMMETRY, AG_V_NUMBER) - 1) < 1e-15);
    cr_expect_eq(value(f.rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER), 2);
    /* a random head: X (N, D), W_Q, W_K (D, D), scores of its own */
    unsigned long long x = 7;
    double Xr[N * D], wq[D * D], wk[D * D], Q[N * D] = {0}, Kr[N * D] = {0}, Sr[N * N];
    for (int i = 0; i < N * D; i++)
        Xr[i] = 2 * lcg(&x) - 1;
    for (int i = 0; i < D * D; i++) {
        wq[i] = 2 * lcg(&x) - 1;
        wk[i] = 2 * lcg(&x) - 1;
    }
    for (int i = 0; i < N; i++)
        for (int c = 0; c < D; c++)
            for (int t = 0; t < D; t++) {
                Q[i * D + c] += Xr[i * D + t] * wq[t * D + c];
                Kr[i * D + c] += Xr[i * D + t] * wk[t * D + c];
            }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            Sr[i * N + j] = j > i ? NEG : 3 * lcg(&x);
    ag_head_input in = {.x = Xr, .n = N, .d = D, .wq = wq, .wk = wk, .d_h = D, .causal = 1};
    ag_record *r2 = ag_record_new();
    cr_assert_eq(ag_lens_metrics(Sr, &in, NULL, A_ID, f.sel, f.rec, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_lens_metrics_qk(Sr, N, Q, Kr, D, A_ID, f.sel, r2, &err), AG_OK, "%s",
                 err.message);
    const ag_metric keys[] = {AG_M_SCORE_STD, AG_M_SPARSEMAX_SUPPORT, AG_M_ENTMAX_SUPPORT,
                              AG_M_SPARSEMAX_JS, AG_M_SCORE_EFFECTIVE_RANK,
                              AG_M_SCORE_NUMERICAL_RANK, AG_M_RANK_LIFT, AG_M_SCORE_ASYMMETRY};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        double a = NAN, b = NAN;
        cr_assert_eq(ag_record_value(f.rec, keys[k], &a), ag_record_value(r2, keys[k], &b));
        cr_expect(fabs(a - b) <= 1e-14 * fmax(1, fabs(a)), "%s: projected %.17g, given %.17g",
                  ag_metric_name(keys[k]), a, b);
    }
    /* a NaN in K, missing Q */
    Kr[4] = NAN;
    cr_expect_eq(ag_lens_metrics_qk(Sr, N, Q, Kr, D, A_ID, f.sel, r2, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "K row 1") != NULL, "%s", err.message);
    cr_expect_eq(ag_lens_metrics_qk(Sr, N, NULL, Kr, D, A_ID, f.sel, r2, &err), AG_EINVAL);
    ag_record_free(r2);
    teardown(&f);
}

/* A cross-attention head, m = 2 targets over n = 4 sources, d_h = 3:
 * Q = the first two rows of I₃, K = I₃ with a zero row appended, so S° =
 * QKᵀ = [I₂ 0] has singular values (1, 1): effective and numerical rank
 * 2; A = [I₂ 0] the same (rank_lift 1); no transpose to compare
 * (score_asymmetry null). Rows of scores: (3, 1.5, 0, −inf) as in
 * row_keys_closed_forms (std √1.5, sparsemax 1/3, 1.5-entmax 2/3) and four
 * equal scores (0, 1, 1, JS 0): the means over the two rows. */
Test(lens, rectangular_form_of_a_cross_head)
{
    const double Q[2 * 3] = {1, 0, 0, 0, 1, 0}, K[4 * 3] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},
                 A[2 * 4] = {1, 0, 0, 0, 0, 1, 0, 0}, S[2 * 4] = {3, 1.5, 0, NEG, 2, 2, 2, 2};
    fixture f = setup("lens");
    ag_error err = {0};
    cr_assert_eq(ag_lens_metrics_qk_rect(S, 2, 4, Q, K, 3, A, f.sel, f.rec, &err), AG_OK, "%s",
                 err.message);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_EFFECTIVE_RANK, AG_V_NUMBER) - 2) < 1e-14);
    cr_expect_eq(value(f.rec, AG_M_SCORE_NUMERICAL_RANK, AG_V_INTEGER), 2);
    cr_expect(fabs(value(f.rec, AG_M_RANK_LIFT, AG_V_NUMBER) - 1) < 1e-14);
    value(f.rec, AG_M_SCORE_ASYMMETRY, AG_V_NULL);
    cr_expect(fabs(value(f.rec, AG_M_SCORE_STD, AG_V_NUMBER) - sqrt(1.5) / 2) < 1e-15);
    cr_expect(fabs(value(f.rec, AG_M_SPARSEMAX_SUPPORT, AG_V_NUMBER) - 2.0 / 3) < 1e-15);
    cr_expect(fabs(value(f.rec, AG_M_ENTMAX_SUPPORT, AG_V_NUMBER) - 5.0 / 6) < 1e-15);
    double p0 = 1 / (1 + exp(-1.5) + exp(-3)), p12 = 1 - p0;
    double js = 0.5 * (p0 * log(2 * p0 / (p0 + 1)) + p12 * log(2.0)) + 0.5 * log(2 / (p0 + 1));
    cr_expect(fabs(value(f.rec, AG_M_SPARSEMAX_JS, AG_V_NUMBER) - sqrt(js) / 2) < 1e-15);
    /* a non-finite K row is named by its own index */
    double Kbad[4 * 3];
    memcpy(Kbad, K, sizeof Kbad);
    Kbad[3 * 3 + 1] = NAN;
    cr_assert_eq(ag_lens_metrics_qk_rect(S, 2, 4, Q, Kbad, 3, A, f.sel, f.rec, &err),
                 AG_ENONFINITE);
    cr_expect(strstr(err.message, "K row 3") != NULL, "%s", err.message);
    teardown(&f);
}
