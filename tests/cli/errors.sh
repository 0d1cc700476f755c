#!/bin/sh
# tests/cli/errors.sh CLI — bad input and usage errors of `attngeom matrix`
# (docs/cli.md): for each case the exit status is 1 (2 for usage errors), stderr is
# exactly one non-empty line, naming the file for file errors, stdout is empty,
# and with `-o DIR/out.json` nothing at all is left in DIR.
# Exits non-zero if any case fails, printing each failure.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"

# ---- bad (and a few good) files ------------------------------------------
"$PY" - "$T" <<'EOF' || { echo "errors.sh: could not make test files" >&2; exit 1; }
import json, os, struct, sys
import numpy as np

d = sys.argv[1]
p = lambda name: os.path.join(d, name)


def npy_header(descr, shape, fortran=False, version=(1, 0)):
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, fortran, repr(tuple(shape)))
    return npy_raw_header(h, version)


def npy_raw_header(h, version=(1, 0)):
    h = h.encode("latin1")
    pre = 10 if version == (1, 0) else 12
    pad = (64 - (pre + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    if version == (1, 0):
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h
    return b"\x93NUMPY" + bytes(version) + struct.pack("<I", len(h)) + h


def write(name, data):
    with open(p(name), "wb") as f:
        f.write(data)


good = np.array([[0.5, 0.5], [0.25, 0.75]])
np.save(p("good.npy"), good)
write("empty.npy", b"")
# header says 4x4 <f8 (128 bytes of data), file holds 120
write("truncated.npy", npy_header("<f8", (4, 4)) + np.zeros(15).tobytes())
write("badmagic.npy", b"\x93NUMPX\x01\x00" + npy_header("<f8", (2, 2))[8:]
      + good.tobytes())
# version 1.0 header length 60000, file about 100 bytes
write("hdrlen.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 60000)
      + b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }\n")
# version 2.0 header length 2**31
write("hdrlen2.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 2 ** 31)
      + b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }\n")
write("bigshape.npy", npy_header("<f8", (100000, 100000)) + np.zeros(16).tobytes())
write("i4.npy", npy_header("<i4", (2, 2)) + np.zeros(4, "<i4").tobytes())
write("bigendian.npy", npy_header(">f8", (2, 2)) + good.astype(">f8").tobytes())
write("onedim.npy", npy_header("<f8", (5,)) + np.zeros(5).tobytes())
write("fivedim.npy", npy_header("<f8", (1, 1, 1, 2, 2)) + np.zeros(4).tobytes())
write("emptymat.npy", npy_header("<f8", (3, 0)))
a = good.copy(); a[1, 0] = np.nan
np.save(p("nan.npy"), a)
a = good.astype("<f4"); a[0, 1] = np.inf
np.save(p("inf.npy"), a)
a = good.astype("<f2"); a[1, 1] = -np.inf
np.save(p("neginf_f2.npy"), a)
write("brokendict.npy", npy_raw_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), ")
      + good.tobytes())
write("garbagedict.npy", npy_raw_header("hello world") + good.tobytes())


def st(name, header, data, hlen=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    write(name, struct.pack("<Q", len(h) if hlen is None else hlen) + h + data)


f4 = good.astype("<f4").tobytes()
st("good.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "ids": {"dtype": "I64", "shape": [2], "data_offsets": [16, 32]},
    "__metadata__": {"format": "pt"}},
   f4 + np.array([1, 2], "<i8").tobytes())
st("hdrlen.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, f4,
   hlen=1 << 40)
st("badjson.safetensors", b'{"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]', f4)
st("range.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16000]}}, f4)
st("inconsistent.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}, f4)
st("overlap.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "attn2": {"dtype": "F32", "shape": [2, 2], "data_offsets": [8, 24]}},
   f4 + f4[:8])
# a zero-size tensor inside another's bytes, and a gap: the tensors must tile the data
st("inside.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "empty": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]}}, f4)
st("hole.safetensors",
   {"attn": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "attn2": {"dtype": "F32", "shape": [2, 2], "data_offsets": [20, 36]}}, f4 + b"\0" * 4 + f4)
a = good.astype("<f2"); a[0, 0] = np.nan
st("nan_f16.safetensors",
   {"attn": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}, a.tobytes())
st("onedim.safetensors",
   {"attn": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, f4)
write("short.safetensors", b"\x10\x00\x00")
EOF
mkdir "$T/adir.npy" "$T/o"

# run_case WANT_STATUS MUST_CONTAIN DESC ARGS... : the CLI with ARGS fails as
# judge_error (lib.sh) says, run plain and again with -o into $T/o
# (MUST_CONTAIN: "" for none)
run_case() {
    want=$1 needle=$2 DESC=$3
    shift 3
    N=$((N + 1))
    for mode in plain output; do
        rm -rf "$T/o"
        mkdir "$T/o"
        if [ $mode = plain ]; then
            "$CLI" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
        else
            "$CLI" "$@" --format json -o "$T/o/out.json" >"$T/stdout" 2>"$T/stderr" </dev/null
        fi
        rc=$?
        judge_error "$want" "$needle" "($mode) "
    done
}

# sanity: the good files work, so the failures below are about the bad input
for f in good.npy; do
    "$CLI" matrix "$T/$f" --format json >/dev/null 2>"$T/stderr" ||
        { DESC="good $f"; fail "exit $? on a good file: $(cat "$T/stderr")"; }
done
"$CLI" matrix "$T/good.safetensors" --tensor attn --format json >/dev/null 2>"$T/stderr" ||
    { DESC="good safetensors"; fail "exit $? on a good file: $(cat "$T/stderr")"; }

# ---- file errors: exit 1, the line names the file ----
run_case 1 nope.npy        "missing file"                matrix "$T/nope.npy"
run_case 1 nope.safetensors "missing safetensors file"   matrix "$T/nope.safetensors" --tensor attn
run_case 1 adir.npy        "a directory"                 matrix "$T/adir.npy"
run_case 1 empty.npy       "empty file"                  matrix "$T/empty.npy"
run_case 1 truncated.npy   "truncated .npy data"         matrix "$T/truncated.npy"
run_case 1 badmagic.npy    "bad magic"                   matrix "$T/badmagic.npy"
run_case 1 hdrlen.npy      ".npy header length beyond the file (v1)" matrix "$T/hdrlen.npy"
run_case 1 hdrlen2.npy     ".npy header length beyond the file (v2)" matrix "$T/hdrlen2.npy"
run_case 1 bigshape.npy    "shape larger than the data"  matrix "$T/bigshape.npy"
run_case 1 i4.npy          "unsupported dtype <i4"       matrix "$T/i4.npy"
run_case 1 bigendian.npy   "unsupported dtype >f8"       matrix "$T/bigendian.npy"
run_case 1 onedim.npy      "1-D array"                   matrix "$T/onedim.npy"
run_case 1 fivedim.npy     "5-D array"                   matrix "$T/fivedim.npy"
run_case 1 emptymat.npy    "3x0 matrix"                  matrix "$T/emptymat.npy"
run_case 1 nan.npy         "NaN entry"                   matrix "$T/nan.npy"
run_case 1 inf.npy         "Inf entry (f4)"              matrix "$T/inf.npy"
run_case 1 neginf_f2.npy   "-Inf entry (f2)"             matrix "$T/neginf_f2.npy"
run_case 1 brokendict.npy  "broken header dict"          matrix "$T/brokendict.npy"
run_case 1 garbagedict.npy "header is not a dict"        matrix "$T/garbagedict.npy"
run_case 1 hdrlen.safetensors "safetensors header length beyond the file" \
    matrix "$T/hdrlen.safetensors" --tensor attn
run_case 1 short.safetensors "safetensors shorter than its length field" \
    matrix "$T/short.safetensors" --tensor attn
run_case 1 badjson.safetensors "broken safetensors header JSON" \
    matrix "$T/badjson.safetensors" --tensor attn
run_case 1 range.safetensors "offsets out of range" \
    matrix "$T/range.safetensors" --tensor attn
run_case 1 inconsistent.safetensors "offsets inconsistent with shape x dtype" \
    matrix "$T/inconsistent.safetensors" --tensor attn
run_case 1 overlap.safetensors "overlapping offsets" \
    matrix "$T/overlap.safetensors" --tensor attn
run_case 1 "'empty' [8, 8] begins inside 'attn' [0, 16]" "zero-size tensor inside another" \
    matrix "$T/inside.safetensors" --tensor attn
run_case 1 "bytes [16, 20) of the data area belong to no tensor" "a gap between tensors" \
    matrix "$T/hole.safetensors" --tensor attn
run_case 1 nan_f16.safetensors "NaN in an F16 tensor" \
    matrix "$T/nan_f16.safetensors" --tensor attn
run_case 1 onedim.safetensors "1-D tensor" \
    matrix "$T/onedim.safetensors" --tensor attn
run_case 1 good.safetensors "unknown --tensor" \
    matrix "$T/good.safetensors" --tensor nosuchtensor
run_case 1 nosuchtensor "unknown --tensor names the tensor" \
    matrix "$T/good.safetensors" --tensor nosuchtensor
run_case 1 good.safetensors "reading an I64 tensor" \
    matrix "$T/good.safetensors" --tensor ids

# ---- usage errors: exit 2 ----
run_case 2 "" "unknown subcommand"        frobnicate "$T/good.npy"
run_case 2 "" "unknown option"            matrix "$T/good.npy" --no-such-option
run_case 2 "" "unknown --format"          matrix "$T/good.npy" --format xml
run_case 2 "" "unknown metric in --metrics" matrix "$T/good.npy" --metrics sigma_max,no_such_metric
run_case 2 "" "matrix without FILE"       matrix
run_case 2 "" "--format without a value"  matrix "$T/good.npy" --metrics all --format

finish
