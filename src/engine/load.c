/* load.c — load a Hugging Face model folder: config.json (config.c), then
 * the weights (model.safetensors or the shards listed in
 * model.safetensors.index.json) named by the model_type's descriptor
 * (arch.c), into the ag_model of model_int.h. One loader for every
 * architecture: which tensors exist, their names and shapes all follow from
 * the descriptor and the normalised config.
 *
 * Memory: the weight files stay open, each mapped once read-only (by its
 * ag_safetensors handle), for the model's lifetime, and each matrix is a
 * pointer into its file in the stored dtype (no copy, no conversion), so a
 * model costs its file size in (shared, evictable) page cache plus a few
 * small float vectors (norms, biases). Every check (dtype, shape, NaN/Inf)
 * is still done at load, the last by one streaming scan of the stored bits.
 *
 * Tensor names follow what save_pretrained writes for the XModel and the
 * XFor... head classes: the base-model prefix ("transformer.", "bert.",
 * "model.", "model.decoder.", ...) is optional, detected once from the token
 * embedding; error messages name the full name the file should hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "io/io_internal.h"
#include "model_int.h"

#define NAME_MAX_LEN 512

/* ---- weight source: one file or the shards of an index ------------------ */

typedef struct {
    const char *dir;
    const char *what;       /* "model.safetensors" or the index name, for messages */
    ag_safetensors **st;    /* nst open files: names, dtypes, shapes, bytes */
    size_t nst;
    const char *prefix;     /* the detected base-model prefix, or "" */
} wsrc;

static void close_all(ag_safetensors **st, size_t n)
{
    for (size_t i = 0; st && i < n; i++)
        ag_st_close(st[i]);
    free(st);
}

/* The tensor called `name` and its file, or NULL. */
static const ag_tensor_info *wsrc_find(const wsrc *w, const char *name, size_t *owner)
{
    for (size_t i = 0; i < w->nst; i++) {
        const ag_tensor_info *t = ag_st_find(w->st[i], name);
        if (t) {
            *owner = i;
            return t;
        }
    }
    return NULL;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static int wsrc_add(wsrc *w, const char *file, ag_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->dir, file);
    ag_safetensors **grown = realloc(w->st, (w->nst + 1) * sizeof *grown);
    if (!grown)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    w->st = grown;
    int rc = ag_st_open(path, &w->st[w->nst], err);
    if (rc == AG_OK)
        w->nst++;
    return rc;
}

/* A shard name from the index must stay inside the folder. */
static int shard_name_ok(const char *s)
{
    return s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

static int already_listed(json_t *seen, const char *file)
{
    size_t i;
    json_t *v;
    json_array_foreach(seen, i, v)
        if (!strcmp(json_string_value(v), file))
            return 1;
    return 0;
}

/* model.safetensors.index.json: {"weight_map": {tensor: shard file}}. */
static int wsrc_open_index(wsrc *w, const char *ipath, ag_error *err)
{
    json_t *root;
    int rc = agi_json_load(ipath, AGM_CAP_JSON, JSON_REJECT_DUPLICATES, &root, err);
    if (rc != AG_OK)
        return rc;
    json_t *map = json_object_get(root, "weight_map"), *seen = json_array();
    if (!json_is_object(map))
        rc = ag_error_set(err, AG_EFORMAT, "%s: field 'weight_map' is missing or not an object", ipath);
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val) {
        if (rc != AG_OK)
            break;
        const char *f = json_string_value(val);
        if (!f || !shard_name_ok(f))
            rc = ag_error_set(err, AG_EFORMAT, "%s: weight_map entry '%.200s' is not a file name in the folder", ipath, key);
        else if (!already_listed(seen, f)) {
            if (json_array_size(seen) >= AGM_CAP_SHARDS)
                rc = ag_error_set(err, AG_ELIMIT, "%s: more than %d shards", ipath, AGM_CAP_SHARDS);
            else {
                json_array_append_new(seen, json_string(f));
                rc = wsrc_add(w, f, err);
            }
        }
    }
    json_decref(seen);
    json_decref(root);
    return rc;
}

