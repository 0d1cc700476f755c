#!/usr/bin/python3
"""Differential check of the .npy header reader against NumPy itself.

Usage: /usr/bin/python3 tests/ref/check_npy_header.py path/to/attngeom [N]

Generates N (default 3000) header dicts with a fixed seed — every spelling
the Python literal grammar allows for the three keys and their values
(quotes, prefixes, escapes, implicit concatenation, comments, line breaks,
duplicate keys whose earlier value is any literal, integers in every base,
Python 2 'L' suffixes, parentheses), about a third of them then mutated by a
byte or two — writes each as a version 1.0, 2.0 or 3.0 .npy file with the
data of its shape, and compares np.load's verdict with ag_npy_read's (called
through build/libattngeom.so next to the CLI, with ctypes). A file numpy
reads must be read with the same shape, and a file numpy refuses must be
refused, except where the reader reads less than numpy on purpose
(docs/formats.md): a descr other than '<f2'/'<f4'/'<f8' (numpy reads every
dtype), data longer than the shape (numpy ignores the rest), a negative
dimension (numpy reads all the data), a backslash-newline outside the dict.

Prints a summary and exits 1 on any disagreement.
"""
import ctypes
import os
import random
import struct
import sys
import tempfile
import warnings

import numpy as np
from numpy.lib.format import _filter_header, safe_eval

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom  # noqa: E402

warnings.simplefilter("ignore")
SEED = 20240611
R = random.Random(SEED)
W = 1.0


def chance(x):
    return R.random() < x * W


# Blanks between tokens inside the dict (line breaks, comments and
# backslash-newlines are blanks there).
WS_IN = [" ", "  ", "\t", "\f", "\n", "\r\n", "\r", "\n    ", " # c\n", "\\\n", ""]
# Escapes, valid and not, put into string literals.
ESC = ["\\x66", "\\n", "\\t", "\\\\", "\\'", '\\"', "\\f", "\\s", "\\N{LATIN SMALL LETTER D}",
       "\\u0064", "\\U00000064", "\\144", "\\0", "\\8", "\\x6", "\\N{bogus}", "\\N{low line}",
       "\\\n", "\\a", "\\z"]
# Values that may precede a key's last value (or break the dict).
JUNK_ATOMS = [
    ["True", "False", "None", "...", "set()", "set( )", "Truex", "none"],
    ["1+2j", "-1-2j", "1.5+0j", "1+2", "1j+2j", "(1)+(2j)", "-(1+2j)", "1+-2j", "1e5", ".5",
     "1.", "1e", "1_", "0b2", "b'x'", "b'\\xff'"],
    ["1*2", "~1", "x", "[1][0]", "{}.x", "not 1", "1 if 1 else 2"],
    ["'a' b'b'", "b'a' 'b'", "f'a'", "'a''b'", "''", ""],
]


def ws():
    return R.choice(WS_IN) if chance(0.3) else (" " if chance(0.5) else "")


def strlit(s, weird=True):
    """s as a string literal: split in two, prefixed, with an escape inside."""
    if weird and chance(0.3) and len(s) > 1:
        k = R.randrange(1, len(s))
        return strlit(s[:k]) + ws() + strlit(s[k:])
    q = R.choice(["'", '"', "'''", '"""'])
    pre = R.choice(["", "", "", "u", "r", "R", "U", "b", "rb", "f", "ur", "Rb"]) if weird and chance(0.2) else ""
    if weird and chance(0.2):
        pos = R.randrange(len(s) + 1)
        s = s[:pos] + R.choice(ESC) + s[pos:]
    if weird and chance(0.1):
        s = s.replace("f", "\\x66").replace("d", "\\144").replace("_", "\\N{LOW LINE}")
    return pre + q + s + q


def intlit(n):
    """n in one of many spellings, some invalid."""
    forms = [str(n), hex(n), oct(n), bin(n), "+%d" % n, "(%d)" % n, "%dL" % n, "%d L" % n,
             "0%d" % n, "%d_0" % n if n else "0_0", "%d.0" % n, "%dj" % n, "%d " % n,
             "True" if n == 1 else str(n), "-0" if n == 0 else str(n), "-(0)" if n == 0 else str(n),
             "0x_%x" % n, "0" * R.randrange(1, 4) if n == 0 else str(n), "--%d" % n, "%dl" % n]
    return R.choice(forms) if chance(0.4) else str(n)


def junk(depth=0):
    """A random literal (or not quite one)."""
    c = R.randrange(11 if depth < 3 else 7)
    if c == 0:
        return intlit(R.randrange(100))
    if c == 1:
        return strlit(R.choice(["a", "xyz", "<f8", "\u00e9"]))
    if c < 6:
        return R.choice(JUNK_ATOMS[c - 2])
    if c == 6:
        return str(R.randrange(10))
    items = ", ".join(junk(depth + 1) for _ in range(R.randrange(1 if c == 9 else 0, 3)))
    if c == 7:
        return "(" + ws() + items + R.choice(["", ",", " ,"]) + ws() + ")"
    if c == 8:
        return "[" + ws() + items + R.choice(["", ","]) + "]"
    if c == 9:
        return "{" + items + R.choice(["", ","]) + "}"
    pairs = ", ".join("%s: %s" % (junk(depth + 1), junk(depth + 1)) for _ in range(R.randrange(3)))
    return "{" + ws() + pairs + R.choice(["", ","]) + "}"


