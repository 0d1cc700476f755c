/* test_stability_qk.c — family E through a QK-norm (stability.h
 * ag_head_qk_norm: Qwen3 / Gemma-3 per head, OLMo-2 over the whole
 * projection): the JVP's Jacobian against central finite differences of
 * ag_head_attention_ex, JVP/VJP adjointness, the Lanczos norm against a
 * LAPACK SVD, the norm's scale invariance (a closed form), and the errors.
 * The model folders' heads are checked against the pass in
 * tests/engine/test_archs.c and against a complex-step Jacobian of
 * hf_forward in tests/ref/check_stability.py. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "attngeom.h"
#include "../../analysis/analysis.h" /* ag_svd_values */

TestSuite(stability_qk);

/* The extras of a head with QK-norm qk alone (a block-scoped compound
 * literal, as a caller would start it from AG_HEAD_EXTRA_DEFAULT). */
#define QK_EX(p) (&(ag_head_extra){.size = sizeof(ag_head_extra), .qk = (p)})

#define N 6
#define D 5
#define DH 4
#define HEADS 3 /* the whole projection: 3 heads of DH, the head is the middle one */
#define W (HEADS * DH)

typedef struct {
    double x[N * D], wq[D * W], wk[D * W], bq[W], bk[W], gq[W], gk[W];
    ag_head_input in;
    ag_head_qk_norm qk;
} qk_case;

/* A random head with a QK-norm of `kind` (per head: the head's own columns
 * of the wide projections and scales; whole: all W of them). */
static void qk_make(qk_case *c, unsigned long seed, ag_qk_norm kind, int bias, int rope)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    for (size_t i = 0; i < N * D; i++)
        c->x[i] = gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < D * W; i++) {
        c->wq[i] = gsl_ran_gaussian(r, 1.0 / sqrt((double)D));
        c->wk[i] = gsl_ran_gaussian(r, 1.0 / sqrt((double)D));
    }
    for (size_t i = 0; i < W; i++) {
        c->bq[i] = bias ? gsl_ran_gaussian(r, 0.5) : 0;
        c->bk[i] = bias ? gsl_ran_gaussian(r, 0.5) : 0;
        c->gq[i] = 1 + gsl_rng_uniform(r) * 2; /* scores spread: |q| is fixed by the norm */
        c->gk[i] = 1 + gsl_rng_uniform(r) * 2;
    }
    gsl_rng_free(r);
    c->in = (ag_head_input){.x = c->x, .n = N, .d = D, .wq = c->wq + DH, .ldq = W, .wk = c->wk + DH,
                            .ldk = W, .bq = bias ? c->bq + DH : NULL, .bk = bias ? c->bk + DH : NULL,
                            .d_h = DH, .causal = 1,
                            .rope = {.rotary_dim = rope ? DH : 0, .theta = 10.0}};
    c->qk = (ag_head_qk_norm){.kind = kind, .eps = 1e-6, .gq = c->gq + DH, .gk = c->gk + DH};
    if (kind == AG_QK_NORM_FULL)
        c->qk = (ag_head_qk_norm){.kind = kind, .eps = 1e-6, .gq = c->gq, .gk = c->gk,
                                  .wq = c->wq, .wk = c->wk, .bq = bias ? c->bq : NULL,
                                  .bk = bias ? c->bk : NULL, .q_width = W, .k_width = W,
                                  .q_off = DH, .k_off = DH};
}

/* J (N², N·D) from JVP columns and by central differences (step h). */
static void jacobians(const qk_case *c, const ag_head_lin *L, double *Jv, double *Jf)
{
    double e[N * D] = {0}, col[N * N], ap[N * N], am[N * N], x[N * D];
    ag_head_input in = c->in;
    ag_error err = {0};
    memcpy(x, c->x, sizeof x);
    in.x = x;
    for (size_t k = 0; k < N * D; k++) {
        e[k] = 1;
        cr_assert_eq(ag_head_jvp(L, e, col), AG_OK);
        e[k] = 0;
        double x0 = x[k], h = 1e-6;
        x[k] = x0 + h;
        cr_assert_eq(ag_head_attention_ex(&in, QK_EX(&c->qk), ap, &err), AG_OK, "%s", err.message);
        x[k] = x0 - h;
        cr_assert_eq(ag_head_attention_ex(&in, QK_EX(&c->qk), am, &err), AG_OK, "%s", err.message);
        x[k] = x0;
        for (size_t r = 0; r < N * N; r++) {
            Jv[r * N * D + k] = col[r];
            Jf[r * N * D + k] = (ap[r] - am[r]) / (2 * h);
        }
    }
}

