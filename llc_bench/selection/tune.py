"""Hyper-parameter selection on training rows within a budget: one procedure for every model.

The space of a model preset is declared once, in ``conf/search/<model>.yaml``
(``hydra.sweeper.params``, in the grammar of Hydra's Optuna sweeper: ``tag(log,
interval(a, b))``, ``choice(...)``, ``range(...)``), so ``llc-bench run -m +search=<model>``
and ``tune=auto`` read the same declaration.  :func:`select`:

* scores a setting on the **training rows only**: a stratified ``folds``-fold CV below
  ``holdout_min_rows`` rows, a stratified held-out fraction ``holdout`` from there on (the
  test split is never passed in);
* searches with Optuna's seeded TPE sampler, the model's own defaults as the first trial,
  and a successive-halving pruner over the folds (a setting whose first folds are already
  poor is not fitted on the others); trials run one after another, so the same seed gives
  the same trials and the same choice;
* stops after ``trials`` trials, or earlier when ``patience`` trials in a row have not
  beaten the best by more than the noise of the validation rows (``keep_default_se``
  standard errors: counted in trials, so still the same choice on any machine), or when the
  next trial would pass ``budget_s`` seconds (judged from the trials so far, and where the
  space declares ``search.cost``, from the line through their fits' cost and seconds), and
  gives up a fit still running at the end of the budget at its next SGD epoch or CCCP
  iteration (``TrialCache.deadline``; the trial is pruned, its record says
  ``stopped``); then the choice may depend on the machine, and the report says
  ``stopped_by: budget``;
* hands every trial's fit (and prediction) one ``models._base.TrialCache`` per study: the
  trials share the k-means anchors of the same m and rule and the neighbour search of the
  same anchors and k, and (``warm_start``) a trial that differs from an earlier one in
  λ only starts its dual CD init from that trial's duals, and (``eta0_walk``) a trial's
  η0 calibration walks from the previous trial's, and (``init_max_iter``) a trial's dual
  CD init stops after that many passes: the SGD epochs continue from it;
* leaves out, on two classes, the dimensions the space lists under ``multiclass_only``
  (the anchor rule: per-class k-means helps with many classes, not with two);
* tries the run's own setting first (its preset, else the model's defaults), widening a
  dimension of the space that does not hold it (the record lists it under ``widened``);
* chooses the model's defaults unless the best beats them by ``keep_default_se`` standard
  errors, else (``simpler_se``) the trial of least capacity within that many standard
  errors of the best (the space's ``search.capacity``: llsvm's fewest anchors, then the
  largest λ; Breiman's one-SE rule).

The runner then fits the chosen setting on all training rows; under the held-out protocol
a fixed-anchor model keeps the chosen trial's anchors (``trial_anchors``: k-means on the
trial's training rows, :func:`trial_rows`).  ``tune=auto`` (the default) selects when the
model declares a space, no ``conf/tuned/<model>_<dataset>.yaml`` preset applies and the
model does not run a grid CV of its own; ``tune=on`` always, ``tune=off`` never: a run
that does not select keeps the cache key it had before selection existed.
"""

from __future__ import annotations

import math
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError
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
# The one-standard-error rule over the space's capacity dimensions (a number of standard
# errors; null: the best trial, no one-SE rule, as selections without it were keyed).
SIMPLER = "simpler_se"
# The fit of the choice: under the held-out protocol, fixed anchors from the chosen trial's
# training rows (true; false: k-means on all training rows, as the fit was before it).
REFIT = "trial_anchors"
#: search.capacity's orders: the sign that makes a simpler setting's key smaller.
CAPACITY_ORDERS = {"ascending": 1, "descending": -1}


def _conf_dir() -> Path:
    return Path(str(resources.files("llc_bench.conf")))


def preset_exists(model: str, dataset: str) -> bool:
    """Whether ``conf/tuned/<model>_<dataset>.yaml`` (a per-dataset preset) exists."""
    return (_conf_dir() / "tuned" / f"{model}_{dataset}.yaml").is_file()


