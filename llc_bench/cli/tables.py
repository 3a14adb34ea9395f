"""`llc-bench tables` and `llc-bench figures`: their arguments and the build they drive."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from llc_bench import progress
from llc_bench.cli.arguments import command_parser
from llc_bench.errors import ConfigError, ResultsError, did_you_mean
from llc_bench.store.costs import CostModel, build_seconds, describe
from llc_bench.store.results import ResultsStore, not_a_directory, read_record
from llc_bench.tables.execute import (
    LAUNCHERS,
    LOCAL_LAUNCHERS,
    ExecReport,
    Executor,
    group_runs,
)
from llc_bench.tables.spec import RUN, list_tables, load_profile, load_table, tables_config

#: the committed store of a checkout: estimates for a fresh --results-dir
COMMITTED = Path(__file__).resolve().parents[2] / "results"


def _pairs(runs) -> list[tuple]:
    """(model preset, dataset config, training-row cap) of each run, for the cost model."""
    return [(r.overrides["model"], r.overrides["dataset"],
             (r.config.get("dataset") or {}).get("max_train")) for r in runs]


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


def _jobs(text: str) -> int:
    """``--jobs``: a whole number of parallel runs, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _common(parser: argparse.ArgumentParser, out: str = "tables") -> None:
    parser.add_argument("--profile", default="full", choices=["quick", "full"],
                        help="full: the papers' protocol; quick: a few-minute smoke build "
                        "(1 seed, subsampled training sets, fewer epochs) written to "
                        f"<results-dir>/{out}-quick (default: full)")
    parser.add_argument("--launcher", choices=LAUNCHERS, default=None,
                        help="Hydra launcher of the multiruns (default: joblib when --jobs > 1, "
                        "else basic); slurm = our submitit_slurm preset")
    parser.add_argument("--jobs", type=_jobs, default=1,
                        help="parallel runs (joblib n_jobs / SLURM array parallelism)")
    parser.add_argument("--launcher-arg", action="append", default=[], metavar="OVERRIDE",
                        help="extra Hydra launcher override, e.g. hydra.launcher.partition=cpu")
    parser.add_argument("--results-dir", default="results",
                        help="results store (runs/<hash>.json) (default: results)")
    parser.add_argument("--out", default=None,
                        help=f"output directory (default: <results-dir>/{out}, or "
                        f"<results-dir>/{out}-quick with --profile quick)")
    parser.add_argument("--mirror", action="append", default=[],
                        help="read-only dataset mirror (also $LLC_BENCH_MIRROR; repeatable)")
    parser.add_argument("--download", action="store_true",
                        help="let runs download datasets that are not available offline")
    parser.add_argument("--no-run", action="store_true",
                        help="run nothing: build from the records already in the store")


def _executor(args, echo) -> Executor:
    env = dict(os.environ)
    if args.mirror:
        env["LLC_BENCH_MIRROR"] = os.pathsep.join(
            [str(Path(m).resolve()) for m in args.mirror]
            + [p for p in env.get("LLC_BENCH_MIRROR", "").split(os.pathsep) if p])
    launcher = args.launcher or ("joblib" if args.jobs > 1 else "basic")
    run_args = [] if args.download else ["data.download=false"]
    return Executor(args.results_dir, launcher=launcher, jobs=args.jobs,
                    launcher_args=args.launcher_arg, run_args=run_args, env=env, echo=echo)


def _warn_corrupt(plan, echo) -> None:
    store = ResultsStore(plan.results_dir)
    for run in plan.runs():
        path = store.path(run.hash)
        if not run.cached and path.exists():
            try:
                read_record(path)
            except ResultsError as err:
                echo(f"  warning: {err} -- not used; the run is planned again")


