"""Hyper-parameter selection on training rows (llc_bench/selection/tune.py, tune=auto)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, compose_run
from sklearn.base import BaseEstimator, ClassifierMixin

from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator, prepare_config, run_experiment
from llc_bench.selection.search import stopped_note
from llc_bench.selection.tune import noise_margin, resolve, search_space, select, with_params
from llc_bench.store.results import config_hash


def _csv(path: Path, X, y) -> Path:
    lines = ["a,b,label"] + [f"{float(a)!r},{float(b)!r},{'yes' if t else 'no'}"
                             for (a, b), t in zip(X, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, X[:, 0] * X[:, 1] > 0


def _run(tmp_path, *overrides, echo=lambda line: None):
    return run_experiment(compose_run(*overrides, tmp_path=tmp_path), echo=echo)


@pytest.fixture
def files(tmp_path):
    X, y = _xor(400, 0)
    X_te, y_te = _xor(200, 1)
    return (_csv(tmp_path / "train.csv", X, y), _csv(tmp_path / "test.csv", X_te, y_te),
            tmp_path)


SMALL = ("tune.trials=6", "tune.budget_s=null")


def test_auto_is_the_default():
    import yaml

    defaults = yaml.safe_load((REPO / "conf" / "run.yaml").read_text())["defaults"]
    assert {"tune": "auto"} in defaults


def test_own_files_are_tuned_by_default_and_the_record_holds_the_trials(files):
    train, test, tmp = files
    lines = []
    record = _run(tmp, "dataset=file", f"dataset.train={train}", f"dataset.test={test}",
                  "model=llsvm", "tune=auto", *SMALL, echo=lines.append)
    tune = record["tune"]
    assert tune["n_trials"] == 6 and len(tune["trials"]) == 6
    assert tune["protocol"] == "3-fold" and tune["rows"] == 400
    # every dimension but the anchor rule, searched with more than two classes only
    assert set(tune["chosen"]) == set(search_space("llsvm")) - {"coding.anchor_method"}
    # the model's own setting is the first trial; the choice is the best validation score
    assert tune["trials"][0]["params"]["coding.n_anchors"] == 100
    best = max(t["score"] for t in tune["trials"] if t["folds_scored"] == 3)
    assert tune["validation_accuracy"] == pytest.approx(best)
    assert record["timings"]["tune"] == pytest.approx(tune["seconds"])
    assert record["config"]["tune"]["trials"] == 6
    assert any(line.startswith("tune    6 trials (3-fold on 400") for line in lines)
    assert "(+ tune " in lines[-1] and "(tuned)" in "\n".join(lines)
    # the final model is the chosen setting, fitted on all training rows
    size = record["model_size"]
    assert size["n_anchors"] == min(tune["chosen"]["coding.n_anchors"], 400)


def test_selection_never_reads_the_test_split(files):
    """A poisoned test file (other rows, labels flipped) changes nothing in the selection."""
    train, test, tmp = files
    X_te, y_te = _xor(200, 7)
    poisoned = _csv(tmp / "poisoned.csv", X_te * 50, ~y_te)
    a = _run(tmp, "dataset=file", f"dataset.train={train}", f"dataset.test={test}",
             "model=llsvm", "tune=auto", *SMALL)["tune"]
    b = _run(tmp, "dataset=file", f"dataset.train={train}", f"dataset.test={poisoned}",
             "model=llsvm", "tune=auto", *SMALL)["tune"]
    assert a["chosen"] == b["chosen"]
    assert [t["score"] for t in a["trials"]] == [t["score"] for t in b["trials"]]


def test_same_seed_same_choice_other_seed_other_trials(tmp_path):
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", *SMALL, tmp_path=tmp_path)
    prepare_config(config)
    X, y = _xor(300, 0)
    y = np.where(y, 1, -1)
    first = select(config, X, y, build_estimator)
    second = select(config, X, y, build_estimator)
    assert first[0] == second[0]
    strip = [[(t["params"], t["score"]) for t in r[1]["trials"]] for r in (first, second)]
    assert strip[0] == strip[1]
    other = select({**config, "seed": 1}, X, y, build_estimator)
    assert [t["params"] for t in other[1]["trials"]][1:] != [t["params"] for t in
                                                            first[1]["trials"]][1:]


class _Sleeper(BaseEstimator, ClassifierMixin):
    """A classifier whose fit sleeps ``delay`` seconds (wall time, not CPU): the budget test
    then does not depend on the machine's load."""

    def __init__(self, delay=0.1):
        self.delay = delay

    def fit(self, X, y):
        time.sleep(self.delay)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def _sleeper(config):
    return _Sleeper(0.1)


def test_budget_is_respected(tmp_path):
    """tune.budget_s=2 over fits of 0.1 s (3 folds): stopped by the budget, within 20 % of
    it, after several trials."""
    X, y = _xor(600, 0)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=null",
                         "tune.budget_s=2", tmp_path=tmp_path)
    _, report = select(prepare_config(config), X, np.where(y, 1, -1), _sleeper)
    assert report["stopped_by"] == "budget" and report["n_trials"] >= 3
    assert report["seconds"] <= 2 * 1.2


def test_two_workers_keep_the_budget(tmp_path):
    """tune.workers=2 under tune.budget_s=2: the selection ends within the budget and one
    trial more, however long the second process takes to start (its imports alone took
    seconds, and each process's first trial ignored the budget: 20 s for a 2 s budget)."""
    X, y = _xor(600, 0)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=null",
                         "tune.budget_s=2", "tune.workers=2", tmp_path=tmp_path)
    _, report = select(prepare_config(config), X, np.where(y, 1, -1), _sleeper)
    longest = max(t["seconds"] for t in report["trials"])
    assert report["stopped_by"] == "budget" and report["n_trials"] >= 1
    assert report["seconds"] <= 2 + longest + 1.5
    numbers = [t["number"] for t in report["trials"]]
    assert numbers == sorted(set(numbers)) and report["trials"][0]["folds_scored"] == 3


def test_many_trials_without_a_budget_say_first_what_they_may_cost(tmp_path):
    """tune.trials >= 100 and no budget: one warning before the first trial, with
    an estimate from the store's runs (the committed results know llsvm on banana) or
    saying there is none."""
    import warnings

    from llc_bench.errors import LLCBenchWarning
    from llc_bench.selection.search import _splits
    from llc_bench.selection.tune import cost_warning

    X, y = _xor(300, 0)
    y = np.where(y, 1, -1)

    def config(*overrides):
        return prepare_config(compose_run("model=llsvm", "dataset=banana", "tune=on",
                                          *overrides, tmp_path=tmp_path))

    many = config("tune.trials=100", "tune.budget_rows=null")
    parts = _splits(X, y, many["tune"], 0)[1]
    text = cost_warning(many, parts)
    assert text.startswith("tune.trials=100 with no budget (tune.budget_rows=null): 100 "
                           "trials of 3 fit(s) on 200 rows, up to ~") and "llsvm on banana" in text
    assert "tune.budget_rows=N" in text
    unknown = {**many, "dataset": {**many["dataset"], "name": "nosuch"}}
    assert "no estimate (no stored run of llsvm on nosuch)" in cost_warning(unknown, parts)
    assert cost_warning(config("tune.trials=100"), parts) is None  # the row budget
    assert cost_warning(config("tune.trials=100", "tune.budget_rows=null", "tune.budget_s=60"),
                        parts) is None
    assert cost_warning(config("tune.trials=30", "tune.budget_rows=null"), parts) is None

    seen = []

    def failing(run_config):  # every trial fails at once: the warning came before it
        seen.append(len(caught))
        raise ValueError("no fit")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConfigError, match=r"none of the 100 trials completed "
                           r"\(first failure: ValueError: no fit\)"):
            select(many, X, y, failing)
    ours = [w for w in caught if issubclass(w.category, LLCBenchWarning)]
    assert len(ours) == 1 and str(ours[0].message) == text and seen[0] >= 1


def _costly(config):
    """A fit as long as ML3's grows with its models per class: 0.03 s per model."""
    return _Sleeper(0.03 * config["trainer"]["n_models"])


@pytest.mark.parametrize("declared", [True, False])
def test_the_budget_judges_a_trial_by_its_declared_cost(tmp_path, declared):
    """ML3 declares that a fit's seconds grow with m (search.cost): a trial of many models
    after cheap ones is judged from the line through the fits' (m, seconds), so the study
    ends within 20 % of its budget; judged from the longest fit so far alone, as before the
    declaration, the same seeded study starts a 40-model fit it has no time for."""
    X, y = _xor(600, 0)
    config = prepare_config(compose_run(
        "model=ml3", "dataset=xor", "tune=on", "tune.trials=null", "tune.budget_s=1.6",
        "tune.holdout_min_rows=100", tmp_path=tmp_path))
    assert config["tune"]["space"]["trainer.n_models"]["cost"] is True
    if not declared:
        del config["tune"]["space"]["trainer.n_models"]["cost"]
    _, report = select(config, X, np.where(y, 1, -1), _costly)
    assert report["stopped_by"] == "budget"
    assert (report["seconds"] <= 1.6 * 1.2) is declared, report["seconds"]


