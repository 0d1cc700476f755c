/* tokenizer/model_wordpiece.c — the WordPiece model as Hugging Face's Rust
 * tokenizers implements it (models/wordpiece/mod.rs, WordPiece::tokenize):
 * greedy longest-match-first, continuation pieces carrying
 * continuing_subword_prefix ("##"); a piece of more than
 * max_input_chars_per_word characters, or one with a part no token covers,
 * becomes the single unk token. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

struct ag_tkm_wordpiece {
    char *unk;
    int32_t unk_id;   /* -1: unk_token is not in the vocabulary */
    char *prefix;
    size_t plen;
    size_t max_chars; /* max_input_chars_per_word */
};

int ag_tkm_wordpiece_load(const char *path, json_t *j, const ag_tkm_vocab *v,
                          ag_tkm_wordpiece **out, ag_error *err)
{
    ag_tkm_wordpiece *w = calloc(1, sizeof *w);
    if (!w)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    /* Rust's defaults when a key is absent */
    w->max_chars = 100;
    int rc = ag_tkm_opt_string(path, j, "unk_token", "[UNK]", &w->unk, err);
    if (rc == AG_OK)
        rc = ag_tkm_opt_string(path, j, "continuing_subword_prefix", "##", &w->prefix, err);
    json_t *mx = json_object_get(j, "max_input_chars_per_word");
    if (rc == AG_OK && mx && !json_is_null(mx)) {
        if (!json_is_integer(mx) || json_integer_value(mx) < 0)
            rc = ag_error_set(err, AG_EFORMAT,
                              "%s: model.max_input_chars_per_word is not a non-negative integer", path);
        else
            w->max_chars = (size_t)json_integer_value(mx);
    }
    if (rc != AG_OK) {
        ag_tkm_wordpiece_free(w);
        return rc;
    }
    w->plen = strlen(w->prefix);
    /* Rust looks the unk token up only when a piece needs it. */
    if (!ag_tkm_vocab_get(v, w->unk, strlen(w->unk), &w->unk_id))
        w->unk_id = -1;
    *out = w;
    return AG_OK;
}

void ag_tkm_wordpiece_free(ag_tkm_wordpiece *w)
{
    if (!w)
        return;
    free(w->unk);
    free(w->prefix);
    free(w);
}

/* unk for the whole word of n bytes. */
static int push_unk(const ag_tkm_wordpiece *w, const char *path, size_t n, ag_tk_ids *out, ag_error *err)
{
    if (w->unk_id < 0)
        return ag_error_set(err, AG_EFORMAT, "%s: model.unk_token '%.40s' is not in the vocabulary",
                            path, w->unk);
    return ag_tk_ids_push_span(out, w->unk_id, 0, n) == AG_OK
               ? AG_OK
               : ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
}

/* The longest candidate from `start` that could be a token: none is longer
 * than v->maxlen bytes (prefix included), so longer ones are skipped — Rust
 * tries them all, which costs O(chars^2) lookups per word. The result ends
 * on a character boundary. */
static size_t first_end(const ag_tkm_vocab *v, const char *s, size_t n, size_t start, size_t pre)
{
    if (v->maxlen <= pre)
        return start;
    size_t room = v->maxlen - pre;
    if (room >= n - start)
        return n;
    size_t end = start + room;
    while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80)
        end--;
    return end;
}

/* The id of the longest token covering s[start, ...), with the prefix
 * unless at the start; *end receives where it stops. -1 when none. cand
 * holds the prefix, then room for the piece. */
static int32_t longest_match(const ag_tkm_wordpiece *w, const ag_tkm_vocab *v, char *cand,
                             const char *s, size_t n, size_t start, size_t *end)
{
    size_t pre = start > 0 ? w->plen : 0;
    for (size_t e = first_end(v, s, n, start, pre); e > start;) {
        int32_t id;
        memcpy(cand + w->plen, s + start, e - start);
        if (ag_tkm_vocab_get(v, cand + w->plen - pre, pre + e - start, &id)) {
            *end = e;
            return id;
        }
        do /* one character back */
            e--;
        while (e > start && ((unsigned char)s[e] & 0xC0) == 0x80);
    }
    return -1;
}

int ag_tkm_wordpiece_tokenize(const ag_tkm_wordpiece *w, const ag_tkm_vocab *v, const char *path,
                              const char *s, size_t n, ag_tk_ids *out, ag_error *err)
{
    size_t nchars = 0;
    for (size_t i = 0; i < n; i++)
        nchars += ((unsigned char)s[i] & 0xC0) != 0x80;
    if (nchars > w->max_chars)
        return push_unk(w, path, n, out, err);
    char stack[256], *cand = stack;
    if (w->plen + n > sizeof stack && !(cand = malloc(w->plen + n)))
        return ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    memcpy(cand, w->prefix, w->plen);
    size_t first = out->n;
    int rc = AG_OK;
    for (size_t start = 0, end = 0; start < n && rc == AG_OK; start = end) {
        int32_t id = longest_match(w, v, cand, s, n, start, &end);
        if (id < 0) {
            out->n = first; /* the whole piece becomes unk */
            rc = push_unk(w, path, n, out, err);
            break;
        }
        if (ag_tk_ids_push_span(out, id, start, end) != AG_OK)
            rc = ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    }
    if (cand != stack)
        free(cand);
    return rc;
}
