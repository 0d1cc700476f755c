/* pack.c — a result of a distributed run as bytes for the trip to the root
 * (attngeom/run.h, ag_run_result_pack; docs/scaling.md, "What travels").
 * Numbers travel as their bytes in the host's order (every host of a job is
 * the same kind of machine) and records as they are stored, so the root
 * writes the very bits the owner computed. */
#include <stdlib.h>
#include <string.h>

#include "../base/vec.h"
#include "access_int.h"

/* ---- writing: an agb_buf with a sticky failure ------------------------ */

typedef struct {
    agb_buf b;
    int oom;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (!w->oom && agb_buf_put(&w->b, p, n) != 0)
        w->oom = 1;
}

static void put_u64(writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

/* A byte string: its length, then its bytes. */
static void put_bytes(writer *w, const void *p, size_t n)
{
    put_u64(w, n);
    put(w, p, n);
}

/* ---- reading: bad set on a short or malformed read --------------------- */

typedef struct {
    const unsigned char *p;
    size_t left;
    int bad, oom;
} reader;

static void get(reader *rd, void *out, size_t n)
{
    if (rd->bad || rd->left < n) {
        rd->bad = 1;
        if (n)
            memset(out, 0, n);
        return;
    }
    if (n)
        memcpy(out, rd->p, n);
    rd->p += n;
    rd->left -= n;
}

static uint64_t get_u64(reader *rd)
{
    uint64_t v;
    get(rd, &v, sizeof v);
    return v;
}

/* A byte string, malloc'd and NUL-terminated (NULL with *len 0 when empty
 * or on a failed read). */
static char *get_bytes(reader *rd, size_t *len)
{
    uint64_t n = get_u64(rd);
    *len = 0;
    if (rd->bad || n > rd->left) {
        rd->bad = 1;
        return NULL;
    }
    if (n == 0)
        return NULL;
    char *s = malloc(n + 1);
    if (!s) {
        rd->bad = rd->oom = 1;
        return NULL;
    }
    get(rd, s, n);
    s[n] = '\0';
    *len = n;
    return s;
}

/* ---- a result ------------------------------------------------------------ */

/* k, status, the error (its status, its message as the owner escaped it),
 * notes, data, then the records as stored. */
int ag_run_result_pack(size_t k, const ag_run_result *res, unsigned char **bytes, size_t *len,
                       ag_error *err)
{
    writer w = {0};
    const ag_record_list *recs = res->recs;
    size_t nrec = recs ? recs->count : 0;
    put_u64(&w, k);
    put_u64(&w, (uint64_t)(int64_t)res->status);
    put_u64(&w, (uint64_t)(int64_t)res->err.status);
    put_bytes(&w, res->err.message, strnlen(res->err.message, sizeof res->err.message));
    put_bytes(&w, res->notes, res->notes_len);
    put_bytes(&w, res->data, res->data ? res->data_size : 0);
    put_u64(&w, nrec);
    put(&w, nrec ? recs->items : NULL, nrec * sizeof *recs->items);
    if (w.oom) {
        free(w.b.b);
        *bytes = NULL;
        *len = 0;
        return ag_error_set(err, AG_ENOMEM, "out of memory packing a result");
    }
    *bytes = (unsigned char *)w.b.b;
    *len = w.b.n;
    return AG_OK;
}

static int get_records(reader *rd, ag_run_result *res)
{
    uint64_t n = get_u64(rd);
    if (rd->bad || n > rd->left / sizeof(ag_record))
        return rd->bad = 1, -1;
    if (n == 0)
        return 0;
    if (!(res->recs = ag_record_list_alloc(n, NULL)))
        return rd->bad = rd->oom = 1, -1;
    get(rd, res->recs->items, n * sizeof(ag_record));
    for (size_t i = 0; !rd->bad && i < n; i++)
        for (int m = 0; m < AG_M_COUNT; m++)
            if (res->recs->items[i].kind[m] > AG_V_BOOL)
                rd->bad = 1;
    return rd->bad ? -1 : 0;
}

int ag_run_result_unpack(const unsigned char *bytes, size_t len, size_t *k, ag_run_result *res,
                         ag_error *err)
{
    reader rd = {bytes, len, 0, 0};
    *res = (ag_run_result){.size = sizeof(ag_run_result)};
    *k = (size_t)get_u64(&rd);
    res->status = (int)(int64_t)get_u64(&rd);
    res->err.status = (int)(int64_t)get_u64(&rd);
    size_t n;
    char *msg = get_bytes(&rd, &n);
    if (n >= sizeof res->err.message)
        rd.bad = 1;
    else if (msg)
        memcpy(res->err.message, msg, n + 1); /* as the owner escaped it */
    free(msg);
    res->notes = get_bytes(&rd, &res->notes_len);
    res->data = get_bytes(&rd, &res->data_size);
    get_records(&rd, res);
    if (!rd.bad && rd.left == 0)
        return AG_OK;
    ag_run_result_clear(res);
    if (rd.oom)
        return ag_error_set(err, AG_ENOMEM, "out of memory reading a result");
    return ag_error_set(err, AG_EINVAL, "a malformed result (%zu bytes)", len);
}

void ag_run_result_clear(ag_run_result *res)
{
    ag_record_list_free(res->recs);
    free(res->data);
    free(res->notes);
    *res = (ag_run_result){.size = sizeof(ag_run_result)};
}
