"""Input hardening: own files honour every option, no key is silently ignored,
no NaN result, filters that match nothing say why, through the console entry (in-process).

A user mistake ends as exactly one ``llc-bench: error:`` line (exit 1, no traceback, the
key words) and writes nothing (no record, no run log, no parsed-data cache, no Hydra
directory); an input that used to be silently ignored now acts or is refused.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import llc
from omegaconf import OmegaConf

from llc_bench import cli
from llc_bench.data.registry import dataset_spec, list_datasets, resolve_spec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("LLC_BENCH_MIRROR", raising=False)
    monkeypatch.delenv("LLC_BENCH_DATA", raising=False)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))


def where(tmp_path) -> list[str]:
    return [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false", "tune=off"]


def written(tmp_path) -> list[str]:
    """What a run left in the results store and the data home."""
    return sorted(str(p.relative_to(tmp_path)) for top in ("results", "home")
                  for p in (tmp_path / top).rglob("*") if p.is_file())


def one_error(code, err, *words) -> str:
    assert code == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("llc-bench: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def problem(n=200, d=3, seed=0):
    """A linearly separable problem with labels 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 1] + X[:, 2] > 0).astype(int)


def write_csv(path: Path, X, y, sep=",", header=None, fmt="{:.5f}") -> Path:
    rows = [sep.join([*(fmt.format(v) for v in x), str(label)]) for x, label in zip(X, y,
                                                                                   strict=True)]
    path.write_text("\n".join(([sep.join(header)] if header else []) + rows) + "\n")
    return path


def write_svmlight(path: Path, X, y) -> Path:
    path.write_text("".join(f"{label} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x))
                            + "\n" for x, label in zip(X, y, strict=True)))
    return path


def own(tmp_path, capsys, train, *overrides, test_fraction="0.3"):
    """``llc-bench run dataset=file`` on ``train`` (the linear SVM at C = 1, no CV)."""
    split = [f"dataset.test_fraction={test_fraction}"] if test_fraction else []
    linear = [] if any(o.startswith("model=") for o in overrides) else ["trainer.C=1.0"]
    return llc(capsys, "run", *where(tmp_path), "dataset=file", *linear,
               f"dataset.train={train}", *split, *overrides)


def refused(tmp_path, capsys, train, *overrides, words=(), **kw) -> str:
    code, _, err = own(tmp_path, capsys, train, *overrides, **kw)
    line = one_error(code, err, *words)
    assert written(tmp_path) == []
    return line


def data_error(tmp_path, capsys, train, *overrides, words=(), **kw) -> str:
    """A problem found in the data: one line, no record and no parsed-data cache."""
    code, _, err = own(tmp_path, capsys, train, *overrides, **kw)
    line = one_error(code, err, *words)
    assert [p for p in written(tmp_path) if p.endswith((".json", ".npz"))] == []
    return line


def record_of(tmp_path, out) -> dict:
    key = out.strip().removesuffix("(cached)").split()[-1]
    return json.loads((tmp_path / "results" / "runs" / f"{key}.json").read_text())


def honoured(tmp_path, capsys, train, *overrides, **kw) -> tuple[dict, str]:
    code, out, err = own(tmp_path, capsys, train, *overrides, **kw)
    assert code == 0 and "Traceback" not in err and "error" not in err, err
    return record_of(tmp_path, out), out


@pytest.fixture
def csv_file(tmp_path):
    return write_csv(tmp_path / "data.csv", *problem())


# --- 1. dataset=file honours (or refuses) every option of the built-in datasets ----------

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
    train = (write_svmlight if svm else write_csv)(tmp_path / ("d.svm" if svm else "d.csv"), X, y)
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


# --- 2. unknown keys: refused everywhere, with a did-you-mean ------------------------------

