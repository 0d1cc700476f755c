/* model.c — load a Hugging Face model folder: config.json, the weights
 * (model.safetensors or shards listed in model.safetensors.index.json), into
 * the ag_model of model_int.h. The forward pass is in forward.c.
 *
 * Memory: the weight files stay mapped read-only for the model's lifetime and
 * each matrix is a pointer into its file in the stored dtype (no copy, no
 * conversion), so a model costs its file size in (shared, evictable) page
 * cache plus a few small float vectors (norms, biases). Every check (dtype,
 * shape, NaN/Inf) is still done at load, the last by one streaming scan of
 * the stored bits.
 *
 * Tensor names follow what save_pretrained writes for the XModel,
 * XLMHeadModel, XForMaskedLM and XForCausalLM classes: the base-model prefix
 * ("transformer.", "bert.", "model.") is optional, detected once from the
 * token embedding. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attngeom/io.h"
#include "io/io_internal.h"
#include "model_int.h"

#define CAP_DIM   (1 << 20) /* any width, vocab or position count */
#define CAP_LAYER 4096
#define CAP_SHARDS 4096
#define CAP_JSON  ((size_t)64 << 20) /* bytes of config.json or the shard index */
#define NAME_MAX_LEN 512

/* ---- weight source: one file or the shards of an index ------------------ */

typedef struct {
    const char *dir;
    const char *what;       /* "model.safetensors" or the index name, for messages */
    ag_safetensors **st;    /* nst handles: names, dtypes, shapes, offsets */
    agm_map *maps;          /* nst mappings the model keeps (see wsrc_map) */
    size_t nst;
    char prefix[32];        /* "", "transformer.", "bert.", "model." */
} wsrc;

static void unmap_all(agm_map *maps, size_t n)
{
    for (size_t i = 0; maps && i < n; i++)
        munmap(maps[i].p, maps[i].len);
    free(maps);
}

/* The handles are only needed while loading; the mappings go to the model
 * on success (w->maps is then NULL) and are dropped otherwise. */
static void wsrc_close(wsrc *w)
{
    for (size_t i = 0; i < w->nst; i++)
        ag_st_close(w->st[i]);
    unmap_all(w->maps, w->nst);
    free(w->st);
    w->st = NULL;
    w->maps = NULL;
    w->nst = 0;
}

/* The tensor called `name` and the index of its file, or NULL. */
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

/* Map the whole file read-only for the model. ag_st_open maps it too, but
 * its handle (and mapping) is closed after loading and its data pages are
 * never touched, so only this mapping ever becomes resident. Tensors are
 * bounds-checked against this mapping's length (see find_tensor), in case the
 * file changed between the two opens. */
static int wsrc_map(const char *path, agm_map *out, ag_error *err)
{
    int fd;
    size_t size;
    int rc = agi_open_regular(path, &fd, &size, err);
    if (rc != AG_OK)
        return rc;
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED && e == ENOMEM) /* e.g. under ulimit -v */
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory: cannot map the file", path);
    if (p == MAP_FAILED)
        return ag_error_set(err, AG_EIO, "%s: cannot map the file: %s", path, strerror(e));
    *out = (agm_map){p, size};
    return AG_OK;
}

static int wsrc_add(wsrc *w, const char *file, ag_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->dir, file);
    ag_safetensors **grown = realloc(w->st, (w->nst + 1) * sizeof *grown);
    if (grown)
        w->st = grown;
    agm_map *mgrown = grown ? realloc(w->maps, (w->nst + 1) * sizeof *mgrown) : NULL;
    if (!mgrown)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    w->maps = mgrown;
    int rc = ag_st_open(path, &w->st[w->nst], err);
    if (rc == AG_OK && (rc = wsrc_map(path, &w->maps[w->nst], err)) != AG_OK)
        ag_st_close(w->st[w->nst]);
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
    int rc = agi_json_load(ipath, CAP_JSON, JSON_REJECT_DUPLICATES, &root, err);
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
            if (json_array_size(seen) >= CAP_SHARDS)
                rc = ag_error_set(err, AG_ELIMIT, "%s: more than %d shards", ipath, CAP_SHARDS);
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

/* ---- stored values (exact conversions) ---------------------------------- */

static float float_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* BF16 is the top half of a float32: widening is a shift. F16 goes through
 * the library's exact half -> double conversion (its values are floats). */
