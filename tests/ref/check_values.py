#!/usr/bin/python3
"""Check family H (docs/metrics.md, "H. Value norms", `--metrics values`)
against an independent float64 numpy reference.

Usage: /usr/bin/python3 tests/ref/check_values.py path/to/attngeom

Kobayashi et al. 2020 ("Attention is Not Only a Weight", §3), as their code
computes it (gorokoba560/norm-analysis-of-transformer, modeling_bert.py:
transformed_layer = einsum('bhsv,dhv->bhsd', value_layer, dense.weight
viewed per head), weighted by attention_probs, then the norm): for query
head h of a layer, with the per-layer trace of tests/ref/hf_forward.py
(its own float64 forward pass of the Hugging Face modelling code: the value
vectors v = x W_V + b_V of every query head, GQA heads given their shared
key/value head, the probabilities p and the output projection W_O),
  f_h(x_j) = v_h[j] @ W_O[h*dh:(h+1)*dh]       (no output bias)
  norms_j  = |f_h(x_j)|_2,   N_ij = p_h[i, j] * norms_j
  value_norm_mean      = mean_j norms_j
  value_norm_cv        = std(norms, ddof 0) / mean   (null when mean = 0)
  sink_value_ratio     = norms_0 / mean              (null when mean = 0)
  norm_attention_shift = mean over the rows i with sum_j N_ij > 0 of
                         0.5 sum_j |p_ij / sum_k p_ik - N_ij / sum_k N_ik|
and compared with `attngeom analyze MODEL --tokens ... --precision f64
--metrics values` for every layer and head to 1e-9 (relative, absolute
below 1): models/tiny-gpt2 (causal, biases), tests/data/models/tiny-bert
(bidirectional, biases, post-LN: x is the block input), and the
grouped-query tests/data/models/arch/llama3 (2 query heads, 1 key/value
head, RMSNorm input, RoPE) and mistral-window (sliding window, GQA), then
every other folder of tests/data/models/arch (GPT-NeoX per-head fused QKV
and parallel residual, OPT pre- and post-LN, Gemma, Gemma-2, Phi-3 fused
QKV, Qwen2, DistilBERT, RoBERTa, XLM-RoBERTa); and the image and audio
encoders tiny-vit (random pixels, `--pixels`) and tiny-whisper (random
features, `--features`) against tests/ref/encoders_ref.py's passes.
Prints the largest error per model; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import encoders_ref as ENC  # noqa: E402
import hf_forward as HF  # noqa: E402

TOL = 1e-9
KEYS = ["value_norm_mean", "value_norm_cv", "sink_value_ratio", "norm_attention_shift"]
MODELS = [
    ("tiny-gpt2", os.path.join(ROOT, "models/tiny-gpt2"), [464, 3797, 3332, 319, 262, 2603, 13, 383, 3797]),
    ("tiny-bert", os.path.join(ROOT, "tests/data/models/tiny-bert"), [101, 1996, 3937, 2938, 2006, 1996, 1523, 102]),
    ("llama3", os.path.join(ROOT, "tests/data/models/arch/llama3"), [1, 5, 9, 17, 33, 5, 9, 60, 2]),
    ("mistral-window", os.path.join(ROOT, "tests/data/models/arch/mistral-window"), [1, 7, 3, 12, 40, 7, 3, 21, 5, 2]),
]
# every other one-stack architecture folder (ids below their vocabularies of
# 64+; the encoder-decoder folders run through `--target`, not here)
ARCH = os.path.join(ROOT, "tests/data/models/arch")
MODELS += [(name, os.path.join(ARCH, name), [3, 11, 29, 7, 52, 11, 29, 60, 4])
           for name in sorted(os.listdir(ARCH))
           if os.path.exists(os.path.join(ARCH, name, "config.json"))
           and HF.one_stack(os.path.join(ARCH, name))
           and name not in ("llama3", "mistral-window")]


def head_metrics(p, v, wo):
    """The four keys of one head: p [n, n], v [n, dh], wo [dh, d]."""
    f = v @ wo
    norms = np.sqrt(np.sum(f * f, axis=1))
    mean = norms.mean()
    out = {"value_norm_mean": mean,
           "value_norm_cv": norms.std() / mean if mean > 0 else None,
           "sink_value_ratio": norms[0] / mean if mean > 0 else None}
    N = p * norms[None, :]
    sa, sn = p.sum(axis=1), N.sum(axis=1)
    rows = (sa > 0) & (sn > 0)
    if rows.any():
        tv = 0.5 * np.abs(p[rows] / sa[rows, None] - N[rows] / sn[rows, None]).sum(axis=1)
        out["norm_attention_shift"] = tv.mean()
    else:
        out["norm_attention_shift"] = None
    return out


def reference(folder, ids):
    _, _, layers = HF.trace(HF.Model(folder), ids)
    return reference_of(layers)


def reference_of(layers):
    ref = {}
    for l, t in enumerate(layers):
        H, _, dh = t["v"].shape
        for h in range(H):
            ref[(l, h)] = head_metrics(t["p"][h], t["v"][h], t["wo"][h * dh:(h + 1) * dh])
    return ref


def run_cli(cli, folder, ids):
    return run_analyze(cli, folder, ["--tokens", ",".join(map(str, ids))])


def run_analyze(cli, folder, inputs):
    p = subprocess.run([cli, "analyze", folder] + inputs +
                       ["--precision", "f64", "--metrics", "values", "--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("analyze %s failed: %s" % (folder, p.stderr.strip()))
    return {(r["layer"], r["head"]): r for r in json.loads(p.stdout)["records"]}


def check_model(cli, name, folder, ids):
    return compare(name, reference(folder, ids), run_cli(cli, folder, ids))


def check_encoders(cli):
    """tiny-vit on a random [3, 32, 32] pixel tensor (<f8, used as stored by
    f64), tiny-whisper on random [80, 30] features (float32 values: the
    engine rounds features to float32, docs/cli.md --save-input), the
    reference encoders_ref.py's forward passes with their trace."""
    rng = np.random.default_rng(27)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fwd, opt, shape in (("tiny-vit", ENC.vit_forward, "--pixels", (3, 32, 32)),
                                      ("tiny-whisper", ENC.whisper_forward, "--features", (80, 30))):
            folder = os.path.join(ROOT, "tests/data/models", name)
            x = rng.standard_normal(shape)
            if opt == "--features":  # the engine takes features as float32, as
                x = x.astype(np.float32).astype(np.float64)  # WhisperFeatureExtractor gives them
            path = os.path.join(tmp, name + ".npy")
            np.save(path, x)
            layers = []
            fwd(folder, x, trace=layers)
            out.append((name,) + compare(name, reference_of(layers),
                                         run_analyze(cli, folder, [opt, path])))
    return out


