/* fileio.c — opening and reading input files. Every reader of the library
 * opens its files here, so that a FIFO, a terminal or a device named as an
 * input fails at once with one line instead of blocking forever (opening a
 * FIFO for reading waits for a writer; reading it waits for data). */
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

int agi_json_load(const char *path, size_t max_bytes, size_t flags, json_t **out, ag_error *err)
{
    char *buf;
    size_t n;
    json_error_t je;
    *out = NULL;
    int rc = ag_read_file(path, max_bytes, &buf, &n, err);
    if (rc != AG_OK)
        return rc;
    *out = json_loadb(buf, n, flags, &je);
    free(buf);
    if (!*out)
        return ag_error_set(err, AG_EFORMAT, "%s: invalid JSON at line %d column %d: %s", path,
                            je.line, je.column, je.text);
    return AG_OK;
}
