#!/bin/sh
# tests/cli/contributions.sh CLI — end-to-end checks of `attngeom
# contributions` (docs/metrics.md, "Contributions") on models/tiny-gpt2 and
# tiny-bert: -o C.npy's ALTI rows sum to 1 and are causal, --mixing is
# 1 − C_ii (alti) or Kobayashi's ratio in [0, 1] (norms-res), --rollout's R_l
# is C_l R_(l-1) of the layers' C, --layers picks those layers, the records
# are `matrix`'s on the same matrices; the usage errors: exit 2, one stderr
# line, no file left behind. (The values themselves are checked against the
# authors' code by tests/ref/check_alti.py.) Run from the repository root.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"
BERT=$ROOT/tests/data/models/tiny-bert
IDS=464,2068,7586,21831,11687,625

runj c.json contributions "$GPT2" --tokens $IDS --precision f64 -o "$T/C.npy" --mixing "$T/M.npy" --format json
runj r.json contributions "$GPT2" --tokens $IDS --precision f64 --rollout -o "$T/R.npy" --format json
runj sub.json contributions "$GPT2" --tokens $IDS --precision f64 --layers 1,3 -o "$T/C13.npy" --format json
runj m.json matrix "$T/C.npy" --format json
runj n.json contributions "$BERT" --tokens 2,50,60,70,3 --precision f64 --method norms-res -o "$T/N.npy" --mixing "$T/K.npy" --format json
PYSCRIPT='
C, M, R, C13 = (np.load(a[k]) for k in range(4))
L, n, _ = C.shape
assert (L, n) == (4, 6) and M.shape == (4, 6) and R.shape == C.shape, (C.shape, M.shape, R.shape)
assert np.all(C >= 0) and np.allclose(C.sum(axis=2), 1, atol=1e-12), C.sum(axis=2)
assert np.all(np.triu(C, 1) == 0), "C of a causal model is lower-triangular"
assert np.array_equal(M, 1 - np.einsum("lii->li", C)), "--mixing is 1 - C_ii"
want = [C[0]]
for l in range(1, L):
    want.append(C[l] @ want[-1])
assert np.allclose(R, np.array(want), atol=1e-14, rtol=0), np.abs(R - np.array(want)).max()
assert np.array_equal(C13, C[[1, 3]]), "--layers 1,3"
c, r, s, m = (records(a[k]) for k in range(4, 8))
assert [x["layer"] for x in c] == [0, 1, 2, 3] and all(x["head"] == -1 for x in c), c
assert [x["layer"] for x in s] == [1, 3], s
assert all(x["rows"] == n and x["cols"] == n for x in c + r)
for x, y in zip(c, m):
    for k in ("sigma_max", "entropy_mean", "effective_rank", "mean_cosine"):
        assert x[k] == y[k] or abs(x[k] - y[k]) <= 1e-12 * max(1, abs(y[k])), (k, x[k], y[k])
N, K = np.load(a[8]), np.load(a[9])
assert N.shape == (4, 5, 5) and K.shape == (4, 5), (N.shape, K.shape)
assert np.all(N > 0) and np.all((K >= 0) & (K <= 1)), "norms positive (bidirectional), ratio in [0, 1]"
'
pycheck "alti -o/--mixing/--rollout/--layers, norms-res, records = matrix's" \
    "$T/C.npy" "$T/M.npy" "$T/R.npy" "$T/C13.npy" "$T/c.json" "$T/r.json" "$T/sub.json" "$T/m.json" \
    "$T/N.npy" "$T/K.npy"

