"""Anchors and local codings (docs/design.md §Local codings)."""

import numpy as np
import pytest
import scipy.sparse as sp

from llc_bench.coding import (
    CODINGS,
    InverseDistanceCoding,
    SoftKNNCoding,
    fit_anchors,
    knn_sq_distances,
    make_coding,
)
from llc_bench.errors import ConfigError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7))
    V = rng.normal(size=(20, 7))
    return X, V


def _brute(X, V):
    return ((X[:, None, :] - V[None, :, :]) ** 2).sum(-1)


def test_knn_matches_brute_force(data):
    X, V = data
    idx, d, _ = knn_sq_distances(X, V, 5)
    assert idx.dtype == np.int32 and idx.shape == (300, 5)
    assert np.all(np.diff(idx, axis=1) > 0)  # ascending anchor indices
    full = _brute(X, V)
    expect = np.sort(np.argsort(full, axis=1)[:, :5], axis=1)
    np.testing.assert_array_equal(idx, expect)
    np.testing.assert_allclose(d, np.take_along_axis(full, expect, axis=1), rtol=1e-10, atol=1e-10)


def test_knn_chunked(data, monkeypatch):
    import llc_bench.coding.local as local

    X, V = data
    ref = knn_sq_distances(X, V, 4)
    monkeypatch.setattr(local, "CHUNK_ENTRIES", 7 * V.shape[0])  # 7-row chunks
    got = knn_sq_distances(X, V, 4)
    np.testing.assert_array_equal(ref[0], got[0])
    np.testing.assert_allclose(ref[1], got[1], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_weights_sum_to_one_k_nonzeros(data, name):
    X, V = data
    coding = make_coding(name, k=6).fit(X, V, random_state=0)
    code = coding.encode(X, V)
    assert code.indices.shape == code.weights.shape == (300, 6)
    assert code.weights.dtype == np.float64
    np.testing.assert_allclose(code.weights.sum(axis=1), 1.0, rtol=1e-12)
    G = code.to_dense(V.shape[0])
    if getattr(coding, "variable_k", False):  # adaptive_knn: k* <= k, the rest padded with 0
        assert np.all((code.weights > 0).sum(axis=1) == code.n_active)
        assert code.n_active.min() >= 1 and code.n_active.max() <= 6
        assert np.all((G != 0).sum(axis=1) == code.n_active)
    else:
        assert np.all(code.weights > 0)  # exactly k non-zeros per row
        assert np.all((G != 0).sum(axis=1) == 6)


def test_inverse_distance_formula(data):
    X, V = data
    code = InverseDistanceCoding(k=3).encode(X, V)
    full = np.sqrt(_brute(X, V))
    w = 1.0 / np.take_along_axis(full, code.indices.astype(int), axis=1)
    np.testing.assert_allclose(code.weights, w / w.sum(1, keepdims=True), rtol=1e-9)
    code2 = InverseDistanceCoding(k=3, power=2).encode(X, V)
    w2 = w**2
    np.testing.assert_allclose(code2.weights, w2 / w2.sum(1, keepdims=True), rtol=1e-9)


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_exact_hit_on_anchor(data, name):
    X, V = data
    Xh = V[[3, 11, 0]] * 1.0  # samples sitting exactly on anchors
    coding = make_coding(name, k=5, **({"beta": 1.0} if name == "soft_knn" else {}))
    code = coding.encode(Xh, V)
    G = code.to_dense(V.shape[0])
    if name == "inverse_distance":
        np.testing.assert_array_equal(G[[0, 1, 2], [3, 11, 0]], 1.0)
        np.testing.assert_array_equal((G != 0).sum(1), 1)
    else:  # Gaussian: the anchor itself has the largest weight, no NaN
        assert np.all(np.argmax(G, axis=1) == [3, 11, 0])
        np.testing.assert_allclose(G.sum(1), 1.0)


def test_soft_knn_no_underflow_large_beta():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 4)) * 100.0  # squared distances ~ 1e4..1e5
    V = rng.normal(size=(10, 4)) * 100.0
    for beta in (1.0, 1e3, 1e8):
        code = SoftKNNCoding(k=4, beta=beta).encode(X, V)
        assert np.all(np.isfinite(code.weights))
        np.testing.assert_allclose(code.weights.sum(1), 1.0)
    # at huge β the nearest anchor takes everything
    full = _brute(X, V)
    G = code.to_dense(10)
    np.testing.assert_array_equal(np.argmax(G, 1), np.argmin(full, 1))
    assert np.allclose(G.max(1), 1.0)