float agm_at(const agm_tensor *t, size_t i)
{
    switch (t->dt) {
    case AG_DT_BF16:
        return float_from_bits((uint32_t)agi_le16(t->p + 2 * i) << 16);
    case AG_DT_F16:
        return (float)ag_half_to_double(agi_le16(t->p + 2 * i));
    default:
        return float_from_bits(agi_le32(t->p + 4 * i));
    }
}

/* The dtype switch is outside the loops so each loop is a plain widening. */
void agm_to_float(const agm_tensor *t, size_t i0, size_t cnt, float *dst)
{
    const unsigned char *p = t->p + i0 * (t->dt == AG_DT_F32 ? 4 : 2);
    if (t->dt == AG_DT_BF16)
        for (size_t i = 0; i < cnt; i++)
            dst[i] = float_from_bits((uint32_t)agi_le16(p + 2 * i) << 16);
    else if (t->dt == AG_DT_F16)
        for (size_t i = 0; i < cnt; i++)
            dst[i] = (float)ag_half_to_double(agi_le16(p + 2 * i));
    else
        for (size_t i = 0; i < cnt; i++)
            dst[i] = float_from_bits(agi_le32(p + 4 * i));
}

/* Through float in chunks: float -> double is exact, and this reuses the
 * tight loops above. */
void agm_to_double(const agm_tensor *t, size_t i0, size_t cnt, double *dst)
{
    float buf[1024];
    for (size_t k = 0; k < cnt; k += 1024) {
        size_t c = cnt - k < 1024 ? cnt - k : 1024;
        agm_to_float(t, i0 + k, c, buf);
        for (size_t i = 0; i < c; i++)
            dst[k + i] = buf[i];
    }
}

const float *agm_f32_in_place(const agm_tensor *t)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (t->dt == AG_DT_F32 && (uintptr_t)t->p % _Alignof(float) == 0)
        return (const float *)(const void *)t->p;
#endif
    return NULL;
}

/* ---- tensors ------------------------------------------------------------ */

typedef struct {
    wsrc *w;
    ag_model *m;
    ag_error *err;
} loader;

static void shape_str(char *buf, size_t size, int ndim, const size_t *shape)
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
        shape_str(got, sizeof got, t->ndim, t->shape);
        shape_str(want, sizeof want, ndim, shape);
        return ag_error_set(L->err, AG_ESHAPE, "%s/%s: tensor '%s' has shape %s, expected %s",
                            L->w->dir, L->w->what, full, got, want);
    }
    return AG_OK;
}

/* Index of the first NaN/Inf among the stored values (exponent bits all
 * ones), or t->n. Reads the stored bits only; chunked so the inner loop has
 * no early exit and vectorises. Equivalent to testing the converted floats:
 * every finite F16/BF16/F32 value is a finite float. */
static size_t first_nonfinite(const agm_tensor *t)
{
    int wide = t->dt == AG_DT_F32;
    uint32_t e = wide ? 0x7f800000u : t->dt == AG_DT_F16 ? 0x7c00u : 0x7f80u;
    for (size_t i0 = 0; i0 < t->n; i0 += 4096) {
        size_t end = t->n - i0 < 4096 ? t->n : i0 + 4096;
        int bad = 0;
        for (size_t i = i0; i < end; i++)
            bad |= ((wide ? agi_le32(t->p + 4 * i) : agi_le16(t->p + 2 * i)) & e) == e;
        for (size_t i = i0; bad && i < end; i++)
            if (((wide ? agi_le32(t->p + 4 * i) : agi_le16(t->p + 2 * i)) & e) == e)
                return i;
    }
    return t->n;
}

static int check_finite(const loader *L, const char *full, const agm_tensor *t)
{
    size_t i = first_nonfinite(t);
    if (i < t->n)
        return ag_error_set(L->err, AG_ENONFINITE, "%s/%s: tensor '%s' holds a non-finite value at index %zu",
                            L->w->dir, L->w->what, full, i);
    return AG_OK;
}

/* Find prefix+name (or prefix+alt when the first is absent; alt may be NULL),
 * check its dtype and shape, and point *out at its stored values. full
 * (NAME_MAX_LEN) receives the name found, for messages. */
