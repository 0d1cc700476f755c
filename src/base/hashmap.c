/* hashmap.c — keyed hash maps (see hashmap.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "attngeom/core.h"
#include "hashmap.h"

#define FIRST_CAP 1024

/* ======================================================================
 * SipHash-1-3 (Aumasson and Bernstein; one compression round, three
 * finalization rounds, as Rust's HashMap uses)
 * ====================================================================== */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t load_le64(const unsigned char *p, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)p[i] << (8 * i);
    return m;
}

uint64_t agi_siphash13(const agi_hash_key *k, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t v0 = 0x736f6d6570736575ull ^ k->k0, v1 = 0x646f72616e646f6dull ^ k->k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k->k0, v3 = 0x7465646279746573ull ^ k->k1;
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le64(p + i, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = ((uint64_t)n << 56) | load_le64(p + whole, n % 8);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void agi_hash_key_random(agi_hash_key *k)
{
    uint64_t buf[2];
    if (getrandom(buf, sizeof buf, GRND_NONBLOCK) == (ssize_t)sizeof buf) {
        k->k0 = buf[0];
        k->k1 = buf[1];
        return;
    }
    /* No entropy yet (early boot) or no syscall: not secret, but neither
     * fixed nor known to whoever wrote the file. */
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t seed[5] = {(uint64_t)a.tv_sec, (uint64_t)a.tv_nsec, (uint64_t)b.tv_nsec,
                        (uint64_t)getpid(), (uint64_t)(uintptr_t)k};
    agi_hash_key fixed = {0x0123456789abcdefull, (uint64_t)(uintptr_t)&seed};
    k->k0 = agi_siphash13(&fixed, seed, sizeof seed);
    seed[0] ^= k->k0;
    k->k1 = agi_siphash13(&fixed, seed, sizeof seed);
}

/* ======================================================================
 * string -> int32
 * ====================================================================== */

/* The smallest capacity (a power of two) that holds n keys at most half
 * full. */
static size_t cap_for(size_t n)
{
    size_t c = FIRST_CAP;
    while (c < 2 * n && c <= SIZE_MAX / 4)
        c *= 2;
    return c;
}

/* 32 bits of the key's SipHash: its home slot (capacities stay below 2^32:
 * at most half full, counts are below 2^31) and, kept in the slot, a filter
 * before the bytes are compared and the home slot when the map grows. */
static uint32_t str_hash(const agi_strmap *m, const char *s, size_t n)
{
    return (uint32_t)agi_siphash13(&m->hk, s, n);
}

static int strmap_grow(agi_strmap *m, size_t nc)
{
    if (!m->cap)
        agi_hash_key_random(&m->hk);
    size_t oc = m->cap;
    agi_strmap_slot *ns = calloc(nc, sizeof *ns), *os = m->slots;
    if (!ns)
        return AG_ENOMEM;
    m->slots = ns;
    m->cap = nc;
    for (size_t i = 0; i < oc; i++) {
        if (!os[i].key)
            continue;
        size_t j = os[i].hash & (nc - 1);
        while (ns[j].key)
            j = (j + 1) & (nc - 1);
        ns[j] = os[i];
    }
    free(os);
    return AG_OK;
}

int agi_strmap_reserve(agi_strmap *m, size_t n)
{
    size_t want = cap_for(m->count + n);
    return want > m->cap ? strmap_grow(m, want) : AG_OK;
}

/* The slot holding the key (of hash h), or the empty slot where it would go. */
static agi_strmap_slot *str_find(const agi_strmap *m, const char *key, size_t len, uint32_t h)
{
    size_t j = h & (m->cap - 1);
    while (m->slots[j].key &&
           !(m->slots[j].hash == h && m->slots[j].len == len && memcmp(m->slots[j].key, key, len) == 0))
        j = (j + 1) & (m->cap - 1);
    return &m->slots[j];
}

int agi_strmap_put(agi_strmap *m, const char *key, size_t len, int32_t val, const char **stored)
{
    key = key ? key : ""; /* the empty key may come as NULL: memcpy/memcmp need a pointer */
    if (len >= UINT32_MAX)
        return AG_ELIMIT;
    if ((m->count + 1) * 2 > m->cap && strmap_grow(m, m->cap ? m->cap * 2 : FIRST_CAP) != AG_OK)
        return AG_ENOMEM;
    uint32_t h = str_hash(m, key, len);
    agi_strmap_slot *e = str_find(m, key, len, h);
    if (!e->key) {
        char *k = malloc(len + 1);
        if (!k)
            return AG_ENOMEM;
        memcpy(k, key, len);
        k[len] = '\0';
        e->key = k;
        e->len = (uint32_t)len;
        e->hash = h;
        m->count++;
    }
    e->val = val;
    if (stored)
        *stored = e->key;
    return AG_OK;
}

int agi_strmap_get(const agi_strmap *m, const char *key, size_t len, int32_t *val)
{
    key = key ? key : "";
    if (!m->cap)
        return 0;
    const agi_strmap_slot *e = str_find(m, key, len, str_hash(m, key, len));
    if (!e->key)
        return 0;
    *val = e->val;
    return 1;
}

void agi_strmap_free(agi_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

size_t agi_strmap_max_probe(const agi_strmap *m)
{
    size_t worst = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) {
            size_t d = (i - (str_hash(m, m->slots[i].key, m->slots[i].len) & (m->cap - 1))) & (m->cap - 1);
            worst = d > worst ? d : worst;
        }
    return worst;
}

/* ======================================================================
 * uint64 -> uint64
 * ====================================================================== */

static size_t u64_slot(const agi_u64map *m, uint64_t key)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(key >> (8 * i));
    return (size_t)agi_siphash13(&m->hk, b, 8) & (m->cap - 1);
}

static int u64map_grow(agi_u64map *m, size_t nc)
{
    if (!m->cap)
        agi_hash_key_random(&m->hk);
    size_t oc = m->cap;
    agi_u64map_slot *ns = malloc(nc * sizeof *ns), *os = m->slots;
    if (!ns)
        return AG_ENOMEM;
    for (size_t i = 0; i < nc; i++)
        ns[i].key = AGI_U64MAP_EMPTY;
    m->slots = ns;
    m->cap = nc;
    for (size_t i = 0; i < oc; i++) {
        if (os[i].key == AGI_U64MAP_EMPTY)
            continue;
        size_t j = u64_slot(m, os[i].key);
        while (ns[j].key != AGI_U64MAP_EMPTY)
            j = (j + 1) & (nc - 1);
        ns[j] = os[i];
    }
    free(os);
    return AG_OK;
}

static agi_u64map_slot *u64_find(const agi_u64map *m, uint64_t key)
{
    size_t j = u64_slot(m, key);
    while (m->slots[j].key != AGI_U64MAP_EMPTY && m->slots[j].key != key)
        j = (j + 1) & (m->cap - 1);
    return &m->slots[j];
}

int agi_u64map_reserve(agi_u64map *m, size_t n)
{
    size_t want = cap_for(m->count + n);
    return want > m->cap ? u64map_grow(m, want) : AG_OK;
}

int agi_u64map_add(agi_u64map *m, uint64_t key, uint64_t val, uint64_t *stored)
{
    if (key == AGI_U64MAP_EMPTY)
        return AG_EINVAL;
    if ((m->count + 1) * 2 > m->cap && u64map_grow(m, m->cap ? m->cap * 2 : FIRST_CAP) != AG_OK)
        return AG_ENOMEM;
    agi_u64map_slot *e = u64_find(m, key);
    if (e->key != key) {
        e->key = key;
        e->val = val;
        m->count++;
    }
    if (stored)
        *stored = e->val;
    return AG_OK;
}

int agi_u64map_get(const agi_u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap || key == AGI_U64MAP_EMPTY)
        return 0;
    const agi_u64map_slot *e = u64_find(m, key);
    if (e->key != key)
        return 0;
    *val = e->val;
    return 1;
}

void agi_u64map_free(agi_u64map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

size_t agi_u64map_max_probe(const agi_u64map *m)
{
    size_t worst = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != AGI_U64MAP_EMPTY) {
            size_t d = (i - u64_slot(m, m->slots[i].key)) & (m->cap - 1);
            worst = d > worst ? d : worst;
        }
    return worst;
}
