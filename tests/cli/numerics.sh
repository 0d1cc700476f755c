#!/bin/sh
# tests/cli/numerics.sh CLI — every number is right or the command fails
# (docs/metrics.md "Range", docs/engine.md "Overflow"):
#  - a model whose float32 scores overflow: attention, analyze, residual and
#    rollout exit 1 with one stderr line naming the folder, layer and head,
#    and write nothing; with --precision f64 they succeed with finite output;
#  - `layer`: NaN in X names the X file, overflow names the weights file and
#    the head, X beyond float32 names X;
#  - matrices near DBL_MAX and in the subnormal range: exact sigma_max and
#    ranks, null where a value lies beyond the double range, never NaN/Inf;
#  - weights with huge factors: exact ratios, sigma_max null beyond the range.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"

"$PY" - "$T" <<'EOF' || { echo "numerics.sh: could not make test files" >&2; exit 1; }
import json, os, struct, sys
import numpy as np

t = sys.argv[1]


def write_st(path, tensors, dtype="<f4", st_dtype="F32"):
    header, blob = {}, b""
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=dtype)
        header[name] = {"dtype": st_dtype, "shape": list(a.shape),
                        "data_offsets": [len(blob), len(blob) + a.nbytes]}
        blob += a.tobytes()
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)


# two-layer GPT-2 folders; `scale` multiplies named tensors (float32 range)
rng = np.random.default_rng(8)
d, V, P, L = 8, 20, 16, 2
cfg = {"model_type": "gpt2", "n_layer": L, "n_head": 2, "n_embd": d, "n_positions": P,
       "vocab_size": V, "n_inner": None, "layer_norm_epsilon": 1e-5,
       "activation_function": "gelu_new"}
