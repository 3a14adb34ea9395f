"""The console entry's own errors (in-process): a closed stdout, SLURM without srun,
--version, an output path under a regular file, a parallelism below one, a missing argument,
`datasets info` on a name that is no dataset."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import llc, one_error, where

from llc_bench import cli

pytestmark = pytest.mark.usefixtures("cli_env")


# --- a closed stdout, SLURM without srun, --version -------------------------------------------

def test_closed_stdout_ends_quietly_as_unix_tools_do(tmp_path):
    import subprocess

    read, write = os.pipe()
    os.close(read)  # `| head` that has already gone
    try:
        done = subprocess.run([sys.executable, "-m", "llc_bench.cli", "datasets", "info",
                               "banana"], stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr


def test_slurm_launcher_without_slurm_is_an_ordinary_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli.shutil, "which", lambda name: None)
    code, _, err = llc(capsys, "run", "-m", "hydra/launcher=slurm", *where(tmp_path), "seed=0")
    line = one_error(code, err, "hydra/launcher=slurm", "srun", "hydra/launcher=joblib")
    assert "unexpected" not in line
    assert not list((tmp_path / "results").rglob("*.json"))


def test_version(capsys):
    from importlib.metadata import version

    code, out, err = llc(capsys, "--version")
    assert code == 0 and out == f"llc-bench {version('llc-bench')}\n" and not err
    assert "--version" in llc(capsys, "--help")[1]


# --- an output path under a regular file ------------------------------------------------------

def test_results_dir_and_tables_out_under_a_regular_file_name_it(tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file")
    code, _, err = llc(capsys, "run", *where(tmp_path)[1:], "trainer.C=1.0",
                       f"results_dir={blocker / 'deeper' / 'results'}")
    one_error(code, err, f"{blocker} is a file, not a directory")
    code, _, err = llc(capsys, "tables", "--table", "sapl_table2", "--no-run",
                       "--results-dir", str(tmp_path / "results"), "--out", str(blocker / "t"))
    one_error(code, err, "--out", f"{blocker} is a file, not a directory")


# --- a parallelism of none, a missing argument ------------------------------------------------

@pytest.mark.parametrize("jobs", ["0", "-2", "two"])
def test_tables_jobs_below_one_is_refused_before_any_run(tmp_path, capsys, monkeypatch, jobs):
    from llc_bench.tables import execute

    def launched(*_args, **_kwargs):  # before the check, --jobs 0 ran every table
        raise AssertionError(f"--jobs {jobs} launched runs")

    monkeypatch.setattr(execute.Executor, "_launch", launched)
    code, out, err = llc(capsys, "tables", "--jobs", jobs, "--results-dir",
                         str(tmp_path / "results"))
    assert code == 2 and "Traceback" not in err and out == ""
    assert f"argument --jobs: expected a whole number >= 1, got '{jobs}'" in err
    assert not (tmp_path / "results").exists()


def test_tune_without_a_dataset_asks_for_the_dataset_only(capsys):
    code, _, err = llc(capsys, "tune", "llsvm")
    assert code == 2 and err.strip().endswith("the following arguments are required: dataset")


# --- `datasets info` on a name that is no dataset ----------------------------------------------

def test_datasets_info_on_file_or_a_typo_says_what_to_do(capsys):
    one_error(*llc(capsys, "datasets", "info", "file")[::2],
              "dataset=file is your own files", "llc-bench run dataset=file dataset.train=PATH")
    one_error(*llc(capsys, "datasets", "info", "ijcn")[::2],
              "unknown dataset 'ijcn' (did you mean ijcnn?)")
