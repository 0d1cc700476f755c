/* test_detectors.c — the head detectors of family B (docs/metrics.md,
 * family B, "Head detectors"): prev_token_ratio and self_ratio of every
 * square matrix, and the token-pattern keys of ag_token_pattern_metrics
 * (duplicate_token_score, induction_score and their uniform baselines),
 * on matrices whose values are derived in closed form or by hand below.
 * tests/python/test_detectors.py checks the token-pattern keys against a
 * port of TransformerLens's head_detector on random patterns. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

#define EPS DBL_EPSILON

TestSuite(detectors);

/* ---- prev_token_ratio, self_ratio: closed forms ------------------------- */

/* Uniform causal attention, A_ij = 1/(i+1) for j ≤ i: every row i ≥ 1 has
 * k_i = i + 1 ≥ 2 keys and A_ii·k_i = A_{i,i−1}·k_i = 1; row 0 (one key) is
 * left out. Uniform non-causal, A_ij = 1/n: k_i = n on every row, the
 * products are 1 again (self_ratio over rows 0..n−1, prev_token_ratio over
 * 1..n−1). Both ratios are 1 at every n. */
Test(detectors, uniform_ratios_are_one)
{
    for (size_t n = 2; n <= 300; n = n * 3 / 2 + 1) {
        double *C = test_square(n), *U = test_square(n);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                C[i * n + j] = j <= i ? 1.0 / (double)(i + 1) : 0;
                U[i * n + j] = 1.0 / (double)n;
            }
        ag_record c = run(C, n, n), u = run(U, n, n);
        expect_bool(&c, AG_M_CAUSAL, 1);
        expect_bool(&u, AG_M_CAUSAL, 0);
        /* each term is 1 within an ulp or two (1/(i+1) rounded, times
         * i + 1), and so is their mean */
        expect_num(&c, AG_M_PREV_TOKEN_RATIO, 1, 4 * EPS);
        expect_num(&c, AG_M_SELF_RATIO, 1, 4 * EPS);
        expect_num(&u, AG_M_PREV_TOKEN_RATIO, 1, 4 * EPS);
        expect_num(&u, AG_M_SELF_RATIO, 1, 4 * EPS);
        free(C);
        free(U);
    }
}

/* The causal shift by one: row 0 on itself, row i ≥ 1 on i − 1 only (lower
 * triangular, so causal, k_i = i + 1). prev_token_ratio averages
 * A_{i,i−1}·k_i = 1·(i + 1) over the rows i = 1 … n − 1:
 *   (1/(n − 1)) Σ_{i=1}^{n−1} (i + 1) = (1/(n − 1))·[(n − 1)n/2 + (n − 1)]
 *   = n/2 + 1 = (n + 2)/2.
 * self_ratio: row 0 has one key and is left out; A_ii = 0 on every other
 * row, so 0. The identity is the same with the two keys swapped: A_ii = 1,
 * self_ratio = (1/(n − 1)) Σ_{i≥1} (i + 1) = (n + 2)/2, prev_token_ratio
 * 0. The sums are of integers below 2^53, exact. */
Test(detectors, causal_shift_closed_form)
{
    for (size_t n = 2; n <= 400; n = n * 2 + 1) {
        double *S = test_square(n), *I = test_square(n);
        S[0] = 1;
        for (size_t i = 0; i < n; i++) {
            I[i * n + i] = 1;
            if (i)
                S[i * n + i - 1] = 1;
        }
        ag_record s = run(S, n, n), id = run(I, n, n);
        expect_bool(&s, AG_M_CAUSAL, 1);
        expect_num(&s, AG_M_PREV_TOKEN_RATIO, ((double)n + 2) / 2, 0);
        expect_num(&s, AG_M_SELF_RATIO, 0, 0);
        expect_num(&id, AG_M_SELF_RATIO, ((double)n + 2) / 2, 0);
        expect_num(&id, AG_M_PREV_TOKEN_RATIO, 0, 0);
        free(S);
        free(I);
    }
}

/* The cyclic shift P_{i,i−1 mod n} = 1 is not causal (row 0 reads key
 * n − 1): k_i = n on every row, so prev_token_ratio = n (rows 1 … n − 1,
 * each 1·n) and self_ratio 0. */
