#!/usr/bin/python3
"""Check ag_run_contributions (attngeom/contributions.h) against a float64
numpy reference ported from the authors' code.

Usage: /usr/bin/python3 tests/ref/check_alti.py path/to/attngeom

The reference follows
  - Ferrando et al. 2022, "Measuring the Mixing of Contextual Information in
    the Transformer", §3; code mt-upc/transformer-contributions,
    src/contributions.py (ModelWrapper.get_contributions: value_layer is the
    biased V projection, transformed_layer = einsum('bhsv,dhv->bhsd', value,
    dense), weighted_layer = einsum('bhks,bhsd->bhksd', A, ·) summed over
    heads, + the residual eye ⊗ h, l_transform for the LayerNorm's mean and
    weight, the dense bias apart, importance = −‖T − y‖₁) and
    src/utils_contributions.py (normalize_contributions 'min_sum' with the
    resultant norm: clip(‖y‖₁ − ‖y − T‖₁, 0) / row sum; compute_joint_attention
    for the composition, no identity added);
  - Kobayashi et al. 2021, "Incorporating Residual and Normalization Layers
    into Analysis of Masked Language Models", §3; code
    gorokoba560/norm-analysis-of-transformer, emnlp2021 modeling_bert.py
    (BertNormOutput: normalized_layer = (v − mean(v)) / √(var + eps) with the
    variance of the whole pre-LN vector, times the LayerNorm weight; the
    AttnResLn-N mixing ratio ‖Σ_{j≠i}‖ / (‖Σ_{j≠i}‖ + ‖T_i(x_i)‖)).
Where the released code departs from the papers' definitions the reference
follows the papers, as attngeom does: Ferrando et al.'s code scales by
1/std(pre_ln + eps), an unbiased standard deviation without eps under the
root, and measures distances with F.pairwise_distance, which adds its
default eps = 1e-6 to y − T; here s_i = √(var_i + ε) with the biased
variance (the LayerNorm's own, as Kobayashi et al.) and ‖y − T‖₁ exactly.
Pre-LN blocks (GPT-2, LLaMA) have no norm after the attention: T_i(x_j) =
Σ_h A^h_ij f_h(LN(x_j)) + δ_ij h_i, bias b_O. Gemma-2's sandwich norm is
applied term by term as Kobayashi et al.'s LayerNorm (RMS: no mean), with
the residual added after it.

Per model (tiny-bert, tiny-gpt2, the llama-linear and llama3 folders,
gemma2, qwen3 and gemma3 (QK-norm; gemma3 a RoPE per layer type) and olmo2 (QK-norm, no pre-norm, the sandwich's
post_attention_layernorm as Gemma-2's with w for 1 + w)) and per layer: attngeom's ALTI C_l, composed R_l, norms N_l and
mixing ratio r_l (--precision f64) agree with the reference to 1e-9
(absolute; C and R lie in [0, 1], N is scaled by max(1, |N|)). The
reference's own y = Σ_j T_i(x_j) + bias_i must equal its HF-style block
output to 1e-12 first. The same again under `contributions --temperature T`
(T = 0.5, 3) and `--normalizer sparsemax` (issue 28): the reference's heads
at softmax(S/T) or sparsemax(S) (from log A, to which both are blind up to
a row's constant) and y the sum of the lensed terms, the counterfactual
block output, which ALTI's distances are measured to; the lens must move
ALTI. Encoder–decoder folders (t5, t5-v1_1, bart, whisper-seq2seq; issue 30),
source and target ids of tests/data/archref/<name>/ids.json (Whisper: its
features.npy at float32, as the CLI takes them): per stack, per layer, the
encoder's blocks and the decoder's self-attention sublayers (h the stack's
hidden state entering the block, the stored pass's probabilities
(hf_forward.seq2seq_forward); T5: x = T5LayerNorm(h), y = h + o(SA(x)), no
biases; BART: y = self_attn_layer_norm(h + out_proj(SA(h))), post-LN;
Whisper: y = h + out_proj(SA(self_attn_layer_norm(h))), pre-LN), ALTI
C, its composition within the stack, norms-res N and r to 1e-9 as above,
from one pass whose views carry their stack; again under each lens. Exits 1 on any
failure."""
import ctypes
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import hf_forward as R  # noqa: E402
import libattngeom as LA  # noqa: E402

