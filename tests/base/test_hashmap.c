/* test_hashmap.c — the keyed hash maps (src/base/hashmap.c) and the reversed
 * Aho–Corasick automaton (src/tokenizer/aho_corasick.c) that the tokenizer loads
 * untrusted files into (library internals, through their private headers).
 *
 * Crafted keys come from tests/util/tokenizer_crafted.h: under the former
 * unseeded hashes all of them probed from the first 1024 slots, so the
 * longest probe grew with their number (about 20 000 here); with a keyed
 * hash it stays a few dozen at most. That length, not a time, is asserted.
 * For linear probing at load 0.3 (20 000 keys in 65 536 slots) a run of 100
 * has odds below 1e-15. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/aho_corasick.h"
#include "attngeom/core.h"
#include "base/hashmap.h"
#include "../util/tokenizer_crafted.h"

enum { N_CRAFTED = 20000 };
#define PROBE_MAX 100

typedef char token[CRAFTED_TOKEN_LEN + 1];

Test(hashmap, crafted_strings_spread)
{
    token *tk = malloc(N_CRAFTED * sizeof *tk);
    cr_assert_not_null(tk);
    crafted_tokens(N_CRAFTED, 1, tk);
    agi_strmap m = {0};
    for (int i = 0; i < N_CRAFTED; i++) {
        /* the attack: every key in the old hash's first 1024 slots */
        cr_assert_lt(crafted_old_fnv(tk[i], CRAFTED_TOKEN_LEN) & 0xFFFF, 1024);
        cr_assert_eq(agi_strmap_put(&m, tk[i], CRAFTED_TOKEN_LEN, i, NULL), AG_OK);
    }
    cr_expect_eq(m.count, N_CRAFTED);
    size_t probe = agi_strmap_max_probe(&m);
    cr_expect_lt(probe, PROBE_MAX, "longest probe %zu for %d crafted keys", probe, N_CRAFTED);
    for (int i = 0; i < N_CRAFTED; i++) {
        int32_t v = -1;
        cr_assert(agi_strmap_get(&m, tk[i], CRAFTED_TOKEN_LEN, &v) && v == i, "key %d", i);
    }
    int32_t v;
    cr_expect_not(agi_strmap_get(&m, tk[0], CRAFTED_TOKEN_LEN - 1, &v));
    cr_expect_not(agi_strmap_get(&m, "", 0, &v));
    agi_strmap_free(&m);
    free(tk);
}

Test(hashmap, strings_replace_and_keep_copies)
{
    agi_strmap m = {0};
    const char *s1, *s2;
    cr_assert_eq(agi_strmap_put(&m, "a\0b", 3, 1, &s1), AG_OK);
    cr_assert_eq(agi_strmap_put(&m, "a\0b", 3, 2, &s2), AG_OK);
    cr_assert_eq(agi_strmap_put(&m, "a", 1, 3, NULL), AG_OK);
    cr_expect_eq(s1, s2, "a replaced key keeps its stored copy");
    cr_expect_eq(memcmp(s1, "a\0b", 4), 0, "stored copies are NUL-terminated");
    int32_t v;
    cr_expect(agi_strmap_get(&m, "a\0b", 3, &v) && v == 2);
    cr_expect(agi_strmap_get(&m, "a", 1, &v) && v == 3);
    cr_expect_eq(m.count, 2);
    /* growth keeps everything */
    char k[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "k%d", i);
        cr_assert_eq(agi_strmap_put(&m, k, strlen(k), i, NULL), AG_OK);
    }
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "k%d", i);
        cr_assert(agi_strmap_get(&m, k, strlen(k), &v) && v == i);
    }
    cr_expect(agi_strmap_get(&m, "a\0b", 3, &v) && v == 2);
    agi_strmap_free(&m);
    cr_expect_not(agi_strmap_get(&m, "a", 1, &v), "a freed map is empty");
}

/* The empty key may come as (NULL, 0), as the pooled group of an aggregate
 * does; it is the same key as "" (under UBSan, memcpy(k, NULL, 0) was an
 * error). */
Test(hashmap, empty_key_as_null)
{
    agi_strmap m = {0};
    const char *stored = NULL;
    int32_t v = -1;
    cr_assert_eq(agi_strmap_put(&m, NULL, 0, 7, &stored), AG_OK);
    cr_assert_str_eq(stored, "");
    cr_expect(agi_strmap_get(&m, "", 0, &v) && v == 7);
    cr_assert_eq(agi_strmap_put(&m, "", 0, 8, NULL), AG_OK);
    cr_expect(agi_strmap_get(&m, NULL, 0, &v) && v == 8);
    cr_expect_eq(m.count, 1);
    agi_strmap_free(&m);
}

Test(hashmap, crafted_pairs_spread)
{
    uint32_t(*pr)[2] = malloc(N_CRAFTED * sizeof *pr);
    cr_assert_not_null(pr);
    crafted_pairs(N_CRAFTED, 1, pr);
    agi_u64map m = {0};
    for (int i = 0; i < N_CRAFTED; i++) {
        uint64_t key = (uint64_t)pr[i][0] << 32 | pr[i][1], stored = 0;
        cr_assert_lt(crafted_old_fmix(key) & 0xFFFF, 1024);
        cr_assert_eq(agi_u64map_add(&m, key, (uint64_t)i, &stored), AG_OK);
        cr_assert_eq(stored, (uint64_t)i);
    }
    size_t probe = agi_u64map_max_probe(&m);
    cr_expect_lt(probe, PROBE_MAX, "longest probe %zu for %d crafted pairs", probe, N_CRAFTED);
    for (int i = 0; i < N_CRAFTED; i++) {
        uint64_t key = (uint64_t)pr[i][0] << 32 | pr[i][1], v = 0, stored = 0;
        cr_assert(agi_u64map_get(&m, key, &v) && v == (uint64_t)i);
        /* a second add keeps the first value (BPE: the lowest rank wins) */
        cr_assert_eq(agi_u64map_add(&m, key, 7, &stored), AG_OK);
        cr_assert_eq(stored, (uint64_t)i);
    }
    cr_expect_eq(m.count, N_CRAFTED);
    uint64_t v;
    cr_expect_eq(agi_u64map_add(&m, AGI_U64MAP_EMPTY, 1, NULL), AG_EINVAL);
    cr_expect_not(agi_u64map_get(&m, AGI_U64MAP_EMPTY, &v));
    cr_expect_not(agi_u64map_get(&m, (uint64_t)1 << 40, &v));
    agi_u64map_free(&m);
    free(pr);
}

