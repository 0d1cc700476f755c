/* test_stability.c — family E (docs/metrics.md, family E): the head's Jacobian against an
 * explicitly formed one (column by column from JVPs, and independently by
 * central finite differences of A(X)), JVP/VJP adjointness, the Lanczos norm
 * against a LAPACK SVD, the sensitivity bound and its seeding, the angle keys
 * on constructed inputs with known angles, and the errors. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections
#include "../../analysis/analysis.h" /* ag_jacobian_norm_basis */

TestSuite(stability);

/* A random head: X ~ N(0,1), W ~ N(0, 1/d) (scores O(1), so the softmax is
 * neither uniform nor saturated), biases N(0, 0.5²). W_Q and W_K are column
 * blocks of wider matrices (row stride 3·d_h) to exercise the strides. */
typedef struct {
    double *x, *wq, *wk, *bq, *bk;
    ag_head_input in;
} head_case;

static void case_make(head_case *c, unsigned long seed, size_t n, size_t d, size_t dh, int causal,
                      int bias, int rope, double scale)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    size_t ld = 3 * dh;
    c->x = malloc(n * d * sizeof(double));
    c->wq = malloc(d * ld * sizeof(double));
    c->wk = malloc(d * ld * sizeof(double));
    c->bq = bias ? malloc(dh * sizeof(double)) : NULL;
    c->bk = bias ? malloc(dh * sizeof(double)) : NULL;
    for (size_t i = 0; i < n * d; i++)
        c->x[i] = gsl_ran_gaussian(r, 1.0);
    for (size_t i = 0; i < d * ld; i++) {
        c->wq[i] = gsl_ran_gaussian(r, 1.0 / sqrt((double)d));
        c->wk[i] = gsl_ran_gaussian(r, 1.0 / sqrt((double)d));
    }
    for (size_t i = 0; bias && i < dh; i++) {
        c->bq[i] = gsl_ran_gaussian(r, 0.5);
        c->bk[i] = gsl_ran_gaussian(r, 0.5);
    }
    gsl_rng_free(r);
    c->in = (ag_head_input){.x = c->x, .n = n, .d = d, .wq = c->wq + dh, .ldq = ld,
                            .wk = c->wk + 2 * dh, .ldk = ld, .bq = c->bq, .bk = c->bk,
                            .d_h = dh, .scale = scale, .causal = causal,
                            .rope = {.rotary_dim = rope ? (int)dh : 0, .theta = 10.0}};
}

/* The kernel's further options of a case: partial rotary (rotary_dim, with
 * a linear RoPE scaling factor), soft-capping and a sliding window. */
typedef struct {
    int rotary_dim;
    double softcap;
    int window;
} kernel_opts;

static void case_kernel(head_case *c, const kernel_opts *k)
{
    if (!k)
        return;
    if (k->rotary_dim)
        c->in.rope = (ag_rope){.rotary_dim = k->rotary_dim, .theta = 10.0,
                               .type = AG_ROPE_LINEAR, .factor = 2};
    c->in.softcap = k->softcap;
    c->in.window = k->window;
}

/* Key j is hidden from query i by the head's mask: causal (with a window),
 * or a bidirectional band |i − j| < window (ModernBERT's local layers). */
static int hidden(const ag_head_input *in, size_t i, size_t j)
{
    if (!in->causal)
        return in->window > 0 && (i > j ? i - j : j - i) >= (size_t)in->window;
    return j > i || (in->window > 0 && i - j >= (size_t)in->window);
}

static void case_free(head_case *c)
{
    free(c->x);
    free(c->wq);
    free(c->wk);
    free(c->bq);
    free(c->bk);
}

/* J (n², nd) row-major, column k = J e_k from ag_head_jvp. */
static double *jacobian_by_jvp(const ag_head_lin *L, size_t n, size_t d)
{
    size_t nn = n * n, nd = n * d;
    double *J = malloc(nn * nd * sizeof *J), *e = calloc(nd, sizeof *e), *col = malloc(nn * sizeof *col);
    for (size_t k = 0; k < nd; k++) {
        e[k] = 1;
        cr_assert_eq(ag_head_jvp(L, e, col), AG_OK);
        e[k] = 0;
        for (size_t r = 0; r < nn; r++)
            J[r * nd + k] = col[r];
    }
    free(e);
    free(col);
    return J;
}

/* J by central differences of ag_head_attention, step h. */
static double *jacobian_by_fd(const head_case *c, double h)
{
    size_t n = c->in.n, d = c->in.d, nn = n * n, nd = n * d;
    double *J = malloc(nn * nd * sizeof *J), *ap = malloc(nn * sizeof *ap), *am = malloc(nn * sizeof *am);
    double *x = malloc(nd * sizeof *x);
    memcpy(x, c->x, nd * sizeof *x);
    ag_head_input in = c->in;
    in.x = x;
    ag_error err = {0};
    for (size_t k = 0; k < nd; k++) {
        double x0 = x[k];
        x[k] = x0 + h;
        cr_assert_eq(ag_head_attention(&in, ap, &err), AG_OK, "%s", err.message);
        x[k] = x0 - h;
        cr_assert_eq(ag_head_attention(&in, am, &err), AG_OK, "%s", err.message);
        x[k] = x0;
        for (size_t r = 0; r < nn; r++)
            J[r * nd + k] = (ap[r] - am[r]) / (2 * h);
    }
    free(ap);
    free(am);
    free(x);
    return J;
}