TOL = 1e-9
MODELS = [
    ("tiny-bert", os.path.join(ROOT, "tests", "data", "models", "tiny-bert")),
    ("tiny-gpt2", os.path.join(ROOT, "models", "tiny-gpt2")),
    ("llama-linear", os.path.join(ROOT, "tests", "data", "models", "arch", "llama-linear")),
    ("llama3", os.path.join(ROOT, "tests", "data", "models", "arch", "llama3")),
    ("gemma2", os.path.join(ROOT, "tests", "data", "models", "arch", "gemma2")),
    ("qwen3", os.path.join(ROOT, "tests", "data", "models", "arch", "qwen3")),
    ("olmo2", os.path.join(ROOT, "tests", "data", "models", "arch", "olmo2")),
    ("gemma3", os.path.join(ROOT, "tests", "data", "models", "arch", "gemma3")),
    ("mixtral", os.path.join(ROOT, "tests", "data", "models", "arch", "mixtral")),
    ("olmoe", os.path.join(ROOT, "tests", "data", "models", "arch", "olmoe")),
]


# ------------------------------------------------------------ the blocks ---
# Each returns, for block input h (n, d): the value vectors per query head
# (H, n, hd) with their bias, the probabilities (H, n, n), W_O as
# (d, H, hd) (contributions.py's dense.view), b_O (d) or zeros, the after
# norm as (kind, gamma, beta, eps) or None and where it sits ("sum" post-LN,
# "branch" sandwich), and the block's output y computed the HF way.

def gpt2_block(M, h, l):
    cfg, W = M.cfg, M.W
    d, H = cfg["n_embd"], cfg["n_head"]
    dh = d // H
    p = "h.%d." % l
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    x = R.layer_norm(h, W(p + "ln_1.weight"), W(p + "ln_1.bias"), eps)
    qkv = x @ W(p + "attn.c_attn.weight") + W(p + "attn.c_attn.bias")
    q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
    scale = 1.0 / np.sqrt(dh) if cfg.get("scale_attn_weights", True) else 1.0
    if cfg.get("scale_attn_by_inverse_layer_idx", False):
        scale /= float(l + 1)
    V = R.split_heads(v, H)
    pr, o = R.attention(R.split_heads(q, H), R.split_heads(k, H), V, scale, True)
    wo = W(p + "attn.c_proj.weight")  # Conv1D [in, out]
    bo = W(p + "attn.c_proj.bias")
    y = h + (R.merge_heads(o) @ wo + bo)
    return V, pr, wo.T.reshape(d, H, dh), bo, None, y


def bert_block(M, h, l):
    cfg, W = M.cfg, M.W
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = d // H
    p = "encoder.layer.%d." % l
    eps = cfg.get("layer_norm_eps", 1e-12)
    q = R.linear(h, W, p + "attention.self.query")
    k = R.linear(h, W, p + "attention.self.key")
    V = R.split_heads(R.linear(h, W, p + "attention.self.value"), H)
    pr, o = R.attention(R.split_heads(q, H), R.split_heads(k, H), V, 1.0 / np.sqrt(dh), False)
    g, b = W(p + "attention.output.LayerNorm.weight"), W(p + "attention.output.LayerNorm.bias")
    pre_ln = R.linear(R.merge_heads(o), W, p + "attention.output.dense") + h
    y = R.layer_norm(pre_ln, g, b, eps)
    wo = W(p + "attention.output.dense.weight")  # nn.Linear (out, in)
    return V, pr, wo.reshape(d, H, dh), W(p + "attention.output.dense.bias"), \
        ("layer", g, b, eps, "sum"), y


