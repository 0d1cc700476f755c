/* tokenizer/normalizers.c — the normalizers of tokenizer.json, as Hugging
 * Face's tokenizers (Rust, tokenizers/src/normalizers/) applies them:
 * Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
 * Prepend, BertNormalizer, Precompiled (precompiled.c), Nmt and ByteLevel.
 *
 * Every normalizer maps a whole string to a string; the alignments Rust keeps
 * beside it do not change any id (tk.h). Offsets need them:
 * ag_tk_normalize_aligned computes them for the normalizers whose alignment
 * is that of each character on its own (the end of this file). */
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "precompiled.h"
#include "tk.h"

typedef enum {
    NM_SEQUENCE,
    NM_NFC,
    NM_NFD,
    NM_NFKC,
    NM_NFKD,
    NM_LOWERCASE,
    NM_STRIP,
    NM_STRIP_ACCENTS,
    NM_REPLACE,
    NM_PREPEND,
    NM_BERT,
    NM_PRECOMPILED,
    NM_NMT,
    NM_BYTE_LEVEL,
} nm_type;

struct ag_tk_normalizer {
    nm_type type;
    ag_tk_normalizer **subs; /* Sequence */
    size_t n_subs;
    int strip_left, strip_right;                        /* Strip */
    int clean_text, chinese, strip_accents, lowercase;  /* BertNormalizer */
    char *text;           /* Replace: the String pattern; Prepend: the prefix */
    size_t text_len;
    char *content;        /* Replace */
    size_t content_len;
    pcre2_code *re;       /* Replace with a Regex pattern */
    ag_tk_charsmap *charsmap; /* Precompiled */
};

/* ---- characters ---------------------------------------------------------- */

/* The code point at s[*i] (valid UTF-8: ag_tk_normalize checked it). */
static int32_t next_cp(const char *s, size_t n, size_t *i)
{
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + *i,
                                          (utf8proc_ssize_t)(n - *i), &cp);
    *i += k > 0 ? (size_t)k : 1;
    return k > 0 ? cp : 0xFFFD;
}

static int valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Rust's char::to_lowercase: the simple mapping, except U+0130 whose full
 * lowercase is two characters (no final-sigma or locale rule). */
static int put_lower(ag_tk_buf *out, int32_t c)
{
    if (c == 0x130) {
        int rc = ag_tk_buf_putc(out, 'i');
        return rc == AG_OK ? ag_tk_buf_putc(out, 0x307) : rc;
    }
    return ag_tk_buf_putc(out, utf8proc_tolower(c));
}

static int lowercase(const char *s, size_t n, ag_tk_buf *out)
{
    int rc = AG_OK;
    for (size_t i = 0; i < n && rc == AG_OK;) {
        size_t j = i;
        while (j < n && (unsigned char)s[j] < 0x80)
            j++;
        /* An ASCII run: copied, then lowered in place. */
        rc = ag_tk_buf_put(out, s + i, j - i);
        for (char *p = out->b + out->n - (j - i); rc == AG_OK && p < out->b + out->n; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p + 32);
        i = j;
        if (i < n && rc == AG_OK)
            rc = put_lower(out, next_cp(s, n, &i));
    }
    return rc;
}

/* Drop the characters whose general category is in the mask (utf8proc's
 * categories as bits). */
#define CAT(c) (1u << (c))
static int drop_categories(const char *s, size_t n, unsigned mask, ag_tk_buf *out)
{
    int rc = AG_OK;
    size_t run = 0; /* start of the bytes kept but not yet copied */
    for (size_t i = 0; i < n && rc == AG_OK;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t st = i;
        int32_t c = next_cp(s, n, &i);
        if (mask & CAT(utf8proc_category(c))) {
            rc = ag_tk_buf_put(out, s + run, st - run);
            run = i;
        }
    }
    return rc == AG_OK ? ag_tk_buf_put(out, s + run, n - run) : rc;
}

/* NFC / NFD / NFKC / NFKD (utf8proc options). ASCII never changes and never
 * combines with what precedes it, so only the spans holding non-ASCII bytes
 * go through utf8proc, each with the ASCII character before it (a base a
 * combining mark may compose with). */
static int unicode_form(int opts, const char *s, size_t n, ag_tk_buf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    utf8proc_int32_t *tmp = NULL;
    size_t cap = 0;
    int rc = AG_OK;
    size_t i = 0;
    while (i < n && rc == AG_OK) {
        size_t j = i;
        while (j < n && u[j] < 0x80)
            j++;
        size_t start = j > i ? j - 1 : j;
        rc = ag_tk_buf_put(out, s + i, start - i);
        if (j == n || rc != AG_OK) {
            if (rc == AG_OK)
                rc = ag_tk_buf_put(out, s + start, n - start);
            break;
        }
        size_t k = j;
        while (k < n && u[k] >= 0x80)
            k++;
        for (;;) {
            utf8proc_ssize_t m = utf8proc_decompose(u + start, (utf8proc_ssize_t)(k - start), tmp,
                                                    (utf8proc_ssize_t)cap, opts);
            if (m < 0) {
                rc = m == UTF8PROC_ERROR_NOMEM ? AG_ENOMEM : AG_EINVAL;
                break;
            }
            if ((size_t)m <= cap) {
                m = utf8proc_reencode(tmp, m, opts); /* UTF-8, in place */
                rc = m < 0 ? AG_EINVAL : ag_tk_buf_put(out, (const char *)tmp, (size_t)m);
                break;
            }
            /* + 1: utf8proc_reencode NUL-terminates, 4 bytes a code point
             * fill the buffer exactly */
            utf8proc_int32_t *nt = realloc(tmp, (size_t)m * sizeof *nt + 1);
            if (!nt) {
                rc = AG_ENOMEM;
                break;
            }
            tmp = nt;
            cap = (size_t)m;
        }
        i = k;
    }
    free(tmp);
    return rc;
}

