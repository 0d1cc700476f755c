/* test_rollout.c — docs/metrics.md, family G in the library: attention rollout against hand
 * computations, its invariants (row-stochastic, lower-triangular for causal
 * attention), its errors, and the residual-stream metrics of a matrix with
 * identical rows. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

TestSuite(rollout);

static void expect_matrix(const double *got, const double *want, size_t n, double tol,
                          const char *what)
{
    for (size_t k = 0; k < n * n; k++)
        cr_assert(fabs(got[k] - want[k]) <= tol, "%s[%zu][%zu] = %.17g, expected %.17g",
                  what, k / n, k % n, got[k], want[k]);
}

/* Two layers, two heads, n = 3, causal. Every number is a short dyadic
 * fraction, so the computation is exact in double.
 *   Ā_0 = mean(h0, h1) = [[1,0,0],[1/4,3/4,0],[3/8,1/8,1/2]]
 *   R_0 = Ã_0 = ½Ā_0 + ½I = [[1,0,0],[1/8,7/8,0],[3/16,1/16,3/4]]
 *   Ā_1 = [[1,0,0],[3/4,1/4,0],[1/2,1/4,1/4]]
 *   Ã_1 = [[1,0,0],[3/8,5/8,0],[1/4,1/8,5/8]]
 *   R_1 = Ã_1 R_0:
 *     row 1 = 3/8·(1,0,0) + 5/8·(1/8,7/8,0)            = (29/64, 35/64, 0)
 *     row 2 = 1/4·(1,0,0) + 1/8·(1/8,7/8,0)
 *             + 5/8·(3/16,1/16,3/4)                     = (49/128, 19/128, 15/32) */
static const double causal_attn[2][2][9] = {
    {{1, 0, 0, 0.5, 0.5, 0, 0.25, 0.25, 0.5}, {1, 0, 0, 0, 1, 0, 0.5, 0, 0.5}},
    {{1, 0, 0, 1, 0, 0, 1, 0, 0}, {1, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5}},
};
static const double causal_R0[9] = {1, 0, 0, 1.0 / 8, 7.0 / 8, 0, 3.0 / 16, 1.0 / 16, 3.0 / 4};
static const double causal_R1[9] = {1, 0, 0, 29.0 / 64, 35.0 / 64, 0,
                                    49.0 / 128, 19.0 / 128, 15.0 / 32};

Test(rollout, hand_computation_causal_two_layers)
{
    double R[9];
    ag_error err = {0};
    cr_assert_eq(ag_rollout_step(R, &causal_attn[0][0][0], 2, 3, 1, &err), AG_OK, "%s", err.message);
    expect_matrix(R, causal_R0, 3, 0, "R_0");
    cr_assert_eq(ag_rollout_step(R, &causal_attn[1][0][0], 2, 3, 0, &err), AG_OK, "%s", err.message);
    expect_matrix(R, causal_R1, 3, 0, "R_1");

    double out[2][9];
    cr_assert_eq(ag_rollout(&causal_attn[0][0][0], 2, 2, 3, &out[0][0], &err), AG_OK, "%s", err.message);
    expect_matrix(out[0], causal_R0, 3, 0, "ag_rollout R_0");
    expect_matrix(out[1], causal_R1, 3, 0, "ag_rollout R_1");
}

/* Non-causal, n = 2, two heads:
 *   Ā_0 = mean([[1/2,1/2],[1/4,3/4]], [[3/4,1/4],[1/2,1/2]]) = [[5/8,3/8],[3/8,5/8]]
 *   R_0 = [[13/16,3/16],[3/16,13/16]]
 *   Ā_1 = mean(I, [[0,1],[1,0]]) = all 1/2,  Ã_1 = [[3/4,1/4],[1/4,3/4]]
 *   R_1 = Ã_1 R_0: row 0 = 3/4·(13/16,3/16) + 1/4·(3/16,13/16) = (21/32, 11/32) */
