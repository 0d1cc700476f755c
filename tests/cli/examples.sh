#!/bin/sh
# tests/cli/examples.sh CLI — the programs in examples/ run and print what
# their comments promise (values derived in those comments). Run from the
# repository root after `make all`, which builds them into build/examples/.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
B=$(dirname "$CLI")/examples

check matrix_metrics
"$B/matrix_metrics" 6 > "$T/mm" || fail "matrix_metrics exited $?"
"$PY" -c "
import json, math, sys
r = json.load(open(sys.argv[1]))['records'][0]
assert r['lambda2_abs'] == 0.5 and r['spectral_gap'] == 0.5, r
assert abs(r['entropy_normalized'] - 1) < 1e-14 and r['causal'] is True, r
assert abs(r['sink_mass'] - sum(1 / (i + 1) for i in range(6)) / 6) < 1e-14, r
" "$T/mm" || fail "matrix_metrics values"

check head_weights
"$B/head_weights" > "$T/hw" || fail "head_weights exited $?"
"$PY" -c "
import json, sys
r = json.load(open(sys.argv[1]))['records'][0]
assert abs(r['qk_symmetry_score'] - 1) < 1e-14 and abs(r['ov_copying_score'] - 1) < 1e-14, r
assert abs(r['ov_sigma_max'] - 2) < 1e-14 and abs(r['ov_effective_rank'] - 2) < 1e-12, r
" "$T/hw" || fail "head_weights values"

check model_heads
"$B/model_heads" "$GPT2" "In the beginning God created the heaven and the earth." \
    > "$T/mh" || fail "model_heads exited $?"
[ "$(head -1 "$T/mh")" = "11 tokens" ] || fail "model_heads: token count"
[ "$(grep -c '^layer' "$T/mh")" -eq 16 ] || fail "model_heads: 16 heads"
grep -q "^layer 0 head 0: entropy_normalized 0.9260  sink_mass 0.3185$" "$T/mh" \
    || fail "model_heads: layer 0 head 0 differs from analyze ($(sed -n 2p "$T/mh"))"
"$B/model_heads" /nonexistent "x" > /dev/null 2>&1 && fail "model_heads on a missing folder exited 0"

finish
