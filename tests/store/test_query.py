"""`llc-bench results` and `records_frame`: the store as a DataFrame, filters, exports;
and what a fresh `llc-bench run` prints about itself."""

import builtins
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from llc_bench.cli import main
from llc_bench.store.query import records_frame
from llc_bench.store.results import ResultsStore, config_hash


def _record(dataset, model, seed, acc, **trainer):
    config = {"dataset": {"name": dataset, "max_train": None}, "model": {"name": model},
              "trainer": {"name": "llc_sgd", **trainer}, "seed": seed, "force": False}
    return {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
            "config": config, "seed": seed, "dataset": dataset, "model": model,
            "data": {"n_train": 10, "n_test": 5},
            "metrics": {"test_accuracy": acc, "test_hinge": 0.5},
            "timings": {"train": 1.5, "test_total": 0.1}, "versions": {}}


@pytest.fixture
def store(tmp_path):
    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    records = [_record("banana", "llsvm", 0, 0.90, lambda_=1e-5, t0="calibrate"),
               _record("banana", "llsvm", 1, 0.89, lambda_=1e-4, t0=None),
               _record("banana", "linear", 0, 0.55, C=1.0),
               _record("usps", "llsvm", 0, 0.95, lambda_=1e-5, t0=None)]
    for record in records:
        store.save(record)
    return store, records


def test_frame_has_dotted_config_columns_and_filters(store):
    store, records = store
    frame = records_frame(store.root)
    assert len(frame) == 4
    assert {"trainer.lambda_", "trainer.t0", "dataset.name", "model.name",
            "test_accuracy", "train_seconds", "path"} <= set(frame.columns)
    row = frame[frame["hash"] == records[0]["config_hash"]].iloc[0]
    assert row["trainer.lambda_"] == 1e-5 and row["dataset.max_train"] is None
    assert Path(row["path"]).name == f"{records[0]['config_hash']}.json"

    def hashes(**kw):
        return set(records_frame(store.root, **kw)["hash"])

    h = [r["config_hash"] for r in records]
    assert hashes(where=["trainer.lambda_=1e-5"]) == {h[0], h[3]}   # 1e-5 == 1.0e-05
    assert hashes(datasets=["banana"], where=["trainer.lambda_=1e-5"]) == {h[0]}
    assert hashes(models=["linear"]) == {h[2]}
    assert hashes(datasets=["banana", "usps"], models=["llsvm"]) == {h[0], h[1], h[3]}
    assert hashes(where=["test_accuracy>=0.9", "seed=0"]) == {h[0], h[3]}
    assert hashes(where=["test_accuracy<0.6"]) == {h[2]}
    # null matches an absent key too (as in the cache key, null is "as if absent")
    assert hashes(where=["trainer.t0=null", "dataset!=usps"]) == {h[1], h[2]}
    assert hashes(where=["trainer.t0=calibrate"]) == {h[0]}


def test_a_record_s_classes_do_not_tell_it_apart_from_one_made_before_they_were_named(
        tmp_path):
    """Records made after conf/trainer named its class (``trainer._target_``) group with
    those made before: the class is not a column (nor in the cache key)."""
    store = ResultsStore(tmp_path / "results")
    old, new = _record("banana", "llsvm", 0, 0.9), _record("banana", "llsvm", 1, 0.8)
    new["config"]["trainer"]["_target_"] = "llc_bench.models.llsvm.LLSVMClassifier"
    for record in (old, new):
        store.save(record)
    frame = records_frame(store.root)
    assert len(frame) == 2 and not [c for c in frame.columns if "_target_" in c]


def test_cli_table_and_errors(store, capsys):
    store, records = store
    main(["results", "--results-dir", str(store.root), "--dataset", "banana",
          "--where", "trainer.lambda_=1e-5", "--columns", "trainer.lambda_"])
    out = capsys.readouterr().out
    assert records[0]["config_hash"] in out and "90.00%" in out and "trainer.lambda_" in out
    assert records[1]["config_hash"] not in out and "1 record(s)" in out

    for argv, message in (
            (["--where", "trainer.lamda=1"], "no column 'trainer.lamda'"),
            (["--where", "trainer.lambda_"], "expected KEY=VALUE"),
            (["--columns", "nope"], "no column 'nope'")):
        with pytest.raises(SystemExit) as exc:
            main(["results", "--results-dir", str(store.root), *argv])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 1 and err.count("\n") == 0 and message in err, err


