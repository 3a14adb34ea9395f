"""SearchCV, the one selection estimator (llc_bench/selection/search.py)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compose_run
from sklearn.base import clone

from llc_bench.experiment.runner import build_estimator, prepare_config
from llc_bench.models import LinearSVMClassifier, LLSVMClassifier
from llc_bench.selection import SearchCV
from llc_bench.selection.search import dimension
from llc_bench.selection.tune import select


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.where(X[:, 0] * X[:, 1] > 0, "same", "other")


def test_a_run_s_selection_is_search_cv_on_the_estimator_it_builds(tmp_path):
    """tune=on's select() on a run config and SearchCV on the estimator that config builds,
    its space's keys read as parameters, make the same trials, scores and choice."""
    X, y = _xor(500, 0)
    config = prepare_config(compose_run("model=llsvm", "dataset=xor", "tune=on",
                                        "tune.trials=6", "tune.budget_s=null",
                                        tmp_path=tmp_path))
    chosen, report = select(config, X, y, build_estimator)
    tune = config["tune"]
    search = SearchCV(build_estimator(config),
                      {key.rsplit(".", 1)[-1]: dim for key, dim in tune["space"].items()},
                      random_state=config["seed"], refit=False,
                      **{k: tune.get(k) for k in ("trials", "budget_s", "folds", "holdout",
                                                  "holdout_min_rows", "keep_default_se",
                                                  "simpler_se", "patience", "warm_start",
                                                  "eta0_walk", "init_max_iter",
                                                  "calibration_repeats")}).fit(X, y)
    assert search.best_params_ == {k.rsplit(".", 1)[-1]: v for k, v in chosen.items()}
    assert [t["score"] for t in search.report_["trials"]] == [t["score"]
                                                             for t in report["trials"]]
    assert search.report_["kept_default"] == report["kept_default"]


def test_search_cv_from_python_declared_space_and_its_results():
    """space=None takes the model's declared space as parameters; cv_results_ has
    scikit-learn's columns, one row per trial; best_estimator_ is refitted with the choice
    and answers predict, decision_function and score; the same random_state the same
    choice."""
    X, y = _xor(300, 1)
    search = SearchCV(LLSVMClassifier(random_state=0), trials=4, budget_s=None).fit(X, y)
    assert set(search.best_params_) == {"lambda_", "n_anchors", "k", "power"}
    results = search.cv_results_
    assert len(results["params"]) == 4 == len(results["mean_test_score"])
    assert {"split0_test_score", "split2_test_score", "rank_test_score", "mean_fit_time",
            "state", "param_lambda_"} <= set(results)
    assert results["params"][0]["n_anchors"] == 100  # the estimator's own setting first
    best = search.best_index_
    assert results["rank_test_score"][best] >= 1 and results["state"][best] == "COMPLETE"
    assert search.best_score_ == pytest.approx(results["mean_test_score"][best])
    assert search.best_estimator_.get_params()["n_anchors"] == search.best_params_["n_anchors"]
    assert set(search.predict(X[:7])) <= set(y) and search.decision_function(X[:3]).shape == (3,)
    assert 0.5 < search.score(X, y) <= 1.0
    again = clone(search).fit(X, y)
    assert again.best_params_ == search.best_params_
    assert list(again.cv_results_["mean_test_score"]) == pytest.approx(
        list(results["mean_test_score"]), nan_ok=True)


