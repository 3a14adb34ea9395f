"""numba dual coordinate descent for the L2-regularised hinge loss on z = γ(x) ⊗ [x; 1],
with z never formed (3-4x faster than LIBLINEAR on z, no copy of z).

The algorithm is LIBLINEAR's ``-s 3`` solver, Hsieh et al. (ICML 2008) Algorithm 1 with
the shrinking of §3 (LIBLINEAR ``solve_l2r_l1l2_svc``, L1-loss: U = C, D_ii = 0):

    G   = y_i wᵀz_i − 1                                   (gradient of the dual, eq. 7)
    PG  = projected G (0 at a bound it pushes against; such i are shrunk)
    α_i ← min(max(α_i − G / Q_ii, 0), C),  Q_ii = ||z_i||²  (eq. 9)
    w   ← w + (α_i − α_i^old) y_i z_i                     (eq. 10)

stopping when max PG − min PG ≤ eps over a pass of the whole (unshrunk) set, or after
``max_iter`` passes.  ``alpha`` in, α out: zero is LIBLINEAR's cold start; a hyper-parameter
search passes the α of the previous C scaled by C_new / C_old (the warm start along the C path of
Chu, Hsieh & Lin, KDD 2015), and w = Σ α_i y_i z_i is built from it before the first pass.
The only difference from LIBLINEAR is the data layout: row i's
z_i has k blocks γ_ij [x_i; 1], so wᵀz_i = Σ_j γ_ij (W_j·x_i + b_j) and the update
touches the k active rows of W (contiguous, vectorised) instead of k(D+1) sparse nodes.
The sums may be reassociated (``_FASTMATH``: LLVM vectorises each dot product), so the
result agrees with the plain order to rounding (about 1e-14 in W, the same passes;
tests/models/test_dual_cd_init.py), bit for bit on the same CPU, not across vector widths.
||z_i||² = ||γ_i||² (||x_i||² + 1).  One binary problem per call; the one-vs-rest
problems are independent (``prange`` over classes, each with its own seeded xorshift
for the shuffle), so the result does not depend on the number of threads.  x is dense
(``X``) or CSR (``indptr``, ``indices``, ``data``; then ``X`` is empty): the sparse row
visits the same terms minus the zeros, so dense and CSR copies of the same data agree
to rounding.
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
def _wz(Wb, X, indptr, indices, data, idx, gam, i, Dx):
    """wᵀz_i = Σ_j γ_ij (W_j·x_i + b_j) over the k active anchors, one anchor's dot
    product over x_i at a time (a flat loop LLVM vectorises under ``_FASTMATH``)."""
    f = 0.0
    sparse = Dx > 0 and indptr.shape[0] > 0
    for a in range(idx.shape[1]):
        j = idx[i, a]
        s = 0.0
        if sparse:
            for p in range(indptr[i], indptr[i + 1]):
                s += Wb[j, indices[p]] * data[p]
        else:
            for d in range(Dx):
                s += Wb[j, d] * X[i, d]
        f += gam[i, a] * (Wb[j, Dx] + s)
    return f


@njit(cache=True, nogil=True, inline="always")
def _w_update(Wb, X, indptr, indices, data, idx, gam, i, Dx, step):
    """w += step z_i: W_j += step γ_ij x_i, b_j += step γ_ij over the active anchors."""
    sparse = Dx > 0 and indptr.shape[0] > 0
    for a in range(idx.shape[1]):
        j = idx[i, a]
        c = step * gam[i, a]
        if sparse:
            for p in range(indptr[i], indptr[i + 1]):
                Wb[j, indices[p]] += c * data[p]
        else:
            for d in range(Dx):
                Wb[j, d] += c * X[i, d]
        Wb[j, Dx] += c


#: LLVM may reassociate sums (so it vectorises the dot products: 0.55-0.65x the time of
#: the plain order on usps and letter, scripts/bench_llsvm.py) but keeps infinities (the shrinking's
#: sentinels), NaNs and separate multiply and add (no FMA contraction).
_FASTMATH = {"reassoc", "nsz"}


@njit(cache=True, nogil=True, fastmath=_FASTMATH)
def dual_cd_binary(X, indptr, indices, data, idx, gam, y, C, eps, max_iter, seed, Wb, alpha):
    """One binary problem (labels y = ±1); ``Wb`` (m, Dx+1), zero on entry, receives
    [W_j, b_j] (Dx = 0: only b, without x); ``alpha`` (n,) in [0, C], the start (zeros:
    cold), receives the solution.  Returns the number of passes."""
    n = y.shape[0]
    k = idx.shape[1]
    Dx = Wb.shape[1] - 1
    for i in range(n):  # w = Σ α_i y_i z_i (eq. 10 summed): nothing for a cold start
        if alpha[i] != 0.0:
            _w_update(Wb, X, indptr, indices, data, idx, gam, i, Dx, alpha[i] * y[i])
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
                        max_iter, seed, use_x, alpha):
    """``n_out`` independent problems (n_out = 1: binary, class 1 = +1; else class c vs
    the rest) over m anchors, x in D dimensions, from the duals ``alpha`` (n_out, n),
    which receive the solutions.  Returns Wb (n_out, m, D+1) (D = 0 without x) and the
    passes per problem."""
    Dx = D if use_x else 0
    Wb = np.zeros((n_out, m, Dx + 1))
    iters = np.zeros(n_out, dtype=np.int64)
    for c in prange(n_out):
        target = 1 if n_out == 1 else c
        y = np.where(y_idx == target, 1.0, -1.0)
        iters[c] = dual_cd_binary(X, indptr, indices, data, idx, gam, y, C, eps, max_iter,
                                  seed + c, Wb[c], alpha[c])
    return Wb, iters
