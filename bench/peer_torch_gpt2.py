#!/usr/bin/python3
"""The PyTorch peer of attngeom's float32 forward pass for make bench.

Usage: /usr/bin/python3 bench/peer_torch_gpt2.py MODEL TOKENS.txt OUT.json THREADS

GPT-2's forward pass written with torch ops in float32, as Hugging Face's
GPT2Model computes it in eager mode (modeling_gpt2.py): LayerNorm (eps from
config.json), the fused c_attn Conv1D (x W + b, W stored [in, out]), scores
(q / sqrt(d_head)) kᵀ, the causal mask (finfo.min, as HF), softmax, A V,
c_proj, the MLP with GELU's tanh form ("gelu_new"), and ln_f. No LM head:
attngeom's analyze does not compute logits either. From every head's
attention probabilities it forms the mean row entropy H = -(1/n) Σ_i Σ_j
A_ij ln A_ij (docs/metrics.md, entropy_mean; sums in float64), which is
what `attngeom analyze --metrics entropy_mean` prints.

One text at a time (TOKENS.txt: one sequence of ids a line, as attngeom's
--tokens-file), torch.no_grad(), torch.set_num_threads(THREADS). Weights are
read from model.safetensors (float32) without the safetensors package
(little-endian host assumed, as torch.frombuffer reads native order).
Writes {"torch": version, "threads": n, "forward_s": seconds spent in the
forward passes, "entropy": [[[H per head] per layer] per text]}.
"""
import json
import math
import os
import struct
import sys
import time

import torch


def load_safetensors(path):
    """{name: float32 tensor}, views of the file read into one buffer (as
    safetensors.torch.load_file holds the weights: one copy in memory)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = bytearray(os.fstat(f.fileno()).st_size - 8 - size)
        f.readinto(data)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError("%s: %s is %s, expected F32" % (path, name, t["dtype"]))
        lo, hi = t["data_offsets"]
        out[name] = torch.frombuffer(data, dtype=torch.float32, offset=lo,
                                     count=(hi - lo) // 4).view(t["shape"])
    return out


def entropy_per_head(p):
    """Mean row entropy of each head of p [H, n, n] (xlogy: 0 ln 0 = 0). Terms
    and row sums in float32 (torch sums in cascade), the mean over the rows in
    float64: within 1e-7 of an all-float64 computation, which takes three
    times as long (a float64 copy of p for the sums alone costs more than
    the layer's softmax)."""
    return (-torch.special.xlogy(p, p).sum(-1).double().mean(-1)).tolist()


def forward(w, cfg, ids):
    """Per layer, the mean row entropy of every head's attention."""
    n, d, H = len(ids), cfg["n_embd"], cfg["n_head"]
    dh = d // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    ln = torch.nn.functional.layer_norm
    x = w["wte.weight"][torch.tensor(ids)] + w["wpe.weight"][:n]
    masked = torch.ones(n, n, dtype=torch.bool).triu(1)
    lowest = torch.finfo(torch.float32).min
    scale = 1.0 / math.sqrt(dh)
    entropies = []
    for i in range(cfg["n_layer"]):
        p = "h.%d." % i
        h = ln(x, (d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = torch.addmm(w[p + "attn.c_attn.bias"], h, w[p + "attn.c_attn.weight"])
        q, k, v = (t.view(n, H, dh).transpose(0, 1) for t in qkv.split(d, dim=1))
        # q·scale before the product instead of HF's scores·scale after it:
        # n·d products instead of H·n², and the same bits when scale is a
        # power of 2 (1/8 for d_head = 64)
        s = torch.matmul(q * scale, k.transpose(-1, -2))
        s.masked_fill_(masked, lowest)
        a = torch.softmax(s, dim=-1)
        entropies.append(entropy_per_head(a))
        o = torch.matmul(a, v).transpose(0, 1).reshape(n, d)
        x = x + torch.addmm(w[p + "attn.c_proj.bias"], o, w[p + "attn.c_proj.weight"])
        h = ln(x, (d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = torch.nn.functional.gelu(
            torch.addmm(w[p + "mlp.c_fc.bias"], h, w[p + "mlp.c_fc.weight"]),
            approximate="tanh")
        x = x + torch.addmm(w[p + "mlp.c_proj.bias"], m, w[p + "mlp.c_proj.weight"])
    ln(x, (d,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return entropies


def main():
    if len(sys.argv) != 5:
        print("usage: peer_torch_gpt2.py MODEL TOKENS.txt OUT.json THREADS",
              file=sys.stderr)
        return 2
    model, tokens, out, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    torch.set_num_threads(threads)
    with open(os.path.join(model, "config.json")) as f:
        cfg = json.load(f)
    w = load_safetensors(os.path.join(model, "model.safetensors"))
    with open(tokens) as f:
        texts = [[int(t) for t in line.replace(",", " ").split()] for line in f if line.strip()]
    t0 = time.perf_counter()
    with torch.no_grad():
        result = [forward(w, cfg, ids) for ids in texts]
    dt = time.perf_counter() - t0
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(),
                   "forward_s": dt, "entropy": result}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
