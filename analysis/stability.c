/* stability.c — family E: stability and angles of one attention head whose
 * input X is known (docs/metrics.md, family E; docs/stability.md).
 *
 *   Q = R(XW_Q + b_Q), K = R(XW_K + b_K), S = c·QKᵀ,
 *   T = cap·tanh(S/cap) (soft-capping; T = S without), A = softmax_rows(T + mask)
 *
 * The forward map is the attention kernel's (src/kernel/attention_kernel.h):
 * its rotary tables and rotation, its scores, soft-capping, masks (causal,
 * sliding window) and softmax, so that these numbers are the forward pass's.
 *
 * Derivatives (R is linear and orthogonal, row i rotated by position i; the
 * cap's derivative is D = sech²(S/cap) = 1 − tanh²(S/cap), entrywise):
 *   JVP  dQ = R(dX W_Q), dK = R(dX W_K), dS = c(dQ Kᵀ + Q dKᵀ), dT = D ⊙ dS,
 *        dA_i = A_i ⊙ (dT_i − ⟨A_i, dT_i⟩)              (masked entries 0;
 *        evaluated around the row's largest entry, see softmax_tangent)
 *   VJP  G_T,i = A_i ⊙ (G_i − ⟨A_i, G_i⟩), G_S = D ⊙ G_T, G_Q = c G_S K,
 *        G_K = c G_Sᵀ Q, dX = (RᵀG_Q) W_Qᵀ + (RᵀG_K) W_Kᵀ
 * With QK-norm (ag_head_qk_norm: Qwen3, Gemma-3 per head, OLMo-2 over the
 * whole projection) Q = R(N(XW_Q + b_Q)), N(u)_c = g_c·u_c/r, r = √(Σ_j u_j²/W
 * + eps) over the W columns the norm spans; its tangent
 *   dN_c = g_c (du_c/r − u_c ⟨u, du⟩/(W r³)), adjoint
 *   du_j = [j in the head] g_j t_j/r − u_j Σ_c g_c u_c t_c/(W r³),
 * a head reading its columns of the whole projection (dX W_all for OLMo-2).
 * ‖J‖₂ is the square root of the largest eigenvalue of JᵀJ, found by
 * Lanczos with full reorthogonalisation; J is never formed (memory
 * O(n² + basis·n·d)).
 *
 * References: Kim, Papamakarios & Mnih 2021, "The Lipschitz constant of
 * self-attention" (ICML); Dong, Cordonnier & Loukas 2021; Ethayarajh 2019.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>

#include "analysis.h"
#include "attngeom/normalizers.h"
#include "kernel/attention_kernel.h"
#include "base/sized_int.h"

/* Lanczos parameters (documented in stability.h and docs/stability.md). */
#define LZ_BASIS 40           /* vectors kept before an explicit restart */
#define LZ_MAX_PRODUCTS 600   /* JᵀJ products before giving up */
#define LZ_TOL 1e-10          /* residual / θ on JᵀJ: 5e-11 relative on ‖J‖₂ */
#define LZ_ACCEPT 2e-6        /* at the cap: 1e-6 relative on ‖J‖₂ */
#define LZ_START_SEED 20210701UL

/* How Q (or K) of the head comes from X: the projection X W + b of width
 * columns, the head's dh of them from `off`, then the norm of scale g over
 * all width columns (g NULL: no norm, width = dh, off = 0). */
typedef struct {
    const double *w; /* (d, width), row stride ldw */
    size_t ldw;
    const double *b; /* (width) or NULL */
    size_t width, off;
    const double *g; /* (width) or NULL */
    double eps;
} qk_side;

/* A side at the linearisation point: contiguous copies, and the norm's
 * u = X W + b (n, width) and r (n). */
typedef struct {
    double *w;          /* (d, width) */
    double *g;          /* (width), NULL without a norm */
    size_t width, off;
    double eps;
    double *u, *r;      /* NULL without a norm */
} lin_side;

/* A head and its QK-norm, as the functions below take it. */
typedef struct {
    ag_head_input in;
    qk_side side[2];    /* Q, K */
    const ag_rope_extra *x; /* RoPE beyond ag_rope, or NULL */
    ag_alibi_kind alibi;    /* ag_head_extra's ALiBi: kind and slope */
    double alibi_slope;
    const double *bias;     /* ag_head_extra's additive bias (n, n), or NULL */
} head_def;

struct ag_head_lin {
    size_t n, d, dh;
    double c;
    agk_head hc;        /* the kernel's description of the head */
    int rd;             /* rotary_dim, 0 without RoPE */
    lin_side side[2];   /* Q, K */
    double *q, *k;      /* (n, dh) rotated projections (with biases, normed) */
    double *tab;        /* (2, n, rd/2) rotary cos | sin, NULL without RoPE */
    double *dcap;       /* (n, n) sech²(S/cap), NULL without soft-capping */
    double *A;          /* (n, n) */
};

void ag_stability_options_init(ag_stability_options *opt)
{
    opt->size = sizeof *opt;
    opt->epsilon = 1e-3;
    opt->trials = 8;
    opt->seed = 1;
}

/* ---- validation ---------------------------------------------------------- */

/* Whether row p[0..cols-1] holds a NaN or Inf: all exponent bits set. An
 * OR of integer tests, not isfinite's branch per value, so the compiler
 * vectorises it: lens and stability check X (n × d) for every head. */
static int row_nonfinite(const double *p, size_t cols)
{
    const uint64_t exp_bits = 0x7ff0000000000000u;
    uint64_t bad = 0;
    for (size_t j = 0; j < cols; j++) {
        uint64_t b;
        memcpy(&b, p + j, sizeof b);
        bad |= (b & exp_bits) == exp_bits;
    }
    return bad != 0;
}

static int check_finite(const double *p, size_t rows, size_t cols, size_t ld,
                        const char *what, ag_error *err)
{
    size_t i = 0;
    while (i < rows && !row_nonfinite(p + i * ld, cols))
        i++;
    for (size_t j = 0; i < rows && j < cols; j++) /* the first bad row's first bad value */
        if (!isfinite(p[i * ld + j]))
            return rows > 1 ? ag_error_set(err, AG_ENONFINITE,
                                           "stability: %s holds NaN or Inf at (%zu, %zu)",
                                           what, i, j)
                            : ag_error_set(err, AG_ENONFINITE,
                                           "stability: %s holds NaN or Inf at index %zu", what,
                                           j);
    return AG_OK;
}

/* Check *in and copy it into *h with strides and scale resolved. */
/* The head as the kernel sees it. */
static agk_head kernel_head(const head_def *hd)
{
    const ag_head_input *h = &hd->in;
    return (agk_head){.n_head = 1, .n_kv_head = 1, .head_dim = (int)h->d_h, .scale = h->scale,
                      .softcap = h->softcap, .causal = h->causal, .window = h->window,
                      .alibi = hd->alibi, .slope = hd->alibi_slope, .bias = hd->bias};
}

