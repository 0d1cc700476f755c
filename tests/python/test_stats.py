"""attngeom.aggregate and attngeom.compare equal `attngeom aggregate` and
`attngeom compare` on the same records written by the CLI."""

import json

import pytest

import attngeom
from conftest import TINY_GPT2, cli_error, run_cli

TEXTS = ["The cat sat on the mat.", "A dog ran far away from home today.", "Hello there!"]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """Records of two corpora, from the CLI (JSON files) and from Python."""
    tmp = tmp_path_factory.mktemp("stats")
    model = attngeom.Model(TINY_GPT2)
    out = {}
    for name, texts in (("a", TEXTS[:2]), ("b", TEXTS[1:])):
        path = tmp / (name + ".txt")
        path.write_text("\n".join(texts) + "\n")
        run_cli("analyze", TINY_GPT2, "--text-file", path, "--format", "json", "-o",
                tmp / (name + ".json"))
        py = [r for i, t in enumerate(texts) for r in model.analyze(t, text=i)]
        cli = json.loads((tmp / (name + ".json")).read_text())["records"]
        assert py == cli
        out[name] = (tmp / (name + ".json"), py)
    return out


def test_aggregate_equals_cli(corpora):
    path, recs = corpora["a"]
    for by in (None, "layer", ""):
        args = [] if by is None else ["--by", by]
        cli = run_cli("aggregate", path, "--format", "json", *args)["records"]
        assert attngeom.aggregate(recs, by=by) == cli


def test_aggregate_of_aggregates(corpora):
    recs = corpora["a"][1]
    by_text = [attngeom.aggregate([r for r in recs if r["text"] == t]) for t in (0, 1)]
    assert attngeom.aggregate(by_text[0] + by_text[1])[0]["sigma_max"] == \
        pytest.approx(attngeom.aggregate(recs)[0]["sigma_max"], rel=1e-15)


def test_compare_equals_cli(corpora):
    (pa, a), (pb, b) = corpora["a"], corpora["b"]
    cli = run_cli("compare", pa, pb, "--metrics", "entropy_mean,sink_mass", "--by", "layer",
                  "--permutations", "200", "--seed", "3", "--format", "json")["records"]
    assert attngeom.compare(a, b, by="layer", metrics=["entropy_mean", "sink_mass"],
                            permutations=200, seed=3) == cli
    assert attngeom.compare(a, b) == run_cli("compare", pa, pb, "--format", "json")["records"]


def test_compare_leaves_the_sizes_out(corpora):
    """rows and cols say how long a text was, not what a head did: no test of
    them by default (nor in Holm's family); asked for, they are compared."""
    a, b = corpora["a"][1], corpora["b"][1]
    assert "rows" in a[0] and "cols" in a[0]
    metrics = [r["metric"] for r in attngeom.compare(a, b)]
    assert "rows" not in metrics and "cols" not in metrics and "sigma_max" in metrics
    assert [r["metric"] for r in attngeom.compare(a, b, metrics=["rows"])] == ["rows"]


def test_pandas_in_and_out(corpora):
    pytest.importorskip("pandas")
    recs = corpora["a"][1]
    df = attngeom.aggregate(attngeom.Model(TINY_GPT2).analyze(TEXTS[0], to_pandas=True),
                            to_pandas=True)
    assert list(df["n"]) == [1] * 16
    assert attngeom.aggregate(recs, "layer", to_pandas=True)["n"].tolist() == [8] * 4


def test_bad_records(tmp_path):
    with pytest.raises(attngeom.Error, match="records: no records"):
        attngeom.aggregate([])
    with pytest.raises(attngeom.Error, match="--by 'a,,b': an empty key"):
        attngeom.aggregate([{"x": 1.0}], by="a,,b")
    with pytest.raises(attngeom.Error, match="record 2: key 'x': a value of type list"):
        attngeom.aggregate([{"x": 1.0}, {"x": [1]}])
    with pytest.raises(attngeom.Error) as e:
        attngeom.compare([{"x": 1.0}], [{"x": 2.0}], metrics="y")
    for name, rec in (("a", '[{"x": 1.0}]'), ("b", '[{"x": 2.0}]')):
        (tmp_path / name).write_text(rec)
    msg = cli_error("compare", tmp_path / "a", tmp_path / "b", "--metrics", "y")
    # the same message, naming the input ("a" here, the file there)
    assert msg == "%s: 'y' is not a numeric key of its records" % (tmp_path / "a")
    assert str(e.value) == "a: 'y' is not a numeric key of its records"


