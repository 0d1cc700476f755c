#!/usr/bin/python3
"""Write the random-weight ViT and Whisper-encoder folders of issue 15 in
Hugging Face's layout (config.json + model.safetensors, F32), numpy only.

Usage: /usr/bin/python3 tests/ref/make_encoders.py [OUT_DIR]
(default tests/data/models: tiny-vit, tiny-vit-cls, tiny-whisper,
tiny-dinov2, tiny-dinov2-reg).

- tiny-vit: ViTModel names (no prefix) with its pooler, 32x32 images in 8x8
  patches (17 positions), d 32, 2 layers, 4 heads, hidden_act gelu.
- tiny-vit-cls: ViTForImageClassification names ("vit." + the same, no
  pooler) and a classifier, qkv_bias false, hidden_act gelu_new.
- tiny-whisper: WhisperForConditionalGeneration names (model.encoder.*,
  k_proj without bias), num_mel_bins 80, max_source_positions 1500 with
  sinusoidal embed_positions (modeling_whisper.py sinusoids, as HF
  initialises them), plus decoder tensors and proj_out, which the engine
  must ignore.
- tiny-dinov2: Dinov2Model names, 32x32 images in 8x8 patches, d 32, 2
  layers, 4 heads, mlp_ratio 2.5, layer scales in [0.2, 0.8], an unused
  mask_token (modeling_dinov2.py @ 015e68769f98).
- tiny-dinov2-reg: Dinov2WithRegistersModel names (tiny-dinov2's and
  embeddings.register_tokens), num_register_tokens 3: 1 + 3 + 16 rows
  (modeling_dinov2_with_registers.py @ c80ba31e8771).

Weights have a realistic scale (q and k of std ~1.5 per element after the
norms) so the attention is far from uniform. The same seeds give the same
bytes. check_encoders.py imports `write_folder`, `vit_tensors` and
`whisper_tensors` to make more variants in a temporary folder.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def write_safetensors(path, tensors):
    """tensors: list of (name, float array); stored F32 in that order. The
    header is padded with spaces to a multiple of 8 bytes (as the reference
    writer does)."""
    header, blobs, off = {}, [], 0
    for name, a in tensors:
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_folder(folder, config, tensors):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def lin(rng, out, inp, gain=1.0, bias=True):
    """nn.Linear [out, in] weight with std gain/sqrt(in) and a bias."""
    w = f32(rng.normal(0, gain / np.sqrt(inp), (out, inp)))
    return w, (f32(rng.normal(0, 0.1, out)) if bias else None)


def norm(rng, d):
    return f32(1 + rng.normal(0, 0.2, d)), f32(rng.normal(0, 0.1, d))


def add_lin(t, name, wb):
    t.append((name + ".weight", wb[0]))
    if wb[1] is not None:
        t.append((name + ".bias", wb[1]))


def add_norm(t, name, wb):
    t.append((name + ".weight", wb[0]))
    t.append((name + ".bias", wb[1]))


def vit_config(**over):
    c = {"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
         "initializer_range": 0.02, "layer_norm_eps": 1e-12, "image_size": 32, "patch_size": 8,
         "num_channels": 3, "qkv_bias": True, "encoder_stride": 8}
    c.update(over)
    return c


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def vit_tensors(cfg, seed, prefix="", pooler=False, classifier=0):
    """The tensors of a ViT folder: ViTModel's names after `prefix`."""
    rng = np.random.default_rng(seed)
    d, ff, C = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_channels"]
    (ih, iw), (ph, pw) = pair(cfg["image_size"]), pair(cfg["patch_size"])
    n = (ih // ph) * (iw // pw) + 1
    qb = cfg.get("qkv_bias", True)
    t = [(prefix + "embeddings.cls_token", f32(rng.normal(0, 0.5, (1, 1, d)))),
         (prefix + "embeddings.position_embeddings", f32(rng.normal(0, 0.5, (1, n, d)))),
         (prefix + "embeddings.patch_embeddings.projection.weight",
          f32(rng.normal(0, 1.5 / np.sqrt(C * ph * pw), (d, C, ph, pw)))),
         (prefix + "embeddings.patch_embeddings.projection.bias", f32(rng.normal(0, 0.1, d)))]
    for i in range(cfg["num_hidden_layers"]):
        p = "%sencoder.layer.%d." % (prefix, i)
        add_norm(t, p + "layernorm_before", norm(rng, d))
        add_lin(t, p + "attention.attention.query", lin(rng, d, d, 1.5, qb))
        add_lin(t, p + "attention.attention.key", lin(rng, d, d, 1.5, qb))
        add_lin(t, p + "attention.attention.value", lin(rng, d, d, 1.0, qb))
        add_lin(t, p + "attention.output.dense", lin(rng, d, d))
        add_norm(t, p + "layernorm_after", norm(rng, d))
        add_lin(t, p + "intermediate.dense", lin(rng, ff, d))
        add_lin(t, p + "output.dense", lin(rng, d, ff))
    add_norm(t, prefix + "layernorm", norm(rng, d))
    if pooler:
        add_lin(t, prefix + "pooler.dense", lin(rng, d, d))
    if classifier:
        add_lin(t, "classifier", lin(rng, classifier, d))
    return t


def dinov2_config(**over):
    """Dinov2Config keys (configuration_dinov2.py): mlp_ratio 2.5 (d_ff =
    int(32 · 2.5) = 80), layer_norm_eps 1e-6, a mask_token that is unused."""
    c = {"model_type": "dinov2", "architectures": ["Dinov2Model"], "hidden_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "mlp_ratio": 2.5, "hidden_act": "gelu",
         "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02,
         "layer_norm_eps": 1e-6, "image_size": 32, "patch_size": 8, "num_channels": 3, "qkv_bias": True,
         "layerscale_value": 1.0, "drop_path_rate": 0.0, "use_swiglu_ffn": False, "use_mask_token": True,
         "apply_layernorm": True, "reshape_hidden_states": True}
    c.update(over)
    return c


def dinov2_tensors(cfg, seed, prefix="", classifier=0):
    """The tensors of a DINOv2 folder: Dinov2Model's names after `prefix`;
    layer scales around 0.5 (neither 1 nor equal)."""
    rng = np.random.default_rng(seed)
    d, C = cfg["hidden_size"], cfg["num_channels"]
    ff = int(d * cfg["mlp_ratio"])
    (ih, iw), (ph, pw) = pair(cfg["image_size"]), pair(cfg["patch_size"])
    n = (ih // ph) * (iw // pw) + 1
    t = [(prefix + "embeddings.cls_token", f32(rng.normal(0, 0.5, (1, 1, d)))),
         (prefix + "embeddings.mask_token", f32(rng.normal(0, 0.5, (1, d)))),
         (prefix + "embeddings.position_embeddings", f32(rng.normal(0, 0.5, (1, n, d)))),
         (prefix + "embeddings.patch_embeddings.projection.weight",
          f32(rng.normal(0, 1.5 / np.sqrt(C * ph * pw), (d, C, ph, pw)))),
         (prefix + "embeddings.patch_embeddings.projection.bias", f32(rng.normal(0, 0.1, d)))]
    for i in range(cfg["num_hidden_layers"]):
        p = "%sencoder.layer.%d." % (prefix, i)
        add_norm(t, p + "norm1", norm(rng, d))
        add_lin(t, p + "attention.attention.query", lin(rng, d, d, 1.5))
        add_lin(t, p + "attention.attention.key", lin(rng, d, d, 1.5))
        add_lin(t, p + "attention.attention.value", lin(rng, d, d, 1.0))
        add_lin(t, p + "attention.output.dense", lin(rng, d, d))
        t.append((p + "layer_scale1.lambda1", f32(rng.uniform(0.2, 0.8, d))))
        add_norm(t, p + "norm2", norm(rng, d))
        add_lin(t, p + "mlp.fc1", lin(rng, ff, d))
        add_lin(t, p + "mlp.fc2", lin(rng, d, ff))
        t.append((p + "layer_scale2.lambda1", f32(rng.uniform(0.2, 0.8, d))))
    add_norm(t, prefix + "layernorm", norm(rng, d))
    if classifier:
        add_lin(t, "classifier", lin(rng, classifier, 2 * d))
    return t


def dinov2_registers_config(**over):
    """Dinov2WithRegistersConfig keys (configuration_dinov2_with_registers.py
    @ 9077d06641ff): Dinov2's plus num_register_tokens (here 3, not the
    default 4, so that a default read would be caught)."""
    c = dinov2_config(model_type="dinov2_with_registers", architectures=["Dinov2WithRegistersModel"],
                      num_register_tokens=3, out_features=["stage2"], out_indices=[2],
                      stage_names=["stem", "stage1", "stage2"])
    c.update(over)
    return c


def dinov2_registers_tensors(cfg, seed, prefix="", classifier=0):
    """Dinov2WithRegistersModel's names after `prefix`: Dinov2's, with
    embeddings.register_tokens (1, R, d) after the mask_token (random, not
    HF's zero initialisation, as a trained model's)."""
    t = dinov2_tensors(cfg, seed, prefix, classifier)
    rng = np.random.default_rng(seed + 1000)
    reg = (prefix + "embeddings.register_tokens",
           f32(rng.normal(0, 0.5, (1, cfg["num_register_tokens"], cfg["hidden_size"]))))
    return t[:2] + [reg] + t[2:]


def clip_vision_config(**over):
    """CLIPVisionConfig keys (configuration_clip.py), model_type
    clip_vision_model as CLIPVisionModel saves it."""
    c = {"model_type": "clip_vision_model", "architectures": ["CLIPVisionModel"], "hidden_size": 32,
         "intermediate_size": 64, "projection_dim": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_channels": 3, "image_size": 32, "patch_size": 8, "hidden_act": "quick_gelu",
         "layer_norm_eps": 1e-5, "attention_dropout": 0.0, "initializer_range": 0.02,
         "initializer_factor": 1.0}
    c.update(over)
    return c


def clip_vision_tensors(cfg, seed, prefix="vision_model."):
    """CLIPVisionModel's tensors (no patch bias, class_embedding (d),
    position_embedding.weight (n, d), pre_layrnorm, post_layernorm)."""
    rng = np.random.default_rng(seed)
    d, ff, C = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_channels"]
    (ih, iw), (ph, pw) = pair(cfg["image_size"]), pair(cfg["patch_size"])
    n = (ih // ph) * (iw // pw) + 1
    t = [(prefix + "embeddings.class_embedding", f32(rng.normal(0, 0.5, d))),
         (prefix + "embeddings.patch_embedding.weight", f32(rng.normal(0, 1.5 / np.sqrt(C * ph * pw), (d, C, ph, pw)))),
         (prefix + "embeddings.position_embedding.weight", f32(rng.normal(0, 0.5, (n, d))))]
    add_norm(t, prefix + "pre_layrnorm", norm(rng, d))
    for i in range(cfg["num_hidden_layers"]):
        p = "%sencoder.layers.%d." % (prefix, i)
        add_norm(t, p + "layer_norm1", norm(rng, d))
        add_lin(t, p + "self_attn.k_proj", lin(rng, d, d, 1.5))
        add_lin(t, p + "self_attn.v_proj", lin(rng, d, d, 1.0))
        add_lin(t, p + "self_attn.q_proj", lin(rng, d, d, 1.5))
        add_lin(t, p + "self_attn.out_proj", lin(rng, d, d))
        add_norm(t, p + "layer_norm2", norm(rng, d))
        add_lin(t, p + "mlp.fc1", lin(rng, ff, d))
        add_lin(t, p + "mlp.fc2", lin(rng, d, ff))
    add_norm(t, prefix + "post_layernorm", norm(rng, d))
    return t


def sinusoids(length, channels, max_timescale=10000.0):
    """modeling_whisper.py sinusoids: [sin(t·inv) | cos(t·inv)], inv =
    exp(-log(max_timescale)/(channels/2 - 1) · j). Computed in float64
    here (HF: float32), then stored F32."""
    inc = np.log(max_timescale) / (channels // 2 - 1)
    inv = np.exp(-inc * np.arange(channels // 2))
    st = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(st), np.cos(st)], axis=1)


def whisper_config(**over):
    c = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
         "d_model": 32, "encoder_layers": 2, "encoder_attention_heads": 4, "encoder_ffn_dim": 64,
         "decoder_layers": 1, "decoder_attention_heads": 4, "decoder_ffn_dim": 64,
         "num_mel_bins": 80, "max_source_positions": 1500, "max_target_positions": 16,
         "vocab_size": 100, "activation_function": "gelu", "scale_embedding": False,
         "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0,
         "pad_token_id": 99, "bos_token_id": 98, "eos_token_id": 99, "decoder_start_token_id": 98}
    c.update(over)
    return c


def whisper_tensors(cfg, seed, prefix="model."):
    """WhisperEncoder's tensors under prefix + "encoder.", then a few of the
    decoder's and proj_out (never read by the engine)."""
    rng = np.random.default_rng(seed)
    d, ff, M, P = cfg["d_model"], cfg["encoder_ffn_dim"], cfg["num_mel_bins"], cfg["max_source_positions"]
    e = prefix + "encoder."
    t = [(e + "conv1.weight", f32(rng.normal(0, 1.5 / np.sqrt(3 * M), (d, M, 3)))),
         (e + "conv1.bias", f32(rng.normal(0, 0.1, d))),
         (e + "conv2.weight", f32(rng.normal(0, 1.5 / np.sqrt(3 * d), (d, d, 3)))),
         (e + "conv2.bias", f32(rng.normal(0, 0.1, d))),
         (e + "embed_positions.weight", f32(sinusoids(P, d)))]
    for i in range(cfg["encoder_layers"]):
        p = "%slayers.%d." % (e, i)
        add_lin(t, p + "self_attn.k_proj", lin(rng, d, d, 1.5, bias=False))
        add_lin(t, p + "self_attn.v_proj", lin(rng, d, d))
        add_lin(t, p + "self_attn.q_proj", lin(rng, d, d, 1.5))
        add_lin(t, p + "self_attn.out_proj", lin(rng, d, d))
        add_norm(t, p + "self_attn_layer_norm", norm(rng, d))
        add_lin(t, p + "fc1", lin(rng, ff, d))
        add_lin(t, p + "fc2", lin(rng, d, ff))
        add_norm(t, p + "final_layer_norm", norm(rng, d))
    add_norm(t, e + "layer_norm", norm(rng, d))
    dec = prefix + "decoder."
    emb = f32(rng.normal(0, 0.5, (cfg["vocab_size"], d)))
    t.append((dec + "embed_tokens.weight", emb))
    t.append((dec + "embed_positions.weight", f32(rng.normal(0, 0.5, (cfg["max_target_positions"], d)))))
    add_lin(t, dec + "layers.0.self_attn.k_proj", lin(rng, d, d, bias=False))
    add_lin(t, dec + "layers.0.encoder_attn.q_proj", lin(rng, d, d))
    add_norm(t, dec + "layer_norm", norm(rng, d))
    if prefix:
        t.append(("proj_out.weight", emb))  # tied to embed_tokens
    return t


COMMITTED = ("tiny-vit", "tiny-vit-cls", "tiny-whisper", "tiny-dinov2", "tiny-dinov2-reg")


def make_all(out, quiet=False):
    """The committed folders (COMMITTED) under out."""
    cv = vit_config()
    write_folder(os.path.join(out, "tiny-vit"), cv, vit_tensors(cv, 15, pooler=True))
    cc = vit_config(architectures=["ViTForImageClassification"], qkv_bias=False, hidden_act="gelu_new",
                    id2label={"0": "a", "1": "b", "2": "c"}, label2id={"a": 0, "b": 1, "c": 2})
    write_folder(os.path.join(out, "tiny-vit-cls"), cc, vit_tensors(cc, 16, prefix="vit.", classifier=3))
    cw = whisper_config()
    write_folder(os.path.join(out, "tiny-whisper"), cw, whisper_tensors(cw, 17))
    cd = dinov2_config()
    write_folder(os.path.join(out, "tiny-dinov2"), cd, dinov2_tensors(cd, 18))
    cr = dinov2_registers_config()
    write_folder(os.path.join(out, "tiny-dinov2-reg"), cr, dinov2_registers_tensors(cr, 19))
    for name in COMMITTED:
        p = os.path.join(out, name, "model.safetensors")
        if not quiet:
            print("%s: %d bytes" % (p, os.path.getsize(p)))


def main():
    make_all(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "models"))


if __name__ == "__main__":
    main()
