/* tokenizer/pre_tokenizers.c — Hugging Face's pre-tokenizers, as the Rust
 * tokenizers library defines them: the files of tokenizers/src/pre_tokenizers/,
 * NormalizedString::split and tokenizer/pattern.rs.
 *
 * A loaded pre-tokenizer is a flat list of stages (Sequence flattened,
 * BertPreTokenizer as its two splits). Every Rust pre-tokenizer works split
 * by split, so the stages run depth-first: each piece a stage produces goes
 * straight through the following stages before the next piece is made, and
 * no intermediate list is built. Per-call scratch (buffers, PCRE2 match data)
 * lives in a context, so a loaded pre-tokenizer is never written to.
 *
 * Splitting follows NormalizedString::split: a pattern cuts its input into
 * consecutive segments flagged match / non-match (find_matches), `invert`
 * flips the flags, the behaviour turns them into pieces, empty pieces are
 * dropped (PreTokenizedString::split). */
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tk.h"

enum behavior { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS };
enum stage_kind { S_REGEX, S_CLASS, S_WHITESPACE, S_PREFIX_SPACE, S_BYTEMAP, S_METASPACE, S_FIXED };
enum char_class { C_WHITESPACE, C_PUNCT, C_NUMERIC, C_CHAR };
enum prepend { P_ALWAYS, P_FIRST, P_NEVER };

typedef struct {
    int kind;
    int behavior, invert;
    pcre2_code *re;       /* S_REGEX */
    int cls;              /* S_CLASS */
    int32_t ch;           /* S_CLASS C_CHAR: the delimiter */
    char rep[4];          /* S_METASPACE: UTF-8 of the replacement */
    size_t rep_len;
    int scheme, split;
    size_t length;        /* S_FIXED: characters per piece */
} stage;

struct ag_tk_pretok {
    stage *st;
    size_t n, cap;
};

/* GPT-2's pattern, the one ByteLevel's use_regex applies (byte_level.rs),
 * written as Oniguruma reads it and translated like any Split regex. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- byte-level alphabet --------------------------------------------------- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * other 68 to U+0100 onwards in byte order. */
int32_t ag_tk_bytelevel_cp(uint8_t b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        return b;
    if (b <= 32)
        return 256 + b;
    if (b <= 160)
        return 256 + 33 + (b - 127);
    return 256 + 33 + 34; /* 173, the soft hyphen */
}

int ag_tk_bytelevel_byte(int32_t cp)
{
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
        return cp;
    if (cp >= 256 && cp <= 256 + 32)
        return cp - 256;
    if (cp >= 256 + 33 && cp <= 256 + 33 + 33)
        return cp - 256 - 33 + 127;
    return cp == 256 + 33 + 34 ? 173 : -1;
}

/* ---- Oniguruma regexes in PCRE2 ------------------------------------------- */

/* HF compiles Split patterns with Oniguruma (Ruby syntax options). The
 * escapes whose meaning differs in PCRE2 are rewritten: \s (Oniguruma:
 * White_Space; PCRE2 adds U+180E), \w (Alphabetic, marks, Nd, Pc), \h (hex
 * digit, not horizontal space), \uHHHH; the `m` option (Ruby: dot matches
 * newline) becomes `s`. ^ and $ are line anchors in Oniguruma: the pattern is
 * compiled with PCRE2_MULTILINE. Nested classes and class intersections
 * (&&), which PCRE2 would read as literals, are refused. NULL `bad` on
 * success, else what is unsupported. */
#define ONIG_WORD "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"

static int put_str(ag_tk_buf *o, const char *s)
{
    return ag_tk_buf_put(o, s, strlen(s));
}

static int translate_escape(const char *p, size_t n, size_t *i, int in_class, ag_tk_buf *o,
                            const char **bad)
{
    char c = p[*i + 1];
    const char *rep = NULL;
    switch (c) {
    case 's': rep = "\\p{White_Space}"; break;
    case 'S': rep = "\\P{White_Space}"; break;
    case 'w': rep = in_class ? ONIG_WORD : "[" ONIG_WORD "]"; break;
    case 'h': rep = in_class ? "0-9a-fA-F" : "[0-9a-fA-F]"; break;
    case 'W':
    case 'H':
        if (in_class) {
            *bad = c == 'W' ? "\\W inside a character class" : "\\H inside a character class";
            return AG_OK;
        }
        rep = c == 'W' ? "[^" ONIG_WORD "]" : "[^0-9a-fA-F]";
        break;
    case 'u':
        if (*i + 6 <= n && strspn(p + *i + 2, "0123456789abcdefABCDEF") >= 4) {
            int rc = put_str(o, "\\x{");
            if (rc == AG_OK)
                rc = ag_tk_buf_put(o, p + *i + 2, 4);
            if (rc == AG_OK)
                rc = put_str(o, "}");
            *i += 6;
            return rc;
        }
        break;
    default:
        break;
    }
    *i += 2;
    return rep ? put_str(o, rep) : ag_tk_buf_put(o, p + *i - 2, 2);
}

