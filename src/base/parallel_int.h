/* Internal prefix: agb_ (module src/base/). */
/* parallel_int.h — ag_workers (attngeom/parallel.h) around a pool the
 * caller already has: private to the library. */
#ifndef AG_PARALLEL_INT_H
#define AG_PARALLEL_INT_H

#include "attngeom.h"

/* Workers on the borrowed `pool` (NULL: the calling thread; ag_workers_free
 * leaves the pool alone), with a fresh ag_matrix_work for every worker
 * number a run on it can hand out: the pool's threads, or the caller's own
 * number when it is inside a task already (a nested run keeps it,
 * ag_pool_run). For a library call given a pool but no workers.
 * AG_ENOMEM. */
int agb_workers_borrow(ag_pool *pool, ag_workers **out, ag_error *err);

#endif
