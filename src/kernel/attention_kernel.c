/* attention_kernel.c — the one attention kernel (attention_kernel.h) and the
 * RoPE inverse frequencies (ag_rope_inv_freq, attngeom/model.h).
 *
 * ag_rope_inv_freq follows Hugging Face's src/transformers/modeling_rope_utils.py
 * (read at commit 0044e3b3facff1a1ad60b235c69d5b45beae75a4):
 * _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
 * _compute_dynamic_ntk_parameters (with seq_len as LlamaRotaryEmbedding.
 * _dynamic_frequency_update passes it for positions 0..n-1: n) and
 * _compute_llama3_parameters. HF evaluates inv_freq in float32; here it is
 * evaluated in double, theta^(−2j/r) by pow, which is what the float64
 * references and the existing fixtures do. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attention_kernel.h"
#include "sgemm.h"
#include "vmath.h"

/* theta^(−2j/r) for the r/2 pairs: the default (unscaled) frequencies. */
static void default_inv_freq(double theta, int r, double *inv_freq)
{
    for (int j = 0; j < r / 2; j++)
        inv_freq[j] = pow(theta, -2.0 * j / r);
}

/* _compute_llama3_parameters: wavelengths below original/high_freq_factor
 * kept, above original/low_freq_factor divided by factor, in between
 * interpolated by smooth = (original/wavelen − low)/(high − low). The
 * comparisons and the order of the operations are HF's. */
static void llama3_inv_freq(const ag_rope *r, double *inv_freq)
{
    double old_len = r->original_max_positions, f = r->factor;
    double low_wavelen = old_len / r->low_freq_factor, high_wavelen = old_len / r->high_freq_factor;
    for (int j = 0; j < r->rotary_dim / 2; j++) {
        double w = 2 * M_PI / inv_freq[j];
        double v = w > low_wavelen ? inv_freq[j] / f : inv_freq[j];
        if (!(w < high_wavelen) && !(w > low_wavelen)) {
            double smooth = (old_len / w - r->low_freq_factor) /
                            (r->high_freq_factor - r->low_freq_factor);
            v = (1 - smooth) * v / f + smooth * v;
        }
        inv_freq[j] = v;
    }
}

void ag_rope_inv_freq(const ag_rope *r, size_t n, double *inv_freq)
{
    double theta = r->theta;
    int dim = r->rotary_dim;
    if (r->type == AG_ROPE_DYNAMIC) {
        /* seq_len defaults to max_position_embeddings and only grows. */
        double max = r->original_max_positions;
        double seq = (double)n > max ? (double)n : max;
        theta = theta * pow((r->factor * seq / max) - (r->factor - 1), (double)dim / (dim - 2));
    }
    default_inv_freq(theta, dim, inv_freq);
    if (r->type == AG_ROPE_LINEAR)
        for (int j = 0; j < dim / 2; j++)
            inv_freq[j] /= r->factor;
    else if (r->type == AG_ROPE_LLAMA3)
        llama3_inv_freq(r, inv_freq);
}

/* ---- ALiBi slopes (attngeom/model.h) ------------------------------------ */

/* x rounded to bfloat16 (nearest, ties to even), as torch's .bfloat16(). */
static float to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* modeling_bloom.py (9d97831a) build_alibi_tensor: base = 2^(−2^−(log2 p − 3))
 * for p the closest power of two <= H, slopes base^1..base^p; past p the
 * odd powers 1, 3, ... of the base of 2p, min(p, H − p) of them. The bases
 * are float32 tensors and torch.pow keeps float32: each slope is the
 * float32 rounding of the power (computed here in double). */
static void bloom_slopes(int H, double *slopes)
{
    int p = 1;
    while (p * 2 <= H)
        p *= 2;
    float base = (float)pow(2.0, -pow(2.0, -(log2((double)p) - 3)));
    float extra = (float)pow(2.0, -pow(2.0, -(log2(2.0 * p) - 3)));
    for (int k = 0; k < p; k++)
        slopes[k] = (float)pow(base, k + 1);
    for (int k = 0; k < H - p; k++)
        slopes[p + k] = (float)pow(extra, 2 * k + 1);
}

/* modeling_mpt.py (0206c7b0) gen_slopes: P = 2^⌈log2 H⌉, m = arange(1, P + 1)
 * · (bias_max / P) in float32, slopes 1 / 2^m; when P != H the odd-indexed
 * then the even-indexed ones, the first H of them. */
