"""libattngeom.so through ctypes, for the checks that call the library
directly (check_npy_header.py, check_tokenizers.py): the library built next
to the CLI, and the structs of include/attngeom/core.h they pass."""
import ctypes
import os


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
