/* tokenizer/decoders.c — Hugging Face's decoders: token strings back to
 * text (tokenizers, Rust, src/decoders/ (one file per decoder), plus the decoders that live with
 * their pre-tokenizer or normalizer: pre_tokenizers/byte_level.rs,
 * pre_tokenizers/metaspace.rs, normalizers/replace.rs).
 *
 * Every decoder is a `decode_chain`: a list of strings in, a list out
 * (Decoder::decode_chain); Sequence runs each on the output of the one
 * before, and decode() joins the final list with "" (Decoder::decode). The
 * list is an ag_tk_splits of text splits (id -1). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tk.h"

enum dec_kind { D_BYTELEVEL, D_METASPACE, D_WORDPIECE, D_BYTEFALLBACK, D_FUSE, D_STRIP, D_REPLACE,
                D_SEQUENCE, D_BPE, D_CTC };

struct ag_tk_decoder {
    int kind;
    char *text, *text2;        /* WordPiece prefix, BPEDecoder suffix, CTC pad / word delimiter */
    int cleanup;               /* WordPiece, CTC */
    int32_t content;           /* Strip: the character */
    size_t start, stop;        /* Strip: how many at most at each end */
    char rep[4];               /* Metaspace: the replacement (UTF-8) */
    size_t rep_len;
    int strip_first;           /* Metaspace: prepend_scheme is not "never" */
    ag_tk_normalizer *replace; /* Replace: the normalizer of the same JSON */
    ag_tk_decoder **kids;      /* Sequence */
    size_t n_kids;
};

/* ---- loading ---------------------------------------------------------------- */

static int bad(const char *path, const char *where, const char *what, ag_error *err)
{
    return ag_error_set(err, AG_EFORMAT, "%s: %s: %s", path, where, what);
}

/* A string field, `def` when absent (NULL def: required). */
static int get_str(const char *path, const char *where, json_t *j, const char *key, const char *def, char **out,
                   ag_error *err)
{
    json_t *v = json_object_get(j, key);
    if (!v && def) {
        *out = strdup(def);
    } else {
        if (!json_is_string(v))
            return ag_error_set(err, AG_EFORMAT, "%s: %s: \"%s\" must be a string", path, where, key);
        *out = strdup(json_string_value(v));
    }
    return *out ? AG_OK : ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
}

static int get_flag(const char *path, const char *where, json_t *j, const char *key, int def, int *out,
                    ag_error *err)
{
    json_t *v = json_object_get(j, key);
    if (v && !json_is_boolean(v))
        return ag_error_set(err, AG_EFORMAT, "%s: %s: \"%s\" must be true or false", path, where, key);
    *out = v ? json_is_true(v) : def;
    return AG_OK;
}

static int get_count(const char *path, const char *where, json_t *j, const char *key, size_t *out, ag_error *err)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ag_error_set(err, AG_EFORMAT, "%s: %s: \"%s\" must be a non-negative integer", path, where, key);
    *out = (size_t)json_integer_value(v);
    return AG_OK;
}

static int load_node(const char *path, const char *where, json_t *j, ag_tk_decoder **out, ag_error *err);

static int load_sequence(ag_tk_decoder *d, const char *path, const char *where, json_t *j, ag_error *err)
{
    json_t *arr = json_object_get(j, "decoders");
    if (!json_is_array(arr))
        return bad(path, where, "\"decoders\" must be an array", err);
    d->kids = calloc(json_array_size(arr) + 1, sizeof *d->kids);
    if (!d->kids)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    int rc = AG_OK;
    for (size_t k = 0; rc == AG_OK && k < json_array_size(arr); k++, d->n_kids++) {
        char sub[240];
        snprintf(sub, sizeof sub, "%.200s.decoders[%zu]", where, k);
        rc = load_node(path, sub, json_array_get(arr, k), &d->kids[k], err);
    }
    return rc;
}

/* Metaspace's fields are read by the Metaspace pre-tokenizer's loader (the
 * same struct in Rust), which also checks them. */
static int load_metaspace(ag_tk_decoder *d, const char *path, json_t *j, ag_error *err)
{
    ag_tk_pretok *p;
    int rc = ag_tk_pretok_load(path, j, &p, err);
    if (rc != AG_OK)
        return rc;
    int never = 0;
    ag_tk_pretok_metaspace(p, d->rep, &d->rep_len, &never);
    d->strip_first = !never;
    ag_tk_pretok_free(p);
    return AG_OK;
}

