/* test_probe.c — the induction probe's scores (ag_induction_probe_metrics;
 * docs/metrics.md, "The induction probe") on matrices whose values are
 * derived in closed form below: a head that attends only to i − T + 1 on
 * the rows of blocks 2..R scores 1, uniform attention scores its baseline,
 * a duplicate-token head (on i − T) scores 0. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layout of records
#include "../util/test_metrics_util.h"

TestSuite(probe);

/* The probe's record of A (n×n), its blocks of T from `start`, R of them. */
static ag_record probe(const double *A, size_t n, int causal, size_t start, size_t T, int R)
{
    ag_record r;
    ag_error err = {0};
    ag_record_init(&r, 0, 0, n, n);
    cr_assert_eq(ag_induction_probe_metrics(A, n, causal, start, T, R, &r, &err), AG_OK, "%s",
                 err.message);
    return r;
}

/* Causal attention: row i on key target(i) alone for the rows of blocks
 * 2..R, uniform over its i + 1 keys elsewhere. */
static double *stripe(size_t n, size_t start, size_t T, int R, long offset)
{
    double *A = test_square(n);
    for (size_t i = 0; i < n; i++) {
        int later = i >= start + T && i < start + (size_t)R * T;
        for (size_t j = 0; j <= i; j++)
            A[i * n + j] = later ? (long)j == (long)i + offset : 1.0 / (double)(i + 1);
    }
    return A;
}

/* Every row of blocks 2..R on i − T + 1 alone: induction_score is a mean
 * of ones, exactly 1, at any size, prefix and number of copies. The
 * baseline is the mean of 1/(i + 1) over those rows i = start + T ...
 * start + R·T − 1: (H_{start+R·T} − H_{start+T}) / ((R − 1)·T), H the
 * harmonic numbers, summed here in the other order. */
Test(probe, induction_stripe_scores_one)
{
    static const size_t starts[] = {0, 1, 3};
    for (size_t s = 0; s < 3; s++)
        for (size_t T = 1; T <= 9; T += 4)
            for (int R = 2; R <= 4; R++) {
                size_t start = starts[s], n = start + (size_t)R * T + 1; /* and an EOS */
                double *A = stripe(n, start, T, R, 1 - (long)T);
                ag_record r = probe(A, n, -1, start, T, R);
                double h = 0;
                for (size_t k = start + (size_t)R * T; k > start + T; k--)
                    h += 1.0 / (double)k;
                expect_num(&r, AG_M_INDUCTION_SCORE, 1, 0);
                expect_num(&r, AG_M_INDUCTION_BASELINE, h / (double)((size_t)(R - 1) * T),
                           8 * DBL_EPSILON);
                free(A);
            }
}

/* The duplicate-token head (i − T, the previous copy itself) puts nothing
 * on i − T + 1 when T ≥ 2: the score is exactly 0. */
Test(probe, duplicate_head_scores_zero)
{
    size_t T = 5, n = 1 + 3 * T;
    double *A = stripe(n, 1, T, 3, -(long)T);
    ag_record r = probe(A, n, -1, 1, T, 3);
    expect_num(&r, AG_M_INDUCTION_SCORE, 0, 0);
    free(A);
}

/* Uniform attention scores its baseline: causal, A_{i,i−T+1} = 1/(i + 1)
 * on each row, the very terms of the baseline; bidirectional, 1/n on every
 * row, both 1/n. */
Test(probe, uniform_scores_its_baseline)
{
    size_t T = 7, n = 2 + 2 * T;
    double *C = stripe(n, 1, T, 1, 0), *U = test_square(n); /* R = 1: no stripe */
    for (size_t k = 0; k < n * n; k++)
        U[k] = 1.0 / (double)n;
    ag_record c = probe(C, n, -1, 1, T, 2), u = probe(U, n, -1, 1, T, 2);
    cr_assert_eq(c.value[AG_M_INDUCTION_SCORE], c.value[AG_M_INDUCTION_BASELINE]);
    expect_num(&u, AG_M_INDUCTION_SCORE, 1.0 / (double)n, 2 * DBL_EPSILON);
    expect_num(&u, AG_M_INDUCTION_BASELINE, 1.0 / (double)n, 2 * DBL_EPSILON);
    /* causal given as 1 on a matrix that is not: k_i = i + 1 all the same */
    ag_record forced = probe(U, n, 1, 1, T, 2);
    expect_num(&forced, AG_M_INDUCTION_BASELINE, c.value[AG_M_INDUCTION_BASELINE], 0);
    free(C);
    free(U);
}

/* Only the two keys are set; the others stay absent. */
Test(probe, sets_two_keys)
{
    size_t T = 2, n = 4;
    double *A = stripe(n, 0, T, 2, 1 - (long)T);
    ag_record r = probe(A, n, -1, 0, T, 2);
    for (int m = 0; m < AG_M_COUNT; m++)
        if (m != AG_M_INDUCTION_SCORE && m != AG_M_INDUCTION_BASELINE)
            cr_assert_eq(r.kind[m], AG_V_ABSENT, "%s set", ag_metric_name((ag_metric)m));
    free(A);
}

Test(probe, errors)
{
    size_t n = 6;
    double *A = stripe(n, 0, 3, 2, -2);
    ag_record r;
    ag_error err = {0};
    ag_record_init(&r, 0, 0, n, n);
    cr_assert_eq(ag_induction_probe_metrics(A, n, -1, 0, 3, 1, &r, &err), AG_EINVAL);
    cr_assert_eq(ag_induction_probe_metrics(A, n, -1, 0, 0, 2, &r, &err), AG_EINVAL);
    cr_assert_eq(ag_induction_probe_metrics(A, n, -1, 1, 3, 2, &r, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "2 blocks of 3 tokens from position 1"), "%s", err.message);
    cr_assert_eq(ag_induction_probe_metrics(NULL, n, -1, 0, 3, 2, &r, &err), AG_EINVAL);
    A[4 * n + 1] = NAN;
    cr_assert_eq(ag_induction_probe_metrics(A, n, -1, 0, 3, 2, &r, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "row 4, column 1"), "%s", err.message);
    cr_assert_eq(r.kind[AG_M_INDUCTION_SCORE], AG_V_ABSENT);
    free(A);
}
