"""Kronecker features z = γ(x) ⊗ [x; 1] and the LIBLINEAR initialisation."""

import numpy as np
import pytest
import scipy.sparse as sp
from liblinear.liblinearutil import predict, train

from llc_bench.coding import InverseDistanceCoding, LocalCode, SoftKNNCoding
from llc_bench.models.kronecker import (
    build_kronecker,
    init_subsample,
    kronecker_memory,
    kronecker_nnz,
    liblinear_init,
    split_weights,
)
from llc_bench.models.liblinear_fit import fit_liblinear, seed_liblinear


def _toy(n=40, D=3, m=5, k=2, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if sparse:
        X = X * (rng.random((n, D)) < 0.5)
    V = rng.normal(size=(m, D))
    code = InverseDistanceCoding(k=k).encode(X, V)
    return X, V, code


def _dense_kron(X, code, m, include_x=True):
    G = code.to_dense(m)
    if not include_x:
        return G
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    return np.vstack([np.kron(G[i], Xa[i]) for i in range(X.shape[0])])


@pytest.mark.parametrize("sparse", [False, True])
def test_kronecker_matches_np_kron(sparse):
    X, V, code = _toy(sparse=sparse)
    Xin = sp.csr_matrix(X) if sparse else X
    Z = build_kronecker(Xin, code, 5)
    assert isinstance(Z, sp.csr_matrix) and Z.shape == (40, 5 * 4)
    np.testing.assert_allclose(Z.toarray(), _dense_kron(X, code, 5), rtol=0, atol=1e-15)
    assert Z.has_sorted_indices
    Zc = Z.copy()
    Zc.has_sorted_indices = False
    Zc.sort_indices()  # the stored order was already sorted
    np.testing.assert_array_equal(Zc.indices, Z.indices)
    nnz_x = sp.csr_matrix(X).nnz if sparse else None
    assert Z.nnz == kronecker_nnz(40, 2, 3, nnz_x)
    if not sparse:
        assert np.all(np.diff(Z.indptr) == 2 * (3 + 1))  # k(D+1) a row


def test_kronecker_without_x_is_gamma():
    X, V, code = _toy()
    Z = build_kronecker(X, code, 5, include_x=False)
    assert Z.shape == (40, 5) and Z.nnz == 80
    np.testing.assert_allclose(Z.toarray(), code.to_dense(5))


def test_memory_estimate():
    mem = kronecker_memory(1000, 8, 784)
    assert mem["nnz"] == 1000 * 8 * 785
    assert mem["csr_bytes"] == mem["nnz"] * 12 + 1001 * 8
    assert mem["liblinear_bytes"] >= (mem["nnz"] + 2000) * 16
    assert kronecker_memory(10, 3, 5, include_x=False)["nnz"] == 30


def test_init_subsample_stratified():
    y = np.repeat([0, 1, 2], [900, 90, 10])
    rows = init_subsample(y, 100, random_state=1)
    assert np.all(np.diff(rows) > 0)
    counts = np.bincount(y[rows], minlength=3)
    assert counts.tolist() == [90, 9, 1]
    np.testing.assert_array_equal(rows, init_subsample(y, 100, random_state=1))


@pytest.mark.parametrize("first_class", [1, 0])
def test_liblinear_weights_reproduce_liblinear_decisions(first_class):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    y_idx = (X[:, 0] * X[:, 1] > 0).astype(int)
    first = np.flatnonzero(y_idx == first_class)[0]  # which class LIBLINEAR sees first
    order = np.r_[first, np.delete(np.arange(120), first)]
    X, y_idx = X[order], y_idx[order]
    V = rng.normal(size=(6, 4))
    code = SoftKNNCoding(k=3, beta=0.5).encode(X, V)
    Z = build_kronecker(X, code, 6)
    Wz = np.atleast_2d(fit_liblinear(Z, y_idx, C=0.8, bias=0, seed=1)[0])
    seed_liblinear(1)  # LIBLINEAR on its own, same problem and shuffling seed
    model = train(np.where(y_idx == 1, 1.0, -1.0), Z, "-s 3 -c 0.8 -q")
    _, _, vals = predict(np.zeros(120), Z, model, "-q")
    sign = 1 if model.get_labels()[0] == 1 else -1  # docs/design.md §Released code
    ref = sign * np.asarray(vals)[:, 0]  # LIBLINEAR's decision for class 1
    W, b = split_weights(Wz, 6, 4)
    assert W.shape == (1, 6, 4) and b.shape == (1, 6)
    G = code.to_dense(6)
    ours = np.einsum("nj,jd,nd->n", G, W[0], X) + G @ b[0]  # γᵀWx + γᵀb (eq. 8)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)
    assert np.mean((ours > 0) == (y_idx == 1)) > 0.8


def test_liblinear_init_matches_independent_liblinear_run():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(100, 3))
    y_idx = (X[:, 0] * X[:, 2] > 0).astype(int)
    V = rng.normal(size=(4, 3))
    code = InverseDistanceCoding(k=2).encode(X, V)
    lam = 1e-2
    W, b, info = liblinear_init(X, code, y_idx, 2, 4, lam, random_state=0)
    assert info["C"] == pytest.approx(1 / (lam * 100)) and not info["subsampled"]
    Z = build_kronecker(X, code, 4)
    yl = np.where(y_idx == 1, 1.0, -1.0)
    seed_liblinear(np.random.default_rng(0).integers(2**31))  # the seed liblinear_init uses
    model = train(yl, Z, f"-s 3 -c {info['C']!r} -q")  # no -B: the 1 is in z
    _, _, vals = predict(yl, Z, model, "-q")
    ref = np.asarray(vals)[:, 0] * (1 if model.get_labels()[0] == 1 else -1)
    G = code.to_dense(4)
    ours = np.einsum("nj,jd,nd->n", G, W[0], X) + G @ b[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)
    W2, b2, _ = liblinear_init(X, code, y_idx, 2, 4, lam, random_state=3)
    W3, b3, _ = liblinear_init(X, code, y_idx, 2, 4, lam, random_state=3)
    np.testing.assert_array_equal(W2, W3)  # seeded rand(): reproducible
    np.testing.assert_array_equal(b2, b3)


