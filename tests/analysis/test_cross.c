/* test_cross.c — docs/metrics.md, family M (cross-attention) on matrices
 * whose values are derived by hand below, and family B's keys on a
 * rectangular matrix. Notation: A is m×n (m targets, n sources),
 * a_i = argmax_j A_ij (the smallest j on a tie), c_j = Σ_i A_ij, T = Σ_j c_j.
 * Spearman's ρ with average ranks for ties is Pearson's r of the ranks;
 * Kendall's τ-b = (C − D)/√((P − U_x)(P − U_y)), P = m(m−1)/2 pairs, U the
 * pairs tied in x or y (Kendall 1945). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../util/test_metrics_util.h"

#define EPS 2.220446049250313e-16

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

/* The permutation matrix A_{i,p(i)} = 1 (n×n). */
static double *permutation(const size_t *p, size_t n)
{
    double *A = test_square(n);
    for (size_t i = 0; i < n; i++)
        A[i * n + p[i]] = 1;
    return A;
}

/* The identity alignment (a_i = i): ρ = τ = 1 (ρ, Pearson's r of the
 * ranks, within the rounding of GSL's running means: a few ε); every
 * source receives mass exactly 1 = T/n: coverage 1; one-hot rows:
 * entropy 0. */
Test(cross, identity_alignment)
{
    enum { n = 6 };
    size_t p[n];
    for (size_t i = 0; i < n; i++)
        p[i] = i;
    double *A = permutation(p, n);
    ag_record r = run(A, n, n);
    expect_num(&r, AG_M_ALIGNMENT_MONOTONICITY, 1, 4 * EPS);
    expect_num(&r, AG_M_ALIGNMENT_KENDALL, 1, 0);
    expect_num(&r, AG_M_SOURCE_COVERAGE, 1, 0);
    expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, 0, 0);
    free(A);
}

/* The reversed alignment a_i = n−1−i: every pair discordant, ρ = τ = −1
 * (ρ: Σd² = Σ(2i − n + 1)² = n(n²−1)/3, 1 − 6Σd²/(n(n²−1)) = −1). */
Test(cross, reversed_alignment)
{
    enum { n = 7 };
    size_t p[n];
    for (size_t i = 0; i < n; i++)
        p[i] = n - 1 - i;
    double *A = permutation(p, n);
    ag_record r = run(A, n, n);
    expect_num(&r, AG_M_ALIGNMENT_MONOTONICITY, -1, 4 * EPS);
    expect_num(&r, AG_M_ALIGNMENT_KENDALL, -1, 0);
    expect_num(&r, AG_M_SOURCE_COVERAGE, 1, 0);
    expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, 0, 0);
    free(A);
}

/* Uniform A_ij = 1/n: every a_i = 0 (the first of n ties), a constant
 * sequence: ρ and τ null; every c_j = m/n = T/n in the reals — reached,
 * whatever the rounding of 1/n (n = 3, 7: 1/n is not a double):
 * coverage 1; H_i = ln n: entropy 1. */
Test(cross, uniform)
{
    const size_t shapes[][2] = {{3, 4}, {4, 3}, {5, 7}, {9, 9}, {2, 10}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t m = shapes[s][0], n = shapes[s][1];
        double *A = malloc(m * n * sizeof *A);
        cr_assert_not_null(A);
        for (size_t k = 0; k < m * n; k++)
            A[k] = 1.0 / (double)n;
        ag_record r = run(A, m, n);
        expect_null(&r, AG_M_ALIGNMENT_MONOTONICITY);
        expect_null(&r, AG_M_ALIGNMENT_KENDALL);
        expect_num(&r, AG_M_SOURCE_COVERAGE, 1, 0);
        expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, 1, 4 * n * EPS);
        free(A);
    }
}

