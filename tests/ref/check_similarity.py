#!/usr/bin/python3
"""Check `attngeom similarity` against numpy, recomputed from the attention
that `attngeom attention` writes.

Usage: /usr/bin/python3 tests/ref/check_similarity.py path/to/attngeom

For each model (models/tiny-gpt2: causal; tests/data/models/tiny-bert: not
causal) and a corpus of texts of different lengths (one of them a single
token for GPT-2, where every head's only row is [1] and every distance 0):

  * `attngeom attention MODEL --text LINE -o A.npy` per line gives
    A [L, H, n, n];
  * the reference distance of heads a, b on one text is
    (1/n) sum_i sqrt(JSD(A_a[i], A_b[i])),
    JSD(p, q) = 1/2 sum_j [p_j ln(p_j/m_j) + q_j ln(q_j/m_j)], m = (p+q)/2,
    terms with p_j = 0 (q_j = 0) left out, computed from that definition in
    long double (64-bit mantissa), so its own error is far below the
    tolerance; then the mean over the texts, equal weight per text;
  * `attngeom similarity MODEL --text-file CORPUS -o S.npy --format json`
    must give S [K, K] within 1e-12 (absolute) of it, symmetric and with a
    zero diagonal exactly, and K(K-1)/2 records (layer_a, head_a, layer_b,
    head_b, js_distance) for the pairs a < b in selection order, each equal
    to S's entry to the bit (17 digits); the CSV records equal the JSON ones;
  * with --layers / --heads the matrix is the full one's sub-matrix, to the
    bit (the same pairs, summed the same way);
  * --precision f64 against the f64 attention, on one model.

Prints the largest differences and exits 1 on any failure.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom as LA  # noqa: E402  (the checks' failure list)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOL = 1e-12
CORPUS = ["In the beginning God created the heaven and the earth.",
          "The quick brown fox jumps over the lazy dog while the cat sleeps.",
          "a",
          "Attention is all you need, they said."]
MODELS = [os.path.join(ROOT, "models", "tiny-gpt2"),
          os.path.join(ROOT, "tests", "data", "models", "tiny-bert")]
CHECK = LA.Checks(())
FAILS, fail = CHECK.fails, CHECK.fail


def run(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), p.returncode,
                                                p.stderr.decode().strip()))
    return p.stdout.decode()


def jsd_rows(P, Q):
    """JSD of each row pair of P, Q [n, n], from the definition, long double."""
    P = P.astype(np.longdouble)
    Q = Q.astype(np.longdouble)
    M = (P + Q) / 2
    out = np.zeros(P.shape[0], dtype=np.longdouble)
    for X in (P, Q):
        pos = X > 0
        T = np.zeros_like(X)
        T[pos] = X[pos] * np.log(X[pos] / M[pos])
        out += T.sum(axis=1) / 2
    return np.maximum(out, 0)


def reference(attns, heads):
    """Mean over texts of the row-averaged JS distance, heads [(l, h)]."""
    K = len(heads)
    S = np.zeros((K, K), dtype=np.longdouble)
    for A in attns:
        for a in range(K):
            for b in range(a + 1, K):
                d = np.mean(np.sqrt(jsd_rows(A[heads[a]], A[heads[b]])))
                S[a, b] += d
                S[b, a] += d
    return (S / len(attns)).astype(np.float64)


def similarity(cli, model, corpus, d, extra, tag):
    npy = os.path.join(d, "S_%s.npy" % tag)
    out = run(cli, ["similarity", model, "--text-file", corpus, "-o", npy,
                    "--format", "json"] + extra)
    doc = json.loads(out)
    csv_out = run(cli, ["similarity", model, "--text-file", corpus, "--format", "csv"] + extra)
    return np.load(npy), doc, list(csv.DictReader(io.StringIO(csv_out)))


def check_records(label, S, heads, doc, rows):
    recs = doc.get("records", [])
    K = len(heads)
    want = [(a, b) for a in range(K) for b in range(a + 1, K)]
    if len(recs) != len(want) or len(rows) != len(want):
        fail("%s: %d JSON / %d CSV records, expected %d" % (label, len(recs), len(rows), len(want)))
        return
    for (a, b), r, c in zip(want, recs, rows):
        ids = (heads[a][0], heads[a][1], heads[b][0], heads[b][1])
        got = (r["layer_a"], r["head_a"], r["layer_b"], r["head_b"])
        if got != ids or tuple(int(c[k]) for k in ("layer_a", "head_a", "layer_b", "head_b")) != ids:
            fail("%s: record for pair %d,%d names %s, expected %s" % (label, a, b, got, ids))
        if r["js_distance"] != S[a, b] or float(c["js_distance"]) != S[a, b]:
            fail("%s: record %s js_distance %r (CSV %s), matrix %r" % (
                label, ids, r["js_distance"], c["js_distance"], S[a, b]))


def check_matrix(label, S, R):
    if S.shape != R.shape:
        fail("%s: matrix shape %s, expected %s" % (label, S.shape, R.shape))
        return 0.0
    if not np.array_equal(S, S.T) or np.any(np.diag(S) != 0):
        fail("%s: not exactly symmetric with a zero diagonal" % label)
    err = float(np.max(np.abs(S - R)))
    if not err <= TOL:
        i, j = np.unravel_index(np.argmax(np.abs(S - R)), S.shape)
        fail("%s: |S - ref| = %.3g at (%d, %d): %.17g vs %.17g" % (label, err, i, j, S[i, j], R[i, j]))
    return err


def check_model(cli, model, d, precision):
    name = os.path.basename(model)
    corpus = os.path.join(d, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(CORPUS) + "\n")
    pre = ["--precision", precision]
    attns = []
    for k, line in enumerate(CORPUS):
        path = os.path.join(d, "%s_%d.npy" % (name, k))
        run(cli, ["attention", model, "--text", line, "-o", path] + pre)
        attns.append(np.load(path))
    L, H = attns[0].shape[:2]
    heads = [(l, h) for l in range(L) for h in range(H)]
    label = "%s %s" % (name, precision)
    S, doc, rows = similarity(cli, model, corpus, d, pre, name)
    err = check_matrix(label, S, reference(attns, heads))
    check_records(label, S, heads, doc, rows)
    # a selection: the full matrix's sub-matrix, bit for bit
    lsel, hsel = [l for l in range(L) if l % 2 == 1], [0, H - 1]
    sel = [(l, h) for l in lsel for h in hsel]
    Ssub, doc, rows = similarity(cli, model, corpus, d, pre + [
        "--layers", ",".join(map(str, lsel)), "--heads", ",".join(map(str, hsel))], name + "_sel")
    idx = [heads.index(x) for x in sel]
    if not np.array_equal(Ssub, S[np.ix_(idx, idx)]):
        fail("%s: --layers/--heads matrix is not the full one's sub-matrix" % label)
    check_records(label + " selection", Ssub, sel, doc, rows)
    off = S[np.triu_indices(len(heads), 1)]
    print("%s: %d heads, %d texts: max |S - ref| %.3g (distances %.4f .. %.4f)" % (
        label, len(heads), len(CORPUS), err, off.min(), off.max()))


def main():
    if len(sys.argv) < 2:
        print("usage: check_similarity.py CLI", file=sys.stderr)
        return 2
    cli = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="ag_sim_") as d:
        for model in MODELS:
            check_model(cli, model, d, "f32")
        check_model(cli, MODELS[0], d, "f64")
    if FAILS:
        print("check_similarity: FAILED, %d failure(s)" % len(FAILS))
        return 1
    print("check_similarity: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
