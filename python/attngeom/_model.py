"""attngeom.Model: a Hugging Face model folder, run by the library's engine
as `attngeom tokenize`, `attention`, `analyze` and `weights` run it."""

import ctypes
import os
import threading

import numpy as np

from ._lib import Call, Error, Guard, Owned, c_long, c_size, guarded, lib, new, text
from ._records import metric_set, records, result, run_options


class Model:
    """A loaded model folder (config.json + safetensors, docs/engine.md) and,
    when the folder has one, its tokenizer (loaded on first use).

    label: the records' "model" (default: the folder's name, as the CLI's).

    close() (or leaving a `with` block) waits for the calls other threads
    are making on the model, then frees it; every method called afterwards
    raises attngeom.Error "... is closed" (docs/python.md, "Threads")."""

    def __init__(self, path, label=None):
        self.path = os.fspath(path)
        self._model = new(lib.ag_model_load, lib.ag_model_free, self.path.encode())
        self._tokenizer = None
        self._tok_lock = threading.Lock()  # one tokenizer, however many threads ask
        self._guard = Guard("model %s" % self.path)
        self.label = label if label is not None else \
            os.path.basename(os.path.realpath(self.path).rstrip("/"))
        self.config = {k: self._dim(k) for k in (
            "n_layer", "n_head", "n_kv_head", "d_model", "head_dim", "d_ff",
            "max_positions", "max_tokens", "vocab_size", "causal")}
        self.config["model_type"] = text(lib.ag_model_type(self._model))

    def close(self):
        """Release the model now (else when the object goes away), once the
        calls in flight in other threads have returned."""
        self._guard.close(self._free)

    def _free(self):
        self._model.close()
        if self._tokenizer:
            self._tokenizer.close()

    @guarded
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _dim(self, name):
        v = c_long()
        with Call() as c:
            c.check(lib.ag_model_dim(self._model, name.encode(), ctypes.byref(v), c.err))
        return v.value

    # ---- tokens -------------------------------------------------------------

    def _tok(self):
        with self._tok_lock:
            if self._tokenizer is None:
                self._tokenizer = new(lib.ag_tokenizer_load, lib.ag_tokenizer_free,
                                      self.path.encode())
        return self._tokenizer

    @guarded
    def tokenize(self, text_):
        """Token ids of text_ as the folder's Hugging Face tokenizer gives them
        (special tokens included): `attngeom tokenize MODEL --text S`."""
        return self._encode(text_)

    def _encode(self, text_):
        data = text_.encode("utf-8") if isinstance(text_, str) else bytes(text_)
        ids = ctypes.POINTER(ctypes.c_int32)()
        n = c_size()
        with Call() as c:
            c.check(lib.ag_tokenizer_encode(self._tok(), data, len(data), ctypes.byref(ids),
                                            ctypes.byref(n), c.err), "text")
        try:
            return [ids[i] for i in range(n.value)]
        finally:
            lib.ag_free(ids)

    @guarded
    def tokens(self, ids):
        """The vocabulary strings of ids (None for an unknown id)."""
        tok = self._tok()
        return [text(lib.ag_tokenizer_token(tok, int(i))) for i in ids]

    def _ids(self, text_or_ids):
        """The token ids of a text (str) or the ids given, as int32."""
        if isinstance(text_or_ids, (str, bytes)):
            ids = self._encode(text_or_ids)
            if not ids:
                raise Error("text: the text gives no tokens")
        else:
            ids = list(text_or_ids)
        arr = np.ascontiguousarray(ids, dtype=np.int64)
        if arr.ndim != 1 or (arr.size and (arr.min() < 0 or arr.max() > 2**31 - 1)):
            raise Error("ids: expected a sequence of non-negative token ids")
        return np.ascontiguousarray(arr, dtype=np.int32)

    # ---- the forward pass ----------------------------------------------------

    def _forward(self, ids, opt, attn, hidden):
        p32 = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        with Call() as c:
            c.check(lib.ag_model_attention_into(
                self._model, p32, ids.size, opt,
                attn.ctypes.data if attn is not None else None,
                hidden.ctypes.data if hidden is not None else None, c.err), self.path)

    @guarded
    def attention(self, text_or_ids, *, precision="f32", layers=None, heads=None, jobs=None):
        """Attention probabilities [L, H, n, n] (float64) of the selected layers
        and heads (all by default), as `attngeom attention -o OUT.npy` writes
        them. precision: "f32" (Hugging Face's float32 pass) or "f64"."""
        ids = self._ids(text_or_ids)
        opt = run_options(jobs=jobs, precision=precision, layers=layers, heads=heads)
        nl, nh = c_size(), c_size()
        with Call() as c:
            c.check(lib.ag_model_selected(self._model, opt, ctypes.byref(nl), ctypes.byref(nh),
                                          c.err), self.path)
        attn = np.empty((nl.value, nh.value, ids.size, ids.size), dtype=np.float64)
        self._forward(ids, opt, attn, None)
        return attn

    @guarded
    def hidden_states(self, text_or_ids, *, precision="f32", jobs=None):
        """Hidden states [L + 1, n, d_model] in Hugging Face's
        output_hidden_states order, as `attngeom attention --hidden` writes them."""
        ids = self._ids(text_or_ids)
        opt = run_options(jobs=jobs, precision=precision)
        hidden = np.empty((self.config["n_layer"] + 1, ids.size, self.config["d_model"]),
                          dtype=np.float64)
        self._forward(ids, opt, None, hidden)
        return hidden

    # ---- records ------------------------------------------------------------

    @guarded
    def analyze(self, text_or_ids, metrics=None, *, precision="f32", layers=None, heads=None,
                edge_threshold=None, epsilon=None, trials=None, seed=None, jobs=None,
                text=None, to_pandas=False):
        """`attngeom analyze MODEL --text S`: one record per selected (layer,
        head) of the metrics (default spectrum, attention, geometry; also
        curvature and stability) of its attention. text: the records' "text"
        (a corpus line index; default none)."""
        ids = self._ids(text_or_ids)
        sel = metric_set("analyze", metrics)
        opt = run_options(jobs=jobs, precision=precision, layers=layers, heads=heads,
                          edge_threshold=edge_threshold, epsilon=epsilon, trials=trials,
                          seed=seed)
        out = ctypes.c_void_p()
        p32 = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        with Call() as c:
            c.check(lib.ag_model_analyze(self._model, p32, ids.size,
                                         -1 if text is None else int(text), sel, opt,
                                         ctypes.byref(out), c.err), self.path)
        recs = Owned(out.value, lib.ag_record_list_free)
        return result(records(recs, sel, self.label), to_pandas)

    def stability(self, text_or_ids, metrics="stability", **options):
        """Family E (docs/stability.md) of every head: analyze with
        metrics="stability" (or some of its keys); epsilon, trials and seed
        as `attngeom analyze --metrics stability`."""
        return self.analyze(text_or_ids, metrics, **options)

    @guarded
    def weights(self, metrics=None, *, layers=None, heads=None, jobs=None, to_pandas=False):
        """`attngeom weights MODEL`: family D (QK and OV circuits) of every
        selected head, from the weights alone."""
        sel = metric_set("weights", metrics)
        opt = run_options(jobs=jobs, layers=layers, heads=heads)
        out = ctypes.c_void_p()
        with Call() as c:
            c.check(lib.ag_model_weight_records(self._model, sel, opt, ctypes.byref(out), c.err),
                    self.path)
        recs = Owned(out.value, lib.ag_record_list_free)
        return result(records(recs, sel, self.label), to_pandas)
