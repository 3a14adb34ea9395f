"""LDKL's SGD steps ((L6)-(L7)) in numpy, vectorised over each batch: what the numba
kernel (``llc_bench.models._ldkl_kernel``) is compared against."""

from __future__ import annotations

import numpy as np

from llc_bench.models.ldkl import margin_gradients, tree_forward


def sgd_steps_reference(X, y, batches, t, W, Th, Tp, lam_w, lam_th, lam_tp, sigma, s):
    """:func:`ldkl_sgd_steps` in numpy, vectorised over each batch ((L6)-(L7); tests)."""
    B = batches.shape[1]
    for it in range(batches.shape[0]):
        tt = t + it
        coef = tt / (tt + 1.0)
        eta = 1.0 / (np.array([lam_w, lam_th * s, lam_tp]) * np.sqrt(tt + 1.0) * B)
        Xb, yb = X[batches[it]], y[batches[it]]
        f, path, loc, wx, g = tree_forward(Xb, W, Th, Tp, sigma, s)
        c = yb * (yb * f < 1.0)  # -∂hinge/∂f on the violators
        grads = margin_gradients(Xb, c, path, loc, wx, g, sigma, s)
        for P, G, e in zip((W, Th, Tp), grads, eta, strict=True):
            P *= coef
            P += e * G
    return t + batches.shape[0]