static void check_qk_case(const char *name, unsigned long seed, ag_qk_norm kind, int bias, int rope)
{
    qk_case c;
    qk_make(&c, seed, kind, bias, rope);
    ag_head_lin *L = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_head_linearize_ex(&c.in, QK_EX(&c.qk), &L, &err), AG_OK, "%s", err.message);
    static double Jv[N * N * N * D], Jf[N * N * N * D];
    jacobians(&c, L, Jv, Jf);
    double emax = 0, jmax = 0;
    for (size_t i = 0; i < N * N * N * D; i++) {
        emax = fmax(emax, fabs(Jv[i] - Jf[i]));
        jmax = fmax(jmax, fabs(Jv[i]));
    }
    cr_log_info("%s: |J_jvp - J_fd| %.2e of max |J| %.2e", name, emax, jmax);
    cr_expect_gt(jmax, 1e-2, "%s: a Jacobian of zeros tests nothing", name);
    cr_expect_lt(emax, 1e-7 * fmax(1, jmax), "%s: JVP vs finite differences %g", name, emax);
    /* adjointness: <J v, w> = <v, J^T w> */
    double v[N * D], w[N * N], Jvv[N * N], Jtw[N * D], a = 0, b = 0;
    for (size_t i = 0; i < N * D; i++)
        v[i] = sin(1.0 + (double)i);
    for (size_t i = 0; i < N * N; i++)
        w[i] = cos(2.0 + 0.7 * (double)i);
    cr_assert_eq(ag_head_jvp(L, v, Jvv), AG_OK);
    cr_assert_eq(ag_head_vjp(L, w, Jtw), AG_OK);
    for (size_t i = 0; i < N * N; i++)
        a += Jvv[i] * w[i];
    for (size_t i = 0; i < N * D; i++)
        b += v[i] * Jtw[i];
    cr_expect_lt(fabs(a - b), 1e-12 * fmax(1, fabs(a)), "%s: <Jv,w> %.17g vs <v,J'w> %.17g", name, a, b);
    /* Lanczos against the SVD of the JVP's J */
    double s[N * N], jn = 0;
    cr_assert_eq(ag_svd_values(Jv, N * N, N * D, s), AG_OK);
    cr_assert_eq(ag_head_jacobian_norm(L, &jn, NULL, &err), AG_OK, "%s", err.message);
    cr_expect_lt(fabs(jn - s[0]), 1e-9 * s[0], "%s: Lanczos %.17g vs SVD %.17g", name, jn, s[0]);
    ag_head_lin_free(L);
}

Test(stability_qk, per_head_rotary_bias) { check_qk_case("head", 11, AG_QK_NORM_HEAD, 1, 1); }
Test(stability_qk, per_head_plain) { check_qk_case("head plain", 12, AG_QK_NORM_HEAD, 0, 0); }
Test(stability_qk, whole_projection_rotary_bias) { check_qk_case("full", 13, AG_QK_NORM_FULL, 1, 1); }
Test(stability_qk, whole_projection_plain) { check_qk_case("full plain", 14, AG_QK_NORM_FULL, 0, 0); }

/* The norm undoes the projection's scale: with eps 0 and no bias, W_Q·5
 * and W_K·3 give the same A and the same ‖J‖₂ (RMSNorm(c·u) = RMSNorm(u)
 * for c > 0), while without the norm the scores grow 15-fold. */
Test(stability_qk, scale_invariance)
{
    static const ag_qk_norm kinds[2] = {AG_QK_NORM_HEAD, AG_QK_NORM_FULL};
    for (int t = 0; t < 2; t++) {
        qk_case c;
        qk_make(&c, 21 + (unsigned long)t, kinds[t], 0, 1);
        c.qk.eps = 0;
        double A0[N * N], A1[N * N], P0[N * N], P1[N * N], j0 = 0, j1 = 0;
        ag_error err = {0};
        ag_head_lin *L = NULL;
        cr_assert_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A0, &err), AG_OK, "%s", err.message);
        cr_assert_eq(ag_head_attention(&c.in, P0, &err), AG_OK);
        cr_assert_eq(ag_head_linearize_ex(&c.in, QK_EX(&c.qk), &L, &err), AG_OK);
        cr_assert_eq(ag_head_jacobian_norm(L, &j0, NULL, &err), AG_OK);
        ag_head_lin_free(L);
        for (size_t i = 0; i < D * W; i++) {
            c.wq[i] *= 5;
            c.wk[i] *= 3;
        }
        cr_assert_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A1, &err), AG_OK);
        cr_assert_eq(ag_head_attention(&c.in, P1, &err), AG_OK);
        cr_assert_eq(ag_head_linearize_ex(&c.in, QK_EX(&c.qk), &L, &err), AG_OK);
        cr_assert_eq(ag_head_jacobian_norm(L, &j1, NULL, &err), AG_OK);
        ag_head_lin_free(L);
        double ea = 0, ep = 0;
        for (size_t i = 0; i < N * N; i++) {
            ea = fmax(ea, fabs(A1[i] - A0[i]));
            ep = fmax(ep, fabs(P1[i] - P0[i]));
        }
        cr_expect_lt(ea, 1e-14, "kind %d: A moved by %g under a scaled projection", t, ea);
        cr_expect_gt(ep, 1e-3, "kind %d: without the norm A should move (%g)", t, ep);
        cr_expect_lt(fabs(j1 - j0), 1e-9 * j0, "kind %d: |J| %.17g vs %.17g", t, j1, j0);
    }
}

