"""Bad or ambiguous own data files through `llc-bench run dataset=file`.

Each case runs the console entry in-process (``llc_bench.cli.main``) with the results store
and the data home in ``tmp_path``. A user mistake must end as exactly one
``llc-bench: error:`` line, exit code != 0, no traceback, and no record or cache file; a
case that used to give a silently wrong result must now give the right one.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from llc_bench.cli import main
from llc_bench.data.cache import digest, load_cached
from llc_bench.data.dataset import UNSEEN_LABEL
from llc_bench.experiment.metrics import accuracy, hinge_loss


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("LLC_BENCH_MIRROR", raising=False)
    monkeypatch.delenv("LLC_BENCH_DATA", raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))


def run(tmp_path, capsys, *overrides):
    """``llc-bench run dataset=file ...``: (exit code, stdout, stderr)."""
    argv = ["run", "dataset=file", "trainer.C=1.0", f"results_dir={tmp_path / 'results'}",
            f"data.home={tmp_path / 'home'}", "data.download=false", *overrides]
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def records(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (tmp_path / "results" / "runs").glob("*.json")]


def caches(tmp_path) -> list[Path]:
    return sorted((tmp_path / "home").rglob("*.npz"))


def fails(tmp_path, capsys, *overrides, words=()) -> str:
    """Run, assert a clean one-line failure that wrote nothing; return the error line."""
    code, out, err = run(tmp_path, capsys, *overrides)
    assert code not in (0, None), (out, err)
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.startswith("llc-bench: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert str(word) in lines[0], (word, lines[0])
    assert not records(tmp_path) and not caches(tmp_path)
    return lines[0]


def succeeds(tmp_path, capsys, *overrides) -> dict:
    code, out, err = run(tmp_path, capsys, *overrides)
    assert code in (0, None) and "Traceback" not in err, err
    [record] = [r for r in records(tmp_path) if out.strip().endswith(r["config_hash"])]
    return record


def problem(n=600, seed=0):
    """A linearly separable 3-feature problem (margin 0.3) with labels 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * n, 3))
    score = X[:, 1] + X[:, 2]
    X = X[np.abs(score) > 0.3][:n]
    return X, (X[:, 1] + X[:, 2] > 0).astype(int)


def write_svmlight(path: Path, X, y, base: int) -> Path:
    path.write_text("".join(f"{label} " + " ".join(f"{j + base}:{v:.5f}" for j, v in
                                                   enumerate(row) if v != 0) + "\n"
                            for row, label in zip(X, y, strict=True)))
    return path


def write_csv(path: Path, X, y, label_first=False, header=None, sep=",") -> Path:
    rows = [[*(f"{v:.5f}" for v in x), str(label)] for x, label in zip(X, y, strict=True)]
    if label_first:
        rows = [[r[-1], *r[:-1]] for r in rows]
    lines = ([sep.join(header)] if header else []) + [sep.join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


# --- svmlight index base: decided once for all files ------------------------------------------

@pytest.fixture
def zero_based_pair(tmp_path):
    """Zero-based train and test files; the test file never uses feature index 0."""
    X, y = problem(600)
    X[400:, 0] = 0.0
    train = write_svmlight(tmp_path / "tr.svm", X[:400], 2 * y[:400] - 1, 0)
    test = write_svmlight(tmp_path / "te.svm", X[400:], 2 * y[400:] - 1, 0)
    assert " 0:" not in test.read_text()
    return train, test, X, y


def test_zero_based_pair_without_index_0_in_test_is_read_zero_based(tmp_path, capsys,
                                                                    zero_based_pair):
    train, test, _, _ = zero_based_pair
    record = succeeds(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
                      "dataset.format=svmlight")
    assert record["metrics"]["test_accuracy"] >= 0.98  # per-file guessing gave ~30-75%
    decisions = [f["zero_based"] for f in record["data"]["files"]]
    assert all(d["zero_based"] is True and "tr.svm uses feature index 0" in d["decided"]
               for d in decisions)
    forced = succeeds(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
                      "dataset.format=svmlight", "dataset.zero_based=true")
    assert forced["metrics"]["test_accuracy"] == record["metrics"]["test_accuracy"]
    assert forced["data"]["files"][0]["zero_based"] == {"zero_based": True, "decided": "set"}


def test_one_based_pair_is_still_one_based(tmp_path, capsys):
    X, y = problem(500)
    train = write_svmlight(tmp_path / "tr1.svm", X[:350], y[:350], 1)
    test = write_svmlight(tmp_path / "te1.svm", X[350:], y[350:], 1)
    record = succeeds(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
                      "dataset.format=svmlight")
    assert record["data"]["n_features"] == 3 and record["metrics"]["test_accuracy"] >= 0.98
    assert record["data"]["files"][1]["zero_based"]["zero_based"] is False


def test_zero_based_train_with_one_based_test_is_an_error_not_a_guess(tmp_path, capsys,
                                                                      zero_based_pair):
    """Mixed bases cannot be read right by any one base: the files disagree, say so (the
    per-file guess and the base decided once both gave a wrong accuracy with exit 0)."""
    train, _, X, y = zero_based_pair
    test = write_svmlight(tmp_path / "te_one.svm", X[400:], 2 * y[400:] - 1, 1)
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
          "dataset.format=svmlight", words=("te_one.svm", "tr.svm", "zero- and one-based",
                                            "dataset.zero_based"))


