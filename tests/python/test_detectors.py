"""The token-pattern head detectors of family B (docs/metrics.md, "Head
detectors") against a numpy port of TransformerLens's head detector
(TransformerLensOrg/TransformerLens, transformer_lens/head_detector.py:
get_duplicate_token_head_detection_pattern,
get_induction_head_detection_pattern and compute_head_attention_similarity_score
with error_measure="mul" and its defaults exclude_bos=False,
exclude_current_token=False), written from their definitions.

The library's ag_token_pattern_metrics (include/attngeom/metrics.h) is
called through ctypes on its own handle of libattngeom.so (the package does
not wrap it yet): records and selections are opaque, read through
ag_record_value."""

import ctypes
import os

import numpy as np
import pytest

from conftest import ROOT

KEYS = ("duplicate_token_score", "duplicate_token_baseline", "induction_score",
        "induction_baseline")


@pytest.fixture(scope="module")
def lib():
    L = ctypes.CDLL(os.environ.get("ATTNGEOM_LIB", str(ROOT / "build" / "libattngeom.so")))
    P, PP = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    L.ag_command_families.restype, L.ag_command_families.argtypes = ctypes.c_uint, [ctypes.c_char_p]
    L.ag_metric_set_new.restype = ctypes.c_int
    L.ag_metric_set_new.argtypes = [ctypes.c_uint, ctypes.c_char_p, PP, P]
    L.ag_metric_set_free.argtypes = [P]
    L.ag_record_new.restype, L.ag_record_new.argtypes = P, []
    L.ag_record_free.argtypes = [P]
    L.ag_record_value.restype = ctypes.c_int
    L.ag_record_value.argtypes = [P, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
    L.ag_metric_from_name.restype, L.ag_metric_from_name.argtypes = ctypes.c_int, [ctypes.c_char_p]
    L.ag_token_pattern_metrics.restype = ctypes.c_int
    L.ag_token_pattern_metrics.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                           ctypes.c_int, ctypes.POINTER(ctypes.c_int32), P, P, P]
    return L


def detectors(lib, A, ids, causal=-1):
    """The four keys of A (n, n) for the token ids, None for null."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    sel = ctypes.c_void_p()
    fam = lib.ag_command_families(b"analyze")
    assert lib.ag_metric_set_new(fam, ",".join(KEYS).encode(), ctypes.byref(sel), None) == 0
    rec = lib.ag_record_new()
    try:
        status = lib.ag_token_pattern_metrics(
            A.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), A.shape[0], causal,
            ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), sel, rec, None)
        assert status == 0
        out = {}
        for key in KEYS:
            v = ctypes.c_double()
            kind = lib.ag_record_value(rec, lib.ag_metric_from_name(key.encode()), ctypes.byref(v))
            assert kind in (1, 2), (key, kind)  # AG_V_NULL, AG_V_NUMBER
            out[key] = v.value if kind == 2 else None
        return out
    finally:
        lib.ag_record_free(rec)
        lib.ag_metric_set_free(sel)


# ---- the port of TransformerLens's head detector -------------------------------

def tl_duplicate_pattern(tokens):
    """get_duplicate_token_head_detection_pattern: 1 where the query's and the
    key's tokens are equal, the diagonal cleared, the lower triangle kept."""
    t = np.asarray(tokens)
    eq = (t[:, None] == t[None, :]).astype(float)
    np.fill_diagonal(eq, 0)
    return np.tril(eq)


def tl_induction_pattern(tokens):
    """get_induction_head_detection_pattern: the duplicate pattern rolled one
    column to the right, its first column replaced by zeros, lower triangle."""
    dup = tl_duplicate_pattern(tokens)
    rolled = np.roll(dup, 1, axis=1)
    rolled[:, 0] = 0
    return np.tril(rolled)


def tl_mul_score(A, D):
    """compute_head_attention_similarity_score, error_measure="mul",
    exclude_bos=False, exclude_current_token=False: (A * D).sum() / A.sum()."""
    return float((A * D).sum() / A.sum())


def rows_of(D):
    return D.sum(axis=1) > 0


def restricted(A, D):
    """The library's score: the same "mul" measure over the rows where D has
    a 1 (docs/metrics.md)."""
    R = rows_of(D)
    return tl_mul_score(A[R], D[R])


def uniform(n, causal):
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None] if causal \
        else np.full((n, n), 1.0 / n)


def random_attention(rng, n, causal):
    logits = rng.normal(0, 2, (n, n))
    if causal:
        logits[np.triu_indices(n, 1)] = -np.inf
    A = np.exp(logits - logits.max(axis=1, keepdims=True))
    return A / A.sum(axis=1, keepdims=True)


