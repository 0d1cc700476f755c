/* cmd_heads.c — `attngeom heads MODEL --probe induction --length T`: what
 * each head does on a probe made for it, not on a text of the user's:
 * Olsson et al. (2022)'s induction probe (attngeom/run.h,
 * ag_run_probe_tokens and ag_run_probe_induction; docs/metrics.md, "The
 * induction probe"), one record per selected (layer, head). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char heads_help[] =
    "usage: attngeom heads MODEL --probe induction --length T [--repeats R] [--seed S]\n"
    "                            [options]\n"
    "\n"
    "Run the model once on a probe and print, for every selected (layer, head),\n"
    "what the head does on it. --probe induction (Olsson et al. 2022): a block of\n"
    "T tokens drawn uniformly with replacement from the model's vocabulary, its\n"
    "special tokens left out (GSL's MT19937 seeded with S), repeated R times and\n"
    "framed as the tokenizer frames a text (a BOS or CLS before, an EOS or SEP\n"
    "after, when its post-processor adds them). induction_score is the mean over\n"
    "the rows i of blocks 2..R of A[i, i-T+1], the attention on the token right\n"
    "after the previous copy of token i; induction_baseline is its value for\n"
    "attention uniform over the allowed keys. The records carry length, repeats\n"
    "and seed; JSON and JSONL carry the drawn ids (settings.probe.ids) and where\n"
    "the first block starts (settings.probe.start). docs/metrics.md, \"The\n"
    "induction probe\".\n"
    "A t5 or bart folder reads the probe as its source and, after its\n"
    "decoder_start_token_id, as its target: records of the encoder's and the\n"
    "decoder's self-attention heads, and of the cross heads with null scores\n"
    "(\"stack\" first; --layers and --heads select in each stack).\n";

/* The parser's and the help's one list (options.c): the probe's own, the
 * shared groups it takes. */
static const cli_option heads_own[] = {
    {"--probe", "NAME", "the probe: induction (the only one)"},
    {"--length", "T", "tokens of the block, 1 or more"},
    {"--repeats", "R", "copies of the block, 2 or more (default 2)"},
    {"--seed", "S", "the draw's seed, a non-negative integer (default 1)"},
    {NULL}};
/* the probe's keys are its scores: no selection of metrics, no aggregate of one run */
static const cli_option heads_refused[] = {
    {"--metrics", NULL, "heads computes induction_score and induction_baseline; --metrics does not apply"},
    {"--aggregate", NULL, "--aggregate: aggregate the records of several seeds with attngeom aggregate --unit seed"},
    {NULL}};
static const cli_option_group *const heads_groups[] = {
    CLI_OWN("heads", heads_own), CLI_REFUSE("heads-refused", heads_refused),
    &cli_group_select, &cli_group_precision, &cli_group_records, &cli_group_table,
    &cli_group_label, &cli_group_jobs, &cli_group_output, &cli_group_help, NULL};
const cli_usage cli_usage_heads = {"heads", heads_help, heads_groups, NULL};

typedef struct {
    cli_model_run r;     /* MODEL, --layers, --heads, --precision, the common options */
    const char *probe;
    size_t length;       /* 0: not given */
    long repeats;
} heads_args;

/* A whole number in [lo, hi] for option `name`, or a usage error. */
static int count_value(const char *name, const char *v, long lo, long hi, long *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi)
        return v ? cli_usage_error("heads", "%s takes a whole number from %ld to %ld, not '%s'",
                                   name, lo, hi, v)
                 : EXIT_USAGE;
    *out = x;
    return 0;
}

/* The probe's own options (--probe, --length, --repeats): 1 consumed, 0
 * not one of them, -1 usage error printed. */
