/* tokenizer/model_unigram.c — the Unigram model as Hugging Face's Rust
 * tokenizers implements it (models/unigram/model.rs: Unigram::from,
 * encode_optimized, tokenize), after SentencePiece's unigram_model.cc.
 *
 * Viterbi over the byte positions of the piece: every vocabulary piece that
 * starts at a character boundary (found by walking a radix trie of the
 * pieces) is a candidate, scored by its log-probability; a character with no
 * single-character piece gets an unk candidate scored min_score - 10. The
 * best path ending at each position keeps its first candidate among equal
 * scores (earliest start). Consecutive unk nodes fuse into one string, which
 * is looked up again, else becomes its "<0xNN>" byte pieces (byte_fallback)
 * or unk_id. Every piece competes, whatever its kind in SentencePiece
 * (control <s>, user-defined, byte pieces): tokenizer.json does not keep
 * the kinds, and Rust does not either. */
#include <stdlib.h>
#include <string.h>

#include "attngeom/tokenizer.h"
#include "models_int.h"

#define UNK_PENALTY 10.0 /* SentencePiece's kUnkPenalty */

/* A node of the radix trie of the pieces: the bytes from the root to it
 * are src[0, depth); the edge from its parent is src[parent depth, depth). */
typedef struct {
    const char *src;  /* a piece through this node (the vocabulary's copy) */
    uint32_t depth;
    int32_t parent;
    int32_t piece;    /* id of the piece ending here, -1 */
} tnode;

struct ag_tkm_unigram {
    double *score;       /* of each id */
    size_t n;            /* pieces */
    double min_score;
    int32_t unk_id;      /* -1: none */
    int byte_fallback;
    int32_t byte_id[256];
    /* radix trie: node 0 is the root; at most two nodes per piece, so its
     * size follows the number of pieces, not their bytes */
    tnode *node;
    size_t nodes;
    int32_t root[256];   /* children of the root by first byte, -1 */
    agi_u64map edges;    /* node << 8 | first byte of the edge -> child, below the root */
};

/* ======================================================================
 * loading
 * ====================================================================== */

static int32_t child(const ag_tkm_unigram *u, int32_t node, unsigned char c)
{
    if (node == 0)
        return u->root[c];
    uint64_t v;
    return agi_u64map_get(&u->edges, (uint64_t)node << 8 | c, &v) ? (int32_t)v : -1;
}

typedef struct {
    const char *s;
    uint32_t len;
    int32_t id;
} piece_ref;

static int cmp_piece(const void *pa, const void *pb)
{
    const piece_ref *a = pa, *b = pb;
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int32_t add_node(ag_tkm_unigram *u, const char *src, size_t depth, int32_t parent, int32_t piece)
{
    int32_t k = (int32_t)u->nodes++;
    u->node[k] = (tnode){src, (uint32_t)depth, parent, piece};
    return k;
}

/* The radix trie of m distinct pieces sorted by bytes, built along the
 * rightmost path: a piece shares lcp bytes with the one before; the path
 * is cut back to that depth, an edge split there when no node sits at it.
 * Edges are indexed once every node has its final parent. */
static int build_trie(ag_tkm_unigram *u, const piece_ref *p, size_t m)
{
    int32_t *stack = malloc((m + 1) * sizeof *stack);
    u->node = malloc((2 * m + 1) * sizeof *u->node);
    if (!stack || !u->node) {
        free(stack);
        return AG_ENOMEM;
    }
    size_t top = 0;
    stack[0] = add_node(u, NULL, 0, -1, -1);
    for (size_t j = 0; j < m; j++) {
        size_t l = 0;
        if (j > 0)
            while (l < p[j - 1].len && l < p[j].len && p[j - 1].s[l] == p[j].s[l])
                l++;
        int32_t last = -1;
        while (u->node[stack[top]].depth > l)
            last = stack[top--];
        if (u->node[stack[top]].depth < l) { /* split the edge to `last` at depth l */
            int32_t mid = add_node(u, p[j].s, l, stack[top], -1);
            u->node[last].parent = mid;
            stack[++top] = mid;
        }
        /* sorted distinct pieces: p[j] is longer than the path (l < len) */
        int32_t leaf = add_node(u, p[j].s, p[j].len, stack[top], p[j].id);
        stack[++top] = leaf;
    }
    free(stack);
    for (size_t k = 1; k < u->nodes; k++) {
        const tnode *t = &u->node[k];
        unsigned char c = (unsigned char)t->src[u->node[t->parent].depth];
        if (t->parent == 0)
            u->root[c] = (int32_t)k;
        else if (agi_u64map_add(&u->edges, (uint64_t)t->parent << 8 | c, k, NULL) != AG_OK)
            return AG_ENOMEM;
    }
    return AG_OK;
}

/* Every distinct non-empty piece with the id the vocabulary keeps for it
 * (a piece listed twice: the later, as Rust's token_to_ids and so its
 * Viterbi), sorted, then the trie. The empty piece is never matched: Rust's
 * trie yields no empty prefix. */
static int index_pieces(ag_tkm_unigram *u, const ag_tkm_vocab *v, const uint32_t *len)
{
    piece_ref *p = malloc((u->n ? u->n : 1) * sizeof *p);
    if (!p)
        return AG_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < u->n; i++) {
        int32_t id;
        if (len[i] > 0 && ag_tkm_vocab_get(v, v->tok[i], len[i], &id) && (size_t)id == i)
            p[m++] = (piece_ref){v->tok[i], len[i], (int32_t)i};
    }
    qsort(p, m, sizeof *p, cmp_piece);
    int rc = build_trie(u, p, m);
    free(p);
    return rc;
}

