/* work.c — ag_matrix_work, the scratch memory of the matrix metrics: one
 * buffer per purpose (analysis.h, ag_work_slot), each grown when a larger
 * matrix needs more and kept for the next one, so that a pass over many
 * heads allocates once per worker instead of once per LAPACK call (and the
 * kernel does not fault in megabytes of fresh pages for every head).
 *
 * Every buffer starts on a 64-byte boundary: BLAS kernels may peel loops up
 * to an alignment, which changes the order of their sums, so the alignment
 * of a buffer must not depend on which workspace holds it. Nobody reads what
 * a buffer held before it was handed out: results do not depend on whether
 * a workspace is fresh or reused (tests/analysis/test_floors.c). */
#include <stdint.h>
#include <stdlib.h>

#include <gsl/gsl_rng.h>

#include "work.h"

#define WORK_ALIGN 64

struct ag_matrix_work {
    void *buf[AG_WK_COUNT];
    size_t cap[AG_WK_COUNT]; /* bytes */
    gsl_rng *rng;            /* allocated once, reseeded for each use */
    unsigned long count[AG_WC_COUNT];
};

void ag_work_count(ag_matrix_work *w, ag_work_counter c)
{
    w->count[c]++;
}

unsigned long ag_work_counted(const ag_matrix_work *w, ag_work_counter c)
{
    return w ? w->count[c] : 0;
}

int ag_matrix_work_new(ag_matrix_work **out, ag_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a matrix workspace");
    return AG_OK;
}

void ag_matrix_work_free(ag_matrix_work *w)
{
    if (!w)
        return;
    for (int s = 0; s < AG_WK_COUNT; s++)
        free(w->buf[s]);
    gsl_rng_free(w->rng);
    free(w);
}

void *ag_work_get(ag_matrix_work *w, ag_work_slot slot, size_t bytes)
{
    if (bytes <= w->cap[slot] && w->buf[slot])
        return w->buf[slot];
    /* Grow by half again, so that slowly growing sizes (a text's heads at
     * increasing lengths) reallocate O(log) times. */
    size_t want = bytes > w->cap[slot] / 2 * 3 ? bytes : w->cap[slot] / 2 * 3;
    if (want > SIZE_MAX - WORK_ALIGN)
        return NULL;
    want = (want + WORK_ALIGN - 1) / WORK_ALIGN * WORK_ALIGN;
    free(w->buf[slot]);
    w->buf[slot] = aligned_alloc(WORK_ALIGN, want ? want : WORK_ALIGN);
    w->cap[slot] = w->buf[slot] ? want : 0;
    return w->buf[slot];
}

double *ag_work_doubles(ag_matrix_work *w, ag_work_slot slot, size_t count)
{
    if (count > SIZE_MAX / sizeof(double))
        return NULL;
    return ag_work_get(w, slot, count * sizeof(double));
}

int ag_work_vectors(ag_matrix_work *w, ag_work_slot slot, size_t len, size_t k, double **v)
{
    size_t per = WORK_ALIGN / sizeof(double), stride = (len + per - 1) / per * per;
    if (k && stride > SIZE_MAX / sizeof(double) / k)
        return AG_ENOMEM;
    double *base = ag_work_doubles(w, slot, stride * k);
    if (!base)
        return AG_ENOMEM;
    for (size_t i = 0; i < k; i++)
        v[i] = base + i * stride;
    return AG_OK;
}

gsl_rng *ag_work_rng(ag_matrix_work *w, unsigned long seed)
{
    if (!w->rng)
        w->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (w->rng)
        gsl_rng_set(w->rng, seed);
    return w->rng;
}
