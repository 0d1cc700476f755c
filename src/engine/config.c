/* config.c — config.json into ag_model_config, through the descriptor of its
 * model_type (arch.h): which keys hold the sizes, norm epsilon, activation,
 * biases, RoPE and its scaling, sliding windows per layer. Every value is
 * validated and capped (CAP_*) before anything is allocated from it; an
 * error is one line naming config.json and the field. At the end, a loaded
 * model's config by name for bindings (ag_model_dim, ag_model_type). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/access.h"
#include "kernel/attention_kernel.h"
#include "io/io_internal.h"
#include "model_int.h"

typedef struct {
    char path[4200];
    json_t *root;
    ag_error *err;
} cfgctx;

/* ---- typed fields ------------------------------------------------------- */

/* Integer field of obj in min..CAP_DIM. dflt < 0: required. null counts as
 * absent. */
static int obj_int(cfgctx *c, json_t *obj, const char *key, int dflt, int min, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' is missing", c->path, key);
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_integer(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be an integer", c->path, key);
    json_int_t x = json_integer_value(v);
    if (x < min || x > AGM_CAP_DIM)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %lld is outside %d..%d",
                            c->path, key, (long long)x, min, AGM_CAP_DIM);
    *out = (int)x;
    return AG_OK;
}

static int cfg_int(cfgctx *c, const char *key, int dflt, int min, int *out)
{
    return obj_int(c, c->root, key, dflt, min, out);
}

/* Positive finite number (integer or real) of obj with a default. */
static int obj_num(cfgctx *c, json_t *obj, const char *key, double dflt, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be a positive number", c->path, key);
    *out = json_number_value(v);
    return AG_OK;
}

/* obj_num, 0 allowed and then read as dflt: Python's `x or dflt` of
 * modeling_rope_utils.py (yarn's beta_fast, beta_slow, mscale and
 * mscale_all_dim, which configs such as GLM's set to 0.0). */
static int obj_num_or(cfgctx *c, json_t *obj, const char *key, double dflt, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (v && json_is_number(v) && json_number_value(v) == 0) {
        *out = dflt;
        return AG_OK;
    }
    return obj_num(c, obj, key, dflt, out);
}

static int cfg_num(cfgctx *c, const char *key, double dflt, double *out)
{
    return obj_num(c, c->root, key, dflt, out);
}

static int cfg_bool(cfgctx *c, const char *key, int dflt, int *out)
{
    json_t *v = key ? json_object_get(c->root, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_boolean(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be true or false", c->path, key);
    *out = json_is_true(v);
    return AG_OK;
}

static int obj_str(cfgctx *c, json_t *obj, const char *key, const char *dflt, const char **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (!dflt)
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' is missing", c->path, key);
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_string(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be a string", c->path, key);
    *out = json_string_value(v);
    return AG_OK;
}

static int cfg_str(cfgctx *c, const char *key, const char *dflt, const char **out)
{
    return obj_str(c, c->root, key, dflt, out);
}

/* HF activations.py ACT2FN names this engine implements. */
static int act_named(cfgctx *c, const char *key, const char *s, ag_model *m);

static int cfg_act(cfgctx *c, const char *key, const char *dflt, ag_model *m)
{
    const char *s;
    int rc = cfg_str(c, key, dflt, &s);
    return rc != AG_OK ? rc : act_named(c, key, s, m);
}

/* The activation called s (read from key, for messages). */
static int act_named(cfgctx *c, const char *key, const char *s, ag_model *m)
{
    if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_pytorch_tanh"))
        m->act = AGM_ACT_GELU_TANH;
    else if (!strcmp(s, "gelu"))
        m->act = AGM_ACT_GELU_ERF;
    else if (!strcmp(s, "relu"))
        m->act = AGM_ACT_RELU;
    else if (!strcmp(s, "silu") || !strcmp(s, "swish"))
        m->act = AGM_ACT_SILU;
    else if (!strcmp(s, "quick_gelu"))
        m->act = AGM_ACT_QUICK_GELU;
    else if (!key && !strcmp(s, "bloom_gelu")) /* BLOOM's fixed MLP activation */
        m->act = AGM_ACT_BLOOM_GELU;
    else
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' = \"%.64s\" is not a supported activation (gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish, quick_gelu)",
                            c->path, key, s);
    snprintf(m->cfg.activation, sizeof m->cfg.activation, "%s", s);
    return AG_OK;
}

/* ---- sizes -------------------------------------------------------------- */

/* Heads, head_dim and their consistency with the width. */
static int cfg_heads(cfgctx *c, const agm_arch *a, ag_model_config *g)
{
    int rc, hd = 0;
    if (a->k_kv_heads && (rc = cfg_int(c, a->k_kv_heads, g->n_head, 1, &g->n_kv_head)))
        return rc;
    if (!a->k_kv_heads)
        g->n_kv_head = a->kv_fixed > 0 ? a->kv_fixed : g->n_head;
    if (a->k_head_dim && (rc = cfg_int(c, a->k_head_dim, a->head_dim_dflt, 1, &hd)))
        return rc;
    if (g->n_head % g->n_kv_head)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d does not divide %s = %d",
                            c->path, a->k_kv_heads, g->n_kv_head, a->k_heads, g->n_head);
    if (!hd && g->d_model % g->n_head)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d does not divide the hidden size %d",
                            c->path, a->k_heads, g->n_head, g->d_model);
    g->head_dim = hd ? hd : g->d_model / g->n_head;
    if ((long long)g->n_head * g->head_dim > AGM_CAP_DIM) /* the Q projection's width, an int */
        return ag_error_set(c->err, AG_EFORMAT, "%s: %s * head_dim = %d * %d is above %d",
                            c->path, a->k_heads, g->n_head, g->head_dim, AGM_CAP_DIM);
    return AG_OK;
}

/* ---- models whose input is a tensor ------------------------------------ */

/* An int or a [h, w] pair (ViTConfig image_size, patch_size: HF's
 * ViTPatchEmbeddings takes either) in 1..CAP_DIM. */
static int cfg_pair(cfgctx *c, const char *key, int dflt, int out[2])
{
    json_t *v = json_object_get(c->root, key);
    if (!json_is_array(v)) {
        int rc = cfg_int(c, key, dflt, 1, &out[0]);
        out[1] = out[0];
        return rc;
    }
    if (json_array_size(v) != 2)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be an integer or [height, width]", c->path, key);
    for (size_t i = 0; i < 2; i++) {
        json_t *x = json_array_get(v, i);
        json_int_t k = json_is_integer(x) ? json_integer_value(x) : 0;
        if (k < 1 || k > AGM_CAP_DIM)
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' entry %zu must be an integer in 1..%d",
                                c->path, key, i, AGM_CAP_DIM);
        out[i] = (int)k;
    }
    return AG_OK;
}