class _Iterating(_Sleeper):
    """A fit of ``iterations`` steps of 0.02 s, each after ``check_deadline`` of its trial
    cache's deadline as ML3's CCCP iterations and the SGD epochs: as long as ML3's fit at a
    small lambda (letter: 18.5 s at 5e-6 against 6.9 s at 8e-2, same models), a dimension
    no cost line sees."""

    def __init__(self, iterations=3):
        self.iterations = iterations

    def fit(self, X, y, *, trial_cache=None):
        from llc_bench.models import _base

        for _ in range(self.iterations):
            _base.check_deadline(trial_cache.deadline)
            time.sleep(0.02)
        self.classes_ = np.unique(y)
        return self


def _slow_at_small_lambda(config):
    return _Iterating(3 if config["trainer"]["lambda_"] >= 1e-4 else 60)


@pytest.mark.parametrize("stopped", [True, False])
def test_a_fit_running_at_the_end_of_the_budget_is_given_up(tmp_path, monkeypatch, stopped):
    """After fits of 0.06 s, a trial whose fits take 1.2 s starts with 1 s of budget left
    in the worst case: given up at its next iteration past the deadline (pruned, its record
    says so), the study ends within 20 % of the budget; waited for, it does not."""
    from llc_bench.models import _base

    if not stopped:
        monkeypatch.setattr(_base, "check_deadline", lambda deadline: None)
    X, y = _xor(600, 0)
    config = prepare_config(compose_run(
        "model=llsvm", "dataset=xor", "tune=on", "tune.trials=null", "tune.budget_s=1",
        "tune.holdout_min_rows=100", tmp_path=tmp_path))
    _, report = select(config, X, np.where(y, 1, -1), _slow_at_small_lambda)
    assert report["stopped_by"] == "budget"
    assert (report["seconds"] <= 1.2) is stopped, report["seconds"]
    given_up = [t for t in report["trials"] if "stopped" in t]
    assert len(given_up) == stopped and all(t["folds_scored"] == 0 for t in given_up)


def test_fits_stop_at_a_passed_deadline_of_their_trial_cache_only():
    from llc_bench.models import LLSVMClassifier, ML3Classifier, OCCClassifier
    from llc_bench.models._base import FitDeadline, TrialCache

    X, y = _xor(200, 0)
    for model in (ML3Classifier(n_models=2, lambda_=1e-3, n_iter=3, random_state=0),
                  LLSVMClassifier(n_anchors=4, k=2, lambda_=1e-3, epochs=2, random_state=0),
                  OCCClassifier(solver="sgd", n_basis=2, lambda_=1e-3, epochs=2,
                                random_state=0)):
        with pytest.raises(FitDeadline, match="past the deadline"):
            model.fit(X, y, trial_cache=TrialCache(deadline=time.time() - 1))
        model.fit(X, y, trial_cache=TrialCache(deadline=None))
        assert model.fit(X, y).score(X, y) > 0.5


def _own_search_file(tmp_path, monkeypatch, model: str, text: str) -> None:
    """conf/search/<model>.yaml replaced by ``text`` (the package's conf dir is tmp_path)."""
    from llc_bench.selection import search

    (tmp_path / "search").mkdir()
    (tmp_path / "search" / f"{model}.yaml").write_text(text)
    monkeypatch.setattr(search, "_conf_dir", lambda: tmp_path)


def test_a_cost_that_is_not_a_positive_number_is_one_line(tmp_path, monkeypatch):
    _own_search_file(tmp_path, monkeypatch, "ml3",
                     "hydra:\n  sweeper:\n    params:\n      trainer.p: choice(1.5, 2.0)\n"
                     "      coding.name: choice(a, b)\nsearch:\n  cost: [coding.name]\n")
    with pytest.raises(ConfigError, match=r"ml3.yaml: search.cost: coding.name holds "
                                          r"\['a', 'b'\]: a cost must be a positive number"):
        search_space("ml3")


@pytest.mark.parametrize("declared", ["5", "[trainer.n_iter]", "{trainer.n_iter: [1, 2]}"])
def test_declared_trial_params_that_are_not_single_values_are_one_line(
        tmp_path, monkeypatch, declared):
    _own_search_file(tmp_path, monkeypatch, "ml3",
                     "hydra:\n  sweeper:\n    params:\n      trainer.p: choice(1.5, 2.0)\n"
                     f"search:\n  trial_params: {declared}\n")
    config = compose_run("model=ml3", "dataset=heart", "tune=on", tmp_path=tmp_path)
    with pytest.raises(ConfigError, match=r"ml3.yaml: search.trial_params: expected "
                                          r"\{KEY: VALUE, ...\}"):
        resolve(config)


@pytest.mark.parametrize("alone", ["0", "2.5", "abc"])
def test_a_declared_alone_trials_that_is_not_a_count_is_one_line(tmp_path, monkeypatch, alone):
    from llc_bench.selection.search import declared_stages

    _own_search_file(tmp_path, monkeypatch, "sapl",
                     "search:\n  fixed_first:\n    set: {trainer.learn_anchors: false}\n"
                     "    then: [trainer.anchor_scale]\n    trials: 6\n"
                     f"    alone_trials: {alone}\n")
    with pytest.raises(ConfigError, match=r"sapl.yaml: search.fixed_first: expected .*"
                                          r"alone_trials: A \(optional\)"):
        declared_stages("sapl")


def test_the_budget_line_through_the_fits():
    from llc_bench.selection.search import _seconds_at, fit_cost

    assert fit_cost({"a": {"cost": True}, "b": {}, "c": {"cost": True}},
                    {"a": 4, "b": 9, "c": 2.5}) == 10.0
    assert fit_cost({"a": {}}, {"a": 4}) is None
    # mnist's ML3 trials: two costs draw the line; one cost, or none, or a line that does
    # not rise, predicts nothing (the longest recent fit then judges alone)
    assert _seconds_at([(2.0, 15.4), (5.0, 21.5)], 40.0) == pytest.approx(92.67, abs=0.01)
    assert _seconds_at([(5.0, 21.5), (5.0, 20.0)], 40.0) == 0.0
    assert _seconds_at([(2.0, 9.0), (5.0, 3.0)], 40.0) == 0.0
    assert _seconds_at([(None, 3.0)], 40.0) == _seconds_at([], 40.0) == 0.0


def test_a_null_option_is_tried_as_what_it_stands_for(tmp_path):
    """sapl searches the soft-assignment sharpness, a factor on beta=auto whose config
    default is null (the runs from before it keep their keys): the defaults' first trial
    tries it as 1, the value the space says a null stands for."""
    X, y = _xor(300, 0)
    config = compose_run("model=sapl", "dataset=xor", "tune=on", "tune.trials=2",
                         "tune.budget_s=null", "trainer.epochs=2", "tune.fixed_first=false",
                         tmp_path=tmp_path)
    resolved = prepare_config(config)
    assert resolved["coding"]["beta_scale"] is None
    assert resolved["tune"]["space"]["coding.beta_scale"]["null_means"] == 1.0
    _, report = select(resolved, X, np.where(y, 1, -1), build_estimator)
    assert report["defaults_first"] and report["trials"][0]["params"]["coding.beta_scale"] == 1.0


def test_patience_stops_a_study_that_no_longer_improves(tmp_path):
    """Every setting scores the same: the defaults set the bar, three trials in a row do not
    beat it, the study stops there (counted in trials: the same on any machine)."""
    X, y = _xor(300, 0)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=50",
                         "tune.budget_s=null", "tune.patience=3", tmp_path=tmp_path)
    _, report = select(prepare_config(config), X, np.where(y, 1, -1),
                       lambda config: _Sleeper(0.0))
    assert report["stopped_by"] == "patience" and report["n_trials"] == 4
    assert report["patience"] == 3


def test_tune_off_and_presets_keep_the_old_cache_keys(tmp_path):
    """tune=off (and auto where a preset applies) is the run from before tuning existed:
    its config has no tune block, so its key is a committed record's."""
    committed = {p.stem for p in (REPO / "results" / "runs").glob("*.json")}
    for overrides in (["model=llsvm", "dataset=banana", "tune=auto"],  # a preset: no search
                      ["model=svm_knn", "dataset=banana", "tune=off"],  # its grid CV
                      ["model=linear", "dataset=banana", "tune=off"],  # its grid CV
                      ["model=llsvm", "dataset=banana", "tune=off"]):
        config = prepare_config(compose_run(*overrides, tmp_path=tmp_path))
        assert config["tune"] is None
        assert config_hash(config) in committed, overrides
    off = prepare_config(compose_run("model=ml3", "dataset=heart", "tune=off",
                                     tmp_path=tmp_path))
    auto = prepare_config(compose_run("model=ml3", "dataset=heart", "tune=auto",
                                      tmp_path=tmp_path))
    assert off["tune"] is None and auto["tune"]["space"]
    assert config_hash(off) != config_hash(auto)