static void mpt_slopes(int H, double bias_max, double *slopes)
{
    int P = 1;
    while (P < H)
        P *= 2;
    float step = (float)(bias_max / P), all[2 * AGK_ALIBI_MAX_HEADS];
    for (int k = 0; k < P; k++)
        all[k] = 1.0f / (float)pow(2.0, (double)((float)(k + 1) * step));
    int at = 0;
    for (int k = P == H ? 0 : 1; k < P && at < H; k += P == H ? 1 : 2)
        slopes[at++] = all[k];
    for (int k = 0; k < P && at < H; k += 2)
        slopes[at++] = all[k];
}

int ag_alibi_slopes(ag_alibi_kind kind, int n_head, double bias_max, double *slopes)
{
    if (!slopes || n_head < 1 || n_head > AGK_ALIBI_MAX_HEADS ||
        (kind == AG_ALIBI_MPT && !(bias_max > 0 && isfinite(bias_max))))
        return AG_EINVAL;
    if (kind == AG_ALIBI_MPT)
        mpt_slopes(n_head, bias_max, slopes);
    else if (kind == AG_ALIBI_BLOOM || kind == AG_ALIBI_FALCON)
        bloom_slopes(n_head, slopes);
    else
        return AG_EINVAL;
    for (int h = 0; kind == AG_ALIBI_FALCON && h < n_head; h++)
        slopes[h] = to_bf16((float)slopes[h]); /* modeling_falcon.py: slopes.bfloat16() */
    return AG_OK;
}

/* What each type reads (HF's _validate_*_parameters warn on factor < 1; the
 * formulas need the rest: dynamic raises to r/(r − 2), llama3 divides by
 * high − low). */
static const char *rope_scaling_problem(const ag_rope *r, char *buf, size_t len)
{
    if (r->type == AG_ROPE_DEFAULT)
        return NULL;
    if (r->type != AG_ROPE_LINEAR && r->type != AG_ROPE_DYNAMIC && r->type != AG_ROPE_LLAMA3)
        return snprintf(buf, len, "unknown rope scaling type %d", (int)r->type), buf;
    if (!(r->factor >= 1) || !isfinite(r->factor))
        return snprintf(buf, len, "rope scaling factor %g is not a number >= 1", r->factor), buf;
    if (r->type != AG_ROPE_LINEAR && r->original_max_positions < 1)
        return snprintf(buf, len, "rope scaling needs original_max_positions >= 1 (got %d)",
                        r->original_max_positions), buf;
    if (r->type == AG_ROPE_DYNAMIC && r->rotary_dim <= 2)
        return snprintf(buf, len, "dynamic rope scaling needs rotary_dim > 2 (got %d)",
                        r->rotary_dim), buf;
    if (r->type == AG_ROPE_LLAMA3 &&
        !(r->low_freq_factor > 0 && r->high_freq_factor > r->low_freq_factor &&
          isfinite(r->high_freq_factor)))
        return snprintf(buf, len, "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor "
                        "(got %g, %g)", r->low_freq_factor, r->high_freq_factor), buf;
    return NULL;
}

const char *agk_rope_problem(const ag_rope *r, int head_dim, char *buf, size_t len)
{
    if (r->rotary_dim == 0)
        return NULL;
    if (r->rotary_dim < 0 || r->rotary_dim % 2 || r->rotary_dim > head_dim)
        return snprintf(buf, len, "rotary_dim %d is not an even number in 2..%d (the head dim)",
                        r->rotary_dim, head_dim), buf;
    if (!(r->theta > 0) || !isfinite(r->theta))
        return snprintf(buf, len, "rope_theta %g is not a positive number", r->theta), buf;
    return rope_scaling_problem(r, buf, len);
}

const char *agk_head_problem(const agk_head *c, const ag_rope *r, char *buf, size_t len)
{
    if (!(c->softcap >= 0) || !isfinite(c->softcap))
        return snprintf(buf, len, "softcap %g is not a number >= 0", c->softcap), buf;
    if (c->window < 0 || (c->window > 0 && !c->causal))
        return snprintf(buf, len, "window %d needs causal and a size >= 1", c->window), buf;
    return r ? agk_rope_problem(r, c->head_dim, buf, len) : NULL;
}

/* Causal rows see keys 0..i, a window cuts that to the last `window` of
 * them (masking_utils.py sliding_window_overlay: kv_idx > q_idx − window). */
