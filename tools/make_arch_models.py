#!/usr/bin/python3
"""Write the small random-weight Hugging Face folders of tests/data/models/arch/
and their float64 references in tests/data/archref/.

Usage: /usr/bin/python3 tools/make_arch_models.py [--out DIR] [--ref DIR]
                                                 [--crosscheck DIR] [NAME...]

One folder per case of CASES: config.json with the keys Hugging Face's
save_pretrained writes for that model_type (architectures, torch_dtype,
tie_word_embeddings, bos/eos ids, ...), and model.safetensors written here
(no torch) with the tensor names of real Hub checkpoints of the ForCausalLM /
ForMaskedLM / base classes, including the head tensors (lm_head, embed_out,
vocab_transform ...) and the buffers old checkpoints carry (GPT-NeoX
attention.bias / masked_bias / rotary_emb.inv_freq, RoBERTa
embeddings.position_ids), which a loader must ignore.

Weights are deterministic (numpy seeded per case) and scaled so that the
attention scores have a standard deviation of several units (attention far
from uniform), norm weights are not 1 and biases not 0: a misplaced norm,
bias or scale changes the result by far more than the tolerances.

The reference of each case goes to REF/<name>/: ids.json ({"ids": [...]},
a fixed sequence of 12 to 24 ids, longer than the sliding window for the
window cases and than max_position_embeddings for llama-dynamic), attn.npy
(L, H, n, n) and hidden.npy (L+1, n, d), float64, from tests/ref/hf_forward.py.

--crosscheck DIR writes, instead, variants that the engine before issue 10
already supports (llama without rope_scaling, mistral and qwen2 with inputs
shorter than the window), each with its ids.json/attn.npy/hidden.npy inside
the folder: they check this generator and hf_forward against an engine
verified against PyTorch.
"""
import argparse
import json
import os
import shutil
import sys
import zlib

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import hf_forward as HF  # noqa: E402

TRANSFORMERS_VERSION = "4.44.2"


# ------------------------------------------------------------ safetensors ---

def _bf16_bits(a):
    """float64 -> bfloat16 bit patterns, round to nearest even (as torch)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def _encode(a, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(a, dtype="<f2").tobytes()
    if dtype == "BF16":
        return _bf16_bits(a).astype("<u2").tobytes()
    if dtype == "I64":
        return np.ascontiguousarray(a, dtype="<i8").tobytes()
    if dtype in ("U8", "BOOL"):
        return np.ascontiguousarray(a, dtype="u1").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: name -> (array, dtype). Header padded to 8 bytes with spaces."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        a, dt = tensors[name]
        b = _encode(a, dt)
        header[name] = {"dtype": dt, "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- weights ---

QK_GAIN = 2.0  # q and k entries ~ N(0, (2/sqrt(d_in))^2): score std ~ 4


class Gen:
    """Random tensors of one folder, all stored in one float dtype."""

    def __init__(self, name, dtype):
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.dtype = dtype
        self.t = {}

    def _put(self, name, a, dtype=None):
        dt = dtype or self.dtype
        if dt == "F16":
            a = a.astype(np.float16).astype(np.float64)
        self.t[name] = (a, dt)

    def lin(self, name, out, inp, gain=1.0, bias=True, bias_std=0.2):
        self._put(name + ".weight", self.rng.normal(0.0, gain / np.sqrt(inp), (out, inp)))
        if bias:
            self._put(name + ".bias", self.rng.normal(0.0, bias_std, out))

    def emb(self, name, rows, d, std=1.0):
        self._put(name, self.rng.normal(0.0, std, (rows, d)))

    def ln(self, name, d, bias=True):
        self._put(name + ".weight", self.rng.uniform(0.6, 1.4, d))
        if bias:
            self._put(name + ".bias", self.rng.normal(0.0, 0.2, d))

    def gemma_norm(self, name, d):
        """Gemma's RMSNorm weight is stored centred on 0 (it scales by 1 + w)."""
        self._put(name + ".weight", self.rng.uniform(-0.4, 0.4, d))

    def raw(self, name, a, dtype):
        self.t[name] = (np.asarray(a), dtype)


# ------------------------------------------------------------- the cases ---

# Tensor names of a layer with separate q, k, v, out projections, one norm
# after (or before) attention, a two-matrix MLP and a second norm.
OPT_LAYER = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
             "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm")
BERT_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
              "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
DISTILBERT_LAYER = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
                    "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm")


def attn_mlp_layer(g, q, d, ff, names):
    wq, wk, wv, wo, norm1, fc1, fc2, norm2 = names
    g.lin(q + wq, d, d, QK_GAIN)
    g.lin(q + wk, d, d, QK_GAIN)
    g.lin(q + wv, d, d)
    g.lin(q + wo, d, d)
    g.ln(q + norm1, d)
    g.lin(q + fc1, ff, d)
    g.lin(q + fc2, d, ff)
    g.ln(q + norm2, d)


def base_config(arch, model_type, dtype, **kw):
    c = {"architectures": [arch], "model_type": model_type,
         "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
         "transformers_version": TRANSFORMERS_VERSION}
    c.update(kw)
    return dict(sorted(c.items()))


def gpt_neox(name, parallel, rotary_pct, old_buffers):
    """GPTNeoXForCausalLM (Pythia): gpt_neox.* + embed_out."""
    d, H, L, V, ff, P = 32, 2, 2, 80, 64, 64
    g = Gen(name, "F32")
    p = "gpt_neox."
    g.emb(p + "embed_in.weight", V, d)
    hs = d // H
    for l in range(L):
        q = "%slayers.%d." % (p, l)
        g.ln(q + "input_layernorm", d)
        g.ln(q + "post_attention_layernorm", d)
        g.lin(q + "attention.query_key_value", 3 * d, d)
        w, b = g.t[q + "attention.query_key_value.weight"][0], g.t[q + "attention.query_key_value.bias"][0]
        for h in range(H):  # rows of head h: q (hs), k (hs), v (hs)
            w[h * 3 * hs:h * 3 * hs + 2 * hs] *= QK_GAIN
            b[h * 3 * hs:h * 3 * hs + 2 * hs] *= 2.0
        g.lin(q + "attention.dense", d, d)
        g.lin(q + "mlp.dense_h_to_4h", ff, d)
        g.lin(q + "mlp.dense_4h_to_h", d, ff)
        if old_buffers:  # transformers < 4.31 saved these persistent buffers
            g.raw(q + "attention.bias", np.tril(np.ones((P, P), dtype=np.uint8))[None, None], "U8")
            g.raw(q + "attention.masked_bias", np.array(-1e9), "F32")
            rot = int(hs * rotary_pct)
            g.raw(q + "attention.rotary_emb.inv_freq",
                  1.0 / 10000.0 ** (np.arange(0, rot, 2) / rot), "F32")
    g.ln(p + "final_layer_norm", d)
    g.lin("embed_out", V, d, bias=False)
    cfg = base_config("GPTNeoXForCausalLM", "gpt_neox", "F32", attention_bias=True, attention_dropout=0.0,
                      bos_token_id=0, eos_token_id=0, classifier_dropout=0.1, hidden_act="gelu",
                      hidden_dropout=0.0, hidden_size=d, initializer_range=0.02, intermediate_size=ff,
                      layer_norm_eps=1e-5, max_position_embeddings=P, num_attention_heads=H,
                      num_hidden_layers=L, rope_scaling=None, rotary_emb_base=10000, rotary_pct=rotary_pct,
                      tie_word_embeddings=False, use_cache=True, use_parallel_residual=parallel,
                      vocab_size=V)
    return cfg, g


def opt(name, pre_ln, proj_dim, prefix, dtype):
    """OPTForCausalLM (prefix model.decoder., lm_head) or an OPTModel save
    (prefix decoder., as facebook/opt-350m)."""
    d, H, L, V, ff, P = 32, 4, 2, 80, 64, 40
    g = Gen(name, dtype)
    e = proj_dim or d
    g.emb(prefix + "embed_tokens.weight", V, e)
    g.emb(prefix + "embed_positions.weight", P + 2, d, std=0.5)
    if proj_dim:
        g.lin(prefix + "project_in", d, e, bias=False)
        g.lin(prefix + "project_out", e, d, bias=False)
    for l in range(L):
        attn_mlp_layer(g, "%slayers.%d." % (prefix, l), d, ff, OPT_LAYER)
    if pre_ln:
        g.ln(prefix + "final_layer_norm", d)
    if prefix.startswith("model."):
        g.lin("lm_head", V, e, bias=False)
    cfg = base_config("OPTForCausalLM", "opt", dtype, _remove_final_layer_norm=False, activation_dropout=0.0,
                      activation_function="relu", attention_dropout=0.0, bos_token_id=2,
                      do_layer_norm_before=pre_ln, dropout=0.1, enable_bias=True, eos_token_id=2,
                      ffn_dim=ff, hidden_size=d, init_std=0.02, layer_norm_elementwise_affine=True,
                      layerdrop=0.0, max_position_embeddings=P, num_attention_heads=H,
                      num_hidden_layers=L, pad_token_id=1, prefix="</s>", use_cache=True,
                      vocab_size=V, word_embed_proj_dim=e)
    return cfg, g


