/* fuzz_util.h — helpers shared by the libFuzzer harnesses: the readers take
 * paths, so each input is written to a file in one temporary folder per
 * process (removed at exit). Header-only; no library internals. */
#ifndef ATTNGEOM_FUZZ_UTIL_H
#define ATTNGEOM_FUZZ_UTIL_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fz_dir_[512];

static inline int fz_rm_cb_(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void fz_cleanup_(void)
{
    if (fz_dir_[0])
        nftw(fz_dir_, fz_rm_cb_, 16, FTW_DEPTH | FTW_PHYS);
}

/* The per-process temporary folder (created on first use). */
static inline const char *fz_tmpdir(void)
{
    if (!fz_dir_[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(fz_dir_, sizeof fz_dir_, "%s/attngeom-fuzz-XXXXXX",
                 base && *base ? base : "/tmp");
        if (!mkdtemp(fz_dir_)) {
            perror("mkdtemp");
            abort();
        }
        atexit(fz_cleanup_);
    }
    return fz_dir_;
}

/* "<tmpdir>/<name>" in a static buffer (one per call site is enough). */
static inline const char *fz_path(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fz_tmpdir(), name);
    return buf;
}

/* Make "<tmpdir>/<name>" a folder. */
static inline const char *fz_mkdir(const char *name, char *buf, size_t size)
{
    fz_path(name, buf, size);
    mkdir(buf, 0700);
    return buf;
}

/* Write size bytes to path (replacing it); aborts on I/O errors, which
 * would otherwise hide inputs from the library. */
static inline void fz_write(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

#endif