# --- classes and task from the training split -------------------------------------------------

@pytest.fixture
def stray_test_label(tmp_path):
    X, y = problem(600)
    y_test = y[400:].copy()
    y_test[:3] = 7  # a label the training file never has
    train = write_csv(tmp_path / "train.csv", X[:400], y[:400])
    test = write_csv(tmp_path / "test.csv", X[400:], y_test)
    return train, test, y[400:]


def test_test_label_unseen_in_training_is_an_error(tmp_path, capsys, stray_test_label):
    train, test, _ = stray_test_label
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
          words=("test.csv", "'7' (3 rows)", "training split", "unseen_test_labels"))


def test_unseen_test_labels_can_count_as_errors(tmp_path, capsys, stray_test_label):
    train, test, _ = stray_test_label
    record = succeeds(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
                      "dataset.unseen_test_labels=count_as_errors")
    data = record["data"]
    assert data["task"] == "binary" and data["classes"] == ["0", "1"]  # not a 3-class task
    assert data["labels"]["unseen_test"] == {"7": 3} and data["n_test"] == 200
    assert record["metrics"]["test_accuracy"] <= 197 / 200  # the 3 rows are wrong
    assert record["metrics"]["test_accuracy"] >= 0.95


def test_unseen_label_metrics_count_as_wrong_and_negative_for_every_class():
    y = np.array([0, 1, UNSEEN_LABEL])
    scores = np.array([[2.0, -1.0, -3.0], [-2.0, 1.5, -1.0], [0.5, -0.5, 3.0]])
    assert accuracy(y, scores.argmax(axis=1)) == pytest.approx(2 / 3)
    margins = np.array([[0, 0, 0], [0, 0, 0], [1.5, 0.5, 4.0]])  # row 3: 1 + f_c for every c
    assert hinge_loss(y, scores, classes=np.arange(3)) == pytest.approx(margins.mean())
    binary = hinge_loss(np.array([1, UNSEEN_LABEL]), np.array([2.0, 0.5]),
                        classes=np.array([-1, 1]))
    assert binary == pytest.approx(1.5 / 2)


def test_unseen_label_policy_is_checked_before_reading(tmp_path, capsys, stray_test_label):
    train, test, _ = stray_test_label
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
          "dataset.unseen_test_labels=maybe", words=("dataset.unseen_test_labels", "maybe"))


# --- a feature column taken as the label ------------------------------------------------------

def test_float_column_as_label_is_an_error_naming_the_column(tmp_path, capsys):
    X, y = problem(600)
    path = write_csv(tmp_path / "label_first.csv", X, y, label_first=True)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          words=("label_first.csv", "distinct labels", "dataset.label_column=-1",
                 "column 4 of 4", "set dataset.label_column"))
    record = succeeds(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
                      "dataset.label_column=0")
    assert record["data"]["classes"] == ["0", "1"]
    assert record["metrics"]["test_accuracy"] >= 0.98


# --- the parsed-data cache is verified --------------------------------------------------------

@pytest.fixture
def cached_run(tmp_path, capsys):
    X, y = problem(300)
    path = write_csv(tmp_path / "cache_me.csv", X, y)
    args = (f"dataset.train={path}", "dataset.test_fraction=0.3")
    record = succeeds(tmp_path, capsys, *args)
    [entry] = caches(tmp_path)
    return args, record, entry


