"""`llc-bench`: one console script, several subcommands.

``llc-bench run [hydra overrides]`` is a Hydra app (``-m`` multirun,
``--cfg job``, ``--help`` all work); the other subcommands are plain argparse.

Every error ends as one line, ``llc-bench: error: <message>``, exit code 1 (130 for
Ctrl-C); ``--debug`` (or ``LLC_BENCH_DEBUG=1``) prints the traceback before it.  In a
``-m`` sweep a failed job prints its line and the sweep goes on; the failed jobs are
listed at the end (each also leaves its line in ``<job dir>/error.txt``).
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import sys
import traceback
from pathlib import Path

import hydra
from hydra.errors import HydraException, OverrideParseException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from llc_bench import console
from llc_bench.errors import ConfigError, LLCBenchError, did_you_mean
from llc_bench.selection.tuning import register_resolvers

register_resolvers()  # the study name and storage of conf/search/_optuna.yaml

DEBUG_ENV = "LLC_BENCH_DEBUG"
FAILED_JOB_FILE = "error.txt"

USAGE = """\
usage: llc-bench <command> [arguments]

commands:
  run        run one experiment (a Hydra app): llc-bench run dataset=ijcnn model=linear
             sweep with -m: llc-bench run -m dataset=banana,magic04 seed=0,1,2
             show the composed config: llc-bench run --cfg job; options: llc-bench run --help
  tune       select a model's hyper-parameters on a dataset's training split and write the
             preset conf/tuned/MODEL_DATASET.yaml: llc-bench tune llsvm usps
             (--from-sweep: the best trial of a +search=MODEL sweep's Optuna study)
  models     list the model presets, or one preset's parameters (default, allowed values,
             what each does): llc-bench models llsvm
  predict    apply a model kept with save_model=true to a data file:
             llc-bench predict results-scratch/models/HASH.llcm new.csv --out preds.csv
  export     write a kept model as ONNX: llc-bench export MODEL.llcm --onnx model.onnx
  datasets   list the datasets, show one, fetch its files, or convert them to a row store:
             llc-bench datasets [list | info NAME | fetch NAME | convert NAME]
  tables     regenerate the papers' tables beside their numbers (runs what is missing):
             llc-bench tables [--profile quick|full] [--table NAME] [--launcher L] [--jobs N]
  figures    redraw the papers' figures: llc-bench figures [--profile quick|full] [--figure NAME]
  results    list, filter and export the run records: llc-bench results [--dataset NAME]
             [--model NAME] [--where trainer.lambda_=1e-5] [--csv PATH | --parquet PATH]

Run 'llc-bench <command> --help' for the options of a command; add --debug (anywhere) to
see the traceback of an error; 'llc-bench --version' prints the version.
"""


def fail(message: str, code: int = 1) -> None:
    """Print a one-line error and exit."""
    print(f"llc-bench: error: {' '.join(message.split())}", file=sys.stderr)
    raise SystemExit(code)


def error_line(err: BaseException) -> str:
    """The one line that reports ``err``: the message of an llc-bench error or of a
    parameter error (also when Hydra or OmegaConf wrapped it), Hydra's own message, the
    file of an OS error, else the exception's type and message."""
    from sklearn.utils._param_validation import InvalidParameterError

    cause = err
    while cause is not None:
        if isinstance(cause, LLCBenchError | InvalidParameterError):
            return " ".join(str(cause).split())
        cause = cause.__cause__
    text = " ".join(str(err).split())
    if isinstance(err, OverrideParseException):
        key, equals, value = str(err.override or "").partition("=")
        quote = (f"; quote a value holding '=', ',' or letters beyond ASCII (a file "
                 f"name, say): \"{key}='{value}'\"" if equals and value
                 and value[0] not in "'\"[{(" and "'" not in value else "")
        return f"cannot parse the override {err.override!r}: {text}{quote}"
    if isinstance(err, HydraException | OmegaConfBaseException):
        if isinstance(err.__cause__, OmegaConfBaseException):  # Hydra's "could not override"
            text += f" ({str(err.__cause__).splitlines()[0]})"
        return text
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {err.strerror}"
    if isinstance(err, MemoryError):
        return f"out of memory {text}".strip()
    return f"unexpected {type(err).__name__}: {text} (--debug shows the traceback)"


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV) == "1"


