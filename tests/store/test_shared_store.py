"""A store shared by runs: strict-JSON records (NaN as null), files that honour the umask and
name themselves in errors, identical runs that compute once under a lock, a lock left by a
killed run that does not block."""

import json
import os
import threading
from pathlib import Path

import pytest
from conftest import REPO, compose_run

from llc_bench import cli
from llc_bench.experiment import runner
from llc_bench.models.linear import LinearSVMClassifier
from llc_bench.store.results import atomic_write_json


def test_records_are_strict_json_with_nan_as_null(tmp_path, monkeypatch):
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "x.json", {"a": float("nan")})
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(runner, "accuracy", lambda y, pred: float("nan"))
    record = runner.run_experiment(compose_run("trainer.C=1.0", tmp_path=tmp_path),
                                   echo=lambda line: None)
    assert record["metrics"]["test_accuracy"] is None
    [path] = (tmp_path / "results" / "runs").glob("*.json")
    assert json.loads(path.read_text())["metrics"]["train_accuracy"] is None
    assert "NaN" not in path.read_text()


def test_committed_records_are_strict_json():
    def refuse(name):
        raise ValueError(name)

    for path in (REPO / "results" / "runs").glob("*.json"):
        json.loads(path.read_text(), parse_constant=refuse)  # NaN, Infinity, -Infinity


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_records_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_json(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == mode


def test_a_file_that_cannot_be_created_is_named_not_its_temporary(tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".x.json.abc.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as err:
        atomic_write_json(tmp_path / "x.json", {"a": 1})
    assert cli.error_line(err.value) == (f"{tmp_path / 'x.json'}: cannot create a file in "
                                         f"{tmp_path} (Permission denied)")


def test_identical_runs_together_compute_once(tmp_path, monkeypatch):
    """The second of two identical runs waits for the first's lock, then hits the cache."""
    cfg = compose_run("trainer.C=1.0", tmp_path=tmp_path)
    fits, started = [], threading.Event()
    fit = LinearSVMClassifier.fit

    def slow_fit(self, X, y, eval_set=None):
        fits.append(1)
        started.set()
        threading.Event().wait(0.5)
        return fit(self, X, y, eval_set)

    monkeypatch.setattr(LinearSVMClassifier, "fit", slow_fit)
    monkeypatch.setattr(runner, "warm_up", lambda *args: False)  # its fit on a few rows
    lines: list[str] = []
    first = threading.Thread(target=runner.run_experiment, args=(cfg,),
                             kwargs={"echo": lines.append})
    first.start()
    assert started.wait(30)
    second = runner.run_experiment(cfg, echo=lines.append)
    first.join()
    assert len(fits) == 1
    assert any(line.startswith("waiting for another run") for line in lines)
    assert lines[-1].endswith("(cached)") and second["config_hash"] in lines[-1]
    assert list((tmp_path / "results" / "locks").iterdir()) == []


def test_a_lock_left_by_a_killed_run_does_not_block(tmp_path):
    """flock dies with its process: a leftover lock file is simply taken."""
    cfg = compose_run("trainer.C=1.0", tmp_path=tmp_path)
    key = runner.config_hash(runner.prepare_config(dict(cfg)))
    locks = Path(tmp_path / "results" / "locks")
    locks.mkdir(parents=True)
    (locks / f"{key}.lock").write_text("")
    record = runner.run_experiment(cfg, echo=lambda line: None)
    assert record["config_hash"] == key


def test_parsed_data_cache_honours_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        runner.run_experiment(compose_run("trainer.C=1.0", tmp_path=tmp_path),
                              echo=lambda line: None)
    finally:
        os.umask(old)
    made = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    made += list((tmp_path / "results" / "runs").glob("*.json"))
    assert len(made) >= 2 and {p.stat().st_mode & 0o777 for p in made} == {0o664}