def test_the_baselines_search_their_grid_s_range_under_auto_and_keep_the_grid_when_off(
        tmp_path):
    """tune=auto gives the kernel SVM, Nystroem and the linear SVM their space (C and γ in
    units of the data's scale; the first trial scikit-learn's defaults, C = 1 and
    gamma="scale") and SVM-KNN K and C instead of their grid CV, which tune=off keeps (and
    tune.own_cv_models under auto); a γ given on the command line leaves its scale
    unsearched."""
    def space(*overrides, fixed=()):
        config = compose_run("dataset=heart", *overrides, tmp_path=tmp_path)
        return (resolve(json.loads(json.dumps(config)), fixed=fixed)["tune"] or {}).get("space")

    for model in ("kernel", "nystroem"):
        assert set(space(f"model={model}", "tune=auto")) == {"trainer.C", "trainer.gamma_scale"}
        assert space(f"model={model}", "tune=off") is None
        assert set(space(f"model={model}", "tune=auto", "trainer.gamma=0.5",
                         fixed=("trainer.gamma",))) == {"trainer.C"}
    for model in ("linear", "linear_cs"):
        assert set(space(f"model={model}", "tune=auto")) == {"trainer.C"}
    assert set(space("model=svm_knn", "tune=auto")) == {"trainer.n_neighbors", "trainer.C"}
    assert space("model=svm_knn", "tune=auto", "tune.own_cv_models=[svm_knn]") is None
    X, y = _xor(240, 0)
    config = prepare_config(compose_run("model=kernel", "dataset=xor", "tune=auto",
                                        "tune.trials=4", "tune.budget_s=null",
                                        tmp_path=tmp_path))
    chosen, report = select(config, X, np.where(y, 1, -1), build_estimator)
    assert report["defaults_first"]
    assert report["trials"][0]["params"] == {"trainer.C": 1.0, "trainer.gamma_scale": 1.0}
    assert set(chosen) == {"trainer.C", "trainer.gamma_scale"} and report["n_trials"] == 4

    def tune(*overrides):
        config = compose_run("dataset=heart", *overrides, tmp_path=tmp_path)
        return resolve(json.loads(json.dumps(config)))["tune"] or {}

    assert tune("model=kernel", "tune=auto")["cv_max_rows"] == 5000  # declared: a subsample
    assert tune("model=kernel", "tune=auto", "tune.cv_max_rows=800")["cv_max_rows"] == 800
    assert "cv_max_rows" not in tune("model=nystroem", "tune=auto")  # its key as before


def test_keys_on_the_command_line_are_not_searched(tmp_path):
    config = compose_run("model=llsvm", "dataset=heart", "tune=auto", tmp_path=tmp_path)
    resolved = resolve(json.loads(json.dumps(config)), fixed=("trainer.lambda_", "coding.k"))
    assert set(resolved["tune"]["space"]) == {"coding.n_anchors", "coding.power",
                                              "coding.anchor_method"}
    every = resolve(json.loads(json.dumps(config)), fixed=tuple(search_space("llsvm")))
    assert every["tune"] is None
    assert resolve(json.loads(json.dumps(config)), fixed=("*",))["tune"] is None


def test_the_anchor_rule_is_searched_with_more_than_two_classes_only(tmp_path):
    """llsvm's space declares the anchor rule multiclass_only: two classes drop it from
    the search (the run's own k-means), three search it, the defaults' k-means first."""
    config = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on",
                                        "tune.trials=6", "tune.budget_s=null",
                                        "trainer.epochs=2", tmp_path=tmp_path))
    assert config["tune"]["space"]["coding.anchor_method"]["multiclass_only"]
    X, y = _xor(300, 0)
    _, binary = select(config, X, np.where(y, 1, -1), build_estimator)
    assert "coding.anchor_method" not in binary["space"]
    assert all("coding.anchor_method" not in t["params"] for t in binary["trials"])
    three = np.where(y, 1, 0) + (X[:, 0] > 0.5)
    _, multi = select(config, X, three, build_estimator)
    assert multi["chosen"]["coding.anchor_method"] in ("kmeans", "kmeans_per_class")
    assert multi["trials"][0]["params"]["coding.anchor_method"] == "kmeans"
    assert {t["params"]["coding.anchor_method"] for t in multi["trials"]} == {
        "kmeans", "kmeans_per_class"}


def test_a_one_point_space_skips_selection(tmp_path, monkeypatch):
    from llc_bench.selection import tune

    monkeypatch.setattr(tune, "search_space", lambda model: {
        "coding.k": {"kind": "choice", "values": [4]}})
    config = resolve(compose_run("model=llsvm", "dataset=heart", "tune=auto",
                                 tmp_path=tmp_path))
    assert config["tune"] is None and config["coding"]["k"] == 4


def test_every_declared_space_matches_its_model(tmp_path):
    """Each conf/search/<model>.yaml names keys of that model's config, and its model's
    defaults build an estimator at every corner of the space."""
    for path in sorted((REPO / "conf" / "search").glob("[!_]*.yaml")):
        model = path.stem
        config = compose_run(f"model={model}", "dataset=heart", "tune=on", tmp_path=tmp_path)
        resolved = resolve(config)
        corners = {key: (dim["values"] if dim["kind"] == "choice" else
                         [dim["low"], dim["high"]])
                   for key, dim in resolved["tune"]["space"].items()}
        base = {key: values[0] for key, values in corners.items()}
        for key, values in corners.items():
            for value in values:
                build_estimator(with_params(resolved, {**base, key: value}))


def test_bad_tune_settings_are_one_line_errors(tmp_path, monkeypatch):
    for override, words in (("tune.trials=0", "tune.trials=0"),
                            ("tune.budget_s=-1", "tune.budget_s=-1"),
                            ("tune.budget_fits=-1", "tune.budget_fits=-1"),
                            ("tune.budget_fits=true", "tune.budget_fits=True"),
                            ("tune.budget_rows=0", "tune.budget_rows=0"),
                            ("tune.budget_rows=2.5", "tune.budget_rows=2.5"),
                            ("tune.budget_rows=false", "tune.budget_rows=False"),
                            ("tune.fixed_first=maybe", "tune.fixed_first='maybe'"),
                            ("tune.folds=1", "tune.folds=1"),
                            ("tune.holdout=1.5", "tune.holdout=1.5"),
                            ("tune.patience=0", "tune.patience=0"),
                            ("tune.cv_max_rows=5", "tune.cv_max_rows=5"),
                            ("tune.rungs=0", "tune.rungs=0"),
                            ("tune.rungs=true", "tune.rungs=True"),
                            ("tune.warm_start=maybe", "tune.warm_start='maybe'"),
                            ("tune.warm_start=0", "tune.warm_start=0"),
                            ("tune.eta0_walk=1", "tune.eta0_walk=1"),
                            ("tune.init_max_iter=0", "tune.init_max_iter=0"),
                            ("tune.calibration_repeats=0", "tune.calibration_repeats=0"),
                            ("tune.sample_digits=0", "tune.sample_digits=0"),
                            ("tune.sample_digits=2.5", "tune.sample_digits=2.5"),
                            ("tune.second_stage_min_rows=0", "tune.second_stage_min_rows=0"),
                            ("tune.second_stage_min_rows=abc",
                             "tune.second_stage_min_rows='abc'"),
                            ("tune.init_max_iter=2.5", "tune.init_max_iter=2.5"),
                            ("tune.init_max_iter=false", "tune.init_max_iter=False"),
                            ("tune.simpler_se=-1", "tune.simpler_se=-1"),
                            ("tune.simpler_se=true", "tune.simpler_se=True"),
                            ("tune.simpler_se=abc", "tune.simpler_se='abc'"),
                            ("tune.trial_params=5", "tune.trial_params=5"),
                            ("tune.trial_params={trainer.nosuch:1}",
                             "tune.trial_params: trainer.nosuch is not a key"),
                            ("+tune.trails=3", r"tune.trails is not a key of tune \(did "
                             "you mean tune.trials"),
                            ("+tune.numerics_version=2",
                             "tune.numerics_version is not a key of tune"),
                            ("tune.own_cv_models=5", "tune.own_cv_models=5: expected a list"),
                            ("tune.own_cv_models=ml3", "tune.own_cv_models='ml3': expected"),
                            ("tune.own_cv_models=[svm_kn]", r"'svm_kn' is not a model \(did "
                             "you mean svm_knn")):
        config = compose_run("model=ml3", "dataset=heart", "tune=auto", override,
                             tmp_path=tmp_path)
        with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
            resolve(config)
    config = compose_run("model=kernel", "dataset=heart", "tune=on", tmp_path=tmp_path)
    assert resolve(config)["tune"]["space"]  # the kernel grid in the same form
    from llc_bench.selection import tune

    config = compose_run("model=linear_cs", "dataset=heart", "tune=on", tmp_path=tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(tune, "search_space", lambda model: None)
        with pytest.raises(ConfigError, match="declares no search space"):
            resolve(config)


def test_tune_command_writes_a_preset_with_its_provenance(tmp_path, capsys):
    from omegaconf import OmegaConf

    from llc_bench.cli import main

    out = tmp_path / "llsvm_xor.yaml"
    args = ["tune", "llsvm", "xor", "tune.trials=5", "tune.budget_s=null",
            f"data.home={tmp_path / 'home'}", "--out", str(out)]
    main(args)
    text = out.read_text()
    assert text.startswith("# @package _global_\n# Chosen by `llc-bench tune llsvm xor --seed 0 "
                           "tune.trials=5 tune.budget_s=null")
    assert "the best of 5 trials" in text and "Space: conf/search/llsvm.yaml" in text
    assert "Validation accuracy: chosen " in text
    body = OmegaConf.to_container(OmegaConf.load(out))
    assert set(body) == {"trainer", "coding"} and "lambda_" in body["trainer"]
    with pytest.raises(SystemExit):  # an existing --out file needs --force
        main(args)
    assert "exists: pass --force" in capsys.readouterr().err
    main([*args, "--force"])  # the same seed: the same choice
    assert OmegaConf.to_container(OmegaConf.load(out)) == body
    with pytest.raises(SystemExit):  # tune=off asks the command not to do its one job
        main([*args, "tune=off", "--force"])
    assert capsys.readouterr().err.strip() == (
        "llc-bench: error: tune=off: llc-bench tune always selects; drop it (tune.trials=N "
        "and tune.budget_s=S set its budget)")
    assert OmegaConf.to_container(OmegaConf.load(out)) == body


def test_a_preset_from_a_subsample_says_so_and_its_command_reproduces_it(tmp_path, capsys):
    """dataset.max_train=N: the header says the rows were a subsample, its command holds
    the override (and no path of this machine: the data folder's is left out), and running
    that command again writes the same preset."""
    import shlex

    from llc_bench.cli import main

    first = tmp_path / "first.yaml"
    main(["tune", "llsvm", "xor", "tune.trials=3", "tune.budget_s=null",
          "dataset.max_train=150", f"data.home={tmp_path / 'home'}",
          f"data.mirrors=[{tmp_path / 'mirror'}]", "--out", str(first)])
    text = first.read_text()
    assert "# On a seeded subsample of 150 of the " in text and "dataset.max_train=150" in text
    assert str(tmp_path) not in text and "data.mirrors" not in text
    command = shlex.split(text.split("`")[1])
    assert command[:3] == ["llc-bench", "tune", "llsvm"] and "dataset.max_train=150" in command
    again = tmp_path / "again.yaml"
    main([*command[1:], f"data.home={tmp_path / 'home'}", "--out", str(again)])
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line for line in again.read_text().splitlines() if not line.startswith("#")] == body
    capsys.readouterr()


