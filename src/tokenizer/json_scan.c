/* tokenizer/json_scan.c — tokenizer.json with model.vocab and model.merges
 * decoded by a strict scanner instead of jansson's tree (json_scan.h says
 * why). The scanner accepts exactly RFC 8259's grammar for those two values
 * (strings: escapes, surrogate pairs, UTF-8 checked as jansson checks it,
 * "\u0000" allowed in the merges as JSON_ALLOW_NUL does, not in a key;
 * integers without fraction or exponent) and gives up on anything else, leaving the file to jansson
 * alone, so the result never depends on which path read it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "io/io_internal.h"
#include "json_scan.h"

typedef struct {
    const char *p, *end;
} cursor;

/* A growing array of n elements of `size` bytes. -1 out of memory. */
static int grow(void **a, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : 4096;
    void *g = realloc(*a, nc * size);
    if (!g)
        return -1;
    *a = g;
    *cap = nc;
    return 0;
}

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* Past the string at c->p ('"'), escapes not decoded. -1 unterminated. */
static int skip_string(cursor *c)
{
    for (c->p++; c->p < c->end; c->p++) {
        if (*c->p == '"') {
            c->p++;
            return 0;
        }
        if (*c->p == '\\')
            c->p++;
    }
    return -1;
}

/* Past any value: strings and brackets matched, nothing checked (jansson
 * checks what stays in the document). -1 when it runs off the end. */
static int skip_value(cursor *c)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == '"')
        return skip_string(c);
    if (c->p < c->end && (*c->p == '{' || *c->p == '[')) {
        int depth = 0;
        while (c->p < c->end) {
            char ch = *c->p;
            if (ch == '"') {
                if (skip_string(c))
                    return -1;
                continue;
            }
            c->p++;
            depth += (ch == '{' || ch == '[') - (ch == '}' || ch == ']');
            if (depth == 0)
                return 0;
        }
        return -1;
    }
    while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']' && *c->p != ' ' && *c->p != '\n' &&
           *c->p != '\r' && *c->p != '\t')
        c->p++;
    return 0;
}

static int hex4(const char *p, const char *end, uint32_t *v)
{
    if (end - p < 4)
        return -1;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* The escape after a backslash at c->p, written to *o. -1 invalid or a
 * lone surrogate (jansson refuses both). */
static int decode_escape(cursor *c, char **o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = c->p < c->end && *c->p ? strchr(from, *c->p) : NULL;
    if (k) {
        *(*o)++ = to[k - from];
        c->p++;
        return 0;
    }
    uint32_t cp, lo;
    if (c->p >= c->end || *c->p != 'u' || hex4(c->p + 1, c->end, &cp))
        return -1;
    c->p += 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return -1;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || hex4(c->p + 2, c->end, &lo) || lo < 0xDC00 ||
            lo > 0xDFFF)
            return -1;
        c->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *o += utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)*o);
    return 0;
}

/* The string at c->p decoded into *o (advanced past it); *s its start.
 * -1 for anything jansson would refuse: an object key holding "\u0000"
 * (`key`) too, which jansson refuses even under JSON_ALLOW_NUL. */
static int decode_string(cursor *c, char **o, ag_tk_str *s, int key)
{
    if (c->p >= c->end || *c->p != '"')
        return -1;
    c->p++;
    s->s = *o;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            s->n = (size_t)(*o - s->s);
            return 0;
        }
        if (ch == '\\') {
            c->p++;
            char *at = *o;
            if (decode_escape(c, o) || (key && *at == '\0'))
                return -1;
        } else if (ch < 0x20) {
            return -1;
        } else if (ch < 0x80) {
            *(*o)++ = (char)ch;
            c->p++;
        } else {
            utf8proc_int32_t cp;
            utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)c->p, c->end - c->p, &cp);
            if (k <= 0)
                return -1;
            memcpy(*o, c->p, (size_t)k);
            *o += k;
            c->p += k;
        }
    }
    return -1;
}

/* An integer as JSON writes it (-?(0|[1-9][0-9]*), no fraction or
 * exponent), at most 18 digits. */
