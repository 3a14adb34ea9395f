"""`llc-bench tables` end to end (quick profile) and its cache; corrupt/partial records."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest
from conftest import llc, one_error

from llc_bench.cli.tables import tables_command
from llc_bench.store.results import ResultsStore
from llc_bench.tables.reference import table_values

ARGS = ["--profile", "quick", "--table", "sapl_table2", "--dataset", "banana",
        "--method", "linear_svm", "--method", "llsvm", "--launcher", "basic"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One quick build of two SAPL Table 2 cells (banana x linear, LL-SVM) from a clean store."""
    results = tmp_path_factory.mktemp("tables") / "results"
    lines: list[str] = []
    stats = tables_command([*ARGS, "--results-dir", str(results)], echo=lines.append)
    return results, stats, lines


def _csv(results):
    return pd.read_csv(results / "tables-quick" / "sapl_table2.csv", keep_default_na=False)


def test_quick_table_end_to_end(built):
    results, stats, lines = built
    s = stats["sapl_table2"]
    assert (s["to_run"], s["executed"], s["failed"]) == (2, 2, 0), lines
    store = ResultsStore(results)
    frame = _csv(results)
    paper = table_values("sapl", "table2")
    for method, preset in (("linear_svm", "linear"), ("llsvm", "llsvm")):
        row = frame[(frame.dataset == "banana") & (frame.method == method)].iloc[0]
        (key,) = row.config_hashes.split()
        record = store.load(key)                       # the run the plan asked for
        assert record["model"] == preset and record["dataset"] == "banana"
        assert record["config"]["dataset"]["max_train"] == 1000     # quick profile
        assert record["data"]["n_train"] == 1000
        ours = 100 * record["metrics"]["test_accuracy"]
        assert float(row.ours_mean) == pytest.approx(ours)
        assert int(row.n_runs) == 1 and row.ours_std == ""
        assert float(row.paper_value) == paper[("banana", method, "accuracy")].value
        assert float(row["diff"]) == pytest.approx(ours - float(row.paper_value))
        assert row.verdict in ("within", "better", "worse")
    md = (results / "tables-quick" / "sapl_table2.md").read_text()
    assert "quick profile" in md
    assert "not run yet (excluded by --dataset/--method)" in md
    for suffix in ("tex", "csv"):
        assert (results / "tables-quick" / f"sapl_table2.{suffix}").stat().st_size > 0
    summary = (results / "tables-quick" / "README.md").read_text()
    assert "sapl_table2.md" in summary and "2 / " in summary
    # unrunnable cells say why instead of being blank
    knn = frame[(frame.dataset == "banana") & (frame.method == "svm_knn")].iloc[0]
    assert knn.ours_mean == "" and knn.reason.startswith("not run yet")
    assert float(knn.paper_value) == 90.61


def test_second_call_is_all_cache_hits(built, monkeypatch):
    results, _, _ = built
    before = {p: p.stat().st_mtime_ns for p in (results / "runs").glob("*.json")}

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a run was launched: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    summary_file = results / "tables-quick" / ".sapl_table2.summary.json"
    first = json.loads(summary_file.read_text())
    stats = tables_command([*ARGS, "--results-dir", str(results)], echo=lambda s: None)
    again = json.loads(summary_file.read_text())  # the build time of the runs is kept
    assert (again["built_runs"], again["build_seconds"]) == (2, first["build_seconds"]) != (2, 0)
    assert again["executed"] == 0
    s = stats["sapl_table2"]
    assert (s["to_run"], s["executed"]) == (0, 0)
    assert s["cached"] >= 2
    after = {p: p.stat().st_mtime_ns for p in (results / "runs").glob("*.json")}
    assert after == before


def test_corrupt_and_partial_records_are_reported_and_skipped(built, tmp_path):
    src, _, _ = built
    results = tmp_path / "results"
    shutil.copytree(src / "runs", results / "runs")
    frame = _csv(src)
    key = {m: frame[(frame.dataset == "banana") & (frame.method == m)].iloc[0].config_hashes
           for m in ("linear_svm", "llsvm")}
    # linear: corrupt (truncated JSON); llsvm: an interrupted write (only the temporary file)
    path = results / "runs" / f"{key['linear_svm']}.json"
    path.write_text(path.read_text()[:200])
    llsvm = results / "runs" / f"{key['llsvm']}.json"
    llsvm.rename(results / "runs" / f".{key['llsvm']}.json.abc123.tmp")
    lines: list[str] = []
    stats = tables_command([*ARGS, "--results-dir", str(results), "--no-run"],
                           echo=lines.append)
    problems = stats["sapl_table2"]["problems"]
    assert any("unreadable run record" in p and key["linear_svm"] in p for p in problems)
    assert any("partial record" in p and key["llsvm"] in p for p in problems)
    assert any("warning" in line and key["linear_svm"] in line for line in lines)
    out = _csv(results)
    for method in ("linear_svm", "llsvm"):
        row = out[(out.dataset == "banana") & (out.method == method)].iloc[0]
        assert row.ours_mean == "" and int(row.n_runs) == 0      # never averaged
        assert row.problems
    md = (results / "tables-quick" / "sapl_table2.md").read_text()
    assert "Skipped records" in md and "partial record" in md
    summary = json.loads((results / "tables-quick" / ".sapl_table2.summary.json").read_text())
    assert summary["skipped_records"] == 2


