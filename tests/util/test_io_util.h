/* test_io_util.h — helpers for tests that need .npy / safetensors files on
 * disk, including deliberately broken ones. Header-only (static inline), no
 * dependency on the library, so any test file can include it.
 *
 * Files go into one temporary directory per process (Criterion runs every
 * test in its own process):
 *     const char *p = tio_path("a.npy");   // <tmpdir>/a.npy, created lazily
 *     ...
 *     tio_cleanup();                        // e.g. as a suite .fini
 * tio_path returns one of 16 rotating static buffers: copy it if you need
 * more than 16 paths alive at once.
 *
 * Encoders (double -> bytes) know these element types:
 *   numpy descr: [<>=|] followed by f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1
 *                ('=' and '|' mean little-endian here)
 *   safetensors: F16 BF16 F32 F64 I8 I16 I32 I64 U8 U16 U32 U64 BOOL
 *                (for F4/F6/F8/C64 write the bytes yourself)
 * Float encodings round to nearest even; integers truncate toward zero.
 *
 * Writers return 0 on success, -1 on failure (errno set).
 */
#ifndef ATTNGEOM_TEST_IO_UTIL_H
#define ATTNGEOM_TEST_IO_UTIL_H

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- temporary directory ------------------------------------------------ */

static char tio_dir_[4096];

/* The per-process temporary directory (created on first use). */
static inline const char *tio_tmpdir(void)
{
    if (!tio_dir_[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base)
            base = "/tmp";
        snprintf(tio_dir_, sizeof tio_dir_, "%s/attngeom-test-XXXXXX", base);
        if (!mkdtemp(tio_dir_)) {
            tio_dir_[0] = '\0';
            return "/nonexistent-attngeom-tmpdir";
        }
    }
    return tio_dir_;
}

/* "<tmpdir>/<name>" in a rotating static buffer (16 slots). */
static inline const char *tio_path(const char *name)
{
    static char bufs[16][4096 + 256];
    static unsigned next;
    char *b = bufs[next++ % 16];
    snprintf(b, sizeof bufs[0], "%s/%s", tio_tmpdir(), name);
    return b;
}

static inline int tio_rm_cb_(const char *p, const struct stat *sb, int flag,
                             struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Remove the temporary directory and everything in it. */
static inline void tio_cleanup(void)
{
    if (tio_dir_[0]) {
        nftw(tio_dir_, tio_rm_cb_, 16, FTW_DEPTH | FTW_PHYS);
        tio_dir_[0] = '\0';
    }
}

/* ---- raw bytes ---------------------------------------------------------- */

/* Write exactly len bytes (creating / truncating the file). */
static inline int tio_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    if (len && fwrite(data, 1, len, f) != len) {
        fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* Write the concatenation of up to 4 pieces (NULL / 0 pieces are skipped). */
static inline int tio_write_pieces(const char *path, const void *a, size_t alen,
                                   const void *b, size_t blen, const void *c,
                                   size_t clen, const void *d, size_t dlen)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    const void *ps[4] = {a, b, c, d};
    size_t ls[4] = {alen, blen, clen, dlen};
    for (int i = 0; i < 4; i++)
        if (ps[i] && ls[i] && fwrite(ps[i], 1, ls[i], f) != ls[i]) {
            fclose(f);
            return -1;
        }
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- element encoders --------------------------------------------------- */

/* double -> IEEE binary16 bits, round to nearest even. */
static inline uint16_t tio_double_to_half(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0) /* rounds to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a < ldexp(1.0, -14)) /* subnormal (or zero): units of 2^-24 */
        return (uint16_t)(sign | (uint16_t)rint(ldexp(a, 24)));
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int exp = e - 1;         /* a = (2f) * 2^exp */
    unsigned man = (unsigned)rint((2.0 * f - 1.0) * 1024.0);
    unsigned bits = ((unsigned)(exp + 15) << 10) + man; /* carry is fine */
    return (uint16_t)(sign | bits);
}

/* double -> bfloat16 bits (via float), round to nearest even. */
static inline uint16_t tio_double_to_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x0040);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline void tio_put_(unsigned char *out, uint64_t u, int n, int big)
{
    for (int i = 0; i < n; i++)
        out[big ? n - 1 - i : i] = (unsigned char)(u >> (8 * i));
}

/* kind: 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'h' bfloat16. */
static inline int tio_encode_one_(char kind, int size, int big, double v,
                                  unsigned char *out)
{
    uint64_t u = 0;
    switch (kind) {
    case 'f':
        if (size == 2) {
            u = tio_double_to_half(v);
        } else if (size == 4) {
            float f = (float)v;
            uint32_t w;
            memcpy(&w, &f, 4);
            u = w;
        } else if (size == 8) {
            memcpy(&u, &v, 8);
        } else {
            return -1;
        }
        break;
    case 'h':
        u = tio_double_to_bf16(v);
        break;
    case 'i':
        u = (uint64_t)(int64_t)v;
        break;
    case 'u':
        u = (uint64_t)v;
        break;
    case 'b':
        u = v != 0.0;
        break;
    default:
        return -1;
    }
    tio_put_(out, u, size, big);
    return 0;
}

