"""The SGD's schedule and step settings (docs/design.md §SGD schedule): the rate
η_t = 1/(λ(t + t0)), η0, t0, and the SVMSGD2 defaults of the skip and the bias scale.

Defaults (SVMSGD2): t0 = λ^(-3/4); bias_scale "auto" = half the largest mean |x_j| over
features (for ``use_W=False`` "auto" is 1: there b is the regularised weight vector of a
linear SVM on γ, not a bias, so it takes the plain rate η_t); skip = 16 for dense x,
16·D/avg_nnz for CSR x.

The values reach these functions checked (the estimators' ``_parameter_constraints``):
they resolve the defaults, they do not judge the values again.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _sgd_kernel as K

#: Default skip for dense data (docs/design.md §SGD schedule).
DENSE_SKIP = 16

#: ``sgd_dtype`` -> the dtype of the SGD kernels' working copy of W (None: float64).
SGD_DTYPES = {"float64": np.float64, "float32": np.float32}


def eta0_of(lambda_: float, t0: float) -> float:
    """η0 = η_0 = 1/(λ t0), the first step's rate."""
    return K.eta(lambda_, 0, t0)


def t0_of_eta0(lambda_: float, eta0: float) -> float:
    """t0 = 1/(λ η0): :func:`eta0_of` solved for t0 (the same expression)."""
    return K.eta(lambda_, 0, eta0)


def default_t0(lambda_: float) -> float:
    """SVMSGD2: typical |w| = λ^(-1/4) = η0, t0 = 1/(λ η0) = λ^(-3/4)."""
    return float(lambda_**-0.75)


def resolve_t0(t0, lambda_) -> float | None:
    """A number for a fixed schedule, None for "calibrate" (the default, also ``None``)."""
    if t0 is None or t0 == "calibrate":
        return None
    if t0 == "svmsgd2":
        return default_t0(lambda_)
    return float(t0)


def auto_bias_scale(X, use_W: bool = True) -> float:
    """SVMSGD2's bias scale: half the largest mean |x_j| over features (1 for LCC+SVM)."""
    if not use_W:
        return 1.0
    if sp.issparse(X):
        col = np.asarray(abs(X).mean(axis=0)).ravel()
    else:
        col = np.abs(X).mean(axis=0)
    return float(0.5 * col.max()) if col.size else 1.0


def resolve_bias_scale(X, bias_scale, use_W) -> float:
    """``bias_scale``, "auto" resolved by :func:`auto_bias_scale`."""
    return auto_bias_scale(X, use_W) if bias_scale == "auto" else bias_scale


def default_skip(X) -> int:
    """16 for dense data; 16·D/avg_nnz for sparse data (SVMSGD2's rule)."""
    if sp.issparse(X):
        n, D = X.shape
        avg = max(X.nnz / max(n, 1), 1.0)
        return max(1, int(DENSE_SKIP * D / avg))
    return DENSE_SKIP


def resolve_skip(X, skip) -> int:
    """``skip``, None resolved by :func:`default_skip`."""
    return default_skip(X) if skip is None else int(skip)


def sgd_weights_dtype(sgd_dtype):
    """The numpy dtype of the SGD's working W for the ``sgd_dtype`` option."""
    return np.float64 if sgd_dtype is None else SGD_DTYPES[sgd_dtype]
