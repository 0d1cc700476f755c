/* cmd_weights.c — `attngeom weights`: family D (docs/metrics.md, family D) of every head,
 * from a model folder or from tensors named in a safetensors file. Needs no
 * input text: M_QK and M_OV are properties of the weights alone. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char weights_help[] =
    "usage: attngeom weights MODEL [--layers LIST] [--heads LIST] [options]\n"
    "       attngeom weights --weights F.safetensors (--qkv NAME | --q NAME --k NAME [--v NAME])\n"
    "                        [--o NAME] --heads H [--linear] [options]\n"
    "\n"
    "Weight-space geometry of every head (no input needed): family A of\n"
    "M_QK = W_Q W_K^T (qk_*), its symmetry score, family A of M_OV = W_V W_O\n"
    "(ov_*) and the OV copying score, computed in factored form (never a d x d\n"
    "product). With grouped-query attention query head h uses key/value head\n"
    "h / (H / H_kv). Records carry rows = cols = d. An encoder-decoder folder\n"
    "(t5, bart; whisper with its decoder) gives the encoder's self-attention,\n"
    "then per decoder layer its self-attention and its cross-attention (W_Q of\n"
    "the decoder, W_K and W_V of the encoder's output), each record with its\n"
    "stack; --layers and --heads select in each stack.\n";

/* layer's options that weights refuses by name (a weight has no input) */
static const char layer_only[] = "--x, --save-attention, --causal and --scale belong to attngeom layer";
static const cli_option weights_own[] = {
    {"--layers", "LIST", "layers of a MODEL to report, e.g. 0,2-3 (default all)"},
    {"--heads", "LIST|H", "heads of a MODEL to report (default all); with --weights, the number of heads"},
    {NULL}};
static const cli_option weights_refused[] = {
    {"--x", NULL, layer_only}, {"--save-attention", NULL, layer_only},
    {"--causal", NULL, layer_only}, {"--scale", NULL, layer_only}, {NULL}};
static const cli_option_group *const weights_groups[] = {
    CLI_OWN("weights", weights_own),
    CLI_REFUSE("weights-refused", weights_refused), &cli_group_tensors, &cli_group_records,
    &cli_group_output, &cli_group_table, &cli_group_label, &cli_group_aggregate, &cli_group_jobs,
    &cli_group_help, NULL};
const cli_usage cli_usage_weights = {"weights", weights_help, weights_groups, NULL};

/* Family D of the selected heads of the selected layers (ag_run_weights,
 * with opt's layers and heads) or of every head of `tensors`, into *recs.
 * 0, or 1 after printing the error, after `src`. */
