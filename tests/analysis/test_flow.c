/* test_flow.c — attention flow (Abnar & Zuidema 2020, §3; attngeom/layers.h)
 * in the library: closed forms worked out by hand, the invariants the
 * capacities imply on random attention (against the rollout of the same
 * layers), the errors, and igraph's failures coming back as statuses with
 * its error handler put back. tests/ref/check_flow.py compares the values
 * with networkx's maximum flow on the authors' graph. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <igraph.h>

#include "attngeom.h"
#include "../../analysis/flow.h"
#include "../util/test_metrics_util.h"

TestSuite(flow);

static void flow_ok(const double *cap, int L, size_t n, double *F)
{
    ag_error err = {0};
    cr_assert_eq(ag_attention_flow(cap, L, n, F, &err), AG_OK, "%s", err.message);
}

/* Identity attention: Ã_l = ½ I + ½ I = I at every layer, so the only edges
 * are the vertical ones (l, k) → (l−1, k) of capacity 1: F = I. */
Test(flow, identity_attention_gives_identity)
{
    enum { L = 3, H = 2, n = 4 };
    double attn[H][n][n] = {{{0}}}, cap[L][n][n], F[n][n];
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++)
            attn[h][i][i] = 1;
    ag_error err = {0};
    for (int l = 0; l < L; l++)
        cr_assert_eq(ag_rollout_mix(&attn[0][0][0], H, n, &cap[l][0][0], &err), AG_OK);
    flow_ok(&cap[0][0][0], L, n, &F[0][0]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            cr_assert_eq(F[i][j], i == j ? 1.0 : 0.0, "F[%d][%d] = %g", i, j, F[i][j]);
}

/* Two layers, two tokens, worked out by hand:
 *   Ā_0 = all ½        → Ã_0 = [[3/4, 1/4], [1/4, 3/4]]
 *   Ā_1 = [[0,1],[1,0]] → Ã_1 = all ½
 * The source (2, i) sends ½ to each middle node (1, m); a path s → m → t
 * uses edges no other path uses, so F[i][j] = Σ_m min(Ã_1[i][m], Ã_0[m][j]):
 *   F[i][0] = min(½, 3/4) + min(½, 1/4) = 3/4,  F[i][1] = ¼ + ½ = 3/4.
 * The rollout is Ã_1 Ã_0 = all ½ ≤ F; the authors' row normalisation would
 * give ½ everywhere. */
Test(flow, two_layers_two_tokens_by_hand)
{
    const double attn0[4] = {0.5, 0.5, 0.5, 0.5}, attn1[4] = {0, 1, 1, 0};
    double cap[2][4], F[4];
    ag_error err = {0};
    cr_assert_eq(ag_rollout_mix(attn0, 1, 2, cap[0], &err), AG_OK);
    cr_assert_eq(ag_rollout_mix(attn1, 1, 2, cap[1], &err), AG_OK);
    const double want_cap0[4] = {0.75, 0.25, 0.25, 0.75};
    cr_assert_arr_eq(cap[0], want_cap0, sizeof want_cap0);
    flow_ok(&cap[0][0], 2, 2, F);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(F[k], 0.75, "F[%d][%d] = %.17g", k / 2, k % 2, F[k]);
}

/* Three layers, two tokens, where two paths share an edge (the case that
 * makes flow differ from a sum over paths):
 *   Ā_0 = [[0,1],[0,1]] → Ã_0 = [[½,½],[0,1]]
 *   Ā_1 = [[1,0],[1,0]] → Ã_1 = [[1,0],[½,½]]
 *   Ā_2 = [[0,1],[1,0]] → Ã_2 = all ½
 * Sink (0,0) is entered only from (1,0), with capacity ½: both paths
 * s → (2,0) → (1,0) and s → (2,1) → (1,0) (each ½ wide) share that edge, so
 * F[i][0] = ½ (not 1). Sink (0,1): s → (2,0) → (1,0) → (0,1) carries ½ and
 * s → (2,1) → (1,1) → (0,1) carries ½: F[i][1] = 1, all the source sends.
 * Rollout: Ã_1 Ã_0 = [[½,½],[¼,¾]], R = Ã_2 · that = [3/8, 5/8] per row. */
Test(flow, three_layers_shared_edge_by_hand)
{
    const double cap[3][4] = {{0.5, 0.5, 0, 1}, {1, 0, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5}};
    double F[4];
    flow_ok(&cap[0][0], 3, 2, F);
    const double want[4] = {0.5, 1, 0.5, 1};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(F[k], want[k], "F[%d][%d] = %.17g, expected %g", k / 2, k % 2, F[k], want[k]);
    /* the first layer alone: F is Ã_0 itself (one edge per pair) */
    flow_ok(&cap[0][0], 1, 2, F);
    cr_assert_arr_eq(F, cap[0], sizeof F);
}

