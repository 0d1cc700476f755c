/* attngeom/io.h — readers and writers for tensor files: NumPy .npy and
 * safetensors. See docs/formats.md for exactly what is accepted.
 *
 * Hostile input: every size a header declares is checked against the file
 * size and the caps below before anything is allocated; offsets are checked to
 * lie inside the file; nothing is read out of bounds.
 */
#ifndef ATTNGEOM_IO_H
#define ATTNGEOM_IO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compile-time caps against hostile headers. */
#define AG_NPY_HEADER_MAX      (1u << 20)          /* bytes of .npy header dict */
#define AG_ST_HEADER_MAX       (100u * 1024 * 1024) /* bytes of safetensors JSON header */
#define AG_ST_TENSORS_MAX      1000000u             /* tensors in one safetensors file */
#define AG_ST_NAME_MAX         4096u                /* bytes of one tensor name */

/* Element types known to the readers. Values convert to double/float only
 * from the floating-point types AG_DT_F16, AG_DT_BF16, AG_DT_F32, AG_DT_F64;
 * every other type is known (so files holding it open fine) but asking for
 * its values gives AG_EDTYPE. */
typedef enum {
    AG_DT_BOOL, AG_DT_U8, AG_DT_I8, AG_DT_I16, AG_DT_U16, AG_DT_I32, AG_DT_U32,
    AG_DT_I64, AG_DT_U64,
    AG_DT_F4, AG_DT_F6_E2M3, AG_DT_F6_E3M2,
    AG_DT_F8_E5M2, AG_DT_F8_E4M3, AG_DT_F8_E8M0,
    AG_DT_F16, AG_DT_BF16, AG_DT_F32, AG_DT_F64,
    AG_DT_C64,
    /* Added upstream after the list above (safetensors 0.6+/0.8): 8-bit
     * "finite, unsigned zero" floats. Known, not convertible. */
    AG_DT_F8_E4M3FNUZ, AG_DT_F8_E5M2FNUZ,
    AG_DT_COUNT
} ag_dtype;

/* Safetensors name of a dtype ("F16", "BF16", ...). */
AG_EXPORT const char *ag_dtype_name(ag_dtype dt);
/* Size of one element in bits (4 for F4, 6 for F6_*, 8 for U8, ...). */
AG_EXPORT unsigned ag_dtype_bits(ag_dtype dt);
/* 1 if values of this dtype convert to floating point (F16, BF16, F32, F64). */
AG_EXPORT int ag_dtype_is_float(ag_dtype dt);

/* ---- NumPy .npy ----------------------------------------------------------
 * Format versions 1.0, 2.0 and 3.0; dtypes '<f2', '<f4', '<f8'; C or Fortran
 * order; any rank from 0 to AG_MAX_DIMS. Fortran-ordered data is transposed
 * so that `out` is always C-ordered. Values are converted exactly to double.
 * Non-finite values are read as they are (callers decide). On success *out
 * owns a new array. Errors: AG_EIO, AG_EFORMAT, AG_EDTYPE, AG_ESHAPE,
 * AG_ELIMIT, AG_ENOMEM; err->message names `path`. */
AG_EXPORT int ag_npy_read(const char *path, ag_array *out, ag_error *err);

/* Write `a` as a version 1.0 '<f8' C-order .npy (version 2.0 if the header
 * needs it). Writes to a temporary file in the same folder and renames it into
 * place, so a failed write leaves no file behind. The rename replaces what
 * is at `path` (a symlink itself, not its target); a device or FIFO there is
 * refused (AG_EIO "is not a regular file"): write to it with ag_npy_write_fd. */
AG_EXPORT int ag_npy_write(const char *path, const ag_array *a, ag_error *err);

/* The same for float32 values (a C-ordered array of `shape`, product(shape)
 * floats at `data`): a version 1.0 '<f4' .npy written and renamed into
 * place as ag_npy_write does; the values are written bit for bit. For
 * arrays whose float32 form is the one to keep (Whisper's input features,
 * attngeom/audio.h). Errors: AG_EINVAL, AG_ESHAPE, AG_ELIMIT, AG_EIO,
 * AG_ENOMEM, naming `path`. */
