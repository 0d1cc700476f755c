/* outputs.c — where a command's outputs land (-o, --hidden,
 * --save-attention, the records on standard output), by the rules of
 * docs/cli.md, "Outputs":
 *
 *  - a regular file or a new path is written atomically: a temporary file in
 *    its folder, fsync, rename over it (its mode kept); a symlink is followed
 *    and its target replaced, never the link;
 *  - anything else that exists (/dev/null, /dev/full, a FIFO, a terminal,
 *    /dev/stdout, /proc/self/fd/N, bash's >(cmd)) is written in place, as a
 *    shell redirect writes it, every write checked; "-" is standard output;
 *  - all outputs of one command are staged first and committed together, so
 *    a command that fails leaves every earlier file as it was;
 *  - a streamed output (records as texts finish, .npy arrays a layer at a
 *    time) goes to a file's temporary as the command runs, and to a device,
 *    FIFO or descriptor at once;
 *  - a fatal signal (SIGINT, SIGTERM, ...) removes the temporaries first.
 *
 * cli_paths_check refuses, before anything runs, an output that is a
 * directory, a read-only file, another output or a file the run reads (the
 * identity rule: by device and inode, or by path while nothing is there). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cli.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif
#define MAX_HOPS 40 /* symlinks followed, as the kernel's ELOOP limit */

enum {
    OUT_NEW,     /* nothing there: created atomically at target */
    OUT_FILE,    /* a regular file: replaced atomically at target */
    OUT_INPLACE, /* a device, FIFO, socket, ...: opened and written in place */
    OUT_FD       /* a descriptor of ours: "-", /dev/stdout, /dev/fd/N */
};

typedef struct {
    int kind;
    int fd;         /* OUT_FD */
    char *target;   /* OUT_NEW, OUT_FILE: the path renamed over */
    struct stat st; /* what exists there (zero for OUT_NEW) */
} out_target;

struct cli_staged {
    const char *name;     /* the path as given, or "standard output" */
    const char *path;
    out_target t;
    char *tmp;            /* OUT_NEW, OUT_FILE: the written temporary */
    int fd;               /* OUT_INPLACE (ours to close), OUT_FD */
    const char *bytes;    /* what is written (bytes or array) */
    char *owned;          /* the copy a deferred output keeps until commit */
    size_t len;
    const ag_array *array;
    FILE *stream;         /* streamed: what the command writes to as it runs */
    ag_npy_writer *npy;   /* a streamed .npy: its writer, on stream's descriptor */
};

/* ---- resolving a path ----------------------------------------------------- */

static char *parent_of(const char *p)
{
    const char *slash = strrchr(p, '/');
    if (!slash)
        return strdup(".");
    return slash == p ? strdup("/") : strndup(p, (size_t)(slash - p));
}

/* N when `link` is the magic link of our own descriptor N (/proc/self/fd/N,
 * /dev/fd/N, /dev/stdout's target): a shell's redirect writes to N itself,
 * keeping its offset and O_APPEND. -1 otherwise. */
static int own_fd(const char *link)
{
    /* /proc/self, not getpid(): the two differ when /proc belongs to
     * another pid namespace */
    char *dir = parent_of(link), real[PATH_MAX], self[PATH_MAX], *end;
    int ok = dir && realpath(dir, real) && realpath("/proc/self", self);
    free(dir);
    const char *slash = strrchr(link, '/'), *base = slash ? slash + 1 : link;
    long n = strtol(base, &end, 10);
    size_t k = ok ? strlen(self) : 0, rl = ok ? strlen(real) : 0;
    if (!ok || end == base || *end || n < 0 || n > INT_MAX || strncmp(real, self, k) != 0 ||
        real[k] != '/' || rl < 3 || strcmp(real + rl - 3, "/fd") != 0)
        return -1;
    return fcntl((int)n, F_GETFL) < 0 ? -1 : (int)n;
}

/* A link in /proc (another process's descriptor, ...) is opened, not read:
 * its text ("pipe:[42]") is no path. */
