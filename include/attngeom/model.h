/* attngeom/model.h — the attention engine: Hugging Face model folders, their
 * forward pass, and the architecture-free single attention layer.
 *
 * Model folders (see docs/engine.md for every detail):
 *   config.json + model.safetensors, or sharded model-0000N-of-0000M.safetensors
 *   listed in model.safetensors.index.json ("weight_map").
 *   model_type "gpt2", "bert", "roberta", "xlm-roberta", "distilbert",
 *   "gpt_neox", "opt", "llama", "mistral", "qwen2", "gemma", "gemma2", "phi3",
 *   "qwen3", "olmo2", "gemma3_text", "bloom", "mpt", "falcon", "modernbert" (token ids:
 *   ag_model_forward), "vit" (pixels) and "whisper" (the encoder, log-mel
 *   features): ag_model_forward_values; "t5" and "bart", encoder–decoder
 *   models (ag_seq2seq_load, ag_seq2seq_forward).
 *
 * Every architecture is a row of one table (src/engine/arch.c): tensor
 * names, norm, activation, positions, residual wiring, fused layouts. One
 * loader and one forward pass read it, reproducing Hugging Face's eager
 * modeling code (modeling_<model_type>.py, cited per row): per layer the pass
 * hands the attention input X and every head's attention probabilities to a
 * callback, and optionally fills the hidden states in HF's
 * output_hidden_states convention.
 *
 * Ownership: ag_model_load hands out a model owned by the caller, released by
 * ag_model_free (NULL allowed). A loaded model is never modified by a forward
 * pass, so several threads may run passes on one model concurrently. Views
 * passed to a callback are valid only during that call. Weights stay in
 * their stored dtype (F32, F16 or BF16) in the model's read-only mappings of
 * the safetensors files; a pass converts them exactly, one matrix at a time
 * (docs/engine.md, "Memory").
 */
#ifndef ATTNGEOM_MODEL_H
#define ATTNGEOM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One value per supported model_type (config.json "model_type"). */
typedef enum {
    AG_ARCH_GPT2,        /* "gpt2"        modeling_gpt2.py */
    AG_ARCH_BERT,        /* "bert"        modeling_bert.py */
    AG_ARCH_ROBERTA,     /* "roberta"     modeling_roberta.py */
    AG_ARCH_XLM_ROBERTA, /* "xlm-roberta" modeling_xlm_roberta.py */
    AG_ARCH_DISTILBERT,  /* "distilbert"  modeling_distilbert.py */
    AG_ARCH_GPT_NEOX,    /* "gpt_neox"    modeling_gpt_neox.py (Pythia) */
    AG_ARCH_OPT,         /* "opt"         modeling_opt.py */
    AG_ARCH_LLAMA,       /* "llama"       modeling_llama.py */
    AG_ARCH_MISTRAL,     /* "mistral"     modeling_mistral.py */
    AG_ARCH_QWEN2,       /* "qwen2"       modeling_qwen2.py */
    AG_ARCH_GEMMA,       /* "gemma"       modeling_gemma.py */
    AG_ARCH_GEMMA2,      /* "gemma2"      modeling_gemma2.py */
    AG_ARCH_PHI3,        /* "phi3"        modeling_phi3.py */
    AG_ARCH_VIT,         /* "vit"         modeling_vit.py (input: pixels) */
    AG_ARCH_WHISPER,     /* "whisper"     modeling_whisper.py, the encoder
                            (input: log-mel features) */
    AG_ARCH_QWEN3,       /* "qwen3"       modeling_qwen3.py (QK-norm per head) */
    AG_ARCH_OLMO2,       /* "olmo2"       modeling_olmo2.py (QK-norm over the
                            projections, norms after the sublayers) */
    AG_ARCH_GEMMA3_TEXT, /* "gemma3_text" modeling_gemma3.py Gemma3TextModel
                            (QK-norm per head, a RoPE base per layer type) */
    AG_ARCH_BLOOM,       /* "bloom"       modeling_bloom.py (ALiBi) */
    AG_ARCH_MPT,         /* "mpt"         modeling_mpt.py (ALiBi) */
    AG_ARCH_FALCON,      /* "falcon"      modeling_falcon.py (RoPE or ALiBi) */
    AG_ARCH_MODERNBERT,  /* "modernbert"  modeling_modernbert.py ModernBertModel
                            (global/local layers, a symmetric window) */
    AG_ARCH_MIXTRAL,     /* "mixtral"     modeling_mixtral.py (experts) */
    AG_ARCH_QWEN2_MOE,   /* "qwen2_moe"   modeling_qwen2_moe.py (experts and a
                            shared expert) */
    AG_ARCH_OLMOE,       /* "olmoe"       modeling_olmoe.py (experts, QK-norm
                            over the projections) */
    AG_ARCH_DINOV2,      /* "dinov2"      modeling_dinov2.py (pixels, layer scale) */
    AG_ARCH_CLIP_VISION, /* "clip_vision_model" modeling_clip.py CLIPVisionModel */
    AG_ARCH_GPTJ,        /* "gptj"        modeling_gptj.py */
    AG_ARCH_CLIP_TEXT,   /* "clip_text_model" modeling_clip.py CLIPTextModel */
    AG_ARCH_DINOV2_REGISTERS, /* "dinov2_with_registers" modeling_dinov2_with_registers.py
                                 (DINOv2 with register tokens) */
    AG_ARCH_T5,          /* "t5"          modeling_t5.py, an encoder–decoder
                            model (ag_seq2seq_load) */
    AG_ARCH_BART         /* "bart"        modeling_bart.py, an encoder–decoder
                            model (ag_seq2seq_load) */
} ag_arch;

/* What a model's forward pass takes (ag_model_input_kind). */
typedef enum {
    AG_INPUT_TOKENS,  /* token ids: ag_model_forward, ag_model_forward_ex */
    AG_INPUT_PIXELS,  /* ViT pixel_values (num_channels, H, W), as
                         ViTImageProcessor returns pixel_values[0]:
                         ag_model_forward_values */
    AG_INPUT_FEATURES /* Whisper input_features (num_mel_bins, T), as
                         WhisperFeatureExtractor returns them:
                         ag_model_forward_values */
} ag_input_kind;

/* Normalisation of every norm of a model. */
typedef enum {
    AG_NORM_LAYER,  /* LayerNorm (x − mean)/√(var + eps)·w + b (no w, b: OPT
                       layer_norm_elementwise_affine = false) */
    AG_NORM_RMS,    /* LlamaRMSNorm w·x/√(mean(x²) + eps) */
    AG_NORM_RMS_1P  /* GemmaRMSNorm (1 + w)·x/√(mean(x²) + eps) */
} ag_norm_kind;

