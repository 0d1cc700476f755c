#!/usr/bin/python3
"""The numpy/scipy peer of `attngeom matrix` (default metrics) for make bench.

Usage: /usr/bin/python3 bench/peer_matrix.py IN.npy OUT.json

Reads an [L, H, n, n] float64 .npy and writes, per head in (layer, head)
order, the 27 default keys (families A, B, C, lambda2_condition and the
detectors prev_token_ratio and self_ratio,
docs/metrics.md) as a JSON list of {"layer", "head", key: value}. The values
come from tests/ref/reference.py, the straightforward implementation of the
definitions that the reference checks trust: numpy's SVD for family A and
pc1_share, scipy's eigvalsh for fiedler, and one scipy.linalg.eig with left
and right vectors per head for lambda2_condition, whose eigenvalues also
serve lambda2_abs and spectral_gap (a causal head's are its diagonal,
docs/metrics.md) -- nothing computed twice, as a straightforward numpy user
would write it. bench/peers.py times this whole process against attngeom's
and compares the values.
"""
import json
import os
import sys

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "ref"))
import reference as R  # noqa: E402


def head_metrics(layer, head, A):
    eig = scipy.linalg.eig(A, left=True, right=True)
    rec = {"layer": layer, "head": head}
    rec.update(R.spectrum(A))
    rec.update(R.attention(A, lam=eig[0]))
    rec.update(R.geometry(A))
    rec["lambda2_condition"] = R.lambda2_condition_info(A, eig)[0]
    return rec


def main():
    if len(sys.argv) != 3:
        print("usage: peer_matrix.py IN.npy OUT.json", file=sys.stderr)
        return 2
    a = np.load(sys.argv[1])
    records = []
    for layer in range(a.shape[0]):
        for head in range(a.shape[1]):
            records.append(head_metrics(layer, head, a[layer, head]))
    with open(sys.argv[2], "w") as f:
        json.dump(records, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