def test_a_preset_that_keeps_its_values_keeps_its_header(tmp_path, capsys):
    """The selection does not beat the preset (an absurd keep_default_se): the file written
    is the preset as it was, its account of how its values were chosen included."""
    from llc_bench.cli import main

    out = tmp_path / "llsvm_banana.yaml"
    main(["tune", "llsvm", "banana", "--preset-keys", "tune.trials=2", "tune.budget_s=null",
          "tune.keep_default_se=1000", "dataset.max_train=200", "--out", str(out)])
    assert out.read_text() == (REPO / "conf" / "tuned" / "llsvm_banana.yaml").read_text()
    assert "kept as it is" in capsys.readouterr().out


def test_no_preset_header_holds_a_path_of_the_machine_that_wrote_it():
    import re

    absolute = re.compile(r"(?:^|[\s'\"=\[(`,])/[A-Za-z]")
    for path in sorted((REPO / "conf" / "tuned").glob("*.yaml")):
        for line in path.read_text().splitlines():
            assert not (line.startswith("#") and absolute.search(line)), (path.name, line)


def test_preset_keys_search_only_what_the_preset_set(tmp_path, capsys):
    """llc-bench tune --preset-keys: llsvm_banana sets lambda_ (and t0, outside the space),
    so only lambda_ is searched; m, k and the power stay the paper's (the composed values)."""
    from omegaconf import OmegaConf

    from llc_bench.cli import main

    out = tmp_path / "llsvm_banana.yaml"
    main(["tune", "llsvm", "banana", "--preset-keys", "tune.trials=3", "tune.budget_s=null",
          "tune.folds=5", "dataset.max_train=300", "--out", str(out)])
    text = out.read_text()
    assert "--preset-keys" in text and "Space: conf/search/llsvm.yaml (trainer.lambda_), the " \
        "keys the hand preset set" in text, text
    body = OmegaConf.to_container(OmegaConf.load(out))
    assert "coding" not in body and body["trainer"]["t0"] == "calibrate"
    with pytest.raises(SystemExit):  # no preset, no keys to take
        main(["tune", "llsvm", "xor", "--preset-keys", "--out", str(tmp_path / "x.yaml")])
    assert "no preset conf/tuned/llsvm_xor.yaml" in capsys.readouterr().err


def test_presets_are_regenerated_under_their_table_cells_overrides():
    """scripts/regenerate_presets.py tunes a preset under what its table cells fix: ML3 Table 2
    runs llsvm_ringnorm at m = 10 (so k cannot be tuned past m at the composed m = 100), OCC
    Table 2 fixes n_basis = 15 for occ_linear_g on letter; cells that differ are named."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "regenerate_presets", REPO / "scripts" / "regenerate_presets.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cells = script.cell_overrides()
    fixed, differ = script.shared_overrides(cells[("llsvm", "ringnorm")])
    assert fixed["coding.n_anchors"] == 10 and not differ
    fixed, differ = script.shared_overrides(cells[("occ_linear_g", "letter")])
    assert fixed == {"coding.n_basis": 15} and not differ
    fixed, differ = script.shared_overrides([{"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": 1, "c": 0}])
    assert fixed == {"a": 1} and differ == ["b", "c"]
    with pytest.raises(SystemExit):  # a name with no preset is an argparse error, not a no-op
        script.main(["--only", "nosuch"])


def test_the_defaults_are_kept_unless_clearly_beaten(tmp_path):
    X, y = _xor(300, 0)
    y = np.where(y, 1, -1)
    runs = {}
    for se in (0, 1000):
        config = compose_run("model=llsvm", "dataset=xor", "tune=on", *SMALL,
                             f"tune.keep_default_se={se}", "tune.simpler_se=null",
                             tmp_path=tmp_path)
        runs[se] = select(prepare_config(config), X, y, build_estimator)[1]
    best = max((t for t in runs[0]["trials"] if t["folds_scored"] == 3),
               key=lambda t: t["score"])
    assert runs[0]["chosen"] == best["params"] and not runs[0]["kept_default"]
    # an absurd margin: nothing beats the defaults (trial 0) by it
    assert runs[1000]["kept_default"] and runs[1000]["best_trial"] == 0
    assert runs[1000]["chosen"] == runs[1000]["trials"][0]["params"]
    assert runs[1000]["chosen"]["coding.n_anchors"] == 100


def test_two_workers_share_one_study(tmp_path):
    """tune.workers=2 without rounds (tune.batch=null): the trials run in two processes on
    one SQLite study; every trial is recorded once, the defaults among them, and the choice
    is the best complete trial.  The tune line and the run's result line say the choice may
    differ from a serial run's."""
    from llc_bench.experiment.runner import summary_line

    X, y = _xor(300, 0)
    y = np.where(y, 1, -1)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=8",
                         "tune.budget_s=null", "tune.batch=null", "tune.workers=2",
                         "tune.keep_default_se=0",
                         "tune.simpler_se=null", tmp_path=tmp_path)
    lines = []
    chosen, report = select(prepare_config(config), X, y, build_estimator, echo=lines.append)
    assert lines[-1].endswith("; trials in 2 processes: the choice may differ from a serial "
                              "run's")
    record = {"dataset": "xor", "model": "llsvm", "seed": 0, "config_hash": "h",
              "metrics": {"test_accuracy": 0.9, "test_hinge": 0.1},
              "timings": {"train": 0.1, "tune": 1.0, "test_total": 0.01}, "tune": report}
    assert "(+ tune 1.0s, trials in 2 processes)" in summary_line(record)
    numbers = [t["number"] for t in report["trials"]]
    assert report["workers"] == 2 and len(numbers) == len(set(numbers)) >= 8
    assert report["trials"][0]["params"]["coding.n_anchors"] == 100   # the defaults
    best = max((t for t in report["trials"] if t["folds_scored"] == 3),
               key=lambda t: (t["score"], -t["number"]))
    assert chosen == best["params"] and report["stopped_by"] == "trials"


def test_a_preset_outside_the_space_is_the_first_trial(tmp_path):
    """sapl_mnist's anchor_scale = 100 lies outside sapl's declared 0.001-1: the dimension is
    widened to hold it (the declared range kept beside), so the preset is trial 0 and the
    search runs between the two; a setting inside the space leaves it, and the key, as
    declared."""
    X, y = _xor(300, 0)
    config = compose_run("model=sapl", "dataset=xor", "tune=on", "tune.trials=3",
                         "tune.budget_s=null", "trainer.epochs=2", "trainer.anchor_scale=100",
                         "coding.n_anchors=400", "tune.fixed_first=false", tmp_path=tmp_path)
    resolved = prepare_config(config)
    space = resolved["tune"]["space"]
    assert space["trainer.anchor_scale"]["high"] == 100.0
    assert space["trainer.anchor_scale"]["declared"] == [0.001, 1.0]
    assert space["coding.n_anchors"]["values"][-1] == 400
    assert "declared" not in space["trainer.lambda_"]
    _, report = select(resolved, X, np.where(y, 1, -1), build_estimator)
    assert report["defaults_first"]
    assert report["trials"][0]["params"]["trainer.anchor_scale"] == 100.0
    assert set(report["widened"]) == {"trainer.anchor_scale", "coding.n_anchors"}
    inside = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        tmp_path=tmp_path))
    assert not any("declared" in d for d in inside["tune"]["space"].values())


class _RowCounter(BaseEstimator, ClassifierMixin):
    """The xor rule for lambda_ above 1e-3, else the training majority; remembers how many
    rows each fit saw."""

    seen: list = []

    def __init__(self, lambda_=1.0):
        self.lambda_ = lambda_

    def fit(self, X, y):
        _RowCounter.seen.append(len(y))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        if self.lambda_ > 1e-3:
            return (X[:, 0] * X[:, 1] > 0).astype(int)
        return np.full(len(X), self.classes_[0])