static int find_tensor(const loader *L, const char *name, const char *alt, int ndim,
                       const size_t *shape, agm_tensor *out, char *full)
{
    char full2[NAME_MAX_LEN];
    size_t k = 0;
    snprintf(full, NAME_MAX_LEN, "%s%s", L->w->prefix, name);
    const ag_tensor_info *t = wsrc_find(L->w, full, &k);
    if (!t && alt) {
        snprintf(full2, sizeof full2, "%s%s", L->w->prefix, alt);
        if ((t = wsrc_find(L->w, full2, &k)))
            memcpy(full, full2, sizeof full2);
    }
    if (!t)
        return ag_error_set(L->err, AG_ENOTFOUND, "%s/%s: tensor '%s' not found",
                            L->w->dir, L->w->what, full);
    int rc = check_info(L, full, t, ndim, shape);
    if (rc != AG_OK)
        return rc;
    const agm_map *mp = &L->w->maps[k];
    if (t->offset > mp->len || t->nbytes > mp->len - t->offset)
        return ag_error_set(L->err, AG_EFORMAT, "%s/%s: tensor '%s' lies outside its file (was the file changed while loading?)",
                            L->w->dir, L->w->what, full);
    *out = (agm_tensor){(const unsigned char *)mp->p + t->offset, t->dtype, t->nelem};
    return AG_OK;
}

/* A (rows, cols) matrix, left in its file: checked and scanned for NaN/Inf. */
static int load_mat(loader *L, const char *name, int rows, int cols, agm_tensor *out)
{
    char full[NAME_MAX_LEN];
    size_t s[2] = {(size_t)rows, (size_t)cols};
    int rc = find_tensor(L, name, NULL, 2, s, out, full);
    return rc ? rc : check_finite(L, full, out);
}

/* A vector of len values (a norm or a bias; alt as in find_tensor), copied
 * into *out as malloc'ed floats: small, and used every layer in place. */
static int load_alt(loader *L, const char *name, const char *alt, int len, float **out)
{
    char full[NAME_MAX_LEN];
    size_t s[1] = {(size_t)len};
    agm_tensor t;
    int rc = find_tensor(L, name, alt, 1, s, &t, full);
    if (rc == AG_OK)
        rc = check_finite(L, full, &t);
    if (rc != AG_OK)
        return rc;
    if (!(*out = malloc((size_t)len * sizeof **out)))
        return ag_error_set(L->err, AG_ENOMEM, "tensor '%s': out of memory", full);
    agm_to_float(&t, 0, t.n, *out);
    return AG_OK;
}

static int load_vec(loader *L, const char *name, int len, float **out)
{
    return load_alt(L, name, NULL, len, out);
}

/* "<stem>.weight"/"<stem>.bias" of a projection. linear: nn.Linear [out,in];
 * else Conv1D [in,out]. */
static int load_lin(loader *L, const char *stem, int in, int out, int linear,
                    int bias, agm_lin *lin)
{
    char n[NAME_MAX_LEN];
    lin->in = in;
    lin->out = out;
    lin->linear = linear;
    snprintf(n, sizeof n, "%s.weight", stem);
    int rc = linear ? load_mat(L, n, out, in, &lin->w) : load_mat(L, n, in, out, &lin->w);
    if (rc == AG_OK && lin->w.n > L->m->max_mat)
        L->m->max_mat = lin->w.n; /* the pass converts one such matrix at a time */
    snprintf(n, sizeof n, "%s.bias", stem);
    if (rc == AG_OK && bias)
        rc = load_vec(L, n, out, &lin->b);
    return rc;
}

/* LayerNorm (bias) or RMSNorm (no bias); legacy gamma/beta names accepted
 * (TF-converted BERT checkpoints; HF renames them on load). */
static int load_norm(loader *L, const char *stem, int d, int bias, agm_norm *nm)
{
    char a[NAME_MAX_LEN], b[NAME_MAX_LEN];
    snprintf(a, sizeof a, "%s.weight", stem);
    snprintf(b, sizeof b, "%s.gamma", stem);
    int rc = load_alt(L, a, b, d, &nm->w);
    snprintf(a, sizeof a, "%s.bias", stem);
    snprintf(b, sizeof b, "%s.beta", stem);
    if (rc == AG_OK && bias)
        rc = load_alt(L, a, b, d, &nm->b);
    return rc;
}

/* Pick the first prefix under which `probe` exists ("" is tried last, so a
 * prefixed file is read consistently). */
