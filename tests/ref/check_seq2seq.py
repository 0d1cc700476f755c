#!/usr/bin/python3
"""Check `attngeom attention` and `analyze` on the encoder-decoder folders
(issue 30): t5, t5-v1_1, bart and whisper-seq2seq of
tests/data/models/arch, fed the source and target ids of
tests/data/archref/<name>/ids.json (--tokens, --target-tokens:
decoder_input_ids verbatim). Whisper's source is the stored reference's
features.npy given with --features: the CLI takes input_features as float32
(as Hugging Face's extractor returns them), so its references are those of
tests/ref/hf_forward.py seq2seq_forward on the float32-rounded features
(which, on the stored float64 features, gives the stored arrays within
1e-12: checked first).

Usage: /usr/bin/python3 tests/ref/check_seq2seq.py path/to/attngeom

1. `attention -o ENC --decoder DEC --cross CROSS --hidden H
   --decoder-hidden HD`: each array has the shape of its float64
   reference (tests/ref/hf_forward.py seq2seq_forward, stored in
   tests/data/archref/<name>/: encoder_attentions [L_enc, H, n_src, n_src],
   decoder_attentions [L_dec, H, n_tgt, n_tgt], cross_attentions
   [L_dec, H, n_tgt, n_src], encoder_hidden_states / decoder_hidden_states
   [L + 1, n, d]) and matches it within 1e-9 (--precision f64) and 1e-5
   (f32, the default);
2. `analyze --precision f64 --format json`: one record per (stack, layer,
   head) in pass order (encoder layers, then each decoder layer's self- and
   cross-attention), "stack" encoder / decoder / cross, rows and cols the
   array's (cross: n_tgt x n_src), and entropy_mean (mean row Shannon
   entropy) and sigma_max (largest singular value) equal to those numpy
   computes from the exported f64 arrays within 1e-12; the cross records,
   with the default metrics (family M on for a pair), also
   cross_entropy_normalized (entropy_mean / ln n_src) and source_coverage
   (the fraction of sources whose column sum is at least the mean).
3. `rollout --precision f64 --format json`: the encoder's rollout records
   (stack encoder, one per encoder layer), the decoder's self-attention
   rollout (stack decoder, one per decoder layer) and one cross record
   (the decoder's last layer, n_tgt x n_src), their sigma_max and
   entropy_mean equal within 1e-12 to those of numpy's rollout built from
   the exported f64 arrays: R_0 = Ã_0, R_l = Ã_l R_(l-1), Ã = mean over
   heads / 2 + I / 2 (Abnar & Zuidema 2020, §3), and R_cross =
   mean over heads of cross_attentions[-1] @ R_enc,last
   (docs/metrics.md, "rollout").
4. `similarity --precision f64 --format json`: one record per pair a < b of
   heads of one stack (encoder, then decoder self-attention, then cross
   heads; layer-major), "stack" its stack, js_distance equal within 1e-12
   to numpy's mean over the rows of sqrt(JSD) (natural log; Clark et al.
   2019, §6; check_similarity.py's long-double jsd_rows) of the two heads'
   exported arrays (cross: [n_tgt, n_src] rows).
5. `attention --target TEXT --precision f64` on the folders with a
   tokenizer (t5-v1_1, whisper-seq2seq): the arrays of the float64
   reference fed the decoder_input_ids that each model's training recipe
   forms from tests/ref/hf_tokenizer.py's labels (an independent port of
   the Rust tokenizers pipeline): T5 [0] + labels[:-1] (_shift_right);
   Whisper the labels less a leading decoder_start_token_id (HF's
   fine-tuning collator), then shift_tokens_right — within 1e-9.
6. `residual --precision f64 --format json`: one record per hidden state
   of the encoder (stack encoder, layers 0 .. L_enc) then of the decoder
   (stack decoder, 0 .. L_dec), rows n_src / n_tgt and cols d, and
   sigma_max, effective_rank (exp of the entropy of σ/Σσ), stable_rank
   (Σσ²/σ₁²), mean_cosine (over ordered pairs i ≠ j of rows), pc1_share
   (σ₁²/Σσ² of the centred rows) and res_ratio (‖X − 1x̄ᵀ‖_F/‖X‖_F)
   equal within 1e-12 to numpy's on the exported --hidden and
   --decoder-hidden f64 arrays (docs/metrics.md families A and C).
7. `analyze --metrics values,lens,effective_rank --precision f64`: family
   H (check_values.py's head_metrics: f(x_j) = v_j W_O^h, v from the
   key/value side — a cross head's from the encoder output) and family K
   (check_lens.py's row keys over each row's finite scores — T5's
   including its position bias — and the form keys from numpy's SVD of
   the m x n q k^T: matrix_rank's tolerance sigma_1 max(m, n) eps;
   score_asymmetry null on a cross head, not square) of every head of
   every stack (whisper: the decoder's and cross heads) from
   hf_forward.py's own q, k, v, scores and weights, within 1e-10 (relative
   above 1); and `--metrics stability`: family E of every self-attention
   head (encoder and decoder; whisper: the decoder's) against
   check_stability.py's explicit Jacobian of A(X) = softmax(mask(X W_Q
   (X W_K)^T + bias)), T5's position bias constant in X (the first head's
   Jacobian also against finite differences), its tolerances; a cross
   head's family E null (its keys do not move with X).
8. `attention --scores ENC --decoder-scores DEC --cross-scores CROSS`
   (f64 and f32): each stack's pre-softmax scores (T5: q k^T plus the
   position bias, no scale; BART, Whisper: scaled q k^T), -inf exactly
   where hf_forward.py's are (the causal mask), the finite entries within
   1e-9 (f64) and 1e-4 (f32: float32 rounding of the logits, as
   check_scores.py allows one-stack scores) relative above 1 of
   hf_forward.py's encoder_scores, decoder_scores and cross_scores
   (whisper: its decoder's two; its encoder is encoders_ref's, without
   scores); and each row's softmax is the array -o, --decoder or --cross
   wrote in the same run, within 1e-12 (f64) or 1e-6 (f32).
Exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ("t5", "t5-v1_1", "bart", "whisper-seq2seq")
ARRAYS = (("-o", "encoder_attentions"), ("--decoder", "decoder_attentions"),
          ("--cross", "cross_attentions"), ("--hidden", "encoder_hidden_states"),
          ("--decoder-hidden", "decoder_hidden_states"))
TOL = {"f64": 1e-9, "f32": 1e-5}
failures = []
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import hf_forward  # noqa: E402
import hf_tokenizer  # noqa: E402
import check_similarity as js_ref  # noqa: E402
import check_lens  # noqa: E402
import check_values  # noqa: E402
import check_stability  # noqa: E402
HEAD_TOL = 1e-10


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def references(name, tmp):
    """The CLI's input options for name and the float64 arrays it must give."""
    ref = os.path.join(ROOT, "tests/data/archref", name)
    with open(os.path.join(ref, "ids.json")) as f:
        ids = json.load(f)
    tgt = ["--target-tokens", ",".join(map(str, ids["tgt"]))]
    stored = {r: np.load(os.path.join(ref, r + ".npy")) for _, r in ARRAYS}
    if "src" in ids:
        return ["--tokens", ",".join(map(str, ids["src"]))] + tgt, stored, ids["src"], ids["tgt"]
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    feats = np.load(os.path.join(ref, "features.npy"))
    again = hf_forward.seq2seq_forward(folder, feats, ids["tgt"])
    for _, r in ARRAYS:
        d = float(np.abs(again[r] - stored[r]).max())
        if not d <= 1e-12:
            fail("%s: hf_forward %s differs from the stored reference by %.3g" % (name, r, d))
    f32 = feats.astype(np.float32)
    path = os.path.join(tmp, "features_f32.npy")
    np.save(path, f32)
    want = hf_forward.seq2seq_forward(folder, f32.astype(np.float64), ids["tgt"])
    return (["--features", path] + tgt, {r: want[r] for _, r in ARRAYS},
            f32.astype(np.float64), ids["tgt"])