/* ViT: channels, image and patch size, positions 1 + patches
 * (modeling_vit.py ViTPatchEmbeddings num_patches = (H // p_h)·(W // p_w));
 * Whisper: mel bins, frames 2·max_source_positions (conv2's stride). */
static int cfg_input(cfgctx *c, const agm_arch *a, ag_model_config *g)
{
    int rc, img[2], patch[2];
    g->input_kind = a->input;
    if ((rc = cfg_int(c, a->k_channels, a->channels_dflt, 1, &g->in_channels)))
        return rc;
    if (a->input == AG_INPUT_FEATURES) {
        int scale = 0; /* read for its type only: WhisperEncoder never applies it */
        g->max_frames = 2 * g->max_positions;
        return cfg_bool(c, "scale_embedding", 0, &scale);
    }
    if ((rc = cfg_pair(c, a->k_image, a->image_dflt, img)) || (rc = cfg_pair(c, a->k_patch, a->patch_dflt, patch)))
        return rc;
    if (patch[0] > img[0] || patch[1] > img[1])
        return ag_error_set(c->err, AG_EFORMAT, "%s: patch_size %dx%d is larger than image_size %dx%d",
                            c->path, patch[0], patch[1], img[0], img[1]);
    long long np = (long long)(img[0] / patch[0]) * (img[1] / patch[1]) + 1;
    if (np > AGM_CAP_DIM || (long long)g->in_channels * patch[0] * patch[1] > AGM_CAP_DIM)
        return ag_error_set(c->err, AG_EFORMAT, "%s: image_size %dx%d in patches of %dx%d (%d channels) is above %d",
                            c->path, img[0], img[1], patch[0], patch[1], g->in_channels, AGM_CAP_DIM);
    g->image_height = img[0];
    g->image_width = img[1];
    g->patch_height = patch[0];
    g->patch_width = patch[1];
    g->max_positions = (int)np;
    /* Dinov2WithRegistersEmbeddings: num_register_tokens rows beside the
     * 1 + patches that have positions */
    if (a->k_registers && (rc = cfg_int(c, a->k_registers, a->registers_dflt, 0, &g->n_registers)))
        return rc;
    if (np + g->n_registers > AGM_CAP_DIM)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d: with %lld positions above %d",
                            c->path, a->k_registers, g->n_registers, np, AGM_CAP_DIM);
    return AG_OK;
}

static int cfg_sizes(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc;
    int tokens = a->input == AG_INPUT_TOKENS;
    int layers_dflt = -1; /* T5 num_decoder_layers: num_layers when absent */
    if (a->k_layers_dflt && (rc = cfg_int(c, a->k_layers_dflt, -1, 1, &layers_dflt)))
        return rc;
    if ((rc = cfg_int(c, a->k_layers, layers_dflt, 1, &g->n_layer)) ||
        (rc = cfg_int(c, a->k_heads, -1, 1, &g->n_head)) ||
        (rc = cfg_int(c, a->k_hidden, -1, 1, &g->d_model)) ||
        (rc = cfg_int(c, a->k_ff, a->ff_mult ? 0 : -1, 1, &g->d_ff)) ||
        (a->k_positions && (rc = cfg_int(c, a->k_positions, -1, 1, &g->max_positions))) ||
        (tokens && (rc = cfg_int(c, "vocab_size", -1, 1, &g->vocab_size))) ||
        (!tokens && (rc = cfg_input(c, a, g))))
        return rc;
    if (g->n_layer > AGM_CAP_LAYER)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d: more than %d layers", c->path,
                            a->k_layers, g->n_layer, AGM_CAP_LAYER);
    if (!g->d_ff) /* modeling_gpt2.py GPT2Block: n_inner or 4·n_embd */
        g->d_ff = a->ff_mult * g->d_model;
    double ratio = 0; /* modeling_dinov2.py Dinov2MLP: int(hidden_size * mlp_ratio) */
    if (a->k_mlp_ratio && (rc = cfg_num(c, a->k_mlp_ratio, 4.0, &ratio)))
        return rc;
    if (a->k_mlp_ratio && (ratio * g->d_model < 1 || ratio * g->d_model > AGM_CAP_DIM))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %g gives an MLP width outside 1..%d", c->path,
                            a->k_mlp_ratio, ratio, AGM_CAP_DIM);
    if (a->k_mlp_ratio)
        g->d_ff = (int)(g->d_model * ratio);
    if (g->d_ff > AGM_CAP_DIM)
        return ag_error_set(c->err, AG_EFORMAT, "%s: MLP width %d is above %d", c->path, g->d_ff, AGM_CAP_DIM);
    g->d_embed = g->d_model;
    if (a->k_embed_dim && (rc = cfg_int(c, a->k_embed_dim, g->d_model, 1, &g->d_embed)))
        return rc;
    if (a->k_type_vocab && (rc = cfg_int(c, a->k_type_vocab, 2, 1, &g->type_vocab_size)))
        return rc;
    return cfg_heads(c, a, g);
}

/* ---- positions and RoPE ------------------------------------------------- */

/* modeling_rope_utils.py rope types: rope_scaling (or Transformers v5's
 * rope_parameters) "rope_type", or the legacy "type". */
static int rope_type(cfgctx *c, json_t *rs, const char *field, int su_yarn_longrope, ag_rope *r)
{
    const char *t = "default";
    json_t *v = json_object_get(rs, "rope_type");
    if (!v || json_is_null(v))
        v = json_object_get(rs, "type");
    if (v && !json_is_null(v) && !(t = json_string_value(v)))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s': rope_type must be a string", c->path, field);
    if (su_yarn_longrope && (!strcmp(t, "su") || !strcmp(t, "yarn")))
        t = "longrope"; /* configuration_phi3.py (008e5743): "backward compatibility" */
    if (!strcmp(t, "default"))
        r->type = AG_ROPE_DEFAULT;
    else if (!strcmp(t, "linear"))
        r->type = AG_ROPE_LINEAR;
    else if (!strcmp(t, "dynamic"))
        r->type = AG_ROPE_DYNAMIC;
    else if (!strcmp(t, "llama3"))
        r->type = AG_ROPE_LLAMA3;
    else if (!strcmp(t, "yarn"))
        r->type = AG_ROPE_YARN;
    else if (!strcmp(t, "longrope"))
        r->type = AG_ROPE_LONGROPE;
    else
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' has rope_type \"%.64s\", which is not supported (default, linear, dynamic, llama3, yarn, longrope)",
                            c->path, field, t);
    return AG_OK;
}

