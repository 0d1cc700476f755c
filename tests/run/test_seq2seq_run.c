/* test_seq2seq_run.c — attngeom/run.h on encoder–decoder models (issue 30):
 * HF's shift_tokens_right, the pair reached from its encoder, the target
 * dispatch of ag_run_forward and its refusals, ag_run_analyze's records per
 * (stack, layer, head) and ag_run_attention_seq2seq's selected heads
 * against the engine's own pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define T5 "tests/data/models/arch/t5"
#define BART "tests/data/models/arch/bart"
#define BERT "tests/data/models/tiny-bert"

static const int32_t SRC[6] = {30, 47, 23, 24, 38, 5}, TGT[4] = {0, 37, 30, 28};

static ag_seq2seq *load_pair(const char *dir)
{
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s", err.message);
    return s;
}

static ag_run_input pair_input(void)
{
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = SRC;
    in.n = 6;
    in.target = TGT;
    in.n_target = 4;
    return in;
}

Test(seq2seq_run, shift_right_is_hf_teacher_forcing)
{
    /* labels [5, 6, 7, </s>=1] -> decoder_input_ids [start, 5, 6, 7] */
    int32_t labels[4] = {5, 6, 7, 1}, out[4];
    ag_run_shift_right(labels, 4, 2, out);
    int32_t want[4] = {2, 5, 6, 7};
    cr_assert_arr_eq(out, want, sizeof want);
    ag_run_shift_right(labels, 4, 0, labels); /* in place */
    want[0] = 0;
    cr_assert_arr_eq(labels, want, sizeof want);
}

/* ag_run_target_ids of text on dir's pair: n ids into out (at most 16). */
static size_t target_ids(const char *dir, const char *text, int32_t *out)
{
    ag_seq2seq *s = load_pair(dir);
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load(dir, &tok, &err), AG_OK, "%s", err.message);
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(ag_run_target_ids(ag_seq2seq_stack(s, AG_STACK_ENCODER), tok, text, strlen(text),
                                   &ids, &n, &err), AG_OK, "%s", err.message);
    cr_assert_leq(n, 16);
    memcpy(out, ids, n * sizeof *ids);
    ag_free(ids);
    ag_tokenizer_free(tok);
    ag_seq2seq_free(s);
    return n;
}

Test(seq2seq_run, target_text_per_model_shift_rule)
{
    /* t5-v1_1: labels "die katze" </s> = 41 42 1 (the Rust library's ids,
     * tests/cli/seq2seq.sh) -> [0] + labels[:-1] */
    int32_t got[16];
    size_t n = target_ids("tests/data/models/arch/t5-v1_1", "die katze", got);
    const int32_t t5[3] = {0, 41, 42};
    cr_assert_eq(n, 3);
    cr_assert_arr_eq(got, t5, sizeof t5);
    /* Whisper: labels <|startoftranscript|> <|en|> <|transcribe|>
     * <|notimestamps|> "at" <|endoftext|> = 45 43 44 47 33 46: the
     * collator drops the leading 45, the shift puts it back: labels[:-1] */
    n = target_ids("tests/data/models/arch/whisper-seq2seq", "at", got);
    const int32_t whisper[5] = {45, 43, 44, 47, 33};
    cr_assert_eq(n, 5);
    cr_assert_arr_eq(got, whisper, sizeof whisper);
}

