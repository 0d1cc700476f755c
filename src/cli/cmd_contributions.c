/* cmd_contributions.c — `attngeom contributions`: what each layer's
 * attention moves from token to token, beyond its weights
 * (docs/metrics.md, "Contributions"; attngeom/contributions.h): per head
 * Kobayashi et al. 2020's norms (--method norms), per layer Kobayashi et
 * al. 2021's residual-aware norms (--method norms-res), Ferrando et al.
 * 2022's ALTI (--method alti; composed through the layers with --rollout)
 * or Abnar & Zuidema 2020's attention flow (--method flow). The work of a
 * text is the library's (ag_run_contributions, one streamed pass); here
 * are the options, the corpus run and the outputs: -o C.npy writes the
 * selected layers' matrices [count, n, n] ([count, heads, n, n] with
 * norms), --mixing M.npy the per-token context mixing [count, n], as the
 * layers come. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char contributions_help[] =
    "usage: attngeom contributions MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F)\n"
    "                             [--method norms|norms-res|alti|flow] [--rollout] [-o C.npy] [options]\n"
    "\n"
    "Decompose every layer's attention block, residual and norms included, into\n"
    "one term per source token, T_i(x_j), summing with the biases to the block's\n"
    "output (docs/metrics.md, \"Contributions\"), and print the metrics of each\n"
    "layer's contribution matrix (families spectrum, attention, geometry, and\n"
    "context_mixing): one record per layer (\"head\": -1), per text with\n"
    "--text-file or --tokens-file.\n"
    "  --method norms      per head N^h_ij = A^h_ij |f_h(x_j)|_2 (Kobayashi et al.\n"
    "                      2020, section 3): one record per (layer, head), --heads\n"
    "                      selecting them; no residual, no norm, no mixing\n"
    "  --method norms-res  N_ij = |T_i(x_j)|_2 (Kobayashi et al. 2021, section 3)\n"
    "  --method alti       C_ij = max(0, |y_i|_1 - |y_i - T_i(x_j)|_1), rows summing\n"
    "                      to 1 (Ferrando et al. 2022, section 3; the default)\n"
    "  --rollout           ALTI composed through the layers, R_l = C_l R_(l-1)\n"
    "                      (no identity added): the records and -o are R_l\n"
    "  --method flow       attention flow F_l (Abnar & Zuidema 2020, section 3):\n"
    "                      the maximum flow from output token i through layers\n"
    "                      0..l, capacities (A_l + I)/2 (A_l the head mean), to\n"
    "                      input token j. A layer costs n^2 maximum flows: more\n"
    "                      than --flow-max-tokens N tokens (default 64) are\n"
    "                      refused before any flow runs (docs/performance.md)\n"
    "Every architecture is decomposed exactly; a parallel block (GPT-NeoX\n"
    "use_parallel_residual) as its attention branch plus the residual, its MLP\n"
    "branch left out.\n"
    "--normalizer N or --temperature T (--temperatures T1,T2,...) decompose each\n"
    "layer with its heads under that normaliser of the same pass's scores: every\n"
    "method takes the lensed A' as its factor, and norms-res and ALTI decompose\n"
    "the counterfactual output y'_i = sum_j T'_i(x_j) + bias, which ALTI's\n"
    "distances are measured to (not the model's y); the hidden states entering\n"
    "each layer are the model's own.\n"
    "\n"
    "Here -o is not the records' destination: -o C.npy writes the selected\n"
    "layers' matrices [count, n, n] as <f8 .npy and the records still go to\n"
    "standard output (norms: [count, heads, n, n]); --mixing M.npy writes the\n"
    "context mixing of every token [count, n]: 1 - C_ii with alti, Kobayashi et\n"
    "al.'s ratio |sum_(j!=i) T_i(x_j)| / (|sum_(j!=i) T_i(x_j)| + |T_i(x_i)|) with\n"
    "norms-res; context_mixing in the records is its mean over the tokens.\n"
    "Both take one text (--text, --tokens, or a --tokens-file of one line).\n"
    "On a t5, bart or whisper folder with a target (--target, --target-tokens):\n"
    "norms-res and alti of the encoder's layers and of the decoder's\n"
    "self-attention sublayers, records with \"stack\" (the cross-attention's\n"
    "effect enters the decoder's next hidden state, not its terms;\n"
    "docs/metrics.md); -o C.npy gets the encoder's matrices, --decoder DEC.npy\n"
    "the decoder's; norms, flow and --mixing not yet.\n";

static const cli_option contributions_own[] = {
    {"--method", "M", "norms, norms-res, alti or flow (default alti)"},
    {"--rollout", NULL, "compose ALTI through the layers (needs alti)"},
    {"-o", "C.npy", "also write the selected layers' matrices, [count, n, n] (one text)"},
    {"--output", "C.npy", "the same as -o"},
    {"--decoder", "DEC.npy", "t5, bart, whisper: also write the decoder's matrices, [count, n_tgt, n_tgt] (-o gets the encoder's)"},
    {"--mixing", "M.npy", "also write each token's context mixing, [count, n] (one text; norms-res, alti)"},
    {"--heads", "LIST", "heads of --method norms, e.g. 1,4-5 (default all; the other methods are per layer)"},
    {"--flow-max-tokens", "N", "the most tokens --method flow takes (default 64; a layer costs n^2 maximum flows)"},
    {"--layers", "LIST", "layers to report, e.g. 0,2-3 (default all; every layer up to the last selected one is still computed)"},
    {"--normalizer", "N", "decompose the heads under sparsemax, entmax15, entmax:ALPHA or linear (the pass unchanged)"},
    {"--temperature", "T", "decompose under softmax(S/T) of the scores, T > 0 (default 1: the model's)"},
    {"--temperatures", "T1,T2,...", "one set of records per T, in the order given (not with -o, --mixing)"},
    {NULL}};
static const cli_option_group *const contributions_groups[] = {
    CLI_OWN("contributions", contributions_own), &cli_group_input, &cli_group_target,
    &cli_group_precision, &cli_group_records, &cli_group_curvature, &cli_group_output,
    &cli_group_table, &cli_group_label, &cli_group_aggregate, &cli_group_corpus,
    &cli_group_media, &cli_group_jobs, &cli_group_help, NULL};
const cli_usage cli_usage_contributions = {"contributions", contributions_help,
                                           contributions_groups, NULL};

/* The command's own options (contributions_option). */
static struct {
    ag_contrib_method method;
    int compose;
    const char *mixing; /* --mixing M.npy */
    cli_s2s_paths s2s;  /* --decoder DEC.npy (an encoder–decoder folder's) */
    const char *name;   /* --method's name, for the settings */
    double flow_max;    /* --flow-max-tokens N, or 0: the library's */
} opts;

