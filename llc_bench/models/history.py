"""The training history of ``fit_info_["history"]``, one module for LL-SVM, OCC and ML3.

An entry is one pass of training: its number under the history's ``step`` key
("epoch"; ML3's CCCP iterations: "iteration"), the training objective
(:mod:`.objective`) and the metrics the model reports, the training ones and, with an
``eval_set``, the test ones.  A run that restarts (the SGD's divergence guard)
overwrites its entries from the restarted step on.  ``seconds`` is the time spent on
the history, which the timings keep apart from training.

The committed records hold these entries and the figures read them by key: a model's
keys and the arithmetic of its metrics stay as they are.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np


class History:
    """The entries of one fit and the seconds spent on them."""

    def __init__(self, step: str = "epoch"):
        self.step = step
        self.entries: list[dict] = []
        self.seconds = 0.0

    @contextlib.contextmanager
    def timed(self):
        """Add the seconds the block takes to ``seconds``."""
        tic = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - tic

    def add(self, step: int, objective: float, **metrics) -> dict:
        """Append the entry ``{step: step, "objective": objective, **metrics}``, after
        dropping the entries of this step and later ones (a restarted run)."""
        while self.entries and self.entries[-1][self.step] >= step:
            self.entries.pop()
        entry = {self.step: step, "objective": objective, **metrics}
        self.entries.append(entry)
        return entry


def accuracy(predicted, truth) -> float:
    """The fraction of rows predicted right."""
    return float(np.mean(predicted == truth))


def error(predicted, truth) -> float:
    """The fraction of rows predicted wrong."""
    return float(np.mean(predicted != truth))


def mean_hinge(Y, F) -> float:
    """max(0, 1 - y f) averaged over the rows and the one-vs-all outputs (the records'
    hinge metric) for ±1 targets Y and decision values F, both (n, n_out)."""
    return float(np.maximum(0.0, 1.0 - Y * F).mean())