/* "(?imx-imx)" or "(?imx-imx:" at p[i]: copied with m turned into s. */
static int translate_options(const char *p, size_t n, size_t *i, ag_tk_buf *o)
{
    size_t j = *i + 2;
    while (j < n && strchr("imx-", p[j]) && p[j])
        j++;
    if (j == *i + 2 || j >= n || (p[j] != ':' && p[j] != ')'))
        return AG_OK; /* not an option group: the caller copies "(" */
    int rc = put_str(o, "(?");
    for (size_t k = *i + 2; k < j && rc == AG_OK; k++)
        rc = ag_tk_buf_put(o, p[k] == 'm' ? "s" : p + k, 1);
    *i = j;
    return rc;
}

static int onig_to_pcre2(const char *p, size_t n, ag_tk_buf *o, const char **bad)
{
    int rc = AG_OK, in_class = 0;
    size_t i = 0;
    *bad = NULL;
    o->n = 0;
    while (i < n && rc == AG_OK && !*bad) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            rc = translate_escape(p, n, &i, in_class, o, bad);
        } else if (c == '[' && !in_class) {
            in_class = 1;
            size_t j = i + 1;
            if (j < n && p[j] == '^')
                j++;
            if (j < n && p[j] == ']') /* a leading ] is literal */
                j++;
            rc = ag_tk_buf_put(o, p + i, j - i);
            i = j;
        } else if (c == '[' && i + 1 < n && p[i + 1] == ':') { /* POSIX bracket */
            const char *end = strstr(p + i, ":]");
            size_t j = end && (size_t)(end - p) < n ? (size_t)(end - p) + 2 : n;
            rc = ag_tk_buf_put(o, p + i, j - i);
            i = j;
        } else if (c == '[') {
            *bad = "a nested character class";
        } else if (c == '&' && in_class && i + 1 < n && p[i + 1] == '&') {
            *bad = "a class intersection (&&)";
        } else if (c == ']' && in_class) {
            in_class = 0;
            rc = ag_tk_buf_put(o, p + i++, 1);
        } else if (c == '(' && !in_class && i + 1 < n && p[i + 1] == '?') {
            size_t before = i;
            rc = translate_options(p, n, &i, o);
            if (rc == AG_OK && i == before)
                rc = ag_tk_buf_put(o, p + i++, 1);
        } else {
            rc = ag_tk_buf_put(o, p + i++, 1);
        }
    }
    return rc;
}

/* ---- loading ------------------------------------------------------------- */

static stage *new_stage(ag_tk_pretok *p, int kind)
{
    if (AGB_VEC_RESERVE(p->st, p->cap, p->n + 1) != 0)
        return NULL;
    stage *s = &p->st[p->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->behavior = B_ISOLATED;
    return s;
}

/* Compile pattern (Oniguruma syntax, or a literal) for the stage. */
static int compile(const char *path, const char *where, const char *pat, size_t len, int literal,
                   pcre2_code **out, ag_error *err)
{
    ag_tk_buf t = {0};
    const char *bad = NULL;
    int rc = literal ? ag_tk_buf_put(&t, pat, len) : onig_to_pcre2(pat, len, &t, &bad);
    if (rc != AG_OK || bad) {
        free(t.b);
        if (rc != AG_OK)
            return ag_error_set(err, rc, "%s: %s: out of memory", path, where);
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: %s: regex '%.*s' uses %s", path, where,
                            (int)len, pat, bad);
    }
    int ec = 0;
    PCRE2_SIZE eo = 0;
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
    *out = pcre2_compile((PCRE2_SPTR)(t.b ? t.b : ""), t.n, opts, &ec, &eo, NULL);
    free(t.b);
    if (!*out) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ag_error_set(err, AG_EFORMAT, "%s: %s: invalid regex '%.*s': PCRE2: %s", path,
                            where, (int)len, pat, (const char *)msg);
    }
    ag_tk_regex_jit(*out); /* no JIT: the interpreter runs */
    return AG_OK;
}

static int bad_field(const char *path, const char *where, const char *field, const char *want,
                     ag_error *err)
{
    return ag_error_set(err, AG_EFORMAT, "%s: %s: '%s' must be %s", path, where, field, want);
}

