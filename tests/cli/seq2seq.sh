#!/bin/sh
# tests/cli/seq2seq.sh CLI — encoder–decoder folders (issue 30) in the CLI:
# `info` describes both stacks of the t5, t5-v1_1 and bart test folders;
# `analyze` and `attention` run them with a target (--target-tokens
# verbatim, --target tokenized and shifted right: the same arrays as the
# shifted ids given verbatim; t5-v1_1's and whisper-seq2seq's own
# tokenizers give the Rust library's ids, Whisper's --target the labels
# less their last; --target-file paired with --text-file or --audio-file),
# their records carry "stack" and --aggregate groups by it, also under
# --by layer (the arrays against the float64 references:
# tests/ref/check_seq2seq.py); rollout, similarity and residual run them
# with a target, weights and heads without one (each stack's records);
# every other command that runs one sequence refuses them, and so do the pairs that do
# not go together (a target on a model of one stack, no target, both
# target options, a target with a corpus, linear attention), each
# with one line, exit 1 (2 for a usage error), nothing on stdout, no
# output file. Run from the repository root.

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
run_case 1 "$NEED: analyze needs --target T or --target-tokens" "analyze refuses t5 without a target" analyze "$A/t5" --text "a b"
run_case 1 "$NEED: attention needs --target T or --target-tokens" "attention refuses t5 without a target" attention "$A/t5" --tokens 3,4 -o "$T/o/a.npy"
TGT="--target-tokens 0,4,19"
run_case 1 "--target needs an encoder-decoder model: a t5, bart or whisper folder" "a target on a model of one stack" analyze "$A/roberta" --tokens 3,4 $TGT
run_case 1 "--decoder, --cross, --decoder-hidden, --decoder-scores and --cross-scores need an encoder-decoder model" "--cross on a model of one stack" attention "$A/roberta" --tokens 3,4 -o "$T/o/a.npy" --cross "$T/o/c.npy"
run_case 2 "give one of --target, --target-tokens and --target-file" "both target options" analyze "$A/t5" --tokens 3,4 $TGT --target "x"
run_case 1 "token id 99 at position 1 is outside the vocabulary" "a target id outside the decoder's vocabulary" analyze "$A/t5" --tokens 3,4 --target-tokens 0,99
printf '3,4\n5,6\n' >"$T/two.txt"
run_case 1 "--target pairs with one source" "a target with a corpus of two" analyze "$A/t5" --tokens-file "$T/two.txt" $TGT
run_case 1 "--decoder, --cross, --decoder-hidden, --decoder-scores and --cross-scores need an encoder-decoder model" "--cross-scores on a model of one stack" attention "$A/roberta" --tokens 3,4 -o "$T/o/a.npy" --cross-scores "$T/o/c.npy"
# --scores (the encoder's), --decoder-scores, --cross-scores: each stack's
# pre-softmax scores in its array's shape, softmax(S) its attention, -inf
# exactly above the decoder's diagonal (the values against the float64
# reference: tests/ref/check_seq2seq.py)
check "attention --scores, --decoder-scores, --cross-scores on t5"
"$CLI" attention "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --precision f64 -o "$T/sa.npy" --decoder "$T/sd.npy" --cross "$T/sc.npy" \
    --scores "$T/ss.npy" --decoder-scores "$T/sds.npy" --cross-scores "$T/scs.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
PYSCRIPT='
import numpy as np
for p, s, shape in ((a[0], a[1], (2, 3, 5, 5)), (a[2], a[3], (2, 3, 3, 3)), (a[4], a[5], (2, 3, 3, 5))):
    P, S = np.load(p), np.load(s)
    assert S.shape == shape and P.shape == shape, (s, S.shape)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    d = np.abs(e / e.sum(axis=-1, keepdims=True) - P).max()
    assert d <= 1e-12, (s, d)
    hidden = np.isneginf(S)
    want = np.triu(np.ones(shape[2:], bool), 1) if s == a[3] else np.zeros(shape[2:], bool)
    assert (hidden == want).all() and np.isfinite(S[~hidden]).all(), s
'
pycheck "the scores of each stack are its attention before the softmax" "$T/sa.npy" "$T/ss.npy" "$T/sd.npy" "$T/sds.npy" "$T/sc.npy" "$T/scs.npy"
# a normaliser or temperature on a pair: each stack's rows (a cross row over
# the sources) under it, from the same scores: attention --normalizer
# sparsemax writes sparsemax of those rows (Martins & Astudillo 2016,
# Algorithm 1, by numpy here), analyze --temperature 2 measures softmax(S/2)
check "attention --normalizer sparsemax and analyze --temperature 2 on t5"
"$CLI" attention "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --precision f64 --normalizer sparsemax \
    -o "$T/na.npy" --decoder "$T/nd.npy" --cross "$T/nc.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" analyze "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --precision f64 --temperature 2 \
    --metrics entropy_mean --format json >"$T/nt.json" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
PYSCRIPT='
import numpy as np
def sparsemax(z):
    fin = np.isfinite(z)
    s = np.sort(z[fin])[::-1]
    cs = np.cumsum(s) - 1
    k = int(np.sum(np.arange(1, s.size + 1) * s > cs))
    out = np.zeros_like(z)
    out[fin] = np.maximum(z[fin] - cs[k - 1] / k, 0)
    return out
