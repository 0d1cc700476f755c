/* Internal prefix: agm_ (module src/engine/). */
/* model_int.h — the in-memory model shared by config.c (config.json),
 * load.c (weights), forward.c (the pass) and attn_weights.c (family D).
 * Private to the library.
 *
 * Memory: weight matrices stay in the mapped safetensors files in their
 * stored dtype (zero copy); only norms and biases are copied (as float). */
#ifndef ATTNGEOM_MODEL_INT_H
#define ATTNGEOM_MODEL_INT_H

#include "arch.h"
#include "attngeom/io.h"
#include "attngeom/model.h"

#define AGM_CAP_DIM    (1 << 20)         /* any width, vocab, position count or window */
#define AGM_CAP_LAYER  4096
#define AGM_CAP_SHARDS 4096
#define AGM_CAP_JSON   ((size_t)64 << 20) /* bytes of config.json or the shard index */

/* MLP activations, as named by HF's ACT2FN (activations.py). */
typedef enum {
    AGM_ACT_GELU_TANH, /* gelu_new, gelu_pytorch_tanh */
    AGM_ACT_GELU_ERF,  /* gelu: exact erf form */
    AGM_ACT_RELU,
    AGM_ACT_SILU,
    AGM_ACT_BLOOM_GELU, /* modeling_bloom.py bloom_gelu_forward (no config name) */
    AGM_ACT_QUICK_GELU  /* quick_gelu: x·sigmoid(1.702·x) (QuickGELUActivation; CLIP) */
} agm_act;

/* A weight matrix as the file stores it: little-endian F32, F16 or BF16
 * values inside the read-only mapping of its safetensors file (the model
 * keeps the file open, see ag_model.files). Never converted as a whole: the
 * pass converts one matrix into its own scratch right before the product,
 * and only the used rows of an embedding table. */
typedef struct {
    const unsigned char *p; /* first byte; NULL when the model has no such tensor */
    ag_dtype dt;            /* AG_DT_F32, AG_DT_F16 or AG_DT_BF16 */
    size_t n;               /* elements */
} agm_tensor;

/* Elements [i0, i0 + n) of t as a tensor of their own (the same bytes):
 * one expert's block of a fused [E, ...] expert tensor. */
agm_tensor agm_slice(const agm_tensor *t, size_t i0, size_t n);
/* Stored element i, converted exactly (every F16/BF16/F32 value is a float). */
float agm_at(const agm_tensor *t, size_t i);
/* Elements [i0, i0 + cnt) of t into dst (cnt floats / doubles), exactly. */
void agm_to_float(const agm_tensor *t, size_t i0, size_t cnt, float *dst);
void agm_to_double(const agm_tensor *t, size_t i0, size_t cnt, double *dst);
/* The F32 values as a float array when they can be used in place (little-
 * endian host, 4-byte aligned); else NULL. */
const float *agm_f32_in_place(const agm_tensor *t);
/* Index of the first NaN/Inf among the stored values, or t->n. */
size_t agm_first_nonfinite(const agm_tensor *t);

/* A projection y = x W + b. `w` holds in·out values, stored as the file
 * has it: [in, out] for GPT-2 Conv1D (linear = 0), [out, in] for nn.Linear
 * (linear = 1). `b` (out floats, converted at load: small) may be NULL. */
typedef struct {
    agm_tensor w;
    float *b;
    int in, out;
    int linear;
} agm_lin;

/* A norm's parameters: LayerNorm w, b; RMSNorm w (b NULL); w = b = NULL
 * for OPT's layer_norm_elementwise_affine = false. d floats each, converted
 * at load (they are small). The kind is the model's (cfg.norm). */
typedef struct {
    float *w, *b;
} agm_norm;

/* Where head h's q, k or v columns lie in a projection's output: column
 * off + h·stride + c for c < head_dim (separate: 0, head_dim; GPT-2 and
 * Phi-3 column blocks: the block's start, head_dim; GPT-NeoX per head:
 * 0 / head_dim / 2·head_dim, 3·head_dim). */
typedef struct {
    int off, stride;
    int group; /* > 0: heads share a block of `stride` columns `group` at a
                  time (Falcon's grouped queries): head h's columns start at
                  off + (h / group)·stride + (h % group)·head_dim */
} agm_cols;

/* The first column of head h of hd values in c. */
static inline size_t agm_col(agm_cols c, size_t h, size_t hd)
{
    return c.group > 0 ? (size_t)c.off + h / (size_t)c.group * (size_t)c.stride + h % (size_t)c.group * hd
                       : (size_t)c.off + h * (size_t)c.stride;
}

/* The columns of Q (which = 0), K (1) or V (2) in layer output of the
 * projection that carries them (the fused one, or its own). */
agm_cols agm_qkv_cols(const ag_model_config *g, int which);