static double sigma1(const double *J, size_t m, size_t n)
{
    size_t q = m < n ? m : n;
    double *s = malloc(q * sizeof *s);
    cr_assert_eq(ag_svd_values(J, m, n, s), AG_OK);
    double v = s[0];
    free(s);
    return v;
}

static double frob(const double *a, size_t cnt)
{
    double s = 0;
    for (size_t i = 0; i < cnt; i++)
        s += a[i] * a[i];
    return sqrt(s);
}

/* One configuration: explicit J (JVP columns) vs finite differences, the
 * SVD norm vs Lanczos, adjointness, masked rows of J. */
static void check_case_k(const char *name, unsigned long seed, size_t n, size_t d, size_t dh,
                         int causal, int bias, int rope, double scale, const kernel_opts *ko)
{
    head_case c;
    case_make(&c, seed, n, d, dh, causal, bias, rope, scale);
    case_kernel(&c, ko);
    ag_head_lin *L = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_head_linearize(&c.in, &L, &err), AG_OK, "%s", err.message);
    size_t nn = n * n, nd = n * d;

    /* A itself: rows sum to 1, masked entries exactly 0. */
    const double *A = ag_head_lin_attention(L);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < n; j++) {
            s += A[i * n + j];
            if (hidden(&c.in, i, j))
                cr_assert_eq(A[i * n + j], 0.0);
            else
                cr_assert_gt(A[i * n + j], 0.0);
        }
        cr_assert_float_eq(s, 1.0, 1e-14);
    }

    double *J = jacobian_by_jvp(L, n, d), *F = jacobian_by_fd(&c, 1e-6);
    double jmax = 0, fd_err = 0;
    for (size_t i = 0; i < nn * nd; i++) {
        jmax = fmax(jmax, fabs(J[i]));
        fd_err = fmax(fd_err, fabs(J[i] - F[i]));
    }
    /* Masked entries of A never move. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t m = 0; hidden(&c.in, i, j) && m < nd; m++)
                cr_assert_eq(J[(i * n + j) * nd + m], 0.0);

    double s_jvp = sigma1(J, nn, nd), s_fd = sigma1(F, nn, nd), jn = -1;
    ag_lanczos_info info;
    cr_assert_eq(ag_head_jacobian_norm(L, &jn, &info, &err), AG_OK, "%s", err.message);
    double rel = fabs(jn - s_jvp) / s_jvp, rel_fd = fabs(s_fd - s_jvp) / s_jvp;
    fprintf(stderr, "[stability] %-22s n=%zu d=%zu dh=%zu: max|J_jvp - J_fd| = %.2e (max|J| %.2e), "
            "|J|_2 svd %.12g lanczos %.12g rel %.1e (fd svd rel %.1e), %d products, bound %.1e\n",
            name, n, d, dh, fd_err, jmax, s_jvp, jn, rel, rel_fd, info.products, info.rel_bound);
    cr_expect_leq(fd_err, 1e-8 * fmax(1.0, jmax), "%s: JVP Jacobian vs finite differences %g", name, fd_err);
    cr_expect_leq(rel_fd, 1e-8, "%s: svd of FD Jacobian %g vs %g", name, s_fd, s_jvp);
    cr_expect_leq(rel, 1e-9, "%s: lanczos %.15g vs svd %.15g", name, jn, s_jvp);
    cr_expect_leq(info.rel_bound, 1e-9, "%s: residual bound %g", name, info.rel_bound);

    /* Adjointness ⟨J u, v⟩ = ⟨u, Jᵀ v⟩ for random u, v (v nonzero on masked
     * entries too: the VJP ignores them, the JVP leaves them 0). */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed + 1000);
    double *u = malloc(nd * sizeof *u), *v = malloc(nn * sizeof *v);
    double *Ju = malloc(nn * sizeof *Ju), *Jtv = malloc(nd * sizeof *Jtv);
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < nd; i++)
            u[i] = gsl_ran_gaussian(r, 1.0);
        for (size_t i = 0; i < nn; i++)
            v[i] = gsl_ran_gaussian(r, 1.0);
        cr_assert_eq(ag_head_jvp(L, u, Ju), AG_OK);
        cr_assert_eq(ag_head_vjp(L, v, Jtv), AG_OK);
        double a = 0, b = 0;
        for (size_t i = 0; i < nn; i++)
            a += Ju[i] * v[i];
        for (size_t i = 0; i < nd; i++)
            b += u[i] * Jtv[i];
        double scale_ab = frob(Ju, nn) * frob(v, nn);
        cr_expect_leq(fabs(a - b), 1e-13 * scale_ab, "%s: <Ju,v> %.17g vs <u,J^T v> %.17g", name, a, b);
        /* and Jᵀv against the explicit J */
        double e = 0, m = 0;
        for (size_t k = 0; k < nd; k++) {
            double s = 0;
            for (size_t i = 0; i < nn; i++)
                s += J[i * nd + k] * v[i];
            e = fmax(e, fabs(s - Jtv[k]));
            m = fmax(m, fabs(s));
        }
        cr_expect_leq(e, 1e-12 * fmax(1.0, m), "%s: VJP vs explicit J^T v: %g", name, e);
    }
    gsl_rng_free(r);
    free(u);
    free(v);
    free(Ju);
    free(Jtv);
    free(J);
    free(F);
    ag_head_lin_free(L);
    case_free(&c);
}

