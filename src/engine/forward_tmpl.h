/* forward_tmpl.h — the forward pass, written once for a real type R and
 * included twice by forward.c: R = float (HF float32 semantics: float
 * activations, sgemm, float softmax/norms) and R = double (the whole pass in
 * double). Either way the weights are converted exactly from their stored
 * dtype to R one matrix at a time, into the pass's own scratch.
 *
 * One pass for every architecture: the block follows the normalised config
 * (norm kind, residual wiring, sandwich norms, Q/K/V and MLP layouts,
 * positions), never the model_type. Attention itself (RoPE, scale,
 * soft-capping, masks, softmax, the value mix) is the attention kernel's
 * (attention_kernel.h).
 *
 * Before inclusion define: R, SFX (name suffix), GEMM (cblas_sgemm/dgemm),
 * RSQRT/REXP/RTANH/RERF (math functions of R), CONV (agm_to_float/double),
 * IS_F64 (0/1).
 * Sums (means, variances, softmax denominators) are accumulated in double in
 * both precisions; torch's float reductions are pairwise/vectorised and thus
 * closer to the exact sum than a naive float loop would be. */

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

typedef struct {
    R *h;      // (n, d) residual stream
    R *xn;     // (n, d) normalised block input (attention input X)
    R *t;      // (n, d) a sublayer's output before the residual add
    R *t2;     // (n, d) the MLP output of a parallel block
    R *e;      // (n, d_embed) token embeddings before project_in (OPT)
    R *qkv;    // (n, (H + 2·Hkv)·hd) fused Q/K/V projection output
    R *q;      // (n, H*hd)
    R *k, *v;  // (n, Hkv*hd)
    R *ctx;    // (n, H*hd) merged head outputs
    R *p;      // (H, n, n) attention probabilities of the current layer
    R *f1;     // (n, d_ff), (n, 2·d_ff) for a fused gate_up
    R *f2;     // (n, d_ff)
    R *cos, *sin; // (n, rotary_dim/2) RoPE tables
    R *w;      // (max_mat) one weight matrix converted to R (unused when
               // an F32 matrix is used in place by the f32 pass)
    double *xd, *pd; // (n, d), (H, n, n) double views for the callback (f32 only)
    fwd_fault fault; // where the pass stopped on a non-finite value
} FN(ws);

static void FN(ws_free)(FN(ws) *s)
{
    R *all[] = {s->h, s->xn, s->t, s->t2, s->e, s->qkv, s->q, s->k, s->v, s->ctx, s->p,
                s->f1, s->f2, s->cos, s->sin, s->w};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    free(s->xd);
    free(s->pd);
}

/* calloc(cnt) of R when `need`, else leave NULL; 0 on failure. */
static int FN(want)(R **p, int need, size_t cnt)
{
    return !need || (*p = calloc(cnt ? cnt : 1, sizeof(R))) != NULL;
}

static int FN(ws_alloc)(FN(ws) *s, const ag_model *m, size_t n)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, dq = (size_t)g->n_head * g->head_dim,
           dkv = (size_t)g->n_kv_head * g->head_dim, H = (size_t)g->n_head, ff = (size_t)g->d_ff,
           half = (size_t)g->rope.rotary_dim / 2;
    int rope = g->positions == AG_POS_ROPE, fused = g->mlp == AG_MLP_GATED_FUSED;
    memset(s, 0, sizeof *s);
    int ok = FN(want)(&s->h, 1, n * d) && FN(want)(&s->xn, 1, n * d) && FN(want)(&s->t, 1, n * d) &&
             FN(want)(&s->t2, g->residual == AG_RESIDUAL_PARALLEL, n * d) &&
             FN(want)(&s->e, m->proj_in.w.p != NULL, n * (size_t)g->d_embed) &&
             FN(want)(&s->qkv, g->qkv != AG_QKV_SEPARATE, n * (dq + 2 * dkv)) &&
             FN(want)(&s->q, 1, n * dq) && FN(want)(&s->k, 1, n * dkv) && FN(want)(&s->v, 1, n * dkv) &&
             FN(want)(&s->ctx, 1, n * dq) && FN(want)(&s->p, 1, H * n * n) &&
             FN(want)(&s->f1, 1, n * ff * (fused ? 2 : 1)) && FN(want)(&s->f2, 1, n * ff) &&
             FN(want)(&s->cos, rope, n * half) && FN(want)(&s->sin, rope, n * half) &&
             // calloc: pages never written (all-F32 model, f32 pass) stay unmapped
             FN(want)(&s->w, 1, m->max_mat);
    if (ok && !IS_F64)
        ok = (s->xd = calloc(n * d, sizeof(double))) && (s->pd = calloc(H * n * n, sizeof(double)));
    if (!ok)
        FN(ws_free)(s);
    return ok ? AG_OK : AG_ENOMEM;
}