def compare(name, ref, got):
    problems = []
    if set(ref) != set(got):
        return ["%s: heads %s, reference %s" % (name, sorted(got), sorted(ref))], 0.0, 0
    worst = 0.0
    for key in sorted(ref):
        for k in KEYS:
            e, g = ref[key][k], got[key].get(k)
            if e is None or g is None:
                if e is not g:
                    problems.append("%s layer %d head %d %s: got %r, reference %r"
                                    % ((name,) + key + (k, g, e)))
                continue
            err = abs(g - e) / max(1.0, abs(e))
            worst = max(worst, err)
            if not err <= TOL:
                problems.append("%s layer %d head %d %s: got %.17g, reference %.17g (err %.3g)"
                                % ((name,) + key + (k, g, e, err)))
    return problems, worst, len(ref)


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    failures = 0
    for name, folder, ids in MODELS:
        problems, worst, heads = check_model(argv[1], name, folder, ids)
        print("%-15s %d heads  max err %.2e  %s" % (name, heads, worst, "FAIL" if problems else "ok"))
        for p in problems:
            print("   ", p)
        failures += len(problems)
    for name, problems, worst, heads in check_encoders(argv[1]):
        print("%-15s %d heads  max err %.2e  %s" % (name, heads, worst, "FAIL" if problems else "ok"))
        for p in problems:
            print("   ", p)
        failures += len(problems)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