static void check_case(const char *name, unsigned long seed, size_t n, size_t d, size_t dh,
                       int causal, int bias, int rope, double scale)
{
    check_case_k(name, seed, n, d, dh, causal, bias, rope, scale, NULL);
}

Test(stability, jacobian_noncausal_bias)
{
    check_case("noncausal+bias", 11, 5, 7, 4, 0, 1, 0, 0);
}

Test(stability, jacobian_causal_bias)
{
    check_case("causal+bias", 12, 6, 8, 4, 1, 1, 0, 0);
}

Test(stability, jacobian_causal_nobias)
{
    check_case("causal", 13, 4, 6, 2, 1, 0, 0, 0.7);
}

Test(stability, jacobian_rotary_causal)
{
    check_case("rotary+causal+bias", 14, 6, 8, 4, 1, 1, 1, 0);
}

Test(stability, jacobian_rotary_noncausal)
{
    check_case("rotary+noncausal", 15, 6, 5, 6, 0, 0, 1, 0);
}

/* The kernel's options, each alone and together. Scale 2 makes the scores
 * O(2), so a cap of 1.5 bends them well away from the identity (sech² down
 * to ~0.2): a JVP/VJP that forgot the cap's derivative would miss the finite
 * differences by far more than the tolerance (see softcap_changes_the_map). */
Test(stability, jacobian_softcap)
{
    kernel_opts k = {.softcap = 1.5};
    check_case_k("softcap", 17, 5, 6, 4, 0, 1, 0, 2.0, &k);
    check_case_k("softcap+causal+rope", 18, 6, 5, 4, 1, 1, 1, 2.0, &k);
}

Test(stability, jacobian_window)
{
    kernel_opts k = {.window = 2};
    check_case_k("window 2", 19, 6, 5, 4, 1, 1, 0, 0, &k);
    k.window = 3;
    check_case_k("window 3+rope", 20, 7, 4, 4, 1, 0, 1, 0, &k);
    /* bidirectional bands (ModernBERT's local layers): |i − j| < window */
    check_case_k("band 3+rope", 25, 7, 4, 4, 0, 0, 1, 0, &k);
    k.window = 2;
    check_case_k("band 2", 26, 6, 5, 4, 0, 1, 0, 0, &k);
}

Test(stability, jacobian_partial_rotary)
{
    kernel_opts k = {.rotary_dim = 2};
    check_case_k("rotary 2 of 6", 22, 6, 5, 6, 1, 1, 0, 0, &k);
    k.rotary_dim = 4;
    check_case_k("rotary 4 of 6, noncausal", 23, 5, 6, 6, 0, 0, 0, 0, &k);
}

Test(stability, jacobian_all_options)
{
    kernel_opts k = {.rotary_dim = 4, .softcap = 1.5, .window = 3};
    check_case_k("rotary 4 of 6+cap+window", 24, 7, 5, 6, 1, 1, 0, 2.0, &k);
}

Test(stability, jacobian_sharp_softmax)
{
    /* Large scores: nearly one-hot rows, a small and clustered spectrum. */
    check_case("sharp (scale 4)", 16, 6, 8, 4, 1, 1, 0, 4.0);
}

/* The rotary Jacobian differs from the plain one: the rotation is really
 * differentiated through (guards against silently ignoring the flag). */
Test(stability, rotary_changes_the_map)
{
    head_case c;
    case_make(&c, 21, 5, 6, 4, 1, 0, 1, 0);
    double a_rot[25], a_plain[25];
    ag_error err = {0};
    cr_assert_eq(ag_head_attention(&c.in, a_rot, &err), AG_OK, "%s", err.message);
    c.in.rope.rotary_dim = 0;
    cr_assert_eq(ag_head_attention(&c.in, a_plain, &err), AG_OK, "%s", err.message);
    double diff = 0;
    for (int i = 0; i < 25; i++)
        diff = fmax(diff, fabs(a_rot[i] - a_plain[i]));
    cr_expect_gt(diff, 1e-3);
    /* Row 0 (position 0) is not rotated: only the causal first row, which
     * is [1, 0, ...] either way. */
    cr_expect_eq(a_rot[0], 1.0);
    case_free(&c);
}

/* The cap and the window act: A changes by far more than rounding, the
 * capped A is the softmax of cap·tanh(S/cap) with S recomputed here, and a
 * window of 2 leaves each query itself and its predecessor. */
