/* npy.c — NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
 *
 * The header is a Python dict literal, read as NumPy reads it
 * (npy_header.c). Every size is checked against the file before anything is
 * allocated. See docs/formats.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"
#include "npy_header.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_CHUNK (64u * 1024u)

/* ---- reader -------------------------------------------------------------- */

/* errno is read first, before anything can overwrite it; agi_pread_full
 * sets it 0 when the file ended early. */
static int read_error(const char *path, ag_error *err)
{
    int e = errno;
    return ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                        e ? agi_strerror(e) : "file ended early");
}

static int read_data(int fd, size_t offset, ag_dtype dt, size_t itemsize,
                     int fortran, ag_array *a, const char *path, ag_error *err)
{
    size_t nelem = ag_array_size(a);
    if (nelem == 0)
        return AG_OK;
    size_t per_chunk = NPY_CHUNK / itemsize;
    unsigned char *buf = malloc(per_chunk * itemsize);
    if (!buf)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);

    /* C-order strides of the output, and a Fortran-order walk over it:
     * the first index varies fastest. */
    size_t cstride[AG_MAX_DIMS];
    size_t idx[AG_MAX_DIMS] = {0};
    size_t s = 1;
    for (int k = a->ndim - 1; k >= 0; k--) {
        cstride[k] = s;
        s *= a->shape[k];
    }
    size_t dest = 0;

    size_t done = 0;
    while (done < nelem) {
        size_t m = nelem - done < per_chunk ? nelem - done : per_chunk;
        if (agi_pread_full(fd, buf, m * itemsize, offset + done * itemsize) != 0) {
            int rc = read_error(path, err);
            free(buf);
            return rc;
        }
        for (size_t j = 0; j < m; j++) {
            double v = agi_decode_float(dt, buf + j * itemsize);
            if (!fortran) {
                a->data[done + j] = v;
                continue;
            }
            a->data[dest] = v;
            for (int k = 0; k < a->ndim; k++) {
                idx[k]++;
                dest += cstride[k];
                if (idx[k] < a->shape[k])
                    break;
                dest -= idx[k] * cstride[k];
                idx[k] = 0;
            }
        }
        done += m;
    }
    free(buf);
    return AG_OK;
}

/* What the preamble and header of an open .npy file say. */
typedef struct {
    const char *path;
    int fd;
    size_t size;   /* of the file */
    int major;     /* format version major.0 */
    size_t prefix; /* where the header dict starts */
    size_t hlen;   /* its length */
} npy_file;

/* Magic, version and header length, all from the first 12 bytes at most (a
 * short file is read as far as it goes, so the magic is judged first). */
static int read_preamble(npy_file *f, ag_error *err)
{
    unsigned char pre[12];
    size_t got = f->size < sizeof pre ? f->size : sizeof pre;
    if (agi_pread_full(f->fd, pre, got, 0) != 0)
        return read_error(f->path, err);
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: not a .npy file (bad magic; expected "
                            "\\x93NUMPY)",
                            f->path);
    if (got < 8)
        return ag_error_set(err, AG_EFORMAT, "%s: truncated .npy preamble", f->path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: unsupported .npy format version %d.%d "
                            "(accepted: 1.0, 2.0, 3.0)",
                            f->path, major, minor);
    size_t prefix = 8 + (major == 1 ? 2 : 4);
    if (got < prefix)
        return ag_error_set(err, AG_EFORMAT, "%s: truncated .npy preamble", f->path);
    size_t hlen = major == 1 ? agi_le16(pre + 8) : agi_le32(pre + 8);
    if (hlen > AG_NPY_HEADER_MAX)
        return ag_error_set(err, AG_ELIMIT,
                            "%s: .npy header length %zu exceeds the cap of %u bytes",
                            f->path, hlen, AG_NPY_HEADER_MAX);
    if (hlen > f->size - prefix)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: .npy header length %zu goes beyond the end of "
                            "the file (%zu bytes)",
                            f->path, hlen, f->size);
    f->major = major;
    f->prefix = prefix;
    f->hlen = hlen;
    return AG_OK;
}

/* The header text, NUL-terminated, in *hdr (the caller's on success). A NUL
 * byte is refused here, as Python refuses it in source text. */
