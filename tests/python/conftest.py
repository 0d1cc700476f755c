"""Shared pieces of the Python package's tests: the package from the source
tree (python/), the CLI beside it (ATTNGEOM_CLI, default build/attngeom),
and running it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
CLI = os.environ.get("ATTNGEOM_CLI", str(ROOT / "build" / "attngeom"))
TINY_GPT2 = str(ROOT / "models" / "tiny-gpt2")
TINY_BERT = str(ROOT / "tests" / "data" / "models" / "tiny-bert")
ARCH = ROOT / "tests" / "data" / "models" / "arch"


def run_cli(*args, ok=True):
    """Run the CLI; its parsed --format json output (ok) or the completed process."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if not ok:
        return p
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout) if p.stdout.strip() else None


def cli_error(*args):
    """The CLI's one stderr line without its "attngeom: " prefix."""
    p = run_cli(*args, ok=False)
    assert p.returncode == 1, (p.returncode, p.stderr)
    line = p.stderr.strip()
    assert "\n" not in line and line.startswith("attngeom: ")
    return line[len("attngeom: "):]


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