static int decode_integer(cursor *c, long long *v)
{
    int neg = c->p < c->end && *c->p == '-';
    c->p += neg;
    const char *d = c->p;
    long long x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && c->p - d < 19)
        x = 10 * x + (*c->p++ - '0');
    size_t nd = (size_t)(c->p - d);
    if (nd == 0 || nd > 18 || (nd > 1 && *d == '0'))
        return -1;
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E' || (*c->p >= '0' && *c->p <= '9')))
        return -1;
    *v = neg ? -x : x;
    return 0;
}

/* After an element: ',' (1, more follow) or the closing bracket (0); -1
 * for anything else. */
static int next_element(cursor *c, char close)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

/* The object of [p, end): "token": id members in file order. */
static int scan_vocab(cursor c, char **o, ag_tk_scan *sc)
{
    size_t cap = 0, cap2 = 0;
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '{')
        return -1;
    skip_ws(&c);
    int more = c.p < c.end && *c.p == '}' ? (c.p++, 0) : 1;
    while (more == 1) {
        if (grow((void **)&sc->vocab_key, &cap, sc->n_vocab, sizeof *sc->vocab_key) ||
            grow((void **)&sc->vocab_id, &cap2, sc->n_vocab, sizeof *sc->vocab_id))
            return -1;
        if (decode_string(&c, o, &sc->vocab_key[sc->n_vocab], 1))
            return -1;
        skip_ws(&c);
        if (c.p >= c.end || *c.p++ != ':')
            return -1;
        skip_ws(&c);
        if (decode_integer(&c, &sc->vocab_id[sc->n_vocab++]))
            return -1;
        more = next_element(&c, '}');
    }
    skip_ws(&c);
    return more == 0 && c.p == c.end ? 0 : -1;
}

/* One merge: a string (width 1) or a [string, string] pair (width 2). */
static int scan_merge(cursor *c, char **o, int width, ag_tk_str *out)
{
    if (width == 1)
        return decode_string(c, o, out, 0);
    if (c->p >= c->end || *c->p++ != '[')
        return -1;
    skip_ws(c);
    if (decode_string(c, o, &out[0], 0) || next_element(c, ']') != 1 || decode_string(c, o, &out[1], 0))
        return -1;
    return next_element(c, ']') == 0 ? 0 : -1;
}

/* The array of [p, end): every merge in one form, the first entry's. */
static int scan_merges(cursor c, char **o, ag_tk_scan *sc)
{
    size_t cap = 0;
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '[')
        return -1;
    skip_ws(&c);
    int more = c.p < c.end && *c.p == ']' ? (c.p++, 0) : 1;
    int width = c.p < c.end && *c.p == '[' ? 2 : 1;
    while (more == 1) {
        if (grow((void **)&sc->merge, &cap, width * (sc->n_merges + 1), sizeof *sc->merge) ||
            scan_merge(&c, o, width, &sc->merge[width * sc->n_merges++]))
            return -1;
        more = next_element(&c, ']');
    }
    skip_ws(&c);
    if (more != 0 || c.p != c.end)
        return -1;
    sc->merge_width = width;
    return 0;
}

typedef struct {
    const char *start, *end; /* the value's bytes; NULL: not found */
} span;

/* Whether the raw key [k, k + n) (quotes included) is "name". */
static int key_is(const char *k, size_t n, const char *name)
{
    size_t m = strlen(name);
    return n == m + 2 && !memcmp(k + 1, name, m);
}

/* The members of the object at c->p: the value spans of the keys names[i]
 * into out[i] (a key found twice: -1, as is a malformed object, and a key
 * with an escape, which might spell one of names under another guise). */
