"""Progress bars (tqdm): the one place that decides whether they are shown.

``progress: auto|on|off`` in the run config (``$LLC_BENCH_PROGRESS`` where no run config is
read, e.g. ``llc-bench tables``; the jobs of a sweep inherit both).  ``auto`` shows bars only
when stderr is a terminal and neither ``$CI`` nor SLURM (``$SLURM_JOB_ID``) is set, so logs
stay clean, and not in the parallel jobs of the joblib launcher.  Bars go to stderr;
results and summaries stay on stdout.

Code reports progress through :func:`bar` (a tqdm, disabled when bars are off) and
:func:`stage` (a one-line spinner with elapsed time for a step of unknown length, e.g.
k-means or the LIBLINEAR init).  Inside :func:`quiet` (the fits of a cross-validation,
which has its own bar) no bar is shown.  A run keeps one status line through all its
phases (:func:`run_status`: ``[4/5] fit · KMeans (100 anchors) / 00:03``): a stage names
itself there instead of opening a line of its own, bars go below it, and :func:`above`
prints a line of text above it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from tqdm.auto import tqdm

from llc_bench.errors import ConfigError

MODES = ("auto", "on", "off")
ENV = "LLC_BENCH_PROGRESS"
CI_VARS = ("CI", "SLURM_JOB_ID")

_state = {"mode": None, "quiet": 0, "status": None}
FRAMES = "|/-\\"


def _check(mode, where: str) -> str:
    mode = "on" if mode is True else "off" if mode is False else mode
    if mode not in MODES:
        raise ConfigError(f"{where}={mode!r}: must be one of {', '.join(MODES)}")
    return mode


def configure(mode, parallel: bool = False) -> None:
    """Set the mode for this process (the run config's ``progress``; None: unset).
    ``parallel``: a job beside others on the same terminal (the joblib launcher), where
    ``auto`` means off (their bars would overwrite each other)."""
    mode = None if mode is None else _check(mode, "progress")
    _state["mode"] = "off" if parallel and mode in (None, "auto") else mode


def mode() -> str:
    """The mode in force: the configured one, else ``$LLC_BENCH_PROGRESS``, else auto."""
    if _state["mode"] not in (None, "auto"):
        return _state["mode"]
    env = os.environ.get(ENV)
    return _check(env, ENV) if env else "auto"


def enabled(stream=None) -> bool:
    """Whether bars are shown (on ``stream``, stderr by default)."""
    if _state["quiet"]:
        return False
    current = mode()
    if current != "auto":
        return current == "on"
    if any(os.environ.get(var) for var in CI_VARS):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def quiet():
    """No bars inside the block (nested fits whose caller shows one bar for all)."""
    _state["quiet"] += 1
    try:
        yield
    finally:
        _state["quiet"] -= 1


def bar(total=None, desc: str | None = None, unit: str = "it", **kwargs) -> tqdm:
    """A tqdm bar on stderr, disabled (free) when bars are off; close it (or use ``with``)."""
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled(),
                file=sys.stderr, **kwargs)


class _Spinner:
    """A line ``<text> | 00:03`` on stderr, its frame turning every ``interval`` seconds
    (the text is the description: tqdm would put ", " before a postfix)."""

    def __init__(self, text: str, interval: float = 0.5):
        self.text, self.frame = text, 0
        self.line = tqdm(total=None, desc=f"{text} {FRAMES[0]}", bar_format="{desc} {elapsed}",
                         leave=False, file=sys.stderr, dynamic_ncols=True)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._spin, args=(interval,), daemon=True)
        self.thread.start()

    def show(self, text: str | None = None, restart: bool = False) -> None:
        if text is not None:
            self.text = text
        if restart:  # the elapsed time of a new phase
            self.line.reset()
        self.line.set_description_str(f"{self.text} {FRAMES[self.frame % len(FRAMES)]}",
                                      refresh=True)

    def _spin(self, interval: float) -> None:
        while not self.done.wait(interval):
            self.frame += 1
            self.show()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.line.close()


@contextlib.contextmanager
def stage(desc: str, interval: float = 0.5):
    """A spinner line ``desc | 00:03`` for a step of unknown length (nothing when off); in a
    run, ``desc`` goes on the run's status line for the duration of the step."""
    if not enabled():
        yield
        return
    status = _state["status"]
    if status is not None:
        with status.detail(desc):
            yield
        return
    line = _Spinner(desc, interval)
    try:
        yield
    finally:
        line.close()


class RunStatus:
    """The status line of one run: ``[i/n] phase · detail`` with a spinner and the phase's
    elapsed time, from the first phase to the end of the run (no line when bars are off)."""

    def __init__(self, phases, line: _Spinner | None = None):
        self.phases, self.line = list(phases), line
        self.name, self.details = "", []

    def _text(self) -> str:
        number = self.phases.index(self.name) + 1 if self.name in self.phases else 0
        return " · ".join([f"[{number}/{len(self.phases)}] {self.name}", *self.details[-1:]])

    def phase(self, name: str, detail: str | None = None) -> None:
        """The run enters phase ``name`` (one of ``phases``)."""
        self.name, self.details = name, [detail] if detail else []
        if self.line is not None:
            self.line.show(self._text(), restart=True)

    @contextlib.contextmanager
    def detail(self, text: str):
        """``text`` beside the phase for the duration of the block (a stage of the fit)."""
        self.details.append(text)
        try:
            if self.line is not None:
                self.line.show(self._text())
            yield
        finally:
            self.details.remove(text)
            if self.line is not None:
                self.line.show(self._text())


@contextlib.contextmanager
def run_status(phases):
    """One status line through the ``phases`` of a run; yields the :class:`RunStatus`
    (``status.phase(name)`` at the start of each).  Without bars, it shows nothing."""
    phases = list(phases)
    line = _Spinner(f"[1/{len(phases)}] {phases[0]}") if enabled() else None
    status, previous = RunStatus(phases, line), _state["status"]
    _state["status"] = status if line is not None else previous
    try:
        yield status
    finally:
        _state["status"] = previous
        if line is not None:
            line.close()


def phase(name: str, detail: str | None = None) -> None:
    """The run on screen enters phase ``name`` (nothing outside :func:`run_status`)."""
    if _state["status"] is not None:
        _state["status"].phase(name, detail)


def above(echo):
    """``echo`` that prints its line above the bars on screen (``echo`` itself when none)."""
    if _state["status"] is None:
        return echo

    def write(line: str) -> None:
        with tqdm.external_write_mode():
            echo(line)

    return write


class EpochBar:
    """One bar over ``epochs`` passes of ``rows`` rows (rows/s, epoch, objective);
    ``tick(epoch, objective)`` after each epoch (a restart may go back to epoch 1)."""

    def __init__(self, epochs: int, rows: int, desc: str = "SGD"):
        self.rows = int(rows)
        self.bar = bar(total=int(epochs) * self.rows, desc=desc, unit="row", unit_scale=True)

    def tick(self, epoch: int, objective: float | None = None) -> None:
        self.bar.update(epoch * self.rows - self.bar.n)
        post = {"epoch": epoch}
        if objective is not None:
            post["objective"] = f"{objective:.5g}"
        self.bar.set_postfix(post, refresh=False)

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def runs_bar(total: int, desc: str, echo):
    """A bar over the ``total`` runs of a table build; yields an ``echo`` that prints a
    line above the bar and advances it on each run's result line (``... | seed ...``)."""
    runs = bar(total=total, desc=desc, unit="run")

    def tick_echo(line: str) -> None:
        if runs.disable:
            echo(line)
            return
        with runs.external_write_mode():
            echo(line)
        if " | seed " in line and runs.n < total:
            runs.update()

    tick_echo.bar = runs
    try:
        yield tick_echo
    finally:
        runs.close()
