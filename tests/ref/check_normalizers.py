#!/usr/bin/python3
"""Check attngeom/normalizers.h (issue 28 item 2) against the authors' code.

Usage: /usr/bin/python3 tests/ref/check_normalizers.py path/to/attngeom

The `entmax` package (github.com/deep-spin/entmax, Peters, Niculae & Martins
2019; read at commit 11eed0036fb4 for entmax/activations.py and 01f3a008c3d5
for entmax/root_finding.py) ported from torch to numpy on one row, line for
line: SparsemaxFunction.forward with _threshold_and_support,
Tsallis15Function.forward with _tsallis_threshold_and_support, and
EntmaxBisectFunction.forward (n_iter 100, ensure_sum_one); softmax at a
temperature; and linear attention, Katharopoulos et al. (2020) eq. 7 with
phi = elu + 1 as their fast_transformers' elu_feature_map. The library
(libattngeom.so beside the CLI, through ctypes) must agree to 1e-12 (max
|diff|) on random rows: Gaussian scores of several spreads, rows with -inf
entries (masked keys) and rows with ties, n from 1 to 300; alpha in
{1.1, 1.25, 1.5, 1.75, 2}; temperatures 0.25..4. Exits 1 on any failure.
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import libattngeom  # noqa: E402

TOL = 1e-12
P = ctypes.POINTER(ctypes.c_double)


# ---- the entmax package, ported to numpy (one row, dim = -1) -------------

def sparsemax_ref(x):
    """SparsemaxFunction.forward: x - max, _threshold_and_support, clamp."""
    x = x - x.max()
    srt = np.sort(x)[::-1]
    cumsum = np.cumsum(srt) - 1
    rhos = np.arange(1, len(x) + 1, dtype=x.dtype)
    support = rhos * srt > cumsum
    support_size = support.sum()
    tau = cumsum[support_size - 1] / support_size
    return np.maximum(x - tau, 0)


def entmax15_ref(x):
    """Tsallis15Function.forward: (x - max)/2, _tsallis_threshold_and_support,
    clamp(x - tau, 0) ** 2."""
    x = (x - x.max()) / 2
    srt = np.sort(x)[::-1]
    rho = np.arange(1, len(x) + 1, dtype=x.dtype)
    mean = np.cumsum(srt) / rho
    mean_sq = np.cumsum(srt ** 2) / rho
    ss = rho * (mean_sq - mean ** 2)
    delta = (1 - ss) / rho
    delta_nz = np.maximum(delta, 0)
    tau = mean - np.sqrt(delta_nz)
    support_size = (tau <= srt).sum()
    tau_star = tau[support_size - 1]
    return np.maximum(x - tau_star, 0) ** 2


def entmax_bisect_ref(x, alpha, n_iter=100):
    """EntmaxBisectFunction.forward (ensure_sum_one)."""
    def p_of(v):
        return np.maximum(v, 0) ** (1 / (alpha - 1))
    d = len(x)
    x = x * (alpha - 1)
    max_val = x.max()
    tau_lo = max_val - 1 ** (alpha - 1)
    tau_hi = max_val - (1 / d) ** (alpha - 1)
    f_lo = p_of(x - tau_lo).sum() - 1
    dm = tau_hi - tau_lo
    for _ in range(n_iter):
        dm /= 2
        tau_m = tau_lo + dm
        p_m = p_of(x - tau_m)
        f_m = p_m.sum() - 1
        if f_m * f_lo >= 0:
            tau_lo = tau_m
    return p_m / p_m.sum()


def softmax_ref(x, T):
    z = (x - x.max()) / T
    e = np.exp(z)
    return e / e.sum()


def linear_ref(q, K, allowed):
    """Katharopoulos et al. (2020) eq. 7, phi(x) = elu(x) + 1."""
    phi = lambda v: np.where(v > 0, v + 1, np.exp(np.minimum(v, 0)))  # noqa: E731
    num = (phi(K) @ phi(q)) * allowed
    return num / num.sum()


# ---- rows ---------------------------------------------------------------

def rows(rng):
    """(name, scores) pairs: spreads, masks, ties, sizes."""
    for n in (1, 2, 3, 7, 30, 120, 300):
        for sd in (0.1, 1.0, 5.0, 30.0):
            s = rng.normal(0, sd, n)
            yield "gauss n=%d sd=%g" % (n, sd), s
            if n > 1:
                m = s.copy()
                m[rng.random(n) < 0.4] = -np.inf
                m[rng.integers(n)] = rng.normal(0, sd)
                yield "masked n=%d sd=%g" % (n, sd), m
                t = np.round(s / sd * 2) * sd / 2  # many exact ties
                yield "ties n=%d sd=%g" % (n, sd), t
                c = np.where(np.arange(n) <= rng.integers(n), s, -np.inf)  # a causal row
                yield "causal n=%d sd=%g" % (n, sd), c
    yield "all equal", np.full(9, 0.3)
    yield "two tied tops", np.array([2.0, 2.0, 0.5, -np.inf, 1.0])


def call_row(lib, name, s, *extra):
    n = len(s)
    s = np.ascontiguousarray(s, dtype=np.float64)
    p = np.empty(n)
    err = libattngeom.Error()
    rc = getattr(lib, name)(s.ctypes.data_as(P), ctypes.c_size_t(n), *extra,
                            p.ctypes.data_as(P), ctypes.byref(err))
    if rc != 0:
        raise RuntimeError("%s: %s" % (name, err.message.decode()))
    return p


def compare(failures, what, got, ref, s):
    masked = np.isneginf(s)
    err = float(np.max(np.abs(got - ref)))
    ok = err <= TOL and np.all(got[masked] == 0) and abs(got.sum() - 1) <= 1e-13
    if not ok:
        failures.append("%s: max |diff| %.3g, sum %.17g" % (what, err, got.sum()))
    return err


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    lib = libattngeom.load(argv[1], "check_normalizers")
    if lib is None:
        return 0
    dbl = ctypes.c_double
    rng = np.random.default_rng(2019)
    failures, worst, count = [], {}, 0
    with np.errstate(invalid="ignore", over="ignore"):
        for name, s in rows(rng):
            cases = [("sparsemax", call_row(lib, "ag_sparsemax_row", s), sparsemax_ref(s)),
                     ("entmax15", call_row(lib, "ag_entmax15_row", s), entmax15_ref(s))]
            for a in (1.1, 1.25, 1.5, 1.75, 2.0):
                cases.append(("entmax:%g" % a, call_row(lib, "ag_entmax_bisect_row", s[:], dbl(a)),
                              entmax_bisect_ref(s, a)))
            for T in (0.25, 0.5, 1.0, 2.0, 4.0):
                cases.append(("softmax T=%g" % T, call_row(lib, "ag_softmax_row", s, dbl(T))[:],
                              softmax_ref(s, T)))
            for what, got, ref in cases:
                e = compare(failures, "%s, %s" % (what, name), got, ref, s)
                worst[what.split(" ")[0]] = max(worst.get(what.split(" ")[0], 0.0), e)
                count += 1
        for n, d in ((1, 4), (5, 3), (64, 16), (200, 8)):
            q, K = rng.normal(0, 1.5, d), rng.normal(0, 1.5, (n, d))
            allowed = (rng.random(n) < 0.7).astype(np.uint8)
            allowed[rng.integers(n)] = 1
            p = np.empty(n)
            err = libattngeom.Error()
            rc = lib.ag_linear_attention_row(q.ctypes.data_as(P), K.ctypes.data_as(P),
                                             ctypes.c_size_t(n), ctypes.c_size_t(d),
                                             ctypes.c_size_t(d), allowed.ctypes.data_as(ctypes.c_void_p),
                                             p.ctypes.data_as(P), ctypes.byref(err))
            if rc != 0:
                failures.append("linear n=%d: %s" % (n, err.message.decode()))
                continue
            s = np.where(allowed == 1, 0.0, -np.inf)
            e = compare(failures, "linear n=%d d=%d" % (n, d), p, linear_ref(q, K, allowed), s)
            worst["linear"] = max(worst.get("linear", 0.0), e)
            count += 1
    for k in sorted(worst):
        print("%-12s max |diff| %.2g" % (k, worst[k]))
    for f in failures[:20]:
        print("FAIL " + f, file=sys.stderr)
    print("check_normalizers: %d rows, %d failures" % (count, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