static int probe_option(heads_args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (cli_is_option(arg, "--probe")) {
        a->probe = cli_option_value("heads", "--probe", argc, argv, i);
        if (a->probe && strcmp(a->probe, "induction") != 0) {
            cli_usage_error("heads", "--probe takes induction, not '%s'", a->probe);
            return -1;
        }
        return a->probe ? 1 : -1;
    }
    long x;
    if (cli_is_option(arg, "--length")) {
        if (count_value("--length", cli_option_value("heads", "--length", argc, argv, i), 1,
                        INT_MAX, &x))
            return -1;
        a->length = (size_t)x;
        return 1;
    }
    if (cli_is_option(arg, "--repeats"))
        return count_value("--repeats", cli_option_value("heads", "--repeats", argc, argv, i), 2,
                           INT_MAX, &a->repeats) ? -1 : 1;
    return 0;
}

/* argv into a: 0, an exit status, or -1 after printing --help. */
static int heads_parse(heads_args *a, int argc, char **argv)
{
    a->repeats = 2;
    a->r.common.jobs_allowed = 1;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-' || !argv[i][1]) {
            if (a->r.model_dir)
                return cli_usage_error("heads", "one MODEL only ('%s' and '%s')",
                                       a->r.model_dir, argv[i]);
            a->r.model_dir = argv[i];
            continue;
        }
        if (cli_usage_check(&cli_usage_heads, argv[i]))
            return EXIT_USAGE;
        if (cli_is_option(argv[i], "--help")) {
            cli_usage_help(&cli_usage_heads);
            return -1;
        }
        int used = probe_option(a, argc, argv, &i);
        if (used == 0)
            used = cli_input_option(&a->r.input, "heads", 1, argc, argv, &i);
        if (used == 0)
            used = cli_common_option(&a->r.common, "heads", argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used == 0)
            return cli_usage_unparsed(&cli_usage_heads, argv[i]);
    }
    if (!a->r.model_dir)
        return cli_usage_error("heads", "missing MODEL (a Hugging Face model folder)");
    if (!a->probe)
        return cli_usage_error("heads", "missing --probe induction");
    if (!a->length)
        return cli_usage_error("heads", "missing --length T (the tokens of the block)");
    cli_set_model_name(&a->r.common, a->r.model_dir);
    return 0;
}

/* The model, its tokenizer, the selections and the run's options. */
static int heads_prepare(heads_args *a, ag_tokenizer **tok)
{
    cli_model_run *r = &a->r;
    cli_path outs[] = {{"-o", r->common.out_path}},
             ins[] = {{"MODEL", r->model_dir}, {"--expect", r->common.expect_path}};
    if (cli_paths_check(outs, 1, ins, 2))
        return 1;
    ag_error err = {0};
    /* an encoder-decoder folder: both stacks, the encoder the run's model */
    int pair = ag_model_dir_is_seq2seq(r->model_dir);
    if (pair ? ag_seq2seq_load(r->model_dir, &r->pair, &err) != AG_OK
             : ag_model_load_tower(r->model_dir, cli_input_kind(&r->input), &r->model,
                                   &err) != AG_OK)
        return cli_fail_error(&err);
    if (pair)
        r->model = (ag_model *)ag_seq2seq_stack(r->pair, AG_STACK_ENCODER);
    const ag_model_config *g = ag_model_get_config(r->model);
    r->nlayer_sel = g->n_layer;
    int rc = cli_selection("heads", r->input.layers, g->n_layer, "layers", r->model_dir,
                           &r->layers);
    if (rc == 0)
        rc = cli_selection("heads", r->input.heads, g->n_head, "heads", r->model_dir, &r->heads);
    /* an image or audio model has none: ag_run_probe_tokens says what it takes */
    if (rc == 0 && ag_model_input_kind(r->model) == AG_INPUT_TOKENS &&
        ag_tokenizer_load(r->model_dir, tok, &err) != AG_OK)
        rc = cli_fail_error(&err);
    if (rc == 0)
        rc = cli_workers_new(&r->common, &r->workers);
    if (rc == 0)
        rc = cli_model_run_options(r, &r->opt);
    return rc;
}

/* settings (a JSON object's text, or NULL) with "probe": the name, sizes,
 * where the first block starts and every id, so that a run can be redone
 * from its output. 0, or 1 after printing. */
