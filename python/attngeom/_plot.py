"""attngeom.plot: the figures of `attngeom plot`, as bytes (ag_run_plot).

The spec is the library's sized struct ag_run_plot_spec (attngeom/plot.h;
kind 3 of core.h's ABI rule): its leading size tells the library which
fields this package knows, so a newer library reads it unchanged.
"""

import ctypes
import math
import os
import tempfile

from ._lib import Call, Error, lib


class _Page(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("format", ctypes.c_int),
                ("width", ctypes.c_double), ("height", ctypes.c_double),
                ("dpi", ctypes.c_double)]


class _Spec(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("kind", ctypes.c_int),
                ("input", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("metric", ctypes.c_char_p), ("model", ctypes.c_char_p),
                ("tokens", ctypes.c_char_p), ("title", ctypes.c_char_p),
                ("by_head", ctypes.c_int), ("values", ctypes.c_int),
                ("relative", ctypes.c_int), ("layer", ctypes.c_int), ("head", ctypes.c_int),
                ("heads_per_layer", ctypes.c_int),
                ("grid_rows", ctypes.c_size_t), ("grid_cols", ctypes.c_size_t),
                ("query", ctypes.c_int), ("vmin", ctypes.c_double), ("vmax", ctypes.c_double),
                ("page", _Page),
                # forest (--by KEYS, --unit, --ci, --ref)
                ("group_by", ctypes.c_char_p), ("unit", ctypes.c_char_p),
                ("level", ctypes.c_double), ("ref", ctypes.c_double),
                ("order_layer", ctypes.c_int),
                # lens (--normalizers, --temperatures)
                ("normalizers", ctypes.c_char_p),
                ("temperatures", ctypes.POINTER(ctypes.c_double)),
                ("ntemperatures", ctypes.c_size_t),
                # attention, patches (--registers)
                ("registers", ctypes.c_size_t),
                # encoder-decoder models (--target-tokens, --stack)
                ("target_tokens", ctypes.c_char_p), ("stack", ctypes.c_char_p)]


class _Output(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_ubyte)), ("len", ctypes.c_size_t)]



def _enc(s):
    return os.fsencode(s) if s is not None else None


def _pair(v, what):
    """(a, b) from "AxB" or a pair of numbers."""
    if isinstance(v, str):
        a, sep, b = v.partition("x")
        if not sep:
            raise ValueError("%s takes 'AxB' or (A, B), not %r" % (what, v))
        return float(a), float(b)
    a, b = v
    return a, b


def _format(fmt, out):
    """ag_plot_format of format=, else of out's suffix, else SVG."""
    name = (b"f." + fmt.encode() if fmt is not None
            else _enc(out) if out is not None else b"f.svg")
    code = lib.ag_plot_format_from_path(name)
    if code < 0:
        raise ValueError("format must be svg, pdf or png (or out= end in one), not %r"
                         % (fmt if fmt is not None else os.fspath(out)))
    return code


def _index(v, what):
    if v is None:
        return -1
    if int(v) != v or v < 0:
        raise ValueError("%s takes an index >= 0, not %r" % (what, v))
    return int(v)


def _spec(kind, path, out, fmt, metric, by, model, layer, head, tokens, heads_per_layer,
          values, vmin, vmax, title, size, dpi, grid, query, relative, ci=0.95, ref=None,
          unit=None, order="cluster", normalizers=None, temperatures=None, registers=None,
          target_tokens=None, stack=None):
    code = lib.ag_plot_kind_from_name(kind.encode())
    if code < 0:
        raise ValueError("unknown kind %r (heatmap, depth, attention, spectrum, similarity, "
                         "patches, forest, lens)" % (kind,))
    s = _Spec(size=ctypes.sizeof(_Spec), kind=code)
    if kind == "forest":  # by: the group keys, a string "layer,head" or a list
        s.group_by = (",".join(by) if isinstance(by, (list, tuple)) else by).encode() \
            if by is not None else None
        s.unit = (",".join(unit) if isinstance(unit, (list, tuple)) else unit).encode() \
            if unit is not None else None
        by = None
    elif by is None:
        by = "model"
    if by not in (None, "model", "head"):
        raise ValueError("by takes 'model' or 'head', not %r" % (by,))
    s.level = ci
    if order not in ("cluster", "layer"):
        raise ValueError("order takes 'cluster' or 'layer', not %r" % (order,))
    s.order_layer = order == "layer"
    s.ref = math.nan if ref is None else ref
    s.input, s.name = _enc(path), _enc(out) or b"figure"
    s.metric, s.model, s.tokens = metric and metric.encode(), model and model.encode(), _enc(tokens)
    s.title = title.encode() if title is not None else None
    s.by_head, s.values, s.relative = by == "head", bool(values), bool(relative)
    s.layer, s.head = _index(layer, "layer"), _index(head, "head")
    s.query = _index(query, "query")  # -1: the kind's default (patches 0, lens the last)
    _lens(s, normalizers, temperatures)
    s.heads_per_layer = 0 if heads_per_layer is None else _index(heads_per_layer, "heads_per_layer")
    s.grid_rows, s.grid_cols = map(int, _pair(grid, "grid")) if grid is not None else (0, 0)
    s.registers = 0 if registers is None else _index(registers, "registers")
    s.target_tokens, s.stack = _enc(target_tokens), stack and stack.encode()
    s.vmin = math.nan if vmin is None else vmin
    s.vmax = math.nan if vmax is None else vmax
    width, height = _pair(size, "size") if size is not None else (0, 0)
    s.page = _Page(size=ctypes.sizeof(_Page), format=_format(fmt, out), width=width,
                   height=height, dpi=dpi)
    return s


