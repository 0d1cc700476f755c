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
        return ["--tokens", ",".join(map(str, ids["src"]))] + tgt, stored
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
    return ["--features", path] + tgt, {r: want[r] for _, r in ARRAYS}


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
            inputs, refs = references(name, tmp)
            arrays = check_attention(cli, name, inputs, refs, "f64", tmp)
            check_attention(cli, name, inputs, refs, "f32", tmp)
            if arrays is not None:
                check_records(cli, name, inputs, arrays)
                check_rollout(cli, name, inputs, arrays)
                check_similarity(cli, name, inputs, arrays)
            if name in TARGET_TEXT:
                check_target_text(cli, name, inputs, tmp)
        print("%s: attention (f64, f32), analyze, rollout and similarity checked" % name)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("check_seq2seq: ok")


if __name__ == "__main__":
    main()
