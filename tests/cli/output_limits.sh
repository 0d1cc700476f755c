#!/bin/sh
# tests/cli/output_limits.sh CLI — memory running out while the output is
# formatted is reported as such: one stderr line naming the output file and
# "out of memory" (it was "cannot format the output: input/output error",
# naming nothing), exit 1, the -o file untouched. The run is `aggregate`
# of 30,000 groups to JSON (a 4 MB document built in memory), under the
# limits of the 20 MB below the smallest one it succeeds under here (found
# by bisection), where the formatting is what runs out. Skipped under
# AddressSanitizer (AG_SANITIZE set by `make sanitize`): ASan cannot run
# under ulimit -v. Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
if [ -n "${AG_SANITIZE:-}" ]; then
    echo "output_limits.sh: skipped under AddressSanitizer (it cannot run under ulimit -v)"
    exit 0
fi
cd "$T" || exit 1

"$PY" - <<'EOF' || { echo "output_limits.sh: could not make test files" >&2; exit 1; }
import json
with open("groups.jsonl", "w") as f:
    for i in range(30000):
        f.write(json.dumps({"name": "n%d" % i, "layer": 0, "v": i / 7}) + "\n")
EOF
ARGS="aggregate groups.jsonl --by name --format json -o out.json"
hi=$(smallest_limit 20000 4000000 "$CLI" $ARGS)
[ -n "$hi" ] || { echo "output_limits.sh: aggregate fails under ulimit -v 4000000" >&2; exit 1; }
formatting=0
kb=$((hi - 20000))
while [ $kb -lt "$hi" ]; do
    check "aggregate under ulimit -v $kb (succeeds from $hi)"
    echo keep >out.json
    (ulimit -v $kb && exec timeout -k 5 60 "$CLI" $ARGS) >out 2>err </dev/null
    rc=$?
    if [ $rc -eq 1 ]; then
        oom_line err
        [ "$(cat out.json)" = keep ] || fail "out.json was replaced"
        grep -q "formatting the output" err && formatting=$((formatting + 1))
        grep -q "format" err && ! grep -q "^attngeom: out.json: out of memory formatting" err &&
            fail "does not name out.json: $(head -c 200 err)"
    elif [ $rc -ne 0 ]; then
        fail "exit $rc: $(head -c 200 err)"
    fi
    kb=$((kb + 1000))
done
check "some limit ran out while formatting"
[ $formatting -gt 0 ] || fail "no run failed while formatting the output (limits $((hi - 20000)) to $hi)"

finish