static int read_header_text(const npy_file *f, char **hdr, ag_error *err)
{
    int rc = AG_OK;
    char *h = malloc(f->hlen + 1);
    if (!h)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", f->path);
    if (agi_pread_full(f->fd, h, f->hlen, f->prefix) != 0) {
        rc = read_error(f->path, err);
        goto fail;
    }
    h[f->hlen] = '\0';
    if (memchr(h, '\0', f->hlen)) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: malformed .npy header: contains a NUL byte", f->path);
        goto fail;
    }
    *hdr = h;
    return AG_OK;
fail:
    free(h);
    return rc;
}

static int descr_dtype(const char *path, const char *descr, ag_dtype *dt,
                       size_t *itemsize, ag_error *err)
{
    if (strcmp(descr, "<f2") == 0) {
        *dt = AG_DT_F16;
        *itemsize = 2;
    } else if (strcmp(descr, "<f4") == 0) {
        *dt = AG_DT_F32;
        *itemsize = 4;
    } else if (strcmp(descr, "<f8") == 0) {
        *dt = AG_DT_F64;
        *itemsize = 8;
    } else {
        return ag_error_set(err, AG_EDTYPE,
                            "%s: unsupported dtype '%.40s' (accepted: '<f2', "
                            "'<f4', '<f8')",
                            path, descr);
    }
    return AG_OK;
}

/* The data must be exactly what the shape needs: checked before anything is
 * allocated, so a forged shape cannot make us allocate for data that is not
 * there. The element count must also fit as doubles. */
static int check_data_size(const npy_file *f, const agi_npy_header *p,
                           size_t itemsize, ag_error *err)
{
    char shp[AG_MAX_DIMS * 24 + 8];
    agi_format_shape(shp, sizeof shp, p->ndim, p->shape);
    size_t nelem = 1, nbytes;
    for (int k = 0; k < p->ndim; k++)
        if (agi_mul(nelem, p->shape[k], &nelem) != 0)
            return ag_error_set(err, AG_ELIMIT, "%s: shape %s is too large",
                                f->path, shp);
    if (agi_mul(nelem, itemsize, &nbytes) != 0 ||
        agi_mul(nelem, sizeof(double), &(size_t){0}) != 0)
        return ag_error_set(err, AG_ELIMIT, "%s: shape %s is too large", f->path,
                            shp);
    size_t avail = f->size - (f->prefix + f->hlen);
    if (nbytes > avail)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: truncated: shape %s needs %zu bytes of data, "
                            "file has %zu",
                            f->path, shp, nbytes, avail);
    if (nbytes < avail)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: %zu unexpected bytes after the data: shape %s "
                            "needs %zu bytes of data, file has %zu",
                            f->path, avail - nbytes, shp, nbytes, avail);
    return AG_OK;
}

/* Everything after the open file: header, then sizes, then the data. */
static int read_npy(npy_file *f, ag_array *out, ag_error *err)
{
    int rc;
    char *hdr = NULL;
    if ((rc = read_preamble(f, err)) != AG_OK ||
        (rc = read_header_text(f, &hdr, err)) != AG_OK)
        return rc;
    agi_npy_header p;
    rc = agi_npy_parse_header(hdr, f->hlen, f->major, f->path, &p, err);
    free(hdr);
    if (rc != AG_OK)
        return rc;
    ag_dtype dt = AG_DT_F64;
    size_t itemsize = 0;
    if ((rc = descr_dtype(f->path, p.descr, &dt, &itemsize, err)) != AG_OK ||
        (rc = check_data_size(f, &p, itemsize, err)) != AG_OK)
        return rc;
    if ((rc = ag_array_alloc(out, p.ndim, p.shape, err)) != AG_OK) {
        if (err)
            ag_error_set(err, rc, "%s: %s", f->path,
                         rc == AG_ENOMEM ? "out of memory" : "shape too large");
        return rc;
    }
    rc = read_data(f->fd, f->prefix + f->hlen, dt, itemsize, p.fortran, out,
                   f->path, err);
    if (rc != AG_OK)
        ag_array_free(out);
    return rc;
}