Test(rollout, hand_computation_dense_two_layers)
{
    const double attn[2][2][4] = {
        {{0.5, 0.5, 0.25, 0.75}, {0.75, 0.25, 0.5, 0.5}},
        {{1, 0, 0, 1}, {0, 1, 1, 0}},
    };
    const double R0[4] = {13.0 / 16, 3.0 / 16, 3.0 / 16, 13.0 / 16};
    const double R1[4] = {21.0 / 32, 11.0 / 32, 11.0 / 32, 21.0 / 32};
    double out[2][4];
    ag_error err = {0};
    cr_assert_eq(ag_rollout(&attn[0][0][0], 2, 2, 2, &out[0][0], &err), AG_OK, "%s", err.message);
    expect_matrix(out[0], R0, 2, 0, "R_0");
    expect_matrix(out[1], R1, 2, 0, "R_1");
}

/* One head, one layer: R_0 = ½A + ½I; and R's input is ignored when first. */
Test(rollout, first_step_ignores_R)
{
    const double A[4] = {0.2, 0.8, 0.6, 0.4};
    double R[4] = {NAN, NAN, NAN, NAN};
    ag_error err = {0};
    cr_assert_eq(ag_rollout_step(R, A, 1, 2, 1, &err), AG_OK, "%s", err.message);
    const double want[4] = {0.6, 0.4, 0.3, 0.7};
    expect_matrix(R, want, 2, 2 * DBL_EPSILON, "R_0");
}

/* A small deterministic generator (xorshift64*), uniform in (0, 1]. */
static double uniform(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return ((*s * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0) + 0x1p-53;
}

/* (L, H, n, n) random row-stochastic attention, causal if asked. */
static double *random_attention(int L, int H, size_t n, int causal, unsigned long long seed)
{
    double *a = malloc((size_t)L * H * n * n * sizeof *a);
    cr_assert_not_null(a);
    for (size_t m = 0; m < (size_t)L * H; m++)
        for (size_t i = 0; i < n; i++) {
            double *row = a + (m * n + i) * n, s = 0;
            for (size_t j = 0; j < n; j++) {
                row[j] = causal && j > i ? 0 : exp(3 * uniform(&seed));
                s += row[j];
            }
            for (size_t j = 0; j < n; j++)
                row[j] /= s;
        }
    return a;
}

/* Naive reference: Ã by the formula, then a triple loop. */
static void naive_rollout(const double *attn, int L, int H, size_t n, double *out)
{
    double *At = malloc(n * n * sizeof *At), *P = malloc(n * n * sizeof *P);
    cr_assert(At && P);
    for (int l = 0; l < L; l++) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (int h = 0; h < H; h++)
                    s += attn[(((size_t)l * H + h) * n + i) * n + j];
                At[i * n + j] = 0.5 * s / H + (i == j ? 0.5 : 0);
            }
        double *R = out + (size_t)l * n * n;
        if (l == 0) {
            memcpy(R, At, n * n * sizeof *R);
            continue;
        }
        const double *prev = R - n * n;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t k = 0; k < n; k++)
                    s += At[i * n + k] * prev[k * n + j];
                P[i * n + j] = s;
            }
        memcpy(R, P, n * n * sizeof *R);
    }
    free(At);
    free(P);
}

