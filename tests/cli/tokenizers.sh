#!/bin/sh
# tests/cli/tokenizers.sh CLI — pre-tokenized corpora (--tokens-file) and
# the messages of bad tokenizer files (docs/tokenizers.md).
#  - --tokens-file F: one sequence of ids per line, separated by commas or
#    spaces; blank lines skipped but counted ("text" = 0-based line); the
#    records equal those of --tokens for each line; a bad id, bad syntax or an
#    id outside the vocabulary is one stderr line naming the file and the
#    line, exit 1; a file with no ids, exit 1; attention takes a file of one
#    line only.
#  - a tokenizer.json with an unknown normalizer / pre-tokenizer / model /
#    post-processor type (also inside a Sequence), an invalid regex, merges
#    naming unknown tokens (tokenizer.json or merges.txt), an undefined
#    template token or a broken charsmap: `attngeom tokenize FOLDER --text x`
#    exits 1 with one stderr line naming the file and the component.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"

# expect_fail DESC STATUS NEEDLE... -- CMD... : CMD exits STATUS with exactly
# one stderr line containing every NEEDLE
expect_fail() {
    DESC=$1
    want=$2
    shift 2
    needles=
    while [ "$1" != "--" ]; do
        needles="$needles
$1"
        shift
    done
    shift
    N=$((N + 1))
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    [ "$got" -eq "$want" ] || { fail "exit $got, expected $want: $(cat "$T/err")"; return; }
    [ "$(wc -l <"$T/err")" -eq 1 ] || { fail "stderr is not one line: $(cat "$T/err")"; return; }
    echo "$needles" | while IFS= read -r nd; do
        [ -z "$nd" ] || grep -qF -- "$nd" "$T/err" || echo "$nd"
    done >"$T/missing"
    [ -s "$T/missing" ] && fail "stderr '$(cat "$T/err")' lacks: $(tr '\n' ' ' <"$T/missing")"
}
# same_json DESC A B : two JSON outputs are equal
same_json() {
    DESC=$1
    N=$((N + 1))
    "$PY" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$2" "$3" ||
        fail "$2 and $3 differ"
}

# ---- --tokens-file -------------------------------------------------------------
A="analyze $GPT2 --layers 0 --format json"
printf '818, 262,3290\n\n  40 50\t60 \r\n' >"$T/ok.txt"
DESC="tokens-file runs"
N=$((N + 1))
$CLI $A --tokens-file "$T/ok.txt" >"$T/file.json" || fail "exit $?"
$CLI $A --tokens 818,262,3290 >"$T/l0.json" && $CLI $A --tokens 40,50,60 >"$T/l2.json" || fail "--tokens"
"$PY" - "$T/file.json" "$T/l0.json" "$T/l2.json" <<'EOF' || fail "records differ from --tokens"
import json, sys
f, a, b = (json.load(open(p)) for p in sys.argv[1:])
def recs(j):
    return j["records"] if isinstance(j, dict) else j
want = [dict(r, text=0) for r in recs(a)] + [dict(r, text=2) for r in recs(b)]
got = recs(f)
sys.exit(0 if got == want else 1)
EOF
printf '818 262 3290\n' | $CLI $A --tokens-file - >"$T/stdin.json" || fail "stdin"
$CLI $A --tokens 818,262,3290 | "$PY" -c 'import json,sys; j=json.load(sys.stdin); r=j["records"] if isinstance(j,dict) else j; [x.__setitem__("text",0) for x in r]; j["settings"]["texts"][0]["text"]=0; json.dump(j,open(sys.argv[1],"w"))' "$T/l0t.json"
same_json "tokens-file from standard input" "$T/stdin.json" "$T/l0t.json"

