"""Softmax as a lens (issue 28): an array of pre-softmax scores (as
`attention --scores` or Model.attention(..., scores=True) give them)
through another normaliser, row by row over the last axis
(attngeom/normalizers.h, ag_normalize_rows)."""
import ctypes

import numpy as np

from ._lib import Call, Error, lib


def normalize(scores, normalizer="softmax", temperature=None):
    """Each row of scores (any shape [..., n]; -inf a masked key) through
    normalizer: "softmax" (softmax(S/T) with temperature T, default 1),
    "sparsemax" (Martins & Astudillo 2016), "entmax15" or "entmax:ALPHA"
    (Peters et al. 2019); float64 probabilities of the same shape, 0 on the
    masked keys. As `matrix --scores S.npy --normalizer N` forms them."""
    S = np.ascontiguousarray(scores, dtype=np.float64)
    if S.ndim < 1 or S.shape[-1] == 0 or S.size == 0:
        raise Error("normalize: scores need a non-empty last axis")
    kind, param = ctypes.c_int(), ctypes.c_double()
    with Call() as c:
        c.check(lib.ag_normalizer_parse(str(normalizer).encode(), ctypes.byref(kind),
                                        ctypes.byref(param), c.err))
    if temperature is not None:
        if kind.value != 0:  # AG_NORMALIZER_SOFTMAX
            raise Error("temperature applies to normalizer='softmax' only")
        param = ctypes.c_double(float(temperature))
    P = np.empty_like(S)
    n = S.shape[-1]
    with Call() as c:
        c.check(lib.ag_normalize_rows(kind, param, S.ctypes.data, S.size // n, n, P.ctypes.data,
                                      c.err))
    return P
