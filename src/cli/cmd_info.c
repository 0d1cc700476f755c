/* cmd_info.c — `attngeom info PATH`: what a model folder or tensor file holds
 * (architecture, layers, heads, dims, tensors). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli.h"

static const char info_help[] =
    "usage: attngeom info PATH [--format table|json|csv|tsv|md|latex] [-o FILE]\n"
    "\n"
    "PATH is a Hugging Face model folder (architecture, layers, heads, widths,\n"
    "tokenizer and every tensor), a .safetensors file (every tensor's dtype and\n"
    "shape) or a .npy file (its shape).\n";

static const char *arch_name(ag_arch a)
{
    return a == AG_ARCH_GPT2 ? "gpt2" : a == AG_ARCH_BERT ? "bert" : "llama";
}

static json_t *shape_json(const size_t *shape, int ndim)
{
    json_t *a = json_array();
    for (int d = 0; d < ndim; d++)
        json_array_append_new(a, json_integer((json_int_t)shape[d]));
    return a;
}

static void tensors_json(const ag_safetensors *st, const char *file, json_t *arr)
{
    for (size_t k = 0; k < ag_st_count(st); k++) {
        const ag_tensor_info *t = ag_st_info(st, k);
        json_t *o = json_object();
        json_object_set_new(o, "name", cli_json_text(t->name));
        json_object_set_new(o, "dtype", json_string(ag_dtype_name(t->dtype)));
        json_object_set_new(o, "shape", shape_json(t->shape, t->ndim));
        if (file)
            json_object_set_new(o, "file", cli_json_text(file));
        json_array_append_new(arr, o);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.safetensors file of the folder (shards included), sorted. */
static int folder_tensors(const char *dir, json_t *arr)
{
    DIR *d = opendir(dir);
    if (!d)
        return cli_fail("%s: cannot list the folder", dir);
    char *names[4096];
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < sizeof names / sizeof *names) {
        size_t n = strlen(e->d_name);
        if (n > 12 && strcmp(e->d_name + n - 12, ".safetensors") == 0)
            names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    int rc = 0;
    for (size_t k = 0; k < count; k++) {
        char path[4096];
        ag_safetensors *st = NULL;
        ag_error err = {0};
        snprintf(path, sizeof path, "%s/%s", dir, names[k] ? names[k] : "");
        if (rc == 0 && ag_st_open(path, &st, &err) != AG_OK)
            rc = cli_fail_error(&err);
        if (rc == 0)
            tensors_json(st, names[k], arr);
        ag_st_close(st);
        free(names[k]);
    }
    return rc;
}

static json_t *config_json(const ag_model_config *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "architecture", json_string(arch_name(g->arch)));
    json_object_set_new(o, "model_type", cli_json_text(g->model_type));
    json_object_set_new(o, "causal", json_boolean(g->causal));
    json_object_set_new(o, "layers", json_integer(g->n_layer));
    json_object_set_new(o, "heads", json_integer(g->n_head));
    json_object_set_new(o, "kv_heads", json_integer(g->n_kv_head));
    json_object_set_new(o, "d_model", json_integer(g->d_model));
    json_object_set_new(o, "head_dim", json_integer(g->head_dim));
    json_object_set_new(o, "d_ff", json_integer(g->d_ff));
    json_object_set_new(o, "max_positions", json_integer(g->max_positions));
    json_object_set_new(o, "vocab_size", json_integer(g->vocab_size));
    json_object_set_new(o, "norm_eps", json_real(g->norm_eps));
    if (g->arch == AG_ARCH_LLAMA)
        json_object_set_new(o, "rope_theta", json_real(g->rope_theta));
    return o;
}