def _parse(key: str, text) -> dict:
    """One ``hydra.sweeper.params`` entry as {"kind": "float"|"int"|"choice", ...}."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

    if not isinstance(text, str):  # a plain YAML value (null, a number): fixed
        return {"kind": "choice", "values": [text]}
    value = OverridesParser.create().parse_override(f"{key}={text}").value()
    log = "log" in getattr(value, "tags", set())
    if isinstance(value, ChoiceSweep):
        return {"kind": "choice", "values": list(value.list)}
    if isinstance(value, RangeSweep):
        return {"kind": "choice", "values": list(np.arange(value.start, value.stop,
                                                           value.step or 1).tolist())}
    if isinstance(value, IntervalSweep):
        ints = isinstance(value.start, int) and isinstance(value.end, int)
        return {"kind": "int" if ints else "float", "low": value.start, "high": value.end,
                "log": log}
    return {"kind": "choice", "values": [value]}


def search_space(model: str) -> dict[str, dict] | None:
    """The declared space of a model preset (``conf/search/<model>.yaml``), or None."""
    from omegaconf import OmegaConf

    path = _conf_dir() / "search" / f"{model}.yaml"
    if not path.is_file():
        return None
    conf = OmegaConf.load(path)
    params = OmegaConf.select(conf, "hydra.sweeper.params") or {}
    space = {key: _parse(key, text) for key, text in params.items()}
    for key, value in (OmegaConf.select(conf, "search.null_means") or {}).items():
        if key in space:  # the value a null in the run config stands for (its first trial)
            space[key]["null_means"] = value
    for key in OmegaConf.select(conf, "search.cost") or ():
        if key in space:  # a fit's seconds grow with the product of these keys' values
            dim = space[key]
            values = dim["values"] if dim["kind"] == "choice" else [dim["low"], dim["high"]]
            if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0
                       for v in values):
                raise ConfigError(f"conf/search/{model}.yaml: search.cost: {key} holds "
                                  f"{values}: a cost must be a positive number")
            dim["cost"] = True
    for key in OmegaConf.select(conf, "search.multiclass_only") or ():
        if key in space:  # searched on more than two classes only (select() drops it)
            space[key]["multiclass_only"] = True
    capacity = OmegaConf.select(conf, "search.capacity") or {}
    for rank, (key, order) in enumerate(capacity.items()):
        if order not in CAPACITY_ORDERS:
            raise ConfigError(f"conf/search/{model}.yaml: search.capacity.{key}={order!r}: "
                              f"expected one of {', '.join(CAPACITY_ORDERS)}")
        if key in space:  # simpler_se's order: this key's rank, and which way is simpler
            space[key]["capacity"] = [rank, CAPACITY_ORDERS[order]]
    return space


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
    mode = tune.get("mode")
    mode = {False: "off", True: "on"}.get(mode, mode)
    if mode not in MODES:
        raise ConfigError(f"tune.mode={mode!r}: expected one of {', '.join(MODES)}")
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
    for key in (PASS_CAP, SIMPLER):  # false is not a number: an error below
        if tune.get(key) is not None:
            settings[key] = tune.get(key)
    _check_settings(settings)
    # a key enters the cache key only where it can change the result: the rule where the
    # space orders capacity, the kept anchors where k-means places anchors SGD does not move
    if not any("capacity" in dim for dim in space.values()):
        settings.pop(SIMPLER, None)
    if get_dotted(config, "coding.n_anchors") is None or get_dotted(config,
                                                                   "trainer.learn_anchors"):
        settings.pop(REFIT, None)
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
    if s["trials"] is None and s["budget_s"] is None:
        raise ConfigError("tune.trials and tune.budget_s are both null: give at least one")
    if not isinstance(s["folds"], int) or isinstance(s["folds"], bool) or s["folds"] < 2:
        bad("folds", "an integer >= 2")
    if not isinstance(s["holdout"], int | float) or not 0 < s["holdout"] < 1:
        bad("holdout", "a fraction in (0, 1)")
    if not isinstance(s["holdout_min_rows"], int) or s["holdout_min_rows"] < 0:
        bad("holdout_min_rows", "an integer >= 0")
    workers = s["workers"]
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        bad("workers", "an integer >= 1")
    patience = s["patience"]
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int)
                                 or patience < 1):
        bad("patience", "an integer >= 1 or null (no early stop)")
    for key in (*CHEAPER_TRIALS, REFIT):
        if key in s and s[key] is not True:
            bad(key, "true or false")
    cap = s.get(PASS_CAP)
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        bad(PASS_CAP, "an integer >= 1 or null (the init's own cap)")
    rungs = s.get("rungs", 1)
    if isinstance(rungs, bool) or not isinstance(rungs, int) or rungs < 1:
        bad("rungs", "an integer >= 1")
    for key, zero in (("keep_default_se", "always the best trial"),
                      (SIMPLER, "the best trial, as null")):
        se = s.get(key)
        if se is not None and (isinstance(se, bool) or not isinstance(se, int | float)
                               or not 0 <= se < math.inf):
            bad(key, f"a number >= 0 (0: {zero})")


RUNG_MIN_ROWS = 500  # no rung trains on fewer rows


def _splits(X, y, tune: Mapping, seed: int) -> tuple[str, list]:
    """The protocol and its (train rows, validation rows) pairs: stratified folds, or one
    stratified held-out fraction from ``holdout_min_rows`` rows on; with ``tune.rungs`` = r
    > 1, the held-out fraction is scored after training on nested, stratified subsets of
    1/3^(r-1), ..., 1/3, all of the other rows (successive halving with rows as the
    resource, as scikit-learn's HalvingRandomSearchCV: a setting poor on few rows is not
    fitted on all of them), a subset of fewer than RUNG_MIN_ROWS rows left out."""
    protocol, splits = _base_splits(X, y, tune, seed)
    rungs = int(tune.get("rungs") or 1)
    if rungs == 1 or not protocol.startswith("holdout"):
        return protocol, splits
    (train, valid), = splits
    order = _nested_order(y[train], seed)
    sizes = [len(train) // 3 ** i for i in range(rungs - 1, 0, -1)]
    sizes = [size for size in sizes if size >= RUNG_MIN_ROWS] + [len(train)]
    if len(sizes) == 1:
        return protocol, splits
    return (f"{protocol}, rungs of {'/'.join(map(str, sizes))} rows",
            [(train[np.sort(order[:size])], valid) for size in sizes])


def _nested_order(y, seed: int) -> np.ndarray:
    """A seeded order of rows whose every prefix holds each class in about its share:
    each class's rows shuffled and spread evenly over (0, 1), then sorted by position."""
    rng = np.random.RandomState(seed)
    position = np.empty(len(y))
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        position[rng.permutation(rows)] = (np.arange(len(rows)) + rng.uniform()) / len(rows)
    return np.argsort(position, kind="stable")


