/* cmd_model.c — the commands that run a model folder: attention and analyze
 * (docs/cli.md; tokenize is cmd_tokenize.c's). The forward pass streams
 * layer by layer into a callback, so memory grows with one layer's
 * attention, not all layers' (attention's arrays too: they are written as
 * the layers come). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- analyze ------------------------------------------------------------ */

static const char analyze_help[] =
    "usage: attngeom analyze MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F)\n"
    "                             [options]\n"
    "\n"
    "Run the model's forward pass and print the metrics of every head's attention\n"
    "matrix (families spectrum, attention, geometry): one record per (layer, head),\n"
    "and per text with --text-file or --tokens-file (\"text\" = 0-based line index;\n"
    "--tokens-file: one sequence of ids a line, separated by commas or spaces).\n"
    "--metrics stability (or its keys) adds family E, computed in double on each\n"
    "head's input X (docs/stability.md). --metrics values adds family H, the norms\n"
    "of what each head writes, ||(x_j W_V + b_V) W_O|| (Kobayashi et al. 2020).\n"
    "--metrics lens adds family K: each head's own scores under sparsemax and\n"
    "entmax, and the rank and asymmetry of its form QK^T (docs/metrics.md).\n"
    "--normalizer N measures, instead of the model's softmax, the same pass's\n"
    "scores through sparsemax, entmax15 or entmax:ALPHA, or linear attention from\n"
    "each head's Q and K (phi = elu + 1); --temperature T through softmax(S/T).\n"
    "The records then carry \"normalizer\" and \"temperature\". --temperatures\n"
    "0.25,0.5,1,2,4 gives each text's records at each T in turn, the same rows\n"
    "as one run per --temperature T.\n"
    "A t5 or bart folder (encoder-decoder) takes a target, --target T or\n"
    "--target-tokens IDS: one record per (stack, layer, head), \"stack\" encoder,\n"
    "decoder or cross (rows: target tokens, cols: source tokens). A whisper\n"
    "folder with its decoder takes --audio or --features and --target-tokens\n"
    "IDS (the decoder prompt, special tokens included) or --target T (its\n"
    "tokenizer's labels less the last); without a target it runs its encoder\n"
    "alone.\n";

static const char analyze_more[] =
    "Records stream: in jsonl, csv and tsv each text's records are\n"
    "written (and flushed) as it finishes (with -j N > 1, as its batch of 4N\n"
    "texts does, in input order); json, table, md and latex come at the end. JSON\n"
    "and JSONL carry the run's settings (options, SHA-256 of the weights, token\n"
    "counts); docs/cli.md, \"Corpus runs\".\n";

static const cli_option analyze_own[] = {
    {"--normalizer", "N", "measure the heads under softmax (default), sparsemax, entmax15, entmax:ALPHA, linear"},
    {"--temperature", "T", "measure softmax(S/T) of the scores, T > 0 (default 1: the model's)"},
    {"--temperatures", "T1,T2,...", "one set of records per T (softmax(S/T), in the order given; at most 64)"},
    {NULL}};
static const cli_option_group *const analyze_groups[] = {
    CLI_OWN("analyze", analyze_own), &cli_group_input, &cli_group_target, &cli_group_select, &cli_group_precision, &cli_group_records,
    &cli_group_stability, &cli_group_curvature, &cli_group_output, &cli_group_table,
    &cli_group_label, &cli_group_aggregate, &cli_group_corpus, &cli_group_media, &cli_group_jobs,
    &cli_group_help, NULL};
const cli_usage cli_usage_analyze = {"analyze", analyze_help, analyze_groups, analyze_more};

/* One text's records (ag_run_analyze) into out. */
static int analyze_text(cli_model_run *r, const cli_seq *s, cli_text_out *out, void *user)
{
    (void)user;
    ag_run_input in;
    double *owned = NULL;
    ag_record_list *recs = NULL;
    ag_error err = {0};
    int status = cli_seq_input(r, s, &in, &owned, &err);
    if (status == AG_OK)
        status = ag_run_analyze(r->model, &in, r->opt, r->workers.workers, &recs, &err);
    free(owned);
    if (status == AG_OK && cli_records_move(&out->recs, &recs) != 0)
        status = ag_error_set(&err, AG_ENOMEM, "out of memory for records");
    ag_record_list_free(recs);
    return status == AG_OK ? 0 : cli_model_run_fail(r, s, &err);
}

/* --normalizer and --temperature of analyze and attention, as given. */
static cli_lens model_lens;

static int analyze_option(cli_model_run *r, int argc, char **argv, int *i)
{
    int used = cli_target_option(&r->input, "analyze", argc, argv, i);
    return used ? used : cli_lens_option(&model_lens, "analyze", 0, argc, argv, i);
}