@pytest.mark.parametrize("overrides, words", [
    (["+dataset.max_trian=50"], ["dataset.max_trian", "did you mean dataset.max_train?"]),
    (["+dataset.tset=x.csv"], ["dataset.tset", "did you mean dataset.test?"]),
    (["+dataset.categorial=onehot"], ["dataset.categorial", "not an option of dataset=file",
                                       "did you mean dataset.categorical?"]),
    (["+dataset.labels={postive:[1]}"], ["dataset.labels.postive", "dataset.labels.positive"]),
])
def test_unknown_own_file_key_is_refused(tmp_path, capsys, csv_file, overrides, words):
    refused(tmp_path, capsys, csv_file, *overrides, words=words)


@pytest.mark.parametrize("overrides, words", [
    (["+model.foo=1"], ["model.foo", "not a key of the run config", "model has: name"]),
    (["+foo=1"], ["foo is not a key of the run config"]),
    (["+data.hom=/tmp"], ["data.hom", "did you mean data.home?"]),
    (["+n_anchors=20"], ["n_anchors", "did you mean coding.n_anchors?"]),
    (["+lambda_=1e-3"], ["did you mean trainer.lambda_?"]),
    (["+sed=3"], ["did you mean seed?"]),
    (["+history.tset=true"], ["history.tset", "did you mean history.test?"]),
    (["+dataset.max_trian=50"], ["dataset.max_trian", "did you mean dataset.max_train?"]),
    (["+dataset.split.tset_fraction=0.5"], ["dataset.split.tset_fraction",
                                            "dataset.split.test_fraction"]),
    (["+dataset.sep=semicolon"], ["dataset.sep", "dataset=file"]),
    (["+dataset.validation=1.5"], ["validation", "1.5"]),
])
def test_unknown_run_key_is_refused_before_anything_is_written(tmp_path, capsys, overrides,
                                                               words):
    code, _, err = llc(capsys, "run", *where(tmp_path), *overrides)
    one_error(code, err, *words)
    assert written(tmp_path) == []


def test_tune_keys_are_left_to_the_tune_code(tmp_path, capsys):
    """``tune`` is a known group (its keys are checked by selection/tune.py)."""
    from llc_bench.experiment.keys import check_run_keys

    check_run_keys({"tune": {"mode": "off", "anything": 1}, "seed": 0})


# --- 12. a directory or a FIFO as the training file --------------------------------------

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


# --- 7. decimal commas -------------------------------------------------------------------

@pytest.fixture
def decimal_comma_file(tmp_path):
    X, y = problem()
    path = write_csv(tmp_path / "komma.csv", X, y, sep=";")
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
    point = write_csv(tmp_path / "point.csv", *problem())
    same, _ = honoured(tmp_path, capsys, point)
    assert record["metrics"] == same["metrics"] and record["data"]["n_features"] == 3


# --- 8, 9. empty columns, a header naming two columns alike --------------------------------

def test_trailing_empty_columns_are_named(tmp_path, capsys):
    path = write_csv(tmp_path / "trailing.csv", *problem())
    path.write_text("".join(line + ",,\n" for line in path.read_text().splitlines()))
    line = data_error(tmp_path, capsys, path, words=("trailing.csv", "columns 5 and 6 of 6",
                                                     "empty on every line"))
    assert "label" not in line


def test_an_empty_feature_column_with_a_header_is_named(tmp_path, capsys):
    X, y = problem()
    path = write_csv(tmp_path / "hole.csv", X, y, header=["a", "b", "c", "label"])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0]] + [",".join(["", *row.split(",")[1:]])
                                            for row in lines[1:]]) + "\n")
    data_error(tmp_path, capsys, path, words=("hole.csv", "column 1 'a' of 4",
                                              "no value on any line",
                                              "dataset.drop_columns=[a]"))


def test_a_header_naming_two_columns_alike_is_named(tmp_path, capsys):
    path = write_csv(tmp_path / "twice.csv", *problem(), header=["x", "size", "size", "label"])
    data_error(tmp_path, capsys, path, words=("twice.csv", "line 1", "two columns 'size'",
                                              "columns 2 and 3"))
    data_error(tmp_path, capsys, path, "dataset.header=true", words=("two columns 'size'",))


# --- 10. text that is not UTF-8 --------------------------------------------------------

