/* dist.c — attngeom-mpi's transport (docs/scaling.md): the ag_run_dist
 * the library's runs use (attngeom/run.h) over MPI. Every rank parses the
 * same arguments, loads the model (memory-mapped: ranks on one host share
 * its pages) and tokenizes the corpus; then
 *  - the gate: one collective says whether every rank got this far; if not,
 *    rank 0 prints the first failing rank's error (its own, or the last
 *    line another rank held) and every rank ends with status 1;
 *  - the library assigns the texts or tasks to ranks (ag_run_assign); the
 *    other ranks send each result (nonblocking, so they keep computing) and
 *    rank 0 takes every turn in input order exactly as one process does;
 *  - rank 0 stops the others (END) once it needs no more results, and drops
 *    what they sent until each said DONE.
 * Ranks other than 0 write nothing: their commands end with a failure that
 * aborts whatever they staged, and every rank exits with rank 0's status. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mpi.h>

#include "dist.h"

enum { TAG_GATE = 1, TAG_RESULT, TAG_DONE, TAG_END, TAG_STDIN };

static int rank, ranks;
static int gated;          /* this rank has been through the gate */
static int remote_failed;  /* rank 0: another rank failed before the gate */
static cli_held held_main; /* ranks > 0: every message of the main thread */
static int saved_stderr = -1; /* rank 0 after a failed gate: stderr, put aside */

/* Out of memory for the driver's own bookkeeping, or bytes that do not
 * travel (a bug): nothing sensible is left to do but stop the job. */
static void die(const char *what)
{
    fprintf(stderr, "attngeom: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

int dist_rank(void)
{
    return rank;
}

/* An escaped line (the CLI's rule for messages) on stderr, at rank 0 only:
 * every rank says the same about its arguments. */
void dist_say(const char *fmt, ...)
{
    char *raw = NULL, *safe = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (rank == 0 && vasprintf(&raw, fmt, ap) >= 0)
        safe = ag_text_escape_dup(raw, AG_TEXT_CONTROL);
    va_end(ap);
    if (rank == 0)
        fprintf(stderr, "%s\n", safe ? safe : "out of memory formatting a message");
    free(safe);
    free(raw);
}

/* ---- the gate ------------------------------------------------------------ */

/* The last line of h (without its newline), or "" when it holds none. */
static const char *last_line(const cli_held *h, size_t *len)
{
    size_t end = h->len;
    while (end > 0 && h->text[end - 1] == '\n')
        end--;
    size_t start = end;
    while (start > 0 && h->text[start - 1] != '\n')
        start--;
    *len = end - start;
    return h->text ? h->text + start : "";
}

/* Collective: 1 when every rank is ok. Otherwise the lowest failing rank's
 * error is on rank 0's stderr (printed there already when it is rank 0's)
 * and 0 is returned everywhere. */
static int gate(void *user, int ok)
{
    (void)user;
    gated = 1;
    int me = ok ? ranks : rank, first;
    MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == ranks)
        return 1;
    if (first == 0)
        return 0;
    if (rank == first) {
        size_t len;
        const char *line = last_line(&held_main, &len);
        MPI_Send(line, (int)(len < 65536 ? len : 65536), MPI_CHAR, 0, TAG_GATE, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        int len;
        MPI_Probe(first, TAG_GATE, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &len);
        char *line = malloc((size_t)len + 1);
        if (!line)
            die("out of memory");
        MPI_Recv(line, len, MPI_CHAR, first, TAG_GATE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "%.*s\n", len, line);
        fflush(stderr);
        free(line);
        remote_failed = 1;
        /* what the command says while it unwinds: a run that is over */
        saved_stderr = dup(STDERR_FILENO);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0 && dup2(null, STDERR_FILENO) >= 0)
            close(null);
    }
    return 0;
}

int dist_end(int rc)
{
    if (!gated && !gate(NULL, rc == 0) && rank == 0 && rc == 0)
        rc = 1;
    if (rank == 0 && remote_failed && rc == 0)
        rc = 1;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(held_main.text);
    if (saved_stderr >= 0 && dup2(saved_stderr, STDERR_FILENO) >= 0)
        close(saved_stderr);
    return rc;
}

/* ---- results: the other ranks --------------------------------------------- */

/* Sends in flight: a buffer for each until it completes. */
typedef struct {
    MPI_Request *req;
    unsigned char **buf;
    size_t count, cap;
} sends;

/* Free the buffers of the sends that completed (all of them with wait). */
static void sends_reap(sends *s, int wait)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->count; i++) {
        int done = 0;
        if (wait)
            MPI_Wait(&s->req[i], MPI_STATUS_IGNORE), done = 1;
        else
            MPI_Test(&s->req[i], &done, MPI_STATUS_IGNORE);
        if (done) {
            free(s->buf[i]);
        } else {
            s->req[kept] = s->req[i];
            s->buf[kept++] = s->buf[i];
        }
    }
    s->count = kept;
}

static int send_result(void *user, const unsigned char *bytes, size_t len)
{
    sends *s = user;
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        MPI_Request *req = realloc(s->req, cap * sizeof *req);
        unsigned char **buf = req ? realloc(s->buf, cap * sizeof *buf) : NULL;
        if (req)
            s->req = req;
        if (!buf)
            die("out of memory for the results in flight");
        s->buf = buf;
        s->cap = cap;
    }
    if (len > (size_t)INT32_MAX)
        die("a result is over 2 GiB");
    unsigned char *copy = malloc(len + 1);
    if (!copy)
        die("out of memory for a result");
    memcpy(copy, bytes, len);
    s->buf[s->count] = copy;
    MPI_Isend(copy, (int)len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD, &s->req[s->count]);
    s->count++;
    sends_reap(s, 0);
    return 0;
}

