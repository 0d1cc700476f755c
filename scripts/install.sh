#!/bin/sh
# scripts/install.sh install|uninstall — what `make install` and
# `make uninstall` run (the Makefile passes every variable below; the layout
# is in docs/library.md, "Install").
#
#   DESTDIR PREFIX BINDIR LIBDIR INCLUDEDIR MANDIR PKGCONFIGDIR
#                where to install (DESTDIR is prepended to every path but
#                is not written into attngeom.pc)
#   PYTHONDIR    optional: python/attngeom/*.py go to $PYTHONDIR/attngeom,
#                with _libdir.py naming the installed library
#   BUILD        the build folder (the CLI, libraries, the record below)
#   VERSION      MAJOR.MINOR.PATCH; SONAME libattngeom.so.MAJOR
#   PC_REQUIRES, PC_LIBS_PRIVATE   Requires.private and Libs.private of
#                attngeom.pc (what static linking needs besides libattngeom.a)
#   LDCONFIG     run after (un)installing into the live system as root
#                (DESTDIR empty) so the loader finds the SONAME; empty: never
#
# uninstall removes exactly the files install installs. The directories
# install had to create are recorded in $BUILD/install-dirs (as meson does,
# in the build tree, so nothing extra lands in PREFIX); uninstall removes
# those of them left empty, so an install into an empty folder and an
# uninstall leave it empty, while /usr/local/bin and friends, which existed
# before, stay. Without the record (after `make clean`) only the folders
# that are attngeom's own (include/attngeom, PYTHONDIR/attngeom) go.
set -eu

mode=${1:?usage: scripts/install.sh install|uninstall}
: "${PREFIX:?}" "${BINDIR:?}" "${LIBDIR:?}" "${INCLUDEDIR:?}" "${MANDIR:?}"
: "${PKGCONFIGDIR:?}" "${BUILD:?}" "${VERSION:?}" "${SONAME:?}"
: "${PC_REQUIRES:?}" "${PC_LIBS_PRIVATE:?}"
DESTDIR=${DESTDIR:-}
PYTHONDIR=${PYTHONDIR:-}
LDCONFIG=${LDCONFIG:-}
RECORD=$BUILD/install-dirs
LIBFILE=libattngeom.so.$VERSION

