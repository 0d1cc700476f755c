/* model_heads.c — the attention engine from C: load a Hugging Face model
 * folder, tokenize a text with its own tokenizer, run the forward pass and
 * print each head's normalised entropy and sink mass as the layers stream by.
 *
 *   make examples && build/examples/model_heads models/tiny-gpt2 "Some text."
 *
 * The callback sees one layer at a time (memory grows with one layer's
 * attention, not all layers'). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attngeom.h>

/* What the callback measures with: the selection and one record, reused
 * for every head (both the library's: ABI rule, core.h). */
typedef struct {
    const ag_metric_set *sel;
    ag_record *rec;
} heads_ctx;

static int print_layer(const ag_layer_view *v, void *user)
{
    const heads_ctx *c = user;
    for (int h = 0; h < v->n_head; h++) {
        ag_error err = {0};
        ag_record_init(c->rec, v->layer, h, v->n, v->n);
        const double *A = v->attn + (size_t)h * v->n * v->n; // (n, n)
        int status = ag_matrix_metrics(A, v->n, v->n, c->sel, c->rec, &err);
        if (status != AG_OK) {
            fprintf(stderr, "model_heads: layer %d head %d: %s\n", v->layer, h, err.message);
            return status; /* stops the pass; ag_model_forward returns it */
        }
        double entropy, sink;
        ag_record_value(c->rec, AG_M_ENTROPY_NORMALIZED, &entropy);
        ag_record_value(c->rec, AG_M_SINK_MASS, &sink);
        printf("layer %d head %d: entropy_normalized %.4f  sink_mass %.4f\n", v->layer, h,
               entropy, sink);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: model_heads MODEL_DIR TEXT\n");
        return 2;
    }
    ag_model *model = NULL;
    ag_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    ag_error err = {0};
    int status = ag_model_load(argv[1], &model, &err);
    if (status == AG_OK)
        status = ag_tokenizer_load(argv[1], &tok, &err);
    if (status == AG_OK)
        status = ag_tokenizer_encode(tok, argv[2], strlen(argv[2]), &ids, &n, &err);
    ag_metric_set *sel = NULL;
    ag_record *rec = NULL;
    if (status == AG_OK)
        status = ag_metric_set_new(AG_FAMILIES_MATRIX, "entropy_normalized,sink_mass", &sel, &err);
    if (status == AG_OK && !(rec = ag_record_new()))
        status = ag_error_set(&err, AG_ENOMEM, "out of memory");
    if (status == AG_OK) {
        heads_ctx c = {sel, rec};
        printf("%zu tokens\n", n);
        status = ag_model_forward(model, ids, n, AG_PRECISION_F32, print_layer, &c, NULL, &err);
    }
    ag_record_free(rec);
    ag_metric_set_free(sel);
    if (status != AG_OK && err.message[0])
        fprintf(stderr, "model_heads: %s\n", err.message);
    free(ids);
    ag_tokenizer_free(tok);
    ag_model_free(model);
    return status == AG_OK ? 0 : 1;
}