static void detect_prefix(wsrc *w, const char *pfx, const char *probe)
{
    char n[NAME_MAX_LEN];
    size_t k;
    snprintf(n, sizeof n, "%s%s", pfx, probe);
    snprintf(w->prefix, sizeof w->prefix, "%s", wsrc_find(w, n, &k) ? pfx : "");
}

/* ---- config.json -------------------------------------------------------- */

typedef struct {
    char path[4200];
    json_t *root;
    ag_error *err;
} cfgctx;

/* Integer field. dflt < 0: required. null counts as absent. */
static int cfg_int(cfgctx *c, const char *key, int dflt, int min, int *out)
{
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' is missing", c->path, key);
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_integer(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be an integer", c->path, key);
    json_int_t x = json_integer_value(v);
    if (x < min || x > CAP_DIM)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %lld is outside %d..%d",
                            c->path, key, (long long)x, min, CAP_DIM);
    *out = (int)x;
    return AG_OK;
}

/* Positive finite number (integer or real) with a default. */
static int cfg_num(cfgctx *c, const char *key, double dflt, double *out)
{
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be a positive number", c->path, key);
    *out = json_number_value(v);
    return AG_OK;
}

static int cfg_bool(cfgctx *c, const char *key, int dflt, int *out)
{
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return AG_OK;
    }
    if (!json_is_boolean(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' must be true or false", c->path, key);
    *out = json_is_true(v);
    return AG_OK;
}

static int cfg_str(cfgctx *c, const char *key, const char *dflt, const char **out)
{
    json_t *v = json_object_get(c->root, key);
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

/* HF activations.py ACT2FN names this engine implements. */
static int cfg_act(cfgctx *c, const char *key, const char *dflt, agm_act *act)
{
    const char *s;
    int rc = cfg_str(c, key, dflt, &s);
    if (rc != AG_OK)
        return rc;
    if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_pytorch_tanh"))
        *act = AGM_ACT_GELU_TANH;
    else if (!strcmp(s, "gelu"))
        *act = AGM_ACT_GELU_ERF;
    else if (!strcmp(s, "relu"))
        *act = AGM_ACT_RELU;
    else if (!strcmp(s, "silu") || !strcmp(s, "swish"))
        *act = AGM_ACT_SILU;
    else
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field '%s' = \"%.64s\" is not a supported activation",
                            c->path, key, s);
    return AG_OK;
}

/* Common consistency: heads divide the width. */
static int cfg_heads(cfgctx *c, ag_model_config *g, const char *head_key)
{
    if (g->d_model % g->n_head)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field '%s' = %d does not divide the hidden size %d",
                            c->path, head_key, g->n_head, g->d_model);
    g->head_dim = g->d_model / g->n_head;
    g->n_kv_head = g->n_head;
    return AG_OK;
}

static int cfg_gpt2(cfgctx *c, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    int rc, inner;
    if ((rc = cfg_int(c, "n_layer", -1, 1, &g->n_layer)) ||
        (rc = cfg_int(c, "n_head", -1, 1, &g->n_head)) ||
        (rc = cfg_int(c, "n_embd", -1, 1, &g->d_model)) ||
        (rc = cfg_int(c, "n_positions", -1, 1, &g->max_positions)) ||
        (rc = cfg_int(c, "vocab_size", -1, 1, &g->vocab_size)) ||
        (rc = cfg_int(c, "n_inner", 0, 1, &inner)) ||
        (rc = cfg_num(c, "layer_norm_epsilon", 1e-5, &g->norm_eps)) ||
        (rc = cfg_bool(c, "scale_attn_weights", 1, &g->scale_attn_weights)) ||
        (rc = cfg_bool(c, "scale_attn_by_inverse_layer_idx", 0, &g->scale_by_inverse_layer)) ||
        (rc = cfg_act(c, "activation_function", "gelu_new", &m->act)))
        return rc;
    g->d_ff = inner ? inner : 4 * g->d_model; /* modeling_gpt2.py GPT2Block */
    g->causal = 1;
    return cfg_heads(c, g, "n_head");
}

