"""Independent float64 numpy forward passes of three Hugging Face models.

Written from the Hugging Face modelling code's documented behaviour (and the
model READMEs), not from the C sources:

  * GPT2LMHeadModel (modeling_gpt2.py): pre-LN blocks, Conv1D weights
    stored [in, out] (y = x W + b), fused c_attn columns Q | K | V, head h =
    columns h*d_h .. (h+1)*d_h - 1 of each block, scores / sqrt(d_h)
    (scale_attn_weights; / (layer+1) with scale_attn_by_inverse_layer_idx),
    causal, gelu_new (tanh form), ln_f on the last hidden state.
  * BertForMaskedLM encoder (modeling_bert.py): embeddings
    LayerNorm(word + token_type[0] + position), post-LN layers, nn.Linear
    weights [out, in] (y = x W^T + b), exact erf GELU, no mask (one unpadded
    segment, token type 0).
  * LlamaForCausalLM (modeling_llama.py): RMSNorm w * (x * rsqrt(mean(x^2) +
    eps)), RoPE rotate_half with rope_theta and head_dim, grouped-query
    attention (query head h uses kv head h // (H / H_kv)), optional q/k/v/o
    biases (attention_bias), SwiGLU MLP down(silu(gate(x)) * up(x)),
    model.norm on the last hidden state.

Everything is float64: the weights are read from the safetensors file exactly
as stored (F32, F16, BF16, F64) and upcast.  Causally masked probabilities are
exactly 0 (as HF's finfo.min mask gives after exp).

forward(folder, ids) -> (attn [L, H, n, n], hidden [L+1, n, d]) in HF's
output_attentions / output_hidden_states conventions.

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


def softmax_rows(s, causal):
    """Row softmax of scores s [..., n, n]; causal: keys j > i get exactly 0."""
    n = s.shape[-1]
    s = s.copy()
    if causal:
        mask = np.triu(np.ones((n, n), dtype=bool), k=1)
        s[..., mask] = -np.inf
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)  # exp(-inf) = 0 exactly
    return e / e.sum(axis=-1, keepdims=True)


def attention(q, k, v, scale, causal):
    """q [H, n, dh], k/v [H, n, dh] (already expanded for GQA)."""
    s = np.einsum("hid,hjd->hij", q, k) * scale
    p = softmax_rows(s, causal)
    return p, np.einsum("hij,hjd->hid", p, v)


def split_heads(x, nh):
    n, d = x.shape
    return x.reshape(n, nh, d // nh).transpose(1, 0, 2)


def merge_heads(x):
    h, n, dh = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * dh)


# ----------------------------------------------------------------- models ---

def gpt2_forward(cfg, W, ids):
    L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = ACT[cfg.get("activation_function", "gelu_new")]
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
        h = h + (merge_heads(o) @ W(p + "attn.c_proj.weight") + W(p + "attn.c_proj.bias"))
        x = layer_norm(h, W(p + "ln_2.weight"), W(p + "ln_2.bias"), eps)
        m = act(x @ W(p + "mlp.c_fc.weight") + W(p + "mlp.c_fc.bias"))
        h = h + (m @ W(p + "mlp.c_proj.weight") + W(p + "mlp.c_proj.bias"))
        hidden.append(h)
    hidden[-1] = layer_norm(h, W("ln_f.weight"), W("ln_f.bias"), eps)
    return np.stack(attns), np.stack(hidden)


def linear(x, W, name, bias=True):
    y = x @ W(name + ".weight").T
    if bias:
        b = W(name + ".bias", required=False)
        if b is not None:
            y = y + b
    return y


def bert_forward(cfg, W, ids):
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    act = ACT[cfg.get("hidden_act", "gelu")]
    dh = d // H
    n = len(ids)
    e = W("embeddings.word_embeddings.weight")[ids] \
        + W("embeddings.token_type_embeddings.weight")[np.zeros(n, dtype=int)]
    e = e + W("embeddings.position_embeddings.weight")[np.arange(n)]
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
        a = linear(merge_heads(o), W, p + "attention.output.dense") + h
        a = layer_norm(a, W(p + "attention.output.LayerNorm.weight"),
                       W(p + "attention.output.LayerNorm.bias"), eps)
        m = act(linear(a, W, p + "intermediate.dense"))
        h = linear(m, W, p + "output.dense") + a
        h = layer_norm(h, W(p + "output.LayerNorm.weight"), W(p + "output.LayerNorm.bias"), eps)
        hidden.append(h)
    return np.stack(attns), np.stack(hidden)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def llama_forward(cfg, W, ids):
    L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    Hkv = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or d // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = float(cfg.get("rope_theta", 10000.0))
    act = ACT[cfg.get("hidden_act", "silu")]
    qkv_bias = cfg.get("attention_bias", False) or cfg.get("model_type") == "qwen2"
    o_bias = cfg.get("attention_bias", False)
    mlp_bias = cfg.get("mlp_bias", False)
    n = len(ids)
    inv_freq = 1.0 / (theta ** (np.arange(0, dh, 2, dtype=np.float64) / dh))
    ang = np.arange(n, dtype=np.float64)[:, None] * inv_freq[None, :]
    ang = np.concatenate([ang, ang], axis=-1)  # [n, dh]
    cos, sin = np.cos(ang), np.sin(ang)
    group = H // Hkv
    h = W("embed_tokens.weight")[ids]
    hidden = [h]
    attns = []
    for l in range(L):
        p = "layers.%d." % l
        x = rms_norm(h, W(p + "input_layernorm.weight"), eps)
        q = linear(x, W, p + "self_attn.q_proj", qkv_bias)
        k = linear(x, W, p + "self_attn.k_proj", qkv_bias)
        v = linear(x, W, p + "self_attn.v_proj", qkv_bias)
        q = q.reshape(n, H, dh).transpose(1, 0, 2)
        k = k.reshape(n, Hkv, dh).transpose(1, 0, 2)
        v = v.reshape(n, Hkv, dh).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kv_of = np.arange(H) // group
        pr, o = attention(q, k[kv_of], v[kv_of], dh ** -0.5, True)
        attns.append(pr)
        h = h + linear(merge_heads(o), W, p + "self_attn.o_proj", o_bias)
        x = rms_norm(h, W(p + "post_attention_layernorm.weight"), eps)
        m = act(linear(x, W, p + "mlp.gate_proj", mlp_bias)) * linear(x, W, p + "mlp.up_proj", mlp_bias)
        h = h + linear(m, W, p + "mlp.down_proj", mlp_bias)
        hidden.append(h)
    hidden[-1] = rms_norm(h, W("norm.weight"), eps)
    return np.stack(attns), np.stack(hidden)


_MODELS = {
    "gpt2": (gpt2_forward, ["transformer."], "n_positions"),
    "bert": (bert_forward, ["bert."], "max_position_embeddings"),
    "llama": (llama_forward, ["model."], "max_position_embeddings"),
    "mistral": (llama_forward, ["model."], "max_position_embeddings"),
    "qwen2": (llama_forward, ["model."], "max_position_embeddings"),
}


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
        self.max_positions = self.cfg[self.pos_key]
        self.vocab_size = self.cfg["vocab_size"]

    def forward(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) < 1 or len(ids) > self.max_positions:
            raise ValueError("need 1..%d ids" % self.max_positions)
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
            if model.cfg["model_type"] != "bert":
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
