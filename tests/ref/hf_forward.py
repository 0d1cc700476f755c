"""Independent float64 numpy forward passes of Hugging Face models.

Written from Hugging Face's modelling code (huggingface/transformers, read
with the search tool; the path and commit read are cited at each function),
never from the C sources:

  gpt2         GPT2LMHeadModel (modeling_gpt2.py): pre-LN, Conv1D [in, out]
               weights, fused c_attn Q | K | V column blocks, gelu_new, ln_f.
  bert         BertForMaskedLM encoder (modeling_bert.py): LayerNorm(word +
               token_type[0] + position), post-LN layers, erf GELU.
  roberta,     RobertaModel (modeling_roberta.py): BERT with positions from
  xlm-roberta  create_position_ids_from_input_ids (padding_idx + 1 + i).
  distilbert   DistilBertModel (modeling_distilbert.py): q_lin/k_lin/v_lin/
               out_lin, q / sqrt(dim_per_head), sa_layer_norm,
               output_layer_norm, eps 1e-12.
  gpt_neox     GPTNeoXModel (modeling_gpt_neox.py): per-head interleaved
               query_key_value, partial rotary (rotary_pct), parallel or
               sequential residual, final_layer_norm.
  opt          OPTDecoder (modeling_opt.py): learned positions offset 2,
               do_layer_norm_before, q scaled after its projection, ReLU,
               project_in / project_out.
  llama,       LlamaModel family (modeling_llama.py, modeling_rope_utils.py,
  mistral,     masking_utils.py): RMSNorm, RoPE with rope_scaling default /
  qwen2        linear / dynamic / llama3, grouped-query attention, SwiGLU;
               Mistral's and Qwen2's sliding windows.
  gemma        GemmaModel: RMSNorm x·(1 + w), embeddings × sqrt(hidden_size),
               explicit head_dim, GeGLU (tanh GELU), multi-query attention.
  gemma2       Gemma2Model: Gemma plus attn_logit_softcapping,
               query_pre_attn_scalar, post-attention and pre/post feed-forward
               norms, sliding window on even layers.
  phi3         Phi3Model: fused qkv_proj and gate_up_proj, partial rotary,
               sliding window in the mask; rope_scaling longrope (Phi-3.5,
               Phi-3-128k) and, for the LLaMA family, yarn: inv_freq and
               the attention factor on cos and sin (modeling_rope_utils.py).
  qwen3        Qwen3Model: Llama's layer with RMSNorm over head_dim on each
               head of q and k (q_norm, k_norm) before RoPE; Qwen2's windows.
  olmo2        Olmo2Model: RMSNorm over the whole q and k projections before
               the split into heads; no input norms, post_attention_ and
               post_feedforward_layernorm on the sublayer outputs.
  gemma3_text  Gemma3TextModel: Gemma-2's layer with (1 + w) RMSNorm over
               head_dim on q and k, no soft-capping by default, sliding
               layers every (i + 1) % 6, their RoPE base rope_local_base_freq.
  bloom        BloomModel: ALiBi (build_alibi_tensor), word-embedding
               LayerNorm, per-head fused query_key_value, bloom_gelu.
  mpt          MptModel: ALiBi (gen_slopes, alibi_bias_max 8), fused Wqkv,
               bias-free LayerNorms and projections, exact GELU.
  falcon       FalconModel: new_decoder_architecture (grouped kv, ln_attn /
               ln_mlp) or the original layout (multi_query, parallel_attn),
               rotary or ALiBi (bfloat16 slopes, bias scaled with q k^T).
  modernbert   ModernBertModel (eager, no padding): embeddings.norm, pre-LN
               layers (layer 0 without attn_norm), fused Wqkv, local layers
               with a symmetric band |i - j| <= local_attention // 2 and
               their own RoPE base, GeGLU; final_norm not in the hidden states.
  mixtral      MixtralModel: Mistral's layer, the MLP a top-k (renormalised)
               mixture of SwiGLU experts w1/w2/w3 (or v5's fused
               mlp.experts.gate_up_proj / down_proj).
  qwen2_moe    Qwen2MoeModel: Qwen2's attention, the window on every layer
               with use_sliding_window; experts (top-k renormalised only
               with norm_topk_prob) plus a sigmoid-gated shared expert;
               decoder_sparse_step, mlp_only_layers dense.
  olmoe        OlmoeModel: Llama's pre-norm layer, RMSNorm over the whole q
               and k projections, experts as qwen2_moe without a shared one.
  gptj         GPTJModel (modeling_gptj.py): interleaved rotary
               (rotate_every_two) on rotary_dim dims, parallel residual from
               one ln_1, no attention biases.

Everything is float64: the weights are read from the safetensors file exactly
as stored (F32, F16, BF16, F64) and upcast; RoPE angles, norms and softmax are
computed in float64.  Masked probabilities are exactly 0 (as HF's finfo.min
mask gives after exp).

forward(folder, ids) -> (attn [L, H, n, n], hidden [L+1, n, d]) in HF's
output_attentions / output_hidden_states conventions: hidden[0] the input of
the first block (after any embedding norm, scale or project_in), hidden[l]
the output of block l-1, and for decoders with a final norm hidden[L] after
it.  One sequence, no padding, token type 0.  One deviation, because the
array has one width: OPT with project_out (word_embed_proj_dim !=
hidden_size) gives hidden[L] before project_out, where HF gives
project_out(hidden[L]) of width word_embed_proj_dim.

Run directly to compare with the PyTorch fixtures in tests/data/fixtures:
    /usr/bin/python3 tests/ref/hf_forward.py [MODELS_DIR]
"""
import json
import math
import os
import struct
import sys

import numpy as np
from scipy.special import erf

# ---------------------------------------------------------------- weights ---

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


def read_safetensors(path):
    """All tensors of one safetensors file as float64 arrays (name -> array)."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        shape = tuple(info["shape"])
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        if dt in _DTYPES:
            a = np.frombuffer(buf, dtype=_DTYPES[dt]).astype(np.float64)
        elif dt == "BF16":
            u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            a = u.view(np.float32).astype(np.float64)
        else:
            continue  # integer buffers etc.: never used by the models here
        out[name] = a.reshape(shape)
    return out


def load_weights(folder):
    """model.safetensors, or the shards of model.safetensors.index.json."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(read_safetensors(os.path.join(folder, shard)))
    return out


class Weights:
    """Tensor lookup that accepts names with or without the class prefix."""

    def __init__(self, tensors, prefixes):
        self.t = tensors
        self.prefixes = [""] + list(prefixes)

    def __call__(self, name, required=True):
        for p in self.prefixes:
            if p + name in self.t:
                return self.t[p + name]
        if name.endswith(".weight") or name.endswith(".bias"):
            # legacy BERT LayerNorm names gamma / beta
            legacy = name[:-len(".weight")] + ".gamma" if name.endswith(".weight") \
                else name[:-len(".bias")] + ".beta"
            if "LayerNorm" in name:
                for p in self.prefixes:
                    if p + legacy in self.t:
                        return self.t[p + legacy]
        if required:
            raise KeyError("tensor %s not found" % name)
        return None


# ------------------------------------------------------------ primitives ---

def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    var = (x * x).mean(axis=-1, keepdims=True)
    return w * (x * (1.0 / np.sqrt(var + eps)))


def gemma_rms_norm(x, w, eps):
    """GemmaRMSNorm / Gemma2RMSNorm (modeling_gemma.py @0125ac68d92d,
    modeling_gemma2.py @006e86931247): x * rsqrt(mean(x^2) + eps) * (1 + w);
    the weight is stored centred on 0."""
    var = (x * x).mean(axis=-1, keepdims=True)
    return (x * (1.0 / np.sqrt(var + eps))) * (1.0 + w)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


ACT = {"gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh,
       "gelu": gelu_erf, "silu": silu, "swish": silu, "relu": relu}


def activation(name):
    if name not in ACT:
        raise ValueError("unsupported activation %r" % name)
    return ACT[name]


