/* Internal prefix: agb_ (module src/base/; ag_sized_read becomes agb_sized_read in a later step of plan-25). */
/* sized_int.h — reading the caller's structs that carry their own size
 * (the ABI rule of attngeom/core.h): private to the library. */
#ifndef AG_SIZED_INT_H
#define AG_SIZED_INT_H

#include "attngeom.h"

/* *dst (known = sizeof *dst bytes, holding the library's defaults) takes
 * the first src->size bytes of src, the struct's leading size_t: a caller
 * compiled against an older, shorter header gets the defaults for the
 * fields it does not know. dst->size becomes known. AG_EINVAL naming
 * `type` for a size below sizeof(size_t) (0: never set — the struct did
 * not start from its *_DEFAULT macro) or above known (a newer header than
 * this library's). */
int ag_sized_read(void *dst, size_t known, const void *src, const char *type, ag_error *err);
/* The same for a struct variable dst of type `type`. */
#define AG_SIZED_READ(dst, src, type, err) ag_sized_read((dst), sizeof *(dst), (src), #type, (err))

#endif
