/* Internal prefix: agm_ (module src/engine/). */
/* forward_tmpl.h — the forward pass, written once for a real type R and
 * included twice by forward.c: R = float (HF float32 semantics: float
 * activations, sgemm, float softmax/norms) and R = double (the whole pass in
 * double). Either way the weights are converted exactly from their stored
 * dtype to R one matrix at a time, into the pass's own scratch (an aligned
 * float32 matrix is used in place by the f32 pass).
 *
 * One pass for every architecture: the block follows the normalised config
 * (norm kind, residual wiring, sandwich norms, Q/K/V and MLP layouts,
 * positions), never the model_type. Attention itself (RoPE, scale,
 * soft-capping, masks, softmax, the value mix) is the attention kernel's
 * (attention_kernel.h).
 *
 * Parallel, deterministic (docs/engine.md, "Threads"): every step of a layer
 * is split into tasks of opt->pool by a fixed rule — a projection by blocks
 * of lin_cols(out) output columns (forward.c), attention by head, row-wise steps (norms,
 * residual adds, gating) by blocks of ROW_BLOCK tokens — and each task
 * writes only its own part, computed as it would be alone: the bytes do not
 * depend on the pool.
 *
 * Before inclusion define: R, SFX (name suffix), GEMM_BIAS (agm_sgemm_bias
 * or gemm_bias_f64, same arguments), RSQRT/REXP/RTANH/RERF (math functions
 * of R), CONV (agm_to_float/double), IS_F64 (0/1).
 * Sums (means, variances, softmax denominators) are accumulated in double in
 * both precisions; torch's float reductions are pairwise/vectorised and thus
 * closer to the exact sum than a naive float loop would be. */

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

#define NO_ROW ((size_t)-1) /* no bad row */

/* What an encoder–decoder pass shares between its two stacks: the
 * encoder's last hidden state (after its final norm) and the decoder's
 * cross-attention buffers over its n_src rows. */
typedef struct {
    size_t n_src;
    R *enc;        // (n_src, d) the encoder's output
    double *encd;  // (n_src, d) the same as doubles (the views' x_kv)
    R *k, *v;      // (n_src, H·hd) one layer's cross-attention keys, values
    R *p;          // (H, n_tgt, n_src) its probabilities
    double *pd;    // (H, n_tgt, n_src) as doubles for the callback (f32), or NULL
    double *sd;    // (H, n_tgt, n_src) its scores for the callback, or NULL
    double *qd, *kd; // (H, n_tgt, hd), (H, n_src, hd) its q and k rows for the
                     // callback (o->want_qk), or NULL
} FN(xws);

typedef struct {
    R *h;      // (n, d) residual stream
    R *xn;     // (n, d) normalised block input (attention input X)
    R *t;      // (n, d) a sublayer's output before the residual add
    R *t2;     // (n, d) the MLP output of a parallel block
    R *e;      // (n, d_embed) token embeddings before project_in (OPT)
    R *qkv;    // (n, (H + 2·Hkv)·hd) fused Q/K/V projection output
    R *q;      // (n, H*hd) separate projections
    R *k, *v;  // (n, Hkv*hd)
    R *ctx;    // (n, H*hd) merged head outputs
    R *p;      // (H, n, n) attention probabilities of the current layer
    R *f1;     // (n, d_ff), (n, 2·d_ff) for a fused gate_up
    R *f2;     // (n, d_ff)
    R *cos, *sin; // (n, rotary_dim/2) RoPE tables
    R *cos2, *sin2; // the same of cfg.rope_local (Gemma-3's sliding layers), or NULL
    R *rl;     // (n, n_expert) router logits, then probabilities (MoE only)
    R *xe, *ye; // (n, d) one expert's gathered input rows and its output
    R *wt;     // (n, top_k) the chosen experts' weights
    R *wr;     // (n) the weights of the rows routed to one expert
    int *sel;  // (n, top_k) the chosen experts
    size_t *idx; // (n) the rows routed to one expert
    R *w;      // (max_mat) one weight matrix converted to R (unused when
               // an F32 matrix is used in place by the f32 pass)
    double *xd, *pd; // (n, d), (H, n, n) double views for the callback (f32 only)
    double *sd;      // (H, n, n) the scores for the callback (o->want_scores), or NULL
    double *qd, *kd; // (H, n, hd) each query head's q and k rows for the callback
                     // (o->want_qk), or NULL
    double *yd;      // (n, d) the attention block's output for o->block_fn, or NULL
    const ag_forward_options *o; // the pass's options (block_fn)
    ag_pool *pool;   // opt->pool (NULL: the calling thread)
    int workers;     // its threads: one scratch each
    R *scr;          // (workers, scr_len): a product's packed weights, a head's keys and values
    size_t scr_len;
    size_t *bad;     // (max(H, row blocks)) each task's first non-finite row, or NO_ROW
    fwd_fault fault; // where the pass stopped on a non-finite value
    R *pb;           // (H, n, n) T5's relative position bias, or NULL
    FN(xws) *x;      // an encoder–decoder pass's shared buffers, or NULL
} FN(ws);

static void FN(ws_free)(FN(ws) *s)
{
    R *all[] = {s->h, s->xn, s->t, s->t2, s->e, s->qkv, s->q, s->k, s->v, s->ctx, s->p,
                s->f1, s->f2, s->cos, s->sin, s->cos2, s->sin2, s->w, s->scr,
                s->rl, s->xe, s->ye, s->wt, s->wr, s->pb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    free(s->xd);
    free(s->pd);
    free(s->sd);
    free(s->qd);
    free(s->kd);
    free(s->yd);
    free(s->bad);
    free(s->sel);
    free(s->idx);
}

/* cnt zeroed values of R (zalloc) when `need`, else leave NULL; 0 on
 * failure. */
static int FN(want)(R **p, int need, size_t cnt)
{
    return !need || (*p = zalloc(cnt * sizeof(R))) != NULL;
}

/* Per-worker scratch, in R values, 64-byte aligned (the sgemm kernel's
 * packed panels are read with aligned loads). */
static size_t FN(scratch_len)(const ag_model_config *g, size_t n)
{
    agk_head c = {.head_dim = g->head_dim};
    size_t a = FN(agk_attend_scratch)(&c, n), b = IS_F64 ? 0 : agm_sgemm_scratch(LIN_COLS_MAX);
    size_t len = (a > b ? a : b) + 1, per_line = 64 / sizeof(R);
    return (len + per_line - 1) / per_line * per_line;
}

/* The widest MLP: dense, an expert, the shared expert. */
static size_t FN(ff_max)(const ag_model_config *g)
{
    int ff = g->d_ff > g->d_ff_expert ? g->d_ff : g->d_ff_expert;
    return (size_t)(ff > g->d_ff_shared ? ff : g->d_ff_shared);
}

/* The MoE buffers (none without experts). */
static int FN(ws_moe)(FN(ws) *s, const ag_model_config *g, size_t n)
{
    size_t E = (size_t)g->n_expert, K = (size_t)g->top_k, d = (size_t)g->d_model;
    if (!E)
        return 1;
    return FN(want)(&s->rl, 1, n * E) && FN(want)(&s->xe, 1, n * d) && FN(want)(&s->ye, 1, n * d) &&
           FN(want)(&s->wt, 1, n * K) && FN(want)(&s->wr, 1, n) &&
           (s->sel = calloc(n * K, sizeof *s->sel)) && (s->idx = calloc(n, sizeof *s->idx));
}

static int FN(ws_alloc)(FN(ws) *s, const ag_model *m, size_t n, size_t keys, ag_pool *pool,
                        int want_pd, int want_sd, int want_qk, int f32_attn)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, dq = (size_t)g->n_head * g->head_dim,
           dkv = (size_t)g->n_kv_head * g->head_dim, H = (size_t)g->n_head, ff = FN(ff_max)(g),
           half = (size_t)g->rope.rotary_dim / 2, blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK;
    int rope = g->positions == AG_POS_ROPE, local = g->rope_local.rotary_dim > 0,
        fused = g->mlp == AG_MLP_GATED_FUSED,
        sep = g->qkv == AG_QKV_SEPARATE;
    memset(s, 0, sizeof *s);
    s->pool = pool;
    s->workers = ag_pool_threads(pool);
    s->scr_len = FN(scratch_len)(g, keys);
    int ok = FN(want)(&s->h, 1, n * d) && FN(want)(&s->xn, 1, n * d) && FN(want)(&s->t, 1, n * d) &&
             FN(want)(&s->t2, g->residual == AG_RESIDUAL_PARALLEL, n * d) &&
             FN(want)(&s->e, m->proj_in.w.p != NULL, n * (size_t)g->d_embed) &&
             FN(want)(&s->qkv, !sep, n * (dq + 2 * dkv)) && FN(want)(&s->q, sep, n * dq) &&
             FN(want)(&s->k, sep, n * dkv) && FN(want)(&s->v, sep, n * dkv) &&
             FN(want)(&s->ctx, 1, n * dq) && FN(want)(&s->p, 1, H * n * n) &&
             FN(want)(&s->f1, 1, n * ff * (fused ? 2 : 1)) &&
             FN(want)(&s->f2, g->mlp != AG_MLP_PLAIN, n * ff) &&
             FN(want)(&s->cos, rope, n * half) && FN(want)(&s->sin, rope, n * half) &&
             FN(want)(&s->cos2, rope && local, n * half) && FN(want)(&s->sin2, rope && local, n * half) &&
             // calloc: pages never written (all-F32 model, f32 pass) stay unmapped
             (s->w = calloc(m->max_mat ? m->max_mat : 1, sizeof(R))) &&
             (s->scr = aligned_alloc(64, (size_t)s->workers * s->scr_len * sizeof(R))) &&
             // a per-head QK-norm runs n·H rows: at most blocks·H blocks
             (s->bad = malloc((blocks + 1) * H * sizeof *s->bad)) && FN(ws_moe)(s, g, n) &&
             FN(want)(&s->pb, g->positions == AG_POS_RELATIVE, H * n * n);
    if (ok && want_sd && want_pd) // every entry written by the heads (masked ones −inf)
        ok = (s->sd = malloc(H * n * n * sizeof(double))) != NULL;
    if (ok && want_qk && want_pd) // family K's only: not with the scores alone
        ok = (s->qd = malloc(n * dq * sizeof(double))) && (s->kd = malloc(n * dq * sizeof(double)));
    if (ok && !IS_F64) // X for the callbacks and hidden states; P only for a layer callback
        ok = (s->xd = zalloc(n * d * sizeof(double))) &&
             (!want_pd || f32_attn || (s->pd = zalloc(H * n * n * sizeof(double))));
    if (!ok)
        FN(ws_free)(s);
    return ok ? AG_OK : AG_ENOMEM;
}