/* (L, H, n, n) random row-stochastic attention, causal if asked. */
static double *random_attention(int L, int H, size_t n, int causal, unsigned long long seed)
{
    double *a = malloc((size_t)L * H * n * n * sizeof *a);
    cr_assert_not_null(a);
    for (size_t m = 0; m < (size_t)L * H; m++)
        test_random_attention(a + m * n * n, n, causal, 8, &seed);
    return a;
}

static void check_invariants(int causal, unsigned long long seed)
{
    enum { L = 4, H = 3, n = 7 };
    double *attn = random_attention(L, H, n, causal, seed);
    double cap[L][n][n], R[L][n][n], F[n][n];
    ag_error err = {0};
    for (int l = 0; l < L; l++)
        cr_assert_eq(ag_rollout_mix(attn + (size_t)l * H * n * n, H, n, &cap[l][0][0], &err), AG_OK);
    cr_assert_eq(ag_rollout(attn, L, H, n, &R[0][0][0], &err), AG_OK);
    flow_ok(&cap[0][0][0], L, n, &F[0][0]);
    const double eps = 1e-12;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double f = F[i][j];
            cr_assert(f >= 0 && f <= 1 + eps, "F[%d][%d] = %.17g outside [0, 1]", i, j, f);
            /* the rollout's walk is a feasible flow: F ≥ R */
            cr_assert(f >= R[L - 1][i][j] - eps, "F[%d][%d] = %.17g < R = %.17g", i, j, f,
                      R[L - 1][i][j]);
            if (i == j) /* the diagonal path: every capacity ≥ ½ */
                cr_assert(f >= 0.5 - eps, "F[%d][%d] = %.17g < 1/2", i, i, f);
            if (causal && j > i)
                cr_assert_eq(f, 0.0, "causal F[%d][%d] = %g", i, j, f);
        }
    /* Σ_j F[i][j] ≥ Σ_j R[i][j] = 1, and ≤ the capacity into the sinks from
     * the layer-1 nodes the source reaches: Σ_j Σ_k Ã_0[k][j] over those k,
     * one per node (rows sum to 1): i + 1 of them when causal, else n */
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int j = 0; j < n; j++)
            sum += F[i][j];
        double most = causal ? i + 1 : n;
        cr_assert(sum >= 1 - eps && sum <= most + eps, "row %d sums to %.17g", i, sum);
    }
    if (causal) /* token 0 sees only itself: every Ã_l[0][0] = 1 */
        cr_assert_eq(F[0][0], 1.0);
    free(attn);
}

Test(flow, invariants_causal)
{
    check_invariants(1, 0x1234567ULL);
    check_invariants(1, 0xfeedULL);
}

Test(flow, invariants_dense)
{
    check_invariants(0, 0xabcdefULL);
    check_invariants(0, 0x5eedULL);
}

/* The pair API agrees with the matrix, and a pair with no path is 0. */
Test(flow, graph_pairs)
{
    const double cap[2][9] = {{1, 0, 0, 0.5, 0.5, 0, 0.25, 0.25, 0.5},
                              {1, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5}};
    double F[9], v = -1;
    flow_ok(&cap[0][0], 2, 3, F);
    ag_flow_graph *g = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_flow_graph_new(&cap[0][0], 2, 3, &g, &err), AG_OK, "%s", err.message);
    for (size_t k = 0; k < 9; k++) {
        cr_assert_eq(ag_flow_graph_value(g, k / 3, k % 3, &v, &err), AG_OK);
        cr_assert_eq(v, F[k]);
    }
    /* row 0: (2,0) → (1,0) → (0,0) with capacity 1, nothing else */
    cr_assert_eq(F[0], 1.0);
    cr_assert_eq(F[1], 0.0);
    cr_assert_eq(F[2], 0.0);
    /* (2,2) → (1,1) ½ → (0,0) ½ and → (1,2) ½ → (0,0) ¼: F[2][0] = ½ + ¼ */
    cr_assert_eq(F[6], 0.75);
    cr_assert_eq(ag_flow_graph_value(g, 3, 0, &v, &err), AG_ERANGE);
    ag_flow_graph_free(g);
}

