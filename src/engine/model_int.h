/* model_int.h — the in-memory model shared by model.c (loading) and
 * forward.c (the pass). Private to the library.
 *
 * Memory: weight matrices stay in the mapped safetensors files in their
 * stored dtype (zero copy); only norms and biases are copied (as float). */
#ifndef ATTNGEOM_MODEL_INT_H
#define ATTNGEOM_MODEL_INT_H

#include "attngeom/io.h"
#include "attngeom/model.h"

/* MLP activations, as named by HF's ACT2FN (activations.py). */
typedef enum {
    AGM_ACT_GELU_TANH, /* gelu_new, gelu_pytorch_tanh, gelu_fast-free tanh form */
    AGM_ACT_GELU_ERF,  /* gelu: exact erf form */
    AGM_ACT_RELU,
    AGM_ACT_SILU
} agm_act;

/* A weight matrix as the file stores it: little-endian F32, F16 or BF16
 * values inside a read-only mapping of its safetensors file (owned by the
 * model, see agm_map). Never converted as a whole: the pass converts one
 * matrix into its own scratch right before the product, and only the used
 * rows of an embedding table. */
typedef struct {
    const unsigned char *p; /* first byte; NULL when the model has no such tensor */
    ag_dtype dt;            /* AG_DT_F32, AG_DT_F16 or AG_DT_BF16 */
    size_t n;               /* elements */
} agm_tensor;

/* Stored element i, converted exactly (every F16/BF16/F32 value is a float). */
float agm_at(const agm_tensor *t, size_t i);
/* Elements [i0, i0 + cnt) of t into dst (cnt floats / doubles), exactly. */
void agm_to_float(const agm_tensor *t, size_t i0, size_t cnt, float *dst);
void agm_to_double(const agm_tensor *t, size_t i0, size_t cnt, double *dst);
/* The F32 values as a float array when they can be used in place (little-
 * endian host, 4-byte aligned); else NULL. */
const float *agm_f32_in_place(const agm_tensor *t);

/* A projection y = x W + b. `w` holds in·out values, stored as the file
 * has it: [in, out] for GPT-2 Conv1D (linear = 0), [out, in] for nn.Linear
 * (linear = 1). `b` (out floats, converted at load: small) may be NULL. */
typedef struct {
    agm_tensor w;
    float *b;
    int in, out;
    int linear;
} agm_lin;

/* LayerNorm (w, b) or RMSNorm (w, b = NULL); d floats each, converted at
 * load (they are small). */
typedef struct {
    float *w, *b;
} agm_norm;

/* A safetensors file mapped read-only for the model's lifetime. */
typedef struct {
    void *p;
    size_t len;
} agm_map;

typedef struct {
    agm_norm ln1, ln2;  /* GPT-2 ln_1/ln_2, BERT attention.output/output
                           LayerNorm, LLaMA input/post_attention_layernorm */
    agm_lin qkv;        /* GPT-2 fused c_attn (Q|K|V column blocks) */
    agm_lin q, k, v, o; /* BERT/LLaMA projections; o also GPT-2 attn.c_proj */
    agm_lin up, gate, down; /* GPT-2 c_fc/-/c_proj, BERT intermediate/-/output,
                               LLaMA up/gate/down */
} agm_layer;

struct ag_model {
    ag_model_config cfg;
    agm_act act;
    agm_tensor tok_emb;  /* (vocab, d) */
    agm_tensor pos_emb;  /* (max_positions, d); p NULL for LLaMA (RoPE) */
    agm_tensor type_emb; /* (type_vocab, d); BERT only */
    agm_norm emb_ln;     /* BERT embeddings.LayerNorm */
    agm_norm final_norm; /* GPT-2 ln_f, LLaMA model.norm */
    agm_layer *layers;   /* n_layer */
    size_t max_mat;      /* largest projection matrix (elements): scratch size */
    agm_map *maps;       /* nmaps files the tensors point into */
    size_t nmaps;
};

#endif
