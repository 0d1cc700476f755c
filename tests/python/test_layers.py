"""Model.residual, Model.rollout and Model.similarity equal the CLI's
`residual`, `rollout` and `similarity` on the same model and input: records
as --format json writes them, to the last bit; the rollout matrices as
`rollout -o` writes them and the distance matrix as `similarity -o`, byte
for byte."""

import numpy as np
import pytest

import attngeom
from conftest import ARCH, TINY_BERT, TINY_GPT2, run_cli
from test_model import same_records

TEXT = "In the beginning God created the heaven and the earth."
IDS = [1, 5, 9, 2, 7, 11]


def ids_arg(ids):
    return ",".join(map(str, ids))


# (model folder, Python input, CLI input)
INPUTS = [
    (TINY_GPT2, {"text": TEXT}, ["--text", TEXT]),
    (TINY_BERT, {"text": TEXT}, ["--text", TEXT]),
    (ARCH / "gemma2", {"tokens": IDS}, ["--tokens", ids_arg(IDS)]),
]


@pytest.fixture(scope="module")
def gpt2():
    return attngeom.Model(TINY_GPT2)


@pytest.mark.parametrize("model,given,cli_in", INPUTS)
def test_residual_equals_cli(model, given, cli_in):
    m = attngeom.Model(model)
    cli = run_cli("residual", model, *cli_in, "--format", "json")
    same_records(m.residual(**given), cli["records"])
    cli = run_cli("residual", model, *cli_in, "--layers", "0,2", "--precision", "f64",
                  "--metrics", "all", "--label", "X", "--format", "json")
    same_records(m.residual(metrics="all", layers=[2, 0], precision="f64", label="X", jobs=2,
                            **given), cli["records"])


@pytest.mark.parametrize("model,given,cli_in", INPUTS)
def test_rollout_equals_cli(tmp, model, given, cli_in):
    m = attngeom.Model(model)
    cli = run_cli("rollout", model, *cli_in, "-o", tmp / "R.npy", "--format", "json")
    rows, R = m.rollout(arrays=True, **given)
    same_records(rows, cli["records"])
    want = np.load(tmp / "R.npy")
    assert R.dtype == np.float64 and R.shape == want.shape
    assert R.tobytes() == want.tobytes()
    assert m.rollout(**given) == rows


def test_rollout_selection_and_options(tmp, gpt2):
    cli = run_cli("rollout", TINY_GPT2, "--text", TEXT, "--layers", "1-2", "--metrics", "all",
                  "--edge-threshold", "0.2", "-o", tmp / "R.npy", "--format", "json")
    rows, R = gpt2.rollout(TEXT, "all", layers=[2, 1], edge_threshold=0.2, jobs=3, arrays=True)
    same_records(rows, cli["records"])
    assert R.tobytes() == np.load(tmp / "R.npy").tobytes()


@pytest.mark.parametrize("model,given,cli_in", INPUTS + [
    (ARCH / "roberta", {"tokens": [0, 5, 9, 2]}, ["--tokens", "0,5,9,2"])])
def test_similarity_equals_cli(tmp, model, given, cli_in):
    m = attngeom.Model(model)
    cli = run_cli("similarity", model, *cli_in, "-o", tmp / "S.npy", "--format", "json")
    rows, S = m.similarity(**given)
    same_records(rows, cli["records"])
    want = np.load(tmp / "S.npy")
    assert S.dtype == np.float64 and S.tobytes() == want.tobytes()
    assert np.array_equal(S, S.T) and not np.diag(S).any()


def test_similarity_selection(tmp, gpt2):
    cli = run_cli("similarity", TINY_GPT2, "--text", TEXT, "--layers", "1,3", "--heads", "0,2",
                  "--precision", "f64", "-o", tmp / "S.npy", "--format", "json")
    rows, S = gpt2.similarity(TEXT, layers=[3, 1], heads=[2, 0], precision="f64", jobs=2)
    same_records(rows, cli["records"])
    assert S.shape == (4, 4) and S.tobytes() == np.load(tmp / "S.npy").tobytes()
    assert [(r["layer_a"], r["head_a"], r["layer_b"], r["head_b"]) for r in rows][:3] == [
        (1, 0, 1, 2), (1, 0, 3, 0), (1, 0, 3, 2)]


def test_to_pandas(gpt2):
    pd = pytest.importorskip("pandas")
    assert len(gpt2.residual(TEXT, to_pandas=True)) == 5
    rows, S = gpt2.similarity(TEXT, layers=[0], to_pandas=True)
    assert isinstance(rows, pd.DataFrame) and len(rows) == 6 and S.shape == (4, 4)


# ---- bad input: errors name the Python keyword ---------------------------------

@pytest.mark.parametrize("call,keyword", [
    (lambda m: m.residual(TEXT, layers=[5]), "layers: 5 is outside 0..4"),
    (lambda m: m.rollout(TEXT, layers=[4]), "layers: 4 is outside 0..3"),
    (lambda m: m.similarity(TEXT, heads=[4]), "heads: 4 is outside 0..3"),
    (lambda m: m.residual(TEXT, layers=[-1]), "layers: negative index -1"),
    (lambda m: m.residual(TEXT, "foo"), "metrics: unknown metric or family 'foo'"),
    (lambda m: m.rollout(TEXT, "stability"), "metrics: 'stability' is not computed by Model.rollout"),
    (lambda m: m.rollout(TEXT, jobs=0), "jobs: 0 is out of range"),
    (lambda m: m.rollout(TEXT, edge_threshold=2), "edge_threshold: 2 is out of range"),
    (lambda m: m.similarity(TEXT, precision="f16"), "precision takes 'f32' or 'f64'"),
    (lambda m: m.residual(), "give one input: text, tokens=, image=, audio=, pixels= or "
                             "features="),
    (lambda m: m.rollout(TEXT, tokens=[1, 2]), "give one input: text, tokens=, image=, audio=, "
                                               "pixels= or features= (got text=, tokens=)"),
    (lambda m: m.similarity(tokens=[1, 70000]), "70000"),
])
def test_errors_name_the_keyword(gpt2, call, keyword):
    with pytest.raises(attngeom.Error) as e:
        call(gpt2)
    assert keyword in str(e.value) and "--" not in str(e.value)
