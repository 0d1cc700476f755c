/* curvature.c — docs/metrics.md, family F: Forman and Ollivier curvature of the thresholded
 * attention graph, with the Wasserstein-1 distances of Ollivier's curvature
 * solved exactly.
 *
 * Forman–Ricci curvature of a weighted edge (Sreejith, Mohanraj, Jost, Saucan
 * & Samal 2016, "Forman curvature for complex networks", J. Stat. Mech.,
 * eq. 5 with unit node weights); Ollivier–Ricci curvature (Ollivier 2009,
 * "Ricci curvature of Markov chains on metric spaces", J. Funct. Anal. 256)
 * with the lazy random walk m_i of docs/metrics.md, family F (idleness ½, as in Lin, Lu & Yau
 * 2011 and Ni, Lin, Gao, Gu & Saucan 2015/2019).
 *
 * ---- Why the transport problems are small and their costs are 0..3 ------
 * For an edge {i, j}, m_i lives on the closed ball B(i) = {i} ∪ N(i) and m_j
 * on B(j). For u ∈ B(i), v ∈ B(j) the hop distance d(u, v) is at most 3 by
 * the triangle inequality: d(u,v) ≤ d(u,i) + d(i,j) + d(j,v) ≤ 1 + 1 + 1.
 * Hence, with the graph's adjacency and its "distance ≤ 2" relation:
 *   d(u,v) = 0  iff u = v;
 *   d(u,v) = 1  iff u ≠ v and u ~ v;
 *   d(u,v) = 2  iff u ≠ v, u ≁ v and N(u) ∩ N(v) ≠ ∅ (a path u–k–v of
 *               length 2 exists, and none shorter);
 *   d(u,v) = 3  otherwise (no path of length ≤ 2, and 3 is an upper bound).
 * N(u) ∩ N(v) ranges over the whole graph, not just over B(i) ∪ B(j), so the
 * "distance ≤ 2" sets are precomputed once per matrix as bitsets
 * near(u) = N(u) ∪ ⋃_{k∈N(u)} N(k).
 *
 * ---- The exact W₁ with costs in {1, 2, 3} as one maximum flow -----------
 * 1. The common mass stays in place: for a metric cost, W₁(μ, ν) depends only
 *    on μ − ν (Kantorovich–Rubinstein), so W₁(μ, ν) = W₁(a, b) with
 *    a = (μ − ν)⁺ on the "sources" P and b = (ν − μ)⁺ on the "sinks" Q,
 *    disjoint sets, Σa = Σb = T, and every cost c(p,q) ∈ {1, 2, 3}.
 * 2. LP duality: W₁ = max Σ_p a_p α_p − Σ_q b_q β_q subject to
 *    α_p − β_q ≤ c(p,q). The constraint matrix is a bipartite incidence
 *    matrix (totally unimodular) and c is integral, so an integral optimum
 *    exists. Replacing α_p by min_q(β_q + c(p,q)), then β_q by
 *    max_p(α_p − c(p,q)) keeps feasibility and does not lower the objective
 *    (a, b > 0); shifting so that min β = 0 (Σa = Σb) then gives
 *    α_p ≤ β_{q₀} + c ≤ 3, α_p ≥ min β + 1 = 1, and
 *    0 ≤ β_q ≤ max α − 1 ≤ 2. So α ∈ {1,2,3}, β ∈ {0,1,2}.
 * 3. Write α_p = 1 + x1_p + x2_p, β_q = y1_q + y2_q with binary
 *    x1 ≥ x2, y1 ≥ y2 (x_t = [α ≥ t+1], y_t = [β ≥ t]). The constraints become
 *      c = 1:  x1_p ≤ y1_q  and  x2_p ≤ y2_q;
 *      c = 2:  x2_p ≤ y1_q;
 *      c = 3:  none;
 *    and W₁ = T + max { Σ a_p (x1_p + x2_p) − Σ b_q (y1_q + y2_q) } over the
 *    sets closed under these implications: a maximum-weight closure
 *    (Picard 1976), which is 2T − (minimum s–t cut) of the network
 *      s → x1_p, s → x2_p (capacity a_p);  y1_q → t, y2_q → t (capacity b_q);
 *      x1_p → y1_q, x2_p → y2_q (c = 1), x2_p → y1_q (c ≤ 2),
 *      x2_p → x1_p, y2_q → y1_q   (all of infinite capacity).
 *    So  W₁ = 3T − maxflow.  (Primal reading: a unit moved at cost c saves
 *    3 − c against the worst case 3; the two layers count the savings.)
 * 4. The maximum flow: a greedy start along the arcs of each source, then
 *    Dinic's phases (Dinic 1970, "Algorithm for solution of a problem of
 *    maximum flow in a network with power estimation", Soviet Math. Dokl.
 *    11): a breadth-first search over bitsets of the local arc sets gives
 *    the levels, and a depth-first blocking flow pushes along every
 *    shortest augmenting path of the level graph, with residual capacities
 *    ≤ tol (4ε·T) treated as saturated. Every push drives the residual of
 *    its bottleneck (an arc, a source's supply or a sink's demand) to
 *    exactly 0 (x − x), so the phase count bound (levels only grow) holds in
 *    floating point too; no entropic smoothing, no iteration to a
 *    tolerance: the optimum is exact up to rounding of the masses.
 *    A search ends early once nothing it could still report is missing
 *    (ot_round says why that changes no push).
 * 5. The edges' problems are independent: they run in fixed blocks on a
 *    thread pool, and the per-edge values are summed in edge order after,
 *    so the record is the same bytes at any thread count. Each block carves
 *    its scratch from its thread's ag_matrix_work (ag_workers, slot
 *    AG_WK_CURVATURE), the per-thread buffers the heads' metrics use.
 * Each problem has |P| + |Q| ≤ deg(i) + deg(j) + 2 points; a breadth-first
 * search costs O((|P| + |Q|)² / 64) word operations.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "base/parallel_int.h"
#include "base/sized_int.h"
#include "work.h"

typedef uint64_t word;

static size_t nwords(size_t bits) { return (bits + 63) / 64; }
#define BSET(s, k) ((s)[(k) >> 6] |= (word)1 << ((k)&63))
#define BCLR(s, k) ((s)[(k) >> 6] &= ~((word)1 << ((k)&63)))
#define BTEST(s, k) (((s)[(k) >> 6] >> ((k)&63)) & 1)

/* ======================================================================
 * The transportation solver: sources a[0..p), sinks b[0..q), arc sets
 * A1 (cost 1) and A2 (cost ≤ 2) as bitsets over the sinks, one row per
 * source. Everything not in A2 costs 3.
 * ==================================================================== */

#define NONE UINT32_MAX

typedef struct {
    size_t zp, zq, zpq, zqp;  /* g, h, f11/f21/f22, F and L are zero below these
                               * (items; ot_cover) */
    size_t p, q, pw, qw;
    int no3;                  /* 1: the caller knows A2 is full (no pair at cost 3) and
                               * left it unset; 0: look at A2 */
    double *a, *b;
    double *src1, *src2, *snk1, *snk2, *g, *h;
    double *f11, *f21, *f22;  /* p × q (row p, stride q): x1→y1, x2→y1, x2→y2 */
    word *A1, *A2;            /* p × qw */
    word *F11, *F21, *F22;    /* q × pw: bit p set iff that flow is > 0 */
    word *L11, *L21, *L22;    /* q × pw: bit p set iff that flow is > tol (the reverse arcs
                               * a search may take; F keeps what to clear afterwards) */
    word *live1, *live2;      /* qw: sink j's demand snk1/snk2[j] > tol (greedy start) */
    word *dead1, *dead2;      /* qw: sinks no search can reach any more (ot_round) */
    word *vis;                /* X1 | X2 | Y1 | Y2 */
    uint32_t *queue, *parent; /* 2(p + q) */
    uint32_t *level, *cur;    /* 2(p + q): search distance (NONE: blocked), next arc */
    word *lv;                 /* per level (at most 2(p + q)): its unblocked nodes,
                               * laid out as vis */
} ot_ws;

