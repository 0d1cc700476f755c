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

/* _compute_yarn_parameters (modeling_rope_utils.py @ef46806472a6, with the
 * later additions of original_max_position_embeddings, truncate and
 * mscale/mscale_all_dim as HF's DeepSeek-V3 yarn_get_mscale): the dims
 * between find_correction_dim(beta_fast) and (beta_slow) rotations over
 * the original context ramp from extrapolation (theta^(-2j/r), kept) to
 * interpolation (/ factor); YaRN, Peng et al. 2023, sec. 3.2. */
static double yarn_correction_dim(double rotations, int dim, double base, double len)
{
    return (dim * log(len / (rotations * 2 * M_PI))) / (2 * log(base));
}

static void yarn_inv_freq(const ag_rope *r, const ag_rope_extra *x, double *inv_freq)
{
    int dim = r->rotary_dim;
    double fast = x && x->beta_fast > 0 ? x->beta_fast : 32, slow = x && x->beta_slow > 0 ? x->beta_slow : 1;
    double len = r->original_max_positions;
    double low = yarn_correction_dim(fast, dim, r->theta, len);
    double high = yarn_correction_dim(slow, dim, r->theta, len);
    if (!x || x->truncate) {
        low = floor(low);
        high = ceil(high);
    }
    low = low > 0 ? low : 0;
    high = high < dim - 1 ? high : dim - 1;
    if (low == high) /* HF's linear_ramp_factor: "Prevent singularity" */
        high += 0.001;
    for (int j = 0; j < dim / 2; j++) {
        double ramp = (j - low) / (high - low);
        double extra = 1 - (ramp < 0 ? 0 : ramp > 1 ? 1 : ramp);
        double pos = pow(r->theta, 2.0 * j / dim);
        inv_freq[j] = (1.0 / (r->factor * pos)) * (1 - extra) + (1.0 / pos) * extra;
    }
}

/* _compute_longrope_parameters: 1 / (ext_factors[j]·theta^(2j/r)), the long
 * factors when seq_len = n exceeds original_max_position_embeddings
 * (longrope_frequency_update). */
static void longrope_inv_freq(const ag_rope *r, const ag_rope_extra *x, size_t n, double *inv_freq)
{
    const double *ext = !x ? NULL : n > (size_t)r->original_max_positions ? x->long_factor : x->short_factor;
    for (int j = 0; j < r->rotary_dim / 2; j++)
        inv_freq[j] = 1.0 / ((ext ? ext[j] : 1.0) * pow(r->theta, 2.0 * j / r->rotary_dim));
}

void ag_rope_inv_freq(const ag_rope *r, size_t n, double *inv_freq)
{
    ag_rope_inv_freq_extra(r, NULL, n, inv_freq);
}

void ag_rope_inv_freq_extra(const ag_rope *r, const ag_rope_extra *x, size_t n, double *inv_freq)
{
    if (r->type == AG_ROPE_YARN) {
        yarn_inv_freq(r, x, inv_freq);
        return;
    }
    if (r->type == AG_ROPE_LONGROPE) {
        longrope_inv_freq(r, x, n, inv_freq);
        return;
    }
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
    if (r->type == AG_ROPE_YARN || r->type == AG_ROPE_LONGROPE)
        return snprintf(buf, len, "%s rope scaling: its parameters (ag_rope_extra: %s, the attention factor) are not in ag_rope, so it is not computed here",
                        r->type == AG_ROPE_YARN ? "yarn" : "longrope",
                        r->type == AG_ROPE_YARN ? "beta_fast, beta_slow" : "short and long factors"), buf;
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

const char *agk_rope_extra_problem(const ag_rope *r, const ag_rope_extra *x, int head_dim,
                                   char *buf, size_t len)
{
    if (!x || (r->type != AG_ROPE_YARN && r->type != AG_ROPE_LONGROPE))
        return agk_rope_problem(r, head_dim, buf, len); /* refuses yarn, longrope without x */
    ag_rope base = *r;
    base.type = AG_ROPE_LINEAR; /* theta, rotary_dim and factor alike */
    const char *why = agk_rope_problem(&base, head_dim, buf, len);
    if (why)
        return why;
    if (r->original_max_positions < 1)
        return snprintf(buf, len, "%s rope scaling needs original_max_positions >= 1",
                        r->type == AG_ROPE_YARN ? "yarn" : "longrope"), buf;
    if (!(x->attention_factor > 0) || !isfinite(x->attention_factor))
        return snprintf(buf, len, "rope attention factor %g is not a positive number", x->attention_factor), buf;
    if (r->type == AG_ROPE_YARN && !(x->beta_fast > 0 && x->beta_slow > 0 && isfinite(x->beta_fast) && isfinite(x->beta_slow)))
        return snprintf(buf, len, "yarn beta_fast %g and beta_slow %g must be positive numbers", x->beta_fast, x->beta_slow), buf;
    if (r->type == AG_ROPE_LONGROPE && (!x->short_factor || !x->long_factor))
        return snprintf(buf, len, "longrope needs short_factor and long_factor"), buf;
    return NULL;
}

const char *agk_head_problem(const agk_head *c, const ag_rope *r, char *buf, size_t len)
{
    if (!(c->softcap >= 0) || !isfinite(c->softcap))
        return snprintf(buf, len, "softcap %g is not a number >= 0", c->softcap), buf;
    if (c->window < 0)
        return snprintf(buf, len, "window %d is not a size >= 1 (or 0: none)", c->window), buf;
    return r ? agk_rope_problem(r, c->head_dim, buf, len) : NULL;
}

/* Causal rows see keys 0..i, a window cuts that to the last `window` of
 * them (masking_utils.py sliding_window_overlay: kv_idx > q_idx − window).
 * A bidirectional row sees every key, a window cuts that to the symmetric
 * band |i − j| < window (modeling_modernbert.py (000c33fd)
 * ModernBertModel._update_attention_mask: distance <= local_attention // 2,
 * i.e. window = local_attention // 2 + 1). */
void agk_visible(const agk_head *c, size_t n, size_t i, size_t *lo, size_t *hi)
{
    if (!c->causal) {
        size_t w = (size_t)c->window;
        *lo = w > 0 && i + 1 > w ? i + 1 - w : 0;
        *hi = w > 0 && i + w < n ? i + w : n;
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