/* What is wrong with the head's rope given x (NULL: ag_rope alone), or
 * NULL. GPT-J's pairs are not taken here: ag_model_attn_weights lists them
 * as rotate-half pairs of permuted W_Q, W_K columns instead. */
static const char *rope_problem(const ag_head_input *h, const ag_rope_extra *x, char *buf,
                                size_t len)
{
    if (x && x->interleaved)
        return snprintf(buf, len, "interleaved rope pairs are not taken: give W_Q, W_K with the pairs as rotate-half pairs (ag_model_attn_weights does)"), buf;
    return x ? agk_rope_extra_problem(&h->rope, x, (int)h->d_h, buf, len)
             : agk_rope_problem(&h->rope, (int)h->d_h, buf, len);
}

static int normalise_input(const ag_head_input *in, const ag_rope_extra *x, head_def *hd,
                           ag_error *err)
{
    if (!in)
        return ag_error_set(err, AG_EINVAL, "stability: missing head input");
    ag_head_input *h = &hd->in;
    *h = *in;
    if (!h->x || !h->wq || !h->wk)
        return ag_error_set(err, AG_EINVAL, "stability: %s is NULL",
                            !h->x ? "X" : !h->wq ? "W_Q" : "W_K");
    if (h->n == 0 || h->d == 0 || h->d_h == 0)
        return ag_error_set(err, AG_EINVAL, "stability: empty head (n = %zu, d = %zu, d_h = %zu)",
                            h->n, h->d, h->d_h);
    if (h->n > INT_MAX / 2 || h->d > INT_MAX / 2 || h->d_h > INT_MAX / 2 ||
        h->n > ((size_t)-1 / sizeof(double)) / h->n)
        return ag_error_set(err, AG_EINVAL, "stability: head too large (n = %zu, d = %zu, d_h = %zu)",
                            h->n, h->d, h->d_h);
    h->ldx = h->ldx ? h->ldx : h->d;
    h->ldq = h->ldq ? h->ldq : h->d_h;
    h->ldk = h->ldk ? h->ldk : h->d_h;
    if (h->ldx < h->d || h->ldq < h->d_h || h->ldk < h->d_h)
        return ag_error_set(err, AG_EINVAL, "stability: row stride of %s below its width",
                            h->ldx < h->d ? "X" : h->ldq < h->d_h ? "W_Q" : "W_K");
    if (hd->alibi < AG_ALIBI_NONE || hd->alibi > AG_ALIBI_FALCON || !isfinite(hd->alibi_slope))
        return ag_error_set(err, AG_EINVAL, "stability: ALiBi kind %d with slope %g",
                            (int)hd->alibi, hd->alibi_slope);
    if (!isfinite(h->scale) || h->scale < 0)
        return ag_error_set(err, AG_EINVAL, "stability: scale %g is not a positive number", h->scale);
    if (h->scale == 0)
        h->scale = 1.0 / sqrt((double)h->d_h);
    char why[160];
    agk_head hc = kernel_head(hd);
    const char *bad = agk_head_problem(&hc, NULL, why, sizeof why);
    if (!bad)
        bad = rope_problem(h, x, why, sizeof why);
    if (bad)
        return ag_error_set(err, AG_EINVAL, "stability: %s", bad);
    int rc = check_finite(h->x, h->n, h->d, h->ldx, "X", err);
    if (!rc)
        rc = check_finite(h->wq, h->d, h->d_h, h->ldq, "W_Q", err);
    if (!rc)
        rc = check_finite(h->wk, h->d, h->d_h, h->ldk, "W_K", err);
    if (!rc && h->bq)
        rc = check_finite(h->bq, 1, h->d_h, h->d_h, "b_Q", err);
    if (!rc && h->bk)
        rc = check_finite(h->bk, 1, h->d_h, h->d_h, "b_K", err);
    return rc;
}

/* The side of Q (which 0) or K (1): the input's own projection, or the
 * QK-norm's (per head: the same columns; whole projection: its columns). */
static qk_side side_of(const ag_head_input *h, const ag_head_qk_norm *qk, int which)
{
    qk_side s = {.w = which ? h->wk : h->wq, .ldw = which ? h->ldk : h->ldq,
                 .b = which ? h->bk : h->bq, .width = h->d_h};
    if (!qk || qk->kind == AG_QK_NORM_NONE)
        return s;
    s.g = which ? qk->gk : qk->gq;
    s.eps = qk->eps;
    if (qk->kind == AG_QK_NORM_FULL) {
        s.w = which ? qk->wk : qk->wq;
        s.b = which ? qk->bk : qk->bq;
        s.ldw = s.width = which ? qk->k_width : qk->q_width;
        s.off = which ? qk->k_off : qk->q_off;
    }
    return s;
}

/* Check qk against the head and fill hd's sides. */
static int normalise_qk(const ag_head_qk_norm *qk, head_def *hd, ag_error *err)
{
    static const char *const what[2][3] = {{"W_Q", "b_Q", "the q norm's scale"},
                                           {"W_K", "b_K", "the k norm's scale"}};
    const ag_head_input *h = &hd->in;
    if (qk && (qk->kind < AG_QK_NORM_NONE || qk->kind > AG_QK_NORM_FULL))
        return ag_error_set(err, AG_EINVAL, "stability: unknown QK-norm kind %d", (int)qk->kind);
    if (qk && qk->kind != AG_QK_NORM_NONE && !(isfinite(qk->eps) && qk->eps >= 0))
        return ag_error_set(err, AG_EINVAL, "stability: QK-norm eps %g is not a number >= 0", qk->eps);
    for (int i = 0; i < 2; i++) {
        qk_side *s = &hd->side[i];
        *s = side_of(h, qk, i);
        if (!qk || qk->kind == AG_QK_NORM_NONE)
            continue;
        if (!s->w || !s->g || s->width < s->off + h->d_h || s->width > INT_MAX / 2)
            return ag_error_set(err, AG_EINVAL, "stability: QK-norm of %s: %s missing or its width %zu "
                                "does not hold the head's columns %zu..%zu", i ? "K" : "Q",
                                !s->w ? what[i][0] : "its scale", s->width, s->off, s->off + h->d_h);
        int rc = check_finite(s->g, 1, s->width, s->width, what[i][2], err);
        if (!rc && qk->kind == AG_QK_NORM_FULL)
            rc = check_finite(s->w, h->d, s->width, s->ldw, what[i][0], err);
        if (!rc && qk->kind == AG_QK_NORM_FULL && s->b)
            rc = check_finite(s->b, 1, s->width, s->width, what[i][1], err);
        if (rc)
            return rc;
    }
    return AG_OK;
}