/* Bump allocation in one block: `count` items of `size` bytes at the next
 * 64-byte boundary from *at, which moves past them. A NULL base only counts
 * the bytes (and gives NULL). */
static void *carve(char *base, size_t *at, size_t count, size_t size)
{
    size_t off = (*at + 63) / 64 * 64;
    *at = off + count * size;
    return base ? base + off : NULL;
}

/* The arrays of w in the block at base, for problems of p sources and q
 * sinks with p + q ≤ span (the points of two balls: p·q ≤ ⌊span/2⌋·⌈span/2⌉,
 * pw + qw ≤ nwords(span) + 1). Nothing is zeroed: ot_cover does that. */
static void ot_layout(ot_ws *w, char *base, size_t *at, size_t span)
{
    size_t u = span, pq = (span / 2) * (span - span / 2), bits = span * nwords(span);
    size_t nodes = 2 * span, set = 2 * (nwords(span) + 1);
    memset(w, 0, sizeof *w);
    w->a = carve(base, at, u, sizeof(double));
    w->src1 = carve(base, at, u, sizeof(double));
    w->src2 = carve(base, at, u, sizeof(double));
    w->g = carve(base, at, u, sizeof(double));
    w->b = carve(base, at, u, sizeof(double));
    w->snk1 = carve(base, at, u, sizeof(double));
    w->snk2 = carve(base, at, u, sizeof(double));
    w->h = carve(base, at, u, sizeof(double));
    w->f11 = carve(base, at, pq, sizeof(double));
    w->f21 = carve(base, at, pq, sizeof(double));
    w->f22 = carve(base, at, pq, sizeof(double));
    word **sets[] = {&w->A1, &w->A2, &w->F11, &w->F21, &w->F22, &w->L11, &w->L21, &w->L22};
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++)
        *sets[k] = carve(base, at, bits, sizeof(word));
    word **masks[] = {&w->live1, &w->live2, &w->dead1, &w->dead2};
    for (size_t k = 0; k < sizeof masks / sizeof *masks; k++)
        *masks[k] = carve(base, at, nwords(u), sizeof(word));
    w->vis = carve(base, at, set, sizeof(word));
    w->queue = carve(base, at, nodes, sizeof(uint32_t));
    w->parent = carve(base, at, nodes, sizeof(uint32_t));
    w->level = carve(base, at, nodes, sizeof(uint32_t));
    w->cur = carve(base, at, nodes, sizeof(uint32_t));
    w->lv = carve(base, at, (nodes + 1) * set, sizeof(word));
}

/* The k arrays arr[] of `size`-byte items are zero below *done: make them
 * zero below `want` too. */
static void zero_up_to(char *const *arr, size_t k, size_t size, size_t *done, size_t want)
{
    if (want <= *done)
        return;
    for (size_t t = 0; t < k; t++)
        memset(arr[t] + *done * size, 0, (want - *done) * size);
    *done = want;
}

/* Ready w for p sources and q sinks: the arrays that ot_solve expects zero
 * and leaves zero (flows g, h, f11, f21, f22 and the flow bitsets F, L) are
 * cleared once up to the largest problem the block has served, not per
 * problem. */
static void ot_cover(ot_ws *w, size_t p, size_t q)
{
    zero_up_to((char *[]){(char *)w->g}, 1, sizeof(double), &w->zp, p);
    zero_up_to((char *[]){(char *)w->h}, 1, sizeof(double), &w->zq, q);
    zero_up_to((char *[]){(char *)w->f11, (char *)w->f21, (char *)w->f22}, 3, sizeof(double),
               &w->zpq, p * q);
    zero_up_to((char *[]){(char *)w->F11, (char *)w->F21, (char *)w->F22, (char *)w->L11,
                          (char *)w->L21, (char *)w->L22},
               6, sizeof(word), &w->zqp, q * nwords(p));
}

/* Set the problem size and clear the arc bitsets A1, A2. */
static void ot_begin(ot_ws *w, size_t p, size_t q)
{
    w->p = p;
    w->q = q;
    w->no3 = 0;
    w->pw = nwords(p);
    w->qw = nwords(q);
    memset(w->A1, 0, p * w->qw * sizeof(word));
    memset(w->A2, 0, p * w->qw * sizeof(word));
}

/* Move min(*x, *y) from both (the smaller becomes exactly 0). */
static double take(double *x, double *y)
{
    double d;
    if (*x <= *y) {
        d = *x;
        *x = 0;
        *y -= d;
    } else {
        d = *y;
        *y = 0;
        *x -= d;
    }
    return d;
}

/* Source i (mass *src) sends to every sink j allowed by the bitset row adj
 * while both have mass; flow is recorded in f[i·q + j] and bit i of the rows
 * j of F and L. live marks the sinks with demand > tol (cleared here when a
 * sink's falls to tol or below), so exhausted sinks cost nothing. */
static double greedy_arcs(const ot_ws *w, size_t i, const word *adj, double *src, double *snk,
                          word *live, double *f, word *F, word *L, double tol)
{
    double flow = 0;
    for (size_t k = 0; k < w->qw && *src > tol; k++)
        for (word m = adj[k] & live[k]; m && *src > tol; m &= m - 1) {
            size_t j = k * 64 + (size_t)__builtin_ctzll(m);
            double d = take(src, &snk[j]);
            f[i * w->q + j] += d;
            BSET(F + j * w->pw, i);
            BSET(L + j * w->pw, i); /* d > tol: both had more than tol */
            if (!(snk[j] > tol))
                BCLR(live, j);
            flow += d;
        }
    return flow;
}

/* The bitset of the sinks j with snk[j] > tol. */
static void live_sinks(const ot_ws *w, const double *snk, word *live, double tol)
{
    memset(live, 0, w->qw * sizeof(word));
    for (size_t j = 0; j < w->q; j++)
        if (snk[j] > tol)
            BSET(live, j);
}

/* Greedy start: each source sends along its cheapest arcs while it can,
 * over the arc sets (src1→snk1 and src2→snk2 on A1, src2→snk1 on A2). */
static double ot_greedy(ot_ws *w, double tol)
{
    double flow = 0;
    live_sinks(w, w->snk1, w->live1, tol);
    live_sinks(w, w->snk2, w->live2, tol);
    for (size_t i = 0; i < w->p; i++) {
        const word *a1 = w->A1 + i * w->qw, *a2 = w->A2 + i * w->qw;
        flow += greedy_arcs(w, i, a1, &w->src1[i], w->snk1, w->live1, w->f11, w->F11, w->L11,
                            tol);
        flow += greedy_arcs(w, i, a1, &w->src2[i], w->snk2, w->live2, w->f22, w->F22, w->L22,
                            tol);
        flow += greedy_arcs(w, i, a2, &w->src2[i], w->snk1, w->live1, w->f21, w->F21, w->L21,
                            tol);
    }
    return flow;
}

/* Node ids: X1 p → p, X2 p → P + p, Y1 q → 2P + q, Y2 q → 2P + Q + q. */
enum { G_X1, G_X2, G_Y1, G_Y2 };

static int group_of(const ot_ws *w, uint32_t v, size_t *idx)
{
    size_t P = w->p, Q = w->q;
    if (v < P) { *idx = v; return G_X1; }
    if (v < 2 * P) { *idx = v - P; return G_X2; }
    if (v < 2 * P + Q) { *idx = v - 2 * P; return G_Y1; }
    *idx = v - 2 * P - Q;
    return G_Y2;
}

/* Residual capacity of arc u → v: +inf for the infinite forward arcs, the
 * flow for the reverse ones. */