/* The scratch of the thread running a task: a nested (in-place) run may
 * report a worker number of an outer pool, and runs alone. */
static R *FN(scratch)(const FN(ws) *s, int worker)
{
    return s->scr + (size_t)(worker % s->workers) * s->scr_len;
}

/* ---- rows in parallel --------------------------------------------------- */

/* Rows [r0, r1) of a row-wise step; returns the first row whose result is
 * not finite, or NO_ROW. */
typedef size_t (*FN(rows_fn))(void *user, size_t r0, size_t r1);

typedef struct {
    FN(rows_fn) fn;
    void *user;
    size_t n;
    size_t *bad;
} FN(rows_job);

static int FN(rows_task)(size_t t, int worker, void *user)
{
    (void)worker;
    FN(rows_job) *j = user;
    size_t r0 = t * ROW_BLOCK, r1 = r0 + ROW_BLOCK < j->n ? r0 + ROW_BLOCK : j->n;
    j->bad[t] = j->fn(j->user, r0, r1);
    return 0;
}

/* fn over n rows in blocks of ROW_BLOCK on the pool; the first bad row of
 * all (the same for any pool), or NO_ROW. */
static size_t FN(par_rows)(FN(ws) *s, size_t n, FN(rows_fn) fn, void *user)
{
    size_t blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK;
    FN(rows_job) j = {fn, user, n, s->bad};
    ag_pool_run(s->pool, blocks, FN(rows_task), &j);
    for (size_t t = 0; t < blocks; t++)
        if (s->bad[t] != NO_ROW)
            return s->bad[t];
    return NO_ROW;
}

/* acc[i] += x[i] (float: vmath.h's, vectorised): a residual add. */
static void FN(add_vec)(R *acc, const R *x, size_t cnt)
{
#if IS_F64
    for (size_t i = 0; i < cnt; i++)
        acc[i] += x[i];
#else
    agm_add_f32(acc, x, cnt);
#endif
}

/* acc (rows of d) += x, or, with mul, acc *= x. */
typedef struct {
    R *acc;
    const R *x;
    size_t d;
    int mul;
} FN(ew_job);

static size_t FN(ew_rows)(void *user, size_t r0, size_t r1)
{
    FN(ew_job) *j = user;
    R *acc = j->acc + r0 * j->d;
    const R *x = j->x + r0 * j->d;
    size_t cnt = (r1 - r0) * j->d;
    if (j->mul)
        for (size_t i = 0; i < cnt; i++)
            acc[i] *= x[i];
    else
        FN(add_vec)(acc, x, cnt);
    return NO_ROW;
}

static void FN(add)(FN(ws) *s, R *acc, const R *x, size_t n, size_t d)
{
    FN(ew_job) j = {acc, x, d, 0};
    FN(par_rows)(s, n, FN(ew_rows), &j);
}

static void FN(mul)(FN(ws) *s, R *acc, const R *x, size_t n, size_t d)
{
    FN(ew_job) j = {acc, x, d, 1};
    FN(par_rows)(s, n, FN(ew_rows), &j);
}

/* DINOv2's Dinov2LayerScale (modeling_dinov2.py 015e6876): a branch's
 * output rows times lambda1 (d) before the residual add; ls NULL: none. */
static void FN(layer_scale)(R *t, const float *ls, size_t n, size_t d)
{
    for (size_t i = 0; ls && i < n; i++)
        for (size_t c = 0; c < d; c++)
            t[i * d + c] *= (R)ls[c];
}

/* Phi-3's gated rows: out = up · act(gate), gate_up (n, 2·ff) with the
 * activation applied to its gate half already. */
typedef struct {
    const R *gate_up;
    R *out;
    size_t ff;
} FN(gate_up_job);

static size_t FN(gate_up_rows)(void *user, size_t r0, size_t r1)
{
    FN(gate_up_job) *j = user;
    for (size_t i = r0; i < r1; i++) {
        const R *gate = j->gate_up + i * 2 * j->ff, *up = gate + j->ff;
        for (size_t c = 0; c < j->ff; c++)
            j->out[i * j->ff + c] = up[c] * gate[c]; // modular_phi3.py up_states * act(gate)
    }
    return NO_ROW;
}

/* ---- projections -------------------------------------------------------- */

/* Elements [i·CONV_CHUNK, ...) of a stored matrix into R, one task each. */
typedef struct {
    const agm_tensor *t;
    R *dst;
} FN(conv_job);

static int FN(conv_task)(size_t i, int worker, void *user)
{
    (void)worker;
    FN(conv_job) *j = user;
    size_t i0 = i * CONV_CHUNK, cnt = j->t->n - i0 < CONV_CHUNK ? j->t->n - i0 : CONV_CHUNK;
    CONV(j->t, i0, cnt, j->dst + i0);
    return 0;
}

/* A stored matrix as R: stored F32 used in place by the f32 pass when it
 * can be, anything else converted exactly into s->w (t->n values). */
static const R *FN(wget)(FN(ws) *s, const agm_tensor *t)
{
#if !IS_F64
    const float *w = agm_f32_in_place(t);
    if (w)
        return w;
#endif
    FN(conv_job) j = {t, s->w};
    ag_pool_run(s->pool, (t->n + CONV_CHUNK - 1) / CONV_CHUNK, FN(conv_task), &j);
    return s->w;
}

/* activations.py: NewGELUActivation (tanh form), GELUActivation (erf),
 * ReLU, SiLU. The f32 tanh form is gelu.h's (tanh in double, rounded). */
static void FN(activate)(R *x, size_t cnt, agm_act act)
{
    const R c = (R)0.7978845608028654; /* sqrt(2/pi) */
    switch (act) {
    case AGM_ACT_GELU_TANH:
#if IS_F64
        for (size_t i = 0; i < cnt; i++)
            x[i] = (R)0.5 * x[i] * ((R)1 + RTANH(c * (x[i] + (R)0.044715 * x[i] * x[i] * x[i])));
#else
        (void)c;
        agm_gelu_tanh_f32(x, cnt);
#endif
        break;
    case AGM_ACT_GELU_ERF:
        for (size_t i = 0; i < cnt; i++)
            x[i] = (R)0.5 * x[i] * ((R)1 + RERF(x[i] * (R)0.7071067811865476));
        break;
    case AGM_ACT_RELU:
        for (size_t i = 0; i < cnt; i++)
            x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case AGM_ACT_QUICK_GELU: /* activations.py QuickGELUActivation: x * sigmoid(1.702 x) */
        for (size_t i = 0; i < cnt; i++)
            x[i] = x[i] / ((R)1 + REXP((R)-1.702 * x[i]));
        break;
    case AGM_ACT_SILU:
        for (size_t i = 0; i < cnt; i++)
            x[i] = x[i] / ((R)1 + REXP(-x[i]));
        break;
    case AGM_ACT_BLOOM_GELU: // modeling_bloom.py bloom_gelu_forward, its constants
        for (size_t i = 0; i < cnt; i++)
            x[i] = x[i] * (R)0.5 *
                   ((R)1 + RTANH((R)0.79788456 * x[i] * ((R)1 + (R)0.044715 * x[i] * x[i])));
        break;
    }
}