static int weights_records(const ag_model *m, const ag_attn_weights *tensors,
                           const ag_selection *layers, const ag_selection *heads,
                           const cli_common *c, const char *src, ag_record_list **recs)
{
    ag_run_options *opt = NULL;
    cli_workers w = {0};
    ag_error err = {0};
    int rc = cli_run_options(c, AG_PRECISION_F32, &opt);
    if (rc == 0 && m && ((layers && ag_run_options_set_selection(opt, "layers", layers, &err)) ||
                         (heads && ag_run_options_set_selection(opt, "heads", heads, &err))))
        rc = cli_fail_error(&err);
    if (rc == 0)
        rc = cli_workers_new(c, &w);
    ag_record_list *list = NULL;
    if (rc == 0 && ag_run_weights(m, tensors, opt, w.workers, &list, &err) != AG_OK)
        rc = cli_fail("%s: %s", src, err.message);
    if (rc == 0) {
        ag_record_list_free(*recs);
        *recs = list;
    }
    cli_workers_free(&w);
    ag_run_options_free(opt);
    return rc;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

static int model_weights(const char *dir, const char *layers, const char *heads,
                         const cli_common *c, ag_record_list **recs)
{
    ag_model *m = NULL;
    ag_seq2seq *pair = NULL; /* an encoder-decoder folder: both stacks, m its encoder */
    ag_error err = {0};
    if (ag_model_dir_has_decoder(dir) ? ag_seq2seq_load(dir, &pair, &err) != AG_OK
                                      : ag_model_load(dir, &m, &err) != AG_OK)
        return cli_fail_error(&err);
    if (pair)
        m = (ag_model *)ag_seq2seq_stack(pair, AG_STACK_ENCODER);
    /* a pair: an index must exist in each stack, which the run checks
     * (the decoder may have more layers or heads than the encoder) */
    const ag_model_config *g = ag_model_get_config(m), *dec = g;
    if (pair)
        dec = ag_model_get_config(ag_seq2seq_stack(pair, AG_STACK_DECODER));
    ag_selection *layer = NULL, *head = NULL;
    int rc = 0;
    if (layers)
        rc = cli_selection("weights", layers, max_int(g->n_layer, dec->n_layer), "layers", dir,
                           &layer);
    if (rc == 0 && heads)
        rc = cli_selection("weights", heads, max_int(g->n_head, dec->n_head), "heads", dir, &head);
    if (rc == 0)
        rc = weights_records(m, NULL, layer, head, c, dir, recs);
    ag_selection_free(layer);
    ag_selection_free(head);
    if (pair)
        ag_seq2seq_free(pair);
    else
        ag_model_free(m);
    return rc;
}

/* The named-tensor path: one layer, heads counted by --heads H. */
static int tensor_weights(const cli_tensor_opts *o, const cli_common *c, ag_record_list **recs)
{
    cli_tensors t = {0};
    int rc = cli_tensors_load(o, &t, 0);
    if (rc == 0) {
        size_t hd = t.q.shape[1] / (size_t)o->heads;
        ag_attn_weights w = {.n_head = o->heads, .n_kv_head = (int)(t.k.shape[1] / hd),
                             .head_dim = (int)hd, .wq = t.q, .wk = t.k, .wv = t.v, .wo = t.o};
        rc = weights_records(NULL, &w, NULL, NULL, c, o->weights, recs);
    }
    cli_tensors_free(&t);
    return rc;
}

/* After the usage checks, before anything is read. */
static int check_paths(const cli_common *c, const char *model, const cli_tensor_opts *o)
{
    cli_path outs[] = {{"-o", c->out_path}},
             ins[] = {{"MODEL", model}, {"--weights", o->weights}, {"--expect", c->expect_path}};
    return cli_paths_check(outs, 1, ins, 3);
}

int cmd_weights(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_WEIGHTS))
        return 1;
    common.agg.allowed = 1;
    common.jobs_allowed = 1;
    cli_tensor_opts o = {0};
    const char *model = NULL, *layers = NULL, *heads = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_weights, argv[i]))
            return EXIT_USAGE;
        int used = 0;
        if (cli_is_option(argv[i], "--layers") || cli_is_option(argv[i], "--heads")) {
            int is_layers = cli_is_option(argv[i], "--layers");
            const char *v = cli_option_value("weights", is_layers ? "--layers" : "--heads",
                                             argc, argv, &i);
            if (!v)
                return EXIT_USAGE;
            *(is_layers ? &layers : &heads) = v;
            continue;
        }
        used = cli_tensor_option(&o, "weights", argc, argv, &i);
        if (used == 0)
            used = cli_common_option(&common, "weights", argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_weights);
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_unparsed(&cli_usage_weights, argv[i]);
        if (model)
            return cli_usage_error("weights", "one MODEL only");
        model = argv[i];
    }
    if (cli_common_check(&common, "weights"))
        return EXIT_USAGE;
    if (model || o.weights)
        cli_set_model_name(&common, model ? model : o.weights);
    ag_record_list *recs = NULL;
    int rc;
    if (model) {
        if (o.weights)
            return cli_usage_error("weights", "give a MODEL folder or --weights, not both");
        rc = check_paths(&common, model, &o) ? 1 : model_weights(model, layers, heads, &common, &recs);
    } else {
        if (layers)
            return cli_usage_error("weights", "--layers selects layers of a MODEL folder");
        if (heads) { /* with --weights, --heads is the number of heads */
            char *end;
            long h = strtol(heads, &end, 10);
            if (end == heads || *end || h <= 0 || h > 1 << 20)
                return cli_usage_error("weights", "--heads takes a positive number of heads, not '%s'", heads);
            o.heads = (int)h;
        }
        if ((rc = cli_tensor_check_usage(&o, "weights", 0)) != 0)
            return rc;
        rc = check_paths(&common, model, &o) ? 1 : tensor_weights(&o, &common, &recs);
    }
    if (rc == 0) {
        const char *files[] = {o.weights};
        cli_settings_in in = {.model_dir = model, .files = files, .nfiles = 1};
        rc = cli_emit_settings(&common, recs, "weights",
                               model ? model : o.weights, &in, NULL);
    }
    ag_record_list_free(recs);
    return rc;
}