/* Prefer model.safetensors, as transformers' from_pretrained does. */
static int wsrc_open(wsrc *w, const char *dir, ag_error *err)
{
    char p[4096];
    memset(w, 0, sizeof *w);
    w->dir = dir;
    w->prefix = "";
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (file_exists(p)) {
        w->what = "model.safetensors";
        return wsrc_add(w, "model.safetensors", err);
    }
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    if (file_exists(p)) {
        w->what = "model.safetensors.index.json";
        return wsrc_open_index(w, p, err);
    }
    return ag_error_set(err, AG_EIO, "%s: no model.safetensors or model.safetensors.index.json", dir);
}

/* The first of the descriptor's prefixes under which the token embedding
 * (or the descriptor's probe tensor: ViT's cls_token, Whisper's conv1)
 * exists, else none: a prefixed file is then read consistently. */
static void wsrc_detect_prefix(wsrc *w, const agm_arch *a)
{
    char n[NAME_MAX_LEN];
    size_t k;
    for (int i = 0; i < 3 && a->prefixes[i]; i++) {
        snprintf(n, sizeof n, "%s%s", a->prefixes[i], a->probe ? a->probe : a->tok);
        if (wsrc_find(w, n, &k)) {
            w->prefix = a->prefixes[i];
            return;
        }
    }
}

/* ---- tensors ------------------------------------------------------------ */

typedef struct {
    wsrc *w;
    ag_model *m;
    ag_error *err;
    int layer;  /* names are relative to this layer's prefix; -1: the model's */
} loader;

/* prefix [layer prefix] stem suffix into full (NAME_MAX_LEN). */
static void full_name(const loader *L, const char *stem, const char *suffix, char *full)
{
    char lp[64] = "";
    if (L->layer >= 0)
        snprintf(lp, sizeof lp, L->m->arch->layer, L->layer);
    snprintf(full, NAME_MAX_LEN, "%s%s%s%s", L->w->prefix, lp, stem, suffix);
}

void agm_shape_str(char *buf, size_t size, int ndim, const size_t *shape)
{
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, i ? ", %zu" : "%zu", shape[i]);
    if (k < size)
        snprintf(buf + k, size - k, ndim == 1 ? ",)" : ")");
}

static int check_info(const loader *L, const char *full, const ag_tensor_info *t,
                      int ndim, const size_t *shape)
{
    if (t->dtype != AG_DT_F32 && t->dtype != AG_DT_F16 && t->dtype != AG_DT_BF16)
        return ag_error_set(L->err, AG_EDTYPE, "%s/%s: tensor '%s' has dtype %s; weights must be F32, F16 or BF16",
                            L->w->dir, L->w->what, full, ag_dtype_name(t->dtype));
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char got[128], want[128];
        agm_shape_str(got, sizeof got, t->ndim, t->shape);
        agm_shape_str(want, sizeof want, ndim, shape);
        return ag_error_set(L->err, AG_ESHAPE, "%s/%s: tensor '%s' has shape %s, expected %s",
                            L->w->dir, L->w->what, full, got, want);
    }
    return AG_OK;
}

/* Find stem+suffix (or stem+alt when the first is absent; alt may be NULL),
 * check its dtype, shape and values, and point *out at its stored bytes.
 * The message of a missing tensor names the first (preferred) name. */
static int find_tensor(const loader *L, const char *stem, const char *suffix, const char *alt,
                       int ndim, const size_t *shape, agm_tensor *out)
{
    char full[NAME_MAX_LEN], full2[NAME_MAX_LEN];
    size_t k = 0;
    full_name(L, stem, suffix, full);
    const ag_tensor_info *t = wsrc_find(L->w, full, &k);
    if (!t && alt) {
        full_name(L, stem, alt, full2);
        if ((t = wsrc_find(L->w, full2, &k)))
            memcpy(full, full2, sizeof full2);
    }
    if (!t)
        return ag_error_set(L->err, AG_ENOTFOUND, "%s/%s: tensor '%s' not found",
                            L->w->dir, L->w->what, full);
    int rc = check_info(L, full, t, ndim, shape);
    if (rc != AG_OK)
        return rc;
    *out = (agm_tensor){agi_st_bytes(L->w->st[k], t), t->dtype, t->nelem};
    if (!out->p)
        return ag_error_set(L->err, AG_EFORMAT, "%s/%s: tensor '%s' lies outside its file",
                            L->w->dir, L->w->what, full);
    size_t bad = agm_first_nonfinite(out);
    if (bad < out->n)
        return ag_error_set(L->err, AG_ENONFINITE, "%s/%s: tensor '%s' holds a non-finite value at index %zu",
                            L->w->dir, L->w->what, full, bad);
    return AG_OK;
}

