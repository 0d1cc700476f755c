/* dist.c — a command's work spread over the ranks of an MPI job
 * (docs/scaling.md). Every rank parses the same arguments, loads the model
 * (memory-mapped: ranks on one host share its pages) and tokenizes the
 * corpus; then
 *  - the gate: one collective says whether every rank got this far; if not,
 *    rank 0 prints the first failing rank's error (its own, or the last
 *    line another rank held) and every rank ends with status 1;
 *  - texts (analyze, residual, rollout, similarity) go to ranks by a fixed
 *    assignment (dist_assign on cost n^3); each rank runs its own on its
 *    threads, in input order, and sends each result to rank 0 as soon as
 *    its batch is done (nonblocking, so it keeps computing); rank 0 takes
 *    every text's turn in input order — its messages, the command's turn,
 *    its records to the sink — exactly as one process does, so standard
 *    output, -o, warnings, progress and the first error are the
 *    one-process run's;
 *  - tasks (weights' layers, matrix's matrices) go to ranks the same way;
 *    rank 0 gathers every task's records and error and goes on as if it
 *    had run them all.
 * Ranks other than 0 write nothing: their commands end with a failure that
 * aborts whatever they staged, and every rank exits with rank 0's status. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mpi.h>

#include "dist.h"

enum { TAG_GATE = 1, TAG_RESULT, TAG_DONE, TAG_END, TAG_TASKS, TAG_STDIN };

static int rank, ranks;
static int gated;          /* this rank has been through the gate */
static int remote_failed;  /* rank 0: another rank failed before the gate */
static cli_held held_main; /* ranks > 0: every message of the main thread */
static cli_held dropped;   /* rank 0 after a failed gate: messages of a run that is over */

/* Out of memory for the driver's own bookkeeping, or bytes that do not
 * parse (a bug): nothing sensible is left to do but stop the job. */
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

/* ---- assignment (assign.c) -------------------------------------------- */

/* The ranks of r's texts: cost n^3 (the spectra of n x n attention
 * matrices dominate a text's time), a skipped text none. */
static int *text_owners(const cli_model_run *r)
{
    uint64_t *cost = malloc((r->nseq + 1) * sizeof *cost);
    int *owner = malloc((r->nseq + 1) * sizeof *owner);
    for (size_t k = 0; cost && k < r->nseq; k++) {
        uint64_t n = r->seqs[k].n ? r->seqs[k].n : 1;
        cost[k] = r->seqs[k].skip ? 0 : n > 2000000 ? UINT64_MAX / 4 : n * n * n;
    }
    if (!cost || !owner || dist_assign(cost, r->nseq, ranks, owner) != 0)
        die("out of memory assigning the texts");
    free(cost);
    return owner;
}

/* The indices of items owned by this rank, in order; *n of them. */
static size_t *mine(const int *owner, size_t count, size_t *n)
{
    size_t *out = malloc((count + 1) * sizeof *out);
    if (!out)
        die("out of memory assigning the work");
    *n = 0;
    for (size_t i = 0; i < count; i++)
        if (owner[i] == rank)
            out[(*n)++] = i;
    return out;
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
static int gate(int ok)
{
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
        cli_hold(&dropped); /* what the command says while it unwinds */
    }
    return 0;
}

int dist_end(int rc)
{
    if (!gated && !gate(rc == 0) && rank == 0 && rc == 0)
        rc = 1;
    if (rank == 0 && remote_failed && rc == 0)
        rc = 1;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(held_main.text);
    free(dropped.text);
    return rc;
}

/* ---- texts: the other ranks ---------------------------------------------- */

/* Sends in flight: a buffer for each until it completes. */
typedef struct {
    MPI_Request *req;
    dist_buf *buf;
    size_t count, cap;
} sends;

static void sends_add(sends *s, dist_buf *b)
{
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        MPI_Request *req = realloc(s->req, cap * sizeof *req);
        dist_buf *buf = req ? realloc(s->buf, cap * sizeof *buf) : NULL;
        if (req)
            s->req = req;
        if (!buf)
            die("out of memory for the results in flight");
        s->buf = buf;
        s->cap = cap;
    }
    if (b->len > (size_t)INT32_MAX)
        die("a text's result is over 2 GiB");
    s->buf[s->count] = *b;
    MPI_Isend(b->data, (int)b->len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD, &s->req[s->count]);
    s->count++;
}

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
            dist_buf_free(&s->buf[i]);
        } else {
            s->req[kept] = s->req[i];
            s->buf[kept++] = s->buf[i];
        }
    }
    s->count = kept;
}

