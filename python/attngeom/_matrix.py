"""attngeom.matrix_metrics: `attngeom matrix` on a numpy array."""

import ctypes

import numpy as np

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
    dt = A.dtype.newbyteorder("=") if A.dtype.byteorder not in "=|" else A.dtype
    if dt not in _EXACT:
        raise Error("dtype %s: expected float16, float32 or float64" % A.dtype)
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


def matrix_metrics(A, metrics=None, *, edge_threshold=None, jobs=None, label=None,
                   to_pandas=False):
    """Metrics of the matrices of A, as `attngeom matrix` computes them.

    A: 2-D [n, m] (one matrix), 3-D [H, n, m] (heads) or 4-D [L, H, n, m]
    (layers x heads), float16, float32 or float64, any memory order (see
    as_float64 for when it is copied). metrics: None (spectrum, attention,
    geometry), a comma-separated string or a list of keys and families
    (spectrum, attention, geometry, curvature, all). edge_threshold: family
    F's threshold in [0, 1] (default 1/n). jobs: threads (default: the
    CPUs); the values do not depend on it. label: the records' "model".
    Returns a list of dicts (layer, head, rows, cols, metrics...), or a
    pandas DataFrame with to_pandas=True. Raises attngeom.Error with the
    library's message."""
    A64, _ = as_float64(A)
    sel = metric_set("matrix", metrics)
    opt = run_options(jobs=jobs, edge_threshold=edge_threshold)
    recs = call_matrices(A64, sel, opt)
    return result(records(recs, sel, label), to_pandas)
