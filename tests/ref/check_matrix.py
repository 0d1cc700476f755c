#!/usr/bin/python3
"""Check `attngeom matrix` against the independent reference (reference.py).

Usage: /usr/bin/python3 tests/ref/check_matrix.py path/to/attngeom [--keep DIR]

Generates varied matrices (fixed seed) in a temporary folder, stored as .npy
(<f2 <f4 <f8, C and Fortran order, 2-D, 3-D [H,n,n], 4-D [L,H,n,n], format
versions 1.0 and 2.0) and as .safetensors (F16 BF16 F32 F64, several tensors
per file, one I64 tensor, __metadata__), runs
`attngeom matrix FILE [--tensor NAME] --format json --metrics all` on each and
compares every record with the reference computed from the values as stored
(float16/bfloat16 rounding included):

  * record count; layer/head per docs/cli.md, Records (2-D: 0,0; 3-D: 0,h; 4-D: l,h);
    rows, cols;
  * --metrics all on matrices up to CURV_MAX_N (128), else
    --metrics spectrum,attention,geometry (family F's reference is one
    ot.emd2 per edge, see check_curvature.py);
  * lambda2_condition against scipy.linalg.eig(left=True, right=True)
    (reference.lambda2_condition_info: when lambda_2 ties in modulus with
    another eigenvalue every candidate is accepted, when it is a repeated
    eigenvalue only >= 1 is checked; both are reported);
  * family F (edges, forman_*, ollivier_*) against check_curvature.curvature;
  * every family A/B/C key: null exactly where the reference is null, booleans
    equal, integers (numerical_rank) equal, other numbers within
    |got - exp| <= 1e-6 |exp| + 1e-12;
  * no NaN/Infinity tokens in the JSON;
  * the default selection (no --metrics) prints every A/B/C key;
  * --metrics sigma_max,entropy_mean prints only those keys;
  * --format csv: header layer, head, rows, cols, then metrics in docs/metrics.md order,
    and values equal to the JSON ones;
  * matrices 2^k M at the ends of the double range (|k| up to 1070: entries
    near 1e308 and subnormal ones), where numpy/scipy themselves overflow or
    lose digits: the reference is computed on M = 2^-k (2^k M as stored),
    exactly, and carried over (scaled_reference): scale-free keys equal,
    homogeneous keys times 2^k, entropies and row_sum_error from their
    closed forms, null where the value lies beyond the double range
    (docs/metrics.md, "Range").

Prints a summary and exits 1 on any failure.  Mismatching inputs are copied to
/tmp/ag_mismatch/.
"""
import csv
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom as LA  # noqa: E402
import reference as R  # noqa: E402

RTOL = 1e-6
# The absolute term: several keys are mathematically 0 for some inputs
# (row_sum_error of a stochastic matrix, spectral_gap of a permutation,
# fiedler of a block-diagonal matrix, asymmetry of a symmetric one, res_ratio
# of identical rows...), where both sides hold rounding noise of order 1e-16;
# 1e-12 accepts that noise and nothing of consequence (every key is O(1) or a
# ratio of O(1) quantities for the inputs below).
ATOL = 1e-12
# Keys that scale with the entries of the matrix (homogeneous of degree 1, or
# nearly so for the entropies: -sum cA log cA = c(H(A) - log c sum A)).  For
# them the absolute term is ATOL * min(1, max|M|): the same 1e-12 for ordinary
# matrices, but on a matrix with entries near 1e-100 a plain 1e-12 would
# accept any value at all.  The other keys are scale-free (ratios, ranks,
# cosines, the normalised Laplacian's fiedler) and keep ATOL.
HEAD_ROLE_KEYS = ("attention_distance", "self_mass", "prev_token_mass",
                  "max_mass", "sink_ratio", "prev_token_ratio", "self_ratio")
SCALED_KEYS = {"sigma_max", "lambda2_abs", "spectral_gap", "sink_mass",
               "entropy_mean", "entropy_normalized"} | set(HEAD_ROLE_KEYS)
MISMATCH_DIR = "/tmp/ag_mismatch"
# Family F (curvature) is compared on matrices up to this size: the
# reference solves one ot.emd2 per edge in Python (~n^2/3 edges at the
# default threshold), too slow above it; larger files run with
# --metrics spectrum,attention,geometry (tests/ref/check_curvature.py covers
# F in depth).
CURV_MAX_N = 128
SEED = 20240517

CHECK = LA.Checks(())
FAILS, fail = CHECK.fails, CHECK.fail
NOTES = []


# ------------------------------------------------------------ matrix makers

def softmax_rows(L):
    L = L - np.max(L, axis=1, keepdims=True)
    E = np.exp(L)
    return E / E.sum(axis=1, keepdims=True)


def stochastic(rng, n, scale=2.0):
    return softmax_rows(rng.normal(size=(n, n)) * scale)


def causal(rng, n, scale=2.0):
    L = rng.normal(size=(n, n)) * scale
    L[np.triu_indices(n, 1)] = -np.inf
    return softmax_rows(L)