def test_a_failing_run_is_reported_with_its_error(tmp_path):
    from llc_bench.tables.execute import Executor
    from llc_bench.tables.plan import Composer, Planner
    from llc_bench.tables.spec import load_profile

    with Composer() as composer:
        planner = Planner(tmp_path, load_profile("quick"), composer=composer)
        (run,) = planner.plan_runs("linear", "banana", 1, {"trainer.C": 1.0})
    run.overrides["trainer.solver"] = "bogus"  # planning refuses it: make the job fail
    report = Executor(tmp_path, run_args=["data.download=false"],
                      echo=lambda s: None).run([run])
    assert report.executed == 0
    assert "trainer.solver=bogus: must be" in report.failed[run.hash]
    assert not ResultsStore(tmp_path).has(run.hash)


def test_an_interrupted_build_stops_the_multirun_it_launched(tmp_path):
    """Ctrl-C (or SIGTERM, which the CLI turns into an exit) in the middle of a launch
    terminates the child ``llc-bench run -m`` instead of leaving it running."""
    import sys

    from llc_bench.tables.execute import Executor, Launch

    child = ("import os, sys, time; print(os.getpid(), '| seed 0', flush=True); "
             "time.sleep(120)")
    pids = []

    def echo(line):
        if "| seed" in line:
            pids.append(int(line.split()[0]))
            raise KeyboardInterrupt

    executor = Executor(tmp_path, echo=echo, command=[sys.executable, "-c", child])
    launch = Launch(sweep={"model": ["linear"], "dataset": ["banana"], "seed": [0]},
                    common={}, runs=[])
    with pytest.raises(KeyboardInterrupt):
        executor._launch(launch, "interrupted", "basic", 1)
    (pid,) = pids
    assert subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                          text=True).stdout.strip() in ("", "Z")  # gone (or a reaped zombie)


# --- tables filters that name nothing ---------------------------------------------------------

@pytest.mark.parametrize("option, value, words", [
    ("--dataset", "nosuch", ["--dataset 'nosuch' matched nothing", "sapl_table2"]),
    ("--dataset", "banan", ["did you mean banana?"]),
    ("--method", "nosuch", ["--method 'nosuch' matched nothing"]),
    ("--method", "lsvm", ["did you mean llsvm?"]),
])
def test_tables_filter_that_names_nothing_is_an_error(tmp_path, capsys, option, value, words):
    code, out, err = llc(capsys, "tables", "--table", "sapl_table2", "--dry-run",
                         "--results-dir", str(tmp_path / "results"), option, value)
    one_error(code, err, *words)
    assert not (tmp_path / "results").exists()


# --- tables --dry-run prints what the build runs, results_dir included ------------------------

def test_dry_run_lines_are_the_build_s_command_lines(tmp_path, capsys, monkeypatch):
    from llc_bench.tables import execute

    results = tmp_path / "store"
    args = ["--profile", "quick", "--table", "sapl_table2", "--dataset", "banana", "--method",
            "llsvm", "--results-dir", str(results)]
    code, out, err = llc(capsys, "tables", *args, "--dry-run")
    assert code == 0, err
    [shown] = [line.strip() for line in out.splitlines() if "llc-bench run -m" in line]
    assert f"results_dir='{results.resolve()}'" in shown and "data.download=false" in shown
    assert not results.exists()
    launched = []

    def fake_launch(self, launch, tag, launcher, jobs, extra=()):
        launched.append(" ".join(["llc-bench run -m",
                                  *self.arguments(launch, launcher, jobs, extra)]))
        return 1, tmp_path / "none"

    monkeypatch.setattr(execute.Executor, "_launch", fake_launch)
    llc(capsys, "tables", *args)
    assert launched and launched[0] == shown
