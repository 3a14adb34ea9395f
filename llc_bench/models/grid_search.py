"""The estimators' own grid CVs (their papers' protocols): a grid's candidates in order
through the package's one trial loop (:mod:`llc_bench.trials`), the results in
:class:`~llc_bench.selection.SearchCV`'s ``cv_results_`` table, the first best and the
grid-edge test; :func:`record` is the JSON-ready form estimators keep in
``fit_info_["cv"]``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from sklearn.model_selection import StratifiedKFold

from llc_bench import progress
from llc_bench.trials import run_trials


def results_table(params: Sequence[Mapping], split_scores: Sequence[Sequence[float]], *,
                  states: Sequence[str] | None = None,
                  fit_seconds: Sequence[float] | None = None,
                  scores: Sequence[float | None] | None = None, n_splits: int = 0) -> dict:
    """scikit-learn's search-result table: one row per candidate (``params[i]``, its
    ``split_scores[i]``; a split not scored is nan; at least ``n_splits`` split columns);
    ``states`` default "COMPLETE", ``fit_seconds`` a candidate's seconds over its splits,
    ``scores`` its score (default the mean of its splits; nan unless COMPLETE)."""
    n_splits = max([n_splits, *(len(s) for s in split_scores)])
    split = np.full((len(params), n_splits), np.nan)
    for i, row in enumerate(split_scores):
        split[i, :len(row)] = row
    state = list(states) if states is not None else ["COMPLETE"] * len(params)
    if scores is None:
        scores = [np.mean(row) if len(row) else np.nan for row in split_scores]
    mean = np.array([s if st == "COMPLETE" else np.nan
                     for s, st in zip(scores, state, strict=True)], dtype=float)
    order = np.where(np.isnan(mean), -np.inf, mean)
    rank = np.array([1 + int(np.sum(order > v)) for v in order], dtype=np.int32)
    seconds = fit_seconds if fit_seconds is not None else [np.nan] * len(params)
    out = {"params": [dict(p) for p in params]}
    for key in (params[0] if len(params) else {}):
        out[f"param_{key}"] = np.array([p.get(key) for p in params], dtype=object)
    out.update({f"split{i}_test_score": split[:, i] for i in range(n_splits)})
    out.update({"mean_test_score": mean, "rank_test_score": rank,
                "mean_fit_time": np.array([s / max(1, len(row)) for s, row
                                           in zip(seconds, split_scores, strict=True)]),
                "state": state})
    return out


def best_index(table: Mapping) -> int:
    """The row of the highest mean score (ties: the first candidate)."""
    mean = np.asarray(table["mean_test_score"], dtype=float)
    return int(np.argmax(np.where(np.isnan(mean), -np.inf, mean)))


def at_grid_edge(params: Sequence[Mapping], best: int) -> list[str]:
    """The parameters whose value in candidate ``best`` is the smallest or largest of the
    > 1 values the grid gives it (a choice there may mean a grid too narrow)."""
    edges = []
    for key, chosen in params[best].items():
        values = np.array([float(p[key]) for p in params])
        if np.unique(values).size > 1 and float(chosen) in (values.min(), values.max()):
            edges.append(key)
    return edges


def search_grid(candidates: Sequence[Mapping], score: Callable[[Mapping], Iterable[float]],
                n_splits: int) -> dict:
    """The table of ``candidates`` (dicts of parameters) in order; ``score(params)``
    yields the candidate's accuracy on each of the ``n_splits`` splits.  The candidates
    go through the package's one trial loop (:func:`llc_bench.trials.run_trials`); an
    error in a fit ends the search (a grid has no other candidate to fall back on)."""
    bar = progress.bar(total=len(candidates) * n_splits, desc="CV folds x grid", unit="fit")
    queue, split_scores, seconds = iter(candidates), [], []

    def evaluate(params):
        tic, row = time.perf_counter(), []
        split_scores.append(row)
        for accuracy in score(params):
            row.append(float(accuracy))
            bar.update()
        seconds.append(time.perf_counter() - tic)

    run_trials(lambda: next(queue, None), evaluate, lambda *_: None)
    bar.close()
    return results_table(candidates, split_scores, fit_seconds=seconds)


def kfold_splits(y, folds: int, seed) -> list:
    """Stratified ``folds``-fold splits of ``y`` (class indices), shuffled by ``seed``;
    fewer folds (at least 2) when a class has fewer rows."""
    smallest = int(np.bincount(y).min())
    return list(StratifiedKFold(n_splits=max(2, min(int(folds), smallest)), shuffle=True,
                                random_state=seed).split(np.zeros(len(y)), y))


def fold_scorer(X, y, splits: list, fit: Callable) -> Callable:
    """``score(params)`` for :func:`search_grid`: on each split, ``fit(X_train, y_train,
    params)`` returns a predict function; yields its accuracy on the held-out rows."""
    def score(params):
        for train, val in splits:
            with progress.quiet():  # the fits show no bars of their own
                predict = fit(X[train], y[train], params)
            yield np.mean(predict(X[val]) == y[val])
    return score


def record(table: Mapping, rows: int, **extra) -> dict:
    """``fit_info_["cv"]``: ``table`` JSON-ready (lists), its ``best_index`` and
    ``at_grid_edge``, the CV's ``rows``, ``folds`` (its splits), ``protocol`` (default
    "<folds>-fold") and ``extra``."""
    out = {key: (value.tolist() if isinstance(value, np.ndarray) else value)
           for key, value in table.items()}
    best = best_index(table)
    folds = sum(key.startswith("split") for key in table)
    out.update({"best_index": best, "at_grid_edge": at_grid_edge(table["params"], best),
                "rows": int(rows), "folds": folds, "protocol": f"{folds}-fold", **extra})
    return out


def kfold_search(X, y, candidates: Sequence[Mapping], folds: int, seed, fit: Callable) -> dict:
    """:func:`search_grid` over :func:`kfold_splits` of ``(X, y)`` with ``fit(X_train,
    y_train, params) -> predict``."""
    splits = kfold_splits(y, folds, seed)
    return search_grid(candidates, fold_scorer(X, y, splits, fit), len(splits))
