"""SearchCV: hyper-parameter selection on the training rows, within a budget.

One procedure for every estimator, and the one ``llc-bench run`` (``tune=auto``), ``llc-bench
tune`` and the model presets run (docs/guide/tuning.md)::

    from llc_bench.models import LLSVMClassifier
    from llc_bench.selection import SearchCV

    search = SearchCV(LLSVMClassifier(random_state=0), trials=20).fit(X, y)
    search.best_params_, search.score(X_test, y_test)

:class:`SearchCV`:

* scores a setting on the rows given to ``fit`` only: a stratified ``folds``-fold CV below
  ``holdout_min_rows`` rows, a stratified held-out fraction ``holdout`` from there on (with
  ``rungs`` > 1, after training on nested subsets of 1/3^(rungs-1), ..., 1/3, all of the
  other rows: successive halving with rows as the resource);
* searches with Optuna's seeded TPE sampler, the estimator's own setting as the first trial
  (a dimension that does not hold it is widened; a ``null_means`` value stands for a None),
  and a successive-halving pruner over the folds or rungs; trials run in rounds of
  ``batch`` (2), each trial judged on the earlier rounds' only, a round's trials side by side
  in up to ``workers`` processes (``auto``: where cores are idle and the rest of the search
  is long enough to pay for a process) with the same trials and choice as in one, so the
  same seed gives the same trials and the same choice on any machine (``batch=None``: one
  trial after another; ``workers`` > 1 without ``batch``: trials in that many processes on
  one study, the choice may then differ);
* stops after ``trials`` trials, or earlier when ``patience`` trials in a row have not
  beaten the best by more than ``keep_default_se`` standard errors of the validation rows,
  or when the next fit would end past ``budget_s`` seconds (judged from the fits so far,
  and from the line through their declared ``cost``); a fit still running at the end of
  the budget is given up at its next SGD epoch or CCCP iteration (then the choice may
  depend on the machine, and ``report_["stopped_by"]`` says ``budget``); or when the next
  fit would pass ``budget_fits`` fits of the first trial's setting or ``budget_rows``
  training rows fitted (counted, not timed: the same choice on any machine);
* runs the trials through the package's one trial loop (:func:`llc_bench.trials.run_trials`,
  Optuna's sampler asked for each setting and told its end), as the estimators' own grid
  CVs do;
* fits the trials with ``trial_params`` over the estimator's own setting (cheaper fits of
  the same model: ML3's CCCP iterations) and the choice with its own, its dual CD init
  capped as the trials' were (``choice_init_max_iter``);
* lets the trials share what they can (one :class:`~llc_bench.models._base.TrialCache` per
  study, passed to the ``fit`` and ``predict`` of an estimator that takes it): the k-means
  anchors and neighbour searches of trials with the same m and k, and (``warm_start``) the
  dual CD duals of a trial that differs in λ only, (``eta0_walk``) an η0 calibration walked
  from the previous trial's and averaged over ``calibration_repeats`` subsamples, and
  (``init_max_iter``) a cap on a trial's dual CD init passes;
* leaves out, on two classes, the dimensions marked ``multiclass_only``;
* keeps the estimator's own setting unless the best beats it by ``keep_default_se``
  standard errors, else (``simpler_se``) takes the trial of least capacity within that many
  standard errors of the best (the dimensions marked ``capacity``; Breiman's one-SE rule).

A space maps a parameter to a dimension: a list of choices, a Hydra sweep string
(``"tag(log, interval(1e-7, 1e-1))"``, ``"choice(1, 4, 8)"``, ``"range(1, 9)"``), or a parsed
dimension (``{"kind": "float", "low": 1e-7, "high": 0.1, "log": True}``).  ``space=None``
takes the estimator's declared space (``conf/search/<name>.yaml`` for its class's
``search_space`` name), its keys read as the estimator's parameters; ``space="<preset>"``
a model preset's (the estimator of ``from_preset("llsvm_soft")`` is an LLSVMClassifier:
``space="llsvm_soft"`` searches as ``llc-bench run model=llsvm_soft`` does).
"""

from __future__ import annotations

import math
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from importlib import resources
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from llc_bench.errors import ConfigError
from llc_bench.models._validation import validate_params
from llc_bench.models.linear import subsample_rows
from llc_bench.trials import Pruned, run_trials

#: search.capacity's orders: the sign that makes a simpler setting's key smaller.
CAPACITY_ORDERS = {"ascending": 1, "descending": -1}