/* Check in and what ex adds (a sized struct, NULL: none) and fill hd. */
static int normalise_def(const ag_head_input *in, const ag_head_extra *ex, head_def *hd,
                         ag_error *err)
{
    ag_head_extra e = AG_HEAD_EXTRA_DEFAULT;
    if (ex && AG_SIZED_READ(&e, ex, ag_head_extra, err) != AG_OK)
        return AG_EINVAL;
    hd->x = e.rope;
    hd->alibi = e.alibi;
    hd->alibi_slope = e.alibi ? e.alibi_slope : 0;
    hd->bias = e.bias;
    int rc = normalise_input(in, e.rope, hd, err);
    if (!rc && e.bias)
        rc = check_finite(e.bias, in->n, in->n, in->n, "the position bias", err);
    return rc ? rc : normalise_qk(e.qk, hd, err);
}

static int check_options(const ag_stability_options *opt, ag_error *err)
{
    if (!isfinite(opt->epsilon) || !(opt->epsilon > 0))
        return ag_error_set(err, AG_EINVAL, "stability: epsilon must be > 0, not %g", opt->epsilon);
    if (opt->trials < 1)
        return ag_error_set(err, AG_EINVAL, "stability: trials must be >= 1, not %d", opt->trials);
    return AG_OK;
}

/* ---- the forward map ------------------------------------------------------ */

/* out (n, dh) = X W + b. */
static void project(const double *X, size_t n, size_t d, size_t ldx, const double *W,
                    size_t ldw, const double *b, size_t dh, double *out)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)dh, (int)d, 1.0, X,
                (int)ldx, W, (int)ldw, 0.0, out, (int)dh);
    if (b)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < dh; j++)
                out[i * dh + j] += b[j];
}

/* The rotary tables cos | sin (2, n, rotary_dim/2) of positions 0..n−1, or
 * NULL without RoPE; *ok = 0 when out of memory. */
static double *rope_tables(const ag_head_input *h, const ag_rope_extra *x, int *ok)
{
    size_t half = (size_t)h->rope.rotary_dim / 2;
    *ok = 1;
    if (!half)
        return NULL;
    double *t = malloc((2 * h->n + 1) * half * sizeof *t); /* + inv_freq (half) */
    if (!t) {
        *ok = 0;
        return NULL;
    }
    ag_rope_inv_freq_extra(&h->rope, x, h->n, t + 2 * h->n * half);
    agk_rope_tables_f64(t + 2 * h->n * half, h->rope.rotary_dim, h->n, t, t + h->n * half);
    double af = x ? x->attention_factor : 0; /* yarn, longrope: cos, sin times it */
    for (size_t i = 0; af > 0 && af != 1 && i < 2 * h->n * half; i++)
        t[i] *= af;
    return t;
}

/* Rotate the rows of M (n, dh) by their positions (dir = +1) or back. */
static void rotate(double *M, size_t n, size_t dh, int rd, const double *tab, int dir)
{
    agk_rope_apply_f64(M, n, dh, 1, (int)dh, rd, tab, tab + n * (size_t)(rd / 2), dir);
}

/* AG_ENONFINITE naming the first row of M (rows of `cols`) that is not
 * finite: finite inputs whose products overflow double. */
static int check_overflow(const double *M, size_t rows, size_t cols, const char *what,
                          ag_error *err)
{
    for (size_t k = 0; k < rows * cols; k++)
        if (!isfinite(M[k]))
            return ag_error_set(err, AG_ENONFINITE, "stability: %s is not finite at row %zu (float64 overflow)",
                                what, k / cols);
    return AG_OK;
}

/* The side's Q or K at X (n, dh, unrotated) into out; with a norm, u
 * (n, width) and r (n) are the caller's when not NULL (kept), else
 * temporary. AG_ENOMEM only. */
static int side_forward(const qk_side *s, const double *X, size_t n, size_t d, size_t ldx,
                        size_t dh, double *out, double *u, double *r)
{
    if (!s->g) {
        project(X, n, d, ldx, s->w, s->ldw, s->b, dh, out);
        return AG_OK;
    }
    size_t W = s->width;
    double *own = u ? NULL : malloc(n * W * sizeof *own);
    if (!u && !(u = own))
        return AG_ENOMEM;
    project(X, n, d, ldx, s->w, s->ldw, s->b, W, u);
    for (size_t i = 0; i < n; i++) { /* modeling_qwen3.py Qwen3RMSNorm: w · (u · rsqrt(mean u² + eps)) */
        const double *ui = u + i * W;
        double ss = cblas_ddot((int)W, ui, 1, ui, 1), ri = sqrt(ss / (double)W + s->eps);
        double inv = 1 / ri;
        if (r)
            r[i] = ri;
        for (size_t c = 0; c < dh; c++)
            out[i * dh + c] = s->g[s->off + c] * (ui[s->off + c] * inv);
    }
    free(own);
    return AG_OK;
}

/* Q and K (rotated) of the head at input X (n, d) with row stride ldx into
 * q, k (n, dh); tab the rotary tables or NULL; keep (2 sides) NULL or where
 * the norms' u and r go. AG_ENONFINITE when the products overflow,
 * AG_ENOMEM. */
static int head_qk(const head_def *hd, const double *X, size_t ldx, const double *tab,
                   double *q, double *k, lin_side *keep, ag_error *err)
{
    const ag_head_input *h = &hd->in;
    double *qk[2] = {q, k};
    for (int i = 0; i < 2; i++)
        if (side_forward(&hd->side[i], X, h->n, h->d, ldx, h->d_h, qk[i], keep ? keep[i].u : NULL,
                         keep ? keep[i].r : NULL) != AG_OK)
            return ag_error_set(err, AG_ENOMEM, "stability: out of memory for a QK-norm");
    if (tab) {
        rotate(q, h->n, h->d_h, h->rope.rotary_dim, tab, 1);
        rotate(k, h->n, h->d_h, h->rope.rotary_dim, tab, 1);
    }
    int rc = check_overflow(q, h->n, h->d_h, "Q = X W_Q", err);
    return rc == AG_OK ? check_overflow(k, h->n, h->d_h, "K = X W_K", err) : rc;
}

/* Q, K (rotated) and A of the head at input X, as head_qk; A (n, n) the
 * caller's (not finite when AG_ENONFINITE). */
static int head_forward(const head_def *hd, const double *X, size_t ldx, const double *tab,
                        double *q, double *k, double *A, lin_side *keep, ag_error *err)
{
    const ag_head_input *h = &hd->in;
    int rc = head_qk(hd, X, ldx, tab, q, k, keep, err);
    if (rc == AG_ENOMEM)
        return rc;
    agk_head hc = kernel_head(hd);
    agk_head_probs_f64(&hc, q, h->d_h, k, h->d_h, h->n, A);
    return rc == AG_OK ? check_overflow(A, h->n, h->n, "the attention", err) : rc;
}