/* modeling_rope_utils.py get_mscale (YaRN sec. 3.4: 0.1·ln(s) + 1). */
static double yarn_mscale(double scale, double mscale)
{
    return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* _compute_yarn_parameters' options: original_max_position_embeddings (or
 * max_position_embeddings), beta_fast/beta_slow ("or 32", "or 1"),
 * truncate (default true), the attention factor: given, or
 * get_mscale(factor, mscale)/get_mscale(factor, mscale_all_dim) when both
 * are set (DeepSeek), else get_mscale(factor). */
static int rope_yarn(cfgctx *c, json_t *rs, const char *field, ag_rope *r, ag_rope_extra *x)
{
    double ms = 0, msa = 0;
    json_t *tr = json_object_get(rs, "truncate");
    int rc;
    if ((rc = obj_int(c, rs, "original_max_position_embeddings", r->original_max_positions, 1,
                      &r->original_max_positions)) ||
        (rc = obj_num_or(c, rs, "beta_fast", 32, &x->beta_fast)) ||
        (rc = obj_num_or(c, rs, "beta_slow", 1, &x->beta_slow)) ||
        (rc = obj_num_or(c, rs, "mscale", 0, &ms)) || (rc = obj_num_or(c, rs, "mscale_all_dim", 0, &msa)) ||
        (rc = obj_num(c, rs, "attention_factor", 0, &x->attention_factor)))
        return rc;
    if (tr && !json_is_null(tr) && !json_is_boolean(tr))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s': truncate must be true or false", c->path, field);
    x->truncate = !tr || json_is_null(tr) || json_is_true(tr);
    if (!x->attention_factor)
        x->attention_factor = ms && msa ? yarn_mscale(r->factor, ms) / yarn_mscale(r->factor, msa)
                                        : yarn_mscale(r->factor, 1);
    return AG_OK;
}

/* n numbers of rs[key] into a new array (freed with the model). */
static int obj_factors(cfgctx *c, json_t *rs, const char *key, int n, double **out)
{
    json_t *v = json_object_get(rs, key);
    if (!json_is_array(v) || json_array_size(v) != (size_t)n)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be a list of %d numbers (rotary dims / 2)",
                            c->path, key, n);
    if (!(*out = malloc((size_t)n * sizeof **out)))
        return ag_error_set(c->err, AG_ENOMEM, "%s: out of memory", c->path);
    for (int j = 0; j < n; j++) {
        json_t *e = json_array_get(v, (size_t)j);
        (*out)[j] = json_is_number(e) ? json_number_value(e) : 0;
        if (!((*out)[j] > 0) || !isfinite((*out)[j]))
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' entry %d must be a positive number",
                                c->path, key, j);
    }
    return AG_OK;
}

/* _compute_longrope_parameters: a top-level original_max_position_embeddings
 * (Phi-3) sets factor = max_position_embeddings / it; the attention factor
 * is given, or 1 for factor <= 1, else sqrt(1 + ln(factor)/ln(original)).
 * The factor lists are read once rotary_dim is known (rope_longrope_lists). */
static int rope_longrope(cfgctx *c, json_t *rs, ag_rope *r, ag_rope_extra *x, int max_pos)
{
    int orig = 0, rc;
    if ((rc = cfg_int(c, "original_max_position_embeddings", 0, 1, &orig)) ||
        (!orig && (rc = obj_int(c, rs, "original_max_position_embeddings", 0, 1, &orig))) ||
        (rc = obj_num(c, rs, "attention_factor", 0, &x->attention_factor)))
        return rc;
    if (orig)
        r->factor = (double)max_pos / orig;
    else if (!r->factor)
        return ag_error_set(c->err, AG_EFORMAT, "%s: longrope needs rope_scaling 'factor' or original_max_position_embeddings", c->path);
    r->original_max_positions = orig ? orig : max_pos;
    if (!x->attention_factor)
        x->attention_factor = r->factor <= 1 ? 1.0 : sqrt(1 + log(r->factor) / log(r->original_max_positions));
    return AG_OK;
}

/* The scaling parameters of rope_scaling / rope_parameters `rs`. */
static int rope_scaling(cfgctx *c, const agm_arch *a, json_t *rs, const char *field, ag_rope *r,
                        ag_rope_extra *x, int max_pos)
{
    int rc = rope_type(c, rs, field, a->su_yarn_longrope, r);
    if (rc != AG_OK || r->type == AG_ROPE_DEFAULT)
        return rc;
    if (r->type == AG_ROPE_LONGROPE) {
        if ((rc = obj_num(c, rs, "factor", 0, &r->factor)))
            return rc;
        return rope_longrope(c, rs, r, x, max_pos);
    }
    if ((rc = obj_num(c, rs, "factor", 0, &r->factor)))
        return rc;
    if (!(r->factor >= 1))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s': factor must be a number >= 1", c->path, field);
    r->original_max_positions = max_pos; /* dynamic: max_position_embeddings */
    if (r->type == AG_ROPE_YARN)
        return rope_yarn(c, rs, field, r, x);
    if (r->type != AG_ROPE_LLAMA3)
        return AG_OK;
    if ((rc = obj_num(c, rs, "low_freq_factor", 0, &r->low_freq_factor)) ||
        (rc = obj_num(c, rs, "high_freq_factor", 0, &r->high_freq_factor)) ||
        (rc = obj_int(c, rs, "original_max_position_embeddings", 0, 1, &r->original_max_positions)))
        return rc;
    if (!(r->low_freq_factor > 0) || !(r->high_freq_factor > r->low_freq_factor) || !r->original_max_positions)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s': llama3 needs low_freq_factor > 0, high_freq_factor > low_freq_factor and original_max_position_embeddings",
                            c->path, field);
    return AG_OK;
}

/* Transformers v5's rope_parameters per layer type (modeling_gemma3.py
 * (0018aa64) Gemma3RotaryEmbedding: rope_parameters[layer_type]): for a
 * model with a sliding-layer RoPE (Gemma-3), *rp becomes the
 * "full_attention" entry and *local the "sliding_attention" one; other
 * models, or other layer types, are refused by name. */
static int rope_per_type(cfgctx *c, const agm_arch *a, json_t **rp, json_t **local)
{
    const char *key;
    json_t *v, *full = json_object_get(*rp, "full_attention");
    json_object_foreach(*rp, key, v) if (json_is_object(v) &&
                                        (!a->k_local_theta || (strcmp(key, "full_attention") &&
                                                               strcmp(key, "sliding_attention"))))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field 'rope_parameters' has per-layer-type entries ('%.64s'), which are not supported",
                            c->path, key);
    if (!full)
        return AG_OK;
    *local = json_object_get(*rp, "sliding_attention");
    if (!json_is_object(full) || !json_is_object(*local))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field 'rope_parameters' needs objects 'full_attention' and 'sliding_attention'",
                            c->path);
    *rp = full;
    return AG_OK;
}

/* The sliding layers' RoPE (Gemma-3): rope_local_base_freq, or v5's
 * rope_parameters["sliding_attention"] (rope_theta; only the default
 * type: HF's sliding layers take no scaling). */
