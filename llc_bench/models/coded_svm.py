"""A linear SVM on the codes γ(x) of a coding over k-means anchors (the LCC rows' model).

LCC's linearisation lemma (Yu, Zhang & Gong, NIPS 2009; restated as Lemma 1 in the OCC paper §2.1)
approximates a smooth f by a function linear in the code, f(x) ≈ Σ_v γ_v(x) f(v), so the
classifier is LIBLINEAR on the m-dimensional codes: f(x) = wᵀγ(x) + b (LL-SVM eq. 15).
:class:`CodedLinearSVM` is that classifier for any coding: a subclass names its
parameters and implements ``_codes`` (the (n, m) CSR codes of X over ``anchors_``),
``_fit_coding`` (its state after the anchors) and ``_coding_info`` (``fit_info_["coding"]``).
Anchors by k-means on the training split; C by ``cv_folds``-fold CV on the training codes
(anchors and codes are unsupervised and computed once on the whole split, so the folds
share them: see :mod:`llc_bench.models.lcc_linear` for what that does to the CV).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..coding.anchors import ANCHOR_METHODS, fit_anchors
from . import _validation as checks
from . import grid_search
from ._base import LinearOnFeaturesMixin, TrialCache, linear_scores
from .liblinear_fit import SOLVERS, fit_liblinear
from .linear import C_candidates, given_C, linear_model_size

#: the constraints of the parameters every coded SVM shares
SVM_CONSTRAINTS = {
    "anchor_method": [StrOptions(set(ANCHOR_METHODS))], "C": [checks.POSITIVE, None],
    "C_grid": [checks.Grid(checks.POSITIVE)], "cv_folds": [checks.FOLDS],
    "solver": [StrOptions(set(SOLVERS))], "bias": [checks.FINITE], "random_state": ["random_state"],
}


class CodedLinearSVM(LinearOnFeaturesMixin, checks.SparseInputMixin, ClassifierMixin,
                     BaseEstimator):
    """Base class: LIBLINEAR on codes over anchors (parameters: the subclass's)."""

    def _features(self, X):
        return self._codes(X)

    def _codes(self, X, info: dict | None = None, memo: list | None = None):
        """The (n, m) CSR codes of X; ``info`` receives the coding's counts, if any;
        ``memo``: the neighbour searches shared (``coding.local.knn_sq_distances``)."""
        raise NotImplementedError

    def _fit_coding(self, X):
        """The coding's state once ``anchors_`` is set (default: none)."""

    def _coding_info(self, counts: dict) -> dict:
        """``fit_info_["coding"]``: the formulation, its parameters, the training counts."""
        raise NotImplementedError

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        binary = len(self.classes_) == 2
        return {"coef_": "anchors" if binary else "outputs anchors",
                "intercept_": "" if binary else "outputs", "anchors_": "anchors features",
                **self._fitted_coding}

    def predict(self, X, *, trial_cache=None):
        """The labels of X; ``trial_cache``: a search's trial scoring its validation rows
        shares their neighbour search with the trials of the same anchors and k."""
        check_is_fitted(self, "coef_")
        X = checks.check_predict_data(self, X)
        memo = None if trial_cache is None else trial_cache.distances
        scores = linear_scores(self._codes(X, memo=memo), self.coef_, self.intercept_)
        return checks.labels_from_scores(self.classes_, np.asarray(scores))

    #: The coding's fitted numbers (the subclass's).
    _fitted_coding: dict = {}

    def _fit_codes(self, Z, y, C, seed):
        return fit_liblinear(Z, y, C=C, solver=self.solver, bias=self.bias, seed=seed)

    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """Anchors, training codes, C by CV (C=None), then LIBLINEAR on the codes.
        ``trial_cache`` (``_base.TrialCache``, a search's trial): the anchors and neighbour
        searches it shares, its anchor rows.

        ``fit_info_``: timings ("anchors": k-means and the coding's own anchor steps, "encode",
        "cv", "train"), "selected" (C), "cv" (the CV's results table, C=None),
        "model_size", "anchors" (k-means info), "coding" (the formulation and
        parameters used).
        """
        checks.validate_params(self)
        X, y = checks.check_fit_data(self, X, y)
        seed = self.random_state or 0
        cache = TrialCache(memo=False) if trial_cache is None else trial_cache
        t0 = time.perf_counter()
        self.anchors_, anchor_info = fit_anchors(X, self.n_anchors, method=self.anchor_method,
                                                 y=y, random_state=seed, memo=cache.anchors,
                                                 rows=cache.anchor_rows)
        self._fit_coding(X)
        t1 = time.perf_counter()
        counts: dict = {}
        Z = self._codes(X, counts, memo=cache.distances)
        t2 = time.perf_counter()
        cv = None
        self.C_ = given_C(self.C, self.C_grid)
        if self.C_ is None:
            labels = np.arange(len(self.classes_))

            def fit_fold(Zf, yf, params):
                W, b = self._fit_codes(Zf, yf, params["C"], seed)
                return lambda Zv: checks.labels_from_scores(labels,
                                                            np.asarray(linear_scores(Zv, W, b)))

            cv = grid_search.record(grid_search.kfold_search(
                Z, y, C_candidates(self.C_grid), self.cv_folds, seed, fit_fold), len(y))
            self.C_ = cv["params"][cv["best_index"]]["C"]
        t3 = time.perf_counter()
        self.coef_, self.intercept_ = self._fit_codes(Z, y, self.C_, seed)
        t4 = time.perf_counter()
        m = self.anchors_.shape[0]
        coding = self._coding_info(counts)
        self.fit_info_ = {
            "timings": {"anchors": t1 - t0, "encode": t2 - t1, "cv": t3 - t2, "train": t4 - t3},
            "selected": {"C": self.C_},
            "cv": cv,
            "model_size": {**linear_model_size(self.coef_, self.intercept_, X.shape[1]),
                           "n_anchors": m, **({"k": coding["k"]} if "k" in coding else {})},
            "anchors": anchor_info,
            "coding": coding,
        }
        return self
