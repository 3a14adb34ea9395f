"""Tuning with Hydra's Optuna sweeper, on held-out training rows only.

``llc-bench run -m model=llsvm dataset=banana +search=llsvm +dataset.validation=0.25``
runs a seeded TPE study over the search space ``conf/search/llsvm.yaml``; each trial is an
ordinary run (a record in the store) whose objective is the accuracy on the 25% of the
training rows held out (``dataset.validation``); the test set is never read.  The study is
kept in ``<results_dir>/optuna.db`` (SQLite) as ``<model>_<dataset>_seed<seed>``, so a
second call resumes it.  Then

``llc-bench tune llsvm banana --from-sweep``

writes the best trial's parameters to ``conf/tuned/llsvm_banana.yaml``, with a comment
saying how they were chosen.
"""

from __future__ import annotations

from pathlib import Path

from llc_bench.errors import ConfigError, ResultsError

REPO_CONF = Path(__file__).resolve().parents[2] / "conf"


def check_sweep(config) -> None:
    """A ConfigError when a tuning sweeper (Optuna) would score runs on the test set."""
    target = str(config.hydra.sweeper.get("_target_", ""))
    if "optuna" in target.lower() and config.dataset.get("validation") is None:
        raise ConfigError("tuning with the Optuna sweeper needs +dataset.validation=F (e.g. "
                          "0.25): trials are scored on held-out training rows, never the test "
                          "set")


def storage_url(results_dir) -> str:
    return f"sqlite:///{Path(results_dir) / 'optuna.db'}"


def study_name(model: str, dataset: str, seed: int = 0) -> str:
    return f"{model}_{dataset}_seed{seed}"


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