def test_soft_knn_formula_and_auto_beta(data):
    X, V = data
    c = SoftKNNCoding(k=4, beta=0.3)
    code = c.encode(X, V)
    d = np.take_along_axis(_brute(X, V), code.indices.astype(int), axis=1)
    e = np.exp(-0.3 * d)
    np.testing.assert_allclose(code.weights, e / e.sum(1, keepdims=True), rtol=1e-9)
    auto = SoftKNNCoding(k=4).fit(X, V, random_state=0)
    _, d, _ = knn_sq_distances(X, V, 4)
    spread = np.median((d - d.min(1, keepdims=True)).mean(1))
    assert auto.beta_ == pytest.approx(1.0 / spread)
    with pytest.raises(ConfigError):
        SoftKNNCoding(k=4).encode(X, V)  # auto β not fitted
    # beta_scale multiplies β (auto or a number); None is β itself, bit for bit
    assert SoftKNNCoding(k=4, beta_scale=None).fit(X, V, random_state=0).beta_ == auto.beta_
    sharp = SoftKNNCoding(k=4, beta_scale=3.0).fit(X, V, random_state=0)
    assert sharp.beta_ == pytest.approx(3.0 * auto.beta_, rel=1e-15)
    assert SoftKNNCoding(k=4, beta=0.3, beta_scale=0.5).fit(X, V).beta_ == pytest.approx(0.15)
    with pytest.raises(ConfigError, match="beta_scale"):
        SoftKNNCoding(k=4, beta_scale=0.0)


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_dense_equals_sparse(name):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 15)) * (rng.random((120, 15)) < 0.3)
    V = rng.normal(size=(9, 15))
    coding = make_coding(name, k=3).fit(X, V, random_state=0)
    a = coding.encode(X, V)
    for fmt in (sp.csr_matrix, sp.csr_array):
        b = coding.encode(fmt(X), V)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10)


def test_k_equal_m_and_bad_k(data):
    X, V = data
    code = InverseDistanceCoding(k=20).encode(X, V)
    np.testing.assert_array_equal(code.indices, np.broadcast_to(np.arange(20), (300, 20)))
    with pytest.raises(ConfigError):
        knn_sq_distances(X, V, 0)
    with pytest.raises(ConfigError):
        make_coding("nope")


def test_kmeans_anchors_seeded(data):
    X, _ = data
    a1, info = fit_anchors(X, 10, random_state=3)
    a2, _ = fit_anchors(X, 10, random_state=3)
    assert a1.shape == (10, 7) and a1.flags.c_contiguous and a1.dtype == np.float64
    np.testing.assert_array_equal(a1, a2)
    assert info["algorithm"] == "KMeans" and info["n_anchors"] == 10
    a3, info3 = fit_anchors(X, 10, random_state=3, minibatch_threshold=100)
    assert info3["algorithm"] == "MiniBatchKMeans" and a3.shape == (10, 7)
    a4, info4 = fit_anchors(X[:5], 10, random_state=0)  # capped at n rows
    assert a4.shape[0] == 5 and info4["n_anchors"] == 5
    a5, _ = fit_anchors(sp.csr_matrix(X), 4, random_state=0)
    assert isinstance(a5, np.ndarray) and a5.shape == (4, 7)


