"""The LCC coding's weighted-LASSO coordinate descent in plain numpy, one row: what the
numba kernel (``llc_bench.coding._lcc_kernel.lcc_rows``) is compared against."""

from __future__ import annotations

import numpy as np

from llc_bench.coding._lcc_kernel import MAX_EXPANSIONS, PIVOT_RTOL, POLISH_EVERY


def lcc_row_reference(G, c, d, cand, xnorm, lam_scale, tol, max_iter):
    """Plain numpy, one row: the same coordinate descent and working-set rule as
    :func:`lcc_rows` (tests).  Returns γ (m,)."""
    m = G.shape[0]
    ws = [int(j) for j in cand]
    gamma = np.zeros(m)
    lam = lam_scale * np.asarray(d, dtype=float)
    eps = tol * xnorm
    for _expansion in range(MAX_EXPANSIONS):
        for _sweep in range(max_iter):
            biggest = 0.0
            for j in ws:
                if G[j, j] <= 0.0:
                    continue
                z = c[j] - G[j, ws] @ gamma[ws] + G[j, j] * gamma[j]
                new = np.sign(z) * max(abs(z) - lam[j], 0.0) / G[j, j]
                biggest = max(biggest, abs(new - gamma[j]) * np.sqrt(G[j, j]))
                gamma[j] = new
            if biggest <= eps:
                break
            if (_sweep + 1) % POLISH_EVERY == 0:
                polished = _polish_reference(G, c, lam, ws, gamma, eps)
                if polished is not None:
                    gamma = polished
                    break
        grad = c - G @ gamma
        outside = np.setdiff1d(np.arange(m), ws)
        outside = outside[np.diag(G)[outside] > 0.0]
        viol = outside[np.abs(grad[outside]) - lam[outside]
                       > eps * np.sqrt(np.diag(G)[outside])]
        if viol.size == 0:
            break
        ws += [int(v) for v in viol]
    return gamma


def _polish_reference(G, c, lam, ws, gamma, eps):
    """(L5) in numpy: the polished γ, or None (the conditions of :func:`_polish`)."""
    A = [j for j in ws if gamma[j] != 0.0]
    if not A:
        return None
    M = G[np.ix_(A, A)]
    try:
        Lc = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return None
    if np.min(np.diag(Lc)) ** 2 <= PIVOT_RTOL * np.max(np.diag(M)):
        return None
    sol = np.linalg.solve(M, c[A] - lam[A] * np.sign(gamma[A]))
    if np.any(np.sign(sol) != np.sign(gamma[A])):
        return None
    new = np.zeros_like(gamma)
    new[A] = sol
    rest = [v for v in ws if gamma[v] == 0.0 and G[v, v] > 0.0]
    grad = c[rest] - G[rest][:, A] @ sol
    if np.any(np.abs(grad) - lam[rest] > eps * np.sqrt(np.diag(G)[rest])):
        return None
    return new
