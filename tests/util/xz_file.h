/* xz_file.h — reading the xz-compressed test data (tests/data/tokenize/,
 * tests/data/vocab/) with liblzma: the one place the C tests decompress
 * anything (the repository's data budget keeps large plain-text expectations
 * as `xz -9e` files). No Criterion here: callers assert on the result. */
#ifndef ATTNGEOM_TEST_XZ_FILE_H
#define ATTNGEOM_TEST_XZ_FILE_H

#include <stddef.h>

#include <jansson.h>

/* Largest decompressed size a test reads (the largest file today is 1.3 MB
 * decompressed; a corrupt header must not make a test allocate gigabytes). */
#define XZ_FILE_CAP ((size_t)64 << 20)

/* Reads the whole .xz file at `path` (one or more concatenated streams) into
 * a new NUL-terminated buffer: returns 0 with *out (the caller free()s it)
 * and *len (bytes, without the NUL). Errors return -1 with *out NULL and a
 * message in msg[msgn]: the file cannot be read, the data is not xz or is
 * corrupt or truncated (liblzma's integrity check included), the
 * decompressed size exceeds `cap`, or memory runs out. */
int xz_file_read(const char *path, size_t cap, char **out, size_t *len, char *msg, size_t msgn);

/* The JSON document of the .xz file at `path`, parsed with json_loadb's
 * `flags` (at most XZ_FILE_CAP bytes decompressed): a new reference, or NULL
 * with je->text saying why (the read error or the parse error). */
json_t *xz_json_load(const char *path, size_t flags, json_error_t *je);

/* Writes the decompressed content of the .xz file at `src` to the new file
 * `dst` (at most XZ_FILE_CAP bytes): 0, or -1 with a message in msg[msgn]. */
int xz_file_extract(const char *src, const char *dst, char *msg, size_t msgn);

#endif
