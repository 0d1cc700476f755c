/* xz_file.c — see xz_file.h. liblzma's stream decoder (the library xz-utils
 * itself uses), input read in chunks so a file is never held twice. */
#include "xz_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lzma.h>

/* `xz -9e` needs a 64 MiB dictionary to decode; more means a file not made
 * the way the test data is. */
#define XZ_MEMLIMIT ((uint64_t)128 << 20)

static const char *lzma_reason(lzma_ret ret)
{
    switch (ret) {
    case LZMA_FORMAT_ERROR:
        return "not an xz file";
    case LZMA_DATA_ERROR:
        return "corrupt xz data";
    case LZMA_BUF_ERROR:
        return "truncated xz data";
    case LZMA_MEMLIMIT_ERROR:
        return "xz dictionary larger than 128 MiB";
    case LZMA_MEM_ERROR:
        return "out of memory";
    case LZMA_OPTIONS_ERROR:
        return "unsupported xz options";
    default:
        return "xz decoder error";
    }
}

/* Makes room for more output: grows *buf up to cap + 1 bytes (one more than
 * any accepted content, so an oversized file shows as a full buffer). */
static int grow(lzma_stream *s, char **buf, size_t *alloc, size_t cap)
{
    if (*alloc > cap)
        return -1;
    size_t n = *alloc ? *alloc * 2 : (size_t)1 << 16;
    if (n > cap + 1)
        n = cap + 1;
    char *p = realloc(*buf, n);
    if (!p)
        return -2;
    s->next_out = (uint8_t *)p + *alloc;
    s->avail_out = n - *alloc;
    *buf = p;
    *alloc = n;
    return 0;
}

/* Decodes all of f into *buf (s->total_out bytes); 0, or -1 with msg. */
static int decode(FILE *f, lzma_stream *s, size_t cap, char **buf, char *msg, size_t msgn)
{
    uint8_t in[1 << 16];
    size_t alloc = 0;
    lzma_action action = LZMA_RUN;
    lzma_ret ret;
    do {
        if (s->avail_in == 0 && action == LZMA_RUN) {
            s->next_in = in;
            s->avail_in = fread(in, 1, sizeof in, f);
            if (ferror(f)) {
                snprintf(msg, msgn, "read error: %s", strerror(errno));
                return -1;
            }
            if (feof(f))
                action = LZMA_FINISH;
        }
        if (s->avail_out == 0) {
            int g = grow(s, buf, &alloc, cap);
            if (g == -1)
                snprintf(msg, msgn, "more than %zu bytes decompressed", cap);
            else if (g)
                snprintf(msg, msgn, "out of memory");
            if (g)
                return -1;
        }
        ret = lzma_code(s, action);
    } while (ret == LZMA_OK);
    if (ret != LZMA_STREAM_END) {
        snprintf(msg, msgn, "%s", lzma_reason(ret));
        return -1;
    }
    if (s->total_out > cap) {
        snprintf(msg, msgn, "more than %zu bytes decompressed", cap);
        return -1;
    }
    return 0;
}

int xz_file_read(const char *path, size_t cap, char **out, size_t *len, char *msg, size_t msgn)
{
    *out = NULL;
    *len = 0;
    char m[200];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msgn, "%s: %s", path, strerror(errno));
        return -1;
    }
    lzma_stream s = LZMA_STREAM_INIT;
    char *buf = NULL;
    lzma_ret init = lzma_stream_decoder(&s, XZ_MEMLIMIT, LZMA_CONCATENATED);
    int rc = init == LZMA_OK ? decode(f, &s, cap, &buf, m, sizeof m) : -1;
    if (init != LZMA_OK)
        snprintf(m, sizeof m, "%s", lzma_reason(init));
    size_t n = (size_t)s.total_out;
    lzma_end(&s);
    fclose(f);
    char *p = rc == 0 ? realloc(buf, n + 1) : NULL;
    if (!p) {
        free(buf);
        snprintf(msg, msgn, "%s: %s", path, rc == 0 ? "out of memory" : m);
        return -1;
    }
    p[n] = '\0';
    *out = p;
    *len = n;
    return 0;
}

json_t *xz_json_load(const char *path, size_t flags, json_error_t *je)
{
    char *buf, msg[sizeof je->text];
    size_t n;
    if (xz_file_read(path, XZ_FILE_CAP, &buf, &n, msg, sizeof msg) != 0) {
        snprintf(je->text, sizeof je->text, "%s", msg);
        return NULL;
    }
    json_t *j = json_loadb(buf, n, flags, je);
    free(buf);
    return j;
}

int xz_file_extract(const char *src, const char *dst, char *msg, size_t msgn)
{
    char *buf;
    size_t n;
    if (xz_file_read(src, XZ_FILE_CAP, &buf, &n, msg, msgn) != 0)
        return -1;
    FILE *f = fopen(dst, "wb");
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    if (!ok)
        snprintf(msg, msgn, "%s: %s", dst, strerror(errno));
    return ok ? 0 : -1;
}
