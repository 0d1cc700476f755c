/* tokenizer.c — loading HF tokenizer files, added tokens, post-processing
 * and the public API of attngeom/tokenizer.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <utf8proc.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "tokenizer_int.h"

/* ======================================================================
 * small containers
 * ====================================================================== */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static int smap_grow(ag_tk_smap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 1024;
    char **nk = calloc(nc, sizeof *nk);
    uint32_t *nl = calloc(nc, sizeof *nl);
    int32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nl || !nv) {
        free(nk);
        free(nl);
        free(nv);
        return AG_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_bytes(m->keys[i], m->lens[i]) & (nc - 1);
        while (nk[j])
            j = (j + 1) & (nc - 1);
        nk[j] = m->keys[i];
        nl[j] = m->lens[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->lens);
    free(m->vals);
    m->keys = nk;
    m->lens = nl;
    m->vals = nv;
    m->cap = nc;
    return AG_OK;
}

int ag_tk_smap_put(ag_tk_smap *m, const char *key, size_t len, int32_t val, const char **stored)
{
    if (len > UINT32_MAX)
        return AG_ELIMIT;
    if ((m->count + 1) * 2 > m->cap && smap_grow(m) != AG_OK)
        return AG_ENOMEM;
    size_t j = hash_bytes(key, len) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->lens[j] == len && memcmp(m->keys[j], key, len) == 0) {
            m->vals[j] = val;
            if (stored)
                *stored = m->keys[j];
            return AG_OK;
        }
        j = (j + 1) & (m->cap - 1);
    }
    char *k = malloc(len + 1);
    if (!k)
        return AG_ENOMEM;
    memcpy(k, key, len);
    k[len] = '\0';
    m->keys[j] = k;
    m->lens[j] = (uint32_t)len;
    m->vals[j] = val;
    m->count++;
    if (stored)
        *stored = k;
    return AG_OK;
}

int ag_tk_smap_get(const ag_tk_smap *m, const char *key, size_t len, int32_t *val)
{
    if (!m->cap)
        return 0;
    size_t j = hash_bytes(key, len) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->lens[j] == len && memcmp(m->keys[j], key, len) == 0) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void ag_tk_smap_free(ag_tk_smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static uint64_t hash_pair(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static int pmap_grow(ag_tk_pmap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = malloc(nc * sizeof *nk);
    int32_t *nr = malloc(nc * sizeof *nr);
    int32_t *nm = malloc(nc * sizeof *nm);
    if (!nk || !nr || !nm) {
        free(nk);
        free(nr);
        free(nm);
        return AG_ENOMEM;
    }
    for (size_t i = 0; i < nc; i++)
        nr[i] = -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->ranks[i] < 0)
            continue;
        size_t j = hash_pair(m->keys[i]) & (nc - 1);
        while (nr[j] >= 0)
            j = (j + 1) & (nc - 1);
        nk[j] = m->keys[i];
        nr[j] = m->ranks[i];
        nm[j] = m->merged[i];
    }
    free(m->keys);
    free(m->ranks);
    free(m->merged);
    m->keys = nk;
    m->ranks = nr;
    m->merged = nm;
    m->cap = nc;
    return AG_OK;
}

