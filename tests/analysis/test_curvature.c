/* test_curvature.c — docs/metrics.md, family F on graphs whose curvatures are derived by
 * hand below. Notation: W = (A + Aᵀ)/2, edge iff W_ij ≥ τ; the lazy measure
 * m_i = ½δ_i + ½ Σ_{k∈N(i)} (W_ik/Σ W_ik') δ_k; κ = 1 − W₁(m_i, m_j) with the
 * hop distance; F(i,j) = 2 − Σ_{k∈N(i)∖j} √(W_ij/W_ik) − Σ_{k∈N(j)∖i} √(W_ij/W_jk).
 * With unit weights F(i,j) = 4 − deg i − deg j.
 *
 * A useful fact for the hand computations: W₁ only depends on μ − ν (the
 * common mass stays put), so below D = m_i − m_j is listed and the positive
 * part moved onto the negative part as cheaply as possible; a 1-Lipschitz f
 * with Σ f·D equal to the cost certifies optimality (Kantorovich duality). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../../analysis/work.h"        // the curvature slot, filled with junk
#include "../util/test_metrics_util.h"

#define TOL 1e-13

typedef struct {
    ag_record r;
    int status;
} result;

static result curv(const double *A, size_t m, size_t n, double tau)
{
    ag_metric_set sel;
    ag_error err = {0};
    result out;
    cr_assert_eq(ag_metric_set_parse(&sel, "curvature", &err), AG_OK, "%s", err.message);
    ag_record_init(&out.r, 0, 0, m, n);
    ag_matrix_options opt = {.size = sizeof(ag_matrix_options), .edge_threshold = tau};
    out.status = ag_matrix_metrics_ex(A, m, n, &sel, &opt, &out.r, &err);
    cr_assert_eq(out.status, AG_OK, "ag_matrix_metrics_ex: %s", err.message);
    return out;
}

static void expect_all(const ag_record *r, long edges, double fmean, double fmin, double kmean,
                       double kmin)
{
    expect_int(r, AG_M_EDGES, edges);
    expect_num_rel(r, AG_M_FORMAN_MEAN, fmean, TOL);
    expect_num_rel(r, AG_M_FORMAN_MIN, fmin, TOL);
    expect_num_rel(r, AG_M_OLLIVIER_MEAN, kmean, TOL);
    expect_num_rel(r, AG_M_OLLIVIER_MIN, kmin, TOL);
}

/* Symmetric n×n matrix with unit weight on the listed pairs. */
static double *graph_matrix(size_t n, const int (*pairs)[2], size_t count)
{
    double *A = calloc(n * n, sizeof *A);
    cr_assert_not_null(A);
    for (size_t e = 0; e < count; e++) {
        A[pairs[e][0] * n + pairs[e][1]] = 1;
        A[pairs[e][1] * n + pairs[e][0]] = 1;
    }
    return A;
}

static double *cycle_matrix(size_t n)
{
    double *A = calloc(n * n, sizeof *A);
    for (size_t i = 0; i < n; i++) {
        A[i * n + (i + 1) % n] = 1;
        A[((i + 1) % n) * n + i] = 1;
    }
    return A;
}

static double *path_matrix(size_t n)
{
    double *A = calloc(n * n, sizeof *A);
    for (size_t i = 0; i + 1 < n; i++) {
        A[i * n + i + 1] = 1;
        A[(i + 1) * n + i] = 1;
    }
    return A;
}

/* K_n, uniform attention A = J/n at the default τ = 1/n: W_ij = 1/n ≥ τ, so
 * every pair is an edge (n(n−1)/2 of them).
 * Forman: n − 2 neighbours besides the other end on each side, every ratio 1:
 *   F = 2 − 2(n − 2) = 6 − 2n.
 * Ollivier: m_i = ½δ_i + 1/(2(n−1)) on each other vertex. The masses on the
 *   n − 2 common neighbours cancel; D(i) = ½ − 1/(2(n−1)) = −D(j), moved over
 *   one hop: W₁ = (n−2)/(2(n−1)), κ = 1 − W₁ = n/(2(n−1)) (K₂: 1, K₃: ¾). */
Test(curvature, complete_graph_closed_form)
{
    for (size_t n = 2; n <= 12; n++) {
        double *A = malloc(n * n * sizeof *A);
        for (size_t k = 0; k < n * n; k++)
            A[k] = 1.0 / (double)n;
        result r = curv(A, n, n, -1);
        double kappa = (double)n / (2.0 * (double)(n - 1));
        expect_all(&r.r, (long)(n * (n - 1) / 2), 6.0 - 2.0 * n, 6.0 - 2.0 * n, kappa, kappa);
        free(A);
    }
}