# ---- the CLI's limits, checked by the library for both ------------------------

def write_records(path, key):
    path.write_text(json.dumps({"records": [{key: 1.0}, {key: 2.0}]}))
    return path


@pytest.mark.parametrize("key,message,status", [
    ("", "an empty key", 4),                                   # AG_EFORMAT
    ("k" * 257, "a key longer than 256 bytes", 9),              # AG_ELIMIT
    ("k" * 300, "a key longer than 256 bytes", 9),
], ids=["empty", "257 bytes", "300 bytes"])
def test_record_keys_refused_as_by_the_cli(tmp_path, key, message, status):
    """What `attngeom aggregate` refuses in a file, Python refuses in a
    record, with the library's message and status, before anything of the
    record is added."""
    cli = cli_error("aggregate", write_records(tmp_path / "r.json", key))
    assert cli == "%s: record 1: %s" % (tmp_path / "r.json", message)
    for call in (lambda r: attngeom.aggregate(r), lambda r: attngeom.compare(r, r)):
        with pytest.raises(attngeom.Error) as e:
            call([{"x": 1.0, key: 2.0}])
        assert str(e.value).endswith("record 1: " + message) and e.value.status == status
    longest = "k" * 256  # the limit itself is a key
    assert attngeom.aggregate([{longest: 1.0}, {longest: 3.0}], "")[0][longest] == 2.0


def test_permutations_limit_as_the_cli(tmp_path):
    a = write_records(tmp_path / "a.json", "x")
    p = run_cli("compare", a, a, "--permutations", "100000000", ok=False)
    assert p.returncode == 2
    msg = "--permutations takes an integer from 1 to 10000000, not '100000000'"
    assert p.stderr == "attngeom compare: %s (see attngeom compare --help)\n" % msg
    recs = [{"x": 1.0}, {"x": 2.0}]
    with pytest.raises(attngeom.Error) as e:
        attngeom.compare(recs, recs, permutations=10**8)
    assert str(e.value) == msg and e.value.status == 1
    assert attngeom.compare(recs, recs, permutations=10)[0]["p_perm"] == 1.0


def test_permutations_and_seed_must_be_counts():
    recs = [{"x": 1.0}, {"x": 2.0}]
    for kw in ({"permutations": -1}, {"permutations": 2.5}, {"permutations": True}, {"seed": -3}):
        with pytest.raises(attngeom.Error) as e:
            attngeom.compare(recs, recs, **kw)
        name = next(iter(kw))
        assert str(e.value).startswith("%s=%r: " % (name, kw[name]))


# ---- units of replication, paired designs, adjustments, effect sizes ----------
# Every statistic equals a numpy/scipy/statsmodels computation over the unit
# means of a generated corpus (issue 26, items 1-3).

import math
import random

import numpy as np
from scipy import stats

multitest = pytest.importorskip("statsmodels.stats.multitest")

REL = 1e-9


def generated(model, shift, seed, texts=14, heads=3, layers=2, balanced=False):
    """Per-text, per-head records: odd texts have two records per head unless
    balanced (so unit means differ from record means), x shifted by model."""
    rng = random.Random(seed)
    recs = []
    for t in range(texts):
        base = rng.gauss(0, 0.7)  # the text's own effect: records of a text are not independent
        for layer in range(layers):
            for head in range(heads):
                for _ in range(1 if balanced or t % 2 == 0 else 2):
                    recs.append({"model": model, "layer": layer, "head": head,
                                 "text": "text %d" % t,
                                 "x": base + shift + 0.2 * head + rng.gauss(0, 0.5),
                                 "y": rng.random() + 0.1 * layer})
    return recs


def write_jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def unit_means(recs, by, unit, key):
    """{group: {unit: mean}} in first-seen order (numpy's mean per unit)."""
    groups = {}
    for r in recs:
        g = tuple(r[k] for k in by)
        u = tuple(r[k] for k in unit) if unit else (id(r),)
        groups.setdefault(g, {}).setdefault(u, []).append(r[key])
    return {g: {u: float(np.mean(v)) for u, v in us.items()} for g, us in groups.items()}


def close(got, want, what):
    assert got == pytest.approx(want, rel=REL, abs=1e-300), what


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("units")
    a, b = generated("m1", 0.0, 1), generated("m2", 0.35, 2)
    return tmp, a, b, write_jsonl(tmp / "a.jsonl", a), write_jsonl(tmp / "b.jsonl", b)


