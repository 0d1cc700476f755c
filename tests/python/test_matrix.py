"""attngeom.matrix_metrics equals `attngeom matrix` on the same array saved
to .npy, to the last bit, for every dtype and memory order."""

import numpy as np
import pytest

import attngeom
from conftest import cli_error, run_cli


def attention_like(shape, seed):
    """Row-stochastic matrices (softmax of Gaussian scores), causal ones too."""
    x = np.random.default_rng(seed).normal(size=shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cli_records(tmp, A, *options):
    path = tmp / "a.npy"
    np.save(path, A)
    return run_cli("matrix", path, "--format", "json", *options)["records"]


def assert_same(py, cli):
    """Every key and value as the CLI writes them; floats equal exactly."""
    assert len(py) == len(cli)
    for p, c in zip(py, cli):
        c = {k: v for k, v in c.items() if k != "model"}
        assert list(p) == list(c)
        for k in c:
            assert type(p[k]) is type(c[k]), k
            assert p[k] == c[k], (k, p[k], c[k])


SHAPES = [(5, 7), (3, 6, 6), (2, 3, 5, 5)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_equals_cli(tmp, shape, dtype):
    A = attention_like(shape, 1).astype(dtype)
    assert_same(attngeom.matrix_metrics(A, "all"), cli_records(tmp, A, "--metrics", "all"))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fortran_order_equals_cli(tmp, dtype):
    A = np.asfortranarray(attention_like((3, 6, 6), 2).astype(dtype))
    assert A.flags.f_contiguous and not A.flags.c_contiguous
    assert_same(attngeom.matrix_metrics(A, "all"), cli_records(tmp, A, "--metrics", "all"))


@pytest.mark.parametrize("view", [
    lambda A: A[:, ::2],             # every other head: strided matrices, rows contiguous
    lambda A: A[..., :4, :4],        # a block of each matrix: row stride above the width
    lambda A: A[..., ::-1, :],       # rows reversed: negative stride
    lambda A: A.transpose(0, 1, 3, 2),  # each matrix transposed: column stride
])
def test_strided_views_equal_cli(tmp, view):
    V = view(attention_like((2, 4, 6, 6), 3))
    assert not V.flags.c_contiguous
    assert_same(attngeom.matrix_metrics(V), cli_records(tmp, np.ascontiguousarray(V)))


def test_float64_views_are_not_copied():
    from attngeom._matrix import as_float64
    A = attention_like((2, 4, 6, 6), 4)
    for V in (A, A[:, ::2], np.asfortranarray(A), A[..., ::-1, :]):
        out, copied = as_float64(V)
        assert out is V and not copied
    assert as_float64(A.astype(np.float32))[1]


def placed(A, offset, step=8):
    """A copy of A's values (float64) in a fresh buffer, at byte `offset`,
    consecutive elements `step` bytes apart (C order): misaligned unless
    both are multiples of 8."""
    strides = [step * int(np.prod(A.shape[k + 1:])) for k in range(A.ndim)]
    buf = bytearray(offset + A.size * step + 8)
    V = np.ndarray(A.shape, np.float64, buffer=buf, offset=offset, strides=strides)
    V[...] = A
    return V


@pytest.mark.parametrize("view", [
    lambda A: placed(A, 1)[0],                  # the issue's: offset 1, C order
    lambda A: placed(A, 4)[1],                  # 4-aligned, not 8
    lambda A: placed(A, 7)[0, ::-1, :],         # rows reversed
    lambda A: placed(A, 3)[1].T,                # transposed
    lambda A: placed(A, 5)[0, :, ::2],          # every other column
    lambda A: placed(A, 6, 16)[1],              # every other double of a misaligned buffer
    lambda A: placed(A, 2)[:, ::2, 1:],         # 3-D, misaligned and strided
])
def test_unaligned_views_equal_aligned(view):
    """Every element address must be aligned for float64, for any strides:
    a view that breaks it is copied (the library would refuse it), and its
    values are the aligned array's to the last bit."""
    from attngeom._matrix import as_float64
    A = attention_like((2, 6, 6), 12)
    V = view(A)
    assert np.array_equal(V, view(A.copy()))
    out, copied = as_float64(V)
    assert copied and out.ctypes.data % 8 == 0 and np.array_equal(out, V)
    aligned = np.array(V, order="C")  # a new, aligned array
    assert aligned.ctypes.data % 8 == 0
    assert attngeom.matrix_metrics(V, "all") == attngeom.matrix_metrics(aligned, "all")


def test_library_refuses_a_misaligned_pointer():
    """The library checks alignment itself: ag_matrix_records given a
    pointer one byte past an aligned one refuses it before reading."""
    from attngeom._matrix import call_matrices
    from attngeom._records import metric_set, run_options
    V = placed(attention_like((4, 4), 13), 1)
    assert V.ctypes.data % 8 == 1
    with pytest.raises(attngeom.Error, match=r"^data at 0x[0-9a-f]+ is not aligned for float64 "
                                             r"\(8 bytes\)$"):
        call_matrices(V, metric_set("matrix", None), run_options(jobs=1))


def test_edge_threshold_and_jobs(tmp):
    A = attention_like((2, 3, 6, 6), 5)
    py = attngeom.matrix_metrics(A, "curvature", edge_threshold=0.2, jobs=1)
    assert_same(py, cli_records(tmp, A, "--metrics", "curvature", "--edge-threshold", "0.2"))
    assert attngeom.matrix_metrics(A, "curvature", edge_threshold=0.2, jobs=3) == py


def test_metric_lists_and_label():
    A = attention_like((4, 4), 6)
    r = attngeom.matrix_metrics(A, ["sigma_max", "causal"], label="mine")
    assert list(r[0]) == ["layer", "head", "rows", "cols", "sigma_max", "causal", "model"]
    assert r[0]["model"] == "mine" and r[0]["causal"] is False
    # numpy's SVD (another LAPACK driver) agrees to rounding
    np.testing.assert_allclose(r[0]["sigma_max"], np.linalg.norm(A, 2), rtol=1e-14)


def test_pandas(tmp):
    pd = pytest.importorskip("pandas")
    A = attention_like((3, 5, 5), 7)
    df = attngeom.matrix_metrics(A, to_pandas=True)
    assert isinstance(df, pd.DataFrame) and len(df) == 3
    assert list(df["entropy_mean"]) == [r["entropy_mean"] for r in attngeom.matrix_metrics(A)]


# ---- bad input: attngeom.Error with the CLI's message ---------------------

def test_nan_names_the_index(tmp):
    A = attention_like((2, 3, 4), 8)
    A[1, 2, 3] = np.nan
    with pytest.raises(attngeom.Error) as e:
        attngeom.matrix_metrics(A)
    assert str(e.value) == "non-finite value (NaN) at index [1, 2, 3]"
    np.save(tmp / "a.npy", A)
    assert cli_error("matrix", tmp / "a.npy") == "%s: %s" % (tmp / "a.npy", e.value)


def test_inf_in_a_view():
    A = attention_like((4, 4), 9)
    A[0, 0] = np.inf
    with pytest.raises(attngeom.Error, match=r"non-finite value \(Inf\) at index \[3, 3\]"):
        attngeom.matrix_metrics(A[::-1, ::-1])


@pytest.mark.parametrize("shape,message", [
    ((5,), "1-D array of shape (5,); expected 2-D [n,m], 3-D [H,n,m] or 4-D [L,H,n,m]"),
    ((1, 1, 1, 1, 2, 2), "6-D array of shape (1, 1, 1, 1, 2, 2); expected 2-D [n,m], "
                         "3-D [H,n,m] or 4-D [L,H,n,m]"),
    ((0, 4), "empty array of shape (0, 4)"),
    ((2, 3, 0), "empty array of shape (2, 3, 0)"),
])
def test_bad_shapes(tmp, shape, message):
    A = np.ones(shape)
    with pytest.raises(attngeom.Error) as e:
        attngeom.matrix_metrics(A)
    assert str(e.value) == message
    np.save(tmp / "a.npy", A)
    assert cli_error("matrix", tmp / "a.npy") == "%s: %s" % (tmp / "a.npy", message)


def test_bad_metric_and_dtype():
    with pytest.raises(attngeom.Error) as e:
        attngeom.matrix_metrics(np.eye(3), "sigma_max,nope")
    assert str(e.value) == "metrics: unknown metric or family 'nope'"
    with pytest.raises(attngeom.Error, match="metrics: 'stability' is not computed by "
                                             "matrix_metrics"):
        attngeom.matrix_metrics(np.eye(3), "stability")
    with pytest.raises(attngeom.Error, match="dtype int64: expected float16, float32 or float64"):
        attngeom.matrix_metrics(np.eye(3, dtype=np.int64))
    with pytest.raises(attngeom.Error, match="^edge_threshold: 2 is out of range"):
        attngeom.matrix_metrics(np.eye(3), edge_threshold=2)
    assert isinstance(attngeom.Error("x"), Exception)
