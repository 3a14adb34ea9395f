"""A build of the papers' tables: plan each table's runs, run the missing ones through the
executor (Hydra multiruns), aggregate and write them (``llc-bench tables`` parses its
arguments into a :class:`Build` and calls :func:`build_tables`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from llc_bench import progress
from llc_bench.errors import ResultsError
from llc_bench.store.costs import CostModel, build_seconds, describe
from llc_bench.store.results import ResultsStore, read_record
from llc_bench.tables.execute import COMMITTED, ExecReport, Executor, cost_keys, group_runs
from llc_bench.tables.spec import METRICS, RUN, load_table


@dataclass
class Build:
    """What a build does: its store and output, the profile, the cells it may run
    (``datasets``, ``methods``: none = all) and how (dry run, timing reruns only, no runs,
    downloads allowed)."""

    results_dir: str
    out_dir: Path
    profile: object
    mirrors: list = field(default_factory=list)
    datasets: list = field(default_factory=list)
    methods: list = field(default_factory=list)
    dry_run: bool = False
    timing_only: bool = False
    no_run: bool = False
    download: bool = False
    out_given: bool = False  # --out named the output (else it is under results_dir)


@dataclass
class _Totals:
    """The estimate of a build's runs so far (a run two tables share counted once)."""

    seconds: float = 0.0
    unknown: int = 0
    runs: int = 0
    launches: int = 0
    counted: set = field(default_factory=set)


def build_tables(names: list[str], build: Build, executor: Executor, echo=print) -> dict:
    """Build ``names``; returns {table: {planned, cached, executed, failed, to_run,
    wall_seconds, problems, paths}} (nothing with a dry run, which prints the multiruns)."""
    from llc_bench.tables.plan import Composer, Planner
    from llc_bench.tables.render import write_summary
    from llc_bench.tables.report import build_report

    began, stats, totals = time.perf_counter(), {}, _Totals()
    costs = CostModel(build.results_dir, fallbacks=[COMMITTED])
    with Composer() as composer:
        planner = Planner(build.results_dir, build.profile, mirrors=build.mirrors,
                          composer=composer)
        for name in names:
            result = _build_table(name, build, planner, executor, costs, totals, echo)
            if result is not None:
                stats[name] = result
    if build.dry_run:
        echo(_estimate_line(totals, time.perf_counter() - began))
        return stats
    summary = write_summary(build.out_dir, _table_order(), build.profile)
    echo(f"summary: {summary}")
    report = build_report(build.results_dir, build.out_dir, build.profile, build.out_given)
    echo(f"report: {report}")
    return stats


def _table_order() -> list:
    from llc_bench.tables.spec import tables_config

    return list(tables_config().get("tables") or [])


def _build_table(name, build: Build, planner, executor, costs, totals: _Totals,
                 echo) -> dict | None:
    """Plan one table, say what it costs, then (not a dry run) run and write it."""
    start = time.perf_counter()
    spec = load_table(name)
    if build.timing_only and not _has_timing(spec):
        echo(f"[{name}] no timing cells: left as it is (--timing-only)")
        return None
    plan = planner.plan(spec, build.datasets, build.methods)
    todo = _to_run(plan, build)
    _say_plan(name, plan, todo, build, costs, totals, echo)
    if build.dry_run:
        for launch in group_runs(todo):
            known, unknown = costs.total(cost_keys(launch.runs))
            echo(f"  # {describe(build_seconds(known, 1), unknown)}")
            echo("  llc-bench run -m " + " ".join(executor.arguments(
                launch, extra=["force=true"] if build.timing_only else ())))
        return None
    return _run_and_write(name, plan, todo, build, executor, start, echo)


def _to_run(plan, build: Build) -> list:
    """The runs a table's build executes: the missing ones, or (``timing_only``) the
    forced reruns of those not timed cleanly."""
    from llc_bench.tables.aggregate import timing_reruns

    if build.timing_only:
        return timing_reruns(plan, allow_offline=build.download)
    return plan.to_execute(allow_offline=build.download)