def test_rungs_train_on_nested_stratified_subsets_of_the_held_out_split(tmp_path):
    """tune.rungs=3 on 2,400 rows: the held-out quarter is scored after training on 600 and
    1,800 rows (200 < 500 rows left out), each subset inside the next and in the classes'
    shares, the validation rows the same; a trial's value is its last rung's score, and a
    setting poor on few rows is pruned before it is fitted on all of them.  rungs=1 is
    the procedure (and the cache key) from before rungs existed."""
    from llc_bench.selection.search import _splits

    X, y = _xor(2400, 0)
    y = np.where(y & (X[:, 0] > 0.5), 2, y.astype(int))  # three classes, unequal shares
    tune = {"folds": 5, "holdout": 0.25, "holdout_min_rows": 2000, "rungs": 3}
    protocol, splits = _splits(X, y, tune, seed=0)
    assert protocol == "holdout 0.25, rungs of 600/1800 rows"
    (small, va), (full, va2) = splits
    assert va is va2 and len(va) == 600 and not set(full) & set(va)
    assert set(small) < set(full) and len(full) == 1800
    share = np.bincount(y[full]) / len(full)
    assert np.abs(np.bincount(y[small]) / len(small) - share).max() < 0.01
    assert _splits(X, y, {**tune, "rungs": 1}, seed=0)[1][0][0].tolist() == full.tolist()

    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=12",
                         "tune.budget_s=null", "tune.rungs=3", tmp_path=tmp_path)
    resolved = prepare_config(config)
    assert resolved["tune"]["rungs"] == 3
    _RowCounter.seen = []
    _, report = select(resolved, X, y,
                       lambda config: _RowCounter(config["trainer"]["lambda_"]))
    assert report["protocol"].endswith("rungs of 600/1800 rows")
    assert report["validation_rows"] == 600 and "rungs" in report["pruner"]
    assert _RowCounter.seen.count(600) == 12 and 0 < _RowCounter.seen.count(1800) < 12
    assert "rungs" not in prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on",
                                                     tmp_path=tmp_path))["tune"]


def test_trials_that_differ_in_lambda_share_the_neighbours_and_warm_start_the_init(tmp_path,
                                                                                   monkeypatch):
    """Within a selection, a trial with the anchors and k of an earlier one reuses its
    neighbour search, and one that differs in λ only starts the dual CD init from the
    earlier duals; tune.warm_start=false keeps every init cold (and the cache key of
    before)."""
    import llc_bench.coding.local as local
    from llc_bench.models import kronecker

    searches, warm = [], []
    real_search, real_init = local._knn_sq_distances, kronecker._dual_cd_init
    monkeypatch.setattr(local, "_knn_sq_distances", lambda *a: searches.append(1)
                        or real_search(*a))

    def init(*args, **kwargs):
        out = real_init(*args, **kwargs)
        warm.append("warm_start_from_C" in out[2])
        return out

    monkeypatch.setattr(kronecker, "_dual_cd_init", init)
    X, y = _xor(300, 0)
    y = np.where(y, 1, -1)
    fixed = ("coding.n_anchors", "coding.k", "coding.power", "coding.anchor_method")
    for flag, expect_warm in (("true", True), ("false", False)):
        searches.clear(), warm.clear()
        config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=4",
                             "tune.budget_s=null", f"tune.warm_start={flag}",
                             "coding.n_anchors=8", "coding.k=4", tmp_path=tmp_path)
        config = prepare_config(config, fixed=fixed)
        assert list(config["tune"]["space"]) == ["trainer.lambda_"]
        assert ("warm_start" in config["tune"]) is expect_warm
        _, report = select(config, X, y, build_estimator)
        assert report["n_complete"] >= 2 and report["n_trials"] == 4
        assert len(searches) == 2 * 3  # 3 folds' training and validation rows, once each
        assert any(warm) is expect_warm and warm[0] is False


def test_the_trials_memos_save_k_means_and_change_no_number(tmp_path, monkeypatch):
    """The trial cache's anchors and neighbour-search memos: a selection chooses the same
    trials with the same validation accuracies as one whose fits get no cache at all, and
    runs k-means once per fold for trials of the same m and rule instead of once per fit."""
    from sklearn.cluster import KMeans

    from llc_bench.selection import tune

    kmeans, real = [], KMeans.fit
    monkeypatch.setattr(KMeans, "fit", lambda self, *a, **k: kmeans.append(1)
                        or real(self, *a, **k))
    X, y = _xor(300, 0)
    config = prepare_config(compose_run(
        "model=llsvm", "dataset=xor", "tune=on", "tune.trials=5", "tune.budget_s=null",
        "tune.warm_start=false", "tune.eta0_walk=false", "tune.init_max_iter=null",
        "coding.n_anchors=8", tmp_path=tmp_path), fixed=("coding.n_anchors",))
    runs = []
    for cached in (True, False):
        kmeans.clear()
        if not cached:
            monkeypatch.setattr(tune._Objective, "_cache_kw", lambda *a, **k: {})
        chosen, report = select(config, X, np.where(y, 1, -1), build_estimator)
        runs.append((chosen, [(t["params"], t["score"], t["folds_scored"])
                              for t in report["trials"]], len(kmeans)))
    assert runs[0][:2] == runs[1][:2]
    assert runs[0][2] == 3 < runs[1][2]  # 3 folds' training rows, k-means once each


def _calibrations(monkeypatch) -> list:
    """The info of every η0 calibration made from here on (appended as they run)."""
    from llc_bench.models import sgd_training

    infos, real = [], sgd_training.calibrate_eta0

    def calibrate(*args, **kwargs):
        out = real(*args, **kwargs)
        infos.append(out[1])
        return out

    monkeypatch.setattr(sgd_training, "calibrate_eta0", calibrate)
    return infos


def test_trials_after_the_first_walk_their_eta0_grid(tmp_path, monkeypatch):
    """tune.eta0_walk (the default): the first trial's η0 calibration runs coarse-to-fine,
    later trials walk from the η0 chosen last (in rounds of 2, each slot walks its own: two
    whole grids, the first of each slot); the fit of the choice on all rows runs outside the
    walk.  false: every calibration on the whole coarse-to-fine grid, and the cache key of a
    selection without the walk."""
    infos = _calibrations(monkeypatch)
    X, y = _xor(300, 0)
    for flag, expect in (("true", True), ("false", False)):
        infos.clear()
        config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=3",
                             "tune.budget_s=null", f"tune.eta0_walk={flag}",
                             tmp_path=tmp_path)
        config = prepare_config(config)
        assert ("eta0_walk" in config["tune"]) is expect
        select(config, X, y, build_estimator)
        walked = ["walked" in info["method"] for info in infos]
        assert len(walked) >= 3 * 3 - 4 and walked[0] is False  # pruned folds aside
        assert walked.count(False) == (2 if expect else len(walked))
        build_estimator(config).fit(X, y)
        assert "walked" not in infos[-1]["method"]


def test_the_trials_init_pass_cap_leaves_the_fit_of_the_choice_alone(tmp_path, monkeypatch):
    """tune.init_max_iter=N: every trial's dual CD init stops after at most N passes; the
    fit of the chosen setting on all rows runs to its tolerance.  null: no cap in the
    trials either, and no key in the selection's cache key."""
    from llc_bench.models import kronecker

    caps = []
    real = kronecker._dual_cd_init

    def init(*args, **kwargs):
        out = real(*args, **kwargs)
        caps.append(out[2].get("max_iter"))
        return out

    monkeypatch.setattr(kronecker, "_dual_cd_init", init)
    X, y = _xor(300, 0)
    for cap in (3, None):
        caps.clear()
        config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=3",
                             "tune.budget_s=null", f"tune.init_max_iter={cap or 'null'}",
                             "trainer.lambda_=1e-6", tmp_path=tmp_path)
        config = prepare_config(config, fixed=("trainer.lambda_",))
        assert config["tune"].get("init_max_iter") == cap
        assert ("init_max_iter" in config["tune"]) is (cap is not None)
        select(config, X, y, build_estimator)
        assert len(caps) >= 3 and set(caps) == {cap}
        build_estimator(config).fit(X, y)
        assert caps[-1] is None


def test_the_trials_calibration_repeats_leave_the_fit_of_the_choice_alone(
        tmp_path, monkeypatch):
    """tune.calibration_repeats=N: every trial's η0 calibration averages N seeded
    subsamples; the fit of the chosen setting on all rows its own 2.  null: the fit's own in
    the trials too, and no key in the selection's cache key."""
    infos = _calibrations(monkeypatch)
    X, y = _xor(300, 0)
    for value in (1, None):
        infos.clear()
        config = prepare_config(compose_run(
            "model=llsvm", "dataset=xor", "tune=on", "tune.trials=3", "tune.budget_s=null",
            f"tune.calibration_repeats={value or 'null'}", tmp_path=tmp_path))
        assert ("calibration_repeats" in config["tune"]) is (value is not None)
        select(config, X, y, build_estimator)
        assert len(infos) >= 3 and {info["repeats"] for info in infos} == {value or 2}
        build_estimator(config).fit(X, y)
        assert infos[-1]["repeats"] == 2