@pytest.mark.parametrize("by,unit", [(None, None), ("", None), ("layer", None),
                                     ("", "layer,head"), ("model", "layer,head"),
                                     ("layer", "head")])
def test_aggregate_over_unit_means(gen, by, unit):
    tmp, a, _, pa, _ = gen
    args = ([] if by is None else ["--by", by]) + ([] if unit is None else ["--unit", unit])
    cli = run_cli("aggregate", pa, "--format", "json", *args)["records"]
    assert attngeom.aggregate(a, by=by, unit=unit) == cli
    bykeys = ["model", "layer", "head"] if by is None else [k for k in by.split(",") if k]
    ukeys = ["text"] if unit is None else unit.split(",")
    for key in ("x", "y"):
        means = unit_means(a, bykeys, ukeys, key)
        assert len(cli) == len(means)
        for rec, (g, us) in zip(cli, means.items()):
            assert tuple(rec[k] for k in bykeys) == g
            v = np.array(list(us.values()))
            n = len(v)
            assert rec["unit"] == ",".join(ukeys) and rec["n_units"] == n and rec[key + "_n"] == n
            assert rec["n"] == sum(1 for r in a if tuple(r[k] for k in bykeys) == g)
            close(rec[key], v.mean(), key)
            close(rec[key + "_std"], v.std(ddof=1), key + "_std")
            half = stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n)
            close(rec[key + "_ci_low"], v.mean() - half, "ci_low")
            close(rec[key + "_ci_high"], v.mean() + half, "ci_high")


def check_welch(row, x, y, what):
    x, y = np.array(x), np.array(y)
    res = stats.ttest_ind(x, y, equal_var=False)
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    diff = x.mean() - y.mean()
    assert (row["n_a"], row["n_b"], row["n_units"]) == (len(x), len(y), len(x) + len(y))
    close(row["t"], res.statistic, what + " t")
    close(row["p"], res.pvalue, what + " p")
    close(row["df"], df, what + " df")
    # scipy's t.ppf (Boost) is off by up to ~1e-9 relative at fractional df
    # below 3 (mpmath: GSL's quantile is the exact one there)
    tol = REL if df >= 3 else 1e-8
    assert row["ci_low"] == pytest.approx(diff - half, rel=tol), what + " ci_low"
    assert row["ci_high"] == pytest.approx(diff + half, rel=tol), what + " ci_high"
    # Hedges' g, Hedges & Olkin (1985): J = 1 - 3/(4(na + nb) - 9), normal interval
    na, nb = len(x), len(y)
    sp = math.sqrt(((na - 1) * x.var(ddof=1) + (nb - 1) * y.var(ddof=1)) / (na + nb - 2))
    g = (1 - 3 / (4 * (na + nb) - 9)) * diff / sp
    se = math.sqrt((na + nb) / (na * nb) + g * g / (2 * (na + nb)))
    close(row["hedges_g"], g, what + " g")
    close(row["hedges_g_ci_low"], g - stats.norm.ppf(0.975) * se, what + " g low")
    close(row["hedges_g_ci_high"], g + stats.norm.ppf(0.975) * se, what + " g high")


def check_adjusted(rows, p="p", holm="p_holm", bh="q_bh"):
    ps = np.array([r[p] for r in rows])
    close(list(multitest.multipletests(ps, method="holm")[1]), [r[holm] for r in rows], holm)
    close(list(multitest.multipletests(ps, method="fdr_bh")[1]), [r[bh] for r in rows], bh)


@pytest.mark.parametrize("by,unit", [("", None), ("", "layer,head"), ("layer", None),
                                     ("head", "layer")])
def test_compare_over_unit_means(gen, by, unit):
    tmp, a, b, pa, pb = gen
    args = ["--by", by] + ([] if unit is None else ["--unit", unit])
    cli = run_cli("compare", pa, pb, "--format", "json", *args)["records"]
    assert attngeom.compare(a, b, by=by, unit=unit) == cli
    bykeys = [k for k in by.split(",") if k]
    ukeys = ["text"] if unit is None else unit.split(",")
    rows = iter(cli)
    ma = {k: unit_means(a, bykeys, ukeys, k) for k in ("x", "y")}
    mb = {k: unit_means(b, bykeys, ukeys, k) for k in ("x", "y")}
    for g in ma["x"]:
        for key in ("x", "y"):
            row = next(rows)
            assert row["metric"] == key and row["unit"] == ",".join(ukeys)
            check_welch(row, list(ma[key][g].values()), list(mb[key][g].values()), key)
    check_adjusted(cli)