Test(flow, errors)
{
    double cap[2][4] = {{0.5, 0.5, 0.5, 0.5}, {1, 0, 0, 1}}, F[4];
    ag_error err = {0};
    ag_flow_graph *g = NULL;
    cr_assert_eq(ag_attention_flow(NULL, 2, 2, F, &err), AG_EINVAL);
    cr_assert_eq(ag_attention_flow(&cap[0][0], 2, 2, NULL, &err), AG_EINVAL);
    cr_assert_eq(ag_attention_flow(&cap[0][0], 0, 2, F, &err), AG_EINVAL);
    cr_assert_eq(ag_attention_flow(&cap[0][0], 2, 0, F, &err), AG_EINVAL);
    cap[1][2] = -0.25;
    cr_assert_eq(ag_attention_flow(&cap[0][0], 2, 2, F, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "flow: negative capacity (-0.25) at layer 1, row 1, column 0 "
                                  "(a flow needs capacities >= 0)");
    cap[1][2] = NAN;
    cr_assert_eq(ag_flow_graph_new(&cap[0][0], 2, 2, &g, &err), AG_ENONFINITE);
    cr_assert_null(g);
    cr_assert_str_eq(err.message, "flow: non-finite capacity (nan) at layer 1, row 1, column 0");
    cap[1][2] = INFINITY;
    cr_assert_eq(ag_flow_graph_new(&cap[0][0], 2, 2, &g, &err), AG_ENONFINITE);
    cr_assert_eq(ag_flow_graph_new(&cap[0][0], 1, (size_t)1 << 40, &g, &err), AG_ELIMIT);
    cr_assert_eq(ag_flow_graph_value(NULL, 0, 0, F, &err), AG_EINVAL);
}

/* What the test's own handler saw (it must never be called by attngeom). */
static int foreign_calls;
static void foreign_handler(const char *reason, const char *file, int line, igraph_error_t e)
{
    (void)reason, (void)file, (void)line, (void)e;
    foreign_calls++;
    IGRAPH_FINALLY_FREE();
}

/* igraph refuses a capacity vector of the wrong length: the failure is a
 * status and a message (its default handler would abort the process), the
 * caller's handler is back afterwards, and the next flow is right (igraph's
 * stack of temporaries was emptied). */
Test(flow, igraph_failure_is_a_status)
{
    igraph_error_handler_t *before = igraph_set_error_handler(foreign_handler);
    int64_t edges[4] = {0, 1, 1, 2};
    double caps[2] = {0.5, 0.25};
    aga_flow_net bad = {.n_nodes = 3, .n_edges = 2, .n_cap = 1, .source = 0, .sink = 2,
                        .edges = edges, .cap = caps};
    double v = -1;
    ag_error err = {0};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(aga_flow_igraph(&bad, &v, &err), AG_EINVAL);
        cr_assert(strstr(err.message, "igraph: Invalid capacity vector") == err.message, "%s",
                  err.message);
    }
    aga_flow_net good = bad;
    good.n_cap = 2;
    cr_assert_eq(aga_flow_igraph(&good, &v, &err), AG_OK, "%s", err.message);
    cr_assert_eq(v, 0.25); /* the path's narrowest edge */
    cr_assert_eq(igraph_set_error_handler(before), foreign_handler);
    cr_assert_eq(foreign_calls, 0);
}

/* ag_run_flow_matrix: the rows as tasks on 1 to 4 threads (more than rows)
 * give ag_attention_flow's bytes; its errors are the graph's. */
Test(flow, run_flow_matrix_threads_and_errors)
{
    enum { L = 3, H = 2, n = 3 };
    double *attn = random_attention(L, H, n, 0, 0x77ULL);
    double cap[L][n][n], want[n][n], F[n][n];
    ag_error err = {0};
    for (int l = 0; l < L; l++)
        cr_assert_eq(ag_rollout_mix(attn + (size_t)l * H * n * n, H, n, &cap[l][0][0], &err), AG_OK);
    flow_ok(&cap[0][0][0], L, n, &want[0][0]);
    ag_run_options *o = ag_run_options_new();
    for (int threads = 1; threads <= 4; threads++) {
        cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
        memset(F, 0xff, sizeof F);
        cr_assert_eq(ag_run_flow_matrix(&cap[0][0][0], L, n, o, NULL, &F[0][0], &err), AG_OK,
                     "%s", err.message);
        cr_assert_arr_eq(F, want, sizeof F, "%d threads", threads);
    }
    cr_assert_eq(ag_run_flow_matrix(&cap[0][0][0], L, n, NULL, NULL, &F[0][0], &err), AG_OK);
    cr_assert_arr_eq(F, want, sizeof F, "default options");
    cap[2][0][1] = -1;
    cr_assert_eq(ag_run_flow_matrix(&cap[0][0][0], L, n, o, NULL, &F[0][0], &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "flow: negative capacity (-1) at layer 2, row 0, column 1 "
                                  "(a flow needs capacities >= 0)");
    cr_assert_eq(ag_run_flow_matrix(&cap[0][0][0], L, n, o, NULL, NULL, &err), AG_EINVAL);
    ag_run_options_free(o);
    free(attn);
}