#define NFC_OPTS (UTF8PROC_STABLE | UTF8PROC_COMPOSE)
#define NFD_OPTS (UTF8PROC_STABLE | UTF8PROC_DECOMPOSE)
#define NFKC_OPTS (UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT)
#define NFKD_OPTS (UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT)

/* ---- Strip, Prepend, Nmt (ByteLevel: ag_tk_bytelevel_map) ---------------- */

/* The kept part [*a, *b) of s. */
static void strip_bounds(const ag_tk_normalizer *nm, const char *s, size_t n, size_t *pa, size_t *pb)
{
    size_t a = 0, b = n;
    while (nm->strip_left && a < b) {
        size_t i = a;
        if (!ag_tk_is_whitespace(next_cp(s, n, &i)))
            break;
        a = i;
    }
    while (nm->strip_right && b > a) {
        size_t st = b - 1;
        while (st > a && ((unsigned char)s[st] & 0xC0) == 0x80)
            st--;
        size_t i = st;
        if (!ag_tk_is_whitespace(next_cp(s, n, &i)))
            break;
        b = st;
    }
    *pa = a;
    *pb = b;
}

static int strip(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out)
{
    size_t a, b;
    strip_bounds(nm, s, n, &a, &b);
    return ag_tk_buf_put(out, s + a, b - a);
}

/* tokenizers' Nmt (normalizers/unicode.rs): drop some controls, turn other
 * separators into a space. */
