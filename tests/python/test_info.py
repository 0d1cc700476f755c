"""attngeom.info against `attngeom info --format json`: the same object for
model folders of every input kind, a .safetensors and a .npy file, and the
CLI's error line for a path it cannot read."""

import numpy as np
import pytest

import attngeom
from conftest import ARCH, ROOT, TINY_BERT, TINY_GPT2, cli_error, run_cli

VIT = str(ROOT / "tests" / "data" / "models" / "tiny-vit")
WHISPER = str(ROOT / "tests" / "data" / "models" / "tiny-whisper")


@pytest.mark.parametrize("path", [TINY_GPT2, TINY_BERT, str(ARCH / "gemma2"), VIT, WHISPER,
                                  str(ARCH / "roberta" / "model.safetensors")])
def test_info_equals_cli(path):
    got = attngeom.info(path)
    assert got == run_cli("info", path, "--format", "json")
    assert got["path"] == path


def test_model_config_values():
    cfg = attngeom.info(TINY_GPT2)["config"]
    with attngeom.Model(TINY_GPT2) as m:
        got = (m.config["n_layer"], m.config["n_head"], m.config["d_model"])
    assert (cfg["layers"], cfg["heads"], cfg["d_model"]) == got == (4, 4, 128)
    # GPT-2 scores are scaled by 1/sqrt(head_dim)
    assert cfg["attn_scale"] == 1.0 / np.sqrt(cfg["head_dim"])


def test_npy_shape(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.zeros((2, 3, 5)))
    got = attngeom.info(str(p))
    assert got == {"path": str(p), "kind": "npy", "shape": [2, 3, 5]}
    assert got == run_cli("info", p, "--format", "json")


def test_missing_path_error(tmp_path):
    p = str(tmp_path / "nothing.safetensors")
    with pytest.raises(attngeom.Error) as e:
        attngeom.info(p)
    assert str(e.value) == cli_error("info", p)
