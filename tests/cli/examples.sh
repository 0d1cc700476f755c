#!/bin/sh
# tests/cli/examples.sh CLI — the programs in examples/ run and print what
# their comments promise (values derived in those comments). Run from the
# repository root after `make all`, which builds them into build/examples/.
B=$(dirname "$1")/examples
PY=/usr/bin/python3
FAILS=0
fail() { FAILS=$((FAILS + 1)); echo "FAIL [examples]: $*"; }

"$B/matrix_metrics" 6 > /tmp/ag_ex_mm.$$ || fail "matrix_metrics exited $?"
"$PY" -c "
import json, math, sys
r = json.load(open(sys.argv[1]))['records'][0]
assert r['lambda2_abs'] == 0.5 and r['spectral_gap'] == 0.5, r
assert abs(r['entropy_normalized'] - 1) < 1e-14 and r['causal'] is True, r
assert abs(r['sink_mass'] - sum(1 / (i + 1) for i in range(6)) / 6) < 1e-14, r
" /tmp/ag_ex_mm.$$ || fail "matrix_metrics values"

"$B/head_weights" > /tmp/ag_ex_hw.$$ || fail "head_weights exited $?"
"$PY" -c "
import json, sys
r = json.load(open(sys.argv[1]))['records'][0]
assert abs(r['qk_symmetry_score'] - 1) < 1e-14 and abs(r['ov_copying_score'] - 1) < 1e-14, r
assert abs(r['ov_sigma_max'] - 2) < 1e-14 and abs(r['ov_effective_rank'] - 2) < 1e-12, r
" /tmp/ag_ex_hw.$$ || fail "head_weights values"

"$B/model_heads" models/tiny-gpt2 "In the beginning God created the heaven and the earth." \
    > /tmp/ag_ex_mh.$$ || fail "model_heads exited $?"
[ "$(head -1 /tmp/ag_ex_mh.$$)" = "11 tokens" ] || fail "model_heads: token count"
[ "$(grep -c '^layer' /tmp/ag_ex_mh.$$)" -eq 16 ] || fail "model_heads: 16 heads"
grep -q "^layer 0 head 0: entropy_normalized 0.9260  sink_mass 0.3185$" /tmp/ag_ex_mh.$$ \
    || fail "model_heads: layer 0 head 0 differs from analyze ($(sed -n 2p /tmp/ag_ex_mh.$$))"
"$B/model_heads" /nonexistent "x" > /dev/null 2>&1 && fail "model_heads on a missing folder exited 0"

rm -f /tmp/ag_ex_mm.$$ /tmp/ag_ex_hw.$$ /tmp/ag_ex_mh.$$
[ $FAILS -eq 0 ] || { echo "examples.sh: $FAILS failure(s)"; exit 1; }
echo "examples.sh: ok (3 programs)"
