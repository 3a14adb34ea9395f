"""`llc-bench`: one console script, several subcommands.

``llc-bench run [hydra overrides]`` is a Hydra app (``-m`` multirun,
``--cfg job``, ``--help`` all work); the other subcommands are plain argparse.
"""

from __future__ import annotations

import signal
import sys

import hydra
from omegaconf import DictConfig

from llc_bench.errors import LLCBenchError

USAGE = """\
usage: llc-bench <command> [arguments]

commands:
  run        run one experiment (a Hydra app): llc-bench run dataset=ijcnn model=linear
             sweep with -m: llc-bench run -m dataset=banana,magic04 seed=0,1,2
             show the composed config: llc-bench run --cfg job; options: llc-bench run --help
  datasets   list the datasets, show one, or fetch its files:
             llc-bench datasets [list | info NAME | fetch NAME]
  tables     regenerate the papers' tables beside their numbers (runs what is missing):
             llc-bench tables [--profile quick|full] [--table NAME] [--launcher L] [--jobs N]
  figures    redraw the papers' figures: llc-bench figures [--profile quick|full] [--figure NAME]

Run 'llc-bench <command> --help' for the options of a command.
"""


def fail(message: str, code: int = 1) -> None:
    """Print a one-line error and exit."""
    print(f"llc-bench: error: {message}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(config_path="pkg://llc_bench.conf", config_name="run", version_base="1.3")
def run_app(cfg: DictConfig) -> None:
    """The Hydra task: one experiment per composed config."""
    from hydra.core.hydra_config import HydraConfig

    from llc_bench.experiment.runner import run_experiment

    try:
        run_experiment(cfg, output_dir=HydraConfig.get().runtime.output_dir)
    except LLCBenchError as err:
        fail(str(err))


def datasets_command(argv: list[str]) -> None:
    """`llc-bench datasets [list | info NAME | fetch NAME]`."""
    import argparse
    import json

    from llc_bench.data import dataset_spec, dataset_status, fetch_dataset, list_datasets

    parser = argparse.ArgumentParser(prog="llc-bench datasets",
                                     description="List, describe or fetch the datasets.")
    parser.add_argument("action", nargs="?", default="list", choices=["list", "info", "fetch"])
    parser.add_argument("name", nargs="?", help="a dataset name (see `llc-bench datasets list`)")
    parser.add_argument("--home", help="data home (default: $LLC_BENCH_DATA, ./datasets in a "
                        "checkout, else ~/.cache/llc-bench)")
    parser.add_argument("--mirror", action="append", default=[],
                        help="a read-only directory to look in before downloading (repeatable)")
    parser.add_argument("--no-download", action="store_true", help="never use the network")
    args = parser.parse_args(argv)
    if args.action != "list" and not args.name:
        parser.error(f"`{args.action}` needs a dataset NAME")
    if args.name and args.name not in list_datasets():
        fail(f"unknown dataset {args.name!r} (see `llc-bench datasets list`)")
    where = {"home": args.home, "mirrors": tuple(args.mirror)}
    if args.action == "list":
        rows = [dataset_status(name, **where) for name in list_datasets()]
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            state = ("offline ok" if r["available"] else
                     "generated" if r["kind"] == "synthetic" else "download needed")
            print(f"{r['name']:<{width}}  {r['task']:<10}  {state:<15}  "
                  f"{dataset_spec(r['name']).get('description', '')}")
    elif args.action == "info":
        status = dataset_status(args.name, **where)
        print(json.dumps({"spec": dataset_spec(args.name), "status": status}, indent=1,
                         default=str))
    else:
        files = fetch_dataset(args.name, download=not args.no_download, **where)
        for role, paths in files.items():
            for path in paths:
                print(f"{role}: {path}")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return
    command, rest = argv[0], argv[1:]
    if command == "run":
        sys.argv = ["llc-bench run", *rest]
        run_app()
    elif command == "datasets":
        try:
            datasets_command(rest)
        except LLCBenchError as err:
            fail(str(err))
    elif command in ("tables", "figures"):
        from llc_bench.tables.command import figures_command, tables_command

        # SIGTERM unwinds like Ctrl-C, so the multirun a build launched is stopped too
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        try:
            (tables_command if command == "tables" else figures_command)(rest)
        except LLCBenchError as err:
            fail(str(err))
    else:
        fail(f"unknown command {command!r} (choose from: run, datasets, tables, figures)",
             code=2)


if __name__ == "__main__":
    main()
