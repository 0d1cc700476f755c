"""Encoder–decoder folders (t5, bart; issue 30) for attngeom.Model: the pair
loaded as the CLI loads it (ag_seq2seq_load, the encoder the model of every
run: ag_model_seq2seq reaches the pair), the target (the decoder's input
ids: target= tokenized and shifted right by ag_run_target_ids, as --target;
target_tokens= verbatim, as --target-tokens) and the three attentions and
two stacks' hidden states of one pass (ag_run_attention_seq2seq, as
`attngeom attention -o --decoder --cross --hidden --decoder-hidden`)."""

import collections
import ctypes

import numpy as np

from ._lib import Call, Error, Owned, P, PP, c_double, c_int, c_size, c_str, declare, lib, new

# ag_run_stack_heads_fn (attngeom/run.h): one selected layer of one stack,
# its selected heads (heads, n, n_kv)
STACK_HEADS_FN = ctypes.CFUNCTYPE(c_int, c_int, c_int, ctypes.POINTER(c_double), c_size, c_size,
                                  c_size, P)
_IDS = ctypes.POINTER(ctypes.c_int32)
declare({
    "ag_model_dir_is_seq2seq": (c_int, [c_str]),
    "ag_model_dir_has_decoder": (c_int, [c_str]),
    "ag_seq2seq_load": (c_int, [c_str, PP, P]),
    "ag_seq2seq_free": (None, [P]),
    "ag_seq2seq_stack": (P, [P, c_int]),
    "ag_model_check_ids": (c_int, [P, _IDS, c_size, P]),
    "ag_run_target_ids": (c_int, [P, P, c_str, c_size, ctypes.POINTER(_IDS),
                                  ctypes.POINTER(c_size), P]),
    "ag_run_attention_seq2seq": (c_int, [P, P, P, P, STACK_HEADS_FN, P, P, P, P]),
    "ag_run_attention_seq2seq_scores": (c_int, [P, P, P, P, STACK_HEADS_FN, STACK_HEADS_FN, P,
                                                P, P, P]),
    "ag_record_stack": (c_int, [P]),
    "ag_stack_name": (c_str, [c_int]),
})

AG_STACK_ENCODER, AG_STACK_DECODER, AG_STACK_CROSS = 1, 2, 3  # attngeom/model.h ag_stack

# Model.attention and Model.hidden_states of an encoder–decoder model
Attention = collections.namedtuple("Attention", "encoder decoder cross")
Hidden = collections.namedtuple("Hidden", "encoder decoder")


class Pair:
    """An encoder–decoder folder's two stacks (ag_seq2seq_load): .encoder,
    the model handle every run takes (borrowed from the pair: freed with
    it), and .decoder."""

    def __init__(self, path):
        self._pair = new(lib.ag_seq2seq_load, lib.ag_seq2seq_free, path.encode())
        self.encoder = Owned(lib.ag_seq2seq_stack(self._pair, AG_STACK_ENCODER), lambda p: None)
        self.decoder = lib.ag_seq2seq_stack(self._pair, AG_STACK_DECODER)

    def close(self):
        self.encoder.close()
        self._pair.close()


def is_pair(path):
    """Whether the folder is one ag_model_load refuses for ag_seq2seq_load."""
    return bool(lib.ag_model_dir_is_seq2seq(path.encode()))


def has_decoder(path):
    """Whether the folder holds a decoder for ag_seq2seq_load (t5, bart, or
    a whisper folder saved with its decoder: ag_model_dir_has_decoder)."""
    return bool(lib.ag_model_dir_has_decoder(path.encode()))


def _given_ids(model, target_tokens):
    """target_tokens as int32 ids (a text is target='s business)."""
    if isinstance(target_tokens, (str, bytes)):
        raise Error("target_tokens: expected token ids (a text is target=)")
    try:
        ids = model._ids(target_tokens)
    except Error as e:  # "ids: expected ...", named by its keyword
        raise Error("target_tokens: %s" % str(e).split(": ", 1)[-1]) from None
    if ids.size == 0:
        raise Error("target_tokens: no ids")
    return ids