class SearchCV(MetaEstimatorMixin, BaseEstimator):
    """Hyper-parameter selection of ``estimator`` on the rows given to ``fit``.

    Parameters
    ----------
    estimator : estimator
        A classifier with ``fit`` and ``predict``; its own setting is the first trial.
    space : dict, str or None, default=None
        Parameter name -> dimension (a list of choices, a Hydra sweep string or a parsed
        dimension); a model preset's name: its declared space (its stages and settings
        too); None: the estimator's declared space.
    trials : int or None, default=30
        At most this many trials (None: no limit; then a budget must be set).
    budget_s : float or None, default=None
        No trial started that would end past this many seconds, a fit running then given
        up at its next epoch (None: no limit): a cap that makes the choice depend on the
        machine.
    budget_fits : float or None, default=None
        No fit started that would pass this many fits, counted in fits of the first
        trial's setting on a split's training rows (a fit on fewer rows, or of a setting
        the space declares costlier, counts its share): a budget the same on any machine
        (None: no limit).
    budget_rows : int or None, default=500000
        No fit started that would take the training rows the trials have fitted past this
        many: a budget the same on any machine that follows the problem's size, stated in
        the report as a multiple of one fit on a split's training rows: the default, 30
        trials up to about 22,000 rows, 13.3 on 50,000 (None: no limit).
    folds : int, default=3
        Stratified CV folds below ``holdout_min_rows`` rows.
    holdout : float, default=0.25
        The stratified held-out fraction from ``holdout_min_rows`` rows on.
    holdout_min_rows : int, default=2000
        The row count from which one held-out fraction replaces the folds.
    cv_max_rows : int or None, default=None
        The trials' splits are drawn from a stratified subsample of at most this many
        training rows (the refit uses all): for a model whose fit costs grow faster than its
        rows, as the kernel SVM's. None: the declared space's ``search.cv_max_rows`` when
        ``space`` is not a dict, else all rows.
    rungs : int, default=1
        > 1: the held-out fraction is scored after training on 1/3^(rungs-1), ..., 1/3,
        all of the other rows, a poor setting pruned on few rows.
    keep_default_se : float, default=1.0
        Keep the first trial unless the best beats it by this many standard errors of the
        validation accuracy (0: always the best).
    simpler_se : float or None, default=1.0
        Then the trial of least capacity within this many standard errors of the best
        (None: the best).
    patience : int or None, default=None
        Stop when this many trials in a row have not beaten the best by more than
        ``keep_default_se`` standard errors (None: no early stop).
    warm_start : bool, default=True
        A trial differing from an earlier one in λ only starts its dual CD init from that
        trial's duals.
    eta0_walk : bool, default=True
        A trial's η0 calibration walks from the previous trial's η0.
    init_max_iter : int or None, default=30
        A trial's dual CD init stops after this many passes (None: its own cap).
    choice_init_max_iter : int or None, default=30
        The refit's dual CD init stops after this many passes too: the choice fitted as its
        trials were scored (None: its own cap, 1000).
    calibration_repeats : int or None, default=1
        A trial's η0 calibration averages this many seeded subsamples (None: the fit's
        own, 2).
    sample_digits : int or None, default=6
        A float the sampler draws is rounded to this many significant digits (within its
        interval) before a trial uses it, so a draw that differs in its last bits on
        another machine's floating point gives the same trial (None: as drawn).
    trial_params : dict or None, default=None
        The trials' fits take these parameters over the estimator's (a cheaper fit of the
        same model, as fewer CCCP iterations: the fidelity the trials rank settings at);
        the refit keeps the estimator's own.  None: the declared space's
        ``search.trial_params`` when ``space`` is not a dict, else none.
    fixed_first : bool, default=True
        With a declared space (``space`` not a dict), one with ``search.fixed_first``
        (learned anchors: LLC-SAPL, LLC-JO) is searched in its two stages: the other keys
        with the anchors fixed (cheap fits), then the anchor step with that choice.
    second_stage_min_rows : int or None, default=2000
        The second of those stages runs on this many training rows or more; on fewer, the
        first stage's choice is fitted with the anchors learned at the estimator's own
        step (below 2,000 rows the second stage moved the choice in 1 of 120 selections, at
        10-40 % of their time).  None: always.
    batch : int or None, default=2
        Trials in rounds of this many: the sampler asked for a round's settings before any
        is told, each trial judged (pruner, budget) on the earlier rounds' trials only, each
        slot of a round with its own cache; the stop rules read after each round.  The
        trials and the choice are then the same in any number of ``workers``, so on any
        machine.  None: one trial after another.
    workers : int or "auto", default="auto"
        Processes: with ``batch``, the round's trials side by side in up to ``batch`` of
        them (the same choice as in one), the others started once the first trial shows
        the rest will take ``LANE_START_S`` seconds or more; without, trials in this many
        processes on one shared study (the choice may then differ from a serial run's).
        "auto": with ``batch``, this process and one per idle core (the cores less the last
        minute's load average, this process's among it); without, 1.
    refit : bool, default=True
        Fit ``best_estimator_`` on all rows with the chosen setting.
    random_state : int, default=0
        Seeds the splits and the sampler.

    Attributes
    ----------
    best_params_ : dict
        The chosen setting.
    best_score_ : float
        Its validation accuracy.
    best_index_ : int
        Its row in ``cv_results_`` (its trial number).
    best_estimator_ : estimator
        The estimator refitted on all rows with ``best_params_`` (``refit=True``).
    cv_results_ : dict
        One row per trial, as scikit-learn's searches: ``params``, ``param_<name>``,
        ``split<i>_test_score``, ``mean_test_score``, ``rank_test_score``,
        ``mean_fit_time``, ``state``.
    report_ : dict
        The whole report a run records (protocol, stopping reason, budget, trials).
    """

    #: Enters a run's cache key above 1 (``tune.numerics_version``): bump it whenever the
    #: same settings would choose another setting or fit the choice otherwise.
    numerics_version = 1
    #: Enters the cache key of a selection in rounds (``batch`` set) as
    #: ``tune.rounds_version``: bump it whenever rounds of the same settings would choose
    #: otherwise (2: a round's later slot of the first round under the counted budget).
    rounds_version = 2

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "space": [dict, str, None],
        "trials": [Interval(Integral, 1, None, closed="left"), None],
        "budget_s": [Interval(Real, 0, None, closed="neither"), None],
        "budget_fits": [Interval(Real, 0, None, closed="neither"), None],
        "budget_rows": [Interval(Integral, 1, None, closed="left"), None],
        "folds": [Interval(Integral, 2, None, closed="left")],
        "holdout": [Interval(Real, 0, 1, closed="neither")],
        "holdout_min_rows": [Interval(Integral, 0, None, closed="left")],
        "cv_max_rows": [Interval(Integral, 10, None, closed="left"), None],
        "rungs": [Interval(Integral, 1, None, closed="left")],
        "keep_default_se": [Interval(Real, 0, None, closed="left")],
        "simpler_se": [Interval(Real, 0, None, closed="left"), None],
        "patience": [Interval(Integral, 1, None, closed="left"), None],
        "warm_start": ["boolean"],
        "eta0_walk": ["boolean"],
        "init_max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "choice_init_max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "calibration_repeats": [Interval(Integral, 1, None, closed="left"), None],
        "sample_digits": [Interval(Integral, 1, 17, closed="both"), None],
        "trial_params": [dict, None],
        "fixed_first": ["boolean"],
        "second_stage_min_rows": [Interval(Integral, 1, None, closed="left"), None],
        "batch": [Interval(Integral, 1, None, closed="left"), None],
        "workers": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "refit": ["boolean"],
        "random_state": [Interval(Integral, 0, 2**32 - 1, closed="both")],
    }

    def __init__(self, estimator, space=None, *, trials=30, budget_s=None, budget_fits=None,
                 budget_rows=500_000,
                 folds=3,
                 holdout=0.25, holdout_min_rows=2000, cv_max_rows=None, rungs=1,
                 keep_default_se=1.0,
                 simpler_se=1.0, patience=None, warm_start=True, eta0_walk=True,
                 init_max_iter=30, choice_init_max_iter=30, calibration_repeats=1,
                 sample_digits=6, trial_params=None, fixed_first=True,
                 second_stage_min_rows=2000, batch=2, workers="auto", refit=True,
                 random_state=0):
        self.estimator = estimator
        self.space = space
        self.trials = trials
        self.budget_s = budget_s
        self.budget_fits = budget_fits
        self.budget_rows = budget_rows
        self.folds = folds
        self.holdout = holdout
        self.holdout_min_rows = holdout_min_rows
        self.cv_max_rows = cv_max_rows
        self.rungs = rungs
        self.keep_default_se = keep_default_se
        self.simpler_se = simpler_se
        self.patience = patience
        self.warm_start = warm_start
        self.eta0_walk = eta0_walk
        self.init_max_iter = init_max_iter
        self.choice_init_max_iter = choice_init_max_iter
        self.calibration_repeats = calibration_repeats
        self.sample_digits = sample_digits
        self.trial_params = trial_params
        self.fixed_first = fixed_first
        self.second_stage_min_rows = second_stage_min_rows
        self.batch = batch
        self.workers = workers
        self.refit = refit
        self.random_state = random_state

    def fit(self, X, y):
        """Choose a setting on ``(X, y)`` and (``refit``) fit it on all of them."""
        validate_params(self)
        if all(getattr(self, key) is None for key in ("trials", *BUDGETS)):
            raise ValueError("SearchCV: trials, budget_s, budget_fits and budget_rows are all "
                             "None: give at least one")
        X, y = validate_data(self, X, y, accept_sparse=("csr",), dtype=np.float64)
        check_classification_targets(y)
        space = self.space if isinstance(self.space, dict) else self._declared()
        space = {key: dimension(key, spec) for key, spec in space.items()}
        own = self.estimator.get_params()
        for what, keys in (("space key", space), ("trial_params key", self.trial_params or {})):
            unknown = sorted(set(keys) - set(own))
            if unknown:
                raise ValueError(f"SearchCV: {what} {unknown[0]!r} is not a parameter of "
                                 f"{type(self.estimator).__name__}")
        space = without_set_alternatives(space, lambda key: own.get(key.rsplit(".", 1)[-1]))
        declared = {"cv_max_rows": self._declared_option("cv_max_rows"),
                    "trial_params": self._declared_option("trial_params")}
        stages = self._declared_stages(space)
        if stages is None:
            self._search(X, y, _WithParams(self.estimator), space,
                         first_trial(space, own.get), declared=declared)
        else:
            self._staged(X, y, space, stages, declared)
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
            self.best_estimator_.fit(X, y, **self._refit_kw(self.best_estimator_))
            self.classes_ = self.best_estimator_.classes_
        return self

    def _refit_kw(self, estimator) -> dict:
        """``trial_cache=`` for a refit that takes it: the init's pass cap
        (``choice_init_max_iter``), nothing shared with the trials."""
        from llc_bench.models._base import TrialCache, takes_trial_cache

        if self.choice_init_max_iter is None or not takes_trial_cache(type(estimator).fit):
            return {}
        return {"trial_cache": TrialCache(memo=False, pass_cap=self.choice_init_max_iter)}

    def _space_name(self) -> str | None:
        """The declared space searched: ``space`` where it names one, else the estimator's
        (its class's ``search_space``)."""
        if isinstance(self.space, str):
            if self.space not in declared_names():
                raise ValueError(f"SearchCV: space={self.space!r} names no declared space "
                                 f"(one of: {', '.join(declared_names())})")
            return self.space
        return getattr(self.estimator, "search_space", None)

    def _declared(self) -> dict:
        name = self._space_name()
        space = declared_space(name) if name else None
        if not space:
            raise ValueError(f"SearchCV: {type(self.estimator).__name__} declares no search "
                             "space; give space={parameter: [values], ...}")
        return {key.rsplit(".", 1)[-1]: dim for key, dim in space.items()}

    def _declared_stages(self, space: Mapping) -> dict | None:
        """The declared space's ``search.fixed_first`` in parameter names, when ``space``
        is not a dict, ``fixed_first`` is on and the stages split the searched keys."""
        name = self._space_name()
        if isinstance(self.space, dict) or not self.fixed_first or not name:
            return None
        stages = declared_stages(name)
        if stages is None:
            return None
        then = [k.rsplit(".", 1)[-1] for k in stages["then"]]
        then = [k for k in then if k in space]
        if not then or len(then) == len(space):
            return None
        return {**stages, "then": then,
                "set": {k.rsplit(".", 1)[-1]: v for k, v in stages["set"].items()}}

    def _staged(self, X, y, space: dict, stages: Mapping, declared: Mapping) -> None:
        """:func:`staged_search` with a search of this one's settings per stage; the
        results table holds both stages' trials, each row its whole setting."""
        keys = [*space, *stages["set"]]
        searches, tables = [], []

        def stage(sub_space: dict, params: Mapping, settings: Mapping):
            estimator = clone(self.estimator).set_params(**params)
            search = clone(self).set_params(estimator=estimator, space=sub_space, refit=False,
                                            **settings)
            search._search(X, y, _WithParams(estimator), sub_space,
                           first_trial(sub_space, estimator.get_params().get),
                           declared=declared)
            searches.append(search)
            tables.append((search.cv_results_, {k: estimator.get_params()[k] for k in keys}))
            return search.best_params_, search.report_

        self.best_params_, self.report_ = staged_search(
            space, stages, stage, second_stage_skipped(X.shape[0], self.second_stage_min_rows),
            self.trials)
        *earlier, last = searches  # one stage, or two
        self.best_score_ = last.best_score_
        self.best_index_ = sum(len(s.cv_results_["params"]) for s in earlier) + last.best_index_
        self.cv_results_ = joined_results(tables)
        self.n_splits_ = last.n_splits_

    def _declared_option(self, key: str):
        """``search.<key>`` of the declared space, when ``space`` is not a dict and ``key``
        is None."""
        name = self._space_name()
        if isinstance(self.space, dict) or getattr(self, key) is not None or not name:
            return None
        value = declared_option(name, key)
        if isinstance(value, dict):  # dotted config keys -> the estimator's parameters
            return {k.rsplit(".", 1)[-1]: v for k, v in value.items()}
        return value

    def _settings(self) -> dict:
        return {key: getattr(self, key) for key in self._parameter_constraints
                if key not in ("estimator", "space", "refit", "random_state", "fixed_first")}

    def _search(self, X, y, make: Callable, space: dict, first: dict | None,
                echo: Callable | None = None, declared: Mapping | None = None) -> SearchCV:
        """The procedure (the module's docstring) on ``(X, y)``: trials of ``make(params)``
        over ``space``, ``first`` the first trial, ``declared`` the space's settings where
        the search leaves them None; sets ``best_params_``, ``best_score_``,
        ``best_index_``, ``cv_results_`` and ``report_``."""
        optuna = _optuna()
        tune, seed = self._settings(), int(self.random_state)
        tune.update({k: v for k, v in (declared or {}).items() if tune.get(k) is None})
        batch = tune.get("batch")
        workers = lanes(tune.get("workers"), batch)
        if tune.get("trial_params"):
            make = _TrialFit(make, {k: v for k, v in tune["trial_params"].items()
                                    if k not in space})
        if np.unique(y).size <= 2 and any(d.get("multiclass_only") for d in space.values()):
            space = {k: d for k, d in space.items() if not d.get("multiclass_only")}
            first = None if first is None else {k: first[k] for k in space}
        protocol, splits = _splits(X, y, tune, seed)
        parts = _parts(X, y, splits)
        if echo is not None:
            echo(_plan_line(tune, protocol, parts))
        started = time.perf_counter()
        deadline = None if tune["budget_s"] is None else time.time() + float(tune["budget_s"])
        with tempfile.TemporaryDirectory(prefix="llc-tune-") as folder:
            shared = workers > 1 and not batch  # one study in several processes
            storage = sqlite_url(Path(folder) / "study.db") if shared else None
            study = optuna.create_study(storage=storage, study_name="tune",
                                        direction="maximize", sampler=_sampler(optuna, seed),
                                        pruner=_pruner(optuna))
            if first is not None:
                with warnings.catch_warnings():  # "experimental" in optuna 2.x
                    warnings.simplefilter("ignore")
                    study.enqueue_trial(first)
            if batch:
                records, stopped, workers = _in_rounds(study, tune, make, space, parts,
                                                       deadline, batch, workers, echo=echo)
            elif not shared:
                records, stopped = _optimize(study, tune, make, space, parts, deadline,
                                             echo=echo)
            else:  # one shared study (SQLite), trials in `workers` processes
                records, stopped = _in_processes(study, storage, tune, make, space, parts,
                                                 deadline, seed, workers)
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
        if not kept and tune.get("simpler_se"):
            best = _simplest_near(study.trials, highest, space, n_validation,
                                  float(tune["simpler_se"]))
        used = {r["number"]: r["params"] for r in records}  # as fitted (sample_digits)
        chosen = {key: used.get(best.number, best.params)[key] for key in space}
        states = {t.number: t.state.name for t in study.trials}
        self.best_params_, self.best_score_ = chosen, float(best.value)
        self.best_index_ = int(best.number)
        self.cv_results_ = cv_results(records, states, len(parts))
        self.n_splits_ = len(parts)
        self.report_ = {
            "protocol": protocol, "rows": int(len(y)), "space": space, "chosen": chosen,
            "best_trial": int(best.number), "validation_accuracy": float(best.value),
            "kept_default": kept, "defaults_first": first is not None,
            "simpler_se": tune.get("simpler_se"),
            "simpler_than": None if kept or best.number == highest.number else {
                "trial": int(highest.number), "validation_accuracy": float(highest.value)},
            "validation_rows": min(len(y), n_validation),
            **_study_counts(study, stopped), "workers": workers, "batch": batch,
            "budget": _budget(tune, records, len(parts[-1][1])),
            "seconds": seconds, **_procedure(optuna, seed, workers, first, parts, batch),
            "keep_default_se": tune.get("keep_default_se"), "patience": tune.get("patience"),
            "at_edge": _edges(space, chosen),
            "widened": {k: d["declared"] for k, d in space.items() if "declared" in d},
            "trial_params": dict(tune.get("trial_params") or {}),
            "trials": records,
        }
        if echo is not None:
            echo(_tune_line(self.report_, best, highest, tune))
        return self

    def _fitted(self) -> bool:
        check_is_fitted(self, "best_estimator_")
        return True

    @available_if(lambda self: hasattr(self.estimator, "predict"))
    def predict(self, X):
        """The labels ``best_estimator_`` predicts."""
        self._fitted()
        return self.best_estimator_.predict(X)

    @available_if(lambda self: hasattr(self.estimator, "decision_function"))
    def decision_function(self, X):
        """``best_estimator_``'s decision values."""
        self._fitted()
        return self.best_estimator_.decision_function(X)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        """``best_estimator_``'s class probabilities."""
        self._fitted()
        return self.best_estimator_.predict_proba(X)

    def score(self, X, y):
        """The accuracy of ``best_estimator_`` on ``(X, y)``."""
        from llc_bench.experiment.metrics import accuracy

        return accuracy(np.asarray(y), self.predict(X))