/* How a block adds its sublayers to the residual stream h. */
typedef enum {
    AG_RESIDUAL_PRE,      /* h += attn(n₁(h)); h += mlp(n₂(h)) */
    AG_RESIDUAL_POST,     /* h = n₁(h + attn(h)); h = n₂(h + mlp(h)) (BERT,
                             OPT do_layer_norm_before = false) */
    AG_RESIDUAL_PARALLEL  /* h = (mlp(n₂(h)) + attn(n₁(h))) + h (GPT-NeoX
                             use_parallel_residual) */
} ag_residual;

/* Token positions. */
typedef enum {
    AG_POS_LEARNED, /* row position_offset + i of the position table */
    AG_POS_PADDED,  /* RoBERTa: row pad + (non-pad tokens up to i) for a
                       non-pad token, row pad for a pad token (pad =
                       pad_token_id, position_offset = pad + 1) */
    AG_POS_ROPE,    /* rotary embedding of Q and K (cfg.rope) */
    AG_POS_ALIBI,   /* no position rows or rotation: every score gets a
                       per-head linear bias in the key position (cfg.alibi) */
    AG_POS_RELATIVE /* T5 (Raffel et al. 2020, sec. 2.1): every
                       self-attention score gets a learned per-head bias of
                       the bucket of the offset j − i (modeling_t5.py
                       _relative_position_bucket) */
} ag_positions;

/* A norm of Q and K after their projections, before RoPE (QK-norm), with
 * the model's norm kind and eps. */
typedef enum {
    AG_QK_NORM_NONE, /* none */
    AG_QK_NORM_HEAD, /* each head's q and k over head_dim, one weight of
                        head_dim shared by the heads (modeling_qwen3.py
                        Qwen3Attention q_norm, k_norm) */
    AG_QK_NORM_FULL  /* the whole projection: q over n_head·head_dim, k over
                        n_kv_head·head_dim, before the split into heads
                        (modeling_olmo2.py Olmo2Attention) */
} ag_qk_norm;
/* ALiBi (Press et al. 2022, "Train Short, Test Long", Sec. 3): query i's
 * score against key j gets slope_h·(j − off), off the same for every key of
 * a row (so it leaves the probabilities unchanged). The slopes and where
 * the bias enters follow the Hugging Face file of each kind. */
typedef enum {
    AG_ALIBI_NONE,
    AG_ALIBI_BLOOM,  /* modeling_bloom.py build_alibi_tensor: slopes of the
                        closest power of two p ≤ H, 2^(−8k/p), then the odd
                        powers of 2^(−4/p) for the rest; off = 0; scores
                        scale·q·k + bias (baddbmm beta 1, alpha scale) */
    AG_ALIBI_MPT,    /* modeling_mpt.py gen_slopes: 2^(−k·bias_max/P), P the
                        power of two ≥ H, interleaved (odd k first) when
                        P ≠ H; off = n − 1 (arange(1 − seq_len, 1) cut to the
                        last n); scores scale·q·k + bias */
    AG_ALIBI_FALCON  /* modeling_falcon.py build_alibi_tensor: BLOOM's slopes
                        rounded to bfloat16; off = 0; scores
                        scale·(q·k + bias) */
} ag_alibi_kind;

/* The n_head slopes (float32 values, as HF's float32 tensors hold them) of
 * an ALiBi kind into slopes (caller's, n_head doubles); bias_max is MPT's
 * alibi_bias_max (ignored by the others). Returns AG_EINVAL (nothing
 * written) for kind AG_ALIBI_NONE, n_head outside 1..4096 or bias_max <= 0
 * with MPT. */
AG_EXPORT int ag_alibi_slopes(ag_alibi_kind kind, int n_head, double bias_max, double *slopes);

/* Where Q, K, V come from. */
typedef enum {
    AG_QKV_SEPARATE, /* three projections */
    AG_QKV_BLOCKS,   /* one fused projection, column blocks Q | K | V
                        (GPT-2 c_attn, Phi-3 qkv_proj with grouped widths) */
    AG_QKV_PER_HEAD, /* one fused projection, per head q_h | k_h | v_h
                        (GPT-NeoX query_key_value) */
    AG_QKV_GROUPED   /* one fused projection, per kv group g the queries of
                        the group, then k_g, then v_g (Falcon's
                        new_decoder_architecture) */
} ag_qkv_layout;

/* The MLP. */
typedef enum {
    AG_MLP_PLAIN,      /* down(act(up(x))) */
    AG_MLP_GATED,      /* down(act(gate(x))·up(x)) */
    AG_MLP_GATED_FUSED /* the same from one gate_up projection, gate first
                          (Phi-3 gate_up_proj) */
} ag_mlp_layout;

/* Rotary position embedding (RoPE) of a model's heads: pair (j, j + r/2) of
 * the first r = rotary_dim dims of every query and key head at position i
 * turns by the angle i·inv_freq[j] (rotate-half form, modeling_llama.py
 * apply_rotary_pos_emb; GPT-J's pairs (2j, 2j + 1): ag_rope_extra).
 * rope_scaling types as in Hugging Face's modeling_rope_utils.py; other
 * types are refused at load, by name. */
typedef enum {
    AG_ROPE_DEFAULT, /* no rope_scaling: inv_freq[j] = theta^(-2j/r) */
    AG_ROPE_LINEAR,  /* inv_freq / factor */
    AG_ROPE_DYNAMIC, /* NTK-aware: for n > original_max_positions, theta ←
                        theta·((factor·n/max) − (factor − 1))^(r/(r − 2)) */
    AG_ROPE_LLAMA3,  /* Llama 3.1: low frequencies / factor, high ones kept,
                        the band between interpolated (low/high_freq_factor) */
    AG_ROPE_YARN,    /* YaRN (Peng et al. 2023, arXiv:2309.00071, sec. 3.2):
                        interpolation / extrapolation blended by a linear ramp
                        over the dims between beta_fast and beta_slow
                        rotations; cos, sin times an attention factor. Its
                        parameters are in ag_rope_extra (ag_rope has no field
                        for them) */
    AG_ROPE_LONGROPE /* LongRoPE (Ding et al. 2024, arXiv:2402.13753):
                        inv_freq / short_factor[j] or / long_factor[j] (inputs
                        longer than original_max_positions); cos, sin times an
                        attention factor; parameters in ag_rope_extra */
} ag_rope_type;

typedef struct {
    int rotary_dim;          /* dims rotated per head, even; 0 = no RoPE */
    double theta;            /* rope_theta (GPT-NeoX rotary_emb_base) */
    ag_rope_type type;
    double factor;           /* linear, dynamic, llama3 */
    double low_freq_factor;  /* llama3 */
    double high_freq_factor; /* llama3 */
    int original_max_positions; /* llama3: original_max_position_embeddings;
                                   dynamic: max_position_embeddings */
} ag_rope;

/* inv_freq (rotary_dim/2 doubles, caller's) for a pass over n tokens
 * (dynamic scaling depends on n, as HF's dynamic_rope_update with seq_len =
 * n). Computed in double. r must satisfy rotary_dim even > 0, theta > 0,
 * factor >= 1 where used (checked at load). yarn and longrope need
 * ag_rope_extra (ag_rope_inv_freq_extra): here they get HF's default betas
 * (yarn) and, for longrope, every factor 1 (the default frequencies). */
