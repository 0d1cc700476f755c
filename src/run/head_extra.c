/* head_extra.c — what a model layer's heads have beyond ag_head_input
 * (attngeom/stability.h ag_head_extra: QK-norm, yarn/longrope, ALiBi), in one
 * place for the runs that measure heads from their weights (families E
 * and K in heads.c, the linear normaliser in lens.c). */
#include <stdlib.h>

#include "run_int.h"

int agr_layer_extra_init(agr_layer_extra *x, const ag_model *m, int layer,
                         const ag_attn_weights *w, ag_error *err)
{
    const ag_model_config *g = ag_model_get_config(m);
    *x = (agr_layer_extra){.rope = g->rope_extra};
    x->rope.interleaved = 0; /* ag_model_attn_weights de-interleaved GPT-J's pairs */
    x->alibi = g->alibi;
    x->slopes = ag_model_alibi_slopes(m); /* the pass's own, formed once per model */
    if (x->alibi != AG_ALIBI_NONE && (!x->slopes || w->n_head > g->n_head))
        return ag_error_set(err, AG_EINVAL, "layer %d: no ALiBi slopes for %d heads", layer,
                            w->n_head);
    int rc = ag_model_qk_norm(m, layer, &x->gq, &x->gk, err);
    if (rc != AG_OK || !x->gq.data)
        return rc;
    if (!(x->qk = malloc((size_t)w->n_head * sizeof *x->qk)))
        return ag_error_set(err, AG_ENOMEM, "out of memory for %d heads' QK-norm", w->n_head);
    for (int h = 0; h < w->n_head; h++)
        ag_attn_weights_head_qk_norm(w, g->qk_norm, g->norm_eps, &x->gq, &x->gk, h, &x->qk[h]);
    return AG_OK;
}

/* b's table over n tokens, formed (ag_model_position_bias of each head). */
static int stack_bias_build(agr_stack_bias *b, const ag_model *m, size_t n, ag_error *err)
{
    size_t H = (size_t)ag_model_get_config(m)->n_head;
    agr_stack_bias_free(b);
    if (n > SIZE_MAX / sizeof(double) / H / n || !(b->bias = malloc(H * n * n * sizeof(double))))
        return ag_error_set(err, AG_ENOMEM, "out of memory for %zu heads' position bias", H);
    int rc = AG_OK;
    for (size_t h = 0; rc == AG_OK && h < H; h++)
        rc = ag_model_position_bias(m, n, (int)h, b->bias + h * n * n, err);
    if (rc != AG_OK)
        agr_stack_bias_free(b);
    b->n = rc == AG_OK ? n : 0;
    return rc;
}

int agr_layer_extra_bias(agr_layer_extra *x, agr_stack_bias *b, const ag_model *m, size_t n,
                         ag_error *err)
{
    if (ag_model_get_config(m)->positions != AG_POS_RELATIVE)
        return AG_OK;
    int rc = b->bias && b->n == n ? AG_OK : stack_bias_build(b, m, n, err);
    x->bias = b->bias;
    x->n = n;
    return rc;
}

void agr_stack_bias_free(agr_stack_bias *b)
{
    free(b->bias);
    *b = (agr_stack_bias){0};
}

void agr_layer_extra_head(const agr_layer_extra *x, int h, ag_head_extra *ex)
{
    ex->qk = x->qk ? &x->qk[h] : NULL;
    ex->rope = &x->rope;
    ex->alibi = x->alibi;
    ex->alibi_slope = x->slopes ? x->slopes[h] : 0;
    ex->bias = x->bias ? x->bias + (size_t)h * x->n * x->n : NULL;
}

void agr_layer_extra_free(agr_layer_extra *x)
{
    free(x->qk); /* bias: the stack's (agr_stack_bias) */
    ag_array_free(&x->gq);
    ag_array_free(&x->gk);
    *x = (agr_layer_extra){0};
}