static int load_piece(ag_tkm_unigram *u, ag_tkm_vocab *v, const char *path, size_t i, json_t *e,
                      uint32_t *len, ag_error *err)
{
    json_t *p = json_array_get(e, 0), *sc = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(p) || !json_is_number(sc))
        return ag_error_set(err, AG_EFORMAT, "%s: model.vocab[%zu] is not [piece, score]", path, i);
    size_t n = json_string_length(p);
    int rc = ag_tkm_vocab_add(v, path, "model.vocab", json_string_value(p), n, (long long)i, 1, err);
    if (rc != AG_OK)
        return rc;
    len[i] = (uint32_t)n; /* vocab_add refused 4 GiB and more */
    u->score[i] = json_number_value(sc);
    if (u->score[i] < u->min_score)
        u->min_score = u->score[i];
    return AG_OK;
}

static int load_unk_id(ag_tkm_unigram *u, const char *path, json_t *j, ag_error *err)
{
    json_t *x = json_object_get(j, "unk_id");
    u->unk_id = -1;
    if (!x || json_is_null(x))
        return AG_OK;
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return ag_error_set(err, AG_EFORMAT, "%s: model.unk_id is not a non-negative integer", path);
    if ((size_t)json_integer_value(x) >= u->n)
        return ag_error_set(err, AG_EFORMAT, "%s: model.unk_id %lld is not below the %zu pieces",
                            path, (long long)json_integer_value(x), u->n);
    u->unk_id = (int32_t)json_integer_value(x);
    return AG_OK;
}