# ---- --method norms and flow -------------------------------------------------
# Two synthetic one-head GPT-2 models (d = 16, 2 layers, no MLP: its weights
# 0): token k's embedding is row k of the 16x16 Sylvester-Hadamard matrix
# (entries +-1, zero mean for k >= 1, rows orthogonal), no position
# embedding, so ln_1 (gamma g, beta 0) gives x_j = g e_j / sqrt(1 + eps).
# W_V = W_O = I: f(x_j) = x_j. "unit" has g = 1/4 (exact in float32) and
# eps = 1e-12:
# |f(x_j)| = 1/sqrt(1 + 1e-12) in layer 0, so N = A / sqrt(1 + eps) there
# (in layer 1, 1/sqrt(1 + eps/var) of its input's variance), and N = A to
# 1e-12 (Kobayashi et al. 2020, section 3). "ident" has g = 1 and W_Q = W_K = 30 I:
# the scores are 900 x_i.x_j / sqrt(16), 0 between distinct tokens and
# ~3600 on the diagonal, so exp underflows off it and A = I exactly in both
# layers (the residual 2 x keeps the rows orthogonal); the capacities
# (A + I)/2 are I, and every flow F_l = I (Abnar & Zuidema 2020, section 3).
"$PY" - "$T" <<'EOF'
import json, os, struct, sys
import numpy as np
t = sys.argv[1]
d, V, P = 16, 16, 16
H = np.array([[1.0]])
while H.shape[0] < d:
    H = np.block([[H, H], [H, -H]])
