"""One experiment: compose -> load -> fit -> evaluate -> one result record.

Models never read configs.  ``build_estimator`` turns the composed ``trainer``
and ``coding`` groups into constructor arguments of the estimator class that
the trainer names; a key the estimator does not know is a configuration error.
"""

from __future__ import annotations

import datetime as dt
import importlib
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from llc_bench.errors import ConfigError, DatasetError
from llc_bench.experiment.environment import code_revision, host_info, package_versions
from llc_bench.experiment.metrics import accuracy, hinge_loss
from llc_bench.experiment.results import ResultsStore, atomic_write_json, config_hash
from llc_bench.models._validation import labels_from_scores

# trainer.name -> "module:Class".  Imported only when a run names it.
ESTIMATORS = {
    "liblinear": "llc_bench.models.linear:LinearSVMClassifier",
    "libsvm": "llc_bench.models.kernel:KernelSVMClassifier",
    "llc_sgd": "llc_bench.models.llsvm:LLSVMClassifier",
    "ml3_cccp": "llc_bench.models.ml3:ML3Classifier",
    "occ": "llc_bench.models.occ:OCCClassifier",
    "svm_knn": "llc_bench.models.svm_knn:SVMKNNClassifier",
    "csvm": "llc_bench.models.csvm:ClusteredSVMClassifier",
    "ldkl": "llc_bench.models.ldkl:LDKLClassifier",
    "lcc_linear": "llc_bench.models.lcc_linear:LCCLinearSVMClassifier",
    "nystroem": "llc_bench.models.nystroem:NystroemSVMClassifier",
}

# Codings that a trainer implements itself: the coding group's keys (but not its name)
# become constructor arguments, with no ``coding`` argument.
BUILT_IN_CODINGS = {"ml3_cccp": "latent", "lcc_linear": "llc"}


def estimator_class(name: str) -> type:
    """The estimator class of ``trainer.name`` (a ConfigError if unknown)."""
    if name not in ESTIMATORS:
        raise ConfigError(f"trainer.name={name!r} is not one of {sorted(ESTIMATORS)}")
    module, _, attr = ESTIMATORS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


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
    name = trainer.pop("name", None)
    cls = estimator_class(name)
    known = set(cls().get_params())
    kwargs = {}
    coding_name = coding.pop("name", "none")
    if coding_name == BUILT_IN_CODINGS.get(name):
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
    kwargs["random_state"] = int(config["seed"])
    return cls(**{k: _plain(v) for k, v in kwargs.items()})


def add_numerics_version(config: dict) -> dict:
    """Put the estimator's ``numerics_version`` into the run config (so into its cache key);
    version 1 stays out (null), so the records made before versions existed keep their key."""
    version = int(getattr(build_estimator(config), "numerics_version", 1))
    config["numerics_version"] = version if version > 1 else None
    return config


def _evaluate(estimator, X, y, classes) -> tuple[dict, float]:
    start = time.perf_counter()
    scores = np.asarray(estimator.decision_function(X))
    elapsed = time.perf_counter() - start
    pred = labels_from_scores(np.asarray(estimator.classes_), scores)
    hinge = (hinge_loss(y, scores, classes=estimator.classes_)
             if getattr(estimator, "hinge_defined_", True) else None)
    return {"accuracy": accuracy(y, pred), "hinge": hinge}, elapsed


def _pin_custom_files(dataset: dict) -> None:
    """A user's own files enter the config (and so the cache key) by content, not only by
    path: an edited file must not hit the cache of the old one."""
    if dataset.get("kind") != "custom":
        return
    from llc_bench.data.custom import absolute_path
    from llc_bench.data.fetch import sha256_of

    pins = {}
    for role in ("train", "test"):
        if dataset.get(role):
            path = Path(absolute_path(dataset[role]))
            if not path.is_file():
                raise DatasetError(f"dataset.{role}={dataset[role]}: no such file ({path})")
            pins[role] = sha256_of(path)
    dataset["sha256"] = pins


