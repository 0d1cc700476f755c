/* test_plot_util.h — what the tests of ag_run_plot's figures share
 * (tests/plot/test_figures.c, test_lens.c): the suite's clean-up, byte
 * equality of two figures, and a [2, 2, 3, 3] array written as .npy. */
#ifndef AG_TEST_PLOT_UTIL_H
#define AG_TEST_PLOT_UTIL_H

#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "test_io_util.h"

/* A suite's .fini: the renderer's font caches and the temporary files. */
static inline void plot_test_fini(void)
{
    ag_plot_release_caches();
    tio_cleanup();
}

/* a and b hold the same bytes, and some. */
static inline int plot_same(const ag_plot_output *a, const ag_plot_output *b)
{
    return a->len == b->len && a->len > 0 && memcmp(a->data, b->data, a->len) == 0;
}

/* The 36 values v written as a little-endian f8 [L, H, n, n] = [2, 2, 3, 3]
 * file `name` in the test's temporary directory; its path. */
static inline const char *plot_heads_npy(const char *name, const double *v)
{
    const char *path = tio_path(name);
    size_t shape[4] = {2, 2, 3, 3};
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 4, shape, v), 0);
    return path;
}

#endif