Test(seq2seq_run, the_pair_from_either_stack_and_its_start_token)
{
    ag_seq2seq *t5 = load_pair(T5), *bart = load_pair(BART);
    cr_assert_eq(ag_model_seq2seq(ag_seq2seq_stack(t5, AG_STACK_ENCODER)), t5);
    cr_assert_eq(ag_model_seq2seq(ag_seq2seq_stack(t5, AG_STACK_DECODER)), t5);
    cr_assert_eq(ag_seq2seq_decoder_start(t5), 0);   /* config.json: the pad token */
    cr_assert_eq(ag_seq2seq_decoder_start(bart), 2); /* </s> */
    cr_assert_eq(ag_seq2seq_decoder_start(NULL), -1);
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(BERT, &m, &err), AG_OK, "%s", err.message);
    cr_assert_null(ag_model_seq2seq(m));
    ag_run_input in = pair_input(); /* a target on a model of one stack */
    cr_assert_eq(ag_run_forward(m, &in, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "a target needs an encoder-decoder model"), "%s", err.message);
    in.target = NULL; /* no target on a pair */
    in.n_target = 0;
    cr_assert_eq(ag_run_forward(ag_seq2seq_stack(t5, AG_STACK_ENCODER), &in, NULL, NULL, NULL,
                                NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "needs a target"), "%s", err.message);
    ag_model_free(m);
    ag_seq2seq_free(t5);
    ag_seq2seq_free(bart);
}

/* Every view of the engine's own pass, kept: (stack, layer) -> attn. */
typedef struct {
    double *attn[16];
    size_t size[16];
    int stack[16], layer[16], count;
} views;

static int keep_view(const ag_layer_view *v, void *user)
{
    views *k = user;
    size_t n = (size_t)v->n_head * v->n * v->n_kv;
    k->attn[k->count] = malloc(n * sizeof(double));
    memcpy(k->attn[k->count], v->attn, n * sizeof(double));
    k->size[k->count] = n;
    k->stack[k->count] = v->stack;
    k->layer[k->count++] = v->layer;
    return 0;
}

Test(seq2seq_run, analyze_gives_a_record_per_stack_layer_head)
{
    ag_seq2seq *s = load_pair(T5);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER);
    int le = ag_model_get_config(enc)->n_layer, h = ag_model_get_config(enc)->n_head,
        ld = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_DECODER))->n_layer;
    ag_run_input in = pair_input();
    ag_run_options *opt = ag_run_options_new();
    ag_metric_set *sel = NULL, *sigma = NULL;
    ag_error err = {0};
    cr_assert_not_null(opt);
    cr_assert_eq(ag_run_options_set(opt, "precision", 64, &err), AG_OK, "%s", err.message);
    /* family E is null on a pair: the records carry it, unset */
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_ANALYZE, "sigma_max,stability", &sel, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "sigma_max", &sigma, &err), AG_OK, "%s", err.message);
    ag_run_options_set_metrics(opt, sel);
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_analyze(enc, &in, opt, NULL, &recs, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(recs), (size_t)(le * h + 2 * ld * h));
    /* the engine's own pass: the same matrices, their largest singular value */
    views k = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = AG_PRECISION_F64;
    cr_assert_eq(ag_seq2seq_forward(s, SRC, 6, TGT, 4, &fo, keep_view, &k, NULL, NULL, &err), AG_OK);
    cr_assert_eq(k.count, le + 2 * ld);
    size_t r = 0;
    for (int v = 0; v < k.count; v++)
        for (int head = 0; head < h; head++, r++) {
            const ag_record *rec = ag_record_list_get(recs, r);
            size_t rows = k.stack[v] == AG_STACK_ENCODER ? 6 : 4,
                   cols = k.stack[v] == AG_STACK_DECODER ? 4 : 6;
            cr_assert_eq(ag_record_stack(rec), k.stack[v], "record %zu", r);
            cr_assert_eq(ag_record_layer(rec), k.layer[v]);
            cr_assert_eq(ag_record_head(rec), head);
            cr_assert_eq(ag_record_rows(rec), rows);
            cr_assert_eq(ag_record_cols(rec), cols);
            ag_record *one = ag_record_new();
            cr_assert_eq(ag_matrix_metrics(k.attn[v] + (size_t)head * rows * cols, rows, cols,
                                           sigma, one, &err), AG_OK, "%s", err.message);
            double got, want;
            cr_assert_eq(ag_record_value(rec, AG_M_SIGMA_MAX, &got), AG_V_NUMBER);
            cr_assert_eq(ag_record_value(one, AG_M_SIGMA_MAX, &want), AG_V_NUMBER);
            cr_assert_eq(got, want, "record %zu: %.17g vs %.17g", r, got, want);
            cr_assert_neq(ag_record_value(rec, AG_M_SENSITIVITY, NULL), AG_V_NUMBER);
            ag_record_free(one);
        }
    cr_assert_str_eq(ag_stack_name(AG_STACK_CROSS), "cross");
    cr_assert_null(ag_stack_name(AG_STACK_NONE));
    for (int v = 0; v < k.count; v++)
        free(k.attn[v]);
    ag_record_list_free(recs);
    ag_metric_set_free(sel);
    ag_metric_set_free(sigma);
    ag_run_options_free(opt);
    ag_seq2seq_free(s);
}

