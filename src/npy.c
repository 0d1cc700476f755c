/* npy.c — NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
 *
 * The header is a Python dict literal, parsed here by hand: keys 'descr',
 * 'fortran_order' and 'shape' in any order, single or double quotes, optional
 * trailing comma, any whitespace. Every size is checked against the file
 * before anything is allocated. See docs/formats.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_CHUNK (64u * 1024u)

/* ---- header dict parser -------------------------------------------------- */

typedef struct {
    const char *s; /* header text (not NUL-terminated) */
    size_t n, i;
    const char *path;
    ag_error *err;
    /* results */
    char descr[64];
    int have_descr, have_fortran, have_shape;
    int fortran;
    int ndim;
    size_t shape[AG_MAX_DIMS];
} npy_parser;

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(npy_parser *p)
{
    while (p->i < p->n && is_ws(p->s[p->i]))
        p->i++;
}

static int bad(npy_parser *p, const char *what)
{
    return ag_error_set(p->err, AG_EFORMAT,
                        "%s: malformed .npy header: %s (at byte %zu of the "
                        "header dict)",
                        p->path, what, p->i);
}

/* Parse a quoted Python string into out (truncated to outsize-1, *full_len
 * gets the real length). Backslash escapes are kept as the escaped char. */
static int parse_string(npy_parser *p, char *out, size_t outsize, size_t *full_len)
{
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
        return bad(p, "expected a quoted string");
    char q = p->s[p->i++];
    size_t len = 0;
    for (;;) {
        if (p->i >= p->n)
            return bad(p, "unterminated string");
        char c = p->s[p->i++];
        if (c == q)
            break;
        if (c == '\n' || c == '\0')
            return bad(p, "unterminated string");
        if (c == '\\') {
            if (p->i >= p->n)
                return bad(p, "unterminated string");
            c = p->s[p->i++];
        }
        if (len + 1 < outsize)
            out[len] = c;
        len++;
    }
    out[len + 1 < outsize ? len : outsize - 1] = '\0';
    if (full_len)
        *full_len = len;
    return AG_OK;
}

static int match_word(npy_parser *p, const char *w)
{
    size_t l = strlen(w);
    if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
        return 0;
    /* the word must end here */
    if (p->i + l < p->n) {
        char c = p->s[p->i + l];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '_')
            return 0;
    }
    p->i += l;
    return 1;
}

static int parse_shape(npy_parser *p)
{
    if (p->i >= p->n || p->s[p->i] != '(')
        return bad(p, "'shape' must be a tuple such as (3, 4)");
    p->i++;
    int ndim = 0;
    int trailing_comma = 0;
    skip_ws(p);
    while (p->i < p->n && p->s[p->i] != ')') {
        if (p->s[p->i] == '-')
            return ag_error_set(p->err, AG_ESHAPE,
                                "%s: negative dimension in shape", p->path);
        if (p->s[p->i] < '0' || p->s[p->i] > '9')
            return bad(p, "shape entries must be non-negative integers");
        size_t v = 0;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            size_t d = (size_t)(p->s[p->i] - '0');
            if (v > (SIZE_MAX - d) / 10)
                return ag_error_set(p->err, AG_ELIMIT,
                                    "%s: shape dimension too large", p->path);
            v = v * 10 + d;
            p->i++;
        }
        if (p->i < p->n && p->s[p->i] == 'L') /* Python 2 long */
            p->i++;
        if (ndim >= AG_MAX_DIMS)
            return ag_error_set(p->err, AG_ESHAPE,
                                "%s: shape has more than %d dimensions",
                                p->path, AG_MAX_DIMS);
        p->shape[ndim++] = v;
        skip_ws(p);
        trailing_comma = 0;
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            trailing_comma = 1;
            skip_ws(p);
        } else if (p->i < p->n && p->s[p->i] != ')') {
            return bad(p, "expected ',' or ')' in shape");
        }
    }
    if (p->i >= p->n)
        return bad(p, "unterminated shape tuple");
    p->i++; /* ')' */
    if (ndim == 1 && !trailing_comma)
        return bad(p, "shape (n) is not a tuple; a 1-D shape is written (n,)");
    p->ndim = ndim;
    return AG_OK;
}

