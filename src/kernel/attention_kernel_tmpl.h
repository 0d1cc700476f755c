/* Internal prefix: agk_ (module src/kernel/). */
/* attention_kernel_tmpl.h — the kernel of attention_kernel.h written once
 * for a real type R, included twice by attention_kernel.c (R = float, then
 * R = double). Before inclusion define: R, SFX (_f32/_f64), RTANH (tanh of
 * R), KFN(softmax) (a row's softmax, vmath.h's contract) and KFN(widen) (R
 * to double), and a head's
 * products: the type KFN(agk_mm) and KFN(mm_prepare) (keys and values, once
 * per head), KFN(mm_scores) (raw scores of a block of queries), KFN(mm_mix)
 * (a block of probabilities times the values). */

#define AGK_CAT2(a, b) a##b
#define AGK_CAT(a, b) AGK_CAT2(a, b)
#define KFN(name) AGK_CAT(name, SFX)

void KFN(agk_rope_tables)(const double *inv_freq, int rotary_dim, size_t n, R *cos_t, R *sin_t)
{
    size_t half = (size_t)rotary_dim / 2;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < half; j++) {
            double a = (double)i * inv_freq[j];
            cos_t[i * half + j] = (R)cos(a);
            sin_t[i * half + j] = (R)sin(a);
        }
}

/* Pair j = dims (step·j, step·j + other) of the first rotary_dim dims of
 * each head turns by the angle of j; the transpose turns by −angle (sin
 * negated, exactly). */
static void KFN(rope_turn)(R *x, size_t n, size_t ld, int heads, int head_dim, int rotary_dim,
                           const R *cos_t, const R *sin_t, int dir, size_t step, size_t other)
{
    size_t half = (size_t)rotary_dim / 2;
    for (size_t i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            R *r = x + i * ld + (size_t)h * (size_t)head_dim;
            const R *c = cos_t + i * half, *s = sin_t + i * half;
            for (size_t j = 0; j < half; j++) {
                R *u = r + step * j, *w = u + other;
                R a = *u, b = *w, sj = dir > 0 ? s[j] : -s[j];
                *u = a * c[j] - b * sj;
                *w = b * c[j] + a * sj;
            }
        }
}

/* modeling_llama.py apply_rotary_pos_emb: x·cos + rotate_half(x)·sin with
 * rotate_half([x1, x2]) = [−x2, x1] over the rotated dims: pairs (j, j + r/2). */
void KFN(agk_rope_apply)(R *x, size_t n, size_t ld, int heads, int head_dim, int rotary_dim,
                         const R *cos_t, const R *sin_t, int dir)
{
    KFN(rope_turn)(x, n, ld, heads, head_dim, rotary_dim, cos_t, sin_t, dir, 1,
                   (size_t)rotary_dim / 2);
}

/* modeling_gptj.py (00b676f8) apply_rotary_pos_emb: x·cos + rotate_every_two(x)·sin
 * with sin, cos repeat_interleave'd and rotate_every_two([.., a, b, ..]) =
 * [.., −b, a, ..]: pairs (2j, 2j + 1). */
void KFN(agk_rope_apply_pairs)(R *x, size_t n, size_t ld, int heads, int head_dim,
                               int rotary_dim, const R *cos_t, const R *sin_t, int dir)
{
    KFN(rope_turn)(x, n, ld, heads, head_dim, rotary_dim, cos_t, sin_t, dir, 2, 1);
}

/* Scale, soft-capping, mask and softmax of one row r (n raw scores q·k) in
 * place (soft-capping as modeling_gemma2.py eager_attention_forward, commit
 * 006e86931247d7bacf94ad00ada1fb6baf11e94b: /cap, tanh, ·cap): the visible
 * keys [lo, hi) get softmax(cap·tanh(scale·r/cap)) (KFN(softmax): max-
 * subtracted, the denominator summed in double and rounded to R, as torch's
 * float sums are closer to exact than a naive float loop), the hidden ones
 * exactly 0, as HF's finfo.min mask gives after exp. sd (n doubles, or
 * NULL) gets the row's scores as the softmax takes them: scale·r_j rounded
 * to R (the capped value with a cap), −inf on the hidden keys. A bias
 * (c->bias, row `row` of it) is added to the scaled score. The scale multiplies
 * the finished product, as HF's `matmul(q, kᵀ) * scaling` (and a GEMM's
 * alpha) do. Returns 1 when a probability is not finite (an overflowing
 * score). */
