"""One experiment: compose -> load -> fit -> evaluate -> one result record.

Models never read configs.  ``build_estimator`` turns the composed ``trainer``
and ``coding`` groups into constructor arguments of the estimator class that
the trainer names and checks them against the estimator's declared constraints;
an unknown key or a bad value is a configuration error (``trainer.C=nan: must be a
finite float > 0 or null``), raised before any data is loaded.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import math
import re
import shutil
import sys
import time
import warnings
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from llc_bench import progress, targets
from llc_bench.coding.local import LocalCoding
from llc_bench.data.rows import RowSource
from llc_bench.data.stream import pin_identity, streams_training_rows
from llc_bench.errors import ConfigError, FitError, LLCBenchWarning, ResultsError
from llc_bench.experiment.environment import (
    code_revision,
    host_info,
    package_versions,
    peak_rss_mb,
    thread_settings,
)
from llc_bench.experiment.keys import check_run_keys
from llc_bench.experiment.metrics import accuracy, hinge_loss
from llc_bench.experiment.runlog import run_window
from llc_bench.files import atomic_write_json
from llc_bench.models._validation import InvalidParameter, labels_from_scores, validate_params
from llc_bench.selection.selection import grid_edges
from llc_bench.store.costs import kernel_cv_note
from llc_bench.store.results import ResultsStore, config_hash

# trainer.name -> "module.Class": the ``_target_`` of each conf/trainer/*.yaml the package
# ships (``llc_bench.targets``); a run's own config names its class as ``trainer._target_``.
ESTIMATORS = targets.shipped("trainer")

# Codings that a trainer implements itself (the coding file's ``_target_`` is the trainer's
# estimator): the coding group's keys (but not its name) become constructor arguments, with
# no ``coding`` argument.
BUILT_IN_CODINGS = {trainer: coding for coding, made_by in targets.shipped("coding").items()
                    for trainer, target in ESTIMATORS.items() if made_by == target}


def estimator_class(trainer) -> type:
    """The estimator class of a ``trainer`` config (its ``_target_``, else the shipped
    trainer of its ``name``), or of a trainer name; a ConfigError if unknown or not a
    scikit-learn estimator."""
    from sklearn.base import BaseEstimator

    trainer = trainer if isinstance(trainer, Mapping) else {"name": trainer}
    target, name = trainer.get(targets.KEY), trainer.get("name")
    if target is None:
        if name not in ESTIMATORS:
            raise ConfigError(f"trainer.name={name!r} is not one of {sorted(ESTIMATORS)}")
        target = ESTIMATORS[name]
    cls = targets.import_class(target, f"trainer.{targets.KEY}")
    if not (issubclass(cls, BaseEstimator) and callable(getattr(cls, "fit", None))):
        raise ConfigError(f"trainer.{targets.KEY}={target}: {cls.__name__} is not a "
                          "scikit-learn estimator (a subclass of sklearn.base.BaseEstimator "
                          "with a fit method)")
    return cls


def preset_class(cls: type, model: str | None) -> type:
    """The class of model preset ``model`` whose trainer's estimator is ``cls``: the public
    subclass ``cls``'s module defines for it (its ``search_space`` is the preset's name:
    ``sapl`` is SAPLClassifier, the same parameters under the preset's defaults), so that
    ``SearchCV`` of the estimator searches the space a run of the preset does; else ``cls``."""
    if model is None:
        return cls
    for name, sub in sorted(vars(sys.modules[cls.__module__]).items()):
        if (isinstance(sub, type) and issubclass(sub, cls) and sub is not cls
                and not name.startswith("_") and sub.__module__ == cls.__module__
                and sub.__dict__.get("search_space") == model):
            return sub
    return cls


def _coding_class(coding: Mapping, name: str) -> type | None:
    """The class ``coding._target_`` (else the shipped coding ``name``) names, None for
    none; a local coding's class must carry that name (``LocalCoding.name``)."""
    target = coding.get(targets.KEY) or targets.shipped("coding").get(name)
    if target is None:
        return None
    cls = targets.import_class(target, f"coding.{targets.KEY}")
    if issubclass(cls, LocalCoding) and cls.name != name:
        raise ConfigError(f"coding.{targets.KEY}={target}: the class computes the coding "
                          f"{cls.name!r}, not coding.name={name!r}")
    return cls


