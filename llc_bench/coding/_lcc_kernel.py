"""numba kernel of the LCC coding: weighted-LASSO coordinate descent, one row at a time.

The problem and the working-set rule are in :mod:`llc_bench.coding.lcc` (eqs. L1-L4);
``tests/models/reference_lcc.py`` is the same algorithm in plain numpy, step for step (the same
coordinate order, the same stopping and expansion tests), and the tests compare them to
1e-10.

Per row i, with G = B Bᵀ (m × m, the anchors' Gram matrix), c = B x (m,) and the squared
distances d (m,): minimise ½ γᵀGγ - cᵀγ + Σ_v λ_v |γ_v|, λ_v = lam_scale · d_v (L2).
``cand`` (K,) are the K nearest anchors, nearest first: the first working set.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: working-set expansions per row before the kernel gives up (it reports them)
MAX_EXPANSIONS = 64
#: coordinate sweeps between two attempts of the active-set step (L5)
POLISH_EVERY = 10
#: a Cholesky pivot below this fraction of the largest diagonal entry: G_AA is singular
PIVOT_RTOL = 1e-12


@njit(cache=True, inline="always")
def _soft(z, lam):
    if z > lam:
        return z - lam
    if z < -lam:
        return z + lam
    return 0.0


@njit(cache=True)
def _polish(G, c, lam, ws, w, gamma, eps, new):
    """(L5) γ_A from G_AA γ_A = c_A - λ_A sign(γ_A) on the non-zeros A of the working set,
    into ``new`` (m,): True when G_AA is regular, no sign flips and (L4) holds on the set."""
    a = 0
    act = np.empty(w, dtype=np.int64)
    for q in range(w):
        if gamma[ws[q]] != 0.0:
            act[a] = ws[q]
            a += 1
    if a == 0:
        return False
    L = np.zeros((a, a))
    top = 0.0
    for p in range(a):
        top = max(top, G[act[p], act[p]])
    for p in range(a):  # Cholesky G_AA = L Lᵀ
        for q in range(p + 1):
            t = G[act[p], act[q]]
            for k in range(q):
                t -= L[p, k] * L[q, k]
            if p == q:
                if t <= PIVOT_RTOL * top:
                    return False
                L[p, p] = np.sqrt(t)
            else:
                L[p, q] = t / L[q, q]
    z = np.empty(a)
    for p in range(a):  # L z = c_A - λ_A sign(γ_A), then Lᵀ γ = z
        j = act[p]
        t = c[j] - (lam[j] if gamma[j] > 0.0 else -lam[j])
        for k in range(p):
            t -= L[p, k] * z[k]
        z[p] = t / L[p, p]
    for p in range(a - 1, -1, -1):
        t = z[p]
        for k in range(p + 1, a):
            t -= L[k, p] * new[act[k]]
        new[act[p]] = t / L[p, p]
        if (new[act[p]] > 0.0) != (gamma[act[p]] > 0.0) or new[act[p]] == 0.0:
            return False
    for q in range(w):  # (L4) on the rest of the set
        v = ws[q]
        if gamma[v] != 0.0 or G[v, v] <= 0.0:
            continue
        t = c[v]
        for p in range(a):
            t -= G[act[p], v] * new[act[p]]
        if abs(t) - lam[v] > eps * np.sqrt(G[v, v]):
            return False
    return True


@njit(cache=True)
def lcc_rows(G, C, D, cand, xnorm, lam_scale, tol, max_iter, out, stats):
    """Codes of a chunk of rows into ``out`` (rows, m), zero on entry.

    ``C``, ``D`` (rows, m): B x and the squared distances of each row; ``cand`` (rows, K);
    ``xnorm`` (rows,): ||x||, the scale of the stopping test.  ``stats`` (3,) int64 is
    incremented: rows whose working set grew, coordinate sweeps, rows stopped by
    ``max_iter`` or ``MAX_EXPANSIONS`` before converging.
    """
    m = G.shape[0]
    rows, K = cand.shape
    in_ws = np.zeros(m, dtype=np.bool_)
    ws = np.empty(m, dtype=np.int64)
    gamma = np.zeros(m)
    r = np.zeros(m)  # for v in the working set: c_v - (G γ)_v
    g = np.empty(m)
    new = np.zeros(m)
    lam = np.empty(m)
    for i in range(rows):
        for v in range(m):
            lam[v] = lam_scale * D[i, v]
        w = K
        for a in range(K):
            j = cand[i, a]
            ws[a] = j
            in_ws[j] = True
            r[j] = C[i, j]
        eps = tol * xnorm[i]
        grew = False
        converged = False
        for _expansion in range(MAX_EXPANSIONS):
            converged = False
            for _sweep in range(max_iter):  # (L3) cyclic coordinate descent on the set
                stats[1] += 1
                biggest = 0.0
                for a in range(w):
                    j = ws[a]
                    gjj = G[j, j]
                    if gjj <= 0.0:
                        continue
                    old = gamma[j]
                    upd = _soft(r[j] + gjj * old, lam[j]) / gjj
                    delta = upd - old
                    if delta != 0.0:
                        gamma[j] = upd
                        for b in range(w):
                            k = ws[b]
                            r[k] -= G[j, k] * delta
                        step = abs(delta) * np.sqrt(gjj)
                        if step > biggest:
                            biggest = step
                if biggest <= eps:
                    converged = True
                    break
                if (_sweep + 1) % POLISH_EVERY == 0 and _polish(G, C[i], lam, ws, w, gamma,
                                                                eps, new):
                    for q in range(w):  # γ_A from (L5), and r on the set again
                        j = ws[q]
                        if gamma[j] != 0.0:
                            gamma[j] = new[j]
                    for q in range(w):
                        v = ws[q]
                        t = C[i, v]
                        for p in range(w):
                            if gamma[ws[p]] != 0.0:
                                t -= G[ws[p], v] * gamma[ws[p]]
                        r[v] = t
                    converged = True
                    break
            # (L4) the optimality test of every anchor outside the set
            for v in range(m):
                g[v] = C[i, v]
            for a in range(w):
                j = ws[a]
                if gamma[j] != 0.0:
                    for v in range(m):
                        g[v] -= G[j, v] * gamma[j]
            added = 0
            for v in range(m):
                if in_ws[v] or G[v, v] <= 0.0:
                    continue
                if abs(g[v]) - lam[v] > eps * np.sqrt(G[v, v]):
                    ws[w + added] = v
                    in_ws[v] = True
                    r[v] = g[v]
                    added += 1
            if added == 0:
                break
            grew = True
            converged = False
            w += added
        if grew:
            stats[0] += 1
        if not converged:
            stats[2] += 1
        for a in range(w):
            j = ws[a]
            out[i, j] = gamma[j]
            gamma[j] = 0.0
            in_ws[j] = False
