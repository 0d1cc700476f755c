#!/bin/sh
# tests/cli/tokenize_corpus.sh CLI — tokenize over a corpus (issue 29,
# item 2; docs/cli.md, "tokenize over a corpus"):
#  - --jsonl F through the real vocabularies of tests/data/vocab/ (Qwen3,
#    Gemma-3, LLaMA-3.1, DeepSeek-V3, o200k; reduced tokenizer.json files,
#    stored xz-compressed):
#    line k of the output holds the ids the Rust `tokenizers` library gives
#    text k (expected.json, computed on the full files), texts with newlines
#    included, and its "tokens" are the vocabulary strings of those ids;
#  - --text-file F: one output line per input line (blank lines too, CRLF
#    ending dropped), each equal to tokenize --text of that line; standard
#    input ('-') gives the same bytes; -o writes the same bytes to a file;
#  - errors name the file and the line: a --jsonl line without a "text"
#    string, invalid JSON, a non-object, invalid UTF-8 (exit 1; -o left
#    unwritten); a corpus without --format jsonl/json, or two inputs, exit 2.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json" tests/data/vocab/qwen3/expected.json.xz

# Every real vocabulary (its tokenizer.json.xz and expected.json.xz written
# out in $T): its expected texts as a --jsonl corpus.
for v in qwen3 gemma3 llama3.1 deepseek-v3 o200k; do
    mkdir "$T/$v.d" && xz -dc "tests/data/vocab/$v/tokenizer.json.xz" >"$T/$v.d/tokenizer.json" &&
        xz -dc "tests/data/vocab/$v/expected.json.xz" >"$T/$v.expected.json" &&
        cp "tests/data/vocab/$v/tokenizer_config.json" "$T/$v.d/" || { echo "$SCRIPT: cannot write out $v" >&2; exit 1; }
    "$PY" -c 'import json,sys
for c in json.load(open(sys.argv[1], encoding="utf-8")):
    print(json.dumps({"text": c["text"]}))' "$T/$v.expected.json" >"$T/$v.jsonl"
    check "$v: --jsonl runs" "$CLI" tokenize "$T/$v.d" --jsonl "$T/$v.jsonl" --format jsonl -o "$T/$v.out"
    PYSCRIPT='
want = load(a[0])
got = [json.loads(l) for l in open(a[1], encoding="utf-8")]
vocab = load(a[2])["model"]["vocab"]
added = {t["id"]: t["content"] for t in load(a[2])["added_tokens"]}
inv = {i: s for s, i in vocab.items()}
inv.update(added)
assert len(got) == len(want) == 219, (len(got), len(want))
for k, (w, g) in enumerate(zip(want, got)):
    assert g["ids"] == w["ids"], (k, w["text"], g["ids"], w["ids"])
    assert g["tokens"] == [inv[i] for i in w["ids"]], (k, g["tokens"])
assert any("\n" in w["text"] for w in want)'
    pycheck "$v: the Rust library's ids, line for line" "$T/$v.expected.json" "$T/$v.out" \
        "$T/$v.d/tokenizer.json"
done

# --text-file: line k is tokenize --text of line k.
printf 'Hello world\n\n  two spaces\r\ncaf\303\251 \344\275\240\345\245\275\nlast' >"$T/c.txt"
check "--text-file runs" "$CLI" tokenize "$GPT2" --text-file "$T/c.txt" --format jsonl -o "$T/c.out"
i=0
for line in 'Hello world' '' '  two spaces' "$(printf 'caf\303\251 \344\275\240\345\245\275')" last; do
    i=$((i + 1))
    "$CLI" tokenize "$GPT2" --text "$line" --format json >"$T/one" 2>&1
    check "--text-file line $i equals --text"
    [ "$(sed -n "${i}p" "$T/c.out")" = "$(cat "$T/one")" ] || fail "$(sed -n "${i}p" "$T/c.out") vs $(cat "$T/one")"
done
check "--text-file: one output line per input line"
[ "$(wc -l <"$T/c.out")" -eq 5 ] || fail "$(wc -l <"$T/c.out") lines"
"$CLI" tokenize "$GPT2" --text-file - --format jsonl <"$T/c.txt" >"$T/c.stdin"
check "--text-file - equals the file" cmp -s "$T/c.out" "$T/c.stdin"

# --jsonl: a text with a newline is one text.
printf '{"text": "a\\nb"}\n' >"$T/nl.jsonl"
"$CLI" tokenize "$GPT2" --jsonl "$T/nl.jsonl" --format jsonl >"$T/nl.out"
"$CLI" tokenize "$GPT2" --text "$(printf 'a\nb')" --format json >"$T/nl.one"
check "--jsonl: a newline inside a text" cmp -s "$T/nl.out" "$T/nl.one"

# Errors: one stderr line naming file and line; no output file.
expect_err() {
    DESC=$1
    want=$2
    needle=$3
    shift 3
    N=$((N + 1))
    rm -f "$T/e.out"
    "$@" >/dev/null 2>"$T/err"
    got=$?
    [ "$got" -eq "$want" ] || { fail "exit $got, expected $want: $(cat "$T/err")"; return; }
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "stderr is not one line: $(cat "$T/err")"
    grep -qF -- "$needle" "$T/err" || fail "no '$needle' in: $(cat "$T/err")"
    [ ! -e "$T/e.out" ] || fail "-o written by a failed run"
}
# A corpus file $T/FILE holding printf's CONTENT, read by OPTION: exit 1,
# the message "FILE: NEEDLE".
bad_corpus() {
    DESC=$1
    option=$2
    file=$3
    printf "$4" >"$T/$file"
    expect_err "$DESC" 1 "$file: $5" \
        "$CLI" tokenize "$GPT2" "$option" "$T/$file" --format jsonl -o "$T/e.out"
}
bad_corpus "--jsonl: no text" --jsonl b1.jsonl '{"text": "fine"}\n{"txt": "x"}\n' \
    'line 2: no "text" string'
bad_corpus "--jsonl: text not a string" --jsonl b2.jsonl '{"text": "fine"}\n{"text": 3}\n' \
    'line 2: no "text" string'
bad_corpus "--jsonl: not an object" --jsonl b3.jsonl '["text"]\n' 'line 1: not a JSON object'
bad_corpus "--jsonl: a blank line" --jsonl b4.jsonl '{"text": "a"}\n\n{"text": "b"}\n' \
    'line 2: invalid JSON'
bad_corpus "--text-file: invalid UTF-8" --text-file b5.txt 'ok\nbad \377 byte\n' \
    'line 2: text: invalid UTF-8 at byte 4'
bad_corpus "--jsonl: invalid UTF-8" --jsonl b6.jsonl '{"text": "ok \377"}\n' 'line 1: invalid JSON'
expect_err "a corpus needs --format jsonl" 2 "--format jsonl" \
    "$CLI" tokenize "$GPT2" --text-file "$T/c.txt"
expect_err "one input" 2 "one of --text, --text-file, --jsonl" \
    "$CLI" tokenize "$GPT2" --text hi --text-file "$T/c.txt" --format jsonl

finish
