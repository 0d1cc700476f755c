#!/bin/sh
# tests/cli/text.sh CLI — names from files in outputs and messages
# (docs/cli.md, "Names in outputs and messages"): a file name that is not
# UTF-8 is written \xNN in JSON and every other format, and the command goes
# on; control characters (ESC, tab, newline, DEL, C1) from file names, tensor
# names, npy header keys, config.json's model_type and arguments reach neither
# the terminal nor a table raw: they are written \xNN, in messages and in
# every text format; JSON keeps them, escaped as JSON does. Invalid UTF-8 in
# --text and --text-file is refused by every command that reads a text.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"

# no_controls FILE [tsv] : no byte below 0x20 but newline (and tab in a TSV
# file, where each line must then hold the same number of tabs), no DEL, no C1
no_controls() {
    "$PY" -c 'import re, sys
b = open(sys.argv[1], "rb").read()
tsv = len(sys.argv) > 2
if tsv and len({l.count(b"\t") for l in b.splitlines()}) > 1:
    sys.exit(1)
sys.exit(1 if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]" if tsv else
                        rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b) else 0)' "$@"
}
# valid_json FILE : parses as UTF-8 JSON
valid_json() {
    "$PY" -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$1"
}

# ---- files whose names are not UTF-8 or hold control characters ---------------
LATIN=$(printf "$T/caf\351.npy")        # ISO 8859-1 é: not UTF-8
ESCN=$(printf "$T/e\033[2Jx\177.npy")   # ESC [2J (clear screen) and DEL
"$PY" - "$T" "$LATIN" "$ESCN" <<'EOF' || { echo "text.sh: could not make test files" >&2; exit 1; }
import json, os, struct, sys
import numpy as np
d = sys.argv[1]
A = np.full((2, 3, 3), 1 / 3)
for name in sys.argv[2:]:
    with open(os.fsencode(name), "wb") as f:
        np.save(f, A)
# a safetensors file whose tensor names hold ESC, tab, newline, C1 CSI, | and "
names = ["a\x1b[31mred", "tab\tnl\nx", "c1\x9bz", 'bar|quote"']
h, data = {}, b""
for n in names:
    h[n] = {"dtype": "F64", "shape": [3, 3], "data_offsets": [len(data), len(data) + 72]}
    data += np.full((3, 3), 1 / 3).tobytes()
hb = json.dumps(h).encode()
open(os.path.join(d, "names.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + data)
# an npy header with an ESC-holding key
hd = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), '\x1b[31m': 1, }"
hd += b" " * (118 - len(hd)) + b"\n"
open(os.path.join(d, "key.npy"), "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hd)) + hd + bytes(32))
# a model folder whose model_type holds an OSC sequence
os.mkdir(os.path.join(d, "m"))
for f in os.listdir("models/tiny-gpt2"):
    if f != "config.json":
        os.symlink(os.path.join(os.getcwd(), "models/tiny-gpt2", f), os.path.join(d, "m", f))
c = json.load(open("models/tiny-gpt2/config.json"))
c["model_type"] = "gpt2\x1b]0;pwned\x07"
json.dump(c, open(os.path.join(d, "m", "config.json"), "w"))
# a model folder holding a second safetensors file whose name is not UTF-8
os.mkdir(os.path.join(d, "shard"))
for f in os.listdir("models/tiny-gpt2"):
    os.symlink(os.path.join(os.getcwd(), "models/tiny-gpt2", f), os.path.join(d, "shard", f))
with open(os.path.join(os.fsencode(d), b"shard", b"extra\xff.safetensors"), "wb") as f:
    f.write(open(os.path.join(d, "names.safetensors"), "rb").read())
EOF

# matrix: every format goes on with the name escaped in JSON's "source"
for f in json table csv tsv md latex; do
    "$CLI" matrix "$LATIN" --metrics effective_rank --format $f >"$T/m.$f" 2>"$T/m.err"
    check "matrix non-UTF-8 name, --format $f: exit 0" test $? -eq 0 -a ! -s "$T/m.err"
    check "matrix non-UTF-8 name, --format $f: two records" test "$(grep -c 0 "$T/m.$f")" -ge 2
done
check "matrix --format json: valid JSON" valid_json "$T/m.json"
check "matrix --format json: source is the name, \\xe9 for the byte" \
    "$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))["source"]
assert s == sys.argv[2] + "/caf\\xe9.npy", s' "$T/m.json" "$T"
"$CLI" matrix "$LATIN" --metrics effective_rank --format json -o "$T/m_o.json" 2>"$T/m.err"
check "matrix non-UTF-8 name, -o: the same file" cmp -s "$T/m.json" "$T/m_o.json"
"$CLI" matrix "$ESCN" --metrics effective_rank --format json >"$T/e.json"
check "matrix ESC name: source keeps the ESC, JSON-escaped" \
    "$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))["source"]
assert s == sys.argv[2] + "/e\x1b[2Jx\x7f.npy", repr(s)' "$T/e.json" "$T"

# info: the path, tensor names and shard file names, in every format
for f in json table csv tsv md latex; do
    for k in 1 2 3 4; do
        case $k in
        1) p=$LATIN label=latin-1.npy ;;
        2) p=$ESCN label=esc.npy ;;
        3) p=$T/names.safetensors label=names.safetensors ;;
        *) p=$T/shard label="folder with a latin-1 file name" ;;
        esac
        "$CLI" info "$p" --format $f >"$T/i.$f" 2>"$T/i.err"
        check "info $label --format $f: exit 0" test $? -eq 0 -a ! -s "$T/i.err"
        if [ $f = json ]; then
            check "info $label --format json: valid JSON" valid_json "$T/i.json"
        else
            check "info $label --format $f: no control characters" no_controls "$T/i.$f" \
                $([ $f = tsv ] && echo tsv)
        fi
    done