static int end_arrived(void)
{
    int flag = 0;
    MPI_Iprobe(0, TAG_END, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag;
}

/* Run this rank's texts a batch at a time, each result sent as its batch
 * ends; stop at rank 0's word or after a failed text (rank 0 stops there or
 * before: nothing after it is needed). Then DONE, and wait for END. */
static void peer_texts(cli_model_run *r, cli_text_work work, void *user, const int *owner)
{
    size_t n, cap = cli_texts_per_batch(r), *seq = mine(owner, r->nseq, &n);
    cli_text_out *outs = calloc(cap, sizeof *outs);
    if (!outs)
        die("out of memory");
    sends s = {0};
    int failed = 0;
    for (size_t i = 0; i < n && !failed && !end_arrived(); i += cap) {
        size_t count = n - i < cap ? n - i : cap;
        cli_texts_run(r, work, user, seq + i, count, outs);
        for (size_t t = 0; t < count; t++) {
            dist_buf b = {0};
            dist_pack_text(&b, seq[i + t], &outs[t]);
            if (b.oom)
                die("out of memory packing a result");
            failed |= outs[t].rc != 0;
            cli_text_out_clear(&outs[t]);
            sends_add(&s, &b);
        }
        sends_reap(&s, 0);
    }
    sends_reap(&s, 1);
    free(s.req);
    free(s.buf);
    int done = 1;
    MPI_Send(&done, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
    MPI_Recv(&done, 1, MPI_INT, 0, TAG_END, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(outs);
    free(seq);
}

/* ---- texts: rank 0 -------------------------------------------------------- */

typedef struct {
    cli_text_out *outs;  /* (nseq) results waiting for their turn */
    unsigned char *ready; /* (nseq) */
    size_t nseq;
} results;

/* Receive one result from any rank (wait: block until one comes). 1 when
 * one came, 0 when none was there. With keep 0 it is dropped. */
static int receive(results *res, int wait, int keep)
{
    MPI_Status st;
    int flag = 1, len;
    if (wait)
        MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
    else
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
    if (!flag)
        return 0;
    MPI_Get_count(&st, MPI_BYTE, &len);
    unsigned char *bytes = malloc((size_t)len + 1);
    if (!bytes)
        die("out of memory receiving a result");
    MPI_Recv(bytes, len, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cli_text_out o = {0};
    size_t k;
    dist_reader rd = {bytes, (size_t)len, 0};
    if (dist_unpack_text(&rd, &k, &o) != 0 || k >= res->nseq || res->ready[k])
        die("a malformed result");
    free(bytes);
    if (keep) {
        res->outs[k] = o;
        res->ready[k] = 1;
    } else {
        cli_text_out_clear(&o);
    }
    return 1;
}

/* The run is over: END to every rank, and their results dropped until each
 * said DONE (so no send of theirs is left waiting). */
static void finish_peers(results *res)
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
            receive(res, 1, 0);
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

/* Rank 0's own texts: the next batch of them, in input order. Returns 1
 * when one of them failed (none after it is needed). */
static int own_batch(cli_model_run *r, cli_text_work work, void *user, const size_t *seq,
                     size_t count, results *res, cli_text_out *tmp)
{
    int failed = 0;
    cli_texts_run(r, work, user, seq, count, tmp);
    for (size_t t = 0; t < count; t++) {
        res->outs[seq[t]] = tmp[t];
        res->ready[seq[t]] = 1;
        failed |= tmp[t].rc != 0;
        tmp[t] = (cli_text_out){0};
    }
    return failed;
}

static int root_texts(cli_model_run *r, const char *cmd, cli_text_work work,
                      cli_text_turn turn, void *user, const int *owner)
{
    size_t n, pos = 0, next = 0, cap = cli_texts_per_batch(r), *seq = mine(owner, r->nseq, &n);
    results res = {calloc(r->nseq + 1, sizeof *res.outs), calloc(r->nseq + 1, 1), r->nseq};
    cli_text_out *tmp = calloc(cap, sizeof *tmp);
    if (!res.outs || !res.ready || !tmp)
        die("out of memory");
    cli_progress p;
    int rc = 0, own_failed = 0;
    cli_progress_start(&p, cmd, r->input.progress, r->nseq);
    for (;;) {
        for (; next < r->nseq; next++) { /* every turn that can be taken */
            const cli_seq *s = &r->seqs[next];
            if (!s->skip && !res.ready[next])
                break;
            if (!s->skip) {
                rc = cli_text_take_turn(r, s, &res.outs[next], turn, user);
                cli_text_out_clear(&res.outs[next]);
            }
            if (rc)
                break;
            cli_progress_step(&p, s->skip);
        }
        if (rc || next == r->nseq)
            break;
        if (receive(&res, 0, 1))
            continue;
        if (pos < n && !own_failed) { /* compute while the others do */
            size_t count = n - pos < cap ? n - pos : cap;
            own_failed = own_batch(r, work, user, seq + pos, count, &res, tmp);
            pos += count;
        } else {
            receive(&res, 1, 1);
        }
    }
    cli_progress_end(&p);
    finish_peers(&res);
    for (size_t k = 0; k < r->nseq; k++)
        cli_text_out_clear(&res.outs[k]);
    free(res.outs);
    free(res.ready);
    free(tmp);
    free(seq);
    return rc;
}

static int dist_texts(cli_model_run *r, const char *cmd, cli_text_work work, cli_text_turn turn,
                      void *user)
{
    if (!gate(1))
        return 1;
    int *owner = text_owners(r), rc = 1;
    if (rank == 0)
        rc = root_texts(r, cmd, work, turn, user, owner);
    else
        peer_texts(r, work, user, owner);
    free(owner);
    return rc;
}

/* ---- tasks --------------------------------------------------------------- */

typedef struct {
    const cli_dist_tasks *t;
    const size_t *index; /* this rank's tasks */
} my_tasks;

static int my_task(size_t i, int worker, void *user)
{
    const my_tasks *m = user;
    size_t k = m->index[i];
    int status = m->t->fn(k, worker, m->t->user);
    if (status != AG_OK && m->t->errs[k].status == AG_OK)
        m->t->errs[k].status = status;
    return status;
}

/* Rank 0: every other rank's tasks, received whole. */
static void gather_tasks(const cli_dist_tasks *t)
{
    for (int q = 1; q < ranks; q++) {
        MPI_Status st;
        int len;
        MPI_Probe(q, TAG_TASKS, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &len);
        unsigned char *bytes = malloc((size_t)len + 1);
        if (!bytes)
            die("out of memory receiving results");
        MPI_Recv(bytes, len, MPI_BYTE, q, TAG_TASKS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        dist_reader rd = {bytes, (size_t)len, 0};
        while (rd.left > 0)
            if (dist_unpack_task(&rd, t) != 0)
                die("a malformed result");
        free(bytes);
    }
}

static int dist_tasks(const cli_workers *w, const cli_dist_tasks *t)
{
    if (!gate(1))
        return AG_EIO;
    uint64_t *cost = malloc((t->count + 1) * sizeof *cost);
    int *owner = malloc((t->count + 1) * sizeof *owner);
    for (size_t k = 0; cost && k < t->count; k++)
        cost[k] = 1; /* a layer or a matrix costs what the next does */
    if (!cost || !owner || dist_assign(cost, t->count, ranks, owner) != 0)
        die("out of memory assigning the tasks");
    size_t n, *index = mine(owner, t->count, &n);
    my_tasks m = {t, index};
    cli_workers_run(w, n, my_task, &m);
    int status = AG_OK;
    if (rank == 0) {
        gather_tasks(t);
        for (size_t k = 0; status == AG_OK && k < t->count; k++)
            status = t->errs[k].status;
    } else {
        dist_buf b = {0};
        for (size_t i = 0; i < n; i++)
            dist_pack_task(&b, t, index[i]);
        if (b.oom || b.len > (size_t)INT32_MAX)
            die("out of memory packing the results");
        MPI_Send(b.data, (int)b.len, MPI_BYTE, 0, TAG_TASKS, MPI_COMM_WORLD);
        dist_buf_free(&b);
        status = AG_EIO; /* this rank writes nothing */
    }
    free(index);
    free(owner);
    free(cost);
    return status;
}

/* ---- start, standard input ----------------------------------------------- */

static const cli_dist hook = {dist_texts, dist_tasks};

void dist_start(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    cli_dist_hook = &hook;
    if (rank == 0)
        return;
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0 && null != STDOUT_FILENO) {
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    cli_hold(&held_main);
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

int dist_share_stdin(int argc, char **argv)
{
    if (!reads_stdin(argc, argv))
        return 0;
    char *buf = NULL;
    size_t len = 0;
    long long size = -1;
    if (rank == 0) {
        ag_error err = {0};
        if (ag_read_fd(STDIN_FILENO, "standard input", STDIN_MAX, &buf, &len, &err) == AG_OK)
            size = (long long)len;
        else
            cli_fail_error(&err);
    }
    MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (size < 0)
        return 1;
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
    return 0;
}