static int rope_local(cfgctx *c, const agm_arch *a, json_t *local, ag_model_config *g)
{
    g->rope_local = (ag_rope){.rotary_dim = g->rope.rotary_dim, .type = AG_ROPE_DEFAULT};
    if (!local)
        return cfg_num(c, a->k_local_theta, 10000.0, &g->rope_local.theta);
    ag_rope t = {0};
    int rc = rope_type(c, local, "rope_parameters.sliding_attention", 0, &t);
    if (rc == AG_OK && t.type != AG_ROPE_DEFAULT)
        rc = ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field 'rope_parameters.sliding_attention' has a scaled rope_type, which is not supported (default)",
                          c->path);
    return rc ? rc : obj_num(c, local, "rope_theta", 10000.0, &g->rope_local.theta);
}

/* GPT-J's rotary_dim (configuration_gptj.py, default 64): a count of dims;
 * null rotates pos_embd_dim = n_embd dims (GPTJAttention), which HF's
 * apply_rotary_pos_emb only broadcasts when that is the head dim. */
static int rope_dims(cfgctx *c, const agm_arch *a, ag_model_config *g)
{
    json_t *v = json_object_get(c->root, a->k_rotary_dim);
    int rc = AG_OK;
    if (v && json_is_null(v))
        g->rope.rotary_dim = g->d_model;
    else
        rc = cfg_int(c, a->k_rotary_dim, 64, 1, &g->rope.rotary_dim);
    if (rc == AG_OK && (g->rope.rotary_dim % 2 || g->rope.rotary_dim > g->head_dim))
        rc = ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d (null: n_embd) must be even and at most the head dim %d",
                          c->path, a->k_rotary_dim, g->rope.rotary_dim, g->head_dim);
    return rc;
}

/* The rotary embedding: theta, rotated dims (int(head_dim·fraction), as
 * modeling_rope_utils.py), scaling. Transformers v5 writes them all into
 * rope_parameters; earlier versions use rope_theta (GPT-NeoX
 * rotary_emb_base), partial_rotary_factor (GPT-NeoX rotary_pct) and
 * rope_scaling. */
static int cfg_rope(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    ag_rope *r = &g->rope;
    ag_rope_extra *x = &g->rope_extra;
    json_t *rp = json_object_get(c->root, "rope_parameters"), *rs = json_object_get(c->root, "rope_scaling");
    json_t *local = NULL;
    const char *field = "rope_scaling";
    double frac, theta;
    int rc;
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return ag_error_set(c->err, AG_EFORMAT, "%s: field 'rope_parameters' must be an object", c->path);
        if ((rc = rope_per_type(c, a, &rp, &local)))
            return rc;
        rs = rp;
        field = "rope_parameters";
    }
    frac = a->partial_dflt;
    if ((rc = cfg_num(c, a->k_theta, a->theta_dflt ? a->theta_dflt : 10000.0, &theta)) ||
        (a->k_partial && (rc = cfg_num(c, a->k_partial, a->partial_dflt, &frac))))
        return rc;
    if (rs && !json_is_null(rs)) {
        if (!json_is_object(rs))
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be an object or null", c->path, field);
        if ((rc = obj_num(c, rs, "rope_theta", theta, &theta)) ||
            (rc = obj_num(c, rs, "partial_rotary_factor", frac, &frac)) ||
            (rc = rope_scaling(c, a, rs, field, r, x, g->max_positions)))
            return rc;
    }
    r->theta = theta;
    r->rotary_dim = frac <= 1 ? (int)(g->head_dim * frac) : 0;
    x->interleaved = a->interleaved;
    if (a->k_rotary_dim && (rc = rope_dims(c, a, g)))
        return rc;
    if (r->type == AG_ROPE_LONGROPE && r->rotary_dim > 0 && r->rotary_dim % 2 == 0 &&
        ((rc = obj_factors(c, rs, "short_factor", r->rotary_dim / 2, &m->rope_factors[0])) ||
         (rc = obj_factors(c, rs, "long_factor", r->rotary_dim / 2, &m->rope_factors[1]))))
        return rc;
    x->short_factor = m->rope_factors[0];
    x->long_factor = m->rope_factors[1];
    if (r->rotary_dim <= 0 || r->rotary_dim % 2)
        return ag_error_set(c->err, AG_EFORMAT, "%s: rotary dims int(head_dim %d * %g) = %d must be even, above 0 and at most head_dim",
                            c->path, g->head_dim, frac, r->rotary_dim);
    char buf[160];
    const char *why = agk_rope_extra_problem(r, x, g->head_dim, buf, sizeof buf); /* what the kernel needs */
    if (why)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s': %s", c->path, field, why);
    /* Gemma-3's sliding layers: rope_local_base_freq, default rope (its
     * Gemma3RotaryEmbedding for "sliding_attention": no rope_scaling) */
    if (a->k_local_theta && (rc = rope_local(c, a, local, g)))
        return rc;
    g->max_tokens = g->max_positions;
    if (r->type == AG_ROPE_DYNAMIC) /* the length the factor was chosen for, see docs/engine.md */
        g->max_tokens = (int)fmin(floor(r->factor * g->max_positions), AGM_CAP_DIM);
    if (r->type == AG_ROPE_YARN) /* likewise: factor · original (Qwen's yarn keeps max_position_embeddings) */
        g->max_tokens = (int)fmax(g->max_positions,
                                  fmin(floor(r->factor * r->original_max_positions), AGM_CAP_DIM));
    return AG_OK;
}

/* T5's relative position buckets (configuration_t5.py: 32 buckets, max
 * distance 128); no table bounds the input. The bidirectional form halves
 * the buckets and its exact half halves them again: at least 4. */
static int cfg_buckets(cfgctx *c, const agm_arch *a, ag_model *m)
{
    int rc;
    if ((rc = cfg_int(c, a->k_buckets, 32, 4, &m->rel_buckets)) ||
        (rc = cfg_int(c, a->k_max_distance, 128, 1, &m->rel_max_distance)))
        return rc;
    if (m->rel_max_distance <= m->rel_buckets / 2)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d must exceed half of %s = %d (the exact buckets)",
                            c->path, a->k_max_distance, m->rel_max_distance, a->k_buckets, m->rel_buckets);
    m->cfg.max_tokens = AGM_CAP_DIM;
    return AG_OK;
}

/* T5's feed_forward_proj (configuration_t5.py): "ACT" or "gated-ACT",
 * "gated-gelu" meaning gelu_new ("for backwards compatibility"). */