def _check_filters(names: list[str], datasets: list[str], methods: list[str]) -> None:
    """``--dataset`` / ``--method`` values that name nothing in the tables asked for are
    a ConfigError (with the closest name), not a build that runs nothing."""
    known: dict[str, set] = {"--dataset": set(), "--method": set()}
    for name in names:
        spec = load_table(name)
        known["--dataset"] |= set(spec.datasets) | {
            str(spec.settings(d, m).dataset_config) for d in spec.datasets for m in spec.methods}
        known["--method"] |= set(spec.methods) | {str(m.model) for m in spec.methods.values()
                                                  if m.model}
    for option, given in (("--dataset", datasets), ("--method", methods)):
        for value in given:
            if value not in known[option]:
                raise ConfigError(f"{option} {value!r} matched nothing in table(s) "
                                  f"{', '.join(names)}{did_you_mean(value, known[option])} "
                                  f"(see the table configs in conf/table/)")


def _check_output_dirs(results_dir, out_dir: Path, given: bool) -> None:
    """Directories a build writes under: a part of them that is a file is named first."""
    for option, path in (("--results-dir", Path(results_dir)),
                         ("--out" if given else "--results-dir", out_dir)):
        blocking = not_a_directory(path)
        if blocking is not None:
            raise ConfigError(f"{option} {path}: {blocking} is a file, not a directory")


def _has_timing(spec) -> bool:
    from llc_bench.tables.spec import METRICS

    return any(METRICS[m].factor is not None for m in spec.metrics)


