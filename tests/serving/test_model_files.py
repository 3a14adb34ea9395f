"""Model files (.llcm), `save_model=true` and `llc-bench predict`."""

from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pytest
from conftest import compose_run

import llc_bench.serving as serving
from llc_bench.cli import main
from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator
from llc_bench.models._validation import COUNT
from llc_bench.serving.model_files import FORMAT_VERSION, load_model, save_model

FAMILIES = ["linear", "kernel", "llsvm", "lcc_svm", "sapl", "jo", "ml3", "occ_lib_g",
            "occ_peg_c", "ldkl", "csvm", "svm_knn", "lcc_svm_lcc", "lcc_lasso", "nystroem"]


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])


#: the families that fit sparse rows (CSR arrays kept in the model file)
SPARSE = ["kernel", "svm_knn", "linear", "llsvm", "sapl", "ml3", "ldkl", "occ_lib_g", "csvm",
          "nystroem", "lcc_svm_lcc", "lcc_lasso"]
#: (family, classes, sparse rows): each family on dense and, if it fits them, sparse rows,
#: once with two classes and once with three (one way round for every other family, so that
#: dense and sparse rows each meet both class counts); the rest twice on dense rows
ROUND_TRIPS = [case for i, model in enumerate(SPARSE)
               for case in ((model, 3 - i % 2, False), (model, 2 + i % 2, True))] + \
              [(model, n, False) for model in FAMILIES if model not in SPARSE for n in (3, 2)]


@pytest.mark.parametrize("model,n_classes,sparse", ROUND_TRIPS)
def test_round_trip_keeps_the_decision_values_bitwise(model, n_classes, sparse, tmp_path):
    import scipy.sparse as sp

    X, y = _data()
    X_new = _data(50, seed=1)[0]
    if sparse:
        X[np.abs(X) < 0.7] = 0.0
        X, X_new = sp.csr_matrix(X), sp.csr_matrix(X_new)
    labels = y if n_classes == 3 else (y > 0).astype(int)
    config = compose_run(f"model={model}", *FAST.get(model, ["trainer.C=1"]), tmp_path=tmp_path)
    estimator = build_estimator(config).fit(X, labels)  # sparse rows: keeps CSR arrays
    path = save_model(estimator, tmp_path / f"{model}.llcm", preprocess=None,
                      config_hash="abc", versions={})
    loaded = serving.load(path)           # the public reader: load_model's estimator
    assert type(loaded) is type(estimator) and load_model(path)[1]["config_hash"] == "abc"
    assert np.array_equal(np.asarray(loaded.decision_function(X_new)),
                          np.asarray(estimator.decision_function(X_new)))
    assert np.array_equal(loaded.predict(X_new), estimator.predict(X_new))


def test_a_file_written_before_a_parameter_existed_reads_with_its_default(tmp_path,
                                                                         monkeypatch):
    """A model file written before the estimator's class gained a parameter (ML3's
    ``history``, say: the file's estimator has no such attribute) loads with the
    parameter's default and predicts as it was written; so does a calibrated model's."""
    import inspect

    from sklearn.calibration import CalibratedClassifierCV

    X, y = _data()
    estimator = build_estimator(compose_run("model=ml3", *FAST["ml3"], tmp_path=tmp_path))
    calibrated = CalibratedClassifierCV(estimator, cv=3, ensemble=False).fit(X, y)
    path, path_cal = (save_model(model, tmp_path / name, preprocess=None, config_hash="abc",
                                 versions={})
                      for model, name in ((estimator.fit(X, y), "old.llcm"),
                                          (calibrated, "old_calibrated.llcm")))
    cls, real = type(estimator), type(estimator).__init__
    signature = inspect.signature(real)

    def init(self, *, later=7, **params):  # the class as it is after gaining `later`
        real(self, **params)
        self.later = later

    init.__signature__ = signature.replace(parameters=[
        *signature.parameters.values(),
        inspect.Parameter("later", inspect.Parameter.KEYWORD_ONLY, default=7)])
    monkeypatch.setattr(cls, "__init__", init)
    monkeypatch.setitem(cls._parameter_constraints, "later", [COUNT])
    loaded, meta = load_model(path)
    assert loaded.later == 7 and loaded.get_params()["later"] == 7
    assert "later" not in meta["params"]
    assert np.array_equal(loaded.predict(X), estimator.predict(X))
    loaded = load_model(path_cal)[0]  # and the template a calibrated model keeps
    assert loaded.get_params()["estimator__later"] == 7
    assert np.array_equal(loaded.predict_proba(X), calibrated.predict_proba(X))


