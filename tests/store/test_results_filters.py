"""`llc-bench results` filters: a --where that cannot match is an error saying why, a filter
that names nothing says so (with a did-you-mean), an export path under a regular file is
named."""

from __future__ import annotations

import pytest
from conftest import llc, one_error

pytestmark = pytest.mark.usefixtures("cli_env")


# --- filters that cannot match, filters that name nothing -------------------------------------

@pytest.fixture
def store(tmp_path):
    from llc_bench.store.results import ResultsStore, config_hash

    store = ResultsStore(tmp_path / "results")
    store.check_writable()
    for seed, (model, acc) in enumerate([("llsvm", 0.96), ("linear", 0.55)]):
        config = {"dataset": {"name": "banana"}, "model": {"name": model},
                  "trainer": {"name": "llc_sgd", "t0": "calibrate" if seed else 100.0},
                  "seed": seed}
        store.save({"record_version": 1, "status": "complete",
                    "config_hash": config_hash(config), "config": config, "seed": seed,
                    "dataset": "banana", "model": model, "data": {"n_train": 10, "n_test": 5},
                    "metrics": {"test_accuracy": acc, "test_hinge": 0.5},
                    "timings": {"train": 1.0, "test_total": 0.1}, "versions": {}})
    return store


@pytest.mark.parametrize("condition, words", [
    ("test_accuracy>>0.5", ["'test_accuracy>>0.5'", "one operator"]),
    ("test_accuracy=<0.5", ["one operator"]),
    ("test_accuracy>abc", ["> needs a number", "'abc'"]),
    ("model>linear", ["> needs a number", "'linear'"]),
    ("model>3", ["model holds no numbers", "only = and != apply"]),
    ("seed=abc", ["seed holds numbers", "'abc'"]),
    ("test_accuracy>95", ["test_accuracy is a fraction in [0, 1]", "did you mean 0.95?"]),
    ("train_accuracy<=80", ["train_accuracy is a fraction", "did you mean 0.8?"]),
    ("test_accuracy=", ["a value"]),
])
def test_where_that_cannot_match_is_an_error(store, capsys, condition, words):
    code, out, err = llc(capsys, "results", "--results-dir", str(store.root), "--where",
                         condition)
    one_error(code, err, "--where", *words)
    assert "no records match" not in out


@pytest.mark.parametrize("condition, count", [
    ("test_accuracy>0.9", 1), ("model=linear", 1), ("trainer.t0>50", 1),
    ("trainer.t0=calibrate", 1), ("dataset.name=banana", 2), ("test_accuracy>=1", 0),
])
def test_where_that_can_match_still_works(store, capsys, condition, count):
    code, out, err = llc(capsys, "results", "--results-dir", str(store.root), "--where",
                         condition)
    assert code == 0 and not err
    assert (f"{count} record(s)" in out) if count else \
        out.strip() == f"no records match all of the filters (2 record(s) in {store.root})"


@pytest.mark.parametrize("option, value, words", [
    ("--model", "nosuch", "no record has --model nosuch (the store holds "),
    ("--model", "lineer", "no record has --model lineer; did you mean linear? (the store"),
    ("--dataset", "banan", "no record has --dataset banan; did you mean banana? (the store "
                           "holds banana)"),
])
def test_results_filter_that_names_nothing_says_so(store, capsys, option, value, words):
    code, out, err = llc(capsys, "results", "--results-dir", str(store.root), option, value)
    assert code == 0 and not err
    assert out.startswith("no records match: " + words), out


# --- an export path under a regular file ------------------------------------------------------

@pytest.mark.parametrize("option", ["--csv", "--parquet"])
def test_export_under_a_regular_file_names_it(store, tmp_path, capsys, option):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file")
    code, _, err = llc(capsys, "results", "--results-dir", str(store.root), option,
                       str(blocker / "sub" / "out.csv"))
    one_error(code, err, option, f"{blocker} is a file, not a directory")
    code, _, err = llc(capsys, "results", "--results-dir", str(store.root), "--csv",
                       str(tmp_path))
    one_error(code, err, "--csv", "is a directory")
