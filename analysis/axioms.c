/* axioms.c — docs/metrics.md, family L: which metric axioms the cost
 * d_ij = −ln A_ij of a square attention matrix satisfies (the metric
 * axioms as in Deza & Deza, "Encyclopedia of Distances", 4th ed., §1.1:
 * d(i,i) = 0, symmetry, the triangle inequality). The mission's note that
 * QKᵀ is a learned relation that "need not satisfy symmetry, positivity or
 * the triangle inequality" is measured here on the probabilities A.
 *
 * The cost is finite only where A_ij > 0 (a masked or underflowed entry is
 * no finite cost) and is clamped at 0 where rounding puts A_ij above 1, so
 * that d ≥ 0 always. Every buffer comes from the caller's workspace. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis.h"

/* d_ik > (d_ij + d_jk)·(1 + 1e-12): the relative tolerance of
 * triangle_violation (docs/metrics.md), so that an equality that holds
 * exactly in the reals (a true metric's collinear points) is never counted
 * for the rounding of the three logarithms. */
#define AXIOM_SLACK (1.0 + 1e-12)

static double cost_of(double a)
{
    double d = -log(a);
    return d > 0 ? d : 0;
}

/* The two copies of d the triangle count reads, the finite pattern as bit
 * rows and each row's range [lo, hi) of finite entries. */
typedef struct {
    double *left;    /* d, −inf where not finite: "d_ik >" is then false */
    double *right;   /* d, +inf where not finite: "> d_ij + d_jk" is then false */
    uint64_t *bits;  /* row i, word w: bit b set iff d_i,(64w+b) is finite */
    size_t words, *lo, *hi;
} costs;

/* Row i of c from row i of A (n entries). */
static void cost_row(const double *a, size_t n, size_t i, costs *c)
{
    double *left = c->left + i * n, *right = c->right + i * n;
    uint64_t *bits = c->bits + i * c->words;
    c->lo[i] = c->hi[i] = 0;
    for (size_t k = 0; k < n; k++) {
        int ok = a[k] > 0;
        double d = ok ? cost_of(a[k]) : 0;
        left[k] = ok ? d : -INFINITY;
        right[k] = ok ? d : INFINITY;
        if (!ok)
            continue;
        bits[k / 64] |= (uint64_t)1 << (k % 64);
        if (c->hi[i] == 0)
            c->lo[i] = k;
        c->hi[i] = k + 1;
    }
}

static int costs_build(const double *A, size_t n, ag_matrix_work *w, costs *c)
{
    c->words = (n + 63) / 64; /* n·n doubles fit (the caller's M), so this does */
    c->left = ag_work_doubles(w, AG_WK_COPY, n * n);
    c->right = ag_work_doubles(w, AG_WK_COPY2, n * n);
    size_t bytes = n * c->words * sizeof(uint64_t) + 2 * n * sizeof(size_t);
    unsigned char *p = ag_work_get(w, AG_WK_IWORK, bytes);
    if (!c->left || !c->right || !p)
        return AG_ENOMEM;
    memset(p, 0, n * c->words * sizeof(uint64_t));
    c->bits = (uint64_t *)p;
    c->lo = (size_t *)(p + n * c->words * sizeof(uint64_t));
    c->hi = c->lo + n;
    for (size_t i = 0; i < n; i++)
        cost_row(A + i * n, n, i, c);
    return AG_OK;
}

/* Four doubles, and the comparison masks of four (0 or −1 each): GCC's
 * and clang's vector extensions, so that the loop below runs in SIMD
 * registers (SSE2: two of each; AVX2: one) whether or not the compiler's
 * auto-vectoriser takes it (GCC 12's -O2 does not). */
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4i __attribute__((vector_size(32)));

/* #{k in [lo, hi) : li[k] > (dij + rj[k])·slack}, k = i and k = j
 * included: one comparison per k does the masking and the test. This loop
 * is what takes the time (n³ comparisons); two accumulators hide the
 * latency of the adds. Additions, multiplications and comparisons of IEEE
 * doubles only (no fused multiply-add: -std=c11 does not contract), so the
 * count is the scalar loop's in every clone (x86-64: an AVX2 one chosen at
 * load time, where the processor has it). */
AG_CLONES_AVX2
static uint64_t violations_over_k(const double *restrict li, const double *restrict rj,
                                  double dij, size_t lo, size_t hi)
{
    v4i acc0 = {0, 0, 0, 0}, acc1 = {0, 0, 0, 0};
    v4d dv = {dij, dij, dij, dij}, sv = {AXIOM_SLACK, AXIOM_SLACK, AXIOM_SLACK, AXIOM_SLACK};
    size_t k = lo;
    for (; k + 8 <= hi; k += 8) {
        v4d l0, r0, l1, r1; /* memcpy: li + k need not be 32-byte aligned */
        memcpy(&l0, li + k, sizeof l0);
        memcpy(&r0, rj + k, sizeof r0);
        memcpy(&l1, li + k + 4, sizeof l1);
        memcpy(&r1, rj + k + 4, sizeof r1);
        acc0 += (v4i)(l0 > (dv + r0) * sv);
        acc1 += (v4i)(l1 > (dv + r1) * sv);
    }
    acc0 += acc1;
    uint64_t count = -(uint64_t)(acc0[0] + acc0[1] + acc0[2] + acc0[3]);
    for (; k < hi; k++)
        count += li[k] > (dij + rj[k]) * AXIOM_SLACK;
    return count;
}

