#!/usr/bin/python3
"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
Transformers", §3) against networkx's maximum flow.

Usage: /usr/bin/python3 tests/ref/check_flow.py path/to/attngeom

The reference builds the graph as the authors' code does (attention_flow,
attention_graph_util.py and bert_example.ipynb), written again here:

  - capacities: the head-mean attention plus the identity, each row divided
    by its sum ((Ā + I) / rowsum, the notebook's res_att_mat);
  - get_adjmat: one node per (layer, token), index l·n + k, layer 0 the
    input tokens; the node of query q at layer l has an edge down to the
    node of key k at layer l − 1 with capacity mat[l − 1][q][k]; networkx's
    from-matrix conversion keeps the non-zero entries only;
  - compute_flows: for every node u above the inputs and every input node v,
    maximum_flow_value(G, u, v) with Edmonds–Karp, then (the one step the
    paper does not define) each row divided by its sum.

Random row-stochastic attention, causal and not, dense and with exact zeros
(sparse heads), L = 1 … 4 layers of 1 … 3 heads on 2 … 7 tokens. For every
layer l the library's F_l (ag_attention_flow on the capacities of layers
0 … l, through ctypes) must equal networkx's flows from the nodes of layer
l + 1 to 1e-9, its rows divided by their sums must equal the authors'
normalised compute_flows to 1e-9, ag_rollout_mix must give the same
capacities (½ Ā + ½ I) to 1e-15, the top layer's flows must equal
networkx's default maximum_flow (preflow-push) too, and ag_run_flow_matrix
on 2 threads must give ag_attention_flow's bytes. Exits 1 on any disagreement.
"""
import ctypes
import os
import sys

import networkx as nx
import numpy as np
from networkx.algorithms.flow import edmonds_karp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom  # noqa: E402

SEED = 20200502
TOL = 1e-9
DOUBLE_P = ctypes.POINTER(ctypes.c_double)


def random_attention(rng, L, H, n, causal, sparse):
    """(L, H, n, n) row-stochastic attention; sparse: about a quarter of the
    off-diagonal entries exactly 0."""
    a = np.exp(4 * rng.random((L, H, n, n)))
    if causal:
        a *= np.tril(np.ones((n, n)))
    if sparse:
        a *= (rng.random((L, H, n, n)) > 0.25) | np.eye(n, dtype=bool)
    return a / a.sum(axis=-1, keepdims=True)


def authors_capacities(attn):
    """The notebook's res_att_mat: mean over heads, + I, rows normalised."""
    m = attn.sum(axis=1) / attn.shape[1]
    m = m + np.eye(m.shape[1])[None, ...]
    return m / m.sum(axis=-1)[..., None]


def authors_graph(mat):
    """get_adjmat + the networkx graph: edge (l·n + q) → ((l−1)·n + k) of
    capacity mat[l−1][q][k], for the non-zero entries."""
    L, n, _ = mat.shape
    G = nx.DiGraph()
    G.add_nodes_from(range((L + 1) * n))
    for l in range(1, L + 1):
        for q in range(n):
            for k in range(n):
                c = mat[l - 1][q][k]
                if c != 0:
                    G.add_edge(l * n + q, (l - 1) * n + k, capacity=float(c))
    return G


def authors_flows(mat):
    """compute_flows, by layer: raw[l][i][j] = maximum_flow_value from node
    (l + 1, i) to input node j; normalised: each row divided by its sum."""
    L, n, _ = mat.shape
    G = authors_graph(mat)
    raw = np.zeros((L, n, n))
    for l in range(L):
        for i in range(n):
            for j in range(n):
                raw[l, i, j] = nx.maximum_flow_value(G, (l + 1) * n + i, j,
                                                     flow_func=edmonds_karp)
    return raw, raw / raw.sum(axis=-1, keepdims=True)


def ptr(a):
    return a.ctypes.data_as(DOUBLE_P)


def library(lib, cap, n_layer):
    """ag_attention_flow of the first n_layer layers of cap."""
    n = cap.shape[-1]
    F = np.zeros((n, n))
    err = libattngeom.Error()
    c = np.ascontiguousarray(cap[:n_layer])
    st = lib.ag_attention_flow(ptr(c), n_layer, n, ptr(F), ctypes.byref(err))
    if st != 0:
        raise RuntimeError("ag_attention_flow: %s" % err.message.decode())
    return F