def test_a_learned_anchor_model_is_searched_in_its_declared_stages(tmp_path):
    """SearchCV(SAPLClassifier()) runs sapl's declared two stages, as tune=auto does: the
    same trials and scores as select() on the run config; cv_results_ holds both stages'
    trials, each row its whole setting (stage one's with the anchors fixed); the choice is
    refitted with learned anchors (second_stage_min_rows=None: on these 400 rows too).
    fixed_first=False: one search of the whole space."""
    from llc_bench.models import SAPLClassifier

    X, y = _xor(400, 5)
    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        "tune.trials=4", "tune.second_stage_min_rows=null",
                                        tmp_path=tmp_path))
    chosen, report = select(config, X, y, build_estimator)
    sapl = SAPLClassifier().set_params(**build_estimator(config).get_params())
    search = SearchCV(sapl, trials=4, random_state=config["seed"],
                      second_stage_min_rows=None).fit(X, y)
    assert search.best_params_ == {k.rsplit(".", 1)[-1]: v for k, v in chosen.items()}
    for ours, theirs in zip(search.report_["stages"], report["stages"], strict=True):
        assert [t["score"] for t in ours["trials"]] == [t["score"] for t in theirs["trials"]]
    one, two = search.report_["stages"]
    results = search.cv_results_
    assert len(results["params"]) == one["n_trials"] + two["n_trials"] == search.report_[
        "n_trials"]
    assert list(results["param_learn_anchors"]) == [False] * one["n_trials"] + [
        True] * two["n_trials"]
    assert results["params"][search.best_index_] == {
        **results["params"][search.best_index_], **search.best_params_}
    assert search.best_estimator_.learn_anchors and (
        search.best_estimator_.anchor_scale == search.best_params_["anchor_scale"])
    whole = SearchCV(SAPLClassifier(epochs=2), trials=2, fixed_first=False).fit(X, y)
    assert "stages" not in whole.report_ and "anchor_scale" in whole.best_params_


def test_below_second_stage_min_rows_only_the_fixed_anchor_stage_runs(tmp_path):
    """second_stage_min_rows (2,000 by default): on fewer training rows the anchor step is
    not searched; the fixed-anchor stage's choice is fitted with anchors learned at the
    model's own step, as tune=auto does; the report says why.  From that many rows on, both
    stages run."""
    from llc_bench.models import SAPLClassifier

    X, y = _xor(400, 5)
    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        "tune.trials=4", tmp_path=tmp_path))
    assert config["tune"]["second_stage_min_rows"] == 2000
    chosen, report = select(config, X, y, build_estimator)
    sapl = SAPLClassifier().set_params(**build_estimator(config).get_params())
    search = SearchCV(sapl, trials=4, random_state=config["seed"]).fit(X, y)
    assert search.best_params_ == {k.rsplit(".", 1)[-1]: v for k, v in chosen.items()}
    for ours in (search.report_, report):
        assert len(ours["stages"]) == 1 and "anchor_scale" not in ours["chosen"]
        assert ours["second_stage"] == ("skipped: 400 training rows < "
                                        "second_stage_min_rows 2000")
    assert list(search.cv_results_["param_learn_anchors"]) == [False] * report["n_trials"]
    assert search.best_estimator_.learn_anchors
    assert search.best_estimator_.anchor_scale == sapl.anchor_scale
    both = SearchCV(sapl, trials=4, random_state=config["seed"],
                    second_stage_min_rows=400).fit(X, y)
    assert len(both.report_["stages"]) == 2 and "second_stage" not in both.report_


def test_alone_the_first_stage_runs_at_most_its_declared_alone_trials(tmp_path):
    """sapl and jo declare alone_trials: 20: where the fixed-anchor stage runs alone (below
    second_stage_min_rows) it runs at most 20 trials, or the search's own cap if smaller, as
    tune=auto does; where both stages run, the first keeps the search's cap."""
    from llc_bench.models import SAPLClassifier
    from llc_bench.selection.search import declared_stages

    assert declared_stages("sapl")["alone_trials"] == 20 == declared_stages("jo")["alone_trials"]
    X, y = _xor(300, 5)
    for trials, min_rows, first in ((22, 2000, 20), (4, 2000, 4), (22, None, 22)):
        search = SearchCV(SAPLClassifier(epochs=2), trials=trials, random_state=0,
                          second_stage_min_rows=min_rows).fit(X, y)
        assert search.report_["stages"][0]["n_trials"] == first
        assert len(search.report_["stages"]) == (1 if min_rows else 2)
    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        "tune.trials=22", tmp_path=tmp_path))
    assert config["tune"]["fixed_first"]["alone_trials"] == 20  # in the cache key
    assert select(config, X, y, build_estimator)[1]["n_trials"] == 20


