/* test_corpus.c — attngeom/run.h's corpus run (ag_run_map_run) and its
 * distribution: turns in input order whatever order the inputs finish in
 * and whatever the thread count, the first failure in input order (turns
 * before it only), skipped inputs (a turn, no work), a result's bytes
 * (records to the last bit), and a loopback ag_run_dist of three "ranks"
 * on threads whose root takes exactly the one process's turns — tasks
 * (ag_run_tasks_run) too. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define N 23

/* ---- the work: input k's record, data and notes, made slowly -------------- */

typedef struct {
    int fail_at[2];          /* inputs that fail (status 40 + k), -1: none */
    atomic_int worked[N];    /* how many times each input's work ran */
    /* the turns, in the order taken */
    size_t turn[N + 1];
    char log[N + 1][96];     /* what each turn saw */
    size_t nturn;
} world;

static double value_of(size_t k)
{
    return k % 5 == 0 ? -0.0 : k % 7 == 0 ? 1e-310 * (double)k : 1.0 / 3.0 + (double)k * 1e-300;
}

static int work(size_t k, int worker, ag_run_result *res, void *user)
{
    (void)worker;
    world *w = user;
    atomic_fetch_add(&w->worked[k], 1);
    /* the later inputs finish first */
    struct timespec ts = {0, (long)(N - k) * 150000};
    nanosleep(&ts, NULL);
    ag_error err = {0};
    if (!res->recs)
        res->recs = ag_record_list_new();
    ag_record *r = ag_record_list_add(res->recs, &err);
    cr_assert(r);
    ag_record_init(r, (int)k % 3, (int)k, k + 1, k + 2);
    ag_record_set_text(r, (long)k);
    ag_record_set(r, AG_M_ENTROPY_MEAN, AG_V_NUMBER, value_of(k));
    double *d = malloc(2 * sizeof *d);
    d[0] = (double)k;
    d[1] = -(double)k;
    res->data = d;
    res->data_size = 2 * sizeof *d;
    if (asprintf(&res->notes, "note %zu\n", k) < 0)
        return 99;
    res->notes_len = strlen(res->notes);
    if ((int)k == w->fail_at[0] || (int)k == w->fail_at[1]) {
        ag_error_set(&res->err, AG_EINVAL, "input %zu failed", k);
        return 40 + (int)k;
    }
    return 0;
}

static int turn(size_t k, ag_run_result *res, void *user)
{
    world *w = user;
    char *line = w->log[w->nturn];
    w->turn[w->nturn++] = k;
    if (res->skipped) {
        snprintf(line, 96, "%zu skipped", k);
        cr_assert_null(res->recs);
        return 0;
    }
    cr_assert_eq(ag_record_list_count(res->recs), 1);
    const ag_record *r = ag_record_list_get(res->recs, 0);
    double v;
    cr_assert_eq(ag_record_value(r, AG_M_ENTROPY_MEAN, &v), AG_V_NUMBER);
    double want = value_of(k);
    cr_assert(memcmp(&v, &want, sizeof v) == 0 || (isnan(v) && isnan(want)), "input %zu", k);
    cr_assert_eq(ag_record_text(r), (long)k);
    cr_assert_eq(ag_record_rows(r), k + 1);
    const double *d = res->data;
    cr_assert_eq(res->data_size, 2 * sizeof *d);
    cr_assert(d[0] == (double)k && d[1] == -(double)k);
    snprintf(line, 96, "%zu %.*s status %d %.40s", k, (int)(res->notes_len < 32 ? res->notes_len : 32), res->notes, res->status,
             res->err.message);
    return 0;
}

/* Costs: every fourth input skipped, the others of unequal sizes. */
static void costs(uint64_t *cost)
{
    for (size_t k = 0; k < N; k++)
        cost[k] = k % 4 == 3 ? 0 : ag_run_input_cost(1 + (k * 7) % 11);
}

static int run(world *w, int threads, const ag_run_dist *dist, ag_error *err)
{
    uint64_t cost[N];
    costs(cost);
    ag_run_options *o = ag_run_options_new();
    cr_assert(o);
    cr_assert_eq(ag_run_options_set(o, "threads", threads, NULL), AG_OK);
    ag_run_options_set_dist(o, dist);
    ag_run_map m = AG_RUN_MAP_DEFAULT;
    m.count = N;
    m.cost = cost;
    m.work = work;
    m.turn = turn;
    m.user = w;
    int status = ag_run_map_run(NULL, &m, o, err);
    ag_run_options_free(o);
    return status;
}

static void world_init(world *w, int fail0, int fail1)
{
    memset(w, 0, sizeof *w);
    w->fail_at[0] = fail0;
    w->fail_at[1] = fail1;
}

