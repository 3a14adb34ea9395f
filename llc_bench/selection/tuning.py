"""Tuning with Hydra's Optuna sweeper, on held-out training rows only.

``llc-bench run -m model=llsvm dataset=banana +search=llsvm +dataset.validation=0.25``
runs a seeded TPE study over the search space ``conf/search/llsvm.yaml``; each trial is an
ordinary run (a record in the store) whose objective is the accuracy on the 25% of the
training rows held out (``dataset.validation``); the test set is never read.  The study is
kept in ``<results_dir>/optuna.db`` (SQLite) under a name of what its trials run on
(:func:`study_name`), so the same command again resumes it (with new settings: the
sampler seeded by its trials so far, :func:`resumed_seed`) and a sweep on other files
starts its own.  Then

``llc-bench tune llsvm banana --from-sweep``

writes the best trial's parameters to ``conf/tuned/llsvm_banana.yaml``, with a comment
saying how they were chosen.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from pathlib import Path

from llc_bench.errors import ConfigError, ResultsError

REPO_CONF = Path(__file__).resolve().parents[2] / "conf"
STUDY_FILE = "optuna.db"


def check_sweep(config) -> None:
    """A ConfigError when a tuning sweeper (Optuna) would score runs on the test set; a
    ResultsError when the study file it would resume is not a readable database; the
    error of own files that cannot be read (the study is named by their content)."""
    target = str(config.hydra.sweeper.get("_target_", ""))
    if "optuna" not in target.lower():
        return
    if config.dataset.get("validation") is None:
        raise ConfigError("tuning with the Optuna sweeper needs +dataset.validation=F (e.g. "
                          "0.25): trials are scored on held-out training rows, never the test "
                          "set")
    check_study_file(config.results_dir)
    _study_name_of_sweep(_root_=config)  # own files read here: an error is one line


def storage_url(results_dir) -> str:
    """The SQLite address of ``<results_dir>/optuna.db``: a SQLite URI whose path is
    percent-escaped, so a ``?``, ``#``, ``%`` or space in the folder's name stays part of
    the path (unescaped, ``a?b/optuna.db`` was the database ``a``)."""
    from llc_bench.selection.search import sqlite_url

    return sqlite_url(Path(results_dir) / STUDY_FILE)


def check_study_file(results_dir) -> None:
    """A ResultsError naming ``<results_dir>/optuna.db`` when it is there and not a
    readable SQLite database (a truncated copy, another file by that name)."""
    import sqlite3
    from urllib.parse import quote

    path = Path(results_dir) / STUDY_FILE
    if not path.is_file():
        return
    problem = None
    try:
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            rows = db.execute("PRAGMA quick_check").fetchall()
        if rows != [("ok",)]:
            problem = "; ".join(str(r[0]) for r in rows[:3])
    except sqlite3.OperationalError as err:
        if "locked" not in str(err):  # a sweep writing it now: not a damage
            problem = str(err)
    except sqlite3.Error as err:
        problem = str(err)
    if problem:
        raise ResultsError(f"{path}: not a readable Optuna study file (SQLite: {problem}); "
                           "delete it (its studies are lost; the run records stay) or give "
                           "another results_dir=DIR")


def _digest(value) -> str:
    import hashlib
    import json

    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def study_prefix(model: str, dataset: str, seed: int = 0) -> str:
    """The start of the names of the studies of a model on a dataset config and seed."""
    return f"{model}_{dataset}_seed{seed}"


def study_name(config: Mapping, space: Mapping | None) -> str:
    """``<model>_<dataset>_seed<seed>_<data>_<setting>``: the study of a sweep, named by
    what its trials run on.  ``data``: the content (sha256) of own files, as the runner
    pins them (a named dataset: its name); ``setting``: the model, its trainer and coding
    settings, the dataset's options (a subsample, the held-out fraction) and the searched
    space.  Sweeps on two different files, or of two settings, never share a study."""
    dataset = dict(config["dataset"])
    model = (config.get("model") or {}).get("name") or config["trainer"]["name"]
    data = _data_part(dataset) or _digest({"name": dataset.get("name"), "sha256": None})
    def group(key):  # its class (``_target_``) is not a setting
        value = config.get(key)
        return {k: v for k, v in value.items() if k != "_target_"} if value else value

    setting = _digest({
        "model": config.get("model"), "trainer": group("trainer"),
        "coding": group("coding"), "space": dict(space or {}),
        "dataset": {k: v for k, v in dataset.items()
                    if k not in ("train", "test", "sha256", "source_sha256")}})
    return f"{study_prefix(model, dataset['name'], config.get('seed', 0))}_{data}_{setting}"


def _study_name_of_sweep(*, _root_) -> str:
    """The resolver ``${llc_bench.study_name:}`` of ``conf/search/_optuna.yaml``."""
    from omegaconf import OmegaConf

    config = {key: OmegaConf.to_container(_root_[key], resolve=True)
              for key in ("model", "dataset", "trainer", "coding") if key in _root_}
    config["seed"] = _root_.seed
    return study_name(config, OmegaConf.to_container(_root_.hydra.sweeper.params))


def register_resolvers() -> None:
    """The resolvers ``conf/search/_optuna.yaml`` names its study and storage by."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("llc_bench.study_name"):
        OmegaConf.register_new_resolver("llc_bench.study_name", _study_name_of_sweep)
        OmegaConf.register_new_resolver("llc_bench.optuna_storage", storage_url)
        OmegaConf.register_new_resolver("llc_bench.sampler_seed", _sampler_seed_of_sweep)


