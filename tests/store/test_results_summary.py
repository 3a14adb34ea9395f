"""`llc-bench results --summary` and the derived columns it groups by: what it writes with
--csv, the runs with and without selection (``tune``), and the split that scored a run."""

import pandas as pd
import pytest

from llc_bench.cli import main
from llc_bench.errors import ConfigError
from llc_bench.store.query import records_frame
from llc_bench.store.results import ResultsStore, config_hash


def _record(seed, acc, lambda_=1e-5, tune="absent", validation=None, model="llsvm"):
    config = {"dataset": {"name": "banana", "validation": 0.25 if validation else None},
              "model": {"name": model}, "trainer": {"name": "llc_sgd", "lambda_": lambda_},
              "seed": seed}
    if tune != "absent":
        config["tune"] = tune
    record = {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
              "config": config, "seed": seed, "dataset": "banana", "model": model,
              "data": {"n_train": 10, "n_test": 5, "validation": validation},
              "metrics": {"test_accuracy": acc}, "timings": {"train_total": 1.0 + seed},
              "versions": {}}
    if isinstance(tune, dict):
        record["tune"] = {"chosen": {}, "seconds": 2.0}
    return record


def _store(tmp_path, records):
    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    for record in records:
        store.save(record)
    return store


def test_summary_csv_writes_the_summary_not_the_records(tmp_path, capsys):
    store = _store(tmp_path, [_record(0, 0.90), _record(1, 0.92), _record(2, 0.94),
                              _record(0, 0.80, lambda_=1e-4)])
    out = tmp_path / "summary.csv"
    main(["results", "--results-dir", str(store.root), "--summary", "--csv", str(out)])
    assert "wrote 2 setting(s) of 4 record(s)" in capsys.readouterr().out
    frame = pd.read_csv(out)
    assert list(frame["seeds"]) == ["0", "0,1,2"] and list(frame["runs"]) == [1, 3]
    assert "hash" not in frame.columns and "trainer.lambda_" in frame.columns
    assert frame["test_accuracy_mean"].tolist() == pytest.approx([0.80, 0.92])
    assert frame["test_accuracy_std"].iloc[1] == pytest.approx(0.02)
    assert frame["fit_seconds_mean"].tolist() == pytest.approx([1.0, 2.0])


def test_where_tune_off_matches_the_runs_without_selection(tmp_path):
    """A run without selection records ``tune: null`` (or, made before selection existed,
    no ``tune`` at all); one with it, the resolved settings (no mode)."""
    records = [_record(0, 0.9, tune=None), _record(1, 0.9),
               _record(2, 0.9, tune={"trials": 30, "budget_s": 60})]
    store = _store(tmp_path, records)

    def hashes(condition):
        return set(records_frame(store.root, where=[condition])["hash"])

    h = [r["config_hash"] for r in records]
    assert hashes("tune=off") == {h[0], h[1]}
    assert hashes("tune=on") == hashes("tune!=off") == {h[2]}
    assert hashes("tune=false") == {h[0], h[1]} and hashes("tune=true") == {h[2]}
    with pytest.raises(ConfigError, match="not the mode asked.*use tune=on or tune=off"):
        hashes("tune=auto")
    old = _store(tmp_path / "old", [_record(0, 0.9)])         # no record knows selection
    assert len(records_frame(old.root, where=["tune=off"])) == 1


def test_summary_keeps_validation_scored_runs_apart_from_test_scored(tmp_path, capsys):
    """The same setting scored on held-out training rows (dataset.validation) and on the
    test split: two rows, each accuracy in the column of its split."""
    validation = {"fraction": "0.25", "train": 8, "validation": 2}
    store = _store(tmp_path, [_record(0, 0.90), _record(1, 0.92),
                              _record(0, 0.50, validation=validation),
                              _record(1, 0.60, validation=validation)])
    main(["results", "--results-dir", str(store.root), "--summary", "--columns",
          "trainer.lambda_"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["dataset", "model", "scored_on", "seeds", "test_accuracy",
                                "validation_accuracy", "fit_seconds"]
    rows = [line.split() for line in lines[1:-1]]
    assert rows == [["banana", "llsvm", "test", "0,1", "91.00%", "±", "1.41", "1.5"],
                    ["banana", "llsvm", "validation", "0,1", "55.00%", "±", "7.07", "1.5"]]
    assert lines[-1].startswith("2 setting(s), 4 record(s)")
    out = tmp_path / "s.csv"
    main(["results", "--results-dir", str(store.root), "--summary", "--csv", str(out)])
    frame = pd.read_csv(out)
    assert frame["scored_on"].tolist() == ["test", "validation"]
    assert frame["test_accuracy_mean"].iloc[0] == pytest.approx(0.91)
    assert pd.isna(frame["test_accuracy_mean"].iloc[1])
    assert frame["validation_accuracy_mean"].iloc[1] == pytest.approx(0.55)
