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