int ag_head_qk(const ag_head_input *in, const ag_head_extra *ex, double *q, double *k,
               double *scale, ag_error *err)
{
    head_def hd;
    int rc = normalise_def(in, ex, &hd, err), tab_ok;
    if (rc)
        return rc;
    double *tab = rope_tables(&hd.in, hd.x, &tab_ok);
    if (!tab_ok)
        return ag_error_set(err, AG_ENOMEM, "stability: out of memory for a head of %zu tokens",
                            hd.in.n);
    rc = head_qk(&hd, hd.in.x, hd.in.ldx, tab, q, k, NULL, err);
    *scale = hd.in.scale;
    free(tab);
    return rc;
}

/* Katharopoulos et al. (2020) eq. 7 on the rotated, unscaled q and k of
 * the head, row by row over the keys its mask lets query i see. */
static int linear_rows(const head_def *hd, const double *q, const double *k, double *A,
                       ag_error *err)
{
    const ag_head_input *h = &hd->in;
    agk_head hc = kernel_head(hd);
    unsigned char *allowed = malloc(h->n);
    if (!allowed)
        return ag_error_set(err, AG_ENOMEM, "linear attention: out of memory");
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < h->n; i++) {
        size_t lo, hi;
        agk_visible(&hc, h->n, i, &lo, &hi);
        for (size_t j = 0; j < h->n; j++)
            allowed[j] = j >= lo && j < hi;
        rc = ag_linear_attention_row(q + i * h->d_h, k, h->n, h->d_h, h->d_h, allowed,
                                     A + i * h->n, err);
    }
    free(allowed);
    return rc;
}

/* The head's A at its input: its softmax, or (linear) linear attention on
 * the same rotated q and k. */
static int head_map(const ag_head_input *in, const ag_head_extra *ex, double *A, int linear,
                    ag_error *err)
{
    head_def hd;
    int rc = normalise_def(in, ex, &hd, err);
    if (rc)
        return rc;
    const ag_head_input h = hd.in;
    if (!A)
        return ag_error_set(err, AG_EINVAL, "stability: output A is NULL");
    if (linear && hd.bias) /* refused, not approximated: as ALiBi below */
        return ag_error_set(err, AG_EUNSUPPORTED, "linear normaliser: a head with an additive position bias (T5) has no linear form (Katharopoulos et al. 2020, eq. 7)");
    if (linear && hd.alibi != AG_ALIBI_NONE) /* refused, not approximated */
        return ag_error_set(err, AG_EUNSUPPORTED, "linear normaliser: an ALiBi head has no linear form (Katharopoulos et al. 2020, eq. 7, replaces exp(q·k) by phi(q)·phi(k); ALiBi's additive bias has no counterpart there)");
    size_t n = h.n, dh = h.d_h;
    int tab_ok;
    double *q = malloc(n * dh * sizeof *q), *k = malloc(n * dh * sizeof *k);
    double *tab = rope_tables(&h, hd.x, &tab_ok);
    if (!q || !k || !tab_ok)
        rc = ag_error_set(err, AG_ENOMEM, "stability: out of memory for a head of %zu tokens", n);
    else
        rc = head_forward(&hd, h.x, h.ldx, tab, q, k, A, NULL, err);
    if (rc == AG_OK && linear) /* A overwritten: the same q, k under eq. 7 */
        rc = linear_rows(&hd, q, k, A, err);
    free(q);
    free(k);
    free(tab);
    return rc;
}

int ag_head_attention(const ag_head_input *in, double *A, ag_error *err)
{
    return head_map(in, NULL, A, 0, err);
}

int ag_head_linear_attention(const ag_head_input *in, double *A, ag_error *err)
{
    return head_map(in, NULL, A, 1, err);
}

int ag_head_attention_ex(const ag_head_input *in, const ag_head_extra *ex, double *A,
                         ag_error *err)
{
    return head_map(in, ex, A, 0, err);
}

int ag_head_linear_attention_ex(const ag_head_input *in, const ag_head_extra *ex, double *A,
                                ag_error *err)
{
    return head_map(in, ex, A, 1, err);
}

/* ---- linearisation, JVP and VJP ------------------------------------------- */

void ag_head_lin_free(ag_head_lin *lin)
{
    if (!lin)
        return;
    for (int i = 0; i < 2; i++) {
        free(lin->side[i].w);
        free(lin->side[i].g);
        free(lin->side[i].u);
        free(lin->side[i].r);
    }
    free(lin->q);
    free(lin->k);
    free(lin->tab);
    free(lin->dcap);
    free(lin->A);
    free(lin);
}

/* D = sech²(S/cap) (n, n) at the linearisation point, S = c·QKᵀ recomputed
 * as the kernel computed it: the cap's derivative 1 − tanh², evaluated as
 * 1/cosh² so that it keeps its relative accuracy where tanh is near ±1. */
static void softcap_derivative(ag_head_lin *L)
{
    size_t n = L->n;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)L->dh, L->c, L->q,
                (int)L->dh, L->k, (int)L->dh, 0.0, L->dcap, (int)n);
    for (size_t i = 0; i < n * n; i++) {
        double ch = cosh(L->dcap[i] / L->hc.softcap);
        L->dcap[i] = 1 / (ch * ch);
    }
}

/* L's copy of side s: W (d, width) contiguous, and with a norm its scale
 * and room for u, r. 0 when out of memory. */
static int lin_side_alloc(const qk_side *s, size_t n, size_t d, lin_side *o)
{
    size_t W = s->width;
    *o = (lin_side){.width = W, .off = s->off, .eps = s->eps};
    if (!(o->w = malloc(d * W * sizeof(double))))
        return 0;
    for (size_t i = 0; i < d; i++)
        memcpy(o->w + i * W, s->w + i * s->ldw, W * sizeof(double));
    if (!s->g)
        return 1;
    o->g = malloc(W * sizeof(double));
    o->u = malloc(n * W * sizeof(double));
    o->r = malloc(n * sizeof(double));
    if (o->g)
        memcpy(o->g, s->g, W * sizeof(double));
    return o->g && o->u && o->r;
}

/* The widest side's width: the tangents' scratch per row. */
static size_t lin_wmax(const ag_head_lin *L)
{
    return L->side[0].width > L->side[1].width ? L->side[0].width : L->side[1].width;
}

static int linearize(const head_def *hd, ag_head_lin **out, ag_error *err)
{
    const ag_head_input *h = &hd->in;
    size_t n = h->n, d = h->d, dh = h->d_h;
    ag_head_lin *L = calloc(1, sizeof *L);
    if (!L)
        return ag_error_set(err, AG_ENOMEM, "stability: out of memory");
    int tab_ok;
    *L = (ag_head_lin){.n = n, .d = d, .dh = dh, .c = h->scale, .hc = kernel_head(hd),
                       .rd = h->rope.rotary_dim};
    int sides_ok = lin_side_alloc(&hd->side[0], n, d, &L->side[0]) &&
                   lin_side_alloc(&hd->side[1], n, d, &L->side[1]);
    L->q = malloc(n * dh * sizeof(double));
    L->k = malloc(n * dh * sizeof(double));
    L->A = malloc(n * n * sizeof(double));
    L->tab = rope_tables(h, hd->x, &tab_ok);
    if (h->softcap > 0)
        L->dcap = malloc(n * n * sizeof(double));
    if (!sides_ok || !L->q || !L->k || !L->A || !tab_ok || (h->softcap > 0 && !L->dcap)) {
        ag_head_lin_free(L);
        return ag_error_set(err, AG_ENOMEM, "stability: out of memory for a head of %zu tokens", n);
    }
    int rc = head_forward(hd, h->x, h->ldx, L->tab, L->q, L->k, L->A, L->side, err);
    if (rc != AG_OK) {
        ag_head_lin_free(L);
        return rc;
    }
    if (L->dcap)
        softcap_derivative(L);
    *out = L;
    return AG_OK;
}