static int cfg_ff_proj(cfgctx *c, const agm_arch *a, ag_model *m)
{
    const char *s, *dash;
    int rc = cfg_str(c, a->k_ff_proj, "relu", &s);
    if (rc != AG_OK)
        return rc;
    dash = strchr(s, '-');
    if (dash && (strncmp(s, "gated-", 6) || strchr(dash + 1, '-')))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = \"%.64s\" is not ACT or gated-ACT", c->path,
                            a->k_ff_proj, s);
    m->cfg.mlp = dash ? AG_MLP_GATED : AG_MLP_PLAIN;
    return act_named(c, a->k_ff_proj, !strcmp(s, "gated-gelu") ? "gelu_new" : dash ? dash + 1 : s, m);
}

/* Learned positions: table rows, the first row used, the longest input. */
static int cfg_positions(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc, pad = 0;
    const char *kind;
    int alibi = 0;
    if ((rc = cfg_bool(c, a->k_alibi, 0, &alibi)))
        return rc;
    g->positions = alibi ? AG_POS_ALIBI : a->positions;
    if (g->positions == AG_POS_ROPE)
        return cfg_rope(c, a, m);
    if (g->positions == AG_POS_RELATIVE)
        return cfg_buckets(c, a, m);
    if (g->positions == AG_POS_ALIBI) { /* no table: the length is the config's, if any */
        g->alibi = a->alibi;
        g->max_tokens = a->k_positions && !a->k_alibi ? g->max_positions : AGM_CAP_DIM;
        return AG_OK;
    }
    if (a->k_pos_kind && (rc = cfg_str(c, a->k_pos_kind, "absolute", &kind)))
        return rc;
    if (a->k_pos_kind && strcmp(kind, "absolute"))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: position_embedding_type \"%.64s\" is not supported (only \"absolute\")",
                            c->path, kind);
    g->position_offset = a->pos_extra; /* OPT: rows position + 2 */
    if (a->positions == AG_POS_PADDED) {
        if ((rc = cfg_int(c, a->k_pad, 1, 0, &pad)))
            return rc;
        g->position_offset = pad + 1;
    }
    g->max_tokens = g->max_positions + a->pos_extra - g->position_offset + g->n_registers;
    if (g->max_tokens < 1)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d leaves no position below max_position_embeddings = %d",
                            c->path, a->k_pad, pad, g->max_positions);
    return AG_OK;
}

/* ---- sliding windows ---------------------------------------------------- */

/* sliding_window: absent -> the architecture's default, null -> none. */
static int window_size(cfgctx *c, const agm_arch *a, int *w)
{
    json_t *v = json_object_get(c->root, "sliding_window");
    if (!v) {
        *w = a->window_dflt;
        return AG_OK;
    }
    *w = 0;
    return json_is_null(v) ? AG_OK : cfg_int(c, "sliding_window", -1, 1, w);
}

/* layer_types (configuration_qwen2.py, configuration_gemma2.py): one
 * "full_attention" or "sliding_attention" per layer. */
static int layer_types(cfgctx *c, json_t *lt, int w, ag_model *m)
{
    if (!json_is_array(lt) || json_array_size(lt) != (size_t)m->cfg.n_layer)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field 'layer_types' must be an array of %d strings",
                            c->path, m->cfg.n_layer);
    for (int i = 0; i < m->cfg.n_layer; i++) {
        const char *t = json_string_value(json_array_get(lt, (size_t)i));
        if (t && !strcmp(t, "sliding_attention"))
            m->window[i] = w;
        else if (!t || strcmp(t, "full_attention"))
            return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field 'layer_types' entry %d is \"%.64s\" (only full_attention, sliding_attention)",
                                c->path, i, t ? t : "(not a string)");
    }
    return AG_OK;
}

/* modeling_modernbert.py (000c33fd) ModernBertAttention: layer i is local
 * when i % global_attn_every_n_layers (3) != 0; _update_attention_mask
 * keeps keys with |i − j| <= local_attention // 2 (128), not causal: the
 * kernel's bidirectional window local_attention // 2 + 1. */
static int every_n_windows(cfgctx *c, ag_model *m)
{
    int every = 0, local = 0, rc;
    if ((rc = cfg_int(c, "global_attn_every_n_layers", 3, 1, &every)) ||
        (rc = cfg_int(c, "local_attention", 128, 0, &local)))
        return rc;
    for (int i = 0; i < m->cfg.n_layer; i++)
        if (i % every)
            m->window[i] = m->cfg.sliding_window = local / 2 + 1;
    return AG_OK;
}

static int cfg_windows(cfgctx *c, const agm_arch *a, ag_model *m)
{
    int w = 0, use = 1, first = 0, rc = AG_OK;
    if (!(m->window = calloc((size_t)m->cfg.n_layer, sizeof *m->window)))
        return ag_error_set(c->err, AG_ENOMEM, "%s: out of memory", c->path);
    if (a->windows == AGM_WIN_NONE)
        return AG_OK;
    if (a->windows == AGM_WIN_EVERY_N)
        return every_n_windows(c, m);
    if ((rc = window_size(c, a, &w)))
        return rc;
    if ((a->windows == AGM_WIN_QWEN2 || a->windows == AGM_WIN_USE_ALL) &&
        (rc = cfg_bool(c, "use_sliding_window", 0, &use)))
        return rc;
    if (a->windows == AGM_WIN_QWEN2 && (rc = cfg_int(c, "max_window_layers", 28, 0, &first)))
        return rc;
    if (a->windows == AGM_WIN_PATTERN && (rc = cfg_int(c, "sliding_window_pattern", 6, 1, &first)))
        return rc; /* configuration_gemma3.py: every layer but each pattern-th */
    if (a->k_local_theta && !w) /* which layers take rope_local_base_freq */
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field 'sliding_window' is null; a Gemma-3 without sliding layers is not supported",
                            c->path);
    if (!use || !w)
        return AG_OK;
    json_t *lt = json_object_get(c->root, "layer_types");
    if (a->windows != AGM_WIN_ALL && a->windows != AGM_WIN_USE_ALL && lt && !json_is_null(lt))
        rc = layer_types(c, lt, w, m);
    else
        for (int i = 0; i < m->cfg.n_layer; i++)
            m->window[i] = a->windows == AGM_WIN_ALL || a->windows == AGM_WIN_USE_ALL ? w
                           : a->windows == AGM_WIN_QWEN2   ? (i >= first ? w : 0)
                           : a->windows == AGM_WIN_PATTERN ? ((i + 1) % first ? w : 0)
                                                           : (i % 2 == 0 ? w : 0);
    for (int i = 0; i < m->cfg.n_layer; i++)
        if (m->window[i])
            m->cfg.sliding_window = w;
    return rc;
}

/* ---- the rest of the architecture --------------------------------------- */

static int cfg_flag(cfgctx *c, agm_flag f, int *out)
{
    return cfg_bool(c, f.key, f.dflt, out);
}

