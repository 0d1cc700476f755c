/* test_parallel_metrics.c — the library under threads (attngeom/core.h,
 * "Threads"; attngeom/parallel.h): the metrics of many heads computed at
 * once, one pool task per head, equal the serial results bit for bit for
 * every thread count — families A–C and F (ag_matrix_metrics_ex, every key)
 * on causal and bidirectional heads of several sizes, family E
 * (ag_stability_metrics: its random trials draw from a generator of their
 * own per call) and family D (ag_weight_metrics). OpenBLAS runs one thread
 * per call, as in the CLI: a call split over OpenBLAS's threads would sum in
 * an order of their count's. */
#include <criterion/criterion.h>

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

TestSuite(parallel_metrics);

enum { HEADS = 24, MAX_THREADS = 4 };

/* The same bits: kinds, values (as bytes, so NaN equals NaN), sizes. */
static void expect_same_record(const ag_record *a, const ag_record *b, const char *what, size_t i,
                               int threads)
{
    cr_assert(a->rows == b->rows && a->cols == b->cols && a->layer == b->layer &&
                  a->head == b->head,
              "%s %zu, %d threads: the record's sizes differ", what, i, threads);
    cr_assert(memcmp(a->kind, b->kind, sizeof a->kind) == 0, "%s %zu, %d threads: kinds differ",
              what, i, threads);
    for (int m = 0; m < AG_M_COUNT; m++)
        cr_assert(memcmp(&a->value[m], &b->value[m], sizeof(double)) == 0,
                  "%s %zu, %d threads: %s = %.17g, serially %.17g", what, i, threads,
                  ag_metric_name((ag_metric)m), a->value[m], b->value[m]);
}

/* fn on tasks 0..count-1 one after the other (the reference), then on
 * pools of 1..MAX_THREADS threads: the records rec[count] the tasks fill
 * must be the serial ones bit for bit each time. */
static void expect_pool_equals_serial(size_t count, ag_task_fn fn, void *job, ag_record *rec,
                                      const char *what)
{
    ag_record *serial = malloc(count * sizeof *serial);
    for (size_t i = 0; i < count; i++) {
        cr_assert_eq(fn(i, 0, job), AG_OK, "%s %zu failed", what, i);
        serial[i] = rec[i];
    }
    for (int t = 1; t <= MAX_THREADS; t++) {
        ag_pool *p;
        cr_assert_eq(ag_pool_new(t, &p, NULL), AG_OK);
        memset(rec, 0xff, count * sizeof *rec);
        cr_assert_eq(ag_pool_run(p, count, fn, job), AG_OK);
        for (size_t i = 0; i < count; i++)
            expect_same_record(&rec[i], &serial[i], what, i, t);
        ag_pool_free(p);
    }
    free(serial);
}

/* ---- families A–C and F ---- */

typedef struct {
    double *A[HEADS];
    size_t n[HEADS];
    ag_metric_set all;
    ag_record rec[HEADS];
} matrix_job;

static int matrix_task(size_t i, int worker, void *user)
{
    (void)worker;
    matrix_job *j = user;
    ag_matrix_options o = AG_MATRIX_OPTIONS_DEFAULT;
    ag_record_init(&j->rec[i], 0, (int)i, 0, 0);
    return ag_matrix_metrics_ex(j->A[i], j->n[i], j->n[i], &j->all, &o, &j->rec[i], NULL);
}

Test(parallel_metrics, matrix_metrics_of_heads_at_once_equal_serial)
{
    openblas_set_num_threads(1);
    static const size_t sizes[] = {5, 17, 33, 64};
    matrix_job *j = calloc(1, sizeof *j);
    unsigned long long state = 0x9E3779B97F4A7C15ull;
    ag_metric_set_parse(&j->all, "all", NULL);
    for (size_t i = 0; i < HEADS; i++) {
        j->n[i] = sizes[i % 4];
        j->A[i] = malloc(j->n[i] * j->n[i] * sizeof(double));
        test_random_attention(j->A[i], j->n[i], (int)(i / 4) % 2, 6.0, &state);
    }
    expect_pool_equals_serial(HEADS, matrix_task, j, j->rec, "head");
    for (size_t i = 0; i < HEADS; i++)
        cr_assert(j->rec[i].kind[AG_M_SIGMA_MAX] == AG_V_NUMBER &&
                      j->rec[i].kind[AG_M_OLLIVIER_MEAN] == AG_V_NUMBER,
                  "head %zu: families A and F not computed", i);
    for (size_t i = 0; i < HEADS; i++)
        free(j->A[i]);
    free(j);
}