Test(stability, softcap_and_window_change_the_map)
{
    head_case c;
    enum { N = 5 };
    case_make(&c, 25, N, 6, 4, 0, 1, 0, 2.0);
    double a0[N * N], a1[N * N];
    ag_error err = {0};
    cr_assert_eq(ag_head_attention(&c.in, a0, &err), AG_OK, "%s", err.message);
    c.in.softcap = 1.5;
    cr_assert_eq(ag_head_attention(&c.in, a1, &err), AG_OK, "%s", err.message);
    double diff = 0;
    for (int i = 0; i < N * N; i++)
        diff = fmax(diff, fabs(a1[i] - a0[i]));
    cr_expect_gt(diff, 1e-2, "the cap did not act: %g", diff);
    /* S = c·q kᵀ with q = x W_Q + b_Q, k = x W_K + b_K, c = 2 */
    for (int i = 0; i < N; i++) {
        double T[N], z = 0;
        for (int j = 0; j < N; j++) {
            double sij = 0;
            for (int e = 0; e < 4; e++) {
                double qe = c.bq[e], ke = c.bk[e];
                for (int m = 0; m < 6; m++) {
                    qe += c.x[i * 6 + m] * c.in.wq[m * c.in.ldq + e];
                    ke += c.x[j * 6 + m] * c.in.wk[m * c.in.ldk + e];
                }
                sij += qe * ke;
            }
            T[j] = 1.5 * tanh(2.0 * sij / 1.5);
            z += exp(T[j]);
        }
        for (int j = 0; j < N; j++)
            cr_expect_float_eq(a1[i * N + j], exp(T[j]) / z, 1e-14, "(%d, %d)", i, j);
    }
    c.in.softcap = 0;
    c.in.causal = 1;
    c.in.window = 2;
    cr_assert_eq(ag_head_attention(&c.in, a1, &err), AG_OK, "%s", err.message);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (j > i || i - j >= 2)
                cr_expect_eq(a1[i * N + j], 0.0, "(%d, %d)", i, j);
    cr_expect_eq(a1[0], 1.0);
    case_free(&c);
}

static void metrics_of(const ag_head_input *in, const ag_stability_options *opt, const char *keys,
                       ag_record *rec)
{
    ag_metric_set sel;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_parse(&sel, keys, &err), AG_OK, "%s", err.message);
    ag_record_init(rec, 0, 0, in->n, in->n);
    cr_assert_eq(ag_stability_metrics(in, opt, &sel, rec, &err), AG_OK, "%s", err.message);
}

/* jacobian_norm_rel = ‖J‖₂‖X‖_F/‖A‖_F, and nothing outside family E set. */
Test(stability, metrics_norm_and_rel)
{
    head_case c;
    case_make(&c, 31, 6, 8, 4, 1, 1, 0, 0);
    ag_record rec;
    metrics_of(&c.in, NULL, "stability", &rec);
    ag_head_lin *L = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_head_linearize(&c.in, &L, &err), AG_OK);
    double *J = jacobian_by_jvp(L, 6, 8);
    double s = sigma1(J, 36, 48);
    double rel = s * frob(c.x, 48) / frob(ag_head_lin_attention(L), 36);
    cr_assert_eq(rec.kind[AG_M_JACOBIAN_NORM], AG_V_NUMBER);
    cr_expect_leq(fabs(rec.value[AG_M_JACOBIAN_NORM] - s), 1e-9 * s);
    cr_expect_leq(fabs(rec.value[AG_M_JACOBIAN_NORM_REL] - rel), 1e-9 * rel);
    for (int m = 0; m < AG_M_COUNT; m++)
        if (ag_metric_family((ag_metric)m) != AG_FAMILY_STABILITY)
            cr_expect_eq(rec.kind[m], AG_V_ABSENT, "key %s touched", ag_metric_name((ag_metric)m));
        else
            cr_expect_eq(rec.kind[m], AG_V_NUMBER, "key %s", ag_metric_name((ag_metric)m));
    free(J);
    ag_head_lin_free(L);
    case_free(&c);
}

/* sensitivity is a first-order ratio: A(X+E) − A(X) = J·vec(E) + O(‖E‖²), so
 *   (‖ΔA‖/‖A‖)/(‖E‖/‖X‖) = (‖J ê‖ + O(ε‖X‖))·‖X‖/‖A‖ ≤ ‖J‖₂‖X‖/‖A‖ + O(ε)
 * with ê = E/‖E‖ a unit vector: it cannot exceed jacobian_norm_rel by more
 * than the second-order term, a relative O(ε) (the Hessian of a softmax of
 * O(1) scores is O(1)). With ε = 1e-6 the allowance 10ε is far above that
 * term and far below any real violation. A random direction typically sees
 * much less than ‖J‖₂, so the ratio is also well above 0 but below the bound. */
Test(stability, sensitivity_bound_and_seed)
{
    const size_t shapes[3][3] = {{6, 8, 4}, {5, 7, 4}, {12, 16, 8}};
    for (int k = 0; k < 3; k++) {
        head_case c;
        case_make(&c, 41 + k, shapes[k][0], shapes[k][1], shapes[k][2], k != 1, 1, k == 2, 0);
        ag_stability_options opt;
        ag_stability_options_init(&opt);
        cr_expect_eq(opt.epsilon, 1e-3);
        cr_expect_eq(opt.trials, 8);
        cr_expect_eq(opt.seed, 1ul);
        opt.epsilon = 1e-6;
        ag_record r1, r2, r3;
        metrics_of(&c.in, &opt, "jacobian_norm_rel,sensitivity", &r1);
        metrics_of(&c.in, &opt, "sensitivity", &r2);
        opt.seed = 2;
        metrics_of(&c.in, &opt, "sensitivity", &r3);
        double rel = r1.value[AG_M_JACOBIAN_NORM_REL], s1 = r1.value[AG_M_SENSITIVITY];
        fprintf(stderr, "[stability] sensitivity %.6g (seed 2: %.6g) <= jacobian_norm_rel %.6g\n", s1,
                r3.value[AG_M_SENSITIVITY], rel);
        cr_expect_gt(s1, 0);
        cr_expect_leq(s1, rel * (1 + 10 * opt.epsilon));
        cr_expect_eq(r2.value[AG_M_SENSITIVITY], s1, "same seed, same value");
        cr_expect_neq(r3.value[AG_M_SENSITIVITY], s1, "another seed, another value");
        cr_expect_leq(r3.value[AG_M_SENSITIVITY], rel * (1 + 10 * opt.epsilon));
        /* default ε = 1e-3 stays within the bound too (O(ε) second order) */
        opt.epsilon = 1e-3;
        metrics_of(&c.in, &opt, "sensitivity", &r2);
        cr_expect_leq(r2.value[AG_M_SENSITIVITY], rel * (1 + 1e-2));
        case_free(&c);
    }
}