def visible_keys(n, causal, window=0):
    """Boolean [n, n]: key j visible from query i.  masking_utils.py
    @2ccc6cae21fa: causal_mask_function kv_idx <= q_idx, and
    sliding_window_overlay kv_idx > q_idx - sliding_window on top of it, so
    0 <= i - j < window."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    if not causal and window:
        # modeling_modernbert.py @000c33fdfde1 _update_attention_mask:
        # distance = |i - j| <= local_attention // 2 (window = that half-width)
        return np.abs(i - j) <= window
    if not causal:
        return np.ones((n, n), dtype=bool)
    vis = j <= i
    if window:
        vis &= j > i - window
    return vis


def softmax_rows(s, visible):
    """Row softmax of scores s [..., n, n]; hidden keys get exactly 0."""
    s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)  # exp(-inf) = 0 exactly
    return e / e.sum(axis=-1, keepdims=True)


# Lists while scores() runs: every layer's scores [H, n, n] in order, and
# its (q, k) [H, n, dh] as attention() takes them (rotated; OPT's and
# DistilBERT's q already scaled).
SCORES = None
QK = None


def scores(model, ids):
    """model.forward(ids) with SCORES on: (attn, per-layer scores [H, n, n]
    as the attention forms them before its softmax, -inf where masked,
    per-layer (q, k))."""
    global SCORES, QK
    SCORES, QK = [], []
    try:
        attn, _ = model.forward(ids)
        return attn, SCORES, QK
    finally:
        SCORES = QK = None


def attention(q, k, v, scale, causal, window=0, softcap=0.0):
    """q [H, n, dh], k/v [H, n, dh] (already expanded for GQA).  Gemma-2
    soft-capping (modeling_gemma2.py @006e86931247 eager_attention_forward):
    cap * tanh(s / cap) after the scale, before the mask."""
    s = np.einsum("hid,hjd->hij", q, k) * scale
    if softcap:
        s = np.tanh(s / softcap) * softcap
    vis = visible_keys(s.shape[-1], causal, window)
    if SCORES is not None:  # the pre-softmax scores, -inf where masked
        SCORES.append(np.where(vis, s, -np.inf))
        QK.append((q, k))
    p = softmax_rows(s, vis)
    return p, np.einsum("hij,hjd->hid", p, v)


def split_heads(x, nh, dh=None):
    n, d = x.shape
    return x.reshape(n, nh, dh or d // nh).transpose(1, 0, 2)


def merge_heads(x):
    h, n, dh = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * dh)


def linear(x, W, name, bias=True):
    """nn.Linear: y = x W^T (+ b when the module has a bias)."""
    y = x @ W(name + ".weight").T
    if bias:
        y = y + W(name + ".bias")
    return y


# ------------------------------------------------------------------- RoPE ---

def rope_scaling_type(cfg):
    """(type, rope_scaling dict); "type" is the old key of "rope_type"
    (modeling_rope_utils.py @ef46806472a6 rope_config_validation)."""
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if cfg.get("model_type") == "phi3" and kind in ("su", "yarn"):
        kind = "longrope"  # configuration_phi3.py @008e57439125: backward compatibility
    return kind, rs


def rope_inv_freq(cfg, dim, theta, n, max_positions):
    """inv_freq [dim/2] for a pass over positions 0..n-1, in float64.
    modeling_rope_utils.py @ef46806472a6: _compute_default_rope_parameters,
    _compute_linear_scaling_rope_parameters (inv_freq / factor),
    _compute_dynamic_ntk_parameters with seq_len = max(position_ids) + 1 = n
    as dynamic_rope_update passes it (it recomputes only when n exceeds
    max_position_embeddings), _compute_llama3_parameters, yarn
    (yarn_inv_freq) and longrope (longrope_inv_freq).  Other types are
    refused by name; the attention factor of yarn and longrope is
    rope_attention_factor's."""
    kind, rs = rope_scaling_type(cfg)
    base = float(theta)
    expo = np.arange(0, dim, 2, dtype=np.float64) / dim
    if kind == "default":
        return 1.0 / base ** expo
    if kind == "linear":
        return (1.0 / base ** expo) / float(rs["factor"])
    if kind == "dynamic":
        factor = float(rs["factor"])
        seq_len = n if n > max_positions else max_positions
        base = base * ((factor * seq_len / max_positions) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / base ** expo
    if kind == "llama3":
        inv_freq = 1.0 / base ** expo
        factor = float(rs["factor"])
        low_freq_factor = float(rs["low_freq_factor"])
        high_freq_factor = float(rs["high_freq_factor"])
        old_context_len = float(rs["original_max_position_embeddings"])
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        # wavelen < high_freq_wavelen: kept; > low_freq_wavelen: / factor
        inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
        return np.where(is_medium, smoothed, inv_freq_llama)
    if kind == "yarn":
        return yarn_inv_freq(rs, dim, base, max_positions)
    if kind == "longrope":
        return longrope_inv_freq(cfg, rs, dim, base, n, max_positions)
    raise ValueError("unsupported rope_scaling type %r" % kind)


def _yarn_mscale(scale, mscale=1.0):
    """get_mscale of _compute_yarn_parameters (YaRN, Peng et al. 2023,
    sec. 3.4: sqrt(1/t) = 0.1 ln(s) + 1)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_inv_freq(rs, dim, base, max_positions):
    """_compute_yarn_parameters (modeling_rope_utils.py @ef46806472a6, with
    the later original_max_position_embeddings from rope_scaling and
    `truncate` (default True)): the correction range of beta_fast / beta_slow
    rotations over the original context, a linear ramp over dim // 2, the
    blend of inv_freq / factor (interpolation) and inv_freq
    (extrapolation)."""
    factor = float(rs["factor"])
    orig = rs.get("original_max_position_embeddings") or max_positions
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def find_correction_dim(num_rotations):
        return (dim * math.log(orig / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # HF: "Prevent singularity"
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extrapolation_factor = 1 - ramp
    return (1.0 / (factor * pos_freqs)) * (1 - extrapolation_factor) + (1.0 / pos_freqs) * extrapolation_factor


def longrope_original(cfg, rs, max_positions):
    """(original_max_position_embeddings, factor) of
    _compute_longrope_parameters: Phi-3's top-level original sets factor =
    max_position_embeddings / original."""
    if cfg.get("original_max_position_embeddings"):
        orig = cfg["original_max_position_embeddings"]
        return orig, max_positions / orig
    orig = rs.get("original_max_position_embeddings") or max_positions
    return orig, float(rs["factor"])


def longrope_inv_freq(cfg, rs, dim, base, n, max_positions):
    """_compute_longrope_parameters with seq_len = n (longrope_frequency_update):
    1 / (ext_factors * base ** (arange(0, dim, 2) / dim)), the long factors
    when n > original_max_position_embeddings."""
    orig, _ = longrope_original(cfg, rs, max_positions)
    ext = np.asarray(rs["long_factor"] if n > orig else rs["short_factor"], dtype=np.float64)
    return 1.0 / (ext * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def rope_attention_factor(cfg, max_positions):
    """attention_scaling of LlamaRotaryEmbedding (cos and sin times it):
    yarn as _compute_yarn_parameters (given; mscale / mscale_all_dim; else
    get_mscale(factor)), longrope as _compute_longrope_parameters (given;
    1 for factor <= 1; else sqrt(1 + ln(factor) / ln(original))), else 1."""
    kind, rs = rope_scaling_type(cfg)
    if kind == "yarn":
        if rs.get("attention_factor") is not None:
            return float(rs["attention_factor"])
        factor = float(rs["factor"])
        if rs.get("mscale") and rs.get("mscale_all_dim"):
            return _yarn_mscale(factor, rs["mscale"]) / _yarn_mscale(factor, rs["mscale_all_dim"])
        return _yarn_mscale(factor)
    if kind == "longrope":
        if rs.get("attention_factor") is not None:
            return float(rs["attention_factor"])
        orig, factor = longrope_original(cfg, rs, max_positions)
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
    return 1.0


def rope_cos_sin(inv_freq, n):
    """cos, sin [n, dim]: emb = cat(freqs, freqs) (LlamaRotaryEmbedding)."""
    ang = np.arange(n, dtype=np.float64)[:, None] * inv_freq[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang), np.sin(ang)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x [heads, n, hd]: rotate-half RoPE on the first cos.shape[-1] dims, the
    rest passed through (partial rotary: modular_gpt_neox.py @00dcc6dda6f6 and
    modeling_phi3.py @00d4b3d2142c apply_rotary_pos_emb)."""
    r = cos.shape[-1]
    xr, xp = x[..., :r], x[..., r:]
    return np.concatenate([xr * cos + rotate_half(xr) * sin, xp], axis=-1)


# ------------------------------------------------------ per-layer trace ---

# A list to fill (None: off): each layer appends one dict of what its heads
# read and write, for references that need more than the probabilities
# (tests/ref/check_values.py):
#   x   [n, d]       the input of the Q/K/V projections (after any
#                    pre-attention norm)
#   p   [H, n, n]    the probabilities
#   v   [H, n, dh]   every query head's value vectors x W_V + b_V (a GQA
#                    head's shared key/value head repeated)
#   wo  [H*dh, d]    the output projection in [in, out] form (head h owns
#                    rows h*dh ... (h+1)*dh - 1), without its bias
TRACE = None


def _trace(x, p, v, wo):
    if TRACE is not None:
        TRACE.append({"x": x, "p": p, "v": v, "wo": wo})


def trace(model, ids):
    """model.forward(ids) with TRACE on: (attn, hidden, per-layer list)."""
    global TRACE
    TRACE = []
    try:
        attn, hidden = model.forward(ids)
        return attn, hidden, TRACE
    finally:
        TRACE = None


# ----------------------------------------------------------------- models ---

def gpt2_forward(cfg, W, ids):
    L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = activation(cfg.get("activation_function", "gelu_new"))
    dh = d // H
    n = len(ids)
    pos = np.arange(n)
    h = W("wte.weight")[ids] + W("wpe.weight")[pos]
    hidden = [h]
    attns = []
    for l in range(L):
        p = "h.%d." % l
        x = layer_norm(h, W(p + "ln_1.weight"), W(p + "ln_1.bias"), eps)
        qkv = x @ W(p + "attn.c_attn.weight") + W(p + "attn.c_attn.bias")
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        scale = 1.0
        if cfg.get("scale_attn_weights", True):
            scale /= math.sqrt(dh)
        if cfg.get("scale_attn_by_inverse_layer_idx", False):
            scale /= float(l + 1)
        pr, o = attention(split_heads(q, H), split_heads(k, H), split_heads(v, H), scale, True)
        attns.append(pr)
        _trace(x, pr, split_heads(v, H), W(p + "attn.c_proj.weight"))
        h = h + (merge_heads(o) @ W(p + "attn.c_proj.weight") + W(p + "attn.c_proj.bias"))
        x = layer_norm(h, W(p + "ln_2.weight"), W(p + "ln_2.bias"), eps)
        m = act(x @ W(p + "mlp.c_fc.weight") + W(p + "mlp.c_fc.bias"))
        h = h + (m @ W(p + "mlp.c_proj.weight") + W(p + "mlp.c_proj.bias"))
        hidden.append(h)
    hidden[-1] = layer_norm(h, W("ln_f.weight"), W("ln_f.bias"), eps)
    return np.stack(attns), np.stack(hidden)


def bert_forward(cfg, W, ids, positions=None):
    """BertModel (modeling_bert.py); RobertaModel passes its own positions."""
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    act = activation(cfg.get("hidden_act", "gelu"))
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("unsupported position_embedding_type %r" % cfg["position_embedding_type"])
    dh = d // H
    n = len(ids)
    pos = np.arange(n) if positions is None else positions
    e = W("embeddings.word_embeddings.weight")[ids] \
        + W("embeddings.token_type_embeddings.weight")[np.zeros(n, dtype=int)]
    e = e + W("embeddings.position_embeddings.weight")[pos]
    h = layer_norm(e, W("embeddings.LayerNorm.weight"), W("embeddings.LayerNorm.bias"), eps)
    hidden = [h]
    attns = []
    for l in range(L):
        p = "encoder.layer.%d." % l
        q = linear(h, W, p + "attention.self.query")
        k = linear(h, W, p + "attention.self.key")
        v = linear(h, W, p + "attention.self.value")
        pr, o = attention(split_heads(q, H), split_heads(k, H), split_heads(v, H),
                          1.0 / math.sqrt(dh), False)
        attns.append(pr)
        _trace(h, pr, split_heads(v, H), W(p + "attention.output.dense.weight").T)
        a = linear(merge_heads(o), W, p + "attention.output.dense") + h
        a = layer_norm(a, W(p + "attention.output.LayerNorm.weight"),
                       W(p + "attention.output.LayerNorm.bias"), eps)
        m = act(linear(a, W, p + "intermediate.dense"))
        h = linear(m, W, p + "output.dense") + a
        h = layer_norm(h, W(p + "output.LayerNorm.weight"), W(p + "output.LayerNorm.bias"), eps)
        hidden.append(h)
    return np.stack(attns), np.stack(hidden)


def roberta_positions(cfg, ids):
    """create_position_ids_from_input_ids (modeling_roberta.py
    @000824f17f92): mask = ids != padding_idx; (cumsum(mask) * mask) +
    padding_idx, so real tokens count from padding_idx + 1."""
    pad = cfg.get("pad_token_id", 1)
    mask = (ids != pad).astype(np.int64)
    return np.cumsum(mask) * mask + pad


def roberta_forward(cfg, W, ids):
    """RobertaModel / XLMRobertaModel (modeling_roberta.py @000824f17f92):
    RobertaEmbeddings = BertEmbeddings with roberta_positions; the encoder
    is BERT's (the "Copied from ... Bert" classes)."""
    return bert_forward(cfg, W, ids, roberta_positions(cfg, ids))


def distilbert_forward(cfg, W, ids):
    """DistilBertModel (modeling_distilbert.py @00b326f4caca): Embeddings
    LayerNorm(word + position, eps 1e-12), no token types;
    MultiHeadSelfAttention q = q_lin(x) / sqrt(dim_per_head), scores q k^T,
    no mask for one unpadded sequence; TransformerBlock
    sa_layer_norm(out_lin(ctx) + x), output_layer_norm(ffn(sa) + sa)."""
    L, H, d = cfg["n_layers"], cfg["n_heads"], cfg["dim"]
    act = activation(cfg.get("activation", "gelu"))
    dh = d // H
    n = len(ids)
    e = W("embeddings.word_embeddings.weight")[ids] + W("embeddings.position_embeddings.weight")[np.arange(n)]
    h = layer_norm(e, W("embeddings.LayerNorm.weight"), W("embeddings.LayerNorm.bias"), 1e-12)
    hidden = [h]
    attns = []
    for l in range(L):
        p = "transformer.layer.%d." % l
        q = split_heads(linear(h, W, p + "attention.q_lin"), H) / math.sqrt(dh)
        k = split_heads(linear(h, W, p + "attention.k_lin"), H)
        v = split_heads(linear(h, W, p + "attention.v_lin"), H)
        pr, o = attention(q, k, v, 1.0, False)
        attns.append(pr)
        _trace(h, pr, v, W(p + "attention.out_lin.weight").T)
        sa = layer_norm(linear(merge_heads(o), W, p + "attention.out_lin") + h,
                        W(p + "sa_layer_norm.weight"), W(p + "sa_layer_norm.bias"), 1e-12)
        f = linear(act(linear(sa, W, p + "ffn.lin1")), W, p + "ffn.lin2")
        h = layer_norm(f + sa, W(p + "output_layer_norm.weight"), W(p + "output_layer_norm.bias"), 1e-12)
        hidden.append(h)
    return np.stack(attns), np.stack(hidden)


def gpt_neox_rotary(cfg):
    """(rotary_ndims, base) of GPTNeoXAttention: int(head_size * rotary_pct)
    and rotary_emb_base (modeling_gpt_neox.py @006bd23dd0ce); newer configs
    name them partial_rotary_factor and rope_theta, also inside
    rope_parameters (configuration_gpt_neox.py @008e57439125: defaults 0.25
    and 10000)."""
    rp = cfg.get("rope_parameters") or {}
    head_size = cfg["hidden_size"] // cfg["num_attention_heads"]
    pct = cfg.get("rotary_pct", cfg.get("partial_rotary_factor", rp.get("partial_rotary_factor", 0.25)))
    base = cfg.get("rotary_emb_base", cfg.get("rope_theta", rp.get("rope_theta", 10000.0)))
    return int(head_size * pct), float(base)


def gpt_neox_forward(cfg, W, ids):
    """GPTNeoXModel (modeling_gpt_neox.py @006bd23dd0ce, modular_gpt_neox.py
    @00dcc6dda6f6): qkv.view(n, H, 3 * head_size) split into q | k | v per
    head; RoPE on the first rotary_ndims dims; scores * head_size^-0.5;
    GPTNeoXLayer x + attn(ln1(x)) + mlp(ln2(x)) (use_parallel_residual) or
    sequential; final_layer_norm on the last hidden state."""
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    eps = cfg.get("layer_norm_eps", 1e-5)
    act = activation(cfg.get("hidden_act", "gelu"))
    bias = cfg.get("attention_bias", True)
    parallel = cfg.get("use_parallel_residual", True)
    hs = d // H
    n = len(ids)
    rot, base = gpt_neox_rotary(cfg)
    cos, sin = rope_cos_sin(rope_inv_freq(cfg, rot, base, n, cfg["max_position_embeddings"]), n)

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), W(name + ".bias"), eps)

    def mlp(x, p):
        return linear(act(linear(x, W, p + "mlp.dense_h_to_4h")), W, p + "mlp.dense_4h_to_h")

    h = W("embed_in.weight")[ids]
    hidden = [h]
    attns = []
    for l in range(L):
        p = "layers.%d." % l
        x = ln(h, p + "input_layernorm")
        qkv = linear(x, W, p + "attention.query_key_value", bias)                            # (n, 3d)
        qkv = qkv.reshape(n, H, 3 * hs).transpose(1, 0, 2)                                   # (H, n, 3hs)
        q, k, v = qkv[..., :hs], qkv[..., hs:2 * hs], qkv[..., 2 * hs:]
        pr, o = attention(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v, hs ** -0.5, True)
        attns.append(pr)
        _trace(x, pr, v, W(p + "attention.dense.weight").T)
        a = linear(merge_heads(o), W, p + "attention.dense", bias)
        if parallel:
            h = mlp(ln(h, p + "post_attention_layernorm"), p) + a + h
        else:
            a = a + h
            h = mlp(ln(a, p + "post_attention_layernorm"), p) + a
        hidden.append(h)
    hidden[-1] = ln(h, "final_layer_norm")
    return np.stack(attns), np.stack(hidden)


