/* layer.c — attngeom/run.h: `attngeom layer` as one run: the named
 * tensors (tensors.c), the layer's attention, and a record per head
 * through ag_run_heads, family E's input taken from the tensors as they
 * are (keys not grouped by query group: the command's values). */
#include <stdio.h>

#include "attngeom.h"

typedef struct {
    const ag_run_layer_spec *s;
    const ag_run_tensors *t;
} tensor_input;

static void head_input(const void *ctx, int h, ag_head_input *in)
{
    const tensor_input *ti = ctx;
    ag_run_layer_head_input(ti->s, ti->t, h, in);
}

int ag_run_layer_records(const ag_run_layer_spec *s, const ag_run_tensors *t,
                         const ag_array *attn, const ag_run_options *opt, ag_workers *w,
                         ag_record_list *out, ag_error *err)
{
    tensor_input ti = {s, t};
    ag_run_layer_heads L = AG_RUN_LAYER_HEADS_DEFAULT;
    L.attn = attn->data;
    L.n = attn->shape[1];
    L.n_head = s->heads;
    L.input = head_input;
    L.input_ctx = &ti;
    ag_error inner = {0};
    int h = -1, status = ag_run_heads(w, &L, opt, out, &h, &inner);
    if (status != AG_OK && h >= 0)
        return ag_error_set(err, status, "%s: head %d: %s", s->weights, h, inner.message);
    if (status != AG_OK && err)
        *err = inner;
    return status;
}

int ag_run_layer(const ag_run_layer_spec *s, const ag_run_options *opt, ag_workers *w,
                 ag_array *attn, ag_record_list **out, ag_error *err)
{
    ag_run_tensors t = {0};
    ag_array a = {0};
    *out = NULL;
    int status = s->x ? ag_run_tensors_load(s, &t, err)
                      : ag_error_set(err, AG_EINVAL, "ag_run_layer: needs x");
    if (status == AG_OK)
        status = ag_run_layer_attention(s, &t, &a, err);
    if (status == AG_OK && !(*out = ag_record_list_new()))
        status = ag_error_set(err, AG_ENOMEM, "out of memory for records");
    if (status == AG_OK)
        status = ag_run_layer_records(s, &t, &a, opt, w, *out, err);
    if (status != AG_OK) {
        ag_record_list_free(*out);
        *out = NULL;
    }
    if (status == AG_OK && attn)
        *attn = a;
    else
        ag_array_free(&a);
    ag_run_tensors_free(&t);
    return status;
}
