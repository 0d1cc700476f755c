#!/bin/sh
# tests/cli/limits.sh CLI — under an address-space limit (ulimit -v) every
# command ends: exit 0 with the same bytes as an unlimited run, or exit 1 with
# one "out of memory" line on stderr and nothing on stdout. Without the CLI's
# BLAS set-up (src/cli/blas.c) OpenBLAS 0.3.21 retries a failed 128 MiB buffer
# mapping forever: a worker started at load time spins and exit() waits for
# it (even --version hangs), or the main thread spins inside LAPACK; and each
# thread inside a BLAS call at once maps a buffer of its own, so -j N runs one
# thread under a limit. Each run is under `timeout`, so a hang fails the check
# instead of stalling the suite. The unlimited reference runs use every CPU
# (the default -j): an output under a limit (one thread) must equal it byte
# for byte. Skipped under AddressSanitizer
# (AG_SANITIZE set by `make sanitize`): ASan reserves terabytes of address
# space and cannot run under ulimit -v. Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
if [ -n "${AG_SANITIZE:-}" ]; then
    echo "limits.sh: skipped under AddressSanitizer (it cannot run under ulimit -v)"
    exit 0
fi
M=$GPT2
cd "$T" || exit 1

"$PY" - <<'EOF' || { echo "limits.sh: could not make test files" >&2; exit 1; }
import numpy as np
rng = np.random.default_rng(8)
for n in (64, 400):
    A = rng.random((n, n))
    np.save(f"s{n}.npy", A / A.sum(axis=1, keepdims=True))
A = rng.random((8, 400, 400))
np.save("h400.npy", A / A.sum(axis=2, keepdims=True))
EOF
TEXT="In the beginning God created the heaven and the earth."

# limited KB WANT ARGS... — run the CLI under `ulimit -v KB` and a timeout.
# WANT is 0 (must succeed, output equal to the unlimited one-thread run's),
# oom (must fail with one "out of memory" line) or any (either of the two).
limited() {
    kb=$1 want=$2
    shift 2
    "$CLI" "$@" >ref.out 2>ref.err ||
        { fail "unlimited run exited $?: $(head -c 200 ref.err)"; return; }
    (ulimit -v "$kb" && exec timeout -k 5 60 "$CLI" "$@") >out 2>err </dev/null
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        fail "still running after 60 s under ulimit -v $kb (exit $rc)"
        return
    fi
    if [ $rc -eq 0 ] && [ "$want" != oom ]; then
        cmp -s out ref.out || fail "exit 0 under ulimit -v $kb but the output differs from the unlimited run"
        [ -s err ] && fail "exit 0 but stderr: $(head -c 200 err)"
    elif [ $rc -eq 1 ] && [ "$want" != 0 ]; then
        [ "$(wc -l <err)" -eq 1 ] || fail "exit 1 with $(wc -l <err) stderr lines, expected 1: $(head -c 300 err)"
        grep -q "^attngeom: .*out of memory" err || fail "exit 1 without 'out of memory': $(head -c 200 err)"
        [ -s out ] && fail "exit 1 but stdout is not empty"
    else
        fail "exit $rc under ulimit -v $kb, expected $want: $(head -c 200 err)"
    fi
}

# 150 MB: the libraries fit (about 120 MB of mappings since igraph brings
# libxml2 and ICU's 31 MB data), the libraries and OpenBLAS's 128 MiB
# buffer together do not.
check "--version under 150 MB (an OpenBLAS worker started at load used to block exit)"
limited 150000 0 --version
check "matrix under 150 MB"
limited 150000 oom matrix s64.npy
check "analyze under 150 MB"
limited 150000 oom analyze "$M" --text "$TEXT"
check "weights under 150 MB"
limited 150000 oom weights "$M" --layers 0
check "tokenize under 150 MB (no BLAS)"
limited 150000 0 tokenize "$M" --text "$TEXT"

# 300 MB: the buffer fits; the data may or may not (it did hang here).
check "matrix 400x400 under 300 MB"
limited 300000 any matrix s400.npy
check "analyze under 300 MB"
limited 300000 any analyze "$M" --text "$TEXT" --metrics spectrum,stability
check "-j 4 and OPENBLAS_NUM_THREADS=4 on 8 heads under 300 MB (one thread: a second buffer would spin)"
export OPENBLAS_NUM_THREADS=4
limited 300000 any matrix h400.npy --metrics spectrum -j 4
check "analyze -j 4 of a corpus under 300 MB"
printf '%s\nthe second text\nand a third one\n' "$TEXT" >three.txt
limited 300000 any analyze "$M" --text-file three.txt --metrics spectrum -j 4
unset OPENBLAS_NUM_THREADS

# 2 GB: everything fits, the results are those of an unlimited run.
check "matrix under 2 GB"
limited 2000000 0 matrix s400.npy --format json
check "analyze under 2 GB"
limited 2000000 0 analyze "$M" --text "$TEXT" --format json --metrics all

check "analyze of a corpus -j 3 under 2 GB: the bytes of the unlimited run"
limited 2000000 0 analyze "$M" --text-file three.txt --format csv --metrics spectrum,curvature -j 3

finish
