"""numba kernels of the LL-SVM / LCC+SVM SGD epoch (fixed anchors, precomputed codes).

One call = one epoch over ``order``.  Equations: LL-SVM (Ladický & Torr 2011)
eq. (8) decision, (11)-(12) updates, (13) skip regularisation, Alg. 1; the
bias-corrected rate and the 0.8 safeguard are SVMSGD2's (DESIGN §6); one-vs-all
with shared codes is LLC-SAPL eq. (21).

Layout: X (n, D) float64 C-order or CSR (data, indices, indptr); Y (n, C) ±1;
idx (n, k) int32 / gam (n, k) float64 the codes; W (C, m, D), b (C, m) updated
in place.  ``t`` counts all steps over all epochs, ``count`` is Alg. 1's skip
counter; both are carried between epochs and returned.

Implementation trick (not a change of the algorithm): the decay of eq. (13)
multiplies the whole W; the kernel keeps W_true = sw·W and b_true = sb·b so the
decay is sw *= r, O(1) instead of O(C·m·D), and folds the scales back into W, b
at the end of the epoch (or when they get small).  The numpy reference in
``llc_sgd.py`` does the plain in-place multiply; the tests compare both.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FOLD_BELOW = 1e-8  # fold the scale into the array when it gets this small


@njit(cache=True)
def _decay(t, t0, skip):
    # eq. (13): W *= 1 - skip/(t + t0); SVMSGD2 safeguard below 0.8
    r = 1.0 - skip / (t + t0)
    if r < 0.8:
        r = (1.0 - 1.0 / (t + t0)) ** skip
    return r


@njit(cache=True, fastmath=True)
def sgd_epoch_dense(X, Y, idx, gam, order, W, b, lam, t0, t, count, skip, bias_scale, use_W):
    n_cls, m, D = W.shape
    k = idx.shape[1]
    sw = 1.0
    sb = 1.0
    for p in range(order.shape[0]):
        i = order[p]
        eta = 1.0 / (lam * (t + t0))  # optimal rate 1/(λ(t + t0))
        for c in range(n_cls):
            y = Y[i, c]
            # eq. (8): f = γᵀ W x + γᵀ b over the k active anchors
            f = 0.0
            for a in range(k):
                j = idx[i, a]
                s = 0.0
                if use_W:
                    for d in range(D):
                        s += W[c, j, d] * X[i, d]
                f += gam[i, a] * (sw * s + sb * b[c, j])
            if 1.0 - y * f > 0.0:  # hinge violated
                for a in range(k):
                    j = idx[i, a]
                    g = eta * y * gam[i, a]
                    if use_W:  # eq. (11): W[j] += η y γ_j x   (stored W = W_true / sw)
                        gw = g / sw
                        for d in range(D):
                            W[c, j, d] += gw * X[i, d]
                    b[c, j] += g * bias_scale / sb  # eq. (12) with the bias-corrected rate
        count -= 1
        if count <= 0:  # skip regularisation, eq. (13); b instead of W for LCC+SVM
            r = _decay(t, t0, skip)
            if use_W:
                sw *= r
            else:
                sb *= r
            count = skip
            if sw < _FOLD_BELOW:
                W *= sw
                sw = 1.0
            if sb < _FOLD_BELOW:
                b *= sb
                sb = 1.0
        t += 1
    if sw != 1.0:
        W *= sw
    if sb != 1.0:
        b *= sb
    return t, count


@njit(cache=True, fastmath=True)
def sgd_epoch_csr(
    data, indices, indptr, Y, idx, gam, order, W, b, lam, t0, t, count, skip, bias_scale, use_W
):
    n_cls, m, D = W.shape
    k = idx.shape[1]
    sw = 1.0
    sb = 1.0
    for p in range(order.shape[0]):
        i = order[p]
        lo = indptr[i]
        hi = indptr[i + 1]
        eta = 1.0 / (lam * (t + t0))
        for c in range(n_cls):
            y = Y[i, c]
            f = 0.0  # eq. (8)
            for a in range(k):
                j = idx[i, a]
                s = 0.0
                if use_W:
                    for q in range(lo, hi):
                        s += W[c, j, indices[q]] * data[q]
                f += gam[i, a] * (sw * s + sb * b[c, j])
            if 1.0 - y * f > 0.0:
                for a in range(k):
                    j = idx[i, a]
                    g = eta * y * gam[i, a]
                    if use_W:  # eq. (11) on the non-zeros of x
                        gw = g / sw
                        for q in range(lo, hi):
                            W[c, j, indices[q]] += gw * data[q]
                    b[c, j] += g * bias_scale / sb  # eq. (12)
        count -= 1
        if count <= 0:  # eq. (13)
            r = _decay(t, t0, skip)
            if use_W:
                sw *= r
            else:
                sb *= r
            count = skip
            if sw < _FOLD_BELOW:
                W *= sw
                sw = 1.0
            if sb < _FOLD_BELOW:
                b *= sb
                sb = 1.0
        t += 1
    if sw != 1.0:
        W *= sw
    if sb != 1.0:
        b *= sb
    return t, count


@njit(cache=True, fastmath=True)
def decision_codes_dense(X, idx, gam, W, b, use_W):
    """f[i, c] = Σ_a γ_a (W[c, j_a]·x_i + b[c, j_a])  (eq. 8) for precomputed codes."""
    n = idx.shape[0]
    n_cls, m, D = W.shape
    k = idx.shape[1]
    out = np.zeros((n, n_cls))
    for i in range(n):
        for c in range(n_cls):
            f = 0.0
            for a in range(k):
                j = idx[i, a]
                s = b[c, j]
                if use_W:
                    for d in range(D):
                        s += W[c, j, d] * X[i, d]
                f += gam[i, a] * s
            out[i, c] = f
    return out


@njit(cache=True, fastmath=True)
def decision_codes_csr(data, indices, indptr, idx, gam, W, b, use_W):
    n = idx.shape[0]
    n_cls, m, D = W.shape
    k = idx.shape[1]
    out = np.zeros((n, n_cls))
    for i in range(n):
        for c in range(n_cls):
            f = 0.0
            for a in range(k):
                j = idx[i, a]
                s = b[c, j]
                if use_W:
                    for q in range(indptr[i], indptr[i + 1]):
                        s += W[c, j, indices[q]] * data[q]
                f += gam[i, a] * s
            out[i, c] = f
    return out