Test(corpus, turns_in_input_order_for_any_thread_count)
{
    world one;
    world_init(&one, -1, -1);
    cr_assert_eq(run(&one, 1, NULL, NULL), 0);
    cr_assert_eq(one.nturn, N);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(one.turn[i], i);
        cr_assert_eq(atomic_load(&one.worked[i]), i % 4 == 3 ? 0 : 1, "input %zu", i);
    }
    cr_assert_str_eq(one.log[3], "3 skipped");
    cr_assert_str_eq(one.log[2], "2 note 2\n status 0 ");
    for (int threads = 2; threads <= 4; threads++) {
        world w;
        world_init(&w, -1, -1);
        cr_assert_eq(run(&w, threads, NULL, NULL), 0);
        cr_assert_eq(w.nturn, N);
        for (size_t i = 0; i < N; i++)
            cr_assert_str_eq(w.log[i], one.log[i], "threads %d, turn %zu", threads, i);
    }
}

Test(corpus, the_first_failure_in_input_order_stops_the_run)
{
    for (int threads = 1; threads <= 4; threads++) {
        world w;
        world_init(&w, 13, 6); /* 6 fails first in input order */
        ag_error err = {0};
        cr_assert_eq(run(&w, threads, NULL, &err), 46, "threads %d", threads);
        cr_assert_str_eq(err.message, "input 6 failed");
        cr_assert_eq(w.nturn, 7); /* 0..5 and the failing 6 itself */
        for (size_t i = 0; i < 7; i++)
            cr_assert_eq(w.turn[i], i);
        cr_assert_str_eq(w.log[6], "6 note 6\n status 46 input 6 failed");
    }
}

/* A turn's own failure stops the run with its status. */
static int turn_fails_at_4(size_t k, ag_run_result *res, void *user)
{
    turn(k, res, user);
    return k == 4 ? 3 : 0;
}

Test(corpus, a_failing_turn_stops_the_run)
{
    world w;
    world_init(&w, -1, -1);
    ag_run_map m = AG_RUN_MAP_DEFAULT;
    m.count = N;
    m.work = work;
    m.turn = turn_fails_at_4;
    m.user = &w;
    cr_assert_eq(ag_run_map_run(NULL, &m, NULL, NULL), 3);
    cr_assert_eq(w.nturn, 5);
}