def opt_forward(cfg, W, ids):
    """OPTDecoder (modeling_opt.py @0184d2087e15).  OPTLearnedPositionalEmbedding:
    position_ids = cumsum(mask) * mask - 1 = 0..n-1 for an unpadded
    sequence, looked up at + offset 2.  project_in when word_embed_proj_dim
    != hidden_size.  OPTAttention: q = q_proj(x) * head_dim^-0.5, then
    scores q k^T with scaling 1.0.  OPTDecoderLayer: LayerNorms (nn default
    eps 1e-5) before attention and fc1 (do_layer_norm_before) or after the
    residual adds (OPT-350m).  final_layer_norm only if do_layer_norm_before
    and not _remove_final_layer_norm.  project_out is NOT applied to the last
    hidden state (see the module docstring)."""
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    pre = cfg.get("do_layer_norm_before", True)
    affine = cfg.get("layer_norm_elementwise_affine", True)
    bias = cfg.get("enable_bias", True)
    act = activation(cfg.get("activation_function", "relu"))
    dh = d // H
    n = len(ids)

    def ln(x, name):
        if affine:
            return layer_norm(x, W(name + ".weight"), W(name + ".bias"), 1e-5)
        return layer_norm(x, 1.0, 0.0, 1e-5)

    e = W("embed_tokens.weight")[ids]
    if cfg.get("word_embed_proj_dim", d) != d:
        e = linear(e, W, "project_in", False)
    h = e + W("embed_positions.weight")[np.arange(n) + 2]
    hidden = [h]
    attns = []
    for l in range(L):
        p = "layers.%d." % l
        x = ln(h, p + "self_attn_layer_norm") if pre else h
        q = linear(x, W, p + "self_attn.q_proj", bias) * dh ** -0.5
        k = linear(x, W, p + "self_attn.k_proj", bias)
        v = linear(x, W, p + "self_attn.v_proj", bias)
        pr, o = attention(split_heads(q, H), split_heads(k, H), split_heads(v, H), 1.0, True)
        attns.append(pr)
        _trace(x, pr, split_heads(v, H), W(p + "self_attn.out_proj.weight").T)
        h = h + linear(merge_heads(o), W, p + "self_attn.out_proj", bias)
        if not pre:
            h = ln(h, p + "self_attn_layer_norm")
        x = ln(h, p + "final_layer_norm") if pre else h
        h = h + linear(act(linear(x, W, p + "fc1", bias)), W, p + "fc2", bias)
        if not pre:
            h = ln(h, p + "final_layer_norm")
        hidden.append(h)
    if pre and not cfg.get("_remove_final_layer_norm", False):
        hidden[-1] = ln(h, "final_layer_norm")
    return np.stack(attns), np.stack(hidden)


def quick_gelu(x):
    """QuickGELUActivation (activations.py): x * sigmoid(1.702 x); CLIP."""
    return x / (1.0 + np.exp(-1.702 * x))


def clip_text_forward(cfg, W, ids):
    """CLIPTextModel (modeling_clip.py @000f1ffdbf1c) with
    output_attentions / output_hidden_states: CLIPTextEmbeddings
    token_embedding(ids) + position_embedding(arange(n)); the causal mask of
    _create_4d_causal_attention_mask; CLIPEncoderLayer h += out_proj(attn(
    layer_norm1(h))), h += fc2(act(fc1(layer_norm2(h)))), CLIPAttention
    scores (q k^T) * head_dim^-0.5 with biases on q/k/v/out_proj.  Hidden
    states are CLIPEncoder's: final_layer_norm only makes last_hidden_state,
    it is not among them."""
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    eps = cfg.get("layer_norm_eps", 1e-5)
    name = cfg.get("hidden_act", "quick_gelu")
    act = quick_gelu if name == "quick_gelu" else activation(name)
    dh = d // H
    n = len(ids)
    h = W("embeddings.token_embedding.weight")[ids] + W("embeddings.position_embedding.weight")[np.arange(n)]
    hidden, attns = [h], []
    for l in range(L):
        p = "encoder.layers.%d." % l
        x = layer_norm(h, W(p + "layer_norm1.weight"), W(p + "layer_norm1.bias"), eps)
        q, k, v = (split_heads(linear(x, W, p + "self_attn.%s_proj" % c), H) for c in "qkv")
        pr, o = attention(q, k, v, dh ** -0.5, True)
        attns.append(pr)
        _trace(x, pr, v, W(p + "self_attn.out_proj.weight").T)
        h = h + linear(merge_heads(o), W, p + "self_attn.out_proj")
        x = layer_norm(h, W(p + "layer_norm2.weight"), W(p + "layer_norm2.bias"), eps)
        h = h + linear(act(linear(x, W, p + "mlp.fc1")), W, p + "mlp.fc2")
        hidden.append(h)
    return np.stack(attns), np.stack(hidden)


