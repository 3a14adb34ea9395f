"""A new coding is one class + one YAML, a new model one module + its YAMLs: a toy of each,
living only in a temporary directory (a module on ``sys.path`` and a config dir given to
``hydra.searchpath``), runs through ``llc-bench run``, selection, a model file
(``predict``) and ONNX export without a file of the package changing."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from conftest import write_csv

from llc_bench.cli import main

TOY_CODING = '''
import numpy as np

from llc_bench.coding.local import LocalCoding


class SmoothCoding(LocalCoding):
    """gamma_j proportional to (1 + d_j)^-power over the k nearest anchors."""

    name = "toy_smooth"
    options = ("power",)          # read from the estimator's parameter of that name
    fitted_numbers = ("power",)   # checked when a model file is read

    def __init__(self, k=8, power=1.0):
        super().__init__(k)
        self.power = float(power)

    def weights_from_sq_distances(self, d, scale):
        w = (1.0 + d) ** (-self.power)
        return w / w.sum(axis=1, keepdims=True)

    def params(self):
        return {**super().params(), "power": self.power}

    def onnx_weights(self, g, d, *, k, xx, idx, anchors):
        return g.op("Pow", [g.op("Add", [d, g.const("one", 1.0)], "d1"),
                            g.const("minus_p", -self.power)], "w_raw")
'''

TOY_MODEL = '''
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data


class NearestMeanClassifier(ClassifierMixin, BaseEstimator):
    """The nearest class mean, each mean shrunk towards the overall mean.

    Parameters
    ----------
    shrink : float, default 0.0
        How far each class mean moves towards the overall mean (0: not at all).
    random_state : int or None, default None
        Unused (a run passes its seed to every estimator).
    """

    _parameter_constraints = {"shrink": [Interval(Real, 0, 1, closed="left")],
                              "random_state": ["random_state"]}

    def __init__(self, shrink=0.0, random_state=None):
        self.shrink = shrink
        self.random_state = random_state

    def fit(self, X, y, eval_set=None):  # a run passes eval_set (history.test=true)
        self._validate_params()
        X, y = validate_data(self, X, y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        means = np.stack([X[idx == c].mean(axis=0) for c in range(len(self.classes_))])
        self.means_ = (1.0 - self.shrink) * means + self.shrink * X.mean(axis=0)
        return self

    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        s = -((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)
        return s[:, 1] - s[:, 0] if len(self.classes_) == 2 else s

    def predict(self, X):
        s = self.decision_function(X)
        return self.classes_[(s > 0).astype(int) if s.ndim == 1 else s.argmax(axis=1)]

    def _fitted_layout(self):
        return {"means_": "classes features"}
'''

CONF = {
    "coding/toy_smooth.yaml": """
        name: toy_smooth
        _target_: toy_coding.SmoothCoding
        n_anchors: 12
        k: 4
        power: 2.0
        anchor_method: kmeans
        """,
    "trainer/toy_mean.yaml": """
        name: toy_mean
        _target_: toy_model.NearestMeanClassifier
        shrink: 0.0
        """,
    "model/toy_mean.yaml": """
        # @package _global_
        # The nearest class mean (a toy).
        defaults:
          - override /coding: none
          - override /trainer: toy_mean

        model:
          name: toy_mean
        """,
    "search/toy_mean.yaml": """
        # @package _global_
        defaults:
          - _optuna

        hydra:
          sweeper:
            params:
              trainer.shrink: choice(0.0, 0.5)
        """,
}


@pytest.fixture
def toy(tmp_path, monkeypatch, capsys):
    """(tmp_path, the config dir, the run arguments on a small data file)."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "toy_coding.py").write_text(TOY_CODING)
    (code / "toy_model.py").write_text(TOY_MODEL)
    monkeypatch.syspath_prepend(str(code))
    conf = tmp_path / "conf"
    for name, text in CONF.items():
        (conf / name).parent.mkdir(parents=True, exist_ok=True)
        (conf / name).write_text(textwrap.dedent(text).lstrip())
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, "a", "b")
    train = write_csv(tmp_path / "train.csv", X[:160], y[:160])
    test = write_csv(tmp_path / "test.csv", X[160:], y[160:])
    args = ["dataset=file", f"dataset.train={train}", f"dataset.test={test}",
            f"hydra.searchpath=[file://{conf}]", f"results_dir={tmp_path / 'store'}",
            "progress=off"]
    return tmp_path, conf, args


