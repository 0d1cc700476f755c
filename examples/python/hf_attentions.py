#!/usr/bin/env python3
"""Hugging Face's outputs.attentions straight into attngeom, in one call.

A batch of texts of different lengths, right-padded, goes through the
PyTorch GPT-2 of torch_hook.py (models/tiny-gpt2's weights) the way a
transformers model is called: model(input_ids, attention_mask=mask) returns
.attentions, a tuple of per-layer [batch, H, n, n] tensors. Then

    attngeom.matrix_metrics(outputs.attentions, attention_mask=mask)

measures every (sequence, layer, head), each sequence cut to its real
tokens: its records carry "batch". The forward runs with autograd on (the
tensors require grad): attngeom reads them without building a graph. Each
sequence's attention is checked against attngeom's own pass on that text
alone. Needs Debian's python3-torch.

    PYTHONPATH=python python3 examples/python/hf_attentions.py [TEXT ...]
"""

import sys

import numpy as np
import torch

import attngeom
from torch_hook import GPT2, MODEL

TEXTS = ["In the beginning God created the heaven and the earth.",
         "And the earth was without form, and void.",
         "Let there be light."]
METRICS = ["entropy_mean", "sink_mass", "prev_token_mass"]


def padded(ids):
    """input_ids and attention_mask [batch, n] of right-padded sequences
    (HF's tokenizer(..., padding=True) for GPT-2); the pad id is never read."""
    n = max(len(x) for x in ids)
    input_ids = torch.zeros(len(ids), n, dtype=torch.long)
    mask = torch.zeros(len(ids), n, dtype=torch.long)
    for b, x in enumerate(ids):
        input_ids[b, :len(x)] = torch.tensor(x)
        mask[b, :len(x)] = 1
    return input_ids, mask


def main():
    texts = sys.argv[1:] or TEXTS
    ours = attngeom.Model(MODEL)
    ids = [ours.tokenize(t) for t in texts]
    input_ids, mask = padded(ids)
    model = GPT2(MODEL)
    for w in model.w.values():  # as in training: the attentions require grad
        w.requires_grad_(True)
    outputs = model(input_ids, attention_mask=mask)
    rows = attngeom.matrix_metrics(outputs.attentions, METRICS, attention_mask=mask)
    print("%-5s %-5s %-4s %4s %12s %10s %15s" % ("batch", "layer", "head", "rows",
                                                 "entropy_mean", "sink_mass", "prev_token_mass"))
    for r in rows:
        print("%-5d %-5d %-4d %4d %12.6f %10.6f %15.6f" % (
            r["batch"], r["layer"], r["head"], r["rows"], r["entropy_mean"], r["sink_mass"],
            r["prev_token_mass"]))
    diff = 0.0
    for b, x in enumerate(ids):  # sequence b's real tokens against its own run
        mine = np.stack([a[b, :, :len(x), :len(x)].detach().numpy() for a in outputs.attentions])
        diff = max(diff, float(np.abs(mine - ours.attention(x, precision="f64")).max()))
    print("%d texts of %s tokens; max |attention difference| = %.3g"
          % (len(ids), ", ".join(str(len(x)) for x in ids), diff))
    print("attention equals attngeom's own: %s" % (diff < 1e-12))


if __name__ == "__main__":
    main()