def entropy(P):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(P > 0, -P * np.log(P), 0).sum(-1).mean()
T2 = []
for p, s in ((a[0], a[1]), (a[2], a[3]), (a[4], a[5])):
    P, S = np.load(p), np.load(s)
    want = np.apply_along_axis(sparsemax, -1, S)
    assert np.abs(P - want).max() <= 1e-12 and (P == 0).any(), (p, np.abs(P - want).max())
    e = np.exp(S / 2 - (S / 2).max(axis=-1, keepdims=True))
    T2.append(e / e.sum(axis=-1, keepdims=True))
# pass order: the encoder layers, then per decoder layer its self and cross heads
want = [A for A in T2[0]] + [A for l in range(T2[1].shape[0]) for A in (T2[1][l], T2[2][l])]
want = [h for A in want for h in A]
recs = records(a[6])
assert len(recs) == len(want), len(recs)
for r, A in zip(recs, want):
    assert r["temperature"] == 2 and abs(r["entropy_mean"] - entropy(A)) < 1e-12, r
'
pycheck "sparsemax and softmax(S/2) of each stack's scores" "$T/na.npy" "$T/ss.npy" "$T/nd.npy" "$T/sds.npy" "$T/nc.npy" "$T/scs.npy" "$T/nt.json"
run_case 1 "linear attention is not taken by an encoder-decoder model" "analyze --normalizer linear on bart" analyze "$A/bart" --tokens 3,4 --target-tokens 2,4,19 --normalizer linear
run_case 1 "no tokenizer files" "--target on a folder without a tokenizer" analyze "$A/t5" --tokens 3,4 --target "a b"