def test_the_round_trips_cover_every_family_both_class_counts_and_sparse_rows():
    assert {m for m, _, _ in ROUND_TRIPS} == set(FAMILIES) and set(SPARSE) <= set(FAMILIES)
    for model in FAMILIES:
        assert {n for m, n, _ in ROUND_TRIPS if m == model} == {2, 3}, model
    assert {m for m, _, sparse in ROUND_TRIPS if sparse} == set(SPARSE)
    assert {(n, sparse) for _, n, sparse in ROUND_TRIPS} == {(2, False), (3, False), (2, True),
                                                             (3, True)}


#: the other model presets (the same classes as FAMILIES, other codings, solvers, variants)
PRESETS = ["linear_cs", "occ_lib_c", "occ_linear_c", "occ_linear_g", "occ_peg_g", "llsvm_soft",
           "llsvm_released", "sapl_lcc", "jo_fixed"]


def _same_model(loaded, estimator, X_new):
    from llc_bench.serving.model_files import base_estimator

    assert type(loaded) is type(estimator)
    assert np.array_equal(np.asarray(base_estimator(loaded).decision_function(X_new)),
                          np.asarray(base_estimator(estimator).decision_function(X_new)))
    assert np.array_equal(loaded.predict(X_new), estimator.predict(X_new))
    if hasattr(estimator, "predict_proba"):
        assert np.array_equal(loaded.predict_proba(X_new), estimator.predict_proba(X_new))


@pytest.mark.parametrize("model,n_classes", [
    (model, 3 - i % 2) for i, model in enumerate(PRESETS + ["nystroem_random"])])
def test_every_other_preset_round_trips(model, n_classes, tmp_path):
    """The allow-list and the fitted-array checks refuse no preset's model (each preset
    once, the class counts alternating: linear_cs, Crammer-Singer, on three)."""
    X, y = _data()
    labels = y if n_classes == 3 else (y > 0).astype(int)
    extra = ["model=nystroem", *FAST["nystroem"], "trainer.landmarks=random"] \
        if model == "nystroem_random" else [f"model={model}", "trainer.C=1"] \
        if model in ("linear_cs", "occ_linear_c", "occ_linear_g", "occ_lib_c") else \
        [f"model={model}", "trainer.history=false"]
    estimator = build_estimator(compose_run(*extra, tmp_path=tmp_path)).fit(X, labels)
    path = save_model(estimator, tmp_path / "m.llcm", preprocess=None, config_hash=None,
                      versions={})
    _same_model(serving.load(path), estimator, _data(50, seed=1)[0])


@pytest.mark.parametrize("model,method,n_classes", [
    ("llsvm", "sigmoid", 3), ("kernel", "isotonic", 2), ("svm_knn", "sigmoid", 2),
    ("occ_lib_g", "isotonic", 3)])
def test_a_calibrated_model_round_trips(model, method, n_classes, tmp_path):
    """Each method on two and on three classes, over four families."""
    from llc_bench.experiment.calibration import calibrate

    X, y = _data()
    labels = y if n_classes == 3 else (y > 0).astype(int)
    config = compose_run(f"model={model}", *FAST.get(model, ["trainer.C=1"]), tmp_path=tmp_path)
    estimator = calibrate(build_estimator(config).fit(X, labels), X, labels, method, 0)
    path = save_model(estimator, tmp_path / "m.llcm", preprocess=None, config_hash=None,
                      versions={})
    _same_model(serving.load(path), estimator, _data(50, seed=1)[0])