class Llama:
    """LlamaModel (modeling_llama.py @002272831fba) and the models built on
    its decoder layer.  LlamaDecoderLayer: h + attn(input_layernorm(h)), then
    h + mlp(post_attention_layernorm(h)); LlamaAttention: q/k/v_proj
    (attention_bias; Qwen2 always biases q, k, v: modular_qwen2.py
    @022c4a9b8834), RoPE, GQA with kv head h // (H / H_kv), scaling
    head_dim^-0.5; LlamaMLP down(act(gate(x)) * up(x)); model.norm last.
    Sliding windows: Mistral on every layer when sliding_window is set
    (modular_mistral.py @0096ba4f66d4); Qwen2 on the layers of layer_types,
    by default those with index >= max_window_layers when
    use_sliding_window (configuration_qwen2.py @008e57439125)."""

    mlp_norm = "post_attention_layernorm"

    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.L, self.H, self.d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        self.Hkv = cfg.get("num_key_value_heads") or self.H
        self.dh = cfg.get("head_dim") or self.d // self.H
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.act = activation(cfg.get("hidden_act", "silu"))
        self.rotary_dim = int(self.dh * cfg.get("partial_rotary_factor", 1.0))
        self.theta = float(cfg.get("rope_theta", 10000.0))
        self.qkv_bias = bool(cfg.get("attention_bias", False)) or cfg["model_type"] == "qwen2"
        self.o_bias = bool(cfg.get("attention_bias", False))
        self.mlp_bias = bool(cfg.get("mlp_bias", False))

    def window(self, l):
        cfg = self.cfg
        mt = cfg["model_type"]
        if mt == "mistral":
            return cfg.get("sliding_window") or 0
        if mt in ("qwen2", "qwen3"):
            sw = cfg.get("sliding_window") if cfg.get("use_sliding_window", False) else None
            if not sw:
                return 0
            types = cfg.get("layer_types") or [
                "sliding_attention" if i >= cfg.get("max_window_layers", 28) else "full_attention"
                for i in range(self.L)]
            return sw if types[l] == "sliding_attention" else 0
        return 0

    def scale(self):
        return self.dh ** -0.5

    def softcap(self):
        return 0.0

    def embed(self, ids):
        return self.W("embed_tokens.weight")[ids]

    def norm(self, x, name):
        return rms_norm(x, self.W(name + ".weight"), self.eps)

    def qkv(self, x, p):
        return (linear(x, self.W, p + "self_attn.q_proj", self.qkv_bias),
                linear(x, self.W, p + "self_attn.k_proj", self.qkv_bias),
                linear(x, self.W, p + "self_attn.v_proj", self.qkv_bias))

    def mlp(self, x, p):
        W, b = self.W, self.mlp_bias
        return linear(self.act(linear(x, W, p + "mlp.gate_proj", b)) * linear(x, W, p + "mlp.up_proj", b),
                      W, p + "mlp.down_proj", b)

    def after_attn(self, a, p):
        return a

    def after_mlp(self, m, p):
        return m

    def pre_norm(self, h, name):
        return self.norm(h, name)

    def qk_norm(self, q, k, p):
        """q (n, H·hd), k (n, H_kv·hd) as projected; Llama: unchanged."""
        return q, k

    def block(self, h, l, cos, sin):
        p = "layers.%d." % l
        x = self.pre_norm(h, p + "input_layernorm")
        q, k, v = self.qkv(x, p)
        q, k = self.qk_norm(q, k, p)
        q = apply_rope(split_heads(q, self.H, self.dh), cos, sin)
        k = apply_rope(split_heads(k, self.Hkv, self.dh), cos, sin)
        v = split_heads(v, self.Hkv, self.dh)
        kv = np.arange(self.H) // (self.H // self.Hkv)
        pr, o = attention(q, k[kv], v[kv], self.scale(), True, self.window(l), self.softcap())
        _trace(x, pr, v[kv], self.W(p + "self_attn.o_proj.weight").T)
        a = linear(merge_heads(o), self.W, p + "self_attn.o_proj", self.o_bias)
        h = h + self.after_attn(a, p)
        m = self.mlp(self.pre_norm(h, p + self.mlp_norm), p)
        return pr, h + self.after_mlp(m, p)

    def rope_of_layer(self, n):
        """l -> (cos, sin) of layer l for positions 0..n-1 (one RoPE for
        every layer here), times yarn's / longrope's attention factor."""
        P = self.cfg["max_position_embeddings"]
        inv = rope_inv_freq(self.cfg, self.rotary_dim, self.theta, n, P)
        cos, sin = rope_cos_sin(inv, n)
        af = rope_attention_factor(self.cfg, P)  # yarn, longrope: cos, sin scaled
        cs = (cos * af, sin * af)
        return lambda l: cs

    def forward(self, ids):
        n = len(ids)
        rope = self.rope_of_layer(n)
        h = self.embed(ids)
        hidden = [h]
        attns = []
        for l in range(self.L):
            pr, h = self.block(h, l, *rope(l))
            attns.append(pr)
            hidden.append(h)
        hidden[-1] = self.norm(h, "norm")
        return np.stack(attns), np.stack(hidden)


class Gemma(Llama):
    """GemmaModel (modeling_gemma.py @0125ac68d92d; modular_gemma.py
    @008e57439125).  Llama's layer with GemmaRMSNorm (1 + w), embeddings
    times hidden_size**0.5 (HF rounds the normaliser to the hidden dtype:
    here float64), head_dim from the config, q/k/v/o biases only with
    attention_bias.  GemmaMLP uses ACT2FN[config.hidden_activation], and
    gelu_pytorch_tanh when it is null, ignoring hidden_act (the code the
    Gemma checkpoints were published with; HF later switched Gemma 1 to
    hidden_act, Gemma 2 kept hidden_activation)."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.act = activation(cfg.get("hidden_activation") or "gelu_pytorch_tanh")
        self.qkv_bias = self.o_bias = bool(cfg.get("attention_bias", False))
        self.mlp_bias = False

    def embed(self, ids):
        return self.W("embed_tokens.weight")[ids] * (self.d ** 0.5)

    def norm(self, x, name):
        return gemma_rms_norm(x, self.W(name + ".weight"), self.eps)


class Gemma2(Gemma):
    """Gemma2Model (modeling_gemma2.py @006e86931247).  Gemma2Attention:
    scaling query_pre_attn_scalar**-0.5, attn_logit_softcapping, sliding
    window on layers with layer_idx % 2 == 0 (newer configs: layer_types,
    by default sliding_attention for even i).  Gemma2DecoderLayer:
    h + post_attention_layernorm(attn(input_layernorm(h))), then
    h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))."""

    mlp_norm = "pre_feedforward_layernorm"

    def window(self, l):
        types = self.cfg.get("layer_types") or [
            "sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(self.L)]
        sw = self.cfg.get("sliding_window", 4096)
        return sw if sw and types[l] == "sliding_attention" else 0

    def scale(self):
        return float(self.cfg.get("query_pre_attn_scalar", 256)) ** -0.5

    def softcap(self):
        return float(self.cfg.get("attn_logit_softcapping", 50.0) or 0.0)

    def after_attn(self, a, p):
        return self.norm(a, p + "post_attention_layernorm")

    def after_mlp(self, m, p):
        return self.norm(m, p + "post_feedforward_layernorm")


class Phi3(Llama):
    """Phi3Model (modeling_phi3.py @00d4b3d2142c).  Phi3Attention: qkv_proj
    [(H + 2 H_kv) head_dim, d] split as q = first H·hd rows, k = next H_kv·hd,
    v = the rest; no biases; RoPE over int(head_dim * partial_rotary_factor)
    dims.  Phi3MLP: gate, up = gate_up_proj(x).chunk(2) (gate the first
    half), down(up * act(gate)).  The mask is create_sliding_window_causal_mask
    whenever config.sliding_window is set, on every layer."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.qkv_bias = self.o_bias = self.mlp_bias = False

    def window(self, l):
        return self.cfg.get("sliding_window") or 0

    def qkv(self, x, p):
        qkv = linear(x, self.W, p + "self_attn.qkv_proj", False)
        nq, nkv = self.H * self.dh, self.Hkv * self.dh
        return qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]

    def mlp(self, x, p):
        gu = linear(x, self.W, p + "mlp.gate_up_proj", False)
        half = gu.shape[1] // 2
        return linear(gu[:, half:] * self.act(gu[:, :half]), self.W, p + "mlp.down_proj", False)


# ------------------------------------------------------------------ ALiBi ---

def bloom_alibi_slopes(H):
    """build_alibi_tensor (modeling_bloom.py @9d97831a1cbb): base
    2^(-(2^-(log2(p) - 3))) of the closest power of two p <= H, slopes
    base^1..base^p, then extra_base (that of 2p) to the odd powers 1, 3, ...
    for the min(p, H - p) remaining heads.  The bases are float32 tensors
    and torch.pow keeps float32: each slope is the float32 value of the
    power."""
    p = 2 ** math.floor(math.log2(H))
    base = np.float32(2 ** (-(2 ** -(math.log2(p) - 3))))
    slopes = [np.float32(float(base) ** k) for k in range(1, 1 + p)]
    if p != H:
        extra = np.float32(2 ** (-(2 ** -(math.log2(2 * p) - 3))))
        rest = min(p, H - p)
        slopes += [np.float32(float(extra) ** k) for k in range(1, 1 + 2 * rest, 2)]
    return np.array(slopes, dtype=np.float64)


def mpt_alibi_slopes(H, alibi_bias_max=8):
    """gen_slopes (modeling_mpt.py @0206c7b0f3a5): _n = 2^ceil(log2 H),
    m = arange(1, _n + 1) * (alibi_bias_max / _n) in float32, slopes
    1 / 2^m; when _n != H, cat(slopes[1::2], slopes[::2])[:H]."""
    n = 2 ** math.ceil(math.log2(H))
    m = np.arange(1, n + 1, dtype=np.float32) * np.float32(alibi_bias_max / n)
    slopes = np.float32(1.0) / np.power(np.float32(2.0), m).astype(np.float32)
    if n != H:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:H]
    return slopes.astype(np.float64)


def falcon_alibi_slopes(H):
    """modeling_falcon.py build_alibi_tensor: BLOOM's slopes, then
    slopes.bfloat16() (round to nearest even)."""
    u = bloom_alibi_slopes(H).astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def alibi_attention(q, k, v, scale, bias, scale_bias=False):
    """Causal attention with an ALiBi bias [H, 1, n] added to every row:
    scale * q k^T + bias (BLOOM's baddbmm, MPT), or scale * (q k^T + bias)
    (Falcon's attention_logits *= inv_norm_factor)."""
    s = np.einsum("hid,hjd->hij", q, k)
    s = (s + bias) * scale if scale_bias else s * scale + bias
    vis = visible_keys(s.shape[-1], True)
    if SCORES is not None:
        SCORES.append(np.where(vis, s, -np.inf))
        QK.append((q, k))
    p = softmax_rows(s, vis)
    return p, np.einsum("hij,hjd->hid", p, v)


def bloom_gelu(x):
    """bloom_gelu_forward: its own constants 0.79788456 and 0.044715."""
    return x * 0.5 * (1.0 + np.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def bloom_forward(cfg, W, ids):
    """BloomModel (modeling_bloom.py @9d97831a1cbb): word_embeddings then
    word_embeddings_layernorm; BloomBlock pre-LN (input_layernorm,
    post_attention_layernorm; apply_residual_connection_post_layernorm
    refused); BloomAttention query_key_value viewed (n, H, 3, head_dim),
    scores alibi.baddbmm(q, k^T, beta=1, alpha=1/sqrt(head_dim)) with the
    alibi of an all-ones attention_mask (slope * j); bloom_gelu MLP;
    ln_f on the last hidden state."""
    if cfg.get("apply_residual_connection_post_layernorm", False):
        raise ValueError("apply_residual_connection_post_layernorm is not supported")
    L, H, d = cfg["n_layer"], cfg["n_head"], cfg["hidden_size"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    hd = d // H
    n = len(ids)
    bias = bloom_alibi_slopes(H)[:, None, None] * np.arange(n)[None, None, :]

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), W(name + ".bias"), eps)

    h = ln(W("word_embeddings.weight")[ids], "word_embeddings_layernorm")
    hidden, attns = [h], []
    for l in range(L):
        p = "h.%d." % l
        x = ln(h, p + "input_layernorm")
        qkv = linear(x, W, p + "self_attention.query_key_value").reshape(n, H, 3, hd)
        q, k, v = (qkv[:, :, i, :].transpose(1, 0, 2) for i in range(3))
        pr, o = alibi_attention(q, k, v, 1.0 / math.sqrt(hd), bias)
        attns.append(pr)
        _trace(x, pr, v, W(p + "self_attention.dense.weight").T)
        h = linear(merge_heads(o), W, p + "self_attention.dense") + h
        x = ln(h, p + "post_attention_layernorm")
        h = linear(bloom_gelu(linear(x, W, p + "mlp.dense_h_to_4h")), W, p + "mlp.dense_4h_to_h") + h
        hidden.append(h)
    hidden[-1] = ln(h, "ln_f")
    return np.stack(attns), np.stack(hidden)


