/* tokenizer/precompiled.c — SentencePiece's precompiled_charsmap, read and
 * applied as Hugging Face's tokenizers does it (the spm_precompiled crate and
 * tokenizers' Precompiled normalizer, Rust).
 *
 * The blob: a little-endian u32 giving the byte size of the trie, the trie as
 * darts-clone double-array units (u32 LE), then the replacement strings, each
 * ended by a NUL. A trie key is the UTF-8 of a character sequence; its value
 * is the offset of its replacement string.
 *
 * Applying it (tokenizers, normalizers/precompiled.rs): per extended grapheme
 * cluster. A cluster of fewer than 6 bytes is looked up whole; the FIRST trie
 * key found walking it byte by byte — the shortest key that is a prefix of
 * the cluster — replaces the WHOLE cluster. Otherwise (no key, or 6 bytes or
 * more) every character is looked up alone and replaced or kept. So "ﬁ" +
 * U+0301 becomes "fi" (the accent goes with the cluster) and "\r\n", one
 * cluster, becomes one space. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "precompiled.h"

struct ag_tk_charsmap {
    uint32_t *units;
    size_t n_units;
    char *strings; /* the replacement strings, NUL-separated */
    size_t strings_len;
    int32_t ascii[128]; /* replacement of each ASCII character alone, -1 if none */
};

/* ---- darts-clone units (as the crate reads them) ----------------------- */

static int unit_has_leaf(uint32_t u)
{
    return (u >> 8) & 1;
}

static uint32_t unit_value(uint32_t u)
{
    return u & 0x7FFFFFFFu;
}

/* A value unit has bit 31 set, so it never matches a byte label. */
static uint32_t unit_label(uint32_t u)
{
    return u & (0x80000000u | 0xFFu);
}

static size_t unit_offset(uint32_t u)
{
    return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
}

/* The value of the first trie key that is a prefix of key[0..n) (stopping at
 * a NUL byte, as the crate does), or -1. Units outside the array match
 * nothing (load() has checked every unit a valid key reaches). */
static int64_t first_prefix(const ag_tk_charsmap *cm, const unsigned char *key, size_t n)
{
    size_t pos = unit_offset(cm->units[0]);
    for (size_t i = 0; i < n && key[i]; i++) {
        pos ^= key[i];
        if (pos >= cm->n_units)
            return -1;
        uint32_t u = cm->units[pos];
        if (unit_label(u) != key[i])
            return -1;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u))
            return pos < cm->n_units ? (int64_t)unit_value(cm->units[pos]) : -1;
    }
    return -1;
}

/* ---- loading ------------------------------------------------------------- */

static int b64_digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with canonical padding (the crate's BASE64_STANDARD):
 * length a multiple of 4, '=' only at the end, no stray bits. Returns the
 * decoded length, or -1. dst holds at least n / 4 * 3 bytes. */
static long b64_decode(const char *src, size_t n, unsigned char *dst)
{
    if (n % 4)
        return -1;
    size_t pad = 0;
    while (pad < 2 && pad < n && src[n - 1 - pad] == '=')
        pad++;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t acc = 0;
        int last = i + 4 == n;
        for (int k = 0; k < 4; k++) {
            int d = last && k >= 4 - (int)pad ? 0 : b64_digit((unsigned char)src[i + k]);
            if (d < 0)
                return -1;
            acc = acc << 6 | (uint32_t)d;
        }
        dst[w++] = (unsigned char)(acc >> 16);
        if (!(last && pad == 2))
            dst[w++] = (unsigned char)(acc >> 8);
        if (!(last && pad >= 1))
            dst[w++] = (unsigned char)acc;
        if (last && ((pad == 2 && (acc & 0xFFFF)) || (pad == 1 && (acc & 0xFF))))
            return -1;
    }
    return (long)w;
}

/* The replacement string at `value` must start on a character and end with a
 * NUL inside the string area (the crate would panic on the first, C readers
 * of the format run past the end on the second). */
static const char *check_value(const ag_tk_charsmap *cm, uint32_t value)
{
    if (value >= cm->strings_len)
        return "a replacement offset lies past the strings";
    if (((unsigned char)cm->strings[value] & 0xC0) == 0x80)
        return "a replacement offset falls inside a UTF-8 character";
    if (!memchr(cm->strings + value, '\0', cm->strings_len - value))
        return "a replacement string is not NUL-terminated";
    return NULL;
}

/* Walk every node a key can reach. Each node's children are found at
 * base ^ byte; a base outside the array, or a bad leaf, breaks the map.
 * Bases are visited once, so a corrupted array with cycles terminates. */
static const char *check_trie(const ag_tk_charsmap *cm)
{
    size_t n = cm->n_units;
    unsigned char *seen = calloc(n, 1);
    size_t *stack = malloc(n * sizeof *stack);
    const char *why = (!seen || !stack) ? "out of memory" : NULL;
    size_t top = 0;
    if (!why) {
        size_t root = unit_offset(cm->units[0]);
        if (root >= n)
            why = "the root's offset points outside the trie";
        else
            stack[top++] = root, seen[root] = 1;
    }
    while (!why && top > 0) {
        size_t base = stack[--top];
        for (unsigned c = 1; c < 256 && !why; c++) {
            size_t pos = base ^ c;
            if (pos >= n || unit_label(cm->units[pos]) != c)
                continue;
            size_t child = pos ^ unit_offset(cm->units[pos]);
            if (child >= n) {
                why = "a unit offset points outside the trie";
                break;
            }
            if (unit_has_leaf(cm->units[pos]))
                why = check_value(cm, unit_value(cm->units[child]));
            if (!seen[child])
                seen[child] = 1, stack[top++] = child;
        }
    }
    free(seen);
    free(stack);
    return why;
}