/* The first (lowest-rank) occurrence of a pair wins, as in HF. */
int ag_tk_pmap_put(ag_tk_pmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged)
{
    if ((m->count + 1) * 2 > m->cap && pmap_grow(m) != AG_OK)
        return AG_ENOMEM;
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t j = hash_pair(k) & (m->cap - 1);
    while (m->ranks[j] >= 0) {
        if (m->keys[j] == k)
            return AG_OK;
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = k;
    m->ranks[j] = rank;
    m->merged[j] = merged;
    m->count++;
    return AG_OK;
}

int ag_tk_pmap_get(const ag_tk_pmap *m, int32_t a, int32_t b, int32_t *rank, int32_t *merged)
{
    if (!m->cap)
        return 0;
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t j = hash_pair(k) & (m->cap - 1);
    while (m->ranks[j] >= 0) {
        if (m->keys[j] == k) {
            *rank = m->ranks[j];
            *merged = m->merged[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void ag_tk_pmap_free(ag_tk_pmap *m)
{
    free(m->keys);
    free(m->ranks);
    free(m->merged);
    memset(m, 0, sizeof *m);
}

int ag_tk_ids_push(ag_tk_ids *o, int32_t id)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        int32_t *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv)
            return AG_ENOMEM;
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = id;
    return AG_OK;
}

int ag_tk_buf_put(ag_tk_buf *o, const char *s, size_t len)
{
    if (o->n + len + 1 > o->cap) {
        size_t nc = o->cap ? o->cap : 64;
        while (nc < o->n + len + 1)
            nc *= 2;
        char *nb = realloc(o->b, nc);
        if (!nb)
            return AG_ENOMEM;
        o->b = nb;
        o->cap = nc;
    }
    if (len)
        memcpy(o->b + o->n, s, len);
    o->n += len;
    o->b[o->n] = '\0';
    return AG_OK;
}

int ag_tk_buf_putc(ag_tk_buf *o, int32_t cp)
{
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t k = utf8proc_encode_char(cp, u);
    return ag_tk_buf_put(o, (const char *)u, k > 0 ? (size_t)k : 0);
}

/* ======================================================================
 * files
 * ====================================================================== */

static int path_join(char **out, const char *dir, const char *name, ag_error *err)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    memcpy(p, dir, a);
    size_t k = a;
    if (k > 0 && p[k - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    *out = p;
    return AG_OK;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Read a whole file (NUL-terminated), refusing more than AG_TOKENIZER_FILE_MAX. */
static int read_file(const char *path, char **buf, size_t *len, ag_error *err)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ag_error_set(err, errno == ENOENT ? AG_ENOTFOUND : AG_EIO, "%s: cannot open: %s",
                            path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ag_error_set(err, AG_EIO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > AG_TOKENIZER_FILE_MAX) {
        fclose(f);
        return ag_error_set(err, AG_ELIMIT, "%s: file of %lld bytes exceeds the %zu-byte limit",
                            path, (long long)st.st_size, (size_t)AG_TOKENIZER_FILE_MAX);
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n + 1);
    if (!b) {
        fclose(f);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    size_t got = fread(b, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(b);
        return ag_error_set(err, AG_EIO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return AG_OK;
}

static int load_json(const char *path, json_t **out, int optional, ag_error *err)
{
    *out = NULL;
    if (optional && !file_exists(path))
        return AG_OK;
    char *buf;
    size_t n;
    int rc = read_file(path, &buf, &n, err);
    if (rc != AG_OK)
        return rc;
    json_error_t je;
    json_t *j = json_loadb(buf, n, JSON_ALLOW_NUL, &je);
    free(buf);
    if (!j && !je.text[0]) /* jansson gives no message when an allocation fails */
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    if (!j)
        return ag_error_set(err, AG_EFORMAT, "%s: invalid JSON at line %d column %d: %s", path,
                            je.line, je.column, je.text);
    *out = j;
    return AG_OK;
}

/* ======================================================================
 * building the tokenizer
 * ====================================================================== */

static int set_id_token(ag_tokenizer *t, int32_t id, const char *s)
{
    if ((size_t)id >= t->cap_ids) { /* doubling: ids mostly arrive in order */
        size_t nc = (size_t)id + 1 > 2 * t->cap_ids ? (size_t)id + 1 : 2 * t->cap_ids;
        const char **nv = realloc(t->id_to_tok, nc * sizeof *nv);
        if (!nv)
            return AG_ENOMEM;
        t->id_to_tok = nv;
        t->cap_ids = nc;
    }
    if ((size_t)id >= t->n_ids) {
        for (size_t i = t->n_ids; i <= (size_t)id; i++)
            t->id_to_tok[i] = NULL;
        t->n_ids = (size_t)id + 1;
    }
    t->id_to_tok[id] = s;
    return AG_OK;
}

static int vocab_add(ag_tokenizer *t, const char *path, const char *key, size_t klen,
                     long long id, ag_error *err)
{
    if (id < 0 || id >= AG_TOKENIZER_ID_MAX)
        return ag_error_set(err, id < 0 ? AG_EFORMAT : AG_ELIMIT,
                            "%s: vocabulary id %lld of token '%.*s' is out of range [0, %d)", path,
                            id, (int)(klen > 40 ? 40 : klen), key, AG_TOKENIZER_ID_MAX);
    const char *stored;
    if (ag_tk_smap_put(&t->vocab, key, klen, (int32_t)id, &stored) != AG_OK ||
        set_id_token(t, (int32_t)id, stored) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    return AG_OK;
}

/* Vocabulary from a JSON object token -> id. */
static int vocab_from_json(ag_tokenizer *t, const char *path, const char *field, json_t *v,
                           ag_error *err)
{
    if (!json_is_object(v))
        return ag_error_set(err, AG_EFORMAT, "%s: %s is missing or not an object", path, field);
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val) {
        if (!json_is_integer(val))
            return ag_error_set(err, AG_EFORMAT, "%s: %s: id of token '%.40s' is not an integer",
                                path, field, k);
        int rc = vocab_add(t, path, k, strlen(k), (long long)json_integer_value(val), err);
        if (rc != AG_OK)
            return rc;
    }
    if (t->vocab.count == 0)
        return ag_error_set(err, AG_EFORMAT, "%s: %s is empty", path, field);
    return AG_OK;
}

static int add_merge(ag_tokenizer *t, const char *path, size_t rank, const char *a, size_t al,
                     const char *b, size_t bl, ag_error *err)
{
    int32_t ia, ib, im;
    if (!ag_tk_smap_get(&t->vocab, a, al, &ia) || !ag_tk_smap_get(&t->vocab, b, bl, &ib))
        return ag_error_set(err, AG_EFORMAT, "%s: merge %zu ('%.*s %.*s') uses a token not in the vocabulary",
                            path, rank + 1, (int)(al > 40 ? 40 : al), a, (int)(bl > 40 ? 40 : bl), b);
    char *cat = malloc(al + bl + 1);
    if (!cat)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    memcpy(cat, a, al);
    memcpy(cat + al, b, bl);
    int found = ag_tk_smap_get(&t->vocab, cat, al + bl, &im);
    free(cat);
    if (!found)
        return ag_error_set(err, AG_EFORMAT, "%s: merge %zu ('%.*s %.*s') gives a token not in the vocabulary",
                            path, rank + 1, (int)(al > 40 ? 40 : al), a, (int)(bl > 40 ? 40 : bl), b);
    if (rank >= (size_t)INT32_MAX)
        return ag_error_set(err, AG_ELIMIT, "%s: too many merges", path);
    if (ag_tk_pmap_put(&t->merges, ia, ib, (int32_t)rank, im) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    return AG_OK;
}

static int merges_from_json(ag_tokenizer *t, const char *path, json_t *m, ag_error *err)
{
    if (!json_is_array(m))
        return ag_error_set(err, AG_EFORMAT, "%s: model.merges is missing or not an array", path);
    size_t i;
    json_t *e;
    json_array_foreach(m, i, e) {
        const char *a, *b;
        size_t al, bl;
        if (json_is_string(e)) {
            const char *s = json_string_value(e);
            size_t n = json_string_length(e);
            const char *sp = memchr(s, ' ', n);
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
                return ag_error_set(err, AG_EFORMAT, "%s: model.merges[%zu] is not \"a b\"", path, i);
            a = s;
            al = (size_t)(sp - s);
            b = sp + 1;
            bl = n - al - 1;
        } else if (json_is_array(e) && json_array_size(e) == 2 &&
                   json_is_string(json_array_get(e, 0)) && json_is_string(json_array_get(e, 1))) {
            a = json_string_value(json_array_get(e, 0));
            al = json_string_length(json_array_get(e, 0));
            b = json_string_value(json_array_get(e, 1));
            bl = json_string_length(json_array_get(e, 1));
        } else {
            return ag_error_set(err, AG_EFORMAT, "%s: model.merges[%zu] is not \"a b\" or [a, b]", path, i);
        }
        int rc = add_merge(t, path, i, a, al, b, bl, err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

static int add_added(ag_tokenizer *t, const char *content, size_t len, int32_t id, int lstrip,
                     int rstrip, int single_word, int normalized, int special)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].len == len && memcmp(t->added[i].content, content, len) == 0)
            return AG_OK; /* already known */
    ag_tk_added *na = realloc(t->added, (t->n_added + 1) * sizeof *na);
    if (!na)
        return AG_ENOMEM;
    t->added = na;
    char *c = malloc(len + 1);
    if (!c)
        return AG_ENOMEM;
    memcpy(c, content, len);
    c[len] = '\0';
    ag_tk_added *a = &t->added[t->n_added++];
    a->content = c;
    a->len = len;
    a->match = c;
    a->mlen = len;
    a->id = id;
    a->lstrip = lstrip;
    a->rstrip = rstrip;
    a->single_word = single_word;
    a->normalized = normalized;
    a->special = special;
    if ((size_t)id >= t->n_ids || !t->id_to_tok[id])
        return set_id_token(t, id, c);
    return AG_OK;
}

static int jbool(json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int added_from_json(ag_tokenizer *t, const char *path, json_t *arr, ag_error *err)
{
    if (!arr || json_is_null(arr))
        return AG_OK;
    if (!json_is_array(arr))
        return ag_error_set(err, AG_EFORMAT, "%s: added_tokens is not an array", path);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *c = json_object_get(e, "content"), *id = json_object_get(e, "id");
        if (!json_is_string(c) || !json_is_integer(id) || json_string_length(c) == 0)
            return ag_error_set(err, AG_EFORMAT, "%s: added_tokens[%zu] needs a non-empty \"content\" and an integer \"id\"",
                                path, i);
        long long v = json_integer_value(id);
        if (v < 0 || v >= AG_TOKENIZER_ID_MAX)
            return ag_error_set(err, AG_ELIMIT, "%s: added_tokens[%zu].id %lld is out of range", path, i, v);
        int special = jbool(e, "special", 0);
        if (add_added(t, json_string_value(c), json_string_length(c), (int32_t)v, jbool(e, "lstrip", 0),
                      jbool(e, "rstrip", 0), jbool(e, "single_word", 0), jbool(e, "normalized", !special),
                      special) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    return AG_OK;
}

static int lookup_token(const ag_tokenizer *t, const char *s, int32_t *id)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (strlen(s) == t->added[i].len && memcmp(s, t->added[i].content, t->added[i].len) == 0) {
            *id = t->added[i].id;
            return 1;
        }
    return ag_tk_smap_get(&t->vocab, s, strlen(s), id);
}

static int ids_append(int32_t **v, size_t *n, int32_t id)
{
    int32_t *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return AG_ENOMEM;
    nv[(*n)++] = id;
    *v = nv;
    return AG_OK;
}

/* The post-processor's ids go before the text, or after it when `after`. */
static int post_append(ag_tokenizer *t, int after, int32_t id)
{
    return after ? ids_append(&t->post_post, &t->n_post_post, id)
                 : ids_append(&t->post_pre, &t->n_post_pre, id);
}

/* Special token reference as post-processors give it: "[CLS]" (looked up) or
 * ["[CLS]", 2]. */
static int post_special(ag_tokenizer *t, const char *path, const char *field, json_t *v, int before,
                        ag_error *err)
{
    int32_t id;
    if (json_is_array(v) && json_array_size(v) == 2 && json_is_integer(json_array_get(v, 1))) {
        long long x = json_integer_value(json_array_get(v, 1));
        if (x < 0 || x >= AG_TOKENIZER_ID_MAX)
            return ag_error_set(err, AG_ELIMIT, "%s: %s id %lld is out of range [0, %d)", path, field, x,
                                AG_TOKENIZER_ID_MAX);
        id = (int32_t)x;
    } else if (json_is_string(v)) {
        if (!lookup_token(t, json_string_value(v), &id))
            return ag_error_set(err, AG_ENOTFOUND, "%s: %s token '%s' is not in the vocabulary", path,
                                field, json_string_value(v));
    } else {
        return ag_error_set(err, AG_EFORMAT, "%s: %s is not [token, id]", path, field);
    }
    int rc = post_append(t, !before, id);
    return rc == AG_OK ? AG_OK : ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
}

static int post_from_json(ag_tokenizer *t, const char *path, json_t *pp, ag_error *err);

/* Sequence: each processor in turn adds its ids. */
static int post_sequence(ag_tokenizer *t, const char *path, json_t *pp, ag_error *err)
{
    json_t *ps = json_object_get(pp, "processors");
    size_t i;
    json_t *e;
    if (!json_is_array(ps))
        return ag_error_set(err, AG_EFORMAT, "%s: post_processor.processors is not an array", path);
    json_array_foreach(ps, i, e) {
        int rc = post_from_json(t, path, e, err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

/* The ids of one SpecialToken of a template (special_tokens.NAME.ids). */
static int post_template_ids(ag_tokenizer *t, const char *path, const char *name, json_t *ids, int after,
                             ag_error *err)
{
    size_t k;
    json_t *idv;
    json_array_foreach(ids, k, idv) {
        long long v = json_integer_value(idv);
        if (!json_is_integer(idv) || v < 0 || v >= AG_TOKENIZER_ID_MAX)
            return ag_error_set(err, AG_EFORMAT, "%s: post_processor.special_tokens.%s.ids[%zu] is not a valid id",
                                path, name, k);
        if (post_append(t, after, (int32_t)v) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    return AG_OK;
}

/* TemplateProcessing, single-sequence template only: special tokens before
 * the Sequence piece go before the text, the rest after it. */
static int post_template(ag_tokenizer *t, const char *path, json_t *pp, ag_error *err)
{
    json_t *single = json_object_get(pp, "single"), *sp = json_object_get(pp, "special_tokens");
    if (!json_is_array(single))
        return ag_error_set(err, AG_EFORMAT, "%s: post_processor.single is not an array", path);
    int seen_seq = 0;
    size_t i;
    json_t *e;
    json_array_foreach(single, i, e) {
        json_t *seq = json_object_get(e, "Sequence"), *st = json_object_get(e, "SpecialToken");
        if (seq) {
            if (seen_seq)
                return ag_error_set(err, AG_EUNSUPPORTED, "%s: post_processor.single repeats the sequence", path);
            seen_seq = 1;
            continue;
        }
        const char *name = json_string_value(json_object_get(st, "id"));
        if (!name)
            return ag_error_set(err, AG_EFORMAT, "%s: post_processor.single[%zu] is neither Sequence nor SpecialToken",
                                path, i);
        json_t *ids = json_object_get(json_object_get(sp, name), "ids");
        if (!json_is_array(ids))
            return ag_error_set(err, AG_ENOTFOUND, "%s: post_processor.special_tokens has no ids for '%s'",
                                path, name);
        int rc = post_template_ids(t, path, name, ids, seen_seq, err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

static int post_from_json(ag_tokenizer *t, const char *path, json_t *pp, ag_error *err)
{
    if (!pp || json_is_null(pp))
        return AG_OK;
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type)
        return ag_error_set(err, AG_EFORMAT, "%s: post_processor.type is missing", path);
    if (!strcmp(type, "ByteLevel"))
        return AG_OK; /* offsets only */
    if (!strcmp(type, "Sequence"))
        return post_sequence(t, path, pp, err);
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        int rc = post_special(t, path, "post_processor.cls", json_object_get(pp, "cls"), 1, err);
        if (rc == AG_OK)
            rc = post_special(t, path, "post_processor.sep", json_object_get(pp, "sep"), 0, err);
        return rc;
    }
    if (!strcmp(type, "TemplateProcessing"))
        return post_template(t, path, pp, err);
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: post_processor type '%s' is not supported", path, type);
}

static int pre_from_json(ag_tokenizer *t, const char *path, json_t *pre, ag_error *err)
{
    if (!pre || json_is_null(pre)) {
        t->pre = AG_TK_PRE_NONE;
        return AG_OK;
    }
    const char *type = json_string_value(json_object_get(pre, "type"));
    if (!type)
        return ag_error_set(err, AG_EFORMAT, "%s: pre_tokenizer.type is missing", path);
    if (!strcmp(type, "Sequence")) {
        json_t *ps = json_object_get(pre, "pretokenizers");
        if (json_is_array(ps) && json_array_size(ps) == 1)
            return pre_from_json(t, path, json_array_get(ps, 0), err);
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: pre_tokenizer Sequence of %zu is not supported", path,
                            json_is_array(ps) ? json_array_size(ps) : 0);
    }
    if (!strcmp(type, "ByteLevel") && t->kind == AG_TOKENIZER_BPE) {
        t->pre = AG_TK_PRE_BYTELEVEL;
        t->add_prefix_space = jbool(pre, "add_prefix_space", 0);
        t->use_regex = jbool(pre, "use_regex", 1);
        return AG_OK;
    }
    if (!strcmp(type, "BertPreTokenizer") && t->kind == AG_TOKENIZER_WORDPIECE) {
        t->pre = AG_TK_PRE_BERT;
        return AG_OK;
    }
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported with %s", path,
                        type, t->kind == AG_TOKENIZER_BPE ? "BPE" : "WordPiece");
}

static int norm_from_json(ag_tokenizer *t, const char *path, json_t *nm, ag_error *err)
{
    if (!nm || json_is_null(nm))
        return AG_OK;
    const char *type = json_string_value(json_object_get(nm, "type"));
    if (type && !strcmp(type, "BertNormalizer")) {
        t->bert_norm = 1;
        t->clean_text = jbool(nm, "clean_text", 1);
        t->chinese = jbool(nm, "handle_chinese_chars", 1);
        json_t *sa = json_object_get(nm, "strip_accents");
        t->strip_accents = json_is_boolean(sa) ? json_is_true(sa) : -1;
        t->lowercase = jbool(nm, "lowercase", 1);
        return AG_OK;
    }
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: normalizer type '%s' is not supported", path,
                        type ? type : "(none)");
}

static int finish_bpe(ag_tokenizer *t, ag_error *err)
{
    ag_tk_bpe_init_bytes(t);
    if (t->pre != AG_TK_PRE_BYTELEVEL)
        return AG_OK;
    return ag_tk_bpe_compile_regex(t, err);
}

static int bpe_model_from_json(ag_tokenizer *t, const char *path, json_t *model, ag_error *err)
{
    t->kind = AG_TOKENIZER_BPE;
    int rc = vocab_from_json(t, path, "model.vocab", json_object_get(model, "vocab"), err);
    if (rc == AG_OK)
        rc = merges_from_json(t, path, json_object_get(model, "merges"), err);
    json_t *dr = json_object_get(model, "dropout");
    const char *cs = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    const char *ew = json_string_value(json_object_get(model, "end_of_word_suffix"));
    if (rc == AG_OK && json_is_number(dr) && json_number_value(dr) > 0.0)
        rc = ag_error_set(err, AG_EUNSUPPORTED, "%s: model.dropout is not supported", path);
    if (rc == AG_OK && ((cs && *cs) || (ew && *ew)))
        rc = ag_error_set(err, AG_EUNSUPPORTED,
                          "%s: model.continuing_subword_prefix/end_of_word_suffix are not supported", path);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    return rc;
}

static int wordpiece_model_from_json(ag_tokenizer *t, const char *path, json_t *model, ag_error *err)
{
    t->kind = AG_TOKENIZER_WORDPIECE;
    int rc = vocab_from_json(t, path, "model.vocab", json_object_get(model, "vocab"), err);
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    const char *pfx = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    json_t *mx = json_object_get(model, "max_input_chars_per_word");
    /* HF's defaults when a key is absent */
    t->max_chars = json_is_integer(mx) && json_integer_value(mx) >= 0 ? (size_t)json_integer_value(mx) : 100;
    t->wp_prefix = strdup(pfx ? pfx : "##");
    if (rc == AG_OK && !t->wp_prefix)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    if (!unk)
        unk = "[UNK]";
    if (rc == AG_OK && !ag_tk_smap_get(&t->vocab, unk, strlen(unk), &t->unk_id))
        rc = ag_error_set(err, AG_ENOTFOUND, "%s: model.unk_token '%s' is not in the vocabulary", path, unk);
    return rc;
}

static int model_from_json(ag_tokenizer *t, const char *path, json_t *model, ag_error *err)
{
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type) /* older files: infer */
        type = json_object_get(model, "merges") ? "BPE"
               : json_object_get(model, "continuing_subword_prefix") ? "WordPiece" : "";
    if (!strcmp(type, "BPE"))
        return bpe_model_from_json(t, path, model, err);
    if (!strcmp(type, "WordPiece"))
        return wordpiece_model_from_json(t, path, model, err);
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: model.type '%s' is not supported (BPE or WordPiece)", path,
                        *type ? type : "(unknown)");
}

/* Everything of tokenizer.json after the model, in pipeline order; the
 * combinations the encoder does not implement are refused as soon as both
 * halves are known. */
static int pipeline_from_json(ag_tokenizer *t, const char *path, json_t *root, ag_error *err)
{
    int rc = added_from_json(t, path, json_object_get(root, "added_tokens"), err);
    if (rc == AG_OK)
        rc = norm_from_json(t, path, json_object_get(root, "normalizer"), err);
    if (rc == AG_OK && t->bert_norm && t->kind != AG_TOKENIZER_WORDPIECE)
        rc = ag_error_set(err, AG_EUNSUPPORTED, "%s: BertNormalizer with BPE is not supported", path);
    if (rc == AG_OK)
        rc = pre_from_json(t, path, json_object_get(root, "pre_tokenizer"), err);
    if (rc == AG_OK && t->kind == AG_TOKENIZER_BPE && t->pre != AG_TK_PRE_BYTELEVEL)
        rc = ag_error_set(err, AG_EUNSUPPORTED, "%s: BPE without a ByteLevel pre_tokenizer is not supported", path);
    if (rc == AG_OK)
        rc = post_from_json(t, path, json_object_get(root, "post_processor"), err);
    return rc;
}

/* Python transformers' fast tokenizers apply tokenizer_config.json over
 * tokenizer.json: GPT2TokenizerFast its add_prefix_space, BertTokenizerFast
 * do_lower_case / strip_accents / tokenize_chinese_chars. Applied here when
 * the key is present; the file itself is optional. */
static int apply_tokenizer_config(ag_tokenizer *t, const char *dir, ag_error *err)
{
    char *cp;
    json_t *cfg = NULL;
    int rc = path_join(&cp, dir, "tokenizer_config.json", err);
    if (rc == AG_OK) {
        rc = load_json(cp, &cfg, 1, err);
        free(cp);
    }
    if (rc == AG_OK && t->kind == AG_TOKENIZER_BPE) {
        json_t *aps = json_object_get(cfg, "add_prefix_space");
        if (json_is_boolean(aps))
            t->add_prefix_space = json_is_true(aps);
    }
    if (rc == AG_OK && t->bert_norm) {
        json_t *v = json_object_get(cfg, "do_lower_case");
        if (json_is_boolean(v))
            t->lowercase = json_is_true(v);
        v = json_object_get(cfg, "tokenize_chinese_chars");
        if (json_is_boolean(v))
            t->chinese = json_is_true(v);
        v = json_object_get(cfg, "strip_accents");
        if (json_is_boolean(v) || json_is_null(v))
            t->strip_accents = json_is_boolean(v) ? json_is_true(v) : -1;
    }
    json_decref(cfg);
    return rc;
}

static int load_tokenizer_json(ag_tokenizer *t, const char *path, const char *dir, ag_error *err)
{
    json_t *root;
    int rc = load_json(path, &root, 0, err);
    if (rc != AG_OK)
        return rc;
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(root) || !json_is_object(model)) {
        json_decref(root);
        return ag_error_set(err, AG_EFORMAT, "%s: \"model\" is missing or not an object", path);
    }
    rc = model_from_json(t, path, model, err);
    if (rc == AG_OK)
        rc = pipeline_from_json(t, path, root, err);
    json_decref(root);
    if (rc == AG_OK)
        rc = apply_tokenizer_config(t, dir, err);
    if (rc == AG_OK && t->kind == AG_TOKENIZER_BPE)
        rc = finish_bpe(t, err);
    return rc;
}

/* Special tokens named in tokenizer_config.json / special_tokens_map.json. */
static const char *cfg_token(json_t *cfg, json_t *map, const char *key)
{
    json_t *v = json_object_get(cfg, key);
    if (!json_is_string(v) && !json_is_object(v))
        v = json_object_get(map, key);
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_string_value(v);
}

/* tokenizer_config.json and special_tokens_map.json of dir, both optional
 * (NULL when absent). *cp keeps the config's path: later messages name it.
 * The caller frees *cp and the JSON, also on failure. */
static int load_side_configs(const char *dir, char **cp, json_t **cfg, json_t **map, ag_error *err)
{
    char *sp = NULL;
    int rc = path_join(cp, dir, "tokenizer_config.json", err);
    if (rc == AG_OK)
        rc = load_json(*cp, cfg, 1, err);
    if (rc == AG_OK)
        rc = path_join(&sp, dir, "special_tokens_map.json", err);
    if (rc == AG_OK)
        rc = load_json(sp, map, 1, err);
    free(sp);
    return rc;
}

/* The line of buf starting at *i, without its "\n" or "\r\n"; *i moves past
 * it. */
static const char *next_line(const char *buf, size_t n, size_t *i, size_t *len)
{
    size_t s = *i, e = s;
    while (e < n && buf[e] != '\n')
        e++;
    size_t le = e;
    if (le > s && buf[le - 1] == '\r')
        le--;
    *len = le - s;
    *i = e + 1;
    return buf + s;
}

/* merges.txt: "a b" a line, rank in file order; blank lines and the
 * "#version:" header that starts GPT-2's file are skipped. */
static int merges_from_txt(ag_tokenizer *t, const char *mp, const char *buf, size_t n, ag_error *err)
{
    size_t rank = 0, line = 0;
    for (size_t i = 0; i < n;) {
        size_t sl;
        const char *s = next_line(buf, n, &i, &sl);
        line++;
        if (sl == 0 || (line == 1 && sl >= 9 && !memcmp(s, "#version:", 9)))
            continue;
        const char *spc = memchr(s, ' ', sl);
        if (!spc || memchr(spc + 1, ' ', sl - (size_t)(spc + 1 - s)))
            return ag_error_set(err, AG_EFORMAT, "%s: line %zu is not \"a b\"", mp, line);
        int rc = add_merge(t, mp, rank++, s, (size_t)(spc - s), spc + 1, sl - (size_t)(spc - s) - 1, err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

static int load_merges_txt(ag_tokenizer *t, const char *dir, ag_error *err)
{
    char *mp, *buf = NULL;
    size_t n = 0;
    int rc = path_join(&mp, dir, "merges.txt", err);
    if (rc != AG_OK)
        return rc;
    if (!file_exists(mp))
        rc = ag_error_set(err, AG_ENOTFOUND, "%s: missing (needed with vocab.json)", mp);
    if (rc == AG_OK)
        rc = read_file(mp, &buf, &n, err);
    if (rc == AG_OK)
        rc = merges_from_txt(t, mp, buf, n, err);
    free(buf);
    free(mp);
    return rc;
}

/* added_tokens_decoder of tokenizer_config.json (cp names it):
 * {"50256": {"content": ..., ...}}. */
static int added_from_decoder(ag_tokenizer *t, const char *cp, json_t *cfg, ag_error *err)
{
    json_t *atd = json_object_get(cfg, "added_tokens_decoder");
    const char *k;
    json_t *e;
    json_object_foreach(atd, k, e) {
        const char *c = json_string_value(json_object_get(e, "content"));
        char *endp;
        long long id = strtoll(k, &endp, 10);
        if (!c || !*c || *endp || id < 0 || id >= AG_TOKENIZER_ID_MAX)
            return ag_error_set(err, AG_EFORMAT, "%s: added_tokens_decoder.%s is not a valid token", cp, k);
        int special = jbool(e, "special", 0);
        if (add_added(t, c, strlen(c), (int32_t)id, jbool(e, "lstrip", 0), jbool(e, "rstrip", 0),
                      jbool(e, "single_word", 0), jbool(e, "normalized", !special), special) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", cp);
    }
    return AG_OK;
}

/* GPT2Tokenizer's bos/eos/unk/pad are matched whole in the text when the
 * vocabulary has them, as its added tokens are. */
static int bpe_specials_from_cfg(ag_tokenizer *t, json_t *cfg, json_t *map, ag_error *err)
{
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *s = cfg_token(cfg, map, keys[i]);
        int32_t id;
        if (s && *s && ag_tk_smap_get(&t->vocab, s, strlen(s), &id) &&
            add_added(t, s, strlen(s), id, 0, 0, 0, 1, 1) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    return AG_OK;
}

/* The slow GPT2Tokenizer's files: vocab.json + merges.txt, byte-level. */
static int load_bpe_files(ag_tokenizer *t, const char *dir, const char *vocab_path, ag_error *err)
{
    t->kind = AG_TOKENIZER_BPE;
    t->pre = AG_TK_PRE_BYTELEVEL;
    t->use_regex = 1;
    json_t *v = NULL, *cfg = NULL, *map = NULL;
    char *cp = NULL;
    int rc = load_json(vocab_path, &v, 0, err);
    if (rc == AG_OK)
        rc = vocab_from_json(t, vocab_path, "vocabulary", v, err);
    json_decref(v);
    if (rc == AG_OK)
        rc = load_merges_txt(t, dir, err);
    if (rc == AG_OK)
        rc = load_side_configs(dir, &cp, &cfg, &map, err);
    if (rc == AG_OK) {
        t->add_prefix_space = json_is_true(json_object_get(cfg, "add_prefix_space"));
        rc = added_from_decoder(t, cp, cfg, err);
    }
    if (rc == AG_OK)
        rc = bpe_specials_from_cfg(t, cfg, map, err);
    json_decref(cfg);
    json_decref(map);
    free(cp);
    if (rc == AG_OK)
        rc = finish_bpe(t, err);
    return rc;
}

/* vocab.txt: one token a line, the line number its id. */
static int read_vocab_txt(ag_tokenizer *t, const char *vpath, ag_error *err)
{
    char *buf;
    size_t n;
    int rc = read_file(vpath, &buf, &n, err);
    size_t id = 0;
    for (size_t i = 0; rc == AG_OK && i < n;) {
        size_t len;
        const char *s = next_line(buf, n, &i, &len);
        /* HF's load_vocab strips the line: trailing spaces/tabs go too */
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        rc = vocab_add(t, vpath, s, len, (long long)id++, err);
    }
    free(buf);
    if (rc == AG_OK && t->vocab.count == 0)
        rc = ag_error_set(err, AG_EFORMAT, "%s: empty vocabulary", vpath);
    return rc;
}

enum { VT_PAD, VT_UNK, VT_CLS, VT_SEP, VT_MASK, VT_N };

/* BertTokenizer's five special tokens, by the configs' names or BERT's
 * defaults; those in the vocabulary become special added tokens. ids[k] is
 * -1 for one not in the vocabulary. */
static int vocab_txt_specials(ag_tokenizer *t, json_t *cfg, json_t *map, int32_t ids[VT_N], ag_error *err)
{
    static const char *const keys[VT_N] = {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"};
    static const char *const dflt[VT_N] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (size_t i = 0; i < VT_N; i++) {
        const char *s = cfg_token(cfg, map, keys[i]);
        if (!s)
            s = dflt[i];
        ids[i] = -1;
        if (ag_tk_smap_get(&t->vocab, s, strlen(s), &ids[i]) &&
            add_added(t, s, strlen(s), ids[i], 0, 0, 0, 0, 1) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    return AG_OK;
}

/* What BertTokenizer takes from the configs: normalizer options, special
 * tokens, and [CLS] text [SEP] when both exist. */
static int vocab_txt_config(ag_tokenizer *t, const char *vpath, json_t *cfg, json_t *map, ag_error *err)
{
    t->lowercase = jbool(cfg, "do_lower_case", 1);
    t->chinese = jbool(cfg, "tokenize_chinese_chars", 1);
    json_t *sa = json_object_get(cfg, "strip_accents");
    t->strip_accents = json_is_boolean(sa) ? json_is_true(sa) : -1;
    int rc = AG_OK;
    int32_t ids[VT_N];
    t->wp_prefix = strdup("##");
    if (!t->wp_prefix)
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK)
        rc = vocab_txt_specials(t, cfg, map, ids, err);
    t->unk_id = rc == AG_OK ? ids[VT_UNK] : -1;
    if (rc == AG_OK && t->unk_id < 0)
        rc = ag_error_set(err, AG_ENOTFOUND, "%s: the unknown token is not in the vocabulary", vpath);
    if (rc == AG_OK && ids[VT_CLS] >= 0 && ids[VT_SEP] >= 0 &&
        (post_append(t, 0, ids[VT_CLS]) != AG_OK || post_append(t, 1, ids[VT_SEP]) != AG_OK))
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    return rc;
}

/* The slow BertTokenizer's files: vocab.txt, BERT normalizer and
 * pre-tokenizer. */
static int load_vocab_txt(ag_tokenizer *t, const char *dir, const char *vpath, ag_error *err)
{
    t->kind = AG_TOKENIZER_WORDPIECE;
    t->pre = AG_TK_PRE_BERT;
    t->bert_norm = 1;
    t->clean_text = 1;
    t->max_chars = 100;
    char *cp = NULL;
    json_t *cfg = NULL, *map = NULL;
    int rc = read_vocab_txt(t, vpath, err);
    if (rc == AG_OK)
        rc = load_side_configs(dir, &cp, &cfg, &map, err);
    if (rc == AG_OK)
        rc = vocab_txt_config(t, vpath, cfg, map, err);
    json_decref(cfg);
    json_decref(map);
    free(cp);
    return rc;
}

/* A tokenizer.json named directly: its folder holds the side files. */
static int load_named_file(ag_tokenizer *t, const char *file, ag_error *err)
{
    char *dir = strdup(file);
    if (!dir)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        strcpy(dir, ".");
    int rc = load_tokenizer_json(t, file, dir, err);
    free(dir);
    return rc;
}

/* The first of tokenizer.json, vocab.json (+ merges.txt), vocab.txt present
 * in the folder decides the format: the fast tokenizer's file wins, as in
 * transformers. */
static int load_folder(ag_tokenizer *t, const char *dir, ag_error *err)
{
    static const char *const names[] = {"tokenizer.json", "vocab.json", "vocab.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *p;
        int rc = path_join(&p, dir, names[i], err);
        if (rc != AG_OK)
            return rc;
        if (!file_exists(p)) {
            free(p);
            continue;
        }
        if (i == 0)
            rc = load_tokenizer_json(t, p, dir, err);
        else if (i == 1)
            rc = load_bpe_files(t, dir, p, err);
        else
            rc = load_vocab_txt(t, dir, p, err);
        free(p);
        return rc;
    }
    return ag_error_set(err, AG_ENOTFOUND,
                        "%s: no tokenizer files (tokenizer.json, vocab.json + merges.txt, or vocab.txt)", dir);
}

/* Added tokens with normalized=true are matched in normalized text, so
 * their pattern is normalized too (as HF's AddedVocabulary does). */
static int normalize_added(ag_tokenizer *t, ag_error *err)
{
    for (size_t i = 0; t->bert_norm && i < t->n_added; i++) {
        ag_tk_added *a = &t->added[i];
        if (!a->normalized)
            continue;
        ag_tk_buf nb = {0};
        if (ag_tk_bert_normalize(t, a->content, a->len, &nb) != AG_OK) {
            free(nb.b);
            return ag_error_set(err, AG_ENOMEM, "out of memory");
        }
        a->match = nb.b ? nb.b : a->content;
        a->mlen = nb.n;
    }
    return AG_OK;
}

int ag_tokenizer_load(const char *model_dir, ag_tokenizer **out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_load: out is NULL");
    *out = NULL;
    if (!model_dir || !*model_dir)
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_load: no model folder given");
    struct stat st;
    if (stat(model_dir, &st) != 0)
        return ag_error_set(err, AG_EIO, "%s: cannot open model folder: %s", model_dir, strerror(errno));
    ag_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    t->unk_id = -1;
    t->strip_accents = -1;
    int rc;
    if (S_ISREG(st.st_mode))
        rc = load_named_file(t, model_dir, err);
    else if (!S_ISDIR(st.st_mode))
        rc = ag_error_set(err, AG_EIO, "%s: not a folder or tokenizer.json file", model_dir);
    else
        rc = load_folder(t, model_dir, err);
    if (rc == AG_OK)
        rc = normalize_added(t, err);
    if (rc != AG_OK) {
        ag_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return AG_OK;
}

void ag_tokenizer_free(ag_tokenizer *t)
{
    if (!t)
        return;
    ag_tk_smap_free(&t->vocab);
    ag_tk_pmap_free(&t->merges);
    free(t->id_to_tok);
    for (size_t i = 0; i < t->n_added; i++) {
        if (t->added[i].match != t->added[i].content)
            free(t->added[i].match);
        free(t->added[i].content);
    }
    free(t->added);
    if (t->re)
        pcre2_code_free(t->re);
    free(t->wp_prefix);
    free(t->post_pre);
    free(t->post_post);
    free(t);
}

/* ======================================================================
 * encoding
 * ====================================================================== */

typedef struct {
    pcre2_match_data *md;
    ag_error *err;
} enc_ctx;

/* Normalizer, pre-tokenizer and model on a section with no added token. */
static int encode_plain(const ag_tokenizer *t, enc_ctx *c, const char *s, size_t n, ag_tk_ids *out)
{
    if (n == 0)
        return AG_OK;
    if (t->kind == AG_TOKENIZER_BPE)
        return ag_tk_bpe_section(t, s, n, c->md, out, c->err);
    int rc = ag_tk_wordpiece_section(t, s, n, out);
    return rc == AG_OK ? AG_OK : ag_error_set(c->err, rc, "out of memory while tokenizing");
}

static int leading_ws(const char *s, size_t n)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
    return k > 0 && ag_tk_is_whitespace(cp) ? (int)k : 0;
}

static size_t trailing_ws_start(const char *s, size_t n)
{
    while (n > 0) {
        size_t st = n - 1;
        while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80)
            st--;
        utf8proc_int32_t cp;
        utf8proc_iterate((const utf8proc_uint8_t *)s + st, (utf8proc_ssize_t)(n - st), &cp);
        if (!ag_tk_is_whitespace(cp))
            break;
        n = st;
    }
    return n;
}

/* Split s on the added tokens whose `normalized` flag equals `normalized`
 * (leftmost-longest), honouring lstrip/rstrip; the pieces between are given
 * to `plain` (normalize first when !normalized, else encode_plain). */
static int split_added(const ag_tokenizer *t, enc_ctx *c, const char *s, size_t n, int normalized,
                       ag_tk_ids *out);

static int encode_unnormalized_piece(const ag_tokenizer *t, enc_ctx *c, const char *s, size_t n,
                                     ag_tk_ids *out)
{
    if (n == 0)
        return AG_OK;
    if (!t->bert_norm)
        return split_added(t, c, s, n, 1, out);
    ag_tk_buf nb = {0};
    int rc = ag_tk_bert_normalize(t, s, n, &nb);
    if (rc != AG_OK) {
        free(nb.b);
        return ag_error_set(c->err, rc, "out of memory while normalizing");
    }
    rc = split_added(t, c, nb.b ? nb.b : "", nb.n, 1, out);
    free(nb.b);
    return rc;
}

static int split_added(const ag_tokenizer *t, enc_ctx *c, const char *s, size_t n, int normalized,
                       ag_tk_ids *out)
{
    size_t seg = 0; /* start of the pending plain segment */
    size_t i = 0;
    int rc = AG_OK;
    while (i < n && rc == AG_OK) {
        const ag_tk_added *best = NULL;
        for (size_t k = 0; k < t->n_added; k++) {
            const ag_tk_added *a = &t->added[k];
            if (a->normalized != normalized || a->mlen == 0 || a->match[0] != s[i])
                continue;
            if (a->mlen <= n - i && (!best || a->mlen > best->mlen) && memcmp(s + i, a->match, a->mlen) == 0)
                best = a;
        }
        if (!best) {
            i++;
            continue;
        }
        size_t pe = i, ns = i + best->mlen;
        if (best->lstrip)
            pe = trailing_ws_start(s + seg, i - seg) + seg;
        if (best->rstrip) {
            int k;
            while (ns < n && (k = leading_ws(s + ns, n - ns)) > 0)
                ns += (size_t)k;
        }
        rc = normalized ? encode_plain(t, c, s + seg, pe - seg, out)
                        : encode_unnormalized_piece(t, c, s + seg, pe - seg, out);
        if (rc == AG_OK && ag_tk_ids_push(out, best->id) != AG_OK)
            rc = ag_error_set(c->err, AG_ENOMEM, "out of memory while tokenizing");
        seg = i = ns;
    }
    if (rc == AG_OK && seg < n)
        rc = normalized ? encode_plain(t, c, s + seg, n - seg, out)
                        : encode_unnormalized_piece(t, c, s + seg, n - seg, out);
    return rc;
}

int ag_tokenizer_encode_ex(const ag_tokenizer *t, const char *text, size_t len, unsigned flags,
                           int32_t **ids, size_t *n, ag_error *err)
{
    if (ids)
        *ids = NULL;
    if (n)
        *n = 0;
    if (!t || !ids || !n || (!text && len > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_encode: NULL argument");
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &cp);
        if (k <= 0)
            return ag_error_set(err, AG_EINVAL, "text: invalid UTF-8 at byte %zu", i);
        i += (size_t)k;
    }
    enc_ctx c = {0};
    c.err = err;
    if (t->re) {
        c.md = pcre2_match_data_create_from_pattern(t->re, NULL);
        if (!c.md)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    ag_tk_ids out = {0};
    int add_special = !(flags & AG_TOKENIZE_NO_SPECIAL);
    int rc = AG_OK;
    for (size_t i = 0; add_special && rc == AG_OK && i < t->n_post_pre; i++)
        rc = ag_tk_ids_push(&out, t->post_pre[i]);
    if (rc != AG_OK)
        rc = ag_error_set(err, rc, "out of memory while tokenizing");
    else
        rc = split_added(t, &c, text ? text : "", len, 0, &out);
    for (size_t i = 0; add_special && rc == AG_OK && i < t->n_post_post; i++)
        if ((rc = ag_tk_ids_push(&out, t->post_post[i])) != AG_OK)
            rc = ag_error_set(err, rc, "out of memory while tokenizing");
    if (c.md)
        pcre2_match_data_free(c.md);
    if (rc != AG_OK) {
        free(out.v);
        return rc;
    }
    *ids = out.v;
    *n = out.n;
    return AG_OK;
}

int ag_tokenizer_encode(const ag_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n,
                        ag_error *err)
{
    return ag_tokenizer_encode_ex(t, text, len, 0, ids, n, err);
}

const char *ag_tokenizer_token(const ag_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n_ids)
        return NULL;
    return t->id_to_tok[id];
}

int32_t ag_tokenizer_token_id(const ag_tokenizer *t, const char *token)
{
    int32_t id;
    if (!t || !token)
        return -1;
    return lookup_token(t, token, &id) ? id : -1;
}

size_t ag_tokenizer_vocab_size(const ag_tokenizer *t)
{
    return t ? t->n_ids : 0;
}

ag_tokenizer_kind ag_tokenizer_get_kind(const ag_tokenizer *t)
{
    return t ? t->kind : AG_TOKENIZER_BPE;
}
