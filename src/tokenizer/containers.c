/* tokenizer/containers.c — the small containers every tokenizer component
 * shares (tk.h), and the Unicode class they all need. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tk.h"

void *ag_tk_grow(void *arr, size_t *cap, size_t size)
{
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / size)
        return NULL;
    void *na = realloc(arr, nc * size);
    if (na)
        *cap = nc;
    return na;
}

int ag_tk_ids_push(ag_tk_ids *o, int32_t id)
{
    if (o->n == o->cap) {
        int32_t *nv = ag_tk_grow(o->v, &o->cap, sizeof *nv);
        if (!nv)
            return AG_ENOMEM;
        o->v = nv;
    }
    o->v[o->n++] = id;
    return AG_OK;
}

int ag_tk_buf_put(ag_tk_buf *o, const char *s, size_t len)
{
    if (o->n + len + 1 > o->cap) {
        size_t nc = o->cap ? o->cap : 64;
        while (nc < o->n + len + 1)
            nc *= 2;
        char *nb = realloc(o->b, nc);
        if (!nb)
            return AG_ENOMEM;
        o->b = nb;
        o->cap = nc;
    }
    if (len)
        memcpy(o->b + o->n, s, len);
    o->n += len;
    o->b[o->n] = '\0';
    return AG_OK;
}

int ag_tk_buf_putc(ag_tk_buf *o, int32_t cp)
{
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t k = utf8proc_encode_char(cp, u);
    return ag_tk_buf_put(o, (const char *)u, k > 0 ? (size_t)k : 0);
}

int ag_tk_splits_push(ag_tk_splits *l, const char *s, size_t n, int at_start, int32_t id)
{
    if (l->n == l->cap) {
        ag_tk_split *nv = ag_tk_grow(l->v, &l->cap, sizeof *nv);
        if (!nv)
            return AG_ENOMEM;
        l->v = nv;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return AG_ENOMEM;
    if (n)
        memcpy(copy, s, n);
    copy[n] = '\0';
    l->v[l->n++] = (ag_tk_split){copy, n, at_start, id};
    return AG_OK;
}

void ag_tk_splits_clear(ag_tk_splits *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].s);
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