/* Path P_n, unit weights, τ = ½ (W = 1 on the path, 0 elsewhere).
 * End edge (0,1), deg 1 and 2: m_0 = ½δ0 + ½δ1, m_1 = ¼δ0 + ½δ1 + ¼δ2;
 *   D = (¼, 0, −¼): ¼ moves two hops, W₁ = ½, κ = ½.
 * Interior edge (i,i+1), both deg 2: D = ¼ on i−1 and i, −¼ on i+1 and i+2;
 *   plans i→i+1 (1) + i−1→i+2 (3), or i→i+2 (2) + i−1→i+1 (2): both cost
 *   ¼·4 = 1, and f = (3, 2, 1, 0) on i−1..i+2 gives Σ f·D = 1: W₁ = 1, κ = 0.
 * Forman: 4 − deg i − deg j: 1 at the ends (n ≥ 3), 0 inside.
 * P_3: two end edges, F = 1, κ = ½. P_5: F = (1, 0, 0, 1), κ = (½, 0, 0, ½). */
Test(curvature, path)
{
    double *A = path_matrix(3);
    result r = curv(A, 3, 3, 0.5);
    expect_all(&r.r, 2, 1, 1, 0.5, 0.5);
    free(A);
    A = path_matrix(5);
    r = curv(A, 5, 5, 0.5);
    expect_all(&r.r, 4, 0.5, 0, 0.25, 0);
    free(A);
    /* K₂: m_0 = m_1, κ = 1; F = 2 */
    A = path_matrix(2);
    r = curv(A, 2, 2, 0.5);
    expect_all(&r.r, 1, 2, 2, 1, 1);
    free(A);
}

/* Star: centre 0, k leaves, unit weights. Edge (0,ℓ): m_0 = ½δ0 + 1/(2k) on
 * each leaf, m_ℓ = ½δℓ + ½δ0. D(0) = 0, D(ℓ) = 1/(2k) − ½, D = 1/(2k) on the
 * k − 1 other leaves, each two hops from ℓ: W₁ = 2(k−1)/(2k) = (k−1)/k,
 * κ = 1/k. Forman: 4 − k − 1 = 3 − k. */
Test(curvature, star)
{
    for (int k = 1; k <= 9; k++) {
        int pairs[9][2];
        for (int l = 0; l < k; l++) {
            pairs[l][0] = 0;
            pairs[l][1] = l + 1;
        }
        size_t n = (size_t)k + 1;
        double *A = graph_matrix(n, (const int(*)[2])pairs, (size_t)k);
        result r = curv(A, n, n, 0.5);
        expect_all(&r.r, k, 3 - k, 3 - k, 1.0 / k, 1.0 / k);
        free(A);
    }
}

/* Cycle C_n, unit weights: every edge alike, F = 4 − 2 − 2 = 0. Edge (0,1):
 * D = ¼ on n−1 and 0, −¼ on 1 and 2.
 *   n = 3: n−1 = 2, so D = (¼, −¼, 0): W₁ = ¼, κ = ¾ (= K₃).
 *   n = 4: 3 ~ 2 and 0 ~ 1: W₁ = ¼ + ¼ = ½, κ = ½.
 *   n = 5: d(4,2) = 2, d(4,1) = 2, d(0,1) = 1, d(0,2) = 2: best 4→2, 0→1,
 *          W₁ = ¼(2 + 1) = ¾, κ = ¼ (f = 2,2,1,0 on 4,0,1,2 certifies it).
 *   n ≥ 6: d(n−1, 2) = 3: as for the path, W₁ = 1, κ = 0 (the two-layer,
 *          cost-3 case of the solver). */
Test(curvature, cycle)
{
    const double want[] = {0, 0, 0, 0.75, 0.5, 0.25, 0, 0, 0, 0, 0};
    for (size_t n = 3; n <= 10; n++) {
        double *A = cycle_matrix(n);
        result r = curv(A, n, n, 0.5);
        expect_all(&r.r, (long)n, 0, 0, want[n], want[n]);
        free(A);
    }
}

/* Two triangles {0,1,2}, {3,4,5} joined by the bridge 2–3 (unit weights).
 * Bridge (2,3), both deg 3: m_2 = ½δ2 + ⅙(δ0 + δ1 + δ3), m_3 symmetric.
 *   D = (⅙, ⅙, ⅓, −⅓, −⅙, −⅙) on 0..5; d(0,3) = 2, d(0,4) = 3, d(2,4) = 2.
 *   Plan 2→3 (⅓·1), 0→4, 1→5 (⅓·3): W₁ = 4/3; f = (3,3,2,1,0,0) is
 *   1-Lipschitz with Σ f·D = 1 + ⅔ − ⅓ = 4/3: optimal. κ = −⅓ < 0, the
 *   bottleneck. F(2,3) = 4 − 3 − 3 = −2.
 * Edge (0,1), deg 2 and 2, common neighbour 2: m_0 = ½δ0 + ¼δ1 + ¼δ2,
 *   m_1 = ¼δ0 + ½δ1 + ¼δ2: D = (¼, −¼, 0): W₁ = ¼, κ = ¾. F = 0.
 * Edge (0,2), deg 2 and 3: m_0 = ½δ0 + ¼δ1 + ¼δ2, m_2 = ⅙δ0 + ⅙δ1 + ½δ2 + ⅙δ3:
 *   D = (⅓, 1/12, −¼, −⅙) on 0,1,2,3; d(0,2) = d(1,2) = 1, d(0,3) = d(1,3) = 2:
 *   ¼ reaches 2 in one hop, ⅙ goes to 3 in two: W₁ = ¼ + ⅓ = 7/12, κ = 5/12
 *   (f = 2 on 0,1, 1 on 2, 0 on 3 gives ⅔ + 1/6 − ¼ = 7/12). F = 4 − 2 − 3 = −1.
 * Edges: (0,1), (4,5): κ ¾, F 0; (0,2), (1,2), (3,4), (3,5): κ 5/12, F −1;
 * (2,3): κ −⅓, F −2. Mean κ = (2·¾ + 4·5/12 − ⅓)/7 = (3/2 + 5/3 − 1/3)/7
 * = (17/6)/7 = 17/42; mean F = (0 + 0 − 4 − 2)/7 = −6/7. */
