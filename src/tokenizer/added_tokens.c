/* tokenizer/added_tokens.c — the added vocabulary, matched before the rest
 * of the pipeline as Hugging Face's AddedVocabulary (Rust) does.
 *
 * Tokens that are not `normalized` are found in the raw text, the others in
 * each normalized segment between those, with their content normalized by
 * the same normalizer. Matching is leftmost-longest (an Aho–Corasick
 * automaton per kind, aho_corasick.h); each match then goes through
 * AddedVocabulary::find_matches: a single_word token touching a word
 * character is dropped (shorter tokens at that place are not retried),
 * lstrip/rstrip take the White_Space beside it. */
#include <stdlib.h>
#include <string.h>

#include "aho_corasick.h"
#include "attngeom/tokenizer.h"
#include "base/hashmap.h"
#include "tk.h"

typedef struct {
    const char *content; /* the index's copy */
    size_t len;
    char *norm;          /* normalized content (own), NULL when not normalized */
    size_t nlen;
    int32_t id;
    unsigned char lstrip, rstrip, single_word, normalized, special;
} added_tok;

struct ag_tk_added {
    added_tok *v;
    size_t n, cap;
    agi_strmap index;     /* content -> index in v */
    agi_ac ac[2];         /* [normalized]: match strings, value = index in v */
    const char **by_id;   /* id -> content, NULL for none */
    size_t id_end, id_cap;
};

/* A split of the string being matched: [start, stop), tok >= 0 an index in
 * v, -1 for text. */
typedef struct {
    size_t start, stop;
    int32_t tok;
} range;

typedef struct {
    range *v;
    size_t n, cap;
} ranges;

static int ranges_push(ranges *r, size_t start, size_t stop, int32_t tok)
{
    if (AGB_VEC_RESERVE(r->v, r->cap, r->n + 1) != 0)
        return AG_ENOMEM;
    r->v[r->n++] = (range){start, stop, tok};
    return AG_OK;
}

static int jflag(json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* by_id grows by doubling: ids usually come one after another, and a
 * realloc that always moves (ASan's) would make one slot a time quadratic. */
static int set_by_id(ag_tk_added *a, int32_t id, const char *content)
{
    size_t need = (size_t)id + 1;
    if (need > a->id_cap) {
        size_t cap = a->id_cap ? a->id_cap : 64;
        while (cap < need)
            cap *= 2;
        const char **nv = realloc(a->by_id, cap * sizeof *nv);
        if (!nv)
            return AG_ENOMEM;
        a->by_id = nv;
        a->id_cap = cap;
    }
    for (; a->id_end < need; a->id_end++)
        a->by_id[a->id_end] = NULL;
    if (!a->by_id[id])
        a->by_id[id] = content;
    return AG_OK;
}

/* The content normalized as a normalized token is matched. */
static int normalize_content(added_tok *t, const ag_tk_normalizer *nm, ag_error *err)
{
    ag_tk_buf b = {0};
    int rc = ag_tk_normalize(nm, t->content, t->len, &b, err);
    if (rc != AG_OK) {
        free(b.b);
        return rc;
    }
    t->norm = b.b;
    t->nlen = b.n;
    return AG_OK;
}

static int add_token(ag_tk_added *a, const char *path, size_t i, json_t *e, const ag_tk_normalizer *nm,
                     ag_error *err)
{
    json_t *c = json_object_get(e, "content"), *id = json_object_get(e, "id");
    if (!json_is_string(c) || !json_is_integer(id))
        return ag_error_set(err, AG_EFORMAT, "%s: added_tokens[%zu] needs a string \"content\" and an integer \"id\"",
                            path, i);
    long long v = json_integer_value(id);
    if (v < 0 || v >= AG_TOKENIZER_ID_MAX)
        return ag_error_set(err, AG_ELIMIT, "%s: added_tokens[%zu].id %lld is out of range [0, %d)", path, i, v,
                            AG_TOKENIZER_ID_MAX);
    size_t len = json_string_length(c);
    int32_t known;
    if (len == 0 || agi_strmap_get(&a->index, json_string_value(c), len, &known))
        return AG_OK;
    if (AGB_VEC_RESERVE(a->v, a->cap, a->n + 1) != 0)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    added_tok *t = &a->v[a->n];
    memset(t, 0, sizeof *t);
    if (a->n >= INT32_MAX || agi_strmap_put(&a->index, json_string_value(c), len, (int32_t)a->n, &t->content) != AG_OK ||
        set_by_id(a, (int32_t)v, t->content) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    a->n++;
    int special = jflag(e, "special", 0);
    t->len = len;
    t->id = (int32_t)v;
    t->lstrip = (unsigned char)jflag(e, "lstrip", 0);
    t->rstrip = (unsigned char)jflag(e, "rstrip", 0);
    t->single_word = (unsigned char)jflag(e, "single_word", 0);
    t->normalized = (unsigned char)jflag(e, "normalized", !special);
    t->special = (unsigned char)special;
    return t->normalized ? normalize_content(t, nm, err) : AG_OK;
}

/* One automaton per kind; a token whose normalized content is empty can
 * never match (Rust drops empty splits). */
static int build_automata(ag_tk_added *a, const char *path, ag_error *err)
{
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < a->n; i++) {
        const added_tok *t = &a->v[i];
        const char *m = t->normalized ? t->norm : t->content;
        size_t ml = t->normalized ? t->nlen : t->len;
        if (ml > 0)
            rc = agi_ac_add(&a->ac[t->normalized], m, ml, (int32_t)i);
    }
    for (int k = 0; rc == AG_OK && k < 2; k++)
        rc = agi_ac_build(&a->ac[k]);
    if (rc == AG_ELIMIT)
        return ag_error_set(err, rc, "%s: added_tokens: more than 2^30 bytes to match", path);
    return rc == AG_OK ? AG_OK : ag_error_set(err, rc, "%s: out of memory", path);
}

int ag_tk_added_load(const char *path, json_t *arr, const ag_tk_normalizer *nm, ag_tk_added **out,
                     ag_error *err)
{
    *out = NULL;
    if (!arr || json_is_null(arr))
        return AG_OK;
    if (!json_is_array(arr))
        return ag_error_set(err, AG_EFORMAT, "%s: added_tokens is not an array", path);
    ag_tk_added *a = calloc(1, sizeof *a);
    if (!a)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < json_array_size(arr); i++)
        rc = add_token(a, path, i, json_array_get(arr, i), nm, err);
    if (rc == AG_OK)
        rc = build_automata(a, path, err);
    if (rc != AG_OK) {
        ag_tk_added_free(a);
        return rc;
    }
    *out = a;
    return AG_OK;
}

void ag_tk_added_free(ag_tk_added *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i].norm);
    free(a->v);
    agi_strmap_free(&a->index);
    agi_ac_free(&a->ac[0]);
    agi_ac_free(&a->ac[1]);
    free(a->by_id);
    free(a);
}

