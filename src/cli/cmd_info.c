/* cmd_info.c — `attngeom info PATH`: what a model folder or tensor file holds
 * (architecture, layers, heads, dims, tensors). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char info_help[] =
    "usage: attngeom info PATH [--format F] [-o FILE]\n"
    "\n"
    "PATH is a Hugging Face model folder (its architecture as the engine reads\n"
    "it: model_type, sizes, norm, residual wiring, Q/K/V and MLP layouts,\n"
    "positions and RoPE scaling, score scale, soft-capping, sliding windows per\n"
    "layer; the tokenizer and every tensor), a .safetensors file (every\n"
    "tensor's dtype and shape) or a .npy file (its shape). CSV, TSV, Markdown\n"
    "and LaTeX give one table: name, dtype, shape per tensor for a file; for a\n"
    "model folder kind, name, value, dtype, shape, a \"config\" row per field\n"
    "then a \"tensor\" row per tensor.\n";

static const cli_option_group *const info_groups[] = {&cli_group_output, &cli_group_help, NULL};
const cli_usage cli_usage_info = {"info", info_help, info_groups, NULL};

static void shape_text(const json_t *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < json_array_size(shape) && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)json_integer_value(json_array_get(shape, d)));
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* A config value as text: strings escaped for the format, booleans,
 * numbers as %g. */
static void put_value(FILE *fp, ag_format fmt, const json_t *v)
{
    if (json_is_string(v))
        cli_put_cell(fp, fmt, json_string_value(v));
    else if (json_is_boolean(v))
        fputs(json_is_true(v) ? "true" : "false", fp);
    else
        fprintf(fp, "%g", json_number_value(v));
}

/* A folder's second config, its fields prefixed: clip's "towers" and
 * vision_config, an encoder–decoder model's "stacks" and decoder_config. */
static void write_second(FILE *fp, int w, const json_t *root, const char *label, const char *cfg_key,
                         const char *prefix)
{
    const json_t *what = json_object_get(root, label);
    const char *key;
    json_t *v;
    int pl = (int)strlen(prefix);
    if (!json_is_string(what))
        return;
    fprintf(fp, "  %-*s %s\n", w, label, json_string_value(what));
    json_object_foreach(json_object_get(root, cfg_key), key, v) {
        fprintf(fp, "  %s%-*s ", prefix, w - pl > 0 ? w - pl : 0, key);
        put_value(fp, AG_FORMAT_TABLE, v);
        fputc('\n', fp);
    }
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
    int w = 14;
    json_object_foreach((json_t *)cfg, key, v)
        w = (int)strlen(key) > w ? (int)strlen(key) : w;
    json_object_foreach((json_t *)cfg, key, v) {
        fprintf(fp, "  %-*s ", w, key);
        put_value(fp, AG_FORMAT_TABLE, v);
        fputc('\n', fp);
    }
    if (cfg)
        fprintf(fp, "  %-*s %s\n", w, "tokenizer", json_is_string(tok) ? json_string_value(tok) : "none");
    write_second(fp, w, root, "towers", "vision_config", "vision."); /* a clip folder */
    write_second(fp, w, root, "stacks", "decoder_config", "decoder."); /* an encoder-decoder one */
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

/* A config value as a cell: integers, numbers and booleans typed (so CSV
 * reads them back as values), anything else as text. */
static int put_value_cell(ag_table *t, ag_cell *c, const json_t *v, ag_error *err)
{
    if (json_is_integer(v))
        *c = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)json_integer_value(v)};
    else if (json_is_real(v))
        *c = (ag_cell){.kind = AG_CELL_NUMBER, .value = json_real_value(v)};
    else if (json_is_boolean(v))
        *c = (ag_cell){.kind = AG_CELL_BOOL, .value = json_is_true(v)};
    else
        return ag_table_set_text(t, c, json_is_string(v) ? json_string_value(v) : "", err);
    return AG_OK;
}

/* One row of text cells (NULL: a null cell). AG_ENOMEM. */
static int add_text_row(ag_table *t, const char *const *cells, ag_error *err)
{
    ag_cell *row = ag_table_add_row(t, err);
    if (!row)
        return AG_ENOMEM;
    for (size_t i = 0; i < t->ncol; i++)
        if (cells[i] && ag_table_set_text(t, &row[i], cells[i], err) != AG_OK)
            return AG_ENOMEM;
    return AG_OK;
}

