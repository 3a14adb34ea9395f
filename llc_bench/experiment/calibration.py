"""Probabilities for any classifier: its decision values calibrated on held-out training
rows (``calibration=sigmoid|isotonic|auto``), through scikit-learn's
``CalibratedClassifierCV`` (``ensemble=False``: the calibrator is fitted on out-of-fold
decision values of a seeded stratified k-fold of the training rows, one-vs-rest and
normalised for several classes; the model it wraps is the run's model, fitted on all
training rows).  Platt's sigmoid by default, isotonic regression (``auto``) when every
class has at least ``ISOTONIC_MIN_ROWS`` training rows.
"""

from __future__ import annotations

import numpy as np

from llc_bench.errors import ConfigError

METHODS = ("sigmoid", "isotonic", "auto")
ISOTONIC_MIN_ROWS = 1000
FOLDS = 3


def check_setting(setting) -> None:
    if setting is not None and (not isinstance(setting, str) or setting not in METHODS):
        raise ConfigError(f"calibration={setting!r}: expected null, sigmoid, isotonic or auto")


def method_of(setting, y) -> str:
    check_setting(setting)
    if setting != "auto":
        return setting
    smallest = int(np.bincount(np.unique(y, return_inverse=True)[1]).min())
    return "isotonic" if smallest >= ISOTONIC_MIN_ROWS else "sigmoid"


def calibrate(estimator, X, y, setting: str, seed: int):
    """A fitted ``CalibratedClassifierCV`` whose model is ``estimator`` (fitted on all of
    ``(X, y)``): the wrapper's k fold fits give the out-of-fold decision values, and its
    own refit on all rows, the same config and seed as ``estimator``, is replaced by it."""
    from sklearn.base import clone
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold

    method = method_of(setting, y)
    folds = max(2, min(FOLDS, int(np.bincount(np.unique(y, return_inverse=True)[1]).min())))
    trial = clone(estimator)
    if "history" in trial.get_params():
        trial.set_params(history=False)  # monitoring only: the numbers are the same
    wrapper = CalibratedClassifierCV(trial, method=method, ensemble=False,
                                     cv=StratifiedKFold(folds, shuffle=True, random_state=seed))
    wrapper.fit(X, y)
    wrapper.calibrated_classifiers_[0].estimator = estimator
    return wrapper


def probability_metrics(wrapper, X, y, classes) -> dict:
    """Log-loss and Brier score of the calibrated probabilities on ``(X, y)`` (rows whose
    label the training split has; binary: the Brier score of the positive class,
    several classes: the mean over rows of the squared error summed over classes)."""
    from sklearn.metrics import log_loss

    proba = wrapper.predict_proba(X)
    known = np.isin(y, classes)
    proba, y = proba[known], y[known]
    index = np.searchsorted(np.asarray(classes), y)
    onehot = np.zeros_like(proba)
    onehot[np.arange(len(y)), index] = 1.0
    brier = (float(np.mean((proba[:, 1] - onehot[:, 1]) ** 2)) if proba.shape[1] == 2
             else float(np.mean(np.sum((proba - onehot) ** 2, axis=1))))
    return {"test_log_loss": float(log_loss(index, proba, labels=range(proba.shape[1]))),
            "test_brier": brier}
