"""Float64 numpy ports of Hugging Face's ViT and Whisper encoder, the
references of issue 15 (numpy only). Read with the search tool from
huggingface/transformers:

- src/transformers/models/vit/modeling_vit.py @ 005db8208dee:
  ViTPatchEmbeddings (Conv2d kernel = stride = patch_size; refuses other
  image sizes without interpolate_pos_encoding), ViTEmbeddings (cat(cls,
  patches) + position_embeddings), ViTSelfAttention / eager_attention_forward
  (softmax(q·kᵀ · head_dim^-0.5), qkv_bias), ViTSelfOutput, ViTIntermediate
  (ACT2FN[hidden_act]), ViTOutput (+ residual), ViTLayer (layernorm_before ->
  attention -> + h; layernorm_after -> MLP -> + h), ViTEncoder (hidden states:
  the embeddings, then every layer's output), ViTModel (layernorm on
  last_hidden_state only).
- src/transformers/models/whisper/modeling_whisper.py @ 5c48f71a682f:
  WhisperEncoder (gelu(conv1), gelu(conv2) with stride 2, + embed_positions,
  layers, layer_norm, whose output replaces the last hidden state),
  WhisperEncoderLayer (pre-LN), WhisperAttention (q_proj(x) · head_dim^-0.5,
  k_proj without bias), nn.LayerNorm default eps 1e-5;
  configuration_whisper.py for the defaults.

Both return (attentions (L, H, n, n), hidden (L + 1, n, d)) as float64,
computed from the folder's F32 weights upcast exactly. The convolutions are
written as their definitions (sums over kernel offsets), not as the
engine's im2col product.
"""
import json
import math
import os
import struct

import numpy as np

_DT = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def read_safetensors(path):
    """{name: float64 array} of a safetensors file (F32/F16/F64)."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        a = np.frombuffer(raw[8 + hlen + b:8 + hlen + e], dtype=_DT[info["dtype"]])
        out[name] = a.astype(np.float64).reshape(info["shape"])
    return out


def load(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    return cfg, read_safetensors(os.path.join(folder, "model.safetensors"))


_erf = np.vectorize(math.erf)


def act(name, x):
    """activations.py ACT2FN: gelu (GELUActivation, erf), gelu_new /
    gelu_pytorch_tanh (tanh form), relu, silu/swish, quick_gelu."""
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return np.maximum(x, 0)
    if name in ("silu", "swish"):
        return x / (1.0 + np.exp(-x))
    if name == "quick_gelu":  # QuickGELUActivation: input * sigmoid(1.702 * input)
        return x / (1.0 + np.exp(-1.702 * x))
    raise ValueError("activation %s" % name)


def layer_norm(x, w, b, eps):
    """torch.nn.LayerNorm over the last dim, biased variance."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def linear(x, W, b=None):
    """nn.Linear: x @ Wᵀ + b."""
    y = x @ W.T
    return y if b is None else y + b


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def heads(x, H):
    """(n, H·hd) -> (H, n, hd): transpose_for_scores / _shape."""
    n, w = x.shape
    return x.reshape(n, H, w // H).transpose(1, 0, 2)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _prefix(t, probe, prefixes):
    for p in prefixes:
        if p + probe in t:
            return p
    return ""


# ---- ViT (modeling_vit.py) ------------------------------------------------

def _trace(trace, x, p, v, wo):
    """One layer's entry of a trace list (None: off), as hf_forward.py's
    TRACE: x the Q/K/V input [n, d], p [H, n, n], v [H, n, hd] (x W_V +
    b_V), wo the output projection [H·hd, d] in [in, out] form."""
    if trace is not None:
        trace.append({"x": x, "p": p, "v": v, "wo": wo})


def _cubic_matrix(n_in, n_out):
    """(n_out, n_in) matrix of torch's F.interpolate(mode="bicubic",
    align_corners=False, size given) along one axis, a float64 port of
    pytorch aten/src/ATen/native/UpSample.h: scale n_in / n_out, source
    (o + 0.5)·scale − 0.5, index floor(source) capped at n_in − 1,
    t = source − index clamped to [0, 1], Keys' cubic convolution with
    A = −0.75 on the 4 neighbours index−1 … index+2, each clamped to the
    border (upsample_get_value_bounded): a clamped neighbour adds its weight
    to the border entry."""
    A = -0.75
    M = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = (o + 0.5) * (n_in / n_out) - 0.5
        i0 = min(int(np.floor(src)), n_in - 1)
        t = min(max(src - i0, 0.0), 1.0)
        cc1 = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1  # noqa: E731, |x| <= 1
        cc2 = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A  # noqa: E731, 1 < |x| < 2
        for j, w in enumerate((cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t))):
            M[o, min(max(i0 - 1 + j, 0), n_in - 1)] += w
    return M