/* A stored matrix as R: stored F32 used in place by the f32 pass when it
 * can be, anything else converted exactly into the scratch (t->n values). */
static const R *FN(wget)(const agm_tensor *t, R *scratch)
{
#if !IS_F64
    const float *w = agm_f32_in_place(t);
    if (w)
        return w;
#endif
    CONV(t, 0, t->n, scratch);
    return scratch;
}

/* y (n, out) = x (n, in) @ W + b. nn.Linear [out,in] is used transposed
 * (F.linear: x @ W^T + b); Conv1D [in,out] as is (pytorch_utils.Conv1D). */
static void FN(linear)(const agm_lin *L, const R *x, size_t n, R *y, R *scratch)
{
    const R *w = FN(wget)(&L->w, scratch);
    GEMM(CblasRowMajor, CblasNoTrans, L->linear ? CblasTrans : CblasNoTrans,
         (int)n, L->out, L->in, 1, x, L->in, w, L->linear ? L->in : L->out, 0, y, L->out);
    if (L->b)
        for (size_t i = 0; i < n; i++)
            for (int j = 0; j < L->out; j++)
                y[i * L->out + j] += (R)L->b[j];
}

/* First non-finite value of x[0..cnt), or cnt. */
static size_t FN(first_bad)(const R *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        if (!isfinite(x[i]))
            return i;
    return cnt;
}

/* Exponent e such that the row r (d values) scaled by 2^-e has squares that
 * can neither overflow nor underflow. Always 0 in the f32 pass, whose norms
 * keep HF's float32 statistics (an overflowing variance is reported, see
 * norm_check), and for rows within [2^-400, 2^400], whose results are then
 * bit-identical to the unscaled formula. */
static int FN(row_exp)(const R *r, size_t d)
{
#if IS_F64
    double m = 0;
    for (size_t j = 0; j < d; j++)
        m = fmax(m, fabs(r[j]));
    int e = 0;
    if (m > 0 && (m < 0x1p-400 || m > 0x1p400))
        frexp(m, &e);
    return e;
#else
    (void)r;
    (void)d;
    return 0;
#endif
}

/* r[j]·2^-e, exactly. */
static inline R FN(sc)(R v, int e)
{
    return e ? (R)ldexp(v, -e) : v;
}

/* A norm's row is usable when its statistic (variance or mean square) is
 * finite in R and so is every output: with a float32 variance of +inf HF
 * silently outputs the bias, a wrong number. Returns the row or n. */
static size_t FN(norm_check)(const R *y, size_t row, size_t d, R stat, size_t n)
{
    return (!isfinite(stat) || FN(first_bad)(y + row * d, d) < d) ? row : n;
}

/* torch.nn.LayerNorm over the last dim: (x - mean)/sqrt(var + eps)*w + b,
 * biased variance; without w, b (OPT elementwise_affine = false) the
 * normalised value itself. x, y (n, d); may alias. The f64 pass computes on
 * x·2^-e (row_exp), the same quotient: (x - mean)·2^-e / sqrt((var + eps)·2^-2e).
 * Returns the first row whose result is not finite, or n. */