done
"$CLI" info "$T/names.safetensors" --format json >"$T/n.json"
check "info --format json: tensor names exact" "$PY" -c 'import json, sys
n = [t["name"] for t in json.load(open(sys.argv[1]))["tensors"]]
assert sorted(n) == sorted(["a\x1b[31mred", "tab\tnl\nx", "c1\x9bz", "bar|quote\""]), n' "$T/n.json"
"$CLI" info "$T/names.safetensors" >"$T/n.table"
check "info table: ESC as \\x1b" grep -qF 'a\x1b[31mred  ' "$T/n.table"
check "info table: tab and newline as \\x09, \\x0a" grep -qF 'tab\x09nl\x0ax' "$T/n.table"
check "info table: C1 CSI as \\xc2\\x9b" grep -qF 'c1\xc2\x9bz' "$T/n.table"
check "info table: one line per tensor" test "$(wc -l <"$T/n.table")" -eq 7
"$CLI" info "$T/names.safetensors" --format csv >"$T/n.csv"
check "info csv: quotes doubled" grep -qF '"bar|quote""","F64","[3, 3]"' "$T/n.csv"
check "info csv: parses as 4 rows of 3 fields" "$PY" -c 'import csv, sys
r = list(csv.reader(open(sys.argv[1])))
assert len(r) == 5 and all(len(x) == 3 for x in r), r' "$T/n.csv"
"$CLI" info "$T/names.safetensors" --format md >"$T/n.md"
check "info md: | escaped" grep -qF '| bar\|quote" | F64 | [3, 3] |' "$T/n.md"
"$CLI" info "$T/names.safetensors" --format latex >"$T/n.tex"
check "info latex: \\verb with a delimiter not in the name" grep -qF '\verb!bar|quote"! & \verb|F64|' "$T/n.tex"
"$CLI" info "$T/shard" --format json >"$T/s.json"
check "info folder: a file name not UTF-8 is escaped" "$PY" -c 'import json, sys
f = {t["file"] for t in json.load(open(sys.argv[1]))["tensors"]}
assert f == {"extra\\xff.safetensors", "model.safetensors"}, f' "$T/s.json"

# ---- messages: one line, control characters escaped ----------------------------
# msg DESC NEEDLE ARGS... : exit 1 or 2, one stderr line holding NEEDLE, no control byte
msg() {
    DESC=$1 needle=$2
    shift 2
    N=$((N + 1))
    "$CLI" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    rc=$?
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "exit status $rc"
    [ "$(wc -l <"$T/stderr")" -eq 1 ] || fail "stderr is not one line: $(cat -v "$T/stderr")"
    grep -qF -- "$needle" "$T/stderr" || fail "stderr lacks '$needle': $(cat -v "$T/stderr")"
    no_controls "$T/stderr" || fail "control characters on stderr: $(cat -v "$T/stderr")"
}
msg "missing file with ESC and 0xff in its name" 'nope\x1b[2J\xff.npy' \
    matrix "$(printf "$T/nope\033[2J\377.npy")"
msg "npy header key holding ESC" "unexpected key '\\x1b[31m'" matrix "$T/key.npy"
msg "model_type holding an OSC sequence" 'gpt2\x1b]0;pwned\x07' info "$T/m"
msg "model_type through analyze" 'gpt2\x1b]0;pwned\x07' analyze "$T/m" --tokens 1
msg "tensor name argument with ESC and newline" "no tensor 'a\\x1b[31mred\\x0aX'" \
    matrix "$T/names.safetensors" --tensor "$(printf 'a\033[31mred\nX')"
msg "unknown command with ESC" "unknown command 'x\\x1by'" "$(printf 'x\033y')"
msg "unknown option with ESC" "unknown option '--x\\x1by'" matrix "$LATIN" "$(printf -- '--x\033y')"
msg "unknown --format with ESC" "unknown --format 'x\\x1by'" matrix "$LATIN" --format "$(printf 'x\033y')"

# ---- --text and --text-file that are not UTF-8: refused, naming the byte --------
BAD=$(printf 'In the \377beginning')
printf 'In the beginning\nGod \377created\n' >"$T/bad.txt"
msg "tokenize: --text not UTF-8" "invalid UTF-8 at byte 7" tokenize "$GPT2" --text "$BAD"
msg "analyze: --text not UTF-8" "invalid UTF-8 at byte 7" analyze "$GPT2" --text "$BAD"
msg "attention: --text not UTF-8" "invalid UTF-8 at byte 7" attention "$GPT2" --text "$BAD" -o "$T/A.npy"
msg "analyze: --text-file line 2 not UTF-8" "line 2: text: invalid UTF-8 at byte 4" \
    analyze "$GPT2" --text-file "$T/bad.txt"
check "refused attention wrote nothing" test ! -e "$T/A.npy"

# ---- tokenize: tokens in every format -----------------------------------------
for f in table csv tsv md latex; do
    "$CLI" tokenize "$GPT2" --text 'Hi | "there"' --format $f >"$T/t.$f"
done
check "tokenize csv: quotes doubled" grep -qxF '2,366,"Ġ"""," """' "$T/t.csv"
check "tokenize md: | escaped" grep -qxF '| 1 | 930 | Ġ\| |  \| |' "$T/t.md"
check "tokenize latex: \\verb delimiter not in the token" grep -qxF '1 & 930 & \verb!Ġ|! & \verb! |! \\' "$T/t.latex"

finish