/* A hand-computed 3×4 with an argmax tie and zero entries:
 *   [0.5   0.25  0.25 0]   a_0 = 0
 *   [0.125 0.125 0.75 0]   a_1 = 2
 *   [0     0.5   0.5  0]   a_2 = 1 (the tie 1, 2 goes to the smaller j)
 * a = (0, 2, 1): ranks (1, 3, 2) against (1, 2, 3), d = (0, −1, 1),
 * ρ = 1 − 6·2/(3·8) = 1/2; pairs (0,1), (0,2) concordant, (1,2)
 * discordant: τ = (2 − 1)/3 = 1/3. c = (0.625, 0.875, 1.5, 0), T = 3,
 * T/n = 0.75: sources 1 and 2 reach it, coverage 2/4. H_0 = 1.5 ln 2,
 * H_1 = −2·0.125 ln 0.125 − 0.75 ln 0.75 = 2.25 ln 2 − 0.75 ln 3,
 * H_2 = ln 2: Σ H = 4.75 ln 2 − 0.75 ln 3, entropy ΣH/(3 ln 4). Family B:
 * entropy_mean ΣH/3, entropy_normalized the same as family M's (no row of a
 * rectangular matrix is causal: s_i = n), sink_mass c_0/3, max_mass
 * (0.5 + 0.75 + 0.5)/3, sink_ratio 4·c_0/3, rows summing to 1 exactly. */
Test(cross, hand_computed_3x4)
{
    const double A[12] = {0.5, 0.25, 0.25, 0, 0.125, 0.125, 0.75, 0, 0, 0.5, 0.5, 0};
    ag_record r = run(A, 3, 4);
    double sum_h = 4.75 * log(2) - 0.75 * log(3);
    expect_num(&r, AG_M_ALIGNMENT_MONOTONICITY, 0.5, 2 * EPS);
    expect_num(&r, AG_M_ALIGNMENT_KENDALL, 1.0 / 3, 2 * EPS);
    expect_num(&r, AG_M_SOURCE_COVERAGE, 0.5, 0);
    expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, sum_h / (3 * log(4)), 8 * EPS);
    expect_num(&r, AG_M_ENTROPY_MEAN, sum_h / 3, 8 * EPS);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, sum_h / (3 * log(4)), 8 * EPS);
    expect_num(&r, AG_M_SINK_MASS, 0.625 / 3, EPS);
    expect_num(&r, AG_M_MAX_MASS, 1.75 / 3, EPS);
    expect_num(&r, AG_M_SINK_RATIO, 2.5 / 3, 2 * EPS);
    expect_num(&r, AG_M_ROW_SUM_ERROR, 0, 0);
    /* the keys of a square matrix only */
    static const ag_metric square_only[] = {
        AG_M_CAUSAL, AG_M_LAMBDA2_ABS, AG_M_SPECTRAL_GAP, AG_M_FIEDLER, AG_M_ASYMMETRY,
        AG_M_SYMMETRY_SCORE, AG_M_ATTENTION_DISTANCE, AG_M_SELF_MASS, AG_M_PREV_TOKEN_MASS,
        AG_M_LAMBDA2_CONDITION, AG_M_PREV_TOKEN_RATIO, AG_M_SELF_RATIO};
    for (size_t k = 0; k < sizeof square_only / sizeof *square_only; k++)
        expect_null(&r, square_only[k]);
}

/* Ties in the argmax, averaged ranks: a = (0, 0, 1, 1, 2) (5×3 one-hot).
 * Ranks (1.5, 1.5, 3.5, 3.5, 5) against 1..5, both of mean 3: deviations
 * (−1.5, −1.5, .5, .5, 2) and (−2, −1, 0, 1, 2), Σ products 9, Σ squares
 * 9 and 10: ρ = 9/√90 = 3/√10. τ-b: P = 10, U_y = 2 tied pairs, no
 * discordant pair: (10 − 2)/√(10·8) = √0.8. */
