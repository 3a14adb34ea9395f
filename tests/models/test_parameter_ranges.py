"""Regularisation outside its documented range is refused before a fit; a fit that diverges,
features whose squares overflow and non-finite decision values end the run with one line, not
a result."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO, data_error, llc, one_error, own, problem, where, write_delimited, written

pytestmark = pytest.mark.usefixtures("cli_env")


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
    path = write_delimited(tmp_path / "huge.csv", X * 1e60, y, fmt="{:.5e}")
    code, _, err = own(tmp_path, capsys, path, "model=llsvm", "coding.n_anchors=4",
                       "dataset.scaling=none")
    one_error(code, err, "SGD diverged", "not finite", "restart", "dataset.scaling")
    assert not list((tmp_path / "results").rglob("*.json"))


def test_feature_values_whose_squares_overflow_are_refused(tmp_path, capsys):
    X, y = problem()
    X[3, 1] = 3e150
    path = write_delimited(tmp_path / "enormous.csv", X, y, fmt="{:.5e}")
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
