/* attngeom/parallel.h — a pool of worker threads that runs numbered tasks,
 * so heads, layers and texts run in parallel with results that do not
 * depend on the thread count.
 *
 * Determinism: the pool decides only *which thread* runs task i, never what
 * task i computes. A caller that splits its work into tasks by a rule that
 * does not look at the thread count (one task per head, per text, per fixed
 * block of rows) and writes task i's result to its own slot gets the same
 * bytes for any number of threads. The attngeom CLI keeps OpenBLAS at one
 * thread (docs/cli.md, "Threads") so each BLAS/LAPACK call inside a task is
 * itself sequential and reproducible.
 *
 * Thread safety of the library: every ag_ function may run concurrently in
 * different threads on different outputs; read-only objects (ag_model,
 * ag_tokenizer, metric selections) may be shared by concurrent calls. A
 * pool may be used by one ag_pool_run at a time.
 *
 * Ownership: ag_pool_new hands out a pool the caller releases with
 * ag_pool_free (which joins its threads).
 */
#ifndef ATTNGEOM_PARALLEL_H
#define ATTNGEOM_PARALLEL_H

#include <stddef.h>
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on threads per pool (a compile-time cap against a bad -j). */
#define AG_POOL_THREADS_MAX 256

typedef struct ag_pool ag_pool;

/* A pool of `threads` threads in all, the calling thread included (so
 * threads - 1 are started; threads = 1 starts none and runs every task in
 * the caller). AG_EINVAL for threads outside 1..AG_POOL_THREADS_MAX,
 * AG_ENOMEM when a thread cannot be started. */
AG_EXPORT int ag_pool_new(int threads, ag_pool **out, ag_error *err);
AG_EXPORT void ag_pool_free(ag_pool *pool);
/* Threads of the pool (1 for NULL). */
AG_EXPORT int ag_pool_threads(const ag_pool *pool);

/* A task: `task` is its number in 0..count-1, `worker` the running thread's
 * number in 0..threads-1 (an index into per-thread workspaces; never part
 * of a result). Returns 0 or a status. */
typedef int (*ag_task_fn)(size_t task, int worker, void *user);

/* Run fn for task 0..count-1 on the pool's threads, the caller taking part,
 * and return when all have finished. Returns 0, or the status of the
 * lowest-numbered task that failed: tasks are started in increasing order,
 * every task below a failed one runs, tasks above it may be skipped. So the
 * status (and the error a caller keeps per task) is the same for any
 * thread count.
 * A NULL pool, a pool of one thread, or a call made from inside a task (a
 * nested run) runs the tasks in the calling thread, in order, with the
 * caller's worker number. */
AG_EXPORT int ag_pool_run(ag_pool *pool, size_t count, ag_task_fn fn, void *user);

/* The worker number of the calling thread inside a task of ag_pool_run,
 * 0 outside any. */
AG_EXPORT int ag_pool_worker(void);

/* ---- workers: a pool with a matrix workspace per thread ----------------- */

typedef struct ag_matrix_work ag_matrix_work; /* attngeom/metrics.h */

/* A pool and one ag_matrix_work per thread, so that tasks measuring
 * matrices (a head each) reuse their thread's buffers: what the attngeom
 * commands and the runs of attngeom/access.h use, and what the edges of
 * family F run on (ag_curvature_options.workers, ag_matrix_options.workers). Opaque (ABI rule,
 * core.h); the caller's, released with ag_workers_free (NULL is fine). */
typedef struct ag_workers ag_workers;
/* `threads` in all, the caller included (ag_pool_new's rule: 1 starts no
 * thread). AG_EINVAL for threads outside 1..AG_POOL_THREADS_MAX,
 * AG_ENOMEM. */
AG_EXPORT int ag_workers_new(int threads, ag_workers **out, ag_error *err);
AG_EXPORT void ag_workers_free(ag_workers *w);
/* The pool (borrowed from w), for ag_pool_run and ag_forward_options. */
AG_EXPORT ag_pool *ag_workers_pool(const ag_workers *w);
/* The workspace of the calling thread: worker ag_pool_worker()'s inside a
 * task of w's pool, worker 0's outside one (borrowed from w). */
AG_EXPORT ag_matrix_work *ag_workers_work(const ag_workers *w);

#ifdef __cplusplus
}
#endif
#endif
