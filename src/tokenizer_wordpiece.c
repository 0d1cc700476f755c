/* tokenizer_wordpiece.c — BERT: BertNormalizer, BertPreTokenizer and greedy
 * longest-match-first WordPiece, following HF tokenizers (Rust). */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_int.h"

/* Rust tokenizers' is_control: any C* category (Cc, Cf, Cs, Co, Cn) except
 * \t \n \r. */
static int is_control(int32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
        return 1;
    default:
        return 0;
    }
}

static int is_chinese(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

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

int ag_tk_bert_normalize(const ag_tokenizer *t, const char *s, size_t n, ag_tk_buf *out)
{
    int rc = AG_OK;
    ag_tk_buf a = {0};
    out->n = 0;
    /* clean_text and handle_chinese_chars, one pass. */
    for (size_t i = 0; i < n && rc == AG_OK;) {
        int32_t c = next_cp(s, n, &i);
        if (t->clean_text) {
            if (c == 0 || c == 0xFFFD || is_control(c))
                continue;
            if (ag_tk_is_whitespace(c))
                c = ' ';
        }
        if (t->chinese && is_chinese(c)) {
            rc = ag_tk_buf_putc(&a, ' ');
            if (rc == AG_OK)
                rc = ag_tk_buf_putc(&a, c);
            if (rc == AG_OK)
                rc = ag_tk_buf_putc(&a, ' ');
        } else {
            rc = ag_tk_buf_putc(&a, c);
        }
    }
    int strip = t->strip_accents < 0 ? t->lowercase : t->strip_accents;
    if (rc == AG_OK && strip && a.n > 0) {
        /* NFD, then drop nonspacing marks (Mn). */
        utf8proc_uint8_t *d = NULL;
        utf8proc_ssize_t dn = utf8proc_map((const utf8proc_uint8_t *)a.b, (utf8proc_ssize_t)a.n,
                                           &d, UTF8PROC_DECOMPOSE);
        if (dn < 0) {
            rc = dn == UTF8PROC_ERROR_NOMEM ? AG_ENOMEM : AG_EINVAL;
        } else {
            size_t w = 0;
            for (size_t i = 0; i < (size_t)dn;) {
                size_t st = i;
                int32_t c = next_cp((const char *)d, (size_t)dn, &i);
                if (utf8proc_category(c) == UTF8PROC_CATEGORY_MN)
                    continue;
                memmove(d + w, d + st, i - st);
                w += i - st;
            }
            a.n = 0;
            rc = ag_tk_buf_put(&a, (const char *)d, w);
        }
        free(d);
    }
    if (rc == AG_OK && t->lowercase) {
        /* Rust's char::to_lowercase: the simple mapping except U+0130. */
        for (size_t i = 0; i < a.n && rc == AG_OK;) {
            int32_t c = next_cp(a.b, a.n, &i);
            if (c == 0x130) {
                rc = ag_tk_buf_putc(out, 'i');
                if (rc == AG_OK)
                    rc = ag_tk_buf_putc(out, 0x307);
            } else {
                rc = ag_tk_buf_putc(out, utf8proc_tolower(c));
            }
        }
    } else if (rc == AG_OK) {
        rc = ag_tk_buf_put(out, a.b ? a.b : "", a.n);
    }
    free(a.b);
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
