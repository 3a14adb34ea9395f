"""What the estimators share: parameters stored as given, labels from decision values,
the linear model (``coef_``, ``intercept_``) on a feature map of the baselines, and what
the trials of a selection share (:class:`TrialCache`)."""

from __future__ import annotations

import copy
import inspect
import time

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._validation import check_predict_data, labels_from_scores


def store_params(estimator, params: dict) -> None:
    """What a scikit-learn ``__init__`` does: each parameter stored under its own name, as
    given (no validation, nothing derived).  ``params`` is the ``__init__``'s ``locals()``."""
    for name, value in params.items():
        if name != "self" and not name.startswith("__"):
            setattr(estimator, name, value)


class FitDeadline(Exception):
    """A fit stopped between two iterations because its trial's deadline had passed."""


class TrialCache:
    """What the trials of one search share, handed to ``fit(..., trial_cache=)``.

    ``deadline`` (``time.time()`` scale, None: none): an iterative fit (the SGD epochs,
    ML3's CCCP iterations) raises :class:`FitDeadline` at its next iteration past it.
    ``anchors`` / ``distances`` (``memo``): the k-means anchors of trials with the same m
    and rule, the neighbour searches of trials with the same anchors and k.
    ``anchor_rows`` (rows, n_rows): anchors of an ``n_rows``-row fit are drawn from those
    rows only (the fit of a choice keeps its trial's anchors).  ``warm_duals``
    (``warm_start``): the dual CD init of a problem solved before at another C starts
    from its duals.  ``eta0_walk``: an η0 calibration walks from the η0 chosen last.
    ``pass_cap``: the dual CD init's passes.  ``calibration_repeats``: the seeded
    subsamples an η0 calibration averages.  None of them is kept by the fitted model."""

    def __init__(self, *, deadline: float | None = None, memo: bool = True,
                 warm_start: bool = False, eta0_walk: bool = False,
                 pass_cap: int | None = None, anchor_rows: tuple | None = None,
                 calibration_repeats: int | None = None):
        self.deadline = deadline
        self.anchors: list | None = [] if memo else None
        self.distances: list | None = [] if memo else None
        self.anchor_rows = (None if anchor_rows is None
                            else (np.asarray(anchor_rows[0]), int(anchor_rows[1])))
        self.warm_duals: dict | None = {} if warm_start else None
        self.eta0_walk: dict | None = {} if eta0_walk else None
        self.pass_cap = None if pass_cap is None else int(pass_cap)
        self.calibration_repeats = (None if calibration_repeats is None
                                    else int(calibration_repeats))

    def with_deadline(self, deadline: float | None) -> TrialCache:
        """The same shared state under another deadline."""
        other = copy.copy(self)
        other.deadline = deadline
        return other


def check_deadline(deadline: float | None) -> None:
    """Raise :class:`FitDeadline` once ``time.time()`` is past ``deadline`` (None: never)."""
    if deadline is not None and time.time() > deadline:
        raise FitDeadline(f"past the deadline by {time.time() - deadline:.1f}s")


def takes_trial_cache(method) -> bool:
    """Whether an estimator's ``fit`` (or ``predict``) takes ``trial_cache=``."""
    return "trial_cache" in inspect.signature(method).parameters


def linear_scores(X, W, b):
    """Decision values X Wᵀ + b of LIBLINEAR weights W (K, D) or w (D,)."""
    return X @ W.T + b if W.ndim == 2 else X @ W + b


class LabelsFromScoresMixin:
    """``predict``: the labels of ``decision_function``'s values (binary: > 0 is
    ``classes_[1]``; multi-class: the largest score)."""

    def predict(self, X):
        scores = self.decision_function(X)  # first: an unfitted estimator says so
        return labels_from_scores(self.classes_, scores)


class LinearOnFeaturesMixin(LabelsFromScoresMixin):
    """A LIBLINEAR model ``coef_``, ``intercept_`` on the features ``_features(X)``."""

    def _features(self, X):
        return X

    def decision_function(self, X):
        """Binary: (n,) scoring ``classes_[1]``; multi-class: (n, K) per-class scores."""
        check_is_fitted(self, "coef_")
        X = check_predict_data(self, X)
        return np.asarray(linear_scores(self._features(X), self.coef_, self.intercept_))