/* Residual wiring, norms, biases. */
static int cfg_wiring(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc, sw = 1, no_final = 0;
    if ((rc = cfg_bool(c, a->k_residual, 1, &sw)) || (rc = cfg_bool(c, a->k_no_final, 0, &no_final)) ||
        (rc = cfg_bool(c, a->k_affine, 1, &m->norm_affine)) || (rc = cfg_bool(c, a->k_norm_bias, 1, &m->norm_bias)) ||
        (rc = cfg_flag(c, a->bias_qkv, &g->qkv_bias)) ||
        (rc = cfg_flag(c, a->bias_o, &g->o_bias)) || (rc = cfg_flag(c, a->bias_mlp, &g->mlp_bias)))
        return rc;
    g->residual = a->k_residual ? (sw ? a->res_true : a->res_false) : a->residual;
    g->norm = a->norm;
    g->sandwich_norms = a->sandwich;
    g->no_pre_norms = a->no_pre_norm;
    g->first_no_pre_norm = a->first_no_norm1;
    g->qk_norm = a->qk_norm;
    g->embed_norm = a->emb_norm != NULL;
    /* modeling_opt.py OPTDecoder: a post-LN stack has no final norm. */
    g->final_norm = a->final_norm && g->residual != AG_RESIDUAL_POST && !no_final;
    g->qkv = a->qkv;
    g->mlp = a->mlp;
    g->causal = a->causal;
    return AG_OK;
}

/* Score scale and soft-capping; Gemma's embedding scale. */
static int cfg_scores(cfgctx *c, const agm_arch *a, ag_model_config *g)
{
    int rc, on = 1, bidir = 0;
    double scalar = 0;
    g->attn_scale = 1.0 / sqrt((double)g->head_dim);
    g->scale_query = a->scale_query;
    if ((rc = cfg_bool(c, a->k_scale_on, 1, &on)) ||
        (rc = cfg_bool(c, a->k_inv_layer, 0, &g->scale_by_inverse_layer)) ||
        (rc = cfg_bool(c, a->k_bidir, 0, &bidir)) ||
        (a->k_query_scalar && (rc = cfg_num(c, a->k_query_scalar, 256, &scalar))))
        return rc;
    if (bidir)
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' is true; bidirectional Gemma is not supported",
                            c->path, a->k_bidir);
    if (!on || a->no_scale) /* modeling_gpt2.py: scale_attn_weights = false; T5 */
        g->attn_scale = 1.0;
    if (scalar > 0) /* modeling_gemma2.py: query_pre_attn_scalar**-0.5 */
        g->attn_scale = 1.0 / sqrt(scalar);
    json_t *cap = a->k_softcap ? json_object_get(c->root, a->k_softcap) : NULL;
    if (a->k_softcap && (!cap || !json_is_null(cap)) &&
        (rc = cfg_num(c, a->k_softcap, a->softcap_dflt, &g->softcap)))
        return rc;
    int sq = a->embed_sqrt; /* BART: scale_embedding (default false) */
    if (a->k_embed_sqrt && (rc = cfg_bool(c, a->k_embed_sqrt, 0, &sq)))
        return rc;
    g->embed_scale = sq ? sqrt((double)g->d_model) : 1.0;
    return AG_OK;
}

/* ---- ALiBi models ------------------------------------------------------- */

/* The descriptor's refused booleans (arch.h k_refuse): true is refused. */
static int cfg_refused(cfgctx *c, const agm_arch *a)
{
    for (int i = 0; i < 4 && a->k_refuse[i]; i++) {
        int on = 0, rc = cfg_bool(c, a->k_refuse[i], 0, &on);
        if (rc != AG_OK)
            return rc;
        if (on)
            return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' is true, which is not supported for model_type %s",
                                c->path, a->k_refuse[i], a->model_type);
    }
    return AG_OK;
}

/* A refused MPT setting: what HF's MptModel does with it differs from the
 * original MosaicML model, so neither number would be the one asked for. */
static int mpt_refuse(cfgctx *c, const char *field, const char *why)
{
    return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' %s", c->path, field, why);
}

/* modeling_mpt.py (0206c7b0): MptAttention's softmax_scale (null:
 * 1/√head_dim); MptModel builds the bias with build_alibi_bias's default
 * alibi_bias_max 8 and applies it whatever attn_config.alibi says; no
 * module has a bias (no_bias), none clips Q/K/V (clip_qkv) or norms them
 * (qk_ln), and MptMLP is 4·d_model wide (expansion_ratio). */
static int cfg_mpt(cfgctx *c, const agm_arch *a, ag_model_config *g)
{
    json_t *ac = json_object_get(c->root, a->k_attn_cfg), *clip;
    int rc, on = 1, ln = 0, no_bias = 1, ratio = 4;
    double scale = 0, bias_max = 8;
    const char *type = "multihead_attention";
    if (ac && !json_is_null(ac) && !json_is_object(ac))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be an object", c->path, a->k_attn_cfg);
    ac = json_is_object(ac) ? ac : NULL;
    if ((rc = cfg_bool(c, "no_bias", 1, &no_bias)) || (rc = cfg_int(c, "expansion_ratio", 4, 1, &ratio)))
        return rc;
    if (ac && ((rc = obj_num(c, ac, "softmax_scale", 0, &scale)) ||
               (rc = obj_num(c, ac, "alibi_bias_max", 8, &bias_max)) ||
               (rc = obj_str(c, ac, "attn_type", type, &type))))
        return rc;
    json_t *v = ac ? json_object_get(ac, "alibi") : NULL, *q = ac ? json_object_get(ac, "qk_ln") : NULL;
    on = !json_is_false(v);
    ln = json_is_true(q);
    clip = ac ? json_object_get(ac, "clip_qkv") : NULL;
    if (!no_bias)
        return mpt_refuse(c, "no_bias", "is false: HF's MptModel has no biases, it would drop them");
    if (ratio != 4)
        return mpt_refuse(c, "expansion_ratio", "is not 4: HF's MptMLP is 4 * d_model wide");
    if (!on)
        return mpt_refuse(c, "attn_config.alibi", "is false: HF's MptModel applies ALiBi regardless");
    if (ln)
        return mpt_refuse(c, "attn_config.qk_ln", "is true: HF's MptAttention has no QK LayerNorm");
    if (clip && !json_is_null(clip))
        return mpt_refuse(c, "attn_config.clip_qkv", "is set: the modeling_mpt.py followed (0206c7b0) ignores it and later ones clamp Wqkv's output; clipping is not supported");
    if (strcmp(type, "multihead_attention"))
        return mpt_refuse(c, "attn_config.attn_type", "is not multihead_attention: HF's MptAttention is multi-head");
    if (bias_max != 8)
        return mpt_refuse(c, "attn_config.alibi_bias_max", "is not 8: HF's MptModel always builds the bias with 8");
    g->alibi_bias_max = bias_max;
    if (scale > 0)
        g->attn_scale = scale;
    return AG_OK;
}

