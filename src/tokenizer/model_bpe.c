/* tokenizer/model_bpe.c — the BPE model as Hugging Face's Rust tokenizers
 * implements it (models/bpe/model.rs: BpeBuilder::build, BPE::merge_word;
 * word.rs: Word::merge_all).
 *
 * A piece (already mapped to the vocabulary's alphabet by the pre-tokenizer,
 * e.g. ByteLevel's "Ġ") starts as one symbol per character — with
 * continuing_subword_prefix on every character but the first and
 * end_of_word_suffix on the last — an unknown character becoming its
 * "<0xNN>" byte tokens (byte_fallback) or the unk token (fused with the
 * previous unk when fuse_unk). Then the pair of adjacent symbols with the
 * lowest merge rank, leftmost among equal ranks, is merged until no pair
 * has a merge: a binary heap of candidate merges keyed by (rank, position),
 * entries made stale by an earlier merge skipped when popped. */
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

/* Code points below this get a direct char -> id table (ASCII, Latin,
 * Greek, Cyrillic, GPT-2's byte-level alphabet, SentencePiece's U+2581). */
#define CHAR_TABLE 0x3000

struct ag_tkm_bpe {
    agi_u64map merges;   /* (left id, right id) -> rank << 32 | merged id */
    char *unk;           /* unk_token, NULL when none */
    int32_t unk_id;      /* -1: unk_token is not in the vocabulary */
    char *prefix, *suffix; /* NULL when absent or "" (which changes nothing) */
    size_t plen, slen;
    int fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_id[256];
    int32_t *char_id;    /* [CHAR_TABLE] when there is no prefix or suffix, else NULL */
    /* Where merges can join: (last char of a merge's left token, first char
     * of its right token), ASCII pairs in a bitmap, others in the map. Set
     * (split_long) only without prefix/suffix and empty tokens. */
    int split_long;
    uint8_t junction_ascii[128 * 128 / 8];
    agi_u64map junctions;
};

