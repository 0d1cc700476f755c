/* cross.c — family M (docs/metrics.md, "M. Cross-attention"): how an m×n
 * attention A of m targets (rows, decoder queries) over n sources
 * (columns, encoder keys) aligns the two sequences. Attention began as
 * exactly this alignment (Bahdanau, Cho & Bengio 2014, "Neural machine
 * translation by jointly learning to align and translate", §3.1 and the
 * alignment plots of Fig. 3); the keys ask three things of it:
 *
 * alignment_monotonicity / alignment_kendall: does the source position
 *   each target attends to most, a_i = argmax_j A_ij, advance with the
 *   target position i (a monotone alignment, as in speech recognition and
 *   most close-language translation)? Spearman's ρ (GSL's
 *   gsl_stats_spearman: Pearson's r of the ranks, ties given their average
 *   rank, as scipy.stats.spearmanr) and Kendall's τ-b (Kendall 1945, "The
 *   treatment of ties in ranking problems"; scipy.stats.kendalltau's
 *   default) of the pairs (i, a_i). GSL has no Kendall τ: the positions i
 *   are distinct and already in order, so τ-b needs only the tied pairs
 *   and the inversions of a, counted with a Fenwick tree over the n source
 *   positions (Fenwick 1994) in O(m log n) — no cap on m.
 * source_coverage: how much of the source is attended at all — the share
 *   of source tokens whose attention summed over the targets reaches 1/n
 *   of the total, the coverage of Tu et al. 2016 ("Modeling coverage for
 *   neural machine translation", §3: the accumulated attention on each
 *   source word), thresholded at its uniform value.
 * cross_entropy_normalized: how spread each target's attention over the
 *   source is, H(A_i·)/ln n averaged over the targets (1 uniform, 0 one
 *   source token each). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "analysis.h"

#define ON(k) (sel->on[k])

/* a_i = argmax_j A_ij, the smallest j on a tie (numpy.argmax's), into y as
 * doubles, and i into x; 1 when every a_i is the same. */
static int argmax_rows(const double *A, size_t m, size_t n, double *x, double *y)
{
    int constant = 1;
    for (size_t i = 0; i < m; i++) {
        const double *row = A + i * n;
        size_t best = 0;
        for (size_t j = 1; j < n; j++)
            if (row[j] > row[best])
                best = j;
        x[i] = (double)i;
        y[i] = (double)best;
        constant &= y[i] == y[0];
    }
    return constant;
}

/* Kendall's τ-b of (i, a_i), i = 0..m−1 distinct and increasing: with no
 * tie in i, of the P = m(m−1)/2 pairs the U tied in a are neither
 * concordant nor discordant, the D inversions of a are discordant and the
 * rest concordant, so τ-b = (P − U − 2D) / √(P·(P − U)) (scipy's
 * (con − dis)/√(tot − xtie)/√(tot − ytie) with xtie = 0, up to the
 * rounding of one root against two), clipped to [−1, 1] as scipy does. tree: n + 1 counters (a Fenwick tree over the
 * source positions 1..n). */
static double kendall_tau_b(const double *y, size_t m, size_t n, uint64_t *tree)
{
    memset(tree, 0, (n + 1) * sizeof *tree);
    uint64_t inversions = 0, ties = 0;
    for (size_t i = 0; i < m; i++) {
        size_t v = (size_t)y[i] + 1; /* 1-based */
        uint64_t at_most = 0, below = 0;
        for (size_t k = v; k > 0; k -= k & -k)
            at_most += tree[k];
        for (size_t k = v - 1; k > 0; k -= k & -k)
            below += tree[k];
        inversions += (uint64_t)i - at_most; /* earlier a_j > a_i */
        ties += at_most - below;             /* earlier a_j = a_i */
        for (size_t k = v; k <= n; k += k & -k)
            tree[k]++;
    }
    double pairs = (double)m * (double)(m - 1) / 2;
    double tau = (pairs - (double)ties - 2 * (double)inversions) /
                 sqrt(pairs * (pairs - (double)ties)); /* one root: ±1 exact without ties */
    return tau > 1 ? 1 : tau < -1 ? -1 : tau;
}

