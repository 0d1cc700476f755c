/* test_axioms.c — docs/metrics.md, family L on matrices whose values are
 * derived by hand below. Notation: d_ij = max(0, −ln A_ij), finite iff
 * A_ij > 0; a violation is d_ik > (d_ij + d_jk)(1 + 1e-12) over the ordered
 * triples of distinct tokens with three finite costs.
 *
 * The closed form for a true metric: A_ij = exp(−‖p_i − p_j‖)/Z_i with
 * Z_i = Σ_j exp(−‖p_i − p_j‖) (the j = i term is 1, so Z_i ≥ 1). Then
 * d_ij = ‖p_i − p_j‖ + ln Z_i, and
 *   d_ij + d_jk − d_ik = (‖p_i − p_j‖ + ‖p_j − p_k‖ − ‖p_i − p_k‖) + ln Z_j ≥ 0
 * (the triangle inequality of the norm, and ln Z_j ≥ 0): no violation, so
 * triangle_violation = 0 exactly. d_ii = ln Z_i gives self_cost = mean ln Z_i,
 * and d_ij + d_ji = 2‖p_i − p_j‖ + ln Z_i + ln Z_j, |d_ij − d_ji| =
 * |ln Z_i − ln Z_j| give symmetry_gap. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../util/test_metrics_util.h"

#define TOL 1e-13

static ag_record axioms(const double *A, size_t m, size_t n)
{
    ag_metric_set sel;
    ag_error err = {0};
    ag_record r;
    cr_assert_eq(ag_metric_set_parse(&sel, "axioms", &err), AG_OK, "%s", err.message);
    ag_record_init(&r, 0, 0, m, n);
    cr_assert_eq(ag_matrix_metrics(A, m, n, &sel, &r, &err), AG_OK, "%s", err.message);
    return r;
}

/* A_ij = exp(−‖p_i − p_j‖)/Z_i for n points of dimension dim, and the
 * closed forms of the header. */
static void metric_case(const double *p, size_t n, size_t dim)
{
    double *A = malloc(n * n * sizeof *A), *lz = malloc(n * sizeof *lz);
    double *dist = malloc(n * n * sizeof *dist);
    cr_assert(A && lz && dist);
    for (size_t i = 0; i < n; i++) {
        double z = 0;
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t c = 0; c < dim; c++)
                s += (p[i * dim + c] - p[j * dim + c]) * (p[i * dim + c] - p[j * dim + c]);
            dist[i * n + j] = sqrt(s);
            z += exp(-dist[i * n + j]);
        }
        lz[i] = log(z);
        for (size_t j = 0; j < n; j++)
            A[i * n + j] = exp(-dist[i * n + j]) / z;
    }
    double self = 0, gap = 0;
    for (size_t i = 0; i < n; i++) {
        self += lz[i] / (double)n;
        for (size_t j = i + 1; j < n; j++)
            gap += fabs(lz[i] - lz[j]) / (2 * dist[i * n + j] + lz[i] + lz[j]);
    }
    ag_record r = axioms(A, n, n);
    cr_assert_eq(r.kind[AG_M_TRIANGLE_VIOLATION], AG_V_NUMBER);
    cr_assert_eq(r.value[AG_M_TRIANGLE_VIOLATION], 0.0, "triangle_violation = %g",
                 r.value[AG_M_TRIANGLE_VIOLATION]);
    expect_num_rel(&r, AG_M_SELF_COST, self, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, gap / ((double)n * (double)(n - 1) / 2), TOL);
    free(A);
    free(lz);
    free(dist);
}

Test(axioms, true_metric_on_a_line)
{
    const double p[] = {0, 1, 2.5, 4, 7, 7.25, 11};
    metric_case(p, sizeof p / sizeof *p, 1);
}

Test(axioms, true_metric_in_the_plane)
{
    /* a 3×3 grid and two off-grid points: collinear triples in every direction */
    const double p[] = {0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2, 1, 0, 2, 1, 2, 2, 2, 0.3, 1.7, -2, 0.5};
    metric_case(p, sizeof p / sizeof *p / 2, 2);
}

/* Points 40 to 60 apart on a line: Z_i rounds to 1, so ln Z_j = 0 in the
 * sums and d_ik = d_ij + d_jk holds exactly in the reals for every
 * i < j < k; only the tolerance keeps the rounding of the logarithms and
 * distances (one ulp of 300 is 5.7e-14) from counting 6 of these as
 * violations (as it would without it: the points were chosen for that). */