int ag_head_linearize_ex(const ag_head_input *in, const ag_head_extra *ex, ag_head_lin **out,
                         ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "stability: missing output pointer");
    *out = NULL;
    head_def hd;
    int rc = normalise_def(in, ex, &hd, err);
    return rc ? rc : linearize(&hd, out, err);
}

int ag_head_linearize(const ag_head_input *in, ag_head_lin **out, ag_error *err)
{
    return ag_head_linearize_ex(in, NULL, out, err);
}

const double *ag_head_lin_attention(const ag_head_lin *lin)
{
    return lin ? lin->A : NULL;
}

/* Row-wise softmax derivative in place: M_i ← (diag(A_i) − A_iA_iᵀ) M_i =
 * A_i ⊙ (M_i − ⟨A_i, M_i⟩) over the allowed keys, masked entries set to 0.
 * The operator is symmetric, so this serves both the JVP (M = dS) and the
 * VJP (M = dA). It annihilates constants (Σ_j A_ij = 1), so it is applied to
 * M_i − M_ip for the row's largest probability A_ip:
 *     t = Σ_{j≠p} A_ij (M_ij − M_ip),   M_ij ← A_ij ((M_ij − M_ip) − t),
 *     M_ip ← −A_ip t.
 * This keeps every entry accurate when the row is nearly one-hot: the naive
 * M_ip − ⟨A_i, M_i⟩ cancels to rounding noise (A_ip rounds to 1), losing the
 * true value A_ip Σ_{j≠p} A_ij (M_ip − M_ij) once 1 − A_ip ≲ 1e-8. */
static void softmax_tangent(const double *A, size_t n, const agk_head *hc, double *M)
{
    for (size_t i = 0; i < n; i++) {
        const double *a = A + i * n;
        double *m = M + i * n;
        size_t lo, lim;
        agk_visible(hc, n, i, &lo, &lim);
        size_t p = lo;
        for (size_t j = lo + 1; j < lim; j++)
            if (a[j] > a[p])
                p = j;
        double mp = m[p], t = 0;
        for (size_t j = lo; j < lim; j++)
            if (j != p)
                t += a[j] * (m[j] - mp);
        for (size_t j = lo; j < lim; j++)
            m[j] = j == p ? -a[p] * t : a[j] * ((m[j] - mp) - t);
        for (size_t j = 0; j < lo; j++)
            m[j] = 0;
        for (size_t j = lim; j < n; j++)
            m[j] = 0;
    }
}

/* M ← D ⊙ M: the soft-cap's (diagonal) derivative, its own transpose. */
static void softcap_tangent(const ag_head_lin *L, double *M)
{
    for (size_t i = 0; L->dcap && i < L->n * L->n; i++)
        M[i] *= L->dcap[i];
}

/* dq (n, dh, unrotated) = the side's tangent at dX (n, d); du scratch
 * (n, width) for a norm. */
static void side_jvp(const lin_side *s, const double *dX, size_t n, size_t d, size_t dh,
                     double *du, double *dq)
{
    size_t W = s->width;
    if (!s->g) {
        project(dX, n, d, d, s->w, W, NULL, dh, dq);
        return;
    }
    project(dX, n, d, d, s->w, W, NULL, W, du);
    for (size_t i = 0; i < n; i++) {
        const double *u = s->u + i * W, *v = du + i * W;
        double r = s->r[i], a = cblas_ddot((int)W, u, 1, v, 1) / ((double)W * r * r * r);
        for (size_t c = 0, j = s->off; c < dh; c++, j++)
            dq[i * dh + c] = s->g[j] * (v[j] / r - u[j] * a);
    }
}

/* dX = beta·dX + (the side's adjoint of gq (n, dh, unrotated)) Wᵀ; du
 * scratch (n, width) for a norm. */
static void side_vjp(const lin_side *s, const double *gq, size_t n, size_t d, size_t dh,
                     double *du, double *dX, double beta)
{
    size_t W = s->width;
    const double *t = gq;
    for (size_t i = 0; s->g && i < n; i++) {
        const double *u = s->u + i * W, *gi = gq + i * dh;
        double r = s->r[i], dot = 0;
        for (size_t c = 0, j = s->off; c < dh; c++, j++)
            dot += s->g[j] * u[j] * gi[c];
        double a = dot / ((double)W * r * r * r);
        for (size_t j = 0; j < W; j++)
            du[i * W + j] = -u[j] * a;
        for (size_t c = 0, j = s->off; c < dh; c++, j++)
            du[i * W + j] += s->g[j] * gi[c] / r;
        t = du;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)d, (int)W, 1.0, t, (int)W,
                s->w, (int)W, beta, dX, (int)d);
}

/* dA = J dX with scratch dq, dk (n, dh) and du (n, lin_wmax). */
static void jvp(const ag_head_lin *L, const double *dX, double *dA, double *dq, double *dk,
                double *du)
{
    size_t n = L->n, dh = L->dh;
    side_jvp(&L->side[0], dX, n, L->d, dh, du, dq);
    side_jvp(&L->side[1], dX, n, L->d, dh, du, dk);
    if (L->tab) {
        rotate(dq, n, dh, L->rd, L->tab, 1);
        rotate(dk, n, dh, L->rd, L->tab, 1);
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)dh, L->c, dq,
                (int)dh, L->k, (int)dh, 0.0, dA, (int)n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)dh, L->c, L->q,
                (int)dh, dk, (int)dh, 1.0, dA, (int)n);
    softcap_tangent(L, dA);
    softmax_tangent(L->A, n, &L->hc, dA);
}

/* dX = Jᵀ G, overwriting G (n, n) with the score cotangent; scratch gq, gk
 * (n, dh) and du (n, lin_wmax). */