def _report(err: BaseException) -> None:
    """Exit with one error line (and, with --debug, the traceback first)."""
    if _debug():
        traceback.print_exception(err)
    if isinstance(err, KeyboardInterrupt):
        fail("interrupted", code=130)
    fail(error_line(err))


_RUN: dict = {}  # the single run's error, the sweep directory: set by the task and callback


class _Stop(BaseException):
    """Carries an error out of a Hydra callback (Hydra turns an Exception into a warning)."""


class RunCallback(Callback):
    """Hydra callback (conf/run.yaml): checks the results store before Hydra makes its
    directories in it, remembers the sweep directory, and removes it after a sweep whose
    jobs were all cache hits."""

    def on_run_start(self, config, **kwargs) -> None:
        from llc_bench.store.results import ResultsStore

        try:
            ResultsStore(config.results_dir).check_writable()
        except LLCBenchError as err:
            raise _Stop(err) from err

    def on_multirun_start(self, config, **kwargs) -> None:
        self.on_run_start(config)
        from llc_bench.selection.tuning import check_sweep

        try:
            check_sweep(config)  # a tuning sweeper (Optuna) scores held-out training rows only
            check_launcher(config)
        except LLCBenchError as err:
            raise _Stop(err) from err
        _RUN["sweep_dir"] = Path(str(config.hydra.sweep.dir))

    def on_multirun_end(self, config, **kwargs) -> None:
        from llc_bench.experiment.runner import discard_run_dir

        discard_run_dir(str(config.hydra.sweep.dir), config.results_dir)


def check_launcher(config) -> None:
    """A SLURM launcher needs a SLURM cluster: say so before any job is submitted."""
    target = str(config.hydra.launcher.get("_target_", ""))
    if target.endswith("SlurmLauncher") and shutil.which("srun") is None:
        raise ConfigError("hydra/launcher=slurm submits to a SLURM cluster, and this machine "
                          "has none (no `srun` on PATH): run it on the cluster's login node, "
                          "or locally with hydra/launcher=joblib (or basic, submitit_local)")


@hydra.main(config_path="pkg://llc_bench.conf", config_name="run", version_base="1.3")
def run_app(cfg: DictConfig) -> float | None:
    """The Hydra task: one experiment per composed config.  A single run's error is kept
    for ``main`` to report; a sweep job's error is reported here and the sweep goes on.
    Returns the run's test accuracy (the validation accuracy with ``dataset.validation``):
    the objective of a tuning sweeper (``+search=<model>``, Optuna)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from llc_bench.experiment.runner import discard_run_dir, run_experiment

    hc = HydraConfig.get()
    console.install()  # also in a launcher's worker process
    try:
        from llc_bench import progress

        progress.configure(cfg.get("progress"), parallel=hc.mode == RunMode.MULTIRUN
                           and "joblib" in str(hc.launcher.get("_target_", "")).lower())
        record = run_experiment(cfg, output_dir=hc.runtime.output_dir,
                                fixed=_fixed_keys(hc))
    except Exception as err:
        if hc.mode != RunMode.MULTIRUN:
            _RUN["error"] = err
            discard_run_dir(hc.runtime.output_dir, cfg.results_dir)
            return
        if _debug():
            traceback.print_exception(err)
        line = f"job {hc.job.num}: {error_line(err)} [job: {' '.join(hc.overrides.task)}]"
        print(f"llc-bench: error: {line}", file=sys.stderr, flush=True)
        (Path(hc.runtime.output_dir) / FAILED_JOB_FILE).write_text(line + "\n")
        return None
    return record["metrics"].get("test_accuracy")


def _fixed_keys(hc) -> tuple:
    """The config keys set on the command line (they win over a search: ``tune``); all of
    them ("*") inside a tuning sweeper's trial, whose sweeper is the search."""
    if "optuna" in str(hc.sweeper.get("_target_", "")).lower():
        return ("*",)
    keys = (o.split("=", 1)[0].lstrip("+~") for o in hc.overrides.task if "=" in o)
    return tuple(k for k in keys if "/" not in k)