Test(curvature, bridge_is_negative)
{
    const int pairs[][2] = {{0, 1}, {0, 2}, {1, 2}, {3, 4}, {3, 5}, {4, 5}, {2, 3}};
    double *A = graph_matrix(6, pairs, 7);
    result r = curv(A, 6, 6, 0.5);
    expect_all(&r.r, 7, -6.0 / 7, -2, 17.0 / 42, -1.0 / 3);
    ag_curvature_edge *e = NULL;
    size_t count = 0;
    ag_error err = {0};
    cr_assert_eq(ag_curvature_edges(A, 6, 0.5, 1, &e, &count, &err), AG_OK, "%s", err.message);
    cr_assert_eq(count, 7);
    for (size_t k = 0; k < count; k++)
        if (e[k].i == 2 && e[k].j == 3) {
            cr_assert(fabs(e[k].ollivier + 1.0 / 3) < TOL, "bridge κ = %.17g", e[k].ollivier);
            cr_assert(fabs(e[k].forman + 2) < TOL);
        }
    free(e);
    free(A);
}

/* Weighted Forman, by hand: a triangle with W_01 = 0.4, W_02 = 0.1,
 * W_12 = 0.2, from a non-symmetric A (A_01 = 0.6, A_10 = 0.2, ...):
 *   F(0,1) = 2 − √(0.4/0.1) − √(0.4/0.2) = −√2
 *   F(0,2) = 2 − √(0.1/0.4) − √(0.1/0.2) = 1.5 − √½
 *   F(1,2) = 2 − √(0.2/0.4) − √(0.2/0.1) = 2 − √½ − √2
 * mean (3.5 − 3√2)/3, min −√2. Ollivier, complete graph (all costs 1,
 * W₁ = total variation): s_0 = 0.5, s_1 = 0.6, s_2 = 0.3;
 *   m_0 = (½, 0.4, 0.1), m_1 = (⅓, ½, ⅙), m_2 = (⅙, ⅓, ½);
 *   κ = 1 − TV for each pair, TV(μ, ν) = ½ Σ|μ − ν| (computed below):
 *   (0,1) 1 − 1/6 = 5/6, (0,2) 1 − ⅓ = ⅔, (1,2) 1 − 1/6 = 5/6. */
Test(curvature, weighted_forman_triangle)
{
    const double A[9] = {0.3, 0.6, 0.15, 0.2, 0.1, 0.25, 0.05, 0.15, 0.8};
    result r = curv(A, 3, 3, 0.05);
    expect_int(&r.r, AG_M_EDGES, 3);
    expect_num_rel(&r.r, AG_M_FORMAN_MEAN, (3.5 - 3 * sqrt(2)) / 3, TOL);
    expect_num_rel(&r.r, AG_M_FORMAN_MIN, -sqrt(2), TOL);
    double m[3][3] = {{0.5, 0.4, 0.1}, {1.0 / 3, 0.5, 1.0 / 6}, {1.0 / 6, 1.0 / 3, 0.5}};
    double ksum = 0, kmin = 1;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++) {
            double tv = 0;
            for (int k = 0; k < 3; k++)
                tv += fabs(m[i][k] - m[j][k]) / 2;
            ksum += 1 - tv;
            kmin = fmin(kmin, 1 - tv);
        }
    expect_num_rel(&r.r, AG_M_OLLIVIER_MEAN, ksum / 3, TOL);
    expect_num_rel(&r.r, AG_M_OLLIVIER_MIN, kmin, TOL);
    /* τ = 0.15: only the pairs 0–1 (0.4) and 1–2 (0.2) remain, a path
     * 0–1–2 with weights: F(0,1) = 2 − √(0.4/0.2) = 2 − √2,
     * F(1,2) = 2 − √(0.2/0.4) = 2 − √½. */
    r = curv(A, 3, 3, 0.15);
    expect_int(&r.r, AG_M_EDGES, 2);
    expect_num_rel(&r.r, AG_M_FORMAN_MEAN, (4 - sqrt(2) - sqrt(0.5)) / 2, TOL);
    expect_num_rel(&r.r, AG_M_FORMAN_MIN, 2 - sqrt(2), TOL);
}

