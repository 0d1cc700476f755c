/* bench_analyze.c — the costly families on a real model: what
 * `attngeom analyze models/tiny-gpt2 --text <200 tokens> --metrics
 * jacobian_norm,ollivier_mean` does, timed per head and per family.
 * Run from the repository root (make bench). Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <attngeom.h>

#include "bench_clock.h"

#define MODEL "models/tiny-gpt2"

/* Genesis 1:1-13 (KJV), about 300 GPT-2 tokens; the first 200 are used. */
static const char text[] =
    "In the beginning God created the heaven and the earth. And the earth was "
    "without form, and void; and darkness was upon the face of the deep. And the "
    "Spirit of God moved upon the face of the waters. And God said, Let there be "
    "light: and there was light. And God saw the light, that it was good: and God "
    "divided the light from the darkness. And God called the light Day, and the "
    "darkness he called Night. And the evening and the morning were the first day. "
    "And God said, Let there be a firmament in the midst of the waters, and let it "
    "divide the waters from the waters. And God made the firmament, and divided the "
    "waters which were under the firmament from the waters which were above the "
    "firmament: and it was so. And God called the firmament Heaven. And the evening "
    "and the morning were the second day. And God said, Let the waters under the "
    "heaven be gathered together unto one place, and let the dry land appear: and "
    "it was so. And God called the dry land Earth; and the gathering together of the "
    "waters called he Seas: and God saw that it was good.";

typedef struct {
    const ag_model *model;
    double t_jacobian, t_ollivier, sum;
    int heads;
} bench_ctx;

static int per_layer(const ag_layer_view *v, void *user)
{
    bench_ctx *c = user;
    ag_attn_weights w = {0};
    ag_metric_set *jac = NULL, *oll = NULL;
    ag_record *r = ag_record_new();
    int status = r ? AG_OK : AG_ENOMEM;
    if (status == AG_OK)
        status = ag_metric_set_new(AG_FAMILIES_HEADS, "jacobian_norm", &jac, NULL);
    if (status == AG_OK)
        status = ag_metric_set_new(AG_FAMILIES_HEADS, "ollivier_mean", &oll, NULL);
    if (status == AG_OK)
        status = ag_model_attn_weights(c->model, v->layer, &w, NULL);
    for (int h = 0; status == AG_OK && h < v->n_head; h++) {
        size_t hd = (size_t)w.head_dim;
        ag_head_input in = {.x = v->x, .n = v->n, .d = v->d,
                            .wq = w.wq.data + h * hd, .ldq = w.wq.shape[1],
                            .wk = w.wk.data + h * hd, .ldk = w.wk.shape[1],
                            .bq = w.bq.data ? w.bq.data + h * hd : NULL,
                            .bk = w.bk.data ? w.bk.data + h * hd : NULL,
                            .d_h = hd, .scale = w.scale, .causal = w.causal};
        ag_record_init(r, v->layer, h, v->n, v->n);
        double t0 = bench_now(CLOCK_MONOTONIC);
        status = ag_stability_metrics(&in, NULL, jac, r, NULL);
        double t1 = bench_now(CLOCK_MONOTONIC);
        if (status == AG_OK)
            status = ag_matrix_metrics(v->attn + (size_t)h * v->n * v->n, v->n, v->n, oll, r, NULL);
        double t2 = bench_now(CLOCK_MONOTONIC);
        c->t_jacobian += t1 - t0;
        c->t_ollivier += t2 - t1;
        double jn, om;
        ag_record_value(r, AG_M_JACOBIAN_NORM, &jn);
        ag_record_value(r, AG_M_OLLIVIER_MEAN, &om);
        c->sum += jn + om;
        c->heads++;
    }
    ag_attn_weights_free(&w);
    ag_record_free(r);
    ag_metric_set_free(jac);
    ag_metric_set_free(oll);
    return status;
}

int main(void)
{
    ag_model *m = NULL;
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    int32_t *ids = NULL;
    size_t n = 0;
    if (ag_model_load(MODEL, &m, &err) != AG_OK || ag_tokenizer_load(MODEL, &tok, &err) != AG_OK ||
        ag_tokenizer_encode(tok, text, strlen(text), &ids, &n, &err) != AG_OK) {
        fprintf(stderr, "bench_analyze: %s (run from the repository root)\n", err.message);
        return 1;
    }
    if (n > 200)
        n = 200;
    bench_ctx c = {.model = m};
    double t0 = bench_now(CLOCK_MONOTONIC);
    int status = ag_model_forward(m, ids, n, AG_PRECISION_F32, per_layer, &c, NULL, &err);
    double total = bench_now(CLOCK_MONOTONIC) - t0;
    if (status != AG_OK) {
        fprintf(stderr, "bench_analyze: forward pass failed (%s)\n", ag_strerror(status));
        return 1;
    }
    printf("bench_analyze: tiny-gpt2, %zu tokens, %d heads: jacobian_norm %.1f ms/head, "
           "ollivier_mean %.1f ms/head, whole pass %.2f s (checksum %.6g)\n",
           n, c.heads, 1e3 * c.t_jacobian / c.heads, 1e3 * c.t_ollivier / c.heads, total, c.sum);
    free(ids);
    ag_tokenizer_free(tok);
    ag_model_free(m);
    return 0;
}
