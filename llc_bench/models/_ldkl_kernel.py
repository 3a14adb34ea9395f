"""numba kernel of LDKL's mini-batch SGD (Jose, Goyal, Aggrwal & Varma, ICML 2013).

One call = ``batches.shape[0]`` iterations of one binary tree at a fixed gate
sharpness ``s``.  The equations (L1)-(L7) are written out in the module docstring
of :mod:`llc_bench.models.ldkl`; the numpy reference (``tests/models/reference_ldkl.py``) is
the same step, vectorised over the batch, and the tests compare both.

Layout: X (n, d) float64 C-order (no bias column), or its CSR arrays
(:func:`ldkl_sgd_steps_csr`); y (n,) ±1; batches (T, B) row
indices; W, Tp (M, d + 1) and Th (L, d + 1), the last column the bias (a constant
1 appended to x), M = 2^(D+1) - 1 nodes in breadth-first order (children of k:
2k+1, 2k+2), L = 2^D - 1 internal nodes.  Updated in place; ``t`` is the 1-based
index of the first iteration (carried over calls by the caller).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _dot(P, k, X, i, d):
    s = P[k, d]  # bias: x has a constant 1 appended
    for j in range(d):
        s += P[k, j] * X[i, j]
    return s


@njit(cache=True, inline="always")
def _dot_csr(P, k, data, indices, lo, hi, d):
    s = P[k, d]
    for q in range(lo, hi):
        s += P[k, indices[q]] * data[q]
    return s


@njit(cache=True, fastmath=True)
def ldkl_sgd_steps(X, y, batches, t, W, Th, Tp, lam_w, lam_th, lam_tp, sigma, s):
    no_i = np.empty(0, np.int64)
    return _steps(X, np.empty(0), no_i, no_i, False, y, batches, t, W, Th, Tp, lam_w, lam_th,
                  lam_tp, sigma, s)


@njit(cache=True, fastmath=True)
def ldkl_sgd_steps_csr(data, indices, indptr, y, batches, t, W, Th, Tp, lam_w, lam_th, lam_tp,
                       sigma, s):
    """:func:`ldkl_sgd_steps` on CSR rows: O(M·nnz(x)) per row plus the O(M·d) shrink of
    each iteration, instead of O(M·d) per row."""
    return _steps(np.empty((0, 0)), data, indices, indptr, True, y, batches, t, W, Th, Tp,
                  lam_w, lam_th, lam_tp, sigma, s)


@njit(cache=True, fastmath=True)
def _steps(X, data, indices, indptr, sparse, y, batches, t, W, Th, Tp, lam_w, lam_th, lam_tp,
           sigma, s):
    n_it, B = batches.shape
    M, d1 = W.shape
    L = Th.shape[0]
    d = d1 - 1
    W1, Th1, Tp1 = np.empty_like(W), np.empty_like(Th), np.empty_like(Tp)
    g, path = np.empty(L), np.empty(M)
    loc, wx, S = np.empty(M), np.empty(M), np.empty(M)
    for it in range(n_it):
        tt = t + it
        coef = tt / (tt + 1.0)  # (L6): regulariser step, all parameters shrink by t/(t+1)
        root = np.sqrt(tt + 1.0)
        ew = 1.0 / (lam_w * root * B)  # (L6): η_t = 1 / (λ √(t+1)), batch mean
        etp = 1.0 / (lam_tp * root * B)
        eth = 1.0 / (lam_th * root * B * s)  # θ: the step of the reference (no chain-rule s)
        W1[:] = coef * W
        Th1[:] = coef * Th
        Tp1[:] = coef * Tp
        for b in range(B):
            i = batches[it, b]
            lo, hi = (indptr[i], indptr[i + 1]) if sparse else (0, 0)
            for l in range(L):  # (L2) smoothed gates tanh(s θ_lᵀx)
                z = _dot_csr(Th, l, data, indices, lo, hi, d) if sparse else _dot(Th, l, X, i, d)
                g[l] = np.tanh(s * z)
            path[0] = 1.0
            for l in range(L):  # (L2) I_k(x) = Π (1 ± g_l)/2 along the path
                path[2 * l + 1] = path[l] * (1.0 + g[l]) * 0.5
                path[2 * l + 2] = path[l] * (1.0 - g[l]) * 0.5
            f = 0.0
            for k in range(M):  # (L1) f(x) = Σ_k I_k(x) tanh(σ θ'_kᵀx) w_kᵀx
                if sparse:
                    loc[k] = np.tanh(sigma * _dot_csr(Tp, k, data, indices, lo, hi, d))
                    wx[k] = _dot_csr(W, k, data, indices, lo, hi, d)
                else:
                    loc[k] = np.tanh(sigma * _dot(Tp, k, X, i, d))
                    wx[k] = _dot(W, k, X, i, d)
                S[k] = path[k] * loc[k] * wx[k]
                f += S[k]
            yi = y[i]
            if yi * f >= 1.0:  # hinge inactive: no loss gradient
                continue
            for l in range(L - 1, -1, -1):  # subtree sums S_k = Σ_{j under k} φ_j w_jᵀx
                S[l] += S[2 * l + 1] + S[2 * l + 2]
            for k in range(M):
                cw = ew * yi * path[k] * loc[k]  # (L3) -∂hinge/∂w_k = y I_k tanh(.) x
                ct = etp * yi * path[k] * wx[k] * sigma * (1.0 - loc[k] * loc[k])  # (L4)
                if sparse:
                    for q in range(lo, hi):
                        W1[k, indices[q]] += cw * data[q]
                        Tp1[k, indices[q]] += ct * data[q]
                else:
                    for j in range(d):
                        W1[k, j] += cw * X[i, j]
                        Tp1[k, j] += ct * X[i, j]
                W1[k, d] += cw
                Tp1[k, d] += ct
            for l in range(L):  # (L5) ∂f/∂(sθ_lᵀx) = (1-g_l) S_left - (1+g_l) S_right
                c = eth * yi * s * ((1.0 - g[l]) * S[2 * l + 1] - (1.0 + g[l]) * S[2 * l + 2])
                if sparse:
                    for q in range(lo, hi):
                        Th1[l, indices[q]] += c * data[q]
                else:
                    for j in range(d):
                        Th1[l, j] += c * X[i, j]
                Th1[l, d] += c
        W[:] = W1  # (L7) the batch's gradients were taken at the iteration's start
        Th[:] = Th1
        Tp[:] = Tp1
    return t + n_it