AG_EXPORT int ag_npy_write_f32(const char *path, int ndim, const size_t *shape,
                               const float *data, ag_error *err);
/* The same bytes to an open descriptor, as ag_npy_write_fd (nothing synced
 * or closed; `name` names the destination in messages). */
AG_EXPORT int ag_npy_write_f32_fd(int fd, const char *name, int ndim, const size_t *shape,
                                  const float *data, ag_error *err);

/* Write the same bytes to an open descriptor (a temporary file, a pipe, a
 * device), from its current position; nothing is synced or closed. `name`
 * names the destination in messages. For callers that decide themselves
 * where and how the output lands (the CLI's -o: docs/cli.md, "Outputs"). */
AG_EXPORT int ag_npy_write_fd(int fd, const char *name, const ag_array *a, ag_error *err);

/* The same bytes written in pieces, for an array produced a piece at a time
 * (a layer of attention, a hidden state) whose whole is never held: open
 * writes the header of the full shape to fd (from its current position),
 * each write appends `count` values in C order, close checks that exactly
 * the shape's values came and frees the writer (the descriptor is neither
 * synced nor closed; it is the caller's). `name` names the destination in
 * messages. Errors: AG_EINVAL (null arguments), AG_ESHAPE (rank outside
 * 0..AG_MAX_DIMS; more values than the shape holds; at close, fewer),
 * AG_ELIMIT (shape too large), AG_EIO "NAME: cannot write: <strerror>",
 * AG_ENOMEM. A failed write sticks: every later write returns its status,
 * and close returns it too — call close in any case. A writer that failed
 * midway has put a truncated file on fd: the caller removes it (or, on a
 * pipe, the reader sees it end early). */
typedef struct ag_npy_writer ag_npy_writer;
AG_EXPORT int ag_npy_writer_open(int fd, const char *name, int ndim, const size_t *shape,
                                 ag_npy_writer **out, ag_error *err);
AG_EXPORT int ag_npy_writer_write(ag_npy_writer *w, const double *values, size_t count, ag_error *err);
AG_EXPORT int ag_npy_writer_close(ag_npy_writer *w, ag_error *err);

/* ---- whole small files (JSON, text) ---------------------------------------
 * ag_read_file reads a regular file into a new NUL-terminated buffer (*buf,
 * the caller frees it; *len bytes before the NUL). Anything else (FIFO,
 * device, terminal, socket, directory) is refused without being waited on:
 * AG_EIO "PATH: is not a regular file" ("is a directory"). More than
 * max_bytes: AG_ELIMIT. Every reader of the library opens its files this way.
 * ag_read_fd reads an open descriptor to its end (standard input, a pipe the
 * caller chose to read) with the same cap; `name` names it in messages. */
AG_EXPORT int ag_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, ag_error *err);
AG_EXPORT int ag_read_fd(int fd, const char *name, size_t max_bytes, char **buf, size_t *len,
                         ag_error *err);

/* ---- safetensors ---------------------------------------------------------
 * An 8-byte little-endian header length N, N bytes of JSON, then the data
 * area. Every entry must have a known dtype, a shape of non-negative ints and
 * data_offsets [begin, end] with begin <= end <= data size and
 * end - begin == product(shape) * bits / 8; sorted by offset, the entries
 * must tile the data area (each begins where the previous one ends, from 0 to
 * the end of the file), as upstream safetensors requires.
 * "__metadata__" (a string-to-string object) is allowed. The file is mapped
 * read-only; tensor values are converted on request. */
typedef struct ag_safetensors ag_safetensors;

typedef struct {
    const char *name;         /* owned by the ag_safetensors handle */
    ag_dtype dtype;
    int ndim;
    size_t shape[AG_MAX_DIMS];
    size_t nelem;
    size_t offset;            /* byte offset of the data inside the file */
    size_t nbytes;
} ag_tensor_info;