Test(cross, tied_argmax_average_ranks)
{
    const size_t a[5] = {0, 0, 1, 1, 2};
    double A[15] = {0};
    for (size_t i = 0; i < 5; i++)
        A[i * 3 + a[i]] = 1;
    ag_record r = run(A, 5, 3);
    expect_num(&r, AG_M_ALIGNMENT_MONOTONICITY, 3 / sqrt(10), 4 * EPS);
    expect_num(&r, AG_M_ALIGNMENT_KENDALL, sqrt(0.8), 4 * EPS);
    /* c = (2, 2, 1), T/n = 5/3: sources 0 and 1 */
    expect_num(&r, AG_M_SOURCE_COVERAGE, 2.0 / 3, 0);
}

/* τ-b by its definition, every pair once (O(m²)), against the library's
 * O(m log n) count, on random argmax sequences full of ties (n = 7
 * sources for up to 300 targets). */
Test(cross, kendall_against_all_pairs)
{
    for (int trial = 0; trial < 20; trial++) {
        size_t m = 2 + (size_t)(test_uniform01(&rng_state) * 299), n = 7;
        double *A = calloc(m * n, sizeof *A);
        cr_assert_not_null(A);
        long conc = 0, disc = 0, ties = 0;
        size_t *a = malloc(m * sizeof *a);
        cr_assert_not_null(a);
        for (size_t i = 0; i < m; i++) {
            /* a drifting alignment: mostly forward, sometimes back */
            double t = (double)i * n / (double)m + 3 * (test_uniform01(&rng_state) - 0.5);
            a[i] = (size_t)fmin((double)(n - 1), fmax(0, floor(t)));
            A[i * n + a[i]] = 0.6;
            A[i * n + (a[i] + 1) % n] = 0.4;
        }
        for (size_t i = 0; i < m; i++)
            for (size_t j = i + 1; j < m; j++)
                if (a[j] > a[i])
                    conc++;
                else if (a[j] < a[i])
                    disc++;
                else
                    ties++;
        double P = (double)m * (double)(m - 1) / 2;
        ag_record r = run(A, m, n);
        if (ties == (long)P) {
            expect_null(&r, AG_M_ALIGNMENT_KENDALL);
        } else {
            double tau = (double)(conc - disc) / sqrt(P * (P - (double)ties));
            expect_num(&r, AG_M_ALIGNMENT_KENDALL, tau, 8 * EPS);
        }
        free(a);
        free(A);
    }
}

/* The null cases: one target (m = 1: no pair); one source (n = 1: the
 * argmax is constant, ln n = 0; the one source holds all the mass,
 * coverage 1); a negative entry (coverage and entropy need masses; the
 * argmax is still defined); the zero matrix (T = 0; every H_i = 0). */
Test(cross, null_cases)
{
    const double row[4] = {0.1, 0.2, 0.3, 0.4};
    ag_record r = run(row, 1, 4);
    expect_null(&r, AG_M_ALIGNMENT_MONOTONICITY);
    expect_null(&r, AG_M_ALIGNMENT_KENDALL);
    expect_num(&r, AG_M_SOURCE_COVERAGE, 0.5, 0);
    const double col[3] = {1, 1, 1};
    r = run(col, 3, 1);
    expect_null(&r, AG_M_ALIGNMENT_MONOTONICITY);
    expect_null(&r, AG_M_ALIGNMENT_KENDALL);
    expect_num(&r, AG_M_SOURCE_COVERAGE, 1, 0);
    expect_null(&r, AG_M_CROSS_ENTROPY_NORMALIZED);
    const double neg[6] = {0.9, 0.2, -0.1, -0.1, 0.2, 0.9};
    r = run(neg, 2, 3);
    expect_num(&r, AG_M_ALIGNMENT_MONOTONICITY, 1, 4 * EPS);
    expect_num(&r, AG_M_ALIGNMENT_KENDALL, 1, 0);
    expect_null(&r, AG_M_SOURCE_COVERAGE);
    expect_null(&r, AG_M_CROSS_ENTROPY_NORMALIZED);
    const double zero[6] = {0};
    r = run(zero, 2, 3);
    expect_null(&r, AG_M_ALIGNMENT_MONOTONICITY);
    expect_null(&r, AG_M_SOURCE_COVERAGE);
    expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, 0, 0);
}

