#!/bin/sh
# tests/cli/stream.sh CLI — corpus runs that behave (docs/cli.md, "Corpus
# runs"): a text longer than the model's positions stops the run before
# anything runs unless --skip-long skips it or --max-tokens cuts it (one
# warning line each, naming the line); --max-tokens cuts as Hugging Face's
# truncation=True does (special tokens kept); progress on stderr with
# --progress; --text-file - reads standard input and -o - is standard output;
# attention over a corpus writes one file per text from a {i} pattern;
# records stream as each text finishes (a pipe and a FIFO read before the
# run ends), an -o file whole or not at all; records that stand alone
# ("Records that stand alone"): model, --label, the settings of JSON and
# JSONL (SHA-256 of the weight files against sha256sum, token counts).
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
BERT=$ROOT/tests/data/models/tiny-bert
need "$GPT2/config.json" "$BERT/config.json"
cd "$T" || exit 1

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

head -250 corpus.txt | tail -1 >only_long.txt
check "similarity: every text skipped is an error (no mean to take)"
"$CLI" similarity "$GPT2" --text-file only_long.txt --skip-long >out 2>err
rc=$?
[ $rc -eq 1 ] && grep -q "every text was skipped" err && [ ! -s out ] || fail "exit $rc: $(cat err)"
check "rollout -o R.npy of a skipped text: no R, no records, exit 0"
"$CLI" rollout "$GPT2" --tokens "$(seq -s, 1000 1299)" --skip-long -o R.npy --format csv >out 2>err
rc=$?
[ $rc -eq 0 ] && [ ! -e R.npy ] && [ "$(lines err)" = 1 ] && grep -q "^attngeom: warning: --tokens: 300 tokens" err || fail "exit $rc, R.npy $(ls R.npy 2>&1): $(cat err)"

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

# ---- records stream as each text finishes ----------------------------------------------
# Deterministic, no timing: the reader takes the first lines and then reads
# nothing more, so a run that streams blocks on the full pipe (64 KiB, far
# less than the 500 texts' records) long before its last text: when the
# first record is read, the progress has no "done" line and the run is
# alive. A run that printed only at the end would have finished every text
# (its "done" line written) before the first record could be read.
stream_check() { # DESC FORMAT OUTMODE (stdout or -o)
    DESC=$1
    N=$((N + 1))
    rm -f out.fifo prog.err first
    mkfifo out.fifo
    if [ "$3" = stdout ]; then
        "$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max --format "$2" \
            --progress >out.fifo 2>prog.err &
    else
        "$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max --format "$2" \
            --progress -o out.fifo 2>prog.err &
    fi
    pid=$!
    exec 3<out.fifo
    timeout 120 head -n 2 <&3 >first
    hrc=$?
    alive=0
    kill -0 "$pid" 2>/dev/null && alive=1
    done_lines=$(grep -c "done in" prog.err)
    cat <&3 >/dev/null
    exec 3<&-
    wait "$pid"
    rc=$?
    [ $hrc -eq 0 ] || fail "no first lines within 120 s (head exit $hrc)"
    [ "$(lines first)" = 2 ] || fail "$(lines first) lines read"
    [ $alive = 1 ] || fail "the run had ended when its first record was read"
    [ "$done_lines" = 0 ] || fail "every text was done before the first record was read"
    [ $rc -eq 0 ] || fail "exit $rc: $(tail -2 prog.err)"
}
stream_check "jsonl on a pipe: the settings and the first record before the run ends" jsonl stdout
grep -q '^{"settings":{"command":"analyze"' first || fail "first line: $(head -c 200 first)"
grep -q '^{"layer":0,"head":0,"rows":[0-9]*,"cols":[0-9]*,"sigma_max":[0-9.e-]*,"text":0,"model":"tiny-gpt2"}$' first ||
    fail "second line: $(tail -1 first)"
stream_check "csv to -o FIFO: the header and the first record before the run ends" csv o
[ "$(head -1 first)" = "layer,head,rows,cols,sigma_max,text,model" ] || fail "header: $(head -1 first)"
stream_check "tsv on a pipe streams too" tsv stdout

check "streamed jsonl and csv equal the same run's records read whole"
"$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max --format jsonl >all.jsonl 2>err ||
    fail "exit $?"
"$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max --format json >all.json 2>err ||
    fail "exit $?"
"$PY" - all.jsonl all.json skip.csv <<'PYEOF' || fail "see above"
import csv, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
doc = json.load(open(sys.argv[2]))
assert list(lines[0]) == ["settings"] and lines[0]["settings"] == doc["settings"], "settings differ"
assert lines[1:] == doc["records"], "records differ"
rows = list(csv.DictReader(open(sys.argv[3])))
assert len(rows) == len(doc["records"]) and all(r["model"] == "tiny-gpt2" for r in rows)
PYEOF

