/* Internal prefix: agi_ (module src/io/). */
/* io_internal.h — helpers shared by the .npy and safetensors readers.
 * Private to the library (not installed). */
#ifndef ATTNGEOM_IO_INTERNAL_H
#define ATTNGEOM_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "attngeom.h"

/* The text of errno value e, for messages. strerror may return a buffer
 * shared by every thread (POSIX; glibc's manual marks it MT-Unsafe), so the
 * library calls GNU strerror_r with a buffer of the calling block instead:
 * the text lives until the end of the enclosing full block. */
#define agi_strerror(e) strerror_r((e), (char[256]){0}, 256)

/* Look up a safetensors dtype name ("F16", ...). Returns 0 and sets *out, or
 * -1 if the name is not a known dtype. */
int agi_dtype_from_name(const char *name, ag_dtype *out);

/* Open `path` read-only and check it is a regular file, without ever
 * blocking (a FIFO is refused, not opened and waited on). On success *fd is
 * an open descriptor (O_CLOEXEC, blocking) and *st its fstat. Errors
 * (AG_EIO, err->message names the path): the open's strerror, "is a
 * directory", "is not a regular file". */
int agi_open_input(const char *path, int *fd, struct stat *st, ag_error *err);

/* A whole JSON file (at most max_bytes) parsed with jansson `flags`: *out is
 * the caller's on success. Errors as ag_read_file's, and AG_EFORMAT "PATH:
 * invalid JSON at line L column C: ...". */
struct json_t;
int agi_json_load(const char *path, size_t max_bytes, size_t flags, struct json_t **out,
                  ag_error *err);
/* The same for n bytes already read (name: the file, for messages); buf is
 * not modified. */
int agi_json_loadb(const char *name, const char *buf, size_t n, size_t flags, struct json_t **out,
                   ag_error *err);

/* Open `path` read-only and check it is a non-empty regular file.
 * On success *fd is an open descriptor and *size the file size.
 * Errors (err->message names the path):
 *   AG_EIO     cannot open ("No such file or directory", ...), "is a directory",
 *              "is not a regular file"
 *   AG_EFORMAT "empty file" */
int agi_open_regular(const char *path, int *fd, size_t *size, ag_error *err);

/* Read exactly len bytes at offset (pread, retried on EINTR / short reads).
 * Returns 0, or -1 with errno set (errno 0 if the file ended early). */
int agi_pread_full(int fd, void *buf, size_t len, size_t offset);

/* *out = a * b; returns -1 on size_t overflow. */
static inline int agi_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

/* Format a shape as Python does: "()", "(5,)", "(3, 4)". Always terminates. */
void agi_format_shape(char *buf, size_t bufsize, int ndim, const size_t *shape);

/* Little-endian loads from possibly unaligned memory. */
static inline uint16_t agi_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t agi_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t agi_le64(const unsigned char *p)
{
    return (uint64_t)agi_le32(p) | ((uint64_t)agi_le32(p + 4) << 32);
}

/* The stored bytes of tensor t of st inside st's read-only mapping, valid
 * while st is open (the engine keeps its weight files open for a model's
 * lifetime, so each file is mapped once); NULL if t has no bytes there. */
const unsigned char *agi_st_bytes(const ag_safetensors *st, const ag_tensor_info *t);

/* Decode one little-endian float of the given dtype (F16, BF16, F32, F64). */
double agi_decode_float(ag_dtype dt, const unsigned char *p);

#endif