/* A (rows, cols) matrix, left in its file. */
static int load_mat(loader *L, const char *name, int rows, int cols, agm_tensor *out)
{
    size_t s[2] = {(size_t)rows, (size_t)cols};
    return find_tensor(L, name, "", NULL, 2, s, out);
}

/* A vector of len values (a norm or a bias; alt as in find_tensor), copied
 * into *out as malloc'ed floats: small, and used every layer in place. */
static int load_vec(loader *L, const char *stem, const char *suffix, const char *alt, int len, float **out)
{
    size_t s[1] = {(size_t)len};
    agm_tensor t;
    int rc = find_tensor(L, stem, suffix, alt, 1, s, &t);
    if (rc != AG_OK)
        return rc;
    if (!(*out = malloc((size_t)len * sizeof **out)))
        return ag_error_set(L->err, AG_ENOMEM, "tensor '%s%s': out of memory", stem, suffix);
    agm_to_float(&t, 0, t.n, *out);
    return AG_OK;
}

/* "<stem>.weight"/"<stem>.bias" of a projection: nn.Linear [out, in], or
 * GPT-2's Conv1D [in, out]. */
static int load_lin(loader *L, const char *stem, int in, int out, int bias, agm_lin *lin)
{
    int linear = !L->m->arch->conv1d;
    lin->in = in;
    lin->out = out;
    lin->linear = linear;
    size_t s[2] = {(size_t)(linear ? out : in), (size_t)(linear ? in : out)};
    int rc = find_tensor(L, stem, ".weight", NULL, 2, s, &lin->w);
    if (rc == AG_OK && lin->w.n > L->m->max_mat)
        L->m->max_mat = lin->w.n; /* the pass converts one such matrix at a time */
    if (rc == AG_OK && bias)
        rc = load_vec(L, stem, ".bias", NULL, out, &lin->b);
    return rc;
}

/* A norm of the model's kind: LayerNorm weight and bias (legacy gamma/beta
 * accepted: TF-converted BERT checkpoints, renamed by HF on load), RMSNorm
 * weight; nothing when OPT's norms have no parameters. stem NULL: the
 * architecture has no such norm. */
static int load_norm(loader *L, const char *stem, agm_norm *nm)
{
    int d = L->m->cfg.d_model, layer = L->m->cfg.norm == AG_NORM_LAYER;
    if (!stem || !L->m->norm_affine)
        return AG_OK;
    int rc = load_vec(L, stem, ".weight", layer ? ".gamma" : NULL, d, &nm->w);
    /* nn.LayerNorm(bias=False): a zero bias (x + 0 is x): MPT always,
     * ModernBERT unless norm_bias */
    if (rc == AG_OK && layer && (L->m->arch->norm_no_bias || !L->m->norm_bias) &&
        !(nm->b = calloc((size_t)d, sizeof *nm->b)))
        return ag_error_set(L->err, AG_ENOMEM, "tensor '%s.bias': out of memory", stem);
    if (rc == AG_OK && layer && !nm->b)
        rc = load_vec(L, stem, ".bias", ".beta", d, &nm->b);
    return rc;
}

/* QK-norm weights (RMSNorm kinds: no bias) of q_norm and k_norm: head_dim
 * values (per head) or the projection's width (whole projection). */
static int load_qk_norm(loader *L, agm_layer *y)
{
    const ag_model_config *g = &L->m->cfg;
    const agm_arch *a = L->m->arch;
    int head = g->qk_norm == AG_QK_NORM_HEAD, hd = g->head_dim, rc;
    if (g->qk_norm == AG_QK_NORM_NONE)
        return AG_OK;
    if ((rc = load_vec(L, a->q_norm, ".weight", NULL, head ? hd : g->n_head * hd, &y->q_norm.w)))
        return rc;
    return load_vec(L, a->k_norm, ".weight", NULL, head ? hd : g->n_kv_head * hd, &y->k_norm.w);
}