/* τ = 0 admits every pair (W_ij ≥ 0 always holds): the complete graph, with
 * zero-weight edges. Forman's √(W_ij/W_ik) then divides by W_ik = 0 for an
 * edge next to a zero-weight one (+∞, or 0/0 when W_ij = 0 too): F is not a
 * finite number and forman_mean/min are null. Ollivier stays defined while
 * every vertex has some positive weight (m_i ignores zero weights), with
 * every hop distance 1 (W₁ = total variation).
 * P_4's weights at τ = 0, m_0 = ½δ0 + ½δ1, m_1 = ¼δ0 + ½δ1 + ¼δ2,
 * m_2 = ¼δ1 + ½δ2 + ¼δ3, m_3 = ½δ2 + ½δ3; TV of the six pairs:
 * (0,1) ¼, (0,2) ¾, (0,3) 1, (1,2) ½, (1,3) ¾, (2,3) ¼, so κ mean
 * (¾ + ¼ + 0 + ½ + ¼ + ¾)/6 = 5/12, min 0. */
Test(curvature, zero_threshold_complete_graph)
{
    double *A = path_matrix(4);
    result r = curv(A, 4, 4, 0);
    expect_int(&r.r, AG_M_EDGES, 6);
    expect_null(&r.r, AG_M_FORMAN_MEAN);
    expect_null(&r.r, AG_M_FORMAN_MIN);
    expect_num_rel(&r.r, AG_M_OLLIVIER_MEAN, 5.0 / 12, TOL);
    expect_num_rel(&r.r, AG_M_OLLIVIER_MIN, 0, TOL);
    free(A);
    /* I₂ at τ = 0: one edge of weight 0 with no other neighbour: F = 2 − 0 − 0
     * = 2 is finite; m_0 is 0/0 (no positive weight): Ollivier null. */
    const double I2[4] = {1, 0, 0, 1};
    r = curv(I2, 2, 2, 0);
    expect_int(&r.r, AG_M_EDGES, 1);
    expect_num_rel(&r.r, AG_M_FORMAN_MEAN, 2, TOL);
    expect_num_rel(&r.r, AG_M_FORMAN_MIN, 2, TOL);
    expect_null(&r.r, AG_M_OLLIVIER_MEAN);
    expect_null(&r.r, AG_M_OLLIVIER_MIN);
    /* an isolated token (row and column 2 zero off the diagonal) */
    const double B[9] = {0, 1, 0, 1, 0, 0, 0, 0, 1};
    r = curv(B, 3, 3, 0);
    expect_int(&r.r, AG_M_EDGES, 3);
    expect_null(&r.r, AG_M_FORMAN_MEAN);
    expect_null(&r.r, AG_M_OLLIVIER_MIN);
    /* the same at the default τ = 1/3: just the edge 0–1, K₂ */
    r = curv(B, 3, 3, -1);
    expect_all(&r.r, 1, 2, 2, 1, 1);
}

Test(curvature, null_cases)
{
    /* no edge: the identity at τ = 1/n */
    double I5[25] = {0};
    for (int i = 0; i < 5; i++)
        I5[i * 5 + i] = 1;
    result r = curv(I5, 5, 5, -1);
    expect_int(&r.r, AG_M_EDGES, 0);
    for (ag_metric k = AG_M_FORMAN_MEAN; k <= AG_M_OLLIVIER_MIN; k++)
        expect_null(&r.r, k);
    /* 1×1 */
    const double one[1] = {1};
    r = curv(one, 1, 1, -1);
    expect_int(&r.r, AG_M_EDGES, 0);
    expect_null(&r.r, AG_M_OLLIVIER_MEAN);
    /* τ = 1 on uniform attention: no pair reaches 1 */
    double U[16];
    for (int k = 0; k < 16; k++)
        U[k] = 0.25;
    r = curv(U, 4, 4, 1);
    expect_int(&r.r, AG_M_EDGES, 0);
    expect_null(&r.r, AG_M_FORMAN_MIN);
    /* a negative entry: all five null, edges too */
    U[6] = -1e-300;
    r = curv(U, 4, 4, -1);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++)
        expect_null(&r.r, k);
    /* −0.0 is not negative */
    U[6] = -0.0;
    r = curv(U, 4, 4, -1);
    expect_int(&r.r, AG_M_EDGES, 5);
    /* non-square */
    double X[6] = {0.5, 0.5, 0, 0.2, 0.3, 0.5};
    r = curv(X, 2, 3, -1);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++)
        expect_null(&r.r, k);
}