def roberta(name, model_type, arch):
    """RobertaForMaskedLM / XLMRobertaForMaskedLM: roberta.* + lm_head.*, and
    the position_ids buffer older checkpoints saved."""
    d, H, L, V, ff, pad = 32, 4, 2, 80, 64, 1
    P = 40 + pad + 1
    g = Gen(name, "F32")
    p = "roberta."
    g.emb(p + "embeddings.word_embeddings.weight", V, d)
    g.emb(p + "embeddings.position_embeddings.weight", P, d, std=0.5)
    g.emb(p + "embeddings.token_type_embeddings.weight", 1, d, std=0.5)
    g.ln(p + "embeddings.LayerNorm", d)
    g.raw(p + "embeddings.position_ids", np.arange(P)[None], "I64")
    for l in range(L):
        attn_mlp_layer(g, "%sencoder.layer.%d." % (p, l), d, ff, BERT_LAYER)
    g.lin("lm_head.dense", d, d)
    g.ln("lm_head.layer_norm", d)
    g.lin("lm_head.decoder", V, d)
    g.raw("lm_head.bias", g.t["lm_head.decoder.bias"][0], "F32")
    cfg = base_config(arch, model_type, "F32", attention_probs_dropout_prob=0.1, bos_token_id=0,
                      classifier_dropout=None, eos_token_id=2, hidden_act="gelu",
                      hidden_dropout_prob=0.1, hidden_size=d, initializer_range=0.02,
                      intermediate_size=ff, layer_norm_eps=1e-5, max_position_embeddings=P,
                      num_attention_heads=H, num_hidden_layers=L, pad_token_id=pad,
                      position_embedding_type="absolute", type_vocab_size=1, use_cache=True,
                      vocab_size=V)
    return cfg, g




def distilbert(name):
    """DistilBertForMaskedLM: distilbert.* + vocab_transform / vocab_layer_norm
    / vocab_projector."""
    d, H, L, V, ff, P = 32, 4, 3, 80, 64, 40
    g = Gen(name, "F32")
    p = "distilbert."
    g.emb(p + "embeddings.word_embeddings.weight", V, d)
    g.emb(p + "embeddings.position_embeddings.weight", P, d, std=0.5)
    g.ln(p + "embeddings.LayerNorm", d)
    for l in range(L):
        attn_mlp_layer(g, "%stransformer.layer.%d." % (p, l), d, ff, DISTILBERT_LAYER)
    g.lin("vocab_transform", d, d)
    g.ln("vocab_layer_norm", d)
    g.lin("vocab_projector", V, d)
    cfg = base_config("DistilBertForMaskedLM", "distilbert", "F32", activation="gelu", attention_dropout=0.1,
                      dim=d, dropout=0.1, hidden_dim=ff, initializer_range=0.02,
                      max_position_embeddings=P, n_heads=H, n_layers=L, pad_token_id=0,
                      qa_dropout=0.1, seq_classif_dropout=0.2, sinusoidal_pos_embds=False,
                      tie_weights_=True, vocab_size=V)
    return cfg, g


def rope_decoder(g, L, d, H, Hkv, hd, ff, norm, qkv_bias=False, fused=False, gemma2=False,
                 qk_norm=None, olmo2=False, qk_centre=0.0):
    """model.layers.* of the LlamaForCausalLM family (Phi-3's fused
    qkv_proj / gate_up_proj with fused=True; Gemma-2's four norms; QK-norm
    weights self_attn.q_norm / k_norm of head_dim (qk_norm "head", Qwen3) or
    of the projection's width ("full", OLMo-2); OLMo-2's two norms after the
    sublayers and no input_layernorm)."""
    for l in range(L):
        q = "model.layers.%d." % l
        if not olmo2:
            norm(q + "input_layernorm", d)
        norm(q + "post_attention_layernorm", d)
        if gemma2:
            norm(q + "pre_feedforward_layernorm", d)
        if gemma2 or olmo2:
            norm(q + "post_feedforward_layernorm", d)
        if qk_norm:
            # scales well above 1: the norm fixes |q|, |k| ~ sqrt(width), and
            # these keep the scores spread (attention far from uniform);
            # Gemma-3 stores them centred on 0 (qk_centre 1: it scales by 1 + w)
            for t, heads in (("q_norm", H), ("k_norm", Hkv)):
                g._put(q + "self_attn.%s.weight" % t,
                       g.rng.uniform(1.0, 3.0, hd if qk_norm == "head" else heads * hd) - qk_centre)
        if fused:
            nq, nkv = H * hd, Hkv * hd
            g.lin(q + "self_attn.qkv_proj", nq + 2 * nkv, d, bias=False)
            g.t[q + "self_attn.qkv_proj.weight"][0][:nq + nkv] *= QK_GAIN
            g.lin(q + "mlp.gate_up_proj", 2 * ff, d, bias=False)
        else:
            g.lin(q + "self_attn.q_proj", H * hd, d, QK_GAIN, bias=qkv_bias, bias_std=0.5)
            g.lin(q + "self_attn.k_proj", Hkv * hd, d, QK_GAIN, bias=qkv_bias, bias_std=0.5)
            g.lin(q + "self_attn.v_proj", Hkv * hd, d, bias=qkv_bias)
            g.lin(q + "mlp.gate_proj", ff, d, bias=False)
            g.lin(q + "mlp.up_proj", ff, d, bias=False)
        g.lin(q + "self_attn.o_proj", d, H * hd, bias=False)
        g.lin(q + "mlp.down_proj", d, ff, bias=False)
    norm("model.norm", d)


def llama_like(name, model_type, arch, dtype="F32", L=2, H=4, Hkv=2, d=32, hd=None, P=64, V=80,
               rope_scaling=None, qkv_bias=False, **extra):
    """LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM."""
    ff = 64
    hd = hd or d // H
    g = Gen(name, dtype)
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, hd, ff, lambda n, k: g.ln(n, k, bias=False), qkv_bias=qkv_bias)
    g.lin("lm_head", V, d, bias=False)
    kw = dict(attention_dropout=0.0, bos_token_id=1, eos_token_id=2, hidden_act="silu", hidden_size=d,
              initializer_range=0.02, intermediate_size=ff, max_position_embeddings=P,
              num_attention_heads=H, num_hidden_layers=L, num_key_value_heads=Hkv, rms_norm_eps=1e-6,
              rope_scaling=rope_scaling, rope_theta=10000.0, tie_word_embeddings=False, use_cache=True,
              vocab_size=V)
    if model_type == "llama":
        kw.update(attention_bias=False, head_dim=hd, mlp_bias=False, pretraining_tp=1)
    kw.update(extra)
    return base_config(arch, model_type, dtype, **kw), g


def gemma(name):
    """GemmaForCausalLM, multi-query (num_key_value_heads 1), head_dim 16 !=
    hidden_size / heads = 8, tied embeddings (no lm_head in the file)."""
    d, H, Hkv, hd, L, V, ff = 32, 4, 1, 16, 2, 96, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d, std=0.3)
    rope_decoder(g, L, d, H, Hkv, hd, ff, g.gemma_norm)
    cfg = base_config("GemmaForCausalLM", "gemma", "F32", attention_bias=False, attention_dropout=0.0,
                      bos_token_id=2, eos_token_id=1, head_dim=hd, hidden_act="gelu",
                      hidden_activation="gelu_pytorch_tanh", hidden_size=d, initializer_range=0.02,
                      intermediate_size=ff, max_position_embeddings=64, num_attention_heads=H,
                      num_hidden_layers=L, num_key_value_heads=Hkv, pad_token_id=0, rms_norm_eps=1e-6,
                      rope_scaling=None, rope_theta=10000.0, tie_word_embeddings=True, use_cache=True,
                      vocab_size=V)
    return cfg, g


