"""Linear SVM baselines on LIBLINEAR: L2-regularised hinge (``-s 3``) and
Crammer-Singer multi-class (``-s 4``, the papers' MC-Liblinear)."""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import StrOptions

from llc_bench.models import grid_search
from llc_bench.models._base import LinearOnFeaturesMixin, linear_scores, store_params
from llc_bench.models._validation import (
    FINITE,
    FOLDS,
    POSITIVE,
    Grid,
    SparseInputMixin,
    check_fit_data,
    labels_from_scores,
    validate_params,
)
from llc_bench.models.liblinear_fit import SOLVERS, fit_liblinear

DEFAULT_C_GRID = tuple(2.0 ** np.arange(-5, 11, 2))


def C_candidates(C_grid) -> list[dict]:
    """The candidates of a C grid, in its order."""
    return [{"C": float(C)} for C in C_grid]


def given_C(C, C_grid) -> float | None:
    """C as given, or a one-value grid's value (nothing to choose: no CV); None when the
    grid's CV chooses it."""
    if C is not None:
        return float(C)
    return float(C_grid[0]) if len(C_grid) == 1 else None


def linear_model_size(coef, intercept, n_features: int) -> dict:
    """``fit_info_["model_size"]`` of linear models (one per output) on the features."""
    coef = np.asarray(coef)
    return {"n_parameters": int(coef.size + np.size(intercept)),
            "n_outputs": int(1 if coef.ndim == 1 else coef.shape[-2]),
            "n_features": int(n_features)}


def subsample_rows(y, max_rows, seed) -> np.ndarray | None:
    """The sorted indices of at most ``max_rows`` rows for hyper-parameter CV, drawn
    stratified by the seed (plain shuffled where a class has one row); None when
    ``max_rows`` is None or not smaller than n."""
    if max_rows is None or len(y) <= int(max_rows):
        return None
    one_row_class = np.unique(y, return_counts=True)[1].min() < 2
    keep, _ = train_test_split(np.arange(len(y)), train_size=int(max_rows),
                               stratify=None if one_row_class else y, random_state=seed)
    return np.sort(keep)


def cv_subsample(X, y, max_rows, seed):
    """At most ``max_rows`` rows of ``(X, y)`` for hyper-parameter CV (:func:`subsample_rows`;
    all rows when ``max_rows`` is None or not smaller than n)."""
    keep = subsample_rows(y, max_rows, seed)
    return (X, y) if keep is None else (X[keep], y[keep])


class LinearSVMClassifier(LinearOnFeaturesMixin, SparseInputMixin, ClassifierMixin,
                          BaseEstimator):
    """Linear SVM trained by LIBLINEAR (Fan et al., 2008).

    Parameters
    ----------
    C : float or None, default None
        LIBLINEAR's C; None chooses it by ``cv_folds``-fold cross-validation over
        ``C_grid`` on the training data (the papers' protocol).
    solver : {"l2_hinge", "crammer_singer"}, default "l2_hinge"
        ``-s 3`` (one-vs-rest for multi-class) or ``-s 4`` (Crammer & Singer).
    cv_folds : int, default 5
        Folds of that cross-validation (stratified).
    C_grid : sequence of float
        The values of C the cross-validation chooses from (one value: that C, no CV).
    cv_max_rows : int or None, default None
        Run the CV on a stratified subsample of at most this many rows (the final fit
        uses all rows).
    bias : float, default 1.0
        LIBLINEAR's bias feature (``-B bias``), regularised like the weights.
    random_state : int, default 0
        Seeds the CV folds and LIBLINEAR's shuffling.
    """

    #: the declared search space (conf/search/linear.yaml) SearchCV takes by default
    search_space = "linear"

    _parameter_constraints = {
        "C": [POSITIVE, None], "solver": [StrOptions(set(SOLVERS))], "cv_folds": [FOLDS],
        "C_grid": [Grid(POSITIVE)], "cv_max_rows": [FOLDS, None], "bias": [FINITE],
        "random_state": ["random_state"],
    }

    def __init__(self, *, C=None, solver="l2_hinge", cv_folds=5, C_grid=DEFAULT_C_GRID,
                 cv_max_rows=None, bias=1.0, random_state=0):
        store_params(self, locals())

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        binary = len(self.classes_) == 2
        return {"coef_": "features" if binary else "outputs features",
                "intercept_": "" if binary else "outputs"}

    def _fit_once(self, X, y, C):
        return fit_liblinear(X, y, C=C, solver=self.solver, bias=self.bias,
                             seed=self.random_state or 0)

    def fit(self, X, y, eval_set=None):
        validate_params(self)
        X, y = check_fit_data(self, X, y)
        seed = self.random_state or 0
        t0 = time.perf_counter()
        cv = None
        self.C_ = given_C(self.C, self.C_grid)
        if self.C_ is None:
            def fit_fold(Xf, yf, params):
                W, b = self._fit_once(Xf, yf, params["C"])
                return lambda Xv: labels_from_scores(np.arange(len(self.classes_)),
                                                     linear_scores(Xv, W, b))

            X_cv, y_cv = cv_subsample(X, y, self.cv_max_rows, seed)
            cv = grid_search.record(grid_search.kfold_search(
                X_cv, y_cv, C_candidates(self.C_grid), self.cv_folds, seed, fit_fold), len(y_cv))
            self.C_ = cv["params"][cv["best_index"]]["C"]
        t1 = time.perf_counter()
        self.coef_, self.intercept_ = self._fit_once(X, y, self.C_)
        t2 = time.perf_counter()
        self.fit_info_ = {
            "timings": {"cv": t1 - t0, "train": t2 - t1},
            "selected": {"C": self.C_},
            "cv": cv,
            "model_size": linear_model_size(self.coef_, self.intercept_, X.shape[1]),
        }
        return self