static double *arc_flow(ot_ws *w, uint32_t u, uint32_t v, int *forward)
{
    size_t iu, iv;
    int gu = group_of(w, u, &iu), gv = group_of(w, v, &iv);
    size_t q = w->q;
    *forward = 1;
    switch (gu * 4 + gv) {
    case G_X1 * 4 + G_Y1: return &w->f11[iu * q + iv];
    case G_X2 * 4 + G_Y2: return &w->f22[iu * q + iv];
    case G_X2 * 4 + G_Y1: return &w->f21[iu * q + iv];
    case G_X2 * 4 + G_X1: return &w->g[iu];
    case G_Y2 * 4 + G_Y1: return &w->h[iu];
    }
    *forward = 0;
    switch (gu * 4 + gv) {
    case G_Y1 * 4 + G_X1: return &w->f11[iv * q + iu];
    case G_Y1 * 4 + G_X2: return &w->f21[iv * q + iu];
    case G_Y2 * 4 + G_X2: return &w->f22[iv * q + iu];
    case G_X1 * 4 + G_X2: return &w->g[iu];
    default: /* G_Y1 → G_Y2 */ return &w->h[iu];
    }
}

/* The rows of F and L holding the bit of arc u → v between an X and a Y
 * node (*L = NULL and NULL returned for the arcs X2→X1, Y2→Y1 and back). */
static word *arc_bits(ot_ws *w, uint32_t u, uint32_t v, size_t *pbit, word **L)
{
    size_t iu, iv;
    int gu = group_of(w, u, &iu), gv = group_of(w, v, &iv);
    size_t pw = w->pw;
    int x_to_y = gu <= G_X2 && gv >= G_Y1;
    int y_to_x = gu >= G_Y1 && gv <= G_X2;
    *L = NULL;
    if (!x_to_y && !y_to_x)
        return NULL;
    size_t ip = x_to_y ? iu : iv, iq = x_to_y ? iv : iu;
    int gx = x_to_y ? gu : gv, gy = x_to_y ? gv : gu;
    *pbit = ip;
    if (gx == G_X1) {
        *L = w->L11 + iq * pw;
        return w->F11 + iq * pw;
    }
    *L = (gy == G_Y1 ? w->L21 : w->L22) + iq * pw;
    return (gy == G_Y1 ? w->F21 : w->F22) + iq * pw;
}

/* Push along the path that ends at `end` (a sink node), followed back
 * through parent[] to a source: as much as its residual capacities, the
 * source's supply and the sink's demand allow. Returns the amount (0 when
 * the path is saturated). */
static double ot_push_path(ot_ws *w, uint32_t end, double tol)
{
    uint32_t *parent = w->parent;
    size_t ie;
    int ge = group_of(w, end, &ie);
    double *sink = ge == G_Y1 ? &w->snk1[ie] : &w->snk2[ie];
    double delta = *sink;
    uint32_t v = end;
    while (parent[v] != NONE) {
        int fwd;
        double *f = arc_flow(w, parent[v], v, &fwd);
        if (!fwd && *f < delta)
            delta = *f;
        v = parent[v];
    }
    size_t is;
    int gs = group_of(w, v, &is);
    double *source = gs == G_X1 ? &w->src1[is] : &w->src2[is];
    if (*source < delta)
        delta = *source;
    if (!(delta > tol))
        return 0;
    *sink = *sink == delta ? 0 : *sink - delta;
    *source = *source == delta ? 0 : *source - delta;
    for (v = end; parent[v] != NONE; v = parent[v]) {
        int fwd;
        uint32_t u = parent[v];
        double *f = arc_flow(w, u, v, &fwd);
        size_t bit;
        word *live;
        word *bits = arc_bits(w, u, v, &bit, &live);
        if (fwd) {
            *f += delta;
            if (bits) {
                BSET(bits, bit);
                BSET(live, bit); /* delta > tol */
            }
        } else {
            *f = *f == delta ? 0 : *f - delta;
            if (*f == 0 && bits)
                BCLR(bits, bit);
            if (!(*f > tol) && bits)
                BCLR(live, bit);
        }
    }
    return delta;
}

/* The first bit set in both row and mask (of `bits` bits) at or after
 * position pos, or `bits` when none. */
static size_t next_bit(const word *row, const word *mask, size_t bits, size_t pos)
{
    if (pos >= bits)
        return bits;
    size_t k = pos >> 6;
    word m = row[k] & mask[k] & (~(word)0 << (pos & 63));
    while (!m) {
        if (++k >= nwords(bits))
            return bits;
        m = row[k] & mask[k];
    }
    size_t j = k * 64 + (size_t)__builtin_ctzll(m);
    return j < bits ? j : bits;
}

/* The residual arc out of u at or after arc position *pos (updated to that
 * arc's), in a fixed order per node kind:
 *   X1 i: Y1 j (A1 row, positions 0..Q−1), X2 i (Q; when g_i > tol);
 *   X2 i: Y2 j (A1 row, 0..Q−1), Y1 j (A2 row, Q..2Q−1), X1 i (2Q);
 *   Y1 i: X1 j (L11, 0..P−1), X2 j (L21, P..2P−1), Y2 i (2P; when h_i > tol);
 *   Y2 i: X2 j (L22, 0..P−1), Y1 i (P).
 * Only heads in `next` (the unblocked nodes of the next level, laid out as
 * vis: X1, X2, Y1, Y2) count. Returns the head node, or NONE when no arc
 * is left. */
static uint32_t next_arc(const ot_ws *w, uint32_t u, uint32_t *pos, const word *next, double tol)
{
    size_t P = w->p, Q = w->q, pw = w->pw, qw = w->qw, i, j, at = *pos;
    const word *nx1 = next, *nx2 = nx1 + pw, *ny1 = nx2 + pw, *ny2 = ny1 + qw;
    uint32_t v = NONE;
    switch (group_of(w, u, &i)) {
    case G_X1:
        if (at < Q && (j = next_bit(w->A1 + i * qw, ny1, Q, at)) < Q)
            at = j, v = (uint32_t)(2 * P + j);
        else if (at <= Q && w->g[i] > tol && BTEST(nx2, i))
            at = Q, v = (uint32_t)(P + i);
        break;
    case G_X2:
        if (at < Q && (j = next_bit(w->A1 + i * qw, ny2, Q, at)) < Q)
            at = j, v = (uint32_t)(2 * P + Q + j);
        else if (at < 2 * Q &&
                 (j = next_bit(w->A2 + i * qw, ny1, Q, at < Q ? 0 : at - Q)) < Q)
            at = Q + j, v = (uint32_t)(2 * P + j);
        else if (at <= 2 * Q && BTEST(nx1, i))
            at = 2 * Q, v = (uint32_t)i;
        break;
    case G_Y1:
        if (at < P && (j = next_bit(w->L11 + i * pw, nx1, P, at)) < P)
            at = j, v = (uint32_t)j;
        else if (at < 2 * P &&
                 (j = next_bit(w->L21 + i * pw, nx2, P, at < P ? 0 : at - P)) < P)
            at = P + j, v = (uint32_t)(P + j);
        else if (at <= 2 * P && w->h[i] > tol && BTEST(ny2, i))
            at = 2 * P, v = (uint32_t)(2 * P + Q + i);
        break;
    default: /* G_Y2 */
        if (at < P && (j = next_bit(w->L22 + i * pw, nx2, P, at)) < P)
            at = j, v = (uint32_t)(P + j);
        else if (at <= P && BTEST(ny1, i))
            at = P, v = (uint32_t)(2 * P + i);
        break;
    }
    *pos = (uint32_t)at;
    return v;
}

/* Clear node v's bit in the node set `set` (laid out as vis). */
static void clear_node(const ot_ws *w, word *set, uint32_t v)
{
    size_t i;
    int g = group_of(w, v, &i);
    size_t off = g == G_X1 ? 0 : g == G_X2 ? w->pw : g == G_Y1 ? 2 * w->pw : 2 * w->pw + w->qw;
    BCLR(set + off, i);
}

