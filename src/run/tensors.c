/* tensors.c — attngeom/run.h: one attention layer's tensors named in a
 * safetensors file (docs/cli.md, "Analysing a model attngeom does not
 * know"), read as [in, out] doubles with shapes checked against each other
 * before any metric runs, and the layer's attention probabilities and
 * per-head inputs made from them (`attngeom layer`; `weights --weights`). */
#include <stdio.h>
#include <string.h>

#include "attngeom.h"
#include "base/sized_int.h"

void ag_run_tensors_free(ag_run_tensors *t)
{
    ag_array *all[] = {&t->x, &t->q, &t->k, &t->v, &t->o, &t->bq, &t->bk, &t->bv};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        ag_array_free(all[k]);
}

/* Read tensor `name`, drop leading 1s down to `rank` (a [1, d_a] kernel of
 * d = 1 stays a matrix), and check its rank; 2-D weights are transposed when
 * linear. */
static int read_tensor(const ag_safetensors *st, const char *path, const char *name,
                       int rank, int linear, ag_array *out, ag_error *err)
{
    int rc = ag_st_read(st, name, out, err);
    if (rc != AG_OK)
        return rc;
    ag_array_squeeze_to(out, rank);
    if (out->ndim != rank)
        return ag_error_set(err, AG_ESHAPE, "%s: tensor '%s' has %d dimensions after dropping "
                            "leading 1s; expected %s", path, name, out->ndim,
                            rank == 2 ? "a matrix" : "a vector");
    ag_error inner = {0};
    if (rank == 2 && linear && (rc = ag_array_transpose2d(out, &inner)) != AG_OK)
        return ag_error_set(err, rc, "%s: tensor '%s': %s", path, name, inner.message);
    return AG_OK;
}

/* A fused tensor (Q|K|V columns, or their biases) split into three. */
static int read_fused(const ag_safetensors *st, const ag_run_layer_spec *s, const char *name,
                      int rank, ag_array *q, ag_array *k, ag_array *v, ag_error *err)
{
    ag_array fused = {0};
    ag_error inner = {0};
    int rc = read_tensor(st, s->weights, name, rank, rank == 2 && s->linear, &fused, err);
    if (rc == AG_OK && (rc = ag_qkv_split(&fused, name, q, k, v, &inner)) != AG_OK)
        ag_error_set(err, rc, "%s: %s", s->weights, inner.message);
    ag_array_free(&fused);
    return rc;
}

static int read_qkv(const ag_safetensors *st, const ag_run_layer_spec *s, ag_run_tensors *t,
                    ag_error *err)
{
    int rc;
    if (s->qkv) {
        rc = read_fused(st, s, s->qkv, 2, &t->q, &t->k, &t->v, err);
    } else {
        rc = read_tensor(st, s->weights, s->q, 2, s->linear, &t->q, err);
        if (rc == AG_OK)
            rc = read_tensor(st, s->weights, s->k, 2, s->linear, &t->k, err);
        if (rc == AG_OK && s->v)
            rc = read_tensor(st, s->weights, s->v, 2, s->linear, &t->v, err);
    }
    if (rc == AG_OK && s->qkv_bias)
        rc = read_fused(st, s, s->qkv_bias, 1, &t->bq, &t->bk, &t->bv, err);
    const char *bias_names[3] = {s->q_bias, s->k_bias, s->v_bias};
    ag_array *bias[3] = {&t->bq, &t->bk, &t->bv};
    for (int b = 0; b < 3 && rc == AG_OK; b++)
        if (bias_names[b])
            rc = read_tensor(st, s->weights, bias_names[b], 1, 0, bias[b], err);
    if (rc == AG_OK && s->o)
        rc = read_tensor(st, s->weights, s->o, 2, s->linear, &t->o, err);
    return rc;
}

static int shape_error(const ag_run_layer_spec *s, const char *name, const ag_array *a,
                       const char *expected, ag_error *err)
{
    if (a->ndim == 1)
        return ag_error_set(err, AG_ESHAPE, "%s: tensor '%s' has shape (%zu,); expected %s",
                            s->weights, name, a->shape[0], expected);
    return ag_error_set(err, AG_ESHAPE, "%s: tensor '%s' has shape (%zu, %zu) as [in, out]; "
                        "expected %s", s->weights, name, a->shape[0], a->shape[1], expected);
}