void agk_visible(const agk_head *c, size_t n, size_t i, size_t *lo, size_t *hi)
{
    if (!c->causal) {
        *lo = 0;
        *hi = n;
        return;
    }
    *hi = i + 1;
    *lo = c->window > 0 && i + 1 > (size_t)c->window ? i + 1 - (size_t)c->window : 0;
}

/* A head's two products. float: the forward pass's sgemm (sgemm.h), the
 * keys copied once per head into the caller's scratch (the kernel's layout
 * of Kᵀ), the values read in place; double: cblas_dgemm on the views. */
typedef struct {
    agm_bmat kt, v; /* op(B) = Kᵀ (head_dim, n) and V (n, head_dim) */
    size_t hd;
} agk_mm_f32;

static void mm_prepare_f32(agk_mm_f32 *m, size_t hd, size_t n, const float *k, size_t ldk,
                           const float *v, size_t ldv, float *scratch)
{
    m->hd = hd;
    agm_sgemm_prepare(&m->kt, 1, k, ldk, hd, n, scratch);
    agm_sgemm_prepare(&m->v, 0, v, ldv, n, hd, NULL);
}

static void mm_scores_f32(const agk_mm_f32 *m, size_t rows, size_t keys, const float *q,
                          size_t ldq, float *s, size_t lds)
{
    agm_sgemm_run(&m->kt, rows, keys, m->hd, q, ldq, s, lds, 0);
}

static void mm_mix_f32(const agk_mm_f32 *m, size_t rows, size_t keys, const float *p, size_t ldp,
                       float *ctx, size_t ldctx)
{
    agm_sgemm_run(&m->v, rows, m->hd, keys, p, ldp, ctx, ldctx, 0);
}

size_t agk_attend_scratch_f32(const agk_head *c, size_t n)
{
    return agm_sgemm_packed_size((size_t)c->head_dim, n);
}

typedef struct {
    const double *k, *v;
    size_t ldk, ldv, hd;
} agk_mm_f64;

static void mm_prepare_f64(agk_mm_f64 *m, size_t hd, size_t n, const double *k, size_t ldk,
                           const double *v, size_t ldv, double *scratch)
{
    (void)n, (void)scratch;
    *m = (agk_mm_f64){k, v, ldk, ldv, hd};
}

static void mm_scores_f64(const agk_mm_f64 *m, size_t rows, size_t keys, const double *q,
                          size_t ldq, double *s, size_t lds)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)keys, (int)m->hd, 1, q,
                (int)ldq, m->k, (int)m->ldk, 0, s, (int)lds);
}

static void mm_mix_f64(const agk_mm_f64 *m, size_t rows, size_t keys, const double *p,
                       size_t ldp, double *ctx, size_t ldctx)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)m->hd, (int)keys, 1, p,
                (int)ldp, m->v, (int)m->ldv, 0, ctx, (int)ldctx);
}

size_t agk_attend_scratch_f64(const agk_head *c, size_t n)
{
    (void)c, (void)n;
    return 0;
}

/* The row softmax: float, vmath.h's (exp in double rounded to float,
 * vectorised); double, the plain loops (exp from libm, the denominator
 * summed in order). */
#define softmax_f32 agm_softmax_f32
#define widen_f32 agm_widen_f32

static int softmax_f64(double *r, size_t cnt, double scale)
{
    double mx = r[0] *= scale;
    for (size_t j = 1; j < cnt; j++) {
        r[j] *= scale;
        mx = r[j] > mx ? r[j] : mx;
    }
    double sum = 0;
    for (size_t j = 0; j < cnt; j++)
        sum += (r[j] = exp(r[j] - mx));
    int bad = 0;
    for (size_t j = 0; j < cnt; j++) {
        r[j] /= sum;
        bad |= !isfinite(r[j]);
    }
    return bad;
}

static void widen_f64(const double *x, double *y, size_t cnt)
{
    memcpy(y, x, cnt * sizeof *y);
}

#define R float
#define SFX _f32
#define RTANH tanhf
#include "attention_kernel_tmpl.h"
#undef R
#undef SFX
#undef RTANH

#define R double
#define SFX _f64
#define RTANH tanh
#include "attention_kernel_tmpl.h"
#undef R
#undef SFX
#undef RTANH

void agk_head_probs_f64(const agk_head *c, const double *q, size_t ldq, const double *k,
                        size_t ldk, size_t n, double *p)
{
    agk_attend_head_f64(c, n, q, ldq, k, ldk, NULL, 0, p, NULL, 0, NULL, NULL, NULL);
}