def run(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (" ".join(args[:2]), p.returncode, p.stderr.strip()))
    return p


def check_attention(cli, name, inputs, refs, precision, tmp):
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    args = ["attention", folder] + inputs + ["--precision", precision]
    for opt, ref in ARRAYS:
        args += [opt, os.path.join(tmp, ref + ".npy")]
    if run(cli, args).returncode != 0:
        return None
    got = {}
    for _, ref in ARRAYS:
        a = np.load(os.path.join(tmp, ref + ".npy"))
        r = refs[ref]
        got[ref] = a
        if a.shape != r.shape or a.dtype != np.float64:
            fail("%s %s %s: shape %s %s, reference %s" % (name, precision, ref, a.shape, a.dtype, r.shape))
            continue
        d = float(np.abs(a - r).max())
        if not d <= TOL[precision]:
            fail("%s %s %s: max |diff| %.3g > %g" % (name, precision, ref, d, TOL[precision]))
    return got


def entropy_mean(A):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(A > 0, -A * np.log(A), 0.0)
    return t.sum(axis=1).mean()


def f64_records(cli, cmd, name, inputs):
    """The JSON records of `cmd` on name's folder at f64 (None on failure)."""
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    p = run(cli, [cmd, folder] + inputs + ["--precision", "f64", "--format", "json"])
    return json.loads(p.stdout)["records"] if p.returncode == 0 else None