def _csv(path, X, labels, header=True):
    lines = ([",".join([f"f{j}" for j in range(X.shape[1])] + ["kind"])] if header else [])
    lines += [",".join([repr(float(v)) for v in row] + [lab]) for row, lab in zip(X, labels,
                                                                                  strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _keep_llsvm(directory):
    """LL-SVM kept from three labelled blobs (train.csv, test.csv in ``directory``, its
    store in ``directory/store``): (directory, record, test file, X_test, test labels)."""
    X, y = _data(400)
    names = np.array(["low", "mid", "high"])
    X_te, y_te = _data(150, seed=2)
    train = _csv(directory / "train.csv", X, names[y])
    test = _csv(directory / "test.csv", X_te, names[y_te])
    main(["run", "dataset=file", f"dataset.train={train}", f"dataset.test={test}",
          "model=llsvm", "tune=off", "save_model=true", f"results_dir={directory / 'store'}",
          "progress=off"])
    record_path = next((directory / "store" / "runs").glob("*.json"))
    record = json.loads(record_path.read_text())
    assert "models/" in record["model_file"]
    return directory, record, test, X_te, names[y_te]


@pytest.fixture(scope="module")
def _kept_once(tmp_path_factory):
    """One fit of ``_keep_llsvm`` for the module's tests that only read its files."""
    return _keep_llsvm(tmp_path_factory.mktemp("kept"))


@pytest.fixture
def kept(_kept_once, tmp_path, capsys):
    """``_kept_once``'s files (data, store, model file) copied into this test's tmp_path."""
    directory, record, test, X_te, truth = _kept_once
    shutil.copytree(directory, tmp_path, dirs_exist_ok=True)
    capsys.readouterr()
    return tmp_path, record, tmp_path / test.name, X_te, truth


@pytest.fixture
def kept_here(tmp_path, capsys):
    """``_keep_llsvm`` fitted in this test's tmp_path (its paths are in the record's key)."""
    kept = _keep_llsvm(tmp_path)
    assert capsys.readouterr().out
    return kept


#: hyper-parameters fixed (no cross-validation) so that each family's run takes a second
FAST = {"linear": ["trainer.C=1"], "kernel": ["trainer.C=1", "trainer.gamma=0.5"],
        "nystroem": ["trainer.C=1", "trainer.gamma=0.5", "trainer.n_components=40"],
        "svm_knn": ["trainer.n_neighbors=20", "trainer.C=1"], "csvm": ["trainer.C=1"],
        "ml3": ["trainer.lambda_grid=[1]", "trainer.n_iter=5"], "lcc_svm_lcc": ["trainer.C=1"],
        "lcc_lasso": ["trainer.C=1"],
        "ldkl": ["trainer.n_iter=2000", "trainer.history=false"],
        **{m: ["trainer.history=false"] for m in ("llsvm", "lcc_svm", "sapl", "jo",
                                                  "occ_peg_c")}}


@pytest.mark.parametrize("model", FAMILIES)
def test_predict_on_the_test_file_reproduces_every_family_s_record(model, tmp_path, capsys):
    from conftest import llc

    X, y = _data(240)
    X_te, y_te = _data(90, seed=2)
    names = np.array(["low", "mid", "high"])
    train = _csv(tmp_path / "train.csv", X, names[y])
    test = _csv(tmp_path / "test.csv", X_te, names[y_te])
    code, _, err = llc(capsys, "run", "dataset=file", f"dataset.train={train}",
                       f"dataset.test={test}", f"model={model}", "tune=off", *FAST.get(model, []),
                       "save_model=true", f"results_dir={tmp_path / 'store'}", "progress=off")
    assert code == 0, err
    record = json.loads(next((tmp_path / "store" / "runs").glob("*.json")).read_text())
    code, _, err = llc(capsys, "predict", str(tmp_path / "store" / record["model_file"]),
                       str(test), "--out", str(tmp_path / "p.csv"))
    assert code == 0, err
    predicted = [line.split(",")[0] for line in (tmp_path / "p.csv").read_text().splitlines()[1:]]
    assert len(predicted) == 90
    assert np.mean(np.array(predicted) == names[y_te]) == record["metrics"]["test_accuracy"]


def test_predict_reproduces_the_record_s_test_accuracy(kept, capsys):
    tmp_path, record, test, X_te, truth = kept
    model = tmp_path / "store" / record["model_file"]
    main(["predict", str(model), str(test), "--out", str(tmp_path / "preds.csv")])
    err = capsys.readouterr().err
    lines = (tmp_path / "preds.csv").read_text().splitlines()
    assert lines[0] == "predicted,decision_high,decision_low,decision_mid,label"  # sorted
    predicted = [line.split(",")[0] for line in lines[1:]]
    accuracy = np.mean(np.array(predicted) == truth)
    assert accuracy == pytest.approx(record["metrics"]["test_accuracy"], abs=0)
    assert f"accuracy {100 * record['metrics']['test_accuracy']:.2f}% on 150 rows" in err
    # a file without the label column: predictions only, no accuracy
    _csv_no_label = tmp_path / "new.csv"
    _csv_no_label.write_text("\n".join(
        ["f0,f1,f2,f3"] + [",".join(repr(float(v)) for v in row) for row in X_te]) + "\n")
    main(["predict", str(model), str(_csv_no_label)])
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1:] == [line.rsplit(",", 1)[0] for line in lines[1:]]
    assert "accuracy" not in captured.err


def _error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    err = capsys.readouterr().err
    assert stop.value.code == 1 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llc-bench: error: ")
    return lines[0]


def test_bad_model_files_are_one_line_errors(kept, capsys):
    tmp_path, record, test, *_ = kept
    model = tmp_path / "store" / record["model_file"]
    text = tmp_path / "not_a_model.llcm"
    text.write_text("hello")
    assert "not an llc-bench model file" in _error(capsys, "predict", str(text), str(test))
    truncated = tmp_path / "truncated.llcm"
    truncated.write_bytes(model.read_bytes()[:200])
    assert "truncated" in _error(capsys, "predict", str(truncated), str(test))
    other = tmp_path / "other.llcm"
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(other, "w") as dst:
        meta = json.loads(src.read("meta.json"))
        meta["format_version"] = FORMAT_VERSION + 1
        dst.writestr("meta.json", json.dumps(meta))
        dst.writestr("model.skops", src.read("model.skops"))
    assert f"format_version {FORMAT_VERSION + 1}" in _error(capsys, "predict", str(other),
                                                            str(test))
    assert "no such model file" in _error(capsys, "predict", str(tmp_path / "nope.llcm"),
                                          str(test))
    record_file = next((tmp_path / "store" / "runs").glob("*.json"))  # the record, not it
    for command in (["predict", str(record_file), str(test)],
                    ["export", str(record_file), "--onnx", str(tmp_path / "m.onnx")]):
        line = _error(capsys, *command)
        assert "a run record, not a model file" in line and "save_model=true" in line
    with pytest.raises(ConfigError):
        load_model(text)


def test_bad_data_files_are_one_line_errors(kept, capsys):
    tmp_path, record, test, X_te, truth = kept
    model = str(tmp_path / "store" / record["model_file"])
    fewer = _csv(tmp_path / "fewer.csv", X_te[:, :3], truth)
    assert "missing the column(s) f3" in _error(capsys, "predict", model, str(fewer))
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(test.read_text().replace("f0,f1", "f1,f0", 1))
    assert "another order" in _error(capsys, "predict", model, str(renamed))
    unseen = _csv(tmp_path / "unseen.csv", X_te, np.array(["huge"] * len(X_te)))
    assert "'huge' the model never saw" in _error(capsys, "predict", model, str(unseen))
    headless = _csv(tmp_path / "headless.csv", X_te[:, :2], truth, header=False)
    assert "the header line is missing" in _error(capsys, "predict", model, str(headless))
    assert "a directory: give a data file" in _error(capsys, "predict", model, str(tmp_path))
    assert "no such data file" in _error(capsys, "predict", model, str(tmp_path / "no.csv"))


def test_save_model_does_not_change_the_cache_key_and_refits_when_the_file_is_missing(
        kept_here, capsys):
    tmp_path, record, test, *_ = kept_here
    model = tmp_path / "store" / record["model_file"]
    args = ["run", "dataset=file", f"dataset.train={tmp_path / 'train.csv'}",
            f"dataset.test={test}", "model=llsvm", "tune=off",
            f"results_dir={tmp_path / 'store'}", "progress=off"]
    main(args)
    assert "(cached)" in capsys.readouterr().out   # the same key without save_model
    model.unlink()
    main([*args, "save_model=true"])
    assert "(cached)" not in capsys.readouterr().out and model.is_file()


def test_predict_on_a_sparse_svmlight_file(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _data(300)
    X[np.abs(X) < 0.7] = 0.0  # sparse rows
    X_te, y_te = _data(100, seed=3)
    X_te[np.abs(X_te) < 0.7] = 0.0
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X_te, y_te, str(tmp_path / "test.svm"), zero_based=False)
    main(["run", "dataset=file", f"dataset.train={tmp_path / 'train.svm'}",
          f"dataset.test={tmp_path / 'test.svm'}", "dataset.format=svmlight",
          "dataset.sparse=true", "model=linear", "save_model=true",
          f"results_dir={tmp_path / 'store'}", "progress=off"])
    capsys.readouterr()
    record = json.loads(next((tmp_path / "store" / "runs").glob("*.json")).read_text())
    main(["predict", str(tmp_path / "store" / record["model_file"]),
          str(tmp_path / "test.svm"), "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert f"accuracy {100 * record['metrics']['test_accuracy']:.2f}% on 100 rows" in err


@pytest.mark.parametrize("model,cls", [("llsvm", "LLSVMClassifier"), ("sapl", "SAPLClassifier"),
                                       ("jo", "JOClassifier"), ("lcc_svm", "LCCSVMClassifier")])
def test_an_estimator_per_method_has_its_preset_s_defaults(model, cls):
    import llc_bench.models as models
    from llc_bench.selection.presets import from_preset

    assert from_preset(model).get_params() == getattr(models, cls)(random_state=0).get_params()


def test_from_preset_applies_the_dataset_s_tuned_preset_and_overrides():
    from llc_bench.selection.presets import from_preset

    assert from_preset("llsvm", "usps").lambda_ == 1e-3          # conf/tuned/llsvm_usps.yaml
    assert from_preset("llsvm").lambda_ == 1e-4                  # the model preset alone
    assert from_preset("sapl", None, "coding.n_anchors=20").n_anchors == 20


def test_calibration_adds_probabilities_without_changing_the_model(kept, capsys):
    tmp_path, record, test, *_ = kept
    args = ["run", "dataset=file", f"dataset.train={tmp_path / 'train.csv'}",
            f"dataset.test={test}", "model=llsvm", "tune=off", "save_model=true",
            f"results_dir={tmp_path / 'store'}", "progress=off"]
    main([*args, "calibration=sigmoid"])
    capsys.readouterr()
    records = [json.loads(p.read_text()) for p in (tmp_path / "store" / "runs").glob("*.json")]
    calibrated = next(r for r in records if r["config"].get("calibration"))
    assert calibrated["config_hash"] != record["config_hash"]
    metrics = calibrated["metrics"]
    assert metrics["test_accuracy"] == record["metrics"]["test_accuracy"]  # the same model
    assert 0 < metrics["test_log_loss"] < 1.0 and 0 <= metrics["test_brier"] < 0.5
    assert calibrated["calibration"]["method"] == "sigmoid"
    assert calibrated["timings"]["calibration"] > 0
    model = tmp_path / "store" / calibrated["model_file"]
    main(["predict", str(model), str(test), "--out", str(tmp_path / "p.csv")])
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0].split(",")[4:7] == ["proba_high", "proba_low", "proba_mid"]
    proba = np.array([[float(v) for v in line.split(",")[4:7]] for line in lines[1:]])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    capsys.readouterr()
    assert "calibration='often'" in _error(capsys, *args, "calibration=often")


def test_bad_keep_and_export_inputs_are_one_line_errors(kept, capsys):
    tmp_path, record, test, *_ = kept
    model = str(tmp_path / "store" / record["model_file"])
    assert "is a directory" in _error(capsys, "export", model, "--onnx", str(tmp_path))
    assert "is a directory" in _error(capsys, "predict", model, str(test), "--out",
                                      str(tmp_path))
    assert "save_model=maybe" in _error(capsys, "run", "model=linear", "save_model=maybe",
                                        f"results_dir={tmp_path / 'other'}")
    assert "no such choice: model=nosuch" in _error(capsys, "tune", "nosuch", "banana")


def test_predict_reads_a_file_in_blocks_and_writes_the_same_rows(kept, tmp_path, capsys):
    from llc_bench.serving.predict import iter_rows, predict_file

    _, record, test, *_ = kept
    model = tmp_path / "store" / record["model_file"]
    whole = predict_file(model, test, tmp_path / "whole.csv", echo=lambda *a, **k: None)
    blocks = list(iter_rows(test, load_model(model)[1]["preprocess"], block_bytes=500))
    assert len(blocks) > 10 and sum(len(X) for X, _ in blocks) == 150
    chunked = predict_file(model, test, tmp_path / "chunked.csv", echo=lambda *a, **k: None,
                           block_bytes=500)
    assert chunked == whole and whole["accuracy"] == record["metrics"]["test_accuracy"]
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_a_bad_row_in_a_late_block_leaves_no_output(kept, tmp_path, capsys):
    from llc_bench.errors import DatasetError
    from llc_bench.serving.predict import predict_file

    _, record, test, *_ = kept
    model = tmp_path / "store" / record["model_file"]
    lines = test.read_text().splitlines()
    lines[-1] = lines[-1].rsplit(",", 1)[0] + ",huge"
    late = tmp_path / "late.csv"
    late.write_text("\n".join(lines) + "\n")
    (tmp_path / "out").mkdir()
    with pytest.raises(DatasetError, match="'huge' the model never saw"):
        predict_file(model, late, tmp_path / "out" / "p.csv", block_bytes=500)
    assert list((tmp_path / "out").iterdir()) == []   # neither the file nor its temporary


@pytest.mark.parametrize("value,message", [("nan", "NaN/inf value"), ("-inf", "NaN/inf value"),
                                           ("1e200", "value 1e+200")])
def test_a_non_finite_or_huge_value_in_a_late_block_is_one_line_naming_its_line(
        kept, tmp_path, capsys, value, message):
    """As a training file's check says it: the row, the line, the column; no output."""
    from llc_bench.errors import DatasetError
    from llc_bench.serving.predict import predict_file

    _, record, test, *_ = kept
    model = tmp_path / "store" / record["model_file"]
    lines = test.read_text().splitlines()
    fields = lines[-2].split(",")
    fields[2] = value
    lines[-2] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    line = _error(capsys, "predict", str(model), str(bad))
    assert f"bad.csv: {message}" in line and f"(line {len(lines) - 1}, column 3" in line
    (tmp_path / "out").mkdir()
    with pytest.raises(DatasetError, match=f"line {len(lines) - 1}, column 3"):
        predict_file(model, bad, tmp_path / "out" / "p.csv", block_bytes=500)
    assert list((tmp_path / "out").iterdir()) == []


def test_predict_reads_a_header_as_training_does_quotes_bom_crlf(kept, tmp_path, capsys):
    """The same rows written with a byte-order mark, CRLF line ends and a quoted header
    give the same predictions as the plain file (training reads all three: pandas)."""
    tmp_path, record, test, *_ = kept
    model = str(tmp_path / "store" / record["model_file"])
    lines = test.read_text().splitlines()
    header = ",".join(f'"{name}"' for name in lines[0].split(","))
    odd = tmp_path / "odd.csv"
    odd.write_bytes(b"\xef\xbb\xbf" + "\r\n".join([header, *lines[1:]]).encode() + b"\r\n")
    main(["predict", model, str(test), "--out", str(tmp_path / "plain.out")])
    main(["predict", model, str(odd), "--out", str(tmp_path / "odd.out")])
    assert (tmp_path / "odd.out").read_bytes() == (tmp_path / "plain.out").read_bytes()
    capsys.readouterr()


def test_two_extra_columns_are_named_and_the_label_rule_said(kept, tmp_path, capsys):
    tmp_path, record, test, X_te, truth = kept
    model = str(tmp_path / "store" / record["model_file"])
    lines = test.read_text().splitlines()
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join([lines[0] + ",extra"] + [r + ",1" for r in lines[1:]]) + "\n")
    assert "wide.csv: 2 columns the model was not trained on (kind, extra); at most one, the " \
           "label," in _error(capsys, "predict", model, str(wide))


def test_an_empty_file_another_separator_or_encoding_say_what_predict_can_do(kept, tmp_path,
                                                                            capsys):
    """predict has no dataset options (the model fixes separator and encoding): the error
    says what the file should be, not which option to set."""
    tmp_path, record, test, *_ = kept
    model = str(tmp_path / "store" / record["model_file"])
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert _error(capsys, "predict", model, str(empty)).endswith("empty.csv: the file is empty")
    semi = tmp_path / "semi.csv"
    semi.write_text(test.read_text().replace(",", ";"))
    line = _error(capsys, "predict", model, str(semi))
    assert "missing the column(s) f0" in line and "look semicolon-separated" in line
    assert "comma-separated as the training file was" in line and "dataset.sep" not in line
    lines = test.read_text().splitlines()
    latin = tmp_path / "latin.csv"
    latin.write_bytes("\n".join([*lines[:4], lines[4] + "\u00f6", *lines[5:]])
                      .encode("latin-1") + b"\n")
    line = _error(capsys, "predict", model, str(latin))
    assert "latin.csv: line 5: bytes b'\\xf6' are not utf-8 text" in line, line
    assert "write the file in utf-8" in line and "dataset.encoding" not in line


def test_an_svmlight_file_with_more_features_is_one_line(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _data(200)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    main(["run", "dataset=file", f"dataset.train={tmp_path / 'train.svm'}",
          "dataset.test_fraction=0.3", "dataset.format=svmlight", "model=linear",
          "trainer.C=1", "save_model=true", f"results_dir={tmp_path / 'store'}",
          "progress=off"])
    capsys.readouterr()
    model = str(next((tmp_path / "store" / "models").glob("*.llcm")))
    wide = np.hstack([X, X[:, :1]])
    dump_svmlight_file(wide, y, str(tmp_path / "wide.svm"), zero_based=False)
    line = _error(capsys, "predict", model, str(tmp_path / "wide.svm"))
    assert "wide.svm: line 1: feature index 5, beyond the model's 4 features" in line
    (tmp_path / "nan.svm").write_text("1 1:0.5 2:nan\n")
    assert "nan.svm: NaN/inf value at row 1, column 2 (line 1, feature index 2)" in _error(
        capsys, "predict", model, str(tmp_path / "nan.svm"))


def test_a_headerless_file_with_another_column_count_is_one_line(tmp_path, capsys):
    X, y = _data(200)
    names = np.array(["low", "mid", "high"])
    train = _csv(tmp_path / "train.csv", X, names[y], header=False)
    main(["run", "dataset=file", f"dataset.train={train}", "dataset.test_fraction=0.3",
          "model=linear", "trainer.C=1", "save_model=true", f"results_dir={tmp_path / 's'}",
          "progress=off"])
    capsys.readouterr()
    model = str(next((tmp_path / "s" / "models").glob("*.llcm")))
    wide = _csv(tmp_path / "wide.csv", np.hstack([X, X[:, :2]]), names[y], header=False)
    assert "wide.csv: 7 columns, the model has 4 features (expected 4, or 5 with the label " \
           "column)" in _error(capsys, "predict", model, str(wide))
    narrow = _csv(tmp_path / "narrow.csv", X[:, :2], names[y], header=False)
    assert "3 columns, the model has 4 features" in _error(capsys, "predict", model,
                                                           str(narrow))


def test_predict_reads_a_binary_format_whole(tmp_path, capsys):
    from conftest import REPO

    main(["run", "model=linear", "trainer.C=1", "save_model=true", "data.download=false",
          f"data.mirrors=[{REPO / 'datasets'}]", f"data.home={tmp_path / 'home'}",
          f"results_dir={tmp_path / 's'}", "progress=off"])     # banana, from its .mat file
    capsys.readouterr()
    model = str(next((tmp_path / "s" / "models").glob("*.llcm")))
    main(["predict", model, str(REPO / "datasets" / "banana" / "banana_data.mat"), "--out",
          str(tmp_path / "p.csv")])
    assert "on 5300 rows of" in capsys.readouterr().err
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 5301