Test(curvature, selection_and_errors)
{
    double U[9];
    for (int k = 0; k < 9; k++)
        U[k] = 1.0 / 3;
    ag_metric_set sel;
    ag_record r;
    ag_error err = {0};
    ag_metric_set_parse(&sel, "forman_min", NULL);
    ag_record_init(&r, 0, 0, 3, 3);
    cr_assert_eq(ag_matrix_metrics_ex(U, 3, 3, &sel, NULL, &r, &err), AG_OK);
    cr_assert_eq(r.kind[AG_M_FORMAN_MIN], AG_V_NUMBER);
    cr_assert_eq(r.kind[AG_M_EDGES], AG_V_ABSENT);
    cr_assert_eq(r.kind[AG_M_OLLIVIER_MEAN], AG_V_ABSENT);
    cr_assert_eq(r.kind[AG_M_SIGMA_MAX], AG_V_ABSENT);
    ag_matrix_options bad = {.size = sizeof(ag_matrix_options), .edge_threshold = 1.5};
    cr_assert_eq(ag_matrix_metrics_ex(U, 3, 3, &sel, &bad, &r, &err), AG_EINVAL);
    bad.edge_threshold = NAN;
    cr_assert_eq(ag_matrix_metrics_ex(U, 3, 3, &sel, &bad, &r, &err), AG_EINVAL);
    U[4] = INFINITY;
    cr_assert_eq(ag_curvature_metrics(U, 3, -1, &sel, &r, &err), AG_ENONFINITE);
    /* "curvature" is a matrix family; the default selection leaves it out */
    ag_metric_set_default(&sel);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++)
        cr_assert_eq(sel.on[k], 0);
    cr_assert_eq(ag_metric_set_parse_families(&sel, "curvature", AG_FAMILIES_MATRIX, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(sel.on[AG_M_OLLIVIER_MIN], 1);
}

/* Found by tests/fuzz (fuzz_matrix_metrics, seed causal4): at τ = 1/4 the
 * only edge is 0–1 with m_0 = m_1, so the first transport problem is empty
 * and its workspace was never allocated; memset(NULL, 0, 0) followed
 * (undefined behaviour, reported by UBSan). K₂: κ = 1, F = 2. */
Test(curvature, ollivier_nothing_to_move)
{
    const double A[16] = {1, 0, 0, 0, 0.5, 0.5, 0, 0, 1 / 3., 1 / 3., 1 / 3., 0,
                          0.25, 0.25, 0.25, 0.25};
    result r = curv(A, 4, 4, -1);
    expect_all(&r.r, 1, 2, 2, 1, 1);
}

/* The standalone solver: three points on a path 0–1–2 (hops 1, 1, 2). */
Test(curvature, wasserstein1_hops)
{
    const unsigned char H[9] = {0, 1, 2, 1, 0, 1, 2, 1, 0};
    const double mu[3] = {0.5, 0.5, 0}, nu[3] = {0, 0.5, 0.5};
    double w = -1;
    ag_error err = {0};
    cr_assert_eq(ag_wasserstein1_hops(mu, nu, 3, H, &w, &err), AG_OK, "%s", err.message);
    cr_assert(fabs(w - 1.0) < TOL, "W1 = %.17g", w); /* ½ over two hops */
    const double d0[3] = {0.2, 0.3, 0.5};
    cr_assert_eq(ag_wasserstein1_hops(d0, d0, 3, H, &w, &err), AG_OK);
    cr_assert_eq(w, 0);
    /* four points on a path (hops up to 3): δ0 → δ3 costs 3 */
    const unsigned char H4[16] = {0, 1, 2, 3, 1, 0, 1, 2, 2, 1, 0, 1, 3, 2, 1, 0};
    const double a[4] = {1, 0, 0, 0}, b[4] = {0, 0, 0, 1};
    cr_assert_eq(ag_wasserstein1_hops(a, b, 4, H4, &w, &err), AG_OK);
    cr_assert(fabs(w - 3) < TOL);
    /* invalid input */
    const double c[3] = {0.5, 0.6, 0};
    cr_assert_eq(ag_wasserstein1_hops(c, nu, 3, H, &w, &err), AG_EINVAL);
    const unsigned char Hbad[9] = {0, 4, 2, 4, 0, 1, 2, 1, 0};
    cr_assert_eq(ag_wasserstein1_hops(mu, nu, 3, Hbad, &w, &err), AG_EINVAL);
}

/* Invariances on random attention: W is symmetric, so A and Aᵀ have the
 * same graph; relabelling the tokens permutes the edges (the mean and the
 * minimum stay). κ ∈ [−2, 1] since 0 ≤ W₁ ≤ 3 (costs at most 3). */
Test(curvature, invariances)
{
    size_t n = 40;
    double *A = malloc(n * n * sizeof *A), *T = malloc(n * n * sizeof *T),
           *P = malloc(n * n * sizeof *P);
    size_t perm[40];
    srand(11);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < n; j++) {
            A[i * n + j] = exp(3.0 * rand() / RAND_MAX);
            s += A[i * n + j];
        }
        for (size_t j = 0; j < n; j++)
            A[i * n + j] /= s;
        perm[i] = i;
    }
    for (size_t i = n - 1; i > 0; i--) {
        size_t k = (size_t)rand() % (i + 1), t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            T[j * n + i] = A[i * n + j];
            P[perm[i] * n + perm[j]] = A[i * n + j];
        }
    result ra = curv(A, n, n, -1), rt = curv(T, n, n, -1), rp = curv(P, n, n, -1);
    cr_assert_gt(ra.r.value[AG_M_EDGES], 10);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++) {
        cr_assert_eq(ra.r.kind[k], rt.r.kind[k]);
        cr_assert(fabs(ra.r.value[k] - rt.r.value[k]) <= 1e-12 * fmax(1, fabs(ra.r.value[k])),
                  "%s: A %.17g, Aᵀ %.17g", ag_metric_name(k), ra.r.value[k], rt.r.value[k]);
        cr_assert(fabs(ra.r.value[k] - rp.r.value[k]) <= 1e-12 * fmax(1, fabs(ra.r.value[k])),
                  "%s: A %.17g, permuted %.17g", ag_metric_name(k), ra.r.value[k],
                  rp.r.value[k]);
    }
    cr_assert(ra.r.value[AG_M_OLLIVIER_MIN] >= -2 && ra.r.value[AG_M_OLLIVIER_MEAN] <= 1);
    free(A);
    free(T);
    free(P);
}