/* The slopes of an ALiBi model (ag_alibi_slopes), after its checks. */
static int cfg_alibi(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc = cfg_refused(c, a);
    if (rc != AG_OK || g->positions != AG_POS_ALIBI)
        return rc;
    if (a->alibi == AG_ALIBI_MPT && (rc = cfg_mpt(c, a, g)))
        return rc;
    if (g->n_head > AGK_ALIBI_MAX_HEADS)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d: ALiBi slopes for more than %d heads are not supported",
                            c->path, a->k_heads, g->n_head, AGK_ALIBI_MAX_HEADS);
    if (!(m->alibi_slopes = malloc((size_t)g->n_head * sizeof *m->alibi_slopes)))
        return ag_error_set(c->err, AG_ENOMEM, "%s: out of memory", c->path);
    if (ag_alibi_slopes(g->alibi, g->n_head, g->alibi_bias_max, m->alibi_slopes) != AG_OK)
        return ag_error_set(c->err, AG_EFORMAT, "%s: no ALiBi slopes for %d heads", c->path, g->n_head);
    return AG_OK;
}

/* ---- a model_type of several rows ------------------------------------- */

/* Whether row a's conditions (arch.h agm_sel) hold in config.json. */
static int row_applies(cfgctx *c, const agm_arch *a)
{
    for (int i = 0; i < 3 && a->sel[i].key; i++) {
        json_t *v = json_object_get(c->root, a->sel[i].key);
        int x = a->sel[i].dflt;
        if (json_is_boolean(v))
            x = json_is_true(v);
        else if (json_is_integer(v))
            x = (int)json_integer_value(v);
        else if (v && !json_is_null(v))
            return 0;
        if (x != a->sel[i].want)
            return 0;
    }
    return 1;
}

/* The descriptor's aliases (arch.h): an absent key takes its alias's value. */
static void cfg_aliases(cfgctx *c, const agm_arch *a)
{
    for (int i = 0; i < 3 && a->aliases[i][0]; i++) {
        json_t *v = json_object_get(c->root, a->aliases[i][1]);
        if (v && !json_object_get(c->root, a->aliases[i][0]))
            json_object_set(c->root, a->aliases[i][0], v);
    }
}

/* The row of model_type mt that applies to this config.json. */
static int cfg_row(cfgctx *c, const char *mt, int stack, const agm_arch **out)
{
    const agm_arch *a = agm_arch_find(mt);
    if (!a)
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: model_type \"%.64s\" is not supported (%s)", c->path, mt,
                            agm_arch_names());
    if (a->stack && !stack) /* the rows of an encoder–decoder model are its stacks */
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: model_type %s is an encoder-decoder model (an encoder and a decoder stack): it loads with ag_seq2seq_load, and a command that takes one sequence cannot run it (a target sequence is not yet supported)",
                            c->path, mt);
    for (int i = 0; (a = agm_arch_at(i)); i++) /* Whisper: its one-stack row is the encoder */
        if (!strcmp(a->model_type, mt) && (a->stack == stack || (stack == 1 && !a->stack)) &&
            row_applies(c, a)) {
            cfg_aliases(c, a);
            *out = a;
            return AG_OK;
        }
    return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: model_type %s with this combination of new_decoder_architecture, num_ln_in_parallel_attn, parallel_attn and multi_query is not supported (see docs/engine.md)",
                        c->path, mt);
}

/* ---- mixture of experts ------------------------------------------------- */

/* Qwen2-MoE's sparse layers (modeling_qwen2_moe.py Qwen2MoeDecoderLayer):
 * layer l has experts iff l is not in mlp_only_layers and num_experts > 0
 * and (l + 1) % decoder_sparse_step == 0. */
static int moe_sparse_layers(cfgctx *c, const agm_arch *a, ag_model *m)
{
    int step = 1, L = m->cfg.n_layer, rc;
    if (a->sparse_step && (rc = cfg_int(c, "decoder_sparse_step", 1, 1, &step)))
        return rc;
    for (int l = 0; l < L; l++)
        m->sparse[l] = (l + 1) % step == 0;
    json_t *only = a->sparse_step ? json_object_get(c->root, "mlp_only_layers") : NULL;
    if (!only || json_is_null(only))
        return AG_OK;
    if (!json_is_array(only))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field 'mlp_only_layers' must be a list", c->path);
    for (size_t i = 0; i < json_array_size(only); i++) {
        json_t *v = json_array_get(only, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= L)
            return ag_error_set(c->err, AG_EFORMAT, "%s: field 'mlp_only_layers' holds an entry that is not a layer index (0..%d)",
                                c->path, L - 1);
        m->sparse[json_integer_value(v)] = 0;
    }
    return AG_OK;
}

/* Experts, top-k and widths (num_local_experts / num_experts,
 * num_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size,
 * norm_topk_prob; HF's defaults in the descriptor); OLMoE's clip_qkv, which
 * clamps q, k, v, is refused when set. */
static int cfg_experts(cfgctx *c, const agm_arch *a, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc;
    json_t *clip = a->k_clip ? json_object_get(c->root, a->k_clip) : NULL;
    if (clip && !json_is_null(clip))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' is set; clamping q, k, v is not supported",
                            c->path, a->k_clip);
    if ((rc = cfg_int(c, a->k_experts, a->experts_dflt, 0, &g->n_expert)) ||
        (rc = cfg_int(c, a->k_topk, a->topk_dflt, 1, &g->top_k)) ||
        (rc = (a->k_expert_ff ? cfg_int(c, a->k_expert_ff, a->expert_ff_dflt, 1, &g->d_ff_expert) : AG_OK)) ||
        (rc = (a->k_shared_ff ? cfg_int(c, a->k_shared_ff, a->shared_ff_dflt, 0, &g->d_ff_shared) : AG_OK)) ||
        (rc = cfg_bool(c, a->k_norm_topk, a->norm_topk_dflt, &g->norm_topk)))
        return rc;
    if (!a->k_expert_ff) /* Mixtral: the experts are intermediate_size wide */
        g->d_ff_expert = g->d_ff;
    if (g->n_expert && g->top_k > g->n_expert)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d is above the %d experts", c->path,
                            a->k_topk, g->top_k, g->n_expert);
    if (!g->n_expert) { /* Qwen2-MoE with num_experts 0: every layer dense */
        g->top_k = 0;
        return AG_OK;
    }
    if (!(m->sparse = calloc((size_t)g->n_layer, sizeof *m->sparse)))
        return ag_error_set(c->err, AG_ENOMEM, "%s: out of memory", c->path);
    return moe_sparse_layers(c, a, m);
}

/* ---- config.json -------------------------------------------------------- */