/* y (n, out) = x (n, in) @ W + b, then the activation on output columns
 * [0, act_cols). nn.Linear [out,in] is used transposed (F.linear:
 * x @ W^T + b); Conv1D [in,out] as is (pytorch_utils.Conv1D). */
typedef struct {
    const FN(ws) *s;
    const agm_lin *L;
    const R *w, *x;
    size_t n;
    R *y;
    agm_act act;
    size_t act_cols;
} FN(lin_job);

/* Output columns [t·cols, +cols) of every row (cols = lin_cols(out)) with their bias
 * (GEMM_BIAS), then their activation while they are in cache. */
static int FN(lin_task)(size_t t, int worker, void *user)
{
    const FN(lin_job) *j = user;
    const agm_lin *L = j->L;
    size_t in = (size_t)L->in, out = (size_t)L->out, cols = lin_cols(out), j0 = t * cols;
    size_t nb = out - j0 < cols ? out - j0 : cols;
    const R *w = L->linear ? j->w + j0 * in : j->w + j0;
    GEMM_BIAS(L->linear, j->n, nb, in, j->x, in, w, L->linear ? in : out, L->b ? L->b + j0 : NULL,
              j->y + j0, out, FN(scratch)(j->s, worker));
    size_t act_end = j->act_cols < j0 + nb ? j->act_cols : j0 + nb;
    for (size_t i = 0; act_end > j0 && i < j->n; i++)
        FN(activate)(j->y + i * out + j0, act_end - j0, j->act);
    return 0;
}

static void FN(linear_act)(FN(ws) *s, const agm_lin *L, const R *x, size_t n, R *y, agm_act act,
                           size_t act_cols)
{
    FN(lin_job) j = {s, L, FN(wget)(s, &L->w), x, n, y, act, act_cols};
    size_t cols = lin_cols((size_t)L->out);
    ag_pool_run(s->pool, ((size_t)L->out + cols - 1) / cols, FN(lin_task), &j);
}

static void FN(linear)(FN(ws) *s, const agm_lin *L, const R *x, size_t n, R *y)
{
    FN(linear_act)(s, L, x, n, y, AGM_ACT_RELU, 0);
}

/* First non-finite value of x[0..cnt), or cnt. */
static size_t FN(first_bad)(const R *x, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        if (!isfinite(x[i]))
            return i;
    return cnt;
}

#if IS_F64
/* Exponent e such that the row r (d values) scaled by 2^-e has squares that
 * can neither overflow nor underflow: 0 for rows within [2^-400, 2^400],
 * whose results are then bit-identical to the unscaled formula. The f32
 * pass's norms (vmath.h) keep HF's float32 statistics and report their
 * overflow instead: with a float32 variance of +inf HF silently outputs the
 * bias, a wrong number. */
