/* corpus.c — the corpus run (attngeom/run.h, ag_run_map_run): inputs run
 * in batches on a pool, their turns taken in input order on the calling
 * thread up to the first failure, so turns, results and the error are the
 * same for any thread count; over a distribution each rank runs its share
 * and the root takes every turn as one process does. */
#include <stdlib.h>
#include <string.h>

#include "../base/sized_int.h"
#include "access_int.h"

/* Inputs a batch holds per thread (ag_run_map.batch 0). */
#define INPUTS_PER_THREAD 4

static int skipped(const ag_run_map *m, size_t k)
{
    return m->cost && m->cost[k] == 0;
}

static size_t batch_size(const ag_run_map *m, ag_workers *w)
{
    if (m->batch)
        return m->batch;
    int threads = ag_pool_threads(ag_workers_pool(w));
    return threads == 1 ? 1 : (size_t)threads * INPUTS_PER_THREAD;
}

/* ---- a batch ------------------------------------------------------------ */

typedef struct {
    const ag_run_map *m;
    const size_t *seq;   /* (count) the inputs to run */
    ag_run_result *res;  /* (count) */
} batch;

static int input_task(size_t i, int worker, void *user)
{
    const batch *b = user;
    ag_run_result *res = &b->res[i];
    int status = b->m->work(b->seq[i], worker, res, b->m->user);
    if (status != 0 && res->status == 0)
        res->status = status;
    return res->status;
}

/* Inputs seq[count] on w's threads, input seq[i]'s result into res[i]
 * (errs: count scratch slots). A failure is its result's status: those
 * after it may not have run, and no turn is taken after it. */
static void run_batch(ag_workers *w, const ag_run_map *m, const size_t *seq, size_t count,
                      ag_run_result *res, ag_error *errs)
{
    for (size_t i = 0; i < count; i++) /* those not run stay empty */
        res[i] = (ag_run_result){.size = sizeof *res};
    batch b = {m, seq, res};
    ag_run_tasks t = {.size = sizeof t, .count = count, .fn = input_task, .user = &b,
                      .errs = errs};
    agr_tasks_local(w, &t);
}

/* Input k's turn: 0, or the status that stops the run (the turn's own, else
 * the input's), its error in *err. */
static int take_turn(const ag_run_map *m, size_t k, ag_run_result *res, ag_error *err)
{
    res->size = sizeof *res;
    int status = m->turn ? m->turn(k, res, m->user) : 0;
    if (status == 0)
        status = res->status;
    if (status != 0 && err)
        *err = res->err;
    return status;
}

static int skipped_turn(const ag_run_map *m, size_t k, ag_error *err)
{
    ag_run_result res = {.size = sizeof res, .skipped = 1};
    int status = take_turn(m, k, &res, err);
    ag_run_result_clear(&res);
    return status;
}

/* ---- one process --------------------------------------------------------- */

/* The batch from input k on: up to cap inputs to run (in seq, *count of
 * them) and the skipped ones between; returns the index after it. */
static size_t next_batch(const ag_run_map *m, size_t k, size_t cap, size_t *seq, size_t *count)
{
    for (*count = 0; k < m->count && *count < cap; k++)
        if (!skipped(m, k))
            seq[(*count)++] = k;
    return k;
}

static int run_here(ag_workers *w, const ag_run_map *m, size_t cap, size_t *seq,
                    ag_run_result *res, ag_error *errs, ag_error *err)
{
    int status = 0;
    for (size_t k = 0; status == 0 && k < m->count;) {
        size_t count, end = next_batch(m, k, cap, seq, &count);
        run_batch(w, m, seq, count, res, errs);
        for (size_t t = 0; k < end; k++) {
            if (!skipped(m, k)) {
                if (status == 0)
                    status = take_turn(m, k, &res[t], err);
                ag_run_result_clear(&res[t++]);
            } else if (status == 0) {
                status = skipped_turn(m, k, err);
            }
        }
    }
    return status;
}

/* ---- over a distribution ------------------------------------------------- */

/* Not the root: this rank's inputs a batch at a time, each result sent as
 * its batch ends, until the root stops or an input failed (the root stops
 * there or before: nothing after it is needed). */
static int run_peer(ag_workers *w, const ag_run_map *m, const agr_share *s, size_t cap,
                    ag_run_result *res, ag_error *errs, ag_error *err)
{
    const ag_run_dist *d = s->dist;
    int failed = 0, status = AG_OK;
    for (size_t i = 0; i < s->nmine && !failed && status == AG_OK && !d->stopped(d->user, 0);
         i += cap) {
        size_t count = s->nmine - i < cap ? s->nmine - i : cap;
        run_batch(w, m, s->mine + i, count, res, errs);
        for (size_t t = 0; t < count; t++) {
            if (status == AG_OK && !failed)
                status = agr_share_send(s, s->mine[i + t], &res[t], err);
            failed |= res[t].status != 0;
            ag_run_result_clear(&res[t]);
        }
    }
    d->stopped(d->user, 1);
    return status != AG_OK ? status : ag_error_set(err, AG_EINVAL, "not the root");
}

