#!/usr/bin/python3
"""tests/adversarial/run.py [--build DIR] [--filter TEXT] [--list] [--keep]

The adversarial runner (tests/adversarial/README.md): hostile inputs of every
class the project was hurt by — memory safety, data loss, hangs, quadratic or
huge work, messages, wrong acceptance, late failure, real-world files, plot
defaults, and the earlier reliability work (special files as outputs, crafted
headers, floods, limits) — run against one build (build/ by default, or
build-san/ for the ASan + UBSan one), each case checked automatically:

  * the exit status: 1 with exactly one stderr line "attngeom: ..." naming
    the file and holding the case's words (bad input), or 0 (valid input);
  * no sanitizer report: not exit 86 (ASan) or 87 (UBSan), and the case's
    reports folder empty;
  * a wall-time bound (killed on expiry: verdict HANG);
  * files that must stay byte for byte as they were, outputs that must not
    appear, and (where said) a peak RSS bound.

Prints a table (case, class, build, verdict, seconds) and exits 1 when any
case fails. Python 3 standard library and numpy only. Run from anywhere;
`make adversarial` runs it on build/ and build-san/.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT2 = os.path.join(ROOT, "models", "tiny-gpt2")
DATA = os.path.join(ROOT, "tests", "data")
VIT = os.path.join(DATA, "models", "tiny-vit")
WHISPER = os.path.join(DATA, "models", "tiny-whisper")
PNG = os.path.join(DATA, "images", "rgb8_37x23.png")
WAV = os.path.join(DATA, "audio", "tone_float.wav")
PY = "/usr/bin/python3"

CASES = []


class Skip(Exception):
    """Raised by a generator when the case cannot run here (a tool missing)."""


def case(name, cls, cmd, expect, setup=None, timeout=3, unchanged=(), absent=(),
         stdout_empty=False, rss_mb=None, ulimit_kb=None, python=False, reader=None,
         check=None, stdin=None, warn_ok=False):
    """Declare a case.

    cmd: the argument list after the CLI (or, with python=True, a Python
      source run with the package importable); strings may hold {d} (the
      case's folder). May be a function of the folder returning the list.
    expect: "ok" (exit 0), ("fail", words...) (exit 1, one "attngeom: " line
      holding every word), ("either", words...) (one of the two),
      ("end", words...) (any end within the bound that is not a crash: 0,
      1 with one line holding the words, or death by SIGPIPE).
    setup(d): writes the hostile files into folder d (cwd of the command).
    unchanged: files (relative to d) whose bytes must not change; absent:
      paths that must not exist afterwards; stdout_empty: nothing on stdout.
    rss_mb: peak resident set bound (plain build only: ASan's shadow memory
      inflates it). ulimit_kb: run under `ulimit -v` (skipped on the
      sanitizer build, which cannot run under it).
    reader: "all" or "close" — a thread reads the FIFO out.fifo (wholly, or
      opens and closes it at once) while the command runs.
    check(d, stdout_bytes): an extra check returning None or a failure reason.
    warn_ok: exit 0 may come with stderr lines (warnings); else stderr must
      be empty when the command succeeds.
    """
    CASES.append(dict(name=name, cls=cls, cmd=cmd, expect=expect, setup=setup,
                      timeout=timeout, unchanged=unchanged, absent=absent,
                      stdout_empty=stdout_empty, rss_mb=rss_mb, ulimit_kb=ulimit_kb,
                      python=python, reader=reader, check=check, stdin=stdin,
                      warn_ok=warn_ok))


# ---- helpers for generators ---------------------------------------------------

def write(d, name, data):
    p = os.path.join(d, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return p


def link_model(src, dst, skip=()):
    """dst/: symlinks to src's files but those in skip (which the caller
    writes itself). Only for models the command reads, never writes."""
    os.makedirs(dst)
    for f in os.listdir(src):
        if f not in skip:
            os.symlink(os.path.join(src, f), os.path.join(dst, f))


def copy_model(src, dst):
    shutil.copytree(src, dst)


def wide_record(n, prefix="k"):
    return {"%s%d" % (prefix, i): float(i) for i in range(n)}


def jsonl(records):
    return "".join(json.dumps(r) + "\n" for r in records)


def many_groups(n):
    """A JSONL of n records, each a group of its own."""
    return lambda d: write(d, "g.jsonl", "".join(
        '{"model": "m%d", "layer": %d, "head": 0, "x": %d.5, "y": 2.5}\n' % (i, i, i)
        for i in range(n)))


def npy_header(descr, shape_text, version=1):
    h = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)).encode()
    pre = 10 if version == 1 else 12
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h


def safetensors(header, data, hlen=None):
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def progressive_jpeg(d, repeats):
    """A progressive JPEG (cjpeg -progress) whose last scan is repeated
    `repeats` times more before EOI."""
    cjpeg = shutil.which("cjpeg")
    if not cjpeg:
        raise Skip("cjpeg not installed (apt-get install libjpeg-turbo-progs)")
    w = h = 256
    px = bytearray()
    for y in range(h):
        for x in range(w):
            px += bytes(((x * 7 + y) & 255, (y * 5) & 255, (x ^ y) & 255))
    ppm = write(d, "src.ppm", b"P6\n%d %d\n255\n" % (w, h) + bytes(px))
    jpg = subprocess.run([cjpeg, "-progressive", ppm], stdout=subprocess.PIPE,
                         check=True).stdout
    assert jpg.endswith(b"\xff\xd9")
    last_sos = jpg.rfind(b"\xff\xda")
    scan = jpg[last_sos:-2]
    write(d, "p.jpg", jpg[:-2] + scan * repeats + b"\xff\xd9")
    write(d, "l.txt", "p.jpg\n")


# ---- the cases ----------------------------------------------------------------

# Memory safety: records of 4,097 keys (the limit is 4,096 keys per record).
K4097 = wide_record(4097)


def recs_4097(fmt, after_normal):
    def gen(d):
        normal = {"model": "m", "layer": 0, "head": 0, "k0": 1.0}
        recs = ([normal] if after_normal else []) + [dict(K4097, model="m", layer=0, head=0)]
        if fmt == "jsonl":
            write(d, "r.jsonl", jsonl(recs))
        elif fmt == "json":
            write(d, "r.json", json.dumps({"records": recs}))
        else:
            keys = list(recs[-1])
            lines = [",".join(keys)]
            for r in recs:
                lines.append(",".join("" if r.get(k) is None else
                                      ('"%s"' % r[k] if isinstance(r[k], str) else repr(r[k]))
                                      for k in keys))
            write(d, "r.csv", "\n".join(lines) + "\n")
    return gen


for fmt in ("jsonl", "json", "csv"):
    for after in (False, True):
        tag = "%s-%s" % (fmt, "after-normal" if after else "lone")
        f = "r." + fmt
        # A CSV header of 4,097 keys: a record with a short normal row is a
        # row of the wrong length; either way the file is refused.
        words = (f,) if (fmt == "csv" and after) else (f, "4096")
        case("aggregate-4097-keys-" + tag, "memory", ["aggregate", f], ("fail",) + words,
             setup=recs_4097(fmt, after), stdout_empty=True)
        case("compare-4097-keys-" + tag, "memory",
             lambda d, f=f: ["compare", f, "b.jsonl"], ("fail",) + words,
             setup=lambda d, g=recs_4097(fmt, after): (g(d), write(d, "b.jsonl", jsonl(
                 [{"model": "m", "layer": 0, "head": 0, "k0": 2.0}] * 3))),
             stdout_empty=True)
        case("plot-4097-keys-" + tag, "memory",
             ["plot", f, "--kind", "heatmap", "--metric", "k1", "-o", "f.svg"],
             ("fail",) + words, setup=recs_4097(fmt, after), absent=("f.svg",))

PY_CLOSED = r"""
import attngeom, sys
m = attngeom.Model(sys.argv[1])
m.close()
for call in (lambda: m.analyze("hello world"), lambda: m.tokenize("hello"),
             lambda: m.weights(), lambda: m.attention("hi")):
    try:
        call()
    except attngeom.Error:
        continue
    except Exception as e:
        sys.exit("not attngeom.Error: %r" % e)
    sys.exit("no error after close()")
