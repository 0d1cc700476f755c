"""attngeom.Model equals the CLI on the same model and text: attention as
`attngeom attention -o`, hidden states as --hidden, records as analyze and
weights write them, token ids as tokenize."""

import json

import numpy as np
import pytest

import attngeom
from conftest import ARCH, TINY_BERT, TINY_GPT2, cli_error, run_cli

TEXT = "In the beginning God created the heaven and the earth."


@pytest.fixture(scope="module")
def gpt2():
    return attngeom.Model(TINY_GPT2)


def test_config_and_tokenize(gpt2):
    assert gpt2.config["model_type"] == "gpt2" and gpt2.config["n_layer"] == 4
    p = run_cli("tokenize", TINY_GPT2, "--text", TEXT, "--format", "json", ok=False)
    cli = json.loads(p.stdout)
    assert gpt2.tokenize(TEXT) == cli["ids"]
    assert gpt2.tokens(cli["ids"]) == cli["tokens"]


@pytest.mark.parametrize("model", [TINY_GPT2, TINY_BERT])
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_attention_and_hidden_equal_cli(tmp, model, precision):
    m = attngeom.Model(model)
    run_cli("attention", model, "--text", TEXT, "--precision", precision, "-o", tmp / "a.npy",
            "--hidden", tmp / "h.npy")
    a, h = np.load(tmp / "a.npy"), np.load(tmp / "h.npy")
    got = m.attention(TEXT, precision=precision)
    assert got.dtype == np.float64 and got.shape == a.shape
    assert got.tobytes() == a.tobytes()
    assert m.hidden_states(TEXT, precision=precision).tobytes() == h.tobytes()


@pytest.mark.parametrize("arch", ["llama3", "gemma2", "gpt-neox-parallel"])
def test_attention_ids_on_arch_models(tmp, arch):
    model = ARCH / arch
    run_cli("attention", model, "--tokens", "1,5,9,2,7", "--layers", "0", "--heads", "1",
            "-o", tmp / "a.npy")
    got = attngeom.Model(model).attention([1, 5, 9, 2, 7], layers=[0], heads=1)
    assert got.tobytes() == np.load(tmp / "a.npy").tobytes()


def same_records(py, cli):
    assert [list(r) for r in py] == [list(r) for r in cli]
    for p, c in zip(py, cli):
        for k in c:
            assert type(p[k]) is type(c[k]) and p[k] == c[k], (k, p[k], c[k])


@pytest.mark.parametrize("metrics", ["spectrum,attention,geometry", "all"])
def test_analyze_equals_cli(gpt2, metrics):
    cli = run_cli("analyze", TINY_GPT2, "--text", TEXT, "--metrics", metrics, "--format", "json")
    same_records(gpt2.analyze(TEXT, metrics), cli["records"])


def test_analyze_selection_and_options(gpt2):
    cli = run_cli("analyze", TINY_GPT2, "--text", TEXT, "--layers", "1-2", "--heads", "0,3",
                  "--metrics", "stability,curvature", "--epsilon", "0.01", "--trials", "3",
                  "--seed", "7", "--edge-threshold", "0.1", "--precision", "f64",
                  "--format", "json")
    py = gpt2.analyze(gpt2.tokenize(TEXT), "stability,curvature", layers=[1, 2], heads=[3, 0],
                      epsilon=0.01, trials=3, seed=7, edge_threshold=0.1, precision="f64", jobs=2)
    same_records(py, cli["records"])
    assert gpt2.stability(TEXT, epsilon=0.01, trials=3, seed=7, layers=[1, 2], heads=[0, 3],
                          precision="f64") == [
        {k: v for k, v in r.items() if not k.startswith(("edges", "forman", "ollivier"))}
        for r in py]


def test_weights_equal_cli(gpt2):
    cli = run_cli("weights", TINY_GPT2, "--layers", "0,3", "--format", "json")
    same_records(gpt2.weights(layers=[0, 3]), cli["records"])


def test_to_pandas(gpt2):
    pd = pytest.importorskip("pandas")
    df = gpt2.analyze(TEXT, to_pandas=True)
    assert isinstance(df, pd.DataFrame) and len(df) == 16
    assert set(df["model"]) == {"tiny-gpt2"}


# ---- bad input --------------------------------------------------------------

def test_missing_folder(tmp):
    missing = str(tmp / "nope")
    with pytest.raises(attngeom.Error) as e:
        attngeom.Model(missing)
    assert str(e.value) == cli_error("weights", missing)


def test_bad_ids_and_selections(gpt2):
    with pytest.raises(attngeom.Error) as e:
        gpt2.attention([1, 2, 70000])
    msg = cli_error("attention", TINY_GPT2, "--tokens", "1,2,70000", "-o", "/dev/null")
    assert str(e.value) == msg
    with pytest.raises(attngeom.Error, match="heads: 4 is outside 0..3"):
        gpt2.attention("hi", heads=[4])
    with pytest.raises(attngeom.Error, match="text: the text gives no tokens"):
        gpt2.attention("")
    with pytest.raises(attngeom.Error, match="precision takes 'f32' or 'f64'"):
        gpt2.attention("hi", precision="f16")
    with pytest.raises(attngeom.Error, match="'weights' is not computed by this command"):
        gpt2.analyze("hi", "weights")
    with pytest.raises(attngeom.Error, match="ids: expected a sequence of non-negative"):
        gpt2.analyze([-1, 3])