/* Bit k of bit row b. */
static unsigned bit_of(const uint64_t *b, size_t k)
{
    return (unsigned)(b[k / 64] >> (k % 64)) & 1u;
}

/* #{k ∉ {i, j} : d_ik and d_jk finite}, for a finite d_ij; every such k
 * lies in [lo, hi), where rows i and j both have finite entries. */
static uint64_t qualifying_over_k(const costs *c, size_t i, size_t j, size_t lo, size_t hi)
{
    const uint64_t *bi = c->bits + i * c->words, *bj = c->bits + j * c->words;
    uint64_t count = 0;
    for (size_t w = lo / 64; lo < hi && w <= (hi - 1) / 64; w++)
        count += (uint64_t)__builtin_popcountll(bi[w] & bj[w]);
    /* k = i: d_ii and d_ji finite; k = j: d_ij (finite here) and d_jj */
    return count - (bit_of(bi, i) & bit_of(bj, i)) - bit_of(bj, j);
}

/* The ordered triples of distinct tokens with three finite costs, and
 * those among them that break the triangle inequality. */
static void triangle_counts(const costs *c, size_t n, uint64_t *bad, uint64_t *total)
{
    *bad = *total = 0;
    for (size_t i = 0; i < n; i++) {
        const double *li = c->left + i * n;
        for (size_t j = 0; j < n; j++) {
            double dij = c->right[i * n + j];
            if (j == i || isinf(dij))
                continue;
            const double *rj = c->right + j * n;
            size_t lo = c->lo[i] > c->lo[j] ? c->lo[i] : c->lo[j];
            size_t hi = c->hi[i] < c->hi[j] ? c->hi[i] : c->hi[j];
            uint64_t v = lo < hi ? violations_over_k(li, rj, dij, lo, hi) : 0;
            /* k = i is no triple of distinct tokens: outside [lo, hi) its
             * comparison is false, so it was counted iff it is true. k = j
             * never counts: d_ij > (d_ij + d_jj)(1 + 1e-12) is false for
             * d ≥ 0. */
            v -= li[i] > (dij + rj[i]) * AXIOM_SLACK;
            *bad += v;
            *total += qualifying_over_k(c, i, j, lo, hi);
        }
    }
}

/* Neumaier's compensated running sum (as analysis/attention.c's row sums):
 * the means below stay within a few ulps of the exact mean at any n. */
typedef struct {
    double s, c;
} csum;

static void csum_add(csum *a, double x)
{
    double t = a->s + x;
    a->c += fabs(a->s) >= fabs(x) ? (a->s - t) + x : (x - t) + a->s;
    a->s = t;
}

static void set_mean(ag_record *rec, ag_metric m, csum sum, size_t count)
{
    ag_record_set(rec, m, count ? AG_V_NUMBER : AG_V_NULL,
                  count ? (sum.s + sum.c) / (double)count : 0);
}

/* symmetry_gap: the pairs i < j with both costs finite. */
static void symmetry_gap(const double *A, size_t n, ag_record *rec)
{
    csum sum = {0, 0};
    size_t pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            double a = A[i * n + j], b = A[j * n + i];
            if (!(a > 0 && b > 0))
                continue;
            double dij = cost_of(a), dji = cost_of(b), s = dij + dji;
            csum_add(&sum, s > 0 ? fabs(dij - dji) / s : 0);
            pairs++;
        }
    set_mean(rec, AG_M_SYMMETRY_GAP, sum, pairs);
}

static void self_cost(const double *A, size_t n, ag_record *rec)
{
    csum sum = {0, 0};
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (A[i * n + i] > 0) {
            csum_add(&sum, cost_of(A[i * n + i]));
            count++;
        }
    set_mean(rec, AG_M_SELF_COST, sum, count);
}

int ag_axioms_family(const double *A, size_t n, const ag_metric_set *sel, ag_matrix_work *w,
                     ag_record *rec)
{
    for (size_t k = 0; k < n * n; k++)
        if (A[k] < 0) { /* no cost −ln of a negative entry: null, as family F */
            static const ag_metric keys[] = {AG_M_TRIANGLE_VIOLATION, AG_M_SYMMETRY_GAP,
                                             AG_M_SELF_COST};
            for (size_t m = 0; m < 3; m++)
                if (sel->on[keys[m]])
                    ag_record_set(rec, keys[m], AG_V_NULL, 0);
            return AG_OK;
        }
    if (sel->on[AG_M_SYMMETRY_GAP])
        symmetry_gap(A, n, rec);
    if (sel->on[AG_M_SELF_COST])
        self_cost(A, n, rec);
    if (!sel->on[AG_M_TRIANGLE_VIOLATION])
        return AG_OK;
    costs c;
    int status = costs_build(A, n, w, &c);
    if (status != AG_OK)
        return status;
    uint64_t bad, total;
    triangle_counts(&c, n, &bad, &total);
    ag_record_set(rec, AG_M_TRIANGLE_VIOLATION, total ? AG_V_NUMBER : AG_V_NULL,
                  total ? (double)bad / (double)total : 0);
    return AG_OK;
}
