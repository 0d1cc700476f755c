/* parallel.c — the worker pool of attngeom/parallel.h.
 *
 * Threads persist for the pool's life and sleep on a condition variable
 * between runs. Tasks are handed out one at a time, in increasing order,
 * under the pool's mutex: tasks here are heads, layers or texts (from a
 * fraction of a millisecond to seconds), so one lock per task costs
 * nothing measurable and keeps the failure rule simple (every task below
 * the lowest failed one has been claimed, hence runs to its end). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "attngeom.h"
#include "parallel_int.h"

struct ag_pool {
    int threads;
    pthread_t *tid;     /* (threads - 1) started workers */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned long generation; /* bumped for each run; workers wait for a change */
    int stop;
    /* the current run */
    size_t count, next, fail_at;
    int fail_status;
    ag_task_fn fn;
    void *user;
    int active; /* started workers still inside the run */
};

/* Which worker this thread is, and whether it is inside a task (a nested
 * ag_pool_run then runs in place). */
static _Thread_local int tl_worker;
static _Thread_local int tl_in_task;

int ag_pool_worker(void)
{
    return tl_in_task ? tl_worker : 0;
}

int ag_pool_threads(const ag_pool *pool)
{
    return pool ? pool->threads : 1;
}

/* Claim and run tasks until none is left or one below them failed. */
static void work(ag_pool *p, int worker)
{
    tl_worker = worker;
    tl_in_task = 1;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (p->next >= p->count || p->next > p->fail_at) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        int rc = p->fn(i, worker, p->user);
        if (rc != 0) {
            pthread_mutex_lock(&p->mu);
            if (i < p->fail_at) {
                p->fail_at = i;
                p->fail_status = rc;
            }
            pthread_mutex_unlock(&p->mu);
        }
    }
    tl_in_task = 0;
    tl_worker = 0;
}

typedef struct {
    ag_pool *pool;
    int worker;
} worker_arg;

static void *worker_main(void *arg)
{
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    ag_pool *p = a.pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->start, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p, a.worker);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_workers(ag_pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        pthread_join(p->tid[i], NULL);
}

/* Start the workers with every signal blocked, so signals (SIGINT, SIGPIPE)
 * reach the thread that called ag_pool_new, as in a program without a pool. */
static int start_workers(ag_pool *p)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = 0;
    for (; started < p->threads - 1; started++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a)
            break;
        a->pool = p;
        a->worker = started + 1;
        if (pthread_create(&p->tid[started], NULL, worker_main, a) != 0) {
            free(a);
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started == p->threads - 1)
        return AG_OK;
    stop_workers(p, started);
    return AG_ENOMEM;
}

int ag_pool_new(int threads, ag_pool **out, ag_error *err)
{
    *out = NULL;
    if (threads < 1 || threads > AG_POOL_THREADS_MAX)
        return ag_error_set(err, AG_EINVAL, "thread count %d is outside 1..%d", threads,
                            AG_POOL_THREADS_MAX);
    ag_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->tid = calloc((size_t)threads, sizeof *p->tid))) {
        free(p);
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    if (start_workers(p) != AG_OK) {
        pthread_cond_destroy(&p->start);
        pthread_cond_destroy(&p->done);
        pthread_mutex_destroy(&p->mu);
        free(p->tid);
        free(p);
        return ag_error_set(err, AG_ENOMEM, "cannot start %d threads", threads);
    }
    *out = p;
    return AG_OK;
}

void ag_pool_free(ag_pool *p)
{
    if (!p)
        return;
    stop_workers(p, p->threads - 1);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p);
}

static int run_in_place(size_t count, ag_task_fn fn, void *user)
{
    int worker = ag_pool_worker(), was_in_task = tl_in_task;
    tl_in_task = 1;
    tl_worker = worker;
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++)
        rc = fn(i, worker, user);
    tl_in_task = was_in_task;
    return rc;
}

int ag_pool_run(ag_pool *p, size_t count, ag_task_fn fn, void *user)
{
    if (count == 0)
        return 0;
    if (!p || p->threads == 1 || tl_in_task)
        return run_in_place(count, fn, user);
    pthread_mutex_lock(&p->mu);
    p->count = count;
    p->next = 0;
    p->fail_at = SIZE_MAX;
    p->fail_status = 0;
    p->fn = fn;
    p->user = user;
    p->active = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->mu);
    int rc = p->fail_at == SIZE_MAX ? 0 : p->fail_status;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* ---- workers ------------------------------------------------------------ */

struct ag_workers {
    ag_pool *pool;
    int own_pool;          /* 0: borrowed (agb_workers_borrow), not freed here */
    ag_matrix_work **work; /* (nwork) one per worker number */
    int nwork;
};

/* Workers on `pool` with `nwork` workspaces (pool's owner: own_pool). */
static int workers_make(ag_pool *pool, int own_pool, int nwork, ag_workers **out, ag_error *err)
{
    *out = NULL;
    ag_workers *w = calloc(1, sizeof *w);
    if (!w) {
        if (own_pool)
            ag_pool_free(pool);
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    w->pool = pool;
    w->own_pool = own_pool;
    int status = AG_OK;
    if (!(w->work = calloc((size_t)nwork, sizeof *w->work)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK)
        w->nwork = nwork;
    for (int k = 0; status == AG_OK && k < nwork; k++)
        status = ag_matrix_work_new(&w->work[k], err);
    if (status != AG_OK)
        ag_workers_free(w);
    else
        *out = w;
    return status;
}

int ag_workers_new(int threads, ag_workers **out, ag_error *err)
{
    *out = NULL;
    ag_pool *pool;
    int status = ag_pool_new(threads, &pool, err);
    return status == AG_OK ? workers_make(pool, 1, threads, out, err) : status;
}

int agb_workers_borrow(ag_pool *pool, ag_workers **out, ag_error *err)
{
    int nwork = ag_pool_threads(pool), here = ag_pool_worker() + 1;
    return workers_make(pool, 0, nwork > here ? nwork : here, out, err);
}

void ag_workers_free(ag_workers *w)
{
    if (!w)
        return;
    if (w->own_pool)
        ag_pool_free(w->pool);
    for (int k = 0; k < w->nwork; k++)
        ag_matrix_work_free(w->work[k]);
    free(w->work);
    free(w);
}

ag_pool *ag_workers_pool(const ag_workers *w)
{
    return w ? w->pool : NULL;
}

ag_matrix_work *ag_workers_work(const ag_workers *w)
{
    int k = ag_pool_worker();
    return w && k < w->nwork ? w->work[k] : NULL;
}