static int cfg_model(cfgctx *c, ag_model *m)
{
    const char *mt;
    const agm_arch *a = NULL;
    int rc = cfg_str(c, "model_type", NULL, &mt);
    if (rc != AG_OK || (rc = cfg_row(c, mt, m->stack, &a)))
        return rc;
    m->arch = a;
    m->cfg.arch = a->arch;
    m->cfg.modeling = a->modeling;
    snprintf(m->cfg.model_type, sizeof m->cfg.model_type, "%s", mt);
    if ((rc = cfg_sizes(c, a, m)) || (rc = cfg_act(c, a->k_act, a->act, m)) ||
        (rc = (a->k_eps ? cfg_num(c, a->k_eps, a->eps, &m->cfg.norm_eps) : AG_OK)) ||
        (rc = cfg_positions(c, a, m)) || (rc = cfg_wiring(c, a, m)) ||
        (rc = cfg_scores(c, a, &m->cfg)) || (rc = cfg_alibi(c, a, m)))
        return rc;
    if (!a->k_eps)
        m->cfg.norm_eps = a->eps;
    if (a->k_ff_proj && (rc = cfg_ff_proj(c, a, m)))
        return rc;
    if (a->k_experts && (rc = cfg_experts(c, a, m)))
        return rc;
    /* the decoder's teacher forcing starts from it (HF shift_tokens_right) */
    m->decoder_start = -1;
    if (m->stack == 2 && json_object_get(c->root, "decoder_start_token_id") &&
        (rc = cfg_int(c, "decoder_start_token_id", 0, 0, &m->decoder_start)))
        return rc;
    return cfg_windows(c, a, m);
}

/* CLIPModel's config.json (configuration_clip.py @000f1ffdbf1c CLIPConfig):
 * the towers' configs nested as text_config and vision_config, tensors
 * text_model.* and vision_model.*. The tower that takes `input` becomes the
 * root, read as a clip_text_model / clip_vision_model folder; a size key
 * the nested dict lacks takes CLIPTextConfig's / CLIPVisionConfig's
 * default, as CLIPConfig fills it (the descriptor holds the others). */
static int clip_tower(cfgctx *c, ag_input_kind input, ag_model *m)
{
    static const struct {
        const char *key;
        int text, vision;
    } dflt[] = {{"hidden_size", 512, 768}, {"intermediate_size", 2048, 3072}, {"num_hidden_layers", 12, 12},
                {"num_attention_heads", 8, 12}, {"vocab_size", 49408, 0}, {"max_position_embeddings", 77, 0}};
    if (input == AG_INPUT_FEATURES)
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: model_type \"clip\" has a text and a vision tower; audio features are neither's input",
                            c->path);
    int text = input == AG_INPUT_TOKENS;
    const char *key = text ? "text_config" : "vision_config";
    json_t *sub = json_object_get(c->root, key);
    if (sub && !json_is_object(sub))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' is not an object", c->path, key);
    json_t *t = sub ? json_deep_copy(sub) : json_object();
    if (!t)
        return ag_error_set(c->err, AG_ENOMEM, "%s: out of memory", c->path);
    json_object_set_new(t, "model_type", json_string(text ? "clip_text_model" : "clip_vision_model"));
    for (size_t k = 0; k < sizeof dflt / sizeof *dflt; k++)
        if ((text ? dflt[k].text : dflt[k].vision) && !json_object_get(t, dflt[k].key))
            json_object_set_new(t, dflt[k].key, json_integer(text ? dflt[k].text : dflt[k].vision));
    json_decref(c->root);
    c->root = t;
    m->clip_towers = 1;
    return AG_OK;
}

int agm_read_config(const char *dir, ag_input_kind input, ag_model *m, ag_error *err)
{
    cfgctx c = {.err = err};
    snprintf(c.path, sizeof c.path, "%s/config.json", dir);
    int rc = agi_json_load(c.path, AGM_CAP_JSON, JSON_REJECT_DUPLICATES, &c.root, err);
    if (rc != AG_OK)
        return rc;
    json_t *mt = json_is_object(c.root) ? json_object_get(c.root, "model_type") : NULL;
    if (json_is_string(mt) && !strcmp(json_string_value(mt), "clip") && (rc = clip_tower(&c, input, m))) {
        json_decref(c.root);
        return rc;
    }
    rc = json_is_object(c.root) ? cfg_model(&c, m)
                                : ag_error_set(err, AG_EFORMAT, "%s: not a JSON object", c.path);
    json_decref(c.root);
    return rc;
}

/* The first row of dir's config.json model_type (NULL: none, unreadable). */
const agm_arch *agm_dir_arch(const char *dir)
{
    char path[4200];
    json_t *root;
    if (!dir)
        return NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (agi_json_load(path, AGM_CAP_JSON, 0, &root, NULL) != AG_OK)
        return NULL;
    json_t *mt = json_is_object(root) ? json_object_get(root, "model_type") : NULL;
    const agm_arch *a = json_is_string(mt) ? agm_arch_find(json_string_value(mt)) : NULL;
    json_decref(root);
    return a;
}

int ag_model_dir_is_seq2seq(const char *dir)
{
    const agm_arch *a = agm_dir_arch(dir);
    return a && a->stack;
}

/* ---- a loaded model's config by name (attngeom/access.h) ------------------ */

int ag_model_dim(const ag_model *m, const char *name, long *value, ag_error *err)
{
    if (!m) /* a binding's closed handle arrives as NULL */
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    const ag_model_config *g = ag_model_get_config(m);
    const struct {
        const char *name;
        int value;
    } dims[] = {{"n_layer", g->n_layer}, {"n_head", g->n_head}, {"n_kv_head", g->n_kv_head},
                {"d_model", g->d_model}, {"head_dim", g->head_dim}, {"d_ff", g->d_ff},
                {"max_positions", g->max_positions}, {"max_tokens", g->max_tokens},
                {"vocab_size", g->vocab_size}, {"causal", g->causal},
                {"input_kind", (int)g->input_kind}, {"in_channels", g->in_channels},
                {"image_height", g->image_height}, {"image_width", g->image_width},
                {"patch_height", g->patch_height}, {"patch_width", g->patch_width},
                {"max_frames", g->max_frames}, {"n_expert", g->n_expert}, {"top_k", g->top_k},
                {"d_ff_expert", g->d_ff_expert}, {"d_ff_shared", g->d_ff_shared},
                {"n_registers", g->n_registers}};
    for (size_t k = 0; name && k < sizeof dims / sizeof *dims; k++)
        if (strcmp(name, dims[k].name) == 0)
            return *value = dims[k].value, AG_OK;
    return ag_error_set(err, AG_ENOTFOUND, "no config value '%s'", name ? name : "(null)");
}

const char *ag_model_type(const ag_model *m)
{
    return m ? ag_model_get_config(m)->model_type : "";
}