def test_liblinear_multiclass_one_vs_rest():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 3))
    y_idx = np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    y_idx = np.r_[2, y_idx[1:]]  # LIBLINEAR sees label 2 first: columns are permuted
    V = rng.normal(size=(5, 3))
    code = InverseDistanceCoding(k=2).encode(X, V)
    Z = build_kronecker(X, code, 5)
    Wz = fit_liblinear(Z, y_idx, C=1.0, bias=0, eps=1e-10, seed=1)[0]
    seed_liblinear(1)
    model = train(y_idx.astype(float), Z, "-s 3 -c 1 -e 1e-10 -q")
    assert model.get_labels()[0] == 2
    _, _, vals = predict(y_idx.astype(float), Z, model, "-q")
    vals = np.asarray(vals)
    for col, lab in enumerate(model.get_labels()):
        np.testing.assert_allclose(Z @ Wz[lab], vals[:, col], rtol=1e-12, atol=1e-12)
        ovr = train(np.where(y_idx == lab, 1.0, -1.0), Z, "-s 3 -c 1 -e 1e-10 -q")  # c vs rest
        sign = 1 if ovr.get_labels()[0] == 1 else -1
        _, _, v = predict(np.zeros(150), Z, ovr, "-q")
        # same problem, solved separately (dual CD stops at its iteration cap: ~1e-3)
        np.testing.assert_allclose(Z @ Wz[lab], sign * np.asarray(v)[:, 0], atol=1e-2)


def test_liblinear_init_subsample_reported():
    X, V, code = _toy(n=200)
    y_idx = (X[:, 0] > 0).astype(int)
    W, b, info = liblinear_init(X, code, y_idx, 2, 5, 1e-2, max_nnz=50 * 8, random_state=7)
    assert info["subsampled"] and info["n_rows"] == 50 and info["of_rows"] == 200
    assert info["nnz"] <= 50 * 8 and info["C"] == pytest.approx(1 / (1e-2 * 50))
    W2, _, _ = liblinear_init(X, code, y_idx, 2, 5, 1e-2, max_nnz=50 * 8, random_state=7)
    np.testing.assert_array_equal(W, W2)