static int FN(row_exp)(const R *r, size_t d)
{
    double m = 0;
    for (size_t j = 0; j < d; j++)
        m = fmax(m, fabs(r[j]));
    int e = 0;
    if (m > 0 && (m < 0x1p-400 || m > 0x1p400))
        frexp(m, &e);
    return e;
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
#endif

/* torch.nn.LayerNorm over the last dim: (x - mean)/sqrt(var + eps)*w + b,
 * biased variance; without w, b (OPT elementwise_affine = false) the
 * normalised value itself. x, y (n, d); may alias. The f64 pass computes on
 * x·2^-e (row_exp), the same quotient: (x - mean)·2^-e / sqrt((var + eps)·2^-2e).
 * Returns the first row whose result is not finite, or n. */
static size_t FN(layernorm)(const R *x, R *y, size_t n, size_t d, const agm_norm *nm, double eps)
{
#if !IS_F64 // vmath.h: the same formula, statistics in double by 8 partial sums
    for (size_t i = 0; i < n; i++)
        if (agm_layernorm_f32(x + i * d, y + i * d, d, nm->w, nm->b, (float)eps))
            return i;
    return n;
#else
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
#endif
}

/* modeling_llama.py LlamaRMSNorm: w * (x * rsqrt(mean(x^2) + eps)); with
 * one_plus GemmaRMSNorm: (x * rsqrt(...)) * (1 + w), 1 + w in R as HF's
 * float32 `1.0 + self.weight.float()`. Scaled as layernorm in the f64 pass.
 * Returns the first bad row, or n. */
static size_t FN(rmsnorm)(const R *x, R *y, size_t n, size_t d, const agm_norm *nm, double eps,
                          int one_plus)
{
#if !IS_F64
    for (size_t i = 0; i < n; i++)
        if (agm_rmsnorm_f32(x + i * d, y + i * d, d, nm->w, (float)eps, one_plus))
            return i;
    return n;
#else
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
#endif
}

/* A norm over rows [r0, r1) of x into y. */
typedef struct {
    const R *x;
    R *y;
    size_t d;
    const agm_norm *nm;
    double eps;
    ag_norm_kind kind;
} FN(norm_job);

static size_t FN(norm_rows)(void *user, size_t r0, size_t r1)
{
    FN(norm_job) *j = user;
    size_t cnt = r1 - r0, bad;
    const R *x = j->x + r0 * j->d;
    R *y = j->y + r0 * j->d;
    if (j->kind == AG_NORM_LAYER)
        bad = FN(layernorm)(x, y, cnt, j->d, j->nm, j->eps);
    else
        bad = FN(rmsnorm)(x, y, cnt, j->d, j->nm, j->eps, j->kind == AG_NORM_RMS_1P);
    return bad < cnt ? r0 + bad : NO_ROW;
}

/* The model's norm kind with parameters `nm` over rows of d values of x
 * into y, `per` rows a token (a fault names `stem` + " output" and the
 * token). */
static int FN(norm_width)(FN(ws) *s, const ag_model *m, const agm_norm *nm, const char *stem,
                          const R *x, R *y, size_t rows, size_t d, size_t per, int layer)
{
    const ag_model_config *g = &m->cfg;
    FN(norm_job) j = {x, y, d, nm, g->norm_eps, g->norm};
    size_t bad = FN(par_rows)(s, rows, FN(norm_rows), &j);
    if (bad == NO_ROW)
        return AG_OK;
    char what[96];
    snprintf(what, sizeof what, "%s output", stem);
    return set_fault(&s->fault, what, layer, -1, bad / per);
}

/* The model's norm `nm` of x into y (n rows of d_model). */
static int FN(norm)(FN(ws) *s, const ag_model *m, const agm_norm *nm, const char *stem,
                    const R *x, R *y, size_t n, int layer)
{
    return FN(norm_width)(s, m, nm, stem, x, y, n, (size_t)m->cfg.d_model, 1, layer);
}

/* The fault at the first non-finite entry of x (rows of d values), if any. */
static int FN(check_rows)(FN(ws) *s, const R *x, size_t n, size_t d, const char *what,
                          int layer, int head)
{
    size_t k = FN(first_bad)(x, n * d);
    return k < n * d ? set_fault(&s->fault, what, layer, head, k / d) : AG_OK;
}

/* ---- attention ---------------------------------------------------------- */

/* Q, K or V of a layer where the projection left them: head h's values
 * are columns agm_col(c, h, hd) .. + hd of rows ld apart. */
typedef struct {
    R *p;
    size_t ld;
    agm_cols c;
    int hd;
} FN(view);

static R *FN(head_of)(const FN(view) *v, int h)
{
    return v->p + agm_col(v->c, (size_t)h, (size_t)v->hd);
}

/* Q, K, V of X: three projections, or one fused projection whose columns
 * agm_qkv_cols describes (GPT-2 and Phi-3 column blocks, GPT-NeoX per-head
 * q|k|v), used where they are: the kernel reads strided heads. */
static void FN(project_qkv)(const ag_model *m, const agm_layer *y, FN(ws) *s, const R *x, size_t n,
                            FN(view) qkv[3])
{
    const ag_model_config *g = &m->cfg;
    if (g->qkv == AG_QKV_SEPARATE) {
        FN(linear)(s, &y->q, x, n, s->q);
        FN(linear)(s, &y->k, x, n, s->k);
        FN(linear)(s, &y->v, x, n, s->v);
        R *dst[3] = {s->q, s->k, s->v};
        for (int i = 0; i < 3; i++)
            qkv[i] = (FN(view)){dst[i], (size_t)(i ? g->n_kv_head : g->n_head) * g->head_dim,
                                agm_qkv_cols(g, i), g->head_dim};
        return;
    }
    FN(linear)(s, &y->qkv, x, n, s->qkv);
    for (int i = 0; i < 3; i++)
        qkv[i] = (FN(view)){s->qkv, (size_t)y->qkv.out, agm_qkv_cols(g, i), g->head_dim};
}

/* OPT/DistilBERT's scaled Q, then RoPE (tables cos, sin) on every head of
 * Q and K. */
static void FN(prepare_qk)(const ag_model *m, const R *cos, const R *sin, FN(view) *q, FN(view) *k,
                           size_t n, R scale)
{
    const ag_model_config *g = &m->cfg;
    int hd = g->head_dim, rd = g->rope.rotary_dim;
    for (int h = 0; g->scale_query && h < g->n_head; h++) // modeling_opt.py q_proj(x)·scaling
        for (size_t i = 0; i < n; i++) {
            R *r = FN(head_of)(q, h) + i * q->ld;
            for (int c = 0; c < hd; c++)
                r[c] *= scale;
        }
    /* GPT-J: rotate_every_two pairs */
    void (*rot)(R *, size_t, size_t, int, int, int, const R *, const R *, int) =
        g->rope_extra.interleaved ? FN(agk_rope_apply_pairs) : FN(agk_rope_apply);
    for (int h = 0; g->positions == AG_POS_ROPE && h < g->n_head; h++)
        rot(FN(head_of)(q, h), n, q->ld, 1, hd, rd, cos, sin, 1);
    for (int h = 0; g->positions == AG_POS_ROPE && h < g->n_kv_head; h++)
        rot(FN(head_of)(k, h), n, k->ld, 1, hd, rd, cos, sin, 1);
}

/* QK-norm in place, before RoPE, on the separate projections' Q (n, H·hd)
 * and K (n, Hkv·hd): per head (modeling_qwen3.py Qwen3Attention
 * q_norm(q_proj(x).view(..., head_dim)): the (n·heads, head_dim) rows) or
 * over the whole projection (modeling_olmo2.py q_norm(q_proj(x)) before
 * the view into heads). */
static int FN(qk_norm)(FN(ws) *s, const ag_model *m, const agm_layer *y, size_t n, int layer)
{
    const ag_model_config *g = &m->cfg;
    size_t hd = (size_t)g->head_dim, heads[2] = {(size_t)g->n_head, (size_t)g->n_kv_head};
    R *x[2] = {s->q, s->k};
    const agm_norm *nm[2] = {&y->q_norm, &y->k_norm};
    const char *stem[2] = {m->arch->q_norm, m->arch->k_norm};
    int rc = AG_OK;
    for (int i = 0; rc == AG_OK && i < 2; i++) {
        size_t per = g->qk_norm == AG_QK_NORM_HEAD ? heads[i] : 1;
        rc = FN(norm_width)(s, m, nm[i], stem[i], x[i], x[i], n * per, heads[i] * hd / per, per,
                            layer);
    }
    return rc;
}

typedef struct {
    FN(ws) *s;
    const agk_head *c;
    size_t n;
    const FN(view) *qkv;
    double *pd;
    double *sd;
    const double *slopes; // (n_head) ALiBi slopes, or NULL
    R *p;                 // (H, n, n_kv) the probabilities
    const R *bias;        // (H, n, n_kv) T5's position bias, or NULL
} FN(heads_job);

/* Query head h (kv head h / (H / Hkv), modeling_llama.py repeat_kv): its
 * probabilities into s->p, its output into its columns of s->ctx. */
static int FN(head_task)(size_t h, int worker, void *user)
{
    FN(heads_job) *j = user;
    agk_head ch = *j->c; // this head's ALiBi slope
    const agk_head *c = &ch;
    size_t n = j->n, hd = (size_t)c->head_dim, nn = n * (c->n_kv ? c->n_kv : n);
    if (j->slopes)
        ch.slope = j->slopes[h];
    if (j->bias)
        ch.bias = j->bias + h * nn;
    int g = (int)h / (c->n_head / c->n_kv_head);
    const FN(view) *q = &j->qkv[0], *k = &j->qkv[1], *v = &j->qkv[2];
    j->s->bad[h] = FN(agk_attend_head)(c, n, FN(head_of)(q, (int)h), q->ld, FN(head_of)(k, g),
                                       k->ld, FN(head_of)(v, g), v->ld, j->p + h * nn,
                                       j->s->ctx + h * hd, (size_t)c->n_head * hd,
                                       j->pd ? j->pd + h * nn : NULL,
                                       j->sd ? j->sd + h * nn : NULL,
                                       FN(scratch)(j->s, worker));
    return 0;
}

/* Each of the H query heads' q rows (nq) and the k rows (nk) it attends
 * with (its kv head's of Hkv, modeling_llama.py repeat_kv) as the scores
 * use them, widened into qd ((H, nq, hd)) and kd ((H, nk, hd)): family
 * K's bilinear form, with no second projection. */
static void FN(give_qk)(double *qd, double *kd, const FN(view) qkv[3], size_t H, size_t Hkv,
                        size_t nq, size_t nk)
{
    size_t hd = (size_t)qkv[0].hd;
    for (size_t h = 0; h < H; h++) {
        const R *q = FN(head_of)(&qkv[0], (int)h), *k = FN(head_of)(&qkv[1], (int)(h / (H / Hkv)));
        for (size_t i = 0; i < nq; i++)
            for (size_t c = 0; c < hd; c++)
                qd[(h * nq + i) * hd + c] = q[i * qkv[0].ld + c];
        for (size_t i = 0; i < nk; i++)
            for (size_t c = 0; c < hd; c++)
                kd[(h * nk + i) * hd + c] = k[i * qkv[1].ld + c];
    }
}

/* Hand X (n, d) and P (H, n, n_kv) to the callback as doubles (P converted
 * by the heads into pd, X here), after checking every head's probabilities
 * in order: a callback never sees a non-finite value. v holds the rest of
 * the view (layer, sizes, stack, scores, x_kv; x_kv NULL: X). */
static int FN(emit)(FN(ws) *s, const R *x, ag_layer_view *v, const R *p, const double *pd,
                    ag_layer_fn fn, void *user)
{
    for (int h = 0; h < v->n_head; h++)
        if (s->bad[h] < v->n)
            return set_fault(&s->fault, v->stack == AG_STACK_CROSS ? "cross-attention" : "attention",
                             v->layer, h, s->bad[h]);
    if (!fn)
        return AG_OK;
#if IS_F64
    (void)pd;
    v->x = x;
    v->attn = p;
#else
    for (size_t i = 0; i < v->n * v->d; i++)
        s->xd[i] = x[i];
    v->x = s->xd;
    v->attn = pd; /* NULL with ag_forward_options.attn_f32 */
    v->attn_f32 = p;
#endif
    if (!v->x_kv)
        v->x_kv = v->x;
    return fn(v, user);
}

/* Layer l's attention of X into s->t (n, d): projections, QK-norm,
 * OPT/DistilBERT's scaled Q, RoPE, the kernel on every head (scale, soft-capping, causal or
 * sliding-window mask, softmax, P·V), the callback, the output projection. */
static int FN(attention)(const ag_model *m, int l, FN(ws) *s, const R *x, size_t n,
                         ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->layers[l];
    double scale = g->attn_scale / (g->scale_by_inverse_layer ? l + 1 : 1);
    FN(view) qkv[3];
    FN(project_qkv)(m, y, s, x, n, qkv);
    int rc = g->qk_norm == AG_QK_NORM_NONE ? AG_OK : FN(qk_norm)(s, m, y, n, l);
    if (rc != AG_OK)
        return rc;
    int local = m->window[l] && s->cos2; /* Gemma-3: the sliding layers' own RoPE */
    FN(prepare_qk)(m, local ? s->cos2 : s->cos, local ? s->sin2 : s->sin, &qkv[0], &qkv[1], n,
                   (R)scale);
    if (g->scale_query) // DistilBERT q / √d_h: in Q already
        scale = 1;
    agk_head c = {.n_head = g->n_head, .n_kv_head = g->n_kv_head, .head_dim = g->head_dim,
                  .scale = scale, .softcap = g->softcap, .causal = g->causal,
                  .window = m->window[l], .alibi = g->alibi};
    FN(heads_job) j = {s, &c, n, qkv, IS_F64 || !fn ? NULL : s->pd, fn ? s->sd : NULL,
                       m->alibi_slopes, s->p, s->pb};
    ag_pool_run(s->pool, (size_t)g->n_head, FN(head_task), &j);
    ag_layer_view v = {.layer = l, .n = n, .d = (size_t)g->d_model, .n_head = g->n_head,
                       .scores = s->sd, .stack = m->stack, .n_kv = n};
    if (fn && s->qd) { // family K's q and k rows, with the scores
        FN(give_qk)(s->qd, s->kd, qkv, (size_t)g->n_head, (size_t)g->n_kv_head, n, n);
        v.q = s->qd;
        v.k = s->kd;
        v.head_dim = g->head_dim;
    }
    rc = FN(emit)(s, x, &v, s->p, s->pd, fn, user);
    if (rc == AG_OK)
        FN(linear)(s, &y->o, s->ctx, n, s->t);
    return rc;
}

/* The decoder's cross-attention of layer l into h over every source row,
 * no mask, no position bias, with the stack's wiring: pre-norm (T5:
 * modeling_t5.py T5LayerCrossAttention, h += o(attn(q(n_c(h)), k(enc),
 * v(enc))), a T5Attention without relative_attention_bias adding zeros) or
 * post-norm (BART: modeling_bart.py BartDecoderLayer, h = n_c(h +
 * o(attn(q(h)·scaling, k(enc), v(enc))))). */
static int FN(cross)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_layer *y = &m->cross[l];
    FN(xws) *x = s->x;
    size_t d = (size_t)g->d_model, ns = x->n_src, dq = (size_t)g->n_head * g->head_dim;
    int post = g->residual == AG_RESIDUAL_POST, rc = AG_OK;
    const char *stem = m->arch->norm_cross;
    if (!post && (rc = FN(norm)(s, m, &y->n1, stem, s->h, s->xn, n, l)))
        return rc;
    const R *xq = post ? s->h : s->xn;
    FN(linear)(s, &y->q, xq, n, s->q);
    FN(linear)(s, &y->k, x->enc, ns, x->k);
    FN(linear)(s, &y->v, x->enc, ns, x->v);
    agm_cols cols = {0, g->head_dim, 0};
    FN(view) qkv[3] = {{s->q, dq, cols, g->head_dim}, {x->k, dq, cols, g->head_dim},
                       {x->v, dq, cols, g->head_dim}};
    FN(prepare_qk)(m, NULL, NULL, &qkv[0], &qkv[1], n, (R)g->attn_scale); // BART: q·scaling
    agk_head c = {.n_head = g->n_head, .n_kv_head = g->n_head, .head_dim = g->head_dim,
                  .scale = g->scale_query ? 1 : g->attn_scale, .n_kv = ns};
    FN(heads_job) j = {s, &c, n, qkv, IS_F64 || !fn ? NULL : x->pd, fn ? x->sd : NULL, NULL, x->p, NULL};
    ag_pool_run(s->pool, (size_t)g->n_head, FN(head_task), &j);
    ag_layer_view v = {.layer = l, .n = n, .d = d, .n_head = g->n_head, .scores = j.sd,
                       .stack = AG_STACK_CROSS, .n_kv = ns, .x_kv = x->encd};
    if (fn && x->qd) { // family K's q rows (targets) and k rows (sources)
        FN(give_qk)(x->qd, x->kd, qkv, (size_t)g->n_head, (size_t)g->n_head, n, ns);
        v.q = x->qd;
        v.k = x->kd;
        v.head_dim = g->head_dim;
    }
    if ((rc = FN(emit)(s, xq, &v, x->p, x->pd, fn, user)))
        return rc;
    FN(linear)(s, &y->o, s->ctx, n, s->t);
    if (!post) {
        FN(add)(s, s->h, s->t, n, d);
        return AG_OK;
    }
    FN(add)(s, s->t, s->h, n, d);
    return FN(norm)(s, m, &y->n1, stem, s->t, s->h, n, l);
}

