/* tokenizer_bpe.c — GPT-2 byte-level BPE: pre-tokenizer regex, byte-to-unicode
 * mapping and merges by rank (binary heap over a linked list of symbols, as
 * HF tokenizers' BPE::merge_word does). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"

/* GPT-2's pattern. HF tokenizers runs it with Oniguruma, whose Unicode \s is
 * the White_Space property; PCRE2's UCP \s also matches U+180E, so the class
 * is spelled out to match HF exactly. */
#define WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+"
    "|[" WS "]+(?![^" WS "])|[" WS "]+";

int ag_tk_bpe_compile_regex(ag_tokenizer *t, ag_error *err)
{
    int ec = 0;
    PCRE2_SIZE eo = 0;
    t->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &ec, &eo, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ag_error_set(err, AG_EUNSUPPORTED,
                            "GPT-2 pre-tokenizer regex: PCRE2 error at offset %zu: %s",
                            (size_t)eo, (const char *)msg);
    }
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional speed-up */
    return AG_OK;
}

void ag_tk_bpe_init_bytes(ag_tokenizer *t)
{
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int cp;
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
            cp = b;
        else
            cp = 256 + n++;
        if (cp < 0x80) {
            t->byte_char[b][0] = (char)cp;
            t->byte_char_len[b] = 1;
        } else {
            t->byte_char[b][0] = (char)(0xC0 | (cp >> 6));
            t->byte_char[b][1] = (char)(0x80 | (cp & 0x3F));
            t->byte_char_len[b] = 2;
        }
        int32_t id;
        t->byte_id[b] = agi_strmap_get(&t->vocab, t->byte_char[b], t->byte_char_len[b], &id) ? id : -1;
    }
}

static uint64_t pair_key(int32_t a, int32_t b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

int ag_tk_merge_put(ag_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t merged)
{
    return agi_u64map_add(&t->merges, pair_key(a, b), (uint64_t)(uint32_t)rank << 32 | (uint32_t)merged, NULL);
}

int ag_tk_merge_get(const ag_tokenizer *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged)
{
    uint64_t v;
    if (!agi_u64map_get(&t->merges, pair_key(a, b), &v))
        return 0;
    *rank = (int32_t)(uint32_t)(v >> 32);
    *merged = (int32_t)(uint32_t)v;
    return 1;
}

typedef struct {
    int32_t rank, pos, left, right;
} heap_ent;

static int ent_less(const heap_ent *a, const heap_ent *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

typedef struct {
    heap_ent *e;
    size_t n, cap;
} heap;

static int heap_push(heap *h, heap_ent x)
{
    if (h->n == h->cap) {
        heap_ent *ne = ag_tk_grow(h->e, &h->cap, sizeof *ne);
        if (!ne)
            return AG_ENOMEM;
        h->e = ne;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ent_less(&x, &h->e[p]))
            break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return AG_OK;
}

static heap_ent heap_pop(heap *h)
{
    heap_ent top = h->e[0], x = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const heap_ent *best = &x;
        if (l < h->n && ent_less(&h->e[l], best)) {
            m = l;
            best = &h->e[l];
        }
        if (r < h->n && ent_less(&h->e[r], best))
            m = r;
        if (m == i)
            break;
        h->e[i] = h->e[m];
        i = m;
    }
    if (h->n)
        h->e[i] = x;
    return top;
}

typedef struct {
    int32_t id, prev, next; /* next == -2 marks a removed symbol */
} sym;

static int push_pair(const ag_tokenizer *t, heap *h, const sym *s, int32_t pos)
{
    int32_t nx = s[pos].next;
    if (nx < 0)
        return AG_OK;
    int32_t rank, merged;
    if (!ag_tk_merge_get(t, s[pos].id, s[nx].id, &rank, &merged))
        return AG_OK;
    heap_ent e = {rank, pos, s[pos].id, s[nx].id};
    return heap_push(h, e);
}

int ag_tk_bpe_word(const ag_tokenizer *t, const unsigned char *p, size_t n, ag_tk_ids *out)
{
    if (n == 0)
        return AG_OK;
    if (t->ignore_merges) {
        ag_tk_buf b = {0};
        int rc = AG_OK;
        for (size_t i = 0; i < n && rc == AG_OK; i++)
            rc = ag_tk_buf_put(&b, t->byte_char[p[i]], t->byte_char_len[p[i]]);
        int32_t id;
        int found = rc == AG_OK && agi_strmap_get(&t->vocab, b.b, b.n, &id);
        free(b.b);
        if (rc != AG_OK)
            return rc;
        if (found)
            return ag_tk_ids_push(out, id);
    }
    /* Single-symbol fast path. */
    if (n == 1) {
        int32_t id = t->byte_id[p[0]];
        return id >= 0 ? ag_tk_ids_push(out, id) : AG_OK;
    }
    sym *s = malloc(n * sizeof *s);
    if (!s)
        return AG_ENOMEM;
    int32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[p[i]];
        if (id < 0)
            continue; /* no unk token in byte-level BPE: HF drops it */
        s[m].id = id;
        s[m].prev = m - 1;
        s[m].next = -1;
        if (m > 0)
            s[m - 1].next = m;
        m++;
    }
    heap h = {0};
    int rc = AG_OK;
    for (int32_t i = 0; i + 1 < m && rc == AG_OK; i++)
        rc = push_pair(t, &h, s, i);
    while (rc == AG_OK && h.n > 0) {
        heap_ent e = heap_pop(&h);
        int32_t pos = e.pos, nx = s[pos].next;
        if (nx < 0 || s[pos].id != e.left || s[nx].id != e.right)
            continue; /* stale */
        int32_t rank, merged;
        ag_tk_merge_get(t, e.left, e.right, &rank, &merged);
        s[pos].id = merged;
        s[pos].next = s[nx].next;
        if (s[nx].next >= 0)
            s[s[nx].next].prev = pos;
        s[nx].next = -2;
        if (s[pos].prev >= 0)
            rc = push_pair(t, &h, s, s[pos].prev);
        if (rc == AG_OK)
            rc = push_pair(t, &h, s, pos);
    }
    free(h.e);
    for (int32_t i = (m > 0 ? 0 : -1); rc == AG_OK && i >= 0; i = s[i].next)
        rc = ag_tk_ids_push(out, s[i].id);
    free(s);
    return rc;
}

