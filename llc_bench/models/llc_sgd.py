"""``trainer=llc_sgd``: SGD for LL-SVM / LCC+SVM (docs/design.md §Trainers, §SGD schedule).

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

Defaults (SVMSGD2, docs/design.md §SGD schedule): t0 = λ^(-3/4); bias_scale "auto" = half the
largest mean |x_j| over features (for ``use_W=False`` "auto" is 1: there b is
the regularised weight vector of a linear SVM on γ, not a bias, so it takes the
plain rate η_t); skip = 16 for dense x, 16·D/avg_nnz for CSR x.

The hot loop is in ``_sgd_kernel.py`` (numba); :func:`sgd_step_reference` is the
same step in plain numpy, used by the tests and the benchmark.

Anchor learning (LLC-SAPL Alg. 1, LLC-JO Alg. 2; ``learn_anchors=True``): the
codes are recomputed from the current anchors at every step (the kernel computes
the distances to all m anchors); on a violation of any output the active anchors
move *first*, with the pre-update W, b (docs/design.md §Trainers):

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

import contextlib
import contextvars
import math
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from ..coding.local import LocalCode
from ..data.rows import StoredRows
from ..errors import ConfigError, FitError
from . import _sgd_kernel as K
from ._base import check_deadline
from .objective import objective, ova_hinge

#: Default skip for dense data (docs/design.md §SGD schedule).
DENSE_SKIP = 16


def eta0_of(lambda_: float, t0: float) -> float:
    """η0 = η_0 = 1/(λ t0), the first step's rate."""
    return K.eta(lambda_, 0, t0)


def t0_of_eta0(lambda_: float, eta0: float) -> float:
    """t0 = 1/(λ η0): :func:`eta0_of` solved for t0 (the same expression)."""
    return K.eta(lambda_, 0, eta0)


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
    eta = K.eta(lambda_, t, t0)
    for c in range(W.shape[0]):
        f = gam @ (W[c, idx] @ x + b[c, idx])  # eq. (8)
        if 1.0 - y[c] * f > 0.0:
            if use_W:
                W[c, idx] += eta * y[c] * np.outer(gam, x)  # eq. (11)
            b[c, idx] += eta * bias_scale * y[c] * gam  # eq. (12), bias-corrected rate
    return t + 1, _skip_decay_reference(W, b, t, count, t0, skip, use_W)


def _skip_decay_reference(W, b, t, count, t0, skip, use_W) -> int:
    """The skip counter after a step; every ``skip`` steps W *= r (b for LCC variants),
    r = 1 - skip/(t + t0) (LL-SVM eq. 13, SAPL eq. 19), SVMSGD2's safeguard below 0.8."""
    count -= 1
    if count <= 0:
        r = 1.0 - skip / (t + t0)
        if r < 0.8:
            r = (1.0 - 1.0 / (t + t0)) ** skip
        if use_W:
            W *= r
        else:
            b *= r
        count = skip
    return count


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
    coding.kernel_args()  # a coding with an anchor gradient
    d_all = ((x[None, :] - V) ** 2).sum(axis=1)
    k = min(coding.k, V.shape[0])
    idx = np.argsort(d_all, kind="stable")[:k]
    gam, g = coding.gradient_factors(d_all[idx])
    return idx, gam, g


