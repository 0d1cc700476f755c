"""Inputs as Python hands them over. For matrix_metrics, attention as
PyTorch and Hugging Face give it: torch tensors, a tuple of per-layer
[batch, H, n, n] tensors (outputs.attentions), stacked 5-D arrays with a
layout, and the padding mask (attention_mask) that cuts each sequence to
its real tokens. For a Model's runs (model_input), the one input: a text,
token ids, or an image, sound, pixels or features, read by the library.

torch stays optional: it is never imported here. A tensor can only exist
once torch is imported, so sys.modules tells whether an object may be one."""

import ctypes
import operator
import os
import sys

import numpy as np

from ._lib import Call, Error, c_size, lib, text as text_of

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


# ---- what a Model run is fed (attngeom/run.h, "inputs") -----------------------

# The structs of run.h's inputs section, as C lays them out (core.h's ABI
# rule: ag_run_input is kind 3, its leading size telling the library which
# fields this header knew; the others are fixed, kind 4).
class _ImageConfig(ctypes.Structure):
    _fields_ = [("do_resize", ctypes.c_int), ("height", c_size), ("width", c_size),
                ("resample", ctypes.c_int), ("do_rescale", ctypes.c_int),
                ("rescale_factor", ctypes.c_double), ("do_normalize", ctypes.c_int),
                ("image_mean", ctypes.c_double * 3), ("image_std", ctypes.c_double * 3),
                ("do_convert_rgb", ctypes.c_int)]


class ImageCrop(ctypes.Structure):
    """ag_image_crop (attngeom/image.h, fixed): BitImageProcessor's and
    CLIPImageProcessor's shortest-edge resize and centre crop."""
    _fields_ = [("shortest_edge", c_size), ("do_center_crop", ctypes.c_int),
                ("crop_height", c_size), ("crop_width", c_size)]


class _AudioConfig(ctypes.Structure):
    _fields_ = [("n_mels", ctypes.c_int), ("n_fft", ctypes.c_int), ("hop_length", ctypes.c_int),
                ("sampling_rate", ctypes.c_int), ("chunk_length", ctypes.c_int),
                ("n_samples", c_size), ("nb_max_frames", c_size),
                ("padding_value", ctypes.c_float)]


class MediaConfig(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("image", _ImageConfig), ("audio", _AudioConfig)]


class Tensor(ctypes.Structure):
    _fields_ = [("values", ctypes.POINTER(ctypes.c_double)), ("ndim", ctypes.c_int),
                ("shape", c_size * 3), ("n", c_size)]


class _Array(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("shape", c_size * 8),
                ("data", ctypes.POINTER(ctypes.c_double))]


class RunInput(ctypes.Structure):
    _fields_ = [("size", c_size), ("ids", ctypes.POINTER(ctypes.c_int32)), ("n", c_size),
                ("values", ctypes.POINTER(ctypes.c_double)), ("ndim", ctypes.c_int),
                ("shape", ctypes.POINTER(c_size)), ("text", ctypes.c_long),
                # appended: an encoder–decoder model's decoder input ids
                ("target", ctypes.POINTER(ctypes.c_int32)), ("n_target", c_size)]


AG_INPUT_TOKENS, AG_INPUT_PIXELS, AG_INPUT_FEATURES = range(3)  # attngeom/model.h
AG_RUN_IMAGE, AG_RUN_PIXELS, AG_RUN_AUDIO, AG_RUN_FEATURES = range(4)  # attngeom/run.h
_MEDIA = {"image": AG_RUN_IMAGE, "pixels": AG_RUN_PIXELS, "audio": AG_RUN_AUDIO,
          "features": AG_RUN_FEATURES}
_TAKES = {AG_INPUT_TOKENS: "token ids (text or tokens=)",
          AG_INPUT_PIXELS: "images (image= or pixels=)",
          AG_INPUT_FEATURES: "audio (audio= or features=)"}