def check_records(cli, name, inputs, arrays):
    recs = f64_records(cli, "analyze", name, inputs)
    if recs is None:
        return
    enc, dec, cross = (arrays[k] for k in ("encoder_attentions", "decoder_attentions",
                                           "cross_attentions"))
    want = [("encoder", l, h, enc[l, h]) for l in range(enc.shape[0]) for h in range(enc.shape[1])]
    for l in range(dec.shape[0]):
        want += [("decoder", l, h, dec[l, h]) for h in range(dec.shape[1])]
        want += [("cross", l, h, cross[l, h]) for h in range(cross.shape[1])]
    if len(recs) != len(want):
        fail("%s analyze: %d records, want %d" % (name, len(recs), len(want)))
        return
    for r, (stack, l, h, A) in zip(recs, want):
        where = "%s analyze %s layer %d head %d" % (name, stack, l, h)
        if (r.get("stack"), r["layer"], r["head"], r["rows"], r["cols"]) != (stack, l, h) + A.shape:
            fail("%s: record %s" % (where, {k: r.get(k) for k in ("stack", "layer", "head", "rows", "cols")}))
            continue
        c = A.sum(axis=0)
        checks = [("entropy_mean", entropy_mean(A)),
                  ("sigma_max", np.linalg.svd(A, compute_uv=False)[0])]
        if stack == "cross":  # family M (docs/metrics.md), on by default for a pair
            checks += [("cross_entropy_normalized", entropy_mean(A) / np.log(A.shape[1])),
                       ("source_coverage", float(np.mean(c >= c.sum() / A.shape[1])))]
        for key, v in checks:
            if r[key] is None or abs(r[key] - v) > 1e-12 * max(1.0, abs(v)):
                fail("%s: %s %s, numpy %r" % (where, key, r[key], v))


def rollout(A):
    """R_0 .. R_(L-1) of A [L, H, n, n] (Abnar & Zuidema 2020, §3)."""
    R, out = None, []
    for layer in A:
        T = 0.5 * layer.mean(axis=0) + 0.5 * np.eye(layer.shape[-1])
        R = T if R is None else T @ R
        out.append(R)
    return out


def check_rollout(cli, name, inputs, arrays):
    recs = f64_records(cli, "rollout", name, inputs)
    if recs is None:
        return
    enc = rollout(arrays["encoder_attentions"])
    dec = rollout(arrays["decoder_attentions"])
    cross = arrays["cross_attentions"][-1].mean(axis=0) @ enc[-1]
    want = [("encoder", l, R) for l, R in enumerate(enc)] + \
        [("decoder", l, R) for l, R in enumerate(dec)] + [("cross", len(dec) - 1, cross)]
    if len(recs) != len(want):
        fail("%s rollout: %d records, want %d" % (name, len(recs), len(want)))
        return
    for r, (stack, l, R) in zip(recs, want):
        where = "%s rollout %s layer %d" % (name, stack, l)
        if (r.get("stack"), r["layer"], r["head"], r["rows"], r["cols"]) != (stack, l, -1) + R.shape:
            fail("%s: record %s" % (where, {k: r.get(k) for k in ("stack", "layer", "head", "rows", "cols")}))
            continue
        for key, v in (("entropy_mean", entropy_mean(R)),
                       ("sigma_max", np.linalg.svd(R, compute_uv=False)[0])):
            if r[key] is None or abs(r[key] - v) > 1e-12 * max(1.0, abs(v)):
                fail("%s: %s %s, numpy %r" % (where, key, r[key], v))