def _rewrite(entry: Path, change, keep_digest: bool) -> None:
    with np.load(entry) as npz:
        arrays = {k: npz[k] for k in npz.files}
    stored = arrays.pop("digest")
    change(arrays)
    arrays["digest"] = stored if keep_digest else np.array(digest(arrays))
    with open(entry, "wb") as fh:
        np.savez(fh, **arrays)


def _rerun_rebuilds(tmp_path, capsys, args, record, entry):
    code, out, err = run(tmp_path, capsys, *args, "force=true")
    assert code in (0, None), err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(entry) in warnings[0] and "cache_me.csv" in warnings[0]
    [again] = records(tmp_path)
    assert again["metrics"] == record["metrics"]
    assert again["data"]["files"][0]["cache"] == "miss"
    assert load_cached(entry) is not None  # rebuilt: verifies again, silently
    assert not capsys.readouterr().err


def test_altered_cache_entry_is_detected_and_rebuilt(tmp_path, capsys, cached_run):
    args, record, entry = cached_run

    def flip(arrays):
        arrays["label_codes"] = 1 - arrays["label_codes"]  # still a valid, well-shaped npz

    _rewrite(entry, flip, keep_digest=True)
    _rerun_rebuilds(tmp_path, capsys, args, record, entry)


def test_wrong_shaped_cache_entry_is_rebuilt(tmp_path, capsys, cached_run):
    args, record, entry = cached_run

    def drop_rows(arrays):
        arrays["X"] = arrays["X"][:-5]

    _rewrite(entry, drop_rows, keep_digest=False)  # digest fine, shapes inconsistent
    _rerun_rebuilds(tmp_path, capsys, args, record, entry)


def test_garbage_cache_entry_is_rebuilt(tmp_path, capsys, cached_run):
    args, record, entry = cached_run
    entry.write_bytes(b"PK\x03\x04 not a zip")
    _rerun_rebuilds(tmp_path, capsys, args, record, entry)


# --- parse errors: huge index, wrong separator ------------------------------------------------

def test_huge_svmlight_index_is_one_line_naming_file_line_and_index(tmp_path, capsys):
    X, y = problem(60)
    path = write_svmlight(tmp_path / "huge.svm", X, y, 1)
    path.write_text(path.read_text() + "1 2000000000:1\n")
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.format=svmlight", words=("huge.svm", "line 61", "feature index 2000000000"))
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.format=svmlight", "dataset.sparse=true", words=("huge.svm", "2000000000"))


@pytest.mark.parametrize("sep, name", [(";", "semicolon"), ("\t", "tab"), (" ", "whitespace")])
def test_wrong_separator_is_a_parse_error_suggesting_dataset_sep(tmp_path, capsys, sep, name):
    X, y = problem(100)
    path = write_csv(tmp_path / "other_sep.csv", X, y, sep=sep)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          words=("other_sep.csv", f"dataset.sep={name}"))
    record = succeeds(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
                      f"dataset.sep={name}")
    assert record["data"]["n_features"] == 3


@pytest.mark.parametrize("name, text, extra, words", [
    ("empty.csv", "", (), ("the file is empty",)),
    ("empty.svm", "\n", ("dataset.format=svmlight",), ("no data rows",)),
    ("only_header.csv", "a,b,label\n", (), ("no data rows",)),
    ("really.svm", "1 1:0.5 2:1\n-1 1:0.1 2:3\n", (), ("dataset.format=svmlight",)),
    ("int32.svm", "1 1:0.5\n-1 3000000000:1\n", ("dataset.format=libsvm",),
     ("line 2", "feature index 3000000000 is too large")),
])
def test_other_unreadable_files_are_one_line(tmp_path, capsys, name, text, extra, words):
    path = tmp_path / name
    path.write_text(text)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3", *extra,
          words=(name, *words))


# --- messages that point into the file --------------------------------------------------------

def test_nan_position_is_given_as_file_line_and_column(tmp_path, capsys):
    X, y = problem(100)
    path = write_csv(tmp_path / "holes.csv", X, y, header=["a", "b", "c", "label"])
    lines = path.read_text().splitlines()
    lines[8] = lines[8].replace(lines[8].split(",")[1], "", 1)  # file line 9, column 2 empty
    path.write_text("\n".join(lines) + "\n")
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          words=("holes.csv", "NaN", "line 9, column 2 'b'"))


