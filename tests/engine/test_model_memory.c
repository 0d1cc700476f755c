/* test_model_memory.c — weights stay in their mapped files in the stored
 * dtype (src/engine/model.c, src/engine/forward_tmpl.h): the pass gives bit-identical
 * results whether a model is stored as F32, BF16, F16 or as F32 at an
 * unaligned offset (values chosen exact in every dtype); NaN/Inf inside a
 * mapped matrix is still refused at load; the model keeps working after its
 * files are deleted (it holds the mappings); concurrent passes on one model
 * agree. Tiny synthetic folders written here (gpt2, bert, llama with GQA). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/core.h"
#include "attngeom/model.h"
#include "../util/test_io_util.h"

#define MM_D 8
#define MM_N 5 /* tokens */
#define MM_MAXT 64

typedef struct {
    char name[96];
    size_t r, c; /* c 0: a vector */
} mm_t;

typedef struct {
    mm_t t[MM_MAXT];
    int n;
} mm_list;

static void mm_add(mm_list *l, const char *name, size_t r, size_t c)
{
    snprintf(l->t[l->n].name, sizeof l->t[0].name, "%s", name);
    l->t[l->n].r = r;
    l->t[l->n++].c = c;
}

/* The tensors and config.json of each architecture: d = 8, 2 layers,
 * 2 heads (llama: 1 kv head), vocab 11, 16 positions. */
static const char *mm_spec(const char *arch, mm_list *l)
{
    char n[96];
    memset(l, 0, sizeof *l);
#define A(s, r, c) (snprintf(n, sizeof n, s, i), mm_add(l, n, r, c))
    if (!strcmp(arch, "llama")) {
        mm_add(l, "model.embed_tokens.weight", 11, 8);
        for (int i = 0; i < 2; i++) {
            A("model.layers.%d.input_layernorm.weight", 8, 0);
            A("model.layers.%d.self_attn.q_proj.weight", 8, 8);
            A("model.layers.%d.self_attn.k_proj.weight", 4, 8);
            A("model.layers.%d.self_attn.v_proj.weight", 4, 8);
            A("model.layers.%d.self_attn.o_proj.weight", 8, 8);
            A("model.layers.%d.post_attention_layernorm.weight", 8, 0);
            A("model.layers.%d.mlp.gate_proj.weight", 16, 8);
            A("model.layers.%d.mlp.up_proj.weight", 16, 8);
            A("model.layers.%d.mlp.down_proj.weight", 8, 16);
        }
        mm_add(l, "model.norm.weight", 8, 0);
        return "{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 2, "
               "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"intermediate_size\": 16, "
               "\"vocab_size\": 11, \"max_position_embeddings\": 16}";
    }
    if (!strcmp(arch, "gpt2")) {
        mm_add(l, "wte.weight", 11, 8);
        mm_add(l, "wpe.weight", 16, 8);
        const char *vec[] = {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias", "attn.c_proj.bias",
                             "mlp.c_proj.bias"};
        for (int i = 0; i < 2; i++) {
            for (size_t k = 0; k < 6; k++) {
                char f[64];
                snprintf(f, sizeof f, "h.%%d.%s", vec[k]);
                A(f, 8, 0);
            }
            A("h.%d.attn.c_attn.weight", 8, 24);
            A("h.%d.attn.c_attn.bias", 24, 0);
            A("h.%d.attn.c_proj.weight", 8, 8);
            A("h.%d.mlp.c_fc.weight", 8, 32);
            A("h.%d.mlp.c_fc.bias", 32, 0);
            A("h.%d.mlp.c_proj.weight", 32, 8);
        }
        mm_add(l, "ln_f.weight", 8, 0);
        mm_add(l, "ln_f.bias", 8, 0);
        return "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, "
               "\"n_positions\": 16, \"vocab_size\": 11}";
    }
    mm_add(l, "embeddings.word_embeddings.weight", 11, 8);
    mm_add(l, "embeddings.position_embeddings.weight", 16, 8);
    mm_add(l, "embeddings.token_type_embeddings.weight", 2, 8);
    mm_add(l, "embeddings.LayerNorm.weight", 8, 0);
    mm_add(l, "embeddings.LayerNorm.bias", 8, 0);
    const char *sq[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                        "attention.output.dense"};
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < 4; k++) {
            char f[96];
            snprintf(f, sizeof f, "encoder.layer.%%d.%s.weight", sq[k]);
            A(f, 8, 8);
            snprintf(f, sizeof f, "encoder.layer.%%d.%s.bias", sq[k]);
            A(f, 8, 0);
        }
        A("encoder.layer.%d.attention.output.LayerNorm.weight", 8, 0);
        A("encoder.layer.%d.attention.output.LayerNorm.bias", 8, 0);
        A("encoder.layer.%d.intermediate.dense.weight", 16, 8);
        A("encoder.layer.%d.intermediate.dense.bias", 16, 0);
        A("encoder.layer.%d.output.dense.weight", 8, 16);
        A("encoder.layer.%d.output.dense.bias", 8, 0);
        A("encoder.layer.%d.output.LayerNorm.weight", 8, 0);
        A("encoder.layer.%d.output.LayerNorm.bias", 8, 0);
    }
