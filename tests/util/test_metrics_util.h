/* test_metrics_util.h — what the tests of the matrix metrics share: every
 * key of one matrix, checks of one key's kind and value, and reproducible
 * random numbers (Marsaglia's xorshift64; each test file keeps its own
 * state) and random attention. */
#ifndef AG_TEST_METRICS_UTIL_H
#define AG_TEST_METRICS_UTIL_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

/* Every key (--metrics all) of the m×n M at edge threshold tau (< 0: the
 * default 1/n); the call must succeed. */
static inline ag_record run_tau(const double *M, size_t m, size_t n, double tau)
{
    ag_metric_set all;
    ag_error err = {0};
    ag_record r;
    ag_metric_set_parse(&all, "all", NULL);
    ag_record_init(&r, 0, 0, 0, 0);
    ag_matrix_options o = {.size = sizeof(ag_matrix_options), .edge_threshold = tau};
    cr_assert_eq(ag_matrix_metrics_ex(M, m, n, &all, &o, &r, &err), AG_OK, "%s", err.message);
    return r;
}

static inline ag_record run(const double *M, size_t m, size_t n)
{
    return run_tau(M, m, n, -1);
}

/* The keys (a --metrics list) of the square n×n A on the workspace w (its
 * route counters then tell which algorithm ran); the call must succeed. */
static inline ag_record run_keys(const double *A, size_t n, const char *keys,
                                 ag_matrix_work *w)
{
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, keys, &err), AG_OK, "%s", err.message);
    ag_record_init(&r, 0, 0, 0, 0);
    cr_assert_eq(ag_matrix_metrics_work(A, n, n, &sel, NULL, w, &r, &err), AG_OK, "%s",
                 err.message);
    return r;
}

static inline void expect_num(const ag_record *r, ag_metric k, double want, double tol)
{
    cr_assert_eq(r->kind[k], AG_V_NUMBER, "%s: expected %.17g, got kind %d",
                 ag_metric_name(k), want, r->kind[k]);
    cr_assert(fabs(r->value[k] - want) <= tol, "%s = %.17g, expected %.17g (tol %g)",
              ag_metric_name(k), r->value[k], want, tol);
}

/* expect_num to rtol relative to |want|, absolute below |want| = 1 (where
 * relative would ask for more than the key's rounding near 0). */
static inline void expect_num_rel(const ag_record *r, ag_metric k, double want, double rtol)
{
    expect_num(r, k, want, rtol * fmax(1, fabs(want)));
}

static inline void expect_int(const ag_record *r, ag_metric k, long want)
{
    cr_assert_eq(r->kind[k], AG_V_INTEGER, "%s: not an integer (kind %d)", ag_metric_name(k),
                 r->kind[k]);
    cr_assert_eq((long)r->value[k], want, "%s = %g, expected %ld",
                 ag_metric_name(k), r->value[k], want);
}

static inline void expect_bool(const ag_record *r, ag_metric k, int want)
{
    cr_assert_eq(r->kind[k], AG_V_BOOL, "%s: not a boolean", ag_metric_name(k));
    cr_assert_eq(r->value[k] != 0, want, "%s = %g", ag_metric_name(k), r->value[k]);
}

static inline void expect_null(const ag_record *r, ag_metric k)
{
    cr_assert_eq(r->kind[k], AG_V_NULL, "%s: expected null, got kind %d value %.17g",
                 ag_metric_name(k), r->kind[k], r->value[k]);
}

/* A zero n×n matrix on the heap (the caller frees it). */
static inline double *test_square(size_t n)
{
    double *A = calloc(n * n, sizeof *A);
    cr_assert_not_null(A);
    return A;
}

/* Uniform on [0, 1), 53 bits. */
static inline double test_uniform01(unsigned long long *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* Standard Gaussian (Box–Muller on the xorshift above). */
static inline double test_gaussian(unsigned long long *state)
{
    double u = test_uniform01(state), v = test_uniform01(state);
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* Row-wise softmax of logits spread·(u − ½) into the (n, n) A, optionally
 * causal (row i over keys 0..i, exact zeros above the diagonal). */
static inline void test_random_attention(double *A, size_t n, int causal, double spread,
                                         unsigned long long *state)
{
    for (size_t i = 0; i < n; i++) {
        size_t s = causal ? i + 1 : n;
        double z = 0;
        for (size_t j = 0; j < n; j++) {
            A[i * n + j] = j < s ? exp(spread * (test_uniform01(state) - 0.5)) : 0.0;
            z += A[i * n + j];
        }
        for (size_t j = 0; j < s; j++)
            A[i * n + j] /= z;
    }
}

#endif