static int load_strip(ag_tk_decoder *d, const char *path, const char *where, json_t *j, ag_error *err)
{
    json_t *c = json_object_get(j, "content");
    const char *s = json_string_value(c);
    size_t i = 0, n = s ? strlen(s) : 0;
    if (n > 0)
        d->content = ag_tk_next_cp(s, n, &i);
    if (n == 0 || i != n)
        return bad(path, where, "\"content\" must be a string of one character", err);
    int rc = get_count(path, where, j, "start", &d->start, err);
    return rc == AG_OK ? get_count(path, where, j, "stop", &d->stop, err) : rc;
}

static int load_fields(ag_tk_decoder *d, const char *path, const char *where, json_t *j, ag_error *err)
{
    switch (d->kind) {
    case D_WORDPIECE: {
        int rc = get_str(path, where, j, "prefix", "##", &d->text, err);
        return rc == AG_OK ? get_flag(path, where, j, "cleanup", 1, &d->cleanup, err) : rc;
    }
    case D_BPE:
        return get_str(path, where, j, "suffix", "</w>", &d->text, err);
    case D_CTC: {
        int rc = get_str(path, where, j, "pad_token", "<pad>", &d->text, err);
        if (rc == AG_OK)
            rc = get_str(path, where, j, "word_delimiter_token", "|", &d->text2, err);
        return rc == AG_OK ? get_flag(path, where, j, "cleanup", 1, &d->cleanup, err) : rc;
    }
    case D_STRIP:
        return load_strip(d, path, where, j, err);
    case D_METASPACE:
        return load_metaspace(d, path, j, err);
    case D_REPLACE:
        return ag_tk_normalizer_load(path, j, &d->replace, err);
    case D_SEQUENCE:
        return load_sequence(d, path, where, j, err);
    default: /* ByteLevel's fields only matter to encoding; ByteFallback and Fuse have none */
        return AG_OK;
    }
}

static const struct {
    const char *type;
    int kind;
} TYPES[] = {{"ByteLevel", D_BYTELEVEL}, {"Metaspace", D_METASPACE}, {"WordPiece", D_WORDPIECE},
             {"ByteFallback", D_BYTEFALLBACK}, {"Fuse", D_FUSE}, {"Strip", D_STRIP},
             {"Replace", D_REPLACE}, {"Sequence", D_SEQUENCE}, {"BPEDecoder", D_BPE}, {"CTC", D_CTC}};

static int load_node(const char *path, const char *where, json_t *j, ag_tk_decoder **out, ag_error *err)
{
    *out = NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!json_is_object(j) || !type)
        return ag_error_set(err, AG_EFORMAT, "%s: %s has no \"type\"", path, where);
    size_t k = 0;
    while (k < sizeof TYPES / sizeof TYPES[0] && strcmp(TYPES[k].type, type) != 0)
        k++;
    if (k == sizeof TYPES / sizeof TYPES[0])
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: decoder type '%s' is not supported", path, type);
    ag_tk_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    d->kind = TYPES[k].kind;
    char w[200];
    snprintf(w, sizeof w, "%.150s %.40s", where, type);
    int rc = load_fields(d, path, w, j, err);
    if (rc != AG_OK) {
        ag_tk_decoder_free(d);
        return rc;
    }
    *out = d;
    return AG_OK;
}

int ag_tk_decoder_load(const char *path, json_t *j, ag_tk_decoder **out, ag_error *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return AG_OK;
    return load_node(path, "decoder", j, out, err);
}

void ag_tk_decoder_free(ag_tk_decoder *d)
{
    if (!d)
        return;
    for (size_t k = 0; k < d->n_kids; k++)
        ag_tk_decoder_free(d->kids[k]);
    free(d->kids);
    free(d->text);
    free(d->text2);
    ag_tk_normalizer_free(d->replace);
    free(d);
}

/* ---- the decoders ------------------------------------------------------------ */

static int push(ag_tk_splits *out, const char *s, size_t n)
{
    return ag_tk_splits_push(out, s, n, 0, -1);
}