/* Each bias is as wide as its projection's output, O has a row per output
 * of the query heads. */
static int check_bias_and_o(const ag_run_layer_spec *s, const ag_run_tensors *t, size_t da,
                            ag_error *err)
{
    char want[128];
    const ag_array *b[3] = {&t->bq, &t->bk, &t->bv}, *proj[3] = {&t->q, &t->k, &t->v};
    const char *bn[3] = {s->qkv_bias ? s->qkv_bias : s->q_bias,
                         s->qkv_bias ? s->qkv_bias : s->k_bias,
                         s->qkv_bias ? s->qkv_bias : s->v_bias};
    for (int k = 0; k < 3; k++) {
        size_t width = proj[k]->data ? proj[k]->shape[1] : da;
        snprintf(want, sizeof want, "(%zu,): the width of its projection", width);
        if (b[k]->data && b[k]->shape[0] != width)
            return shape_error(s, bn[k], b[k], want, err);
    }
    snprintf(want, sizeof want, "(%zu, d_out): one row per output of the query heads", da);
    if (t->o.data && t->o.shape[0] != da)
        return shape_error(s, s->o, &t->o, want, err);
    return AG_OK;
}

/* Every shape must agree with the input width d (X's, or Q's rows without
 * X) and with d_a = Q's width. With allow_gqa, K and V may be narrower:
 * H_kv = width / d_h heads, with H_kv dividing H (grouped-query attention). */
static int check_shapes(const ag_run_layer_spec *s, const ag_run_tensors *t, int allow_gqa,
                        ag_error *err)
{
    size_t d = t->x.data ? t->x.shape[1] : t->q.shape[0], da = t->q.shape[1];
    size_t dh = da / (size_t)s->heads;
    char want[128];
    const char *qn = s->qkv ? s->qkv : s->q, *kn = s->qkv ? s->qkv : s->k;
    const char *vn = s->qkv ? s->qkv : s->v;
    snprintf(want, sizeof want, "(%zu, %zu)%s", d, da, t->x.data ? " to match X's width" : "");
    if (t->q.shape[0] != d)
        return shape_error(s, qn, &t->q, want, err);
    if (da == 0 || d == 0)
        return shape_error(s, qn, &t->q, "a non-empty (d, d_a) matrix", err);
    if (da % (size_t)s->heads != 0)
        return ag_error_set(err, AG_ESHAPE, "%s: tensor '%s': width %zu is not divisible by "
                            "--heads %d", s->weights, qn, da, s->heads);
    const ag_array *kv[2] = {&t->k, &t->v};
    const char *kvn[2] = {kn, vn};
    for (int k = 0; k < 2; k++) {
        if (!kv[k]->data)
            continue;
        size_t w = kv[k]->shape[1]; /* dh ≥ 1: da ≥ heads was checked above */
        int gqa_ok = allow_gqa && w > 0 && w % dh == 0 && (size_t)s->heads % (w / dh) == 0;
        if (kv[k]->shape[0] != d || (w != da && !gqa_ok)) {
            snprintf(want, sizeof want, "(%zu, %zu)%s", d, da,
                     allow_gqa ? " or a grouped-query width dividing the heads" : "");
            return shape_error(s, kvn[k], kv[k], want, err);
        }
    }
    return check_bias_and_o(s, t, da, err);
}

static int load_x(const ag_run_layer_spec *s, ag_run_tensors *t, ag_error *err)
{
    int rc = ag_npy_read(s->x, &t->x, err);
    if (rc != AG_OK)
        return rc;
    ag_array_squeeze_to(&t->x, 2); /* [1, d] is one token, [1, n, d] a batch of one */
    if (t->x.ndim != 2 || ag_array_size(&t->x) == 0)
        return ag_error_set(err, AG_ESHAPE, "%s: X must be a non-empty 2-D array [n, d] (after "
                            "dropping leading 1s), it has %d dimensions", s->x, t->x.ndim);
    return AG_OK;
}