static int in_procfs(const char *link)
{
    struct statfs sf;
    char *dir = parent_of(link);
    int proc = dir && statfs(dir, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
    free(dir);
    return proc;
}

/* The path symlink `link` points to (relative to its folder); frees link. */
static char *follow(char *link)
{
    char text[PATH_MAX];
    ssize_t n = readlink(link, text, sizeof text - 1);
    char *next = NULL;
    if (n >= 0) {
        text[n] = '\0';
        char *dir = text[0] == '/' ? NULL : parent_of(link);
        size_t size = (dir ? strlen(dir) + 1 : 0) + (size_t)n + 1;
        if ((text[0] == '/' || dir) && (next = malloc(size)))
            snprintf(next, size, "%s%s%s", dir ? dir : "", dir ? "/" : "", text);
        free(dir);
    }
    free(link);
    return next;
}

static int file_writable(const char *path, const struct stat *st)
{
    /* root may write anything; a file without any write bit is still
     * refused, as it would be for its owner */
    if (geteuid() == 0)
        return (st->st_mode & 0222) != 0;
    return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
}

/* The rename needs a writable folder; without one, a writable file is still
 * written in place, as a shell would. */
static int folder_writable(const char *path)
{
    char *dir = parent_of(path);
    int ok = dir && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
    free(dir);
    return ok;
}

/* What is at `cur` (no symlink): takes cur. */
static int classify(const char *path, char *cur, const struct stat *st, out_target *t)
{
    t->st = *st;
    if (S_ISDIR(st->st_mode)) {
        free(cur);
        return cli_fail("%s: is a directory", path);
    }
    if (S_ISREG(st->st_mode) && !file_writable(cur, st)) {
        free(cur);
        return cli_fail("%s: permission denied (a read-only file is never replaced)", path);
    }
    t->kind = S_ISREG(st->st_mode) && folder_writable(cur) ? OUT_FILE : OUT_INPLACE;
    if (t->kind == OUT_FILE)
        t->target = cur;
    else
        free(cur);
    return 0;
}

/* Nothing at `cur` (a new path, or the missing target of a symlink): its
 * folder must exist. Takes cur. */
static int new_target(const char *path, char *cur, out_target *t)
{
    char *dir = parent_of(cur);
    struct stat ds;
    int e = !dir ? ENOMEM : stat(dir, &ds) != 0 ? errno : !S_ISDIR(ds.st_mode) ? ENOTDIR : 0;
    free(dir);
    if (!e && in_procfs(cur)) /* /dev/fd/N of a closed descriptor */
        e = ENOENT;
    if (e) {
        free(cur);
        return cli_fail("%s: cannot create: %s", path, strerror(e));
    }
    t->kind = OUT_NEW;
    t->target = cur;
    return 0;
}

/* A /proc link (t->fd: one of our descriptors, or -1): written through,
 * whatever it points to. */
static int magic_target(const char *path, out_target *t)
{
    t->kind = t->fd >= 0 ? OUT_FD : OUT_INPLACE;
    if ((t->fd >= 0 ? fstat(t->fd, &t->st) : stat(path, &t->st)) != 0)
        return cli_fail("%s: %s", path, strerror(errno));
    return S_ISDIR(t->st.st_mode) ? cli_fail("%s: is a directory", path) : 0;
}

static int resolve(const char *path, out_target *t)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
    if (strcmp(path, "-") == 0) {
        t->kind = OUT_FD;
        t->fd = 1;
        return fstat(1, &t->st) == 0 ? 0 : cli_fail("standard output: %s", strerror(errno));
    }
    if (!*path)
        return cli_fail("an output file name is empty");
    char *cur = strdup(path);
    for (int hop = 0; cur && hop <= MAX_HOPS; hop++) {
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT)
                return new_target(path, cur, t);
            break;
        }
        if (!S_ISLNK(st.st_mode))
            return classify(path, cur, &st, t);
        if ((t->fd = own_fd(cur)) >= 0 || in_procfs(cur)) {
            free(cur);
            return magic_target(path, t);
        }
        if (hop == MAX_HOPS)
            errno = ELOOP;
        else
            cur = follow(cur);
    }
    int e = errno;
    free(cur);
    return cli_fail("%s: %s", path, strerror(e ? e : ENOMEM));
}