/* ---- the model ---------------------------------------------------------- */

agm_cols agm_qkv_cols(const ag_model_config *g, int which)
{
    int hd = g->head_dim, dq = g->n_head * hd, dkv = g->n_kv_head * hd;
    if (g->qkv == AG_QKV_PER_HEAD) /* modeling_gpt_neox.py: view(..., heads, 3·hd).chunk(3) */
        return (agm_cols){which * hd, 3 * hd, 0};
    if (g->qkv == AG_QKV_GROUPED) { /* modeling_falcon.py: view(..., kv, H/kv + 2, hd) */
        int r = g->n_head / g->n_kv_head;
        return (agm_cols){which == 0 ? 0 : (r + which - 1) * hd, (r + 2) * hd, which == 0 ? r : 0};
    }
    if (g->qkv == AG_QKV_BLOCKS) /* c_attn split(n_embd); Phi-3 qkv[..., :query_pos] ... */
        return (agm_cols){which == 0 ? 0 : which == 1 ? dq : dq + dkv, hd, 0};
    return (agm_cols){0, hd, 0};
}

static int load_attention(loader *L, agm_layer *y)
{
    const ag_model_config *g = &L->m->cfg;
    const agm_arch *a = L->m->arch;
    int d = g->d_model, dq = g->n_head * g->head_dim, dkv = g->n_kv_head * g->head_dim, rc;
    if (g->qkv != AG_QKV_SEPARATE)
        rc = load_lin(L, a->qkv_fused, d, dq + 2 * dkv, g->qkv_bias, &y->qkv);
    else if ((rc = load_lin(L, a->q, d, dq, g->qkv_bias, &y->q)) == AG_OK &&
             (rc = load_lin(L, a->k, d, dkv, g->qkv_bias && !a->no_k_bias, &y->k)) == AG_OK)
        rc = load_lin(L, a->v, d, dkv, g->qkv_bias, &y->v);
    if (rc == AG_OK)
        rc = load_qk_norm(L, y);
    return rc ? rc : load_lin(L, a->o, dq, d, g->o_bias, &y->o);
}

static int load_mlp(loader *L, agm_layer *y)
{
    const ag_model_config *g = &L->m->cfg;
    const agm_arch *a = L->m->arch;
    int d = g->d_model, ff = g->d_ff, b = g->mlp_bias;
    const char *up = g->mlp == AG_MLP_GATED && a->up_gated ? a->up_gated : a->up; /* T5 wi_1 */
    int rc = load_lin(L, up, d, g->mlp == AG_MLP_GATED_FUSED ? 2 * ff : ff, b, &y->up);
    if (rc == AG_OK && g->mlp == AG_MLP_GATED)
        rc = load_lin(L, a->gate, d, ff, b, &y->gate);
    return rc ? rc : load_lin(L, a->down, ff, d, b, &y->down);
}

/* A gated MLP's gate, up, down under prefix pre (expert or shared expert:
 * stems e_gate, e_up, e_down), width ff, no biases (every MoE model's
 * experts are bias-free nn.Linear). */
static int load_gated(loader *L, const char *pre, int ff, agm_lin out[3])
{
    const agm_arch *a = L->m->arch;
    const char *stems[3] = {a->e_gate, a->e_up, a->e_down};
    int d = L->m->cfg.d_model, rc = AG_OK;
    char name[NAME_MAX_LEN];
    for (int k = 0; k < 3 && rc == AG_OK; k++) {
        snprintf(name, sizeof name, "%s%s", pre, stems[k]);
        rc = load_lin(L, name, k == 2 ? ff : d, k == 2 ? d : ff, 0, &out[k]);
    }
    return rc;
}

/* Whether the layer's stem+suffix is stored. */
static int has_tensor(const loader *L, const char *stem, const char *suffix)
{
    char full[NAME_MAX_LEN];
    size_t k;
    if (!stem)
        return 0;
    full_name(L, stem, suffix, full);
    return wsrc_find(L->w, full, &k) != NULL;
}

/* Transformers v5's fused experts (arch.h, fused): each expert's gate, up
 * and down are contiguous [out, in] blocks of the two 3-D tensors, taken
 * in place as nn.Linear weights. */