def js_distance(A, B):
    """The row-averaged JS distance, from check_similarity.py's long-double JSD."""
    return float(np.mean(np.sqrt(js_ref.jsd_rows(A, B))))


def check_similarity(cli, name, inputs, arrays):
    recs = f64_records(cli, "similarity", name, inputs)
    if recs is None:
        return
    want = []
    for stack, key in (("encoder", "encoder_attentions"), ("decoder", "decoder_attentions"),
                       ("cross", "cross_attentions")):
        A = arrays[key]
        heads = [(l, h) for l in range(A.shape[0]) for h in range(A.shape[1])]
        want += [(stack, a, b, js_distance(A[a], A[b]))
                 for i, a in enumerate(heads) for b in heads[i + 1:]]
    if len(recs) != len(want):
        fail("%s similarity: %d records, want %d" % (name, len(recs), len(want)))
        return
    for r, (stack, a, b, v) in zip(recs, want):
        got = (r.get("stack"), r["layer_a"], r["head_a"], r["layer_b"], r["head_b"])
        if got != (stack,) + a + b:
            fail("%s similarity: record %s, want %s" % (name, got, (stack,) + a + b))
        elif abs(r["js_distance"] - v) > 1e-12:
            fail("%s similarity %s: js_distance %r, numpy %r" % (name, got, r["js_distance"], v))


def state_metrics(X):
    """Families A and C (the keys checked) of one hidden state X (n, d)."""
    s = np.linalg.svd(X, compute_uv=False)
    p = s / s.sum()
    p = p[p > 0]
    U = X / np.linalg.norm(X, axis=1)[:, None]
    G = U @ U.T
    n = X.shape[0]
    C = X - X.mean(axis=0)
    sc = np.linalg.svd(C, compute_uv=False)
    return {"sigma_max": s[0], "effective_rank": float(np.exp(-np.sum(p * np.log(p)))),
            "stable_rank": float(np.sum(s * s) / s[0] ** 2),
            "mean_cosine": float((G.sum() - np.trace(G)) / (n * (n - 1))),
            "pc1_share": float(sc[0] ** 2 / np.sum(sc * sc)),
            "res_ratio": float(np.linalg.norm(C) / np.linalg.norm(X))}


def check_residual(cli, name, inputs, arrays):
    recs = f64_records(cli, "residual", name, inputs)
    if recs is None:
        return
    want = [(stack, l, X) for stack, key in (("encoder", "encoder_hidden_states"),
                                             ("decoder", "decoder_hidden_states"))
            for l, X in enumerate(arrays[key])]
    if len(recs) != len(want):
        fail("%s residual: %d records, want %d" % (name, len(recs), len(want)))
        return
    for r, (stack, l, X) in zip(recs, want):
        where = "%s residual %s state %d" % (name, stack, l)
        if (r.get("stack"), r["layer"], r["head"], r["rows"], r["cols"]) != (stack, l, -1) + X.shape:
            fail("%s: record %s" % (where, {k: r.get(k) for k in ("stack", "layer", "head", "rows", "cols")}))
            continue
        for key, v in state_metrics(X).items():
            if r[key] is None or abs(r[key] - v) > 1e-12 * max(1.0, abs(v)):
                fail("%s: %s %s, numpy %r" % (where, key, r[key], v))