def _say_plan(name, plan, todo, build: Build, costs, totals: _Totals, echo) -> None:
    """The table's plan line (cells, runs, in the store, to run, the estimate), why the
    others are not run, and the corrupt records it replaces."""
    runs = {r.hash for r in plan.runs()}
    cached = sum(1 for r in plan.runs() if r.cached)
    new = [r for r in todo if r.hash not in totals.counted]  # the others: an earlier table's
    totals.counted.update(r.hash for r in new)
    seconds, unknown = costs.total(cost_keys(new))
    launches = len(group_runs(new))
    totals.seconds += seconds
    totals.unknown += unknown
    totals.runs += len(new)
    totals.launches += launches
    cost = describe(build_seconds(seconds, launches), unknown) if new else "nothing"
    shared = len(todo) - len(new)
    cost += f" ({shared} of them run by an earlier table)" if shared else ""
    echo(f"[{name}] {len(plan.cells)} cells, {len(runs)} runs planned, {cached} in the "
         f"store, {len(todo)} to run ({build.profile.name} profile): {cost}")
    for reason, count in _not_run(plan, todo, build.download).items():
        what = "runs not planned" if reason.startswith("not in the ") else \
            "planned runs not run"
        echo(f"  {count} {what if count != 1 else what.replace('runs', 'run')}: {reason}")
    _warn_corrupt(plan, echo)


def _run_and_write(name, plan, todo, build: Build, executor, start: float, echo) -> dict:
    """Run a table's missing runs, aggregate the store's records and write the table."""
    from llc_bench.tables.aggregate import aggregate
    from llc_bench.tables.render import write_table

    runs = {r.hash: r for r in plan.runs()}
    report = ExecReport()
    if todo and not build.no_run:
        echo_before = executor.echo
        with progress.runs_bar(len(todo), f"[{name}] runs", echo) as executor.echo:
            report = executor.run(todo, tag=name, force=build.timing_only)
        executor.echo = echo_before
        plan.refresh(ResultsStore(build.results_dir))
    result = aggregate(plan, report.failed)
    result.executed = report.executed
    result.wall_seconds = time.perf_counter() - start
    for problem in result.problems:
        echo(f"  warning: {problem}")
    for key, why in report.failed.items():
        echo(f"  failed: {runs[key].label}: {why}")
    paths = write_table(result, build.out_dir)
    c = result.counts()
    echo(f"  {paths[0]}: {c['compared']} compared ({c['within']} within, "
         f"{c['better']} better, {c['worse']} worse), {c['paper_only']} paper-only; "
         f"{report.executed} runs executed in {result.wall_seconds:.1f} s")
    return {"planned": len(runs), "cached": sum(1 for r in runs.values() if r.cached),
            "executed": report.executed, "failed": len(report.failed), "to_run": len(todo),
            "wall_seconds": result.wall_seconds, "problems": result.problems,
            "paths": [str(p) for p in paths]}


def _estimate_line(totals: _Totals, planning: float) -> str:
    """A dry run's last line: the real build plans as it did, then runs what it planned."""
    seconds = build_seconds(totals.seconds, totals.launches) + planning
    return (f"estimate: {totals.runs} runs in {totals.launches} launches: runs "
            f"~{totals.seconds:.0f} s, process starts ~{seconds - totals.seconds - planning:.0f}"
            f" s, planning ~{planning:.0f} s: {describe(seconds, totals.unknown)} "
            f"({seconds:.0f} s)")


def _not_run(plan, todo, allow_offline: bool) -> dict[str, int]:
    """Why the planned runs that are neither in the store nor to run are left out."""
    going = {r.hash for r in todo}
    reasons: dict[str, int] = {}
    for cell in plan.cells.values():
        if cell.left_out and cell.status == RUN:  # a row the profile leaves out: not planned
            reasons[cell.left_out] = reasons.get(cell.left_out, 0) + cell.seeds
        for run in cell.runs:
            if run.cached or run.hash in going:
                continue
            why = ("not selected (--dataset/--method)" if not cell.selected else
                   cell.offline if cell.offline and not allow_offline else
                   f"{cell.status}: {cell.reason}" if cell.reason else cell.status)
            reasons[why] = reasons.get(why, 0) + 1
    return reasons


def _warn_corrupt(plan, echo) -> None:
    store = ResultsStore(plan.results_dir)
    for run in plan.runs():
        path = store.path(run.hash)
        if not run.cached and path.exists():
            try:
                read_record(path)
            except ResultsError as err:
                echo(f"  warning: {err} -- not used; the run is planned again")


def _has_timing(spec) -> bool:
    return any(METRICS[m].factor is not None for m in spec.metrics)

