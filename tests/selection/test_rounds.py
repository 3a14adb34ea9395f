"""SearchCV's rounds (``batch``): trials asked a round at a time, each judged on the earlier
rounds' trials only, so the trials and the choice do not depend on the processes that run
them (``workers``)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compose_run

from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator, prepare_config, summary_line
from llc_bench.models import LLSVMClassifier, ML3Classifier
from llc_bench.selection import SearchCV
from llc_bench.selection import search as search_module
from llc_bench.selection.search import lanes
from llc_bench.selection.tune import select
from llc_bench.store.results import config_hash


def _rings(n, seed):
    """Two noisy concentric rings: a setting with too few anchors scores poorly on its
    first fold, so the pruner has something to prune."""
    rng = np.random.default_rng(seed)
    radius = np.where(rng.random(n) < 0.5, 1.0, 2.0)
    angle = rng.uniform(0, 2 * np.pi, n)
    X = np.c_[radius * np.cos(angle), radius * np.sin(angle)] + rng.normal(0, 0.35, (n, 2))
    return X, (radius > 1.5).astype(int)


def _trials(search: SearchCV) -> list:
    return [(t["number"], t["params"], t["score"], t["split_scores"], t["fit_units"])
            for t in search.report_["trials"]]


def _search(**kw) -> SearchCV:
    X, y = _rings(450, 0)
    return SearchCV(LLSVMClassifier(random_state=0), trials=12, refit=False,
                    keep_default_se=0, **kw).fit(X, y)


def test_rounds_of_one_trial_are_the_serial_search():
    """batch=1: the round machinery (the study judged alone, the cache per slot) gives the
    trials, scores, pruned trials and choice of one trial after another, on a CV whose
    pruner prunes."""
    serial, rounds = _search(batch=None), _search(batch=1)
    assert _trials(rounds) == _trials(serial)
    assert rounds.best_params_ == serial.best_params_
    assert serial.report_["n_pruned"] >= 1, serial.report_["n_pruned"]
    assert rounds.report_["n_pruned"] == serial.report_["n_pruned"]


def test_a_round_s_trials_choose_the_same_in_one_process_or_two(monkeypatch):
    """batch=2: the same trials, scores, pruned trials and choice whether a round's two
    trials run one after the other here or side by side in two processes (the second
    process surely used), under a counted budget that stops the search mid-way (a round's
    first trial counted as fitted in full when its second is judged)."""
    monkeypatch.setattr(search_module._Lanes, "wait_for_start", True)
    kw = dict(batch=2, budget_rows=5000)
    one, two = _search(workers=1, **kw), _search(workers=2, **kw)
    assert one.report_["workers"] == 1 and two.report_["workers"] == 2
    assert _trials(two) == _trials(one) and two.best_params_ == one.best_params_
    assert one.report_["stopped_by"] == "rows" and one.report_["n_trials"] < 12
    assert one.report_["n_pruned"] >= 1
    spent = sum(t["fit_rows"] for t in one.report_["trials"])
    assert spent <= 5000
    assert "asked 2 trials a round" in one.report_["sampler"]


def test_the_tune_line_says_the_processes_and_not_that_the_choice_may_differ(tmp_path,
                                                                          monkeypatch):
    """A run's rounds in 2 processes: its tune line says so and that one gives the same
    choice; its result line, which flags what may make a choice differ elsewhere, says
    nothing of them."""
    monkeypatch.setattr(search_module._Lanes, "wait_for_start", True)
    X, y = _rings(300, 1)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=4",
                         "tune.batch=2", "tune.workers=2", tmp_path=tmp_path)
    lines: list[str] = []
    _, report = select(prepare_config(config), X, y, build_estimator, echo=lines.append)
    assert lines[-1].endswith("; trials 2 a round in 2 processes (the same choice in one)")
    record = {"dataset": "xor", "model": "llsvm", "seed": 0, "config_hash": "h",
              "metrics": {"test_accuracy": 0.9, "test_hinge": 0.1},
              "timings": {"train": 0.1, "tune": 1.0, "test_total": 0.01}, "tune": report}
    assert "(+ tune 1.0s)" in summary_line(record)


def test_rounds_of_two_are_the_default_and_bad_values_are_one_line(tmp_path):
    """tune=auto's default: rounds of 2 in as many processes as cores are idle; null is
    the serial search, keyed as before rounds existed (no batch in its key)."""
    def resolved(*overrides):
        return prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on", *overrides,
                                          tmp_path=tmp_path))

    rounds, serial = resolved(), resolved("tune.batch=null")
    assert rounds["tune"]["batch"] == 2 and rounds["tune"]["workers"] == "auto"
    assert "batch" not in serial["tune"] and "rounds_version" not in serial["tune"]
    assert rounds["tune"]["rounds_version"] == SearchCV.rounds_version == 2
    assert config_hash(serial) != config_hash(rounds)
    assert config_hash(resolved("tune.batch=3")) != config_hash(rounds)
    assert SearchCV(LLSVMClassifier()).get_params()["batch"] == 2
    for bad, message in (("tune.batch=0", "tune.batch=0: expected an integer >= 1 or null"),
                         ("tune.batch=two", "tune.batch='two': expected an integer >= 1"),
                         ("tune.workers=many", "tune.workers='many': expected an integer "
                                               ">= 1 or auto")):
        with pytest.raises(ConfigError, match=message):
            resolved(bad)


def test_the_processes_of_a_selection():
    assert lanes(3, None) == 3 and lanes(3, 2) == 2 and lanes(1, 4) == 1
    assert lanes("auto", None) == 1   # where the choice would depend on them: one
    assert 1 <= lanes("auto", 2) <= 2
    with pytest.raises(ValueError, match="workers"):
        SearchCV(LLSVMClassifier(), workers="all").fit(*_rings(60, 0))


def test_ml3_s_rounds_choose_the_same_in_one_process_or_two(monkeypatch):
    """ML3 on three classes (its CCCP fits, a dimension per class count): rounds of 2 in
    two processes give one process's trials and choice."""
    monkeypatch.setattr(search_module._Lanes, "wait_for_start", True)
    X, y = _rings(360, 2)
    y = np.where(X[:, 0] > 0.8, 2, y)
    one, two = (SearchCV(ML3Classifier(random_state=0), trials=8, refit=False, batch=2,
                         workers=w).fit(X, y) for w in (1, 2))
    assert two.report_["workers"] == 2
    assert _trials(two) == _trials(one) and two.best_params_ == one.best_params_


