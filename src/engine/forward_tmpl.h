/* forward_tmpl.h — the forward pass, written once for a real type R and
 * included twice by forward.c: R = float (HF float32 semantics: float
 * activations, sgemm, float softmax/norms) and R = double (the whole pass in
 * double). Either way the weights are converted exactly from their stored
 * dtype to R one matrix at a time, into the pass's own scratch.
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
    R *t;      // (n, d) projection output before the residual add
    R *qkv;    // (n, 3d) GPT-2 fused c_attn output
    R *q;      // (n, H*hd)
    R *k, *v;  // (n, Hkv*hd)
    R *ctx;    // (n, H*hd) merged head outputs
    R *p;      // (H, n, n) attention probabilities of the current layer
    R *f1, *f2;// (n, d_ff) MLP activations
    R *cos, *sin; // (n, hd) RoPE tables
    R *w;      // (max_mat) one weight matrix converted to R (unused when
               // an F32 matrix is used in place by the f32 pass)
    double *xd, *pd; // (n, d), (H, n, n) double views for the callback (f32 only)
    fwd_fault fault; // where the pass stopped on a non-finite value
} FN(ws);

static void FN(ws_free)(FN(ws) *s)
{
    R *all[] = {s->h, s->xn, s->t, s->qkv, s->q, s->k, s->v, s->ctx, s->p,
                s->f1, s->f2, s->cos, s->sin, s->w};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    free(s->xd);
    free(s->pd);
}

static int FN(ws_alloc)(FN(ws) *s, const ag_model *m, size_t n)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, dq = (size_t)g->n_head * g->head_dim,
           dkv = (size_t)g->n_kv_head * g->head_dim, H = (size_t)g->n_head;
    memset(s, 0, sizeof *s);
    int ok = (s->h = calloc(n * d, sizeof(R))) && (s->xn = calloc(n * d, sizeof(R))) &&
             (s->t = calloc(n * d, sizeof(R))) && (s->q = calloc(n * dq, sizeof(R))) &&
             (s->k = calloc(n * dkv, sizeof(R))) && (s->v = calloc(n * dkv, sizeof(R))) &&
             (s->ctx = calloc(n * dq, sizeof(R))) && (s->p = calloc(H * n * n, sizeof(R))) &&
             (s->f1 = calloc(n * (size_t)g->d_ff, sizeof(R))) &&
             (s->f2 = calloc(n * (size_t)g->d_ff, sizeof(R)));
    if (ok && g->arch == AG_ARCH_GPT2)
        ok = (s->qkv = calloc(n * 3 * d, sizeof(R))) != NULL;
    if (ok && g->arch == AG_ARCH_LLAMA)
        ok = (s->cos = calloc(n * (size_t)g->head_dim, sizeof(R))) &&
             (s->sin = calloc(n * (size_t)g->head_dim, sizeof(R)));
    if (ok) // calloc: pages never written (all-F32 model, f32 pass) stay unmapped
        ok = (s->w = calloc(m->max_mat ? m->max_mat : 1, sizeof(R))) != NULL;
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
 * biased variance. x, y (n, d); may alias. The f64 pass computes on
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
        for (size_t j = 0; j < d; j++)
            y[i * d + j] = (FN(sc)(r[j], e) - mean) * inv * (R)nm->w[j] + (R)nm->b[j];
        if (bad == n)
            bad = FN(norm_check)(y, i, d, var, n);
    }
    return bad;
}

/* modeling_llama.py LlamaRMSNorm: w * (x * rsqrt(mean(x^2) + eps)), scaled
 * as layernorm in the f64 pass. Returns the first bad row, or n. */
static size_t FN(rmsnorm)(const R *x, R *y, size_t n, size_t d, const agm_norm *nm, double eps)
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

/* Row-wise softmax of one head's scores s (n, n) in place; with `causal`
 * the entries j > i get exactly 0, as HF's finfo.min mask gives after exp. */
static void FN(softmax)(R *s, size_t n, int causal)
{
    for (size_t i = 0; i < n; i++) {
        R *r = s + i * n;
        size_t m = causal ? i + 1 : n;
        R mx = r[0];
        for (size_t j = 1; j < m; j++)
            mx = r[j] > mx ? r[j] : mx;
        double sum = 0;
        for (size_t j = 0; j < m; j++)
            sum += (r[j] = REXP(r[j] - mx));
        R inv = (R)sum;
        for (size_t j = 0; j < m; j++)
            r[j] /= inv;
        for (size_t j = m; j < n; j++)
            r[j] = 0;
    }
}