def gemma2(name):
    """Gemma2ForCausalLM: 3 layers (0 and 2 windowed), sliding_window 6,
    attn_logit_softcapping 10, query_pre_attn_scalar 24 != head_dim 16."""
    d, H, Hkv, hd, L, V, ff = 32, 4, 2, 16, 3, 96, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d, std=0.3)
    rope_decoder(g, L, d, H, Hkv, hd, ff, g.gemma_norm, gemma2=True)
    cfg = base_config("Gemma2ForCausalLM", "gemma2", "F32", attention_bias=False, attention_dropout=0.0,
                      attn_logit_softcapping=10.0, bos_token_id=2, cache_implementation="hybrid",
                      eos_token_id=1, final_logit_softcapping=30.0, head_dim=hd,
                      hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                      hidden_size=d, initializer_range=0.02, intermediate_size=ff,
                      max_position_embeddings=64, num_attention_heads=H, num_hidden_layers=L,
                      num_key_value_heads=Hkv, pad_token_id=0, query_pre_attn_scalar=24,
                      rms_norm_eps=1e-6, rope_theta=10000.0, sliding_window=6, tie_word_embeddings=True,
                      use_cache=True, vocab_size=V)
    return cfg, g


def phi3(name):
    """Phi3ForCausalLM: grouped-query fused qkv_proj [(4 + 2·2)·8, 32],
    gate_up_proj, sliding_window 10 (Phi-3-mini-4k sets 2047)."""
    d, H, Hkv, L, V, ff = 32, 4, 2, 2, 80, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, d // H, ff, lambda n, k: g.ln(n, k, bias=False), fused=True)
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("Phi3ForCausalLM", "phi3", "F32", attention_bias=False, attention_dropout=0.0,
                      bos_token_id=1, embd_pdrop=0.0, eos_token_id=2, hidden_act="silu",
                      hidden_size=d, initializer_range=0.02, intermediate_size=ff,
                      max_position_embeddings=64, num_attention_heads=H, num_hidden_layers=L,
                      num_key_value_heads=Hkv, original_max_position_embeddings=64, pad_token_id=0,
                      resid_pdrop=0.0, rms_norm_eps=1e-5, rope_scaling=None, rope_theta=10000.0,
                      sliding_window=10, tie_word_embeddings=False, use_cache=True, vocab_size=V)
    return cfg, g


def bloom(name):
    """BloomForCausalLM saved as bigscience/bloom-560m is (no "transformer."
    prefix, lm_head tied and not saved): 6 heads, so that the slopes past the
    closest power of two (4) are used."""
    d, H, L, V = 48, 6, 2, 80
    g = Gen(name, "F32")
    g.emb("word_embeddings.weight", V, d)
    g.ln("word_embeddings_layernorm", d)
    hd = d // H
    for l in range(L):
        q = "h.%d." % l
        g.ln(q + "input_layernorm", d)
        g.lin(q + "self_attention.query_key_value", 3 * d, d)
        w = g.t[q + "self_attention.query_key_value.weight"][0]
        for h in range(H):  # rows (h, 0, :) and (h, 1, :): q and k of head h
            w[h * 3 * hd:h * 3 * hd + 2 * hd] *= QK_GAIN
        g.lin(q + "self_attention.dense", d, d)
        g.ln(q + "post_attention_layernorm", d)
        g.lin(q + "mlp.dense_h_to_4h", 4 * d, d)
        g.lin(q + "mlp.dense_4h_to_h", d, 4 * d)
    g.ln("ln_f", d)
    cfg = base_config("BloomForCausalLM", "bloom", "F32", apply_residual_connection_post_layernorm=False,
                      attention_dropout=0.0, bos_token_id=1, eos_token_id=2, hidden_dropout=0.0,
                      hidden_size=d, initializer_range=0.02, layer_norm_epsilon=1e-5, n_head=H, n_layer=L,
                      pad_token_id=3, pretraining_tp=1, slow_but_exact=False, use_cache=True, vocab_size=V)
    return cfg, g


def mpt(name):
    """MptForCausalLM (transformer.* + lm_head tied, not saved), as
    mosaicml/mpt-7b's config with 6 heads (gen_slopes' interleaved order for
    a head count below its power of two) and an explicit softmax_scale."""
    d, H, L, V, P = 48, 6, 2, 80, 32
    g = Gen(name, "BF16")
    p = "transformer."
    g.emb(p + "wte.weight", V, d)
    for l in range(L):
        q = "%sblocks.%d." % (p, l)
        g.ln(q + "norm_1", d, bias=False)
        g.lin(q + "attn.Wqkv", 3 * d, d, bias=False)
        g.t[q + "attn.Wqkv.weight"][0][:2 * d] *= QK_GAIN * 1.5
        g.lin(q + "attn.out_proj", d, d, bias=False)
        g.ln(q + "norm_2", d, bias=False)
        g.lin(q + "ffn.up_proj", 4 * d, d, bias=False)
        g.lin(q + "ffn.down_proj", d, 4 * d, bias=False)
    g.ln(p + "norm_f", d, bias=False)
    attn = {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0.0,
            "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
            "model_type": "", "prefix_lm": False, "qk_ln": False, "softmax_scale": 0.25,
            "sliding_window_size": -1}
    cfg = base_config("MptForCausalLM", "mpt", "BF16", attn_config=attn, d_model=d, emb_pdrop=0.0,
                      embedding_fraction=1.0, expansion_ratio=4, init_device="cpu",
                      initializer_range=0.02, layer_norm_epsilon=1e-5, learned_pos_emb=True,
                      logit_scale=None, max_seq_len=P, n_heads=H, n_layers=L, no_bias=True,
                      norm_type="low_precision_layernorm", resid_pdrop=0.0, use_cache=False,
                      verbose=0, vocab_size=V)
    return cfg, g


def falcon(name, new, mq, par, alibi, bias, H, Hkv=None, dtype="F32", nln=None):
    """FalconForCausalLM (transformer.* + lm_head): new_decoder_architecture
    as Falcon-40B (grouped kv heads, ln_attn / ln_mlp), or the original layout
    as Falcon-7B (multi_query, parallel_attn) or Falcon-RW (neither, alibi,
    bias)."""
    d, L, V, P, hd = 8 * H, 2, 80, 64, 8
    Hkv = Hkv or (H if not mq else 1)
    g = Gen(name, dtype)
    p = "transformer."
    g.emb(p + "word_embeddings.weight", V, d)
    width = (H + 2 * Hkv) * hd if (new or mq) else 3 * d
    for l in range(L):
        q = "%sh.%d." % (p, l)
        if new and (nln or 2) == 2:
            g.ln(q + "ln_attn", d)
            g.ln(q + "ln_mlp", d)
        else:
            g.ln(q + "input_layernorm", d)
            if not par:
                g.ln(q + "post_attention_layernorm", d)
        g.lin(q + "self_attention.query_key_value", width, d, bias=bias)
        w = g.t[q + "self_attention.query_key_value.weight"][0].reshape(-1, hd, d)
        if new:  # per group: H/Hkv queries, k, v
            vrows = [gi * (H // Hkv + 2) + H // Hkv + 1 for gi in range(Hkv)]
        elif mq:
            vrows = [H + 1]
        else:
            vrows = [3 * h + 2 for h in range(H)]
        for r in range(w.shape[0]):
            if r not in vrows:
                w[r] *= QK_GAIN
        g.lin(q + "self_attention.dense", d, d, bias=bias)
        g.lin(q + "mlp.dense_h_to_4h", 4 * d, d, bias=bias)
        g.lin(q + "mlp.dense_4h_to_h", d, 4 * d, bias=bias)
    g.ln(p + "ln_f", d)
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("FalconForCausalLM", "falcon", dtype, activation="gelu", alibi=alibi,
                      attention_dropout=0.0, bias=bias, bos_token_id=11, eos_token_id=11,
                      ffn_hidden_size=4 * d, hidden_dropout=0.0, hidden_size=d, initializer_range=0.02,
                      layer_norm_epsilon=1e-5, max_position_embeddings=P, multi_query=mq,
                      new_decoder_architecture=new, num_attention_heads=H, num_hidden_layers=L,
                      num_kv_heads=Hkv if new else H, num_ln_in_parallel_attn=nln, parallel_attn=par,
                      rope_scaling=None, rope_theta=10000.0, tie_word_embeddings=False, use_cache=True,
                      vocab_size=V)
    return cfg, g


def qwen3(name):
    """Qwen3ForCausalLM: per-head QK-norm, head_dim 16 != hidden_size /
    heads = 8, attention_bias, grouped-query; sliding window 5 on the layers
    layer_types names (use_sliding_window)."""
    d, H, Hkv, hd, L, V, ff = 32, 4, 2, 16, 3, 80, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, hd, ff, lambda n, k: g.ln(n, k, bias=False), qkv_bias=True,
                 qk_norm="head")
    for l in range(L):  # attention_bias covers o_proj too
        g._put("model.layers.%d.self_attn.o_proj.bias" % l, g.rng.normal(0.0, 0.2, d))
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("Qwen3ForCausalLM", "qwen3", "F32", attention_bias=True, attention_dropout=0.0,
                      bos_token_id=1, eos_token_id=2, head_dim=hd, hidden_act="silu", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff,
                      layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                      max_position_embeddings=64, max_window_layers=1, num_attention_heads=H,
                      num_hidden_layers=L, num_key_value_heads=Hkv, rms_norm_eps=1e-6,
                      rope_scaling=None, rope_theta=1000000.0, sliding_window=5,
                      tie_word_embeddings=False, use_cache=True, use_sliding_window=True,
                      vocab_size=V)
    return cfg, g


def olmo2(name):
    """Olmo2ForCausalLM: QK-norm over the whole q (H·hd) and k (H_kv·hd)
    projections, no input norms, post_attention_ and
    post_feedforward_layernorm on the sublayer outputs; no head_dim key
    (hidden_size / heads), rms_norm_eps 1e-5 (the config default)."""
    d, H, Hkv, L, V, ff = 32, 4, 2, 2, 80, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, d // H, ff, lambda n, k: g.ln(n, k, bias=False), qk_norm="full",
                 olmo2=True)
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("Olmo2ForCausalLM", "olmo2", "F32", attention_bias=False, attention_dropout=0.0,
                      bos_token_id=None, eos_token_id=2, hidden_act="silu", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff, max_position_embeddings=64,
                      num_attention_heads=H, num_hidden_layers=L, num_key_value_heads=Hkv,
                      pad_token_id=1, rms_norm_eps=1e-5, rope_scaling=None, rope_theta=500000.0,
                      tie_word_embeddings=False, use_cache=True, vocab_size=V)
    return cfg, g


