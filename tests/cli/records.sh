#!/bin/sh
# tests/cli/records.sh CLI — the records reader and the aggregate on hostile
# input: a record over 4096 keys (alone, or after a normal one; JSONL, a
# JSON document, a CSV header) and a NUL byte in a CSV cell are refused by
# aggregate, compare and plot with exit 1 and one line naming the file and
# the line or record (they were a crash: a NULL store, then a heap
# overflow; the NUL cut the cell, merging groups); a JSON file jansson
# cannot hold under `ulimit -v` says "out of memory"; and records that each
# bring their own group and their own key stay small: the aggregate holds
# the (group, metric) pairs met, not groups x metrics (20,000 such records
# needed gigabytes). The ulimit checks are skipped under AddressSanitizer
# (AG_SANITIZE), as in limits.sh. Run from the repository root.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
cd "$T" || exit 1

"$PY" - <<'PYEOF' || { echo "records.sh: could not make test files" >&2; exit 1; }
import json
big = {"k%d" % i: i for i in range(4097)}
open("lone.jsonl", "w").write(json.dumps(big) + "\n")
open("second.jsonl", "w").write(json.dumps({"layer": 0, "a": 1}) + "\n" + json.dumps(big) + "\n")
open("second.json", "w").write(json.dumps({"records": [{"layer": 0, "a": 1}, big]}, indent=1) + "\n")
open("wide.csv", "w").write(",".join(big) + "\n" + ",".join("1" for _ in big) + "\n")
open("wide_row.csv", "w").write("layer,a\n0,1\n" + ",".join("1" for _ in big) + "\n")
open("nul.csv", "wb").write(b'model,x\nab,2\n"ab\0c",1\n')
open("nul.tsv", "wb").write(b"model\tx\nab\0c\t1\n")
# each record its own group and its own text key (20,000 records, 4,000 keys)
with open("sparse.jsonl", "w") as f:
    for i in range(20000):
        f.write(json.dumps({"model": "g%d" % i, "note%d" % (i % 4000): "x", "v": i % 7}) + "\n")
# one JSON document of 400,000 records: jansson's tree needs far more than
# its 9 MB of text
with open("many.json", "w") as f:
    f.write('{"records": [\n' + ",\n".join('{"a": %d}' % i for i in range(400000)) + "]}\n")
# aggregated records of 30 metrics (150 keys and n): companions hashed
rows = [{"model": "m", **{"k%d" % k: (i * 7 + k) % 11 for k in range(30)}} for i in range(9)]
open("per.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
PYEOF

# refused FILE WHERE REASON — aggregate, compare and plot: exit 1, one
# line naming the file and the place, nothing on stdout and no -o file
refused() {
    for cmd in aggregate compare plot; do
        check "$cmd $1: refused at $2"
        rm -f out.csv out.svg
        case $cmd in
        aggregate) "$CLI" aggregate "$1" -o out.csv ;;
        compare) "$CLI" compare "$1" "$1" -o out.csv ;;
        plot) "$CLI" plot "$1" --kind depth --metric a -o out.svg ;;
        esac >out 2>err </dev/null
        rc=$?
        [ $rc -eq 1 ] || fail "exit $rc, expected 1: $(head -c 200 err)"
        [ "$(wc -l <err)" -eq 1 ] || fail "$(wc -l <err) stderr lines: $(head -c 300 err)"
        grep -q "^attngeom: $1: $2: $3\$" err || fail "stderr: $(head -c 200 err)"
        [ -s out ] && fail "stdout is not empty"
        [ -e out.csv ] || [ -e out.svg ] && fail "an output file was written"
    done
}
refused lone.jsonl "line 1" "more than 4096 keys in a record"
refused second.jsonl "line 2" "more than 4096 keys in a record"
refused second.json "record 2" "more than 4096 keys in a record"
refused wide.csv "line 1" "more than 4096 cells"
refused wide_row.csv "line 3" "more than 4096 cells"
refused nul.csv "line 3" "a NUL byte in a cell"
refused nul.tsv "line 2" "a NUL byte in a cell"

check "aggregated records of many keys aggregate again"
"$CLI" aggregate per.jsonl --format jsonl -o agg.jsonl || fail "aggregate exit $?"
"$CLI" aggregate agg.jsonl --format csv >again.csv || fail "re-aggregate exit $?"
"$CLI" aggregate per.jsonl --format csv >direct.csv || fail "aggregate exit $?"
cmp -s again.csv direct.csv || fail "the aggregate of the aggregate differs"

if [ -n "${AG_SANITIZE:-}" ]; then
    echo "records.sh: ulimit checks skipped under AddressSanitizer"
    finish
    exit $?
fi

check "20,000 records of their own group and key: small under ulimit -v"
(ulimit -v 400000 && exec timeout -k 5 60 "$CLI" aggregate sparse.jsonl --format csv) >out 2>err
rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(head -c 200 err)"
[ "$(head -1 out)" = "model,unit,n,n_units,v,v_std,v_ci_low,v_ci_high,v_n" ] || fail "header $(head -1 out)"
[ "$(wc -l <out)" -eq 20001 ] || fail "$(wc -l <out) lines, expected 20001"
grep -qx '"g19999","record",1,1,0,,,,1' out || fail "the last group's row is missing"

check "a JSON document jansson cannot hold: out of memory"
(ulimit -v 150000 && exec timeout -k 5 60 "$CLI" aggregate many.json --format csv) >out 2>err
rc=$?
[ $rc -eq 1 ] || fail "exit $rc, expected 1: $(head -c 200 err)"
[ "$(cat err)" = "attngeom: many.json: line 1: out of memory" ] || fail "stderr: $(head -c 200 err)"
[ -s out ] && fail "stdout is not empty"
finish