static int cfg_bert(cfgctx *c, ag_model *m)
{
    ag_model_config *g = &m->cfg;
    const char *pe;
    int rc;
    if ((rc = cfg_int(c, "num_hidden_layers", -1, 1, &g->n_layer)) ||
        (rc = cfg_int(c, "num_attention_heads", -1, 1, &g->n_head)) ||
        (rc = cfg_int(c, "hidden_size", -1, 1, &g->d_model)) ||
        (rc = cfg_int(c, "intermediate_size", -1, 1, &g->d_ff)) ||
        (rc = cfg_int(c, "max_position_embeddings", -1, 1, &g->max_positions)) ||
        (rc = cfg_int(c, "vocab_size", -1, 1, &g->vocab_size)) ||
        (rc = cfg_int(c, "type_vocab_size", 2, 1, &g->type_vocab_size)) ||
        (rc = cfg_num(c, "layer_norm_eps", 1e-12, &g->norm_eps)) ||
        (rc = cfg_act(c, "hidden_act", "gelu", &m->act)) ||
        (rc = cfg_str(c, "position_embedding_type", "absolute", &pe)))
        return rc;
    if (strcmp(pe, "absolute"))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: position_embedding_type \"%.64s\" is not supported (only \"absolute\")",
                            c->path, pe);
    return cfg_heads(c, g, "num_attention_heads");
}

/* Sliding window: Mistral's sliding_window, Qwen2's only if use_sliding_window. */
static int cfg_window(cfgctx *c, ag_model_config *g)
{
    int use = !strcmp(g->model_type, "mistral"), rc;
    if (!strcmp(g->model_type, "qwen2") &&
        (rc = cfg_bool(c, "use_sliding_window", 0, &use)))
        return rc;
    if (!use)
        return AG_OK;
    return cfg_int(c, "sliding_window", 0, 1, &g->sliding_window);
}

static int cfg_llama(cfgctx *c, ag_model *m, int *qkv_bias, int *o_bias, int *mlp_bias)
{
    ag_model_config *g = &m->cfg;
    int rc, hd;
    if ((rc = cfg_int(c, "num_hidden_layers", -1, 1, &g->n_layer)) ||
        (rc = cfg_int(c, "num_attention_heads", -1, 1, &g->n_head)) ||
        (rc = cfg_int(c, "hidden_size", -1, 1, &g->d_model)) ||
        (rc = cfg_int(c, "intermediate_size", -1, 1, &g->d_ff)) ||
        (rc = cfg_int(c, "max_position_embeddings", -1, 1, &g->max_positions)) ||
        (rc = cfg_int(c, "vocab_size", -1, 1, &g->vocab_size)) ||
        (rc = cfg_int(c, "num_key_value_heads", g->n_head, 1, &g->n_kv_head)) ||
        (rc = cfg_int(c, "head_dim", 0, 1, &hd)) ||
        (rc = cfg_num(c, "rms_norm_eps", 1e-6, &g->norm_eps)) ||
        (rc = cfg_num(c, "rope_theta", 10000.0, &g->rope_theta)) ||
        (rc = cfg_act(c, "hidden_act", "silu", &m->act)) ||
        (rc = cfg_bool(c, "attention_bias", 0, o_bias)) ||
        (rc = cfg_bool(c, "mlp_bias", 0, mlp_bias)) ||
        (rc = cfg_window(c, g)))
        return rc;
    json_t *rs = json_object_get(c->root, "rope_scaling");
    if (rs && !json_is_null(rs))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: field 'rope_scaling' is set; only plain RoPE is supported", c->path);
    if (g->n_head % g->n_kv_head)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field 'num_key_value_heads' = %d does not divide num_attention_heads = %d",
                            c->path, g->n_kv_head, g->n_head);
    if (!hd && g->d_model % g->n_head)
        return ag_error_set(c->err, AG_EFORMAT, "%s: field 'num_attention_heads' = %d does not divide hidden_size = %d",
                            c->path, g->n_head, g->d_model);
    g->head_dim = hd ? hd : g->d_model / g->n_head;
    if (g->head_dim % 2)
        return ag_error_set(c->err, AG_EFORMAT, "%s: head_dim %d is odd; RoPE needs an even head_dim", c->path, g->head_dim);
    if ((long long)g->n_head * g->head_dim > CAP_DIM) /* the Q projection's width, an int */
        return ag_error_set(c->err, AG_EFORMAT, "%s: num_attention_heads * head_dim = %d * %d is above %d",
                            c->path, g->n_head, g->head_dim, CAP_DIM);
    /* modeling_qwen2.py: q/k/v always biased, o_proj never. */
    *qkv_bias = !strcmp(g->model_type, "qwen2") || *o_bias;
    if (!strcmp(g->model_type, "qwen2"))
        *o_bias = 0;
    g->causal = 1;
    return AG_OK;
}

