/* arch.c — the architectures the engine reads, one descriptor per
 * model_type (see arch.h for the fields). Each row follows Hugging Face
 * transformers' modeling file for that model_type; the commit cited is the
 * version read (huggingface/transformers). Adding an architecture whose
 * blocks are built from these parts is adding a row.
 *
 * Conventions shared by the rows: LayerNorm stems also accept the legacy
 * gamma/beta names (TF-converted checkpoints, renamed by HF on load);
 * buffers a checkpoint may carry (attn.bias, attention.masked_bias,
 * rotary_emb.inv_freq, position_ids) and the heads (lm_head, embed_out,
 * cls., pooler.) are never read. */
#include <stddef.h>
#include <string.h>

#include "arch.h"

#define BIAS_ALL .bias_qkv = {NULL, 1}, .bias_o = {NULL, 1}, .bias_mlp = {NULL, 1}
#define BIAS_NONE .bias_qkv = {NULL, 0}, .bias_o = {NULL, 0}, .bias_mlp = {NULL, 0}

/* The BERT family's tensors (modeling_bert.py BertModel; RoBERTa and
 * XLM-RoBERTa copy them, "Copied from transformers.models.bert"). */
#define BERT_TENSORS                                                                        \
    .tok = "embeddings.word_embeddings.weight", .pos = "embeddings.position_embeddings.weight", \
    .type = "embeddings.token_type_embeddings.weight", .emb_norm = "embeddings.LayerNorm",     \
    .layer = "encoder.layer.%d.", .norm1 = "attention.output.LayerNorm",                       \
    .norm2 = "output.LayerNorm", .q = "attention.self.query", .k = "attention.self.key",      \
    .v = "attention.self.value", .o = "attention.output.dense", .up = "intermediate.dense",   \
    .down = "output.dense"

#define BERT_CONFIG                                                                         \
    .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",                      \
    .k_hidden = "hidden_size", .k_ff = "intermediate_size",                                 \
    .k_positions = "max_position_embeddings", .k_eps = "layer_norm_eps", .eps = 1e-12,      \
    .k_act = "hidden_act", .act = "gelu", .k_type_vocab = "type_vocab_size",                \
    .k_pos_kind = "position_embedding_type", BIAS_ALL, .norm = AG_NORM_LAYER,               \
    .residual = AG_RESIDUAL_POST, .causal = 0

/* The LLaMA family's config keys and tensors (modeling_llama.py LlamaModel:
 * RMSNorm, RoPE, grouped-query attention, gated MLP, model.norm). Split so
 * that no row overrides a field (-Woverride-init). */
#define LLAMA_KEYS                                                                          \
    .prefixes = {"model."}, .k_layers = "num_hidden_layers",                                \
    .k_heads = "num_attention_heads", .k_hidden = "hidden_size",                            \
    .k_ff = "intermediate_size", .k_positions = "max_position_embeddings",                  \
    .k_kv_heads = "num_key_value_heads", .k_head_dim = "head_dim", .k_eps = "rms_norm_eps", \
    .k_theta = "rope_theta", .partial_dflt = 1.0, .residual = AG_RESIDUAL_PRE,              \
    .positions = AG_POS_ROPE, .causal = 1

#define LLAMA_PARTS                                                                         \
    .eps = 1e-6, .k_act = "hidden_act", .act = "silu", .norm = AG_NORM_RMS,                 \
    .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_GATED

#define LLAMA_BASE                                                                          \
    .tok = "embed_tokens.weight", .final_norm = "norm", .layer = "layers.%d.",              \
    .norm1 = "input_layernorm", .o = "self_attn.o_proj", .down = "mlp.down_proj"

#define LLAMA_QKV .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj"
#define LLAMA_GATED .up = "mlp.up_proj", .gate = "mlp.gate_proj"
#define LLAMA_TENSORS LLAMA_BASE, LLAMA_QKV, LLAMA_GATED, .norm2 = "post_attention_layernorm"

/* modeling_falcon.py (00dcc6dd) FalconModel, one row per block layout:
 * word_embeddings, ln_f; FalconLinear (x·Wᵀ, then + b) with `bias`;
 * rotary (rope_theta, rope_scaling), or with `alibi` BLOOM's slopes in
 * bfloat16 and scores (q·kᵀ + alibi)·inv_norm_factor; FalconMLP
 * dense_h_to_4h (ffn_hidden_size), `activation`, dense_4h_to_h. */
#define FALCON_KEYS                                                                         \
    .model_type = "falcon", .arch = AG_ARCH_FALCON, .modeling = "modeling_falcon.py",       \
    .prefixes = {"transformer."}, .k_layers = "num_hidden_layers",                          \
    .k_heads = "num_attention_heads", .k_hidden = "hidden_size", .k_ff = "ffn_hidden_size", \
    .ff_mult = 4, .k_positions = "max_position_embeddings", .k_eps = "layer_norm_epsilon",  \
    .eps = 1e-5, .k_act = "activation", .act = "gelu", .k_theta = "rope_theta",             \
    .partial_dflt = 1.0, .bias_qkv = {"bias", 0}, .bias_o = {"bias", 0},                    \
    .bias_mlp = {"bias", 0}, .norm = AG_NORM_LAYER, .positions = AG_POS_ROPE,               \
    .k_alibi = "alibi", .alibi = AG_ALIBI_FALCON, .causal = 1, .mlp = AG_MLP_PLAIN,         \
    .tok = "word_embeddings.weight", .final_norm = "ln_f", .layer = "h.%d.",                \
    .qkv_fused = "self_attention.query_key_value", .o = "self_attention.dense",             \
    .up = "mlp.dense_h_to_4h", .down = "mlp.dense_4h_to_h"

/* FalconAttention._split_heads without new_decoder_architecture:
 * multi_query views (…, H + 2, hd): Q | k | v column blocks, one kv head;
 * else (…, H, 3, hd): per head q | k | v. */
#define FALCON_MQ .kv_fixed = 1, .qkv = AG_QKV_BLOCKS
#define FALCON_MHA .qkv = AG_QKV_PER_HEAD
/* FalconDecoderLayer: parallel_attn shares input_layernorm between
 * attention and MLP, mlp + attention + residual; otherwise
 * post_attention_layernorm after the attention's residual add. */
#define FALCON_PAR .residual = AG_RESIDUAL_PARALLEL, .norm1 = "input_layernorm", .norm2 = "input_layernorm"
#define FALCON_SEQ .residual = AG_RESIDUAL_PRE, .norm1 = "input_layernorm", .norm2 = "post_attention_layernorm"
#define FALCON_OLD(par, mq) {"new_decoder_architecture", 0, 0}, {"parallel_attn", 1, par}, {"multi_query", 1, mq}

/* Dinov2Config's keys and Dinov2Model's layers and names, shared by
 * dinov2 and dinov2_with_registers (whose modular file reuses them). */
