"""ag_plot_cluster_order (attngeom/plot.h), the order of the heads in the
similarity figure: average-linkage clustering equal to scipy's
linkage(method="average") and leaves_list on random symmetric matrices,
the linkage matrix to rounding and the leaf order exactly."""

import ctypes

import pytest

from attngeom._lib import Call, Error, lib

np = pytest.importorskip("numpy")
hierarchy = pytest.importorskip("scipy.cluster.hierarchy")
distance = pytest.importorskip("scipy.spatial.distance")


def cluster(D):
    D = np.ascontiguousarray(D, dtype=np.float64)
    n = D.shape[0]
    order = (ctypes.c_size_t * n)()
    Z = np.zeros((max(n - 1, 0), 4))
    with Call() as c:
        c.check(lib.ag_plot_cluster_order(D.ctypes.data, n, order,
                                          Z.ctypes.data if n > 1 else None, c.err))
    return list(order), Z


def random_distances(rng, n):
    """Distances between random points (a metric, as Jensen–Shannon's is),
    or symmetric noise that is none."""
    if rng.random() < 0.5:
        X = rng.random((n, 3))
        return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    A = rng.random((n, n))
    D = A + A.T
    np.fill_diagonal(D, 0)
    return D


@pytest.mark.parametrize("seed", range(40))
def test_equals_scipy_average_linkage(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    D = random_distances(rng, n)
    want_Z = hierarchy.linkage(distance.squareform(D, checks=False), method="average")
    order, Z = cluster(D)
    assert order == list(hierarchy.leaves_list(want_Z))
    np.testing.assert_allclose(Z, want_Z, rtol=1e-12, atol=0)


def test_closed_forms():
    # two tight pairs far apart: {0, 2} at 1, {1, 3} at 2, between them 10
    D = np.full((4, 4), 10.0)
    np.fill_diagonal(D, 0)
    D[0, 2] = D[2, 0] = 1
    D[1, 3] = D[3, 1] = 2
    order, Z = cluster(D)
    assert order == [0, 2, 1, 3]
    assert Z.tolist() == [[0, 2, 1, 2], [1, 3, 2, 2], [4, 5, 10, 4]]
    # the average, not the least or the largest, distance to a merged pair
    D = np.array([[0, 1, 4, 8], [1, 0, 6, 9], [4, 6, 0, 3], [8, 9, 3, 0]], float)
    order, Z = cluster(D)
    assert Z.tolist() == [[0, 1, 1, 2], [2, 3, 3, 2], [4, 5, (4 + 8 + 6 + 9) / 4, 4]]
    assert cluster(np.zeros((1, 1)))[0] == [0]


def test_ties_are_deterministic():
    # every distance equal: the pair of least (smaller id, larger id) merges
    # first: (0, 1), then (2, 3) before (2, 4) = (2, {0, 1})
    D = np.ones((4, 4))
    np.fill_diagonal(D, 0)
    order, Z = cluster(D)
    assert Z.tolist() == [[0, 1, 1, 2], [2, 3, 1, 2], [4, 5, 1, 4]]
    assert order == [0, 1, 2, 3]


def test_errors():
    D = np.array([[0, 1], [2, 0]], float)
    with pytest.raises(Error, match="not finite and symmetric at"):
        cluster(D)
    with pytest.raises(Error, match="1 item or more"):
        cluster(np.zeros((0, 0)))
