#!/bin/sh
# tests/cli/golden.sh CLI — the golden set (tests/golden/README.md): every
# case of tests/golden/cases.txt run from the repository root gives the exit
# status, standard output, stderr and output files (their SHA-256, first 20
# hex digits) that tests/golden/expected.txt records; the cases flagged j
# again at -j 1 and -j 3, those flagged m again under `mpirun -n 2` with
# attngeom-mpi (skipped, with a note, when mpirun or attngeom-mpi is absent).
# Text is hashed after the repository root and the case's output folder are
# replaced by @ROOT@ and @O@ (JSON settings carry the model's real path);
# .npy, .png and .pdf files are hashed raw.
#   GOLDEN_UPDATE=1  rewrite expected.txt from this run and print the diff
#                    (only for an intended change of output; say so in the
#                    commit)
#   GOLDEN_QUICK=1   skip the -j and mpirun repeats (the default under make
#                    sanitize, AG_SANITIZE set, where parallel.sh and mpi.sh
#                    check the thread and rank counts; GOLDEN_QUICK=0 keeps them)
#   GOLDEN_ONLY=RE   only the cases whose ID matches the grep -E RE
# Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
# The hashes hold for one BLAS kernel: OpenBLAS's kernel in force decides
# the last bits of every LAPACK result, and of the float32 products where
# the pass calls cblas_sgemm (docs/engine.md#speed), so unpinned they would
# hold on one CPU model only (Debian's OpenBLAS 0.3.21 picks Prescott on an
# Intel Xeon model 207, Cooperlake on an AMD EPYC Zen 4). Prescott (SSE3)
# is the kernel every x86-64 CPU runs; with it an AVX-512 CPU's float32
# products run on attngeom's own kernel. tests/cli/parallel.sh and
# tests/engine/test_forward_threads.c cover the other kernels' paths.
export OPENBLAS_CORETYPE=Prescott
GD=$ROOT/tests/golden
need "$GD/cases.txt" "$GD/expected.txt" "$GPT2/config.json" "$GD/data/A4.npy"
MPI=$(dirname "$CLI")/attngeom-mpi
[ -n "${AG_SANITIZE:-}" ] && : "${GOLDEN_QUICK:=1}"
[ "${GOLDEN_QUICK:-0}" = 0 ] && GOLDEN_QUICK=
MPIRUN=
if [ -n "${GOLDEN_QUICK:-}" ]; then
    :
elif ! command -v mpirun >/dev/null 2>&1; then
    echo "golden.sh: note: mpirun not found, the mpirun repeats are skipped"
elif [ ! -x "$MPI" ]; then
    echo "golden.sh: note: $MPI not built (make mpi), the mpirun repeats are skipped"
else
    MPIRUN="timeout 60 mpirun -q --oversubscribe"
    [ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fi
[ -n "${AG_SANITIZE:-}" ] && export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

# the cases' variables: paths relative to the root, where every case runs
G=models/tiny-gpt2
B=tests/data/models/tiny-bert
GE=tests/data/models/arch/gemma2
RO=tests/data/models/arch/roberta
V=tests/data/models/tiny-vit
W=tests/data/models/tiny-whisper
D=tests/golden/data
O=$(cd "$T" && pwd -P)/o
ROOTP=$(pwd -P)
export G B GE RO V W D O

# hash FILE : the first 20 hex digits of the SHA-256 of FILE's text with the
# output folder and the root (as given and as its real path) made neutral
hash() {
    sed "s|$O|@O@|g; s|$ROOTP|@ROOT@|g; s|$ROOT|@ROOT@|g" "$1" | sha256sum | cut -c1-20
}
hash_file() {
    case $1 in
        *.npy | *.png | *.pdf) sha256sum <"$1" | cut -c1-20 ;;
        *) hash "$1" ;;
    esac
}