def test_the_estimator_of_a_preset_is_searched_as_a_run_of_the_preset(tmp_path):
    """from_preset("sapl") is a SAPLClassifier (the run builds it too), so SearchCV of it
    runs sapl's two declared stages with select()'s trials and scores (an LLSVMClassifier
    with sapl's parameters would search llsvm's space, every trial with learned anchors);
    a preset without a class of its own is searched by name, space="llsvm_soft"."""
    from llc_bench.models import JOClassifier, SAPLClassifier
    from llc_bench.selection.presets import from_preset
    from llc_bench.selection.search import declared_space

    assert type(from_preset("sapl")) is SAPLClassifier and type(from_preset("jo")) is JOClassifier
    assert type(from_preset("llsvm_soft")) is LLSVMClassifier
    X, y = _xor(400, 5)
    config = prepare_config(compose_run("model=sapl", "dataset=xor", "tune=on",
                                        "tune.trials=3", tmp_path=tmp_path))
    assert type(build_estimator(config)) is SAPLClassifier
    _, report = select(config, X, y, build_estimator)
    estimator = from_preset("sapl", seed=config["seed"])
    assert estimator.get_params() == build_estimator(config).get_params()
    search = SearchCV(estimator, trials=3, random_state=config["seed"], refit=False).fit(X, y)
    for ours, theirs in zip(search.report_["stages"], report["stages"], strict=True):
        assert [t["score"] for t in ours["trials"]] == [t["score"] for t in theirs["trials"]]
    soft = SearchCV(from_preset("llsvm_soft"), space="llsvm_soft", trials=2,
                    refit=False).fit(X, y)
    assert set(soft.best_params_) == {key.rsplit(".", 1)[-1]
                                      for key in declared_space("llsvm_soft")} != set(
        SearchCV(from_preset("llsvm_soft"), trials=2, refit=False).fit(X, y).best_params_)


def test_the_kernel_svm_s_declared_space_starts_from_scikit_learn_s_defaults():
    """KernelSVMClassifier's space is C and gamma_scale, tried first at C = 1 and
    gamma="scale"; a γ given as is leaves only C to search."""
    from llc_bench.models.kernel import KernelSVMClassifier

    X, y = _xor(200, 2)
    search = SearchCV(KernelSVMClassifier(), trials=3, budget_s=None).fit(X, y)
    assert search.cv_results_["params"][0] == {"C": 1.0, "gamma_scale": 1.0}
    assert search.best_estimator_.fit_info_["cv"] is None  # one fit: no grid CV inside
    fixed = SearchCV(KernelSVMClassifier(gamma=0.5), trials=3, budget_s=None).fit(X, y)
    assert set(fixed.best_params_) == {"C"} and fixed.best_estimator_.gamma_ == 0.5


def test_the_kernel_svm_s_trials_run_on_its_declared_subsample():
    """The kernel SVM's space declares cv_max_rows 5000 (LIBSVM's cost grows about as the
    square of the rows): on 6000 rows the trials' held-out split is drawn from a stratified
    5000 of them, and the choice is refitted on all 6000; a subsample given or a space
    given as is (no declaration) are what they say."""
    from llc_bench.models.kernel import KernelSVMClassifier

    X, y = _xor(6000, 4)
    search = SearchCV(KernelSVMClassifier(), trials=1).fit(X, y)
    report = search.report_
    assert report["protocol"] == "holdout 0.25 of 5000 subsampled rows"
    assert report["trials"][0]["fit_rows"] == 3750 and report["validation_rows"] == 1250
    assert search.best_estimator_.svc_.shape_fit_[0] == 6000
    smaller = SearchCV(KernelSVMClassifier(), trials=1, cv_max_rows=1000).fit(X, y)
    assert smaller.report_["trials"][0]["fit_rows"] == 2 * 1000  # 3-fold below 2000 rows
    whole = SearchCV(KernelSVMClassifier(), {"C": [1.0]}, trials=1, refit=False).fit(X, y)
    assert whole.report_["trials"][0]["fit_rows"] == 4500