static void vjp_inplace(const ag_head_lin *L, double *G, double *dX, double *gq, double *gk,
                        double *du)
{
    size_t n = L->n, dh = L->dh, d = L->d;
    softmax_tangent(L->A, n, &L->hc, G);
    softcap_tangent(L, G);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)dh, (int)n, L->c, G,
                (int)n, L->k, (int)dh, 0.0, gq, (int)dh);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)dh, (int)n, L->c, G,
                (int)n, L->q, (int)dh, 0.0, gk, (int)dh);
    if (L->tab) {
        rotate(gq, n, dh, L->rd, L->tab, -1);
        rotate(gk, n, dh, L->rd, L->tab, -1);
    }
    side_vjp(&L->side[0], gq, n, d, dh, du, dX, 0.0);
    side_vjp(&L->side[1], gk, n, d, dh, du, dX, 1.0);
}

int ag_head_jvp(const ag_head_lin *L, const double *dX, double *dA)
{
    if (!L || !dX || !dA)
        return AG_EINVAL;
    double *s = malloc((2 * L->dh + lin_wmax(L)) * L->n * sizeof *s);
    if (!s)
        return AG_ENOMEM;
    jvp(L, dX, dA, s, s + L->n * L->dh, s + 2 * L->n * L->dh);
    free(s);
    return AG_OK;
}

int ag_head_vjp(const ag_head_lin *L, const double *dA, double *dX)
{
    if (!L || !dA || !dX)
        return AG_EINVAL;
    size_t nn = L->n * L->n, ndh = L->n * L->dh;
    double *G = malloc((nn + 2 * ndh + L->n * lin_wmax(L)) * sizeof *G);
    if (!G)
        return AG_ENOMEM;
    memcpy(G, dA, nn * sizeof *G);
    vjp_inplace(L, G, dX, G + nn, G + nn + ndh, G + nn + 2 * ndh);
    free(G);
    return AG_OK;
}

/* ---- ‖J‖₂ by Lanczos on JᵀJ ------------------------------------------------ */

typedef struct {
    const ag_head_lin *L;
    double *u;       /* (n, n) */
    double *s1, *s2; /* (n, dh) each */
    double *s3;      /* (n, lin_wmax) */
} jtj_op;

/* w = JᵀJ v (an ag_lanczos_apply; op a jtj_op). */
static void jtj(const void *op, const double *v, double *w)
{
    const jtj_op *o = op;
    jvp(o->L, v, o->u, o->s1, o->s2, o->s3);
    vjp_inplace(o->L, o->u, w, o->s1, o->s2, o->s3);
}

/* Largest eigenpair of the k×k symmetric tridiagonal (alpha, beta): θ and
 * its unit eigenvector into s[k]. z, dd, ee scratch (k², k, k). */
static int tridiag_top(const double *alpha, const double *beta, int k, double *theta, double *s,
                       double *z, double *dd, double *ee)
{
    memcpy(dd, alpha, (size_t)k * sizeof *dd);
    if (k > 1)
        memcpy(ee, beta, (size_t)(k - 1) * sizeof *ee);
    lapack_int info = LAPACKE_dstev(LAPACK_COL_MAJOR, 'V', k, dd, ee, z, k);
    if (info != 0)
        return AG_ELAPACK;
    *theta = dd[k - 1];
    memcpy(s, z + (size_t)(k - 1) * (size_t)k, (size_t)k * sizeof *s);
    return AG_OK;
}

enum { LZ_CONVERGED, LZ_CAPPED, LZ_FULL };

/* The Lanczos driver (analysis/lanczos.c) on JᵀJ, always two Gram–Schmidt
 * passes, and what its test keeps: the top Ritz value θ, its residual
 * bound β_k·|s_k| and how the run ended. */
typedef struct {
    ag_lanczos lz;       /* V (m, N), m = min(N, basis); extra: u, z, s */
    jtj_op op;
    double *z;           /* (m, m) T_k's eigenvectors */
    double *s;           /* (m) the top one */
    ag_lanczos_info *inf;
    double theta, res;
    int state;
} lz_ws;

static int lz_alloc(lz_ws *ws, const ag_head_lin *L, size_t basis, ag_matrix_work *w)
{
    size_t N = L->n * L->d, m = N < basis ? N : basis, nn = L->n * L->n,
           ndh = L->n * L->dh, nu = nn + 2 * ndh + L->n * lin_wmax(L);
    *ws = (lz_ws){.lz = {.apply = jtj, .twice = 1}};
    if (m > INT_MAX || ag_lanczos_init(&ws->lz, N, (int)m, 0, nu + m * m + m, w) != AG_OK)
        return AG_ENOMEM;
    double *u = ws->lz.extra;
    ws->op = (jtj_op){.L = L, .u = u, .s1 = u + nn, .s2 = u + nn + ndh, .s3 = u + nn + 2 * ndh};
    ws->lz.op = &ws->op;
    ws->z = u + nu;
    ws->s = ws->z + m * m;
    return AG_OK;
}

/* After step k (an ag_lanczos_test): θ and its residual bound; stops on
 * convergence or at the product cap. */
static int lz_test(void *ctx, ag_lanczos *lz, int k, double b, int *stop)
{
    lz_ws *ws = ctx;
    ws->inf->products++;
    int rc = tridiag_top(lz->alpha, lz->beta, k, &ws->theta, ws->s, ws->z, lz->d, lz->e);
    if (rc != AG_OK)
        return rc;
    ws->theta = fmax(ws->theta, 0.0); /* JᵀJ is positive semi-definite */
    ws->res = b * fabs(ws->s[k - 1]);
    /* b = 0: the Krylov space is invariant, θ is exact. */
    if (ws->res <= LZ_TOL * ws->theta || b == 0 || (size_t)k == lz->q) {
        ws->state = LZ_CONVERGED;
        if (b == 0)
            ws->res = 0;
    } else if (ws->inf->products >= LZ_MAX_PRODUCTS) {
        ws->state = LZ_CAPPED;
    }
    *stop = ws->state != LZ_FULL;
    return AG_OK;
}

/* Lanczos with restarts: a full basis restarts from the top Ritz vector. */
static int lz_run(lz_ws *ws, ag_error *err)
{
    int N = (int)ws->lz.q;
    double *V = ws->lz.V;
    for (;;) {
        double nv = cblas_dnrm2(N, V, 1);
        if (!(nv > 0)) { /* the start (a Ritz vector) vanished: JᵀJ = 0 on it */
            ws->theta = ws->res = 0;
            return AG_OK;
        }
        cblas_dscal(N, 1.0 / nv, V, 1);
        ws->state = LZ_FULL;
        int k = 0, rc = ag_lanczos_run(&ws->lz, lz_test, ws, &k);
        if (rc != AG_OK)
            return ag_error_set(err, rc, "stability: the tridiagonal eigensolver (dstev) failed");
        if (ws->state == LZ_CONVERGED)
            return AG_OK;
        if (ws->state == LZ_CAPPED) {
            if (ws->res <= LZ_ACCEPT * ws->theta)
                return AG_OK;
            return ag_error_set(err, AG_ELAPACK, "stability: Lanczos for the Jacobian norm did not "
                                "converge in %d products (relative residual %.2g)",
                                ws->inf->products,
                                ws->theta > 0 ? ws->res / ws->theta : ws->res);
        }
        /* y = V s, the top Ritz vector, becomes v_0. */
        cblas_dgemv(CblasRowMajor, CblasTrans, k, N, 1.0, V, N, ws->s, 1, 0.0, ws->lz.w, 1);
        cblas_dcopy(N, ws->lz.w, 1, V, 1);
        ws->inf->restarts++;
    }
}