def _text_ids(model, pair, text):
    """ag_run_target_ids: the tokenizer's labels shifted right after the
    config's decoder_start_token_id (Whisper's less a leading start first;
    on a model of one stack the library's "a target needs an
    encoder-decoder model", before any tokenizer)."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    tok = model._tok() if pair else None
    ids, n = _IDS(), c_size()
    with Call() as c:
        c.check(lib.ag_run_target_ids(pair.encoder if pair else model._model, tok, data, len(data),
                                      ctypes.byref(ids),
                                      ctypes.byref(n), c.err), "target")
    try:
        return np.array(ids[:n.value], dtype=np.int32)
    finally:
        lib.ag_free(ids)


def set_target(model, inp, target, target_tokens):
    """Give the run's input inp (a ModelInput) its target: target= (a text)
    or target_tokens= (the decoder's input ids, verbatim), checked against
    the decoder's vocabulary as the CLI checks them, and run it on the
    pair's encoder (a whisper folder's pair is loaded at its first target:
    model._pair_for). Neither: inp keeps none (the run then names what a
    pair needs). Returns the pair the run takes, or None."""
    if target is not None and target_tokens is not None:
        raise Error("give one of target= and target_tokens=")
    pair = model._pair_for(target is not None or target_tokens is not None)
    if target is None and target_tokens is None:
        return pair
    if target is not None:
        ids, name = _text_ids(model, pair, target), "target"
    else:
        ids, name = _given_ids(model, target_tokens), "target_tokens"
    if pair:
        ptr = ids.ctypes.data_as(_IDS)
        with Call() as c:
            c.check(lib.ag_model_check_ids(pair.decoder, ptr, ids.size, c.err), name)
        inp.model = pair.encoder
    inp.set_target(ids)
    return pair


class _Taker:
    """The three arrays of one kind (attention or scores) of a pass, each
    stack's filled as its callback (ag_run_stack_heads_fn) gives them."""

    def __init__(self, shapes):
        self.arrays = {k: np.empty(s) for k, s in shapes.items()}
        self.done = dict.fromkeys(self.arrays, 0)
        self.fn = STACK_HEADS_FN(self.take)

    def take(self, stack, layer, a, heads, n, n_kv, user):
        dst, size = self.arrays[stack], heads * n * n_kv * 8
        if self.done[stack] + size > dst.nbytes:  # the selection sized it: never
            return 1
        ctypes.memmove(dst.ctypes.data + self.done[stack], a, size)
        self.done[stack] += size
        return 0

    def result(self, path):
        if any(self.done[k] != self.arrays[k].nbytes for k in self.arrays):
            raise Error("%s: the pass gave fewer layers than selected" % path)
        a = self.arrays
        return Attention(a[AG_STACK_ENCODER], a[AG_STACK_DECODER], a[AG_STACK_CROSS])


def attention(model, pair, inp, opt, sizes, scores=False):
    """The arrays of one pass on inp (with its target): Attention(encoder
    [L_enc, H, n_src, n_src], decoder [L_dec, H, n_tgt, n_tgt], cross
    [L_dec, H, n_tgt, n_src]) of the selected layers and heads of each
    stack; sizes(handle) gives a stack's (layers, heads) for opt. scores:
    (that, the same of the pre-softmax scores from the same pass), as
    `attention --scores --decoder-scores --cross-scores` writes them."""
    n_src, n_tgt = inp.n, inp.struct.n_target
    (el, eh), (dl, dh) = sizes(pair.encoder), sizes(pair.decoder)
    shapes = {AG_STACK_ENCODER: (el, eh, n_src, n_src), AG_STACK_DECODER: (dl, dh, n_tgt, n_tgt),
              AG_STACK_CROSS: (dl, dh, n_tgt, n_src)}
    attn, sc = _Taker(shapes), _Taker(shapes) if scores else None
    _run(model, inp, opt, attn.fn, None, None, sc.fn if sc else STACK_HEADS_FN())
    return (attn.result(model.path), sc.result(model.path)) if sc else attn.result(model.path)


def hidden_states(model, pair, inp, opt):
    """Hidden(encoder [L_enc + 1, n_src, d], decoder [L_dec + 1, n_tgt, d])
    of one pass on inp, as ag_seq2seq_forward fills them."""
    shapes = [(model._dim("n_layer", h) + 1, n, model._dim("d_model", h))
              for h, n in ((pair.encoder, inp.n), (pair.decoder, inp.struct.n_target))]
    enc, dec = (np.empty(s) for s in shapes)
    _run(model, inp, opt, STACK_HEADS_FN(), enc.ctypes.data, dec.ctypes.data)
    return Hidden(enc, dec)


def _run(model, inp, opt, fn, enc, dec, scores_fn=None):
    with Call() as c:
        c.check(lib.ag_run_attention_seq2seq_scores(inp.model, ctypes.byref(inp.struct), opt,
                                                    None, fn, scores_fn or STACK_HEADS_FN(),
                                                    None, enc, dec, c.err), model.path)


def stack_name(record):
    """The record's "stack" (encoder, decoder, cross), None for a model of
    one stack."""
    name = lib.ag_stack_name(lib.ag_record_stack(record))
    return name.decode() if name is not None else None