#define DINOV2_FIELDS                                                                                     \
    .input = AG_INPUT_PIXELS, .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",         \
    .k_hidden = "hidden_size", .ff_mult = 4, .k_mlp_ratio = "mlp_ratio", .k_eps = "layer_norm_eps",       \
    .eps = 1e-6, .k_act = "hidden_act", .act = "gelu", .k_channels = "num_channels",                     \
    .channels_dflt = 3, .k_image = "image_size", .image_dflt = 224, .k_patch = "patch_size",             \
    .bias_qkv = {"qkv_bias", 1}, .bias_o = {NULL, 1}, .bias_mlp = {NULL, 1},                             \
    .k_refuse = {"use_swiglu_ffn"}, .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE,                  \
    .positions = AG_POS_LEARNED, .causal = 0, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN,               \
    .probe = "embeddings.cls_token", .cls = "embeddings.cls_token",                                      \
    .pos = "embeddings.position_embeddings", .conv1 = "embeddings.patch_embeddings.projection",          \
    .layer = "encoder.layer.%d.", .norm1 = "norm1", .norm2 = "norm2", .q = "attention.attention.query",  \
    .k = "attention.attention.key", .v = "attention.attention.value", .o = "attention.output.dense",     \
    .up = "mlp.fc1", .down = "mlp.fc2", .ls1 = "layer_scale1.lambda1", .ls2 = "layer_scale2.lambda1"

/* T5's keys and the tensors both stacks name alike (modeling_t5.py). */
#define T5_KEYS                                                                             \
    .model_type = "t5", .arch = AG_ARCH_T5, .modeling = "modeling_t5.py", .k_heads = "num_heads", \
    .k_hidden = "d_model", .k_ff = "d_ff", .k_head_dim = "d_kv", .head_dim_dflt = 64,        \
    .k_eps = "layer_norm_epsilon", .eps = 1e-6, .act = "relu", .k_ff_proj = "feed_forward_proj", BIAS_NONE,  \
    .norm = AG_NORM_RMS, .residual = AG_RESIDUAL_PRE, .positions = AG_POS_RELATIVE,          \
    .no_scale = 1, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "shared.weight",       \
    .k_buckets = "relative_attention_num_buckets",                                          \
    .k_max_distance = "relative_attention_max_distance",                                    \
    .rel_bias = "layer.0.SelfAttention.relative_attention_bias.weight",                     \
    .norm1 = "layer.0.layer_norm", .q = "layer.0.SelfAttention.q", .k = "layer.0.SelfAttention.k", \
    .v = "layer.0.SelfAttention.v", .o = "layer.0.SelfAttention.o"

/* BART's keys and the tensors both stacks name alike (modeling_bart.py). */
#define BART_KEYS                                                                           \
    .model_type = "bart", .arch = AG_ARCH_BART, .modeling = "modeling_bart.py",              \
    .prefixes = {"model."}, .k_hidden = "d_model", .k_positions = "max_position_embeddings", \
    .eps = 1e-5, .k_act = "activation_function", .act = "gelu",                              \
    .k_embed_sqrt = "scale_embedding", BIAS_ALL, .norm = AG_NORM_LAYER,                       \
    .residual = AG_RESIDUAL_POST, .positions = AG_POS_LEARNED, .pos_extra = 2,               \
    .scale_query = 1, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "shared.weight",    \
    .norm1 = "self_attn_layer_norm", .norm2 = "final_layer_norm", .q = "self_attn.q_proj",   \
    .k = "self_attn.k_proj", .v = "self_attn.v_proj", .o = "self_attn.out_proj", .up = "fc1", \
    .down = "fc2"

