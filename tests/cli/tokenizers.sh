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
#    post-processor type, an invalid regex, merges naming unknown tokens or a
#    broken charsmap: `attngeom tokenize FOLDER --text x` exits 1 with one
#    stderr line naming the file and the component.
# Run from the repository root. Exits non-zero if any check fails.

CLI=${1:?usage: sh tests/cli/tokenizers.sh path/to/attngeom}
case $CLI in /*) ;; *) CLI=$(pwd)/$CLI ;; esac
if [ ! -x "$CLI" ]; then
    echo "tokenizers.sh: $CLI is not executable" >&2
    exit 1
fi
ROOT=$(pwd)
GPT2=$ROOT/models/tiny-gpt2
[ -f "$GPT2/config.json" ] || { echo "tokenizers.sh: $GPT2 missing (run from the repository root)" >&2; exit 1; }
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/ag_tokenizers.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP

FAILS=0
N=0
fail() {
    FAILS=$((FAILS + 1))
    printf 'FAIL [%s]: %s\n' "$DESC" "$*"
}
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
$CLI $A --tokens 818,262,3290 | "$PY" -c 'import json,sys; j=json.load(sys.stdin); r=j["records"] if isinstance(j,dict) else j; [x.__setitem__("text",0) for x in r]; json.dump(j,open(sys.argv[1],"w"))' "$T/l0t.json"
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
: >"$T/empty.txt"
expect_fail "tokens-file: empty file" 1 "$T/empty.txt" "no token ids" -- $CLI $A --tokens-file "$T/empty.txt"
printf '\n  \n\t\n' >"$T/blank.txt"
expect_fail "tokens-file: blank lines only" 1 "$T/blank.txt" "no token ids" -- $CLI $A --tokens-file "$T/blank.txt"
expect_fail "tokens-file: missing file" 1 "$T/none.txt" -- $CLI $A --tokens-file "$T/none.txt"
expect_fail "tokens-file with --tokens" 2 "--tokens-file" -- $CLI $A --tokens-file "$T/ok.txt" --tokens 1
expect_fail "attention: a tokens-file of two lines" 1 "$T/ok.txt" "one sequence" -- \
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

if [ "$FAILS" -ne 0 ]; then
    echo "tokenizers.sh: $FAILS of $N checks failed"
    exit 1
fi
echo "tokenizers.sh: all $N checks passed"
