"""Softmax as a lens (issue 28): `matrix --scores S.npy --normalizer N`
and `analyze --normalizer N / --temperature T` measure the probabilities
the normaliser gives on the scores of `attention --scores`; checked
against the normalisers written here in numpy (Martins & Astudillo 2016,
Algorithm 1; softmax(S/T)) and against `matrix` on those probabilities."""
import numpy as np
import pytest

from conftest import ARCH, run_cli

IDS = "1,5,9,2,7,3,11,4,6"
KEYS = ["entropy_mean", "effective_rank", "sink_mass", "self_mass", "asymmetry"]


def sparsemax(s):
    """Algorithm 1 on each row over its allowed (finite) keys."""
    out = np.zeros_like(s)
    for idx in np.ndindex(*s.shape[:-1]):
        row = s[idx]
        ok = np.isfinite(row)
        z = np.sort(row[ok])[::-1]
        k = np.arange(1, len(z) + 1)
        cum = np.cumsum(z)
        kz = k[1 + k * z > cum].max()
        tau = (cum[kz - 1] - 1) / kz
        out[idx][ok] = np.maximum(row[ok] - tau, 0)
    return out


def softmax(s, T):
    e = np.exp((s - s.max(axis=-1, keepdims=True)) / T)
    return e / e.sum(axis=-1, keepdims=True)


def records(cmd, *args):
    recs = run_cli(cmd, *args, "--format", "json")["records"]
    return {(r["layer"], r["head"]): r for r in recs}


@pytest.fixture
def scores(tmp):
    model = ARCH / "qwen2-window"  # causal, a sliding window on layer 1
    run_cli("attention", model, "--tokens", IDS, "--precision", "f64", "-o", tmp / "a.npy",
            "--scores", tmp / "s.npy")
    return model, np.load(tmp / "s.npy")


@pytest.mark.parametrize("normalizer,T", [("sparsemax", None), ("softmax", 0.25),
                                          ("softmax", 4.0)])
def test_lens_equals_matrix_of_the_normalised_scores(tmp, scores, normalizer, T):
    model, S = scores
    P = sparsemax(S) if normalizer == "sparsemax" else softmax(S, T)
    np.save(tmp / "p.npy", P)
    want = records("matrix", tmp / "p.npy")
    extra = ["--normalizer", normalizer] + (["--temperature", T] if T else [])
    got_m = records("matrix", "--scores", tmp / "s.npy", *extra)
    got_a = records("analyze", model, "--tokens", IDS, "--precision", "f64", *extra)
    assert set(got_m) == set(want) == set(got_a)
    for key in want:
        for got in (got_m, got_a):
            assert got[key]["normalizer"] == normalizer
            assert got[key]["temperature"] == (T or 1)
            for k in KEYS:
                w, g = want[key][k], got[key][k]
                assert (w is None and g is None) or abs(g - w) <= 1e-12 * max(1, abs(w)), (key, k)


def test_softmax_lens_at_t1_is_the_model(tmp, scores):
    """The scores through softmax at T = 1 are the model's own heads."""
    model, _ = scores
    want = records("analyze", model, "--tokens", IDS, "--precision", "f64")
    got = records("matrix", "--scores", tmp / "s.npy")
    for key in want:
        for k in KEYS:
            assert got[key][k] == pytest.approx(want[key][k], abs=1e-13), (key, k)


def test_sparsemax_is_sparser(tmp, scores):
    """Sparsemax zeroes keys softmax keeps: entropy falls on every head."""
    model, _ = scores
    soft = records("matrix", "--scores", tmp / "s.npy")
    sparse = records("matrix", "--scores", tmp / "s.npy", "--normalizer", "sparsemax")
    assert all(sparse[k]["entropy_mean"] < soft[k]["entropy_mean"] for k in soft)


def test_lens_usage_errors(tmp, scores):
    model, _ = scores
    for args, text in ((["matrix", tmp / "a.npy", "--normalizer", "sparsemax"], "need --scores"),
                       (["matrix", "--scores", tmp / "s.npy", "--normalizer", "softmin"],
                        "unknown normalizer 'softmin'"),
                       (["matrix", "--scores", tmp / "s.npy", "--normalizer", "entmax:3"],
                        "(1, 2]"),
                       (["matrix", "--scores", tmp / "s.npy", "--normalizer", "sparsemax",
                         "--temperature", "2"], "softmax only"),
                       (["analyze", model, "--tokens", IDS, "--temperature", "0"], "> 0")):
        p = run_cli(*args, ok=False)
        assert p.returncode == 2 and text in p.stderr, (args, p.stderr)


@pytest.mark.parametrize("normalizer,T", [("entmax15", None), ("linear", None),
                                          (None, 0.5)])