static int info_model(const char *dir, json_t *root)
{
    ag_model *m = NULL;
    ag_error err = {0};
    if (ag_model_load(dir, &m, &err) != AG_OK)
        return cli_fail_error(&err);
    json_object_set_new(root, "kind", json_string("model"));
    json_object_set_new(root, "config", config_json(ag_model_get_config(m)));
    ag_model_free(m);
    ag_tokenizer *tok = NULL;
    static const char *const kinds[] = {"", "BPE", "WordPiece", "Unigram", "WordLevel"};
    if (ag_tokenizer_load(dir, &tok, &err) == AG_OK)
        json_object_set_new(root, "tokenizer", json_string(kinds[ag_tokenizer_get_kind(tok)]));
    else
        json_object_set_new(root, "tokenizer", json_null());
    ag_tokenizer_free(tok);
    json_t *arr = json_array();
    json_object_set_new(root, "tensors", arr);
    return folder_tensors(dir, arr);
}

static int info_file(const char *path, json_t *root)
{
    ag_error err = {0};
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".npy") == 0) {
        ag_array a = {0};
        if (ag_npy_read(path, &a, &err) != AG_OK)
            return cli_fail_error(&err);
        json_object_set_new(root, "kind", json_string("npy"));
        json_object_set_new(root, "shape", shape_json(a.shape, a.ndim));
        ag_array_free(&a);
        return 0;
    }
    ag_safetensors *st = NULL;
    if (ag_st_open(path, &st, &err) != AG_OK)
        return cli_fail_error(&err);
    json_object_set_new(root, "kind", json_string("safetensors"));
    json_t *arr = json_array();
    json_object_set_new(root, "tensors", arr);
    tensors_json(st, NULL, arr);
    ag_st_close(st);
    return 0;
}

static void shape_text(const json_t *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < json_array_size(shape) && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)json_integer_value(json_array_get(shape, d)));
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* The table format's summary: the path, its kind, the config. */
static void write_summary(FILE *fp, const char *path, const json_t *root)
{
    const json_t *cfg = json_object_get(root, "config"), *tok = json_object_get(root, "tokenizer");
    char shape[256];
    cli_put_cell(fp, AG_FORMAT_TABLE, path);
    fprintf(fp, ": %s\n", json_string_value(json_object_get(root, "kind")));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v) {
        fprintf(fp, "  %-14s ", key);
        if (json_is_string(v))
            cli_put_cell(fp, AG_FORMAT_TABLE, json_string_value(v));
        else if (json_is_boolean(v))
            fputs(json_is_true(v) ? "true" : "false", fp);
        else
            fprintf(fp, "%g", json_number_value(v));
        fputc('\n', fp);
    }
    if (cfg)
        fprintf(fp, "  %-14s %s\n", "tokenizer", json_is_string(tok) ? json_string_value(tok) : "none");
    if (json_object_get(root, "shape")) {
        shape_text(json_object_get(root, "shape"), shape, sizeof shape);
        fprintf(fp, "  shape %s\n", shape);
    }
}

static const char *tensor_field(const json_t *tensors, size_t k, const char *field)
{
    return json_string_value(json_object_get(json_array_get(tensors, k), field));
}

/* The table format's tensor list, names aligned as they are shown. */
static void write_tensor_table(FILE *fp, const json_t *tensors)
{
    size_t count = json_array_size(tensors);
    char shape[256];
    int w = 4;
    fprintf(fp, "tensors (%zu):\n", count);
    for (size_t k = 0; k < count; k++) {
        int len = (int)ag_text_escape(NULL, 0, tensor_field(tensors, k, "name"), AG_TEXT_CONTROL);
        w = len > w ? len : w;
    }
    fprintf(fp, "  %-*s  %-7s  %s\n", w, "name", "dtype", "shape");
    for (size_t k = 0; k < count; k++) {
        const char *name = tensor_field(tensors, k, "name");
        shape_text(json_object_get(json_array_get(tensors, k), "shape"), shape, sizeof shape);
        fputs("  ", fp);
        cli_put_cell(fp, AG_FORMAT_TABLE, name);
        fprintf(fp, "%*s  %-7s  %s\n", w - (int)ag_text_escape(NULL, 0, name, AG_TEXT_CONTROL), "",
                tensor_field(tensors, k, "dtype"), shape);
    }
}