def _show(value) -> str:
    """A config value as it would be typed on the command line."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, list | tuple):
        return "[" + ",".join(_show(v) for v in value) + "]"
    return str(value)


def check_seed(seed) -> int:
    """``seed`` as an int, or a ConfigError (numpy seeds are in [0, 2**32 - 1])."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed={_show(seed)}: must be an integer in [0, {2**32 - 1}]")
    return seed


def _leaves(node, prefix=""):
    """(dotted key, value) of every leaf of a nested config (list items are leaves too)."""
    for key, value in node.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, f"{prefix}{key}.")
        elif isinstance(value, list | tuple):
            yield from ((f"{prefix}{key}", v) for v in value)
        else:
            yield f"{prefix}{key}", value


def _plain(value):
    """YAML lists become tuples (hashable, as scikit-learn parameters should be)."""
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def build_estimator(config: Mapping):
    """The estimator a resolved run config describes (``trainer`` + ``coding`` + ``seed``)."""
    trainer = dict(config["trainer"])
    coding = dict(config.get("coding") or {"name": "none"})
    cls = preset_class(estimator_class(trainer), (config.get("model") or {}).get("name"))
    name = trainer.pop("name", None)
    trainer.pop(targets.KEY, None)
    known = set(cls().get_params())
    kwargs = {}
    coding_name = coding.pop("name", "none")
    coding_cls = _coding_class(coding, coding_name)  # a local coding registers on import
    coding.pop(targets.KEY, None)
    if coding_cls is cls:  # a coding the estimator computes itself
        kwargs.update(coding)
    elif coding_name != "none":
        if "coding" not in known:
            raise ConfigError(f"trainer {name} takes no local coding; got coding={coding_name}")
        kwargs["coding"] = coding_name
        kwargs.update(coding)
    kwargs.update(trainer)
    unknown = sorted(set(kwargs) - known)
    if unknown:
        group = "coding" if unknown[0] in coding else "trainer"
        raise ConfigError(f"{group}.{unknown[0]} is not a parameter of {cls.__name__} "
                          f"(known: {', '.join(sorted(known))})")
    kwargs["random_state"] = check_seed(config["seed"])
    estimator = cls(**{k: _plain(v) for k, v in kwargs.items()})
    try:
        validate_params(estimator)
    except InvalidParameter as err:
        def key(param: str) -> str:
            return ("coding" if param == "coding" else
                    f"coding.{param}" if param in coding and param not in trainer else
                    f"trainer.{param}")

        problem = re.sub(r"`(\w+)`", lambda m: key(m.group(1)), err.problem(none="null"))
        if (isinstance(err.value, float) and err.value.is_integer()
                and any(getattr(c, "type", None) is Integral for c in err.constraints)):
            problem += (f" (a number written with an exponent or a decimal point is read as a "
                        f"float: write {int(err.value)})")
        raise ConfigError(f"{key(err.name)}={_show(err.value)}: {problem}") from None
    return estimator


def add_numerics_version(config: dict, estimator=None) -> dict:
    """Put the estimator's ``numerics_version`` into the run config (so into its cache key);
    version 1 stays out (null), so the records made before versions existed keep their key.
    ``estimator``: the one the config builds, if built already."""
    estimator = build_estimator(config) if estimator is None else estimator
    version = int(getattr(estimator, "numerics_version", 1))
    config["numerics_version"] = version if version > 1 else None
    return config


@contextlib.contextmanager
def jit_compile_timer(timings: dict, key: str):
    """Add to ``timings[key]`` the seconds numba spent compiling inside the block (cache
    misses only: a kernel loaded from its on-disk cache costs nothing here).  A timing that
    includes compilation is not the method's cost; the tables mark it and
    ``tables --timing-only`` reruns it, by then from the cache."""
    from numba.core import event

    with event.install_timer("numba:compile", lambda s: timings.__setitem__(key, s)):
        yield
    timings.setdefault(key, 0.0)