/* ---- angles on constructed inputs ------------------------------------------ */

/* X rows are unit vectors at angles phi[i] (plus one zero row), d = d_h = 2,
 * W_Q = I, W_K = rotation by psi: q_i at phi_i, k_j at phi_j + psi. With
 * rope (θ arbitrary, d_h = 2: pair 0's frequency is θ⁰ = 1), the scores'
 * q_i, k_j turn by i radians more, so cos(q_i, k_j) = cos(phi_i + i − phi_j −
 * psi − j); q/k_mean_cosine use the unrotated rows. */
static void angle_case(int causal, int rope, int window)
{
    const double phi[5] = {0.0, M_PI / 3, M_PI / 2, 0.0 /* zero row */, 2.5};
    const double psi = 0.4;
    const int zero = 3;
    double x[10], wq[4] = {1, 0, 0, 1};
    double wk[4] = {cos(psi), sin(psi), -sin(psi), cos(psi)}; /* x ↦ xW turns by psi */
    for (int i = 0; i < 5; i++) {
        x[2 * i] = i == zero ? 0 : cos(phi[i]);
        x[2 * i + 1] = i == zero ? 0 : sin(phi[i]);
    }
    ag_head_input in = {.x = x, .n = 5, .d = 2, .wq = wq, .wk = wk, .d_h = 2, .causal = causal,
                        .rope = {.rotary_dim = rope ? 2 : 0, .theta = 1234.5}, .window = window};
    ag_record rec;
    metrics_of(&in, NULL, "q_mean_cosine,k_mean_cosine,qk_cos_mean", &rec);
    double mc = 0, cnt = 0, qk = 0, qcnt = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            if (i == zero || j == zero)
                continue;
            if (i != j) { /* both mean cosines: a rotation keeps the angles */
                mc += cos(phi[i] - phi[j]);
                cnt++;
            }
            if (hidden(&in, (size_t)i, (size_t)j))
                continue;
            double ri = rope ? i : 0, rj = rope ? j : 0;
            qk += cos(phi[i] + ri - phi[j] - psi - rj);
            qcnt++;
        }
    cr_expect_float_eq(rec.value[AG_M_Q_MEAN_COSINE], mc / cnt, 1e-14);
    cr_expect_float_eq(rec.value[AG_M_K_MEAN_COSINE], mc / cnt, 1e-14);
    cr_expect_float_eq(rec.value[AG_M_QK_COS_MEAN], qk / qcnt, 1e-14,
                       "causal %d rope %d window %d: %.17g vs %.17g", causal, rope, window,
                       rec.value[AG_M_QK_COS_MEAN], qk / qcnt);
}

/* Windows of 1 (the diagonal), 2 and 3 (the zero row 3 leaves and enters
 * the running sum of keys) and 9 (the causal mask, or every key), causal
 * and as bidirectional bands. */
Test(stability, angles_known)
{
    for (int causal = 0; causal < 2; causal++)
        for (int rope = 0; rope < 2; rope++)
            angle_case(causal, rope, 0);
    const int windows[4] = {1, 2, 3, 9};
    for (int causal = 0; causal < 2; causal++)
        for (int w = 0; w < 4; w++)
            for (int rope = 0; rope < 2; rope++)
                angle_case(causal, rope, windows[w]);
}

/* Orthogonal and parallel Q/K; biases enter the angles; null cases. */
Test(stability, angles_closed_forms)
{
    /* q_i = e_0 for all i, k_j = e_1: every cosine 0; q all parallel: 1. */
    double x[8] = {1, 0, 2, 0, 3, 0, 0.5, 0};
    double wq[4] = {1, 0, 0, 0}, wk[4] = {0, 1, 0, 0};
    ag_head_input in = {.x = x, .n = 4, .d = 2, .wq = wq, .wk = wk, .d_h = 2, .causal = 1};
    ag_record rec;
    metrics_of(&in, NULL, "q_mean_cosine,k_mean_cosine,qk_cos_mean", &rec);
    cr_expect_float_eq(rec.value[AG_M_Q_MEAN_COSINE], 1.0, 1e-15);
    cr_expect_float_eq(rec.value[AG_M_K_MEAN_COSINE], 1.0, 1e-15);
    cr_expect_eq(rec.value[AG_M_QK_COS_MEAN], 0.0);
    /* a bias b_K = -W_K x: k rows become zero -> qk and k null */
    double bk[2] = {0, 0}, xz[8] = {0};
    in.bk = bk;
    in.x = xz; /* X = 0: Q = K = 0 */
    metrics_of(&in, NULL, "q_mean_cosine,k_mean_cosine,qk_cos_mean,sensitivity,jacobian_norm", &rec);
    cr_expect_eq(rec.kind[AG_M_Q_MEAN_COSINE], AG_V_NULL);
    cr_expect_eq(rec.kind[AG_M_K_MEAN_COSINE], AG_V_NULL);
    cr_expect_eq(rec.kind[AG_M_QK_COS_MEAN], AG_V_NULL);
    cr_expect_eq(rec.kind[AG_M_SENSITIVITY], AG_V_NULL, "X = 0: relative perturbation undefined");
    cr_expect_eq(rec.kind[AG_M_JACOBIAN_NORM], AG_V_NUMBER);
    /* biases make the rows non-zero: q = b_Q = (1, 1), k = b_K = (1, -1) */
    double bq[2] = {1, 1};
    bk[1] = -1;
    bk[0] = 1;
    in.bq = bq;
    metrics_of(&in, NULL, "q_mean_cosine,qk_cos_mean", &rec);
    cr_expect_float_eq(rec.value[AG_M_Q_MEAN_COSINE], 1.0, 1e-15);
    cr_expect_float_eq(rec.value[AG_M_QK_COS_MEAN], 0.0, 1e-15);
}

