/* npy_header.c — the header dict of a .npy file, read exactly as NumPy 1.24
 * reads it (numpy/lib/format.py, _read_array_header): the text is a Python
 * expression that ast.literal_eval turns into a dict whose keys are exactly
 * 'descr', 'fortran_order' and 'shape'. So the grammar is Python 3.11's for
 * literals: strings with every prefix, escape and implicit concatenation,
 * numbers in every base with underscores and one sign, complex sums such as
 * 1+2j, True/False/None/..., tuples, lists, sets, set(), dicts, parentheses,
 * comments, and line breaks inside brackets; a key given twice keeps its last
 * value, as a dict display does, so the earlier value only has to be a valid
 * literal. Versions 1.0 and 2.0 are latin-1 and have Python 2 'L' suffixes
 * removed first (_filter_header); 3.0 is UTF-8. docs/formats.md has the
 * grammar and the few layouts where this reader and NumPy differ. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <utf8proc.h>

#include "npy_header.h"

#define MAX_LEVEL 200           /* CPython: "too many nested parentheses" beyond */
#define MAX_DECIMAL_DIGITS 4300 /* sys.int_info.default_max_str_digits */
#define TEXT_MAX 48

enum kind { K_STR, K_BYTES, K_INT, K_FLOAT, K_COMPLEX, K_BOOL, K_NONE, K_ELLIPSIS,
            K_TUPLE, K_LIST, K_SET, K_DICT };
/* The node literal_eval sees (parentheses make none): a constant, a signed
 * number, a complex sum, or a display/call. */
enum form { F_CONST, F_UNARY, F_BINOP, F_DISPLAY };

/* What a literal is, as far as the header needs to know. */
typedef struct {
    enum kind kind;
    enum form form;
    int hashable;
    char text[TEXT_MAX]; /* K_STR, K_BYTES: the value as UTF-8, cut */
    size_t len;          /* its full length */
    int truth;           /* K_BOOL */
    int negative, big;   /* K_INT: sign (of a non-zero value), beyond size_t */
    size_t mag;          /* K_INT: magnitude */
    int count, ints;     /* K_TUPLE: length, all elements K_INT */
    int neg, huge;       /* K_TUPLE: some element negative, some beyond size_t */
    size_t dims[AG_MAX_DIMS];
} pyval;

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"descr", "fortran_order", "shape"};

typedef struct {
    const unsigned char *s;
    size_t n, i;
    int latin1; /* versions 1.0 and 2.0 */
    int level;  /* open brackets */
    const char *path;
    ag_error *err;
    /* the entries of the header dict */
    pyval entry[KEY_COUNT];
    int have[KEY_COUNT];
    int unexpected;    /* a key that is none of the three */
    char odd_key[TEXT_MAX];
} hparser;

/* ---- characters ------------------------------------------------------------ */

static int at(const hparser *p, size_t k)
{
    return p->i + k < p->n ? p->s[p->i + k] : -1;
}

static int is_blank(int c)
{
    return c == ' ' || c == '\t' || c == '\f';
}

/* Length of the line break at i (\n, \r\n or \r, as Python reads them), or 0. */
static size_t newline_at(const hparser *p, size_t k)
{
    int c = at(p, k);
    return c == '\n' ? 1 : c == '\r' ? (at(p, k + 1) == '\n' ? 2 : 1) : 0;
}

static int ident_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c >= 0x80;
}

