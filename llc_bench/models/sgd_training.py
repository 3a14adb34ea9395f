"""The SGD epochs of LL-SVM, LCC+SVM, LLC-SAPL and LLC-JO (docs/design.md §Trainers,
§SGD schedule): from a starting point (W, b and, learned, the anchors), η0 calibrated on
it or a fixed schedule (:mod:`.sgd_schedule`), the kernels' epochs (:mod:`.sgd_epoch`)
over the batches (:mod:`.sgd_batches`), the epoch of lowest training objective kept and a
diverging run restarted with a smaller η0.

:meth:`SGDTraining.epochs` yields what a history needs after the start and every epoch
(:class:`Epoch`: plain data, the caller reads W, b and the anchors it handed over); the
trainer never calls back into its caller.  :func:`train_llc_sgd` runs all epochs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..coding.local import LocalCode
from ..errors import ConfigError, FitError
from ._base import check_deadline
from .eta0_calibration import (
    ETA0_GRID_EXPONENTS,
    LEARNED_ETA0_EXPONENTS,
    LEARNED_PASSES,
    calibrate_eta0,
)
from .sgd_batches import in_memory_batches
from .sgd_epoch import anchor_major, sgd_epoch, sgd_epoch_anchors, sgd_objective
from .sgd_schedule import (
    default_t0,
    eta0_of,
    resolve_bias_scale,
    resolve_skip,
    resolve_t0,
    sgd_weights_dtype,
)

#: An epoch whose training objective exceeds this multiple of the starting one diverged:
#: the run restarts from its starting point with η0 divided by RETRY_DIVISOR.
DIVERGENCE_FACTOR = 2.0
RETRY_DIVISOR = 8.0
MAX_RETRIES = 4


class AnchorLearningUnavailable(ConfigError, NotImplementedError):
    """``learn_anchors=True`` without the anchors and the coding to learn them with."""


@dataclass(frozen=True)
class SGDOptions:
    """The settings of :class:`SGDTraining` (docs/design.md §SGD schedule), named as the estimators'
    parameters and checked by them (``_parameter_constraints``).  ``t0``: None or
    "calibrate" (:func:`calibrate_eta0` from the starting point, the default), "svmsgd2"
    (λ^(-3/4)) or a number (the papers' fixed schedules).  ``random_state`` seeds the
    calibration and the per-epoch permutations.

    Learned anchors (LLC-SAPL / LLC-JO, ``learn_anchors=True``): ``anchors`` (m, D)
    float64 C-ordered, moved in place, and the fitted ``coding`` with an anchor gradient
    that encodes every step; ``anchor_scale`` multiplies the anchor rate and
    ``anchor_step_max`` (None = off, the papers' step) clips the fraction c of each move
    v_j += c (x - v_j) to [-max, max].

    ``sgd_dtype`` "float32" (None / "float64": float64) runs the epochs and the η0
    calibration on a float32 copy of W (the dot products still sum in float64, b stays
    float64): half the memory traffic of a step, which reads k·C·D weights; the returned
    W holds the float32 values in float64.  Agrees with the float64 run to about 1e-6
    relative per epoch (``tests/models/test_sgd_dtype.py``), not bitwise."""

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

    def __post_init__(self):
        """Learned anchors need the arrays to move (what a caller hands over, not a
        setting: the estimators always do)."""
        if not self.learn_anchors:
            return
        if self.anchors is None or self.coding is None:
            raise AnchorLearningUnavailable(
                "learn_anchors=True needs anchors= (moved in place) and the fitted coding= "
                "(soft_knn or adaptive_knn): the codes are recomputed at every step")
        if self.anchors.dtype != np.float64 or not self.anchors.flags.c_contiguous:
            raise ConfigError("anchors must be a C-contiguous float64 array (moved in place)")


@dataclass(frozen=True)
class Epoch:
    """What the trainer reports after the start (``number`` 0; a restart reports from 1
    again) and after every epoch.  With the objective tracked: ``objective``, the
    decision values ``F`` (n, n_out) on the training rows and the ``code`` they used
    (learned anchors: re-encoded with the epoch's anchors); ``mean_k``: the mean k* over
    the epoch's SGD steps (None at the start)."""

    number: int
    objective: float | None = None
    F: np.ndarray | None = None
    code: LocalCode | None = None
    mean_k: float | None = None


class SGDTraining:
    """One run of SGD epochs from (W, b), both updated in place.

    X dense C-ordered float64 (n, D) or CSR; Y (n, n_out) ±1 (``labels_matrix``);
    ``code`` the fixed training codes (with learned anchors only the calibration's and
    the start's codes).

    With ``objective=True`` the training objective of (X, Y) is evaluated at the start and
    after every epoch: (1) the parameters of the epoch with the lowest objective are kept
    — the run never ends worse than it started (the LIBLINEAR warm start); (2) with a
    calibrated t0, an epoch above :data:`DIVERGENCE_FACTOR` × the starting objective (or
    NaN) restarts the run from its starting point with η0 / :data:`RETRY_DIVISOR` (at most
    :data:`MAX_RETRIES` times, each recorded in ``info["retries"]``); a fixed t0 runs as
    written.

    ``batches(rng)`` (the streaming seam) yields one epoch's batches
    ``(X_b, Y_b, code_b or None, order_b)``; the step counters, W, b and the anchors carry
    across batches.  The default, :func:`in_memory_batches`, yields (X, Y, code,
    ``rng.permutation(n)``).  With a producer, X, Y and code are the rows in memory (a
    sample when streaming) that the calibration, ``bias_scale="auto"``, the default skip
    and the objective see.

    ``info`` (complete once :meth:`epochs` is exhausted): the resolved t0, bias_scale,
    skip, the step count, per-epoch seconds, and with the objective the per-epoch
    objectives and the kept epoch.

    A search's trial (``_base.TrialCache``): ``deadline`` (``time.time()`` scale) raises
    ``FitDeadline`` before the first epoch that starts past it; ``walk`` is the η0 walk of
    :func:`calibrate_eta0` and ``calibration_repeats`` its ``repeats`` (None: its own).
    """

    def __init__(self, X, Y: np.ndarray, code: LocalCode, W: np.ndarray, b: np.ndarray,
                 options: SGDOptions, *,
                 batches: Callable[[np.random.Generator], Iterable[tuple]] | None = None,
                 objective: bool = False, deadline: float | None = None,
                 walk: dict | None = None, calibration_repeats: int | None = None):
        o = self.o = options
        self.deadline, self.walk = deadline, walk
        self.calibration = {} if calibration_repeats is None else {
            "repeats": int(calibration_repeats)}
        self.X = X.tocsr() if sp.issparse(X) else X
        self.Y, self.code, self.W, self.b, self.track = Y, code, W, b, bool(objective)
        self.anchors = o.anchors if o.learn_anchors else None
        self.w_dtype = sgd_weights_dtype(o.sgd_dtype)
        self.kw = dict(lambda_=o.lambda_, skip=resolve_skip(self.X, o.skip),
                       bias_scale=resolve_bias_scale(self.X, o.bias_scale, o.use_W),
                       use_W=o.use_W)
        rng = np.random.default_rng(o.random_state)
        self.seed_calibration, self.seed_order = (int(s) for s in rng.integers(2**31 - 1,
                                                                               size=2))
        self.batches = batches or in_memory_batches(self.X, Y, code)
        self.info: dict = {}

    def epochs(self) -> Iterator[Epoch]:
        """Calibrate t0 (unless fixed), then yield the start and every epoch (from epoch 1
        again after a restart); W, b and the anchors hold that epoch's values when it is
        yielded, the kept epoch's once the iteration ends."""
        t0, calibrated = self._schedule()
        start = self._saved()
        yield self._report(0)
        retries, max_retries = [], MAX_RETRIES if calibrated else 0  # fixed: as written
        for attempt in range(max_retries + 1):
            last, diverged = attempt == max_retries, False
            count, order_rng = self._begin(start)  # a restart sees the same orders
            Wa = anchor_major(self.W, self.w_dtype)  # the kernels' layout; W follows it
            for epoch in range(1, self.o.epochs + 1):
                check_deadline(self.deadline)
                tic = time.perf_counter()
                count = self._pass(Wa, t0, count, order_rng)
                self.W[...] = Wa.transpose(1, 0, 2)
                self.seconds.append(time.perf_counter() - tic)
                report = self._report(epoch)
                diverged = (max_retries > 0 and report.objective is not None
                            and not report.objective <= DIVERGENCE_FACTOR * self.start_obj)
                yield report
                if diverged and not last:
                    break
            if not diverged or last:  # the last attempt runs all epochs
                break
            retries.append({"eta0": eta0_of(self.o.lambda_, t0), "epoch": epoch,
                            "objective": self.objectives[-1],
                            "start_objective": self.start_obj})
            t0 *= RETRY_DIVISOR
            _restore(start, self.W, self.b, self.anchors)
        self._finish(t0, retries)

    def _schedule(self) -> tuple[float, bool]:
        """(t0, calibrated): the fixed schedule, or η0 calibrated from the starting point."""
        o, learn = self.o, self.anchors is not None
        fixed = resolve_t0(o.t0, o.lambda_)
        if fixed is not None or o.epochs == 0:
            return (fixed if fixed is not None else default_t0(o.lambda_)), fixed is None
        t0, self.info["t0_calibration"] = calibrate_eta0(
            self.X, self.Y, self.code, self.W, self.b, anchors=self.anchors, coding=o.coding,
            anchor_scale=o.anchor_scale, anchor_step_max=o.anchor_step_max,
            passes=o.calibration_passes or (LEARNED_PASSES if learn else 1),
            exponents=LEARNED_ETA0_EXPONENTS if learn else ETA0_GRID_EXPONENTS,
            random_state=self.seed_calibration, coarse_step=o.calibration_coarse_step,
            w_dtype=self.w_dtype, walk=self.walk, **self.calibration, **self.kw)
        return t0, True

    def _saved(self) -> tuple:
        """Copies of (W, b, anchors or None)."""
        anchors = self.anchors
        return self.W.copy(), self.b.copy(), anchors.copy() if anchors is not None else None

    def _begin(self, start):
        """A fresh attempt: the step counters, the per-epoch lists, the best epoch (the
        start, saved as ``start``); returns (the skip counter, the epochs' order rng)."""
        self.t = 0
        self.seconds, self.mean_k, self.objectives = [], [], []
        self.best = (self.start_obj, 0, start)
        return self.kw["skip"], np.random.default_rng(self.seed_order)

    def _report(self, number: int) -> Epoch:
        """The objective at this epoch (tracked) and the best epoch so far."""
        mean_k = self.mean_k[-1] if number else None
        if not self.track:
            if number == 0:
                self.start_obj = None
            return Epoch(number, mean_k=mean_k)
        code = self.code
        if self.anchors is not None and number > 0:  # codes of the moved anchors
            code = self.o.coding.encode(self.X, self.anchors)
        obj, F = sgd_objective(self.X, self.Y, code, self.W, self.b, self.o.lambda_,
                               self.o.use_W)
        if number == 0:
            self.start_obj = obj
        else:
            self.objectives.append(obj)
            if obj < self.best[0]:
                self.best = (obj, number, self._saved())
        return Epoch(number, obj, F, code, mean_k)

    def _pass(self, Wa, t0, count, order_rng) -> int:
        """One pass over the batches (the kernels); appends the epoch's mean k*."""
        o, kw = self.o, self.kw
        ks_mean, ks_n = [], []  # per batch: mean k* and steps
        for Xb, Yb, cb, order in self.batches(order_rng):
            if self.anchors is not None:
                self.t, count, ks = sgd_epoch_anchors(
                    Xb, Yb, order, self.anchors, Wa, self.b, self.t, count, o.coding,
                    anchor_scale=o.anchor_scale, anchor_step_max=o.anchor_step_max, t0=t0,
                    **kw)
                ks_mean.append(float(ks.mean()) if ks.size else 0.0)
            else:
                self.t, count = sgd_epoch(Xb, Yb, cb, order, Wa, self.b, self.t, count,
                                          t0=t0, **kw)
                ks_mean.append(float(cb.n_active.mean() if cb.n_active is not None else cb.k))
            ks_n.append(len(order))
        self.mean_k.append(ks_mean[0] if len(ks_mean) == 1 else
                           float(np.average(ks_mean, weights=ks_n)) if sum(ks_n) else 0.0)
        return count

    def _finish(self, t0, retries) -> None:
        """``info``; the kept epoch's parameters back in W, b and the anchors."""
        o, kw, info = self.o, self.kw, self.info
        if self.track:
            check_finite_fit(self.start_obj, self.objectives, retries, o.lambda_)
        info.update(t0=float(t0), eta0=eta0_of(o.lambda_, t0),
                    bias_scale=float(kw["bias_scale"]), skip=kw["skip"], steps=int(self.t),
                    epoch_seconds=self.seconds, use_W=bool(o.use_W),
                    sgd_dtype=np.dtype(self.w_dtype).name)
        info["lambda"] = float(o.lambda_)
        if self.track:
            kept = self.best[1]
            info.update(start_objective=self.start_obj, epoch_objectives=self.objectives,
                        kept_epoch=kept, retries=retries)
            if kept != len(self.objectives):
                _restore(self.best[2], self.W, self.b, self.anchors)
        if self.anchors is not None:
            info.update(learn_anchors=True, anchor_scale=float(o.anchor_scale),
                        anchor_step_max=o.anchor_step_max)
        if self.code.n_active is not None or self.anchors is not None:
            info["mean_k_per_epoch"] = self.mean_k


def train_llc_sgd(X, Y: np.ndarray, code: LocalCode, W: np.ndarray, b: np.ndarray,
                  options: SGDOptions, *,
                  batches: Callable[[np.random.Generator], Iterable[tuple]] | None = None,
                  objective: bool = False) -> tuple[np.ndarray, np.ndarray, dict]:
    """Run all epochs of :class:`SGDTraining` from (W, b) (updated in place and
    returned); returns (W, b, info)."""
    training = SGDTraining(X, Y, code, W, b, options, batches=batches,
                            objective=objective)
    for _ in training.epochs():
        pass
    return W, b, training.info


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



def _restore(saved, W, b, anchors) -> None:
    """Copy saved (W, b, anchors) back into the arrays the caller holds."""
    W[...] = saved[0]
    b[...] = saved[1]
    if saved[2] is not None:
        anchors[...] = saved[2]