int ag_tk_added_token_to_id(const ag_tk_added *a, const char *s, size_t n, int32_t *id)
{
    int32_t k;
    if (!a || !agi_strmap_get(&a->index, s, n, &k))
        return 0;
    *id = a->v[k].id;
    return 1;
}

int ag_tk_added_is_special(const ag_tk_added *a, const char *s, size_t n)
{
    int32_t k;
    return a && agi_strmap_get(&a->index, s, n, &k) && a->v[k].special;
}

const char *ag_tk_added_decode_token(const ag_tk_added *a, int32_t id)
{
    const char *c = ag_tk_added_id_to_token(a, id);
    int32_t k;
    if (!c || !agi_strmap_get(&a->index, c, strlen(c), &k))
        return c;
    return a->v[k].normalized && a->v[k].norm ? a->v[k].norm : c;
}

const char *ag_tk_added_id_to_token(const ag_tk_added *a, int32_t id)
{
    return a && id >= 0 && (size_t)id < a->id_end ? a->by_id[id] : NULL;
}

int ag_tk_added_id_is_special(const ag_tk_added *a, int32_t id)
{
    const char *s = ag_tk_added_id_to_token(a, id);
    return s && ag_tk_added_is_special(a, s, strlen(s));
}

size_t ag_tk_added_id_end(const ag_tk_added *a)
{
    return a ? a->id_end : 0;
}

/* ---- matching --------------------------------------------------------------- */

/* Start of the code point that ends at byte `end` of s (end > 0). */
static size_t cp_start(const char *s, size_t end)
{
    size_t st = end - 1;
    while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80)
        st--;
    return st;
}

static int32_t cp_before(const char *s, size_t end)
{
    size_t st = cp_start(s, end);
    return ag_tk_next_cp(s, end, &st);
}

/* single_word: no word character right before or right after the match. */
static int alone(const char *s, size_t n, size_t start, size_t stop)
{
    size_t i = stop;
    return (start == 0 || !ag_tk_is_word(cp_before(s, start))) &&
           (stop == n || !ag_tk_is_word(ag_tk_next_cp(s, n, &i)));
}

/* The whitespace after a match, for rstrip. */
static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n) {
        size_t j = i;
        if (!ag_tk_is_whitespace(ag_tk_next_cp(s, n, &j)))
            break;
        i = j;
    }
    return i;
}

/* AddedVocabulary::find_matches: the splits of s by the tokens of automaton
 * `kind` into r (reset first). The automaton's matches are found first, as
 * Rust's find_iter gives them (a dropped single_word match still consumes
 * its bytes); lstrip stops at the previous split; an rstrip may run over
 * the start of the next match, which then still counts, as in Rust. */
