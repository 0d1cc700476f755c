"""Loading libattngeom.so and declaring the C functions ctypes calls.

Only the layout-free API of include/attngeom/access.h (and plain functions
of the other headers that take pointers and scalars) is used: no struct of
the library is copied here, so a library with more metrics works unchanged;
the exceptions are laid out from structs that core.h's ABI rule keeps fixed
or sized: a model run's input (attngeom/run.h) in _inputs.py, and
ag_run_plot_spec, ag_run_layer_spec, ag_plot_output and ag_array in
_plot.py and _layer.py.

ctypes.CDLL releases the GIL for the whole of every foreign call (the
Python documentation, "ctypes": only PyDLL keeps it), so a long call lets
other Python threads run; the library is thread-safe (attngeom/core.h).
"""

import contextlib
import ctypes
import ctypes.util
import functools
import os
import threading
from pathlib import Path


AG_EINVAL = 1  # attngeom/core.h


class Error(Exception):
    """A failure of the library: str(e) is its one-line message (ag_error),
    e.status its status code (AG_EINVAL, ...)."""

    def __init__(self, message, status=AG_EINVAL):
        super().__init__(message)
        self.status = status


def _candidates():
    """Where libattngeom.so is looked for, in order (docs/python.md)."""
    env = os.environ.get("ATTNGEOM_LIB")
    if env:
        return [env], True
    found = []
    root = Path(__file__).resolve().parent.parent.parent
    built = root / "build" / "libattngeom.so"
    if (root / "include" / "attngeom.h").is_file() and built.is_file():
        found.append(str(built))  # run from the source tree
    try:  # written by make install PYTHONDIR=...: the library installed with it
        from . import _libdir
        found.append(_libdir.LIBRARY)
    except ImportError:
        pass
    name = ctypes.util.find_library("attngeom")
    if name:
        found.append(name)
    found += ["libattngeom.so.0", "libattngeom.so"]
    return found, False


def _load():
    names, from_env = _candidates()
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            if from_env:
                break
    where = "ATTNGEOM_LIB=%s" % names[0] if from_env else ", ".join(names)
    raise ImportError("attngeom: cannot load libattngeom.so (tried %s): %s"
                      % (where, "; ".join(errors)))


lib = _load()

P = ctypes.c_void_p
c_int, c_long, c_size, c_double = ctypes.c_int, ctypes.c_long, ctypes.c_size_t, ctypes.c_double
c_str = ctypes.c_char_p
c_ulong, c_unsigned = ctypes.c_ulong, ctypes.c_uint
c_ssize = ctypes.c_ssize_t  # ptrdiff_t
PP = ctypes.POINTER(ctypes.c_void_p)
# ag_run_heads_fn (attngeom/run.h): one layer's selected heads (heads, n, n)
HEADS_FN = ctypes.CFUNCTYPE(c_int, c_int, ctypes.POINTER(c_double), c_size, c_size, P)