AG_EXPORT void ag_rope_inv_freq(const ag_rope *r, size_t n, double *inv_freq);

/* What the RoPE of a model has beyond ag_rope (which the ABI rule of
 * core.h keeps fixed): GPT-J's pairing and the yarn / longrope parameters of
 * modeling_rope_utils.py. Zero-initialised it means none of them:
 * rotate-half pairs, attention factor 1 (0 is read as 1). */
typedef struct {
    int interleaved;          /* GPT-J rotate_every_two: pairs (2j, 2j + 1)
                                 instead of (j, j + r/2) */
    double attention_factor;  /* yarn, longrope: cos and sin times this (HF's
                                 attention_scaling); 0 or 1: none */
    double beta_fast, beta_slow; /* yarn: the ramp's rotation bounds (32, 1) */
    int truncate;             /* yarn: floor/ceil the correction range (HF's
                                 default true) */
    const double *short_factor, *long_factor; /* longrope: rotary_dim/2 each;
                                 owned by whoever filled the struct (a
                                 model's live as long as the model) */
} ag_rope_extra;

/* ag_rope_inv_freq with x's parameters (x NULL: none): yarn as
 * modeling_rope_utils.py _compute_yarn_parameters, longrope as
 * _compute_longrope_parameters with seq_len = n (long factors iff n >
 * r->original_max_positions). */
AG_EXPORT void ag_rope_inv_freq_extra(const ag_rope *r, const ag_rope_extra *x, size_t n,
                                      double *inv_freq);

/* What config.json says, normalised across architectures. */
typedef struct {
    ag_arch arch;
    char model_type[32];   /* as written in config.json ("gpt2", "qwen2", ...) */
    const char *modeling;  /* the Hugging Face file followed, e.g.
                              "modeling_gpt_neox.py" (static string) */
    int n_layer;           /* n_layer / num_hidden_layers / n_layers */
    int n_head;            /* query heads */
    int n_kv_head;         /* key/value heads: n_head unless grouped-query or
                              multi-query (num_key_value_heads) */
    int d_model;           /* width of the residual stream (n_embd,
                              hidden_size, dim) */
    int d_embed;           /* width of the token embeddings: d_model, or OPT's
                              word_embed_proj_dim (project_in maps it to d_model) */
    int head_dim;          /* d_model / n_head unless config.json sets head_dim */
    int d_ff;              /* MLP width (GPT-2: n_inner or 4·n_embd) */
    int max_positions;     /* n_positions / max_position_embeddings */
    int max_tokens;        /* longest input ag_model_forward accepts: the rows
                              of the position table past position_offset, or
                              max_positions for RoPE (⌊factor·max_positions⌋
                              with dynamic scaling; with yarn the larger of
                              max_positions and ⌊factor·original⌋) */
    int vocab_size;
    int type_vocab_size;   /* token-type rows (BERT, RoBERTa: type 0 is added),
                              else 0 */
    double norm_eps;       /* layer_norm_epsilon / layer_norm_eps / rms_norm_eps;
                              DistilBERT 1e-12, OPT 1e-5 (fixed) */
    ag_norm_kind norm;
    ag_residual residual;
    int sandwich_norms;    /* Gemma-2: each sublayer's output is normed
                              (post_attention/post_feedforward_layernorm)
                              before it is added */
    int embed_norm;        /* LayerNorm on the embedding sum (BERT family) */
    int final_norm;        /* the last hidden state is normed (ln_f, norm,
                              final_layer_norm) */
    char activation[32];   /* the MLP activation, HF ACT2FN name */
    ag_qkv_layout qkv;
    ag_mlp_layout mlp;
    int qkv_bias, o_bias, mlp_bias; /* projections carry biases */
    ag_positions positions;
    int position_offset;   /* learned positions: table row of position 0
                              (OPT 2, RoBERTa pad_token_id + 1), else 0 */
    ag_rope rope;          /* rotary_dim 0 unless positions = AG_POS_ROPE */
    double embed_scale;    /* token embeddings times this (Gemma √hidden_size
                              rounded to the pass's type), else 1 */
    double attn_scale;     /* multiplies the scores: head_dim^-0.5, Gemma-2
                              query_pre_attn_scalar^-0.5, GPT-2 1 without
                              scale_attn_weights */
    int scale_by_inverse_layer; /* GPT-2 scale_attn_by_inverse_layer_idx: layer
                                   l's scale is attn_scale / (l + 1) */
    int scale_query;       /* OPT, DistilBERT: the scale multiplies Q before
                              the product (same scores up to rounding) */
    double softcap;        /* Gemma-2 attn_logit_softcapping: scores become
                              cap·tanh(s/cap); 0 = none */
    int causal;            /* 1 for decoders, 0 for the BERT family */
    int sliding_window;    /* the window of the layers that have one (key j
                              visible from query i iff 0 <= i − j < window),
                              0 if none; which layers: ag_model_layer_window */

    /* ---- models whose input is a tensor (appended: the fields above keep
     * their offsets). Zero for token models. ---- */
    ag_input_kind input_kind;
    int in_channels;       /* ViT num_channels, Whisper num_mel_bins */
    int image_height, image_width; /* ViT image_size: the only input size
                              accepted (no interpolate_pos_encoding) */
    int patch_height, patch_width;  /* ViT patch_size: the convolution's kernel
                              and stride */
    int max_frames;        /* Whisper: 2·max_source_positions, the most
                              input_features frames (positions ⌈T/2⌉) */

    /* ---- appended (issue 29): QK-norm and norm placement ---- */
    ag_qk_norm qk_norm;    /* Qwen3 per head, OLMo-2 over the projections */
    int no_pre_norms;      /* OLMo-2: no norm before the attention or the MLP
                              (X = h; sandwich_norms set: each sublayer's
                              output is normed before its add) */
    ag_rope rope_local;    /* Gemma-3: the RoPE of the layers with a sliding
                              window (rope_local_base_freq, no scaling);
                              rotary_dim 0: every layer uses `rope` */
    /* ---- ALiBi (appended). AG_ALIBI_NONE unless positions = AG_POS_ALIBI. */
    ag_alibi_kind alibi;
    double alibi_bias_max; /* MPT attn_config.alibi_bias_max (8), else 0 */
    int first_no_pre_norm; /* ModernBERT: layer 0's attn_norm is Identity
                              (X = h there; its MLP norm stays) */

    /* ---- appended (issue 29): mixture-of-experts MLPs (Mixtral, Qwen2-MoE,
     * OLMoE). Per token: softmax of the router's logits, the top_k experts
     * (torch.topk order: larger first, the lower index first on equal
     * values), their weights renormalised to sum 1 when norm_topk, and
     * Σ w_e · expert_e(x) (each expert a gated MLP of width d_ff_expert);
     * Qwen2-MoE adds sigmoid(shared_expert_gate(x)) · shared_expert(x).
     * Layers without experts (Qwen2-MoE decoder_sparse_step,
     * mlp_only_layers) keep the dense MLP of width d_ff
     * (ag_model_layer_experts). ---- */
    int n_expert;          /* experts of a sparse layer, 0: no experts */
    int top_k;             /* experts per token (num_experts_per_tok) */
    int d_ff_expert;       /* each expert's width */
    int d_ff_shared;       /* Qwen2-MoE shared expert's width, 0: none */
    int norm_topk;         /* the top-k weights are renormalised to sum 1 */
    /* ---- RoPE beyond ag_rope (appended): GPT-J's interleaved pairs, yarn
     * and longrope (rope.type); zero otherwise ---- */
    ag_rope_extra rope_extra;
    /* ---- appended: register tokens (Darcet et al. 2024, "Vision
     * Transformers Need Registers", Sec. 2.2), dinov2_with_registers'
     * num_register_tokens; 0 otherwise. They are rows 1..n_registers of the
     * pass (after the CLS row, before the patches) and get no position
     * embedding. ---- */
    int n_registers;
} ag_model_config;