def tables_command(argv: list[str], echo=print) -> dict:
    """Build tables; returns {table: {planned, cached, executed, failed, wall_seconds}}."""
    from llc_bench.tables.aggregate import aggregate, timing_reruns
    from llc_bench.tables.plan import Composer, Planner
    from llc_bench.tables.render import write_summary, write_table
    from llc_bench.tables.report import build_report

    parser = command_parser(
        "tables", "Regenerate the papers' tables side by side with the papers' numbers: "
        "plan every run a table needs (config hashes as `llc-bench run` computes them), "
        "run the missing ones through Hydra multiruns, aggregate mean ± std over seeds and "
        "write <out>/<paper>_<table>.{md,csv,tex} and <out>/README.md.")
    parser.add_argument("--table", action="append", default=[], metavar="NAME",
                        help="a table to build (repeatable; default: all, see --list)")
    parser.add_argument("--dataset", action="append", default=[], metavar="NAME",
                        help="only run cells of this dataset (paper name or dataset config; "
                        "repeatable); other cells are filled from the store")
    parser.add_argument("--method", action="append", default=[], metavar="NAME",
                        help="only run cells of this method (paper name or model preset; "
                        "repeatable)")
    parser.add_argument("--list", action="store_true", help="list the tables and exit")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would run (the multirun command lines) and exit")
    parser.add_argument("--timing-only", action="store_true",
                        help="rerun only the runs of the timing tables whose records are not "
                        "timed cleanly (overlapped by another run, more than one thread, numba "
                        "JIT compilation inside the timed fit, or made before the start/stop "
                        "log) and, on a dataset timed on more than one host, those not timed "
                        "on this one, replacing their records; use with "
                        "--jobs 1 (the other tables are left as they are)")
    _common(parser)
    args = parser.parse_args(argv)
    if args.timing_only and args.jobs > 1 and (args.launcher or "joblib") in LOCAL_LAUNCHERS:
        raise ConfigError("--timing-only with --jobs > 1 on this machine would time runs that "
                          "overlap: use --jobs 1 (or a SLURM launcher)")
    if args.list:
        for name in list_tables():
            spec = load_table(name)
            echo(f"{name:<14} {spec.title}")
        return {}
    names = args.table or list_tables()
    for name in names:
        load_table(name)  # fail early on an unknown name
    _check_filters(names, args.dataset, args.method)
    profile = load_profile(args.profile)
    out_dir = Path(args.out) if args.out else Path(args.results_dir) / profile.out
    _check_output_dirs(args.results_dir, out_dir, bool(args.out))
    executor = _executor(args, echo)
    store = ResultsStore(args.results_dir)
    stats: dict = {}
    costs = None
    began = time.perf_counter()
    counted: set[str] = set()  # runs an earlier table of this build runs
    total = [0.0, 0, 0, 0]     # estimated seconds, runs without an estimate, runs, launches
    with Composer() as composer:
        planner = Planner(args.results_dir, profile, mirrors=args.mirror, composer=composer)
        for name in names:
            start = time.perf_counter()
            spec = load_table(name)
            if args.timing_only and not _has_timing(spec):
                echo(f"[{name}] no timing cells: left as it is (--timing-only)")
                continue
            plan = planner.plan(spec, args.dataset, args.method)
            runs = {r.hash: r for r in plan.runs()}
            cached = sum(1 for r in runs.values() if r.cached)
            if args.timing_only:  # forced reruns of the runs not timed cleanly
                todo = timing_reruns(plan, allow_offline=args.download)
            else:
                todo = plan.to_execute(allow_offline=args.download)
            costs = costs or CostModel(args.results_dir, fallbacks=[COMMITTED])
            new = [r for r in todo if r.hash not in counted]  # the others: an earlier table's
            counted.update(r.hash for r in new)
            seconds, unknown = costs.total(_pairs(new))
            launches = len(group_runs(new))
            total = [total[0] + seconds, total[1] + unknown, total[2] + len(new),
                     total[3] + launches]
            seconds = build_seconds(seconds, launches)
            cost = describe(seconds, unknown) if new else "nothing"
            shared = len(todo) - len(new)
            cost += f" ({shared} of them run by an earlier table)" if shared else ""
            echo(f"[{name}] {len(plan.cells)} cells, {len(runs)} runs planned, {cached} in the "
                 f"store, {len(todo)} to run ({profile.name} profile): {cost}")
            for reason, count in _not_run(plan, todo, args.download).items():
                what = "runs not planned" if reason.startswith("not in the ") else \
                    "planned runs not run"
                echo(f"  {count} {what if count != 1 else what.replace('runs', 'run')}: "
                     f"{reason}")
            _warn_corrupt(plan, echo)
            if args.dry_run:
                for launch in group_runs(todo):
                    known, unknown = costs.total(_pairs(launch.runs))
                    echo(f"  # {describe(build_seconds(known, 1), unknown)}")
                    echo("  llc-bench run -m " + " ".join(executor.arguments(
                        launch, extra=["force=true"] if args.timing_only else ())))
                continue
            report = ExecReport()
            if todo and not args.no_run:
                with progress.runs_bar(len(todo), f"[{name}] runs", echo) as executor.echo:
                    # a bar: runs done / to run, ETA
                    report = executor.run(todo, tag=name, force=args.timing_only)
                executor.echo = echo
                plan.refresh(store)
            result = aggregate(plan, report.failed)
            result.executed = report.executed
            result.wall_seconds = time.perf_counter() - start
            for problem in result.problems:
                echo(f"  warning: {problem}")
            for key, why in report.failed.items():
                echo(f"  failed: {runs[key].label}: {why}")
            paths = write_table(result, out_dir)
            c = result.counts()
            echo(f"  {paths[0]}: {c['compared']} compared ({c['within']} within, "
                 f"{c['better']} better, {c['worse']} worse), {c['paper_only']} paper-only; "
                 f"{report.executed} runs executed in {result.wall_seconds:.1f} s")
            stats[name] = {"planned": len(runs), "cached": cached, "executed": report.executed,
                           "failed": len(report.failed), "to_run": len(todo),
                           "wall_seconds": result.wall_seconds, "problems": result.problems,
                           "paths": [str(p) for p in paths]}
    if args.dry_run:
        # the real build plans as this dry run did, then runs and writes what it planned
        planning = time.perf_counter() - began
        runs_s, unknown, n, launches = total
        seconds = build_seconds(runs_s, launches) + planning
        echo(f"estimate: {n} runs in {launches} launches: runs ~{runs_s:.0f} s, process "
             f"starts ~{seconds - runs_s - planning:.0f} s, planning ~{planning:.0f} s: "
             f"{describe(seconds, unknown)} ({seconds:.0f} s)")
    if not args.dry_run:
        summary = write_summary(out_dir, list(tables_config().get("tables") or []), profile)
        echo(f"summary: {summary}")
        echo(f"report: {build_report(args.results_dir, out_dir, profile, bool(args.out))}")
    return stats