static int nmt_dropped(int32_t c)
{
    return (c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
           c == 0x8F || c == 0x9F;
}

static int nmt_space(int32_t c)
{
    return c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
           (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
           c == 0xFEFF || c == 0xFFFD;
}

static int nmt(const char *s, size_t n, ag_tk_buf *out)
{
    int rc = AG_OK;
    size_t run = 0; /* start of the bytes kept as they are, not yet copied */
    for (size_t i = 0; i < n && rc == AG_OK;) {
        size_t st = i;
        int32_t c = (unsigned char)s[i] < 0x80 ? (int32_t)s[i++] : next_cp(s, n, &i);
        int drop = nmt_dropped(c), space = !drop && c != ' ' && nmt_space(c);
        if (!drop && !space)
            continue;
        rc = ag_tk_buf_put(out, s + run, st - run);
        if (rc == AG_OK && space)
            rc = ag_tk_buf_put(out, " ", 1);
        run = i;
    }
    return rc == AG_OK ? ag_tk_buf_put(out, s + run, n - run) : rc;
}

/* ---- BertNormalizer ------------------------------------------------------ */

/* tokenizers' is_control: any C* category (Cc, Cf, Cs, Co, Cn) except
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

/* The CJK ideograph blocks of tokenizers' is_chinese_char. */
static int is_chinese(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* An ASCII character clean_text keeps as it is. */
static int bert_plain_ascii(unsigned char c)
{
    return c >= 0x20 && c != 0x7F;
}

/* clean_text and handle_chinese_chars, in one pass; runs of characters kept
 * as they are are copied at once. */
static int bert_clean(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out)
{
    int rc = AG_OK;
    size_t i = 0;
    while (i < n && rc == AG_OK) {
        size_t j = i;
        while (j < n && (unsigned char)s[j] < 0x80 && (!nm->clean_text || bert_plain_ascii((unsigned char)s[j])))
            j++;
        rc = ag_tk_buf_put(out, s + i, j - i);
        i = j;
        if (i == n || rc != AG_OK)
            break;
        int32_t c = next_cp(s, n, &i);
        if (nm->clean_text) {
            if (c == 0 || c == 0xFFFD || is_control(c))
                continue;
            if (ag_tk_is_whitespace(c))
                c = ' ';
        }
        if (nm->chinese && is_chinese(c)) {
            char sp = ' ';
            rc = ag_tk_buf_put(out, &sp, 1);
            if (rc == AG_OK)
                rc = ag_tk_buf_putc(out, c);
            if (rc == AG_OK)
                rc = ag_tk_buf_put(out, &sp, 1);
        } else {
            rc = ag_tk_buf_putc(out, c);
        }
    }
    return rc;
}

/* Order of tokenizers' BertNormalizer: clean text, space the CJK ideographs,
 * strip accents (NFD, then drop Mn), lowercase. */
static int bert(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out)
{
    ag_tk_buf a = {0}, b = {0};
    int rc = bert_clean(nm, s, n, &a);
    if (rc == AG_OK && nm->strip_accents && a.n > 0) {
        rc = unicode_form(NFD_OPTS, a.b, a.n, &b);
        a.n = 0;
        if (rc == AG_OK)
            rc = drop_categories(b.b, b.n, CAT(UTF8PROC_CATEGORY_MN), &a);
    }
    if (rc == AG_OK)
        rc = nm->lowercase ? lowercase(a.b, a.n, out) : ag_tk_buf_put(out, a.b, a.n);
    free(a.b);
    free(b.b);
    return rc;
}

/* ---- Replace ------------------------------------------------------------- */

/* The original spans of a normalized string's bytes, 2 values a byte
 * (offsets: the end of this file). */
typedef struct {
    size_t *v;
    size_t n, cap;
} spans;

static int spans_put(spans *a, const size_t *span, size_t count)
{
    if (AGB_VEC_RESERVE(a->v, a->cap, a->n + 2 * count) != 0)
        return AG_ENOMEM;
    for (size_t k = 0; k < count; k++) {
        a->v[a->n++] = span[0];
        a->v[a->n++] = span[1];
    }
    return AG_OK;
}

/* Appends the spans of `bytes` bytes, al (2 values each). */
static int spans_copy(spans *a, const size_t *al, size_t bytes)
{
    if (bytes == 0)
        return AG_OK;
    if (AGB_VEC_RESERVE(a->v, a->cap, a->n + 2 * bytes) != 0)
        return AG_ENOMEM;
    memcpy(a->v + a->n, al, 2 * bytes * sizeof *al);
    a->n += 2 * bytes;
    return AG_OK;
}

/* Every match [ms, me) of a pattern in s goes to a callback, in order. */
typedef int (*match_fn)(void *ctx, size_t ms, size_t me);

/* The leftmost non-overlapping occurrences of pat; an empty pat matches at
 * every character boundary (Rust's str::replace, Oniguruma's empty regex). */
static int literal_matches(const char *s, size_t n, const char *pat, size_t pn, match_fn f, void *ctx)
{
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && pn == 0; next_cp(s, n, &i)) {
        rc = f(ctx, i, i);
        if (i == n)
            return rc;
    }
    for (size_t i = 0; rc == AG_OK;) {
        const char *m = memmem(s + i, n - i, pat, pn);
        if (!m)
            break;
        size_t at = (size_t)(m - s);
        rc = f(ctx, at, at + pn);
        i = at + pn;
    }
    return rc;
}

/* Every match of the Regex pattern, in the order and with the empty-match
 * rule of the onig crate's find_iter (which tokenizers uses): after an empty
 * match the search moves one character on, and an empty match found by the
 * search that follows a non-empty match is skipped. */
static int regex_matches(const pcre2_code *re, const char *s, size_t n, match_fn f, void *ctx, ag_error *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return AG_ENOMEM;
    int rc = AG_OK, skip_next_empty = 0;
    size_t last_end = 0;
    while (rc == AG_OK && last_end <= n) {
        int r = pcre2_match(re, (PCRE2_SPTR)s, n, last_end, PCRE2_NO_UTF_CHECK, md, NULL);
        if (r == PCRE2_ERROR_NOMATCH)
            break;
        if (r < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(r, msg, sizeof msg);
            rc = ag_error_set(err, AG_EINVAL, "normalizer Replace: regex match failed: %s", (char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        last_end = me;
        if (ms == me) {
            if (last_end < n)
                next_cp(s, n, &last_end);
            else
                last_end++;
            if (skip_next_empty) {
                skip_next_empty = 0;
                continue;
            }
        } else {
            skip_next_empty = 1;
        }
        rc = f(ctx, ms, me);
    }
    pcre2_match_data_free(md);
    return rc;
}

/* Replacing the matches: the text between them copied, `rep` for each. */
typedef struct {
    const char *s;
    size_t copied;
    const char *rep;
    size_t rn;
    ag_tk_buf *out;
    spans *al_out;      /* offsets: the spans of out's bytes, else NULL */
    const size_t *al;   /* the spans of s's bytes */
} replacer;

static int put_match(void *ctx, size_t ms, size_t me)
{
    replacer *r = ctx;
    if (ms < r->copied) /* \K can start a match before the last one ended */
        ms = r->copied;
    int rc = ag_tk_buf_put(r->out, r->s + r->copied, ms - r->copied) == AG_OK &&
                     ag_tk_buf_put(r->out, r->rep, r->rn) == AG_OK ? AG_OK : AG_ENOMEM;
    if (rc == AG_OK && r->al_out) {
        /* NormalizedString::replace: the new characters take the span of
         * the match's last byte (of the byte before an empty match) */
        rc = spans_copy(r->al_out, r->al + 2 * r->copied, ms - r->copied);
        if (rc == AG_OK && r->rn)
            rc = me > 0 ? spans_put(r->al_out, r->al + 2 * (me - 1), r->rn) : AG_EUNSUPPORTED;
    }
    r->copied = me > r->copied ? me : r->copied;
    return rc;
}

static int put_rest(replacer *r, size_t n)
{
    int rc = ag_tk_buf_put(r->out, r->s + r->copied, n - r->copied);
    return rc == AG_OK && r->al_out ? spans_copy(r->al_out, r->al + 2 * r->copied, n - r->copied) : rc;
}

int ag_tk_replace_all(const char *s, size_t n, const char *pat, size_t pn, const char *rep, size_t rn,
                      ag_tk_buf *out)
{
    replacer r = {s, 0, rep, rn, out, NULL, NULL};
    int rc = literal_matches(s, n, pat, pn, put_match, &r);
    return rc == AG_OK ? put_rest(&r, n) : rc;
}

/* The Replace normalizer on s into out (with the spans of its bytes when
 * al_out is given: al those of s). */
static int replace(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                   spans *al_out, ag_error *err)
{
    replacer r = {s, 0, nm->content, nm->content_len, out, al_out, al};
    int rc = nm->re ? regex_matches(nm->re, s, n, put_match, &r, err)
                    : literal_matches(s, n, nm->text, nm->text_len, put_match, &r);
    return rc == AG_OK ? put_rest(&r, n) : rc;
}

/* ---- applying ------------------------------------------------------------ */

static int apply(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out, ag_error *err);

/* Each normalizer of the list on the output of the one before. */
static int sequence(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out,
                    ag_error *err)
{
    if (nm->n_subs == 0)
        return ag_tk_buf_put(out, s, n);
    ag_tk_buf tmp[2] = {{0}};
    const char *cur = s;
    size_t cn = n;
    int rc = AG_OK;
    for (size_t k = 0; k < nm->n_subs && rc == AG_OK; k++) {
        ag_tk_buf *dst = k + 1 == nm->n_subs ? out : &tmp[k % 2];
        dst->n = 0;
        rc = ag_tk_buf_put(dst, "", 0); /* dst->b is never NULL */
        if (rc == AG_OK)
            rc = apply(nm->subs[k], cur, cn, dst, err);
        cur = dst->b;
        cn = dst->n;
    }
    free(tmp[0].b);
    free(tmp[1].b);
    return rc;
}

/* Appends the normalized s to out. */
static int apply(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out, ag_error *err)
{
    switch (nm->type) {
    case NM_SEQUENCE:
        return sequence(nm, s, n, out, err);
    case NM_NFC:
        return unicode_form(NFC_OPTS, s, n, out);
    case NM_NFD:
        return unicode_form(NFD_OPTS, s, n, out);
    case NM_NFKC:
        return unicode_form(NFKC_OPTS, s, n, out);
    case NM_NFKD:
        return unicode_form(NFKD_OPTS, s, n, out);
    case NM_LOWERCASE:
        return lowercase(s, n, out);
    case NM_STRIP:
        return strip(nm, s, n, out);
    case NM_STRIP_ACCENTS: /* is_combining_mark: General_Category Mark */
        return drop_categories(s, n,
                               CAT(UTF8PROC_CATEGORY_MN) | CAT(UTF8PROC_CATEGORY_MC) |
                                   CAT(UTF8PROC_CATEGORY_ME),
                               out);
    case NM_REPLACE:
        if (n == 0) /* tokenizers finds no match in an empty string */
            return AG_OK;
        return replace(nm, s, n, NULL, out, NULL, err);
    case NM_PREPEND:
        if (n == 0)
            return AG_OK;
        return ag_tk_buf_put(out, nm->text, nm->text_len) == AG_OK ? ag_tk_buf_put(out, s, n)
                                                                   : AG_ENOMEM;
    case NM_BERT:
        return bert(nm, s, n, out);
    case NM_PRECOMPILED:
        return ag_tk_charsmap_apply(nm->charsmap, s, n, out);
    case NM_NMT:
        return nmt(s, n, out);
    case NM_BYTE_LEVEL: /* the pre-tokenizer's byte-to-character mapping */
        return ag_tk_bytelevel_map(s, n, out);
    }
    return AG_EINVAL;
}

int ag_tk_normalize(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out,
                    ag_error *err)
{
    out->n = 0;
    int rc = ag_tk_buf_put(out, "", 0); /* out->b is a string even when empty */
    if (rc != AG_OK)
        return ag_error_set(err, rc, "normalizer: out of memory");
    if (!valid_utf8(s, n))
        return ag_error_set(err, AG_EINVAL, "normalizer: the text is not valid UTF-8");
    ag_error why = {0};
    rc = nm ? apply(nm, s, n, out, &why) : ag_tk_buf_put(out, s, n);
    if (rc == AG_OK)
        return AG_OK;
    if (why.status != AG_OK)
        return ag_error_set(err, why.status, "%s", why.message);
    return ag_error_set(err, rc, "normalizer: %s", rc == AG_ENOMEM ? "out of memory" : ag_strerror(rc));
}

/* ---- loading ------------------------------------------------------------- */

void ag_tk_normalizer_free(ag_tk_normalizer *nm)
{
    if (!nm)
        return;
    for (size_t i = 0; i < nm->n_subs; i++)
        ag_tk_normalizer_free(nm->subs[i]);
    free(nm->subs);
    free(nm->text);
    free(nm->content);
    pcre2_code_free(nm->re);
    ag_tk_charsmap_free(nm->charsmap);
    free(nm);
}

static int load_one(const char *path, json_t *j, ag_tk_normalizer **out, ag_error *err);

/* A boolean field: absent gives dflt; anything but true/false is an error. */
static int get_bool(const char *path, const char *type, json_t *j, const char *key, int dflt,
                    int *v, ag_error *err)
{
    json_t *f = json_object_get(j, key);
    if (!f) {
        *v = dflt;
        return AG_OK;
    }
    if (!json_is_boolean(f))
        return ag_error_set(err, AG_EFORMAT, "%s: normalizer %s: \"%s\" must be true or false", path,
                            type, key);
    *v = json_is_true(f);
    return AG_OK;
}

/* A required string field, copied. */
static int get_string(const char *path, const char *type, json_t *j, const char *key, char **v,
                      size_t *len, ag_error *err)
{
    json_t *f = json_object_get(j, key);
    if (!json_is_string(f))
        return ag_error_set(err, AG_EFORMAT, "%s: normalizer %s: \"%s\" must be a string", path,
                            type, key);
    *len = json_string_length(f);
    *v = malloc(*len + 1);
    if (!*v)
        return ag_error_set(err, AG_ENOMEM, "%s: normalizer %s: out of memory", path, type);
    memcpy(*v, json_string_value(f), *len + 1);
    return AG_OK;
}

static int load_sequence(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    json_t *list = json_object_get(j, "normalizers");
    if (!json_is_array(list))
        return ag_error_set(err, AG_EFORMAT, "%s: normalizer Sequence: \"normalizers\" must be a list",
                            path);
    size_t n = json_array_size(list);
    nm->subs = calloc(n ? n : 1, sizeof *nm->subs);
    if (!nm->subs)
        return ag_error_set(err, AG_ENOMEM, "%s: normalizer Sequence: out of memory", path);
    for (size_t i = 0; i < n; i++) {
        int rc = load_one(path, json_array_get(list, i), &nm->subs[i], err);
        if (rc != AG_OK)
            return rc;
        nm->n_subs++;
    }
    return AG_OK;
}

static int load_strip(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    int rc = get_bool(path, "Strip", j, "strip_left", 1, &nm->strip_left, err);
    return rc == AG_OK ? get_bool(path, "Strip", j, "strip_right", 1, &nm->strip_right, err) : rc;
}

/* Oniguruma's defaults (Ruby syntax), which tokenizers compiles with: ^ and
 * $ match at every line, and a line ends at LF only. */
static int compile_regex(const char *path, const char *pat, size_t len, pcre2_code **re,
                         ag_error *err)
{
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc)
        return ag_error_set(err, AG_ENOMEM, "%s: normalizer Replace: out of memory", path);
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    int ec = 0;
    PCRE2_SIZE eo = 0;
    *re = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &ec, &eo, cc);
    pcre2_compile_context_free(cc);
    if (!*re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ag_error_set(err, AG_EFORMAT, "%s: normalizer Replace: invalid regex '%s': %s at offset %zu",
                            path, pat, (char *)msg, (size_t)eo);
    }
    ag_tk_regex_jit(*re);
    return AG_OK;
}

/* "pattern": {"String": s} or {"Regex": r}; "content": the replacement, taken
 * literally (released tokenizers expand no $1 group references). */
static int load_replace(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    json_t *pat = json_object_get(j, "pattern");
    json_t *str = json_object_get(pat, "String"), *rx = json_object_get(pat, "Regex");
    if (!json_is_object(pat) || json_object_size(pat) != 1 || !(json_is_string(str) || json_is_string(rx)))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: normalizer Replace: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}",
                            path);
    int rc = get_string(path, "Replace", j, "content", &nm->content, &nm->content_len, err);
    if (rc == AG_OK)
        rc = get_string(path, "Replace", pat, str ? "String" : "Regex", &nm->text, &nm->text_len, err);
    if (rc == AG_OK && rx)
        rc = compile_regex(path, nm->text, nm->text_len, &nm->re, err);
    return rc;
}

static int load_prepend(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    return get_string(path, "Prepend", j, "prepend", &nm->text, &nm->text_len, err);
}

/* Defaults of tokenizers' BertNormalizer; strip_accents null (or absent)
 * follows lowercase, as in the Rust constructor's callers. */
static int load_bert(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    const char *t = "BertNormalizer";
    int rc = get_bool(path, t, j, "clean_text", 1, &nm->clean_text, err);
    if (rc == AG_OK)
        rc = get_bool(path, t, j, "handle_chinese_chars", 1, &nm->chinese, err);
    if (rc == AG_OK)
        rc = get_bool(path, t, j, "lowercase", 1, &nm->lowercase, err);
    json_t *sa = json_object_get(j, "strip_accents");
    if (rc == AG_OK && sa && !json_is_null(sa))
        rc = get_bool(path, t, j, "strip_accents", 0, &nm->strip_accents, err);
    else if (rc == AG_OK)
        nm->strip_accents = nm->lowercase;
    return rc;
}

static int load_precompiled(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err)
{
    json_t *b64 = json_object_get(j, "precompiled_charsmap");
    if (!json_is_string(b64))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: normalizer Precompiled: \"precompiled_charsmap\" must be a base64 string",
                            path);
    return ag_tk_charsmap_load(path, json_string_value(b64), json_string_length(b64), &nm->charsmap,
                               err);
}