def test_random_per_class_anchors(data):
    X, _ = data
    y = np.repeat([0, 1, 2], [250, 45, 5])
    V, info = fit_anchors(X, 30, method="random_per_class", y=y, random_state=0)
    assert V.shape == (30, 7)
    # 10 each; class 2 only has 5 rows, its 5 go to the largest class
    assert info["per_class"] == {"0": 15, "1": 10, "2": 5}
    rows = [np.flatnonzero((X == v).all(1))[0] for v in V]  # anchors are training points
    assert len(set(rows)) == 30
    with pytest.raises(ConfigError):
        fit_anchors(X, 5, method="random_per_class")


def test_kmeans_per_class_anchors_are_each_class_own_kmeans(data):
    from sklearn.cluster import KMeans

    X, _ = data
    y = np.repeat([0, 1, 2], [250, 45, 5])
    V, info = fit_anchors(X, 30, method="kmeans_per_class", y=y, random_state=0)
    assert V.shape == (30, 7) and info["per_class"] == {"0": 15, "1": 10, "2": 5}
    # the first class's 15 anchors are k-means on its rows alone (the same seed)
    ref = KMeans(n_clusters=15, random_state=0, n_init=1).fit(X[y == 0]).cluster_centers_
    np.testing.assert_allclose(V[:15], ref)
    np.testing.assert_allclose(np.sort(V[25:], axis=0), np.sort(X[y == 2], axis=0))
    with pytest.raises(ConfigError, match="kmeans_per_class"):
        fit_anchors(X, 5, method="kmeans_per_class")


def test_distance_memo_returns_copies_of_the_same_neighbours():
    """With a ``memo`` the same rows (object), equal anchors and k give what was computed
    before, as copies (a caller that writes to them changes nothing kept); other anchors
    or k are searched anew; without one nothing is kept."""
    rng = np.random.default_rng(0)
    X, V = rng.normal(size=(50, 3)), rng.normal(size=(7, 3))
    plain = knn_sq_distances(X, V, 3)
    memo: list = []
    first = knn_sq_distances(X, V, 3, memo=memo)
    first[1][:] = -1.0
    again = knn_sq_distances(X, V.copy(), 3, memo=memo)
    other = knn_sq_distances(X, V + 1.0, 3, memo=memo), knn_sq_distances(X, V, 2, memo=memo)
    assert len(memo) == 3
    for a, b in zip(plain, again, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(other[1][0], knn_sq_distances(X, V, 2)[0])
    assert not np.array_equal(other[0][1], plain[1])


def test_anchor_memo_returns_copies_of_the_same_k_means():
    """With a ``memo`` the same rows (object), m and rule give the anchors computed before,
    as copies; another m or another array runs k-means anew; without one nothing is kept."""
    X = np.random.default_rng(0).normal(size=(60, 3))
    plain, info = fit_anchors(X, 5, random_state=0)
    memo: list = []
    first, _ = fit_anchors(X, 5, random_state=0, memo=memo)
    first[:] = 0.0
    again, again_info = fit_anchors(X, 5, random_state=0, memo=memo)
    fit_anchors(X, 6, random_state=0, memo=memo)
    fit_anchors(X.copy(), 5, random_state=0, memo=memo)
    assert len(memo) == 3
    np.testing.assert_array_equal(again, plain)
    assert again_info == info


def test_anchor_rows_draw_the_anchors_of_that_many_rows_from_those_rows_only():
    """``rows=(rows, n)``: the anchors of an n-row array are those of its rows ``rows``, the
    info says how many; an array of another length is not concerned."""
    X = np.random.default_rng(1).normal(size=(50, 3))
    rows = np.arange(0, 50, 2)
    kept, info = fit_anchors(X, 5, random_state=0, rows=(rows, 50))
    np.testing.assert_array_equal(kept, fit_anchors(X[rows], 5, random_state=0)[0])
    assert info["rows"] == 25
    other, other_info = fit_anchors(X[:40], 5, random_state=0, rows=(rows, 50))
    np.testing.assert_array_equal(other, fit_anchors(X[:40], 5, random_state=0)[0])
    assert "rows" not in other_info