/* The root's results waiting for their turn. */
typedef struct {
    ag_run_result *res; /* (count) */
    unsigned char *ready;
} waiting;

static int receive(const agr_share *s, const ag_run_map *m, waiting *q, int wait, int *got,
                   ag_error *err)
{
    size_t k;
    ag_run_result res;
    int status = agr_share_receive(s, m->count, wait, got, &k, &res, err);
    if (status == AG_OK && *got && q->ready[k]) {
        ag_run_result_clear(&res);
        return ag_error_set(err, AG_EINVAL, "input %zu's result came twice", k);
    }
    if (status == AG_OK && *got) {
        q->res[k] = res;
        q->ready[k] = 1;
    }
    return status;
}

/* The root's own next batch into q. 1 when an input of it failed (none of
 * its later ones is needed). */
static int own_batch(ag_workers *w, const ag_run_map *m, const size_t *seq, size_t count,
                     waiting *q, ag_run_result *tmp, ag_error *errs)
{
    int failed = 0;
    run_batch(w, m, seq, count, tmp, errs);
    for (size_t t = 0; t < count; t++) {
        q->res[seq[t]] = tmp[t];
        q->ready[seq[t]] = 1;
        failed |= tmp[t].status != 0;
    }
    return failed;
}

/* Every turn that can be taken from *next on. */
static int turns(const ag_run_map *m, waiting *q, size_t *next, ag_error *err)
{
    int status = 0;
    for (; status == 0 && *next < m->count; ++*next) {
        size_t k = *next;
        if (skipped(m, k)) {
            status = skipped_turn(m, k, err);
            continue;
        }
        if (!q->ready[k])
            break;
        status = take_turn(m, k, &q->res[k], err);
        ag_run_result_clear(&q->res[k]);
    }
    return status;
}

/* The root: turns in input order; between them the results that came, else
 * its own next batch, else a wait for the next result. */
static int run_root(ag_workers *w, const ag_run_map *m, const agr_share *s, size_t cap,
                    ag_run_result *tmp, ag_error *errs, ag_error *err)
{
    waiting q = {calloc(m->count + 1, sizeof *q.res), calloc(m->count + 1, 1)};
    size_t pos = 0, next = 0;
    int status = q.res && q.ready ? 0 : ag_error_set(err, AG_ENOMEM, "out of memory"),
        own_failed = 0;
    while (status == 0 && (status = turns(m, &q, &next, err)) == 0 && next < m->count) {
        int got;
        if ((status = receive(s, m, &q, 0, &got, err)) != AG_OK || got)
            continue;
        if (pos < s->nmine && !own_failed) { /* compute while the others do */
            size_t count = s->nmine - pos < cap ? s->nmine - pos : cap;
            own_failed = own_batch(w, m, s->mine + pos, count, &q, tmp, errs);
            pos += count;
        } else {
            status = receive(s, m, &q, 1, &got, err);
        }
    }
    s->dist->stop(s->dist->user);
    for (size_t k = 0; q.res && k < m->count; k++)
        ag_run_result_clear(&q.res[k]);
    free(q.res);
    free(q.ready);
    return status;
}

/* ---- the run --------------------------------------------------------------- */

int ag_run_map_run(ag_workers *w, const ag_run_map *given, const ag_run_options *opt,
                   ag_error *err)
{
    ag_run_map map = AG_RUN_MAP_DEFAULT, *m = &map;
    if (!given || AG_SIZED_READ(m, given, ag_run_map, err) != AG_OK)
        return given ? AG_EINVAL : ag_error_set(err, AG_EINVAL, "ag_run_map_run: no map");
    if (!m->work)
        return ag_error_set(err, AG_EINVAL, "ag_run_map: no work");
    ag_workers *own = NULL;
    agr_share s;
    size_t cap = 0, *seq = NULL;
    ag_run_result *res = NULL;
    ag_error *errs = NULL;
    int status = agr_share_begin(&s, opt, m->cost, m->count, err);
    if (status == AG_OK && !w && (status = ag_run_workers(opt, m->count, &own, err)) == AG_OK)
        w = own;
    if (status == AG_OK) {
        cap = batch_size(m, w);
        seq = malloc(cap * sizeof *seq);
        res = calloc(cap, sizeof *res);
        errs = calloc(cap, sizeof *errs);
        if (!seq || !res || !errs)
            status = ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    if (status == AG_OK && !s.dist)
        status = run_here(w, m, cap, seq, res, errs, err);
    else if (status == AG_OK && s.dist->rank == 0)
        status = run_root(w, m, &s, cap, res, errs, err);
    else if (status == AG_OK)
        status = run_peer(w, m, &s, cap, res, errs, err);
    free(seq);
    free(res);
    free(errs);
    ag_workers_free(own);
    agr_share_end(&s);
    return status;
}