_PROTOTYPES = {
    # errors and memory
    "ag_error_new": (P, []),
    "ag_error_free": (None, [P]),
    "ag_error_status": (c_int, [P]),
    "ag_error_message": (c_str, [P]),
    "ag_free": (None, [P]),
    "ag_strerror": (c_str, [c_int]),
    # metrics
    "ag_metric_count": (c_int, []),
    "ag_metric_name": (c_str, [c_int]),
    "ag_command_families": (c_unsigned, [c_str]),
    "ag_metric_set_new": (c_int, [c_unsigned, c_str, PP, P]),
    "ag_metric_set_default_shape": (None, [P, c_unsigned, c_size, c_size]),
    "ag_metric_set_free": (None, [P]),
    "ag_metric_set_has": (c_int, [P, c_int]),
    # records
    "ag_record_layer": (c_int, [P]),
    "ag_record_head": (c_int, [P]),
    "ag_record_text": (c_long, [P]),
    "ag_record_temperature": (c_double, [P]),
    "ag_record_rows": (c_size, [P]),
    "ag_record_cols": (c_size, [P]),
    "ag_record_value": (c_int, [P, c_int, ctypes.POINTER(c_double)]),
    "ag_record_list_count": (c_size, [P]),
    "ag_record_list_get": (P, [P, c_size]),
    "ag_record_list_free": (None, [P]),
    # options
    "ag_run_options_new": (P, []),
    "ag_run_options_free": (None, [P]),
    "ag_run_options_set": (c_int, [P, c_str, c_double, P]),
    "ag_normalizer_parse": (c_int, [c_str, ctypes.POINTER(c_int), ctypes.POINTER(c_double), P]),
    "ag_run_options_set_normalizer": (c_int, [P, c_int, c_double, P]),
    "ag_run_options_set_temperatures": (c_int, [P, ctypes.POINTER(c_double), c_size, P]),
    "ag_normalize_rows": (c_int, [c_int, c_double, P, c_size, c_size, P, P]),
    "ag_run_options_select": (c_int, [P, c_str, ctypes.POINTER(c_int), c_size, P]),
    # matrices
    "ag_matrix_records": (c_int, [P, c_int, ctypes.POINTER(c_size), ctypes.POINTER(c_ssize),
                                  P, P, PP, P]),
    # models and tokenizers
    "ag_model_load": (c_int, [c_str, PP, P]),
    "ag_model_load_tower": (c_int, [c_str, c_int, PP, P]),
    "ag_model_is_tower": (c_int, [P]),
    "ag_model_free": (None, [P]),
    "ag_model_dim": (c_int, [P, c_str, ctypes.POINTER(c_long), P]),
    "ag_model_type": (c_str, [P]),
    "ag_info": (c_int, [c_str, PP, ctypes.POINTER(c_size), P]),
    "ag_model_selected": (c_int, [P, P, ctypes.POINTER(c_size), ctypes.POINTER(c_size), P]),
    "ag_model_attention_into": (c_int, [P, ctypes.POINTER(ctypes.c_int32), c_size, P, P, P, P]),
    "ag_model_analyze": (c_int, [P, ctypes.POINTER(ctypes.c_int32), c_size, c_long, P, P, PP, P]),
    "ag_model_weight_records": (c_int, [P, P, P, PP, P]),
    "ag_tokenizer_load": (c_int, [c_str, PP, P]),
    "ag_tokenizer_free": (None, [P]),
    "ag_tokenizer_encode": (c_int, [P, c_str, c_size, ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                    ctypes.POINTER(c_size), P]),
    "ag_tokenizer_token": (c_str, [P, ctypes.c_int32]),
    "ag_tokenizer_encode_offsets": (c_int, [P, c_str, c_size, ctypes.c_uint,
                                            ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                            ctypes.POINTER(ctypes.POINTER(c_size)), ctypes.POINTER(c_size), P]),
    "ag_tokenizer_decode": (c_int, [P, ctypes.POINTER(ctypes.c_int32), c_size, ctypes.c_uint,
                                    ctypes.POINTER(ctypes.c_void_p), P]),
    "ag_tokenizer_token_strings": (c_int, [P, ctypes.POINTER(ctypes.c_int32), c_size,
                                           ctypes.POINTER(ctypes.c_void_p), P]),
    # corpus statistics
    "ag_aggregate_create": (c_int, [c_str, c_double, c_int, PP, P]),
    "ag_aggregate_free": (None, [P]),
    "ag_aggregate_add_cells": (c_int, [P, c_size, ctypes.POINTER(c_str), ctypes.POINTER(c_int),
                                       ctypes.POINTER(c_double), ctypes.POINTER(c_str), P]),
    "ag_aggregate_result": (c_int, [P, PP, P]),
    "ag_compare_result": (c_int, [P, P, c_str, c_double, c_ulong, c_ulong, c_str, c_str, PP, P]),
    "ag_table_columns": (c_size, [P]),
    "ag_table_rows": (c_size, [P]),
    "ag_table_key": (c_str, [P, c_size]),
    "ag_table_cell": (c_int, [P, c_size, c_size, ctypes.POINTER(c_double), ctypes.POINTER(c_str)]),
    "ag_table_delete": (None, [P]),
    # a model run's input and its run (attngeom/run.h: the structs are
    # passed by reference; _inputs.py lays them out)
    "ag_run_tokenize": (c_int, [P, c_str, c_size, c_size,
                                ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                ctypes.POINTER(c_size), P, P]),
    "ag_model_input_kind": (c_int, [P]),
    "ag_run_media_config_load": (c_int, [P, c_str, P, P]),
    "ag_run_media_read": (c_int, [P, P, c_int, c_str, c_size, P, P, P]),
    "ag_run_media_array": (c_int, [P, P, c_int, P, c_str, c_size, P, P]),
    "ag_run_media_config_load_crop": (c_int, [P, c_str, P, P, P]),
    "ag_run_media_read_crop": (c_int, [P, P, P, c_int, c_str, c_size, P, P, P]),
    "ag_run_tensor_free": (None, [P]),
    "ag_run_options_set_metrics": (None, [P, P]),
    "ag_run_analyze": (c_int, [P, P, P, P, PP, P]),
    "ag_run_attention": (c_int, [P, P, P, P, HEADS_FN, P, P, P, P]),
    "ag_run_attention_scores": (c_int, [P, P, P, P, HEADS_FN, HEADS_FN, P, P, P, P]),
    # figures (_plot.py: ag_run_plot_spec, sized, and ag_plot_output, fixed)
    "ag_plot_kind_from_name": (c_int, [c_str]),
    "ag_plot_format_from_path": (c_int, [c_str]),
    "ag_run_plot": (c_int, [P, P, P]),
    "ag_plot_output_free": (None, [P]),
    "ag_plot_cluster_order": (c_int, [P, c_size, P, P, P]),
    # one layer from named tensors (_layer.py: ag_run_layer_spec, sized, and ag_array, fixed)
    "ag_run_layer": (c_int, [P, P, P, P, PP, P]),
    "ag_array_free": (None, [P]),
}

