"""numba dual coordinate descent for the L2-regularised hinge loss on z = γ(x) ⊗ [x; 1],
with z never formed (issue 17).

The algorithm is LIBLINEAR's ``-s 3`` solver, Hsieh et al. (ICML 2008) Algorithm 1 with
the shrinking of §3 (LIBLINEAR ``solve_l2r_l1l2_svc``, L1-loss: U = C, D_ii = 0):

    G   = y_i wᵀz_i − 1                                   (gradient of the dual, eq. 7)
    PG  = projected G (0 at a bound it pushes against; such i are shrunk)
    α_i ← min(max(α_i − G / Q_ii, 0), C),  Q_ii = ||z_i||²  (eq. 9)
    w   ← w + (α_i − α_i^old) y_i z_i                     (eq. 10)

stopping when max PG − min PG ≤ eps over a pass of the whole (unshrunk) set, or after
``max_iter`` passes.  The only difference from LIBLINEAR is the data layout: row i's
z_i has k blocks γ_ij [x_i; 1], so wᵀz_i = Σ_j γ_ij (W_j·x_i + b_j) and the update
touches the k active rows of W (contiguous, vectorised) instead of k(D+1) sparse nodes.
||z_i||² = ||γ_i||² (||x_i||² + 1).  One binary problem per call; the one-vs-rest
problems are independent (``prange`` over classes, each with its own seeded xorshift
for the shuffle), so the result does not depend on the number of threads.  x is dense
(``X``) or CSR (``indptr``, ``indices``, ``data``; then ``X`` is empty): the sparse row
visits the same terms in the same order minus the zeros, so dense and CSR copies of
the same data give the same numbers.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, inline="always")
def _xorshift(s):
    s ^= (s << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    s ^= s >> np.uint64(7)
    s ^= (s << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    return s


@njit(cache=True, nogil=True, inline="always")
def _x_dot(w, X, indptr, indices, data, i, Dx):
    """w[:Dx] · x_i (x_i a dense row of X, or row i of the CSR arrays; Dx = 0: 0)."""
    dot = 0.0
    if Dx > 0 and indptr.shape[0] > 0:
        for p in range(indptr[i], indptr[i + 1]):
            dot += w[indices[p]] * data[p]
    else:
        for d in range(Dx):
            dot += w[d] * X[i, d]
    return dot


@njit(cache=True, nogil=True, inline="always")
def _x_axpy(c, X, indptr, indices, data, i, Dx, w):
    """w[:Dx] += c x_i."""
    if Dx > 0 and indptr.shape[0] > 0:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += c * data[p]
    else:
        for d in range(Dx):
            w[d] += c * X[i, d]


@njit(cache=True, nogil=True)
def dual_cd_binary(X, indptr, indices, data, idx, gam, y, C, eps, max_iter, seed, Wb):
    """One binary problem (labels y = ±1); ``Wb`` (m, Dx+1), zero on entry, receives
    [W_j, b_j] (Dx = 0: only b, without x).  Returns the number of passes."""
    n = y.shape[0]
    k = idx.shape[1]
    Dx = Wb.shape[1] - 1
    alpha = np.zeros(n)
    QD = np.empty(n)
    index = np.arange(n)
    for i in range(n):
        xx = 1.0
        if Dx > 0 and indptr.shape[0] > 0:
            for p in range(indptr[i], indptr[i + 1]):
                xx += data[p] * data[p]
        else:
            for d in range(Dx):
                xx += X[i, d] * X[i, d]
        gg = 0.0
        for s in range(k):
            gg += gam[i, s] * gam[i, s]
        QD[i] = gg * xx
    state = np.uint64(seed) * np.uint64(2654435761) + np.uint64(0x9E3779B97F4A7C15)
    active = n
    pg_max_old = np.inf
    pg_min_old = -np.inf
    it = 0
    while it < max_iter:
        pg_max = -np.inf
        pg_min = np.inf
        for s in range(active):  # the shuffle of the active set
            state = _xorshift(state)
            r = s + np.int64(state % np.uint64(active - s))
            tmp = index[s]
            index[s] = index[r]
            index[r] = tmp
        s = 0
        while s < active:
            i = index[s]
            f = 0.0  # wᵀz_i = Σ_j γ_ij (W_j·x_i + b_j)
            for a in range(k):
                j = idx[i, a]
                f += gam[i, a] * (Wb[j, Dx] + _x_dot(Wb[j], X, indptr, indices, data, i, Dx))
            G = y[i] * f - 1.0
            PG = 0.0
            if alpha[i] == 0.0:
                if G > pg_max_old:  # shrink: at the lower bound and pushed below it
                    active -= 1
                    index[s] = index[active]
                    index[active] = i
                    continue
                if G < 0.0:
                    PG = G
            elif alpha[i] == C:
                if G < pg_min_old:  # shrink: at the upper bound and pushed above it
                    active -= 1
                    index[s] = index[active]
                    index[active] = i
                    continue
                if G > 0.0:
                    PG = G
            else:
                PG = G
            pg_max = max(pg_max, PG)
            pg_min = min(pg_min, PG)
            if abs(PG) > 1e-12:
                old = alpha[i]
                alpha[i] = min(max(old - G / QD[i], 0.0), C)
                step = (alpha[i] - old) * y[i]
                for a in range(k):
                    j = idx[i, a]
                    c = step * gam[i, a]
                    _x_axpy(c, X, indptr, indices, data, i, Dx, Wb[j])
                    Wb[j, Dx] += c
            s += 1
        it += 1
        if pg_max - pg_min <= eps:
            if active == n:
                break
            active = n  # converged on the shrunk set: check the whole set once more
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return it


@njit(cache=True, nogil=True, parallel=True)
def dual_cd_one_vs_rest(X, indptr, indices, data, D, idx, gam, y_idx, n_out, m, C, eps,
                        max_iter, seed, use_x):
    """``n_out`` independent problems (n_out = 1: binary, class 1 = +1; else class c vs
    the rest) over m anchors, x in D dimensions.  Returns Wb (n_out, m, D+1) (D = 0
    without x) and the passes per problem."""
    Dx = D if use_x else 0
    Wb = np.zeros((n_out, m, Dx + 1))
    iters = np.zeros(n_out, dtype=np.int64)
    for c in prange(n_out):
        target = 1 if n_out == 1 else c
        y = np.where(y_idx == target, 1.0, -1.0)
        iters[c] = dual_cd_binary(X, indptr, indices, data, idx, gam, y, C, eps, max_iter,
                                  seed + c, Wb[c])
    return Wb, iters