def _parts(X, y, splits: list) -> list:
    """(X_tr, y_tr, X_va, y_va) per split; the rungs of one held-out set share its arrays."""
    held: dict = {}
    for _, va in splits:
        held.setdefault(id(va), (X[va], y[va]))
    return [(X[tr], y[tr], *held[id(va)]) for tr, va in splits]


def nested(parts: list) -> bool:
    """Whether the parts are rungs of one held-out set (else folds: their scores averaged)."""
    return len(parts) > 1 and all(p[3] is parts[0][3] for p in parts)


def validation_rows(parts: list) -> int:
    """The validation rows a score rests on (the rungs' one held-out set counted once)."""
    return len(parts[0][3]) if nested(parts) else sum(len(p[3]) for p in parts)


def _base_splits(X, y, tune: Mapping, seed: int) -> tuple[str, list]:
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    n = len(y)
    smallest = int(np.bincount(np.unique(y, return_inverse=True)[1]).min())
    if n >= int(tune["holdout_min_rows"]) or smallest < 2:
        split = StratifiedShuffleSplit(n_splits=1, test_size=float(tune["holdout"]),
                                       random_state=seed)
        if smallest < 2:  # a class with one row cannot be stratified: plain shuffle
            rng = np.random.RandomState(seed)
            rows = rng.permutation(n)
            cut = max(1, int(round(float(tune["holdout"]) * n)))
            return f"holdout {tune['holdout']}", [(np.sort(rows[cut:]), np.sort(rows[:cut]))]
        return f"holdout {tune['holdout']}", list(split.split(np.zeros(n), y))
    folds = min(int(tune["folds"]), smallest)
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return f"{folds}-fold", list(split.split(np.zeros(n), y))


def trial_rows(config: Mapping, X, y) -> np.ndarray | None:
    """The training rows of the chosen trial when the selection held out a fraction (in the
    order its trials saw them) and ``tune.trial_anchors`` is on, else None (k-fold: the
    folds' anchors differ, their scores are averaged over them)."""
    tune = config.get("tune") or {}
    if not tune.get(REFIT):
        return None
    protocol, splits = _splits(X, np.asarray(y), tune, int(config["seed"]))
    return splits[-1][0] if protocol.startswith("holdout") else None  # the last rung: all


def _suggest(trial, key: str, dim: Mapping):
    if dim["kind"] == "choice":
        return trial.suggest_categorical(key, dim["values"])
    if dim["kind"] == "int":
        return trial.suggest_int(key, int(dim["low"]), int(dim["high"]), log=dim["log"])
    return trial.suggest_float(key, float(dim["low"]), float(dim["high"]), log=dim["log"])