def test_compare_paired(gen):
    tmp, a, b, pa, pb = gen
    for unit, by in ((None, ""), ("layer,head", ""), (None, "layer")):
        args = ["--by", by] + ([] if unit is None else ["--unit", unit])
        cli = run_cli("compare", pa, pb, "--paired", "--permutations", "300", "--seed", "4",
                      "--format", "json", *args)["records"]
        assert attngeom.compare(a, b, by=by, unit=unit, paired=True, permutations=300,
                                seed=4) == cli
        bykeys = [k for k in by.split(",") if k]
        ukeys = ["text"] if unit is None else unit.split(",")
        rows = iter(cli)
        ma = {k: unit_means(a, bykeys, ukeys, k) for k in ("x", "y")}
        mb = {k: unit_means(b, bykeys, ukeys, k) for k in ("x", "y")}
        for g in ma["x"]:
            for key in ("x", "y"):
                row = next(rows)
                us = list(ma[key][g])
                x = np.array([ma[key][g][u] for u in us])
                y = np.array([mb[key][g][u] for u in us])
                res = stats.ttest_rel(x, y)
                d = x - y
                half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
                assert row["n_units"] == len(d) and row["df"] == len(d) - 1
                close(row["t"], res.statistic, "paired t")
                close(row["p"], res.pvalue, "paired p")
                close(row["diff"], d.mean(), "diff")
                close(row["ci_low"], d.mean() - half, "ci_low")
                close(row["ci_high"], d.mean() + half, "ci_high")
                close(row["p_wilcoxon"], stats.wilcoxon(x, y).pvalue, "wilcoxon")
                close(row["dz"], d.mean() / d.std(ddof=1), "dz")
                assert 0 < row["p_perm"] <= 1
        check_adjusted(cli)
        check_adjusted(cli, "p_perm", "p_perm_holm", "q_perm_bh")


@pytest.mark.filterwarnings("ignore:Exact p-value calculation")
def test_wilcoxon_approximation_and_ties():
    """n > 50 (normal approximation) and differences with zeros and ties."""
    rng = random.Random(5)
    a = [{"text": i, "x": rng.gauss(0.2, 1)} for i in range(70)]
    b = [{"text": i, "x": r["x"] - rng.choice([0.0, 0.5, -0.25, 1.0])} for i, r in enumerate(a)]
    row = attngeom.compare(a, b, paired=True)[0]
    x, y = np.array([r["x"] for r in a]), np.array([r["x"] for r in b])
    close(row["p_wilcoxon"], stats.wilcoxon(x, y).pvalue, "ties and zeros")
    small = attngeom.compare(a[:20], [dict(r, x=r["x"] + 0.1 * (i % 3)) for i, r in
                                      enumerate(a[:20])], paired=True)[0]
    x = np.array([r["x"] for r in a[:20]])
    close(small["p_wilcoxon"], stats.wilcoxon(x, x + 0.1 * (np.arange(20) % 3)).pvalue, "small")


def test_paired_unmatched_unit_named(gen, tmp_path):
    tmp, a, b, pa, pb = gen
    pc = write_jsonl(tmp_path / "c.jsonl", [r for r in b if r["text"] != "text 3"])
    msg = cli_error("compare", pa, pc, "--paired")
    assert msg == "compare --paired: the unit text='text 3' of %s has no match in %s" % (pa, pc)
    with pytest.raises(attngeom.Error, match="the unit text='text 3' of a has no match in b"):
        attngeom.compare(a, [r for r in b if r["text"] != "text 3"], paired=True)
    msg = cli_error("compare", write_jsonl(tmp_path / "w.jsonl", [{"x": 1.0}, {"x": 2.0}]),
                    write_jsonl(tmp_path / "v.jsonl", [{"x": 1.5}, {"x": 2.0}]), "--paired")
    assert "no unit to match" in msg and "--unit" in msg


