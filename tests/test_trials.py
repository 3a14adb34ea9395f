"""The one trial loop (llc_bench/trials.py) and that every search of the package runs
through it: SearchCV's trials and the estimators' own grid CVs."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from conftest import blobs

from llc_bench import trials
from llc_bench.trials import Pruned, run_trials

PACKAGE = Path(trials.__file__).resolve().parent


def _search(candidates, evaluate, **kw):
    queue, told = iter(candidates), []
    count = run_trials(lambda: next(queue, None), evaluate,
                       lambda t, state, score, error: told.append((t, state, score, error)),
                       **kw)
    return count, told


def test_trials_run_in_order_and_each_is_told_how_it_ended():
    def evaluate(t):
        if t == 2:
            raise Pruned()
        if t == 3:
            raise ArithmeticError("overflow")
        return t / 10

    count, told = _search([1, 2, 3, 4], evaluate, catch=(ArithmeticError,))
    assert count == 4
    assert [(t, state, score) for t, state, score, _ in told] == [
        (1, "COMPLETE", 0.1), (2, "PRUNED", None), (3, "FAIL", None), (4, "COMPLETE", 0.4)]
    assert isinstance(told[2][3], ArithmeticError) and told[0][3] is None


def test_an_error_not_caught_is_told_then_raised_and_ends_the_search():
    def evaluate(t):
        if t == 2:
            raise KeyError("bad")
        return 1.0

    with pytest.raises(KeyError):
        _search([1, 2, 3], evaluate, catch=(ValueError,))
    told = []
    queue = iter([1, 2, 3])
    with pytest.raises(KeyError):
        run_trials(lambda: next(queue, None), evaluate, lambda *a: told.append(a[:2]))
    assert told == [(1, "COMPLETE"), (2, "FAIL")] and next(queue) == 3  # 3 never asked


def test_the_stop_rule_is_asked_before_every_trial():
    done = []
    count, told = _search(range(10), lambda t: done.append(t) or 0.0,
                          stop=lambda: len(done) >= 3)
    assert count == 3 and done == [0, 1, 2] and len(told) == 3
    assert _search(range(10), lambda t: 0.0, stop=lambda: True) == (0, [])


def _calls_in(tree, name: str) -> int:
    return sum(isinstance(node, ast.Call) and (
        getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)
        for node in ast.walk(tree))


def test_no_module_runs_a_search_loop_of_its_own():
    """Optuna's own loop (``Study.optimize``) is called nowhere, ``Study.ask`` is taken only
    where SearchCV hands Optuna's trials to the one loop (which alone calls ``ask()``, but
    for the function it is handed that asks a round of trials at once, and the one trial of
    a round set in a study of its own for the pruner), and the two searches call the
    loop."""
    trees = {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text())
             for p in PACKAGE.rglob("*.py")}
    assert {m for m, tree in trees.items() if _calls_in(tree, "optimize")} == set()
    assert {m for m, tree in trees.items() if any(
        isinstance(node, ast.Attribute) and node.attr == "ask"
        for node in ast.walk(tree))} == {"selection/search.py"}
    assert {m for m, tree in trees.items() if _calls_in(tree, "ask")} == {
        "trials.py", "selection/search.py"}
    asking = {node.name for node in ast.walk(trees["selection/search.py"])
              if isinstance(node, ast.FunctionDef) and _calls_in(node, "ask")
              and not any(_calls_in(inner, "ask") for inner in ast.walk(node)
                          if inner is not node and isinstance(inner, ast.FunctionDef))}
    assert asking == {"ask_round", "_judged_alone"}
    handed = [node for node in ast.walk(trees["selection/search.py"])
              if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_trials"]
    assert any(getattr(call.args[0], "id", None) == "ask_round" for call in handed)
    assert {m for m, tree in trees.items() if _calls_in(tree, "run_trials")} == {
        "models/grid_search.py", "selection/search.py"}


def _counting(monkeypatch, module):
    calls = []

    def counted(ask, evaluate, tell, **kw):
        calls.append(1)
        return run_trials(ask, evaluate, tell, **kw)

    monkeypatch.setattr(module, "run_trials", counted)
    return calls


def test_a_grid_cv_and_search_cv_both_run_their_trials_through_the_loop(monkeypatch):
    from llc_bench.models import LinearSVMClassifier, grid_search
    from llc_bench.selection import SearchCV
    from llc_bench.selection import search as search_module

    X, y = blobs(2, n=120, seed=3)
    grid_calls = _counting(monkeypatch, grid_search)
    model = LinearSVMClassifier(C_grid=(0.1, 1.0, 10.0), cv_folds=3).fit(X, y)
    assert grid_calls == [1] and model.fit_info_["cv"]["folds"] == 3
    search_calls = _counting(monkeypatch, search_module)
    search = SearchCV(LinearSVMClassifier(C=1.0), space={"C": [0.1, 1.0, 10.0]}, trials=3,
                      random_state=0).fit(X, y)
    assert search_calls == [1] and len(search.cv_results_["params"]) == 3
    assert np.isfinite(search.best_score_)