Test(corpus, a_map_without_its_size_is_refused)
{
    ag_run_map m = {.count = 1, .work = work};
    ag_error err = {0};
    cr_assert_eq(ag_run_map_run(NULL, &m, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_run_map: size 0"), "%s", err.message);
}

/* ---- a result's bytes ---------------------------------------------------- */

Test(corpus, pack_and_unpack_keep_every_bit)
{
    ag_run_result res = {.size = sizeof res, .status = 46};
    ag_error_set(&res.err, AG_ERANGE, "layer 2 head 1: \x01 escaped");
    res.recs = ag_record_list_new();
    const double vals[] = {-0.0, NAN, 4.9e-324, -1.0 / 3.0, INFINITY, 1.0};
    for (int i = 0; i < 3; i++) {
        ag_record *r = ag_record_list_add(res.recs, NULL);
        ag_record_init(r, i, -1, 7, 9);
        ag_record_set_text(r, 100 + i);
        ag_record_set(r, AG_M_ENTROPY_MEAN, AG_V_NUMBER, vals[2 * i]);
        ag_record_set(r, AG_M_SPECTRAL_GAP, i == 1 ? AG_V_BOOL : AG_V_NUMBER, vals[2 * i + 1]);
    }
    res.notes = strdup("attngeom: warning\n");
    res.notes_len = strlen(res.notes);
    res.data = strdup("abc");
    res.data_size = 3;
    unsigned char *bytes;
    size_t len, k;
    cr_assert_eq(ag_run_result_pack(17, &res, &bytes, &len, NULL), AG_OK);
    ag_run_result back;
    cr_assert_eq(ag_run_result_unpack(bytes, len, &k, &back, NULL), AG_OK);
    cr_assert_eq(k, 17);
    cr_assert_eq(back.status, 46);
    cr_assert_eq(back.err.status, AG_ERANGE);
    cr_assert_str_eq(back.err.message, res.err.message);
    cr_assert_eq(back.notes_len, res.notes_len);
    cr_assert(memcmp(back.notes, res.notes, res.notes_len) == 0);
    cr_assert_eq(back.data_size, 3);
    cr_assert(memcmp(back.data, "abc", 3) == 0);
    cr_assert_eq(ag_record_list_count(back.recs), 3);
    for (size_t i = 0; i < 3; i++) {
        const ag_record *a = ag_record_list_get(res.recs, i), *b = ag_record_list_get(back.recs, i);
        cr_assert_eq(ag_record_layer(b), (int)i);
        cr_assert_eq(ag_record_head(b), -1);
        cr_assert_eq(ag_record_text(b), 100 + (long)i);
        cr_assert_eq(ag_record_cols(b), 9);
        for (int m = 0; m < ag_metric_count(); m++) {
            double x, y;
            cr_assert_eq(ag_record_value(a, m, &x), ag_record_value(b, m, &y));
            cr_assert(memcmp(&x, &y, sizeof x) == 0, "record %zu metric %d", i, m);
        }
    }
    /* short or trailing bytes are not a result */
    ag_error err = {0};
    ag_run_result bad;
    cr_assert_eq(ag_run_result_unpack(bytes, len - 1, &k, &bad, &err), AG_EINVAL);
    cr_assert_null(bad.recs);
    cr_assert_null(bad.notes);
    cr_assert(strstr(err.message, "a malformed result"), "%s", err.message);
    free(bytes);
    ag_run_result_clear(&back);
    ag_run_result_clear(&res);
}

/* ---- a loopback distribution: ranks on threads of this process --------- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_barrier_t gate;
    unsigned char *msg[4 * N];
    size_t len[4 * N], head, tail;
    int ranks, stopped, done;
} loopback;

typedef struct {
    loopback *l;
    ag_run_dist dist;
} rank_end;

static int lb_gate(void *user, int ok)
{
    pthread_barrier_wait(&((rank_end *)user)->l->gate);
    return ok;
}

static int lb_send(void *user, const unsigned char *bytes, size_t len)
{
    loopback *l = ((rank_end *)user)->l;
    pthread_mutex_lock(&l->mu);
    cr_assert_lt(l->tail, 4 * N);
    l->msg[l->tail] = malloc(len);
    memcpy(l->msg[l->tail], bytes, len);
    l->len[l->tail++] = len;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

static int lb_receive(void *user, int wait, unsigned char **bytes, size_t *len)
{
    loopback *l = ((rank_end *)user)->l;
    pthread_mutex_lock(&l->mu);
    while (wait && l->head == l->tail)
        pthread_cond_wait(&l->cv, &l->mu);
    int got = l->head < l->tail;
    if (got) {
        *bytes = l->msg[l->head];
        *len = l->len[l->head++];
    }
    pthread_mutex_unlock(&l->mu);
    return got;
}

static void lb_stop(void *user)
{
    loopback *l = ((rank_end *)user)->l;
    pthread_mutex_lock(&l->mu);
    l->stopped = 1;
    pthread_cond_broadcast(&l->cv);
    while (l->done < l->ranks - 1)
        pthread_cond_wait(&l->cv, &l->mu);
    while (l->head < l->tail) /* dropped */
        free(l->msg[l->head++]);
    pthread_mutex_unlock(&l->mu);
}

static int lb_stopped(void *user, int wait)
{
    loopback *l = ((rank_end *)user)->l;
    pthread_mutex_lock(&l->mu);
    if (wait) {
        l->done++;
        pthread_cond_broadcast(&l->cv);
        while (!l->stopped)
            pthread_cond_wait(&l->cv, &l->mu);
    }
    int stopped = l->stopped;
    pthread_mutex_unlock(&l->mu);
    return stopped;
}

typedef struct {
    rank_end end;
    world w;
    int status;
    ag_error err;
    int tasks; /* run the tasks instead */
} rank_run;

static int run_tasks(world *w, const ag_run_dist *dist, ag_record_list **recs, ag_error *errs);

static void *rank_main(void *arg)
{
    rank_run *r = arg;
    if (r->tasks) {
        ag_record_list *recs = NULL;
        r->status = run_tasks(&r->w, &r->end.dist, &recs, &r->err);
        if (r->end.dist.rank == 0)
            for (size_t k = 0; k < N; k++)
                snprintf(r->w.log[k], 96, "%zu", ag_record_rows(ag_record_list_get(recs, k)));
        ag_record_list_free(recs);
    } else {
        r->status = run(&r->w, 2, &r->end.dist, &r->err);
    }
    return NULL;
}

/* Three ranks on threads; the root's world in *root, its status returned. */
static int three_ranks(int fail0, int fail1, int tasks, world *root, ag_error *err)
{
    enum { RANKS = 3 };
    loopback l = {.ranks = RANKS};
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    pthread_barrier_init(&l.gate, NULL, RANKS);
    rank_run *r = calloc(RANKS, sizeof *r);
    pthread_t th[RANKS];
    for (int q = 0; q < RANKS; q++) {
        ag_run_dist d = AG_RUN_DIST_DEFAULT;
        d.user = &r[q].end;
        d.rank = q;
        d.ranks = RANKS;
        d.gate = lb_gate;
        d.send = lb_send;
        d.receive = lb_receive;
        d.stop = lb_stop;
        d.stopped = lb_stopped;
        r[q].end = (rank_end){&l, d};
        r[q].tasks = tasks;
        world_init(&r[q].w, fail0, fail1);
        pthread_create(&th[q], NULL, rank_main, &r[q]);
    }
    for (int q = 0; q < RANKS; q++)
        pthread_join(th[q], NULL);
    for (int q = 1; q < RANKS; q++) {
        cr_assert_eq(r[q].status, AG_EINVAL, "rank %d", q);
        cr_assert_str_eq(r[q].err.message, "not the root");
        cr_assert_eq(r[q].w.nturn, 0);
    }
    int worked = 0;
    for (size_t k = 0; k < N && !tasks; k++)
        for (int q = 0; q < RANKS; q++)
            worked += atomic_load(&r[q].w.worked[k]);
    if (!tasks && fail0 < 0 && fail1 < 0)
        cr_assert_eq(worked, N - N / 4, "each input run once, on one rank");
    *root = r[0].w;
    *err = r[0].err;
    int status = r[0].status;
    free(r);
    pthread_barrier_destroy(&l.gate);
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.mu);
    return status;
}