static size_t FN(layernorm)(const R *x, R *y, size_t n, size_t d, const agm_norm *nm, double eps)
{
    size_t bad = n;
    for (size_t i = 0; i < n; i++) {
        const R *r = x + i * d;
        int e = FN(row_exp)(r, d);
        double s = 0, ss = 0;
        for (size_t j = 0; j < d; j++)
            s += FN(sc)(r[j], e);
        R mean = (R)(s / d);
        for (size_t j = 0; j < d; j++)
            ss += (double)(FN(sc)(r[j], e) - mean) * (FN(sc)(r[j], e) - mean);
        R var = (R)(ss / d);
        R inv = (R)1 / RSQRT(var + (R)ldexp(eps, -2 * e)); // eps·2^-2e = inf: inv = 0, right
        if (nm->w)
            for (size_t j = 0; j < d; j++)
                y[i * d + j] = (FN(sc)(r[j], e) - mean) * inv * (R)nm->w[j] + (R)nm->b[j];
        else
            for (size_t j = 0; j < d; j++)
                y[i * d + j] = (FN(sc)(r[j], e) - mean) * inv;
        if (bad == n)
            bad = FN(norm_check)(y, i, d, var, n);
    }
    return bad;
}

/* modeling_llama.py LlamaRMSNorm: w * (x * rsqrt(mean(x^2) + eps)); with
 * one_plus GemmaRMSNorm: (x * rsqrt(...)) * (1 + w), 1 + w in R as HF's
 * float32 `1.0 + self.weight.float()`. Scaled as layernorm in the f64 pass.
 * Returns the first bad row, or n. */
static size_t FN(rmsnorm)(const R *x, R *y, size_t n, size_t d, const agm_norm *nm, double eps,
                          int one_plus)
{
    size_t bad = n;
    for (size_t i = 0; i < n; i++) {
        const R *r = x + i * d;
        int e = FN(row_exp)(r, d);
        double ss = 0;
        for (size_t j = 0; j < d; j++)
            ss += (double)FN(sc)(r[j], e) * FN(sc)(r[j], e);
        R ms = (R)(ss / d);
        R inv = (R)1 / RSQRT(ms + (R)ldexp(eps, -2 * e));
        if (one_plus)
            for (size_t j = 0; j < d; j++)
                y[i * d + j] = (FN(sc)(r[j], e) * inv) * ((R)1 + (R)nm->w[j]);
        else
            for (size_t j = 0; j < d; j++)
                y[i * d + j] = (R)nm->w[j] * (FN(sc)(r[j], e) * inv);
        if (bad == n)
            bad = FN(norm_check)(y, i, d, ms, n);
    }
    return bad;
}

/* activations.py: NewGELUActivation (tanh form), GELUActivation (erf),
 * ReLU, SiLU. */
static void FN(activate)(R *x, size_t cnt, agm_act act)
{
    const R c = (R)0.7978845608028654; /* sqrt(2/pi) */
    for (size_t i = 0; i < cnt; i++) {
        R v = x[i];
        switch (act) {
        case AGM_ACT_GELU_TANH:
            x[i] = (R)0.5 * v * ((R)1 + RTANH(c * (v + (R)0.044715 * v * v * v)));
            break;
        case AGM_ACT_GELU_ERF:
            x[i] = (R)0.5 * v * ((R)1 + RERF(v * (R)0.7071067811865476));
            break;
        case AGM_ACT_RELU:
            x[i] = v > 0 ? v : 0;
            break;
        case AGM_ACT_SILU:
            x[i] = v / ((R)1 + REXP(-v));
            break;
        }
    }
}

