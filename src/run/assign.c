/* assign.c — which rank runs each input or task of a distributed run
 * (attngeom/run.h, ag_run_assign; docs/scaling.md, "How the work is
 * split"): the longest-processing-time rule (Graham 1969, "Bounds on
 * multiprocessing timing anomalies": its largest load is at most
 * 4/3 - 1/(3K) of the best possible). Every rank computes the same
 * assignment from the same costs. */
#include <stdlib.h>

#include "access_int.h"

typedef struct {
    uint64_t cost;
    size_t index;
} item;

static int longest_first(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int ag_run_assign(const uint64_t *cost, size_t count, int nranks, int *owner, ag_error *err)
{
    if (nranks < 1 || (count && (!cost || !owner)))
        return ag_error_set(err, AG_EINVAL, "assign: %d ranks", nranks);
    item *items = malloc((count + 1) * sizeof *items);
    uint64_t *load = calloc((size_t)nranks, sizeof *load);
    if (!items || !load) {
        free(items);
        free(load);
        return ag_error_set(err, AG_ENOMEM, "out of memory assigning %zu items", count);
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        owner[i] = -1;
        if (cost[i])
            items[n++] = (item){cost[i], i};
    }
    qsort(items, n, sizeof *items, longest_first);
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int q = 1; q < nranks; q++)
            if (load[q] < load[best])
                best = q;
        owner[items[i].index] = best;
        load[best] = load[best] > UINT64_MAX - items[i].cost ? UINT64_MAX
                                                              : load[best] + items[i].cost;
    }
    free(items);
    free(load);
    return AG_OK;
}

uint64_t ag_run_input_cost(size_t n)
{
    uint64_t m = n ? n : 1;
    return m > 2000000 ? UINT64_MAX / 4 : m * m * m;
}