/* A 100-token head: logits 2(Σ₄ U − 2) (Irwin–Hall, a bell around 0) from a
 * fixed xorshift64 stream, row softmax. */
static double *threads_head(size_t n)
{
    double *A = malloc(n * n * sizeof *A);
    cr_assert_not_null(A);
    uint64_t st = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < n; j++) {
            double z = 0;
            for (int t = 0; t < 4; t++) {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                z += (double)(st >> 11) / 9007199254740992.0;
            }
            A[i * n + j] = exp(2 * (z - 2));
            s += A[i * n + j];
        }
        for (size_t j = 0; j < n; j++)
            A[i * n + j] /= s;
    }
    return A;
}

/* Threads over edges (ag_curvature_options.pool, ag_matrix_options.pool):
 * the record is the same bytes without a pool and on 1, 2 and 3 threads
 * (its 1741 edges are 7 blocks of 256, so 2 and 3 threads really split
 * them), and the means are the per-edge values of ag_curvature_edges summed
 * in edge order. `want` is this code's record (hexadecimal). The
 * one-thread solver of commit bfbef38 (one push per search tree path, no
 * blocking flows) gave the same edge count and Forman keys and Ollivier
 * keys 1 ulp away (ollivier_mean 0x1.38003fb3a30e3p-3, ollivier_min
 * 0x1.57be02f8fd23p-5): the order of the augmentations changed the rounding
 * of the flow (≤ 2.3e-15 on 76 061 edges of random heads, n = 24..300,
 * softmax and causal; tests/ref/check_curvature.py bounds both against POT). */
static const double threads_want[5] = {0x1.b34p+10, -0x1.17601de1fd257p+6,
                                       -0x1.44f40708c7e53p+7, 0x1.38003fb3a30e2p-3,
                                       0x1.57be02f8fd24p-5};

/* The five keys of r are threads_want's bytes. */
static void expect_threads_want(const ag_record *r, const char *what, int threads)
{
    for (int k = 0; k < 5; k++) {
        ag_metric m = AG_M_EDGES + k;
        cr_assert_eq(r->kind[m], k ? AG_V_NUMBER : AG_V_INTEGER);
        cr_assert(memcmp(&r->value[m], &threads_want[k], sizeof(double)) == 0,
                  "%s %s on %d threads: %a, want %a", what, ag_metric_name(m), threads,
                  r->value[m], threads_want[k]);
    }
}