/* Optional boolean field (absent or null: def). */
static int get_bool(const char *path, const char *where, json_t *j, const char *key, int def,
                    int *out, ag_error *err)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v))
        *out = def;
    else if (json_is_boolean(v))
        *out = json_is_true(v);
    else
        return bad_field(path, where, key, "true or false", err);
    return AG_OK;
}

static int get_behavior(const char *path, const char *where, json_t *j, int def, int *out,
                        ag_error *err)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    json_t *v = json_object_get(j, "behavior");
    if (!v || json_is_null(v)) {
        *out = def;
        return AG_OK;
    }
    for (int b = 0; json_is_string(v) && b < 5; b++)
        if (strcmp(json_string_value(v), names[b]) == 0) {
            *out = b;
            return AG_OK;
        }
    return bad_field(path, where, "behavior",
                     "Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", err);
}

/* One character as a JSON string (Rust's `char` fields). */
static int get_char(const char *path, const char *where, json_t *j, const char *key,
                    const char *def, char rep[4], size_t *rep_len, int32_t *cp, ag_error *err)
{
    json_t *v = json_object_get(j, key);
    const char *s = v && !json_is_null(v) ? json_string_value(v) : def;
    size_t n = s ? strlen(s) : 0, i = 0;
    if (!s || n == 0 || n > 4)
        return bad_field(path, where, key, "a string of one character", err);
    *cp = ag_tk_next_cp(s, n, &i);
    if (i != n)
        return bad_field(path, where, key, "a string of one character", err);
    memcpy(rep, s, n);
    *rep_len = n;
    return AG_OK;
}

static int load_node(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                     ag_error *err);