Test(hashmap, siphash_depends_on_key_and_every_byte)
{
    agi_hash_key k1, k2;
    agi_hash_key_random(&k1);
    agi_hash_key_random(&k2);
    cr_expect(k1.k0 != k2.k0 || k1.k1 != k2.k1, "two random keys");
    const char msg[] = "abcdefghijklmnopq";
    uint64_t h = agi_siphash13(&k1, msg, 17);
    cr_expect_neq(h, agi_siphash13(&k2, msg, 17));
    cr_expect_eq(h, agi_siphash13(&k1, msg, 17));
    for (size_t n = 0; n < 17; n++)
        cr_expect_neq(agi_siphash13(&k1, msg, n), agi_siphash13(&k1, msg, n + 1), "length %zu", n);
}

/* ---- Aho–Corasick ------------------------------------------------------- */

typedef struct {
    char s[16];
    size_t n;
} pat;

/* The longest pattern starting at i, the first added among equal ones. */
static int32_t brute_longest(const pat *p, size_t np, const char *s, size_t n, size_t i)
{
    int32_t best = -1;
    for (size_t k = 0; k < np; k++)
        if (p[k].n <= n - i && memcmp(s + i, p[k].s, p[k].n) == 0 && (best < 0 || p[k].n > p[best].n))
            best = (int32_t)k;
    return best;
}

static uint64_t rng_state = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
    return crafted_rand(&rng_state, n);
}

/* Random patterns over the first `alpha` letters of abc (bytes 0..255 when
 * alpha is 256), random texts over one letter more; every position checked
 * against brute force. */
static void differential(size_t np, unsigned alpha, size_t maxlen, int rounds)
{
    static const char abc[] = "abcdefgh";
    pat *p = calloc(np, sizeof *p);
    cr_assert_not_null(p);
    agi_ac a = {0};
    for (size_t k = 0; k < np; k++) {
        p[k].n = 1 + rnd((unsigned)maxlen);
        for (size_t j = 0; j < p[k].n; j++)
            p[k].s[j] = alpha == 256 ? (char)rnd(256) : abc[rnd(alpha)];
        cr_assert_eq(agi_ac_add(&a, p[k].s, p[k].n, (int32_t)k), AG_OK);
    }
    cr_assert_eq(agi_ac_build(&a), AG_OK);
    char s[300];
    int32_t got[300];
    for (int r = 0; r < rounds; r++) {
        size_t n = rnd(sizeof s);
        for (size_t i = 0; i < n; i++)
            s[i] = alpha == 256 ? (char)rnd(256) : abc[rnd(alpha + 1)];
        agi_ac_longest_starts(&a, s, n, got);
        for (size_t i = 0; i < n; i++) {
            int32_t want = brute_longest(p, np, s, n, i);
            cr_assert_eq(got[i], want, "%zu patterns, text %d, byte %zu: got %d, want %d", np, r, i,
                         got[i], want);
        }
    }
    agi_ac_free(&a);
    free(p);
}

Test(aho_corasick, matches_brute_force)
{
    differential(1, 2, 3, 50);
    differential(5, 2, 4, 200);     /* prefixes, suffixes, repeats of each other */
    differential(60, 3, 8, 200);
    differential(400, 2, 12, 100);  /* many duplicates: the first added wins */
    differential(3000, 256, 3, 50); /* wide nodes (up to 256 children) */
}

Test(aho_corasick, empty_and_overlapping)
{
    agi_ac a = {0};
    int32_t got[8];
    cr_assert_eq(agi_ac_build(&a), AG_OK);
    cr_expect(agi_ac_empty(&a));
    agi_ac_longest_starts(&a, "abc", 3, got);
    cr_expect(got[0] == -1 && got[1] == -1 && got[2] == -1);
    agi_ac_free(&a);

    /* "ab" < "abc" at 0; "bcd" at 1; "cd" at 2; "abc" again (value 9)
     * keeps 1 */
    cr_assert_eq(agi_ac_add(&a, "ab", 2, 0), AG_OK);
    cr_assert_eq(agi_ac_add(&a, "abc", 3, 1), AG_OK);
    cr_assert_eq(agi_ac_add(&a, "bcd", 3, 2), AG_OK);
    cr_assert_eq(agi_ac_add(&a, "cd", 2, 3), AG_OK);
    cr_assert_eq(agi_ac_add(&a, "abc", 3, 9), AG_OK);
    cr_assert_eq(agi_ac_add(&a, "", 0, 5), AG_OK); /* empty: never matches */
    cr_assert_eq(agi_ac_build(&a), AG_OK);
    cr_expect_not(agi_ac_empty(&a));
    agi_ac_longest_starts(&a, "xabcdab", 7, got);
    static const int32_t want[] = {-1, 1, 2, 3, -1, 0, -1};
    for (int i = 0; i < 7; i++)
        cr_expect_eq(got[i], want[i], "byte %d: %d, want %d", i, got[i], want[i]);
    agi_ac_free(&a);
}
