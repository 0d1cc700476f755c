/* Internal prefix: agk_ (module src/kernel/; sgemm.h and vmath.h, beside it, keep the engine's agm_ for now). */
/* attention_kernel.h — the one place where an attention head is computed.
 * It includes no header of the engine, which calls it from above, as
 * analysis/ does. Private to the library. Used by the
 * forward pass (forward_tmpl.h), by ag_attention_layer (`attngeom layer`)
 * and by family E (analysis/stability.c), so that every architecture's heads
 * are the same numbers wherever they are measured.
 *
 * For query head h of a layer over n tokens (positions 0..n-1):
 *   q = rope(Q_h), k = rope(K_g)          g = h / (n_head / n_kv_head)
 *   s_ij = scale · q_i·k_j                 (GEMM alpha)
 *   s_ij ← cap·tanh(s_ij / cap)            if softcap > 0 (Gemma-2)
 *   s_ij = scale·q_i·k_j + slope·(j − off) ALiBi BLOOM, MPT (off = n − 1)
 *   s_ij = scale·(q_i·k_j + slope·j)       ALiBi Falcon
 *   visible(i, j) = 1                      not causal, window = 0
 *                 = |i - j| < window       not causal, window > 0 (ModernBERT's
 *                                          local layers: distance <=
 *                                          local_attention // 2)
 *                 = j <= i                 causal, window = 0
 *                 = 0 <= i - j < window    causal, window > 0 (HF's
 *                                          sliding_window_overlay: kv_idx >
 *                                          q_idx - sliding_window)
 *   p_ij = softmax_j over visible keys; exactly 0 on hidden ones
 *   ctx_h = P_h V_g
 * The projections (and biases, and any scaling of Q itself, as OPT and
 * DistilBERT do) are the caller's: the kernel starts from Q, K, V.
 *
 * RoPE (modeling_llama.py apply_rotary_pos_emb, rotate-half form) rotates the
 * first rotary_dim dims of every head (GPT-NeoX rotary_pct, Phi-3
 * partial_rotary_factor); pair (j, j + rotary_dim/2) of position i turns by
 * i·inv_freq[j], inv_freq from ag_rope_inv_freq (public, attngeom/model.h:
 * modeling_rope_utils.py); the tables are computed in double and rounded to
 * the pass's type.
 *
 * Every function is written once for R = float (suffix _f32: float
 * activations and sgemm, HF float32 semantics; sums in double) and R = double
 * (suffix _f64). Nothing allocates, prints or keeps state; buffers are the
 * caller's and shapes are in the comments. Thread-safe: the forward pass
 * runs one head per task of its pool.
 */
#ifndef ATTNGEOM_ATTENTION_KERNEL_H
#define ATTNGEOM_ATTENTION_KERNEL_H

#include <stddef.h>

#include "attngeom/model.h" /* ag_rope, ag_rope_inv_freq */

/* Most heads ag_alibi_slopes takes (MPT's slopes are formed for the power
 * of two above the head count, on the stack). */
#define AGK_ALIBI_MAX_HEADS 4096

/* One layer's attention, every head alike. */
typedef struct {
    int n_head, n_kv_head, head_dim; /* n_kv_head divides n_head */
    double scale;   /* multiplies the scores */
    double softcap; /* > 0: cap·tanh(s/cap) after the scale; 0: none */
    int causal;
    int window;     /* > 0: key j visible iff 0 <= i - j < window (causal) or
                       |i - j| < window (not causal); 0: none */
    ag_alibi_kind alibi; /* AG_ALIBI_NONE, or the bias slope·(j − off) every
                            score gets (attngeom/model.h) */
    double slope;   /* this head's ALiBi slope (the caller sets it per head) */
    size_t n_kv;    /* keys per query: 0 means n (self-attention); a
                       cross-attention's source length (not causal, no
                       window) */
    const void *bias; /* NULL, or this head's additive scores (n, n_kv
                         values of the pass's type R, row stride n_kv),
                         added after the scale: T5's relative position
                         bias (modeling_t5.py `scores += position_bias`) */
} agk_head;

/* NULL if r can be given to ag_rope_inv_freq for heads of head_dim values
 * (rotary_dim 0, or even in 2..head_dim with theta > 0, the type's factors
 * as modeling_rope_utils.py needs them), else what is wrong with it, for
 * the caller's message ("rotary_dim 5 is odd"). buf holds the text. */
const char *agk_rope_problem(const ag_rope *r, int head_dim, char *buf, size_t len);

