"""attngeom.matrix_metrics on attention as PyTorch and Hugging Face hand it
over (issue 25, item 4): every such input gives the records of the plain
numpy call on the same values, each sequence of a batch cut by hand. The
numpy-only tests always run; the torch ones skip without torch."""

import numpy as np
import pytest

import attngeom
from test_matrix import attention_like

METRICS = "all"


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")


def hf_layers(L=3, B=2, H=2, n=6, seed=21):
    """outputs.attentions as numpy: L arrays [B, H, n, n]."""
    return tuple(attention_like((B, H, n, n), seed + l) for l in range(L))


def by_hand(layers, keep=None, layer_offset=0, label=None):
    """The records matrix_metrics gives per sequence b of a plain C-ordered
    [L, H, k, k] array (rows and columns keep[b]), with "batch": b."""
    rows = []
    for b in range(layers[0].shape[0]):
        S = np.stack([x[b] for x in layers])
        if keep is not None:
            S = np.ascontiguousarray(S[..., keep[b], :][..., keep[b]])
        for r in attngeom.matrix_metrics(S, METRICS, layer_offset=layer_offset):
            r["batch"] = b
            if label is not None:
                r["model"] = label
            rows.append(r)
    return rows


def assert_records(got, want):
    """The same records, keys in the same order, values equal exactly."""
    assert [list(r) for r in got] == [list(r) for r in want]
    assert got == want


# ---- numpy: always run -----------------------------------------------------

def test_tuple_of_numpy_layers_is_per_sequence():
    layers = hf_layers()
    got = attngeom.matrix_metrics(layers, METRICS, label="gpt2")
    assert_records(got, by_hand(layers, label="gpt2"))
    assert [(r["batch"], r["layer"], r["head"]) for r in got[:5]] == [
        (0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 2, 0)]
    assert list(got[0])[-2:] == ["batch", "model"]
    assert_records(attngeom.matrix_metrics(list(layers), METRICS), by_hand(layers))


@pytest.mark.parametrize("layout,stack", [
    ("LBHNN", lambda layers: np.stack(layers)),          # torch.stack(outputs.attentions)
    ("BLHNN", lambda layers: np.stack(layers, axis=1)),
])
def test_five_d_with_layout(layout, stack):
    layers = hf_layers()
    assert_records(attngeom.matrix_metrics(stack(layers), METRICS, layout=layout),
                   by_hand(layers))


def test_five_d_needs_a_layout():
    with pytest.raises(attngeom.Error) as e:
        attngeom.matrix_metrics(np.stack(hf_layers()))
    assert str(e.value) == ("A: a 5-D array of shape (3, 2, 2, 6, 6) needs layout='LBHNN' "
                            "(layers first, as torch.stack(outputs.attentions)) or "
                            "layout='BLHNN'")
    with pytest.raises(attngeom.Error, match=r"^layout: 'LBHNN' is 5-D, A is 4-D of shape "
                                             r"\(2, 2, 6, 6\)$"):
        attngeom.matrix_metrics(hf_layers()[0], layout="LBHNN")
    with pytest.raises(attngeom.Error, match=r"^layout: expected one of NN, HNN, LHNN, BHNN, "
                                             r"LBHNN, BLHNN, not 'BHN'$"):
        attngeom.matrix_metrics(hf_layers()[0], layout="BHN")
    with pytest.raises(attngeom.Error, match=r"^layout: not for a tuple or list of layers"):
        attngeom.matrix_metrics(hf_layers(), layout="BHNN")


def test_one_layer_of_a_batch():
    """[batch, H, n, n] (a hook's output) with layout="BHNN": one layer
    (layer_offset), the first axis the batch; without it, a 4-D array keeps
    its [L, H, n, n] meaning."""
    (A,) = hf_layers(L=1)
    got = attngeom.matrix_metrics(A, METRICS, layout="BHNN", layer_offset=2)
    assert_records(got, by_hand((A,), layer_offset=2))
    assert {(r["batch"], r["layer"]) for r in got} == {(0, 2), (1, 2)}
    plain = attngeom.matrix_metrics(A, METRICS)
    assert [(r["layer"], r["head"]) for r in plain] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert "batch" not in plain[0]