m.close()  # twice is fine
"""
case("py-model-after-close", "memory", PY_CLOSED, "ok", python=True, timeout=10)

PY_CLOSE_THREAD = r"""
import attngeom, sys, threading, time
text = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
for trial in range(4):
    m = attngeom.Model(sys.argv[1])
    out = []
    def run():
        try:
            for _ in range(3):
                m.analyze(text, metrics="all")
            out.append("ok")
        except attngeom.Error as e:
            out.append("error")
        except Exception as e:
            out.append("other: %r" % e)
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.02 * trial)
    m.close()
    t.join()
    if out[0].startswith("other"):
        sys.exit(out[0])
"""
case("py-close-during-analyze", "memory", PY_CLOSE_THREAD, "ok", python=True, timeout=30)

PY_UNALIGNED = r"""
import attngeom, numpy as np, sys
rng = np.random.default_rng(3)
A = rng.random((4, 4)); A /= A.sum(axis=1, keepdims=True)
buf = bytearray(136)
V = np.frombuffer(buf, np.float64, 16, offset=1).reshape(4, 4)
assert V.ctypes.data % 8 != 0
V[...] = A  # frombuffer of a bytearray is writable
a = attngeom.matrix_metrics(np.ascontiguousarray(V).copy())
b = attngeom.matrix_metrics(V)
if a != b:
    sys.exit("unaligned view gives other values:\n%r\n%r" % (a, b))