#: rows per class of the warm-up fit (enough for the 5-fold CVs of the estimators)
WARM_UP_ROWS = 10


def warm_up(estimator, X, y, rows_per_class: int = WARM_UP_ROWS) -> bool:
    """Compile the numba kernels that fitting ``estimator`` and predicting with it will use,
    before (and outside) the timed fit: fit a copy on the first ``rows_per_class`` training
    rows of each class and score them (the same parameters, array types and dtypes, so the
    same kernel signatures).  The kernels are cached on disk, so this compiles once per
    machine and install; with a warm cache it is a fit on a few rows.  No bars, no warnings
    and no global random state touched (every fit seeds its own).  Best effort: a copy that
    cannot be fitted on so few rows returns False and leaves the compilation to the timed
    fit, where ``jit_compile_timer`` measures it.  A streamed source warms up on its rows
    in memory (its chunk kernels compile in the fit)."""
    from sklearn.base import clone

    y = np.asarray(y)
    rows = np.sort(np.concatenate([np.flatnonzero(y == c)[:rows_per_class]
                                   for c in np.unique(y)]))
    with progress.quiet(), warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore")
        Xw = X.take(rows) if isinstance(X, RowSource) else X[rows]
        clone(estimator).fit(Xw, y[rows]).decision_function(Xw)
        return True
    return False


def capped_anchors(config: Mapping, model_size: Mapping, n_train: int,
                   tuned: Mapping | None) -> str | None:
    """The warning for ``coding.n_anchors`` (asked, or chosen by the selection) above the
    anchors the fitted model has: capped at the number of training rows."""
    asked = ((tuned or {}).get("chosen") or {}).get(
        "coding.n_anchors", (config.get("coding") or {}).get("n_anchors"))
    m = model_size.get("n_anchors")
    if not isinstance(asked, int) or isinstance(asked, bool) or not m or m >= asked:
        return None
    return (f"coding.n_anchors={asked}: the model has {m} anchors (capped at the number of "
            f"training rows, {n_train})")


def small_data_warning(config: Mapping, model_size: Mapping, n_train: int,
                       tuned: Mapping | None) -> str | None:
    """The warning for a model with a linear model on each of m > 1 anchors whose anchors x
    features exceed the training rows (more weights per class than rows), saying what to
    do; None otherwise.  ``model_size`` is the fitted model's, ``tuned`` the selection's
    report (None: no selection)."""
    m, d = model_size.get("n_anchors"), model_size.get("n_features")
    per_class = model_size.get("n_parameters", 0) // max(1, model_size.get("n_outputs", 1))
    if not m or m < 2 or not d or per_class < m * d or m * d <= n_train:
        return None  # one linear model, codes only, or enough rows
    from llc_bench.selection.tune import preset_exists

    model = (config.get("model") or {}).get("name", config["trainer"]["name"])
    fewer = n_train // d  # the most anchors with no more weights than rows
    other = f"coding.n_anchors={fewer}" if fewer >= 2 else "model=linear"
    if "coding.n_anchors" in ((tuned or {}).get("chosen") or {}):
        hint = f"the selection chose m = {m}; {other} keeps the weights within the rows"
    elif tuned is not None:  # coding.n_anchors set on the command line
        hint = f"try {other}"
    else:
        select = "tune=on" if preset_exists(model, config["dataset"]["name"]) else "tune=auto"
        hint = f"let it select its settings on the training rows ({select}) or try {other}"
    return (f"{model} fits {m} anchors x {d} features = {m * d} weights per class on "
            f"{n_train} training rows, more weights than rows: it may overfit; {hint}")


def _evaluate(estimator, X, y, classes) -> tuple[dict, float]:
    start = time.perf_counter()
    scores = np.asarray(estimator.decision_function(X))
    elapsed = time.perf_counter() - start
    if not np.isfinite(scores).all():  # a diverged fit: no result to report
        raise FitError(f"{type(estimator).__name__}: {int((~np.isfinite(scores)).sum())} "
                       "decision values are not finite (NaN or inf): the fit diverged; check "
                       "the features' scale (dataset.scaling) and the trainer's settings")
    pred = labels_from_scores(np.asarray(estimator.classes_), scores)
    hinge = (hinge_loss(y, scores, classes=estimator.classes_)
             if getattr(estimator, "hinge_defined_", True) else None)
    return {"accuracy": accuracy(y, pred), "hinge": hinge}, elapsed