# The Python package goes only where it is asked to, and only if there is one.
python_files() {
    [ -n "$PYTHONDIR" ] && [ -d python/attngeom ] || return 0
    for f in python/attngeom/*.py; do
        [ -f "$f" ] && echo "$f"
    done
}

# mkdirs DIR : create DIR and its missing parents, recording each one created
mkdirs() {
    missing=
    d=$1
    while [ ! -d "$d" ]; do
        missing="$d
$missing"
        d=$(dirname "$d")
    done
    [ -n "$missing" ] || return 0
    mkdir -p "$1"
    printf '%s' "$missing" >>"$RECORD"
}

# put MODE SRC DIR : install SRC into DIR (created as needed) with MODE
put() {
    mkdirs "$3"
    install -m "$1" "$2" "$3/$(basename "$2")"
}

# relative DIR : DIR with a leading $PREFIX written ${prefix}, as pkg-config
# files do (pkg-config --define-prefix can then relocate it)
relative() {
    case $1 in
    "$PREFIX"/*) printf '${prefix}%s' "${1#"$PREFIX"}" ;;
    *) printf '%s' "$1" ;;
    esac
}

pc_file() {
    cat <<EOF
prefix=$PREFIX
libdir=$(relative "$LIBDIR")
includedir=$(relative "$INCLUDEDIR")

Name: attngeom
Description: geometry of attention in trained transformers (C library)
Version: $VERSION
Requires.private: $PC_REQUIRES
Cflags: -I\${includedir}
Libs: -L\${libdir} -lattngeom
Libs.private: $PC_LIBS_PRIVATE
EOF
}

run_ldconfig() {
    if [ -z "$DESTDIR" ] && [ -n "$LDCONFIG" ] && [ "$(id -u)" -eq 0 ]; then
        $LDCONFIG
    fi
}

do_install() {
    mkdir -p "$BUILD"
    put 0755 "$BUILD/attngeom" "$D$BINDIR"
    # attngeom-mpi when it was built (make mpi; docs/scaling.md)
    if [ -f "$BUILD/attngeom-mpi" ]; then
        put 0755 "$BUILD/attngeom-mpi" "$D$BINDIR"
    fi
    put 0644 "$BUILD/$LIBFILE" "$D$LIBDIR"
    ln -sf "$LIBFILE" "$D$LIBDIR/$SONAME"
    ln -sf "$LIBFILE" "$D$LIBDIR/libattngeom.so"
    put 0644 "$BUILD/libattngeom.a" "$D$LIBDIR"
    put 0644 include/attngeom.h "$D$INCLUDEDIR"
    for h in include/attngeom/*.h; do
        put 0644 "$h" "$D$INCLUDEDIR/attngeom"
    done
    pc_file >"$BUILD/attngeom.pc"
    put 0644 "$BUILD/attngeom.pc" "$D$PKGCONFIGDIR"
    put 0644 docs/man/attngeom.1 "$D$MANDIR/man1"
    put 0644 docs/man/attngeom.3 "$D$MANDIR/man3"
    for f in $(python_files); do
        put 0644 "$f" "$D$PYTHONDIR/attngeom"
    done
    if [ -n "$(python_files)" ]; then
        # where the installed package finds the installed library (its
        # loader reads this after ATTNGEOM_LIB, before the loader's path)
        printf '# written by make install\nLIBRARY = %s\n' \
            "'$LIBDIR/$SONAME'" >"$BUILD/_libdir.py"
        put 0644 "$BUILD/_libdir.py" "$D$PYTHONDIR/attngeom"
    fi
    run_ldconfig
}

# rmempty DIR... : remove each DIR that exists and is empty
rmempty() {
    for d in "$@"; do
        [ -d "$d" ] && rmdir "$d" 2>/dev/null || true
    done
}

do_uninstall() {
    rm -f "$D$BINDIR/attngeom" "$D$BINDIR/attngeom-mpi" "$D$LIBDIR/$LIBFILE" "$D$LIBDIR/$SONAME" \
        "$D$LIBDIR/libattngeom.so" "$D$LIBDIR/libattngeom.a" \
        "$D$INCLUDEDIR/attngeom.h" "$D$PKGCONFIGDIR/attngeom.pc" \
        "$D$MANDIR/man1/attngeom.1" "$D$MANDIR/man3/attngeom.3"
    for h in include/attngeom/*.h; do
        rm -f "$D$INCLUDEDIR/attngeom/$(basename "$h")"
    done
    rmempty "$D$INCLUDEDIR/attngeom"
    for f in $(python_files); do
        name=$(basename "$f" .py)
        rm -f "$D$PYTHONDIR/attngeom/$name.py" "$D$PYTHONDIR/attngeom/__pycache__/$name".*.pyc
    done
    [ -z "$(python_files)" ] || rm -f "$D$PYTHONDIR/attngeom/_libdir.py" \
        "$D$PYTHONDIR/attngeom/__pycache__/_libdir".*.pyc
    [ -z "$(python_files)" ] || rmempty "$D$PYTHONDIR/attngeom/__pycache__" "$D$PYTHONDIR/attngeom"
    if [ -f "$RECORD" ]; then
        # deepest first: a child sorts after its parent
        sort -r -u "$RECORD" | while IFS= read -r d; do rmempty "$d"; done
        kept=$(sort -u "$RECORD" | while IFS= read -r d; do if [ -d "$d" ]; then echo "$d"; fi; done)
        if [ -n "$kept" ]; then echo "$kept" >"$RECORD"; else rm -f "$RECORD"; fi
    fi
    run_ldconfig
}

D=$DESTDIR
case $mode in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "scripts/install.sh: unknown mode '$mode' (install or uninstall)" >&2; exit 2 ;;
esac