def head_keys(t, h, cross):
    """Families H and K of head h of one hf_forward attention t."""
    want = check_values.head_metrics(t["p"][h], t["v"][h], t["wo"][h * t["v"].shape[2]:
                                                                (h + 1) * t["v"].shape[2]])
    want.update(check_lens.row_keys(t["s"][h]))
    S = t["q"][h] @ t["k"][h].T
    sigma = np.linalg.svd(S, compute_uv=False)
    er = check_lens.effective_rank(sigma)
    want.update({"score_effective_rank": er,
                 "score_numerical_rank": int(np.linalg.matrix_rank(S)),
                 "rank_lift": check_lens.effective_rank(
                     np.linalg.svd(t["p"][h], compute_uv=False)) / er,
                 "score_asymmetry": None if cross else
                 float(np.linalg.norm((S - S.T) / 2) / np.linalg.norm(S))})
    return want


SCORES = (("--scores", "encoder_scores", "-o"), ("--decoder-scores", "decoder_scores", "--decoder"),
          ("--cross-scores", "cross_scores", "--cross"))
SCORE_TOL = {"f64": 1e-9, "f32": 1e-4}
SOFTMAX_TOL = {"f64": 1e-12, "f32": 1e-6}


def softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def check_scores(cli, name, inputs, full, precision, tmp):
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    args = ["attention", folder] + inputs + ["--precision", precision]
    for opt, ref, attn in SCORES:
        args += [opt, os.path.join(tmp, ref + ".npy"), attn, os.path.join(tmp, ref + ".p.npy")]
    if run(cli, args).returncode != 0:
        return
    for _, ref, _ in SCORES:
        a = np.load(os.path.join(tmp, ref + ".npy"))
        e = float(np.abs(softmax_rows(a) - np.load(os.path.join(tmp, ref + ".p.npy"))).max())
        if not e <= SOFTMAX_TOL[precision]:
            fail("%s %s %s: softmax(S) differs from the attention by %.3g" % (name, precision, ref, e))
        if ref not in full:  # whisper's encoder: no reference scores
            continue
        r = full[ref]
        if a.shape != r.shape or not np.array_equal(np.isinf(a), np.isinf(r)) or \
                (np.isinf(a) & (a > 0)).any():
            fail("%s %s %s: shape %s (reference %s) or -inf entries differ"
                 % (name, precision, ref, a.shape, r.shape))
            continue
        ok = np.isfinite(r)
        d = float((np.abs(a[ok] - r[ok]) / np.maximum(1.0, np.abs(r[ok]))).max())
        if not d <= SCORE_TOL[precision]:
            fail("%s %s %s: max |diff| %.3g > %g" % (name, precision, ref, d, SCORE_TOL[precision]))


def head_records(cli, name, inputs, metrics):
    """analyze's f64 records of `metrics` in pass order (whisper: without
    the encoder's, whose heads are encoders_ref's), None on failure."""
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    p = run(cli, ["analyze", folder] + inputs + ["--metrics", metrics,
                                                 "--precision", "f64", "--format", "json"])
    if p.returncode != 0:
        return None
    recs = json.loads(p.stdout)["records"]
    return [r for r in recs if not (name.startswith("whisper") and r["stack"] == "encoder")]


def check_stability_keys(cli, name, inputs, heads):
    """Family E of every self-attention head against check_stability.py."""
    recs = head_records(cli, name, inputs, "stability")
    if recs is None:
        return
    want = [(t, h) for t in heads for h in range(t["p"].shape[0])]
    before, count = len(check_stability.failures), 0
    for r, (t, h) in zip(recs, want):
        where = "%s %s layer %d head %d" % (name, r["stack"], r["layer"], h)
        if r["stack"] == "cross":
            if any(r[k] is not None for k in ("jacobian_norm", "sensitivity", "qk_cos_mean")):
                fail("%s: family E on a cross head" % where)
            continue
        dh = t["q"].shape[2]
        cols = slice(h * dh, (h + 1) * dh)
        bq, bk = (None if b is None else b[cols] for b in (t["bq"], t["bk"]))
        bias = t["bias"][h] if np.ndim(t["bias"]) else None
        head = check_stability.Head(t["x"], t["wq"][:, cols], t["wk"][:, cols], bq, bk, 1.0,
                                    r["stack"] == "decoder", alibi=bias)
        count += check_stability.check_head(where, head, r, count == 0)
    for f in check_stability.failures[before:]:
        fail(f)
    print("%s: family E of %d self-attention heads" % (name, count))