def symmetric_nonneg(rng, n):
    B = np.abs(rng.normal(size=(n, n)))
    return (B + B.T) / 2.0


def symmetric_signed(rng, n):
    B = rng.normal(size=(n, n))
    return (B + B.T) / 2.0


def signed(rng, m, n):
    return rng.normal(size=(m, n))


def rank_k(rng, m, n, k):
    # small integers: the product is exact in binary64, so the matrix has
    # exactly rank k (numerical_rank is then a clear-cut k)
    U = rng.integers(-3, 4, size=(m, k)).astype(np.float64)
    V = rng.integers(-3, 4, size=(k, n)).astype(np.float64)
    return (U @ V) / 8.0


def rank1_pos(rng, m, n):
    u = rng.integers(1, 5, size=m).astype(np.float64)
    v = rng.integers(1, 9, size=n).astype(np.float64)
    return np.outer(u, v) / 64.0


def permutation(rng, n):
    return np.eye(n)[rng.permutation(n)]


def block_diag_stochastic(rng, sizes):
    n = sum(sizes)
    A = np.zeros((n, n))
    i = 0
    for s in sizes:
        A[i:i + s, i:i + s] = stochastic(rng, s)
        i += s
    return A


def sparse_stochastic(rng, n):
    A = stochastic(rng, n)
    A[rng.random(size=(n, n)) < 0.5] = 0.0
    A[:, 0] += 1e-3  # no zero row
    return A / A.sum(axis=1, keepdims=True)


def with_zero_rows(rng, n):
    A = stochastic(rng, n)
    A[1] = 0.0
    A[n - 2] = 0.0
    return A


# ------------------------------------------------------------ file writers

def round_f16(a):
    return np.asarray(a, dtype=np.float64).astype("<f2").astype(np.float64)


def bf16_bits(a):
    f = np.asarray(a, dtype=np.float64).astype("<f4")
    u = f.view("<u4").astype(np.uint64)
    # round to nearest, ties to even (finite values only)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def bf16_values(bits):
    return (bits.astype("<u4") << 16).view("<f4").astype(np.float64)


def stored(a, dtype):
    """(bytes-ready array, values as stored in float64)."""
    a = np.asarray(a, dtype=np.float64)
    if dtype in ("<f2", "F16"):
        s = a.astype("<f2")
        return s, s.astype(np.float64)
    if dtype in ("<f4", "F32"):
        s = a.astype("<f4")
        return s, s.astype(np.float64)
    if dtype in ("<f8", "F64"):
        return a.astype("<f8"), a.copy()
    if dtype == "BF16":
        b = bf16_bits(a)
        return b, bf16_values(b)
    if dtype == "I64":
        s = a.astype("<i8")
        return s, s.astype(np.float64)
    raise ValueError(dtype)