def _study_counts(study, stopped: str | None) -> dict:
    """The report's trial counts and what stopped the study."""
    return {"n_trials": len(study.trials),
            "n_complete": sum(t.state.name == "COMPLETE" for t in study.trials),
            "n_pruned": sum(t.state.name == "PRUNED" for t in study.trials),
            "stopped_by": stopped or "trials"}


def lanes(workers, batch: int | None) -> int:
    """The processes a selection's trials run in: ``workers``, "auto" this one and one per
    idle core (the cores this process may use less the last minute's load average, of
    which this process is one) where the choice does not depend on them (``batch``) and 1
    where it would; with ``batch``, at most its size."""
    import os

    if workers == "auto":
        if not batch:
            return 1
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        workers = 1 + max(0, cores - max(1, round(os.getloadavg()[0])))
    return max(1, min(int(workers), batch)) if batch else max(1, int(workers or 1))


def _procedure(optuna, seed: int, workers: int, first, parts: list,
               batch: int | None = None) -> dict:
    """The report's sampler and pruner, as text."""
    return {
        "sampler": f"optuna {optuna.__version__} TPESampler(seed={seed}, n_startup_trials=8)"
                   + (f" in each of {workers} processes (seeds {seed}..{seed + workers - 1})"
                      " on one SQLite study" if workers > 1 and not batch else "")
                   + (f" asked {batch} trials a round, each judged on the earlier rounds' "
                      f"only ({workers} process{'es' if workers > 1 else ''}: the same "
                      "choice in any number)" if batch else "")
                   + (", the defaults first" if first is not None else ""),
        "pruner": "SuccessiveHalvingPruner over the " + ("rungs" if nested(parts) else "folds")
                  + " (min_resource 1, reduction 3)"}