static int lens_parsed(cli_model_run *r, const char *cmd)
{
    return cli_lens_parsed(&model_lens, cmd, &r->common);
}

static int lens_set(cli_model_run *r)
{
    return cli_lens_set(&model_lens, r->opt);
}

int cmd_analyze(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_ANALYZE))
        return 1;
    r.common.agg.allowed = 1;
    model_lens = (cli_lens){0};
    int rc = cli_model_run_parse(&r, &cli_usage_analyze, argc, argv, analyze_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (lens_parsed(&r, "analyze"))
        return EXIT_USAGE;
    rc = cli_model_run_prepare(&r, "analyze", 0);
    /* a pair's cross-attention is rectangular (targets x sources): the
     * default selection takes family M too, whatever the two lengths */
    if (rc == 0 && r.pair && !r.common.metrics_given)
        ag_metric_set_default_shape(r.common.metrics, r.common.families, 1, 2);
    if (rc == 0)
        rc = lens_set(&r);
    if (rc == 0)
        rc = cli_model_run_records(&r, "analyze", analyze_text);
    return cli_model_run_finish(&r, rc);
}

/* ---- attention ---------------------------------------------------------- */

static const char attention_help[] =
    "usage: attngeom attention MODEL (--text S | --tokens 1,2,3 | --text-file F | --tokens-file F)\n"
    "                               -o OUT.npy [--hidden H.npy] [--scores S.npy] [options]\n"
    "\n"
    "Run the forward pass and write the attention probabilities [L, H, n, n] as\n"
    "<f8 .npy (the selected layers and heads, all by default). --hidden also\n"
    "writes the hidden states [L+1, n, d] in Hugging Face's output_hidden_states\n"
    "convention (embeddings first; for GPT-2/LLaMA the last after the final norm).\n"
    "--scores writes, from the same pass, the pre-softmax scores [L, H, n, n] of the\n"
    "same heads as the architecture forms them (scale, soft-capping; -inf where a\n"
    "key is masked: causal, sliding window), so that the softmax of each row is the\n"
    "row of OUT.npy (the model's own, also under --normalizer).\n"
    "--normalizer N (sparsemax, entmax15, entmax:ALPHA, linear) or --temperature T\n"
    "writes to OUT.npy the same pass's heads under that normaliser instead of the\n"
    "model's softmax (the pass itself is unchanged).\n"
    "The arrays are written a layer at a time as the pass runs (memory: the model\n"
    "and one layer); a file is renamed into place only when the run succeeds.\n"
    "\n"
    "A corpus (--text-file or --tokens-file of several texts) writes one file per\n"
    "text: {i} in OUT.npy (and H.npy) stands for the text's 0-based line index,\n"
    "the \"text\" of analyze's records (-o attn_{i}.npy: attn_0.npy, attn_1.npy, ...;\n"
    "blank and skipped lines leave gaps). Each text's files are written as it\n"
    "finishes. A name without {i} takes one text only; with --text or --tokens,\n"
    "{i} is 0.\n"
    "\n"
    "A t5 or bart folder (encoder-decoder) takes a target, --target T or\n"
    "--target-tokens IDS: -o gets the encoder's [L_enc, H, n_src, n_src],\n"
    "--decoder [L_dec, H, n_tgt, n_tgt], --cross [L_dec, H, n_tgt, n_src];\n"
    "--hidden the encoder's hidden states, --decoder-hidden the decoder's;\n"
    "--scores, --decoder-scores and --cross-scores their pre-softmax scores in the\n"
    "same shapes (T5: q.k plus the position bias, no scale).\n"
    "A whisper folder with its decoder: --audio or --features and\n"
    "--target-tokens IDS (the decoder prompt, special tokens included) or\n"
    "--target T.\n";

static const cli_option attention_own[] = {
    {"-o", "OUT.npy", "the attention probabilities [L, H, n, n] ({i}: the text's line index)"},
    {"--output", "OUT.npy", "the same as -o"},
    {"--hidden", "H.npy", "also write the hidden states [L+1, n, d] ({i} as for -o)"},
    {"--scores", "S.npy", "also write the pre-softmax scores [L, H, n, n] (-inf masked; {i} as for -o)"},
    {"--decoder", "DEC.npy", "t5, bart, whisper: the decoder's self-attention [L_dec, H, n_tgt, n_tgt] (-o gets the encoder's)"},
    {"--cross", "CROSS.npy", "t5, bart, whisper: the cross-attention [L_dec, H, n_tgt, n_src]"},
    {"--decoder-hidden", "HD.npy", "t5, bart, whisper: the decoder's hidden states [L_dec+1, n_tgt, d] (--hidden: the encoder's)"},
    {"--decoder-scores", "DS.npy", "t5, bart, whisper: the decoder's self-attention scores [L_dec, H, n_tgt, n_tgt] (--scores: the encoder's)"},
    {"--cross-scores", "CS.npy", "t5, bart, whisper: the cross-attention scores [L_dec, H, n_tgt, n_src]"},
    {"--normalizer", "N", "-o gets the heads under sparsemax, entmax15, entmax:ALPHA or linear instead"},
    {"--temperature", "T", "-o gets softmax(S/T) of the scores, T > 0 (default 1: the model's)"},
    {NULL}};