def write_npy(path, a, dtype, fortran=False, version=None):
    s, vals = stored(a, dtype)
    if fortran:
        s = np.asfortranarray(s)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, s, version=version, allow_pickle=False)
    # sanity: numpy reads back what we meant
    back = np.load(path)
    assert back.dtype == np.dtype(dtype) and back.shape == a.shape
    assert bool(back.flags.f_contiguous and not back.flags.c_contiguous) == \
        bool(fortran and a.ndim > 1 and s.flags.f_contiguous and not s.flags.c_contiguous)
    return vals


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, array, dtype).  Returns {name: stored values}."""
    header = {}
    blobs = []
    vals = {}
    off = 0
    for name, a, dtype in tensors:
        s, v = stored(a, dtype)
        raw = np.ascontiguousarray(s).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        vals[name] = v
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return vals


# ------------------------------------------------------------ CLI running

def run(cli, args, timeout=600):
    t = time.time()
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), \
        p.stderr.decode("utf-8", "replace"), time.time() - t


def run_json(cli, path, tensor, extra):
    args = ["matrix", path]
    if tensor is not None:
        args += ["--tensor", tensor]
    args += ["--format", "json"] + extra
    rc, out, err, dt = run(cli, args)
    cmd = " ".join([os.path.basename(cli)] + args)
    if rc != 0:
        fail("%s: exit %d, stderr: %s" % (cmd, rc, err.strip()))
        return None, cmd, dt
    try:
        doc = json.loads(out, parse_constant=LA.no_constants)
    except ValueError as e:
        fail("%s: output is not valid JSON (%s): %.300s" % (cmd, e, out))
        return None, cmd, dt
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        fail("%s: no top-level {\"records\": [...]}" % cmd)
        return None, cmd, dt
    return doc["records"], cmd, dt


def save_mismatch(path, note):
    os.makedirs(MISMATCH_DIR, exist_ok=True)
    dst = os.path.join(MISMATCH_DIR, os.path.basename(path))
    if not os.path.exists(dst):
        shutil.copy(path, dst)
    with open(os.path.join(MISMATCH_DIR, "NOTES.txt"), "a") as f:
        f.write(note + "\n")


# ------------------------------------------------------------ comparison

class Stats:
    def __init__(self):
        self.matrices = 0
        self.keys = 0
        self.maxrel = {k: 0.0 for k in R.ALL_KEYS}
        self.where = {k: "" for k in R.ALL_KEYS}
        self.maxabs = {k: 0.0 for k in R.ALL_KEYS}
        self.nulls = {k: 0 for k in R.ALL_KEYS}
        self.banded = []
        self.cond_ties = []


STATS = Stats()


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare_condition(label, got, M):
    """lambda2_condition: exact comparison unless lambda_2 ties (see
    reference.lambda2_condition_info); returns an error string or None."""
    want, accepted, kind = R.lambda2_condition_info(M)
    if want is None and kind == "":
        STATS.nulls["lambda2_condition"] += 1
        return None if got is None else "lambda2_condition: got %r, reference null" % (got,)
    if kind:
        STATS.cond_ties.append((label, kind, got, accepted))
    if accepted is None:  # repeated eigenvalue: the value depends on the basis
        if got is None or (is_num(got) and got >= 1 - 1e-9):
            return None
        return "lambda2_condition: got %r, expected a number >= 1 (repeated lambda_2)" % (got,)
    if not is_num(got):
        return "lambda2_condition: got %r, reference %r" % (got, want)
    best = None
    for a in accepted:
        if a is None:
            continue
        d = abs(got - a)
        if best is None or d / abs(a) < best[0]:
            best = (d / abs(a), a, d)
    if best is None:
        return "lambda2_condition: got %r, reference null" % (got,)
    rel, a, d = best
    if rel > STATS.maxrel["lambda2_condition"]:
        STATS.maxrel["lambda2_condition"] = rel
        STATS.where["lambda2_condition"] = label
    if not d <= RTOL * abs(a) + ATOL:
        return "lambda2_condition: got %.17g, reference %.17g (rel %.3g%s)" % (
            got, a, rel, ", " + kind if kind else "")
    return None


def compare_record(cmd, path, label, rec, exp, M, keys=None, scale=None):
    """scale: max|entries| of the matrix the CLI saw, when M is its scaled
    stand-in (scaled_reference)."""
    bad = []
    if scale is None:
        scale = float(np.max(np.abs(M)))
    for key in (keys or R.ALL_KEYS):
        if key == "lambda2_condition":
            if key not in rec:
                bad.append("%s: key missing" % key)
                continue
            STATS.keys += 1
            msg = compare_condition(label, rec[key], M)
            if msg:
                bad.append(msg)
            continue
        if key not in rec:
            bad.append("%s: key missing" % key)
            continue
        got, want = rec[key], exp[key]
        STATS.keys += 1
        if want is None:
            STATS.nulls[key] += 1
            if got is not None:
                bad.append("%s: got %r, reference null" % (key, got))
            continue
        if isinstance(want, bool):
            if got is not want:
                bad.append("%s: got %r, reference %r" % (key, got, want))
            continue
        if isinstance(want, int):
            lo, hi = (want, want) if key != "numerical_rank" else R.numerical_rank_band(M)
            if not (isinstance(got, int) and not isinstance(got, bool)):
                bad.append("%s: got %r (not an integer), reference %d" % (key, got, want))
            elif lo == hi and got != want:
                bad.append("%s: got %d, reference %d" % (key, got, want))
            elif lo != hi:
                # singular values within a factor 2 of the threshold: see
                # reference.numerical_rank_band
                STATS.banded.append((label, got, want, lo, hi))
                if not lo <= got <= hi:
                    bad.append("%s: got %d, reference %d (rounding-dependent "
                               "range %d..%d)" % (key, got, want, lo, hi))
            continue
        if not is_num(got):
            bad.append("%s: got %r, reference %.17g" % (key, got, want))
            continue
        atol = ATOL * min(1.0, scale) if key in SCALED_KEYS else ATOL
        d = abs(got - want)
        rel = d / abs(want) if want != 0 else (0.0 if d == 0 else math.inf)
        if abs(want) > atol:
            if rel > STATS.maxrel[key]:
                STATS.maxrel[key] = rel
                STATS.where[key] = label
        else:  # rounding noise around a mathematical 0: absolute error
            STATS.maxabs[key] = max(STATS.maxabs[key], d)
        if not d <= RTOL * abs(want) + atol:
            bad.append("%s: got %.17g, reference %.17g (rel %.3g)" % (key, got, want, rel))
    if bad:
        note = "%s [%s] %s" % (cmd, label, "; ".join(bad))
        fail(note)
        save_mismatch(path, note)
        np.save(os.path.join(MISMATCH_DIR, "%s__%s.values.npy" % (
            os.path.basename(path), label.replace(" ", "_").replace("/", "_"))), M)


def expected_records(vals):
    """[(layer, head, matrix)] per docs/cli.md, Records for a stored array."""
    if vals.ndim == 2:
        return [(0, 0, vals)]
    if vals.ndim == 3:
        return [(0, h, vals[h]) for h in range(vals.shape[0])]
    if vals.ndim == 4:
        return [(l, h, vals[l, h]) for l in range(vals.shape[0])
                for h in range(vals.shape[1])]
    raise ValueError(vals.ndim)


REF_CACHE = {}


def reference_for(M, with_curvature=True):
    key = (M.shape, M.tobytes(), with_curvature)
    h = hash(key)
    if h in REF_CACHE and REF_CACHE[h][0] == key:
        return REF_CACHE[h][1]
    # lambda2_condition is compared through R.lambda2_condition_info
    exp = R.metrics(M, with_condition=False, with_curvature=with_curvature)
    REF_CACHE[h] = (key, exp)
    return exp


def check_file(cli, path, tensor, vals, desc, extra=None):
    small = max(vals.shape[-1], vals.shape[-2]) <= CURV_MAX_N
    keys = R.ALL_KEYS if small else R.DEFAULT_KEYS
    if extra is None:
        extra = ("--metrics", "all" if small else "spectrum,attention,geometry")
    records, cmd, dt = run_json(cli, path, tensor, list(extra))
    if records is None:
        save_mismatch(path, "%s: did not run (%s)" % (cmd, desc))
        return None
    want = expected_records(vals)
    if len(records) != len(want):
        fail("%s: %d records, expected %d" % (cmd, len(records), len(want)))
        save_mismatch(path, "%s: record count" % cmd)
        return records
    for i, rec in enumerate(records):
        for k in ("layer", "head", "rows", "cols"):
            if not (isinstance(rec.get(k), int) and not isinstance(rec.get(k), bool)):
                fail("%s: record %d: %r is %r, not an integer" % (cmd, i, k, rec.get(k)))
    got_pos = [(r.get("layer"), r.get("head")) for r in records]
    want_pos = [(l, h) for l, h, _ in want]
    if sorted(got_pos, key=repr) != sorted(want_pos, key=repr):
        fail("%s: (layer, head) pairs %s, expected %s" % (cmd, got_pos[:8], want_pos[:8]))
        save_mismatch(path, "%s: layer/head" % cmd)
        return records
    if got_pos != want_pos:
        NOTES.append("%s: records not in (layer, head) order" % cmd)
    by_pos = {(r["layer"], r["head"]): r for r in records}
    for l, h, M in want:
        rec = by_pos[(l, h)]
        label = "%s layer %d head %d" % (desc, l, h)
        if rec.get("rows") != M.shape[0] or rec.get("cols") != M.shape[1]:
            fail("%s [%s]: rows/cols %r/%r, expected %d/%d" % (
                cmd, label, rec.get("rows"), rec.get("cols"), M.shape[0], M.shape[1]))
            continue
        exp = reference_for(M, small)
        compare_record(cmd, path, label, rec, exp, M, keys)
        STATS.matrices += 1
        if M.shape[0] == M.shape[1] and M.shape[0] <= R.CROSSCHECK_MAX_N:
            x = R.causal_eigen_crosscheck(M)
            if x is not None and x > 1e-9:
                NOTES.append("reference: diagonal vs eigvals differ by %.2g on %s" % (x, label))
    return records


# ------------------------------------------------------------ 2^k M

def ldexp_or_none(v, k):
    """v 2^k, or None (null) when that lies beyond the double range."""
    if v is None:
        return None
    try:
        return math.ldexp(v, k)
    except OverflowError:
        return None


def scaled_reference(M, k, with_curvature):
    """The reference record of A = 2^k M from M: scale-free keys are M's;
    sigma_max, lambda2_abs, spectral_gap, sink_mass and the head-role keys
    (attention_distance ... sink_ratio, prev_token_ratio, self_ratio) are
    2^k times M's;
    -sum a ln a over a row is 2^k (h_i - k ln2 r_i) with h_i = -sum m ln m and
    r_i the row sum of M (square or not), and so for cross_entropy_normalized;
    the alignment keys and source_coverage are scale-free;
    row_sum_error is max |2^k r_i - 1|; family F runs
    on M at the threshold 2^-k/n, the same graph as A at 1/n."""
    exp = dict(reference_for(M, with_curvature=False))
    for key in ("sigma_max", "lambda2_abs", "spectral_gap", "sink_mass") + HEAD_ROLE_KEYS:
        exp[key] = ldexp_or_none(exp[key], k)
    m, n = M.shape  # the m rows of a rectangular M too (never causal: s_i = n)
    rows = [math.fsum(r) for r in M]
    errs = [ldexp_or_none(r, k) for r in rows]
    exp["row_sum_error"] = (None if any(e is None for e in errs)
                            else max(abs(e - 1.0) for e in errs))
    if exp["entropy_mean"] is not None:
        inner = [math.fsum(-x * math.log(x) for x in r if x > 0) - k * math.log(2) * rs
                 for r, rs in zip(M, rows)]
        exp["entropy_mean"] = ldexp_or_none(math.fsum(inner) / m, k)
        if exp["cross_entropy_normalized"] is not None:  # family M: always ln n
            exp["cross_entropy_normalized"] = ldexp_or_none(math.fsum(inner) / m / math.log(n), k)
        keys = [i for i in range(m) if (i + 1 if exp["causal"] else n) >= 2]
        if keys:
            exp["entropy_normalized"] = ldexp_or_none(math.fsum(
                inner[i] / math.log(i + 1 if exp["causal"] else n) for i in keys) / len(keys), k)
    if with_curvature:
        tau = ldexp_or_none(1.0 / n, -k)
        exp.update(R.curvature(M, math.inf if tau is None else tau) if m == n else
                   {key: None for key in R.CURVATURE_KEYS})
    return exp


def check_scaled(cli, d, rng):
    """2^k M through `matrix --metrics all`, against scaled_reference."""
    count = 0
    cases = [("stoch12", stochastic(rng, 12), (1000, 600, -600, -1000, -1060)),
             ("causal12", causal(rng, 12), (1020, -1065)),
             ("signed10x8", signed(rng, 10, 8), (1000, -1060)),
             ("sym_nonneg9", symmetric_nonneg(rng, 9), (1022, -1070)),
             # sigma_max 3(0.75 2^1024) and the row sums beyond the range
             ("threequarters3", np.full((3, 3), 0.75), (1024,))]
    for name, M0, ks in cases:
        for k in ks:
            path = os.path.join(d, "%s_2^%d.npy" % (name, k))
            A = write_npy(path, np.ldexp(M0, k), "<f8")
            M = np.ldexp(A, -k)  # exact: what the CLI read, at scale 1
            records, cmd, _ = run_json(cli, path, None, ["--metrics", "all"])
            if records is None or len(records) != 1:
                fail("%s: no record" % cmd)
                save_mismatch(path, "%s: did not run" % cmd)
                continue
            exp = scaled_reference(M, k, with_curvature=True)
            compare_record(cmd, path, "%s 2^%d" % (name, k), records[0], exp, M,
                           scale=float(np.max(np.abs(A))))
            STATS.matrices += 1
            count += 1
    return count


# ------------------------------------------------------------ extra checks

# Keys that identify a record rather than measure it.
ID_KEYS = {"layer", "head", "rows", "cols", "model"}


def check_default_and_subset(cli, path, desc):
    recs, cmd, _ = run_json(cli, path, None, [])
    if recs:
        for r in recs:
            miss = [k for k in R.DEFAULT_KEYS if k not in r]
            if miss:
                fail("%s (default selection): keys missing %s" % (cmd, miss))
                break
        extra = sorted(set(recs[0]) - set(R.DEFAULT_KEYS) - ID_KEYS)
        if extra:
            NOTES.append("default selection also prints %s (not checked here)" % extra)
    recs, cmd, _ = run_json(cli, path, None, ["--metrics", "sigma_max,entropy_mean"])
    if recs:
        for r in recs:
            keys = set(r)
            want = ID_KEYS | {"sigma_max", "entropy_mean"}
            if keys != want:
                fail("%s: keys %s, expected exactly %s" % (cmd, sorted(keys), sorted(want)))
                break
    # family names select their keys only
    for fam, keys in R.FAMILIES.items():
        recs, cmd, _ = run_json(cli, path, None, ["--metrics", fam])
        if recs:
            got = set(recs[0]) - ID_KEYS
            if not set(keys) <= got:
                fail("%s: missing %s" % (cmd, sorted(set(keys) - got)))
            others = got - set(keys)
            if fam == "attention":
                others -= {"lambda2_condition"}  # docs/metrics.md: attention includes it
            if others:
                fail("%s: prints keys outside the family: %s" % (cmd, sorted(others)))


def csv_value(s):
    if s in ("", "null"):
        return None
    if s in ("true", "false"):
        return s == "true"
    try:
        return int(s)
    except ValueError:
        pass
    return float(s)


def check_csv(cli, path, tensor, json_records):
    args = ["matrix", path] + (["--tensor", tensor] if tensor else []) + \
        ["--format", "csv", "--metrics", "all"]
    rc, out, err, _ = run(cli, args)
    cmd = "attngeom " + " ".join(args)
    if rc != 0:
        fail("%s: exit %d: %s" % (cmd, rc, err.strip()))
        return
    rows = list(csv.reader(io.StringIO(out)))
    rows = [r for r in rows if r]
    if not rows:
        fail("%s: empty output" % cmd)
        return
    head = rows[0]
    if head[:4] != ["layer", "head", "rows", "cols"]:
        fail("%s: header starts %s, expected layer,head,rows,cols" % (cmd, head[:4]))
        return
    # "model" (the file's name) closes every record (docs/cli.md, "Records that stand alone")
    if head[-1:] != ["model"]:
        fail("%s: header ends %s, expected model" % (cmd, head[-1:]))
        return
    metric_cols = head[4:-1]
    known = [k for k in metric_cols if k in R.ALL_KEYS]
    if known != [k for k in R.ALL_KEYS if k in known] or set(known) != set(R.ALL_KEYS):
        fail("%s: metric columns %s, expected docs/metrics.md order %s" % (cmd, known, R.ALL_KEYS))
    unknown = [k for k in metric_cols if k not in R.ALL_KEYS]
    if unknown:
        NOTES.append("csv prints extra columns %s" % unknown)
    jkeys = [k for k in json_records[0] if k not in ID_KEYS]
    if set(jkeys) != set(metric_cols):
        fail("%s: CSV columns %s differ from JSON keys %s" % (cmd, metric_cols, jkeys))
    if len(rows) - 1 != len(json_records):
        fail("%s: %d data rows, JSON has %d records" % (cmd, len(rows) - 1, len(json_records)))
        return
    nbad = 0
    for row, rec in zip(rows[1:], json_records):
        if len(row) != len(head):
            fail("%s: row has %d fields, header %d" % (cmd, len(row), len(head)))
            return
        for k, s in zip(head, row):
            if k == "model":
                if s != rec.get(k) or s != os.path.basename(path):
                    fail("%s: model %r, JSON %r, file %r" % (cmd, s, rec.get(k), os.path.basename(path)))
                continue
            try:
                v = csv_value(s)
            except ValueError:
                fail("%s: %s = %r is not a number, bool or empty" % (cmd, k, s))
                nbad += 1
                continue
            j = rec.get(k)
            same = (v is None and j is None) or (isinstance(v, bool) and v is j) or \
                (is_num(v) and is_num(j) and not isinstance(j, bool) and float(v) == float(j))
            if not same:
                nbad += 1
                if nbad <= 5:
                    fail("%s: record (%s,%s) %s: CSV %r, JSON %r" % (
                        cmd, rec.get("layer"), rec.get("head"), k, s, j))


# ------------------------------------------------------------ the cases

def build_cases(d, rng):
    """Returns [(path, tensor, stored values, description)]."""
    cases = []

    def npy(name, a, dtype, fortran=False, version=None):
        p = os.path.join(d, name)
        v = write_npy(p, a, dtype, fortran, version)
        cases.append((p, None, v, name))

    # 2-D .npy, assorted kinds and dtypes
    npy("stoch64_f8.npy", stochastic(rng, 64), "<f8")
    npy("stoch64_f8_fortran.npy", stochastic(rng, 64), "<f8", fortran=True)
    npy("stoch33_f4.npy", stochastic(rng, 33, 4.0), "<f4")
    npy("stoch40_f2.npy", stochastic(rng, 40, 3.0), "<f2")
    npy("stoch512_f4.npy", stochastic(rng, 512), "<f4")
    npy("stoch512_f8_fortran.npy", stochastic(rng, 512, 1.0), "<f8", fortran=True)
    npy("causal64_f8.npy", causal(rng, 64), "<f8")
    npy("causal48_f2.npy", causal(rng, 48, 4.0), "<f2")       # f16 subnormals too
    npy("causal37_f4_fortran.npy", causal(rng, 37), "<f4", fortran=True)
    npy("causal512_f8.npy", causal(rng, 512), "<f8")
    npy("causal2048_f4.npy", causal(rng, 2048, 1.5), "<f4")
    npy("sym_nonneg30_f8.npy", symmetric_nonneg(rng, 30), "<f8")
    npy("sym_signed30_f8.npy", symmetric_signed(rng, 30), "<f8")
    npy("signed50_f8.npy", signed(rng, 50, 50), "<f8")
    npy("signed20_f2.npy", signed(rng, 20, 20), "<f2")
    npy("rank1_pos24_f8.npy", rank1_pos(rng, 24, 24), "<f8")
    npy("rank1_pos16_f2.npy", rank1_pos(rng, 16, 16), "<f2")
    npy("rank3_40_f8.npy", rank_k(rng, 40, 40, 3), "<f8")
    npy("rank5_tall60x30_f8.npy", rank_k(rng, 60, 30, 5), "<f8")
    npy("tall100x7_f8.npy", signed(rng, 100, 7), "<f8")
    npy("tall50x3_f4_fortran.npy", np.abs(signed(rng, 50, 3)), "<f4", fortran=True)
    npy("wide5x80_f8.npy", stochastic(rng, 80)[:5], "<f8")
    npy("wide3x9_f2_fortran.npy", signed(rng, 3, 9), "<f2", fortran=True)
    npy("row1x6_f8.npy", signed(rng, 1, 6), "<f8")
    npy("col6x1_f8.npy", np.abs(signed(rng, 6, 1)), "<f8")
    npy("zero8_f8.npy", np.zeros((8, 8)), "<f8")
    npy("zero3x5_f4.npy", np.zeros((3, 5)), "<f4")
    npy("zero1_f8.npy", np.zeros((1, 1)), "<f8")
    npy("one1x1_f8.npy", np.array([[0.7]]), "<f8")
    npy("neg1x1_f4.npy", np.array([[-2.5]]), "<f4")
    npy("two2x2_f8.npy", np.array([[0.7, 0.3], [0.1, 0.9]]), "<f8")
    npy("two2x2_causal_f8.npy", np.array([[1.0, 0.0], [0.25, 0.75]]), "<f8")
    npy("two2x2_signed_f8.npy", np.array([[1.0, -2.0], [3.0, 0.5]]), "<f8")
    npy("perm12_f8.npy", permutation(rng, 12), "<f8")
    npy("perm7_f2.npy", permutation(rng, 7), "<f2")
    npy("eye10_f8.npy", np.eye(10), "<f8")
    npy("eye9_f4_fortran.npy", np.eye(9), "<f4", fortran=True)
    npy("uniform8_f8.npy", np.full((8, 8), 1.0 / 8), "<f8")
    npy("blockdiag_f8.npy", block_diag_stochastic(rng, [5, 7, 4]), "<f8")
    npy("blockdiag_f2.npy", block_diag_stochastic(rng, [3, 3]), "<f2")
    npy("sparse30_f8.npy", sparse_stochastic(rng, 30), "<f8")
    npy("zerorows20_f8.npy", with_zero_rows(rng, 20), "<f8")
    npy("scaled_big_f8.npy", stochastic(rng, 16) * 1e3, "<f8")
    npy("scaled_small_f8.npy", stochastic(rng, 16) * 1e-4, "<f8")
    npy("stoch24_v2_f8.npy", stochastic(rng, 24), "<f8", version=(2, 0))
    npy("stoch20_v3_f4.npy", stochastic(rng, 20), "<f4", version=(3, 0))
    # hand-written headers: keys in another order, a trailing comma in the
    # shape tuple, no trailing comma in the dict (all valid .npy)
    for name, hdr, a in (
            ("hdr_order_f8.npy",
             "{'shape': (7, 5), 'fortran_order': False, 'descr': '<f8'}",
             signed(rng, 7, 5)),
            ("hdr_comma_f8.npy",
             "{'descr':'<f8','fortran_order':False,'shape':(6,6,),}",
             causal(rng, 6))):
        raw = np.ascontiguousarray(a, dtype="<f8").tobytes()
        h = hdr.encode("latin1")
        h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + raw)
        assert np.array_equal(np.load(os.path.join(d, name)), a)
        cases.append((os.path.join(d, name), None, a.copy(), name))
    # -0.0 above the diagonal is "exactly 0": still causal; -0.0 is not < 0
    C = causal(rng, 12)
    C[np.triu_indices(12, 1)] = -0.0
    npy("causal_negzero12_f8.npy", C, "<f8")
    npy("causal_negzero10_f2.npy", C[:10, :10] / C[:10, :10].sum(axis=1, keepdims=True), "<f2")
    A = sparse_stochastic(rng, 10)
    A[A == 0] = -0.0
    npy("negzero_entries10_f8.npy", A, "<f8")
    # one tiny negative entry: the non-negative-only keys are null
    A = stochastic(rng, 10)
    A[4, 6] = -1e-300
    npy("tiny_negative10_f8.npy", A, "<f8")
    # an isolated token (row and column 0): D^-1/2 entry 0 in the Laplacian
    A = stochastic(rng, 9)
    A[3, :] = 0.0
    A[:, 3] = 0.0
    npy("isolated9_f8.npy", A, "<f8")
    # extreme magnitudes: sigma^4 over/underflows binary64 if computed naively
    npy("scaled_1e100_f8.npy", stochastic(rng, 12) * 1e100, "<f8")
    npy("scaled_1e-100_f8.npy", stochastic(rng, 12) * 1e-100, "<f8")
    npy("signed_1e150_f8.npy", signed(rng, 10, 8) * 1e150, "<f8")
    npy("signed_1e-150_f8.npy", signed(rng, 8, 10) * 1e-150, "<f8")
    # f16 extremes: largest finite and subnormal values
    A = np.abs(signed(rng, 8, 8)) * 6e4
    A[A > 65504] = 65504
    A[2] = 3e-7
    npy("f16_extremes8_f2.npy", A, "<f2")
    # causal with a zero upper triangle but signed below: causal, B-nonneg null
    S = signed(rng, 15, 15)
    S[np.triu_indices(15, 1)] = 0.0
    npy("lower_signed15_f8.npy", S, "<f8")
    # almost causal: one tiny entry above the diagonal
    C = causal(rng, 20)
    C[3, 17] = 1e-300
    npy("almost_causal20_f8.npy", C, "<f8")
    # 3-D heads and 4-D layers x heads
    npy("heads3_stoch32_f4.npy", np.stack([stochastic(rng, 32) for _ in range(3)]), "<f4")
    npy("heads4_causal24_f8_fortran.npy",
        np.stack([causal(rng, 24) for _ in range(4)]), "<f8", fortran=True)
    npy("heads2_mixed16_f2.npy",
        np.stack([causal(rng, 16), stochastic(rng, 16)]), "<f2")
    npy("layers2x3_causal20_f8.npy",
        np.stack([np.stack([causal(rng, 20) for _ in range(3)]) for _ in range(2)]), "<f8")
    npy("layers3x2_mixed12_f4_fortran.npy",
        np.stack([np.stack([stochastic(rng, 12), np.eye(12)]) for _ in range(3)]),
        "<f4", fortran=True)
    npy("layers2x2_causal512_f4.npy",
        np.stack([np.stack([causal(rng, 512) for _ in range(2)]) for _ in range(2)]), "<f4")
    npy("layers1x1_f2.npy", causal(rng, 10)[None, None], "<f2")
    npy("heads1_tall_f8.npy", signed(rng, 9, 4)[None], "<f8")

    # safetensors
    p = os.path.join(d, "attn.safetensors")
    vals = write_safetensors(p, [
        ("ids", np.arange(12).reshape(3, 4), "I64"),
        ("a_f16", causal(rng, 40, 3.0), "F16"),
        ("a_bf16", stochastic(rng, 40, 3.0), "BF16"),
        ("a_f32", np.stack([causal(rng, 30) for _ in range(2)]), "F32"),
        ("a_f64", np.stack([np.stack([stochastic(rng, 16), causal(rng, 16)])
                            for _ in range(2)]), "F64"),
        ("signed_bf16", signed(rng, 20, 20), "BF16"),
        ("tall_f16", signed(rng, 30, 6), "F16"),
        ("wide_f32", stochastic(rng, 40)[:4], "F32"),
        ("x.layers.0.attn", np.eye(5), "F64"),
    ], metadata={"format": "pt", "made_by": "check_matrix.py"})
    for name, v in vals.items():
        if name != "ids":
            cases.append((p, name, v, "attn.safetensors:%s" % name))
    p = os.path.join(d, "big.safetensors")
    vals = write_safetensors(p, [("attn", causal(rng, 512, 2.5), "BF16"),
                                 ("attn_f16", stochastic(rng, 512), "F16")])
    for name, v in vals.items():
        cases.append((p, name, v, "big.safetensors:%s" % name))
    return cases


def main():
    if len(sys.argv) < 2:
        print("usage: check_matrix.py CLI [--keep DIR]", file=sys.stderr)
        return 2
    cli = os.path.abspath(sys.argv[1])
    if not os.access(cli, os.X_OK):
        print("check_matrix: %s is not executable" % cli, file=sys.stderr)
        return 1
    keep = None
    if len(sys.argv) >= 4 and sys.argv[2] == "--keep":
        keep = sys.argv[3]
    t0 = time.time()
    rng = np.random.default_rng(SEED)
    d = tempfile.mkdtemp(prefix="ag_check_")
    try:
        cases = build_cases(d, rng)
        cli_time = 0.0
        json_by_case = {}
        for path, tensor, vals, desc in cases:
            recs = check_file(cli, path, tensor, vals, desc)
            json_by_case[desc] = recs
        scaled = check_scaled(cli, d, rng)
        check_default_and_subset(cli, os.path.join(d, "stoch64_f8.npy"), "stoch64")
        check_default_and_subset(cli, os.path.join(d, "layers2x3_causal20_f8.npy"), "l2x3")
        for desc, tensor in (("layers3x2_mixed12_f4_fortran.npy", None),
                             ("zero3x5_f4.npy", None),
                             ("attn.safetensors:a_f64", "a_f64")):
            path = os.path.join(d, desc.split(":")[0])
            if json_by_case.get(desc):
                check_csv(cli, path, tensor, json_by_case[desc])
        if keep:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(d, keep)
    finally:
        shutil.rmtree(d, ignore_errors=True)

    print()
    print("check_matrix: %d files/tensors (and %d scaled by 2^k), %d matrices compared, "
          "%d keys compared (%.0f s)" % (len(cases), scaled, STATS.matrices, STATS.keys,
                                         time.time() - t0))
    print("  max rel err: over expected values with |exp| > atol; max abs err: "
          "over |exp| <= atol (rounding noise around 0); atol = %g, times "
          "min(1, max|M|) for %s" % (ATOL, ", ".join(sorted(SCALED_KEYS))))
    print("  %-20s %12s %12s %6s  %s" % ("key", "max rel err", "max abs err",
                                         "nulls", "max rel err at"))
    for k in R.ALL_KEYS:
        print("  %-20s %12.3g %12.3g %6d  %s" % (k, STATS.maxrel[k], STATS.maxabs[k],
                                               STATS.nulls[k], STATS.where[k]))
    for label, got, want, lo, hi in STATS.banded:
        print("note: numerical_rank of %s is rounding-dependent (singular values "
              "within a factor 2 of the threshold): accepted range %d..%d, "
              "reference %d, got %d" % (label, lo, hi, want, got))
    kinds = {}
    for label, kind, got, accepted in STATS.cond_ties:
        kinds.setdefault(kind, []).append(label)
    for kind, labels in sorted(kinds.items()):
        print("note: lambda2_condition of %d matrices has a %s lambda_2 (%s): %s" % (
            len(labels), kind,
            "any candidate's condition accepted" if kind == "modulus-tie"
            else "only >= 1 checked", ", ".join(labels[:6]) + (" ..." if len(labels) > 6 else "")))
    for n in sorted(set(NOTES)):
        print("note:", n)
    if FAILS:
        print("check_matrix: FAILED, %d failure(s); inputs saved in %s"
              % (len(FAILS), MISMATCH_DIR))
        return 1
    print("check_matrix: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
