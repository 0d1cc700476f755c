/* test_seq2seq_run.c — attngeom/run.h on encoder–decoder models (issue 30):
 * HF's shift_tokens_right, the pair reached from its encoder, the target
 * dispatch of ag_run_forward and its refusals, ag_run_analyze's records per
 * (stack, layer, head) and ag_run_attention_seq2seq's selected heads
 * against the engine's own pass; ag_model_cross_attn_weights against the
 * stored tensors, ag_run_weights and ag_run_residual on a pair;
 * ag_run_rollout_seq2seq's matrices against its records. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define T5 "tests/data/models/arch/t5"
#define BART "tests/data/models/arch/bart"
#define BERT "tests/data/models/tiny-bert"
#define WHISPER "tests/data/models/arch/whisper-seq2seq"

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
    /* family E on the self-attention stacks, null on cross-attention */
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
            cr_assert_eq(ag_record_value(rec, AG_M_SENSITIVITY, NULL) == AG_V_NUMBER,
                         k.stack[v] != AG_STACK_CROSS, "record %zu: family E", r);
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
    /* ag_run_attention refuses a pair: its callback has no n_kv */
    cr_assert_eq(ag_run_attention(enc, &in, opt, NULL, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    ag_record_list *recs = NULL;
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

/* What ag_run_rollout_seq2seq handed over: each matrix's stack, layer,
 * shape and largest singular value (ag_matrix_metrics, as its record's);
 * stop_at > 0 stops the pass at that call. */
typedef struct {
    int count, stop_at, bad;
    int stack[16], layer[16];
    size_t rows[16], cols[16];
    double sigma[16];
    const ag_metric_set *sigma_only;
} rollout_seen;

static int keep_rollout(int stack, int layer, const double *M, size_t heads, size_t rows,
                        size_t cols, void *user)
{
    rollout_seen *c = user;
    int v = c->count++;
    if (v >= 16 || heads != 1)
        return c->bad++, 0;
    c->stack[v] = stack, c->layer[v] = layer, c->rows[v] = rows, c->cols[v] = cols;
    ag_record *one = ag_record_new();
    ag_error err = {0};
    if (ag_matrix_metrics(M, rows, cols, c->sigma_only, one, &err) != AG_OK ||
        ag_record_value(one, AG_M_SIGMA_MAX, &c->sigma[v]) != AG_V_NUMBER)
        c->bad++;
    for (size_t i = 0; i < rows; i++) { /* R and R_cross are row-stochastic */
        double s = 0;
        for (size_t j = 0; j < cols; j++)
            s += M[i * cols + j];
        c->bad += fabs(s - 1) > 1e-12;
    }
    ag_record_free(one);
    return c->count == c->stop_at;
}

/* A one-stack rollout's matrix function, which a pair's run refuses. */
static int one_stack_matrix(int layer, const double *M, size_t n, void *user, ag_error *err)
{
    (void)layer, (void)M, (void)n, (void)user;
    return ag_error_set(err, AG_EINVAL, "called on a pair");
}

/* ag_run_rollout_seq2seq hands over one matrix per record, in record order
 * (the encoder's R_l, the decoder's, R_cross [n_tgt, n_src] last), each
 * the matrix its record measures; fn's non-zero stops the pass (AG_EIO);
 * ag_run_rollout with a matrix function refuses a pair naming it, and
 * ag_run_rollout_seq2seq a model of one stack. */
Test(seq2seq_run, rollout_seq2seq_hands_over_each_recorded_matrix)
{
    ag_seq2seq *s = load_pair(T5);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER);
    ag_run_input in = pair_input();
    ag_run_options *opt = ag_run_options_new();
    ag_metric_set *sigma = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_run_options_set(opt, "precision", 64, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "sigma_max", &sigma, &err), AG_OK);
    ag_run_options_set_metrics(opt, sigma);
    rollout_seen c = {.sigma_only = sigma};
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_rollout_seq2seq(enc, &in, opt, NULL, keep_rollout, &c, &recs, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(c.bad, 0);
    cr_assert_eq((size_t)c.count, ag_record_list_count(recs));
    cr_assert_eq(c.count, 2 + 2 + 1); /* t5: 2 encoder and 2 decoder layers, R_cross */
    for (int v = 0; v < c.count; v++) {
        const ag_record *rec = ag_record_list_get(recs, (size_t)v);
        double want;
        cr_assert_eq(c.stack[v], ag_record_stack(rec), "matrix %d", v);
        cr_assert_eq(c.layer[v], ag_record_layer(rec), "matrix %d", v);
        cr_assert_eq(c.rows[v], ag_record_rows(rec), "matrix %d", v);
        cr_assert_eq(c.cols[v], ag_record_cols(rec), "matrix %d", v);
        cr_assert_eq(ag_record_value(rec, AG_M_SIGMA_MAX, &want), AG_V_NUMBER);
        cr_assert_eq(c.sigma[v], want, "matrix %d: %.17g vs its record's %.17g", v, c.sigma[v], want);
    }
    cr_assert_eq(c.stack[4], AG_STACK_CROSS);
    cr_assert_eq(c.rows[4], 4);
    cr_assert_eq(c.cols[4], 6);
    ag_record_list_free(recs);
    recs = NULL;
    rollout_seen stop = {.stop_at = 3, .sigma_only = sigma};
    cr_assert_eq(ag_run_rollout_seq2seq(enc, &in, opt, NULL, keep_rollout, &stop, &recs, &err),
                 AG_EIO);
    cr_assert_str_eq(err.message, "decoder layer 0: the rollout's function stopped the pass");
    cr_assert_eq(stop.count, 3);
    ag_record_list_free(recs);
    recs = NULL;
    cr_assert_eq(ag_run_rollout(enc, &in, opt, NULL, one_stack_matrix, NULL, &recs, &err),
                 AG_EINVAL);
    cr_assert(strstr(err.message, "ag_run_rollout_seq2seq"), "%s", err.message);
    ag_model *bert = NULL;
    cr_assert_eq(ag_model_load(BERT, &bert, &err), AG_OK, "%s", err.message);
    ag_run_input one = AG_RUN_INPUT_DEFAULT;
    one.ids = SRC, one.n = 3;
    cr_assert_eq(ag_run_rollout_seq2seq(bert, &one, opt, NULL, NULL, NULL, &recs, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "ag_run_rollout_seq2seq: not an encoder-decoder model");
    ag_model_free(bert);
    ag_record_list_free(recs);
    ag_metric_set_free(sigma);
    ag_run_options_free(opt);
    ag_seq2seq_free(s);
}

/* W (d, cols) of ag_attn_weights is the stored nn.Linear [cols, d]
 * `name` of dir's model.safetensors transposed, value for value. */
static void same_as_stored(const char *dir, const char *name, const ag_array *w)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ag_safetensors *st = NULL;
    ag_array raw = {0};
    ag_error err = {0};
    cr_assert_eq(ag_st_open(path, &st, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_st_read(st, name, &raw, &err), AG_OK, "%s: %s", name, err.message);
    size_t rows = raw.shape[0], cols = raw.shape[1];
    cr_assert_eq(w->shape[0], cols, "%s", name);
    cr_assert_eq(w->shape[1], rows, "%s", name);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            cr_assert_eq(w->data[j * rows + i], raw.data[i * cols + j], "%s [%zu, %zu]", name,
                         i, j);
    ag_array_free(&raw);
    ag_st_close(st);
}

Test(seq2seq_run, a_folder_has_a_decoder_when_its_weights_hold_one)
{
    cr_assert_eq(ag_model_dir_has_decoder(T5), 1);
    cr_assert_eq(ag_model_dir_has_decoder(BART), 1);
    cr_assert_eq(ag_model_dir_has_decoder(WHISPER), 1);   /* WhisperModel's save */
    cr_assert_eq(ag_model_dir_is_seq2seq(WHISPER), 0);    /* ag_model_load reads its encoder */
    cr_assert_eq(ag_model_dir_has_decoder("tests/data/models/tiny-whisper"), 0); /* encoder alone */
    cr_assert_eq(ag_model_dir_has_decoder(BERT), 0);
    /* OPT (decoder-only) names its layers model.decoder.layers.N as Whisper does */
    cr_assert_eq(ag_model_dir_has_decoder("tests/data/models/arch/opt"), 0);
    cr_assert_eq(ag_model_dir_has_decoder("tests/data/models/no-such-folder"), 0);
    cr_assert_eq(ag_model_dir_has_decoder(NULL), 0);
}

Test(seq2seq_run, cross_attn_weights_are_the_stored_cross_projections)
{
    /* T5's EncDecAttention (no bias, no scaling), BART's and Whisper's
     * encoder_attn (biased, Whisper's k_proj excepted; scaling
     * head_dim^-1/2) */
    static const struct {
        const char *dir, *stem, *q, *k, *v, *o;
        double scale;
    } cases[] = {
        {T5, "decoder.block.1.layer.1.EncDecAttention.", "q", "k", "v", "o", 1},
        {BART, "model.decoder.layers.2.encoder_attn.", "q_proj", "k_proj", "v_proj", "out_proj",
         0.5},
        {WHISPER, "model.decoder.layers.2.encoder_attn.", "q_proj", "k_proj", "v_proj",
         "out_proj", 1 / sqrt(8.0)}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ag_seq2seq *s = load_pair(cases[c].dir);
        const ag_model *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
        int last = ag_model_get_config(dec)->n_layer - 1;
        ag_attn_weights w;
        ag_error err = {0};
        cr_assert_eq(ag_model_cross_attn_weights(dec, last, &w, &err), AG_OK, "%s", err.message);
        const char *part[4] = {cases[c].q, cases[c].k, cases[c].v, cases[c].o};
        const ag_array *got[4] = {&w.wq, &w.wk, &w.wv, &w.wo};
        for (int p = 0; p < 4; p++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s.weight", cases[c].stem, part[p]);
            same_as_stored(cases[c].dir, name, got[p]);
        }
        cr_assert_eq(w.causal, 0);
        cr_assert_eq(w.rope.rotary_dim, 0);
        cr_assert_float_eq(w.scale, cases[c].scale, 1e-15, "%s", cases[c].dir);
        /* Whisper's k_proj alone has no bias; T5 has none at all */
        cr_assert_eq(w.bk.data == NULL, c != 1, "%s", cases[c].dir);
        cr_assert_eq(w.bq.data == NULL, c == 0, "%s", cases[c].dir);
        ag_attn_weights_free(&w);
        /* the self-attention's are other tensors; an encoder has no cross */
        ag_attn_weights self;
        cr_assert_eq(ag_model_attn_weights(dec, last, &self, &err), AG_OK);
        cr_assert_eq(self.causal, 1);
        ag_attn_weights_free(&self);
        cr_assert_eq(ag_model_cross_attn_weights(ag_seq2seq_stack(s, AG_STACK_ENCODER), 0, &w,
                                                 &err), AG_EINVAL);
        cr_assert(strstr(err.message, "no cross-attention"), "%s", err.message);
        cr_assert_eq(ag_model_cross_attn_weights(dec, last + 1, &w, &err), AG_ERANGE);
        ag_seq2seq_free(s);
    }
}

/* Family D of head h of w, as a record of its own. */
static double head_qk_sigma(const ag_attn_weights *w, size_t d, int h, const ag_metric_set *sel)
{
    ag_head_factors f;
    ag_attn_weights_head_factors(w, d, h, &f);
    ag_record *r = ag_record_new();
    ag_error err = {0};
    cr_assert_eq(ag_weight_metrics(&f, sel, r, &err), AG_OK, "%s", err.message);
    double v;
    cr_assert_eq(ag_record_value(r, AG_M_QK_SIGMA_MAX, &v), AG_V_NUMBER);
    ag_record_free(r);
    return v;
}

Test(seq2seq_run, weights_of_a_pair_are_each_stack_in_pass_order)
{
    /* BART: 2 encoder layers, 3 decoder layers, 4 heads each */
    ag_seq2seq *s = load_pair(BART);
    const ag_model *st[2] = {ag_seq2seq_stack(s, AG_STACK_ENCODER),
                             ag_seq2seq_stack(s, AG_STACK_DECODER)};
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_WEIGHTS, "qk_sigma_max", &sel, &err), AG_OK);
    ag_run_options *opt = ag_run_options_new();
    ag_run_options_set_metrics(opt, sel);
    cr_assert_eq(ag_run_options_set(opt, "threads", 3, &err), AG_OK, "%s", err.message);
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_weights(st[0], NULL, opt, NULL, &recs, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(recs), (size_t)(2 * 4 + 3 * 2 * 4));
    size_t r = 0, d = 16;
    for (int k = 0; k < 5; k++) { /* encoder 0, 1; decoder 0, 1, 2 (self, cross) */
        int dec = k >= 2, layer = dec ? k - 2 : k;
        for (int cross = 0; cross <= dec; cross++) {
            ag_attn_weights w;
            cr_assert_eq(cross ? ag_model_cross_attn_weights(st[1], layer, &w, &err)
                               : ag_model_attn_weights(st[dec], layer, &w, &err), AG_OK);
            int stack = cross ? AG_STACK_CROSS : dec ? AG_STACK_DECODER : AG_STACK_ENCODER;
            for (int h = 0; h < 4; h++, r++) {
                const ag_record *rec = ag_record_list_get(recs, r);
                double got;
                cr_assert_eq(ag_record_stack(rec), stack, "record %zu", r);
                cr_assert_eq(ag_record_layer(rec), layer, "record %zu", r);
                cr_assert_eq(ag_record_head(rec), h, "record %zu", r);
                cr_assert_eq(ag_record_value(rec, AG_M_QK_SIGMA_MAX, &got), AG_V_NUMBER);
                cr_assert_eq(got, head_qk_sigma(&w, d, h, sel), "record %zu", r);
            }
            ag_attn_weights_free(&w);
        }
    }
    ag_record_list_free(recs);
    recs = NULL;
    /* layer 2 exists in the decoder only: a selection must fit each stack */
    int two = 2;
    cr_assert_eq(ag_run_options_select(opt, "layers", &two, 1, &err), AG_OK);
    cr_assert_eq(ag_run_weights(st[0], NULL, opt, NULL, &recs, &err), AG_ERANGE);
    cr_assert_null(recs);
    ag_run_options_free(opt);
    ag_metric_set_free(sel);
    ag_seq2seq_free(s);
}

