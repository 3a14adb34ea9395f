"""Boundary validation shared by the estimators (plain numpy inside)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    _Constraint,
    make_constraint,
)
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


# ------------------------------------------------------------------ parameter constraints
# Each estimator declares ``_parameter_constraints`` once (scikit-learn's convention, with
# its Interval / StrOptions); ``validate_params`` checks them at the top of ``fit`` and in
# the runner before any data is loaded.  Intervals that leave a bound open (None) with the
# bound excluded reject inf; every Interval rejects nan.

#: a finite float > 0
POSITIVE = Interval(Real, 0, None, closed="neither")
#: a finite float >= 0
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
#: any finite float
FINITE = Interval(Real, None, None, closed="neither")
#: an int >= 1
COUNT = Interval(Integral, 1, None, closed="left")
#: an int >= 0
COUNT0 = Interval(Integral, 0, None, closed="left")
#: cross-validation folds
FOLDS = Interval(Integral, 2, None, closed="left")
#: The documented range of a regularisation weight (λ): below LAMBDA_MIN the SGD step
#: 1/(λ t) and the LIBLINEAR start's C = 1/(λ N) overflow or lose every digit (1e-320 made
#: every epoch's objective NaN); above LAMBDA_MAX the model is 0 for any standardised data
#: and λ/2 ||w||^2 overflows (1e308).  The committed configs use 1e-8 to 300.
LAMBDA_MIN, LAMBDA_MAX = 1e-12, 1e12
REGULARISATION = Interval(Real, LAMBDA_MIN, LAMBDA_MAX, closed="both")


class Grid(_Constraint):
    """A non-empty list (tuple, array) of values that each satisfy ``interval``."""

    def __init__(self, interval: Interval):
        super().__init__()
        self.interval = interval

    def is_satisfied_by(self, val):
        return (isinstance(val, list | tuple | np.ndarray) and len(val) > 0
                and all(self.interval.is_satisfied_by(v) for v in val))

    def __str__(self):
        return f"a non-empty list, each {describe([self.interval])}"


def _number(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def describe(constraints, none: str = "None") -> str:
    """Plain words for a list of constraints: "a finite float > 0 or None"."""
    words = []
    for c in constraints:
        if c is None:
            words.append(none)
        elif isinstance(c, Interval):
            lo_in, hi_in = c.closed in ("left", "both"), c.closed in ("right", "both")
            if c.type is Integral:
                kind = "an int"
            else:
                finite = not ((c.left is None and lo_in) or (c.right is None and hi_in))
                kind = "a finite float" if finite else "a float"
            if c.left is not None and c.right is not None:
                words.append(f"{kind} in {'[' if lo_in else '('}{_number(c.left)}, "
                             f"{_number(c.right)}{']' if hi_in else ')'}")
            elif c.left is not None:
                words.append(f"{kind} {'>=' if lo_in else '>'} {_number(c.left)}"
                             + (" (inf allowed)" if hi_in else ""))
            elif c.right is not None:
                words.append(f"{kind} {'<=' if hi_in else '<'} {_number(c.right)}")
            else:
                words.append(kind)
        elif isinstance(c, StrOptions):
            words.append(" or ".join(repr(o) for o in sorted(c.options)))
        elif c == "boolean":
            words.append("true or false")
        elif c == "random_state":
            words.append("an int in [0, 2**32 - 1]")
        elif isinstance(c, type):
            words.append(f"a {c.__name__}")
        else:
            words.append(str(c))
    return " or ".join(words)


class InvalidParameter(InvalidParameterError):
    """A constructor parameter that breaks its declared constraints (or a rule tying it
    to another parameter).  A ValueError, as scikit-learn's InvalidParameterError."""

    def __init__(self, owner: str, name: str, value, constraints=(), reason: str = ""):
        self.owner, self.name, self.value = owner, name, value
        self.constraints, self.reason = list(constraints), reason
        super().__init__(f"{owner}: {name}={value!r}: {self.problem()}")

    def __reduce__(self):  # picklable across joblib workers
        return type(self), (self.owner, self.name, self.value, self.constraints, self.reason)

    def problem(self, none: str = "None") -> str:
        """What is wrong, without the parameter's name ("must be a finite float > 0")."""
        return self.reason or f"must be {describe(self.constraints, none)}"


def check_anchor_counts(estimator) -> None:
    """A k-means sample (``kmeans_sample``) of at least n_anchors rows: fewer cannot give
    n_anchors centres (k larger than n_anchors is allowed: all m anchors are active, as
    in the papers' sweeps over m at a fixed k).  The error names n_anchors (a backquoted
    name is a parameter: the runner writes its config key)."""
    sample = estimator.kmeans_sample
    if sample is not None and sample < estimator.n_anchors:
        raise InvalidParameter(
            type(estimator).__name__, "n_anchors", estimator.n_anchors,
            reason=f"more anchors than the `kmeans_sample`={sample} rows k-means places them "
                   f"on: at most {sample}, or `kmeans_sample`=null to place them on every "
                   "training row (n_anchors is capped at the number of training rows)")


def validate_params(estimator) -> None:
    """Check every constructor parameter against ``_parameter_constraints``, then the
    estimator's rules tying parameters together (``_check_param_combinations``).
    Raises :class:`InvalidParameter` naming the first parameter that fails."""
    owner = type(estimator).__name__
    for name, value in estimator.get_params(deep=False).items():
        allowed = estimator._parameter_constraints.get(name)
        if allowed is None:
            continue
        checks = [c if isinstance(c, _Constraint) else make_constraint(c) for c in allowed]
        if isinstance(value, bool | np.bool_):  # a bool is not a number here
            checks = [c for c in checks if not isinstance(c, Interval)]
        if not any(check.is_satisfied_by(value) for check in checks):
            raise InvalidParameter(owner, name, value, allowed)
    combinations = getattr(estimator, "_check_param_combinations", None)
    if combinations is not None:
        combinations()
