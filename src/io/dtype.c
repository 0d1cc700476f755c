/* dtype.c — element types, exact half/bfloat16 conversion and small helpers
 * shared by the tensor-file readers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

static const struct {
    const char *name;
    unsigned bits;
} dtype_table[AG_DT_COUNT] = {
    [AG_DT_BOOL] = {"BOOL", 8},
    [AG_DT_U8] = {"U8", 8},
    [AG_DT_I8] = {"I8", 8},
    [AG_DT_I16] = {"I16", 16},
    [AG_DT_U16] = {"U16", 16},
    [AG_DT_I32] = {"I32", 32},
    [AG_DT_U32] = {"U32", 32},
    [AG_DT_I64] = {"I64", 64},
    [AG_DT_U64] = {"U64", 64},
    [AG_DT_F4] = {"F4", 4},
    [AG_DT_F6_E2M3] = {"F6_E2M3", 6},
    [AG_DT_F6_E3M2] = {"F6_E3M2", 6},
    [AG_DT_F8_E5M2] = {"F8_E5M2", 8},
    [AG_DT_F8_E4M3] = {"F8_E4M3", 8},
    [AG_DT_F8_E8M0] = {"F8_E8M0", 8},
    [AG_DT_F16] = {"F16", 16},
    [AG_DT_BF16] = {"BF16", 16},
    [AG_DT_F32] = {"F32", 32},
    [AG_DT_F64] = {"F64", 64},
    [AG_DT_C64] = {"C64", 64},
    [AG_DT_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8},
    [AG_DT_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8},
};

const char *ag_dtype_name(ag_dtype dt)
{
    if ((int)dt < 0 || dt >= AG_DT_COUNT)
        return "?";
    return dtype_table[dt].name;
}

unsigned ag_dtype_bits(ag_dtype dt)
{
    if ((int)dt < 0 || dt >= AG_DT_COUNT)
        return 0;
    return dtype_table[dt].bits;
}

int ag_dtype_is_float(ag_dtype dt)
{
    return dt == AG_DT_F16 || dt == AG_DT_BF16 || dt == AG_DT_F32 ||
           dt == AG_DT_F64;
}

int agi_dtype_from_name(const char *name, ag_dtype *out)
{
    for (int i = 0; i < AG_DT_COUNT; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (ag_dtype)i;
            return 0;
        }
    }
    return -1;
}

/* IEEE binary16 -> binary64, exact for every input (subnormals, ±inf, and
 * NaN with its sign and payload carried over). */
double ag_half_to_double(uint16_t h)
{
    uint64_t sign = (uint64_t)(h >> 15) << 63;
    unsigned exp = (h >> 10) & 0x1f;
    uint64_t man = h & 0x3ff;
    uint64_t bits;
    if (exp == 0x1f) {
        bits = sign | ((uint64_t)0x7ff << 52) | (man << 42);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {
            /* subnormal: man * 2^-24; normalise */
            int e = -14;
            while (!(man & 0x400)) {
                man <<= 1;
                e--;
            }
            man &= 0x3ff;
            bits = sign | ((uint64_t)(e + 1023) << 52) | (man << 42);
        }
    } else {
        bits = sign | ((uint64_t)(exp - 15 + 1023) << 52) | (man << 42);
    }
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* bfloat16 is the top half of a binary32: widen, then convert (exact). */
double ag_bfloat16_to_double(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

double agi_decode_float(ag_dtype dt, const unsigned char *p)
{
    switch (dt) {
    case AG_DT_F16:
        return ag_half_to_double(agi_le16(p));
    case AG_DT_BF16:
        return ag_bfloat16_to_double(agi_le16(p));
    case AG_DT_F32: {
        uint32_t u = agi_le32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        return (double)f;
    }
    case AG_DT_F64: {
        uint64_t u = agi_le64(p);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    default:
        return 0.0;
    }
}

void agi_format_shape(char *buf, size_t bufsize, int ndim, const size_t *shape)
{
    size_t used = 0;
    int n;
    if (bufsize == 0)
        return;
    buf[0] = '\0';
    n = snprintf(buf, bufsize, "(");
    used = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < ndim && used < bufsize; i++) {
        n = snprintf(buf + used, bufsize - used, "%s%zu", i ? ", " : "",
                     shape[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if (used < bufsize)
        snprintf(buf + used, bufsize - used, "%s)", ndim == 1 ? "," : "");
}

int agi_open_regular(const char *path, int *fd_out, size_t *size, ag_error *err)
{
    struct stat st;
    int fd;
    *fd_out = -1;
    *size = 0;
    int rc = agi_open_input(path, &fd, &st, err);
    if (rc != AG_OK)
        return rc;
    if (st.st_size == 0) {
        close(fd);
        return ag_error_set(err, AG_EFORMAT, "%s: empty file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return ag_error_set(err, AG_ELIMIT, "%s: file too large", path);
    }
    *fd_out = fd;
    *size = (size_t)st.st_size;
    return AG_OK;
}

int agi_pread_full(int fd, void *buf, size_t len, size_t offset)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)offset);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = 0;
            return -1;
        }
        p += r;
        len -= (size_t)r;
        offset += (size_t)r;
    }
    return 0;
}