def llama_block(M, h, l):
    """LLaMA-family layer l of R's decoder classes (Llama, Gemma2, Qwen3,
    Olmo2): their own norm (none before OLMo-2's attention), projections,
    QK-norm, RoPE, GQA, scale, soft-capping and window."""
    cfg = M.cfg
    dec = R._DECODER_CLASSES[cfg["model_type"]](cfg, M.W)
    n = h.shape[0]
    cos, sin = dec.rope_of_layer(n)(l)
    p = "layers.%d." % l
    q, k, v = dec.qkv(dec.pre_norm(h, p + "input_layernorm"), p)
    q, k = dec.qk_norm(q, k, p)
    q = R.apply_rope(R.split_heads(q, dec.H, dec.dh), cos, sin)
    k = R.apply_rope(R.split_heads(k, dec.Hkv, dec.dh), cos, sin)
    kv = np.arange(dec.H) // (dec.H // dec.Hkv)
    V = R.split_heads(v, dec.Hkv, dec.dh)[kv]
    pr, o = R.attention(q, k[kv], V, dec.scale(), True, dec.window(l), dec.softcap())
    a = R.linear(R.merge_heads(o), M.W, p + "self_attn.o_proj", dec.o_bias)
    y = h + dec.after_attn(a, p)
    wo = M.W(p + "self_attn.o_proj.weight")
    bo = M.W(p + "self_attn.o_proj.bias") if dec.o_bias else np.zeros(dec.d)
    after = None
    if isinstance(dec, (R.Gemma2, R.Olmo2)):  # post_attention_layernorm on the branch
        w = M.W(p + "post_attention_layernorm.weight")
        after = ("rms", 1.0 + w if isinstance(dec, R.Gemma2) else w, None, dec.eps, "branch")
    return V, pr, wo.reshape(dec.d, dec.H, dec.dh), bo, after, y


BLOCKS = {"gpt2": gpt2_block, "bert": bert_block, "llama": llama_block, "gemma2": llama_block,
          "qwen3": llama_block, "olmo2": llama_block, "gemma3_text": llama_block, "mixtral": llama_block,
          "olmoe": llama_block}


# ---------------------------------------------------- the decomposition ---

def l_transform(x, gamma, kind):
    """contributions.py l_transform: (x − mean(x)) ⊙ w_ln as a linear map
    (RMSNorm: no mean)."""
    if kind == "layer":
        x = x - x.mean(axis=-1, keepdims=True)
    return x * gamma


def decompose(V, pr, dense, bo, after, h):
    """T (n, n, d), y (n, d) of one block (contributions.py, Kobayashi's
    BertNormOutput), with the papers' s_i."""
    transformed = np.einsum("hsv,dhv->hsd", V, dense)
    summed = np.einsum("hks,hsd->hksd", pr, transformed).sum(axis=0)
    n = h.shape[0]
    residual = np.einsum("sk,sd->skd", np.eye(n), h)
    if after is None:
        T = summed + residual
        return T, T.sum(axis=1) + bo
    kind, gamma, beta, eps, where = after
    pre = summed + residual if where == "sum" else summed
    z = pre.sum(axis=1) + bo  # the whole pre-norm vector
    zc = z - z.mean(axis=-1, keepdims=True) if kind == "layer" else z
    s = np.sqrt((zc * zc).mean(axis=-1, keepdims=True) + eps)  # √(var + ε), biased
    T = l_transform(pre, gamma, kind) / s[:, None, :]
    y = T.sum(axis=1) + l_transform(bo, gamma, kind) / s + (beta if beta is not None else 0)
    if where == "branch":
        T = T + residual
        y = y + h
    return T, y


def alti(T, y):
    """normalize_contributions('min_sum', resultant_norm = ‖y‖₁) of
    −‖T − y‖₁, pairwise_distance's eps left out."""
    imp = -np.abs(T - y[:, None, :]).sum(axis=-1)
    C = np.clip(imp + np.abs(y).sum(axis=-1)[:, None], 0, None)
    return C / C.sum(axis=-1, keepdims=True)


def mixing(T):
    """Kobayashi et al.'s AttnResLn-N mixing ratio."""
    keep = np.einsum("iid->id", T)
    mix = T.sum(axis=1) - keep
    a, b = np.linalg.norm(mix, axis=-1), np.linalg.norm(keep, axis=-1)
    return a / (a + b)


def code_variant(V, pr, dense, bo, after, h):
    """ALTI as the released contributions.py computes it, for the report
    only: 1/std(pre_ln + eps) (unbiased, eps outside the root) and
    pairwise_distance's eps = 1e-6 added to the difference."""
    transformed = np.einsum("hsv,dhv->hsd", V, dense)
    summed = np.einsum("hks,hsd->hksd", pr, transformed).sum(axis=0)
    pre = summed + np.einsum("sk,sd->skd", np.eye(h.shape[0]), h)
    kind, gamma, beta, eps, _ = after
    z = pre.sum(axis=1) + bo
    coef = 1.0 / (z + eps).std(axis=-1, ddof=1)[:, None]
    T = l_transform(pre, gamma, kind) * coef[:, None, :]
    y = (l_transform(pre, gamma, kind).sum(axis=1) + l_transform(bo, gamma, kind)) * coef + beta
    imp = -np.abs(T - y[:, None, :] + 1e-6).sum(axis=-1)
    C = np.clip(imp + np.abs(y).sum(axis=-1)[:, None], 0, None)
    return C / C.sum(axis=-1, keepdims=True)


