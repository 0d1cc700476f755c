/* tokenizer/containers.c — the small containers every tokenizer component
 * shares (tk.h), and the Unicode class they all need. */
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "tk.h"

int ag_tk_ids_push_span(ag_tk_ids *o, int32_t id, size_t start, size_t end)
{
    if (AGB_VEC_RESERVE(o->v, o->cap, o->n + 1) != 0)
        return AG_ENOMEM;
    if (o->track) {
        if (AGB_VEC_RESERVE(o->off, o->ocap, 4 * o->n + 4) != 0)
            return AG_ENOMEM;
        size_t *w = o->off + 4 * o->n;
        w[0] = start;
        w[1] = end;
        w[2] = w[3] = 0;
    }
    o->v[o->n++] = id;
    return AG_OK;
}

int ag_tk_ids_push(ag_tk_ids *o, int32_t id)
{
    return ag_tk_ids_push_span(o, id, 0, 0);
}

void ag_tk_ids_free(ag_tk_ids *o)
{
    free(o->v);
    free(o->off);
    o->v = NULL;
    o->off = NULL;
    o->n = o->cap = o->ocap = 0;
}

int ag_tk_buf_put(ag_tk_buf *o, const char *s, size_t len)
{
    return agb_buf_put(o, s, len) == 0 ? AG_OK : AG_ENOMEM;
}

int ag_tk_buf_putc(ag_tk_buf *o, int32_t cp)
{
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t k = utf8proc_encode_char(cp, u);
    return ag_tk_buf_put(o, (const char *)u, k > 0 ? (size_t)k : 0);
}

int ag_tk_splits_push_al(ag_tk_splits *l, const char *s, size_t n, int at_start, int32_t id,
                         const size_t *al)
{
    if (AGB_VEC_RESERVE(l->v, l->cap, l->n + 1) != 0)
        return AG_ENOMEM;
    char *copy = malloc(n + 1);
    size_t *alc = al && n ? malloc(2 * n * sizeof *alc) : NULL;
    if (!copy || (al && n && !alc)) {
        free(copy);
        free(alc);
        return AG_ENOMEM;
    }
    if (n)
        memcpy(copy, s, n);
    if (alc)
        memcpy(alc, al, 2 * n * sizeof *alc);
    copy[n] = '\0';
    l->v[l->n++] = (ag_tk_split){copy, n, at_start, id, alc};
    return AG_OK;
}

int ag_tk_splits_push(ag_tk_splits *l, const char *s, size_t n, int at_start, int32_t id)
{
    return ag_tk_splits_push_al(l, s, n, at_start, id, NULL);
}

void ag_tk_splits_clear(ag_tk_splits *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].s);
        free(l->v[i].al);
    }
    l->n = 0;
}

void ag_tk_splits_free(ag_tk_splits *l)
{
    ag_tk_splits_clear(l);
    free(l->v);
    l->v = NULL;
    l->cap = 0;
}

/* White_Space of the Unicode database: what Rust's char::is_whitespace and
 * Oniguruma's \s (the regexes of HF's pre-tokenizers) test. */
int ag_tk_is_whitespace(int32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

int32_t ag_tk_next_cp(const char *s, size_t n, size_t *i)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + *i, (utf8proc_ssize_t)(n - *i), &cp);
    if (k <= 0) {
        (*i)++;
        return 0xFFFD;
    }
    *i += (size_t)k;
    return cp;
}

int ag_tk_is_punctuation(int32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
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

int ag_tk_is_numeric(int32_t c)
{
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

/* Alphabetic is L*, Nl and Other_Alphabetic; Other_Alphabetic is marks
 * (in M* anyway) except the circled and squared Latin letters (So). */
int ag_tk_is_word(int32_t c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return 1;
    case UTF8PROC_CATEGORY_SO:
        return (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
               (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
    default:
        return c == 0x200C || c == 0x200D;
    }
}

void ag_tk_regex_jit(pcre2_code *re)
{
    if (!RUNNING_ON_VALGRIND)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
}
