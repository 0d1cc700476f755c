#!/bin/sh
# tests/cli/decode.sh CLI — token ids back to text (docs/tokenizers.md,
# "Decoders"; docs/cli.md):
#  - `tokenize --format json` carries "strings", each token's text
#    (ag_tokenizer_token_strings): for GPT-2 they join into the text, for
#    BERT they are the words without "##"; the table formats have the
#    column `string`;
#  - `decode MODEL --tokens LIST` prints the text (GPT-2: the text
#    tokenize was given; BERT: lower-cased, WordPiece cleanup, with or
#    without [CLS]/[SEP] by --skip-special), --format json its
#    {"ids", "text"}, -o a file;
#  - `tokenize --offsets`: each token's span in code points (the Rust
#    library's values on the same files), the columns start, end; a
#    normalizer whose alignment is not tracked (t5's Precompiled on "\r\n")
#    is one stderr line naming it, exit 1;
#  - an id outside the tokenizer, a bad list, a missing option, a ViT
#    folder or a table format decode does not print: one stderr line,
#    exit 1 or 2, nothing written.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
BERT=$ROOT/tests/data/models/tiny-bert VIT=$ROOT/tests/data/models/tiny-vit
need "$GPT2/config.json" "$BERT/vocab.txt"
TEXT="Hello world, café! It's   2024."