#undef A
    return "{\"model_type\": \"bert\", \"hidden_size\": 8, \"num_hidden_layers\": 2, "
           "\"num_attention_heads\": 2, \"intermediate_size\": 16, \"vocab_size\": 11, "
           "\"max_position_embeddings\": 16}";
}

typedef struct {
    const char *dtype; /* "F32", "BF16", "F16" */
    size_t misalign;   /* data area starts at 8 + N with (8 + N) % 8 == misalign */
    const char *bad;   /* tensor holding bad_value at index bad_index, or NULL */
    size_t bad_index;
    double bad_value;
} mm_opts;

/* Values k/32, |k| <= 16, from a fixed sequence: exact in F32, BF16 and F16. */
static double mm_value(size_t i)
{
    return (double)((int)(((i * 2654435761u) >> 7) % 33) - 16) / 32.0;
}

static size_t mm_nelem(const mm_t *t) { return t->r * (t->c ? t->c : 1); }

/* JSON header for the list, padded with spaces to the requested alignment. */
static char *mm_header(const mm_list *l, size_t item, size_t misalign, const char *dtype, size_t *len)
{
    size_t cap = 256 + (size_t)l->n * 200, k = 0, off = 0;
    char *h = malloc(cap);
    cr_assert(h);
    k += (size_t)snprintf(h, cap, "{");
    for (int i = 0; i < l->n; i++) {
        const mm_t *t = &l->t[i];
        size_t b = item * mm_nelem(t);
        char shape[48];
        snprintf(shape, sizeof shape, t->c ? "[%zu, %zu]" : "[%zu]", t->r, t->c);
        k += (size_t)snprintf(h + k, cap - k, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                              i ? ", " : "", t->name, dtype, shape, off, off + b);
        off += b;
    }
    while ((8 + k + 1) % 8 != misalign)
        h[k++] = ' ';
    h[k++] = '}';
    h[k] = '\0'; /* tio_write_safetensors takes the length from strlen */
    *len = k;
    return h;
}

static const char *mm_folder(const char *arch, const char *tag, const mm_opts *o)
{
    mm_list l;
    const char *cfg = mm_spec(arch, &l);
    char *dir = strdup(tio_path(tag)), path[4400];
    cr_assert(dir && mkdir(dir, 0755) == 0, "cannot create %s", tag);
    snprintf(path, sizeof path, "%s/config.json", dir);
    cr_assert_eq(tio_write_bytes(path, cfg, strlen(cfg)), 0);
    size_t item = tio_st_itemsize(o->dtype), hl, total = 0, at = 0;
    for (int i = 0; i < l.n; i++)
        total += mm_nelem(&l.t[i]);
    double *v = malloc(total * sizeof *v);
    unsigned char *data = malloc(total * item);
    cr_assert(v && data);
    for (int i = 0; i < l.n; i++) {
        for (size_t j = 0; j < mm_nelem(&l.t[i]); j++)
            v[at + j] = mm_value(at + j);
        if (o->bad && !strcmp(o->bad, l.t[i].name))
            v[at + o->bad_index] = o->bad_value;
        at += mm_nelem(&l.t[i]);
    }
    cr_assert_eq(tio_encode_st(o->dtype, v, total, data), 0);
    char *h = mm_header(&l, item, o->misalign, o->dtype, &hl);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    cr_assert_eq(tio_write_safetensors(path, h, data, total * item), 0);
    free(h);
    free(data);
    free(v);
    static char keep[8][4400];
    static unsigned next;
    char *out = keep[next++ % 8];
    snprintf(out, sizeof keep[0], "%s", dir);
    free(dir);
    return out;
}

/* ---- one pass: every layer's attention and every hidden state ----------- */

typedef struct {
    double attn[2][2 * MM_N * MM_N]; /* (layer, H·n·n) */
    double hidden[3 * MM_N * MM_D];  /* (L+1, n, d) */
} mm_out;

static int mm_keep(const ag_layer_view *v, void *user)
{
    mm_out *o = user;
    memcpy(o->attn[v->layer], v->attn, sizeof o->attn[0]);
    return 0;
}

static void mm_run(const ag_model *m, ag_precision pr, mm_out *o)
{
    static const int32_t ids[MM_N] = {3, 0, 10, 7, 3};
    ag_error err = {0};
    memset(o, 0, sizeof *o);
    cr_assert_eq(ag_model_forward(m, ids, MM_N, pr, mm_keep, o, o->hidden, &err), AG_OK, "%s", err.message);
}

static ag_model *mm_load(const char *dir)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: %s", dir, err.message);
    return m;
}

static void mm_same_weights(const ag_model *a, const ag_model *b)
{
    ag_attn_weights x, y;
    ag_error err = {0};
    cr_assert_eq(ag_model_attn_weights(a, 1, &x, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_model_attn_weights(b, 1, &y, &err), AG_OK, "%s", err.message);
    const ag_array *ax[] = {&x.wq, &x.wk, &x.wv, &x.wo, &x.bq}, *ay[] = {&y.wq, &y.wk, &y.wv, &y.wo, &y.bq};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(ag_array_size(ax[i]), ag_array_size(ay[i]));
        cr_assert(!ax[i]->data || !memcmp(ax[i]->data, ay[i]->data, ag_array_size(ax[i]) * sizeof(double)));
    }
    ag_attn_weights_free(&x);
    ag_attn_weights_free(&y);
}

