/* cmd_layers.c — the commands that measure across layers (docs/metrics.md, family G):
 * `residual` (families A and C of every hidden state h_0 … h_L) and `rollout`
 * (attention rollout R_l, families A, B, C; -o writes the R_l as .npy).
 * The work of a text is the library's (attngeom/run.h: ag_run_residual,
 * ag_run_rollout, one streamed forward pass each); here are the options,
 * the corpus run and the outputs (-o writes each selected R_l as it comes). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- residual ----------------------------------------------------------- */

static const char residual_help[] =
    "usage: attngeom residual MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F) [options]\n"
    "\n"
    "Run the forward pass and print the metrics of every hidden state of the\n"
    "residual stream (families spectrum and geometry of the [n, d] matrix, and\n"
    "with --metrics activations its massive activations, Sun et al. 2024): one\n"
    "record per hidden state l = 0 ... L (\"head\": -1) in Hugging Face's\n"
    "output_hidden_states order: 0 the embeddings, l the output of block l-1,\n"
    "L (GPT-2, LLaMA) after the final norm. res_ratio falling with depth is rank\n"
    "collapse; mean_cosine and pc1_share rising is anisotropy (docs/layers.md).\n"
    "With --text-file or --tokens-file, one set of records per text (\"text\" =\n"
    "0-based line).\n"
    "On a t5, bart or whisper folder with a target (--target, --target-tokens):\n"
    "the encoder's hidden states, then the decoder's (records with \"stack\";\n"
    "--layers selects in each stack).\n";

/* residual and rollout measure every layer as a whole: no --heads */
static const cli_option_group no_heads = {"per-layer", NULL, (const cli_option[]){
    {"--heads", NULL, "takes no --heads: its records are per layer (\"head\": -1)"},
    {NULL}}, CLI_GROUP_REFUSED};

static const cli_option residual_own[] = {
    {"--layers", "LIST", "hidden states to report, 0 ... L, e.g. 0,2-3 (default all)"},
    {"--massive-abs", "A", "act_massive counts the entries with |h| >= A (default 100)"},
    {"--massive-ratio", "R", "... and |h| >= R x the median |h| (default 1000)"},
    {NULL}};
static const cli_option_group *const residual_groups[] = {
    CLI_OWN("residual", residual_own), &no_heads, &cli_group_input, &cli_group_target,
    &cli_group_precision, &cli_group_records, &cli_group_output, &cli_group_table,
    &cli_group_label, &cli_group_aggregate, &cli_group_corpus, &cli_group_media, &cli_group_jobs,
    &cli_group_help, NULL};
const cli_usage cli_usage_residual = {"residual", residual_help, residual_groups, NULL};

static int residual_run(const cli_model_run *r, const ag_run_options *opt,
                        const ag_run_input *in, void *user, ag_error *err)
{
    return ag_run_residual(r->model, in, opt, r->workers.workers, user, err);
}

/* One text's records: its hidden states measured as the pass hands them
 * over (ag_run_residual). */
static int residual_sequence(cli_model_run *r, const cli_seq *s, cli_text_out *out,
                             void *user)
{
    (void)user;
    ag_error err = {0};
    int status = cli_run_text(r, s, residual_run, &out->recs, &err);
    return status == AG_OK ? 0 : cli_model_run_fail(r, s, &err);
}

static int residual_option(cli_model_run *r, int argc, char **argv, int *i)
{
    return cli_target_option(&r->input, "residual", argc, argv, i);
}

int cmd_residual(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_RESIDUAL))
        return 1;
    r.common.agg.allowed = 1;
    int rc = cli_model_run_parse(&r, &cli_usage_residual, argc, argv, residual_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = cli_model_run_prepare(&r, "residual", 1);
    if (rc == 0)
        rc = cli_model_run_records(&r, "residual", residual_sequence);
    return cli_model_run_finish(&r, rc);
}

/* ---- rollout ------------------------------------------------------------ */