static int load_sequence(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                         ag_error *err)
{
    json_t *subs = json_object_get(j, "pretokenizers");
    if (!json_is_array(subs))
        return bad_field(path, where, "pretokenizers", "an array", err);
    for (size_t k = 0; k < json_array_size(subs); k++) {
        char sub[128];
        snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", where, k);
        int rc = load_node(p, path, sub, json_array_get(subs, k), err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

static int load_split(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                      ag_error *err)
{
    json_t *pat = json_object_get(j, "pattern");
    json_t *str = json_object_get(pat, "String"), *re = json_object_get(pat, "Regex");
    json_t *v = json_is_string(str) ? str : re;
    if (!json_is_string(v))
        return bad_field(path, where, "pattern", "{\"String\": ...} or {\"Regex\": ...}", err);
    stage *s = new_stage(p, S_REGEX);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    int rc = get_behavior(path, where, j, -1, &s->behavior, err);
    if (rc == AG_OK && s->behavior < 0)
        rc = bad_field(path, where, "behavior", "given", err);
    if (rc == AG_OK)
        rc = get_bool(path, where, j, "invert", 0, &s->invert, err);
    if (rc == AG_OK)
        rc = compile(path, where, json_string_value(v), json_string_length(v), v == str, &s->re,
                     err);
    return rc;
}

static int load_metaspace(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                          ag_error *err)
{
    stage *s = new_stage(p, S_METASPACE);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    int32_t cp;
    int rc = get_char(path, where, j, "replacement", "\xe2\x96\x81", s->rep, &s->rep_len, &cp, err);
    if (rc == AG_OK)
        rc = get_bool(path, where, j, "split", 1, &s->split, err);
    if (rc != AG_OK)
        return rc;
    json_t *ps = json_object_get(j, "prepend_scheme");
    const char *scheme = json_string_value(ps);
    if (!ps || json_is_null(ps))
        s->scheme = P_ALWAYS;
    else if (scheme && strcmp(scheme, "always") == 0)
        s->scheme = P_ALWAYS;
    else if (scheme && strcmp(scheme, "first") == 0)
        s->scheme = P_FIRST;
    else if (scheme && strcmp(scheme, "never") == 0)
        s->scheme = P_NEVER;
    else
        return bad_field(path, where, "prepend_scheme", "\"always\", \"first\" or \"never\"", err);
    /* The older key: true changes nothing, false means never (and
     * contradicts an explicit scheme other than never, as Rust refuses). */
    int aps;
    rc = get_bool(path, where, j, "add_prefix_space", 1, &aps, err);
    if (rc == AG_OK && !aps) {
        if (ps && !json_is_null(ps) && s->scheme != P_NEVER)
            return ag_error_set(err, AG_EFORMAT,
                                "%s: %s: add_prefix_space false contradicts prepend_scheme '%s'",
                                path, where, scheme);
        s->scheme = P_NEVER;
    }
    return rc;
}

static int load_class(ag_tk_pretok *p, int cls, int behavior)
{
    stage *s = new_stage(p, S_CLASS);
    if (!s)
        return AG_ENOMEM;
    s->cls = cls;
    s->behavior = behavior;
    return AG_OK;
}

/* ByteLevel as three stages: the prefix space, GPT-2's regex (Isolated),
 * then the byte-to-character mapping of every piece (byte_level.rs). */
static int load_bytelevel(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                          ag_error *err)
{
    int prefix = 1, use_regex = 1;
    int rc = get_bool(path, where, j, "add_prefix_space", 1, &prefix, err);
    if (rc == AG_OK)
        rc = get_bool(path, where, j, "use_regex", 1, &use_regex, err);
    if (rc != AG_OK)
        return rc;
    if (prefix && !new_stage(p, S_PREFIX_SPACE))
        return ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    if (use_regex) {
        stage *s = new_stage(p, S_REGEX);
        if (!s)
            return ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
        rc = compile(path, where, GPT2_PATTERN, strlen(GPT2_PATTERN), 0, &s->re, err);
    }
    if (rc == AG_OK && !new_stage(p, S_BYTEMAP))
        rc = ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    return rc;
}

static int load_simple(ag_tk_pretok *p, const char *path, const char *where, const char *type,
                       json_t *j, ag_error *err)
{
    int rc = AG_OK, b = B_ISOLATED;
    if (strcmp(type, "WhitespaceSplit") == 0) {
        rc = load_class(p, C_WHITESPACE, B_REMOVED);
    } else if (strcmp(type, "BertPreTokenizer") == 0) {
        rc = load_class(p, C_WHITESPACE, B_REMOVED);
        if (rc == AG_OK)
            rc = load_class(p, C_PUNCT, B_ISOLATED);
    } else if (strcmp(type, "Whitespace") == 0) {
        rc = new_stage(p, S_WHITESPACE) ? AG_OK : AG_ENOMEM;
    } else if (strcmp(type, "Punctuation") == 0) {
        rc = get_behavior(path, where, j, B_ISOLATED, &b, err);
        if (rc == AG_OK)
            rc = load_class(p, C_PUNCT, b);
    } else if (strcmp(type, "Digits") == 0) {
        int individual;
        rc = get_bool(path, where, j, "individual_digits", 0, &individual, err);
        if (rc == AG_OK)
            rc = load_class(p, C_NUMERIC, individual ? B_ISOLATED : B_CONTIGUOUS);
    }
    if (rc == AG_ENOMEM)
        return ag_error_set(err, rc, "%s: %s: out of memory", path, where);
    return rc;
}

static int load_delimiter(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                          ag_error *err)
{
    char rep[4];
    size_t len;
    int32_t cp;
    int rc = get_char(path, where, j, "delimiter", NULL, rep, &len, &cp, err);
    if (rc == AG_OK && load_class(p, C_CHAR, B_REMOVED) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    if (rc == AG_OK)
        p->st[p->n - 1].ch = cp;
    return rc;
}

static int load_fixed(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                      ag_error *err)
{
    json_t *v = json_object_get(j, "length");
    json_int_t len = !v || json_is_null(v) ? 5 : json_is_integer(v) ? json_integer_value(v) : 0;
    if (len <= 0)
        return bad_field(path, where, "length", "a positive integer", err);
    stage *s = new_stage(p, S_FIXED);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "%s: %s: out of memory", path, where);
    s->length = (size_t)len;
    return AG_OK;
}

static int load_node(ag_tk_pretok *p, const char *path, const char *where, json_t *j,
                     ag_error *err)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type)
        return ag_error_set(err, AG_EFORMAT, "%s: %s has no \"type\"", path, where);
    char w[160];
    snprintf(w, sizeof w, "%s %s", where, type);
    if (strcmp(type, "Sequence") == 0)
        return load_sequence(p, path, where, j, err);
    if (strcmp(type, "Split") == 0)
        return load_split(p, path, w, j, err);
    if (strcmp(type, "ByteLevel") == 0)
        return load_bytelevel(p, path, w, j, err);
    if (strcmp(type, "Metaspace") == 0)
        return load_metaspace(p, path, w, j, err);
    if (strcmp(type, "CharDelimiterSplit") == 0)
        return load_delimiter(p, path, w, j, err);
    if (strcmp(type, "FixedLength") == 0)
        return load_fixed(p, path, w, j, err);
    if (strcmp(type, "WhitespaceSplit") == 0 || strcmp(type, "BertPreTokenizer") == 0 ||
        strcmp(type, "Whitespace") == 0 || strcmp(type, "Punctuation") == 0 ||
        strcmp(type, "Digits") == 0)
        return load_simple(p, path, w, type, j, err);
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported",
                        path, type);
}