/* Scaled dot-product attention, every head: p (H, n, n) = softmax(scale ·
 * Q_h K_g^T + mask), ctx (n, H*hd) = P_h V_g with g = h / (H / Hkv)
 * (modeling_llama.py repeat_kv; H = Hkv for GPT-2 and BERT). q (n, H*hd),
 * k, v (n, Hkv*hd). */
static void FN(attend)(const R *q, const R *k, const R *v, size_t n, int H, int Hkv,
                       int hd, R scale, int causal, R *p, R *ctx)
{
    int lq = H * hd, lkv = Hkv * hd;
    for (int h = 0; h < H; h++) {
        int g = h / (H / Hkv);
        R *ph = p + (size_t)h * n * n; // (n, n)
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, hd, scale,
             q + h * hd, lq, k + g * hd, lkv, 0, ph, (int)n);
        FN(softmax)(ph, n, causal);
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, hd, (int)n, 1, ph,
             (int)n, v + g * hd, lkv, 0, ctx + h * hd, lq);
    }
}

/* A norm into y, or the fault naming it and the first row it could not
 * produce (rms: RMSNorm, else LayerNorm). */
static int FN(norm)(FN(ws) *s, int rms, const R *x, R *y, size_t n, size_t d,
                    const agm_norm *nm, double eps, const char *what, int layer)
{
    size_t bad = rms ? FN(rmsnorm)(x, y, n, d, nm, eps) : FN(layernorm)(x, y, n, d, nm, eps);
    return bad < n ? set_fault(&s->fault, what, layer, -1, bad) : AG_OK;
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

/* modeling_gpt2.py GPT2Block: h += attn(ln_1(h)); h += mlp(ln_2(h)).
 * GPT2Attention: c_attn -> split Q|K|V (head h = columns h*hd.. in each
 * block), _attn scales by 1/sqrt(hd) (and 1/(layer+1) if
 * scale_attn_by_inverse_layer_idx), causal mask, softmax. */
static int FN(block_gpt2)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->layers[l];
    size_t d = (size_t)g->d_model;
    int rc = FN(norm)(s, 0, s->h, s->xn, n, d, &y->ln1, g->norm_eps, "ln_1 output", l);
    if (rc)
        return rc;
    FN(linear)(&y->qkv, s->xn, n, s->qkv, s->w); // (n, 3d)
    for (size_t i = 0; i < n; i++) {
        memcpy(s->q + i * d, s->qkv + i * 3 * d, d * sizeof(R));
        memcpy(s->k + i * d, s->qkv + i * 3 * d + d, d * sizeof(R));
        memcpy(s->v + i * d, s->qkv + i * 3 * d + 2 * d, d * sizeof(R));
    }
    double sc = g->scale_attn_weights ? 1.0 / sqrt((double)g->head_dim) : 1.0;
    if (g->scale_by_inverse_layer)
        sc /= (double)(l + 1);
    FN(attend)(s->q, s->k, s->v, n, g->n_head, g->n_head, g->head_dim, (R)sc, 1, s->p, s->ctx);
    if ((rc = FN(emit)(s, s->xn, l, n, d, g->n_head, fn, user)) != AG_OK)
        return rc;
    FN(linear)(&y->o, s->ctx, n, s->t, s->w);
    FN(add)(s->h, s->t, n * d);
    if ((rc = FN(norm)(s, 0, s->h, s->xn, n, d, &y->ln2, g->norm_eps, "ln_2 output", l)) != AG_OK)
        return rc;
    FN(linear)(&y->up, s->xn, n, s->f1, s->w); // (n, d_ff)
    FN(activate)(s->f1, n * (size_t)g->d_ff, m->act);
    FN(linear)(&y->down, s->f1, n, s->t, s->w);
    FN(add)(s->h, s->t, n * d);
    return AG_OK;
}

/* modeling_bert.py BertLayer (post-LN): a = LN(h + O(attn(h)));
 * h = LN(a + down(act(up(a)))). BertSelfAttention scales by 1/sqrt(hd), no
 * mask for one unpadded sequence. */
