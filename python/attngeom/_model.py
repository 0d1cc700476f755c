"""attngeom.Model: a Hugging Face model folder, run by the library's engine
as `attngeom tokenize`, `attention`, `analyze`, `weights`, `residual`,
`rollout`, `similarity` and `heads` run it."""

import ctypes
import os
import threading

import numpy as np

from ._inputs import model_input, text_ids
from ._lib import (CONTRIB_FN, HEADS_FN, MATRIX_FN, Call, Error, Guard, Owned, c_long, c_size, guarded, lib,
                   new, text)
from ._records import metric_set, records, result, run_options
from . import _seq2seq


def _named(rows, inp):
    """rows with "input", the file inp was read from, as the CLI's records
    name an image or audio file (nothing for a text, ids or an array)."""
    for r in rows if inp.source is not None else ():
        r["input"] = inp.source
    return rows


def _set_temperatures(opt, name, temperature, temperatures):
    """ag_run_options_set_temperatures from analyze's temperatures=[...]
    (softmax only, not with temperature=; each record then carries its own
    T, ag_record_temperature): ("softmax", None) for the records."""
    if temperature is not None:
        raise Error("temperatures and temperature: give one of them")
    if name is not None and str(name) != "softmax":
        raise Error("temperatures applies to normalizer='softmax' only")
    T = [float(t) for t in temperatures]
    if len(set(T)) != len(T):
        raise Error("temperatures %r: a temperature is given twice" % (temperatures,))
    arr = (ctypes.c_double * max(len(T), 1))(*T)
    with Call() as c:  # the library checks each T and the count
        c.check(lib.ag_run_options_set_temperatures(opt, arr, len(T), c.err))
    return "softmax", None


def _set_normalizer(opt, name, temperature, temperatures=None):
    """ag_run_options_set_normalizer from analyze's keywords: (name, T) for
    the records (T None: each record's own, temperatures=), or None when
    none was given."""
    if temperatures is not None:
        return _set_temperatures(opt, name, temperature, temperatures)
    if name is None and temperature is None:
        return None
    name = "softmax" if name is None else str(name)
    kind, param = ctypes.c_int(), ctypes.c_double()
    with Call() as c:
        c.check(lib.ag_normalizer_parse(name.encode(), ctypes.byref(kind), ctypes.byref(param),
                                        c.err))
        T = 1.0 if temperature is None else float(temperature)
        if temperature is not None and kind.value != 0:  # AG_NORMALIZER_SOFTMAX
            raise Error("temperature applies to normalizer='softmax' only")
        if not (T > 0 and np.isfinite(T)):
            raise Error("temperature %r: expected a finite number > 0" % (temperature,))
        c.check(lib.ag_run_options_set_normalizer(opt, kind, T if kind.value == 0 else param.value,
                                                  c.err))
    return name, T


# Model(tower=...): ag_model_load_tower's input kind of each tower
_TOWERS = {None: None, "text": 0, "vision": 1}  # AG_INPUT_TOKENS, AG_INPUT_PIXELS