Test(seq2seq_run, residual_of_a_pair_is_each_stack_hidden_states)
{
    ag_seq2seq *s = load_pair(BART);
    const ag_model *st[2] = {ag_seq2seq_stack(s, AG_STACK_ENCODER),
                             ag_seq2seq_stack(s, AG_STACK_DECODER)};
    size_t d = 16, n[2] = {6, 4}, L[2] = {2, 3};
    double *h[2] = {malloc((L[0] + 1) * n[0] * d * sizeof(double)),
                    malloc((L[1] + 1) * n[1] * d * sizeof(double))};
    ag_error err = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = AG_PRECISION_F64;
    cr_assert_eq(ag_seq2seq_forward(s, SRC, 6, TGT, 4, &fo, NULL, NULL, h[0], h[1], &err), AG_OK);
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_RESIDUAL, "sigma_max,mean_cosine", &sel, &err),
                 AG_OK);
    ag_run_options *opt = ag_run_options_new();
    ag_run_options_set_metrics(opt, sel);
    cr_assert_eq(ag_run_options_set(opt, "precision", 64, &err), AG_OK);
    ag_run_input in = pair_input();
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_residual(st[0], &in, opt, NULL, &recs, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_record_list_count(recs), L[0] + 1 + L[1] + 1);
    size_t r = 0;
    for (int k = 0; k < 2; k++)
        for (size_t l = 0; l <= L[k]; l++, r++) {
            const ag_record *rec = ag_record_list_get(recs, r);
            ag_record *one = ag_record_new();
            cr_assert_eq(ag_residual_metrics(h[k] + l * n[k] * d, n[k], d, sel, one, &err),
                         AG_OK);
            cr_assert_eq(ag_record_stack(rec), k ? AG_STACK_DECODER : AG_STACK_ENCODER);
            cr_assert_eq(ag_record_layer(rec), (int)l);
            cr_assert_eq(ag_record_rows(rec), n[k]);
            cr_assert_eq(ag_record_cols(rec), d);
            for (int key = 0; key < 2; key++) {
                ag_metric m = key ? AG_M_MEAN_COSINE : AG_M_SIGMA_MAX;
                double got, want;
                cr_assert_eq(ag_record_value(rec, m, &got), AG_V_NUMBER);
                cr_assert_eq(ag_record_value(one, m, &want), AG_V_NUMBER);
                cr_assert_eq(got, want, "record %zu: %.17g vs %.17g", r, got, want);
            }
            ag_record_free(one);
        }
    ag_record_list_free(recs);
    recs = NULL;
    /* layer 3: the decoder's last state, not the encoder's */
    int three = 3;
    cr_assert_eq(ag_run_options_select(opt, "layers", &three, 1, &err), AG_OK);
    cr_assert_eq(ag_run_residual(st[0], &in, opt, NULL, &recs, &err), AG_ERANGE);
    in.target = NULL; /* a pair needs its target */
    cr_assert_eq(ag_run_residual(st[0], &in, NULL, NULL, &recs, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "needs a target"), "%s", err.message);
    ag_record_list_free(recs);
    free(h[0]);
    free(h[1]);
    ag_run_options_free(opt);
    ag_metric_set_free(sel);
    ag_seq2seq_free(s);
}

