#!/bin/sh
# tests/cli/stability.sh CLI — families E and F through the command line:
# analyze/layer with --metrics stability and curvature, --seed reproducibility,
# --edge-threshold, and the usage errors of docs/cli.md: negative or zero
# epsilon, zero trials, a threshold outside [0, 1] (exit 2), and families a
# command does not compute. Values are checked by tests/ref/check_stability.py
# and check_curvature.py.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
M=$GPT2
TEXT="In the beginning God created the heaven and the earth."

run() { # DESC OUT, then the command; expects exit 0
    DESC=$1; out=$2; shift 2; N=$((N + 1))
    "$@" > "$T/$out" 2> "$T/err" || fail "exit $?: $(cat "$T/err")"
}
run "analyze stability" a1.json "$CLI" analyze "$M" --text "$TEXT" --metrics stability,curvature --format json
run "same seed" a2.json "$CLI" analyze "$M" --text "$TEXT" --metrics stability,curvature --format json
run "other seed" a3.json "$CLI" analyze "$M" --text "$TEXT" --metrics stability,curvature --format json --seed 2
run "threshold" a4.json "$CLI" analyze "$M" --text "$TEXT" --metrics curvature --format json --edge-threshold 0.2
run "rollout curvature" r1.json "$CLI" rollout "$M" --text "$TEXT" --metrics curvature --format json
run "rollout threshold" r2.json "$CLI" rollout "$M" --text "$TEXT" --metrics curvature --format json --edge-threshold 0.2
N=$((N + 1)); DESC="values"
"$PY" - "$T" <<'PYEOF' || fail "see above"
import json, sys
T = sys.argv[1]
a1, a2, a3, a4 = (json.load(open(f"{T}/a{k}.json"))["records"] for k in (1, 2, 3, 4))
assert len(a1) == 16
keys = ["jacobian_norm", "jacobian_norm_rel", "sensitivity", "q_mean_cosine", "k_mean_cosine",
        "qk_cos_mean", "edges", "forman_mean", "forman_min", "ollivier_mean", "ollivier_min"]
for r in a1:
    assert all(k in r for k in keys), sorted(r)
    assert r["jacobian_norm"] > 0 and 0 <= r["sensitivity"] <= r["jacobian_norm_rel"] * 1.01, r
    assert "sigma_max" not in r
assert a1 == a2, "same seed must give identical records"
assert all(x["sensitivity"] != y["sensitivity"] for x, y in zip(a1, a3)), "--seed 2 must change sensitivity"
assert all(x["jacobian_norm"] == y["jacobian_norm"] for x, y in zip(a1, a3)), "--seed must not change the norm"
assert all(x["edges"] >= y["edges"] for x, y in zip(a1, a4)), "a higher threshold keeps fewer edges"
assert any(x["edges"] > y["edges"] for x, y in zip(a1, a4))
r1, r2 = (json.load(open(f"{T}/r{k}.json"))["records"] for k in (1, 2))
assert len(r1) == 4 and all(x["edges"] >= y["edges"] for x, y in zip(r1, r2))
assert any(x["edges"] > y["edges"] for x, y in zip(r1, r2)), "rollout must honour --edge-threshold"
PYEOF

usage() { # DESC NEEDLE, then the command; expects exit 2, one stderr line
    DESC=$1; needle=$2; shift 2; N=$((N + 1))
    "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "exit $rc, expected 2"
    [ "$(wc -l < "$T/err")" -eq 1 ] || fail "stderr: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "stdout not empty"
    grep -qF -- "$needle" "$T/err" || fail "stderr does not name $needle: $(cat "$T/err")"
}
usage "negative epsilon" --epsilon "$CLI" analyze "$M" --text "$TEXT" --metrics sensitivity --epsilon -0.1
usage "zero epsilon" --epsilon "$CLI" analyze "$M" --text "$TEXT" --metrics sensitivity --epsilon 0
usage "zero trials" --trials "$CLI" analyze "$M" --text "$TEXT" --metrics sensitivity --trials 0
usage "negative seed" --seed "$CLI" analyze "$M" --text "$TEXT" --seed -3
usage "threshold > 1" --edge-threshold "$CLI" analyze "$M" --text "$TEXT" --metrics curvature --edge-threshold 1.5
usage "threshold < 0" --edge-threshold "$CLI" matrix examples/tiny_gpt2_attention.npy --edge-threshold -0.5
usage "matrix has no input X" stability "$CLI" matrix examples/tiny_gpt2_attention.npy --metrics stability
usage "weights family elsewhere" qk_sigma_max "$CLI" analyze "$M" --text "$TEXT" --metrics qk_sigma_max

finish
