"""`llc-bench`: one console script, several subcommands.

``llc-bench run [hydra overrides]`` is a Hydra app (``-m`` multirun,
``--cfg job``, ``--help`` all work); the other subcommands are plain argparse.
"""

from __future__ import annotations

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
        from llc_bench.data.commands import datasets_command

        try:
            datasets_command(rest)
        except LLCBenchError as err:
            fail(str(err))
    else:
        fail(f"unknown command {command!r} (choose from: run, datasets)", code=2)


if __name__ == "__main__":
    main()