def mpt_forward(cfg, W, ids):
    """MptModel (modeling_mpt.py @0206c7b0f3a5): wte; MptBlock norm_1 /
    norm_2 (LayerNorm, bias None); MptAttention Wqkv chunk(3) -> Q | K | V,
    scores q k^T * softmax_scale (None: 1/sqrt(head_dim)) + the bias of
    build_alibi_bias(n_heads, max_seq_len) = slope * arange(1 - max_seq_len,
    1) cut to its last n keys (slope * (j - (n - 1))); MptMLP up_proj,
    exact GELU, down_proj; no biases anywhere; norm_f."""
    L, H, d = cfg["n_layers"], cfg["n_heads"], cfg["d_model"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    ac = cfg.get("attn_config") or {}
    hd = d // H
    n = len(ids)
    scale = ac.get("softmax_scale") or 1.0 / math.sqrt(d / H)
    bias = mpt_alibi_slopes(H)[:, None, None] * (np.arange(n) - (n - 1))[None, None, :]

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), 0.0, eps)

    h = W("wte.weight")[ids]
    hidden, attns = [h], []
    for l in range(L):
        p = "blocks.%d." % l
        x = ln(h, p + "norm_1")
        qkv = linear(x, W, p + "attn.Wqkv", False)
        q, k, v = (split_heads(qkv[:, i * d:(i + 1) * d], H) for i in range(3))
        pr, o = alibi_attention(q, k, v, scale, bias)
        attns.append(pr)
        _trace(x, pr, v, W(p + "attn.out_proj.weight").T)
        h = linear(merge_heads(o), W, p + "attn.out_proj", False) + h
        x = ln(h, p + "norm_2")
        h = linear(gelu_erf(linear(x, W, p + "ffn.up_proj", False)), W, p + "ffn.down_proj", False) + h
        hidden.append(h)
    hidden[-1] = ln(h, "norm_f")
    return np.stack(attns), np.stack(hidden)