static int push_buf(ag_tk_splits *out, ag_tk_buf *b)
{
    return push(out, b->b ? b->b : "", b->n);
}

/* The bytes of UTF-8 s with every maximal ill-formed subsequence replaced by
 * U+FFFD, as Rust's String::from_utf8_lossy (Unicode's "substitution of
 * maximal subparts"). */
static int put_lossy(ag_tk_buf *o, const unsigned char *s, size_t n)
{
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < n;) {
        unsigned char b = s[i];
        size_t need = b < 0x80 ? 0 : b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2
                    : b >= 0xF0 && b <= 0xF4 ? 3 : 4;
        unsigned char lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
        size_t k = 1;
        if (need < 4)
            for (; k <= need && i + k < n && s[i + k] >= (k == 1 ? lo : 0x80) && s[i + k] <= (k == 1 ? hi : 0xBF); k++)
                ;
        if (need < 4 && k == need + 1)
            rc = ag_tk_buf_put(o, (const char *)s + i, k);
        else
            rc = ag_tk_buf_put(o, "\xEF\xBF\xBD", 3);
        i += k;
    }
    return rc;
}

/* byte_level.rs: every token whose characters are all byte-level characters
 * gives their bytes, any other token its own bytes; the bytes of all tokens
 * become one string (lossy). */
static int bytelevel(const ag_tk_splits *in, ag_tk_splits *out)
{
    ag_tk_buf bytes = {0}, text = {0};
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        const char *s = in->v[t].s;
        size_t n = in->v[t].n, i = 0, start = bytes.n;
        while (rc == AG_OK && i < n) {
            int v = ag_tk_bytelevel_byte(ag_tk_next_cp(s, n, &i));
            if (v < 0)
                break;
            char b = (char)v;
            rc = ag_tk_buf_put(&bytes, &b, 1);
        }
        if (rc == AG_OK && i < n) { /* not all byte-level: the token as it is */
            bytes.n = start;
            rc = ag_tk_buf_put(&bytes, s, n);
        }
    }
    if (rc == AG_OK)
        rc = put_lossy(&text, (const unsigned char *)(bytes.b ? bytes.b : ""), bytes.n);
    if (rc == AG_OK)
        rc = push_buf(out, &text);
    free(bytes.b);
    free(text.b);
    return rc;
}

/* metaspace.rs: the replacement becomes a space, except in the first token
 * when a prefix was prepended (prepend_scheme not "never"), where every
 * replacement is dropped. */
static int metaspace(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out)
{
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        ag_tk_buf b = {0};
        const char *s = in->v[t].s;
        size_t n = in->v[t].n, i = 0;
        while (rc == AG_OK && i < n) {
            if (n - i >= d->rep_len && memcmp(s + i, d->rep, d->rep_len) == 0) {
                i += d->rep_len;
                rc = t == 0 && d->strip_first ? AG_OK : ag_tk_buf_put(&b, " ", 1);
            } else {
                size_t st = i;
                ag_tk_next_cp(s, n, &i);
                rc = ag_tk_buf_put(&b, s + st, i - st);
            }
        }
        if (rc == AG_OK)
            rc = push_buf(out, &b);
        free(b.b);
    }
    return rc;
}

/* wordpiece.rs cleanup(): spaces before punctuation and English
 * contractions, in this order. */
static int wp_cleanup(const char *s, size_t n, ag_tk_buf *out)
{
    static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " do not", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", " don't", "'s", "'ve", "'re"};
    ag_tk_buf a = {0}, b = {0};
    int rc = ag_tk_buf_put(&a, s, n);
    for (size_t k = 0; rc == AG_OK && k < sizeof from / sizeof from[0]; k++) {
        b.n = 0;
        rc = ag_tk_replace_all(a.b, a.n, from[k], strlen(from[k]), to[k], strlen(to[k]), &b);
        ag_tk_buf tmp = a;
        a = b;
        b = tmp;
    }
    if (rc == AG_OK)
        rc = ag_tk_buf_put(out, a.b, a.n);
    free(a.b);
    free(b.b);
    return rc;
}

/* wordpiece.rs: after the first token, a token with the prefix loses it and
 * any other gets a leading space; then each token is cleaned up. */
