/* cmd_matrix.c — `attngeom matrix FILE [--tensor NAME]`: families A–C (and F, L, M) of
 * every matrix in a .npy or .safetensors file (2-D [m,n]; 3-D [H,m,n] as heads;
 * 4-D [L,H,m,n] as layers × heads), square or rectangular (cross-attention:
 * then family M by default too). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char matrix_help[] =
    "usage: attngeom matrix FILE [--tensor NAME] [options]\n"
    "       attngeom matrix --scores S.npy [--normalizer N] [--temperature T] [options]\n"
    "\n"
    "Metrics of the matrices stored in FILE: a .npy array (<f2, <f4, <f8; C or\n"
    "Fortran order) or a .safetensors tensor (F16, BF16, F32, F64; --tensor NAME\n"
    "picks it when the file holds several). 2-D [m,n] is one matrix; 3-D [H,m,n]\n"
    "is read as heads; 4-D [L,H,m,n] as layers x heads. A rectangular matrix\n"
    "(m != n: cross-attention, m targets x n sources) gets family cross by\n"
    "default too, and null for the keys of square matrices (attngeom metrics).\n"
    "\n"
    "--scores reads pre-softmax scores instead (attention --scores; -inf a masked\n"
    "key) and measures each matrix after a normaliser on every row's allowed keys:\n"
    "softmax (the model's; --temperature T gives softmax(S/T)), sparsemax, entmax15\n"
    "or entmax:ALPHA (ALPHA in (1, 2]). The records carry \"normalizer\" and\n"
    "\"temperature\".\n";

static const cli_option matrix_own[] = {
    {"--tensor", "NAME", "the tensor of a .safetensors file that holds several"},
    {"--scores", "S.npy", "the file holds pre-softmax scores (-inf masked): normalise each row first"},
    {"--normalizer", "N", "with --scores: softmax (default), sparsemax, entmax15, entmax:ALPHA"},
    {"--temperature", "T", "with --scores and softmax: softmax(S/T), T > 0 (default 1)"},
    {"--temperatures", "T1,T2,...", "with --scores: one set of records per T, in the order given"},
    {"-h", NULL, "the same as --help"},
    {NULL}};
static const cli_option_group *const matrix_groups[] = {
    CLI_OWN("matrix", matrix_own), &cli_group_records, &cli_group_curvature,
    &cli_group_output, &cli_group_table, &cli_group_label, &cli_group_aggregate, &cli_group_jobs,
    &cli_group_help, NULL};
const cli_usage cli_usage_matrix = {"matrix", matrix_help, matrix_groups, NULL};

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Pick the tensor of a safetensors file: --tensor, or the only tensor. */
static int read_safetensors(const char *path, const char *tensor, ag_array *out)
{
    ag_safetensors *st = NULL;
    ag_error err = {0};
    if (ag_st_open(path, &st, &err) != AG_OK)
        return cli_fail("%s", err.message);
    const char *name = tensor;
    if (!name) {
        if (ag_st_count(st) != 1) {
            size_t n = ag_st_count(st);
            ag_st_close(st);
            return cli_fail("%s: holds %zu tensors; choose one with --tensor NAME "
                            "(attngeom info lists them)", path, n);
        }
        name = ag_st_info(st, 0)->name;
    }
    int status = ag_st_read(st, name, out, &err);
    ag_st_close(st);
    return status == AG_OK ? 0 : cli_fail("%s", err.message);
}

static int read_matrix_file(const char *path, const char *tensor, ag_array *out)
{
    ag_error err = {0};
    if (has_suffix(path, ".safetensors"))
        return read_safetensors(path, tensor, out);
    if (tensor)
        return cli_fail("%s: --tensor applies to .safetensors files only", path);
    if (ag_npy_read(path, out, &err) != AG_OK)
        return cli_fail("%s", err.message);
    return 0;
}

/* Every matrix's records (ag_run_matrix on the array's C-order strides)
 * into *out. 0, or 1 after printing the error, after the file. */
static int matrix_records(const char *path, const ag_array *a, const cli_common *c,
                          ag_record_list **out)
{
    ptrdiff_t strides[AG_MAX_DIMS];
    ptrdiff_t stride = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= (ptrdiff_t)a->shape[d];
    }
    ag_run_options *opt = NULL;
    cli_workers w = {0};
    ag_error err = {0};
    int rc = cli_run_options(c, AG_PRECISION_F32, &opt);
    if (rc == 0)
        rc = cli_workers_new(c, &w);
    if (rc == 0 && ag_run_matrix(a->data, a->ndim, a->shape, strides, opt, w.workers, out,
                                 &err) != AG_OK)
        rc = cli_fail("%s: %s", path, err.message);
    cli_workers_free(&w);
    ag_run_options_free(opt);
    return rc;
}

/* The scores in a, row by row over the last dimension, through the
 * normaliser: a then holds the probabilities. 0, or 1 after printing. */
