#!/bin/sh
# tests/cli/model.sh CLI — end-to-end checks of the model commands (docs/cli.md):
# info, tokenize, attention, analyze and layer on models/tiny-gpt2 and the data
# in tests/data (tiny-bert too when tests/data/models/tiny-bert is there), then
# their error cases: exit 1 (2 for usage errors), exactly one stderr line
# naming the culprit, nothing on stdout, no output file left behind.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
BERT=$ROOT/tests/data/models/tiny-bert
FIX=$ROOT/tests/data/fixtures
USE=$ROOT/tests/data/use-lite/qkv.safetensors
need "$GPT2/config.json" "$USE" "$FIX/use-lite/x_0_layer0.npy"

TEXT="In the beginning God created the heaven and the earth."
KQ='module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0'
KB='module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat'
# shellcheck disable=SC2059
QKV0=$(printf "$KQ" 0) QKV1=$(printf "$KQ" 1) QB0=$(printf "$KB" 0) QB1=$(printf "$KB" 1)

# ---- test folders ----------------------------------------------------------
# copies of tiny-gpt2 with a modified config.json (every other file a symlink),
# and small synthetic GPT-2 folders: one complete, one lacking a tensor.
mkcopy() {
    mkdir "$T/$1" || exit 1
    for f in "$GPT2"/*; do
        [ "$(basename "$f")" = config.json ] || ln -s "$f" "$T/$1/" || exit 1
    done
}
mkcopy cp_nofield
mkcopy cp_broken
mkcopy cp_type
"$PY" - "$T" "$GPT2" <<'EOF' || { echo "model.sh: could not make test folders" >&2; exit 1; }
import json, os, struct, sys
import numpy as np

t, gpt2 = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(gpt2, "config.json")))
c = dict(cfg); del c["n_head"]
json.dump(c, open(os.path.join(t, "cp_nofield", "config.json"), "w"), indent=1)
open(os.path.join(t, "cp_broken", "config.json"), "w").write('{"model_type": "gpt2", "n_layer": 4,\n')
c = dict(cfg); c["model_type"] = "gpt5x"
json.dump(c, open(os.path.join(t, "cp_type", "config.json"), "w"), indent=1)


def write_st(path, tensors):
    header, blob = {}, b""
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [len(blob), len(blob) + a.nbytes]}
        blob += a.tobytes()
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)


rng = np.random.default_rng(0)
d, V, P = 8, 20, 16
syn_cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 1,
           "n_head": 2, "n_embd": d, "n_positions": P, "vocab_size": V, "n_inner": None,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
w = {"wte.weight": rng.normal(0, 0.5, (V, d)), "wpe.weight": rng.normal(0, 0.5, (P, d)),
     "h.0.ln_1.weight": np.ones(d), "h.0.ln_1.bias": np.zeros(d),
     "h.0.attn.c_attn.weight": rng.normal(0, 0.5, (d, 3 * d)), "h.0.attn.c_attn.bias": np.zeros(3 * d),
     "h.0.attn.c_proj.weight": rng.normal(0, 0.5, (d, d)), "h.0.attn.c_proj.bias": np.zeros(d),
     "h.0.ln_2.weight": np.ones(d), "h.0.ln_2.bias": np.zeros(d),
     "h.0.mlp.c_fc.weight": rng.normal(0, 0.5, (d, 4 * d)), "h.0.mlp.c_fc.bias": np.zeros(4 * d),
     "h.0.mlp.c_proj.weight": rng.normal(0, 0.5, (4 * d, d)), "h.0.mlp.c_proj.bias": np.zeros(d),
     "ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d)}
for name, drop in (("syn_ok", None), ("syn_missing", "h.0.mlp.c_fc.weight")):
    os.mkdir(os.path.join(t, name))
    json.dump(syn_cfg, open(os.path.join(t, name, "config.json"), "w"), indent=1)
    write_st(os.path.join(t, name, "model.safetensors"),
             {k: v for k, v in w.items() if k != drop})
# three lines, the middle one blank
open(os.path.join(t, "three.txt"), "w").write("In the beginning\n\nGod created the heaven\n")
EOF

# ---- info --------------------------------------------------------------------
runj info.json info "$GPT2" --format json
PYSCRIPT='
j = load(a[0])
c = j.get("config", j)
assert c["layers"] == 4 and c["heads"] == 4, "layers/heads %r %r" % (c.get("layers"), c.get("heads"))
'
pycheck "info tiny-gpt2: layers 4, heads 4" "$T/info.json"
runj info_syn.json info "$T/syn_ok" --format json
PYSCRIPT='
c = load(a[0]); c = c.get("config", c)
assert c["layers"] == 1 and c["heads"] == 2, (c.get("layers"), c.get("heads"))
'
pycheck "info synthetic gpt2: layers 1, heads 2" "$T/info_syn.json"
# yarn / longrope / GPT-J: info names the scaling, its parameters and the pairing
ARCHD=tests/data/models/arch
runj info_yarn.json info "$ARCHD/qwen2-yarn" --format json
runj info_long.json info "$ARCHD/phi3-longrope" --format json
runj info_gptj.json info "$ARCHD/gptj" --format json
PYSCRIPT='
y = load(a[0]); y = y.get("config", y)
assert y["rope_scaling"] == "yarn" and y["rope_factor"] == 8 and y["rope_original_max_positions"] == 64, y
assert y["rope_beta_fast"] == 32 and y["rope_beta_slow"] == 1 and y["rope_truncate"] is False, y
assert abs(y["rope_attention_factor"] - (0.1 * math.log(8) + 1) / (0.05 * math.log(8) + 1)) < 1e-12, y
l = load(a[1]); l = l.get("config", l)
assert l["rope_scaling"] == "longrope" and l["rope_factor"] == 4 and l["rope_original_max_positions"] == 8, l
assert abs(l["rope_attention_factor"] - math.sqrt(1 + math.log(4) / math.log(8))) < 1e-12, l
g = load(a[2]); g = g.get("config", g)
assert g["rope_pairs"].startswith("interleaved") and g["rotary_dim"] == 4 and g["residual"] == "parallel", g
'
pycheck "info qwen2-yarn, phi3-longrope, gptj: the scaling and pairs" "$T/info_yarn.json" "$T/info_long.json" "$T/info_gptj.json"
# the synthetic folder works (so its twin lacking a tensor fails for that reason)
runj syn.json analyze "$T/syn_ok" --tokens 1,2,3 --format json
PYSCRIPT='
r = records(a[0])
assert len(r) == 2 and all(x["rows"] == 3 for x in r), len(r)
'
pycheck "analyze synthetic gpt2: 2 records of 3x3" "$T/syn.json"

# ---- tokenize ----------------------------------------------------------------
runj tok.json tokenize "$GPT2" --text "$TEXT" --format json
PYSCRIPT='
j = load(a[0]); ref = load(a[1])
assert j["ids"] == ref["ids"], (j["ids"], ref["ids"])
assert len(j["tokens"]) == len(j["ids"]) and j["tokens"] == ref["tokens"], j["tokens"]
'
pycheck "tokenize tiny-gpt2 = fixture ids and tokens" "$T/tok.json" "$FIX/tiny-gpt2/tokens_0.json"
NTOK=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ids"]))' "$T/tok.json" 2>/dev/null)
IDS=$("$PY" -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$T/tok.json" 2>/dev/null)

# ---- attention ----------------------------------------------------------------
runj att.out attention "$GPT2" --text "$TEXT" -o "$T/A.npy" --hidden "$T/H.npy"
runj att64.out attention "$GPT2" --tokens "$IDS" -o "$T/A64.npy" --hidden "$T/H64.npy" --precision f64
PYSCRIPT='
A, H, A64, H64 = (np.load(p) for p in a[:4])
ra, rh = np.load(a[4]), np.load(a[5])
for x in (A, H, A64, H64):
    assert x.dtype == np.dtype("<f8"), x.dtype
assert A.shape == ra.shape == A64.shape, (A.shape, ra.shape)
assert H.shape == rh.shape == H64.shape, (H.shape, rh.shape)
e32, e64 = abs(A - ra).max(), abs(A64 - ra).max()
h32 = (abs(H - rh) / np.maximum(1, abs(rh))).max()
h64 = (abs(H64 - rh) / np.maximum(1, abs(rh))).max()
assert e32 <= 1e-5 and h32 <= 1e-4, ("f32", e32, h32)
assert e64 <= 1e-12 and h64 <= 1e-12, ("f64", e64, h64)
up = np.triu(np.ones(A.shape[-1], bool), 1)
assert (A[..., up] == 0).all() and (A64[..., up] == 0).all(), "causal zeros"
'
pycheck "attention tiny-gpt2 f32/f64 vs PyTorch fixture 0" "$T/A.npy" "$T/H.npy" "$T/A64.npy" "$T/H64.npy" \
    "$FIX/tiny-gpt2/attn_0.npy" "$FIX/tiny-gpt2/hidden_0.npy"
runj att_sel.out attention "$GPT2" --text "$TEXT" -o "$T/Asel.npy" --layers 1-2 --heads 0,3
PYSCRIPT='
A, S = np.load(a[0]), np.load(a[1])
assert S.shape == (2, 2) + A.shape[2:], S.shape
assert (S == A[1:3][:, [0, 3]]).all(), "selected layers/heads differ from the full output"
'
pycheck "attention --layers 1-2 --heads 0,3 = slice of the full output" "$T/A.npy" "$T/Asel.npy"

# ---- analyze -----------------------------------------------------------------
runj an.json analyze "$GPT2" --text "$TEXT" --format json
PYSCRIPT='
r = records(a[0]); n = int(a[1])
assert len(r) == 16, "%d records" % len(r)
assert sorted((x["layer"], x["head"]) for x in r) == [(l, h) for l in range(4) for h in range(4)]
assert all(x["rows"] == n and x["cols"] == n for x in r), [(x["rows"], x["cols"]) for x in r]
'
pycheck "analyze --text: 16 records, rows = cols = n" "$T/an.json" "$NTOK"
runj ansel.json analyze "$GPT2" --text "$TEXT" --layers 1-2 --heads 0 --format json
PYSCRIPT='
r = records(a[0])
assert [(x["layer"], x["head"]) for x in r] == [(1, 0), (2, 0)], [(x["layer"], x["head"]) for x in r]
'
pycheck "analyze --layers 1-2 --heads 0: 2 records" "$T/ansel.json"
runj anfile.json analyze "$GPT2" --text-file "$T/three.txt" --format json
PYSCRIPT='
r = records(a[0])
from collections import Counter
c = Counter(x.get("text") for x in r)
assert c == Counter({0: 16, 2: 16}), dict(c)
'
pycheck "analyze --text-file (blank middle line): texts 0 and 2" "$T/anfile.json"

# analyze == matrix on the file written by attention, key by key, as JSON text
# (numbers compared as the literal strings printed)
PYSCRIPT='
def recs(p):
    with open(p) as f:
        return json.load(f, parse_float=str)["records"]
an, mx = recs(a[0]), recs(a[1])
assert len(an) == len(mx), (len(an), len(mx))
# analyze alone knows the token ids: matrix has no token-pattern keys
ids_keys = {"duplicate_token_score", "duplicate_token_baseline", "induction_score",
            "induction_baseline"}
for i, (x, y) in enumerate(zip(an, mx)):
    assert ids_keys <= set(x) and not ids_keys & set(y), ("record %d token keys" % i)
    x = {k: v for k, v in x.items() if k != "text" and k not in ids_keys}
    y = {k: v for k, v in y.items() if k != "text"}
    assert set(x) == set(y), ("record %d keys" % i, set(x) ^ set(y))
    for k in x:
        assert x[k] == y[k], ("record %d key %s: analyze %r, matrix %r" % (i, k, x[k], y[k]))
'
runj mx.json matrix "$T/A.npy" --label tiny-gpt2 --format json
pycheck "analyze --text = matrix on attention's file (f32)" "$T/an.json" "$T/mx.json"
runj an64.json analyze "$GPT2" --tokens "$IDS" --precision f64 --format json
runj mx64.json matrix "$T/A64.npy" --label tiny-gpt2 --format json
pycheck "analyze --tokens --precision f64 = matrix on attention's file" "$T/an64.json" "$T/mx64.json"
runj mxsel.json matrix "$T/Asel.npy" --label tiny-gpt2 --format json
runj ansel2.json analyze "$GPT2" --text "$TEXT" --layers 1-2 --heads 0,3 --format json
PYSCRIPT='
an, mx = records(a[0]), records(a[1])
assert len(an) == len(mx) == 4, (len(an), len(mx))
# matrix numbers the selected sub-array from 0; analyze keeps model indices
assert [(x["layer"], x["head"]) for x in an] == [(1, 0), (1, 3), (2, 0), (2, 3)]
for x, y in zip(an, mx):
    for k in x:
        if k not in ("layer", "head") and not k.startswith(("duplicate_token", "induction")):
            assert x[k] == y[k], (k, x[k], y[k])
'
pycheck "analyze --layers/--heads = matrix on attention --layers/--heads" "$T/ansel2.json" "$T/mxsel.json"
runj anall.json analyze "$GPT2" --text "$TEXT" --metrics all --format json --layers 3 --heads 1
PYSCRIPT='
r = records(a[0])
assert len(r) == 1 and r[0]["layer"] == 3 and r[0]["head"] == 1, r
for k in ("sigma_max", "entropy_mean", "mean_cosine"):
    assert k in r[0], k
'
pycheck "analyze --metrics all" "$T/anall.json"

# --expect: the saved output matches; a changed value exits 3
N=$((N + 1)); DESC="analyze --expect on its own output"
"$CLI" analyze "$GPT2" --text "$TEXT" --expect "$T/an.json" >/dev/null 2>"$T/err"
rc=$?; [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 "$T/err")"
"$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
j["records"][5]["entropy_mean"] *= 1.001
json.dump(j, open(sys.argv[2], "w"))' "$T/an.json" "$T/bad_golden.json"
N=$((N + 1)); DESC="analyze --expect with a changed value"
"$CLI" analyze "$GPT2" --text "$TEXT" --expect "$T/bad_golden.json" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 3 ] || fail "exit $rc, expected 3"
grep -q entropy_mean "$T/err" || fail "the mismatch report does not name entropy_mean: $(head -c 300 "$T/err")"
N=$((N + 1)); DESC="analyze --expect f64 golden with the f64 run"
"$CLI" analyze "$GPT2" --tokens "$IDS" --precision f64 --expect "$T/an64.json" --format json -o "$T/an64b.json" 2>"$T/err"
rc=$?; [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 "$T/err")"

# ---- tiny-bert, when its folder is in tests/data ---------------------------------
if [ -f "$BERT/config.json" ]; then
    runj binfo.json info "$BERT" --format json
    PYSCRIPT='
c = load(a[0]); c = c.get("config", c)
assert c["layers"] == 4 and c["heads"] == 4, (c.get("layers"), c.get("heads"))
'
    pycheck "info tiny-bert: layers 4, heads 4" "$T/binfo.json"
    runj btok.json tokenize "$BERT" --text "$TEXT" --format json
    PYSCRIPT='
assert load(a[0])["ids"] == load(a[1])["ids"], (load(a[0])["ids"], load(a[1])["ids"])
'
    pycheck "tokenize tiny-bert = fixture ids" "$T/btok.json" "$FIX/tiny-bert/tokens_0.json"
    runj batt.out attention "$BERT" --text "$TEXT" -o "$T/BA.npy" --hidden "$T/BH.npy"
    PYSCRIPT='
A, H, ra, rh = (np.load(p) for p in a)
assert A.shape == ra.shape and H.shape == rh.shape, (A.shape, H.shape)
assert abs(A - ra).max() <= 1e-5 and (abs(H - rh) / np.maximum(1, abs(rh))).max() <= 1e-4
'
    pycheck "attention tiny-bert f32 vs PyTorch fixture 0" "$T/BA.npy" "$T/BH.npy" \
        "$FIX/tiny-bert/attn_0.npy" "$FIX/tiny-bert/hidden_0.npy"
    runj ban.json analyze "$BERT" --text "$TEXT" --format json
    runj bmx.json matrix "$T/BA.npy" --label tiny-bert --format json
    PYSCRIPT='
an, mx = records(a[0]), records(a[1])
assert len(an) == len(mx) == 16, (len(an), len(mx))
# analyze alone knows the token ids: matrix has no token-pattern keys
drop = lambda r: {k: v for k, v in r.items() if not k.startswith(("duplicate_token", "induction"))}
assert all(drop(x) == y for x, y in zip(an, mx)), "analyze and matrix differ"
assert all(x["causal"] is False for x in an), "BERT attention reported causal"
'
    pycheck "analyze tiny-bert = matrix on attention's file" "$T/ban.json" "$T/bmx.json"
else
    echo "model.sh: tiny-bert checks skipped (no tests/data/models/tiny-bert)"
fi

# ---- layer on the USE-lite extract -------------------------------------------------
for l in 0 1; do
    if [ $l -eq 0 ]; then q=$QKV0 b=$QB0 s=0.125; else q=$QKV1 b=$QB1 s=0.0883883461356163; fi
    for p in f32 f64; do
        runj layer$l$p.json layer --x "$FIX/use-lite/x_0_layer$l.npy" --weights "$USE" --qkv "$q" \
            --qkv-bias "$b" --heads 4 --scale $s --precision $p --save-attention "$T/L$l$p.npy" --format json
        PYSCRIPT='
r = records(a[0]); A = np.load(a[1]); ref = np.load(a[2])
assert A.shape == ref.shape, (A.shape, ref.shape)
e = abs(A - ref).max()
assert e <= 1e-5, "max |attn err| %g" % e
assert [x["head"] for x in r] == [0, 1, 2, 3], [x["head"] for x in r]
assert all(x["rows"] == x["cols"] == A.shape[1] for x in r)
'
        pycheck "layer use-lite layer $l $p vs TF.js attention (1e-5)" "$T/layer$l$p.json" "$T/L$l$p.npy" \
            "$FIX/use-lite/attn_0_layer$l.npy"
    done
done
# layer's records equal matrix on its --save-attention file
runj mxl.json matrix "$T/L0f32.npy" --label "$(basename "$USE")" --format json
PYSCRIPT='
an, mx = records(a[0]), records(a[1])
assert len(an) == len(mx) == 4
assert all(x == y for x, y in zip(an, mx)), "layer records differ from matrix on the saved file"
'
pycheck "layer records = matrix on --save-attention" "$T/layer0f32.json" "$T/mxl.json"

# A single token: X (1, d) is one row, not a vector (leading 1s are dropped only
# down to rank 2); (1, 1, d) and the batch of one (1, n, d) keep working.
"$PY" -c "import numpy as np, sys
x = np.load(sys.argv[1])
np.save(sys.argv[2] + '/x1.npy', x[:1]); np.save(sys.argv[2] + '/x11.npy', x[None, :1])
np.save(sys.argv[2] + '/x1n.npy', x[None])" "$FIX/use-lite/x_0_layer0.npy" "$T"
for x in x1 x11 x1n; do
    runj layer_$x.json layer --x "$T/$x.npy" --weights "$USE" --qkv "$QKV0" --qkv-bias "$QB0" --heads 4 \
        --scale 0.125 --save-attention "$T/A_$x.npy" --format json
done
runj an818.json analyze "$GPT2" --tokens 818 --layers 0 --format json
PYSCRIPT='
one, one11, batch, an, full = (records(p) for p in a[:5])
A1, A1n = np.load(a[5]), np.load(a[6])
assert A1.shape == (4, 1, 1) and (A1 == 1).all(), A1
assert one == one11, "X (1, 1, d) differs from X (1, d)"
for x, y in zip(one, an):
    assert x["rows"] == x["cols"] == 1, x
    assert {k: v for k, v in x.items() if k in y and k not in ("causal", "model")} == \
        {k: v for k, v in y.items() if k in x and k not in ("causal", "model")}, "one-token layer differs from analyze --tokens 818"
assert batch == full, "batch of one (1, n, d) differs from (n, d)"
assert A1n.shape == (4, 12, 12)
'
pycheck "layer: one token (1, d), (1, 1, d) and a batch of one (1, n, d)" "$T/layer_x1.json" \
    "$T/layer_x11.json" "$T/layer_x1n.json" "$T/an818.json" "$T/layer0f32.json" "$T/A_x1.npy" "$T/A_x1n.npy"

# ---- layer: the attention kernel's options ---------------------------------------
# --window 1 leaves each query its own key: the identity, exactly (it implies
# --causal). A cap far above the scores changes them by rounding only.
UL="layer --x $FIX/use-lite/x_0_layer0.npy --weights $USE --qkv $QKV0 --qkv-bias $QB0 --heads 4 --scale 0.125"
for p in f32 f64; do
    # shellcheck disable=SC2086
    runj win1$p.json $UL --window 1 --precision $p --save-attention "$T/W1$p.npy" --format json
    # shellcheck disable=SC2086
    runj cap$p.json $UL --softcap 1e12 --precision $p --save-attention "$T/C$p.npy" --format json
done
PYSCRIPT='
for p, tol in (("f32", 1e-6), ("f64", 1e-13)):
    W = np.load(a[0] + "/W1" + p + ".npy")
    assert W.shape == (4, 12, 12) and (W == np.eye(12)[None]).all(), "window 1 is not the identity"
    C, A = np.load(a[0] + "/C" + p + ".npy"), np.load(a[0] + "/L0" + p + ".npy")
    e = abs(C - A).max()
    assert e <= tol, "softcap 1e12 vs none: %g" % e
'
pycheck "layer --window 1 = identity; --softcap 1e12 = no cap" "$T"

# RoPE with a known rotation: X = (1, 1, 1), one head of 4 dims, W_Q = W_K =
# [1, 0, 2, 2], scale 1. --rotary-dim 2 turns pair (0, 1) = (1, 0) by i rad
# (inv_freq = θ⁰ = 1) and leaves (2, 2): S_ij = cos(i − j) + 8. Rotating all
# four dims (--rotary-dim 4, or --rope-theta alone) pairs (0, 2) = (1, 2) at
# frequency 1 and (1, 3) = (0, 2) at θ^(-1/2): S_ij = 5 cos(i − j) + 4 cos((i − j)/√θ).
"$PY" - "$T" <<'EOF' || fail "could not write the rotary test tensors"
import json, struct, sys
import numpy as np
t = sys.argv[1]
np.save(t + "/rx.npy", np.ones((3, 1)))
w = np.array([[1, 0, 2, 2]], dtype="<f4").tobytes()
hdr = {n: {"dtype": "F32", "shape": [1, 4], "data_offsets": [i * 16, i * 16 + 16]}
       for i, n in enumerate(["q", "k"])}
h = json.dumps(hdr).encode()
open(t + "/rw.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + w + w)
EOF
RL="layer --x $T/rx.npy --weights $T/rw.safetensors --q q --k k --heads 1 --scale 1 --precision f64 --format json"
# shellcheck disable=SC2086
runj rot2.json $RL --rotary-dim 2 --rope-theta 100 --save-attention "$T/R2.npy"
# shellcheck disable=SC2086
runj rot4.json $RL --rotary-dim 4 --rope-theta 100 --save-attention "$T/R4.npy"
# shellcheck disable=SC2086
runj rot4t.json $RL --rope-theta 100 --save-attention "$T/R4t.npy"
# shellcheck disable=SC2086
runj rot2w.json $RL --rotary-dim 2 --window 2 --save-attention "$T/R2w.npy"
PYSCRIPT='
def sm(S, mask=None):
    S = np.where(mask, S, -np.inf) if mask is not None else S
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)
D = np.subtract.outer(np.arange(3.0), np.arange(3.0))
R2, R4, R4t, R2w = (np.load(p)[0] for p in a)
e2 = abs(R2 - sm(np.cos(D) + 8)).max()
e4 = abs(R4 - sm(5 * np.cos(D) + 4 * np.cos(D / 10))).max()
assert e2 <= 1e-14, "rotary-dim 2: %g" % e2
assert e4 <= 1e-14, "rotary-dim 4: %g" % e4
assert (R4t == R4).all(), "--rope-theta alone is not the whole head"
band = (D >= 0) & (D < 2)
ew = abs(R2w - sm(np.cos(D) + 8, band)).max()
assert ew <= 1e-14 and (R2w[~band] == 0).all(), "rotary-dim 2 window 2: %g" % ew
'
pycheck "layer --rotary-dim/--rope-theta: known rotations" "$T/R2.npy" "$T/R4.npy" "$T/R4t.npy" "$T/R2w.npy"

# ---- error cases -----------------------------------------------------------------
# model errors, each through attention (two output files) and analyze (-o)
model_case() {
    needles=$1 desc=$2 folder=$3
    shift 3
    run_case 1 "$needles" "attention: $desc" attention "$folder" "$@" -o "$T/o/A.npy" --hidden "$T/o/H.npy"
    run_case 1 "$needles" "analyze: $desc" analyze "$folder" "$@" --format json -o "$T/o/out.json"
}
LONG=$("$PY" -c 'print("the " * 300)')

model_case n_head "config.json missing n_head" "$T/cp_nofield" --text "$TEXT"
run_case 1 n_head "info: config.json missing n_head" info "$T/cp_nofield" --format json -o "$T/o/out.json"
model_case config.json "broken config.json" "$T/cp_broken" --text "$TEXT"
model_case 'model_type|gpt5x' "unknown model_type" "$T/cp_type" --text "$TEXT"
model_case h.0.mlp.c_fc.weight "weights lacking a tensor" "$T/syn_missing" --tokens 1,2,3
model_case n_positions "text longer than n_positions" "$GPT2" --text "$LONG"
model_case n_positions "tokens longer than n_positions (synthetic, 17 > 16)" "$T/syn_ok" \
    --tokens "$("$PY" -c 'print(",".join(["1"] * 17))')"
model_case vocab "token id = vocab_size" "$GPT2" --tokens 1,50257
model_case vocab "token id = vocab_size (synthetic, 20)" "$T/syn_ok" --tokens 1,20
model_case layers "--layers 9 out of range" "$GPT2" --text "$TEXT" --layers 9
model_case heads "--heads 4 out of range" "$GPT2" --text "$TEXT" --heads 4
run_case 1 nope "missing model folder" analyze "$T/nope" --text "$TEXT" --format json -o "$T/o/out.json"
run_case 1 three_missing.txt "missing --text-file" analyze "$GPT2" --text-file "$T/three_missing.txt" \
    --format json -o "$T/o/out.json"

# layer errors
run_case 1 "${QKV0}x" "layer: misnamed tensor" layer --x "$FIX/use-lite/x_0_layer0.npy" --weights "$USE" \
    --qkv "${QKV0}x" --heads 4 --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"
run_case 1 heads "layer: d_a 256 not divisible by --heads 3" layer --x "$FIX/use-lite/x_0_layer0.npy" \
    --weights "$USE" --qkv "$QKV0" --heads 3 --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"
run_case 1 512 "layer: X width 512 against a [256, 768] kernel" layer --x "$FIX/use-lite/x_0_layer1.npy" \
    --weights "$USE" --qkv "$QKV0" --heads 4 --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"

# usage errors: exit 2
run_case 2 "" "--layers bad syntax" analyze "$GPT2" --text "$TEXT" --layers 1-x --format json -o "$T/o/out.json"
run_case 2 "" "--layers bad syntax (attention)" attention "$GPT2" --text "$TEXT" --layers 2- -o "$T/o/A.npy"
run_case 2 "" "--heads bad syntax" analyze "$GPT2" --text "$TEXT" --heads a --format json -o "$T/o/out.json"
run_case 2 "" "attention without -o" attention "$GPT2" --text "$TEXT"
run_case 2 "" "analyze without input" analyze "$GPT2" --format json -o "$T/o/out.json"
run_case 2 "" "two inputs" analyze "$GPT2" --text "$TEXT" --tokens 1,2 --format json -o "$T/o/out.json"
run_case 2 "" "--precision f16" attention "$GPT2" --text "$TEXT" --precision f16 -o "$T/o/A.npy"
run_case 2 "" "--tokens not numbers" attention "$GPT2" --tokens 1,x -o "$T/o/A.npy"
run_case 2 "" "unknown option" analyze "$GPT2" --text "$TEXT" --bogus --format json -o "$T/o/out.json"
run_case 2 "" "tokenize without --text" tokenize "$GPT2"
run_case 2 "" "info without PATH" info
run_case 2 "" "layer without --heads" layer --x "$FIX/use-lite/x_0_layer0.npy" --weights "$USE" --qkv "$QKV0" \
    --save-attention "$T/o/A.npy"
run_case 2 "" "layer without --x" layer --weights "$USE" --qkv "$QKV0" --heads 4 --save-attention "$T/o/A.npy"
# the kernel's options: each bad value names its option
for bad in "--softcap 0" "--softcap -1" "--softcap x" "--window 0" "--window 2.5" "--rotary-dim 3" \
    "--rotary-dim 0" "--rotary-dim 66" "--rope-theta 0" "--rope-theta -5"; do
    # shellcheck disable=SC2086
    run_case 2 "${bad%% *}" "layer $bad" layer --x "$FIX/use-lite/x_0_layer0.npy" --weights "$USE" \
        --qkv "$QKV0" --heads 4 $bad --save-attention "$T/o/A.npy" --format json -o "$T/o/out.json"
done

finish