check "-o FILE while streaming: written whole at the end, untouched when the run fails"
printf '818 262\n464 3290\n818 50257\n' >bad_ids.txt
echo keep >kept.csv
"$CLI" analyze "$GPT2" --tokens-file bad_ids.txt --format csv -o kept.csv >out 2>err
rc=$?
[ $rc -eq 1 ] || fail "exit $rc"
grep -q "bad_ids.txt: line 3: token id 50257" err || fail "$(cat err)"
[ "$(cat kept.csv)" = keep ] || fail "kept.csv changed"
ls | grep -q 'kept.csv.tmp' && fail "a temporary is left"
check "a bad id on the last line fails before the first text: nothing streamed (docs/cli.md)"
"$CLI" analyze "$GPT2" --tokens-file bad_ids.txt --format csv --metrics sigma_max >partial.csv 2>err
rc=$?
[ $rc -eq 1 ] && [ "$(lines err)" = 1 ] || fail "exit $rc, stderr: $(cat err)"
[ "$(lines partial.csv)" = 0 ] || fail "$(lines partial.csv) lines, expected none: ids are checked before any text runs"
for f in csv jsonl latex; do
    check "a streamed $f on a full device: exit 1, one line naming the error"
    "$CLI" analyze "$GPT2" --text-file short.txt --format $f --metrics sigma_max >/dev/full 2>err
    rc=$?
    [ $rc -eq 1 ] && [ "$(lines err)" = 1 ] && grep -q "standard output: cannot write: No space left on device" err ||
        fail "exit $rc: $(cat err)"
done
check "--aggregate over a corpus = aggregate of its streamed records"
"$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max,entropy_mean --aggregate \
    --format csv >agg_direct.csv 2>err || fail "exit $?: $(cat err)"
"$CLI" analyze "$GPT2" --text-file corpus.txt --skip-long --metrics sigma_max,entropy_mean --format jsonl 2>/dev/null |
    "$CLI" aggregate - --format csv >agg_after.csv 2>err || fail "exit $?: $(cat err)"
cmp -s agg_direct.csv agg_after.csv || fail "they differ"
[ "$(head -1 agg_direct.csv | cut -d, -f1-6)" = "model,layer,head,unit,n,n_units" ] || fail "$(head -1 agg_direct.csv)"

# ---- records that stand alone: model, --label, settings ---------------------------------
SUM=$(sha256sum "$GPT2/model.safetensors" | cut -c1-64)
check "settings: options, model path, the weight file's SHA-256 (= sha256sum), token counts"
"$PY" - all.json cut.csv "$SUM" "$GPT2" <<'PYEOF' || fail "see above"
import csv, json, os, sys
s = json.load(open(sys.argv[1]))["settings"]
want = {"command": "analyze", "source": sys.argv[4], "model": "tiny-gpt2",
        "model_path": os.path.realpath(sys.argv[4]), "sha256": {"model.safetensors": sys.argv[3]},
        "metrics": ["sigma_max"], "seed": 1, "epsilon": 0.001, "trials": 8, "edge_threshold": None,
        "precision": "f32", "layers": None, "heads": None, "max_tokens": None, "skip_long": True}
for k, v in want.items():
    assert s[k] == v, (k, s[k], v)
assert s["version"], s
t = s["texts"]
assert [x["text"] for x in t] == list(range(500)), [x["text"] for x in t][:5]
assert t[249] == {"text": 249, "tokens": 300, "tokenized": 300, "skipped": True}, t[249]
rows = {int(r["text"]): int(r["rows"]) for r in csv.DictReader(open(sys.argv[2]))}
for x in t:
    if x["text"] != 249:
        assert not x["skipped"] and x["tokens"] == x["tokenized"] == rows[x["text"]], x
PYEOF
check "settings of a cut run: options, max_tokens, tokens and tokenized"
"$CLI" analyze "$GPT2" --text-file three.txt --max-tokens 256 --precision f64 --layers 1 --heads 0-1 \
    --metrics sigma_max,stability --seed 7 --epsilon 0.01 --trials 3 --edge-threshold 0.25 \
    --format jsonl >cut.jsonl 2>err || fail "exit $?: $(cat err)"
"$PY" - cut.jsonl <<'PYEOF' || fail "see above"
import json, sys
s = json.loads(open(sys.argv[1]).readline())["settings"]
assert (s["precision"], s["layers"], s["heads"], s["max_tokens"], s["skip_long"]) == ("f64", "1", "0-1", 256, False), s
assert (s["seed"], s["epsilon"], s["trials"], s["edge_threshold"]) == (7, 0.01, 3, 0.25), s
assert s["metrics"][0] == "sigma_max" and len(s["metrics"]) > 1, s["metrics"]
assert [(x["text"], x["tokens"], x["tokenized"]) for x in s["texts"]] == [(0, 3, 3), (2, 3, 3), (3, 256, 300)], s["texts"]
PYEOF
check "--label names the model in every record and in the settings"
"$CLI" analyze "$GPT2" --text "hello world" --label "gpt2 tiny" --format jsonl --metrics sigma_max >lab.jsonl 2>err ||
    fail "exit $?"
