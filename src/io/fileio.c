/* fileio.c — opening and reading input files. Every reader of the library
 * opens its files here, so that a FIFO, a terminal or a device named as an
 * input fails at once with one line instead of blocking forever (opening a
 * FIFO for reading waits for a writer; reading it waits for data). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

static int not_regular(const char *path, const struct stat *st, ag_error *err)
{
    return ag_error_set(err, AG_EIO, S_ISDIR(st->st_mode) ? "%s: is a directory"
                                                          : "%s: is not a regular file", path);
}

int agi_open_input(const char *path, int *fd_out, struct stat *st, ag_error *err)
{
    int fd;
    *fd_out = -1;
    if (!path)
        return ag_error_set(err, AG_EINVAL, "no file path given");
    /* Refused before the open too: opening some devices has effects. */
    if (stat(path, st) == 0 && !S_ISREG(st->st_mode))
        return not_regular(path, st, err);
    /* O_NONBLOCK: a FIFO swapped in after the stat must not block the open. */
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return ag_error_set(err, AG_EIO, "%s: %s", path, agi_strerror(errno));
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return ag_error_set(err, AG_EIO, "%s: %s", path, agi_strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return not_regular(path, st, err);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return AG_OK;
}

static int too_large(const char *name, size_t max_bytes, ag_error *err)
{
    return ag_error_set(err, AG_ELIMIT, "%s: larger than the limit of %zu bytes", name, max_bytes);
}

int ag_read_fd(int fd, const char *name, size_t max_bytes, char **buf, size_t *len,
               ag_error *err)
{
    size_t cap = 1 << 16, n = 0;
    char *b = NULL;
    *buf = NULL;
    *len = 0;
    for (;;) {
        if (n == cap || !b) {
            cap = b ? 2 * cap : cap;
            char *grown = realloc(b, cap + 1);
            if (!grown) {
                free(b);
                return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
            }
            b = grown;
        }
        /* one byte past the cap is enough to know the input is too large */
        size_t want = cap - n;
        if (max_bytes - n < want)
            want = max_bytes - n + 1;
        ssize_t got = read(fd, b + n, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(b);
            return ag_error_set(err, AG_EIO, "%s: read error: %s", name, agi_strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > max_bytes) {
            free(b);
            return too_large(name, max_bytes, err);
        }
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return AG_OK;
}

int ag_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, ag_error *err)
{
    struct stat st;
    int fd;
    *buf = NULL;
    *len = 0;
    int rc = agi_open_input(path, &fd, &st, err);
    if (rc != AG_OK)
        return rc;
    if ((unsigned long long)st.st_size > max_bytes)
        rc = too_large(path, max_bytes, err);
    else
        rc = ag_read_fd(fd, path, max_bytes, buf, len, err);
    close(fd);
    return rc;
}

/* Does the integer literal s[0..n) (an optional '-', then digits) fit
 * json_int_t (int64)? jansson refuses the file ("too big integer") when it
 * does not. */
static int fits_int64(const char *s, size_t n)
{
    static const char max_pos[] = "9223372036854775807", max_neg[] = "9223372036854775808";
    const char *lim = max_pos;
    if (*s == '-') {
        s++;
        n--;
        lim = max_neg;
    }
    while (n > 1 && *s == '0') {
        s++;
        n--;
    }
    size_t w = sizeof max_pos - 1;
    return n < w || (n == w && memcmp(s, lim, w) <= 0);
}

/* The length of the number token at s[0..end) and whether it is an integer
 * literal (no fraction, no exponent). */
static size_t number_token(const char *s, size_t end, int *integral)
{
    size_t i = 0;
    *integral = 1;
    if (i < end && s[i] == '-')
        i++;
    while (i < end && s[i] && (isdigit((unsigned char)s[i]) || strchr(".eE+-", s[i]))) {
        if (!isdigit((unsigned char)s[i]))
            *integral = 0;
        i++;
    }
    return i;
}

/* Hugging Face writes Python ints of any size (LLaMA-3's tokenizer_config.json
 * holds "model_max_length": 1000000000000000019884624838656, int(1e30)), and
 * jansson stops at an integer beyond int64. Such a literal is rewritten with
 * ".0" appended, so it reads as the real number it is and a field that must
 * be an integer is refused (or range-checked) where it is used. One pass
 * outside strings; *out is NULL when the text has no such literal (the
 * common case), else a new buffer of *out_n bytes (at most 2 per literal
 * more: the caller checked the size before). Returns -1 out of memory. */
/* 1 when s[n] holds a run of 19 digits or more: an integer literal beyond
 * int64 needs one (INT64_MAX has 19 digits), and without one
 * widen_big_integers need not walk the JSON (a 10 MB tokenizer.json). */
static int has_long_digit_run(const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        run = (unsigned)(s[i] - '0') < 10u ? run + 1 : 0;
        if (run >= 19)
            return 1;
    }
    return 0;
}

static int widen_big_integers(const char *s, size_t n, char **out, size_t *out_n)
{
    char *w = NULL;
    size_t wn = 0, copied = 0, extra = 0;
    *out = NULL;
    if (!has_long_digit_run(s, n))
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        int in_str = 0;
        for (size_t i = 0; i < n;) {
            char c = s[i];
            if (in_str) {
                in_str = c != '"';
                i += c == '\\' ? 2 : 1;
                continue;
            }
            if (c == '"' || !(c == '-' || isdigit((unsigned char)c))) {
                in_str = c == '"';
                i++;
                continue;
            }
            int integral;
            size_t len = number_token(s + i, n - i, &integral);
            if (len == 0)
                len = 1;
            if (integral && !fits_int64(s + i, len)) {
                if (pass == 0) {
                    extra += 2;
                } else {
                    memcpy(w + wn, s + copied, i + len - copied);
                    wn += i + len - copied;
                    memcpy(w + wn, ".0", 2);
                    wn += 2;
                    copied = i + len;
                }
            }
            i += len;
        }
        if (extra == 0)
            return 0;
        if (pass == 0 && !(w = malloc(n + extra + 1)))
            return -1;
    }
    memcpy(w + wn, s + copied, n - copied);
    wn += n - copied;
    w[wn] = '\0';
    *out = w;
    *out_n = wn;
    return 0;
}

int agi_json_loadb(const char *name, const char *buf, size_t n, size_t flags, json_t **out, ag_error *err)
{
    char *wide;
    json_error_t je;
    *out = NULL;
    if (widen_big_integers(buf, n, &wide, &n) != 0)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    *out = json_loadb(wide ? wide : buf, n, flags, &je);
    free(wide);
    if (!*out)
        return ag_error_set(err, AG_EFORMAT, "%s: invalid JSON at line %d column %d: %s", name,
                            je.line, je.column, je.text);
    return AG_OK;
}

int agi_json_load(const char *path, size_t max_bytes, size_t flags, json_t **out, ag_error *err)
{
    char *buf;
    size_t n;
    *out = NULL;
    int rc = ag_read_file(path, max_bytes, &buf, &n, err);
    if (rc != AG_OK)
        return rc;
    rc = agi_json_loadb(path, buf, n, flags, out, err);
    free(buf);
    return rc;
}