typedef struct ag_model ag_model;

/* Load a model folder. Errors (err->message names file, field or tensor):
 *   AG_EIO          folder or file missing/unreadable
 *   AG_EFORMAT      config.json or the index malformed, a field missing or
 *                   of the wrong type or value
 *   AG_EUNSUPPORTED unknown model_type (the message lists the supported
 *                   ones), a rope_scaling type other than default, linear,
 *                   dynamic, llama3, yarn, longrope (named), or another option this version
 *                   lacks (named)
 *   AG_ENOTFOUND    a tensor absent from the weights
 *   AG_ESHAPE       a tensor of the wrong shape (got and expected shapes)
 *   AG_EDTYPE       a tensor stored in a dtype other than F32, F16, BF16
 *   AG_ENONFINITE   a NaN/Inf weight
 *   AG_ENOMEM */
AG_EXPORT int ag_model_load(const char *dir, ag_model **out, ag_error *err);
/* As ag_model_load, choosing the tower of a `clip` folder (CLIPModel: a text
 * and a vision tower, nested text_config / vision_config) from the input
 * kind: AG_INPUT_TOKENS the text tower (clip_text_model), AG_INPUT_PIXELS
 * the vision tower (clip_vision_model). Other folders load as with
 * ag_model_load, whatever `input` (their own kind is checked by the forward
 * pass). ag_model_load itself takes a clip folder's text tower. Errors as
 * ag_model_load; AG_EUNSUPPORTED for AG_INPUT_FEATURES on a clip folder.
 * Ownership as ag_model_load. */
AG_EXPORT int ag_model_load_tower(const char *dir, ag_input_kind input, ag_model **out, ag_error *err);
/* 1 when m is one tower of a `clip` folder (the folder holds two), else 0. */
AG_EXPORT int ag_model_is_tower(const ag_model *m);
AG_EXPORT const ag_model_config *ag_model_get_config(const ag_model *m);
/* The cfg.n_head ALiBi slopes of m (ag_alibi_slopes of cfg.alibi and
 * cfg.alibi_bias_max, formed once when m was loaded): the slopes its
 * forward pass adds. NULL when m has no ALiBi (cfg.alibi AG_ALIBI_NONE) or m
 * is NULL. Owned by m: valid until ag_model_free(m), never to be freed or
 * written by the caller. */
AG_EXPORT const double *ag_model_alibi_slopes(const ag_model *m);
/* Layer `layer`'s sliding window (0: full causal or bidirectional
 * attention, also for a layer outside 0..n_layer-1): Mistral and Phi-3 every
 * layer when sliding_window is set, Qwen2 layers >= max_window_layers when
 * use_sliding_window, Gemma-2 the even layers, or as config.json's
 * layer_types says (Qwen2, Gemma-2). */
AG_EXPORT int ag_model_layer_window(const ag_model *m, int layer);
/* 1 when layer `layer` routes its MLP through experts (the config's
 * n_expert > 0 and the layer is sparse), else 0 (also outside
 * 0..n_layer-1). */
AG_EXPORT int ag_model_layer_experts(const ag_model *m, int layer);
AG_EXPORT void ag_model_free(ag_model *m);

/* Check token ids[0..n-1] as ag_model_forward will, without running it: a
 * corpus is checked whole before its first text is computed. AG_EINVAL for
 * n = 0 or ids NULL; AG_ERANGE for more than the model's max_tokens or
 * "token id I at position P is outside the vocabulary (vocab_size = V)". */
AG_EXPORT int ag_model_check_ids(const ag_model *m, const int32_t *ids, size_t n, ag_error *err);

/* One layer's attention projections as doubles in [in, out] form (x ↦ xW,
 * docs/metrics.md, family D): nn.Linear weights transposed, fused layouts split (GPT-2's
 * c_attn and Phi-3's qkv_proj column blocks, GPT-NeoX's per-head
 * query_key_value). GPT-J (cfg.rope_extra.interleaved): the first
 * rotary_dim columns of every Q and K head are listed 0, 2, 4, …, 1, 3, 5, …
 * so that rope's rotate-half pairs are GPT-J's (2j, 2j + 1) pairs: q·k,
 * and so the probabilities, are those of the pass. yarn / longrope: rope
 * has the type; its frequencies and attention factor need the model's
 * cfg.rope_extra (ag_head_extra's rope, ag_stability_metrics_ex). Query
 * head h owns columns h·head_dim … of wq; kv head
 * g = h / (n_head / n_kv_head) owns those of wk and wv; rows h·head_dim … of
 * wo. Biases are empty arrays (data NULL) when the model has none. The
 * layer's probabilities are, per query head,
 *   s_ij = scale·q_i·k_j,  q = rope(x W_Q + b_Q), k = rope(x W_K + b_K)
 *   s_ij ← softcap·tanh(s_ij/softcap)        if softcap > 0
 *   s_ij ← s_ij + slope_h·(j − off)           ALiBi (cfg.alibi: slopes from
 *                                               ag_alibi_slopes; Falcon scales
 *                                               the bias with the scores)
 *   p_i = softmax over the visible keys: all (not causal), j <= i (causal),
 *         0 <= i − j < window (causal, window > 0), |i − j| < window (not
 *         causal, window > 0: ModernBERT's local layers)
 * with x the callback's X — except for QK-norm models (cfg.qk_norm: qwen3,
 * olmo2, gemma3_text), whose q and k are normed between the projection and
 * RoPE (q = rope(N(x W_Q + b_Q))): ag_model_qk_norm gives that norm. */
