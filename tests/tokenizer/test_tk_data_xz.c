/* test_tk_data_xz.c — tests/util/xz_file.h, the reader of the xz-compressed
 * expected files (tests/data/tokenize/, tests/data/vocab/): the content it
 * returns is the xz program's (an independent reader of the same format),
 * and every kind of damage is an error, never a short or wrong buffer. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/xz_file.h"

#define PIECES "tests/data/tokenize/pretok/pieces.json.xz"

/* The whole of a file (or of a command's output, popen'd), asserted. */
static char *slurp_stream(FILE *f, size_t *n)
{
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    *n = len;
    return buf;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *b = slurp_stream(f, n);
    fclose(f);
    return b;
}

/* A new temporary file holding bytes[0, n); its path in path[64]. */
static void write_tmp(char *path, const char *bytes, size_t n)
{
    strcpy(path, "/tmp/ag_xz.XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, bytes, n), (ssize_t)n);
    close(fd);
}

/* xz_file_read of `path` fails with a message naming the path and `why`. */
static void expect_fail(const char *path, size_t cap, const char *why)
{
    char *out = (char *)1, msg[512];
    size_t len = 7;
    cr_expect_eq(xz_file_read(path, cap, &out, &len, msg, sizeof msg), -1, "%s read", path);
    cr_expect_null(out);
    cr_expect_eq(len, 0);
    cr_expect(strstr(msg, path) && strstr(msg, why), "message \"%s\" lacks \"%s\"", msg, why);
}

Test(tk_data_xz, content_is_the_xz_programs)
{
    char *out, msg[256];
    size_t len, n;
    cr_assert_eq(xz_file_read(PIECES, XZ_FILE_CAP, &out, &len, msg, sizeof msg), 0, "%s", msg);
    FILE *p = popen("xz -dc " PIECES, "r");
    cr_assert_not_null(p);
    char *want = slurp_stream(p, &n);
    cr_assert_eq(pclose(p), 0);
    cr_expect_eq(len, n);
    cr_expect(len == n && memcmp(out, want, n) == 0, "content differs from xz -dc");
    cr_expect_eq(out[len], '\0');
    cr_expect_eq(strlen(out), len, "the JSON holds no NUL");
    free(out);
    free(want);
}

Test(tk_data_xz, cap_is_exact)
{
    char *out, msg[256];
    size_t len, n;
    cr_assert_eq(xz_file_read(PIECES, XZ_FILE_CAP, &out, &len, msg, sizeof msg), 0, "%s", msg);
    free(out);
    cr_expect_eq(xz_file_read(PIECES, len, &out, &n, msg, sizeof msg), 0, "cap = size: %s", msg);
    cr_expect_eq(n, len);
    free(out);
    expect_fail(PIECES, len - 1, "more than");
    expect_fail(PIECES, 100, "more than");
}

Test(tk_data_xz, damage_is_an_error)
{
    size_t n;
    char *bytes = slurp(PIECES, &n), path[64];
    cr_assert_gt(n, 1000);
    /* one flipped byte inside the compressed data: LZMA2 or CRC64 catches it */
    bytes[n / 2] ^= 0x20;
    write_tmp(path, bytes, n);
    expect_fail(path, XZ_FILE_CAP, "corrupt");
    json_error_t je;
    cr_expect_null(xz_json_load(path, 0, &je));
    cr_expect(strstr(je.text, "corrupt"), "%s", je.text);
    unlink(path);
    bytes[n / 2] ^= 0x20;
    /* the stream cut short */
    write_tmp(path, bytes, n / 2);
    expect_fail(path, XZ_FILE_CAP, "truncated");
    unlink(path);
    /* not xz at all: plain JSON, and fewer bytes than a stream header */
    expect_fail("tools/tokenize_ref/texts_families.json", XZ_FILE_CAP, "not an xz file");
    write_tmp(path, "[1, 2, 3]\n", 10);
    expect_fail(path, XZ_FILE_CAP, "truncated");
    unlink(path);
    expect_fail("tests/data/tokenize/no-such-file.json.xz", XZ_FILE_CAP, "No such file");
    free(bytes);
}

Test(tk_data_xz, extract_writes_the_content)
{
    char path[64], msg[256], *out;
    size_t len, n;
    write_tmp(path, "", 0);
    cr_assert_eq(xz_file_extract(PIECES, path, msg, sizeof msg), 0, "%s", msg);
    char *got = slurp(path, &n);
    cr_assert_eq(xz_file_read(PIECES, XZ_FILE_CAP, &out, &len, msg, sizeof msg), 0, "%s", msg);
    cr_expect(n == len && memcmp(got, out, n) == 0);
    unlink(path);
    free(got);
    free(out);
}