static void check_properties(int causal)
{
    const int L = 8, H = 3;
    const size_t n = 13;
    double *attn = random_attention(L, H, n, causal, causal ? 7 : 11);
    double *R = malloc((size_t)L * n * n * sizeof *R), *ref = malloc((size_t)L * n * n * sizeof *ref);
    cr_assert(R && ref);
    ag_error err = {0};
    cr_assert_eq(ag_rollout(attn, L, H, n, R, &err), AG_OK, "%s", err.message);
    naive_rollout(attn, L, H, n, ref);
    for (int l = 0; l < L; l++) {
        const double *Rl = R + (size_t)l * n * n;
        expect_matrix(Rl, ref + (size_t)l * n * n, n, 1e-14, "R vs naive");
        for (size_t i = 0; i < n; i++) {
            double s = 0;
            for (size_t j = 0; j < n; j++) {
                s += Rl[i * n + j];
                cr_assert(Rl[i * n + j] >= 0, "R_%d[%zu][%zu] < 0", l, i, j);
                if (causal && j > i)
                    cr_assert(Rl[i * n + j] == 0, "R_%d[%zu][%zu] = %g above the diagonal",
                              l, i, j, Rl[i * n + j]);
            }
            cr_assert(fabs(s - 1) <= 1e-14 * n, "R_%d row %zu sums to 1 %+g", l, i, s - 1);
        }
        /* what the metrics see: row_sum_error small, causal exactly as the input */
        ag_metric_set sel;
        ag_record rec;
        ag_metric_set_parse(&sel, "causal,row_sum_error", NULL);
        ag_record_init(&rec, l, -1, 0, 0);
        cr_assert_eq(ag_matrix_metrics(Rl, n, n, &sel, &rec, &err), AG_OK, "%s", err.message);
        cr_assert_eq(rec.kind[AG_M_CAUSAL], AG_V_BOOL);
        cr_assert_eq(rec.value[AG_M_CAUSAL], causal ? 1.0 : 0.0);
        cr_assert(rec.value[AG_M_ROW_SUM_ERROR] <= 1e-14 * n);
    }
    free(attn);
    free(R);
    free(ref);
}

Test(rollout, row_stochastic_and_matches_naive_dense) { check_properties(0); }
Test(rollout, causal_gives_lower_triangular) { check_properties(1); }

/* Stepping by hand gives bit for bit what ag_rollout gives. */
Test(rollout, step_equals_whole)
{
    const int L = 4, H = 2;
    const size_t n = 6, nn = n * n;
    double *attn = random_attention(L, H, n, 0, 3);
    double *whole = malloc(L * nn * sizeof *whole), R[36];
    ag_error err = {0};
    cr_assert_eq(ag_rollout(attn, L, H, n, whole, &err), AG_OK, "%s", err.message);
    for (int l = 0; l < L; l++) {
        cr_assert_eq(ag_rollout_step(R, attn + (size_t)l * H * nn, H, n, l == 0, &err), AG_OK);
        cr_assert(memcmp(R, whole + l * nn, sizeof R) == 0, "layer %d differs", l);
    }
    free(attn);
    free(whole);
}

Test(rollout, errors)
{
    double A[8] = {1, 0, 0.5, 0.5, 1, 0, 0.25, 0.75};
    double R[4] = {1, 2, 3, 4};
    const double R_before[4] = {1, 2, 3, 4};
    ag_error err = {0};

    A[6] = NAN; /* head 1, row 1, column 0 */
    cr_assert_eq(ag_rollout_step(R, A, 2, 2, 0, &err), AG_ENONFINITE);
    cr_assert_eq(err.status, AG_ENONFINITE);
    cr_assert(strstr(err.message, "head 1, row 1, column 0"), "message: %s", err.message);
    cr_assert(strchr(err.message, '\n') == NULL);
    cr_assert(memcmp(R, R_before, sizeof R) == 0, "R changed on failure");
    A[6] = INFINITY;
    cr_assert_eq(ag_rollout_step(R, A, 2, 2, 1, NULL), AG_ENONFINITE);
    A[6] = 0.25;

    double Rn[4] = {1, 0, NAN, 1};
    cr_assert_eq(ag_rollout_step(Rn, A, 2, 2, 0, &err), AG_ENONFINITE);
    cr_assert_eq(ag_rollout_step(Rn, A, 2, 2, 1, &err), AG_OK, "first step ignores R");

    cr_assert_eq(ag_rollout_step(R, A, 2, 0, 1, &err), AG_EINVAL);
    cr_assert_eq(err.status, AG_EINVAL);
    cr_assert_eq(ag_rollout_step(R, A, 0, 2, 1, &err), AG_EINVAL);
    cr_assert_eq(ag_rollout_step(NULL, A, 2, 2, 1, &err), AG_EINVAL);
    cr_assert_eq(ag_rollout_step(R, NULL, 2, 2, 1, &err), AG_EINVAL);

    double out[8];
    cr_assert_eq(ag_rollout(A, 0, 2, 2, out, &err), AG_EINVAL);
    cr_assert_eq(ag_rollout(A, 1, 2, 0, out, &err), AG_EINVAL);
    double two[16] = {1, 0, 0.5, 0.5, 1, 0, 0.5, 0.5, 1, 0, 0.5, 0.5, 1, 0, NAN, 0.5};
    cr_assert_eq(ag_rollout(two, 2, 2, 2, out, &err), AG_ENONFINITE);
    cr_assert(strncmp(err.message, "layer 1: ", 9) == 0, "message: %s", err.message);
}