MASK = np.array([[1, 1, 1, 1, 0, 0],    # right padding
                 [0, 0, 0, 1, 1, 1],    # left padding
                 [1, 0, 1, 1, 0, 1]])   # holes: an index set, not a range


@pytest.mark.parametrize("as_tuple", [True, False])
def test_attention_mask_cuts_each_sequence(as_tuple):
    layers = hf_layers(B=3)
    A = layers if as_tuple else np.stack(layers)
    got = attngeom.matrix_metrics(A, METRICS, attention_mask=MASK,
                                  layout=None if as_tuple else "LBHNN")
    keep = [np.flatnonzero(m) for m in MASK]
    assert_records(got, by_hand(layers, keep))
    assert [got[k * 6]["rows"] for k in range(3)] == [4, 3, 4]
    bools = attngeom.matrix_metrics(A, METRICS, attention_mask=MASK.astype(bool),
                                    layout=None if as_tuple else "LBHNN")
    assert bools == got


def test_a_stacked_float64_sequence_is_a_view():
    """A consecutive mask cuts a stacked float64 array by slicing: the
    library reads the caller's memory, nothing is copied."""
    from attngeom._inputs import arrange, kept_tokens
    from attngeom._matrix import _sequence_float64
    A = np.stack(hf_layers(B=3))
    _, batch = arrange(A, "LBHNN", False)
    keep = kept_tokens(MASK, batch, False)
    assert [isinstance(k, slice) for k in keep] == [True, True, False]
    assert np.shares_memory(_sequence_float64(batch.sequence(1, keep[1])), A)


@pytest.mark.parametrize("mask,message", [
    (MASK[:, :4], r"^attention_mask: shape \(3, 4\); expected \(3, 6\), \[batch, n\] for 3 "
                  r"sequences of 6 tokens$"),
    (MASK[:2], r"^attention_mask: shape \(2, 6\); expected \(3, 6\)"),
    (MASK * 2, r"^attention_mask: values must be 0 or 1 \(1 = a real token\)$"),
    (np.where(np.arange(3)[:, None] == 1, 0, MASK), r"^attention_mask: sequence 1 has no real "
                                                    r"token$"),
])
def test_bad_masks(mask, message):
    with pytest.raises(attngeom.Error, match=message):
        attngeom.matrix_metrics(hf_layers(B=3), attention_mask=mask)


def test_mask_needs_a_batch_axis():
    with pytest.raises(attngeom.Error, match=r"^attention_mask: A has no batch axis \(a 4-D "
                                             r"array is \[L, H, n, n\]; pass layout='BHNN'"):
        attngeom.matrix_metrics(hf_layers()[0], attention_mask=MASK[:2])


def test_layer_offset():
    A = attention_like((2, 3, 5, 5), 30)
    got = attngeom.matrix_metrics(A, METRICS, layer_offset=4)
    want = attngeom.matrix_metrics(A, METRICS)
    for r in want:
        r["layer"] += 4
    assert_records(got, want)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(attngeom.Error, match=r"^layer_offset: expected an integer >= 0"):
            attngeom.matrix_metrics(A, layer_offset=bad)


def test_other_lists_keep_their_meaning():
    """Nested lists of numbers, and lists of matrices, are numpy.asarray'd
    as before; a list of [H, n, n] layers stacks to [L, H, n, n]."""
    M = attention_like((3, 4, 4), 31)
    assert attngeom.matrix_metrics(M.tolist()) == attngeom.matrix_metrics(M)
    assert attngeom.matrix_metrics(list(M)) == attngeom.matrix_metrics(M)
    A = attention_like((2, 3, 4, 4), 32)
    assert attngeom.matrix_metrics(tuple(A)) == attngeom.matrix_metrics(A)


def test_aggregate_pools_over_batch():
    """"batch" names a sequence, like "text": the default grouping pools over
    it (layer, head) and never averages it as a metric."""
    recs = attngeom.matrix_metrics(hf_layers(B=3), "sink_mass")
    agg = attngeom.aggregate(recs)
    assert len(agg) == 6 and "batch" not in agg[0] and "batch_std" not in agg[0]
    assert agg[0]["n"] == 3
    mean = np.mean([r["sink_mass"] for r in recs if (r["layer"], r["head"]) == (0, 0)])
    np.testing.assert_allclose(agg[0]["sink_mass"], mean, rtol=1e-15)


