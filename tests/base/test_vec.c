/* test_vec.c — the growable arrays of src/base/vec.h (library internals,
 * through their private header): the capacity rule, refusal of sizes that
 * overflow a size_t (nothing touched), contents kept across growth, and the
 * NUL-terminated byte buffer. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

Test(vec, grows_from_zero)
{
    int *v = NULL;
    size_t cap = 0;
    cr_assert_eq(agb_vec_reserve((void **)&v, &cap, 0, sizeof *v), 0);
    cr_assert_null(v, "need 0 allocates nothing");
    cr_assert_eq(cap, 0);
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, 1), 0);
    cr_assert_not_null(v);
    cr_assert_eq(cap, AGB_VEC_FIRST);
    free(v);
}

Test(vec, exact_capacity_sequence)
{
    int *v = NULL;
    size_t cap = 0, seen[8], k = 0;
    for (size_t n = 0; n < 200; n++) {
        size_t before = cap;
        cr_assert_eq(AGB_VEC_RESERVE(v, cap, n + 1), 0);
        if (cap != before)
            seen[k++] = cap;
        v[n] = (int)n;
    }
    const size_t want[] = {16, 32, 64, 128, 256};
    cr_assert_eq(k, sizeof want / sizeof *want);
    for (size_t i = 0; i < k; i++)
        cr_assert_eq(seen[i], want[i], "step %zu: %zu", i, seen[i]);
    /* a jump: doubled until it holds need */
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, 1000), 0);
    cr_assert_eq(cap, 1024);
    /* enough already: nothing changes */
    int *same = v;
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, 1024), 0);
    cr_assert_eq(cap, 1024);
    cr_assert_eq(v, same);
    for (size_t n = 0; n < 200; n++)
        cr_assert_eq(v[n], (int)n, "content kept at %zu", n);
    free(v);
}

Test(vec, refuses_overflow)
{
    double *v = NULL;
    size_t cap = 0;
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, 4), 0);
    v[0] = 1.5;
    double *old = v;
    size_t need = SIZE_MAX / sizeof *v + 1; /* need * elem overflows */
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, need), -1);
    cr_assert_eq(v, old, "pointer untouched");
    cr_assert_eq(cap, AGB_VEC_FIRST, "capacity untouched");
    cr_assert_eq(AGB_VEC_RESERVE(v, cap, SIZE_MAX), -1);
    cr_assert_eq(agb_vec_reserve((void **)&v, &cap, 100, 0), -1, "elem 0");
    cr_assert_eq(v[0], 1.5);
    cr_assert_eq(cap, AGB_VEC_FIRST);
    free(v);
}

Test(vec, buf_put_keeps_content)
{
    agb_buf b = {0};
    cr_assert_eq(agb_buf_put(&b, NULL, 0), 0);
    cr_assert_str_eq(b.b, "");
    cr_assert_eq(b.n, 0);
    char expect[1000];
    for (size_t i = 0; i < 100; i++) {
        char piece[10];
        memset(piece, 'a' + (int)(i % 26), sizeof piece);
        memcpy(expect + i * 10, piece, 10);
        cr_assert_eq(agb_buf_put(&b, piece, 10), 0);
        cr_assert_eq(b.n, (i + 1) * 10);
        cr_assert_eq(b.b[b.n], '\0', "NUL-terminated");
        cr_assert_geq(b.cap, b.n + 1);
    }
    cr_assert_eq(memcmp(b.b, expect, sizeof expect), 0);
    cr_assert_eq(b.cap, 1024);
    char *old = b.b;
    cr_assert_eq(agb_buf_put(&b, "x", SIZE_MAX - 2), -1, "n overflowing");
    cr_assert_eq(b.b, old);
    cr_assert_eq(b.n, 1000);
    free(b.b);
}