/* ---- the block ---------------------------------------------------------- */

/* The attention block's output y (+ add when not NULL: the parallel
 * block's h + attention, which the pass never forms) to o->block_fn, as
 * doubles. */
static int FN(give_block)(FN(ws) *s, int l, size_t n, size_t d, const R *y, const R *add)
{
    if (!s->o || !s->o->block_fn)
        return AG_OK;
    for (size_t i = 0; i < n * d; i++)
        s->yd[i] = add ? (double)y[i] + (double)add[i] : (double)y[i];
    return s->o->block_fn(l, n, d, s->yd, s->o->block_user);
}

/* down(act(gate x)·up x) of x (n rows) into out; gate, up, down = w[0..2]
 * or the named projections. */
static void FN(gated)(const ag_model *m, FN(ws) *s, const agm_lin *gate, const agm_lin *up,
                      const agm_lin *down, const R *x, size_t n, R *out)
{
    size_t ff = (size_t)gate->out;
    FN(linear_act)(s, gate, x, n, s->f1, m->act, ff);
    FN(linear)(s, up, x, n, s->f2);
    FN(mul)(s, s->f1, s->f2, n, ff);
    FN(linear)(s, down, s->f1, n, out);
}

/* Token i's experts: softmax of its router logits p (E values, in place;
 * sums in double), the top k by torch.topk's order (larger first, the lower
 * index first on equal values: the scan keeps the first maximum), their
 * weights renormalised when norm (modeling_mixtral.py
 * MixtralSparseMoeBlock: routing_weights /= routing_weights.sum). */
static void FN(route)(R *p, int E, int k, int norm, int *sel, R *wt)
{
    double mx = p[0], sum = 0, top = 0;
    for (int e = 1; e < E; e++)
        mx = p[e] > mx ? p[e] : mx;
    for (int e = 0; e < E; e++)
        sum += REXP((R)(p[e] - mx));
    for (int e = 0; e < E; e++)
        p[e] = (R)(REXP((R)(p[e] - mx)) / sum);
    for (int j = 0; j < k; j++) {
        int b = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++)
                taken |= sel[i] == e;
            if (!taken && (b < 0 || p[e] > p[b]))
                b = e;
        }
        sel[j] = b;
        wt[j] = p[b];
        top += p[b];
    }
    for (int j = 0; norm && j < k; j++)
        wt[j] = wt[j] / (R)top;
}

/* The rows routed to expert e, gathered into s->xe (their indices in
 * s->idx, their weights in s->wr); returns their count. */
static size_t FN(gather)(const ag_model_config *g, FN(ws) *s, const R *x, size_t n, int e)
{
    size_t cnt = 0, d = (size_t)g->d_model, K = (size_t)g->top_k;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < K; j++)
            if (s->sel[i * K + j] == e) {
                memcpy(s->xe + cnt * d, x + i * d, d * sizeof(R));
                s->wr[cnt] = s->wt[i * K + j];
                s->idx[cnt++] = i;
            }
    return cnt;
}

/* A sparse MLP of x into out (n, d): Σ w_e · expert_e(x) over each token's
 * top-k, summed in expert order as HF's index_add_ does
 * (modeling_mixtral.py, modeling_qwen2_moe.py, modeling_olmoe.py
 * *SparseMoeBlock), then Qwen2-MoE's sigmoid(shared_expert_gate(x)) ·
 * shared_expert(x) added. */
static void FN(moe)(const ag_model *m, const agm_layer *y, FN(ws) *s, const R *x, size_t n, R *out)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model, E = (size_t)g->n_expert, K = (size_t)g->top_k;
    FN(linear)(s, &y->router, x, n, s->rl);
    for (size_t i = 0; i < n; i++)
        FN(route)(s->rl + i * E, (int)E, (int)K, g->norm_topk, s->sel + i * K, s->wt + i * K);
    memset(out, 0, n * d * sizeof(R));
    for (size_t e = 0; e < E; e++) {
        size_t cnt = FN(gather)(g, s, x, n, (int)e);
        const agm_lin *w = y->experts + 3 * e;
        if (!cnt)
            continue;
        FN(gated)(m, s, &w[0], &w[1], &w[2], s->xe, cnt, s->ye);
        for (size_t r = 0; r < cnt; r++)
            for (size_t c = 0; c < d; c++)
                out[s->idx[r] * d + c] += s->ye[r * d + c] * s->wr[r];
    }
    if (!g->d_ff_shared)
        return;
    FN(gated)(m, s, &y->sh[0], &y->sh[1], &y->sh[2], x, n, s->ye);
    FN(linear)(s, &y->sh_gate, x, n, s->wr); // (n, 1)
    for (size_t i = 0; i < n; i++) {
        R gate = (R)1 / ((R)1 + REXP(-s->wr[i]));
        for (size_t c = 0; c < d; c++)
            out[i * d + c] += gate * s->ye[i * d + c];
    }
}

/* The MLP of layer l on x into out (n, d): the experts of a sparse layer,
 * else down(act(up x)), down(act(gate x)·up x), or the same from Phi-3's
 * gate_up (gate the first d_ff columns). */
static void FN(mlp)(const ag_model *m, const agm_layer *y, FN(ws) *s, const R *x, size_t n, R *out)
{
    const ag_model_config *g = &m->cfg;
    size_t ff = (size_t)g->d_ff;
    const R *a = s->f1;
    if (y->experts) {
        FN(moe)(m, y, s, x, n, out);
        return;
    }
    if (g->mlp == AG_MLP_PLAIN) {
        FN(linear_act)(s, &y->up, x, n, s->f1, m->act, ff);
    } else if (g->mlp == AG_MLP_GATED) {
        FN(gated)(m, s, &y->gate, &y->up, &y->down, x, n, out);
        return;
    } else {
        FN(linear_act)(s, &y->up, x, n, s->f1, m->act, ff); // (n, 2·d_ff), gate first
        FN(gate_up_job) j = {s->f1, s->f2, ff};
        FN(par_rows)(s, n, FN(gate_up_rows), &j);
        a = s->f2;
    }
    FN(linear)(s, &y->down, a, n, out);
}