/* One token: A = [1] whatever X is, so J = 0. */
Test(stability, single_token)
{
    head_case c;
    case_make(&c, 51, 1, 4, 2, 1, 1, 1, 0);
    ag_record rec;
    metrics_of(&c.in, NULL, "stability", &rec);
    cr_expect_eq(rec.value[AG_M_JACOBIAN_NORM], 0.0);
    cr_expect_eq(rec.value[AG_M_JACOBIAN_NORM_REL], 0.0);
    cr_expect_eq(rec.value[AG_M_SENSITIVITY], 0.0);
    cr_expect_eq(rec.kind[AG_M_Q_MEAN_COSINE], AG_V_NULL); /* one row */
    cr_expect_eq(rec.kind[AG_M_QK_COS_MEAN], AG_V_NUMBER);
    case_free(&c);
}

/* ‖J‖₂ by the SVD of J assembled row by row from VJPs (rows Jᵀe_r). */
static double norm_by_vjp_rows(const ag_head_lin *L, size_t n, size_t d)
{
    size_t nn = n * n, nd = n * d;
    double *J = malloc(nn * nd * sizeof *J), *e = calloc(nn, sizeof *e); // (n², nd)
    for (size_t r = 0; r < nn; r++) {
        e[r] = 1;
        cr_assert_eq(ag_head_vjp(L, e, J + r * nd), AG_OK);
        e[r] = 0;
    }
    double s = sigma1(J, nn, nd);
    free(J);
    free(e);
    return s;
}

/* A larger head than explicit J allows comfortably: Lanczos against the SVD
 * of J assembled from VJP rows (n = 24, d = 16: J is 576 × 384). */
Test(stability, lanczos_medium_head)
{
    head_case c;
    case_make(&c, 61, 24, 16, 8, 1, 1, 1, 0);
    ag_head_lin *L = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_head_linearize(&c.in, &L, &err), AG_OK);
    double s = norm_by_vjp_rows(L, 24, 16), jn = 0;
    ag_lanczos_info info;
    cr_assert_eq(ag_head_jacobian_norm(L, &jn, &info, &err), AG_OK, "%s", err.message);
    fprintf(stderr, "[stability] n=24 d=16: svd %.15g lanczos %.15g rel %.1e, %d products\n", s, jn,
            fabs(jn - s) / s, info.products);
    cr_expect_leq(fabs(jn - s), 1e-9 * s);
    ag_head_lin_free(L);
    case_free(&c);
}

/* The restart path: with a basis of only 3 or 5 vectors, Lanczos must
 * restart from its top Ritz vector several times and still reach the norm
 * of the explicit J (SVD) on the same medium head. */
Test(stability, lanczos_restarts_small_basis)
{
    head_case c;
    case_make(&c, 61, 24, 16, 8, 1, 1, 1, 0);
    ag_head_lin *L = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_head_linearize(&c.in, &L, &err), AG_OK);
    double s = norm_by_vjp_rows(L, 24, 16);
    const size_t bases[2] = {3, 5};
    for (int b = 0; b < 2; b++) {
        double jn = 0;
        ag_lanczos_info info;
        cr_assert_eq(ag_jacobian_norm_basis(L, bases[b], &jn, &info, &err), AG_OK, "%s",
                     err.message);
        cr_expect_gt(info.restarts, 0, "basis %zu: no restart happened", bases[b]);
        cr_expect_leq(fabs(jn - s), 1e-9 * s, "basis %zu: %.15g vs svd %.15g", bases[b], jn, s);
    }
    double jn;
    cr_expect_eq(ag_jacobian_norm_basis(L, 1, &jn, NULL, &err), AG_EINVAL);
    ag_head_lin_free(L);
    case_free(&c);
}

