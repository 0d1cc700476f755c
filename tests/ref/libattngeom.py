"""attngeom as the checks call it: libattngeom.so through ctypes, for the
checks that call the library directly (check_npy_header.py,
check_tokenizers.py): the library built next to the CLI, and the structs of
include/attngeom/core.h they pass; and the CLI (`run`, `Checks`), for the
checks that compare its JSON records with a reference key by key."""
import ctypes
import json
import os
import subprocess


class Error(ctypes.Structure):
    """ag_error: message is AG_ERROR_MESSAGE_MAX (512) bytes."""
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 512)]


class Array(ctypes.Structure):
    """ag_array: shape holds AG_MAX_DIMS (8) sizes."""
    _fields_ = [("ndim", ctypes.c_int), ("shape", ctypes.c_size_t * 8),
                ("data", ctypes.POINTER(ctypes.c_double))]


def load(cli, check):
    """The libattngeom.so beside the CLI at path cli, with the prototypes the
    checks need and libc's free as .free; None, after printing why, under the
    sanitizers: an ASan-built library cannot be loaded into an uninstrumented
    python ("ASan runtime does not come first"), and `make test` runs the
    check (named `check` in the message) on the normal build."""
    if os.environ.get("AG_SANITIZE"):
        print("%s: skipped under the sanitizers (ctypes would load an ASan library into python)" % check)
        return None
    lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(cli)), "libattngeom.so"))
    lib.ag_tokenizer_free.argtypes = [ctypes.c_void_p]
    lib.free = ctypes.CDLL(None).free
    lib.free.argtypes = [ctypes.c_void_p]
    return lib


def run(cli, args):
    """(exit status, stdout, stderr) of the CLI at path cli with args."""
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def no_constants(name):
    """json.loads' parse_constant: NaN and Infinity are not JSON, so a failure."""
    raise ValueError("non-finite JSON token %s" % name)


class Checks:
    """The failures of one check and, per key of `keys`, the largest relative
    error (and where), and how many references were null."""

    def __init__(self, keys):
        self.keys = list(keys)
        self.fails = []
        self.maxerr = {k: 0.0 for k in self.keys}
        self.where = {k: "" for k in self.keys}
        self.nulls = {k: 0 for k in self.keys}

    def fail(self, msg):
        self.fails.append(msg)
        print("FAIL", msg, flush=True)

    def records(self, cli, args, document=False):
        """The records of `cli args --format json` (with document, the whole
        JSON document: records and settings); None after a failure (exit
        status, or not strict JSON)."""
        rc, out, err = run(cli, args + ["--format", "json"])
        if rc != 0:
            self.fail("attngeom %s: exit %d: %s" % (" ".join(args), rc, err.strip()))
            return None
        try:
            doc = json.loads(out, parse_constant=no_constants)
            return doc if document else doc["records"]
        except ValueError as e:
            self.fail("attngeom %s: bad JSON (%s)" % (" ".join(args), e))
            return None

    def each_matrix(self, label, recs, stack):
        """(index, record, matrix) of the records of one file holding stack
        [..., n, n] (2-D for one matrix), after checking that there is one
        record per matrix carrying exactly the keys `keys` beside its
        identifying columns; nothing after a failed count."""
        flat = stack.reshape(-1, stack.shape[-2], stack.shape[-1])
        if len(recs) != flat.shape[0]:
            self.fail("%s: %d records, expected %d" % (label, len(recs), flat.shape[0]))
            return
        for h, (rec, M) in enumerate(zip(recs, flat)):
            got_keys = set(rec) - {"layer", "head", "rows", "cols", "model"}
            if got_keys != set(self.keys):
                self.fail("%s: keys %s, expected %s" % (label, sorted(got_keys), self.keys))
            yield h, rec, M

    def compare(self, label, rec, exp, rtol, atol, integers=(), exact=()):
        """Record rec against the reference dict exp, key by key: nulls exactly;
        keys in `integers` as equal JSON integers; keys in `exact` as equal
        numbers; the others to |got - exp| <= rtol |exp| + atol."""
        for k in self.keys:
            got, want = rec.get(k, "missing"), exp[k]
            if want is None:
                self.nulls[k] += 1
                if got is not None:
                    self.fail("%s: %s = %r, reference null" % (label, k, got))
                continue
            if k in integers:
                if not (isinstance(got, int) and not isinstance(got, bool)) or got != want:
                    self.fail("%s: %s = %r, reference %d" % (label, k, got, want))
                continue
            if not isinstance(got, (int, float)) or isinstance(got, bool):
                self.fail("%s: %s = %r, reference %.17g" % (label, k, got, want))
                continue
            d = abs(got - want)
            rel = d / abs(want) if abs(want) > atol else d
            if rel > self.maxerr[k]:
                self.maxerr[k], self.where[k] = rel, label
            if (k in exact and got != want) or (k not in exact and not d <= rtol * abs(want) + atol):
                self.fail("%s: %s = %.17g, reference %.17g (rel %.3g)" % (label, k, got, want, rel))
