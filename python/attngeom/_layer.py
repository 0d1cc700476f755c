"""attngeom.layer: `attngeom layer` — one attention layer of any
architecture from an input X and Q/K(/V/O) tensors named in a safetensors
file (ag_run_layer). The spec is the library's sized struct
ag_run_layer_spec (kind 3 of core.h's ABI rule), the attention it returns
the fixed ag_array."""

import ctypes
import os
import tempfile

from ._lib import AG_EINVAL, Call, Error, Owned, lib
from ._records import metric_set, records, result, run_options

_PRECISION = {"f32": 0, "f64": 1}  # ag_precision


class _Spec(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t)] + [
        (name, ctypes.c_char_p) for name in
        ("x", "weights", "qkv", "q", "k", "v", "o", "qkv_bias", "q_bias", "k_bias", "v_bias")] + [
        ("heads", ctypes.c_int), ("causal", ctypes.c_int), ("linear", ctypes.c_int),
        ("scale", ctypes.c_double), ("rotary_dim", ctypes.c_int),
        ("rope_theta", ctypes.c_double), ("softcap", ctypes.c_double),
        ("window", ctypes.c_int), ("precision", ctypes.c_int)]


class _Array(ctypes.Structure):  # ag_array (core.h)
    _fields_ = [("ndim", ctypes.c_int), ("shape", ctypes.c_size_t * 8),
                ("data", ctypes.POINTER(ctypes.c_double))]


def _usage(qkv, q, k, v, qkv_bias, q_bias, k_bias, v_bias, heads):
    """The CLI's usage checks of the named tensors, naming the keywords."""
    wrong = ("give either qkv= or q= and k=" if bool(qkv) == bool(q or k)
             else "q= and k= go together" if not qkv and not (q and k)
             else "v= goes with q=/k=, not with qkv=" if qkv and v
             else "give either qkv_bias= or q_bias=/k_bias=/v_bias="
             if qkv_bias and (q_bias or k_bias or v_bias) else None)
    if wrong:
        raise Error(wrong, AG_EINVAL)
    if not isinstance(heads, int) or heads <= 0:
        raise Error("heads: a positive number of heads, not %r" % (heads,), AG_EINVAL)


def _path(p):
    return os.fsencode(p) if p is not None else None


def _name(s):
    return s.encode() if s is not None else None


def layer(x, *, weights, heads, qkv=None, q=None, k=None, v=None, o=None, qkv_bias=None,
          q_bias=None, k_bias=None, v_bias=None, scale=None, causal=False, window=None,
          softcap=None, rotary_dim=None, rope_theta=None, linear=False, precision="f32",
          metrics=None, edge_threshold=None, epsilon=None, trials=None, seed=None, jobs=None,
          label=None, save_attention=False, to_pandas=False):
    """`attngeom layer --x X --weights F ... --heads H`: one record per head
    (the metrics of its attention; default spectrum, attention, geometry),
    the command's values to the last bit. x: an .npy path or an array [n, d]
    (leading 1s dropped); weights: the safetensors file; qkv or q and k (v,
    o, biases): tensor names in it, as the command takes them. window
    implies causal. label: the records' "model" (default the weights file's
    name). save_attention=True returns (records, attention [H, n, n])."""
    _usage(qkv, q, k, v, qkv_bias, q_bias, k_bias, v_bias, heads)
    if precision not in _PRECISION:
        raise Error("precision takes 'f32' or 'f64', not %r" % (precision,))
    if not isinstance(x, (str, bytes, os.PathLike)):
        return _layer_array(x, locals())
    s = _Spec(size=ctypes.sizeof(_Spec), x=_path(x), weights=_path(weights), qkv=_name(qkv),
              q=_name(q), k=_name(k), v=_name(v), o=_name(o), qkv_bias=_name(qkv_bias),
              q_bias=_name(q_bias), k_bias=_name(k_bias), v_bias=_name(v_bias), heads=heads,
              causal=bool(causal or window), linear=bool(linear), scale=scale or 0,
              rotary_dim=rotary_dim or 0, rope_theta=rope_theta or 0, softcap=softcap or 0,
              window=window or 0, precision=_PRECISION[precision])
    sel = metric_set("layer", metrics)
    opt = run_options(jobs=jobs, precision=precision, edge_threshold=edge_threshold,
                      epsilon=epsilon, trials=trials, seed=seed)
    lib.ag_run_options_set_metrics(opt, sel)
    attn, out = _Array(), ctypes.c_void_p()
    with Call() as c:
        c.check(lib.ag_run_layer(ctypes.byref(s), opt, None,
                                 ctypes.byref(attn) if save_attention else None,
                                 ctypes.byref(out), c.err))
    recs = Owned(out.value, lib.ag_record_list_free)
    if label is None:
        label = os.path.basename(os.fsdecode(weights))
    rows = result(records(recs, sel, label), to_pandas)
    if not save_attention:
        return rows
    try:
        return rows, _numpy(attn)
    finally:
        lib.ag_array_free(ctypes.byref(attn))


def _numpy(a):
    import numpy as np
    shape = tuple(a.shape[i] for i in range(a.ndim))
    return np.ctypeslib.as_array(a.data, shape=shape).copy()


def _layer_array(x, kw):
    """x an array: through a temporary .npy of its float64 values; messages
    name it <x>."""
    import numpy as np
    kw = {key: value for key, value in kw.items() if key != "x"}
    with tempfile.TemporaryDirectory(prefix="attngeom-layer-") as d:
        path = os.path.join(d, "x.npy")
        np.save(path, np.ascontiguousarray(x, dtype=np.float64))
        try:
            return layer(path, **kw)
        except Error as e:
            raise Error(str(e).replace(path, "<x>"), e.status) from None
