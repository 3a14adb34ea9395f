"""Labels and probabilities of a calibrated model in `llc-bench predict`: each predicted
label column is named by its rule, ``predicted_by_decision`` (the model's own label, which
the run's test accuracy counts) and ``predicted_by_proba`` (the class of the highest
calibrated probability); the accuracy printed is the run's."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import blobs, keep_model, llc, write_csv

NAMES = np.array(["low", "mid", "high"])


def _data(n, seed, n_classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    return X, (y > 0).astype(int) if n_classes == 2 else y


@pytest.mark.parametrize("model,n_classes,extra", [
    ("lcc_lasso", 2, ["trainer.C=1"]),
    ("llsvm", 3, ["trainer.history=false"])])
def test_each_label_column_follows_its_rule_and_the_accuracy_is_the_run_s(
        model, n_classes, extra, tmp_path, capsys):
    X, y = _data(300, 0, n_classes)
    X_te, y_te = _data(200, 2, n_classes)
    train = write_csv(tmp_path / "train.csv", X, NAMES[y])
    test = write_csv(tmp_path / "test.csv", X_te, NAMES[y_te])
    path, record = keep_model(tmp_path, train, f"model={model}", *extra,
                              "calibration=sigmoid", test=test)
    capsys.readouterr()
    code, _, err = llc(capsys, "predict", str(path), str(test), "--out",
                       str(tmp_path / "p.csv"))
    assert code == 0, err
    with open(tmp_path / "p.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    classes = sorted(set(NAMES[y]))
    assert list(rows[0]) == ["predicted_by_decision",
                             *(["decision"] if n_classes == 2 else
                               [f"decision_{c}" for c in classes]),
                             *(f"proba_{c}" for c in classes), "predicted_by_proba", "label"]
    proba = np.array([[float(r[f"proba_{c}"]) for c in classes] for r in rows])
    by_proba = [r["predicted_by_proba"] for r in rows]
    assert by_proba == [classes[i] for i in np.argmax(proba, axis=1)]
    by_decision = np.array([r["predicted_by_decision"] for r in rows])
    truth = np.array([r["label"] for r in rows])
    accuracy = record["metrics"]["test_accuracy"]
    assert np.mean(by_decision == truth) == accuracy
    assert f"accuracy {100 * accuracy:.2f}% on 200 rows" in err
    assert "predicted_by_decision, as the run's test accuracy" in err
    proba_accuracy = np.mean(np.array(by_proba) == truth)
    assert f"predicted_by_proba: {100 * proba_accuracy:.2f}%" in err
    if model == "lcc_lasso":  # the two rules disagree on some rows of this data
        assert (by_decision != np.array(by_proba)).any()


def test_an_uncalibrated_model_has_one_label_column(tmp_path, capsys):
    X, y = blobs(3, n=200)
    train = write_csv(tmp_path / "train.csv", X, NAMES[y])
    path, _ = keep_model(tmp_path, train, "model=linear", "trainer.C=1")
    capsys.readouterr()
    code, out, _ = llc(capsys, "predict", str(path), str(train))
    assert code == 0
    assert out.splitlines()[0] == "predicted,decision_high,decision_low,decision_mid,label"