def resumed_seed(seed: int, done: int) -> int:
    """The sampler seed of a study resumed after ``done`` trials (``seed`` from scratch)."""
    import numpy as np

    return int(np.random.SeedSequence([seed, done]).generate_state(1)[0]) if done else seed


def _sampler_seed_of_sweep(seed, *, _root_) -> int:
    """The resolver ``${llc_bench.sampler_seed:${seed}}`` of ``conf/search/_optuna.yaml``:
    ``seed`` for a new study (the same command, the same trials), :func:`resumed_seed` of
    the trials already in a resumed one (with the first seed, ``N more trials`` proposed
    the first N settings again: all cache hits)."""
    if not (Path(_root_.results_dir) / STUDY_FILE).is_file():
        return int(seed)
    name = _study_name_of_sweep(_root_=_root_)
    for study in _optuna().study.get_all_study_summaries(storage=storage_url(_root_.results_dir)):
        if study.study_name == name:
            return resumed_seed(int(seed), study.n_trials)
    return int(seed)


def _nested(params: dict) -> dict:
    """``{"trainer.lambda_": 1e-5}`` -> ``{"trainer": {"lambda_": 1e-5}}``."""
    out: dict = {}
    for key, value in sorted(params.items()):
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _data_part(dataset: Mapping) -> str | None:
    """The data part of a study name (None while own files are not named)."""
    dataset = copy.deepcopy(dict(dataset))
    if dataset.get("kind") == "custom" and "sha256" not in dataset:
        if any(dataset.get(role) == "???" for role in ("train", "test")):
            return None
        from llc_bench.experiment.runner import pin_custom_files

        pin_custom_files(dataset)
    return _digest({"name": dataset.get("name"), "sha256": dataset.get("sha256")})


