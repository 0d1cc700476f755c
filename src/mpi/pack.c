/* pack.c — a text's or a task's result as bytes for the trip to rank 0
 * (docs/scaling.md, "How the work is split", what travels). Numbers travel as their
 * bytes in the host's order (every host of a job is the same kind of
 * machine), so rank 0 writes the very bits the owner computed. A record is
 * read through the public getters (ag_record_value: its layout is the
 * library's) and rebuilt with ag_record_init, ag_record_set_text and
 * ag_record_set, which keep a finite value's bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

void dist_buf_free(dist_buf *b)
{
    free(b->data);
    *b = (dist_buf){0};
}

static void put(dist_buf *b, const void *p, size_t n)
{
    if (b->oom || n == 0) /* p may be NULL then (no held messages) */
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u64(dist_buf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

static void put_i64(dist_buf *b, int64_t v)
{
    put(b, &v, sizeof v);
}

static void get(dist_reader *rd, void *out, size_t n)
{
    if (n == 0) /* out may be NULL then */
        return;
    if (rd->bad || rd->left < n) {
        rd->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, rd->p, n);
    rd->p += n;
    rd->left -= n;
}

static uint64_t get_u64(dist_reader *rd)
{
    uint64_t v;
    get(rd, &v, sizeof v);
    return v;
}

static int64_t get_i64(dist_reader *rd)
{
    int64_t v;
    get(rd, &v, sizeof v);
    return v;
}

/* A byte string of at most `left` bytes, malloc'd (len + 1, NUL-terminated);
 * NULL with *len 0 for an empty one or on a bad read. */
static char *get_bytes(dist_reader *rd, size_t *len)
{
    uint64_t n = get_u64(rd);
    *len = 0;
    if (rd->bad || n > rd->left) {
        rd->bad = 1;
        return NULL;
    }
    char *s = n ? malloc(n + 1) : NULL;
    if (n && !s) {
        rd->bad = 1;
        return NULL;
    }
    get(rd, s, n);
    if (s)
        s[n] = '\0';
    *len = n;
    return s;
}

/* ---- records ------------------------------------------------------------ */

/* layer, head, text, rows, cols, then (metric, kind, value) for each value
 * that is not absent. */
static void put_record(dist_buf *b, const ag_record *r)
{
    put_i64(b, ag_record_layer(r));
    put_i64(b, ag_record_head(r));
    put_i64(b, ag_record_text(r));
    put_u64(b, ag_record_rows(r));
    put_u64(b, ag_record_cols(r));
    int count = ag_metric_count(), present = 0;
    for (int m = 0; m < count; m++)
        present += ag_record_value(r, m, NULL) != AG_V_ABSENT;
    put_u64(b, (uint64_t)present);
    for (int m = 0; m < count; m++) {
        double v;
        int kind = ag_record_value(r, m, &v);
        if (kind == AG_V_ABSENT)
            continue;
        put_i64(b, m);
        put_i64(b, kind);
        put(b, &v, sizeof v);
    }
}

static void get_record(dist_reader *rd, ag_record *r)
{
    int64_t layer = get_i64(rd), head = get_i64(rd), text = get_i64(rd);
    uint64_t rows = get_u64(rd), cols = get_u64(rd), present = get_u64(rd);
    ag_record_init(r, (int)layer, (int)head, (size_t)rows, (size_t)cols);
    ag_record_set_text(r, (long)text);
    int count = ag_metric_count();
    for (uint64_t i = 0; !rd->bad && i < present; i++) {
        int64_t m = get_i64(rd), kind = get_i64(rd);
        double v;
        get(rd, &v, sizeof v);
        if (m < 0 || m >= count || kind <= AG_V_ABSENT || kind > AG_V_BOOL)
            rd->bad = 1;
        else
            ag_record_set(r, (ag_metric)m, (ag_value_kind)kind, v);
    }
}

/* ---- a text ------------------------------------------------------------- */

void dist_pack_text(dist_buf *b, size_t k, const cli_text_out *o)
{
    put_u64(b, k);
    put_i64(b, o->rc);
    put_u64(b, o->held.len);
    put(b, o->held.text, o->held.len);
    size_t count = ag_record_list_count(o->recs);
    put_u64(b, count);
    for (size_t i = 0; i < count; i++)
        put_record(b, ag_record_list_get(o->recs, i));
    put_u64(b, o->data ? o->data_size : 0);
    if (o->data)
        put(b, o->data, o->data_size);
}

int dist_unpack_text(dist_reader *rd, size_t *k, cli_text_out *o)
{
    *k = (size_t)get_u64(rd);
    o->rc = (int)get_i64(rd);
    o->held.text = get_bytes(rd, &o->held.len);
    uint64_t nrec = get_u64(rd);
    if (nrec > rd->left) /* a record is more than a byte */
        rd->bad = 1;
    for (uint64_t i = 0; !rd->bad && i < nrec; i++) {
        ag_record *r = cli_records_add(&o->recs);
        if (!r)
            rd->bad = 1;
        else
            get_record(rd, r);
    }
    o->data = get_bytes(rd, &o->data_size);
    if (!rd->bad && rd->left == 0)
        return 0;
    cli_text_out_clear(o);
    return -1;
}

/* ---- a task ------------------------------------------------------------- */

void dist_pack_task(dist_buf *b, const cli_dist_tasks *t, size_t k)
{
    const ag_error *e = &t->errs[k];
    size_t len = strnlen(e->message, sizeof e->message);
    put_u64(b, k);
    put_i64(b, e->status);
    put_u64(b, len);
    put(b, e->message, len);
    for (size_t i = 0; i < t->per_task; i++)
        put_record(b, ag_record_list_get(t->recs, k * t->per_task + i));
}

int dist_unpack_task(dist_reader *rd, const cli_dist_tasks *t)
{
    size_t k = (size_t)get_u64(rd), len;
    int status = (int)get_i64(rd);
    char *msg = get_bytes(rd, &len);
    if (rd->bad || k >= t->count) {
        free(msg);
        return -1;
    }
    /* the message as the owner escaped it: copied, not formatted again */
    t->errs[k] = (ag_error){.status = status};
    snprintf(t->errs[k].message, sizeof t->errs[k].message, "%s", msg ? msg : "");
    free(msg);
    for (size_t i = 0; !rd->bad && i < t->per_task; i++) {
        ag_record *r = ag_record_list_at(t->recs, k * t->per_task + i);
        if (!r)
            rd->bad = 1;
        else
            get_record(rd, r);
    }
    return rd->bad ? -1 : 0;
}