typedef struct {
    int layer, n_head, n_kv_head, head_dim, causal;
    ag_rope rope;        /* rotary_dim 0: no rotation */
    double scale;        /* GPT-2 with scale_attn_by_inverse_layer_idx: already
                            divided by layer + 1 */
    double softcap;      /* 0: none */
    int window;          /* 0: none */
    ag_array wq, wk, wv; /* (d, n_head·hd), (d, n_kv_head·hd), (d, n_kv_head·hd) */
    ag_array wo;         /* (n_head·hd, d); DINOv2: times layer_scale1's λ1
                            per output column (what the pass adds) */
    ag_array bq, bk, bv; /* (n_head·hd), (n_kv_head·hd), (n_kv_head·hd) or empty */
} ag_attn_weights;

/* Fill *out (owned by the caller: ag_attn_weights_free) for `layer`.
 * AG_ERANGE for a layer outside 0..n_layer-1, AG_ENOMEM. */
AG_EXPORT int ag_model_attn_weights(const ag_model *m, int layer, ag_attn_weights *out,
                                    ag_error *err);

/* T5's relative position bias of head h over n tokens into out (n × n,
 * the caller's): out[i][j] = relative_attention_bias[bucket(j − i), h]
 * (modeling_t5.py T5Attention.compute_bias: bidirectional buckets in the
 * encoder, unidirectional in the decoder), the table the pass adds to
 * every layer's q·k of that stack (ag_model_get_config(m)->positions ==
 * AG_POS_RELATIVE). Errors: AG_EINVAL (NULL, n 0, or m without the
 * bias), AG_ERANGE (h). */
AG_EXPORT int ag_model_position_bias(const ag_model *m, size_t n, int h, double *out,
                                     ag_error *err);
AG_EXPORT void ag_attn_weights_free(ag_attn_weights *w);

/* The cross-attention of `layer` of m, an encoder–decoder pair's decoder
 * (ag_seq2seq_stack(s, AG_STACK_DECODER)), into *out as
 * ag_model_attn_weights fills it: W_Q applied to the decoder's stream, W_K
 * and W_V to the encoder's output (T5 EncDecAttention; BART and Whisper
 * encoder_attn), W_O back into the decoder's; causal 0, no rope, window or
 * softcap, scale the pass's (T5 1, BART and Whisper head_dim^-1/2).
 * Owned by the caller (ag_attn_weights_free). Errors: AG_EINVAL (NULL, or
 * m has no cross-attention: a model of one stack, an encoder), AG_ERANGE
 * (layer outside 0..n_layer-1), AG_ENOMEM. */
AG_EXPORT int ag_model_cross_attn_weights(const ag_model *m, int layer, ag_attn_weights *out,
                                          ag_error *err);

/* The QK-norm of `layer` (cfg.qk_norm; eps cfg.norm_eps) into gq and gk
 * (the caller's: ag_array_free, also after a failure): the scales as the
 * norm multiplies by them, as doubles (RMSNorm w; Gemma-3's 1 + w, formed
 * in double), (d_h) each per head (AG_QK_NORM_HEAD), (n_head·d_h) and
 * (n_kv_head·d_h) over the projections (AG_QK_NORM_FULL); empty arrays
 * (data NULL) without QK-norm. With ag_attn_weights they give each head's
 * stability.h ag_head_qk_norm (access.h ag_attn_weights_head_qk_norm).
 * Errors: AG_EINVAL (NULL), AG_ERANGE (layer outside 0..n_layer-1), AG_ENOMEM. */
AG_EXPORT int ag_model_qk_norm(const ag_model *m, int layer, ag_array *gq, ag_array *gk,
                               ag_error *err);

/* Where a layer's attention block applies a norm after the attention
 * (ag_block_params.after). */
typedef enum {
    AG_AFTER_NONE,   /* PRE, PARALLEL: y = h + o(attn) */
    AG_AFTER_SUM,    /* POST: y = n₁(h + o(attn)) */
    AG_AFTER_BRANCH  /* Gemma-2 sandwich: y = h + n_attn_out(o(attn)) */
} ag_after_norm;

/* What decomposing layer `layer`'s attention block needs beyond
 * ag_attn_weights (docs/metrics.md, "Contributions"): the wiring, the norm
 * after the attention and the output projection's bias, as doubles. The
 * norm's scale is the one it multiplies by: LayerNorm w (ones without
 * elementwise affine), LlamaRMSNorm w, GemmaRMSNorm 1 + w (in double, as
 * the f64 pass forms it); its shift (LayerNorm only) b or zeros. */
typedef struct {
    int layer;
    ag_residual residual;
    ag_after_norm after;
    ag_norm_kind norm;   /* the model's norm kind */
    double eps;
    ag_array gamma;      /* (d) the after-norm's scale; empty for AG_AFTER_NONE */
    ag_array beta;       /* (d) its shift; empty unless AG_NORM_LAYER */
    ag_array bo;         /* (d) b_O, or empty when the model has none */
} ag_block_params;

/* Fill *out (the caller's: ag_block_params_free, also after a failure)
 * for `layer`. AG_EINVAL for NULL arguments, AG_ERANGE for a layer outside
 * 0..n_layer-1, AG_ENOMEM. */
AG_EXPORT int ag_model_block_params(const ag_model *m, int layer, ag_block_params *out,
                                    ag_error *err);
/* Accepts NULL. */
AG_EXPORT void ag_block_params_free(ag_block_params *p);

typedef enum {
    AG_PRECISION_F32, /* HF float32: sgemm on float activations, float softmax/norms */
    AG_PRECISION_F64  /* the whole pass in double (weights upcast exactly) */
} ag_precision;

/* One layer's attention, as seen by a callback. */
typedef struct {
    int layer;
    size_t n, d;          /* tokens, model width */
    int n_head;           /* query heads */
    const double *x;      /* (n, d) input of the Q/K/V projections (after any
                             pre-attention norm) */
    const double *attn;   /* (n_head, n, n) probabilities, attn[h][i][j] =
                             weight of query i on key j; masked entries are 0 */
    const double *scores; /* appended: (n_head, n, n) the pre-softmax scores
                             of the same pass, attn[h][i] = softmax(scores[h][i]):
                             scale·q_i·k_j (Gemma-2: then cap·tanh(s/cap)) as
                             the pass's precision forms them (f32 values
                             widened exactly), masked entries −inf (causal,
                             sliding window); NULL unless the pass's
                             ag_forward_options.want_scores is set */
    const double *q;      /* appended: (n_head, n, head_dim) each query head's
                             q rows as the scores use them (biases, QK-norm,
                             RoPE; OPT/DistilBERT/BART's q already scaled),
                             the pass's values widened; when
                             ag_forward_options.want_qk is set, else NULL */
    const double *k;      /* appended: (n_head, n_kv, head_dim) the k rows
                             query head h attends with (its kv head's:
                             grouped and multi-query heads share them; a
                             cross-attention's from x_kv); with q. T5's
                             scores are q·k plus the position bias */
    int head_dim;         /* appended: the width of q and k rows (0 without them) */
    int stack;            /* appended: an ag_stack, AG_STACK_NONE (0) for a
                             model of one stack; the encoder's, the decoder's
                             self-attention or the decoder's cross-attention
                             in ag_seq2seq_forward */
    size_t n_kv;          /* appended: keys per query: n (self-attention), or
                             n_src (AG_STACK_CROSS: attn and scores are then
                             (n_head, n, n_kv), k (n_head, n_kv, head_dim));
                             set by every pass */
    const double *x_kv;   /* appended: (n_kv, d) the input of K and V: x, or
                             for cross-attention the encoder's last hidden
                             state (after its final norm) */
    const float *attn_f32; /* appended: (n_head, n, n_kv) the float32 pass's
                             own probabilities, of which attn is the exact
                             widening (NULL in a float64 pass). With
                             ag_forward_options.attn_f32 the pass gives
                             these alone (attn NULL) */
} ag_layer_view;