int ag_tk_pretok_load(const char *path, json_t *j, ag_tk_pretok **out, ag_error *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return AG_OK;
    if (!json_is_object(j))
        return ag_error_set(err, AG_EFORMAT, "%s: pre_tokenizer must be an object or null", path);
    ag_tk_pretok *p = calloc(1, sizeof *p);
    if (!p)
        return ag_error_set(err, AG_ENOMEM, "%s: pre_tokenizer: out of memory", path);
    int rc = load_node(p, path, "pre_tokenizer", j, err);
    if (rc != AG_OK) {
        ag_tk_pretok_free(p);
        return rc;
    }
    *out = p;
    return AG_OK;
}

void ag_tk_pretok_free(ag_tk_pretok *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        pcre2_code_free(p->st[i].re);
    free(p->st);
    free(p);
}

void ag_tk_pretok_metaspace(const ag_tk_pretok *p, char rep[4], size_t *rep_len, int *never)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (p->st[i].kind == S_METASPACE) {
            memcpy(rep, p->st[i].rep, p->st[i].rep_len);
            *rep_len = p->st[i].rep_len;
            *never = p->st[i].scheme == P_NEVER;
            return;
        }
}

/* ---- running --------------------------------------------------------------- */

/* Spans of a transformed piece's bytes (offsets), one array per stage. */
typedef struct {
    size_t *v;
    size_t cap;
} span_buf;

typedef struct {
    const ag_tk_pretok *p;
    ag_tk_splits *out;
    ag_tk_buf *buf;            /* two per stage */
    span_buf *sb;              /* one per stage */
    pcre2_match_data **md;     /* one per stage, made on first use */
    ag_error *err;
} run_ctx;

/* A piece on its way: its bytes and, for offsets, the original span of
 * each (2 values a byte; NULL without offsets). Every stage passes slices
 * on with their spans; the transforming ones (ByteLevel, Metaspace, the
 * prefix space) give each new byte the span of the character it comes
 * from, and an inserted one the span of the piece's first character, as
 * Rust's NormalizedString::transform and prepend do. */
static int feed(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start);

/* The behaviour of NormalizedString::split over a stream of segments. A
 * piece keeps at_start when it begins at offset 0 of an at_start input: in
 * Rust, the pieces whose original offset is 0. */
typedef struct {
    run_ctx *c;
    size_t next;       /* stage the pieces go to */
    const char *s;
    const size_t *al;  /* spans of s, or NULL */
    int at_start;
    int behavior, invert;
    int have;          /* a pending piece [ps, pe) */
    size_t ps, pe;
    int prev;          /* flag of the previous segment */
} segmenter;

static int emit(segmenter *g, size_t a, size_t b)
{
    return b > a ? feed(g->c, g->next, g->s + a, b - a, g->al ? g->al + 2 * a : NULL, g->at_start && a == 0)
                 : AG_OK;
}

static int seg_add(segmenter *g, size_t a, size_t b, int m)
{
    int rc = AG_OK;
    if (g->invert)
        m = !m;
    switch (g->behavior) {
    case B_ISOLATED:
        return emit(g, a, b);
    case B_REMOVED:
        return m ? AG_OK : emit(g, a, b);
    case B_MERGED_NEXT: /* a match joins the non-match right after it */
        if (g->have) {
            g->have = 0;
            if (!m)
                return emit(g, g->ps, b);
            rc = emit(g, g->ps, g->pe);
        }
        if (rc == AG_OK && m) {
            g->have = 1;
            g->ps = a;
            g->pe = b;
            return AG_OK;
        }
        return rc == AG_OK ? emit(g, a, b) : rc;
    case B_CONTIGUOUS:
        if (g->have && m == g->prev) {
            g->pe = b;
            return AG_OK;
        }
        break;
    case B_MERGED_PREV: /* a match joins the piece before it unless that is a match */
        if (g->have && m && !g->prev) {
            g->pe = b;
            g->prev = m;
            return AG_OK;
        }
        break;
    }
    if (g->have)
        rc = emit(g, g->ps, g->pe);
    g->have = 1;
    g->ps = a;
    g->pe = b;
    g->prev = m;
    return rc;
}

static int seg_end(segmenter *g)
{
    int rc = g->have ? emit(g, g->ps, g->pe) : AG_OK;
    g->have = 0;
    return rc;
}

static segmenter seg_init(run_ctx *c, size_t next, const char *s, const size_t *al, int at_start,
                          int behavior, int invert)
{
    segmenter g = {c, next, s, al, at_start, behavior, invert, 0, 0, 0, 0};
    return g;
}

static pcre2_match_data *match_data(run_ctx *c, size_t i, const pcre2_code *re)
{
    if (!c->md[i])
        c->md[i] = pcre2_match_data_create_from_pattern(re, NULL);
    return c->md[i];
}