/* ---- per-architecture weights ------------------------------------------- */

static int load_gpt2(loader *L)
{
    const ag_model_config *g = &L->m->cfg;
    int d = g->d_model, rc;
    char s[NAME_MAX_LEN];
    detect_prefix(L->w, "transformer.", "wte.weight");
    if ((rc = load_mat(L, "wte.weight", g->vocab_size, d, &L->m->tok_emb)) ||
        (rc = load_mat(L, "wpe.weight", g->max_positions, d, &L->m->pos_emb)) ||
        (rc = load_norm(L, "ln_f", d, 1, &L->m->final_norm)))
        return rc;
    for (int i = 0; i < g->n_layer; i++) {
        agm_layer *y = &L->m->layers[i];
        /* h.<i>.attn.bias is the causal-mask buffer, never read. */
#define P(x) (snprintf(s, sizeof s, "h.%d.%s", i, x), s)
        if ((rc = load_norm(L, P("ln_1"), d, 1, &y->ln1)) ||
            (rc = load_lin(L, P("attn.c_attn"), d, 3 * d, 0, 1, &y->qkv)) ||
            (rc = load_lin(L, P("attn.c_proj"), d, d, 0, 1, &y->o)) ||
            (rc = load_norm(L, P("ln_2"), d, 1, &y->ln2)) ||
            (rc = load_lin(L, P("mlp.c_fc"), d, g->d_ff, 0, 1, &y->up)) ||
            (rc = load_lin(L, P("mlp.c_proj"), g->d_ff, d, 0, 1, &y->down)))
            return rc;
#undef P
    }
    return AG_OK;
}

static int load_bert(loader *L)
{
    const ag_model_config *g = &L->m->cfg;
    int d = g->d_model, rc;
    char s[NAME_MAX_LEN];
    detect_prefix(L->w, "bert.", "embeddings.word_embeddings.weight");
    if ((rc = load_mat(L, "embeddings.word_embeddings.weight", g->vocab_size, d, &L->m->tok_emb)) ||
        (rc = load_mat(L, "embeddings.position_embeddings.weight", g->max_positions, d, &L->m->pos_emb)) ||
        (rc = load_mat(L, "embeddings.token_type_embeddings.weight", g->type_vocab_size, d, &L->m->type_emb)) ||
        (rc = load_norm(L, "embeddings.LayerNorm", d, 1, &L->m->emb_ln)))
        return rc;
    for (int i = 0; i < g->n_layer; i++) {
        agm_layer *y = &L->m->layers[i];
#define P(x) (snprintf(s, sizeof s, "encoder.layer.%d.%s", i, x), s)
        if ((rc = load_lin(L, P("attention.self.query"), d, d, 1, 1, &y->q)) ||
            (rc = load_lin(L, P("attention.self.key"), d, d, 1, 1, &y->k)) ||
            (rc = load_lin(L, P("attention.self.value"), d, d, 1, 1, &y->v)) ||
            (rc = load_lin(L, P("attention.output.dense"), d, d, 1, 1, &y->o)) ||
            (rc = load_norm(L, P("attention.output.LayerNorm"), d, 1, &y->ln1)) ||
            (rc = load_lin(L, P("intermediate.dense"), d, g->d_ff, 1, 1, &y->up)) ||
            (rc = load_lin(L, P("output.dense"), g->d_ff, d, 1, 1, &y->down)) ||
            (rc = load_norm(L, P("output.LayerNorm"), d, 1, &y->ln2)))
            return rc;
#undef P
    }
    return AG_OK;
}

