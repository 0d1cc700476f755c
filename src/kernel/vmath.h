/* Internal prefix: agk_ (module src/kernel/; these are still the engine's agm_ for now). */
/* vmath.h — the elementwise math of the float32 forward pass: the tanh-form
 * GELU and the softmax of a row of attention scores. Private to the
 * library.
 *
 * Each function has an AVX-512 path (used when the CPU has it, checked at
 * run time) and a plain C path (`_plain`, used elsewhere) that perform the
 * same IEEE operations in the same order, without fused multiply-adds, so
 * both give the same bits. GELU's tanh is evaluated in double and rounded
 * once to float: correctly rounded but for values within about 1e-12
 * (relative) of a tie between two floats, so at least as accurate as
 * glibc's tanhf (within 2 ulp) and torch's vectorised one. The softmax's
 * exp is float throughout (agm_exp_f32: within 1 ulp, as glibc's expf and
 * torch's vectorised one); it was the double one, correctly rounded, until
 * its cost (15 % of the GPT-2-small pass) showed in the profile. The
 * methods and their error bounds are in vmath.c.
 *
 * GELU, activations.py NewGELUActivation, every other operation in float
 * in this order:
 *   u = c·(v + ((0.044715·v)·v)·v),  c = √(2/π) rounded to float
 *   gelu(v) = (0.5·v)·(1 + tanh(u))
 *
 * Softmax of a row s (the visible scores of one query), as HF's float32
 * softmax with a double denominator:
 *   x_j = scale·s_j,  m = max x_j,  e_j = agm_exp_f32(x_j − m),
 *   Σ = the e_j summed in double, element j into partial sum j mod 8, the
 *       eight partial sums then added pairwise ((0+1)+(2+3))+((4+5)+(6+7)),
 *   p_j = e_j / (float)Σ.
 *
 * Norms of a row x of d values, statistics in double summed the same way
 * (element j into partial sum j mod 8, then pairwise), everything else in
 * float in this order:
 *   LayerNorm (torch.nn.LayerNorm, biased variance):
 *     mean = (float)(Σ x_j / d),  var = (float)(Σ (x_j − mean)² / d) (each
 *     square of the float difference taken in double),
 *     inv = 1 / sqrtf(var + eps),  y_j = ((x_j − mean)·inv)·w_j + b_j, or
 *     (x_j − mean)·inv without w, b
 *   RMSNorm (modeling_llama.py LlamaRMSNorm; one_plus: GemmaRMSNorm):
 *     ms = (float)(Σ x_j² / d),  inv = 1 / sqrtf(ms + eps),
 *     y_j = w_j·(x_j·inv), or (x_j·inv)·(1 + w_j) */
#ifndef ATTNGEOM_VMATH_H
#define ATTNGEOM_VMATH_H

#include <stddef.h>

/* x[i] = gelu(x[i]) for i < cnt. */
void agm_gelu_tanh_f32(float *x, size_t cnt);
void agm_gelu_tanh_f32_plain(float *x, size_t cnt);

/* r (cnt >= 1 scores) = its softmax with the scale, in place. Returns 1
 * when a probability is not finite (a score was NaN or infinite), else 0. */
int agm_softmax_f32(float *r, size_t cnt, float scale);
int agm_softmax_f32_plain(float *r, size_t cnt, float scale);

/* exp(x) in float for x <= 0 (below −104, where it rounds to 0: exp(−104));
 * NaN gives NaN. Within 1 ulp of the exact value for every float in
 * [−104, 0] (checked exhaustively: at most 0.982 ulp, 0.85 % of them not
 * correctly rounded), as glibc's expf. The softmax's exp (both paths). */
float agm_exp_f32(float x);

/* y[i] = x[i] as double, for i < cnt. */
void agm_widen_f32(const float *x, double *y, size_t cnt);

/* acc[i] += x[i] for i < cnt. */
void agm_add_f32(float *acc, const float *x, size_t cnt);

/* One row (x and y may be the same). Return 1 when the statistic (var, ms)
 * or an output is not finite, else 0. w, b NULL: no affine part. */
int agm_layernorm_f32(const float *x, float *y, size_t d, const float *w, const float *b,
                      float eps);
int agm_layernorm_f32_plain(const float *x, float *y, size_t d, const float *w, const float *b,
                            float eps);
int agm_rmsnorm_f32(const float *x, float *y, size_t d, const float *w, float eps, int one_plus);
int agm_rmsnorm_f32_plain(const float *x, float *y, size_t d, const float *w, float eps,
                          int one_plus);

#endif