# --target TEXT = [decoder_start_token_id] + labels[:-1] given verbatim: a
# copy of the t5 folder with a word-level tokenizer that ends a text with </s>
mkdir "$T/t5tok"
for f in "$A"/t5/*; do ln -s "$f" "$T/t5tok/"; done
cat >"$T/t5tok/tokenizer.json" <<'EOF2'
{"version": "1.0", "truncation": null, "padding": null,
 "added_tokens": [
  {"id": 0, "content": "<pad>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
 "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
 "post_processor": {"type": "TemplateProcessing",
  "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
  "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
  "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
 "decoder": null,
 "model": {"type": "WordLevel", "vocab": {"<pad>": 0, "</s>": 1, "<unk>": 2, "a": 3, "b": 4, "c": 5, "d": 6, "e": 7}, "unk_token": "<unk>"}}
EOF2
check "--target TEXT: tokenized, then shifted right after decoder_start_token_id 0"
"$CLI" attention "$T/t5tok" --text "a b c" --target "d e" -o "$T/e1.npy" --decoder "$T/d1.npy" --cross "$T/c1.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$T/t5tok" --tokens 3,4,5,1 --target-tokens 0,6,7 -o "$T/e2.npy" --decoder "$T/d2.npy" --cross "$T/c2.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
for k in e d c; do cmp -s "$T/${k}1.npy" "$T/${k}2.npy" || fail "$k: --target 'd e' differs from --target-tokens 0,6,7"; done
"$CLI" attention "$T/t5tok" --tokens 3,4,5,1 --target-tokens 6,7,1 -o "$T/e3.npy" --cross "$T/c3.npy" 2>"$T/err" || fail "exit $?"
cmp -s "$T/c1.npy" "$T/c3.npy" && fail "the unshifted labels give the same cross-attention: the check cannot tell"

# --target-file: line k the target of source line k (blank source lines
# skipped, their target lines unread); each text's arrays are those of a
# run on that one pair
printf 'a b\n\nb c\nc d e\n' >"$T/src.txt"
printf 'd e\nunread\ne\nd\n' >"$T/tgt.txt"
check "--target-file: text 3's arrays are those of --text 'c d e' --target d"
"$CLI" attention "$T/t5tok" --text-file "$T/src.txt" --target-file "$T/tgt.txt" -o "$T/fa_{i}.npy" --cross "$T/fc_{i}.npy" --decoder-hidden "$T/fh_{i}.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$T/t5tok" --text "c d e" --target d -o "$T/fa.npy" --cross "$T/fc.npy" --decoder-hidden "$T/fh.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
for k in fa fc fh; do cmp -s "$T/${k}_3.npy" "$T/$k.npy" || fail "$k: text 3 differs from its pair run alone"; done
cmp -s "$T/fc_0.npy" "$T/fc.npy" && fail "text 0 equals text 3: the check cannot tell"
printf 'd e\nx\n\nd\n' >"$T/tgt_blank.txt"
run_case 1 "line 3 is blank: no target" "--target-file: a blank target line" analyze "$T/t5tok" --text-file "$T/src.txt" --target-file "$T/tgt_blank.txt"
printf 'd e\nx\ne\n' >"$T/tgt_short.txt"
run_case 1 "3 lines: no target for source line 4" "--target-file: shorter than the sources" analyze "$T/t5tok" --text-file "$T/src.txt" --target-file "$T/tgt_short.txt"
printf 'd e\nx\ne\nd\nextra\n' >"$T/tgt_long.txt"
run_case 1 "--target-file $T/tgt_long.txt: line 5 has no source: the last of --text-file $T/src.txt is on line 4" "--target-file: longer than the sources" analyze "$T/t5tok" --text-file "$T/src.txt" --target-file "$T/tgt_long.txt"
run_case 2 "--cross $T/o/c.npy names one file and the input holds 3 texts" "--target-file: --cross without {i}" attention "$T/t5tok" --text-file "$T/src.txt" --target-file "$T/tgt.txt" -o "$T/o/a_{i}.npy" --cross "$T/o/c.npy"
run_case 2 "--target-file pairs with --text-file, --tokens-file or --audio-file" "--target-file with one source" analyze "$T/t5tok" --text "a" --target-file "$T/tgt.txt"

# BART: labels <s> ... </s> (ids 0 and 2), decoder_start_token_id 2 (</s>)
mkdir "$T/barttok"
for f in "$A"/bart/*; do ln -s "$f" "$T/barttok/"; done
sed -e 's/"<pad>": 0, "<\/s>": 1,/"<s>": 0, "<pad>": 1, "<\/s>": 2,/' \
    -e 's/"id": 0, "content": "<pad>"/"id": 0, "content": "<s>"/' \
    -e 's/"id": 1, "content": "<\/s>"/"id": 2, "content": "<\/s>"/' \
    -e 's/"ids": \[1\]/"ids": [2]/' \
    -e 's/"<unk>": 2,/"<unk>": 8,/' \
    -e 's/"single": \[{"Sequence"/"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence"/' \
    -e 's/"special_tokens": {/"special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, /' \
    "$T/t5tok/tokenizer.json" >"$T/barttok/tokenizer.json"
check "--target TEXT on bart: <s> d e </s> shifted right after </s> = 2, 0, 6, 7"
"$CLI" tokenize "$T/barttok" --text "d e" --format tsv >"$T/bt.tsv" 2>"$T/err" || fail "tokenize: $(head -c 300 "$T/err")"
[ "$(cut -f2 "$T/bt.tsv" | tail -n +2 | tr '\n' ,)" = "0,6,7,2," ] || fail "the bart test tokenizer gives $(cut -f2 "$T/bt.tsv" | tr '\n' ,)"
"$CLI" attention "$T/barttok" --tokens 3,4,5,2 --target "d e" -o "$T/be1.npy" --cross "$T/bc1.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$T/barttok" --tokens 3,4,5,2 --target-tokens 2,0,6,7 -o "$T/be2.npy" --cross "$T/bc2.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
cmp -s "$T/bc1.npy" "$T/bc2.npy" || fail "--target 'd e' differs from --target-tokens 2,0,6,7"

# t5-v1_1's own tokenizer (a Unigram in t5-small's layout, template "$A
# </s>"): its ids are the Rust tokenizers library's (Node binding, by hand:
# tools/tokenize_ref/rust_vocab.mjs), and --target is [0] + labels[:-1]
# (the golden case T5V11.target.text runs the same pair)
check "t5-v1_1: tokenize gives the Rust library's ids; --target equals its shifted ids"
for pair in "translate: the cat sat on the mat.|47,46,30,31,32,33,30,34,39,1," \
            "die katze sat auf der mat|41,42,32,44,45,34,1," "the  cat|30,31,1," "xyz|3,27,28,29,1,"; do
    text=${pair%%|*}
    got=$("$CLI" tokenize "$A/t5-v1_1" --text "$text" --format tsv 2>"$T/err" | tail -n +2 | cut -f2 | tr '\n' ,)
    [ "$got" = "${pair#*|}" ] || fail "'$text': $got, the Rust library ${pair#*|} ($(head -c 200 "$T/err"))"
done
"$CLI" analyze "$A/t5-v1_1" --text "translate: the cat sat on the mat." --target "die katze sat auf der mat" --format jsonl --metrics sigma_max,cross >"$T/v1.jsonl" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" analyze "$A/t5-v1_1" --tokens 47,46,30,31,32,33,30,34,39,1 --target-tokens 0,41,42,32,44,45,34 --format jsonl --metrics sigma_max,cross >"$T/v2.jsonl" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
sed 1d "$T/v1.jsonl" | sed 's/,"input":[^}]*//' >"$T/v1b.jsonl"
sed 1d "$T/v2.jsonl" | sed 's/,"input":[^}]*//' >"$T/v2b.jsonl"
[ "$(wc -l <"$T/v1b.jsonl")" -eq 24 ] || fail "not 24 records (6 encoder, 9 decoder, 9 cross): $(head -c 300 "$T/v1b.jsonl")"
cmp -s "$T/v1b.jsonl" "$T/v2b.jsonl" || fail "--target differs from --target-tokens 0,41,42,32,44,45,34: $(diff "$T/v1b.jsonl" "$T/v2b.jsonl" | head -c 300)"

