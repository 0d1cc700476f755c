/* info.c — what a path holds (`attngeom info`; attngeom/run.h, ag_info):
 * a model folder's architecture as the engine reads it (model_type, sizes,
 * norms, residual wiring, layouts, positions and RoPE scaling, score scale,
 * soft-capping, windows per layer), its tokenizer and every tensor; a
 * .safetensors file's tensors; a .npy file's shape. One JSON object, read
 * by the CLI's formats and by Python's attngeom.info. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "attngeom.h"

/* A JSON string of s with its non-UTF-8 bytes escaped (as every text the
 * CLI prints); NULL when out of memory. */
static json_t *text_json(const char *s)
{
    char *t = ag_text_escape_dup(s, AG_TEXT_UTF8);
    json_t *j = t ? json_string(t) : NULL;
    free(t);
    return j;
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
        json_object_set_new(o, "name", text_json(t->name));
        json_object_set_new(o, "dtype", json_string(ag_dtype_name(t->dtype)));
        json_object_set_new(o, "shape", shape_json(t->shape, t->ndim));
        if (file)
            json_object_set_new(o, "file", text_json(file));
        json_array_append_new(arr, o);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.safetensors file of the folder (shards included), sorted. */
static int folder_tensors(const char *dir, json_t *arr, ag_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return ag_error_set(err, AG_EIO, "%s: cannot list the folder", dir);
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
    int rc = AG_OK;
    for (size_t k = 0; k < count; k++) {
        char path[4096];
        ag_safetensors *st = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[k] ? names[k] : "");
        if (rc == AG_OK)
            rc = ag_st_open(path, &st, err);
        if (rc == AG_OK)
            tensors_json(st, names[k], arr);
        ag_st_close(st);
        free(names[k]);
    }
    return rc;
}

/* The layers with a sliding window: "none", "all" or "0, 2, 4". */
static json_t *layer_list(const ag_model *m, int (*has)(const ag_model *, int))
{
    const ag_model_config *g = ag_model_get_config(m);
    char buf[4096] = "";
    size_t used = 0;
    int count = 0;
    for (int l = 0; l < g->n_layer; l++)
        if (has(m, l) && used < sizeof buf - 16) {
            used += (size_t)snprintf(buf + used, sizeof buf - used, count ? ", %d" : "%d", l);
            count++;
        }
    return json_string(count == 0 ? "none" : count == g->n_layer ? "all" : buf);
}

/* The mixture-of-experts MLPs (only where the model has experts: earlier
 * models' info unchanged). */