/* ---- checks before anything runs ----------------------------------------- */

/* Where a new path would be, with its folder canonical: two outputs named
 * "x" and "./x" are the same. */
static char *canonical(const char *target)
{
    char *dir = parent_of(target), real[PATH_MAX];
    const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;
    char *out = NULL;
    if (dir && realpath(dir, real)) {
        size_t size = strlen(real) + strlen(base) + 2;
        if ((out = malloc(size)))
            snprintf(out, size, "%s/%s", real, base);
    }
    free(dir);
    return out ? out : strdup(target);
}

/* Files a model folder is read from (model.c, tokenizer.c, media.c). */
static int model_file(const char *base)
{
    static const char *const names[] = {"config.json", "tokenizer.json", "tokenizer_config.json",
                                        "special_tokens_map.json", "vocab.json", "merges.txt",
                                        "vocab.txt", "model.safetensors.index.json",
                                        "preprocessor_config.json"};
    size_t n = strlen(base);
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (strcmp(base, names[k]) == 0)
            return 1;
    return n > 12 && strcmp(base + n - 12, ".safetensors") == 0;
}

static int same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* ---- the identity rule: no output is a file the run reads ----------------- */

/* One file the run reads, looked up once: what stat finds there (through
 * symlinks), or, when nothing is there yet, where it would be. */
typedef struct {
    const char *option, *path; /* as given (not owned) */
    const char *list;   /* the list file that names it; NULL: the command line */
    char *file;         /* a model folder's file, MODEL/NAME (owned); NULL: in->path */
    int exists;
    struct stat st;
    char *where;        /* not there: canonical(path) (owned) */
} in_file;

struct cli_inputs {
    in_file *files;
    size_t count, cap;
};

static int add_file(cli_inputs *set, const cli_path *in, const char *list, char *file)
{
    if (set->count == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 16;
        in_file *grown = realloc(set->files, cap * sizeof *grown);
        if (!grown) {
            free(file);
            return cli_fail("out of memory");
        }
        set->files = grown;
        set->cap = cap;
    }
    in_file *f = &set->files[set->count++];
    const char *path = file ? file : in->path;
    *f = (in_file){.option = in->option, .path = in->path, .list = list, .file = file};
    f->exists = stat(path, &f->st) == 0;
    f->where = f->exists ? NULL : canonical(path);
    return 0;
}

/* The files model folder `in` is read from: every entry model_file names
 * (a symlink's target is what is read, and what stat compares). */
static int add_folder(cli_inputs *set, const cli_path *in)
{
    DIR *d = opendir(in->path);
    struct dirent *e;
    int rc = 0;
    while (d && rc == 0 && (e = readdir(d))) {
        if (!model_file(e->d_name))
            continue;
        size_t size = strlen(in->path) + strlen(e->d_name) + 2;
        char *file = malloc(size);
        if (file)
            snprintf(file, size, "%s/%s", in->path, e->d_name);
        rc = file ? add_file(set, in, NULL, file) : cli_fail("out of memory");
    }
    if (d)
        closedir(d);
    return rc;
}

int cli_inputs_new(const cli_path *ins, size_t nin, cli_inputs **out)
{
    cli_inputs *set = calloc(1, sizeof *set);
    int rc = set ? 0 : cli_fail("out of memory");
    for (size_t k = 0; rc == 0 && k < nin; k++) {
        struct stat st;
        if (!ins[k].path || strcmp(ins[k].path, "-") == 0)
            continue; /* not given, or standard input */
        if (stat(ins[k].path, &st) == 0 && S_ISDIR(st.st_mode))
            rc = add_folder(set, &ins[k]);
        else
            rc = add_file(set, &ins[k], NULL, NULL);
    }
    if (rc) {
        cli_inputs_free(set);
        set = NULL;
    }
    *out = set;
    return rc;
}

int cli_inputs_add_listed(cli_inputs *set, const char *option, const char *list, const char *path)
{
    cli_path in = {option, path};
    return add_file(set, &in, list, NULL);
}

