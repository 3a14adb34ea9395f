"""What the estimators share: parameters stored as given, labels from decision values,
the linear model (``coef_``, ``intercept_``) on a feature map of the baselines, and the
deadline a selection's trial is fitted under."""

from __future__ import annotations

import contextlib
import contextvars
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
    """A fit stopped between two iterations because the block's deadline had passed."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("fit_deadline",
                                                                        default=None)


@contextlib.contextmanager
def fit_deadline(deadline: float | None):
    """Inside the block, an iterative fit (the SGD epochs, ML3's CCCP iterations) raises
    :class:`FitDeadline` at its next iteration once ``time.time()`` is past ``deadline``:
    a selection's trial that would end past its budget (ML3 on letter: 6.9 s at one
    lambda, 18.5 s at another, same models) is given up, not waited for.  None: no
    deadline.  Outside such a block nothing changes."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise :class:`FitDeadline` if the enclosing :func:`fit_deadline` has passed."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.time() > deadline:
        raise FitDeadline(f"past the deadline by {time.time() - deadline:.1f}s")


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