def sweep_study_name(model: str, dataset: str, seed: int = 0, overrides=()) -> str | None:
    """The study name of ``llc-bench run -m model=MODEL dataset=DATASET seed=SEED
    +search=MODEL [overrides]`` (None when the config needs more, e.g. own files)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[f"model={model}", f"dataset={dataset}", f"seed={seed}",
                                        f"+search={model}", *overrides],
                      return_hydra_config=True)
    if _data_part(OmegaConf.to_container(cfg.dataset, resolve=True)) is None:
        return None
    return _study_name_of_sweep(_root_=cfg)


def find_study(results_dir, model: str, dataset: str, seed: int = 0, overrides=()) -> str:
    """The name of the study the sweep ``model=MODEL dataset=DATASET seed=SEED +search=MODEL
    [overrides]`` kept in ``<results_dir>/optuna.db``: that very study, else the one study
    of the same data there (a ResultsError when there is none or more than one: the best of
    several would be the best of a mix of data or settings)."""
    optuna = _optuna()
    url, db = storage_url(results_dir), Path(results_dir) / STUDY_FILE
    sweep = (f"llc-bench run -m model={model} dataset={dataset} seed={seed} +search={model} "
             "+dataset.validation=0.25")
    if not db.is_file():
        raise ResultsError(f"no Optuna studies in {results_dir} (run the sweep first: "
                           f"{sweep})")
    check_study_file(results_dir)
    names = [s.study_name for s in optuna.study.get_all_study_summaries(storage=url)]
    prefix = study_prefix(model, dataset, seed)
    ours = [n for n in names if n.startswith(prefix + "_")]
    exact = sweep_study_name(model, dataset, seed, overrides)
    if exact in ours:
        return exact
    same = [n for n in ours if exact is None or n.startswith(exact.rsplit("_", 1)[0] + "_")]
    if len(same) == 1:
        return same[0]
    if not same:
        raise ResultsError(f"no study of {model} on {dataset} (seed {seed})"
                           + (" on these files" if exact and ours else "")
                           + f" in {db} (studies: {', '.join(names) or 'none'}; run the sweep "
                           f"first: {sweep})")
    raise ResultsError(f"{len(same)} studies of {model} on {dataset} (seed {seed}) in {db}, "
                       f"of other files or settings ({', '.join(same)}): give the sweep's own "
                       "overrides (e.g. dataset.train=PATH dataset.max_train=N "
                       "+dataset.validation=0.25) to name one")


def best_trial(results_dir, model: str, dataset: str, seed: int = 0, overrides=()):
    """The best trial of the sweep's study (:func:`find_study`) and the study (a
    ResultsError if there is none)."""
    optuna = _optuna()
    name = find_study(results_dir, model, dataset, seed, overrides)
    study = optuna.load_study(study_name=name, storage=storage_url(results_dir))
    try:
        return study.best_trial, study
    except ValueError:
        raise ResultsError(f"study {name!r} has no completed trial") from None


def _optuna():
    """optuna, imported quietly (a ConfigError when it is not installed)."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ConfigError("tuning needs the Optuna sweeper: pip install 'llc-bench[tune]'") \
            from None
    from llc_bench.selection.search import _optuna as quiet

    return quiet()


def _trial_config(results_dir, name: str, seed: int, params: Mapping) -> dict:
    """The run config of the best trial's record (found by its parameters and the study's
    data), or {}."""
    from llc_bench.selection.tune import get_dotted
    from llc_bench.store.results import ResultsStore

    data = name.rsplit("_", 2)[-2]
    for _, record, _ in ResultsStore(results_dir).records():
        config = (record or {}).get("config") or {}
        dataset = config.get("dataset") or {}
        if (config.get("seed") == seed and dataset.get("validation") is not None
                and _digest({"name": dataset.get("name"), "sha256": dataset.get("sha256")})
                == data and all(get_dotted(config, k) == v for k, v in params.items())):
            return config
    return {}