def test_python_analyze_equals_cli(scores, normalizer, T):
    """Model.analyze(normalizer=..., temperature=...) gives the CLI's records,
    "normalizer" and "temperature" included."""
    import attngeom
    model, _ = scores
    extra = (["--normalizer", normalizer] if normalizer else []) + \
        (["--temperature", T] if T else [])
    cli = run_cli("analyze", model, "--tokens", IDS, "--precision", "f64", *extra,
                  "--format", "json")["records"]
    py = attngeom.Model(model).analyze([int(i) for i in IDS.split(",")], precision="f64",
                                       normalizer=normalizer, temperature=T)
    assert len(py) == len(cli)
    for p, c in zip(py, cli):
        assert p["normalizer"] == c["normalizer"] and p["temperature"] == c["temperature"]
        for k in KEYS:
            assert p[k] == c[k], k


def test_attention_normalizer_writes_the_lens(tmp, scores):
    """attention --normalizer sparsemax -o P.npy writes sparsemax of the
    same pass's scores (--scores stays the model's), --temperature T softmax(S/T)."""
    model, S = scores
    run_cli("attention", model, "--tokens", IDS, "--precision", "f64", "-o", tmp / "p.npy",
            "--scores", tmp / "s2.npy", "--normalizer", "sparsemax")
    assert np.load(tmp / "s2.npy").tobytes() == S.tobytes()
    assert np.max(np.abs(np.load(tmp / "p.npy") - sparsemax(S))) <= 1e-15
    run_cli("attention", model, "--tokens", IDS, "--precision", "f64", "-o", tmp / "t.npy",
            "--temperature", 2)
    assert np.max(np.abs(np.load(tmp / "t.npy") - softmax(S, 2.0))) <= 1e-15


def test_rollout_normalizer_composes_the_lens(tmp, scores):
    """rollout --normalizer sparsemax -o R.npy is Abnar & Zuidema's rollout
    (docs/metrics.md, family G) of the sparsemax heads: Ā_l the head mean,
    R_0 = ½Ā_0 + ½I, R_l = (½Ā_l + ½I) R_{l−1}."""
    model, S = scores
    run_cli("rollout", model, "--tokens", IDS, "--precision", "f64", "-o", tmp / "r.npy",
            "--normalizer", "sparsemax", "--format", "json")
    P = sparsemax(S)
    eye = np.eye(P.shape[-1])
    R, want = eye, []
    for layer in P:
        R = (0.5 * layer.mean(axis=0) + 0.5 * eye) @ R
        want.append(R)
    assert np.max(np.abs(np.load(tmp / "r.npy") - np.stack(want))) <= 1e-14
    recs = run_cli("rollout", model, "--tokens", IDS, "--normalizer", "sparsemax",
                   "--format", "json")["records"]
    assert {r["normalizer"] for r in recs} == {"sparsemax"}


def test_python_normalize(scores):
    """attngeom.normalize is the numpy forms above on the same scores, and
    refuses what the library refuses."""
    import attngeom
    _, S = scores
    assert np.max(np.abs(attngeom.normalize(S, "sparsemax") - sparsemax(S))) <= 1e-15
    assert np.max(np.abs(attngeom.normalize(S, temperature=0.5) - softmax(S, 0.5))) <= 1e-15
    with pytest.raises(attngeom.Error, match="unknown normalizer"):
        attngeom.normalize(S, "softmin")
    with pytest.raises(attngeom.Error, match="masked"):
        attngeom.normalize(np.full((2, 3), -np.inf), "entmax15")


def js_distance(p, q):
    """Mean over rows of sqrt(JS divergence), natural log (Clark et al. 2019,
    §6), in long double as tests/ref/check_similarity.py: near-equal rows
    have a JSD at rounding level, whose square root double cannot give to
    1e-12."""
    p, q = p.astype(np.longdouble), q.astype(np.longdouble)

    def kl(a, m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log(a / m), 0).sum(axis=-1)
    m = (p + q) / 2
    return np.sqrt(np.maximum(0.5 * kl(p, m) + 0.5 * kl(q, m), 0)).mean()


def test_similarity_normalizer_compares_the_lens(scores):
    """similarity --normalizer sparsemax: the JS distance of the sparsemax
    heads, which share fewer keys than the softmax ones."""
    model, S = scores
    recs = run_cli("similarity", model, "--tokens", IDS, "--precision", "f64",
                   "--normalizer", "sparsemax", "--format", "json")["records"]
    P = sparsemax(S)
    assert len(recs) == (P.shape[0] * P.shape[1]) * (P.shape[0] * P.shape[1] - 1) // 2
    for r in recs:
        want = js_distance(P[r["layer_a"], r["head_a"]], P[r["layer_b"], r["head_b"]])
        assert abs(r["js_distance"] - want) <= 1e-12 and r["normalizer"] == "sparsemax"


