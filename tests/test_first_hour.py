"""A new user's first runs leave the committed files alone (a scratch store by default), and
a model with more weights than training rows on a small file of theirs is warned about."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def _git(*args, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a checkout")
def test_first_runs_in_a_fresh_clone_write_nothing_tracked(tmp_path, mirror):
    clone = tmp_path / "clone"
    _git("clone", "-q", str(REPO), str(clone), cwd=tmp_path)
    llc = Path(sys.executable).parent / "llc-bench"
    common = ["data.download=false", f"data.mirrors=[{mirror}]", "progress=off"]
    for args in (["model=linear"],                                   # the default: banana
                 ["dataset=magic04", "model=linear", "trainer.C=1.0"]):  # the README's third
        run = subprocess.run([str(llc), "run", *args, *common], cwd=clone, capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        result = run.stdout.strip().splitlines()[-1]
        assert "test acc" in result and "(cached)" not in result  # not the committed record
    assert list((clone / "results-scratch" / "runs").glob("*.json"))
    assert _git("status", "--porcelain", cwd=clone) == ""          # nothing tracked changed


def _iris_files(tmp_path):
    """scikit-learn's iris as a user's CSV files: 105 training rows, 45 test rows."""
    import numpy as np
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))
    for part, take in (("train", rows[:105]), ("test", rows[105:])):
        lines = ["a,b,c,d,species"] + [",".join(map(str, X[i])) + f",class_{y[i]}" for i in take]
        (tmp_path / f"iris.{part}.csv").write_text("\n".join(lines) + "\n")
    return [f"dataset.train={tmp_path / 'iris.train.csv'}",
            f"dataset.test={tmp_path / 'iris.test.csv'}"]


def _run_iris(tmp_path, *args):
    llc = Path(sys.executable).parent / "llc-bench"
    run = subprocess.run([str(llc), "run", "dataset=file", "model=llsvm", *_iris_files(tmp_path),
                          f"results_dir={tmp_path / 'results'}", "progress=off", *args],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    path = run.stdout.split("record  ", 1)[1].split()[0]
    return run.stderr.strip().splitlines(), json.loads(Path(path).read_text())


def test_more_anchor_weights_than_training_rows_is_one_warning_and_a_note(tmp_path):
    err, record = _run_iris(tmp_path, "tune=off")
    assert err == ["llc-bench: warning: llsvm fits 100 anchors x 4 features = 400 weights per "
                   "class on 105 training rows, more weights than rows: it may overfit; let it "
                   "select its settings on the training rows (tune=auto) or try "
                   "coding.n_anchors=26"]
    assert err[0].removeprefix("llc-bench: warning: ") in record["fit_info"]["notes"]
    err, record = _run_iris(tmp_path, "tune=off", "coding.n_anchors=26")   # 104 weights
    assert err == [] and not any("weights per class" in n for n in record["fit_info"]["notes"])


def test_the_small_data_warning_is_about_the_model_the_selection_fitted(tmp_path):
    err, record = _run_iris(tmp_path, "tune.trials=4")          # tune=auto: an own file
    m = record["model_size"]["n_anchors"]
    warned = [line for line in err if "weights per class" in line]
    assert len(warned) == (m * 4 > 105) and len(err) == len(warned)
    if warned:
        assert f"fits {m} anchors x 4 features" in warned[0]
        assert f"the selection chose m = {m}; coding.n_anchors=26" in warned[0]


def test_a_model_without_a_linear_model_per_anchor_is_not_warned_about():
    from llc_bench.experiment.runner import small_data_warning

    config = {"model": {"name": "lcc_svm"}, "trainer": {"name": "llc_sgd"},
              "dataset": {"name": "file"}}
    codes_only = {"n_anchors": 100, "n_features": 4, "n_outputs": 3, "n_parameters": 300}
    assert small_data_warning(config, codes_only, 105, None) is None      # W = 0: b only
    per_anchor = {**codes_only, "n_parameters": 3 * 100 * (4 + 1)}
    assert "400 weights per class on 105" in small_data_warning(config, per_anchor, 105, None)
    assert small_data_warning(config, per_anchor, 400, None) is None      # as many rows
    one = {"n_anchors": 1, "n_features": 784, "n_outputs": 1, "n_parameters": 785}
    assert small_data_warning(config, one, 300, None) is None             # a linear model
    wide = {"n_anchors": 4, "n_features": 784, "n_outputs": 1, "n_parameters": 4 * 785}
    assert small_data_warning(config, wide, 300, None).endswith("or try model=linear")


def test_a_sweep_says_what_it_will_cost_before_it_starts(tmp_path, capsys):
    from conftest import llc

    from llc_bench.cli import sweep_estimate

    where = [f"results_dir={tmp_path / 'store'}", f"data.home={tmp_path / 'home'}",
             f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false", "progress=off"]
    assert llc(capsys, "run", "model=linear", *where)[0] == 0
    line = sweep_estimate(["-m", "model=linear,llsvm", "seed=0,1", *where])
    assert line.startswith("sweep: 4 runs, 1 in the store, ~") and line.endswith(" to run")
    code, out, _ = llc(capsys, "run", "-m", "model=linear", "seed=0", *where)
    assert code == 0 and "llc-bench: sweep: 1 run, 1 in the store, nothing to run" in out
    assert sweep_estimate(["-m", "model=llsvm", "+search=llsvm", *where]) is None
    own = tmp_path / "own.csv"   # no store holds a run on own files: no "~0 s"
    own.write_text("a,b,y\n" + "".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(40)))
    line = sweep_estimate(["-m", "dataset=file", f"dataset.train={own}",
                           "dataset.test_fraction=0.3", "model=linear,llsvm", *where])
    assert line == ("sweep: 2 runs, 0 in the store, no estimate of the time to run the rest "
                    "(no stored run of these models on this dataset)")


def test_runs_launched_by_tables_do_not_estimate_their_sweep_again(tmp_path, capsys,
                                                                   monkeypatch):
    """`llc-bench tables` prints one estimate for its runs; each `llc-bench run -m` it launches
    would otherwise read every record of the store again (seconds per launch)."""
    from conftest import llc

    from llc_bench.tables.execute import NO_SWEEP_ESTIMATE, Executor

    assert Executor(tmp_path / "store").env[NO_SWEEP_ESTIMATE] == "1"
    where = [f"results_dir={tmp_path / 'store'}", f"data.home={tmp_path / 'home'}",
             f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false", "progress=off"]
    monkeypatch.setenv(NO_SWEEP_ESTIMATE, "1")
    code, out, _ = llc(capsys, "run", "-m", "model=linear", "trainer.C=1.0", *where)
    assert code == 0 and "test acc" in out and "llc-bench: sweep:" not in out
