"""Attention as PyTorch and Hugging Face hand it over, for matrix_metrics:
torch tensors, a tuple of per-layer [batch, H, n, n] tensors
(outputs.attentions), stacked 5-D arrays with a layout, and the padding
mask (attention_mask) that cuts each sequence to its real tokens.

torch stays optional: it is never imported here. A tensor can only exist
once torch is imported, so sys.modules tells whether an object may be one."""

import operator
import sys

import numpy as np

from ._lib import Error

# layout -> its number of axes. A 4-D array is [L, H, n, m] unless layout
# says "BHNN" (one layer of a batch: what a Hugging Face hook returns).
LAYOUTS = {"NN": 2, "HNN": 3, "LHNN": 4, "BHNN": 4, "LBHNN": 5, "BLHNN": 5}
_BATCHED = ("BHNN", "LBHNN", "BLHNN")


def _torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def to_numpy(x, name, copy):
    """x as a numpy array. A torch tensor is detached first (read without
    building a graph, whatever its requires_grad), bfloat16 is widened to
    float32 (exact; numpy has no bfloat16), and .numpy() then shares its
    memory with its strides: no copy. A tensor on another device (CUDA) is
    refused unless copy=True copies it to the CPU."""
    if not _torch_tensor(x):
        return np.asarray(x)
    t = x.detach()
    if t.device.type != "cpu":
        if not copy:
            raise Error("%s: a tensor on %s; call .cpu() first, or pass copy=True"
                        % (name, t.device))
        t = t.cpu()
    if t.dtype is sys.modules["torch"].bfloat16:
        t = t.float()
    return t.numpy()


def layer_offset_value(offset):
    """layer_offset as a non-negative int (bool is not a count)."""
    try:
        if isinstance(offset, bool):
            raise TypeError
        value = operator.index(offset)
    except TypeError:
        value = -1
    if value < 0:
        raise Error("layer_offset: expected an integer >= 0, not %r" % (offset,))
    return value


def _per_layer_items(A, copy):
    """A tuple or list of 3-D [H, n, n] or 4-D [batch, H, n, n] arrays or
    tensors (Hugging Face's outputs.attentions) as numpy arrays, else None:
    anything else (nested lists of numbers, arrays of other ranks) keeps
    numpy.asarray's meaning."""
    if not isinstance(A, (tuple, list)) or not A:
        return None
    if not all(hasattr(x, "ndim") and x.ndim == A[0].ndim for x in A) or A[0].ndim not in (3, 4):
        return None
    items = [to_numpy(x, "A[%d]" % k, copy) for k, x in enumerate(A)]
    for k, x in enumerate(items):
        if x.shape != items[0].shape:
            raise Error("A[%d]: shape %s, but A[0] has %s; every layer's must match"
                        % (k, x.shape, items[0].shape))
    return items


class Batch:
    """Sequences of attention, each [L, H, n, m]: either a 5-D array
    [batch, L, H, n, m] (views into the caller's memory) or per-layer
    arrays [batch, H, n, m] (a tuple, gathered one sequence at a time)."""

    def __init__(self, stacked=None, layers=None):
        self.stacked, self.layers = stacked, layers
        first = stacked if stacked is not None else layers[0]
        if first.size == 0:
            raise Error("A: empty array of shape %s" % (first.shape,))
        self.size, self.shape = first.shape[0], first.shape[-2:]

    def sequence(self, b, keep):
        """Sequence b, rows and columns cut to `keep` (a slice or an index
        array): a [L, H, k, k] array (a view of a stacked array when keep is
        a slice), or of per-layer arrays the list of their [H, k, k]."""
        def cut(S):
            return S[..., keep, keep] if isinstance(keep, slice) else S[..., keep[:, None], keep]
        if self.stacked is not None:
            return cut(self.stacked[b])
        return [cut(x[b]) for x in self.layers]


def _check_layout(layout, X):
    if X.ndim != LAYOUTS[layout]:
        raise Error("layout: %r is %d-D, A is %d-D of shape %s"
                    % (layout, LAYOUTS[layout], X.ndim, X.shape))


def arrange(A, layout, copy):
    """(array, None) for an input without a batch axis (its 2-D, 3-D or 4-D
    meaning of ag_matrix_records), or (None, Batch)."""
    if layout is not None and layout not in LAYOUTS:
        raise Error("layout: expected one of %s, not %r" % (", ".join(LAYOUTS), layout))
    items = _per_layer_items(A, copy)
    if items is not None:
        if layout is not None:
            raise Error("layout: not for a tuple or list of layers (each is [batch, H, n, n] "
                        "or [H, n, n])")
        if items[0].ndim == 3:  # [H, n, n] per layer: numpy.asarray's stacking
            return np.stack(items), None
        return None, Batch(layers=items)
    X = to_numpy(A, "A", copy)
    if layout is None and X.ndim == 5:
        raise Error("A: a 5-D array of shape %s needs layout='LBHNN' (layers first, as "
                    "torch.stack(outputs.attentions)) or layout='BLHNN'" % (X.shape,))
    if layout is None:
        return X, None
    _check_layout(layout, X)
    if layout not in _BATCHED:
        return X, None
    if layout == "BHNN":  # one layer: a layer axis of length 1
        return None, Batch(stacked=X[:, None])
    return None, Batch(stacked=X.swapaxes(0, 1) if layout == "LBHNN" else X)


def kept_tokens(mask, batch, copy):
    """Per sequence the tokens attention_mask keeps (1 = real token, as
    Hugging Face passes it): a slice when they are consecutive (right or
    left padding: a view, no copy), else an index array; no mask keeps all."""
    if mask is None:
        return [slice(None)] * batch.size
    M = to_numpy(mask, "attention_mask", copy)
    n, m = batch.shape
    if M.shape != (batch.size, n):
        raise Error("attention_mask: shape %s; expected (%d, %d), [batch, n] for %d sequences "
                    "of %d tokens" % (M.shape, batch.size, n, batch.size, n))
    if n != m:
        raise Error("attention_mask: the matrices are %d x %d; a mask cuts square attention"
                    % (n, m))
    if not np.isin(M, (0, 1)).all():
        raise Error("attention_mask: values must be 0 or 1 (1 = a real token)")
    keep = []
    for b in range(batch.size):
        idx = np.flatnonzero(M[b])
        if idx.size == 0:
            raise Error("attention_mask: sequence %d has no real token" % b)
        consecutive = idx[-1] - idx[0] + 1 == idx.size
        keep.append(slice(int(idx[0]), int(idx[-1]) + 1) if consecutive else idx)
    return keep