def vit_positions(table, gh, gw):
    """ViTEmbeddings.interpolate_pos_encoding (modeling_vit.py @ 005db8208dee):
    table (1 + N, d); row 0 kept, the patch rows reshaped to √N × √N (HF's
    reshape: a square grid only) and resized bicubically to gh × gw."""
    return _resize_grid(table, gh, gw, _cubic_matrix)


def _resize_grid(table, gh, gw, axis_matrix):
    """table (1 + N, d): row 0 kept, the patch rows reshaped to √N × √N
    (HF's reshape: a square grid only) and resized to gh × gw by
    axis_matrix(n_in, n_out) along each axis."""
    N, d = table.shape[0] - 1, table.shape[1]
    g0 = int(round(N ** 0.5))
    assert g0 * g0 == N, "HF reshapes to sqrt(N) x sqrt(N)"
    grid = table[1:].reshape(g0, g0, d)
    out = np.einsum("yi,ijc,xj->yxc", axis_matrix(g0, gh), grid, axis_matrix(g0, gw))
    return np.concatenate([table[:1], out.reshape(gh * gw, d)], axis=0)


def _aa_cubic_matrix(n_in, n_out):
    """(n_out, n_in) matrix of torch's F.interpolate(mode="bicubic",
    align_corners=False, antialias=True, size given) along one axis, a
    float64 port of pytorch aten/src/ATen/native/cpu/UpSampleKernel.cpp
    (@ bb7240c35c73, HelperInterpBase::_compute_indices_min_size_weights_aa
    and HelperInterpCubic::aa_filter, PIL's convention): scale = n_in /
    n_out, support 2 (2·scale when shrinking), centre scale·(o + 0.5),
    taps int(centre − support + 0.5) … int(centre + support + 0.5) − 1 cut
    to the input, weights Keys' cubic with a = −0.5 at (tap − centre +
    0.5)/max(scale, 1), divided by their sum (so no border clamping: the
    cut taps drop out)."""
    a = -0.5

    def keys(x):
        x = abs(x)
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2:
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return 0.0

    scale = n_in / n_out
    support = 2.0 * scale if scale >= 1 else 2.0
    inv = 1.0 / scale if scale >= 1 else 1.0
    M = np.zeros((n_out, n_in))
    for o in range(n_out):
        centre = scale * (o + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        w = np.array([keys((j - centre + 0.5) * inv) for j in range(lo, hi)])
        if w.sum() != 0:
            w = w / w.sum()
        M[o, lo:hi] = w
    return M


def dinov2_registers_positions(table, gh, gw):
    """Dinov2WithRegistersEmbeddings.interpolate_pos_encoding
    (modeling_dinov2_with_registers.py @ c80ba31e8771): as ViT's, but
    nn.functional.interpolate(..., mode="bicubic", antialias=True)."""
    return _resize_grid(table, gh, gw, _aa_cubic_matrix)


VIT_NAMES = ("embeddings.cls_token", "embeddings.position_embeddings", "embeddings.patch_embeddings.projection")
CLIP_NAMES = ("embeddings.class_embedding", "embeddings.position_embedding.weight", "embeddings.patch_embedding")


def _embed(cfg, t, p, pixels, patch_dflt, names=VIT_NAMES, resize=vit_positions):
    """ViTEmbeddings / Dinov2Embeddings (the same code: cls_token, Conv2d
    patches, position_embeddings, interpolate_pos_encoding for another
    size) on pixels (C, H, W): h_0 (n, d)."""
    d = cfg["hidden_size"]
    (ih, iw), (ph, pw) = pair(cfg.get("image_size", 224)), pair(cfg.get("patch_size", patch_dflt))
    C = cfg.get("num_channels", 3)
    x = np.asarray(pixels, dtype=np.float64)
    # ViTPatchEmbeddings.forward: channel check; the size check only
    # without interpolate_pos_encoding, which another size turns on here
    assert x.shape[0] == C, "ViT takes %d channels, got %s" % (C, x.shape)
    interpolate = x.shape[1:] != (ih, iw)
    ih, iw = x.shape[1:]
    W = t[p + names[2] + ".weight"]  # (d, C, ph, pw)
    bconv = t.get(p + names[2] + ".bias", np.zeros(d))  # CLIP: Conv2d(bias=False)
    gh, gw = ih // ph, iw // pw
    # Conv2d(stride = kernel): out[o, i, j] = b[o] + sum_{c,ky,kx} W[o,c,ky,kx] x[c, i·ph+ky, j·pw+kx]
    conv = np.empty((d, gh, gw))
    for i in range(gh):
        for j in range(gw):
            patch = x[:, i * ph:(i + 1) * ph, j * pw:(j + 1) * pw]
            conv[:, i, j] = np.tensordot(W, patch, axes=([1, 2, 3], [0, 1, 2])) + bconv
    emb = conv.reshape(d, gh * gw).T  # .flatten(2).transpose(1, 2)
    # ViTEmbeddings.forward: cat((cls_tokens, embeddings)) + position_embeddings
    pos = t[p + names[1]].reshape(-1, d)
    if interpolate and not (gh * gw == pos.shape[0] - 1 and ih == iw):
        pos = resize(pos, gh, gw)
    h = np.concatenate([t[p + names[0]].reshape(1, d), emb], axis=0) + pos
    return h


def vit_forward(folder, pixels, trace=None):
    """ViTModel(pixel_values[None], output_attentions=True,
    output_hidden_states=True) on pixels (C, H, W); another H × W than
    image_size as with interpolate_pos_encoding=True. trace: a list to get
    each layer's x, p, v, wo (_trace)."""
    cfg, t = load(folder)
    p = _prefix(t, "embeddings.cls_token", ["vit."])
    d, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    eps, hact = cfg.get("layer_norm_eps", 1e-12), cfg.get("hidden_act", "gelu")
    qkv_bias = cfg.get("qkv_bias", True)
    h = _embed(cfg, t, p, pixels, 16)
    hd = d // H
    scaling = hd ** -0.5
    hidden, attns = [], []
    for l in range(L):
        q_ = "%sencoder.layer.%d." % (p, l)
        g = lambda k: t.get(q_ + k)  # noqa: E731
        hidden.append(h)  # ViTEncoder: before each layer
        x_ln = layer_norm(h, g("layernorm_before.weight"), g("layernorm_before.bias"), eps)
        # ViTSelfAttention: query, key, value are nn.Linear(bias=config.qkv_bias)
        bias = (lambda k: g(k)) if qkv_bias else (lambda k: None)
        k = heads(linear(x_ln, g("attention.attention.key.weight"), bias("attention.attention.key.bias")), H)
        v = heads(linear(x_ln, g("attention.attention.value.weight"), bias("attention.attention.value.bias")), H)
        q = heads(linear(x_ln, g("attention.attention.query.weight"), bias("attention.attention.query.bias")), H)
        # eager_attention_forward: matmul(q, kᵀ) * scaling, softmax
        a = softmax(np.matmul(q, k.transpose(0, 2, 1)) * scaling)
        attns.append(a)
        _trace(trace, x_ln, a, v, g("attention.output.dense.weight").T)
        ctx = np.matmul(a, v).transpose(1, 0, 2).reshape(-1, d)
        h = linear(ctx, g("attention.output.dense.weight"), g("attention.output.dense.bias")) + h
        y = layer_norm(h, g("layernorm_after.weight"), g("layernorm_after.bias"), eps)
        y = act(hact, linear(y, g("intermediate.dense.weight"), g("intermediate.dense.bias")))
        h = linear(y, g("output.dense.weight"), g("output.dense.bias")) + h
    hidden.append(h)  # ViTEncoder appends the last layer's output; ViTModel's layernorm is not in it
    return np.array(attns), np.array(hidden)


# ---- DINOv2 (modeling_dinov2.py) ------------------------------------------

def dinov2_forward(folder, pixels, trace=None):
    """Dinov2Model(pixel_values[None], output_attentions=True,
    output_hidden_states=True) on pixels (C, H, W), from
    src/transformers/models/dinov2/modeling_dinov2.py @ 015e68769f98:
    Dinov2Embeddings (ViT's, interpolate_pos_encoding when the size differs:
    HF always calls it), Dinov2Layer h += lambda1_1 * attention(norm1(h)),
    h += lambda1_2 * mlp(norm2(h)) (Dinov2LayerScale; Dinov2MLP fc1, act,
    fc2 of int(hidden_size * mlp_ratio)), hidden states before the final
    layernorm (Dinov2Encoder). trace as vit_forward's (wo with lambda1
    folded into its columns)."""
    cfg, t = load(folder)
    assert not cfg.get("use_swiglu_ffn", False)
    registers = cfg["model_type"] == "dinov2_with_registers"
    p = _prefix(t, "embeddings.cls_token", ["dinov2_with_registers." if registers else "dinov2."])
    d, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    eps, hact = cfg.get("layer_norm_eps", 1e-6), cfg.get("hidden_act", "gelu")
    qkv_bias = cfg.get("qkv_bias", True)
    if registers:
        # Dinov2WithRegistersEmbeddings.forward (modeling_dinov2_with_registers.py
        # @ c80ba31e8771; patch_size default 16): cat(cls, patches) +
        # interpolate_pos_encoding (antialiased), then cat(embeddings[:, :1],
        # register_tokens, embeddings[:, 1:]): registers after the CLS token
        # and without positions. The layers are Dinov2's.
        h = _embed(cfg, t, p, pixels, 16, resize=dinov2_registers_positions)
        reg = t[p + "embeddings.register_tokens"].reshape(-1, d)
        assert reg.shape[0] == cfg.get("num_register_tokens", 4)
        h = np.concatenate([h[:1], reg, h[1:]], axis=0)
    else:
        h = _embed(cfg, t, p, pixels, 14)
    hd = d // H
    hidden, attns = [], []
    for l in range(L):
        q_ = "%sencoder.layer.%d." % (p, l)
        g = lambda k: t.get(q_ + k)  # noqa: E731
        hidden.append(h)
        x_ln = layer_norm(h, g("norm1.weight"), g("norm1.bias"), eps)
        bias = (lambda k: g(k)) if qkv_bias else (lambda k: None)
        k = heads(linear(x_ln, g("attention.attention.key.weight"), bias("attention.attention.key.bias")), H)
        v = heads(linear(x_ln, g("attention.attention.value.weight"), bias("attention.attention.value.bias")), H)
        q = heads(linear(x_ln, g("attention.attention.query.weight"), bias("attention.attention.query.bias")), H)
        a = softmax(np.matmul(q, k.transpose(0, 2, 1)) * hd ** -0.5)
        attns.append(a)
        lam1, lam2 = g("layer_scale1.lambda1"), g("layer_scale2.lambda1")
        _trace(trace, x_ln, a, v, g("attention.output.dense.weight").T * lam1[None, :])
        ctx = np.matmul(a, v).transpose(1, 0, 2).reshape(-1, d)
        h = linear(ctx, g("attention.output.dense.weight"), g("attention.output.dense.bias")) * lam1 + h
        y = layer_norm(h, g("norm2.weight"), g("norm2.bias"), eps)
        y = act(hact, linear(y, g("mlp.fc1.weight"), g("mlp.fc1.bias")))
        h = linear(y, g("mlp.fc2.weight"), g("mlp.fc2.bias")) * lam2 + h
    hidden.append(h)
    return np.array(attns), np.array(hidden)


# ---- CLIP vision tower (modeling_clip.py) ---------------------------------

def clip_vision_forward(folder, pixels, trace=None):
    """CLIPVisionModel(pixel_values[None], output_attentions=True,
    output_hidden_states=True), src/transformers/models/clip/modeling_clip.py
    @ 000f1ffdbf1c: CLIPVisionEmbeddings (class_embedding, Conv2d without
    bias, position_embedding; interpolate_pos_encoding for another size),
    pre_layrnorm, CLIPEncoderLayer x += out_proj(attn(layer_norm1(x))),
    x += fc2(act(fc1(layer_norm2(x)))); hidden states are CLIPEncoder's
    (post_layernorm is on the pooled output only)."""
    cfg, t = load(folder)
    p = _prefix(t, "embeddings.class_embedding", ["vision_model."])
    d, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    eps, hact = cfg.get("layer_norm_eps", 1e-5), cfg.get("hidden_act", "quick_gelu")
    h = _embed(cfg, t, p, pixels, 32, CLIP_NAMES)
    h = layer_norm(h, t[p + "pre_layrnorm.weight"], t[p + "pre_layrnorm.bias"], eps)
    hd = d // H
    hidden, attns = [], []
    for l in range(L):
        q_ = "%sencoder.layers.%d." % (p, l)
        g = lambda k: t.get(q_ + k)  # noqa: E731
        hidden.append(h)
        x_ln = layer_norm(h, g("layer_norm1.weight"), g("layer_norm1.bias"), eps)
        k = heads(linear(x_ln, g("self_attn.k_proj.weight"), g("self_attn.k_proj.bias")), H)
        v = heads(linear(x_ln, g("self_attn.v_proj.weight"), g("self_attn.v_proj.bias")), H)
        q = heads(linear(x_ln, g("self_attn.q_proj.weight"), g("self_attn.q_proj.bias")), H)
        a = softmax(np.matmul(q, k.transpose(0, 2, 1)) * hd ** -0.5)
        attns.append(a)
        _trace(trace, x_ln, a, v, g("self_attn.out_proj.weight").T)
        ctx = np.matmul(a, v).transpose(1, 0, 2).reshape(-1, d)
        h = linear(ctx, g("self_attn.out_proj.weight"), g("self_attn.out_proj.bias")) + h
        y = layer_norm(h, g("layer_norm2.weight"), g("layer_norm2.bias"), eps)
        y = act(hact, linear(y, g("mlp.fc1.weight"), g("mlp.fc1.bias")))
        h = linear(y, g("mlp.fc2.weight"), g("mlp.fc2.bias")) + h
    hidden.append(h)
    return np.array(attns), np.array(hidden)


# ---- Whisper encoder (modeling_whisper.py) --------------------------------

def conv1d(x, W, b, stride, padding):
    """nn.Conv1d (cross-correlation) on x (C_in, T): out[o, i] = b[o] +
    sum_{c,k} W[o, c, k] · xpad[c, stride·i + k]."""
    C, T = x.shape
    K = W.shape[2]
    xp = np.zeros((C, T + 2 * padding))
    xp[:, padding:padding + T] = x
    n = (T + 2 * padding - K) // stride + 1
    out = np.tile(b[:, None], (1, n))
    for k in range(K):
        out += W[:, :, k] @ xp[:, k:k + stride * (n - 1) + 1:stride]
    return out


def whisper_forward(folder, features, trace=None):
    """WhisperEncoder(input_features[None], output_attentions=True,
    output_hidden_states=True) on features (n_mels, T). HF accepts only
    T = 2·max_source_positions; for fewer frames this is the same code with
    embed_positions rows 0 … n−1 (issue 15's extension). trace as
    vit_forward's."""
    cfg, t = load(folder)
    p = _prefix(t, "encoder.conv1.weight", ["model."]) + "encoder."
    d, H, L = cfg["d_model"], cfg["encoder_attention_heads"], cfg["encoder_layers"]
    hact, eps = cfg.get("activation_function", "gelu"), 1e-5  # nn.LayerNorm(embed_dim)
    x = np.asarray(features, dtype=np.float64)
    assert x.shape[0] == cfg.get("num_mel_bins", 80)
    h = act("gelu", conv1d(x, t[p + "conv1.weight"], t[p + "conv1.bias"], 1, 1))  # nn.functional.gelu
    h = act("gelu", conv1d(h, t[p + "conv2.weight"], t[p + "conv2.bias"], 2, 1))
    h = h.T  # permute(0, 2, 1)
    n = h.shape[0]
    h = h + t[p + "embed_positions.weight"][:n]
    hd = d // H
    scaling = hd ** -0.5
    hidden, attns = [], []
    for l in range(L):
        q_ = "%slayers.%d." % (p, l)
        g = lambda k: t.get(q_ + k)  # noqa: E731
        hidden.append(h)
        x_ln = layer_norm(h, g("self_attn_layer_norm.weight"), g("self_attn_layer_norm.bias"), eps)
        q = linear(x_ln, g("self_attn.q_proj.weight"), g("self_attn.q_proj.bias")) * scaling
        k = linear(x_ln, g("self_attn.k_proj.weight"))  # no bias
        v = linear(x_ln, g("self_attn.v_proj.weight"), g("self_attn.v_proj.bias"))
        a = softmax(np.matmul(heads(q, H), heads(k, H).transpose(0, 2, 1)))
        attns.append(a)
        _trace(trace, x_ln, a, heads(v, H), g("self_attn.out_proj.weight").T)
        ctx = np.matmul(a, heads(v, H)).transpose(1, 0, 2).reshape(-1, d)
        h = h + linear(ctx, g("self_attn.out_proj.weight"), g("self_attn.out_proj.bias"))
        y = layer_norm(h, g("final_layer_norm.weight"), g("final_layer_norm.bias"), eps)
        y = act(hact, linear(y, g("fc1.weight"), g("fc1.bias")))
        h = h + linear(y, g("fc2.weight"), g("fc2.bias"))
    hidden.append(layer_norm(h, t[p + "layer_norm.weight"], t[p + "layer_norm.bias"], eps))
    return np.array(attns), np.array(hidden)