static int parse_header(npy_parser *p)
{
    int rc;
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != '{')
        return bad(p, "expected '{'");
    p->i++;
    for (;;) {
        skip_ws(p);
        if (p->i >= p->n)
            return bad(p, "unterminated dict");
        if (p->s[p->i] == '}') {
            p->i++;
            break;
        }
        char key[32];
        size_t keylen;
        if ((rc = parse_string(p, key, sizeof key, &keylen)) != AG_OK)
            return rc;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ':')
            return bad(p, "expected ':' after a key");
        p->i++;
        skip_ws(p);
        if (keylen < sizeof key && strcmp(key, "descr") == 0) {
            if (p->have_descr)
                return bad(p, "duplicate key 'descr'");
            if (p->i < p->n && p->s[p->i] == '[')
                return ag_error_set(p->err, AG_EDTYPE,
                                    "%s: unsupported dtype (structured array); "
                                    "accepted: '<f2', '<f4', '<f8'",
                                    p->path);
            size_t dl;
            if ((rc = parse_string(p, p->descr, sizeof p->descr, &dl)) != AG_OK)
                return rc;
            p->have_descr = 1;
        } else if (keylen < sizeof key && strcmp(key, "fortran_order") == 0) {
            if (p->have_fortran)
                return bad(p, "duplicate key 'fortran_order'");
            if (match_word(p, "True"))
                p->fortran = 1;
            else if (match_word(p, "False"))
                p->fortran = 0;
            else
                return bad(p, "'fortran_order' must be True or False");
            p->have_fortran = 1;
        } else if (keylen < sizeof key && strcmp(key, "shape") == 0) {
            if (p->have_shape)
                return bad(p, "duplicate key 'shape'");
            if ((rc = parse_shape(p)) != AG_OK)
                return rc;
            p->have_shape = 1;
        } else {
            return ag_error_set(p->err, AG_EFORMAT,
                                "%s: malformed .npy header: unexpected key "
                                "'%.40s'",
                                p->path, key);
        }
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == '}') {
            p->i++;
            break;
        }
        return bad(p, "expected ',' or '}'");
    }
    /* only padding may follow the dict */
    skip_ws(p);
    if (p->i != p->n)
        return bad(p, "unexpected text after the dict");
    if (!p->have_descr)
        return ag_error_set(p->err, AG_EFORMAT,
                            "%s: malformed .npy header: no 'descr' key", p->path);
    if (!p->have_fortran)
        return ag_error_set(p->err, AG_EFORMAT,
                            "%s: malformed .npy header: no 'fortran_order' key",
                            p->path);
    if (!p->have_shape)
        return ag_error_set(p->err, AG_EFORMAT,
                            "%s: malformed .npy header: no 'shape' key", p->path);
    return AG_OK;
}

/* ---- reader -------------------------------------------------------------- */

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
            int e = errno;
            free(buf);
            return ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                                e ? strerror(e) : "file ended early");
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

