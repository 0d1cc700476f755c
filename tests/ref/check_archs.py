#!/usr/bin/python3
"""Check the engine on the random-weight architecture folders of issue 10.

Usage: /usr/bin/python3 tests/ref/check_archs.py path/to/attngeom [NAME ...]

With NAMEs, part 2 runs on those folders only (parts 1 and 3 as always).

Folders: tests/data/models/arch/<name>/ (made by tools/make_arch_models.py),
references: tests/data/archref/<name>/{ids.json, attn.npy, hidden.npy} from
tests/ref/hf_forward.py.

1. The reference itself:
   a. hf_forward reproduces the PyTorch fixtures (check_models.py part 1);
   b. the stored references are what hf_forward computes now (to 1e-13) and
      their zeros are exactly the keys HF's mask hides (causal, sliding
      window per layer);
   c. equivalent folders through the architectures the engine had before
      issue 10, themselves verified against PyTorch (gpt2, bert, llama):
      OPT pre-LN written as GPT-2, RoBERTa / XLM-RoBERTa / DistilBERT as
      BERT, Phi-3 as LLaMA (on an input no longer than its window), LLaMA
      dynamic RoPE as plain RoPE with HF's rescaled base, Gemma as LLaMA
      with (1 + w) and sqrt(hidden_size) folded into float32 weights, and
      the generator's llama / mistral / qwen2 variants with inputs inside
      the window: `attention --precision f64` on the equivalent folder must
      give the reference of the original to 1e-9 (Gemma: 1e-6, the float32
      rounding of the folded weights, ~6e-8 relative, carried through two
      layers); and Gemma-3 with Transformers v5's per-layer-type
      rope_parameters in place of rope_theta / rope_scaling /
      rope_local_base_freq.
2. Every folder: `attention FOLDER --tokens IDS -o A.npy --hidden H.npy`
   with --precision f64 (max |attn diff| <= 1e-9, hidden <= 1e-9 *
   max(1, |ref|)) and the default f32 (1e-5 and 1e-4 * max(1, |ref|)), the
   masked probabilities exactly 0; `info FOLDER`, `analyze FOLDER --tokens
   IDS --metrics all` and `weights FOLDER` exit 0.
2b. The fused layouts of bloom, mpt and the falcon folders: `weights`
   qk_sigma_max and ov_sigma_max per head against numpy's SVD of W_Q W_K^T
   and W_V W_O split as hf_forward splits them (1e-12 relative).
2c. Router ties (mixture of experts): a Mixtral folder with top-1 routing
   and two equal router rows (experts 0 and 3) follows torch.topk (the lower
   index wins), checked on it and on the copy with the two experts' weights
   swapped, whose reference must differ.
3. Errors, on copies made in a temporary folder: an unknown model_type, a
   rope_scaling of type "ntk", a longrope long_factor of the wrong length,
   GPT-J's rotary_dim null with 4 heads, a missing tensor (among them
   Qwen3's and OLMo-2's QK-norm weights, an expert's, a router's,
   Qwen2-MoE's shared expert gate), OLMoE's clip_qkv set and a top-k
   above the experts each give exactly one
   line on stderr naming the field value or tensor, and exit 1.
Failures are reported per folder; inputs of failing attention cases are saved
under /tmp/ag_arch_mismatch/. Exits 1 on any failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_models as CM  # noqa: E402
import hf_forward as R  # noqa: E402
import make_arch_models as MK  # noqa: E402

ARCH = os.path.join(ROOT, "tests", "data", "models", "arch")
REF = os.path.join(ROOT, "tests", "data", "archref")
TOL = CM.TOL
CM.MISMATCH_DIR = "/tmp/ag_arch_mismatch"


def load_ref(name):
    d = os.path.join(REF, name)
    with open(os.path.join(d, "ids.json")) as f:
        ids = json.load(f)["ids"]
    return ids, np.load(os.path.join(d, "attn.npy")), np.load(os.path.join(d, "hidden.npy"))


def run(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def engine_f64(cli, folder, ids, tmp):
    """(attn, hidden) of `attention --precision f64`, or an error string."""
    a, h = os.path.join(tmp, "eq_a.npy"), os.path.join(tmp, "eq_h.npy")
    rc, _, err = run(cli, ["attention", folder, "--tokens", ",".join(map(str, ids)), "-o", a,
                           "--hidden", h, "--precision", "f64"])
    if rc != 0:
        return "exit %d: %s" % (rc, err.strip())
    return np.load(a), np.load(h)


# ------------------------------------------- 1c. equivalent folders ---

def _write(folder, cfg, tensors):
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    MK.write_safetensors(os.path.join(folder, "model.safetensors"),
                         {k: (v, "F32") for k, v in tensors.items()})


def _tensors(name):
    return R.load_weights(os.path.join(ARCH, name))


def _cfg(name):
    with open(os.path.join(ARCH, name, "config.json")) as f:
        return json.load(f)


def opt_as_gpt2(name, out):
    """OPT pre-LN = GPT-2 with wpe = embed_positions[2:], Conv1D = Linear^T,
    c_attn = [Wq^T | Wk^T | Wv^T], ReLU (q scaled after its bias = scores
    scaled)."""
    c, t = _cfg(name), _tensors(name)
    p = "model.decoder."
    T = {"wte.weight": t[p + "embed_tokens.weight"], "wpe.weight": t[p + "embed_positions.weight"][2:],
         "ln_f.weight": t[p + "final_layer_norm.weight"], "ln_f.bias": t[p + "final_layer_norm.bias"]}
    for l in range(c["num_hidden_layers"]):
        s, d = "%slayers.%d." % (p, l), "h.%d." % l
        T[d + "ln_1.weight"], T[d + "ln_1.bias"] = t[s + "self_attn_layer_norm.weight"], t[s + "self_attn_layer_norm.bias"]
        T[d + "attn.c_attn.weight"] = np.concatenate([t[s + "self_attn.%s_proj.weight" % x].T for x in "qkv"], 1)
        T[d + "attn.c_attn.bias"] = np.concatenate([t[s + "self_attn.%s_proj.bias" % x] for x in "qkv"])
        T[d + "attn.c_proj.weight"], T[d + "attn.c_proj.bias"] = t[s + "self_attn.out_proj.weight"].T, t[s + "self_attn.out_proj.bias"]
        T[d + "ln_2.weight"], T[d + "ln_2.bias"] = t[s + "final_layer_norm.weight"], t[s + "final_layer_norm.bias"]
        T[d + "mlp.c_fc.weight"], T[d + "mlp.c_fc.bias"] = t[s + "fc1.weight"].T, t[s + "fc1.bias"]
        T[d + "mlp.c_proj.weight"], T[d + "mlp.c_proj.bias"] = t[s + "fc2.weight"].T, t[s + "fc2.bias"]
    g = {"model_type": "gpt2", "n_embd": c["hidden_size"], "n_head": c["num_attention_heads"],
         "n_layer": c["num_hidden_layers"], "n_positions": c["max_position_embeddings"],
         "n_inner": c["ffn_dim"], "activation_function": "relu", "layer_norm_epsilon": 1e-5,
         "vocab_size": c["vocab_size"]}
    _write(out, g, T)


BERT_NAMES = {  # distilbert layer tensor -> bert layer tensor
    "attention.q_lin": "attention.self.query", "attention.k_lin": "attention.self.key",
    "attention.v_lin": "attention.self.value", "attention.out_lin": "attention.output.dense",
    "sa_layer_norm": "attention.output.LayerNorm", "ffn.lin1": "intermediate.dense",
    "ffn.lin2": "output.dense", "output_layer_norm": "output.LayerNorm"}


def _bert_cfg(c, eps, act, positions):
    return {"model_type": "bert", "hidden_size": c.get("hidden_size", c.get("dim")),
            "num_attention_heads": c.get("num_attention_heads", c.get("n_heads")),
            "num_hidden_layers": c.get("num_hidden_layers", c.get("n_layers")),
            "intermediate_size": c.get("intermediate_size", c.get("hidden_dim")),
            "max_position_embeddings": positions, "type_vocab_size": 1, "layer_norm_eps": eps,
            "hidden_act": act, "vocab_size": c["vocab_size"]}


def roberta_as_bert(name, out):
    """RoBERTa = BERT whose position table starts at row padding_idx + 1."""
    c, t = _cfg(name), _tensors(name)
    skip = c["pad_token_id"] + 1
    T = {"bert." + k[len("roberta."):]: v for k, v in t.items() if k.startswith("roberta.")}
    T["bert.embeddings.position_embeddings.weight"] = T["bert.embeddings.position_embeddings.weight"][skip:]
    _write(out, _bert_cfg(c, c["layer_norm_eps"], c["hidden_act"], c["max_position_embeddings"] - skip), T)


def distilbert_as_bert(name, out):
    """DistilBERT = BERT with a zero token-type embedding, eps 1e-12, its
    layer tensors renamed (q / sqrt(d_h) = scores / sqrt(d_h))."""
    c, t = _cfg(name), _tensors(name)
    T = {"bert.embeddings.token_type_embeddings.weight": np.zeros((1, c["dim"]))}
    for k, v in t.items():
        if k.startswith("distilbert.embeddings."):
            T["bert." + k[len("distilbert."):]] = v
        elif k.startswith("distilbert.transformer.layer."):
            l, rest = k[len("distilbert.transformer.layer."):].split(".", 1)
            mod, leaf = rest.rsplit(".", 1)
            T["bert.encoder.layer.%s.%s.%s" % (l, BERT_NAMES[mod], leaf)] = v
    _write(out, _bert_cfg(c, 1e-12, c["activation"], c["max_position_embeddings"]), T)


def _llama_cfg(c, **kw):
    keys = ("hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "intermediate_size",
            "rms_norm_eps", "rope_theta", "vocab_size", "max_position_embeddings", "head_dim", "hidden_act")
    g = {k: c[k] for k in keys if k in c}
    g.update(model_type="llama", **kw)
    return g


def phi3_as_llama(name, out):
    """Phi-3 = LLaMA with qkv_proj split into q | k | v rows and gate_up_proj
    into gate | up halves (without its window: the input is no longer)."""
    c, t = _cfg(name), _tensors(name)
    T = {}
    nq = c["num_attention_heads"] * (c["hidden_size"] // c["num_attention_heads"])
    nkv = c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"])
    for k, v in t.items():
        if k.endswith("self_attn.qkv_proj.weight"):
            b = k[:-len("qkv_proj.weight")]
            T[b + "q_proj.weight"], T[b + "k_proj.weight"], T[b + "v_proj.weight"] = v[:nq], v[nq:nq + nkv], v[nq + nkv:]
        elif k.endswith("mlp.gate_up_proj.weight"):
            b = k[:-len("gate_up_proj.weight")]
            T[b + "gate_proj.weight"], T[b + "up_proj.weight"] = v[:len(v) // 2], v[len(v) // 2:]
        else:
            T[k] = v
    _write(out, _llama_cfg(c), T)


def dynamic_as_plain(name, out, n):
    """Dynamic NTK RoPE over n > max_position_embeddings tokens = plain RoPE
    with base·((factor·n/max) − (factor − 1))^(dim/(dim − 2))
    (modeling_rope_utils.py @ef46806472a6 _compute_dynamic_ntk_parameters)."""
    c, t = _cfg(name), _tensors(name)
    f, P = c["rope_scaling"]["factor"], c["max_position_embeddings"]
    dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    theta = c["rope_theta"] * ((f * n / P) - (f - 1)) ** (dim / (dim - 2))
    _write(out, _llama_cfg(c, rope_theta=theta, max_position_embeddings=max(n, P)), t)


def gemma_as_llama(name, out):
    """Gemma = LLaMA with embed_tokens·sqrt(hidden_size) and norm weights
    1 + w folded in (rounded to float32), gelu_pytorch_tanh."""
    c, t = _cfg(name), _tensors(name)
    T = {}
    for k, v in t.items():
        if k == "model.embed_tokens.weight":
            v = v * c["hidden_size"] ** 0.5
        elif k.endswith("norm.weight"):
            v = 1.0 + v
        T[k] = v
    _write(out, _llama_cfg(c, hidden_act=c["hidden_activation"]), T)


# name, converter, tolerance, ids (None: those of ids.json)
def gemma3_as_v5(name, out):
    """The same Gemma-3 folder with Transformers v5's config: rope_theta,
    rope_scaling and rope_local_base_freq moved into rope_parameters per
    layer type (modeling_gemma3.py @0018aa647bb1 Gemma3RotaryEmbedding reads
    rope_parameters[layer_type])."""
    shutil.copytree(os.path.join(ARCH, name), out)

    def v5(c):
        full = dict(c.pop("rope_scaling") or {"rope_type": "default"}, rope_theta=c.pop("rope_theta"))
        c["rope_parameters"] = {"full_attention": full,
                                "sliding_attention": {"rope_type": "default",
                                                      "rope_theta": c.pop("rope_local_base_freq")}}
    _edit_config(out, v5)


def qwen2_moe_window_layers(name, out):
    """The same Qwen2-MoE folder with max_window_layers 2: its eager mask
    (modeling_qwen2_moe.py @1c351314a42a, _prepare_4d_causal_attention_mask_
    with_cache_position) bands every layer whatever max_window_layers, which
    only Qwen2MoeFlashAttention2 reads, so the stored reference still holds."""
    shutil.copytree(os.path.join(ARCH, name), out)
    _edit_config(out, lambda c: c.update(max_window_layers=2))


def moe_as_v5(name, out):
    """The same MoE folder saved as Transformers v5 holds it
    (make_arch_models.fuse_experts: mlp.experts.gate_up_proj [E, 2ff, d],
    mlp.experts.down_proj [E, d, ff], Mixtral's block_sparse_moe. -> mlp)."""
    c = _cfg(name)
    _write(out, c, MK.fuse_experts(c, _tensors(name)))


EQUIVALENTS = [
    ("opt", opt_as_gpt2, 1e-9),
    ("roberta", roberta_as_bert, 1e-9),
    ("xlm-roberta", roberta_as_bert, 1e-9),
    ("distilbert", distilbert_as_bert, 1e-9),
    ("phi3", phi3_as_llama, 1e-9),
    ("llama-dynamic", None, 1e-9),
    ("gemma", gemma_as_llama, 1e-6),
    ("gemma3", gemma3_as_v5, 1e-9),
    ("qwen2-moe", qwen2_moe_window_layers, 1e-9),
    ("mixtral", moe_as_v5, 1e-9),
    ("qwen2-moe", moe_as_v5, 1e-9),
]


def check_equivalents(cli, tmp, failures):
    rows = []
    for name, conv, tol in EQUIVALENTS:
        ids, ra, rh = load_ref(name)
        folder = os.path.join(tmp, "eq-%s-%s" % (name, conv.__name__ if conv else "plain"))
        if name == "phi3":  # no longer than the window: HF's mask is then plain causal
            ids = ids[:_cfg(name)["sliding_window"]]
            ra, rh = R.Model(os.path.join(ARCH, name)).forward(ids)
        if conv is None:
            dynamic_as_plain(name, folder, len(ids))
        else:
            conv(name, folder)
        if conv is moe_as_v5:  # hf_forward.py reads the fused names too
            fa, fh = R.Model(folder).forward(ids)
            if not (np.max(np.abs(fa - ra)) <= tol and R.hidden_err(fh, rh) <= tol):
                failures.append("reference %s as v5: hf_forward.py differs from the stored reference" % name)
        rows.append(compare_engine(cli, name, folder, ids, ra, rh, tol, tmp, failures))
    cc = os.path.join(tmp, "crosscheck")
    with open(os.devnull, "w") as null:
        old, sys.stdout = sys.stdout, null
        try:
            MK.main(["make_arch_models.py", "--crosscheck", cc])
        finally:
            sys.stdout = old
    for name in MK.CROSSCHECK:
        folder = os.path.join(cc, name)
        with open(os.path.join(folder, "ids.json")) as f:
            ids = json.load(f)["ids"]
        rows.append(compare_engine(cli, name, folder, ids, np.load(os.path.join(folder, "attn.npy")),
                                   np.load(os.path.join(folder, "hidden.npy")), 1e-9, tmp, failures))
    return rows


def compare_engine(cli, name, folder, ids, ra, rh, tol, tmp, failures):
    got = engine_f64(cli, folder, ids, tmp)
    if isinstance(got, str):
        failures.append("reference %s (equivalent folder): %s" % (name, got))
        return (name, float("inf"), float("inf"), tol)
    a, h = got
    if a.shape != ra.shape or h.shape != rh.shape:
        failures.append("reference %s (equivalent folder): shapes %s %s, expected %s %s"
                        % (name, a.shape, h.shape, ra.shape, rh.shape))
        return (name, float("inf"), float("inf"), tol)
    ea, eh = float(np.max(np.abs(a - ra))), R.hidden_err(h, rh)
    if not (ea <= tol and eh <= tol):
        failures.append("reference %s (equivalent folder): attn err %.3g, hidden err %.3g > %g"
                        % (name, ea, eh, tol))
    return (name, ea, eh, tol)


# --------------------------------------------------- 1b. stored refs ---

def check_stored(failures):
    for name in MK.CASES:
        ids, ra, rh = load_ref(name)
        m = R.Model(os.path.join(ARCH, name))
        a, h = m.forward(ids)
        ea, eh = float(np.max(np.abs(a - ra))), R.hidden_err(h, rh)
        if not (ea <= 1e-13 and eh <= 1e-13):
            failures.append("reference %s: stored archref differs from hf_forward (attn %.3g, hidden %.3g): "
                            "rerun tools/make_arch_models.py" % (name, ea, eh))
        if not np.array_equal(ra == 0, np.broadcast_to(m.masked_keys(len(ids)), ra.shape)):
            failures.append("reference %s: its zeros are not exactly the masked keys" % name)
    for name in MK.SEQ2SEQ_CASES:  # encoder-decoder: one array per kind (make_arch_models.py)
        with open(os.path.join(REF, name, "ids.json")) as f:
            ids = json.load(f)
        src = ids["src"] if "src" in ids else np.load(os.path.join(REF, name, "features.npy"))
        out = R.seq2seq_forward(os.path.join(ARCH, name), src, ids["tgt"])
        for k in MK.SEQ2SEQ_ARRAYS:
            e = R.hidden_err(out[k], np.load(os.path.join(REF, name, k + ".npy")))
            if not e <= 1e-13:
                failures.append("reference %s: stored %s differs from hf_forward (%.3g): rerun "
                                "tools/make_arch_models.py" % (name, k, e))
        n = len(ids["tgt"])
        if not np.array_equal(out["decoder_attentions"] == 0,
                              np.broadcast_to(np.triu(np.ones((n, n), dtype=bool), 1), out["decoder_attentions"].shape)):
            failures.append("reference %s: the decoder's zeros are not exactly the causal mask" % name)


# ------------------------------------------------ 2. every folder -----

def check_folder(ch, cli, name, tmp):
    folder = os.path.join(ARCH, name)
    ids, ra, rh = load_ref(name)
    masked = ra == 0
    case = {"name": name, "text": None, "ids": ids}
    err = {}
    for prec in ("f64", "f32"):
        err[prec] = ch.attention(name, folder, case, ra, rh, prec, masked)
    tok = ",".join(map(str, ids))
    for args in (["info", folder], ["analyze", folder, "--tokens", tok, "--metrics", "all"], ["weights", folder]):
        rc, _, e = run(cli, args)
        if rc != 0:
            msg = "%s: `%s` exit %d: %s" % (name, " ".join(args[:1]), rc, e.strip())
            ch.failures.append(msg)
            print("FAIL", msg)
    check_info_qk(ch, cli, folder, name)
    return err


# What `info` says of the QK-norm folders (issue 29): the norm's placement,
# OLMo-2's missing pre-norms, Gemma-3's sliding-layer RoPE base.
INFO_QK = {"qwen3": {"qk_norm": "RMSNorm per head over head_dim"},
           "olmo2": {"qk_norm": "RMSNorm over the whole q and k projections", "pre_norms": False},
           "gemma3": {"qk_norm": "RMSNorm per head over head_dim", "rope_local_theta": 10000.0,
                      "window_layers": "0, 1"},
           "modernbert": {"causal": False, "layer0_pre_norm": False, "final_norm": False,
                          "rope_theta": 160000.0, "rope_local_theta": 10000.0, "sliding_window": 4,
                          "window_layers": "1, 2",
                          "window_kind": "bidirectional band |i - j| < sliding_window"},
           "modernbert-v5-bias": {"sliding_window": 3, "window_layers": "1, 2",
                                  "rope_theta": 160000.0, "rope_local_theta": 10000.0},
           "mixtral": {"experts": 4, "experts_per_token": 2, "d_ff_expert": 16, "d_ff_shared_expert": 0,
                       "topk_renormalised": True, "expert_layers": "all", "window_layers": "all"},
           "qwen2-moe": {"experts": 4, "experts_per_token": 2, "d_ff_expert": 16, "d_ff_shared_expert": 24,
                         "topk_renormalised": False, "expert_layers": "0, 2", "d_ff": 32},
           "olmoe": {"qk_norm": "RMSNorm over the whole q and k projections", "experts": 4,
                     "topk_renormalised": True, "expert_layers": "all"}}


def check_info_qk(ch, cli, folder, name):
    rc, out, _ = run(cli, ["info", folder, "--format", "json"])
    got = json.loads(out)["config"] if rc == 0 else {}
    for key, want in INFO_QK.get(name, {}).items():
        if got.get(key) != want:
            msg = "%s: info %s = %r, expected %r" % (name, key, got.get(key), want)
            ch.failures.append(msg)
            print("FAIL", msg)
# ------------------------- 2b. family D through the fused layouts --

def _head_weights(cfg, W, l):
    """q, k, v [H, d, d_h] ([in, out] per query head, kv repeated) and W_O
    [H·d_h, d] of layer l, split as hf_forward splits the fused projection of
    the ALiBi-era layouts (BLOOM per head, MPT blocks, Falcon's three)."""
    mt = cfg["model_type"]
    if mt == "falcon":
        H, d = cfg["num_attention_heads"], cfg["hidden_size"]
        q, k, v = R.falcon_heads(cfg, W("h.%d.self_attention.query_key_value.weight" % l).T, d, H, d // H)
        return q, k, v, W("h.%d.self_attention.dense.weight" % l).T
    if mt == "bloom":
        H, d = cfg["n_head"], cfg["hidden_size"]
        f = W("h.%d.self_attention.query_key_value.weight" % l).T.reshape(d, H, 3, d // H)
        q, k, v = (f[:, :, i].transpose(1, 0, 2) for i in range(3))
        return q, k, v, W("h.%d.self_attention.dense.weight" % l).T
    H, d = cfg["n_heads"], cfg["d_model"]
    f = W("blocks.%d.attn.Wqkv.weight" % l).T
    q, k, v = (R.split_heads(f[:, i * d:(i + 1) * d], H) for i in range(3))
    return q, k, v, W("blocks.%d.attn.out_proj.weight" % l).T


WEIGHT_LAYOUTS = ("bloom", "mpt", "falcon", "falcon-alibi", "falcon-7b-like", "falcon-one-ln", "falcon-mq-seq")


def check_weight_layouts(cli, names, failures):
    """`weights --metrics qk_sigma_max,ov_sigma_max` against numpy's SVD of
    W_Q W_Kᵀ and W_V W_O per head (1e-12 relative): the head columns of every
    fused layout as family D reads them."""
    for name in names:
        folder = os.path.join(ARCH, name)
        m = R.Model(folder)
        rc, out, err = run(cli, ["weights", folder, "--format", "json", "--metrics", "qk_sigma_max,ov_sigma_max"])
        if rc != 0:
            failures.append("%s: weights exit %d: %s" % (name, rc, err.strip()))
            continue
        worst = 0.0
        for r in json.loads(out)["records"]:
            q, k, v, wo = _head_weights(m.cfg, m.W, r["layer"])
            h, hd = r["head"], q.shape[-1]
            qk = np.linalg.svd(q[h] @ k[h].T, compute_uv=False)[0]
            ov = np.linalg.svd(v[h] @ wo[h * hd:(h + 1) * hd], compute_uv=False)[0]
            worst = max(worst, abs(qk - r["qk_sigma_max"]) / qk, abs(ov - r["ov_sigma_max"]) / ov)
        print("  weights %-16s max rel err %.2e  %s" % (name, worst, "ok" if worst <= 1e-12 else "FAIL"))
        if not worst <= 1e-12:
            failures.append("%s: family D differs from the dense SVD by %.3g" % (name, worst))


# -------------------------------------------- 2c. the router's ties ---

def _tie_folder(folder, swap):
    """mixtral with num_experts_per_tok 1 and router row 3 a copy of row 0
    (every layer): a token whose best expert is 0 or 3 meets a tie, which
    torch.topk gives to the lower index, expert 0. swap: experts 0 and 3
    exchange their weights (the routing stays the same)."""
    cfg, t = dict(_cfg("mixtral"), num_experts_per_tok=1), dict(_tensors("mixtral"))
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d.block_sparse_moe." % l
        t[p + "gate.weight"] = t[p + "gate.weight"].copy()
        t[p + "gate.weight"][3] = t[p + "gate.weight"][0]
        for w in ("w1", "w2", "w3") if swap else ():
            a, b = p + "experts.0.%s.weight" % w, p + "experts.3.%s.weight" % w
            t[a], t[b] = t[b], t[a]
    _write(folder, cfg, t)


def check_router_ties(ch, cli, tmp, failures):
    """Both tie folders against their references (f64 1e-9, f32 as every
    folder); the two references must differ, else no token met the tie and
    the check could not fail."""
    ids, _, _ = load_ref("mixtral")
    refs = []
    for swap in (0, 1):
        folder = os.path.join(tmp, "tie%d" % swap)
        _tie_folder(folder, swap)
        ra, rh = R.Model(folder).forward(ids)
        refs.append(rh)
        case = {"name": "mixtral-tie%d" % swap, "text": None, "ids": ids}
        for prec in ("f64", "f32"):
            e = ch.attention(case["name"], folder, case, ra, rh, prec, ra == 0)
            print("  router tie, experts %s, %s: %s" % ("swapped" if swap else "as stored", prec, e))
    if not np.max(np.abs(refs[0] - refs[1])) > 1e-3:
        failures.append("router ties: swapping tied experts 0 and 3 changes nothing: no token met the tie")


# ---------------------------------------------------- 3. error cases --

def _copy(name, tmp, tag):
    """A copy of folder `name` under a neutral path (a message naming the
    path must not pass for one naming the field)."""
    d = os.path.join(tmp, "err%d" % tag)
    shutil.copytree(os.path.join(ARCH, name), d)
    return d


def _edit_config(folder, fn):
    p = os.path.join(folder, "config.json")
    with open(p) as f:
        c = json.load(f)
    fn(c)
    with open(p, "w") as f:
        json.dump(c, f)


def _drop_tensor(folder, tensor):
    p = os.path.join(folder, "model.safetensors")
    t = {}
    with open(p, "rb") as f:
        raw = f.read()
    hlen = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + hlen])
    for k, info in header.items():
        if k != "__metadata__" and k != tensor:
            b, e = info["data_offsets"]
            t[k] = (info, raw[8 + hlen + b:8 + hlen + e])
    out, off = {}, 0
    for k, (info, data) in t.items():
        out[k] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    with open(p, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(d for _, d in t.values()))


def check_errors(cli, tmp, failures):
    ids, _, _ = load_ref("llama-linear")
    tok = ",".join(map(str, ids))
    cases = []
    d = _copy("llama-linear", tmp, 0)
    _edit_config(d, lambda c: c.update(model_type="falcon_mamba_xyz"))
    cases.append(("unknown model_type", d, "falcon_mamba_xyz"))
    d = _copy("llama-linear", tmp, 1)
    _edit_config(d, lambda c: c.update(rope_scaling={"rope_type": "ntk", "factor": 2.0}))
    cases.append(("rope_scaling ntk", d, "ntk"))
    d = _copy("phi3-longrope", tmp, 5)
    _edit_config(d, lambda c: c["rope_scaling"].update(long_factor=[1.0, 2.0]))
    cases.append(("longrope long_factor length", d, "long_factor"))
    d = _copy("gptj", tmp, 6)  # pos_embd_dim = n_embd: HF cannot broadcast it over 4 heads
    _edit_config(d, lambda c: c.update(rotary_dim=None))
    cases.append(("gptj rotary_dim null", d, "rotary_dim"))
    for k, (name, tensor) in enumerate((("llama-linear", "model.layers.1.self_attn.k_proj.weight"),
                         ("gpt-neox-parallel", "gpt_neox.layers.0.attention.query_key_value.weight"),
                         ("gemma2", "model.layers.2.post_feedforward_layernorm.weight"),
                         ("qwen3", "model.layers.1.self_attn.k_norm.weight"),
                         ("olmo2", "model.layers.0.self_attn.q_norm.weight"),
                         # layer 1's attn_norm (layer 0 has none); norm_bias true: the biases
                         ("modernbert", "model.layers.1.attn_norm.weight"),
                         ("modernbert-v5-bias", "model.layers.2.mlp_norm.bias"),
                         ("mixtral", "model.layers.1.block_sparse_moe.experts.3.w2.weight"),
                         ("qwen2-moe", "model.layers.2.mlp.shared_expert_gate.weight"),
                         ("olmoe", "model.layers.0.mlp.gate.weight"),
                         ("qwen2-moe-v5", "model.layers.2.mlp.experts.down_proj"))):
        d = _copy(name, tmp, 7 + k)  # 2..6 taken above
        _drop_tensor(d, tensor)
        short = tensor.split(".", 1)[1]  # the message may name it without the class prefix
        cases.append(("missing tensor (%s)" % name, d, short))
    base = len(cases) + 3  # tags 0, 1, 5, 6, then 7 + k above
    for k, (name, edit, word) in enumerate((("olmoe", {"clip_qkv": 8.0}, "clip_qkv"),
                                            ("mixtral", {"num_experts_per_tok": 5}, "num_experts_per_tok"))):
        d = _copy(name, tmp, base + k)
        _edit_config(d, lambda c, e=edit: c.update(e))
        cases.append(("%s %s" % (name, word), d, word))
    for what, folder, word in cases:
        rc, _, err = run(cli, ["attention", folder, "--tokens", tok, "-o", os.path.join(tmp, "e.npy")])
        lines = err.strip().split("\n") if err.strip() else []
        ok = rc == 1 and len(lines) == 1 and word in lines[0]
        print("  error %-32s exit %d: %s  %s" % (what, rc, err.strip(), "ok" if ok else "FAIL"))
        if not ok:
            failures.append("error case %s: exit %d, stderr %r (want exit 1, one line naming %r)"
                            % (what, rc, err, word))


# ------------------------------------------------------------ main ----

def main(argv):
    if len(argv) < 2:
        print("usage: check_archs.py path/to/attngeom", file=sys.stderr)
        return 2
    cli = os.path.abspath(argv[1])
    t0 = time.time()
    if os.path.isdir(CM.MISMATCH_DIR):
        shutil.rmtree(CM.MISMATCH_DIR)
    ref_fail = []
    # 1a. the reference against PyTorch
    for name, folder in CM.model_folders():
        k, ea, eh, probs = R.check_fixtures(R.Model(folder), folder,
                                            os.path.join(ROOT, "tests", "data", "fixtures", name), CM.FIXTURE_TOL)
        print("reference vs PyTorch fixtures: %-10s %d texts, attn %.2e, hidden %.2e  %s"
              % (name, k, ea, eh, "FAIL" if probs else "ok"))
        ref_fail += ["reference %s: %s" % (name, p) for p in probs]
    check_stored(ref_fail)
    tmp = tempfile.mkdtemp(prefix="ag_a.")
    try:
        print("reference vs the engine's gpt2/bert/llama paths on equivalent folders (f64):")
        for name, ea, eh, tol in check_equivalents(cli, tmp, ref_fail):
            print("  %-16s attn %.2e  hidden %.2e  (tol %g)" % (name, ea, eh, tol))
        ch = CM.Checker(cli, tmp)
        rows = []
        for name in MK.CASES:
            if argv[2:] and name not in argv[2:]:
                continue
            nfail = len(ch.failures)
            err = check_folder(ch, cli, name, tmp)
            rows.append((name, err, len(ch.failures) - nfail))
        print("router ties (mixtral, top 1, router rows 0 and 3 equal):")
        check_router_ties(ch, cli, tmp, ref_fail)
        err_fail = []
        print("family D through the fused layouts:")
        check_weight_layouts(cli, [n for n in WEIGHT_LAYOUTS if not argv[2:] or n in argv[2:]], err_fail)
        print("error cases:")
        check_errors(cli, tmp, err_fail)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print("%-20s %12s %12s %12s %12s %6s" % ("folder", "attn f64", "attn f32", "hidden f64", "hidden f32", "fails"))
    for name, err, nf in rows:
        e = [err[p][i] if err[p] else float("nan") for i in (0, 1) for p in ("f64", "f32")]
        print("%-20s %12.2e %12.2e %12.2e %12.2e %6d" % ((name,) + tuple(e) + (nf,)))
    print("tolerances: f64 attn %g, hidden %g*max(1,|ref|); f32 attn %g, hidden %g*max(1,|ref|)"
          % (TOL["f64"] + TOL["f32"]))
    failures = ref_fail + ch.failures + err_fail
    bad = sorted({name for name, _, nf in rows if nf})
    if bad:
        print("failing folders: %s" % " ".join(bad))
    for f in ref_fail + err_fail:
        print("FAIL", f)
    print("time %.1f s" % (time.time() - t0))
    if failures:
        print("check_archs.py: %d failure(s); attention inputs saved under %s" % (len(failures), CM.MISMATCH_DIR))
        return 1
    print("check_archs.py: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