def test_compare_of_aggregates_is_the_unit_level_test(tmp_path):
    """Per-head --aggregate outputs compared pooled: each head is one unit,
    the same test as the raw records with --unit layer,head, permutations
    included (the aggregated records carry the head means)."""
    a, b = generated("m1", 0.0, 7, balanced=True), generated("m2", 0.3, 8, balanced=True)
    pa, pb = write_jsonl(tmp_path / "a.jsonl", a), write_jsonl(tmp_path / "b.jsonl", b)
    for name, p in (("aa", pa), ("ab", pb)):
        p2 = tmp_path / (name + ".json")
        run_cli("aggregate", p, "--format", "json", "-o", p2)
    opts = ["--permutations", "500", "--seed", "2", "--format", "json"]
    agg = run_cli("compare", tmp_path / "aa.json", tmp_path / "ab.json", *opts)["records"]
    raw = run_cli("compare", pa, pb, "--unit", "layer,head", *opts)["records"]
    assert [r["unit"] for r in agg] == ["record", "record"]
    for ra, rr in zip(agg, raw):
        assert ra["n_a"] == rr["n_a"] == 6 and ra["metric"] == rr["metric"]
        for k in ("mean_a", "mean_b", "t", "df", "p", "ci_low", "ci_high", "hedges_g"):
            close(ra[k], rr[k], k)
        assert ra["p_perm"] == rr["p_perm"]


def test_shards_aggregate_again_by_units(gen, tmp_path):
    """Aggregates of a corpus split by text combine exactly (their units are
    disjoint): the same as the aggregate of the whole."""
    tmp, a, _, pa, _ = gen
    half = {r["text"] for r in a[: len(a) // 2]}
    s1 = write_jsonl(tmp_path / "s1.jsonl", [r for r in a if r["text"] in half])
    s2 = write_jsonl(tmp_path / "s2.jsonl", [r for r in a if r["text"] not in half])
    for s in (s1, s2):
        run_cli("aggregate", s, "--format", "json", "-o", str(s) + ".agg.json")
    again = run_cli("aggregate", str(s1) + ".agg.json", str(s2) + ".agg.json",
                    "--format", "json")["records"]
    whole = run_cli("aggregate", pa, "--format", "json")["records"]
    for x, y in zip(again, whole):
        assert x["n"] == y["n"] and x["n_units"] == y["n_units"] and x["unit"] == "text"
        for k in ("x", "x_std", "x_ci_low", "y_ci_high"):
            close(x[k], y[k], k)
    msg = cli_error("compare", str(s1) + ".agg.json", str(s2) + ".agg.json", "--by",
                    "model,layer,head", "--permutations", "10")
    assert "known by their moments only" in msg


def test_bootstrap_deterministic_at_any_jobs(gen):
    tmp, a, _, pa, _ = gen
    outs = [run_cli("aggregate", pa, "--bootstrap", "2000", "--seed", "9", "-j", j,
                    "--format", "json")["records"] for j in ("1", "2")]
    assert outs[0] == outs[1]
    assert attngeom.aggregate(a, bootstrap=2000, seed=9) == outs[0]
    for rec in outs[0]:
        for k in ("x", "y"):
            assert rec[k + "_pct_low"] < rec[k] < rec[k + "_pct_high"]
            assert rec[k + "_bca_low"] < rec[k] < rec[k + "_bca_high"]
    other = run_cli("aggregate", pa, "--bootstrap", "2000", "--seed", "10",
                    "--format", "json")["records"]
    assert other[0]["x_pct_low"] != outs[0][0]["x_pct_low"]
    # the percentile interval is close to scipy's for the same units (Monte Carlo: loose)
    v = np.array(list(unit_means(a, ["model", "layer", "head"], ["text"], "x")[("m1", 0, 0)].values()))
    ref = stats.bootstrap((v,), np.mean, n_resamples=20000, method="percentile",
                          random_state=1).confidence_interval
    assert outs[0][0]["x_pct_low"] == pytest.approx(ref.low, abs=0.05)
    assert outs[0][0]["x_pct_high"] == pytest.approx(ref.high, abs=0.05)
    bca = stats.bootstrap((v,), np.mean, n_resamples=20000, method="BCa",
                          random_state=1).confidence_interval
    assert outs[0][0]["x_bca_low"] == pytest.approx(bca.low, abs=0.05)
    assert outs[0][0]["x_bca_high"] == pytest.approx(bca.high, abs=0.05)


def test_by_text_makes_records_the_units(gen):
    """--by text keeps the inputs apart: one input per group, its records
    (heads) are the units."""
    tmp, a, _, pa, _ = gen
    cli = run_cli("aggregate", pa, "--by", "text", "--format", "json")["records"]
    assert attngeom.aggregate(a, by="text") == cli
    for rec in cli:
        vals = np.array([r["x"] for r in a if r["text"] == rec["text"]])
        assert rec["unit"] == "record" and rec["n_units"] == rec["n"] == len(vals)
        close(rec["x"], vals.mean(), "x")
        close(rec["x_std"], vals.std(ddof=1), "x_std")
