#!/usr/bin/python3
"""Check docs/metrics.md, family M (cross-attention) and family B's keys on
rectangular matrices against an independent numpy/scipy reference.

Usage: /usr/bin/python3 tests/ref/check_cross.py path/to/attngeom

The reference (tests/ref/reference.py: cross, and attention for family B)
is written from the definitions of docs/metrics.md alone:
  * a_i = numpy.argmax(A[i]) (the first maximum: the smallest j on a tie);
    alignment_monotonicity = scipy.stats.spearmanr(arange(m), a) (ranks
    averaged over ties), alignment_kendall = scipy.stats.kendalltau(arange(m),
    a) (variant b, scipy's default); null when m < 2 or a is constant;
  * source_coverage: c = A.sum(axis=0), T = c.sum(), the share of j with
    c_j >= (T/n)(1 - (m + n) 2^-52); null when an entry is negative or T = 0;
  * cross_entropy_normalized: mean over the rows of -sum_{A_ij>0} A_ij ln A_ij
    (math.fsum) / ln n; null when n = 1 or an entry is negative;
  * family B on m != n: row_sum_error, entropy_mean, entropy_normalized
    (= the same mean / ln n: no rectangular matrix is causal), sink_mass,
    max_mass, sink_ratio (k_i = n) as written, means over the m rows; every
    other key of the family null ("not square").
and compared with `attngeom matrix FILE --format json` (a rectangular input's
default selection, which must be spectrum, attention, geometry and cross) and
`--metrics cross` on square inputs, to 1e-12 (relative above 1), nulls
exactly. Cases: random row-stochastic matrices (softmax of random logits,
peaked and flat), with masked (zero) entries, with argmax ties (entries on a
coarse grid), near-monotone alignments, m = 1, n = 1, uniform, signed,
3-D and 4-D stacks, and square ones. Before that the reference itself is
checked on closed forms (identity 1, reversed -1, the 3x4 of
tests/analysis/test_cross.c). Prints the largest errors; exits 1 on any
failure.
"""
import math
import os
import sys
import tempfile

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom as LA  # noqa: E402
import reference as R  # noqa: E402  (families B and M: R.attention, R.cross)

CROSS = R.CROSS_KEYS
FAMILY_B = R.ATTENTION_KEYS + R.CONDITION_KEYS + R.DETECTOR_KEYS
TOL = 1e-12
SEED = 303030

CHECK = LA.Checks(())
FAILS, fail = CHECK.fails, CHECK.fail
MAXERR = {}
COUNT = {"matrices": 0, "ties": 0, "zeros": 0, "nulls": 0}


def error(got, want):
    """The error of got against want (None: null): 0 for two nulls, inf for a
    null, a missing value or a non-number against a number or the reverse,
    else |got - want| relative above 1."""
    numeric = isinstance(got, (int, float)) and not isinstance(got, bool)
    if want is None or not numeric:
        return 0.0 if got is None and want is None else math.inf
    return abs(got - want) / max(1.0, abs(want))


def compare(label, rec, exp):
    for k, want in exp.items():
        got = rec.get(k, "missing")
        COUNT["nulls"] += want is None
        err = error(got, want)
        if err > MAXERR.get(k, (-1, ""))[0] and want is not None:
            MAXERR[k] = (err, label)
        if not err <= TOL:
            fail("%s: %s = %r, reference %r" % (label, k, got, want))


def records(cli, args):
    """The records of `cli args` and its selected metrics; (None, None) after
    a failure (exit status, or not strict JSON: NaN and Infinity fail)."""
    doc = CHECK.records(cli, args, document=True)
    return (None, None) if doc is None else (doc["records"], doc["settings"]["metrics"])


def check_file(cli, d, name, stack):
    """stack: [..., m, n]; rectangular: the default selection, square: --metrics cross."""
    path = os.path.join(d, name + ".npy")
    np.save(path, stack)
    m, n = stack.shape[-2:]
    square = m == n
    recs, selected = records(cli, ["matrix", path] + (["--metrics", "cross"] if square else []))
    if recs is None:
        return
    flat = stack.reshape(-1, m, n)
    if len(recs) != flat.shape[0]:
        fail("%s: %d records, expected %d" % (name, len(recs), flat.shape[0]))
        return
    if not square and not (set(CROSS + FAMILY_B + ["sigma_max", "mean_cosine"])
                           <= set(selected)) or square and selected != CROSS:
        fail("%s: selected %s" % (name, selected))
    for h, (rec, A) in enumerate(zip(recs, flat)):
        COUNT["matrices"] += 1
        a = np.argmax(A, axis=1)
        COUNT["ties"] += int(np.any((A == A.max(axis=1, keepdims=True)).sum(axis=1) > 1)
                             or len(set(a.tolist())) < len(a))
        COUNT["zeros"] += int(np.any(A == 0))
        if (rec["rows"], rec["cols"]) != (m, n):
            fail("%s [%d]: rows, cols %s, %s" % (name, h, rec["rows"], rec["cols"]))
        exp = R.cross(A)
        if not square:  # family B's row keys; "not square" nulls
            exp.update(R.attention(A), lambda2_condition=R.lambda2_condition(A))
        compare("%s [%d]" % (name, h), rec, exp)


