"""Which runs a table needs: compose every run's config, hash it, see what the store has.

Every run is composed with Hydra's compose API from the same ``run`` config and the same
overrides that ``llc-bench run`` later receives, so the config hash computed here is the
one the run writes: the store is the cache. A cell that cannot run gets its reason here
(dataset not available offline, method not described by the paper, preset not yet
implemented, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from llc_bench.errors import ConfigError, LLCBenchError
from llc_bench.store.results import ResultsStore, config_hash
from llc_bench.tables.spec import (
    NOT_IMPLEMENTED,
    NOT_REPRODUCIBLE,
    REPORTED_ONLY,
    RUN,
    Profile,
    TableSpec,
    preset_exists,
)

# Cell states beyond the method statuses of spec.py.
DATASET_OFFLINE = "dataset_offline"
CONFIG_ERROR = "config_error"

SWEEP_KEYS = ("model", "dataset", "seed")   # the axes a multirun may sweep


def hydra_value(value) -> str:
    """``value`` in Hydra's override grammar (the inverse of how Hydra parses it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if (re.fullmatch(r"[A-Za-z_][\w\-.]*", text)
            and text.lower() not in ("null", "true", "false", "nan", "inf")):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def override_list(overrides: Mapping) -> list[str]:
    return [f"{k}={hydra_value(v)}" for k, v in overrides.items()]


def _lookup(config: Mapping, dotted: str):
    node = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(dotted)
        node = node[part]
    return node


def _has(config: Mapping, dotted: str) -> bool:
    try:
        _lookup(config, dotted)
    except KeyError:
        return False
    return True


@dataclass
class RunPlan:
    """One run: its ``llc-bench run`` overrides (semantic ones), config and hash."""

    overrides: dict            # ordered: model, dataset, seed, then the rest (Python values)
    config: dict
    hash: str
    seed: int
    cached: bool = False

    @property
    def label(self) -> str:
        rest = " ".join(override_list({k: v for k, v in self.overrides.items()
                                       if k not in SWEEP_KEYS}))
        return (f"dataset={self.overrides['dataset']} model={self.overrides['model']} "
                f"seed={self.seed}" + (f" {rest}" if rest else ""))


@dataclass
class CellPlan:
    dataset: str               # the paper's dataset name
    method: str                # the paper's method name
    label: str
    status: str                # RUN, REPORTED_ONLY, NOT_REPRODUCIBLE, NOT_IMPLEMENTED, ...
    reason: str = ""
    dataset_config: str | None = None
    model: str | None = None
    overrides: dict = field(default_factory=dict)
    seeds: int = 0
    notes: tuple = ()
    runs: list = field(default_factory=list)
    selected: bool = True
    offline: str = ""          # why the dataset cannot be read offline ("" = it can)
    left_out: str = ""         # why the profile does not run this row ("" = it does)

    @property
    def runnable(self) -> bool:
        return self.status == RUN and bool(self.runs)


@dataclass
class TablePlan:
    spec: TableSpec
    profile: Profile
    results_dir: Path
    cells: dict                # (dataset, method) -> CellPlan

    def runs(self) -> list[RunPlan]:
        return [r for c in self.cells.values() for r in c.runs]

    def to_execute(self, allow_offline: bool = False) -> list[RunPlan]:
        """The selected, runnable, not yet stored runs (unique by hash)."""
        out: dict[str, RunPlan] = {}
        for cell in self.cells.values():
            if not (cell.selected and cell.runnable) or (cell.offline and not allow_offline):
                continue
            for run in cell.runs:
                if not run.cached:
                    out.setdefault(run.hash, run)
        return list(out.values())

    def refresh(self, store: ResultsStore) -> None:
        for run in self.runs():
            run.cached = store.has(run.hash)


class Composer:
    """Hydra's compose API over the package's ``run`` config, as `llc-bench run` composes."""

    def __init__(self):
        self._ctx = None

    def __enter__(self):
        from hydra import initialize_config_module

        self._ctx = initialize_config_module("llc_bench.conf", version_base="1.3")
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)

    def compose(self, overrides: Mapping) -> dict:
        from hydra import compose
        from omegaconf import OmegaConf

        cfg = compose("run", overrides=override_list(overrides))
        from llc_bench.experiment.runner import pin_custom_files, prepare_config

        config = OmegaConf.to_container(cfg, resolve=True)
        config.pop("hydra", None)
        config = prepare_config(config)
        pin_custom_files(config["dataset"])  # own files (figures --dataset file): the run's key
        return config


def _status_of_dataset(name: str, home, mirrors, cache: dict) -> str:
    """"" when the dataset can be read offline, else why not."""
    if name not in cache:
        from llc_bench.data import dataset_status

        try:
            status = dataset_status(name, home=home, mirrors=mirrors)
        except LLCBenchError as err:
            cache[name] = f"dataset {name}: {err}"
        else:
            if status["available"]:
                cache[name] = ""
            else:
                missing = ", ".join(status.get("missing") or []) or "its files"
                cache[name] = (f"dataset {name} not available offline (missing {missing}; "
                               f"`llc-bench datasets fetch {name}`)")
    return cache[name]


