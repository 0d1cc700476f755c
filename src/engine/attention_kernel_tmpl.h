/* attention_kernel_tmpl.h — the kernel of attention_kernel.h written once
 * for a real type R, included twice by attention_kernel.c (R = float, then
 * R = double). Before inclusion define: R, SFX (_f32/_f64), GEMM
 * (cblas_sgemm/dgemm), REXP, RTANH (math functions of R).
 *
 * The operations and their order are those of the forward pass's former
 * FN(softmax)/FN(attend)/FN(rope), so that the plain cases (no softcap, no
 * window, full rotary) give the same bits as before. */

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

/* modeling_llama.py apply_rotary_pos_emb: x·cos + rotate_half(x)·sin with
 * rotate_half([x1, x2]) = [−x2, x1] over the rotated dims; the transpose
 * turns by −angle (sin negated, exactly). */
void KFN(agk_rope_apply)(R *x, size_t n, size_t ld, int heads, int head_dim, int rotary_dim,
                         const R *cos_t, const R *sin_t, int dir)
{
    size_t half = (size_t)rotary_dim / 2;
    for (size_t i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            R *r = x + i * ld + (size_t)h * (size_t)head_dim;
            const R *c = cos_t + i * half, *s = sin_t + i * half;
            for (size_t j = 0; j < half; j++) {
                R a = r[j], b = r[j + half], sj = dir > 0 ? s[j] : -s[j];
                r[j] = a * c[j] - b * sj;
                r[j + half] = b * c[j] + a * sj;
            }
        }
}

/* Soft-capping, mask and softmax of one row r (n scores) in place (soft-
 * capping as modeling_gemma2.py eager_attention_forward, commit
 * 006e86931247d7bacf94ad00ada1fb6baf11e94b: /cap, tanh, ·cap): the
 * visible keys [lo, hi) get softmax(cap·tanh(r/cap)) (max-subtracted, the
 * denominator summed in double and rounded to R, as torch's float sums are
 * closer to exact than a naive float loop), the hidden ones exactly 0, as
 * HF's finfo.min mask gives after exp. */
static void KFN(agk_row)(R *r, size_t n, size_t lo, size_t hi, double softcap)
{
    if (softcap > 0) {
        R cap = (R)softcap;
        for (size_t j = lo; j < hi; j++)
            r[j] = RTANH(r[j] / cap) * cap;
    }
    R mx = r[lo];
    for (size_t j = lo + 1; j < hi; j++)
        mx = r[j] > mx ? r[j] : mx;
    double sum = 0;
    for (size_t j = lo; j < hi; j++)
        sum += (r[j] = REXP(r[j] - mx));
    R inv = (R)sum;
    for (size_t j = lo; j < hi; j++)
        r[j] /= inv;
    for (size_t j = 0; j < lo; j++)
        r[j] = 0;
    for (size_t j = hi; j < n; j++)
        r[j] = 0;
}

void KFN(agk_head_probs)(const agk_head *c, const R *q, size_t ldq, const R *k, size_t ldk,
                         size_t n, R *p)
{
    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, c->head_dim, (R)c->scale, q,
         (int)ldq, k, (int)ldk, 0, p, (int)n); // (n, n)
    for (size_t i = 0; i < n; i++) {
        size_t lo, hi;
        agk_visible(c, n, i, &lo, &hi);
        KFN(agk_row)(p + i * n, n, lo, hi, c->softcap);
    }
}

/* modeling_llama.py repeat_kv: query head h reads kv head h / (H / Hkv). */
void KFN(agk_attend)(const agk_head *c, const R *q, const R *k, const R *v, size_t n, R *p,
                     R *ctx)
{
    int H = c->n_head, hd = c->head_dim, lq = H * hd, lkv = c->n_kv_head * hd;
    for (int h = 0; h < H; h++) {
        int g = h / (H / c->n_kv_head);
        R *ph = p + (size_t)h * n * n; // (n, n)
        KFN(agk_head_probs)(c, q + h * hd, (size_t)lq, k + g * hd, (size_t)lkv, n, ph);
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, hd, (int)n, 1, ph, (int)n,
             v + g * hd, lkv, 0, ctx + h * hd, lq);
    }
}

#undef KFN
#undef AGK_CAT
#undef AGK_CAT2
