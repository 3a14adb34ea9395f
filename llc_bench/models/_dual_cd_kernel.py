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
touches the k active rows of W (contiguous, vectorised) instead of k(D+1) sparse nodes;
the k dot products W_j·x_i are summed side by side, eight anchors per pass over
x_i (independent chains; each sum in the plain order, so the same bits as one anchor at
a time, tests/test_dual_cd_init.py).
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
def _x_dot8(Wb, j0, j1, j2, j3, j4, j5, j6, j7, X, indptr, indices, data, i, Dx):
    """W_j·x_i for eight anchors in one pass over x_i: eight independent sums, each added
    in the order of :func:`_x_dot` (the same numbers, without fastmath)."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    sparse = Dx > 0 and indptr.shape[0] > 0
    for p in range(indptr[i] if sparse else 0, indptr[i + 1] if sparse else Dx):
        d, v = (indices[p], data[p]) if sparse else (p, X[i, p])
        s0 += Wb[j0, d] * v
        s1 += Wb[j1, d] * v
        s2 += Wb[j2, d] * v
        s3 += Wb[j3, d] * v
        s4 += Wb[j4, d] * v
        s5 += Wb[j5, d] * v
        s6 += Wb[j6, d] * v
        s7 += Wb[j7, d] * v
    return s0, s1, s2, s3, s4, s5, s6, s7


@njit(cache=True, nogil=True, inline="always")
def _wz(Wb, X, indptr, indices, data, idx, gam, i, Dx):
    """wᵀz_i = Σ_j γ_ij (W_j·x_i + b_j), summed over the k active anchors in order; the
    dot products eight anchors at a time (independent chains the CPU overlaps: a serial
    sum of D terms is latency-bound), the rest one at a time."""
    k = idx.shape[1]
    f = 0.0
    a = 0
    while a + 8 <= k:
        j0, j1, j2, j3 = idx[i, a], idx[i, a + 1], idx[i, a + 2], idx[i, a + 3]
        j4, j5, j6, j7 = idx[i, a + 4], idx[i, a + 5], idx[i, a + 6], idx[i, a + 7]
        s0, s1, s2, s3, s4, s5, s6, s7 = _x_dot8(Wb, j0, j1, j2, j3, j4, j5, j6, j7, X,
                                                 indptr, indices, data, i, Dx)
        f += gam[i, a] * (Wb[j0, Dx] + s0)
        f += gam[i, a + 1] * (Wb[j1, Dx] + s1)
        f += gam[i, a + 2] * (Wb[j2, Dx] + s2)
        f += gam[i, a + 3] * (Wb[j3, Dx] + s3)
        f += gam[i, a + 4] * (Wb[j4, Dx] + s4)
        f += gam[i, a + 5] * (Wb[j5, Dx] + s5)
        f += gam[i, a + 6] * (Wb[j6, Dx] + s6)
        f += gam[i, a + 7] * (Wb[j7, Dx] + s7)
        a += 8
    while a < k:
        j = idx[i, a]
        f += gam[i, a] * (Wb[j, Dx] + _x_dot(Wb[j], X, indptr, indices, data, i, Dx))
        a += 1
    return f


@njit(cache=True, nogil=True, inline="always")
def _x_axpy(c, X, indptr, indices, data, i, Dx, w):
    """w[:Dx] += c x_i."""
    if Dx > 0 and indptr.shape[0] > 0:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += c * data[p]
    else:
        for d in range(Dx):
            w[d] += c * X[i, d]


@njit(cache=True, nogil=True, inline="always")
def _w_update(Wb, X, indptr, indices, data, idx, gam, i, Dx, step):
    """w += step z_i: W_j += step γ_ij x_i, b_j += step γ_ij over the active anchors;
    dense x four anchors per pass over x_i (each entry gets the same single update)."""
    k = idx.shape[1]
    a = 0
    while a + 4 <= k and not (Dx > 0 and indptr.shape[0] > 0):
        j0, j1, j2, j3 = idx[i, a], idx[i, a + 1], idx[i, a + 2], idx[i, a + 3]
        c0 = step * gam[i, a]
        c1 = step * gam[i, a + 1]
        c2 = step * gam[i, a + 2]
        c3 = step * gam[i, a + 3]
        for d in range(Dx):
            v = X[i, d]
            Wb[j0, d] += c0 * v
            Wb[j1, d] += c1 * v
            Wb[j2, d] += c2 * v
            Wb[j3, d] += c3 * v
        Wb[j0, Dx] += c0
        Wb[j1, Dx] += c1
        Wb[j2, Dx] += c2
        Wb[j3, Dx] += c3
        a += 4
    while a < k:
        j = idx[i, a]
        c = step * gam[i, a]
        _x_axpy(c, X, indptr, indices, data, i, Dx, Wb[j])
        Wb[j, Dx] += c
        a += 1


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
            f = _wz(Wb, X, indptr, indices, data, idx, gam, i, Dx)
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
                _w_update(Wb, X, indptr, indices, data, idx, gam, i, Dx,
                          (alpha[i] - old) * y[i])
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
