#!/bin/sh
# Build the libFuzzer harnesses of tests/fuzz/ and run each for a while.
#   tests/fuzz/run.sh [SECONDS [TARGET...]]     (from the repository root)
# SECONDS defaults to $FUZZ_SECONDS or 60; TARGETs default to every
# fuzz_*.c here. Two targets run at a time (FUZZ_JOBS). New inputs go to
# tests/fuzz/corpus-out/TARGET/ (seeds in tests/fuzz/corpus/TARGET/ are only
# read), crashes to tests/fuzz/build/artifacts/. Needs clang and the
# libFuzzer/ASan runtimes (Debian 12: clang, libclang-rt-14-dev), installed
# here when missing as root; otherwise the apt-get line is printed.
set -eu
cd "$(dirname "$0")/../.."
FZ=tests/fuzz
B=$FZ/build
SECONDS_EACH=${1:-${FUZZ_SECONDS:-60}}
[ $# -gt 0 ] && shift
JOBS=${FUZZ_JOBS:-2}
CC=${FUZZ_CC:-clang}

# ---- toolchain ----
have_rt() {
    printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}\n' \
        >"${TMPDIR:-/tmp}/agfz-probe.c"
    "$CC" -fsanitize=fuzzer,address,undefined -o "${TMPDIR:-/tmp}/agfz-probe" \
        "${TMPDIR:-/tmp}/agfz-probe.c" >/dev/null 2>&1
    r=$?
    rm -f "${TMPDIR:-/tmp}/agfz-probe" "${TMPDIR:-/tmp}/agfz-probe.c"
    return $r
}
if ! command -v "$CC" >/dev/null 2>&1 || ! have_rt; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "fuzz: clang with the libFuzzer runtime is missing; install it with:" >&2
        echo "  sudo apt-get install -y clang libclang-rt-14-dev" >&2
        exit 1
    fi
    echo "fuzz: installing clang libclang-rt-14-dev" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
    have_rt || { echo "fuzz: $CC still cannot link -fsanitize=fuzzer" >&2; exit 1; }
fi
sh scripts/install-deps.sh

# ---- build ----
# the Makefile's PKGS but cairo and fontconfig (the plots are not built here);
# igraph serves attention flow (analysis/flow.c)
PKGS="lapacke openblas gsl jansson libpcre2-8 libutf8proc sndfile libpng libjpeg igraph"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
# the caller's CPPFLAGS / CFLAGS come after these, LDFLAGS on the link lines
FZ_CFLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
-Iinclude -Isrc $(pkg-config --cflags $PKGS) ${CPPFLAGS:-} $SAN ${CFLAGS:-}"
LIBS="$(pkg-config --libs $PKGS) -lm"
mkdir -p $B/obj $B/artifacts
# library objects, rebuilt when a source or any header is newer: every
# source of src/'s module folders and analysis/ but the CLI's, the MPI
# driver's and the plots' (cairo is not linked here), as the Makefile's
# LIB_SRCS, so that moving files between folders needs no edit here. The
# harnesses are tests: they keep -Isrc (tests/arch/isrc.sh).
newest_h=$(ls -t include/*.h include/attngeom/*.h src/*/*.h analysis/*.h 2>/dev/null | head -n1)
OBJS=""
for s in src/*/*.c analysis/*.c; do
    case $s in src/cli/*|src/mpi/*|src/plot/*) continue ;; esac
    o=$B/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')
    OBJS="$OBJS $o"
    if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then
        echo "$CC $FZ_CFLAGS -fsanitize=fuzzer-no-link -c $s -o $o"
    fi
done >$B/lib.cmds
if [ -s $B/lib.cmds ]; then
    echo "fuzz: compiling $(wc -l <$B/lib.cmds) library sources" >&2
    tr '\n' '\0' <$B/lib.cmds | xargs -0 -n1 -P"$JOBS" sh -c || exit 1
fi

if [ $# -eq 0 ]; then
    set -- $(cd $FZ && ls fuzz_*.c | sed 's/\.c$//')
fi
for t in "$@"; do
    [ -f $FZ/$t.c ] || { echo "fuzz: no harness $FZ/$t.c" >&2; exit 1; }
    echo "fuzz: linking $B/$t" >&2
    $CC $FZ_CFLAGS ${LDFLAGS:-} -fsanitize=fuzzer -o $B/$t $FZ/$t.c $OBJS $LIBS # not obj/*.o: stale objects of removed sources
done

# ---- run ----
max_len() {
    case $1 in
        fuzz_npy) echo 2048 ;;
        fuzz_safetensors) echo 4096 ;;
        fuzz_tokenizer_json) echo 8192 ;;
        fuzz_vocab_files) echo 8192 ;;
        fuzz_tokenize_text) echo 1024 ;;
        fuzz_model_config) echo 2048 ;;
        fuzz_matrix_metrics) echo 2058 ;;
        fuzz_image) echo 8192 ;;
        *) echo 4096 ;;
    esac
}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_one() {
    t=$1
    mkdir -p $FZ/corpus-out/$t $FZ/corpus/$t
    dict=""
    [ -f $FZ/$t.dict ] && dict="-dict=$FZ/$t.dict"
    $B/$t $FZ/corpus-out/$t $FZ/corpus/$t $dict -max_len="$(max_len $t)" \
        -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix=$B/artifacts/$t- \
        >$B/$t.log 2>&1
    r=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' $B/$t.log | grep -o '[0-9]*$' || true)
    if [ $r -eq 0 ]; then
        echo "fuzz: $t: ok, ${execs:-?} runs in ${SECONDS_EACH}s"
    else
        echo "fuzz: $t: FAILED (exit $r); see $B/$t.log and $B/artifacts/"
        grep -m3 -E 'ERROR|runtime error|SUMMARY' $B/$t.log || true
    fi
    return $r
}
status=0
pids=""
for t in "$@"; do
    run_one "$t" &
    pids="$pids $!"
    if [ "$(echo $pids | wc -w)" -ge "$JOBS" ]; then
        for p in $pids; do wait "$p" || status=1; done
        pids=""
    fi
done
for p in $pids; do wait "$p" || status=1; done
exit $status