Test(seq2seq_run, induction_probe_reads_the_probe_in_both_stacks)
{
    /* source: a block of 3 twice, then </s>; target: BART's start 2 first,
     * the blocks one position later */
    static const int32_t ids[7] = {5, 6, 7, 5, 6, 7, 2}, tgt[8] = {2, 5, 6, 7, 5, 6, 7, 2};
    ag_seq2seq *s = load_pair(BART);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER);
    views k = {0};
    ag_error err = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = AG_PRECISION_F64;
    cr_assert_eq(ag_seq2seq_forward(s, ids, 7, tgt, 8, &fo, keep_view, &k, NULL, NULL, &err), AG_OK);
    ag_run_options *opt = ag_run_options_new();
    cr_assert_eq(ag_run_options_set(opt, "precision", 64, &err), AG_OK);
    ag_record_list *recs = NULL;
    cr_assert_eq(ag_run_probe_induction(enc, ids, 7, 0, 3, 2, opt, NULL, &recs, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(ag_record_list_count(recs), (size_t)k.count * 4);
    size_t r = 0;
    for (int v = 0; v < k.count; v++)
        for (int h = 0; h < 4; h++, r++) {
            const ag_record *rec = ag_record_list_get(recs, r);
            int st = k.stack[v];
            size_t n = st == AG_STACK_ENCODER ? 7 : 8, cols = st == AG_STACK_DECODER ? 8 : 7,
                   s0 = st == AG_STACK_DECODER ? 1 : 0;
            cr_assert_eq(ag_record_stack(rec), st, "record %zu", r);
            cr_assert_eq(ag_record_layer(rec), k.layer[v]);
            cr_assert_eq(ag_record_head(rec), h);
            cr_assert_eq(ag_record_rows(rec), n);
            cr_assert_eq(ag_record_cols(rec), cols);
            double got;
            int kind = ag_record_value(rec, AG_M_INDUCTION_SCORE, &got);
            if (st == AG_STACK_CROSS) { /* not defined across two sequences */
                cr_assert_neq(kind, AG_V_NUMBER, "record %zu", r);
                cr_assert_neq(ag_record_value(rec, AG_M_INDUCTION_BASELINE, NULL), AG_V_NUMBER);
                continue;
            }
            /* the mean over the second block's rows i of A[i, i - 2] */
            const double *A = k.attn[v] + (size_t)h * n * n;
            double want = 0;
            for (size_t i = s0 + 3; i < s0 + 6; i++)
                want += A[i * n + i - 2] / 3;
            cr_assert_eq(kind, AG_V_NUMBER);
            cr_assert_float_eq(got, want, 1e-15, "record %zu: %.17g vs %.17g", r, got, want);
        }
    for (int v = 0; v < k.count; v++)
        free(k.attn[v]);
    ag_record_list_free(recs);
    ag_run_options_free(opt);
    ag_seq2seq_free(s);
}

typedef struct {
    const views *all;
    int at, attn_calls, bad;
    int nh;
    double worst; /* max |softmax(scores row) − the pass's attention row| */
} scores_check;

static int count_attn(int stack, int layer, const double *attn, size_t heads, size_t n,
                      size_t n_kv, void *user)
{
    (void)stack, (void)layer, (void)attn, (void)heads, (void)n, (void)n_kv;
    ((scores_check *)user)->attn_calls++;
    return 0;
}

/* Head 1's scores of every view: each row's softmax the engine's own
 * pass's head-1 row (−inf keys weigh 0), the view's stack and shape. */
static int check_scores1(int stack, int layer, const double *s, size_t heads, size_t n,
                         size_t n_kv, void *user)
{
    scores_check *c = user;
    const views *k = c->all;
    int v = c->at++;
    if (v >= k->count || heads != 1 || k->stack[v] != stack || k->layer[v] != layer ||
        k->size[v] != (size_t)c->nh * n * n_kv || c->attn_calls != c->at) {
        c->bad++;
        return 0;
    }
    const double *a = k->attn[v] + n * n_kv;
    for (size_t i = 0; i < n; i++) {
        double mx = -INFINITY, sum = 0;
        for (size_t j = 0; j < n_kv; j++)
            mx = fmax(mx, s[i * n_kv + j]);
        for (size_t j = 0; j < n_kv; j++)
            sum += exp(s[i * n_kv + j] - mx);
        for (size_t j = 0; j < n_kv; j++)
            c->worst = fmax(c->worst, fabs(exp(s[i * n_kv + j] - mx) / sum - a[i * n_kv + j]));
    }
    return 0;
}

/* ag_run_attention_seq2seq_scores: after each view's attention, its
 * selected heads' scores ([n, n_kv]: a cross view's over the sources). */
Test(seq2seq_run, attention_seq2seq_scores_are_each_views_logits)
{
    ag_seq2seq *s = load_pair(T5);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER);
    views k = {0};
    ag_error err = {0};
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = AG_PRECISION_F64;
    cr_assert_eq(ag_seq2seq_forward(s, SRC, 6, TGT, 4, &fo, keep_view, &k, NULL, NULL, &err), AG_OK);
    ag_run_options *opt = ag_run_options_new();
    int one = 1;
    ag_selection *heads = NULL;
    cr_assert_eq(ag_run_options_set(opt, "precision", 64, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_selection_from_list(&one, 1, ag_model_get_config(enc)->n_head, "heads", &heads,
                                        &err), AG_OK);
    cr_assert_eq(ag_run_options_set_selection(opt, "heads", heads, &err), AG_OK);
    ag_run_input in = pair_input();
    scores_check c = {.all = &k, .nh = ag_model_get_config(enc)->n_head};
    cr_assert_eq(ag_run_attention_seq2seq_scores(enc, &in, opt, NULL, count_attn, check_scores1,
                                                 &c, NULL, NULL, &err), AG_OK, "%s", err.message);
    cr_assert_eq(c.at, k.count);
    cr_assert_eq(c.bad, 0, "%d views differ", c.bad);
    cr_expect_leq(c.worst, 1e-15, "softmax(scores) differs from the attention by %g", c.worst);
    for (int v = 0; v < k.count; v++)
        free(k.attn[v]);
    ag_selection_free(heads);
    ag_run_options_free(opt);
    ag_seq2seq_free(s);
}

/* The hidden states ag_run_attention_seq2seq_stream hands over, in call
 * order, against those ag_run_attention_seq2seq fills. */
typedef struct {
    const double *enc, *dec; /* (L + 1, n, d) each, filled by the other call */
    size_t n_enc, n_dec, d;
    int l_enc, calls, bad, stop_at; /* stop_at > 0: non-zero at that call */
} stream_check;

static int check_state(int index, size_t n, size_t d, const double *h, void *user)
{
    stream_check *c = user;
    int k = c->calls++ > c->l_enc; /* the encoder's L_enc + 1 come first */
    int want = k ? c->calls - 1 - (c->l_enc + 1) : c->calls - 1;
    size_t rows = k ? c->n_dec : c->n_enc;
    const double *ref = (k ? c->dec : c->enc) + (size_t)want * rows * c->d;
    if (index != want || n != rows || d != c->d || memcmp(h, ref, n * d * sizeof *h) != 0)
        c->bad++;
    return c->calls == c->stop_at;
}

/* Streamed, each stack's hidden states are the filled ones, bit for bit:
 * the encoder's L_enc + 1 of the source's length with index 0..L_enc, then
 * the decoder's L_dec + 1 of the target's, index from 0 again; a callback's
 * non-zero stops the pass; a model of one stack is refused. */
Test(seq2seq_run, attention_seq2seq_streams_each_stacks_hidden_states)
{
    ag_seq2seq *s = load_pair(T5);
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER),
                   *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
    const ag_model_config *ge = ag_model_get_config(enc), *gd = ag_model_get_config(dec);
    size_t d = (size_t)ge->d_model;
    cr_assert_eq(d, (size_t)gd->d_model);
    double *eh = malloc((size_t)(ge->n_layer + 1) * 6 * d * sizeof *eh),
           *dh = malloc((size_t)(gd->n_layer + 1) * 4 * d * sizeof *dh);
    cr_assert(eh && dh);
    ag_error err = {0};
    ag_run_input in = pair_input();
    cr_assert_eq(ag_run_attention_seq2seq(enc, &in, NULL, NULL, NULL, NULL, eh, dh, &err), AG_OK,
                 "%s", err.message);
    stream_check c = {.enc = eh, .dec = dh, .n_enc = 6, .n_dec = 4, .d = d,
                      .l_enc = ge->n_layer};
    cr_assert_eq(ag_run_attention_seq2seq_stream(enc, &in, NULL, NULL, NULL, NULL, check_state,
                                                 &c, &err), AG_OK, "%s", err.message);
    cr_assert_eq(c.calls, ge->n_layer + 1 + gd->n_layer + 1);
    cr_assert_eq(c.bad, 0, "%d states differ", c.bad);
    stream_check stop = c;
    stop.calls = 0;
    stop.stop_at = ge->n_layer + 3; /* in the decoder's states */
    cr_assert_neq(ag_run_attention_seq2seq_stream(enc, &in, NULL, NULL, NULL, NULL, check_state,
                                                  &stop, &err), AG_OK);
    cr_assert_eq(stop.calls, ge->n_layer + 3);
    ag_model *one = NULL;
    cr_assert_eq(ag_model_load(BERT, &one, &err), AG_OK, "%s", err.message);
    ag_run_input plain = AG_RUN_INPUT_DEFAULT;
    plain.ids = SRC;
    plain.n = 6;
    cr_assert_eq(ag_run_attention_seq2seq_stream(one, &plain, NULL, NULL, NULL, NULL, check_state,
                                                 &c, &err), AG_EINVAL);
    ag_model_free(one);
    free(eh);
    free(dh);
    ag_seq2seq_free(s);
}