static const struct {
    const char *name;
    nm_type type;
    int (*load)(const char *path, json_t *j, ag_tk_normalizer *nm, ag_error *err); /* NULL: no fields */
} TYPES[] = {
    {"Sequence", NM_SEQUENCE, load_sequence},
    {"NFC", NM_NFC, NULL},
    {"NFD", NM_NFD, NULL},
    {"NFKC", NM_NFKC, NULL},
    {"NFKD", NM_NFKD, NULL},
    {"Lowercase", NM_LOWERCASE, NULL},
    {"Strip", NM_STRIP, load_strip},
    {"StripAccents", NM_STRIP_ACCENTS, NULL},
    {"Replace", NM_REPLACE, load_replace},
    {"Prepend", NM_PREPEND, load_prepend},
    {"BertNormalizer", NM_BERT, load_bert},
    {"Precompiled", NM_PRECOMPILED, load_precompiled},
    {"Nmt", NM_NMT, NULL},
    {"ByteLevel", NM_BYTE_LEVEL, NULL},
};

static int load_one(const char *path, json_t *j, ag_tk_normalizer **out, ag_error *err)
{
    *out = NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!json_is_object(j) || !type)
        return ag_error_set(err, AG_EFORMAT, "%s: a normalizer must be an object with a \"type\"", path);
    size_t k = 0;
    while (k < sizeof TYPES / sizeof TYPES[0] && strcmp(TYPES[k].name, type) != 0)
        k++;
    if (k == sizeof TYPES / sizeof TYPES[0])
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: normalizer type '%s' is not supported", path, type);
    ag_tk_normalizer *nm = calloc(1, sizeof *nm);
    if (!nm)
        return ag_error_set(err, AG_ENOMEM, "%s: normalizer %s: out of memory", path, type);
    nm->type = TYPES[k].type;
    int rc = TYPES[k].load ? TYPES[k].load(path, j, nm, err) : AG_OK;
    if (rc != AG_OK) {
        ag_tk_normalizer_free(nm);
        return rc;
    }
    *out = nm;
    return AG_OK;
}

