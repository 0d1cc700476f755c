/* attention_layer.c — one attention layer of any architecture (docs/cli.md,
 * `attngeom layer`): A_h = softmax(scale·(XW_Q + b_Q)_h (XW_K + b_K)_hᵀ + mask),
 * plus the tensor helpers the command needs (fused Q|K|V split, leading
 * singleton squeeze, transpose of nn.Linear weights).
 *
 * The scale multiplies Q after its bias, as TF's MultiheadAttention (USE-lite)
 * does; HF models scale the scores instead, which is the same number up to
 * rounding. RoPE, soft-capping, the masks and the softmax are the attention
 * kernel's (attention_kernel.h). f32 runs sgemm on float copies of X and the
 * weights (float softmax), f64 runs everything in double. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/model.h"
#include "kernel/attention_kernel.h"
#include "base/sized_int.h"

/* Every head of the layer as the kernel sees it: the scale is in Q already. */
static agk_head kernel_head(const ag_attn_layer_spec *s)
{
    return (agk_head){.n_head = s->n_head, .n_kv_head = s->n_head,
                      .head_dim = (int)(s->d_a / (size_t)s->n_head), .scale = 1,
                      .softcap = s->softcap, .causal = s->causal, .window = s->window};
}

/* Generates layer_f32 / layer_f64: Q = scale·(XW_Q + b_Q) and K = XW_K + b_K
 * (n, d_a), both rotated when the spec has a rope, then every head's
 * probabilities by the attention kernel (scale 1: it is in Q already) into
 * p (H, n, n). x (n, d), wq/wk (d, d_a), bq/bk (d_a) or NULL, all already in
 * type R; tab the rope tables (rope_tables_*) or NULL; scratch the kernel's
 * (agk_attend_scratch_*). */
#define DEFINE_LAYER(R, SFX, GEMM)                                                        \
    static void project_##SFX(const R *x, const R *w, const R *b, size_t n, size_t d,     \
                              size_t da, R *y)                                            \
    {                                                                                     \
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)da, (int)d, 1, x,    \
             (int)d, w, (int)da, 0, y, (int)da);                                          \
        for (size_t i = 0; b && i < n; i++)                                               \
            for (size_t j = 0; j < da; j++)                                               \
                y[i * da + j] += b[j];                                                    \
    }                                                                                     \
    /* cos | sin (2, n, rotary_dim/2) for positions 0..n-1, NULL without a rope;      \
     * *ok = 0 when out of memory. */                                                     \
    static R *rope_tables_##SFX(const ag_attn_layer_spec *s, int *ok)                     \
    {                                                                                     \
        size_t half = (size_t)s->rope.rotary_dim / 2;                                     \
        *ok = 1;                                                                          \
        if (!half)                                                                        \
            return NULL;                                                                  \
        double *f = malloc(half * sizeof *f);                                             \
        R *t = malloc(2 * s->n * half * sizeof *t);                                       \
        if (f && t) {                                                                     \
            ag_rope_inv_freq(&s->rope, s->n, f);                                          \
            agk_rope_tables_##SFX(f, s->rope.rotary_dim, s->n, t, t + s->n * half);      \
        } else {                                                                          \
            free(t);                                                                      \
            t = NULL;                                                                     \
            *ok = 0;                                                                      \
        }                                                                                 \
        free(f);                                                                          \
        return t;                                                                         \
    }                                                                                     \
    static void layer_##SFX(const R *x, const R *wq, const R *wk, const R *bq,            \
                            const R *bk, const ag_attn_layer_spec *s, R scale,            \
                            const R *tab, R *q, R *k, R *p, R *scratch)                   \
    {                                                                                     \
        size_t n = s->n, da = s->d_a;                                                     \
        int H = s->n_head, dh = (int)(da / (size_t)H), rd = s->rope.rotary_dim;          \
        project_##SFX(x, wq, bq, n, s->d, da, q); /* (n, d_a) */                         \
        project_##SFX(x, wk, bk, n, s->d, da, k); /* (n, d_a) */                         \
        for (size_t i = 0; i < n * da; i++)                                               \
            q[i] *= scale;                                                                \
        if (tab) {                                                                        \
            const R *sn = tab + n * (size_t)(rd / 2);                                     \
            agk_rope_apply_##SFX(q, n, da, H, dh, rd, tab, sn, 1);                        \
            agk_rope_apply_##SFX(k, n, da, H, dh, rd, tab, sn, 1);                        \
        }                                                                                 \
        agk_head c = kernel_head(s);                                                      \
        for (int h = 0; h < H; h++)                                                       \
            agk_attend_head_##SFX(&c, n, q + h * dh, da, k + h * dh, da, NULL, 0,         \
                                  p + (size_t)h * n * n, NULL, 0, NULL, NULL, scratch);   \
    }

DEFINE_LAYER(float, f32, cblas_sgemm)
DEFINE_LAYER(double, f64, cblas_dgemm)

/* Messages name the files the inputs came from when the caller says. */
static const char *x_name(const ag_attn_layer_spec *s)
{
    return s->x_name ? s->x_name : "attention layer";
}