/* ---- family E: a random head input per task ---- */

enum { N = 12, D = 16, DH = 4 };

typedef struct {
    double x[HEADS][N * D], wq[HEADS][D * DH], wk[HEADS][D * DH];
    ag_metric_set stab;
    ag_record rec[HEADS];
} stability_job;

static int stability_task(size_t i, int worker, void *user)
{
    (void)worker;
    stability_job *j = user;
    ag_head_input in = {.x = j->x[i], .n = N, .d = D, .wq = j->wq[i], .wk = j->wk[i], .d_h = DH,
                        .causal = (int)(i % 2)};
    ag_stability_options opt = {.size = sizeof(ag_stability_options),
                                .epsilon = 1e-3, .trials = 4, .seed = 7};
    ag_record_init(&j->rec[i], 0, (int)i, N, N);
    return ag_stability_metrics(&in, &opt, &j->stab, &j->rec[i], NULL);
}

Test(parallel_metrics, stability_of_heads_at_once_equals_serial)
{
    openblas_set_num_threads(1);
    stability_job *j = calloc(1, sizeof *j);
    unsigned long long state = 12345;
    for (size_t i = 0; i < HEADS; i++) {
        for (size_t k = 0; k < N * D; k++)
            j->x[i][k] = 2 * test_uniform01(&state) - 1;
        for (size_t k = 0; k < D * DH; k++) {
            j->wq[i][k] = test_uniform01(&state) - 0.5;
            j->wk[i][k] = test_uniform01(&state) - 0.5;
        }
    }
    cr_assert_eq(ag_metric_set_parse(&j->stab, "stability", NULL), AG_OK);
    expect_pool_equals_serial(HEADS, stability_task, j, j->rec, "stability head");
    for (size_t i = 0; i < HEADS; i++)
        cr_assert_eq(j->rec[i].kind[AG_M_SENSITIVITY], AG_V_NUMBER, "head %zu computed nothing", i);
    free(j);
}

/* ---- family D: the heads of one random layer ---- */

typedef struct {
    double wq[D * D], wk[D * D], wv[D * D], wo[D * D]; /* D/DH heads of DH columns */
    ag_metric_set weights;
    ag_record rec[D / DH];
} weights_job;

static int weights_task(size_t h, int worker, void *user)
{
    (void)worker;
    weights_job *j = user;
    ag_head_factors f = {.d = D, .d_h = DH, .d_out = D,
                         .wq = j->wq + h * DH, .ldq = D, .wk = j->wk + h * DH, .ldk = D,
                         .wv = j->wv + h * DH, .ldv = D, .wo = j->wo + h * DH * D, .ldo = D};
    ag_record_init(&j->rec[h], 0, (int)h, D, D);
    return ag_weight_metrics(&f, &j->weights, &j->rec[h], NULL);
}

Test(parallel_metrics, weight_metrics_of_heads_at_once_equal_serial)
{
    openblas_set_num_threads(1);
    weights_job *j = calloc(1, sizeof *j);
    unsigned long long state = 777;
    for (size_t k = 0; k < D * D; k++) {
        j->wq[k] = test_uniform01(&state) - 0.5;
        j->wk[k] = test_uniform01(&state) - 0.5;
        j->wv[k] = test_uniform01(&state) - 0.5;
        j->wo[k] = test_uniform01(&state) - 0.5;
    }
    cr_assert_eq(ag_metric_set_parse(&j->weights, "weights", NULL), AG_OK);
    expect_pool_equals_serial(D / DH, weights_task, j, j->rec, "weights head");
    for (size_t h = 0; h < D / DH; h++)
        cr_assert_eq(j->rec[h].kind[AG_M_QK_SIGMA_MAX], AG_V_NUMBER, "head %zu computed nothing", h);
    free(j);
}