@pytest.fixture
def latin1_file(tmp_path):
    X, y = problem()
    path = write_csv(tmp_path / "latin.csv", X, np.array(["kalt", "warm"])[y],
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


# --- 11. a true many-class label column ---------------------------------------------------

def test_many_classes_are_refused_unless_the_task_says_multiclass(tmp_path, capsys):
    rng = np.random.default_rng(0)
    k = 1500
    centres = rng.normal(size=(k, 2)) * 10
    paths = []
    for name, repeat in (("many_train.csv", 2), ("many_test.csv", 1)):
        y = np.repeat(np.arange(k), repeat)
        X = centres[y] + rng.normal(size=(len(y), 2)) * 0.01
        paths.append(write_csv(tmp_path / name, X, np.char.add("c", y.astype(str))))
    train, test = paths
    data_error(tmp_path, capsys, train, f"dataset.test={test}", test_fraction=None,
               words=("1500 distinct labels", "dataset.task=multiclass"))
    record, _ = honoured(tmp_path, capsys, train, f"dataset.test={test}",
                         "dataset.task=multiclass", test_fraction=None)
    assert len(record["data"]["classes"]) == 1500 and record["data"]["task"] == "multiclass"


# --- 4. regularisation out of its documented range; a fit that diverges ---------------------

@pytest.mark.parametrize("overrides, words", [
    (["model=llsvm", "trainer.lambda_=1e-320"], ["trainer.lambda_=1e-320", "[1e-12, 1e+12]"]),
    (["model=llsvm", "trainer.lambda_=1e-13"], ["trainer.lambda_=1e-13", "[1e-12, 1e+12]"]),
    (["model=llsvm", "trainer.lambda_grid=[1e-3,1e-20]"], ["trainer.lambda_grid", "1e-12"]),
    (["model=occ_peg_g", "trainer.lambda_=1e-300"], ["trainer.lambda_=1e-300", "1e-12"]),
    (["model=ml3", "trainer.lambda_=1e-320"], ["trainer.lambda_=1e-320", "1e-12"]),
    (["model=ldkl", "trainer.lambda_w=1e13"], ["trainer.lambda_w", "1e+12"]),
    (["model=csvm", "trainer.lambda_=1e-15"], ["trainer.lambda_=1e-15", "1e-12"]),
])
def test_regularisation_outside_its_range_is_refused(tmp_path, capsys, overrides, words):
    code, _, err = llc(capsys, "run", *where(tmp_path), *overrides)
    one_error(code, err, *words)
    assert written(tmp_path) == []


def test_the_documented_range_admits_every_shipped_setting():
    from llc_bench.models._validation import LAMBDA_MAX, LAMBDA_MIN

    values = []
    for path in [*(REPO / "conf").rglob("*.yaml")]:
        text = path.read_text()
        for key in ("lambda_:", "lambda_w:", "lambda_theta:", "lambda_theta_prime:"):
            for line in text.splitlines():
                rest = line.split(key, 1)[1] if key in line else ""
                token = rest.split("#")[0].strip().rstrip("}").strip()
                try:
                    values.append(float(token))
                except ValueError:
                    continue
    assert values and all(LAMBDA_MIN <= v <= LAMBDA_MAX for v in values), values


def test_a_diverged_sgd_is_an_error_not_a_result(tmp_path, capsys):
    """Features of 1e60, unscaled: every epoch's objective is NaN, also after the restarts
    with smaller steps; the run used to report the LIBLINEAR start as its result."""
    X, y = problem()
    path = write_csv(tmp_path / "huge.csv", X * 1e60, y, fmt="{:.5e}")
    code, _, err = own(tmp_path, capsys, path, "model=llsvm", "coding.n_anchors=4",
                       "dataset.scaling=none")
    one_error(code, err, "SGD diverged", "not finite", "restart", "dataset.scaling")
    assert not list((tmp_path / "results").rglob("*.json"))


def test_feature_values_whose_squares_overflow_are_refused(tmp_path, capsys):
    X, y = problem()
    X[3, 1] = 3e150
    path = write_csv(tmp_path / "enormous.csv", X, y, fmt="{:.5e}")
    data_error(tmp_path, capsys, path, words=("enormous.csv", "3e+150", "line 4, column 2",
                                              "overflows"))


def test_non_finite_decision_values_end_the_run(tmp_path, capsys, csv_file, monkeypatch):
    """Any model, not only the SGD ones: NaN decision values are no result."""
    from llc_bench.models.linear import LinearSVMClassifier

    monkeypatch.setattr(LinearSVMClassifier, "decision_function",
                        lambda self, X: np.full(X.shape[0], np.nan))
    code, _, err = own(tmp_path, capsys, csv_file)
    one_error(code, err, "LinearSVMClassifier", "not finite", "diverged")
    assert not list((tmp_path / "results").rglob("*.json"))


# --- 15. library warnings as one line of ours -----------------------------------------------

def _warnings(err: str) -> list[str]:
    assert "Traceback" not in err and "Warning:" not in err.replace("llc-bench: warning:", "")
    return [line for line in err.splitlines() if line.strip()]


@pytest.mark.parametrize("rows, distinct", [
    ("1.0,2.0,3.0,{label}\n", 1),               # every feature constant
    ("{a:.0f},{b:.0f},0.5,{label}\n", 4),        # duplicate points: 4 distinct
])
def test_kmeans_on_few_distinct_points_is_one_line_of_ours(tmp_path, capsys, rows, distinct):
    import warnings

    X, y = problem()
    path = tmp_path / "few.csv"
    path.write_text("".join(rows.format(a=a > 0, b=b > 0, label=label)
                            for (a, b, _), label in zip(X, y, strict=True)))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, out, err = own(tmp_path, capsys, path, "model=llsvm", "coding.n_anchors=5")
    assert code == 0, err
    lines = _warnings(err)
    assert len(lines) == 1 and lines[0].startswith("llc-bench: warning: k-means found only "
                                                   f"{distinct} distinct"), err
    assert "coding.n_anchors" in lines[0] and "ConvergenceWarning" not in err


def test_lambda_1e308_is_refused_without_a_raw_warning(tmp_path, capsys, csv_file):
    code, _, err = own(tmp_path, capsys, csv_file, "model=llsvm", "trainer.lambda_=1e308")
    one_error(code, err, "trainer.lambda_=1e+308", "1e+12")
    assert "RuntimeWarning" not in err


def test_any_other_library_warning_is_one_line(capsys):
    import warnings

    from llc_bench import console

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        console.install()
        warnings.warn("overflow encountered in matmul\nsecond line", RuntimeWarning,
                      stacklevel=1)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("llc-bench: warning: RuntimeWarning: "
                                                   "overflow encountered in matmul second line")


# --- 14. a closed stdout, SLURM without srun, --version ------------------------------------

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


# --- 5. filters that cannot match; tables filters that name nothing ---------------------------

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


# --- 13. an output path under a regular file ------------------------------------------------

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


def test_results_dir_and_tables_out_under_a_regular_file_name_it(tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file")
    code, _, err = llc(capsys, "run", *where(tmp_path)[1:], "trainer.C=1.0",
                       f"results_dir={blocker / 'deeper' / 'results'}")
    one_error(code, err, f"{blocker} is a file, not a directory")
    code, _, err = llc(capsys, "tables", "--table", "sapl_table2", "--no-run",
                       "--results-dir", str(tmp_path / "results"), "--out", str(blocker / "t"))
    one_error(code, err, "--out", f"{blocker} is a file, not a directory")


# --- 17. tables --dry-run prints what the build runs, results_dir included ------------------

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


# ---- 16: a bad name inside a sweep list ------------------------------------------------
def test_every_bad_choice_of_a_sweep_is_named_before_any_job_runs(tmp_path, capsys):
    code, _, err = llc(capsys, "run", "-m", "dataset=banana,nodata",
                       "model=linear,nosuch,llsvm,sapll", *where(tmp_path))
    line = one_error(code, err, "dataset=nodata", "model=nosuch", "model=sapll",
                     "did you mean sapl?")
    assert "banana" not in line and written(tmp_path) == []


# ---- 6: a sparse file whose dense array would not fit ------------------------------------
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


# ---- a parallelism of none: refused before anything runs ---------------------------------
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