int ag_tk_normalizer_load(const char *path, json_t *j, ag_tk_normalizer **out, ag_error *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return AG_OK;
    return load_one(path, j, out, err);
}

/* ---- alignments (offsets) -------------------------------------------------- */

/* Rust's NormalizedString keeps, for each normalized byte, the original span
 * of the character it came from (normalizer.rs, transform_range): a
 * replaced character keeps its span, an added one takes the span of the
 * character before it, so a character that becomes several (Lowercase
 * 'İ', NFD 'é', BertNormalizer's spaces around a CJK character, a one-char
 * Replace) gives all of them its own span. Those normalizers are applied
 * character by character here, each output byte taking its character's
 * span, and the result must equal the normalization of the whole text;
 * where it does not (a composition across characters, a Replace of several
 * characters, Strip of inner spaces) the text is refused, never given a
 * wrong span. Prepend, Strip, Replace, NFC and NFKC have their own rules
 * (below); Precompiled's `replace` gives an expansion the span of its
 * character, as per_char does, for a cluster of one character
 * (precompiled_char_ok). */


static const char *type_name(nm_type t)
{
    for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++)
        if (TYPES[k].type == t)
            return TYPES[k].name;
    return "?";
}

static int untracked(const ag_tk_normalizer *nm, const char *why, ag_error *err)
{
    return ag_error_set(err, AG_EUNSUPPORTED, "offsets: normalizer %s %s: its alignment is not tracked",
                        type_name(nm->type), why);
}