def best_trial(results_dir, model: str, dataset: str, seed: int = 0):
    """The study's best trial and the study (a ResultsError if there is none)."""
    try:
        import optuna
    except ImportError:
        optuna = None
    if optuna is None:
        raise ConfigError("tuning needs the Optuna sweeper: pip install 'llc-bench[tune]'")
    url, name = storage_url(results_dir), study_name(model, dataset, seed)
    if not (Path(results_dir) / "optuna.db").is_file():
        raise ResultsError(f"no Optuna studies in {results_dir} (run the sweep first: "
                           f"llc-bench run -m model={model} dataset={dataset} +search={model} "
                           "+dataset.validation=0.25)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=name, storage=url)
    except KeyError:
        known = optuna.study.get_all_study_summaries(storage=url)
        raise ResultsError(f"no study {name!r} in {url} (studies: "
                           f"{', '.join(s.study_name for s in known) or 'none'})") from None
    try:
        return study.best_trial, study
    except ValueError:
        raise ResultsError(f"study {name!r} has no completed trial") from None


def _validation_of(results_dir, model, dataset, seed, params) -> str | None:
    """The ``dataset.validation`` of the best trial's record (found by its parameters)."""
    from llc_bench.experiment.query import records_frame

    where = [f"seed={seed}", "dataset.validation!=null"]
    where += [f"{k}={v}" for k, v in params.items()]
    try:
        frame = records_frame(results_dir, datasets=[dataset], models=[model], where=where)
    except ConfigError:
        return None
    return None if frame.empty else str(frame["dataset.validation"].iloc[0])


def write_tuned(results_dir, model: str, dataset: str, seed: int = 0, out=None,
                force: bool = False) -> Path:
    """Write the best parameters of the study ``<model>_<dataset>_seed<seed>`` to
    ``out`` (default ``conf/tuned/<model>_<dataset>.yaml``) as a Hydra ``_global_`` preset."""
    from omegaconf import OmegaConf

    trial, study = best_trial(results_dir, model, dataset, seed)
    out = Path(out) if out else REPO_CONF / "tuned" / f"{model}_{dataset}.yaml"
    if out.exists() and not force:
        raise ConfigError(f"{out} exists: pass --force to replace it (its other keys are lost)")
    done = sum(1 for t in study.trials if t.state.name == "COMPLETE")
    validation = _validation_of(results_dir, model, dataset, seed, trial.params)
    held = (f"{validation} of the training part held out (+dataset.validation={validation})"
            if validation else "held-out training rows (+dataset.validation)")
    sampler = type(study.sampler).__name__
    comment = [
        "# @package _global_",
        f"# Chosen by Optuna ({sampler} via hydra-optuna-sweeper): the best of {done} completed",
        f"# trials (trial {trial.number}) of study {study.study_name!r} in "
        f"{storage_url(results_dir)}:",
        f"# validation accuracy {100 * trial.value:.2f}% on {held},",
        f"# split seed {seed}; the test data never seen. Search space: conf/search/{model}.yaml.",
        "# Reproduce with",
        f"#   llc-bench run -m model={model} dataset={dataset} seed={seed} +search={model} "
        f"+dataset.validation={validation or '0.25'}",
        f"#   llc-bench tune {model} {dataset} --seed {seed} --from-sweep",
    ]
    body = OmegaConf.to_yaml(OmegaConf.create(_nested(dict(trial.params))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(comment) + "\n" + body)
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
    import shlex

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import build_estimator, prepare_config
    from llc_bench.experiment.tune import select
    from llc_bench.files import atomic_write_text

    preset = REPO_CONF / "tuned" / f"{model}_{dataset}.yaml"  # what a run composes now
    out = Path(out) if out else preset
    if out != preset and out.exists() and not force:
        raise ConfigError(f"{out} exists: pass --force to replace it")
    group = next((o for o in overrides if o.split("=", 1)[0].lstrip("+~") == "tune"), None)
    if group is not None:  # the command always selects (tune=on)
        raise ConfigError(f"{group}: llc-bench tune always selects; drop it (tune.trials=N "
                          "and tune.budget_s=S set its budget)")
    old = OmegaConf.to_container(OmegaConf.load(preset)) if preset.is_file() else {}
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[f"model={model}", f"dataset={dataset}", f"seed={seed}",
                                        "tune=on", *overrides])
    fixed = tuple(o.split("=", 1)[0].lstrip("+~") for o in overrides
                  if "=" in o and not o.startswith("tune."))
    if preset_keys:
        from llc_bench.experiment.tune import search_space

        if not old:
            raise ConfigError(f"--preset-keys: there is no preset conf/tuned/{model}_{dataset}"
                              ".yaml to take the keys from")
        from llc_bench.experiment.query import flatten

        own = set(flatten(old))
        fixed += tuple(k for k in (search_space(model) or {}) if k not in own)
    config = prepare_config(OmegaConf.to_container(cfg, resolve=True), fixed=fixed)
    if not config.get("tune"):
        raise ConfigError(f"model {model}: nothing to search (every key of its space is "
                          "fixed on the command line" + (" or not set by the preset)"
                                                         if preset_keys else ")"))
    data = config.get("data") or {}
    ds = load_dataset(config["dataset"], seed=seed, home=data.get("home"),
                      mirrors=tuple(data.get("mirrors") or ()),
                      download=bool(data.get("download", True)))
    chosen, report = select(config, ds.X_train, ds.y_train, build_estimator, echo=echo)
    first = report["trials"][0]
    hand = None
    if old and report["defaults_first"] and first["number"] == 0 and first["folds_scored"]:
        hand = first["score"]  # trial 0: the composed config, the preset's values in it
    if hand is None and old:  # the preset lies outside the space: score it as it is
        from llc_bench.experiment.tune import score_setting

        hand = score_setting(config, ds.X_train, ds.y_train, build_estimator)
    from llc_bench.experiment.tune import noise_margin

    margin = noise_margin(report["validation_accuracy"], report["validation_rows"],
                          float(config["tune"].get("keep_default_se") or 0.0))
    kept = hand is not None and (report["kept_default"]
                                 or report["validation_accuracy"] - hand <= margin)
    # never worse on validation than the preset it replaces: then the preset stays as it is
    body = old if kept else _merge(old, _nested(chosen))
    budget = report["budget"]
    command = " ".join(["llc-bench", "tune", model, dataset, f"--seed {seed}",
                        *(["--preset-keys"] if preset_keys else []),
                        *(shlex.quote(o) for o in overrides)])
    header = [
        "# @package _global_",
        f"# Chosen by `{command}` (llc_bench/experiment/tune.py): the "
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
    if kept:
        header.append("# The preset scored at least as well (or within one standard error): "
                      "its values are kept.")
    elif report["at_edge"]:
        header.append(f"# On the edge of the space: {', '.join(report['at_edge'])}.")
    atomic_write_text(out, "\n".join(header) + "\n" + OmegaConf.to_yaml(OmegaConf.create(body)))
    return out, {**report, "hand_validation_accuracy": hand, "kept_preset": kept}


def _merge(base: dict, new: dict) -> dict:
    out = dict(base)
    for key, value in new.items():
        out[key] = (_merge(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out
