"""Clean timings: one thread per launched run, thread settings and run windows in the records,
overlap from the store's start/stop log, marked timing cells and `--timing-only` reruns."""

from __future__ import annotations

import json
import os
import platform
import sys

import pytest
from conftest import compose_run

from llc_bench.errors import ConfigError
from llc_bench.experiment import runner
from llc_bench.experiment.environment import THREAD_VARS, thread_settings
from llc_bench.experiment.runlog import LOG_NAME, overlapping, read_log, run_window
from llc_bench.models.linear import LinearSVMClassifier
from llc_bench.store.results import ResultsStore, config_hash
from llc_bench.tables.aggregate import aggregate, timing_problem, timing_reruns
from llc_bench.tables.execute import Executor
from llc_bench.tables.plan import CellPlan, RunPlan, TablePlan
from llc_bench.tables.render import render_markdown
from llc_bench.tables.spec import Profile, table_from_dict

HOST = platform.node()


def test_a_run_records_its_threads_and_window_and_logs_start_and_end(tmp_path):
    record = runner.run_experiment(compose_run("dataset=xor", "trainer.C=1.0",
                                               tmp_path=tmp_path), echo=lambda s: None)
    threads = record["threads"]
    assert set(threads["env"]) == set(THREAD_VARS) and isinstance(threads["single"], bool)
    assert threads["numba"] is None or threads["numba"] >= 1
    assert record["memory"]["peak_rss_mb"] > 50  # this process: Python + numpy at least
    window = record["run_window"]
    (run,) = read_log(tmp_path / "results")
    assert run["id"] == window["id"] and run["hash"] == record["config_hash"]
    assert run["start"] == window["start"] <= window["end"] <= run["end"]
    lines = (tmp_path / "results" / LOG_NAME).read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["start", "end"]
    assert json.loads(lines[1])["status"] == "complete"
    assert overlapping(window, read_log(tmp_path / "results")) == []   # itself does not count
    assert record["timings"]["jit_compile_train"] >= 0.0 <= record["timings"]["jit_compile_test"]


def test_numba_compilation_inside_a_timed_block_is_recorded_and_makes_the_timing_unclean():
    numba = pytest.importorskip("numba")
    square = numba.njit(lambda x: x * x)            # not cached: compiles on its first call
    first, second = {}, {}
    with runner.jit_compile_timer(first, "jit_compile_train"):
        assert square(3.0) == 9.0
    with runner.jit_compile_timer(second, "jit_compile_train"):
        assert square(4.0) == 16.0                   # compiled already: costs nothing here
    assert first["jit_compile_train"] > 0.0 and second["jit_compile_train"] == 0.0
    record = _record("llsvm", 0, 0.1, _window("a", 0, 1))
    assert timing_problem(record, []) is None
    record["timings"].update(first)
    assert timing_problem(record, []) == "included numba JIT compilation"


def test_numbas_compile_timer_counts_nested_compilations_once(monkeypatch):
    """Compiling a kernel compiles the kernels it calls inside its own compile event; the
    timer measures the outermost event only, so subtracting it from a fit subtracts each
    second of compilation once."""
    numba = pytest.importorskip("numba")
    from numba.core import event

    inner = numba.njit(lambda x: x + 1.0)          # fresh functions: both compile here
    outer = numba.njit(lambda x: inner(x) * 2.0)
    with event.install_recorder("numba:compile") as recorder:
        assert outer(1.0) == 4.0
    assert [e.status.name for _, e in recorder.buffer] == ["START", "START", "END", "END"]
    now = [0.0]                                     # the same nesting on a hand-set clock
    monkeypatch.setattr(event, "timer", lambda: now[0])
    seconds = {}
    with runner.jit_compile_timer(seconds, "jit_compile_train"):
        for at, edge in ((0, event.start_event), (1, event.start_event), (3, event.end_event),
                         (4, event.end_event)):
            now[0] = at
            edge("numba:compile")
    assert seconds["jit_compile_train"] == 4.0      # outer 0..4; inner 1..3 not added again


class _CompilesInFit(LinearSVMClassifier):
    """LIBLINEAR after one call of ``kernel`` (a numba function not compiled yet), on fits
    of more than ``min_rows`` rows."""

    kernel, min_rows = None, 0

    def fit(self, X, y, eval_set=None):
        if len(y) > self.min_rows:
            self.kernel(1.0)
        return super().fit(X, y, eval_set=eval_set)