static int wordpiece(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out)
{
    size_t pl = strlen(d->text);
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        ag_tk_buf b = {0}, c = {0};
        const char *s = in->v[t].s;
        size_t n = in->v[t].n;
        if (t > 0 && n >= pl && memcmp(s, d->text, pl) == 0) {
            s += pl;
            n -= pl;
        } else if (t > 0) {
            rc = ag_tk_buf_put(&b, " ", 1);
        }
        if (rc == AG_OK)
            rc = ag_tk_buf_put(&b, s, n);
        if (rc == AG_OK && d->cleanup)
            rc = wp_cleanup(b.b, b.n, &c);
        if (rc == AG_OK)
            rc = push_buf(out, d->cleanup ? &c : &b);
        free(b.b);
        free(c.b);
    }
    return rc;
}

/* "<0xNN>" (six bytes) as Rust's u8::from_str_radix(&token[3..5], 16),
 * which also takes a '+' sign before one digit. -1 when not a byte token. */
static int byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int v = 0;
    for (size_t i = 3; i < 5; i++) {
        char c = s[i];
        int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (i == 3 && c == '+')
            continue;
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The pending bytes as one string when they are valid UTF-8, else one
 * U+FFFD per byte (byte_fallback.rs). */
static int flush_bytes(ag_tk_buf *bytes, ag_tk_splits *out)
{
    int rc = AG_OK;
    if (bytes->n == 0)
        return AG_OK;
    ag_tk_buf lossy = {0}; /* the lossy copy equals the bytes exactly when they are valid */
    rc = put_lossy(&lossy, (const unsigned char *)bytes->b, bytes->n);
    int valid = rc == AG_OK && lossy.n == bytes->n && memcmp(lossy.b, bytes->b, bytes->n) == 0;
    free(lossy.b);
    if (valid)
        rc = push(out, bytes->b, bytes->n);
    for (size_t k = 0; !valid && rc == AG_OK && k < bytes->n; k++)
        rc = push(out, "\xEF\xBF\xBD", 3);
    bytes->n = 0;
    return rc;
}

static int bytefallback(const ag_tk_splits *in, ag_tk_splits *out)
{
    ag_tk_buf bytes = {0};
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        int v = byte_token(in->v[t].s, in->v[t].n);
        char b = (char)v;
        if (v >= 0) {
            rc = ag_tk_buf_put(&bytes, &b, 1);
            continue;
        }
        rc = flush_bytes(&bytes, out);
        if (rc == AG_OK)
            rc = push(out, in->v[t].s, in->v[t].n);
    }
    if (rc == AG_OK)
        rc = flush_bytes(&bytes, out);
    free(bytes.b);
    return rc;
}

static int fuse(const ag_tk_splits *in, ag_tk_splits *out)
{
    ag_tk_buf b = {0};
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++)
        rc = ag_tk_buf_put(&b, in->v[t].s, in->v[t].n);
    if (rc == AG_OK)
        rc = push_buf(out, &b);
    free(b.b);
    return rc;
}

/* strip.rs: up to `start` leading and `stop` trailing copies of content,
 * counted in characters (an empty result where the cuts cross). */
static int strip_one(const ag_tk_decoder *d, const char *s, size_t n, ag_tk_splits *out)
{
    size_t a = 0, z = n, i = 0;
    for (size_t k = 0; k < d->start && i < n; k++) {
        if (ag_tk_next_cp(s, n, &i) != d->content)
            break;
        a = i;
    }
    for (size_t k = 0; k < d->stop && z > 0; k++) {
        size_t p = z - 1;
        while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80)
            p--;
        size_t q = p;
        if (ag_tk_next_cp(s, n, &q) != d->content)
            break;
        z = p;
    }
    return push(out, s + a, z > a ? z - a : 0);
}

static int strip(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out)
{
    int rc = AG_OK;
    for (size_t t = 0; rc == AG_OK && t < in->n; t++)
        rc = strip_one(d, in->v[t].s, in->v[t].n, out);
    return rc;
}

/* replace.rs: the Replace normalizer's replacement on every token. */
static int replace(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out, ag_error *err)
{
    int rc = AG_OK;
    ag_tk_buf b = {0};
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        rc = ag_tk_normalize(d->replace, in->v[t].s, in->v[t].n, &b, err);
        if (rc == AG_OK)
            rc = push_buf(out, &b);
    }
    free(b.b);
    return rc;
}

