/* cmd_similarity.c — `attngeom similarity MODEL INPUT`: how alike every pair
 * of selected heads attends, as the Jensen–Shannon distance between their
 * attention rows averaged over the rows (ag_js_distance; Clark et al. 2019,
 * §6), then over the texts with equal weight per text. A text's distances
 * are the library's (ag_run_similarity: one forward pass, the selected
 * heads' attention of the text in hand); here are the K×K sums over the
 * texts, the records and -o. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char similarity_help[] =
    "usage: attngeom similarity MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F)\n"
    "                                [-o S.npy] [options]\n"
    "\n"
    "For every pair of selected heads (all heads of all layers by default), the\n"
    "Jensen-Shannon distance between their attention rows (square root of the JS\n"
    "divergence, natural log: each row's distance lies in [0, sqrt(ln 2) = 0.8326]),\n"
    "averaged over the rows of the text (Clark et al. 2019, section 6), then\n"
    "over the texts of --text-file or --tokens-file with equal weight per text.\n"
    "0: the two heads attend alike on every row; sqrt(ln 2): never to the same\n"
    "tokens. Records: one per pair a < b in the order of the selection (layer,\n"
    "then head): layer_a, head_a, layer_b, head_b, js_distance (docs/metrics.md,\n"
    "\"Head similarity\"). On a t5, bart or whisper folder with a target\n"
    "(--target, --target-tokens): pairs of heads of one stack only (encoder,\n"
    "decoder, cross), each record with its \"stack\".\n"
    "\n"
    "Here -o is not the records' destination: -o S.npy writes the [K, K] matrix\n"
    "(K selected heads, in the order of the selection; symmetric, zero diagonal)\n"
    "as <f8 .npy, and the records still go to standard output. On an\n"
    "encoder-decoder folder one matrix per stack: -o the encoder's heads',\n"
    "--decoder the decoder's self-attention heads', --cross its cross-attention\n"
    "heads' (heads of two stacks are not compared).\n";

/* --metrics and --expect, which the record commands take, mean nothing
 * here: there are no metric keys to choose (`--metrics all` would
 * otherwise select nothing, silently), and no metric records to compare. */
static const cli_option similarity_own[] = {
    {"-o", "S.npy", "also write the [K, K] distance matrix"},
    {"--output", "S.npy", "the same as -o"},
    {"--decoder", "DEC.npy", "t5, bart, whisper: also write the decoder's self-attention heads' [K_dec, K_dec] (-o gets the encoder's)"},
    {"--cross", "CROSS.npy", "t5, bart, whisper: also write the cross-attention heads' [K_cross, K_cross]"},
    {"--normalizer", "N", "compare the heads under sparsemax, entmax15, entmax:ALPHA or linear (the pass unchanged)"},
    {"--temperature", "T", "compare softmax(S/T) of the scores, T > 0 (default 1: the model's)"},
    {"--temperatures", "T1,T2,...", "one set of pairs per T, in the order given (not with -o)"},
    {NULL}};
static const cli_option similarity_refused[] = {
    {"--metrics", NULL, "takes no --metrics: it computes js_distance only"},
    {"--expect", NULL, "takes no --expect: its records are pairs of heads"},
    {NULL}};
static const cli_option_group *const similarity_groups[] = {
    CLI_OWN("similarity", similarity_own),
    CLI_REFUSE("similarity-refused", similarity_refused), &cli_group_input, &cli_group_target,
    &cli_group_select,
    &cli_group_precision, &cli_group_output, &cli_group_table, &cli_group_label,
    &cli_group_corpus, &cli_group_media, &cli_group_jobs, &cli_group_help, NULL};
const cli_usage cli_usage_similarity = {"similarity", similarity_help, similarity_groups, NULL};

/* The sums over the texts so far. */
typedef struct {
    size_t K;
    double *sum;  /* (nt, K, K): the upper triangles' sums over texts */
    size_t texts; /* texts added */
    size_t nt;    /* blocks: one per --temperatures T, else 1 */
} similarity_sums;

static int similarity_run(const cli_model_run *r, const ag_run_options *opt,
                          const ag_run_input *in, void *user, ag_error *err)
{
    return ag_run_similarity(r->model, in, opt, r->workers.workers, user, err);
}

/* One text: its distance between every pair into out->data
 * (ag_run_similarity), added to the sums at its turn (similarity_turn), in
 * input order. */
static int similarity_text(cli_model_run *r, const cli_seq *s, cli_text_out *out, void *user)
{
    const similarity_sums *acc = user;
    size_t K = acc->K, nn = acc->nt * K * K;
    double *d = out->data = calloc(nn + 1, sizeof *d);
    out->data_size = (nn + 1) * sizeof *d;
    if (!d)
        return cli_fail("%s: out of memory for the attention of %zu heads on %zu tokens",
                        r->model_dir, K, s->n);
    ag_error err = {0};
    int status = cli_run_text(r, s, similarity_run, d, &err);
    return status == AG_OK ? 0 : cli_model_run_fail(r, s, &err);
}