int ag_npy_read(const char *path, ag_array *out, ag_error *err)
{
    int rc;
    npy_file f = {.path = path, .fd = -1};
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_npy_read: no output array");
    memset(out, 0, sizeof *out);
    if ((rc = agi_open_regular(path, &f.fd, &f.size, err)) != AG_OK)
        return rc;
    rc = read_npy(&f, out, err);
    close(f.fd);
    return rc;
}

/* ---- writer -------------------------------------------------------------- */

static int write_full(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Rank and size checks; *nelem is the element count. Sizes are checked as
 * bytes (itemsize per element) because that is what gets written. */
static int check_shape(const char *path, int ndim, const size_t *shape, size_t itemsize,
                       size_t *nelem, ag_error *err)
{
    size_t n = 1, nbytes;
    if (ndim < 0 || ndim > AG_MAX_DIMS)
        return ag_error_set(err, AG_ESHAPE, "%s: array rank %d is outside 0..%d",
                            path, ndim, AG_MAX_DIMS);
    for (int k = 0; k < ndim; k++)
        if (agi_mul(n, shape[k], &n) != 0)
            return ag_error_set(err, AG_ELIMIT, "%s: array too large", path);
    if (agi_mul(n, itemsize, &nbytes) != 0)
        return ag_error_set(err, AG_ELIMIT, "%s: array too large", path);
    *nelem = n;
    return AG_OK;
}

/* Preamble and header dict, as numpy writes them: version 1.0 unless the
 * header does not fit its 16-bit length, padded with spaces and a '\n' so
 * the data starts on a NPY_ALIGN boundary. *head (malloc'd, *padded bytes)
 * is the caller's on success. */
static int build_header(const char *path, const char *descr, int ndim, const size_t *shape,
                        unsigned char **head, size_t *padded, ag_error *err)
{
    char shp[AG_MAX_DIMS * 24 + 8];
    agi_format_shape(shp, sizeof shp, ndim, shape);
    char dict[512];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      descr, shp);
    if (dl < 0 || (size_t)dl >= sizeof dict)
        return ag_error_set(err, AG_EINVAL, "%s: header too long", path);
    int major = 1;
    size_t prefix = 10;
    size_t total = prefix + (size_t)dl + 1; /* + '\n' */
    size_t pad = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (pad - prefix > 65535) {
        major = 2;
        prefix = 12;
        total = prefix + (size_t)dl + 1;
        pad = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    }
    size_t hlen = pad - prefix;
    unsigned char *h = malloc(pad);
    if (!h)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    memcpy(h, NPY_MAGIC, NPY_MAGIC_LEN);
    h[6] = (unsigned char)major;
    h[7] = 0;
    for (size_t b = 0; b < prefix - 8; b++)
        h[8 + b] = (unsigned char)(hlen >> (8 * b));
    memcpy(h + prefix, dict, (size_t)dl);
    memset(h + prefix + dl, ' ', hlen - (size_t)dl - 1);
    h[pad - 1] = '\n';
    *head = h;
    *padded = pad;
    return AG_OK;
}

/* ---- incremental writer: the header for the whole shape, then the values
 * in pieces, so a caller producing an array piece by piece (a layer at a
 * time) never holds all of it. */

struct ag_npy_writer {
    int fd;
    char *name;         /* for messages */
    size_t total, done; /* values the shape holds, values written */
    int status;         /* the first failure (AG_OK: none), repeated after it */
    unsigned char buf[NPY_CHUNK]; /* little-endian bytes on their way out */
};

/* A failed write: the first failure sticks, so every later call refuses
 * with the same status (the bytes already out are a truncated file). */
static int writer_io_error(ag_npy_writer *w, int e, ag_error *err)
{
    w->status = AG_EIO;
    return ag_error_set(err, AG_EIO, "%s: cannot write: %s", w->name, agi_strerror(e));
}