/* One block, every architecture (see ag_residual):
 *   PRE       X = n₁(h); h += o(attn(X)); h += mlp(n₂(h))
 *   POST      X = h; h = n₁(h + o(attn(X))); h = n₂(h + mlp(h))
 *   PARALLEL  X = n₁(h); h = (mlp(n₂(h)) + o(attn(X))) + h
 * with Gemma-2's sandwich norms on each sublayer's output before its add
 * (modular_gemma2.py Gemma2DecoderLayer); OLMo-2 (no_pre_norms) has those
 * and no n₁, n₂: X = h, h += n_a(o(attn(h))); h += n_f(mlp(h))
 * (modeling_olmo2.py Olmo2DecoderLayer). */
static int FN(block)(const ag_model *m, int l, FN(ws) *s, size_t n, ag_layer_fn fn, void *user)
{
    const ag_model_config *g = &m->cfg;
    const agm_arch *a = m->arch;
    const agm_layer *y = &m->layers[l];
    size_t d = (size_t)g->d_model;
    int post = g->residual == AG_RESIDUAL_POST, sw = g->sandwich_norms, rc = AG_OK;
    int pre = !post && !g->no_pre_norms; /* X = n₁(h) */
    int pre1 = pre && !(l == 0 && g->first_no_pre_norm); /* ModernBERT layer 0: X = h */
    if (pre1 && (rc = FN(norm)(s, m, &y->n1, a->norm1, s->h, s->xn, n, l)))
        return rc;
    if ((rc = FN(attention)(m, l, s, pre1 ? s->xn : s->h, n, fn, user)) ||
        (sw && (rc = FN(norm)(s, m, &y->attn_out, a->attn_out_norm, s->t, s->t, n, l))))
        return rc;
    FN(layer_scale)(s->t, y->ls1.w, n, d);
    if (g->residual == AG_RESIDUAL_PARALLEL) { // modular_gpt_neox.py: mlp + attn + h
        if ((rc = FN(give_block)(s, l, n, d, s->h, s->t)) ||
            (rc = FN(norm)(s, m, &y->n2, a->norm2, s->h, s->xn, n, l)))
            return rc;
        FN(mlp)(m, y, s, s->xn, n, s->t2);
        FN(add)(s, s->t2, s->t, n, d);
        FN(add)(s, s->h, s->t2, n, d);
        return AG_OK;
    }
    if (post) { // modeling_bert.py BertSelfOutput: LayerNorm(dense(x) + input)
        FN(add)(s, s->t, s->h, n, d);
        if ((rc = FN(norm)(s, m, &y->n1, a->norm1, s->t, s->h, n, l)) ||
            (rc = FN(give_block)(s, l, n, d, s->h, NULL)) ||
            (m->cross && (rc = FN(cross)(m, l, s, n, fn, user)))) // BartDecoderLayer
            return rc;
        FN(mlp)(m, y, s, s->h, n, s->t);
        FN(add)(s, s->t, s->h, n, d); // BertOutput
        return FN(norm)(s, m, &y->n2, a->norm2, s->t, s->h, n, l);
    }
    FN(add)(s, s->h, s->t, n, d);
    if (m->cross && (rc = FN(cross)(m, l, s, n, fn, user))) // T5Block: layer.1 of a decoder
        return rc;
    if ((rc = FN(give_block)(s, l, n, d, s->h, NULL)) ||
        (pre && (rc = FN(norm)(s, m, &y->n2, a->norm2, s->h, s->xn, n, l))))
        return rc;
    FN(mlp)(m, y, s, pre ? s->xn : s->h, n, s->t);
    if (sw && (rc = FN(norm)(s, m, &y->mlp_out, a->mlp_out_norm, s->t, s->t, n, l)))
        return rc;
    FN(layer_scale)(s->t, y->ls2.w, n, d);
    FN(add)(s, s->h, s->t, n, d);
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
        FN(linear)(s, &m->proj_in, s->e, n, s->h);
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

/* h (n, d) += the position rows 0..n-1 of the model's table (ViT
 * position_embeddings (1, n, d), Whisper embed_positions[0..n)), converted
 * into the free projection buffer s->t. */
static void FN(add_position_rows)(const ag_model *m, size_t n, FN(ws) *s)
{
    size_t cnt = n * (size_t)m->cfg.d_model;
    CONV(&m->pos_emb, 0, cnt, s->t);
    for (size_t i = 0; i < cnt; i++)
        s->h[i] += s->t[i];
}

/* One output index's 4 source indices and weights along an axis of torch's
 * upsample_bicubic2d, align_corners=False, output size given (pytorch
 * aten/src/ATen/native/UpSample.h and cpu/UpSampleKernel.cpp
 * compute_indices_weights_cubic): scale in/out, source (o + ½)·scale − ½
 * (not clamped: cubic), index ⌊src⌋ capped at in−1, λ = src − index in
 * [0, 1], Keys' cubic convolution with A = −0.75 (get_cubic_upsample_
 * coefficients), source indices clamped to the border
 * (upsample_get_value_bounded). */
static void FN(cubic_axis)(size_t in, size_t out, size_t o, size_t idx[4], R w[4])
{
    const R A = (R)-0.75;
    R scale = (R)in / (R)out, src = scale * ((R)o + (R)0.5) - (R)0.5;
    long i0 = (long)floor((double)src);
    if (i0 > (long)in - 1)
        i0 = (long)in - 1;
    R t = src - (R)i0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    R t2 = 1 - t;
    R x0 = t + 1, x3 = t2 + 1;
    w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
    w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
    for (long j = 0; j < 4; j++) {
        long k = i0 - 1 + j;
        idx[j] = (size_t)(k < 0 ? 0 : k > (long)in - 1 ? (long)in - 1 : k);
    }
}

/* h (n, d) += ViTEmbeddings.interpolate_pos_encoding (modeling_vit.py
 * 005db820): row 0 the stored row 0, patch rows the stored g0 × g0 grid
 * resized bicubically to gh × gw (cubic_axis), each output
 * Σ_i wy_i·(Σ_j wx_j·src[y_i, x_j]) in the CPU kernel's order
 * (UpSampleKernel.cpp Interpolate: the height axis outermost). */
static int FN(add_interp_positions)(const ag_model *m, size_t gh, size_t gw, FN(ws) *s)
{
    size_t d = (size_t)m->cfg.d_model, g0 = (size_t)(m->cfg.image_height / m->cfg.patch_height);
    R *tab = zalloc((1 + g0 * g0) * d * sizeof(R));
    if (!tab)
        return AG_ENOMEM;
    CONV(&m->pos_emb, 0, (1 + g0 * g0) * d, tab);
    for (size_t c = 0; c < d; c++)
        s->h[c] += tab[c];
    for (size_t y = 0; y < gh; y++) {
        size_t iy[4], ix[4];
        R wy[4], wx[4];
        FN(cubic_axis)(g0, gh, y, iy, wy);
        for (size_t x = 0; x < gw; x++) {
            FN(cubic_axis)(g0, gw, x, ix, wx);
            R *out = s->h + (1 + y * gw + x) * d;
            for (size_t c = 0; c < d; c++) {
                R acc = 0;
                for (int i = 0; i < 4; i++) {
                    const R *row = tab + (1 + iy[i] * g0) * d + c;
                    R t = row[ix[0] * d] * wx[0];
                    for (int j = 1; j < 4; j++)
                        t += row[ix[j] * d] * wx[j];
                    acc = i ? acc + t * wy[i] : t * wy[i];
                }
                out[c] += acc;
            }
        }
    }
    free(tab);
    return AG_OK;
}

/* Output index o's weights along an axis of torch's antialiased bicubic
 * resize (pytorch aten/src/ATen/native/cpu/UpSampleKernel.cpp @bb7240c3,
 * HelperInterpBase::_compute_indices_min_size_weights_aa with
 * HelperInterpCubic::aa_filter, Keys' a = −0.5): scale in/out, the filter
 * of support 2 stretched by the scale when shrinking, centred on
 * scale·(o + ½), cut to the input [xmin, xmin + count), normalised to sum
 * 1. w holds at most kmax = ⌈support⌉·2 + 1 weights. */
static void FN(aa_axis)(size_t in, size_t out, size_t o, size_t kmax, size_t *xmin, size_t *count, R *w)
{
    R scale = (R)in / (R)out, support = scale >= 1 ? 2 * scale : 2;
    R invscale = scale >= 1 ? 1 / scale : 1, center = scale * ((R)o + (R)0.5), total = 0;
    long lo = (long)(center - support + (R)0.5), hi = (long)(center + support + (R)0.5);
    lo = lo < 0 ? 0 : lo;
    hi = hi > (long)in ? (long)in : hi;
    size_t k = hi > lo ? (size_t)(hi - lo) : 0;
    k = k > kmax ? kmax : k;
    for (size_t j = 0; j < k; j++) {
        R x = fabs(((R)(j + (size_t)lo) - center + (R)0.5) * invscale), a = (R)-0.5;
        w[j] = x < 1 ? ((a + 2) * x - (a + 3)) * x * x + 1
             : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
        total += w[j];
    }
    for (size_t j = 0; total != 0 && j < k; j++)
        w[j] /= total;
    *xmin = (size_t)lo;
    *count = k;
}

/* One separable pass of the antialiased resize: dst[o] = Σ_j w_j·src[xmin
 * + j] along an axis of `in` → `out` entries of stride `step` rows, for
 * `outer` blocks (src block stride in·step, dst out·step) of `step` rows of
 * d values, accumulated in R from the first tap (basic_loop_aa_*). */
static int FN(aa_pass)(const R *src, R *dst, size_t in, size_t out, size_t outer, size_t step, size_t d)
{
    R scale = (R)in / (R)out;
    size_t kmax = (size_t)ceil((double)(scale >= 1 ? 2 * scale : 2)) * 2 + 1, xmin, cnt;
    R *w = malloc(kmax * sizeof *w);
    if (!w)
        return AG_ENOMEM;
    for (size_t o = 0; o < out; o++) {
        FN(aa_axis)(in, out, o, kmax, &xmin, &cnt, w);
        for (size_t b = 0; b < outer; b++)
            for (size_t r = 0; r < step * d; r++) {
                const R *x = src + (b * in + xmin) * step * d + r;
                R acc = cnt ? x[0] * w[0] : 0;
                for (size_t j = 1; j < cnt; j++)
                    acc += x[j * step * d] * w[j];
                dst[(b * out + o) * step * d + r] = acc;
            }
    }
    free(w);
    return AG_OK;
}

/* h (n, d) += Dinov2WithRegistersEmbeddings.interpolate_pos_encoding
 * (modeling_dinov2_with_registers.py c80ba31e: nn.functional.interpolate
 * bicubic, antialias=True): row 0 the stored row 0, patch rows the g0 × g0
 * grid resized to gh × gw as torch's separable_upsample_generic_Nd_kernel_
 * impl does: the width first (g0 rows), then the height. */
static int FN(add_interp_positions_aa)(const ag_model *m, size_t gh, size_t gw, FN(ws) *s)
{
    size_t d = (size_t)m->cfg.d_model, g0 = (size_t)(m->cfg.image_height / m->cfg.patch_height);
    R *tab = zalloc((1 + g0 * g0) * d * sizeof(R)), *wide = zalloc(g0 * gw * d * sizeof(R));
    R *grid = zalloc(gh * gw * d * sizeof(R));
    int rc = tab && wide && grid ? AG_OK : AG_ENOMEM;
    if (rc == AG_OK) {
        CONV(&m->pos_emb, 0, (1 + g0 * g0) * d, tab);
        rc = FN(aa_pass)(tab + d, wide, g0, gw, g0, 1, d);
    }
    if (rc == AG_OK)
        rc = FN(aa_pass)(wide, grid, g0, gh, 1, gw, d);
    for (size_t c = 0; rc == AG_OK && c < d; c++)
        s->h[c] += tab[c];
    for (size_t i = 0; rc == AG_OK && i < gh * gw * d; i++)
        s->h[d + i] += grid[i];
    free(tab);
    free(wide);
    free(grid);
    return rc;
}

/* Dinov2WithRegistersEmbeddings.forward: after the positions, cat(row 0,
 * register_tokens, the patch rows): the n − R rows move down by R and the
 * registers fill rows 1..R. */
static void FN(insert_registers)(const ag_model *m, size_t n, FN(ws) *s)
{
    size_t d = (size_t)m->cfg.d_model, nreg = (size_t)m->cfg.n_registers;
    memmove(s->h + (1 + nreg) * d, s->h + d, (n - 1 - nreg) * d * sizeof *s->h);
    CONV(&m->registers, 0, nreg * d, s->h + d);
}

/* modeling_vit.py ViTEmbeddings: row 0 the
 * cls_token, row 1 + py·⌊W/p_w⌋ + px patch (py, px) through
 * ViTPatchEmbeddings' Conv2d (kernel = stride = patch: one product of its
 * im2col rows by the flattened kernel), then + position_embeddings (the
 * stored table for the configured grid, else interpolated). */
static int FN(embed_pixels)(const ag_model *m, const fwd_input *in, size_t n_all, FN(ws) *s)
{
    const ag_model_config *g = &m->cfg;
    size_t n = n_all - (size_t)g->n_registers; // CLS and the patches: the rows with positions
    size_t d = (size_t)g->d_model, C = in->dim[0], H = in->dim[1], W = in->dim[2];
    size_t ph = (size_t)g->patch_height, pw = (size_t)g->patch_width, gw = W / pw, np = n - 1;
    size_t k = C * ph * pw;
    R *col = zalloc(np * k * sizeof(R)); // (patches, C·p_h·p_w), the kernel's order
    if (!col)
        return AG_ENOMEM;
    for (size_t r = 0; r < np; r++) {
        size_t y0 = r / gw * ph, x0 = r % gw * pw;
        R *row = col + r * k;
        for (size_t c = 0; c < C; c++)
            for (size_t ky = 0; ky < ph; ky++)
                for (size_t kx = 0; kx < pw; kx++)
                    *row++ = (R)in->values[(c * H + y0 + ky) * W + x0 + kx];
    }
    FN(linear)(s, &m->conv1, col, np, s->h + d);
    free(col);
    CONV(&m->cls, 0, d, s->h);
    int rc = AG_OK;
    if (n == (size_t)g->max_positions && H / ph == (size_t)(g->image_height / g->patch_height))
        FN(add_position_rows)(m, n, s);
    else if (m->arch->pos_antialias)
        rc = FN(add_interp_positions_aa)(m, H / ph, gw, s);
    else
        rc = FN(add_interp_positions)(m, H / ph, gw, s);
    if (rc == AG_OK && g->n_registers)
        FN(insert_registers)(m, n_all, s);
    if (rc == AG_OK)
        rc = FN(check_rows)(s, s->h, n_all, d, "embedding sum", -1, -1);
    if (rc == AG_OK && m->arch->emb_norm) /* CLIPVisionTransformer pre_layrnorm */
        rc = FN(norm)(s, m, &m->emb_norm, m->arch->emb_norm, s->h, s->h, n_all, -1);
    return rc;
}

/* im2col of a kernel-3, padding-1 Conv1d over time-major rows: out row i,
 * column c·3 + k = x at time stride·i + k − 1, channel c (0 outside 0..T-1);
 * x_t(t, c) is x[t·ts + c·cs]. */
static void FN(im2col3)(const double *xd, const R *xr, size_t T, size_t C, size_t ts, size_t cs,
                        size_t stride, size_t rows, R *col)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < C; c++)
            for (size_t k = 0; k < 3; k++) {
                size_t t = stride * i + k; // the time + 1
                size_t at = (t - 1) * ts + c * cs;
                R v = 0;
                if (t >= 1 && t - 1 < T)
                    v = xd ? (R)xd[at] : xr[at];
                col[(i * C + c) * 3 + k] = v;
            }
}