def _run_with(monkeypatch, tmp_path, min_rows):
    numba = pytest.importorskip("numba")
    monkeypatch.setattr(_CompilesInFit, "kernel", staticmethod(numba.njit(lambda x: x + 1.0)))
    monkeypatch.setattr(_CompilesInFit, "min_rows", min_rows)
    monkeypatch.setattr(runner, "estimator_class", lambda name: _CompilesInFit)
    return runner.run_experiment(compose_run("dataset=xor", "trainer.C=1.0",
                                             tmp_path=tmp_path), echo=lambda s: None)


def test_kernels_compile_in_the_warm_up_before_the_timed_fit(monkeypatch, tmp_path):
    t = _run_with(monkeypatch, tmp_path, min_rows=0)["timings"]
    assert t["jit_compile_warmup"] > 0.0
    assert t["jit_compile_train"] == 0.0 == t["jit_compile_test"]
    assert timing_problem({"run_window": _window("a", 0, 1), "threads": {"single": True},
                           "timings": t}, []) is None


def test_what_the_warm_up_missed_is_measured_and_left_out_of_train(monkeypatch, tmp_path):
    t = _run_with(monkeypatch, tmp_path, min_rows=runner.WARM_UP_ROWS * 2)["timings"]
    assert t["jit_compile_warmup"] == 0.0 and t["jit_compile_train"] > 0.0
    assert t["train"] == pytest.approx(t["train_total"] - t["fit_cv"] - t["jit_compile_train"])


def test_the_result_line_shows_compilation_apart_from_train(tmp_path):
    record = runner.run_experiment(compose_run("dataset=xor", "trainer.C=1.0",
                                               tmp_path=tmp_path), echo=lambda s: None)
    record["timings"].update(jit_compile_warmup=0.0, jit_compile_train=0.0)
    assert "compile" not in runner.summary_line(record)
    record["timings"].update(jit_compile_warmup=20.17, train=0.73)
    assert "| train 0.73s (+ compile 20.2s) |" in runner.summary_line(record)


def test_the_warm_up_changes_no_number(monkeypatch, tmp_path):
    cfg = compose_run("model=llsvm", "dataset=xor", "coding.n_anchors=10", "trainer.epochs=2",
                      tmp_path=tmp_path)
    warm = runner.run_experiment(cfg, echo=lambda s: None)
    monkeypatch.setattr(runner, "warm_up", lambda *args: False)
    cold = runner.run_experiment({**cfg, "force": True}, echo=lambda s: None)
    assert cold["metrics"] == warm["metrics"] and cold["history"] == warm["history"]


def test_thread_settings_without_threadpoolctl_fall_back_to_the_variables(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)     # "not installed"
    for var in THREAD_VARS:
        monkeypatch.setenv(var, "1")
    numba = sys.modules.get("numba")
    single = thread_settings()
    assert single["pools"] is None and single["env"]["OMP_NUM_THREADS"] == "1"
    assert single["single"] == (numba is None or numba.get_num_threads() == 1)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert thread_settings()["single"] is False


def test_a_failed_run_still_logs_its_end(tmp_path):
    with pytest.raises(RuntimeError), run_window(tmp_path, "abc"):
        raise RuntimeError("boom")
    (run,) = read_log(tmp_path)
    assert run["end"] is not None
    assert json.loads((tmp_path / LOG_NAME).read_text().splitlines()[1])["status"] == "failed"


def _line(path, **entry):
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def test_overlap_by_interval_host_and_liveness(tmp_path):
    log = tmp_path / LOG_NAME
    common = {"hash": "h", "host": HOST}
    _line(log, id="a", event="start", start=100.0, pid=1, **common)
    _line(log, id="a", event="end", start=100.0, end=110.0, pid=1, **common)
    _line(log, id="b", event="start", start=110.0, pid=1, **common)       # touches a's end
    _line(log, id="b", event="end", start=110.0, end=120.0, pid=1, **common)
    _line(log, id="c", event="start", start=50.0, end=None, pid=2**22 + 7, **common)  # killed
    _line(log, id="d", event="start", start=90.0, pid=os.getpid(), **common)  # still running
    _line(log, id="e", event="start", start=100.0, pid=1, hash="h", host="elsewhere")
    _line(log, id="e", event="end", start=100.0, end=130.0, pid=1, hash="h", host="elsewhere")
    (tmp_path / "junk").write_text("")
    with open(log, "a") as handle:
        handle.write("not json\n{\"id\": 1}\n")
    runs = read_log(tmp_path)
    assert sorted(r["id"] for r in runs) == ["a", "b", "c", "d", "e"]
    window = {"id": "a", "host": HOST, "start": 100.0, "end": 110.0}
    assert [r["id"] for r in overlapping(window, runs)] == ["d"]     # not b, c, e
    runs = [r for r in runs if r["id"] != "d"]
    assert overlapping(window, runs) == []
    assert [r["id"] for r in overlapping(dict(window, id="x", end=115.0), runs)] == ["a", "b"]