def falcon_heads(cfg, qkv, n, H, hd):
    """FalconAttention._split_heads (modeling_falcon.py @00dcc6dda6f6) of the
    fused projection (n, .) -> q, k, v [H, n, hd], keys and values repeated
    for the queries that share them: new_decoder_architecture views
    (n, num_kv_heads, H/num_kv_heads + 2, hd) (per group its queries, then
    k, then v, broadcast to the group); multi_query (n, H + 2, hd); else
    (n, H, 3, hd)."""
    if cfg.get("new_decoder_architecture", False):
        Hkv = cfg.get("num_kv_heads") or H
        g = qkv.reshape(n, Hkv, H // Hkv + 2, hd)
        q = g[:, :, :-2].reshape(n, H, hd)
        k = np.repeat(g[:, :, -2], H // Hkv, axis=1)
        v = np.repeat(g[:, :, -1], H // Hkv, axis=1)
    elif cfg.get("multi_query", True):
        g = qkv.reshape(n, H + 2, hd)
        q = g[:, :H]
        k = np.repeat(g[:, H:H + 1], H, axis=1)
        v = np.repeat(g[:, H + 1:], H, axis=1)
    else:
        g = qkv.reshape(n, H, 3, hd)
        q, k, v = g[:, :, 0], g[:, :, 1], g[:, :, 2]
    return (x.transpose(1, 0, 2) for x in (q, k, v))


def falcon_forward(cfg, W, ids):
    """FalconModel (modeling_falcon.py @00dcc6dda6f6): word_embeddings;
    FalconDecoderLayer with new_decoder_architecture (ln_attn, ln_mlp when
    num_ln_in_parallel_attn is 2, its default there; else input_layernorm for
    both) or the original layout (input_layernorm; parallel_attn: the MLP
    reads it too, else post_attention_layernorm after the attention's
    residual add); output = residual + (mlp + attention) when new or
    parallel; FalconLinear x W^T then + b with `bias`; rotary
    (attention_scores /= sqrt(head_dim)) or, with `alibi`,
    (q k^T + alibi) * inv_norm_factor, the slopes in bfloat16; ln_f."""
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    new, par = cfg.get("new_decoder_architecture", False), cfg.get("parallel_attn", True)
    nln = cfg.get("num_ln_in_parallel_attn") or (2 if new else 1)
    b = cfg.get("bias", False)
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = activation(cfg.get("activation", "gelu"))
    hd = d // H
    n = len(ids)
    if cfg.get("alibi", False):
        bias = falcon_alibi_slopes(H)[:, None, None] * np.arange(n)[None, None, :]
    else:
        cos, sin = rope_cos_sin(rope_inv_freq(cfg, hd, cfg.get("rope_theta", 10000.0), n,
                                              cfg["max_position_embeddings"]), n)

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), W(name + ".bias"), eps)

    h = W("word_embeddings.weight")[ids]
    hidden, attns = [h], []
    for l in range(L):
        p = "h.%d." % l
        two = new and nln == 2
        xa = ln(h, p + ("ln_attn" if two else "input_layernorm"))
        q, k, v = falcon_heads(cfg, linear(xa, W, p + "self_attention.query_key_value", b), n, H, hd)
        if cfg.get("alibi", False):
            pr, o = alibi_attention(q, k, v, 1.0 / math.sqrt(hd), bias, scale_bias=True)
        else:
            pr, o = attention(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v, 1.0 / math.sqrt(hd), True)
        attns.append(pr)
        _trace(xa, pr, v, W(p + "self_attention.dense.weight").T)
        a = linear(merge_heads(o), W, p + "self_attention.dense", b)
        if two:
            xm = ln(h, p + "ln_mlp")
        elif new or par:
            xm = xa
        else:
            h = h + a
            xm = ln(h, p + "post_attention_layernorm")
        m = linear(act(linear(xm, W, p + "mlp.dense_h_to_4h", b)), W, p + "mlp.dense_4h_to_h", b)
        h = h + (m + a) if (new or par) else h + m
        hidden.append(h)
    hidden[-1] = ln(h, "ln_f")
    return np.stack(attns), np.stack(hidden)


class Qwen3(Llama):
    """Qwen3Model (modeling_qwen3.py @000c33fdfde1, configuration_qwen3.py
    @008e57439125).  Qwen3Attention: q_norm = Qwen3RMSNorm(head_dim) of
    q_proj(x).view(n, -1, head_dim), k_norm likewise, both before
    apply_rotary_pos_emb; q/k/v/o biases with attention_bias (default
    False); head_dim from the config (default 128); sliding windows as
    Qwen2 (use_sliding_window, layer_types, max_window_layers)."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.dh = cfg.get("head_dim") or 128
        self.rotary_dim = self.dh
        self.qkv_bias = self.o_bias = bool(cfg.get("attention_bias", False))

    def qk_norm(self, q, k, p):
        n = q.shape[0]
        qn = rms_norm(q.reshape(n, -1, self.dh), self.W(p + "self_attn.q_norm.weight"), self.eps)
        kn = rms_norm(k.reshape(n, -1, self.dh), self.W(p + "self_attn.k_norm.weight"), self.eps)
        return qn.reshape(n, -1), kn.reshape(n, -1)


class Olmo2(Llama):
    """Olmo2Model (modeling_olmo2.py @000c33fdfde1, configuration_olmo2.py
    @008e57439125).  Olmo2Attention: q_norm = Olmo2RMSNorm(H·head_dim) of
    the whole q_proj(x), k_norm = Olmo2RMSNorm(H_kv·head_dim) of k_proj(x),
    then the view into heads and RoPE; q/k/v/o biases with attention_bias.
    Olmo2DecoderLayer: no input norm, h + post_attention_layernorm(attn(h)),
    then h + post_feedforward_layernorm(mlp(h)); rms_norm_eps 1e-5."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.eps = cfg.get("rms_norm_eps", 1e-5)

    def window(self, l):
        return 0

    def pre_norm(self, h, name):
        return h

    def qk_norm(self, q, k, p):
        return (rms_norm(q, self.W(p + "self_attn.q_norm.weight"), self.eps),
                rms_norm(k, self.W(p + "self_attn.k_norm.weight"), self.eps))

    def after_attn(self, a, p):
        return self.norm(a, p + "post_attention_layernorm")

    def after_mlp(self, m, p):
        return self.norm(m, p + "post_feedforward_layernorm")


class Gemma3(Gemma2):
    """Gemma3TextModel (modeling_gemma3.py @0018aa647bb1,
    configuration_gemma3.py @008f5c8c29be).  Gemma-2's layer and scaling
    (query_pre_attn_scalar**-0.5) with Gemma3Attention's q_norm, k_norm =
    Gemma3RMSNorm(head_dim) (x * rsqrt(mean x^2 + eps) * (1 + w)) on each
    head of q_proj(x), k_proj(x) before RoPE; attn_logit_softcapping
    default None; sliding layers from layer_types, else layer i when
    (i + 1) % sliding_window_pattern (6); Gemma3RotaryEmbedding per layer
    type: "sliding_attention" rope_local_base_freq (10000) without scaling,
    "full_attention" rope_theta (1e6) with rope_scaling."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.theta = float(cfg.get("rope_theta", 1e6))

    def layer_types(self):
        p = self.cfg.get("sliding_window_pattern", 6)
        return self.cfg.get("layer_types") or [
            "sliding_attention" if (i + 1) % p else "full_attention" for i in range(self.L)]

    def window(self, l):
        sw = self.cfg.get("sliding_window", 4096)
        return sw if self.layer_types()[l] == "sliding_attention" else 0

    def softcap(self):
        return float(self.cfg.get("attn_logit_softcapping") or 0.0)

    def qk_norm(self, q, k, p):
        n = q.shape[0]
        qn = gemma_rms_norm(q.reshape(n, -1, self.dh), self.W(p + "self_attn.q_norm.weight"), self.eps)
        kn = gemma_rms_norm(k.reshape(n, -1, self.dh), self.W(p + "self_attn.k_norm.weight"), self.eps)
        return qn.reshape(n, -1), kn.reshape(n, -1)

    def rope_of_layer(self, n):
        glob = super().rope_of_layer(n)(0)
        local_cfg = dict(self.cfg, rope_scaling=None)
        local = rope_cos_sin(rope_inv_freq(local_cfg, self.rotary_dim,
                                           float(self.cfg.get("rope_local_base_freq", 10000.0)), n,
                                           self.cfg["max_position_embeddings"]), n)
        types = self.layer_types()
        return lambda l: local if types[l] == "sliding_attention" else glob


class ModernBert:
    """ModernBertModel (modeling_modernbert.py @000c33fdfde1), the eager path
    without padding.  ModernBertEmbeddings: norm(tok_embeddings(ids));
    ModernBertEncoderLayer: h + attn(attn_norm(h)) (attn_norm Identity in
    layer 0), then h + mlp(mlp_norm(h)); nn.LayerNorm(bias=norm_bias);
    ModernBertAttention: Wqkv viewed (n, 3, H, hd), RoPE (rotate_half,
    head_dim), head_dim^-0.5, layer i local when i % global_attn_every_n_layers
    (the symmetric band of _update_attention_mask, RoPE base
    local_rope_theta), else global_rope_theta; ModernBertMLP: input, gate =
    Wi(x).chunk(2), Wo(act(input) * gate).  ModernBertModel appends the last
    layer's output to hidden_states before final_norm, so final_norm is not
    read.  Transformers v5's rope_parameters per layer type are read too."""

    def __init__(self, cfg, W):
        self.cfg, self.W = cfg, W
        self.L, self.H, self.d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        self.dh = self.d // self.H
        self.eps = cfg.get("norm_eps", 1e-5)
        self.act = activation(cfg.get("hidden_activation", "gelu"))
        self.norm_bias = bool(cfg.get("norm_bias", False))
        self.attn_bias = bool(cfg.get("attention_bias", False))
        self.mlp_bias = bool(cfg.get("mlp_bias", False))
        self.every = cfg.get("global_attn_every_n_layers", 3)
        rp = cfg.get("rope_parameters") or {}
        glob = float(cfg.get("global_rope_theta", 160000.0))
        loc = cfg.get("local_rope_theta", 10000.0)
        self.thetas = (float(rp["full_attention"]["rope_theta"]) if "full_attention" in rp else glob,
                       float(rp["sliding_attention"]["rope_theta"]) if "sliding_attention" in rp
                       else float(loc if loc is not None else glob))

    def window(self, l):
        """The half-width of layer l's band (0: global)."""
        return self.cfg.get("local_attention", 128) // 2 if l % self.every else 0

    def ln(self, x, name):
        b = self.W(name + ".bias") if self.norm_bias else 0.0
        return layer_norm(x, self.W(name + ".weight"), b, self.eps)

    def forward(self, ids):
        n, W = len(ids), self.W
        cs = [rope_cos_sin(1.0 / t ** (np.arange(0, self.dh, 2, dtype=np.float64) / self.dh), n)
              for t in self.thetas]
        h = self.ln(W("embeddings.tok_embeddings.weight")[ids], "embeddings.norm")
        hidden, attns = [h], []
        for l in range(self.L):
            p = "layers.%d." % l
            x = h if l == 0 else self.ln(h, p + "attn_norm")
            qkv = linear(x, W, p + "attn.Wqkv", self.attn_bias).reshape(n, 3, self.H, self.dh)
            q, k, v = (qkv[:, t].transpose(1, 0, 2) for t in range(3))
            cos, sin = cs[1 if self.window(l) else 0]
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            pr, o = attention(q, k, v, self.dh ** -0.5, False, self.window(l))
            _trace(x, pr, v, W(p + "attn.Wo.weight").T)
            h = h + linear(merge_heads(o), W, p + "attn.Wo", self.attn_bias)
            a, g = np.split(linear(self.ln(h, p + "mlp_norm"), W, p + "mlp.Wi", self.mlp_bias), 2, axis=-1)
            h = h + linear(self.act(a) * g, W, p + "mlp.Wo", self.mlp_bias)
            attns.append(pr)
            hidden.append(h)
        return np.stack(attns), np.stack(hidden)


def _route(logits, k, norm):
    """Router probabilities and the top-k of each token (n, E) -> (n, k)
    experts and weights: softmax, torch.topk order (larger first; on equal
    values the lower index first: a stable sort of -p), renormalised when
    norm (MixtralSparseMoeBlock: routing_weights /= sum)."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    sel = np.argsort(-p, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, sel, axis=1)
    if norm:
        w = w / w.sum(axis=1, keepdims=True)
    return sel, w


class _Moe:
    """The sparse MLP shared by Mixtral, Qwen2-MoE and OLMoE: for each
    expert e in order, final[rows routed to e] += expert_e(x) · w (HF's
    index_add_ loop), experts gated MLPs down(act(gate x) · up x)."""

    def moe(self, x, p, router, expert, stems, k, norm):
        W = self.W
        # Transformers v5 (conversion_mapping.py @44bcb9df5e93): experts
        # fused as mlp.experts.gate_up_proj [E, 2ff, d] (gate rows, then up
        # rows: Concatenate(dim=1) of the stacked w1 / gate_proj and w3 /
        # up_proj) and mlp.experts.down_proj [E, d, ff]; Mixtral's
        # block_sparse_moe. renamed mlp.
        gu = W(p + "mlp.experts.gate_up_proj", False)
        if gu is not None and W(p + router + ".weight", False) is None:
            router = router.replace("block_sparse_moe.", "mlp.")
        sel, w = _route(linear(x, W, p + router, False), k, norm)
        out = np.zeros_like(x)
        for e in range(W(p + router + ".weight").shape[0]):
            rows, slot = np.nonzero(sel == e)
            if not len(rows):
                continue
            xe = x[rows]
            if gu is not None:
                ff = gu.shape[1] // 2
                y = (self.act(xe @ gu[e, :ff].T) * (xe @ gu[e, ff:].T)) @ W(p + "mlp.experts.down_proj")[e].T
            else:
                g, u, dn = (p + expert % e + s for s in stems)
                y = linear(self.act(linear(xe, W, g, False)) * linear(xe, W, u, False), W, dn, False)
            out[rows] += y * w[rows, slot][:, None]
        return out


class Mixtral(Llama, _Moe):
    """MixtralModel (modeling_mixtral.py @af3efdd71ee5): Mistral's layer
    (no biases, sliding_window on every layer when set, default null) with
    MixtralSparseMoeBlock: softmax(block_sparse_moe.gate(x)), top
    num_experts_per_tok of num_local_experts, renormalised, Σ w_e ·
    w2(silu(w1 x) · w3 x); rms_norm_eps 1e-5, rope_theta 1e6."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.theta = float(cfg.get("rope_theta", 1e6))
        self.qkv_bias = self.o_bias = False

    def window(self, l):
        return self.cfg.get("sliding_window") or 0

    def mlp(self, x, p):
        return self.moe(x, p, "block_sparse_moe.gate", "block_sparse_moe.experts.%d.",
                        ("w1", "w3", "w2"), self.cfg.get("num_experts_per_tok", 2), True)


class Qwen2Moe(Llama, _Moe):
    """Qwen2MoeModel (modeling_qwen2_moe.py @1c351314a42a): Qwen2's
    attention (q/k/v biased: qkv_bias, default true);
    layer l sparse iff l not in mlp_only_layers and num_experts > 0 and
    (l + 1) % decoder_sparse_step == 0 (else Qwen2MoeMLP, intermediate_size);
    Qwen2MoeSparseMoeBlock: top-k weights renormalised only with
    norm_topk_prob, plus sigmoid(shared_expert_gate(x)) · shared_expert(x).
    Windows: the eager mask (Qwen2MoeModel.
    _prepare_4d_causal_attention_mask_with_cache_position) bands every layer
    when use_sliding_window and sliding_window are set; max_window_layers is
    read only by Qwen2MoeFlashAttention2, whose weights are never returned."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.qkv_bias = bool(cfg.get("qkv_bias", True))
        self.o_bias = False

    def window(self, l):
        sw = self.cfg.get("sliding_window", 4096)
        return sw if sw and self.cfg.get("use_sliding_window", False) else 0

    def mlp(self, x, p):
        cfg, l = self.cfg, int(p.split(".")[1])
        E = cfg.get("num_experts", 60)
        if l in (cfg.get("mlp_only_layers") or []) or not E or (l + 1) % cfg.get("decoder_sparse_step", 1):
            return Llama.mlp(self, x, p)
        stems = ("gate_proj", "up_proj", "down_proj")
        out = self.moe(x, p, "mlp.gate", "mlp.experts.%d.", stems, cfg.get("num_experts_per_tok", 4),
                       bool(cfg.get("norm_topk_prob", False)))
        W, q = self.W, p + "mlp.shared_expert."
        sh = linear(self.act(linear(x, W, q + "gate_proj", False)) * linear(x, W, q + "up_proj", False),
                    W, q + "down_proj", False)
        gate = 1.0 / (1.0 + np.exp(-linear(x, W, p + "mlp.shared_expert_gate", False)))
        return out + gate * sh


class Olmoe(Llama, _Moe):
    """OlmoeModel (modeling_olmoe.py @00dcc6dda6f6): Llama's pre-norm layer;
    OlmoeAttention q_norm = OlmoeRMSNorm(hidden_size) over the whole
    q_proj(x), k_norm over H_kv·head_dim, before the view into heads and
    RoPE; biases with attention_bias; rms_norm_eps 1e-5; no sliding window;
    OlmoeSparseMoeBlock: top-k renormalised only with norm_topk_prob."""

    def __init__(self, cfg, W):
        super().__init__(cfg, W)
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        assert cfg.get("clip_qkv") is None, "clip_qkv is not ported"

    def window(self, l):
        return 0

    qk_norm = Olmo2.qk_norm

    def mlp(self, x, p):
        return self.moe(x, p, "mlp.gate", "mlp.experts.%d.", ("gate_proj", "up_proj", "down_proj"),
                        self.cfg.get("num_experts_per_tok", 8), bool(self.cfg.get("norm_topk_prob", False)))


def rotate_every_two(x):
    """modeling_gptj.py @00b676f8f048: stack((-x[..., 1::2], x[..., ::2]), -1)
    flattened: pair (2j, 2j + 1) -> (-x[2j + 1], x[2j])."""
    out = np.empty_like(x)
    out[..., ::2] = -x[..., 1::2]
    out[..., 1::2] = x[..., ::2]
    return out


def gptj_forward(cfg, W, ids):
    """GPTJModel (modeling_gptj.py @00b676f8f048): wte; per block
    h + attn(ln_1(h)) + mlp(ln_1(h)) (one norm, parallel); GPTJAttention
    q/k/v_proj without bias, RoPE on the first rotary_dim dims of each head
    with create_sinusoidal_positions (theta 10000) repeat_interleave'd and
    rotate_every_two, scores / sqrt(head_dim), out_proj without bias;
    GPTJMLP fc_out(act(fc_in(x))); ln_f."""
    d, H, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    hd = d // H
    rot = cfg.get("rotary_dim", 64)
    rot = d if rot is None else rot  # pos_embd_dim = rotary_dim or embed_dim
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = activation(cfg.get("activation_function", "gelu_new"))
    n = len(ids)
    inv = 1.0 / 10000.0 ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    sin, cos = np.repeat(np.sin(ang), 2, axis=-1), np.repeat(np.cos(ang), 2, axis=-1)

    def rope(x):
        xr, xp = x[..., :rot], x[..., rot:]
        return np.concatenate([xr * cos + rotate_every_two(xr) * sin, xp], axis=-1)

    h = W("wte.weight")[ids]
    hidden, attns = [h], []
    for l in range(L):
        p = "h.%d." % l
        x = layer_norm(h, W(p + "ln_1.weight"), W(p + "ln_1.bias"), eps)
        q = rope(split_heads(linear(x, W, p + "attn.q_proj", False), H, hd))
        k = rope(split_heads(linear(x, W, p + "attn.k_proj", False), H, hd))
        v = split_heads(linear(x, W, p + "attn.v_proj", False), H, hd)
        pr, o = attention(q, k, v, 1.0 / math.sqrt(hd), True)
        _trace(x, pr, v, W(p + "attn.out_proj.weight").T)
        a = linear(merge_heads(o), W, p + "attn.out_proj", False)
        m = linear(act(linear(x, W, p + "mlp.fc_in")), W, p + "mlp.fc_out")
        h = a + m + h
        attns.append(pr)
        hidden.append(h)
    hidden[-1] = layer_norm(h, W("ln_f.weight"), W("ln_f.bias"), eps)
    return np.stack(attns), np.stack(hidden)


# ------------------------------------------------ encoder-decoder models ---

# A list while seq2seq_heads() runs: every attention of an encoder-decoder
# pass in order (encoder self-attention, then per decoder layer its self-
# and cross-attention) as a dict of p [H, m, n], q [H, m, dh] and k, v
# [H, n, dh] as the scores s [H, m, n] use them (-inf where masked;
# BART/Whisper: q already scaled; T5: s = q k^T + bias) and wo [H*dh, d]
# (the output projection, [in, out]); and for family E x [m, d] (the
# query side's input) with wq, bq, wk, bk ([d, H*dh], [H*dh] or None: q =
# x wq + bq, the scale folded in; k = kv wk + bk) and bias (T5's [H, m, n]
# position bias, or 0).
S2S_HEADS = None


def _s2s_head(q, k, v, sc, pr, wo, x, qk, bias=0.0):
    if S2S_HEADS is not None:
        wq, bq, wk, bk = qk
        S2S_HEADS.append({"p": pr, "s": sc, "q": q, "k": k, "v": v, "wo": wo, "x": x,
                          "wq": wq, "bq": bq, "wk": wk, "bk": bk, "bias": bias})


def _s2s_qk(W, name, scale, k_bias):
    """The [in, out] W_Q (times scale) and b_Q, W_K and b_K of nn.Linear
    modules name.q_proj, name.k_proj (biases: BART; Whisper's k_proj has
    none)."""
    return (W(name + ".q_proj.weight").T * scale, W(name + ".q_proj.bias") * scale,
            W(name + ".k_proj.weight").T, W(name + ".k_proj.bias") if k_bias else None)


def seq2seq_heads(folder, src, tgt):
    """seq2seq_forward with S2S_HEADS on: (its dict, the list of heads;
    whisper: its decoder's only, the encoder being encoders_ref's)."""
    global S2S_HEADS
    S2S_HEADS = []
    try:
        return seq2seq_forward(folder, src, tgt), S2S_HEADS
    finally:
        S2S_HEADS = None


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """T5Attention._relative_position_bucket (modeling_t5.py @6b8b757dfcb5)
    of the int array rel = key - query.  HF's logarithm is float32: the
    float32 quotient rel / max_exact, torch.log, divided by
    math.log(max_distance / max_exact) taken to float32, times the log
    buckets, truncated (.to(torch.long))."""
    rel = np.asarray(rel, dtype=np.int64)
    ret = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        ret += (rel > 0).astype(np.int64) * num_buckets
        r = np.abs(rel)
    else:
        r = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    small = r < max_exact
    with np.errstate(divide="ignore"):
        v = np.log(r.astype(np.float32) / np.float32(max_exact)) \
            / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    large = max_exact + np.where(small, 0, v).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return ret + np.where(small, r, large)


def t5_stack(cfg, W, ids, decoder, enc_out=None):
    """T5Stack.forward (modeling_t5.py @6b8b757dfcb5) of one stack: shared
    embedding; block 0's relative_attention_bias gives position_bias
    (compute_bias: bidirectional buckets unless is_decoder), shared by all
    blocks; per block T5LayerSelfAttention h + o(attn(T5LayerNorm(h))) with
    scores q k^T + position_bias (no scaling; causal mask in the decoder),
    then (decoder) T5LayerCrossAttention over enc_out with a zero bias, then
    T5LayerFF h + wo(act(wi(n(h)))) or gated wo(act(wi_0 x) * wi_1 x);
    final_layer_norm before the last hidden state.  T5LayerNorm is the RMS
    form w * x / sqrt(mean(x^2) + eps).  Returns (self attn, cross attn,
    hidden, self scores, cross scores)."""
    H, hd, d = cfg["num_heads"], cfg.get("d_kv", 64), cfg["d_model"]
    eps = cfg.get("layer_norm_epsilon", 1e-6)
    proj = cfg.get("feed_forward_proj", "relu")
    gated = proj.startswith("gated-")
    act = activation("gelu_new" if proj == "gated-gelu" else proj.split("-")[-1])
    nb = cfg.get("relative_attention_num_buckets", 32)
    md = cfg.get("relative_attention_max_distance", 128)
    L = cfg.get("num_decoder_layers") or cfg["num_layers"] if decoder else cfg["num_layers"]
    st = "decoder." if decoder else "encoder."
    n = len(ids)
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]
    table = W(st + "block.0.layer.0.SelfAttention.relative_attention_bias.weight")
    bias = table[t5_bucket(rel, not decoder, nb, md)].transpose(2, 0, 1)  # [H, n, n]
    vis = visible_keys(n, decoder)
    h = W("shared.weight")[ids]
    hidden, attns, cross, ss, cs = [h], [], [], [], []

    def attend(x, kv, name, b, mask):
        q = split_heads(linear(x, W, name + ".q", False), H, hd)
        k = split_heads(linear(kv, W, name + ".k", False), H, hd)
        v = split_heads(linear(kv, W, name + ".v", False), H, hd)
        sc = np.einsum("hid,hjd->hij", q, k) + b
        sc = np.where(mask, sc, -np.inf)
        m = sc.max(axis=-1, keepdims=True)
        e = np.exp(sc - m)
        pr = e / e.sum(axis=-1, keepdims=True)
        _s2s_head(q, k, v, sc, pr, W(name + ".o.weight").T, x,
                  (W(name + ".q.weight").T, None, W(name + ".k.weight").T, None), b)
        return pr, sc, linear(merge_heads(np.einsum("hij,hjd->hid", pr, v)), W, name + ".o", False)

    for l in range(L):
        p = st + "block.%d.layer." % l
        x = rms_norm(h, W(p + "0.layer_norm.weight"), eps)
        pr, sc, o = attend(x, x, p + "0.SelfAttention", bias, vis)
        h = h + o
        attns.append(pr)
        ss.append(sc)
        f = 1
        if decoder:
            x = rms_norm(h, W(p + "1.layer_norm.weight"), eps)
            pr, sc, o = attend(x, enc_out, p + "1.EncDecAttention", 0.0, True)
            h = h + o
            cross.append(pr)
            cs.append(sc)
            f = 2
        x = rms_norm(h, W(p + "%d.layer_norm.weight" % f), eps)
        ff = p + "%d.DenseReluDense." % f
        if gated:
            y = act(linear(x, W, ff + "wi_0", False)) * linear(x, W, ff + "wi_1", False)
        else:
            y = act(linear(x, W, ff + "wi", False))
        h = h + linear(y, W, ff + "wo", False)
        hidden.append(h)
    hidden[-1] = rms_norm(h, W(st + "final_layer_norm.weight"), eps)
    return attns, cross, np.stack(hidden), ss, cs


def bart_stack(cfg, W, ids, decoder, enc_out=None):
    """BartEncoder / BartDecoder (modeling_bart.py @57228229d2ee) of one
    stack: shared(ids) * embed_scale (sqrt(d_model) with scale_embedding)
    + embed_positions rows i + 2 (BartLearnedPositionalEmbedding's offset),
    layernorm_embedding; per layer (post-LN) h = self_attn_layer_norm(h +
    out_proj(attn)) with q = q_proj(h) * head_dim^-0.5 (causal in the
    decoder), then (decoder) h = encoder_attn_layer_norm(h + encoder_attn
    over enc_out, no mask), then h = final_layer_norm(h + fc2(act(fc1 h)));
    no final norm (the last hidden state is the last layer's output); nn
    LayerNorm's eps 1e-5.  Returns (self attn, cross attn, hidden, self
    scores, cross scores)."""
    st = "decoder." if decoder else "encoder."
    L = cfg["decoder_layers" if decoder else "encoder_layers"]
    H = cfg["decoder_attention_heads" if decoder else "encoder_attention_heads"]
    d = cfg["d_model"]
    hd = d // H
    act = activation(cfg.get("activation_function", "gelu"))
    scale = math.sqrt(d) if cfg.get("scale_embedding", False) else 1.0
    n = len(ids)

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), W(name + ".bias"), 1e-5)

    def attend(x, kv, name, mask):
        q = split_heads(linear(x, W, name + ".q_proj") * hd ** -0.5, H)
        k = split_heads(linear(kv, W, name + ".k_proj"), H)
        qk = _s2s_qk(W, name, hd ** -0.5, True)
        v = split_heads(linear(kv, W, name + ".v_proj"), H)
        sc = np.where(mask, np.einsum("hid,hjd->hij", q, k), -np.inf)
        e = np.exp(sc - sc.max(axis=-1, keepdims=True))
        pr = e / e.sum(axis=-1, keepdims=True)
        _s2s_head(q, k, v, sc, pr, W(name + ".out_proj.weight").T, x, qk)
        return pr, sc, linear(merge_heads(np.einsum("hij,hjd->hid", pr, v)), W, name + ".out_proj")

    h = W("shared.weight")[ids] * scale + W(st + "embed_positions.weight")[np.arange(n) + 2]
    h = ln(h, st + "layernorm_embedding")
    vis = visible_keys(n, decoder)
    hidden, attns, cross, ss, cs = [h], [], [], [], []
    for l in range(L):
        p = st + "layers.%d." % l
        pr, sc, o = attend(h, h, p + "self_attn", vis)
        h = ln(h + o, p + "self_attn_layer_norm")
        attns.append(pr)
        ss.append(sc)
        if decoder:
            pr, sc, o = attend(h, enc_out, p + "encoder_attn", True)
            h = ln(h + o, p + "encoder_attn_layer_norm")
            cross.append(pr)
            cs.append(sc)
        h = ln(h + linear(act(linear(h, W, p + "fc1")), W, p + "fc2"), p + "final_layer_norm")
        hidden.append(h)
    return attns, cross, np.stack(hidden), ss, cs


def whisper_decoder(cfg, W, ids, enc_out):
    """WhisperDecoder (modeling_whisper.py @5c48f71a682f): embed_tokens(ids)
    + embed_positions rows 0..n-1 (no scaling); WhisperDecoderLayer pre-LN:
    h + out_proj(self_attn(self_attn_layer_norm(h))) (causal), h +
    encoder_attn(encoder_attn_layer_norm(h), enc_out) (no mask), h +
    fc2(act(fc1(final_layer_norm(h)))); WhisperAttention q_proj(x) *
    head_dim^-0.5, k_proj without bias; layer_norm before the last hidden
    state; nn.LayerNorm's eps 1e-5.  Returns as t5_stack (decoder)."""
    L, H, d = cfg["decoder_layers"], cfg["decoder_attention_heads"], cfg["d_model"]
    hd = d // H
    act = activation(cfg.get("activation_function", "gelu"))
    n = len(ids)

    def ln(x, name):
        return layer_norm(x, W(name + ".weight"), W(name + ".bias"), 1e-5)

    def attend(x, kv, name, mask):
        q = split_heads(linear(x, W, name + ".q_proj") * hd ** -0.5, H)
        k = split_heads(linear(kv, W, name + ".k_proj", False), H)
        qk = _s2s_qk(W, name, hd ** -0.5, False)
        v = split_heads(linear(kv, W, name + ".v_proj"), H)
        sc = np.where(mask, np.einsum("hid,hjd->hij", q, k), -np.inf)
        e = np.exp(sc - sc.max(axis=-1, keepdims=True))
        pr = e / e.sum(axis=-1, keepdims=True)
        _s2s_head(q, k, v, sc, pr, W(name + ".out_proj.weight").T, x, qk)
        return pr, sc, linear(merge_heads(np.einsum("hij,hjd->hid", pr, v)), W, name + ".out_proj")

    h = W("decoder.embed_tokens.weight")[ids] + W("decoder.embed_positions.weight")[:n]
    vis = visible_keys(n, True)
    hidden, attns, cross, ss, cs = [h], [], [], [], []
    for l in range(L):
        p = "decoder.layers.%d." % l
        x = ln(h, p + "self_attn_layer_norm")
        pr, sc, o = attend(x, x, p + "self_attn", vis)
        h = h + o
        attns.append(pr)
        ss.append(sc)
        pr, sc, o = attend(ln(h, p + "encoder_attn_layer_norm"), enc_out, p + "encoder_attn", True)
        h = h + o
        cross.append(pr)
        cs.append(sc)
        h = h + linear(act(linear(ln(h, p + "final_layer_norm"), W, p + "fc1")), W, p + "fc2")
        hidden.append(h)
    hidden[-1] = ln(h, "decoder.layer_norm")
    return attns, cross, np.stack(hidden), ss, cs


def _s2s_dict(ea, eh, es, dec):
    """The dict of _seq2seq from the encoder's attentions, hidden states and
    scores (es None: not computed) and the decoder's stack output."""
    da, ca, dh, ds, cs = dec
    out = {"encoder_attentions": np.stack(ea), "decoder_attentions": np.stack(da),
           "cross_attentions": np.stack(ca), "encoder_hidden_states": eh,
           "decoder_hidden_states": dh, "decoder_scores": np.stack(ds), "cross_scores": np.stack(cs)}
    if es is not None:
        out["encoder_scores"] = np.stack(es)
    return out


def _seq2seq(stack):
    """model(input_ids=src, decoder_input_ids=tgt) of an encoder-decoder
    model whose stacks `stack` computes (t5_stack, bart_stack): a dict of
    encoder_attentions [L_enc, H, n_src, n_src], decoder_attentions [L_dec,
    H, n_tgt, n_tgt], cross_attentions [L_dec, H, n_tgt, n_src],
    encoder_hidden_states [L_enc+1, n_src, d], decoder_hidden_states
    [L_dec+1, n_tgt, d] and each attention's pre-softmax scores (*_scores,
    -inf where masked); the decoder reads the encoder's last hidden state."""
    def fn(cfg, W, src, tgt):
        ea, _, eh, es, _ = stack(cfg, W, np.asarray(src), False)
        return _s2s_dict(ea, eh, es, stack(cfg, W, np.asarray(tgt), True, eh[-1]))
    return fn


SEQ2SEQ = {"t5": (_seq2seq(t5_stack), []), "bart": (_seq2seq(bart_stack), ["model."])}


def seq2seq_forward(folder, src, tgt):
    """An encoder-decoder folder's pass (SEQ2SEQ) on source ids and target
    ids; whisper: src are the input_features (n_mels, T), the encoder
    encoders_ref.whisper_forward's (no encoder scores)."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    if cfg["model_type"] == "whisper":
        import encoders_ref
        ea, eh = encoders_ref.whisper_forward(folder, src)
        W = Weights(load_weights(folder), ["model."])
        return _s2s_dict(list(ea), eh, None, whisper_decoder(cfg, W, np.asarray(tgt), eh[-1]))
    fn, prefixes = SEQ2SEQ[cfg["model_type"]]
    return fn(cfg, Weights(load_weights(folder), prefixes), src, tgt)


def _class_forward(cls):
    return lambda cfg, W, ids: cls(cfg, W).forward(ids)


_DECODER_CLASSES = {"llama": Llama, "mistral": Llama, "qwen2": Llama, "gemma": Gemma, "gemma2": Gemma2,
                    "phi3": Phi3, "qwen3": Qwen3, "olmo2": Olmo2, "gemma3_text": Gemma3,
                    "modernbert": ModernBert,
                    "mixtral": Mixtral, "qwen2_moe": Qwen2Moe, "olmoe": Olmoe}  # (windows: Model.layer_windows)


# model_type -> (forward, tensor-name prefixes, config key of the nominal
# maximum positions).  The prefixes are those of the ForCausalLM /
# ForMaskedLM classes' checkpoints; names without them (base-model saves)
# are found too.
_MODELS = {
    "gpt2": (gpt2_forward, ["transformer."], "n_positions"),
    "bert": (bert_forward, ["bert."], "max_position_embeddings"),
    "roberta": (roberta_forward, ["roberta."], "max_position_embeddings"),
    "xlm-roberta": (roberta_forward, ["roberta."], "max_position_embeddings"),
    "distilbert": (distilbert_forward, ["distilbert."], "max_position_embeddings"),
    "gpt_neox": (gpt_neox_forward, ["gpt_neox."], "max_position_embeddings"),
    "opt": (opt_forward, ["model.decoder.", "decoder."], "max_position_embeddings"),
    "llama": (_class_forward(Llama), ["model."], "max_position_embeddings"),
    "mistral": (_class_forward(Llama), ["model."], "max_position_embeddings"),
    "qwen2": (_class_forward(Llama), ["model."], "max_position_embeddings"),
    "gemma": (_class_forward(Gemma), ["model."], "max_position_embeddings"),
    "gemma2": (_class_forward(Gemma2), ["model."], "max_position_embeddings"),
    "phi3": (_class_forward(Phi3), ["model."], "max_position_embeddings"),
    "gptj": (gptj_forward, ["transformer."], "n_positions"),
    "qwen3": (_class_forward(Qwen3), ["model."], "max_position_embeddings"),
    "olmo2": (_class_forward(Olmo2), ["model."], "max_position_embeddings"),
    "gemma3_text": (_class_forward(Gemma3), ["model."], "max_position_embeddings"),
    "bloom": (bloom_forward, ["transformer."], None),
    "mpt": (mpt_forward, ["transformer."], "max_seq_len"),
    "falcon": (falcon_forward, ["transformer."], "max_position_embeddings"),
    "modernbert": (_class_forward(ModernBert), ["model."], "max_position_embeddings"),
    "mixtral": (_class_forward(Mixtral), ["model."], "max_position_embeddings"),
    "qwen2_moe": (_class_forward(Qwen2Moe), ["model."], "max_position_embeddings"),
    "olmoe": (_class_forward(Olmoe), ["model."], "max_position_embeddings"),
    "clip_text_model": (clip_text_forward, ["text_model."], "max_position_embeddings"),
}
ENCODERS = {"bert", "roberta", "xlm-roberta", "distilbert", "modernbert"}
ROTARY = {"gpt_neox", "llama", "mistral", "qwen2", "gemma", "gemma2", "phi3", "qwen3", "olmo2",
          "gemma3_text", "falcon", "modernbert", "mixtral", "qwen2_moe", "olmoe", "gptj"}


def position_limit(cfg):
    """Most tokens the model's position table admits; None for RoPE models,
    which HF runs at any length.  RoBERTa's table starts at padding_idx + 1."""
    mt = cfg["model_type"]
    if mt in ROTARY or _MODELS[mt][2] is None:  # BLOOM: ALiBi at any length
        return None
    limit = cfg[_MODELS[mt][2]]
    if mt in ("roberta", "xlm-roberta"):
        limit -= cfg.get("pad_token_id", 1) + 1
    return limit


def one_stack(folder):
    """Whether Model reads the folder: a one-stack model_type (not an
    encoder-decoder pair of SEQ2SEQ, not Whisper: encoders_ref)."""
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)["model_type"] in _MODELS


class Model:
    """A model folder loaded once: .forward(ids) -> (attn, hidden)."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        mt = self.cfg["model_type"]
        if mt not in _MODELS:
            raise ValueError("unsupported model_type %r" % mt)
        self.fn, prefixes, self.pos_key = _MODELS[mt]
        self.W = Weights(load_weights(folder), prefixes)
        self.max_positions = self.cfg[self.pos_key] if self.pos_key else None
        self.limit = position_limit(self.cfg)
        self.vocab_size = self.cfg["vocab_size"]
        self.causal = mt not in ENCODERS

    def layer_windows(self):
        """Sliding window of every layer, 0 where there is none."""
        cls = _DECODER_CLASSES.get(self.cfg["model_type"])
        L = next(self.cfg[k] for k in ("n_layer", "num_hidden_layers", "n_layers") if k in self.cfg)
        if cls is None:
            return [0] * L
        dec = cls(self.cfg, self.W)
        return [dec.window(l) for l in range(L)]

    def masked_keys(self, n):
        """Bool (L, 1, n, n): the keys HF's mask hides, whose probability is
        exactly 0."""
        return np.stack([~visible_keys(n, self.causal, w)[None] for w in self.layer_windows()])

    def forward(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) < 1 or (self.limit is not None and len(ids) > self.limit):
            raise ValueError("need 1..%s ids" % self.limit)
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError("id outside the vocabulary")
        return self.fn(self.cfg, self.W, ids)


def forward(folder, ids):
    return Model(folder).forward(ids)


# ------------------------------------------------ check against PyTorch ---

def hidden_err(got, ref):
    """max |got - ref| / max(1, |ref|) (hidden states can be O(10))."""
    return float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))


def check_fixtures(model, folder, fixdir, tol=1e-12):
    """Compare with every tokens_k / attn_k / hidden_k of fixdir.
    Returns (n_texts, max attn err, max hidden err, list of problems)."""
    problems = []
    ea = eh = 0.0
    k = 0
    while os.path.exists(os.path.join(fixdir, "tokens_%d.json" % k)):
        with open(os.path.join(fixdir, "tokens_%d.json" % k)) as f:
            ids = json.load(f)["ids"]
        ra = np.load(os.path.join(fixdir, "attn_%d.npy" % k))
        rh = np.load(os.path.join(fixdir, "hidden_%d.npy" % k))
        a, h = model.forward(ids)
        if a.shape != ra.shape or h.shape != rh.shape:
            problems.append("text %d: shapes %s %s, fixtures %s %s"
                            % (k, a.shape, h.shape, ra.shape, rh.shape))
        else:
            ca = float(np.max(np.abs(a - ra)))
            ch = hidden_err(h, rh)
            ea, eh = max(ea, ca), max(eh, ch)
            if not ca <= tol or not ch <= tol:
                problems.append("text %d: attn err %.3g, hidden err %.3g (tol %g)" % (k, ca, ch, tol))
            # causal models: exact zeros above the diagonal on both sides
            if model.causal:
                up = np.triu(np.ones(a.shape[-1], dtype=bool), 1)
                if np.any(a[..., up] != 0) or np.any(ra[..., up] != 0):
                    problems.append("text %d: masked probabilities not exactly 0" % k)
        k += 1
    if k == 0:
        problems.append("no fixtures in %s" % fixdir)
    return k, ea, eh, problems


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    models_dir = argv[1] if len(argv) > 1 else os.environ.get("AG_TEST_MODELS", "")
    bad = 0
    for name in ("tiny-gpt2", "tiny-bert", "tiny-llama"):
        cands = [os.path.join(root, "models", name), os.path.join(root, "tests/data/models", name)]
        if models_dir:
            cands.append(os.path.join(models_dir, name))
        folder = next((c for c in cands if os.path.exists(os.path.join(c, "config.json"))), None)
        if folder is None:
            print("%-10s skipped (no model folder)" % name)
            continue
        k, ea, eh, probs = check_fixtures(Model(folder), folder,
                                          os.path.join(root, "tests/data/fixtures", name))
        print("%-10s %d texts  max attn err %.2e  max hidden err %.2e  %s"
              % (name, k, ea, eh, "FAIL" if probs else "ok"))
        for p in probs:
            print("   ", p)
        bad += bool(probs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
