/* model_run.c — what every command that runs a model folder shares (analyze,
 * attention, residual, rollout): parsing MODEL and the input options,
 * loading the model, the layer/head selections and the tokenized inputs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_model_run_free(cli_model_run *r)
{
    ag_model_free(r->model);
    cli_seqs_free(r->seqs, r->nseq);
    free(r->layer_on);
    free(r->head_on);
}

int cli_model_run_parse(cli_model_run *r, const char *cmd, const char *help, int argc,
                        char **argv, cli_extra_option extra, int allow_heads)
{
    for (int i = 1; i < argc; i++) {
        int used = extra ? extra(r, argc, argv, &i) : 0;
        if (used == 0)
            used = cli_common_option(&r->common, cmd, argc, argv, &i);
        if (used == 0)
            used = cli_input_option(&r->input, cmd, 1, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0) {
            fputs(help, stdout);
            return -1;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        if (r->model_dir)
            return cli_usage_error(cmd, "one MODEL only ('%s' and '%s')", r->model_dir, argv[i]);
        r->model_dir = argv[i];
    }
    if (!r->model_dir)
        return cli_usage_error(cmd, "missing MODEL (a Hugging Face model folder)");
    if (!allow_heads && r->input.heads)
        return cli_usage_error(cmd, "takes no --heads: its records are per layer (\"head\": -1)");
    return cli_common_check(&r->common, cmd);
}

int cli_model_run_prepare(cli_model_run *r, const char *cmd, int extra_layers)
{
    ag_error err = {0};
    cli_path def[] = {{"-o", r->common.out_path}},
             ins[] = {{"MODEL", r->model_dir}, {"--text-file", r->input.text_file},
                      {"--tokens-file", r->input.tokens_file}, {"--expect", r->common.expect_path}};
    int own = r->outs[0].option != NULL;
    if (cli_paths_check(own ? r->outs : def, own ? 2 : 1, ins, 4))
        return 1;
    if (ag_model_load(r->model_dir, &r->model, &err) != AG_OK)
        return cli_fail_error(&err);
    const ag_model_config *g = ag_model_get_config(r->model);
    r->nlayer_sel = g->n_layer + extra_layers;
    r->layer_on = malloc((size_t)r->nlayer_sel);
    r->head_on = malloc((size_t)g->n_head);
    if (!r->layer_on || !r->head_on)
        return cli_fail("out of memory");
    int rc = cli_selection(cmd, r->input.layers, r->nlayer_sel, "layers", r->model_dir,
                           r->layer_on);
    if (rc == 0)
        rc = cli_selection(cmd, r->input.heads, g->n_head, "heads", r->model_dir, r->head_on);
    if (rc == 0)
        rc = cli_input_sequences(&r->input, cmd, r->model_dir, &r->seqs, &r->nseq);
    if (rc == 0 && r->single && r->nseq != 1)
        rc = cli_fail("%s: %s takes one sequence, the file has %zu", r->input.tokens_file, r->single, r->nseq);
    return rc;
}

int cli_model_run_fail(const cli_model_run *r, const cli_seq *s, const ag_error *err)
{
    if (s->line >= 0 && r->input.tokens_file)
        return cli_fail("%s: %s: line %ld: %s", r->model_dir, r->input.tokens_file, s->line + 1, err->message);
    if (s->line >= 0)
        return cli_fail("%s: text line %ld: %s", r->model_dir, s->line + 1, err->message);
    return cli_fail("%s: %s", r->model_dir, err->message);
}