def test_nan_in_svmlight_names_line_and_feature_index(tmp_path, capsys):
    X, y = problem(50)
    path = write_svmlight(tmp_path / "nan.svm", X, y, 1)
    lines = path.read_text().splitlines()
    lines[4] = f"{y[4]} 1:0.5 2:nan 3:1"
    path.write_text("# a comment line\n" + "\n".join(lines) + "\n")
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.format=svmlight", words=("nan.svm", "line 6", "feature index 2"))


@pytest.mark.parametrize("bad, why", [("1 1:0.5 2:abc", "'2:abc' is not 'index:value'"),
                                      ("yes 1:0.5", "label 'yes' is not a number"),
                                      ("1 3:1 2:1", "indices must increase"),
                                      ("1,0.5,0.7", "dataset.format=csv")])
def test_malformed_svmlight_line_has_its_line_number(tmp_path, capsys, bad, why):
    X, y = problem(40)
    path = write_svmlight(tmp_path / "bad.svm", X, y, 1)
    lines = path.read_text().splitlines()
    lines[2] = bad
    path.write_text("\n".join(lines) + "\n")
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.format=svmlight", words=("bad.svm", "line 3:", why))


def test_positive_label_not_present_lists_the_labels(tmp_path, capsys):
    X, y = problem(100)
    path = write_csv(tmp_path / "pos.csv", X, y)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.positive=5", words=("label 5 not found", "labels are 0, 1"))


# --- CSV header: auto-detected, hints name dataset.header / dataset.label_column --------------

@pytest.fixture
def iris_like(tmp_path):
    """The own-data docs' example: a header row and string labels in the last column."""
    X, y = problem(300)
    names = np.array(["setosa", "virginica"])[y]
    return write_csv(tmp_path / "flowers.csv", X, names,
                     header=["sepal_length", "sepal_width", "petal_length", "species"])


def test_header_is_detected_and_string_labels_work(tmp_path, capsys, iris_like):
    record = succeeds(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3")
    data = record["data"]
    assert data["n_train"] + data["n_test"] == 300 and data["n_features"] == 3
    assert data["classes"] == ["setosa", "virginica"] and data["files"][0]["header"] == "detected"
    named = succeeds(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3",
                     "dataset.label_column=species", "dataset.positive=setosa")
    assert named["data"]["classes"] == ["virginica", "setosa"]


def test_numeric_first_row_is_data_not_a_header(tmp_path, capsys):
    X, y = problem(120)
    path = write_csv(tmp_path / "plain.csv", X, y)
    record = succeeds(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.25")
    assert record["data"]["n_train"] + record["data"]["n_test"] == 120
    assert record["data"]["files"][0]["header"] == "none detected"


def test_header_false_points_at_dataset_header(tmp_path, capsys, iris_like):
    fails(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3",
          "dataset.header=false", words=("flowers.csv", "line 1", "looks like a header",
                                         "dataset.header=true"))


def test_string_label_in_a_feature_column_points_at_dataset_label_column(tmp_path, capsys,
                                                                         iris_like):
    line = fails(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3",
                 "dataset.label_column=0", words=("flowers.csv", "line 2, column 4 'species'",
                                                  "dataset.label_column=3"))
    assert "options.categorical" not in line


def test_label_column_name_without_header_says_so(tmp_path, capsys):
    X, y = problem(50)
    path = write_csv(tmp_path / "nohead.csv", X, y)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          "dataset.label_column=species", words=("nohead.csv", "no header row",
                                                 "dataset.header=true"))


@pytest.mark.parametrize("value, words", [
    ("petal_width", ("flowers.csv", "dataset.label_column 'petal_width' is not a column name",
                     "sepal_length, sepal_width, petal_length, species")),
    ("5", ("flowers.csv", "dataset.label_column 5 is out of range for 4 columns",
           "0 to 3", "-1 to -4")),
])
def test_a_label_column_that_is_not_there_names_the_option(tmp_path, capsys, iris_like, value,
                                                           words):
    line = fails(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3",
                 f"dataset.label_column={value}", words=words)
    assert "cannot parse" not in line and "ValueError" not in line  # not a parse failure


def test_counts_in_messages_agree_in_number(tmp_path, capsys):
    """One stray label, one feature: singular; several labels: plural."""
    X, y = problem(600)
    y_test = y[400:].copy()
    y_test[0], y_test[1:3] = 7, 8
    train = write_csv(tmp_path / "train.csv", X[:400], y[:400])
    test = write_csv(tmp_path / "test.csv", X[400:], y_test)
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
          words=("test labels '7' (1 row), '8' (2 rows) do not occur",))
    y_test[1:3] = y[401:403]
    test = write_csv(tmp_path / "test.csv", X[400:], y_test)
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={test}",
          words=("test label '7' (1 row) does not occur",))
    narrow = write_csv(tmp_path / "narrow.csv", X[400:, :1], y[400:])
    fails(tmp_path, capsys, f"dataset.train={train}", f"dataset.test={narrow}",
          words=("narrow.csv", "1 feature but the other files"))


