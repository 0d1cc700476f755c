/* access_model.c — attngeom/access.h's model runs (attention, analyze,
 * weights), each through the library calls of the command it stands for. */
#include <stdlib.h>
#include <string.h>

#include "run_int.h"

/* ---- selections --------------------------------------------------------- */

/* The sizes of ag_model_attention_into's attn. A binding's closed handle
 * arrives as NULL: refused, never dereferenced. */
int ag_model_selected(const ag_model *m, const ag_run_options *opt, size_t *layers,
                      size_t *heads, ag_error *err)
{
    ag_selection *l = NULL, *h = NULL;
    int status = m ? agr_model_selections(m, opt, &l, &h, err)
                   : ag_error_set(err, AG_EINVAL, "no model (NULL)");
    *layers = status == AG_OK ? ag_selection_count(l) : 0;
    *heads = status == AG_OK ? ag_selection_count(h) : 0;
    ag_selection_free(l);
    ag_selection_free(h);
    return status;
}

/* ---- attention and analyze: wrappers of attngeom/run.h ----------------- */

static int copy_heads(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer;
    double **next = user;
    memcpy(*next, attn, heads * n * n * sizeof **next);
    *next += heads * n * n;
    return 0;
}

int ag_model_attention_into(const ag_model *m, const int32_t *ids, size_t n,
                            const ag_run_options *opt, double *attn, double *hidden,
                            ag_error *err)
{
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = -1};
    return ag_run_attention(m, &in, opt, NULL, attn ? copy_heads : NULL, NULL, &attn, hidden,
                            err);
}

int ag_model_analyze(const ag_model *m, const int32_t *ids, size_t n, long text,
                     const ag_metric_set *sel, const ag_run_options *opt,
                     ag_record_list **out, ag_error *err)
{
    ag_run_options o = *agr_options(opt);
    o.metrics = sel;
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = text};
    return ag_run_analyze(m, &in, &o, NULL, out, err);
}

/* ---- weights: a wrapper of attngeom/run.h ------------------------------ */

int ag_model_weight_records(const ag_model *m, const ag_metric_set *sel,
                            const ag_run_options *opt, ag_record_list **out, ag_error *err)
{
    ag_run_options o = *agr_options(opt);
    o.metrics = sel;
    return ag_run_weights(m, NULL, &o, NULL, out, err);
}
