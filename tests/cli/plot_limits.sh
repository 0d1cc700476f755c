#!/bin/sh
# tests/cli/plot_limits.sh CLI — `attngeom plot` under an address-space
# limit (ulimit -v) and on inputs whose figure would be quadratic in their
# size. Under a limit a figure is written as an unlimited run writes it, or
# the run fails with exactly one stderr line naming "out of memory" (and the
# figure's file where there is one): fontconfig's own diagnostics ("Fontconfig
# error: ... out of memory", dozens of lines when its configuration cannot be
# parsed) never reach the terminal. The limits swept, 50 KB apart, are the
# 8 MB below the smallest one a figure is drawn under on this machine (found
# first by bisection), where fontconfig, cairo and the figure's buffers run
# out in turn (fontconfig's window is a few hundred KB wide, about 5 MB
# below). Skipped under AddressSanitizer (AG_SANITIZE set by `make sanitize`):
# ASan reserves terabytes of address space and cannot run under ulimit -v.
# The caps are checked by output size and ulimit -v, never by time. Run from
# the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
cd "$T" || exit 1

"$PY" - <<'EOF' || { echo "plot_limits.sh: could not make test files" >&2; exit 1; }
import json
import numpy as np
rng = np.random.default_rng(3)
A = rng.random((6, 6))
np.save("a6.npy", A / A.sum(axis=1, keepdims=True))
json.dump({"ids": list(range(6)), "tokens": ["tok%d" % k for k in range(6)]}, open("t6.json", "w"))
with open("diag.jsonl", "w") as f:  # 1000 records, a 1000 x 1000 heatmap
    for i in range(1000):
        f.write(json.dumps({"layer": i, "head": i, "v": i / 1000}) + "\n")
with open("models.jsonl", "w") as f:  # 80,000 models, one record each
    for i in range(80000):
        f.write(json.dumps({"model": "m%d" % i, "layer": i % 12, "v": i / 1000}) + "\n")
EOF

# ---- figures quadratic in their input: refused before drawing, in bounded memory ----
# Under 400 MB (the 1000 x 1000 heatmap drew a 207 MB SVG in 1.1 GB, and
# 80,000 models took 80,000 lines): one line saying why, and how to get a
# figure. Without AddressSanitizer, which cannot run under ulimit -v.
KEEP=keep.svg
K=$T/o/keep.svg
bounded() {
    if [ -n "${AG_SANITIZE:-}" ]; then
        "$CLI" "$@"
    else
        (ulimit -v 400000 && exec "$CLI" "$@")
    fi
}
run_bounded() {
    want=$1 needles=$2 DESC=$3
    shift 3
    N=$((N + 1))
    rm -rf "$T/o"
    mkdir "$T/o"
    echo keep >"$T/o/$KEEP"
    bounded "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    rc=$?
    judge_error "$want" "$needles"
}
run_bounded 1 "a heatmap of 1000 layers x 1000 heads has 1,000,000 cells, more than the 65,536" \
    "heatmap of 1000 x 1000 cells" plot diag.jsonl --kind heatmap --metric v -o "$K"
run_bounded 1 "--layers/--heads" "the heatmap's message says how" plot diag.jsonl --kind heatmap \
    --metric v -o "$K"
run_bounded 1 "records of 80000 models: a depth figure draws at most 32 lines" \
    "depth of 80,000 models" plot models.jsonl --kind depth --metric v -o "$K"
run_bounded 1 "--model NAME" "the depth message says how" plot models.jsonl --kind depth --metric v -o "$K"
KEEP=
# one model of the 80,000 is drawn, a figure of a few kilobytes
check "depth --model of 80,000 models"
bounded plot models.jsonl --kind depth --metric v --model m7 -o one.svg 2>err.txt ||
    fail "exit $?: $(head -c 300 err.txt)"
size=$(wc -c <one.svg 2>/dev/null || echo 0)
[ "$size" -gt 1000 ] && [ "$size" -lt 100000 ] || fail "one.svg has $size bytes"

if [ -n "${AG_SANITIZE:-}" ]; then
    echo "plot_limits.sh: the ulimit -v sweep is skipped under AddressSanitizer"
    finish
    exit 0
fi

# ---- out of memory: one line ------------------------------------------------------
# fontconfig run out of memory while it reads its caches scans the fonts
# again, finds none, and writes that as their cache: as root, into
# /var/cache/fontconfig, after which no process of the machine finds a font.
# Every run below uses a configuration of its own (the system's, with the
# caches in $T), so that only $T's cache can suffer.
mkdir fc
cat >fonts.conf <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>/usr/share/fonts</dir>
  <cachedir>$T/fc</cachedir>
  <include ignore_missing="yes">/etc/fonts/conf.d</include>
</fontconfig>
EOF
FONTCONFIG_FILE=$T/fonts.conf
export FONTCONFIG_FILE
ARGS="plot a6.npy --kind attention --tokens t6.json -o fig.png"
"$CLI" $ARGS 2>ref.err || { echo "plot_limits.sh: the unlimited run fails: $(cat ref.err)" >&2; exit 1; }
mv fig.png ref.png
hi=$(smallest_limit 50000 1000000 "$CLI" $ARGS)
[ -n "$hi" ] || { echo "plot_limits.sh: no figure under ulimit -v 1000000" >&2; exit 1; }
kb=$((hi - 8000))
while [ $kb -le $((hi + 200)) ]; do
    check "plot under ulimit -v $kb (figures from $hi)"
    rm -f fig.png
    (ulimit -v $kb && exec timeout -k 5 60 "$CLI" $ARGS) >out 2>err </dev/null
    rc=$?
    if [ $rc -eq 0 ]; then
        cmp -s fig.png ref.png || fail "exit 0 but the figure differs from the unlimited run's"
        [ -s err ] && fail "exit 0 but stderr: $(head -c 200 err)"
    elif [ $rc -eq 1 ]; then
        oom_line err
        [ -e fig.png ] && fail "exit 1 but fig.png was written"
    else
        fail "exit $rc: $(head -c 200 err)"
    fi
    kb=$((kb + 50))
done

finish