/* Copy the attention of the view's heads h with head_on[h] set (head_on
 * NULL: every head), in head order, into dst (the caller's, (count, n, n)
 * doubles; (count, n, n_kv) for a cross-attention view); returns count,
 * the heads copied. */
AG_EXPORT size_t ag_layer_view_copy_heads(const ag_layer_view *v, const unsigned char *head_on,
                                          double *dst);

/* Called once per layer, in order. A non-zero return stops the pass and is
 * returned by ag_model_forward (use your own status, e.g. an AG_E* code). */
typedef int (*ag_layer_fn)(const ag_layer_view *view, void *user);

/* Run the forward pass on token ids[0..n-1] (one sequence, no padding, no
 * attention mask; BERT-family token type 0; RoBERTa positions from the ids as
 * HF's create_position_ids_from_input_ids). fn may be NULL. hidden, if
 * non-NULL, receives (n_layer + 1, n, d_model) doubles in HF's
 * output_hidden_states order: [0] embeddings (after any embedding norm,
 * scale or project_in), [l] output of block l-1, [L] after the final norm
 * when the model has one (cfg.final_norm: ln_f, norm, final_layer_norm); for
 * OPT with project_out (word_embed_proj_dim != hidden_size) [L] is taken
 * before project_out, where HF's is project_out of it (narrower). Layers
 * with a sliding window mask keys beyond it (ag_model_layer_window).
 * Errors: AG_EINVAL (n = 0, or a model whose input is a tensor: ViT and
 * Whisper take ag_model_forward_values), AG_ERANGE (a token id outside the vocabulary,
 * or n above cfg.max_tokens, the message names the config field),
 * AG_ENOMEM, AG_ENONFINITE (an overflow in the pass's precision: a head's
 * attention, a norm or the hidden state is not finite; the message names
 * layer, head and token, e.g. "layer 1 head 0: attention is not finite at
 * query 0 (float32 overflow; try --precision f64)"; the callback never sees
 * such a layer), or the callback's own status. */
AG_EXPORT int ag_model_forward(const ag_model *m, const int32_t *ids, size_t n,
                               ag_precision precision, ag_layer_fn fn, void *user,
                               double *hidden, ag_error *err);

/* One hidden state, as seen by a callback: index 0..n_layer in the order of
 * ag_model_forward's `hidden` ((n, d) doubles, borrowed for the call). A
 * non-zero return stops the pass, as ag_layer_fn's does. */
typedef int (*ag_hidden_fn)(int index, size_t n, size_t d, const double *h, void *user);

/* The output y (n, d), as doubles borrowed for the call, of layer `layer`'s
 * attention block — what the contributions of attngeom/contributions.h
 * decompose: PRE h + o(attn(n₁(h))) (Gemma-2: h + n_attn_out(o(...))), the
 * residual stream after the attention add; POST n₁(h + o(attn(h))), the
 * input of the MLP; PARALLEL h + o(attn(n₁(h))), formed in double for the
 * call (the pass adds the MLP branch first). A non-zero return stops the
 * pass, as ag_layer_fn's does. */
typedef int (*ag_block_fn)(int layer, size_t n, size_t d, const double *y, void *user);

/* How a pass runs. Carries its size (ABI rule, core.h): start from
 * AG_FORWARD_OPTIONS_DEFAULT (float32, no pool, no hidden callback). */
typedef struct {
    size_t size;            /* sizeof(ag_forward_options), set by the macro */
    ag_precision precision;
    ag_pool *pool;          /* heads of a layer on these threads (NULL: the
                               calling thread); results are the same bytes
                               for any pool (attngeom/parallel.h) */
    ag_hidden_fn hidden_fn; /* called with each of the n_layer + 1 hidden
                               states in order, as they are computed, so a
                               caller can stream them instead of holding
                               (n_layer + 1, n, d) */
    void *hidden_user;
    ag_block_fn block_fn;   /* appended: each layer's attention-block output
                               y (ag_block_fn), after the layer callback */
    void *block_user;
    int want_scores;        /* appended: 1 gives the layer callback each head's
                               pre-softmax scores (ag_layer_view.scores),
                               computed in the same pass (no second one);
                               0 (default): scores NULL */
    int want_qk;            /* appended: 1 also gives the q and k rows the
                               scores are formed from (ag_layer_view.q, .k:
                               a copy into doubles of every head's, which
                               only family K reads); 0 (default): NULL */
    int attn_f32;           /* appended: 1 in a float32 pass gives the layer
                               callback the probabilities as the pass holds
                               them (ag_layer_view.attn_f32) and attn NULL:
                               no (n_head, n, n_kv) double copy is made, for
                               a caller that widens one head at a time
                               (ag_run_layer_heads.attn_f32). A float64
                               pass ignores it */
} ag_forward_options;
#define AG_FORWARD_OPTIONS_DEFAULT \
    {.size = sizeof(ag_forward_options), .precision = AG_PRECISION_F32}

/* ag_model_forward with options (NULL: AG_FORWARD_OPTIONS_DEFAULT).
 * ag_model_forward(m, ids, n, p, fn, user, hidden, err) is this with the
 * defaults and .precision = p. AG_EINVAL for an options size the library
 * refuses (ag_forward_options.size: 0, or a newer header's). The layer
 * callback, hidden_fn and block_fn run in the calling thread, in order:
 * hidden state l, layer l's callback, then block_fn with layer l's
 * attention-block output. */
AG_EXPORT int ag_model_forward_ex(const ag_model *m, const int32_t *ids, size_t n,
                                  const ag_forward_options *opt, ag_layer_fn fn, void *user,
                                  double *hidden, ag_error *err);

/* ---- models whose input is a tensor (ViT, the Whisper encoder) -------- */

/* What m's forward pass takes: AG_INPUT_TOKENS (also for m NULL),
 * AG_INPUT_PIXELS (vit) or AG_INPUT_FEATURES (whisper). */
AG_EXPORT ag_input_kind ag_model_input_kind(const ag_model *m);

