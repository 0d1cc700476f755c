/* probe.c — Olsson et al. (2022)'s induction probe (attngeom/run.h, "the
 * induction probe"; docs/metrics.md): a block of random tokens repeated,
 * run once through the model, and every selected head's attention on the
 * key right after the previous copy of each token.
 *
 * The draw follows TransformerLens's tutorial (ARENA's
 * generate_repeated_tokens: torch.randint(0, d_vocab) for each of the T
 * positions, uniform and with replacement, the block then repeated), from
 * the ids that are real, non-special tokens of both the model and the
 * tokenizer; the generator is the one the library's other seeded draws use
 * (GSL's MT19937 set to the seed, gsl_rng_uniform_int), run once before the
 * pass, so the sequence is the same for a seed whatever the threads. Where
 * ARENA prepends a BOS token to every model, the sequence here is framed as
 * the model's tokenizer frames a text (its post-processor: BERT's [CLS] ...
 * [SEP], Llama's <s>, nothing for GPT-2), so the model sees the special
 * tokens it was trained with. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "run_int.h"

/* The ids [0, min(model vocabulary, tokenizer's)) that name a token and
 * are not special, increasing, into *cand (*k of them; malloc'd). */
static int probe_candidates(const ag_model *m, const ag_tokenizer *tok, int32_t **cand,
                            size_t *k, ag_error *err)
{
    size_t v = ag_tokenizer_vocab_size(tok), mv = (size_t)ag_model_get_config(m)->vocab_size;
    v = mv < v ? mv : v;
    *k = 0;
    *cand = malloc((v ? v : 1) * sizeof **cand);
    if (!*cand)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a vocabulary of %zu ids", v);
    for (size_t id = 0; id < v; id++)
        if (ag_tokenizer_token(tok, (int32_t)id) && !ag_tokenizer_is_special(tok, (int32_t)id))
            (*cand)[(*k)++] = (int32_t)id;
    if (*k == 0)
        return ag_error_set(err, AG_EINVAL, "the vocabulary (%zu ids) has no token that is not "
                            "special: nothing to draw the probe from", v);
    return AG_OK;
}

/* The body: `length` draws repeated `repeats` times, into body[]. */
static int probe_draw(const int32_t *cand, size_t k, size_t length, int repeats,
                      unsigned long seed, int32_t *body, ag_error *err)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return ag_error_set(err, AG_ENOMEM, "out of memory for a random generator");
    gsl_rng_set(rng, seed);
    for (size_t t = 0; t < length; t++)
        body[t] = cand[gsl_rng_uniform_int(rng, (unsigned long)k)];
    gsl_rng_free(rng);
    for (int b = 1; b < repeats; b++)
        memcpy(body + (size_t)b * length, body, length * sizeof *body);
    return AG_OK;
}

/* AG_ERANGE when n tokens are more than m takes. */
static int probe_fits(const ag_model *m, size_t length, int repeats, size_t n, ag_error *err)
{
    char why[96];
    size_t p = agr_positions(m, why);
    if (p && n > p)
        return ag_error_set(err, AG_ERANGE, "--length %zu --repeats %d: %zu tokens with the "
                            "special ones, more than the %zu the model takes (%s)", length,
                            repeats, n, p, why);
    return AG_OK;
}

/* The sizes, checked before anything is drawn. */
static int probe_check(const ag_model *m, const ag_tokenizer *tok, size_t length, int repeats,
                       ag_error *err)
{
    if (m && ag_model_input_kind(m) != AG_INPUT_TOKENS) /* before the tokenizer it lacks */
        return ag_error_set(err, AG_EINVAL, "a %s model takes %s, not token ids: the induction "
                            "probe needs a token model", ag_model_type(m),
                            ag_model_input_kind(m) == AG_INPUT_PIXELS ? "an image" : "audio");
    if (!m || !tok)
        return ag_error_set(err, AG_EINVAL, "induction probe: no model or tokenizer (NULL)");
    if (length == 0)
        return ag_error_set(err, AG_EINVAL, "--length 0: a block has 1 token at least");
    if (repeats < 2)
        return ag_error_set(err, AG_EINVAL, "--repeats %d: the block is repeated 2 times at "
                            "least (a copy follows it)", repeats);
    if (length > SIZE_MAX / sizeof(int32_t) / (size_t)repeats)
        return ag_error_set(err, AG_ERANGE, "--length %zu --repeats %d: too many tokens",
                            length, repeats);
    return probe_fits(m, length, repeats, length * (size_t)repeats, err);
}