/* Split the decoded blob into units and strings. */
static const char *parse_blob(ag_tk_charsmap *cm, const unsigned char *blob, size_t n)
{
    if (n < 4)
        return "shorter than its 4-byte header";
    uint32_t trie_size = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
                         (uint32_t)blob[3] << 24;
    /* The crate reads trie_size / 4 units; bytes beyond are strings. */
    size_t nu = trie_size / 4;
    if (nu > (n - 4) / 4)
        return "its trie runs past the end of the blob";
    if (nu == 0)
        return "its trie is empty";
    cm->units = malloc(nu * sizeof *cm->units);
    size_t sl = n - 4 - nu * 4;
    cm->strings = malloc(sl + 1);
    if (!cm->units || !cm->strings)
        return "out of memory";
    for (size_t i = 0; i < nu; i++) {
        const unsigned char *p = blob + 4 + 4 * i;
        cm->units[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    cm->n_units = nu;
    memcpy(cm->strings, blob + 4 + nu * 4, sl);
    cm->strings[sl] = '\0';
    cm->strings_len = sl;
    /* The crate turns the whole string area into a Rust String. */
    for (size_t i = 0; i < sl;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)cm->strings + i,
                                              (utf8proc_ssize_t)(sl - i), &cp);
        if (k <= 0)
            return "its replacement strings are not valid UTF-8";
        i += (size_t)k;
    }
    return check_trie(cm);
}

int ag_tk_charsmap_load(const char *path, const char *b64, size_t n, ag_tk_charsmap **out,
                        ag_error *err)
{
    *out = NULL;
    ag_tk_charsmap *cm = calloc(1, sizeof *cm);
    unsigned char *blob = malloc(n / 4 * 3 + 1);
    if (!cm || !blob) {
        free(cm);
        free(blob);
        return ag_error_set(err, AG_ENOMEM, "%s: normalizer Precompiled: out of memory", path);
    }
    long bn = b64_decode(b64, n, blob);
    const char *why = bn < 0 ? "it is not valid base64" : parse_blob(cm, blob, (size_t)bn);
    free(blob);
    if (why) {
        int st = strcmp(why, "out of memory") ? AG_EFORMAT : AG_ENOMEM;
        ag_tk_charsmap_free(cm);
        return ag_error_set(err, st, "%s: normalizer Precompiled: broken precompiled_charsmap: %s",
                            path, why);
    }
    for (unsigned c = 0; c < 128; c++) {
        unsigned char b = (unsigned char)c;
        cm->ascii[c] = (int32_t)first_prefix(cm, &b, 1);
    }
    *out = cm;
    return AG_OK;
}

void ag_tk_charsmap_free(ag_tk_charsmap *cm)
{
    if (!cm)
        return;
    free(cm->units);
    free(cm->strings);
    free(cm);
}

/* ---- applying ------------------------------------------------------------ */

/* Output in progress: the input bytes from `copied` on are unchanged so far
 * and not yet written. */
typedef struct {
    const char *s;
    size_t copied;
    ag_tk_buf *out;
} emitter;

/* s[at..end) is replaced by the string at `value`. */
static int replace(const ag_tk_charsmap *cm, emitter *e, size_t at, size_t end, int64_t value)
{
    int rc = ag_tk_buf_put(e->out, e->s + e->copied, at - e->copied);
    const char *r = cm->strings + value;
    e->copied = end;
    return rc == AG_OK ? ag_tk_buf_put(e->out, r, strlen(r)) : rc;
}

static int32_t decode_at(const char *s, size_t n, size_t i, size_t *len)
{
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
    *len = k > 0 ? (size_t)k : 1;
    return k > 0 ? cp : 0xFFFD;
}

/* The cluster s[start..end): whole when under 6 bytes and a key is found,
 * else each character alone. */
static int apply_cluster(const ag_tk_charsmap *cm, emitter *e, size_t start, size_t end)
{
    const unsigned char *u = (const unsigned char *)e->s;
    int64_t v = end - start < 6 ? first_prefix(cm, u + start, end - start) : -1;
    if (v >= 0)
        return replace(cm, e, start, end, v);
    int rc = AG_OK;
    for (size_t i = start; i < end && rc == AG_OK;) {
        size_t len;
        decode_at(e->s, end, i, &len);
        v = first_prefix(cm, u + i, len);
        if (v >= 0)
            rc = replace(cm, e, i, i + len, v);
        i += len;
    }
    return rc;
}

int ag_tk_charsmap_apply(const ag_tk_charsmap *cm, const char *s, size_t n, ag_tk_buf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    emitter e = {s, 0, out};
    utf8proc_int32_t state = 0;
    int rc = AG_OK;
    size_t i = 0;
    while (i < n && rc == AG_OK) {
        /* Two ASCII characters other than CR LF always have a cluster
         * break between them: skip the grapheme machinery. The break
         * state after an ASCII character is that character's own class,
         * which state 0 reproduces. */
        if (u[i] < 0x80 && (i + 1 == n || (u[i + 1] < 0x80 && !(u[i] == '\r' && u[i + 1] == '\n')))) {
            if (cm->ascii[u[i]] >= 0)
                rc = replace(cm, &e, i, i + 1, cm->ascii[u[i]]);
            i++;
            state = 0;
            continue;
        }
        size_t start = i, len;
        int32_t prev = decode_at(s, n, i, &len);
        i += len;
        while (i < n) {
            int32_t c = decode_at(s, n, i, &len);
            if (utf8proc_grapheme_break_stateful(prev, c, &state))
                break;
            prev = c;
            i += len;
        }
        rc = apply_cluster(cm, &e, start, i);
    }
    return rc == AG_OK ? ag_tk_buf_put(out, s + e.copied, n - e.copied) : rc;
}