static int load_fused(loader *L, agm_lin *ex)
{
    int E = L->m->cfg.n_expert, d = L->m->cfg.d_model, ff = L->m->cfg.d_ff_expert, rc;
    size_t s1[3] = {(size_t)E, 2 * (size_t)ff, (size_t)d}, s2[3] = {(size_t)E, (size_t)d, (size_t)ff};
    size_t blk = (size_t)ff * (size_t)d;
    char gu[NAME_MAX_LEN], dn[NAME_MAX_LEN];
    agm_tensor tgu, tdn;
    snprintf(gu, sizeof gu, "%sgate_up_proj", L->m->arch->fused);
    snprintf(dn, sizeof dn, "%sdown_proj", L->m->arch->fused);
    if ((rc = find_tensor(L, gu, "", NULL, 3, s1, &tgu)) || (rc = find_tensor(L, dn, "", NULL, 3, s2, &tdn)))
        return rc;
    for (size_t e = 0; e < (size_t)E; e++) {
        ex[3 * e] = (agm_lin){agm_slice(&tgu, 2 * e * blk, blk), NULL, d, ff, 1};
        ex[3 * e + 1] = (agm_lin){agm_slice(&tgu, (2 * e + 1) * blk, blk), NULL, d, ff, 1};
        ex[3 * e + 2] = (agm_lin){agm_slice(&tdn, e * blk, blk), NULL, ff, d, 1};
    }
    if (blk > L->m->max_mat)
        L->m->max_mat = blk;
    return AG_OK;
}

/* A sparse layer's router, experts (per-expert or v5's fused tensors) and
 * (Qwen2-MoE) shared expert with its gate. */
static int load_experts(loader *L, agm_layer *y)
{
    const ag_model_config *g = &L->m->cfg;
    const agm_arch *a = L->m->arch;
    char pre[NAME_MAX_LEN], gu[NAME_MAX_LEN];
    int v5 = 0;
    if (a->fused) {
        snprintf(gu, sizeof gu, "%sgate_up_proj", a->fused);
        v5 = has_tensor(L, gu, "");
    }
    const char *router = v5 && a->router_v5 && !has_tensor(L, a->router, ".weight") ? a->router_v5 : a->router;
    int rc = load_lin(L, router, g->d_model, g->n_expert, 0, &y->router);
    if (rc == AG_OK && !(y->experts = calloc((size_t)g->n_expert * 3, sizeof *y->experts)))
        return ag_error_set(L->err, AG_ENOMEM, "%s: out of memory", L->w->dir);
    if (rc == AG_OK && v5)
        rc = load_fused(L, y->experts);
    for (int e = 0; e < g->n_expert && rc == AG_OK && !v5; e++) {
        snprintf(pre, sizeof pre, a->expert, e);
        rc = load_gated(L, pre, g->d_ff_expert, y->experts + 3 * e);
    }
    if (rc != AG_OK || !g->d_ff_shared)
        return rc;
    if ((rc = load_gated(L, a->shared, g->d_ff_shared, y->sh)))
        return rc;
    return load_lin(L, a->shared_gate, g->d_model, 1, 0, &y->sh_gate);
}

/* The decoder's cross-attention of layer i (arch.h norm_cross, cq..co):
 * its norm into c->n1, projections d -> H·hd -> d with the model's biases. */
static int load_cross(loader *L, agm_layer *c)
{
    const agm_arch *a = L->m->arch;
    const ag_model_config *g = &L->m->cfg;
    int d = g->d_model, dq = g->n_head * g->head_dim, b = g->qkv_bias, rc;
    if ((rc = load_norm(L, a->norm_cross, &c->n1)) || (rc = load_lin(L, a->cq, d, dq, b, &c->q)) ||
        (rc = load_lin(L, a->ck, d, dq, b && !a->no_k_bias, &c->k)) || (rc = load_lin(L, a->cv, d, dq, b, &c->v)))
        return rc;
    return load_lin(L, a->co, dq, d, g->o_bias, &c->o);
}

