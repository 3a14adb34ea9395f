"""`llc-bench tables` and `llc-bench figures`: their arguments and the build they drive."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from llc_bench.cli.arguments import command_parser
from llc_bench.errors import ConfigError, did_you_mean
from llc_bench.store.results import not_a_directory
from llc_bench.tables.build import Build, build_tables
from llc_bench.tables.execute import LAUNCHERS, LOCAL_LAUNCHERS, Executor
from llc_bench.tables.spec import list_tables, load_profile, load_table


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


def tables_command(argv: list[str], echo=print) -> dict:
    """Build tables; returns {table: {planned, cached, executed, failed, wall_seconds}}."""
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
    build = Build(args.results_dir, out_dir, profile, mirrors=args.mirror,
                  datasets=args.dataset, methods=args.method, dry_run=args.dry_run,
                  timing_only=args.timing_only, no_run=args.no_run, download=args.download,
                  out_given=bool(args.out))
    return build_tables(names, build, _executor(args, echo), echo)



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
    parser.add_argument("--dry-run", action="store_true",
                        help="print each figure's runs (planned, in the store, to run, the "
                        "multirun command lines) and exit, drawing nothing")
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
                         datasets=args.dataset, own=own, dry_run=args.dry_run)


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