static const char *w_name(const ag_attn_layer_spec *s)
{
    return s->w_name ? s->w_name : "attention layer";
}

/* The first entry of the (rows, cols) block v that is not finite or, with
 * f32, does not fit a float (it would become Inf); AG_ENONFINITE naming it. */
static int check_block(const double *v, size_t rows, size_t cols, const char *file,
                       const char *what, int f32, ag_error *err)
{
    for (size_t k = 0; v && k < rows * cols; k++) {
        if (!isfinite(v[k]))
            return ag_error_set(err, AG_ENONFINITE, "%s: %s holds a non-finite value (%g) at row %zu, column %zu",
                                file, what, v[k], k / cols, k % cols);
        if (f32 && isinf((float)v[k]))
            return ag_error_set(err, AG_ENONFINITE, "%s: %s value %g at row %zu, column %zu overflows float32 (try --precision f64)",
                                file, what, v[k], k / cols, k % cols);
    }
    return AG_OK;
}

static int check_spec(const ag_attn_layer_spec *s, ag_error *err)
{
    if (!s || !s->x || !s->wq || !s->wk)
        return ag_error_set(err, AG_EINVAL, "attention layer: X, W_Q and W_K are required");
    if (!s->n || !s->d || !s->d_a || s->n_head <= 0)
        return ag_error_set(err, AG_EINVAL, "attention layer: empty input (n = %zu, d = %zu, d_a = %zu, heads = %d)",
                            s->n, s->d, s->d_a, s->n_head);
    if (s->d_a % (size_t)s->n_head)
        return ag_error_set(err, AG_EINVAL, "attention layer: projection width %zu is not divisible by %d heads",
                            s->d_a, s->n_head);
    char why[160];
    agk_head c = kernel_head(s);
    const char *bad = agk_head_problem(&c, &s->rope, why, sizeof why);
    if (bad)
        return ag_error_set(err, AG_EINVAL, "attention layer: %s", bad);
    int f32 = s->precision != AG_PRECISION_F64;
    int rc = check_block(s->x, s->n, s->d, x_name(s), "X", f32, err);
    if (rc == AG_OK)
        rc = check_block(s->wq, s->d, s->d_a, w_name(s), "W_Q", f32, err);
    if (rc == AG_OK)
        rc = check_block(s->wk, s->d, s->d_a, w_name(s), "W_K", f32, err);
    if (rc == AG_OK)
        rc = check_block(s->bq, 1, s->d_a, w_name(s), "b_Q", f32, err);
    if (rc == AG_OK)
        rc = check_block(s->bk, 1, s->d_a, w_name(s), "b_K", f32, err);
    return rc;
}

/* Finite inputs can still overflow in the products (the scores): every
 * head's probabilities must be finite, or the layer fails naming the head. */
static int check_heads(const ag_attn_layer_spec *s, const double *p, ag_error *err)
{
    size_t nn = s->n * s->n;
    for (size_t k = 0; k < (size_t)s->n_head * nn; k++)
        if (!isfinite(p[k]))
            return ag_error_set(err, AG_ENONFINITE, "%s: head %zu: attention is not finite at query %zu (%s)",
                                w_name(s), k / nn, k % nn / s->n,
                                s->precision == AG_PRECISION_F64 ? "float64 overflow"
                                                                 : "float32 overflow; try --precision f64");
    return AG_OK;
}

static float *to_float(const double *v, size_t cnt)
{
    if (!v)
        return NULL;
    float *f = malloc(cnt * sizeof *f);
    for (size_t i = 0; f && i < cnt; i++)
        f[i] = (float)v[i];
    return f;
}

/* float32 run: float copies of every input, float result widened into out. */
static int run_f32(const ag_attn_layer_spec *s, double scale, double *out)
{
    size_t n = s->n, d = s->d, da = s->d_a, hnn = (size_t)s->n_head * n * n;
    float *x = to_float(s->x, n * d), *wq = to_float(s->wq, d * da), *wk = to_float(s->wk, d * da);
    float *bq = to_float(s->bq, da), *bk = to_float(s->bk, da);
    float *q = malloc(n * da * sizeof *q), *k = malloc(n * da * sizeof *k); // (n, d_a)
    float *p = malloc(hnn * sizeof *p);                                    // (H, n, n)
    agk_head c = kernel_head(s);
    size_t scr_bytes = (agk_attend_scratch_f32(&c, n) * sizeof(float) + 63) / 64 * 64;
    float *scr = aligned_alloc(64, scr_bytes ? scr_bytes : 64);
    int tab_ok, ok = x && wq && wk && q && k && p && scr && (bq || !s->bq) && (bk || !s->bk);
    float *tab = rope_tables_f32(s, &tab_ok);
    if (ok && tab_ok) {
        layer_f32(x, wq, wk, bq, bk, s, (float)scale, tab, q, k, p, scr);
        for (size_t i = 0; i < hnn; i++)
            out[i] = p[i];
    }
    ok = ok && tab_ok;
    float *all[] = {x, wq, wk, bq, bk, q, k, p, tab, scr};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    return ok ? AG_OK : AG_ENOMEM;
}