/* Nearly one-hot rows (1 − A_ip down to 1e-30): each row of dA must still sum
 * to 0 entry-accurately, and ‖J‖₂ must match a closed form. For n = 2
 * (non-causal, no rope), row i is (1 − δ_i, δ_i) with δ_i = σ(s_i1 − s_i0),
 * so J's rows (i,0), (i,1) are ∓g_i, g_i = δ_i(1 − δ_i) ∇_X(s_i1 − s_i0),
 * ∇_{x_t}(s_i1 − s_i0) = c[δ_it W_Q(k_1 − k_0) + (δ_1t − δ_0t) W_K q_i],
 * and ‖J‖₂² = the largest eigenvalue of 2 G Gᵀ (G = [g_0; g_1], 2 × 2d). A
 * naive A ⊙ (dS − ⟨A, dS⟩) returns rounding noise for the dominant entry. */
Test(stability, saturated_rows_closed_form)
{
    const double gaps[4] = {5, 20, 40, 70}; /* s_i1 − s_i0 ≈ gap: δ ≈ e^−gap */
    for (int gi = 0; gi < 4; gi++) {
        enum { D = 3, DH = 2 };
        /* q_i = x_i W_Q, k_j = x_j W_K with W_Q = W_K = [I; 0]: x rows below */
        double g = gaps[gi];
        double x[2 * D] = {sqrt(g), 0.3, -0.2, 0.5, sqrt(g) + 0.7, 0.1};
        double wq[D * DH] = {1, 0, 0, 1, 0.2, -0.1}, wk[D * DH] = {1, 0, 0, 1, -0.3, 0.4};
        ag_head_input in = {.x = x, .n = 2, .d = D, .wq = wq, .wk = wk, .d_h = DH, .scale = 1.0};
        double q[2][DH], k[2][DH];
        for (int i = 0; i < 2; i++)
            for (int h = 0; h < DH; h++) {
                q[i][h] = k[i][h] = 0;
                for (int m = 0; m < D; m++) {
                    q[i][h] += x[i * D + m] * wq[m * DH + h];
                    k[i][h] += x[i * D + m] * wk[m * DH + h];
                }
            }
        double G[2][2 * D];
        for (int i = 0; i < 2; i++) {
            double s0 = q[i][0] * k[0][0] + q[i][1] * k[0][1], s1 = q[i][0] * k[1][0] + q[i][1] * k[1][1];
            double z = -fabs(s1 - s0), e = exp(z), small = e / (1 + e); /* min(δ, 1 − δ) */
            double w = small * (1 - small);
            for (int t = 0; t < 2; t++)
                for (int m = 0; m < D; m++) {
                    double v = 0;
                    for (int h = 0; h < DH; h++) {
                        if (t == i)
                            v += wq[m * DH + h] * (k[1][h] - k[0][h]);
                        v += (t == 1 ? 1.0 : -1.0) * wk[m * DH + h] * q[i][h];
                    }
                    G[i][t * D + m] = w * v;
                }
        }
        double a = 0, b = 0, c = 0; /* 2 G Gᵀ = [[a, b], [b, c]] */
        for (int m = 0; m < 2 * D; m++) {
            a += 2 * G[0][m] * G[0][m];
            b += 2 * G[0][m] * G[1][m];
            c += 2 * G[1][m] * G[1][m];
        }
        double lmax = 0.5 * (a + c) + sqrt(0.25 * (a - c) * (a - c) + b * b);
        double expect = sqrt(lmax);

        ag_head_lin *L = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_head_linearize(&in, &L, &err), AG_OK, "%s", err.message);
        double jn = 0;
        cr_assert_eq(ag_head_jacobian_norm(L, &jn, NULL, &err), AG_OK, "%s", err.message);
        /* rows of dA sum to 0 entry-accurately */
        double dX[2 * D] = {0.3, -1, 0.5, 0.7, 0.2, -0.4}, dA[4];
        cr_assert_eq(ag_head_jvp(L, dX, dA), AG_OK);
        for (int i = 0; i < 2; i++)
            cr_expect_leq(fabs(dA[2 * i] + dA[2 * i + 1]), 1e-12 * fabs(dA[2 * i + 1]),
                          "gap %g row %d: %g + %g", g, i, dA[2 * i], dA[2 * i + 1]);
        fprintf(stderr, "[stability] saturated gap %g: min(A) %.3g, |J|_2 %.6e closed form %.6e rel %.1e\n",
                g, fmin(ag_head_lin_attention(L)[1], ag_head_lin_attention(L)[3]), jn, expect,
                fabs(jn - expect) / expect);
        cr_expect_leq(fabs(jn - expect), 1e-9 * expect, "gap %g: %.17g vs %.17g", g, jn, expect);
        ag_head_lin_free(L);
    }
}

/* ---- errors ---------------------------------------------------------------- */

static int status_of(const ag_head_input *in, const ag_stability_options *opt, ag_error *err)
{
    ag_metric_set sel;
    ag_metric_set_families(&sel, AG_FAMILY_BIT(AG_FAMILY_STABILITY));
    ag_record rec;
    ag_record_init(&rec, 0, 0, in ? in->n : 0, in ? in->n : 0);
    memset(err, 0, sizeof *err);
    return ag_stability_metrics(in, opt, &sel, &rec, err);
}