# ---- tokenize's strings --------------------------------------------------
runj g.json tokenize "$GPT2" --text "$TEXT" --format json
PYSCRIPT='
d = load(a[0])
assert len(d["strings"]) == len(d["ids"]) == len(d["tokens"]), d
assert "".join(d["strings"]) == a[1], d["strings"]
assert d["strings"][:3] == ["Hello", " world", ","], d["strings"]
assert d["tokens"][1] == "\u0120world", d["tokens"]
' pycheck "tokenize gpt2: the strings join into the text" "$T/g.json" "$TEXT"
runj b.json tokenize "$BERT" --text "Playing, don't!" --format json
PYSCRIPT='
d = load(a[0])
assert d["tokens"] == ["[CLS]", "play", "##ing", ",", "do", "##n", "'"'"'", "t", "!", "[SEP]"], d["tokens"]
assert d["strings"] == ["[CLS]", " play", "ing", ",", " do", "n", " '"'"'", " t", "!", " [SEP]"], d["strings"]
' pycheck "tokenize bert: WordPiece strings" "$T/b.json"
runj b.csv tokenize "$BERT" --text "Playing" --format csv
check "tokenize csv has the string column"
[ "$(sed -n 1p "$T/b.csv")" = "index,id,token,string" ] || fail "$(head -c 200 "$T/b.csv")"
[ "$(sed -n 3p "$T/b.csv")" = '1,3781,"play"," play"' ] || fail "$(head -c 200 "$T/b.csv")"

# ---- tokenize --offsets -------------------------------------------------------
runj go.json tokenize "$GPT2" --text "Hello wörld" --offsets --format json
PYSCRIPT='
d = load(a[0])
assert d["offsets"] == [[0, 5], [5, 7], [7, 9], [9, 11]], d
assert [a[1][s:e] for s, e in d["offsets"]] == ["Hello", " w", "ör", "ld"]
' pycheck "tokenize --offsets gpt2: code-point spans" "$T/go.json" "Hello wörld"
runj bo.json tokenize "$BERT" --text "Héllo, WORLD!" --offsets --format json
PYSCRIPT='
d = load(a[0])
assert d["offsets"] == [[0, 0], [0, 4], [4, 5], [5, 6], [7, 12], [12, 13], [0, 0]], d
' pycheck "tokenize --offsets bert: accents, case, (0, 0) for [CLS]/[SEP]" "$T/bo.json"
runj bo.csv tokenize "$BERT" --text "Héllo" --offsets --format csv
check "tokenize --offsets csv: the columns start, end"
[ "$(sed -n 1p "$T/bo.csv")" = "index,id,token,string,start,end" ] &&
    [ "$(sed -n 3p "$T/bo.csv")" = '1,2625,"hell"," hell",0,4' ] || fail "$(head -c 300 "$T/bo.csv")"
runj noo.json tokenize "$GPT2" --text "Hello" --format json
check "tokenize without --offsets has no offsets"
grep -q offsets "$T/noo.json" && fail "$(cat "$T/noo.json")"
T5=$T/t5
mkdir -p "$T5" && "$PY" "$ROOT/tools/tokenize_ref/materialize.py" "$T" t5 >/dev/null 2>&1
if [ -f "$T5/tokenizer.json" ]; then
    # Rust's values: "½" becomes "1⁄2", every piece of it spans the "½"
    runj t5.json tokenize "$T5" --text "½ x" --offsets --format json
    PYSCRIPT='
d = load(a[0])
assert d["ids"] == [3, 9, 834, 11, 199, 1], d
assert d["offsets"] == [[0, 1], [0, 1], [0, 1], [0, 1], [2, 3], [0, 0]], d
' pycheck "tokenize --offsets t5: an expansion spans its character" "$T/t5.json"
    # "\r\n" is one cluster Precompiled maps whole to one space
    run_case 1 "--offsets: normalizer Precompiled changes this text across characters" \
        "tokenize --offsets: an untracked normalizer is refused" tokenize "$T5" --text "$(printf 'a\r\nb')" --offsets
fi

# ---- decode ----------------------------------------------------------------
IDS=$("$PY" -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$T/g.json")
runj g.txt decode "$GPT2" --tokens "$IDS"
check "decode gpt2 gives the text back"
[ "$(cat "$T/g.txt")" = "$TEXT" ] || fail "$(cat "$T/g.txt")"
runj g2.json decode "$GPT2" --tokens 15496,995,50256 --format json
PYSCRIPT='
d = load(a[0])
assert d == {"ids": [15496, 995, 50256], "text": "Hello world<|endoftext|>"}, d
' pycheck "decode --format json" "$T/g2.json"
runj g3.txt decode "$GPT2" --tokens 15496,995,50256 --skip-special
check "decode --skip-special leaves <|endoftext|> out"
[ "$(cat "$T/g3.txt")" = "Hello world" ] || fail "$(cat "$T/g3.txt")"
BIDS=$("$PY" -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$T/b.json")
runj b.txt decode "$BERT" --tokens "$BIDS"
runj b2.txt decode "$BERT" --tokens "$BIDS" --skip-special
check "decode bert, with and without special tokens"
[ "$(cat "$T/b.txt")" = "[CLS] playing, don ' t! [SEP]" ] || fail "$(cat "$T/b.txt")"
[ "$(cat "$T/b2.txt")" = "playing, don ' t!" ] || fail "$(cat "$T/b2.txt")"
rm -rf "$T/o" && mkdir "$T/o"
runj empty decode "$GPT2" --tokens 15496 -o "$T/o/t.txt"
check "decode -o writes the file, nothing on stdout"
[ "$(cat "$T/o/t.txt")" = "Hello" ] && [ ! -s "$T/empty" ] || fail "$(cat "$T/o/t.txt")"

# ---- errors ------------------------------------------------------------------
run_case 1 "--tokens: id 50257 is not a token of" "decode: an id past the vocabulary" decode "$GPT2" --tokens 1,50257
run_case 2 "--tokens takes comma-separated non-negative ids" "decode: a bad list" decode "$GPT2" --tokens 1,-2
run_case 2 "missing --tokens" "decode: no --tokens" decode "$GPT2"
run_case 2 "missing MODEL" "decode: no MODEL" decode --tokens 1
run_case 2 "is a vit model" "decode on a ViT" decode "$VIT" --tokens 1
run_case 2 "--format takes table, json or jsonl" "decode --format csv" decode "$GPT2" --tokens 1 --format csv
run_case 2 "(did you mean --skip-special?)" "decode option typo" decode "$GPT2" --tokens 1 --skip-specal
KEEP=t.txt run_case 1 "is not a token of" "decode: -o untouched on error" decode "$GPT2" --tokens 99999 -o "$T/o/t.txt"

finish
