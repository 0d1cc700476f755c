"""Every example of docs/python.md runs: each ```python block that starts
with an import (the others are fragments of a larger program, such as the
torch one) is run on its own, from a scratch folder that sees the
repository's models/, tests/ and examples/, so "one runnable example per
entry point" stays true as the package changes."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), re.S)
RUNNABLE = [b for b in BLOCKS if b.startswith("import ")]


def test_the_examples_are_found():
    # the intro, HF inputs, images/audio, Model's methods, residual, rollout,
    # similarity, info, layer, plot: at least these ten
    assert len(RUNNABLE) >= 10, len(RUNNABLE)


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.splitlines()[1][:40] if len(b.splitlines()) > 1
                                                 else b[:40] for b in RUNNABLE])
def test_example_runs(block, tmp_path):
    for d in ("models", "tests", "examples"):
        os.symlink(ROOT / d, tmp_path / d)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    p = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
