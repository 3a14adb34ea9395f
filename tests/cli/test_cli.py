"""The `llc-bench` command through a subprocess, as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

BIN = Path(sys.executable).parent / "llc-bench"


def llc(*args, cwd, timeout=300):
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("LLC_BENCH_DATA", None)
    return subprocess.run([str(BIN), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def where(tmp_path):
    """Overrides that keep a run's files in tmp_path and find banana in the checkout."""
    return [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false"]


def records(tmp_path):
    return sorted((tmp_path / "results" / "runs").glob("*.json"))


def test_help_lists_the_subcommands(tmp_path):
    out = llc("--help", cwd=tmp_path)
    assert out.returncode == 0
    assert "run" in out.stdout and "datasets" in out.stdout


def test_unknown_subcommand_is_a_one_line_error(tmp_path):
    out = llc("frobnicate", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "unknown command 'frobnicate'" in out.stderr


def test_run_help_and_cfg(tmp_path):
    out = llc("run", "--help", cwd=tmp_path)
    assert out.returncode == 0 and "dataset" in out.stdout and "model" in out.stdout
    out = llc("run", "--cfg", "job", "model=kernel", cwd=tmp_path)
    assert out.returncode == 0
    assert "name: libsvm" in out.stdout and "name: banana" in out.stdout


def test_default_run_then_cache_hit_then_force(tmp_path):
    out = llc("run", *where(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("banana | linear | seed 0 | test acc ") and "(cached)" not in line
    [path] = records(tmp_path)
    record = json.loads(path.read_text())
    assert record["config"]["trainer"]["name"] == "liblinear"
    assert record["data"]["n_train"] + record["data"]["n_test"] == 5300
    assert set(record["timings"]) >= {"load", "preprocess", "train_total", "train", "test_total"}
    assert record["timings"]["train"] <= record["timings"]["train_total"]
    assert record["versions"]["liblinear-official"]
    assert list((tmp_path / "results" / "hydra").rglob("record.json"))  # copy in Hydra's dir

    again = llc("run", *where(tmp_path), cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.strip().endswith("(cached)")
    assert again.stdout.split("|")[3] == out.stdout.split("|")[3]  # same accuracy

    forced = llc("run", *where(tmp_path), "force=true", cwd=tmp_path)
    assert forced.returncode == 0 and "(cached)" not in forced.stdout
    assert forced.stdout.split("|")[3] == out.stdout.split("|")[3]  # same seed, same numbers
    assert len(records(tmp_path)) == 1


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_two_job_multirun(tmp_path, launcher):
    extra = ["hydra.launcher.n_jobs=2"] if launcher == "joblib" else []
    out = llc("run", "-m", f"hydra/launcher={launcher}", *extra, "seed=0,1", "trainer.C=1.0",
              *where(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    recs = [json.loads(p.read_text()) for p in records(tmp_path)]
    assert sorted(r["seed"] for r in recs) == [0, 1]
    assert recs[0]["data"]["split"] != recs[1]["data"]["split"] or \
        recs[0]["metrics"] != recs[1]["metrics"]


def test_config_errors_are_one_line(tmp_path):
    out = llc("run", *where(tmp_path), "+trainer.gamma=2", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1].startswith("llc-bench: error: trainer.gamma")
    assert not records(tmp_path)


def test_missing_dataset_offline_is_one_line(tmp_path):
    out = llc("run", "dataset=rcv1", *where(tmp_path), cwd=tmp_path)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("llc-bench: error:") and "rcv1" in last and "http" in last
    assert not records(tmp_path)