def test_liblinear_init_lcc_is_gamma_svm():
    X, V, code = _toy(n=100)
    y_idx = (X[:, 0] > 0).astype(int)
    W, b, info = liblinear_init(X, code, y_idx, 2, 5, 1e-2, use_W=False, random_state=4)
    assert not W.any() and b.shape == (1, 5)
    G = code.to_dense(5)
    seed_liblinear(np.random.default_rng(4).integers(2**31))
    model = train(np.where(y_idx == 1, 1.0, -1.0), sp.csr_matrix(G), f"-s 3 -c {info['C']!r} -q")
    _, _, vals = predict(np.zeros(100), sp.csr_matrix(G), model, "-q")
    sign = 1 if model.get_labels()[0] == 1 else -1
    np.testing.assert_allclose(G @ b[0], sign * np.asarray(vals)[:, 0], rtol=1e-12, atol=1e-12)


def test_localcode_take():
    code = LocalCode(np.arange(6, dtype=np.int32).reshape(3, 2), np.full((3, 2), 0.5))
    sub = code.take(np.array([2, 0]))
    assert sub.indices.tolist() == [[4, 5], [0, 1]] and sub.n == 2 and sub.k == 2


def test_estimator_reports_init_subsample():
    from llc_bench.models import LLSVMClassifier

    X, V, code = _toy(n=200)
    y = (X[:, 0] > 0).astype(int)
    clf = LLSVMClassifier(n_anchors=5, k=2, epochs=1, max_nnz=400, random_state=0).fit(X, y)
    assert clf.fit_info_["init"]["subsampled"] and clf.fit_info_["init"]["n_rows"] == 50
    assert any("subsample of 50 of 200 rows" in note for note in clf.fit_info_["notes"])


@pytest.mark.parametrize("sparse", [False, True])
def test_without_the_appended_one_is_gamma_kron_x(sparse):
    X, V, code = _toy(sparse=sparse)
    Xin = sp.csr_matrix(X) if sparse else X
    Z = build_kronecker(Xin, code, 5, append_one=False)
    G = code.to_dense(5)
    ref = np.stack([np.kron(G[i], X[i]) for i in range(len(X))])
    np.testing.assert_allclose(Z.toarray(), ref, rtol=1e-15)
    assert Z.nnz == kronecker_nnz(len(X), 2, 3, Xin.nnz if sparse else None, append_one=False)


def test_sparse_bias_column_matches_dense():
    """The appended 1 on the CSR path: anchor j's bias column holds γ_j, stored even for
    an all-zero row, with unsorted column indices and an explicit zero in X."""
    X = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.5, 0.0, -1.0], [0.0, 0.0, 3.0]])
    # row 2 stored with its columns reversed (unsorted), row 3 with an explicit zero
    Xs = sp.csr_matrix((np.array([2.0, -1.0, 1.5, 0.0, 3.0]), np.array([1, 2, 0, 1, 2]),
                        np.array([0, 1, 1, 3, 5])), shape=(4, 3))
    np.testing.assert_array_equal(Xs.toarray(), X)
    code = LocalCode(np.array([[0, 2], [1, 3], [0, 1], [2, 3]], np.int32),
                     np.array([[0.6, 0.4], [0.5, 0.5], [0.9, 0.1], [0.3, 0.7]]))
    Zs, Zd = build_kronecker(Xs, code, 4), build_kronecker(X, code, 4)
    np.testing.assert_allclose(Zs.toarray(), Zd.toarray(), rtol=0, atol=0)
    bias = [j * 4 + 3 for j in range(4)]  # the last column of each anchor's block
    np.testing.assert_array_equal(Zs.toarray()[:, bias], code.to_dense(4))
    assert Zs[1].nnz == 2 and sorted(Zs[1].indices) == [bias[1], bias[3]]  # x = 0: only biases
    assert Zs.has_sorted_indices and np.all(np.diff(Zs.indices[Zs.indptr[2]:Zs.indptr[3]]) > 0)
