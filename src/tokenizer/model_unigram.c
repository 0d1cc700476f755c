/* tokenizer/model_unigram.c — the Unigram model as Hugging Face's Rust
 * tokenizers implements it (models/unigram/model.rs: Unigram::from,
 * encode_optimized, tokenize), after SentencePiece's unigram_model.cc.
 *
 * Viterbi over the byte positions of the piece: every vocabulary piece that
 * starts at a character boundary (found by walking a byte trie of the
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

struct ag_tkm_unigram {
    double *score;       /* of each id */
    size_t n;            /* pieces */
    double min_score;
    int32_t unk_id;      /* -1: none */
    int byte_fallback;
    int32_t byte_id[256];
    /* byte trie of the pieces: node 0 is the root */
    int32_t *piece;      /* id of the piece ending at each node, -1 */
    size_t nodes, nodes_cap;
    int32_t root[256];   /* children of the root, -1 */
    agi_u64map edges;    /* node << 8 | byte -> child, below the root */
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

static int new_node(ag_tkm_unigram *u, int32_t *node)
{
    if (u->nodes == u->nodes_cap) {
        int32_t *np = ag_tk_grow(u->piece, &u->nodes_cap, sizeof *np);
        if (!np)
            return AG_ENOMEM;
        u->piece = np;
    }
    if (u->nodes >= (size_t)INT32_MAX)
        return AG_ELIMIT;
    *node = (int32_t)u->nodes++;
    u->piece[*node] = -1;
    return AG_OK;
}

/* A later piece with the same string takes the node: Rust's token_to_ids
 * keeps the last id of a string, and the Viterbi uses it. */
static int trie_insert(ag_tkm_unigram *u, const char *s, size_t n, int32_t id)
{
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int32_t next = child(u, node, c);
        if (next < 0) {
            int rc = new_node(u, &next);
            if (rc != AG_OK)
                return rc;
            if (node == 0)
                u->root[c] = next;
            else if (agi_u64map_add(&u->edges, (uint64_t)node << 8 | c, (uint64_t)next, NULL) != AG_OK)
                return AG_ENOMEM;
        }
        node = next;
    }
    if (node != 0) /* the empty piece is never matched (Rust's trie yields no empty prefix) */
        u->piece[node] = id;
    return AG_OK;
}

static int load_piece(ag_tkm_unigram *u, ag_tkm_vocab *v, const char *path, size_t i, json_t *e,
                      ag_error *err)
{
    json_t *p = json_array_get(e, 0), *sc = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(p) || !json_is_number(sc))
        return ag_error_set(err, AG_EFORMAT, "%s: model.vocab[%zu] is not [piece, score]", path, i);
    const char *s = json_string_value(p);
    size_t n = json_string_length(p);
    int rc = ag_tkm_vocab_add(v, path, "model.vocab", s, n, (long long)i, 1, err);
    if (rc != AG_OK)
        return rc;
    u->score[i] = json_number_value(sc);
    if (u->score[i] < u->min_score)
        u->min_score = u->score[i];
    rc = trie_insert(u, s, n, (int32_t)i);
    return rc == AG_OK ? AG_OK : ag_error_set(err, rc, "%s: model.vocab: out of memory", path);
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
    int32_t root;
    if (!u->score || new_node(u, &root) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    u->min_score = 1.0 / 0.0;
    int rc = AG_OK;
    for (size_t i = 0; i < u->n && rc == AG_OK; i++)
        rc = load_piece(u, v, path, i, json_array_get(vocab, i), err);
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
    free(u->piece);
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
        for (size_t e = pos; e < n && (node = child(u, node, (unsigned char)s[e])) >= 0; e++) {
            int32_t id = u->piece[node];
            if (id < 0)
                continue;
            offer(&bp[e + 1], u->score[id] + till, id, pos);
            single |= e + 1 - pos == mblen;
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

/* The ids of a run of fused unknown nodes s[a, b) (Unigram::tokenize). */
static int unknown_run(const ag_tkm_unigram *u, const ag_tkm_vocab *v, const char *s, size_t a,
                       size_t b, ag_tk_ids *out)
{
    int32_t id;
    if (ag_tkm_vocab_get(v, s + a, b - a, &id))
        return ag_tk_ids_push(out, id);
    if (u->byte_fallback) {
        size_t k = a;
        while (k < b && u->byte_id[(unsigned char)s[k]] >= 0)
            k++;
        if (k == b) {
            int rc = AG_OK;
            for (k = a; k < b && rc == AG_OK; k++)
                rc = ag_tk_ids_push(out, u->byte_id[(unsigned char)s[k]]);
            return rc;
        }
    }
    return ag_tk_ids_push(out, u->unk_id);
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
            rc = ag_tk_ids_push(out, b->id);
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