/* Polled: rank 0's END has come. With wait: every send done, DONE said,
 * and END taken. */
static int stopped(void *user, int wait)
{
    sends *s = user;
    int flag = 0;
    if (!wait) {
        MPI_Iprobe(0, TAG_END, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        return flag;
    }
    sends_reap(s, 1);
    free(s->req);
    free(s->buf);
    *s = (sends){0};
    int done = 1;
    MPI_Send(&done, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
    MPI_Recv(&done, 1, MPI_INT, 0, TAG_END, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 1;
}

/* ---- results: rank 0 -------------------------------------------------------- */

static int receive_result(void *user, int wait, unsigned char **bytes, size_t *len)
{
    (void)user;
    MPI_Status st;
    int flag = 1, n;
    if (wait)
        MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
    else
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
    if (!flag)
        return 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (!(*bytes = malloc((size_t)n + 1)))
        die("out of memory receiving a result");
    MPI_Recv(*bytes, n, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    *len = (size_t)n;
    return 1;
}

/* The run is over: END to every rank, and their results dropped until each
 * said DONE (so no send of theirs is left waiting). */
static void stop(void *user)
{
    MPI_Request *req = malloc((size_t)ranks * sizeof *req);
    int end = 1, dones = 0;
    if (!req)
        die("out of memory");
    for (int q = 1; q < ranks; q++)
        MPI_Isend(&end, 1, MPI_INT, q, TAG_END, MPI_COMM_WORLD, &req[q - 1]);
    while (dones < ranks - 1) {
        MPI_Status st;
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_RESULT) {
            unsigned char *bytes;
            size_t len;
            receive_result(user, 1, &bytes, &len);
            free(bytes);
        } else {
            int done;
            MPI_Recv(&done, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            dones += st.MPI_TAG == TAG_DONE;
        }
    }
    MPI_Waitall(ranks - 1, req, MPI_STATUSES_IGNORE);
    free(req);
}

/* ---- start, standard input ----------------------------------------------- */

void dist_start(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (rank == 0)
        return;
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0 && null != STDOUT_FILENO) {
        dup2(null, STDOUT_FILENO);
        close(null);
    }
}

/* 1 when argv reads standard input: --text-file - or --tokens-file -. */
static int reads_stdin(int argc, char **argv)
{
    static const char *const opts[] = {"--text-file", "--tokens-file"};
    for (int i = 1; i < argc; i++)
        for (int o = 0; o < 2; o++) {
            size_t len = strlen(opts[o]);
            if (strncmp(argv[i], opts[o], len) != 0)
                continue;
            if (argv[i][len] == '=' && strcmp(argv[i] + len + 1, "-") == 0)
                return 1;
            if (argv[i][len] == '\0' && i + 1 < argc && strcmp(argv[i + 1], "-") == 0)
                return 1;
        }
    return 0;
}

/* The corpus's cap: input.c's TEXT_FILE_MAX, so that the message of a
 * larger input is the one process's. */
#define STDIN_MAX ((size_t)256 << 20)

typedef struct {
    int argc;
    char **argv;
} args;

/* With --text-file - or --tokens-file -: rank 0 reads standard input to its
 * end and every rank gets the bytes as its standard input (a memory file),
 * so every rank tokenizes the same corpus. AG_OK, or rank 0's error on
 * every rank (printed by rank 0 only: the others hold theirs). */
static int share_stdin(void *user, ag_error *e)
{
    const args *a = user;
    if (!reads_stdin(a->argc, a->argv))
        return AG_OK;
    char *buf = NULL;
    size_t len = 0;
    long long size = -1;
    int status = rank == 0 ? ag_read_fd(STDIN_FILENO, "standard input", STDIN_MAX, &buf, &len, e)
                           : AG_OK;
    if (status == AG_OK && rank == 0)
        size = (long long)len;
    MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (size < 0)
        return status != AG_OK ? status : ag_error_set(e, AG_EIO, "standard input: not read");
    if (rank != 0 && !(buf = malloc((size_t)size + 1)))
        die("out of memory for standard input");
    for (size_t off = 0; off < (size_t)size;) {
        size_t chunk = (size_t)size - off < ((size_t)1 << 30) ? (size_t)size - off : (size_t)1 << 30;
        MPI_Bcast(buf + off, (int)chunk, MPI_BYTE, 0, MPI_COMM_WORLD);
        off += chunk;
    }
    int fd = memfd_create("attngeom-stdin", 0);
    int ok = fd >= 0;
    for (size_t off = 0; ok && off < (size_t)size;) {
        ssize_t w = write(fd, buf + off, (size_t)size - off);
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, STDIN_FILENO) == STDIN_FILENO;
    if (fd >= 0 && fd != STDIN_FILENO)
        close(fd);
    free(buf);
    if (!ok)
        die("cannot hold standard input in memory");
    return AG_OK;
}

const cli_driver *dist_driver(int argc, char **argv)
{
    static sends out;
    static const ag_run_dist transport = {
        .size = sizeof transport, .user = &out, .gate = gate, .send = send_result,
        .receive = receive_result, .stop = stop, .stopped = stopped};
    static ag_run_dist dist;
    static args a;
    static cli_driver drv;
    dist = transport;
    dist.rank = rank;
    dist.ranks = ranks;
    a = (args){argc, argv};
    drv = (cli_driver){.dist = &dist, .held = rank ? &held_main : NULL, .ready = share_stdin,
                       .user = &a};
    return &drv;
}