class Planner:
    """Plans tables; one instance shares the compose context and the dataset checks."""

    def __init__(self, results_dir: str | Path, profile: Profile, data_home=None,
                 mirrors: Iterable = (), composer: Composer | None = None):
        self.results_dir = Path(results_dir)
        self.store = ResultsStore(self.results_dir)
        self.profile = profile
        self.data_home = data_home
        self.mirrors = tuple(mirrors)
        self.composer = composer
        self._datasets: dict[str, str] = {}
        self._configs: dict[tuple, dict] = {}
        self._probes: dict[str, dict] = {}

    # -- one run config -------------------------------------------------------------
    def _compose(self, overrides: Mapping) -> dict:
        key = tuple((k, hydra_value(v)) for k, v in overrides.items())
        if key not in self._configs:
            self._configs[key] = self.composer.compose(overrides)
        return self._configs[key]

    def with_profile(self, base: Mapping) -> tuple[dict, dict]:
        """``base`` overrides plus the profile's, and the composed config.

        Which profile keys apply is read from a probe composition of the model preset
        alone (its trainer's name and keys), one per preset.
        """
        model = base["model"]
        if model not in self._probes:
            self._probes[model] = self._compose({"model": model})
        probe = self._probes[model]
        extra = {k: v for k, v in self.profile.overrides.items() if _has(probe, k)}
        trainer = (probe.get("trainer") or {})
        for key, value in (self.profile.trainer.get(trainer.get("name"), {}) or {}).items():
            if key in trainer:
                extra[f"trainer.{key}"] = value
        overrides = {**base, **extra}
        return overrides, self._compose(overrides)

    def plan_runs(self, model: str, dataset: str, seeds: int, overrides: Mapping) -> list[RunPlan]:
        """The runs of model x dataset x seeds 0..seeds-1 with ``overrides`` (and the profile)."""
        runs = []
        first = None
        for seed in range(seeds):
            # the tables run their papers' protocols and presets: no selection of ours
            base = {"model": model, "dataset": dataset, "seed": seed, "tune": "off",
                    **overrides}
            if first is not None and seed >= 2:
                # Seeds 0 and 1 composed alike except for `seed`: derive the others.
                config = dict(first[1])
                config["seed"] = seed
                final = {**first[0], "seed": seed}
            else:
                final, config = self.with_profile(base)
            if seed == 1:
                a = {k: v for k, v in runs[0].config.items() if k != "seed"}
                b = {k: v for k, v in config.items() if k != "seed"}
                first = (final, config) if a == b else None
            runs.append(RunPlan(final, config, config_hash(config), seed))
        return runs

    # -- one table ---------------------------------------------------------------------
    def plan(self, spec: TableSpec, datasets: Iterable[str] = (),
             methods: Iterable[str] = ()) -> TablePlan:
        """Plan every cell of ``spec``; only cells matching the filters are ``selected``."""
        from llc_bench.experiment.runner import build_estimator

        want_d, want_m = set(datasets), set(methods)
        cells: dict[tuple[str, str], CellPlan] = {}
        for dataset in spec.datasets:
            for method, m in spec.methods.items():
                settings = spec.settings(dataset, method)
                seeds = settings.seeds
                if self.profile.seeds:
                    seeds = min(seeds, int(self.profile.seeds))
                cell = CellPlan(dataset=dataset, method=method, label=m.label, status=m.status,
                                reason=m.reason, dataset_config=settings.dataset_config,
                                model=m.model, overrides=settings.overrides, seeds=seeds,
                                notes=settings.notes)
                cell.selected = ((not want_d or dataset in want_d
                                  or settings.dataset_config in want_d)
                                 and (not want_m or method in want_m or m.model in want_m))
                cells[(dataset, method)] = cell
                if m.status == NOT_IMPLEMENTED:
                    cell.reason = cell.reason or "not yet implemented"
                if m.status != RUN:
                    continue
                if not preset_exists(m.model):
                    cell.status = NOT_IMPLEMENTED
                    cell.reason = f"not yet implemented (no model preset `{m.model}`)"
                    continue
                if not self.profile.runs_row(spec.name, dataset, settings.dataset_config):
                    cell.left_out = self.profile.left_out(spec.name)  # nothing composed
                    continue
                cell.offline = _status_of_dataset(settings.dataset_config, self.data_home,
                                                  self.mirrors, self._datasets)
                try:
                    cell.runs = self.plan_runs(m.model, settings.dataset_config, seeds,
                                               settings.overrides)
                    build_estimator(cell.runs[0].config)
                except ConfigError as err:
                    cell.runs = []
                    if "is not one of" in str(err) and "trainer.name" in str(err):
                        cell.status, cell.reason = NOT_IMPLEMENTED, f"not yet implemented ({err})"
                    else:
                        cell.status, cell.reason = CONFIG_ERROR, f"config error: {err}"
                except Exception as err:  # Hydra's composition errors
                    cell.runs = []
                    message = str(err).splitlines()[0] if str(err) else type(err).__name__
                    cell.status, cell.reason = CONFIG_ERROR, f"config error: {message}"
        plan = TablePlan(spec, self.profile, self.results_dir, cells)
        plan.refresh(self.store)
        return plan


def reason_kind(status: str) -> str:
    """A short label for a cell state (summary columns)."""
    return {REPORTED_ONLY: "reported only", NOT_REPRODUCIBLE: "not reproducible",
            NOT_IMPLEMENTED: "not yet implemented", DATASET_OFFLINE: "dataset offline",
            CONFIG_ERROR: "config error"}.get(status, status)
