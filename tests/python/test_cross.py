"""Family M (docs/metrics.md, cross-attention) and rectangular matrices
through the Python package: the hand-made 3x4 of tests/analysis/test_cross.c,
the default selection of a rectangular array, strides, and the agreement
with `attngeom matrix` on the same array."""

import math

import numpy as np

import attngeom
from conftest import run_cli

CROSS = ["alignment_monotonicity", "alignment_kendall", "source_coverage",
         "cross_entropy_normalized"]

# a = (0, 2, 1): rho 1/2, tau 1/3; c = (.625, .875, 1.5, 0) against T/n = .75: 1/2
A = np.array([[.5, .25, .25, 0], [.125, .125, .75, 0], [0, .5, .5, 0]])


def test_three_by_four_by_hand_with_the_default_selection():
    (r,) = attngeom.matrix_metrics(A)
    assert (r["rows"], r["cols"]) == (3, 4)
    assert abs(r["alignment_monotonicity"] - 0.5) < 1e-15
    assert abs(r["alignment_kendall"] - 1 / 3) < 1e-15
    assert r["source_coverage"] == 0.5
    h = (4.75 * math.log(2) - 0.75 * math.log(3)) / (3 * math.log(4))
    assert abs(r["cross_entropy_normalized"] - h) < 1e-15
    # family B: row keys defined, the keys of a square matrix null
    assert abs(r["max_mass"] - 1.75 / 3) < 1e-15 and r["row_sum_error"] == 0
    for k in ("causal", "lambda2_abs", "asymmetry", "self_mass", "attention_distance"):
        assert r[k] is None, k


def test_square_default_leaves_cross_out_and_takes_it_on_request():
    I = np.eye(5)
    (default,) = attngeom.matrix_metrics(I)
    assert not set(CROSS) & set(default)
    (r,) = attngeom.matrix_metrics(I, metrics="cross")
    # rho: Pearson's r of the ranks, within the rounding of GSL's means
    assert abs(r["alignment_monotonicity"] - 1) < 4e-16 and r["alignment_kendall"] == 1
    assert r["source_coverage"] == 1 and r["cross_entropy_normalized"] == 0
    (rev,) = attngeom.matrix_metrics(I[::-1], metrics=CROSS)
    assert abs(rev["alignment_monotonicity"] + 1) < 1e-15 and rev["alignment_kendall"] == -1


def test_strided_heads_and_the_cli_agree(tmp_path):
    rng = np.random.default_rng(7)
    S = rng.normal(size=(2, 3, 6, 11)) * 3
    P = np.exp(S - S.max(axis=-1, keepdims=True))
    P /= P.sum(axis=-1, keepdims=True)
    got = attngeom.matrix_metrics(P[:, :, ::-1, :])  # negative row stride: no copy
    path = tmp_path / "cross.npy"
    np.save(path, np.ascontiguousarray(P[:, :, ::-1, :]))
    cli = run_cli("matrix", path, "--format", "json")["records"]
    assert len(got) == len(cli) == 6
    for g, c in zip(got, cli):
        assert (g["layer"], g["head"], g["rows"], g["cols"]) == (c["layer"], c["head"], 6, 11)
        for k in CROSS + ["sigma_max", "entropy_mean", "mean_cosine"]:
            assert g[k] == c[k], k


def test_batch_of_cross_attention_layers():
    # Hugging Face's cross_attentions: per layer [batch, H, m, n]
    rng = np.random.default_rng(3)
    layers = [rng.random((2, 3, 4, 6)) for _ in range(2)]
    layers = [x / x.sum(axis=-1, keepdims=True) for x in layers]
    rows = attngeom.matrix_metrics(layers, "cross")
    assert len(rows) == 2 * 2 * 3
    for b in range(2):
        one = attngeom.matrix_metrics(np.stack([x[b] for x in layers]), "cross")
        mine = [r for r in rows if r["batch"] == b]
        assert [{k: r[k] for k in CROSS} for r in mine] == [{k: r[k] for k in CROSS} for r in one]
