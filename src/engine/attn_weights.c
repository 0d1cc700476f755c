/* attn_weights.c — one layer's attention projections as doubles in [in, out]
 * form (ag_model_attn_weights, family D and E): every head layout (separate,
 * GPT-2 / Phi-3 column blocks, GPT-NeoX per-head interleave, grouped and
 * multi-query) read through agm_qkv_cols, with the score scale, rotary
 * embedding, soft-capping and window the forward pass uses for that layer;
 * then one head's view of them (ag_attn_weights_head_input, _head_factors). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/access.h"
#include "model_int.h"

/* Column c of a head as stored, for a head whose first `pairs` columns are
 * GPT-J's rotate_every_two pairs (2j, 2j + 1): listed as (j, j + pairs/2),
 * the rotate-half pairs of ag_rope. q·k is unchanged when q and k are
 * permuted alike, so ag_rope's rotation of the permuted W_Q, W_K gives
 * GPT-J's probabilities exactly (family E). pairs 0: the identity. */
static size_t head_col(size_t c, size_t pairs)
{
    if (c >= pairs)
        return c;
    return c < pairs / 2 ? 2 * c : 2 * (c - pairs / 2) + 1;
}

/* heads·hd columns of a projection, head h's from c.off + h·c.stride
 * (de-interleaved over the first `pairs`, head_col), as a (in, heads·hd)
 * [in, out] array. */
static int lin_heads(const agm_lin *l, agm_cols c, int heads, int hd, size_t pairs, ag_array *out,
                     ag_error *err)
{
    size_t w = (size_t)heads * hd, in = (size_t)l->in, shape[2] = {in, w};
    int rc = ag_array_alloc(out, 2, shape, err);
    /* Stored runs converted whole (agm_to_double, one dtype switch a run:
     * per-value agm_at was a visible share of family K's time): a stored
     * column of nn.Linear's [out, in] is `in` contiguous values; Conv1D's
     * [in, out] row holds each head's hd columns contiguously. */
    double *run = rc == AG_OK ? malloc((l->linear ? in : (size_t)hd) * sizeof *run) : NULL;
    if (rc == AG_OK && !run) {
        ag_array_free(out);
        return ag_error_set(err, AG_ENOMEM, "out of memory for a projection's column");
    }
    for (size_t j = 0; rc == AG_OK && l->linear && j < w; j++) {
        size_t col = agm_col(c, j / hd, (size_t)hd) + head_col(j % hd, pairs);
        agm_to_double(&l->w, col * in, in, run);
        for (size_t i = 0; i < in; i++)
            out->data[i * w + j] = run[i];
    }
    for (size_t i = 0; rc == AG_OK && !l->linear && i < in; i++)
        for (size_t h = 0; h < (size_t)heads; h++) {
            agm_to_double(&l->w, i * l->out + agm_col(c, h, (size_t)hd), (size_t)hd, run);
            for (size_t k = 0; k < (size_t)hd; k++)
                out->data[i * w + h * hd + k] = run[head_col(k, pairs)];
        }
    free(run);
    return rc;
}

/* The same columns of the projection's bias; an empty array if it has none. */
static int bias_heads(const agm_lin *l, agm_cols c, int heads, int hd, size_t pairs, ag_array *out,
                      ag_error *err)
{
    if (!l->b)
        return AG_OK;
    size_t w = (size_t)heads * hd, shape[1] = {w};
    int rc = ag_array_alloc(out, 1, shape, err);
    for (size_t j = 0; rc == AG_OK && j < w; j++)
        out->data[j] = l->b[agm_col(c, j / hd, (size_t)hd) + head_col(j % hd, pairs)];
    return rc;
}

/* W and b of Q (which 0), K (1) or V (2) of y into *w, *b; a cross-attention
 * layer (cross 1) has its own q, k, v projections, one head each per query
 * head, as the pass reads them (forward_tmpl.h cross). */