static const agm_arch archs[] = {
    /* modeling_gpt2.py GPT2Model: Conv1D [in, out] weights, c_attn's columns
     * Q | K | V, pre-LN, ln_f, learned positions. */
    {.model_type = "gpt2", .arch = AG_ARCH_GPT2, .modeling = "modeling_gpt2.py",
     .prefixes = {"transformer."}, .k_layers = "n_layer", .k_heads = "n_head", .k_hidden = "n_embd",
     .k_ff = "n_inner", .ff_mult = 4, .k_positions = "n_positions", .k_eps = "layer_norm_epsilon",
     .eps = 1e-5, .k_act = "activation_function", .act = "gelu_new",
     .k_scale_on = "scale_attn_weights", .k_inv_layer = "scale_attn_by_inverse_layer_idx", BIAS_ALL,
     .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE, .positions = AG_POS_LEARNED, .causal = 1,
     .conv1d = 1, .qkv = AG_QKV_BLOCKS, .mlp = AG_MLP_PLAIN, .tok = "wte.weight", .pos = "wpe.weight",
     .final_norm = "ln_f", .layer = "h.%d.", .norm1 = "ln_1", .norm2 = "ln_2",
     .qkv_fused = "attn.c_attn", .o = "attn.c_proj", .up = "mlp.c_fc", .down = "mlp.c_proj"},

    /* modeling_bert.py BertModel: post-LN, word + token type 0 + position,
     * embeddings.LayerNorm. */
    {.model_type = "bert", .arch = AG_ARCH_BERT, .modeling = "modeling_bert.py",
     .prefixes = {"bert."}, BERT_CONFIG, .positions = AG_POS_LEARNED, .qkv = AG_QKV_SEPARATE,
     .mlp = AG_MLP_PLAIN, BERT_TENSORS},

    /* modeling_roberta.py (000824f1) RobertaEmbeddings: BERT with positions
     * from create_position_ids_from_input_ids: padding_idx + the running
     * count of non-pad tokens, padding_idx itself for a pad token. */
    {.model_type = "roberta", .arch = AG_ARCH_ROBERTA, .modeling = "modeling_roberta.py",
     .prefixes = {"roberta."}, BERT_CONFIG, .k_pad = "pad_token_id", .positions = AG_POS_PADDED,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, BERT_TENSORS},

    /* modeling_xlm_roberta.py: RoBERTa's classes copied, base_model_prefix
     * "roberta". */
    {.model_type = "xlm-roberta", .arch = AG_ARCH_XLM_ROBERTA, .modeling = "modeling_xlm_roberta.py",
     .prefixes = {"roberta."}, BERT_CONFIG, .k_pad = "pad_token_id", .positions = AG_POS_PADDED,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, BERT_TENSORS},

    /* modeling_distilbert.py (00b326f4): Embeddings word + position then
     * LayerNorm(eps 1e-12), no token types; MultiHeadSelfAttention scales
     * q by 1/√dim_per_head before q·k; TransformerBlock post-LN
     * (sa_layer_norm, output_layer_norm, both eps 1e-12). */
    {.model_type = "distilbert", .arch = AG_ARCH_DISTILBERT, .modeling = "modeling_distilbert.py",
     .prefixes = {"distilbert."}, .k_layers = "n_layers", .k_heads = "n_heads", .k_hidden = "dim",
     .k_ff = "hidden_dim", .k_positions = "max_position_embeddings", .eps = 1e-12,
     .k_act = "activation", .act = "gelu", BIAS_ALL, .norm = AG_NORM_LAYER,
     .residual = AG_RESIDUAL_POST, .positions = AG_POS_LEARNED, .causal = 0, .scale_query = 1,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "embeddings.word_embeddings.weight",
     .pos = "embeddings.position_embeddings.weight", .emb_norm = "embeddings.LayerNorm",
     .layer = "transformer.layer.%d.", .norm1 = "sa_layer_norm", .norm2 = "output_layer_norm",
     .q = "attention.q_lin", .k = "attention.k_lin", .v = "attention.v_lin",
     .o = "attention.out_lin", .up = "ffn.lin1", .down = "ffn.lin2"},

    /* modular_gpt_neox.py (00dcc6dd), configuration_gpt_neox.py (008e5743):
     * query_key_value viewed (…, heads, 3·head_size) and chunked: per head
     * q_h | k_h | v_h; RoPE on the first int(head_size·rotary_pct) dims
     * (rotary_emb_base); GPTNeoXLayer parallel (x + attn(ln1(x)) +
     * mlp(ln2(x))) or sequential residual; attention_bias on
     * query_key_value and dense; final_layer_norm. */
    {.model_type = "gpt_neox", .arch = AG_ARCH_GPT_NEOX, .modeling = "modeling_gpt_neox.py",
     .prefixes = {"gpt_neox."}, .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",
     .k_hidden = "hidden_size", .k_ff = "intermediate_size", .k_positions = "max_position_embeddings",
     .k_eps = "layer_norm_eps", .eps = 1e-5, .k_act = "hidden_act", .act = "gelu",
     .k_theta = "rotary_emb_base", .k_partial = "rotary_pct", .partial_dflt = 0.25,
     .k_residual = "use_parallel_residual", .res_true = AG_RESIDUAL_PARALLEL,
     .res_false = AG_RESIDUAL_PRE, .bias_qkv = {"attention_bias", 1}, .bias_o = {"attention_bias", 1},
     .bias_mlp = {NULL, 1}, .norm = AG_NORM_LAYER, .positions = AG_POS_ROPE, .causal = 1,
     .qkv = AG_QKV_PER_HEAD, .mlp = AG_MLP_PLAIN, .tok = "embed_in.weight",
     .final_norm = "final_layer_norm", .layer = "layers.%d.", .norm1 = "input_layernorm",
     .norm2 = "post_attention_layernorm", .qkv_fused = "attention.query_key_value",
     .o = "attention.dense", .up = "mlp.dense_h_to_4h", .down = "mlp.dense_4h_to_h"},

    /* modeling_opt.py (0184d208): OPTLearnedPositionalEmbedding rows
     * position + 2; project_in when word_embed_proj_dim != hidden_size;
     * OPTAttention q_proj(x)·head_dim^-0.5 then scaling 1.0;
     * do_layer_norm_before chooses pre- or post-LN; final_layer_norm only
     * with do_layer_norm_before and not _remove_final_layer_norm;
     * nn.LayerNorm's default eps 1e-5. OPTModel saves "decoder.",
     * OPTForCausalLM "model.decoder.". */
    {.model_type = "opt", .arch = AG_ARCH_OPT, .modeling = "modeling_opt.py",
     .prefixes = {"model.decoder.", "decoder."}, .k_layers = "num_hidden_layers",
     .k_heads = "num_attention_heads", .k_hidden = "hidden_size", .k_ff = "ffn_dim",
     .k_positions = "max_position_embeddings", .eps = 1e-5, .k_act = "activation_function",
     .act = "relu", .k_embed_dim = "word_embed_proj_dim", .k_affine = "layer_norm_elementwise_affine",
     .k_residual = "do_layer_norm_before", .res_true = AG_RESIDUAL_PRE, .res_false = AG_RESIDUAL_POST,
     .k_no_final = "_remove_final_layer_norm", .bias_qkv = {"enable_bias", 1},
     .bias_o = {"enable_bias", 1}, .bias_mlp = {"enable_bias", 1}, .norm = AG_NORM_LAYER,
     .positions = AG_POS_LEARNED, .pos_extra = 2, .causal = 1, .scale_query = 1,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "embed_tokens.weight",
     .pos = "embed_positions.weight", .proj_in = "project_in", .final_norm = "final_layer_norm",
     .layer = "layers.%d.", .norm1 = "self_attn_layer_norm", .norm2 = "final_layer_norm",
     .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
     .o = "self_attn.out_proj", .up = "fc1", .down = "fc2"},

    /* modeling_llama.py LlamaModel: attention_bias on q/k/v/o, mlp_bias. */
    {.model_type = "llama", .arch = AG_ARCH_LLAMA, .modeling = "modeling_llama.py", LLAMA_KEYS,
     LLAMA_PARTS,
     .bias_qkv = {"attention_bias", 0}, .bias_o = {"attention_bias", 0},
     .bias_mlp = {"mlp_bias", 0}, LLAMA_TENSORS},

    /* modeling_mistral.py: bias-free projections; MistralModel uses
     * create_sliding_window_causal_mask for every layer when sliding_window
     * is set (configuration_mistral.py (008e5743) default 4096). */
    {.model_type = "mistral", .arch = AG_ARCH_MISTRAL, .modeling = "modeling_mistral.py",
     LLAMA_KEYS, LLAMA_PARTS, .windows = AGM_WIN_ALL, .window_dflt = 4096, BIAS_NONE, LLAMA_TENSORS},

    /* modeling_qwen2.py: q/k/v biased, o_proj not; configuration_qwen2.py
     * (008e5743): sliding_window only with use_sliding_window, on the layers
     * layer_types names, by default those >= max_window_layers. */
    {.model_type = "qwen2", .arch = AG_ARCH_QWEN2, .modeling = "modeling_qwen2.py", LLAMA_KEYS,
     LLAMA_PARTS,
     .windows = AGM_WIN_QWEN2, .window_dflt = 4096, .bias_qkv = {NULL, 1}, .bias_o = {NULL, 0},
     .bias_mlp = {NULL, 0}, LLAMA_TENSORS},

    /* modular_gemma.py (008e5743): GemmaRMSNorm (1 + w), embeddings times
     * √hidden_size, head_dim (default 256), GeGLU; hidden_activation as in
     * modeling_gemma.py (0125ac68), default gelu_pytorch_tanh. */
    {.model_type = "gemma", .arch = AG_ARCH_GEMMA, .modeling = "modeling_gemma.py", LLAMA_KEYS,
     .eps = 1e-6, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_GATED, .head_dim_dflt = 256, .k_act = "hidden_activation", .act = "gelu_pytorch_tanh",
     .k_bidir = "use_bidirectional_attention", .bias_qkv = {"attention_bias", 0},
     .bias_o = {"attention_bias", 0}, .bias_mlp = {NULL, 0}, .norm = AG_NORM_RMS_1P,
     .embed_sqrt = 1, LLAMA_TENSORS},

    /* modular_gemma2.py (008e5743): Gemma plus Gemma2DecoderLayer's
     * sandwich norms (post_attention_layernorm on the attention output,
     * pre_/post_feedforward_layernorm around the MLP),
     * query_pre_attn_scalar^-0.5, attn_logit_softcapping, sliding window on
     * layer_types' "sliding_attention" layers (default: the even ones). */
    {.model_type = "gemma2", .arch = AG_ARCH_GEMMA2, .modeling = "modeling_gemma2.py", LLAMA_KEYS,
     .eps = 1e-6, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_GATED, .head_dim_dflt = 256, .k_act = "hidden_activation", .act = "gelu_pytorch_tanh",
     .k_query_scalar = "query_pre_attn_scalar", .k_softcap = "attn_logit_softcapping",
     .softcap_dflt = 50, .k_bidir = "use_bidirectional_attention", .windows = AGM_WIN_ALTERNATE,
     .window_dflt = 4096,
     .bias_qkv = {"attention_bias", 0}, .bias_o = {"attention_bias", 0}, .bias_mlp = {NULL, 0},
     .norm = AG_NORM_RMS_1P, .sandwich = 1, .embed_sqrt = 1, LLAMA_BASE, LLAMA_QKV, LLAMA_GATED,
     .norm2 = "pre_feedforward_layernorm", .attn_out_norm = "post_attention_layernorm",
     .mlp_out_norm = "post_feedforward_layernorm"},

    /* modular_phi3.py (06053b84), configuration_phi3.py (008e5743):
     * qkv_proj columns Q (heads·hd) | K (kv·hd) | V (kv·hd), gate_up_proj
     * chunked gate | up, partial_rotary_factor, no biases; the Mistral model
     * class: one sliding-window mask for all layers when sliding_window is
     * set (default None); rope_scaling "su" and "yarn" are longrope
     * (configuration_phi3.py, backward compatibility). */
    {.model_type = "phi3", .arch = AG_ARCH_PHI3, .modeling = "modeling_phi3.py", LLAMA_KEYS,
     .eps = 1e-5, .k_act = "hidden_act", .act = "silu", .norm = AG_NORM_RMS,
     .k_partial = "partial_rotary_factor", .su_yarn_longrope = 1, .windows = AGM_WIN_ALL, BIAS_NONE,
     .qkv = AG_QKV_BLOCKS, .mlp = AG_MLP_GATED_FUSED, LLAMA_BASE,
     .norm2 = "post_attention_layernorm", .qkv_fused = "self_attn.qkv_proj",
     .up = "mlp.gate_up_proj"},

    /* modeling_qwen3.py (000c33fd), configuration_qwen3.py (008e5743):
     * Qwen3Attention q_norm, k_norm = Qwen3RMSNorm(head_dim) on each head of
     * q_proj(x), k_proj(x) before RoPE; attention_bias on q/k/v/o; head_dim
     * default 128; windows as Qwen2 (use_sliding_window, layer_types,
     * max_window_layers). */
    {.model_type = "qwen3", .arch = AG_ARCH_QWEN3, .modeling = "modeling_qwen3.py", LLAMA_KEYS,
     LLAMA_PARTS, .head_dim_dflt = 128, .windows = AGM_WIN_QWEN2, .window_dflt = 4096,
     .bias_qkv = {"attention_bias", 0}, .bias_o = {"attention_bias", 0}, .bias_mlp = {NULL, 0},
     .qk_norm = AG_QK_NORM_HEAD, .q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm",
     LLAMA_TENSORS},

    /* modeling_olmo2.py (000c33fd), configuration_olmo2.py (008e5743):
     * Olmo2Attention q_norm = Olmo2RMSNorm(n_head·head_dim), k_norm over
     * n_kv_head·head_dim, on the whole projections before the split into
     * heads and RoPE; Olmo2DecoderLayer has no input norm:
     * h + post_attention_layernorm(attn(h)), then
     * h + post_feedforward_layernorm(mlp(h)); rms_norm_eps 1e-5;
     * attention_bias on q/k/v/o. */
    {.model_type = "olmo2", .arch = AG_ARCH_OLMO2, .modeling = "modeling_olmo2.py", LLAMA_KEYS,
     .eps = 1e-5, .k_act = "hidden_act", .act = "silu", .norm = AG_NORM_RMS,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_GATED, .bias_qkv = {"attention_bias", 0},
     .bias_o = {"attention_bias", 0}, .bias_mlp = {NULL, 0}, .qk_norm = AG_QK_NORM_FULL,
     .q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm", .sandwich = 1, .no_pre_norm = 1,
     .tok = "embed_tokens.weight", .final_norm = "norm", .layer = "layers.%d.",
     .o = "self_attn.o_proj", .down = "mlp.down_proj", LLAMA_QKV, LLAMA_GATED,
     .attn_out_norm = "post_attention_layernorm", .mlp_out_norm = "post_feedforward_layernorm"},

    /* modeling_gemma3.py (0018aa64) Gemma3TextModel, configuration_gemma3.py
     * (008f5c8c): Gemma-2's layer (sandwich norms, GemmaRMSNorm 1 + w,
     * embeddings times √hidden_size, query_pre_attn_scalar^-0.5) with
     * Gemma3Attention's q_norm, k_norm = Gemma3RMSNorm(head_dim) on each
     * head before RoPE; attn_logit_softcapping default none; sliding layers
     * from layer_types, else (i + 1) % sliding_window_pattern (6), window
     * sliding_window (4096); their RoPE base rope_local_base_freq (10000,
     * no scaling), the full layers' rope_theta (1e6) with rope_scaling. */
    {.model_type = "gemma3_text", .arch = AG_ARCH_GEMMA3_TEXT, .modeling = "modeling_gemma3.py",
     LLAMA_KEYS, .eps = 1e-6, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_GATED, .head_dim_dflt = 256,
     .k_act = "hidden_activation", .act = "gelu_pytorch_tanh",
     .k_query_scalar = "query_pre_attn_scalar", .k_softcap = "attn_logit_softcapping",
     .theta_dflt = 1e6, .k_local_theta = "rope_local_base_freq", .k_bidir = "use_bidirectional_attention",
     .windows = AGM_WIN_PATTERN, .window_dflt = 4096, .bias_qkv = {"attention_bias", 0},
     .bias_o = {"attention_bias", 0}, .bias_mlp = {NULL, 0}, .norm = AG_NORM_RMS_1P,
     .sandwich = 1, .embed_sqrt = 1, .qk_norm = AG_QK_NORM_HEAD, .q_norm = "self_attn.q_norm",
     .k_norm = "self_attn.k_norm", LLAMA_BASE, LLAMA_QKV, LLAMA_GATED,
     .norm2 = "pre_feedforward_layernorm", .attn_out_norm = "post_attention_layernorm",
     .mlp_out_norm = "post_feedforward_layernorm"},

    /* modeling_modernbert.py (000c33fd) ModernBertModel, eager path without
     * padding: embeddings.norm(tok_embeddings), pre-LN layers (attn_norm is
     * Identity in layer 0), Wqkv viewed (n, 3, H, hd): columns Q | K | V,
     * head_dim^-0.5, RoPE rope_theta per layer type (global_rope_theta
     * 160000; local layers local_rope_theta 10000), local layers every layer
     * but each global_attn_every_n_layers-th with a symmetric band
     * (AGM_WIN_EVERY_N), GeGLU Wi chunked input | gate, act(input)·gate;
     * nn.LayerNorm(bias=norm_bias), no biases by default. The hidden states
     * end with the last layer's output: final_norm is on last_hidden_state
     * only and is not read. */
    {.model_type = "modernbert", .arch = AG_ARCH_MODERNBERT, .modeling = "modeling_modernbert.py",
     .prefixes = {"model."}, .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",
     .k_hidden = "hidden_size", .k_ff = "intermediate_size",
     .k_positions = "max_position_embeddings", .k_eps = "norm_eps", .eps = 1e-5,
     .k_act = "hidden_activation", .act = "gelu", .k_theta = "global_rope_theta",
     .theta_dflt = 160000, .partial_dflt = 1.0, .k_local_theta = "local_rope_theta",
     .k_norm_bias = "norm_bias", .first_no_norm1 = 1, .windows = AGM_WIN_EVERY_N,
     .bias_qkv = {"attention_bias", 0}, .bias_o = {"attention_bias", 0},
     .bias_mlp = {"mlp_bias", 0}, .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE,
     .positions = AG_POS_ROPE, .causal = 0, .qkv = AG_QKV_BLOCKS, .mlp = AG_MLP_GATED_FUSED,
     .tok = "embeddings.tok_embeddings.weight", .emb_norm = "embeddings.norm",
     .layer = "layers.%d.", .norm1 = "attn_norm", .norm2 = "mlp_norm", .qkv_fused = "attn.Wqkv",
     .o = "attn.Wo", .up = "mlp.Wi", .down = "mlp.Wo"},

    /* modeling_vit.py (005db820) ViTModel: ViTEmbeddings cat(cls_token,
     * ViTPatchEmbeddings' Conv2d(C, d, kernel = stride = patch_size)) +
     * position_embeddings; ViTLayer pre-LN (layernorm_before,
     * layernorm_after), ViTSelfAttention scores · head_dim^-0.5 (eager),
     * qkv_bias; ViTEncoder's hidden states end with the last layer's output:
     * the final `layernorm` is on last_hidden_state only and is not read.
     * ViTForImageClassification saves "vit." + these (pooler, classifier
     * ignored). */
    {.model_type = "vit", .arch = AG_ARCH_VIT, .modeling = "modeling_vit.py", .prefixes = {"vit."},
     .input = AG_INPUT_PIXELS, .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",
     .k_hidden = "hidden_size", .k_ff = "intermediate_size", .k_eps = "layer_norm_eps",
     .eps = 1e-12, .k_act = "hidden_act", .act = "gelu", .k_channels = "num_channels",
     .channels_dflt = 3, .k_image = "image_size", .image_dflt = 224, .k_patch = "patch_size",
     .patch_dflt = 16, .bias_qkv = {"qkv_bias", 1}, .bias_o = {NULL, 1}, .bias_mlp = {NULL, 1},
     .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE, .positions = AG_POS_LEARNED,
     .causal = 0, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN,
     .probe = "embeddings.cls_token", .cls = "embeddings.cls_token",
     .pos = "embeddings.position_embeddings", .conv1 = "embeddings.patch_embeddings.projection",
     .layer = "encoder.layer.%d.", .norm1 = "layernorm_before", .norm2 = "layernorm_after",
     .q = "attention.attention.query", .k = "attention.attention.key",
     .v = "attention.attention.value", .o = "attention.output.dense", .up = "intermediate.dense",
     .down = "output.dense"},

    /* modeling_dinov2.py (015e6876) Dinov2Model: Dinov2Embeddings as ViT's
     * (cls_token, Conv2d patches, position_embeddings, interpolated when the
     * grid differs); Dinov2Layer pre-LN norm1 / norm2, h += λ1 ∘
     * attention(norm1(h)), h += λ2 ∘ mlp(norm2(h)) (Dinov2LayerScale, both
     * parameters named lambda1), Dinov2MLP fc1 / fc2 of int(hidden_size ·
     * mlp_ratio); use_swiglu_ffn refused. The encoder's hidden states end
     * before the final `layernorm`; mask_token is unused without
     * bool_masked_pos. Dinov2ForImageClassification saves "dinov2." + these. */
    {.model_type = "dinov2", .arch = AG_ARCH_DINOV2, .modeling = "modeling_dinov2.py", .prefixes = {"dinov2."},
     .patch_dflt = 14, DINOV2_FIELDS},

    /* modeling_dinov2_with_registers.py (c80ba31e) Dinov2WithRegistersModel:
     * Dinov2's layers and names; Dinov2WithRegistersEmbeddings adds the
     * positions to cat(cls_token, patches) (interpolate_pos_encoding:
     * bicubic with antialias=True when the grid differs), then inserts
     * register_tokens (1, num_register_tokens, d) after the CLS row, so
     * registers get no position embedding. use_swiglu_ffn refused, mask_token
     * unused; Dinov2WithRegistersForImageClassification saves
     * "dinov2_with_registers." + these. */
    {.model_type = "dinov2_with_registers", .arch = AG_ARCH_DINOV2_REGISTERS,
     .modeling = "modeling_dinov2_with_registers.py", .prefixes = {"dinov2_with_registers."},
     .patch_dflt = 16, .k_registers = "num_register_tokens", .registers_dflt = 4,
     .registers = "embeddings.register_tokens", .pos_antialias = 1, DINOV2_FIELDS},

    /* modeling_clip.py (000f1ffd) CLIPVisionModel, saved with model_type
     * clip_vision_model: CLIPVisionEmbeddings cat(class_embedding (d),
     * Conv2d(bias=False) patches) + position_embedding (an nn.Embedding,
     * interpolated as ViT's for another grid), pre_layrnorm, then
     * CLIPEncoderLayer pre-LN (layer_norm1, layer_norm2), CLIPAttention
     * q/k/v/out_proj with biases, scores · head_dim^-0.5, CLIPMLP fc1 /
     * fc2 (quick_gelu). Hidden states: CLIPEncoder's (the first after
     * pre_layrnorm; post_layernorm only on the pooled output, not read). */
    {.model_type = "clip_vision_model", .arch = AG_ARCH_CLIP_VISION, .modeling = "modeling_clip.py",
     .prefixes = {"vision_model."}, .input = AG_INPUT_PIXELS, .k_layers = "num_hidden_layers",
     .k_heads = "num_attention_heads", .k_hidden = "hidden_size", .k_ff = "intermediate_size",
     .k_eps = "layer_norm_eps", .eps = 1e-5, .k_act = "hidden_act", .act = "quick_gelu",
     .k_channels = "num_channels", .channels_dflt = 3, .k_image = "image_size", .image_dflt = 224,
     .k_patch = "patch_size", .patch_dflt = 32, .bias_qkv = {NULL, 1}, .bias_o = {NULL, 1},
     .bias_mlp = {NULL, 1}, .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE,
     .positions = AG_POS_LEARNED, .causal = 0, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN,
     .clip_embed = 1, .probe = "embeddings.class_embedding", .cls = "embeddings.class_embedding",
     .pos = "embeddings.position_embedding.weight", .conv1 = "embeddings.patch_embedding",
     .emb_norm = "pre_layrnorm", .layer = "encoder.layers.%d.", .norm1 = "layer_norm1",
     .norm2 = "layer_norm2", .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
     .o = "self_attn.out_proj", .up = "mlp.fc1", .down = "mlp.fc2"},

    /* modeling_clip.py (000f1ffd) CLIPTextModel, saved with model_type
     * clip_text_model: CLIPTextEmbeddings token_embedding(ids) +
     * position_embedding(arange(n)) (max_position_embeddings rows, no
     * offset), a causal mask (_create_4d_causal_attention_mask), then the
     * vision tower's CLIPEncoderLayer: pre-LN layer_norm1 / layer_norm2,
     * q/k/v/out_proj with biases, scores · head_dim^-0.5, fc1 / fc2
     * (quick_gelu). Hidden states: CLIPEncoder's (embeddings, then each
     * layer); final_layer_norm only on last_hidden_state, not read. */
    {.model_type = "clip_text_model", .arch = AG_ARCH_CLIP_TEXT, .modeling = "modeling_clip.py",
     .prefixes = {"text_model."}, .k_layers = "num_hidden_layers", .k_heads = "num_attention_heads",
     .k_hidden = "hidden_size", .k_ff = "intermediate_size", .k_positions = "max_position_embeddings",
     .k_eps = "layer_norm_eps", .eps = 1e-5, .k_act = "hidden_act", .act = "quick_gelu",
     .bias_qkv = {NULL, 1}, .bias_o = {NULL, 1}, .bias_mlp = {NULL, 1}, .norm = AG_NORM_LAYER,
     .residual = AG_RESIDUAL_PRE, .positions = AG_POS_LEARNED, .causal = 1,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "embeddings.token_embedding.weight",
     .pos = "embeddings.position_embedding.weight", .layer = "encoder.layers.%d.",
     .norm1 = "layer_norm1", .norm2 = "layer_norm2", .q = "self_attn.q_proj", .k = "self_attn.k_proj",
     .v = "self_attn.v_proj", .o = "self_attn.out_proj", .up = "mlp.fc1", .down = "mlp.fc2"},

    /* modeling_whisper.py (5c48f71a) WhisperEncoder: gelu(conv1) (kernel 3,
     * padding 1), gelu(conv2) (kernel 3, stride 2, padding 1), both
     * nn.functional.gelu (erf), + embed_positions rows; WhisperEncoderLayer
     * pre-LN (self_attn_layer_norm, final_layer_norm), WhisperAttention
     * q_proj(x)·head_dim^-0.5, k_proj without bias; activation_function;
     * nn.LayerNorm's eps 1e-5; the encoder's layer_norm before the last
     * hidden state. embed_scale (scale_embedding) is computed by
     * WhisperEncoder but never applied. WhisperModel saves "encoder.",
     * WhisperForConditionalGeneration "model.encoder."; the decoder is not
     * read. */
    {.model_type = "whisper", .arch = AG_ARCH_WHISPER, .modeling = "modeling_whisper.py",
     .prefixes = {"model."}, .input = AG_INPUT_FEATURES, .k_layers = "encoder_layers",
     .k_heads = "encoder_attention_heads", .k_hidden = "d_model", .k_ff = "encoder_ffn_dim",
     .k_positions = "max_source_positions", .eps = 1e-5, .k_act = "activation_function",
     .act = "gelu", .k_channels = "num_mel_bins", .channels_dflt = 80, BIAS_ALL, .no_k_bias = 1,
     .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE, .positions = AG_POS_LEARNED,
     .causal = 0, .scale_query = 1, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN,
     .probe = "encoder.conv1.weight", .pos = "encoder.embed_positions.weight",
     .conv1 = "encoder.conv1", .conv2 = "encoder.conv2", .final_norm = "encoder.layer_norm",
     .layer = "encoder.layers.%d.", .norm1 = "self_attn_layer_norm", .norm2 = "final_layer_norm",
     .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj",
     .o = "self_attn.out_proj", .up = "fc1", .down = "fc2"},

    /* modeling_bloom.py (9d97831a) BloomModel: word_embeddings then
     * word_embeddings_layernorm; BloomAttention's query_key_value viewed
     * (…, n_head, 3, head_dim): per head q_h | k_h | v_h; scores
     * alibi.baddbmm(q, kᵀ, beta = 1, alpha = 1/√head_dim) with
     * build_alibi_tensor's slopes; bloom_gelu_forward; biases everywhere;
     * ln_f. apply_residual_connection_post_layernorm is refused.
     * configuration_bloom.py: n_embed (old configs, bigscience/bloom) is
     * hidden_size; attribute_map num_attention_heads, num_hidden_layers. */
    {.model_type = "bloom", .arch = AG_ARCH_BLOOM, .modeling = "modeling_bloom.py",
     .prefixes = {"transformer."}, .k_layers = "n_layer", .k_heads = "n_head",
     .k_hidden = "hidden_size", .ff_mult = 4, .k_eps = "layer_norm_epsilon", .eps = 1e-5,
     .act = "bloom_gelu", BIAS_ALL, .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PRE,
     .positions = AG_POS_ALIBI, .alibi = AG_ALIBI_BLOOM, .causal = 1, .qkv = AG_QKV_PER_HEAD,
     .mlp = AG_MLP_PLAIN, .k_refuse = {"apply_residual_connection_post_layernorm"},
     .aliases = {{"hidden_size", "n_embed"}, {"n_head", "num_attention_heads"},
                 {"n_layer", "num_hidden_layers"}},
     .tok = "word_embeddings.weight", .emb_norm = "word_embeddings_layernorm",
     .final_norm = "ln_f", .layer = "h.%d.", .norm1 = "input_layernorm",
     .norm2 = "post_attention_layernorm", .qkv_fused = "self_attention.query_key_value",
     .o = "self_attention.dense", .up = "mlp.dense_h_to_4h", .down = "mlp.dense_4h_to_h"},

    /* modeling_mpt.py (0206c7b0) MptModel: wte; MptBlock pre-LN (norm_1,
     * norm_2: LayerNorm without bias); MptAttention Wqkv chunked Q | K | V,
     * scores q·kᵀ·softmax_scale + build_alibi_bias(n_heads, max_seq_len)
     * cut to the last n keys; MptMLP up_proj, exact GELU, down_proj, all
     * bias-free; norm_f. The attn_config settings HF ignores are refused
     * (config.c cfg_mpt). */
    {.model_type = "mpt", .arch = AG_ARCH_MPT, .modeling = "modeling_mpt.py",
     .prefixes = {"transformer."}, .k_layers = "n_layers", .k_heads = "n_heads",
     .k_hidden = "d_model", .ff_mult = 4, .k_positions = "max_seq_len",
     .k_eps = "layer_norm_epsilon", .eps = 1e-5, .act = "gelu", BIAS_NONE,
     .norm = AG_NORM_LAYER, .norm_no_bias = 1, .residual = AG_RESIDUAL_PRE,
     .positions = AG_POS_ALIBI, .alibi = AG_ALIBI_MPT, .k_attn_cfg = "attn_config", .causal = 1,
     .qkv = AG_QKV_BLOCKS, .mlp = AG_MLP_PLAIN, .tok = "wte.weight", .final_norm = "norm_f",
     .layer = "blocks.%d.", .norm1 = "norm_1", .norm2 = "norm_2", .qkv_fused = "attn.Wqkv",
     .o = "attn.out_proj", .up = "ffn.up_proj", .down = "ffn.down_proj"},

    /* Falcon's new_decoder_architecture (Falcon-40B, -180B): query_key_value
     * viewed (…, num_kv_heads, H/num_kv_heads + 2, hd): per group its
     * queries, then k, then v; num_ln_in_parallel_attn (default 2) ln_attn
     * and ln_mlp, or (1) input_layernorm for both; parallel residual. */
    {FALCON_KEYS, .sel = {{"new_decoder_architecture", 0, 1}, {"num_ln_in_parallel_attn", 2, 2}, {"parallel_attn", 1, 1}},
     .k_kv_heads = "num_kv_heads", .qkv = AG_QKV_GROUPED, .residual = AG_RESIDUAL_PARALLEL,
     .norm1 = "ln_attn", .norm2 = "ln_mlp"},
    {FALCON_KEYS, .sel = {{"new_decoder_architecture", 0, 1}, {"num_ln_in_parallel_attn", 2, 1}, {"parallel_attn", 1, 1}},
     .k_kv_heads = "num_kv_heads", .qkv = AG_QKV_GROUPED, FALCON_PAR},
    /* The original layout (Falcon-7B: multi_query, parallel_attn; Falcon-RW:
     * neither, with alibi and bias). */
    {FALCON_KEYS, .sel = {FALCON_OLD(1, 1)}, FALCON_MQ, FALCON_PAR},
    {FALCON_KEYS, .sel = {FALCON_OLD(1, 0)}, FALCON_MHA, FALCON_PAR},
    {FALCON_KEYS, .sel = {FALCON_OLD(0, 1)}, FALCON_MQ, FALCON_SEQ},
    {FALCON_KEYS, .sel = {FALCON_OLD(0, 0)}, FALCON_MHA, FALCON_SEQ},

    /* modeling_mixtral.py (af3efdd7), configuration_mixtral.py (ad467bd7): a Mistral
     * decoder (no biases, sliding_window on every layer when set, default
     * null; rms_norm_eps 1e-5, rope_theta 1e6) whose MLP is
     * MixtralSparseMoeBlock: softmax(gate(x)), top num_experts_per_tok (2)
     * of num_local_experts (8), renormalised, Σ w_e · w2(silu(w1 x) · w3 x). */
    {.model_type = "mixtral", .arch = AG_ARCH_MIXTRAL, .modeling = "modeling_mixtral.py", LLAMA_KEYS,
     .eps = 1e-5, .k_act = "hidden_act", .act = "silu", .norm = AG_NORM_RMS, .qkv = AG_QKV_SEPARATE,
     .mlp = AG_MLP_GATED, .theta_dflt = 1e6, .windows = AGM_WIN_ALL, BIAS_NONE, LLAMA_BASE, LLAMA_QKV,
     .norm2 = "post_attention_layernorm", .k_experts = "num_local_experts",
     .k_topk = "num_experts_per_tok", .experts_dflt = 8, .topk_dflt = 2, .norm_topk_dflt = 1,
     .router = "block_sparse_moe.gate", .expert = "block_sparse_moe.experts.%d.", .e_gate = "w1",
     .e_up = "w3", .e_down = "w2", .fused = "mlp.experts.", .router_v5 = "mlp.gate"},

    /* modeling_qwen2_moe.py (1c351314), configuration_qwen2_moe.py: Qwen2's
     * attention (q/k/v biased, qkv_bias default true); the eager mask
     * (_prepare_4d_causal_attention_mask_with_cache_position) windows every
     * layer when use_sliding_window and sliding_window are set, unlike
     * Qwen2's max_window_layers rule (read only by Qwen2MoeFlashAttention2);
     * Qwen2MoeSparseMoeBlock: softmax(gate(x)), top num_experts_per_tok (4)
     * of num_experts (60), renormalised only with norm_topk_prob (false),
     * plus sigmoid(shared_expert_gate(x)) · shared_expert(x); layer l sparse
     * iff l not in mlp_only_layers and (l + 1) % decoder_sparse_step == 0,
     * else Qwen2MoeMLP of intermediate_size. */
    {.model_type = "qwen2_moe", .arch = AG_ARCH_QWEN2_MOE, .modeling = "modeling_qwen2_moe.py",
     LLAMA_KEYS, LLAMA_PARTS, .windows = AGM_WIN_USE_ALL, .window_dflt = 4096,
     .bias_qkv = {"qkv_bias", 1}, .bias_o = {NULL, 0}, .bias_mlp = {NULL, 0}, LLAMA_TENSORS,
     .k_experts = "num_experts", .k_topk = "num_experts_per_tok", .k_expert_ff = "moe_intermediate_size",
     .k_shared_ff = "shared_expert_intermediate_size", .k_norm_topk = "norm_topk_prob",
     .experts_dflt = 60, .topk_dflt = 4, .expert_ff_dflt = 1408, .shared_ff_dflt = 5632,
     .sparse_step = 1, .router = "mlp.gate", .expert = "mlp.experts.%d.", .e_gate = "gate_proj",
     .e_up = "up_proj", .e_down = "down_proj", .shared = "mlp.shared_expert.",
     .shared_gate = "mlp.shared_expert_gate", .fused = "mlp.experts."},

    /* modeling_olmoe.py (00dcc6dd), configuration_olmoe.py: Llama's pre-norm
     * layer; OlmoeAttention q_norm = OlmoeRMSNorm(hidden_size) over the whole
     * q_proj(x), k_norm over n_kv_head·head_dim, before the split into heads
     * and RoPE (head_dim = hidden / heads); clip_qkv refused; attention_bias
     * on q/k/v/o; rms_norm_eps 1e-5; OlmoeSparseMoeBlock: top
     * num_experts_per_tok (8) of num_experts (64), renormalised only with
     * norm_topk_prob (false). */
    {.model_type = "olmoe", .arch = AG_ARCH_OLMOE, .modeling = "modeling_olmoe.py", LLAMA_KEYS,
     .eps = 1e-5, .k_act = "hidden_act", .act = "silu", .norm = AG_NORM_RMS, .qkv = AG_QKV_SEPARATE,
     .mlp = AG_MLP_GATED, .bias_qkv = {"attention_bias", 0}, .bias_o = {"attention_bias", 0},
     .bias_mlp = {NULL, 0}, .qk_norm = AG_QK_NORM_FULL, .q_norm = "self_attn.q_norm",
     .k_norm = "self_attn.k_norm", LLAMA_BASE, LLAMA_QKV, .norm2 = "post_attention_layernorm",
     .k_experts = "num_experts", .k_topk = "num_experts_per_tok", .k_norm_topk = "norm_topk_prob",
     .experts_dflt = 64, .topk_dflt = 8, .k_clip = "clip_qkv", .router = "mlp.gate",
     .expert = "mlp.experts.%d.", .e_gate = "gate_proj", .e_up = "up_proj", .e_down = "down_proj"},

    /* modeling_gptj.py (00b676f8), configuration_gptj.py: GPTJAttention
     * q/k/v/out_proj without biases, scores / sqrt(head_dim); RoPE on the
     * first rotary_dim dims (default 64) in rotate_every_two pairs (2j,
     * 2j + 1), theta 10000 (create_sinusoidal_positions); GPTJBlock parallel:
     * attn(ln_1(x)) + mlp(ln_1(x)) + x, one norm for both (norm2 = ln_1);
     * GPTJMLP fc_in, activation_function, fc_out, biased; ln_f. */
    {.model_type = "gptj", .arch = AG_ARCH_GPTJ, .modeling = "modeling_gptj.py",
     .prefixes = {"transformer."}, .k_layers = "n_layer", .k_heads = "n_head", .k_hidden = "n_embd",
     .k_ff = "n_inner", .ff_mult = 4, .k_positions = "n_positions", .k_eps = "layer_norm_epsilon",
     .eps = 1e-5, .k_act = "activation_function", .act = "gelu_new", .partial_dflt = 1.0,
     .k_rotary_dim = "rotary_dim", .interleaved = 1, .bias_qkv = {NULL, 0}, .bias_o = {NULL, 0},
     .bias_mlp = {NULL, 1}, .norm = AG_NORM_LAYER, .residual = AG_RESIDUAL_PARALLEL,
     .positions = AG_POS_ROPE, .causal = 1, .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN,
     .tok = "wte.weight", .final_norm = "ln_f", .layer = "h.%d.", .norm1 = "ln_1", .norm2 = "ln_1",
     .q = "attn.q_proj", .k = "attn.k_proj", .v = "attn.v_proj", .o = "attn.out_proj",
     .up = "mlp.fc_in", .down = "mlp.fc_out"},

    /* modeling_t5.py (6b8b757d), configuration_t5.py: T5Stack of T5Block,
     * T5LayerSelfAttention pre-norm (layer.0.layer_norm: T5LayerNorm, the
     * RMS form, eps layer_norm_epsilon), T5Attention q/k/v/o bias-free, no
     * score scaling, position_bias of block 0's relative_attention_bias
     * (bidirectional buckets in the encoder) shared by every block,
     * T5LayerFF (DenseReluDense wi, wo; gated-ACT: wi_0 through ACT times
     * wi_1, gated-gelu meaning gelu_new), final_layer_norm before the last
     * hidden state; shared.weight the token embedding of both stacks. */
    {T5_KEYS, .stack = 1, .k_layers = "num_layers", .causal = 0, .final_norm = "encoder.final_layer_norm",
     .layer = "encoder.block.%d.", .norm2 = "layer.1.layer_norm", .up = "layer.1.DenseReluDense.wi",
     .gate = "layer.1.DenseReluDense.wi_0", .up_gated = "layer.1.DenseReluDense.wi_1",
     .down = "layer.1.DenseReluDense.wo"},
    /* The decoder stack: num_decoder_layers (default num_layers), causal
     * self-attention with unidirectional buckets, then T5LayerCrossAttention
     * (layer.1: EncDecAttention over the encoder's last hidden state, no
     * position bias), then T5LayerFF as layer.2. */
    {T5_KEYS, .stack = 2, .k_layers = "num_decoder_layers", .k_layers_dflt = "num_layers", .causal = 1,
     .final_norm = "decoder.final_layer_norm", .layer = "decoder.block.%d.",
     .norm_cross = "layer.1.layer_norm", .cq = "layer.1.EncDecAttention.q", .ck = "layer.1.EncDecAttention.k",
     .cv = "layer.1.EncDecAttention.v", .co = "layer.1.EncDecAttention.o", .norm2 = "layer.2.layer_norm",
     .up = "layer.2.DenseReluDense.wi", .gate = "layer.2.DenseReluDense.wi_0",
     .up_gated = "layer.2.DenseReluDense.wi_1", .down = "layer.2.DenseReluDense.wo"},

    /* modeling_bart.py (57228229), configuration_bart.py: BartEncoder
     * embed_tokens(ids)·embed_scale (√d_model with scale_embedding) +
     * BartLearnedPositionalEmbedding rows i + 2, layernorm_embedding;
     * BartEncoderLayer post-LN: h = self_attn_layer_norm(h + attn(h)),
     * h = final_layer_norm(h + fc2(act(fc1(h)))); BartAttention
     * q_proj(h)·head_dim^-0.5, biases everywhere; nn.LayerNorm's eps 1e-5;
     * no final norm. BartModel saves no prefix, BartForConditionalGeneration
     * "model." (lm_head, final_logits_bias not read). */
    {BART_KEYS, .stack = 1, .k_layers = "encoder_layers", .k_heads = "encoder_attention_heads",
     .k_ff = "encoder_ffn_dim", .causal = 0, .pos = "encoder.embed_positions.weight",
     .emb_norm = "encoder.layernorm_embedding", .layer = "encoder.layers.%d."},
    /* BartDecoder: the same embedding (its own positions and norm), causal
     * self-attention, then encoder_attn over the encoder's last hidden state
     * with encoder_attn_layer_norm after its residual add, then the MLP. */
    {BART_KEYS, .stack = 2, .k_layers = "decoder_layers", .k_heads = "decoder_attention_heads",
     .k_ff = "decoder_ffn_dim", .causal = 1, .pos = "decoder.embed_positions.weight",
     .emb_norm = "decoder.layernorm_embedding", .layer = "decoder.layers.%d.",
     .norm_cross = "encoder_attn_layer_norm", .cq = "encoder_attn.q_proj", .ck = "encoder_attn.k_proj",
     .cv = "encoder_attn.v_proj", .co = "encoder_attn.out_proj"},

    /* modeling_whisper.py (5c48f71a) WhisperDecoder, read by ag_seq2seq_load
     * only (ag_model_load keeps the encoder row above, which is also the
     * encoder of the pair): embed_tokens(ids) + embed_positions rows 0..n-1
     * (max_target_positions, no scaling), WhisperDecoderLayer (MBart's)
     * pre-LN: self_attn_layer_norm, causal self_attn, then
     * encoder_attn_layer_norm and encoder_attn over the encoder's last
     * hidden state, then final_layer_norm, fc1, fc2; WhisperAttention
     * q_proj(x)·head_dim^-0.5, k_proj without bias; layer_norm before the
     * last hidden state. */
    {.model_type = "whisper", .arch = AG_ARCH_WHISPER, .modeling = "modeling_whisper.py", .stack = 2,
     .prefixes = {"model."}, .k_layers = "decoder_layers", .k_heads = "decoder_attention_heads",
     .k_hidden = "d_model", .k_ff = "decoder_ffn_dim", .k_positions = "max_target_positions", .eps = 1e-5,
     .k_act = "activation_function", .act = "gelu", BIAS_ALL, .no_k_bias = 1, .norm = AG_NORM_LAYER,
     .residual = AG_RESIDUAL_PRE, .positions = AG_POS_LEARNED, .causal = 1, .scale_query = 1,
     .qkv = AG_QKV_SEPARATE, .mlp = AG_MLP_PLAIN, .tok = "decoder.embed_tokens.weight",
     .pos = "decoder.embed_positions.weight", .final_norm = "decoder.layer_norm",
     .layer = "decoder.layers.%d.", .norm1 = "self_attn_layer_norm", .norm2 = "final_layer_norm",
     .q = "self_attn.q_proj", .k = "self_attn.k_proj", .v = "self_attn.v_proj", .o = "self_attn.out_proj",
     .up = "fc1", .down = "fc2", .norm_cross = "encoder_attn_layer_norm", .cq = "encoder_attn.q_proj",
     .ck = "encoder_attn.k_proj", .cv = "encoder_attn.v_proj", .co = "encoder_attn.out_proj"},
};

#define N_ARCHS ((int)(sizeof archs / sizeof *archs))

const agm_arch *agm_arch_find(const char *model_type)
{
    for (int i = 0; model_type && i < N_ARCHS; i++)
        if (!strcmp(archs[i].model_type, model_type))
            return &archs[i];
    return NULL;
}

const agm_arch *agm_arch_at(int i)
{
    return i >= 0 && i < N_ARCHS ? &archs[i] : NULL;
}

const char *agm_arch_names(void)
{
    return "gpt2, bert, roberta, xlm-roberta, distilbert, gpt_neox, opt, llama, mistral, qwen2, "
           "gemma, gemma2, phi3, qwen3, olmo2, gemma3_text, vit, dinov2, dinov2_with_registers, "
           "clip_vision_model, whisper, "
           "bloom, mpt, falcon, modernbert, mixtral, qwen2_moe, olmoe, gptj, clip_text_model, "
           "t5, bart (ag_seq2seq_load)";
}