static uint64_t pair_key(int32_t a, int32_t b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static int merge_get(const ag_tkm_bpe *b, int32_t left, int32_t right, uint64_t *rank_merged)
{
    return agi_u64map_get(&b->merges, pair_key(left, right), rank_merged);
}

/* The code point of the UTF-8 sequence p[0, len), len 1 to 4. */
static uint32_t decode(const unsigned char *p, size_t len)
{
    switch (len) {
    case 1:
        return p[0];
    case 2:
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    case 3:
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    default:
        return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
               (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
}

static int is_junction(const ag_tkm_bpe *b, uint32_t left, uint32_t right)
{
    if (left < 128 && right < 128) {
        uint32_t k = left << 7 | right;
        return b->junction_ascii[k >> 3] >> (k & 7) & 1;
    }
    uint64_t v;
    return agi_u64map_get(&b->junctions, (uint64_t)left << 32 | right, &v);
}

/* ======================================================================
 * loading
 * ====================================================================== */

/* Record where merge a + b joins two characters (see tokenize_long). */
static int add_junction(ag_tkm_bpe *bp, const char *a, size_t al, const char *b, size_t bl)
{
    if (al == 0 || bl == 0) { /* an empty token: no character to check */
        bp->split_long = 0;
        return AG_OK;
    }
    size_t k = al - 1;
    while (k > 0 && ((unsigned char)a[k] & 0xC0) == 0x80)
        k--;
    uint32_t left = decode((const unsigned char *)a + k, al - k);
    uint32_t right = decode((const unsigned char *)b, ag_tkm_utf8_len((unsigned char)b[0]) <= bl
                                                          ? ag_tkm_utf8_len((unsigned char)b[0])
                                                          : bl);
    if (left < 128 && right < 128) {
        uint32_t key = left << 7 | right;
        bp->junction_ascii[key >> 3] |= (uint8_t)(1u << (key & 7));
        return AG_OK;
    }
    return agi_u64map_add(&bp->junctions, (uint64_t)left << 32 | right, 1, NULL);
}

typedef struct {
    int32_t a, b, merged;
} merge_ids;

/* One merge "a b" / [a, b] at index i: its ids, or AG_EFORMAT naming it. */
static int resolve_merge(const ag_tkm_bpe *bp, const ag_tkm_vocab *v, const char *path, size_t i,
                         const char *a, size_t al, const char *b, size_t bl, ag_tk_buf *cat,
                         merge_ids *out, ag_error *err)
{
    int sa = (int)(al > 40 ? 40 : al), sb = (int)(bl > 40 ? 40 : bl);
    int has_a = ag_tkm_vocab_get(v, a, al, &out->a);
    if (!has_a || !ag_tkm_vocab_get(v, b, bl, &out->b))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: model.merges[%zu] ('%.*s' '%.*s'): token '%.*s' is not in the vocabulary",
                            path, i, sa, a, sb, b, has_a ? sb : sa, has_a ? b : a);
    /* Rust: format!("{a}{}", &b[prefix_len..]) — b's first prefix_len bytes
     * go, whatever they are (a panic there when b is shorter). */
    if (bl < bp->plen || (bl > bp->plen && ((unsigned char)b[bp->plen] & 0xC0) == 0x80))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: model.merges[%zu] ('%.*s' '%.*s'): '%.*s' is shorter than "
                            "continuing_subword_prefix '%s'",
                            path, i, sa, a, sb, b, sb, b, bp->prefix);
    cat->n = 0;
    if (ag_tk_buf_put(cat, a, al) != AG_OK || ag_tk_buf_put(cat, b + bp->plen, bl - bp->plen) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    if (!ag_tkm_vocab_get(v, cat->b, cat->n, &out->merged))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: model.merges[%zu] ('%.*s' '%.*s'): merged token '%.*s' is not in the "
                            "vocabulary",
                            path, i, sa, a, sb, b, (int)(cat->n > 80 ? 80 : cat->n), cat->b);
    return AG_OK;
}

/* A merge "a b" as its two strings: one space, no other. */
static int split_merge_string(const char *path, size_t i, const char *s, size_t n, const char **a, size_t *al,
                              const char **b, size_t *bl, ag_error *err)
{
    const char *sp = s ? memchr(s, ' ', n) : NULL;
    if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
        return ag_error_set(err, AG_EFORMAT, "%s: model.merges[%zu] is not two tokens separated by one space", path,
                            i);
    *a = s;
    *al = (size_t)(sp - s);
    *b = sp + 1;
    *bl = n - *al - 1;
    return AG_OK;
}

/* Entry e of the merges array as two strings. `strings`: the array holds
 * "a b" strings (else [a, b] pairs; Rust takes one form or the other). */
static int split_merge(const char *path, size_t i, json_t *e, int strings, const char **a,
                       size_t *al, const char **b, size_t *bl, ag_error *err)
{
    if (strings)
        return split_merge_string(path, i, json_string_value(e), json_string_length(e), a, al, b, bl, err);
    json_t *x = json_array_get(e, 0), *y = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(x) || !json_is_string(y))
        return ag_error_set(err, AG_EFORMAT, "%s: model.merges[%zu] is not a pair of strings", path, i);
    *a = json_string_value(x);
    *al = json_string_length(x);
    *b = json_string_value(y);
    *bl = json_string_length(y);
    return AG_OK;
}

static int is_version_line(const char *s, size_t n)
{
    return s && n >= 8 && !memcmp(s, "#version", 8);
}

/* Merge i as two strings, from the scan (json_scan.h) when it holds the
 * merges, else from the JSON array m. 1: a "#version" line, skipped. */
static int merge_entry(const char *path, json_t *m, const ag_tk_scan *sc, int strings, size_t i, const char **a,
                       size_t *al, const char **b, size_t *bl, ag_error *err)
{
    if (sc && sc->merge_width == 2) {
        const ag_tk_str *p = &sc->merge[2 * i];
        *a = p[0].s, *al = p[0].n, *b = p[1].s, *bl = p[1].n;
        return AG_OK;
    }
    const char *s = sc ? sc->merge[i].s : json_string_value(json_array_get(m, i));
    size_t n = sc ? sc->merge[i].n : json_string_length(json_array_get(m, i));
    if (strings && is_version_line(s, n))
        return 1;
    if (sc)
        return split_merge_string(path, i, s, n, a, al, b, bl, err);
    return split_merge(path, i, json_array_get(m, i), strings, a, al, b, bl, err);
}