"""
case("py-unaligned-float64-view", "memory", PY_UNALIGNED, "ok", python=True, timeout=10)


# Data loss: an output that is one of the inputs.
def vit_list(d):
    shutil.copy(PNG, os.path.join(d, "a.png"))
    write(d, "l.txt", "a.png\n")


case("analyze-image-output-is-input", "data-loss",
     ["analyze", VIT, "--image-file", "l.txt", "--format", "json", "-o", "a.png"],
     ("fail", "a.png"), setup=vit_list, unchanged=("a.png", "l.txt"), timeout=10)


def wav_list(d):
    shutil.copy(WAV, os.path.join(d, "a.wav"))
    write(d, "l.txt", "a.wav\n")


case("analyze-audio-output-is-input", "data-loss",
     ["analyze", WHISPER, "--audio-file", "l.txt", "--frames", "60", "--format", "json",
      "-o", "a.wav"],
     ("fail", "a.wav"), setup=wav_list, unchanged=("a.wav", "l.txt"), timeout=10)


def vit_list_npy(d):
    shutil.copy(PNG, os.path.join(d, "x_1.png"))
    shutil.copy(PNG, os.path.join(d, "b.png"))
    write(d, "l.txt", "b.png\nx_1.png\n")


case("attention-pattern-hits-input", "data-loss",
     ["attention", VIT, "--image-file", "l.txt", "-o", "x_{i}.png"],
     ("fail", "x_1.png"), setup=vit_list_npy, unchanged=("x_1.png", "b.png", "l.txt"),
     absent=("x_0.png",), timeout=10)
case("analyze-output-is-list", "data-loss",
     ["analyze", VIT, "--image-file", "l.txt", "--format", "json", "-o", "l.txt"],
     ("fail", "l.txt"), setup=vit_list, unchanged=("a.png", "l.txt"), timeout=10)
case("analyze-output-is-text-file", "data-loss",
     ["analyze", GPT2, "--text-file", "t.txt", "-o", "t.txt"],
     ("fail", "t.txt"), setup=lambda d: write(d, "t.txt", "hello world\n"),
     unchanged=("t.txt",), timeout=10)
case("analyze-output-is-model-file", "data-loss",
     ["analyze", "vit", "--image-file", "l.txt", "--format", "json", "-o", "vit/config.json"],
     ("fail", "config.json"),
     setup=lambda d: (vit_list(d), copy_model(VIT, os.path.join(d, "vit"))),
     unchanged=("vit/config.json", "vit/model.safetensors"), timeout=10)
case("weights-output-is-weights", "data-loss",
     ["weights", "vit", "--format", "json", "-o", "vit/model.safetensors"],
     ("fail", "model.safetensors"),
     setup=lambda d: copy_model(VIT, os.path.join(d, "vit")),
     unchanged=("vit/config.json", "vit/model.safetensors"), timeout=10)


# Earlier reliability work: special files as outputs.
def small_npy(d):
    write(d, "s.npy", npy_header("<f8", "(2, 2)") + struct.pack("<4d", .5, .5, .25, .75))


case("output-dev-full", "outputs", ["matrix", "s.npy", "-o", "/dev/full"],
     ("fail", "/dev/full"), setup=small_npy)
case("output-dev-null", "outputs", ["matrix", "s.npy", "-o", "/dev/null"], "ok",
     setup=small_npy)
case("output-directory", "outputs", ["matrix", "s.npy", "-o", "outdir"],
     ("fail", "outdir"), setup=lambda d: (small_npy(d), os.mkdir(os.path.join(d, "outdir"))))
case("output-fifo-read", "outputs", ["matrix", "s.npy", "-o", "out.fifo"], "ok",
     setup=lambda d: (small_npy(d), os.mkfifo(os.path.join(d, "out.fifo"))), reader="all")
case("output-fifo-reader-leaves", "outputs",
     ["attention", GPT2, "--text", "hello " * 100, "-o", "out.fifo"], ("end", "out.fifo"),
     setup=lambda d: os.mkfifo(os.path.join(d, "out.fifo")), reader="close", timeout=10)
case("output-read-only-file", "outputs", ["matrix", "s.npy", "-o", "ro.json"],
     ("fail", "ro.json", "permission denied"),
     setup=lambda d: (small_npy(d), write(d, "ro.json", "keep\n"),
                      os.chmod(os.path.join(d, "ro.json"), 0o444)),
     unchanged=("ro.json",))


# Hangs: FIFOs where a regular file is read.
def fifo_config(d):
    link_model(GPT2, os.path.join(d, "m"), skip=("config.json",))
    os.mkfifo(os.path.join(d, "m", "config.json"))


for cmd in (["tokenize", "m", "--text", "hi"], ["analyze", "m", "--text", "hi"], ["info", "m"]):
    case("%s-config-fifo" % cmd[0], "hang", cmd, ("fail", "config.json", "regular file"),
         setup=fifo_config)


def fifo_tokenizer(d):
    link_model(GPT2, os.path.join(d, "m"), skip=("tokenizer.json",))
    os.mkfifo(os.path.join(d, "m", "tokenizer.json"))


case("tokenize-tokenizer-fifo", "hang", ["tokenize", "m", "--text", "hi"],
     ("fail", "tokenizer.json", "regular file"), setup=fifo_tokenizer)
case("text-file-fifo", "hang", ["analyze", GPT2, "--text-file", "t.fifo"],
     ("fail", "t.fifo", "regular file"), setup=lambda d: os.mkfifo(os.path.join(d, "t.fifo")))
case("image-list-fifo", "hang", ["analyze", VIT, "--image-file", "l.fifo"],
     ("fail", "l.fifo", "regular file"), setup=lambda d: os.mkfifo(os.path.join(d, "l.fifo")))
case("audio-list-fifo", "hang", ["analyze", WHISPER, "--audio-file", "l.fifo"],
     ("fail", "l.fifo", "regular file"), setup=lambda d: os.mkfifo(os.path.join(d, "l.fifo")))
case("image-in-list-fifo", "hang", ["analyze", VIT, "--image-file", "l.txt"],
     ("fail", "p.png", "regular file"),
     setup=lambda d: (os.mkfifo(os.path.join(d, "p.png")), write(d, "l.txt", "p.png\n")))
case("aggregate-fifo", "hang", ["aggregate", "r.fifo"], ("fail", "r.fifo", "regular file"),
     setup=lambda d: os.mkfifo(os.path.join(d, "r.fifo")))
case("plot-records-fifo", "hang",
     ["plot", "r.fifo", "--kind", "heatmap", "--metric", "x", "-o", "f.svg"],
     ("fail", "r.fifo", "regular file"), setup=lambda d: os.mkfifo(os.path.join(d, "r.fifo")),
     absent=("f.svg",))
for n in (500, 5000):
    case("jpeg-progressive-scan-x%d" % n, "hang",
         ["analyze", VIT, "--image-file", "l.txt", "--format", "json"], ("either", "p.jpg"),
         setup=lambda d, n=n: progressive_jpeg(d, n), timeout=3)


# Quadratic or huge work.
def depth_80k(d):
    write(d, "r.jsonl", "".join('{"model": "m%d", "layer": %d, "x": %d.5}\n' % (i, i % 4, i)
                                for i in range(80000)))


case("plot-depth-80k-models", "quadratic",
     ["plot", "r.jsonl", "--kind", "depth", "--metric", "x", "-o", "f.svg"],
     ("either", "r.jsonl"), setup=depth_80k, timeout=10,
     check=lambda d, out: size_check(d, "f.svg", 20 << 20))


def size_check(d, name, limit):
    p = os.path.join(d, name)
    if os.path.exists(p) and os.path.getsize(p) >= limit:
        return "%s is %d MB" % (name, os.path.getsize(p) >> 20)
    return None


case("plot-heatmap-1000-diagonal", "quadratic",
     ["plot", "r.jsonl", "--kind", "heatmap", "--metric", "x", "-o", "f.svg"],
     ("either", "r.jsonl"),
     setup=lambda d: write(d, "r.jsonl", "".join('{"layer": %d, "head": %d, "x": 1}\n' % (i, i)
                                                 for i in range(1000))),
     timeout=10, check=lambda d, out: size_check(d, "f.svg", 20 << 20))
case("aggregate-40k-groups-table", "quadratic", ["aggregate", "g.jsonl"], "ok",
     setup=many_groups(40000), timeout=5)
case("aggregate-2000-own-groups-own-metrics", "quadratic", ["aggregate", "r.jsonl", "--format", "jsonl"],
     ("fail", "r.jsonl", "2000 groups by 2000 metrics", "empty"),
     setup=lambda d: write(d, "r.jsonl", "".join('{"layer": %d, "m%d": 1.5}\n' % (i, i)
                                                 for i in range(2000))),
     timeout=3, rss_mb=200)
case("aggregate-2000-groups", "quadratic", ["aggregate", "r.jsonl", "--format", "jsonl"], "ok",
     setup=lambda d: write(d, "r.jsonl", "".join('{"g%d": "a", "m%d": 1.5}\n' % (i, i)
                                                 for i in range(2000))),
     timeout=5, rss_mb=500)


def aggregated_wide(d):
    r = {"model": "m", "layer": 0, "head": 0, "n": 3}
    for i in range(1000):  # 4 keys each: ~4,000 keys, under the limit
        r["k%d" % i] = 1.0
        r["k%d_std" % i] = 0.5
        r["k%d_n" % i] = 3
    r2 = dict(r, head=1)
    write(d, "r.jsonl", jsonl([r, r2]))


case("aggregate-aggregated-4000-keys", "quadratic", ["aggregate", "r.jsonl", "--by", ""], "ok",
     setup=aggregated_wide, timeout=5)


# Messages.
# 100k groups under 180-220 MB: the limit strikes while reading, while
# building the table, or while formatting it ("cannot format the output:
# input/output error" on main at 200 MB); every one must say "out of memory".
for kb in (180000, 200000, 220000):
    case("oom-formatting-json-%dk" % (kb // 1000), "messages",
         ["aggregate", "g.jsonl", "--format", "json"], ("either", "out of memory"),
         setup=many_groups(100000), ulimit_kb=kb, timeout=10)
case("oom-analyze-huge-text", "messages", ["analyze", GPT2, "--text-file", "t.txt"],
     ("either", "out of memory"),
     setup=lambda d: write(d, "t.txt", ("word " * 2000000) + "\n"), ulimit_kb=250000,
     timeout=20, warn_ok=True)
for kb in (200000, 215000, 230000):
    for suffix in ("png", "svg"):
        # one line ("out of memory"), never a "Fontconfig error" line before it
        case("plot-%s-under-ulimit-%dk" % (suffix, kb // 1000), "messages",
             ["plot", "r.jsonl", "--kind", "heatmap", "--metric", "x", "-o", "f." + suffix],
             ("either", "out of memory"),
             setup=lambda d: write(d, "r.jsonl", '{"layer": 0, "head": 0, "x": 1}\n'),
             ulimit_kb=kb, timeout=10)
case("json-records-oom-reason", "messages", ["aggregate", "r.json"],
     ("either", "r.json", "memory"),
     setup=lambda d: write(d, "r.json", "[" + ",".join(
         '{"model": "m", "layer": %d, "head": 0, "x": %d.25}' % (i % 7, i)
         for i in range(400000)) + "]"),
     ulimit_kb=200000, timeout=20)

# Wrong acceptance.
case("csv-nul-cell", "acceptance", ["aggregate", "r.csv"], ("fail", "r.csv", "line 3"),
     setup=lambda d: write(d, "r.csv", b"model,x\nm,1\nm\x00b,2\n"), stdout_empty=True)
case("csv-nul-header", "acceptance", ["aggregate", "r.csv"], ("fail", "r.csv", "line 1"),
     setup=lambda d: write(d, "r.csv", b"model,x\x00y\nm,1\n"), stdout_empty=True)
case("jsonl-empty-key", "acceptance", ["aggregate", "r.jsonl"], ("fail", "r.jsonl", "empty key"),
     setup=lambda d: write(d, "r.jsonl", '{"": 1, "x": 2}\n'))
case("jsonl-300-byte-key", "acceptance", ["aggregate", "r.jsonl"], ("fail", "r.jsonl", "256"),
     setup=lambda d: write(d, "r.jsonl", '{"%s": 1}\n' % ("k" * 300)))
case("compare-1e8-permutations", "acceptance",
     ["compare", "a.jsonl", "a.jsonl", "--permutations", "100000000"], ("usage", "--permutations"),
     setup=lambda d: write(d, "a.jsonl", '{"x": 1}\n{"x": 2}\n'))

PY_REFUSED = r"""
import attngeom, sys
ok = [{"x": 1.0}, {"x": 2.0}]
try:
    %s