def _sweep_overrides(model: str, dataset: str, seed: int, config: Mapping,
                     params: Mapping) -> list[str]:
    """The overrides the sweep of a trial's run ``config`` was given beside the searched
    ``params``: its trainer, coding and dataset keys that differ from the composed
    ``model=MODEL dataset=DATASET`` (a subsample, the held-out fraction, own files)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import _show
    from llc_bench.store.query import flatten

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        composed = flatten(OmegaConf.to_container(compose("run", overrides=[
            f"model={model}", f"dataset={dataset}", f"seed={seed}", "tune=off"]), resolve=True))
    out = []
    for key, value in flatten(config).items():
        if (key.split(".")[0] in ("trainer", "coding", "dataset") and key not in params
                and not key.startswith(("dataset.sha256", "dataset.source_sha256"))
                and composed.get(key, out) != value):
            out.append(f"{'' if key in composed else '+'}{key}={_show(value)}")
    return out


def portable(text: str) -> str:
    """``text`` (a path, an override) without the absolute paths of this machine: a path
    in the project (or the working directory) relative to it, another one by its name."""
    import re

    bases = (REPO_CONF.parent.resolve(), Path.cwd().resolve())

    def short(match) -> str:
        path = Path(match.group(0))
        for base in bases:
            with contextlib.suppress(ValueError):
                return str(path.resolve().relative_to(base))
        return path.name or str(path)

    return re.sub(r"(?<![\w.])/[^\s,\]'\"]+", short, text)


#: overrides that say where data and results are found, not what is computed
WHERE_KEYS = ("data.home", "data.mirrors", "data.download", "results_dir", "progress")


def reproducible(overrides) -> list[str]:
    """The overrides of a command as its preset header gives them: without those that
    only say where things are (``WHERE_KEYS``), paths made portable."""
    keep = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in WHERE_KEYS]
    return [portable(o) for o in keep]


def write_tuned(results_dir, model: str, dataset: str, seed: int = 0, out=None,
                force: bool = False, overrides=()) -> Path:
    """Write the best parameters of the sweep's study (:func:`find_study`) to ``out``
    (default ``conf/tuned/<model>_<dataset>.yaml``) as a Hydra ``_global_`` preset."""
    import shlex

    from omegaconf import OmegaConf

    from llc_bench.files import atomic_write_text
    from llc_bench.selection.tune import get_dotted

    trial, study = best_trial(results_dir, model, dataset, seed, overrides)
    out = Path(out) if out else REPO_CONF / "tuned" / f"{model}_{dataset}.yaml"
    if out.exists() and not force:
        raise ConfigError(f"{out} exists: pass --force to replace it (its other keys are lost)")
    done = sum(1 for t in study.trials if t.state.name == "COMPLETE")
    ran = _trial_config(results_dir, study.study_name, seed, trial.params)
    validation = get_dotted(ran, "dataset.validation")
    max_train = get_dotted(ran, "dataset.max_train")
    held = (f"{validation} of the training part held out (+dataset.validation={validation})"
            if validation else "held-out training rows (+dataset.validation)")
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    extra = reproducible([*overrides, *(o for o in _sweep_overrides(
        model, dataset, seed, ran, trial.params) if o.split("=", 1)[0].lstrip("+") not in given)])
    if not validation and "dataset.validation" not in given:
        extra.append("+dataset.validation=0.25")
    extra = [shlex.quote(o) for o in extra]
    pins = get_dotted(ran, "dataset.sha256")
    pins = pins if isinstance(pins, Mapping) else None
    sampler = type(study.sampler).__name__
    comment = [
        "# @package _global_",
        f"# Chosen by Optuna ({sampler} via hydra-optuna-sweeper): the best of {done} completed",
        f"# trials (trial {trial.number}) of study {study.study_name!r} in "
        f"{portable(str(Path(results_dir).resolve()))}/{STUDY_FILE}:",
        f"# validation accuracy {100 * trial.value:.2f}% on {held},",
        f"# split seed {seed}; the test data never seen. Search space: conf/search/{model}.yaml.",
        *([f"# On a seeded subsample of {max_train} training rows (dataset.max_train="
           f"{max_train}):", "# a run on all of them may choose otherwise."]
          if max_train else []),
        *(["# Own files (paths as given, outside the project by name), by content: "
           + ", ".join(f"{role} sha256 {digest}" for role, digest in pins.items())]
          if pins else []),
        "# Reproduce with",
        f"#   llc-bench run -m model={model} dataset={dataset} seed={seed} +search={model} "
        + " ".join(extra),
        f"#   llc-bench tune {model} {dataset} --seed {seed} --from-sweep"
        + "".join(f" {o}" for o in extra),
    ]
    body = OmegaConf.to_yaml(OmegaConf.create(_nested(dict(trial.params))))
    atomic_write_text(out, "\n".join(comment) + "\n" + body)
    return out


def tune_preset(model: str, dataset: str, *, seed: int = 0, overrides=(), out=None,
                force: bool = False, preset_keys: bool = False,
                echo=print) -> tuple[Path, dict]:
    """``llc-bench tune MODEL DATASET``: run the selection of ``tune=on`` on the dataset's
    training split and write ``conf/tuned/<model>_<dataset>.yaml`` (or ``out``) with a
    header that holds the command, the space, the budget, the seed and the scores.

    An existing preset is the first trial (where its values lie in the space), so the
    header gives its validation score beside the new one; its keys outside the space are
    kept; it is replaced only when the new setting scores at least as well."""
    from omegaconf import OmegaConf

    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import build_estimator
    from llc_bench.files import atomic_write_text
    from llc_bench.selection.search import noise_margin
    from llc_bench.selection.tune import select

    preset = REPO_CONF / "tuned" / f"{model}_{dataset}.yaml"  # what a run composes now
    out = Path(out) if out else preset
    if out != preset and out.exists() and not force:
        raise ConfigError(f"{out} exists: pass --force to replace it")
    old = OmegaConf.to_container(OmegaConf.load(preset)) if preset.is_file() else {}
    config = _tune_config(model, dataset, seed, overrides, old if preset_keys else None)
    data = config.get("data") or {}
    ds = load_dataset(config["dataset"], seed=seed, home=data.get("home"),
                      mirrors=tuple(data.get("mirrors") or ()),
                      download=bool(data.get("download", True)))
    chosen, report = select(config, ds.X_train, ds.y_train, build_estimator, echo=echo)
    hand = _preset_score(old, report, config, ds) if old else None
    margin = noise_margin(report["validation_accuracy"], report["validation_rows"],
                          float(config["tune"].get("keep_default_se") or 0.0))
    kept = hand is not None and (report["kept_default"]
                                 or report["validation_accuracy"] - hand <= margin)
    result = {**report, "hand_validation_accuracy": hand, "kept_preset": kept}
    if kept:  # never worse on validation than the preset it replaces: the preset stays as it
        # is, its header (how its values were chosen) with it
        echo(f"tune    the preset {preset.name} scored at least as well (validation "
             f"{100 * hand:.2f}%): kept as it is")
        atomic_write_text(out, preset.read_text())
        return out, result
    header = _preset_header(model, dataset, seed, overrides, preset_keys, report, hand,
                            config, ds)
    body = _merge(old, _nested(chosen))
    atomic_write_text(out, "\n".join(header) + "\n" + OmegaConf.to_yaml(OmegaConf.create(body)))
    return out, result


def _tune_config(model: str, dataset: str, seed: int, overrides, old: dict | None) -> dict:
    """The run config ``llc-bench tune`` selects on (tune=on, the keys set on the command
    line fixed; ``old``: with --preset-keys, the preset whose keys alone are searched)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import prepare_config
    from llc_bench.selection.tune import search_space

    group = next((o for o in overrides if o.split("=", 1)[0].lstrip("+~") == "tune"), None)
    if group is not None:  # the command always selects (tune=on)
        raise ConfigError(f"{group}: llc-bench tune always selects; drop it (tune.trials=N "
                          "and tune.budget_s=S set its budget)")
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[f"model={model}", f"dataset={dataset}", f"seed={seed}",
                                        "tune=on", *overrides])
    fixed = tuple(o.split("=", 1)[0].lstrip("+~") for o in overrides
                  if "=" in o and not o.startswith("tune."))
    if old is not None:
        if not old:
            raise ConfigError(f"--preset-keys: there is no preset conf/tuned/{model}_{dataset}"
                              ".yaml to take the keys from")
        from llc_bench.store.query import flatten

        own = set(flatten(old))
        fixed += tuple(k for k in (search_space(model) or {}) if k not in own)
    config = prepare_config(OmegaConf.to_container(cfg, resolve=True), fixed=fixed)
    if not config.get("tune"):
        raise ConfigError(f"model {model}: nothing to search (every key of its space is "
                          "fixed on the command line" + (" or not set by the preset)"
                                                         if old is not None else ")"))
    return config