/* body[body_n] framed by tok's post-processor into *seq (*total ids,
 * malloc'd) and where it starts in it, *at: the first place it is whole. */
static int probe_frame(const ag_tokenizer *tok, const int32_t *body, size_t body_n,
                       int32_t **seq, size_t *total, size_t *at, ag_error *err)
{
    int status = ag_tokenizer_with_special(tok, body, body_n, seq, total, err);
    size_t p = 0;
    while (status == AG_OK && p + body_n <= *total &&
           memcmp(*seq + p, body, body_n * sizeof *body) != 0)
        p++;
    if (status == AG_OK && p + body_n > *total)
        status = ag_error_set(err, AG_EFORMAT, "the tokenizer's special tokens do not frame "
                              "the probe's tokens");
    if (status != AG_OK) {
        free(*seq);
        *seq = NULL;
    }
    *at = p;
    return status;
}

int ag_run_probe_tokens(const ag_model *m, const ag_tokenizer *tok, size_t length, int repeats,
                        unsigned long seed, int32_t **ids, size_t *n, size_t *start,
                        ag_error *err)
{
    if (!ids || !n || !start)
        return ag_error_set(err, AG_EINVAL, "ag_run_probe_tokens: no output");
    *ids = NULL;
    *n = *start = 0;
    int32_t *cand = NULL, *body = NULL, *seq = NULL;
    size_t k = 0, total = 0, at = 0, body_n = length * (size_t)(repeats > 0 ? repeats : 0);
    int status = probe_check(m, tok, length, repeats, err);
    if (status == AG_OK)
        status = probe_candidates(m, tok, &cand, &k, err);
    /* the frame's size from one ordinary token: the whole must fit the
     * model before anything is drawn */
    if (status == AG_OK)
        status = probe_frame(tok, cand, 1, &seq, &total, &at, err);
    free(seq);
    seq = NULL;
    if (status == AG_OK)
        status = probe_fits(m, length, repeats, body_n + total - 1, err);
    if (status == AG_OK && !(body = malloc(body_n * sizeof *body)))
        status = ag_error_set(err, AG_ENOMEM, "out of memory for %zu tokens", body_n);
    if (status == AG_OK)
        status = probe_draw(cand, k, length, repeats, seed, body, err);
    if (status == AG_OK)
        status = probe_frame(tok, body, body_n, &seq, &total, &at, err);
    free(cand);
    free(body);
    if (status != AG_OK)
        return status;
    *ids = seq;
    *n = total;
    *start = at;
    return AG_OK;
}

/* ---- the scores ---------------------------------------------------------- */

typedef struct {
    size_t start, length;
    int repeats;
    const int *head;      /* (nh) the selected heads, increasing (a pair: the encoder's) */
    const int *dec_head;  /* a pair's decoder's selected heads */
    ag_record_list *recs;
    ag_error err;         /* a head's failure, "layer L head H: ..." */
} probe_job;

/* The record of one head (A: n × n_kv) of `stack` (AG_STACK_NONE: a model
 * of one stack), its blocks from `start`. A cross head's keys are the
 * source's, where the previous copy of a target token is not defined: its
 * scores are null (docs/metrics.md, "The induction probe"). */
static int probe_head(probe_job *j, int stack, int layer, int head, const double *A, size_t n,
                      size_t n_kv, size_t start)
{
    ag_record *r = ag_record_list_add(j->recs, &j->err);
    if (!r)
        return AG_ENOMEM;
    ag_record_init(r, layer, head, n, n_kv);
    if (stack != AG_STACK_NONE)
        ag_record_set_stack(r, stack);
    if (stack == AG_STACK_CROSS)
        return AG_OK;
    ag_error e = {0};
    int status = ag_induction_probe_metrics(A, n, -1, start, j->length, j->repeats, r, &e);
    if (status != AG_OK)
        return ag_error_set(&j->err, status, "%s%slayer %d head %d: %s",
                            stack ? ag_stack_name(stack) : "", stack ? " " : "", layer, head,
                            e.message);
    return AG_OK;
}

/* One selected layer's heads (attngeom/run.h, ag_run_heads_fn). */
static int probe_layer(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    probe_job *j = user;
    int status = AG_OK;
    for (size_t i = 0; status == AG_OK && i < heads; i++)
        status = probe_head(j, AG_STACK_NONE, layer, j->head[i], attn + i * n * n, n, n, j->start);
    return status;
}