def shape():
    """A shape of 2 elements, its integers and tuple spelled in many ways."""
    dims = R.choice([[2], [1, 2], [2, 1], [1, 1, 2], [2, 1, 1], [1, 2, 1]])
    inner = ("," + ws()).join(ws() + intlit(d) + ws() for d in dims)
    trail = R.choice([",", "", ", ", " ,"]) if len(dims) > 1 else R.choice([",", ",", " , ", ""])
    s = "(" + inner + trail + ")"
    if chance(0.05):
        s = "(" + s + ")"
    if chance(0.03):
        s = "[" + inner + "]"
    return s


def header():
    descr = R.choice(["<f8"] * 8 + ["<f4", "<f8 ", "f8", "<\\f8"])
    entries = [(strlit("descr"), strlit(descr, weird=chance(0.5))),
               (strlit("fortran_order"), R.choice(["False"] * 5 + ["True", "(False)", "0", "Falsey", "False ", " False"])),
               (strlit("shape"), shape())]
    if chance(0.15):  # a key twice, the first value anything
        k = R.randrange(3)
        entries.insert(R.randrange(len(entries)), (entries[k][0], junk()))
    if chance(0.05):
        entries.append((strlit(R.choice(["x", "descr ", "Shape"])), junk()))
    if chance(0.03):
        entries.pop(R.randrange(len(entries)))
    if chance(0.3):
        R.shuffle(entries)
    body = ("," + ws()).join(ws() + k + ws() + ":" + ws() + v + ws() for k, v in entries)
    h = "{" + body + R.choice([", ", ",", "", " ", ",  "]) + "}"
    if chance(0.05):
        h = "(" + ws() + h + ws() + ")"
    lead = R.choice(["", "", "", " ", "\t", "\n", "# c\n", "\f", "  \n"]) if chance(0.5) else ""
    tail = R.choice(["\n", " " * R.randrange(10) + "\n", "", "  ", " # x\n", "\n\n", "\n ", "\f\n"])
    return lead + h + tail


def mutate(h):
    """One or two random edits. A backslash goes inside the dict: attngeom
    refuses a backslash-newline outside it, where numpy reads some."""
    for _ in range(R.randrange(1, 3)):
        p = R.randrange(len(h) + 1)
        op = R.randrange(3)
        ch = R.choice([" ", "\t", "\n", "\f", "\\", "'", '"', "#", ",", "(", ")", "{", "}", ":", "L", "0",
                       "_", "j", ".", "-", "+", "b", "r", "x", "\x0b"])
        if ch == "\\" and "{" in h and "}" in h:
            p = R.randrange(h.index("{") + 1, h.rindex("}") + 1)
        if op == 0:
            h = h[:p] + ch + h[p:]
        elif op == 1 and p < len(h):
            h = h[:p] + h[p + 1:]
        elif p < len(h):
            h = h[:p] + ch + h[p + 1:]
    return h


def npy_file(h, version, data):
    if version == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h))
    else:
        pre = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h))
    return pre + h + data


def numpy_verdict(path, h, version, nbytes):
    """'read' / 'refused', or why attngeom may refuse what numpy reads."""
    try:
        a = np.load(path)
    except BaseException:
        return "refused", None
    t = h.decode("latin1" if version < 3 else "utf8")
    d = safe_eval(_filter_header(t) if version < 3 else t)
    if d["descr"] not in ("<f2", "<f4", "<f8"):
        return "other dtype", None
    if any(x < 0 for x in d["shape"]):
        return "negative dimension", None
    if a.nbytes != nbytes:
        return "data size", None
    return "read", a.shape


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lib = libattngeom.load(sys.argv[1], "check_npy_header")
    if lib is None:
        return 0
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    global W
    tmp = tempfile.mkdtemp(prefix="ag_npyhdr.")
    path = os.path.join(tmp, "h.npy")
    data = np.arange(2, dtype="<f8").tobytes()
    stats, bad = {}, []
    for _ in range(count):
        W = R.choice([0.05, 0.2, 0.5, 1.0])
        h = header()
        if chance(0.25):
            h = mutate(h)
        version = R.choice([1, 1, 2, 3])
        hb = h.encode("latin1" if version < 3 else "utf8")
        with open(path, "wb") as f:
            f.write(npy_file(hb, version, data))
        want, shape = numpy_verdict(path, hb, version, len(data))
        a, err = libattngeom.Array(), libattngeom.Error()
        rc = lib.ag_npy_read(path.encode(), ctypes.byref(a), ctypes.byref(err))
        got = tuple(a.shape[k] for k in range(a.ndim)) if rc == 0 else None
        lib.ag_array_free(ctypes.byref(a))
        stats[want] = stats.get(want, 0) + 1
        if want == "read" and got != shape:
            bad.append((version, h, "numpy reads shape %s, attngeom: %s" % (shape, got or err.message.decode(errors="replace"))))
        elif want == "refused" and rc == 0:
            bad.append((version, h, "numpy refuses it, attngeom reads shape %s" % (got,)))
        elif want not in ("read", "refused") and rc == 0:
            bad.append((version, h, "%s: attngeom reads it" % want))
    os.remove(path)
    os.rmdir(tmp)
    for version, h, why in bad[:20]:
        print("FAIL version %d.0 %r: %s" % (version, h, why))
    print("check_npy_header: %d headers (%s), %d disagreements" %
          (count, ", ".join("%s %d" % kv for kv in sorted(stats.items())), len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