static const cli_option attention_refused[] = {
    {"--temperatures", NULL, "takes no --temperatures: -o is one array of one temperature (give --temperature T, one run per T)"},
    {NULL}};
static const cli_option_group *const attention_groups[] = {
    CLI_OWN("attention", attention_own), CLI_REFUSE("attention-refused", attention_refused),
    &cli_group_input, &cli_group_target, &cli_group_select,
    &cli_group_precision, &cli_group_corpus, &cli_group_media, &cli_group_jobs,
    &cli_group_printless, &cli_group_help, NULL};
const cli_usage cli_usage_attention = {"attention", attention_help, attention_groups, NULL};

/* The arrays go out as the pass makes them, a layer at a time, so a run
 * holds the model and one layer, never [L, H, n, n] (docs/cli.md, "Outputs"). */
typedef struct {
    ag_npy_writer *attn, *hidden; /* -o, and --hidden or NULL */
    ag_npy_writer *scores;        /* --scores or NULL */
    ag_error err;                 /* the write that failed */
} attention_ctx;

/* The selected heads of a selected layer, appended to -o's array. */
static int write_heads(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer;
    attention_ctx *c = user;
    return ag_npy_writer_write(c->attn, attn, heads * n * n, &c->err);
}

/* The selected heads' scores of a selected layer, appended to --scores'. */
static int write_scores(int layer, const double *s, size_t heads, size_t n, void *user)
{
    (void)layer;
    attention_ctx *c = user;
    return ag_npy_writer_write(c->scores, s, heads * n * n, &c->err);
}

/* Hidden state `index` (they come in order), appended to --hidden's array. */
static int write_hidden(int index, size_t n, size_t d, const double *h, void *user)
{
    (void)index;
    attention_ctx *c = user;
    return ag_npy_writer_write(c->hidden, h, n * d, &c->err);
}

static const char *hidden_path, *scores_path;
static cli_s2s_paths s2s; /* --decoder, --cross, --decoder-hidden, --*-scores */

/* attention's path options after -o, each with where its value goes. */
enum { N_PATHS = 7 };
static const char *const path_opts[N_PATHS] = {"--hidden", "--scores", "--decoder", "--cross",
                                               "--decoder-hidden", "--decoder-scores",
                                               "--cross-scores"};
static const char **const path_slot[N_PATHS] = {&hidden_path, &scores_path, &s2s.decoder,
                                                &s2s.cross, &s2s.decoder_hidden,
                                                &s2s.decoder_scores, &s2s.cross_scores};

static int attention_option(cli_model_run *r, int argc, char **argv, int *i)
{
    for (int k = 0; k < N_PATHS; k++)
        if (cli_is_option(argv[*i], path_opts[k]))
            return (*path_slot[k] = cli_option_value("attention", path_opts[k], argc, argv, i))
                       ? 1
                       : -1;
    int used = cli_target_option(&r->input, "attention", argc, argv, i);
    return used ? used : cli_lens_option(&model_lens, "attention", 0, argc, argv, i);
}

/* Before anything runs: a name without {i} takes one text (the files of
 * every text are checked with the run's inputs, cli_model_run_check_paths). */
static int check_text_paths(const cli_model_run *r)
{
    for (int k = -1; k < N_PATHS; k++) {
        const char *name = k < 0 ? r->common.out_path : *path_slot[k],
                   *opt = k < 0 ? "-o" : path_opts[k];
        if (name && r->nseq > 1 && !strstr(name, "{i}"))
            return cli_usage_error("attention", "%s %s names one file and the input holds %zu "
                                   "texts: put {i} in it (%s attn_{i}.npy)", opt, name,
                                   r->nseq, opt);
    }
    return 0;
}

/* The pass (ag_run_attention), writing as it goes: 0, or 1 after printing
 * (a failed write names its file; anything else, the model and the text). */