/* Every key but the entropy is invariant under A → 2^k·A (the argmax and
 * the share of sources are; the sums run on the scaled matrix), also where
 * the sums of A itself would overflow (k = 1020) or fall below the normal
 * range (k = −1060). */
Test(cross, scale_invariance)
{
    enum { m = 5, n = 8 };
    double A[m * n], B[m * n];
    for (size_t k = 0; k < m * n; k++)
        A[k] = test_uniform01(&rng_state);
    ag_record r = run(A, m, n);
    const int ks[] = {1020, -1060, 7};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        for (size_t k = 0; k < m * n; k++)
            B[k] = ldexp(A[k], ks[t]);
        ag_record s = run(B, m, n);
        for (int key = AG_M_ALIGNMENT_MONOTONICITY; key <= AG_M_SOURCE_COVERAGE; key++)
            expect_num(&s, (ag_metric)key, r.value[key], 0);
    }
}

/* The selections: `cross` is a family of every command on matrices, not in
 * the default one; ag_metric_set_default_shape adds it for a rectangular
 * matrix only, and only where the command computes it. */
Test(cross, selections)
{
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, NULL, &sel, &err), AG_OK);
    cr_assert(!ag_metric_set_has(sel, AG_M_SOURCE_COVERAGE));
    ag_metric_set_default_shape(sel, AG_FAMILIES_MATRIX, 4, 4);
    cr_assert(!ag_metric_set_has(sel, AG_M_SOURCE_COVERAGE) &&
              ag_metric_set_has(sel, AG_M_ENTROPY_MEAN));
    ag_metric_set_default_shape(sel, AG_FAMILIES_MATRIX, 3, 4);
    for (int k = AG_M_ALIGNMENT_MONOTONICITY; k <= AG_M_CROSS_ENTROPY_NORMALIZED; k++)
        cr_assert(ag_metric_set_has(sel, k), "%s", ag_metric_name((ag_metric)k));
    cr_assert(ag_metric_set_has(sel, AG_M_SIGMA_MAX) && !ag_metric_set_has(sel, AG_M_EDGES));
    ag_metric_set_default_shape(sel, AG_FAMILIES_WEIGHTS, 3, 4);
    cr_assert(!ag_metric_set_has(sel, AG_M_SOURCE_COVERAGE));
    cr_assert_eq(ag_metric_set_parse_families(sel, "cross", AG_FAMILIES_MATRIX, &err), AG_OK);
    cr_assert_eq(ag_metric_set_count(sel), 4);
    cr_assert_str_eq(ag_family_name(AG_FAMILY_CROSS), "cross");
    cr_assert_eq(ag_metric_family(AG_M_SOURCE_COVERAGE), AG_FAMILY_CROSS);
    ag_metric_set_free(sel);
}

/* On a causal square A the two normalised entropies differ: rows uniform
 * over keys 0..i (n = 3) have H_i = ln(i + 1); entropy_normalized divides
 * each by ln s_i, s_i = i + 1, over the rows with s_i ≥ 2: 1; family M
 * always by ln n: (0 + ln 2 + ln 3)/(3 ln 3). Every argmax is 0 (ties go
 * to the smallest j): the alignment keys are null. */
Test(cross, causal_square_entropies)
{
    const double A[9] = {1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    ag_record r = run(A, 3, 3);
    expect_bool(&r, AG_M_CAUSAL, 1);
    expect_num(&r, AG_M_ENTROPY_NORMALIZED, 1, 4 * EPS);
    expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, (log(2) + log(3)) / (3 * log(3)), 4 * EPS);
    expect_null(&r, AG_M_ALIGNMENT_MONOTONICITY);
    expect_null(&r, AG_M_ALIGNMENT_KENDALL);
    /* c = (11/6, 5/6, 1/3) against T/n = 1: only source 0 */
    expect_num(&r, AG_M_SOURCE_COVERAGE, 1.0 / 3, 0);
}