def gemma3(name):
    """Gemma3ForCausalLM (model_type gemma3_text, a 4.50-era config:
    sliding_window_pattern, no layer_types): per-head QK-norm (1 + w), layers
    0 and 1 sliding (window 6, RoPE base rope_local_base_freq 10000), layer 2
    full (rope_theta 1e6 with rope_scaling linear x8, as gemma-3-4b),
    query_pre_attn_scalar 24 != head_dim 16, no soft-capping."""
    d, H, Hkv, hd, L, V, ff = 32, 4, 2, 16, 3, 96, 64
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d, std=0.3)
    rope_decoder(g, L, d, H, Hkv, hd, ff, g.gemma_norm, gemma2=True, qk_norm="head", qk_centre=1.0)
    cfg = base_config("Gemma3ForCausalLM", "gemma3_text", "F32", attention_bias=False,
                      attention_dropout=0.0, attn_logit_softcapping=None, bos_token_id=2,
                      cache_implementation="hybrid", eos_token_id=1, final_logit_softcapping=None,
                      head_dim=hd, hidden_activation="gelu_pytorch_tanh", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff, max_position_embeddings=64,
                      num_attention_heads=H, num_hidden_layers=L, num_key_value_heads=Hkv,
                      pad_token_id=0, query_pre_attn_scalar=24, rms_norm_eps=1e-6,
                      rope_local_base_freq=10000.0, rope_scaling={"factor": 8.0, "rope_type": "linear"},
                      rope_theta=1000000.0, sliding_window=6, sliding_window_pattern=3,
                      tie_word_embeddings=True, use_cache=True, vocab_size=V)
    return cfg, g