/* The model's norm `nm` (named `stem` + " output" in a fault) of x into y. */
static int FN(norm)(FN(ws) *s, const ag_model *m, const agm_norm *nm, const char *stem,
                    const R *x, R *y, size_t n, int layer)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, bad;
    if (g->norm == AG_NORM_LAYER)
        bad = FN(layernorm)(x, y, n, d, nm, g->norm_eps);
    else
        bad = FN(rmsnorm)(x, y, n, d, nm, g->norm_eps, g->norm == AG_NORM_RMS_1P);
    if (bad == n)
        return AG_OK;
    char what[96];
    snprintf(what, sizeof what, "%s output", stem);
    return set_fault(&s->fault, what, layer, -1, bad);
}

/* The fault at the first non-finite entry of x (rows of d values), if any. */
static int FN(check_rows)(FN(ws) *s, const R *x, size_t n, size_t d, const char *what,
                          int layer, int head)
{
    size_t k = FN(first_bad)(x, n * d);
    return k < n * d ? set_fault(&s->fault, what, layer, head, k / d) : AG_OK;
}

/* Check every head's probabilities, then hand X (n, d) and P (H, n, n) to
 * the callback as doubles: a callback never sees a non-finite value. */
static int FN(emit)(FN(ws) *s, const R *x, int layer, size_t n, size_t d, int H,
                    ag_layer_fn fn, void *user)
{
    for (int h = 0; h < H; h++) {
        int rc = FN(check_rows)(s, s->p + (size_t)h * n * n, n, n, "attention", layer, h);
        if (rc)
            return rc;
    }
    if (!fn)
        return AG_OK;
    ag_layer_view view = {.layer = layer, .n = n, .d = d, .n_head = H};
#if IS_F64
    view.x = x;
    view.attn = s->p;
#else
    for (size_t i = 0; i < n * d; i++)
        s->xd[i] = x[i];
    for (size_t i = 0; i < (size_t)H * n * n; i++)
        s->pd[i] = s->p[i];
    view.x = s->xd;
    view.attn = s->pd;
#endif
    return fn(&view, user);
}

static void FN(add)(R *acc, const R *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        acc[i] += x[i];
}

/* Columns of `heads` heads (agm_cols c) of each row of src (n rows of width
 * ld) into dst (n, heads·hd). */
static void FN(gather)(R *dst, const R *src, size_t n, size_t ld, agm_cols c, int heads, int hd)
{
    size_t w = (size_t)heads * hd;
    for (size_t i = 0; i < n; i++)
        for (int h = 0; h < heads; h++)
            memcpy(dst + i * w + (size_t)h * hd, src + i * ld + c.off + (size_t)h * c.stride,
                   (size_t)hd * sizeof(R));
}

/* Q, K, V (n, heads·hd each) of X: three projections, or one fused
 * projection split by agm_qkv_cols (GPT-2 and Phi-3 column blocks,
 * GPT-NeoX per-head q|k|v). */
static void FN(project_qkv)(const ag_model *m, const agm_layer *y, FN(ws) *s, const R *x, size_t n)
{
    const ag_model_config *g = &m->cfg;
    if (g->qkv == AG_QKV_SEPARATE) {
        FN(linear)(&y->q, x, n, s->q, s->w);
        FN(linear)(&y->k, x, n, s->k, s->w);
        FN(linear)(&y->v, x, n, s->v, s->w);
        return;
    }
    FN(linear)(&y->qkv, x, n, s->qkv, s->w);
    size_t ld = (size_t)y->qkv.out;
    FN(gather)(s->q, s->qkv, n, ld, agm_qkv_cols(g, 0), g->n_head, g->head_dim);
    FN(gather)(s->k, s->qkv, n, ld, agm_qkv_cols(g, 1), g->n_kv_head, g->head_dim);
    FN(gather)(s->v, s->qkv, n, ld, agm_qkv_cols(g, 2), g->n_kv_head, g->head_dim);
}

/* Layer l's attention of X into s->t (n, d): projections, OPT/DistilBERT's
 * scaled Q, RoPE, the kernel (scale, soft-capping, causal or sliding-window
 * mask, softmax, P·V), the callback, the output projection. */