# prepare FLAGS : the files a case wants in $O before it runs
prepare() {
    case $1 in *a*) cp "$D/A4.npy" "$O/A.npy" && cp "$D/gpt2_ids.txt" "$O/ids.txt" ;; esac
    case $1 in *k*) echo keep >"$O/keep.csv" ;; esac
    case $1 in *p*) "$CLI" analyze "$V" --image tests/data/images/rgb8_37x23.png \
        --save-input "$O/p.npy" --format csv >/dev/null 2>&1 ;; esac
    case $1 in *f*) "$CLI" analyze "$W" --audio tests/data/audio/chirp_1s.wav --frames 40 \
        --save-input "$O/f.npy" --format csv >/dev/null 2>&1 ;; esac
    case $1 in *e*) "$CLI" analyze "$G" --tokens 464,2068,7586,21831,18045,625,262,16931,3290 \
        --format json -o "$O/golden.json" >/dev/null 2>&1 ;; esac
    return 0
}

# run_one FLAGS ARGS [PREFIX [PROG]] : the case's line "STATUS OUT=h ERR=h
# [FILE=h ...]" (the files left under $O, sorted by name)
run_one() {
    flags=$1 args=$2 prefix=${3:-} prog=${4:-$CLI}
    rm -rf "$O"
    mkdir "$O"
    prepare "$flags"
    stdin=/dev/null
    case $flags in *i*) stdin=$D/corpus.txt ;; esac
    PROG=$prog
    # the table's width (docs/cli.md, "The terminal table"): pinned, so
    # that no terminal's or caller's COLUMNS changes a case; w: 40
    COLUMNS=80
    case $flags in *w*) COLUMNS=40 ;; esac
    export PROG COLUMNS
    eval "$prefix \"\$PROG\" $args" <"$stdin" >"$T/out" 2>"$T/err"
    st=$?
    line="$st OUT=$(hash "$T/out") ERR=$(hash "$T/err")"
    for f in $(cd "$O" && find . -type f | LC_ALL=C sort); do
        line="$line ${f#./}=$(hash_file "$O/$f")"
    done
    echo "$line"
}

: >"$T/expected.new"
cases=0
while read -r id flags args; do
    case $id in '' | '#'*) continue ;; esac
    if [ -n "${GOLDEN_ONLY:-}" ]; then
        echo "$id" | grep -Eq -- "$GOLDEN_ONLY" || continue
    fi
    cases=$((cases + 1))
    want=$(grep "^$id " "$GD/expected.txt" | cut -d' ' -f2-)
    check "$id"
    got=$(run_one "$flags" "$args")
    echo "$id $got" >>"$T/expected.new"
    if [ -n "${GOLDEN_UPDATE:-}" ]; then
        want=$got
    elif [ -z "$want" ]; then
        fail "not in expected.txt (GOLDEN_UPDATE=1 adds it): $got"
    elif [ "$got" != "$want" ]; then
        fail "got $got, expected $want"
    fi
    [ -n "${GOLDEN_QUICK:-}" ] && continue
    case $flags in *j*)
        for j in 1 3; do
            check "$id -j $j"
            got=$(run_one "$flags" "$args -j $j")
            [ "$got" = "$want" ] || fail "got $got, expected $want"
        done ;;
    esac
    case $flags in *m*)
        if [ -n "$MPIRUN" ]; then
            check "$id mpirun -n 2"
            got=$(run_one "$flags" "$args" "$MPIRUN -n 2" "$MPI")
            [ "$got" = "$want" ] || fail "got $got, expected $want"
        fi ;;
    esac
done <"$GD/cases.txt"

if [ -n "${GOLDEN_UPDATE:-}" ]; then
    if [ -n "${GOLDEN_ONLY:-}" ]; then
        echo "golden.sh: GOLDEN_UPDATE with GOLDEN_ONLY: expected.txt left as it is" >&2
        exit 1
    fi
    {
        echo "# tests/golden/expected.txt — written by GOLDEN_UPDATE=1 sh tests/cli/golden.sh"
        echo "# (tests/golden/README.md): ID STATUS OUT=sha256 ERR=sha256 [FILE=sha256 ...]"
        cat "$T/expected.new"
    } >"$T/expected.txt"
    diff "$GD/expected.txt" "$T/expected.txt"
    cp "$T/expected.txt" "$GD/expected.txt"
    echo "golden.sh: expected.txt rewritten ($cases cases)"
fi
echo "golden.sh: $cases cases"
finish
