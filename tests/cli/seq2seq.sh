#!/bin/sh
# tests/cli/seq2seq.sh CLI — encoder–decoder folders (issue 30) in the CLI:
# `info` describes both stacks of the t5, t5-v1_1 and bart test folders, and
# every command that runs one sequence (or reads one stack's weights)
# refuses them with one line naming the model_type and what is missing,
# exit 1, nothing on stdout, no output file. Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
A=$ROOT/tests/data/models/arch
need "$A/t5/config.json" "$A/t5-v1_1/config.json" "$A/bart/config.json"

for m in t5 t5-v1_1 bart; do
    runj "$m.json" info "$A/$m" --format json
done
PYSCRIPT='
for p, enc, dec, mlp in ((a[0], 2, 2, "down(act(up x))"), (a[1], 2, 3, "down(act(gate x) * up x)")):
    j = load(p)
    assert j["encoder_decoder"] is True, p
    c, d = j["config"], j["decoder_config"]
    assert (c["model_type"], c["layers"], d["layers"]) == ("t5", enc, dec), (p, c["layers"], d["layers"])
    assert c["causal"] is False and d["causal"] is True, p
    assert c["positions"] == d["positions"] == "relative buckets (T5)", p
    assert c["attn_scale"] == 1 and c["head_dim"] * c["heads"] != c["d_model"], p
    assert c["mlp"] == d["mlp"] == mlp, p
    assert "decoder (%d layers" % dec in j["stacks"], j["stacks"]
'
pycheck "info: both stacks of t5 and t5-v1_1" "$T/t5.json" "$T/t5-v1_1.json"
PYSCRIPT='
j = load(a[0])
c, d = j["config"], j["decoder_config"]
assert (c["model_type"], c["layers"], d["layers"], c["residual"]) == ("bart", 2, 3, "post-norm"), c
assert c["embed_scale"] == 4 and c["position_offset"] == 2 and c["embedding_norm"] is True, c
assert c["causal"] is False and d["causal"] is True
'
pycheck "info: both stacks of bart" "$T/bart.json"

check "info (table): the decoder's fields are prefixed"
"$CLI" info "$A/t5" >"$T/t5.txt" 2>&1 || fail "info exit $?"
grep -q '^  decoder.causal *true$' "$T/t5.txt" || fail "no decoder.causal line: $(head -c 300 "$T/t5.txt")"

NEED="t5 is an encoder-decoder model"
run_case 1 "$NEED: analyze needs --target" "analyze refuses t5" analyze "$A/t5" --text "a b"
run_case 1 "$NEED: attention needs --target" "attention refuses t5" attention "$A/t5" --tokens 3,4 -o "$T/o/a.npy"
run_case 1 "$NEED: residual needs --target" "residual refuses t5" residual "$A/t5" --tokens 3,4
run_case 1 "$NEED: rollout needs --target" "rollout refuses t5" rollout "$A/t5-v1_1" --tokens 3,4
run_case 1 "$NEED: similarity needs --target" "similarity refuses t5" similarity "$A/t5" --tokens 3,4
run_case 1 "$NEED: contributions needs --target" "contributions refuses t5" contributions "$A/t5" --tokens 3,4
run_case 1 "$NEED: heads needs --target" "heads refuses t5" heads "$A/t5" --probe induction --length 4
run_case 1 "$NEED: weights does not yet read its two stacks" "weights refuses t5" weights "$A/t5"
run_case 1 "bart is an encoder-decoder model: analyze needs --target" "analyze refuses bart" analyze "$A/bart" --tokens 3,4
finish