def run_experiment(cfg: DictConfig | Mapping, output_dir: str | Path | None = None,
                   echo=print) -> dict:
    """Run (or fetch from the store) the experiment ``cfg`` describes; return its record."""
    from llc_bench.data import load_dataset

    config = (OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig)
              else dict(cfg))
    config.pop("hydra", None)
    add_numerics_version(config)
    _pin_custom_files(config["dataset"])
    key = config_hash(config)
    store = ResultsStore(config["results_dir"])
    if not config.get("force") and store.has(key):
        record = store.load(key)
        echo(summary_line(record, cached=True))
        return record

    data_cfg = config.get("data") or {}
    started = dt.datetime.now(dt.UTC)
    ds = load_dataset(config["dataset"], seed=int(config["seed"]), home=data_cfg.get("home"),
                      mirrors=tuple(data_cfg.get("mirrors") or ()),
                      download=bool(data_cfg.get("download", True)))
    estimator = build_estimator(config)
    eval_set = (ds.X_test, ds.y_test) if (config.get("history") or {}).get("test") else None
    t0 = time.perf_counter()
    estimator.fit(ds.X_train, ds.y_train, eval_set=eval_set)
    train_seconds = time.perf_counter() - t0
    test, test_seconds = _evaluate(estimator, ds.X_test, ds.y_test, ds.classes)
    train, _ = _evaluate(estimator, ds.X_train, ds.y_train, ds.classes)
    fit_info = dict(getattr(estimator, "fit_info_", {}) or {})

    timings = dict(ds.info.get("timings", {}))
    timings.update({f"fit_{k}": v for k, v in (fit_info.pop("timings", {}) or {}).items()})
    # "train": fitting the chosen model, without hyper-parameter CV and without the
    # per-epoch history (monitoring), as the papers report training time
    monitoring = timings.get("fit_cv", 0.0) + timings.get("fit_history", 0.0)
    timings.update({"train_total": train_seconds, "train": max(0.0, train_seconds - monitoring),
                    "test_total": test_seconds,
                    "test_per_sample": test_seconds / max(1, len(ds.y_test))})
    record = {
        "record_version": 1,
        "status": "complete",
        "config_hash": key,
        "config": config,
        "seed": int(config["seed"]),
        "dataset": config["dataset"]["name"],
        "model": (config.get("model") or {}).get("name", config["trainer"]["name"]),
        "data": {"n_train": int(len(ds.y_train)), "n_test": int(len(ds.y_test)),
                 "n_features": int(ds.n_features), "classes": list(ds.classes),
                 "task": ds.task, **{k: v for k, v in ds.info.items() if k != "timings"}},
        "metrics": {"train_accuracy": train["accuracy"], "test_accuracy": test["accuracy"],
                    "train_hinge": train["hinge"], "test_hinge": test["hinge"],
                    "hinge_note": ("one-vs-all hinge averaged over samples and classes"
                                   if len(ds.classes) > 2 else "mean binary hinge")
                    if test["hinge"] is not None else
                    "undefined: the decision values are not per-class margins"},
        "timings": timings,
        "model_size": fit_info.pop("model_size", {}),
        "history": fit_info.pop("history", []),
        "fit_info": fit_info,
        "started": started.isoformat(timespec="seconds"),
        "versions": package_versions(),
        "code_revision": code_revision(),
        "host": host_info(),
    }
    store.save(record)
    if output_dir is not None:
        atomic_write_json(Path(output_dir) / "record.json", record)
    echo(summary_line(record))
    return record


def summary_line(record: Mapping, cached: bool = False) -> str:
    m, t = record["metrics"], record["timings"]
    hinge = "n/a" if m.get("test_hinge") is None else f"{m['test_hinge']:.4f}"
    return (f"{record['dataset']} | {record['model']} | seed {record['seed']} | "
            f"test acc {100 * m['test_accuracy']:.2f}% | test hinge {hinge} | "
            f"train {t.get('train_total', float('nan')):.2f}s | "
            f"test {t.get('test_total', float('nan')):.3f}s | {record['config_hash']}"
            + (" (cached)" if cached else ""))