def _tune_line(report: Mapping, best, highest, tune: Mapping) -> str:
    """The run's one ``tune`` line: trials, protocol, the choice and why."""
    kept = report["kept_default"]
    return (f"tune    {report['n_trials']} trials ({report['protocol']} on {report['rows']} "
            f"training rows, {report['n_pruned']} pruned) in {report['seconds']:.1f}s: "
            + ", ".join(f"{k}={_short(v)}" for k, v in report["chosen"].items())
            + f" (val acc {100 * best.value:.2f}%"
            + (f", the defaults kept: the best was within {tune['keep_default_se']} standard "
               "error(s)" if kept else "")
            + (f", the simplest within {tune['simpler_se']} standard error(s) of trial "
               f"{highest.number}'s {100 * highest.value:.2f}%"
               if report["simpler_than"] else "")
            + ")" + _budget_note(report)
            + (", stopped by it" if report.get("stopped_by") in ("fits", "rows")
               else stopped_note(report))
            + (f"; trials in {report['workers']} processes: the choice may differ from a "
               "serial run's" if report.get("workers", 1) > 1 and not report.get("batch")
               else "")
            + (f"; trials {report['batch']} a round in {report['workers']} processes (the "
               "same choice in one)" if report.get("batch") and report.get("workers", 1) > 1
               else ""))


def _plan_line(tune: Mapping, protocol: str, parts: list) -> str:
    """The run's ``tune`` line before the trials: how many, each of how many fits of how
    many rows, and the counted budget as fits of those rows."""
    rows = len(parts[-1][1])
    caps = [f"{tune['trials']} trials" if tune["trials"] is not None else "no trial limit"]
    if tune.get("budget_rows") is not None:
        caps.append(f"{tune['budget_rows']} training rows fitted "
                    f"(tune.budget_rows: {tune['budget_rows'] / rows:.1f} fits)")
    if tune.get("budget_fits") is not None:
        caps.append(f"{tune['budget_fits']} fits (tune.budget_fits)")
    if tune["budget_s"] is not None:
        caps.append(f"{tune['budget_s']} s (tune.budget_s)")
    extra = tune.get("trial_params") or {}
    return (f"tune    {protocol}: {len(parts)} fit(s) of {rows} rows a trial"
            + (" (" + ", ".join(f"{k}={_short(v)}" for k, v in extra.items())
               + ": the trials' fits; the choice's its own)" if extra else "")
            + "; stops at " + " or ".join(caps))


def _budget_note(report: Mapping) -> str:
    """A counted budget as what it is on these rows: ``; budget 500000 rows = 13.3 fits of
    37492 rows, 5.0 spent``."""
    budget = report.get("budget") or {}
    if "rows_per_fit" not in budget:
        return ""
    rows, caps = budget["rows_per_fit"], []
    if budget.get("budget_rows") is not None:
        caps.append(f"{budget['budget_rows']} rows = {budget['budget_rows'] / rows:.1f} fits")
    if budget.get("budget_fits") is not None:
        caps.append(f"{budget['budget_fits']} fits")
    spent = (budget["rows"] / rows if budget.get("budget_rows") is not None
             else budget["fits"])
    return f"; budget {' and '.join(caps)} of {rows} rows, {spent:.1f} spent"


def _budget(tune: Mapping, records: list, rows_per_fit: int) -> dict:
    """The report's budget: the caps and, for a budget in fits or rows, what was spent (in
    fits of the first trial's setting on a split's ``rows_per_fit`` training rows)."""
    out = {"trials": tune["trials"], "budget_s": tune["budget_s"]}
    counted = {k: tune[k] for k in ("budget_fits", "budget_rows") if tune.get(k) is not None}
    if counted:
        out.update(counted, fits=sum(r.get("fit_units", 0.0) for r in records),
                   rows=sum(r.get("fit_rows", 0) for r in records),
                   rows_per_fit=int(rows_per_fit))
    return out


def stopped_note(report: Mapping) -> str:
    """What ended a selection before its trials, for its result lines: a seconds cap (then
    the choice may differ on another machine), the fit budget or the noise-floor stop."""
    budget = report.get("budget") or {}
    return {"budget": f", cut by tune.budget_s={budget.get('budget_s')}: the choice may "
                      "differ on another machine",
            "fits": f", stopped by the budget of {budget.get('budget_fits')} fits",
            "rows": f", stopped by the budget of {budget.get('budget_rows')} training rows "
                    f"({(budget.get('budget_rows') or 0) / (budget.get('rows_per_fit') or 1):.1f}"
                    " fits on these rows)",
            "patience": ", stopped: no gain beyond the validation noise",
            }.get(report.get("stopped_by"), "")