/* ---- residual ------------------------------------------------------------- */

/* Hidden states whose rows are identical: rank collapse complete. The centred
 * matrix is exactly 0, so res_ratio = 0 and pc1_share is null; every
 * distinct pair has cosine 1; one singular value. */
Test(rollout, residual_identical_rows)
{
    const size_t n = 5, d = 4;
    const double row[4] = {0.1, -2.5, 3.0, 0.7};
    double X[20];
    for (size_t i = 0; i < n; i++)
        memcpy(X + i * d, row, sizeof row);
    ag_metric_set sel;
    ag_record rec;
    ag_error err = {0};
    ag_metric_set_parse(&sel, "all", NULL);
    ag_record_init(&rec, 3, -1, 0, 0);
    cr_assert_eq(ag_residual_metrics(X, n, d, &sel, &rec, &err), AG_OK, "%s", err.message);
    cr_assert_eq(rec.rows, n);
    cr_assert_eq(rec.cols, d);
    cr_assert_eq(rec.layer, 3);
    cr_assert_eq(rec.head, -1);
    cr_assert_eq(rec.kind[AG_M_RES_RATIO], AG_V_NUMBER);
    cr_assert_eq(rec.value[AG_M_RES_RATIO], 0.0);
    cr_assert_eq(rec.kind[AG_M_PC1_SHARE], AG_V_NULL);
    cr_assert_eq(rec.kind[AG_M_MEAN_COSINE], AG_V_NUMBER);
    cr_assert(fabs(rec.value[AG_M_MEAN_COSINE] - 1) <= 4 * DBL_EPSILON);
    cr_assert_eq(rec.kind[AG_M_NUMERICAL_RANK], AG_V_INTEGER);
    cr_assert_eq(rec.value[AG_M_NUMERICAL_RANK], 1.0);
    cr_assert(fabs(rec.value[AG_M_STABLE_RANK] - 1) <= 4 * DBL_EPSILON);
    /* only families A and C: "all" does not reach the attention keys */
    for (int k = 0; k < AG_M_COUNT; k++) {
        ag_family f = ag_metric_family((ag_metric)k);
        if (f != AG_FAMILY_SPECTRUM && f != AG_FAMILY_GEOMETRY)
            cr_assert_eq(rec.kind[k], AG_V_ABSENT, "%s computed", ag_metric_name((ag_metric)k));
    }
}

/* On any matrix, the residual metrics are those of ag_matrix_metrics
 * restricted to families A and C. */
