"""Table configs (``conf/table/<paper>_<table>.yaml``), profiles and metrics (``conf/tables.yaml``).

A table config says which datasets x methods x seeds x metrics make one paper table,
how each paper method maps to a model preset of ours (or why it cannot be run), and the
per-cell settings where the paper's differ from the preset. The schema is documented in
``conf/tables.yaml``; :func:`load_table` checks it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources

from omegaconf import OmegaConf

from llc_bench.errors import ConfigError, did_you_mean

# How a paper method is obtained.
RUN = "run"                            # a model preset of ours (may not exist yet)
REPORTED_ONLY = "reported_only"        # the paper copied the number from another paper
NOT_REPRODUCIBLE = "not_reproducible"  # e.g. not described by the paper
NOT_IMPLEMENTED = "not_implemented"    # planned, no preset yet (a preset that appears runs)
STATUSES = (RUN, REPORTED_ONLY, NOT_REPRODUCIBLE, NOT_IMPLEMENTED)


# -- metrics ----------------------------------------------------------------------------

def _metric(record: Mapping, key: str):
    value = (record.get("metrics") or {}).get(key)
    return None if value is None else float(value)


def _timing(record: Mapping, key: str):
    value = (record.get("timings") or {}).get(key)
    return None if value is None else float(value)


def _accuracy(r):
    a = _metric(r, "test_accuracy")
    return None if a is None else 100.0 * a


def _error(r):
    a = _metric(r, "test_accuracy")
    return None if a is None else 100.0 * (1.0 - a)


@dataclass(frozen=True)
class Metric:
    """A table metric: how to read it from a run record and how to compare it.

    ``kind`` is ``record`` (one number per run), ``ratio`` (per seed, this run's
    ``of`` metric divided by the reference method's, e.g. test time relative to the
    linear SVM) or ``rank`` (average rank over the table's datasets, a derived row).

    Paper and ours are "within" when |ours - paper| <= 2 sqrt(ps²/n_paper + os²/n_ours),
    twice the standard error of the difference of the two means (ps, os: the paper's and
    our std over runs; a missing std adds nothing); where that is 0 (neither std known,
    or both 0) the metric's fixed ``tolerance`` stands in. With ``factor`` the comparison is
    a ratio (timings on other hardware): within when ours / paper is in [1/factor, factor].
    """

    name: str
    label: str
    higher_is_better: bool
    digits: int
    tolerance: float | None = None
    factor: float | None = None
    kind: str = "record"
    read: Callable[[Mapping], float | None] | None = None
    of: str | None = None

    def allowed(self, paper_std: float | None, ours_std: float | None = None,
                n_paper: int = 1, n_ours: int = 1) -> float:
        """The largest |ours - paper| still "within" (not for ``factor`` metrics)."""
        var = 0.0
        if paper_std:
            var += paper_std ** 2 / max(1, n_paper)
        if ours_std and n_ours > 1:
            var += ours_std ** 2 / n_ours
        return 2.0 * math.sqrt(var) if var > 0 else (self.tolerance or 0.0)

    def within(self, ours: float, paper: float, std: float | None,
               ours_std: float | None = None, n_paper: int = 1, n_ours: int = 1) -> bool:
        if self.factor is not None:
            if paper <= 0 or ours <= 0:
                return ours == paper
            return 1.0 / self.factor <= ours / paper <= self.factor
        tol = self.allowed(std, ours_std, n_paper, n_ours)
        return abs(ours - paper) <= tol + 1e-12

    def verdict(self, ours: float, paper: float, std: float | None,
                ours_std: float | None = None, n_paper: int = 1, n_ours: int = 1) -> str:
        """``within``, ``better`` or ``worse`` (ours compared with the paper's)."""
        if self.within(ours, paper, std, ours_std, n_paper, n_ours):
            return "within"
        return "better" if (ours > paper) == self.higher_is_better else "worse"


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("accuracy", "test accuracy (%)", True, 2, tolerance=0.5, read=_accuracy),
    Metric("error", "test error (%)", False, 2, tolerance=0.5, read=_error),
    Metric("train_hinge", "train hinge loss", False, 4, tolerance=0.005,
           read=lambda r: _metric(r, "train_hinge")),
    Metric("test_hinge", "test hinge loss", False, 4, tolerance=0.005,
           read=lambda r: _metric(r, "test_hinge")),
    Metric("train_time", "training time (s)", False, 3, factor=2.0,
           read=lambda r: _timing(r, "train")),
    Metric("test_time", "test time, whole test set (s)", False, 4, factor=2.0,
           read=lambda r: _timing(r, "test_total")),
    Metric("test_time_per_sample", "test time per sample (s)", False, 7, factor=2.0,
           read=lambda r: _timing(r, "test_per_sample")),
    Metric("test_time_ratio", "test time relative to the linear SVM (x)", False, 2,
           factor=2.0, kind="ratio", of="test_time"),
    Metric("rank", "average rank (1 = best)", False, 2, tolerance=0.5, kind="rank",
           of="error"),
)}


