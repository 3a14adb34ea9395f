"""The training objective, written once: λ/2 ||θ||² + the mean loss of the training rows.

LL-SVM eq. 9 (θ = W, or b for LCC+SVM) with the one-vs-all hinge of LLC-SAPL eq. 21
(:func:`ova_hinge`) for the ``llc_sgd`` models and the OCC planes; ML3 eq. 9 with its
margin losses.  The SGD trainers keep the epoch of the lowest objective and the
histories report it per epoch.
"""

from __future__ import annotations

import numpy as np


def regulariser(lambda_: float, theta: np.ndarray):
    """λ/2 ||θ||² (numpy float64)."""
    return 0.5 * lambda_ * np.dot(theta.ravel(), theta.ravel())


def ova_hinge(Y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Per row Σ_c max(0, 1 - y_c f_c): the one-vs-all hinge of ±1 targets Y and
    decision values F, both (n, n_out)."""
    return np.maximum(0.0, 1.0 - Y * F).sum(axis=1)


def objective(lambda_: float, theta: np.ndarray, losses: np.ndarray) -> float:
    """λ/2 ||θ||² + mean(losses); inf or NaN parameters give inf or NaN, silently (the
    trainers check the objective is finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(regulariser(lambda_, theta) + losses.mean())