static int find_matches(const ag_tk_added *a, int kind, const char *s, size_t n, ranges *r)
{
    r->n = 0;
    if (n == 0)
        return AG_OK;
    if (!a || agi_ac_empty(&a->ac[kind]))
        return ranges_push(r, 0, n, -1);
    int32_t *longest = n <= SIZE_MAX / sizeof *longest ? malloc(n * sizeof *longest) : NULL;
    if (!longest)
        return AG_ENOMEM;
    agi_ac_longest_starts(&a->ac[kind], s, n, longest);
    size_t off = 0; /* Rust's start_offset: end of the last split */
    int rc = AG_OK;
    for (size_t i = 0; i < n && rc == AG_OK;) {
        int32_t k = longest[i];
        if (k < 0) {
            i++;
            continue;
        }
        const added_tok *t = &a->v[k];
        size_t start = i, stop = i + (kind ? t->nlen : t->len);
        i = stop;
        if (t->single_word && !alone(s, n, start, stop))
            continue;
        while (t->lstrip && start > off && ag_tk_is_whitespace(cp_before(s, start)))
            start = cp_start(s, start);
        if (t->rstrip)
            stop = skip_ws(s, n, stop);
        if (off < start)
            rc = ranges_push(r, off, start, -1);
        if (rc == AG_OK)
            rc = ranges_push(r, start, stop, k);
        off = stop;
    }
    free(longest);
    if (rc == AG_OK && off != n)
        rc = ranges_push(r, off, n, -1);
    return rc;
}

typedef struct {
    const ag_tk_added *a;
    const ag_tk_normalizer *nm;
    ag_tk_splits *out;
    ranges raw, norm;
    ag_tk_buf buf;
    size_t *nal;          /* offsets: the spans of buf's bytes */
    ag_error *err;
} extract_ctx;

/* The split [m->start, m->stop) of s (a token or text), with its spans
 * when al (the spans of s) is given. */
static int push_range(extract_ctx *c, const char *s, const size_t *al, const range *m, int at_start)
{
    int32_t id = m->tok >= 0 ? c->a->v[m->tok].id : -1;
    int rc = ag_tk_splits_push_al(c->out, s + m->start, m->stop - m->start, at_start, id,
                                  al ? al + 2 * m->start : NULL);
    return rc == AG_OK ? AG_OK : ag_error_set(c->err, rc, "out of memory while tokenizing");
}

/* One raw text segment: normalized, then split by the normalized tokens. */
static int extract_segment(extract_ctx *c, const char *s, size_t n, const size_t *al, int at_start)
{
    free(c->nal);
    c->nal = NULL;
    int rc = al ? ag_tk_normalize_aligned(c->nm, s, n, al, &c->buf, &c->nal, c->err)
                : ag_tk_normalize(c->nm, s, n, &c->buf, c->err);
    if (rc != AG_OK)
        return rc;
    if (find_matches(c->a, 1, c->buf.b, c->buf.n, &c->norm) != AG_OK)
        return ag_error_set(c->err, AG_ENOMEM, "out of memory while tokenizing");
    for (size_t k = 0; rc == AG_OK && k < c->norm.n; k++) {
        const range *m = &c->norm.v[k];
        if (m->tok >= 0 || m->stop > m->start)
            rc = push_range(c, c->buf.b, al ? c->nal : NULL, m, m->tok < 0 && at_start && m->start == 0);
    }
    return rc;
}

int ag_tk_added_extract_aligned(const ag_tk_added *a, const ag_tk_normalizer *nm, const char *s, size_t n,
                                const size_t *al, ag_tk_splits *out, ag_error *err)
{
    extract_ctx c = {a, nm, out, {0}, {0}, {0}, NULL, err};
    int rc = find_matches(a, 0, s, n, &c.raw);
    if (rc != AG_OK)
        rc = ag_error_set(err, rc, "out of memory while tokenizing");
    for (size_t k = 0; rc == AG_OK && k < c.raw.n; k++) {
        const range *m = &c.raw.v[k];
        if (m->tok >= 0)
            rc = push_range(&c, s, al, m, 0);
        else
            rc = extract_segment(&c, s + m->start, m->stop - m->start, al ? al + 2 * m->start : NULL,
                                 m->start == 0);
    }
    free(c.raw.v);
    free(c.norm.v);
    free(c.buf.b);
    free(c.nal);
    return rc;
}

int ag_tk_added_extract(const ag_tk_added *a, const ag_tk_normalizer *nm, const char *s, size_t n,
                        ag_tk_splits *out, ag_error *err)
{
    return ag_tk_added_extract_aligned(a, nm, s, n, NULL, out, err);
}