static int qkv_part(const ag_model *m, const agm_layer *y, int cross, int which, ag_array *w,
                    ag_array *b, ag_error *err)
{
    const ag_model_config *g = &m->cfg;
    const agm_lin *sep[3] = {&y->q, &y->k, &y->v};
    const agm_lin *l = cross || g->qkv == AG_QKV_SEPARATE ? sep[which] : &y->qkv;
    int heads = which && !cross ? g->n_kv_head : g->n_head;
    agm_cols c = cross ? (agm_cols){0, g->head_dim, 0} : agm_qkv_cols(g, which);
    size_t pairs = g->rope_extra.interleaved && which < 2 && !cross ? (size_t)g->rope.rotary_dim : 0;
    int rc = lin_heads(l, c, heads, g->head_dim, pairs, w, err);
    return rc ? rc : bias_heads(l, c, heads, g->head_dim, pairs, b, err);
}

/* DINOv2's layer scale λ1 (modeling_dinov2.py Dinov2LayerScale) multiplies
 * o's output, so it is folded into W_O's columns and b_O: the map from the
 * heads to the residual stream is then the one the pass adds. a is [rows,
 * d] (a vector: one row); ls NULL: nothing. */
static void layer_scale_cols(const float *ls, ag_array *a)
{
    size_t d = a->shape[a->ndim - 1], rows = 1;
    for (int i = 0; i + 1 < a->ndim; i++)
        rows *= a->shape[i];
    for (size_t r = 0; ls && r < rows; r++)
        for (size_t c = 0; c < d; c++)
            a->data[r * d + c] *= (double)ls[c];
}

/* W_Q, W_K, W_V and W_O of y (layer `layer` of m; cross: its
 * cross-attention) into *out, whose other fields the caller has set. */
static int layer_weights(const ag_model *m, const agm_layer *y, int cross, ag_attn_weights *out,
                         ag_error *err)
{
    const ag_model_config *g = &m->cfg;
    int rc = qkv_part(m, y, cross, 0, &out->wq, &out->bq, err);
    if (rc == AG_OK)
        rc = qkv_part(m, y, cross, 1, &out->wk, &out->bk, err);
    if (rc == AG_OK)
        rc = qkv_part(m, y, cross, 2, &out->wv, &out->bv, err);
    if (rc == AG_OK) /* every output column of o: one "head" as wide as d */
        rc = lin_heads(&y->o, (agm_cols){0, g->d_model, 0}, 1, g->d_model, 0, &out->wo, err);
    if (rc == AG_OK)
        layer_scale_cols(y->ls1.w, &out->wo);
    if (rc != AG_OK)
        ag_attn_weights_free(out);
    return rc;
}

/* The checks both entry points share: out cleared, layer in range. */
static int check_layer(const ag_model *m, int layer, ag_attn_weights *out, ag_error *err)
{
    if (!m || !out)
        return ag_error_set(err, AG_EINVAL, "attention weights: missing argument");
    memset(out, 0, sizeof *out);
    if (layer < 0 || layer >= m->cfg.n_layer)
        return ag_error_set(err, AG_ERANGE, "layer %d is outside 0..%d", layer,
                            m->cfg.n_layer - 1);
    return AG_OK;
}

int ag_model_attn_weights(const ag_model *m, int layer, ag_attn_weights *out, ag_error *err)
{
    int rc = check_layer(m, layer, out, err);
    if (rc != AG_OK)
        return rc;
    const ag_model_config *g = &m->cfg;
    *out = (ag_attn_weights){.layer = layer, .n_head = g->n_head, .n_kv_head = g->n_kv_head,
                             .head_dim = g->head_dim, .causal = g->causal,
                             .scale = g->attn_scale / (g->scale_by_inverse_layer ? layer + 1 : 1),
                             .softcap = g->softcap, .window = m->window[layer]};
    if (g->positions == AG_POS_ROPE) /* Gemma-3: the sliding layers' own */
        out->rope = m->window[layer] && g->rope_local.rotary_dim ? g->rope_local : g->rope;
    return layer_weights(m, &m->layers[layer], 0, out, err);
}

int ag_model_cross_attn_weights(const ag_model *m, int layer, ag_attn_weights *out,
                                ag_error *err)
{
    int rc = check_layer(m, layer, out, err);
    if (rc != AG_OK)
        return rc;
    if (!m->cross)
        return ag_error_set(err, AG_EINVAL, "%s: no cross-attention (only an encoder-decoder "
                            "model's decoder has one)", ag_model_type(m));
    const ag_model_config *g = &m->cfg;
    /* the pass's cross-attention: every source key visible, no position
     * term, the stack's score scale (T5 1, BART/Whisper head_dim^-1/2) */
    *out = (ag_attn_weights){.layer = layer, .n_head = g->n_head, .n_kv_head = g->n_head,
                             .head_dim = g->head_dim, .scale = g->attn_scale};
    return layer_weights(m, &m->cross[layer], 1, out, err);
}