static int attention_pass(cli_model_run *r, const cli_seq *s, const ag_run_options *opt,
                          attention_ctx *c)
{
    ag_run_input in;
    double *owned = NULL;
    ag_error err = {0};
    int status = cli_seq_input(r, s, &in, &owned, &err);
    if (status == AG_OK)
        status = ag_run_attention_scores(r->model, &in, opt, r->workers.workers, write_heads,
                                         c->scores ? write_scores : NULL,
                                         c->hidden ? write_hidden : NULL, c, NULL, &err);
    free(owned);
    if (status == AG_OK)
        return 0;
    return c->err.status ? cli_fail_error(&c->err) : cli_model_run_fail(r, s, &err);
}

/* One text's arrays, streamed to its files during its pass. Both are staged
 * and committed together, so a failure leaves any earlier files untouched. */
static int attention_text(cli_model_run *r, const cli_seq *s, void *user)
{
    const ag_model_config *g = ag_model_get_config(r->model);
    size_t n = s->n, nl = ag_selection_count(r->layers),
           nh = ag_selection_count(r->heads);
    size_t ashape[4] = {nl, nh, n, n}, hshape[3] = {(size_t)g->n_layer + 1, n, (size_t)g->d_model};
    char *a = cli_text_path(r->common.out_path, s), *h = cli_text_path(hidden_path, s),
         *sc = cli_text_path(scores_path, s);
    attention_ctx c = {0};
    cli_outputs tx = {0};
    int rc = !a || (hidden_path && !h) || (scores_path && !sc) ? cli_fail("out of memory") : 0;
    if (rc == 0)
        rc = cli_outputs_npy(&tx, a, 4, ashape, &c.attn);
    if (rc == 0 && h)
        rc = cli_outputs_npy(&tx, h, 3, hshape, &c.hidden);
    if (rc == 0 && sc)
        rc = cli_outputs_npy(&tx, sc, 4, ashape, &c.scores);
    if (rc == 0)
        rc = attention_pass(r, s, user, &c);
    rc = cli_outputs_finish(&tx, rc);
    free(a);
    free(h);
    free(sc);
    return rc;
}

/* An encoder–decoder folder's arrays of one source (seq2seq.c). */
static int attention_seq2seq_text(cli_model_run *r, const cli_seq *s, void *user)
{
    (void)user;
    const char *given[8] = {r->common.out_path, s2s.decoder, s2s.cross, hidden_path,
                            s2s.decoder_hidden, scores_path, s2s.decoder_scores,
                            s2s.cross_scores};
    char *own[8] = {NULL};
    int rc = 0;
    for (int k = 0; k < 8; k++)
        if (given[k] && !(own[k] = cli_text_path(given[k], s)))
            rc = cli_fail("out of memory");
    cli_s2s_paths p = {own[0], own[1], own[2], own[3], own[4], own[5], own[6], own[7]};
    if (rc == 0)
        rc = cli_attention_seq2seq(r, s, &p);
    for (int k = 0; k < 8; k++)
        free(own[k]);
    return rc;
}

/* What an encoder–decoder folder takes and a model of one stack does not. */
static int check_seq2seq_options(const cli_model_run *r)
{
    int any = s2s.decoder || s2s.cross || s2s.decoder_hidden || s2s.decoder_scores ||
              s2s.cross_scores;
    if (!r->pair && any)
        return cli_fail("%s: --decoder, --cross, --decoder-hidden, --decoder-scores and "
                        "--cross-scores need an encoder-decoder model (t5, bart, whisper) and "
                        "its target", r->model_dir);
    return 0;
}

int cmd_attention(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_MATRIX))
        return 1;
    hidden_path = scores_path = NULL;
    s2s = (cli_s2s_paths){0};
    model_lens = (cli_lens){0};
    int rc = cli_model_run_parse(&r, &cli_usage_attention, argc, argv, attention_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (lens_parsed(&r, "attention"))
        return EXIT_USAGE;
    if (!r.common.out_path)
        return cli_usage_error("attention", "missing -o OUT.npy");
    /* a name with {i} is checked for each text (cli_model_run_check_paths) */
    r.outs[0] = (cli_path){"-o", r.common.out_path};
    r.outs[1] = (cli_path){"--hidden", hidden_path};
    r.outs[2] = (cli_path){"--scores", scores_path};
    rc = cli_model_run_prepare(&r, "attention", 0);
    if (rc == 0)
        rc = check_seq2seq_options(&r);
    if (rc == 0)
        rc = check_text_paths(&r);
    if (rc == 0)
        rc = lens_set(&r);
    if (rc == 0)
        rc = cli_model_run_each(&r, "attention", r.pair ? attention_seq2seq_text : attention_text,
                                r.opt);
    return cli_model_run_finish(&r, rc);
}