TestSuite(model_memory, .fini = tio_cleanup);

/* Reference: aligned F32; each variant must give the very same bits. */
static void check_dtypes(const char *arch)
{
    static const mm_opts variants[] = {{.dtype = "BF16"}, {.dtype = "F16"}, {.dtype = "F32", .misalign = 2}, {.dtype = "BF16", .misalign = 2}};
    mm_opts ref_o = {.dtype = "F32"};
    char tag[64];
    snprintf(tag, sizeof tag, "%s-ref", arch);
    ag_model *ref = mm_load(mm_folder(arch, tag, &ref_o));
    static mm_out want, got;
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        snprintf(tag, sizeof tag, "%s-%zu", arch, v);
        ag_model *m = mm_load(mm_folder(arch, tag, &variants[v]));
        for (int p = 0; p < 2; p++) {
            ag_precision pr = p ? AG_PRECISION_F64 : AG_PRECISION_F32;
            mm_run(ref, pr, &want);
            mm_run(m, pr, &got);
            cr_assert(!memcmp(&want, &got, sizeof want), "%s stored as %s (misalign %zu), %s: results differ",
                      arch, variants[v].dtype, variants[v].misalign, p ? "f64" : "f32");
        }
        mm_same_weights(ref, m);
        ag_model_free(m);
    }
    ag_model_free(ref);
}

Test(model_memory, llama_stored_dtype_is_exact) { check_dtypes("llama"); }
Test(model_memory, gpt2_stored_dtype_is_exact) { check_dtypes("gpt2"); }
Test(model_memory, bert_stored_dtype_is_exact) { check_dtypes("bert"); }

static void expect_nonfinite(const char *arch, const mm_opts *o, const char *tag)
{
    ag_model *m = NULL;
    ag_error err = {0};
    char idx[64];
    cr_assert_eq(ag_model_load(mm_folder(arch, tag, o), &m, &err), AG_ENONFINITE, "%s", err.message);
    cr_assert_null(m);
    TIO_ASSERT_MSG_HAS(&err, o->bad);
    snprintf(idx, sizeof idx, "at index %zu", o->bad_index);
    TIO_ASSERT_MSG_HAS(&err, idx);
}

/* The scan of the stored bits finds NaN/Inf in mapped matrices and
 * embeddings of every dtype, wherever they are. */
Test(model_memory, nonfinite_in_mapped_matrix)
{
    mm_opts a = {"BF16", 0, "model.layers.1.mlp.down_proj.weight", 127, INFINITY};
    mm_opts b = {"F16", 0, "model.embed_tokens.weight", 13, NAN};
    mm_opts c = {"F32", 2, "h.1.attn.c_attn.weight", 5, -INFINITY};
    mm_opts d = {"BF16", 0, "embeddings.token_type_embeddings.weight", 15, NAN};
    expect_nonfinite("llama", &a, "n1");
    expect_nonfinite("llama", &b, "n2");
    expect_nonfinite("gpt2", &c, "n3");
    expect_nonfinite("bert", &d, "n4");
}

/* The model holds its own mappings: deleting the files changes nothing. */
Test(model_memory, files_deleted_after_load)
{
    mm_opts o = {.dtype = "BF16"};
    const char *dir = mm_folder("llama", "del", &o);
    ag_model *m = mm_load(dir);
    static mm_out before, after;
    mm_run(m, AG_PRECISION_F32, &before);
    char p[4400];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(remove(p), 0);
    mm_run(m, AG_PRECISION_F32, &after);
    cr_assert(!memcmp(&before, &after, sizeof before));
    ag_model_free(m);
}

/* Each pass converts weights into its own scratch: concurrent passes on one
 * model agree with a lone pass. */
typedef struct {
    const ag_model *m;
    ag_precision pr;
    mm_out out;
} mm_job;

static void *mm_thread(void *arg)
{
    mm_job *j = arg;
    for (int k = 0; k < 20; k++)
        mm_run(j->m, j->pr, &j->out);
    return NULL;
}

Test(model_memory, concurrent_passes)
{
    mm_opts o = {.dtype = "BF16", .misalign = 2};
    ag_model *m = mm_load(mm_folder("gpt2", "conc", &o));
    static mm_job jobs[4];
    static mm_out want[2];
    mm_run(m, AG_PRECISION_F32, &want[0]);
    mm_run(m, AG_PRECISION_F64, &want[1]);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (mm_job){.m = m, .pr = i % 2 ? AG_PRECISION_F64 : AG_PRECISION_F32};
        cr_assert_eq(pthread_create(&th[i], NULL, mm_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert(!memcmp(&jobs[i].out, &want[i % 2], sizeof want[0]), "thread %d differs", i);
    }
    ag_model_free(m);
}