#: config groups whose choices are files conf/<group>/<name>.yaml (``+search=NAME`` too)
CHOICE_GROUPS = ("dataset", "model", "coding", "trainer", "tune", "search")


def searchpath_dirs(argv: list[str]) -> list[str]:
    """The directories of ``hydra.searchpath=[file://DIR,...]`` on the command line (a
    user's own config dirs: their group files are choices too)."""
    dirs = []
    for arg in argv:
        key, _, value = arg.partition("=")
        if key.lstrip("+") == "hydra.searchpath":
            for entry in value.strip("[]").split(","):
                entry = entry.strip().strip("'\"")
                if entry.startswith("file://"):
                    dirs.append(entry.removeprefix("file://"))
    return dirs


def check_choices(argv: list[str]) -> None:
    """Every config-group choice of the command line exists, each value of a sweep list
    (``model=linear,nosuch,llsvm``) included: one error that names all the bad ones, before
    any job runs."""
    from importlib.resources import files

    confs = [files("llc_bench.conf"), *(Path(d) for d in searchpath_dirs(argv))]
    bad = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        group = key.lstrip("+~")
        if not sep or group not in CHOICE_GROUPS or any(c in value for c in "()[]{}$*"):
            continue  # not a plain choice (sweep functions, interpolations: Hydra checks)
        known = sorted({p.name[:-5] for conf in confs if (conf / group).is_dir()
                        for p in (conf / group).iterdir()
                        if p.name.endswith(".yaml") and not p.name.startswith("_")})
        for name in (v.strip().strip("'\"") for v in value.split(",")):
            if name and name not in known:
                bad.append(f"{group}={name}{did_you_mean(name, known)}")
    if bad:
        raise ConfigError(f"no such choice: {'; '.join(bad)} (`llc-bench run --help` lists "
                          "the choices of each group)")


def sweep_estimate(argv: list[str], limit: int = 200) -> str | None:
    """``sweep: 18 runs, 2 in the store, ~14 min to run`` for a ``-m`` command line with
    plain comma lists (None for other sweeps, e.g. a tuning sweeper's, or above ``limit``
    runs): each run composed and hashed as the run will be, its cost from the store."""
    import itertools

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import prepare_config
    from llc_bench.store.costs import CostModel, describe
    from llc_bench.store.results import ResultsStore, config_hash

    overrides = [a for a in argv if a not in ("-m", "--multirun") and "=" in a]
    if any(a.lstrip("+").startswith(("search=", "hydra/sweeper")) for a in overrides):
        return None
    lists = []
    for arg in overrides:
        key, _, value = arg.partition("=")
        plain = not any(c in value for c in "()[]{}$*'\"")
        lists.append([f"{key}={v}" for v in value.split(",")] if plain else [arg])
    combos = list(itertools.product(*lists))
    if not combos or len(combos) > limit:
        return None
    stored, pending = 0, []
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        for combo in combos:
            config = OmegaConf.to_container(compose("run", overrides=list(combo)), resolve=True)
            prepare_config(config, fixed=tuple(o.split("=", 1)[0].lstrip("+~") for o in combo))
            if ResultsStore(config["results_dir"]).has(config_hash(config)):
                stored += 1
            else:
                pending.append((config["model"]["name"], config["dataset"]["name"],
                                config["dataset"].get("max_train")))
    costs = CostModel(config["results_dir"],
                      fallbacks=[Path(__file__).resolve().parents[2] / "results"])
    known, unknown = costs.total(pending)
    runs = f"sweep: {len(combos)} run{'s' * (len(combos) != 1)}, {stored} in the store"
    if pending and unknown == len(pending):
        return (f"{runs}, no estimate of the time to run the rest (no stored run of these "
                "models on this dataset)")
    return f"{runs}, {describe(known, unknown) if pending else 'nothing'} to run"