int ag_npy_writer_open(int fd, const char *name, int ndim, const size_t *shape,
                       ag_npy_writer **out, ag_error *err)
{
    size_t nelem = 0, padded = 0;
    unsigned char *head = NULL;
    int rc;
    if (!out || !name || (ndim > 0 && !shape))
        return ag_error_set(err, AG_EINVAL, "ag_npy_writer_open: no name, shape or output");
    *out = NULL;
    if ((rc = check_shape(name, ndim, shape, 8, &nelem, err)) != AG_OK ||
        (rc = build_header(name, "<f8", ndim, shape, &head, &padded, err)) != AG_OK)
        return rc;
    ag_npy_writer *w = malloc(sizeof *w);
    char *copy = strdup(name);
    if (!w || !copy) {
        free(w);
        free(copy);
        free(head);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    }
    *w = (ag_npy_writer){.fd = fd, .name = copy, .total = nelem};
    int e = write_full(fd, head, padded) != 0 ? errno : 0;
    free(head);
    if (e) {
        rc = writer_io_error(w, e, err);
        ag_npy_writer_close(w, NULL);
        return rc;
    }
    *out = w;
    return AG_OK;
}

/* The doubles little-endian whatever the host order, a buffer at a time. */
int ag_npy_writer_write(ag_npy_writer *w, const double *values, size_t count, ag_error *err)
{
    if (!w || (count > 0 && !values))
        return ag_error_set(err, AG_EINVAL, "ag_npy_writer_write: no writer or values");
    if (w->status != AG_OK)
        return ag_error_set(err, w->status, "%s: an earlier write failed", w->name);
    if (count > w->total - w->done) {
        w->status = AG_ESHAPE;
        return ag_error_set(err, AG_ESHAPE, "%s: %zu more values than the shape's %zu",
                            w->name, count - (w->total - w->done), w->total);
    }
    size_t per_buf = sizeof w->buf / 8;
    for (size_t done = 0; done < count;) {
        size_t m = count - done < per_buf ? count - done : per_buf;
        for (size_t j = 0; j < m; j++) {
            uint64_t u;
            memcpy(&u, &values[done + j], 8);
            for (int b = 0; b < 8; b++)
                w->buf[8 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (write_full(w->fd, w->buf, m * 8) != 0)
            return writer_io_error(w, errno, err);
        done += m;
        w->done += m;
    }
    return AG_OK;
}

int ag_npy_writer_close(ag_npy_writer *w, ag_error *err)
{
    if (!w)
        return AG_OK;
    int rc = w->status;
    if (rc == AG_OK && w->done != w->total)
        rc = ag_error_set(err, AG_ESHAPE, "%s: %zu of the shape's %zu values written",
                          w->name, w->done, w->total);
    free(w->name);
    free(w);
    return rc;
}

int ag_npy_write_fd(int fd, const char *name, const ag_array *a, ag_error *err)
{
    if (!name || !a)
        return ag_error_set(err, AG_EINVAL, "ag_npy_write_fd: no name or array");
    size_t nelem = 0;
    ag_npy_writer *w = NULL;
    int rc = check_shape(name, a->ndim, a->shape, 8, &nelem, err);
    if (rc == AG_OK && nelem > 0 && !a->data)
        rc = ag_error_set(err, AG_EINVAL, "%s: array has no data", name);
    if (rc == AG_OK)
        rc = ag_npy_writer_open(fd, name, a->ndim, a->shape, &w, err);
    if (rc == AG_OK)
        rc = ag_npy_writer_write(w, a->data, nelem, err);
    int closed = ag_npy_writer_close(w, rc == AG_OK ? err : NULL);
    return rc == AG_OK ? closed : rc;
}

/* A temporary file next to path (so the final rename stays on one file
 * system); *tmp, its name, is the caller's on success. */
static int open_temp(const char *path, char **tmp, int *fd, ag_error *err)
{
    size_t plen = strlen(path);
    char *t = malloc(plen + 16);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    memcpy(t, path, plen);
    memcpy(t + plen, ".tmp.XXXXXX", 12);
    int f = mkstemp(t);
    if (f < 0) {
        int e = errno;
        free(t);
        return ag_error_set(err, AG_EIO, "%s: cannot create a temporary file: %s",
                            path, agi_strerror(e));
    }
    /* mkstemp makes the file 0600; give it the usual mode (or keep the mode
     * of the file being replaced). */
    struct stat old;
    mode_t mode = 0644;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode))
        mode = old.st_mode & 07777;
    (void)fchmod(f, mode);
    *tmp = t;
    *fd = f;
    return AG_OK;
}

/* Writes a whole .npy to an open descriptor; ctx is what to write. */
typedef int (*npy_fd_writer)(int fd, const char *name, const void *ctx, ag_error *err);

