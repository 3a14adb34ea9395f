"""The one trial loop of every hyper-parameter search in the package: the selection
estimator's trials (:class:`llc_bench.selection.SearchCV`, Optuna's sampler asked for each
setting) and the estimators' own grid CVs (:mod:`llc_bench.models.grid_search`, the grid's
candidates in order) both run through :func:`run_trials`.

A search is three functions: ``ask()`` gives the next trial (None: no more),
``evaluate(trial)`` fits and scores it split by split and returns its score, raising
:class:`Pruned` to give it up, and ``tell(trial, state, score, error)`` records how it
ended.  The loop is Optuna's own ``Study.optimize`` loop written out (ask, run, tell, then
the stop rules), so that a search that stops early says why in the caller's words."""

from __future__ import annotations

from collections.abc import Callable


class Pruned(Exception):
    """A trial given up before its last split (a poor start, a budget spent): it is told
    "PRUNED" and the search goes on unless a stop rule ends it."""


def run_trials(ask: Callable, evaluate: Callable, tell: Callable, *,
               stop: Callable[[], bool] | None = None,
               catch: tuple[type[BaseException], ...] = ()) -> int:
    """Trials until ``ask()`` gives None or ``stop()`` (asked before each trial) is true.

    A trial ends "COMPLETE" with the score ``evaluate`` returned, "PRUNED" when it raised
    :class:`Pruned`, or "FAIL" on any other error: ``tell(trial, state, score, error)``
    records it (``score`` None unless complete), then an error of a type in ``catch`` lets
    the search go on and any other is raised.  Returns the number of trials run."""
    count = 0
    while not (stop is not None and stop()):
        trial = ask()
        if trial is None:
            break
        count += 1
        try:
            score = evaluate(trial)
        except Pruned:
            tell(trial, "PRUNED", None, None)
        except Exception as error:
            tell(trial, "FAIL", None, error)
            if not isinstance(error, catch):
                raise
        else:
            tell(trial, "COMPLETE", score, None)
    return count