int ag_npy_read(const char *path, ag_array *out, ag_error *err)
{
    int fd = -1, rc;
    size_t size;
    char *hdr = NULL;
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_npy_read: no output array");
    memset(out, 0, sizeof *out);
    if ((rc = agi_open_regular(path, &fd, &size, err)) != AG_OK)
        return rc;

    unsigned char pre[12];
    size_t got = size < sizeof pre ? size : sizeof pre;
    if (agi_pread_full(fd, pre, got, 0) != 0) {
        int e = errno;
        rc = ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                          e ? strerror(e) : "file ended early");
        goto done;
    }
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: not a .npy file (bad magic; expected "
                          "\\x93NUMPY)",
                          path);
        goto done;
    }
    if (got < 8) {
        rc = ag_error_set(err, AG_EFORMAT, "%s: truncated .npy preamble", path);
        goto done;
    }
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: unsupported .npy format version %d.%d "
                          "(accepted: 1.0, 2.0, 3.0)",
                          path, major, minor);
        goto done;
    }
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t prefix = 8 + lenbytes;
    if (got < prefix) {
        rc = ag_error_set(err, AG_EFORMAT, "%s: truncated .npy preamble", path);
        goto done;
    }
    size_t hlen = major == 1 ? agi_le16(pre + 8) : agi_le32(pre + 8);
    if (hlen > AG_NPY_HEADER_MAX) {
        rc = ag_error_set(err, AG_ELIMIT,
                          "%s: .npy header length %zu exceeds the cap of %u bytes",
                          path, hlen, AG_NPY_HEADER_MAX);
        goto done;
    }
    if (hlen > size - prefix) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: .npy header length %zu goes beyond the end of "
                          "the file (%zu bytes)",
                          path, hlen, size);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if (agi_pread_full(fd, hdr, hlen, prefix) != 0) {
        int e = errno;
        rc = ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                          e ? strerror(e) : "file ended early");
        goto done;
    }
    hdr[hlen] = '\0';
    if (memchr(hdr, '\0', hlen)) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: malformed .npy header: contains a NUL byte", path);
        goto done;
    }
    if (major < 3) { /* versions 1 and 2: latin-1; only ASCII is meaningful */
        for (size_t i = 0; i < hlen; i++)
            if ((unsigned char)hdr[i] >= 0x80) {
                rc = ag_error_set(err, AG_EFORMAT,
                                  "%s: malformed .npy header: non-ASCII byte "
                                  "in a version %d.0 header",
                                  path, major);
                goto done;
            }
    }

    npy_parser p = {.s = hdr, .n = hlen, .path = path, .err = err};
    if ((rc = parse_header(&p)) != AG_OK)
        goto done;

    ag_dtype dt;
    size_t itemsize;
    if (strcmp(p.descr, "<f2") == 0) {
        dt = AG_DT_F16;
        itemsize = 2;
    } else if (strcmp(p.descr, "<f4") == 0) {
        dt = AG_DT_F32;
        itemsize = 4;
    } else if (strcmp(p.descr, "<f8") == 0) {
        dt = AG_DT_F64;
        itemsize = 8;
    } else {
        rc = ag_error_set(err, AG_EDTYPE,
                          "%s: unsupported dtype '%.40s' (accepted: '<f2', "
                          "'<f4', '<f8')",
                          path, p.descr);
        goto done;
    }

    char shp[AG_MAX_DIMS * 24 + 8];
    agi_format_shape(shp, sizeof shp, p.ndim, p.shape);
    size_t nelem = 1, nbytes;
    for (int k = 0; k < p.ndim; k++)
        if (agi_mul(nelem, p.shape[k], &nelem) != 0) {
            rc = ag_error_set(err, AG_ELIMIT, "%s: shape %s is too large", path,
                              shp);
            goto done;
        }
    if (agi_mul(nelem, itemsize, &nbytes) != 0 ||
        agi_mul(nelem, sizeof(double), &(size_t){0}) != 0) {
        rc = ag_error_set(err, AG_ELIMIT, "%s: shape %s is too large", path, shp);
        goto done;
    }
    size_t data_off = prefix + hlen;
    size_t avail = size - data_off;
    if (nbytes > avail) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: truncated: shape %s needs %zu bytes of data, "
                          "file has %zu",
                          path, shp, nbytes, avail);
        goto done;
    }
    if (nbytes < avail) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: %zu unexpected bytes after the data: shape %s "
                          "needs %zu bytes of data, file has %zu",
                          path, avail - nbytes, shp, nbytes, avail);
        goto done;
    }

    if ((rc = ag_array_alloc(out, p.ndim, p.shape, err)) != AG_OK) {
        if (err)
            ag_error_set(err, rc, "%s: %s", path,
                         rc == AG_ENOMEM ? "out of memory" : "shape too large");
        goto done;
    }
    rc = read_data(fd, data_off, dt, itemsize, p.fortran, out, path, err);
    if (rc != AG_OK)
        ag_array_free(out);

