/* model_int.h — the in-memory model shared by model.c (loading) and
 * forward.c (the pass). Private to the library. */
#ifndef ATTNGEOM_MODEL_INT_H
#define ATTNGEOM_MODEL_INT_H

#include "attngeom/model.h"

/* MLP activations, as named by HF's ACT2FN (activations.py). */
typedef enum {
    AGM_ACT_GELU_TANH, /* gelu_new, gelu_pytorch_tanh, gelu_fast-free tanh form */
    AGM_ACT_GELU_ERF,  /* gelu: exact erf form */
    AGM_ACT_RELU,
    AGM_ACT_SILU
} agm_act;

/* A projection y = x W + b. `w` holds in·out floats, stored as the file
 * has it: [in, out] for GPT-2 Conv1D (linear = 0), [out, in] for nn.Linear
 * (linear = 1). `b` (out floats) may be NULL. */
typedef struct {
    float *w, *b;
    int in, out;
    int linear;
} agm_lin;

/* LayerNorm (w, b) or RMSNorm (w, b = NULL); d floats each. */
typedef struct {
    float *w, *b;
} agm_norm;

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
    float *tok_emb;  /* (vocab, d) */
    float *pos_emb;  /* (max_positions, d); NULL for LLaMA (RoPE) */
    float *type_emb; /* (type_vocab, d); BERT only */
    agm_norm emb_ln;     /* BERT embeddings.LayerNorm */
    agm_norm final_norm; /* GPT-2 ln_f, LLaMA model.norm */
    agm_layer *layers;   /* n_layer */
    size_t max_mat;      /* largest weight matrix (elements): f64 scratch size */
};

#endif
