"""The estimators' own grid CVs: one loop, SearchCV's results table, the first best."""

import json

import numpy as np
import pytest
from conftest import blobs
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC

from llc_bench.models import KernelSVMClassifier, LinearSVMClassifier, grid_search
from llc_bench.models.kernel import _scale_gamma
from llc_bench.selection.search import cv_results


def test_the_table_has_search_cvs_columns():
    params = [{"C": 1.0}, {"C": 10.0}]
    table = grid_search.results_table(params, [[0.5, 0.7], [0.6, 0.6]], fit_seconds=[2.0, 4.0])
    splits, seconds = ([0.5, 0.7], [0.6, 0.6]), (2.0, 4.0)
    trials = [{"number": i, "params": p, "score": float(np.mean(s)), "split_scores": s,
               "folds_scored": 2, "seconds": t}
              for i, (p, s, t) in enumerate(zip(params, splits, seconds, strict=True))]
    searched = cv_results(trials, {0: "COMPLETE", 1: "COMPLETE"}, 2)
    assert list(table) == list(searched) == [
        "params", "param_C", "split0_test_score", "split1_test_score", "mean_test_score",
        "rank_test_score", "mean_fit_time", "state"]
    for key in table:
        np.testing.assert_array_equal(np.asarray(table[key], dtype=object),
                                      np.asarray(searched[key], dtype=object))
    assert list(table["rank_test_score"]) == [1, 1] and list(table["mean_fit_time"]) == [1, 2]


def test_ties_go_to_the_first_candidate_and_edges_are_named():
    params = [{"K": k, "C": c} for k in (5, 10, 20) for c in (0.1, 1.0)]
    scores = [[0.8], [0.9], [0.9], [0.7], [0.9], [0.6]]
    table = grid_search.results_table(params, scores, fit_seconds=[1.0] * 6)
    assert grid_search.best_index(table) == 1
    assert grid_search.at_grid_edge(params, 1) == ["K", "C"]
    assert grid_search.at_grid_edge(params, 2) == ["C"]
    assert grid_search.at_grid_edge([{"C": 1.0}], 0) == []  # one value: no edge
    record = grid_search.record(table, 40, protocol="leave-one-out")
    assert json.loads(json.dumps(record)) == record  # JSON-ready: lists, not arrays
    assert (record["best_index"], record["folds"], record["rows"]) == (1, 1, 40)
    assert record["protocol"] == "leave-one-out" and record["at_grid_edge"] == ["K", "C"]


def test_the_loop_scores_candidates_in_order_with_one_progress_bar(monkeypatch):
    bars = []

    class Bar:
        def __init__(self, **kw):
            bars.append(kw)
            self.n = 0

        def update(self, k=1):
            self.n += k

        def close(self):
            bars.append(self.n)

    monkeypatch.setattr(grid_search.progress, "bar", Bar)
    seen = []
    table = grid_search.search_grid([{"a": 1}, {"a": 2}],
                                    lambda p: (seen.append(p["a"]) or p["a"] / 10 for _ in "xyz"),
                                    3)
    assert seen == [1, 1, 1, 2, 2, 2]
    assert bars == [{"total": 6, "desc": "CV folds x grid", "unit": "fit"}, 6]
    assert list(table["mean_test_score"]) == pytest.approx([0.1, 0.2])


def test_kernel_cv_chooses_and_scores_as_gridsearchcv():
    """The loop replaced scikit-learn's GridSearchCV: the same folds, SVC fits, means."""
    X, y = blobs(3, n=150, seed=8)
    Cs, factors = (0.1, 1.0, 10.0), (0.3, 1.0, 3.0)
    model = KernelSVMClassifier(C_grid=Cs, gamma_factors=factors, random_state=1).fit(X, y)
    gammas = [_scale_gamma(X) * f for f in factors]
    search = GridSearchCV(SVC(kernel="rbf", cache_size=1000.0, tol=1e-3),
                          {"C": list(Cs), "gamma": gammas}, refit=False,
                          cv=StratifiedKFold(5, shuffle=True, random_state=1)).fit(X, y)
    cv = model.fit_info_["cv"]
    assert cv["params"] == search.cv_results_["params"]
    assert cv["mean_test_score"] == list(search.cv_results_["mean_test_score"])
    assert cv["params"][cv["best_index"]] == search.best_params_
    assert (model.C_, model.gamma_) == (search.best_params_["C"], search.best_params_["gamma"])


def test_linear_cv_is_the_kfold_loop():
    X, y = blobs(2, n=120, seed=3)
    model = LinearSVMClassifier(C_grid=(0.01, 1.0), cv_folds=4, random_state=2).fit(X, y)
    cv = model.fit_info_["cv"]
    assert cv["folds"] == 4 and cv["protocol"] == "4-fold" and cv["rows"] == 120
    assert [p["C"] for p in cv["params"]] == cv["param_C"] == [0.01, 1.0]
    assert model.fit_info_["selected"] == cv["params"][cv["best_index"]]
