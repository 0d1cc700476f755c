"""Family L (docs/metrics.md, metric axioms of d = -ln A) through the Python package:
the hand-made cases of tests/analysis/test_axioms.c."""

import math

import numpy as np

import attngeom


def test_three_by_three_by_hand():
    # d = [[.5, 1, 5], [1, .5, 1], [1, 1, .5]]: only (0, 1, 2) of the 6 ordered triples
    # violates (5 > 1 + 1); symmetry_gap = (0 + 4/6 + 0)/3; self_cost = 0.5
    d = np.array([[.5, 1, 5], [1, .5, 1], [1, 1, .5]])
    (r,) = attngeom.matrix_metrics(np.exp(-d), metrics="axioms")
    assert r["triangle_violation"] == 1 / 6
    assert abs(r["symmetry_gap"] - 2 / 9) < 1e-15
    assert abs(r["self_cost"] - 0.5) < 1e-15


def test_causal_has_no_symmetry_gap_and_default_leaves_family_out():
    n = 6
    A = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    (r,) = attngeom.matrix_metrics(A, metrics=["triangle_violation", "symmetry_gap",
                                               "self_cost"])
    assert r["triangle_violation"] == 0 and r["symmetry_gap"] is None
    assert abs(r["self_cost"] - math.lgamma(n + 1) / n) < 1e-14
    (default,) = attngeom.matrix_metrics(A)
    assert "triangle_violation" not in default