# -- configs ----------------------------------------------------------------------------

def conf_root():
    return resources.files("llc_bench.conf")


def _load_yaml(path) -> dict:
    with resources.as_file(path) as real:
        if not real.is_file():
            raise ConfigError(f"no such config: {real}")
        return OmegaConf.to_container(OmegaConf.load(real), resolve=True)


def preset_exists(model: str) -> bool:
    return (conf_root() / "model" / f"{model}.yaml").is_file()


def _names(value) -> frozenset[str] | None:
    if value is None or value == "*":
        return None
    return frozenset([value] if isinstance(value, str) else value)


@dataclass(frozen=True)
class MethodSpec:
    name: str
    label: str
    model: str | None = None
    status: str = RUN
    reason: str = ""
    overrides: dict = field(default_factory=dict)
    seeds: int | None = None


@dataclass(frozen=True)
class CellRule:
    """Settings for the cells matching ``datasets`` x ``methods`` (None = all)."""

    datasets: frozenset[str] | None
    methods: frozenset[str] | None
    overrides: dict
    seeds: int | None
    dataset: str | None
    note: str
    paper_runs: int | None = None

    def matches(self, dataset: str, method: str) -> bool:
        return ((self.datasets is None or dataset in self.datasets)
                and (self.methods is None or method in self.methods))


@dataclass(frozen=True)
class CellSettings:
    dataset_config: str
    overrides: dict
    seeds: int
    notes: tuple[str, ...]
    paper_runs: int = 1        # n_paper of the yardstick: the paper's runs behind its mean


@dataclass(frozen=True)
class TableSpec:
    name: str
    paper: str
    table: str
    title: str
    source: str
    seeds: int
    metrics: tuple[str, ...]
    datasets: dict            # paper dataset name -> our dataset config
    methods: dict             # paper method name -> MethodSpec
    overrides: dict
    cells: tuple[CellRule, ...]
    ratio_reference: str | None = None
    derived: dict = field(default_factory=dict)   # row name -> metric name (kind rank)
    notes: tuple[str, ...] = ()
    paper_runs: int | None = None  # the paper's runs per cell (None: ``seeds``)

    def settings(self, dataset: str, method: str) -> CellSettings:
        """The dataset config, overrides and number of seeds of one cell."""
        m = self.methods[method]
        config = self.datasets[dataset]
        overrides = {**self.overrides, **m.overrides}
        seeds = m.seeds or self.seeds
        paper_runs = self.paper_runs or self.seeds
        notes = []
        for rule in self.cells:
            if rule.matches(dataset, method):
                overrides.update(rule.overrides)
                seeds = rule.seeds or seeds
                paper_runs = rule.paper_runs or paper_runs
                config = rule.dataset or config
                if rule.note:
                    notes.append(rule.note)
        return CellSettings(config, overrides, int(seeds), tuple(notes), int(paper_runs))