def _failed_jobs() -> list[Path]:
    """The failed-job notes of the sweep just run, in job order."""
    sweep_dir = _RUN.get("sweep_dir")
    return sorted(sweep_dir.glob(f"*/{FAILED_JOB_FILE}"),
                  key=lambda p: (len(p.parent.name), p.parent.name)) if sweep_dir else []


def run_command(argv: list[str]) -> None:
    """`llc-bench run [-m] [overrides]`: Hydra's errors are raised to ``main`` (not printed
    by Hydra); a sweep with failed jobs lists them and exits 1."""
    check_choices(argv)
    if ("-m" in argv or "--multirun" in argv) and not os.environ.get(
            "LLC_BENCH_NO_SWEEP_ESTIMATE"):  # set by `llc-bench tables`, which estimated
        try:
            estimate = sweep_estimate(argv)
        except Exception:  # an estimate is a courtesy: the sweep itself reports errors
            estimate = None
        if estimate:
            print(f"llc-bench: {estimate}", flush=True)
    _RUN.clear()
    sys.argv = ["llc-bench run", *argv]
    saved = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        run_app()
    except ValueError:  # Hydra's Optuna sweeper asks for the best of a study none of whose
        if not _failed_jobs():  # trials completed ("Record does not exist."): the failed
            raise               # jobs, listed below, say why
    finally:
        if saved is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved
    if "error" in _RUN:
        raise _RUN["error"]
    failed = _failed_jobs()
    if failed:
        print(f"llc-bench: {len(failed)} job(s) of the sweep failed:", file=sys.stderr)
        for path in failed:
            print(f"llc-bench: error: {path.read_text().strip()}", file=sys.stderr)
        raise SystemExit(1)


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("llc-bench")
    except PackageNotFoundError:
        from llc_bench import __version__

        return __version__


#: subcommand -> "module:function(argv)", imported when the command runs
COMMANDS = {
    "run": "llc_bench.cli:run_command", "datasets": "llc_bench.cli.datasets:datasets_command",
    "tune": "llc_bench.cli.tune:tune_command",
    "predict": "llc_bench.cli.serving:predict_command",
    "export": "llc_bench.cli.serving:export_command",
    "models": "llc_bench.cli.models:models_command",
    "results": "llc_bench.cli.results:results_command",
    "runs": "llc_bench.cli.results:results_command",
    "tables": "llc_bench.cli.tables:tables_command",
    "figures": "llc_bench.cli.tables:figures_command",
}


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--debug" in argv and not _debug():
        os.environ[DEBUG_ENV] = "1"  # also seen by the jobs of a sweep in other processes
        try:
            return main([a for a in argv if a != "--debug"])
        finally:
            del os.environ[DEBUG_ENV]
    argv = [a for a in argv if a != "--debug"]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return
    if argv[0] in ("--version", "-V"):
        print(f"llc-bench {version()}")
        return
    command, rest = argv[0], argv[1:]
    console.install()
    try:
        if command not in COMMANDS:
            fail(f"unknown command {command!r} (choose from: run, tune, models, predict, "
                 "export, datasets, tables, figures, results)",
                 code=2)
        if command in ("tables", "figures", "predict", "export"):
            # SIGTERM unwinds like Ctrl-C: the multirun a build launched is stopped too, and
            # the temporary file of a predict or export is removed
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        module, function = COMMANDS[command].split(":")
        getattr(importlib.import_module(module), function)(rest)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:
        console.stdout_closed()
    except _Stop as stop:
        _report(stop.args[0])
    except (Exception, KeyboardInterrupt) as err:
        _report(err)

