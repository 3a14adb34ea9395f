"""The one switch for progress bars: `progress: auto|on|off` (run config) or
$LLC_BENCH_PROGRESS; auto = a terminal, and never with $CI or under SLURM."""

import os
from pathlib import Path

import numpy as np
import pytest

from llc_bench import progress
from llc_bench.cli import main
from llc_bench.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for var in (progress.ENV, *progress.CI_VARS):
        monkeypatch.delenv(var, raising=False)
    progress.configure(None)  # an in-process run of another test file (progress=off) set it
    yield
    progress.configure(None)


@pytest.fixture
def terminal():
    """The slave side of a pseudo-terminal, as a text stream."""
    master, slave = os.openpty()
    stream = os.fdopen(slave, "w")
    yield stream
    stream.close()
    os.close(master)


def test_auto_shows_bars_on_a_terminal_only(terminal, tmp_path, monkeypatch):
    assert progress.mode() == "auto"
    assert progress.enabled(terminal)
    with open(tmp_path / "log", "w") as log:
        assert not progress.enabled(log)
    for var in ("CI", "SLURM_JOB_ID"):
        monkeypatch.setenv(var, "1")
        assert not progress.enabled(terminal), var
        monkeypatch.delenv(var)
    with progress.quiet():
        assert not progress.enabled(terminal)
    assert progress.enabled(terminal)


def test_the_config_wins_and_env_is_the_fallback(terminal, tmp_path, monkeypatch):
    log = open(tmp_path / "log", "w")
    progress.configure("on")
    assert progress.enabled(log)
    monkeypatch.setenv("CI", "true")
    assert progress.enabled(log)  # explicitly on: even in CI
    progress.configure("off")
    assert not progress.enabled(terminal)
    progress.configure("auto")
    monkeypatch.setenv(progress.ENV, "on")
    assert progress.mode() == "on" and progress.enabled(log)
    progress.configure("auto", parallel=True)  # a joblib job: its bars would collide
    assert not progress.enabled(log)
    progress.configure("on", parallel=True)
    assert progress.enabled(log)
    progress.configure(None)
    monkeypatch.setenv(progress.ENV, "off")
    monkeypatch.delenv("CI")
    assert not progress.enabled(terminal)
    monkeypatch.setenv(progress.ENV, "loud")
    with pytest.raises(ConfigError, match="LLC_BENCH_PROGRESS='loud'"):
        progress.mode()
    with pytest.raises(ConfigError, match="progress='maybe': must be one of auto, on, off"):
        progress.configure("maybe")
    log.close()


def _fit(capsys):
    from llc_bench.models.llsvm import LLSVMClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    LLSVMClassifier(n_anchors=8, k=4, epochs=3, lambda_grid=(1e-3, 1e-4), cv_folds=2,
                    random_state=0).fit(X, y)
    return capsys.readouterr().err


def test_model_bars_follow_the_switch(capsys):
    assert _fit(capsys) == ""  # auto, and pytest's stderr is no terminal
    progress.configure("on")
    err = _fit(capsys)
    for bar in ("CV folds x grid", "KMeans (8 anchors)", "dual CD init (300 rows)", "SGD"):
        assert bar in err, bar
    assert err.count("CV folds x grid") >= 1 and "row/s" in err
    assert err.count("KMeans") == 1  # the CV's own fits show no bars


def test_run_config_switch_through_the_cli(tmp_path, capsys):
    where = [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
             f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false"]
    with pytest.raises(SystemExit):
        main(["run", "progress=maybe", *where])
    err = capsys.readouterr().err.strip()
    assert err == "llc-bench: error: progress='maybe': must be one of auto, on, off"
    main(["run", "progress=on", "trainer.C=1.0", *where])
    captured = capsys.readouterr()
    assert "LIBLINEAR (3533 rows)" in captured.err and "| test acc" in captured.out
    assert "LIBLINEAR" not in captured.out


def test_a_spinner_shows_its_label_and_frame_without_a_stray_comma(capsys):
    progress.configure("on")
    with progress.stage("KMeans (8 anchors)", interval=3600):
        pass
    err = capsys.readouterr().err
    assert "KMeans (8 anchors) | 00:00" in err and "," not in err


def _where(tmp_path):
    return [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false"]


def test_a_run_keeps_one_status_line_through_its_phases(tmp_path, capsys):
    main(["run", "progress=on", "model=llsvm", "tune=off", "coding.n_anchors=10",
          "trainer.epochs=2", *_where(tmp_path)])
    out, err = capsys.readouterr()
    shown = ["[1/4] load · banana", "[2/4] compile · numba kernels", "[3/4] fit · llsvm",
             "[3/4] fit · KMeans (10 anchors)", "[3/4] fit · dual CD init (3533 rows)",
             "[4/4] evaluate"]
    assert [err.find(text) for text in shown] == sorted(err.find(text) for text in shown)
    assert -1 not in [err.find(text) for text in shown] and "SGD" in err
    lines = out.splitlines()   # the lines above the status line, the bars on stderr only
    assert lines[0].startswith("data    banana: 3533 train") and "[1/4]" not in out
    assert lines[-1].startswith("banana | llsvm | seed 0 | test acc ")


def test_without_a_terminal_the_data_line_comes_as_the_data_is_loaded(tmp_path, capsys):
    main(["run", "model=llsvm", "dataset=xor", "tune=on", "tune.trials=2", *_where(tmp_path)])
    out, err = capsys.readouterr()
    assert err == ""
    # the tune lines: what stops the trials, the rest at the first trial's pace, the choice
    assert [line.split()[0] for line in out.splitlines()] == [
        "data", "tune", "tune", "tune", "model", "phases", "record", "xor"]