static int load_llama(loader *L, int qkv_bias, int o_bias, int mlp_bias)
{
    const ag_model_config *g = &L->m->cfg;
    int d = g->d_model, dq = g->n_head * g->head_dim, dkv = g->n_kv_head * g->head_dim, rc;
    char s[NAME_MAX_LEN];
    detect_prefix(L->w, "model.", "embed_tokens.weight");
    if ((rc = load_mat(L, "embed_tokens.weight", g->vocab_size, d, &L->m->tok_emb)) ||
        (rc = load_norm(L, "norm", d, 0, &L->m->final_norm)))
        return rc;
    for (int i = 0; i < g->n_layer; i++) {
        agm_layer *y = &L->m->layers[i];
#define P(x) (snprintf(s, sizeof s, "layers.%d.%s", i, x), s)
        if ((rc = load_norm(L, P("input_layernorm"), d, 0, &y->ln1)) ||
            (rc = load_lin(L, P("self_attn.q_proj"), d, dq, 1, qkv_bias, &y->q)) ||
            (rc = load_lin(L, P("self_attn.k_proj"), d, dkv, 1, qkv_bias, &y->k)) ||
            (rc = load_lin(L, P("self_attn.v_proj"), d, dkv, 1, qkv_bias, &y->v)) ||
            (rc = load_lin(L, P("self_attn.o_proj"), dq, d, 1, o_bias, &y->o)) ||
            (rc = load_norm(L, P("post_attention_layernorm"), d, 0, &y->ln2)) ||
            (rc = load_lin(L, P("mlp.gate_proj"), d, g->d_ff, 1, mlp_bias, &y->gate)) ||
            (rc = load_lin(L, P("mlp.up_proj"), d, g->d_ff, 1, mlp_bias, &y->up)) ||
            (rc = load_lin(L, P("mlp.down_proj"), g->d_ff, d, 1, mlp_bias, &y->down)))
            return rc;
#undef P
    }
    return AG_OK;
}

/* ---- load / free -------------------------------------------------------- */

static int read_config(const char *dir, ag_model *m, int bias[3], ag_error *err)
{
    cfgctx c = {.err = err};
    const char *mt;
    snprintf(c.path, sizeof c.path, "%s/config.json", dir);
    int rc = agi_json_load(c.path, CAP_JSON, JSON_REJECT_DUPLICATES, &c.root, err);
    if (rc != AG_OK)
        return rc;
    rc = json_is_object(c.root) ? cfg_str(&c, "model_type", NULL, &mt)
                                    : ag_error_set(err, AG_EFORMAT, "%s: not a JSON object", c.path);
    if (rc == AG_OK) {
        snprintf(m->cfg.model_type, sizeof m->cfg.model_type, "%s", mt);
        if (!strcmp(mt, "gpt2"))
            m->cfg.arch = AG_ARCH_GPT2, rc = cfg_gpt2(&c, m);
        else if (!strcmp(mt, "bert"))
            m->cfg.arch = AG_ARCH_BERT, rc = cfg_bert(&c, m);
        else if (!strcmp(mt, "llama") || !strcmp(mt, "mistral") || !strcmp(mt, "qwen2"))
            m->cfg.arch = AG_ARCH_LLAMA, rc = cfg_llama(&c, m, &bias[0], &bias[1], &bias[2]);
        else
            rc = ag_error_set(err, AG_EUNSUPPORTED, "%s: model_type \"%.64s\" is not supported (gpt2, bert, llama, mistral, qwen2)",
                              c.path, mt);
    }
    if (rc == AG_OK && m->cfg.n_layer > CAP_LAYER)
        rc = ag_error_set(err, AG_EFORMAT, "%s: more than %d layers", c.path, CAP_LAYER);
    json_decref(c.root);
    return rc;
}

int ag_model_load(const char *dir, ag_model **out, ag_error *err)
{
    if (!dir || !out)
        return ag_error_set(err, AG_EINVAL, "ag_model_load: missing argument");
    *out = NULL;
    ag_model *m = calloc(1, sizeof *m);
    if (!m)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    int bias[3] = {0, 0, 0}, rc = read_config(dir, m, bias, err);
    wsrc w = {0};
    if (rc == AG_OK && !(m->layers = calloc((size_t)m->cfg.n_layer, sizeof *m->layers)))
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", dir);
    if (rc == AG_OK && (rc = wsrc_open(&w, dir, err)) == AG_OK) {
        loader L = {&w, m, err};
        rc = m->cfg.arch == AG_ARCH_GPT2   ? load_gpt2(&L)
             : m->cfg.arch == AG_ARCH_BERT ? load_bert(&L)
                                           : load_llama(&L, bias[0], bias[1], bias[2]);
    }
    if (rc == AG_OK) { /* the tensors point into these mappings: keep them */
        m->maps = w.maps;
        m->nmaps = w.nst;
        w.maps = NULL;
    }
    wsrc_close(&w);
    if (rc != AG_OK) {
        ag_model_free(m);
        return rc;
    }
    *out = m;
    return AG_OK;
}

const ag_model_config *ag_model_get_config(const ag_model *m)
{
    return m ? &m->cfg : NULL;
}

static void free_lin(agm_lin *l)
{
    free(l->b); /* l->w points into a mapping */
}

