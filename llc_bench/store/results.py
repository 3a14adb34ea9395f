"""The results store: one JSON record per run, keyed by the hash of its config.

A record is written atomically (temporary file in the same directory, fsync,
``os.replace``), so an interrupted run leaves either no record or a whole one; it is
strict JSON (no NaN) and gets the mode the umask allows, as any new file.  A run holds
``<root>/locks/<hash>.lock`` while it computes, so a second identical run waits for the
first and finds its record.  Readers validate every record and report the bad ones
instead of using them.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from llc_bench.errors import ConfigError, ResultsError
from llc_bench.files import atomic_write_json, file_mode

RECORD_VERSION = 1
REQUIRED_KEYS = ("record_version", "config_hash", "config", "seed", "dataset", "model",
                 "metrics", "timings", "versions", "status")
# Keys of the run config that do not change the numbers a run produces.
NON_SEMANTIC_KEYS = ("force", "results_dir", "data", "hydra", "progress", "save_model")


def semantic_config(config: Mapping) -> dict:
    """The part of a resolved run config that determines its results.

    Keys set to null are left out, at any depth: a new option whose null default keeps
    the old behaviour does not change the hash of the runs made before it existed.  So is
    ``_target_`` (the class a config group file names, ``llc_bench.targets``): ``trainer.name``
    and ``coding.name`` say what ran, and a class may move without changing a number.
    """
    return _drop_nulls({k: v for k, v in config.items() if k not in NON_SEMANTIC_KEYS})


def _drop_nulls(value):
    """``value`` without null values and ``_target_`` keys, at any depth."""
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None and k != "_target_"}
    if isinstance(value, list | tuple):
        return [_drop_nulls(v) for v in value]
    return value


def config_hash(config: Mapping) -> str:
    """A stable 16-hex-digit hash of the semantic part of a resolved config."""
    blob = json.dumps(semantic_config(config), sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def not_a_directory(path) -> Path | None:
    """The first of ``path``'s parents (or ``path``) that exists but is not a directory:
    nothing can be made under it.  None when there is none."""
    path = Path(path)
    for part in [*reversed(path.parents), path]:
        if not part.exists():
            return None
        if not part.is_dir():
            return part
    return None


def output_file(path, option: str) -> Path:
    """``path`` checked as a file to write (``--csv PATH``): a ConfigError naming the part of
    it that is a file where a directory must be, or ``path`` itself when it is a
    directory."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a directory; give a file name")
    blocking = not_a_directory(path.parent)
    if blocking is not None:
        raise ConfigError(f"{option} {path}: {blocking} is a file, not a directory")
    return path


class ResultsStore:
    """Run records under ``<root>/runs/<hash>.json``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.locks = self.root / "locks"
        self.models = self.root / "models"  # save_model=true: <hash>.llcm

    def check_writable(self, models: bool = False) -> None:
        """A ConfigError unless records (and, with ``models``, model files: save_model=true)
        can be written under ``root`` (checked before a run computes anything)."""
        dirs = (self.runs, self.locks, *([self.models] if models else []))
        for path in (self.root, *dirs):
            blocking = not_a_directory(path)
            if blocking is not None:
                why = (": save_model=true writes the model files there; move it away (or "
                       "save_model=false)" if blocking == self.models else "")
                raise ConfigError(f"results_dir={self.root}: {blocking} is a file, not a "
                                  f"directory{why}")
        try:
            for path in dirs:
                path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"results_dir={self.root}: cannot create {err.filename} "
                              f"({err.strerror})") from None
        for path in dirs:
            if not os.access(path, os.W_OK | os.X_OK):
                raise ConfigError(f"results_dir={self.root}: {path} is not writable")

    @contextlib.contextmanager
    def lock(self, key: str, on_wait: Callable[[], None] | None = None):
        """Hold ``locks/<key>.lock`` for the block; a second holder waits (``on_wait`` is
        called once when it has to).  ``flock`` locks die with their process, so the
        lock of a killed run never blocks; the file is removed while still held, and a
        waiter that then wakes on the removed file takes the lock again on a new one."""
        path = self.locks / f"{key}.lock"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, file_mode())
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if on_wait is not None:
                        on_wait()
                        on_wait = None
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    current = os.path.samestat(os.fstat(fd), os.stat(path))
                except FileNotFoundError:
                    current = False
            except BaseException:
                os.close(fd)
                raise
            if current:
                break
            os.close(fd)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            os.close(fd)

    def path(self, key: str) -> Path:
        return self.runs / f"{key}.json"

    def has(self, key: str) -> bool:
        try:
            self.load(key)
        except (FileNotFoundError, ResultsError):
            return False
        return True

    def save(self, record: Mapping) -> Path:
        validate_record(record, "<new record>")
        path = self.path(record["config_hash"])
        atomic_write_json(path, record)
        return path

    def load(self, key: str) -> dict:
        return read_record(self.path(key))

    def records(self) -> Iterator[tuple[Path, dict | None, str | None]]:
        """Every record file as ``(path, record, None)`` or ``(path, None, problem)``."""
        if not self.runs.is_dir():
            return
        for path in sorted(self.runs.glob("*.json")):
            try:
                yield path, read_record(path), None
            except ResultsError as err:
                yield path, None, str(err)


def read_record(path: Path) -> dict:
    """Load and validate one record; a corrupt or partial file is a ResultsError."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as err:
        raise ResultsError(f"{path}: unreadable run record ({err})") from None
    validate_record(record, path)
    if record["config_hash"] != path.stem:
        raise ResultsError(f"{path}: record hash {record['config_hash']} does not match "
                           "its file name")
    return record


def validate_record(record, where) -> None:
    if not isinstance(record, dict):
        raise ResultsError(f"{where}: run record is not a JSON object")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise ResultsError(f"{where}: run record lacks {', '.join(missing)}")
    if record["status"] != "complete":
        raise ResultsError(f"{where}: run record status is {record['status']!r}")
    if record["config_hash"] != config_hash(record["config"]):
        raise ResultsError(f"{where}: config_hash does not match the recorded config")
    metrics = record["metrics"]
    if not isinstance(metrics, dict) or "test_accuracy" not in metrics:
        raise ResultsError(f"{where}: run record has no test_accuracy")


def set_dotted(config: dict, dotted: str, value) -> None:
    """Set ``config["trainer"]["lambda_"]`` for ``dotted="trainer.lambda_"``."""
    *parents, leaf = dotted.split(".")
    node = config
    for part in parents:
        node = node[part]
    node[leaf] = value


def with_params(config: Mapping, params: Mapping) -> dict:
    """A copy of the run config with ``{"trainer.lambda_": 1e-5, ...}`` set."""
    out = copy.deepcopy(dict(config))
    for key, value in params.items():
        set_dotted(out, key, value)
    return out