typedef struct {
    agm_norm n1, n2;          /* the descriptor's norm1 / norm2 */
    agm_norm attn_out, mlp_out; /* Gemma-2's sandwich norms */
    agm_norm ls1, ls2;        /* DINOv2 layer scale (w only; NULL: none) */
    agm_norm q_norm, k_norm;  /* QK-norm weights: head_dim (AG_QK_NORM_HEAD) or
                                 the projection's width (AG_QK_NORM_FULL) */
    agm_lin qkv;              /* fused Q/K/V (AG_QKV_BLOCKS, AG_QKV_PER_HEAD) */
    agm_lin q, k, v;          /* AG_QKV_SEPARATE */
    agm_lin o;
    agm_lin up;               /* AG_MLP_GATED_FUSED: gate | up, 2·d_ff outputs */
    agm_lin gate, down;
    agm_lin router;           /* MoE: [n_expert, d] logits */
    agm_lin *experts;         /* MoE: 3·n_expert (gate, up, down of each
                                 expert); NULL: a dense layer */
    agm_lin sh[3];            /* Qwen2-MoE shared expert gate, up, down */
    agm_lin sh_gate;          /* its sigmoid gate [1, d] */
} agm_layer;

struct ag_model {
    ag_model_config cfg;
    const agm_arch *arch;
    agm_act act;
    int norm_affine;     /* norms have parameters (OPT: layer_norm_elementwise_affine) */
    int norm_bias;       /* LayerNorms have a bias tensor (ModernBERT norm_bias) */
    int clip_towers;     /* 1: one tower of a `clip` folder (ag_model_load_tower) */
    int *window;         /* (n_layer) each layer's sliding window, 0: none */
    int *sparse;         /* (n_layer) 1: the layer's MLP is the experts; NULL
                            when the model has none */
    double *rope_factors[2]; /* longrope short_factor, long_factor (rotary_dim/2
                                each; cfg.rope_extra points at them), or NULL */
    agm_tensor tok_emb;  /* (vocab, d_embed) */
    agm_tensor pos_emb;  /* (max_positions + pos_extra, d); p NULL for RoPE */
    agm_tensor type_emb; /* (type_vocab, d); BERT family */
    agm_lin proj_in;     /* OPT project_in (d_embed -> d); w.p NULL if none */
    agm_norm emb_norm;   /* BERT family embeddings.LayerNorm */
    agm_norm final_norm; /* ln_f, norm, final_layer_norm (cfg.final_norm) */
    agm_tensor cls;      /* ViT cls_token (d) */
    agm_tensor registers; /* DINOv2 register_tokens (R, d); p NULL: none */
    agm_lin conv1;       /* ViT patch projection, Whisper conv1: the kernel
                            (d, C, k_h, k_w) read as an nn.Linear [out, in]
                            of in = C·k_h·k_w (the flattened kernel) */
    agm_lin conv2;       /* Whisper conv2: (d, d, 3), in = 3·d */
    agm_layer *layers;   /* n_layer */
    size_t max_mat;      /* largest projection matrix (elements): scratch size */
    ag_safetensors **files; /* nfiles weight files, open (and mapped once) for
                               the model's lifetime: the tensors point into them */
    size_t nfiles;
    double *alibi_slopes; /* (n_head) ag_alibi_slopes of cfg.alibi, or NULL */
    int stack;           /* arch.h agm_arch.stack: 0 one stack, 1 the encoder,
                            2 the decoder of an encoder–decoder folder */
    int rel_buckets, rel_max_distance; /* T5 relative_attention_num_buckets,
                                          relative_attention_max_distance */
    agm_tensor rel_bias; /* (rel_buckets, n_head) block 0's relative_attention_bias */
    agm_layer *cross;    /* (n_layer) the decoder's cross-attention: q, k, v,
                            o and its pre-norm n1; NULL for other stacks */
    int decoder_start;   /* the decoder's config.json decoder_start_token_id,
                            -1: none given (other stacks: -1) */
    const ag_seq2seq *pair; /* the pair both stacks belong to (set by
                               ag_seq2seq_load; NULL for a model of one stack):
                               how a run given the encoder reaches its decoder
                               (ag_model_seq2seq) without a second handle */
};

/* The descriptor row of the stack (arch.h agm_arch.stack) that m->stack
 * asks for is the one read: agm_read_config with m->stack set first. */

/* T5's bucket of the relative position rel = key − query
 * (modeling_t5.py _relative_position_bucket, its float32 logarithm). */
int agm_t5_bucket(int rel, int bidirectional, int num_buckets, int max_distance);
/* T5's position bias of head h over n tokens (modeling_t5.py
 * T5Attention.compute_bias: relative_attention_bias[bucket(j − i), h] at
 * query i, key j; bidirectional buckets unless causal) as the 2n − 1
 * diagonals of that Toeplitz matrix: t[n − 1 + j − i], each the stored
 * float. The one definition of the pass's table (forward_tmpl.h) and of
 * ag_model_position_bias. */
void agm_t5_bias_diagonals(const ag_model *m, size_t n, int h, double *t);

/* "(3, 64, 64)", "(5,)": a shape for messages, as numpy prints it. */
void agm_shape_str(char *buf, size_t size, int ndim, const size_t *shape);

/* config.json of dir into m (cfg, arch, act, norm_affine, window). */
int agm_read_config(const char *dir, ag_input_kind input, ag_model *m, ag_error *err);

#endif