int ag_model_position_bias(const ag_model *m, size_t n, int h, double *out, ag_error *err)
{
    if (!m || !out || n == 0 || n > INT_MAX)
        return ag_error_set(err, AG_EINVAL, "position bias: missing argument or n = %zu", n);
    const ag_model_config *g = &m->cfg;
    if (g->positions != AG_POS_RELATIVE || !m->rel_bias.p)
        return ag_error_set(err, AG_EINVAL, "position bias: %s has none (not T5's relative "
                            "positions)", ag_model_type(m));
    if (h < 0 || h >= g->n_head)
        return ag_error_set(err, AG_ERANGE, "head %d is outside 0..%d", h, g->n_head - 1);
    /* the pass's table (forward_tmpl.h rel_bias_table), head h's */
    double *t = malloc((2 * n - 1) * sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a position bias of %zu tokens",
                            n);
    agm_t5_bias_diagonals(m, n, h, t);
    for (size_t i = 0; i < n; i++)
        memcpy(out + i * n, t + n - 1 - i, n * sizeof *t);
    free(t);
    return AG_OK;
}

void ag_attn_weights_free(ag_attn_weights *w)
{
    if (!w)
        return;
    ag_array *all[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->bq, &w->bk, &w->bv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ag_array_free(all[i]);
}

/* The d values of a QK-norm's weight, plus `add`, as a new (cnt) array. */
static int qk_scale(const float *w, double add, size_t cnt, ag_array *out, ag_error *err)
{
    size_t shape[1] = {cnt};
    int rc = ag_array_alloc(out, 1, shape, err);
    for (size_t j = 0; rc == AG_OK && j < cnt; j++)
        out->data[j] = (double)w[j] + add;
    return rc;
}

int ag_model_qk_norm(const ag_model *m, int layer, ag_array *gq, ag_array *gk, ag_error *err)
{
    if (!m || !gq || !gk)
        return ag_error_set(err, AG_EINVAL, "QK-norm: missing argument");
    memset(gq, 0, sizeof *gq);
    memset(gk, 0, sizeof *gk);
    const ag_model_config *g = &m->cfg;
    if (layer < 0 || layer >= g->n_layer)
        return ag_error_set(err, AG_ERANGE, "layer %d is outside 0..%d", layer, g->n_layer - 1);
    if (g->qk_norm == AG_QK_NORM_NONE)
        return AG_OK;
    const agm_layer *y = &m->layers[layer];
    size_t hd = (size_t)g->head_dim, head = g->qk_norm == AG_QK_NORM_HEAD;
    double add = g->norm == AG_NORM_RMS_1P ? 1 : 0; /* Gemma3RMSNorm: 1 + w */
    int rc = qk_scale(y->q_norm.w, add, head ? hd : (size_t)g->n_head * hd, gq, err);
    if (rc == AG_OK)
        rc = qk_scale(y->k_norm.w, add, head ? hd : (size_t)g->n_kv_head * hd, gk, err);
    return rc;
}

/* ---- heads of a layer's weights (attngeom/access.h) --------------------- */

void ag_attn_weights_head_input(const ag_attn_weights *w, const double *x, size_t n, size_t d,
                                int h, ag_head_input *in)
{
    size_t hd = (size_t)w->head_dim, kv = (size_t)(h / (w->n_head / w->n_kv_head));
    *in = (ag_head_input){
        .x = x, .n = n, .d = d,
        .wq = w->wq.data + h * hd, .ldq = w->wq.shape[1],
        .wk = w->wk.data + kv * hd, .ldk = w->wk.shape[1],
        .bq = w->bq.data ? w->bq.data + h * hd : NULL,
        .bk = w->bk.data ? w->bk.data + kv * hd : NULL,
        .d_h = hd, .scale = w->scale, .causal = w->causal, .rope = w->rope,
        .softcap = w->softcap, .window = w->window};
}

void ag_attn_weights_head_qk_norm(const ag_attn_weights *w, ag_qk_norm kind, double eps,
                                   const ag_array *gq, const ag_array *gk, int h,
                                   ag_head_qk_norm *out)
{
    size_t hd = (size_t)w->head_dim, kv = (size_t)(h / (w->n_head / w->n_kv_head));
    *out = (ag_head_qk_norm){.kind = gq && gq->data && gk && gk->data ? kind : AG_QK_NORM_NONE,
                             .eps = eps, .gq = gq ? gq->data : NULL, .gk = gk ? gk->data : NULL};
    if (out->kind != AG_QK_NORM_FULL)
        return;
    out->wq = w->wq.data; /* the whole projections: the norm spans every head */
    out->wk = w->wk.data;
    out->bq = w->bq.data;
    out->bk = w->bk.data;
    out->q_width = w->wq.shape[1];
    out->k_width = w->wk.shape[1];
    out->q_off = (size_t)h * hd;
    out->k_off = kv * hd;
}

void ag_attn_weights_head_factors(const ag_attn_weights *w, size_t d, int h, ag_head_factors *f)
{
    size_t hd = (size_t)w->head_dim, head = (size_t)h;
    size_t g = head / ((size_t)w->n_head / (size_t)w->n_kv_head); /* key/value head (GQA) */
    size_t d_out = w->wo.data ? w->wo.shape[1] : 0;
    *f = (ag_head_factors){
        .d = d, .d_h = hd, .d_out = d_out,
        .wq = w->wq.data + head * hd, .ldq = w->wq.shape[1],
        .wk = w->wk.data + g * hd, .ldk = w->wk.shape[1],
        .wv = w->wv.data ? w->wv.data + g * hd : NULL, .ldv = w->wv.data ? w->wv.shape[1] : 0,
        .wo = w->wo.data ? w->wo.data + head * hd * d_out : NULL, .ldo = d_out};
}

/* ---- the rest of an attention block (attngeom/contributions.h) --------- */

/* d values of v (NULL: `fill`), plus `add`, into a new (d) array. */
static int vec_of(const float *v, double fill, double add, int d, ag_array *out, ag_error *err)
{
    size_t shape[1] = {(size_t)d};
    int rc = ag_array_alloc(out, 1, shape, err);
    for (int j = 0; rc == AG_OK && j < d; j++)
        out->data[j] = (v ? (double)v[j] : fill) + add;
    return rc;
}

int ag_model_block_params(const ag_model *m, int layer, ag_block_params *out, ag_error *err)
{
    if (!m || !out)
        return ag_error_set(err, AG_EINVAL, "block parameters: missing argument");
    memset(out, 0, sizeof *out);
    const ag_model_config *g = &m->cfg;
    if (layer < 0 || layer >= g->n_layer)
        return ag_error_set(err, AG_ERANGE, "layer %d is outside 0..%d", layer, g->n_layer - 1);
    const agm_layer *y = &m->layers[layer];
    out->layer = layer;
    out->residual = g->residual;
    out->norm = g->norm;
    out->eps = g->norm_eps;
    out->after = g->residual == AG_RESIDUAL_POST ? AG_AFTER_SUM
                 : g->sandwich_norms             ? AG_AFTER_BRANCH
                                                 : AG_AFTER_NONE;
    /* POST: norm1 follows the add (arch.h); the sandwich: attn_out */
    const agm_norm *nm = out->after == AG_AFTER_SUM ? &y->n1 : &y->attn_out;
    int d = g->d_model, rc = AG_OK;
    if (out->after != AG_AFTER_NONE) {
        rc = vec_of(nm->w, 1, g->norm == AG_NORM_RMS_1P ? 1 : 0, d, &out->gamma, err);
        if (rc == AG_OK && g->norm == AG_NORM_LAYER)
            rc = vec_of(nm->b, 0, 0, d, &out->beta, err);
    }
    if (rc == AG_OK && y->o.b)
        rc = vec_of(y->o.b, 0, 0, d, &out->bo, err);
    if (rc == AG_OK && y->o.b)
        layer_scale_cols(y->ls1.w, &out->bo);
    if (rc != AG_OK)
        ag_block_params_free(out);
    return rc;
}

void ag_block_params_free(ag_block_params *p)
{
    if (!p)
        return;
    ag_array_free(&p->gamma);
    ag_array_free(&p->beta);
    ag_array_free(&p->bo);
}