def test_a_run_s_sampled_floats_rounded_are_in_its_cache_key(tmp_path):
    """tune.sample_digits=N (6 by default): the run's trials fit the drawn floats at N
    significant digits, and the setting enters the selection's cache key; null: as drawn,
    and no key."""
    X, y = _xor(300, 0)
    for value in (4, None):
        config = prepare_config(compose_run(
            "model=llsvm", "dataset=xor", "tune=on", "tune.trials=4", "tune.budget_s=null",
            f"tune.sample_digits={value or 'null'}", tmp_path=tmp_path))
        assert config["tune"].get("sample_digits") == value
        chosen, report = select(config, X, y, build_estimator)
        lambdas = [t["params"]["trainer.lambda_"] for t in report["trials"][1:]]
        assert all((float(f"{v:.4g}") == v) is (value is not None) for v in lambdas)
        # the choice is a setting as its trial fitted it
        assert chosen in [t["params"] for t in report["trials"]]
    default = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on",
                                         tmp_path=tmp_path))
    assert default["tune"]["sample_digits"] == 6  # by default: the same trial on any machine


def test_the_selection_s_numerics_version_above_1_enters_the_cache_key(tmp_path,
                                                                         monkeypatch):
    """SearchCV.numerics_version: 1 stays out of the key (the records made before it keep
    theirs); a bumped one re-keys every selecting run, and no run that does not select."""
    from llc_bench.selection.search import SearchCV
    from llc_bench.store.results import config_hash

    def key(*overrides):
        config = prepare_config(compose_run("model=llsvm", "dataset=xor", *overrides,
                                            tmp_path=tmp_path))
        return config, config_hash(config)

    (selecting, before), (_, off_before) = key("tune=on"), key("tune=off")
    assert "numerics_version" not in selecting["tune"]
    monkeypatch.setattr(SearchCV, "numerics_version", 2)
    (selecting, after), (_, off_after) = key("tune=on"), key("tune=off")
    assert selecting["tune"]["numerics_version"] == 2 and after != before
    assert off_after == off_before


def _ml3_fits(monkeypatch) -> list:
    """The CCCP iterations of every ML3 fit made from here on."""
    from llc_bench.models.ml3 import ML3Classifier

    iterations, real = [], ML3Classifier.fit

    def fit(self, *args, **kwargs):
        iterations.append(self.n_iter)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ML3Classifier, "fit", fit)
    return iterations


def test_ml3_s_trials_fit_its_declared_trial_params_and_the_choice_its_own(
        tmp_path, monkeypatch, capsys):
    """ML3 declares search.trial_params (trainer.n_iter: 10): every trial fits 10 CCCP
    iterations, the fit of the choice the run's 30; the tune line says so before the trials,
    the record's report holds them and so does the cache key.  tune.trial_params={} runs the
    trials at the fit's own cost (the key of before); a command-line n_iter wins."""
    iterations = _ml3_fits(monkeypatch)
    X, y = _xor(300, 0)
    keys = {}
    for extra in ((), ("tune.trial_params={}",), ("trainer.n_iter=20",)):
        iterations.clear()
        args = ("model=ml3", "dataset=xor", "tune=on", "tune.trials=3", *extra)
        config = prepare_config(compose_run(*args, tmp_path=tmp_path),
                                fixed=tuple(a.split("=")[0] for a in extra
                                            if a.startswith("trainer.")))
        lines = []
        chosen, report = select(config, X, y, build_estimator, echo=lines.append)
        build_estimator(with_params(config, chosen)).fit(X, y)
        keys[extra] = config_hash(config)
        trial_iters = {(): 10, ("tune.trial_params={}",): 30, ("trainer.n_iter=20",): 20}[extra]
        assert set(iterations[:-1]) == {trial_iters} and len(iterations) >= 4
        assert iterations[-1] == (20 if extra == ("trainer.n_iter=20",) else 30)
        declared = extra == ()
        assert report["trial_params"] == ({"trainer.n_iter": 10} if declared else {})
        assert ("trainer.n_iter=10: the trials' fits" in lines[0]) is declared
        assert ("trial_params" in config["tune"]) is declared
    assert len(set(keys.values())) == 3


def test_search_cv_fits_its_trials_with_trial_params_and_refits_with_the_own(monkeypatch):
    from llc_bench.models import ML3Classifier
    from llc_bench.selection import SearchCV

    iterations = _ml3_fits(monkeypatch)
    X, y = _xor(240, 1)
    search = SearchCV(ML3Classifier(random_state=0), trials=3).fit(X, y)  # the declared
    assert set(iterations[:-1]) == {10} and iterations[-1] == 30
    assert search.report_["trial_params"] == {"n_iter": 10}
    iterations.clear()
    SearchCV(ML3Classifier(random_state=0), space={"p": [1.5, 2.0]}, trials=2,
             trial_params={"n_iter": 5}).fit(X, y)
    assert set(iterations[:-1]) == {5} and iterations[-1] == 30
    iterations.clear()
    SearchCV(ML3Classifier(random_state=0), space={"p": [1.5, 2.0]}, trials=2).fit(X, y)
    assert set(iterations) == {30}  # a space of one's own: no declared trial settings
    with pytest.raises(ValueError, match="trial_params key 'iters' is not a parameter of "
                                         "ML3Classifier"):
        SearchCV(ML3Classifier(), trial_params={"iters": 5}).fit(X, y)


def test_ml3_s_trials_fit_without_the_history_and_the_choice_with_it(monkeypatch):
    """A trial is scored on its validation rows: ML3's trials fit without the per-iteration
    history (the same models, less time), the fit of the choice with it."""
    from llc_bench.models import ML3Classifier
    from llc_bench.selection import SearchCV

    flags, real = [], ML3Classifier.fit

    def fit(self, *args, **kwargs):
        flags.append(self.history)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ML3Classifier, "fit", fit)
    search = SearchCV(ML3Classifier(random_state=0), trials=3).fit(*_xor(240, 1))
    assert set(flags[:-1]) == {False} and flags[-1] is True and len(flags) >= 4
    assert len(search.best_estimator_.fit_info_["history"]) == 30


def test_the_one_se_rule_takes_the_fewest_anchors_near_the_best(tmp_path):
    """tune.simpler_se=1: among the complete trials within one standard error of the best,
    the one of fewest anchors (the space's capacity), the higher score breaking ties; the
    record names the best it stepped back from.  null: the best trial, and no key.  On a
    linear problem one anchor (the linear SVM) is as good as the best, four anchors."""
    space = search_space("llsvm")
    assert space["coding.n_anchors"]["capacity"] == [0, 1]  # fewer anchors: simpler
    assert space["trainer.lambda_"]["capacity"] == [1, -1]  # then a larger lambda
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 2))
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.standard_normal(300)) > 0
    reports = {}
    for se in (None, 1):
        config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=8",
                             "tune.budget_s=null", "tune.keep_default_se=0",
                             "tune.calibration_repeats=null",  # trials with a best of m > 1
                             "tune.init_max_iter=100", "tune.folds=5",
                             f"tune.simpler_se={se or 'null'}", tmp_path=tmp_path)
        config = prepare_config(config)
        assert ("simpler_se" in config["tune"]) is (se is not None)
        reports[se] = select(config, X, y, build_estimator)[1]
    assert ([t["params"] for t in reports[1]["trials"]]  # the same seeded trials
            == [t["params"] for t in reports[None]["trials"]])
    complete = [t for t in reports[None]["trials"] if t["folds_scored"] == 5]
    best = max(complete, key=lambda t: (t["score"], -t["number"]))
    assert reports[None]["chosen"] == best["params"] and reports[None]["simpler_than"] is None
    margin = noise_margin(best["score"], 300, 1.0)
    near = [t for t in complete if best["score"] - t["score"] <= margin]
    simplest = min(near, key=lambda t: (t["params"]["coding.n_anchors"],
                                        -t["params"]["trainer.lambda_"]))
    assert simplest["params"]["coding.n_anchors"] < best["params"]["coding.n_anchors"]
    assert reports[1]["chosen"] == simplest["params"]
    assert reports[1]["simpler_than"] == {"trial": best["number"],
                                          "validation_accuracy": best["score"]}


def test_the_one_se_rule_needs_a_capacity_and_stays_inside_the_margin():
    from types import SimpleNamespace as T

    from llc_bench.selection.search import _simplest_near

    def trial(number, value, m, state="COMPLETE", lam=1e-4):
        return T(number=number, value=value, params={"coding.n_anchors": m, "lambda_": lam},
                 state=T(name=state))

    space = {"coding.n_anchors": {"kind": "choice", "values": [1, 8, 64], "capacity": [0, 1]},
             "lambda_": {"kind": "float", "capacity": [1, -1]}}
    margin = noise_margin(0.90, 1000, 1.0)  # 0.0095
    trials = [trial(0, 0.90, 64), trial(1, 0.90 - margin / 2, 8), trial(2, 0.95, 1, "PRUNED"),
              trial(3, 0.90 - 2 * margin, 1), trial(4, 0.90 - margin / 4, 8)]
    assert _simplest_near(trials, trials[0], space, 1000, 1.0).number == 4  # 8, higher score
    trials.append(trial(5, 0.90 - margin, 8, lam=1e-2))
    assert _simplest_near(trials, trials[0], space, 1000, 1.0).number == 5  # 8, larger lambda
    assert _simplest_near(trials, trials[0], space, 1000, 3.0).number == 3  # 1 anchor in reach
    assert _simplest_near(trials, trials[0], space, 1000, 0.0).number == 0
    no_capacity = {k: {kk: vv for kk, vv in d.items() if kk != "capacity"}
                   for k, d in space.items()}
    assert _simplest_near(trials, trials[0], no_capacity, 1000, 3.0).number == 0