def _method(name: str, raw) -> MethodSpec:
    if isinstance(raw, str):
        raw = {"model": raw}
    raw = dict(raw or {})
    unknown = set(raw) - {"label", "model", "status", "reason", "overrides", "seeds"}
    if unknown:
        raise ConfigError(f"method {name}: unknown keys {sorted(unknown)}")
    status = raw.get("status", RUN)
    if status not in STATUSES:
        raise ConfigError(f"method {name}: status {status!r} is not one of {STATUSES}")
    if status == RUN and not raw.get("model"):
        raise ConfigError(f"method {name}: status run needs a model preset")
    if status != RUN and not raw.get("reason") and status != NOT_IMPLEMENTED:
        raise ConfigError(f"method {name}: status {status} needs a reason")
    return MethodSpec(name=name, label=str(raw.get("label", name)), model=raw.get("model"),
                      status=status, reason=str(raw.get("reason", "")),
                      overrides=dict(raw.get("overrides") or {}), seeds=raw.get("seeds"))


def table_from_dict(raw: Mapping, name: str | None = None) -> TableSpec:
    raw = dict(raw)
    known = {"name", "paper", "table", "title", "source", "seeds", "metrics", "datasets",
             "methods", "overrides", "cells", "ratio_reference", "derived", "notes",
             "paper_runs"}
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"table {name or raw.get('name')}: unknown keys {sorted(unknown)}")
    for key in ("paper", "table", "metrics", "datasets", "methods"):
        if key not in raw:
            raise ConfigError(f"table {name or raw.get('name')}: missing key {key!r}")
    metrics = tuple(raw["metrics"])
    for m in metrics:
        if m not in METRICS:
            raise ConfigError(f"table {raw.get('name')}: unknown metric {m!r} "
                              f"(known: {', '.join(METRICS)})")
    datasets = {str(k): str(v if v is not None else k) for k, v in raw["datasets"].items()}
    methods = {str(k): _method(str(k), v) for k, v in raw["methods"].items()}
    cells = []
    for rule in raw.get("cells") or []:
        rule = dict(rule)
        unknown = set(rule) - {"dataset", "method", "overrides", "seeds", "dataset_config",
                               "note", "paper_runs"}
        if unknown:
            raise ConfigError(f"table {raw.get('name')}: cell rule has unknown keys "
                              f"{sorted(unknown)}")
        ds, ms = _names(rule.get("dataset")), _names(rule.get("method"))
        for d in ds or ():
            if d not in datasets:
                raise ConfigError(f"table {raw.get('name')}: cell rule names unknown dataset {d}")
        for m in ms or ():
            if m not in methods:
                raise ConfigError(f"table {raw.get('name')}: cell rule names unknown method {m}")
        cells.append(CellRule(ds, ms, dict(rule.get("overrides") or {}), rule.get("seeds"),
                              rule.get("dataset_config"), str(rule.get("note", "")),
                              _positive(raw, "paper_runs", rule.get("paper_runs"))))
    ratio_ref = raw.get("ratio_reference")
    if any(METRICS[m].kind == "ratio" for m in metrics) and ratio_ref not in methods:
        raise ConfigError(f"table {raw.get('name')}: a ratio metric needs ratio_reference "
                          "naming one of its methods")
    derived = dict(raw.get("derived") or {})
    for row, metric in derived.items():
        if METRICS.get(metric) is None or METRICS[metric].kind != "rank":
            raise ConfigError(f"table {raw.get('name')}: derived row {row} needs a rank metric")
    return TableSpec(name=str(raw.get("name", name)), paper=str(raw["paper"]),
                     table=str(raw["table"]), title=str(raw.get("title", name)),
                     source=str(raw.get("source", "")), seeds=int(raw.get("seeds", 1)),
                     metrics=metrics, datasets=datasets, methods=methods,
                     overrides=dict(raw.get("overrides") or {}), cells=tuple(cells),
                     ratio_reference=ratio_ref, derived=derived,
                     notes=tuple(raw.get("notes") or ()),
                     paper_runs=_positive(raw, "paper_runs", raw.get("paper_runs")))