def test_python_temperatures_equals_cli(scores):
    """Model.analyze(temperatures=[...]) gives `analyze --temperatures`'s
    records in its order, each with its own "temperature", and each T's
    records are those of temperature=T alone; the refusals of the CLI."""
    import attngeom
    model, _ = scores
    ids = [int(i) for i in IDS.split(",")]
    cli = run_cli("analyze", model, "--tokens", IDS, "--precision", "f64",
                  "--temperatures", "2,0.5", "--format", "json")["records"]
    m = attngeom.Model(model)
    py = m.analyze(ids, precision="f64", temperatures=[2, 0.5])
    assert len(py) == len(cli) and len(py) % 2 == 0
    half = len(py) // 2
    for i, (p, c) in enumerate(zip(py, cli)):
        assert p["normalizer"] == c["normalizer"] == "softmax"
        assert p["temperature"] == c["temperature"] == (2.0 if i < half else 0.5)
        for k in KEYS:
            assert p[k] == c[k], k
    one = m.analyze(ids, precision="f64", temperature=0.5)
    assert [r["entropy_mean"] for r in py[half:]] == [r["entropy_mean"] for r in one]
    for kw, text in ((dict(temperatures=[1, 2], temperature=2), "give one of them"),
                     (dict(temperatures=[1, 2], normalizer="sparsemax"), "normalizer=.softmax. only"),
                     (dict(temperatures=[1, 1]), "twice"),
                     (dict(temperatures=[1, 0]), "> 0"),
                     (dict(temperatures=list(range(1, 66))), "at most 64")):
        with pytest.raises(attngeom.Error, match=text):
            m.analyze(ids, **kw)


LENS = ["score_std", "sparsemax_support", "entmax_support", "sparsemax_js",
        "score_effective_rank", "score_numerical_rank", "rank_lift", "score_asymmetry"]


def test_python_analyze_lens_family(scores):
    """Model.analyze(metrics="lens") (family K, issue 28 item 3) gives the
    CLI's records, and its row keys are those of the exported scores:
    score_std the population std of each row's finite scores, the sparsemax
    support the share of sparsemax's non-zero keys (numpy, Algorithm 1),
    rank_lift effective_rank / score_effective_rank of the same record."""
    import attngeom
    model, S = scores
    ids = [int(i) for i in IDS.split(",")]
    cli = run_cli("analyze", model, "--tokens", IDS, "--precision", "f64", "--metrics",
                  "lens,effective_rank", "--format", "json")["records"]
    py = attngeom.Model(model).analyze(ids, "lens,effective_rank", precision="f64")
    assert len(py) == len(cli) == S.shape[0] * S.shape[1]
    P = sparsemax(S)
    for p, c in zip(py, cli):
        assert [p[k] for k in LENS] == [c[k] for k in LENS]
        s, q = S[p["layer"], p["head"]], P[p["layer"], p["head"]]
        ok = np.isfinite(s)
        std = np.mean([row[m].std() for row, m in zip(s, ok)])
        sup = np.mean([np.count_nonzero(r[m] > 0) / m.sum() for r, m in zip(q, ok)])
        assert abs(p["score_std"] - std) <= 1e-12 * max(1, std)
        assert abs(p["sparsemax_support"] - sup) <= 1e-12
        assert abs(p["rank_lift"] - p["effective_rank"] / p["score_effective_rank"]) <= 1e-12
        assert 0 <= p["sparsemax_js"] <= np.sqrt(np.log(2)) and 0 < p["score_asymmetry"] <= 1
    # the family is not analyze's default
    assert "score_std" not in attngeom.Model(model).analyze(ids, precision="f64")[0]


def test_lens_family_under_a_normalizer(scores):
    """Under --normalizer the scores stay the model's (every key of K but
    rank_lift unchanged) and rank_lift is effective_rank of the lensed A."""
    model, _ = scores
    base = records("analyze", model, "--tokens", IDS, "--precision", "f64", "--metrics",
                   "lens,effective_rank")
    lens = records("analyze", model, "--tokens", IDS, "--precision", "f64", "--metrics",
                   "lens,effective_rank", "--normalizer", "sparsemax")
    assert base.keys() == lens.keys()
    for key, b in base.items():
        r = lens[key]
        assert [r[k] for k in LENS if k != "rank_lift"] == [b[k] for k in LENS if k != "rank_lift"]
        assert abs(r["rank_lift"] - r["effective_rank"] / r["score_effective_rank"]) <= 1e-12
        assert r["effective_rank"] != b["effective_rank"]
