#!/bin/sh
# tests/cli/build.sh CLI — the Makefile adds CPPFLAGS, CFLAGS and LDFLAGS
# given on the command line or in the environment to its own flags instead
# of replacing them (`make CFLAGS=-O0` used to drop -std=c11 -Iinclude ...):
# every compile line of the library, CLI, tests, examples and benchmarks
# keeps the project's flags and ends with the user's, every link line has
# LDFLAGS; WERROR=1 and SANITIZE=1 add theirs. The library's objects are
# compiled with -fvisibility=hidden (only AG_EXPORT functions are exported;
# tests/cli/install.sh checks the result) and the shared library is linked
# with its SONAME. Dry runs (make -n): nothing is built. Run from the repository root; CLI is only checked to exist.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"

B=$T/b
TARGETS="$B/src/base/core.o $B/analysis/matrix.o $B/src/cli/main.o $B/tests/io/test_npy.o
$B/libattngeom.so $B/attngeom $B/tests/run_tests $B/examples/matrix_metrics
$B/bench/bench_weights"
# dry ARGS... — the commands make would run for TARGETS, one per line, with
# nothing inherited from a calling make (make test sets MAKEFLAGS).
dry() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u CPPFLAGS -u LDFLAGS \
        make -n -B BUILD="$B" "$@" $TARGETS 2>"$T/err" | grep -E '^(cc|gcc|clang) ' >"$T/cmds"
    [ -s "$T/cmds" ] || fail "make -n printed no compiler commands: $(head -c 300 "$T/err")"
}
# has WORD... — every line of $T/cmds.$1 contains each word (fixed strings).
has() {
    kind=$1
    shift
    for w in "$@"; do
        if grep -vqF -- " $w" "$T/cmds.$kind"; then
            fail "a $kind line lacks '$w': $(grep -vF -- " $w" "$T/cmds.$kind" | head -n 1 | cut -c1-200)"
        fi
    done
}
split() {
    grep -E ' -c ' "$T/cmds" >"$T/cmds.compile"
    grep -E ' -o [^ ]*(/attngeom|\.so[.0-9]*|/run_tests|/examples/[a-z_]+|/bench/[a-z_]+)( |$)' "$T/cmds" >"$T/cmds.link"
    [ "$(wc -l <"$T/cmds.compile")" -ge 4 ] || fail "expected 4 or more compile lines"
    [ "$(wc -l <"$T/cmds.link")" -eq 5 ] || fail "expected 5 link lines, got $(wc -l <"$T/cmds.link")"
}
PROJECT="-std=c11 -D_GNU_SOURCE -Iinclude -Wall -Wextra -fPIC"

check "make CFLAGS=... CPPFLAGS=... LDFLAGS=... keeps the project's flags"
dry CFLAGS='-O0 -g3' CPPFLAGS=-DAG_BUILD_PROBE=1 LDFLAGS=-Wl,--as-needed
split
has compile $PROJECT -DAG_BUILD_PROBE=1 "-O0 -g3"
has link -Wl,--as-needed "-O0 -g3"
# the user's optimisation comes after the project's -O2, so it wins
grep -q -- '-O2 .*-O0 -g3' "$T/cmds.compile" || fail "-O0 does not follow -O2"

check "CFLAGS and LDFLAGS from the environment"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL CFLAGS=-O1 LDFLAGS=-Wl,-z,now \
    make -n -B BUILD="$B" $TARGETS 2>"$T/err" | grep -E '^(cc|gcc|clang) ' >"$T/cmds"
split
has compile $PROJECT -O1
has link -Wl,-z,now -O1

check "WERROR=1 with user CFLAGS"
dry WERROR=1 CFLAGS=-O0
split
has compile $PROJECT -Werror -O0

check "SANITIZE=1 (make sanitize's build) with user CFLAGS"
dry SANITIZE=1 CFLAGS=-O1
split
has compile $PROJECT -fsanitize=address,undefined -fno-sanitize-recover=all -O1
has link -fsanitize=address,undefined

check "-Isrc for the library and the unit tests only (tests/arch/isrc.sh checks every line)"
dry CFLAGS=-O1
split
for o in src/base/core.o analysis/matrix.o tests/io/test_npy.o; do
    grep -F " -o $B/$o" "$T/cmds.compile" | grep -qF -- ' -Isrc ' || fail "$o is compiled without -Isrc"
done
grep -F " -o $B/src/cli/main.o" "$T/cmds.compile" | grep -qF -- ' -Isrc ' \
    && fail "the CLI is compiled with -Isrc (it may use only include/)"
grep -E -- "-o $B/(examples|bench)/" "$T/cmds" | grep -qF -- ' -Isrc ' \
    && fail "an example or benchmark is compiled with -Isrc"

check "header dependencies: every compile writes its .d (-MMD -MP)"
dry CFLAGS=-O1
split
has compile -MMD -MP
grep -E -- "-o $B/(examples|bench)/" "$T/cmds" | grep -vqF -- "-MF " \
    && fail "an example or benchmark line has no -MF"

check "library objects hidden by default, the shared library has a SONAME"
dry CFLAGS=-O1
split
grep -F " -o $B/src/base/core.o" "$T/cmds.compile" | grep -qF -- ' -fvisibility=hidden ' \
    || fail "src/base/core.o is not compiled with -fvisibility=hidden"
grep -F " -o $B/src/cli/main.o" "$T/cmds.compile" | grep -qF -- '-fvisibility' \
    && fail "the CLI is compiled with -fvisibility (only the library is)"
grep -E ' -shared ' "$T/cmds.link" | grep -qE -- '-Wl,-soname,libattngeom\.so\.[0-9]+ ' \
    || fail "the shared library is not linked with -Wl,-soname,libattngeom.so.MAJOR"

check "CC=clang"
dry CC=clang CFLAGS=-O0
grep -vq '^clang ' "$T/cmds" && fail "a line does not use clang: $(grep -v '^clang ' "$T/cmds" | head -n 1)"

finish