def _default_trial(config: Mapping, space: Mapping) -> dict | None:
    """The model's own setting as a first trial, when it lies in the space (a null option
    tried as the value the space says it stands for: ``null_means``)."""
    params = {}
    for key, dim in space.items():
        value = get_dotted(config, key)
        if value is None:
            value = dim.get("null_means")
        if not _holds(dim, value):
            return None
        params[key] = value
    return params


def _holds(dim: Mapping, value) -> bool:
    """Whether ``value`` is one of a dimension's choices or lies in its interval."""
    if dim["kind"] == "choice":
        return value in dim["values"]
    return isinstance(value, int | float) and dim["low"] <= value <= dim["high"]


def _edges(space: Mapping, chosen: Mapping) -> list[str]:
    """Choices on the edge of the space: the first or last of a numeric choice list, or
    within 1 % (of the log range, if log) of an interval's end."""
    edges = []
    for key, dim in space.items():
        value = chosen.get(key)
        if dim["kind"] == "choice":
            numbers = [v for v in dim["values"] if isinstance(v, int | float)
                       and not isinstance(v, bool)]
            if len(numbers) > 1 and value in (min(numbers), max(numbers)):
                edges.append(key)
        else:
            lo, hi, v = float(dim["low"]), float(dim["high"]), float(value)
            if dim["log"]:
                lo, hi, v = math.log(lo), math.log(hi), math.log(v)
            if min(v - lo, hi - v) <= 0.01 * (hi - lo):
                edges.append(key)
    return edges


class _Objective:
    """One trial: a setting fitted and scored on every split (pruned when its first splits
    are poor, stopped when one more fit would end past the budget); keeps a record of each
    trial for the run record."""

    def __init__(self, config: Mapping, build: Callable, parts: list, deadline: float | None,
                 shared: bool = False, cache=None):
        self.config, self.build, self.parts, self.deadline = config, build, parts, deadline
        self.cache = cache  # a TrialCache handed to the fits that take it
        self.rungs = nested(parts)  # a score per rung of one held-out set: the last counts
        self.fits: list[tuple[float | None, float]] = []  # (cost, seconds) of each fit
        self.records: list[dict] = []
        # trials in several processes on one study: each trial leaves its record and fits
        # in the study, and the budget is judged from every process's trials
        self.shared, self.study = shared, None

    def _others(self) -> list:
        """The finished trials of the other processes (shared study), in trial order."""
        if not self.shared or self.study is None:
            return []
        own = {r["number"] for r in self.records}
        return [t for t in sorted(self.study.get_trials(deepcopy=False), key=lambda t: t.number)
                if t.number not in own and "record" in t.user_attrs]

    def known_fits(self) -> list:
        """(cost, seconds) of the fits so far: this process's, after the other processes'."""
        others = [tuple(f) for t in self._others() for f in t.user_attrs.get("fits", ())]
        return others + self.fits

    def over_budget(self, cost: float | None = None) -> bool:
        """Whether one more fit would end past the budget: as long as the longest of the last
        ten (the first left out: it may hold one-off warm-up), or, for a trial of ``cost``
        (:func:`fit_cost`), as long as the line through the last ten fits' costs and seconds
        predicts, if longer (ML3 on mnist: 15 s at 2 models per class, 22 s at 5, 101 s at
        40).  The first trial (the defaults) always completes, so there is always something
        to choose."""
        if self.deadline is None or not self.complete():
            return False
        fits = self.known_fits()
        recent = fits[1:][-10:] or fits
        seconds = max(s for _, s in recent)
        if cost is not None:
            seconds = max(seconds, _seconds_at(fits[-10:], cost))
        return time.time() + seconds > self.deadline

    def stop_on_budget(self, study, _trial) -> None:
        self.study = study
        if self.over_budget():
            study.stop()

    def __call__(self, trial) -> float:
        import optuna
        from sklearn.base import clone

        from llc_bench.experiment.metrics import accuracy
        from llc_bench.models._base import FitDeadline

        t = time.perf_counter()
        self.study, first_fit = trial.study, len(self.fits)
        space = self.config["tune"]["space"]
        params = {key: _suggest(trial, key, dim) for key, dim in space.items()}
        cost = fit_cost(space, params)
        estimator = self.build(with_params(self.config, params))
        if "history" in estimator.get_params():
            estimator.set_params(history=False)  # monitoring only: the numbers are the same
        scores: list[float] = []
        past = None
        try:
            for step, (X_tr, y_tr, X_va, y_va) in enumerate(self.parts):
                if self.over_budget(cost):
                    trial.study.stop()
                    raise optuna.TrialPruned()
                t_fit = time.perf_counter()
                try:  # a fit still running at the deadline is given up (not the first trial)
                    fitted = clone(estimator).fit(
                        X_tr, y_tr, **self._cache_kw(type(estimator).fit, self.complete()))
                except FitDeadline as stop:
                    past = str(stop)
                    trial.study.stop()
                    raise optuna.TrialPruned() from None
                scores.append(accuracy(y_va, fitted.predict(
                    X_va, **self._cache_kw(type(fitted).predict))))
                self.fits.append((cost, time.perf_counter() - t_fit))
                # a rung reports at its row count in units of the smallest rung's (1, 3, 9):
                # the pruner (min_resource 1, reduction 3) then judges every rung but the last
                trial.report(self.value(scores), 3 ** step if self.rungs else step)
                if step + 1 < len(self.parts) and trial.should_prune():
                    raise optuna.TrialPruned()
        finally:
            self.records.append({"number": trial.number, "params": params,
                                 "score": self.value(scores) if scores else None,
                                 "folds_scored": len(scores),
                                 "seconds": time.perf_counter() - t,
                                 **({"stopped": f"budget: a fit {past}"} if past else {})})
            if self.shared:
                trial.set_user_attr("fits", [list(f) for f in self.fits[first_fit:]])
                trial.set_user_attr("record", self.records[-1])
        return self.value(scores)

    def _cache_kw(self, method, deadline: bool = False) -> dict:
        """``trial_cache=`` for a fit or predict that takes it: the study's cache, with its
        deadline only when ``deadline`` (a trial has completed: the first runs to its end)."""
        from llc_bench.models._base import takes_trial_cache

        if self.cache is None or not takes_trial_cache(method):
            return {}
        return {"trial_cache": self.cache if deadline else self.cache.with_deadline(None)}

    def complete(self) -> bool:
        """Whether a trial has been scored on every split (then there is a choice)."""
        return any(r["folds_scored"] == len(self.parts)
                   for r in (*self.records, *(t.user_attrs["record"] for t in self._others())))

    def value(self, scores: list) -> float:
        return float(scores[-1] if self.rungs else np.mean(scores))