void cli_inputs_free(cli_inputs *set)
{
    for (size_t k = 0; set && k < set->count; k++) {
        free(set->files[k].file);
        free(set->files[k].where);
    }
    if (set)
        free(set->files);
    free(set);
}

/* Print why output o may not be f, and return 1. */
static int refuse_input(const cli_path *o, const in_file *f)
{
    if (f->file)
        return cli_fail("%s %s is the same file as %s, a file of the model folder %s %s; "
                        "refusing to overwrite it", o->option, o->path, f->file, f->option,
                        f->path);
    if (f->list)
        return cli_fail("%s %s is the same file as %s, listed in %s %s, an input of this run; "
                        "refusing to overwrite it", o->option, o->path, f->path, f->option,
                        f->list);
    return cli_fail("%s %s is the same file as %s %s, an input of this run; refusing to "
                    "overwrite it", o->option, o->path, f->option, f->path);
}

/* 1 (after printing) when output o, resolved as t, is a file of `set`: the
 * same device and inode, or, while neither exists, the same path. Only a
 * file can be lost: a device or FIFO output is written in place. */
static int is_input(const cli_path *o, const out_target *t, const cli_inputs *set)
{
    int fresh = t->kind == OUT_NEW;
    if (!fresh && !S_ISREG(t->st.st_mode))
        return 0;
    char *where = fresh ? canonical(t->target) : NULL;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < set->count; k++) {
        const in_file *f = &set->files[k];
        if (fresh ? !f->exists && where && f->where && strcmp(where, f->where) == 0
                  : f->exists && same_inode(&t->st, &f->st))
            rc = refuse_input(o, f);
    }
    free(where);
    return rc;
}

/* 1 (after printing) when outputs a and b land on the same file. */
static int same_output(const cli_path *a, const out_target *ta, const cli_path *b,
                       const out_target *tb)
{
    int same;
    if (ta->kind == OUT_FD && tb->kind == OUT_FD)
        same = ta->fd == tb->fd;
    else if (ta->kind == OUT_NEW && tb->kind == OUT_NEW) {
        char *ca = canonical(ta->target), *cb = canonical(tb->target);
        same = ca && cb && strcmp(ca, cb) == 0;
        free(ca);
        free(cb);
    } else {
        same = S_ISREG(ta->st.st_mode) && S_ISREG(tb->st.st_mode) && same_inode(&ta->st, &tb->st);
    }
    if (!same)
        return 0;
    if (ta->kind == OUT_FD && ta->fd == 1)
        return cli_fail("%s and %s both go to standard output", a->option, b->option);
    return cli_fail("%s %s and %s %s name the same %s", a->option, a->path, b->option, b->path,
                    ta->kind == OUT_FD ? "descriptor" : "file");
}

int cli_outputs_check(const cli_path *outs, size_t nout, const cli_inputs *set)
{
    out_target t[8];
    size_t done = 0;
    int rc = 0;
    for (size_t k = 0; k < nout && k < sizeof t / sizeof *t && rc == 0; k++) {
        if (!outs[k].path)
            continue;
        if ((rc = resolve(outs[k].path, &t[k])) != 0)
            break;
        done = k + 1;
        rc = is_input(&outs[k], &t[k], set);
        for (size_t j = 0; j < k && rc == 0; j++)
            if (outs[j].path)
                rc = same_output(&outs[j], &t[j], &outs[k], &t[k]);
    }
    for (size_t k = 0; k < done; k++)
        if (outs[k].path)
            free(t[k].target);
    return rc;
}

int cli_paths_check(const cli_path *outs, size_t nout, const cli_path *ins, size_t nin)
{
    cli_inputs *set;
    int rc = cli_inputs_new(ins, nin, &set);
    if (rc == 0)
        rc = cli_outputs_check(outs, nout, set);
    cli_inputs_free(set);
    return rc;
}

/* ---- temporaries removed on a fatal signal --------------------------------- */

/* A run stopped by SIGINT, SIGTERM, SIGHUP, SIGPIPE (its FIFO's reader went
 * away) or SIGXFSZ must not leave its temporaries beside the outputs: the
 * handler unlinks every temporary staged and not yet renamed (unlink is
 * async-signal-safe; the slots are lock-free atomics, C11 7.14.1.1), then
 * dies of the signal with the default action, so the exit status still says
 * which. SIGKILL cannot be caught: it leaves the FILE.tmpXXXXXX, never a
 * partial FILE. A signal a parent set to be ignored (nohup) stays ignored. */
