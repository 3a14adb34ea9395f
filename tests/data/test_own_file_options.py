"""Own files through `llc-bench run dataset=file` (in-process): every option of the built-in
datasets honoured or refused, and the files a user has (a directory or a FIFO, decimal commas,
empty columns, a header naming two columns alike, text that is not UTF-8, many classes, a
sparse file too large as a dense array) read or refused in one line that says the way out.
A refused run writes nothing (no record, run log, parsed-data cache or Hydra directory)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import (
    REPO,
    data_error,
    honoured,
    llc,
    one_error,
    problem,
    refused,
    where,
    write_delimited,
    write_svmlight,
)
from omegaconf import OmegaConf

from llc_bench.data.registry import dataset_spec, list_datasets, resolve_spec

pytestmark = pytest.mark.usefixtures("cli_env")


# --- dataset=file honours (or refuses) every option of the built-in datasets ------------------

def test_validation_on_own_file_scores_held_out_training_rows(tmp_path, capsys, csv_file):
    record, out = honoured(tmp_path, capsys, csv_file, "+dataset.validation=0.25")
    data = record["data"]
    assert " val acc " in out and " test acc " not in out
    assert data["n_test"] == round(140 * 0.25) and data["n_train"] == 140 - data["n_test"]
    assert data["validation"]["fraction"] == "1/4"
    assert record["config"]["dataset"]["validation"] == 0.25


@pytest.mark.parametrize("value", ["1.5", "0", "-0.1", "abc"])
def test_validation_out_of_range_on_own_file_is_refused(tmp_path, capsys, csv_file, value):
    refused(tmp_path, capsys, csv_file, f"+dataset.validation={value}",
            words=("validation", value))


def test_a_record_that_ignored_validation_is_not_a_cache_hit(tmp_path, capsys, csv_file):
    """Before the fix a validation run on an own file scored the test split under the same
    config hash; such a record is run again, not returned."""
    record, _ = honoured(tmp_path, capsys, csv_file, "+dataset.validation=0.25")
    path = tmp_path / "results" / "runs" / f"{record['config_hash']}.json"
    stale = {**record, "data": {**record["data"], "validation": None}}
    path.write_text(json.dumps(stale))
    again, out = honoured(tmp_path, capsys, csv_file, "+dataset.validation=0.25")
    assert "(cached)" not in out and again["data"]["validation"]["fraction"] == "1/4"
    _, out = honoured(tmp_path, capsys, csv_file, "+dataset.validation=0.25")
    assert out.strip().endswith("(cached)")


def _spec_of(record) -> object:
    return resolve_spec(record["config"]["dataset"])


# key -> (overrides, what must hold): a function of the record, or ("refused", words)
OPTION_CASES = {
    "name": (["dataset.name=mine"], lambda r: r["dataset"] == "mine"),
    "kind": (["dataset.kind=benchmark"], ("refused", ["dataset.kind", "dataset=file"])),
    "task": (["dataset.task=multiclass"], lambda r: r["data"]["task"] == "multiclass"),
    "description": (["+dataset.description=mine"],
                    lambda r: _spec_of(r).raw["description"] == "mine"),
    "homepage": (["+dataset.homepage=https://example.org"],
                 lambda r: _spec_of(r).homepage == "https://example.org"),
    "papers": (["+dataset.papers=[ml3]"], lambda r: _spec_of(r).raw["papers"] == ["ml3"]),
    "notes": (["+dataset.notes=[mine]"], lambda r: r["data"]["notes"] == ["mine"]),
    "sources": (["+dataset.sources=[]"], ("refused", ["dataset.sources", "dataset.train"])),
    "labels": (["+dataset.labels={positive:[0]}"], lambda r: r["data"]["classes"] == ["1", "0"]),
    "expected": (["+dataset.expected={classes:3}"], ("data error", ["expects 3"])),
    "paper_sizes": (["+dataset.paper_sizes={train:1,test:1}"],
                    lambda r: "differ from the paper's 1/1" in r["data"]["notes"][0]),
    "split": (["+dataset.split={protocol:count}"],
              ("refused", ["dataset.split", "dataset.test_fraction"])),
    "scaling": (["dataset.scaling=none"], lambda r: r["data"]["scaling"]["method"] == "none"),
    "sparse": (["dataset.sparse=true", "dataset.format=svmlight"],
               lambda r: r["data"]["sparse"] is True),
    "max_train": (["dataset.max_train=50"], lambda r: r["data"]["n_train"] == 50),
    "max_test": (["dataset.max_test=20"], lambda r: r["data"]["n_test"] == 20),
    "stream": (["dataset.stream=true"], ("refused", ["dataset.stream=true",
                                                     "dataset.format=svmlight", "dataset.test"])),
    "in_memory": (["+dataset.in_memory=false"], ("refused", ["dataset.in_memory",
                                                             "dataset.stream=true"])),
    "generator": (["+dataset.generator={name:xor}"], ("refused", ["dataset.generator"])),
    "validation": (["+dataset.validation=0.25"], lambda r: r["data"]["n_test"] == 35),
}


def builtin_options() -> set[str]:
    """Every key of a built-in dataset config, and ``validation``."""
    keys = {k for name in list_datasets() for k in dataset_spec(name)}
    return keys | set(OmegaConf.load(REPO / "conf/dataset/ringnorm.yaml")) | {"validation"}


def test_every_builtin_option_has_a_case_for_own_files():
    assert builtin_options() - set(OPTION_CASES) == set()


@pytest.mark.parametrize("key", sorted(OPTION_CASES))
def test_builtin_option_is_honoured_or_refused_on_own_files(tmp_path, capsys, key):
    overrides, check = OPTION_CASES[key]
    X, y = problem()
    svm = "dataset.format=svmlight" in overrides
    write = write_svmlight if svm else write_delimited
    train = write(tmp_path / ("d.svm" if svm else "d.csv"), X, y)
    if isinstance(check, tuple):
        (refused if check[0] == "refused" else data_error)(tmp_path, capsys, train,
                                                           *overrides, words=check[1])
    else:
        record, _ = honoured(tmp_path, capsys, train, *overrides)
        assert check(record), record["data"]


def test_stream_on_own_svmlight_files_is_honoured(tmp_path, capsys):
    X, y = problem(300)
    train = write_svmlight(tmp_path / "tr.svm", X[:200], y[:200])
    test = write_svmlight(tmp_path / "te.svm", X[200:], y[200:])
    record, _ = honoured(tmp_path, capsys, train, f"dataset.test={test}", "model=llsvm",
                         "coding.n_anchors=4", "dataset.format=svmlight", "dataset.stream=true",
                         "dataset.n_features=3", test_fraction=None)
    assert record["data"]["row_store"]["streamed"] is True
    assert record["metrics"]["test_accuracy"] >= 0.95


# --- a directory or a FIFO as the training file -----------------------------------------------

def test_directory_as_training_file(tmp_path, capsys):
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    refused(tmp_path, capsys, folder, words=("dataset.train=", "is a directory"))


def test_fifo_as_training_file(tmp_path, capsys):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    refused(tmp_path, capsys, fifo, words=("dataset.train=", "is not a regular file"))


def test_missing_training_file_still_says_no_such_file(tmp_path, capsys):
    refused(tmp_path, capsys, tmp_path / "nope.csv", words=("no such file",))


# --- decimal commas ---------------------------------------------------------------------------

@pytest.fixture
def decimal_comma_file(tmp_path):
    X, y = problem()
    path = write_delimited(tmp_path / "komma.csv", X, y, sep=";")
    path.write_text(path.read_text().replace(".", ","))
    assert "0," in path.read_text()
    return path


@pytest.mark.parametrize("overrides, words", [
    (["dataset.sep=semicolon"], ["komma.csv", "decimal commas", "dataset.decimal=comma"]),
    ([], ["komma.csv", "dataset.sep=semicolon dataset.decimal=comma"]),
    (["dataset.sep=tab"], ["komma.csv", "dataset.sep=semicolon dataset.decimal=comma"]),
    (["dataset.decimal=comma"], ["dataset.decimal=comma", "dataset.sep=semicolon"]),
    (["dataset.decimal=maybe", "dataset.sep=semicolon"], ["dataset.decimal='maybe'"]),
])
def test_decimal_commas_are_detected_and_named(tmp_path, capsys, decimal_comma_file, overrides,
                                               words):
    line = data_error(tmp_path, capsys, decimal_comma_file, *overrides, words=words)
    assert "dataset.sep=comma" not in line


def test_decimal_comma_option_reads_the_numbers(tmp_path, capsys, decimal_comma_file):
    record, _ = honoured(tmp_path, capsys, decimal_comma_file, "dataset.sep=semicolon",
                         "dataset.decimal=comma")
    point = write_delimited(tmp_path / "point.csv", *problem())
    same, _ = honoured(tmp_path, capsys, point)
    assert record["metrics"] == same["metrics"] and record["data"]["n_features"] == 3


# --- empty columns, a header naming two columns alike -----------------------------------------

def test_trailing_empty_columns_are_named(tmp_path, capsys):
    path = write_delimited(tmp_path / "trailing.csv", *problem())
    path.write_text("".join(line + ",,\n" for line in path.read_text().splitlines()))
    line = data_error(tmp_path, capsys, path, words=("trailing.csv", "columns 5 and 6 of 6",
                                                     "empty on every line"))
    assert "label" not in line


def test_an_empty_feature_column_with_a_header_is_named(tmp_path, capsys):
    X, y = problem()
    path = write_delimited(tmp_path / "hole.csv", X, y, header=["a", "b", "c", "label"])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0]] + [",".join(["", *row.split(",")[1:]])
                                            for row in lines[1:]]) + "\n")
    data_error(tmp_path, capsys, path, words=("hole.csv", "column 1 'a' of 4",
                                              "no value on any line",
                                              "dataset.drop_columns=[a]"))


def test_a_header_naming_two_columns_alike_is_named(tmp_path, capsys):
    path = write_delimited(tmp_path / "twice.csv", *problem(),
                           header=["x", "size", "size", "label"])
    data_error(tmp_path, capsys, path, words=("twice.csv", "line 1", "two columns 'size'",
                                              "columns 2 and 3"))
    data_error(tmp_path, capsys, path, "dataset.header=true", words=("two columns 'size'",))


# --- text that is not UTF-8 -------------------------------------------------------------------

@pytest.fixture
def latin1_file(tmp_path):
    X, y = problem()
    path = write_delimited(tmp_path / "latin.csv", X, np.array(["kalt", "warm"])[y],
                     header=["température", "b", "c", "état"])
    text = path.read_text().splitlines()
    text[7] = text[7].replace("warm", "wärm").replace("kalt", "kält")
    path.write_bytes("\n".join(text).encode("latin-1") + b"\n")
    return path


def test_non_utf8_bytes_give_the_line_and_the_encoding_option(tmp_path, capsys, latin1_file):
    data_error(tmp_path, capsys, latin1_file, "dataset.header=false",
               words=("latin.csv", "line 1", "not utf-8 text", "dataset.encoding=latin-1"))
    data_error(tmp_path, capsys, latin1_file, words=("latin.csv", "line 1",
                                                     "dataset.encoding=latin-1"))


def test_encoding_option_reads_the_file(tmp_path, capsys, latin1_file):
    refused(tmp_path, capsys, latin1_file, "dataset.encoding=klingon",
            words=("dataset.encoding='klingon'",))
    record, _ = honoured(tmp_path, capsys, latin1_file, "dataset.encoding=latin-1")
    assert set(record["data"]["classes"]) >= {"kalt", "warm"}


# --- a true many-class label column -----------------------------------------------------------

def test_many_classes_are_refused_unless_the_task_says_multiclass(tmp_path, capsys):
    rng = np.random.default_rng(0)
    k = 1500
    centres = rng.normal(size=(k, 2)) * 10
    paths = []
    for name, repeat in (("many_train.csv", 2), ("many_test.csv", 1)):
        y = np.repeat(np.arange(k), repeat)
        X = centres[y] + rng.normal(size=(len(y), 2)) * 0.01
        paths.append(write_delimited(tmp_path / name, X, np.char.add("c", y.astype(str))))
    train, test = paths
    data_error(tmp_path, capsys, train, f"dataset.test={test}", test_fraction=None,
               words=("1500 distinct labels", "dataset.task=multiclass"))
    record, _ = honoured(tmp_path, capsys, train, f"dataset.test={test}",
                         "dataset.task=multiclass", test_fraction=None)
    assert len(record["data"]["classes"]) == 1500 and record["data"]["task"] == "multiclass"


# --- a sparse file whose dense array would not fit --------------------------------------------

def test_a_huge_dense_array_is_refused_with_its_size(tmp_path, capsys):
    path = tmp_path / "long.svm"
    lines = [f"{1 if i % 2 else -1} 1:0.5 3:1.0" for i in range(300)]
    lines[0] = "-1 1:0.5 2000000:1.0"  # one very long line: 2 M features
    path.write_text("\n".join(lines) + "\n")
    base = ["run", "dataset=file", f"dataset.train={path}", "dataset.test_fraction=0.3",
            "dataset.format=svmlight", "model=linear", *where(tmp_path)]
    code, _, err = llc(capsys, *base)
    one_error(code, err, "2000000 features", "GiB as a dense array", "dataset.sparse=true")
    assert not list((tmp_path / "results").rglob("runs/*.json"))
    code, out, err = llc(capsys, *base, "dataset.sparse=true")
    assert code == 0 and "test acc" in out
