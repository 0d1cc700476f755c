/* cmd_layer.c — `attngeom layer`: one attention layer of any architecture,
 * from an input X (.npy) and Q/K(/V/O) tensors named in a safetensors file
 * (docs/cli.md, "Analysing a model attngeom does not know"). This is how a model the engine does not know is
 * analysed: dump X, name the tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char layer_help[] =
    "usage: attngeom layer --x X.npy --weights F.safetensors (--qkv NAME | --q NAME --k NAME [--v NAME])\n"
    "                      --heads H [options]\n"
    "\n"
    "Attention probabilities softmax(c (XW_Q + b_Q)(XW_K + b_K)^T + mask) of one\n"
    "layer, head by head, and their metrics (one record per head); optionally with\n"
    "RoPE on Q and K, soft-capped scores and a sliding window.\n";

static const cli_option layer_own[] = {
    {"--x", "X.npy", "layer input [n, d]; [1, d] is one token, [1, n, d] a batch of one (leading 1s are dropped down to rank 2)"},
    {"--heads", "H", "the number of heads"},
    {"--scale", "C", "score scale (default 1/sqrt(d_a/H))"},
    {"--causal", NULL, "mask keys after the query"},
    {"--window", "W", "sliding window: query i sees keys i-W+1..i (implies --causal)"},
    {"--softcap", "C", "soft-capping of the scores: C*tanh(s/C) (Gemma-2), C > 0"},
    {"--rotary-dim", "R", "RoPE on the first R dims of every Q and K head (even, at most the head dim; default the head dim when --rope-theta is given), positions 0..n-1, rotate-half pairs (j, j + R/2)"},
    {"--rope-theta", "T", "RoPE base, T > 0 (default 10000 when --rotary-dim is given)"},
    {"--save-attention", "A.npy", "also write the probabilities [H, n, n]"},
    {NULL}};
static const cli_option_group *const layer_groups[] = {
    CLI_OWN("layer", layer_own), &cli_group_tensors, &cli_group_precision,
    &cli_group_records, &cli_group_stability, &cli_group_curvature, &cli_group_output,
    &cli_group_table, &cli_group_label, &cli_group_jobs, &cli_group_help, NULL};
const cli_usage cli_usage_layer = {"layer", layer_help, layer_groups, NULL};

/* ---- the attention kernel's options ------------------------------------ */

/* A positive integer option value (at most 2^20), or -1. */
static int positive_int(const char *v)
{
    char *end;
    long x = strtol(v, &end, 10);
    return end == v || *end || x <= 0 || x > 1 << 20 ? -1 : (int)x;
}

/* --window, --softcap, --rotary-dim, --rope-theta into k: 1 consumed, 0
 * not one of them, -1 usage error printed. --window implies --causal: a
 * sliding window is a band of the causal mask (HF's sliding_window_overlay). */
static int kernel_option(ag_run_layer_spec *k, cli_tensor_opts *o, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--window", "--softcap", "--rotary-dim", "--rope-theta"};
    int which = -1;
    for (int j = 0; j < 4; j++)
        if (cli_is_option(argv[*i], names[j]))
            which = j;
    if (which < 0)
        return 0;
    const char *v = cli_option_value("layer", names[which], argc, argv, i);
    if (!v)
        return -1;
    double x = 0;
    int bad = 0;
    if (which == 0) {
        bad = (k->window = positive_int(v)) < 0;
        o->causal = 1;
    } else if (which == 2) {
        k->rotary_dim = positive_int(v);
        bad = k->rotary_dim < 0 || k->rotary_dim % 2;
    } else {
        bad = cli_parse_double(v, &x) != 0 || x == 0;
        *(which == 1 ? &k->softcap : &k->rope_theta) = x;
    }
    if (bad)
        cli_usage_error("layer", "%s takes %s, not '%s'", names[which],
                        which == 0 ? "a positive number of tokens"
                        : which == 2 ? "a positive even number of dims" : "a number > 0", v);
    return bad ? -1 : 1;
}