/* CSV, TSV, Markdown, LaTeX: one table, written by ag_table_write like every
 * command's records. A file: a row per tensor (name, dtype, shape). A model
 * folder: kind, name, value, dtype, shape, with a "config" row per config
 * field (and the tokenizer), then a "tensor" row per tensor. */
static int build_rows(ag_table *t, const json_t *root, ag_error *err)
{
    const json_t *tensors = json_object_get(root, "tensors"), *cfg = json_object_get(root, "config");
    static const char *const file_cols[] = {"name", "dtype", "shape"};
    static const char *const model_cols[] = {"kind", "name", "value", "dtype", "shape"};
    char shape[256];
    int status = ag_table_init(t, cfg ? model_cols : file_cols, cfg ? 5 : 3, err);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v) {
        const char *row[5] = {"config", key, NULL, NULL, NULL};
        if (status == AG_OK)
            status = add_text_row(t, row, err);
        if (status == AG_OK)
            status = put_value_cell(t, &t->cells[(t->nrow - 1) * t->ncol + 2], v, err);
    }
    if (cfg && status == AG_OK) {
        const json_t *tok = json_object_get(root, "tokenizer");
        const char *row[5] = {"config", "tokenizer", json_is_string(tok) ? json_string_value(tok) : "none",
                              NULL, NULL};
        status = add_text_row(t, row, err);
    }
    for (size_t k = 0; status == AG_OK && k < json_array_size(tensors); k++) {
        shape_text(json_object_get(json_array_get(tensors, k), "shape"), shape, sizeof shape);
        const char *name = tensor_field(tensors, k, "name"), *dt = tensor_field(tensors, k, "dtype");
        const char *in_model[5] = {"tensor", name, NULL, dt, shape}, *in_file[3] = {name, dt, shape};
        status = add_text_row(t, cfg ? in_model : in_file, err);
    }
    return status;
}

/* The table format: a summary, then the tensors. */
static void write_text(FILE *fp, const char *path, const json_t *root)
{
    const json_t *tensors = json_object_get(root, "tensors");
    write_summary(fp, path, root);
    if (tensors)
        write_tensor_table(fp, tensors);
}

/* What path holds (ag_info) as a JSON object; 0, or 1 after printing. */
static int info_root(const char *path, json_t **root)
{
    char *text = NULL;
    size_t len = 0;
    ag_error err = {0};
    if (ag_info(path, &text, &len, &err) != AG_OK)
        return cli_fail_error(&err);
    json_error_t jerr;
    *root = json_loadb(text, len, 0, &jerr);
    ag_free(text);
    return *root ? 0 : cli_fail("%s: out of memory", path);
}

int cmd_info(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_MATRIX))
        return 1;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_info, argv[i]))
            return EXIT_USAGE;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_info);
        if (argv[i][0] == '-' && argv[i][1]) {
            int used = cli_common_option(&common, "info", argc, argv, &i); /* --format, -o */
            if (used <= 0)
                return used < 0 ? EXIT_USAGE : cli_usage_unparsed(&cli_usage_info, argv[i]);
            continue;
        }
        if (path)
            return cli_usage_error("info", "one PATH only");
        path = argv[i];
    }
    if (!path)
        return cli_usage_error("info", "missing PATH");
    cli_path outs[] = {{"-o", common.out_path}}, ins[] = {{"PATH", path}};
    if (cli_paths_check(outs, 1, ins, 1))
        return 1;
    json_t *root = NULL;
    int rc = info_root(path, &root);
    char *buf = NULL;
    size_t len = 0;
    ag_format f = common.format;
    if (rc == 0 && f != AG_FORMAT_JSON && f != AG_FORMAT_JSONL && f != AG_FORMAT_TABLE) {
        ag_table t = {0};
        ag_error err = {0};
        rc = build_rows(&t, root, &err) == AG_OK ? cli_emit_table(&common, &t, NULL, NULL)
                                                 : cli_fail_error(&err);
        ag_table_free(&t);
    } else if (rc == 0) {
        FILE *mem = open_memstream(&buf, &len);
        if (!mem)
            rc = cli_fail("out of memory formatting the output");
        else if (f == AG_FORMAT_TABLE)
            write_text(mem, path, root);
        else
            json_dumpf(root, mem, (f == AG_FORMAT_JSONL ? JSON_COMPACT : JSON_INDENT(1)) | JSON_PRESERVE_ORDER);
        if (mem && f != AG_FORMAT_TABLE)
            fputc('\n', mem);
        if (mem)
            fclose(mem);
        if (rc == 0)
            rc = cli_write_output(common.out_path, buf, len);
    }
    free(buf);
    json_decref(root);
    return rc;
}