def check_heads(cli, name, inputs, heads):
    recs = head_records(cli, name, inputs, "values,lens,effective_rank")
    if recs is None:
        return
    want = [(t, h) for t in heads for h in range(t["p"].shape[0])]
    if len(recs) != len(want):
        fail("%s analyze values,lens: %d records, want %d" % (name, len(recs), len(want)))
        return
    worst = 0.0
    for r, (t, h) in zip(recs, want):
        ref = head_keys(t, h, r["stack"] == "cross")
        for key in check_values.KEYS + check_lens.KEYS:
            a, b = r.get(key), ref[key]
            if a is None or b is None:
                if a is not None or b is not None:
                    fail("%s %s layer %d head %d %s: %r, reference %r"
                         % (name, r["stack"], r["layer"], h, key, a, b))
                continue
            e = abs(a - b) / max(1.0, abs(b))
            worst = max(worst, e)
            if not e <= HEAD_TOL:
                fail("%s %s layer %d head %d %s: %r, reference %r"
                     % (name, r["stack"], r["layer"], h, key, a, b))
    print("%s: families H and K of %d heads, worst %.2g" % (name, len(recs), worst))


# the target texts of check 5 (folders with a tokenizer)
TARGET_TEXT = {"t5-v1_1": "die katze sat auf der mat", "whisper-seq2seq": "the cat sat on the mat."}


def decoder_input_ids(name, labels):
    """HF's teacher forcing of labels: Whisper's collator drops a leading
    decoder start (45), then shift_tokens_right after it."""
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    with open(os.path.join(folder, "config.json")) as f:
        start = json.load(f)["decoder_start_token_id"]
    if name.startswith("whisper") and labels[0] == start:
        labels = labels[1:]
    return [start] + labels[:-1]


def check_target_text(cli, name, inputs, tmp):
    folder = os.path.join(ROOT, "tests/data/models/arch", name)
    text = TARGET_TEXT[name]
    tgt = decoder_input_ids(name, hf_tokenizer.Tokenizer.from_folder(folder).encode(text))
    src = inputs[1]
    if inputs[0] == "--tokens":
        src = [int(x) for x in src.split(",")]
    else:
        src = np.load(src).astype(np.float64)
    want = hf_forward.seq2seq_forward(folder, src, tgt)
    args = ["attention", folder] + inputs[:2] + ["--target", text, "--precision", "f64"]
    for opt, ref in ARRAYS:
        args += [opt, os.path.join(tmp, "text_" + ref + ".npy")]
    if run(cli, args).returncode != 0:
        return
    for _, ref in ARRAYS:
        a = np.load(os.path.join(tmp, "text_" + ref + ".npy"))
        if a.shape != want[ref].shape:
            fail("%s --target: %s shape %s, reference %s" % (name, ref, a.shape, want[ref].shape))
            continue
        d = float(np.abs(a - want[ref]).max())
        if not d <= TOL["f64"]:
            fail("%s --target: %s max |diff| %.3g" % (name, ref, d))


def main():
    cli = sys.argv[1]
    for name in MODELS:
        with tempfile.TemporaryDirectory() as tmp:
            inputs, refs, src, tgt = references(name, tmp)
            arrays = check_attention(cli, name, inputs, refs, "f64", tmp)
            check_attention(cli, name, inputs, refs, "f32", tmp)
            if arrays is not None:
                check_records(cli, name, inputs, arrays)
                check_rollout(cli, name, inputs, arrays)
                check_similarity(cli, name, inputs, arrays)
                check_residual(cli, name, inputs, arrays)
                folder = os.path.join(ROOT, "tests/data/models/arch", name)
                full, heads = hf_forward.seq2seq_heads(folder, src, tgt)
                check_heads(cli, name, inputs, heads)
                check_stability_keys(cli, name, inputs, heads)
                for precision in ("f64", "f32"):
                    check_scores(cli, name, inputs, full, precision, tmp)
            if name in TARGET_TEXT:
                check_target_text(cli, name, inputs, tmp)
        print("%s: attention (f64, f32), analyze, rollout, similarity, residual, H/K and scores checked"
              % name)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("check_seq2seq: ok")


if __name__ == "__main__":
    main()
