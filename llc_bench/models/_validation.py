"""Boundary validation shared by the estimators (plain numpy inside)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data


def check_fit_data(estimator, X, y, *, accept_sparse=("csr",)):
    """Validate ``X, y`` for fit; set ``classes_`` and return (X, y encoded 0..K-1)."""
    X, y = validate_data(estimator, X, y, accept_sparse=accept_sparse, dtype=np.float64,
                         order="C")
    check_classification_targets(y)
    estimator.classes_, y_index = np.unique(y, return_inverse=True)
    if len(estimator.classes_) < 2:
        raise ValueError(
            f"{type(estimator).__name__} needs at least 2 classes in y; got 1 class: "
            f"{estimator.classes_[0]!r}")
    return X, y_index.astype(np.int64)


def check_predict_data(estimator, X, *, accept_sparse=("csr",)):
    """Validate ``X`` for predict / decision_function (fitted estimator)."""
    return validate_data(estimator, X, accept_sparse=accept_sparse, dtype=np.float64,
                         order="C", reset=False)


def labels_from_scores(classes, scores):
    """Class labels from a binary decision value (n,) or per-class scores (n, K)."""
    if scores.ndim == 1:
        return classes[(scores > 0).astype(np.intp)]
    return classes[np.argmax(scores, axis=1)]


class SparseInputMixin:
    """Declares to scikit-learn that ``fit``/``predict`` accept CSR input."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
