/* Internal prefix: agr_ (module src/run/). */
/* select_int.h — what select.c gives the rest of src/run/ beyond
 * attngeom/run.h. */
#ifndef AG_SELECT_INT_H
#define AG_SELECT_INT_H

#include <stddef.h>

#include "attngeom/core.h"

/* The n indices idx[] sorted, without repeats, into *out (malloc'ed; NULL
 * when n is 0) and *count: the index list of ag_run_options before the
 * model, hence the count, is known. AG_EINVAL for a negative index
 * ("<what>: negative index <i>"), as ag_selection_from_list. */
int agr_select_unique(const int *idx, size_t n, const char *what, int **out, size_t *count,
                      ag_error *err);

#endif
