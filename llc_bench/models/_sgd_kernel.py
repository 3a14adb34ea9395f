"""numba kernels of the LL-SVM / LCC+SVM SGD epoch (fixed anchors, precomputed codes)
and of the LLC-SAPL / LLC-JO epoch (learned anchors, codes recomputed every step).

One call = one epoch over ``order``.  Equations: LL-SVM (Ladický & Torr 2011)
eq. (8) decision, (11)-(12) updates, (13) skip regularisation, Alg. 1; the
bias-corrected rate and the 0.8 safeguard are SVMSGD2's (docs/design.md §SGD schedule); one-vs-all
with shared codes is LLC-SAPL eq. (21).

Layout: X (n, D) float64 C-order or CSR (data, indices, indptr); Y (n, C) ±1;
idx (n, k) int32 / gam (n, k) float64 the codes; W **anchor-major** (m, C, D) —
the C·D weights of one anchor side by side, so a step reads one block per active
anchor (the estimators hold W as (C, m, D); ``sgd_training`` transposes once per epoch)
— and b (C, m), both updated in place.  ``t`` counts all steps over all epochs,
``count`` is Alg. 1's skip counter; both are carried between epochs and returned.

Implementation trick (not a change of the algorithm): the decay of eq. (13)
multiplies the whole W; the kernel keeps W_true = sw·W and b_true = sb·b so the
decay is sw *= r, O(1) instead of O(C·m·D), and folds the scales back into W, b
at the end of the epoch (or when they get small).  The numpy reference in
``tests/models/reference_sgd.py`` does the plain in-place multiply; the tests compare both.

Learned anchors (:func:`sgd_epoch_anchors_dense`): every step encodes x against the
current anchors V (m, D) — squared distances to all m anchors, the k nearest kept in
ascending (distance, index) order — with the ``kind`` the coding names
(``LocalCoding.kernel_args``): KERNEL_SOFT_KNN (param β, SAPL eq. 2) or
KERNEL_ADAPTIVE_KNN (param μ, JO Alg. 1, k = cap on k*). On a violation of any output
the active anchors move first, with the pre-update W, b (SAPL eq. 16 / JO eq. 24, summed
over the violated outputs as SAPL eq. 21 implies), then W, b move with the step's codes
(eq. 17-18 / 25-26). The per-anchor factor g_a of ∂f/∂v_j = g_a (h_j - f)(x - v_j) is 2β
γ_a (soft_knn) or 2μ / Σ_l(λ - η_l) (adaptive_knn, λ frozen). ``step_max`` (not in the
papers) clips the fraction c of v_j += c (x - v_j) to [-step_max, step_max] (1: an
anchor never moves past x in one step); "off" is 1e300, not inf, because fastmath lets
LLVM assume that no value is infinite. :func:`sgd_epoch_anchors_csr` is the same epoch
on CSR rows (anchors dense, moved through a scale per anchor).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..coding.local import KERNEL_SOFT_KNN

_FOLD_BELOW = 1e-8  # fold the scale into the array when it gets this small


def eta(lam, t, t0):
    """η_t = 1/(λ(t + t0)), t counting every step over all epochs (docs/design.md §SGD
    schedule): the rate of every SGD here; η_0 = 1/(λ t0), and t0 = 1/(λ η0) is the same
    expression."""
    return 1.0 / (lam * (t + t0))


#: :func:`eta` compiled into the kernels (inlined: the same arithmetic as written there).
_eta = njit(cache=True, nogil=True, fastmath=True, inline="always")(eta)


@njit(cache=True, nogil=True)
def _decay(t, t0, skip):
    # eq. (13): W *= 1 - skip/(t + t0); SVMSGD2 safeguard below 0.8
    r = 1.0 - skip / (t + t0)
    if r < 0.8:
        r = (1.0 - 1.0 / (t + t0)) ** skip
    return r


@njit(cache=True, nogil=True, inline="always")
def _skip_decay(W, b, sw, sb, t, t0, skip, use_W):
    """Skip regularisation (LL-SVM eq. 13, SAPL eq. 19) on the scale factors: W shrinks
    by r (b instead when W is not learned: LCC variants); a scale that has become small
    is folded into its array."""
    r = _decay(t, t0, skip)
    if use_W:
        sw *= r
    else:
        sb *= r
    if sw < _FOLD_BELOW:
        W *= sw
        sw = 1.0
    if sb < _FOLD_BELOW:
        b *= sb
        sb = 1.0
    return sw, sb


@njit(cache=True, nogil=True, inline="always")
def _end_step(W, b, sw, sb, t, t0, count, skip, use_W):
    """After a step: Alg. 1's skip counter, the skip decay every ``skip`` steps (eq. 13;
    SAPL eq. 19) and t counting the step.  Returns (sw, sb, t, count)."""
    count -= 1
    if count <= 0:
        sw, sb = _skip_decay(W, b, sw, sb, t, t0, skip, use_W)
        count = skip
    return sw, sb, t + 1, count


@njit(cache=True, nogil=True, inline="always")
def _unscale(W, b, sw, sb):
    """End of an epoch: the scales folded back into W and b."""
    if sw != 1.0:
        W *= sw
    if sb != 1.0:
        b *= sb


@njit(cache=True, nogil=True, inline="always")
def _step_dense(W, b, j, c, g, x, sw, sb, bias_scale, use_W):
    """One anchor's update for output c on a violation, g = η y γ_j: W[j, c] += g x
    (eq. 11; SAPL eq. 17) and b[c, j] += g with the bias-corrected rate (eq. 12; SAPL eq.
    18), on the stored arrays (W_true = sw·W, b_true = sb·b)."""
    if use_W:
        gw = g / sw
        for d in range(W.shape[2]):
            W[j, c, d] += gw * x[d]
    b[c, j] += g * bias_scale / sb


@njit(cache=True, nogil=True, inline="always")
def _step_csr(W, b, j, c, g, data, indices, lo, hi, sw, sb, bias_scale, use_W):
    """:func:`_step_dense` for the CSR row ``data[lo:hi]``, ``indices[lo:hi]``."""
    if use_W:
        gw = g / sw
        for q in range(lo, hi):
            W[j, c, indices[q]] += gw * data[q]
    b[c, j] += g * bias_scale / sb


@njit(cache=True, nogil=True, inline="always")
def _insert_nearest(e, j, cnt, k, idx, dist):
    """Anchor j at squared distance e into the buffer of the ``cnt`` nearest so far (at
    most k, ascending by (distance, index)); returns the new count."""
    if cnt < k or e < dist[cnt - 1]:
        a = cnt if cnt < k else k - 1
        while a > 0 and dist[a - 1] > e:
            dist[a] = dist[a - 1]
            idx[a] = idx[a - 1]
            a -= 1
        dist[a] = e
        idx[a] = j
        if cnt < k:
            cnt += 1
    return cnt


@njit(cache=True, nogil=True, inline="always")
def _anchor_step(Y, i, viol, h, f, a, g, eta, anchor_scale, step_max):
    """The fraction c of active anchor a's move v += c (x - v): η·scale·g_a Σ_c y_c (h_c,a
    - f_c) over the violated outputs (SAPL eq. 16, 21; JO eq. 24), clipped to
    [-step_max, step_max]."""
    s = 0.0
    for c in range(viol.shape[0]):
        if viol[c]:
            s += Y[i, c] * (h[c, a] - f[c])
    step = eta * anchor_scale * g[a] * s
    return min(max(step, -step_max), step_max)


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def _class_dots(W, j, x, out):
    """out[c] = W[j, c]·x for every class c, four (then two, then one) classes per pass
    over x: x is loaded once for four dot products (multi-class SGD: 4x fewer loads of x).  The same
    dot products as one class at a time, summed in another order (rounding only)."""
    n_cls = W.shape[1]
    D = x.shape[0]
    Wj = W[j]  # anchor-major: the n_cls rows of anchor j lie together
    c = 0
    while c + 4 <= n_cls:
        w0 = Wj[c]
        w1 = Wj[c + 1]
        w2 = Wj[c + 2]
        w3 = Wj[c + 3]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for d in range(D):
            xd = x[d]
            s0 += w0[d] * xd
            s1 += w1[d] * xd
            s2 += w2[d] * xd
            s3 += w3[d] * xd
        out[c] = s0
        out[c + 1] = s1
        out[c + 2] = s2
        out[c + 3] = s3
        c += 4
    while c + 2 <= n_cls:
        w0 = Wj[c]
        w1 = Wj[c + 1]
        s0 = 0.0
        s1 = 0.0
        for d in range(D):
            xd = x[d]
            s0 += w0[d] * xd
            s1 += w1[d] * xd
        out[c] = s0
        out[c + 1] = s1
        c += 2
    if c < n_cls:
        w0 = Wj[c]
        s0 = 0.0
        for d in range(D):
            s0 += w0[d] * x[d]
        out[c] = s0


def _row(X, i, table, out):
    """Row i as float64: X[i] itself (``table`` None), or the values ``table[u, d]`` of
    its stored bytes u, looked up into ``out`` (no arithmetic: exact under fastmath)."""
    if table is None:
        return X[i]
    out[:] = table[X[i], np.arange(out.shape[0])]
    return out


@overload(_row, jit_options={"nogil": True})
def _row_typed(X, i, table, out):
    # chosen at typing time, so the two kinds of row never meet in one variable
    if isinstance(table, (types.NoneType, types.Omitted)):
        return lambda X, i, table, out: X[i]

    def lookup(X, i, table, out):
        for d in range(out.shape[0]):
            out[d] = table[X[i, d], d]
        return out
    return lookup


@njit(cache=True, nogil=True, fastmath=True)
def sgd_epoch_dense(X, Y, idx, gam, order, W, b, lam, t0, t, count, skip, bias_scale, use_W,
                    table=None):
    """``table`` None: X float64 as trained on; or X the stored uint8 rows and ``table``
    their values (``StoredRows``), looked up per row as read (streaming: 8x fewer bytes
    read per epoch)."""
    m, n_cls, D = W.shape
    k = idx.shape[1]
    sw = 1.0
    sb = 1.0
    dots = np.zeros(n_cls)
    f = np.empty(n_cls)
    row = np.empty(D)
    for p in range(order.shape[0]):
        i = order[p]
        x = _row(X, i, table, row)
        eta = _eta(lam, t, t0)  # optimal rate 1/(λ(t + t0))
        # eq. (8): f_c = γᵀ W_c x + γᵀ b_c over the k active anchors, all classes at once
        f[:] = 0.0
        for a in range(k):
            j = idx[i, a]
            if use_W:
                _class_dots(W, j, x, dots)
            for c in range(n_cls):
                f[c] += gam[i, a] * (sw * dots[c] + sb * b[c, j])
        for c in range(n_cls):
            y = Y[i, c]
            if 1.0 - y * f[c] > 0.0:  # hinge violated (class c's update leaves f_c' alone)
                # :func:`_step_dense` written out: inlined here, LLVM's fastmath rounds
                # this hottest loop differently (W not bitwise the same)
                for a in range(k):
                    j = idx[i, a]
                    g = eta * y * gam[i, a]
                    if use_W:  # eq. (11): W[j] += η y γ_j x   (stored W = W_true / sw)
                        gw = g / sw
                        for d in range(D):
                            W[j, c, d] += gw * x[d]
                    b[c, j] += g * bias_scale / sb  # eq. (12) with the bias-corrected rate
        # skip regularisation, eq. (13); b instead of W for LCC+SVM
        sw, sb, t, count = _end_step(W, b, sw, sb, t, t0, count, skip, use_W)
    _unscale(W, b, sw, sb)
    return t, count


@njit(cache=True, nogil=True, fastmath=True)
def sgd_epoch_csr(
    data, indices, indptr, Y, idx, gam, order, W, b, lam, t0, t, count, skip, bias_scale, use_W
):
    m, n_cls, D = W.shape
    k = idx.shape[1]
    sw = 1.0
    sb = 1.0
    for p in range(order.shape[0]):
        i = order[p]
        lo = indptr[i]
        hi = indptr[i + 1]
        eta = _eta(lam, t, t0)
        for c in range(n_cls):
            y = Y[i, c]
            f = 0.0  # eq. (8)
            for a in range(k):
                j = idx[i, a]
                s = 0.0
                if use_W:
                    for q in range(lo, hi):
                        s += W[j, c, indices[q]] * data[q]
                f += gam[i, a] * (sw * s + sb * b[c, j])
            if 1.0 - y * f > 0.0:
                for a in range(k):  # eq. (11)-(12) on the non-zeros of x
                    _step_csr(W, b, idx[i, a], c, eta * y * gam[i, a], data, indices, lo, hi,
                              sw, sb, bias_scale, use_W)
        sw, sb, t, count = _end_step(W, b, sw, sb, t, t0, count, skip, use_W)  # eq. (13)
    _unscale(W, b, sw, sb)
    return t, count


@njit(cache=True, nogil=True, fastmath=True)
def decision_codes_dense(X, idx, gam, W, b, use_W):
    """f[i, c] = Σ_a γ_a (W[j_a, c]·x_i + b[c, j_a])  (eq. 8) for precomputed codes."""
    n = idx.shape[0]
    m, n_cls, D = W.shape
    k = idx.shape[1]
    out = np.zeros((n, n_cls))
    dots = np.zeros(n_cls)
    for i in range(n):
        for a in range(k):
            j = idx[i, a]
            if use_W:
                _class_dots(W, j, X[i], dots)
            for c in range(n_cls):
                out[i, c] += gam[i, a] * (dots[c] + b[c, j])
    return out


@njit(cache=True, nogil=True, fastmath=True)
def decision_codes_csr(data, indices, indptr, idx, gam, W, b, use_W):
    n = idx.shape[0]
    m, n_cls, D = W.shape
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
                        s += W[j, c, indices[q]] * data[q]
                f += gam[i, a] * s
            out[i, c] = f
    return out


# ------------------------------------------------------------------ learned anchors



@njit(cache=True, nogil=True, fastmath=True)
def _nearest(x, V, k, idx, dist):
    """The k nearest anchors of x: idx/dist ascending by (squared distance, index)."""
    m, D = V.shape
    cnt = 0
    for j in range(m):
        s = 0.0
        for d in range(D):
            e = x[d] - V[j, d]
            s += e * e
        cnt = _insert_nearest(s, j, cnt, k, idx, dist)


@njit(cache=True, nogil=True, fastmath=True)
def _weights(dist, kind, param, gam, g):
    """γ over the sorted k nearest and the gradient factors g; returns the active count."""
    k = dist.shape[0]
    if kind == KERNEL_SOFT_KNN:
        # SAPL eq. (2) with d_min subtracted; g_a = 2β γ_a (eq. 13-16)
        tot = 0.0
        for a in range(k):
            gam[a] = np.exp(-param * (dist[a] - dist[0]))
            tot += gam[a]
        for a in range(k):
            gam[a] /= tot
            g[a] = 2.0 * param * gam[a]
        return k
    # JO Alg. 1: η_a = μ(d_a - d_min); grow while λ_k > η_{k+1}, eq. (21); k ≤ cap
    s1 = 0.0
    s2 = 0.0
    ka = 0
    lam = 1.0  # λ_0 = η_1 + 1
    while ka < k and (ka == 0 or lam > param * (dist[ka] - dist[0])):
        e = param * (dist[ka] - dist[0])
        s1 += e
        s2 += e * e
        ka += 1
        lam = (s1 + np.sqrt(max(ka + s1 * s1 - ka * s2, 0.0))) / ka
    tot = 0.0
    for a in range(k):
        gam[a] = max(lam - param * (dist[a] - dist[0]), 0.0) if a < ka else 0.0
        tot += gam[a]
    for a in range(k):
        gam[a] /= tot  # eq. (19)
        g[a] = 2.0 * param / tot if a < ka else 0.0  # eq. (22)-(23), λ frozen
    return ka


@njit(cache=True, nogil=True, fastmath=True)
def anchor_grad_dense(x, V, W, b, c, kind, param, k, use_W):
    """∂f_c/∂v_j for the k nearest anchors of one sample: (idx (k,), grad (k, D), k*).
    A test helper: W here is (C, m, D), as the estimators hold it."""
    D = V.shape[1]
    idx = np.empty(k, np.int64)
    dist = np.empty(k)
    gam = np.empty(k)
    g = np.empty(k)
    _nearest(x, V, k, idx, dist)
    ka = _weights(dist, kind, param, gam, g)
    h = np.zeros(k)
    f = 0.0
    for a in range(ka):
        j = idx[a]
        s = b[c, j]
        if use_W:
            for d in range(D):
                s += W[c, j, d] * x[d]
        h[a] = s
        f += gam[a] * s
    grad = np.zeros((k, D))
    for a in range(ka):
        for d in range(D):
            grad[a, d] = g[a] * (h[a] - f) * (x[d] - V[idx[a], d])
    return idx, grad, ka


@njit(cache=True, nogil=True, fastmath=True)
def sgd_epoch_anchors_dense(
    X, Y, order, V, W, b, lam, t0, t, count, skip, bias_scale, use_W,
    kind, param, k, anchor_scale, n_active, step_max=1e300,
):
    m, n_cls, D = W.shape
    sw = 1.0
    sb = 1.0
    idx = np.empty(k, np.int64)
    dist = np.empty(k)
    gam = np.empty(k)
    g = np.empty(k)
    h = np.empty((n_cls, k))
    f = np.empty(n_cls)
    dots = np.zeros(n_cls)
    viol = np.empty(n_cls, np.bool_)
    for p in range(order.shape[0]):
        i = order[p]
        eta = _eta(lam, t, t0)
        _nearest(X[i], V, k, idx, dist)  # codes from the current anchors (they move)
        ka = _weights(dist, kind, param, gam, g)
        n_active[p] = ka
        any_viol = False
        f[:] = 0.0  # eq. (11): f = γᵀ(W x + b), all classes at once
        for a in range(ka):
            j = idx[a]
            if use_W:
                _class_dots(W, j, X[i], dots)
            for c in range(n_cls):
                h[c, a] = sw * dots[c] + sb * b[c, j]
                f[c] += gam[a] * h[c, a]
        for c in range(n_cls):
            viol[c] = 1.0 - Y[i, c] * f[c] > 0.0
            any_viol = any_viol or viol[c]
        if any_viol:
            # anchors first, pre-update W, b: v_j += η·scale·Σ_c y_c ∂f_c/∂v_j (eq. 16, 21)
            for a in range(ka):
                j = idx[a]
                step = _anchor_step(Y, i, viol, h, f, a, g, eta, anchor_scale, step_max)
                for d in range(D):
                    V[j, d] += step * (X[i, d] - V[j, d])
            for c in range(n_cls):
                if not viol[c]:
                    continue
                for a in range(ka):  # eq. (17)-(18)
                    _step_dense(W, b, idx[a], c, eta * Y[i, c] * gam[a], X[i], sw, sb,
                                bias_scale, use_W)
        # eq. (19); b instead of W for SAPL-lcc
        sw, sb, t, count = _end_step(W, b, sw, sb, t, t0, count, skip, use_W)
    _unscale(W, b, sw, sb)
    return t, count


@njit(cache=True, nogil=True, fastmath=True)
def _nearest_csr(data, indices, lo, hi, xx, U, s, vv, k, xv, idx, dist):
    """:func:`_nearest` for a CSR row x against v_j = s_j U[:, j] (U (D, m), ||v_j||² = vv_j):
    d_j = ||x||² - 2 x·v_j + ||v_j||², clipped at 0; xv receives x·v_j."""
    m = U.shape[1]
    for j in range(m):
        xv[j] = 0.0
    for q in range(lo, hi):  # one contiguous row of U per non-zero of x
        col = indices[q]
        xq = data[q]
        for j in range(m):
            xv[j] += U[col, j] * xq
    cnt = 0
    for j in range(m):
        xv[j] *= s[j]
        cnt = _insert_nearest(max(xx - 2.0 * xv[j] + vv[j], 0.0), j, cnt, k, idx, dist)


@njit(cache=True, nogil=True, fastmath=True)
def sgd_epoch_anchors_csr(
    data, indices, indptr, Y, order, V, W, b, lam, t0, t, count, skip, bias_scale, use_W,
    kind, param, k, anchor_scale, n_active, step_max=1e300,
):
    """:func:`sgd_epoch_anchors_dense` on CSR rows (same steps, same order); V stays dense.

    The anchors live in a transposed working copy U (D, m), v_j = s_j U[:, j], with
    ||v_j||² kept up to date, so a step costs O(m·nnz(x)), not O(m·D): the move
    v_j += c (x - v_j) is s_j *= 1 - c, U[:, j] += c/s_j x on the non-zeros of x, and
    ||v_j||² = (1-c)²||v_j||² + 2c(1-c) x·v_j + c²||x||².  A scale outside
    [_FOLD_BELOW, 1/_FOLD_BELOW] (c near 1) is folded into its column (O(D)); the scales
    are folded back into V when the call returns.  Agrees with the dense kernel to
    rounding (distances by the expansion, not Σ(x_d - v_d)²)."""
    m, n_cls, D = W.shape
    U = np.ascontiguousarray(V.T)
    s = np.ones(m)
    vv = np.empty(m)
    for j in range(m):
        acc = 0.0
        for d in range(D):
            acc += V[j, d] * V[j, d]
        vv[j] = acc
    sw = 1.0
    sb = 1.0
    xv = np.empty(m)
    idx = np.empty(k, np.int64)
    dist = np.empty(k)
    gam = np.empty(k)
    g = np.empty(k)
    h = np.empty((n_cls, k))
    f = np.empty(n_cls)
    viol = np.empty(n_cls, np.bool_)
    for p in range(order.shape[0]):
        i = order[p]
        lo = indptr[i]
        hi = indptr[i + 1]
        xx = 0.0
        for q in range(lo, hi):
            xx += data[q] * data[q]
        eta = _eta(lam, t, t0)
        _nearest_csr(data, indices, lo, hi, xx, U, s, vv, k, xv, idx, dist)
        ka = _weights(dist, kind, param, gam, g)
        n_active[p] = ka
        any_viol = False
        for c in range(n_cls):
            fc = 0.0  # eq. (11) on the non-zeros of x
            for a in range(ka):
                j = idx[a]
                acc = 0.0
                if use_W:
                    for q in range(lo, hi):
                        acc += W[j, c, indices[q]] * data[q]
                h[c, a] = sw * acc + sb * b[c, j]
                fc += gam[a] * h[c, a]
            f[c] = fc
            viol[c] = 1.0 - Y[i, c] * fc > 0.0
            any_viol = any_viol or viol[c]
        if any_viol:
            for a in range(ka):  # eq. (16, 21): anchors first, pre-update W, b
                j = idx[a]
                step = _anchor_step(Y, i, viol, h, f, a, g, eta, anchor_scale, step_max)
                if step == 0.0:
                    continue
                r = 1.0 - step
                s_new = s[j] * r
                if abs(s_new) < _FOLD_BELOW or abs(s_new) > 1.0 / _FOLD_BELOW:
                    acc = 0.0  # fold: U[:, j] = v_j after the move, s_j = 1
                    for d in range(D):
                        U[d, j] *= s_new
                    for q in range(lo, hi):
                        U[indices[q], j] += step * data[q]
                    for d in range(D):
                        acc += U[d, j] * U[d, j]
                    vv[j] = acc
                    s[j] = 1.0
                else:
                    vv[j] = max(r * r * vv[j] + 2.0 * step * r * xv[j] + step * step * xx, 0.0)
                    s[j] = s_new
                    cj = step / s_new
                    for q in range(lo, hi):
                        U[indices[q], j] += cj * data[q]
            for c in range(n_cls):
                if not viol[c]:
                    continue
                for a in range(ka):  # eq. (17)-(18) on the non-zeros of x
                    _step_csr(W, b, idx[a], c, eta * Y[i, c] * gam[a], data, indices, lo, hi,
                              sw, sb, bias_scale, use_W)
        sw, sb, t, count = _end_step(W, b, sw, sb, t, t0, count, skip, use_W)  # eq. (19)
    _unscale(W, b, sw, sb)
    for j in range(m):
        for d in range(D):
            V[j, d] = s[j] * U[d, j]
    return t, count