/* The records of every head, in parallel (ag_run_layer_records). */
static int layer_records(const ag_run_layer_spec *spec, const cli_tensors *t,
                         const ag_array *attn, const cli_common *c, ag_record_list **recs)
{
    cli_workers w;
    if (cli_workers_new(c, &w) != 0)
        return 1;
    ag_run_options *opt = NULL;
    if (cli_run_options(c, spec->precision, &opt) != 0) {
        cli_workers_free(&w);
        return 1;
    }
    ag_error err = {0};
    int status = AG_OK;
    if (!(*recs = ag_record_list_new()))
        status = ag_error_set(&err, AG_ENOMEM, "out of memory for records");
    if (status == AG_OK)
        status = ag_run_layer_records(spec, t, attn, opt, w.workers, *recs, &err);
    ag_run_options_free(opt);
    cli_workers_free(&w);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

int cmd_layer(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_HEADS))
        return 1;
    common.jobs_allowed = 1;
    cli_tensor_opts o = {0};
    cli_input prec = {0};
    ag_run_layer_spec spec = AG_RUN_LAYER_SPEC_DEFAULT; /* the kernel options, then o's */
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_layer, argv[i]))
            return EXIT_USAGE;
        int used = cli_tensor_option(&o, "layer", argc, argv, &i);
        if (used == 0)
            used = kernel_option(&spec, &o, argc, argv, &i);
        if (used == 0)
            used = cli_common_option(&common, "layer", argc, argv, &i);
        if (used == 0 && cli_is_option(argv[i], "--precision"))
            used = cli_input_option(&prec, "layer", 0, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_layer);
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_unparsed(&cli_usage_layer, argv[i]);
        return cli_usage_error("layer", "unknown argument '%s'", argv[i]);
    }
    int rc = cli_tensor_check_usage(&o, "layer", 1);
    if (rc)
        return rc;
    cli_set_model_name(&common, o.weights ? o.weights : o.x);
    cli_path outs[] = {{common.out_path ? "-o" : "the records", common.out_path ? common.out_path : "-"},
                       {"--save-attention", o.save}},
             ins[] = {{"--x", o.x}, {"--weights", o.weights}, {"--expect", common.expect_path}};
    if (cli_paths_check(outs, 2, ins, 3))
        return 1;
    cli_tensors t = {0};
    ag_array attn = {0};
    ag_record_list *recs = NULL;
    rc = cli_tensors_load(&o, &t, 1);
    cli_tensor_spec(&o, 1, &spec);
    spec.precision = prec.precision;
    ag_error err = {0};
    size_t da = t.q.shape[1];
    ag_rope rope;
    if (rc == 0 && da % (size_t)o.heads == 0 && /* else the layer says so */
        ag_run_layer_rope(&spec, da / (size_t)o.heads, &rope, &err) != AG_OK)
        rc = cli_usage_error("layer", "%s", err.message);
    if (rc == 0 && ag_run_layer_attention(&spec, &t, &attn, &err) != AG_OK)
        rc = cli_fail_error(&err);
    if (rc == 0)
        rc = layer_records(&spec, &t, &attn, &common, &recs);
    /* --save-attention is staged, and committed with the records: a later
     * failure (an unwritable -o, a malformed --expect) leaves it untouched */
    cli_outputs tx = {0};
    if (rc == 0 && o.save)
        rc = cli_outputs_add_npy(&tx, o.save, &attn);
    if (rc == 0) {
        const char *files[] = {o.x, o.weights};
        cli_settings_in in = {.files = files, .nfiles = 2,
                              .precision = prec.precision == AG_PRECISION_F64 ? "f64" : "f32"};
        rc = cli_emit_settings(&common, recs, "layer", o.weights, &in, &tx);
    } else {
        cli_outputs_abort(&tx);
    }
    ag_record_list_free(recs);
    ag_array_free(&attn);
    cli_tensors_free(&t);
    return rc;
}