def modernbert(name, biases=False, v5=False, local=6):
    """ModernBertForMaskedLM (model_type modernbert; the config keys of
    answerdotai/ModernBERT-base, transformers 4.48): layer 0 global (no
    attn_norm), layers 1 and 2 local (global_attn_every_n_layers 3, a band of
    local_attention // 2 keys each side, RoPE base local_rope_theta 10000
    against global_rope_theta 160000), fused Wqkv (3d, d), GeGLU Wi (2 ff, d),
    LayerNorms without bias unless `biases` (then norm_bias, attention_bias
    and mlp_bias all true). The MLM head (head.dense, head.norm, decoder) is
    written and must be ignored, as is final_norm (not in the hidden
    states). v5: Transformers v5's layer_types and rope_parameters per layer
    type instead of the two theta keys."""
    d, H, L, V, ff = 32, 4, 3, 96, 48
    g = Gen(name, "F32")
    g.emb("model.embeddings.tok_embeddings.weight", V, d)
    g.ln("model.embeddings.norm", d, biases)
    for i in range(L):
        q = "model.layers.%d." % i
        if i:
            g.ln(q + "attn_norm", d, biases)
        w = g.rng.normal(0.0, 1.0 / np.sqrt(d), (3 * d, d))
        w[:2 * d] *= QK_GAIN  # Q and K rows: scores spread
        g._put(q + "attn.Wqkv.weight", w)
        if biases:
            g._put(q + "attn.Wqkv.bias", g.rng.normal(0.0, 0.2, 3 * d))
        g.lin(q + "attn.Wo", d, d, bias=biases)
        g.ln(q + "mlp_norm", d, biases)
        g.lin(q + "mlp.Wi", 2 * ff, d, bias=biases)
        g.lin(q + "mlp.Wo", d, ff, bias=biases)
    g.ln("model.final_norm", d, biases)
    g.lin("head.dense", d, d, bias=False)
    g.ln("head.norm", d, biases)
    g._put("decoder.bias", g.rng.normal(0.0, 0.2, V))
    extra = ({"layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
              "rope_parameters": {"full_attention": {"rope_theta": 160000.0, "rope_type": "default"},
                                  "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}}
             if v5 else {"global_rope_theta": 160000.0, "local_rope_theta": 10000.0})
    cfg = base_config("ModernBertForMaskedLM", "modernbert", "F32", attention_bias=biases,
                      attention_dropout=0.0, bos_token_id=1, classifier_activation="gelu",
                      classifier_bias=False, classifier_dropout=0.0, classifier_pooling="mean",
                      cls_token_id=1, decoder_bias=True, deterministic_flash_attn=False,
                      embedding_dropout=0.0, eos_token_id=2, global_attn_every_n_layers=3,
                      gradient_checkpointing=False, hidden_activation="gelu", hidden_size=d,
                      initializer_cutoff_factor=2.0, initializer_range=0.02, intermediate_size=ff,
                      layer_norm_eps=1e-5, local_attention=local, max_position_embeddings=64,
                      mlp_bias=biases, mlp_dropout=0.0, norm_bias=biases, norm_eps=1e-5,
                      num_attention_heads=H, num_hidden_layers=L, pad_token_id=0,
                      position_embedding_type="absolute", reference_compile=True, sep_token_id=2,
                      sparse_pred_ignore_index=-100, sparse_prediction=False, vocab_size=V, **extra)
    return cfg, g


def experts(g, q, d, E, ff, router, expert, stems, shared=None):
    """One sparse layer's router ([E, d], gain 3: the top-k well apart from
    ties) and E gated experts (stems gate, up, down) of width ff; with
    shared = (prefix, width, gate name) Qwen2-MoE's shared expert and its
    [1, d] gate."""
    for k in [k for k in g.t if k.startswith(q + "mlp.")]:
        del g.t[k]  # the dense MLP rope_decoder wrote
    g.lin(q + router, E, d, 3.0, bias=False)
    for e in range(E):
        p = q + expert % e
        g.lin(p + stems[0], ff, d, bias=False)
        g.lin(p + stems[1], ff, d, bias=False)
        g.lin(p + stems[2], d, ff, bias=False)
    if shared:
        pre, sff, gate = shared
        g.lin(q + pre + stems[0], sff, d, bias=False)
        g.lin(q + pre + stems[1], sff, d, bias=False)
        g.lin(q + pre + stems[2], d, sff, bias=False)
        g.lin(q + gate, 1, d, 2.0, bias=False)


MOE_STEMS = ("gate_proj", "up_proj", "down_proj")


def mixtral(name):
    """MixtralForCausalLM: 4 experts, top 2 (renormalised), experts 16 wide,
    grouped-query, sliding_window 6 on every layer."""
    d, H, Hkv, L, V, ff, E = 32, 4, 2, 2, 80, 16, 4
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, d // H, ff, lambda n, k: g.ln(n, k, bias=False))
    for l in range(L):
        experts(g, "model.layers.%d." % l, d, E, ff, "block_sparse_moe.gate",
                "block_sparse_moe.experts.%d.", ("w1", "w3", "w2"))
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("MixtralForCausalLM", "mixtral", "F32", attention_dropout=0.0, bos_token_id=1,
                      eos_token_id=2, head_dim=d // H, hidden_act="silu", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff, max_position_embeddings=64,
                      num_attention_heads=H, num_experts_per_tok=2, num_hidden_layers=L,
                      num_key_value_heads=Hkv, num_local_experts=E, output_router_logits=False,
                      rms_norm_eps=1e-5, rope_theta=1000000.0, router_aux_loss_coef=0.02,
                      router_jitter_noise=0.0, sliding_window=6, tie_word_embeddings=False,
                      use_cache=True, vocab_size=V)
    return cfg, g


def fuse_experts(cfg, t):
    """Tensors t (name -> array) of a per-expert MoE folder as Transformers
    v5 holds them (conversion_mapping.py @44bcb9df5e93): per sparse layer the
    experts' gate and up weights stacked into mlp.experts.gate_up_proj
    [E, 2ff, d] (expert e's gate rows, then its up rows), the down weights
    into mlp.experts.down_proj [E, d, ff]; Mixtral's block_sparse_moe. -> mlp."""
    mix = cfg["model_type"] == "mixtral"
    stems = ("w1", "w3", "w2") if mix else MOE_STEMS
    pre = "block_sparse_moe.experts." if mix else "mlp.experts."
    t, out = dict(t), {}
    for l in range(cfg["num_hidden_layers"]):
        q = "model.layers.%d." % l
        E = sum(1 for k in t if k.startswith(q + pre) and k.endswith("." + stems[0] + ".weight"))
        if not E:
            continue
        w = lambda e, s: t.pop("%s%s%d.%s.weight" % (q, pre, e, s))
        out[q + "mlp.experts.gate_up_proj"] = np.stack(
            [np.concatenate([w(e, stems[0]), w(e, stems[1])]) for e in range(E)])
        out[q + "mlp.experts.down_proj"] = np.stack([w(e, stems[2]) for e in range(E)])
    for k, v in t.items():
        out[k.replace("block_sparse_moe.", "mlp.")] = v
    return out


def moe_v5(builder):
    """The builder's MoE folder with its experts fused (fuse_experts)."""
    def build_v5(name):
        cfg, g = builder(name)
        g.t = {k: (v, g.dtype) for k, v in fuse_experts(cfg, {k: a for k, (a, _) in g.t.items()}).items()}
        return cfg, g
    return build_v5


def gptj(name):
    """GPTJForCausalLM (modeling_gptj.py): transformer.h.* with bias-free
    q/k/v/out_proj, one ln_1, biased mlp.fc_in/fc_out, lm_head with a bias,
    and the attn.bias / attn.masked_bias buffers GPT-J checkpoints carry;
    rotary_dim 4 of head_dim 8 (partial, interleaved pairs)."""
    d, H, L, V, ff, P, rot = 32, 4, 2, 80, 128, 64, 4
    g = Gen(name, "F32")
    g.emb("transformer.wte.weight", V, d)
    for l in range(L):
        q = "transformer.h.%d." % l
        g.ln(q + "ln_1", d)
        for proj, gain in (("q_proj", QK_GAIN), ("k_proj", QK_GAIN), ("v_proj", 1.0), ("out_proj", 1.0)):
            g.lin(q + "attn." + proj, d, d, gain, bias=False)
        g.raw(q + "attn.bias", np.tril(np.ones((P, P), dtype=np.uint8))[None, None], "BOOL")
        g.raw(q + "attn.masked_bias", np.array(-1e9), "F32")
        g.lin(q + "mlp.fc_in", ff, d)
        g.lin(q + "mlp.fc_out", d, ff)
    g.ln("transformer.ln_f", d)
    g.lin("lm_head", V, d)
    cfg = base_config("GPTJForCausalLM", "gptj", "F32", activation_function="gelu_new", attn_pdrop=0.0,
                      bos_token_id=1, embd_pdrop=0.0, eos_token_id=2, initializer_range=0.02,
                      layer_norm_epsilon=1e-5, n_embd=d, n_head=H, n_inner=None, n_layer=L,
                      n_positions=P, resid_pdrop=0.0, rotary_dim=rot, tie_word_embeddings=False,
                      use_cache=True, vocab_size=V)
    return cfg, g


def qwen2_moe(name):
    """Qwen2MoeForCausalLM: 3 layers, layer 1 dense (mlp_only_layers, width
    32), layers 0 and 2 with 4 experts of width 16, top 2 not renormalised
    (norm_topk_prob false), a shared expert of width 24 with its sigmoid
    gate; q/k/v biases; sliding window 5 on every layer (use_sliding_window:
    the eager mask of modeling_qwen2_moe.py @1c351314a42a; max_window_layers
    1 is kept to show that it does not limit the window to layers >= 1)."""
    d, H, Hkv, L, V, ff, E, effn, sff = 32, 4, 2, 3, 80, 32, 4, 16, 24
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, d // H, ff, lambda n, k: g.ln(n, k, bias=False), qkv_bias=True)
    for l in (0, 2):
        experts(g, "model.layers.%d." % l, d, E, effn, "mlp.gate", "mlp.experts.%d.", MOE_STEMS,
                ("mlp.shared_expert.", sff, "mlp.shared_expert_gate"))
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("Qwen2MoeForCausalLM", "qwen2_moe", "F32", attention_dropout=0.0, bos_token_id=1,
                      decoder_sparse_step=1, eos_token_id=2, hidden_act="silu", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff, max_position_embeddings=64,
                      max_window_layers=1, mlp_only_layers=[1], moe_intermediate_size=effn,
                      norm_topk_prob=False, num_attention_heads=H, num_experts=E,
                      num_experts_per_tok=2, num_hidden_layers=L, num_key_value_heads=Hkv,
                      output_router_logits=False, rms_norm_eps=1e-6, rope_theta=1000000.0,
                      router_aux_loss_coef=0.001, shared_expert_intermediate_size=sff,
                      sliding_window=5, tie_word_embeddings=False, use_cache=True,
                      use_sliding_window=True, vocab_size=V)
    return cfg, g


def olmoe(name):
    """OlmoeForCausalLM: QK-norm over the whole q (H·hd) and k (H_kv·hd)
    projections, Llama's pre-norm layer, 4 experts of width 16, top 2
    renormalised (norm_topk_prob true; OLMoE-1B-7B has false), no head_dim key."""
    d, H, Hkv, L, V, ff, E = 32, 4, 2, 2, 80, 16, 4
    g = Gen(name, "F32")
    g.emb("model.embed_tokens.weight", V, d)
    rope_decoder(g, L, d, H, Hkv, d // H, ff, lambda n, k: g.ln(n, k, bias=False), qk_norm="full")
    for l in range(L):
        experts(g, "model.layers.%d." % l, d, E, ff, "mlp.gate", "mlp.experts.%d.", MOE_STEMS)
    g.lin("lm_head", V, d, bias=False)
    cfg = base_config("OlmoeForCausalLM", "olmoe", "F32", attention_bias=False, attention_dropout=0.0,
                      clip_qkv=None, eos_token_id=2, hidden_act="silu", hidden_size=d,
                      initializer_range=0.02, intermediate_size=ff, max_position_embeddings=64,
                      norm_topk_prob=True, num_attention_heads=H, num_experts=E, num_experts_per_tok=2,
                      num_hidden_layers=L, num_key_value_heads=Hkv, output_router_logits=False,
                      pad_token_id=1, rms_norm_eps=1e-5, rope_scaling=None, rope_theta=10000.0,
                      router_aux_loss_coef=0.01, tie_word_embeddings=False, use_cache=True, vocab_size=V)
    return cfg, g


def phi3_longrope(name):
    """Phi-3.5 / Phi-3-128k's rope_scaling: longrope with short_factor and
    long_factor (head_dim 8: 4 each), original_max_position_embeddings 8 of
    max_position_embeddings 32 (factor 4, attention factor
    sqrt(1 + ln 4 / ln 8)), no sliding window."""
    cfg, g = phi3(name)
    cfg.update(max_position_embeddings=32, original_max_position_embeddings=8, sliding_window=None,
               rope_scaling={"long_factor": [1.0, 1.7, 3.1, 5.5], "short_factor": [1.0, 1.05, 1.3, 1.9],
                             "type": "longrope"})
    return cfg, g


def qwen3_yarn(name):
    """Qwen3 with rope_scaling yarn (factor 4 over 8 original positions of
    64): a QK-norm and yarn's frequencies and attention factor in one head,
    as Qwen3's long-context configs combine them."""
    cfg, g = qwen3(name)
    cfg.update(rope_scaling={"factor": 4.0, "original_max_position_embeddings": 8, "rope_type": "yarn"})
    return cfg, g


# CLIP's tokenizer (CLIPTokenizerFast's tokenizer.json as transformers'
# convert_slow_tokenizer.py CLIPConverter writes it, the layout of
# openai/clip-vit-base-patch32's file) over a small vocabulary: the byte-level
# characters of lowercase letters, digits and a little punctuation, each
# also with the end-of-word suffix </w>, a few merges, then <|startoftext|>
# and <|endoftext|> last (CLIP's order).  Anything else is the unknown token.
CLIP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,!'-"
CLIP_MERGES = ["t h", "th e</w>", "a t</w>", "c at</w>", "o f</w>", "p h", "o t", "ph ot", "phot o</w>",
               "o g</w>", "d og</w>", "i n", "in g</w>"]
CLIP_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""


def clip_tokenizer():
    """{file name: JSON object} of the clip-text folder's tokenizer."""
    toks = list(CLIP_CHARS) + [c + "</w>" for c in CLIP_CHARS] + [m.replace(" ", "") for m in CLIP_MERGES]
    vocab = {t: i for i, t in enumerate(toks)}
    bos, eos = len(toks), len(toks) + 1
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = bos, eos
    added = [{"id": bos, "content": "<|startoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": True, "special": True},
             {"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
               {"type": "Lowercase"}]},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": CLIP_SPLIT}, "behavior": "Removed", "invert": True},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
           "post_processor": {"type": "RobertaProcessing", "sep": ["<|endoftext|>", eos],
                              "cls": ["<|startoftext|>", bos], "trim_offsets": False, "add_prefix_space": False},
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<|endoftext|>", "continuing_subword_prefix": "",
                     "end_of_word_suffix": "</w>", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                     "merges": CLIP_MERGES}}
    special = {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
               "unk_token": "<|endoftext|>"}
    conf = dict(special, add_prefix_space=False, clean_up_tokenization_spaces=False, do_lower_case=True,
                errors="replace", model_max_length=77, tokenizer_class="CLIPTokenizer")
    return {"tokenizer.json": tok, "tokenizer_config.json": conf, "special_tokens_map.json": special}


# whisper-seq2seq's byte-level BPE (issue 30): 29 symbols ("Ġ" is the
# byte-level space), 14 merges in rank order, then Whisper's special tokens
# at the ids the folder's config names (decoder_start_token_id 45, eos and
# pad 46; vocab_size 48). The template is what WhisperTokenizerFast's
# set_prefix_tokens(language="english", task="transcribe") saves
# (tokenization_whisper_fast.py @a634289315b4, update_post_processor:
# "prefix... $A:0 eos:0", pair "prefix... $A:0 $B:1 eos:1").
WHISPER_CHARS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["\u0120", ".", ","]
WHISPER_MERGES = ["\u0120 t", "h e", "\u0120t he", "\u0120 c", "a t", "\u0120c at", "\u0120 s",
                  "\u0120s at", "\u0120 o", "\u0120o n", "\u0120 m", "\u0120m at", "\u0120 a", "o n"]
WHISPER_SPECIALS = [(43, "<|en|>"), (44, "<|transcribe|>"), (45, "<|startoftranscript|>"),
                    (46, "<|endoftext|>"), (47, "<|notimestamps|>")]


def whisper_tokenizer():
    """{file name: JSON object} of the whisper-seq2seq folder's tokenizer
    (tokenizer.json in the layout of openai/whisper-*'s: ByteLevel
    pre-tokenizer without a prefix space, BPE without unk_token, the special
    tokens added, a TemplateProcessing post-processor)."""
    toks = WHISPER_CHARS + [m.replace(" ", "") for m in WHISPER_MERGES]
    vocab = {t: i for i, t in enumerate(toks)}
    assert len(vocab) == WHISPER_SPECIALS[0][0]
    added = []
    for i, t in WHISPER_SPECIALS:
        vocab[t] = i
        added.append({"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    prefix = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
    eos = "<|endoftext|>"

    def piece(t, type_id=0):
        return {"SpecialToken": {"id": t, "type_id": type_id}}

    def seq(a, type_id=0):
        return {"Sequence": {"id": a, "type_id": type_id}}
    specials = {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in prefix + [eos]}
    post = {"type": "TemplateProcessing", "single": [piece(t) for t in prefix] + [seq("A"), piece(eos)],
            "pair": [piece(t) for t in prefix] + [seq("A"), seq("B", 1), piece(eos, 1)],
            "special_tokens": specials}
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": level, "post_processor": post, "decoder": level,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                     "merges": WHISPER_MERGES}}
    conf = {"add_prefix_space": False, "bos_token": eos, "eos_token": eos, "pad_token": eos,
            "unk_token": eos, "errors": "replace", "language": "english", "task": "transcribe",
            "predict_timestamps": False, "model_max_length": 16, "tokenizer_class": "WhisperTokenizer"}
    return {"tokenizer.json": tok, "tokenizer_config.json": conf}


# t5-v1_1's Unigram (issue 30, a golden case of --target TEXT): pieces
# and log-probabilities in the layout of t5-small's tokenizer.json (<pad>
# 0, </s> 1, <unk> 2, "\u2581" the Metaspace word start), 48 = the folder's
# vocab_size; template "$A </s>" (T5TokenizerFast's).
T5_PIECES = ([("\u2581", -2.0)] + [(chr(c), -5.0 - 0.01 * (c - 97)) for c in range(97, 123)]
             + [("\u2581the", -3.0), ("\u2581cat", -4.0), ("\u2581sat", -4.5), ("\u2581on", -3.5),
                ("\u2581mat", -4.6), ("\u2581a", -3.2), ("at", -4.0), ("he", -4.2), ("\u2581s", -4.1),
                (".", -3.3), (",", -3.4), ("\u2581die", -4.3), ("\u2581katze", -5.5), ("en", -4.4),
                ("\u2581auf", -4.8), ("\u2581der", -4.7), (":", -3.6), ("\u2581translate", -6.0)])


def t5_tokenizer():
    """{file name: JSON object} of the t5-v1_1 folder's tokenizer."""
    specials = ["<pad>", "</s>", "<unk>"]
    vocab = [[t, 0.0] for t in specials] + [[t, p] for t, p in T5_PIECES]
    assert len(vocab) == 48
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(specials)]
    eos = {"SpecialToken": {"id": "</s>", "type_id": 0}}
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, meta]},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"Sequence": {"id": "A", "type_id": 0}}, eos],
                              "pair": [{"Sequence": {"id": "A", "type_id": 0}}, eos,
                                       {"Sequence": {"id": "B", "type_id": 0}}, eos],
                              "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
           "decoder": meta,
           "model": {"type": "Unigram", "unk_id": 2, "vocab": vocab, "byte_fallback": False}}
    conf = {"eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>", "extra_ids": 0,
            "model_max_length": 512, "tokenizer_class": "T5Tokenizer"}
    return {"tokenizer.json": tok, "tokenizer_config.json": conf}