static const char rollout_help[] =
    "usage: attngeom rollout MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F)\n"
    "                             [-o R.npy] [options]\n"
    "\n"
    "Attention rollout (Abnar & Zuidema 2020): with A_l the mean over the query\n"
    "heads of layer l and B_l = A_l/2 + I/2, R_0 = B_0 and R_l = B_l R_(l-1).\n"
    "Prints the metrics of every R_l (families spectrum, attention, geometry):\n"
    "one record per layer (\"head\": -1), per text with --text-file or\n"
    "--tokens-file (\"text\" = 0-based line). R_l[i][j]: how much of token j's input reaches position i\n"
    "after layer l (docs/layers.md).\n"
    "On a t5, bart or whisper folder with a target (--target, --target-tokens):\n"
    "the encoder's rollout, the decoder's self-attention rollout and, at the\n"
    "decoder's last layer, its cross-attention composed with the encoder's\n"
    "rollout, [n_tgt, n_src] (records with \"stack\"; docs/metrics.md).\n"
    "\n"
    "Here -o is not the records' destination: -o R.npy writes the rollout\n"
    "matrices [L, n, n] as <f8 .npy (the selected layers, all by default), as\n"
    "`attention -o` does, and the records still go to standard output. -o takes\n"
    "one text (--text, --tokens, or a --tokens-file of one line), not --text-file.\n"
    "On an encoder-decoder folder -o gets the encoder's R_l [L_enc, n_src, n_src],\n"
    "--decoder the decoder's [L_dec, n_tgt, n_tgt] and --cross R_cross\n"
    "[n_tgt, n_src] (each optional; the same one-text rule).\n";

static const cli_option rollout_own[] = {
    {"-o", "R.npy", "also write R_l of the selected layers, [count, n, n] (one text)"},
    {"--output", "R.npy", "the same as -o"},
    {"--decoder", "DEC.npy", "t5, bart, whisper: also write the decoder's R_l [count, n_tgt, n_tgt] (-o gets the encoder's)"},
    {"--cross", "CROSS.npy", "t5, bart, whisper: also write R_cross [n_tgt, n_src] (the decoder's last layer)"},
    {"--layers", "LIST", "layers to report, e.g. 0,2-3 (default all; every layer up to the last selected one is still composed)"},
    {"--normalizer", "N", "compose the heads under sparsemax, entmax15, entmax:ALPHA or linear (the pass unchanged)"},
    {"--temperature", "T", "compose softmax(S/T) of the scores, T > 0 (default 1: the model's)"},
    {"--temperatures", "T1,T2,...", "one set of records per T, in the order given (not with -o)"},
    {NULL}};
static const cli_option_group *const rollout_groups[] = {
    CLI_OWN("rollout", rollout_own), &no_heads, &cli_group_input, &cli_group_target,
    &cli_group_precision, &cli_group_records, &cli_group_curvature, &cli_group_output,
    &cli_group_table, &cli_group_label, &cli_group_aggregate, &cli_group_corpus,
    &cli_group_media, &cli_group_jobs, &cli_group_help, NULL};
const cli_usage cli_usage_rollout = {"rollout", rollout_help, rollout_groups, NULL};

typedef struct {
    ag_npy_writer *save;     /* -o R.npy, or NULL */
    int save_failed;         /* the write's error is the run's */
    cli_s2s_writers *stacks; /* an encoder–decoder folder's files, or NULL */
} rollout_run;

/* -o: R_l of the selected layers as they come. */
static int rollout_save(int layer, const double *R, size_t n, void *user, ag_error *err)
{
    (void)layer;
    rollout_run *run = user;
    int status = ag_npy_writer_write(run->save, R, n * n, err);
    run->save_failed = status != AG_OK;
    return status;
}

typedef struct {
    rollout_run *run;
    ag_record_list **out;
} rollout_text;

static int rollout_run_text(const cli_model_run *r, const ag_run_options *opt,
                            const ag_run_input *in, void *user, ag_error *err)
{
    rollout_text *t = user;
    if (t->run->stacks)
        return ag_run_rollout_seq2seq(r->model, in, opt, r->workers.workers, cli_s2s_write,
                                      t->run->stacks, t->out, err);
    return ag_run_rollout(r->model, in, opt, r->workers.workers,
                          t->run->save ? rollout_save : NULL, t->run, t->out, err);
}

