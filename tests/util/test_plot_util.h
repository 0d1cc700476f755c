/* test_plot_util.h — what the tests of ag_run_plot's figures share
 * (tests/plot/test_figures.c, test_lens.c): the suite's clean-up, byte
 * equality of two figures, a [2, 2, 3, 3] array written as .npy, and the
 * grid a matrix figure (attention, rollout, cross-attention) should draw. */
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

/* The grid `plot --kind attention` draws for one rows x cols matrix
 * (row-major values): square cells, the colour range from 0, the titles
 * given; labels default to positions. */
static inline ag_plot_grid plot_matrix_grid(size_t rows, size_t cols, const double *values,
                                            const char *title, const char *row_title,
                                            const char *col_title, const char *value_title)
{
    ag_plot_grid g = AG_PLOT_GRID_DEFAULT;
    g.rows = rows, g.cols = cols;
    g.values = values;
    g.title = title;
    g.row_title = row_title, g.col_title = col_title, g.value_title = value_title;
    g.square = 1;
    g.vmin = 0;
    return g;
}

#endif
