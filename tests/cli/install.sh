#!/bin/sh
# tests/cli/install.sh CLI — `make install` as a user of the C library sees
# it (docs/library.md): into an empty PREFIX it puts exactly the documented
# files with their modes; the shared library has the SONAME
# libattngeom.so.MAJOR and exports exactly the functions the headers declare
# (all ag_); the example program of attngeom(3), written out of the
# installed man page into a folder outside the source tree, compiles with
# `pkg-config --cflags --libs attngeom` alone, runs against the installed
# shared library (LD_LIBRARY_PATH: the .pc sets no run path) and prints the
# man page's output (the identity's effective and stable rank n, the
# version), and links with `pkg-config --static` and -static into a program
# that needs no shared library; both man pages render without a warning,
# and attngeom.1 names every option that any `--help` prints; `make
# uninstall` leaves PREFIX empty; the same with DESTDIR. The build the CLI
# belongs to is installed (its folder is BUILD). Skipped under
# AG_SANITIZE: ASan objects cannot be linked by a plain cc or -static.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
if [ -n "${AG_SANITIZE:-}" ]; then
    echo "$SCRIPT: skipped under AG_SANITIZE (ASan builds do not link into plain programs)"
    exit 0
fi
need include/attngeom/core.h docs/man/attngeom.1 docs/man/attngeom.3 scripts/install.sh
BUILD=$(dirname "$CLI")
case $BUILD in "$ROOT"/*) BUILD=${BUILD#"$ROOT"/} ;; esac

# imake ARGS... : the project's make, nothing inherited from a calling make
imake() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s BUILD="$BUILD" LDCONFIG= "$@" \
        >"$T/make.out" 2>&1 || { fail "make $* failed: $(tail -n 5 "$T/make.out")"; return 1; }
}

# The version: the header's three numbers, ag_version() of the CLI.
part() { sed -n "s/^#define AG_VERSION_$1 \\([0-9][0-9]*\\)\$/\\1/p" include/attngeom/core.h; }
VER=$(part MAJOR).$(part MINOR).$(part PATCH)
MAJOR=$(part MAJOR)
check "the CLI prints the header's version"
[ "$("$CLI" --version)" = "attngeom $VER" ] || fail "attngeom --version: $("$CLI" --version), header $VER"

P=$T/prefix
mkdir "$P"
imake install PREFIX="$P" || exit 1
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
LIB=$P/lib

check "exactly the documented files, with their modes"
{
    echo "bin/attngeom 755"
    [ -f "$BUILD/attngeom-mpi" ] && echo "bin/attngeom-mpi 755"
    echo "include/attngeom.h 644"
    for h in include/attngeom/*.h; do echo "include/attngeom/${h##*/} 644"; done
    echo "lib/libattngeom.a 644"
    echo "lib/libattngeom.so -> libattngeom.so.$VER"
    echo "lib/libattngeom.so.$MAJOR -> libattngeom.so.$VER"
    echo "lib/libattngeom.so.$VER 644"
    echo "lib/pkgconfig/attngeom.pc 644"
    echo "share/man/man1/attngeom.1 644"
    echo "share/man/man3/attngeom.3 644"
} | sort >"$T/want.files"
(cd "$P" && find . ! -type d | sed 's|^\./||' | sort | while IFS= read -r f; do
    if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else echo "$f $(stat -c %a "$f")"; fi
done) >"$T/got.files"
cmp -s "$T/want.files" "$T/got.files" || fail "installed files differ: $(diff "$T/want.files" "$T/got.files" | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
cmp -s "$P/bin/attngeom" "$CLI" || fail "bin/attngeom is not $CLI"
for h in include/attngeom.h include/attngeom/*.h; do
    cmp -s "$h" "$P/$h" || fail "$P/$h differs from $h"
done

check "SONAME libattngeom.so.$MAJOR"
readelf -d "$LIB/libattngeom.so.$VER" >"$T/dyn" || fail "readelf -d failed"
grep -q "(SONAME) *Library soname: \[libattngeom\.so\.$MAJOR\]" "$T/dyn" \
    || fail "no SONAME libattngeom.so.$MAJOR: $(grep SONAME "$T/dyn")"

check "the shared library exports only ag_ functions, each one the headers declare"
nm -D --defined-only "$LIB/libattngeom.so.$VER" | awk '{print $3}' | sort >"$T/exported"
[ -s "$T/exported" ] || fail "nm -D lists nothing"
grep -v '^ag_' "$T/exported" >"$T/foreign" && fail "exported without the ag_ prefix: $(head -n 5 "$T/foreign" | tr '\n' ' ')"
# every declaration of the installed headers: AG_EXPORT type ag_name(
cat "$P"/include/attngeom.h "$P"/include/attngeom/*.h | grep -E '^AG_EXPORT ' \
    | sed -E 's/^[^(]*[^a-z0-9_](ag_[a-z0-9_]+)\(.*/\1/' | sort >"$T/declared"