class Model:
    """A loaded model folder (config.json + safetensors, docs/engine.md) and,
    when the folder has one, its tokenizer (loaded on first use).

    label: the records' "model" (default: the folder's name, as the CLI's).

    A two-tower `clip` folder (CLIPModel) runs each input on the tower of
    its kind, as the CLI does (ag_model_load_tower): a text or tokens= on
    the text tower, image= or pixels= on the vision tower; `config` and
    weights() are the text tower's. tower="text" or "vision" loads that
    tower alone (config, weights() and every run are then its own).

    A t5 or bart folder (encoder–decoder) loads both stacks, as the CLI
    does: attention, hidden_states and analyze take the decoder's input as
    target= (a text) or target_tokens= (ids); config["decoder"] holds the
    decoder's dims (docs/python.md, "Encoder–decoder models"). A whisper
    folder with its decoder runs its encoder alone, and both stacks (the
    pair loaded at the first) when given target= or target_tokens=.

    close() (or leaving a `with` block) waits for the calls other threads
    are making on the model, then frees it; every method called afterwards
    raises attngeom.Error "... is closed" (docs/python.md, "Threads")."""

    def __init__(self, path, label=None, tower=None):
        self.path = os.fspath(path)
        if tower not in _TOWERS:
            raise Error("tower: expected None (by the input), 'text' or 'vision', not %r" % (tower,))
        # a t5 or bart folder: its two stacks, the encoder the model of a run
        self._pair = _seq2seq.Pair(self.path) if tower is None and _seq2seq.is_pair(self.path) \
            else None
        if self._pair:
            self._model = self._pair.encoder
        elif tower is None:
            self._model = new(lib.ag_model_load, lib.ag_model_free, self.path.encode())
        else:
            self._model = new(lib.ag_model_load_tower, lib.ag_model_free, self.path.encode(),
                              _TOWERS[tower])
            if not lib.ag_model_is_tower(self._model):
                self._model.close()
                raise Error("tower=%r: %s is not a two-tower clip folder (model_type clip)"
                            % (tower, self.path))
        # a clip folder's other tower, loaded when an input of its kind
        # comes (tower None: by the input, as the CLI chooses it)
        self._by_input = tower is None and bool(lib.ag_model_is_tower(self._model))
        self._towers = {}
        self._tower_lock = threading.Lock()  # one vision tower, however many threads ask
        self._tokenizer = None
        self._tok_lock = threading.Lock()
        self._whisper = None  # a whisper folder's pair, loaded at its first target
        self._whisper_lock = threading.Lock()  # one tokenizer, however many threads ask
        self._guard = Guard("model %s" % self.path)
        self.label = label if label is not None else \
            os.path.basename(os.path.realpath(self.path).rstrip("/"))
        self.config = {k: self._dim(k) for k in (
            "n_layer", "n_head", "n_kv_head", "d_model", "head_dim", "d_ff",
            "max_positions", "max_tokens", "vocab_size", "causal", "n_registers")}
        self.config["model_type"] = text(lib.ag_model_type(self._model))
        if self._pair:  # the decoder's own dims (the encoder's above)
            self.config["decoder"] = {k: self._dim(k, self._pair.decoder) for k in (
                "n_layer", "n_head", "n_kv_head", "d_model", "head_dim", "d_ff", "causal")}

    def close(self):
        """Release the model now (else when the object goes away), once the
        calls in flight in other threads have returned."""
        self._guard.close(self._free)

    def _free(self):
        self._model.close()
        for p in (self._pair, self._whisper):
            if p:
                p.close()
        for t in self._towers.values():
            t.close()
        if self._tokenizer:
            self._tokenizer.close()

    @guarded
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _dim(self, name, handle=None):
        v = c_long()
        with Call() as c:
            c.check(lib.ag_model_dim(handle or self._model, name.encode(), ctypes.byref(v), c.err))
        return v.value

    def _pair_for(self, target):
        """The encoder-decoder pair a run takes: a t5 or bart folder's; a
        whisper folder's with a target (target true), loaded at the first
        (ag_seq2seq_load; its encoder alone without one, as the CLI runs
        it); else None."""
        if self._pair or not target or self.config["model_type"] != "whisper":
            return self._pair
        with self._whisper_lock:
            if self._whisper is None:
                self._whisper = _seq2seq.Pair(self.path)
        return self._whisper

    def _engine(self, kind):
        """The model handle that takes input kind `kind` (_inputs.AG_INPUT_*):
        a two-tower clip folder's vision tower for pixels (ag_model_load_tower,
        loaded once), else the model itself (its kind checked by the run)."""
        if not self._by_input or kind == 0:  # AG_INPUT_TOKENS: the text tower, loaded
            return self._model
        with self._tower_lock:
            if kind not in self._towers:
                self._towers[kind] = new(lib.ag_model_load_tower, lib.ag_model_free,
                                         self.path.encode(), kind)
            return self._towers[kind]

    # ---- tokens -------------------------------------------------------------

    def _tok(self):
        with self._tok_lock:
            if self._tokenizer is None:
                self._tokenizer = new(lib.ag_tokenizer_load, lib.ag_tokenizer_free,
                                      self.path.encode())
        return self._tokenizer

    @guarded
    def tokenize(self, text_, offsets=False):
        """Token ids of text_ as the folder's Hugging Face tokenizer gives them
        (special tokens included): `attngeom tokenize MODEL --text S`. With
        offsets=True, (ids, spans): spans[i] = (start, end) of token i in
        text_ in code points (str indices), as Hugging Face's
        return_offsets_mapping ((0, 0) for added special tokens;
        `tokenize --offsets`); Error when a normalizer's alignment is not
        tracked on this text (docs/tokenizers.md, "Offsets")."""
        return self._encode_offsets(text_) if offsets else self._encode(text_)

    def _encode_offsets(self, text_):
        data = text_.encode("utf-8") if isinstance(text_, str) else bytes(text_)
        ids = ctypes.POINTER(ctypes.c_int32)()
        off = ctypes.POINTER(c_size)()
        n = c_size()
        with Call() as c:
            c.check(lib.ag_tokenizer_encode_offsets(self._tok(), data, len(data), 0, ctypes.byref(ids),
                                                    ctypes.byref(off), ctypes.byref(n), c.err), "text")
        try:
            return ([ids[i] for i in range(n.value)],
                    [(off[2 * i], off[2 * i + 1]) for i in range(n.value)])
        finally:
            lib.ag_free(ids)
            lib.ag_free(off)

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

    def _id_array(self, ids):
        """ids as a ctypes int32 array (Error for a negative or too large id)."""
        ids = [int(i) for i in ids]
        if any(i < 0 or i > 2**31 - 1 for i in ids):
            raise Error("ids: expected non-negative token ids below 2^31")
        return (ctypes.c_int32 * len(ids))(*ids), len(ids)

    @guarded
    def decode(self, ids, skip_special=False):
        """The text of token ids as the folder's Hugging Face tokenizer decodes
        them (its decoder; the Rust library's decode(ids, skip_special_tokens),
        without transformers' clean_up_tokenization_spaces; an id without a
        token is left out, as there): `attngeom decode MODEL --tokens ...`."""
        arr, n = self._id_array(ids)
        out = ctypes.c_void_p()
        with Call() as c:
            c.check(lib.ag_tokenizer_decode(self._tok(), arr, n, 1 if skip_special else 0,
                                            ctypes.byref(out), c.err), "ids")
        try:
            return ctypes.string_at(out.value).decode("utf-8")
        finally:
            lib.ag_free(out)

    @guarded
    def token_strings(self, ids):
        """Each token's text (ag_tokenizer_token_strings: the first token
        decoded alone, every other what it adds after its predecessor), the
        "strings" of `attngeom tokenize --format json`: " cat" for "Ġcat",
        "ing" for "##ing" after a word."""
        arr, n = self._id_array(ids)
        out = ctypes.c_void_p()
        with Call() as c:
            c.check(lib.ag_tokenizer_token_strings(self._tok(), arr, n, ctypes.byref(out), c.err),
                    "ids")
        try:
            ptrs = ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))
            return [ptrs[i].decode("utf-8") for i in range(n)]
        finally:
            lib.ag_free(out)

    def _ids(self, text_or_ids):
        """The token ids of a text (str) or the ids given, as int32."""
        if isinstance(text_or_ids, (str, bytes)):
            return text_ids(self, text_or_ids)
        ids = list(text_or_ids)
        arr = np.ascontiguousarray(ids, dtype=np.int64)
        if arr.ndim != 1 or (arr.size and (arr.min() < 0 or arr.max() > 2**31 - 1)):
            raise Error("ids: expected a sequence of non-negative token ids")
        return np.ascontiguousarray(arr, dtype=np.int32)

    # ---- the forward pass ----------------------------------------------------

    # Every run takes one input: text_or_ids (a str, or token ids), or one of
    # these keywords (_inputs.model_input; frames= with audio= or features=).
    _INPUT_DOC = """text_or_ids: a text or token ids; or tokens= (ids), image= (a
        PNG/JPEG file), pixels= (pixel_values: an array or .npy), audio= (a sound
        file), features= (input_features: an array or .npy), frames= (the first
        frames of audio= or features=): the CLI's --tokens, --image, --pixels,
        --audio, --features and --frames."""

    def _attention_run(self, inp, opt, attn, hidden, scores=None):
        """ag_run_attention_scores on inp: the selected heads of the selected
        layers into attn [L, H, n, n] in layer order, their pre-softmax
        scores into scores (same shape) when given, hidden states into
        hidden."""
        def taker(dst):
            done = [0]

            def take(layer, a, heads, n, user):
                size = heads * n * n * dst.itemsize
                ctypes.memmove(dst.ctypes.data + done[0], a, size)
                done[0] += size
                return 0
            return HEADS_FN(take) if dst is not None else HEADS_FN()

        fn, sfn = taker(attn), taker(scores)
        with Call() as c:
            c.check(lib.ag_run_attention_scores(
                inp.model, ctypes.byref(inp.struct), opt, None, fn, sfn, None, None,
                hidden.ctypes.data if hidden is not None else None, c.err), self.path)

    @guarded
    def attention(self, text_or_ids=None, *, tokens=None, image=None, audio=None, pixels=None,
                  features=None, frames=None, precision="f32", layers=None, heads=None,
                  jobs=None, scores=False, target=None, target_tokens=None):
        """Attention probabilities [L, H, n, n] (float64) of the selected layers
        and heads (all by default), as `attngeom attention -o OUT.npy` writes
        them. precision: "f32" (Hugging Face's float32 pass) or "f64".
        scores=True returns (attn, scores): also the pre-softmax scores of
        the same heads from the same pass, as `attention --scores` writes
        them (scale, Gemma-2's soft-capping; -inf where a key is masked), so
        that the softmax of each row of scores is that row of attn.
        A t5 or bart folder takes a target, target="TEXT" or
        target_tokens=IDS (the CLI's --target, --target-tokens), and returns
        Attention(encoder, decoder, cross): [L_enc, H, n_src, n_src],
        [L_dec, H, n_tgt, n_tgt] and [L_dec, H, n_tgt, n_src], the arrays of
        -o, --decoder and --cross (layers= and heads= select in each stack)."""
        with model_input(self, text_or_ids, tokens=tokens, image=image, audio=audio,
                         pixels=pixels, features=features, frames=frames) as inp:
            pair = _seq2seq.set_target(self, inp, target, target_tokens)
            opt = run_options(jobs=jobs, precision=precision, layers=layers, heads=heads)
            if pair:
                return _seq2seq.attention(self, pair, inp, opt, lambda h: self._selected(h, opt),
                                          scores)
            nl, nh = self._selected(inp.model, opt)
            attn = np.empty((nl, nh, inp.n, inp.n), dtype=np.float64)
            sc = np.empty_like(attn) if scores else None
            self._attention_run(inp, opt, attn, None, sc)
        return (attn, sc) if scores else attn

    def _selected(self, handle, opt):
        """(layers, heads) the selections of opt take from the model handle."""
        nl, nh = c_size(), c_size()
        with Call() as c:
            c.check(lib.ag_model_selected(handle, opt, ctypes.byref(nl), ctypes.byref(nh),
                                          c.err), self.path)
        return nl.value, nh.value

    @guarded
    def hidden_states(self, text_or_ids=None, *, tokens=None, image=None, audio=None,
                      pixels=None, features=None, frames=None, precision="f32", jobs=None,
                      target=None, target_tokens=None):
        """Hidden states [L + 1, n, d_model] in Hugging Face's
        output_hidden_states order, as `attngeom attention --hidden` writes them.
        A t5 or bart folder with its target (target=, target_tokens=):
        Hidden(encoder, decoder), [L_enc + 1, n_src, d] and
        [L_dec + 1, n_tgt, d], as --hidden and --decoder-hidden write them."""
        with model_input(self, text_or_ids, tokens=tokens, image=image, audio=audio,
                         pixels=pixels, features=features, frames=frames) as inp:
            pair = _seq2seq.set_target(self, inp, target, target_tokens)
            opt = run_options(jobs=jobs, precision=precision)
            if pair:
                return _seq2seq.hidden_states(self, pair, inp, opt)
            hidden = np.empty((self._dim("n_layer", inp.model) + 1, inp.n,
                               self._dim("d_model", inp.model)), dtype=np.float64)
            self._attention_run(inp, opt, None, hidden)
        return hidden

    attention.__doc__ += "\n\n        " + _INPUT_DOC
    hidden_states.__doc__ += "\n\n        " + _INPUT_DOC

    # ---- records ------------------------------------------------------------

    @guarded
    def analyze(self, text_or_ids=None, metrics=None, *, tokens=None, image=None, audio=None,
                pixels=None, features=None, frames=None, precision="f32", layers=None,
                heads=None, edge_threshold=None, epsilon=None, trials=None, seed=None,
                jobs=None, text=None, to_pandas=False, normalizer=None, temperature=None,
                temperatures=None, target=None, target_tokens=None):
        """`attngeom analyze MODEL --text S` (or --image F, --audio F, ...): one
        record per selected (layer, head) of the metrics (default spectrum,
        attention, geometry; also curvature, stability, values and lens) of its
        attention.
        text: the records' "text" (a corpus line index; default none).
        normalizer ("softmax", "sparsemax", "entmax15", "entmax:ALPHA",
        "linear") and temperature (softmax(S/T)): the heads measured under
        that normaliser of the same pass's scores, as `analyze --normalizer N
        --temperature T`; the records then carry "normalizer" and
        "temperature". temperatures=[0.25, 0.5, 1, 2, 4] (softmax only, at
        most 64): the records at each T in turn, as `--temperatures`.
        A t5 or bart folder takes a target, target="TEXT" or
        target_tokens=IDS (--target, --target-tokens): one record per
        (stack, layer, head), "stack" first ("encoder", "decoder", "cross";
        cross records rows = target, cols = source tokens), the default
        metrics with family cross too, as the CLI's."""
        with model_input(self, text_or_ids, tokens=tokens, image=image, audio=audio,
                         pixels=pixels, features=features, frames=frames) as inp:
            pair = _seq2seq.set_target(self, inp, target, target_tokens)
            # a pair's cross-attention is rectangular: the default takes family M
            sel = metric_set("analyze", metrics, (1, 2) if pair else None)
            opt = run_options(jobs=jobs, precision=precision, layers=layers, heads=heads,
                              edge_threshold=edge_threshold, epsilon=epsilon, trials=trials,
                              seed=seed)
            lens = _set_normalizer(opt, normalizer, temperature, temperatures)
            line = -1 if text is None else int(text)
            out = ctypes.c_void_p()
            with Call() as c:
                if inp.struct.ids and not pair and not inp.struct.target:
                    # ag_model_analyze: ag_run_analyze on token ids
                    status = lib.ag_model_analyze(inp.model, inp.struct.ids, inp.n, line, sel,
                                                  opt, ctypes.byref(out), c.err)
                else:
                    lib.ag_run_options_set_metrics(opt, sel)
                    inp.struct.text = line
                    status = lib.ag_run_analyze(inp.model, ctypes.byref(inp.struct), opt, None,
                                                ctypes.byref(out), c.err)
                c.check(status, self.path)
        recs = Owned(out.value, lib.ag_record_list_free)
        rows = _named(records(recs, sel, self.label), inp)
        for i, r in enumerate(rows if lens else ()):
            r["normalizer"] = lens[0]
            r["temperature"] = lens[1] if lens[1] is not None else \
                lib.ag_record_temperature(lib.ag_record_list_get(recs, i))
        return result(rows, to_pandas)

    analyze.__doc__ += "\n\n        " + _INPUT_DOC

    def stability(self, text_or_ids, metrics="stability", **options):
        """Family E (docs/stability.md) of every head: analyze with
        metrics="stability" (or some of its keys); epsilon, trials and seed
        as `attngeom analyze --metrics stability`."""
        return self.analyze(text_or_ids, metrics, **options)

    @guarded
    def weights(self, metrics=None, *, layers=None, heads=None, jobs=None, to_pandas=False):
        """`attngeom weights MODEL`: family D (QK and OV circuits) of every
        selected head, from the weights alone. An encoder-decoder folder (a
        whisper folder with its decoder too): the encoder's heads, then per
        decoder layer its self-attention's and its cross-attention's, "stack"
        first, as `attngeom weights`'s."""
        sel = metric_set("weights", metrics)
        opt = run_options(jobs=jobs, layers=layers, heads=heads)
        out = ctypes.c_void_p()
        # whisper: its decoder is read here, as the CLI's weights reads it
        pair = _seq2seq.Pair(self.path) if not self._pair and _seq2seq.has_decoder(self.path) \
            else None
        try:
            with Call() as c:
                c.check(lib.ag_model_weight_records(pair.encoder if pair else self._model, sel,
                                                    opt, ctypes.byref(out), c.err), self.path)
        finally:
            if pair:
                pair.close()
        recs = Owned(out.value, lib.ag_record_list_free)
        return result(records(recs, sel, self.label), to_pandas)

    # ---- per-layer and across-layer runs (attngeom/run.h) ---------------------

    def _layer_run(self, command, inputs, metrics=None, **options):
        """The input (a ModelInput: close it), metric selection and options
        of a per-layer run (residual, rollout, similarity)."""
        sel = metric_set(command, metrics) if command != "similarity" else None
        opt = run_options(**options)
        if sel is not None:
            lib.ag_run_options_set_metrics(opt, sel)
        return model_input(self, **inputs), sel, opt

    def _run_records(self, inp, sel, label, to_pandas, run):
        """The records of run(out, err), a per-layer run of the library on
        inp (closed after it): its status checked, rows named and labelled."""
        out = ctypes.c_void_p()
        with inp, Call() as c:
            status = run(ctypes.byref(out), c.err)
            recs = Owned(out.value, lib.ag_record_list_free)
            c.check(status, self.path)
        rows = records(recs, sel, self.label if label is None else label)
        return result(_named(rows, inp), to_pandas)

    @guarded
    def residual(self, text=None, metrics=None, *, tokens=None, image=None, audio=None,
                 pixels=None, features=None, frames=None, layers=None, precision=None,
                 massive_abs=None, massive_ratio=None, jobs=None, label=None,
                 to_pandas=False, target=None, target_tokens=None):
        """`attngeom residual MODEL --text S`: one record per selected hidden
        state l = 0 ... n_layer (layers= ranges over them; 0 the embeddings)
        of families spectrum and geometry of the [n, d_model] matrix
        (head -1), and with metrics="activations" its massive activations
        (act_massive counts |h| >= massive_abs and >= massive_ratio x the
        median |h|; defaults 100 and 1000, as --massive-abs and
        --massive-ratio). tokens= instead of text: the token ids. An
        encoder-decoder folder takes target= or target_tokens= (as analyze):
        the encoder's hidden states, then the decoder's, "stack" first, as
        `residual --target-tokens`'s."""
        inp, sel, opt = self._layer_run(
            "residual", dict(text=text, tokens=tokens, image=image, audio=audio, pixels=pixels,
                             features=features, frames=frames),
            metrics, jobs=jobs, precision=precision, layers=layers, massive_abs=massive_abs,
            massive_ratio=massive_ratio)
        try:
            _seq2seq.set_target(self, inp, target, target_tokens)
        except BaseException:
            inp.close()
            raise
        return self._run_records(inp, sel, label, to_pandas, lambda out, err: lib.ag_run_residual(
            inp.model, ctypes.byref(inp.struct), opt, None, out, err))

    @guarded
    def rollout(self, text=None, metrics=None, *, tokens=None, image=None, audio=None,
                pixels=None, features=None, frames=None, layers=None, precision=None,
                edge_threshold=None, jobs=None, label=None, to_pandas=False, arrays=False,
                target=None, target_tokens=None):
        """`attngeom rollout MODEL --text S`: one record per selected layer l
        of the metrics (default spectrum, attention, geometry) of the
        attention rollout R_l (head -1). arrays=True: (records, R) with R the
        float64 [layers, n, n] array of the selected R_l, what `rollout -o`
        writes. An encoder-decoder folder takes target= or target_tokens=
        (as analyze): the records of the encoder's, the decoder's and the
        encoder-through-cross rollouts, "stack" first, as `rollout
        --target-tokens`'s (no arrays)."""
        inp, sel, opt = self._layer_run(
            "rollout", dict(text=text, tokens=tokens, image=image, audio=audio, pixels=pixels,
                            features=features, frames=frames),
            metrics, jobs=jobs, precision=precision, layers=layers,
            edge_threshold=edge_threshold)
        try:
            _seq2seq.set_target(self, inp, target, target_tokens)
        except BaseException:
            inp.close()
            raise
        kept = []

        def keep(layer, M, n, user, err):
            kept.append(np.ctypeslib.as_array(M, shape=(n, n)).copy())
            return 0

        fn = MATRIX_FN(keep) if arrays else MATRIX_FN()  # NULL: no arrays
        rows = self._run_records(inp, sel, label, to_pandas, lambda out, err: lib.ag_run_rollout(
            inp.model, ctypes.byref(inp.struct), opt, None, fn, None, out, err))
        if not arrays:
            return rows
        return rows, np.array(kept, dtype=np.float64).reshape(len(kept), inp.n, inp.n)

    @guarded
    def contributions(self, text=None, metrics=None, *, method="alti", rollout=False, tokens=None,
                      image=None, audio=None, pixels=None, features=None, frames=None,
                      layers=None, heads=None, precision=None, edge_threshold=None,
                      flow_max_tokens=None, jobs=None, label=None, to_pandas=False,
                      arrays=False):
        """`attngeom contributions MODEL --text S --method M [--rollout]`: one
        record per selected layer of the metrics (default spectrum,
        attention, geometry, context_mixing) of its contribution matrix
        (head -1): "alti" Ferrando et al.'s ALTI C_l, "norms-res" Kobayashi
        et al. 2021's norms, "flow" Abnar & Zuidema's attention flow F_l
        (at most flow_max_tokens tokens, default 64), or per selected head
        (heads=, records (layer, head)) "norms", Kobayashi et al. 2020's
        N^h = A^h |f_h(x_j)|; rollout=True composes ALTI, R_l = C_l R_(l-1)
        (docs/metrics.md, "Contributions"). arrays=True: (records, M, mixing)
        with M the float64 [layers, n, n] matrices (`-o`; norms [layers,
        heads, n, n]) and mixing [layers, n] (`--mixing`: 1 - C_ii with alti,
        Kobayashi et al.'s ratio with norms-res; None with norms and flow)."""
        methods = {"norms-res": 0, "alti": 1, "norms": 2, "flow": 3}
        if method not in methods:
            raise Error("method: takes 'norms', 'norms-res', 'alti' or 'flow', not %r"
                        % (method,))
        if heads is not None and method != "norms":
            raise Error("heads: selects the heads of method='norms'; the other methods "
                        "measure each layer as a whole (head -1)")
        if flow_max_tokens is not None and method != "flow":
            raise Error("flow_max_tokens: limits method='flow' only")
        inp, sel, opt = self._layer_run(
            "contributions", dict(text=text, tokens=tokens, image=image, audio=audio,
                                  pixels=pixels, features=features, frames=frames),
            metrics, jobs=jobs, precision=precision, layers=layers, heads=heads,
            edge_threshold=edge_threshold, flow_max_tokens=flow_max_tokens)
        kept, mix = [], []

        def keep(view, user, err):
            v = view.contents
            M = v.R if v.R else v.M
            shape = (v.heads, v.n, v.n) if method == "norms" else (v.n, v.n)
            kept.append(np.ctypeslib.as_array(M, shape=shape).copy())
            if v.mixing:
                mix.append(np.ctypeslib.as_array(v.mixing, shape=(v.n,)).copy())
            return 0

        fn = CONTRIB_FN(keep) if arrays else CONTRIB_FN()  # NULL: no arrays
        rows = self._run_records(inp, sel, label, to_pandas, lambda out, err: (
            lib.ag_run_contributions(inp.model, ctypes.byref(inp.struct), opt, None,
                                     methods[method], 1 if rollout else 0, fn, None, out, err)))
        if not arrays:
            return rows
        n = inp.n
        per = kept[0].shape if kept else ((0, n, n) if method == "norms" else (n, n))
        M = np.array(kept, dtype=np.float64).reshape((len(kept),) + per)
        if method in ("norms", "flow"):
            return rows, M, None
        return rows, M, np.array(mix, dtype=np.float64).reshape(len(mix), n)

    @guarded
    def similarity(self, text=None, *, tokens=None, image=None, audio=None, pixels=None,
                   features=None, frames=None, layers=None, heads=None, precision=None,
                   jobs=None, label=None, to_pandas=False, target=None, target_tokens=None):
        """`attngeom similarity MODEL --text S`: (records, S). S is the
        float64 [K, K] Jensen-Shannon distance between the attention of the
        K selected heads (layer-major; symmetric, zero diagonal), what
        `similarity -o S.npy` writes; the records are its pairs a < b:
        layer_a, head_a, layer_b, head_b, js_distance, model. An
        encoder-decoder folder takes target= or target_tokens= (as analyze):
        the heads are the encoder's, the decoder's, then the cross heads, S
        is NaN across stacks, and the records (those of `similarity
        --target-tokens`) are the pairs within a stack, "stack" first."""
        inp, _, opt = self._layer_run(
            "similarity", dict(text=text, tokens=tokens, image=image, audio=audio, pixels=pixels,
                               features=features, frames=frames),
            jobs=jobs, precision=precision, layers=layers, heads=heads)
        pairs, count = ctypes.POINTER(ctypes.c_int)(), c_size()
        with Call() as c:
            try:
                _seq2seq.set_target(self, inp, target, target_tokens)
            except BaseException:
                inp.close()
                raise
            status = lib.ag_run_similarity_stack_heads(inp.model, opt, ctypes.byref(pairs),
                                                       ctypes.byref(count), c.err)
            if status:
                inp.close()
            c.check(status, self.path)
        try:
            K = count.value
            heads_ = [(pairs[3 * k], pairs[3 * k + 1], pairs[3 * k + 2]) for k in range(K)]
        finally:
            lib.ag_free(pairs)
        S = np.zeros((K, K), dtype=np.float64)
        with inp, Call() as c:
            c.check(lib.ag_run_similarity(inp.model, ctypes.byref(inp.struct), opt, None,
                                          S.ctypes.data, c.err), self.path)
        model = self.label if label is None else label
        stack = [lib.ag_stack_name(h[0]).decode() if h[0] else None for h in heads_]
        rows = [dict(([("stack", stack[a])] if stack[a] else []) +
                     [("layer_a", heads_[a][1]), ("head_a", heads_[a][2]),
                      ("layer_b", heads_[b][1]), ("head_b", heads_[b][2]),
                      ("js_distance", float(S[a, b])), ("model", model)])
                for a in range(K) for b in range(a + 1, K) if heads_[b][0] == heads_[a][0]]
        return result(rows, to_pandas), S

    # ---- probes (attngeom/run.h, "the induction probe") ----------------------

    @guarded
    def probe_tokens(self, length, repeats=2, seed=1):
        """(ids, start): the token ids `heads(probe="induction", ...)` runs the
        model on (settings.probe.ids of `attngeom heads --format json`): a
        block of `length` tokens drawn uniformly with replacement from the
        non-special vocabulary (GSL's MT19937 set to seed), repeated
        `repeats` times and framed as the tokenizer frames a text; start is
        the position of the first block."""
        ids = ctypes.POINTER(ctypes.c_int32)()
        n, start = c_size(), c_size()
        with Call() as c:
            c.check(lib.ag_run_probe_tokens(self._model, self._tok(), _count(length, "length"),
                                            _count(repeats, "repeats"), _count(seed, "seed"),
                                            ctypes.byref(ids), ctypes.byref(n),
                                            ctypes.byref(start), c.err), self.path)
        try:
            return [ids[i] for i in range(n.value)], start.value
        finally:
            lib.ag_free(ids)

    @guarded
    def heads(self, probe="induction", *, length, repeats=2, seed=1, layers=None, heads=None,
              precision=None, jobs=None, label=None, to_pandas=False):
        """`attngeom heads MODEL --probe induction --length T`: one record per
        selected (layer, head) of induction_score (the mean over the rows i of
        blocks 2..R of A[i, i-T+1]) and induction_baseline (its value for
        uniform attention) on probe_tokens(length, repeats, seed), with
        length, repeats, seed and model, as the CLI's records."""
        if probe != "induction":
            raise Error("probe takes 'induction', not %r" % (probe,))
        ids, start = self.probe_tokens(length, repeats, seed)
        opt = run_options(jobs=jobs, precision=precision, layers=layers, heads=heads)
        arr = (ctypes.c_int32 * len(ids))(*ids)
        sel = metric_set("analyze", "induction_score,induction_baseline")
        out = ctypes.c_void_p()
        with Call() as c:
            c.check(lib.ag_run_probe_induction(self._model, arr, len(ids), start, length,
                                               repeats, opt, None, ctypes.byref(out), c.err),
                    self.path)
        recs = Owned(out.value, lib.ag_record_list_free)
        rows = records(recs, sel)
        model = self.label if label is None else label
        for r in rows:
            r.update(length=length, repeats=repeats, seed=seed, model=model)
        return result(rows, to_pandas)


def _count(value, name):
    """A whole number >= 0 for a keyword, else attngeom.Error naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Error("%s: expected a whole number >= 0, not %r" % (name, value))
    return value
