/* fuzz_model_config.c — ag_model_load on an arbitrary config.json next to
 * tiny synthetic weights (written once: GPT-2, BERT and a LLaMA file that
 * also holds every optional bias, d = 8, 2 layers, vocab 11, 6 positions);
 * when it loads, ag_model_forward on 3 tokens. The folder is picked from the
 * config text: "bert" -> BERT weights, "llama"/"mistral"/"qwen" -> LLaMA,
 * otherwise GPT-2. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "fuzz_util.h"

#define D 8
#define FF 16
#define V 11
#define P 6
#define L 2

typedef struct {
    char hdr[16384];
    size_t hl;
    float data[8192];
    size_t n;
} stw;

static void add(stw *w, const char *name, size_t r, size_t c)
{
    size_t cnt = c ? r * c : r;
    if (w->n + cnt > sizeof w->data / sizeof *w->data)
        abort();
    for (size_t i = 0; i < cnt; i++)
        w->data[w->n + i] = (float)((int)((w->n + i) * 7919u % 97u) - 48) / 256.0f;
    char shape[64];
    if (c)
        snprintf(shape, sizeof shape, "[%zu,%zu]", r, c);
    else
        snprintf(shape, sizeof shape, "[%zu]", r);
    w->hl += (size_t)snprintf(w->hdr + w->hl, sizeof w->hdr - w->hl,
                              "%s\"%s\":{\"dtype\":\"F32\",\"shape\":%s,"
                              "\"data_offsets\":[%zu,%zu]}",
                              w->hl > 1 ? "," : "", name, shape, w->n * 4,
                              (w->n + cnt) * 4);
    w->n += cnt;
}

static void save(stw *w, const char *dir)
{
    char path[700];
    w->hl += (size_t)snprintf(w->hdr + w->hl, sizeof w->hdr - w->hl, "}");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    unsigned char len[8];
    for (int b = 0; b < 8; b++)
        len[b] = (unsigned char)((uint64_t)w->hl >> (8 * b));
    if (!f || fwrite(len, 1, 8, f) != 8 || fwrite(w->hdr, 1, w->hl, f) != w->hl ||
        fwrite(w->data, 4, w->n, f) != w->n || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

static char dirs[3][600];

static void write_weights(void)
{
    static stw w;
    char s[160];
    /* GPT-2 (Conv1D weights are [in, out]) */
    memset(&w, 0, sizeof w);
    w.hl = (size_t)snprintf(w.hdr, sizeof w.hdr, "{");
    add(&w, "wte.weight", V, D);
    add(&w, "wpe.weight", P, D);
    add(&w, "ln_f.weight", D, 0);
    add(&w, "ln_f.bias", D, 0);
    for (int l = 0; l < L; l++) {
#define N(x) (snprintf(s, sizeof s, "h.%d.%s", l, x), s)
        add(&w, N("ln_1.weight"), D, 0);
        add(&w, N("ln_1.bias"), D, 0);
        add(&w, N("attn.c_attn.weight"), D, 3 * D);
        add(&w, N("attn.c_attn.bias"), 3 * D, 0);
        add(&w, N("attn.c_proj.weight"), D, D);
        add(&w, N("attn.c_proj.bias"), D, 0);
        add(&w, N("ln_2.weight"), D, 0);
        add(&w, N("ln_2.bias"), D, 0);
        add(&w, N("mlp.c_fc.weight"), D, FF);
        add(&w, N("mlp.c_fc.bias"), FF, 0);
        add(&w, N("mlp.c_proj.weight"), FF, D);
        add(&w, N("mlp.c_proj.bias"), D, 0);
#undef N
    }
    save(&w, fz_mkdir("gpt2", dirs[0], sizeof dirs[0]));
    /* BERT (nn.Linear weights are [out, in]) */
    memset(&w, 0, sizeof w);
    w.hl = (size_t)snprintf(w.hdr, sizeof w.hdr, "{");
    add(&w, "embeddings.word_embeddings.weight", V, D);
    add(&w, "embeddings.position_embeddings.weight", P, D);
    add(&w, "embeddings.token_type_embeddings.weight", 2, D);
    add(&w, "embeddings.LayerNorm.weight", D, 0);
    add(&w, "embeddings.LayerNorm.bias", D, 0);
    for (int l = 0; l < L; l++) {
#define N(x) (snprintf(s, sizeof s, "encoder.layer.%d.%s", l, x), s)
        const char *lin[] = {"attention.self.query", "attention.self.key",
                             "attention.self.value", "attention.output.dense"};
        char t[120];
        for (int k = 0; k < 4; k++) {
            snprintf(t, sizeof t, "%s.weight", lin[k]);
            add(&w, N(t), D, D);
            snprintf(t, sizeof t, "%s.bias", lin[k]);
            add(&w, N(t), D, 0);
        }
        add(&w, N("attention.output.LayerNorm.weight"), D, 0);
        add(&w, N("attention.output.LayerNorm.bias"), D, 0);
        add(&w, N("intermediate.dense.weight"), FF, D);
        add(&w, N("intermediate.dense.bias"), FF, 0);
        add(&w, N("output.dense.weight"), D, FF);
        add(&w, N("output.dense.bias"), D, 0);
        add(&w, N("output.LayerNorm.weight"), D, 0);
        add(&w, N("output.LayerNorm.bias"), D, 0);
#undef N
    }
    save(&w, fz_mkdir("bert", dirs[1], sizeof dirs[1]));
    /* LLaMA: 2 query heads, 1 kv head, head_dim 4, every optional bias */
    memset(&w, 0, sizeof w);
    w.hl = (size_t)snprintf(w.hdr, sizeof w.hdr, "{");
    add(&w, "embed_tokens.weight", V, D);
    add(&w, "norm.weight", D, 0);
    for (int l = 0; l < L; l++) {
#define N(x) (snprintf(s, sizeof s, "layers.%d.%s", l, x), s)
        add(&w, N("input_layernorm.weight"), D, 0);
        add(&w, N("self_attn.q_proj.weight"), D, D);
        add(&w, N("self_attn.q_proj.bias"), D, 0);
        add(&w, N("self_attn.k_proj.weight"), D / 2, D);
        add(&w, N("self_attn.k_proj.bias"), D / 2, 0);
        add(&w, N("self_attn.v_proj.weight"), D / 2, D);
        add(&w, N("self_attn.v_proj.bias"), D / 2, 0);
        add(&w, N("self_attn.o_proj.weight"), D, D);
        add(&w, N("self_attn.o_proj.bias"), D, 0);
        add(&w, N("post_attention_layernorm.weight"), D, 0);
        add(&w, N("mlp.gate_proj.weight"), FF, D);
        add(&w, N("mlp.gate_proj.bias"), FF, 0);
        add(&w, N("mlp.up_proj.weight"), FF, D);
        add(&w, N("mlp.up_proj.bias"), FF, 0);
        add(&w, N("mlp.down_proj.weight"), D, FF);
        add(&w, N("mlp.down_proj.bias"), D, 0);
#undef N
    }
    save(&w, fz_mkdir("llama", dirs[2], sizeof dirs[2]));
}

