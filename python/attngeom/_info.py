"""attngeom.info: what a model folder or tensor file holds (`attngeom info`)."""

import ctypes
import json
import os

from ._lib import Call, lib


def info(path):
    """What `path` holds, as `attngeom info PATH --format json` prints it:
    a dict with "path", "kind" ("model", "safetensors" or "npy") and, for a
    model folder, "config" (the architecture as the engine reads it),
    "tokenizer" and "tensors"; for a .safetensors file "tensors"; for a .npy
    file "shape". Raises attngeom.Error naming the file it cannot read."""
    raw = os.fsencode(path)
    out, size = ctypes.c_void_p(), ctypes.c_size_t()
    with Call() as c:
        c.check(lib.ag_info(raw, ctypes.byref(out), ctypes.byref(size), c.err))
    try:
        return json.loads(ctypes.string_at(out.value, size.value).decode("utf-8"))
    finally:
        lib.ag_free(out)