def sparsemax(z):
    """Martins & Astudillo 2016, Algorithm 1, on each row over its finite
    entries (the allowed keys; -inf masked ones get 0)."""
    out = np.zeros_like(z)
    for idx in np.ndindex(*z.shape[:-1]):
        row = z[idx]
        ok = np.isfinite(row)
        srt = np.sort(row[ok])[::-1]
        k = np.arange(1, len(srt) + 1)
        cum = np.cumsum(srt)
        kz = k[1 + k * srt > cum].max()
        out[idx][ok] = np.maximum(row[ok] - (cum[kz - 1] - 1) / kz, 0)
    return out


def lensed(pr, lens):
    """The heads under the lens from the model's probabilities: log pr =
    S - logsumexp(S) row by row, and softmax(S/T) and sparsemax are both
    blind to a constant added to a row, so softmax(log pr / T) =
    softmax(S / T) and sparsemax(log pr) = sparsemax(S) (masked keys stay 0)."""
    with np.errstate(divide="ignore"):
        z = np.log(pr)
    if lens[0] == "sparsemax":
        return sparsemax(z)
    z = np.exp(z / lens[1] - (z / lens[1]).max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def reference(folder, ids, lens=None):
    """lens ("softmax", T) or ("sparsemax",): the heads under it
    (`contributions --temperature T`, `--normalizer sparsemax`): the terms
    take the lensed A and y is their sum, the counterfactual block output,
    not the model's (the hidden states stay the model's)."""
    M = R.Model(folder)
    mt = M.cfg["model_type"]
    _, hidden = M.forward(ids)
    out = {"C": [], "N": [], "r": [], "R": []}
    for l in range(hidden.shape[0] - 1):
        V, pr, dense, bo, after, y_hf = BLOCKS[mt](M, hidden[l], l)
        if lens is not None:
            pr = lensed(pr, lens)
        T, y = decompose(V, pr, dense, bo, after, hidden[l])
        err = float(np.max(np.abs(y - y_hf)) / max(1.0, float(np.max(np.abs(y_hf)))))
        if err > 1e-12 and lens is None:
            raise AssertionError("layer %d: the reference's terms miss y by %.3g" % (l, err))
        C = alti(T, y)
        if after is not None and after[4] == "sum":
            out.setdefault("code_gap", []).append(
                float(np.max(np.abs(code_variant(V, pr, dense, bo, after, hidden[l]) - C))))
        out["C"].append(C)
        out["N"].append(np.linalg.norm(T, axis=-1))
        out["r"].append(mixing(T))
        out["R"].append(C if l == 0 else C @ out["R"][-1])  # compute_joint_attention
    gap = out.pop("code_gap", None)
    if gap:
        print("%s: the released code's variant moves ALTI by up to %.2g (not compared)"
              % (os.path.basename(folder), max(gap)))
    return {k: np.stack(v) for k, v in out.items()}


# ------------------------------------------------------- the library ---

class View(ctypes.Structure):
    _fields_ = [("layer", ctypes.c_int), ("n", ctypes.c_size_t),
                ("M", ctypes.POINTER(ctypes.c_double)), ("R", ctypes.POINTER(ctypes.c_double)),
                ("mixing", ctypes.POINTER(ctypes.c_double)), ("heads", ctypes.c_size_t),
                ("stack", ctypes.c_int)]


class RunInput(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("ids", ctypes.POINTER(ctypes.c_int32)),
                ("n", ctypes.c_size_t), ("values", ctypes.POINTER(ctypes.c_double)),
                ("ndim", ctypes.c_int), ("shape", ctypes.POINTER(ctypes.c_size_t)),
                ("text", ctypes.c_long)]


FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(View), ctypes.c_void_p,
                      ctypes.POINTER(LA.Error))


