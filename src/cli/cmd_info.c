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
    "PATH is a Hugging Face model folder (its architecture as the engine reads\n"
    "it: model_type, sizes, norm, residual wiring, Q/K/V and MLP layouts,\n"
    "positions and RoPE scaling, score scale, soft-capping, sliding windows per\n"
    "layer; the tokenizer and every tensor), a .safetensors file (every\n"
    "tensor's dtype and shape) or a .npy file (its shape). CSV, TSV, Markdown\n"
    "and LaTeX give one table: name, dtype, shape per tensor for a file; for a\n"
    "model folder kind, name, value, dtype, shape, a \"config\" row per field\n"
    "then a \"tensor\" row per tensor.\n";

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

/* The layers with a sliding window: "none", "all" or "0, 2, 4". */
static json_t *window_layers(const ag_model *m)
{
    const ag_model_config *g = ag_model_get_config(m);
    char buf[4096] = "";
    size_t used = 0;
    int count = 0;
    for (int l = 0; l < g->n_layer; l++)
        if (ag_model_layer_window(m, l) && used < sizeof buf - 16) {
            used += (size_t)snprintf(buf + used, sizeof buf - used, count ? ", %d" : "%d", l);
            count++;
        }
    return json_string(count == 0 ? "none" : count == g->n_layer ? "all" : buf);
}

static json_t *biases(const ag_model_config *g)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%s%s%s", g->qkv_bias ? "qkv " : "", g->o_bias ? "o " : "",
             g->mlp_bias ? "mlp " : "");
    size_t n = strlen(buf);
    if (n)
        buf[n - 1] = 0;
    return json_string(n ? buf : "none");
}

/* RoPE, when the model rotates Q and K. */
static void rope_json(const ag_rope *r, json_t *o)
{
    static const char *const types[] = {"none", "linear", "dynamic", "llama3"};
    json_object_set_new(o, "rope_theta", json_real(r->theta));
    json_object_set_new(o, "rotary_dim", json_integer(r->rotary_dim));
    json_object_set_new(o, "rope_scaling", json_string(types[r->type]));
    if (r->type != AG_ROPE_DEFAULT)
        json_object_set_new(o, "rope_factor", json_real(r->factor));
    if (r->type == AG_ROPE_LLAMA3) {
        json_object_set_new(o, "rope_low_freq_factor", json_real(r->low_freq_factor));
        json_object_set_new(o, "rope_high_freq_factor", json_real(r->high_freq_factor));
        json_object_set_new(o, "rope_original_max_positions", json_integer(r->original_max_positions));
    }
}

/* How the blocks are built: norms, residual wiring, layouts, positions,
 * score scale, soft-capping, windows. */
static void wiring_json(const ag_model *m, json_t *o)
{
    static const char *const norms[] = {"LayerNorm", "RMSNorm", "RMSNorm (1 + w)"};
    static const char *const res[] = {"pre-norm", "post-norm", "parallel"};
    static const char *const qkv[] = {"separate", "fused column blocks Q|K|V", "fused per head q|k|v"};
    static const char *const mlp[] = {"down(act(up x))", "down(act(gate x) * up x)",
                                      "down(act(gate x) * up x), fused gate_up"};
    static const char *const pos[] = {"learned", "learned, counted from pad_token_id + 1", "rotary"};
    const ag_model_config *g = ag_model_get_config(m);
    json_object_set_new(o, "norm", json_string(norms[g->norm]));
    json_object_set_new(o, "norm_eps", json_real(g->norm_eps));
    json_object_set_new(o, "residual", json_string(res[g->residual]));
    json_object_set_new(o, "sandwich_norms", json_boolean(g->sandwich_norms));
    json_object_set_new(o, "embedding_norm", json_boolean(g->embed_norm));
    json_object_set_new(o, "final_norm", json_boolean(g->final_norm));
    json_object_set_new(o, "activation", cli_json_text(g->activation));
    json_object_set_new(o, "mlp", json_string(mlp[g->mlp]));
    json_object_set_new(o, "qkv", json_string(qkv[g->qkv]));
    json_object_set_new(o, "biases", biases(g));
    json_object_set_new(o, "positions", json_string(pos[g->positions]));
    if (g->positions != AG_POS_ROPE)
        json_object_set_new(o, "position_offset", json_integer(g->position_offset));
    else
        rope_json(&g->rope, o);
    json_object_set_new(o, "embed_scale", json_real(g->embed_scale));
    json_object_set_new(o, "attn_scale", json_real(g->attn_scale));
    json_object_set_new(o, "scale_by_inverse_layer", json_boolean(g->scale_by_inverse_layer));
    json_object_set_new(o, "scale_query", json_boolean(g->scale_query));
    json_object_set_new(o, "softcap", json_real(g->softcap));
    json_object_set_new(o, "sliding_window", json_integer(g->sliding_window));
    json_object_set_new(o, "window_layers", window_layers(m));
}