static int FN(attention)(const ag_model *m, int l, FN(ws) *s, const R *x, size_t n,
                         ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->layers[l];
    int H = g->n_head, Hkv = g->n_kv_head, hd = g->head_dim, rd = g->rope.rotary_dim;
    double scale = g->attn_scale / (g->scale_by_inverse_layer ? l + 1 : 1);
    FN(project_qkv)(m, y, s, x, n);
    if (g->scale_query) { // modeling_opt.py q_proj(x)·scaling; DistilBERT q / √d_h
        for (size_t i = 0; i < n * (size_t)H * hd; i++)
            s->q[i] *= (R)scale;
        scale = 1;
    }
    if (g->positions == AG_POS_ROPE) {
        FN(agk_rope_apply)(s->q, n, (size_t)H * hd, H, hd, rd, s->cos, s->sin, 1);
        FN(agk_rope_apply)(s->k, n, (size_t)Hkv * hd, Hkv, hd, rd, s->cos, s->sin, 1);
    }
    agk_head c = {.n_head = H, .n_kv_head = Hkv, .head_dim = hd, .scale = scale,
                  .softcap = g->softcap, .causal = g->causal, .window = m->window[l]};
    FN(agk_attend)(&c, s->q, s->k, s->v, n, s->p, s->ctx);
    int rc = FN(emit)(s, x, l, n, (size_t)g->d_model, H, fn, user);
    if (rc == AG_OK)
        FN(linear)(&y->o, s->ctx, n, s->t, s->w);
    return rc;
}

/* The MLP of x into out (n, d): down(act(up x)), down(act(gate x)·up x),
 * or the same from Phi-3's gate_up (gate the first d_ff columns). */
static void FN(mlp)(const ag_model *m, const agm_layer *y, FN(ws) *s, const R *x, size_t n, R *out)
{
    const ag_model_config *g = &m->cfg;
    size_t ff = (size_t)g->d_ff, cnt = n * ff;
    const R *a = s->f1;
    if (g->mlp == AG_MLP_PLAIN) {
        FN(linear)(&y->up, x, n, s->f1, s->w);
        FN(activate)(s->f1, cnt, m->act);
    } else if (g->mlp == AG_MLP_GATED) {
        FN(linear)(&y->gate, x, n, s->f1, s->w);
        FN(linear)(&y->up, x, n, s->f2, s->w);
        FN(activate)(s->f1, cnt, m->act);
        for (size_t i = 0; i < cnt; i++)
            s->f1[i] *= s->f2[i];
    } else {
        FN(linear)(&y->up, x, n, s->f1, s->w); // (n, 2·d_ff)
        for (size_t i = 0; i < n; i++) {
            R *gate = s->f1 + i * 2 * ff, *up = gate + ff;
            FN(activate)(gate, ff, m->act);
            for (size_t j = 0; j < ff; j++)
                s->f2[i * ff + j] = up[j] * gate[j]; // modular_phi3.py up_states * act(gate)
        }
        a = s->f2;
    }
    FN(linear)(&y->down, a, n, out, s->w);
}

/* One block, every architecture (see ag_residual):
 *   PRE       X = n₁(h); h += o(attn(X)); h += mlp(n₂(h))
 *   POST      X = h; h = n₁(h + o(attn(X))); h = n₂(h + mlp(h))
 *   PARALLEL  X = n₁(h); h = (mlp(n₂(h)) + o(attn(X))) + h
 * with Gemma-2's sandwich norms on each sublayer's output before its add
 * (modular_gemma2.py Gemma2DecoderLayer). */