# ---- the tests ------------------------------------------------------------------

def test_patterns_by_hand():
    """The port on ids 7 3 7 3 7 (tests/analysis/test_detectors.c, hand_5x5)."""
    dup = np.zeros((5, 5))
    ind = np.zeros((5, 5))
    for i, j in ((2, 0), (3, 1), (4, 0), (4, 2)):
        dup[i, j] = 1
        ind[i, j + 1] = 1
    assert (tl_duplicate_pattern([7, 3, 7, 3, 7]) == dup).all()
    assert (tl_induction_pattern([7, 3, 7, 3, 7]) == ind).all()
    # adjacent repeats put the induction pattern's 1 on the diagonal
    assert (tl_induction_pattern([5, 5, 5]) == [[0, 0, 0], [0, 1, 0], [0, 1, 1]]).all()


def test_hand_5x5(lib):
    A = np.array([[1, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0], [0.2, 0.7, 0.1, 0, 0],
                  [0.1, 0.2, 0.6, 0.1, 0], [0.1, 0.4, 0.1, 0.3, 0.1]])
    ids = [7, 3, 7, 3, 7]
    got = detectors(lib, A, ids)
    assert got["duplicate_token_score"] == pytest.approx(0.2, rel=1e-15)
    assert got["induction_score"] == pytest.approx(2 / 3, rel=1e-15)
    assert got["induction_baseline"] == pytest.approx(59 / 180, rel=1e-15)
    # TransformerLens divides by the mass of all 5 rows
    assert tl_mul_score(A, tl_duplicate_pattern(ids)) == pytest.approx(0.12, rel=1e-15)
    assert tl_mul_score(A, tl_induction_pattern(ids)) == pytest.approx(0.4, rel=1e-15)


@pytest.mark.parametrize("causal", [True, False])
def test_random_patterns_against_transformer_lens(lib, causal):
    """Random attention on random ids from a small vocabulary (many repeats):
    each score is TransformerLens's "mul" measure over the rows R where the
    pattern has a 1, and TransformerLens's own number (over all rows) is the
    score times the mass of R over the mass of A; each baseline is the
    restricted score of uniform attention over the allowed keys."""
    rng = np.random.default_rng(26)
    for trial in range(40):
        n = int(rng.integers(2, 40))
        ids = rng.integers(0, int(rng.integers(2, 12)), n)
        A = random_attention(rng, n, causal)
        got = detectors(lib, A, ids)
        U = uniform(n, causal)
        for name, D in (("duplicate_token", tl_duplicate_pattern(ids)),
                        ("induction", tl_induction_pattern(ids))):
            R = rows_of(D)
            if not R.any():
                assert got[name + "_score"] is None and got[name + "_baseline"] is None
                continue
            assert got[name + "_score"] == pytest.approx(restricted(A, D), rel=1e-12, abs=1e-15)
            assert got[name + "_baseline"] == pytest.approx(restricted(U, D), rel=1e-12)
            tl = tl_mul_score(A, D)
            assert got[name + "_score"] * A[R].sum() / A.sum() == pytest.approx(tl, rel=1e-12,
                                                                                abs=1e-15)
        # the two patterns reach the same rows, as often: equal baselines
        assert got["duplicate_token_baseline"] == got["induction_baseline"]


def test_repeated_random_block(lib):
    """Olsson et al.'s probe: T distinct random tokens repeated; an induction
    head (second-block row i on i - T + 1) scores 1 here and, against the
    whole matrix, T/(2T) = 1/2 in TransformerLens's normalisation."""
    rng = np.random.default_rng(4)
    for T in (1, 2, 7, 30):
        block = rng.choice(50000, T, replace=False)
        ids = np.concatenate([block, block])
        n = 2 * T
        A = uniform(n, True)
        A[T:] = 0
        A[np.arange(T, n), np.arange(T, n) - T + 1] = 1
        got = detectors(lib, A, ids)
        assert got["induction_score"] == 1.0
        assert got["duplicate_token_score"] == 0.0
        harmonic = sum(1.0 / (i + 1) for i in range(T, n))
        assert got["induction_baseline"] == pytest.approx(harmonic / T, rel=1e-15)
        assert tl_mul_score(A, tl_induction_pattern(ids)) == pytest.approx(0.5, rel=1e-15)


def test_null_cases(lib):
    A = uniform(4, True)
    assert detectors(lib, A, [1, 2, 3, 4]) == dict.fromkeys(KEYS)