static int bad(hparser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(hparser *p, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ag_error_set(p->err, AG_EFORMAT, "%s: malformed .npy header: %s (at byte %zu of the header dict)",
                        p->path, what, p->i);
}

/* Inside brackets: blanks, line breaks, comments and backslash-newlines.
 * Outside: blanks only (a line break ends the expression). */
static int skip_blank(hparser *p)
{
    for (;;) {
        int c = at(p, 0);
        size_t nl = newline_at(p, 0);
        if (is_blank(c)) {
            p->i++;
        } else if (p->level > 0 && nl) {
            p->i += nl;
        } else if (p->level > 0 && c == '#') {
            while (p->i < p->n && !newline_at(p, 0))
                p->i++;
        } else if (c == '\\' && p->level > 0) {
            if (!(nl = newline_at(p, 1)))
                return bad(p, "a backslash outside a string must end its line");
            p->i += 1 + nl;
        } else {
            return AG_OK;
        }
    }
}

static int open_bracket(hparser *p)
{
    if (++p->level > MAX_LEVEL)
        return bad(p, "more than %d nested brackets", MAX_LEVEL);
    p->i++;
    return skip_blank(p);
}

/* Consume `c` (after blanks) or fail. */
static int expect(hparser *p, int c, const char *what)
{
    int rc = skip_blank(p);
    if (rc != AG_OK)
        return rc;
    if (at(p, 0) != c)
        return bad(p, "expected %s", what);
    p->i++;
    if (c == ')' || c == ']' || c == '}')
        p->level--;
    return AG_OK;
}

/* ---- strings ---------------------------------------------------------------- */

static void put_byte(pyval *v, unsigned b)
{
    if (v->len + 1 < TEXT_MAX)
        v->text[v->len] = (char)b, v->text[v->len + 1] = '\0';
    v->len++;
}

/* A code point as UTF-8 (surrogates too: such a string matches no key). */
static void put_cp(pyval *v, unsigned long cp)
{
    if (v->kind == K_BYTES) {
        put_byte(v, (unsigned)(cp & 0xFF));
    } else if (cp < 0x80) {
        put_byte(v, (unsigned)cp);
    } else if (cp < 0x800) {
        put_byte(v, 0xC0 | (unsigned)(cp >> 6));
        put_byte(v, 0x80 | (unsigned)(cp & 0x3F));
    } else if (cp < 0x10000) {
        put_byte(v, 0xE0 | (unsigned)(cp >> 12));
        put_byte(v, 0x80 | (unsigned)((cp >> 6) & 0x3F));
        put_byte(v, 0x80 | (unsigned)(cp & 0x3F));
    } else {
        put_byte(v, 0xF0 | (unsigned)(cp >> 18));
        put_byte(v, 0x80 | (unsigned)((cp >> 12) & 0x3F));
        put_byte(v, 0x80 | (unsigned)((cp >> 6) & 0x3F));
        put_byte(v, 0x80 | (unsigned)(cp & 0x3F));
    }
}

/* The Unicode names \N{...} can give here: those of printable ASCII (any other
 * character fits no key and no descr; see docs/formats.md). */
static const char *const ascii_names[95] = {
    "SPACE", "EXCLAMATION MARK", "QUOTATION MARK", "NUMBER SIGN", "DOLLAR SIGN", "PERCENT SIGN",
    "AMPERSAND", "APOSTROPHE", "LEFT PARENTHESIS", "RIGHT PARENTHESIS", "ASTERISK", "PLUS SIGN",
    "COMMA", "HYPHEN-MINUS", "FULL STOP", "SOLIDUS", "DIGIT ZERO", "DIGIT ONE", "DIGIT TWO",
    "DIGIT THREE", "DIGIT FOUR", "DIGIT FIVE", "DIGIT SIX", "DIGIT SEVEN", "DIGIT EIGHT",
    "DIGIT NINE", "COLON", "SEMICOLON", "LESS-THAN SIGN", "EQUALS SIGN", "GREATER-THAN SIGN",
    "QUESTION MARK", "COMMERCIAL AT", "LATIN CAPITAL LETTER A", "LATIN CAPITAL LETTER B",
    "LATIN CAPITAL LETTER C", "LATIN CAPITAL LETTER D", "LATIN CAPITAL LETTER E",
    "LATIN CAPITAL LETTER F", "LATIN CAPITAL LETTER G", "LATIN CAPITAL LETTER H",
    "LATIN CAPITAL LETTER I", "LATIN CAPITAL LETTER J", "LATIN CAPITAL LETTER K",
    "LATIN CAPITAL LETTER L", "LATIN CAPITAL LETTER M", "LATIN CAPITAL LETTER N",
    "LATIN CAPITAL LETTER O", "LATIN CAPITAL LETTER P", "LATIN CAPITAL LETTER Q",
    "LATIN CAPITAL LETTER R", "LATIN CAPITAL LETTER S", "LATIN CAPITAL LETTER T",
    "LATIN CAPITAL LETTER U", "LATIN CAPITAL LETTER V", "LATIN CAPITAL LETTER W",
    "LATIN CAPITAL LETTER X", "LATIN CAPITAL LETTER Y", "LATIN CAPITAL LETTER Z",
    "LEFT SQUARE BRACKET", "REVERSE SOLIDUS", "RIGHT SQUARE BRACKET", "CIRCUMFLEX ACCENT",
    "LOW LINE", "GRAVE ACCENT", "LATIN SMALL LETTER A", "LATIN SMALL LETTER B",
    "LATIN SMALL LETTER C", "LATIN SMALL LETTER D", "LATIN SMALL LETTER E", "LATIN SMALL LETTER F",
    "LATIN SMALL LETTER G", "LATIN SMALL LETTER H", "LATIN SMALL LETTER I", "LATIN SMALL LETTER J",
    "LATIN SMALL LETTER K", "LATIN SMALL LETTER L", "LATIN SMALL LETTER M", "LATIN SMALL LETTER N",
    "LATIN SMALL LETTER O", "LATIN SMALL LETTER P", "LATIN SMALL LETTER Q", "LATIN SMALL LETTER R",
    "LATIN SMALL LETTER S", "LATIN SMALL LETTER T", "LATIN SMALL LETTER U", "LATIN SMALL LETTER V",
    "LATIN SMALL LETTER W", "LATIN SMALL LETTER X", "LATIN SMALL LETTER Y", "LATIN SMALL LETTER Z",
    "LEFT CURLY BRACKET", "VERTICAL LINE", "RIGHT CURLY BRACKET", "TILDE",
};

static int hex_value(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* \xhh, \uhhhh, \Uhhhhhhhh: exactly `digits` hex digits after the letter. */
static int hex_escape(hparser *p, int digits, pyval *v)
{
    unsigned long cp = 0;
    for (int k = 1; k <= digits; k++) {
        int h = hex_value(at(p, (size_t)k));
        if (h < 0)
            return bad(p, "truncated \\%c escape", at(p, 0));
        cp = cp * 16 + (unsigned long)h;
    }
    if (cp > 0x10FFFF)
        return bad(p, "\\U escape beyond U+10FFFF");
    p->i += 1 + (size_t)digits;
    put_cp(v, cp);
    return AG_OK;
}

static int name_escape(hparser *p, pyval *v)
{
    const char *name = (const char *)p->s + p->i + 2, *end;
    if (at(p, 1) != '{' || !(end = memchr(name, '}', p->n - p->i - 2)))
        return bad(p, "malformed \\N character escape");
    for (int c = 0; c < 95; c++)
        if (strlen(ascii_names[c]) == (size_t)(end - name) &&
            strncasecmp(ascii_names[c], name, (size_t)(end - name)) == 0) {
            put_cp(v, (unsigned long)(0x20 + c));
            p->i = (size_t)(end - (const char *)p->s) + 1;
            return AG_OK;
        }
    return bad(p, "\\N{...} names no printable ASCII character");
}

/* One escape sequence of a non-raw literal; p->i is at the character after
 * the backslash. */
static int escape(hparser *p, pyval *v)
{
    static const char simple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
    int c = at(p, 0);
    size_t nl = newline_at(p, 0);
    if (nl) { /* a backslash-newline joins the lines */
        p->i += nl;
        return AG_OK;
    }
    for (const char *e = simple; *e; e += 2)
        if (c == *e) {
            put_cp(v, (unsigned char)e[1]);
            p->i++;
            return AG_OK;
        }
    if (c >= '0' && c <= '7') {
        unsigned long cp = 0;
        for (int k = 0; k < 3 && at(p, 0) >= '0' && at(p, 0) <= '7'; k++)
            cp = cp * 8 + (unsigned long)(at(p, 0) - '0'), p->i++;
        put_cp(v, cp);
        return AG_OK;
    }
    if (c == 'x' || (v->kind == K_STR && (c == 'u' || c == 'U')))
        return hex_escape(p, c == 'x' ? 2 : c == 'u' ? 4 : 8, v);
    if (c == 'N' && v->kind == K_STR)
        return name_escape(p, v);
    put_cp(v, '\\'); /* not an escape: the backslash stays */
    return AG_OK;
}

/* Length of a string prefix (r, u, b, f, rb, br, rf, fr in any case) followed
 * by a quote at p->i, or -1 when no string starts here. */
static int string_prefix(const hparser *p)
{
    int k = 0;
    char pre[3] = {0};
    while (k < 3 && at(p, (size_t)k) > 0 && strchr("rRuUbBfF", at(p, (size_t)k)))
        pre[k] = (char)(at(p, (size_t)k) | 0x20), k++;
    if (at(p, (size_t)k) != '\'' && at(p, (size_t)k) != '"')
        return -1;
    static const char *const valid[] = {"", "r", "u", "b", "f", "rb", "br", "rf", "fr"};
    for (size_t j = 0; j < sizeof valid / sizeof *valid; j++)
        if (strcmp(pre, valid[j]) == 0)
            return k;
    return -1;
}

/* One source character of a string body (p->i not at a backslash). */
static int string_char(hparser *p, pyval *v, int triple)
{
    int c = at(p, 0);
    size_t nl = newline_at(p, 0);
    if (nl) {
        if (!triple)
            return bad(p, "unterminated string");
        p->i += nl;
        put_cp(v, '\n');
    } else if (c >= 0x80 && v->kind == K_BYTES) {
        return bad(p, "bytes can only contain ASCII literal characters");
    } else if (c >= 0x80 && p->latin1) {
        put_cp(v, (unsigned long)c);
        p->i++;
    } else {
        put_byte(v, (unsigned)c); /* UTF-8 (checked) is copied byte by byte */
        p->i++;
    }
    return AG_OK;
}

/* In a raw literal the backslash stays, and keeps the character after it
 * (a quote, a line break) inside the string. */
static int raw_backslash(hparser *p, pyval *v)
{
    size_t nl = newline_at(p, 0);
    put_cp(v, '\\');
    if (!nl)
        return string_char(p, v, 1);
    put_cp(v, '\n');
    p->i += nl;
    return AG_OK;
}

/* One string token, appended to v (whose kind, K_STR or K_BYTES, is set by
 * the first token of an implicit concatenation). */
static int string_token(hparser *p, pyval *v, int first)
{
    int k = string_prefix(p), raw = 0, bytes = 0;
    for (int j = 0; j < k; j++) {
        int c = at(p, (size_t)j) | 0x20;
        if (c == 'f')
            return bad(p, "an f-string is not a literal");
        raw |= c == 'r';
        bytes |= c == 'b';
    }
    if (!first && bytes != (v->kind == K_BYTES))
        return bad(p, "cannot mix bytes and str literals");
    v->kind = bytes ? K_BYTES : K_STR;
    p->i += (size_t)k;
    int q = at(p, 0), triple = at(p, 1) == q && at(p, 2) == q;
    p->i += triple ? 3 : 1;
    for (;;) {
        int c = at(p, 0), rc = AG_OK;
        if (c < 0)
            return bad(p, "unterminated string");
        if (c == q && (!triple || (at(p, 1) == q && at(p, 2) == q))) {
            p->i += triple ? 3 : 1;
            return AG_OK;
        }
        if (c == '\\') {
            p->i++;
            if (at(p, 0) < 0)
                return bad(p, "unterminated string");
            if (raw)
                rc = raw_backslash(p, v);
            else
                rc = escape(p, v);
        } else {
            rc = string_char(p, v, triple);
        }
        if (rc != AG_OK)
            return rc;
    }
}

/* Adjacent string literals are one constant. */
static int strings(hparser *p, pyval *v)
{
    int rc = string_token(p, v, 1);
    while (rc == AG_OK && (rc = skip_blank(p)) == AG_OK && string_prefix(p) >= 0)
        rc = string_token(p, v, 0);
    v->form = F_CONST;
    v->hashable = 1;
    return rc;
}

/* ---- numbers ---------------------------------------------------------------- */

/* Digits of `base` with single underscores between them; at least one.
 * Accumulates the value into *mag (setting *big on overflow) and counts them. */
static int digits(hparser *p, int base, size_t *mag, int *big, size_t *count)
{
    size_t n = 0;
    for (;;) {
        int d = hex_value(at(p, 0));
        if (d < 0 || d >= base)
            break;
        if (*mag > (SIZE_MAX - (size_t)d) / (size_t)base)
            *big = 1;
        *mag = *mag * (size_t)base + (size_t)d;
        n++;
        p->i++;
        if (at(p, 0) == '_') {
            int e = hex_value(at(p, 1));
            if (e < 0 || e >= base)
                return bad(p, "invalid number: '_' must separate digits");
            p->i++;
        }
    }
    if (count)
        *count += n;
    return n ? AG_OK : bad(p, "invalid number");
}

/* Fraction, exponent and imaginary suffix of a decimal number. Sets kind. */
static int decimal_tail(hparser *p, pyval *v)
{
    size_t junk = 0;
    int jbig = 0, rc = AG_OK;
    if (at(p, 0) == '.') {
        p->i++;
        v->kind = K_FLOAT;
        if (at(p, 0) >= '0' && at(p, 0) <= '9')
            rc = digits(p, 10, &junk, &jbig, NULL);
    }
    if (rc == AG_OK && (at(p, 0) | 0x20) == 'e' &&
        ((at(p, 1) >= '0' && at(p, 1) <= '9') ||
         ((at(p, 1) == '+' || at(p, 1) == '-') && at(p, 2) >= '0' && at(p, 2) <= '9'))) {
        p->i += at(p, 1) == '+' || at(p, 1) == '-' ? 2 : 1;
        v->kind = K_FLOAT;
        rc = digits(p, 10, &junk, &jbig, NULL);
    }
    if (rc == AG_OK && (at(p, 0) | 0x20) == 'j') {
        p->i++;
        v->kind = K_COMPLEX;
    }
    return rc;
}

/* Python 2's 'L' after a number, which versions 1.0 and 2.0 drop. */
static void skip_long_suffix(hparser *p)
{
    size_t save = p->i;
    while (is_blank(at(p, 0)) || (at(p, 0) == '\\' && newline_at(p, 1)))
        p->i += at(p, 0) == '\\' ? 1 + newline_at(p, 1) : 1;
    if (at(p, 0) == 'L' && !ident_char(at(p, 1)))
        p->i++;
    else
        p->i = save;
}

static int number(hparser *p, pyval *v)
{
    int rc, c1 = at(p, 1) | 0x20;
    size_t count = 0;
    v->kind = K_INT;
    v->form = F_CONST;
    v->hashable = 1;
    if (at(p, 0) == '0' && (c1 == 'x' || c1 == 'o' || c1 == 'b')) {
        p->i += 2;
        if (at(p, 0) == '_')
            p->i++;
        rc = digits(p, c1 == 'x' ? 16 : c1 == 'o' ? 8 : 2, &v->mag, &v->big, NULL);
    } else {
        size_t start = p->i;
        rc = at(p, 0) == '.' ? AG_OK : digits(p, 10, &v->mag, &v->big, &count);
        if (rc == AG_OK)
            rc = decimal_tail(p, v);
        int nonzero = v->mag != 0 || v->big;
        /* leading zeros make a decimal integer invalid, unless all are 0 */
        if (rc == AG_OK && v->kind == K_INT && p->s[start] == '0' && nonzero)
            return bad(p, "leading zeros in a decimal integer");
        if (rc == AG_OK && v->kind == K_INT && nonzero && count > MAX_DECIMAL_DIGITS)
            return bad(p, "a decimal integer of more than %d digits", MAX_DECIMAL_DIGITS);
    }
    if (rc != AG_OK)
        return rc;
    if (p->latin1)
        skip_long_suffix(p);
    if (ident_char(at(p, 0)))
        return bad(p, "invalid number");
    return AG_OK;
}

/* ---- values ----------------------------------------------------------------- */

static int parse_expr(hparser *p, pyval *v, int top);

static void tuple_add(pyval *t, const pyval *e)
{
    if (t->count < AG_MAX_DIMS)
        t->dims[t->count] = e->mag;
    t->count++;
    t->ints &= e->kind == K_INT;
    t->neg |= e->kind == K_INT && e->negative;
    t->huge |= e->kind == K_INT && e->big;
    t->hashable &= e->hashable;
}

/* ( ), (x), (x,), (x, y, ...) */
static int paren(hparser *p, pyval *v, int top)
{
    int rc = open_bracket(p);
    if (rc == AG_OK && at(p, 0) == ')') {
        *v = (pyval){.kind = K_TUPLE, .form = F_DISPLAY, .hashable = 1, .ints = 1};
        return expect(p, ')', "')'");
    }
    pyval e;
    if (rc != AG_OK || (rc = parse_expr(p, &e, top)) != AG_OK || (rc = skip_blank(p)) != AG_OK)
        return rc;
    if (at(p, 0) != ',') {
        *v = e; /* parentheses make no node */
        return expect(p, ')', "',' or ')'");
    }
    *v = (pyval){.kind = K_TUPLE, .form = F_DISPLAY, .hashable = 1, .ints = 1};
    tuple_add(v, &e);
    while (rc == AG_OK && at(p, 0) == ',') {
        p->i++;
        if ((rc = skip_blank(p)) != AG_OK || at(p, 0) == ')')
            break;
        if ((rc = parse_expr(p, &e, 0)) == AG_OK && (rc = skip_blank(p)) == AG_OK)
            tuple_add(v, &e);
    }
    return rc != AG_OK ? rc : expect(p, ')', "',' or ')'");
}

/* [x, y, ...] */
static int list(hparser *p, pyval *v)
{
    int rc = open_bracket(p);
    *v = (pyval){.kind = K_LIST, .form = F_DISPLAY};
    while (rc == AG_OK && at(p, 0) != ']') {
        pyval e;
        if ((rc = parse_expr(p, &e, 0)) != AG_OK || (rc = skip_blank(p)) != AG_OK)
            break;
        if (at(p, 0) != ',')
            break;
        p->i++;
        rc = skip_blank(p);
    }
    return rc != AG_OK ? rc : expect(p, ']', "',' or ']'");
}

/* One entry of the header dict: the last value of a key wins. */
static void record_entry(hparser *p, const pyval *key, const pyval *value)
{
    for (int k = 0; key->kind == K_STR && k < KEY_COUNT; k++)
        if (key->len == strlen(key_names[k]) && memcmp(key->text, key_names[k], key->len) == 0) {
            p->entry[k] = *value;
            p->have[k] = 1;
            return;
        }
    if (!p->unexpected++)
        snprintf(p->odd_key, sizeof p->odd_key, "%s", key->kind == K_STR ? key->text : "");
}

/* The rest of {k: v, ...} after its first key. */
static int dict_rest(hparser *p, pyval *key, int top)
{
    int rc;
    for (;;) {
        pyval value;
        if (!key->hashable)
            return bad(p, "unhashable dict key");
        if ((rc = expect(p, ':', "':'")) != AG_OK || (rc = skip_blank(p)) != AG_OK ||
            (rc = parse_expr(p, &value, 0)) != AG_OK || (rc = skip_blank(p)) != AG_OK)
            return rc;
        if (top)
            record_entry(p, key, &value);
        if (at(p, 0) != ',')
            return expect(p, '}', "',' or '}'");
        p->i++;
        if ((rc = skip_blank(p)) != AG_OK || at(p, 0) == '}')
            return rc != AG_OK ? rc : expect(p, '}', "'}'");
        if ((rc = parse_expr(p, key, 0)) != AG_OK)
            return rc;
    }
}

/* {}, {k: v, ...} or {x, y, ...} */
static int brace(hparser *p, pyval *v, int top)
{
    int rc = open_bracket(p);
    *v = (pyval){.kind = K_DICT, .form = F_DISPLAY};
    if (rc != AG_OK || at(p, 0) == '}')
        return rc != AG_OK ? rc : expect(p, '}', "'}'");
    pyval e;
    if ((rc = parse_expr(p, &e, 0)) != AG_OK || (rc = skip_blank(p)) != AG_OK)
        return rc;
    if (at(p, 0) == ':')
        return dict_rest(p, &e, top);
    v->kind = K_SET;
    for (;;) {
        if (!e.hashable)
            return bad(p, "unhashable set element");
        if (at(p, 0) != ',')
            return expect(p, '}', "',' or '}'");
        p->i++;
        if ((rc = skip_blank(p)) != AG_OK || at(p, 0) == '}')
            return rc != AG_OK ? rc : expect(p, '}', "'}'");
        if ((rc = parse_expr(p, &e, 0)) != AG_OK || (rc = skip_blank(p)) != AG_OK)
            return rc;
    }
}

/* True, False, None, and set() (which literal_eval allows). */
static int name(hparser *p, pyval *v)
{
    size_t start = p->i, len;
    while (ident_char(at(p, 0)))
        p->i++;
    len = p->i - start;
    const char *w = (const char *)p->s + start;
    *v = (pyval){.form = F_CONST, .hashable = 1};
    if (len == 4 && memcmp(w, "True", 4) == 0)
        v->kind = K_BOOL, v->truth = 1;
    else if (len == 5 && memcmp(w, "False", 5) == 0)
        v->kind = K_BOOL;
    else if (len == 4 && memcmp(w, "None", 4) == 0)
        v->kind = K_NONE;
    else if (len == 3 && memcmp(w, "set", 3) == 0) {
        int rc = skip_blank(p);
        if (rc != AG_OK || at(p, 0) != '(')
            return rc != AG_OK ? rc : bad(p, "a name is not a literal");
        *v = (pyval){.kind = K_SET, .form = F_DISPLAY};
        return (rc = open_bracket(p)) != AG_OK ? rc : expect(p, ')', "')' (set() takes nothing)");
    } else {
        p->i = start;
        return bad(p, "a name is not a literal");
    }
    return AG_OK;
}

static int atom(hparser *p, pyval *v, int top)
{
    int c = at(p, 0);
    *v = (pyval){0};
    if (c == '(')
        return paren(p, v, top);
    if (c == '[')
        return list(p, v);
    if (c == '{')
        return brace(p, v, top);
    if (string_prefix(p) >= 0)
        return strings(p, v);
    if ((c >= '0' && c <= '9') || (c == '.' && at(p, 1) >= '0' && at(p, 1) <= '9'))
        return number(p, v);
    if (c == '.' && at(p, 1) == '.' && at(p, 2) == '.') {
        p->i += 3;
        *v = (pyval){.kind = K_ELLIPSIS, .form = F_CONST, .hashable = 1};
        return AG_OK;
    }
    if (c >= 0 && ident_char(c) && !(c >= '0' && c <= '9'))
        return name(p, v);
    return bad(p, c < 0 ? "expected a value, found the end" : "expected a value");
}

/* An atom, then no call, subscript or attribute. */
static int primary(hparser *p, pyval *v, int top)
{
    int rc = atom(p, v, top);
    if (rc == AG_OK && (rc = skip_blank(p)) == AG_OK &&
        (at(p, 0) == '(' || at(p, 0) == '[' || at(p, 0) == '.'))
        return bad(p, "a call, subscript or attribute is not a literal");
    return rc;
}

static int is_number(const pyval *v)
{
    return v->kind == K_INT || v->kind == K_FLOAT || v->kind == K_COMPLEX;
}

/* One sign before a number constant, or a primary. */
static int factor(hparser *p, pyval *v, int top)
{
    int c = at(p, 0), rc;
    if (c == '~')
        return bad(p, "'~' is not allowed in a literal");
    if (c != '+' && c != '-')
        return primary(p, v, top);
    p->i++;
    if ((rc = skip_blank(p)) != AG_OK)
        return rc;
    if (at(p, 0) == '+' || at(p, 0) == '-' || at(p, 0) == '~')
        return bad(p, "a sign applies to a number only");
    if ((rc = primary(p, v, 0)) != AG_OK)
        return rc;
    if (v->form != F_CONST || !is_number(v))
        return bad(p, "a sign applies to a number only");
    v->form = F_UNARY;
    v->negative = c == '-' && (v->mag != 0 || v->big);
    return AG_OK;
}

/* A factor, or a real number plus or minus an imaginary one (1+2j). */
static int parse_expr(hparser *p, pyval *v, int top)
{
    int rc = factor(p, v, top);
    if (rc != AG_OK || (rc = skip_blank(p)) != AG_OK || (at(p, 0) != '+' && at(p, 0) != '-'))
        return rc;
    pyval right;
    p->i++;
    if ((rc = skip_blank(p)) != AG_OK || (rc = factor(p, &right, 0)) != AG_OK)
        return rc;
    if ((v->form != F_CONST && v->form != F_UNARY) || (v->kind != K_INT && v->kind != K_FLOAT) ||
        right.form != F_CONST || right.kind != K_COMPLEX)
        return bad(p, "'+' and '-' only join a real and an imaginary number");
    *v = (pyval){.kind = K_COMPLEX, .form = F_BINOP, .hashable = 1};
    if ((rc = skip_blank(p)) == AG_OK && (at(p, 0) == '+' || at(p, 0) == '-'))
        return bad(p, "'+' and '-' only join a real and an imaginary number");
    return rc;
}

/* ---- the lines around the dict ------------------------------------------------ */

/* Blanks at p->i; *col0: the column CPython computes is 0 (nothing after the
 * last form feed, which resets it). */
static size_t blank_run(hparser *p, int *col0)
{
    size_t start = p->i;
    *col0 = 1;
    while (is_blank(at(p, 0)))
        *col0 = at(p, 0) == '\f', p->i++;
    return p->i - start;
}

static int skip_comment(hparser *p)
{
    if (at(p, 0) == '#')
        while (p->i < p->n && !newline_at(p, 0))
            p->i++;
    return at(p, 0) < 0 || newline_at(p, 0);
}

/* Up to the first token: blank and comment lines, then the indentation of
 * the first token's line, which must be none. literal_eval strips spaces and
 * tabs at the start; version 1.0 and 2.0 headers go through tokenize and
 * untokenize first, which turn the first line's blanks into spaces but keep
 * those of later lines; version 3.0 ones reach CPython's tokenizer as they
 * are, where a form feed resets the column. */
static int leading_lines(hparser *p)
{
    int first = 1, col0;
    for (;;) {
        if (first)
            while (at(p, 0) == ' ' || at(p, 0) == '\t')
                p->i++;
        size_t run = blank_run(p, &col0);
        if (at(p, 0) == '#' || newline_at(p, 0)) {
            if (!skip_comment(p) || at(p, 0) < 0)
                return bad(p, "no dict, only comments");
            p->i += newline_at(p, 0);
            first = 0;
            continue;
        }
        if (at(p, 0) == '\\')
            return bad(p, "a backslash outside the dict");
        if (at(p, 0) < 0)
            return bad(p, "empty header");
        if (p->latin1 ? (!first && run) : !col0)
            return bad(p, "the dict is indented");
        return AG_OK;
    }
}

/* After the dict: the rest of its line, then blank and comment lines. A last
 * line without a line break that holds only blanks is an indented empty
 * line to CPython (unless its column is 0), but versions 1.0 and 2.0 lose it
 * in untokenize when a \n (not a lone \r) precedes it. */
static int trailing_lines(hparser *p)
{
    int col0, lone_cr = 0;
    blank_run(p, &col0);
    for (int line = 0;; line++) {
        if (line > 0) {
            size_t run = blank_run(p, &col0);
            if (at(p, 0) < 0 && run && (p->latin1 ? lone_cr : !col0))
                return bad(p, "an indented line after the dict");
        }
        if (at(p, 0) == '\\')
            return bad(p, "a backslash outside the dict");
        if (!skip_comment(p))
            return bad(p, "unexpected text after the dict");
        if (at(p, 0) < 0)
            return AG_OK;
        lone_cr = at(p, 0) == '\r' && at(p, 1) != '\n';
        p->i += newline_at(p, 0);
    }
}

/* ---- the header ----------------------------------------------------------------- */

static int check_shape(hparser *p, const pyval *s, agi_npy_header *out)
{
    if (s->kind == K_INT)
        return bad(p, "shape (n) is not a tuple; a 1-D shape is written (n,)");
    if (s->kind != K_TUPLE || !s->ints)
        return bad(p, "'shape' must be a tuple of integers such as (3, 4)");
    if (s->count > AG_MAX_DIMS)
        return ag_error_set(p->err, AG_ESHAPE, "%s: shape has more than %d dimensions", p->path,
                            AG_MAX_DIMS);
    if (s->neg)
        return ag_error_set(p->err, AG_ESHAPE, "%s: negative dimension in shape", p->path);
    if (s->huge)
        return ag_error_set(p->err, AG_ELIMIT, "%s: shape dimension too large", p->path);
    out->ndim = s->count;
    memcpy(out->shape, s->dims, (size_t)s->count * sizeof *s->dims);
    return AG_OK;
}

/* What numpy checks after literal_eval: a dict, the three keys, their types. */
static int check_entries(hparser *p, const pyval *top, agi_npy_header *out)
{
    if (top->kind != K_DICT)
        return bad(p, "the header is not a dict");
    if (p->unexpected)
        return p->odd_key[0] ? bad(p, "unexpected key '%.40s'", p->odd_key)
                             : bad(p, "a key other than 'descr', 'fortran_order' and 'shape'");
    for (int k = 0; k < KEY_COUNT; k++)
        if (!p->have[k])
            return bad(p, "no '%s' key", key_names[k]);
    int rc = check_shape(p, &p->entry[KEY_SHAPE], out);
    if (rc != AG_OK)
        return rc;
    if (p->entry[KEY_FORTRAN].kind != K_BOOL)
        return bad(p, "'fortran_order' must be True or False");
    out->fortran = p->entry[KEY_FORTRAN].truth;
    const pyval *d = &p->entry[KEY_DESCR];
    if (d->kind == K_LIST || d->kind == K_TUPLE || d->kind == K_DICT)
        return ag_error_set(p->err, AG_EDTYPE,
                            "%s: unsupported dtype (structured array); accepted: '<f2', '<f4', '<f8'", p->path);
    if (d->kind != K_STR)
        return bad(p, "'descr' must be a string");
    if (strlen(d->text) != d->len) /* a NUL inside, or longer than any dtype we read */
        return ag_error_set(p->err, AG_EDTYPE,
                            "%s: unsupported dtype '%.40s...' of %zu bytes (accepted: '<f2', '<f4', '<f8')",
                            p->path, d->text, d->len);
    snprintf(out->descr, sizeof out->descr, "%s", d->text);
    return AG_OK;
}

static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return 0;
        i += (size_t)k;
    }
    return 1;
}

int agi_npy_parse_header(const char *text, size_t n, int major, const char *path,
                         agi_npy_header *out, ag_error *err)
{
    hparser p = {.s = (const unsigned char *)text, .n = n, .latin1 = major < 3,
                 .path = path, .err = err};
    pyval top;
    int rc;
    memset(out, 0, sizeof *out);
    if (!p.latin1 && !valid_utf8(p.s, n))
        return bad(&p, "a version 3.0 header must be UTF-8");
    if ((rc = leading_lines(&p)) != AG_OK || (rc = parse_expr(&p, &top, 1)) != AG_OK ||
        (rc = trailing_lines(&p)) != AG_OK)
        return rc;
    return check_entries(&p, &top, out);
}