static int load_layer(loader *L, int i)
{
    const agm_arch *a = L->m->arch;
    agm_layer *y = &L->m->layers[i];
    int sw = L->m->cfg.sandwich_norms, rc;
    L->layer = i;
    const char *n1 = i == 0 && a->first_no_norm1 ? NULL : a->norm1;
    if ((rc = load_norm(L, n1, &y->n1)) || (rc = load_attention(L, y)) ||
        (rc = load_norm(L, sw ? a->attn_out_norm : NULL, &y->attn_out)) ||
        (rc = load_norm(L, a->norm2, &y->n2)) ||
        (rc = ag_model_layer_experts(L->m, i) ? load_experts(L, y) : load_mlp(L, y)) ||
        (rc = load_norm(L, sw ? a->mlp_out_norm : NULL, &y->mlp_out)) ||
        (a->ls1 && (rc = load_vec(L, a->ls1, "", NULL, L->m->cfg.d_model, &y->ls1.w))) ||
        (a->ls2 && (rc = load_vec(L, a->ls2, "", NULL, L->m->cfg.d_model, &y->ls2.w))) ||
        (L->m->cross && (rc = load_cross(L, &L->m->cross[i]))))
        return rc;
    if (i == 0 && a->rel_bias && (rc = load_mat(L, a->rel_bias, L->m->rel_buckets, L->m->cfg.n_head, &L->m->rel_bias)))
        return rc;
    L->layer = -1;
    return AG_OK;
}

/* A convolution "<stem>.weight" of shape (out, ndim - 1 more dims) and its
 * bias (out), as the nn.Linear [out, in] its flattened kernel is (in = the
 * product of the other dims): im2col rows times it are the convolution. */
static int load_conv(loader *L, const char *stem, int ndim, const size_t *shape, agm_lin *lin)
{
    size_t in = 1;
    for (int i = 1; i < ndim; i++)
        in *= shape[i];
    *lin = (agm_lin){.in = (int)in, .out = (int)shape[0], .linear = 1};
    int rc = find_tensor(L, stem, ".weight", NULL, ndim, shape, &lin->w);
    if (rc == AG_OK && lin->w.n > L->m->max_mat)
        L->m->max_mat = lin->w.n;
    if (rc || L->m->arch->clip_embed) /* CLIPVisionEmbeddings: Conv2d(bias=False) */
        return rc;
    return load_vec(L, stem, ".bias", NULL, lin->out, &lin->b);
}

/* The embedding stage of a model whose input is a tensor: ViT cls_token
 * (1, 1, d), position_embeddings (1, 1 + patches, d), the patch Conv2d
 * (d, C, p_h, p_w); Whisper conv1 (d, n_mels, 3), conv2 (d, d, 3),
 * embed_positions (max_source_positions, d). */
static int load_input_stage(loader *L)
{
    ag_model *m = L->m;
    const ag_model_config *g = &m->cfg;
    const agm_arch *a = m->arch;
    size_t d = (size_t)g->d_model, C = (size_t)g->in_channels, P = (size_t)g->max_positions;
    int rc;
    if (g->input_kind == AG_INPUT_FEATURES) {
        size_t c1[3] = {d, C, 3}, c2[3] = {d, d, 3};
        if ((rc = load_conv(L, a->conv1, 3, c1, &m->conv1)) || (rc = load_conv(L, a->conv2, 3, c2, &m->conv2)))
            return rc;
        return load_mat(L, a->pos, (int)P, (int)d, &m->pos_emb);
    }
    size_t cls[3] = {1, 1, d}, pos[3] = {1, P, d},
           k[4] = {d, C, (size_t)g->patch_height, (size_t)g->patch_width};
    int flat = a->clip_embed; /* CLIP: (d) and (P, d) */
    size_t reg[3] = {1, (size_t)g->n_registers, d}; /* Dinov2WithRegistersEmbeddings */
    if ((rc = find_tensor(L, a->cls, "", NULL, flat ? 1 : 3, flat ? cls + 2 : cls, &m->cls)) ||
        (rc = find_tensor(L, a->pos, "", NULL, flat ? 2 : 3, flat ? pos + 1 : pos, &m->pos_emb)) ||
        (g->n_registers && (rc = find_tensor(L, a->registers, "", NULL, 3, reg, &m->registers))) ||
        (rc = load_norm(L, a->emb_norm, &m->emb_norm)))
        return rc;
    return load_conv(L, a->conv1, 4, k, &m->conv1);
}

