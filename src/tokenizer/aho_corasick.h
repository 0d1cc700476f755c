/* Internal prefix: ag_tk (module src/tokenizer/; this automaton is still agi_ac, renamed ag_tk_ac in a later step of plan-25). */
/* aho_corasick.h — longest pattern starting at every position of a text, in
 * one pass. Private to the library (not installed).
 *
 * An Aho–Corasick automaton over the patterns reversed: reading the text
 * from its end, the state after byte i stands for the longest reversed
 * pattern prefix ending there, and its output (the longest pattern on its
 * suffix chain) is the longest pattern that starts at i. Leftmost-longest
 * matching is then a forward walk over that array. Building costs O(total
 * pattern bytes), a search O(text bytes), whatever the patterns and the text
 * are. */
#ifndef ATTNGEOM_AHO_CORASICK_H
#define ATTNGEOM_AHO_CORASICK_H

#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"

#define AGI_AC_NARROW 8

typedef struct {
    /* Children: a sibling list, and for the few nodes of more than
     * AGI_AC_NARROW children also `wide` (node << 8 | byte -> child), so a
     * transition costs O(1) whatever the patterns, at about 26 bytes a node. */
    uint32_t *first, *next; /* first child, next sibling; 0 = none */
    unsigned char *byte;    /* the byte leading to the node */
    unsigned char *kids;    /* number of children, saturating at NARROW + 1 */
    agi_u64map wide;
    int32_t *val;      /* value of the pattern a node spells, -1 */
    uint32_t *fail;    /* longest proper suffix that is a node (after build) */
    int32_t *out;      /* value of the longest pattern on the suffix chain */
    uint32_t *parent;  /* while building */
    size_t n, cap;     /* nodes, node 0 the root */
} agi_ac;

/* Add a non-empty pattern with value val >= 0. When the same bytes were
 * added before, the first value stays. AG_OK, AG_ENOMEM, or AG_ELIMIT past
 * 2^30 nodes. */
int agi_ac_add(agi_ac *a, const char *p, size_t n, int32_t val);
/* Failure links and outputs; after it, agi_ac_add is not allowed. */
int agi_ac_build(agi_ac *a);
/* longest[i] = value of the longest pattern that starts at byte i of s,
 * -1 when none does (ties: the first added). O(n). */
void agi_ac_longest_starts(const agi_ac *a, const char *s, size_t n, int32_t *longest);
/* 1 when no pattern was added. */
int agi_ac_empty(const agi_ac *a);
void agi_ac_free(agi_ac *a);

#endif