/* The input shape m expects into shape[0..2]; returns its rank: 3 for ViT
 * (num_channels, image_height, image_width), 2 for Whisper (num_mel_bins,
 * max_frames: the longest; any T in 1..max_frames is accepted), 0 for a
 * token model (shape untouched). */
AG_EXPORT int ag_model_input_shape(const ag_model *m, size_t shape[3]);

/* Check an input shape against m and give the positions n its pass runs
 * on: ViT 1 + ⌊H/p_h⌋·⌊W/p_w⌋ (the CLS token, then the patches row by
 * row; with cfg.n_registers R the R register rows come between them: n =
 * 1 + R + patches), Whisper ⌈T/2⌉ (conv2's stride 2). Leading dimensions of size 1 (a
 * batch of one, as HF's [1, C, H, W]) are dropped first. Errors:
 * AG_EINVAL (a token model, null arguments), AG_ESHAPE (the message names
 * the shape given and the one expected: channels, image size, frames). */
AG_EXPORT int ag_model_input_positions(const ag_model *m, int ndim, const size_t *shape,
                                       size_t *n, ag_error *err);

/* ag_model_forward_ex for a model whose input is a tensor: `input` holds
 * the values of `shape` (ndim dims, row-major, borrowed), checked by
 * ag_model_input_positions; they are rounded to float32 by the f32 pass
 * (exact for the float32 tensors HF's processors return, as HF's own
 * `pixel_values.to(weight dtype)`) and used as they are by the f64 pass.
 * The embedding stage is the architecture's (docs/engine.md, "Models whose
 * input is a tensor"):
 *   ViT      h = [cls; conv(pixels)] + position_embeddings (a p_h×p_w
 *            convolution of stride p: one row per patch, row-major)
 *   Whisper  h = gelu(conv2(gelu(conv1(features)))) + embed_positions[0..n)
 * then the same layers, callback, hidden-state order, precision, pool and
 * byte-for-byte reproducibility as ag_model_forward_ex. hidden (optional):
 * (n_layer + 1, n, d_model) doubles; for ViT [L] is the last layer's output
 * (ViTModel's final layernorm is on last_hidden_state only), for Whisper
 * [L] is after the encoder's layer_norm (as HF returns it). Errors: those
 * of ag_model_input_positions, AG_EINVAL for a token model ("this model
 * takes token ids"; ag_model_forward on a ViT or Whisper model is AG_EINVAL
 * likewise), AG_ENONFINITE (a NaN/Inf input value, named by index, or an
 * overflow as ag_model_forward_ex), AG_ENOMEM, or the callback's status. */
AG_EXPORT int ag_model_forward_values(const ag_model *m, const double *input, int ndim,
                                      const size_t *shape, const ag_forward_options *opt,
                                      ag_layer_fn fn, void *user, double *hidden,
                                      ag_error *err);

/* ---- encoder–decoder models (T5) ----------------------------------------- */

/* Which attention of a pass a layer view holds (ag_layer_view.stack). */
typedef enum {
    AG_STACK_NONE,    /* a model of one stack (ag_model_forward) */
    AG_STACK_ENCODER, /* the encoder's self-attention, (H, n_src, n_src) */
    AG_STACK_DECODER, /* the decoder's causal self-attention, (H, n_tgt, n_tgt) */
    AG_STACK_CROSS    /* the decoder's cross-attention over the encoder's
                         output, (H, n_tgt, n_src) */
} ag_stack;

/* An encoder–decoder model: two stacks read from one folder (opaque). */
typedef struct ag_seq2seq ag_seq2seq;

/* Load an encoder–decoder folder (config.json model_type "t5": T5Model or
 * T5ForConditionalGeneration tensors, v1.0 ReLU or v1.1/Flan gated-GELU;
 * "bart": BartModel or BartForConditionalGeneration; "whisper": its
 * encoder, as ag_model_load reads it, and its decoder; the LM head is not
 * read). On success *out belongs to the caller
 * (ag_seq2seq_free). ag_model_load refuses such a folder by name. Errors:
 * those of ag_model_load (a missing tensor or key named with the file). */
AG_EXPORT int ag_seq2seq_load(const char *dir, ag_seq2seq **out, ag_error *err);

/* Accepts NULL. */
AG_EXPORT void ag_seq2seq_free(ag_seq2seq *s);

/* 1 when dir's config.json names an encoder–decoder model_type that
 * ag_model_load refuses (t5, bart: it needs ag_seq2seq_load), else 0 (also
 * for whisper, whose encoder ag_model_load reads, and an unreadable
 * folder). */
AG_EXPORT int ag_model_dir_is_seq2seq(const char *dir);

/* 1 when dir holds an encoder–decoder model's two stacks for
 * ag_seq2seq_load: a t5 or bart folder (ag_model_dir_is_seq2seq), or a
 * whisper folder whose weights hold its decoder's layers (WhisperModel,
 * WhisperForConditionalGeneration; not an encoder saved alone, which
 * ag_model_load reads); else 0 (also for an unreadable folder). Whether
 * the rest of the decoder is there is ag_seq2seq_load's to say. */
AG_EXPORT int ag_model_dir_has_decoder(const char *dir);

/* One stack of s (AG_STACK_ENCODER or AG_STACK_DECODER; NULL otherwise),
 * borrowed for s's lifetime: its config (ag_model_get_config: layers,
 * heads, widths of that stack) and weights (ag_model_attn_weights). The
 * encoder also runs alone through ag_model_forward (T5EncoderModel's
 * pass); the decoder needs the encoder's output and runs only in
 * ag_seq2seq_forward (ag_model_forward refuses it). */
AG_EXPORT const ag_model *ag_seq2seq_stack(const ag_seq2seq *s, ag_stack stack);

/* The encoder–decoder model m is a stack of (ag_seq2seq_stack's), borrowed
 * for that model's lifetime; NULL for a model of one stack (ag_model_load)
 * and for NULL. The run module (ag_run_forward with a target) takes the
 * encoder as the model of a run and reaches the pass of both stacks
 * through it, so the run functions keep taking one `const ag_model *`. */
AG_EXPORT const ag_seq2seq *ag_model_seq2seq(const ag_model *m);

/* config.json's decoder_start_token_id of s (T5: 0, the pad token; BART:
 * 2, </s>; Whisper: <|startoftranscript|>), the first decoder input of
 * teacher forcing (ag_run_shift_right); -1 when the file gives none or s
 * is NULL. */
AG_EXPORT int ag_seq2seq_decoder_start(const ag_seq2seq *s);