static int regex_failed(run_ctx *c, int r, size_t pos)
{
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(r, msg, sizeof msg);
    return ag_error_set(c->err, r == PCRE2_ERROR_NOMEMORY ? AG_ENOMEM : AG_ELIMIT,
                        "pre-tokenizer regex failed at byte %zu: %s", pos, (const char *)msg);
}

/* PCRE2's JIT looks for a pattern's first character with wide aligned reads
 * that may pass the end of the subject (harmless, within the page, but
 * memcheck reports a branch on the bytes read there): the subject is
 * matched from a copy followed by zeroed bytes. The copy costs a memcpy. */
enum { SUBJECT_PAD = 64 };

static const char *padded_copy(ag_tk_buf *o, const char *s, size_t n)
{
    if (n > SIZE_MAX - SUBJECT_PAD)
        return NULL;
    if (o->cap < n + SUBJECT_PAD) {
        char *nb = realloc(o->b, n + SUBJECT_PAD);
        if (!nb)
            return NULL;
        o->b = nb;
        o->cap = n + SUBJECT_PAD;
    }
    memcpy(o->b, s, n);
    memset(o->b + n, 0, SUBJECT_PAD);
    o->n = n;
    return o->b;
}

/* The regex's matches in s, as Oniguruma's find_iter yields them (an empty
 * match right after a match is skipped), fed to g as segments covering s. */