static int object_members(cursor *c, const char *const *names, span *out, size_t count)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p++ != '{')
        return -1;
    skip_ws(c);
    int more = c->p < c->end && *c->p == '}' ? (c->p++, 0) : 1;
    while (more == 1) {
        const char *k = c->p;
        if (c->p >= c->end || *c->p != '"' || skip_string(c))
            return -1;
        size_t kn = (size_t)(c->p - k);
        if (memchr(k, '\\', kn))
            return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p++ != ':')
            return -1;
        skip_ws(c);
        const char *v = c->p;
        if (skip_value(c))
            return -1;
        for (size_t i = 0; i < count; i++)
            if (key_is(k, kn, names[i])) {
                if (out[i].start)
                    return -1;
                out[i] = (span){v, c->p};
            }
        more = next_element(c, '}');
    }
    return more;
}

/* The spans of model.vocab and model.merges in buf; -1 when the document's
 * outline is not what the scanner takes. */
static int find_spans(const char *buf, size_t n, span *vocab, span *merges)
{
    static const char *const top[] = {"model"}, *const inner[] = {"vocab", "merges"};
    span model = {0}, in[2] = {{0}};
    cursor c = {buf, buf + n};
    if (object_members(&c, top, &model, 1) != 0 || !model.start || *model.start != '{')
        return -1;
    cursor m = {model.start, model.end};
    if (object_members(&m, inner, in, 2) != 0)
        return -1;
    *vocab = in[0].start && *in[0].start == '{' ? in[0] : (span){0};
    *merges = in[1].start && *in[1].start == '[' ? in[1] : (span){0};
    return 0;
}

/* buf with the spans a and b (either possibly empty, a before b) replaced
 * by their empty brackets: a new buffer of *len bytes. */
static char *cut(const char *buf, size_t n, span a, span b, size_t *len)
{
    char *out = malloc(n + 1), *o = out;
    const char *from = buf;
    span s[2] = {a, b};
    if (!out)
        return NULL;
    for (int i = 0; i < 2; i++) {
        if (!s[i].start)
            continue;
        memcpy(o, from, (size_t)(s[i].start - from));
        o += s[i].start - from;
        *o++ = s[i].start[0];
        *o++ = s[i].start[0] == '{' ? '}' : ']';
        from = s[i].end;
    }
    memcpy(o, from, (size_t)(buf + n - from));
    o += buf + n - from;
    *len = (size_t)(o - out);
    return out;
}

/* The scanned path: 0 with *root and *sc, or -1 (nothing kept) to let
 * jansson read the whole file. */
static int scan_file(const char *path, const char *buf, size_t n, size_t flags, json_t **root, ag_tk_scan *sc)
{
    span v = {0}, m = {0};
    if (find_spans(buf, n, &v, &m) != 0 || (!v.start && !m.start))
        return -1;
    sc->arena = malloc((size_t)(v.end - v.start) + (size_t)(m.end - m.start) + 1);
    char *o = sc->arena;
    if (!o || (v.start && scan_vocab((cursor){v.start, v.end}, &o, sc)) ||
        (m.start && scan_merges((cursor){m.start, m.end}, &o, sc)))
        return -1;
    sc->has_vocab = v.start != NULL;
    size_t len;
    int vfirst = !m.start || (v.start && v.start < m.start);
    char *rest = cut(buf, n, vfirst ? v : m, vfirst ? m : v, &len);
    ag_error ignored = {0};
    int rc = rest ? agi_json_loadb(path, rest, len, flags, root, &ignored) : AG_ENOMEM;
    free(rest);
    return rc == AG_OK ? 0 : -1;
}

int ag_tk_json_load_scanned(const char *path, size_t max_bytes, size_t flags, json_t **root, ag_tk_scan *sc,
                            ag_error *err)
{
    char *buf;
    size_t n;
    *root = NULL;
    memset(sc, 0, sizeof *sc);
    int rc = ag_read_file(path, max_bytes, &buf, &n, err);
    if (rc != AG_OK)
        return rc;
    if (scan_file(path, buf, n, flags, root, sc) != 0) {
        ag_tk_scan_free(sc);
        rc = agi_json_loadb(path, buf, n, flags, root, err);
    }
    free(buf);
    return rc;
}

void ag_tk_scan_free(ag_tk_scan *sc)
{
    free(sc->arena);
    free(sc->vocab_key);
    free(sc->vocab_id);
    free(sc->merge);
    memset(sc, 0, sizeof *sc);
}