/* CSV, TSV, Markdown, LaTeX: one row per tensor. */
static void write_tensor_rows(FILE *fp, ag_format fmt, const json_t *tensors)
{
    const char *sep = fmt == AG_FORMAT_CSV ? "," : fmt == AG_FORMAT_TSV ? "\t"
                    : fmt == AG_FORMAT_MD ? " | " : " & ";
    const char *pre = fmt == AG_FORMAT_MD ? "| " : "", *post = fmt == AG_FORMAT_MD ? " |"
                    : fmt == AG_FORMAT_LATEX ? " \\\\" : "";
    char shape[256];
    if (fmt == AG_FORMAT_LATEX)
        fputs("\\begin{tabular}{lll}\n\\toprule\n", fp);
    fprintf(fp, "%sname%sdtype%sshape%s\n", pre, sep, sep, post);
    if (fmt == AG_FORMAT_MD)
        fputs("| --- | --- | --- |\n", fp);
    if (fmt == AG_FORMAT_LATEX)
        fputs("\\midrule\n", fp);
    for (size_t k = 0; k < json_array_size(tensors); k++) {
        shape_text(json_object_get(json_array_get(tensors, k), "shape"), shape, sizeof shape);
        fputs(pre, fp);
        cli_put_cell(fp, fmt, tensor_field(tensors, k, "name"));
        const char *q = fmt == AG_FORMAT_CSV ? "\"" : "";
        fprintf(fp, "%s%s%s%s%s%s%s\n", sep, tensor_field(tensors, k, "dtype"), sep, q, shape, q, post);
    }
    if (fmt == AG_FORMAT_LATEX)
        fputs("\\bottomrule\n\\end{tabular}\n", fp);
}

/* Human formats: a summary, then one row per tensor. */
static void write_text(FILE *fp, ag_format fmt, const char *path, const json_t *root)
{
    const json_t *tensors = json_object_get(root, "tensors");
    if (fmt == AG_FORMAT_TABLE)
        write_summary(fp, path, root);
    if (tensors && fmt == AG_FORMAT_TABLE)
        write_tensor_table(fp, tensors);
    else if (tensors)
        write_tensor_rows(fp, fmt, tensors);
}

int cmd_info(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common, AG_FAMILIES_MATRIX);
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        int used = cli_common_option(&common, "info", argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return fputs(info_help, stdout), 0;
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        if (path)
            return cli_usage_error("info", "one PATH only");
        path = argv[i];
    }
    if (!path)
        return cli_usage_error("info", "missing PATH");
    if (cli_reject_expect(&common, "info"))
        return EXIT_USAGE;
    cli_path outs[] = {{"-o", common.out_path}}, ins[] = {{"PATH", path}};
    if (cli_paths_check(outs, 1, ins, 1))
        return 1;
    struct stat sb;
    json_t *root = json_object();
    json_object_set_new(root, "path", cli_json_text(path));
    int rc = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? info_model(path, root)
                                                         : info_file(path, root);
    char *buf = NULL;
    size_t len = 0;
    if (rc == 0) {
        FILE *mem = open_memstream(&buf, &len);
        if (common.format == AG_FORMAT_JSON || common.format == AG_FORMAT_JSONL) {
            json_dumpf(root, mem, (common.format == AG_FORMAT_JSONL ? JSON_COMPACT : JSON_INDENT(1)) |
                                      JSON_PRESERVE_ORDER);
            fputc('\n', mem);
        } else {
            write_text(mem, common.format, path, root);
        }
        fclose(mem);
        rc = cli_write_output(common.out_path, buf, len);
    }
    free(buf);
    json_decref(root);
    return rc;
}