CLIP_LAYER = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
              "layer_norm1", "mlp.fc1", "mlp.fc2", "layer_norm2")


def clip_text(name):
    """CLIPTextModel saved as model_type clip_text_model (configuration_clip.py
    CLIPTextConfig keys; modeling_clip.py @000f1ffdbf1c tensor names under
    text_model.), with its final_layer_norm (not in the hidden states)."""
    d, H, L, ff, P = 32, 4, 2, 64, 24
    V = len(clip_tokenizer()["tokenizer.json"]["model"]["vocab"])
    g = Gen(name, "F32")
    g.emb("text_model.embeddings.token_embedding.weight", V, d)
    g.emb("text_model.embeddings.position_embedding.weight", P, d, std=0.5)
    for l in range(L):
        attn_mlp_layer(g, "text_model.encoder.layers.%d." % l, d, ff, CLIP_LAYER)
    g.ln("text_model.final_layer_norm", d)
    cfg = base_config("CLIPTextModel", "clip_text_model", "F32", attention_dropout=0.0, bos_token_id=49406,
                      eos_token_id=49407, hidden_act="quick_gelu", hidden_size=d, initializer_factor=1.0,
                      initializer_range=0.02, intermediate_size=ff, layer_norm_eps=1e-5,
                      max_position_embeddings=P, num_attention_heads=H, num_hidden_layers=L,
                      pad_token_id=1, projection_dim=16, vocab_size=V)
    cfg["bos_token_id"], cfg["eos_token_id"] = V - 2, V - 1
    return cfg, g