[ "$(wc -l <"$T/declared")" -ge 100 ] || fail "only $(wc -l <"$T/declared") AG_EXPORT declarations found"
cmp -s "$T/declared" "$T/exported" || fail "declared vs exported: $(diff "$T/declared" "$T/exported" | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
# a public function declared without AG_EXPORT would be hidden: none may be
cat "$P"/include/attngeom/*.h | grep -E '^[a-z][a-z0-9_ *]*[ *]ag_[a-z0-9_]+\(' | grep -v '^typedef' >"$T/bare" \
    && fail "declared without AG_EXPORT: $(head -n 3 "$T/bare" | tr '\n' ' ')"

check "pkg-config knows the version, the include and library folders"
[ "$(pkg-config --modversion attngeom)" = "$VER" ] || fail "modversion $(pkg-config --modversion attngeom)"
[ "$(pkg-config --variable=libdir attngeom)" = "$LIB" ] || fail "libdir $(pkg-config --variable=libdir attngeom)"
pkg-config --cflags attngeom | grep -qF -- "-I$P/include" || fail "cflags: $(pkg-config --cflags attngeom)"

# The example of attngeom(3), and the output its page shows, out of the
# installed page into a folder of its own outside the source tree.
X=$T/external
mkdir "$X"
unroff() { sed 's/\\e/\\/g; s/\\-/-/g; s/\\(aq/'"'"'/g'; }
sed -n '/^\.\\" example begin/,/^\.\\" example end/p' "$P/share/man/man3/attngeom.3" | sed '1d;$d' | unroff >"$X/identity.c"
sed -n '/^\.\\" example end/,/^\.SH/p' "$P/share/man/man3/attngeom.3" | unroff \
    | sed -n '/^\$ \.\/identity 8$/,/^\$ /p' | sed '1d;$d' >"$X/want8"
grep -q 'ag_matrix_metrics' "$X/identity.c" || fail "no example program in attngeom.3"
[ "$(wc -l <"$X/want8")" -eq 3 ] || fail "attngeom.3 shows no output of ./identity 8"

# closed ITEM FILE N : the line "ITEM value" of FILE has value n within 1e-12 n
closed() {
    awk -v k="$1" -v n="$3" '$1 == k { d = $2 - n; if (d < 0) d = -d; ok = d <= 1e-12 * n }
        END { exit !ok }' "$2" || fail "$1 of the ${3}x$3 identity is not $3: $(grep "^$1 " "$2")"
}

# try_program NAME : NAME (built in $X) prints the man page's output for
# n = 8, the closed forms for n = 5, and one error line for n = 0
try_program() {
    (cd "$X" && "./$1" 8) >"$X/$1.8" 2>&1 || fail "$1 8 exited $?: $(head -c 200 "$X/$1.8")"
    cmp -s "$X/want8" "$X/$1.8" || fail "$1 8 prints $(tr '\n' '|' <"$X/$1.8"), attngeom.3 shows $(tr '\n' '|' <"$X/want8")"
    (cd "$X" && "./$1" 5) >"$X/$1.5" || fail "$1 5 exited $?"
    [ "$(head -n 1 "$X/$1.5")" = "attngeom $VER" ] || fail "$1 prints version $(head -n 1 "$X/$1.5")"
    closed effective_rank "$X/$1.5" 5
    closed stable_rank "$X/$1.5" 5
    (cd "$X" && "./$1" 0) >"$X/$1.0" 2>&1 && fail "$1 0 succeeded"
    grep -qx 'identity: .*(invalid argument)' "$X/$1.0" || fail "$1 0 printed $(head -c 200 "$X/$1.0")"
}

check "an outside program links with pkg-config --cflags --libs alone and runs on the shared library"
(cd "$X" && cc -std=c11 -Wall -Wextra -Werror identity.c -o identity $(pkg-config --cflags --libs attngeom)) \
    >"$X/cc.out" 2>&1 || fail "cc failed: $(head -c 300 "$X/cc.out")"
if [ -x "$X/identity" ]; then
    readelf -d "$X/identity" | grep -q 'NEEDED.*\[libattngeom\.so\.'"$MAJOR"'\]' \
        || fail "identity does not need libattngeom.so.$MAJOR"
    LD_LIBRARY_PATH=$LIB ldd "$X/identity" | grep -qF "libattngeom.so.$MAJOR => $LIB/libattngeom.so.$MAJOR" \
        || fail "identity does not load $LIB/libattngeom.so.$MAJOR"
    LD_LIBRARY_PATH=$LIB
    export LD_LIBRARY_PATH
    try_program identity
    unset LD_LIBRARY_PATH
fi

check "pkg-config --static links it with no shared library at all"
(cd "$X" && cc -static -std=c11 identity.c -o identity_static $(pkg-config --static --cflags --libs attngeom)) \
    >"$X/cc.out" 2>&1 || fail "cc -static failed: $(head -c 300 "$X/cc.out")"
if [ -x "$X/identity_static" ]; then
    readelf -d "$X/identity_static" | grep -q NEEDED && fail "identity_static needs shared libraries"
    try_program identity_static
fi

check "both man pages render without a warning"
for page in man1/attngeom.1 man3/attngeom.3; do
    man --warnings -l "$P/share/man/$page" >"$T/page.txt" 2>"$T/page.err" || fail "man -l $page failed"
    [ -s "$T/page.err" ] && fail "man --warnings -l $page: $(head -c 300 "$T/page.err")"
    grep -q 'EXAMPLES' "$T/page.txt" || fail "$page renders no EXAMPLES"
done

check "attngeom.1 names every command and every option that --help prints"
# the page's text: roff's \- as -, font changes dropped
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$P/share/man/man1/attngeom.1" >"$T/page1"
commands=$("$CLI" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$commands" | wc -w)" -ge 10 ] || fail "attngeom --help lists only: $commands"
grep -q 'EXIT STATUS' "$T/page1" || fail "attngeom.1 has no EXIT STATUS"
for c in $commands; do
    grep -qE "^\.(B|BI|BR) \"?$c( |\"|\$)" "$T/page1" || fail "attngeom.1 has no entry for the command $c"
done
for c in '' $commands; do
    "$CLI" $c --help
done >"$T/helps"
# attngeom-mpi's own --help (its commands' are attngeom's)
[ -x "$BUILD/attngeom-mpi" ] && "$BUILD/attngeom-mpi" --help >>"$T/helps"
grep -q '^\.SH MPI' "$T/page1" || fail "attngeom.1 has no MPI section"
cat "$T/helps" | grep -oE '(^|[][ ,(/|])--?[a-zA-Z][a-zA-Z0-9-]*' | sed -E 's/^[][ ,(/|]//' | sort -u >"$T/options"
[ "$(wc -l <"$T/options")" -ge 50 ] || fail "only $(wc -l <"$T/options") options found in --help"
while IFS= read -r o; do
    grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" "$T/page1" || fail "attngeom.1 lacks $o"
done <"$T/options"

check "make uninstall leaves the empty prefix empty"
imake uninstall PREFIX="$P"
[ -z "$(ls -A "$P")" ] || fail "left in $P: $(cd "$P" && find . | head -n 5 | tr '\n' ' ')"

check "DESTDIR: staged under it, attngeom.pc names the real prefix, uninstall empties it"
D=$T/stage
mkdir "$D"
imake install DESTDIR="$D" PREFIX=/usr/local
[ -f "$D/usr/local/lib/libattngeom.so.$VER" ] || fail "no $D/usr/local/lib/libattngeom.so.$VER"
grep -qx 'prefix=/usr/local' "$D/usr/local/lib/pkgconfig/attngeom.pc" || fail "attngeom.pc: $(head -n 1 "$D/usr/local/lib/pkgconfig/attngeom.pc")"
[ "$(cd "$D/usr/local" && find . ! -type d | wc -l)" -eq "$(wc -l <"$T/want.files")" ] \
    || fail "DESTDIR holds $(cd "$D/usr/local" && find . ! -type d | wc -l) files"
imake uninstall DESTDIR="$D" PREFIX=/usr/local
[ -z "$(ls -A "$D")" ] || fail "left in $D: $(cd "$D" && find . | head -n 5 | tr '\n' ' ')"

if [ -d python/attngeom ]; then
    check "PYTHONDIR: python/attngeom/*.py installed there, removed by uninstall"
    mkdir -p "$P"
    imake install PREFIX="$P" PYTHONDIR="$P/py"
    for f in python/attngeom/*.py; do
        cmp -s "$f" "$P/py/attngeom/${f##*/}" || fail "$P/py/attngeom/${f##*/} is not $f"
    done
    check "PYTHONDIR: import attngeom from the installed location, outside the tree: the installed library, matrix_metrics = the installed attngeom matrix"
    (cd "$T" && env -u ATTNGEOM_LIB PYTHONPATH="$P/py" "$PY" - "$P" <<'EOF'
import json, subprocess, sys
import numpy as np
import attngeom
prefix = sys.argv[1]
assert attngeom.__file__.startswith(prefix + "/py/attngeom/"), attngeom.__file__
lib = attngeom._lib.lib._name
assert lib == prefix + "/lib/libattngeom.so.0", lib
rng = np.random.default_rng(3)
A = rng.random((2, 6, 6))
A /= A.sum(axis=-1, keepdims=True)
np.save("py_in.npy", A)
got = attngeom.matrix_metrics(A)
cli = json.loads(subprocess.run([prefix + "/bin/attngeom", "matrix", "py_in.npy", "--format", "json"],
                                stdout=subprocess.PIPE, check=True).stdout)["records"]
for r in cli:
    del r["model"]  # the CLI names its input; the Python records have no source
assert got == cli, (got[0], cli[0])
print("installed package ok:", attngeom.__version__, len(got), "records")
EOF
    ) >"$T/py.out" 2>&1 || fail "$(tail -n 5 "$T/py.out")"
    imake uninstall PREFIX="$P" PYTHONDIR="$P/py"
    [ -z "$(ls -A "$P")" ] || fail "left in $P: $(cd "$P" && find . | head -n 5 | tr '\n' ' ')"
fi

finish