static int load_layers(loader *L)
{
    for (int i = 0, rc; i < L->m->cfg.n_layer; i++)
        if ((rc = load_layer(L, i)))
            return rc;
    return AG_OK;
}

/* Embeddings, the final norm, then every layer. */
static int load_weights(loader *L)
{
    ag_model *m = L->m;
    const ag_model_config *g = &m->cfg;
    const agm_arch *a = m->arch;
    int d = g->d_model, rc;
    wsrc_detect_prefix(L->w, a);
    if (g->input_kind != AG_INPUT_TOKENS) {
        if ((rc = load_input_stage(L)) ||
            (rc = load_norm(L, g->final_norm ? a->final_norm : NULL, &m->final_norm)))
            return rc;
        return load_layers(L);
    }
    if ((rc = load_mat(L, a->tok, g->vocab_size, g->d_embed, &m->tok_emb)))
        return rc;
    if (a->pos && (rc = load_mat(L, a->pos, g->max_positions + a->pos_extra, d, &m->pos_emb)))
        return rc;
    if (a->type && (rc = load_mat(L, a->type, g->type_vocab_size, d, &m->type_emb)))
        return rc;
    if (g->d_embed != d && (rc = load_lin(L, a->proj_in, g->d_embed, d, 0, &m->proj_in)))
        return rc;
    if ((rc = load_norm(L, a->emb_norm, &m->emb_norm)) ||
        (rc = load_norm(L, g->final_norm ? a->final_norm : NULL, &m->final_norm)))
        return rc;
    return load_layers(L);
}

int ag_model_load(const char *dir, ag_model **out, ag_error *err)
{
    return ag_model_load_tower(dir, AG_INPUT_TOKENS, out, err);
}

/* The stack `stack` (arch.h agm_arch.stack) of the folder dir. */
static int load_stack(const char *dir, ag_input_kind input, int stack, ag_model **out,
                      ag_error *err)
{
    if (!dir || !out)
        return ag_error_set(err, AG_EINVAL, "ag_model_load: missing argument");
    *out = NULL;
    ag_model *m = calloc(1, sizeof *m);
    if (!m)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    m->stack = stack;
    int rc = agm_read_config(dir, input, m, err);
    wsrc w = {0};
    if (rc == AG_OK && !(m->layers = calloc((size_t)m->cfg.n_layer, sizeof *m->layers)))
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    if (rc == AG_OK && m->arch->cq && !(m->cross = calloc((size_t)m->cfg.n_layer, sizeof *m->cross)))
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    if (rc == AG_OK && (rc = wsrc_open(&w, dir, err)) == AG_OK) {
        loader L = {&w, m, err, -1};
        rc = load_weights(&L);
    }
    m->files = w.st; /* the tensors point into these files: the model keeps them */
    m->nfiles = w.nst;
    if (rc != AG_OK) {
        ag_model_free(m);
        return rc;
    }
    *out = m;
    return AG_OK;
}

int ag_model_load_tower(const char *dir, ag_input_kind input, ag_model **out, ag_error *err)
{
    return load_stack(dir, input, 0, out, err);
}

/* ---- encoder–decoder folders (attngeom/model.h) ---------------------------- */

struct ag_seq2seq {
    ag_model *enc, *dec;
};

void ag_seq2seq_free(ag_seq2seq *s)
{
    if (!s)
        return;
    ag_model_free(s->enc);
    ag_model_free(s->dec);
    free(s);
}

int ag_seq2seq_load(const char *dir, ag_seq2seq **out, ag_error *err)
{
    if (!dir || !out)
        return ag_error_set(err, AG_EINVAL, "ag_seq2seq_load: missing argument");
    *out = NULL;
    ag_seq2seq *s = calloc(1, sizeof *s);
    if (!s)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    int rc = load_stack(dir, AG_INPUT_TOKENS, 1, &s->enc, err);
    if (rc == AG_OK)
        rc = load_stack(dir, AG_INPUT_TOKENS, 2, &s->dec, err);
    if (rc == AG_OK && s->enc->cfg.d_model != s->dec->cfg.d_model)
        rc = ag_error_set(err, AG_EFORMAT, "%s: the encoder and decoder widths differ", dir);
    if (rc != AG_OK) {
        ag_seq2seq_free(s);
        return rc;
    }
    s->enc->pair = s->dec->pair = s;
    *out = s;
    return AG_OK;
}