static const struct {
    const char *name;
    ag_contrib_method method;
} contrib_methods[] = {{"norms", AG_CONTRIB_NORMS}, {"norms-res", AG_CONTRIB_NORMS_RES},
                       {"alti", AG_CONTRIB_ALTI}, {"flow", AG_CONTRIB_FLOW}};

static int contributions_method(const char *v)
{
    for (size_t k = 0; k < sizeof contrib_methods / sizeof *contrib_methods; k++)
        if (strcmp(v, contrib_methods[k].name) == 0) {
            opts.method = contrib_methods[k].method;
            opts.name = contrib_methods[k].name;
            return 1;
        }
    cli_usage_error("contributions", "--method takes norms, norms-res, alti or flow, not '%s'", v);
    return -1;
}

/* --normalizer, --temperature and --temperatures, as given. */
static cli_lens contrib_lens;

static int contributions_option(cli_model_run *r, int argc, char **argv, int *i)
{
    int target = cli_target_option(&r->input, "contributions", argc, argv, i);
    if (target)
        return target;
    int lens = cli_lens_option(&contrib_lens, "contributions", 0, argc, argv, i);
    if (lens)
        return lens;
    if (cli_is_option(argv[*i], "--rollout")) {
        opts.compose = 1;
        return 1;
    }
    if (cli_is_option(argv[*i], "--decoder"))
        return (opts.s2s.decoder = cli_option_value("contributions", "--decoder", argc, argv, i))
                   ? 1 : -1;
    if (cli_is_option(argv[*i], "--mixing"))
        return (opts.mixing = cli_option_value("contributions", "--mixing", argc, argv, i)) ? 1 : -1;
    if (cli_is_option(argv[*i], "--flow-max-tokens")) {
        const char *v = cli_option_value("contributions", "--flow-max-tokens", argc, argv, i);
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        if (v && (end == v || *end || !(x >= 1 && x <= 1 << 20) || x != (long)x)) {
            cli_usage_error("contributions", "--flow-max-tokens takes an integer 1..1048576, not '%s'", v);
            return -1;
        }
        return v ? (opts.flow_max = x, 1) : -1;
    }
    if (!cli_is_option(argv[*i], "--method"))
        return 0;
    const char *v = cli_option_value("contributions", "--method", argc, argv, i);
    return v ? contributions_method(v) : -1;
}