Test(stability, errors)
{
    head_case c;
    case_make(&c, 71, 4, 6, 2, 0, 1, 0, 0);
    ag_error err;
    ag_head_input in = c.in;
    c.x[5] = NAN;
    cr_expect_eq(status_of(&in, NULL, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "X") != NULL, "%s", err.message);
    c.x[5] = 0;
    c.bk[1] = INFINITY;
    cr_expect_eq(status_of(&in, NULL, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "b_K") != NULL, "%s", err.message);
    c.bk[1] = 0;
    c.wq[2] = NAN; /* inside W_Q's block (columns d_h..2d_h-1 of a 3·d_h-wide matrix) */
    cr_expect_eq(status_of(&in, NULL, &err), AG_ENONFINITE);
    cr_expect(strstr(err.message, "W_Q") != NULL, "%s", err.message);
    c.wq[2] = 0;
    c.wq[0] = NAN; /* outside the block: never read */
    cr_expect_eq(status_of(&in, NULL, &err), AG_OK, "%s", err.message);

    in = c.in;
    in.n = 0;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in = c.in;
    in.d_h = 0;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in = c.in;
    in.ldq = 1; /* below d_h = 2 */
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in = c.in;
    in.ldx = 3; /* below d = 6 */
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in = c.in;
    in.x = NULL;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect_eq(status_of(NULL, NULL, &err), AG_EINVAL);
    in = c.in;
    in.scale = -1;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in = c.in;
    in.rope = (ag_rope){.rotary_dim = 3, .theta = 10};
    in.d_h = 3; /* odd */
    in.ldq = in.ldk = 6;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "rotary_dim 3") != NULL, "%s", err.message);
    in.d_h = 2;
    in.rope.rotary_dim = 4; /* above d_h */
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    in.rope.rotary_dim = 2;
    in.rope.theta = 0;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "rope_theta 0") != NULL, "%s", err.message);
    in.rope = (ag_rope){.rotary_dim = 2, .theta = 10, .type = AG_ROPE_LLAMA3, .factor = 8,
                        .low_freq_factor = 4, .high_freq_factor = 1, .original_max_positions = 8};
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "llama3") != NULL, "%s", err.message);
    in = c.in;
    in.softcap = -1;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "softcap") != NULL, "%s", err.message);
    in = c.in; /* non-causal */
    in.window = -1;
    cr_expect_eq(status_of(&in, NULL, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "window") != NULL, "%s", err.message);
    in.window = 2; /* a bidirectional band (ModernBERT) */
    cr_expect_eq(status_of(&in, NULL, &err), AG_OK, "%s", err.message);
    in.causal = 1;
    cr_expect_eq(status_of(&in, NULL, &err), AG_OK, "%s", err.message);
    ag_stability_options opt;
    ag_stability_options_init(&opt);
    opt.epsilon = 0;
    cr_expect_eq(status_of(&c.in, &opt, &err), AG_EINVAL);
    opt.epsilon = NAN;
    cr_expect_eq(status_of(&c.in, &opt, &err), AG_EINVAL);
    ag_stability_options_init(&opt);
    opt.trials = 0;
    cr_expect_eq(status_of(&c.in, &opt, &err), AG_EINVAL);
    double A[16];
    in = c.in;
    in.n = 0;
    cr_expect_eq(ag_head_attention(&in, A, &err), AG_EINVAL);
    ag_head_lin *L = (ag_head_lin *)&err; /* must be reset to NULL on failure */
    cr_expect_eq(ag_head_linearize(&in, &L, &err), AG_EINVAL);
    cr_expect_null(L);
    ag_head_lin_free(NULL);
    case_free(&c);
}

/* An additive position bias (T5's; ag_head_extra.bias) with W_Q = W_K = 0:
 * the scores are the bias alone, so A's rows are the softmax of the bias
 * over the visible keys (causal here) whatever X, A does not move with X
 * (jacobian_norm 0), and the linear normaliser refuses the head. */
Test(stability, additive_bias_with_zero_projections)
{
    enum { n = 3, d = 2, dh = 2 };
    const double X[n * d] = {1, -2, 0.5, 3, -1, 0.25}, Z[d * dh] = {0};
    const double B[n * n] = {0.3, 9, 9, -1.2, 0.7, 9, 2.0, -0.5, 0.1}; /* 9: masked keys */
    ag_head_input in = {.x = X, .n = n, .d = d, .wq = Z, .wk = Z, .d_h = dh, .causal = 1};
    ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
    ex.bias = B;
    double A[n * n];
    ag_error err = {0};
    cr_assert_eq(ag_head_attention_ex(&in, &ex, A, &err), AG_OK, "%s", err.message);
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int j = 0; j <= i; j++)
            sum += exp(B[i * n + j]);
        for (int j = 0; j < n; j++)
            cr_expect(fabs(A[i * n + j] - (j <= i ? exp(B[i * n + j]) / sum : 0)) < 1e-15,
                      "A[%d][%d] = %.17g", i, j, A[i * n + j]);
    }
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILY_BIT(AG_FAMILY_STABILITY), "jacobian_norm", &sel,
                                   &err), AG_OK, "%s", err.message);
    ag_record *rec = ag_record_new();
    cr_assert_eq(ag_stability_metrics_ex(&in, &ex, NULL, sel, rec, &err), AG_OK, "%s",
                 err.message);
    double jn = NAN;
    cr_assert_eq(ag_record_value(rec, AG_M_JACOBIAN_NORM, &jn), AG_V_NUMBER);
    cr_expect(jn < 1e-12, "jacobian_norm %g", jn);
    cr_assert_eq(ag_head_linear_attention_ex(&in, &ex, A, &err), AG_EUNSUPPORTED);
    ag_record_free(rec);
    ag_metric_set_free(sel);
}