Test(axioms, collinear_equalities_are_no_violations)
{
    const double p[] = {0, 42.97, 85.36, 145.26, 193.08, 249.32, 297.28, 348.98, 389.44};
    metric_case(p, sizeof p / sizeof *p, 1);
}

/* d = [[.5, 1, 5], [1, .5, 1], [1, 1, .5]]: of the 6 ordered triples only
 * (0, 1, 2) violates (d_02 = 5 > d_01 + d_12 = 2; every other direct cost is
 * 1 against a detour of 2 or 6); symmetry_gap = (0 + 4/6 + 0)/3 = 2/9;
 * self_cost = 0.5. */
Test(axioms, three_by_three_by_hand)
{
    const double d[9] = {.5, 1, 5, 1, .5, 1, 1, 1, .5};
    double A[9];
    for (int k = 0; k < 9; k++)
        A[k] = exp(-d[k]);
    ag_record r = axioms(A, 3, 3);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 1.0 / 6, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, 2.0 / 9, TOL);
    expect_num_rel(&r, AG_M_SELF_COST, 0.5, TOL);
}

/* Uniform attention: d = ln n everywhere, ln n > 2 ln n is false. */
Test(axioms, uniform)
{
    const size_t n = 7;
    double A[49];
    for (size_t k = 0; k < n * n; k++)
        A[k] = 1.0 / (double)n;
    ag_record r = axioms(A, n, n);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 0, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, 0, TOL);
    expect_num_rel(&r, AG_M_SELF_COST, log((double)n), TOL);
}

/* Causal uniform attention A_ij = 1/(i+1), j ≤ i: the qualifying triples are
 * k < j < i (d_ij, d_jk, d_ik all below the diagonal), d_ik = ln(i+1) is
 * never above ln(i+1) + ln(j+1): 0; no pair has both directions: symmetry_gap
 * null; self_cost = (1/n) Σ ln(i+1) = ln(n!)/n. */
Test(axioms, causal_has_no_symmetry_gap)
{
    const size_t n = 13;
    double A[169] = {0};
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            A[i * n + j] = 1.0 / (double)(i + 1);
    ag_record r = axioms(A, n, n);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 0, TOL);
    expect_null(&r, AG_M_SYMMETRY_GAP);
    expect_num_rel(&r, AG_M_SELF_COST, lgamma((double)n + 1) / (double)n, TOL);
}

/* n = 4, d_ij = 1 off the diagonal except d_23 = 5: the violations are
 * (2, 0, 3) and (2, 1, 3), of 24 triples. A zero entry removes exactly the
 * 6 triples through its pair (2 in each of the roles (i,j), (j,k), (i,k),
 * disjoint): A_01 = 0 keeps both violations (2/18); A_20 = 0 removes
 * (2, 0, 3) (1/18). A zero diagonal changes no triple of distinct tokens. */
static void four(double *A, int zero_i, int zero_j, int zero_diagonal)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            A[i * 4 + j] = i == j ? (zero_diagonal ? 0 : 0.5) : exp(i == 2 && j == 3 ? -5.0 : -1.0);
    if (zero_i >= 0)
        A[zero_i * 4 + zero_j] = 0;
}

Test(axioms, zero_entries_exclude_their_triples)
{
    double A[16];
    four(A, -1, -1, 0);
    ag_record r = axioms(A, 4, 4);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 2.0 / 24, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, (4.0 / 6) / 6, TOL);
    expect_num_rel(&r, AG_M_SELF_COST, log(2.0), TOL);
    four(A, 0, 1, 0);
    r = axioms(A, 4, 4);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 2.0 / 18, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, (4.0 / 6) / 5, TOL); /* pair {0, 1} gone */
    four(A, 2, 0, 0);
    r = axioms(A, 4, 4);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 1.0 / 18, TOL);
    four(A, 2, 0, 1);
    r = axioms(A, 4, 4);
    expect_num_rel(&r, AG_M_TRIANGLE_VIOLATION, 1.0 / 18, TOL);
    expect_null(&r, AG_M_SELF_COST);
}

/* The plain triple loop of the definition, against the SIMD count, on
 * sizes around the vector width (remainders), dense, causal and with
 * random zeros, with near-ties (costs on a coarse grid). */
static double brute_fraction(const double *A, size_t n, int *none)
{
    uint64_t bad = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t k = 0; k < n; k++) {
                double a = A[i * n + j], b = A[j * n + k], c = A[i * n + k];
                if (i == j || j == k || i == k || !(a > 0 && b > 0 && c > 0))
                    continue;
                double dij = fmax(0, -log(a)), djk = fmax(0, -log(b)), dik = fmax(0, -log(c));
                total++;
                bad += dik > (dij + djk) * (1 + 1e-12);
            }
    *none = total == 0;
    return total ? (double)bad / (double)total : 0;
}