# Whisper's decoder (whisper-seq2seq: 2 encoder, 3 decoder layers, 2 heads;
# 19 feature frames: 10 source positions): --features with --target-tokens
# (the prompt verbatim); --target TEXT refused naming --target-tokens; a
# folder without decoder weights named; without a target the encoder alone,
# its -o the same bytes as the pair's
WS="$A/whisper-seq2seq"
WF="$ROOT/tests/data/archref/whisper-seq2seq/features.npy"
WT="--target-tokens 45,12,10,5,4,7,27"
check "whisper: attention with a target writes the three kinds and both hidden states"
"$CLI" attention "$WS" --features "$WF" $WT -o "$T/we.npy" --decoder "$T/wd.npy" --cross "$T/wc.npy" --hidden "$T/wh.npy" --decoder-hidden "$T/whd.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$WS" --features "$WF" -o "$T/we0.npy" --hidden "$T/wh0.npy" 2>"$T/err" || fail "encoder alone: exit $?: $(head -c 300 "$T/err")"
cmp -s "$T/we.npy" "$T/we0.npy" || fail "the pair's encoder attention differs from the encoder run alone"
cmp -s "$T/wh.npy" "$T/wh0.npy" || fail "the pair's encoder hidden states differ from the encoder run alone"
PYSCRIPT='
import numpy as np
e, d, c, h, hd = (np.load(p) for p in a[:5])
assert (e.shape, d.shape, c.shape, h.shape, hd.shape) == ((2, 2, 10, 10), (3, 2, 7, 7), (3, 2, 7, 10), (3, 10, 16), (4, 7, 16)), (e.shape, d.shape, c.shape, h.shape, hd.shape)
assert np.allclose(d.sum(-1), 1, atol=1e-12) and np.allclose(c.sum(-1), 1, atol=1e-12)
assert np.all(np.triu(d, 1) == 0), "decoder self-attention is causal"
assert c.std(-1).min() > 1e-3, "cross-attention rows far from uniform"
'
pycheck "whisper: shapes, causal decoder, rows of probability" "$T/we.npy" "$T/wd.npy" "$T/wc.npy" "$T/wh.npy" "$T/whd.npy"
runj ws.json analyze "$WS" --features "$WF" $WT --format json --metrics sigma_max --precision f64
PYSCRIPT='
r = records(a[0])
assert [x["stack"] for x in r] == ["encoder"] * 4 + (["decoder"] * 2 + ["cross"] * 2) * 3, [x["stack"] for x in r]
for x in r:
    assert (x["rows"], x["cols"]) == {"encoder": (10, 10), "decoder": (7, 7), "cross": (7, 10)}[x["stack"]], x
'
pycheck "whisper: analyze gives one record per (stack, layer, head)" "$T/ws.json"
check "whisper: --audio with a target gives the arrays of the features it saves"
"$CLI" attention "$WS" --audio "$ROOT/tests/data/audio/chirp_1s.wav" --frames 20 $WT -o "$T/wa1.npy" --cross "$T/wc1.npy" --save-input "$T/wf.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$WS" --features "$T/wf.npy" $WT -o "$T/wa2.npy" --cross "$T/wc2.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
for k in wa wc; do cmp -s "$T/${k}1.npy" "$T/${k}2.npy" || fail "$k: --audio differs from its saved features"; done
cmp -s "$T/wc1.npy" "$T/wc.npy" && fail "the chirp's cross-attention equals the reference features': the check cannot tell"
# --target TEXT on Whisper: the folder's byte-level BPE (its template
# "<|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|> $A
# <|endoftext|>", ids 45 43 44 47 ... 46) gives the labels; HF's
# fine-tuning collator drops their leading decoder start (45) and
# shift_tokens_right puts it back: the labels less their last id. The ids
# below are the Rust tokenizers library's (Node binding, by hand:
# tools/tokenize_ref/rust_vocab.mjs on the folder).
check "whisper: tokenize gives the Rust library's ids"
for pair in "the cat sat on the mat.|45,43,44,47,19,30,34,36,38,31,40,27,46," \
            " a cat, on a mat|45,43,44,47,41,34,28,38,41,40,46," "zz.on|45,43,44,47,25,25,27,42,46,"; do
    text=${pair%%|*}
    got=$("$CLI" tokenize "$WS" --text "$text" --format tsv 2>"$T/err" | tail -n +2 | cut -f2 | tr '\n' ,)
    [ "$got" = "${pair#*|}" ] || fail "'$text': $got, the Rust library ${pair#*|} ($(head -c 200 "$T/err"))"
