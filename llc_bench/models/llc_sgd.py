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
v_j += c (x - v_j) to [-max, max].  The kernels are
``_sgd_kernel.sgd_epoch_anchors_dense`` and ``sgd_epoch_anchors_csr`` (CSR X, dense
anchors); :func:`sgd_step_anchors_reference` is the same step in numpy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import scipy.sparse as sp

from ..coding.local import LocalCode
from ..data.rows import StoredRows
from ..errors import ConfigError, FitError
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


def anchor_major(W: np.ndarray, dtype=None) -> np.ndarray:
    """W (C, m, D) as the kernels read it: (m, C, D), C-contiguous, always a copy (with
    C = 1 or m = 1 the transposed view is already contiguous and would alias W), in
    ``dtype`` (None: W's; float32 = the ``sgd_dtype`` option)."""
    return np.array(W.transpose(1, 0, 2), dtype=dtype, order="C", copy=True)


#: ``sgd_dtype`` -> the dtype of the SGD kernels' working copy of W (None: float64).
SGD_DTYPES = {"float64": np.float64, "float32": np.float32}


def sgd_weights_dtype(sgd_dtype):
    """The numpy dtype of the SGD's working W for the ``sgd_dtype`` option (one error path
    for a bad value)."""
    if sgd_dtype is None:
        return np.float64
    if sgd_dtype not in SGD_DTYPES:
        raise ConfigError(f"sgd_dtype must be one of {sorted(SGD_DTYPES)} or null, "
                          f"got {sgd_dtype!r}")
    return SGD_DTYPES[sgd_dtype]


def run_epoch_anchors(X, Y, order, V, W, b, t, count, coding, **kw):
    """One learned-anchor epoch with the numba kernel (dense or CSR X); W (C, m, D), b,
    V in place.  Returns (t, count, k* per step)."""
    Wa = anchor_major(W)
    t, count, ks = _epoch_anchors(X, Y, order, V, Wa, b, t, count, coding, **kw)
    W[...] = Wa.transpose(1, 0, 2)
    return t, count, ks