printf '1,2\n3,x4\n' >"$T/syntax.txt"
expect_fail "tokens-file: bad syntax" 1 "$T/syntax.txt" "line 2" "'x4'" -- $CLI $A --tokens-file "$T/syntax.txt"
printf '1 2,\n' >"$T/comma.txt"
expect_fail "tokens-file: trailing comma" 1 "$T/comma.txt" "line 1" "comma" -- $CLI $A --tokens-file "$T/comma.txt"
printf '1,,2\n' >"$T/comma2.txt"
expect_fail "tokens-file: empty field" 1 "$T/comma2.txt" "line 1" -- $CLI $A --tokens-file "$T/comma2.txt"
printf '1\n\n7 -3\n' >"$T/neg.txt"
expect_fail "tokens-file: negative id" 1 "$T/neg.txt" "line 3" "'-3'" -- $CLI $A --tokens-file "$T/neg.txt"
printf '99999999999\n' >"$T/big.txt"
expect_fail "tokens-file: id above int32" 1 "$T/big.txt" "line 1" "99999999999" -- $CLI $A --tokens-file "$T/big.txt"
printf '1 2\n5 50257\n' >"$T/vocab.txt"
expect_fail "tokens-file: id outside the vocabulary" 1 "$T/vocab.txt" "line 2" "50257" -- \
    $CLI $A --tokens-file "$T/vocab.txt"
# Every line's ids are checked before the first text is computed: a bad id on
# the last of 10,000 lines fails at once, with nothing streamed to stdout.
$PY -c "
import sys
with open(sys.argv[1], 'w') as f:
    f.write('464 3290 318 257 1332\n' * 9999 + '1,2,50257\n')" "$T/late.txt"
for cmd in analyze residual rollout similarity; do
    expect_fail "$cmd --tokens-file: a bad id on line 10000 fails before any text" 1 "$T/late.txt" \
        "line 10000" "50257" -- $CLI $cmd "$GPT2" --tokens-file "$T/late.txt" --format jsonl
    [ ! -s "$T/out" ] || fail "$(wc -l <"$T/out") lines on stdout before the failure"
done
: >"$T/empty.txt"
expect_fail "tokens-file: empty file" 1 "$T/empty.txt" "no token ids" -- $CLI $A --tokens-file "$T/empty.txt"
printf '\n  \n\t\n' >"$T/blank.txt"
expect_fail "tokens-file: blank lines only" 1 "$T/blank.txt" "no token ids" -- $CLI $A --tokens-file "$T/blank.txt"
expect_fail "tokens-file: missing file" 1 "$T/none.txt" -- $CLI $A --tokens-file "$T/none.txt"
expect_fail "tokens-file with --tokens" 2 "--tokens-file" -- $CLI $A --tokens-file "$T/ok.txt" --tokens 1
expect_fail "attention: a tokens-file of two lines, -o without {i}" 2 "$T/a.npy" "holds 2 texts: put {i} in it" -- \
    $CLI attention "$GPT2" --tokens-file "$T/ok.txt" -o "$T/a.npy"
printf '818 262 3290\n' >"$T/one.txt"
DESC="attention: a tokens-file of one line = --tokens"
N=$((N + 1))
$CLI attention "$GPT2" --tokens-file "$T/one.txt" -o "$T/a1.npy" && $CLI attention "$GPT2" --tokens 818,262,3290 -o "$T/a2.npy" &&
    cmp -s "$T/a1.npy" "$T/a2.npy" || fail "different arrays"
for cmd in residual rollout; do
    DESC="$cmd --tokens-file"
    N=$((N + 1))
    $CLI $cmd "$GPT2" --layers 0 --tokens-file "$T/ok.txt" --format json >"$T/$cmd.json" || fail "exit $?"
    "$PY" -c 'import json, sys; sys.exit({r["text"] for r in json.load(open(sys.argv[1]))["records"]} != {0, 2})' \
        "$T/$cmd.json" || fail "records are not for lines 0 and 2"
done

