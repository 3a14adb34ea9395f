"""Hyper-parameters chosen by CV where the papers tuned them: a one-value grid
skips the CV, a multi-value grid records its scores and whether it chose an edge."""

import numpy as np
import pytest

from llc_bench.models import LLSVMClassifier, OCCClassifier
from llc_bench.models.svm_knn import SVMKNNClassifier
from llc_bench.selection.selection import grid_edges


@pytest.fixture(scope="module")
def xor():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    return X, np.where(X[:, 0] * X[:, 1] > 0, "same", "diff")


def test_llc_sgd_lambda_grid(xor):
    X, y = xor
    kw = dict(n_anchors=6, k=3, epochs=2, random_state=0)
    one = LLSVMClassifier(lambda_grid=(1e-3,), **kw).fit(X, y)
    fixed = LLSVMClassifier(lambda_=1e-3, **kw).fit(X, y)
    assert "cv" not in one.fit_info_ and one.fit_info_["timings"]["cv"] < 0.05
    np.testing.assert_array_equal(one.W_, fixed.W_)  # the one value is used as is
    cv = LLSVMClassifier(lambda_grid=(1.0, 1e-2, 1e-4), cv_folds=3, **kw).fit(X, y)
    info = cv.fit_info_["cv"]
    assert set(info["accuracy"]) == {"1.0", "0.01", "0.0001"} and info["folds"] == 3
    best = max(info["accuracy"], key=info["accuracy"].get)
    assert info["lambda"] == float(best) == cv.fit_info_["sgd"]["lambda"]
    assert info["accuracy"]["1.0"] < max(info["accuracy"].values())  # λ = 1 underfits xor
    assert info["at_grid_edge"] == ([] if best == "0.01" else ["lambda_"])
    assert grid_edges(cv.fit_info_) == info["at_grid_edge"]
    sub = LLSVMClassifier(lambda_grid=(1.0, 1e-4), cv_max_rows=60, cv_folds=3, **kw).fit(X, y)
    assert sub.fit_info_["cv"]["rows"] == 60


def test_occ_C_grid(xor):
    X, y = xor
    kw = dict(n_basis=2, random_state=0)
    one = OCCClassifier(C=None, C_grid=(10.0,), **kw).fit(X, y)
    fixed = OCCClassifier(C=10.0, **kw).fit(X, y)
    assert "cv" not in one.fit_info_
    np.testing.assert_array_equal(one.decision_function(X), fixed.decision_function(X))
    cv = OCCClassifier(C=None, C_grid=(1e-3, 1.0, 1e3), cv_folds=3, **kw).fit(X, y)
    info = cv.fit_info_["cv"]
    assert sorted(info["accuracy"]) == [1e-3, 1.0, 1e3]
    assert info["C"] == max(info["accuracy"], key=info["accuracy"].get)
    assert info["at_grid_edge"] == ([] if info["C"] == 1.0 else ["C"])


def test_svm_knn_local_C(xor):
    X, y = xor
    one = SVMKNNClassifier(n_neighbors=10, C=None, C_grid=(1.0,)).fit(X, y)
    assert one.fit_info_["cv"] is None and one.C_ == 1.0
    cv = SVMKNNClassifier(n_neighbors=None, C=None, K_grid=(5, 20), C_grid=(0.01, 10.0),
                          random_state=0).fit(X, y)
    results = cv.fit_info_["cv"]["results"]
    assert {(r["K"], r["C"]) for r in results} == {(5, 0.01), (5, 10.0), (20, 0.01),
                                                   (20, 10.0)}
    best = max(results, key=lambda r: r["accuracy"])
    assert (cv.n_neighbors_, cv.C_) == (best["K"], best["C"])
    assert sorted(grid_edges(cv.fit_info_)) == ["C", "n_neighbors"]  # 2-value grids: edges


def test_grid_edges_reads_every_recorded_shape():
    assert grid_edges({"selected": {"C": 0.03125},
                       "cv_accuracy": {"0.03125": 0.9, "0.5": 0.8, "2.0": 0.7}}) == ["C"]
    assert grid_edges({"selected": {"C": 0.5},
                       "cv_accuracy": {"0.03125": 0.8, "0.5": 0.9, "2.0": 0.7}}) == []
    assert grid_edges({"selected": {"lambda": 1e-5},
                       "cv_error": {"1e-05": 0.1, "1e-04": 0.2}}) == ["lambda"]
    kernel = {"selected": {"C": 10.0, "gamma": 0.5},
              "cv_accuracy": [{"C": c, "gamma": g, "accuracy": 0.5}
                              for c in (1.0, 10.0, 100.0) for g in (0.1, 0.5)]}
    assert grid_edges(kernel) == ["gamma"]
    assert grid_edges({"selected": {"C": 1.0}}) == [] and grid_edges(None) == []
