/* Internal prefix: agm_ (module src/engine/). */
/* arch.h — architectures as data: one descriptor per model_type (the table
 * is src/engine/arch.c). config.c reads config.json through a descriptor's
 * keys, load.c finds the weights through its tensor names, and the forward
 * pass (forward_tmpl.h) follows the normalised ag_model_config it yields: no
 * code anywhere is specific to one architecture. Private to the library.
 *
 * Tensor names are relative to the base-model prefix (one of `prefixes`,
 * or none, detected once from the token embedding) and, per layer, to
 * `layer` ("h.%d." with the layer index). A NULL name: the architecture has
 * no such tensor. Stems (norms, projections) get ".weight" / ".bias". */
#ifndef ATTNGEOM_ARCH_H
#define ATTNGEOM_ARCH_H

#include "attngeom/model.h"

/* A config.json boolean with its default; key NULL: always the default. */
typedef struct {
    const char *key;
    int dflt;
} agm_flag;

/* A row applies when config.json's key (a boolean or an integer; absent
 * or null: dflt) equals want (true is 1). */
typedef struct {
    const char *key;
    int dflt, want;
} agm_sel;

/* Which layers have a sliding window (config.c, cfg_windows). */
typedef enum {
    AGM_WIN_NONE,     /* none */
    AGM_WIN_ALL,      /* every layer when `sliding_window` is set (Mistral,
                         Phi-3: one sliding mask for all layers) */
    AGM_WIN_QWEN2,    /* use_sliding_window, then layer_types or layers
                         >= max_window_layers (configuration_qwen2.py) */
    AGM_WIN_USE_ALL,  /* every layer when use_sliding_window and sliding_window
                         (modeling_qwen2_moe.py @1c351314a42a: eager's one
                         sliding mask; max_window_layers is read only by the
                         flash-attention path) */
    AGM_WIN_ALTERNATE, /* layer_types, or the even layers (configuration_gemma2.py) */
    AGM_WIN_PATTERN,  /* layer_types, or layer i when (i + 1) % sliding_window_pattern
                         (configuration_gemma3.py) */
    AGM_WIN_EVERY_N   /* layer i when i % global_attn_every_n_layers != 0, a
                         band of local_attention // 2 keys on each side, not
                         causal (modeling_modernbert.py) */
} agm_window_rule;