static int similarity_turn(cli_model_run *r, const cli_seq *s, cli_text_out *out, void *user)
{
    (void)r, (void)s;
    similarity_sums *acc = user;
    const double *d = out->data;
    for (size_t a = 0; a < acc->nt * acc->K; a++) /* block t's row a % K */
        for (size_t b = a % acc->K + 1; b < acc->K; b++)
            acc->sum[a * acc->K + b] += d[a * acc->K + b];
    acc->texts++;
    return 0;
}

/* "stack" leads the keys of an encoder–decoder model's pairs. */
static const char *const pair_keys[] = {"stack", "layer_a", "head_a", "layer_b", "head_b",
                                        "js_distance"};

/* The rows of one (K, K) block S, one per pair a < b of one stack (heads:
 * (K, 3) stack, layer, head; a pair across stacks is not compared); with
 * `stacks`, each row's stack first. */
static int pair_rows(ag_table *t, const int *heads, size_t K, const double *S, int stacks,
                     ag_error *err)
{
    for (size_t a = 0; a < K; a++)
        for (size_t b = a + 1; b < K && heads[3 * b] == heads[3 * a]; b++) {
            ag_cell *row = ag_table_add_row(t, err);
            if (!row)
                return err->status ? err->status : AG_ENOMEM;
            int status = stacks ? ag_table_set_text(t, row++, ag_stack_name(heads[3 * a]), err)
                                : AG_OK;
            if (status != AG_OK)
                return status;
            double v[4] = {heads[3 * a + 1], heads[3 * a + 2], heads[3 * b + 1], heads[3 * b + 2]};
            for (int k = 0; k < 4; k++)
                row[k] = (ag_cell){.kind = AG_CELL_INTEGER, .value = v[k]};
            row[4] = (ag_cell){.kind = AG_CELL_NUMBER, .value = S[a * K + b]};
        }
    return AG_OK;
}

/* The records, one per pair a < b, as a table for the one writer; with
 * "model" as every command's; with --temperatures, S's nt blocks one
 * after the other, each row with its T. 0, or 1 after printing. */