/* agk_rope_problem for a rope with its extra parameters (yarn: betas,
 * attention factor; longrope: both factor lists, attention factor); x is
 * only read for those two types, and x NULL is agk_rope_problem (which
 * refuses them by name). */
const char *agk_rope_extra_problem(const ag_rope *r, const ag_rope_extra *x, int head_dim,
                                   char *buf, size_t len);

/* Likewise for a head's softcap (finite, >= 0) and window (>= 0), then its
 * rope r (NULL: none) for c->head_dim. */
const char *agk_head_problem(const agk_head *c, const ag_rope *r, char *buf, size_t len);

/* First and one-past-last visible key of query i: the visible keys of a
 * row are always contiguous. */
void agk_visible(const agk_head *c, size_t n, size_t i, size_t *lo, size_t *hi);

/* cos, sin (n, rotary_dim/2): angle i·inv_freq[j], computed in double. */
void agk_rope_tables_f32(const double *inv_freq, int rotary_dim, size_t n, float *cos, float *sin);
void agk_rope_tables_f64(const double *inv_freq, int rotary_dim, size_t n, double *cos, double *sin);

/* Rotate the first rotary_dim dims of each of `heads` heads (head_dim apart)
 * of every row of x (n rows, row stride ld) in place; dir = +1 applies the
 * rotation, dir = −1 its transpose (the inverse, for reverse-mode
 * derivatives). */
void agk_rope_apply_f32(float *x, size_t n, size_t ld, int heads, int head_dim, int rotary_dim,
                        const float *cos, const float *sin, int dir);
void agk_rope_apply_f64(double *x, size_t n, size_t ld, int heads, int head_dim, int rotary_dim,
                        const double *cos, const double *sin, int dir);

/* GPT-J's rotation (modeling_gptj.py apply_rotary_pos_emb with
 * rotate_every_two): pair (2j, 2j + 1) turns by position·inv_freq[j]; the
 * same arguments and tables as agk_rope_apply. */
void agk_rope_apply_pairs_f32(float *x, size_t n, size_t ld, int heads, int head_dim,
                              int rotary_dim, const float *cos, const float *sin, int dir);
void agk_rope_apply_pairs_f64(double *x, size_t n, size_t ld, int heads, int head_dim,
                              int rotary_dim, const double *cos, const double *sin, int dir);

/* Queries per block of agk_attend_head (part of the result: a block's
 * scores and value mix are one product each). */
#define AGK_ROWS 48

/* Values of R in the scratch of agk_attend_head for heads c over n tokens
 * (64-byte aligned; the f64 scratch is empty: NULL will do). */
size_t agk_attend_scratch_f32(const agk_head *c, size_t n);
size_t agk_attend_scratch_f64(const agk_head *c, size_t n);

/* One head: its probabilities p (n, n) and its output ctx (n rows, stride
 * ldctx, head_dim values) = P V, from q, k, v (n rows each, strides ldq,
 * ldk, ldv, head_dim values; with c->n_kv set, k and v have n_kv rows and
 * p, pd, sd are (n, n_kv); already rotated: the caller picks the kv head
 * of a query head). pd (n, n), unless NULL, gets p as doubles where a key
 * can be visible (j < i + 1 when causal): the rest, zero for every head of
 * every layer, is left to the caller to zero once. sd (n, n), unless
 * NULL, gets the head's pre-softmax scores as doubles: scale·q_i·k_j (then
 * capped) exactly as the softmax takes them in R, −inf on every hidden key
 * (all n columns written). v NULL: no value mix. Returns the first query whose probabilities are not finite (an
 * overflowing score), or n. The float products are sgemm.h's, so the bytes
 * of a head do not depend on where or with what else it is computed. */
size_t agk_attend_head_f32(const agk_head *c, size_t n, const float *q, size_t ldq,
                           const float *k, size_t ldk, const float *v, size_t ldv, float *p,
                           float *ctx, size_t ldctx, double *pd, double *sd, float *scratch);
size_t agk_attend_head_f64(const agk_head *c, size_t n, const double *q, size_t ldq,
                           const double *k, size_t ldk, const double *v, size_t ldv, double *p,
                           double *ctx, size_t ldctx, double *pd, double *sd, double *scratch);

/* agk_attend_head_f64 without values (and without scratch, which f64 does
 * not use): one head's probabilities p (n, n) alone. */
void agk_head_probs_f64(const agk_head *c, const double *q, size_t ldq, const double *k, size_t ldk,
                        size_t n, double *p);

#endif