class _WithParams:
    """A trial's estimator: a clone of ``estimator`` with the trial's parameters (a class,
    not a closure: worker processes receive it)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def __call__(self, params: Mapping):
        return clone(self.estimator).set_params(**params)


class _TrialFit:
    """A trial's estimator: ``make`` of the trial's setting over ``extra`` (the trials'
    own parameters, ``trial_params``), the setting winning where both hold a key (a class,
    not a closure: worker processes receive it)."""

    def __init__(self, make: Callable, extra: Mapping):
        self.make, self.extra = make, dict(extra)

    def __call__(self, params: Mapping):
        return self.make({**self.extra, **params})


def joined_results(tables: list) -> dict:
    """One results table of searches run one after the other: ``tables`` holds (a search's
    ``cv_results_``, the setting its rows' parameters complete)."""
    from llc_bench.models.grid_search import results_table

    params, splits, states, seconds, scores = [], [], [], [], []
    for table, setting in tables:
        n_splits = sum(key.startswith("split") for key in table)
        for i, row in enumerate(table["params"]):
            scored = [s for s in (table[f"split{j}_test_score"][i] for j in range(n_splits))
                      if not np.isnan(s)]
            params.append({**setting, **row})
            splits.append(scored)
            states.append(table["state"][i])
            seconds.append(table["mean_fit_time"][i] * max(1, len(scored)))
            scores.append(table["mean_test_score"][i])
    return results_table(params, splits, states=states, fit_seconds=seconds, scores=scores,
                         n_splits=max(sum(k.startswith("split") for k in t) for t, _ in tables))


def cv_results(records: list, states: Mapping, n_splits: int) -> dict:
    """scikit-learn's search-result table from the trials' records: one row per trial, in
    trial order; a split not scored (pruned, stopped, failed) is nan."""
    from llc_bench.models.grid_search import results_table

    rows = sorted(records, key=lambda r: r["number"])
    return results_table([r["params"] for r in rows],
                         [r.get("split_scores") or () for r in rows], n_splits=n_splits,
                         states=[states.get(r["number"], "FAIL") for r in rows],
                         fit_seconds=[r["seconds"] for r in rows],
                         scores=[r["score"] for r in rows])


def _conf_dir() -> Path:
    return Path(str(resources.files("llc_bench.conf")))


def parse_dimension(key: str, text) -> dict:
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


def dimension(key: str, spec) -> dict:
    """A space entry as a parsed dimension: a list or tuple of choices, a Hydra sweep
    string, or a dimension already parsed (checked)."""
    if isinstance(spec, Mapping):
        kind = spec.get("kind")
        ok = (kind == "choice" and isinstance(spec.get("values"), list | tuple)
              and len(spec["values"]) >= 1) or (
            kind in ("int", "float") and all(isinstance(spec.get(b), int | float)
                                             for b in ("low", "high"))
            and spec["low"] <= spec["high"] and (not spec.get("log") or spec["low"] > 0))
        if not ok:
            raise ValueError(f"SearchCV: space[{key!r}]={dict(spec)!r}: expected a list of "
                             "choices, a sweep string or {'kind': 'float'|'int', 'low', "
                             "'high', 'log'}")
        return {"log": False, **spec} if kind != "choice" else dict(spec)
    if isinstance(spec, list | tuple):
        if not spec:
            raise ValueError(f"SearchCV: space[{key!r}] is an empty list")
        return {"kind": "choice", "values": list(spec)}
    if isinstance(spec, str):
        return parse_dimension(key, spec)
    raise ValueError(f"SearchCV: space[{key!r}]={spec!r}: expected a list of choices, a "
                     "sweep string or a parsed dimension")


def declared_space(model: str, config_dirs=()) -> dict[str, dict] | None:
    """The declared space of a model preset (``conf/search/<model>.yaml``, in the package's
    config or in a config dir the user added: ``config_dirs``), or None."""
    from omegaconf import OmegaConf

    path = _search_file(model, config_dirs)
    if path is None:
        return None
    conf = OmegaConf.load(path)
    params = OmegaConf.select(conf, "hydra.sweeper.params") or {}
    space = {key: parse_dimension(key, text) for key, text in params.items()}
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
    for key, other in (OmegaConf.select(conf, "search.instead_of") or {}).items():
        if key in space:  # not searched where the run sets ``other`` (gamma_scale: gamma)
            space[key]["instead_of"] = other
    for key in OmegaConf.select(conf, "search.multiclass_only") or ():
        if key in space:  # searched on more than two classes only
            space[key]["multiclass_only"] = True
    capacity = OmegaConf.select(conf, "search.capacity") or {}
    for rank, (key, order) in enumerate(capacity.items()):
        if order not in CAPACITY_ORDERS:
            raise ConfigError(f"conf/search/{model}.yaml: search.capacity.{key}={order!r}: "
                              f"expected one of {', '.join(CAPACITY_ORDERS)}")
        if key in space:  # simpler_se's order: this key's rank, and which way is simpler
            space[key]["capacity"] = [rank, CAPACITY_ORDERS[order]]
    return space


def declared_names() -> list[str]:
    """The model presets that declare a space in the package's config (``space=`` names)."""
    return sorted(p.stem for p in (_conf_dir() / "search").glob("*.yaml")
                  if not p.stem.startswith("_"))


def _search_file(model: str, config_dirs=()) -> Path | None:
    """``search/<model>.yaml`` in the package's config, else in a user's config dir."""
    found = [folder / "search" / f"{model}.yaml"
             for folder in (_conf_dir(), *map(Path, config_dirs))]
    return next((p for p in found if p.is_file()), None)


def declared_stages(model: str, config_dirs=()) -> dict | None:
    """A space's ``search.fixed_first`` (``{"set": {key: value}, "then": [keys], "trials":
    n, "patience": p, "alone_trials": a}``): search the other keys with ``set`` applied first
    (learned anchors: fixed, so the fits are cheap), then only ``then`` with that choice, in
    ``trials`` trials, stopped once ``p`` trials in a row have not beaten the best beyond the
    validation noise (optional: default ``tune.patience``); the first stage in at most ``a``
    trials where it runs alone (optional: below ``second_stage_min_rows``); or None."""
    from omegaconf import OmegaConf

    path = _search_file(model, config_dirs)
    stages = OmegaConf.select(OmegaConf.load(path), "search.fixed_first") if path else None
    if stages is None:
        return None
    stages = OmegaConf.to_container(stages)
    ok = (isinstance(stages, dict) and isinstance(stages.get("set"), dict)
          and isinstance(stages.get("then"), list) and stages["then"]
          and type(stages.get("trials")) is int and stages["trials"] >= 1
          and all(stages.get(key) is None or type(stages[key]) is int and stages[key] >= 1
                  for key in ("patience", "alone_trials")))
    if not ok:
        raise ConfigError(f"{path}: search.fixed_first: expected {{set: {{KEY: VALUE}}, then: "
                          "[KEY, ...], trials: N, patience: P (optional), alone_trials: A "
                          "(optional)}")
    return stages


def second_stage_skipped(rows: int, min_rows: int | None) -> str | None:
    """Why a staged search leaves out its second stage on ``rows`` training rows (fewer
    than ``min_rows``: ``second_stage_min_rows``), or None when it runs it."""
    if min_rows is None or rows >= min_rows:
        return None
    return f"{rows} training rows < second_stage_min_rows {min_rows}"


def staged_search(space: Mapping, stages: Mapping, search: Callable,
                  skip_second: str | None = None, trials: int | None = None
                  ) -> tuple[dict, dict]:
    """A declared ``search.fixed_first`` (:func:`declared_stages`): the space but
    ``then`` searched with ``set`` applied (learned anchors fixed: cheap fits), then
    ``then`` alone with that choice, in the declared trials (and patience, where declared).
    ``search(space, params, settings)`` runs one stage with ``params`` set and ``settings``
    over the search's own, returning (chosen, report).  Returns the choice of both and a
    report that is the last stage's with the totals over both and each stage's in
    ``stages``.  ``skip_second`` (the reason, :func:`second_stage_skipped`): the first
    stage only, in at most the declared ``alone_trials`` (and the search's own ``trials``);
    ``then`` keeps the own setting and ``set`` is not applied to the choice."""
    later = {k: d for k, d in space.items() if k in stages["then"]}
    first = {k: d for k, d in space.items() if k not in later}
    alone = stages.get("alone_trials") if skip_second else None
    if alone is not None and trials is not None:
        alone = min(alone, trials)
    chosen, one = search(first, stages["set"], {} if alone is None else {"trials": alone})
    if skip_second:
        return dict(chosen), {**one, "space": dict(space), "chosen": dict(chosen),
                              "stages": [one], "second_stage": f"skipped: {skip_second}",
                              "defaults_first": False}
    settings = {"trials": stages["trials"]}
    if stages.get("patience") is not None:
        settings["patience"] = stages["patience"]
    rest, two = search(later, chosen, settings)
    both = {**chosen, **rest}
    # the own setting is kept only if both stages kept theirs; no one trial scored it
    # (stage one's trial 0 has fixed anchors, stage two's the first stage's choice)
    return both, {**two, "space": dict(space), "chosen": both, "stages": [one, two],
                  "kept_default": one["kept_default"] and two["kept_default"],
                  "defaults_first": False,
                  **{key: one[key] + two[key] for key in ("n_trials", "n_complete", "n_pruned",
                                                          "seconds", "at_edge")},
                  "widened": {**one["widened"], **two["widened"]}}


def declared_option(model: str, key: str, config_dirs=()):
    """A declared space's ``search.<key>`` setting, checked, or None: ``cv_max_rows`` (an
    integer >= 10) or ``trial_params`` (a mapping of config keys to values)."""
    from omegaconf import OmegaConf

    path = _search_file(model, config_dirs)
    value = OmegaConf.select(OmegaConf.load(path), f"search.{key}") if path else None
    if value is None:
        return None
    if key == "trial_params":
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, bool | int | float | str))
                for k, v in value.items()):
            raise ConfigError(f"{path}: search.trial_params: expected {{KEY: VALUE, ...}} "
                              "(config keys to single values)")
        return value
    if type(value) is not int or value < 10:
        raise ConfigError(f"{path}: search.{key}={value!r}: expected an integer >= 10")
    return value


def without_set_alternatives(space: Mapping, value_of: Callable) -> dict:
    """``space`` without the dimensions declared ``instead_of`` a key the setting gives a
    value (``value_of(key)`` not None: a γ given as is leaves its scale unsearched)."""
    return {key: dim for key, dim in space.items()
            if "instead_of" not in dim or value_of(dim["instead_of"]) is None}


def first_trial(space: Mapping, value_of: Callable) -> dict | None:
    """The own setting as a first trial (``value_of(key)``), when it lies in the space (a
    None tried as the value the space says it stands for: ``null_means``)."""
    params = {}
    for key, dim in space.items():
        value = value_of(key)
        if value is None:
            value = dim.get("null_means")
        if not _holds(dim, value):
            return None
        params[key] = value
    return params


RUNG_MIN_ROWS = 500  # no rung trains on fewer rows


def _splits(X, y, tune: Mapping, seed: int) -> tuple[str, list]:
    """The protocol and its (train rows, validation rows) pairs: stratified folds, or one
    stratified held-out fraction from ``holdout_min_rows`` rows on, of a stratified
    subsample of ``tune.cv_max_rows`` rows where there are more; with ``tune.rungs`` = r
    > 1, the held-out fraction is scored after training on nested, stratified subsets of
    1/3^(r-1), ..., 1/3, all of the other rows (successive halving with rows as the
    resource, as scikit-learn's HalvingRandomSearchCV: a setting poor on few rows is not
    fitted on all of them), a subset of fewer than RUNG_MIN_ROWS rows left out."""
    keep = subsample_rows(y, tune.get("cv_max_rows"), seed)
    if keep is not None:  # the splits of a subsample, as rows of (X, y)
        protocol, splits = _splits(X[keep], y[keep], {**tune, "cv_max_rows": None}, seed)
        return (f"{protocol} of {len(keep)} subsampled rows",
                [(keep[tr], keep[va]) for tr, va in splits])
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