def _evaluate_train(estimator, X, y, classes) -> dict:
    """Training metrics; a streamed training split chunk by chunk (weighted means)."""
    if not isinstance(X, RowSource):
        return _evaluate(estimator, X, y, classes)[0]
    parts = []
    for c, Xc in X.chunks():
        lo, hi = X.bounds(c)
        parts.append((hi - lo, _evaluate(estimator, Xc, y[lo:hi], classes)[0]))
    n = sum(w for w, _ in parts)
    return {key: None if parts[0][1][key] is None else
            float(sum(w * p[key] for w, p in parts) / n) for key in ("accuracy", "hinge")}


def _finite(value):
    """``value`` with every NaN or infinite float replaced by None (JSON null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def discard_run_dir(output_dir, results_dir) -> None:
    """A cache hit (or a run stopped by a config error) leaves no Hydra run directory:
    remove ``output_dir`` when it holds only what Hydra put there (``.hydra/``, an empty
    log, a sweep's ``multirun.yaml``), then the directories this leaves empty, up to
    ``results_dir``."""
    out, stop = Path(output_dir).resolve(), Path(results_dir).resolve()
    if not out.is_dir() or stop not in out.parents:
        return
    for path in out.rglob("*"):
        if path.is_file() and path.parent.name != ".hydra" and path.name != "multirun.yaml" \
                and not (path.suffix == ".log" and path.stat().st_size == 0):
            return
    shutil.rmtree(out, ignore_errors=True)
    for parent in out.parents:
        if parent == stop:
            break
        try:
            parent.rmdir()
        except OSError:  # not empty
            break


def pin_custom_files(dataset: dict) -> None:
    """A user's own files enter the config (and so the cache key) by content, not only by
    path: an edited file must not hit the cache of the old one."""
    if dataset.get("kind") != "custom":
        return
    from llc_bench.data.custom import own_file
    from llc_bench.data.fetch import sha256_of

    pins = {}
    for role in ("train", "test"):
        if dataset.get(role):
            pins[role] = sha256_of(own_file(role, dataset[role]))
    dataset["sha256"] = pins


def _check_streaming(dataset: dict, estimator) -> None:
    """Refuse, in one line with the way out, a model that cannot take a streamed training
    split (``supports_streaming``) on a dataset that streams one."""
    if streams_training_rows(dataset) and not getattr(estimator, "supports_streaming", False):
        raise ConfigError(
            f"{type(estimator).__name__} cannot stream dataset {dataset.get('name')!r}: it "
            "needs every training row in memory (only the llc_sgd models - LL-SVM, LCC+SVM, "
            "SAPL, SAPL-lcc, JO, 1-anchor linear SGD - stream); set dataset.max_train=N "
            "(e.g. 100000) to train on a seeded subsample held in memory")


def prepare_config(config: dict, fixed: tuple = (), estimator=None) -> dict:
    """The numerics version and the resolved ``tune`` block in the config (so in its cache
    key); ``fixed``: the keys set on the command line, left out of a search; ``estimator``:
    the one the config builds, if built already."""
    from llc_bench.selection.tune import resolve

    return resolve(add_numerics_version(config, estimator), fixed)


def run_experiment(cfg: DictConfig | Mapping, output_dir: str | Path | None = None,
                   echo=print, fixed: tuple = ()) -> dict:
    """Run (or fetch from the store) the experiment ``cfg`` describes; return its record.
    ``fixed``: the config keys the user set (a search leaves them as they are)."""
    config = (OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig)
              else copy.deepcopy(dict(cfg)))
    config.pop("hydra", None)
    config.pop("search", None)  # conf/search/<model>.yaml's notes for tune=auto (a -m sweep)
    check_run_keys(config)  # a key nothing reads (+foo=1, +data.hom=...)
    for key, value in _leaves(config):  # a mandatory key left unset
        if isinstance(value, str) and value == "???":
            raise ConfigError(f"{key} must be set: add {key}=... to the command line")
    seed = check_seed(config.get("seed"))
    estimator = build_estimator(config)  # every parameter checked before any data is loaded
    for key, value in _leaves(config):  # records are strict JSON
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value}: must be a finite number")
    from llc_bench.data.registry import resolve_spec

    resolve_spec(config["dataset"])  # the dataset's keys and values, before the store
    from llc_bench.experiment.calibration import check_setting

    check_setting(config.get("calibration"))
    if not isinstance(config.get("save_model", False), bool):
        raise ConfigError(f"save_model={_show(config['save_model'])}: expected true or false")
    model_keys = copy.deepcopy((config["trainer"], config.get("coding")))
    prepare_config(config, fixed, estimator)
    if (config["trainer"], config.get("coding")) != model_keys:  # a one-point search space
        estimator = build_estimator(config)  # set a value
    pin_custom_files(config["dataset"])
    _check_streaming(config["dataset"], estimator)
    pin_identity(config["dataset"], config.get("data") or {})  # out-of-core data: sha256
    key = config_hash(config)
    store = ResultsStore(config["results_dir"])
    model = bool(config.get("save_model"))
    if not config.get("force") and _cache_hit(store, key, model):
        return _cached(store, key, output_dir, config, echo)
    store.check_writable(models=model)
    with store.lock(key, on_wait=lambda: echo(f"waiting for another run of {key} ...")):
        if not config.get("force") and _cache_hit(store, key, model):  # the run we waited for
            return _cached(store, key, output_dir, config, echo)
        with run_window(store.root, key) as window, \
                progress.run_status(run_phases(config)):  # one status line on a terminal
            return _run(config, key, seed, estimator, store, output_dir, progress.above(echo),
                        window)


def run_phases(config: Mapping) -> list[str]:
    """The phases of a run, as its status line counts them."""
    return ["load", "compile", *(["tune"] if config.get("tune") else []), "fit", "evaluate"]


def _cache_hit(store, key, model: bool = False) -> bool:
    """A record of this config is in the store, and was scored as its config says: a run
    of ``dataset=file`` with ``dataset.validation`` made before own files honoured it
    scored the test split (its ``data.validation`` is null) and is run again.  With
    ``model`` (``save_model=true``) its model file must be there too."""
    if not store.has(key):
        return False
    record = store.load(key)
    if model and not (record.get("model_file")
                      and (store.root / record["model_file"]).is_file()):
        return False
    return ((record.get("config") or {}).get("dataset") or {}).get("validation") is None \
        or (record.get("data") or {}).get("validation") is not None


def _cached(store, key, output_dir, config, echo) -> dict:
    record = store.load(key)
    if output_dir is not None:
        discard_run_dir(output_dir, config["results_dir"])
    echo(summary_line(record, cached=True))
    return record


def _refit_keywords(config, ds, estimator, tuned: dict) -> dict:
    """The ``fit`` keywords of a selection's choice: fixed anchors from the chosen trial's
    training rows when it was scored on held-out rows (``tune.trial_anchors``, which
    ``tune.resolve`` keeps for fixed-anchor models only), and the dual CD init's pass cap
    the trials ran under (``tune.choice_init_max_iter``, kept where the init is the dual CD
    one); the report says so."""
    from llc_bench.models._base import TrialCache, takes_trial_cache
    from llc_bench.selection.tune import CHOICE_PASS_CAP, trial_rows

    if not takes_trial_cache(type(estimator).fit):
        return {}
    rows = trial_rows(config, ds.X_train, ds.y_train)
    cap = config["tune"].get(CHOICE_PASS_CAP)
    if rows is None and cap is None:
        return {}
    if rows is not None:
        tuned["anchor_rows"] = int(len(rows))
    if cap is not None:
        tuned["choice_init_max_iter"] = int(cap)
    return {"trial_cache": TrialCache(memo=False, pass_cap=cap, anchor_rows=(
        None if rows is None else (rows, len(ds.y_train))))}


def _run(config, key, seed, estimator, store, output_dir, echo, window=None) -> dict:
    """Load the data, fit, evaluate, save the record (the store's lock is held)."""
    started = dt.datetime.now(dt.UTC)
    ds, data = _load(config, seed, echo)
    jit: dict = {}
    estimator, tuned, train_seconds = _fit(config, ds, estimator, jit, echo)
    progress.phase("evaluate", "test and training rows")
    with jit_compile_timer(jit, "jit_compile_test"):
        test, test_seconds = _evaluate(estimator, ds.X_test, ds.y_test, ds.classes)
    train = _evaluate_train(estimator, ds.X_train, ds.y_train, ds.classes)
    fit_info = _fit_info(config, estimator, len(ds.y_train), tuned)
    kept, probabilities = _calibrate(config, estimator, ds, seed)
    timings = _timings(ds, fit_info, jit, train_seconds, test_seconds, tuned, probabilities)
    record = {
        "record_version": 1,
        "status": "complete",
        "config_hash": key,
        "config": config,
        "seed": seed,
        "dataset": config["dataset"]["name"],
        "model": (config.get("model") or {}).get("name", config["trainer"]["name"]),
        "data": data,
        "metrics": _metrics(train, test, probabilities, len(ds.classes)),
        "timings": timings,
        **_fitted(fit_info, tuned, probabilities),
        **_provenance(started, window),
    }
    record = _finite(record)  # strict JSON: a NaN metric (or timing) is recorded as null
    return _save(record, kept, ds, store, output_dir, echo)


def _load(config, seed, echo) -> tuple:
    """The run's dataset and the record's ``data`` entry (sizes, classes, files), said."""
    from llc_bench.data import load_dataset
    from llc_bench.store.query import data_line

    data_cfg = config.get("data") or {}
    progress.phase("load", config["dataset"]["name"])
    ds = load_dataset(config["dataset"], seed=seed, home=data_cfg.get("home"),
                      mirrors=tuple(data_cfg.get("mirrors") or ()),
                      download=bool(data_cfg.get("download", True)))
    data = {"n_train": int(len(ds.y_train)), "n_test": int(len(ds.y_test)),
            "n_features": int(ds.n_features), "classes": list(ds.classes), "task": ds.task,
            **{k: v for k, v in ds.info.items() if k != "timings"}}
    echo(data_line(config["dataset"]["name"], data, ds.info.get("timings", {})))
    costly = (None if config.get("tune") else  # a selection replaces the grid CV
              kernel_cv_note(config.get("trainer") or {}, data["n_train"]))
    if costly:  # said before it is paid
        print(f"llc-bench: note: {costly}", file=sys.stderr, flush=True)
    return ds, data


def _fit(config, ds, estimator, jit: dict, echo) -> tuple:
    """Compile the kernels on a few rows, select the setting (``tune``), fit: the fitted
    estimator, the selection's report (None without one) and the fit's seconds."""
    eval_set = (ds.X_test, ds.y_test) if (config.get("history") or {}).get("test") else None
    progress.phase("compile", "numba kernels (cached after the first run)")
    with jit_compile_timer(jit, "jit_compile_warmup"):  # compilation outside the timed fit
        warm_up(estimator, ds.X_train, ds.y_train)
    tuned, refit = None, {}
    if config.get("tune"):  # on training rows only: the test split is not passed in
        estimator, tuned, refit = _select(config, ds, jit, echo)
    progress.phase("fit", (config.get("model") or {}).get("name"))
    with jit_compile_timer(jit, "jit_compile_train"):
        t0 = time.perf_counter()
        monitor = {} if eval_set is None else {"eval_set": eval_set}  # a plain estimator's
        estimator.fit(ds.X_train, ds.y_train, **monitor, **refit)   # fit takes none
        train_seconds = time.perf_counter() - t0
    return estimator, tuned, train_seconds


def _select(config, ds, jit: dict, echo) -> tuple:
    """``tune``: the chosen setting's estimator, the selection's report, and the keywords
    of its refit (the trials' anchors kept)."""
    from llc_bench.selection.tune import select, with_params

    progress.phase("tune")
    with jit_compile_timer(jit, "jit_compile_tune"):
        chosen, tuned = select(config, ds.X_train, ds.y_train, build_estimator, echo=echo)
    estimator = build_estimator(with_params(config, chosen))
    return estimator, tuned, _refit_keywords(config, ds, estimator, tuned)


def _fit_info(config, estimator, n_train: int, tuned) -> dict:
    """The fitted estimator's report, with the notes on its size (capped anchors, few rows
    per parameter) added and warned."""
    fit_info = dict(getattr(estimator, "fit_info_", {}) or {})
    size = fit_info.get("model_size") or {}
    for note in (capped_anchors(config, size, n_train, tuned),
                 small_data_warning(config, size, n_train, tuned)):
        if note:
            fit_info["notes"] = [*(fit_info.get("notes") or []), note]
            warnings.warn(note, LLCBenchWarning, stacklevel=1)
    return fit_info


def _calibrate(config, estimator, ds, seed) -> tuple:
    """The model to keep (calibrated with ``calibration``) and its probability metrics."""
    if not config.get("calibration"):
        return estimator, {}
    from llc_bench.experiment.calibration import calibrate, probability_metrics

    if isinstance(ds.X_train, RowSource):
        raise ConfigError("calibration needs the training rows in memory; a streamed "
                          "dataset cannot be calibrated (calibration=null)")
    t_cal = time.perf_counter()  # probabilities: calibrated on held-out training rows
    kept = calibrate(estimator, ds.X_train, ds.y_train, config["calibration"], seed)
    probabilities = {**probability_metrics(kept, ds.X_test, ds.y_test,
                                           np.asarray(estimator.classes_)),
                     "calibration": kept.method,
                     "calibration_seconds": time.perf_counter() - t_cal}
    return kept, probabilities


def _timings(ds, fit_info: dict, jit: dict, train_seconds: float, test_seconds: float,
             tuned, probabilities: dict) -> dict:
    """The record's timings: the data's, the fit's phases (moved out of ``fit_info``),
    train and test times, compilation, selection and calibration."""
    timings = dict(ds.info.get("timings", {}))
    timings.update({f"fit_{k}": v for k, v in (fit_info.pop("timings", {}) or {}).items()})
    # "train": fitting the chosen model, without hyper-parameter CV, without the per-epoch
    # history (monitoring), as the papers report training time, and without numba compiling
    # what the warm-up did not (numba's timer counts nested compilations once)
    monitoring = timings.get("fit_cv", 0.0) + timings.get("fit_history", 0.0)
    train_time = train_seconds - monitoring - jit["jit_compile_train"]
    timings.update({"train_total": train_seconds, "train": max(0.0, train_time),
                    "test_total": test_seconds,
                    "test_per_sample": test_seconds / max(1, len(ds.y_test)), **jit})
    if tuned is not None:
        timings["tune"] = tuned["seconds"]
    if probabilities:
        timings["calibration"] = probabilities["calibration_seconds"]
    return timings


def _metrics(train: dict, test: dict, probabilities: dict, n_classes: int) -> dict:
    """Accuracies and hinge losses on the training and test rows (and probability scores)."""
    return {"train_accuracy": train["accuracy"], "test_accuracy": test["accuracy"],
            "train_hinge": train["hinge"], "test_hinge": test["hinge"],
            "hinge_note": ("one-vs-all hinge averaged over samples and classes"
                           if n_classes > 2 else "mean binary hinge")
            if test["hinge"] is not None else
            "undefined: the decision values are not per-class margins",
            **{k: v for k, v in probabilities.items() if k.startswith("test_")}}


def _fitted(fit_info: dict, tuned, probabilities: dict) -> dict:
    """The record's entries on the fitted model: size, history, report, grid edges, the
    selection's report and the calibration."""
    return {
        "model_size": fit_info.pop("model_size", {}),
        "history": fit_info.pop("history", []),
        "fit_info": fit_info,
        "at_grid_edge": grid_edges(fit_info) + (tuned or {}).get("at_edge", []),
        **({"tune": tuned} if tuned is not None else {}),
        **({"calibration": {"method": probabilities["calibration"],
                            "folds": "stratified 3-fold of the training rows (out-of-fold "
                                     "decision values), seeded by the run seed"}}
           if probabilities else {}),
    }


def _provenance(started, window) -> dict:
    """When, with what code and packages, on which host and threads the run ran."""
    return {
        "started": started.isoformat(timespec="seconds"),
        "versions": package_versions(),
        "code_revision": code_revision(),
        "host": host_info(),
        "threads": thread_settings(),
        "memory": {"peak_rss_mb": peak_rss_mb(),
                   "scope": "the whole process up to the end of this run (a multi-run "
                            "process reports its peak so far)"},
        "run_window": window.record() if window is not None else None,
    }


def _save(record: dict, kept, ds, store, output_dir, echo) -> dict:
    """Write the model file (``save_model``), then the record; say what the run did."""
    from llc_bench.store.query import describe_run

    key = record["config_hash"]
    if record["config"].get("save_model"):  # the model file first: a record never points
        from llc_bench.serving.model_files import SUFFIX, save_model  # to nothing

        relative = f"models/{key}{SUFFIX}"
        try:
            save_model(kept, store.root / relative, preprocess=ds.preprocess,
                       config_hash=key, versions=record["versions"])
        except OSError as err:  # the run is kept: its record, without a model file
            kept_at = store.save(record)
            raise ResultsError(f"save_model=true: cannot write {store.root / relative} "
                               f"({err.strerror or err}); the run's record is kept in "
                               f"{kept_at}, and the same run with save_model=true fits "
                               "again to write the model") from None
        record["model_file"] = relative
    path = store.save(record)
    if output_dir is not None:
        atomic_write_json(Path(output_dir) / "record.json", record)
    for line in describe_run(record, path, data=False):  # model, phases, record; the result
        echo(line)
    echo(summary_line(record))
    return record


def compile_seconds(timings: Mapping) -> float:
    """Seconds numba spent compiling kernels for the fit and the prediction of a run (the
    warm-up, and what still compiled inside the timed fit or prediction); a selection's
    compilation is part of its own time."""
    return sum(timings.get(f"jit_compile_{part}") or 0.0 for part in ("warmup", "train", "test"))


def _cut(record: Mapping) -> str:
    """What may make a selection's choice differ from the same command's elsewhere, on the
    run's line: a seconds cap that ended it (another machine), trials in several processes
    (a serial run)."""
    tuned = record.get("tune") or {}
    notes = []
    if tuned.get("stopped_by") == "budget":
        notes.append(f"cut by tune.budget_s={(tuned.get('budget') or {}).get('budget_s')}")
    if (tuned.get("workers") or 1) > 1 and not tuned.get("batch"):  # rounds: the same choice
        notes.append(f"trials in {tuned['workers']} processes")
    return "".join(f", {note}" for note in notes)


def summary_line(record: Mapping, cached: bool = False) -> str:
    """One line per run.  "test" is "val" when the run was scored on held-out training rows
    (``dataset.validation``); "train" is the time of fitting the chosen model, as the papers
    report it (without hyper-parameter CV, shown apart when there was one, without the
    per-epoch history and without numba's compilation, shown apart when there was some);
    "test" the time of the decision values on the test rows."""
    m, t = record["metrics"], record["timings"]
    split = "val" if (record.get("data") or {}).get("validation") else "test"
    hinge = "n/a" if m.get("test_hinge") is None else f"{m['test_hinge']:.4f}"
    acc = "n/a" if m.get("test_accuracy") is None else f"{100 * m['test_accuracy']:.2f}%"
    train = t.get("train", t.get("train_total", float("nan")))
    cv, tune = t.get("fit_cv") or 0.0, t.get("tune")
    return (f"{record['dataset']} | {record['model']} | seed {record['seed']} | "
            f"{split} acc {acc} | {split} hinge {hinge} | train {train:.2f}s"
            + (f" (+ CV {cv:.2f}s)" if cv >= 0.005 else "")
            + (f" (+ tune {tune:.1f}s{_cut(record)})" if tune is not None else "")
            + (f" (+ compile {compile_seconds(t):.1f}s)" if compile_seconds(t) >= 0.05 else "")
            + f" | {split} {t.get('test_total', float('nan')):.3f}s | {record['config_hash']}"
            + (" (cached)" if cached else ""))