int ag_head_jacobian_norm(const ag_head_lin *L, double *norm, ag_lanczos_info *info,
                          ag_error *err)
{
    return ag_jacobian_norm_basis(L, LZ_BASIS, norm, info, err);
}

int ag_jacobian_norm_basis(const ag_head_lin *L, size_t basis, double *norm,
                           ag_lanczos_info *info, ag_error *err)
{
    if (!L || !norm || basis < 2)
        return ag_error_set(err, AG_EINVAL, "stability: missing argument to the Jacobian norm");
    lz_ws ws;
    ag_matrix_work *w = NULL;
    gsl_rng *rng = NULL;
    if (ag_matrix_work_new(&w, NULL) != AG_OK || lz_alloc(&ws, L, basis, w) != AG_OK ||
        !(rng = ag_work_rng(w, LZ_START_SEED))) {
        ag_matrix_work_free(w);
        return ag_error_set(err, AG_ENOMEM, "stability: out of memory for the Lanczos basis "
                            "(%zu vectors of %zu)", basis, L->n * L->d);
    }
    /* Deterministic start: Gaussian entries of a fixed-seed generator,
     * normalised by lz_run. */
    ag_fill_gaussian(rng, ws.lz.V, ws.lz.q);
    ag_lanczos_info inf = {0};
    ws.inf = &inf;
    int rc = lz_run(&ws, err);
    if (rc == AG_OK) {
        *norm = sqrt(ws.theta);
        inf.residual = ws.res;
        inf.rel_bound = ws.theta > 0 ? ws.res / (2 * ws.theta) : 0;
        if (info)
            *info = inf;
    }
    ag_matrix_work_free(w);
    return rc;
}

/* ---- sensitivity ---------------------------------------------------------- */

static double frob(const double *M, size_t cnt)
{
    return cblas_dnrm2((int)cnt, M, 1);
}

static double frob_strided(const double *X, size_t n, size_t d, size_t ld)
{
    double scale = 0, ssq = 1; /* LAPACK dlassq-style accumulation */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            double a = fabs(X[i * ld + j]);
            if (a == 0)
                continue;
            if (scale < a) {
                ssq = 1 + ssq * (scale / a) * (scale / a);
                scale = a;
            } else {
                ssq += (a / scale) * (a / scale);
            }
        }
    return scale * sqrt(ssq);
}

/* Mean over the trials of the relative response to a relative perturbation.
 * One generator per call (per head) seeded with opt->seed; E drawn row-major,
 * trial after trial. *ok = 0 when ‖X‖_F = 0 (undefined). */
static int sensitivity(const head_def *hd, const double *A0, const ag_stability_options *opt,
                       double *out, int *ok, ag_error *err)
{
    const ag_head_input *h = &hd->in;
    size_t n = h->n, d = h->d, dh = h->d_h, nd = n * d;
    double nx = frob_strided(h->x, n, d, h->ldx), na = frob(A0, n * n);
    *ok = 0;
    if (!(nx > 0))
        return AG_OK;
    int tab_ok;
    double *E = malloc(nd * sizeof *E), *Xp = malloc(nd * sizeof *Xp);
    double *A1 = malloc(n * n * sizeof *A1), *q = malloc(2 * n * dh * sizeof *q);
    double *tab = rope_tables(h, hd->x, &tab_ok);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = AG_OK;
    if (!E || !Xp || !A1 || !q || !tab_ok || !rng) {
        rc = ag_error_set(err, AG_ENOMEM, "stability: out of memory for the sensitivity trials");
        goto done;
    }
    gsl_rng_set(rng, opt->seed);
    double sum = 0;
    for (int t = 0; t < opt->trials; t++) {
        ag_fill_gaussian(rng, E, nd);
        double ne = frob(E, nd);
        if (!(ne > 0)) /* cannot happen with a Gaussian draw; keep the loop total */
            continue;
        cblas_dscal((int)nd, opt->epsilon * nx / ne, E, 1);
        ne = frob(E, nd);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < d; j++)
                Xp[i * d + j] = h->x[i * h->ldx + j] + E[i * d + j];
        if ((rc = head_forward(hd, Xp, d, tab, q, q + n * dh, A1, NULL, err)) != AG_OK)
            goto done;
        cblas_daxpy((int)(n * n), -1.0, A0, 1, A1, 1);
        sum += (frob(A1, n * n) / na) / (ne / nx);
    }
    *out = sum / opt->trials;
    *ok = 1;
done:
    free(E);
    free(Xp);
    free(A1);
    free(q);
    free(tab);
    gsl_rng_free(rng);
    return rc;
}

/* ---- angles --------------------------------------------------------------- */

/* Family C's mean_cosine of the rows of M (n, dh) into key `key`. */
static int mean_cosine_key(const double *M, size_t n, size_t dh, ag_metric key, ag_record *rec)
{
    ag_metric_set one = {0};
    one.on[AG_M_MEAN_COSINE] = 1;
    ag_record tmp;
    ag_record_init(&tmp, 0, 0, n, dh);
    ag_matrix_work *w = NULL;
    int rc = ag_matrix_work_new(&w, NULL);
    if (rc == AG_OK)
        rc = ag_geometry_family(M, M, n, dh, &one, w, &tmp);
    ag_matrix_work_free(w);
    if (rc == AG_OK)
        ag_record_set(rec, key, (ag_value_kind)tmp.kind[AG_M_MEAN_COSINE],
                      tmp.value[AG_M_MEAN_COSINE]);
    return rc;
}

/* P ← P + sign·v/‖v‖ for a non-zero row v (dh); returns whether it was. */
static int add_unit(const double *v, size_t dh, double sign, double *P)
{
    double vn = cblas_dnrm2((int)dh, v, 1);
    if (!(vn > 0))
        return 0;
    cblas_daxpy((int)dh, sign / vn, v, 1, P, 1);
    return 1;
}

/* qk_cos_mean under a bidirectional window (ModernBERT's local layers,
 * keys |i − j| < window): the band's sum of unit keys slides with i. */
static int qk_cos_band(const double *q, const double *k, size_t n, size_t dh, size_t w,
                       double *out)
{
    double *P = calloc(dh, sizeof *P), num = 0, cnt = 0, ck = 0;
    if (!P)
        return -1;
    for (size_t i = 0, lo = 0, hi = 0; i < n; i++) {
        for (; hi < (i + w < n ? i + w : n); hi++)
            ck += add_unit(k + hi * dh, dh, 1.0, P);
        for (; lo + w < i + 1; lo++)
            ck -= add_unit(k + lo * dh, dh, -1.0, P);
        double qn = cblas_dnrm2((int)dh, q + i * dh, 1);
        if (qn > 0) {
            num += cblas_ddot((int)dh, q + i * dh, 1, P, 1) / qn;
            cnt += ck;
        }
    }
    free(P);
    if (cnt == 0)
        return 0;
    *out = num / cnt;
    return 1;
}