def _suggest(trial, key: str, dim: Mapping, digits: int | None = None):
    """The sampler's value of one dimension; a float rounded to ``digits`` significant
    digits within its interval (``sample_digits``)."""
    if dim["kind"] == "choice":
        return trial.suggest_categorical(key, dim["values"])
    if dim["kind"] == "int":
        return trial.suggest_int(key, int(dim["low"]), int(dim["high"]), log=dim["log"])
    low, high = float(dim["low"]), float(dim["high"])
    value = trial.suggest_float(key, low, high, log=dim["log"])
    return value if digits is None else min(max(float(f"{value:.{digits}g}"), low), high)



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

    def __init__(self, make: Callable, space: Mapping, parts: list, deadline: float | None,
                 shared: bool = False, cache=None, budget_fits: float | None = None,
                 budget_rows: int | None = None, trials: int | None = None,
                 echo: Callable | None = None, digits: int | None = None):
        self.make, self.space, self.parts, self.deadline = make, space, parts, deadline
        self.digits = digits  # sample_digits: the sampled floats' significant digits
        self.cache = cache  # a TrialCache handed to the fits that take it
        self.budget_fits, self.budget_rows = budget_fits, budget_rows
        self.running_units, self.running_rows = 0.0, 0
        self.stopped_by: str | None = None  # "fits" / "rows" when that budget stopped it
        self.rungs = nested(parts)  # a score per rung of one held-out set: the last counts
        self.fits: list[tuple[float | None, float]] = []  # (cost, seconds) of each fit
        self.records: list[dict] = []
        self.trials, self.echo = trials, echo  # echo: after the first trial, the rest's cost
        # trials in several processes on one study: each trial leaves its record and fits
        # in the study, and the budget is judged from every process's trials
        self.shared, self.study = shared, None
        self.halted = False  # no trial after this one: the budget is spent
        # a trial of a round (tune.batch): the fits its round's earlier trials may make,
        # counted as made (units, rows), and the first trial's setting, known before it ends
        self.reserved: tuple[float, int] = (0.0, 0)
        self.first: Mapping | None = None
        self.first_ahead = False  # the round's earlier slots hold the search's first trial

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
        if not fits:  # a round's later slot, before any trial has been told
            return False
        recent = fits[1:][-10:] or fits
        seconds = max(s for _, s in recent)
        if cost is not None:
            seconds = max(seconds, _seconds_at(fits[-10:], cost))
        return time.time() + seconds > self.deadline

    def fit_units(self, params: Mapping, rows: int) -> float:
        """A fit's share of the fit budget, in fits of the first trial's setting on all the
        training rows of a split: its rows over those, times its declared cost over the
        first trial's (:func:`fit_cost`; 1 where the space declares none).  Counted, not
        timed: the same on any machine."""
        first = self._first_params()
        cost, base = fit_cost(self.space, params), fit_cost(self.space, first or {})
        ratio = cost / base if cost and base else 1.0
        return ratio * rows / len(self.parts[-1][1])

    def _first_params(self) -> Mapping | None:
        if self.first is not None:
            return self.first
        own = [r for r in self.records if r["number"] == 0]
        if own:
            return own[0]["params"]
        trials = self.study.get_trials(deepcopy=False) if self.study is not None else []
        return next((t.params for t in trials if t.number == 0), None)

    def over_fit_budget(self, units: float, rows: int = 0) -> str | None:
        """Which budget one more fit of ``units`` on ``rows`` rows would pass, "fits" or
        "rows" (a trial has completed: the first always does), or None."""
        if (self.budget_fits is None and self.budget_rows is None) or not self.complete():
            return None
        done = [*self.records, *(t.user_attrs["record"] for t in self._others())]
        held_units, held_rows = self.reserved
        if self.budget_fits is not None and held_units + self.running_units + units + sum(
                r.get("fit_units", 0.0) for r in done) > self.budget_fits + 1e-9:
            return "fits"
        if self.budget_rows is not None and held_rows + self.running_rows + rows + sum(
                r.get("fit_rows", 0) for r in done) > self.budget_rows:
            return "rows"
        return None

    def cheapest_units(self, rows: int) -> float:
        """The units of a fit on ``rows`` rows of the space's cheapest declared setting (each
        ``cost`` dimension at its least value; the first trial's units where none is)."""
        least = {key: (dim["values"] if dim["kind"] == "choice" else [dim["low"]])
                 for key, dim in self.space.items() if dim.get("cost")}
        return self.fit_units({k: min(v) for k, v in least.items()}, rows)

    def stop_on_budget(self) -> None:
        """After a trial: no more when one more fit would end past the budget."""
        self.halted = self.halted or self.over_budget()

    def __call__(self, trial) -> float:
        from sklearn.base import clone

        from llc_bench.experiment.metrics import accuracy
        from llc_bench.models._base import FitDeadline

        t = time.perf_counter()
        self.study, first_fit = trial.study, len(self.fits)
        space = self.space
        params = {key: _suggest(trial, key, dim, self.digits) for key, dim in space.items()}
        cost = fit_cost(space, params)
        estimator = self.make(params)
        if "history" in estimator.get_params():
            estimator.set_params(history=False)  # monitoring only: the numbers are the same
        scores: list[float] = []
        past = None
        self.running_units, self.running_rows = 0.0, 0
        try:
            for step, (X_tr, y_tr, X_va, y_va) in enumerate(self.parts):
                units = self.fit_units(params, len(y_tr))
                over = self.over_fit_budget(units, len(y_tr))
                if over and step == 0 and not self.over_fit_budget(self.cheapest_units(
                        len(y_tr)), len(y_tr)):  # a cheaper setting still fits: not this one
                    raise Pruned()
                self.stopped_by = self.stopped_by or over
                if self.stopped_by or self.over_budget(cost):
                    self.halted = True
                    raise Pruned()
                t_fit = time.perf_counter()
                try:  # a fit still running at the deadline is given up (not the first trial)
                    fitted = clone(estimator).fit(
                        X_tr, y_tr, **self._cache_kw(type(estimator).fit, self.complete()))
                except FitDeadline as stop:
                    past = str(stop)
                    self.halted = True
                    raise Pruned() from None
                scores.append(accuracy(y_va, fitted.predict(
                    X_va, **self._cache_kw(type(fitted).predict))))
                self.fits.append((cost, time.perf_counter() - t_fit))
                self.running_units += units
                self.running_rows += len(y_tr)
                # a rung reports at its row count in units of the smallest rung's (1, 3, 9):
                # the pruner (min_resource 1, reduction 3) then judges every rung but the last
                trial.report(self.value(scores), 3 ** step if self.rungs else step)
                if step + 1 < len(self.parts) and trial.should_prune():
                    raise Pruned()
        finally:
            self.records.append({"number": trial.number, "params": params,
                                 "score": self.value(scores) if scores else None,
                                 "folds_scored": len(scores),
                                 "split_scores": [float(s) for s in scores],
                                 "seconds": time.perf_counter() - t,
                                 "fit_units": self.running_units,
                                 "fit_rows": self.running_rows,
                                 **({"stopped": f"budget: a fit {past}"} if past else {})})
            if self.shared:
                trial.set_user_attr("fits", [list(f) for f in self.fits[first_fit:]])
                trial.set_user_attr("record", self.records[-1])
        if self.echo is not None and len(self.records) == 1:
            self.echo(self.rest_line(self.records[0]))
        return self.value(scores)

    def rest_seconds(self, first: Mapping) -> float | None:
        """What the trials after ``first`` (complete) cost at its seconds per fit: the
        trials left, or the counted budget left, whichever ends first (pruned trials cost
        less, a costlier setting more); None: no count ends them (the seconds budget does)."""
        per_fit = first["seconds"] / max(first["fit_units"], 1e-12)
        left = [] if self.trials is None else [(self.trials - 1) * first["fit_units"]]
        if self.budget_fits is not None:
            left.append(self.budget_fits - first["fit_units"])
        if self.budget_rows is not None:  # in fits of the first trial's rows
            left.append((self.budget_rows - first["fit_rows"]) * first["fit_units"]
                        / max(first["fit_rows"], 1))
        if not left:
            return None
        seconds = max(0.0, min(left)) * per_fit
        if self.deadline is not None:
            seconds = min(seconds, max(0.0, self.deadline - time.time()))
        return seconds

    def rest_line(self, first: Mapping) -> str:
        """The tune line of :meth:`rest_seconds`."""
        from llc_bench.store.costs import describe

        seconds = self.rest_seconds(first)
        if seconds is None:
            return f"tune    first trial {first['seconds']:.1f}s; the rest: until tune.budget_s"
        return (f"tune    first trial {first['seconds']:.1f}s; the rest about "
                f"{describe(seconds).lstrip('~')} at that pace")

    def _cache_kw(self, method, deadline: bool = False) -> dict:
        """``trial_cache=`` for a fit or predict that takes it: the study's cache, with its
        deadline only when ``deadline`` (a trial has completed: the first runs to its end)."""
        from llc_bench.models._base import takes_trial_cache

        if self.cache is None or not takes_trial_cache(method):
            return {}
        return {"trial_cache": self.cache if deadline else self.cache.with_deadline(None)}

    def complete(self) -> bool:
        """Whether a trial has been scored on every split (then there is a choice), or one
        will be: a round's earlier slot holds the search's first trial, which always is."""
        return self.first_ahead or any(r["folds_scored"] == len(self.parts)
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
    """A stop rule told each trial's end: it stops the search when ``patience`` trials in a
    row (pruned and failed ones included) have not beaten the best value by more than the
    noise margin of the validation rows (as Keras' EarlyStopping with ``min_delta``: a gain
    within the margin does not move the bar)."""

    def __init__(self, patience: int | None, n_validation: int, n_se: float):
        self.patience, self.n_validation, self.n_se = patience, n_validation, n_se
        self.best: float | None = None
        self.since = 0
        self.stopped = False

    def __call__(self, value: float | None) -> None:
        """After a trial that scored ``value`` (None: pruned or failed)."""
        if self.patience is None:
            return
        if value is not None and (self.best is None or value - self.best > noise_margin(
                value, self.n_validation, self.n_se)):
            self.best, self.since = value, 0
        else:
            self.since += 1
        if self.since >= self.patience:
            self.stopped = True


BUDGETS = ("budget_s", "budget_fits", "budget_rows")  # what may end a selection before its trials


def _sampler(optuna, seed: int):
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=8)