def fit_cost(space: Mapping, params: Mapping) -> float | None:
    """A trial's cost: the product of its values of the dimensions the space declares under
    ``search.cost`` (a fit's seconds grow with them), or None."""
    keys = [k for k, dim in space.items() if dim.get("cost")]
    return float(np.prod([float(params[k]) for k in keys])) if keys else None


def _seconds_at(fits: list, cost: float) -> float:
    """The seconds of a fit of ``cost`` on the least-squares line through ``fits`` (cost,
    seconds), or 0 while the fits do not determine a rising line (one cost so far: a line
    through the origin would ignore a fit's fixed part, and letter's 3 s study then kept its
    defaults, 87.7 -> 80.1 %)."""
    pairs = np.array([(c, s) for c, s in fits if c is not None], dtype=float).reshape(-1, 2)
    if len(np.unique(pairs[:, 0])) < 2:
        return 0.0
    slope, intercept = np.polyfit(pairs[:, 0], pairs[:, 1], 1)
    return float(intercept + slope * cost) if slope > 0 else 0.0


class _Patience:
    """An Optuna callback that stops the study when ``patience`` trials in a row (pruned
    and failed ones included) have not beaten the best value by more than the noise margin
    of the validation rows (as Keras' EarlyStopping with ``min_delta``: a gain within the
    margin does not move the bar)."""

    def __init__(self, patience: int | None, n_validation: int, n_se: float):
        self.patience, self.n_validation, self.n_se = patience, n_validation, n_se
        self.best: float | None = None
        self.since = 0
        self.stopped = False

    def __call__(self, study, trial) -> None:
        if self.patience is None:
            return
        value = trial.value if trial.state.name == "COMPLETE" else None
        if value is not None and (self.best is None or value - self.best > noise_margin(
                value, self.n_validation, self.n_se)):
            self.best, self.since = value, 0
        else:
            self.since += 1
        if self.since >= self.patience:
            self.stopped = True
            study.stop()


def _sampler(optuna, seed: int):
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=8)


def _pruner(optuna):
    return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)


CATCH = (ValueError, ArithmeticError, np.linalg.LinAlgError)  # a failed trial, not a run