Test(detectors, cyclic_shift_noncausal)
{
    for (size_t n = 3; n <= 40; n += 9) {
        double *P = test_square(n);
        for (size_t i = 0; i < n; i++)
            P[i * n + (i + n - 1) % n] = 1;
        ag_record r = run(P, n, n);
        expect_bool(&r, AG_M_CAUSAL, 0);
        expect_num(&r, AG_M_PREV_TOKEN_RATIO, (double)n, 0);
        expect_num(&r, AG_M_SELF_RATIO, 0, 0);
        free(P);
    }
}

/* By hand (the matrices of test_roles.c).
 * Not causal, k = 3 on every row:
 *   [0.5 0.3 0.2]   self_ratio 3·(0.5 + 0.6 + 0.2)/3 = 1.3,
 *   [0.1 0.6 0.3]   prev_token_ratio 3·(A_10 + A_21)/2 = 3·0.3/2 = 0.45.
 *   [0.6 0.2 0.2]
 * Causal, rows 1 and 2 (k = 2, 3):
 *   [1    0    0  ]   self_ratio (2·0.75 + 3·0.2)/2 = 1.05,
 *   [0.25 0.75 0  ]   prev_token_ratio (2·0.25 + 3·0.2)/2 = 0.55.
 *   [0.6  0.2  0.2] */
Test(detectors, hand_3x3)
{
    const double A[9] = {0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.6, 0.2, 0.2};
    const double L[9] = {1, 0, 0, 0.25, 0.75, 0, 0.6, 0.2, 0.2};
    ag_record a = run(A, 3, 3), l = run(L, 3, 3);
    expect_num(&a, AG_M_SELF_RATIO, 1.3, 4 * EPS);
    expect_num(&a, AG_M_PREV_TOKEN_RATIO, 0.45, 4 * EPS);
    expect_num(&l, AG_M_SELF_RATIO, 1.05, 4 * EPS);
    expect_num(&l, AG_M_PREV_TOKEN_RATIO, 0.55, 4 * EPS);
}

/* Null: not square (the diagonal is a square matrix's); 1×1 (its one row has one key). The
 * token-pattern keys are null in every record of ag_matrix_metrics, which
 * has no token ids. */