def _pruner(optuna):
    return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)


CATCH = (ValueError, ArithmeticError, np.linalg.LinAlgError)  # a failed trial, not a run


def _optimize(study, settings, make, space, parts, deadline,
              shared: bool = False, echo: Callable | None = None) -> tuple[list, str | None]:
    """Trials in this process until the study holds ``tune.trials`` of them, patience runs
    out or the budget ends; (this process's trial records, what stopped it early: "budget",
    "patience" or None).  ``shared``: other processes run trials on the same study."""
    optuna = _optuna()
    tune = settings
    objective = _Objective(make, space, parts, deadline, shared, _trial_cache(tune, deadline),
                           tune.get("budget_fits"), tune.get("budget_rows"), tune["trials"], echo,
                           tune.get("sample_digits"))
    limit = tune["trials"]
    patience = _Patience(tune.get("patience"), validation_rows(parts),
                         float(tune.get("keep_default_se") or 0.0))
    full = False

    def tell(trial, state: str, score, error) -> None:
        nonlocal full
        if error is not None:
            trial.set_user_attr("fail_reason", _failure(error))
        study.tell(trial, score, state=optuna.trial.TrialState[state])
        objective.stop_on_budget()
        patience(score)
        # the study holds `limit` trials, every process's counted (this one's among them)
        full = limit is not None and len(study.get_trials(deepcopy=False)) >= limit

    def stop() -> bool:
        return patience.stopped or objective.halted or full

    run_trials(study.ask, objective, tell, stop=stop, catch=CATCH)
    if patience.stopped or objective.stopped_by:
        return objective.records, objective.stopped_by or "patience"
    return objective.records, ("budget" if limit is None or len(study.trials) < limit
                               else None)


def _trial_cache(tune: Mapping, deadline: float | None):
    """What the trials of one study (or one slot of a round) share."""
    from llc_bench.models._base import TrialCache

    return TrialCache(deadline=deadline, warm_start=bool(tune.get("warm_start")),
                      eta0_walk=bool(tune.get("eta0_walk")), pass_cap=tune.get("init_max_iter"),
                      calibration_repeats=tune.get("calibration_repeats"))


def _in_rounds(study, settings, make, space, parts, deadline, batch: int, processes: int,
               echo: Callable | None = None) -> tuple[list, str | None, int]:
    """Trials ``batch`` at a time (``tune.batch``), the round's trials in ``processes``
    processes; (the trial records, what stopped the study early, the processes that ran
    trials), as :func:`_optimize`.

    Every trial of a round is judged on the trials of the rounds before it only: the sampler
    is asked for the round's settings before any is told, the pruner compares a trial with
    the earlier rounds' (:func:`_judged_alone`), a budget counts the round's earlier trials
    as if they fitted all their splits, and slot j of every round shares what depends on the
    order of the fits in its :class:`TrialCache` (warm duals, η0 walk) with slot j of the
    others only (the k-means anchors and neighbour searches, the same in any order, with
    every slot in its process); the stop rules are read after each round.  So the trials,
    their scores and the choice are the same whether the slots run one after another or side
    by side."""
    optuna = _optuna()
    tune, limit = settings, settings["trials"]
    book = _Objective(make, space, parts, deadline, budget_fits=tune.get("budget_fits"),
                      budget_rows=tune.get("budget_rows"), trials=limit,
                      digits=tune.get("sample_digits"))  # the study's records and fits
    patience = _Patience(tune.get("patience"), validation_rows(parts),
                         float(tune.get("keep_default_se") or 0.0))
    judged: list = []  # each trial as its round judged it (its rungs), for the later rounds
    queue: list = []  # the round's trials not yet told: (trial, the call that runs it)
    results: dict = {}  # trial number -> what its run gave
    halted = False  # the budget is spent: no round after this one

    def ask_round():
        """The round's next trial; a new round (its settings asked at once, the other
        processes' slots started) when the last is told."""
        if not queue:
            asked_before = sum(t.state.name != "WAITING"  # the enqueued defaults aside
                               for t in study.get_trials(deepcopy=False))
            size = batch if limit is None else min(batch, limit - asked_before)
            if size < 1:
                return None
            asked = [study.ask() for _ in range(size)]
            used = [{key: _suggest(t, key, dim, book.digits) for key, dim in space.items()}
                    for t in asked]
            book.first = book._first_params() or used[0]
            held = (0.0, 0)
            for slot, (t, params) in enumerate(zip(asked, used, strict=True)):
                queue.append((t, lane.submit(slot, t.params, {
                    "records": list(book.records), "fits": list(book.fits),
                    "judged": list(judged), "reserved": held, "first": book.first})))
                held = (held[0] + sum(book.fit_units(params, len(p[1])) for p in parts),
                        held[1] + sum(len(p[1]) for p in parts))
        return queue[0]

    def evaluate(item) -> float:
        t, run = item
        out = results[t.number] = run()
        for step, value in sorted(out["judged"].intermediate_values.items()):
            t.report(value, step)  # as the trial reported them (the sampler reads them)
        if out["state"] == "PRUNED":
            raise Pruned()
        if out["state"] == "FAIL":
            raise _TrialFailed(out["error"])
        return out["score"]

    def tell(item, end: str, score, error) -> None:
        nonlocal halted
        t, _ = queue.pop(0)
        if error is not None:
            t.set_user_attr("fail_reason", _failure(error))
        study.tell(t, score, state=optuna.trial.TrialState[end])
        out = results.pop(t.number, None)
        if out is None:  # an error that ends the search
            return
        if out["record"] is not None:
            book.records.append({**out["record"], "number": t.number})
        book.fits.extend(out["fits"])
        judged.append(out["judged"])
        book.stopped_by = book.stopped_by or out["stopped_by"]
        halted = halted or out["halted"]
        patience(score)
        if len(book.records) == 1:
            rest = book.rest_seconds(book.records[0])
            if rest is None:  # the seconds budget ends the trials (there is one then)
                rest = book.deadline - time.time()
            if echo is not None:
                echo(book.rest_line(book.records[0]))
            if rest >= LANE_START_S:  # long enough to pay for a process
                lane.start()
        if not queue:  # the round's last: a seconds cap read once a round
            halted = halted or book.over_budget()

    def stop() -> bool:  # after a round only
        return not queue and (patience.stopped or halted)

    with _Lanes(processes, (make, space, parts, deadline, tune)) as lane:
        run_trials(ask_round, evaluate, tell, stop=stop, catch=(*CATCH, _TrialFailed))
    used = lane.n if lane.used else 1
    if patience.stopped or book.stopped_by:
        return book.records, book.stopped_by or "patience", used
    return book.records, ("budget" if limit is None or len(study.trials) < limit
                          else None), used


