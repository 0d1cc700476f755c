/* lens.c — a run's forward pass through its normaliser (issue 28,
 * "Softmax as a lens"; ag_run_options_set_normalizer): the layer callback
 * sees the same pass's heads under sparsemax, entmax, softmax(S/T) of the
 * scores the pass formed (ag_layer_view.scores), or linear attention from
 * each head's Q and K, in place of the model's probabilities. The pass
 * itself, its hidden states and the next layers are unchanged: a
 * counterfactual on each layer's scores, in one place for every run
 * (analyze, attention, the layer runs). */
#include <stdlib.h>

#include "run_int.h"

typedef struct {
    const ag_model *m;
    const ag_run_options *opt;
    ag_layer_fn fn;
    void *user;
    double *buf;  /* (n_head, n, n_kv) the view under the lens */
    size_t cap;   /* buf's doubles: an encoder–decoder pass's views differ */
    ag_error err; /* the lens's own failure */
} lens_job;

/* Every head of v under linear attention, from the layer's weights (and
 * what the heads have beyond them, QK-norm, yarn/longrope: the q, k the
 * scores use). */
static int linear_layer(lens_job *j, const ag_layer_view *v, ag_error *e)
{
    ag_attn_weights w = {0};
    agr_layer_extra x = {.qk = NULL};
    int status = ag_model_attn_weights(j->m, v->layer, &w, e), h = 0;
    if (status == AG_OK)
        status = agr_layer_extra_init(&x, j->m, v->layer, &w, e);
    for (; status == AG_OK && h < v->n_head; h++) {
        ag_head_input in;
        ag_head_extra ex = AG_HEAD_EXTRA_DEFAULT;
        ag_attn_weights_head_input(&w, v->x, v->n, v->d, h, &in);
        agr_layer_extra_head(&x, h, &ex);
        status = ag_head_linear_attention_ex(&in, &ex, j->buf + (size_t)h * v->n * v->n, e);
    }
    ag_attn_weights_free(&w);
    agr_layer_extra_free(&x);
    if (status != AG_OK && h > 0) {
        ag_error inner = *e;
        ag_error_set(e, status, "head %d: %s", h - 1, inner.message);
    }
    return status;
}

static int lens_view(const ag_layer_view *v, void *user)
{
    lens_job *j = user;
    size_t rows = (size_t)v->n_head * v->n, cols = v->n_kv ? v->n_kv : v->n;
    ag_error e = {0};
    if (rows * cols > j->cap) {
        free(j->buf);
        j->cap = (j->buf = malloc(rows * cols * sizeof *j->buf)) ? rows * cols : 0;
        if (!j->buf)
            return ag_error_set(&j->err, AG_ENOMEM, "out of memory for %d heads", v->n_head);
    }
    /* a row of the scores: head r / n, query r % n, over its n_kv keys
     * (a cross-attention's: the sources) */
    int status = j->opt->normalizer == AG_NORMALIZER_LINEAR
                     ? linear_layer(j, v, &e)
                     : ag_normalize_rows((ag_normalizer)j->opt->normalizer,
                                         j->opt->normalizer_param, v->scores, rows, cols,
                                         j->buf, &e);
    if (status != AG_OK)
        return ag_error_set(&j->err, status, "layer %d: %s", v->layer, e.message);
    ag_layer_view lv = *v;
    lv.attn = j->buf;
    lv.attn_f32 = NULL; /* the pass's softmax, which the normaliser replaced */
    return j->fn(&lv, j->user);
}

int agr_forward(const ag_model *m, const ag_run_input *in, const ag_forward_options *fo,
                const ag_run_options *opt, ag_layer_fn fn, void *user, double *hidden,
                ag_error *err)
{
    return agr_forward_pair(m, in, fo, opt, fn, user, hidden, NULL, err);
}

int agr_forward_pair(const ag_model *m, const ag_run_input *in, const ag_forward_options *fo,
                     const ag_run_options *opt, ag_layer_fn fn, void *user, double *enc_hidden,
                     double *dec_hidden, ag_error *err)
{
    if (!fn || !opt || !agr_lens_active(opt))
        return ag_run_forward_seq2seq(m, in, fo, fn, user, enc_hidden, dec_hidden, err);
    /* linear attention re-forms φ(Q)φ(K)ᵀ from one stack's head input:
     * T5's additive position bias has no place in it (as ALiBi's), and a
     * cross-attention's K comes from the encoder's output */
    if (ag_model_seq2seq(m) && opt->normalizer == AG_NORMALIZER_LINEAR)
        return ag_error_set(err, AG_EINVAL, "linear attention is not taken by an "
                            "encoder-decoder model (sparsemax, entmax15, entmax:ALPHA and "
                            "--temperature are)");
    ag_forward_options f = *fo;
    f.want_scores = fo->want_scores || opt->normalizer != AG_NORMALIZER_LINEAR;
    lens_job j = {.m = m, .opt = opt, .fn = fn, .user = user};
    int status = ag_run_forward_seq2seq(m, in, &f, lens_view, &j, enc_hidden, dec_hidden, err);
    if (status != AG_OK && j.err.status != AG_OK)
        *err = j.err;
    free(j.buf);
    return status;
}

/* Each T its own run, the same as a run at that T alone (the records of
 * one then the next): one place for the record runs over several
 * temperatures (analyze, rollout, contributions). */
int agr_each_temperature(const ag_run_options *opt, agr_records_fn fn, void *user,
                         ag_record_list **out, ag_error *err)
{
    if (opt->ntemperatures == 0)
        return fn(opt, user, out, err);
    ag_run_options at = *opt;
    at.ntemperatures = 0;
    at.normalizer = AG_NORMALIZER_SOFTMAX;
    ag_record_list *one = NULL;
    int status = *out || (*out = ag_record_list_new()) ? AG_OK
                 : ag_error_set(err, AG_ENOMEM, "out of memory for records");
    for (size_t k = 0; status == AG_OK && k < opt->ntemperatures; k++) {
        at.normalizer_param = opt->temperatures[k];
        status = fn(&at, user, &one, err);
        for (size_t r = 0; status == AG_OK && r < ag_record_list_count(one); r++)
            ag_record_set_temperature(ag_record_list_at(one, r), at.normalizer_param);
        if (status == AG_OK && one)
            status = ag_record_list_move(*out, one, err);
        ag_record_list_free(one);
        one = NULL;
    }
    return status;
}