def _records(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "store" / "runs").glob("*.json"))]


def test_a_model_from_a_config_dir_runs_predicts_and_its_file_names_no_trust(toy, capsys):
    tmp_path, conf, args = toy
    main(["run", "model=toy_mean", "tune=off", "save_model=true", *args])
    capsys.readouterr()
    record = _records(tmp_path)[0]
    assert record["model"] == "toy_mean" and record["metrics"]["test_accuracy"] > 0
    model_file = str(tmp_path / "store" / record["model_file"])
    main(["predict", model_file, str(tmp_path / "test.csv"), "--config-dir", str(conf),
          "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert f"accuracy {100 * record['metrics']['test_accuracy']:.2f}%" in err
    # without the config dir, the class the file names is not trusted: one line
    with pytest.raises(SystemExit):
        main(["predict", model_file, str(tmp_path / "test.csv")])
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "toy_model.NearestMeanClassifier" in err
    assert "not a class llc-bench ships" in err and "--config-dir" in err


def test_a_coding_from_a_config_dir_runs_keeps_and_exports(toy, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    from llc_bench.serving.model_files import load_model

    tmp_path, conf, args = toy
    main(["run", "model=llsvm", "coding=toy_smooth", "tune=off", "trainer.history=false",
          "save_model=true", *args])
    capsys.readouterr()
    record = _records(tmp_path)[0]
    assert record["config"]["coding"]["name"] == "toy_smooth"
    model_file = tmp_path / "store" / record["model_file"]
    out = tmp_path / "model.onnx"
    main(["export", str(model_file), "--onnx", str(out), "--config-dir", str(conf)])
    model, meta = load_model(model_file, [conf])
    assert type(model.coding_).__name__ == "SmoothCoding" and model.coding_.power == 2.0
    X = np.loadtxt(tmp_path / "test.csv", delimiter=",", skiprows=1, usecols=range(4))
    pre = meta["preprocess"]
    expected = model.decision_function((X - np.asarray(pre["mean"])) / np.asarray(pre["scale"]))
    (got,) = ReferenceEvaluator(onnx.load(out)).run(None, {"X": X})
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_a_model_from_a_config_dir_is_selected_by_its_search_space(toy, capsys):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    tmp_path, _, args = toy
    main(["run", "-m", "model=toy_mean", "+search=toy_mean", "+dataset.validation=0.25",
          "hydra.sweeper.n_trials=2", *args])
    shrinks = {r["config"]["trainer"]["shrink"] for r in _records(tmp_path)}
    assert shrinks <= {0.0, 0.5} and len(_records(tmp_path)) >= 1


def test_a_target_that_is_not_an_estimator_is_one_config_error(toy, capsys):
    _, _, args = toy
    with pytest.raises(SystemExit):
        main(["run", "model=toy_mean", "tune=off", "trainer._target_=toy_coding.SmoothCoding",
              *args])
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "trainer._target_=toy_coding.SmoothCoding" in err
    assert "not a scikit-learn estimator" in err


def test_a_model_from_a_config_dir_is_selected_by_tune_on_and_by_search_cv(toy, capsys):
    """tune=on reads the toy's space from the user's config dir; SearchCV runs on the toy
    estimator from Python with that space."""
    from llc_bench.selection import SearchCV
    from llc_bench.selection.search import declared_space

    tmp_path, conf, args = toy
    main(["run", "model=toy_mean", "tune=on", "tune.trials=2", "tune.budget_s=null", *args])
    record = _records(tmp_path)[0]
    assert record["tune"]["n_trials"] == 2
    assert set(record["tune"]["chosen"]) == {"trainer.shrink"}
    import toy_model

    space = {key.rsplit(".", 1)[-1]: dim for key, dim in declared_space("toy_mean", [conf]).items()}
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    search = SearchCV(toy_model.NearestMeanClassifier(), space, trials=2,
                      budget_s=None).fit(X, X[:, 0] > 0)
    assert search.best_params_["shrink"] in (0.0, 0.5) and search.score(X, X[:, 0] > 0) > 0.6