# per-layer and across-layer runs (attngeom/run.h): residual, rollout, similarity
MATRIX_FN = ctypes.CFUNCTYPE(c_int, c_int, ctypes.POINTER(c_double), c_size, P, P)
_PROTOTYPES.update({
    "ag_run_options_set_metrics": (None, [P, P]),
    "ag_run_residual": (c_int, [P, P, P, P, PP, P]),
    "ag_run_rollout": (c_int, [P, P, P, P, MATRIX_FN, P, PP, P]),
    "ag_run_similarity_heads": (c_int, [P, P, ctypes.POINTER(ctypes.POINTER(c_int)),
                                        ctypes.POINTER(c_size), P]),
    "ag_run_similarity_stack_heads": (c_int, [P, P, ctypes.POINTER(ctypes.POINTER(c_int)),
                                              ctypes.POINTER(c_size), P]),
    "ag_run_similarity": (c_int, [P, P, P, P, P, P]),
})

# the induction probe (attngeom/run.h): `attngeom heads --probe induction`
_PROTOTYPES.update({
    "ag_run_probe_tokens": (c_int, [P, P, c_size, c_int, c_ulong,
                                    ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                    ctypes.POINTER(c_size), ctypes.POINTER(c_size), P]),
    "ag_run_probe_induction": (c_int, [P, ctypes.POINTER(ctypes.c_int32), c_size, c_size, c_size,
                                       c_int, P, P, PP, P]),
})

class ContribView(ctypes.Structure):
    """ag_run_contrib_view (run.h, kind 2: read through the pointer)."""
    _fields_ = [("layer", c_int), ("n", c_size), ("M", ctypes.POINTER(c_double)),
                ("R", ctypes.POINTER(c_double)), ("mixing", ctypes.POINTER(c_double)),
                ("heads", c_size), ("stack", c_int)]


CONTRIB_FN = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(ContribView), P, P)
_PROTOTYPES["ag_run_contributions"] = (c_int, [P, P, P, P, c_int, c_int, CONTRIB_FN, P, PP, P])