static int FN(block)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_arch *a = m->arch;
    const agm_layer *y = &m->layers[l];
    size_t nd = n * (size_t)g->d_model;
    int post = g->residual == AG_RESIDUAL_POST, sw = g->sandwich_norms, rc = AG_OK;
    if (!post && (rc = FN(norm)(s, m, &y->n1, a->norm1, s->h, s->xn, n, l)))
        return rc;
    if ((rc = FN(attention)(m, l, s, post ? s->h : s->xn, n, fn, user)) ||
        (sw && (rc = FN(norm)(s, m, &y->attn_out, a->attn_out_norm, s->t, s->t, n, l))))
        return rc;
    if (g->residual == AG_RESIDUAL_PARALLEL) { // modular_gpt_neox.py: mlp + attn + h
        if ((rc = FN(norm)(s, m, &y->n2, a->norm2, s->h, s->xn, n, l)))
            return rc;
        FN(mlp)(m, y, s, s->xn, n, s->t2);
        FN(add)(s->t2, s->t, nd);
        FN(add)(s->h, s->t2, nd);
        return AG_OK;
    }
    if (post) { // modeling_bert.py BertSelfOutput: LayerNorm(dense(x) + input)
        FN(add)(s->t, s->h, nd);
        if ((rc = FN(norm)(s, m, &y->n1, a->norm1, s->t, s->h, n, l)))
            return rc;
        FN(mlp)(m, y, s, s->h, n, s->t);
        FN(add)(s->t, s->h, nd); // BertOutput
        return FN(norm)(s, m, &y->n2, a->norm2, s->t, s->h, n, l);
    }
    FN(add)(s->h, s->t, nd);
    if ((rc = FN(norm)(s, m, &y->n2, a->norm2, s->h, s->xn, n, l)))
        return rc;
    FN(mlp)(m, y, s, s->xn, n, s->t);
    if (sw && (rc = FN(norm)(s, m, &y->mlp_out, a->mlp_out_norm, s->t, s->t, n, l)))
        return rc;
    FN(add)(s->h, s->t, nd);
    return AG_OK;
}

/* Learned position rows into pos (n, d): row position_offset + i, or
 * RoBERTa's create_position_ids_from_input_ids (modeling_roberta.py): pad
 * + the count of non-pad tokens so far, pad itself for a pad token. */
static void FN(positions)(const ag_model *m, const int32_t *ids, size_t n, R *pos)
{
    size_t d = (size_t)m->cfg.d_model, off = (size_t)m->cfg.position_offset, count = 0;
    int32_t pad = (int32_t)off - 1;
    for (size_t i = 0; i < n; i++) {
        size_t row = off + i;
        if (m->cfg.positions == AG_POS_PADDED)
            row = ids[i] == pad ? off - 1 : off + count++;
        CONV(&m->pos_emb, row * d, d, pos + i * d);
    }
}

/* Embeddings into s->h (n, d): GPT-2 wte + wpe; BERT family LN((word +
 * type0) + pos) (BertEmbeddings order); OPT project_in(word) + pos; LLaMA
 * family embed_tokens, times √d for Gemma (its normalizer in the pass's
 * type, modeling_gemma.py). Only the rows used are converted. */
static int FN(embed)(const ag_model *m, const int32_t *ids, size_t n, FN(ws) *s)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, de = (size_t)g->d_embed;
    R *e = m->proj_in.w.p ? s->e : s->h;     // (n, d_embed)
    R *pos = m->pos_emb.p ? s->t : NULL;      // (n, d) in the free projection buffer
    R *type = m->type_emb.p ? s->xn : NULL;   // (d) likewise
    for (size_t i = 0; i < n; i++)
        CONV(&m->tok_emb, (size_t)ids[i] * de, de, e + i * de);
    if (m->proj_in.w.p)
        FN(linear)(&m->proj_in, s->e, n, s->h, s->w);
    if (g->embed_scale != 1) {
        R sc = (R)g->embed_scale;
        for (size_t i = 0; i < n * d; i++)
            s->h[i] *= sc;
    }
    if (pos)
        FN(positions)(m, ids, n, pos);
    if (type)
        CONV(&m->type_emb, 0, d, type);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            R v = s->h[i * d + j];
            if (type)
                v += type[j];
            s->h[i * d + j] = pos ? v + pos[i * d + j] : v;
        }
    if (g->embed_norm)
        return FN(norm)(s, m, &m->emb_norm, m->arch->emb_norm, s->h, s->h, n, -1);
    return FN(check_rows)(s, s->h, n, d, "embedding sum", -1, -1);
}