def softmax(S):
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=-1, keepdims=True)


def random_cases(rng):
    """(name, [..., m, n] stack) pairs."""
    out = []
    for t in range(12):
        m, n = int(rng.integers(2, 40)), int(rng.integers(2, 40))
        if m == n:
            n += 1
        out.append(("softmax%d" % t, softmax(rng.normal(size=(3, m, n)) * rng.choice([0.3, 2, 8]))))
    for t in range(6):  # masked entries: exact zeros, rows renormalised
        m, n = int(rng.integers(3, 30)), int(rng.integers(3, 30)) + 1
        A = softmax(rng.normal(size=(2, m, n)) * 3)
        A[rng.random(A.shape) < 0.4] = 0
        A[..., 0] += (A.sum(axis=-1) == 0)  # no empty row
        out.append(("masked%d" % t, A / A.sum(axis=-1, keepdims=True)))
    for t in range(6):  # ties: entries on a grid of quarters, many equal maxima
        m, n = int(rng.integers(4, 60)), int(rng.integers(2, 9))
        A = rng.integers(0, 4, size=(2, m, n)).astype(float)
        A[..., 0] += (A.sum(axis=-1) == 0)
        out.append(("ties%d" % t, A / A.sum(axis=-1, keepdims=True)))
    for t in range(4):  # near-monotone alignments with noise, m > n and m < n
        m, n = [(50, 20), (20, 50), (200, 30), (7, 3)][t]
        centre = np.arange(m)[:, None] * n / m + rng.normal(size=(m, 1)) * 2
        out.append(("monotone%d" % t, softmax(-np.abs(np.arange(n)[None, :] - centre))[None]))
    out.append(("one_target", softmax(rng.normal(size=(1, 6)))))
    out.append(("one_source", np.ones((5, 1))))
    out.append(("uniform", np.full((2, 3, 7), 1 / 7)))
    out.append(("signed", rng.normal(size=(4, 6))))
    out.append(("stack4d", softmax(rng.normal(size=(2, 3, 5, 9)) * 2)))
    out.append(("square", softmax(rng.normal(size=(3, 8, 8)) * 2)))
    out.append(("square_causal", softmax(np.where(np.tril(np.ones((6, 6))) > 0,
                                                  rng.normal(size=(6, 6)), -np.inf))))
    return out


def self_test():
    """The reference on the closed forms of tests/analysis/test_cross.c."""
    I = np.eye(6)
    r = R.cross(I)
    # scipy's tau-b divides by two roots: 1 within an ulp
    assert r["alignment_monotonicity"] == 1 and abs(r["alignment_kendall"] - 1) < 1e-15, r
    assert r["source_coverage"] == 1 and r["cross_entropy_normalized"] == 0, r
    r = R.cross(I[::-1])
    assert r["alignment_monotonicity"] == -1 and abs(r["alignment_kendall"] + 1) < 1e-15, r
    A = np.array([[0.5, 0.25, 0.25, 0], [0.125, 0.125, 0.75, 0], [0, 0.5, 0.5, 0]])
    r = R.cross(A)
    assert abs(r["alignment_monotonicity"] - 0.5) < 1e-15, r
    assert abs(r["alignment_kendall"] - 1 / 3) < 1e-15 and r["source_coverage"] == 0.5, r
    h = (4.75 * math.log(2) - 0.75 * math.log(3)) / (3 * math.log(4))
    assert abs(r["cross_entropy_normalized"] - h) < 1e-15, r
    r = R.cross(np.full((3, 3), 1 / 3))
    assert r["alignment_monotonicity"] is None and r["source_coverage"] == 1, r
    # ties are averaged: ordinal ranks would give another rho
    a = np.array([0, 0, 1, 1, 2])
    assert abs(stats.spearmanr(np.arange(5), a)[0] - 3 / math.sqrt(10)) < 1e-15
    assert abs(stats.kendalltau(np.arange(5), a)[0] - math.sqrt(0.8)) < 1e-15


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cli = sys.argv[1]
    self_test()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory() as d:
        for name, stack in random_cases(rng):
            check_file(cli, d, name, stack)
    for k, (err, where) in sorted(MAXERR.items()):
        print("  %-26s max err %.3g  (%s)" % (k, err, where))
    print("check_cross: %d matrices (%d with argmax ties, %d with zeros), %d nulls checked"
          % (COUNT["matrices"], COUNT["ties"], COUNT["zeros"], COUNT["nulls"]))
    if COUNT["ties"] < 10 or COUNT["zeros"] < 10:
        fail("too few ties or zeros exercised: %s" % COUNT)
    sys.exit("check_cross: %d failure(s)" % len(FAILS) if FAILS else print("check_cross: ok"))


if __name__ == "__main__":
    main()