/* The forward pass of an encoder–decoder model, as Hugging Face's
 * model(input_ids = src, decoder_input_ids = tgt) with
 * output_attentions and output_hidden_states: src (n_src ids) through the
 * encoder, tgt (n_tgt ids, taken verbatim: give them already starting
 * with the decoder start token, HF's shift-right is the caller's) through
 * the decoder, whose cross-attention reads the encoder's last hidden state.
 * fn (may be NULL) is called in order with every encoder layer
 * (AG_STACK_ENCODER), then per decoder layer its self-attention
 * (AG_STACK_DECODER) and its cross-attention (AG_STACK_CROSS), each view
 * with x the normed query-side input, x_kv the key side and the pre-softmax
 * scores when opt->want_scores (T5: q·k plus the position bias, no scale;
 * cross-attention has no bias), their q and k rows when opt->want_qk (a
 * cross view's k rows are the n_src keys'). enc_hidden (L_enc + 1, n_src, d) and
 * dec_hidden (L_dec + 1, n_tgt, d), each optional, get the stacks' hidden
 * states in HF's encoder_hidden_states / decoder_hidden_states order (the
 * embeddings first, the last after the stack's final_layer_norm). opt as
 * ag_model_forward_ex (precision, pool, want_scores, want_qk, hidden_fn:
 * the encoder's L_enc + 1 hidden states, then the decoder's L_dec + 1,
 * each stack's from index 0, hidden state l before layer l's views);
 * block_fn is refused (AG_EINVAL). Errors: AG_EINVAL (NULL, no tokens),
 * AG_ERANGE (an id outside the vocabulary), AG_ENOMEM, AG_ENONFINITE (as
 * ag_model_forward), or the callback's status. */
AG_EXPORT int ag_seq2seq_forward(const ag_seq2seq *s, const int32_t *src, size_t n_src,
                                 const int32_t *tgt, size_t n_tgt,
                                 const ag_forward_options *opt, ag_layer_fn fn, void *user,
                                 double *enc_hidden, double *dec_hidden, ag_error *err);

/* ag_seq2seq_forward for an encoder whose input is a tensor (Whisper:
 * WhisperModel(input_features, decoder_input_ids)): `input` (ndim dims of
 * `shape`, borrowed) as ag_model_forward_values takes it for the encoder
 * (ag_seq2seq_stack(s, AG_STACK_ENCODER)), tgt the decoder prompt as the
 * model's tokenizer gives it (special tokens included, verbatim). The rest
 * as ag_seq2seq_forward; a shape or value fault is named "source: ...".
 * ag_seq2seq_forward on such a model, and this on a token encoder, is
 * AG_EINVAL naming the other. */
AG_EXPORT int ag_seq2seq_forward_values(const ag_seq2seq *s, const double *input, int ndim,
                                        const size_t *shape, const int32_t *tgt, size_t n_tgt,
                                        const ag_forward_options *opt, ag_layer_fn fn, void *user,
                                        double *enc_hidden, double *dec_hidden, ag_error *err);

/* ---- one attention layer of any architecture (`attngeom layer`) --------- */

/* Inputs of ag_attention_layer; every pointer is borrowed. Weights are in
 * [in, out] form (x ↦ xW): transpose nn.Linear [out, in] tensors first
 * (ag_array_transpose2d). Head h owns columns h·d_h … (h+1)·d_h − 1 of the Q
 * and K projections (d_h = d_a / n_head). V does not enter the probabilities
 * and is not taken. rope, softcap and window are the attention kernel's
 * (docs/engine.md); all zero turns them off. Carries its size (ABI rule,
 * core.h): start from AG_ATTN_LAYER_SPEC_DEFAULT (every other field zero). */
typedef struct {
    size_t size;          /* sizeof(ag_attn_layer_spec), set by the macro */
    const double *x;      /* (n, d) layer input */
    size_t n, d;
    const double *wq;     /* (d, d_a) */
    const double *wk;     /* (d, d_a) */
    const double *bq;     /* (d_a) or NULL */
    const double *bk;     /* (d_a) or NULL */
    size_t d_a;
    int n_head;
    double scale;         /* <= 0: 1/sqrt(d_h); applied to Q after its bias */
    int causal;           /* mask j > i (probabilities exactly 0 there) */
    ag_rope rope;         /* rotary_dim > 0: rotate the first rotary_dim dims
                             of every Q and K head by position 0..n-1 (after
                             the scale); 0: none */
    double softcap;       /* > 0: scores s ← softcap·tanh(s/softcap) */
    int window;           /* > 0: sliding window, key j visible iff
                             0 <= i − j < window (causal) or |i − j| <
                             window (not causal) */
    ag_precision precision;
    const char *x_name;   /* for messages: where X and the weights came from */
    const char *w_name;   /* (file names); NULL: "attention layer" */
} ag_attn_layer_spec;
#define AG_ATTN_LAYER_SPEC_DEFAULT {.size = sizeof(ag_attn_layer_spec)}

/* A = softmax(cap(rope(scale·(XW_Q + b_Q)) rope(XW_K + b_K)ᵀ) + mask) per
 * head (rope and cap the identity when off). On success *out owns a new
 * (n_head, n, n) array. Errors: AG_EINVAL (null pointers, n/d/d_a/n_head
 * zero, d_a not divisible by n_head, a rope the kernel refuses (odd
 * rotary_dim, rotary_dim above d_h, theta <= 0, a scaling type's factors),
 * softcap negative or not finite, window negative), AG_ENOMEM,
 * AG_ENONFINITE: X or a weight holds NaN/Inf (the message names x_name or
 * w_name, the tensor, row and column), with f32 a value beyond the float32
 * range, or the scores overflow so that a head's probabilities are not
 * finite (the message names w_name and the head; nothing is returned). */
AG_EXPORT int ag_attention_layer(const ag_attn_layer_spec *spec, ag_array *out,
                                 ag_error *err);

/* Drop leading dimensions of size 1 in place ([1,1,d,k] -> [d,k]), keeping
 * at least one dimension ([1,1] -> [1]). */
AG_EXPORT void ag_array_squeeze_leading(ag_array *a);

/* Drop leading dimensions of size 1 while a has more than `rank` of them:
 * to rank 2, [1,1,n,d] -> [n,d] and [1,d] stays [1,d] (one row). An array
 * already of rank <= `rank` is unchanged. */
AG_EXPORT void ag_array_squeeze_to(ag_array *a, int rank);

/* Transpose a 2-D array in place (its data is reallocated). AG_ESHAPE if a is
 * not 2-D after ag_array_squeeze_to(a, 2), AG_ENOMEM. */
AG_EXPORT int ag_array_transpose2d(ag_array *a, ag_error *err);

/* Split a fused Q|K|V tensor into its three column blocks. `fused` (borrowed;
 * leading dimensions of size 1 dropped while it has more than two) is either a kernel [d, 3·d_a] ->
 * q, k, v each (d, d_a), or a bias [3·d_a] -> each (d_a). q, k, v receive new
 * arrays owned by the caller (v may be NULL if not wanted). `name` is used in
 * error messages (AG_ESHAPE: rank other than 1-2 or a last dimension not
 * divisible by 3). */
AG_EXPORT int ag_qkv_split(const ag_array *fused, const char *name, ag_array *q,
                           ag_array *k, ag_array *v, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