static int KFN(agk_row)(R *r, size_t n, size_t lo, size_t hi, R scale, double softcap,
                        double *sd, const agk_head *c, size_t row)
{
    if (c->alibi != AG_ALIBI_NONE) { // the bias in R, as HF's float32 alibi tensor
        R slope = (R)c->slope, off = c->alibi == AG_ALIBI_MPT ? (R)(n - 1) : 0;
        for (size_t j = lo; j < hi; j++) {
            R b = slope * ((R)j - off);
            r[j] = c->alibi == AG_ALIBI_FALCON ? (r[j] + b) * scale : r[j] * scale + b;
        }
        scale = 1;
    }
    if (c->bias) { // T5: scores = q·k + position_bias (modeling_t5.py T5Attention), in R
        const R *b = (const R *)c->bias + row * n;
        for (size_t j = lo; j < hi; j++)
            r[j] = r[j] * scale + b[j];
        scale = 1;
    }
    if (softcap > 0) {
        R cap = (R)softcap;
        for (size_t j = lo; j < hi; j++)
            r[j] = RTANH(r[j] * scale / cap) * cap;
        scale = 1;
    }
    if (sd) // the scores KFN(softmax) forms: scale·r_j in R, the hidden keys −inf
        for (size_t j = 0; j < n; j++)
            sd[j] = j >= lo && j < hi ? (double)(R)(r[j] * scale) : -INFINITY;
    int bad = KFN(softmax)(r + lo, hi - lo, scale);
    memset(r, 0, lo * sizeof *r);
    memset(r + hi, 0, (n - hi) * sizeof *r);
    return bad;
}

/* Blocks of AGK_ROWS queries: their scores against the keys they may see
 * (causal: up to the block's last query; computed entries above the
 * diagonal are then masked), their rows, then their value mix over those
 * keys (the masked probabilities are exact zeros). */
size_t KFN(agk_attend_head)(const agk_head *c, size_t n, const R *q, size_t ldq, const R *k,
                            size_t ldk, const R *v, size_t ldv, R *p, R *ctx, size_t ldctx,
                            double *pd, double *sd, R *scratch)
{
    KFN(agk_mm) mm;
    size_t nk = c->n_kv ? c->n_kv : n; // keys: n, or a cross-attention's source
    KFN(mm_prepare)(&mm, (size_t)c->head_dim, nk, k, ldk, v, ldv, scratch);
    size_t bad = n;
    for (size_t i0 = 0; i0 < n; i0 += AGK_ROWS) {
        size_t i1 = i0 + AGK_ROWS < n ? i0 + AGK_ROWS : n, keys = c->causal ? i1 : nk;
        KFN(mm_scores)(&mm, i1 - i0, keys, q + i0 * ldq, ldq, p + i0 * nk, nk);
        for (size_t i = i0; i < i1; i++) {
            size_t lo, hi;
            agk_visible(c, nk, i, &lo, &hi);
            if (KFN(agk_row)(p + i * nk, nk, lo, hi, (R)c->scale, c->softcap,
                               sd ? sd + i * nk : NULL, c, i) &&
                bad == n)
                bad = i;
            if (pd) // causal: past hi zero in every layer, left as the caller keeps it;
                    // a band's hidden keys past hi differ by layer (ModernBERT)
                KFN(widen)(p + i * nk, pd + i * nk, c->causal ? hi : nk);
        }
        if (v)
            KFN(mm_mix)(&mm, i1 - i0, keys, p + i0 * nk, nk, ctx + i0 * ldctx, ldctx);
    }
    return bad;
}

#undef KFN
#undef AGK_CAT
#undef AGK_CAT2