static void FN(store)(double *dst, const R *src, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        dst[i] = src[i];
}

/* cos, sin of positions 0..n-1 (modeling_rope_utils.py inv_freq, dynamic
 * scaling for this n). */
static int FN(rope_tables)(const ag_model *m, size_t n, FN(ws) *s)
{
    const ag_rope *r = &m->cfg.rope;
    double *inv = malloc((size_t)r->rotary_dim / 2 * sizeof *inv);
    if (!inv)
        return AG_ENOMEM;
    ag_rope_inv_freq(r, n, inv);
    FN(agk_rope_tables)(inv, r->rotary_dim, n, s->cos, s->sin);
    free(inv);
    return AG_OK;
}

/* Hidden state `index` to the caller: into hidden (L+1, n, d) and/or to
 * opt->hidden_fn (as doubles: s->xd is free between layers). */
static int FN(give_hidden)(FN(ws) *s, const ag_forward_options *o, double *hidden, int index,
                           size_t n, size_t d)
{
    if (hidden)
        FN(store)(hidden + (size_t)index * n * d, s->h, n * d);
    if (!o->hidden_fn)
        return AG_OK;
#if IS_F64
    const double *h = s->h;
#else
    FN(store)(s->xd, s->h, n * d);
    const double *h = s->xd;
#endif
    return o->hidden_fn(index, n, d, h, o->hidden_user);
}

/* Layers in order; hidden states (L+1 of them) as HF's output_hidden_states. */
static int FN(run)(const ag_model *m, const int32_t *ids, size_t n, FN(ws) *s,
                   const ag_forward_options *o, ag_layer_fn fn, void *user, double *hidden)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model;
    int want_hidden = hidden || o->hidden_fn;
    int rc = FN(embed)(m, ids, n, s);
    if (rc == AG_OK && g->positions == AG_POS_ROPE)
        rc = FN(rope_tables)(m, n, s);
    for (int l = 0; rc == AG_OK && l < g->n_layer; l++) {
        if (want_hidden && (rc = FN(give_hidden)(s, o, hidden, l, n, d)))
            break;
        rc = FN(block)(m, l, s, n, fn, user);
        if (rc == AG_OK) // the block's output: an overflow in its MLP shows here
            rc = FN(check_rows)(s, s->h, n, d, "hidden state", l, -1);
    }
    if (rc || !want_hidden)
        return rc;
    if (g->final_norm) // GPT2Model ln_f, LlamaModel norm...: before the last append
        rc = FN(norm)(s, m, &m->final_norm, m->arch->final_norm, s->h, s->h, n, -1);
    if (rc == AG_OK)
        rc = FN(give_hidden)(s, o, hidden, g->n_layer, n, d);
    return rc;
}

static int FN(forward)(const ag_model *m, const int32_t *ids, size_t n,
                       const ag_forward_options *o, ag_layer_fn fn, void *user, double *hidden,
                       ag_error *err)
{
    FN(ws) s;
    if (FN(ws_alloc)(&s, m, n) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "forward pass: cannot allocate buffers for %zu tokens", n);
    int rc = FN(run)(m, ids, n, &s, o, fn, user, hidden);
    FN(ws_free)(&s);
    if (rc && s.fault.set)
        fault_error(&s.fault, IS_F64, err);
    else if (rc == AG_ENOMEM)
        ag_error_set(err, rc, "forward pass: out of memory");
    else if (rc)
        ag_error_set(err, rc, "forward pass stopped by a callback (status %d)", rc);
    return rc;
}

#undef FN
#undef CAT
#undef CAT2