static int rollout_sequence(cli_model_run *r, const cli_seq *s, cli_text_out *text, void *user)
{
    rollout_text t = {user, &text->recs};
    ag_error err = {0};
    int status = cli_run_text(r, s, rollout_run_text, &t, &err);
    if (status == AG_OK)
        return 0;
    if (t.run->stacks && t.run->stacks->err.status)
        return cli_fail_error(&t.run->stacks->err);
    return t.run->save_failed ? cli_fail_error(&err) : cli_model_run_fail(r, s, &err);
}

static cli_lens rollout_lens;
static cli_s2s_paths rollout_s2s; /* --decoder, --cross */

static int rollout_option(cli_model_run *r, int argc, char **argv, int *i)
{
    int used = cli_s2s_option(&rollout_s2s, "rollout", argc, argv, i);
    if (!used)
        used = cli_target_option(&r->input, "rollout", argc, argv, i);
    return used ? used : cli_lens_option(&rollout_lens, "rollout", 0, argc, argv, i);
}

/* The arrays' files of the run's one text, staged in tx: -o's R, or on an
 * encoder–decoder folder each stack's (run->stacks). 0, or 1 after
 * printing. */
static int rollout_files(cli_model_run *r, cli_outputs *tx, rollout_run *run,
                         cli_s2s_writers *stacks)
{
    if (r->seqs[0].skip)
        return 0;
    if (r->pair) {
        run->stacks = stacks;
        return cli_rollout_seq2seq_open(r, &r->seqs[0], &rollout_s2s, tx, stacks);
    }
    if (!rollout_s2s.out)
        return 0;
    size_t shape[3] = {ag_selection_count(r->layers), r->seqs[0].n, r->seqs[0].n};
    return cli_outputs_npy(tx, rollout_s2s.out, 3, shape, &run->save);
}

int cmd_rollout(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_ROLLOUT))
        return 1;
    r.common.agg.allowed = 1;
    rollout_lens = (cli_lens){0};
    rollout_s2s = (cli_s2s_paths){0};
    int rc = cli_model_run_parse(&r, &cli_usage_rollout, argc, argv, rollout_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (cli_lens_parsed(&rollout_lens, "rollout", &r.common))
        return EXIT_USAGE;
    /* -o (and --decoder, --cross) are the rollout arrays; the first one
     * named is the one the one-text rules name */
    const char *opt, *any = cli_s2s_arrays(&r, &rollout_s2s, &opt);
    if (any && (r.input.text_file || r.input.image_file || r.input.audio_file))
        return cli_usage_error("rollout", "%s takes one input, not %s",
                               any == rollout_s2s.out ? "-o R.npy" : any == rollout_s2s.decoder
                                   ? "--decoder DEC.npy" : "--cross CROSS.npy",
                               r.input.text_file ? "--text-file" : r.input.image_file ? "--image-file"
                                                                  : "--audio-file");
    if (cli_lens_one_array(&rollout_lens, "rollout", opt, any))
        return EXIT_USAGE;
    if (any && r.input.tokens_file)
        r.single = "rollout -o R.npy";
    rc = cli_model_run_prepare(&r, "rollout", 0);
    if (rc == 0)
        rc = cli_lens_set(&rollout_lens, r.opt);
    if (rc == 0)
        rc = cli_s2s_need_pair(&r, &rollout_s2s, "--decoder and --cross");
    /* the arrays are written as the layers come (a skipped text writes
     * none), and committed with the records: all, or none */
    cli_outputs tx = {0};
    rollout_run run = {0};
    cli_s2s_writers stacks = {0};
    if (rc == 0 && any)
        rc = rollout_files(&r, &tx, &run, &stacks);
    /* an array: one text, whose records are kept to be written with it */
    cli_sink sink = {0};
    cli_settings_in in = {.model_dir = r.model_dir, .run = &r};
    if (rc == 0)
        rc = cli_sink_open(&sink, &r.common, "rollout", r.model_dir, &in, !any);
    r.sink = &sink;
    if (rc == 0)
        rc = cli_model_run_texts(&r, "rollout", rollout_sequence, NULL, &run);
    rc = cli_sink_close(&sink, rc, &tx);
    return cli_model_run_finish(&r, rc);
}