"$PY" - lab.jsonl <<'PYEOF' || fail "see above"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
assert l[0]["settings"]["model"] == "gpt2 tiny" and l[0]["settings"]["texts"] == \
    [{"text": None, "tokens": 2, "tokenized": 2, "skipped": False}], l[0]
assert len(l) == 17 and all(r["model"] == "gpt2 tiny" for r in l[1:]), l[1]
PYEOF
check "two models' records concatenate and aggregate apart"
"$CLI" weights "$GPT2" --format csv >w1.csv 2>err && "$CLI" weights "$BERT" --format csv >w2.csv 2>>err ||
    fail "exit $?: $(cat err)"
"$CLI" aggregate w1.csv w2.csv --by model --format csv >wm.csv 2>err || fail "exit $?: $(cat err)"
[ "$(cut -d, -f1,3 wm.csv | tr '\n' ' ')" = "model,n \"tiny-gpt2\",16 \"tiny-bert\",16 " ] ||
    fail "$(cut -d, -f1,3 wm.csv | tr '\n' ' ')"
check "the model of a folder given as . or with a trailing slash is its name"
(cd "$GPT2" && "$CLI" weights . --format csv --metrics qk_sigma_max) | sed -n 2p | grep -q ',"tiny-gpt2"$' ||
    fail "weights ."
"$CLI" weights "$GPT2/" --format csv --metrics qk_sigma_max | sed -n 2p | grep -q ',"tiny-gpt2"$' || fail "weights M/"
check "matrix: model is the file's name, settings hold its SHA-256"
"$PY" -c 'import numpy as np; np.save("m.npy", np.full((3, 3), 1 / 3))'
"$CLI" matrix m.npy --format json >m.json 2>err || fail "exit $?"
"$PY" - m.json "$(sha256sum m.npy | cut -c1-64)" <<'PYEOF' || fail "see above"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["sha256"] == {"m.npy": sys.argv[2]} and d["settings"]["model"] == "m.npy", d["settings"]
assert "texts" not in d["settings"] and all(r["model"] == "m.npy" for r in d["records"])
PYEOF
check "a sharded model: the SHA-256 of every shard, the same records as one file"
mkdir -p shard
for f in config.json tokenizer.json tokenizer_config.json special_tokens_map.json; do
    cp "$GPT2/$f" shard/
done
"$PY" - "$GPT2/model.safetensors" shard <<'PYEOF' || fail "could not shard the model"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
names = sorted(k for k in head if k != "__metadata__")
index = {"weight_map": {}}
for part, group in enumerate((names[::2], names[1::2])):
    file = "model-%05d-of-00002.safetensors" % (part + 1)
    h, blobs, off = {}, [], 0
    for k in group:
        a, b = head[k]["data_offsets"]
        h[k] = dict(head[k], data_offsets=[off, off + b - a]); off += b - a
        blobs.append(data[a:b]); index["weight_map"][k] = file
    hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
    open(sys.argv[2] + "/" + file, "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
json.dump(index, open(sys.argv[2] + "/model.safetensors.index.json", "w"))
PYEOF
"$CLI" analyze shard --text "hello world" --format json --metrics sigma_max >sh.json 2>err || fail "exit $?: $(cat err)"
"$CLI" analyze "$GPT2" --text "hello world" --format json --metrics sigma_max --label shard >one.json 2>err ||
    fail "exit $?"
"$PY" - sh.json one.json "$(sha256sum shard/model-00001-of-00002.safetensors | cut -c1-64)" \
    "$(sha256sum shard/model-00002-of-00002.safetensors | cut -c1-64)" <<'PYEOF' || fail "see above"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["settings"]["sha256"] == {"model-00001-of-00002.safetensors": sys.argv[3],
                                   "model-00002-of-00002.safetensors": sys.argv[4]}, a["settings"]["sha256"]
assert a["records"] == b["records"], "sharded records differ"
PYEOF
check "similarity records carry model; --format jsonl with settings"
"$CLI" similarity "$GPT2" --text "hello world" --layers 0 --format jsonl >sim.jsonl 2>err || fail "exit $?: $(cat err)"
"$PY" - sim.jsonl <<'PYEOF' || fail "see above"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
assert l[0]["settings"]["metrics"] == ["js_distance"] and l[0]["settings"]["command"] == "similarity", l[0]
keys = {"layer_a", "head_a", "layer_b", "head_b", "js_distance", "model"}
assert len(l) == 7 and all(r["model"] == "tiny-gpt2" and set(r) == keys for r in l[1:]), l[1]
PYEOF

finish