def t5(name, gated, dtype, nb, md, L_dec=None):
    """T5ForConditionalGeneration (modeling_t5.py @6b8b757dfcb5 names:
    shared, encoder./decoder.block.N.layer.M.*, relative_attention_bias in
    block 0 of each stack only, final_layer_norm; lm_head only when untied,
    as save_pretrained drops the tied copies). v1.0: feed_forward_proj relu,
    wi/wo; v1.1 / Flan: gated-gelu, wi_0/wi_1/wo. d_kv·num_heads = 18 is
    not d_model = 16; the bias table has std 1.5 and no score scaling, so
    attention is far from uniform."""
    d, H, hd, ff, L, V = 16, 3, 6, 32, 2, 48
    Ld = L_dec or L
    g = Gen(name, dtype)
    g.emb("shared.weight", V, d)
    for stack, layers in (("encoder", L), ("decoder", Ld)):
        for l in range(layers):
            q = "%s.block.%d.layer." % (stack, l)
            parts = [("0.SelfAttention", 0)] + ([("1.EncDecAttention", 1)] if stack == "decoder" else [])
            for att, idx in parts:
                for proj, out, inp in (("q", H * hd, d), ("k", H * hd, d), ("v", H * hd, d), ("o", d, H * hd)):
                    g.lin(q + att + "." + proj, out, inp, 1.5 if proj in "qk" else 1.0, bias=False)
                g.ln(q + "%d.layer_norm" % idx, d, bias=False)
            if l == 0:
                g.emb(q + "0.SelfAttention.relative_attention_bias.weight", nb, H, std=1.5)
            f = "%d." % (len(parts))
            g.ln(q + f + "layer_norm", d, bias=False)
            for w in (("wi_0", "wi_1") if gated else ("wi",)):
                g.lin(q + f + "DenseReluDense." + w, ff, d, bias=False)
            g.lin(q + f + "DenseReluDense.wo", d, ff, bias=False)
        g.ln(stack + ".final_layer_norm", d, bias=False)
    if gated:
        g.lin("lm_head", V, d, bias=False)
    cfg = base_config("T5ForConditionalGeneration", "t5", dtype, classifier_dropout=0.0, d_ff=ff, d_kv=hd,
                      d_model=d, decoder_start_token_id=0, dense_act_fn="gelu_new" if gated else "relu",
                      dropout_rate=0.1, eos_token_id=1, feed_forward_proj="gated-gelu" if gated else "relu",
                      initializer_factor=1.0, is_encoder_decoder=True, is_gated_act=gated,
                      layer_norm_epsilon=1e-6, num_heads=H, num_layers=L, pad_token_id=0,
                      relative_attention_max_distance=md, relative_attention_num_buckets=nb,
                      tie_word_embeddings=not gated, use_cache=True, vocab_size=V)
    if L_dec:
        cfg["num_decoder_layers"] = Ld
    return cfg, g


def bart(name):
    """BartForConditionalGeneration (modeling_bart.py @57228229d2ee names:
    model.shared, model.encoder./decoder.embed_positions [P + 2, d],
    layernorm_embedding, layers.N.self_attn.{q,k,v,out}_proj,
    self_attn_layer_norm, (decoder) encoder_attn.*, encoder_attn_layer_norm,
    fc1, fc2, final_layer_norm; the final_logits_bias buffer and no lm_head:
    tied, dropped by save_pretrained). scale_embedding true, 3 decoder layers
    over 2 encoder layers, 4 heads of 4, F16."""
    d, H, ff, V, P, Le, Ld = 16, 4, 32, 48, 24, 2, 3
    g = Gen(name, "F16")
    g.emb("model.shared.weight", V, d, std=0.3)
    for stack, layers in (("encoder", Le), ("decoder", Ld)):
        q = "model.%s." % stack
        g.emb(q + "embed_positions.weight", P + 2, d, std=0.5)
        g.ln(q + "layernorm_embedding", d)
        for l in range(layers):
            p = q + "layers.%d." % l
            attn_mlp_layer(g, p, d, ff, OPT_LAYER)
            if stack == "decoder":
                for proj, gain in (("q_proj", QK_GAIN), ("k_proj", QK_GAIN), ("v_proj", 1.0), ("out_proj", 1.0)):
                    g.lin(p + "encoder_attn." + proj, d, d, gain)
                g.ln(p + "encoder_attn_layer_norm", d)
    g.raw("final_logits_bias", np.zeros((1, V)), "F32")
    cfg = base_config("BartForConditionalGeneration", "bart", "F16", activation_dropout=0.0,
                      activation_function="gelu", add_final_layer_norm=False, attention_dropout=0.0,
                      bos_token_id=0, classifier_dropout=0.0, d_model=d, decoder_attention_heads=H,
                      decoder_ffn_dim=ff, decoder_layerdrop=0.0, decoder_layers=Ld, decoder_start_token_id=2,
                      dropout=0.1, encoder_attention_heads=H, encoder_ffn_dim=ff, encoder_layerdrop=0.0,
                      encoder_layers=Le, eos_token_id=2, forced_eos_token_id=2, init_std=0.02,
                      is_encoder_decoder=True, max_position_embeddings=P, normalize_before=False,
                      num_hidden_layers=Le, pad_token_id=1, scale_embedding=True, use_cache=True, vocab_size=V)
    return cfg, g


def whisper(name):
    """WhisperForConditionalGeneration (modeling_whisper.py @5c48f71a682f
    names under model.): the encoder (conv1, conv2, embed_positions,
    layers.N.self_attn.* with a bias-free k_proj, layer_norm) and the decoder
    (embed_tokens, embed_positions of max_target_positions rows,
    layers.N.self_attn.*, encoder_attn.* (k_proj bias-free),
    self_attn_layer_norm, encoder_attn_layer_norm, final_layer_norm, fc1,
    fc2, layer_norm); 8 mel bins, 2 encoder and 3 decoder layers of 2 heads,
    F16; proj_out tied (not saved)."""
    d, H, ff, V, M, Ps, Pt, Le, Ld = 16, 2, 32, 48, 8, 12, 16, 2, 3
    g = Gen(name, "F16")
    e, dec = "model.encoder.", "model.decoder."
    g.lin(e + "conv1", d, M * 3, 1.5)
    g.t[e + "conv1.weight"] = (g.t[e + "conv1.weight"][0].reshape(d, M, 3), "F16")
    g.lin(e + "conv2", d, d * 3, 1.5)
    g.t[e + "conv2.weight"] = (g.t[e + "conv2.weight"][0].reshape(d, d, 3), "F16")
    g.emb(e + "embed_positions.weight", Ps, d, std=0.5)
    g.emb(dec + "embed_tokens.weight", V, d, std=0.5)
    g.emb(dec + "embed_positions.weight", Pt, d, std=0.5)
    for stack, layers in ((e, Le), (dec, Ld)):
        for l in range(layers):
            p = stack + "layers.%d." % l
            for att in ("self_attn.", "encoder_attn.") if stack == dec else ("self_attn.",):
                for proj, gain in (("q_proj", QK_GAIN), ("k_proj", QK_GAIN), ("v_proj", 1.0), ("out_proj", 1.0)):
                    g.lin(p + att + proj, d, d, gain, bias=proj != "k_proj")
                g.ln(p + att[:-1] + "_layer_norm", d)
            g.lin(p + "fc1", ff, d)
            g.lin(p + "fc2", d, ff)
            g.ln(p + "final_layer_norm", d)
        g.ln(stack + "layer_norm", d)
    cfg = base_config("WhisperForConditionalGeneration", "whisper", "F16", activation_dropout=0.0,
                      activation_function="gelu", attention_dropout=0.0, bos_token_id=45, d_model=d,
                      decoder_attention_heads=H, decoder_ffn_dim=ff, decoder_layers=Ld,
                      decoder_start_token_id=45, dropout=0.0, encoder_attention_heads=H, encoder_ffn_dim=ff,
                      encoder_layers=Le, eos_token_id=46, is_encoder_decoder=True, max_source_positions=Ps,
                      max_target_positions=Pt, num_hidden_layers=Le, num_mel_bins=M, pad_token_id=46,
                      scale_embedding=False, use_cache=True, vocab_size=V)
    return cfg, g


def ids_for(name, n, V, avoid=()):
    rng = np.random.default_rng(zlib.crc32(("ids:" + name).encode()))
    out = []
    while len(out) < n:
        i = int(rng.integers(3, V))
        if i not in avoid:
            out.append(i)
    return out


