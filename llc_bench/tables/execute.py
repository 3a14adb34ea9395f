"""Run the missing runs as `llc-bench run -m ...` Hydra multiruns with the chosen launcher.

The runs are grouped so that each multirun is exactly a cartesian product
models x datasets x seeds sharing all other overrides. Hydra's launcher (basic,
joblib, submitit_local, submitit_slurm or our `slurm` preset) does the scheduling;
this module only builds the command lines and then checks the store. A run that
started but left no record failed: it is retried once on its own (to tell it apart
from runs a crashing sibling took down) and then reported; runs that never started
(an earlier job stopped the sweep) are launched again.

Every run launched here computes on one thread (BLAS, OpenMP, numba: ``THREAD_VARS``
set to 1), whatever ``--jobs``, so its timings measure one core as the papers' do; with
``force`` the runs replace their stored records (same config hash, atomic write).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from llc_bench.errors import ConfigError
from llc_bench.experiment.environment import THREAD_VARS
from llc_bench.store.results import ResultsStore
from llc_bench.tables.plan import SWEEP_KEYS, RunPlan, hydra_value, override_list

# ray: hydra-ray-launcher (pip install 'llc-bench[ray]'); a running cluster needs
# --launcher-arg hydra.launcher.ray.init.address=auto (README "Ray")
LAUNCHERS = ("basic", "joblib", "submitit_local", "submitit_slurm", "slurm", "ray")
LOCAL_LAUNCHERS = ("basic", "joblib", "submitit_local")


@dataclass
class Launch:
    """One multirun: the product of ``sweep`` values, with ``common`` overrides."""

    sweep: dict                 # key -> list of values (model, dataset, seed)
    common: dict
    runs: list                  # RunPlan, in any order

    def arguments(self) -> list[str]:
        swept = [f"{k}={','.join(hydra_value(v) for v in self.sweep[k])}" for k in SWEEP_KEYS]
        return swept + override_list(self.common)


@dataclass
class ExecReport:
    executed: int = 0                          # runs that wrote a record
    failed: dict = field(default_factory=dict)  # hash -> reason
    launches: int = 0
    logs: list = field(default_factory=list)


#: the committed results store: the cost model's fallback for pairs the build's store lacks
COMMITTED = Path(__file__).resolve().parents[2] / "results"


def cost_keys(runs) -> list[tuple]:
    """(model preset, dataset config, training-row cap) of each run, for the cost model."""
    return [(r.overrides["model"], r.overrides["dataset"],
             (r.config.get("dataset") or {}).get("max_train")) for r in runs]


def group_runs(runs: Iterable[RunPlan]) -> list[Launch]:
    """Cartesian groups: seeds per config, then datasets, then models."""
    def rest(run, drop):
        return tuple((k, hydra_value(v)) for k, v in run.overrides.items() if k not in drop)

    by_seeds: dict = defaultdict(list)
    for run in runs:
        by_seeds[rest(run, ("seed",))].append(run)
    by_datasets: dict = defaultdict(list)
    for group in by_seeds.values():
        seeds = tuple(sorted({r.seed for r in group}))
        by_datasets[(rest(group[0], ("seed", "dataset")), seeds)].append(group)
    by_models: dict = defaultdict(list)
    for (_, seeds), groups in by_datasets.items():
        datasets = tuple(sorted({g[0].overrides["dataset"] for g in groups}))
        first = groups[0][0]
        # Hydra composes a multirun's non-swept overrides once with the *default* model:
        # a model-specific key (trainer.epochs, coding.n_anchors, ...) fails there, so
        # models are swept together only when the shared overrides are dataset keys.
        portable = all(k.startswith("dataset.") for k in first.overrides
                       if k not in SWEEP_KEYS)
        key = (rest(first, SWEEP_KEYS), datasets, seeds,
               None if portable else first.overrides["model"])
        by_models[key].append(groups)
    launches = []
    for (_, datasets, seeds, _), groups in by_models.items():
        models = sorted({gs[0][0].overrides["model"] for gs in groups})
        members = [r for gs in groups for g in gs for r in g]
        common = {k: v for k, v in members[0].overrides.items() if k not in SWEEP_KEYS}
        launches.append(Launch({"model": models, "dataset": list(datasets),
                                "seed": list(seeds)}, common, members))
    return launches


def launcher_overrides(launcher: str, jobs: int, extra: Iterable[str] = ()) -> list[str]:
    if launcher not in LAUNCHERS:
        raise ConfigError(f"unknown launcher {launcher!r} (choose from: {', '.join(LAUNCHERS)})")
    out = [f"hydra/launcher={launcher}"]
    if launcher == "joblib":
        out.append(f"hydra.launcher.n_jobs={max(1, jobs)}")
    elif launcher in ("submitit_slurm", "slurm") and jobs > 1:
        out.append(f"hydra.launcher.array_parallelism={jobs}")
    return out + list(extra)


def _stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Terminate ``proc`` if it still runs (SIGTERM, then SIGKILL after ``grace`` s)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _job_overrides(job_dir: Path) -> dict | None:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return None
    from omegaconf import OmegaConf

    items = OmegaConf.to_container(OmegaConf.load(path))
    return dict(item.split("=", 1) for item in items if "=" in item)


#: set in a launched run's environment: no sweep estimate (llc_bench.cli.run_command)
NO_SWEEP_ESTIMATE = "LLC_BENCH_NO_SWEEP_ESTIMATE"


class Executor:
    def __init__(self, results_dir: str | Path, launcher: str = "basic", jobs: int = 1,
                 launcher_args: Iterable[str] = (), run_args: Iterable[str] = (),
                 env: dict | None = None, echo: Callable[[str], None] = print,
                 command: list[str] | None = None):
        self.results_dir = Path(results_dir).resolve()
        self.store = ResultsStore(self.results_dir)
        self.launcher, self.jobs = launcher, jobs
        self.launcher_args = list(launcher_args)
        self.run_args = list(run_args)   # non-semantic run overrides (data.download=false ...)
        self.env = dict(os.environ if env is None else env)
        for var in THREAD_VARS:   # one thread per run, whatever --jobs (clean timings)
            self.env[var] = "1"
        # `llc-bench tables` printed the estimate of its runs: a launch does not estimate its
        # sweep again (reading every record of the store, seconds per launch)
        self.env[NO_SWEEP_ESTIMATE] = "1"
        self.echo = echo
        self.command = command or [sys.executable, "-m", "llc_bench.cli", "run", "-m"]
        launcher_overrides(launcher, jobs)   # validate early

    def _sweep_dir(self, tag: str) -> Path:
        stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        return self.results_dir / "hydra" / "tables" / f"{stamp}_{tag}"

    def arguments(self, launch: Launch, launcher: str | None = None, jobs: int | None = None,
                  extra: Iterable[str] = ()) -> list[str]:
        """The `llc-bench run -m` arguments of ``launch`` (without the sweep directory):
        what ``tables --dry-run`` prints, so a copy writes where the build would."""
        launcher = launcher or self.launcher
        return [*launch.arguments(), f"results_dir={hydra_value(str(self.results_dir))}",
                *self.run_args, *extra,
                *launcher_overrides(launcher, self.jobs if jobs is None else jobs,
                                    self.launcher_args if launcher == self.launcher else ())]

    def _launch(self, launch: Launch, tag: str, launcher: str, jobs: int,
                extra: Iterable[str] = ()) -> tuple[int, Path]:
        sweep_dir = self._sweep_dir(tag)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        argv = [*self.command, *self.arguments(launch, launcher, jobs, extra),
                f"hydra.sweep.dir={hydra_value(str(sweep_dir))}"]
        log = sweep_dir / "tables-launch.log"
        shown = " ".join(["llc-bench run -m", *argv[len(self.command):]])
        self.echo(f"  launch {len(launch.runs)} run(s): {shown}")
        with open(log, "w") as handle:
            handle.write(" ".join(argv) + "\n\n")
            handle.flush()
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, env=self.env)
            try:
                for line in proc.stdout:
                    handle.write(line)
                    if " | seed " in line or "error" in line.lower():
                        self.echo("    " + line.rstrip())
                code = proc.wait()
            finally:
                _stop(proc)  # interrupted (Ctrl-C, SIGTERM): the multirun stops with us
        return code, sweep_dir

    def _started(self, sweep_dir: Path, launch: Launch) -> set[str]:
        """Hashes of the runs whose job directory exists (they started)."""
        index = {tuple(hydra_value(r.overrides[k]) for k in SWEEP_KEYS): r.hash
                 for r in launch.runs}
        started = set()
        for job_dir in sweep_dir.iterdir() if sweep_dir.is_dir() else ():
            overrides = _job_overrides(job_dir) if job_dir.is_dir() else None
            if overrides is None:
                continue
            key = tuple(overrides.get(k) for k in SWEEP_KEYS)
            if key in index:
                started.add(index[key])
        return started

    def _error_line(self, sweep_dir: Path) -> str:
        log = sweep_dir / "tables-launch.log"
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()[1:]
                 if ln.strip() and "HYDRA_FULL_ERROR" not in ln] if log.is_file() else []
        for line in reversed(lines):
            if any(w in line.lower() for w in ("error", "could not", "exception")):
                return line[:300]
        return lines[-1][:300] if lines else "no output"

    def _stamp(self, key: str) -> int | None:
        try:
            return self.store.path(key).stat().st_mtime_ns
        except OSError:
            return None

    def run(self, runs: list[RunPlan], tag: str = "tables", force: bool = False) -> ExecReport:
        """Run ``runs`` (not stored yet, or with ``force`` stored ones again: their records
        are replaced); return what happened."""
        extra = ["force=true"] if force else []
        before = {r.hash: self._stamp(r.hash) for r in runs}

        def done(key: str) -> bool:   # a record written by this call
            return self._stamp(key) != before.get(key) and self.store.has(key)

        report = ExecReport()
        pending = {r.hash: r for r in runs}
        suspects: dict[str, str] = {}     # started, no record: retried alone once
        rounds = 0
        while pending and rounds <= len(runs) + 1:
            rounds += 1
            launches = group_runs(pending.values())
            for launch in launches:
                code, sweep_dir = self._launch(launch, tag, self.launcher, self.jobs, extra)
                report.launches += 1
                report.logs.append(str(sweep_dir / "tables-launch.log"))
                started = self._started(sweep_dir, launch)
                why = (f"run failed (exit {code}): {self._error_line(sweep_dir)} "
                       f"[log: {sweep_dir / 'tables-launch.log'}]")
                for run in launch.runs:
                    if done(run.hash):
                        report.executed += 1
                        pending.pop(run.hash, None)
                    elif not started:
                        # the multirun failed before any job: a configuration error
                        report.failed[run.hash] = why
                        pending.pop(run.hash, None)
                    elif run.hash in started and code == 0:
                        # the job succeeded but its record has another hash: the config
                        # files changed between planning and running
                        report.failed[run.hash] = (
                            "the run's config differs from the planned one (config files "
                            "changed during the build?); run `llc-bench tables` again "
                            f"[log: {sweep_dir / 'tables-launch.log'}]")
                        pending.pop(run.hash, None)
                    elif run.hash in started:
                        # started, no record: failed, or taken down by a failing sibling
                        if run.hash in suspects or len(launch.runs) == 1:
                            report.failed[run.hash] = why
                            pending.pop(run.hash, None)
                        else:
                            suspects[run.hash] = why
                    # not started while others did: an earlier job stopped the sweep;
                    # it stays pending for the next round
            # suspects are retried alone, on the basic launcher
            for key in list(suspects):
                run = pending.get(key)
                if run is None or key in report.failed:
                    continue
                single = Launch({"model": [run.overrides["model"]],
                                 "dataset": [run.overrides["dataset"]], "seed": [run.seed]},
                                {k: v for k, v in run.overrides.items() if k not in SWEEP_KEYS},
                                [run])
                code, sweep_dir = self._launch(single, tag, "basic", 1, extra)
                report.launches += 1
                report.logs.append(str(sweep_dir / "tables-launch.log"))
                pending.pop(key, None)
                if done(key):
                    report.executed += 1
                else:
                    report.failed[key] = (f"run failed (exit {code}): "
                                          f"{self._error_line(sweep_dir)} "
                                          f"[log: {sweep_dir / 'tables-launch.log'}]")
            suspects = {}
        for key in pending:
            report.failed.setdefault(key, "run not started (the multirun stopped early)")
        return report
