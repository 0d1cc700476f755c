#!/usr/bin/python3
"""Check `attngeom attention --scores` (issue 28 item 1): the pre-softmax
scores the engine exports from the same pass as its probabilities.

Usage: /usr/bin/python3 tests/ref/check_scores.py path/to/attngeom [NAME ...]

On every architecture folder of tests/data/models/arch, models/tiny-gpt2,
tiny-bert (token ids, check_values.py's inputs), tiny-vit and
tiny-dinov2-reg (random pixels; 48 x 40: positions interpolated) and
tiny-whisper (random features):
1. `attention --precision f64 -o A.npy --scores S.npy`: S has A's shape
   [L, H, n, n] and dtype <f8, is -inf exactly where A's key is masked
   (hf_forward.visible_keys: causal, sliding window per layer), finite
   elsewhere, and the row softmax of S is A to 1e-15 (max |diff|);
2. S against an independent float64 reference: for the token models
   hf_forward.py's own scores (SCORES, after scale and Gemma-2's
   soft-capping, before the mask) to 1e-9 * max(1, |S|); for ViT and Whisper
   (encoders_ref.py keeps no scores) S minus log of the reference's
   probabilities is constant along each row to 1e-9;
3. the f32 pass (the default): softmax(S) is its A to 1e-6 and S is the f64
   one to 1e-4 * max(1, |S|) (float32 rounding of the scores);
4. `analyze --normalizer linear --precision f64` (Katharopoulos et al. 2020,
   phi = elu + 1 on each head's rotated Q and K) against `matrix` of the
   same formula on hf_forward's q and k, over the keys of the mask: the
   keys of LINEAR_KEYS to 1e-9 (token models whose q is not scaled before
   the product, i.e. all but OPT and DistilBERT; for qwen3, olmo2 and gemma3
   the q and k after their QK-norm); on the ALiBi folders (bloom, mpt,
   falcon-alibi) it is refused, by name.
Exits 1 on any failure.
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
import check_values as CV  # noqa: E402  (its MODELS: every token folder and ids)
import encoders_ref as ENC  # noqa: E402
import hf_forward as HF  # noqa: E402

REF_TOL = 1e-9


def softmax_rows(s):
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)  # exp(-inf) = 0 exactly
    return e / e.sum(axis=-1, keepdims=True)


def run_attention(cli, folder, inputs, tmp, precision):
    a, s = os.path.join(tmp, "a.npy"), os.path.join(tmp, "s.npy")
    p = subprocess.run([cli, "attention", folder] + inputs +
                       ["-o", a, "--scores", s, "--precision", precision],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("attention %s failed: %s" % (folder, p.stderr.strip()))
    return np.load(a), np.load(s)


def check_self(name, A, S):
    """Part 1: shape, dtype, -inf exactly where masked, softmax(S) = A."""
    problems = []
    if S.shape != A.shape or S.dtype != np.dtype("<f8"):
        return ["%s: scores %s %s, attention %s" % (name, S.shape, S.dtype, A.shape)]
    masked = np.isneginf(S)
    if not np.all(np.isfinite(S[~masked])):
        problems.append("%s: a score is NaN or +inf" % name)
    if np.any(A[masked] != 0):
        problems.append("%s: a masked score has a non-zero probability" % name)
    err = float(np.max(np.abs(softmax_rows(S) - A)))
    if not err <= 1e-15:
        problems.append("%s: softmax(scores) differs from attention by %.3g" % (name, err))
    return problems, masked, err


def check_token_model(cli, name, folder, ids, tmp):
    A, S = run_attention(cli, folder, ["--tokens", ",".join(map(str, ids))], tmp, "f64")
    out = check_self(name, A, S)
    if isinstance(out, list):
        return out, 0.0, 0.0
    problems, masked, err = out
    _, ref, qk = HF.scores(HF.Model(folder), ids)
    ref = np.stack(ref)
    if not np.array_equal(np.isneginf(ref), masked):
        problems.append("%s: -inf pattern differs from HF's mask" % name)
    fin = ~masked
    rerr = float(np.max(np.abs(S[fin] - ref[fin]) / np.maximum(1.0, np.abs(ref[fin]))))
    if not rerr <= REF_TOL:
        problems.append("%s: scores differ from hf_forward's by %.3g" % (name, rerr))
    problems += check_f32(cli, name, folder, ["--tokens", ",".join(map(str, ids))], tmp, S)
    if name in ALIBI:
        problems += check_linear_refused(cli, name, folder, ids)
    elif name not in SCALED_Q:
        problems += check_linear(cli, name, folder, ids, qk, masked, tmp)
    return problems, err, rerr


# Their q reaches attention() already scaled (modeling_opt.py, DistilBERT):
# the engine's linear attention takes the unscaled projection.
SCALED_Q = {"opt", "opt-350m-like", "distilbert"}
# ALiBi models: the scores include the bias (hf_forward's SCORES do), and the
# linear normaliser, which has no place for an additive bias, is refused.
ALIBI = {"bloom", "mpt", "falcon-alibi"}
LINEAR_KEYS = ["entropy_mean", "effective_rank", "sink_mass", "self_mass", "asymmetry",
               "attention_distance"]


def json_records(cli, args):
    p = subprocess.run([cli] + args + ["--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args[:2]), p.stderr.strip()))
    return {(r["layer"], r["head"]): r for r in json.loads(p.stdout)["records"]}


def linear_attention(q, k, masked):
    """Katharopoulos et al. (2020) eq. 7, phi = elu + 1, per head and row."""
    phi = lambda v: np.where(v > 0, v + 1, np.exp(np.minimum(v, 0)))  # noqa: E731
    num = np.einsum("hid,hjd->hij", phi(q), phi(k)) * ~masked
    return num / num.sum(axis=-1, keepdims=True)


def check_linear(cli, name, folder, ids, qk, masked, tmp):
    """4. `analyze --normalizer linear` is `matrix` of the reference's
    linear attention (every family A key of LINEAR_KEYS to 1e-9)."""
    P = np.stack([linear_attention(q, k, masked[l]) for l, (q, k) in enumerate(qk)])
    np.save(os.path.join(tmp, "lin.npy"), P)
    want = json_records(cli, ["matrix", os.path.join(tmp, "lin.npy")])
    got = json_records(cli, ["analyze", folder, "--tokens", ",".join(map(str, ids)),
                                "--precision", "f64", "--normalizer", "linear"])
    problems = []
    for key, w in want.items():
        for k in LINEAR_KEYS:
            a, b = got[key][k], w[k]
            if not ((a is None and b is None) or abs(a - b) <= REF_TOL * max(1.0, abs(b))):
                problems.append("%s linear %s %s: %r vs reference %r" % (name, key, k, a, b))
    return problems


def check_linear_refused(cli, name, folder, ids):
    """4'. ALiBi: `analyze --normalizer linear` exits 1 with one line naming
    ALiBi."""
    p = subprocess.run([cli, "analyze", folder, "--tokens", ",".join(map(str, ids)), "--normalizer",
                        "linear"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 1 or len(lines) != 1 or "ALiBi" not in lines[0]:
        return ["%s: linear normaliser not refused by name (exit %d, %r)" % (name, p.returncode, p.stderr)]
    return []


def check_f32(cli, name, folder, inputs, tmp, S64):
    A, S = run_attention(cli, folder, inputs, tmp, "f32")
    problems = []
    if not np.array_equal(np.isneginf(S), np.isneginf(S64)):
        problems.append("%s f32: -inf pattern differs from f64's" % name)
    e = float(np.max(np.abs(softmax_rows(S) - A)))
    fin = np.isfinite(S64)
    d = float(np.max(np.abs(S[fin] - S64[fin]) / np.maximum(1.0, np.abs(S64[fin]))))
    if not (e <= 1e-6 and d <= 1e-4):
        problems.append("%s f32: softmax(S) vs A %.3g, S vs f64 %.3g" % (name, e, d))
    return problems


def row_offset_err(S, P):
    """max over rows of the spread of S - log P over the allowed keys (P > 0)."""
    worst = 0.0
    for idx in np.ndindex(*S.shape[:-1]):
        s, p = S[idx], P[idx]
        ok = np.isfinite(s) & (p > 0)
        d = s[ok] - np.log(p[ok])
        worst = max(worst, float(d.max() - d.min()) / max(1.0, float(np.abs(s[ok]).max())))
    return worst


def check_encoder(cli, name, fwd, opt, shape, rng, tmp):
    folder = os.path.join(ROOT, "tests/data/models", name)
    x = rng.standard_normal(shape)
    if opt == "--features":  # the engine takes features as float32
        x = x.astype(np.float32).astype(np.float64)
    path = os.path.join(tmp, name + ".npy")
    np.save(path, x)
    A, S = run_attention(cli, folder, [opt, path], tmp, "f64")
    out = check_self(name, A, S)
    if isinstance(out, list):
        return out, 0.0, 0.0
    problems, masked, err = out
    if masked.any():
        problems.append("%s: an encoder's score is masked" % name)
    layers = []
    fwd(folder, x, trace=layers)
    P = np.stack([t["p"] for t in layers])
    rerr = row_offset_err(S, P)
    if not rerr <= REF_TOL:
        problems.append("%s: S - log P(reference) not constant per row (%.3g)" % (name, rerr))
    problems += check_f32(cli, name, folder, [opt, path], tmp, S)
    return problems, err, rerr


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    cli, only = argv[1], argv[2:]
    failures = []
    rng = np.random.default_rng(28)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(n, lambda n=n, f=f, i=i: check_token_model(cli, n, f, i, tmp))
                 for n, f, i in CV.MODELS]
        cases += [(n, lambda n=n, fw=fw, o=o, sh=sh: check_encoder(cli, n, fw, o, sh, rng, tmp))
                  for n, fw, o, sh in (("tiny-vit", ENC.vit_forward, "--pixels", (3, 32, 32)),
                                       ("tiny-whisper", ENC.whisper_forward, "--features", (80, 30)),
                                       ("tiny-dinov2-reg", ENC.dinov2_forward, "--pixels", (3, 48, 40)))]
        for name, fn in cases:
            if only and name not in only:
                continue
            problems, err, rerr = fn()
            print("%-22s softmax(S) vs A %.2g, S vs reference %.2g %s"
                  % (name, err, rerr, "ok" if not problems else "FAIL"))
            failures += problems
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print("check_scores: %d cases, %d failures" % (len(CV.MODELS) + 3, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
