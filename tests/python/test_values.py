"""Family H (analyze(metrics="values")) and family I (residual(metrics=
"activations"), massive_abs=, massive_ratio=) through the Python package
equal `attngeom analyze --metrics values` and `attngeom residual --metrics
activations --massive-abs A --massive-ratio R` to the last bit, on text,
grouped-query, image and audio models; the thresholds change act_massive as
its definition says; a bad threshold names its keyword."""

import pytest

import attngeom
from conftest import ARCH, ROOT, TINY_BERT, TINY_GPT2, run_cli

VIT = str(ROOT / "tests" / "data" / "models" / "tiny-vit")
WHISPER = str(ROOT / "tests" / "data" / "models" / "tiny-whisper")
KEYS = ["value_norm_mean", "value_norm_cv", "sink_value_ratio", "norm_attention_shift"]

INPUTS = [
    (TINY_GPT2, dict(text="The cat sat on the mat."), ["--text", "The cat sat on the mat."]),
    (TINY_BERT, dict(text="The cat sat."), ["--text", "The cat sat."]),
    (str(ARCH / "llama3"), dict(tokens=[1, 5, 9, 17, 2]), ["--tokens", "1,5,9,17,2"]),
    (VIT, dict(image="tests/data/images/rgb8_37x23.png"),
     ["--image", "tests/data/images/rgb8_37x23.png"]),
    (WHISPER, dict(audio="tests/data/audio/chirp_1s.wav", frames=40),
     ["--audio", "tests/data/audio/chirp_1s.wav", "--frames", "40"]),
]


@pytest.fixture(autouse=True)
def from_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the records' "input" is the path as given


def same_records(py, cli):
    assert [list(r) for r in py] == [list(r) for r in cli]
    for p, c in zip(py, cli):
        for k in c:
            assert type(p[k]) is type(c[k]) and p[k] == c[k], (k, p[k], c[k])


@pytest.mark.parametrize("model,given,cli_in", INPUTS)
def test_values_equal_cli(model, given, cli_in):
    m = attngeom.Model(model)
    given = dict(given)
    text = given.pop("text", None)  # analyze's text= is the records' line number
    rows = m.analyze(text, metrics="values,sink_mass", precision="f64", **given)
    cli = run_cli("analyze", model, *cli_in, "--metrics", "values,sink_mass", "--precision",
                  "f64", "--format", "json")
    same_records(rows, cli["records"])
    for r in rows:  # every head has a value vector of positive norm somewhere
        assert r["value_norm_mean"] > 0 and 0 <= r["norm_attention_shift"] <= 1
        assert r["sink_value_ratio"] >= 0 and r["value_norm_cv"] >= 0


@pytest.mark.parametrize("model,given,cli_in", INPUTS[:1] + INPUTS[3:])
def test_activations_equal_cli(model, given, cli_in):
    m = attngeom.Model(model)
    for a, r in ((100, 1000), (0.5, 2)):
        rows = m.residual(metrics="activations", massive_abs=a, massive_ratio=r, **given)
        cli = run_cli("residual", model, *cli_in, "--metrics", "activations", "--massive-abs",
                      str(a), "--massive-ratio", str(r), "--format", "json")
        same_records(rows, cli["records"])
        assert cli["settings"]["massive_abs"] == a and cli["settings"]["massive_ratio"] == r
        for row in rows:
            assert row["act_ratio"] == row["act_top1"] / row["act_median"]
            if a == 100:  # tiny models: no entry near 100
                assert row["act_massive"] == 0
    # with both thresholds 0 every entry counts: n x d of each state
    rows = m.residual(metrics="act_massive", massive_abs=0, massive_ratio=0, **given)
    for row in rows:
        assert row["act_massive"] == row["rows"] * row["cols"]


def test_bad_threshold_names_the_keyword():
    m = attngeom.Model(TINY_GPT2)
    with pytest.raises(attngeom.Error, match="massive_abs"):
        m.residual(text="hi", metrics="activations", massive_abs=-1)
