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
    assert info["param_lambda_"] == [1.0, 1e-2, 1e-4] and info["folds"] == 3
    scores = info["mean_test_score"]
    best = info["param_lambda_"][int(np.argmax(scores))]
    assert cv.fit_info_["selected"] == {"lambda_": best} and best == cv.fit_info_["sgd"]["lambda"]
    assert scores[0] < max(scores)  # λ = 1 underfits xor
    assert info["at_grid_edge"] == ([] if best == 1e-2 else ["lambda_"])
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
    assert info["param_C"] == [1e-3, 1.0, 1e3]
    C = info["param_C"][int(np.argmax(info["mean_test_score"]))]
    assert cv.fit_info_["selected"] == {"C": C} == info["params"][info["best_index"]]
    assert info["at_grid_edge"] == ([] if C == 1.0 else ["C"])


def test_svm_knn_local_C(xor):
    X, y = xor
    one = SVMKNNClassifier(n_neighbors=10, C=None, C_grid=(1.0,)).fit(X, y)
    assert one.fit_info_["cv"] is None and one.C_ == 1.0
    cv = SVMKNNClassifier(n_neighbors=None, C=None, K_grid=(5, 20), C_grid=(0.01, 10.0),
                          random_state=0).fit(X, y)
    results = cv.fit_info_["cv"]
    assert results["params"] == [{"n_neighbors": 5, "C": 0.01}, {"n_neighbors": 5, "C": 10.0},
                                 {"n_neighbors": 20, "C": 0.01}, {"n_neighbors": 20, "C": 10.0}]
    best = results["params"][int(np.argmax(results["mean_test_score"]))]
    assert (cv.n_neighbors_, cv.C_) == (best["n_neighbors"], best["C"])
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
    # LL-SVM / OCC (recorded at fit) and SVM-KNN records before the one results table
    assert grid_edges({"cv": {"lambda": 1e-4, "accuracy": {"0.0001": 0.9, "0.01": 0.8},
                              "at_grid_edge": ["lambda_"]}}) == ["lambda_"]
    knn = {"selected": {"n_neighbors": 20, "C": 1.0},
           "cv": {"results": [{"K": k, "C": c, "accuracy": 0.5}
                              for k in (5, 20, 80) for c in (1.0, 10.0)]}}
    assert grid_edges(knn) == ["C"]
    # the results table (llc_bench.models.grid_search.record): its at_grid_edge
    assert grid_edges({"selected": {"C": 1.0}, "cv": {"params": [{"C": 1.0}, {"C": 2.0}],
                                                      "at_grid_edge": ["C"]}}) == ["C"]