def write_st(path, tensors):
    header, blob = {}, b""
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [len(blob), len(blob) + a.nbytes]}
        blob += a.tobytes()
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)
for name, g, s, eps in (("unit", 0.25, 1.0, 1e-12), ("ident", 1.0, 30.0, 1e-5)):
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2,
           "n_head": 1, "n_embd": d, "n_positions": P, "vocab_size": V, "n_inner": None,
           "layer_norm_epsilon": eps, "activation_function": "gelu_new"}
    w = {"wte.weight": H, "wpe.weight": np.zeros((P, d)),
         "ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d)}
    for l in range(2):
        p = "h.%d." % l
        w.update({p + "ln_1.weight": np.full(d, g), p + "ln_1.bias": np.zeros(d),
                  p + "attn.c_attn.weight": np.hstack([s * np.eye(d), s * np.eye(d), np.eye(d)]),
                  p + "attn.c_attn.bias": np.zeros(3 * d),
                  p + "attn.c_proj.weight": np.eye(d), p + "attn.c_proj.bias": np.zeros(d),
                  p + "ln_2.weight": np.ones(d), p + "ln_2.bias": np.zeros(d),
                  p + "mlp.c_fc.weight": np.zeros((d, 4 * d)), p + "mlp.c_fc.bias": np.zeros(4 * d),
                  p + "mlp.c_proj.weight": np.zeros((4 * d, d)), p + "mlp.c_proj.bias": np.zeros(d)})
    os.mkdir(os.path.join(t, name))
    json.dump(cfg, open(os.path.join(t, name, "config.json"), "w"), indent=1)
    write_st(os.path.join(t, name, "model.safetensors"), w)
EOF
SEQ=1,2,3,4,5,6,7
runj unit_n.json contributions "$T/unit" --tokens $SEQ --precision f64 --method norms -o "$T/unit_N.npy" --format json
runj unit_a.json attention "$T/unit" --tokens $SEQ --precision f64 -o "$T/unit_A.npy"
runj ident_f.json contributions "$T/ident" --tokens $SEQ --precision f64 --method flow -o "$T/ident_F.npy" --format json
runj ident_a.json attention "$T/ident" --tokens $SEQ --precision f64 -o "$T/ident_A.npy"
runj g_n.json contributions "$GPT2" --tokens $IDS --precision f64 --method norms -o "$T/gN.npy" --format json
runj g_n13.json contributions "$GPT2" --tokens $IDS --precision f64 --method norms --layers 2 --heads 1,3 -o "$T/gN13.npy" --format json
runj g_f.json contributions "$GPT2" --tokens $IDS --precision f64 --method flow -o "$T/gF.npy" --format json
runj g_r.json rollout "$GPT2" --tokens $IDS --precision f64 -o "$T/gR.npy" --format json
runj g_nm.json matrix "$T/gN.npy" --format json
PYSCRIPT='
N, A, F, IA = (np.load(a[k]) for k in range(4))
assert N.shape == (2, 1, 7, 7) and A.shape == N.shape, (N.shape, A.shape)
assert np.abs(A[0, 0] - np.eye(7)).max() > 0.1, "unit: A is not trivial"
e0 = np.abs(N[0] - A[0] / np.sqrt(1 + 1e-12)).max()
assert e0 <= 1e-15, ("layer 0: |f(x_j)| = 1 / sqrt(1 + eps)", e0)
assert np.abs(N - A).max() <= 1e-12, "N = A for W_V = W_O = I and unit-norm inputs"
assert np.array_equal(IA, np.broadcast_to(np.eye(7), IA.shape)), "ident: A = I"
assert F.shape == (2, 7, 7) and np.array_equal(F, np.broadcast_to(np.eye(7), F.shape)), F
n = records(a[4])
assert [(x["layer"], x["head"]) for x in n] == [(0, 0), (1, 0)], n
assert all(x["context_mixing"] is None for x in n + records(a[5])), "no mixing for norms, flow"
GN, GN13, GF, GR = (np.load(a[k]) for k in range(6, 10))
assert GN.shape == (4, 4, 6, 6) and GN13.shape == (1, 2, 6, 6), (GN.shape, GN13.shape)
assert np.array_equal(GN13[0], GN[2, [1, 3]]), "--layers 2 --heads 1,3"
assert GF.shape == (4, 6, 6) and np.all(np.triu(GF, 1) == 0), "causal flow"
assert np.all(GF >= GR - 1e-12) and np.all(GF <= 1 + 1e-12), "R <= F <= 1"
assert np.abs(GF[0] - GR[0]).max() <= 1e-15, "one layer: the flow is the edge, R_0 = (A_0 + I)/2"
gn, m = records(a[10]), records(a[11])
assert [(x["layer"], x["head"]) for x in gn] == [(l, h) for l in range(4) for h in range(4)]
for x, y in zip(gn, m):
    for k in ("sigma_max", "entropy_mean", "effective_rank", "mean_cosine"):
        assert x[k] == y[k] or abs(x[k] - y[k]) <= 1e-12 * max(1, abs(y[k])), (k, x[k], y[k])
'
pycheck "norms: N = A (W_V = W_O = I, unit inputs), --heads, records = matrix's; flow: A = I gives F = I, causal, R <= F <= 1" \
    "$T/unit_N.npy" "$T/unit_A.npy" "$T/ident_F.npy" "$T/ident_A.npy" "$T/unit_n.json" "$T/ident_f.json" \
    "$T/gN.npy" "$T/gN13.npy" "$T/gF.npy" "$T/gR.npy" "$T/g_n.json" "$T/g_nm.json"
PYSCRIPT='
c, M = records(a[0]), np.load(a[1])
for x, m in zip(c, M):
    assert abs(x["context_mixing"] - m.mean()) <= 1e-15, (x["context_mixing"], m.mean())
'
pycheck "context_mixing is the mean of --mixing" "$T/c.json" "$T/M.npy"
PYSCRIPT='
got = [(load(p)["settings"]["method"], load(p)["settings"]["rollout"]) for p in a]
assert got == [("alti", False), ("alti", True), ("norms-res", False), ("norms", False), ("flow", False)], got
'
pycheck "the settings name the method and --rollout" "$T/c.json" "$T/r.json" "$T/n.json" "$T/g_n.json" "$T/g_f.json"

printf 'In the beginning\nGod created\n' >"$T/two.txt"
run_case 2 "--rollout composes ALTI: it needs --method alti" "--rollout with norms-res" \
    contributions "$GPT2" --tokens $IDS --method norms-res --rollout -o "$T/o/C.npy"
run_case 2 "--method takes norms, norms-res, alti or flow, not 'bogus'" "unknown method" \
    contributions "$GPT2" --tokens $IDS --method bogus
run_case 1 "7 tokens: attention flow takes at most 6" "flow above --flow-max-tokens" \
    contributions "$T/ident" --tokens $SEQ --method flow --flow-max-tokens 6
run_case 2 "--mixing takes --method norms-res or alti" "--mixing with flow" \
    contributions "$GPT2" --tokens $IDS --method flow --mixing "$T/o/M.npy"
run_case 2 "--flow-max-tokens limits --method flow only" "--flow-max-tokens with alti" \
    contributions "$GPT2" --tokens $IDS --flow-max-tokens 9
run_case 2 "-o and --mixing take one input, not --text-file" "-o with a corpus" \
    contributions "$GPT2" --text-file "$T/two.txt" --mixing "$T/o/M.npy"
run_case 2 "--heads selects the heads of --method norms" "per-layer records" contributions "$GPT2" --tokens $IDS --heads 0
run_case 2 "(did you mean --method?)" "option typo" contributions "$GPT2" --tokens $IDS --mehtod alti
finish