static int pairs_table(const cli_common *c, const cli_lens *l, const int *pairs, size_t K,
                       const double *S, ag_table *t)
{
    ag_error err = {0};
    int stacks = K > 0 && pairs[0] != AG_STACK_NONE;
    int status = ag_table_init(t, pair_keys + !stacks, 5 + stacks, &err);
    size_t nt = l->ntemps ? l->ntemps : 1;
    for (size_t k = 0; status == AG_OK && k < nt; k++)
        status = pair_rows(t, pairs, K, S + k * K * K, stacks, &err);
    if (status == AG_OK && cli_model(c))
        status = ag_table_add_text_column(t, "model", cli_model(c), &err);
    if (status == AG_OK)
        status = cli_lens_columns(c, t, &err);
    for (size_t r = 0; status == AG_OK && l->ntemps && r < t->nrow; r++)
        cli_lens_row_temperature(t, r, l->temps[r / (t->nrow / nt)]);
    if (status != AG_OK)
        ag_table_free(t);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

/* The mean over texts (equal weight per text) into both triangles; the
 * diagonal stays 0. */
static void average(double *S, size_t K, size_t texts)
{
    for (size_t a = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++)
            S[b * K + a] = S[a * K + b] /= (double)texts;
}

/* The average of each of the nt blocks. */
static void average_blocks(double *S, size_t K, size_t nt, size_t texts)
{
    for (size_t k = 0; k < nt; k++)
        average(S + k * K * K, K, texts);
}

static cli_s2s_paths similarity_s2s; /* -o, --decoder, --cross */

/* The [k, k] block of S (K x K) over heads first .. first + k - 1, staged
 * as path's array (M holds it until the commit). 0, or 1 after printing. */
static int stage_block(cli_outputs *tx, const char *path, const double *S, size_t K,
                       size_t first, size_t k, ag_array *M)
{
    size_t shape[2] = {k, k};
    ag_error err = {0};
    if (ag_array_alloc(M, 2, shape, &err) != AG_OK)
        return cli_fail("%s: %s", path, err.message);
    for (size_t a = 0; a < k; a++)
        memcpy(M->data + a * k, S + (first + a) * K + first, k * sizeof *S);
    return cli_outputs_add_npy(tx, path, M);
}

/* The matrices of -o (and --decoder, --cross): the whole [K, K] on a
 * model of one stack; on an encoder–decoder model each stack's block
 * (its heads are contiguous in the selection: heads (K, 3) stack, layer,
 * head), pairs across stacks being not compared. M: (4) the arrays, held
 * until the commit. 0, or 1 after printing. */
static int stage_matrices(cli_outputs *tx, const int *heads, size_t K, const double *S,
                          ag_array M[4])
{
    const char *path[4] = {NULL, similarity_s2s.out, similarity_s2s.decoder,
                           similarity_s2s.cross};
    if (K == 0 || heads[0] == AG_STACK_NONE)
        return path[1] ? stage_block(tx, path[1], S, K, 0, K, &M[0]) : 0;
    int rc = 0;
    for (size_t first = 0, end; rc == 0 && first < K; first = end) {
        int stack = heads[3 * first];
        for (end = first + 1; end < K && heads[3 * end] == stack; end++)
            ;
        if (stack > 0 && stack < 4 && path[stack])
            rc = stage_block(tx, path[stack], S, K, first, end - first, &M[stack]);
    }
    return rc;
}

/* The records to standard output (r->common.out_path is NULL: -o is the
 * matrix) and, with -o, the matrices: all or none. */
static int similarity_outputs(const cli_model_run *r, const cli_lens *l, const int *pairs,
                              size_t K, const double *S)
{
    cli_outputs tx = {0};
    ag_array M[4] = {{0}};
    ag_table t = {0};
    char *settings = NULL;
    cli_settings_in in = {.model_dir = r->model_dir, .run = r, .metric = "js_distance"};
    int rc = stage_matrices(&tx, pairs, K, S, M);
    if (rc == 0)
        rc = cli_settings_text(&r->common, &in, &settings);
    if (rc == 0)
        rc = pairs_table(&r->common, l, pairs, K, S, &t);
    if (rc == 0) {
        ag_output_meta meta = {.size = sizeof(ag_output_meta), .command = "similarity",
                               .source = r->model_dir, .settings = settings};
        rc = cli_emit_table(&r->common, &t, &meta, &tx);
        ag_table_free(&t);
    } else {
        cli_outputs_abort(&tx);
    }
    free(settings);
    for (int k = 0; k < 4; k++)
        ag_array_free(&M[k]);
    return rc;
}

/* The K heads compared, (stack, layer, head) each. 0, or 1 after printing. */
static int similarity_heads(const cli_model_run *r, int **pairs, size_t *K)
{
    ag_error err = {0};
    int status = ag_run_similarity_stack_heads(r->model, r->opt, pairs, K, &err);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

static cli_lens similarity_lens;

static int similarity_option(cli_model_run *r, int argc, char **argv, int *i)
{
    int used = cli_s2s_option(&similarity_s2s, "similarity", argc, argv, i);
    if (!used)
        used = cli_target_option(&r->input, "similarity", argc, argv, i);
    return used ? used : cli_lens_option(&similarity_lens, "similarity", 0, argc, argv, i);
}

int cmd_similarity(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, 0))
        return 1;
    similarity_lens = (cli_lens){0};
    similarity_s2s = (cli_s2s_paths){0};
    int rc = cli_model_run_parse(&r, &cli_usage_similarity, argc, argv, similarity_option);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (cli_lens_parsed(&similarity_lens, "similarity", &r.common))
        return EXIT_USAGE;
    /* -o (and --decoder, --cross) are distance matrices */
    const char *opt, *any = cli_s2s_arrays(&r, &similarity_s2s, &opt);
    if (cli_lens_one_array(&similarity_lens, "similarity", opt, any))
        return EXIT_USAGE;
    rc = cli_model_run_prepare(&r, "similarity", 0);
    if (rc == 0)
        rc = cli_lens_set(&similarity_lens, r.opt);
    if (rc == 0)
        rc = cli_s2s_need_pair(&r, &similarity_s2s, "--decoder and --cross");
    size_t K = 0;
    int *pairs = NULL;
    double *S = NULL;
    if (rc == 0)
        rc = similarity_heads(&r, &pairs, &K);
    size_t nt = similarity_lens.ntemps ? similarity_lens.ntemps : 1;
    if (rc == 0 && !(S = calloc(nt * K * K + 1, sizeof *S)))
        rc = cli_fail("out of memory for %zu heads", K);
    similarity_sums acc = {K, S, 0, nt};
    if (rc == 0)
        rc = cli_model_run_texts(&r, "similarity", similarity_text, similarity_turn, &acc);
    if (rc == 0 && acc.texts == 0)
        rc = cli_fail("%s: every text was skipped (--skip-long): no distance to average",
                      r.model_dir);
    if (rc == 0) {
        average_blocks(S, K, nt, acc.texts);
        rc = similarity_outputs(&r, &similarity_lens, pairs, K, S);
    }
    free(S);
    ag_free(pairs);
    return cli_model_run_finish(&r, rc);
}