/* The per-level node sets of the round's search (queue[0..tail), in level
 * order, so the last has the largest level) into w->lv, and an empty set
 * after the last level. */
static void ot_levels(ot_ws *w, const uint32_t *queue, size_t tail)
{
    size_t stride = 2 * (w->pw + w->qw), levels = (size_t)w->level[queue[tail - 1]] + 2;
    memset(w->lv, 0, levels * stride * sizeof(word));
    for (size_t k = 0; k < tail; k++) {
        uint32_t v = queue[k];
        size_t i;
        int g = group_of(w, v, &i);
        size_t off = g == G_X1 ? 0 : g == G_X2 ? w->pw : g == G_Y1 ? 2 * w->pw : 2 * w->pw + w->qw;
        BSET(w->lv + w->level[v] * stride + off, i);
    }
}

/* The demand left at sink node v (0 for a source node). */
static double demand(const ot_ws *w, uint32_t v)
{
    size_t i;
    int g = group_of(w, v, &i);
    return g == G_Y1 ? w->snk1[i] : g == G_Y2 ? w->snk2[i] : 0;
}

static double supply(const ot_ws *w, uint32_t v)
{
    size_t i;
    return group_of(w, v, &i) == G_X1 ? w->src1[i] : w->src2[i];
}

/* A blocking flow of the round's level graph (Dinic 1970): from each source
 * with supply (the search's seeds), depth-first along arcs u → v with
 * level(v) = level(u) + 1, keeping each node's current arc (next_arc's
 * position) and blocking a node (level NONE) once none is left; a push
 * along the path (ot_push_path, through parent[]) whenever the path reaches
 * a sink with demand. Every push goes along level arcs, as the search's
 * tree paths did, so the distances and the dead sinks stay valid (see
 * ot_round). Returns the amount pushed. */
static double ot_blocking(ot_ws *w, const uint32_t *seeds, size_t count, double tol)
{
    uint32_t *parent = w->parent, *level = w->level, *cur = w->cur;
    size_t stride = 2 * (w->pw + w->qw);
    double pushed = 0;
    for (size_t k = 0; k < count; k++) {
        uint32_t s = seeds[k], u = s;
        parent[s] = NONE;
        while (level[s] != NONE && supply(w, s) > tol) {
            if (u != s && demand(w, u) > tol) {
                double d = ot_push_path(w, u, tol);
                if (!(d > 0)) { /* cannot happen: every arc had > tol */
                    clear_node(w, w->lv + level[u] * stride, u);
                    level[u] = NONE;
                }
                pushed += d;
                u = s;
                continue;
            }
            uint32_t v = next_arc(w, u, &cur[u], w->lv + (level[u] + 1) * stride, tol);
            if (v != NONE) {
                parent[v] = u;
                u = v;
            } else { /* u is a dead end: block it, back up */
                clear_node(w, w->lv + level[u] * stride, u);
                level[u] = NONE;
                if (u != s) {
                    u = parent[u];
                    cur[u]++;
                }
            }
        }
    }
    return pushed;
}

/* The sinks with demand > tol that are not dead (dead1/dead2). */
static size_t ot_targets(const ot_ws *w, double tol)
{
    size_t count = 0;
    for (size_t j = 0; j < w->q; j++)
        count += (w->snk1[j] > tol && !BTEST(w->dead1, j)) +
                 (w->snk2[j] > tol && !BTEST(w->dead2, j));
    return count;
}

/* After a search that ran to its end: every sink with demand it did not
 * reach is dead. */
static void ot_bury(ot_ws *w, const word *vy1, const word *vy2, double tol)
{
    for (size_t j = 0; j < w->q; j++) {
        if (w->snk1[j] > tol && !BTEST(vy1, j))
            BSET(w->dead1, j);
        if (w->snk2[j] > tol && !BTEST(vy2, j))
            BSET(w->dead2, j);
    }
}

/* One round (a phase of Dinic 1970): a breadth-first search of the
 * residual network from every source with supply left, giving each node it
 * reaches its distance (level), then a blocking flow along the level arcs
 * (ot_blocking). Returns the amount pushed (0: the flow is maximum, as no
 * sink with demand is reachable).
 * The search stops once it has reached every sink with demand that is not
 * dead, and is not run at all when none is left; dead = not reached by an
 * earlier search that ran to its end. Why that is sound: every push goes
 * along level arcs u → v with d(v) = d(u) + 1 (d the round's breadth-first
 * distances from the sources), so the reverse arcs it opens go down a
 * level, and the arcs it closes (saturated reverse arcs, spent supply) only
 * remove paths; hence no distance ever decreases (Edmonds & Karp 1972,
 * Lemma 1 — their proof holds for every push along level arcs, as in
 * Dinic's phases), and a sink once unreachable stays so. Nodes the stopped
 * search did not reach are left out of the phase; a later round reaches
 * them if they matter. */
static double ot_round(ot_ws *w, double tol)
{
    size_t P = w->p, Q = w->q, pw = w->pw, qw = w->qw;
    size_t want = ot_targets(w, tol);
    if (want == 0)
        return 0;
    word *vx1 = w->vis, *vx2 = vx1 + pw, *vy1 = vx2 + pw, *vy2 = vy1 + qw;
    memset(w->vis, 0, 2 * (pw + qw) * sizeof(word));
    uint32_t *queue = w->queue;
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < P; i++)
        if (w->src1[i] > tol) {
            BSET(vx1, i);
            w->level[i] = 0;
            queue[tail++] = (uint32_t)i;
        }
    for (size_t i = 0; i < P; i++)
        if (w->src2[i] > tol) {
            BSET(vx2, i);
            w->level[P + i] = 0;
            queue[tail++] = (uint32_t)(P + i);
        }
    size_t seeds = tail;
#define VISIT(vset, idx, id, from)                  \
    do {                                            \
        BSET(vset, idx);                            \
        w->level[id] = w->level[from] + 1;          \
        w->cur[id] = 0;                             \
        queue[tail++] = (uint32_t)(id);             \
    } while (0)
/* a sink with demand reached: one target fewer unless it is dead */
#define END(dead, idx) (want -= !BTEST(dead, idx))
    while (head < tail && want > 0) {
        uint32_t u = queue[head++];
        size_t i;
        int gu = group_of(w, u, &i);
        if (gu == G_X1 || gu == G_X2) {
            const word *a1 = w->A1 + i * qw;
            word *vy = gu == G_X1 ? vy1 : vy2;
            const double *snk = gu == G_X1 ? w->snk1 : w->snk2;
            const word *dead = gu == G_X1 ? w->dead1 : w->dead2;
            size_t base = gu == G_X1 ? 2 * P : 2 * P + Q;
            for (size_t k = 0; k < qw; k++)
                for (word m = a1[k] & ~vy[k]; m; m &= m - 1) {
                    size_t j = k * 64 + (size_t)__builtin_ctzll(m);
                    VISIT(vy, j, base + j, u);
                    if (snk[j] > tol) {
                        END(dead, j);
                        if (want == 0)
                            goto searched; /* the rest would only be enqueued */
                    }
                }
            if (gu == G_X2) {
                const word *a2 = w->A2 + i * qw;
                for (size_t k = 0; k < qw; k++)
                    for (word m = a2[k] & ~vy1[k]; m; m &= m - 1) {
                        size_t j = k * 64 + (size_t)__builtin_ctzll(m);
                        VISIT(vy1, j, 2 * P + j, u);
                        if (w->snk1[j] > tol) {
                            END(w->dead1, j);
                            if (want == 0)
                                goto searched;
                        }
                    }
                if (!BTEST(vx1, i))
                    VISIT(vx1, i, i, u);
            } else if (w->g[i] > tol && !BTEST(vx2, i)) {
                VISIT(vx2, i, P + i, u);
            }
        } else if (gu == G_Y1) {
            /* the reverse arcs with flow > tol: the L bits */
            const word *l11 = w->L11 + i * pw, *l21 = w->L21 + i * pw;
            for (size_t k = 0; k < pw; k++)
                for (word m = l11[k] & ~vx1[k]; m; m &= m - 1) {
                    size_t j = k * 64 + (size_t)__builtin_ctzll(m);
                    VISIT(vx1, j, j, u);
                }
            for (size_t k = 0; k < pw; k++)
                for (word m = l21[k] & ~vx2[k]; m; m &= m - 1) {
                    size_t j = k * 64 + (size_t)__builtin_ctzll(m);
                    VISIT(vx2, j, P + j, u);
                }
            if (w->h[i] > tol && !BTEST(vy2, i)) {
                VISIT(vy2, i, 2 * P + Q + i, u);
                if (w->snk2[i] > tol)
                    END(w->dead2, i);
            }
        } else { /* G_Y2 */
            const word *l22 = w->L22 + i * pw;
            for (size_t k = 0; k < pw; k++)
                for (word m = l22[k] & ~vx2[k]; m; m &= m - 1) {
                    size_t j = k * 64 + (size_t)__builtin_ctzll(m);
                    VISIT(vx2, j, P + j, u);
                }
            if (!BTEST(vy1, i)) {
                VISIT(vy1, i, 2 * P + i, u);
                if (w->snk1[i] > tol)
                    END(w->dead1, i);
            }
        }
    }