def _optimize(study, config, build, parts, deadline,
              shared: bool = False) -> tuple[list, str | None]:
    """Trials in this process until the study holds ``tune.trials`` of them, patience runs
    out or the budget ends; (this process's trial records, what stopped it early: "budget",
    "patience" or None).  ``shared``: other processes run trials on the same study."""
    from llc_bench.models._base import TrialCache

    optuna = _optuna()
    tune = config["tune"]
    cache = TrialCache(deadline=deadline, warm_start=bool(tune.get("warm_start")),
                       eta0_walk=bool(tune.get("eta0_walk")), pass_cap=tune.get(PASS_CAP))
    objective = _Objective(config, build, parts, deadline, shared, cache)
    limit = tune["trials"]
    patience = _Patience(tune.get("patience"), validation_rows(parts),
                         float(tune.get("keep_default_se") or 0.0))
    callbacks = [objective.stop_on_budget, patience]
    if limit is not None:
        with warnings.catch_warnings():  # "experimental" in optuna 2.x
            warnings.simplefilter("ignore")
            callbacks.append(optuna.study.MaxTrialsCallback(limit, states=None))
    study.optimize(objective, n_trials=None if limit is None else limit,
                   callbacks=callbacks, catch=CATCH)
    if patience.stopped:
        return objective.records, "patience"
    return objective.records, ("budget" if limit is None or len(study.trials) < limit
                               else None)


def _worker(storage, seed, config, build, parts, deadline) -> tuple[list, str | None]:
    """One more process of a parallel selection: the shared study, a sampler of its own
    seed; it starts once the first process has taken the enqueued defaults (two processes
    popping one waiting trial race in optuna 2.x's RDB storage: a UNIQUE-constraint error),
    and not at all when the study is full or the budget is spent (it may have taken long
    to start)."""
    optuna = _optuna()
    study = optuna.load_study(study_name="tune", storage=storage,
                              sampler=_sampler(optuna, seed), pruner=_pruner(optuna))
    limit = config["tune"]["trials"]
    waiting = (optuna.trial.TrialState.WAITING,)
    while study.get_trials(deepcopy=False, states=waiting):
        if deadline is not None and time.time() > deadline:
            return [], "budget"
        time.sleep(0.05)
    if limit is not None and len(study.trials) >= limit:
        return [], None
    if deadline is not None and time.time() > deadline:
        return [], "budget"
    return _optimize(study, config, build, parts, deadline, shared=True)


def _in_processes(study, storage, config, build, parts, deadline,
                  seed: int, workers: int) -> tuple[list, str | None]:
    """Trials in this process and ``workers - 1`` others (loky) on one SQLite study, all
    under the one deadline; (every finished trial's record, what stopped the study early).
    When this process stops (the trials, the budget, patience), the trials running elsewhere
    finish (under a budget: until its end and one fit more) and the other processes are
    ended: one still starting (the imports of a new process take seconds) has nothing to add
    and would hold the selection past its budget."""
    from concurrent.futures import wait

    from joblib.externals.loky import ProcessPoolExecutor

    optuna = _optuna()
    pool = ProcessPoolExecutor(max_workers=workers - 1)
    try:
        futures = [pool.submit(_worker, storage, seed + i, config, build, parts, deadline)
                   for i in range(1, workers)]
        _, stopped = _optimize(study, config, build, parts, deadline, shared=True)
        fits = [f for t in study.get_trials(deepcopy=False) for f in t.user_attrs.get("fits", ())]
        grace = max((s for _, s in fits), default=0.0)
        running = (optuna.trial.TrialState.RUNNING,)
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.1)
            if ((deadline is not None and time.time() > deadline + grace)
                    or not study.get_trials(deepcopy=False, states=running)):
                break
        for future in futures:
            if future.done() and future.exception() is not None:
                raise future.exception()
        ends = [stopped, *(f.result()[1] for f in futures if f.done())]
    finally:
        pool.shutdown(wait=False, kill_workers=True)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    records = [t.user_attrs["record"] for t in trials if "record" in t.user_attrs]
    return records, ("budget" if "budget" in ends else next((e for e in ends if e), None))


class _Frozen:
    """The finished trials of a study read back from its storage (what ``select`` needs of
    a study: ``trials`` and ``best_trial``); a trial a stopped process left running is not
    one of them."""

    def __init__(self, trials):
        self.trials = [t for t in trials if t.state.name in ("COMPLETE", "PRUNED", "FAIL")]
        complete = [t for t in self.trials if t.state.name == "COMPLETE"]
        self.best_trial = max(complete, key=lambda t: (t.value, -t.number)) if complete else None


def sqlite_url(path) -> str:
    """The SQLAlchemy address of the SQLite file ``path``: a SQLite URI, its path
    percent-escaped (a ``?``, ``#``, ``%`` or space stays part of the path)."""
    from urllib.parse import quote

    return f"sqlite:///file:{quote(str(Path(path).resolve()))}?uri=true"