/* Parse a numpy descr like "<f4" into kind/size/endianness; -1 if unknown. */
static inline int tio_npy_descr_(const char *descr, char *kind, int *size, int *big)
{
    if (!descr || strlen(descr) != 3)
        return -1;
    char e = descr[0], k = descr[1], s = descr[2];
    if (e != '<' && e != '>' && e != '=' && e != '|')
        return -1;
    if (k != 'f' && k != 'i' && k != 'u' && k != 'b')
        return -1;
    if (s != '1' && s != '2' && s != '4' && s != '8')
        return -1;
    *kind = k;
    *size = s - '0';
    *big = e == '>';
    if (k == 'f' && *size == 1)
        return -1;
    return 0;
}

/* Item size in bytes of a numpy descr the encoder knows, or 0. */
static inline size_t tio_npy_itemsize(const char *descr)
{
    char k;
    int s, b;
    return tio_npy_descr_(descr, &k, &s, &b) == 0 ? (size_t)s : 0;
}

/* Encode n values as numpy descr; out needs n * itemsize bytes. */
static inline int tio_encode_npy(const char *descr, const double *v, size_t n,
                                 unsigned char *out)
{
    char k;
    int s, b;
    if (tio_npy_descr_(descr, &k, &s, &b) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (tio_encode_one_(k, s, b, v[i], out + i * (size_t)s) != 0)
            return -1;
    return 0;
}

static inline int tio_st_dtype_(const char *dt, char *kind, int *size)
{
    static const struct {
        const char *n;
        char k;
        int s;
    } t[] = {{"F16", 'f', 2}, {"BF16", 'h', 2}, {"F32", 'f', 4}, {"F64", 'f', 8},
             {"I8", 'i', 1},  {"I16", 'i', 2},  {"I32", 'i', 4}, {"I64", 'i', 8},
             {"U8", 'u', 1},  {"U16", 'u', 2},  {"U32", 'u', 4}, {"U64", 'u', 8},
             {"BOOL", 'b', 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(dt, t[i].n) == 0) {
            *kind = t[i].k;
            *size = t[i].s;
            return 0;
        }
    return -1;
}

/* Item size in bytes of a safetensors dtype the encoder knows, or 0. */
static inline size_t tio_st_itemsize(const char *dtype)
{
    char k;
    int s;
    return tio_st_dtype_(dtype, &k, &s) == 0 ? (size_t)s : 0;
}

/* Encode n values as safetensors dtype (little-endian). */
static inline int tio_encode_st(const char *dtype, const double *v, size_t n,
                                unsigned char *out)
{
    char k;
    int s;
    if (tio_st_dtype_(dtype, &k, &s) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (tio_encode_one_(k, s, 0, v[i], out + i * (size_t)s) != 0)
            return -1;
    return 0;
}

/* ---- .npy --------------------------------------------------------------- */

/* Write a .npy with an arbitrary preamble: magic (6 bytes, NULL = the real
 * "\x93NUMPY"), version major.minor, a header-length field of the given
 * value (2 bytes for major 1, 4 otherwise) that need not match header_len,
 * then header_len bytes of header text and data_len bytes of data. */
static inline int tio_write_npy_raw(const char *path, const char *magic6,
                                    int major, int minor, uint32_t declared_len,
                                    const void *header, size_t header_len,
                                    const void *data, size_t data_len)
{
    unsigned char pre[12];
    memcpy(pre, magic6 ? magic6 : "\x93NUMPY", 6);
    pre[6] = (unsigned char)major;
    pre[7] = (unsigned char)minor;
    size_t plen = major == 1 ? 10 : 12;
    tio_put_(pre + 8, declared_len, (int)(plen - 8), 0);
    return tio_write_pieces(path, pre, plen, header, header_len, data, data_len,
                            NULL, 0);
}

/* Write a .npy whose header dict text is given verbatim (no padding added;
 * the length field is strlen(dict)). version: 1, 2 or 3. */
static inline int tio_write_npy_header(const char *path, int version,
                                       const char *dict, const void *data,
                                       size_t data_len)
{
    return tio_write_npy_raw(path, NULL, version, 0, (uint32_t)strlen(dict), dict,
                             strlen(dict), data, data_len);
}

/* Format a shape tuple as numpy does: (), (5,), (3, 4). */
static inline void tio_shape_str(char *buf, size_t size, int ndim,
                                 const size_t *shape)
{
    size_t u = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%zu", i ? ", " : "", shape[i]);
    if (u < size)
        snprintf(buf + u, size - u, "%s)", ndim == 1 ? "," : "");
}

/* Encode values given in C order as a data block (C or Fortran order).
 * Returns a malloc'd buffer and its length in *len, or NULL. */
static inline unsigned char *tio_npy_data(const char *descr, int fortran, int ndim,
                                          const size_t *shape,
                                          const double *values_c_order, size_t *len)
{
    size_t item = tio_npy_itemsize(descr), n = 1;
    if (!item || ndim < 0 || ndim > 16)
        return NULL;
    for (int k = 0; k < ndim; k++)
        n *= shape[k];
    unsigned char *buf = malloc(n * item + 1);
    double *perm = malloc((n ? n : 1) * sizeof(double));
    if (!buf || !perm) {
        free(buf);
        free(perm);
        return NULL;
    }
    if (!values_c_order) {
        memset(perm, 0, (n ? n : 1) * sizeof(double));
    } else if (!fortran || ndim < 2) {
        memcpy(perm, values_c_order, n * sizeof(double));
    } else {
        /* Fortran position f of multi-index idx: sum idx[k] * fstride[k] */
        size_t fstride[16], cstride[16], s = 1;
        for (int k = 0; k < ndim; k++) {
            fstride[k] = s;
            s *= shape[k];
        }
        s = 1;
        for (int k = ndim - 1; k >= 0; k--) {
            cstride[k] = s;
            s *= shape[k];
        }
        for (size_t c = 0; c < n; c++) {
            size_t f = 0;
            for (int k = 0; k < ndim; k++)
                f += (c / cstride[k] % shape[k]) * fstride[k];
            perm[f] = values_c_order[c];
        }
    }
    int rc = tio_encode_npy(descr, perm, n, buf);
    free(perm);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    *len = n * item;
    return buf;
}

/* Write a well-formed .npy of any descr the encoder knows (see top), C or
 * Fortran order, version 1, 2 or 3, header padded to 64 bytes and ending in
 * '\n' as numpy writes it. values_c_order holds product(shape) doubles in
 * C order (NULL: all zeros); they are stored in the requested order. */
static inline int tio_write_npy(const char *path, const char *descr, int fortran,
                                int version, int ndim, const size_t *shape,
                                const double *values_c_order)
{
    char shp[512], dict[1024];
    size_t dlen = 0;
    tio_shape_str(shp, sizeof shp, ndim, shape);
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
                     fortran ? "True" : "False", shp);
    size_t plen = version == 1 ? 10 : 12;
    size_t total = plen + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - plen;
    char *hdr = malloc(hlen);
    if (!hdr)
        return -1;
    memcpy(hdr, dict, (size_t)n);
    memset(hdr + n, ' ', hlen - (size_t)n - 1);
    hdr[hlen - 1] = '\n';
    unsigned char *data = tio_npy_data(descr, fortran, ndim, shape,
                                       values_c_order, &dlen);
    if (!data) {
        free(hdr);
        errno = EINVAL;
        return -1;
    }
    int rc = tio_write_npy_raw(path, NULL, version, 0, (uint32_t)hlen, hdr, hlen,
                               data, dlen);
    free(hdr);
    free(data);
    return rc;
}

/* ---- safetensors -------------------------------------------------------- */

/* Write a safetensors file with an arbitrary declared header length. */
static inline int tio_write_safetensors_raw(const char *path, uint64_t declared_len,
                                            const void *header, size_t header_len,
                                            const void *data, size_t data_len)
{
    unsigned char n[8];
    tio_put_(n, declared_len, 8, 0);
    return tio_write_pieces(path, n, 8, header, header_len, data, data_len, NULL, 0);
}

/* Write a safetensors file: length = strlen(header_json), the JSON verbatim,
 * then data_len bytes of data. */
static inline int tio_write_safetensors(const char *path, const char *header_json,
                                        const void *data, size_t data_len)
{
    size_t h = strlen(header_json);
    return tio_write_safetensors_raw(path, h, header_json, h, data, data_len);
}

/* ---- assertions (need <criterion/criterion.h> included first) ----------- */

/* Assert a call failed with `status` and that the message names `path`. */
#define TIO_ASSERT_FAILS(call, errp, want_status, path)                        \
    do {                                                                       \
        int tio_rc_ = (call);                                                  \
        cr_assert_eq(tio_rc_, (want_status),                                   \
                     "status %d, expected %d; message: %s", tio_rc_,           \
                     (int)(want_status), (errp)->message);                     \
        cr_assert_eq((errp)->status, (want_status));                           \
        cr_assert(strstr((errp)->message, (path)) != NULL,                     \
                  "message does not name the file: %s", (errp)->message);      \
    } while (0)

/* Assert the message contains a substring. */
#define TIO_ASSERT_MSG_HAS(errp, substr)                                       \
    cr_assert(strstr((errp)->message, (substr)) != NULL,                      \
              "message lacks \"%s\": %s", (substr), (errp)->message)

#endif