# ---- bad tokenizer files: one line naming the file and the component ---------
"$PY" - "$T" <<'EOF' || { echo "tokenizers.sh: could not make test folders" >&2; exit 1; }
import base64, json, os, sys
vocab = {"a": 0, "b": 1, "ab": 2, "<unk>": 3}
base = {"model": {"type": "BPE", "vocab": vocab, "merges": ["a b"], "unk_token": "<unk>"}}
seq_a = {"Sequence": {"id": "A", "type_id": 0}}
cases = {
    "norm_type": {"normalizer": {"type": "Fancy"}},
    "norm_nested": {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Fancy"}]}},
    "norm_regex": {"normalizer": {"type": "Replace", "pattern": {"Regex": "(a"}, "content": "b"}},
    "pre_type": {"pre_tokenizer": {"type": "Fancy"}},
    "pre_nested": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "Fancy"}]}},
    "pre_regex": {"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[a"}, "behavior": "Isolated"}},
    "model_type": {"model": {"type": "Fancy", "vocab": vocab}},
    "merges_unknown": {"model": {"type": "BPE", "vocab": vocab, "merges": ["a c"]}},
    "merges_result": {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}},
    "post_type": {"post_processor": {"type": "Fancy"}},
    "post_nested": {"post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "Fancy"}]}},
    "post_template": {"post_processor": {"type": "TemplateProcessing", "special_tokens": {},
                                         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, seq_a]}},
    "charsmap_base64": {"normalizer": {"type": "Precompiled", "precompiled_charsmap": "!!!"}},
    "charsmap_trie": {"normalizer": {"type": "Precompiled",
                                     "precompiled_charsmap": base64.b64encode(b"\x10\x00\x00\x00abc").decode()}},
}
for name, parts in cases.items():
    os.makedirs(os.path.join(sys.argv[1], name))
    with open(os.path.join(sys.argv[1], name, "tokenizer.json"), "w") as f:
        json.dump(dict(base, **parts), f)
os.makedirs(os.path.join(sys.argv[1], "slow_merges"))
with open(os.path.join(sys.argv[1], "slow_merges", "vocab.json"), "w") as f:
    json.dump(vocab, f)
with open(os.path.join(sys.argv[1], "slow_merges", "merges.txt"), "w") as f:
    f.write("#version: 0.2\na b\na c\n")
EOF
bad_file() {
    expect_fail "bad tokenizer: $1" 1 "$T/$1/tokenizer.json" "$2" "$3" -- $CLI tokenize "$T/$1" --text x
}
bad_file norm_type "normalizer" "'Fancy'"
bad_file norm_nested "normalizer" "'Fancy'"
bad_file norm_regex "normalizer Replace" "invalid regex '(a'"
bad_file pre_type "pre_tokenizer" "'Fancy'"
bad_file pre_nested "pre_tokenizer" "'Fancy'"
bad_file pre_regex "pre_tokenizer Split" "invalid regex '[a'"
bad_file model_type "model type" "'Fancy'"
bad_file merges_unknown "model.merges[0]" "'c' is not in the vocabulary"
bad_file merges_result "model.merges[0]" "'ab' is not in the vocabulary"
bad_file post_type "post_processor" "'Fancy'"
bad_file post_nested "post_processor.processors[1]" "'Fancy'"
bad_file post_template "post_processor" "'<s>'"
bad_file charsmap_base64 "normalizer Precompiled" "precompiled_charsmap"
bad_file charsmap_trie "normalizer Precompiled" "precompiled_charsmap"
expect_fail "bad tokenizer: merges.txt naming an unknown token" 1 "$T/slow_merges/vocab.json + merges.txt" \
    "model.merges[1]" "'c'" -- $CLI tokenize "$T/slow_merges" --text x

# ---- info names the model kind of the tokenizer ---------------------------------
mkdir "$T/uni"
ln -s "$GPT2/config.json" "$T/uni/config.json"
ln -s "$GPT2/model.safetensors" "$T/uni/model.safetensors"
printf '{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]}}' >"$T/uni/tokenizer.json"
DESC="info: Unigram tokenizer"
N=$((N + 1))
$CLI info "$T/uni" --format json | "$PY" -c 'import json, sys; sys.exit(json.load(sys.stdin)["tokenizer"] != "Unigram")' ||
    fail "info does not say Unigram"

finish