Test(axioms, agrees_with_the_triple_loop)
{
    const size_t sizes[] = {3, 4, 8, 9, 15, 17, 33};
    unsigned seed = 7;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int kind = 0; kind < 4; kind++) {
            size_t n = sizes[s];
            double *A = malloc(n * n * sizeof *A);
            cr_assert(A);
            for (size_t k = 0; k < n * n; k++) {
                seed = seed * 1103515245u + 12345u;
                double u = (double)(seed >> 8) / (double)(1u << 24);
                size_t i = k / n, j = k % n;
                /* kind 0 dense, 1 causal, 2 random zeros, 3 a grid of
                 * eighths: costs that tie in the reals */
                A[k] = kind == 1 && j > i ? 0 : kind == 2 && u < 0.3 ? 0
                       : kind == 3 ? exp(-(double)(1 + (seed >> 20) % 8) / 8) : 0.01 + u;
            }
            int none;
            double want = brute_fraction(A, n, &none);
            ag_record r = axioms(A, n, n);
            if (none)
                expect_null(&r, AG_M_TRIANGLE_VIOLATION);
            else
                cr_assert_eq(r.value[AG_M_TRIANGLE_VIOLATION], want,
                             "n %zu kind %d: %.17g, triple loop %.17g", n, kind,
                             r.value[AG_M_TRIANGLE_VIOLATION], want);
            free(A);
        }
}

/* Entries above 1 (rounding, or a matrix that is no attention): d clamped
 * at 0, so self_cost 0 and a symmetric cost. */
Test(axioms, entries_above_one_cost_nothing)
{
    const double A[4] = {2, 0.5, 0.5, 1};
    ag_record r = axioms(A, 2, 2);
    expect_num_rel(&r, AG_M_SELF_COST, 0, TOL);
    expect_num_rel(&r, AG_M_SYMMETRY_GAP, 0, TOL);
    expect_null(&r, AG_M_TRIANGLE_VIOLATION); /* n < 3 */
}

Test(axioms, null_cases)
{
    const double one[1] = {1};
    ag_record r = axioms(one, 1, 1);
    expect_null(&r, AG_M_TRIANGLE_VIOLATION);
    expect_null(&r, AG_M_SYMMETRY_GAP);
    expect_num_rel(&r, AG_M_SELF_COST, 0, TOL);
    const double negative[9] = {.5, .5, 0, .5, .5, 0, 1.5, -.5, 0};
    r = axioms(negative, 3, 3);
    expect_null(&r, AG_M_TRIANGLE_VIOLATION);
    expect_null(&r, AG_M_SYMMETRY_GAP);
    expect_null(&r, AG_M_SELF_COST);
    const double wide[6] = {.5, .25, .25, .25, .5, .25};
    r = axioms(wide, 2, 3);
    expect_null(&r, AG_M_TRIANGLE_VIOLATION);
    expect_null(&r, AG_M_SYMMETRY_GAP);
    expect_null(&r, AG_M_SELF_COST);
    const double zero[9] = {0};
    r = axioms(zero, 3, 3);
    expect_null(&r, AG_M_TRIANGLE_VIOLATION);
    expect_null(&r, AG_M_SYMMETRY_GAP);
    expect_null(&r, AG_M_SELF_COST);
}

/* family L is in every attention-matrix command's families, not in the
 * default selection */
Test(axioms, selected_only_when_asked)
{
    cr_assert(ag_command_families("matrix") & AG_FAMILY_BIT(AG_FAMILY_AXIOMS));
    cr_assert(ag_command_families("analyze") & AG_FAMILY_BIT(AG_FAMILY_AXIOMS));
    cr_assert(ag_command_families("rollout") & AG_FAMILY_BIT(AG_FAMILY_AXIOMS));
    cr_assert(!(AG_FAMILIES_DEFAULT & AG_FAMILY_BIT(AG_FAMILY_AXIOMS)));
    cr_assert_str_eq(ag_family_name(AG_FAMILY_AXIOMS), "axioms");
    ag_metric_set *set = NULL;
    cr_assert_eq(ag_metric_set_new(ag_command_families("matrix"), NULL, &set, NULL), AG_OK);
    cr_assert(!ag_metric_set_has(set, AG_M_TRIANGLE_VIOLATION));
    ag_metric_set_free(set);
}