done:
    free(hdr);
    if (fd >= 0)
        close(fd);
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

int ag_npy_write(const char *path, const ag_array *a, ag_error *err)
{
    if (!path || !a)
        return ag_error_set(err, AG_EINVAL, "ag_npy_write: no path or array");
    if (a->ndim < 0 || a->ndim > AG_MAX_DIMS)
        return ag_error_set(err, AG_ESHAPE, "%s: array rank %d is outside 0..%d",
                            path, a->ndim, AG_MAX_DIMS);
    size_t nelem = 1, nbytes;
    for (int k = 0; k < a->ndim; k++)
        if (agi_mul(nelem, a->shape[k], &nelem) != 0)
            return ag_error_set(err, AG_ELIMIT, "%s: array too large", path);
    if (agi_mul(nelem, 8, &nbytes) != 0)
        return ag_error_set(err, AG_ELIMIT, "%s: array too large", path);
    if (nelem > 0 && !a->data)
        return ag_error_set(err, AG_EINVAL, "%s: array has no data", path);

    /* header dict, as numpy writes it */
    char shp[AG_MAX_DIMS * 24 + 8];
    agi_format_shape(shp, sizeof shp, a->ndim, a->shape);
    char dict[512];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }",
                      shp);
    if (dl < 0 || (size_t)dl >= sizeof dict)
        return ag_error_set(err, AG_EINVAL, "%s: header too long", path);
    int major = 1;
    size_t prefix = 10;
    size_t total = prefix + (size_t)dl + 1; /* + '\n' */
    size_t padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (padded - prefix > 65535) {
        major = 2;
        prefix = 12;
        total = prefix + (size_t)dl + 1;
        padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    }
    size_t hlen = padded - prefix;
    unsigned char *head = malloc(padded);
    if (!head)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
    head[6] = (unsigned char)major;
    head[7] = 0;
    for (size_t b = 0; b < prefix - 8; b++)
        head[8 + b] = (unsigned char)(hlen >> (8 * b));
    memcpy(head + prefix, dict, (size_t)dl);
    memset(head + prefix + dl, ' ', hlen - (size_t)dl - 1);
    head[padded - 1] = '\n';

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        free(head);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(head);
        free(tmp);
        return ag_error_set(err, AG_EIO, "%s: cannot create a temporary file: %s",
                            path, strerror(e));
    }
    /* mkstemp makes the file 0600; give it the usual mode (or keep the mode
     * of the file being replaced). */
    struct stat old;
    mode_t mode = 0644;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode))
        mode = old.st_mode & 07777;
    (void)fchmod(fd, mode);

    int e = 0;
    if (write_full(fd, head, padded) != 0)
        e = errno;
    unsigned char buf[8 * 1024];
    size_t done = 0;
    while (!e && done < nelem) {
        size_t m = nelem - done < sizeof buf / 8 ? nelem - done : sizeof buf / 8;
        for (size_t j = 0; j < m; j++) {
            uint64_t u;
            memcpy(&u, &a->data[done + j], 8);
            for (int b = 0; b < 8; b++)
                buf[8 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (write_full(fd, buf, m * 8) != 0)
            e = errno;
        done += m;
    }
    if (!e && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        free(head);
        free(tmp);
        return ag_error_set(err, AG_EIO, "%s: cannot write: %s", path,
                            strerror(e));
    }
    free(head);
    free(tmp);
    return AG_OK;
}
