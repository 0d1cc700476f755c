#!/bin/sh
# tests/cli/weights.sh CLI — `attngeom weights` end to end: a model folder,
# the named-tensor path (fused and separate, [in,out] and --linear, grouped-
# query K/V), selections, and every error class of the issue: missing tensor,
# d_h not dividing the width, Q/K widths differing without a valid GQA layout,
# non-finite weights (exit 1, one stderr line naming the culprit, nothing on
# stdout, no -o file), usage errors (exit 2). Values themselves are checked
# against a dense numpy computation by tests/ref/check_weights.py.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"

# A safetensors file with the given float64 tensors: name=shape:generator.
"$PY" - "$T" <<'PYEOF' || { echo "weights.sh: cannot make test files"; exit 1; }
import json, struct, sys
import numpy as np
T = sys.argv[1]
def save(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f8")
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes()); off += a.nbytes
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h)
        for b in blobs: f.write(b)
r = np.random.default_rng(3)
d, H, dh = 16, 4, 4
q, k, v, o = (r.normal(size=(d, H * dh)) for _ in range(4))
o = r.normal(size=(H * dh, d))
save(f"{T}/w.safetensors", {"q": q, "k": k, "v": v, "o": o, "qkv": np.concatenate([q, k, v], 1),
                            "qT": q.T, "kT": k.T, "vT": v.T, "oT": o.T,
                            "k_gqa": k[:, : 2 * dh], "v_gqa": v[:, : 2 * dh],
                            "k_bad": k[:, : 3 * dh + 1], "k_odd": k[:, : 3 * dh], "o_bad": o[: 2 * dh]})
save(f"{T}/empty.safetensors", {"q": np.zeros((d, 0)), "k": np.zeros((d, 0))})
bad = q.copy(); bad[2, 3] = np.nan
save(f"{T}/nan.safetensors", {"q": bad, "k": k})
PYEOF

W=$T/w.safetensors
ok() { # DESC, then the command; expects exit 0 and records on stdout
    DESC=$1; shift; N=$((N + 1))
    "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 0 ] || fail "exit $rc: $(cat "$T/err")"
}
ok "model folder" "$CLI" weights "$GPT2" --format json
"$PY" -c "
import json,sys; d=json.load(open('$T/out'))['records']
assert len(d)==16 and all(r['rows']==128 and r['cols']==128 for r in d), 'records'
assert set(d[0]) >= {'qk_symmetry_score','ov_copying_score','qk_sigma_max'} and 'sigma_max' not in d[0]
" || fail "16 records of width 128 with family D keys only"
ok "selection" "$CLI" weights "$GPT2" --layers 1-2 --heads 3 --format csv
[ "$(wc -l < "$T/out")" -eq 3 ] || fail "--layers 1-2 --heads 3: expected header + 2 rows"
ok "separate" "$CLI" weights --weights "$W" --q q --k k --v v --o o --heads 4 --format json
cp "$T/out" "$T/separate.json"
ok "fused" "$CLI" weights --weights "$W" --qkv qkv --o o --heads 4 --expect "$T/separate.json"
ok "linear" "$CLI" weights --weights "$W" --q qT --k kT --v vT --o oT --linear --heads 4 --expect "$T/separate.json"
ok "gqa" "$CLI" weights --weights "$W" --q q --k k_gqa --v v_gqa --o o --heads 4 --format json
"$PY" -c "
import json; a=json.load(open('$T/out'))['records']; b=json.load(open('$T/separate.json'))['records']
# heads 0,1 use kv head 0 = the same K/V columns as head 0 of the full layout
assert abs(a[0]['qk_sigma_max']-b[0]['qk_sigma_max']) < 1e-12*b[0]['qk_sigma_max']
assert a[1]['ov_copying_score'] != b[1]['ov_copying_score']
" || fail "GQA head mapping"

bad() { # DESC EXPECTED_RC NEEDLE, then the command
    DESC=$1; want=$2; needle=$3; shift 3; N=$((N + 1))
    rm -f "$T/o.json"
    "$@" -o "$T/o.json" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq "$want" ] || fail "exit $rc, expected $want: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" -eq 1 ] || fail "stderr has $(wc -l < "$T/err") lines: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "stdout not empty"
    [ -e "$T/o.json" ] && fail "output file left behind"
    grep -qF -- "$needle" "$T/err" || fail "stderr does not name '$needle': $(cat "$T/err")"
}
bad "missing tensor" 1 "nope" "$CLI" weights --weights "$W" --q q --k nope --heads 4
bad "d_h not dividing" 1 "--heads 3" "$CLI" weights --weights "$W" --q q --k k --heads 3
bad "K width without GQA" 1 "k_bad" "$CLI" weights --weights "$W" --q q --k k_bad --heads 4
bad "kv heads not dividing" 1 "k_odd" "$CLI" weights --weights "$W" --q q --k k_odd --heads 4
bad "O rows" 1 "o_bad" "$CLI" weights --weights "$W" --q q --k k --v v --o o_bad --heads 4
bad "empty Q" 1 "non-empty" "$CLI" weights --weights "$T/empty.safetensors" --q q --k k --heads 1
bad "non-finite" 1 "W_Q" "$CLI" weights --weights "$T/nan.safetensors" --q q --k k --heads 4
bad "missing file" 1 "none.safetensors" "$CLI" weights --weights "$T/none.safetensors" --q q --k k --heads 4
bad "missing model" 1 "no_model" "$CLI" weights "$T/no_model"
bad "layers out of range" 1 "--layers" "$CLI" weights "$GPT2" --layers 7
bad "no heads" 2 "--heads" "$CLI" weights --weights "$W" --q q --k k
bad "family of another command" 2 "sigma_max" "$CLI" weights "$GPT2" --metrics sigma_max
bad "both inputs" 2 "not both" "$CLI" weights "$GPT2" --weights "$W" --q q --k k --heads 4
bad "layer-only option" 2 "--x" "$CLI" weights --weights "$W" --q q --k k --heads 4 --x a.npy
bad "nothing" 2 "MODEL" "$CLI" weights

finish