Test(detectors, ratio_null_cases)
{
    double W[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, one[1] = {1};
    ag_record r = run(W, 2, 3);
    expect_null(&r, AG_M_PREV_TOKEN_RATIO);
    expect_null(&r, AG_M_SELF_RATIO);
    r = run(one, 1, 1);
    expect_null(&r, AG_M_PREV_TOKEN_RATIO);
    expect_null(&r, AG_M_SELF_RATIO);
    double U[4] = {0.5, 0.5, 0.5, 0.5};
    r = run(U, 2, 2);
    for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
        expect_null(&r, (ag_metric)m);
}

/* Beyond the range, the ratios are homogeneous like sink_ratio: the 3×3 of
 * 0.75·2^1024 (not causal, k_i = 3) has both ratios 3·0.75·2^1024 >
 * DBL_MAX: null; that of 0.75·2^1021 has 2.25·2^1021 = 1.125·2^1022, a
 * double, exact (the sums run on 0.75, scaled back by 2^1021). */
Test(detectors, ratios_beyond_range)
{
    double C[9], D[9];
    for (int j = 0; j < 9; j++) {
        C[j] = 0.75 * 0x1p1023 * 2;
        D[j] = 0.75 * 0x1p1021;
    }
    ag_record r = run(C, 3, 3), s = run(D, 3, 3);
    expect_null(&r, AG_M_PREV_TOKEN_RATIO);
    expect_null(&r, AG_M_SELF_RATIO);
    expect_num(&s, AG_M_PREV_TOKEN_RATIO, 3 * 0.75 * 0x1p1021, 0);
    expect_num(&s, AG_M_SELF_RATIO, 3 * 0.75 * 0x1p1021, 0);
}

/* "attention" and the default select the new keys; names round-trip. */
Test(detectors, selection)
{
    ag_metric_set sel;
    cr_assert_eq(ag_metric_set_parse(&sel, "attention", NULL), AG_OK);
    for (int m = AG_M_PREV_TOKEN_RATIO; m <= AG_M_INDUCTION_BASELINE; m++) {
        cr_assert(sel.on[m], "%s not in family attention", ag_metric_name((ag_metric)m));
        cr_assert_eq(ag_metric_family((ag_metric)m), AG_FAMILY_ATTENTION);
        cr_assert_eq(ag_metric_from_name(ag_metric_name((ag_metric)m)), m);
    }
    /* the default: the ratios everywhere, the token-id keys only where the
     * command knows the ids (analyze) */
    ag_metric_set_default(&sel);
    cr_assert(sel.on[AG_M_PREV_TOKEN_RATIO] && !sel.on[AG_M_INDUCTION_BASELINE]);
    ag_metric_set *with_ids = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ANALYZE, NULL, &with_ids, NULL), AG_OK);
    cr_assert(ag_metric_set_has(with_ids, AG_M_PREV_TOKEN_RATIO));
    for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
        cr_assert(ag_metric_set_has(with_ids, m));
    ag_metric_set_free(with_ids);
    ag_error e = {0};
    cr_assert_eq(ag_metric_set_parse_families(&sel, "induction_score", AG_FAMILIES_MATRIX, &e),
                 AG_EINVAL);
    cr_assert_str_eq(e.message, "--metrics: 'induction_score' is not computed by this command");
    cr_assert_eq(ag_metric_set_parse_families(&sel, "all", AG_FAMILIES_MATRIX, &e), AG_OK);
    cr_assert(sel.on[AG_M_SELF_RATIO] && !sel.on[AG_M_DUPLICATE_TOKEN_SCORE]);
    cr_assert_str_eq(ag_metric_name(AG_M_PREV_TOKEN_RATIO), "prev_token_ratio");
    cr_assert_str_eq(ag_metric_name(AG_M_SELF_RATIO), "self_ratio");
    cr_assert_str_eq(ag_metric_name(AG_M_DUPLICATE_TOKEN_SCORE), "duplicate_token_score");
    cr_assert_str_eq(ag_metric_name(AG_M_DUPLICATE_TOKEN_BASELINE), "duplicate_token_baseline");
    cr_assert_str_eq(ag_metric_name(AG_M_INDUCTION_SCORE), "induction_score");
    cr_assert_str_eq(ag_metric_name(AG_M_INDUCTION_BASELINE), "induction_baseline");
    cr_assert(AG_M_INDUCTION_BASELINE < AG_M_VALUE_NORM_MEAN &&
                  AG_M_ACT_MASSIVE < AG_M_CONTEXT_MIXING &&
                  AG_M_CONTEXT_MIXING < AG_M_TRIANGLE_VIOLATION &&
                  AG_M_SELF_COST < AG_M_SCORE_STD &&
                  AG_M_SCORE_ASYMMETRY < AG_M_ALIGNMENT_MONOTONICITY &&
                  AG_M_CROSS_ENTROPY_NORMALIZED + 1 == AG_M_COUNT,
              "new keys come last (ABI rule)");
}

/* ---- token-pattern keys ------------------------------------------------- */

/* The four token-pattern keys of A (causal: as ag_token_pattern_metrics
 * takes it) in r, which starts with every key absent. */
static ag_record tokens(const double *A, size_t n, int causal, const int32_t *ids)
{
    ag_metric_set all;
    ag_error err = {0};
    ag_record r;
    ag_metric_set_parse(&all, "all", NULL);
    ag_record_init(&r, 0, 0, n, n);
    cr_assert_eq(ag_token_pattern_metrics(A, n, causal, ids, &all, &r, &err), AG_OK, "%s",
                 err.message);
    for (int m = 0; m < AG_M_COUNT; m++)
        if (m < AG_M_DUPLICATE_TOKEN_SCORE || m > AG_M_INDUCTION_BASELINE)
            cr_assert_eq(r.kind[m], AG_V_ABSENT, "%s touched", ag_metric_name((ag_metric)m));
    return r;
}

static unsigned long long state = 0xD1B54A32D192ED03ULL;