int ag_model_dir_has_decoder(const char *dir)
{
    if (!dir)
        return 0;
    if (ag_model_dir_is_seq2seq(dir))
        return 1;
    /* Whisper: WhisperModel's and WhisperForConditionalGeneration's saves
     * hold decoder layer 0's self-attention; an encoder saved alone does not */
    static const char *const names[] = {"model.decoder.layers.0.self_attn.q_proj.weight",
                                        "decoder.layers.0.self_attn.q_proj.weight"};
    wsrc w;
    ag_error e = {0};
    size_t k = 0;
    int has = 0;
    if (wsrc_open(&w, dir, &e) == AG_OK)
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            has |= wsrc_find(&w, names[i], &k) != NULL;
    close_all(w.st, w.nst);
    return has;
}

const ag_seq2seq *ag_model_seq2seq(const ag_model *m)
{
    return m ? m->pair : NULL;
}

int ag_seq2seq_decoder_start(const ag_seq2seq *s)
{
    return s ? s->dec->decoder_start : -1;
}

const ag_model *ag_seq2seq_stack(const ag_seq2seq *s, ag_stack stack)
{
    if (!s)
        return NULL;
    return stack == AG_STACK_ENCODER ? s->enc : stack == AG_STACK_DECODER ? s->dec : NULL;
}

int ag_model_is_tower(const ag_model *m)
{
    return m ? m->clip_towers : 0;
}

const ag_model_config *ag_model_get_config(const ag_model *m)
{
    return m ? &m->cfg : NULL;
}

const double *ag_model_alibi_slopes(const ag_model *m)
{
    return m ? m->alibi_slopes : NULL;
}

ag_input_kind ag_model_input_kind(const ag_model *m)
{
    return m ? m->cfg.input_kind : AG_INPUT_TOKENS;
}

int ag_model_input_shape(const ag_model *m, size_t shape[3])
{
    const ag_model_config *g = m ? &m->cfg : NULL;
    if (!g || !shape || g->input_kind == AG_INPUT_TOKENS)
        return 0;
    shape[0] = (size_t)g->in_channels;
    if (g->input_kind == AG_INPUT_FEATURES) {
        shape[1] = (size_t)g->max_frames;
        return 2;
    }
    shape[1] = (size_t)g->image_height;
    shape[2] = (size_t)g->image_width;
    return 3;
}

int ag_model_layer_window(const ag_model *m, int layer)
{
    return m && m->window && layer >= 0 && layer < m->cfg.n_layer ? m->window[layer] : 0;
}

int ag_model_layer_experts(const ag_model *m, int layer)
{
    return m && m->sparse && layer >= 0 && layer < m->cfg.n_layer ? m->sparse[layer] : 0;
}

static void free_norm(agm_norm *n)
{
    free(n->w);
    free(n->b);
}

/* A layer's norms and biases (its weights point into a file). */
static void free_layer(agm_layer *y)
{
    agm_norm *norms[] = {&y->n1, &y->n2, &y->attn_out, &y->mlp_out, &y->q_norm, &y->k_norm, &y->ls1, &y->ls2};
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++)
        free_norm(norms[k]);
    agm_lin *lins[] = {&y->qkv, &y->q, &y->k, &y->v, &y->o, &y->up, &y->gate, &y->down};
    for (size_t k = 0; k < sizeof lins / sizeof *lins; k++)
        free(lins[k]->b);
    free(y->experts); /* bias-free: nothing else to free */
}

void ag_model_free(ag_model *m)
{
    if (!m)
        return;
    for (int i = 0; m->layers && i < m->cfg.n_layer; i++)
        free_layer(&m->layers[i]);
    for (int i = 0; m->cross && i < m->cfg.n_layer; i++)
        free_layer(&m->cross[i]);
    free(m->cross);
    free(m->layers);
    free(m->window);
    free(m->alibi_slopes);
    free(m->sparse);
    free(m->rope_factors[0]);
    free(m->rope_factors[1]);
    free(m->proj_in.b);
    free(m->conv1.b);
    free(m->conv2.b);
    free_norm(&m->emb_norm);
    free_norm(&m->final_norm);
    close_all(m->files, m->nfiles);
    free(m);
}