@pytest.mark.parametrize("override, words", [
    ("dataset.header=maybe", ("dataset.header", "true, false or auto")),
    ("dataset.zero_based=2", ("dataset.zero_based", "true, false or auto")),
    ("dataset.sparse=sometimes", ("sparse='sometimes'", "is not true or false")),  # was sparse
    ("dataset.sparse=1", ("sparse=1", "is not true or false")),
])
def test_bad_option_values_are_config_errors(tmp_path, capsys, iris_like, override, words):
    fails(tmp_path, capsys, f"dataset.train={iris_like}", "dataset.test_fraction=0.3", override,
          words=words)


@pytest.mark.parametrize("value", ["1.5", "0", "-0.25"])
def test_a_test_fraction_outside_0_1_is_shown_as_typed(tmp_path, capsys, iris_like, value):
    line = fails(tmp_path, capsys, f"dataset.train={iris_like}", f"dataset.test_fraction={value}")
    assert line.endswith(f"split.test_fraction must be in (0, 1), got {float(value)!r}") or \
        line.endswith(f"split.test_fraction must be in (0, 1), got {value}"), line


# --- options that leave nothing: every row, every feature column -----------------------------

def test_drop_rows_dropping_every_row_names_the_columns_missing_most(tmp_path, capsys):
    """Each row misses one value (a different column on each): missing=drop_rows leaves
    none; the error says so, with the columns to leave out instead."""
    X, y = problem(60)
    cells = [[f"{v:.5f}" for v in row] for row in X]
    for i, row in enumerate(cells):
        row[i % 2] = ""
    path = tmp_path / "holes.csv"
    path.write_text("a,b,c,label\n" + "".join(",".join([*row, str(t)]) + "\n"
                                           for row, t in zip(cells, y, strict=True)))
    line = fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
                 "dataset.missing=drop_rows",
                 words=(str(path), "every one of its 60 rows", "dataset.missing=drop_rows",
                        "'a' on 30 rows, 'b' on 30 rows", "dataset.drop_columns=[a,b]"))
    assert "no data rows" not in line


@pytest.mark.parametrize("header, dropped", [(True, "[a,b,c]"), (False, "[0,1,2]")])
def test_drop_columns_leaving_no_feature_is_an_error_naming_it(tmp_path, capsys, header,
                                                               dropped):
    X, y = problem(60)
    path = write_csv(tmp_path / "three.csv", X, y, header=["a", "b", "c", "label"] if header
                     else None)
    fails(tmp_path, capsys, f"dataset.train={path}", "dataset.test_fraction=0.3",
          f"dataset.drop_columns={dropped}",
          words=(str(path), f"dataset.drop_columns={dropped} leaves no feature column of the "
                 "file's 4 (column 4", "the label): drop fewer columns"))


# --- the docs document the own-file options ----------------------------------------------

def test_the_own_data_docs_document_the_csv_options():
    text = (REPO / "docs" / "guide" / "data.md").read_text()
    match = re.search(r"^## Your own data\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, "docs/guide/data.md has no '## Your own data' section"
    section = match.group(1)
    keys = set(re.findall(r"^(\w+):", (REPO / "conf/dataset/file.yaml").read_text(), re.M))
    for option in ("header", "label_column", "sep", "positive", "zero_based",
                   "unseen_test_labels"):
        assert f"dataset.{option}" in section and option in keys, option
    assert "species" in section and "dataset.label_column=species" in section