/* One selected layer of a pair (ag_run_stack_heads_fn): the decoder reads
 * the probe one position later, after its start token. */
static int probe_stack(int stack, int layer, const double *attn, size_t heads, size_t n,
                       size_t n_kv, void *user)
{
    probe_job *j = user;
    const int *head = stack == AG_STACK_ENCODER ? j->head : j->dec_head;
    size_t start = j->start + (stack == AG_STACK_DECODER);
    int status = AG_OK;
    for (size_t i = 0; status == AG_OK && i < heads; i++)
        status = probe_head(j, stack, layer, head[i], attn + i * n * n_kv, n, n_kv, start);
    return status;
}

/* The probe through an encoder–decoder pair (m its encoder): the source
 * ids, the target [decoder start] + ids, heads selected in each stack. */
static int probe_pair(const ag_model *m, const int32_t *ids, size_t n, probe_job *j,
                      const ag_run_options *opt, ag_workers *w, ag_error *err)
{
    const ag_seq2seq *s = ag_model_seq2seq(m);
    const ag_model *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
    int first = ag_seq2seq_decoder_start(s);
    if (first < 0)
        return ag_error_set(err, AG_EINVAL, "%s: config.json gives no decoder_start_token_id: "
                            "the decoder's reading of the probe has no first token",
                            ag_model_type(m));
    ag_selection *heads = NULL;
    int32_t *tgt = n < SIZE_MAX / sizeof *tgt - 1 ? malloc((n + 1) * sizeof *tgt) : NULL;
    int status = tgt ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory for %zu ids", n + 1);
    if (status == AG_OK)
        status = ag_run_options_selection(opt, "heads", ag_model_get_config(dec)->n_head, &heads,
                                          err);
    if (status == AG_OK) {
        tgt[0] = first;
        memcpy(tgt + 1, ids, n * sizeof *ids);
        j->dec_head = ag_selection_indices(heads);
        ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = -1, .target = tgt,
                           .n_target = n + 1};
        status = ag_run_attention_seq2seq(m, &in, opt, w, probe_stack, j, NULL, NULL, err);
    }
    ag_selection_free(heads);
    free(tgt);
    return status;
}

/* AG_EINVAL unless ids[start ..) holds `repeats` copies of its first
 * `length` ids. */
static int probe_repeats(const int32_t *ids, size_t n, size_t start, size_t length, int repeats,
                         ag_error *err)
{
    if (!ids || length == 0 || repeats < 2 || start > n ||
        (n - start) / length < (size_t)repeats)
        return ag_error_set(err, AG_EINVAL, "induction probe: %d blocks of %zu tokens from "
                            "position %zu do not fit %zu tokens (2 blocks of 1 at least)",
                            repeats, length, start, n);
    for (size_t i = start + length; i < start + (size_t)repeats * length; i++)
        if (ids[i] != ids[i - length])
            return ag_error_set(err, AG_EINVAL, "induction probe: token %zu (id %d) is not a "
                                "copy of token %zu (id %d)", i, (int)ids[i], i - length,
                                (int)ids[i - length]);
    return AG_OK;
}

int ag_run_probe_induction(const ag_model *m, const int32_t *ids, size_t n, size_t start,
                           size_t length, int repeats, const ag_run_options *opt,
                           ag_workers *w, ag_record_list **out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_run_probe_induction: no output");
    *out = NULL;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    int status = probe_repeats(ids, n, start, length, repeats, err);
    ag_selection *heads = NULL;
    if (status == AG_OK)
        status = ag_run_options_selection(opt, "heads", ag_model_get_config(m)->n_head, &heads,
                                          err);
    probe_job j = {.start = start, .length = length, .repeats = repeats,
                   .head = ag_selection_indices(heads), .recs = ag_record_list_new()};
    if (status == AG_OK && !j.recs)
        status = ag_error_set(err, AG_ENOMEM, "out of memory for records");
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = -1};
    if (status == AG_OK) {
        status = ag_model_seq2seq(m) ? probe_pair(m, ids, n, &j, opt, w, err)
                                     : ag_run_attention(m, &in, opt, w, probe_layer, NULL, &j,
                                                        NULL, err);
        if (status != AG_OK && j.err.status != AG_OK)
            *err = j.err;
    }
    ag_selection_free(heads);
    if (status != AG_OK) {
        ag_record_list_free(j.recs);
        return status;
    }
    *out = j.recs;
    return AG_OK;
}