def _optuna():
    import logging

    logging.getLogger("alembic").setLevel(logging.WARNING)  # optuna's import logs at INFO
    with warnings.catch_warnings():  # SQLAlchemy's 2.0 notice on optuna 2.x's import
        warnings.simplefilter("ignore")
        import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


#: from this many trials on, a selection without a budget says first what it may cost
MANY_TRIALS = 100


def cost_warning(config: Mapping, parts: list) -> str | None:
    """For ``tune.trials`` >= MANY_TRIALS and no ``tune.budget_s``: the trials, the fits
    each makes and what they may take by the store's runs of the model on the dataset (as
    ``llc-bench run -m`` estimates a sweep), else None."""
    from llc_bench.store.costs import CostModel, describe

    tune = config["tune"]
    trials = tune["trials"]
    if tune["budget_s"] is not None or trials is None or trials < MANY_TRIALS:
        return None
    model = (config.get("model") or {}).get("name") or config["trainer"]["name"]
    dataset = config["dataset"]["name"]
    rows = len(parts[-1][1])
    costs = CostModel(config.get("results_dir"),
                      fallbacks=[Path(__file__).resolve().parents[2] / "results"])
    seconds = costs.fit_seconds(model, dataset, rows)
    estimate = (f"up to {describe(trials * len(parts) * seconds)} by the store's runs of "
                f"{model} on {dataset}" if seconds is not None else
                f"no estimate (no stored run of {model} on {dataset})")
    return (f"tune.trials={trials} with no budget (tune.budget_s=null): {trials} trials of "
            f"{len(parts)} fit(s) on {rows} rows, {estimate}; tune.budget_s=S stops the "
            "selection after S seconds")


def select(config: Mapping, X, y, build: Callable, echo=None) -> tuple[dict, dict]:
    """The setting of ``config["tune"]["space"]`` chosen on ``(X, y)`` (training rows
    only), and the report for the record.  ``build(config)`` returns an unfitted estimator
    for a run config (a module-level function: with ``tune.workers`` > 1 it is sent to
    the worker processes)."""
    optuna = _optuna()
    tune, seed = config["tune"], int(config["seed"])
    space, workers = tune["space"], int(tune.get("workers") or 1)
    if np.unique(y).size <= 2 and any(d.get("multiclass_only") for d in space.values()):
        space = {k: d for k, d in space.items() if not d.get("multiclass_only")}
        tune = {**tune, "space": space}
        config = {**config, "tune": tune}
    protocol, splits = _splits(X, y, tune, seed)
    parts = _parts(X, y, splits)
    warning = cost_warning(config, parts)
    if warning:
        from llc_bench.errors import LLCBenchWarning

        warnings.warn(warning, LLCBenchWarning, stacklevel=2)
    started = time.perf_counter()
    deadline = None if tune["budget_s"] is None else time.time() + float(tune["budget_s"])
    first = _default_trial(config, space)
    with tempfile.TemporaryDirectory(prefix="llc-tune-") as folder:
        storage = sqlite_url(Path(folder) / "study.db") if workers > 1 else None
        study = optuna.create_study(storage=storage, study_name="tune", direction="maximize",
                                    sampler=_sampler(optuna, seed), pruner=_pruner(optuna))
        if first is not None:
            with warnings.catch_warnings():  # enqueue_trial is "experimental" in optuna 2.x
                warnings.simplefilter("ignore")
                study.enqueue_trial(first)
        if workers == 1:
            records, stopped = _optimize(study, config, build, parts, deadline)
        else:  # one shared study (SQLite), trials in `workers` processes
            records, stopped = _in_processes(study, storage, config, build, parts, deadline,
                                             seed, workers)
            study = _Frozen(optuna.load_study(study_name="tune", storage=storage).trials)
    seconds = time.perf_counter() - started
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not complete:
        raise ConfigError(f"tune: none of the {len(study.trials)} trials completed "
                          f"(first failure: {_first_failure(study)})")
    n_validation = validation_rows(parts)
    highest = study.best_trial
    best, kept = _keep_default(study, first, n_validation,
                               float(tune.get("keep_default_se") or 0.0))
    if not kept and tune.get(SIMPLER):
        best = _simplest_near(study.trials, highest, space, n_validation, float(tune[SIMPLER]))
    chosen = {key: best.params[key] for key in space}
    report = {
        "protocol": protocol, "rows": int(len(y)), "space": space, "chosen": chosen,
        "best_trial": int(best.number), "validation_accuracy": float(best.value),
        "kept_default": kept, "defaults_first": first is not None,
        "simpler_se": tune.get(SIMPLER),
        "simpler_than": None if kept or best.number == highest.number else {
            "trial": int(highest.number), "validation_accuracy": float(highest.value)},
        "validation_rows": min(len(y), validation_rows(parts)),
        "n_trials": len(study.trials), "n_complete": len(complete),
        "n_pruned": sum(t.state.name == "PRUNED" for t in study.trials),
        "stopped_by": stopped or "trials",
        "workers": workers,
        "budget": {"trials": tune["trials"], "budget_s": tune["budget_s"]}, "seconds": seconds,
        "sampler": f"optuna {optuna.__version__} TPESampler(seed={seed}, n_startup_trials=8)"
                   + (f" in each of {workers} processes (seeds {seed}..{seed + workers - 1}) "
                      "on one SQLite study" if workers > 1 else "")
                   + (", the defaults first" if first is not None else ""),
        "pruner": "SuccessiveHalvingPruner over the " + ("rungs" if nested(parts) else "folds")
                  + " (min_resource 1, reduction 3)",
        "keep_default_se": tune.get("keep_default_se"), "patience": tune.get("patience"),
        "at_edge": _edges(space, chosen),
        "widened": {k: d["declared"] for k, d in space.items() if "declared" in d},
        "trials": records,
    }
    if echo is not None:
        echo(f"tune    {len(study.trials)} trials ({protocol} on {len(y)} training rows, "
             f"{report['n_pruned']} pruned) in {seconds:.1f}s: "
             + ", ".join(f"{k}={_short(v)}" for k, v in chosen.items())
             + f" (val acc {100 * best.value:.2f}%"
             + (f", the defaults kept: the best was within {tune['keep_default_se']} standard "
                "error(s)" if kept else "")
             + (f", the simplest within {tune[SIMPLER]} standard error(s) of trial "
                f"{highest.number}'s {100 * highest.value:.2f}%"
                if report["simpler_than"] else "")
             + ")")
    return chosen, report