def figures_command(argv: list[str], echo=print) -> dict:
    """Draw the papers' figures; returns {figure: path or skip reason}."""
    from llc_bench.tables.figures import build_figures, list_figures

    parser = command_parser(
        "figures", "Redraw the papers' figures (PNG + PDF) from runs planned and cached like "
        "the tables' (decision boundaries are fitted in-process).")
    parser.add_argument("--figure", action="append", default=[], metavar="NAME",
                        help="a figure to draw (repeatable; default: all, see --list)")
    parser.add_argument("--dataset", action="append", default=[], metavar="NAME",
                        help="draw on this dataset config instead of the figure's own "
                        "(repeatable; e.g. --figure pareto --dataset usps); the file is then "
                        "<figure>_<datasets>.png")
    parser.add_argument("--list", action="store_true", help="list the figures and exit")
    parser.add_argument("--regions", metavar="DATASET",
                        help="draw LL-SVM's decision regions and anchors beside the RBF kernel "
                        "SVM's on a 2-D dataset (e.g. banana) into --out (default docs/img)")
    parser.add_argument("own", nargs="*", default=[], metavar="dataset.KEY=VALUE",
                        help="with --dataset file: your own files, as for llc-bench run "
                        "(dataset.train=PATH dataset.test=PATH or dataset.test_fraction=F, "
                        "...); the runs then go to results-scratch unless --results-dir")
    _common(parser, out="figures")
    args = parser.parse_intermixed_args(argv)
    if args.list:
        for name, spec in list_figures().items():
            echo(f"{name:<14} {spec.get('title', '')}")
        return {}
    if args.regions:
        from llc_bench.tables.regions import draw_regions

        path = draw_regions(args.regions, args.out or "docs/img", mirrors=args.mirror)
        echo(f"wrote {path}")
        return {"regions": str(path)}
    own = _own_files(args, argv)
    profile = load_profile(args.profile)
    out_dir = Path(args.out) if args.out else Path(args.results_dir) / profile.figures_out
    _check_output_dirs(args.results_dir, out_dir, bool(args.out))
    return build_figures(args.figure or list(list_figures()), profile, out_dir,
                         executor=_executor(args, echo), results_dir=args.results_dir,
                         mirrors=args.mirror, run=not args.no_run, echo=echo,
                         datasets=args.dataset, own=own)


def _own_files(args, argv: list[str]) -> dict:
    """``figures --dataset file dataset.train=PATH ...``: the dataset=file overrides (paths
    made absolute: the runs start elsewhere); such runs go to the scratch store unless
    --results-dir says otherwise (the committed results/ holds the papers' runs)."""
    from llc_bench.data.custom import absolute_path

    if not args.own:
        if "file" in args.dataset:
            raise ConfigError("--dataset file needs your files: llc-bench figures --figure "
                              "pareto --dataset file dataset.train=PATH dataset.test=PATH (or "
                              "dataset.test_fraction=F)")
        return {}
    if "file" not in args.dataset:
        raise ConfigError(f"{args.own[0]}: dataset.KEY=VALUE arguments describe own files, "
                          "for --dataset file")
    from hydra.core.override_parser.overrides_parser import OverridesParser

    own = {}
    for item in args.own:
        key, equals, _ = item.partition("=")
        if not key.startswith("dataset.") or not equals:
            raise ConfigError(f"{item!r}: expected dataset.KEY=VALUE (the options of "
                              "dataset=file, e.g. dataset.train=PATH)")
        value = OverridesParser.create().parse_overrides([item])[0].value()  # as run reads it
        own[key] = absolute_path(value) if key in ("dataset.train", "dataset.test") else value
    if not any(a == "--results-dir" or a.startswith("--results-dir=") for a in argv):
        args.results_dir = "results-scratch"
    return own