class _TrialFailed(ValueError):
    """A trial of a round that failed where it ran (another process): its error's text."""


def _failure(error: BaseException) -> str:
    """A failed trial's ``fail_reason``: the error's type and text (a round's trial that
    failed elsewhere: the text it sent)."""
    if isinstance(error, _TrialFailed):
        return str(error)
    return f"{type(error).__name__}: {error}"[:200]


def _judged_alone(optuna, judged: list, raw: Mapping):
    """A trial of a round in a study of its own: the earlier rounds' trials as they were
    judged, then this one (its setting enqueued), so the pruner compares it with those only,
    whichever process runs it and whatever runs beside it."""
    view = optuna.create_study(direction="maximize", pruner=_pruner(optuna),
                               sampler=optuna.samplers.RandomSampler(seed=0))
    with warnings.catch_warnings():  # "experimental" in optuna 2.x
        warnings.simplefilter("ignore")
        view.add_trials(judged)
        view.enqueue_trial(dict(raw))
    return view, view.ask()


def _round_trial(search: tuple, caches: dict, slot: int, raw: Mapping, context: Mapping) -> dict:
    """Slot ``slot``'s trial of a round (the sampler's ``raw`` setting), fitted and scored
    with that slot's cache, as ``context`` (the study before the round) has it."""
    make, space, parts, deadline, tune = search
    optuna = _optuna()
    if slot not in caches:
        caches[slot] = _trial_cache(tune, deadline)
        other = next((c for key, c in caches.items() if key != slot), None)
        if other is not None:  # k-means and neighbour searches: the same in any order
            caches[slot].anchors, caches[slot].distances = other.anchors, other.distances
    objective = _Objective(make, space, parts, deadline, cache=caches[slot],
                           budget_fits=tune.get("budget_fits"),
                           budget_rows=tune.get("budget_rows"), trials=tune["trials"],
                           digits=tune.get("sample_digits"))
    objective.records, objective.fits = list(context["records"]), list(context["fits"])
    objective.reserved, objective.first = context["reserved"], context["first"]
    objective.first_ahead = slot > 0 and not context["records"]
    view, trial = _judged_alone(optuna, context["judged"], raw)
    state, score, error = "COMPLETE", None, None
    try:
        score = objective(trial)
    except Pruned:
        state = "PRUNED"
    except CATCH as err:
        state, error = "FAIL", _failure(err)
    view.tell(trial, score, state=optuna.trial.TrialState[state])
    recorded = len(objective.records) > len(context["records"])  # not when make() failed
    return {"state": state, "score": score, "error": error,
            "record": objective.records[-1] if recorded else None,
            "fits": objective.fits[len(context["fits"]):], "stopped_by": objective.stopped_by,
            "halted": objective.halted, "judged": view.trials[-1]}


_LANE: dict = {}  # in a lane's process: its search and its slots' caches


def _lane_start(search: tuple, threads: int, token: str) -> None:
    import numba
    from joblib.externals.loky import process_executor

    # loky restarts a worker whose memory grew by 300 MB (with psutil): this one holds its
    # slots' caches on purpose, and a restart would lose them
    process_executor._USE_PSUTIL = False
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    _LANE.clear()
    _LANE.update(search=search, caches={}, token=token)


def _lane_trial(token: str, slot: int, raw: Mapping, context: Mapping, cache=None) -> dict:
    if _LANE.get("token") != token:  # never silently: the slot's cache would be another's
        raise RuntimeError("a selection lane's process was restarted: its trials' caches "
                           "are gone")
    if cache is not None:  # the slot's cache, from this process on
        _LANE["caches"][slot] = cache
    return _round_trial(_LANE["search"], _LANE["caches"], slot, raw, context)


#: A selection's other processes (``workers``) start once its first trial shows the rest
#: will take this many seconds or more: a process's imports take about 2 s of a core.
LANE_START_S = 10.0


class _Lanes:
    """Where a round's trials run: slot j in lane j mod ``n``; lane 0 is this process, each
    other lane one process of its own, started by ``start`` (when the search has shown it
    is long enough to pay for one) and kept to its end.  Until a lane's process is ready
    (its imports take seconds: a short search never waits for them), its slots run here;
    from then on there, each slot's cache moved along with its first trial there.
    ``submit`` gives a call that returns the trial's result: a slot run here runs when
    called, after the round's slots elsewhere have started."""

    #: start each lane's process with the search and wait for it before a round (tests:
    #: the lanes surely used)
    wait_for_start = False

    def __init__(self, n: int, search: tuple):
        self.n, self.search, self.caches = max(1, int(n)), search, {}
        self.pools: list = []
        self.ready: list = []  # per lane of its own: its start (a future)
        self.threads: int | None = None  # this process's numba threads before the lanes
        self.used = False  # whether a trial ran in another process

    def __enter__(self):
        if self.wait_for_start:
            self.start()
        return self

    def start(self) -> None:
        """Start the other lanes' processes (once)."""
        if self.n > 1 and not self.pools:
            import uuid

            import numba
            from joblib.externals.loky import ProcessPoolExecutor

            self.threads = numba.get_num_threads()
            self.share = max(1, self.threads // self.n)  # the cores shared out between lanes
            self.token = uuid.uuid4().hex
            # loky: a process of its own (no fork of numba's threads), a script without a
            # __main__ guard not run again
            self.pools = [ProcessPoolExecutor(max_workers=1) for _ in range(self.n - 1)]
            self.ready = [pool.submit(_lane_start, self.search, self.share, self.token)
                          for pool in self.pools]

    def submit(self, slot: int, raw: Mapping, context: Mapping) -> Callable[[], dict]:
        lane = slot % self.n
        if lane and self.ready and self.wait_for_start:
            self.ready[lane - 1].result()
        if lane == 0 or not self.ready or not self.ready[lane - 1].done():
            return lambda: _round_trial(self.search, self.caches, slot, raw, context)
        self.ready[lane - 1].result()  # a process that could not start says why
        if not self.used:
            import numba

            numba.set_num_threads(self.share)
            self.used = True
        future = self.pools[lane - 1].submit(_lane_trial, self.token, slot, raw, context,
                                             self.caches.pop(slot, None))
        return future.result

    def __exit__(self, *exc):
        for pool in self.pools:  # every result is in: a process still starting ends after
            pool.shutdown(wait=False, kill_workers=exc[0] is not None)  # it, unwaited for
        if self.threads is not None:
            import numba

            numba.set_num_threads(self.threads)
        return False


def _worker(storage, seed, settings, make, space, parts,
            deadline) -> tuple[list, str | None]:
    """One more process of a parallel selection: the shared study, a sampler of its own
    seed; it starts once the first process has taken the enqueued defaults (two processes
    popping one waiting trial race in optuna 2.x's RDB storage: a UNIQUE-constraint error),
    and not at all when the study is full or the budget is spent (it may have taken long
    to start)."""
    optuna = _optuna()
    study = optuna.load_study(study_name="tune", storage=storage,
                              sampler=_sampler(optuna, seed), pruner=_pruner(optuna))
    limit = settings["trials"]
    waiting = (optuna.trial.TrialState.WAITING,)
    while study.get_trials(deepcopy=False, states=waiting):
        if deadline is not None and time.time() > deadline:
            return [], "budget"
        time.sleep(0.05)
    if limit is not None and len(study.trials) >= limit:
        return [], None
    if deadline is not None and time.time() > deadline:
        return [], "budget"
    return _optimize(study, settings, make, space, parts, deadline, shared=True)


def _in_processes(study, storage, settings, make, space, parts, deadline,
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
        futures = [pool.submit(_worker, storage, seed + i, settings, make, space, parts,
                               deadline) for i in range(1, workers)]
        _, stopped = _optimize(study, settings, make, space, parts, deadline, shared=True)
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
            return str(t.user_attrs.get("fail_reason", "unknown"))[:200]
    return "none ran"


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