/* ids[0..T−1]: T distinct ids in [0, 50000) (a block with no repeat), then
 * ids[T..2T−1] the same block again. */
static void repeated_block(int32_t *ids, size_t T)
{
    for (size_t i = 0; i < T; i++) {
        int fresh;
        do {
            ids[i] = (int32_t)(test_uniform01(&state) * 50000);
            fresh = 1;
            for (size_t j = 0; j < i; j++)
                fresh &= ids[j] != ids[i];
        } while (!fresh);
        ids[T + i] = ids[i];
    }
}

/* Olsson et al.'s probe: a random block of T distinct tokens, repeated. Row
 * i of the second block (i = T … 2T − 1) holds token ids[i − T], seen
 * before only at i − T: the duplicate pattern has its one 1 at (i, i − T),
 * the induction pattern at (i, i − T + 1) — the token that followed the
 * earlier occurrence; the first block has none (R = the second block, one 1
 * per row). An induction head, whose second-block rows put all their mass
 * on i − T + 1 (the first block's rows anything: uniform here), has
 * induction_score Σ_{i∈R} A_{i,i−T+1} / Σ_{i∈R} Σ_j A_ij = T/T = 1 and
 * duplicate_token_score 0; a duplicate-token head (mass on i − T) the
 * reverse. The baselines, mean over R of c_i/k_i with c_i = 1:
 * causal k_i = i + 1, (1/T) Σ_{i=T}^{2T−1} 1/(i + 1) = (H_2T − H_T)/T;
 * non-causal k_i = 2T, 1/(2T). */
Test(detectors, repeated_block_closed_form)
{
    for (size_t T = 1; T <= 64; T = 2 * T + 1) {
        size_t n = 2 * T;
        int32_t *ids = malloc(n * sizeof *ids);
        double *I = test_square(n), *D = test_square(n), *N = test_square(n), h = 0;
        cr_assert_not_null(ids);
        repeated_block(ids, T);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j <= i && i < T; j++)
                I[i * n + j] = D[i * n + j] = 1.0 / (double)(i + 1);
            for (size_t j = 0; j < n && i < T; j++)
                N[i * n + j] = 1.0 / (double)n;
            if (i >= T) {
                I[i * n + i - T + 1] = N[i * n + i - T + 1] = 1;
                D[i * n + i - T] = 1;
                h += 1.0 / (double)(i + 1);
            }
        }
        for (int causal = -1; causal <= 1; causal += 2) { /* detected, and given */
            ag_record r = tokens(I, n, causal, ids), d = tokens(D, n, causal, ids);
            expect_num(&r, AG_M_INDUCTION_SCORE, 1, 0);
            expect_num(&r, AG_M_DUPLICATE_TOKEN_SCORE, 0, 0);
            expect_num(&d, AG_M_DUPLICATE_TOKEN_SCORE, 1, 0);
            expect_num(&d, AG_M_INDUCTION_SCORE, 0, 0);
            expect_num(&r, AG_M_INDUCTION_BASELINE, h / (double)T, 4 * EPS);
            expect_num(&r, AG_M_DUPLICATE_TOKEN_BASELINE, h / (double)T, 4 * EPS);
        }
        ag_record r = tokens(N, n, -1, ids);
        expect_num(&r, AG_M_INDUCTION_SCORE, 1, 0);
        expect_num(&r, AG_M_INDUCTION_BASELINE, 1.0 / (double)n, 4 * EPS);
        expect_num(&r, AG_M_DUPLICATE_TOKEN_BASELINE, 1.0 / (double)n, 4 * EPS);
        free(ids);
        free(I);
        free(D);
        free(N);
    }
}

