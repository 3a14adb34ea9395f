"""`llc-bench export MODEL --onnx OUT`: onnxruntime's decision values equal the model's.

onnxruntime runs in a child process (why: conftest's ``_onnxruntime_stays_out``).
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from conftest import compose_run, llc

from llc_bench.experiment.runner import run_experiment
from llc_bench.serving.model_files import load_model

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None,
    reason="the export extras (onnx, onnxruntime) are not installed")

#: every family with a graph (one preset each, two for the codings), its hyper-parameters
#: fixed so that no cross-validation runs
EXPORTED = {"linear": ["trainer.C=1"], "llsvm": [], "llsvm_soft": [], "lcc_svm": [],
            "sapl": [], "jo": [], "ml3": ["trainer.lambda_grid=[1]", "trainer.n_iter=5"],
            "occ_lib_g": ["coding.n_basis=5"],
            "occ_peg_c": ["coding.n_basis=5", "trainer.epochs=3"], "ldkl": ["trainer.n_iter=3000"],
            "csvm": ["trainer.C=1"], "kernel": ["trainer.C=1", "trainer.gamma=0.05"],
            "nystroem": ["trainer.C=1", "trainer.gamma=0.05", "trainer.n_components=100"]}
SGD = ("llsvm", "llsvm_soft", "lcc_svm", "sapl", "jo", "occ_peg_c", "ldkl")


def _fast(model):
    return [*EXPORTED[model], *(["trainer.history=false"] if model in SGD else [])]


def _onnxruntime_decision(path, X):
    import onnxruntime

    return onnxruntime.InferenceSession(path).run(None, {"X": X})[0]


@pytest.fixture(scope="module")
def ort_decision():
    """onnxruntime's decision values of a graph file, computed in one spawned child process."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        yield lambda path, X: child.submit(_onnxruntime_decision, str(path), X).result()


def _raw(X, pre):
    """The raw features of preprocessed rows (the ONNX graph applies the scaler itself)."""
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    if pre.get("scale") is not None:
        X = X * np.asarray(pre["scale"])
    if pre.get("mean") is not None:
        X = X + np.asarray(pre["mean"])
    if pre.get("value_scale") is not None:
        X = X / pre["value_scale"]
    return X


def _check(ort_decision, tmp_path, capsys, mirror, dataset, model, *extra, tol=1e-9):
    from llc_bench.data import load_dataset

    config = compose_run(f"dataset={dataset}", f"model={model}", "save_model=true", *extra,
                         tmp_path=tmp_path, mirrors=(mirror,))
    record = run_experiment(config, echo=lambda line: None)
    path = tmp_path / "results" / record["model_file"]
    out = tmp_path / f"{model}.onnx"
    code, stdout, err = llc(capsys, "export", str(path), "--onnx", str(out))
    assert code == 0 and f"wrote {out}" in stdout, err
    estimator, meta = load_model(path)
    ds = load_dataset(config["dataset"], seed=0, home=config["data"]["home"],
                      mirrors=config["data"]["mirrors"], download=False)
    X = ds.X_test[:400]
    got = ort_decision(out, _raw(X, meta["preprocess"]))
    want = np.asarray(estimator.decision_function(X))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("model", EXPORTED)
def test_banana(model, ort_decision, tmp_path, capsys, mirror):
    _check(ort_decision, tmp_path, capsys, mirror, "banana", model, *_fast(model))


@pytest.mark.parametrize("model", EXPORTED)
def test_usps_ten_classes(model, ort_decision, tmp_path, capsys, mirror):
    # 300 training rows: the graph, not the accuracy, is checked; float32 SGD weights (fixed
    # anchors): the export's tolerance, 1e-4
    _check(ort_decision, tmp_path, capsys, mirror, "usps", model, "dataset.max_train=300",
           *_fast(model), *(["trainer.epochs=3"] if model in ("sapl", "jo") else []),
           tol=1e-4 if model in SGD else 1e-5)


@pytest.mark.parametrize("model", EXPORTED)
def test_sparse_svmlight_file(model, ort_decision, tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    X[np.abs(X) < 0.8] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    dump_svmlight_file(X[:300], y[:300], str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[300:], y[300:], str(tmp_path / "test.svm"), zero_based=False)
    code, _, err = llc(capsys, "run", "dataset=file", f"dataset.train={tmp_path / 'train.svm'}",
                       f"dataset.test={tmp_path / 'test.svm'}", "dataset.format=svmlight",
                       "dataset.sparse=true", f"model={model}", "tune=off", *_fast(model),
                       "save_model=true",
                       f"results_dir={tmp_path / 'store'}", "progress=off")
    assert code == 0, err
    record = json.loads(next((tmp_path / "store" / "runs").glob("*.json")).read_text())
    model = tmp_path / "store" / record["model_file"]
    assert llc(capsys, "export", str(model), "--onnx", str(tmp_path / "m.onnx"))[0] == 0
    assert llc(capsys, "predict", str(model), str(tmp_path / "test.svm"), "--out",
               str(tmp_path / "p.csv"))[0] == 0
    decision = [float(line.split(",")[1]) for line in
                (tmp_path / "p.csv").read_text().splitlines()[1:]]
    got = ort_decision(tmp_path / "m.onnx", X[300:])
    np.testing.assert_allclose(got, decision, rtol=0, atol=1e-5)


@pytest.mark.parametrize("model,reason", [("svm_knn", "trains a LIBLINEAR model on each"),
                                          ("lcc_svm_lcc", "solve a k x k linear system"),
                                          ("lcc_lasso", "weighted LASSO per row")])
def test_a_family_without_a_graph_says_why_in_one_line(model, reason, tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(120, 3))
    lines = ["a,b,c,y"] + [f"{a!r},{b!r},{c!r},{int(a > 0)}" for a, b, c in X.tolist()]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    assert llc(capsys, "run", "dataset=file", f"dataset.train={tmp_path / 't.csv'}",
               "dataset.test_fraction=0.3", f"model={model}", "tune=off", "trainer.C=1",
               *(["trainer.n_neighbors=20"] if model == "svm_knn" else []),
               "save_model=true", f"results_dir={tmp_path / 's'}", "progress=off")[0] == 0
    model_file = next((tmp_path / "s" / "models").glob("*.llcm"))
    code, _, err = llc(capsys, "export", str(model_file), "--onnx", str(tmp_path / "m.onnx"))
    assert code == 1 and reason in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.onnx").exists()