Test(corpus, the_root_of_a_distribution_takes_the_one_process_turns)
{
    world one, root;
    ag_error err = {0};
    world_init(&one, -1, -1);
    cr_assert_eq(run(&one, 1, NULL, NULL), 0);
    cr_assert_eq(three_ranks(-1, -1, 0, &root, &err), 0);
    cr_assert_eq(root.nturn, N);
    for (size_t i = 0; i < N; i++)
        cr_assert_str_eq(root.log[i], one.log[i], "turn %zu", i);
    /* a failure: the same turns and error as one process */
    world_init(&one, 13, 6);
    cr_assert_eq(run(&one, 1, NULL, NULL), 46);
    cr_assert_eq(three_ranks(13, 6, 0, &root, &err), 46);
    cr_assert_str_eq(err.message, "input 6 failed");
    cr_assert_eq(root.nturn, one.nturn);
    for (size_t i = 0; i < one.nturn; i++)
        cr_assert_str_eq(root.log[i], one.log[i], "turn %zu", i);
}

/* ---- tasks over the loopback -------------------------------------------- */

typedef struct {
    ag_record_list *recs;
    ag_error *errs;
    int fail_at;
} tasks_job;

static int task(size_t k, int worker, void *user)
{
    (void)worker;
    tasks_job *j = user;
    ag_record *r = ag_record_list_at(j->recs, k);
    ag_record_init(r, (int)k, 0, 3 * k + 1, 1);
    ag_record_set(r, AG_M_ENTROPY_MEAN, AG_V_NUMBER, value_of(k));
    if ((int)k == j->fail_at)
        return ag_error_set(&j->errs[k], AG_ERANGE, "task %zu", k);
    return AG_OK;
}

static int run_tasks(world *w, const ag_run_dist *dist, ag_record_list **recs, ag_error *err)
{
    ag_error errs[N] = {{0}};
    ag_run_options *o = ag_run_options_new();
    ag_run_options_set(o, "threads", 2, NULL);
    ag_run_options_set_dist(o, dist);
    tasks_job j = {NULL, errs, w->fail_at[0]};
    ag_error e = {0};
    *recs = j.recs = ag_record_list_new();
    for (size_t k = 0; k < N; k++)
        ag_record_list_add(j.recs, &e);
    ag_run_tasks t = {.size = sizeof t, .count = N, .fn = task, .user = &j, .recs = j.recs,
                      .per_task = 1, .errs = errs};
    size_t first = 0;
    int status = ag_run_tasks_run(NULL, &t, o, &first);
    if (status != AG_OK)
        *err = errs[first];
    ag_run_options_free(o);
    return status;
}

Test(corpus, tasks_over_a_distribution_end_with_every_record_at_the_root)
{
    world root;
    ag_error err = {0};
    cr_assert_eq(three_ranks(-1, -1, 1, &root, &err), AG_OK);
    for (size_t k = 0; k < N; k++) {
        char want[32];
        snprintf(want, sizeof want, "%zu", 3 * k + 1);
        cr_assert_str_eq(root.log[k], want, "task %zu", k);
    }
    cr_assert_eq(three_ranks(8, -1, 1, &root, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "task 8");
}
