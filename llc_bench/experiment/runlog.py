"""The start/stop log of a results store: which runs computed at the same time.

Every run appends a ``start`` line to ``<results_dir>/runlog.jsonl`` before it loads its
data and an ``end`` line when it stops (whether it wrote a record or failed): one JSON
object per line, each written with a single ``O_APPEND`` write, so concurrent runs never
interleave within a line. The record keeps the run's window (``run_window``: run id,
host, pid, start and end as Unix times). A timing is clean when no other run of the log
on the same host was computing during that window (:func:`overlapping`). Runs started
outside this store (another store, other programs) are not seen; the record's load
averages hint at those.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from llc_bench.files import file_mode

LOG_NAME = "runlog.jsonl"


def _append(path: Path, entry: Mapping) -> None:
    line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode())
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class RunWindow:
    """One run's entry in the log; :meth:`record` is what its result record keeps."""

    def __init__(self, root: str | os.PathLike, key: str):
        self.path = Path(root) / LOG_NAME
        self.entry = {"id": uuid.uuid4().hex[:16], "hash": key, "host": platform.node(),
                      "pid": os.getpid(), "start": time.time()}
        self.load_start = _load()

    def record(self) -> dict:
        """The window up to now (called when the run's timings are taken)."""
        return {**self.entry, "end": time.time(), "load_average_1min": [self.load_start,
                                                                       _load()]}


@contextlib.contextmanager
def run_window(root: str | os.PathLike, key: str) -> Iterator[RunWindow]:
    """Log the start and the end of the block as one run of ``key``."""
    window = RunWindow(root, key)
    _append(window.path, {**window.entry, "event": "start"})
    status = "failed"
    try:
        yield window
        status = "complete"
    finally:
        _append(window.path, {**window.entry, "event": "end", "end": time.time(),
                              "status": status})


def read_log(root: str | os.PathLike) -> list[dict]:
    """One interval per run of the log: ``{id, hash, host, pid, start, end}``; a run with
    no end line gets ``end`` None (killed, or still running). Unreadable lines are skipped."""
    path = Path(root) / LOG_NAME
    runs: dict[str, dict] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            run_id, start = str(entry["id"]), float(entry["start"])
        except (ValueError, KeyError, TypeError):
            continue
        run = runs.setdefault(run_id, {"id": run_id, "hash": entry.get("hash"),
                                       "host": entry.get("host"), "pid": entry.get("pid"),
                                       "start": start, "end": None})
        if entry.get("event") == "end" and entry.get("end") is not None:
            run["end"] = float(entry["end"])
    return list(runs.values())


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


def overlapping(window: Mapping, log: list[dict]) -> list[dict]:
    """The runs of ``log`` on the same host that computed during ``window`` (another run
    id). A run with no end counts as running up to now while its process lives on this
    host; otherwise (killed) it is ignored."""
    start, end = float(window["start"]), float(window["end"])
    here = platform.node()
    out = []
    for run in log:
        if run["id"] == window.get("id") or run.get("host") != window.get("host"):
            continue
        run_end = run["end"]
        if run_end is None:
            if run.get("host") != here or not _alive(run.get("pid")):
                continue
            run_end = time.time()
        if run["start"] < end and run_end > start:
            out.append(run)
    return out