searched:
#undef VISIT
#undef END
    if (want > 0) /* the search ran to its end */
        ot_bury(w, vy1, vy2, tol);
    if (seeds == 0)
        return 0;
    for (size_t k = 0; k < seeds; k++)
        w->cur[queue[k]] = 0;
    ot_levels(w, queue, tail);
    return ot_blocking(w, queue, seeds, tol);
}

/* W₁ of the prepared problem (w->a, w->b, A1, A2 set by the caller). */
static double ot_solve(ot_ws *w)
{
    size_t p = w->p, q = w->q, pw = w->pw;
    double sa = 0, sb = 0;
    for (size_t i = 0; i < p; i++)
        sa += w->a[i];
    for (size_t j = 0; j < q; j++)
        sb += w->b[j];
    double T = 0.5 * (sa + sb);
    if (p == 0 || q == 0)
        return 3 * T; /* nothing to move (up to rounding) */
    double tol = 4 * DBL_EPSILON * T;
    /* No pair at cost 3 (the common case in dense graphs): W₁ = T + (mass
     * moved at cost 2) = 2T − (mass moved at cost 1), and the mass that can
     * move at cost 1 is the maximum flow of the first layer alone (any such
     * flow completes to a transport plan with cost-2 arcs). The second layer
     * is then left empty, and A2 is never read (the greedy start and the
     * searches reach it only from supply src2 or flow g, both 0): a caller
     * that knows (w->no3) may leave it unset. */
    int no3 = 1;
    size_t qw = w->qw;
    word last = q % 64 ? ((word)1 << (q % 64)) - 1 : ~(word)0;
    for (size_t i = 0; i < p && no3 && !w->no3; i++)
        for (size_t k = 0; k < qw; k++)
            if (w->A2[i * qw + k] != (k + 1 < qw ? ~(word)0 : last)) {
                no3 = 0;
                break;
            }
    memcpy(w->src1, w->a, p * sizeof(double));
    memcpy(w->snk1, w->b, q * sizeof(double));
    if (no3) {
        memset(w->src2, 0, p * sizeof(double));
        memset(w->snk2, 0, q * sizeof(double));
    } else {
        memcpy(w->src2, w->a, p * sizeof(double));
        memcpy(w->snk2, w->b, q * sizeof(double));
    }
    double flow = ot_greedy(w, tol);
    memset(w->dead1, 0, w->qw * sizeof(word));
    memset(w->dead2, 0, w->qw * sizeof(word));
    for (;;) {
        double d = ot_round(w, tol);
        if (d == 0)
            break;
        flow += d;
    }
    /* leave the flow arrays zero for the next problem */
    word *sets[3] = {w->F11, w->F21, w->F22};
    double *flows[3] = {w->f11, w->f21, w->f22};
    for (int s = 0; s < 3; s++)
        for (size_t j = 0; j < q; j++) {
            word *row = sets[s] + j * pw;
            for (size_t k = 0; k < pw; k++) {
                for (word m = row[k]; m; m &= m - 1)
                    flows[s][(k * 64 + (size_t)__builtin_ctzll(m)) * q + j] = 0;
                row[k] = 0;
            }
        }
    memset(w->L11, 0, q * pw * sizeof(word));
    memset(w->L21, 0, q * pw * sizeof(word));
    memset(w->L22, 0, q * pw * sizeof(word));
    memset(w->g, 0, p * sizeof(double));
    memset(w->h, 0, q * sizeof(double));
    double w1 = (no3 ? 2 : 3) * T - flow;
    return w1 > 0 ? w1 : 0;
}

/* Equal up to rounding: |x − y| ≤ 4ε·max(x, y). */
static int same_mass(double x, double y)
{
    return fabs(x - y) <= 4 * DBL_EPSILON * fmax(x, y);
}

int ag_wasserstein1_hops(const double *mu, const double *nu, size_t k,
                         const unsigned char *hops, double *w1, ag_error *err)
{
    double smu = 0, snu = 0;
    for (size_t u = 0; u < k; u++) {
        if (!(mu[u] >= 0) || !(nu[u] >= 0) || !isfinite(mu[u]) || !isfinite(nu[u]))
            return ag_error_set(err, AG_EINVAL, "W1: mass %zu is negative or not finite", u);
        smu += mu[u];
        snu += nu[u];
        for (size_t v = 0; v < k; v++) {
            unsigned c = hops[u * k + v];
            if (c > 3 || (c == 0) != (u == v) || c != hops[v * k + u])
                return ag_error_set(err, AG_EINVAL,
                                    "W1: hop distance (%zu, %zu) = %u is not a metric in 0..3",
                                    u, v, c);
        }
    }
    if (fabs(smu - snu) > 1e-12 * fmax(smu, snu))
        return ag_error_set(err, AG_EINVAL, "W1: total masses differ (%.17g, %.17g)", smu, snu);
    ot_ws w;
    size_t p = 0, q = 0, bytes = 0;
    for (size_t u = 0; u < k; u++)
        if (!same_mass(mu[u], nu[u]))
            *(mu[u] > nu[u] ? &p : &q) += 1;
    ot_layout(&w, NULL, &bytes, p + q);
    /* the transport scratch alone, on the 64-byte boundary carve's offsets
     * count from (as ag_work_get gives it to the edges' tasks) */
    char *block = aligned_alloc(64, (bytes + 63) / 64 * 64);
    size_t *pi = malloc((p + 1) * sizeof *pi), *qi = malloc((q + 1) * sizeof *qi);
    if (!block || !pi || !qi) {
        free(pi);
        free(qi);
        free(block);
        return ag_error_set(err, AG_ENOMEM, "W1: out of memory");
    }
    bytes = 0;
    ot_layout(&w, block, &bytes, p + q);
    ot_cover(&w, p, q);
    ot_begin(&w, p, q);
    p = q = 0;
    for (size_t u = 0; u < k; u++) {
        if (same_mass(mu[u], nu[u]))
            continue;
        if (mu[u] > nu[u]) {
            w.a[p] = mu[u] - nu[u];
            pi[p++] = u;
        } else {
            w.b[q] = nu[u] - mu[u];
            qi[q++] = u;
        }
    }
    for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < q; j++) {
            unsigned c = hops[pi[i] * k + qi[j]];
            if (c == 1)
                BSET(w.A1 + i * w.qw, j);
            if (c <= 2)
                BSET(w.A2 + i * w.qw, j);
        }
    *w1 = ot_solve(&w);
    free(pi);
    free(qi);
    free(block);
    return AG_OK;
}

