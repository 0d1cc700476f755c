/* Internal prefix: agi_ (module src/io/). */
/* npy_header.h — the header dict of a .npy file, read as NumPy reads it.
 * Private to the library. */
#ifndef ATTNGEOM_NPY_HEADER_H
#define ATTNGEOM_NPY_HEADER_H

#include <stddef.h>

#include "attngeom.h"

typedef struct {
    char descr[48]; /* the 'descr' string (cut to 47 bytes; a longer one is no dtype we read) */
    int fortran;
    int ndim;
    size_t shape[AG_MAX_DIMS];
} agi_npy_header;

/* Parse the header text (n bytes, no NUL inside) of a version `major` file
 * (1, 2: latin-1; 3: UTF-8) exactly as NumPy 1.24 does: ast.literal_eval of
 * the text, after dropping Python 2 'L' suffixes in versions 1 and 2, must be
 * a dict whose keys are exactly 'descr' (a string here), 'fortran_order' (a
 * bool) and 'shape' (a tuple of ints). See docs/formats.md. Errors name
 * `path`: AG_EFORMAT (not that), AG_EDTYPE (a structured descr), AG_ESHAPE
 * (more than AG_MAX_DIMS dimensions, a negative one), AG_ELIMIT (a dimension
 * beyond size_t). */
int agi_npy_parse_header(const char *text, size_t n, int major, const char *path,
                         agi_npy_header *out, ag_error *err);

#endif
