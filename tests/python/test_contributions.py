"""Model.contributions equals the CLI's `contributions` on the same model and
input: records as --format json writes them, to the last bit, and the
matrices and context mixing as `-o` and `--mixing` write them, byte for
byte; its keyword errors."""

import numpy as np
import pytest

import attngeom
from conftest import ARCH, TINY_BERT, TINY_GPT2, run_cli
from test_model import same_records

TEXT = "In the beginning God created the heaven and the earth."
IDS = [1, 5, 9, 2, 7, 11]

# (model folder, Python input, CLI input, method, rollout)
CASES = [
    (TINY_GPT2, {"text": TEXT}, ["--text", TEXT], "alti", True),
    (TINY_BERT, {"text": TEXT}, ["--text", TEXT], "norms-res", False),
    (ARCH / "gemma2", {"tokens": IDS}, ["--tokens", ",".join(map(str, IDS))], "alti", False),
]


@pytest.mark.parametrize("model,given,cli_in,method,rollout", CASES)
def test_contributions_equals_cli(tmp, model, given, cli_in, method, rollout):
    m = attngeom.Model(model)
    flags = ["--method", method] + (["--rollout"] if rollout else [])
    cli = run_cli("contributions", model, *cli_in, *flags, "--precision", "f64",
                  "-o", tmp / "C.npy", "--mixing", tmp / "M.npy", "--format", "json")
    rows, C, mix = m.contributions(method=method, rollout=rollout, precision="f64",
                                   arrays=True, **given)
    same_records(rows, cli["records"])
    assert C.tobytes() == np.load(tmp / "C.npy").tobytes()
    assert mix.tobytes() == np.load(tmp / "M.npy").tobytes()
    assert m.contributions(method=method, rollout=rollout, precision="f64", **given) == rows


# (model folder, Python input, CLI input, method, Python and CLI selections)
PER_HEAD = [
    (TINY_GPT2, {"text": TEXT}, ["--text", TEXT], "norms", {"layers": [1, 3], "heads": [0, 2]},
     ["--layers", "1,3", "--heads", "0,2"]),
    (TINY_BERT, {"text": TEXT}, ["--text", TEXT], "norms", {}, []),
    (TINY_GPT2, {"text": TEXT}, ["--text", TEXT], "flow", {"layers": [0, 2]}, ["--layers", "0,2"]),
    (ARCH / "gemma2", {"tokens": IDS}, ["--tokens", ",".join(map(str, IDS))], "flow", {}, []),
]


@pytest.mark.parametrize("model,given,cli_in,method,sel,cli_sel", PER_HEAD)
def test_norms_flow_equal_cli(tmp, model, given, cli_in, method, sel, cli_sel):
    m = attngeom.Model(model)
    cli = run_cli("contributions", model, *cli_in, "--method", method, *cli_sel,
                  "--precision", "f64", "-o", tmp / "C.npy", "--format", "json")
    rows, C, mix = m.contributions(method=method, precision="f64", arrays=True, **sel, **given)
    same_records(rows, cli["records"])
    assert mix is None and all(r["context_mixing"] is None for r in rows)
    want = np.load(tmp / "C.npy")
    assert C.shape == want.shape and C.tobytes() == want.tobytes()
    assert C.ndim == (4 if method == "norms" else 3)


def test_context_mixing_is_mean_of_mixing():
    m = attngeom.Model(TINY_GPT2)
    for method in ("alti", "norms-res"):
        rows, _, mix = m.contributions(TEXT, method=method, precision="f64", arrays=True)
        got = np.array([r["context_mixing"] for r in rows])
        assert len(got) == 4 and np.allclose(got, mix.mean(axis=1), rtol=0, atol=1e-15)


def test_contributions_errors():
    m = attngeom.Model(TINY_GPT2)
    with pytest.raises(attngeom.Error, match="method: takes 'norms', 'norms-res', 'alti' or 'flow'"):
        m.contributions(TEXT, method="bogus")
    with pytest.raises(attngeom.Error, match="heads: selects the heads of method='norms'"):
        m.contributions(TEXT, heads=[0])
    with pytest.raises(attngeom.Error, match="flow_max_tokens: limits method='flow' only"):
        m.contributions(TEXT, flow_max_tokens=8)
    with pytest.raises(attngeom.Error, match="attention flow takes at most 4"):
        m.contributions(TEXT, method="flow", flow_max_tokens=4)
    with pytest.raises(attngeom.Error, match="needs --method alti"):
        m.contributions(TEXT, method="norms-res", rollout=True)