typedef struct {
    ag_npy_writer *save, *mix; /* -o C.npy, --mixing M.npy, or NULL */
    ag_npy_writer *dec;        /* --decoder DEC.npy, or NULL */
    int save_failed;           /* the write's error is the run's */
} contrib_run;

/* -o and --mixing: the selected layers as they come. */
static int contrib_save(const ag_run_contrib_view *v, void *user, ag_error *err)
{
    contrib_run *run = user;
    size_t n = v->n;
    int status = AG_OK;
    ag_npy_writer *save = v->stack == AG_STACK_DECODER ? run->dec : run->save;
    if (save)
        status = ag_npy_writer_write(save, v->R ? v->R : v->M, v->heads * n * n, err);
    if (status == AG_OK && run->mix) /* ALTI: 1 - C_ii; norms-res: r_i */
        status = ag_npy_writer_write(run->mix, v->mixing, n, err);
    run->save_failed = status != AG_OK;
    return status;
}

typedef struct {
    contrib_run *run;
    ag_record_list **out;
} contrib_text;

static int contrib_run_text(const cli_model_run *r, const ag_run_options *opt,
                            const ag_run_input *in, void *user, ag_error *err)
{
    contrib_text *t = user;
    int save = t->run->save || t->run->mix || t->run->dec;
    return ag_run_contributions(r->model, in, opt, r->workers.workers, opts.method, opts.compose,
                                save ? contrib_save : NULL, t->run, t->out, err);
}

static int contrib_sequence(cli_model_run *r, const cli_seq *s, cli_text_out *text, void *user)
{
    contrib_text t = {user, &text->recs};
    ag_error err = {0};
    int status = cli_run_text(r, s, contrib_run_text, &t, &err);
    if (status == AG_OK)
        return 0;
    return t.run->save_failed ? cli_fail_error(&err) : cli_model_run_fail(r, s, &err);
}

/* -o C.npy and --mixing M.npy, staged in tx: one text's, [count, n, n]
 * ([count, heads, n, n] with norms) and [count, n]. */
static int contrib_outputs(cli_model_run *r, const char *npy_path, cli_outputs *tx,
                           contrib_run *run)
{
    size_t count = ag_selection_count(r->layers), n = r->seqs[0].n;
    size_t per_head[4] = {count, ag_selection_count(r->heads), n, n};
    size_t per_layer[3] = {count, n, n}, mixing[2] = {count, n};
    int heads = opts.method == AG_CONTRIB_NORMS;
    size_t nt = r->pair ? (r->seqs[0].target ? r->seqs[0].n_target : r->n_target) : 0, dl = 0, dh;
    int rc = r->pair ? cli_s2s_decoder_counts(r, "contributions", &dl, &dh, NULL) : 0;
    size_t decoder[3] = {dl, nt, nt};
    if (rc == 0 && opts.s2s.decoder)
        rc = cli_outputs_npy(tx, opts.s2s.decoder, 3, decoder, &run->dec);
    if (rc == 0 && npy_path)
        rc = cli_outputs_npy(tx, npy_path, heads ? 4 : 3, heads ? per_head : per_layer,
                             &run->save);
    if (rc == 0 && opts.mixing)
        rc = cli_outputs_npy(tx, opts.mixing, 2, mixing, &run->mix);
    return rc;
}