int ag_run_tensors_load(const ag_run_layer_spec *spec, ag_run_tensors *t, ag_error *err)
{
    ag_run_layer_spec s = AG_RUN_LAYER_SPEC_DEFAULT;
    *t = (ag_run_tensors){0};
    int rc = AG_SIZED_READ(&s, spec, ag_run_layer_spec, err);
    if (rc == AG_OK && (!s.weights || !(s.qkv || (s.q && s.k)) || s.heads <= 0))
        rc = ag_error_set(err, AG_EINVAL, "ag_run_tensors_load: needs weights, qkv or q and k, "
                          "and heads > 0");
    if (rc == AG_OK && s.x)
        rc = load_x(&s, t, err);
    ag_safetensors *st = NULL;
    if (rc == AG_OK)
        rc = ag_st_open(s.weights, &st, err);
    if (rc == AG_OK) {
        rc = read_qkv(st, &s, t, err);
        ag_st_close(st);
    }
    return rc == AG_OK ? check_shapes(&s, t, !s.x, err) : rc;
}

int ag_run_layer_rope(const ag_run_layer_spec *s, size_t d_h, ag_rope *r, ag_error *err)
{
    *r = (ag_rope){0};
    if (!s->rotary_dim && !s->rope_theta)
        return AG_OK;
    if ((size_t)s->rotary_dim > d_h)
        return ag_error_set(err, AG_EINVAL, "--rotary-dim %d exceeds the head dim %zu",
                            s->rotary_dim, d_h);
    *r = (ag_rope){.rotary_dim = s->rotary_dim ? s->rotary_dim : (int)d_h,
                   .theta = s->rope_theta ? s->rope_theta : 10000.0};
    return AG_OK;
}

/* The kernel spec of s over t; RoPE only when the heads divide d_a (else
 * ag_attention_layer says so). */
static int layer_spec(const ag_run_layer_spec *s, const ag_run_tensors *t,
                      ag_attn_layer_spec *a, ag_error *err)
{
    *a = (ag_attn_layer_spec){.size = sizeof(ag_attn_layer_spec),
        .x = t->x.data, .n = t->x.shape[0], .d = t->x.shape[1],
        .wq = t->q.data, .wk = t->k.data, .bq = t->bq.data, .bk = t->bk.data,
        .d_a = t->q.shape[1], .n_head = s->heads, .scale = s->scale, .causal = s->causal,
        .softcap = s->softcap, .window = s->window, .precision = s->precision,
        .x_name = s->x, .w_name = s->weights};
    if (s->heads > 0 && a->d_a % (size_t)s->heads == 0)
        return ag_run_layer_rope(s, a->d_a / (size_t)s->heads, &a->rope, err);
    return AG_OK;
}

int ag_run_layer_attention(const ag_run_layer_spec *s, const ag_run_tensors *t, ag_array *attn,
                           ag_error *err)
{
    ag_attn_layer_spec a;
    int rc = layer_spec(s, t, &a, err);
    return rc == AG_OK ? ag_attention_layer(&a, attn, err) : rc;
}

void ag_run_layer_head_input(const ag_run_layer_spec *s, const ag_run_tensors *t, int h,
                             ag_head_input *in)
{
    size_t da = t->q.shape[1], dh = da / (size_t)s->heads;
    ag_attn_layer_spec a;
    layer_spec(s, t, &a, NULL); /* RoPE was checked when the attention was made */
    *in = (ag_head_input){
        .x = t->x.data, .n = t->x.shape[0], .d = t->x.shape[1],
        .wq = t->q.data + h * dh, .ldq = da, .wk = t->k.data + h * dh, .ldk = t->k.shape[1],
        .bq = t->bq.data ? t->bq.data + h * dh : NULL,
        .bk = t->bk.data ? t->bk.data + h * dh : NULL,
        .d_h = dh, .scale = s->scale > 0 ? s->scale : 0, .causal = s->causal,
        .rope = a.rope, .softcap = s->softcap, .window = s->window};
}
