#!/bin/sh
# tests/arch/isrc.sh — the CLI, the MPI driver, the examples and the
# benchmarks use only the public API (issue 25: "make -n shows no -Isrc on a
# CLI, MPI, example or bench compile"): their compile lines carry -Iinclude
# and never -Isrc, while the library's and the unit tests' do carry -Isrc.
# A dry run (make -n -B) into a throwaway BUILD folder: nothing is built.
# Run from the repository root (make arch-test does).
set -u
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d "${TMPDIR:-/tmp}/ag-isrc.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
B=$T/b
BENCH=$(for f in bench/*.c; do [ -f "$f" ] && printf '%s ' "$B/${f%.c}"; done)
# the targets themselves, never `mpi` or `bench`: their recipes run $(MAKE)
# even under -n
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u CPPFLAGS \
    make -n -B BUILD="$B" "$B/attngeom" "$B/attngeom-mpi" "$B/tests/run_tests" examples $BENCH \
    >"$T/out" 2>"$T/err" || { echo "FAIL: make -n: $(head -c 400 "$T/err")"; exit 1; }
grep -E '^(cc|gcc|clang|[^ ]*-?(gcc|clang|cc)(-[0-9.]+)?) ' "$T/out" >"$T/cmds"
# the source of each compile line: "-c FILE" (objects) or the .c file given
# to a compile-and-link line (examples, benchmarks)
awk '{ src = ""
       for (i = 1; i <= NF; i++) {
           if ($i == "-c" && i < NF) src = $(i + 1)
           else if (src == "" && $i ~ /\.c$/) src = $i
       }
       if (src != "") print src "\t" $0 }' "$T/cmds" >"$T/src"
st=0
public=0
internal=0
while IFS='	' read -r src line; do
    case $src in
        src/cli/*|src/mpi/*|examples/*|bench/*)
            public=$((public + 1))
            case " $line " in
                *" -Isrc "*) echo "FAIL: $src is compiled with -Isrc (it may use only include/)"; st=1 ;;
            esac
            case " $line " in
                *" -Iinclude "*) ;;
                *) echo "FAIL: $src is compiled without -Iinclude"; st=1 ;;
            esac ;;
        src/*|analysis/*|tests/*)
            internal=$((internal + 1))
            case " $line " in
                *" -Isrc "*) ;;
                *) echo "FAIL: $src (library or unit test) is compiled without -Isrc"; st=1 ;;
            esac ;;
    esac
done <"$T/src"
# every kind must have been seen, or the check checked nothing
for kind in src/cli/ src/mpi/ examples/ bench/ analysis/ tests/; do
    grep -q "^$kind" "$T/src" || { echo "FAIL: make -n compiled nothing under $kind"; st=1; }
done
[ $st -eq 0 ] && echo "isrc: ok ($public CLI, MPI, example and bench compiles without -Isrc; $internal library and test compiles with it)"
exit $st
