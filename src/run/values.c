/* values.c — family H's value norms of a model's layer (attngeom/run.h):
 * per query head h the norms ‖f_h(x_j)‖ of what it writes for each token
 * (ag_value_norms on its key/value head's W_V, b_V and its rows of W_O),
 * and the norm matrix N^h_ij = A^h_ij ‖f_h(x_j)‖ (Kobayashi et al. 2020,
 * §3) of every head of a layer. */
#include <stdlib.h>

#include "run_int.h"

int agr_head_value_norms(const ag_attn_weights *w, const double *x, size_t n, size_t d, int h,
                         double *norms, ag_error *err)
{
    ag_head_factors f;
    ag_attn_weights_head_factors(w, d, h, &f);
    size_t g = (size_t)h / (size_t)(w->n_head / w->n_kv_head); /* its key/value head (GQA) */
    const double *bv = w->bv.data ? w->bv.data + g * (size_t)w->head_dim : NULL;
    return ag_value_norms(&f, bv, x, n, norms, err);
}

int ag_run_value_norms(const ag_attn_weights *w, const ag_layer_view *v, double *N,
                       ag_error *err)
{
    if (!w || !v || !N || !v->x || !v->attn)
        return ag_error_set(err, AG_EINVAL, "value norms: NULL argument");
    if (w->n_head != v->n_head || w->n_kv_head < 1 || w->n_head % w->n_kv_head ||
        !w->wv.data || !w->wo.data || w->wv.shape[0] != v->d)
        return ag_error_set(err, AG_EINVAL, "value norms: layer %d's weights do not fit its "
                            "view (%d heads, width %zu)", v->layer, v->n_head, v->d);
    double *norms = malloc((v->n ? v->n : 1) * sizeof *norms);
    if (!norms)
        return ag_error_set(err, AG_ENOMEM, "out of memory for %zu value norms", v->n);
    int status = AG_OK;
    size_t nn = v->n * v->n;
    for (int h = 0; h < v->n_head && status == AG_OK; h++) {
        ag_error e = {0};
        status = agr_head_value_norms(w, v->x, v->n, v->d, h, norms, &e);
        if (status != AG_OK) {
            ag_error_set(err, status, "layer %d head %d: %s", v->layer, h, e.message);
            break;
        }
        const double *A = v->attn + (size_t)h * nn;
        double *Nh = N + (size_t)h * nn;
        for (size_t k = 0; k < nn; k++)
            Nh[k] = A[k] * norms[k % v->n];
    }
    free(norms);
    return status;
}