Test(curvature, threads_same_bytes)
{
    size_t n = 100;
    double *A = threads_head(n);
    const double *want = threads_want;
    ag_metric_set sel;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, "curvature", &err), AG_OK, "%s", err.message);
    for (int threads = 0; threads <= 3; threads++) { /* 0: no pool */
        ag_pool *pool = NULL;
        if (threads)
            cr_assert_eq(ag_pool_new(threads, &pool, &err), AG_OK, "%s", err.message);
        ag_curvature_options co = AG_CURVATURE_OPTIONS_DEFAULT;
        co.pool = pool;
        ag_matrix_options mo = AG_MATRIX_OPTIONS_DEFAULT;
        mo.pool = pool;
        ag_record r, rm;
        ag_record_init(&r, 0, 0, n, n);
        ag_record_init(&rm, 0, 0, n, n);
        cr_assert_eq(ag_curvature_metrics_ex(A, n, &sel, &co, &r, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(ag_matrix_metrics_ex(A, n, n, &sel, &mo, &rm, &err), AG_OK, "%s",
                     err.message);
        expect_threads_want(&r, "curvature", threads);
        expect_threads_want(&rm, "matrix", threads);
        ag_pool_free(pool);
    }
    ag_curvature_edge *e = NULL;
    size_t count = 0;
    cr_assert_eq(ag_curvature_edges(A, n, -1, 1, &e, &count, &err), AG_OK, "%s", err.message);
    cr_assert_eq(count, 1741);
    double fsum = 0, ksum = 0, kmin = INFINITY;
    for (size_t k = 0; k < count; k++) {
        cr_assert(k == 0 || e[k - 1].i < e[k].i || (e[k - 1].i == e[k].i && e[k - 1].j < e[k].j));
        fsum += e[k].forman;
        ksum += e[k].ollivier;
        kmin = fmin(kmin, e[k].ollivier);
    }
    cr_assert_eq(fsum / (double)count, want[1]);
    cr_assert_eq(ksum / (double)count, want[3]);
    cr_assert_eq(kmin, want[4]);
    free(e);
    free(A);
}

/* One head's curvature from inside a task of the workers' own pool: the
 * edges run in place, on the task's workspace. */
typedef struct {
    const double *A;
    size_t n;
    ag_workers *w;
    const ag_metric_set *sel;
    ag_record rec[4];
} nested_job;

static int nested_task(size_t task, int worker, void *user)
{
    nested_job *j = user;
    ag_curvature_options co = AG_CURVATURE_OPTIONS_DEFAULT;
    co.workers = j->w;
    ag_record_init(&j->rec[task], 0, 0, j->n, j->n);
    return ag_curvature_metrics_ex(j->A, j->n, j->sel, &co, &j->rec[task], NULL);
}

/* The edges on ag_workers (ag_curvature_options.workers,
 * ag_matrix_options.workers, in place of a pool): threads_same_bytes' bytes
 * on 1, 2 and 3 threads, with workspaces that first served a larger head
 * and a curvature slot filled with junk (what it held is never read; a
 * slot of 4 MB serves n = 100 without growing), and from inside
 * tasks of the workers' own pool (each on its task's workspace). A pool
 * given beside the workers is not used: here one that would crash. */
Test(curvature, workers_same_bytes)
{
    size_t n = 100, big = 160;
    double *A = threads_head(n), *B = threads_head(big);
    ag_metric_set sel;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, "curvature", &err), AG_OK, "%s", err.message);
    for (int threads = 1; threads <= 3; threads++) {
        ag_workers *w = NULL;
        cr_assert_eq(ag_workers_new(threads, &w, &err), AG_OK, "%s", err.message);
        ag_curvature_options co = AG_CURVATURE_OPTIONS_DEFAULT;
        co.workers = w;
        co.pool = (ag_pool *)(uintptr_t)1;
        ag_matrix_options mo = AG_MATRIX_OPTIONS_DEFAULT;
        mo.workers = w;
        ag_record r, rm, rb;
        ag_record_init(&rb, 0, 0, big, big);
        cr_assert_eq(ag_curvature_metrics_ex(B, big, &sel, &co, &rb, &err), AG_OK, "%s",
                     err.message);
        /* worker 0 (the caller, who takes part in every run) holds junk */
        unsigned char *junk = ag_work_get(ag_workers_work(w), AG_WK_CURVATURE, 1 << 22);
        cr_assert_not_null(junk);
        memset(junk, 0xa5, 1 << 22);
        ag_record_init(&r, 0, 0, n, n);
        ag_record_init(&rm, 0, 0, n, n);
        cr_assert_eq(ag_curvature_metrics_ex(A, n, &sel, &co, &r, &err), AG_OK, "%s",
                     err.message);
        memset(junk, 0x5a, 1 << 22);
        cr_assert_eq(ag_matrix_metrics_work(A, n, n, &sel, &mo, ag_workers_work(w), &rm, &err),
                     AG_OK, "%s", err.message);
        expect_threads_want(&r, "workers", threads);
        expect_threads_want(&rm, "matrix on workers", threads);
        nested_job j = {.A = A, .n = n, .w = w, .sel = &sel};
        cr_assert_eq(ag_pool_run(ag_workers_pool(w), 4, nested_task, &j), 0);
        for (int t = 0; t < 4; t++)
            expect_threads_want(&j.rec[t], "nested", threads);
        ag_workers_free(w);
    }
    free(A);
    free(B);
}

/* ag_curvature_options follows the sized-struct rule (core.h): size 0 is
 * refused naming the struct; an older caller's size that stops before
 * `pool` (or `workers`) gets the default (none) whatever lies beyond it —
 * here a pointer that would crash if used; its threshold counts. */
