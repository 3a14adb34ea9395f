"""RBF kernel SVM baseline on LIBSVM (Chang & Lin, 2011) through scikit-learn.

scikit-learn's ``SVC`` is LIBSVM's solver; we use it rather than
libsvm-official because it predicts a whole test matrix in C (libsvm-official
predicts row by row in Python, docs/design.md §Released code) and takes numpy / CSR arrays as they
are.  Multi-class is LIBSVM's native one-vs-one; its decision values are votes,
not per-class margins, so no hinge loss is defined for it (``hinge_defined_``).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

from llc_bench.models import grid_search
from llc_bench.models._base import store_params
from llc_bench.models._validation import (
    FOLDS,
    POSITIVE,
    Grid,
    InvalidParameter,
    SparseInputMixin,
    check_fit_data,
    check_predict_data,
    labels_from_scores,
    validate_params,
)
from llc_bench.models.linear import cv_subsample

DEFAULT_C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
DEFAULT_GAMMA_FACTORS = (0.1, 0.3, 1.0, 3.0, 10.0)


def _scale_gamma(X) -> float:
    """LIBSVM's customary 1 / (D · Var(X)) (scikit-learn's ``gamma="scale"``)."""
    var = X.multiply(X).mean() - X.mean() ** 2 if hasattr(X, "multiply") else X.var()
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def gamma_candidates(model, X) -> list[float]:
    """The RBF γ values a model fits or cross-validates on ``X``: its ``gamma`` as is, else
    ``gamma_scale`` / (D · Var(X)), else each of ``gamma_factors`` / (D · Var(X))."""
    if model.gamma is not None:
        return [float(model.gamma)]
    factors = model.gamma_factors if model.gamma_scale is None else [model.gamma_scale]
    return [_scale_gamma(X) * float(f) for f in factors]


def check_one_gamma(model) -> None:
    """``gamma`` and ``gamma_scale`` both given: one error naming ``gamma_scale``."""
    if model.gamma is not None and model.gamma_scale is not None:
        raise InvalidParameter(type(model).__name__, "gamma_scale", model.gamma_scale,
                               reason=f"give it or gamma (={model.gamma!r}), not both")


def _stored_values(M) -> int:
    """The numbers a dense or sparse matrix stores."""
    return int(M.nnz if hasattr(M, "nnz") else M.size)


class KernelSVMClassifier(SparseInputMixin, ClassifierMixin, BaseEstimator):
    """RBF kernel SVM (LIBSVM through scikit-learn's ``SVC``).

    Parameters
    ----------
    C : float or None, default None
        The SVM's C; None chooses it (with ``gamma``) by ``cv_folds``-fold
        cross-validation over ``C_grid`` x ``gamma_factors`` on the training data.
    gamma : float or None, default None
        The RBF γ, used as is; None: ``gamma_scale``, or that cross-validation.
    gamma_scale : float or None, default None
        The RBF γ in units of 1 / (D · Var(X)) (scikit-learn's ``gamma="scale"`` at 1),
        when ``gamma`` is None; None chooses γ by that cross-validation.
    cv_folds : int, default 5
        Folds of that cross-validation (stratified).
    C_grid : sequence of float
        The values of C the cross-validation chooses from.
    gamma_factors : sequence of float
        The values of γ it chooses from, in units of 1 / (D · Var(X)).
    cv_max_rows : int or None, default None
        Run the CV on a stratified subsample of at most this many rows (the final fit
        uses all rows).
    cache_size : float, default 1000
        MB of LIBSVM's kernel cache.
    tol : float, default 1e-3
        LIBSVM's stopping tolerance.
    random_state : int, default 0
        Seeds the CV subsample and folds.
    """

    #: the declared search space (conf/search/kernel.yaml) SearchCV takes by default
    search_space = "kernel"

    _parameter_constraints = {
        "C": [POSITIVE, None], "gamma": [POSITIVE, None], "gamma_scale": [POSITIVE, None],
        "cv_folds": [FOLDS],
        "C_grid": [Grid(POSITIVE)], "gamma_factors": [Grid(POSITIVE)],
        "cv_max_rows": [FOLDS, None], "cache_size": [POSITIVE], "tol": [POSITIVE],
        "random_state": ["random_state"],
    }

    def __init__(self, *, C=None, gamma=None, gamma_scale=None, cv_folds=5, C_grid=DEFAULT_C_GRID,
                 gamma_factors=DEFAULT_GAMMA_FACTORS, cv_max_rows=None, cache_size=1000.0,
                 tol=1e-3, random_state=0):
        store_params(self, locals())

    def _check_param_combinations(self):
        check_one_gamma(self)

    def fit(self, X, y, eval_set=None):
        validate_params(self)
        X, y = check_fit_data(self, X, y)
        t0 = time.perf_counter()
        C_values = list(self.C_grid) if self.C is None else [float(self.C)]
        gammas = gamma_candidates(self, X)
        svc = SVC(kernel="rbf", cache_size=self.cache_size, tol=self.tol)
        cv = None
        if len(C_values) * len(gammas) > 1:
            X_cv, y_cv = cv_subsample(X, y, self.cv_max_rows, self.random_state)

            def fit_fold(Xf, yf, params):
                return clone(svc).set_params(**params).fit(Xf, yf).predict

            candidates = [{"C": float(C), "gamma": float(g)} for C in C_values for g in gammas]
            cv = grid_search.record(grid_search.kfold_search(
                X_cv, y_cv, candidates, self.cv_folds, self.random_state, fit_fold), len(y_cv))
            best = cv["params"][cv["best_index"]]
        else:
            best = {"C": C_values[0], "gamma": gammas[0]}
        t1 = time.perf_counter()
        self.svc_ = svc.set_params(**best).fit(X, y)
        t2 = time.perf_counter()
        self.C_, self.gamma_ = float(best["C"]), float(best["gamma"])
        self.hinge_defined_ = len(self.classes_) == 2
        svm = self.svc_
        self.fit_info_ = {
            "timings": {"cv": t1 - t0, "train": t2 - t1},
            "selected": {"C": self.C_, "gamma": self.gamma_},
            "cv": cv,
            # the dual coefficients and intercepts of the one-vs-one machines; the
            # support vectors they weight are counted apart
            "model_size": {"n_parameters": int(svm.dual_coef_.size + svm.intercept_.size),
                           "n_outputs": int(svm.intercept_.size), "n_features": int(X.shape[1]),
                           "n_support_vectors": int(svm.support_.size),
                           "n_support_values": _stored_values(svm.support_vectors_)},
        }
        return self

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        n = len(self.classes_)
        coef = "float|csr" if getattr(self.svc_, "_sparse", False) else "float"
        return {"svc_": (SVC,), "svc_.support_vectors_": coef + ": vectors features",
                "svc_.support_": "int: vectors", "svc_._n_support": "int: classes",
                "svc_.dual_coef_": f"{coef}: {n - 1} vectors",
                "svc_._dual_coef_": f"{coef}: {n - 1} vectors",
                "svc_.intercept_": f"{n * (n - 1) // 2}", "svc_._intercept_": f"{n * (n - 1) // 2}",
                "svc_._probA": "0", "svc_._probB": "0", "svc_.classes_": "int: classes",
                "svc_._gamma": "number", "svc_._sparse": "bool"}

    def _check_fitted(self):
        """What libsvm reads unchecked: the support vectors per class, the kernel."""
        import scipy.sparse as sp

        svc = self.svc_
        svc._validate_params()
        counts = np.asarray(svc._n_support)
        if counts.min() < 0 or counts.sum() != svc.support_vectors_.shape[0]:
            raise ValueError("svc_._n_support does not count svc_.support_vectors_")
        if svc.kernel != "rbf" or svc._effective_probability \
                or svc._sparse != sp.issparse(svc.support_vectors_) \
                or tuple(svc.shape_fit_)[1:] != (self.n_features_in_,) \
                or not np.array_equal(svc.classes_, np.arange(len(self.classes_))):
            raise ValueError("svc_ is not an RBF SVM of the model's classes and features")

    def decision_function(self, X):
        """Binary: (n,) margin for ``classes_[1]``; multi-class: (n, K) one-vs-one
        votes (``decision_function_shape="ovr"``), which rank but are not margins."""
        check_is_fitted(self, "svc_")
        X = check_predict_data(self, X)
        return self.svc_.decision_function(X)

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return labels_from_scores(self.classes_, scores)
        return self.classes_[self.svc_.predict(check_predict_data(self, X))]
