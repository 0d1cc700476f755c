/* tokenizer_wordpiece.c — BERT: BertPreTokenizer and greedy
 * longest-match-first WordPiece, following HF tokenizers (Rust). */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_int.h"

/* ASCII punctuation/symbols (33-47, 58-64, 91-96, 123-126) or Unicode P*. */
static int is_punct(int32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
        return 1;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return 1;
    default:
        return 0;
    }
}

static int32_t next_cp(const char *s, size_t n, size_t *i)
{
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + *i,
                                          (utf8proc_ssize_t)(n - *i), &cp);
    if (k <= 0) { /* input is validated before; be safe anyway */
        (*i)++;
        return 0xFFFD;
    }
    *i += (size_t)k;
    return cp;
}

/* BertNormalizer of s: the normalizer component of tokenizer/normalizers.c
 * with this tokenizer's options (kept until tokenizer.c uses the component
 * directly). */
int ag_tk_bert_normalize(const ag_tokenizer *t, const char *s, size_t n, ag_tk_buf *out)
{
    json_t *j = json_pack("{s:s, s:b, s:b, s:o, s:b}", "type", "BertNormalizer", "clean_text", t->clean_text,
                          "handle_chinese_chars", t->chinese, "strip_accents",
                          t->strip_accents < 0 ? json_null() : json_boolean(t->strip_accents), "lowercase",
                          t->lowercase);
    ag_tk_normalizer *nm = NULL;
    int rc = j ? ag_tk_normalizer_load("BertNormalizer", j, &nm, NULL) : AG_ENOMEM;
    json_decref(j);
    if (rc == AG_OK)
        rc = ag_tk_normalize(nm, s, n, out, NULL);
    ag_tk_normalizer_free(nm);
    return rc;
}

/* The longest candidate from `start` that could be in the vocabulary: no
 * token is longer than vocab_maxlen bytes (prefix included), so longer
 * candidates are skipped (HF tries them all: O(chars^3) per word when
 * max_input_chars_per_word is large). Ends on a character boundary. */
static size_t first_end(const ag_tokenizer *t, const char *w, size_t n, size_t start, size_t plen)
{
    size_t pre = start > 0 ? plen : 0;
    if (t->vocab_maxlen <= pre)
        return start;
    size_t room = t->vocab_maxlen - pre;
    if (room >= n - start)
        return n;
    size_t end = start + room;
    while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80)
        end--;
    return end;
}

/* Greedy longest-match-first WordPiece of one word. */
static int wordpiece_word(const ag_tokenizer *t, const char *w, size_t n, ag_tk_ids *out)
{
    size_t nchars = 0;
    for (size_t i = 0; i < n;) {
        next_cp(w, n, &i);
        nchars++;
    }
    if (nchars > t->max_chars)
        return t->unk_id >= 0 ? ag_tk_ids_push(out, t->unk_id) : AG_OK;
    size_t plen = strlen(t->wp_prefix);
    char *cand = malloc(plen + n + 1);
    if (!cand)
        return AG_ENOMEM;
    memcpy(cand, t->wp_prefix, plen);
    size_t first = out->n;
    int rc = AG_OK;
    size_t start = 0;
    while (start < n) {
        size_t end = first_end(t, w, n, start, plen);
        int32_t id = -1;
        while (end > start) {
            memcpy(cand + plen, w + start, end - start);
            const char *k = start > 0 ? cand : cand + plen;
            size_t kl = start > 0 ? plen + end - start : end - start;
            if (agi_strmap_get(&t->vocab, k, kl, &id))
                break;
            id = -1;
            /* step back one UTF-8 character */
            do
                end--;
            while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80);
        }
        if (id < 0) {
            out->n = first; /* the whole word becomes [UNK] */
            rc = t->unk_id >= 0 ? ag_tk_ids_push(out, t->unk_id) : AG_OK;
            break;
        }
        rc = ag_tk_ids_push(out, id);
        if (rc != AG_OK)
            break;
        start = end;
    }
    free(cand);
    return rc;
}

int ag_tk_wordpiece_section(const ag_tokenizer *t, const char *s, size_t n, ag_tk_ids *out)
{
    int rc = AG_OK;
    size_t ws = 0; /* start of the current word */
    size_t i = 0;
    while (i < n && rc == AG_OK) {
        size_t st = i;
        int32_t c = next_cp(s, n, &i);
        int split = t->pre == AG_TK_PRE_BERT && (ag_tk_is_whitespace(c) || is_punct(c));
        if (!split)
            continue;
        if (st > ws)
            rc = wordpiece_word(t, s + ws, st - ws, out);
        if (rc == AG_OK && !ag_tk_is_whitespace(c))
            rc = wordpiece_word(t, s + st, i - st, out);
        ws = i;
    }
    if (rc == AG_OK && n > ws)
        rc = wordpiece_word(t, s + ws, n - ws, out);
    return rc;
}
