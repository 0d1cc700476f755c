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


def test_contributions_errors():
    m = attngeom.Model(TINY_GPT2)
    with pytest.raises(attngeom.Error, match="method: takes 'norms-res' or 'alti'"):
        m.contributions(TEXT, method="flow")
    with pytest.raises(attngeom.Error, match="needs --method alti"):
        m.contributions(TEXT, method="norms-res", rollout=True)