static void experts_json(const ag_model *m, json_t *o)
{
    const ag_model_config *g = ag_model_get_config(m);
    if (!g->n_expert)
        return;
    const struct {
        const char *key;
        int value;
    } sizes[] = {{"experts", g->n_expert}, {"experts_per_token", g->top_k},
                 {"d_ff_expert", g->d_ff_expert}, {"d_ff_shared_expert", g->d_ff_shared}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        json_object_set_new(o, sizes[i].key, json_integer(sizes[i].value));
    json_object_set_new(o, "topk_renormalised", json_boolean(g->norm_topk));
    json_object_set_new(o, "expert_layers", layer_list(m, ag_model_layer_experts));
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

/* ALiBi: the kind (whose HF formula gives the slopes and where the bias
 * enters, attngeom/model.h) and every head's slope, as text ("0.5 0.25
 * ...", %.9g: enough to tell float32 values apart), like window_layers. */
static void alibi_json(const ag_model *m, json_t *o)
{
    static const char *const kinds[] = {"none", "bloom", "mpt", "falcon"};
    const ag_model_config *g = ag_model_get_config(m);
    const double *s = ag_model_alibi_slopes(m);
    char *text = malloc((size_t)g->n_head * 18 + 1);
    size_t len = 0;
    if (s && text)
        for (int h = 0; h < g->n_head; h++)
            len += (size_t)sprintf(text + len, h ? " %.9g" : "%.9g", s[h]); /* <= 17 chars + space */
    json_object_set_new(o, "alibi", json_string(kinds[g->alibi]));
    if (g->alibi == AG_ALIBI_MPT)
        json_object_set_new(o, "alibi_bias_max", json_real(g->alibi_bias_max));
    if (text && len)
        json_object_set_new(o, "alibi_slopes", json_stringn(text, len));
    free(text);
}

/* RoPE, when the model rotates Q and K. */
static void rope_json(const ag_rope *r, const ag_rope_extra *x, json_t *o)
{
    static const char *const types[] = {"none", "linear", "dynamic", "llama3", "yarn", "longrope"};
    json_object_set_new(o, "rope_theta", json_real(r->theta));
    json_object_set_new(o, "rotary_dim", json_integer(r->rotary_dim));
    if (x->interleaved) /* GPT-J rotate_every_two */
        json_object_set_new(o, "rope_pairs", json_string("interleaved (2j, 2j+1)"));
    json_object_set_new(o, "rope_scaling", json_string(types[r->type]));
    if (r->type != AG_ROPE_DEFAULT)
        json_object_set_new(o, "rope_factor", json_real(r->factor));
    if (r->type == AG_ROPE_LLAMA3) {
        json_object_set_new(o, "rope_low_freq_factor", json_real(r->low_freq_factor));
        json_object_set_new(o, "rope_high_freq_factor", json_real(r->high_freq_factor));
    }
    if (r->type == AG_ROPE_LLAMA3 || r->type == AG_ROPE_YARN || r->type == AG_ROPE_LONGROPE)
        json_object_set_new(o, "rope_original_max_positions", json_integer(r->original_max_positions));
    if (r->type == AG_ROPE_YARN) {
        json_object_set_new(o, "rope_beta_fast", json_real(x->beta_fast));
        json_object_set_new(o, "rope_beta_slow", json_real(x->beta_slow));
        json_object_set_new(o, "rope_truncate", json_boolean(x->truncate));
    }
    if (r->type == AG_ROPE_YARN || r->type == AG_ROPE_LONGROPE)
        json_object_set_new(o, "rope_attention_factor", json_real(x->attention_factor));
}

/* How the blocks are built: norms, residual wiring, layouts, positions,
 * score scale, soft-capping, windows. */
static void wiring_json(const ag_model *m, json_t *o)
{
    static const char *const norms[] = {"LayerNorm", "RMSNorm", "RMSNorm (1 + w)"};
    static const char *const res[] = {"pre-norm", "post-norm", "parallel"};
    static const char *const qkv[] = {"separate", "fused column blocks Q|K|V", "fused per head q|k|v",
                                      "fused per kv group q..q|k|v"};
    static const char *const mlp[] = {"down(act(up x))", "down(act(gate x) * up x)",
                                      "down(act(gate x) * up x), fused gate_up"};
    static const char *const pos[] = {"learned", "learned, counted from pad_token_id + 1", "rotary",
                                      "ALiBi", "relative buckets (T5)"};
    const ag_model_config *g = ag_model_get_config(m);
    json_object_set_new(o, "norm", json_string(norms[g->norm]));
    json_object_set_new(o, "norm_eps", json_real(g->norm_eps));
    json_object_set_new(o, "residual", json_string(res[g->residual]));
    json_object_set_new(o, "sandwich_norms", json_boolean(g->sandwich_norms));
    if (g->no_pre_norms) /* only where set: earlier models' info unchanged */
        json_object_set_new(o, "pre_norms", json_false());
    if (g->first_no_pre_norm) /* ModernBERT: layer 0's attn_norm is Identity */
        json_object_set_new(o, "layer0_pre_norm", json_false());
    if (g->qk_norm != AG_QK_NORM_NONE)
        json_object_set_new(o, "qk_norm", json_string(g->qk_norm == AG_QK_NORM_HEAD
                                                          ? "RMSNorm per head over head_dim"
                                                          : "RMSNorm over the whole q and k projections"));
    json_object_set_new(o, "embedding_norm", json_boolean(g->embed_norm));
    json_object_set_new(o, "final_norm", json_boolean(g->final_norm));
    json_object_set_new(o, "activation", text_json(g->activation));
    json_object_set_new(o, "mlp", json_string(mlp[g->mlp]));
    json_object_set_new(o, "qkv", json_string(qkv[g->qkv]));
    json_object_set_new(o, "biases", biases(g));
    json_object_set_new(o, "positions", json_string(pos[g->positions]));
    if (g->positions == AG_POS_ALIBI)
        alibi_json(m, o);
    else if (g->positions != AG_POS_ROPE)
        json_object_set_new(o, "position_offset", json_integer(g->position_offset));
    else
        rope_json(&g->rope, &g->rope_extra, o);
    if (g->rope_local.rotary_dim) /* only where set: earlier models' info unchanged */
        json_object_set_new(o, "rope_local_theta", json_real(g->rope_local.theta));
    json_object_set_new(o, "embed_scale", json_real(g->embed_scale));
    json_object_set_new(o, "attn_scale", json_real(g->attn_scale));
    json_object_set_new(o, "scale_by_inverse_layer", json_boolean(g->scale_by_inverse_layer));
    json_object_set_new(o, "scale_query", json_boolean(g->scale_query));
    json_object_set_new(o, "softcap", json_real(g->softcap));
    json_object_set_new(o, "sliding_window", json_integer(g->sliding_window));
    json_object_set_new(o, "window_layers", layer_list(m, ag_model_layer_window));
    if (g->sliding_window && !g->causal) /* only where set: ModernBERT's local layers */
        json_object_set_new(o, "window_kind", json_string("bidirectional band |i - j| < sliding_window"));
    experts_json(m, o);
}

/* What the pass takes: "input" tokens, pixels or features; for a tensor
 * model its shape ("[3, 224, 224]"; Whisper "[80, 1..3000]": any
 * frame count up to the most), a ViT's patch grid and DINOv2's register
 * tokens (rows 1..R, Darcet et al. 2024, Sec. 2.2). */
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
    if (g->n_registers) { /* only where set: earlier models' info unchanged */
        json_object_set_new(o, "registers", json_integer(g->n_registers));
        char layout[192];
        snprintf(layout, sizeof layout, "0 [CLS], 1..%d registers [REG0]..[REG%d] (no position embedding), then the patches",
                 g->n_registers, g->n_registers - 1);
        json_object_set_new(o, "token_layout", json_string(layout));
    }
}

static json_t *config_json(const ag_model *m)
{
    const ag_model_config *g = ag_model_get_config(m);
    json_t *o = json_object();
    json_object_set_new(o, "model_type", text_json(g->model_type));
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

/* An encoder–decoder folder: "config" the encoder's, "decoder_config"
 * the decoder's (with its cross-attention), "stacks" in words. */
static int info_seq2seq(const char *dir, json_t *root, ag_error *err)
{
    ag_seq2seq *s = NULL;
    int status = ag_seq2seq_load(dir, &s, err);
    if (status != AG_OK)
        return status;
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER), *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
    char text[160];
    snprintf(text, sizeof text, "encoder (%d layers, \"config\"), decoder (%d layers, each self- and cross-attention, \"decoder_config\")",
             ag_model_get_config(enc)->n_layer, ag_model_get_config(dec)->n_layer);
    json_object_set_new(root, "kind", json_string("model"));
    json_object_set_new(root, "encoder_decoder", json_true());
    json_object_set_new(root, "stacks", json_string(text));
    json_object_set_new(root, "config", config_json(enc));
    json_object_set_new(root, "decoder_config", config_json(dec));
    ag_seq2seq_free(s);
    return AG_OK;
}

static int info_model(const char *dir, json_t *root, ag_error *err)
{
    ag_model *m = NULL;
    int status = ag_model_dir_is_seq2seq(dir) ? info_seq2seq(dir, root, err) : ag_model_load(dir, &m, err);
    if (status != AG_OK)
        return status;
    if (m) {
        json_object_set_new(root, "kind", json_string("model"));
        json_object_set_new(root, "config", config_json(m));
    }
    if (ag_model_is_tower(m)) { /* a clip folder: the tower follows the input */
        ag_model_free(m);
        m = NULL;
        if ((status = ag_model_load_tower(dir, AG_INPUT_PIXELS, &m, err)) != AG_OK)
            return status;
        json_object_set_new(root, "towers", json_string("text (clip_text_model: --text, --tokens; \"config\"), "
                                                        "vision (clip_vision_model: --image, --pixels; \"vision_config\")"));
        json_object_set_new(root, "vision_config", config_json(m));
    }
    ag_model_free(m);
    ag_tokenizer *tok = NULL;
    static const char *const kinds[] = {"", "BPE", "WordPiece", "Unigram", "WordLevel"};
    ag_error tok_err = {0}; /* no tokenizer is no error: "tokenizer": null */
    if (ag_tokenizer_load(dir, &tok, &tok_err) == AG_OK)
        json_object_set_new(root, "tokenizer", json_string(kinds[ag_tokenizer_get_kind(tok)]));
    else
        json_object_set_new(root, "tokenizer", json_null());
    ag_tokenizer_free(tok);
    json_t *arr = json_array();
    json_object_set_new(root, "tensors", arr);
    return folder_tensors(dir, arr, err);
}

static int info_file(const char *path, json_t *root, ag_error *err)
{
    size_t n = strlen(path);
    int status;
    if (n > 4 && strcmp(path + n - 4, ".npy") == 0) {
        ag_array a = {0};
        if ((status = ag_npy_read(path, &a, err)) != AG_OK)
            return status;
        json_object_set_new(root, "kind", json_string("npy"));
        json_object_set_new(root, "shape", shape_json(a.shape, a.ndim));
        ag_array_free(&a);
        return AG_OK;
    }
    ag_safetensors *st = NULL;
    if ((status = ag_st_open(path, &st, err)) != AG_OK)
        return status;
    json_object_set_new(root, "kind", json_string("safetensors"));
    json_t *arr = json_array();
    json_object_set_new(root, "tensors", arr);
    tensors_json(st, NULL, arr);
    ag_st_close(st);
    return AG_OK;
}


int ag_info(const char *path, char **json, size_t *len, ag_error *err)
{
    *json = NULL;
    *len = 0;
    if (!path)
        return ag_error_set(err, AG_EINVAL, "no path (NULL)");
    struct stat sb;
    json_t *root = json_object();
    if (!root)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    json_object_set_new(root, "path", text_json(path));
    int status = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? info_model(path, root, err)
                                                             : info_file(path, root, err);
    if (status == AG_OK) {
        *json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!*json)
            status = ag_error_set(err, AG_ENOMEM, "out of memory formatting %s", path);
        else
            *len = strlen(*json);
    }
    json_decref(root);
    return status;
}