static int probe_settings(const heads_args *a, const int32_t *ids, size_t n, size_t start,
                          char **settings)
{
    if (!*settings)
        return 0;
    json_t *o = json_loads(*settings, 0, NULL), *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        json_array_append_new(list, json_integer(ids[i]));
    json_t *p = json_pack("{s:s, s:I, s:I, s:I, s:o}", "name", a->probe, "length",
                          (json_int_t)a->length, "repeats", (json_int_t)a->repeats, "start",
                          (json_int_t)start, "ids", list);
    int ok = o && p && json_object_set_new(o, "probe", p) == 0;
    char *text = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
                    : NULL;
    json_decref(o);
    if (!text)
        return cli_fail("out of memory");
    free(*settings);
    *settings = text;
    return 0;
}

/* The records as a table: layer, head, rows, cols, the two scores, then
 * length, repeats, seed and model. 0, or 1 after printing. */
static int heads_table(const heads_args *a, const ag_record_list *recs, ag_table *t)
{
    ag_error err = {0};
    const cli_common *c = &a->r.common;
    const char *keys[] = {"length", "repeats", "seed"};
    double values[] = {(double)a->length, (double)a->repeats, (double)c->seed};
    int status = ag_records_table(recs, c->metrics, t, &err);
    for (size_t k = 0; status == AG_OK && k < 3; k++)
        status = ag_table_add_column(t, keys[k],
                                     (ag_cell){.kind = AG_CELL_INTEGER, .value = values[k]},
                                     &err);
    if (status == AG_OK && cli_model(c))
        status = ag_table_add_text_column(t, "model", cli_model(c), &err);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

/* Draw, run, print. */
static int heads_run(heads_args *a, const ag_tokenizer *tok)
{
    cli_model_run *r = &a->r;
    cli_common *c = &r->common;
    ag_error err = {0};
    int32_t *ids = NULL;
    size_t n = 0, start = 0;
    ag_record_list *recs = NULL;
    ag_table t = {0};
    char *settings = NULL;
    int rc = ag_run_probe_tokens(r->model, tok, a->length, (int)a->repeats, c->seed, &ids, &n,
                                 &start, &err) == AG_OK ? 0 : cli_fail_error(&err);
    if (rc == 0 && ag_run_probe_induction(r->model, ids, n, start, a->length, (int)a->repeats,
                                          r->opt, r->workers.workers, &recs, &err) != AG_OK)
        rc = cli_fail_error(&err);
    cli_settings_in in = {.model_dir = r->model_dir,
                          .precision = r->input.precision == AG_PRECISION_F64 ? "f64" : "f32"};
    if (rc == 0)
        rc = cli_settings_text(c, &in, &settings);
    if (rc == 0)
        rc = probe_settings(a, ids, n, start, &settings);
    if (rc == 0)
        rc = heads_table(a, recs, &t);
    /* as every record command: a golden file that cannot be read writes
     * nothing, a mismatch (3) still writes the records */
    int expect_rc = rc == 0 && c->expect_path ? cli_expect_table(c, &t) : 0;
    if (rc == 0 && expect_rc != 1) {
        ag_output_meta meta = {.size = sizeof meta, .command = "heads", .source = r->model_dir,
                               .settings = settings};
        rc = cli_emit_table(c, &t, &meta, NULL);
    }
    rc = rc ? rc : expect_rc;
    ag_table_free(&t);
    free(settings);
    ag_record_list_free(recs);
    free(ids);
    return rc;
}

int cmd_heads(int argc, char **argv)
{
    heads_args a = {0};
    if (cli_common_init(&a.r.common, AG_FAMILIES_ANALYZE))
        return 1;
    ag_error err = {0};
    /* the keys the probe computes: its records' columns and settings' "metrics" */
    if (ag_metric_set_parse(a.r.common.metrics, "induction_score,induction_baseline", &err) !=
        AG_OK)
        return cli_fail_error(&err);
    int rc = heads_parse(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    ag_tokenizer *tok = NULL;
    rc = heads_prepare(&a, &tok);
    if (rc == 0)
        rc = heads_run(&a, tok);
    ag_tokenizer_free(tok);
    cli_model_run_free(&a.r);
    return rc;
}