def library_threads(lib, cap, threads):
    """ag_run_flow_matrix of all of cap on `threads` threads."""
    L, n, _ = cap.shape
    F = np.zeros((n, n))
    err = libattngeom.Error()
    opt = lib.ag_run_options_new()
    lib.ag_run_options_set(opt, b"threads", float(threads), ctypes.byref(err))
    st = lib.ag_run_flow_matrix(ptr(np.ascontiguousarray(cap)), L, n, opt, None, ptr(F),
                                ctypes.byref(err))
    lib.ag_run_options_free(opt)
    if st != 0:
        raise RuntimeError("ag_run_flow_matrix: %s" % err.message.decode())
    return F


def library_mix(lib, attn_layer):
    H, n, _ = attn_layer.shape
    T = np.zeros((n, n))
    err = libattngeom.Error()
    st = lib.ag_rollout_mix(ptr(np.ascontiguousarray(attn_layer)), H, n, ptr(T), ctypes.byref(err))
    if st != 0:
        raise RuntimeError("ag_rollout_mix: %s" % err.message.decode())
    return T


def prototypes(lib):
    lib.ag_attention_flow.argtypes = [DOUBLE_P, ctypes.c_int, ctypes.c_size_t, DOUBLE_P,
                                      ctypes.c_void_p]
    lib.ag_rollout_mix.argtypes = [DOUBLE_P, ctypes.c_int, ctypes.c_size_t, DOUBLE_P,
                                   ctypes.c_void_p]
    lib.ag_run_options_new.restype = ctypes.c_void_p
    lib.ag_run_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double,
                                       ctypes.c_void_p]
    lib.ag_run_options_free.argtypes = [ctypes.c_void_p]
    lib.ag_run_flow_matrix.argtypes = [DOUBLE_P, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_void_p, DOUBLE_P, ctypes.c_void_p]


def check_case(lib, attn, label):
    """The failures of one attention array (a list of strings)."""
    fails = []
    L, H, n, _ = attn.shape
    cap = authors_capacities(attn)
    mix = np.stack([library_mix(lib, attn[l]) for l in range(L)])
    if np.max(np.abs(mix - cap)) > 1e-15:
        fails.append("%s: ag_rollout_mix differs from (A + I) / rowsum by %.3g"
                     % (label, np.max(np.abs(mix - cap))))
    raw, normalised = authors_flows(cap)
    for l in range(L):
        F = library(lib, cap, l + 1)
        d = np.max(np.abs(F - raw[l]))
        if d > TOL:
            fails.append("%s: F_%d differs from networkx by %.3g" % (label, l, d))
        d = np.max(np.abs(F / F.sum(axis=-1, keepdims=True) - normalised[l]))
        if d > TOL:
            fails.append("%s: F_%d normalised differs from compute_flows by %.3g" % (label, l, d))
    # networkx's default maximum_flow (preflow-push) on the same graph, top layer
    G, top = authors_graph(cap), library(lib, cap, L)
    for i in range(n):
        for j in range(n):
            v = nx.maximum_flow(G, L * n + i, j)[0]
            if abs(v - top[i, j]) > TOL:
                fails.append("%s: F[%d][%d] = %.17g, maximum_flow gives %.17g"
                             % (label, i, j, top[i, j], v))
    if library_threads(lib, cap, 2).tobytes() != top.tobytes():
        fails.append("%s: ag_run_flow_matrix on 2 threads differs from ag_attention_flow" % label)
    return fails


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lib = libattngeom.load(sys.argv[1], "check_flow")
    if lib is None:
        return 0
    prototypes(lib)
    rng = np.random.default_rng(SEED)
    fails, cases = [], 0
    for causal in (1, 0):
        for sparse in (0, 1):
            for _ in range(6):
                L, H, n = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(2, 8))
                label = "%s%s L=%d H=%d n=%d" % ("causal" if causal else "dense",
                                                 " sparse" if sparse else "", L, H, n)
                fails += check_case(lib, random_attention(rng, L, H, n, causal, sparse), label)
                cases += 1
    for f in fails:
        print("FAIL", f)
    print("check_flow: %d attention arrays, every layer's flows against networkx's "
          "maximum_flow_value (Edmonds-Karp) on the authors' graph: %s"
          % (cases, "%d failures" % len(fails) if fails else "all agree to %g" % TOL))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
