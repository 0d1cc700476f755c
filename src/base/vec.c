/* vec.c — growable arrays (see vec.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

int agb_vec_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (elem == 0 || need > SIZE_MAX / elem)
        return -1;
    size_t max = SIZE_MAX / elem;
    size_t nc = *cap ? *cap : AGB_VEC_FIRST;
    if (nc > max)
        nc = max;
    while (nc < need)
        nc = nc > max / 2 ? max : nc * 2;
    void *grown = realloc(*p, nc * elem);
    if (!grown)
        return -1;
    *p = grown;
    *cap = nc;
    return 0;
}

int agb_buf_put(agb_buf *b, const void *s, size_t n)
{
    if (n >= SIZE_MAX - b->n)
        return -1;
    if (AGB_VEC_RESERVE(b->b, b->cap, b->n + n + 1) != 0)
        return -1;
    if (n)
        memcpy(b->b + b->n, s, n);
    b->n += n;
    b->b[b->n] = '\0';
    return 0;
}
