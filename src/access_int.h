/* access_int.h — what the two halves of attngeom/access.h share: the
 * layouts of ag_run_options and ag_record_list, private to the library. */
#ifndef AG_ACCESS_INT_H
#define AG_ACCESS_INT_H

#include "attngeom.h"

struct ag_run_options {
    int threads;
    ag_precision precision;
    double edge_threshold, epsilon;
    int trials;
    unsigned long seed;
    int *layers, *heads; /* selected indices, sorted, no repeats; NULL: all */
    size_t nlayers, nheads;
};

struct ag_record_list {
    ag_record *items;
    size_t count;
};

/* A list of count records, zeroed (count 0 allowed); NULL (err set) when
 * out of memory. */
ag_record_list *ag_record_list_alloc(size_t count, ag_error *err);

/* A pool of opt's threads (NULL for one thread) and one matrix workspace
 * per thread, for the tasks of one call. */
typedef struct {
    ag_pool *pool;
    ag_matrix_work **work;
    int nwork;
} ag_access_workers;

int ag_access_workers_new(const ag_run_options *opt, size_t tasks, ag_access_workers *w,
                          ag_error *err);
void ag_access_workers_free(ag_access_workers *w);
/* The calling worker's workspace. */
ag_matrix_work *ag_access_work(const ag_access_workers *w);

#endif