/* modeling_whisper.py WhisperEncoder: gelu(conv1(x)) (kernel 3, padding 1),
 * gelu(conv2(·)) (kernel 3, stride 2, padding 1: ⌈T/2⌉ rows), GELU the erf
 * form (nn.functional.gelu), then + embed_positions[0..n). */
static int FN(embed_features)(const ag_model *m, const fwd_input *in, size_t n, FN(ws) *s)
{
    size_t d = (size_t)m->cfg.d_model, M = in->dim[0], T = in->dim[1];
    R *col1 = zalloc(T * 3 * M * sizeof(R)); // (T, 3·n_mels)
    R *h1 = zalloc(T * d * sizeof(R));       // (T, d) conv1's output, time-major
    R *col2 = zalloc(n * 3 * d * sizeof(R)); // (n, 3·d)
    int rc = col1 && h1 && col2 ? AG_OK : AG_ENOMEM;
    if (rc == AG_OK) {
        FN(im2col3)(in->values, NULL, T, M, 1, T, 1, T, col1); // x is (n_mels, T)
        FN(linear_act)(s, &m->conv1, col1, T, h1, AGM_ACT_GELU_ERF, d);
        FN(im2col3)(NULL, h1, T, d, d, 1, 2, n, col2);
        FN(linear_act)(s, &m->conv2, col2, n, s->h, AGM_ACT_GELU_ERF, d);
        FN(add_position_rows)(m, n, s);
        rc = FN(check_rows)(s, s->h, n, d, "embedding sum", -1, -1);
    }
    free(col1);
    free(h1);
    free(col2);
    return rc;
}

