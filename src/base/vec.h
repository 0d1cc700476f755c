/* Internal prefix: agb_ (module src/base/). */
/* vec.h — growable arrays: one capacity rule for every hand-written
 * "double when full" buffer of the library. Private to the library (not
 * installed; the MPI driver, built with -Iinclude only, keeps its own).
 *
 * Capacity rule, the same for every caller: none needed → nothing done;
 * else the new capacity starts from *cap (AGB_VEC_FIRST when 0) and doubles
 * until it holds `need` elements, capped at the largest count whose byte size
 * fits a size_t. */
#ifndef ATTNGEOM_BASE_VEC_H
#define ATTNGEOM_BASE_VEC_H

#include <stddef.h>

#define AGB_VEC_FIRST 16

/* Make *p (NULL or *cap elements of elem bytes) hold at least `need`
 * elements. 0 on success (*p, *cap updated when grown); -1 when need * elem
 * overflows a size_t, elem is 0, or realloc fails — *p and *cap untouched. */
int agb_vec_reserve(void **p, size_t *cap, size_t need, size_t elem);

/* The same on a typed pointer lvalue: AGB_VEC_RESERVE(v->items, v->cap, n). */
#define AGB_VEC_RESERVE(ptr, cap, need)                                                            \
    agb_vec_reserve((void **)&(ptr), &(cap), (need), sizeof *(ptr))

/* Growable byte buffer, kept NUL-terminated after every put (b is NULL
 * until the first put). Zero-initialise; free(b) to release. */
typedef struct {
    char *b;
    size_t n, cap;
} agb_buf;

/* Append n bytes of s (s may be NULL when n is 0). 0, or -1 when out of
 * memory or n would overflow (the buffer unchanged). */
int agb_buf_put(agb_buf *b, const void *s, size_t n);

#endif