# name -> (builder, number of ids)
CASES = {
    "gpt-neox-parallel": (lambda n: gpt_neox(n, True, 0.25, False), 16),
    "gpt-neox-sequential": (lambda n: gpt_neox(n, False, 0.5, True), 16),
    "opt": (lambda n: opt(n, True, None, "model.decoder.", "F16"), 16),
    "opt-350m-like": (lambda n: opt(n, False, 16, "decoder.", "F32"), 16),
    "roberta": (lambda n: roberta(n, "roberta", "RobertaForMaskedLM"), 16),
    "xlm-roberta": (lambda n: roberta(n, "xlm-roberta", "XLMRobertaForMaskedLM"), 16),
    "distilbert": (distilbert, 16),
    "gemma": (gemma, 16),
    "gemma2": (gemma2, 16),
    "phi3": (phi3, 16),
    "qwen3": (qwen3, 14),
    "olmo2": (olmo2, 16),
    "gemma3": (gemma3, 16),
    "modernbert": (modernbert, 16),
    "modernbert-v5-bias": (lambda n: modernbert(n, biases=True, v5=True, local=5), 14),
    "mixtral": (mixtral, 16),
    "qwen2-moe": (qwen2_moe, 16),
    "olmoe": (olmoe, 16),
    "mixtral-v5": (moe_v5(mixtral), 16),
    "qwen2-moe-v5": (moe_v5(qwen2_moe), 16),
    "llama-linear": (lambda n: llama_like(n, "llama", "LlamaForCausalLM", H=4, Hkv=4,
                                          rope_scaling={"factor": 2.0, "type": "linear"}), 16),
    "llama-dynamic": (lambda n: llama_like(n, "llama", "LlamaForCausalLM", P=12,
                                           rope_scaling={"factor": 2.0, "rope_type": "dynamic"}), 18),
    "llama3": (lambda n: llama_like(n, "llama", "LlamaForCausalLM", "BF16", H=2, Hkv=1, hd=16, P=256, V=64,
                                    rope_scaling={"factor": 8.0, "high_freq_factor": 4.0,
                                                  "low_freq_factor": 1.0,
                                                  "original_max_position_embeddings": 64,
                                                  "rope_type": "llama3"}, rope_theta=10000.0), 20),
    "mistral-window": (lambda n: llama_like(n, "mistral", "MistralForCausalLM", sliding_window=5,
                                            head_dim=8), 14),
    "qwen2-window": (lambda n: llama_like(n, "qwen2", "Qwen2ForCausalLM", L=3, qkv_bias=True,
                                          max_window_layers=1, sliding_window=5, use_sliding_window=True,
                                          use_mrope=False), 14),
    "bloom": (bloom, 16),
    "mpt": (mpt, 16),
    "falcon": (lambda n: falcon(n, True, False, True, False, False, 6, 2), 16),
    "falcon-alibi": (lambda n: falcon(n, False, False, False, True, True, 12, dtype="BF16"), 16),
    "falcon-7b-like": (lambda n: falcon(n, False, True, True, False, False, 4, dtype="BF16"), 16),
    "falcon-one-ln": (lambda n: falcon(n, True, False, True, False, True, 4, 2, dtype="BF16", nln=1), 12),
    "falcon-mq-seq": (lambda n: falcon(n, False, True, False, False, True, 4, dtype="BF16"), 12),
    "gptj": (gptj, 16),
    "llama-yarn": (lambda n: llama_like(n, "llama", "LlamaForCausalLM", H=2, Hkv=2, hd=16, P=1024,
                                        rope_scaling={"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                                                      "original_max_position_embeddings": 256,
                                                      "rope_type": "yarn"}), 16),
    "qwen2-yarn": (lambda n: llama_like(n, "qwen2", "Qwen2ForCausalLM", H=2, Hkv=1, hd=16, P=512,
                                        qkv_bias=True, max_window_layers=2, sliding_window=None,
                                        use_sliding_window=False, use_mrope=False,
                                        rope_scaling={"factor": 8.0, "mscale": 1.0, "mscale_all_dim": 0.5,
                                                      "original_max_position_embeddings": 64,
                                                      "truncate": False, "type": "yarn"}), 16),
    "phi3-longrope": (phi3_longrope, 14),
    "phi3-longrope-short": (phi3_longrope, 7),
    "qwen3-yarn": (qwen3_yarn, 14),
    "clip-text": (clip_text, 16),
}

# Encoder-decoder cases: name -> (builder, source ids, target ids); the
# target starts with decoder_start_token_id (T5 0, BART 2), as HF's
# shift-right gives.
SEQ2SEQ_CASES = {
    "t5": (lambda n: t5(n, False, "F32", 8, 20), 12, 9),
    "t5-v1_1": (lambda n: t5(n, True, "BF16", 32, 128, L_dec=3), 11, 7),
    "bart": (bart, 12, 8),
    "whisper-seq2seq": (whisper, 19, 7),  # 19 frames: 10 encoder positions
}

# Other files of a case's folder: name -> () -> {file name: JSON object}.
EXTRA_FILES = {"clip-text": clip_tokenizer, "whisper-seq2seq": whisper_tokenizer,
               "t5-v1_1": t5_tokenizer}

# Variants the engine before issue 10 already runs (see --crosscheck).
CROSSCHECK = {
    "llama-plain": (lambda n: llama_like(n, "llama", "LlamaForCausalLM", qkv_bias=False), 16),
    "mistral-short": (lambda n: llama_like(n, "mistral", "MistralForCausalLM", sliding_window=20,
                                           head_dim=8), 14),
    "qwen2-short": (lambda n: llama_like(n, "qwen2", "Qwen2ForCausalLM", L=3, qkv_bias=True,
                                         max_window_layers=1, sliding_window=20, use_sliding_window=True,
                                         use_mrope=False), 14),
}


def write_folder(folder, cfg, g):
    """A fresh folder with config.json and g's model.safetensors."""
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(folder, "model.safetensors"), g.t)


def write_extra(name, folder):
    """The files of EXTRA_FILES[name] (a tokenizer) into folder."""
    for fname, obj in EXTRA_FILES.get(name, dict)().items():
        with open(os.path.join(folder, fname), "w") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")


def build(name, case, folder, refdir):
    builder, n = case
    cfg, g = builder(name)
    write_folder(folder, cfg, g)
    write_extra(name, folder)
    ids = ids_for(name, n, cfg["vocab_size"], avoid=(cfg.get("pad_token_id"),))
    attn, hidden = HF.Model(folder).forward(ids)
    os.makedirs(refdir, exist_ok=True)
    with open(os.path.join(refdir, "ids.json"), "w") as f:
        json.dump({"ids": ids}, f)
        f.write("\n")
    np.save(os.path.join(refdir, "attn.npy"), attn)
    np.save(os.path.join(refdir, "hidden.npy"), hidden)
    return attn, hidden


SEQ2SEQ_ARRAYS = ("encoder_attentions", "decoder_attentions", "cross_attentions",
                  "encoder_hidden_states", "decoder_hidden_states")


def build_seq2seq(name, case, folder, refdir):
    """An encoder-decoder folder and its reference: ids.json {"src", "tgt"}
    (whisper: {"tgt"} and features.npy, the source) and one .npy per array
    of SEQ2SEQ_ARRAYS (hf_forward.seq2seq_forward)."""
    builder, ns, nt = case
    cfg, g = builder(name)
    write_folder(folder, cfg, g)
    write_extra(name, folder)
    specials = (0, 1, 2)
    tgt = [cfg["decoder_start_token_id"]] + ids_for(name + ":tgt", nt - 1, cfg["vocab_size"], avoid=specials)
    os.makedirs(refdir, exist_ok=True)
    if cfg["model_type"] == "whisper":  # the source: input_features (num_mel_bins, ns frames)
        rng = np.random.default_rng(zlib.crc32(("features:" + name).encode()))
        src = rng.normal(0.0, 1.0, (cfg["num_mel_bins"], ns))
        np.save(os.path.join(refdir, "features.npy"), src)
        ids = {"tgt": tgt}
    else:
        src = ids_for(name, ns, cfg["vocab_size"], avoid=specials)
        ids = {"src": src, "tgt": tgt}
    out = HF.seq2seq_forward(folder, src, tgt)
    with open(os.path.join(refdir, "ids.json"), "w") as f:
        json.dump(ids, f)
        f.write("\n")
    for k in SEQ2SEQ_ARRAYS:
        np.save(os.path.join(refdir, k + ".npy"), out[k])
    return out


def score_spread(attn):
    """Smallest over heads of the mean max probability per row: 1/n would be
    uniform attention."""
    return float(attn.max(axis=-1).mean(axis=-1).min())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "models", "arch"))
    ap.add_argument("--ref", default=os.path.join(ROOT, "tests", "data", "archref"))
    ap.add_argument("--crosscheck", metavar="DIR")
    ap.add_argument("names", nargs="*", help="only these cases (default: all)")
    a = ap.parse_args(argv[1:])
    if a.crosscheck:
        for name, case in CROSSCHECK.items():
            folder = os.path.join(a.crosscheck, name)
            build(name, case, folder, folder)
            print("%-20s %s" % (name, folder))
        return 0
    for name, case in CASES.items():
        if a.names and name not in a.names:
            continue
        attn, hidden = build(name, case, os.path.join(a.out, name), os.path.join(a.ref, name))
        print("%-20s attn %s  hidden %s  min mean-max-prob %.2f  max|h| %.1f"
              % (name, attn.shape, hidden.shape, score_spread(attn), np.abs(hidden).max()))
    for name, case in SEQ2SEQ_CASES.items():
        if a.names and name not in a.names:
            continue
        out = build_seq2seq(name, case, os.path.join(a.out, name), os.path.join(a.ref, name))
        print("%-20s enc %s dec %s cross %s  min mean-max-prob %.2f %.2f %.2f"
              % (name, out["encoder_attentions"].shape, out["decoder_attentions"].shape,
                 out["cross_attentions"].shape, score_spread(out["encoder_attentions"]),
                 score_spread(out["decoder_attentions"]), score_spread(out["cross_attentions"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