def _lens(s, normalizers, temperatures):
    """lens: the normalisers, a string "softmax,sparsemax" or a list, and the
    temperatures, a list of numbers (the array stays alive with s)."""
    if normalizers is not None:
        s.normalizers = (",".join(normalizers) if isinstance(normalizers, (list, tuple))
                         else normalizers).encode()
    if temperatures is not None:
        t = [float(v) for v in temperatures]
        s.temperatures = (ctypes.c_double * max(len(t), 1))(*t)
        s.ntemperatures = len(t)


def _render(spec):
    fig = _Output()
    with Call() as c:
        c.check(lib.ag_run_plot(ctypes.byref(spec), ctypes.byref(fig), c.err))
    try:
        return ctypes.string_at(fig.data, fig.len)
    finally:
        lib.ag_plot_output_free(ctypes.byref(fig))


def plot(kind, input, *, format=None, out=None, metric=None, by=None, model=None, layer=None,
         head=None, tokens=None, heads_per_layer=None, values=False, vmin=None, vmax=None,
         title=None, size=None, dpi=150, grid=None, query=None, relative=False, ci=0.95,
         ref=None, unit=None, order="cluster", normalizers=None, temperatures=None,
         registers=None, target_tokens=None, stack=None):
    """The figure `attngeom plot INPUT --kind KIND` draws, as bytes.

    input: a records file (heatmap, depth) or a .npy path; for the array
    kinds also a numpy array. format: "svg", "pdf" or "png" (default: the
    suffix of out, else svg). out: also write the bytes there. The other
    keywords are the command's options (docs/cli.md, "plot"): size "WxH" or
    (W, H) in points, grid "RxC" or (R, C), registers the register tokens
    between CLS and the grid (DINOv2 with registers); by: depth's "model" (the
    default; "head" is refused: its lines would join unrelated heads),
    forest's group keys ("layer" or ["model", "layer"];
    None: one row per head), with unit (the unit keys), ci (the interval's
    level) and ref (the reference line); order: similarity's "cluster"
    (average linkage, the default) or "layer"; lens: normalizers ("softmax,
    sparsemax" or a list; default softmax, sparsemax, entmax15) and
    temperatures (a list of softmax's T, default [0.5, 1, 2]), on the row
    query (default: the last) of layer/head of `attention --scores`;
    target_tokens: a cross-attention's target tokens file (its rows; tokens
    then labels the source, its columns); stack: heatmap's and depth's
    records of one stack of an encoder-decoder model ("encoder", "decoder",
    "cross"; None: records of several stacks are refused). An
    option of another kind is ignored. The same input gives the bytes the
    command writes. Raises
    attngeom.Error with the command's message when the data do not make
    the figure."""
    if not isinstance(input, (str, bytes, os.PathLike)):
        return _plot_array(kind, input, out=out, format=format, metric=metric, by=by,
                           model=model, layer=layer, head=head, tokens=tokens,
                           heads_per_layer=heads_per_layer, values=values, vmin=vmin, vmax=vmax,
                           title=title, size=size, dpi=dpi, grid=grid, query=query,
                           relative=relative, ci=ci, ref=ref, unit=unit, order=order,
                           normalizers=normalizers, temperatures=temperatures,
                           registers=registers, target_tokens=target_tokens, stack=stack)
    data = _render(_spec(kind, input, out, format, metric, by, model, layer, head, tokens,
                         heads_per_layer, values, vmin, vmax, title, size, dpi, grid, query,
                         relative, ci, ref, unit, order, normalizers, temperatures, registers,
                         target_tokens, stack))
    if out is not None:
        with open(out, "wb") as f:
            f.write(data)
    return data


def _plot_array(kind, array, **kw):
    """An array input through a temporary .npy of its float64 values."""
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="attngeom-plot-") as d:
        path = os.path.join(d, "input.npy")
        np.save(path, np.ascontiguousarray(array, dtype=np.float64))
        try:
            return plot(kind, path, **kw)
        except Error as e:  # the message names the array, not the temporary file
            raise Error(str(e).replace(path, "<array>"), e.status) from None