done
check "whisper: decode gives the Rust library's text, with and without the special tokens"
got=$("$CLI" decode "$WS" --tokens 45,43,44,47,19,30,34,46 2>"$T/err")
[ "$got" = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>the cat<|endoftext|>" ] || fail "decode: '$got' $(head -c 200 "$T/err")"
got=$("$CLI" decode "$WS" --tokens 45,43,44,47,19,30,34,46 --skip-special 2>"$T/err")
[ "$got" = "the cat" ] || fail "decode --skip-special: '$got' $(head -c 200 "$T/err")"
check "whisper: --target TEXT runs the labels less their last id (the records and arrays of --target-tokens)"
WTXT="the cat sat on the mat."
"$CLI" analyze "$WS" --features "$WF" --target "$WTXT" --format jsonl --metrics sigma_max,cross --precision f64 >"$T/wt1.jsonl" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" analyze "$WS" --features "$WF" --target-tokens 45,43,44,47,19,30,34,36,38,31,40,27 --format jsonl --metrics sigma_max,cross --precision f64 >"$T/wt2.jsonl" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
cmp -s "$T/wt1.jsonl" "$T/wt2.jsonl" || fail "--target differs from --target-tokens 45,43,44,47,19,30,34,36,38,31,40,27"
grep -q '"stack":"cross","layer":2,"head":1,"rows":12,"cols":10' "$T/wt1.jsonl" || fail "no record of 12 target rows: $(head -c 300 "$T/wt1.jsonl")"
"$CLI" attention "$WS" --features "$WF" --target "$WTXT" -o "$T/wte1.npy" --cross "$T/wtc1.npy" --decoder-hidden "$T/wth1.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
"$CLI" attention "$WS" --features "$WF" --target-tokens 45,43,44,47,19,30,34,36,38,31,40,27 -o "$T/wte2.npy" --cross "$T/wtc2.npy" --decoder-hidden "$T/wth2.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
for k in wte wtc wth; do cmp -s "$T/${k}1.npy" "$T/${k}2.npy" || fail "$k: --target differs from its ids given verbatim"; done
"$CLI" attention "$WS" --features "$WF" --target-tokens 45,45,43,44,47,19,30,34,36,38,31,40,27 --cross "$T/wtc3.npy" -o "$T/wte3.npy" 2>"$T/err" || fail "exit $?"
cmp -s "$T/wtc1.npy" "$T/wtc3.npy" && fail "the shift without the collator's drop gives the same cross-attention: the check cannot tell"
mkdir "$T/wsnotok"
for f in config.json model.safetensors; do ln -s "$WS/$f" "$T/wsnotok/"; done
run_case 1 "$T/wsnotok: --target TEXT is tokenized by the folder's tokenizer and it has no tokenizer files (tokenizer.json, vocab.json + merges.txt, or vocab.txt): give the decoder's ids with --target-tokens IDS" "whisper --target TEXT without a tokenizer" analyze "$T/wsnotok" --features "$WF" --target "a b"
# --audio-file with --target-file: line k of the targets is the target of
# the sound file on line k of the list (a blank list line skipped, its
# target line unread); each file's arrays are those of its pair run alone;
# a target file that ends early or runs past the list is refused naming
# both files
AU=$ROOT/tests/data/audio
printf '%s\n\n%s\n' "$AU/chirp_1s.wav" "$AU/tone_float.wav" >"$T/wl.txt"
printf 'the cat sat on the mat.\nunread\nat\n' >"$T/wtg.txt"
check "whisper: --audio-file with --target-file pairs line by line"
"$CLI" attention "$WS" --audio-file "$T/wl.txt" --target-file "$T/wtg.txt" --frames 20 -o "$T/wla_{i}.npy" --cross "$T/wlc_{i}.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
for i in 0 2; do
    if [ $i = 0 ]; then wav=$AU/chirp_1s.wav tg=$WTXT; else wav=$AU/tone_float.wav tg=at; fi
    "$CLI" attention "$WS" --audio "$wav" --target "$tg" --frames 20 -o "$T/wla.npy" --cross "$T/wlc.npy" 2>"$T/err" || fail "exit $?: $(head -c 300 "$T/err")"
    for k in wla wlc; do cmp -s "$T/${k}_$i.npy" "$T/$k.npy" || fail "$k: file $i differs from its pair run alone"; done
done
cmp -s "$T/wlc_0.npy" "$T/wlc_2.npy" && fail "files 0 and 2 give the same cross-attention: the check cannot tell"
runj wl.json analyze "$WS" --audio-file "$T/wl.txt" --target-file "$T/wtg.txt" --frames 20 --metrics sigma_max --format json
PYSCRIPT='
r = records(a[0])
cross = [(x["text"], x["rows"], x["cols"]) for x in r if x["stack"] == "cross"]
assert cross == [(0, 12, 10)] * 6 + [(2, 5, 10)] * 6, cross
'
pycheck "whisper: --audio-file records carry text 0 and 2, each with its target's rows" "$T/wl.json"
printf 'the cat\n\n' >"$T/wtshort.txt"
run_case 1 "--target-file $T/wtshort.txt: 2 lines: no target for source line 3 of --audio-file $T/wl.txt" "whisper: fewer targets than sound files" analyze "$WS" --audio-file "$T/wl.txt" --target-file "$T/wtshort.txt" --frames 20
printf 'a\nb\nc\nd\n' >"$T/wtlong.txt"
run_case 1 "--target-file $T/wtlong.txt: line 4 has no source: the last of --audio-file $T/wl.txt is on line 3" "whisper: more targets than sound files" analyze "$WS" --audio-file "$T/wl.txt" --target-file "$T/wtlong.txt" --frames 20
run_case 1 "--target-tokens runs Whisper's decoder: $ROOT/tests/data/models/tiny-whisper/model.safetensors: tensor 'model.decoder.layers.0.self_attn_layer_norm.weight' not found" "a target on a whisper folder without its decoder" analyze "$ROOT/tests/data/models/tiny-whisper" --audio "$ROOT/tests/data/audio/chirp_1s.wav" --frames 40 $WT
run_case 1 "token id 48 at position 1 is outside the vocabulary (vocab_size = 48)" "whisper: a prompt id outside the decoder's vocabulary" analyze "$WS" --features "$WF" --target-tokens 45,48

# analyze: one record per (stack, layer, head); --aggregate groups by stack
runj t5rec.json analyze "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max,stability,value_norm_mean,score_std,score_asymmetry --precision f64
runj t5agg.json analyze "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --aggregate --by stack
PYSCRIPT='
r = records(a[0])
assert [x["stack"] for x in r] == ["encoder"] * 6 + (["decoder"] * 3 + ["cross"] * 3) * 3, [x["stack"] for x in r]
for x in r:
    want = {"encoder": (5, 5), "decoder": (3, 3), "cross": (3, 5)}[x["stack"]]
    assert (x["rows"], x["cols"]) == want, x
    # family E on the self-attention stacks; null on cross (its keys do not move with X)
    assert x["sigma_max"] > 0 and (x["sensitivity"] is None) == (x["stack"] == "cross"), x
    assert x["value_norm_mean"] > 0 and x["score_std"] > 0, x
    assert (x["score_asymmetry"] is None) == (x["stack"] == "cross"), x
g = records(a[1])
assert [x["stack"] for x in g] == ["encoder", "decoder", "cross"], g
assert [x["n"] for x in g] == [6, 9, 9], g
'
pycheck "analyze on t5-v1_1: stacks, shapes, families E, H and K, --aggregate --by stack" "$T/t5rec.json" "$T/t5agg.json"
# --aggregate --by layer keeps the stacks apart ("stack" implied first):
# one row per (stack, layer), its mean and sample std those numpy computes
# from the records; the same from the `aggregate` command on the record
# file; --by stack,layer names it (the same rows), --by layer on records of
# one stack shows no stack column
runj t5lay.json analyze "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64 --aggregate --by layer
runj t5lay2.json aggregate "$T/t5rec.json" --by layer --format json
runj t5lay3.json analyze "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64 --aggregate --by stack,layer
runj rolay.json analyze "$A/roberta" --tokens 3,4,5,6 --format json --metrics sigma_max --aggregate --by layer
PYSCRIPT='
import numpy as np
r = records(a[0])
g, g2, g3, one = (records(p) for p in a[1:])
want = {}
for x in r:
    want.setdefault((x["stack"], x["layer"]), []).append(x["sigma_max"])
assert [(x["stack"], x["layer"]) for x in g] == list(want), [(x["stack"], x["layer"]) for x in g]
assert len(g) == 8, g  # 2 encoder layers, 3 decoder and 3 cross
for x in g:
    v = np.array(want[(x["stack"], x["layer"])])
    assert x["n"] == v.size == 3, x
    assert abs(x["sigma_max"] - v.mean()) <= 1e-12 * abs(v.mean()), (x, v)
    assert abs(x["sigma_max_std"] - v.std(ddof=1)) <= 1e-12 * v.std(ddof=1) + 1e-15, (x, v)
    assert list(x)[:2] == ["stack", "layer"], list(x)
assert [(x["stack"], x["layer"], x["sigma_max"]) for x in g2] == [(x["stack"], x["layer"], x["sigma_max"]) for x in g], g2
assert g3 == g, g3
assert "stack" not in one[0] and [x["layer"] for x in one] == [0, 1], one
'
pycheck "--aggregate --by layer on a pair: one row per (stack, layer), numpy's mean and std" "$T/t5rec.json" "$T/t5lay.json" "$T/t5lay2.json" "$T/t5lay3.json" "$T/rolay.json"
runj rorec.json analyze "$A/roberta" --tokens 3,4,5,6 --format json --metrics sigma_max
run_case 1 "compare: the records of $T/t5rec.json carry \"stack\" (an encoder-decoder model's) and those of $T/rorec.json do not" "compare --by layer: stacks on one side only" compare "$T/t5rec.json" "$T/rorec.json" --by layer
run_case 1 "$NEED: residual needs --target T or --target-tokens IDS" "residual refuses t5 without a target" residual "$A/t5" --tokens 3,4
# residual on a pair: the encoder's hidden states (L_enc + 1 of n_src rows),
# then the decoder's (L_dec + 1 of n_tgt rows), one pass; --layers selects
# in each stack; Whisper's encoder states are those of its encoder run
# alone; the values against numpy on the exported hidden states:
# tests/ref/check_seq2seq.py
runj t5res.json residual "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --precision f64
runj t5res1.json residual "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --precision f64 --layers 0,2
runj wsres.json residual "$WS" --features "$WF" $WT --format json --metrics sigma_max,mean_cosine
runj wsres0.json residual "$WS" --features "$WF" --format json --metrics sigma_max,mean_cosine
PYSCRIPT='
r = records(a[0])
assert [(x["stack"], x["layer"], x["rows"], x["cols"]) for x in r] == [("encoder", l, 5, 16) for l in range(3)] + [("decoder", l, 3, 16) for l in range(4)], r
assert all(x["head"] == -1 and x["sigma_max"] > 0 and x["res_ratio"] > 0 for x in r), r
one = records(a[1])
assert one == [r[0], r[2], r[3], r[5]], one
w, w0 = records(a[2]), records(a[3])
assert [(x["stack"], x["rows"]) for x in w] == [("encoder", 10)] * 3 + [("decoder", 7)] * 4, w
assert [(x["sigma_max"], x["mean_cosine"]) for x in w[:3]] == [(x["sigma_max"], x["mean_cosine"]) for x in w0], (w, w0)
'
pycheck "residual on t5-v1_1 and whisper: the hidden states of each stack, --layers in each" "$T/t5res.json" "$T/t5res1.json" "$T/wsres.json" "$T/wsres0.json"
run_case 1 "--layers 3 is out of range: there are 3 layers (0-2)" "residual --layers past the encoder's states" residual "$A/t5-v1_1" --tokens 3,4 $TGT --layers 3
run_case 2 "give one of --target, --target-tokens and --target-file" "residual: both target options" residual "$A/t5" --tokens 3,4 $TGT --target x
printf 'a b c\nc d\n' >"$T/rsrc.txt"
printf 'd e\ne\n' >"$T/rtgt.txt"
runj rescorp.json residual "$T/t5tok" --text-file "$T/rsrc.txt" --target-file "$T/rtgt.txt" --format json --metrics sigma_max
runj resone.json residual "$T/t5tok" --text "c d" --target e --format json --metrics sigma_max
PYSCRIPT='
c, one = records(a[0]), records(a[1])
assert [x["text"] for x in c] == [0] * 6 + [1] * 6, c
assert [{k: v for k, v in x.items() if k != "text"} for x in c[6:]] == one, (c, one)
assert [x["rows"] for x in c[:6]] == [4] * 3 + [3] * 3, c
'
pycheck "residual --text-file --target-file: each text the run of its pair alone" "$T/rescorp.json" "$T/resone.json"
run_case 1 "$NEED: rollout needs --target T or --target-tokens IDS" "rollout refuses t5 without a target" rollout "$A/t5-v1_1" --tokens 3,4
# rollout on a pair: the encoder's rollout (2 layers), the decoder's (3),
# then the cross composition at the decoder's last layer, [n_tgt, n_src];
# --layers selects in each stack (the cross record with the decoder's
# last layer); the values against numpy: tests/ref/check_seq2seq.py
runj t5roll.json rollout "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max,entropy_mean --precision f64
runj t5roll1.json rollout "$A/t5-v1_1" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64 --layers 1
runj t5roll2.json rollout "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64
runj t5roll3.json rollout "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64 --layers 1
PYSCRIPT='
r = records(a[0])
assert [(x["stack"], x["layer"]) for x in r] == [("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1), ("decoder", 2), ("cross", 2)], r
for x in r:
    assert x["head"] == -1 and (x["rows"], x["cols"]) == {"encoder": (5, 5), "decoder": (3, 3), "cross": (3, 5)}[x["stack"]], x
    assert x["sigma_max"] > 0 and x["entropy_mean"] > 0, x
one = records(a[1])
assert [(x["stack"], x["layer"]) for x in one] == [("encoder", 1), ("decoder", 1)], one
assert [x["sigma_max"] for x in one] == [r[1]["sigma_max"], r[3]["sigma_max"]], one
t5, t5one = records(a[2]), records(a[3])
assert [(x["stack"], x["layer"]) for x in t5] == [("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1), ("cross", 1)], t5
assert t5one == t5[1:2] + t5[3:], t5one
'
pycheck "rollout on t5-v1_1 and t5: encoder, decoder and cross records, --layers in each stack" "$T/t5roll.json" "$T/t5roll1.json" "$T/t5roll2.json" "$T/t5roll3.json"
run_case 1 "--layers 2 is out of range: there are 2 layers (0-1)" "rollout --layers past the encoder's" rollout "$A/t5-v1_1" --tokens 3,4 $TGT --layers 2
run_case 1 "t5 is an encoder-decoder model: its rollout matrices are not written (the records are)" "rollout -o on t5" rollout "$A/t5" --tokens 3,4 $TGT -o "$T/o/r.npy"
# under a temperature: the same records of every stack, at T = 2
runj t5roll4.json rollout "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --metrics sigma_max --precision f64 --temperature 2
PYSCRIPT='
one, two = records(a[0]), records(a[1])
key = lambda x: (x["stack"], x["layer"], x["rows"], x["cols"])
assert [key(x) for x in two] == [key(x) for x in one], two
assert all(x["temperature"] == 2 for x in two) and all(x["sigma_max"] > 0 for x in two), two
assert any(x["sigma_max"] != y["sigma_max"] for x, y in zip(one, two)), "T = 2 changes nothing"
'
pycheck "rollout --temperature 2 on t5: every stack's records at T = 2" "$T/t5roll2.json" "$T/t5roll4.json"
run_case 1 "$NEED: similarity needs --target T or --target-tokens IDS" "similarity refuses t5 without a target" similarity "$A/t5" --tokens 3,4
# similarity on a pair: pairs of heads of one stack only, each with its
# stack (t5: 2 encoder and 2 decoder layers of 3 heads: 15 pairs in each
# of encoder, decoder, cross); the values against numpy:
# tests/ref/check_seq2seq.py
runj t5sim.json similarity "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --precision f64
runj t5sim1.json similarity "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --precision f64 --layers 1 --heads 0,2
PYSCRIPT='
r = records(a[0])
assert [x["stack"] for x in r] == ["encoder"] * 15 + ["decoder"] * 15 + ["cross"] * 15, [x["stack"] for x in r]
assert all(0 < x["js_distance"] < 0.8326 for x in r), r
one = records(a[1])
assert [(x["stack"], x["layer_a"], x["head_a"], x["layer_b"], x["head_b"]) for x in one] == [(s, 1, 0, 1, 2) for s in ("encoder", "decoder", "cross")], one
full = {(x["stack"], x["layer_a"], x["head_a"], x["layer_b"], x["head_b"]): x["js_distance"] for x in r}
assert [x["js_distance"] for x in one] == [full[(s, 1, 0, 1, 2)] for s in ("encoder", "decoder", "cross")], one
'
pycheck "similarity on t5: pairs within each stack, --layers/--heads a sub-selection of each" "$T/t5sim.json" "$T/t5sim1.json"
run_case 1 "-o S.npy is not written for an encoder-decoder model (the records are)" "similarity -o on t5" similarity "$A/t5" --tokens 3,4 $TGT -o "$T/o/s.npy"
runj t5sim2.json similarity "$A/t5" --tokens 3,4,5,6,7 --target-tokens 0,9,10 --format json --precision f64 --normalizer sparsemax
PYSCRIPT='
one, sp = records(a[0]), records(a[1])
key = lambda x: (x["stack"], x["layer_a"], x["head_a"], x["layer_b"], x["head_b"])
assert [key(x) for x in sp] == [key(x) for x in one], sp
assert all(x["normalizer"] == "sparsemax" for x in sp)
assert any(x["js_distance"] != y["js_distance"] for x, y in zip(one, sp)), "sparsemax changes nothing"
'
pycheck "similarity --normalizer sparsemax on t5: the pairs of each stack under it" "$T/t5sim.json" "$T/t5sim2.json"
run_case 1 "$NEED: contributions needs --target" "contributions refuses t5" contributions "$A/t5" --tokens 3,4
# heads on a pair: the probe is the source, and after the decoder start
# token (T5: 0) the target; the scores of the encoder's and the decoder's
# heads are A[i, i - T + 1] over the rows of the second block (the
# decoder's one position later) of the arrays `attention` writes for that
# source and target; cross heads get null scores
runj t5heads.json heads "$T/t5tok" --probe induction --length 3 --format json --precision f64 --seed 4
PYSCRIPT='
import subprocess
j = load(a[0])
ids, start, T = j["settings"]["probe"]["ids"], j["settings"]["probe"]["start"], 3
r = j["records"]
tgt = [0] + ids
subprocess.run([a[1], "attention", a[2], "--tokens", ",".join(map(str, ids)), "--target-tokens", ",".join(map(str, tgt)), "--precision", "f64", "-o", a[3] + "/he.npy", "--decoder", a[3] + "/hd.npy"], check=True)
E, D = np.load(a[3] + "/he.npy"), np.load(a[3] + "/hd.npy")
want = [("encoder", l, h) for l in range(2) for h in range(3)] + [(s, l, h) for l in range(2) for s in ("decoder", "cross") for h in range(3)]
assert [(x["stack"], x["layer"], x["head"]) for x in r] == want, r
for x in r:
    if x["stack"] == "cross":
        assert x["induction_score"] is None and x["induction_baseline"] is None and (x["rows"], x["cols"]) == (len(tgt), len(ids)), x
        continue
    A, s0 = (E, start) if x["stack"] == "encoder" else (D, start + 1)
    M = A[x["layer"], x["head"]]
    rows = range(s0 + T, s0 + 2 * T)
    score = np.mean([M[i, i - T + 1] for i in rows])
    assert abs(x["induction_score"] - score) < 1e-14, (x, score)
    base = np.mean([1 / (i + 1) for i in rows]) if x["stack"] == "decoder" else 1 / len(ids)
    assert abs(x["induction_baseline"] - base) < 1e-15, (x, base)
'
pycheck "heads on t5: the induction scores of the encoder and decoder heads from the arrays, cross null" "$T/t5heads.json" "$CLI" "$T/t5tok" "$T"
# weights on a pair: the encoder's heads, then per decoder layer its self-
# and its cross-attention's (bart: 2 + 3 layers, 4 heads); the values
# against the dense reference: tests/ref/check_weights.py
runj bartw.json weights "$A/bart" --format json --metrics qk_sigma_max,ov_copying_score
runj bartw1.json weights "$A/bart" --format json --metrics qk_sigma_max,ov_copying_score --layers 1 --heads 0,3 -j 2
PYSCRIPT='
r = records(a[0])
want = [("encoder", l, h) for l in range(2) for h in range(4)] + [(s, l, h) for l in range(3) for s in ("decoder", "cross") for h in range(4)]
assert [(x["stack"], x["layer"], x["head"]) for x in r] == want, r
assert all((x["rows"], x["cols"]) == (16, 16) and x["qk_sigma_max"] > 0 for x in r), r
one = records(a[1])
full = {(x["stack"], x["layer"], x["head"]): x for x in r}
assert one == [full[(s, 1, h)] for s in ("encoder", "decoder", "cross") for h in (0, 3)], one
'
pycheck "weights on bart: encoder, decoder and cross heads, --layers/--heads in each stack" "$T/bartw.json" "$T/bartw1.json"
run_case 1 "layers: 2 is outside 0..1" "weights --layers past the encoder's" weights "$A/bart" --layers 2
run_case 1 "bart is an encoder-decoder model: analyze needs --target" "analyze refuses bart" analyze "$A/bart" --tokens 3,4
finish