static void free_norm(agm_norm *n)
{
    free(n->w);
    free(n->b);
}

void ag_model_free(ag_model *m)
{
    if (!m)
        return;
    for (int i = 0; m->layers && i < m->cfg.n_layer; i++) {
        agm_layer *y = &m->layers[i];
        free_norm(&y->ln1);
        free_norm(&y->ln2);
        agm_lin *all[] = {&y->qkv, &y->q, &y->k, &y->v, &y->o, &y->up, &y->gate, &y->down};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            free_lin(all[k]);
    }
    free(m->layers);
    free_norm(&m->emb_ln);
    free_norm(&m->final_norm);
    unmap_all(m->maps, m->nmaps);
    free(m);
}

/* ---- attention weights as doubles (weight-space metrics) ---------------- */

/* Columns [c0, c0 + w) of a projection as a (in, w) [in,out] double array. */
static int lin_block(const agm_lin *l, int c0, int w, ag_array *out, ag_error *err)
{
    size_t shape[2] = {(size_t)l->in, (size_t)w};
    int rc = ag_array_alloc(out, 2, shape, err);
    for (int i = 0; rc == AG_OK && i < l->in; i++)
        for (int j = 0; j < w; j++)
            out->data[(size_t)i * w + j] = agm_at(&l->w, l->linear ? (size_t)(c0 + j) * l->in + i
                                                                   : (size_t)i * l->out + c0 + j);
    return rc;
}

static int bias_block(const agm_lin *l, int c0, int w, ag_array *out, ag_error *err)
{
    if (!l->b)
        return AG_OK;
    size_t shape[1] = {(size_t)w};
    int rc = ag_array_alloc(out, 1, shape, err);
    for (int j = 0; rc == AG_OK && j < w; j++)
        out->data[j] = l->b[c0 + j];
    return rc;
}

int ag_model_attn_weights(const ag_model *m, int layer, ag_attn_weights *out, ag_error *err)
{
    if (!m || !out)
        return ag_error_set(err, AG_EINVAL, "attention weights: missing argument");
    memset(out, 0, sizeof *out);
    const ag_model_config *g = &m->cfg;
    if (layer < 0 || layer >= g->n_layer)
        return ag_error_set(err, AG_ERANGE, "layer %d is outside 0..%d", layer, g->n_layer - 1);
    const agm_layer *y = &m->layers[layer];
    int dq = g->n_head * g->head_dim, dkv = g->n_kv_head * g->head_dim, rc;
    *out = (ag_attn_weights){.layer = layer, .n_head = g->n_head, .n_kv_head = g->n_kv_head,
                             .head_dim = g->head_dim, .rope = g->arch == AG_ARCH_LLAMA,
                             .causal = g->causal, .scale = 1.0 / sqrt((double)g->head_dim)};
    if (g->arch == AG_ARCH_GPT2) {
        out->scale = g->scale_attn_weights ? out->scale : 1.0;
        out->scale /= g->scale_by_inverse_layer ? layer + 1 : 1;
        const agm_lin *c = &y->qkv; /* modeling_gpt2.py: split(n_embd, dim=2) */
        rc = lin_block(c, 0, dq, &out->wq, err) || lin_block(c, dq, dq, &out->wk, err) ||
             lin_block(c, 2 * dq, dq, &out->wv, err) || bias_block(c, 0, dq, &out->bq, err) ||
             bias_block(c, dq, dq, &out->bk, err) || bias_block(c, 2 * dq, dq, &out->bv, err);
    } else {
        rc = lin_block(&y->q, 0, dq, &out->wq, err) || lin_block(&y->k, 0, dkv, &out->wk, err) ||
             lin_block(&y->v, 0, dkv, &out->wv, err) || bias_block(&y->q, 0, dq, &out->bq, err) ||
             bias_block(&y->k, 0, dkv, &out->bk, err) || bias_block(&y->v, 0, dkv, &out->bv, err);
    }
    if (!rc)
        rc = lin_block(&y->o, 0, g->d_model, &out->wo, err);
    if (rc) {
        ag_attn_weights_free(out);
        return err ? err->status : AG_ENOMEM;
    }
    return AG_OK;
}

void ag_attn_weights_free(ag_attn_weights *w)
{
    if (!w)
        return;
    ag_array *all[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->bq, &w->bk, &w->bv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ag_array_free(all[i]);
}