def _positive(raw: Mapping, key: str, value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"table {raw.get('name')}: {key}={value!r} must be an integer >= 1")
    return value


def list_tables() -> list[str]:
    """Table names in the order ``conf/tables.yaml`` lists them, then any others."""
    listed = list(tables_config().get("tables") or [])
    found = sorted(p.name[:-5] for p in (conf_root() / "table").iterdir()
                   if p.name.endswith(".yaml"))
    return [t for t in listed if t in found] + [t for t in found if t not in listed]


def load_table(name: str) -> TableSpec:
    path = conf_root() / "table" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown table {name!r} (choose from: {', '.join(list_tables())})")
    return table_from_dict(_load_yaml(path), name)


def tables_config() -> dict:
    return _load_yaml(conf_root() / "tables.yaml")


# -- profiles ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    """How much of the papers' protocol a build runs (``conf/tables.yaml: profiles``).

    ``seeds`` caps every cell's number of seeds; ``overrides`` go to every run
    (e.g. ``dataset.max_train``); ``trainer[<trainer name>]`` go to the runs of that
    trainer, each key only where the composed trainer has it; ``datasets[<table>]`` lists
    the rows (paper names or dataset configs) of that table the profile runs, the others
    are planned as "not in the profile" (a table not listed runs every row). Different
    settings mean different configs, hence different hashes: profiles never share records.
    """

    name: str
    description: str = ""
    seeds: int | None = None
    overrides: dict = field(default_factory=dict)
    trainer: dict = field(default_factory=dict)
    out: str = "tables"
    figures_out: str = "figures"
    datasets: dict = field(default_factory=dict)

    def runs_row(self, table: str, dataset: str, dataset_config: str | None) -> bool:
        """Whether this profile runs a table's row (by paper name or dataset config)."""
        if table not in self.datasets:
            return True
        rows = self.datasets[table] or []
        return dataset in rows or (dataset_config is not None and dataset_config in rows)

    def left_out(self, table: str) -> str:
        return (f"not in the {self.name} profile (conf/tables.yaml: "
                f"profiles.{self.name}.datasets.{table})")


def load_profile(name: str) -> Profile:
    profiles = tables_config().get("profiles") or {}
    if name not in profiles:
        raise ConfigError(f"unknown profile {name!r} (choose from: {', '.join(profiles)})")
    raw = dict(profiles[name] or {})
    unknown = set(raw) - {"description", "seeds", "overrides", "trainer", "out", "figures_out",
                          "datasets"}
    if unknown:
        raise ConfigError(f"profile {name}: unknown keys {sorted(unknown)}")
    datasets = raw.get("datasets") or {}
    if not isinstance(datasets, dict):
        raise ConfigError(f"profile {name}: datasets must map a table to its rows, "
                          f"got {datasets!r}")
    tables = set(list_tables())
    for table, rows in datasets.items():
        if table not in tables:
            raise ConfigError(f"profile {name}: datasets.{table}: no such table"
                              f"{did_you_mean(table, tables)}")
        known = set(load_table(table).datasets) | set(load_table(table).datasets.values())
        for row in rows or []:
            if row not in known:
                raise ConfigError(f"profile {name}: datasets.{table}: {row!r} is not a row "
                                  f"of the table{did_you_mean(str(row), known)}")
    return Profile(name=name, description=str(raw.get("description", "")),
                   seeds=raw.get("seeds"), overrides=dict(raw.get("overrides") or {}),
                   trainer={k: dict(v or {}) for k, v in (raw.get("trainer") or {}).items()},
                   out=str(raw.get("out", "tables")),
                   figures_out=str(raw.get("figures_out", "figures")),
                   datasets={k: list(v or []) for k, v in datasets.items()})