# -- tables ---------------------------------------------------------------------------------

SPEC = table_from_dict({
    "name": "jo_table2", "paper": "jo", "table": "table2", "seeds": 2,
    "metrics": ["accuracy", "test_time_ratio"], "ratio_reference": "linear_svm",
    "datasets": {"magic04": "magic04"},
    "methods": {"linear_svm": {"model": "linear"}, "llsvm": {"model": "llsvm"}}})
SINGLE = {"single": True}


def _record(model, seed, test_time, window=None, threads=SINGLE):
    config = {"model": {"name": model}, "dataset": {"name": "magic04"}, "seed": seed}
    return {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
            "config": config, "seed": seed, "dataset": "magic04", "model": model,
            "metrics": {"test_accuracy": 0.8}, "timings": {"test_total": test_time},
            "versions": {}, "threads": threads, "run_window": window}


def _plan(tmp_path, records):
    store = ResultsStore(tmp_path)
    cells = {}
    for method, model in (("linear_svm", "linear"), ("llsvm", "llsvm")):
        runs = []
        for rec in records[method]:
            store.save(rec)
            runs.append(RunPlan({"model": model, "dataset": "magic04", "seed": rec["seed"]},
                                rec["config"], rec["config_hash"], rec["seed"], cached=True))
        cells[("magic04", method)] = CellPlan("magic04", method, method, "run", model=model,
                                              dataset_config="magic04", seeds=2, runs=runs)
    return TablePlan(SPEC, Profile("full"), tmp_path, cells)


def _window(run_id, start, end):
    return {"id": run_id, "host": HOST, "pid": 1, "start": start, "end": end}


def test_timing_cells_are_marked_when_a_run_was_not_clean(tmp_path):
    log = tmp_path / LOG_NAME
    for run_id, start, end in (("l0", 0, 1), ("l1", 2, 3), ("s0", 4, 6), ("s1", 5.5, 8)):
        _line(log, id=run_id, hash="h", host=HOST, pid=1, event="end", start=start, end=end)
    records = {"linear_svm": [_record("linear", 0, 0.004, _window("l0", 0, 1)),
                              _record("linear", 1, 0.006, _window("l1", 2, 3))],
               "llsvm": [_record("llsvm", 0, 0.08, _window("s0", 4, 6)),        # s1 overlaps
                         _record("llsvm", 1, 0.10, _window("s1", 5.5, 8), {"single": False})]}
    plan = _plan(tmp_path, records)
    result = aggregate(plan)
    ratio = result.cells[("magic04", "llsvm", "test_time_ratio")]
    assert ratio.values == pytest.approx([20.0, 100 / 6])
    assert ratio.parts == pytest.approx((0.09, 0.005))      # absolute times beside the ratio
    assert ratio.unclean == {"overlapped another run": 2}
    assert result.cells[("magic04", "linear_svm", "test_time_ratio")].unclean == {}
    assert result.cells[("magic04", "llsvm", "accuracy")].unclean == {}   # not a timing
    md = render_markdown(result)
    assert "[90 ms / 5 ms] † [" in md and "timing not clean: 2 overlapped another run" in md
    assert timing_problem(records["llsvm"][1], []) == "ran with more than one thread"
    assert timing_problem(dict(records["llsvm"][0], run_window=None), []).startswith(
        "recorded before")
    # --timing-only reruns the llsvm runs (overlapped), not the clean linear ones
    assert sorted(r.seed for r in timing_reruns(plan)) == [0, 1]
    assert {r.overrides["model"] for r in timing_reruns(plan)} == {"llsvm"}
    accuracy_only = TablePlan(table_from_dict({**_raw(), "metrics": ["accuracy"]}),
                              Profile("full"), tmp_path, plan.cells)
    assert timing_reruns(accuracy_only) == []


def _raw():
    return {"name": "jo_table2", "paper": "jo", "table": "table2", "seeds": 2,
            "datasets": {"magic04": "magic04"},
            "methods": {"linear_svm": {"model": "linear"}, "llsvm": {"model": "llsvm"}}}


