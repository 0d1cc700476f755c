#!/usr/bin/env python3
"""A small GPT-2 written in PyTorch, a forward hook that captures each
layer's attention probabilities, and attngeom's metrics computed on them in
place: the way to measure a model attngeom does not load itself.

The weights are models/tiny-gpt2's (read from its safetensors with numpy),
so the captured attention can be checked against attngeom's own forward
pass. The model runs in float64: .numpy() of a float64 tensor shares its
memory, and attngeom.matrix_metrics measures float64 arrays without a copy
(a float32 model works too; its probabilities are then converted exactly
to float64, one copy). Needs Debian's python3-torch.

    PYTHONPATH=python python3 examples/python/torch_hook.py [TEXT]
"""

import json
import math
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

import attngeom

MODEL = Path(__file__).resolve().parents[2] / "models" / "tiny-gpt2"
TEXT = "In the beginning God created the heaven and the earth."


def load_safetensors(path):
    """name -> float64 tensor, from the format's header and raw little-endian data."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        a = np.frombuffer(data[lo:hi], dtype=dtypes[t["dtype"]]).reshape(t["shape"])
        out[name] = torch.from_numpy(a.astype(np.float64))
    return out


class Probs(nn.Module):
    """The identity on attention probabilities: a place for a forward hook."""

    def forward(self, p):
        return p


class Block(nn.Module):
    """A GPT-2 block (modeling_gpt2.py): x + attn(ln_1(x)), then + mlp(ln_2(x))."""

    def __init__(self, w, i, n_head, eps):
        super().__init__()
        self.w = {k[len("h.%d." % i):]: v for k, v in w.items() if k.startswith("h.%d." % i)}
        self.n_head, self.eps, self.probs = n_head, eps, Probs()

    def ln(self, x, name):
        return nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"],
                                        self.w[name + ".bias"], self.eps)

    def attn(self, x, real):
        B, n, d = x.shape
        hd = d // self.n_head
        qkv = x @ self.w["attn.c_attn.weight"] + self.w["attn.c_attn.bias"]  # Conv1D: x W + b
        q, k, v = (t.reshape(B, n, self.n_head, hd).transpose(1, 2) for t in qkv.split(d, dim=2))
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        # the future and padded keys; HF fills with the dtype's minimum (not
        # -inf) so that a padding row has no NaN; a real row's weights are
        # the same, exp(min - max) being 0
        hide = torch.ones(n, n, dtype=torch.bool).triu(1) | ~real[:, None, None, :]
        s = s.masked_fill(hide, torch.finfo(s.dtype).min)
        p = self.probs(torch.softmax(s, dim=-1))  # [B, H, n, n]: the hook sees this
        out = (p @ v).transpose(1, 2).reshape(B, n, d)
        return out @ self.w["attn.c_proj.weight"] + self.w["attn.c_proj.bias"], p

    def forward(self, x, real):
        a, p = self.attn(self.ln(x, "ln_1"), real)
        x = x + a
        h = self.ln(x, "ln_2") @ self.w["mlp.c_fc.weight"] + self.w["mlp.c_fc.bias"]
        h = nn.functional.gelu(h, approximate="tanh")  # gelu_new
        return x + h @ self.w["mlp.c_proj.weight"] + self.w["mlp.c_proj.bias"], p


class GPT2(nn.Module):
    def __init__(self, folder):
        super().__init__()
        cfg = json.loads((folder / "config.json").read_text())
        self.w = load_safetensors(folder / "model.safetensors")
        self.blocks = nn.ModuleList(Block(self.w, i, cfg["n_head"], cfg["layer_norm_epsilon"])
                                    for i in range(cfg["n_layer"]))

    def forward(self, ids, attention_mask=None):
        """ids [batch, n] (right-padded: positions count from 0 in every
        row); attention_mask [batch, n], 1 = real token, as Hugging Face
        takes it. Returns .last_hidden_state and .attentions, HF's tuple of
        per-layer [batch, H, n, n] probabilities."""
        real = torch.ones_like(ids, dtype=torch.bool) if attention_mask is None \
            else attention_mask.bool()
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][: ids.shape[1]]
        attentions = []
        for b in self.blocks:
            x, p = b(x, real)
            attentions.append(p)
        return SimpleNamespace(last_hidden_state=x, attentions=tuple(attentions))


def main():
    text = sys.argv[1] if len(sys.argv) > 1 else TEXT
    ours = attngeom.Model(MODEL)  # its tokenizer, and its attention to check against
    ids = ours.tokenize(text)
    model = GPT2(MODEL)
    captured = []
    for b in model.blocks:  # one hook per layer: keep the probabilities it saw
        b.probs.register_forward_hook(lambda mod, inp, out: captured.append(out.detach()))
    with torch.no_grad():
        model(torch.tensor([ids]))  # a batch of one text
    rows = []
    for layer, p in enumerate(captured):
        # p: [1, H, n, n], one layer of a batch (layout "BHNN"); float64, read
        # in the tensor's memory: no copy here or in attngeom
        rows += attngeom.matrix_metrics(p, ["entropy_mean", "sink_mass", "prev_token_mass",
                                            "effective_rank"], layout="BHNN", layer_offset=layer)
    print("%-5s %-4s %12s %10s %15s %14s" % ("layer", "head", "entropy_mean", "sink_mass",
                                             "prev_token_mass", "effective_rank"))
    for r in rows:
        print("%-5d %-4d %12.6f %10.6f %15.6f %14.6f" % (
            r["layer"], r["head"], r["entropy_mean"], r["sink_mass"], r["prev_token_mass"],
            r["effective_rank"]))
    # the same model run by attngeom's engine, in float64 too
    theirs = ours.attention(ids, precision="f64")
    mine = np.stack([p[0].numpy() for p in captured])
    diff = float(np.abs(mine - theirs).max())
    print("tokens: %d; max |attention difference| = %.3g" % (len(ids), diff))
    print("attention equals attngeom's own: %s" % (diff < 1e-12))


if __name__ == "__main__":
    main()