def library(lib, folder, ids, method, compose, lens=None):
    """Per layer (M, R or None, mixing) from ag_run_contributions, f64;
    lens: under it (ag_run_options_set_normalizer)."""
    err = LA.Error()
    model = ctypes.c_void_p()
    if lib.ag_model_load(folder.encode(), ctypes.byref(model), ctypes.byref(err)):
        raise RuntimeError(err.message.decode())
    opt = ctypes.c_void_p(lib.ag_run_options_new())
    lib.ag_run_options_set(opt, b"precision", ctypes.c_double(64), ctypes.byref(err))
    if lens is not None:  # AG_NORMALIZER_SOFTMAX 0 (parameter T), SPARSEMAX 1
        kind, param = (0, lens[1]) if lens[0] == "softmax" else (1, 1.0)
    if lens is not None and lib.ag_run_options_set_normalizer(opt, kind, param, ctypes.byref(err)):
        raise RuntimeError(err.message.decode())
    arr = (ctypes.c_int32 * len(ids))(*ids)
    inp = RunInput(ctypes.sizeof(RunInput), arr, len(ids), None, 0, None, -1)
    try:
        return [v[1:] for v in views(lib, model, inp, opt, method, compose)]
    finally:
        lib.ag_model_free(model)


def views(lib, model, inp, opt, method, compose):
    """[(stack, M, R or None, mixing)] handed over by ag_run_contributions
    (stack "encoder", "decoder" or None); frees opt."""
    err, got = LA.Error(), []

    def take(v, user, e):
        n = v.contents.n
        M = np.ctypeslib.as_array(v.contents.M, (n, n)).copy()
        Rl = np.ctypeslib.as_array(v.contents.R, (n, n)).copy() if v.contents.R else None
        got.append(({1: "encoder", 2: "decoder"}.get(v.contents.stack), M, Rl,
                    np.ctypeslib.as_array(v.contents.mixing, (n,)).copy()))
        return 0

    recs = ctypes.c_void_p()
    rc = lib.ag_run_contributions(model, ctypes.byref(inp), opt, None, method, compose, FN(take),
                                  None, ctypes.byref(recs), ctypes.byref(err))
    lib.ag_record_list_free(recs)
    lib.ag_run_options_free(opt)
    if rc:
        raise RuntimeError(err.message.decode())
    return got


def prototypes(lib):
    P, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.ag_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(P), P]
    lib.ag_run_options_new.restype = P
    lib.ag_run_options_set.argtypes = [P, ctypes.c_char_p, D, P]
    lib.ag_run_options_set_normalizer.argtypes = [P, I, D, P]
    lib.ag_run_contributions.argtypes = [P, P, P, P, I, I, FN, P, ctypes.POINTER(P), P]
    lib.ag_seq2seq_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(P), P]
    lib.ag_seq2seq_stack.argtypes = [P, I]
    lib.ag_seq2seq_stack.restype = P
    for f in ("ag_record_list_free", "ag_run_options_free", "ag_model_free", "ag_seq2seq_free"):
        getattr(lib, f).argtypes = [P]


def compare(name, ref, lib, lens=None):
    alti_run = library(lib, ref["folder"], ref["ids"], 1, 1, lens)
    norms_run = library(lib, ref["folder"], ref["ids"], 0, 0, lens)
    fails = 0
    for l in range(len(ref["C"])):
        # the run's mixing is 1 - C_ii with alti, Kobayashi et al.'s r_i with norms-res
        C, Rl, mix = alti_run[l]
        N, _, r = norms_run[l]
        errs = {"C": np.max(np.abs(C - ref["C"][l])), "R": np.max(np.abs(Rl - ref["R"][l])),
                "1-Cii": np.max(np.abs(mix - (1 - np.diag(ref["C"][l])))),
                "r": np.max(np.abs(r - ref["r"][l])),
                "N": np.max(np.abs(N - ref["N"][l]) / np.maximum(1.0, np.abs(ref["N"][l])))}
        worst = max(errs.values())
        ok = worst <= TOL
        fails += not ok
        print("%s layer %d: %s  %s" % (name, l, " ".join("%s %.2g" % kv for kv in errs.items()),
                                        "ok" if ok else "FAIL"))
    return fails


# ------------------------------------------------- encoder–decoder pairs ---

PAIRS = ("t5", "t5-v1_1", "bart", "whisper-seq2seq")


