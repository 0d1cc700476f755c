/* Internal prefix: agb_ (module src/base/; these maps are still agi_strmap/agi_u64map, renamed to agb_ in a later step of plan-25). */
/* hashmap.h — hash maps for keys that come from files. Private to the
 * library (not installed).
 *
 * Open addressing with linear probing, at most half full. A file may choose
 * every key, so slots are chosen by SipHash-1-3 under a 128-bit key drawn
 * from getrandom() when the map first allocates (one key per map): which
 * keys collide cannot be known in advance, and n insertions take O(n)
 * expected time whatever the keys. Results never depend on the hash key —
 * only the time does: nothing exposes the slot order. */
#ifndef ATTNGEOM_HASHMAP_H
#define ATTNGEOM_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t k0, k1;
} agi_hash_key;

/* A fresh random key (getrandom without blocking; if the kernel cannot
 * give one, a mix of clocks, pid and addresses). */
void agi_hash_key_random(agi_hash_key *k);

/* SipHash-1-3 of n bytes. */
uint64_t agi_siphash13(const agi_hash_key *k, const void *data, size_t n);

/* ---- string -> int32 (keys copied, may hold any byte) -------------------- */
typedef struct {
    char *key;     /* NULL = empty slot */
    uint32_t len;
    int32_t val;
    uint32_t hash; /* 32 bits of the key's SipHash (hashmap.c, str_hash) */
} agi_strmap_slot;

typedef struct {
    agi_strmap_slot *slots;
    size_t cap;   /* power of two, 0 before the first insertion */
    size_t count;
    agi_hash_key hk;
} agi_strmap;

/* Insert or replace. AG_OK, AG_ENOMEM, or AG_ELIMIT for a key of 4 GiB or
 * more. key may be NULL when len is 0 (the empty key). *stored (optional) receives the map's own copy of the key
 * (NUL-terminated, valid until the map is freed). */
int agi_strmap_put(agi_strmap *m, const char *key, size_t len, int32_t val, const char **stored);
/* Room for n more keys without growing: one allocation (and one pass over
 * the keys already in) instead of a doubling every time the map is half
 * full, when the number of keys to come is known (a vocabulary). AG_OK or
 * AG_ENOMEM (the map unchanged). */
int agi_strmap_reserve(agi_strmap *m, size_t n);
/* 1 and *val when found, else 0. */
int agi_strmap_get(const agi_strmap *m, const char *key, size_t len, int32_t *val);
void agi_strmap_free(agi_strmap *m);
/* Longest distance of a key from its home slot (a test hook: stays small
 * unless the hash is broken). */
size_t agi_strmap_max_probe(const agi_strmap *m);

/* ---- uint64 -> uint64 (key UINT64_MAX reserved) --------------------------- */
typedef struct {
    uint64_t key; /* AGI_U64MAP_EMPTY = empty slot */
    uint64_t val;
} agi_u64map_slot;

#define AGI_U64MAP_EMPTY UINT64_MAX

typedef struct {
    agi_u64map_slot *slots;
    size_t cap;
    size_t count;
    agi_hash_key hk;
} agi_u64map;

/* Insert unless present: an existing key keeps its value. *stored
 * (optional) receives the value the map now holds for key, which is val
 * when the key was new. AG_OK, AG_ENOMEM, or AG_EINVAL for the reserved
 * key. */
int agi_u64map_add(agi_u64map *m, uint64_t key, uint64_t val, uint64_t *stored);
/* Room for n more keys without growing (as agi_strmap_reserve). */
int agi_u64map_reserve(agi_u64map *m, size_t n);
/* 1 and *val when found, else 0. */
int agi_u64map_get(const agi_u64map *m, uint64_t key, uint64_t *val);
void agi_u64map_free(agi_u64map *m);
size_t agi_u64map_max_probe(const agi_u64map *m);

#endif