/* By hand, ids 7 3 7 3 7 (rows 0-based). Earlier equal ids: row 2 at 0,
 * row 3 at 1, row 4 at 0 and 2: R = {2, 3, 4}, c = 1, 1, 2.
 * TransformerLens's duplicate pattern: (2,0) (3,1) (4,0) (4,2); induction
 * (one column right): (2,1) (3,2) (4,1) (4,3).
 *   row 0 [1                    ]
 *   row 1 [0.5 0.5              ]
 *   row 2 [0.2 0.7 0.1          ]   duplicate: 0.2 + 0.2 + 0.1 + 0.1 = 0.6
 *   row 3 [0.1 0.2 0.6 0.1      ]   induction: 0.7 + 0.6 + 0.4 + 0.3 = 2.0
 *   row 4 [0.1 0.4 0.1 0.3 0.1  ]   mass of R: 1 + 1 + 1 = 3
 * duplicate_token_score 0.6/3 = 0.2, induction_score 2/3. Baselines, causal
 * (k = 3, 4, 5): (1/3 + 1/4 + 2/5)/3 = (59/60)/3 = 59/180; with the mask
 * given as non-causal (k = 5): (1/5 + 1/5 + 2/5)/3 = 4/15.
 * TransformerLens's compute_head_attention_similarity_score divides by the
 * mass of every row, 5: 0.12 and 0.4 — this score times 3/5. */
Test(detectors, hand_5x5)
{
    const double A[25] = {1,   0,   0,   0,   0,   0.5, 0.5, 0,   0,   0,   0.2, 0.7, 0.1,
                          0,   0,   0.1, 0.2, 0.6, 0.1, 0,   0.1, 0.4, 0.1, 0.3, 0.1};
    const int32_t ids[5] = {7, 3, 7, 3, 7};
    ag_record r = tokens(A, 5, -1, ids);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_SCORE, 0.2, 4 * EPS);
    expect_num(&r, AG_M_INDUCTION_SCORE, 2.0 / 3, 4 * EPS);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_BASELINE, 59.0 / 180, 4 * EPS);
    expect_num(&r, AG_M_INDUCTION_BASELINE, 59.0 / 180, 4 * EPS);
    r = tokens(A, 5, 0, ids);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_SCORE, 0.2, 4 * EPS);
    expect_num(&r, AG_M_INDUCTION_BASELINE, 4.0 / 15, 4 * EPS);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_BASELINE, 4.0 / 15, 4 * EPS);
}

/* Adjacent repeats, ids 5 5 5: row 1 has 5 at 0, row 2 at 0 and 1. The
 * induction pattern's 1 for the pair (2, 1) lands on (2, 2), the diagonal,
 * and for (1, 0) on (1, 1): TransformerLens keeps them (its tril keeps the
 * diagonal, exclude_current_token is False). With A = I (every row on
 * itself): induction_score (1 + 1)/2 = 1, duplicate 0. */
Test(detectors, adjacent_repeats_reach_the_diagonal)
{
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const int32_t ids[3] = {5, 5, 5};
    ag_record r = tokens(I, 3, -1, ids);
    expect_num(&r, AG_M_INDUCTION_SCORE, 1, 0);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_SCORE, 0, 0);
    /* baselines: row 1 c = 1, k = 2; row 2 c = 2, k = 3: (1/2 + 2/3)/2 = 7/12 */
    expect_num(&r, AG_M_INDUCTION_BASELINE, 7.0 / 12, 2 * EPS);
}

/* Uniform attention over the allowed keys scores its own baseline, on any
 * ids (here with many repeats), causal or not. */
Test(detectors, uniform_scores_its_baseline)
{
    for (size_t n = 2; n <= 90; n = n * 2 + 3) {
        double *C = test_square(n), *U = test_square(n);
        int32_t *ids = malloc(n * sizeof *ids);
        cr_assert_not_null(ids);
        for (size_t i = 0; i < n; i++) {
            ids[i] = (int32_t)(test_uniform01(&state) * 4);
            for (size_t j = 0; j < n; j++) {
                C[i * n + j] = j <= i ? 1.0 / (double)(i + 1) : 0;
                U[i * n + j] = 1.0 / (double)n;
            }
        }
        ids[1] = ids[0]; /* at least one repeat */
        ag_record c = tokens(C, n, -1, ids), u = tokens(U, n, -1, ids);
        double tol = 8 * (double)n * EPS;
        expect_num(&c, AG_M_DUPLICATE_TOKEN_SCORE, c.value[AG_M_DUPLICATE_TOKEN_BASELINE], tol);
        expect_num(&c, AG_M_INDUCTION_SCORE, c.value[AG_M_INDUCTION_BASELINE], tol);
        expect_num(&u, AG_M_DUPLICATE_TOKEN_SCORE, u.value[AG_M_DUPLICATE_TOKEN_BASELINE], tol);
        expect_num(&u, AG_M_INDUCTION_SCORE, u.value[AG_M_INDUCTION_BASELINE], tol);
        free(C);
        free(U);
        free(ids);
    }
}

