"""The ML3 SGD epoch (Alg. 2) in plain numpy — explicit W, explicit norm and running
average — and β* (eq. 14/15): what the numba kernel (``llc_bench.models._ml3_kernel``) is
compared against."""

from __future__ import annotations

import numpy as np

from llc_bench.models._sgd_kernel import _eta


def beta_star_ref(c, p):
    """beta* of eq. 14/15 for one vector c (plain numpy, used by the reference)."""
    c = np.asarray(c, dtype=float)
    cp = np.maximum(c, 0.0)
    out = np.zeros_like(cp)
    if cp.max(initial=0.0) <= 0.0:
        return out
    if p == 1:
        out[int(np.argmax(cp))] = 1.0
        return out
    if np.isinf(p):
        return (cp > 0).astype(float)
    q = p / (p - 1.0)
    nrm = np.sum(cp**q) ** (1.0 / q)
    return (cp / nrm) ** (q - 1.0)


def sgd_epoch_reference(W, X, y, order, beta_true, beta_neg, lam, s0, t_start, radius2, p,
                        average):
    """The steps of :func:`sgd_epoch` written directly from Alg. 2 (slow).

    ``W`` (c, m, D+1) is updated in place.  Returns (average of the iterates
    of this call or None, n_viol, loss_sum, number of projections).
    """
    n_classes, m, _ = W.shape
    fixed = beta_neg.shape[0] > 0
    Wbar = np.zeros_like(W) if average else None
    n_viol, loss_sum, n_proj = 0, 0.0, 0
    for j, i in enumerate(order):
        x, yi = X[i], y[i]
        C = W @ x  # (c, m): W_y x for every class
        s_true = beta_true[j] @ C[yi]
        others = [c for c in range(n_classes) if c != yi]
        if fixed:
            s_other = [beta_neg[j, c] @ C[c] for c in others]
        else:
            s_other = [beta_star_ref(C[c], p) @ C[c] for c in others]  # = ||[C_c]_+||_q
        k = int(np.argmax(s_other))
        yb, best = others[k], s_other[k]
        loss = 1.0 + best - s_true
        eta = _eta(lam, t_start + j + 1.0, s0)
        # Alg. 2 line 5: W <- W - eta (lam W + G), G the loss part of the subgradient of
        # eq. 13; (1 - eta lam) is clipped at 0 (it is 1 - 1 up to rounding at the first
        # step of a run started with s0 = 0).
        G = np.zeros_like(W)
        if loss > 0:
            n_viol += 1
            loss_sum += loss
            bneg = beta_neg[j, yb] if fixed else beta_star_ref(C[yb], p)
            G[yb] += np.outer(bneg, x)
            G[yi] -= np.outer(beta_true[j], x)
        W[...] = max(0.0, 1.0 - eta * lam) * W - eta * G
        nrm = np.linalg.norm(W)
        if nrm * nrm > radius2:  # Alg. 2 line 6
            W *= np.sqrt(radius2) / nrm
            n_proj += 1
        if average:  # Alg. 2 line 8
            Wbar += (W - Wbar) / (j + 1)
    return Wbar, n_viol, loss_sum, n_proj