def declare(prototypes):
    """Set each function's restype and argtypes: {name: (restype, argtypes)}."""
    for name, (res, args) in prototypes.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


declare(_PROTOTYPES)

# Optional: ag_version() exists in libraries built with `make install`'s ABI
# work (issue 13, item 2); older ones carry only AG_VERSION_STRING.
if hasattr(lib, "ag_version"):
    lib.ag_version.restype, lib.ag_version.argtypes = c_str, []


def _blas_one_thread():
    """Keep the OpenBLAS libattngeom calls on one thread, as the CLI does
    (src/cli/blas.c): a BLAS or LAPACK call split over OpenBLAS threads sums
    in an order that depends on their count, and values would differ from
    the CLI's in the last bits. The package parallelises itself (jobs=).
    This affects the OpenBLAS libattngeom is linked with (libopenblas.so.0),
    not the BLAS numpy loads through libblas.so.3. Returns whether it was
    found."""
    try:
        setter = lib.openblas_set_num_threads
    except AttributeError:  # another BLAS: nothing to set
        return False
    setter.restype, setter.argtypes = None, [ctypes.c_int]
    setter(1)
    return True


BLAS_ONE_THREAD = _blas_one_thread()


def version():
    """The library's version string, or None when it does not tell."""
    return lib.ag_version().decode() if hasattr(lib, "ag_version") else None


def text(b):
    return b.decode("utf-8", "backslashreplace") if b is not None else None


class Call:
    """One ag_error for a call: `with Call() as err: check(lib.f(..., err))`."""

    def __enter__(self):
        self.err = lib.ag_error_new()
        if not self.err:
            raise MemoryError("attngeom: out of memory")
        return self

    def __exit__(self, *exc):
        lib.ag_error_free(self.err)
        return False

    def check(self, status, prefix=None):
        if status != 0:
            msg = text(lib.ag_error_message(self.err)) or text(lib.ag_strerror(status))
            raise Error("%s: %s" % (prefix, msg) if prefix else msg, status)
        return status


class Owned:
    """A library object freed by `free` when this wrapper goes away."""

    def __init__(self, ptr, free):
        self.ptr, self._free = ptr, free

    def close(self):
        if self.ptr:
            self._free(self.ptr)
            self.ptr = None

    def __del__(self):
        self.close()

    @property
    def _as_parameter_(self):
        return self.ptr


class Guard:
    """The calls in flight on library objects that close() frees.

    Why: the GIL is released during every library call (CDLL), so another
    thread can call close() while a call runs, and freeing then would be a
    use-after-free. Every call runs inside `with guard.use():`. close() marks
    the guard closed at once (a call starting later raises Error "WHAT is
    closed"), waits until the calls in flight have returned, then frees."""

    def __init__(self, what):
        self._what = what
        self._cond = threading.Condition()
        self._calls = 0
        self._closed = False

    @contextlib.contextmanager
    def use(self):
        with self._cond:
            if self._closed:
                raise Error("%s is closed" % self._what)
            self._calls += 1
        try:
            yield
        finally:
            with self._cond:
                self._calls -= 1
                self._cond.notify_all()

    def close(self, free):
        """Refuse new calls, wait for those in flight, then call free()
        under the lock, so that concurrent closes free once (free must do
        nothing the second time: Owned.close)."""
        with self._cond:
            self._closed = True
            self._cond.wait_for(lambda: self._calls == 0)
            free()


def guarded(method):
    """A method of an object with a Guard in self._guard, run inside it."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._guard.use():
            return method(self, *args, **kwargs)
    return call


def new(fn, free, *args, prefix=None):
    """Call fn(*args, &out, err) and own *out."""
    out = ctypes.c_void_p()
    with Call() as c:
        c.check(fn(*args, ctypes.byref(out), c.err), prefix)
    return Owned(out.value, free)


METRIC_COUNT = lib.ag_metric_count()
METRIC_NAMES = [lib.ag_metric_name(m).decode() for m in range(METRIC_COUNT)]
