#!/usr/bin/python3
"""Which OpenBLAS kernel a process gets, for make bench (bench/peers.py).

Usage: /usr/bin/python3 bench/blas_probe.py lib PATH | numpy | torch

Run as a child of peers.py in the environment of the bench's runs, so that
OpenBLAS reads the same OPENBLAS_CORETYPE at load time as attngeom and the
peers do. Prints one JSON object:
  lib PATH  the libopenblas at PATH (the one attngeom's CLI is linked with,
            found by ldd), loaded with ctypes;
  numpy     the OpenBLAS numpy loaded: threadpoolctl's report if it is
            installed, else the libopenblas in /proc/self/maps after
            `import numpy`;
  torch     the same after `import torch`, with the BLAS torch names in
            torch.__config__.show() (BLAS_INFO) and its ATen CPU capability.
Keys: library (path), corename (openblas_get_corename()), config
(openblas_get_config()), and for torch blas_info and cpu_capability; a key
is null where it cannot be had (no OpenBLAS in the process).
"""
import ctypes
import json
import re
import sys


def openblas_info(path):
    """corename and config of the libopenblas at path (already loaded or not:
    dlopen returns the loaded copy, whose kernel was chosen at load time)."""
    out = {"library": path, "corename": None, "config": None}
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return out
    for key, fn in (("corename", "openblas_get_corename"), ("config", "openblas_get_config")):
        f = getattr(lib, fn, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            out[key] = f().decode()
    return out


def loaded_openblas():
    """The libopenblas mapped into this process, or None."""
    with open("/proc/self/maps") as f:
        m = re.search(r"(/\S*libopenblas\S*\.so\S*)", f.read())
    return m.group(1) if m else None


def numpy_info():
    import numpy  # loads numpy's OpenBLAS
    try:
        import threadpoolctl
    except ImportError:
        threadpoolctl = None
    if threadpoolctl is not None:
        for d in threadpoolctl.threadpool_info():
            if d.get("internal_api") == "openblas":
                out = openblas_info(d["filepath"])
                out["corename"] = d.get("architecture") or out["corename"]
                out["via"] = "threadpoolctl"
                out["numpy"] = numpy.__version__
                return out
    path = loaded_openblas()
    out = openblas_info(path) if path else {"library": None, "corename": None, "config": None}
    out["via"] = "/proc/self/maps"
    out["numpy"] = numpy.__version__
    return out


def torch_info():
    import torch
    shown = torch.__config__.show()
    path = loaded_openblas()
    out = openblas_info(path) if path else {"library": None, "corename": None, "config": None}
    m = re.search(r"BLAS_INFO=([^,\s]+)", shown)
    out["blas_info"] = m.group(1) if m else None
    m = re.search(r"CPU capability usage: (\S+)", shown)
    out["cpu_capability"] = m.group(1) if m else None
    out["torch"] = torch.__version__
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "lib":
        info = openblas_info(sys.argv[2])
    elif len(sys.argv) == 2 and sys.argv[1] == "numpy":
        info = numpy_info()
    elif len(sys.argv) == 2 and sys.argv[1] == "torch":
        info = torch_info()
    else:
        print("usage: blas_probe.py lib PATH | numpy | torch", file=sys.stderr)
        return 2
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
