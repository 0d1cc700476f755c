"""attngeom.aggregate and attngeom.compare: `attngeom aggregate` and
`attngeom compare` on records held in Python (lists of dicts or DataFrames),
through the library's ag_aggregate (docs/metrics.md, "Aggregates and
comparisons")."""

import ctypes
import math
import numbers

from ._lib import P, PP, Call, Error, Owned, c_double, c_int, c_str, c_ulong, lib, new, text
from ._records import result

# The unit and paired entry points of include/attngeom/aggregate.h.
lib.ag_aggregate_set_unit.restype, lib.ag_aggregate_set_unit.argtypes = c_int, [P, c_str, P]
lib.ag_aggregate_set_bootstrap.restype = c_int
lib.ag_aggregate_set_bootstrap.argtypes = [P, c_ulong, c_ulong, P]
lib.ag_compare_result_paired.restype = c_int
lib.ag_compare_result_paired.argtypes = [P, P, c_str, c_double, c_ulong, c_ulong, c_int, c_str,
                                         c_str, PP, P]

AG_CELL_NULL, AG_CELL_NUMBER, AG_CELL_INTEGER, AG_CELL_BOOL, AG_CELL_TEXT, AG_CELL_MEAN_CI = \
    range(6)


def _rows(records):
    if hasattr(records, "to_dict"):  # a pandas DataFrame
        return records.to_dict("records")
    return list(records)


def _cell(key, v):
    """(kind, value, text) of one value, as the CLI reads it from JSON."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return AG_CELL_NULL, 0.0, None
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return AG_CELL_BOOL, float(bool(v)), None
    if isinstance(v, numbers.Integral):
        return AG_CELL_INTEGER, float(v), None
    if isinstance(v, numbers.Real):
        return AG_CELL_NUMBER, float(v), None
    if isinstance(v, str):
        return AG_CELL_TEXT, 0.0, v.encode("utf-8")
    raise Error("key '%s': a value of type %s is not a record value" % (key, type(v).__name__))


def _add(agg, row, c):
    keys = list(row)
    cells = [_cell(k, row[k]) for k in keys]
    n = len(keys)
    ckeys = (c_str * max(1, n))(*[str(k).encode("utf-8") for k in keys])
    kinds = (c_int * max(1, n))(*[k for k, _, _ in cells])
    values = (c_double * max(1, n))(*[v for _, v, _ in cells])
    texts = (c_str * max(1, n))(*[t for _, _, t in cells])
    c.check(lib.ag_aggregate_add_cells(agg, n, ckeys, kinds, values, texts, c.err))


def _by(by):
    if by is None:
        return None
    if not isinstance(by, str):
        by = ",".join(by)
    return by.encode("utf-8")


def _count(name, v, lo=0):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
        raise Error("%s=%r: an integer >= %d" % (name, v, lo))
    return int(v)


def _aggregate(records, by, level, keep, name, unit=None, bootstrap=0, seed=1):
    agg = new(lib.ag_aggregate_create, lib.ag_aggregate_free, _by(by), float(level), int(keep))
    with Call() as c:
        if unit is not None:
            c.check(lib.ag_aggregate_set_unit(agg, _by(unit), c.err))
        if bootstrap:
            c.check(lib.ag_aggregate_set_bootstrap(agg, bootstrap, seed, c.err))
    rows = _rows(records)
    if not rows:
        raise Error("%s: no records" % name)
    with Call() as c:
        for i, row in enumerate(rows):
            try:
                _add(agg, row, c)
            except Error as e:
                raise Error("%s: record %d: %s" % (name, i + 1, e), e.status) from None
    return agg


def _table(tab):
    """An ag_table as a list of dicts."""
    keys = [text(lib.ag_table_key(tab, c)) for c in range(lib.ag_table_columns(tab))]
    value, s = c_double(), c_str()
    rows = []
    for r in range(lib.ag_table_rows(tab)):
        row = {}
        for c, key in enumerate(keys):
            kind = lib.ag_table_cell(tab, r, c, ctypes.byref(value), ctypes.byref(s))
            row[key] = (None if kind == AG_CELL_NULL else
                        int(value.value) if kind == AG_CELL_INTEGER else
                        value.value != 0 if kind == AG_CELL_BOOL else
                        text(s.value) if kind == AG_CELL_TEXT else value.value)
        rows.append(row)
    return rows


def aggregate(records, by=None, *, unit=None, ci=0.95, bootstrap=0, seed=1, to_pandas=False):
    """`attngeom aggregate`: per group the keys, unit, n (records), n_units,
    and for each metric K over the unit means: K, K_std, K_ci_low, K_ci_high
    (Student-t, confidence ci) and K_n (units); with bootstrap=N also
    K_pct_low, K_pct_high, K_bca_low, K_bca_high (N resamples of the units,
    GSL MT19937 seeded with seed; `--bootstrap N --seed S`).
    records: a list of dicts (what analyze, matrix_metrics, weights return,
    or records read back) or a DataFrame. by: None groups by the identifying
    keys present (model, layer, head, ...; never text), "" or [] pools
    everything, else the keys (a list or a comma-separated string); "stack"
    (an encoder-decoder model's records) is a key of every grouping, first
    when `by` does not name it.
    unit: None the default unit (the text/input key, else the record),
    else the unit keys (`--unit KEYS`, e.g. ["layer", "head"])."""
    bootstrap = _count("bootstrap", bootstrap)
    seed = _count("seed", seed)
    agg = _aggregate(records, by, ci, False, "records", unit, bootstrap, seed)
    out = ctypes.c_void_p()
    with Call() as c:
        c.check(lib.ag_aggregate_result(agg, ctypes.byref(out), c.err))
    return result(_table(Owned(out.value, lib.ag_table_delete)), to_pandas)


def compare(a, b, by="", *, unit=None, paired=False, metrics=None, ci=0.95, permutations=0,
            seed=1, to_pandas=False):
    """`attngeom compare A B`: per (group, metric) over the unit means the
    Welch t-test of mean_a - mean_b (unit, n_a, n_b, n_units, mean_a, mean_b,
    diff, ci_low, ci_high, t, df, p), p_holm and q_bh over every row,
    hedges_g with its interval; paired=True (`--paired`): the paired t-test
    on per-unit differences, p_wilcoxon and dz; with permutations > 0,
    p_perm (relabelling, or sign flips when paired; GSL MT19937 seeded with
    seed), p_perm_holm, q_perm_bh. by: "" (default) pools each input, as
    the CLI does; unit: as aggregate's; metrics: the keys to compare
    (default every numeric key both share but the sizes rows and cols)."""
    if not isinstance(permutations, numbers.Integral) or isinstance(permutations, bool) or permutations < 0:
        raise Error("permutations=%r: a count of permutations, an integer >= 0" % (permutations,))
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
        raise Error("seed=%r: an integer >= 0" % (seed,))
    keep = permutations > 0 or bool(paired)
    aa = _aggregate(a, by, ci, keep, "a", unit)
    bb = _aggregate(b, by, ci, keep, "b", unit)
    if metrics is not None and not isinstance(metrics, str):
        metrics = ",".join(metrics)
    out = ctypes.c_void_p()
    with Call() as c:
        c.check(lib.ag_compare_result_paired(aa, bb, None if metrics is None else metrics.encode(),
                                             float(ci), int(permutations), int(seed),
                                             int(bool(paired)), b"a", b"b", ctypes.byref(out),
                                             c.err))
    return result(_table(Owned(out.value, lib.ag_table_delete)), to_pandas)