/* ex NULL, qk NULL or kind none: the plain functions' values, bit for bit. */
Test(stability_qk, none_is_plain)
{
    qk_case c;
    qk_make(&c, 31, AG_QK_NORM_HEAD, 1, 1);
    c.qk.kind = AG_QK_NORM_NONE;
    double A0[N * N], A1[N * N], A2[N * N];
    ag_error err = {0};
    cr_assert_eq(ag_head_attention(&c.in, A0, &err), AG_OK);
    cr_assert_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A1, &err), AG_OK);
    cr_assert_eq(ag_head_attention_ex(&c.in, NULL, A2, &err), AG_OK);
    cr_expect_eq(memcmp(A0, A1, sizeof A0), 0);
    cr_expect_eq(memcmp(A0, A2, sizeof A0), 0);
    cr_assert_eq(ag_head_attention_ex(&c.in, QK_EX(NULL), A2, &err), AG_OK);
    cr_expect_eq(memcmp(A0, A2, sizeof A0), 0);
}

Test(stability_qk, errors)
{
    qk_case c;
    double A[N * N];
    ag_error err = {0};
    qk_make(&c, 41, AG_QK_NORM_HEAD, 1, 1);
    c.qk.eps = -1;
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "eps") != NULL, "%s", err.message);
    qk_make(&c, 41, AG_QK_NORM_HEAD, 1, 1);
    c.qk.gk = NULL;
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A, &err), AG_EINVAL);
    qk_make(&c, 41, AG_QK_NORM_FULL, 1, 1);
    c.qk.q_off = W - DH + 1; /* the head's columns run past the projection */
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "width") != NULL, "%s", err.message);
    qk_make(&c, 41, AG_QK_NORM_FULL, 1, 1);
    c.gq[2] = NAN;
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "q norm") != NULL, "%s", err.message);
    qk_make(&c, 41, AG_QK_NORM_FULL, 1, 1);
    c.qk.kind = (ag_qk_norm)7;
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), A, &err), AG_EINVAL);
}

/* ag_head_extra is read by its size (core.h ABI rule): 0 (not started from
 * AG_HEAD_EXTRA_DEFAULT) and a size above the library's are refused by name;
 * ex with no member is the plain head, bit for bit. */
Test(stability_qk, extra_sized)
{
    qk_case c;
    qk_make(&c, 51, AG_QK_NORM_HEAD, 1, 1);
    double A0[N * N], A[N * N];
    ag_error err = {0};
    ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
    cr_assert_eq(ag_head_attention(&c.in, A0, &err), AG_OK);
    cr_assert_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_OK, "%s", err.message);
    cr_expect_eq(memcmp(A0, A, sizeof A), 0);
    ex.size = 0;
    ex.qk = &c.qk;
    cr_expect_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "ag_head_extra") != NULL, "%s", err.message);
    ex.size = sizeof ex + sizeof(double);
    cr_expect_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "ag_head_extra") != NULL, "%s", err.message);
    /* a caller whose header knew qk only: rope (here one that would be
     * refused, GPT-J's flag) is not read, the head is qk's alone */
    ag_rope_extra pairs = {.interleaved = 1};
    double Aq[N * N];
    cr_assert_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), Aq, &err), AG_OK, "%s", err.message);
    ex.rope = &pairs;
    ex.size = sizeof ex;
    cr_expect_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "interleaved") != NULL, "%s", err.message);
    ex.size = offsetof(ag_head_extra, rope);
    cr_assert_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_OK, "%s", err.message);
    cr_expect_eq(memcmp(A, Aq, sizeof A), 0);
}