#if ATOMIC_POINTER_LOCK_FREE != 2
#error "the temporaries' registry needs lock-free atomic pointers"
#endif
#define TEMP_SLOTS 64 /* staged at once; a command stages a handful */

static _Atomic(char *) temp_slots[TEMP_SLOTS];
static const int fatal_signals[] = {SIGHUP, SIGINT, SIGPIPE, SIGTERM, SIGXFSZ};

static void on_fatal_signal(int sig)
{
    for (size_t k = 0; k < TEMP_SLOTS; k++) {
        char *p = atomic_load(&temp_slots[k]);
        if (p)
            unlink(p);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until the handler returns, then fatal */
}

static void install_cleanup(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigfillset(&sa.sa_mask); /* one cleanup at a time */
    for (size_t k = 0; k < sizeof fatal_signals / sizeof *fatal_signals; k++)
        if (sigaction(fatal_signals[k], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(fatal_signals[k], &sa, NULL);
}

/* tmp is removed by a fatal signal from now on (until temp_unwatch). */
static void temp_watch(char *tmp)
{
    install_cleanup();
    for (size_t k = 0; k < TEMP_SLOTS; k++) {
        char *none = NULL;
        if (atomic_compare_exchange_strong(&temp_slots[k], &none, tmp))
            return;
    }
}

/* Before tmp is renamed away or freed. */
static void temp_unwatch(const char *tmp)
{
    for (size_t k = 0; k < TEMP_SLOTS; k++) {
        char *p = (char *)tmp;
        if (atomic_compare_exchange_strong(&temp_slots[k], &p, NULL))
            return;
    }
}

/* ---- staging ---------------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The content of s (bytes or .npy) to fd; 0, or 1 after printing. */
static int put(const cli_staged *s, int fd)
{
    ag_error err = {0};
    if (s->array)
        return ag_npy_write_fd(fd, s->name, s->array, &err) == AG_OK ? 0 : cli_fail_error(&err);
    return write_all(fd, s->bytes, s->len) == 0
               ? 0 : cli_fail("%s: cannot write: %s", s->name, strerror(errno));
}

/* mkstemp's 0600 becomes what a plain open would give (0666 less the
 * umask), or the replaced file's mode (and owner, when root can keep it). */
static void temp_mode(int fd, const out_target *t)
{
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, t->kind == OUT_FILE ? t->st.st_mode & 07777 : 0666 & ~mask);
    if (t->kind == OUT_FILE && geteuid() == 0)
        (void)fchown(fd, t->st.st_uid, t->st.st_gid);
}

/* The temporary beside the target: its descriptor, or -1 after printing. */
static int create_temp(cli_staged *s)
{
    size_t size = strlen(s->t.target) + 16;
    if (!(s->tmp = malloc(size))) {
        cli_fail("%s: out of memory", s->name);
        return -1;
    }
    snprintf(s->tmp, size, "%s.tmpXXXXXX", s->t.target);
    int fd = mkstemp(s->tmp);
    if (fd < 0) {
        int e = errno;
        free(s->tmp);
        s->tmp = NULL;
        cli_fail("%s: cannot create a temporary file beside it: %s", s->name, strerror(e));
        return -1;
    }
    temp_watch(s->tmp);
    temp_mode(fd, &s->t);
    return fd;
}

/* Synced and closed: 0, or 1 after printing. */
static int close_temp(cli_staged *s, int fd, int rc)
{
    /* file systems that cannot sync (EINVAL, EROFS) still hold the data */
    if (rc == 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
        rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    return rc;
}

static int stage_temp(cli_staged *s)
{
    int fd = create_temp(s);
    return fd < 0 ? 1 : close_temp(s, fd, put(s, fd));
}

/* Opened now (so a socket or a missing permission fails before anything is
 * committed), written at commit. A FIFO's open waits for its reader, as a
 * shell's does. */
static int stage_in_place(cli_staged *s)
{
    if (s->t.kind == OUT_FD) {
        int fl = fcntl(s->t.fd, F_GETFL);
        if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
            return cli_fail("%s: not open for writing", s->name);
        s->fd = s->t.fd;
        return 0;
    }
    do {
        s->fd = open(s->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    } while (s->fd < 0 && errno == EINTR);
    if (s->fd < 0)
        return cli_fail("%s: cannot open for writing: %s", s->name, strerror(errno));
    return 0;
}

static int open_stream(cli_staged *s);

static int stage(cli_outputs *tx, const char *path, const char *buf, size_t len,
                 const ag_array *a, int streamed)
{
    if (tx->count == tx->cap) { /* doubled: a corpus stages one file a text */
        size_t cap = tx->cap ? 2 * tx->cap : 16;
        cli_staged *grown = realloc(tx->items, cap * sizeof *grown);
        if (!grown)
            return cli_fail("%s: out of memory", path);
        tx->items = grown;
        tx->cap = cap;
    }
    cli_staged *s = &tx->items[tx->count];
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->path = path;
    s->name = strcmp(path, "-") == 0 ? "standard output" : path;
    s->array = a;
    if (resolve(path, &s->t) != 0)
        return 1;
    tx->count++;
    if (streamed)
        return open_stream(s);
    s->bytes = buf;
    s->len = len;
    if (s->t.kind == OUT_NEW || s->t.kind == OUT_FILE) {
        int rc = stage_temp(s);
        s->bytes = NULL; /* written; the caller's buffer is not kept */
        return rc;
    }
    if (buf) {
        if (!(s->owned = malloc(len ? len : 1)))
            return cli_fail("%s: out of memory", s->name);
        s->bytes = memcpy(s->owned, buf, len);
    }
    return stage_in_place(s);
}

int cli_outputs_add(cli_outputs *tx, const char *path, const char *buf, size_t len)
{
    return stage(tx, path, buf, len, NULL, 0);
}

int cli_outputs_add_npy(cli_outputs *tx, const char *path, const ag_array *a)
{
    return stage(tx, path, NULL, 0, a, 0);
}

/* A stream on the output: a file's temporary, or the device, FIFO or
 * descriptor itself (standard output through stdio's own stdout, so that
 * nothing else written there is reordered). */
static int open_stream(cli_staged *s)
{
    int fd;
    if (s->t.kind == OUT_NEW || s->t.kind == OUT_FILE) {
        if ((fd = create_temp(s)) < 0)
            return 1;
    } else if (s->t.kind == OUT_FD && s->t.fd == STDOUT_FILENO) {
        s->stream = stdout;
        return 0;
    } else if (stage_in_place(s) != 0) {
        return 1;
    } else {
        /* a descriptor of ours is written through a copy the stream closes */
        fd = s->t.kind == OUT_FD ? dup(s->fd) : s->fd;
        s->fd = -1; /* written by the stream, not at commit */
        if (s->t.kind == OUT_INPLACE && S_ISREG(s->t.st.st_mode) && fd >= 0 && ftruncate(fd, 0) != 0) {
            close(fd);
            return cli_fail("%s: cannot write: %s", s->name, strerror(errno));
        }
    }
    if (fd < 0 || !(s->stream = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cli_fail("%s: cannot open for writing: %s", s->name, strerror(e));
    }
    return 0;
}

int cli_outputs_stream(cli_outputs *tx, const char *path, FILE **fp)
{
    int rc = stage(tx, path, NULL, 0, NULL, 1);
    *fp = rc ? NULL : tx->items[tx->count - 1].stream;
    return rc;
}

int cli_outputs_npy(cli_outputs *tx, const char *path, int ndim, const size_t *shape,
                    ag_npy_writer **w)
{
    *w = NULL;
    int rc = stage(tx, path, NULL, 0, NULL, 1);
    if (rc)
        return rc;
    cli_staged *s = &tx->items[tx->count - 1];
    ag_error err = {0};
    /* the writer writes the stream's descriptor itself: nothing may sit in
     * stdio's buffer before it (standard output) */
    if (fflush(s->stream) != 0)
        return cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    if (ag_npy_writer_open(fileno(s->stream), s->name, ndim, shape, &s->npy, &err) != AG_OK)
        return cli_fail_error(&err);
    *w = s->npy;
    return 0;
}

/* The end of a stream: flushed and, but for stdout, closed (a temporary
 * synced first). 0, or 1 after printing. */
static int close_stream(cli_staged *s)
{
    ag_npy_writer *w = s->npy;
    ag_error err = {0};
    s->npy = NULL;
    if (ag_npy_writer_close(w, &err) != AG_OK) /* an array cut short */
        return cli_fail_error(&err);
    FILE *f = s->stream;
    s->stream = NULL;
    int rc = fflush(f) != 0 || ferror(f) ? cli_fail("%s: cannot write: %s", s->name, strerror(errno)) : 0;
    if (f == stdout)
        return rc;
    /* as close_temp: file systems that cannot sync still hold the data */
    if (rc == 0 && s->tmp && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    if (fclose(f) != 0 && rc == 0)
        rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    return rc;
}

/* ---- commit ----------------------------------------------------------------- */

static int write_in_place(cli_staged *s)
{
    /* a regular file reached through another process's /proc link is
     * truncated as a shell's > would; our own descriptors keep their offset */
    if (s->t.kind == OUT_INPLACE && S_ISREG(s->t.st.st_mode) && ftruncate(s->fd, 0) != 0)
        return cli_fail("%s: cannot write: %s", s->name, strerror(errno));
    int rc = put(s, s->fd);
    if (s->t.kind == OUT_INPLACE) {
        if (close(s->fd) != 0 && rc == 0)
            rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
        s->fd = -1;
    }
    return rc;
}

void cli_outputs_abort(cli_outputs *tx)
{
    for (size_t k = 0; k < tx->count; k++) {
        cli_staged *s = &tx->items[k];
        ag_npy_writer_close(s->npy, NULL);
        if (s->stream && s->stream != stdout)
            fclose(s->stream);
        if (s->tmp) {
            unlink(s->tmp);
            temp_unwatch(s->tmp);
        }
        if (s->t.kind == OUT_INPLACE && s->fd >= 0)
            close(s->fd);
        free(s->tmp);
        free(s->owned);
        free(s->t.target);
    }
    free(tx->items);
    memset(tx, 0, sizeof *tx);
}

int cli_outputs_commit(cli_outputs *tx)
{
    int rc = 0, temps = 0;
    for (size_t k = 0; k < tx->count; k++)
        temps |= tx->items[k].tmp != NULL;
    /* Written in place first: they can still fail (a full device, a closed
     * pipe) and cannot be taken back, while the renames after them only
     * fail when the folder changed under us. A closed pipe must not kill
     * the process with temporaries left behind. */
    void (*pipe_was)(int) = temps ? signal(SIGPIPE, SIG_IGN) : SIG_DFL;
    for (size_t k = 0; k < tx->count && rc == 0; k++)
        if (tx->items[k].stream)
            rc = close_stream(&tx->items[k]);
    if (rc == 0 && fflush(stdout) != 0)
        rc = cli_fail("standard output: cannot write: %s", strerror(errno));
    for (size_t k = 0; k < tx->count && rc == 0; k++)
        if (tx->items[k].fd >= 0)
            rc = write_in_place(&tx->items[k]);
    if (temps)
        signal(SIGPIPE, pipe_was);
    for (size_t k = 0; k < tx->count && rc == 0; k++) {
        cli_staged *s = &tx->items[k];
        if (!s->tmp)
            continue;
        if (rename(s->tmp, s->t.target) != 0) {
            rc = cli_fail("%s: cannot write: %s", s->name, strerror(errno));
        } else {
            temp_unwatch(s->tmp);
            free(s->tmp);
            s->tmp = NULL;
        }
    }
    cli_outputs_abort(tx);
    return rc;
}

int cli_outputs_finish(cli_outputs *tx, int rc)
{
    if (rc == 0)
        return cli_outputs_commit(tx);
    cli_outputs_abort(tx);
    return rc;
}