static int regex_segments(run_ctx *c, size_t i, const pcre2_code *re, const char *s, size_t n,
                          segmenter *g)
{
    pcre2_match_data *md = match_data(c, i, re);
    s = padded_copy(&c->buf[2 * i], s, n);
    if (!md || !s)
        return ag_error_set(c->err, AG_ENOMEM, "out of memory while pre-tokenizing");
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t last_end = 0, prev = 0;
    int skip_empty = 0, rc = AG_OK;
    while (last_end <= n && rc == AG_OK) {
        int r = pcre2_match(re, (PCRE2_SPTR)s, n, last_end, PCRE2_NO_UTF_CHECK, md, NULL);
        if (r == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its stack on the heap */
            r = pcre2_match(re, (PCRE2_SPTR)s, n, last_end, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                            md, NULL);
        if (r == PCRE2_ERROR_NOMATCH)
            break;
        if (r < 0)
            return regex_failed(c, r, last_end);
        size_t ms = ov[0], me = ov[1] < ov[0] ? ov[0] : ov[1];
        last_end = me;
        if (ms == me) {
            size_t k = me;
            if (k < n)
                ag_tk_next_cp(s, n, &k);
            last_end = me < n ? k : n + 1;
            if (skip_empty) {
                skip_empty = 0;
                continue;
            }
        } else {
            skip_empty = 1;
        }
        if (prev != ms)
            rc = seg_add(g, prev, ms, 0);
        if (rc == AG_OK)
            rc = seg_add(g, ms, me, 1);
        prev = me;
    }
    if (rc == AG_OK && prev != n)
        rc = seg_add(g, prev, n, 0);
    return rc == AG_OK ? seg_end(g) : rc;
}

static int in_class(const stage *st, int32_t cp)
{
    switch (st->cls) {
    case C_WHITESPACE: return ag_tk_is_whitespace(cp);
    case C_PUNCT: return ag_tk_is_punctuation(cp);
    case C_NUMERIC: return ag_tk_is_numeric(cp);
    default: return cp == st->ch;
    }
}

/* Pattern for a Fn(char) -> bool: every matching char is a match. */
static int class_segments(run_ctx *c, const stage *st, const char *s, size_t n, segmenter *g)
{
    size_t run = 0, i = 0;
    int rc = AG_OK;
    while (i < n && rc == AG_OK) {
        size_t at = i;
        if (!in_class(st, ag_tk_next_cp(s, n, &i)))
            continue;
        if (run < at)
            rc = seg_add(g, run, at, 0);
        if (rc == AG_OK)
            rc = seg_add(g, at, i, 1);
        run = i;
    }
    if (rc == AG_OK && run < n)
        rc = seg_add(g, run, n, 0);
    return rc == AG_OK ? seg_end(g) : rc;
}

/* Whitespace: the matches of \w+|[^\w\s]+ (regex crate) are the pieces, the
 * rest is removed — runs of word characters and runs of other non-space
 * characters. */
static int whitespace_stage(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    size_t start = 0, k = 0;
    int cur = 0, rc = AG_OK; /* class of the run: 0 space, 1 word, 2 other */
    while (k < n && rc == AG_OK) {
        size_t at = k;
        int32_t cp = ag_tk_next_cp(s, n, &k);
        int cls = ag_tk_is_word(cp) ? 1 : ag_tk_is_whitespace(cp) ? 0 : 2;
        if (cls == cur)
            continue;
        if (cur)
            rc = feed(c, i + 1, s + start, at - start, al ? al + 2 * start : NULL, at_start && start == 0);
        cur = cls;
        start = at;
    }
    if (rc == AG_OK && cur)
        rc = feed(c, i + 1, s + start, n - start, al ? al + 2 * start : NULL, at_start && start == 0);
    return rc;
}

static int oom(run_ctx *c)
{
    return ag_error_set(c->err, AG_ENOMEM, "out of memory while pre-tokenizing");
}

int ag_tk_bytelevel_map(const char *s, size_t n, ag_tk_buf *o)
{
    if (n > (SIZE_MAX - 1 - o->n) / 2)
        return AG_ENOMEM;
    if (o->cap < o->n + 2 * n + 1) {
        char *nb = realloc(o->b, o->n + 2 * n + 1);
        if (!nb)
            return AG_ENOMEM;
        o->b = nb;
        o->cap = o->n + 2 * n + 1;
    }
    char *w = o->b + o->n;
    for (size_t k = 0; k < n; k++) {
        int32_t cp = ag_tk_bytelevel_cp((uint8_t)s[k]);
        if (cp < 0x80) {
            *w++ = (char)cp;
        } else {
            *w++ = (char)(0xC0 | (cp >> 6));
            *w++ = (char)(0x80 | (cp & 0x3F));
        }
    }
    o->n = (size_t)(w - o->b);
    o->b[o->n] = '\0';
    return AG_OK;
}

/* The spans of stage i's output of `count` bytes: room in c->sb[i]. */
static size_t *spans_room(run_ctx *c, size_t i, size_t count)
{
    span_buf *b = &c->sb[i];
    if (count > SIZE_MAX / (2 * sizeof *b->v) || AGB_VEC_RESERVE(b->v, b->cap, 2 * count + 2) != 0)
        return NULL;
    return b->v;
}

/* `count` copies of the span sp at w; returns w moved past them. */
static size_t *spans_fill(size_t *w, const size_t *sp, size_t count)
{
    for (size_t k = 0; k < count; k++, w += 2) {
        w[0] = sp[0];
        w[1] = sp[1];
    }
    return w;
}

/* ByteLevel's add_prefix_space: ' ' before a piece not starting with one. */
static int prefix_stage(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    if (s[0] == ' ')
        return feed(c, i + 1, s, n, al, at_start);
    ag_tk_buf *t = &c->buf[2 * i];
    t->n = 0;
    if (ag_tk_buf_put(t, " ", 1) != AG_OK || ag_tk_buf_put(t, s, n) != AG_OK)
        return oom(c);
    size_t *w = al ? spans_room(c, i, n + 1) : NULL;
    if (al && !w)
        return oom(c);
    if (w)
        memcpy(spans_fill(w, al, 1), al, 2 * n * sizeof *al);
    return feed(c, i + 1, t->b, t->n, w, at_start);
}

static int bytemap_stage(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    ag_tk_buf *o = &c->buf[2 * i];
    o->n = 0;
    if (ag_tk_bytelevel_map(s, n, o) != AG_OK)
        return oom(c);
    size_t *w = al ? spans_room(c, i, o->n) : NULL, *at = w;
    if (al && !w)
        return oom(c);
    for (size_t k = 0; w && k < n; k++) /* byte k becomes one or two bytes */
        at = spans_fill(at, al + 2 * k, ag_tk_bytelevel_cp((uint8_t)s[k]) < 0x80 ? 1 : 2);
    return feed(c, i + 1, o->b, o->n, w, at_start);
}

/* Metaspace's spans: the prepended replacement takes the first character's,
 * a replaced space keeps its own. */
static size_t *metaspace_spans(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int prepend,
                               size_t out_n)
{
    size_t rl = c->p->st[i].rep_len, *w = spans_room(c, i, out_n), *at = w;
    if (!w)
        return NULL;
    if (prepend)
        at = spans_fill(at, al, rl);
    for (size_t k = 0; k < n; k++)
        at = spans_fill(at, al + 2 * k, s[k] == ' ' ? rl : 1);
    return w;
}

static int metaspace_stage(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    const stage *st = &c->p->st[i];
    ag_tk_buf *o = &c->buf[2 * i];
    o->n = 0;
    /* Rust replaces first, then asks whether the text starts with the
     * replacement: a leading space counts as one. */
    int starts = s[0] == ' ' || (n >= st->rep_len && memcmp(s, st->rep, st->rep_len) == 0);
    int prepend = !starts && (st->scheme == P_ALWAYS || (st->scheme == P_FIRST && at_start));
    int rc = prepend ? ag_tk_buf_put(o, st->rep, st->rep_len) : AG_OK;
    for (size_t k = 0, run = 0; rc == AG_OK && k <= n; k++) {
        if (k < n && s[k] != ' ')
            continue;
        rc = ag_tk_buf_put(o, s + run, k - run);
        if (rc == AG_OK && k < n)
            rc = ag_tk_buf_put(o, st->rep, st->rep_len);
        run = k + 1;
    }
    const size_t *w = rc == AG_OK && al ? metaspace_spans(c, i, s, n, al, prepend, o->n) : NULL;
    if (rc != AG_OK || (al && !w))
        return oom(c);
    if (!st->split)
        return feed(c, i + 1, o->b, o->n, w, at_start);
    segmenter g = seg_init(c, i + 1, o->b, w, at_start, B_MERGED_NEXT, 0);
    size_t run = 0;
    for (size_t k = 0; k + st->rep_len <= o->n && rc == AG_OK;) {
        if (memcmp(o->b + k, st->rep, st->rep_len) != 0) {
            ag_tk_next_cp(o->b, o->n, &k);
            continue;
        }
        if (run < k)
            rc = seg_add(&g, run, k, 0);
        if (rc == AG_OK)
            rc = seg_add(&g, k, k + st->rep_len, 1);
        k += st->rep_len;
        run = k;
    }
    if (rc == AG_OK && run < o->n)
        rc = seg_add(&g, run, o->n, 0);
    return rc == AG_OK ? seg_end(&g) : rc;
}

/* FixedLength: pieces of `length` characters. */
static int fixed_stage(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    size_t start = 0, k = 0, count = 0;
    int rc = AG_OK;
    while (k < n && rc == AG_OK) {
        ag_tk_next_cp(s, n, &k);
        if (++count == c->p->st[i].length || k >= n) {
            rc = feed(c, i + 1, s + start, k - start, al ? al + 2 * start : NULL, at_start && start == 0);
            start = k;
            count = 0;
        }
    }
    return rc;
}

/* One piece through stages i.. and into the output. */
static int feed(run_ctx *c, size_t i, const char *s, size_t n, const size_t *al, int at_start)
{
    if (n == 0)
        return AG_OK;
    if (i == c->p->n)
        return ag_tk_splits_push_al(c->out, s, n, at_start, -1, al) == AG_OK ? AG_OK : oom(c);
    const stage *st = &c->p->st[i];
    segmenter g = seg_init(c, i + 1, s, al, at_start, st->behavior, st->invert);
    switch (st->kind) {
    case S_REGEX: return regex_segments(c, i, st->re, s, n, &g);
    case S_CLASS: return class_segments(c, st, s, n, &g);
    case S_WHITESPACE: return whitespace_stage(c, i, s, n, al, at_start);
    case S_PREFIX_SPACE: return prefix_stage(c, i, s, n, al, at_start);
    case S_BYTEMAP: return bytemap_stage(c, i, s, n, al, at_start);
    case S_METASPACE: return metaspace_stage(c, i, s, n, al, at_start);
    default: return fixed_stage(c, i, s, n, al, at_start);
    }
}

int ag_tk_pretokenize(const ag_tk_pretok *p, const ag_tk_splits *in, ag_tk_splits *out,
                      ag_error *err)
{
    static const ag_tk_pretok none = {NULL, 0, 0};
    run_ctx c = {p ? p : &none, out, NULL, NULL, NULL, err};
    size_t ns = c.p->n;
    c.buf = calloc(2 * ns + 1, sizeof *c.buf);
    c.sb = calloc(ns + 1, sizeof *c.sb);
    c.md = calloc(ns + 1, sizeof *c.md);
    int rc = c.buf && c.sb && c.md ? AG_OK : oom(&c);
    for (size_t k = 0; k < in->n && rc == AG_OK; k++) {
        const ag_tk_split *sp = &in->v[k];
        if (sp->id >= 0)
            rc = ag_tk_splits_push_al(out, sp->s, sp->n, sp->at_start, sp->id, sp->al) == AG_OK ? AG_OK
                                                                                           : oom(&c);
        else
            rc = feed(&c, 0, sp->s, sp->n, sp->al, sp->at_start);
    }
    for (size_t k = 0; c.buf && k < 2 * ns; k++)
        free(c.buf[k].b);
    for (size_t k = 0; c.sb && k < ns; k++)
        free(c.sb[k].v);
    free(c.sb);
    for (size_t k = 0; c.md && k < ns; k++)
        pcre2_match_data_free(c.md[k]);
    free(c.buf);
    free(c.md);
    return rc;
}
