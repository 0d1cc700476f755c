#!/usr/bin/python3
"""Check docs/metrics.md, family L (metric axioms of d = -ln A) against a brute-force numpy
reference.

Usage: /usr/bin/python3 tests/ref/check_axioms.py path/to/attngeom

The reference is written from the definitions of docs/metrics.md alone:
  * d_ij = max(0, -ln A_ij), finite iff A_ij > 0, the logarithm taken with
    Python's math.log (the C library's, entry by entry: numpy's own SIMD log
    may differ in the last bit, and the count must be the same count);
  * triangle_violation: every ordered triple (i, j, k) at once by numpy
    broadcasting, [i, j, k] -> d_ik > (d_ij + d_jk) * (1 + 1e-12), over the
    distinct triples with three finite costs; the fraction of two integers;
  * symmetry_gap, self_cost: math.fsum over the pairs i < j and the diagonal.
and compared with `attngeom matrix FILE --metrics axioms --format json`:
triangle_violation exactly (the same counts give the same double), the two
means to 1e-12 relative, nulls exactly; on random matrices (dense, peaked,
causal, with zeros, with ties on a grid of costs, with entries rounded above
1, a true metric, uniform, negative, non-square, n = 1, 2, 3) and on every
head of the shared model tiny-gpt2 (`attngeom attention ... --precision
f64`, two texts); `analyze --metrics axioms` must agree with `matrix` on
the written attention. Prints the largest errors; exits 1 on any failure.
"""
import math
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_matrix import causal, stochastic  # noqa: E402  (the random attention makers)
import libattngeom as LA  # noqa: E402  (the CLI's records, compared key by key)

KEYS = ["triangle_violation", "symmetry_gap", "self_cost"]
RTOL = 1e-12
SEED = 282828
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SLACK = 1.0 + 1e-12


def costs(A):
    """d = max(0, -ln A) with +inf where A <= 0 (no finite cost)."""
    d = np.full(A.shape, np.inf)
    for idx, a in np.ndenumerate(A):
        if a > 0:
            d[idx] = max(0.0, -math.log(a))
    return d


