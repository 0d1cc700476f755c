#!/usr/bin/python3
"""Check docs/metrics.md, family F (curvature of the attention graph) against an independent
numpy/scipy/POT reference.

Usage: /usr/bin/python3 tests/ref/check_curvature.py path/to/attngeom

The reference is written from the definitions of docs/metrics.md alone:
  * graph: W = (A + A.T)/2 (numpy), edge {i,j}, i != j, iff W_ij >= tau
    (default 1/n);
  * Forman: the docs/metrics.md sum term by term (numpy; inf/nan where a neighbour
    weight is 0 -> the key is null);
  * Ollivier: hop distances of the whole graph by
    scipy.sparse.csgraph.shortest_path (BFS, unweighted), the lazy measures
    m_i on the union of the two closed balls and the exact earth mover's
    distance ot.emd2 (POT's network simplex, Debian python3-pot) on that
    distance matrix; a measure with zero total neighbour weight is 0/0 and
    the key is null.
and compared with `attngeom matrix FILE --metrics curvature --format json
[--edge-threshold T]` to |got - exp| <= 1e-6 |exp| + 1e-12, `edges` exactly,
nulls exactly, on random attention (stochastic, causal, symmetric, sparse,
several n up to 128, several thresholds) and on every head of the shared
model tiny-gpt2 (attention written with `attngeom attention ... --precision
f64`), plus tiny-bert when tests/data/models/tiny-bert is present.
`analyze --metrics curvature` must agree with `matrix` on the written
attention. Prints the largest errors and exits 1 on any failure.
"""
import math
import os
import sys
import tempfile
import time
import warnings

import numpy as np
from scipy.sparse.csgraph import shortest_path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_matrix import causal, stochastic  # noqa: E402  (the random attention makers)
import libattngeom as LA  # noqa: E402  (the CLI's records, compared key by key)

try:
    import ot  # POT, Debian python3-pot
except ImportError:  # pragma: no cover
    ot = None