def score_setting(config: Mapping, X, y, build: Callable) -> float:
    """The validation accuracy of the run config as it is (no search), on the splits a
    selection with its ``tune`` settings would use: a preset outside the space scored on
    the same rows as the trials."""
    _, splits = _splits(X, y, config["tune"], int(config["seed"]))
    parts = _parts(X, y, splits)
    objective = _Objective({**config, "tune": {**config["tune"], "space": {},
                                                "budget_s": None}}, build, parts, None)
    return objective(_optuna().trial.FixedTrial({}))


def _keep_default(study, first, n_validation: int, n_se: float):
    """The best trial, or the defaults' (trial 0) when the best beats it by no more than
    ``n_se`` standard errors of a validation accuracy on ``n_validation`` rows: a margin
    that size is within the noise of the validation rows, and the best of many noisy
    scores overstates its setting (the winner's curse).  Returns (trial, kept_default)."""
    best = study.best_trial
    default = study.trials[0]
    if (first is None or n_se <= 0 or default.state.name != "COMPLETE"
            or best.number == default.number):
        return best, False
    if best.value - default.value <= noise_margin(best.value, n_validation, n_se):
        return default, True
    return best, False


def _simplest_near(trials, best, space: Mapping, n_validation: int, n_se: float):
    """The trial of least capacity among those within ``n_se`` standard errors of the best:
    Breiman's one-standard-error rule (Breiman et al., CART, 1984, §3.4.3; Hastie et al.,
    ESL §7.10), capacity ordered by the space's ``capacity`` dimensions in turn (LL-SVM:
    the fewer anchors, m (d + 1) weights per class, then the larger λ), then the higher
    score, then the earlier trial.  A space without such dimensions: the best."""
    keys = sorted((k for k, d in space.items() if "capacity" in d),
                  key=lambda k: space[k]["capacity"][0])
    if not keys:
        return best
    margin = noise_margin(best.value, n_validation, n_se)
    near = [t for t in trials if t.state.name == "COMPLETE" and best.value - t.value <= margin]
    return min(near, key=lambda t: (
        tuple(space[k]["capacity"][1] * t.params[k] for k in keys), -t.value, t.number))


def noise_margin(accuracy: float, n_validation: int, n_se: float) -> float:
    """``n_se`` standard errors of an accuracy measured on ``n_validation`` rows."""
    p = min(max(accuracy, 0.5 / n_validation), 1 - 0.5 / n_validation)
    return n_se * math.sqrt(p * (1 - p) / n_validation)


def _first_failure(study) -> str:
    for t in study.trials:
        if t.state.name == "FAIL":
            return str(t.system_attrs.get("fail_reason", "unknown"))[:200]
    return "none ran"


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