static size_t cp_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; c++)
        next_cp(s, n, &i);
    return c;
}

/* The aligned result out[start..] must be what the normalizer makes of
 * the whole text; else the text is refused for `why`. */
static int same_as_whole(const ag_tk_normalizer *nm, const char *s, size_t n, const ag_tk_buf *out, size_t start,
                         const char *why, ag_error *err)
{
    ag_tk_buf whole = {0};
    int rc = apply(nm, s, n, &whole, err);
    if (rc == AG_OK && (whole.n != out->n - start || (whole.n && memcmp(whole.b, out->b + start, whole.n) != 0)))
        rc = untracked(nm, why, err);
    free(whole.b);
    return rc;
}

/* A normalizer applied to each character of s on its own (above). */
/* Grapheme cluster breaks along s (utf8proc's rules, as precompiled.c
 * cuts clusters): alone_next() says whether the character at i (ending at
 * j) is a cluster of its own, called for each character in order. */
typedef struct {
    utf8proc_int32_t state;
    int brk_before;
} graphemes;

static int alone_next(graphemes *g, const char *s, size_t n, size_t i, size_t j)
{
    size_t k = i, t = j;
    int32_t c = next_cp(s, n, &k);
    int after = j >= n || utf8proc_grapheme_break_stateful(c, next_cp(s, n, &t), &g->state);
    int alone = g->brk_before && after;
    g->brk_before = after;
    return alone;
}

/* Precompiled (normalizers/precompiled.rs, replace): a character's
 * replacement takes its span, as per_char gives it, when the character is
 * a cluster of its own and is not deleted at the start of the text (there
 * Rust's transform shifts the spans that follow); a character of a longer
 * cluster must map to one character (the cluster is mapped whole). */