/* ======================================================================
 * The graph of A and the curvatures of its edges.
 * ==================================================================== */

typedef struct {
    size_t n, words, edges;
    size_t *start;    /* CSR: neighbours of i are nbr[start[i] .. start[i+1]) */
    uint32_t *nbr;    /* ascending */
    double *wt;       /* W_ik */
    double *prob;     /* ½ W_ik / Σ_k' W_ik' (NaN when that sum is 0) */
    word *adj, *near; /* n × words: N(u), and the vertices at distance 1..2 */
} graph;

static void graph_free(graph *g)
{
    free(g->start);
    free(g->nbr);
    free(g->wt);
    free(g->prob);
    free(g->adj);
    free(g->near);
    memset(g, 0, sizeof *g);
}

static double wsym(const double *A, size_t n, size_t i, size_t j)
{
    /* (A_ij + A_ji)/2 without overflow; identical to it except in the
     * subnormal range */
    return 0.5 * A[i * n + j] + 0.5 * A[j * n + i];
}

static int graph_build(const double *A, size_t n, double tau, int want_near, graph *g)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->words = nwords(n);
    g->start = calloc(n + 1, sizeof *g->start);
    g->adj = calloc(n * g->words, sizeof(word));
    if (!g->start || !g->adj)
        return AG_ENOMEM;
    size_t *deg = g->start + 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (wsym(A, n, i, j) >= tau) {
                deg[i]++;
                deg[j]++;
                BSET(g->adj + i * g->words, j);
                BSET(g->adj + j * g->words, i);
                g->edges++;
            }
    for (size_t i = 0; i < n; i++)
        g->start[i + 1] += g->start[i];
    size_t m = g->start[n];
    g->nbr = malloc((m + 1) * sizeof *g->nbr);
    g->wt = malloc((m + 1) * sizeof *g->wt);
    g->prob = malloc((m + 1) * sizeof *g->prob);
    size_t *fill = malloc((n + 1) * sizeof *fill);
    if (!g->nbr || !g->wt || !g->prob || !fill) {
        free(fill);
        return AG_ENOMEM;
    }
    memcpy(fill, g->start, n * sizeof *fill);
    /* rows ascending, columns ascending: every list comes out sorted */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (BTEST(g->adj + i * g->words, j)) {
                double w = wsym(A, n, i, j);
                g->nbr[fill[i]] = (uint32_t)j;
                g->wt[fill[i]++] = w;
                g->nbr[fill[j]] = (uint32_t)i;
                g->wt[fill[j]++] = w;
            }
    free(fill);
    /* ½ w/Σw as ½ (w/m)/Σ(w/m), m the row's largest weight: Σw overflows
     * for weights near 1e308, the ratios to m cannot. */
    for (size_t i = 0; i < n; i++) {
        double top = 0, s = 0;
        for (size_t e = g->start[i]; e < g->start[i + 1]; e++)
            top = fmax(top, g->wt[e]);
        for (size_t e = g->start[i]; top > 0 && e < g->start[i + 1]; e++)
            s += g->wt[e] / top;
        for (size_t e = g->start[i]; e < g->start[i + 1]; e++)
            g->prob[e] = s > 0 ? 0.5 * (g->wt[e] / top / s) : NAN;
    }
    if (!want_near)
        return AG_OK;
    g->near = malloc(n * g->words * sizeof(word));
    if (!g->near)
        return AG_ENOMEM;
    for (size_t u = 0; u < n; u++) {
        word *row = g->near + u * g->words;
        memcpy(row, g->adj + u * g->words, g->words * sizeof(word));
        for (size_t e = g->start[u]; e < g->start[u + 1]; e++) {
            const word *r = g->adj + (size_t)g->nbr[e] * g->words;
            for (size_t k = 0; k < g->words; k++)
                row[k] |= r[k];
        }
    }
    return AG_OK;
}

/* F(i,j) for the edge stored at position e of i's list. */
static double forman_edge(const graph *g, size_t i, size_t j, double wij)
{
    double s = 0;
    for (size_t e = g->start[i]; e < g->start[i + 1]; e++)
        if (g->nbr[e] != j)
            s += sqrt(wij / g->wt[e]);
    for (size_t e = g->start[j]; e < g->start[j + 1]; e++)
        if (g->nbr[e] != i)
            s += sqrt(wij / g->wt[e]);
    return 2 - s;
}

/* Scratch for the Ollivier edges of one task, carved from its thread's
 * ag_matrix_work (slot AG_WK_CURVATURE). */
typedef struct {
    ot_ws ot;
    double *mu, *nu;      /* n, zero between edges */
    double *da, *db;      /* n: the masses of the sources / sinks */
    uint32_t *pid, *qid;  /* n: their vertices */
    uint32_t *cw;         /* words: the non-zero words of qmask */
    word *qmask;          /* words: the sinks, zero between edges */
} oll_ws;

static void oll_layout(oll_ws *o, char *base, size_t *at, size_t n, size_t span)
{
    o->mu = carve(base, at, n, sizeof *o->mu);
    o->nu = carve(base, at, n, sizeof *o->nu);
    o->da = carve(base, at, n, sizeof *o->da);
    o->db = carve(base, at, n, sizeof *o->db);
    o->pid = carve(base, at, n, sizeof *o->pid);
    o->qid = carve(base, at, n, sizeof *o->qid);
    o->cw = carve(base, at, nwords(n), sizeof *o->cw);
    o->qmask = carve(base, at, nwords(n), sizeof *o->qmask);
    ot_layout(&o->ot, base, at, span);
}

/* o in work's curvature slot for an n-vertex graph whose edges' balls hold
 * at most `span` vertices; whatever the slot held is never read (every
 * array is cleared or written before use). -1 when out of memory. */
static int oll_init(oll_ws *o, ag_matrix_work *work, size_t n, size_t span)
{
    size_t bytes = 0;
    oll_layout(o, NULL, &bytes, n, span);
    char *block = ag_work_get(work, AG_WK_CURVATURE, bytes);
    if (!block)
        return -1;
    bytes = 0;
    oll_layout(o, block, &bytes, n, span);
    memset(o->mu, 0, n * sizeof *o->mu);
    memset(o->nu, 0, n * sizeof *o->nu);
    memset(o->qmask, 0, nwords(n) * sizeof *o->qmask);
    return 0;
}

/* Compress `src` (a global bitset of `words` words) to the positions set in
 * the sink mask: bit k of out[] is set iff the k-th sink (in ascending
 * global order) is in src. `cw`/`cnt` list the non-zero mask words. */