def test_results_shows_the_config_keys_that_differ_among_the_matching_records(store, capsys):
    store, records = store
    main(["results", "--results-dir", str(store.root), "--dataset", "banana", "--model",
          "llsvm"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["hash", "dataset", "model", "seed", "test_accuracy",
                                "test_hinge", "train_seconds", "trainer.lambda_", "trainer.t0"]
    first = next(line for line in lines if line.startswith(records[0]["config_hash"]))
    second = next(line for line in lines if line.startswith(records[1]["config_hash"]))
    assert first.split()[-2:] == ["1e-05", "calibrate"]
    assert second.split()[-2:] == ["0.0001", "null"]
    assert lines[-1] == (f"2 record(s) in {store.root}; the config keys that differ among them: "
                         "trainer.lambda_, trainer.t0 (--columns A,B shows others)")
    main(["results", "--results-dir", str(store.root), "--dataset", "banana", "--model",
          "linear"])                                 # one record: nothing differs
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "train_seconds" and lines[-1] == f"1 record(s) in {store.root}"
    main(["results", "--results-dir", str(store.root), "--model", "llsvm", "--columns",
          "dataset.max_train"])                      # --columns chooses
    assert capsys.readouterr().out.splitlines()[0].split()[-1] == "dataset.max_train"


def test_csv_export_and_corrupt_record_warning(store, tmp_path, capsys):
    store, records = store
    (store.runs / "0123456789abcdef.json").write_text("{ not json")
    main(["runs", "--results-dir", str(store.root), "--model", "llsvm",
          "--csv", str(tmp_path / "out" / "runs.csv")])
    captured = capsys.readouterr()
    assert "1 unreadable record(s) skipped" in captured.err
    assert "wrote 3 record(s)" in captured.out
    frame = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert sorted(frame["hash"]) == sorted(r["config_hash"] for r in records
                                           if r["model"] == "llsvm")
    assert "trainer.lambda_" in frame.columns and frame["dataset.name"].notna().all()
    assert (frame["timings.train"] == 1.5).all() and (frame["timings.test_total"] == 0.1).all()


def test_parquet_needs_pyarrow(store, tmp_path, capsys, monkeypatch):
    store, _ = store
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(SystemExit):
        main(["results", "--results-dir", str(store.root), "--parquet", str(tmp_path / "r.pq")])
    err = capsys.readouterr().err.strip()
    assert err == "llc-bench: error: --parquet needs pyarrow: pip install pyarrow (or use --csv)"
    assert not (tmp_path / "r.pq").exists()


def test_parquet_export(store, tmp_path):
    pytest.importorskip("pyarrow")
    store, records = store
    main(["results", "--results-dir", str(store.root), "--parquet", str(tmp_path / "r.pq")])
    frame = pd.read_parquet(tmp_path / "r.pq")
    assert len(frame) == len(records) and "trainer.lambda_" in frame.columns


def test_fresh_run_prints_data_model_phases_record(tmp_path, capsys):
    where = [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
             f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false"]
    main(["run", "model=linear", "trainer.C=1.0", *where])
    lines = capsys.readouterr().out.strip().splitlines()
    [path] = (tmp_path / "results" / "runs").glob("*.json")
    assert lines[-5].startswith("data    banana: 3533 train / 1767 test rows, 2 features")
    assert lines[-4].startswith("model   linear: trainer liblinear (C=1.0)")
    assert lines[-3].startswith("phases  fit ") and "predict test" in lines[-3]
    assert lines[-2] == f"record  {path}"
    assert lines[-1].startswith("banana | linear | seed 0 | test acc ")
    record = json.loads(path.read_text())
    assert record["config"]["progress"] == "auto"
    main(["run", "model=linear", "trainer.C=1.0", *where])
    assert capsys.readouterr().out.strip().endswith("(cached)")


def test_costs_are_estimated_from_the_store_s_records(tmp_path):
    """The median time of one run of the same model on the same dataset, its fit scaled
    down to a subsampled run's rows; a pair never run has no estimate."""
    from llc_bench.store.costs import CostModel, describe

    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    for seed, seconds in enumerate((10.0, 30.0, 20.0)):
        record = _record("banana", "llsvm", seed, 0.9)
        record["timings"] = {"load": 1.0, "train_total": seconds, "jit_compile_train": 0.5,
                             "test_total": 0.5, "tune": 2.0}
        record["data"]["n_train"] = 1000
        store.save(record)
    costs = CostModel(tmp_path / "results", fallbacks=[tmp_path / "nothing"])
    assert costs.seconds("llsvm", "banana") == pytest.approx(1.0 + 20.0 - 0.5 + 0.5 + 2.0)
    # loading and the predictions read the whole data, the fit scales with the rows
    assert costs.seconds("llsvm", "banana", rows=250) == pytest.approx(1.5 + 21.5 / 4)
    assert costs.seconds("llsvm", "banana", rows=5000) == pytest.approx(23.0)  # not scaled up
    assert costs.seconds("linear", "banana") is None
    total, unknown = costs.total([("llsvm", "banana"), ("llsvm", "banana", 500),
                                  ("kernel", "usps")])
    assert total == pytest.approx(23.0 + 1.5 + 21.5 / 2) and unknown == 1
    assert describe(total, unknown) == "~35 s + 1 run without an estimate"
    assert describe(3 * 3600) == "~3.0 h" and describe(600) == "~10 min"
    for seed in range(3):  # a kernel SVM's fit falls as the square of its rows
        record = _record("banana", "kernel", seed, 0.9)
        record["timings"] = {"load": 1.0, "train_total": 40.0}
        record["data"]["n_train"] = 1000
        store.save(record)
    costs = CostModel(tmp_path / "results")
    assert costs.seconds("kernel", "banana", rows=500) == pytest.approx(1.0 + 40.0 / 4)


def test_selection_s_keys_show_as_one_column_not_its_whole_space(tmp_path, capsys):
    """A run with tune=auto records the selection's settings and its space, one without
    records none: the difference is one column (tune.trials, null without selection), and a
    setting that differs between selecting runs is shown, the space (conf/search) never."""
    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    space = {"trainer.lambda_": {"kind": "float", "low": 1e-7, "high": 0.1, "log": True},
             "coding.k": {"kind": "choice", "values": [2, 4, 8]}}
    records = [_record("banana", "llsvm", 0, 0.90), _record("banana", "llsvm", 1, 0.91),
               _record("banana", "llsvm", 2, 0.92)]
    for record, tune in zip(records, (None, {"trials": 30, "budget_s": 60, "space": space},
                                      {"trials": 30, "budget_s": 60, "space": space}),
                            strict=True):
        record["config"]["tune"] = tune
        record["config_hash"] = config_hash(record["config"])
        store.save(record)
    main(["results", "--results-dir", str(store.root)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "tune.trials" and "tune.space" not in lines[-1]
    assert lines[-1].endswith("differ among them: tune.trials (--columns A,B shows others)")
    records[2]["config"]["tune"]["budget_s"] = 120
    records[2]["config_hash"] = config_hash(records[2]["config"])
    store.save(records[2])
    main(["results", "--results-dir", str(store.root)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith("differ among them: tune.budget_s (--columns A,B shows others)")


def test_summary_has_one_row_per_setting_with_its_seeds_mean_and_spread(tmp_path, capsys):
    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    runs = [("llsvm", 0, 0.90, {"lambda_": 1e-5}), ("llsvm", 1, 0.92, {"lambda_": 1e-5}),
            ("llsvm", 2, 0.94, {"lambda_": 1e-5}), ("llsvm", 0, 0.80, {"lambda_": 1e-4}),
            ("linear", 0, 0.55, {"C": 1.0}), ("linear", 1, 0.57, {"C": 1.0})]
    for model, seed, acc, trainer in runs:
        record = _record("banana", model, seed, acc, **trainer)
        record["timings"].update(train_total=1.0 + seed, tune=2.0)
        store.save(record)
    main(["results", "--results-dir", str(store.root), "--summary"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["dataset", "model", "trainer.lambda_", "seeds", "test_accuracy",
                                "fit_seconds"]           # trainer.C: one value per model
    rows = [line.split() for line in lines[1:-1]]
    assert rows == [["banana", "linear", "null", "0,1", "56.00%", "±", "1.41", "3.5"],
                    ["banana", "llsvm", "0.0001", "0", "80.00%", "3"],
                    ["banana", "llsvm", "1e-05", "0,1,2", "92.00%", "±", "2.00", "4"]]
    assert lines[-1] == f"3 setting(s), 6 record(s) in {store.root}"