static void FN(store)(double *dst, const R *src, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        dst[i] = src[i];
}

/* cos, sin of positions 0..n-1 (modeling_rope_utils.py inv_freq, dynamic
 * scaling and longrope's factors for this n) of cfg.rope, times yarn's /
 * longrope's attention factor in R as LlamaRotaryEmbedding's
 * `cos * attention_scaling`; and of cfg.rope_local when it is set (Gemma-3's
 * sliding layers: default rope, no attention factor). */
static int FN(rope_tables)(const ag_model *m, size_t n, FN(ws) *s)
{
    const ag_rope *r = &m->cfg.rope;
    double af = m->cfg.rope_extra.attention_factor;
    size_t half = (size_t)r->rotary_dim / 2;
    double *inv = malloc(half * sizeof *inv);
    if (!inv)
        return AG_ENOMEM;
    ag_rope_inv_freq_extra(r, &m->cfg.rope_extra, n, inv);
    FN(agk_rope_tables)(inv, r->rotary_dim, n, s->cos, s->sin);
    for (size_t i = 0; af > 0 && af != 1 && i < n * half; i++) {
        s->cos[i] *= (R)af;
        s->sin[i] *= (R)af;
    }
    if (s->cos2) {
        ag_rope_inv_freq(&m->cfg.rope_local, n, inv);
        FN(agk_rope_tables)(inv, r->rotary_dim, n, s->cos2, s->sin2);
    }
    free(inv);
    return AG_OK;
}

/* T5's position bias of every head (H, n, n) into s->pb, each head's from
 * its diagonals (agm_t5_bias_diagonals). */
static int FN(rel_bias_table)(const ag_model *m, size_t n, FN(ws) *s)
{
    size_t H = (size_t)m->cfg.n_head;
    double *t = malloc((2 * n - 1) * sizeof *t);
    if (!t)
        return AG_ENOMEM;
    for (size_t h = 0; h < H; h++) {
        agm_t5_bias_diagonals(m, n, (int)h, t);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                s->pb[(h * n + i) * n + j] = (R)t[n - 1 + j - i];
    }
    free(t);
    return AG_OK;
}

/* The encoder's last hidden state (after its final norm) into the pass's
 * shared buffers, for the decoder's cross-attention. */
static void FN(keep_output)(FN(ws) *s, size_t n, size_t d)
{
    memcpy(s->x->enc, s->h, n * d * sizeof(R));
    FN(store)(s->x->encd, s->h, n * d);
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
static int FN(run)(const ag_model *m, const fwd_input *in, size_t n, FN(ws) *s,
                   const ag_forward_options *o, ag_layer_fn fn, void *user, double *hidden)
{
    const ag_model_config *g = &m->cfg;
    size_t d = (size_t)g->d_model;
    int want_hidden = hidden || o->hidden_fn;
    int rc = g->input_kind == AG_INPUT_PIXELS     ? FN(embed_pixels)(m, in, n, s)
             : g->input_kind == AG_INPUT_FEATURES ? FN(embed_features)(m, in, n, s)
                                                  : FN(embed)(m, in->ids, n, s);
    if (rc == AG_OK && g->positions == AG_POS_ROPE)
        rc = FN(rope_tables)(m, n, s);
    if (rc == AG_OK && s->pb)
        rc = FN(rel_bias_table)(m, n, s);
    for (int l = 0; rc == AG_OK && l < g->n_layer; l++) {
        if (want_hidden && (rc = FN(give_hidden)(s, o, hidden, l, n, d)))
            break;
        rc = FN(block)(m, l, s, n, fn, user);
        if (rc == AG_OK) // the block's output: an overflow in its MLP shows here
            rc = FN(check_rows)(s, s->h, n, d, "hidden state", l, -1);
    }
    int keep = s->x && m->stack == 1; // an encoder's output feeds the decoder
    if (rc || !(want_hidden || keep))
        return rc;
    if (g->final_norm) // GPT2Model ln_f, LlamaModel norm...: before the last append
        rc = FN(norm)(s, m, &m->final_norm, m->arch->final_norm, s->h, s->h, n, -1);
    if (rc == AG_OK && keep)
        FN(keep_output)(s, n, d);
    if (rc == AG_OK && want_hidden)
        rc = FN(give_hidden)(s, o, hidden, g->n_layer, n, d);
    return rc;
}

static int FN(forward)(const ag_model *m, const fwd_input *in, size_t n,
                       const ag_forward_options *o, ag_layer_fn fn, void *user, double *hidden,
                       ag_error *err)
{
    FN(ws) s;
    FN(xws) *x = in->cross;
    size_t keys = x && x->n_src > n ? x->n_src : n; // a cross-attention's keys
    if (FN(ws_alloc)(&s, m, n, keys, o->pool, fn != NULL, o->want_scores, o->want_qk,
                     o->attn_f32) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "forward pass: cannot allocate buffers for %zu tokens", n);
    s.o = o;
    s.x = x;
    if (o->block_fn && !(s.yd = zalloc(n * (size_t)m->cfg.d_model * sizeof(double)))) {
        FN(ws_free)(&s);
        return ag_error_set(err, AG_ENOMEM, "forward pass: cannot allocate buffers for %zu tokens", n);
    }
    int rc = FN(run)(m, in, n, &s, o, fn, user, hidden);
    FN(ws_free)(&s);
    if (rc && s.fault.set)
        fault_error(&s.fault, IS_F64, err);
    else if (rc == AG_ENOMEM)
        ag_error_set(err, rc, "forward pass: out of memory");
    else if (rc)
        ag_error_set(err, rc, "forward pass stopped by a callback (status %d)", rc);
    return rc;
}

/* ---- encoder–decoder passes --------------------------------------------- */

static void FN(xws_free)(FN(xws) *x)
{
    free(x->enc);
    free(x->encd);
    free(x->k);
    free(x->v);
    free(x->p);
    free(x->pd);
    free(x->sd);
    free(x->qd);
    free(x->kd);
}

/* The buffers the decoder's cross-attention shares with the encoder. */
static int FN(xws_alloc)(FN(xws) *x, const ag_model *dec, size_t ns, size_t nt, int want_pd,
                         int want_sd, int want_qk, int f32_attn)
{
    const ag_model_config *g = &dec->cfg;
    size_t d = (size_t)g->d_model, dq = (size_t)g->n_head * g->head_dim, pn = (size_t)g->n_head * nt * ns;
    memset(x, 0, sizeof *x);
    x->n_src = ns;
    int ok = FN(want)(&x->enc, 1, ns * d) && (x->encd = zalloc(ns * d * sizeof(double))) &&
             FN(want)(&x->k, 1, ns * dq) && FN(want)(&x->v, 1, ns * dq) && FN(want)(&x->p, 1, pn) &&
             (!want_pd || IS_F64 || f32_attn || (x->pd = zalloc(pn * sizeof(double)))) &&
             (!want_sd || (x->sd = zalloc(pn * sizeof(double)))) &&
             (!want_qk || ((x->qd = malloc(nt * dq * sizeof(double))) &&
                           (x->kd = malloc(ns * dq * sizeof(double)))));
    if (!ok)
        FN(xws_free)(x);
    return ok ? AG_OK : AG_ENOMEM;
}

/* The encoder on src (ids or a tensor's values), then the decoder on tgt
 * with its cross-attention over the encoder's output (attngeom/model.h
 * ag_seq2seq_forward, ag_seq2seq_forward_values). */
static int FN(seq2seq)(const ag_model *enc, const ag_model *dec, const fwd_input *src, size_t ns,
                       const int32_t *tgt, size_t nt, const ag_forward_options *o, ag_layer_fn fn,
                       void *user, double *eh, double *dh, ag_error *err)
{
    FN(xws) x;
    if (FN(xws_alloc)(&x, dec, ns, nt, fn != NULL, fn && o->want_scores, fn && o->want_qk,
                      o->attn_f32) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "forward pass: cannot allocate buffers for %zu source and %zu target tokens",
                            ns, nt);
    fwd_input in_src = *src, in_tgt = {.ids = tgt, .cross = &x};
    in_src.cross = &x;
    int rc = FN(forward)(enc, &in_src, ns, o, fn, user, eh, err);
    if (rc == AG_OK)
        rc = FN(forward)(dec, &in_tgt, nt, o, fn, user, dh, err);
    FN(xws_free)(&x);
    return rc;
}

#undef FN
#undef CAT
#undef CAT2