Test(curvature, options_sizes)
{
    const double A[9] = {0.5, 0.3, 0.2, 0.3, 0.4, 0.3, 0.2, 0.3, 0.5};
    ag_metric_set sel;
    ag_error err = {0};
    ag_record r;
    cr_assert_eq(ag_metric_set_parse(&sel, "curvature", &err), AG_OK, "%s", err.message);
    ag_record_init(&r, 0, 0, 3, 3);
    ag_curvature_options zero = {.edge_threshold = 0.1};
    cr_assert_eq(ag_curvature_metrics_ex(A, 3, &sel, &zero, &r, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_curvature_options: size 0"), "%s", err.message);
    ag_curvature_options old = AG_CURVATURE_OPTIONS_DEFAULT;
    old.size = offsetof(ag_curvature_options, pool);
    old.edge_threshold = 0.25; /* W_01 = W_12 = 0.3 ≥ 0.25 > W_02 = 0.2: a path of 2 edges */
    old.pool = (ag_pool *)(uintptr_t)1;
    cr_assert_eq(ag_curvature_metrics_ex(A, 3, &sel, &old, &r, &err), AG_OK, "%s", err.message);
    expect_int(&r, AG_M_EDGES, 2);
    /* the same record as without options at that threshold */
    ag_record plain;
    ag_record_init(&plain, 0, 0, 3, 3);
    cr_assert_eq(ag_curvature_metrics(A, 3, 0.25, &sel, &plain, &err), AG_OK);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++)
        cr_assert(memcmp(&r.value[k], &plain.value[k], sizeof(double)) == 0, "%s",
                  ag_metric_name(k));
    /* a size that stops before `workers` (the header before it was appended) */
    ag_curvature_options before = AG_CURVATURE_OPTIONS_DEFAULT;
    before.size = offsetof(ag_curvature_options, workers);
    before.edge_threshold = 0.25;
    before.workers = (ag_workers *)(uintptr_t)1;
    ag_record_init(&r, 0, 0, 3, 3);
    cr_assert_eq(ag_curvature_metrics_ex(A, 3, &sel, &before, &r, &err), AG_OK, "%s",
                 err.message);
    for (ag_metric k = AG_M_EDGES; k <= AG_M_OLLIVIER_MIN; k++)
        cr_assert(memcmp(&r.value[k], &plain.value[k], sizeof(double)) == 0, "%s",
                  ag_metric_name(k));
}

/* The solver against Kantorovich–Rubinstein duality by brute force:
 * W₁(μ, ν) = max Σ_u f(u)(μ − ν)(u) over 1-Lipschitz f, and for integer
 * hop distances an optimal f is integral (difference constraints: a
 * totally unimodular system) with values in 0..diameter after a shift, so
 * the maximum over f ∈ {0..3}^k is W₁ exactly. 300 random problems on
 * k ≤ 7 points: random graphs (hop distances by Floyd–Warshall, truncated
 * at 3, still a metric), masses with many equal and zero entries. */
static double kr_brute(const double *mu, const double *nu, size_t k, const unsigned char *H)
{
    double best = -INFINITY;
    size_t total = 1;
    for (size_t u = 0; u < k; u++)
        total *= 4;
    for (size_t code = 0; code < total; code++) {
        int f[8];
        size_t c = code;
        for (size_t u = 0; u < k; u++, c /= 4)
            f[u] = (int)(c % 4);
        int ok = 1;
        for (size_t u = 0; u < k && ok; u++)
            for (size_t v = u + 1; v < k && ok; v++)
                ok = abs(f[u] - f[v]) <= H[u * k + v];
        if (!ok)
            continue;
        double s = 0;
        for (size_t u = 0; u < k; u++)
            s += f[u] * (mu[u] - nu[u]);
        best = fmax(best, s);
    }
    return best;
}

Test(curvature, wasserstein1_against_duality)
{
    uint64_t st = 0x2545F4914F6CDD1Dull;
#define NEXT() (st ^= st << 13, st ^= st >> 7, st ^= st << 17, st)
    for (int t = 0; t < 300; t++) {
        size_t k = 2 + NEXT() % 6;
        unsigned char H[49];
        int d[7][7];
        for (size_t u = 0; u < k; u++)
            for (size_t v = 0; v < k; v++)
                d[u][v] = u == v ? 0 : 99;
        for (size_t u = 0; u < k; u++)
            for (size_t v = u + 1; v < k; v++)
                if (NEXT() % 3 == 0)
                    d[u][v] = d[v][u] = 1;
        for (size_t m = 0; m < k; m++)
            for (size_t u = 0; u < k; u++)
                for (size_t v = 0; v < k; v++)
                    if (d[u][m] + d[m][v] < d[u][v])
                        d[u][v] = d[u][m] + d[m][v];
        for (size_t u = 0; u < k; u++)
            for (size_t v = 0; v < k; v++)
                H[u * k + v] = (unsigned char)(d[u][v] < 3 ? d[u][v] : 3);
        double mu[7], nu[7], smu = 0, snu = 0;
        for (size_t u = 0; u < k; u++) {
            mu[u] = NEXT() % 4 == 0 ? 0 : (double)(NEXT() % 1000) / 997.0;
            nu[u] = NEXT() % 4 == 0 ? mu[u] : (double)(NEXT() % 1000) / 991.0;
            smu += mu[u];
            snu += nu[u];
        }
        if (smu == 0 || snu == 0)
            continue;
        for (size_t u = 0; u < k; u++) { /* equal totals, up to rounding */
            mu[u] /= smu;
            nu[u] /= snu;
        }
        double w = -1;
        ag_error err = {0};
        cr_assert_eq(ag_wasserstein1_hops(mu, nu, k, H, &w, &err), AG_OK, "%s", err.message);
        double want = kr_brute(mu, nu, k, H);
        cr_assert(fabs(w - want) <= 1e-14, "problem %d (k = %zu): W1 %.17g, duality %.17g", t,
                  k, w, want);
    }
#undef NEXT
}