/* What the pass takes: "input" tokens, pixels or features; for a tensor
 * model its shape ("[3, 224, 224]"; Whisper "[80, 1..3000]": any
 * frame count up to the most) and a ViT's patch grid. */
static void input_json(const ag_model *m, json_t *o)
{
    static const char *const kinds[] = {"tokens", "pixels", "features"};
    const ag_model_config *g = ag_model_get_config(m);
    size_t shape[3];
    char text[96];
    int nd = ag_model_input_shape(m, shape);
    json_object_set_new(o, "input", json_string(kinds[ag_model_input_kind(m)]));
    if (nd == 3)
        snprintf(text, sizeof text, "[%zu, %zu, %zu]", shape[0], shape[1], shape[2]);
    else if (nd == 2)
        snprintf(text, sizeof text, "[%zu, 1..%zu]", shape[0], shape[1]);
    if (nd)
        json_object_set_new(o, "input_shape", json_string(text));
    if (nd == 3) {
        snprintf(text, sizeof text, "%dx%d", g->image_height / g->patch_height,
                 g->image_width / g->patch_width);
        json_object_set_new(o, "patch_grid", json_string(text));
    }
}

static json_t *config_json(const ag_model *m)
{
    const ag_model_config *g = ag_model_get_config(m);
    json_t *o = json_object();
    json_object_set_new(o, "model_type", cli_json_text(g->model_type));
    json_object_set_new(o, "modeling", json_string(g->modeling));
    input_json(m, o);
    json_object_set_new(o, "causal", json_boolean(g->causal));
    json_object_set_new(o, "layers", json_integer(g->n_layer));
    json_object_set_new(o, "heads", json_integer(g->n_head));
    json_object_set_new(o, "kv_heads", json_integer(g->n_kv_head));
    json_object_set_new(o, "d_model", json_integer(g->d_model));
    json_object_set_new(o, "d_embed", json_integer(g->d_embed));
    json_object_set_new(o, "head_dim", json_integer(g->head_dim));
    json_object_set_new(o, "d_ff", json_integer(g->d_ff));
    json_object_set_new(o, "max_positions", json_integer(g->max_positions));
    json_object_set_new(o, "max_tokens", json_integer(g->max_tokens));
    json_object_set_new(o, "vocab_size", json_integer(g->vocab_size));
    json_object_set_new(o, "type_vocab_size", json_integer(g->type_vocab_size));
    wiring_json(m, o);
    return o;
}

static int info_model(const char *dir, json_t *root)
{
    ag_model *m = NULL;
    ag_error err = {0};
    if (ag_model_load(dir, &m, &err) != AG_OK)
        return cli_fail_error(&err);
    json_object_set_new(root, "kind", json_string("model"));
    json_object_set_new(root, "config", config_json(m));
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

int cmd_info(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_MATRIX))
        return 1;
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
