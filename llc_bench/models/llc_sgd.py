"""``trainer=llc_sgd``: SGD for LL-SVM / LCC+SVM (DESIGN §4, §6).

Per step t (counting every step over all epochs), sample i of a fresh seeded
permutation per epoch, rate η_t = 1/(λ(t + t0)):

* decision f_c = γᵀ W_c x + γᵀ b_c (LL-SVM eq. 8) for every class c
  (one-vs-all, shared anchors and codes: LLC-SAPL eq. 21);
* if 1 - y_c f_c > 0:  W_c[active] += η y_c γ xᵀ (eq. 11; skipped when
  ``use_W`` is False = LCC+SVM) and b_c[active] += η·bias_scale·y_c γ (eq. 12 with
  SVMSGD2's bias-corrected rate);
* every ``skip`` steps W *= r, r = 1 - skip/(t + t0) (eq. 13), or
  (1 - 1/(t + t0))^skip when r < 0.8 (SVMSGD2); b instead of W when ``use_W`` is
  False (b is then the weight vector, LLC-SAPL §3.3).

Defaults (SVMSGD2, DESIGN §6): t0 = λ^(-3/4); bias_scale "auto" = half the
largest mean |x_j| over features (for ``use_W=False`` "auto" is 1: there b is
the regularised weight vector of a linear SVM on γ, not a bias, so it takes the
plain rate η_t); skip = 16 for dense x, 16·D/avg_nnz for CSR x.

The hot loop is in ``_sgd_kernel.py`` (numba); :func:`sgd_step_reference` is the
same step in plain numpy, used by the tests and the benchmark.

Anchor learning (LLC-SAPL Alg. 1, LLC-JO Alg. 2; ``learn_anchors=True``): the
codes are recomputed from the current anchors at every step (the kernel computes
the distances to all m anchors); on a violation of any output the active anchors
move *first*, with the pre-update W, b (DESIGN §4):

    v_j += η_t · anchor_scale · Σ_{c: 1 - y_c f_c > 0} y_c ∂f_c/∂v_j      (SAPL eq. 16, 21)

with ∂f/∂v_j = 2β γ_j (h_j - f)(x - v_j) for soft_knn and
2μ (h_j - f)(x - v_j)/Σ_l(λ - η_l) for adaptive_knn (λ frozen, JO eq. 22); then
W and b move with the codes of that step (computed before the anchors moved, as
Alg. 1 computes γ once per iteration).  One set of anchors is shared by all
one-vs-all outputs (SAPL eq. 21).  Anchors are not regularised.  ``anchor_scale``
(default 1) multiplies the anchor rate only: η_t = 1/(λ(t + t0)) is tuned for
W, and the anchors live on the scale of x; in practice the stable range runs from
~1e-2 (banana, β ≈ 6) to ~3 (ijcnn), so the presets tune it per dataset — beyond
it the anchors overshoot x and the model collapses within an epoch (the step is
∝ β·anchor_scale, so the stable anchor_scale scales like 1/β).  ``anchor_step_max``
(not in the papers, off by default) is a trust region: it clips the fraction c of
v_j += c (x - v_j) to [-max, max].  Dense X only
(CSR is densified by the estimator when it fits in memory).  The kernel is
``_sgd_kernel.sgd_epoch_anchors_dense``; :func:`sgd_step_anchors_reference` is the
same step in numpy.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ..coding.local import LocalCode
from ..errors import ConfigError
from . import _sgd_kernel as K

#: Default skip for dense data (DESIGN §6).
DENSE_SKIP = 16


def default_t0(lambda_: float) -> float:
    """SVMSGD2: typical |w| = λ^(-1/4) = η0, t0 = 1/(λ η0) = λ^(-3/4)."""
    return float(lambda_**-0.75)


def auto_bias_scale(X, use_W: bool = True) -> float:
    """SVMSGD2's bias scale: half the largest mean |x_j| over features (1 for LCC+SVM)."""
    if not use_W:
        return 1.0
    if sp.issparse(X):
        col = np.asarray(abs(X).mean(axis=0)).ravel()
    else:
        col = np.abs(X).mean(axis=0)
    return float(0.5 * col.max()) if col.size else 1.0


def default_skip(X) -> int:
    """16 for dense data; 16·D/avg_nnz for sparse data (SVMSGD2's rule)."""
    if sp.issparse(X):
        n, D = X.shape
        avg = max(X.nnz / max(n, 1), 1.0)
        return max(1, int(DENSE_SKIP * D / avg))
    return DENSE_SKIP


