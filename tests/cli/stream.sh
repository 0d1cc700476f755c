#!/bin/sh
# tests/cli/stream.sh CLI — corpus runs that behave (docs/cli.md, "Corpus
# runs"): a text longer than the model's positions stops the run before
# anything runs unless --skip-long skips it or --max-tokens cuts it (one
# warning line each, naming the line); --max-tokens cuts as Hugging Face's
# truncation=True does (special tokens kept); progress on stderr with
# --progress; --text-file - reads standard input and -o - is standard output;
# attention over a corpus writes one file per text from a {i} pattern.
# Run from the repository root. Exits non-zero if any check fails.

CLI=${1:?usage: sh tests/cli/stream.sh path/to/attngeom}
case $CLI in /*) ;; *) CLI=$(pwd)/$CLI ;; esac
if [ ! -x "$CLI" ]; then
    echo "stream.sh: $CLI is not executable" >&2
    exit 1
fi
ROOT=$(pwd)
GPT2=$ROOT/models/tiny-gpt2
BERT=$ROOT/tests/data/models/tiny-bert
[ -f "$GPT2/config.json" ] || { echo "stream.sh: $GPT2 missing (run from the repository root)" >&2; exit 1; }
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/ag_stream.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
cd "$T" || exit 1

FAILS=0
N=0
fail() {
    FAILS=$((FAILS + 1))
    printf 'FAIL [%s]: %s\n' "$DESC" "$*"
}
check() { N=$((N + 1)); DESC=$1; }
lines() { wc -l <"$1" | tr -d ' '; }

# A corpus of 500 short lines; line 250 (1-based) is 300 words, more than
# tiny-gpt2's n_positions = 256.
"$PY" - <<'EOF' || { echo "stream.sh: could not make the corpus" >&2; exit 1; }
import random
random.seed(7)
words = "the cat sat on a mat while dogs ran far away from home in the rain".split()
lines = [" ".join(random.choice(words) for _ in range(random.randint(3, 12))) for _ in range(500)]
lines[249] = " ".join(["word"] * 300)
open("corpus.txt", "w").write("\n".join(lines) + "\n")
open("short.txt", "w").write("\n".join(lines[:249] + lines[250:]) + "\n")
EOF

# ---- a text longer than the model's positions -------------------------------------
check "strict default: an over-long line stops the run before anything runs"
"$CLI" analyze "$GPT2" --text-file corpus.txt --format csv >out 2>err
rc=$?
[ $rc -eq 1 ] || fail "exit $rc, expected 1"
[ "$(lines err)" = 1 ] || fail "$(lines err) stderr lines, expected 1"
grep -q "corpus.txt: line 250: 300 tokens, more than the 256 the model takes (n_positions = 256)" err ||
    fail "the message does not name the line and the limit: $(cat err)"
grep -q -- "--skip-long" err && grep -q -- "--max-tokens 256" err ||
    fail "the message does not name --skip-long and --max-tokens: $(cat err)"
[ -s out ] && fail "stdout is not empty"

check "--skip-long: one warning naming the line, exit 0, every other text's records"
"$CLI" analyze "$GPT2" --text-file corpus.txt --format csv --metrics sigma_max --skip-long >skip.csv 2>err
rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 err)"
[ "$(lines err)" = 1 ] || fail "$(lines err) stderr lines, expected 1: $(cat err)"
grep -q "^attngeom: warning: corpus.txt: line 250: 300 tokens, .*skipped (--skip-long)$" err ||
    fail "no warning naming line 250: $(cat err)"
"$PY" - skip.csv <<'EOF' || fail "records: see above"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
texts = {int(r["text"]) for r in rows}
assert 249 not in texts, "the skipped line has records"
assert texts == set(range(500)) - {249}, f"{len(texts)} texts, expected 499"
assert len(rows) == 499 * 16, f"{len(rows)} records, expected 499 x 16 heads"
EOF

check "--skip-long: the records equal those of the corpus without the line"
"$CLI" analyze "$GPT2" --text-file short.txt --format csv --metrics sigma_max >short.csv 2>err ||
    fail "exit $?: $(head -c 300 err)"
"$PY" - skip.csv short.csv <<'EOF' || fail "the records differ"
import csv, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
for r in b:  # short.txt has one line less: its lines from 250 on are one lower
    t = int(r["text"])
    r["text"] = str(t + 1 if t >= 249 else t)
assert a == b
EOF

check "--max-tokens 256: one warning, the long line cut to 256 tokens, the others whole"
"$CLI" analyze "$GPT2" --text-file corpus.txt --format csv --metrics sigma_max --max-tokens 256 >cut.csv 2>err
rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 err)"
[ "$(lines err)" = 1 ] || fail "$(lines err) stderr lines, expected 1: $(cat err)"
grep -q "^attngeom: warning: corpus.txt: line 250: 300 tokens, cut to the first 256 (--max-tokens)$" err ||
    fail "no warning naming line 250: $(cat err)"
"$PY" - cut.csv skip.csv <<'EOF' || fail "records: see above"
import csv, sys
cut = list(csv.DictReader(open(sys.argv[1])))
skip = list(csv.DictReader(open(sys.argv[2])))
long = [r for r in cut if r["text"] == "249"]
assert len(long) == 16 and all(r["rows"] == r["cols"] == "256" for r in long), "line 250 is not 256 tokens"
assert [r for r in cut if r["text"] != "249"] == skip, "the other texts changed"
EOF

check "--max-tokens 5: every record's token count is min(tokens, 5), one warning per cut text"
"$CLI" analyze "$GPT2" --text-file corpus.txt --format csv --metrics sigma_max --max-tokens 5 --skip-long >five.csv 2>err ||
    fail "exit $?: $(head -c 300 err)"
"$PY" - five.csv cut.csv err <<'EOF' || fail "records: see above"
import csv, sys
five = list(csv.DictReader(open(sys.argv[1])))
full = list(csv.DictReader(open(sys.argv[2])))
warned = [l for l in open(sys.argv[3]) if "cut to the first 5" in l]
assert len(five) == len(full) == 500 * 16
long = 0
for a, b in zip(five, full):
    assert a["text"] == b["text"] and a["layer"] == b["layer"] and a["head"] == b["head"]
    n = int(b["rows"]) if b["text"] != "249" else 300
    assert int(a["rows"]) == min(n, 5), (a, b)
    long += n > 5 and a["head"] == "0" and a["layer"] == "0"
assert len(warned) == long, f"{len(warned)} warnings for {long} cut texts"
assert not [l for l in open(sys.argv[3]) if "skipped" in l], "--max-tokens 5 leaves nothing to skip"
EOF

check "--max-tokens above the model's positions: exit 1 naming the field"
"$CLI" analyze "$GPT2" --text hello --max-tokens 257 >out 2>err
rc=$?
[ $rc -eq 1 ] && grep -q "max-tokens 257 is more than the 256 the model takes (n_positions = 256)" err ||
    fail "exit $rc: $(cat err)"
for bad in 0 -3 x 2147483649; do
    check "--max-tokens $bad: usage error"
    "$CLI" analyze "$GPT2" --text hello --max-tokens "$bad" >out 2>err
    rc=$?
    [ $rc -eq 2 ] || fail "exit $rc: $(cat err)"
done

# ---- --max-tokens as Hugging Face's truncation=True ---------------------------------
SENT="the quick brown fox jumps over the lazy dog"
"$CLI" tokenize "$BERT" --text "$SENT" --format json >tok.json || fail "tokenize failed"
IDS6=$("$PY" -c 'import json; i = json.load(open("tok.json"))["ids"]; print(",".join(map(str, i[:5] + i[-1:])))')
IDS_CUT6=$("$PY" -c 'import json; i = json.load(open("tok.json"))["ids"]; print(",".join(map(str, i[:6])))')
check "BERT --max-tokens 6 keeps [CLS] and [SEP]: the pass of [CLS] + 4 tokens + [SEP]"
"$CLI" attention "$BERT" --text "$SENT" --max-tokens 6 -o cut6.npy 2>err || fail "exit $?: $(cat err)"
"$CLI" attention "$BERT" --tokens "$IDS6" -o want6.npy 2>err || fail "exit $?: $(cat err)"
cmp -s cut6.npy want6.npy || fail "the cut text is not [CLS] + its first 4 tokens + [SEP]"
"$CLI" attention "$BERT" --text "$SENT" --max-tokens 6 -o cut6.npy 2>err
grep -q "^attngeom: warning: --text: 18 tokens, cut to the first 6 (--max-tokens)$" err ||
    fail "no warning for --text: $(cat err)"
check "--tokens-file --max-tokens 6: the first 6 ids as given"
echo "$IDS_CUT6" | tr ',' ' ' >ids6.txt
"$PY" -c 'import json; print(" ".join(map(str, json.load(open("tok.json"))["ids"])))' >ids.txt
"$CLI" attention "$BERT" --tokens-file ids.txt --max-tokens 6 -o tcut.npy 2>err || fail "exit $?: $(cat err)"
"$CLI" attention "$BERT" --tokens "$IDS_CUT6" -o twant.npy 2>/dev/null || fail "exit $?"
cmp -s tcut.npy twant.npy || fail "a --tokens-file line is not cut to its first 6 ids"
grep -q "ids.txt: line 1: 18 tokens, cut to the first 6" err || fail "no warning: $(cat err)"
check "BERT --max-tokens 2 leaves no token of the text: exit 1"
"$CLI" analyze "$BERT" --text "$SENT" --max-tokens 2 >out 2>err
rc=$?
[ $rc -eq 1 ] && grep -q "max-tokens 2 leaves no token of the text: the tokenizer adds 2 special tokens" err ||
    fail "exit $rc: $(cat err)"

# ---- progress ----------------------------------------------------------------------------
check "--progress on a file: whole lines (no carriage return), the last one 500/500"
"$CLI" analyze "$GPT2" --text-file corpus.txt --format csv --metrics sigma_max --skip-long --progress >/dev/null 2>err ||
    fail "exit $?"
"$PY" - err <<'EOF' || fail "progress lines: see above"
import re, sys
b = open(sys.argv[1], "rb").read()
assert b"\r" not in b and b"\x1b" not in b, "terminal control characters in a log"
lines = b.decode().splitlines()
assert lines[0].startswith("attngeom: warning: corpus.txt: line 250"), lines[0]
prog = lines[1:]
pat = re.compile(r"attngeom analyze: (\d+)/500 texts(, (\d+) skipped)?, \d+(\.\d+)? texts/s, "
                 r"(\d+[hms][0-9hms]* left|done in \d+[hms][0-9hms]*)$")
assert prog, "no progress line"
done = []
for l in prog:
    m = pat.match(l)
    assert m, f"not a progress line: {l!r}"
    done.append(int(m.group(1)))
assert done == sorted(done) and done[0] >= 1, done
last = pat.match(prog[-1])
assert last.group(1) == "500" and last.group(3) == "1" and "done in" in prog[-1], prog[-1]
EOF
check "no progress without --progress when stderr is not a terminal"
"$CLI" analyze "$GPT2" --text-file short.txt --format csv --metrics sigma_max >/dev/null 2>err || fail "exit $?"
[ -s err ] && fail "stderr: $(head -c 200 err)"
check "--no-progress wins over nothing: silent"
"$CLI" analyze "$GPT2" --text-file short.txt --format csv --metrics sigma_max --no-progress >/dev/null 2>err || fail "exit $?"
[ -s err ] && fail "stderr: $(head -c 200 err)"
if command -v script >/dev/null 2>&1; then
    check "on a terminal: progress by default, redrawn in place, ending with a newline"
    script -qec "'$CLI' analyze '$GPT2' --text-file short.txt --metrics sigma_max -o tty.csv --format csv" /dev/null >tty.out 2>&1 </dev/null ||
        fail "exit $?"
    "$PY" - tty.out <<'EOF' || fail "terminal progress: see above"
import re, sys
b = open(sys.argv[1], "rb").read()
assert b.startswith(b"\r\x1b[Kattngeom analyze: "), b[:200]
assert re.search(rb"\r\x1b\[Kattngeom analyze: 499/499 texts, [0-9.]+ texts/s, done in [0-9hms]+\r?\n$", b), b[-200:]
assert b.count(b"\n") == 1, "more than the last line ends with a newline"
assert b.count(b"499/499 texts") == 1, b[-300:]
EOF
fi

# ---- standard input and standard output ---------------------------------------------------
check "--text-file - reads the corpus from standard input"
"$CLI" analyze "$GPT2" --text-file - --format csv --metrics sigma_max <short.txt >stdin.csv 2>err || fail "exit $?: $(cat err)"
cmp -s stdin.csv short.csv || fail "differs from --text-file short.txt"
check "-o - is standard output"
"$CLI" analyze "$GPT2" --text-file short.txt --format csv --metrics sigma_max -o - >dash.csv 2>err || fail "exit $?: $(cat err)"
cmp -s dash.csv short.csv || fail "differs from standard output"
check "a pipe into --text-file - with --skip-long"
"$PY" -c 'import sys; sys.stdout.write(open("corpus.txt").read())' |
    "$CLI" analyze "$GPT2" --text-file - --format csv --metrics sigma_max --skip-long >pipe.csv 2>err || fail "exit $?"
cmp -s pipe.csv skip.csv || fail "differs from the file run"
grep -q "standard input: line 250:" err || fail "the warning does not name standard input: $(cat err)"

# ---- attention over a corpus: one file per text -----------------------------------------
printf 'In the beginning\n\nwas the word\n%s\n' "$(head -250 corpus.txt | tail -1)" >three.txt
check "attention -o a_{i}.npy --hidden h_{i}.npy: one file per text, named by its line index"
mkdir pat
"$CLI" attention "$GPT2" --text-file three.txt --skip-long -o 'pat/a_{i}.npy' --hidden 'pat/h_{i}.npy' >out 2>err ||
    fail "exit $?: $(cat err)"
[ "$(ls pat | tr '\n' ' ')" = "a_0.npy a_2.npy h_0.npy h_2.npy " ] || fail "files: $(ls pat | tr '\n' ' ')"
grep -q "three.txt: line 4: 300 tokens" err || fail "no warning for line 4: $(cat err)"
"$CLI" attention "$GPT2" --text "In the beginning" -o one0.npy --hidden oneh0.npy 2>/dev/null || fail "exit $?"
"$CLI" attention "$GPT2" --text "was the word" -o one2.npy 2>/dev/null || fail "exit $?"
cmp -s pat/a_0.npy one0.npy && cmp -s pat/h_0.npy oneh0.npy && cmp -s pat/a_2.npy one2.npy ||
    fail "a text's file differs from attention --text on it"
check "attention --text-file without {i}: usage error, nothing written"
"$CLI" attention "$GPT2" --text-file short.txt -o nopat.npy >out 2>err
rc=$?
[ $rc -eq 2 ] || fail "exit $rc, expected 2"
grep -q "put {i} in it" err || fail "$(cat err)"
[ -e nopat.npy ] && fail "nopat.npy was written"
check "attention --hidden without {i} over a corpus: usage error"
"$CLI" attention "$GPT2" --text-file short.txt -o 'x_{i}.npy' --hidden h.npy >out 2>err
rc=$?
[ $rc -eq 2 ] && grep -q -- "--hidden h.npy names one file" err || fail "exit $rc: $(cat err)"
ls x_*.npy >/dev/null 2>&1 && fail "files were written"
check "attention: a file of one text takes a name without {i}"
head -1 short.txt >one.txt
"$CLI" attention "$GPT2" --text-file one.txt -o single.npy 2>err || fail "exit $?: $(cat err)"
[ -s single.npy ] || fail "single.npy missing"
check "attention --label: usage error (it prints no records)"
"$CLI" attention "$GPT2" --text hi -o l.npy --label x >out 2>err
[ $? -eq 2 ] || fail "exit $?: $(cat err)"

if [ "$FAILS" -ne 0 ]; then
    echo "stream.sh: $FAILS failure(s) in $N checks"
    exit 1
fi
echo "stream.sh: ok ($N checks)"