KEYS = ["edges", "forman_mean", "forman_min", "ollivier_mean", "ollivier_min"]
RTOL = 1e-6
ATOL = 1e-12
SEED = 424242
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def curvature(A, tau=None):
    """docs/metrics.md, family F for the square matrix A; dict key -> value (None = null)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or np.any(A < 0):
        return {k: None for k in KEYS}
    n = A.shape[0]
    if tau is None or tau < 0:
        tau = 1.0 / n
    W = (A + A.T) / 2.0
    adj = W >= tau
    np.fill_diagonal(adj, False)
    iu, ju = np.nonzero(np.triu(adj, 1))
    out = {"edges": int(iu.size)}
    if iu.size == 0:
        out.update({k: None for k in KEYS[1:]})
        return out
    hops = shortest_path(adj.astype(np.float64), method="D", directed=False,
                         unweighted=True)
    nbrs = [np.nonzero(adj[i])[0] for i in range(n)]
    F, K = [], []
    kbad = False
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        for i, j in zip(iu, ju):
            wij = W[i, j]
            ki = nbrs[i][nbrs[i] != j]
            kj = nbrs[j][nbrs[j] != i]
            F.append(2.0 - np.sum(np.sqrt(wij / W[i, ki])) - np.sum(np.sqrt(wij / W[j, kj])))
            si, sj = W[i, nbrs[i]].sum(), W[j, nbrs[j]].sum()
            if si == 0 or sj == 0 or ot is None:
                kbad = True
                continue
            S = np.union1d(np.append(nbrs[i], i), np.append(nbrs[j], j))
            pos = {v: k for k, v in enumerate(S)}
            mi = np.zeros(S.size)
            mj = np.zeros(S.size)
            mi[pos[i]] += 0.5
            mj[pos[j]] += 0.5
            mi[[pos[k] for k in nbrs[i]]] += 0.5 * W[i, nbrs[i]] / si
            mj[[pos[k] for k in nbrs[j]]] += 0.5 * W[j, nbrs[j]] / sj
            K.append(1.0 - float(ot.emd2(mi, mj, hops[np.ix_(S, S)])))
    F = np.array(F)
    if np.all(np.isfinite(F)):
        out["forman_mean"] = float(F.mean())
        out["forman_min"] = float(F.min())
    else:
        out["forman_mean"] = out["forman_min"] = None
    if kbad:
        out["ollivier_mean"] = out["ollivier_min"] = None
    else:
        out["ollivier_mean"] = float(np.mean(K))
        out["ollivier_min"] = float(np.min(K))
    return out


# ------------------------------------------------------------ CLI side

CHECK = LA.Checks(KEYS)
fail, records = CHECK.fail, CHECK.records
COUNT = [0, 0]  # matrices, edges


def compare(label, rec, exp):
    COUNT[0] += 1
    if exp["edges"] is not None:
        COUNT[1] += exp["edges"]
    CHECK.compare(label, rec, exp, RTOL, ATOL, integers=("edges",))


def check_file(cli, path, stack, tau, label):
    """stack: [H, n, n] matrices stored in path (2-D when H == 1)."""
    args = ["matrix", path, "--metrics", "curvature"]
    if tau is not None:
        args += ["--edge-threshold", repr(float(tau))]
    recs = records(cli, args)
    if recs is None:
        return
    for h, rec, M in CHECK.each_matrix(label, recs, stack):
        compare("%s [%d] tau=%s" % (label, h, tau), rec, curvature(M, tau))


def random_cases(rng):
    """[(name, array [H,n,n] or [n,n], [taus])]."""
    sym = np.abs(rng.normal(size=(40, 40)))
    sym = (sym + sym.T) / 80.0
    sparse = stochastic(rng, 30)
    sparse[rng.random(size=(30, 30)) < 0.6] = 0.0
    sparse[:, 0] += 1e-3
    sparse /= sparse.sum(axis=1, keepdims=True)
    blocks = np.zeros((24, 24))
    for a, b in ((0, 8), (8, 16), (16, 24)):
        blocks[a:b, a:b] = stochastic(rng, b - a)
    blocks = 0.9 * blocks + 0.1 * stochastic(rng, 24)  # weak bridges
    iso = stochastic(rng, 12)
    iso[5, :] = 0.0
    iso[:, 5] = 0.0
    neg = stochastic(rng, 10)
    neg[2, 3] = -1e-9
    return [
        ("stoch8", stochastic(rng, 8), [None, 0.0, 0.2]),
        ("stoch16x3", np.stack([stochastic(rng, 16, s) for s in (0.5, 2.0, 4.0)]),
         [None, 0.05]),
        ("stoch48", stochastic(rng, 48, 1.0), [None, 0.03]),
        ("stoch128", stochastic(rng, 128, 1.0), [None]),
        ("stoch96_peaked", stochastic(rng, 96, 4.0), [None, 0.005]),
        ("causal32", causal(rng, 32), [None, 0.0, 0.1]),
        ("causal96", causal(rng, 96, 1.5), [None]),
        ("sym40", sym, [None, 0.02]),
        ("sparse30", sparse, [None, 0.0]),
        ("blocks24", blocks, [None, 0.01]),
        ("isolated12", iso, [None, 0.0]),
        ("negative10", neg, [None]),
        ("eye6", np.eye(6), [None, 0.0]),
        ("uniform9", np.full((9, 9), 1.0 / 9), [None, 1.0]),
        ("rect5x7", stochastic(rng, 7)[:5], [None]),
    ]


def model_cases(cli, d):
    texts = {
        "tiny-gpt2": ["In the beginning God created the heaven and the earth. And the earth "
                      "was without form, and void; and darkness was upon the face of the "
                      "deep. And the Spirit of God moved upon the face of the waters.",
                      "Hello world"],
        "tiny-bert": ["the quick brown fox jumps over the lazy dog while the cat sleeps "
                      "on the warm mat near the door"],
    }
    dirs = {"tiny-gpt2": os.path.join(ROOT, "models", "tiny-gpt2"),
            "tiny-bert": os.path.join(ROOT, "tests", "data", "models", "tiny-bert")}
    out = []
    for name, path in dirs.items():
        if not os.path.isdir(path):
            print("skipped %s: no %s" % (name, path))
            continue
        for t, text in enumerate(texts[name]):
            f = os.path.join(d, "%s_%d.npy" % (name, t))
            rc, _, err = LA.run(cli, ["attention", path, "--text", text, "-o", f,
                                   "--precision", "f64"])
            if rc != 0:
                fail("attngeom attention %s: exit %d: %s" % (name, rc, err.strip()))
                continue
            A = np.load(f)
            out.append((name, path, text, f, A))
    return out


def main():
    if len(sys.argv) < 2:
        print("usage: check_curvature.py CLI", file=sys.stderr)
        return 2
    cli = os.path.abspath(sys.argv[1])
    if ot is None:
        print("check_curvature: POT (Debian python3-pot) is missing", file=sys.stderr)
        return 1
    t0 = time.time()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory(prefix="ag_curv_") as d:
        for name, A, taus in random_cases(rng):
            path = os.path.join(d, name + ".npy")
            np.save(path, A)
            for tau in taus:
                check_file(cli, path, A, tau, name)
        for name, mdir, text, f, A in model_cases(cli, d):
            L, H = A.shape[:2]
            label = "%s n=%d" % (name, A.shape[-1])
            for tau in (None, 0.05):
                check_file(cli, f, A, tau, label)
            # analyze computes the same attention (f64) and must agree
            recs = records(cli, ["analyze", mdir, "--text", text, "--precision", "f64",
                                 "--metrics", "curvature"])
            if recs is not None:
                mat = records(cli, ["matrix", f, "--metrics", "curvature"])
                for r, m in zip(recs, mat or []):
                    for k in KEYS:
                        a, b = r.get(k), m.get(k)
                        if (a is None) != (b is None) or (
                                a is not None and abs(a - b) > 1e-9 * abs(b) + ATOL):
                            fail("%s analyze vs matrix (%d,%d) %s: %r vs %r"
                                 % (label, r["layer"], r["head"], k, a, b))
    print("check_curvature: %d matrices, %d edges compared with ot.emd2 (%.0f s)"
          % (COUNT[0], COUNT[1], time.time() - t0))
    print("  %-14s %12s %6s  %s" % ("key", "max rel err", "nulls", "at"))
    for k in KEYS:
        print("  %-14s %12.3g %6d  %s" % (k, CHECK.maxerr[k], CHECK.nulls[k], CHECK.where[k]))
    if CHECK.fails:
        print("check_curvature: FAILED, %d failure(s)" % len(CHECK.fails))
        return 1
    print("check_curvature: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
