/* test_parallel.c — the worker pool (attngeom/parallel.h): every task runs
 * exactly once, the status is the lowest failed task's for any thread
 * count, nested runs happen in place, and worker numbers stay in range. */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "attngeom/parallel.h"

enum { N_TASKS = 1000 };

typedef struct {
    atomic_int runs[N_TASKS];
    int worker_of[N_TASKS];
    int threads;
    size_t fail_from; /* tasks ≥ this that are multiples of 7 fail */
    ag_pool *pool;
    atomic_int nested_sum;
} job;

static int count_task(size_t i, int worker, void *user)
{
    job *j = user;
    atomic_fetch_add(&j->runs[i], 1);
    j->worker_of[i] = worker;
    if (worker < 0 || worker >= j->threads || worker != ag_pool_worker())
        return 99;
    if (i >= j->fail_from && i % 7 == 0)
        return 10 + (int)(i % 5);
    return 0;
}

Test(parallel, every_task_once_for_each_thread_count)
{
    for (int t = 1; t <= 4; t++) {
        ag_pool *p;
        cr_assert_eq(ag_pool_new(t, &p, NULL), AG_OK);
        cr_assert_eq(ag_pool_threads(p), t);
        for (int rep = 0; rep < 20; rep++) {
            job *j = calloc(1, sizeof *j);
            j->threads = t;
            j->fail_from = SIZE_MAX;
            cr_assert_eq(ag_pool_run(p, N_TASKS, count_task, j), 0);
            for (int i = 0; i < N_TASKS; i++)
                cr_assert_eq(atomic_load(&j->runs[i]), 1, "t=%d task %d ran %d times", t, i,
                             atomic_load(&j->runs[i]));
            free(j);
        }
        cr_assert_eq(ag_pool_worker(), 0);
        ag_pool_free(p);
    }
}

/* Task 350 (= 7·50) is the lowest failure: status 10 + 350 % 5 = 10, and
 * every task below it ran exactly once. */
Test(parallel, lowest_failed_task_decides)
{
    for (int t = 1; t <= 4; t++) {
        ag_pool *p;
        cr_assert_eq(ag_pool_new(t, &p, NULL), AG_OK);
        for (int rep = 0; rep < 20; rep++) {
            job *j = calloc(1, sizeof *j);
            j->threads = t;
            j->fail_from = 345;
            cr_assert_eq(ag_pool_run(p, N_TASKS, count_task, j), 10);
            for (int i = 0; i <= 350; i++)
                cr_assert_eq(atomic_load(&j->runs[i]), 1);
            free(j);
        }
        ag_pool_free(p);
    }
}

static int inner_task(size_t i, int worker, void *user)
{
    job *j = user;
    atomic_fetch_add(&j->nested_sum, (int)i + 1);
    return worker == ag_pool_worker() ? 0 : 1;
}

static int outer_task(size_t i, int worker, void *user)
{
    job *j = user;
    atomic_fetch_add(&j->runs[i], 1);
    /* nested: runs in this thread, with this worker number */
    return ag_pool_run(j->pool, 10, inner_task, j);
}

Test(parallel, nested_runs_in_place)
{
    ag_pool *p;
    cr_assert_eq(ag_pool_new(3, &p, NULL), AG_OK);
    job *j = calloc(1, sizeof *j);
    j->pool = p;
    cr_assert_eq(ag_pool_run(p, 50, outer_task, j), 0);
    cr_assert_eq(atomic_load(&j->nested_sum), 50 * 55);
    free(j);
    ag_pool_free(p);
}

Test(parallel, null_pool_and_bad_counts)
{
    job *j = calloc(1, sizeof *j);
    j->threads = 1;
    j->fail_from = SIZE_MAX;
    cr_assert_eq(ag_pool_run(NULL, 100, count_task, j), 0);
    cr_assert_eq(atomic_load(&j->runs[99]), 1);
    cr_assert_eq(ag_pool_run(NULL, 0, count_task, j), 0);
    free(j);
    ag_pool *p = (ag_pool *)1;
    ag_error err = {0};
    cr_assert_eq(ag_pool_new(0, &p, &err), AG_EINVAL);
    cr_assert_null(p);
    cr_assert_eq(ag_pool_new(AG_POOL_THREADS_MAX + 1, &p, &err), AG_EINVAL);
    cr_assert_eq(ag_pool_threads(NULL), 1);
    ag_pool_free(NULL);
}