int ag_tk_bpe_section(const ag_tokenizer *t, const char *s, size_t n,
                      pcre2_match_data *md, ag_tk_ids *out, ag_error *err)
{
    int rc = AG_OK;
    char *tmp = NULL;
    /* ByteLevel add_prefix_space: prepend ' ' unless the section starts with one. */
    if (t->add_prefix_space && (n == 0 || s[0] != ' ')) {
        tmp = malloc(n + 1);
        if (!tmp)
            return ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
        tmp[0] = ' ';
        if (n)
            memcpy(tmp + 1, s, n);
        s = tmp;
        n++;
    }
    if (!t->use_regex) {
        rc = ag_tk_bpe_word(t, (const unsigned char *)s, n, out);
        free(tmp);
        return rc == AG_OK ? AG_OK : ag_error_set(err, rc, "out of memory while tokenizing");
    }
    size_t pos = 0;
    while (pos < n && rc == AG_OK) {
        int r = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        size_t ms, me;
        if (r == PCRE2_ERROR_NOMATCH) {
            ms = me = n;
        } else if (r < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(r, msg, sizeof msg);
            free(tmp);
            return ag_error_set(err, AG_ELIMIT, "pre-tokenizer regex failed at byte %zu: %s",
                                pos, (const char *)msg);
        } else {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            ms = ov[0];
            me = ov[1];
        }
        if (ms > pos) /* unmatched gap: kept as its own piece (HF Isolated split) */
            rc = ag_tk_bpe_word(t, (const unsigned char *)s + pos, ms - pos, out);
        if (rc == AG_OK && me > ms)
            rc = ag_tk_bpe_word(t, (const unsigned char *)s + ms, me - ms, out);
        if (me <= pos) /* cannot happen: every alternative consumes a char */
            break;
        pos = me;
    }
    free(tmp);
    return rc == AG_OK ? AG_OK : ag_error_set(err, rc, "out of memory while tokenizing");
}