static int precompiled_char_ok(int alone, size_t out_chars, size_t out_so_far)
{
    if (out_chars == 0 && out_so_far == 0)
        return 0;
    return out_chars == 1 || alone;
}

/* A normalizer applied to each character of s on its own (above). */
static int per_char(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                    spans *aout, ag_error *err)
{
    ag_tk_buf piece = {0};
    graphemes g = {0, 1};
    size_t start = out->n;
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < n;) {
        size_t j = i;
        next_cp(s, n, &j);
        piece.n = 0;
        int alone = alone_next(&g, s, n, i, j);
        rc = apply(nm, s + i, j - i, &piece, err);
        if (rc == AG_OK && nm->type == NM_PRECOMPILED &&
            !precompiled_char_ok(alone, cp_count(piece.b, piece.n), out->n - start))
            rc = untracked(nm, "deletes the first character or expands one inside a grapheme cluster", err);
        if (rc == AG_OK && (ag_tk_buf_put(out, piece.b, piece.n) != AG_OK || spans_put(aout, al + 2 * i, piece.n) != AG_OK))
            rc = AG_ENOMEM;
        i = j;
    }
    if (rc == AG_OK)
        rc = same_as_whole(nm, s, n, out, start, "changes this text across characters", err);
    free(piece.b);
    return rc;
}

/* ---- NFC and NFKC with alignments ------------------------------------------ */

/* Rust composes with unicode-normalization-alignments (the iterators of
 * decompose.rs and recompose.rs): each character's decomposition comes out
 * as (c, 0), (c', 1), ...; a run of non-starters is sorted by combining
 * class; a composition of k and c gives (r, k.change + c.change - 1). The
 * (char, change) list then goes through NormalizedString::transform: change
 * <= 0 replaces the next character of the text (taking its span) and drops
 * -change more, change > 0 adds a character with the span of the byte
 * before. */
typedef struct {
    int32_t c;
    int change;
} cchange;

typedef struct {
    cchange *v;
    size_t n, cap;
} cchanges;

static int cc_push(cchanges *l, int32_t c, int change)
{
    if (AGB_VEC_RESERVE(l->v, l->cap, l->n + 1) != 0)
        return AG_ENOMEM;
    l->v[l->n++] = (cchange){c, change};
    return AG_OK;
}

static int ccc(int32_t c)
{
    return utf8proc_get_property(c)->combining_class;
}

/* The one character a + b composes to, or -1. */
static int32_t compose2(int32_t a, int32_t b)
{
    utf8proc_int32_t buf[2] = {a, b};
    utf8proc_ssize_t m = utf8proc_normalize_utf32(buf, 2, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    return m == 1 ? buf[0] : -1;
}

/* decompose.rs: every character decomposed, runs of non-starters sorted
 * (stable) by combining class. */
static int decompose_changes(const char *s, size_t n, int compat, cchanges *d)
{
    size_t run = 0; /* start of the pending run */
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t dc[32];
        utf8proc_int32_t c = next_cp(s, n, &i);
        int last = 0;
        utf8proc_ssize_t m = utf8proc_decompose_char(c, dc, 32, UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0), &last);
        if (m < 0 || m > 32)
            return AG_EINVAL;
        for (utf8proc_ssize_t k = 0; k < m; k++) {
            if (ccc(dc[k]) == 0)
                run = d->n;
            if (cc_push(d, dc[k], k > 0) != AG_OK)
                return AG_ENOMEM;
            for (size_t j = d->n - 1; j > run && ccc(d->v[j].c) && ccc(d->v[j - 1].c) > ccc(d->v[j].c); j--) {
                cchange t = d->v[j]; /* insertion sort: stable */
                d->v[j] = d->v[j - 1];
                d->v[j - 1] = t;
            }
        }
    }
    return AG_OK;
}

/* recompose.rs's state machine over d into o. */
static int recompose_changes(const cchanges *d, cchanges *o)
{
    cchanges buf = {0};
    cchange k = {-1, 0};
    int last = -1, rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < d->n; i++) {
        cchange x = d->v[i];
        int cl = ccc(x.c);
        int32_t r = k.c >= 0 && (last < 0 || last < cl) ? compose2(k.c, x.c) : -1;
        if (k.c < 0 && cl != 0) {
            rc = cc_push(o, x.c, x.change);
        } else if (k.c < 0) {
            k = x;
        } else if (r >= 0) {
            k = (cchange){r, k.change + x.change - 1};
        } else if (cl == 0) { /* k is done; the buffer follows it */
            rc = cc_push(o, k.c, k.change);
            for (size_t b = 0; rc == AG_OK && b < buf.n; b++)
                rc = cc_push(o, buf.v[b].c, buf.v[b].change);
            buf.n = 0;
            last = -1;
            k = x;
        } else {
            rc = cc_push(&buf, x.c, x.change);
            last = cl;
        }
    }
    if (rc == AG_OK && k.c >= 0)
        rc = cc_push(o, k.c, k.change);
    for (size_t b = 0; rc == AG_OK && b < buf.n; b++)
        rc = cc_push(o, buf.v[b].c, buf.v[b].change);
    free(buf.v);
    return rc;
}