static int FN(block_bert)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->layers[l];
    size_t d = (size_t)g->d_model;
    FN(linear)(&y->q, s->h, n, s->q, s->w);
    FN(linear)(&y->k, s->h, n, s->k, s->w);
    FN(linear)(&y->v, s->h, n, s->v, s->w);
    R sc = (R)(1.0 / sqrt((double)g->head_dim));
    FN(attend)(s->q, s->k, s->v, n, g->n_head, g->n_head, g->head_dim, sc, 0, s->p, s->ctx);
    int rc = FN(emit)(s, s->h, l, n, d, g->n_head, fn, user);
    if (rc)
        return rc;
    FN(linear)(&y->o, s->ctx, n, s->t, s->w);
    FN(add)(s->t, s->h, n * d); // BertSelfOutput: LayerNorm(dense(x) + input)
    if ((rc = FN(norm)(s, 0, s->t, s->h, n, d, &y->ln1, g->norm_eps,
                       "attention.output.LayerNorm output", l)) != AG_OK)
        return rc;
    FN(linear)(&y->up, s->h, n, s->f1, s->w);
    FN(activate)(s->f1, n * (size_t)g->d_ff, m->act);
    FN(linear)(&y->down, s->f1, n, s->t, s->w);
    FN(add)(s->t, s->h, n * d); // BertOutput
    return FN(norm)(s, 0, s->t, s->h, n, d, &y->ln2, g->norm_eps, "output.LayerNorm output", l);
}

/* modeling_llama.py apply_rotary_pos_emb: x*cos + rotate_half(x)*sin,
 * rotate_half([x1, x2]) = [-x2, x1], on each of `heads` heads of x (n, heads*hd). */
static void FN(rope)(R *x, size_t n, int heads, int hd, const R *cos, const R *sin)
{
    int half = hd / 2;
    for (size_t i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            R *r = x + i * (size_t)heads * hd + (size_t)h * hd;
            const R *c = cos + i * hd, *sn = sin + i * hd;
            for (int j = 0; j < half; j++) {
                R a = r[j], b = r[j + half];
                r[j] = a * c[j] - b * sn[j];
                r[j + half] = b * c[j + half] + a * sn[j + half];
            }
        }
}

/* LlamaRotaryEmbedding: inv_freq[j] = theta^(-2j/hd), angle = pos*inv_freq
 * duplicated over both halves. Computed in double (as the fixtures do) and
 * rounded to R. cos, sin (n, hd). */
static void FN(rope_tables)(R *cos_t, R *sin_t, size_t n, int hd, double theta)
{
    int half = hd / 2;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < half; j++) {
            double a = (double)i * pow(theta, -2.0 * j / hd);
            cos_t[i * hd + j] = cos_t[i * hd + j + half] = (R)cos(a);
            sin_t[i * hd + j] = sin_t[i * hd + j + half] = (R)sin(a);
        }
}

/* LlamaDecoderLayer: h += o(attn(rms1(h))); h += down(silu(gate(x)) * up(x)),
 * x = rms2(h). Scores scaled by head_dim^-0.5, causal. */
static int FN(block_llama)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->layers[l];
    size_t d = (size_t)g->d_model, cnt = n * (size_t)g->d_ff;
    int rc = FN(norm)(s, 1, s->h, s->xn, n, d, &y->ln1, g->norm_eps, "input_layernorm output", l);
    if (rc)
        return rc;
    FN(linear)(&y->q, s->xn, n, s->q, s->w);
    FN(linear)(&y->k, s->xn, n, s->k, s->w);
    FN(linear)(&y->v, s->xn, n, s->v, s->w);
    FN(rope)(s->q, n, g->n_head, g->head_dim, s->cos, s->sin);
    FN(rope)(s->k, n, g->n_kv_head, g->head_dim, s->cos, s->sin);
    R sc = (R)(1.0 / sqrt((double)g->head_dim));
    FN(attend)(s->q, s->k, s->v, n, g->n_head, g->n_kv_head, g->head_dim, sc, 1, s->p, s->ctx);
    if ((rc = FN(emit)(s, s->xn, l, n, d, g->n_head, fn, user)) != AG_OK)
        return rc;
    FN(linear)(&y->o, s->ctx, n, s->t, s->w);
    FN(add)(s->h, s->t, n * d);
    if ((rc = FN(norm)(s, 1, s->h, s->xn, n, d, &y->ln2, g->norm_eps,
                       "post_attention_layernorm output", l)) != AG_OK)
        return rc;
    FN(linear)(&y->gate, s->xn, n, s->f1, s->w);
    FN(linear)(&y->up, s->xn, n, s->f2, s->w);
    FN(activate)(s->f1, cnt, m->act);
    for (size_t i = 0; i < cnt; i++)
        s->f1[i] *= s->f2[i];
    FN(linear)(&y->down, s->f1, n, s->t, s->w);
    FN(add)(s->h, s->t, n * d);
    return AG_OK;
}