Test(rollout, residual_equals_matrix_metrics)
{
    const size_t n = 7, d = 5;
    double X[35];
    unsigned long long s = 5;
    for (size_t k = 0; k < n * d; k++)
        X[k] = uniform(&s) - 0.5;
    ag_metric_set sel;
    ag_record a, b;
    ag_error err = {0};
    ag_metric_set_families(&sel, AG_FAMILIES_RESIDUAL);
    ag_record_init(&a, 0, -1, 0, 0);
    ag_record_init(&b, 0, -1, 0, 0);
    cr_assert_eq(ag_residual_metrics(X, n, d, &sel, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_matrix_metrics(X, n, d, &sel, &b, &err), AG_OK, "%s", err.message);
    for (int k = 0; k < AG_M_COUNT; k++) {
        cr_assert_eq(a.kind[k], b.kind[k], "%s kind", ag_metric_name((ag_metric)k));
        if (a.kind[k] >= AG_V_NUMBER)
            cr_assert_eq(a.value[k], b.value[k], "%s", ag_metric_name((ag_metric)k));
    }
    cr_assert_eq(a.kind[AG_M_SIGMA_MAX], AG_V_NUMBER);
    cr_assert_eq(a.kind[AG_M_RES_RATIO], AG_V_NUMBER);

    X[9] = NAN;
    cr_assert_eq(ag_residual_metrics(X, n, d, &sel, &a, &err), AG_ENONFINITE);
    cr_assert_eq(ag_residual_metrics(X, 0, d, &sel, &a, &err), AG_EINVAL);
}

/* ag_rollout_cross, closed forms. With m = n and an identity cross-attention
 * (every head I), R_cross = I · R_enc: row i is the encoder rollout's row
 * i, exactly. With two heads whose mean is a selection (target i reads
 * source s_i only: head 0 puts 1 on s_i, head 1 too), row i is R_enc's row
 * s_i; a rectangular m = 2 < n = 3 case. R_enc is causal_R1 above. */
Test(rollout, cross_identity_gives_encoder_rows)
{
    double I[2][9] = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 1}};
    double out[9];
    ag_error err = {0};
    cr_assert_eq(ag_rollout_cross(&I[0][0], 2, 3, 3, causal_R1, out, &err), AG_OK, "%s",
                 err.message);
    expect_matrix(out, causal_R1, 3, 0, "R_cross");
}

Test(rollout, cross_selection_rectangular)
{
    /* target 0 reads source 2, target 1 splits heads: ½(source 0) + ½(source 1) */
    double A[2][6] = {{0, 0, 1, 1, 0, 0}, {0, 0, 1, 0, 1, 0}};
    double out[6];
    ag_error err = {0};
    cr_assert_eq(ag_rollout_cross(&A[0][0], 2, 2, 3, causal_R1, out, &err), AG_OK, "%s",
                 err.message);
    for (size_t j = 0; j < 3; j++) {
        cr_assert_eq(out[j], causal_R1[6 + j], "row 0 col %zu", j);
        double want = 0.5 * causal_R1[j] + 0.5 * causal_R1[3 + j]; /* dyadic: exact */
        cr_assert_eq(out[3 + j], want, "row 1 col %zu: %.17g, want %.17g", j, out[3 + j], want);
    }
    /* row-stochastic inputs give row sums 1 */
    cr_assert(fabs(out[0] + out[1] + out[2] - 1) < 1e-15 && fabs(out[3] + out[4] + out[5] - 1) < 1e-15);
}

Test(rollout, cross_errors)
{
    double A[6] = {0, 0, 1, 1, 0, 0}, out[6] = {7, 7, 7, 7, 7, 7}, R[9];
    memcpy(R, causal_R1, sizeof R);
    ag_error err = {0};
    cr_assert_eq(ag_rollout_cross(NULL, 1, 2, 3, R, out, &err), AG_EINVAL);
    cr_assert_eq(ag_rollout_cross(A, 0, 2, 3, R, out, &err), AG_EINVAL);
    cr_assert_eq(ag_rollout_cross(A, 1, 0, 3, R, out, &err), AG_EINVAL);
    A[4] = NAN;
    cr_assert_eq(ag_rollout_cross(A, 1, 2, 3, R, out, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "head 0, row 1, column 1"), "%s", err.message);
    A[4] = 0;
    R[5] = INFINITY;
    cr_assert_eq(ag_rollout_cross(A, 1, 2, 3, R, out, &err), AG_ENONFINITE);
    cr_assert(strstr(err.message, "row 1, column 2"), "%s", err.message);
    cr_assert_eq(out[0], 7, "out unchanged on failure");
}