typedef struct {
    const char *model_type;
    ag_arch arch;
    const char *modeling;     /* the Hugging Face file followed */
    const char *prefixes[3];  /* base-model prefixes, tried before none */

    /* ---- config.json keys (NULL: not read) ---- */
    const char *k_layers, *k_heads, *k_hidden, *k_ff, *k_positions;
    int ff_mult;              /* k_ff absent or null: ff_mult·hidden (GPT-2 4),
                                 0: k_ff required */
    const char *k_kv_heads;   /* grouped-query heads, default n_head */
    const char *k_head_dim;   /* explicit head_dim */
    int head_dim_dflt;        /* head_dim when k_head_dim is absent; 0: d/H */
    const char *k_eps;        /* NULL: eps is fixed (nn.LayerNorm default) */
    double eps;
    const char *k_act, *act;  /* activation key and default */
    const char *k_type_vocab; /* token types (BERT family), default 2 */
    const char *k_pos_kind;   /* position_embedding_type: only "absolute" */
    const char *k_pad;        /* AG_POS_PADDED: pad_token_id, default 1 */
    const char *k_embed_dim;  /* OPT word_embed_proj_dim (default hidden) */
    const char *k_affine;     /* OPT layer_norm_elementwise_affine */
    const char *k_theta;      /* RoPE base: rope_theta / rotary_emb_base */
    double theta_dflt;        /* when k_theta is absent; 0: 10000 */
    const char *k_partial;    /* rotary fraction: partial_rotary_factor / rotary_pct */
    double partial_dflt;
    const char *k_residual;   /* a boolean choosing the residual wiring */
    ag_residual res_true, res_false;
    const char *k_no_final;   /* OPT _remove_final_layer_norm */
    const char *k_scale_on;   /* GPT-2 scale_attn_weights (default true) */
    const char *k_inv_layer;  /* GPT-2 scale_attn_by_inverse_layer_idx */
    const char *k_query_scalar; /* Gemma-2 query_pre_attn_scalar (default 256) */
    const char *k_softcap;    /* Gemma-2 attn_logit_softcapping (default 50) */
    double softcap_dflt;      /* when k_softcap is absent (Gemma-2 50, Gemma-3 none) */
    const char *k_local_theta; /* Gemma-3 rope_local_base_freq: the sliding
                                  layers' RoPE base (default 10000) */
    const char *k_bidir;      /* Gemma use_bidirectional_attention: refused */
    const char *k_norm_bias;  /* ModernBERT norm_bias: LayerNorms without a
                                 bias when false (NULL: always a bias) */
    int first_no_norm1;       /* ModernBERT: layer 0 has no norm1 (Identity) */
    const char *k_rotary_dim; /* GPT-J rotary_dim: rotated dims as a count */
    int interleaved;          /* GPT-J rotate_every_two pairs (2j, 2j + 1) */
    int su_yarn_longrope;     /* Phi-3: rope_scaling "su" and "yarn" mean longrope */
    agm_window_rule windows;
    int window_dflt;          /* sliding_window when absent (0: none) */
    agm_flag bias_qkv, bias_o, bias_mlp;

    /* ---- the architecture ---- */
    ag_norm_kind norm;
    ag_residual residual;     /* unless k_residual */
    ag_positions positions;
    int pos_extra;            /* position rows beyond max_positions (OPT 2, its offset) */
    int causal, sandwich, embed_sqrt, scale_query, conv1d;
    int no_pre_norm;          /* OLMo-2: norm1, norm2 NULL, X = h */
    ag_qk_norm qk_norm;       /* Qwen3 per head, OLMo-2 whole projection */
    ag_qkv_layout qkv;
    ag_mlp_layout mlp;

    /* ---- tensor names ---- */
    const char *tok, *pos, *type, *emb_norm, *proj_in, *final_norm;
    const char *layer;        /* per-layer prefix, "%d" = layer index */
    const char *norm1;        /* before attention (PRE, PARALLEL) or after
                                 its residual add (POST) */
    const char *norm2;        /* before the MLP, or after its add (POST) */
    const char *attn_out_norm, *mlp_out_norm; /* sandwich (Gemma-2) */
    const char *q, *k, *v;    /* AG_QKV_SEPARATE */
    const char *q_norm, *k_norm; /* QK-norm weights (qk_norm) */
    const char *qkv_fused;    /* AG_QKV_BLOCKS, AG_QKV_PER_HEAD */
    const char *o;
    const char *up;           /* AG_MLP_GATED_FUSED: the gate_up projection */
    const char *gate, *down;

    /* ---- models whose input is a tensor (ViT, the Whisper encoder) ---- */
    ag_input_kind input;      /* AG_INPUT_TOKENS (0) for the rows above */
    const char *k_channels;   /* ViT num_channels, Whisper num_mel_bins */
    int channels_dflt;
    const char *k_image, *k_patch; /* ViT image_size, patch_size: an int or [h, w] */
    int image_dflt, patch_dflt;
    int no_k_bias;            /* Whisper: k_proj has no bias even when q, v have */
    const char *probe;        /* the tensor whose name detects the prefix (the
                                 token embedding `tok` when NULL) */
    const char *cls;          /* ViT cls_token (1, 1, d) */
    const char *conv1;        /* ViT: the patch projection, Conv2d (d, C, p_h, p_w);
                                 Whisper: conv1, Conv1d (d, n_mels, 3) */
    const char *conv2;        /* Whisper conv2, Conv1d (d, d, 3), stride 2 */
    const char *ls1, *ls2;    /* DINOv2 layer scale vectors (d): each branch's
                                 output times it before its residual add */
    const char *k_mlp_ratio;  /* DINOv2: d_ff = int(hidden_size · mlp_ratio) */
    const char *k_registers;  /* DINOv2 with registers: num_register_tokens */
    int registers_dflt;       /* its default (Dinov2WithRegistersConfig 4) */
    const char *registers;    /* register_tokens (1, R, d): rows 1..R after
                                 the positions are added (none of their own) */
    int pos_antialias;        /* interpolated positions through torch's
                                 antialiased bicubic (antialias=True) */
    int clip_embed;           /* CLIP: class_embedding (d), position_embedding
                                 (1 + patches, d) an nn.Embedding, the patch
                                 Conv2d without bias, then emb_norm
                                 (pre_layrnorm) */

    /* ---- ALiBi models (BLOOM, MPT, Falcon) ---- */
    ag_alibi_kind alibi;      /* with positions AG_POS_ALIBI */
    const char *k_refuse[4];  /* booleans whose true is refused by name (what
                                 the HF file does with them is not supported) */
    const char *k_attn_cfg;   /* MPT attn_config: softmax_scale, alibi_bias_max */
    int norm_no_bias;         /* LayerNorms without bias (MPT) */

    /* ---- a model_type of several rows (Falcon) ---- */
    agm_sel sel[3];           /* the row applies when all hold (key NULL:
                                 no condition); the first row that applies
                                 is the model's */
    const char *k_alibi;      /* a boolean: true gives AG_POS_ALIBI (alibi),
                                 false the row's positions */
    int kv_fixed;             /* > 0: this many kv heads (multi-query: 1) */
    const char *aliases[3][2]; /* {key, alias}: the alias's value is read as
                                  key's when key is absent (BloomConfig's
                                  n_embed and attribute_map) */

    /* ---- mixture-of-experts MLPs (k_experts NULL: none) ---- */
    const char *k_experts, *k_topk; /* num_local_experts / num_experts, num_experts_per_tok */
    const char *k_expert_ff;  /* each expert's width; NULL: k_ff */
    const char *k_shared_ff;  /* Qwen2-MoE shared_expert_intermediate_size */
    const char *k_norm_topk;  /* norm_topk_prob; NULL: always norm_topk_dflt */
    int norm_topk_dflt;
    int experts_dflt, topk_dflt, expert_ff_dflt, shared_ff_dflt; /* HF's defaults */
    int sparse_step;          /* Qwen2-MoE: decoder_sparse_step, mlp_only_layers */
    const char *k_clip;       /* OLMoE clip_qkv: anything but null refused */
    const char *router;       /* the router, [n_expert, d] (".weight") */
    const char *expert;       /* expert e's prefix, "%d" = e */
    const char *e_gate, *e_up, *e_down; /* stems inside it (Mixtral w1, w3, w2) */
    const char *shared;       /* the shared expert's prefix (gate, up, down as e_*) */
    const char *shared_gate;  /* its gate, [1, d] */
    /* Transformers v5's fused experts (conversion_mapping.py @44bcb9df5e93):
     * <fused>gate_up_proj [E, 2 ff, d] (expert e's gate rows, then its up
     * rows) and <fused>down_proj [E, d, ff], read when present; router_v5
     * the router's v5 name when it differs (Mixtral's mlp.gate). */
    const char *fused, *router_v5;

    /* ---- encoder–decoder models (T5): one row per stack ---- */
    int stack;                /* 0: a single stack; 1: the encoder, 2: the
                                 decoder of an encoder–decoder folder (loaded
                                 by ag_seq2seq_load, refused by ag_model_load) */
    const char *k_layers_dflt; /* k_layers absent or null: this key's value
                                  (T5 num_decoder_layers defaults to num_layers) */
    int no_scale;             /* scores not scaled (T5: Mesh TensorFlow folds
                                 1/√d_kv into the initialisation of q) */
    const char *k_ff_proj;    /* T5 feed_forward_proj: "ACT" (plain) or
                                 "gated-ACT" (gated: gate = `gate`, up =
                                 `up_gated`) */
    const char *up_gated;     /* the up projection of the gated form */
    const char *k_buckets, *k_max_distance; /* relative_attention_num_buckets,
                                 relative_attention_max_distance (32, 128) */
    const char *rel_bias;     /* layer 0's relative_attention_bias table
                                 (num_buckets, n_head), shared by all layers */
    const char *norm_cross;   /* the decoder's cross-attention: its norm (before
                                 it, T5; after its residual add, BART) */
    const char *k_embed_sqrt; /* BART scale_embedding: a boolean, true gives
                                 embed_sqrt */
    const char *cq, *ck, *cv, *co; /* and its projections */
} agm_arch;

/* The descriptor of a model_type, or NULL. */
const agm_arch *agm_arch_find(const char *model_type);
/* The row of dir's config.json model_type (config.c; NULL: none or unreadable). */
const agm_arch *agm_dir_arch(const char *dir);
/* "gpt2, bert, ...": every supported model_type, for messages. */
const char *agm_arch_names(void);
/* Descriptor i (0..count-1), for tests, docs and the rows of one
 * model_type (config.c); NULL past the end. */
const agm_arch *agm_arch_at(int i);

#endif
