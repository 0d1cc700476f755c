#!/bin/sh
# bench/mpi_speedup.sh CLI MPI_CLI — the speed-up of attngeom-mpi
# (docs/scaling.md, "Measured speed-up"): one corpus (300 lines of 20–200
# random words, seed 7), `analyze models/tiny-gpt2 --format jsonl`, run as
# attngeom -j 1, mpirun -n 1 and -n 2 (-j 1 each) and attngeom -j 2,
# BENCH_REPS rounds (default 3) alternating the four, wall-clock medians.
# Every run must write the same bytes. Part of `make bench` when mpirun is
# installed; never of `make test`.
set -eu
CLI=$1 MPI=$2 REPS=${BENCH_REPS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 -c "
import random
random.seed(7)
w = ('the of and to in a is that for it as was with be by on not he this are or his '
     'from at which but have an they you were her she there been one all we their').split()
for i in range(300):
    print(' '.join(random.choice(w) for _ in range(random.randint(20, 200))))
" > "$T/corpus.txt"
ROOTOPT=
[ "$(id -u)" -eq 0 ] && ROOTOPT=--allow-run-as-root
ARGS="analyze $ROOT/models/tiny-gpt2 --text-file $T/corpus.txt --format jsonl"
run() { # name, command...: seconds to stdout, output to $T/<name>.jsonl
    name=$1; shift
    s=$(date +%s.%N); "$@" > "$T/$name.jsonl"; e=$(date +%s.%N)
    awk -v n="$name" -v s="$s" -v e="$e" 'BEGIN { print n, e - s }' >> "$T/times"
}
for r in $(seq "$REPS"); do
    run serial_j1 "$CLI" $ARGS -j 1
    run mpi_n1 mpirun $ROOTOPT --oversubscribe -q -n 1 "$MPI" $ARGS -j 1
    run mpi_n2 mpirun $ROOTOPT --oversubscribe -q -n 2 "$MPI" $ARGS -j 1
    run serial_j2 "$CLI" $ARGS -j 2
done
for n in mpi_n1 mpi_n2 serial_j2; do
    cmp -s "$T/serial_j1.jsonl" "$T/$n.jsonl" || { echo "mpi_speedup: $n wrote other bytes" >&2; exit 1; }
done
/usr/bin/python3 - "$T/times" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    name, sec = line.split()
    t.setdefault(name, []).append(float(sec))
med = {k: statistics.median(v) for k, v in t.items()}
for k in ("serial_j1", "mpi_n1", "mpi_n2", "serial_j2"):
    print("mpi_speedup: %-10s %s  median %.2f s" % (k, " ".join("%.2f" % x for x in t[k]), med[k]))
print("mpi_speedup: 2 ranks over 1 rank %.2fx, over attngeom -j 1 %.2fx; 2 threads over 1 %.2fx"
      % (med["mpi_n1"] / med["mpi_n2"], med["serial_j1"] / med["mpi_n2"], med["serial_j1"] / med["serial_j2"]))
PY