/* The scores are ratios summed on 2^-e·A: 2^k·A gives the same bits for
 * any k that keeps A's entries normal. */
Test(detectors, scale_free)
{
    enum { n = 12 };
    double A[n * n], B[n * n];
    int32_t ids[n];
    for (int i = 0; i < n; i++)
        ids[i] = i % 5;
    test_random_attention(A, n, 1, 6, &state);
    ag_record r = tokens(A, n, -1, ids);
    const int ks[] = {-900, -101, -3, 7, 200, 1000};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        for (int k = 0; k < n * n; k++)
            B[k] = ldexp(A[k], ks[t]);
        ag_record s = tokens(B, n, -1, ids);
        for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
            expect_num(&s, (ag_metric)m, r.value[m], 0);
    }
}

/* Null: no ids; no id occurs twice (R empty: every key); R's rows without
 * mass (the scores only). Only selected keys are written. */
Test(detectors, token_null_cases)
{
    const double A[9] = {1, 0, 0, 0.5, 0.5, 0, 0, 0, 0};
    const int32_t distinct[3] = {1, 2, 3}, rep[3] = {1, 2, 1};
    ag_record r = tokens(A, 3, -1, NULL);
    for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
        expect_null(&r, (ag_metric)m);
    r = tokens(A, 3, -1, distinct);
    for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
        expect_null(&r, (ag_metric)m);
    r = tokens(A, 1, -1, distinct); /* 1×1: no earlier token */
    for (int m = AG_M_DUPLICATE_TOKEN_SCORE; m <= AG_M_INDUCTION_BASELINE; m++)
        expect_null(&r, (ag_metric)m);
    r = tokens(A, 3, -1, rep); /* row 2 (R) is all zeros: causal, k = 3 */
    expect_null(&r, AG_M_DUPLICATE_TOKEN_SCORE);
    expect_null(&r, AG_M_INDUCTION_SCORE);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_BASELINE, 1.0 / 3, 0);
    expect_num(&r, AG_M_INDUCTION_BASELINE, 1.0 / 3, 0);

    ag_metric_set sel;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, "induction_score", NULL), AG_OK);
    ag_record_init(&r, 0, 0, 3, 3);
    cr_assert_eq(ag_token_pattern_metrics(A, 3, -1, rep, &sel, &r, &err), AG_OK);
    for (int m = 0; m < AG_M_COUNT; m++)
        cr_assert_eq(r.kind[m], m == AG_M_INDUCTION_SCORE ? AG_V_NULL : AG_V_ABSENT);
}

Test(detectors, token_errors)
{
    double A[4] = {1, 0, 0.5, 0.5};
    const int32_t ids[2] = {4, 4};
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, "attention", NULL), AG_OK); /* token keys too */
    ag_record_init(&r, 0, 0, 2, 2);
    cr_assert_eq(ag_token_pattern_metrics(A, 0, -1, ids, &sel, &r, &err), AG_EINVAL);
    cr_assert_eq(ag_token_pattern_metrics(NULL, 2, -1, ids, &sel, &r, &err), AG_EINVAL);
    A[3] = NAN;
    cr_assert_eq(ag_token_pattern_metrics(A, 2, -1, ids, &sel, &r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "row 1, column 1") != NULL, "%s", err.message);
    A[3] = 0.5;
    cr_assert_eq(ag_token_pattern_metrics(A, 2, -1, ids, &sel, &r, &err), AG_OK);
    expect_num(&r, AG_M_DUPLICATE_TOKEN_SCORE, 0.5, 0);
    expect_num(&r, AG_M_INDUCTION_SCORE, 0.5, 0); /* (1, 1): ids[0] = ids[1] */
    expect_num(&r, AG_M_INDUCTION_BASELINE, 0.5, 0);
}
