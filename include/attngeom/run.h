/* attngeom/run.h — the run module: which layers and heads a run computes.
 *
 * One implementation of layer/head selection for the library, the CLI and
 * the Python package (issue 25): a selection over `count` items (the layers
 * or the heads of a model), made from a list spec such as "0,2-3" (the
 * CLI's --layers/--heads) or from an index list (Python's select()), gives
 * the mask, the number selected, the i-th selected index and the last one.
 *
 * ag_selection is opaque (core.h, ABI rule, kind 1): the library allocates
 * it, ag_selection_free releases it.
 */
#ifndef ATTNGEOM_RUN_H
#define ATTNGEOM_RUN_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_selection ag_selection;

/* The selection of spec over 0..count-1; every item when spec is NULL.
 * spec is a comma-separated list of indices and ranges "lo-hi" (inclusive),
 * as "0,2-3"; repeats are allowed. `what` names the items in messages
 * ("layers", "heads"). Errors, at the first item at fault, from the left:
 *  - AG_EINVAL, a syntax error: "<what> takes a list like 0,2-3, not '<spec>'";
 *  - AG_ERANGE, an index >= count: "<what> <spec> is out of range: there are
 *    <count> <what> (0-<count-1>)".
 * (The CLI prints them after "--", the first as a usage error, exit 2, the
 * second as a failure, exit 1.) *out is NULL on failure. */
AG_EXPORT int ag_selection_parse(const char *spec, int count, const char *what,
                                 ag_selection **out, ag_error *err);

/* The selection of the n indices idx[] over 0..count-1, in any order, with
 * repeats; every item when idx is NULL. Errors: AG_EINVAL for a negative
 * index ("<what>: negative index <i>"), AG_ERANGE for an index >= count
 * ("<what>: <i> is outside 0..<count-1>"). */
AG_EXPORT int ag_selection_from_list(const int *idx, size_t n, int count, const char *what,
                                     ag_selection **out, ag_error *err);

/* Accepts NULL. */
AG_EXPORT void ag_selection_free(ag_selection *s);

/* The number of items it ranges over (count above). */
AG_EXPORT int ag_selection_limit(const ag_selection *s);
/* How many are selected. */
AG_EXPORT size_t ag_selection_count(const ag_selection *s);
/* The mask[limit]: 1 for a selected item, 0 otherwise. Valid until freed. */
AG_EXPORT const unsigned char *ag_selection_mask(const ag_selection *s);
/* The selected indices, increasing, [ag_selection_count]. Valid until freed. */
AG_EXPORT const int *ag_selection_indices(const ag_selection *s);
/* The i-th selected index (increasing order); -1 when i >= the count. */
AG_EXPORT int ag_selection_index(const ag_selection *s, size_t i);
/* The last (largest) selected index; -1 when none is selected. */
AG_EXPORT int ag_selection_last(const ag_selection *s);

#ifdef __cplusplus
}
#endif

#endif
