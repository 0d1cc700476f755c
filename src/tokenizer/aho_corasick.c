/* aho_corasick.c — reversed-pattern Aho–Corasick automaton (see
 * aho_corasick.h). */
#include <stdlib.h>
#include <string.h>

#include "aho_corasick.h"
#include "attngeom/core.h"
#include "base/vec.h"

static uint64_t edge_key(uint32_t node, unsigned char c)
{
    return (uint64_t)node << 8 | c;
}

static int child(const agi_ac *a, uint32_t node, unsigned char c, uint32_t *to)
{
    if (a->kids[node] > AGI_AC_NARROW) {
        uint64_t v;
        if (!agi_u64map_get(&a->wide, edge_key(node, c), &v))
            return 0;
        *to = (uint32_t)v;
        return 1;
    }
    for (uint32_t k = a->first[node]; k; k = a->next[k])
        if (a->byte[k] == c) {
            *to = k;
            return 1;
        }
    return 0;
}

/* Room for one more node in each of the parallel arrays (one capacity). */
static int reserve_node(agi_ac *a)
{
    if (a->n < a->cap)
        return AG_OK;
    if (a->cap >= (size_t)INT32_MAX / 2)
        return AG_ELIMIT;
    size_t c[6] = {a->cap, a->cap, a->cap, a->cap, a->cap, a->cap}, need = a->n + 1;
    if (AGB_VEC_RESERVE(a->first, c[0], need) || AGB_VEC_RESERVE(a->next, c[1], need) ||
        AGB_VEC_RESERVE(a->byte, c[2], need) || AGB_VEC_RESERVE(a->kids, c[3], need) ||
        AGB_VEC_RESERVE(a->val, c[4], need) || AGB_VEC_RESERVE(a->parent, c[5], need))
        return AG_ENOMEM;
    a->cap = c[0];
    for (int i = 1; i < 6; i++) /* equal unless one was capped at its byte limit */
        if (c[i] < a->cap)
            a->cap = c[i];
    return AG_OK;
}

/* Count the new child v of node; a wide node also registers it in `wide`,
 * and all its older children when it just became wide. */
static int widen(agi_ac *a, uint32_t node, uint32_t v)
{
    unsigned before = a->kids[node];
    if (before <= AGI_AC_NARROW)
        a->kids[node]++;
    if (a->kids[node] <= AGI_AC_NARROW)
        return AG_OK;
    uint32_t stop = before == AGI_AC_NARROW ? 0 : a->next[v];
    for (uint32_t k = v; k != stop; k = a->next[k])
        if (agi_u64map_add(&a->wide, edge_key(node, a->byte[k]), k, NULL) != AG_OK)
            return AG_ENOMEM;
    return AG_OK;
}

/* The child of node on byte c, created when missing. */
static int step_or_add(agi_ac *a, uint32_t node, unsigned char c, uint32_t *to)
{
    if (a->n > 0 && child(a, node, c, to))
        return AG_OK;
    int rc = reserve_node(a);
    if (rc != AG_OK)
        return rc;
    uint32_t v = (uint32_t)a->n++;
    a->first[v] = 0;
    a->kids[v] = 0;
    a->val[v] = -1;
    a->parent[v] = node;
    a->byte[v] = c;
    a->next[v] = 0;
    *to = v;
    if (v == 0) /* the root */
        return AG_OK;
    a->next[v] = a->first[node];
    a->first[node] = v;
    return widen(a, node, v);
}

int agi_ac_add(agi_ac *a, const char *p, size_t n, int32_t val)
{
    uint32_t node = 0;
    int rc = a->n ? AG_OK : step_or_add(a, 0, 0, &node);
    for (size_t i = n; rc == AG_OK && i-- > 0;)
        rc = step_or_add(a, node, (unsigned char)p[i], &node);
    if (rc == AG_OK && n > 0 && a->val[node] < 0)
        a->val[node] = val;
    return rc;
}

/* Nodes by nondecreasing depth (counting sort): a node's failure link needs
 * those of shallower nodes only. */
static uint32_t *by_depth(const agi_ac *a)
{
    uint32_t *depth = malloc(a->n * sizeof *depth), *order = malloc(a->n * sizeof *order);
    size_t maxd = 0;
    for (size_t v = 0; depth && v < a->n; v++) { /* parents come first */
        depth[v] = v ? depth[a->parent[v]] + 1 : 0;
        maxd = depth[v] > maxd ? depth[v] : maxd;
    }
    size_t *start = depth && order ? calloc(maxd + 2, sizeof *start) : NULL;
    if (!start) {
        free(depth);
        free(order);
        return NULL;
    }
    for (size_t v = 0; v < a->n; v++)
        start[depth[v] + 1]++;
    for (size_t d = 1; d <= maxd + 1; d++)
        start[d] += start[d - 1];
    for (size_t v = 0; v < a->n; v++)
        order[start[depth[v]]++] = (uint32_t)v;
    free(start);
    free(depth);
    return order;
}

int agi_ac_build(agi_ac *a)
{
    if (a->n == 0)
        return AG_OK;
    uint32_t *order = by_depth(a);
    a->fail = malloc(a->n * sizeof *a->fail);
    a->out = malloc(a->n * sizeof *a->out);
    if (!order || !a->fail || !a->out) {
        free(order);
        return AG_ENOMEM;
    }
    for (size_t k = 0; k < a->n; k++) {
        uint32_t v = order[k], u = a->parent[v], f = 0;
        if (v != 0 && u != 0) {
            f = a->fail[u];
            while (!child(a, f, a->byte[v], &f) && f != 0)
                f = a->fail[f];
        }
        a->fail[v] = f;
        a->out[v] = a->val[v] >= 0 || v == 0 ? a->val[v] : a->out[f];
    }
    free(order);
    free(a->parent);
    a->parent = NULL;
    return AG_OK;
}

void agi_ac_longest_starts(const agi_ac *a, const char *s, size_t n, int32_t *longest)
{
    uint32_t st = 0;
    for (size_t i = n; i-- > 0;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t nx = 0;
        while (a->n && !child(a, st, c, &nx) && st != 0)
            st = a->fail[st];
        st = nx;
        longest[i] = a->n ? a->out[st] : -1;
    }
}

int agi_ac_empty(const agi_ac *a)
{
    return a->n <= 1;
}

void agi_ac_free(agi_ac *a)
{
    agi_u64map_free(&a->wide);
    free(a->first);
    free(a->next);
    free(a->byte);
    free(a->kids);
    free(a->val);
    free(a->fail);
    free(a->out);
    free(a->parent);
    memset(a, 0, sizeof *a);
}
