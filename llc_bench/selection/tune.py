"""``tune``: hyper-parameter selection inside a run (``tune=auto``, ``on``, ``off``).

:func:`resolve` turns a run config's ``tune`` group into what the run will do (the space of
``conf/search/<model>.yaml`` in the grammar of Hydra's Optuna sweeper, minus the keys set on
the command line, widened to hold the run's own setting; None where it does not select, so
its cache key is the one it had before selection existed), and :func:`select` runs
:class:`~llc_bench.selection.search.SearchCV`'s procedure on the run's training rows, the
space's keys being the config's dotted keys.  ``tune=auto`` (the default) selects when the
model declares a space, no ``conf/tuned/<model>_<dataset>.yaml`` preset applies and the
model is not one of ``tune.own_cv_models`` (whose grid CV stays their selection); ``tune=on``
always, ``tune=off`` never.

The runner then fits the chosen setting on all training rows; under the held-out protocol
a fixed-anchor model keeps the chosen trial's anchors (``trial_anchors``: k-means on the
trial's training rows, :func:`trial_rows`).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError, did_you_mean
from llc_bench.selection.search import (
    BUDGETS,
    CAPACITY_ORDERS,  # noqa: F401 (tune's API)
    SearchCV,
    _conf_dir,
    _holds,
    _Objective,
    _optuna,
    _parts,
    _splits,
    declared_option,
    declared_space,
    declared_stages,
    first_trial,
    noise_margin,  # noqa: F401 (tune's API)
    second_stage_skipped,
    staged_search,
    without_set_alternatives,
)
from llc_bench.store.results import set_dotted, with_params  # noqa: F401 (tune's API)

MODES = ("auto", "on", "off")
# The keys of the ``tune`` group that change what a selection returns (so its cache key).
RESULT_KEYS = ("trials", "budget_s", "folds", "holdout", "holdout_min_rows", "keep_default_se",
               "workers", "patience")
# What makes trials cheaper (their numbers, so the choice, may move): two switches and the
# trials' cap on the dual CD init's passes.  Each enters the cache key only when set (true,
# a number), so a selection with them off (false; null) keeps its key of before.
CHEAPER_TRIALS = ("warm_start", "eta0_walk")
PASS_CAP = "init_max_iter"
# The fit of the choice's dual CD init passes: the cap the trials' inits ran under, so the
# choice is fitted as it was scored (null: its own cap, 1000, as selections before it were
# keyed).  In the cache key where the run's init is the dual CD one, and set.
CHOICE_PASS_CAP = "choice_init_max_iter"
# The trials' η0 calibration averaged over this many seeded subsamples (null: the fit's own).
CALIBRATION = "calibration_repeats"
# The sampled floats rounded to this many significant digits before a trial uses them (a
# draw differing in its last bits between machines gives the same trial; null: as drawn, as
# selections before it were keyed).
DIGITS = "sample_digits"
# The one-standard-error rule over the space's capacity dimensions (a number of standard
# errors; null: the best trial, no one-SE rule, as selections without it were keyed).
SIMPLER = "simpler_se"
# Trials in rounds of this many, each judged on the earlier rounds' only, so that their
# processes (``workers``) do not change the choice (null: one after another, as selections
# before it were keyed).
BATCH = "batch"
# Learned-anchor models: the space's other keys searched with fixed anchors first (cheap
# fits), then only what learning the anchors adds (conf/search's ``search.fixed_first``).
STAGED = "fixed_first"
# Its second stage runs from this many training rows (null: always, as staged selections
# before it were keyed); in the cache key of a staged selection only.
SECOND_STAGE = "second_stage_min_rows"
# The trials' splits drawn from a stratified subsample of at most this many training rows
# (a model whose fit costs grow faster than its rows: the kernel SVM declares one).
SUBSAMPLE = "cv_max_rows"
# The trials' fits take these settings over the run's (a cheaper fit of the same model: ML3's
# CCCP iterations); the fit of the choice keeps the run's (null: the model's declared
# search.trial_params; {}: none).  Enters the cache key when not empty.
TRIAL_PARAMS = "trial_params"
# The fit of the choice: under the held-out protocol, fixed anchors from the chosen trial's
# training rows (true; false: k-means on all training rows, as the fit was before it).
REFIT = "trial_anchors"


def preset_exists(model: str, dataset: str) -> bool:
    """Whether ``conf/tuned/<model>_<dataset>.yaml`` (a per-dataset preset) exists."""
    return (_conf_dir() / "tuned" / f"{model}_{dataset}.yaml").is_file()


def search_space(model: str) -> dict[str, dict] | None:
    """The declared space of a model preset (``conf/search/<model>.yaml``, the package's or
    in a config dir of the running Hydra app's ``hydra.searchpath``), or None."""
    return declared_space(model, _user_config_dirs())


def _user_config_dirs() -> list[str]:
    """The config dirs the user added to the running Hydra app (``hydra.searchpath``)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return [source.path for source in HydraConfig.get().runtime.config_sources
            if source.schema == "file" and source.provider != "main"]


def _check_own_cv_models(own) -> None:
    """``tune.own_cv_models``: null or a list of model names (``conf/model/*.yaml``, a user
    config directory's too); a ConfigError naming the value otherwise."""
    if own is None:
        return
    if isinstance(own, str) or not isinstance(own, Sequence) or not all(
            isinstance(m, str) for m in own):
        raise ConfigError(f"tune.own_cv_models={own!r}: expected a list of model names, "
                          "e.g. [svm_knn]")
    if not own:
        return
    known = {p.stem for d in (_conf_dir(), *_user_config_dirs())
             for p in Path(d, "model").glob("*.yaml")}
    for name in own:
        if name not in known:
            raise ConfigError(f"tune.own_cv_models: {name!r} is not a model"
                              f"{did_you_mean(name, sorted(known))}")


@functools.cache
def tune_keys() -> frozenset:
    """The keys of the ``tune`` group: those of ``conf/tune/auto.yaml`` (``on`` and ``off``
    add none)."""
    from omegaconf import OmegaConf

    return frozenset(OmegaConf.create((_conf_dir() / "tune" / "auto.yaml").read_text()))


def get_dotted(config: Mapping, dotted: str):
    """``config["a"]["b"]`` for ``"a.b"`` (None when a part is missing)."""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def resolve(config: dict, fixed: tuple = ()) -> dict:
    """Replace ``config["tune"]`` by what the run will do: None when it does not select
    (so its cache key is the one it had before selection existed), else the resolved
    settings and the space (minus the keys in ``fixed``: set on the command line, they
    win).  A ConfigError for a mode that is not one of ``MODES``."""
    tune = config.get("tune")
    if not tune or "*" in fixed:
        config["tune"] = None
        return config
    for key in tune:  # a key nothing reads (+tune.KEY=...) would change only the cache key
        if key not in tune_keys():
            raise ConfigError(f"tune.{key} is not a key of tune"
                              f"{did_you_mean(key, tune_keys(), 'tune.')}"
                              " (see conf/tune/auto.yaml)")
    mode = tune.get("mode")
    mode = {False: "off", True: "on"}.get(mode, mode)
    if mode not in MODES:
        raise ConfigError(f"tune.mode={mode!r}: expected one of {', '.join(MODES)}")
    _check_own_cv_models(tune.get("own_cv_models"))
    model = (config.get("model") or {}).get("name") or config["trainer"]["name"]
    dataset = config["dataset"]["name"]
    space = search_space(model) if mode != "off" else None
    if mode == "on" and space is None:
        raise ConfigError(f"tune=on: model {model} declares no search space "
                          f"(conf/search/{model}.yaml)")
    streamed = (config["dataset"].get("in_memory") is False
                or bool(config["dataset"].get("stream")))
    if streamed and mode == "on":
        raise ConfigError("tune=on: a streamed training set cannot be searched (every trial "
                          "would stream it); use tune=off or dataset.max_train=N")
    if mode == "auto" and (model in (tune.get("own_cv_models") or ()) or streamed
                           or preset_exists(model, dataset)):
        space = None
    space = {k: v for k, v in (space or {}).items() if k not in set(fixed)}
    space = without_set_alternatives(  # a key given on the command line counts as set
        space, lambda key: True if key in fixed else get_dotted(config, key))
    if space and all(d["kind"] == "choice" and len(d["values"]) == 1 for d in space.values()):
        for key, dim in space.items():  # a one-point space: its setting, no search
            set_dotted(config, key, dim["values"][0])
        space = None
    if not space:
        config["tune"] = None
        return config
    space = _holding_own_setting(space, config)
    for key in space:
        if get_dotted(config, key) is None and key.rsplit(".", 1)[-1] not in (
                config.get(key.split(".")[0]) or {}):
            raise ConfigError(f"conf/search/{model}.yaml: {key} is not a key of this run's "
                              "config")
    settings = {k: tune.get(k) for k in RESULT_KEYS}
    rungs = tune.get("rungs")  # one rung is the procedure from before rungs existed:
    if rungs is not None and not (type(rungs) is int and rungs == 1):  # its keys stay
        settings["rungs"] = rungs
    for key in (*CHEAPER_TRIALS, REFIT):
        if tune.get(key) is not None and tune.get(key) is not False:
            settings[key] = tune.get(key)
    for key in (PASS_CAP, CHOICE_PASS_CAP, CALIBRATION, SIMPLER, DIGITS, SECOND_STAGE,
                "budget_fits", "budget_rows", BATCH):  # false: an error below
        if tune.get(key) is not None:
            settings[key] = tune.get(key)
    subsample = tune.get(SUBSAMPLE)  # null: the model's declared search.cv_max_rows, if any
    if subsample is None:
        subsample = declared_option(model, SUBSAMPLE, _user_config_dirs())
    if subsample is not None:
        settings[SUBSAMPLE] = subsample
    if tune.get(STAGED) is not None:
        settings[STAGED] = tune.get(STAGED)
    trial_params = _trial_params(config, model, space, fixed)
    if trial_params:
        settings[TRIAL_PARAMS] = trial_params
    _check_settings(settings)
    if settings.get(STAGED):  # the declaration, where the model makes one and it applies
        stages = declared_stages(model, _user_config_dirs())
        then = [k for k in (stages or {}).get("then", ()) if k in space]
        settings[STAGED] = ({**stages, "then": then}
                            if then and len(then) < len(space) else None)
        if settings[STAGED] and settings.get(SECOND_STAGE) is None:  # the first stage never
            settings[STAGED].pop("alone_trials", None)  # runs alone: no cap, no key
    if not settings.get(STAGED):
        settings.pop(STAGED, None)
        settings.pop(SECOND_STAGE, None)
    # a key enters the cache key only where it can change the result: the rule where the
    # space orders capacity, the kept anchors where k-means places anchors SGD does not move
    if not any("capacity" in dim for dim in space.values()):
        settings.pop(SIMPLER, None)
    if get_dotted(config, "coding.n_anchors") is None or get_dotted(config,
                                                                   "trainer.learn_anchors"):
        settings.pop(REFIT, None)
    if not (get_dotted(config, "trainer.init") == "liblinear"
            and get_dotted(config, "trainer.init_solver") == "dual_cd"):
        settings.pop(CHOICE_PASS_CAP, None)
    if SearchCV.numerics_version > 1:  # version 1 stays out: the keys made before it
        settings["numerics_version"] = SearchCV.numerics_version
    if settings.get(BATCH):
        settings["rounds_version"] = SearchCV.rounds_version
    config["tune"] = {**settings, "space": space}
    return config


def _holding_own_setting(space: Mapping, config: Mapping) -> dict:
    """The space with each searched dimension widened to hold the run's own value (a
    preset's, e.g. sapl_mnist's anchor_scale = 100 against a declared 0.001-1), so that
    setting is the first trial and the search runs between it and the declared range.  The
    declared range is kept as ``declared``; a dimension that holds its value is unchanged
    (so is the cache key of every run whose setting lies in the space).  A null (a model
    that chooses the value by its own grid) is not a value to hold."""
    out = {}
    for key, dim in space.items():
        value = get_dotted(config, key)
        scalar = isinstance(value, int | float | str) and not isinstance(value, bool)
        if not scalar or _holds(dim, value):
            out[key] = dim
            continue
        if dim["kind"] == "choice":
            if len(dim["values"]) > 1:
                values = [*dim["values"], value]
                if all(isinstance(v, int | float) for v in values):
                    values = sorted(values)
                dim = {**dim, "values": values, "declared": list(dim["values"])}
        elif (not isinstance(value, str) and math.isfinite(value)
              and (dim["kind"] == "float" or float(value).is_integer())
              and (not dim["log"] or value > 0)):
            cast = float if dim["kind"] == "float" else int
            dim = {**dim, "low": cast(min(dim["low"], value)),
                   "high": cast(max(dim["high"], value)),
                   "declared": [dim["low"], dim["high"]]}
        out[key] = dim
    return out


def _check_settings(s: dict) -> None:
    def bad(key, expect):
        raise ConfigError(f"tune.{key}={s[key]!r}: expected {expect}")

    if s["trials"] is not None and (isinstance(s["trials"], bool)
                                    or not isinstance(s["trials"], int) or s["trials"] < 1):
        bad("trials", "an integer >= 1 or null")
    if s["budget_s"] is not None and (isinstance(s["budget_s"], bool) or not isinstance(
            s["budget_s"], int | float) or not 0 < s["budget_s"] < math.inf):
        bad("budget_s", "a number of seconds > 0 or null")
    fits = s.get("budget_fits")
    if fits is not None and (isinstance(fits, bool) or not isinstance(fits, int | float)
                             or not 0 < fits < math.inf):
        bad("budget_fits", "a number of fits > 0 or null")
    rows = s.get("budget_rows")
    if rows is not None and (type(rows) is not int or rows < 1):
        bad("budget_rows", "a number of training rows >= 1 (an integer) or null")
    if s["trials"] is None and all(s.get(key) is None for key in BUDGETS):
        raise ConfigError("tune.trials, tune.budget_s, tune.budget_fits and tune.budget_rows "
                          "are all null: give at least one")
    if not isinstance(s["folds"], int) or isinstance(s["folds"], bool) or s["folds"] < 2:
        bad("folds", "an integer >= 2")
    if not isinstance(s["holdout"], int | float) or not 0 < s["holdout"] < 1:
        bad("holdout", "a fraction in (0, 1)")
    if not isinstance(s["holdout_min_rows"], int) or s["holdout_min_rows"] < 0:
        bad("holdout_min_rows", "an integer >= 0")
    workers = s["workers"]
    if workers is not None and workers != "auto" and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        bad("workers", "an integer >= 1 or auto")
    batch = s.get(BATCH)
    if batch is not None and (type(batch) is not int or batch < 1):
        bad(BATCH, "an integer >= 1 or null (one trial after another)")
    patience = s["patience"]
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int)
                                 or patience < 1):
        bad("patience", "an integer >= 1 or null (no early stop)")
    for key in (*CHEAPER_TRIALS, REFIT):
        if key in s and s[key] is not True:
            bad(key, "true or false")
    if STAGED in s and not isinstance(s[STAGED], bool):
        bad(STAGED, "true or false")
    subsample = s.get(SUBSAMPLE)
    if subsample is not None and (type(subsample) is not int or subsample < 10):
        bad(SUBSAMPLE, "an integer >= 10 or null (the model's declared subsample, if any)")
    second = s.get(SECOND_STAGE)
    if second is not None and (type(second) is not int or second < 1):
        bad(SECOND_STAGE, "a number of training rows >= 1 (an integer) or null (always)")
    digits = s.get(DIGITS)
    if digits is not None and (type(digits) is not int or not 1 <= digits <= 17):
        bad(DIGITS, "an integer from 1 to 17 or null (as drawn)")
    repeats = s.get(CALIBRATION)
    if repeats is not None and (type(repeats) is not int or repeats < 1):
        bad(CALIBRATION, "an integer >= 1 or null (the fit's own)")
    for key in (PASS_CAP, CHOICE_PASS_CAP):
        cap = s.get(key)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            bad(key, "an integer >= 1 or null (the init's own cap)")
    rungs = s.get("rungs", 1)
    if isinstance(rungs, bool) or not isinstance(rungs, int) or rungs < 1:
        bad("rungs", "an integer >= 1")
    for key, zero in (("keep_default_se", "always the best trial"),
                      (SIMPLER, "the best trial, as null")):
        se = s.get(key)
        if se is not None and (isinstance(se, bool) or not isinstance(se, int | float)
                               or not 0 <= se < math.inf):
            bad(key, f"a number >= 0 (0: {zero})")



def trial_rows(config: Mapping, X, y) -> np.ndarray | None:
    """The training rows of the chosen trial when the selection held out a fraction (in the
    order its trials saw them) and ``tune.trial_anchors`` is on, else None (k-fold: the
    folds' anchors differ, their scores are averaged over them)."""
    tune = config.get("tune") or {}
    if not tune.get(REFIT):
        return None
    protocol, splits = _splits(X, np.asarray(y), tune, int(config["seed"]))
    return splits[-1][0] if protocol.startswith("holdout") else None  # the last rung: all


#: from this many trials on, a selection without a budget says first what it may cost
MANY_TRIALS = 100


def cost_warning(config: Mapping, splits: list) -> str | None:
    """For ``tune.trials`` >= MANY_TRIALS and no budget: the trials, the fits
    each makes and what they may take by the store's runs of the model on the dataset (as
    ``llc-bench run -m`` estimates a sweep), else None."""
    from llc_bench.store.costs import CostModel, describe

    tune = config["tune"]
    trials = tune["trials"]
    if (any(tune.get(key) is not None for key in BUDGETS) or trials is None
            or trials < MANY_TRIALS):
        return None
    model = (config.get("model") or {}).get("name") or config["trainer"]["name"]
    dataset = config["dataset"]["name"]
    rows = len(splits[-1][0])
    costs = CostModel(config.get("results_dir"),
                      fallbacks=[Path(__file__).resolve().parents[2] / "results"])
    seconds = costs.fit_seconds(model, dataset, rows)
    estimate = (f"up to {describe(trials * len(splits) * seconds)} by the store's runs of "
                f"{model} on {dataset}" if seconds is not None else
                f"no estimate (no stored run of {model} on {dataset})")
    return (f"tune.trials={trials} with no budget (tune.budget_rows=null): {trials} trials "
            f"of {len(splits)} fit(s) on {rows} rows, {estimate}; tune.budget_rows=N stops the "
            "selection before N training rows are fitted")


def _trial_params(config: Mapping, model: str, space: Mapping, fixed: tuple) -> dict:
    """The trials' own settings: ``tune.trial_params``, or (null) the model's declared
    ``search.trial_params``, less the keys the space searches or the command line sets."""
    trial_params = config["tune"].get(TRIAL_PARAMS)
    if trial_params is None:
        trial_params = declared_option(model, TRIAL_PARAMS, _user_config_dirs()) or {}
    if not isinstance(trial_params, Mapping):
        raise ConfigError(f"tune.{TRIAL_PARAMS}={trial_params!r}: expected {{KEY: VALUE, ...}}"
                          " (the trials' settings), {} (none) or null (the model's declared)")
    for key in trial_params:
        if get_dotted(config, key) is None and str(key).rsplit(".", 1)[-1] not in (
                config.get(str(key).split(".")[0]) or {}):
            raise ConfigError(f"tune.{TRIAL_PARAMS}: {key} is not a key of this run's config")
    return {k: v for k, v in trial_params.items() if k not in space and k not in set(fixed)}


def _search_cv(config: Mapping) -> SearchCV:
    """The SearchCV of a resolved run config's ``tune`` settings (a key a selection leaves
    out of its cache key is off: None)."""
    tune = config["tune"]
    return SearchCV(None, tune["space"], refit=False, random_state=int(config["seed"]),
                    **{key: tune.get(key) for key in SearchCV._parameter_constraints
                       if key not in ("estimator", "space", "refit", "random_state",
                                      STAGED)})


class _FromConfig:
    """A trial's estimator: ``build`` of the run config with the trial's dotted keys set (a
    class, not a closure: worker processes receive it)."""

    def __init__(self, config: Mapping, build: Callable):
        self.config, self.build = config, build

    def __call__(self, params: Mapping):
        return self.build(with_params(self.config, params))


def select(config: Mapping, X, y, build: Callable, echo=None) -> tuple[dict, dict]:
    """The setting of ``config["tune"]["space"]`` chosen on ``(X, y)`` (training rows
    only) by SearchCV's procedure, and the report for the record.  ``build(config)``
    returns an unfitted estimator for a run config (a module-level function: with
    ``tune.workers`` > 1 it is sent to the worker processes)."""
    if config["tune"].get(STAGED):
        return _staged(config, X, y, build, echo)
    search = _search_cv(config)
    space = config["tune"]["space"]
    warning = cost_warning(config, _splits(X, y, search._settings(), search.random_state)[1])
    if warning:
        from llc_bench.errors import LLCBenchWarning

        warnings.warn(warning, LLCBenchWarning, stacklevel=2)
    first = first_trial(space, lambda key: get_dotted(config, key))
    search._search(X, y, _FromConfig(config, build), space, first, echo=echo)
    return search.best_params_, search.report_


def _staged(config: Mapping, X, y, build: Callable, echo=None) -> tuple[dict, dict]:
    """``tune.fixed_first``: SearchCV's two stages (:func:`staged_search`), each a
    selection of the run config with the stage's parameters set."""
    tune = config["tune"]

    def stage(space: dict, params: Mapping, settings: Mapping) -> tuple[dict, dict]:
        sub = with_params(config, params)
        sub["tune"] = {**tune, STAGED: None, "space": space, **settings}
        return select(sub, X, y, build, echo=echo)

    return staged_search(tune["space"], tune[STAGED], stage,
                         second_stage_skipped(X.shape[0], tune.get(SECOND_STAGE)),
                         tune.get("trials"))


def score_setting(config: Mapping, X, y, build: Callable) -> float:
    """The validation accuracy of the run config as it is (no search), on the splits a
    selection with its ``tune`` settings would use: a preset outside the space scored on
    the same rows as the trials."""
    _, splits = _splits(X, y, config["tune"], int(config["seed"]))
    parts = _parts(X, y, splits)
    trial = with_params(config, config["tune"].get(TRIAL_PARAMS) or {})  # as the trials fit
    objective = _Objective(_FromConfig(trial, build), {}, parts, None)
    return objective(_optuna().trial.FixedTrial({}))