def sgd_step_anchors_reference(
    W, b, V, x, y, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """One LLC-SAPL / LLC-JO step in plain numpy; W, b, V updated in place.

    Returns (t, count, k*) with k* the number of non-zero weights of the step's code.
    """
    eta = K.eta(lambda_, t, t0)
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
    return t + 1, _skip_decay_reference(W, b, t, count, t0, skip, use_W), \
        int(np.count_nonzero(gam))


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
    kind, param, k = coding.kernel_args()
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
    order = np.ascontiguousarray(order, dtype=np.int64)
    table = None
    if isinstance(X, StoredRows):
        X, table = X.raw, X.table
    args = (Y, code.indices, code.weights, order, Wa, b, float(lambda_), float(t0), int(t),
            int(count), int(skip), float(bias_scale), bool(use_W))
    if sp.issparse(X):
        return K.sgd_epoch_csr(X.data, X.indices, X.indptr, *args)
    return K.sgd_epoch_dense(X, *args, table)


def decision_from_codes(X, code: LocalCode, W, b, use_W=True) -> np.ndarray:
    """(n, n_out) decision values for precomputed codes (numba; used for the history)."""
    Wa = anchor_major(W)
    if sp.issparse(X):
        return K.decision_codes_csr(
            X.data, X.indices, X.indptr, code.indices, code.weights, Wa, b, bool(use_W)
        )
    return K.decision_codes_dense(X, code.indices, code.weights, Wa, b, bool(use_W))


def sgd_objective(X, Y, code: LocalCode, W, b, lambda_, use_W=True) -> tuple[float, np.ndarray]:
    """(the training objective, F): :func:`objective.objective` of the one-vs-all hinge
    (LL-SVM eq. 9, LLC-SAPL eq. 21; θ = W, or b for LCC+SVM) and the decision values F."""
    F = decision_from_codes(X, code, W, b, use_W)
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN: see check_finite_fit
        losses = ova_hinge(Y, F)
    return objective(lambda_, W if use_W else b, losses), F


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

_WALK: contextvars.ContextVar[dict | None] = contextvars.ContextVar("eta0_walk", default=None)


@contextlib.contextmanager
def eta0_walk():
    """Inside the block, an η0 calibration of a grid calibrated before walks it from the
    grid point nearest the η0 chosen last (:func:`walk_to_minimum`) instead of running
    coarse-to-fine: the trials of a search, whose η0 moves little from one setting to the
    next, pay for ~6 grid points instead of ~13 (the same η0 in 89-100 % of them on five
    yardstick sets).  The first calibration in the block runs as outside it."""
    token = _WALK.set({})
    try:
        yield
    finally:
        _WALK.reset(token)


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
    Replaces sgd-2's greedy ``determineEta0`` from W = 0, whose η0 varied 128-512x across
    seeds and whose first epoch threw the LIBLINEAR warm start away.  Returns (t0, info)
    with the grid's costs.
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
            kw = dict(lambda_=lambda_, t0=t0_of_eta0(lambda_, eta0), skip=skip,
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
            return costs[:, points]

        memo, key = _WALK.get(), (tuple(exponents), passes)
        start = None if memo is None or key not in memo else nearest_point(grid, memo[key])
        points = (coarse_to_fine(len(grid), coarse_step, run) if start is None
                  else walk_to_minimum(len(grid), start, run))
    mean = costs[:, points].mean(axis=0)
    eta0 = grid[points[_best_eta0(costs[:, points])]]
    if memo is not None:
        memo[key] = eta0
    return t0_of_eta0(lambda_, eta0), {
        "method": "warm-start grid" + ("" if start is None else
                                       f", walked from {grid[start]:.6g}"),
        "eta0": eta0,
        "n_sub": int(min(n, n_sub)),
        "repeats": int(repeats),
        "passes": int(passes),
        "start_cost": float(start_cost.mean()),
        "grid": {f"{grid[i]:.6g}": float(c) for i, c in zip(points, mean, strict=True)},
    }


def coarse_to_fine(n_points: int, step: int | None, costs_at) -> list[int]:
    """The grid points a calibration evaluates: all (``step`` None), or every ``step``-th,
    then those within ``step`` - 1 points of the best of them.  ``costs_at(points)`` returns
    the (repeats x len(points)) costs at those points (running them)."""
    if step is None:
        points = list(range(n_points))
        costs_at(points)
        return points
    points = list(range(0, n_points, step))
    centre = points[_best_eta0(costs_at(points))]
    near = [i for i in range(max(0, centre - step + 1), min(n_points, centre + step))
            if i % step]
    if near:
        costs_at(near)
    return sorted(points + near)


def nearest_point(grid: list, eta0: float) -> int:
    """The grid point nearest ``eta0`` on a log scale (the grids of two λ are offset)."""
    return int(np.argmin(np.abs(np.log2(np.asarray(grid) / eta0))))


def walk_to_minimum(n_points: int, start: int, costs_at) -> list[int]:
    """The grid points a walk evaluates: ``start`` and its two neighbours, then one more
    point past whichever end of those evaluated holds the lowest cost (ties as
    :func:`_best_eta0`), until the lowest lies inside them or at the grid's end: on a
    unimodal grid the point coarse-to-fine finds, at 3 + (its distance from ``start``)
    points.  ``costs_at`` as in :func:`coarse_to_fine`."""
    start = min(max(int(start), 0), n_points - 1)
    seen: dict[int, np.ndarray] = {}
    new = list(range(max(0, start - 1), min(n_points, start + 2)))
    while new:
        seen.update(zip(new, np.asarray(costs_at(new)).T, strict=True))
        points = sorted(seen)
        best = points[_best_eta0(np.column_stack([seen[i] for i in points]))]
        new = ([best - 1] if best == points[0] and best > 0 else
               [best + 1] if best == points[-1] and best < n_points - 1 else [])
    return points


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


@dataclass(frozen=True)
class SGDOptions:
    """The settings of :func:`train_llc_sgd` (docs/design.md §SGD schedule), named as the
    estimators' parameters.  ``t0``: None or "calibrate" (:func:`calibrate_eta0` from the starting
    point, the default), "svmsgd2" (λ^(-3/4)) or a number (the papers' fixed schedules).
    ``random_state`` seeds the calibration and the per-epoch permutations.

    Learned anchors (LLC-SAPL / LLC-JO, ``learn_anchors=True``): ``anchors`` (m, D)
    float64 C-ordered, moved in place, and the fitted ``coding`` with an anchor gradient
    that encodes every step; ``anchor_scale`` multiplies the anchor rate and
    ``anchor_step_max`` (None = off, the papers' step) clips the fraction c of each move
    v_j += c (x - v_j) to [-max, max].

    ``sgd_dtype`` "float32" (None / "float64": float64) runs the epochs and the η0
    calibration on a float32 copy of W (the dot products still sum in float64, b stays
    float64): half the memory traffic of a step, which reads k·C·D weights; the returned
    W holds the float32 values in float64.  Agrees with the float64 run to about 1e-6
    relative per epoch (``tests/test_sgd_dtype.py``), not bitwise."""

    lambda_: float
    epochs: int = 10
    t0: float | str | None = None
    bias_scale: float | str = "auto"
    skip: int | None = None
    use_W: bool = True
    random_state: int | None = None
    learn_anchors: bool = False
    anchors: np.ndarray | None = None
    coding: object = None
    anchor_scale: float = 1.0
    anchor_step_max: float | None = None
    calibration_passes: int | None = None
    calibration_coarse_step: int | None = None
    sgd_dtype: str | None = None


@dataclass
class Monitor:
    """What watches the epochs, all optional.  ``objective(W, b)``: the training objective
    of the current parameters (anchors included: they move in place), evaluated at the
    start and after every epoch; ``callback(epoch, W, b)`` runs after it (epoch 0 = the
    start; a restart calls it from epoch 1 again); ``epoch_stats``, a list, receives
    {"mean_k"} per epoch before the callback (k* of adaptive_knn, JO Fig. 3)."""

    objective: Callable[[np.ndarray, np.ndarray], float] | None = None
    callback: Callable[[int, np.ndarray, np.ndarray], None] | None = None
    epoch_stats: list | None = None


def train_llc_sgd(X, Y: np.ndarray, code: LocalCode, W: np.ndarray, b: np.ndarray,
                  options: SGDOptions, monitor: Monitor | None = None,
                  batches: Callable[[np.random.Generator], Iterable[tuple]] | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Run ``options.epochs`` SGD epochs from (W, b) (updated in place and returned).

    X dense C-ordered float64 (n, D) or CSR; Y (n, n_out) ±1 (:func:`labels_matrix`);
    ``code`` the fixed training codes (with learned anchors only the calibration's
    initial codes).

    With ``monitor.objective``: (1) the parameters of the epoch with the lowest objective
    are kept — the run never ends worse than it started (the LIBLINEAR warm start); (2)
    with a calibrated t0, an epoch above :data:`DIVERGENCE_FACTOR` × the starting
    objective (or NaN) restarts the run from its starting point with η0 /
    :data:`RETRY_DIVISOR` (at most :data:`MAX_RETRIES` times, each recorded in
    ``info["retries"]``); a fixed t0 runs as written.

    ``batches(rng)`` (the streaming seam) yields one epoch's batches
    ``(X_b, Y_b, code_b or None, order_b)``; the step counters, W, b and the anchors carry
    across batches.  The default, :func:`in_memory_batches`, yields (X, Y, code,
    ``rng.permutation(n)``).  With a producer, X, Y and code are the rows in memory (a
    sample when streaming) that the calibration, ``bias_scale="auto"`` and the default
    skip see.

    Returns (W, b, info) with the resolved t0, bias_scale, skip, the step count, per-epoch
    seconds, and with an objective the per-epoch objectives and the kept epoch.
    """
    o, monitor = options, monitor or Monitor()
    _check_options(o)
    w_dtype = sgd_weights_dtype(o.sgd_dtype)
    learn, anchors = bool(o.learn_anchors), o.anchors if o.learn_anchors else None
    X = X.tocsr() if sp.issparse(X) else X
    kw = dict(lambda_=o.lambda_, skip=_resolved_skip(X, o.skip),
              bias_scale=_resolved_bias_scale(X, o.bias_scale, o.use_W), use_W=o.use_W)
    rng = np.random.default_rng(o.random_state)
    seed_calibration, seed_order = (int(s) for s in rng.integers(2**31 - 1, size=2))
    info: dict = {}
    fixed = resolve_t0(o.t0, o.lambda_)
    if fixed is not None or o.epochs == 0:
        t0 = fixed if fixed is not None else default_t0(o.lambda_)
    else:
        t0, info["t0_calibration"] = calibrate_eta0(
            X, Y, code, W, b, anchors=anchors, coding=o.coding, anchor_scale=o.anchor_scale,
            anchor_step_max=o.anchor_step_max,
            passes=o.calibration_passes or (LEARNED_PASSES if learn else 1),
            exponents=LEARNED_ETA0_EXPONENTS if learn else ETA0_GRID_EXPONENTS,
            random_state=seed_calibration, coarse_step=o.calibration_coarse_step,
            w_dtype=w_dtype, **kw)
    run = _Epochs(batches or in_memory_batches(X, Y, code), o, monitor, w_dtype, kw)
    t0, best, retries = run.with_restarts(W, b, t0, seed_order, fixed is None)
    info.update(t0=float(t0), eta0=eta0_of(o.lambda_, t0), bias_scale=float(kw["bias_scale"]),
                skip=kw["skip"], steps=int(run.t), epoch_seconds=run.seconds,
                use_W=bool(o.use_W), sgd_dtype=np.dtype(w_dtype).name)
    info["lambda"] = float(o.lambda_)
    if monitor.objective is not None:
        info.update(start_objective=run.start_obj, epoch_objectives=run.objectives,
                    kept_epoch=best[1], retries=retries)
        if best[1] != len(run.objectives):
            _restore(best[2], W, b, anchors)
    if learn:
        info.update(learn_anchors=True, anchor_scale=float(o.anchor_scale),
                    anchor_step_max=o.anchor_step_max)
    if code.n_active is not None or learn:
        info["mean_k_per_epoch"] = run.mean_k
    return W, b, info


def _check_options(o: SGDOptions) -> None:
    if o.learn_anchors and (o.anchors is None or o.coding is None):
        raise AnchorLearningUnavailable(
            "learn_anchors=True needs anchors= (moved in place) and the fitted coding= "
            "(soft_knn or adaptive_knn): the codes are recomputed at every step"
        )
    if o.lambda_ <= 0:
        raise ConfigError(f"lambda must be > 0, got {o.lambda_}")
    if not o.anchor_scale >= 0:
        raise ConfigError(f"anchor_scale must be >= 0, got {o.anchor_scale}")
    if o.anchor_step_max is not None and not o.anchor_step_max > 0:
        raise ConfigError(f"anchor_step_max must be > 0 or None, got {o.anchor_step_max}")
    if o.learn_anchors:
        o.coding.kernel_args()  # a coding with an anchor gradient, fitted
        if o.anchors.dtype != np.float64 or not o.anchors.flags.c_contiguous:
            raise ConfigError("anchors must be a C-contiguous float64 array (moved in place)")


def _resolved_bias_scale(X, bias_scale, use_W) -> float:
    if isinstance(bias_scale, str):
        if bias_scale != "auto":
            raise ConfigError(f"bias_scale must be a number or 'auto', got {bias_scale!r}")
        return auto_bias_scale(X, use_W)
    return bias_scale


def _resolved_skip(X, skip) -> int:
    skip = default_skip(X) if skip is None else int(skip)
    if skip < 1:
        raise ConfigError(f"skip must be >= 1, got {skip}")
    return skip


class _Epochs:
    """The epochs of one :func:`train_llc_sgd` run: the kernels over the batches, the
    objective after each epoch, the best epoch so far, the restarts after a divergence."""

    def __init__(self, batches, options: SGDOptions, monitor: Monitor, w_dtype, kw):
        self.batches, self.o, self.monitor, self.w_dtype, self.kw = \
            batches, options, monitor, w_dtype, kw
        self.anchors = options.anchors if options.learn_anchors else None

    def with_restarts(self, W, b, t0, seed_order, calibrated: bool):
        """Run the epochs (again from the start, with η0 / RETRY_DIVISOR, after a
        divergence); returns (t0, best (objective, epoch, saved parameters), retries)."""
        anchors, objective = self.anchors, self.monitor.objective
        start = (W.copy(), b.copy(), anchors.copy() if anchors is not None else None)
        self.start_obj = objective(W, b) if objective is not None else None
        if self.monitor.callback is not None:
            self.monitor.callback(0, W, b)
        retries = []
        max_retries = MAX_RETRIES if calibrated else 0  # a fixed schedule runs as written
        for attempt in range(max_retries + 1):
            best, diverged, epoch = self.run(W, b, t0, seed_order, start, max_retries,
                                             last=attempt == max_retries)
            if not diverged or attempt == max_retries:  # the last attempt runs all epochs
                break
            retries.append({"eta0": eta0_of(self.o.lambda_, t0), "epoch": epoch,
                            "objective": self.objectives[-1],
                            "start_objective": self.start_obj})
            t0 *= RETRY_DIVISOR
            _restore(start, W, b, anchors)
        if objective is not None:
            check_finite_fit(self.start_obj, self.objectives, retries, self.o.lambda_)
        return t0, best, retries

    def run(self, W, b, t0, seed_order, start, max_retries, last: bool):
        """One attempt (stopped at a divergence unless it is the last one); returns
        (best, diverged, the last epoch run)."""
        o, monitor, anchors = self.o, self.monitor, self.anchors
        order_rng = np.random.default_rng(seed_order)  # a restart sees the same orders
        self.t, count = 0, self.kw["skip"]
        self.seconds, self.mean_k, self.objectives = [], [], []
        best = (self.start_obj, 0, start)
        diverged = False
        Wa = anchor_major(W, self.w_dtype)  # the kernels' layout; W follows each epoch
        for epoch in range(1, o.epochs + 1):
            check_deadline()
            tic = time.perf_counter()
            count = self._epoch(Wa, b, t0, count, order_rng)
            W[...] = Wa.transpose(1, 0, 2)
            self.seconds.append(time.perf_counter() - tic)
            if monitor.epoch_stats is not None:
                monitor.epoch_stats.append({"mean_k": self.mean_k[-1]})
            if monitor.objective is not None:
                obj = monitor.objective(W, b)
                self.objectives.append(obj)
                if obj < best[0]:
                    best = (obj, epoch, (W.copy(), b.copy(),
                                         anchors.copy() if anchors is not None else None))
                diverged = max_retries > 0 and not obj <= DIVERGENCE_FACTOR * self.start_obj
            if monitor.callback is not None:
                monitor.callback(epoch, W, b)
            if diverged and not last:
                return best, True, epoch
        return best, diverged, o.epochs

    def _epoch(self, Wa, b, t0, count, order_rng) -> int:
        """One pass over the batches (the kernels); appends the epoch's mean k*."""
        o, kw = self.o, self.kw
        ks_mean, ks_n = [], []  # per batch: mean k* and steps
        for Xb, Yb, cb, order in self.batches(order_rng):
            if self.anchors is not None:
                self.t, count, ks = _epoch_anchors(
                    Xb, Yb, order, self.anchors, Wa, b, self.t, count, o.coding,
                    anchor_scale=o.anchor_scale, anchor_step_max=o.anchor_step_max, t0=t0,
                    **kw)
                ks_mean.append(float(ks.mean()) if ks.size else 0.0)
            else:
                self.t, count = _epoch(Xb, Yb, cb, order, Wa, b, self.t, count, t0=t0, **kw)
                ks_mean.append(float(cb.n_active.mean() if cb.n_active is not None else cb.k))
            ks_n.append(len(order))
        self.mean_k.append(ks_mean[0] if len(ks_mean) == 1 else
                           float(np.average(ks_mean, weights=ks_n)) if sum(ks_n) else 0.0)
        return count


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
                   code_cache_bytes: int = CODE_CACHE_BYTES, known: dict | None = None):
    """The producer over a row source (``llc_bench.data.rows``): the chunks in a seeded
    order (no draw for a single chunk, so one chunk replays :func:`in_memory_batches`),
    each with ``rng.permutation`` of its rows; targets from ``y_idx`` and codes
    (``encode(X_c)``; None when the anchors are learned) per chunk; ``known`` maps
    chunks to codes computed already (the in-memory rows' codes).

    Fixed anchors give every chunk the same codes in every epoch: they are computed in
    the first epoch and kept (indices and weights only) when all the source's codes fit
    ``code_cache_bytes``, so later epochs only read x (the same numbers: the encoding is
    deterministic), and as stored when stored as bytes (``StoredRows``: uint8 pixels,
    no float64 chunk).  ``prefetch``: read, scale and encode the next chunk in a second
    thread while the (nogil) kernel trains on the current one.  The draws and every
    number are the same as without it (one producer, in order); at most two chunks of x
    are in memory."""
    kept: dict = dict(known or {})

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