/* Embeddings into s->h (n, d): GPT-2 wte + wpe; BERT LN((word + type0) + pos)
 * (BertEmbeddings order); LLaMA embed_tokens. Only the rows used are
 * converted: the tokens' rows, positions 0..n-1, token type 0. */
static int FN(embed)(const ag_model *m, const int32_t *ids, size_t n, FN(ws) *s)
{
    size_t d = (size_t)m->cfg.d_model;
    R *pos = m->pos_emb.p ? s->t : NULL;   // (n, d) in the free projection buffer
    R *type = m->type_emb.p ? s->xn : NULL; // (d) likewise
    for (size_t i = 0; i < n; i++)
        CONV(&m->tok_emb, (size_t)ids[i] * d, d, s->h + i * d);
    if (pos)
        CONV(&m->pos_emb, 0, n * d, pos);
    if (type)
        CONV(&m->type_emb, 0, d, type);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            R v = s->h[i * d + j];
            if (type)
                v += type[j];
            s->h[i * d + j] = pos ? v + pos[i * d + j] : v;
        }
    if (m->cfg.arch == AG_ARCH_BERT)
        return FN(norm)(s, 0, s->h, s->h, n, d, &m->emb_ln, m->cfg.norm_eps,
                        "embeddings.LayerNorm output", -1);
    return FN(check_rows)(s, s->h, n, d, "embedding sum", -1, -1);
}

static void FN(store)(double *dst, const R *src, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        dst[i] = src[i];
}

/* Layers in order; hidden (L+1, n, d) as HF's output_hidden_states. */
static int FN(run)(const ag_model *m, const int32_t *ids, size_t n, FN(ws) *s,
                   ag_layer_fn fn, void *user, double *hidden)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, nd = n * d;
    int rc = FN(embed)(m, ids, n, s);
    if (rc)
        return rc;
    if (g->arch == AG_ARCH_LLAMA)
        FN(rope_tables)(s->cos, s->sin, n, g->head_dim, g->rope_theta);
    for (int l = 0; l < g->n_layer; l++) {
        if (hidden)
            FN(store)(hidden + (size_t)l * nd, s->h, nd);
        rc = g->arch == AG_ARCH_GPT2   ? FN(block_gpt2)(m, l, s, n, fn, user)
             : g->arch == AG_ARCH_BERT ? FN(block_bert)(m, l, s, n, fn, user)
                                       : FN(block_llama)(m, l, s, n, fn, user);
        if (rc == AG_OK) // the block's output: an overflow in its MLP shows here
            rc = FN(check_rows)(s, s->h, n, d, "hidden state", l, -1);
        if (rc)
            return rc;
    }
    if (!hidden)
        return AG_OK;
    if (g->arch == AG_ARCH_GPT2) // GPT2Model.forward: ln_f before the last append
        rc = FN(norm)(s, 0, s->h, s->h, n, d, &m->final_norm, g->norm_eps, "ln_f output", -1);
    else if (g->arch == AG_ARCH_LLAMA) // LlamaModel.forward: self.norm likewise
        rc = FN(norm)(s, 1, s->h, s->h, n, d, &m->final_norm, g->norm_eps, "norm output", -1);
    if (rc == AG_OK)
        FN(store)(hidden + (size_t)g->n_layer * nd, s->h, nd);
    return rc;
}

static int FN(forward)(const ag_model *m, const int32_t *ids, size_t n,
                       ag_layer_fn fn, void *user, double *hidden, ag_error *err)
{
    FN(ws) s;
    if (FN(ws_alloc)(&s, m, n) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "forward pass: cannot allocate buffers for %zu tokens", n);
    int rc = FN(run)(m, ids, n, &s, fn, user, hidden);
    FN(ws_free)(&s);
    if (rc && s.fault.what)
        fault_error(&s.fault, IS_F64, err);
    else if (rc)
        ag_error_set(err, rc, "forward pass stopped by the layer callback (status %d)", rc);
    return rc;
}

#undef FN
#undef CAT
#undef CAT2