def test_every_launched_run_gets_one_thread_and_forced_runs_must_rewrite(tmp_path):
    env = {"OMP_NUM_THREADS": "8", "PATH": os.environ.get("PATH", "")}
    executor = Executor(tmp_path, jobs=1, env=env, echo=lambda s: None)
    assert all(executor.env[v] == "1" for v in THREAD_VARS)
    rec = _record("llsvm", 0, 0.1)
    ResultsStore(tmp_path).save(rec)
    run = RunPlan({"model": "llsvm", "dataset": "magic04", "seed": 0}, rec["config"],
                  rec["config_hash"], 0, cached=True)
    # a "run" that writes nothing: the stored record does not count as its result
    executor.command = [sys.executable, "-c", "import sys; print(sys.argv[1:])", "--"]
    report = executor.run([run], force=True)
    assert report.executed == 0 and run.hash in report.failed
    log = next(iter(report.logs))
    assert "force=true" in open(log).read()


def test_timing_only_refuses_parallel_local_jobs(tmp_path):
    from llc_bench.cli.tables import tables_command

    with pytest.raises(ConfigError, match="--timing-only"):
        tables_command(["--timing-only", "--jobs", "2", "--results-dir", str(tmp_path)],
                       echo=lambda s: None)
    lines: list[str] = []
    tables_command(["--timing-only", "--table", "sapl_table2", "--results-dir",
                    str(tmp_path)], echo=lines.append)
    assert any("no timing cells" in line for line in lines)


def test_a_cell_timed_on_two_hosts_is_not_clean():
    """A ratio's numerator and reference (or a cell's seeds) timed on two machines: the
    cell says so (two virtual machines of one day ran 2x apart)."""
    from llc_bench.experiment.environment import host_info
    from llc_bench.tables.aggregate import unclean_timings

    clean = {"run_window": _window("a", 0, 1), "threads": {"single": True}, "timings": {}}
    here = dict(clean, config_hash="a", host=host_info())
    there = dict(clean, config_hash="b", host={**host_info(), "platform": "Linux-other-vm"})
    assert here["host"]["cpu"] is None or isinstance(here["host"]["cpu"], str)
    assert unclean_timings([here, dict(here, config_hash="c")], []) == {}
    assert unclean_timings([here, there], []) == {"timed on different hosts": 2}


def test_timing_only_retimes_the_runs_of_a_dataset_timed_on_another_host(tmp_path):
    """A dataset whose runs (the ratio's reference included) were timed on two hosts: the
    cell says "timed on different hosts", and --timing-only reruns the runs not timed on
    this host; a dataset timed on one host, even another one, is left alone."""
    log = tmp_path / LOG_NAME
    for run_id, start in (("l0", 0), ("l1", 2), ("s0", 4), ("s1", 6)):
        _line(log, id=run_id, hash="h", host=HOST, pid=1, event="end", start=start,
              end=start + 1)

    def on(record, machine):
        return {**record, "host": {"platform": machine}}

    records = {"linear_svm": [on(_record("linear", 0, 0.004, _window("l0", 0, 1)), "old"),
                              on(_record("linear", 1, 0.006, _window("l1", 2, 3)), "old")],
               "llsvm": [on(_record("llsvm", 0, 0.08, _window("s0", 4, 5)), "new"),
                         on(_record("llsvm", 1, 0.10, _window("s1", 6, 7)), "old")]}
    plan = _plan(tmp_path, records)
    ratio = aggregate(plan).cells[("magic04", "llsvm", "test_time_ratio")]
    assert ratio.unclean == {"timed on different hosts": 4}
    rerun = timing_reruns(plan, this_host="new")
    assert sorted((r.overrides["model"], r.seed) for r in rerun) == [
        ("linear", 0), ("linear", 1), ("llsvm", 1)]
    assert len(timing_reruns(plan, this_host="other")) == 4
    one_host = _plan(tmp_path / "one", {m: [on(r, "old") for r in rs]
                                        for m, rs in records.items()})
    assert timing_reruns(one_host, this_host="new") == []
    # absolute times (no ratio reference): a cell counts alone, the linear runs stay
    absolute = TablePlan(table_from_dict({**_raw(), "metrics": ["accuracy", "test_time"]}),
                         Profile("full"), tmp_path, plan.cells)
    assert [(r.overrides["model"], r.seed) for r in timing_reruns(absolute, this_host="new")] == [
        ("llsvm", 1)]