def _epoch_anchors(
    X, Y, order, V, Wa, b, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """:func:`run_epoch_anchors` on an anchor-major Wa (:func:`anchor_major`)."""
    kind, param, k = coding_kernel_args(coding)
    k = min(k, V.shape[0])
    order = np.ascontiguousarray(order, dtype=np.int64)
    ks = np.empty(order.shape[0], dtype=np.int64)
    rows = (X,)
    kernel = K.sgd_epoch_anchors_dense
    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_canonical_format:  # ||x||² of the kernel needs summed duplicates
            X = X.copy()
            X.sum_duplicates()
        rows, kernel = (X.data, X.indices, X.indptr), K.sgd_epoch_anchors_csr
    t, count = kernel(
        *rows, Y, order, V, Wa, b, float(lambda_), float(t0), int(t), int(count), int(skip),
        float(bias_scale), bool(use_W), int(kind), float(param), int(k), float(anchor_scale), ks,
        1e300 if anchor_step_max is None else float(anchor_step_max),  # finite: fastmath
    )
    return t, count, ks


def run_epoch(X, Y, code: LocalCode, order, W, b, t, count, **kw):
    """One epoch with the numba kernel (dense or CSR X, or ``StoredRows``: stored rows
    scaled as read); W (C, m, D), b in place; returns (t, count)."""
    Wa = anchor_major(W)
    t, count = _epoch(X, Y, code, order, Wa, b, t, count, **kw)
    W[...] = Wa.transpose(1, 0, 2)
    return t, count


def _epoch(
    X, Y, code: LocalCode, order, Wa, b, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """:func:`run_epoch` on an anchor-major Wa (:func:`anchor_major`)."""
    idx = code.indices
    gam = code.weights
    order = np.ascontiguousarray(order, dtype=np.int64)
    table = None
    if isinstance(X, StoredRows):
        X, table = X.raw, X.table
    if sp.issparse(X):
        return K.sgd_epoch_csr(
            X.data,
            X.indices,
            X.indptr,
            Y,
            idx,
            gam,
            order,
            Wa,
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
        Wa,
        b,
        float(lambda_),
        float(t0),
        int(t),
        int(count),
        int(skip),
        float(bias_scale),
        bool(use_W),
        table,
    )


def decision_from_codes(X, code: LocalCode, W, b, use_W=True) -> np.ndarray:
    """(n, n_out) decision values for precomputed codes (numba; used for the history)."""
    Wa = anchor_major(W)
    if sp.issparse(X):
        return K.decision_codes_csr(
            X.data, X.indices, X.indptr, code.indices, code.weights, Wa, b, bool(use_W)
        )
    return K.decision_codes_dense(X, code.indices, code.weights, Wa, b, bool(use_W))


def sgd_objective(X, Y, code: LocalCode, W, b, lambda_, use_W=True) -> tuple[float, np.ndarray]:
    """(λ/2 Σ_c ||θ_c||² + 1/N Σ_n Σ_c hinge, F): the training objective (LL-SVM eq. 9,
    one-vs-all LLC-SAPL eq. 21; θ = W, or b for LCC+SVM) and the decision values F."""
    F = decision_from_codes(X, code, W, b, use_W)
    theta = W if use_W else b
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN: see check_finite_fit
        hinge = np.maximum(0.0, 1.0 - Y * F).sum(axis=1).mean()
        return float(0.5 * lambda_ * np.dot(theta.ravel(), theta.ravel()) + hinge), F


#: η0 grid of :func:`calibrate_eta0`: SVMSGD2's λ^(-1/4) times 2^j for these j.
ETA0_GRID_EXPONENTS = tuple(range(2, -25, -1))
#: Rows per calibration subsample, and how many seeded subsamples are averaged.
CALIBRATION_ROWS = 2000
CALIBRATION_REPEATS = 2
#: Learned anchors (LLC-SAPL / LLC-JO): their gain builds up over many steps, so each η0
#: runs this many passes (scored on the rows they trained on: scored on other rows, a
#: small subsample's SGD noise picks a tiny η0 every time) over a grid of step 4.
LEARNED_PASSES = 10
LEARNED_ETA0_EXPONENTS = ETA0_GRID_EXPONENTS[::2]
#: Costs within this relative margin of the grid's minimum count as equal; the largest
#: such η0 is kept (a flat tail of tiny steps would otherwise decide by rounding noise).
CALIBRATION_TIE = 1e-4
#: An epoch whose training objective exceeds this multiple of the starting one diverged:
#: the run restarts from its starting point with η0 divided by RETRY_DIVISOR.
DIVERGENCE_FACTOR = 2.0
RETRY_DIVISOR = 8.0
MAX_RETRIES = 4


def calibrate_eta0(
    X, Y, code: LocalCode, W, b, *, lambda_, skip, bias_scale, use_W=True, anchors=None,
    coding=None, anchor_scale=1.0, anchor_step_max=None, n_sub=CALIBRATION_ROWS,
    repeats=CALIBRATION_REPEATS, passes=1, exponents=ETA0_GRID_EXPONENTS, random_state=None,
    coarse_step=None, w_dtype=np.float64,
) -> tuple[float, dict]:
    """t0 = 1/(λ η0) with η0 chosen *from the warm start* (W, b and, when learned, the
    anchors; none of them is changed).

    For every η0 on the grid λ^(-1/4)·2^j (j in ``exponents``), ``passes`` SGD
    passes of the real schedule (step counter from 0, as the first epochs; each pass its
    own seeded order) run from the warm start over ``repeats`` seeded subsamples of
    ≤ ``n_sub`` rows, moving the anchors too when ``anchors`` is given; the cost is the
    training objective on that subsample
    (:func:`sgd_objective`, re-encoded with the moved anchors).  The η0 of the lowest mean
    cost is kept (ties within :data:`CALIBRATION_TIE`: the largest).  ``coarse_step`` n:
    every n-th grid point first, then the points within n - 1 steps of the best of them
    (the grid's costs are unimodal in practice: on the 286 fixed-anchor runs of the
    tables it picks the full grid's η0 in 285, at about half the cost).  ``w_dtype``: the
    precision of W in the passes, as in the epochs it calibrates.  A warm start that
    SGD cannot improve gets a tiny η0, i.e. SGD that leaves it nearly unchanged.
    Replaces sgd-2's greedy ``determineEta0`` from W = 0 (unstable across seeds: LLC
    issue #14).  Returns (t0, info) with the grid's costs.
    """
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    base = lambda_**-0.25
    grid = [base * 2.0**j for j in exponents]
    costs = np.zeros((repeats, len(grid)))
    start_cost = np.zeros(repeats)
    costs_of = []  # per repeat: η0 -> cost on its subsample
    for r in range(repeats):
        rows = np.sort(rng.choice(n, n_sub, replace=False)) if n > n_sub else np.arange(n)
        Xs = X[rows]
        Ys = np.ascontiguousarray(Y[rows])
        cs = code.take(rows)
        orders = [rng.permutation(rows.size) for _ in range(passes)]
        start_cost[r] = sgd_objective(Xs, Ys, cs, W, b, lambda_, use_W)[0]

        def cost(eta0, Xs=Xs, Ys=Ys, cs=cs, orders=orders):
            Wa, bc = anchor_major(W, w_dtype), b.copy()
            kw = dict(lambda_=lambda_, t0=1.0 / (lambda_ * eta0), skip=skip,
                      bias_scale=bias_scale, use_W=use_W)
            t, count = 0, skip
            if anchors is None:
                for order in orders:
                    t, count = _epoch(Xs, Ys, cs, order, Wa, bc, t, count, **kw)
                code_now = cs
            else:
                Vc = anchors.copy()
                for order in orders:
                    t, count, _ = _epoch_anchors(
                        Xs, Ys, order, Vc, Wa, bc, t, count, coding, anchor_scale=anchor_scale,
                        anchor_step_max=anchor_step_max, **kw)
                code_now = coding.encode(Xs, Vc)
            return sgd_objective(Xs, Ys, code_now, Wa.transpose(1, 0, 2), bc, lambda_, use_W)[0]
        costs_of.append(cost)

    # the grid's passes are independent (nogil kernels): one per numba thread
    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        def run(points):
            for r, cost in enumerate(costs_of):
                costs[r, points] = list(pool.map(cost, [grid[i] for i in points]))

        if coarse_step is None:
            points = list(range(len(grid)))
            run(points)
        else:  # every n-th point, then the points around the best of them
            points = list(range(0, len(grid), coarse_step))
            run(points)
            centre = points[_best_eta0(costs[:, points])]
            near = [i for i in range(max(0, centre - coarse_step + 1),
                                     min(len(grid), centre + coarse_step)) if i % coarse_step]
            run(near)
            points = sorted(points + near)
    mean = costs[:, points].mean(axis=0)
    eta0 = grid[points[_best_eta0(costs[:, points])]]
    return 1.0 / (lambda_ * eta0), {
        "method": "warm-start grid",
        "eta0": eta0,
        "n_sub": int(min(n, n_sub)),
        "repeats": int(repeats),
        "passes": int(passes),
        "start_cost": float(start_cost.mean()),
        "grid": {f"{grid[i]:.6g}": float(c) for i, c in zip(points, mean, strict=True)},
    }


def _best_eta0(costs: np.ndarray) -> int:
    """Column of the lowest mean cost (repeats x grid points; ties within
    :data:`CALIBRATION_TIE`: the first, i.e. the largest η0); the last when none is
    finite."""
    mean = costs.mean(axis=0)
    finite = np.isfinite(mean)
    low = mean[finite].min() if finite.any() else np.inf
    tied = np.flatnonzero(finite & (mean <= low + CALIBRATION_TIE * abs(low)))
    return int(tied[0]) if tied.size else len(mean) - 1  # grid runs from large to small η0


def resolve_t0(t0, lambda_) -> float | None:
    """A number for a fixed schedule, None for "calibrate" (the default, also ``None``)."""
    if t0 is None or t0 == "calibrate":
        return None
    if t0 == "svmsgd2":
        return default_t0(lambda_)
    if isinstance(t0, str):
        raise ConfigError(f"t0 must be a number > 0, 'calibrate' or 'svmsgd2', got {t0!r}")
    if not t0 > 0:
        raise ConfigError(f"t0 must be > 0, got {t0}")
    return float(t0)


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
    objective: Callable[[np.ndarray, np.ndarray], float] | None = None,
    batches: Callable[[np.random.Generator], Iterable[tuple]] | None = None,
    calibration_passes: int | None = None,
    calibration_coarse_step: int | None = None,
    sgd_dtype: str | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Run ``epochs`` SGD epochs from (W, b) (updated in place and returned).

    X dense C-ordered float64 (n, D) or CSR; Y (n, n_out) ±1 (:func:`labels_matrix`);
    ``code`` the fixed training codes.  ``random_state`` seeds the calibration and the
    per-epoch permutations (``numpy.random.default_rng``).  ``t0``: None or "calibrate"
    (:func:`calibrate_eta0` from the starting point, the default), "svmsgd2"
    (λ^(-3/4)) or a number (the papers' fixed schedules).

    ``objective(W, b)``, if given, is the training objective of the current parameters
    (anchors included: they are moved in place).  It is evaluated at the start and after
    every epoch, and then (1) the parameters of the epoch with the lowest objective are
    kept — the run never ends worse than it started (the LIBLINEAR warm start); (2) with a
    calibrated t0, an epoch above :data:`DIVERGENCE_FACTOR` × the starting objective (or
    NaN) restarts the run from its starting point with η0 / :data:`RETRY_DIVISOR` (at most
    :data:`MAX_RETRIES` times, each recorded in ``info["retries"]``); a fixed t0 runs as
    written.  ``callback(epoch, W, b)`` runs at the start
    (epoch 0) and after every epoch (after ``objective``; a restart calls it from epoch 1
    again).

    ``batches(rng)`` (the streaming seam, STYLE.md) yields one epoch's batches
    ``(X_b, Y_b, code_b or None, order_b)``; the step counters, W, b and the anchors carry
    across batches.  The default, :func:`in_memory_batches`, yields (X, Y, code,
    ``rng.permutation(n)``): one batch, the draws of an in-memory epoch.  With a producer,
    X, Y and code are the rows in memory (a sample when streaming) that the calibration,
    ``bias_scale="auto"`` and the default skip see.

    Returns (W, b, info) with the resolved t0, bias_scale, skip, the step count, per-epoch
    seconds, and with ``objective`` the per-epoch objectives and the kept epoch.

    ``learn_anchors=True`` (LLC-SAPL / LLC-JO) also needs ``anchors`` (m, D) float64
    C-ordered, moved in place, and the fitted ``coding`` (soft_knn or adaptive_knn) that
    encodes every step; X dense or CSR.  ``code`` is then only used by the calibration
    (the initial codes).  ``anchor_scale`` multiplies the anchor rate; ``anchor_step_max``
    (None = off, the papers' step) clips the fraction c of each anchor move
    v_j += c (x - v_j) to [-max, max].  ``epoch_stats``, if a list, receives one dict per
    epoch before the callback runs: {"mean_k"} = the mean number of non-zero weights per
    step (k* of adaptive_knn, JO Fig. 3).

    ``sgd_dtype`` "float32" (None / "float64": float64) runs the epochs and the η0
    calibration on a float32 copy of W (the dot products still sum in float64, b stays
    float64): half the memory traffic of a step, which reads k·C·D weights (issue 16);
    the returned W holds the float32 values in float64.  Agrees with the float64 run to
    about 1e-6 relative per epoch (``tests/test_sgd_dtype.py``), not bitwise.
    """
    w_dtype = sgd_weights_dtype(sgd_dtype)
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
        X = X.tocsr()
    if learn_anchors:
        coding_kernel_args(coding)  # a coding with an anchor gradient, fitted
        if anchors.dtype != np.float64 or not anchors.flags.c_contiguous:
            raise ConfigError("anchors must be a C-contiguous float64 array (moved in place)")
    if batches is None:
        batches = in_memory_batches(X, Y, code)
    rng = np.random.default_rng(random_state)
    seed_calibration, seed_order = (int(s) for s in rng.integers(2**31 - 1, size=2))
    info: dict = {}
    kw = dict(lambda_=lambda_, skip=skip, bias_scale=bias_scale, use_W=use_W)
    fixed = resolve_t0(t0, lambda_)
    if fixed is not None or epochs == 0:
        t0 = fixed if fixed is not None else default_t0(lambda_)
    else:
        t0, info["t0_calibration"] = calibrate_eta0(
            X, Y, code, W, b, anchors=anchors if learn_anchors else None, coding=coding,
            anchor_scale=anchor_scale, anchor_step_max=anchor_step_max,
            passes=calibration_passes or (LEARNED_PASSES if learn_anchors else 1),
            exponents=LEARNED_ETA0_EXPONENTS if learn_anchors else ETA0_GRID_EXPONENTS,
            random_state=seed_calibration, coarse_step=calibration_coarse_step,
            w_dtype=w_dtype, **kw)
    start = (W.copy(), b.copy(), anchors.copy() if learn_anchors else None)
    start_obj = objective(W, b) if objective is not None else None
    if callback is not None:
        callback(0, W, b)
    retries = []
    max_retries = MAX_RETRIES if fixed is None else 0  # a fixed schedule runs as written
    for attempt in range(max_retries + 1):
        order_rng = np.random.default_rng(seed_order)  # a restart sees the same orders
        t, count = 0, skip
        seconds, mean_k, objectives = [], [], []
        best = (start_obj, 0, start)
        diverged = False
        Wa = anchor_major(W, w_dtype)  # the kernels' layout; W is updated from it after
        # each epoch
        for epoch in range(1, epochs + 1):
            tic = time.perf_counter()
            ks_mean, ks_n = [], []  # per batch: mean k* and steps
            for Xb, Yb, cb, order in batches(order_rng):
                if learn_anchors:
                    t, count, ks = _epoch_anchors(
                        Xb, Yb, order, anchors, Wa, b, t, count, coding,
                        anchor_scale=anchor_scale, anchor_step_max=anchor_step_max, t0=t0, **kw
                    )
                    ks_mean.append(float(ks.mean()) if ks.size else 0.0)
                else:
                    t, count = _epoch(Xb, Yb, cb, order, Wa, b, t, count, t0=t0, **kw)
                    ks_mean.append(float(cb.n_active.mean() if cb.n_active is not None
                                         else cb.k))
                ks_n.append(len(order))
            W[...] = Wa.transpose(1, 0, 2)
            mean_k.append(ks_mean[0] if len(ks_mean) == 1 else
                          float(np.average(ks_mean, weights=ks_n)) if sum(ks_n) else 0.0)
            seconds.append(time.perf_counter() - tic)
            if epoch_stats is not None:
                epoch_stats.append({"mean_k": mean_k[-1]})
            if objective is not None:
                obj = objective(W, b)
                objectives.append(obj)
                if obj < best[0]:
                    best = (obj, epoch, (W.copy(), b.copy(),
                                         anchors.copy() if learn_anchors else None))
                diverged = max_retries > 0 and not obj <= DIVERGENCE_FACTOR * start_obj
            if callback is not None:
                callback(epoch, W, b)
            if diverged and attempt < max_retries:
                break
        if not diverged or attempt == max_retries:  # the last attempt runs all its epochs
            break
        retries.append({"eta0": 1.0 / (lambda_ * t0), "epoch": epoch, "objective": obj,
                        "start_objective": start_obj})
        t0 *= RETRY_DIVISOR
        _restore(start, W, b, anchors)
    if objective is not None:
        check_finite_fit(start_obj, objectives, retries, lambda_)
    info.update(t0=float(t0), eta0=1.0 / (lambda_ * t0), bias_scale=float(bias_scale),
                skip=skip, steps=int(t), epoch_seconds=seconds, use_W=bool(use_W),
                sgd_dtype=np.dtype(w_dtype).name)
    info["lambda"] = float(lambda_)
    if objective is not None:
        info.update(start_objective=start_obj, epoch_objectives=objectives,
                    kept_epoch=best[1], retries=retries)
        if best[1] != len(objectives):
            _restore(best[2], W, b, anchors)
    if learn_anchors:
        info.update(learn_anchors=True, anchor_scale=float(anchor_scale),
                    anchor_step_max=anchor_step_max)
    if code.n_active is not None or learn_anchors:
        info["mean_k_per_epoch"] = mean_k
    return W, b, info


def check_finite_fit(start_obj, objectives, retries, lambda_) -> None:
    """A FitError when the training objective is not finite at the start or after an
    epoch of the last attempt (the restarts with smaller steps did not help): no model
    comes out of such a fit, not even the starting point it would otherwise keep."""
    if math.isfinite(start_obj) and all(math.isfinite(o) for o in objectives):
        return
    epoch = next((e for e, o in enumerate(objectives, 1) if not math.isfinite(o)), 0)
    where = ("at the start (the LIBLINEAR initialisation)" if not math.isfinite(start_obj)
             else f"after epoch {epoch}")
    restarts = f", even after {len(retries)} restart(s) with smaller steps" if retries else ""
    raise FitError(f"SGD diverged: the training objective is not finite {where}{restarts} "
                   f"(lambda={lambda_:g}): no model; check the features' scale "
                   "(dataset.scaling) or try another trainer.lambda_ or trainer.t0")


def in_memory_batches(X, Y, code):
    """The in-memory producer: one batch per epoch, in the order ``rng.permutation(n)``."""
    return lambda rng: [(X, Y, code, rng.permutation(X.shape[0]))]


#: Streamed fixed-anchor codes are kept in memory after the first epoch when all rows'
#: codes (indices + weights) take at most this many bytes (8.1M rows, k = 8: 777 MB).
CODE_CACHE_BYTES = 1 << 30


def stream_batches(source, y_idx: np.ndarray, n_classes: int, encode=None, prefetch=True,
                   code_cache_bytes: int = CODE_CACHE_BYTES):
    """The streaming producer over a chunked source (``llc_bench.data.stream``): the
    chunks in a seeded order (no draw for a single chunk, so one chunk replays the
    in-memory epoch), each with ``rng.permutation`` of its rows; targets from ``y_idx``
    and codes (``encode(X_c)``; None when the anchors are learned) per chunk.

    Fixed anchors give every chunk the same codes in every epoch: they are computed in
    the first epoch and kept (indices and weights only) when all the source's codes fit
    ``code_cache_bytes``, so later epochs only read x (the same numbers: the encoding is
    deterministic), and as stored when stored as bytes (``StoredRows``: uint8 pixels,
    no float64 chunk).  ``prefetch``: read, scale and encode the next chunk in a second
    thread while the (nogil) kernel trains on the current one.  The draws and every
    number are the same as without it (one producer, in order); at most two chunks of x
    are in memory."""
    kept: dict = {}

    def code_of(c, Xc):
        if c in kept:
            return kept[c]
        code = encode(Xc)
        slim = LocalCode(code.indices, code.weights, None, code.n_active)
        per_row = sum(a.nbytes for a in (slim.indices, slim.weights, slim.n_active)
                      if a is not None) / max(code.n, 1)
        if per_row * source.n_rows <= code_cache_bytes:
            kept[c] = slim
        return code

    def produce(rng):
        chunks = rng.permutation(source.n_chunks) if source.n_chunks > 1 else [0]
        for c in map(int, chunks):
            lo, hi = source.bounds(c)
            Yc = labels_matrix(y_idx[lo:hi], n_classes)
            stored = source.stored_chunk(c) if c in kept else None
            if stored is not None:  # codes kept, bytes stored: the kernel looks x up
                yield stored, Yc, kept[c], rng.permutation(hi - lo)
                continue
            Xc = source.chunk(c)
            yield Xc, Yc, None if encode is None else code_of(c, Xc), rng.permutation(hi - lo)

    if not prefetch or source.n_chunks == 1:
        return produce
    return lambda rng: _prefetched(produce(rng))


_END = object()


def _prefetched(items: Iterator):
    """Yield from ``items``, computing the next item in a worker thread meanwhile."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="llc-prefetch") as pool:
        pending = pool.submit(next, items, _END)
        while (item := pending.result()) is not _END:
            pending = pool.submit(next, items, _END)
            yield item
            item = None  # let the chunk go before the next one is waited for


def _restore(saved, W, b, anchors) -> None:
    """Copy saved (W, b, anchors) back into the arrays the caller holds."""
    W[...] = saved[0]
    b[...] = saved[1]
    if saved[2] is not None:
        anchors[...] = saved[2]