def _preset_score(old: dict, report: dict, config: dict, ds) -> float:
    """The validation accuracy of the preset a selection may replace: its trial 0 (the
    composed config holds its values), or, outside the space, scored as it is."""
    from llc_bench.experiment.runner import build_estimator
    from llc_bench.selection.tune import score_setting

    first = report["trials"][0]
    if report["defaults_first"] and first["number"] == 0 and first["folds_scored"]:
        return first["score"]
    return score_setting(config, ds.X_train, ds.y_train, build_estimator)


def _preset_header(model, dataset, seed, overrides, preset_keys, report, hand, config,
                   ds) -> list[str]:
    """A written preset's header: the command, the choice rule, the protocol and budget,
    the space, the scores, and what the choice rests on (a subsample, own files, edges)."""
    import shlex

    budget = report["budget"]
    command = " ".join(["llc-bench", "tune", model, dataset, f"--seed {seed}",
                        *(["--preset-keys"] if preset_keys else []),
                        *(shlex.quote(o) for o in reproducible(overrides))])
    subsample = (ds.info.get("subsample") or {}) if isinstance(ds.info, dict) else {}
    header = [
        "# @package _global_",
        f"# Chosen by `{command}` (llc_bench/selection/tune.py): the "
        + (f"fewest-capacity trial within {report['simpler_se']} standard error(s) of the best"
           if report.get("simpler_than") else "best")
        + f" of {report['n_trials']} trials ({report['n_pruned']} pruned),",
        f"# {report['protocol']} on the {report['rows']} training rows (split seed {seed}; "
        f"the test data never seen), budget {budget['trials']} trials / "
        f"{budget['budget_s']} s, stopped by {report['stopped_by']}, "
        f"{report['seconds']:.1f} s.",
        f"# Space: conf/search/{model}.yaml ({', '.join(report['space'])})"
        + (", the keys the hand preset set; the rest as composed (the paper's settings)."
           if preset_keys else "."),
        f"# Validation accuracy: chosen {100 * report['validation_accuracy']:.2f}%"
        + (f", the preset it replaces {100 * hand:.2f}%" if hand is not None else
           ", no earlier preset scored (none, or outside the space)") + ".",
    ]
    if subsample.get("max_train"):
        before, after = subsample["train"]
        header.append(f"# On a seeded subsample of {after} of the {before} training rows "
                      f"(dataset.max_train={subsample['max_train']}, in the command): a run "
                      "on all of them may choose otherwise.")
    if config["dataset"].get("kind") == "custom":
        from llc_bench.experiment.runner import pin_custom_files

        pinned = copy.deepcopy(config["dataset"])
        pin_custom_files(pinned)
        header.append("# Own files (paths as given, outside the project by name), by content: "
                      + ", ".join(f"{r} sha256 {d}" for r, d in pinned["sha256"].items()))
    if report["at_edge"]:
        header.append(f"# On the edge of the space: {', '.join(report['at_edge'])}.")
    return header


def _merge(base: dict, new: dict) -> dict:
    out = dict(base)
    for key, value in new.items():
        out[key] = (_merge(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out