/* bpe.rs: the suffix becomes a space, except in the last token, where it
 * goes. */
static int bpe(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out)
{
    int rc = AG_OK;
    ag_tk_buf b = {0};
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        b.n = 0;
        const char *rep = t + 1 == in->n ? "" : " ";
        rc = ag_tk_replace_all(in->v[t].s, in->v[t].n, d->text, strlen(d->text), rep, strlen(rep), &b);
        if (rc == AG_OK)
            rc = push_buf(out, &b);
    }
    free(b.b);
    return rc;
}

/* ctc.rs: repeated tokens once, the pad token removed, then (cleanup) the
 * WordPiece cleanup and the word delimiter as a space; empty tokens go. */
static int ctc(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out)
{
    int rc = AG_OK;
    ag_tk_buf a = {0}, b = {0};
    for (size_t t = 0; rc == AG_OK && t < in->n; t++) {
        const ag_tk_split *x = &in->v[t];
        if (t > 0 && x->n == in->v[t - 1].n && memcmp(x->s, in->v[t - 1].s, x->n) == 0)
            continue;
        a.n = b.n = 0;
        rc = ag_tk_replace_all(x->s, x->n, d->text, strlen(d->text), "", 0, &a);
        if (rc == AG_OK && d->cleanup) {
            rc = wp_cleanup(a.b, a.n, &b);
            a.n = 0;
            if (rc == AG_OK)
                rc = ag_tk_replace_all(b.b, b.n, d->text2, strlen(d->text2), " ", 1, &a);
        }
        if (rc == AG_OK && a.n > 0)
            rc = push_buf(out, &a);
    }
    free(a.b);
    free(b.b);
    return rc;
}

static int chain(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out, ag_error *err);

static int sequence(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out, ag_error *err)
{
    ag_tk_splits cur = {0}, next = {0};
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < in->n; i++)
        rc = push(&cur, in->v[i].s, in->v[i].n);
    for (size_t k = 0; rc == AG_OK && k < d->n_kids; k++) {
        ag_tk_splits_clear(&next);
        rc = chain(d->kids[k], &cur, &next, err);
        ag_tk_splits tmp = cur;
        cur = next;
        next = tmp;
    }
    for (size_t i = 0; rc == AG_OK && i < cur.n; i++)
        rc = push(out, cur.v[i].s, cur.v[i].n);
    ag_tk_splits_free(&cur);
    ag_tk_splits_free(&next);
    return rc;
}

static int chain(const ag_tk_decoder *d, const ag_tk_splits *in, ag_tk_splits *out, ag_error *err)
{
    switch (d->kind) {
    case D_BYTELEVEL: return bytelevel(in, out);
    case D_METASPACE: return metaspace(d, in, out);
    case D_WORDPIECE: return wordpiece(d, in, out);
    case D_BYTEFALLBACK: return bytefallback(in, out);
    case D_FUSE: return fuse(in, out);
    case D_STRIP: return strip(d, in, out);
    case D_REPLACE: return replace(d, in, out, err);
    case D_BPE: return bpe(d, in, out);
    case D_CTC: return ctc(d, in, out);
    default: return sequence(d, in, out, err);
    }
}

int ag_tk_decode(const ag_tk_decoder *d, const ag_tk_splits *tokens, ag_tk_buf *out, ag_error *err)
{
    ag_tk_splits res = {0};
    int rc = d ? chain(d, tokens, &res, err) : AG_OK;
    const ag_tk_splits *l = d ? &res : tokens;
    out->n = 0;
    rc = rc == AG_OK ? ag_tk_buf_put(out, "", 0) : rc;
    for (size_t i = 0; rc == AG_OK && i < l->n; i++) { /* no decoder: Rust joins with spaces */
        if (!d && i > 0)
            rc = ag_tk_buf_put(out, " ", 1);
        if (rc == AG_OK)
            rc = ag_tk_buf_put(out, l->v[i].s, l->v[i].n);
    }
    ag_tk_splits_free(&res);
    if (rc == AG_ENOMEM)
        return ag_error_set(err, rc, "decode: out of memory");
    return rc;
}