class ModelInput:
    """One input of a Model's run: `.struct` the ag_run_input to pass by
    reference, `.model` the model handle to run it on, `.n` its positions, `.source` the file it was read from (the
    records' "input"; None for a text, ids or an array); it owns the
    buffers the struct points to (the ids, or the tensor the library read:
    freed by close())."""

    def __init__(self, model, ids=None, tensor=None, source=None):
        self.model = model  # the ag_model handle the run takes (a clip folder's tower)
        self._ids, self._tensor, self.source = ids, tensor, source
        self._target = None  # the decoder's ids the struct points to (set_target)
        self.struct = RunInput(size=ctypes.sizeof(RunInput), text=-1)
        if ids is not None:
            self.struct.ids = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            self.struct.n = self.n = ids.size
        else:
            self.struct.values, self.struct.ndim = tensor.values, tensor.ndim
            self.struct.shape = ctypes.cast(tensor.shape, ctypes.POINTER(c_size))
            self.n = tensor.n

    def set_target(self, ids):
        """The decoder's input ids (int32, owned here) of an encoder–decoder
        run (_seq2seq.set_target)."""
        self._target = ids
        self.struct.target = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        self.struct.n_target = ids.size

    def close(self):
        if self._tensor is not None:
            lib.ag_run_tensor_free(ctypes.byref(self._tensor))
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def text_ids(model, text):
    """The token ids (int32) of a text for model's tokenizer, special tokens
    included (ag_run_tokenize, as --text is tokenized); Error "text: the
    text gives no tokens"."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    ids = ctypes.POINTER(ctypes.c_int32)()
    n = c_size()
    with Call() as c:
        c.check(lib.ag_run_tokenize(model._tok(), data, len(data), 0, ctypes.byref(ids),
                                    ctypes.byref(n), None, c.err), "text")
    try:
        return np.array(ids[:n.value], dtype=np.int32)
    finally:
        lib.ag_free(ids)


def _frames_value(frames):
    if frames is None:
        return 0
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise Error("frames=: expected a number of frames >= 1, not %r" % (frames,))
    return frames


def _tensor(model, handle, name, value, frames):
    """The library's tensor for input `name` (image, audio: a file;
    pixels, features: a .npy file or an array) for the model `handle`,
    preprocessed by the folder's processor as the CLI does (ag_run_media_*
    _crop: also BitImageProcessor's and CLIPImageProcessor's resize and
    crop)."""
    cfg, crop, t = MediaConfig(), ImageCrop(), Tensor()
    kind = _MEDIA[name]
    with Call() as c:
        c.check(lib.ag_run_media_config_load_crop(handle, model.path.encode(), ctypes.byref(cfg),
                                                  ctypes.byref(crop), c.err), model.path)
        if isinstance(value, (str, bytes, os.PathLike)) or name in ("image", "audio"):
            path = os.fsencode(value)
            c.check(lib.ag_run_media_read_crop(handle, ctypes.byref(cfg), ctypes.byref(crop), kind,
                                               path, frames, None, ctypes.byref(t), c.err), name + "=")
            return t
        X = np.ascontiguousarray(to_numpy(value, name + "=", False), dtype=np.float64)
        if X.ndim > 8:
            raise Error("%s=: a %d-dimensional array" % (name, X.ndim))
        a = _Array(ndim=X.ndim, shape=(c_size * 8)(*X.shape),
                   data=X.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        c.check(lib.ag_run_media_array(handle, ctypes.byref(cfg), kind, ctypes.byref(a),
                                       (name + "=").encode(), frames, ctypes.byref(t), c.err))
    return t


def model_input(model, text=None, *, tokens=None, image=None, audio=None, pixels=None,
                features=None, frames=None):
    """The one input of a Model run (a ModelInput; close it, or use it in a
    `with`): text (a str, or a list of token ids as before), tokens= (ids),
    or for a ViT image= (PNG/JPEG file) or pixels= (pixel_values (3, H, W)
    or (1, 3, H, W): an array or .npy; a two-tower clip folder runs these
    on its vision tower and a text on its text tower), for a Whisper
    encoder audio= (a
    sound file) or features= (input_features (n_mels, T): an array or .npy),
    with frames= the first frames kept. Read, preprocessed and checked by
    the library as `attngeom analyze MODEL --image F` etc. read them."""
    inputs = {"text": text, "tokens": tokens, "image": image, "audio": audio, "pixels": pixels,
              "features": features}
    given = [k for k, v in inputs.items() if v is not None]
    if len(given) != 1:
        raise Error("give one input: text, tokens=, image=, audio=, pixels= or features=%s"
                    % (" (got %s)" % ", ".join(k + "=" for k in given) if given else ""))
    name = given[0]
    wants = AG_INPUT_TOKENS if name in ("text", "tokens") else \
        AG_INPUT_PIXELS if name in ("image", "pixels") else AG_INPUT_FEATURES
    handle = model._engine(wants)  # a clip folder: the tower of this input kind
    kind = lib.ag_model_input_kind(handle)
    if kind != wants:
        raise Error("%s: %s is a %s model: it takes %s"
                    % (name if name == "text" else name + "=", model.path,
                       text_of(lib.ag_model_type(handle)), _TAKES[kind]))
    if frames is not None and wants != AG_INPUT_FEATURES:
        raise Error("frames=: applies to audio= or features=, not %s"
                    % (name if name == "text" else name + "="))
    if wants == AG_INPUT_TOKENS:
        return ModelInput(handle, ids=model._ids(inputs[name]))
    value = inputs[name]
    source = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    return ModelInput(handle, tensor=_tensor(model, handle, name, value, _frames_value(frames)),
                      source=source)