static int load_vocab(ag_tkm_unigram *u, ag_tkm_vocab *v, const char *path, json_t *vocab,
                      ag_error *err)
{
    if (!json_is_array(vocab))
        return ag_error_set(err, AG_EFORMAT, "%s: model.vocab is missing or not an array", path);
    u->n = json_array_size(vocab);
    if (u->n > AG_TOKENIZER_ID_MAX)
        return ag_error_set(err, AG_ELIMIT, "%s: model.vocab: %zu pieces, more than %d", path, u->n,
                            AG_TOKENIZER_ID_MAX);
    u->score = malloc((u->n ? u->n : 1) * sizeof *u->score);
    uint32_t *len = malloc((u->n ? u->n : 1) * sizeof *len);
    if (!u->score || !len) {
        free(len);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    u->min_score = 1.0 / 0.0;
    int rc = AG_OK;
    for (size_t i = 0; i < u->n && rc == AG_OK; i++)
        rc = load_piece(u, v, path, i, json_array_get(vocab, i), len, err);
    if (rc == AG_OK && index_pieces(u, v, len) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    free(len);
    return rc;
}

int ag_tkm_unigram_load(const char *path, json_t *j, ag_tkm_vocab *v, ag_tkm_unigram **out,
                        ag_error *err)
{
    ag_tkm_unigram *u = calloc(1, sizeof *u);
    if (!u)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    for (int c = 0; c < 256; c++)
        u->root[c] = -1;
    int rc = load_vocab(u, v, path, json_object_get(j, "vocab"), err);
    if (rc == AG_OK)
        rc = load_unk_id(u, path, j, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_bool(path, j, "byte_fallback", &u->byte_fallback, err);
    if (rc != AG_OK) {
        ag_tkm_unigram_free(u);
        return rc;
    }
    ag_tkm_byte_ids(v, u->byte_id);
    *out = u;
    return AG_OK;
}

void ag_tkm_unigram_free(ag_tkm_unigram *u)
{
    if (!u)
        return;
    free(u->score);
    free(u->node);
    agi_u64map_free(&u->edges);
    free(u);
}

/* ======================================================================
 * tokenizing
 * ====================================================================== */

/* The best path ending at a byte position: its last piece. */
typedef struct {
    double score;
    int32_t id;
    int32_t start; /* -1: no path ends here yet */
} best;

static void offer(best *b, double score, int32_t id, size_t start)
{
    if (b->start < 0 || score > b->score) {
        b->score = score;
        b->id = id;
        b->start = (int32_t)start;
    }
}

static int viterbi(const ag_tkm_unigram *u, const char *s, size_t n, best *bp, const char *path,
                   ag_error *err)
{
    double unk_score = u->min_score - UNK_PENALTY;
    bp[0] = (best){0.0, 0, -1};
    for (size_t i = 1; i <= n; i++)
        bp[i] = (best){0.0, 0, -1};
    for (size_t pos = 0; pos < n;) {
        double till = bp[pos].score; /* 0 where no path ends, as Rust's default node */
        size_t mblen = ag_tkm_utf8_len((unsigned char)s[pos]);
        if (mblen > n - pos)
            mblen = n - pos;
        int single = 0;
        int32_t node = 0;
        size_t d = 0; /* bytes matched from pos */
        while (pos + d < n) {
            int32_t c = child(u, node, (unsigned char)s[pos + d]);
            if (c < 0)
                break;
            const tnode *t = &u->node[c];
            if (t->depth > n - pos || memcmp(t->src + d + 1, s + pos + d + 1, t->depth - d - 1))
                break;
            node = c;
            d = t->depth;
            if (t->piece >= 0) {
                offer(&bp[pos + d], u->score[t->piece] + till, t->piece, pos);
                single |= d == mblen;
            }
        }
        if (!single) {
            best *t = &bp[pos + mblen];
            if (t->start < 0 || unk_score + till > t->score) {
                if (u->unk_id < 0)
                    return ag_error_set(err, AG_EFORMAT,
                                        "%s: Unigram: '%.*s' is not in the vocabulary and model.unk_id "
                                        "is not set",
                                        path, (int)mblen, s + pos);
                offer(t, unk_score + till, u->unk_id, pos);
            }
        }
        pos += mblen;
    }
    return AG_OK;
}

int32_t ag_tkm_unigram_unk_id(const ag_tkm_unigram *u)
{
    return u->unk_id;
}

/* The ids of a run of fused unknown nodes s[a, b) (Unigram::tokenize); its
 * byte tokens all span the run, as Rust gives them. */
static int unknown_run(const ag_tkm_unigram *u, const ag_tkm_vocab *v, const char *s, size_t a,
                       size_t b, ag_tk_ids *out)
{
    int32_t id;
    if (ag_tkm_vocab_get(v, s + a, b - a, &id))
        return ag_tk_ids_push_span(out, id, a, b);
    if (u->byte_fallback) {
        size_t k = a;
        while (k < b && u->byte_id[(unsigned char)s[k]] >= 0)
            k++;
        if (k == b) {
            int rc = AG_OK;
            for (k = a; k < b && rc == AG_OK; k++)
                rc = ag_tk_ids_push_span(out, u->byte_id[(unsigned char)s[k]], a, b);
            return rc;
        }
    }
    return ag_tk_ids_push_span(out, u->unk_id, a, b);
}

/* Walk the best path back, then emit it forwards, fusing unk nodes. */
static int emit(const ag_tkm_unigram *u, const ag_tkm_vocab *v, const char *s, size_t n,
                const best *bp, int32_t *ends, ag_tk_ids *out)
{
    size_t k = 0;
    for (size_t e = n; e > 0; e = (size_t)bp[e].start)
        ends[k++] = (int32_t)e;
    int rc = AG_OK;
    size_t run = SIZE_MAX; /* start of the pending unk run */
    while (k > 0 && rc == AG_OK) {
        const best *b = &bp[ends[--k]];
        if (u->unk_id >= 0 && b->id == u->unk_id) {
            if (run == SIZE_MAX)
                run = (size_t)b->start;
            continue;
        }
        if (run != SIZE_MAX)
            rc = unknown_run(u, v, s, run, (size_t)b->start, out);
        run = SIZE_MAX;
        if (rc == AG_OK)
            rc = ag_tk_ids_push_span(out, b->id, (size_t)b->start, (size_t)(b - bp));
    }
    if (rc == AG_OK && run != SIZE_MAX)
        rc = unknown_run(u, v, s, run, n, out);
    return rc;
}

enum { STACK_BYTES = 128 };

int ag_tkm_unigram_tokenize(const ag_tkm_unigram *u, const ag_tkm_vocab *v, const char *path,
                            const char *s, size_t n, ag_tk_ids *out, ag_error *err)
{
    if (n == 0)
        return AG_OK;
    if (n >= (size_t)INT32_MAX / 2)
        return ag_error_set(err, AG_ELIMIT, "%s: Unigram: a piece of %zu bytes is too long", path, n);
    best bstack[STACK_BYTES + 1], *bp = bstack;
    int32_t estack[STACK_BYTES], *ends = estack;
    void *mem = NULL;
    if (n > STACK_BYTES) {
        mem = malloc((n + 1) * sizeof *bp + n * sizeof *ends);
        if (!mem)
            return ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
        bp = mem;
        ends = (int32_t *)(bp + n + 1);
    }
    int rc = viterbi(u, s, n, bp, path, err);
    if (rc == AG_OK && emit(u, v, s, n, bp, ends, out) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    free(mem);
    return rc;
}