def test_the_fit_of_a_held_out_choice_keeps_its_trials_anchors(tmp_path):
    """tune.trial_anchors: under the held-out protocol the chosen setting's fit takes its
    fixed anchors from the trials' training rows (the same k-means as the trial scored),
    and W from all rows; k-fold, or false, leaves k-means on all rows."""
    from sklearn.base import clone

    from llc_bench.models._base import TrialCache
    from llc_bench.selection.tune import trial_rows

    X, y = _xor(300, 0)
    config = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on", *SMALL,
                                        "tune.holdout_min_rows=100", "coding.n_anchors=8",
                                        tmp_path=tmp_path), fixed=("coding.n_anchors",))
    rows = trial_rows(config, X, y)
    assert len(rows) == 225 and len(set(rows.tolist())) == 225
    estimator = build_estimator(config)
    estimator.fit(X, y, trial_cache=TrialCache(memo=False, anchor_rows=(rows, len(y))))
    trial = clone(estimator).fit(X[rows], y[rows])
    everything = clone(estimator).fit(X, y)
    np.testing.assert_array_equal(estimator.anchors_, trial.anchors_)
    assert not np.allclose(estimator.anchors_, everything.anchors_)
    assert estimator.fit_info_["anchors"]["rows"] == 225
    assert estimator.fit_info_["init"]["n_rows"] == 300  # W: all rows
    for off in ("tune.trial_anchors=false", "tune.holdout_min_rows=2000"):
        config = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on", *SMALL,
                                            "tune.holdout_min_rows=100", off,
                                            tmp_path=tmp_path))
        assert trial_rows(config, X, y) is None


def test_a_record_says_which_anchors_its_fit_kept(files):
    train, test, tmp = files
    common = ("dataset=file", f"dataset.train={train}", f"dataset.test={test}", "tune=on",
              "tune.trials=3", "tune.budget_s=null", "tune.holdout_min_rows=100")
    fixed = _run(tmp, *common, "model=llsvm")
    assert fixed["tune"]["anchor_rows"] == 300 == fixed["fit_info"]["anchors"]["rows"]
    learned = _run(tmp, *common, "model=sapl", "trainer.epochs=2")  # SGD moves its anchors
    assert "anchor_rows" not in learned["tune"] and "rows" not in learned["fit_info"]["anchors"]
    with pytest.raises(ConfigError, match="tune.trial_anchors='yes'"):
        resolve(compose_run(*common, "model=llsvm", "tune.trial_anchors=yes",
                            tmp_path=tmp))


def test_the_choice_rules_enter_a_key_only_where_they_act(tmp_path):
    """simpler_se where the space orders capacity (llsvm, not sapl or ml3); trial_anchors
    where k-means places anchors that SGD does not move (llsvm, not sapl, jo or ml3): the
    other models' selections keep the cache keys they had without the rules."""
    cap = "choice_init_max_iter"  # where the fit's init is the dual CD one
    acting = {"llsvm": {"simpler_se", "trial_anchors", cap}, "sapl": {cap}, "jo": {cap},
              "ml3": set(), "kernel": set()}
    for model, keys in acting.items():
        config = prepare_config(compose_run(f"model={model}", "dataset=ringnorm", "tune=on",
                                            tmp_path=tmp_path))
        assert {"simpler_se", "trial_anchors", cap} & set(config["tune"]) == keys, model
    config = prepare_config(compose_run("model=llsvm", "dataset=ringnorm", "tune=on",
                                        "trainer.init_solver=l2_hinge", tmp_path=tmp_path))
    assert cap not in config["tune"]


def test_the_choice_is_fitted_under_its_trials_init_pass_cap(files):
    """tune.choice_init_max_iter=N: the fit of the chosen setting on all rows stops its dual
    CD init after N passes, as its trials did (the record says so); null: its own cap, and
    the selection's cache key of before.  A bad value is one line naming the key."""
    train, test, tmp = files
    common = ("dataset=file", f"dataset.train={train}", f"dataset.test={test}", "tune=on",
              "tune.trials=2", "tune.budget_s=null", "model=llsvm", "trainer.lambda_=1e-7",
              "tune.init_max_iter=3")
    capped = _run(tmp, *common, "tune.choice_init_max_iter=3")
    assert capped["tune"]["choice_init_max_iter"] == 3
    assert capped["fit_info"]["init"]["max_iter"] == 3
    assert capped["fit_info"]["init"]["iterations"] == [3]
    own = _run(tmp, *common, "tune.choice_init_max_iter=null")
    assert "choice_init_max_iter" not in own["tune"]
    assert "max_iter" not in own["fit_info"]["init"]
    assert own["fit_info"]["init"]["iterations"][0] > 3
    assert capped["config_hash"] != own["config_hash"]
    assert "choice_init_max_iter" not in own["config"]["tune"]
    for bad, shown in (("0", "0"), ("2.5", "2.5"), ("false", "False")):
        with pytest.raises(ConfigError, match=f"tune.choice_init_max_iter={shown}: expected"):
            resolve(compose_run(*common, f"tune.choice_init_max_iter={bad}", tmp_path=tmp))


def test_occ_s_intercept_is_searched_where_eq9_cannot_separate(tmp_path):
    """Two classes on opposite sides of the origin (a standardised CSV): eq. 9's one shared bias
    makes f(x) - b even in x, at chance here, and the selection picks the per-basis biases."""
    rng = np.random.default_rng(0)

    def clouds(n):
        y = rng.random(n) < 0.5
        return rng.normal(size=(n, 2)) + np.where(y, 1.5, -1.5)[:, None], y

    train = _csv(tmp_path / "train.csv", *clouds(300))
    test = _csv(tmp_path / "test.csv", *clouds(200))
    files = ("dataset=file", f"dataset.train={train}", f"dataset.test={test}", "model=occ_lib_g")
    paper = _run(tmp_path, *files, "tune=off", "trainer.C=1")
    tuned = _run(tmp_path, *files, "tune=auto", "tune.trials=8", "tune.budget_s=null")
    assert paper["metrics"]["test_accuracy"] < 0.7
    assert tuned["tune"]["chosen"]["trainer.intercept"] == "per_basis"
    assert tuned["metrics"]["test_accuracy"] > 0.9


def test_fixed_first_searches_with_fixed_anchors_then_the_anchor_step(tmp_path):
    """tune.fixed_first=true (the default) on sapl: the space but the anchor step searched
    with fixed anchors (the trials' fits built with learn_anchors=false), then the anchor step
    alone in the declared 6 trials with that choice; off, the key and the procedure stay as
    they were before it; on llsvm (nothing declared) it is no setting at all."""
    X, y = _xor(500, 0)
    y = np.where(y, 1, -1)
    built = []

    def build(config):
        built.append((config["trainer"]["learn_anchors"], config["trainer"]["anchor_scale"],
                      config["coding"]["n_anchors"]))
        return build_estimator(config)

    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on", "tune.trials=4",
                                        "tune.budget_s=null", "tune.fixed_first=true",
                                        "tune.second_stage_min_rows=null", tmp_path=tmp_path))
    assert config["tune"]["fixed_first"]["then"] == ["trainer.anchor_scale"]
    chosen, report = select(config, X, y, build)
    one, two = report["stages"]
    assert set(one["space"]) == set(config["tune"]["space"]) - {  # (two classes: one rule)
        "trainer.anchor_scale", "coding.anchor_method"}
    assert set(two["space"]) == {"trainer.anchor_scale"} and 2 <= two["n_trials"] <= 6
    assert two["patience"] == 1 and (two["n_trials"] == 6 or two["stopped_by"] == "patience")
    assert report["n_trials"] == one["n_trials"] + two["n_trials"]
    assert [learned for learned, _, _ in built[:one["n_trials"]]] == [False] * one["n_trials"]
    assert {m for _, _, m in built[one["n_trials"]:]} == {one["chosen"]["coding.n_anchors"]}
    assert all(learned for learned, _, _ in built[one["n_trials"]:])
    assert chosen == {**one["chosen"], **two["chosen"]}
    off = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                     "tune.fixed_first=false", tmp_path=tmp_path))
    assert "fixed_first" not in off["tune"] and "second_stage_min_rows" not in off["tune"]
    llsvm = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on",
                                       "tune.fixed_first=true", tmp_path=tmp_path))
    assert "fixed_first" not in llsvm["tune"] and "second_stage_min_rows" not in llsvm["tune"]


class _Oracle(_Sleeper):
    """Reads the label from the first column (``good``) or says the first class: a score
    set by the setting alone."""

    def __init__(self, good=False):
        super().__init__(0.0)
        self.good = good

    def predict(self, X):
        if not self.good:
            return super().predict(X)
        return np.where(X[:, 0] > 0, self.classes_[-1], self.classes_[0])


def _anchor_step_search(tmp_path, good):
    """sapl's staged selection where a fit scores ``good(trainer)`` and 50 % otherwise."""
    X, y = _xor(400, 0)
    y = np.where(y, 1, -1)
    X = np.column_stack([y, X])
    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        "tune.trials=4", "tune.second_stage_min_rows=400",
                                        tmp_path=tmp_path))
    return select(config, X, y, lambda config: _Oracle(good(config["trainer"])))