/* Mean of q̂_iᵀk̂_j over the pairs the mask allows (rows that are zero
 * skipped), in O(n·dh): Σ_i q̂_i · (Σ_{allowed j} k̂_j), the causal sum of
 * keys kept as a running sum (a window drops key i − window at query i). */
static int qk_cos_mean(const double *q, const double *k, size_t n, size_t dh, int causal,
                       int window, double *out)
{
    if (!causal && window > 0)
        return qk_cos_band(q, k, n, dh, (size_t)window, out);
    double *P = calloc(dh, sizeof *P), *qs = calloc(dh, sizeof *qs);
    if (!P || !qs) {
        free(P);
        free(qs);
        return -1;
    }
    double num = 0, cnt = 0, nk = 0;
    for (size_t i = 0; i < n; i++)
        nk += add_unit(k + i * dh, dh, 1.0, P);
    if (causal)
        memset(P, 0, dh * sizeof *P);
    double ck = 0;
    for (size_t i = 0; i < n; i++) {
        if (causal) {
            ck += add_unit(k + i * dh, dh, 1.0, P);
            if (window > 0 && i >= (size_t)window)
                ck -= add_unit(k + (i - (size_t)window) * dh, dh, -1.0, P);
        }
        double qn = cblas_dnrm2((int)dh, q + i * dh, 1);
        if (!(qn > 0))
            continue;
        if (causal) {
            num += cblas_ddot((int)dh, q + i * dh, 1, P, 1) / qn;
            cnt += ck;
        } else {
            cblas_daxpy((int)dh, 1.0 / qn, q + i * dh, 1, qs, 1);
            cnt += nk;
        }
    }
    if (!causal)
        num = cblas_ddot((int)dh, qs, 1, P, 1);
    free(P);
    free(qs);
    if (cnt == 0)
        return 0;
    *out = num / cnt;
    return 1;
}

/* ---- the family ----------------------------------------------------------- */

#define ON(m) (sel->on[m])

int ag_stability_metrics(const ag_head_input *in, const ag_stability_options *given,
                         const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    return ag_stability_metrics_ex(in, NULL, given, sel, rec, err);
}

/* q_mean_cosine, k_mean_cosine: family C's mean_cosine of the unrotated
 * Q and K (after a QK-norm). */
static int angle_keys(const head_def *hd, const ag_metric_set *sel, ag_record *rec, ag_error *err)
{
    const ag_head_input *h = &hd->in;
    size_t n = h->n, dh = h->d_h;
    static const ag_metric keys[2] = {AG_M_Q_MEAN_COSINE, AG_M_K_MEAN_COSINE};
    static const char *const what[2] = {"Q = X W_Q", "K = X W_K"};
    double *M = malloc(n * dh * sizeof *M);
    int rc = M ? AG_OK : AG_ENOMEM;
    for (int i = 0; rc == AG_OK && i < 2; i++) {
        if (!ON(keys[i]))
            continue;
        rc = side_forward(&hd->side[i], h->x, n, h->d, h->ldx, dh, M, NULL, NULL);
        if (!rc && !(rc = check_overflow(M, n, dh, what[i], err)))
            rc = mean_cosine_key(M, n, dh, keys[i], rec);
    }
    free(M);
    return rc == AG_ENOMEM ? ag_error_set(err, rc, "stability: out of memory") : rc;
}

int ag_stability_metrics_ex(const ag_head_input *in, const ag_head_extra *ex,
                            const ag_stability_options *given, const ag_metric_set *sel,
                            ag_record *rec, ag_error *err)
{
    ag_stability_options o = AG_STABILITY_OPTIONS_DEFAULT;
    if (given && AG_SIZED_READ(&o, given, ag_stability_options, err) != AG_OK)
        return AG_EINVAL;
    const ag_stability_options *opt = &o;
    if (!sel || !rec)
        return ag_error_set(err, AG_EINVAL, "stability: missing selection or record");
    head_def hd;
    int rc = normalise_def(in, ex, &hd, err);
    if (!rc)
        rc = check_options(opt, err);
    if (rc || !ag_family_selected(sel, AG_FAMILY_STABILITY))
        return rc;
    const ag_head_input h = hd.in;
    size_t n = h.n, dh = h.d_h;
    if ((ON(AG_M_Q_MEAN_COSINE) || ON(AG_M_K_MEAN_COSINE)) && (rc = angle_keys(&hd, sel, rec, err)))
        return rc;
    if (!ON(AG_M_JACOBIAN_NORM) && !ON(AG_M_JACOBIAN_NORM_REL) && !ON(AG_M_SENSITIVITY) &&
        !ON(AG_M_QK_COS_MEAN))
        return AG_OK;

    ag_head_lin *L = NULL;
    if ((rc = linearize(&hd, &L, err)) != AG_OK)
        return rc;
    if (ON(AG_M_QK_COS_MEAN)) {
        double v = 0;
        int ok = qk_cos_mean(L->q, L->k, n, dh, h.causal, h.window, &v);
        if (ok < 0)
            rc = ag_error_set(err, AG_ENOMEM, "stability: out of memory");
        else
            ag_record_set(rec, AG_M_QK_COS_MEAN, ok ? AG_V_NUMBER : AG_V_NULL, v);
    }
    if (!rc && (ON(AG_M_JACOBIAN_NORM) || ON(AG_M_JACOBIAN_NORM_REL))) {
        double jn = 0;
        rc = ag_head_jacobian_norm(L, &jn, NULL, err);
        if (!rc && !isfinite(jn)) /* the products JᵀJv overflowed */
            rc = ag_error_set(err, AG_ENONFINITE, "stability: jacobian_norm is not finite (float64 overflow)");
        if (!rc) {
            double nx = frob_strided(h.x, n, h.d, h.ldx), na = frob(L->A, n * n);
            if (ON(AG_M_JACOBIAN_NORM))
                ag_record_set(rec, AG_M_JACOBIAN_NORM, AG_V_NUMBER, jn);
            if (ON(AG_M_JACOBIAN_NORM_REL))
                ag_record_set(rec, AG_M_JACOBIAN_NORM_REL, AG_V_NUMBER, jn * nx / na);
        }
    }
    if (!rc && ON(AG_M_SENSITIVITY)) {
        double v = 0;
        int ok = 0;
        rc = sensitivity(&hd, L->A, opt, &v, &ok, err);
        if (!rc)
            ag_record_set(rec, AG_M_SENSITIVITY, ok ? AG_V_NUMBER : AG_V_NULL, v);
    }
    ag_head_lin_free(L);
    return rc;
}