# ---- torch: skip without it ------------------------------------------------

def test_tuple_of_tensors(torch):
    layers = hf_layers()
    got = attngeom.matrix_metrics(tuple(torch.from_numpy(x).float() for x in layers), METRICS)
    assert_records(got, by_hand(tuple(x.astype(np.float32) for x in layers)))
    stacked = torch.stack([torch.from_numpy(x) for x in layers])
    assert_records(attngeom.matrix_metrics(stacked, METRICS, layout="LBHNN"), by_hand(layers))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_tensor_dtypes(torch, dtype):
    """bfloat16 gives its exact float32 upcast's records; the others their
    numpy dtype's."""
    t = torch.from_numpy(attention_like((2, 3, 5, 5), 40)).to(getattr(torch, dtype))
    want = attngeom.matrix_metrics(t.float().numpy() if dtype == "bfloat16" else t.numpy(),
                                   METRICS)
    assert attngeom.matrix_metrics(t, METRICS) == want


def test_requires_grad_builds_no_graph(torch):
    scores = torch.from_numpy(np.random.default_rng(41).normal(size=(2, 2, 5, 5)))
    scores.requires_grad_(True)
    p = torch.softmax(scores, dim=-1)          # a non-leaf with a grad_fn, as in a forward
    want = attngeom.matrix_metrics(p.detach().numpy(), METRICS)
    assert attngeom.matrix_metrics(p, METRICS) == want
    assert attngeom.matrix_metrics(scores.bfloat16(), "sink_mass")  # requires grad too
    assert scores.grad is None and p.grad_fn is not None


@pytest.mark.parametrize("view", [
    lambda t: t.transpose(-1, -2),
    lambda t: t[:, ::2],
    lambda t: t[..., 1:, 1:],
])
def test_non_contiguous_tensors(torch, view):
    t = torch.from_numpy(attention_like((2, 4, 6, 6), 42)).float()
    V = view(t)
    assert not V.is_contiguous()
    assert attngeom.matrix_metrics(V, METRICS) == attngeom.matrix_metrics(
        np.ascontiguousarray(V.numpy()), METRICS)


def test_torch_mask_and_one_layer(torch):
    layers = hf_layers(B=3)
    keep = [np.flatnonzero(m) for m in MASK]
    got = attngeom.matrix_metrics(tuple(torch.from_numpy(x) for x in layers), METRICS,
                                  attention_mask=torch.from_numpy(MASK))
    assert_records(got, by_hand(layers, keep))
    one = attngeom.matrix_metrics(torch.from_numpy(layers[1]), METRICS, layout="BHNN",
                                  attention_mask=torch.from_numpy(MASK), layer_offset=1)
    assert_records(one, [r for r in got if r["layer"] == 1])


def test_a_tensor_on_another_device_is_refused(torch):
    """CUDA is not needed to check the rule: a "meta" tensor is not on the CPU either."""
    t = torch.empty(2, 4, 4, device="meta")
    with pytest.raises(attngeom.Error, match=r"^A: a tensor on meta; call \.cpu\(\) first, or "
                                             r"pass copy=True$"):
        attngeom.matrix_metrics(t)
    with pytest.raises(attngeom.Error, match=r"^A\[1\]: a tensor on meta"):
        attngeom.matrix_metrics((torch.empty(1, 2, 4, 4), torch.empty(1, 2, 4, 4, device="meta")))
    cpu = torch.from_numpy(attention_like((1, 2, 4, 4), 43))
    with pytest.raises(attngeom.Error, match=r"^attention_mask: a tensor on meta"):
        attngeom.matrix_metrics((cpu,), attention_mask=torch.ones(1, 4, device="meta"))


def test_a_failure_names_the_sequence():
    """The library's message, with the sequence in front; the index is in
    that sequence's [L, H, n, n]."""
    layers = hf_layers(B=2)
    layers[2][1, 0, 3, 4] = np.nan
    with pytest.raises(attngeom.Error) as e:
        attngeom.matrix_metrics(layers)
    assert str(e.value) == "batch 1: non-finite value (NaN) at index [2, 0, 3, 4]"