except attngeom.Error:
    sys.exit(0)
except Exception as e:
    sys.exit("%%r, not attngeom.Error" %% e)
sys.exit("accepted")
"""
# The CLI's limits (docs/cli.md "Records in", src/cli/cmd_aggregate.c): keys of
# 1 to 256 bytes, at most 4,096 per record, --permutations 1 to 10^7.
for name, call in (
        ("aggregate-empty-key", 'attngeom.aggregate([{"": 1.0, "x": 2.0}])'),
        ("aggregate-300-byte-key", 'attngeom.aggregate([{"k" * 300: 1.0}])'),
        ("aggregate-4097-keys", 'attngeom.aggregate([{"k%d" % i: 1.0 for i in range(4097)}])'),
        ("compare-empty-key", 'attngeom.compare([{"": 1.0, "x": 1.0}], ok)'),
        ("compare-300-byte-key", 'attngeom.compare([{"k" * 300: 1.0}], [{"k" * 300: 2.0}])'),
        ("compare-1e8-permutations", 'attngeom.compare(ok, ok, permutations=10**8)'),
        ("compare-negative-permutations", 'attngeom.compare(ok, ok, permutations=-1)')):
    case("py-" + name, "acceptance", PY_REFUSED % call, "ok", python=True, timeout=10)

# Late failure: the bad line is the last of a long input.
def tokens_file(lines):
    def gen(d):
        write(d, "ids.txt", "464 3797 3332\n" * (lines - 1) + "464 99999999\n")
    return gen


for n in (10000, 100000):
    case("tokens-file-%dk-bad-last" % (n // 1000), "late-failure",
         ["analyze", GPT2, "--tokens-file", "ids.txt"], ("fail", "ids.txt", "line %d" % n),
         setup=tokens_file(n), stdout_empty=True, timeout=3)
case("text-file-10k-bad-utf8-last", "late-failure", ["analyze", GPT2, "--text-file", "t.txt"],
     ("fail", "t.txt", "line 10000"),
     setup=lambda d: write(d, "t.txt", b"In the beginning\n" * 9999 + b"caf\xe9\n"),
     stdout_empty=True, timeout=3)
case("text-file-10k-bad-utf8-last-to-file", "late-failure",
     ["analyze", GPT2, "--text-file", "t.txt", "-o", "out.json"], ("fail", "t.txt", "line 10000"),
     setup=lambda d: write(d, "t.txt", b"In the beginning\n" * 9999 + b"caf\xe9\n"),
     absent=("out.json",), timeout=3)


# Real-world files.
def huge_max_length(d):
    link_model(GPT2, os.path.join(d, "m"), skip=("tokenizer_config.json",))
    with open(os.path.join(GPT2, "tokenizer_config.json")) as f:
        t = f.read()
    write(d, "m/tokenizer_config.json",
          t.replace('"model_max_length": 256', '"model_max_length": 1000000000000000019884624838656'))


case("tokenizer-config-huge-max-length", "real-files", ["tokenize", "m", "--text", "hello world"],
     "ok", setup=huge_max_length)


def huge_n_layer(d):
    link_model(GPT2, os.path.join(d, "m"), skip=("config.json",))
    with open(os.path.join(GPT2, "config.json")) as f:
        t = f.read()
    write(d, "m/config.json", t.replace('"n_layer": 4', '"n_layer": 100000000000000000000000'))


for cmd in (["info", "m"], ["analyze", "m", "--text", "hi"]):
    case("config-huge-n-layer-" + cmd[0], "real-files", cmd, ("fail", "config.json", "n_layer"),
         setup=huge_n_layer)

# Plot defaults.


def attention_6x6(d):
    import numpy as np
    A = np.random.default_rng(1).random((6, 6))
    np.save(os.path.join(d, "A.npy"), A / A.sum(axis=1, keepdims=True))
    write(d, "T.json", json.dumps({"ids": [50256, 554, 262, 3726, 1793, 2727],
                                   "tokens": ["<|endoftext|>", "ĠIn", "Ġthe", "Ġbeginning",
                                              "ĠGod", "Ġcreated"]}))


case("plot-attention-6x6-tokens-default-size", "plot-defaults",
     ["plot", "A.npy", "--kind", "attention", "--tokens", "T.json", "-o", "f.svg"], "ok",
     setup=attention_6x6, timeout=10)


# Crafted headers.
case("npy-huge-shape-tiny-file", "headers", ["matrix", "h.npy"], ("fail", "h.npy"),
     setup=lambda d: write(d, "h.npy", npy_header("<f8", "(4000000000, 4000000000)") + b"\0" * 16))
case("npy-negative-dim", "headers", ["matrix", "h.npy"], ("fail", "h.npy"),
     setup=lambda d: write(d, "h.npy", npy_header("<f8", "(-2, 2)") + b"\0" * 32))
case("npy-overflowing-dims", "headers", ["matrix", "h.npy"], ("fail", "h.npy"),
     setup=lambda d: write(d, "h.npy", npy_header(
         "<f8", "(4294967297, 4294967297, 4294967297, 4294967297)") + b"\0" * 32))
case("npy-dim-beyond-int64", "headers", ["matrix", "h.npy"], ("fail", "h.npy"),
     setup=lambda d: write(d, "h.npy", npy_header("<f8", "(99999999999999999999999, 2)") + b"\0" * 32))
case("npy-v2-header-4gib", "headers", ["matrix", "h.npy"], ("fail", "h.npy"),
     setup=lambda d: write(d, "h.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'"))
F4 = struct.pack("<4f", .5, .5, .25, .75)
case("safetensors-huge-header-length", "headers", ["matrix", "h.safetensors", "--tensor", "a"],
     ("fail", "h.safetensors"),
     setup=lambda d: write(d, "h.safetensors", safetensors(
         {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, F4, hlen=(1 << 64) - 1)))
case("safetensors-offsets-past-end", "headers", ["matrix", "h.safetensors", "--tensor", "a"],
     ("fail", "h.safetensors"),
     setup=lambda d: write(d, "h.safetensors", safetensors(
         {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 1 << 62]}}, F4)))
case("safetensors-huge-shape", "headers", ["matrix", "h.safetensors", "--tensor", "a"],
     ("fail", "h.safetensors"),
     setup=lambda d: write(d, "h.safetensors", safetensors(
         {"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32], "data_offsets": [0, 16]}}, F4)))
case("model-safetensors-offsets-past-end", "headers", ["info", "m"], ("fail", "model.safetensors"),
     setup=lambda d: (link_model(VIT, os.path.join(d, "m"), skip=("model.safetensors",)),
                      write(d, "m/model.safetensors", safetensors(
                          {"embeddings.cls_token": {"dtype": "F32", "shape": [1, 1, 32],
                                                    "data_offsets": [0, 1 << 40]}}, F4))))

# Floods.
case("flood-1e6-empty-lines", "floods", ["analyze", GPT2, "--text-file", "t.txt"],
     ("either", "t.txt"), setup=lambda d: write(d, "t.txt", "\n" * 1000000), timeout=10)
# One 4 MiB word: BPE merges it in O(m log m), about 1.1 s a MiB here; the
# bound is linear time, not a cap on the text (docs/cli.md).
case("flood-4mb-word", "floods", ["analyze", GPT2, "--text-file", "t.txt", "--metrics", "entropy_mean"],
     ("either", "t.txt"), setup=lambda d: write(d, "t.txt", "a" * (4 << 20) + "\n"), timeout=10,
     warn_ok=True)
case("flood-aggregate-1e6-blank-jsonl", "floods", ["aggregate", "r.jsonl"],
     ("fail", "r.jsonl"), setup=lambda d: write(d, "r.jsonl", "\n" * 1000000), timeout=5)
case("flood-csv-17mb-line", "floods", ["aggregate", "r.csv"], ("fail", "r.csv", "line 2"),
     setup=lambda d: write(d, "r.csv", "x\n" + "1" * (17 << 20) + "\n"), timeout=5)

# Limits (ulimit -v).
case("limit-version-100mb", "limits", ["--version"], "ok", ulimit_kb=100000, timeout=10)
case("limit-matrix-100mb", "limits", ["matrix", "s.npy"], ("fail", "out of memory"),
     setup=small_npy, ulimit_kb=100000, timeout=10)
case("limit-analyze-100mb", "limits", ["analyze", GPT2, "--text", "hi"], ("fail", "out of memory"),
     ulimit_kb=100000, timeout=10)


# ---- running --------------------------------------------------------------------

def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def is_sanitized(cli):
    with open(cli, "rb") as f:
        return b"__asan_init" in f.read()


def fifo_reader(path, mode, got):
    try:
        with open(path, "rb") as f:
            if mode == "all":
                got.append(f.read())
    except OSError as e:
        got.append(e)


def run_case(c, build, cli, san, tmp, slow):
    d = os.path.join(tmp, c["name"])
    os.makedirs(d)
    reports = os.path.join(d, ".reports")
    os.makedirs(reports)
    if c["ulimit_kb"] and san:
        return "skip", "ulimit -v: ASan cannot run under it", 0.0
    try:
        if c["setup"]:
            c["setup"](d)
    except Skip as e:
        return "skip", str(e), 0.0
    hashes = {f: sha(os.path.join(d, f)) for f in c["unchanged"]}

    env = dict(os.environ)
    env.pop("ATTNGEOM_LIB", None)
    # SAN_ENV's options (make adversarial) or the same by default; the later
    # option wins, so each case's reports go to its own folder.
    asan = os.environ.get("ASAN_OPTIONS") or "detect_leaks=1:exitcode=86"
    ubsan = os.environ.get("UBSAN_OPTIONS") or "print_stacktrace=1:halt_on_error=1:exitcode=87"
    env["ASAN_OPTIONS"] = "%s:log_path=%s/asan" % (asan.strip(":"), reports)
    env["UBSAN_OPTIONS"] = "%s:log_path=%s/ubsan" % (ubsan.strip(":"), reports)
    if c["python"]:
        env["ATTNGEOM_LIB"] = os.path.join(build, "libattngeom.so")
        env["ATTNGEOM_CLI"] = cli
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        if san:
            libs = [subprocess.run(["gcc", "-print-file-name=" + n], stdout=subprocess.PIPE,
                                   text=True).stdout.strip() for n in ("libasan.so", "libubsan.so")]
            env["LD_PRELOAD"] = " ".join(libs)
            # Python itself leaks by design at exit: leaks are not checked there.
            env["ASAN_OPTIONS"] += ":detect_leaks=0"
        argv = [PY, "-B", "-c", c["cmd"], GPT2]
    else:
        cmd = c["cmd"](d) if callable(c["cmd"]) else c["cmd"]
        argv = [cli] + list(cmd)
    if c["ulimit_kb"]:
        argv = ["/bin/sh", "-c", 'ulimit -v %d && exec "$@"' % c["ulimit_kb"], "sh"] + argv

    got = []
    reader = None
    if c["reader"]:
        reader = threading.Thread(target=fifo_reader, daemon=True,
                                  args=(os.path.join(d, "out.fifo"), c["reader"], got))
        reader.start()
    out_path, err_path = os.path.join(d, ".stdout"), os.path.join(d, ".stderr")
    t0 = time.monotonic()
    with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
        p = subprocess.Popen(argv, cwd=d, env=env, stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        hung = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > c["timeout"] * slow:
                hung = True
                os.killpg(p.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        p.returncode = 0  # reaped here, not by Popen
    secs = time.monotonic() - t0
    if reader:
        if reader.is_alive():  # unblock a reader still waiting for a writer
            try:
                os.close(os.open(os.path.join(d, "out.fifo"), os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        reader.join(1)
    rc = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as f:
        out = f.read()
    with open(err_path, "rb") as f:
        err = f.read()
    errtext = err.decode("utf-8", "replace")
    lines = errtext.splitlines()

    def short(s, n=160):
        s = s.strip().replace("\n", " | ") or "(no stderr)"
        return s if len(s) <= n else s[:n] + "..."

    reasons = []
    if hung:
        return "HANG", "killed after %gs" % (c["timeout"] * slow), secs
    if rc in (86, 87) or os.listdir(reports) or "runtime error:" in errtext or \
            "AddressSanitizer" in errtext:
        rep = "".join(open(os.path.join(reports, f), errors="replace").read()
                      for f in sorted(os.listdir(reports)))
        head = [l for l in (rep + errtext).splitlines() if "ERROR:" in l or "runtime error" in l]
        return "FAIL", "sanitizer (exit %d): %s" % (rc, short(head[0] if head else rep + errtext)), secs

    e = c["expect"]
    kind = e if isinstance(e, str) else e[0]
    words = () if isinstance(e, str) else e[1:]

    def exit_text(code):
        if code < 0:
            try:
                return "killed by %s" % signal.Signals(-code).name
            except ValueError:
                return "killed by signal %d" % -code
        return "exit %d" % code

    def one_line(status=1):
        # usage errors (exit 2) say "attngeom COMMAND: ...", the others "attngeom: ..."
        prefix = "attngeom " if status == 2 else "attngeom: "
        if rc != status:
            return "%s, expected %d: %s" % (exit_text(rc), status, short(errtext))
        if len(lines) != 1:
            return "%d stderr lines, expected 1: %s" % (len(lines), short(errtext))
        if not lines[0].startswith(prefix):
            return "stderr does not start with %r: %s" % (prefix, short(lines[0]))
        missing = [w for w in words if w not in lines[0]]
        if missing:
            return "message lacks %s: %s" % (", ".join(repr(w) for w in missing), short(lines[0]))
        return None

    if rc == 0 and errtext.strip() and not c["warn_ok"] and kind != "end":
        reasons.append("exit 0 with stderr: " + short(errtext))
    if kind == "ok":
        if rc != 0:
            reasons.append("%s, expected 0: %s" % (exit_text(rc), short(errtext)))
    elif kind == "fail":
        r = one_line()
        if r:
            reasons.append(r)
    elif kind == "usage":
        r = one_line(2)
        if r:
            reasons.append(r)
    elif kind == "either":
        if rc != 0:
            r = one_line()
            if r:
                reasons.append(r)
    elif kind == "end":
        if rc not in (0, -signal.SIGPIPE, 128 + signal.SIGPIPE):
            r = one_line()
            if r:
                reasons.append(r)
    if rc != 0 and kind != "ok" and out and (c["stdout_empty"] or kind in ("fail", "either")):
        reasons.append("exit %d but %d bytes on stdout" % (rc, len(out)))
    elif c["stdout_empty"] and out:
        reasons.append("%d bytes on stdout" % len(out))
    for f, h in hashes.items():
        p = os.path.join(d, f)
        if not os.path.exists(p):
            reasons.append("%s was removed" % f)
        elif sha(p) != h:
            reasons.append("%s was changed" % f)
    for f in c["absent"]:
        if os.path.exists(os.path.join(d, f)):
            reasons.append("%s was written" % f)
    if c["check"]:
        r = c["check"](d, out)
        if r:
            reasons.append(r)
    if c["rss_mb"] and not san:
        mb = ru.ru_maxrss / 1024
        if mb > c["rss_mb"]:
            reasons.append("peak RSS %.0f MB > %d MB" % (mb, c["rss_mb"]))
    if c["reader"] == "all" and rc == 0 and not (got and isinstance(got[0], bytes) and got[0]):
        reasons.append("the FIFO's reader got nothing")
    if reasons:
        return "FAIL", "; ".join(reasons), secs
    return "ok", "", secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the build folder holding attngeom and libattngeom.so (default build/)")
    ap.add_argument("--filter", default="",
                    help="run the cases whose name or class holds this text (comma-separated: any)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--keep", action="store_true", help="keep the cases' folders")
    ap.add_argument("--width", type=int, default=110, help="the reason column's width")
    ap.add_argument("--slow", type=float, default=None,
                    help="multiply every time bound by this (default 1, 2 on a sanitizer build)")
    a = ap.parse_args()

    pats = [p for p in a.filter.split(",") if p]
    cases = [c for c in CASES if not pats or any(p in c["name"] or p == c["cls"] for p in pats)]
    if a.list:
        for c in cases:
            print("%-45s %s" % (c["name"], c["cls"]))
        return 0
    build = os.path.abspath(a.build)
    cli = os.path.join(build, "attngeom")
    if not os.access(cli, os.X_OK):
        print("adversarial: %s not built (make build, or make BUILD=%s SANITIZE=1 build)"
              % (cli, a.build), file=sys.stderr)
        return 2
    san = is_sanitized(cli)
    slow = a.slow if a.slow else (2.0 if san else 1.0)
    bname = os.path.basename(build) + (" (asan+ubsan)" if san else "")
    tmp = tempfile.mkdtemp(prefix="attngeom-adv-")
    print("adversarial: %d cases against %s%s, in %s" % (
        len(cases), cli, ", time bounds x%g" % slow if slow != 1 else "", tmp))
    print("%-42s %-13s %-10s %7s  %s" % ("case", "class", "build", "seconds", "verdict"))
    failed, skipped = [], 0
    t_all = time.monotonic()
    try:
        for c in cases:
            try:
                verdict, why, secs = run_case(c, build, cli, san, tmp, slow)
            except Exception as e:  # a bug of the runner or its generator
                verdict, why, secs = "FAIL", "runner error: %r" % e, 0.0
            shown = verdict if not why else "%s: %s" % (verdict, why)
            if len(shown) > a.width:
                shown = shown[:a.width - 3] + "..."
            print("%-42s %-13s %-10s %7.2f  %s" % (c["name"], c["cls"], os.path.basename(build),
                                                  secs, shown), flush=True)
            if verdict in ("FAIL", "HANG"):
                failed.append(c["name"])
            elif verdict == "skip":
                skipped += 1
            if not a.keep:
                shutil.rmtree(os.path.join(tmp, c["name"]), ignore_errors=True)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("adversarial: %s: %d cases, %d passed, %d failed, %d skipped, %.0f s"
          % (bname, len(cases), len(cases) - len(failed) - skipped, len(failed), skipped,
             time.monotonic() - t_all))
    if failed:
        print("adversarial: failed: " + " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
