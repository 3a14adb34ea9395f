"""The LL-SVM / LCC+SVM and LLC-SAPL / LLC-JO SGD steps in plain numpy (no scale trick,
one sample at a time): what the numba kernels (``llc_bench.models._sgd_kernel``) are
compared against, step for step.  Equations as in ``llc_bench.models.sgd_epoch``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from llc_bench.coding.local import LocalCode
from llc_bench.models import _sgd_kernel as K


def sgd_step_reference(
    W, b, x, y, idx, gam, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """One SGD step in plain numpy (no scale trick); W (C,m,D), b (C,m) updated in place.

    ``x`` dense (D,), ``y`` (C,) ±1, ``idx``/``gam`` (k,) the sample's code.
    Returns the new (t, count).
    """
    eta = K.eta(lambda_, t, t0)
    for c in range(W.shape[0]):
        f = gam @ (W[c, idx] @ x + b[c, idx])  # eq. (8)
        if 1.0 - y[c] * f > 0.0:
            if use_W:
                W[c, idx] += eta * y[c] * np.outer(gam, x)  # eq. (11)
            b[c, idx] += eta * bias_scale * y[c] * gam  # eq. (12), bias-corrected rate
    return t + 1, _skip_decay_reference(W, b, t, count, t0, skip, use_W)


def _skip_decay_reference(W, b, t, count, t0, skip, use_W) -> int:
    """The skip counter after a step; every ``skip`` steps W *= r (b for LCC variants),
    r = 1 - skip/(t + t0) (LL-SVM eq. 13, SAPL eq. 19), SVMSGD2's safeguard below 0.8."""
    count -= 1
    if count <= 0:
        r = 1.0 - skip / (t + t0)
        if r < 0.8:
            r = (1.0 - 1.0 / (t + t0)) ** skip
        if use_W:
            W *= r
        else:
            b *= r
        count = skip
    return count


def sgd_epoch_reference(
    X, Y, code: LocalCode, order, W, b, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """One epoch of :func:`sgd_step_reference` (slow; tests and benchmark only)."""
    idx = code.indices.astype(np.intp)
    for i in order:
        x = X[i].toarray().ravel() if sp.issparse(X) else X[i]
        t, count = sgd_step_reference(
            W,
            b,
            x,
            Y[i],
            idx[i],
            code.weights[i],
            t,
            count,
            lambda_=lambda_,
            t0=t0,
            skip=skip,
            bias_scale=bias_scale,
            use_W=use_W,
        )
    return t, count


def encode_row_reference(x, V, coding):
    """One sample's code against anchors V (numpy): (idx, γ, g) sorted by (distance, index).

    g are the factors of ∂f/∂v_j = g_j (h_j - f)(x - v_j); zero weights beyond k*.
    """
    coding.kernel_args()  # a coding with an anchor gradient
    d_all = ((x[None, :] - V) ** 2).sum(axis=1)
    k = min(coding.k, V.shape[0])
    idx = np.argsort(d_all, kind="stable")[:k]
    gam, g = coding.gradient_factors(d_all[idx])
    return idx, gam, g


def sgd_step_anchors_reference(
    W, b, V, x, y, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One LLC-SAPL / LLC-JO step in plain numpy; W, b, V updated in place.

    Returns (t, count, k*) with k* the number of non-zero weights of the step's code.
    """
    eta = K.eta(lambda_, t, t0)
    idx, gam, g = encode_row_reference(x, V, coding)  # γ from the current anchors
    H = W[:, idx] @ x + b[:, idx] if use_W else b[:, idx].copy()  # (C, k): h_j = W_j x + b_j
    F = H @ gam  # eq. (11)
    viol = 1.0 - y * F > 0.0
    if viol.any():
        # eq. (16)/(21): Σ over violated outputs of y_c ∂f_c/∂v_j, with the pre-update W, b
        s = (y[viol, None] * (H[viol] - F[viol, None])).sum(axis=0)
        c = eta * anchor_scale * g * s  # v_j += c_j (x - v_j)
        if anchor_step_max is not None:
            c = np.clip(c, -anchor_step_max, anchor_step_max)
        V[idx] += c[:, None] * (x[None, :] - V[idx])
        for c in np.flatnonzero(viol):
            if use_W:
                W[c, idx] += eta * y[c] * np.outer(gam, x)  # eq. (17)
            b[c, idx] += eta * bias_scale * y[c] * gam  # eq. (18)
    return t + 1, _skip_decay_reference(W, b, t, count, t0, skip, use_W), \
        int(np.count_nonzero(gam))


def sgd_epoch_anchors_reference(
    X, Y, order, V, W, b, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One epoch of :func:`sgd_step_anchors_reference`; returns (t, count, k* per step)."""
    ks = np.empty(len(order), dtype=np.int64)
    for p, i in enumerate(order):
        t, count, ks[p] = sgd_step_anchors_reference(
            W, b, V, X[i], Y[i], t, count, coding, lambda_=lambda_, t0=t0, skip=skip,
            bias_scale=bias_scale, use_W=use_W, anchor_scale=anchor_scale,
            anchor_step_max=anchor_step_max,
        )
    return t, count, ks