/* Written to a temporary file and renamed over path, so readers never see a
 * half-written array and a failure leaves any old file intact. A device or
 * FIFO at path is refused: renaming over it would replace it (as root,
 * /dev/null itself). */
static int write_atomic(const char *path, npy_fd_writer write_fd, const void *ctx, ag_error *err)
{
    int rc, fd = -1;
    char *tmp = NULL;
    struct stat old;
    if (stat(path, &old) == 0 && !S_ISREG(old.st_mode) && !S_ISDIR(old.st_mode))
        return ag_error_set(err, AG_EIO, "%s: is not a regular file (ag_npy_write_fd writes "
                            "to a device or FIFO)", path);
    if ((rc = open_temp(path, &tmp, &fd, err)) != AG_OK)
        return rc;
    rc = write_fd(fd, path, ctx, err);
    int e = 0;
    /* file systems that cannot sync (EINVAL, EROFS) still wrote the data */
    if (rc == AG_OK && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (close(fd) != 0 && rc == AG_OK && !e)
        e = errno;
    if (rc == AG_OK && !e && rename(tmp, path) != 0)
        e = errno;
    if (rc == AG_OK && e)
        rc = ag_error_set(err, AG_EIO, "%s: cannot write: %s", path, agi_strerror(e));
    if (rc != AG_OK)
        unlink(tmp);
    free(tmp);
    return rc;
}

static int write_array_fd(int fd, const char *name, const void *ctx, ag_error *err)
{
    return ag_npy_write_fd(fd, name, ctx, err);
}

int ag_npy_write(const char *path, const ag_array *a, ag_error *err)
{
    if (!path || !a)
        return ag_error_set(err, AG_EINVAL, "ag_npy_write: no path or array");
    return write_atomic(path, write_array_fd, a, err);
}

/* ---- float32 arrays ('<f4'): features and inputs kept as the model reads
 * them (attngeom/audio.h) --------------------------------------------------- */

typedef struct {
    int ndim;
    const size_t *shape;
    const float *data;
} f32_array;

/* The '<f4' header, then the floats little-endian whatever the host order,
 * a buffer at a time. */
static int write_f32_fd(int fd, const char *name, const void *ctx, ag_error *err)
{
    const f32_array *a = ctx;
    size_t nelem = 0, padded = 0;
    unsigned char *head = NULL;
    int rc = check_shape(name, a->ndim, a->shape, 4, &nelem, err);
    if (rc == AG_OK && nelem > 0 && !a->data)
        rc = ag_error_set(err, AG_EINVAL, "%s: array has no data", name);
    if (rc == AG_OK)
        rc = build_header(name, "<f4", a->ndim, a->shape, &head, &padded, err);
    if (rc != AG_OK)
        return rc;
    int failed = write_full(fd, head, padded) != 0;
    free(head);
    unsigned char buf[4096];
    for (size_t done = 0; !failed && done < nelem;) {
        size_t m = nelem - done < sizeof buf / 4 ? nelem - done : sizeof buf / 4;
        for (size_t j = 0; j < m; j++) {
            uint32_t u;
            memcpy(&u, &a->data[done + j], 4);
            for (int b = 0; b < 4; b++)
                buf[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        failed = write_full(fd, buf, m * 4) != 0;
        done += m;
    }
    if (failed)
        return ag_error_set(err, AG_EIO, "%s: cannot write: %s", name, agi_strerror(errno));
    return AG_OK;
}

int ag_npy_write_f32(const char *path, int ndim, const size_t *shape, const float *data,
                     ag_error *err)
{
    if (!path || (ndim > 0 && !shape))
        return ag_error_set(err, AG_EINVAL, "ag_npy_write_f32: no path or shape");
    f32_array a = {.ndim = ndim, .shape = shape, .data = data};
    return write_atomic(path, write_f32_fd, &a, err);
}

int ag_npy_write_f32_fd(int fd, const char *name, int ndim, const size_t *shape,
                        const float *data, ag_error *err)
{
    if (!name || (ndim > 0 && !shape))
        return ag_error_set(err, AG_EINVAL, "ag_npy_write_f32_fd: no name or shape");
    f32_array a = {.ndim = ndim, .shape = shape, .data = data};
    return write_f32_fd(fd, name, &a, err);
}
