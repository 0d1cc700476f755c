"""attngeom.matrix_metrics: `attngeom matrix` on a numpy array."""

import ctypes

import numpy as np

from ._inputs import arrange, kept_tokens, layer_offset_value
from ._lib import Call, Error, Owned, c_size, c_ssize, lib
from ._records import metric_set, records, result, run_options

# Float dtypes that convert to float64 exactly, as the CLI's .npy reader
# converts <f2 and <f4 (io.h: "Values are converted exactly to double").
_EXACT = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


_F64 = np.dtype(np.float64)


def _aligned(A):
    """Whether every element of A (float64) is at an address aligned for its
    dtype, for any strides: the first element's address and every stride
    are multiples of the alignment (then so is every sum of them). The
    library reads the array through a double pointer and counts strides in
    doubles, so it needs both; it refuses a misaligned pointer itself."""
    align = _F64.alignment
    return A.ctypes.data % align == 0 and all(s % align == 0 for s in A.strides)


def check_dtype(A):
    """Refuse a dtype that does not convert to float64 exactly."""
    dt = A.dtype.newbyteorder("=") if A.dtype.byteorder not in "=|" else A.dtype
    if dt not in _EXACT:
        raise Error("dtype %s: expected float16, float32 or float64" % A.dtype)


def as_float64(A):
    """A as a float64 numpy array, and whether that copied it.

    Native float64 whose elements are all aligned (_aligned) is used as it
    is, whatever its strides (C, Fortran, slices, negative steps): no copy.
    float16 and float32 (any byte order), byte-swapped float64 and
    misaligned float64 (a view at an odd byte offset of a buffer, odd byte
    strides) are converted exactly into a new C-ordered array. Anything else
    is refused: integers are not attention matrices, and wider floats
    (longdouble) would be rounded."""
    A = np.asarray(A)
    check_dtype(A)
    if A.dtype == _F64 and A.dtype.isnative and _aligned(A):
        return A, False
    # a new array (numpy allocates it aligned); ascontiguousarray would
    # return a misaligned C-ordered float64 view as it is
    return np.array(A, dtype=np.float64, order="C"), True


def call_matrices(A, sel, opt):
    """ag_matrix_records on A (float64): the owned record list."""
    ndim = A.ndim
    shape = (c_size * max(1, ndim))(*A.shape)
    strides = (c_ssize * max(1, ndim))(*[s // 8 for s in A.strides])
    data = A.ctypes.data if A.size else None
    out = ctypes.c_void_p()
    with Call() as c:
        c.check(lib.ag_matrix_records(data, ndim, shape, strides, sel, opt, ctypes.byref(out),
                                      c.err))
    return Owned(out.value, lib.ag_record_list_free)


def _sequence_float64(S):
    """A sequence of Batch.sequence as one float64 [L, H, k, k] array: an
    array as as_float64 takes it (a float64 view is not copied), per-layer
    arrays gathered into a new one (float16/32 -> float64 is exact)."""
    if not isinstance(S, list):
        return as_float64(S)[0]
    check_dtype(S[0])
    out = np.empty((len(S),) + S[0].shape)
    for l, x in enumerate(S):
        out[l] = x
    return out


def _batch_records(batch, keep, sel, opt, label, layer_offset):
    """The records of every sequence of a Batch, in order, each with its
    "batch" index; a failure names the sequence."""
    rows = []
    for b in range(batch.size):
        try:
            recs = call_matrices(_sequence_float64(batch.sequence(b, keep[b])), sel, opt)
        except Error as e:
            raise Error("batch %d: %s" % (b, e), e.status) from None
        rows += records(recs, sel, label, batch=b, layer_offset=layer_offset)
    return rows


def matrix_metrics(A, metrics=None, *, edge_threshold=None, jobs=None, label=None,
                   layout=None, attention_mask=None, layer_offset=0, copy=False,
                   to_pandas=False):
    """Metrics of the matrices of A, as `attngeom matrix` computes them.

    A: 2-D [m, n] (one matrix), 3-D [H, m, n] (heads) or 4-D [L, H, m, n]
    (layers x heads), square or rectangular (cross-attention: m targets x
    n sources), float16, float32 or float64, any memory order (see
    as_float64 for when it is copied); a torch tensor of any float dtype
    (bfloat16 too; read without building a graph); a tuple or list of
    per-layer [batch, H, n, n] arrays or tensors (Hugging Face's
    outputs.attentions). layout: the axes of A when its rank does not say
    them: "BHNN" (one layer of a batch), "LBHNN" or "BLHNN" (5-D). With a
    batch axis, records carry "batch" (the index) and attention_mask
    [batch, n] (1 = real token) cuts each sequence to its real tokens.
    layer_offset: added to every record's layer (A holds a slice of the
    layers). copy=True copies a tensor on another device (CUDA) to the CPU
    instead of refusing it. metrics: None (spectrum, attention, geometry;
    and cross for a rectangular A), a comma-separated string or a list of
    keys and families (spectrum, attention, geometry, curvature, axioms,
    cross, all). edge_threshold: family F's
    threshold in [0, 1] (default 1/n). jobs: threads (default: the CPUs);
    the values do not depend on it. label: the records' "model".
    Returns a list of dicts (layer, head, rows, cols, metrics..., batch),
    or a pandas DataFrame with to_pandas=True. Raises attngeom.Error with
    the library's message."""
    offset = layer_offset_value(layer_offset)
    X, batch = arrange(A, layout, copy)
    if batch is None and attention_mask is not None:
        raise Error("attention_mask: A has no batch axis (a 4-D array is [L, H, n, n]; "
                    "pass layout='BHNN' for one layer of a batch)")
    keep = kept_tokens(attention_mask, batch, copy) if batch is not None else None
    shape = batch.shape if batch is not None else X.shape[-2:] if X.ndim >= 2 else None
    sel = metric_set("matrix", metrics, shape)
    opt = run_options(jobs=jobs, edge_threshold=edge_threshold)
    if batch is not None:
        return result(_batch_records(batch, keep, sel, opt, label, offset), to_pandas)
    recs = call_matrices(as_float64(X)[0], sel, opt)
    return result(records(recs, sel, label, layer_offset=offset), to_pandas)
