/* tokenizer_crafted.h — hostile tokenizer inputs, shared by
 * tests/tokenizer/test_tokenizer.c (correctness, probe lengths) and
 * bench/bench_tokenizer.c (load times).
 *
 * Until issue 8 the tokenizer's hash maps were unseeded and linear-probing:
 * strings hashed with FNV-1a folded as h ^ (h >> 29), (id, id) pairs with
 * MurmurHash3's fmix64, the slot being the low bits. Both are reproduced here
 * to pick inputs that all land in the first 1024 slots of every table from
 * 2^10 to 2^19 slots (bits 10..18 of the hash zero: one candidate in 512), so
 * that n of them cost about n^2/2 probes to insert into the old maps. The
 * generators only need those hashes to choose; what the tokenizer does with
 * the result no longer depends on them. Header-only, no library internals. */
#ifndef ATTNGEOM_TOKENIZER_CRAFTED_H
#define ATTNGEOM_TOKENIZER_CRAFTED_H

#include <stddef.h>
#include <stdint.h>

#define CRAFTED_TOKEN_LEN 10
#define CRAFTED_WINDOW_MASK 0x7FC00ull /* bits 10..18 */

static inline uint64_t crafted_old_fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static inline uint64_t crafted_old_fmix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

/* A bijection of the integers below 2^bits (odd multipliers and xorshifts),
 * so that distinct inputs give distinct, well-spread outputs. */
static inline uint64_t crafted_mix(uint64_t x, unsigned bits)
{
    uint64_t m = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    x = (x * 0x9E3779B97F4A7C15ull) & m;
    x ^= x >> (bits / 2);
    x = (x * 0xBF58476D1CE4E5B9ull) & m;
    x ^= x >> (bits / 2 + 1);
    return x & m;
}

/* Token number k: 10 characters of [a-z0-5] spelling the 50-bit mix of k,
 * so distinct k give distinct tokens. */
static inline void crafted_token(uint64_t k, char out[CRAFTED_TOKEN_LEN + 1])
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyz012345";
    uint64_t x = crafted_mix(k, 5 * CRAFTED_TOKEN_LEN);
    for (int i = 0; i < CRAFTED_TOKEN_LEN; i++, x >>= 5)
        out[i] = abc[x & 31];
    out[CRAFTED_TOKEN_LEN] = '\0';
}

/* n distinct tokens: when `crafted`, only those the old string hash sends
 * into the first 1024 slots; otherwise the first n (random-looking). */
static inline void crafted_tokens(size_t n, int crafted, char (*out)[CRAFTED_TOKEN_LEN + 1])
{
    uint64_t k = 0;
    for (size_t got = 0; got < n; k++) {
        crafted_token(k, out[got]);
        if (!crafted || (crafted_old_fnv(out[got], CRAFTED_TOKEN_LEN) & CRAFTED_WINDOW_MASK) == 0)
            got++;
    }
}

/* n distinct pairs (a, b) of ids below 2^14: when `crafted`, only those the
 * old pair hash of (a << 32 | b) sends into the first 1024 slots (n up to
 * about 500 000). */
#define CRAFTED_PAIR_BITS 14
static inline void crafted_pairs(size_t n, int crafted, uint32_t (*out)[2])
{
    uint64_t k = 0;
    for (size_t got = 0; got < n; k++) {
        uint64_t x = crafted_mix(k, 2 * CRAFTED_PAIR_BITS);
        uint32_t a = (uint32_t)(x >> CRAFTED_PAIR_BITS), b = (uint32_t)(x & ((1u << CRAFTED_PAIR_BITS) - 1));
        if (crafted && (crafted_old_fmix((uint64_t)a << 32 | b) & CRAFTED_WINDOW_MASK) != 0)
            continue;
        out[got][0] = a;
        out[got][1] = b;
        got++;
    }
}

/* xorshift64: a small deterministic generator for random tests, uniform
 * enough below n. */
static inline unsigned crafted_rand(uint64_t *state, unsigned n)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (unsigned)(*state % n);
}

#endif