def test_the_anchor_step_stage_stops_on_the_noise_floor(tmp_path):
    """sapl's second stage (the anchor step, search.fixed_first.patience 1): when the step's
    second trial does not beat the first beyond the validation noise, the stage stops there
    with the first (the default step); a trial that gains goes on until one does not, the
    stop read after each round of two trials."""
    _, report = _anchor_step_search(tmp_path, lambda trainer: False)
    two = report["stages"][1]
    assert two["n_trials"] == 2 and two["stopped_by"] == "patience"
    assert two["chosen"] == {"trainer.anchor_scale": 0.01}
    assert "stopped: no gain beyond the validation noise" in stopped_note(two)

    chosen, report = _anchor_step_search(tmp_path, lambda trainer: (
        trainer["learn_anchors"] and trainer["anchor_scale"] != 0.01))
    two = report["stages"][1]
    assert two["n_trials"] == 4 and two["stopped_by"] == "patience"  # the third: no gain
    assert chosen["trainer.anchor_scale"] != 0.01 and not two["kept_default"]
    assert report["stages"][0]["n_trials"] == 4  # the fixed-anchor stage: no patience


class _Jittery(_Sleeper):
    """A linear SVM whose fit first sleeps a random while: the same fits under a load."""

    def __init__(self, C=1.0, delay=0.0):
        self.C, self.delay = C, delay

    def fit(self, X, y):
        from llc_bench.models import LinearSVMClassifier

        time.sleep(self.delay * np.random.default_rng().uniform())
        self.model_ = LinearSVMClassifier(C=self.C).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_a_budget_in_fits_is_the_same_choice_under_any_load():
    """budget_fits counts fits, not seconds: with fits that take a random extra while, the
    same trials, scores and choice; the fits stop within the budget (the first trial's three
    folds count three) and the line says the budget stopped them."""
    from llc_bench.selection import SearchCV


    X, y = _xor(300, 0)
    X = np.c_[X, X[:, 0] * X[:, 1]]
    quiet, loaded = (SearchCV(_Jittery(delay=delay), {"C": "tag(log, interval(1e-3, 1e3))"},
                              trials=None, budget_s=None, budget_fits=12, refit=False,
                              random_state=3).fit(X, y).report_ for delay in (0.0, 0.03))
    assert [t["score"] for t in quiet["trials"]] == [t["score"] for t in loaded["trials"]]
    assert quiet["chosen"] == loaded["chosen"] and quiet["stopped_by"] == "fits"
    assert 10 <= quiet["budget"]["fits"] <= 12 and quiet["n_trials"] >= 3
    assert stopped_note(quiet) == ", stopped by the budget of 12 fits"


def test_a_fit_counts_its_rows_and_its_declared_cost():
    """A fit on a third of the rows counts a third of a fit; a trial of twice the declared
    cost (ML3's models per class) counts twice; a budget in rows counts rows alone."""
    from llc_bench.selection.search import _Objective

    parts = [(None, np.zeros(100), None, None), (None, np.zeros(300), None, None)]
    space = {"n_models": {"kind": "choice", "values": [2, 4], "cost": True}}
    objective = _Objective(None, space, parts, None, budget_fits=10)
    objective.records = [{"number": 0, "params": {"n_models": 2}, "folds_scored": 2,
                          "fit_units": 4 / 3}]
    assert objective.fit_units({"n_models": 2}, 100) == pytest.approx(1 / 3)
    assert objective.fit_units({"n_models": 4}, 300) == pytest.approx(2.0)
    assert not objective.over_fit_budget(8.6)
    assert objective.over_fit_budget(8.7) == "fits"
    rows = _Objective(None, space, parts, None, budget_rows=1000)  # rows, whatever the cost
    rows.records = [{**objective.records[0], "fit_rows": 400}]
    assert not rows.over_fit_budget(2.0, 600) and rows.over_fit_budget(0.1, 601) == "rows"


def test_a_budget_in_rows_follows_the_problem_s_size_and_not_the_load():
    """budget_rows counts the training rows the trials fit: under load the same trials and
    choice; on twice the rows about half the fits; the tune line states the budget as fits
    of these rows."""
    from llc_bench.selection import SearchCV
    from llc_bench.selection.search import _budget_note

    def report(n, delay):
        X, y = _xor(n, 0)
        X = np.c_[X, X[:, 0] * X[:, 1]]
        return SearchCV(_Jittery(delay=delay), {"C": "tag(log, interval(1e-3, 1e3))"},
                        trials=None, budget_s=None, budget_rows=4000, folds=5, refit=False,
                        random_state=3).fit(X, y).report_

    quiet, loaded = report(300, 0.0), report(300, 0.03)
    assert [t["params"] for t in quiet["trials"]] == [t["params"] for t in loaded["trials"]]
    assert quiet["chosen"] == loaded["chosen"] and quiet["stopped_by"] == "rows"
    budget = quiet["budget"]
    assert budget["rows_per_fit"] == 240 and budget["rows"] <= 4000 < budget["rows"] + 240
    assert stopped_note(quiet) == (", stopped by the budget of 4000 training rows (16.7 fits "
                                   "on these rows)")
    assert _budget_note(quiet) == (f"; budget 4000 rows = 16.7 fits of 240 rows, "
                                   f"{budget['fits']:.1f} spent")
    double = report(600, 0.0)["budget"]
    assert double["rows_per_fit"] == 480 and double["fits"] == pytest.approx(
        budget["fits"] / 2, abs=1.0)


def test_the_tune_lines_say_the_budget_before_the_trials_and_the_rest_after_the_first():
    """Before the trials: the protocol, the fits a trial makes and every cap (the row budget
    as fits of these rows); after the first trial: what the rest may cost at its seconds per
    fit, the least of the trials left and the budget left."""
    from llc_bench.selection import SearchCV
    from llc_bench.selection.search import _WithParams

    X, y = _xor(300, 0)
    lines = []
    search = SearchCV(None, trials=10, budget_s=None, budget_rows=2400, folds=5, refit=False)
    search._search(X, y, _WithParams(_Jittery(delay=0.02)),
                   {"C": {"kind": "float", "low": 1e-3, "high": 1e3, "log": True}},
                   {"C": 1.0}, echo=lines.append)
    assert lines[0] == ("tune    5-fold: 5 fit(s) of 240 rows a trial; stops at 10 trials or "
                        "2400 training rows fitted (tune.budget_rows: 10.0 fits)")
    first = search.report_["trials"][0]
    per_fit = first["seconds"] / first["fit_units"]
    rest = re.fullmatch(r"tune    first trial ([\d.]+)s; the rest about ([\d.]+) s at that pace",
                        lines[1])
    assert rest and float(rest[2]) == pytest.approx(5 * per_fit, abs=0.6)  # 10 - 5 fits left
    assert re.match(r"tune    \d+ trials \(5-fold", lines[-1])
    assert lines[-1].endswith("; budget 2400 rows = 10.0 fits of 240 rows, 10.0 spent, "
                              "stopped by it")


class _Costly(_Jittery):
    """A _Jittery with a declared cost parameter ``n`` that does not change the fit."""

    def __init__(self, C=1.0, n=1, delay=0.0):
        self.C, self.n, self.delay = C, n, delay


def test_a_setting_over_the_budget_is_skipped_while_a_cheaper_one_still_fits():
    """A counted budget skips (prunes unfitted) a trial whose declared cost would pass it
    while the space's cheapest setting still fits, and stops only when that one would not:
    ML3's m = 10 drawn early no longer ends its selection after three trials."""
    from llc_bench.selection import SearchCV
    from llc_bench.selection.search import _WithParams

    X, y = _xor(400, 0)
    search = SearchCV(None, trials=30, budget_s=None, budget_fits=4, holdout_min_rows=0,
                      refit=False, random_state=1)
    space = {"n": {"kind": "choice", "values": [1, 8], "cost": True},
             "C": {"kind": "float", "low": 1e-3, "high": 1e3, "log": True}}
    search._search(X, y, _WithParams(_Costly()), space, {"n": 1, "C": 1.0})
    trials = search.report_["trials"]
    fitted = [t for t in trials if t["folds_scored"]]
    assert [t["params"]["n"] for t in fitted] == [1, 1, 1, 1]  # 4 fits of cost 1
    assert any(t["params"]["n"] == 8 and not t["folds_scored"] for t in trials)
    assert search.report_["stopped_by"] == "fits" and search.report_["budget"]["fits"] == 4.0


def test_a_seconds_cap_says_so_on_the_run_s_lines(tmp_path):
    """A selection that tune.budget_s ended says so in its tune line and in the run's
    result line: its choice may differ on another machine."""
    from llc_bench.experiment.runner import summary_line

    X, y = _xor(600, 0)
    config = compose_run("model=llsvm", "dataset=xor", "tune=on", "tune.trials=null",
                         "tune.budget_s=1", tmp_path=tmp_path)
    lines = []
    _, report = select(prepare_config(config), X, np.where(y, 1, -1), _sleeper,
                       echo=lines.append)
    assert report["stopped_by"] == "budget"
    assert "cut by tune.budget_s=1: the choice may differ on another machine" in lines[-1]
    record = {"dataset": "xor", "model": "llsvm", "seed": 0, "config_hash": "h",
              "metrics": {"test_accuracy": 0.9, "test_hinge": 0.1},
              "timings": {"train": 0.1, "tune": 1.0, "test_total": 0.01}, "tune": report}
    assert "(+ tune 1.0s, cut by tune.budget_s=1)" in summary_line(record)