def axioms(A):
    """docs/metrics.md, family L for the matrix A; dict key -> value (None = null)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or np.any(A < 0):
        return {k: None for k in KEYS}
    n = A.shape[0]
    d = costs(A)
    fin = np.isfinite(d)
    # [i, j, k]: d_ij, d_jk, d_ik
    dij, djk, dik = d[:, :, None], d[None, :, :], d[:, None, :]
    ok = fin[:, :, None] & fin[None, :, :] & fin[:, None, :]
    r = np.arange(n)
    ok &= (r[:, None, None] != r[None, :, None]) & (r[None, :, None] != r[None, None, :]) \
        & (r[:, None, None] != r[None, None, :])
    with np.errstate(invalid="ignore"):
        bad = ok & (dik > (dij + djk) * SLACK)
    total, nbad = int(ok.sum()), int(bad.sum())
    out = {"triangle_violation": nbad / total if total else None}
    gaps = []
    for i in range(n):
        for j in range(i + 1, n):
            if fin[i, j] and fin[j, i]:
                s = d[i, j] + d[j, i]
                gaps.append(abs(d[i, j] - d[j, i]) / s if s > 0 else 0.0)
    out["symmetry_gap"] = math.fsum(gaps) / len(gaps) if gaps else None
    diag = [d[i, i] for i in range(n) if fin[i, i]]
    out["self_cost"] = math.fsum(diag) / len(diag) if diag else None
    return out


# ------------------------------------------------------------ CLI side

CHECK = LA.Checks(KEYS)
fail, records = CHECK.fail, CHECK.records
COUNT = [0, 0]  # matrices, those with a violation


def compare(label, rec, exp):
    COUNT[0] += 1
    COUNT[1] += bool(exp["triangle_violation"])
    CHECK.compare(label, rec, exp, RTOL, 1e-300, exact=("triangle_violation",))


def check_file(cli, path, stack, label):
    """stack: [..., n, n] matrices stored in path (2-D for one)."""
    recs = records(cli, ["matrix", path, "--metrics", "axioms"])
    if recs is None:
        return
    for h, rec, M in CHECK.each_matrix(label, recs, stack):
        compare("%s [%d]" % (label, h), rec, axioms(M))


def metric_points(rng, n):
    """A_ij = exp(-|p_i - p_j|)/Z_i for points in the plane: a true metric plus ln Z_i."""
    p = rng.normal(size=(n, 2)) * 3
    D = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    E = np.exp(-D)
    return E / E.sum(axis=1, keepdims=True)


def collinear():
    """Points 40 to 60 apart on a line (as test_axioms.c): d_ik = d_ij + d_jk in the reals
    for i < j < k, and 6 triples violate by rounding alone without the tolerance."""
    p = np.array([0, 42.97, 85.36, 145.26, 193.08, 249.32, 297.28, 348.98, 389.44])
    E = np.exp(-np.abs(p[:, None] - p[None, :]))
    return E / E.sum(axis=1, keepdims=True)


def random_cases(rng):
    """[(name, array [H,n,n] or [n,n])]."""
    sparse = stochastic(rng, 30)
    sparse[rng.random(size=(30, 30)) < 0.4] = 0.0
    sparse_causal = causal(rng, 40)
    sparse_causal[rng.random(size=(40, 40)) < 0.3] = 0.0
    ties = np.exp(-rng.integers(1, 9, size=(25, 25)) / 8.0)  # costs on a grid of eighths
    above = stochastic(rng, 20, 0.1)
    above[rng.random(size=(20, 20)) < 0.2] = 1.0 + 2.0 ** -52  # rounded above 1
    neg = stochastic(rng, 10)
    neg[2, 3] = -1e-9
    return [
        ("stoch3", stochastic(rng, 3)),
        ("stoch8", stochastic(rng, 8)),
        ("stoch17x3", np.stack([stochastic(rng, 17, s) for s in (0.5, 2.0, 6.0)])),
        ("stoch48", stochastic(rng, 48, 1.0)),
        ("stoch96_peaked", stochastic(rng, 96, 5.0)),
        ("causal16", causal(rng, 16)),
        ("causal64", causal(rng, 64, 1.5)),
        ("sparse30", sparse),
        ("sparse_causal40", sparse_causal),
        ("ties25", ties),
        ("above20", above),
        ("metric33", metric_points(rng, 33)),
        ("collinear9", collinear()),
        ("uniform9", np.full((9, 9), 1.0 / 9)),
        ("eye6", np.eye(6)),
        ("negative10", neg),
        ("rect5x7", stochastic(rng, 7)[:5]),
        ("one", np.ones((1, 1))),
        ("two", stochastic(rng, 2)),
    ]


def model_cases(cli, d):
    texts = ["In the beginning God created the heaven and the earth. And the earth "
             "was without form, and void; and darkness was upon the face of the "
             "deep. And the Spirit of God moved upon the face of the waters.",
             "Hello world"]
    path = os.path.join(ROOT, "models", "tiny-gpt2")
    out = []
    if not os.path.isdir(path):
        print("skipped tiny-gpt2: no %s" % path)
        return out
    for t, text in enumerate(texts):
        f = os.path.join(d, "gpt2_%d.npy" % t)
        rc, _, err = LA.run(cli, ["attention", path, "--text", text, "-o", f, "--precision", "f64"])
        if rc != 0:
            fail("attngeom attention tiny-gpt2: exit %d: %s" % (rc, err.strip()))
            continue
        out.append((path, text, f, np.load(f)))
    return out


def self_test():
    """The reference on the hand-made cases of tests/analysis/test_axioms.c."""
    d = np.array([[.5, 1, 5], [1, .5, 1], [1, 1, .5]])
    got = axioms(np.exp(-d))
    assert got["triangle_violation"] == 1 / 6, got
    assert abs(got["symmetry_gap"] - 2 / 9) < 1e-15 and abs(got["self_cost"] - 0.5) < 1e-15, got
    c = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]
    got = axioms(c)
    assert got["triangle_violation"] == 0 and got["symmetry_gap"] is None, got
    assert axioms(collinear())["triangle_violation"] == 0


def main():
    if len(sys.argv) < 2:
        print("usage: check_axioms.py CLI", file=sys.stderr)
        return 2
    cli = os.path.abspath(sys.argv[1])
    self_test()
    t0 = time.time()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory(prefix="ag_axioms_") as d:
        for name, A in random_cases(rng):
            path = os.path.join(d, name + ".npy")
            np.save(path, A)
            check_file(cli, path, A, name)
        for mdir, text, f, A in model_cases(cli, d):
            label = "tiny-gpt2 n=%d" % A.shape[-1]
            check_file(cli, f, A, label)
            # analyze computes the same attention (f64) and must agree exactly
            recs = records(cli, ["analyze", mdir, "--text", text, "--precision", "f64",
                                 "--metrics", "axioms"])
            mat = records(cli, ["matrix", f, "--metrics", "axioms"])
            if recs is None or mat is None or len(recs) != len(mat):
                fail("%s: analyze and matrix records differ in number" % label)
                continue
            for r, m in zip(recs, mat):
                for k in KEYS:
                    if r.get(k) != m.get(k):
                        fail("%s analyze vs matrix (%d,%d) %s: %r vs %r"
                             % (label, r["layer"], r["head"], k, r.get(k), m.get(k)))
    print("check_axioms: %d matrices (%d with a violation) against the brute-force reference"
          " (%.0f s)" % (COUNT[0], COUNT[1], time.time() - t0))
    print("  %-20s %12s %6s  %s" % ("key", "max rel err", "nulls", "at"))
    for k in KEYS:
        print("  %-20s %12.3g %6d  %s" % (k, CHECK.maxerr[k], CHECK.nulls[k], CHECK.where[k]))
    if CHECK.fails:
        print("check_axioms: FAILED, %d failure(s)" % len(CHECK.fails))
        return 1
    print("check_axioms: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