/* NormalizedString::transform of the list over s (spans al). 1 when a
 * character is added before any (Rust: span (0, 0) of the piece). */
static int transform_changes(const cchanges *o, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                             spans *aout)
{
    size_t idx = 0;
    for (size_t i = 0; i < o->n; i++) {
        const size_t *span;
        if (o->v[i].change > 0) {
            if (idx == 0)
                return 1;
            span = al + 2 * (idx - 1);
        } else {
            if (idx >= n)
                return 1;
            span = al + 2 * idx;
            for (int r = 0; r <= -o->v[i].change && idx < n; r++)
                next_cp(s, n, &idx);
        }
        size_t before = out->n;
        if (ag_tk_buf_putc(out, o->v[i].c) != AG_OK || spans_put(aout, span, out->n - before) != AG_OK)
            return AG_ENOMEM;
    }
    return AG_OK;
}

static int composed(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                    spans *aout, ag_error *err)
{
    cchanges d = {0}, o = {0};
    size_t start = out->n;
    int rc = decompose_changes(s, n, nm->type == NM_NFKC, &d);
    if (rc == AG_OK)
        rc = recompose_changes(&d, &o);
    if (rc == AG_OK)
        rc = transform_changes(&o, s, n, al, out, aout);
    if (rc == 1)
        rc = untracked(nm, "adds a character at the start", err);
    if (rc == AG_OK)
        rc = same_as_whole(nm, s, n, out, start, "is not reproduced character by character here", err);
    free(d.v);
    free(o.v);
    return rc;
}

static int aligned(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                   spans *aout, ag_error *err);

static int aligned_sequence(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al,
                            ag_tk_buf *out, spans *aout, ag_error *err)
{
    ag_tk_buf cur = {0};
    spans ca = {0};
    int rc = ag_tk_buf_put(&cur, s, n) == AG_OK && spans_copy(&ca, al, n) == AG_OK ? AG_OK : AG_ENOMEM;
    for (size_t k = 0; rc == AG_OK && k < nm->n_subs; k++) {
        ag_tk_buf next = {0};
        spans na = {0};
        rc = ag_tk_buf_put(&next, "", 0) == AG_OK ? aligned(nm->subs[k], cur.b, cur.n, ca.v, &next, &na, err) : AG_ENOMEM;
        free(cur.b);
        free(ca.v);
        cur = next;
        ca = na;
    }
    if (rc == AG_OK && (ag_tk_buf_put(out, cur.b, cur.n) != AG_OK || spans_copy(aout, ca.v, cur.n) != AG_OK))
        rc = AG_ENOMEM;
    free(cur.b);
    free(ca.v);
    return rc;
}

/* Appends the normalized s to out and the span of each of its bytes to aout. */
static int aligned(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al, ag_tk_buf *out,
                   spans *aout, ag_error *err)
{
    size_t a = 0, b = n;
    switch (nm->type) {
    case NM_SEQUENCE:
        return aligned_sequence(nm, s, n, al, out, aout, err);
    case NM_PREPEND: /* prepend(): the new characters take the first one's span */
        if (n == 0)
            return AG_OK;
        if (ag_tk_buf_put(out, nm->text, nm->text_len) != AG_OK || spans_put(aout, al, nm->text_len) != AG_OK)
            return AG_ENOMEM;
        break;
    case NM_STRIP:
        strip_bounds(nm, s, n, &a, &b);
        break;
    case NM_NFC:
    case NM_NFKC:
        return composed(nm, s, n, al, out, aout, err);
    case NM_REPLACE: { /* tokenizers finds no match in an empty string */
        int rc = n == 0 ? AG_OK : replace(nm, s, n, al, out, aout, err);
        return rc == AG_EUNSUPPORTED ? untracked(nm, "inserts text at the start", err) : rc;
    }
    default:
        return per_char(nm, s, n, al, out, aout, err);
    }
    if (ag_tk_buf_put(out, s + a, b - a) != AG_OK || spans_copy(aout, al + 2 * a, b - a) != AG_OK)
        return AG_ENOMEM;
    return AG_OK;
}

int ag_tk_normalize_aligned(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al,
                            ag_tk_buf *out, size_t **out_al, ag_error *err)
{
    *out_al = NULL;
    out->n = 0;
    if (ag_tk_buf_put(out, "", 0) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "normalizer: out of memory");
    if (!valid_utf8(s, n))
        return ag_error_set(err, AG_EINVAL, "normalizer: the text is not valid UTF-8");
    spans sp = {0};
    ag_error why = {0};
    int rc = nm ? aligned(nm, s, n, al, out, &sp, &why) : AG_OK;
    if (!nm && (ag_tk_buf_put(out, s, n) != AG_OK || spans_copy(&sp, al, n) != AG_OK))
        rc = AG_ENOMEM;
    if (rc == AG_OK) {
        *out_al = sp.v;
        return AG_OK;
    }
    free(sp.v);
    if (why.status != AG_OK)
        return ag_error_set(err, why.status, "%s", why.message);
    return ag_error_set(err, rc, "normalizer: %s", rc == AG_ENOMEM ? "out of memory" : ag_strerror(rc));
}