def labels_matrix(y_idx: np.ndarray, n_classes: int) -> np.ndarray:
    """±1 targets (n, n_out): one column (class 1 positive) for 2 classes, else one per class."""
    if n_classes == 2:
        return np.where(y_idx == 1, 1.0, -1.0)[:, None].copy()
    Y = -np.ones((y_idx.shape[0], n_classes))
    Y[np.arange(y_idx.shape[0]), y_idx] = 1.0
    return Y


def sgd_step_reference(
    W, b, x, y, idx, gam, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """One SGD step in plain numpy (no scale trick); W (C,m,D), b (C,m) updated in place.

    ``x`` dense (D,), ``y`` (C,) ±1, ``idx``/``gam`` (k,) the sample's code.
    Returns the new (t, count).
    """
    eta = 1.0 / (lambda_ * (t + t0))
    for c in range(W.shape[0]):
        f = gam @ (W[c, idx] @ x + b[c, idx])  # eq. (8)
        if 1.0 - y[c] * f > 0.0:
            if use_W:
                W[c, idx] += eta * y[c] * np.outer(gam, x)  # eq. (11)
            b[c, idx] += eta * bias_scale * y[c] * gam  # eq. (12), bias-corrected rate
    count -= 1
    if count <= 0:
        r = 1.0 - skip / (t + t0)  # eq. (13)
        if r < 0.8:
            r = (1.0 - 1.0 / (t + t0)) ** skip
        if use_W:
            W *= r
        else:
            b *= r
        count = skip
    return t + 1, count


def sgd_epoch_reference(
    X, Y, code: LocalCode, order, W, b, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """One epoch of :func:`sgd_step_reference` (slow; tests and benchmark only)."""
    idx = code.indices.astype(np.intp)
    for i in order:
        x = X[i].toarray().ravel() if sp.issparse(X) else X[i]
        t, count = sgd_step_reference(
            W,
            b,
            x,
            Y[i],
            idx[i],
            code.weights[i],
            t,
            count,
            lambda_=lambda_,
            t0=t0,
            skip=skip,
            bias_scale=bias_scale,
            use_W=use_W,
        )
    return t, count


def encode_row_reference(x, V, coding):
    """One sample's code against anchors V (numpy): (idx, γ, g) sorted by (distance, index).

    g are the factors of ∂f/∂v_j = g_j (h_j - f)(x - v_j); zero weights beyond k*.
    """
    from ..coding.local import AdaptiveKNNCoding, SoftKNNCoding, adaptive_knn_weights

    d_all = ((x[None, :] - V) ** 2).sum(axis=1)
    k = min(coding.k, V.shape[0])
    idx = np.argsort(d_all, kind="stable")[:k]
    d = d_all[idx][None, :]
    if isinstance(coding, SoftKNNCoding):
        gam = coding.weights_from_sq_distances(d, d)[0]
        g = 2.0 * coding.beta_ * gam  # SAPL eq. (13)-(16)
    elif isinstance(coding, AdaptiveKNNCoding):
        w, _, _, norm = adaptive_knn_weights(d, coding.mu)
        gam = w[0]
        g = np.where(gam > 0, 2.0 * coding.mu / norm[0], 0.0)  # JO eq. (22), λ frozen
    else:
        raise ConfigError(f"learn_anchors needs soft_knn or adaptive_knn, not {coding.name!r}")
    return idx, gam, g


def sgd_step_anchors_reference(
    W, b, V, x, y, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One LLC-SAPL / LLC-JO step in plain numpy; W, b, V updated in place.

    Returns (t, count, k*) with k* the number of non-zero weights of the step's code.
    """
    eta = 1.0 / (lambda_ * (t + t0))
    idx, gam, g = encode_row_reference(x, V, coding)  # γ from the current anchors
    H = W[:, idx] @ x + b[:, idx] if use_W else b[:, idx].copy()  # (C, k): h_j = W_j x + b_j
    F = H @ gam  # eq. (11)
    viol = 1.0 - y * F > 0.0
    if viol.any():
        # eq. (16)/(21): Σ over violated outputs of y_c ∂f_c/∂v_j, with the pre-update W, b
        s = (y[viol, None] * (H[viol] - F[viol, None])).sum(axis=0)
        c = eta * anchor_scale * g * s  # v_j += c_j (x - v_j)
        if anchor_step_max is not None:
            c = np.clip(c, -anchor_step_max, anchor_step_max)
        V[idx] += c[:, None] * (x[None, :] - V[idx])
        for c in np.flatnonzero(viol):
            if use_W:
                W[c, idx] += eta * y[c] * np.outer(gam, x)  # eq. (17)
            b[c, idx] += eta * bias_scale * y[c] * gam  # eq. (18)
    count -= 1
    if count <= 0:
        r = 1.0 - skip / (t + t0)  # eq. (19)
        if r < 0.8:
            r = (1.0 - 1.0 / (t + t0)) ** skip
        if use_W:
            W *= r
        else:
            b *= r
        count = skip
    return t + 1, count, int(np.count_nonzero(gam))


def sgd_epoch_anchors_reference(
    X, Y, order, V, W, b, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One epoch of :func:`sgd_step_anchors_reference`; returns (t, count, k* per step)."""
    ks = np.empty(len(order), dtype=np.int64)
    for p, i in enumerate(order):
        t, count, ks[p] = sgd_step_anchors_reference(
            W, b, V, X[i], Y[i], t, count, coding, lambda_=lambda_, t0=t0, skip=skip,
            bias_scale=bias_scale, use_W=use_W, anchor_scale=anchor_scale,
            anchor_step_max=anchor_step_max,
        )
    return t, count, ks


def coding_kernel_args(coding) -> tuple[int, float, int]:
    """(kind, param, k) of a fitted soft_knn / adaptive_knn coding for the kernel."""
    from ..coding.local import AdaptiveKNNCoding, SoftKNNCoding

    if isinstance(coding, SoftKNNCoding):
        if coding.beta_ is None:
            raise ConfigError("soft_knn with beta='auto' must be fitted before training")
        return K.CODING_SOFT_KNN, float(coding.beta_), int(coding.k)
    if isinstance(coding, AdaptiveKNNCoding):
        return K.CODING_ADAPTIVE_KNN, float(coding.mu), int(coding.k)
    name = getattr(coding, "name", coding)
    raise ConfigError(
        f"learn_anchors needs a coding with an anchor gradient (soft_knn, adaptive_knn), "
        f"got {name!r}"
    )


def run_epoch_anchors(
    X, Y, order, V, W, b, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One learned-anchor epoch with the numba kernel (dense X); W, b, V in place.

    Returns (t, count, k* per step)."""
    if sp.issparse(X):
        raise ConfigError("learn_anchors needs dense X (densify it first)")
    kind, param, k = coding_kernel_args(coding)
    k = min(k, V.shape[0])
    order = np.ascontiguousarray(order, dtype=np.int64)
    ks = np.empty(order.shape[0], dtype=np.int64)
    t, count = K.sgd_epoch_anchors_dense(
        X, Y, order, V, W, b, float(lambda_), float(t0), int(t), int(count), int(skip),
        float(bias_scale), bool(use_W), int(kind), float(param), int(k), float(anchor_scale), ks,
        1e300 if anchor_step_max is None else float(anchor_step_max),  # finite: fastmath
    )
    return t, count, ks


def run_epoch(
    X, Y, code: LocalCode, order, W, b, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """One epoch with the numba kernel (dense or CSR X); W, b in place; returns (t, count)."""
    idx = code.indices
    gam = code.weights
    order = np.ascontiguousarray(order, dtype=np.int64)
    if sp.issparse(X):
        return K.sgd_epoch_csr(
            X.data,
            X.indices,
            X.indptr,
            Y,
            idx,
            gam,
            order,
            W,
            b,
            float(lambda_),
            float(t0),
            int(t),
            int(count),
            int(skip),
            float(bias_scale),
            bool(use_W),
        )
    return K.sgd_epoch_dense(
        X,
        Y,
        idx,
        gam,
        order,
        W,
        b,
        float(lambda_),
        float(t0),
        int(t),
        int(count),
        int(skip),
        float(bias_scale),
        bool(use_W),
    )


def decision_from_codes(X, code: LocalCode, W, b, use_W=True) -> np.ndarray:
    """(n, n_out) decision values for precomputed codes (numba; used for the history)."""
    if sp.issparse(X):
        return K.decision_codes_csr(
            X.data, X.indices, X.indptr, code.indices, code.weights, W, b, bool(use_W)
        )
    return K.decision_codes_dense(X, code.indices, code.weights, W, b, bool(use_W))


def calibrate_t0(
    X,
    Y,
    code: LocalCode,
    *,
    lambda_,
    skip,
    bias_scale,
    use_W=True,
    n_sub: int = 1000,
    factor: float = 2.0,
    max_tries: int = 30,
    random_state=None,
) -> tuple[float, dict]:
    """t0 from sgd-2's ``determineEta0`` (DESIGN §6, optional): on a seeded subsample of
    ≤ ``n_sub`` rows, run one pass from W = b = 0 with the schedule of t0 = 1/(λ η0)
    and measure the cost λ/2||θ||² + mean hinge on the subsample; starting from
    SVMSGD2's η0 = λ^(-1/4), halve (or double) η0 while the cost decreases.  As in
    sgd-2 the smaller η0 of the final bracket is kept (the best one tried, or one
    halving below it).  Returns (t0, info).

    SVMSGD2's λ^(-3/4) assumes ||x|| ≈ 1; after standard scaling ||x||² ≈ D and
    its first steps are far too large, which this calibration corrects.
    """
    n = X.shape[0]
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(n, n_sub, replace=False)) if n > n_sub else np.arange(n)
    Xs = X[rows]
    if sp.issparse(Xs):
        Xs = Xs.tocsr()
    Ys = np.ascontiguousarray(Y[rows])
    cs = code.take(rows)
    order = rng.permutation(rows.size)
    n_out, m = Ys.shape[1], int(code.indices.max()) + 1
    D = X.shape[1]

    def cost(eta0):
        W = np.zeros((n_out, m, D))
        b = np.zeros((n_out, m))
        run_epoch(
            Xs,
            Ys,
            cs,
            order,
            W,
            b,
            0,
            skip,
            lambda_=lambda_,
            t0=1.0 / (lambda_ * eta0),
            skip=skip,
            bias_scale=bias_scale,
            use_W=use_W,
        )
        F = decision_from_codes(Xs, cs, W, b, use_W)
        theta = W if use_W else b
        return 0.5 * lambda_ * float(np.dot(theta.ravel(), theta.ravel())) + float(
            np.maximum(0.0, 1.0 - Ys * F).sum(axis=1).mean()
        )

    tried = {}
    lo = lambda_**-0.25
    lo_cost = tried[lo] = cost(lo)
    hi = lo * factor
    hi_cost = tried[hi] = cost(hi)
    if lo_cost < hi_cost:
        for _ in range(max_tries):
            if not lo_cost < hi_cost:
                break
            hi, hi_cost = lo, lo_cost
            lo = hi / factor
            lo_cost = tried[lo] = cost(lo)
    elif hi_cost < lo_cost:
        for _ in range(max_tries):
            if not hi_cost < lo_cost:
                break
            lo, lo_cost = hi, hi_cost
            hi = lo * factor
            hi_cost = tried[hi] = cost(hi)
    eta0 = lo
    t0 = 1.0 / (lambda_ * eta0)
    return t0, {
        "eta0": eta0,
        "n_sub": int(rows.size),
        "tried": {f"{k:.6g}": v for k, v in sorted(tried.items())},
    }


class AnchorLearningUnavailable(ConfigError, NotImplementedError):
    """``learn_anchors=True`` without the anchors and the coding to learn them with."""


def train_llc_sgd(
    X,
    Y: np.ndarray,
    code: LocalCode,
    W: np.ndarray,
    b: np.ndarray,
    *,
    lambda_: float,
    epochs: int = 10,
    t0: float | str | None = None,
    bias_scale: float | str = "auto",
    skip: int | None = None,
    use_W: bool = True,
    random_state=None,
    learn_anchors: bool = False,
    callback: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
    anchors: np.ndarray | None = None,
    coding=None,
    anchor_scale: float = 1.0,
    epoch_stats: list | None = None,
    anchor_step_max: float | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Run ``epochs`` SGD epochs from (W, b) (updated in place and returned).

    X dense C-ordered float64 (n, D) or CSR; Y (n, n_out) ±1 (:func:`labels_matrix`);
    ``code`` the fixed training codes.  ``random_state`` seeds the per-epoch
    permutations (``numpy.random.default_rng``).  ``callback(epoch, W, b)`` runs
    after every epoch (1-based).  Returns (W, b, info) with the resolved t0,
    bias_scale, skip, the step count and per-epoch seconds.

    ``learn_anchors=True`` (LLC-SAPL / LLC-JO) also needs ``anchors`` (m, D) float64
    C-ordered, moved in place, and the fitted ``coding`` (soft_knn or
    adaptive_knn) that encodes every step; X must be dense.  ``code`` is then only
    used by ``t0="calibrate"`` (the initial codes).  ``anchor_scale`` multiplies the
    anchor rate; ``anchor_step_max`` (None = off, the papers' step) clips the fraction
    c of each anchor move v_j += c (x - v_j) to [-max, max].  ``epoch_stats``, if a
    list, receives one dict per epoch before the callback runs: {"mean_k"} = the mean
    number of non-zero weights per step (k* of adaptive_knn, JO Fig. 3).
    """
    if learn_anchors and (anchors is None or coding is None):
        raise AnchorLearningUnavailable(
            "learn_anchors=True needs anchors= (moved in place) and the fitted coding= "
            "(soft_knn or adaptive_knn): the codes are recomputed at every step"
        )
    if lambda_ <= 0:
        raise ConfigError(f"lambda must be > 0, got {lambda_}")
    if not anchor_scale >= 0:
        raise ConfigError(f"anchor_scale must be >= 0, got {anchor_scale}")
    if anchor_step_max is not None and not anchor_step_max > 0:
        raise ConfigError(f"anchor_step_max must be > 0 or None, got {anchor_step_max}")
    if isinstance(bias_scale, str):
        if bias_scale != "auto":
            raise ConfigError(f"bias_scale must be a number or 'auto', got {bias_scale!r}")
        bias_scale = auto_bias_scale(X, use_W)
    skip = default_skip(X) if skip is None else int(skip)
    if skip < 1:
        raise ConfigError(f"skip must be >= 1, got {skip}")
    if sp.issparse(X):
        if learn_anchors:
            raise ConfigError("learn_anchors needs dense X")
        X = X.tocsr()
    if learn_anchors:
        coding_kernel_args(coding)  # a coding with an anchor gradient, fitted
        if anchors.dtype != np.float64 or not anchors.flags.c_contiguous:
            raise ConfigError("anchors must be a C-contiguous float64 array (moved in place)")
    rng = np.random.default_rng(random_state)
    info: dict = {}
    if t0 is None:
        t0 = default_t0(lambda_)
    elif isinstance(t0, str):
        if t0 != "calibrate":
            raise ConfigError(f"t0 must be a number, None or 'calibrate', got {t0!r}")
        t0, info["t0_calibration"] = calibrate_t0(
            X,
            Y,
            code,
            lambda_=lambda_,
            skip=skip,
            bias_scale=bias_scale,
            use_W=use_W,
            random_state=rng.integers(2**31 - 1),
        )
    t0 = float(t0)
    if t0 <= 0:
        raise ConfigError(f"t0 must be > 0, got {t0}")
    n = X.shape[0]
    t, count = 0, skip
    seconds = []
    mean_k = []
    kw = dict(lambda_=lambda_, t0=t0, skip=skip, bias_scale=bias_scale, use_W=use_W)
    for epoch in range(1, epochs + 1):
        order = rng.permutation(n)
        start = time.perf_counter()
        if learn_anchors:
            t, count, ks = run_epoch_anchors(
                X, Y, order, anchors, W, b, t, count, coding, anchor_scale=anchor_scale,
                anchor_step_max=anchor_step_max, **kw
            )
            mean_k.append(float(ks.mean()) if ks.size else 0.0)
        else:
            t, count = run_epoch(X, Y, code, order, W, b, t, count, **kw)
            if code.n_active is not None:
                mean_k.append(float(code.n_active.mean()))
            else:
                mean_k.append(float(code.k))
        seconds.append(time.perf_counter() - start)
        if epoch_stats is not None:
            epoch_stats.append({"mean_k": mean_k[-1]})
        if callback is not None:
            callback(epoch, W, b)
    info.update(
        t0=t0,
        bias_scale=float(bias_scale),
        skip=skip,
        steps=int(t),
        epoch_seconds=seconds,
        use_W=bool(use_W),
    )
    info["lambda"] = float(lambda_)
    if learn_anchors:
        info.update(learn_anchors=True, anchor_scale=float(anchor_scale),
                    anchor_step_max=anchor_step_max)
    if code.n_active is not None or learn_anchors:
        info["mean_k_per_epoch"] = mean_k
    return W, b, info
