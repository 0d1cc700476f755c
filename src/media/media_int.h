/* Internal prefix: agmi_ (module src/media/). */
/* media_int.h — what the decoders, the resampler and the preprocessor of
 * src/media/ share. Private to the library (not installed). */
#ifndef ATTNGEOM_MEDIA_INT_H
#define ATTNGEOM_MEDIA_INT_H

#include <stddef.h>

#include "attngeom.h"

/* AG_ELIMIT unless width x height fits the caps of attngeom/image.h (both
 * sides >= 1 is the caller's check). `name` names the file. */
int agmi_check_dims(const char *name, size_t width, size_t height, ag_error *err);

/* A zeroed ag_image of width x height, its (height, width, 3) buffer
 * allocated (AG_ENOMEM naming `name`). Dimensions must have passed
 * agmi_check_dims. */
int agmi_image_alloc(const char *name, size_t width, size_t height, ag_image *out, ag_error *err);

/* Decoders: `bytes` holds the whole file (its signature already checked).
 * Messages name `name`. On failure *out is zeroed. */
int agmi_png_decode(const unsigned char *bytes, size_t len, const char *name, ag_image *out,
                    ag_error *err);
int agmi_jpeg_decode(const unsigned char *bytes, size_t len, const char *name, ag_image *out,
                     ag_error *err);

#endif