def test_a_space_of_lists_strings_and_dimensions():
    assert dimension("C", [1, 10]) == {"kind": "choice", "values": [1, 10]}
    assert dimension("C", "tag(log, interval(0.01, 100))") == {
        "kind": "float", "low": 0.01, "high": 100, "log": True}
    assert dimension("C", {"kind": "int", "low": 1, "high": 9}) == {
        "kind": "int", "low": 1, "high": 9, "log": False}
    X, y = _xor(200, 2)
    search = SearchCV(LinearSVMClassifier(), {"C": [0.5, 2.0]}, trials=2,
                      budget_s=None).fit(X, y)
    assert search.best_params_["C"] in (0.5, 2.0)


@pytest.mark.parametrize("search, message", [
    (SearchCV(LinearSVMClassifier(), {"nosuch": [1]}), "'nosuch' is not a parameter"),
    (SearchCV(LinearSVMClassifier(), {"C": []}), "empty list"),
    (SearchCV(LinearSVMClassifier(), {"C": {"kind": "float", "low": 2, "high": 1}}),
     "expected a list"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, trials=None, budget_rows=None),
     "all None"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, budget_rows=0), "budget_rows"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, folds=1), "folds"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, cv_max_rows=5), "cv_max_rows"),
    (SearchCV(SearchCV(LinearSVMClassifier(), {"C": [1]}), None), "declares no search space"),
    (SearchCV(LLSVMClassifier(), "../search/llsvm"), "space='../search/llsvm' names no "
     "declared space"),
    (SearchCV(LinearSVMClassifier(), 5), "space=5: must be a dict or a str or None$"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, trial_params=3),
     "trial_params=3: must be a dict or None$"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, second_stage_min_rows=0),
     r"second_stage_min_rows=0: must be an int >= 1 or None$"),
    (SearchCV(LinearSVMClassifier(), {"C": [1]}, sample_digits=0),
     r"sample_digits=0: must be an int in \[1, 17\] or None$"),
])
def test_bad_searches_are_one_line_errors(search, message):
    X, y = _xor(60, 3)
    with pytest.raises(ValueError, match=message) as err:
        search.fit(X, y)
    assert "\n" not in str(err.value)


def test_search_cv_refits_the_choice_under_its_trials_init_pass_cap():
    """choice_init_max_iter=N: the refit's dual CD init stops after N passes, as the trials'
    did (init_max_iter); None: its own cap."""
    X, y = _xor(300, 1)
    common = dict(space={"k": [4, 8]}, trials=2, budget_s=None, init_max_iter=3)
    capped = SearchCV(LLSVMClassifier(lambda_=1e-7, random_state=0), **common,
                      choice_init_max_iter=3).fit(X, y)
    assert capped.best_estimator_.fit_info_["init"]["iterations"] == [3]
    own = SearchCV(LLSVMClassifier(lambda_=1e-7, random_state=0), **common,
                   choice_init_max_iter=None).fit(X, y)
    assert own.best_estimator_.fit_info_["init"]["iterations"][0] > 3
    assert "max_iter" not in own.best_estimator_.fit_info_["init"]


def test_sampled_floats_rounded_make_a_draw_that_differs_in_its_last_bit_the_same_trial(
        monkeypatch):
    """sample_digits: a sampler whose every float draw is one ulp off (another machine's
    floating point) gives the same trials, scores and choice; without it the settings
    differ."""
    import optuna

    X, y = _xor(300, 0)
    space = {"C": "tag(log, interval(1e-3, 1e3))"}

    def trials(digits):
        search = SearchCV(LinearSVMClassifier(), space, trials=12, sample_digits=digits,
                          refit=False).fit(X, y)
        return [(t["params"], t["score"]) for t in search.report_["trials"]]

    reference = {digits: trials(digits) for digits in (None, 6)}
    real = optuna.trial.Trial.suggest_float
    monkeypatch.setattr(optuna.trial.Trial, "suggest_float",
                        lambda self, name, low, high, **kw: min(
                            float(np.nextafter(real(self, name, low, high, **kw), np.inf)),
                            high))
    assert trials(6) == reference[6]
    assert [p for p, _ in trials(None)] != [p for p, _ in reference[None]]
    assert all(float(f"{p['C']:.6g}") == p["C"] for p, _ in reference[6])
    search = SearchCV(LinearSVMClassifier(), space, trials=12, refit=False).fit(X, y)
    assert search.best_params_ in [t["params"] for t in search.report_["trials"]]