static int run_f64(const ag_attn_layer_spec *s, double scale, double *out)
{
    double *q = malloc(s->n * s->d_a * sizeof *q), *k = malloc(s->n * s->d_a * sizeof *k); // (n, d_a)
    int tab_ok;
    double *tab = rope_tables_f64(s, &tab_ok);
    int ok = q && k && tab_ok;
    if (ok)
        layer_f64(s->x, s->wq, s->wk, s->bq, s->bk, s, scale, tab, q, k, out, NULL);
    free(q);
    free(k);
    free(tab);
    return ok ? AG_OK : AG_ENOMEM;
}

int ag_attention_layer(const ag_attn_layer_spec *spec, ag_array *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "attention layer: no output array");
    memset(out, 0, sizeof *out);
    ag_attn_layer_spec given = AG_ATTN_LAYER_SPEC_DEFAULT;
    if (spec && AG_SIZED_READ(&given, spec, ag_attn_layer_spec, err) != AG_OK)
        return AG_EINVAL;
    const ag_attn_layer_spec *s = spec ? &given : NULL;
    int rc = check_spec(s, err);
    if (rc != AG_OK)
        return rc;
    size_t shape[3] = {(size_t)s->n_head, s->n, s->n};
    if ((rc = ag_array_alloc(out, 3, shape, err)) != AG_OK)
        return rc;
    double scale = s->scale > 0 ? s->scale : 1.0 / sqrt((double)(s->d_a / (size_t)s->n_head));
    rc = s->precision == AG_PRECISION_F64 ? run_f64(s, scale, out->data) : run_f32(s, scale, out->data);
    if (rc != AG_OK)
        ag_error_set(err, rc, "attention layer: out of memory for %zu tokens", s->n);
    else
        rc = check_heads(s, out->data, err);
    if (rc != AG_OK)
        ag_array_free(out);
    return rc;
}

/* ---- tensor helpers ------------------------------------------------------- */

void ag_array_squeeze_leading(ag_array *a)
{
    ag_array_squeeze_to(a, 1);
}

void ag_array_squeeze_to(ag_array *a, int rank)
{
    int drop = 0;
    while (drop < a->ndim - rank && a->shape[drop] == 1)
        drop++;
    if (!drop)
        return;
    memmove(a->shape, a->shape + drop, (size_t)(a->ndim - drop) * sizeof a->shape[0]);
    a->ndim -= drop;
}

int ag_array_transpose2d(ag_array *a, ag_error *err)
{
    ag_array_squeeze_to(a, 2);
    if (a->ndim != 2)
        return ag_error_set(err, AG_ESHAPE, "transpose: expected a 2-D tensor, got %d dimensions", a->ndim);
    size_t r = a->shape[0], c = a->shape[1];
    size_t cnt = r * c;
    double *t = malloc((cnt ? cnt : 1) * sizeof *t); // (c, r)
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "transpose: out of memory");
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++)
            t[j * r + i] = a->data[i * c + j];
    free(a->data);
    a->data = t;
    a->shape[0] = c;
    a->shape[1] = r;
    return AG_OK;
}

/* Copy column block [c0, c0 + w) of the (rows, cols) matrix src into dst. */
static int take_block(const double *src, size_t rows, size_t cols, size_t c0, size_t w,
                      int ndim, ag_array *dst, ag_error *err)
{
    size_t shape[2] = {rows, w};
    int rc = ndim == 1 ? ag_array_alloc(dst, 1, &shape[1], err) : ag_array_alloc(dst, 2, shape, err);
    for (size_t i = 0; rc == AG_OK && i < rows; i++)
        memcpy(dst->data + i * w, src + i * cols + c0, w * sizeof(double));
    return rc;
}

int ag_qkv_split(const ag_array *fused, const char *name, ag_array *q, ag_array *k,
                 ag_array *v, ag_error *err)
{
    if (!fused || !q || !k)
        return ag_error_set(err, AG_EINVAL, "qkv split: missing argument");
    ag_array sq = *fused; /* shallow: only the shape is squeezed */
    ag_array_squeeze_to(&sq, 2); /* [1, 3·d_a] is a kernel with d = 1 */
    name = name ? name : "qkv";
    if (sq.ndim != 1 && sq.ndim != 2)
        return ag_error_set(err, AG_ESHAPE, "tensor '%s': a fused Q|K|V tensor must be [d, 3*d_a] or [3*d_a], got %d dimensions",
                            name, sq.ndim);
    size_t cols = sq.shape[sq.ndim - 1], rows = sq.ndim == 2 ? sq.shape[0] : 1;
    if (cols == 0 || cols % 3)
        return ag_error_set(err, AG_ESHAPE, "tensor '%s': last dimension %zu is not a positive multiple of 3", name, cols);
    size_t w = cols / 3;
    ag_array *outs[3] = {q, k, v};
    for (int b = 0; b < 3; b++) {
        if (!outs[b])
            continue;
        int rc = take_block(sq.data, rows, cols, b * w, w, sq.ndim, outs[b], err);
        if (rc != AG_OK) {
            for (int j = 0; j < b; j++)
                ag_array_free(outs[j]);
            return rc;
        }
    }
    return AG_OK;
}
