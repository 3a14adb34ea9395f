"""Baselines on real data against the papers' numbers (LLC-SAPL Table 2).

C (and gamma) are chosen by 5-fold CV on the training split, over a shorter
grid than the default to keep the suite fast; the grids contain the values
the full grid selects.
"""

import pytest


@pytest.fixture
def run(real_run):
    return lambda *overrides: real_run(*overrides)["metrics"]


def test_linear_svm_on_banana_is_at_chance_as_in_the_paper(run):
    # paper: 55.29 (the majority class is 2924 / 5300 = 55.2%); CV over C = 2^-13 ... 2^9
    # picks C = 2^-13 on seed 0, a nearly constant rule that scores 58.8 %; a kernel scores 90
    acc = run("dataset=banana", "model=linear")["test_accuracy"]
    assert 0.53 <= acc <= 0.61


def test_kernel_svm_on_banana(run):
    # paper: 91.05
    m = run("dataset=banana", "model=kernel", "trainer.C_grid=[10,100]",
            "trainer.gamma_factors=[1,3]")
    assert m["test_accuracy"] >= 0.90
    assert m["test_hinge"] < 0.3


def test_linear_svm_on_ijcnn(run):
    # paper: 92.25 (LLC-SAPL Table 2) / 90.50 (LLC-JO Table 2)
    m = run("dataset=ijcnn", "model=linear", "trainer.C_grid=[0.125,2]")
    assert m["test_accuracy"] >= 0.915


@pytest.mark.parametrize("model,paper", [("linear", 0.9163), ("linear_cs", 0.9233)])
def test_multiclass_linear_on_usps(run, model, paper):
    # ML3 Table 1: LIBLINEAR one-vs-all 8.37% error, Crammer-Singer 7.67%
    m = run("dataset=usps", f"model={model}", "trainer.C_grid=[0.03125]")
    assert m["test_accuracy"] >= paper - 0.01
    assert "one-vs-all" in m["hinge_note"]