static int alignment_keys(const double *A, size_t m, size_t n, const ag_metric_set *sel,
                          ag_matrix_work *w, ag_record *rec)
{
    double *v[3]; /* i, a_i, and GSL's 2m doubles of work */
    uint64_t *tree = ag_work_get(w, AG_WK_IWORK, (n + 1) * sizeof *tree);
    if (!tree || m > SIZE_MAX / 2 || ag_work_vectors(w, AG_WK_VECTORS, 2 * m, 3, v) != AG_OK)
        return AG_ENOMEM;
    int ok = m >= 2 && !argmax_rows(A, m, n, v[0], v[1]);
    if (ON(AG_M_ALIGNMENT_MONOTONICITY))
        ag_record_set(rec, AG_M_ALIGNMENT_MONOTONICITY, ok ? AG_V_NUMBER : AG_V_NULL,
                      ok ? gsl_stats_spearman(v[0], 1, v[1], 1, m, v[2]) : 0);
    if (ON(AG_M_ALIGNMENT_KENDALL))
        ag_record_set(rec, AG_M_ALIGNMENT_KENDALL, ok ? AG_V_NUMBER : AG_V_NULL,
                      ok ? kendall_tau_b(v[1], m, n, tree) : 0);
    return AG_OK;
}

/* The share of columns j with c_j = Σ_i S_ij ≥ T/n, T = Σ_j c_j, S = 2^-e·A
 * (the same share as A's: every sum is scaled by the same power of two, and
 * none can overflow). A tie within the rounding of the sums counts as
 * reached — c_j ≥ (T/n)(1 − (m + n)ε), ε = 2^-52, which bounds the
 * relative error of both sums of non-negative terms — so that a uniform A
 * (every c_j = T/n in the reals) has coverage 1 whatever the rounding of
 * 1/n. NaN when T = 0. */
static double coverage(const double *S, size_t m, size_t n, double *c)
{
    memset(c, 0, n * sizeof *c);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[j] += S[i * n + j];
    double total = 0;
    for (size_t j = 0; j < n; j++)
        total += c[j];
    if (total == 0)
        return NAN;
    double bar = total / (double)n * (1 - (double)(m + n) * DBL_EPSILON);
    size_t reached = 0;
    for (size_t j = 0; j < n; j++)
        reached += c[j] >= bar;
    return (double)reached / (double)n;
}

int ag_cross_family(const double *A, const double *S, int e, size_t m, size_t n,
                    const ag_metric_set *sel, ag_matrix_work *w, ag_record *rec)
{
    if (ON(AG_M_ALIGNMENT_MONOTONICITY) || ON(AG_M_ALIGNMENT_KENDALL)) {
        int status = alignment_keys(A, m, n, sel, w, rec);
        if (status != AG_OK)
            return status;
    }
    int negative = 0;
    for (size_t k = 0; k < m * n && !negative; k++)
        negative = A[k] < 0;
    if (ON(AG_M_SOURCE_COVERAGE)) {
        double *c = negative ? NULL : ag_work_doubles(w, AG_WK_VECTORS, n);
        if (!negative && !c)
            return AG_ENOMEM;
        ag_record_set(rec, AG_M_SOURCE_COVERAGE, AG_V_NUMBER, negative ? NAN : coverage(S, m, n, c));
    }
    if (ON(AG_M_CROSS_ENTROPY_NORMALIZED)) {
        int eh = 0;
        double h = negative || n < 2 ? NAN : ag_entropy_sum(A, S, e, m, n, &eh);
        ag_record_put(rec, AG_M_CROSS_ENTROPY_NORMALIZED, h / (double)m / log((double)n), eh);
    }
    return AG_OK;
}