def pair_block(cfg, W, stack, l, h, pr):
    """Layer l's self-attention sublayer of `stack` ("encoder" or
    "decoder"): as BLOCKS' (V, pr, dense, bo, after, y) from its input h
    and its probabilities pr, y the sublayer's output as hf_forward's
    t5_stack / bart_stack form it."""
    d = cfg["d_model"]
    if cfg["model_type"] == "t5":
        H, hd = cfg["num_heads"], cfg.get("d_kv", 64)
        p = "%s.block.%d.layer.0." % (stack, l)
        x = R.rms_norm(h, W(p + "layer_norm.weight"), cfg.get("layer_norm_epsilon", 1e-6))
        V = R.split_heads(R.linear(x, W, p + "SelfAttention.v", False), H, hd)
        o = R.linear(R.merge_heads(pr @ V), W, p + "SelfAttention.o", False)
        dense = W(p + "SelfAttention.o.weight").reshape(d, H, hd)
        return V, pr, dense, np.zeros(d), None, h + o
    H = cfg["%s_attention_heads" % stack]
    p = "%s.layers.%d." % (stack, l)
    if cfg["model_type"] == "whisper":  # pre-LN: h + out_proj(SA(self_attn_layer_norm(h)))
        x = R.layer_norm(h, W(p + "self_attn_layer_norm.weight"),
                         W(p + "self_attn_layer_norm.bias"), 1e-5)
        V = R.split_heads(R.linear(x, W, p + "self_attn.v_proj"), H)
        o = R.linear(R.merge_heads(pr @ V), W, p + "self_attn.out_proj")
        dense = W(p + "self_attn.out_proj.weight").reshape(d, H, d // H)
        return V, pr, dense, W(p + "self_attn.out_proj.bias"), None, h + o
    V = R.split_heads(R.linear(h, W, p + "self_attn.v_proj"), H)
    o = R.linear(R.merge_heads(pr @ V), W, p + "self_attn.out_proj")
    g, b = W(p + "self_attn_layer_norm.weight"), W(p + "self_attn_layer_norm.bias")
    dense = W(p + "self_attn.out_proj.weight").reshape(d, H, d // H)
    return V, pr, dense, W(p + "self_attn.out_proj.bias"), ("layer", g, b, 1e-5, "sum"), \
        R.layer_norm(h + o, g, b, 1e-5)


def pair_reference(folder, src, tgt, lens=None):
    """{stack: {"C", "N", "r", "R"}} of both stacks' self-attention; under
    lens as reference() (the terms take the lensed A, y their sum)."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    W = R.Weights(R.load_weights(folder), R.SEQ2SEQ.get(cfg["model_type"], (None, ["model."]))[1])
    run = R.seq2seq_forward(folder, src, tgt)
    out = {}
    for stack in ("encoder", "decoder"):
        A, hidden = run[stack + "_attentions"], run[stack + "_hidden_states"]
        ref = out[stack] = {"C": [], "N": [], "r": [], "R": []}
        for l in range(A.shape[0]):
            V, pr, dense, bo, after, y_hf = pair_block(cfg, W, stack, l, hidden[l], A[l])
            if lens is not None:
                pr = lensed(pr, lens)
            T, y = decompose(V, pr, dense, bo, after, hidden[l])
            err = float(np.max(np.abs(y - y_hf)) / max(1.0, float(np.max(np.abs(y_hf)))))
            if err > 1e-12 and lens is None:
                raise AssertionError("%s %s layer %d: the terms miss y by %.3g" % (folder, stack, l, err))
            C = alti(T, y)
            ref["C"].append(C)
            ref["N"].append(np.linalg.norm(T, axis=-1))
            ref["r"].append(mixing(T))
            ref["R"].append(C if l == 0 else C @ ref["R"][-1])
    return out


class PairInput(ctypes.Structure):
    _fields_ = RunInput._fields_ + [("target", ctypes.POINTER(ctypes.c_int32)),
                                    ("n_target", ctypes.c_size_t)]


def pair_library(lib, folder, src, tgt, method, compose, lens=None):
    """[(stack name, M, R or None, mixing)] of one pair's run, f64 (under
    lens as library())."""
    err = LA.Error()
    pair = ctypes.c_void_p()
    if lib.ag_seq2seq_load(folder.encode(), ctypes.byref(pair), ctypes.byref(err)):
        raise RuntimeError(err.message.decode())
    enc = lib.ag_seq2seq_stack(pair, 1)  # AG_STACK_ENCODER
    opt = ctypes.c_void_p(lib.ag_run_options_new())
    lib.ag_run_options_set(opt, b"precision", ctypes.c_double(64), ctypes.byref(err))
    if lens is not None:  # AG_NORMALIZER_SOFTMAX 0 (parameter T), SPARSEMAX 1
        kind, param = (0, lens[1]) if lens[0] == "softmax" else (1, 1.0)
        if lib.ag_run_options_set_normalizer(opt, kind, param, ctypes.byref(err)):
            raise RuntimeError(err.message.decode())
    b = (ctypes.c_int32 * len(tgt))(*tgt)
    if isinstance(src, np.ndarray):  # Whisper's input_features (n_mels, T)
        shape = (ctypes.c_size_t * 2)(*src.shape)
        vals = src.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        inp = PairInput(ctypes.sizeof(PairInput), None, 0, vals, 2, shape, -1, b, len(tgt))
    else:
        a = (ctypes.c_int32 * len(src))(*src)
        inp = PairInput(ctypes.sizeof(PairInput), a, len(src), None, 0, None, -1, b, len(tgt))
    try:
        return views(lib, enc, inp, opt, method, compose)
    finally:
        lib.ag_seq2seq_free(pair)


def compare_pair(lib, name, lens=None):
    folder = os.path.join(ROOT, "tests", "data", "models", "arch", name)
    ref_dir = os.path.join(ROOT, "tests", "data", "archref", name)
    with open(os.path.join(ref_dir, "ids.json")) as f:
        ids = json.load(f)
    src = ids.get("src")
    if src is None:  # Whisper: the stored features at float32, as the CLI takes them
        src = np.ascontiguousarray(np.load(os.path.join(ref_dir, "features.npy"))
                                   .astype(np.float32).astype(np.float64))
    ref = pair_reference(folder, src, ids["tgt"], lens)
    alti_run = pair_library(lib, folder, src, ids["tgt"], 1, 1, lens)
    norms_run = pair_library(lib, folder, src, ids["tgt"], 0, 0, lens)
    if lens is not None:
        name = "%s %s" % (name, " ".join(str(x) for x in lens))
    want = [(s, l) for s in ("encoder", "decoder") for l in range(len(ref[s]["C"]))]
    got = [(x[0], y[0]) for x, y in zip(alti_run, norms_run)]
    if got != [(s, s) for s, _ in want] or len(norms_run) != len(want):
        print("%s: views %s, want the stacks of %s  FAIL" % (name, got, want))
        return 1
    fails = 0
    for (stack, l), (_, C, Rl, mix), (_, N, _, r) in zip(want, alti_run, norms_run):
        e = ref[stack]
        errs = {"C": np.max(np.abs(C - e["C"][l])), "R": np.max(np.abs(Rl - e["R"][l])),
                "1-Cii": np.max(np.abs(mix - (1 - np.diag(e["C"][l])))),
                "r": np.max(np.abs(r - e["r"][l])),
                "N": np.max(np.abs(N - e["N"][l]) / np.maximum(1.0, np.abs(e["N"][l])))}
        ok = max(errs.values()) <= TOL
        fails += not ok
        print("%s %s layer %d: %s  %s" % (name, stack, l,
                                           " ".join("%s %.2g" % kv for kv in errs.items()),
                                           "ok" if ok else "FAIL"))
    return fails


# contributions --temperature T (a sharper and a flatter softmax) and
# --normalizer sparsemax (issue 28)
LENSES = (("softmax", 0.5), ("softmax", 3.0), ("sparsemax",))


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    lib = LA.load(argv[1], "check_alti")
    if lib is None:
        return 0
    prototypes(lib)
    fails = 0
    for name, folder in MODELS:
        M = R.Model(folder)
        n = min(9, M.limit or 9)
        ids = [int((11 * i + 5) % M.vocab_size) for i in range(n)]
        ref = reference(folder, ids)
        ref.update(folder=folder, ids=ids)
        fails += compare(name, ref, lib)
        # the same under each lens: the counterfactual block
        for lens in LENSES:
            tag = "%s %s" % (name, " ".join(str(x) for x in lens))
            got = reference(folder, ids, lens)
            moved = float(np.max(np.abs(got["C"] - ref["C"])))
            if moved < 1e-6:  # else the check could not tell a lens from none
                print("%s: the lens moves ALTI by %.2g only  FAIL" % (tag, moved))
                fails += 1
            got.update(folder=folder, ids=ids)
            fails += compare(tag, got, lib, lens)
    for name in PAIRS:
        for lens in (None,) + LENSES:
            fails += compare_pair(lib, name, lens)
    print("check_alti: %s" % ("ok" if not fails else "%d failure(s)" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