/* One head with both members: a per-head QK-norm and yarn's RoPE (a model
 * such as Qwen3 with rope_scaling yarn). The reference is the definition
 * composed by hand: u = XW + b, n = g·u/√(mean u² + eps) per row (Qwen3RMSNorm),
 * then the rotate-half rotation by i·inv_freq[j] (ag_rope_inv_freq_extra:
 * tests/kernel/test_rope_scaling.c checks its bands) with cos and sin times
 * yarn's attention factor, S = c·q·k, causal softmax. Neither member alone
 * gives it (each moves A by more than 1e-3). */
static void qk_rope_reference(const qk_case *c, const ag_rope_extra *x, double *A)
{
    double q[N * DH], k[N * DH], inv[DH / 2];
    const double *w[2] = {c->in.wq, c->in.wk}, *b[2] = {c->in.bq, c->in.bk},
                 *g[2] = {c->qk.gq, c->qk.gk};
    double *out[2] = {q, k};
    ag_rope_inv_freq_extra(&c->in.rope, x, N, inv);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < N; i++) {
            double u[DH], ms = 0;
            for (int j = 0; j < DH; j++) {
                u[j] = b[s][j];
                for (int t = 0; t < D; t++)
                    u[j] += c->x[i * D + t] * w[s][t * W + j];
                ms += u[j] * u[j] / DH;
            }
            for (int j = 0; j < DH; j++)
                u[j] *= g[s][j] / sqrt(ms + c->qk.eps);
            for (int j = 0; j < DH / 2; j++) {
                double cs = cos(i * inv[j]) * x->attention_factor,
                       sn = sin(i * inv[j]) * x->attention_factor;
                out[s][i * DH + j] = u[j] * cs - u[j + DH / 2] * sn;
                out[s][i * DH + j + DH / 2] = u[j + DH / 2] * cs + u[j] * sn;
            }
        }
    for (int i = 0; i < N; i++) {
        double m = -INFINITY, z = 0;
        for (int j = 0; j <= i; j++) {
            double sc = 0;
            for (int t = 0; t < DH; t++)
                sc += q[i * DH + t] * k[j * DH + t];
            A[i * N + j] = sc / sqrt((double)DH);
            m = fmax(m, A[i * N + j]);
        }
        for (int j = 0; j < N; j++)
            z += j <= i ? (A[i * N + j] = exp(A[i * N + j] - m)) : (A[i * N + j] = 0);
        for (int j = 0; j <= i; j++)
            A[i * N + j] /= z;
    }
}

static double max_diff(const double *a, const double *b)
{
    double m = 0;
    for (int i = 0; i < N * N; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

Test(stability_qk, qk_norm_with_yarn)
{
    qk_case c;
    qk_make(&c, 61, AG_QK_NORM_HEAD, 1, 1);
    /* yarn factor 4 over 2 original positions: the N = 6 positions run past
     * them; attention factor 0.1·ln 4 + 1 (YaRN sec. 3.4) */
    c.in.rope = (ag_rope){.rotary_dim = DH, .theta = 10.0, .type = AG_ROPE_YARN, .factor = 4,
                          .original_max_positions = 2};
    ag_rope_extra x = {.attention_factor = 0.1 * log(4.0) + 1, .beta_fast = 32, .beta_slow = 1,
                       .truncate = 1};
    ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
    ex.qk = &c.qk;
    ex.rope = &x;
    double A[N * N], R[N * N], B[N * N];
    ag_error err = {0};
    qk_rope_reference(&c, &x, R);
    cr_assert_eq(ag_head_attention_ex(&c.in, &ex, A, &err), AG_OK, "%s", err.message);
    cr_expect_lt(max_diff(A, R), 1e-13, "%g", max_diff(A, R));
    ag_head_lin *L = NULL;
    cr_assert_eq(ag_head_linearize_ex(&c.in, &ex, &L, &err), AG_OK, "%s", err.message);
    cr_expect_lt(max_diff(ag_head_lin_attention(L), R), 1e-13);
    ag_head_lin_free(L);
    ag_head_extra only = AG_HEAD_EXTRA_DEFAULT; /* without the norm */
    only.rope = &x;
    cr_assert_eq(ag_head_attention_ex(&c.in, &only, B, &err), AG_OK, "%s", err.message);
    cr_expect_gt(max_diff(B, R), 1e-3, "%g", max_diff(B, R));
    x.attention_factor = 1; /* without yarn's factor on cos, sin */
    cr_assert_eq(ag_head_attention_ex(&c.in, &ex, B, &err), AG_OK, "%s", err.message);
    cr_expect_gt(max_diff(B, R), 1e-3, "%g", max_diff(B, R));
    /* without the rope member a yarn rope is refused by name */
    cr_expect_eq(ag_head_attention_ex(&c.in, QK_EX(&c.qk), B, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "yarn") != NULL, "%s", err.message);
}