/* ---- the cross-attention of an encoder–decoder pass ---------------------- */

typedef struct {
    ag_metric_set *sel;
    int views, heads;
} s2s_check;

/* Each head of each AG_STACK_CROSS view, [n_tgt × n_src], through the
 * matrix metrics with the default selection of its shape: rows of
 * probabilities (row_sum_error at rounding level); the square-only keys
 * null; the two normalised entropies the same number (no rectangular
 * matrix is causal: s_i = n); at least one source reaches its uniform share
 * (the largest column sum is at least the mean T/n), so coverage ≥ 1/n; the
 * rank correlations in [−1, 1] or null. */
static int s2s_cross_view(const ag_layer_view *v, void *user)
{
    s2s_check *c = user;
    if (v->stack != AG_STACK_CROSS)
        return AG_OK;
    c->views++;
    for (int h = 0; h < v->n_head; h++, c->heads++) {
        const double *M = v->attn + (size_t)h * v->n * v->n_kv;
        ag_record r;
        ag_error err = {0};
        ag_record_init(&r, v->layer, h, 0, 0);
        cr_assert_eq(ag_matrix_metrics(M, v->n, v->n_kv, c->sel, &r, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(r.rows, v->n);
        cr_assert_eq(r.cols, v->n_kv);
        cr_assert_leq(r.value[AG_M_ROW_SUM_ERROR], 1e-12);
        expect_null(&r, AG_M_LAMBDA2_ABS);
        expect_null(&r, AG_M_SELF_MASS);
        expect_null(&r, AG_M_CAUSAL);
        double en = r.value[AG_M_ENTROPY_NORMALIZED];
        expect_num(&r, AG_M_CROSS_ENTROPY_NORMALIZED, en, 4 * EPS);
        cr_assert(r.value[AG_M_SOURCE_COVERAGE] >= 1.0 / (double)v->n_kv - EPS &&
                  r.value[AG_M_SOURCE_COVERAGE] <= 1);
        for (int k = AG_M_ALIGNMENT_MONOTONICITY; k <= AG_M_ALIGNMENT_KENDALL; k++)
            cr_assert(r.kind[k] == AG_V_NULL || fabs(r.value[k]) <= 1, "%s = %g",
                      ag_metric_name((ag_metric)k), r.value[k]);
    }
    return AG_OK;
}

/* T5 and BART's test folders (tests/engine/test_seq2seq.c checks their
 * attention against Hugging Face's float64 reference): 7 source tokens, 4
 * target tokens, every head of every decoder layer's cross-attention. */
Test(cross, seq2seq_cross_attention)
{
    static const char *const folders[] = {"tests/data/models/arch/t5",
                                          "tests/data/models/arch/bart"};
    const int32_t src[7] = {5, 17, 3, 40, 22, 9, 1}, tgt[4] = {0, 12, 30, 7};
    for (size_t f = 0; f < sizeof folders / sizeof *folders; f++) {
        ag_seq2seq *s = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_seq2seq_load(folders[f], &s, &err), AG_OK, "%s", err.message);
        s2s_check c = {0};
        cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, NULL, &c.sel, &err), AG_OK);
        ag_metric_set_default_shape(c.sel, AG_FAMILIES_MATRIX, 4, 7);
        ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
        o.precision = AG_PRECISION_F64;
        cr_assert_eq(ag_seq2seq_forward(s, src, 7, tgt, 4, &o, s2s_cross_view, &c, NULL, NULL,
                                        &err),
                     AG_OK, "%s: %s", folders[f], err.message);
        const ag_model_config *g = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_DECODER));
        cr_assert_eq(c.views, g->n_layer, "%s", folders[f]);
        cr_assert_eq(c.heads, g->n_layer * g->n_head);
        ag_metric_set_free(c.sel);
        ag_seq2seq_free(s);
    }
}
