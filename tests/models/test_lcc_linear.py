"""LLC codes (Wang et al. 2010, approximated encoding) and LCCLinearSVMClassifier."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import compose_run, xor

import llc_bench.coding.local as local
from llc_bench.coding.llc import llc_codes
from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator
from llc_bench.models.lcc_linear import LCCLinearSVMClassifier
from llc_bench.models.linear import LinearSVMClassifier


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 6)), rng.normal(size=(15, 6))


def reference_llc(X, V, k, reg):
    """Wang et al.'s approximated encoding, one row at a time (dense (n, m) codes)."""
    G = np.zeros((len(X), len(V)))
    for i, x in enumerate(X):
        nearest = np.argsort(((V - x) ** 2).sum(axis=1))[:k]
        Z = V[nearest] - x
        C = Z @ Z.T
        C += reg * np.trace(C) * np.eye(k)
        c = np.linalg.solve(C, np.ones(k))
        G[i, nearest] = c / c.sum()
    return G



@pytest.mark.parametrize("k,reg", [(1, 1e-4), (4, 1e-4), (7, 1e-2)])
def test_codes_match_the_per_row_reference(data, k, reg):
    X, V = data
    code = llc_codes(X, V, k=k, reg=reg)
    assert code.indices.shape == code.weights.shape == (60, k)
    assert np.all(np.diff(code.indices, axis=1) > 0)
    np.testing.assert_allclose(code.to_dense(len(V)), reference_llc(X, V, k, reg), atol=1e-10)
    np.testing.assert_allclose(code.weights.sum(axis=1), 1.0, rtol=1e-12)
    if k > 1:
        assert (code.weights < 0).any()  # LLC weights are signed


def test_codes_are_csr_with_k_entries_a_row(data):
    X, V = data
    y = (X[:, 0] > 0).astype(int)
    est = LCCLinearSVMClassifier(n_anchors=15, k=4, C=1.0).fit(X, y)
    Z = est._codes(X)
    assert sp.issparse(Z) and Z.format == "csr" and Z.shape == (60, 15)
    np.testing.assert_array_equal(np.diff(Z.indptr), 4)
    np.testing.assert_allclose(np.asarray(Z.sum(axis=1)).ravel(), 1.0, rtol=1e-12)


def test_sample_on_an_anchor_is_coded_by_it(data):
    _, V = data
    # k = 4 <= D + 1 = 7: the nearest anchors are affinely independent, weight 1 - O(k² reg)
    code = llc_codes(V, V, k=4, reg=1e-4)
    G = code.to_dense(len(V))
    assert np.all(np.diag(G) > 1 - 1e-2)
    np.testing.assert_array_equal(G.argmax(axis=1), np.arange(len(V)))
    # all k nearest anchors on x (duplicated anchors): tr(C) = 0 -> uniform weights
    dup = llc_codes(np.ones((2, 3)), np.ones((5, 3)), k=3)
    np.testing.assert_allclose(dup.weights, 1 / 3)


def test_dense_sparse_chunked_agree(data, monkeypatch):
    X, V = data
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    ref = llc_codes(X, V, k=5)
    monkeypatch.setattr(local, "CHUNK_ENTRIES", 7 * 5 * 6)  # 7-row chunks in the solve
    for Xin in (X, sp.csr_matrix(X)):
        got = llc_codes(Xin, V, k=5)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_allclose(got.weights, ref.weights, rtol=1e-10, atol=1e-12)


def test_invariant_to_translation_and_scale(data):
    X, V = data
    a = llc_codes(X, V, k=5).weights
    b = llc_codes(3.0 * X + 7.0, 3.0 * V + 7.0, k=5).weights
    np.testing.assert_allclose(a, b, atol=1e-8)


def test_bad_reg_and_k_capped(data):
    X, V = data
    with pytest.raises(ConfigError):
        llc_codes(X, V, reg=0.0)
    assert llc_codes(X, V[:3], k=5).k == 3


def test_solves_xor_where_a_linear_svm_cannot():
    X, y = xor(400)
    Xt, yt = xor(400, seed=1)
    linear = LinearSVMClassifier(C=1.0).fit(X, y).score(Xt, yt)
    lcc = LCCLinearSVMClassifier(n_anchors=32, k=3, C_grid=(0.5, 8.0)).fit(X, y)
    assert linear < 0.7
    assert lcc.score(Xt, yt) > 0.9
    assert lcc.fit_info_["selected"]["C"] in (0.5, 8.0)
    assert set(lcc.fit_info_["timings"]) == {"anchors", "encode", "cv", "train"}
    assert lcc.fit_info_["model_size"]["n_anchors"] == 32


def test_multiclass_scores_and_determinism():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0] * X[:, 1], [-0.3, 0.3])  # 3 classes, not linearly separable
    a = LCCLinearSVMClassifier(n_anchors=20, k=3, C=2.0, random_state=5).fit(X, y)
    b = LCCLinearSVMClassifier(n_anchors=20, k=3, C=2.0, random_state=5).fit(X, y)
    assert a.decision_function(X).shape == (300, 3)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.anchors_, b.anchors_)


def test_runner_passes_the_llc_coding_keys(tmp_path):
    cfg = compose_run("model=lcc_svm_lcc", "coding.n_anchors=4096", "seed=7", tmp_path=tmp_path)
    est = build_estimator(cfg)
    assert isinstance(est, LCCLinearSVMClassifier)
    p = est.get_params()
    assert (p["n_anchors"], p["k"], p["reg"], p["anchor_method"]) == (4096, 5, 1e-4, "kmeans")
    assert p["C"] is None and p["random_state"] == 7