/* Open and validate. On success *out owns a handle (ag_st_close). */
AG_EXPORT int ag_st_open(const char *path, ag_safetensors **out, ag_error *err);
AG_EXPORT void ag_st_close(ag_safetensors *st);
AG_EXPORT const char *ag_st_path(const ag_safetensors *st);
AG_EXPORT size_t ag_st_count(const ag_safetensors *st);
/* i-th tensor in ascending data-offset order; NULL if i is out of range. */
AG_EXPORT const ag_tensor_info *ag_st_info(const ag_safetensors *st, size_t i);
/* Lookup by exact name; NULL if absent. */
AG_EXPORT const ag_tensor_info *ag_st_find(const ag_safetensors *st, const char *name);
/* Value of a "__metadata__" key, or NULL. */
AG_EXPORT const char *ag_st_metadata(const ag_safetensors *st, const char *key);

/* Values of tensor `name` converted to double, C order, shape as stored.
 * AG_ENOTFOUND if absent, AG_EDTYPE if its dtype is not a float type. */
AG_EXPORT int ag_st_read(const ag_safetensors *st, const char *name, ag_array *out,
                         ag_error *err);
/* The same into a caller-provided float buffer of exactly info->nelem floats
 * (for float32 consumers that must not hold a double copy). */
AG_EXPORT int ag_st_read_f32(const ag_safetensors *st, const ag_tensor_info *info,
                             float *dst, ag_error *err);

/* ---- element conversion (exact) ---------------------------------------- */
AG_EXPORT double ag_half_to_double(uint16_t h);
AG_EXPORT double ag_bfloat16_to_double(uint16_t b);

/* ---- SHA-256 (FIPS 180-4): digests of the files a run read --------------- */

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} ag_sha256;

AG_EXPORT void ag_sha256_init(ag_sha256 *s);
AG_EXPORT void ag_sha256_update(ag_sha256 *s, const void *data, size_t len);
/* The digest of everything given to update; s must be initialised again
 * before another use. */
AG_EXPORT void ag_sha256_final(ag_sha256 *s, unsigned char digest[32]);
/* 64 lower-case hex digits and a NUL, as sha256sum prints them. */
AG_EXPORT void ag_sha256_hex(const unsigned char digest[32], char hex[65]);
/* The digest of a regular file's bytes, in hex. AG_EIO (cannot open or
 * read, not a regular file), AG_ENOMEM. */
AG_EXPORT int ag_sha256_file(const char *path, char hex[65], ag_error *err);

/* ---- what a file looks like ---------------------------------------------- */

/* From a file's first bytes (src/io/sniff.c gives the signatures), so that a
 * command given the wrong kind of file can say what it was given. */
typedef enum {
    AG_FILE_UNKNOWN,      /* none of the below */
    AG_FILE_NPY,          /* "\x93NUMPY" */
    AG_FILE_SAFETENSORS,  /* an 8-byte header length, then '{' */
    AG_FILE_PNG,
    AG_FILE_JPEG,
    AG_FILE_WAV,          /* RIFF ... WAVE */
    AG_FILE_JSON,         /* '{' or '[' after blanks: JSON or JSONL records */
    AG_FILE_TEXT_TABLE    /* a first line of keys and , or tab separators: CSV/TSV */
} ag_file_kind;

/* The kind of the n bytes at head (a file's start; 256 bytes are plenty). */
AG_EXPORT ag_file_kind ag_file_kind_of(const void *head, size_t n);
/* For messages: "a .npy file", "a PNG image", "a JSON file" ... */
AG_EXPORT const char *ag_file_kind_name(ag_file_kind k);
/* The kind of the regular file at path (its first 256 bytes). AG_EIO as
 * the readers say it (cannot open, a directory, not a regular file: a FIFO
 * is refused, never read). */
AG_EXPORT int ag_file_kind_read(const char *path, ag_file_kind *out, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