typedef struct {
    const views *all;
    int at, bad;
    int nh;
} select_check;

/* Head 1 of every view only: each call the full pass's head 1. */
static int check_head1(int stack, int layer, const double *attn, size_t heads, size_t n,
                       size_t n_kv, void *user)
{
    select_check *c = user;
    const views *k = c->all;
    int v = c->at++;
    if (v >= k->count || heads != 1 || k->stack[v] != stack || k->layer[v] != layer ||
        k->size[v] != (size_t)c->nh * n * n_kv ||
        memcmp(attn, k->attn[v] + n * n_kv, n * n_kv * sizeof *attn) != 0)
        c->bad++;
    return 0;
}

Test(seq2seq_run, attention_seq2seq_gives_the_selected_heads_of_each_stack)
{
    ag_seq2seq *s = load_pair(BART);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER);
    views k = {0};
    ag_error err = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    cr_assert_eq(ag_seq2seq_forward(s, SRC, 6, TGT, 4, &fo, keep_view, &k, NULL, NULL, &err), AG_OK);
    ag_run_options *opt = ag_run_options_new();
    int one = 1;
    ag_selection *heads = NULL;
    cr_assert_eq(ag_selection_from_list(&one, 1, ag_model_get_config(enc)->n_head, "heads", &heads,
                                        &err), AG_OK);
    cr_assert_eq(ag_run_options_set_selection(opt, "heads", heads, &err), AG_OK);
    ag_run_input in = pair_input();
    select_check c = {.all = &k, .nh = ag_model_get_config(enc)->n_head};
    cr_assert_eq(ag_run_attention_seq2seq(enc, &in, opt, NULL, check_head1, &c, NULL, NULL, &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(c.at, k.count);
    cr_assert_eq(c.bad, 0, "%d views differ", c.bad);
    /* ag_run_attention refuses a pair: its callback has no n_kv; so does
     * the residual run over one stack's square layers */
    cr_assert_eq(ag_run_attention(enc, &in, opt, NULL, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_residual(enc, &in, opt, NULL, &recs, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "bart is an encoder-decoder model"), "%s", err.message);
    cr_assert_null(recs);
    /* rollout runs a pair: records of each stack (the encoder's and the
     * decoder's rollouts, the cross composition) */
    cr_assert_eq(ag_run_rollout(enc, &in, opt, NULL, NULL, NULL, &recs, &err), AG_OK, "%s",
                 err.message);
    int seen[4] = {0};
    for (size_t r = 0; r < ag_record_list_count(recs); r++) {
        int st = ag_record_stack(ag_record_list_at(recs, r));
        cr_assert(st >= AG_STACK_ENCODER && st <= AG_STACK_CROSS, "record %zu: stack %d", r, st);
        seen[st]++;
    }
    cr_assert(seen[AG_STACK_ENCODER] && seen[AG_STACK_DECODER] && seen[AG_STACK_CROSS] == 1,
              "stacks %d %d %d", seen[AG_STACK_ENCODER], seen[AG_STACK_DECODER],
              seen[AG_STACK_CROSS]);
    ag_record_list_free(recs);
    for (int v = 0; v < k.count; v++)
        free(k.attn[v]);
    ag_selection_free(heads);
    ag_run_options_free(opt);
    ag_seq2seq_free(s);
}