static int on_layer(const ag_layer_view *v, void *user)
{
    volatile double s = 0;
    for (size_t i = 0; i < (size_t)v->n_head * v->n * v->n; i++)
        s += v->attn[i];
    for (size_t i = 0; i < v->n * v->d; i++)
        s += v->x[i];
    (void)s;
    (*(int *)user)++;
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    write_weights();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = dirs[0];
    if (memmem(data, size, "bert", 4))
        dir = dirs[1];
    else if (memmem(data, size, "llama", 5) || memmem(data, size, "mistral", 7) ||
             memmem(data, size, "qwen", 4))
        dir = dirs[2];
    char path[700];
    snprintf(path, sizeof path, "%s/config.json", dir);
    fz_write(path, data, size);

    ag_model *m = NULL;
    ag_error err = {0};
    int rc = ag_model_load(dir, &m, &err);
    if (rc != AG_OK) {
        if (m || err.status != rc || !err.message[0])
            abort();
        unlink(path);
        return 0;
    }
    const ag_model_config *c = ag_model_get_config(m);
    size_t n = 3;
    double *hidden = calloc((size_t)(c->n_layer + 1) * n * (size_t)c->d_model, sizeof *hidden);
    int32_t ids[3] = {0, 5, 10};
    int layers = 0;
    rc = ag_model_forward(m, ids, n, size % 2 ? AG_PRECISION_F64 : AG_PRECISION_F32, on_layer,
                          &layers, hidden, &err);
    if (rc == AG_OK && layers != c->n_layer)
        abort();
    free(hidden);
    ag_model_free(m);
    unlink(path);
    return 0;
}