/* Ranks are positions in the list, "#version" lines left out (Rust's
 * convert_merges_to_hashmap). A pair listed twice keeps its LAST rank, as
 * Rust's collect into a HashMap does: the map is filled backwards, first
 * insertion kept. Errors name the first bad merge, as Rust's build does. */
static int load_merges(ag_tkm_bpe *bp, const ag_tkm_vocab *v, const char *path, json_t *m,
                       const ag_tk_scan *sc, ag_error *err)
{
    if (sc && !sc->merge_width)
        sc = NULL; /* not scanned: jansson's array */
    if (!sc && !json_is_array(m))
        return ag_error_set(err, AG_EFORMAT, "%s: model.merges is missing or not an array", path);
    size_t n = sc ? sc->n_merges : json_array_size(m);
    int strings = sc ? sc->merge_width == 1 : n > 0 && json_is_string(json_array_get(m, 0));
    merge_ids *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    ag_tk_buf cat = {0};
    size_t k = 0;
    int rc = AG_OK;
    for (size_t i = 0; i < n && rc == AG_OK; i++) {
        const char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        rc = merge_entry(path, m, sc, strings, i, &a, &al, &b, &bl, err);
        if (rc == 1) {
            rc = AG_OK;
            continue;
        }
        if (rc == AG_OK)
            rc = resolve_merge(bp, v, path, i, a, al, b, bl, &cat, &ids[k++], err);
        if (rc == AG_OK && bp->split_long && add_junction(bp, a, al, b, bl) != AG_OK)
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    if (rc == AG_OK && k >= (size_t)UINT32_MAX)
        rc = ag_error_set(err, AG_ELIMIT, "%s: model.merges: too many merges", path);
    if (rc == AG_OK && agi_u64map_reserve(&bp->merges, k) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    for (size_t r = k; rc == AG_OK && r-- > 0;)
        if (agi_u64map_add(&bp->merges, pair_key(ids[r].a, ids[r].b),
                           (uint64_t)r << 32 | (uint32_t)ids[r].merged, NULL) != AG_OK)
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    free(cat.b);
    free(ids);
    return rc;
}

static int load_dropout(const char *path, json_t *j, ag_error *err)
{
    json_t *d = json_object_get(j, "dropout");
    if (!d || json_is_null(d))
        return AG_OK;
    if (!json_is_number(d))
        return ag_error_set(err, AG_EFORMAT, "%s: model.dropout is not a number", path);
    double p = json_number_value(d);
    if (!(p >= 0.0 && p <= 1.0))
        return ag_error_set(err, AG_EFORMAT, "%s: model.dropout %g is not in [0, 1]", path, p);
    /* Rust keeps an f32 and skips dropout when it equals 0.0 */
    if ((float)p > 0.0f) /* random merges: ids would change from one run to the next */
        return ag_error_set(err, AG_EUNSUPPORTED,
                            "%s: model.dropout %g is not supported (BPE dropout is random; only null "
                            "or 0)",
                            path, p);
    return AG_OK;
}

/* "" behaves as absent: nothing to add. */
static void drop_empty(char **s, size_t *len)
{
    *len = *s ? strlen(*s) : 0;
    if (*s && !**s) {
        free(*s);
        *s = NULL;
    }
}

static int load_options(ag_tkm_bpe *bp, const char *path, json_t *j, ag_error *err)
{
    int rc = load_dropout(path, j, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_string(path, j, "unk_token", NULL, &bp->unk, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_string(path, j, "continuing_subword_prefix", NULL, &bp->prefix, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_string(path, j, "end_of_word_suffix", NULL, &bp->suffix, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_bool(path, j, "fuse_unk", &bp->fuse_unk, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_bool(path, j, "byte_fallback", &bp->byte_fallback, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_bool(path, j, "ignore_merges", &bp->ignore_merges, err);
    drop_empty(&bp->prefix, &bp->plen);
    drop_empty(&bp->suffix, &bp->slen);
    return rc;
}

/* Direct ids of the single-character tokens (only without prefix/suffix,
 * where a character's token is the character itself). */
static int build_char_table(ag_tkm_bpe *bp, const ag_tkm_vocab *v)
{
    bp->char_id = malloc(CHAR_TABLE * sizeof *bp->char_id);
    if (!bp->char_id)
        return AG_ENOMEM;
    for (uint32_t c = 0; c < CHAR_TABLE; c++) {
        char u[3];
        size_t k = 1;
        if (c < 0x80) {
            u[0] = (char)c;
        } else if (c < 0x800) {
            u[0] = (char)(0xC0 | c >> 6);
            u[1] = (char)(0x80 | (c & 0x3F));
            k = 2;
        } else {
            u[0] = (char)(0xE0 | c >> 12);
            u[1] = (char)(0x80 | (c >> 6 & 0x3F));
            u[2] = (char)(0x80 | (c & 0x3F));
            k = 3;
        }
        if (!ag_tkm_vocab_get(v, u, k, &bp->char_id[c]))
            bp->char_id[c] = -1;
    }
    return AG_OK;
}

int ag_tkm_bpe_load(const char *path, json_t *j, const ag_tk_scan *sc, ag_tkm_vocab *v, ag_tkm_bpe **out,
                    ag_error *err)
{
    ag_tkm_bpe *bp = calloc(1, sizeof *bp);
    if (!bp)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    int rc = load_options(bp, path, j, err);
    /* with a prefix or suffix token strings are not the text they cover;
     * an empty unk token covers text without a character */
    bp->split_long = !bp->prefix && !bp->suffix && !(bp->unk && !*bp->unk);
    if (rc == AG_OK)
        rc = load_merges(bp, v, path, json_object_get(j, "merges"), sc, err);
    if (rc == AG_OK && !bp->prefix && !bp->suffix && build_char_table(bp, v) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    if (rc != AG_OK) {
        ag_tkm_bpe_free(bp);
        return rc;
    }
    /* Rust looks the unk token up only when a piece needs it. */
    if (!bp->unk || !ag_tkm_vocab_get(v, bp->unk, strlen(bp->unk), &bp->unk_id))
        bp->unk_id = -1;
    ag_tkm_byte_ids(v, bp->byte_id);
    *out = bp;
    return AG_OK;
}

void ag_tkm_bpe_free(ag_tkm_bpe *b)
{
    if (!b)
        return;
    agi_u64map_free(&b->merges);
    agi_u64map_free(&b->junctions);
    free(b->unk);
    free(b->prefix);
    free(b->suffix);
    free(b->char_id);
    free(b);
}

/* ======================================================================
 * tokenizing
 * ====================================================================== */

typedef struct {
    int32_t id;
    int32_t prev, next; /* -1: none */
    uint32_t len;       /* bytes of the piece; 0 once merged into its left neighbour */
} sym;

/* A candidate merge of the symbol at pos with its right neighbour. The
 * heap is ordered by key = rank << 32 | pos: lowest rank, then leftmost. */
typedef struct {
    uint64_t key;
    int32_t left, right, merged; /* the pair and its result when pushed */
} cand;

/* Per-call memory: on the stack for pieces up to STACK_SYMS symbols, else
 * allocated (the heap of candidates then grows as needed). The model stays
 * read-only, so threads may share it. */
enum { STACK_SYMS = 64, STACK_KEY = 64 };

typedef struct {
    sym *s;
    size_t n;
    cand *h;
    size_t hn, hcap;
    char *key;      /* prefix + char + suffix */
    int h_owned;    /* h was allocated */
    void *mem;      /* s and key when allocated */
    /* pending unknown: id and bytes, id -1 when none */
    int32_t unk_id;
    uint32_t unk_len;
    sym s_stack[STACK_SYMS];
    cand h_stack[3 * STACK_SYMS]; /* 3 per symbol: the most a piece can push */
    char key_stack[STACK_KEY];
} work;

static int work_init(work *w, const ag_tkm_bpe *b, size_t n)
{
    w->n = w->hn = 0;
    w->mem = NULL;
    w->h_owned = 0;
    w->unk_id = -1;
    /* symbols: one per char, or the bytes of prefix + char (+ suffix) */
    size_t max_syms = n;
    if (b->byte_fallback) {
        if (n > (SIZE_MAX / 4 - b->slen) / (1 + b->plen))
            return AG_ELIMIT;
        max_syms = n * (1 + b->plen) + b->slen;
    }
    size_t key_max = b->plen + 4 + b->slen;
    if (max_syms >= (size_t)INT32_MAX / 4)
        return AG_ELIMIT;
    w->h = w->h_stack;
    w->hcap = sizeof w->h_stack / sizeof *w->h_stack;
    if (max_syms <= STACK_SYMS && key_max <= STACK_KEY) {
        w->s = w->s_stack;
        w->key = w->key_stack;
        return AG_OK;
    }
    char *mem = malloc(max_syms * sizeof(sym) + key_max);
    if (!mem)
        return AG_ENOMEM;
    w->mem = mem;
    w->s = (sym *)mem;
    w->key = mem + max_syms * sizeof(sym);
    return AG_OK;
}

static void work_free(work *w)
{
    free(w->mem);
    if (w->h_owned)
        free(w->h);
}

static void add_sym(work *w, int32_t id, uint32_t len)
{
    int32_t i = (int32_t)w->n++;
    w->s[i] = (sym){id, i - 1, -1, len};
    if (i > 0)
        w->s[i - 1].next = i;
}

static int heap_grow(work *w)
{
    size_t nc = w->hcap * 2;
    cand *nh = w->h_owned ? realloc(w->h, nc * sizeof *nh) : malloc(nc * sizeof *nh);
    if (!nh)
        return AG_ENOMEM;
    if (!w->h_owned)
        memcpy(nh, w->h, w->hn * sizeof *nh);
    w->h = nh;
    w->hcap = nc;
    w->h_owned = 1;
    return AG_OK;
}

static int heap_push(work *w, cand c)
{
    if (w->hn == w->hcap && heap_grow(w) != AG_OK)
        return AG_ENOMEM;
    size_t i = w->hn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (w->h[p].key <= c.key)
            break;
        w->h[i] = w->h[p];
        i = p;
    }
    w->h[i] = c;
    return AG_OK;
}

static cand heap_pop(work *w)
{
    cand top = w->h[0], last = w->h[--w->hn];
    size_t i = 0, n = w->hn;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= n)
            break;
        if (l + 1 < n && w->h[l + 1].key < w->h[l].key)
            m = l + 1;
        if (last.key <= w->h[m].key)
            break;
        w->h[i] = w->h[m];
        i = m;
    }
    if (n)
        w->h[i] = last;
    return top;
}

static int push_pair(const ag_tkm_bpe *b, work *w, int32_t pos)
{
    int32_t nx = w->s[pos].next;
    uint64_t rm;
    if (nx < 0 || !merge_get(b, w->s[pos].id, w->s[nx].id, &rm))
        return AG_OK;
    cand c = {(rm & 0xFFFFFFFF00000000u) | (uint32_t)pos, w->s[pos].id, w->s[nx].id, (int32_t)(uint32_t)rm};
    return heap_push(w, c);
}

/* Rust's stale test: the pair now at pos must merge into the same token.
 * When the pair is the one pushed, it does without a lookup. */
static int still_valid(const ag_tkm_bpe *b, const work *w, const cand *c, int32_t pos, int32_t nx)
{
    int32_t l = w->s[pos].id, r = w->s[nx].id;
    if (l == c->left && r == c->right)
        return 1;
    uint64_t rm;
    return merge_get(b, l, r, &rm) && (int32_t)(uint32_t)rm == c->merged;
}

/* Word::merge_all without dropout. */
static int merge_all(const ag_tkm_bpe *b, work *w)
{
    int rc = AG_OK;
    for (int32_t i = 0; i + 1 < (int32_t)w->n && rc == AG_OK; i++)
        rc = push_pair(b, w, i);
    while (w->hn > 0 && rc == AG_OK) {
        cand c = heap_pop(w);
        int32_t pos = (int32_t)(uint32_t)c.key;
        sym *s = w->s;
        if (s[pos].len == 0 || s[pos].next < 0)
            continue;
        int32_t nx = s[pos].next;
        if (!still_valid(b, w, &c, pos, nx))
            continue;
        s[pos].id = c.merged;
        s[pos].len += s[nx].len;
        s[pos].next = s[nx].next;
        s[nx].len = 0;
        if (s[pos].next >= 0)
            s[s[pos].next].prev = pos;
        if (s[pos].prev >= 0)
            rc = push_pair(b, w, s[pos].prev);
        if (rc == AG_OK)
            rc = push_pair(b, w, pos);
    }
    return rc;
}

static int missing_unk(const ag_tkm_bpe *b, const char *path, ag_error *err)
{
    return ag_error_set(err, AG_EFORMAT, "%s: model.unk_token '%.40s' is not in the vocabulary", path,
                        b->unk);
}

/* The symbol(s) of one character whose token (key) is not in the
 * vocabulary: its bytes, or the unk token (BPE::merge_word). */
static int unknown_char(const ag_tkm_bpe *b, work *w, const char *key, size_t klen, uint32_t clen,
                        const char *path, ag_error *err)
{
    if (b->byte_fallback) {
        size_t k = 0;
        while (k < klen && b->byte_id[(unsigned char)key[k]] >= 0)
            k++;
        if (k == klen) { /* Rust adds them without flushing a pending unk */
            for (k = 0; k < klen; k++)
                add_sym(w, b->byte_id[(unsigned char)key[k]], 1);
            return AG_OK;
        }
    }
    if (!b->unk)
        return AG_OK; /* dropped */
    if (w->unk_id >= 0 && b->fuse_unk) {
        w->unk_len += clen;
        return AG_OK;
    }
    if (b->unk_id < 0)
        return missing_unk(b, path, err);
    if (w->unk_id >= 0)
        add_sym(w, w->unk_id, w->unk_len);
    w->unk_id = b->unk_id;
    w->unk_len = clen;
    return AG_OK;
}

static void known_char(work *w, int32_t id, uint32_t clen)
{
    if (w->unk_id >= 0) {
        add_sym(w, w->unk_id, w->unk_len);
        w->unk_id = -1;
    }
    add_sym(w, id, clen);
}

/* The token string of the character s[i, i + clen): prefix unless first,
 * suffix when last. */
static size_t char_key(const ag_tkm_bpe *b, char *key, const char *s, size_t i, size_t clen, size_t n)
{
    size_t k = 0;
    if (i > 0 && b->prefix) {
        memcpy(key, b->prefix, b->plen);
        k = b->plen;
    }
    memcpy(key + k, s + i, clen);
    k += clen;
    if (i + clen == n && b->suffix) {
        memcpy(key + k, b->suffix, b->slen);
        k += b->slen;
    }
    return k;
}

/* id of a character without prefix/suffix through the table, -2 when the
 * table cannot tell (the hash map then decides). */
static int32_t table_id(const ag_tkm_bpe *b, const unsigned char *p, size_t clen)
{
    if (clen > 3)
        return -2;
    uint32_t c = decode(p, clen);
    return c < CHAR_TABLE ? b->char_id[c] : -2;
}

static int initial_symbols(const ag_tkm_bpe *b, const ag_tkm_vocab *v, work *w, const char *s,
                           size_t n, const char *path, ag_error *err)
{
    for (size_t i = 0; i < n;) {
        size_t clen = ag_tkm_utf8_len((unsigned char)s[i]);
        if (clen > n - i)
            clen = n - i;
        /* the table exists only without prefix and suffix */
        int32_t id = b->char_id ? table_id(b, (const unsigned char *)s + i, clen) : -2;
        const char *key = s + i;
        size_t klen = clen;
        if (b->prefix || b->suffix) {
            klen = char_key(b, w->key, s, i, clen, n);
            key = w->key;
        }
        if (id == -2 && !ag_tkm_vocab_get(v, key, klen, &id))
            id = -1;
        if (id >= 0) {
            known_char(w, id, (uint32_t)clen);
        } else {
            int rc = unknown_char(b, w, key, klen, (uint32_t)clen, path, err);
            if (rc != AG_OK)
                return rc;
        }
        i += clen;
    }
    if (w->unk_id >= 0)
        add_sym(w, w->unk_id, w->unk_len);
    return AG_OK;
}

/* BPE::merge_word of one piece, appended to out; the spans are the
 * symbols' bytes from `base` on (Rust: Word::get_offsets; a byte-fallback
 * symbol is one byte). */
static int bpe_word(const ag_tkm_bpe *b, const ag_tkm_vocab *v, const char *path, const char *s,
                    size_t n, size_t base, ag_tk_ids *out, ag_error *err)
{
    work w;
    int rc = work_init(&w, b, n);
    if (rc == AG_ENOMEM)
        return ag_error_set(err, rc, "out of memory while tokenizing");
    if (rc != AG_OK)
        return ag_error_set(err, rc, "%s: BPE: a piece of %zu bytes is too long", path, n);
    rc = initial_symbols(b, v, &w, s, n, path, err);
    if (rc == AG_OK && w.n > 0) {
        rc = merge_all(b, &w);
        size_t pos = base;
        for (int32_t i = 0; i >= 0 && rc == AG_OK; i = w.s[i].next) {
            rc = ag_tk_ids_push_span(out, w.s[i].id, pos, pos + w.s[i].len);
            pos += w.s[i].len;
        }
        if (rc != AG_OK)
            rc = ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    }
    work_free(&w);
    return rc;
}

/* A long piece (SentencePiece layouts hand the model a whole text) is cut
 * between two characters c, d that are both tokens when no merge joins a
 * left token ending in c to a right token starting with d: the symbol
 * covering c always ends with c's token and the one covering d starts with
 * d's (merged tokens are concatenations), so no merge ever crosses there,
 * and each part evolves as it would inside the whole (the lowest-rank
 * merge of the whole is the lowest of its part). No unk is pending at a
 * known character, so unk fusing does not cross either. Same ids, and
 * the merge heap stays small. */
enum { LONG_PIECE = 256 };

static int tokenize_long(const ag_tkm_bpe *b, const ag_tkm_vocab *v, const char *path,
                         const char *s, size_t n, ag_tk_ids *out, ag_error *err)
{
    size_t start = 0;
    uint32_t prev = 0;
    int prev_known = 0;
    for (size_t i = 0; i < n;) {
        size_t clen = ag_tkm_utf8_len((unsigned char)s[i]);
        if (clen > n - i)
            clen = n - i;
        uint32_t c = decode((const unsigned char *)s + i, clen);
        int32_t id;
        int known = c < CHAR_TABLE ? b->char_id[c] >= 0 : ag_tkm_vocab_get(v, s + i, clen, &id);
        if (i > start && prev_known && known && !is_junction(b, prev, c)) {
            int rc = bpe_word(b, v, path, s + start, i - start, start, out, err);
            if (rc != AG_OK)
                return rc;
            start = i;
        }
        prev = c;
        prev_known = known;
        i += clen;
    }
    return bpe_word(b, v, path, s + start, n - start, start, out, err);
}

int ag_tkm_bpe_tokenize(const ag_tkm_bpe *b, const ag_tkm_vocab *v, const char *path,
                        const char *s, size_t n, ag_tk_ids *out, ag_error *err)
{
    if (n == 0)
        return AG_OK;
    int32_t id;
    if (b->ignore_merges && ag_tkm_vocab_get(v, s, n, &id))
        return ag_tk_ids_push_span(out, id, 0, n) == AG_OK
                   ? AG_OK
                   : ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    if (n > LONG_PIECE && b->split_long)
        return tokenize_long(b, v, path, s, n, out, err);
    return bpe_word(b, v, path, s, n, 0, out, err);
}
