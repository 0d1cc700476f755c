#!/bin/sh
# tests/valgrind.sh CLI — runs `attngeom matrix` under valgrind memcheck on a
# handful of small good and bad inputs (and usage errors, -o, --expect) and
# fails if valgrind reports a memory error or a definite leak.  Valgrind's own
# verdict is exit status 99 (--error-exitcode=99), told apart from the CLI's
# statuses 0-3, which are checked too so each run does what it is meant to.

CLI=${1:?usage: sh tests/valgrind.sh path/to/attngeom}
case $CLI in /*) ;; *) CLI=$(pwd)/$CLI ;; esac
if [ ! -x "$CLI" ]; then
    echo "valgrind.sh: $CLI is not executable" >&2
    exit 1
fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed" >&2
    exit 1
fi
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/ag_valgrind.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
cd "$T" || exit 1
# one BLAS thread: faster under valgrind, and deterministic
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS

"$PY" - <<'EOF' || { echo "valgrind.sh: could not make test files" >&2; exit 1; }
import json, struct
import numpy as np
rng = np.random.default_rng(11)
def sm(L):
    E = np.exp(L - L.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)
def causal(n):
    L = rng.normal(size=(n, n)); L[np.triu_indices(n, 1)] = -np.inf
    return sm(L)
np.save("s2d.npy", sm(rng.normal(size=(9, 9))))
np.save("c3d_f2_fortran.npy", np.asfortranarray(np.stack([causal(7), causal(7)]).astype("<f2")))
np.save("l4d_f4.npy", np.stack([np.stack([causal(5), sm(rng.normal(size=(5, 5)))])] * 2).astype("<f4"))
np.save("tall.npy", rng.normal(size=(8, 3)))
np.save("one.npy", np.array([[0.5]]))
np.save("zero.npy", np.zeros((4, 4)))
a = np.eye(3); a[2, 1] = np.nan
np.save("nan.npy", a)
with open("trunc.npy", "wb") as f:
    b = open("s2d.npy", "rb").read()
    f.write(b[:len(b) - 20])
def st(name, header, data):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(name, "wb").write(struct.pack("<Q", len(h)) + h + data)
x = causal(6)
f32 = x.astype("<f4").tobytes()
bf = ((x.astype("<f4").view("<u4") + 0x8000) >> 16).astype("<u2").tobytes()
f16 = x.astype("<f2").tobytes()
st("good.safetensors", {
    "__metadata__": {"format": "pt"},
    "a32": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 144]},
    "abf": {"dtype": "BF16", "shape": [1, 6, 6], "data_offsets": [144, 216]},
    "a16": {"dtype": "F16", "shape": [6, 6], "data_offsets": [216, 288]},
    "ids": {"dtype": "I64", "shape": [2], "data_offsets": [288, 304]}},
    f32 + bf + f16 + np.array([1, 2], "<i8").tobytes())
st("badjson.safetensors", b'{"a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, ', f32)
st("overlap.safetensors", {
    "a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 144]},
    "b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [128, 144]}}, f32)
st("range.safetensors", {"a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 1440]}}, f32)
EOF

FAILS=0
N=0
# vg WANT_CLI_STATUS ARGS...
vg() {
    want=$1
    shift
    N=$((N + 1))
    valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite \
        --log-file=vg.log "$CLI" "$@" >stdout 2>stderr </dev/null
    rc=$?
    if [ $rc -eq 99 ]; then
        echo "FAIL [attngeom $*]: valgrind reports errors:"
        head -n 40 vg.log
        FAILS=$((FAILS + 1))
    elif [ $rc -ne "$want" ]; then
        echo "FAIL [attngeom $*]: exit $rc under valgrind, expected $want: $(head -c 300 stderr)"
        FAILS=$((FAILS + 1))
    fi
}

vg 0 matrix s2d.npy --format json --metrics all
vg 0 matrix c3d_f2_fortran.npy --format csv
vg 0 matrix l4d_f4.npy --format table --metrics all
vg 0 matrix tall.npy --format md --metrics all
vg 0 matrix one.npy --format latex --metrics all
vg 0 matrix zero.npy --format tsv --metrics all
vg 0 matrix good.safetensors --tensor a32 --format json
vg 0 matrix good.safetensors --tensor abf --format json --metrics all -o out.json
vg 0 matrix good.safetensors --tensor a16 --format json --metrics sigma_max,entropy_mean
vg 0 matrix good.safetensors --tensor abf --format json --metrics all --expect out.json
"$PY" -c "
import json; d = json.load(open('out.json')); d['records'][0]['sigma_max'] += 1
json.dump(d, open('bad_gold.json', 'w'))"
vg 3 matrix good.safetensors --tensor abf --format json --metrics all --expect bad_gold.json
vg 1 matrix good.safetensors --tensor ids
vg 1 matrix good.safetensors --tensor nope
vg 1 matrix badjson.safetensors --tensor a
vg 1 matrix overlap.safetensors --tensor a
vg 1 matrix range.safetensors --tensor a
vg 1 matrix nan.npy --format json -o never.json
vg 1 matrix trunc.npy
vg 1 matrix missing.npy
vg 2 matrix s2d.npy --format xml
vg 2 matrix s2d.npy --metrics sigma_max,nope
vg 2 matrix s2d.npy --bogus
vg 2 bogus

if [ $FAILS -ne 0 ]; then
    echo "valgrind.sh: $FAILS failure(s) in $N runs"
    exit 1
fi
echo "valgrind.sh: ok ($N runs, no memory errors or definite leaks)"
