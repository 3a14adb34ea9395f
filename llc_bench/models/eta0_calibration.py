"""η0 calibration of the SGD: the step size chosen from the warm start on a grid, by the
training objective after a pass over seeded subsamples (:func:`calibrate_eta0`), the grid
walked coarse-to-fine (:func:`coarse_to_fine`) or, for the trials of a search, from the
η0 chosen last (``walk``, :func:`walk_to_minimum`)."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ..coding.local import LocalCode
from .sgd_epoch import anchor_major, sgd_epoch, sgd_epoch_anchors, sgd_objective
from .sgd_schedule import t0_of_eta0

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

def calibrate_eta0(
    X, Y, code: LocalCode, W, b, *, lambda_, skip, bias_scale, use_W=True, anchors=None,
    coding=None, anchor_scale=1.0, anchor_step_max=None, n_sub=CALIBRATION_ROWS,
    repeats=CALIBRATION_REPEATS, passes=1, exponents=ETA0_GRID_EXPONENTS, random_state=None,
    coarse_step=None, w_dtype=np.float64, walk=None,
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
    ``walk`` (a dict, kept by the caller): a grid calibrated before is walked from the
    grid point nearest the η0 chosen last (:func:`walk_to_minimum`) instead of running
    coarse-to-fine: the trials of a search, whose η0 moves little from one setting to the
    next, pay for ~6 grid points instead of ~13 (the same η0 in 89-100 % of them on five
    yardstick sets); the first calibration runs as without it.
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
    steps = dict(lambda_=lambda_, skip=skip, bias_scale=bias_scale, use_W=use_W)
    moves = dict(anchors=anchors, coding=coding, anchor_scale=anchor_scale,
                 anchor_step_max=anchor_step_max, w_dtype=w_dtype)
    costs_of = []  # per repeat: η0 -> cost on its subsample
    for r in range(repeats):
        rows = np.sort(rng.choice(n, n_sub, replace=False)) if n > n_sub else np.arange(n)
        sub = (X[rows], np.ascontiguousarray(Y[rows]), code.take(rows),
               [rng.permutation(rows.size) for _ in range(passes)])
        start_cost[r] = sgd_objective(*sub[:3], W, b, lambda_, use_W)[0]
        costs_of.append(functools.partial(_passes_cost, sub=sub, W=W, b=b, steps=steps,
                                          **moves))

    # the grid's passes are independent (nogil kernels): one per numba thread
    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        def run(points):
            for r, cost in enumerate(costs_of):
                costs[r, points] = list(pool.map(cost, [grid[i] for i in points]))
            return costs[:, points]

        memo, key = walk, (tuple(exponents), passes)
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


def _passes_cost(eta0, *, sub, W, b, steps, anchors, coding, anchor_scale,
                 anchor_step_max, w_dtype) -> float:
    """The training objective on the subsample ``sub`` = (X, Y, code, orders) after its
    passes at ``eta0`` from (W, b) and the anchors (none of them changed)."""
    Xs, Ys, cs, orders = sub
    lambda_, skip = steps["lambda_"], steps["skip"]
    Wa, bc = anchor_major(W, w_dtype), b.copy()
    kw = dict(steps, t0=t0_of_eta0(lambda_, eta0))
    t, count = 0, skip
    if anchors is None:
        for order in orders:
            t, count = sgd_epoch(Xs, Ys, cs, order, Wa, bc, t, count, **kw)
        code_now = cs
    else:
        Vc = anchors.copy()
        for order in orders:
            t, count, _ = sgd_epoch_anchors(
                Xs, Ys, order, Vc, Wa, bc, t, count, coding, anchor_scale=anchor_scale,
                anchor_step_max=anchor_step_max, **kw)
        code_now = coding.encode(Xs, Vc)
    return sgd_objective(Xs, Ys, code_now, Wa.transpose(1, 0, 2), bc, lambda_,
                         steps["use_W"])[0]


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


