"""Selections, run options and records as Python values, the way the CLI's
JSON writes them: keys layer, head, rows, cols, the selected metrics in the
order of docs/metrics.md, text (when any record has one) and model; null
becomes None, integer counts int, booleans bool."""

import ctypes
import os

from ._lib import Call, Error, METRIC_COUNT, METRIC_NAMES, Owned, lib, new
from ._seq2seq import stack_name

AG_V_ABSENT, AG_V_NULL, AG_V_NUMBER, AG_V_INTEGER, AG_V_BOOL = range(5)


# The Python entry point of each command, for messages.
_ENTRY = {"matrix": "matrix_metrics", "analyze": "Model.analyze", "weights": "Model.weights",
          "residual": "Model.residual", "rollout": "Model.rollout", "layer": "layer",
          "contributions": "Model.contributions"}


def _python_words(error, prefix, keyword, command=None):
    """error with the library's name of an option (its CLI spelling) as the
    Python keyword, and "this command" as the Python entry point."""
    msg = str(error)
    if msg.startswith(prefix):
        msg = keyword + ": " + msg[len(prefix):]
    if command is not None:
        msg = msg.replace("this command", _ENTRY.get(command, command))
    return Error(msg, error.status)


def metric_set(command, metrics, shape=None):
    """The selection of `command` ("matrix", "analyze", "weights", ...):
    metrics None (the command's default; for matrices of shape (rows,
    cols), rectangular ones get family cross too), a comma-separated string
    or a list. Errors name the keyword: "metrics: unknown metric ..."."""
    if metrics is not None and not isinstance(metrics, str):
        metrics = ",".join(metrics)
    families = lib.ag_command_families(command.encode())
    listing = None if metrics is None else metrics.encode()
    try:
        sel = new(lib.ag_metric_set_new, lib.ag_metric_set_free, families, listing)
    except Error as e:
        raise _python_words(e, "--metrics: ", "metrics", command) from None
    if metrics is None and shape is not None:
        lib.ag_metric_set_default_shape(sel, families, shape[0], shape[1])
    return sel


def default_jobs():
    """The CPUs this process may run on, as the CLI's default -j."""
    try:
        return max(1, min(256, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(256, os.cpu_count() or 1))


_PRECISIONS = {"f32": 32, "f64": 64}


def run_options(jobs=None, precision=None, edge_threshold=None, epsilon=None, trials=None,
                seed=None, layers=None, heads=None, massive_abs=None, massive_ratio=None,
                flow_max_tokens=None):
    """An ag_run_options from keyword values (None: the command's default)."""
    opt = Owned(lib.ag_run_options_new(), lib.ag_run_options_free)
    if not opt.ptr:
        raise MemoryError("attngeom: out of memory")
    if precision is not None and precision not in _PRECISIONS:
        raise Error("precision takes 'f32' or 'f64', not %r" % (precision,))
    values = {"threads": default_jobs() if jobs is None else jobs,
              "precision": _PRECISIONS.get(precision),
              "edge_threshold": edge_threshold, "epsilon": epsilon, "trials": trials,
              "seed": seed, "massive_abs": massive_abs, "massive_ratio": massive_ratio,
              "flow_max_tokens": flow_max_tokens}
    with Call() as c:
        for key, value in values.items():
            if value is not None:
                try:
                    c.check(lib.ag_run_options_set(opt, key.encode(), float(value), c.err))
                except Error as e:  # "option threads: 0 is out of range"
                    raise _python_words(e, "option %s: " % key,
                                        "jobs" if key == "threads" else key) from None
        for what, idx in (("layers", layers), ("heads", heads)):
            if idx is not None:
                idx = [int(i) for i in ([idx] if isinstance(idx, int) else idx)]
                arr = (ctypes.c_int * max(1, len(idx)))(*idx)
                c.check(lib.ag_run_options_select(opt, what.encode(), arr, len(idx), c.err))
    return opt


def _value(kind, v):
    if kind == AG_V_NUMBER:
        return v
    if kind == AG_V_INTEGER:
        return int(v)
    if kind == AG_V_BOOL:
        return v != 0
    return None


def records(rec_list, sel, model=None, batch=None, layer_offset=0):
    """The records of an ag_record_list as a list of dicts; batch: their
    "batch" (a sequence of a batch, matrix_metrics), before "model";
    layer_offset is added to their layers."""
    keys = [m for m in range(METRIC_COUNT) if lib.ag_metric_set_has(sel, m)]
    value = ctypes.c_double()
    out, texts = [], False
    for i in range(lib.ag_record_list_count(rec_list)):
        r = lib.ag_record_list_get(rec_list, i)
        d = {"layer": lib.ag_record_layer(r) + layer_offset, "head": lib.ag_record_head(r),
             "rows": lib.ag_record_rows(r), "cols": lib.ag_record_cols(r)}
        for m in keys:
            kind = lib.ag_record_value(r, m, ctypes.byref(value))
            d[METRIC_NAMES[m]] = _value(kind, value.value)
        t = lib.ag_record_text(r)
        texts |= t >= 0
        d["text"] = t
        stack = stack_name(r)  # an encoder–decoder pass's: "stack" first, as the CLI's
        out.append({"stack": stack, **d} if stack else d)
    for d in out:  # "text" only when a record has one, as the CLI writes it
        t = d.pop("text")
        if texts:
            d["text"] = t if t >= 0 else None
        if batch is not None:
            d["batch"] = batch
        if model is not None:
            d["model"] = model
    return out


def result(rows, to_pandas):
    """rows, or a pandas DataFrame of them with to_pandas=True."""
    if not to_pandas:
        return rows
    try:
        import pandas
    except ImportError as e:
        raise Error("to_pandas=True needs pandas (Debian: apt-get install python3-pandas)") from e
    return pandas.DataFrame.from_records(rows)