w = {"wte.weight": rng.normal(0, 0.5, (V, d)), "wpe.weight": rng.normal(0, 0.5, (P, d)),
     "ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d)}
for l in range(L):
    p = "h.%d." % l
    w.update({p + "ln_1.weight": np.ones(d), p + "ln_1.bias": np.zeros(d),
              p + "attn.c_attn.weight": rng.normal(0, 0.5, (d, 3 * d)),
              p + "attn.c_attn.bias": np.zeros(3 * d),
              p + "attn.c_proj.weight": rng.normal(0, 0.5, (d, d)), p + "attn.c_proj.bias": np.zeros(d),
              p + "ln_2.weight": np.ones(d), p + "ln_2.bias": np.zeros(d),
              p + "mlp.c_fc.weight": rng.normal(0, 0.5, (d, 4 * d)), p + "mlp.c_fc.bias": np.zeros(4 * d),
              p + "mlp.c_proj.weight": rng.normal(0, 0.5, (4 * d, d)), p + "mlp.c_proj.bias": np.zeros(d)})
# scores ~1e40 in layer 1 (float32 max 3.4e38); embeddings ~1e20: ln_1's variance ~1e40
for name, scale in (("syn_scores", {"h.1.attn.c_attn.weight": 1e20}),
                    ("syn_embed", {"wte.weight": 1e20, "wpe.weight": 1e20})):
    os.mkdir(os.path.join(t, name))
    json.dump(cfg, open(os.path.join(t, name, "config.json"), "w"))
    write_st(os.path.join(t, name, "model.safetensors"),
             {k: v * scale.get(k, 1.0) for k, v in w.items()})

# layer inputs: X (4, 6); Q/K [6, 4]; "qh" makes float32 scores overflow
x = rng.normal(0, 1, (4, 6))
np.save(os.path.join(t, "x.npy"), x)
xn = x.copy(); xn[1, 0] = np.nan
np.save(os.path.join(t, "xnan.npy"), xn)
xb = x.copy(); xb[0, 0] = 1e39
np.save(os.path.join(t, "xhuge.npy"), xb)
q, k = rng.normal(0, 1, (6, 4)), rng.normal(0, 1, (6, 4))
write_st(os.path.join(t, "w.safetensors"),
         {"q": q, "k": k, "qh": q * 1e20, "kh": k * 1e20}, "<f8", "F64")
# weights: the same head at 1, 2^600 (products beyond the double range) and 2^-600
v, o = rng.normal(0, 1, (6, 4)), rng.normal(0, 1, (4, 6))
ws = {}
for suffix, c in (("", 1.0), ("_big", 2.0 ** 600), ("_tiny", 2.0 ** -600)):
    ws.update({"q" + suffix: q * c, "k" + suffix: k * c, "v" + suffix: v * c, "o" + suffix: o * c})
write_st(os.path.join(t, "heads.safetensors"), ws, "<f8", "F64")

# matrices at the ends of the double range
np.save(os.path.join(t, "huge_eye.npy"), 1e308 * np.eye(3))
np.save(os.path.join(t, "huge_ones.npy"), np.full((3, 3), 1e308))
np.save(os.path.join(t, "huge_rows.npy"), np.array([[1e308, 1e308], [1.0, 1.0]]))
np.save(os.path.join(t, "cancel_rows.npy"), np.array([[1e308, -1e308], [0.5, 0.5]]))
np.save(os.path.join(t, "subnormal_eye.npy"), 5e-324 * np.eye(3))
EOF

# expect_fail REGEX DESC ARGS... : exit 1, empty stdout, stderr exactly one
# line matching the extended REGEX as a whole, and $T/o left empty.
expect_fail() {
    re=$1 DESC=$2
    shift 2
    N=$((N + 1))
    rm -rf "$T/o" && mkdir "$T/o"
    "$CLI" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    rc=$?
    [ $rc -eq 1 ] || fail "exit status $rc, expected 1; stderr: $(head -c 300 "$T/stderr")"
    [ -s "$T/stdout" ] && fail "stdout not empty: $(head -c 200 "$T/stdout")"
    [ "$(wc -l <"$T/stderr")" -eq 1 ] || fail "stderr is not one line: $(head -c 300 "$T/stderr")"
    grep -qxE -- "$re" "$T/stderr" || fail "stderr '$(head -c 300 "$T/stderr")' does not match '$re'"
    [ -n "$(ls -A "$T/o")" ] && fail "left behind: $(ls -A "$T/o" | tr '\n' ' ')"
}

# Python helpers of this script's checks (pycheck, lib.sh)
PYLIB='
def recs(p):
    s = open(p).read()
    assert "NaN" not in s and "Infinity" not in s, "non-finite token in " + p
    return json.loads(s)["records"]
'

# ---- a model whose float32 scores overflow ---------------------------------
S=$T/syn_scores
OVF="attngeom: $S: layer 1 head [01]: attention is not finite at query [0-3] \\(float32 overflow; try --precision f64\\)"
expect_fail "$OVF" "attention, f32 scores overflow" attention "$S" --tokens 1,2,3,4 \
    -o "$T/o/A.npy" --hidden "$T/o/H.npy"
expect_fail "$OVF" "analyze, f32 scores overflow" analyze "$S" --tokens 1,2,3,4 --format json \
    -o "$T/o/out.json"
expect_fail "$OVF" "residual, f32 scores overflow" residual "$S" --tokens 1,2,3,4 --format json \
    -o "$T/o/out.json"
expect_fail "$OVF" "rollout, f32 scores overflow" rollout "$S" --tokens 1,2,3,4 -o "$T/o/R.npy"
expect_fail "attngeom: $T/syn_embed: layer 0: ln_1 output is not finite at token 0 \\(float32 overflow; try --precision f64\\)" \
    "attention, f32 ln_1 variance overflows" attention "$T/syn_embed" --tokens 1,2,3,4 -o "$T/o/A.npy"

rm -rf "$T/o" && mkdir "$T/o"
runj f64.out attention "$S" --tokens 1,2,3,4 --precision f64 -o "$T/o/A.npy" --hidden "$T/o/H.npy"
runj f64.json analyze "$S" --tokens 1,2,3,4 --precision f64 --format json
runj embed.json residual "$T/syn_embed" --tokens 1,2,3,4 --precision f64 --format json
PYSCRIPT='
A, H = np.load(a[0]), np.load(a[1])
assert A.shape == (2, 2, 4, 4) and H.shape == (3, 4, 8), (A.shape, H.shape)
assert np.isfinite(A).all() and np.isfinite(H).all()
assert np.allclose(A.sum(-1), 1, atol=1e-12) and (np.triu(A, 1) == 0).all()
assert len(recs(a[2])) == 4 and len(recs(a[3])) == 3
'
pycheck "--precision f64: finite attention, hidden states, records" "$T/o/A.npy" "$T/o/H.npy" \
    "$T/f64.json" "$T/embed.json"

# ---- layer: each failure names its file --------------------------------------
W=$T/w.safetensors
expect_fail "attngeom: $T/xnan.npy: X holds a non-finite value \\(nan\\) at row 1, column 0" \
    "layer: NaN in X names X" layer --x "$T/xnan.npy" --weights "$W" --q q --k k --heads 2 \
    --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"
expect_fail "attngeom: $T/xhuge.npy: X value 1e\\+39 at row 0, column 0 overflows float32 \\(try --precision f64\\)" \
    "layer: X beyond float32" layer --x "$T/xhuge.npy" --weights "$W" --q q --k k --heads 2 \
    --format json -o "$T/o/out.json"
expect_fail "attngeom: $W: head [01]: attention is not finite at query [0-3] \\(float32 overflow; try --precision f64\\)" \
    "layer: f32 scores overflow" layer --x "$T/x.npy" --weights "$W" --q qh --k kh --heads 2 \
    --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"
runj layer64.json layer --x "$T/x.npy" --weights "$W" --q qh --k kh --heads 2 --precision f64 \
    --format json

# ---- matrices at the ends of the double range --------------------------------
for m in huge_eye huge_ones huge_rows cancel_rows subnormal_eye; do
    runj "$m.json" matrix "$T/$m.npy" --metrics all --format json
done
PYSCRIPT='
eye, ones, rows, cancel, sub = (recs(p)[0] for p in a)
assert eye["sigma_max"] == 1e308 and eye["numerical_rank"] == 3, eye
assert abs(eye["stable_rank"] - 3) < 1e-14 and eye["row_sum_error"] == 1e308, eye
assert eye["entropy_mean"] is None and abs(eye["pc1_share"] - 0.5) < 1e-15, eye
assert ones["sigma_max"] is None and ones["numerical_rank"] == 1, ones
assert abs(ones["stable_rank"] - 1) < 1e-15 and abs(ones["fiedler"] - 1) < 1e-15, ones
assert ones["row_sum_error"] is None and ones["sink_mass"] == 1e308, ones
assert abs(ones["ollivier_mean"] - 0.75) < 1e-15, ones
assert rows["row_sum_error"] is None and rows["numerical_rank"] == 1, rows
assert abs(rows["sigma_max"] / (math.sqrt(2) * 1e308) - 1) < 1e-15, rows
assert cancel["row_sum_error"] == 1.0, cancel
assert sub["sigma_max"] == 5e-324 and sub["numerical_rank"] == 3, sub
assert abs(sub["stable_rank"] - 3) < 1e-14 and abs(sub["pc1_share"] - 0.5) < 1e-15, sub
assert abs(sub["res_ratio"] - math.sqrt(2 / 3)) < 1e-15 and sub["fiedler"] == 0, sub
'
pycheck "matrix: 1e308 I, 1e308 J, overflowing and cancelling rows, 5e-324 I" \
    "$T/huge_eye.json" "$T/huge_ones.json" "$T/huge_rows.json" "$T/cancel_rows.json" \
    "$T/subnormal_eye.json"

# ---- weights: factors at 2^600 and 2^-600 -------------------------------------
for s in "" _big _tiny; do
    runj "heads$s.json" weights --weights "$T/heads.safetensors" --q "q$s" --k "k$s" \
        --v "v$s" --o "o$s" --heads 2 --format json
done
PYSCRIPT='
one, big, tiny = (recs(p) for p in a)
for r1, rb, rt in zip(one, big, tiny):
    for key, v in r1.items():
        if key.endswith("sigma_max"):
            assert rb[key] is None and rt[key] == 0, (key, rb[key], rt[key])
        elif key not in ("layer", "head", "rows", "cols", "model"):
            assert abs(rb[key] - v) <= 1e-14 * max(1, abs(v)), (key, v, rb[key])
            assert abs(rt[key] - v) <= 1e-14 * max(1, abs(v)), (key, v, rt[key])
'
pycheck "weights: scaled factors give the same ratios" "$T/heads.json" "$T/heads_big.json" \
    "$T/heads_tiny.json"

finish