static int normalize_scores(const char *path, ag_normalizer kind, double param, ag_array *a)
{
    if (a->ndim < 2) /* rectangular is fine: each row is normalised over its keys */
        return cli_fail("%s: --scores needs score matrices [..., m, n]", path);
    size_t n = a->shape[a->ndim - 1], rows = ag_array_size(a) / (n ? n : 1);
    double *p = malloc((rows * n > 0 ? rows * n : 1) * sizeof *p);
    ag_error err = {0};
    if (!p)
        return cli_fail("%s: out of memory for %zu rows", path, rows);
    if (ag_normalize_rows(kind, param, a->data, rows, n, p, &err) != AG_OK) {
        free(p);
        return cli_fail("%s: %s", path, err.message);
    }
    free(a->data);
    a->data = p;
    return 0;
}

/* --temperatures: the records of softmax(S/T) for each T in turn, each
 * stamped with its T, as one run per --temperature T would give them. 0,
 * or 1 after printing. */
static int temperature_records(const char *path, const ag_array *scores, const cli_lens *l,
                               const cli_common *c, ag_record_list **out)
{
    ag_error err = {0};
    int rc = (*out = ag_record_list_new()) ? 0 : cli_fail("out of memory for records");
    for (size_t k = 0; rc == 0 && k < l->ntemps; k++) {
        ag_array a = {0};
        ag_record_list *one = NULL;
        rc = ag_array_alloc(&a, scores->ndim, scores->shape, &err) != AG_OK
                 ? cli_fail("%s: %s", path, err.message) : 0;
        if (rc == 0) {
            memcpy(a.data, scores->data, ag_array_size(scores) * sizeof *a.data);
            rc = normalize_scores(path, AG_NORMALIZER_SOFTMAX, l->temps[k], &a);
        }
        if (rc == 0)
            rc = matrix_records(path, &a, c, &one);
        for (size_t r = 0; rc == 0 && r < ag_record_list_count(one); r++)
            ag_record_set_temperature(ag_record_list_at(one, r), l->temps[k]);
        if (rc == 0 && one && ag_record_list_move(*out, one, &err) != AG_OK)
            rc = cli_fail_error(&err);
        ag_record_list_free(one);
        ag_array_free(&a);
    }
    return rc;
}

int cmd_matrix(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_MATRIX))
        return 1;
    common.agg.allowed = 1;
    common.jobs_allowed = 1;
    const char *path = NULL, *tensor = NULL;
    cli_lens lens = {0};
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_matrix, argv[i]))
            return EXIT_USAGE;
        int used = cli_common_option(&common, "matrix", argc, argv, &i);
        if (used == 0)
            used = cli_lens_option(&lens, "matrix", 1, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return cli_usage_help(&cli_usage_matrix);
        if (cli_is_option(argv[i], "--tensor")) {
            if (!(tensor = cli_option_value("matrix", "--tensor", argc, argv, &i)))
                return EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_unparsed(&cli_usage_matrix, argv[i]);
        } else if (path) {
            return cli_usage_error("matrix", "one FILE only ('%s' and '%s')", path, argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (lens.scores && path)
        return cli_usage_error("matrix", "one FILE only ('%s' and --scores %s)", path, lens.scores);
    path = lens.scores ? lens.scores : path;
    if (!path)
        return cli_usage_error("matrix", "missing FILE");
    if (!lens.scores && (lens.normalizer || lens.temperature || lens.temperatures))
        return cli_usage_error("matrix", "--normalizer, --temperature and --temperatures need "
                               "--scores S.npy");
    if (lens.scores && cli_lens_check(&lens, "matrix", &common))
        return EXIT_USAGE;
    if (lens.scores && lens.kind == AG_NORMALIZER_LINEAR)
        return cli_usage_error("matrix", "--normalizer linear needs the heads' Q and K, which a scores file does not hold");
    if (cli_common_check(&common, "matrix"))
        return EXIT_USAGE;
    cli_set_model_name(&common, path);
    cli_path outs[] = {{"-o", common.out_path}}, ins[] = {{"FILE", path}, {"--expect", common.expect_path}};
    if (cli_paths_check(outs, 1, ins, 2) ||
        cli_wrong_reader("matrix", path, CLI_NOT_TENSORS, "a .npy or .safetensors file"))
        return 1;

    ag_array a = {0};
    if (read_matrix_file(path, tensor, &a) != 0)
        return 1;
    if (!common.metrics_given && a.ndim >= 2) /* rectangular: family M (cross) too */
        ag_metric_set_default_shape(common.metrics, common.families, a.shape[a.ndim - 2],
                                    a.shape[a.ndim - 1]);
    if (lens.scores && !lens.ntemps && normalize_scores(path, lens.kind, lens.param, &a) != 0) {
        ag_array_free(&a);
        return 1;
    }
    ag_record_list *recs = NULL;
    int rc = lens.ntemps ? temperature_records(path, &a, &lens, &common, &recs)
                         : matrix_records(path, &a, &common, &recs);
    ag_array_free(&a);
    if (rc == 0) {
        cli_settings_in in = {.files = &path, .nfiles = 1};
        rc = cli_emit_settings(&common, recs, "matrix", path, &in, NULL);
    }
    ag_record_list_free(recs);
    return rc;
}
