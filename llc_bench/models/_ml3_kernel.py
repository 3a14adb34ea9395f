"""ML3 stochastic gradient epoch (Fornoni et al., ACML 2013, Alg. 2): numba kernel (the
same steps in plain numpy, explicit W and running average: ``tests/models/reference_ml3.py``).

Equation numbers refer to ``../shared/papers/ml3_fornoni_acml2013.md``.

Layout shared by both versions
------------------------------
* ``X`` (n, D+1): samples with a constant 1 appended (one bias per local model);
  :func:`sgd_epoch_csr` takes CSR rows without it (the 1 is implicit), so a step
  costs O(c·m·nnz(x)) and sparse data stay sparse.
* ``W`` (c, m, D+1): ``c`` classes, ``m`` local linear models per class.  The
  kernel stores it flattened to (c*m, D+1) as ``W = a * V`` with a scalar ``a``
  (``state[0]``) and tracks ``||W||_F^2`` (``state[1]``) incrementally, so the
  Pegasos shrink ``W <- (1 - eta*lam) W`` and the projection onto the ball
  ``||W||_F <= sqrt(radius2)`` (Alg. 2 line 6) cost O(1) per step.
* Averaging (Alg. 2 line 8) keeps ``sum_s W_s = U + alpha * V`` with ``alpha``
  in ``state[2]``: a change ``delta`` of ``V`` is compensated by
  ``U -= alpha * delta`` (same rows as the update, O(mD) per violating step)
  and every step adds ``alpha += a``; the shrink and the projection only touch
  ``a``.  The average of the ``k`` iterates is ``(U + alpha V) / k``.  When
  ``a`` falls below 1e-6 (only under heavy projection) it is folded into ``V``
  (O(cmD), ``alpha /= a``) so that ``V`` never over- or underflows; when
  ``alpha > 1024 a`` the sum is re-based (``U += alpha V``, ``alpha = 0``,
  O(cmD)) so that the cancellation in ``U + alpha V`` stays bounded.  Without
  projection ``a`` barely moves within an epoch, so this happens about once
  per 1024 steps: amortised O(cmD / 1024) per step.
* Step ``j`` of a call visits sample ``order[j]`` with learning rate
  ``eta = 1 / (lam * (s0 + t_start + j + 1))`` -- Alg. 2 line 4 with the step
  counted from 1 (identical to the released code's ``1/(lam (s0 + s + 1))``
  with ``s`` counted from 0).
* ``beta_true[j]`` (m,) is the frozen latent vector of the true class for
  step ``j`` (eq. 13b: beta*_{W^t, i, y_i} of the previous CCCP iterate, or the
  random initial beta).  ``beta_neg`` (k, c, m) holds fixed latent vectors of
  every class for the initial epoch (all latent variables fixed, ML3 §4); an
  array with ``shape[0] == 0`` means "CCCP mode": the most violating other
  class and its beta come from the current W (eq. 14-16).
* ``p == 1`` (q = inf): one-hot beta on the largest positive entry (eq. 15);
  ``p == inf`` (q = 1): beta = 1 on positive entries; otherwise eq. 14.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._sgd_kernel import _eta

# ----------------------------------------------------------------------------
# numba kernel
# ----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _pw(t, e):
    """t ** e for t >= 0, with the common small integer exponents unrolled."""
    if e == 2.0:
        return t * t
    if e == 3.0:
        return t * t * t
    if e == 1.0:
        return t
    return t**e


@njit(cache=True)
def _qnorm_pos(v, lo, m, p, q):
    """s = || [v]_+ ||_q over v[lo:lo+m] (eq. 16), scaled by the max (no overflow)."""
    big = 0.0
    for r in range(lo, lo + m):
        if v[r] > big:
            big = v[r]
    if big <= 0.0 or p == 1.0:  # p = 1: q = inf, s = max(0, max_r v_r)
        return big
    if q == 1.0:  # p = inf: s = sum of the positive entries
        acc = 0.0
        for r in range(lo, lo + m):
            if v[r] > 0.0:
                acc += v[r]
        return acc
    acc = 0.0
    for r in range(lo, lo + m):
        if v[r] > 0.0:
            acc += _pw(v[r] / big, q)
    return big * acc ** (1.0 / q)


@njit(cache=True)
def _beta_star(v, lo, m, p, q, out):
    """out = beta*(v[lo:lo+m]) (eq. 14; eq. 15 for p = 1); returns ||out||^2."""
    for r in range(m):
        out[r] = 0.0
    if p == 1.0:  # eq. 15: one-hot on the first largest positive entry
        best = 0.0
        arg = -1
        for r in range(m):
            if v[lo + r] > best:
                best = v[lo + r]
                arg = r
        if arg >= 0:
            out[arg] = 1.0
            return 1.0
        return 0.0
    nrm = _qnorm_pos(v, lo, m, p, q)
    if nrm <= 0.0:  # no positive entry: beta* = 0
        return 0.0
    e = q - 1.0  # p = inf: e = 0, beta = 1 on positive entries
    sq = 0.0
    for r in range(m):
        t = v[lo + r]
        if t > 0.0:
            b = _pw(t / nrm, e)  # eq. 14: (c_r^+ / ||c^+||_q)^(q-1)
            out[r] = b
            sq += b * b
    return sq


@njit(cache=True, inline="always")
def _row_scores(V, X, data, indices, indptr, sparse, i, scores):
    """scores = V x_i; CSR rows carry the appended 1 implicitly (V's last column)."""
    if not sparse:
        np.dot(V, X[i], scores)
        return
    last = V.shape[1] - 1
    for r in range(V.shape[0]):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += V[r, indices[k]] * data[k]
        scores[r] = s + V[r, last]


@njit(cache=True, inline="always")
def _row_axpy(M, row, g, X, data, indices, indptr, sparse, i):
    """M[row] += g x_i (x_i with its appended 1)."""
    if not sparse:
        for d in range(X.shape[1]):
            M[row, d] += g * X[i, d]
        return
    for k in range(indptr[i], indptr[i + 1]):
        M[row, indices[k]] += g * data[k]
    M[row, M.shape[1] - 1] += g


@njit(cache=True)
def sgd_epoch(V, U, state, X, xx, y, order, beta_true, beta_neg, lam, s0, t_start,
              radius2, p, q, n_models, average, scores, bneg):
    """Run ``len(order)`` steps of Alg. 2 in place on ``V``, ``U`` and ``state``.

    ``state = [a, ||W||^2, alpha]``; ``xx[i] = ||X[i]||^2``; ``scores`` (c*m,)
    and ``bneg`` (m,) are work buffers.  Returns (number of steps with a
    positive loss, sum of the losses seen before each step).
    """
    no_i = np.empty(0, np.int64)
    return _epoch(V, U, state, X, np.empty(0), no_i, no_i, False, xx, y, order, beta_true,
                  beta_neg, lam, s0, t_start, radius2, p, q, n_models, average, scores, bneg)


@njit(cache=True)
def sgd_epoch_csr(V, U, state, data, indices, indptr, xx, y, order, beta_true, beta_neg, lam,
                  s0, t_start, radius2, p, q, n_models, average, scores, bneg):
    """:func:`sgd_epoch` on CSR rows (data, indices, indptr) of X *without* the appended 1
    (V's last column is its weight); ``xx[i] = ||x_i||^2 + 1``.  O(c·m·nnz) per step."""
    return _epoch(V, U, state, np.empty((0, 0)), data, indices, indptr, True, xx, y, order,
                  beta_true, beta_neg, lam, s0, t_start, radius2, p, q, n_models, average,
                  scores, bneg)


@njit(cache=True)
def _epoch(V, U, state, X, data, indices, indptr, sparse, xx, y, order, beta_true, beta_neg,
           lam, s0, t_start, radius2, p, q, n_models, average, scores, bneg):
    m = n_models
    n_classes = V.shape[0] // m
    fixed = beta_neg.shape[0] > 0
    a = state[0]
    sqn = state[1]
    alpha = state[2]
    n_viol = 0
    loss_sum = 0.0
    for j in range(order.shape[0]):
        i = order[j]
        yi = y[i]
        _row_scores(V, X, data, indices, indptr, sparse, i, scores)  # W_y x = a (V x)
        # eq. 13b: frozen true-class term beta_{W^t,i,y_i}^T W_{y_i} x
        s_true = 0.0
        for r in range(m):
            s_true += beta_true[j, r] * scores[yi * m + r]
        s_true *= a
        # most violating other class: n_W(x_i, y_i) (eq. 9b / 16)
        best = -np.inf
        yb = -1
        for c in range(n_classes):
            if c == yi:
                continue
            if fixed:
                s = 0.0
                for r in range(m):
                    s += beta_neg[j, c, r] * scores[c * m + r]
                s *= a
            else:
                s = a * _qnorm_pos(scores, c * m, m, p, q)  # a >= 0
            if s > best:
                best = s
                yb = c
        loss = 1.0 + best - s_true  # eq. 13b
        eta = _eta(lam, t_start + j + 1.0, s0)  # Alg. 2 line 4
        shrink = 1.0 - eta * lam  # the lam W part of the subgradient
        if shrink <= 0.0:  # first Pegasos step (eta lam = 1): W <- 0
            if average:
                for r in range(V.shape[0]):
                    for d in range(V.shape[1]):
                        U[r, d] += alpha * V[r, d]
            V[:, :] = 0.0
            a_new = 1.0
            sqn = 0.0
            shrink = 0.0
        else:
            a_new = a * shrink
        if loss > 0.0:
            n_viol += 1
            loss_sum += loss
            # subgradient of eq. 13: + beta_neg x^T on class yb, - beta_true x^T on y_i
            if fixed:
                nb = 0.0
                for r in range(m):
                    bneg[r] = beta_neg[j, yb, r]
                    nb += bneg[r] * bneg[r]
            else:
                nb = _beta_star(scores, yb * m, m, p, q, bneg)  # eq. 14/15
            nt = 0.0
            coef = eta / a_new  # W = a_new V after the step
            for r in range(m):
                b = beta_true[j, r]
                if b != 0.0:
                    nt += b * b
                    row = yi * m + r
                    g = coef * b
                    _row_axpy(V, row, g, X, data, indices, indptr, sparse, i)
                    if average:  # -(alpha g) x: the same bits as U -= alpha g x
                        _row_axpy(U, row, -(alpha * g), X, data, indices, indptr, sparse, i)
                b = bneg[r]
                if b != 0.0:
                    row = yb * m + r
                    g = coef * b
                    _row_axpy(V, row, -g, X, data, indices, indptr, sparse, i)
                    if average:
                        _row_axpy(U, row, alpha * g, X, data, indices, indptr, sparse, i)
            # ||shrink W + G||^2 with <W, G> = eta (s_true - best), blocks disjoint
            sqn = (shrink * shrink * sqn + 2.0 * shrink * eta * (s_true - best)
                   + eta * eta * xx[i] * (nt + nb))
            if sqn < 0.0:
                sqn = 0.0
        else:
            sqn = shrink * shrink * sqn
        a = a_new
        if sqn > radius2:  # Alg. 2 line 6: project onto ||W||_F <= sqrt(radius2)
            a *= np.sqrt(radius2 / sqn)
            sqn = radius2
        if a < 1e-6:  # keep V well scaled: W = a V = 1 (a V), sum = U + (alpha / a)(a V)
            for r in range(V.shape[0]):
                for d in range(V.shape[1]):
                    V[r, d] *= a
            alpha /= a
            a = 1.0
        if average:  # Alg. 2 line 8 (as a running sum)
            alpha += a
            if alpha > 1024.0 * a:  # re-base: U <- U + alpha V, alpha <- 0 (bounds
                for r in range(V.shape[0]):  # the cancellation in U + alpha V)
                    for d in range(V.shape[1]):
                        U[r, d] += alpha * V[r, d]
                alpha = 0.0
    state[0] = a
    state[1] = sqn
    state[2] = alpha
    return n_viol, loss_sum


@njit(cache=True)
def latent_scores_rows(Z, n_models, p, q, out):
    """out[i, y] = ||[Z[i, y*m:(y+1)*m]]_+||_q (eq. 16) for precomputed Z = X W^T."""
    for i in range(Z.shape[0]):
        for c in range(out.shape[1]):
            out[i, c] = _qnorm_pos(Z[i], c * n_models, n_models, p, q)