/* What a method refuses, before the model loads. */
static int contributions_check(const cli_model_run *r)
{
    if (opts.compose && opts.method != AG_CONTRIB_ALTI)
        return cli_usage_error("contributions", "--rollout composes ALTI: it needs --method alti");
    if (r->input.heads && opts.method != AG_CONTRIB_NORMS)
        return cli_usage_error("contributions", "--heads selects the heads of --method norms; "
                               "the other methods measure each layer as a whole (\"head\": -1)");
    if (opts.mixing && (opts.method == AG_CONTRIB_NORMS || opts.method == AG_CONTRIB_FLOW))
        return cli_usage_error("contributions", "--mixing takes --method norms-res or alti: "
                               "norms and flow define no per-token context mixing");
    if (opts.flow_max && opts.method != AG_CONTRIB_FLOW)
        return cli_usage_error("contributions", "--flow-max-tokens limits --method flow only");
    return 0;
}

int cmd_contributions(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_CONTRIBUTIONS))
        return 1;
    r.common.agg.allowed = 1;
    opts.method = AG_CONTRIB_ALTI;
    opts.name = "alti";
    opts.compose = 0;
    opts.mixing = NULL;
    opts.s2s = (cli_s2s_paths){0};
    opts.flow_max = 0;
    contrib_lens = (cli_lens){0};
    int rc = cli_model_run_parse(&r, &cli_usage_contributions, argc, argv, contributions_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = contributions_check(&r)) || cli_lens_parsed(&contrib_lens, "contributions", &r.common))
        return rc ? rc : EXIT_USAGE;
    if (cli_lens_one_array(&contrib_lens, "contributions", r.common.out_path ? "-o" : "--mixing",
                           r.common.out_path ? r.common.out_path : opts.mixing))
        return EXIT_USAGE;
    /* -o is the matrices; the records go to standard output. */
    const char *npy_path = r.common.out_path;
    r.common.out_path = NULL;
    int files = npy_path || opts.mixing || opts.s2s.decoder;
    if (files && (r.input.text_file || r.input.image_file || r.input.audio_file))
        return cli_usage_error("contributions", "%s one input, not %s",
                               npy_path || opts.mixing ? "-o and --mixing take"
                                                       : "--decoder takes",
                               r.input.text_file ? "--text-file" : r.input.image_file ? "--image-file"
                                                                  : "--audio-file");
    if (files && r.input.tokens_file)
        r.single = "contributions -o/--mixing";
    r.outs[0] = (cli_path){"-o", npy_path};
    r.outs[1] = (cli_path){"--mixing", opts.mixing};
    r.outs[2] = (cli_path){"--decoder", opts.s2s.decoder};
    r.outs[3] = (cli_path){"the records", "-"};
    rc = cli_model_run_prepare(&r, "contributions", 0);
    if (rc == 0)
        rc = cli_s2s_need_pair(&r, &opts.s2s, "--decoder");
    if (rc == 0 && r.pair && opts.mixing)
        rc = cli_fail("%s: --mixing is not yet written for an encoder-decoder model (the "
                      "records carry context_mixing)", r.model_dir);
    ag_error err = {0};
    if (rc == 0 && opts.flow_max &&
        ag_run_options_set(r.opt, "flow_max_tokens", opts.flow_max, &err) != AG_OK)
        rc = cli_fail_error(&err);
    if (rc == 0)
        rc = cli_lens_set(&contrib_lens, r.opt);
    cli_outputs tx = {0};
    contrib_run run = {0};
    if (rc == 0 && files && !r.seqs[0].skip)
        rc = contrib_outputs(&r, npy_path, &tx, &run);
    cli_sink sink = {0};
    cli_settings_in in = {.model_dir = r.model_dir, .run = &r, .method = opts.name,
                          .rollout = opts.compose};
    if (rc == 0)
        rc = cli_sink_open(&sink, &r.common, "contributions", r.model_dir, &in, !files);
    r.sink = &sink;
    if (rc == 0)
        rc = cli_model_run_texts(&r, "contributions", contrib_sequence, NULL, &run);
    rc = cli_sink_close(&sink, rc, &tx);
    return cli_model_run_finish(&r, rc);
}