def test_the_other_processes_start_only_for_a_search_long_enough_to_pay_for_them(
        monkeypatch):
    """workers=2: a search whose first trial shows the rest shorter than LANE_START_S
    starts no other process (the record says 1); one that shows it longer starts it, with
    the trials and choice of the short one."""
    started = []
    real = search_module._Lanes.start

    def start(self):
        started.append(self.n)
        real(self)

    monkeypatch.setattr(search_module._Lanes, "start", start)
    short = _search(workers=2)
    assert short.report_["workers"] == 1 and started == []
    monkeypatch.setattr(search_module, "LANE_START_S", 0.0)
    long = _search(workers=2)
    assert started == [2]
    assert _trials(long) == _trials(short) and long.best_params_ == short.best_params_


def test_a_selection_that_only_seconds_end_says_so_after_its_first_trial(tmp_path):
    """No trial count and no counted budget, a seconds cap only: after the first trial the
    tune line says the rest runs until the cap (no pace estimate of a count)."""
    X, y = _rings(300, 3)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=null",
                         "tune.budget_rows=null", "tune.budget_s=1", tmp_path=tmp_path)
    lines: list[str] = []
    select(prepare_config(config), X, y, build_estimator, echo=lines.append)
    assert any(line.endswith("; the rest: until tune.budget_s") for line in lines), lines