static void compress_row(const word *src, const word *qmask, const uint32_t *cw, size_t ncw,
                         word *out)
{
    size_t off = 0;
    for (size_t t = 0; t < ncw; t++) {
        size_t c = cw[t];
        word qm = qmask[c], bits = 0;
        size_t k = 0;
        for (word m = qm, x = src[c]; m; m &= m - 1, k++)
            if (x & m & -m)
                bits |= (word)1 << k;
        out[off >> 6] |= bits << (off & 63);
        if ((off & 63) + k > 64)
            out[(off >> 6) + 1] |= bits >> (64 - (off & 63));
        off += k;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same with the BMI2 parallel-bit-extract instruction. */
__attribute__((target("bmi2,popcnt"))) static void compress_row_bmi2(
    const word *src, const word *qmask, const uint32_t *cw, size_t ncw, word *out)
{
    size_t off = 0;
    for (size_t t = 0; t < ncw; t++) {
        size_t c = cw[t];
        word qm = qmask[c];
        word bits = _pext_u64(src[c], qm);
        size_t k = (size_t)__builtin_popcountll(qm);
        out[off >> 6] |= bits << (off & 63);
        if ((off & 63) + k > 64)
            out[(off >> 6) + 1] |= bits >> (64 - (off & 63));
        off += k;
    }
}
/* __builtin_cpu_supports reads flags libgcc sets once at start-up: cheap,
 * and free of the data race a lazily written static cache would have. */
static int have_bmi2(void)
{
    return __builtin_cpu_supports("bmi2") != 0;
}
#else
static int have_bmi2(void) { return 0; }
#define compress_row_bmi2 compress_row
#endif

/* κ(i,j) = 1 − W₁(m_i, m_j); NaN when m_i or m_j is undefined. */
static double ollivier_edge(const graph *g, oll_ws *o, size_t i, size_t j)
{
    size_t words = g->words;
    o->mu[i] += 0.5;
    for (size_t e = g->start[i]; e < g->start[i + 1]; e++)
        o->mu[g->nbr[e]] += g->prob[e];
    o->nu[j] += 0.5;
    for (size_t e = g->start[j]; e < g->start[j + 1]; e++)
        o->nu[g->nbr[e]] += g->prob[e];
    /* the union of the two balls, in ascending order: sources and sinks come
     * out sorted, so a sink's local index is its rank in the sink mask */
    const word *ai = g->adj + i * words, *aj = g->adj + j * words;
    size_t p = 0, q = 0, ncw = 0;
    int undefined = 0;
    for (size_t c = 0; c < words; c++) {
        word u = ai[c] | aj[c];
        if (c == i >> 6)
            u |= (word)1 << (i & 63);
        if (c == j >> 6)
            u |= (word)1 << (j & 63);
        word qm = 0;
        for (; u; u &= u - 1) {
            size_t x = c * 64 + (size_t)__builtin_ctzll(u);
            double a = o->mu[x], b = o->nu[x];
            o->mu[x] = o->nu[x] = 0;
            if (isnan(a) || isnan(b)) {
                undefined = 1;
            } else if (!same_mass(a, b)) {
                if (a > b) {
                    o->pid[p] = (uint32_t)x;
                    o->da[p++] = a - b;
                } else {
                    o->qid[q] = (uint32_t)x;
                    o->db[q++] = b - a;
                    qm |= (word)1 << (x & 63);
                }
            }
        }
        o->qmask[c] = qm;
        if (qm)
            o->cw[ncw++] = (uint32_t)c;
    }
    if (undefined) {
        for (size_t t = 0; t < ncw; t++)
            o->qmask[o->cw[t]] = 0;
        return NAN;
    }
    ot_ws *w = &o->ot;
    ot_cover(w, p, q);
    ot_begin(w, p, q);
    memcpy(w->a, o->da, p * sizeof(double));
    memcpy(w->b, o->db, q * sizeof(double));
    /* every sink within distance 2 of every source (dense graphs): the
     * cost-2 arcs are all there and ot_solve needs no A2 (see there) */
    w->no3 = 1;
    for (size_t k = 0; k < p && w->no3; k++) {
        const word *near = g->near + (size_t)o->pid[k] * words;
        for (size_t t = 0; t < ncw && w->no3; t++)
            w->no3 = (near[o->cw[t]] & o->qmask[o->cw[t]]) == o->qmask[o->cw[t]];
    }
    int bmi2 = have_bmi2();
    for (size_t k = 0; k < p; k++) {
        size_t x = o->pid[k];
        const word *adj = g->adj + x * words, *near = g->near + x * words;
        word *a1 = w->A1 + k * w->qw, *a2 = w->A2 + k * w->qw;
        if (bmi2) {
            compress_row_bmi2(adj, o->qmask, o->cw, ncw, a1);
            if (!w->no3)
                compress_row_bmi2(near, o->qmask, o->cw, ncw, a2);
        } else {
            compress_row(adj, o->qmask, o->cw, ncw, a1);
            if (!w->no3)
                compress_row(near, o->qmask, o->cw, ncw, a2);
        }
    }
    for (size_t t = 0; t < ncw; t++)
        o->qmask[o->cw[t]] = 0;
    return 1 - ot_solve(w);
}

/* The input of both entry points; a negative *tau becomes the default 1/n. */
static int check_input(const double *A, size_t n, double *tau, int *negative, ag_error *err)
{
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "curvature: empty matrix");
    if (*tau < 0)
        *tau = 1.0 / (double)n;
    if (isnan(*tau) || *tau > 1)
        return ag_error_set(err, AG_EINVAL, "curvature: edge threshold %g not in [0, 1]", *tau);
    *negative = 0;
    for (size_t k = 0; k < n * n; k++) {
        if (!isfinite(A[k]))
            return ag_error_set(err, AG_ENONFINITE,
                                "non-finite value (%g) at row %zu, column %zu", A[k],
                                k / n, k % n);
        if (A[k] < 0)
            *negative = 1;
    }
    return AG_OK;
}

/* Walk the edges (i < j, lexicographic); per edge call back with F and κ. */
typedef void (*edge_fn)(void *user, size_t i, size_t j, double w, double forman, double kappa);

/* Edges per task: a fixed partition (never the thread count), so which
 * thread solves an edge never changes what is computed; ~256 transport
 * problems (tens of ms at n = 512) per task keep the pool's one lock per
 * task negligible and the two threads' loads even. */
#define EDGE_BLOCK 256

/* The per-edge values, computed in parallel and summarised afterwards in
 * edge order (so the sums are the same bytes at any thread count). */
typedef struct {
    const graph *g;
    ag_workers *workers; /* the pool, and each thread's workspace (oll_init) */
    int want_forman, want_ollivier;
    size_t span;     /* the most vertices in the balls of an edge: |N(i) ∪ N(j)| */
    size_t count;
    uint32_t *from;  /* count: i of each edge */
    size_t *at;      /* count: its position in i's list (j = nbr[at], W_ij = wt[at]) */
    double *forman, *kappa; /* count each */
} edge_job;

static int edge_block(size_t task, int worker, void *user)
{
    edge_job *J = user;
    const graph *g = J->g;
    oll_ws o;
    if (J->want_ollivier && oll_init(&o, ag_workers_work(J->workers), g->n, J->span) != 0)
        return AG_ENOMEM;
    size_t end = (task + 1) * EDGE_BLOCK < J->count ? (task + 1) * EDGE_BLOCK : J->count;
    for (size_t k = task * EDGE_BLOCK; k < end; k++) {
        size_t i = J->from[k], e = J->at[k], j = g->nbr[e];
        J->forman[k] = J->want_forman ? forman_edge(g, i, j, g->wt[e]) : NAN;
        J->kappa[k] = J->want_ollivier ? ollivier_edge(g, &o, i, j) : NAN;
    }
    return AG_OK;
}

static void edge_job_free(edge_job *J)
{
    free(J->from);
    free(J->at);
    free(J->forman);
    free(J->kappa);
}

/* The graph's edges in order into J (sizes capped by the edge count, which
 * graph_build counted within n(n−1)/2), and the largest ball union of an
 * edge (i ∈ N(j) and j ∈ N(i)). */
static int edge_job_init(edge_job *J, const graph *g, int want_forman, int want_ollivier)
{
    memset(J, 0, sizeof *J);
    J->g = g;
    J->want_forman = want_forman;
    J->want_ollivier = want_ollivier;
    size_t m = g->edges ? g->edges : 1;
    J->from = malloc(m * sizeof *J->from);
    J->at = malloc(m * sizeof *J->at);
    J->forman = malloc(m * sizeof *J->forman);
    J->kappa = malloc(m * sizeof *J->kappa);
    if (!J->from || !J->at || !J->forman || !J->kappa)
        return AG_ENOMEM;
    for (size_t i = 0; i < g->n; i++)
        for (size_t e = g->start[i]; e < g->start[i + 1]; e++)
            if (g->nbr[e] > i) {
                J->from[J->count] = (uint32_t)i;
                J->at[J->count++] = e;
            }
    for (size_t k = 0; want_ollivier && k < J->count; k++) {
        const word *ai = g->adj + (size_t)J->from[k] * g->words;
        const word *aj = g->adj + (size_t)g->nbr[J->at[k]] * g->words;
        size_t u = 0;
        for (size_t c = 0; c < g->words; c++)
            u += (size_t)__builtin_popcountll(ai[c] | aj[c]);
        J->span = u > J->span ? u : J->span;
    }
    return AG_OK;
}

/* Every edge's F and κ, then fn per edge in the order (0,1), (0,2), ...,
 * (1,2), ... The edges run on workers' pool, each thread's transport
 * workspace carved from its own ag_matrix_work; without workers (or from a
 * task whose worker number they do not cover), on pool with workspaces made
 * for the call. */
static int walk_edges(const graph *g, int want_forman, int want_ollivier, ag_pool *pool,
                      ag_workers *workers, edge_fn fn, void *user, ag_error *err)
{
    ag_workers *own = NULL;
    edge_job *J = malloc(sizeof *J);
    int status = J ? edge_job_init(J, g, want_forman, want_ollivier) : AG_ENOMEM;
    if (status == AG_OK && !ag_workers_work(workers))
        status = agb_workers_borrow(workers ? ag_workers_pool(workers) : pool, &own, NULL);
    if (status == AG_OK) {
        J->workers = own ? own : workers;
        status = ag_pool_run(ag_workers_pool(J->workers), (J->count + EDGE_BLOCK - 1) / EDGE_BLOCK,
                             edge_block, J);
    }
    if (status == AG_OK)
        for (size_t k = 0; k < J->count; k++)
            fn(user, J->from[k], g->nbr[J->at[k]], g->wt[J->at[k]], J->forman[k], J->kappa[k]);
    if (J)
        edge_job_free(J);
    free(J);
    ag_workers_free(own);
    return status == AG_OK ? AG_OK : ag_error_set(err, status, "curvature: out of memory");
}

typedef struct {
    size_t count;
    double fsum, fmin, ksum, kmin;
    int fbad, kbad;
} summary;

static void summarize(void *user, size_t i, size_t j, double w, double f, double k)
{
    summary *s = user;
    if (s->count++ == 0) {
        s->fmin = INFINITY;
        s->kmin = INFINITY;
    }
    if (isfinite(f)) {
        s->fsum += f;
        s->fmin = fmin(s->fmin, f);
    } else {
        s->fbad = 1;
    }
    if (isfinite(k)) {
        s->ksum += k;
        s->kmin = fmin(s->kmin, k);
    } else {
        s->kbad = 1;
    }
}

int ag_curvature_metrics(const double *A, size_t n, double tau, const ag_metric_set *sel,
                         ag_record *rec, ag_error *err)
{
    ag_curvature_options o = AG_CURVATURE_OPTIONS_DEFAULT;
    o.edge_threshold = tau;
    return ag_curvature_metrics_ex(A, n, sel, &o, rec, err);
}

int ag_curvature_metrics_ex(const double *A, size_t n, const ag_metric_set *sel,
                            const ag_curvature_options *opt, ag_record *rec, ag_error *err)
{
    ag_curvature_options o = AG_CURVATURE_OPTIONS_DEFAULT;
    if (opt && AG_SIZED_READ(&o, opt, ag_curvature_options, err) != AG_OK)
        return AG_EINVAL;
    double tau = o.edge_threshold;
    int negative;
    int status = check_input(A, n, &tau, &negative, err);
    if (status != AG_OK)
        return status;
    static const ag_metric keys[] = {AG_M_EDGES, AG_M_FORMAN_MEAN, AG_M_FORMAN_MIN,
                                     AG_M_OLLIVIER_MEAN, AG_M_OLLIVIER_MIN};
    int any = 0;
    for (size_t k = 0; k < 5; k++)
        any |= sel->on[keys[k]];
    if (!any)
        return AG_OK;
    if (negative) {
        for (size_t k = 0; k < 5; k++)
            if (sel->on[keys[k]])
                ag_record_set(rec, keys[k], AG_V_NULL, 0);
        return AG_OK;
    }
    int want_f = sel->on[AG_M_FORMAN_MEAN] || sel->on[AG_M_FORMAN_MIN];
    int want_k = sel->on[AG_M_OLLIVIER_MEAN] || sel->on[AG_M_OLLIVIER_MIN];
    graph g;
    status = graph_build(A, n, tau, want_k, &g);
    summary s = {0};
    if (status == AG_OK && g.edges > 0 && (want_f || want_k))
        status = walk_edges(&g, want_f, want_k, o.pool, o.workers, summarize, &s, err);
    else if (status != AG_OK)
        ag_error_set(err, status, "curvature: out of memory for the %zu-vertex graph", n);
    size_t edges = g.edges;
    graph_free(&g);
    if (status != AG_OK)
        return status;
    if (sel->on[AG_M_EDGES])
        ag_record_set(rec, AG_M_EDGES, AG_V_INTEGER, (double)edges);
    int fnull = edges == 0 || s.fbad, knull = edges == 0 || s.kbad;
    if (sel->on[AG_M_FORMAN_MEAN])
        ag_record_set(rec, AG_M_FORMAN_MEAN, fnull ? AG_V_NULL : AG_V_NUMBER,
                      fnull ? 0 : s.fsum / (double)edges);
    if (sel->on[AG_M_FORMAN_MIN])
        ag_record_set(rec, AG_M_FORMAN_MIN, fnull ? AG_V_NULL : AG_V_NUMBER, fnull ? 0 : s.fmin);
    if (sel->on[AG_M_OLLIVIER_MEAN])
        ag_record_set(rec, AG_M_OLLIVIER_MEAN, knull ? AG_V_NULL : AG_V_NUMBER,
                      knull ? 0 : s.ksum / (double)edges);
    if (sel->on[AG_M_OLLIVIER_MIN])
        ag_record_set(rec, AG_M_OLLIVIER_MIN, knull ? AG_V_NULL : AG_V_NUMBER,
                      knull ? 0 : s.kmin);
    return AG_OK;
}

typedef struct {
    ag_curvature_edge *items;
    size_t count;
} edge_list;

static void collect(void *user, size_t i, size_t j, double w, double f, double k)
{
    edge_list *l = user;
    l->items[l->count++] = (ag_curvature_edge){.i = i, .j = j, .weight = w, .forman = f,
                                               .ollivier = k};
}

int ag_curvature_edges(const double *A, size_t n, double tau, int with_ollivier,
                       ag_curvature_edge **edges, size_t *count, ag_error *err)
{
    int negative;
    *edges = NULL;
    *count = 0;
    int status = check_input(A, n, &tau, &negative, err);
    if (status != AG_OK)
        return status;
    if (negative)
        return ag_error_set(err, AG_EINVAL, "curvature: the matrix has a negative entry");
    graph g;
    if (graph_build(A, n, tau, with_ollivier, &g) != AG_OK) {
        graph_free(&g);
        return ag_error_set(err, AG_ENOMEM, "curvature: out of memory for the %zu-vertex graph", n);
    }
    edge_list l = {0};
    if (g.edges > 0) {
        l.items = malloc(g.edges * sizeof *l.items);
        if (!l.items) {
            graph_free(&g);
            return ag_error_set(err, AG_ENOMEM, "curvature: out of memory for %zu edges", g.edges);
        }
        status = walk_edges(&g, 1, with_ollivier, NULL, NULL, collect, &l, err);
    }
    graph_free(&g);
    if (status != AG_OK) {
        free(l.items);
        return status;
    }
    *edges = l.items;
    *count = l.count;
    return AG_OK;
}
