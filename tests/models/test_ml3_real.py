"""ML3 on real data through the runner, against ML3 Tables 1-2.

The UCI test runs the paper's protocol in full (10 random splits, lambda by
5-fold CV on each training split). For usps / letter the lambda that the same
CV selects (30/n and 1/n, on the full protocol) is fixed, to keep
the suite fast.
"""

import numpy as np
import pytest


def errors(real_run, *overrides, seeds=(0,)):
    return np.array([1.0 - real_run("model=ml3", *overrides, f"seed={seed}")["metrics"][
        "test_accuracy"] for seed in seeds])


@pytest.mark.parametrize("dataset,paper", [("banana_ml3", 0.1103), ("wdbc", 0.1086)])
def test_uci_mean_of_ten_splits(real_run, dataset, paper):
    err = errors(real_run, f"dataset={dataset}", seeds=range(10))
    assert err.mean() <= paper + 0.015


@pytest.mark.parametrize("dataset,lam_n,limit", [
    ("letter", 1.0, 0.045),   # paper 3.43%
    ("usps", 30.0, 0.060),    # paper 5.43%
])
def test_multiclass_error(real_run, dataset, lam_n, limit):
    n_train = {"letter": 16000, "usps": 7291}[dataset]
    err = errors(real_run, f"dataset={dataset}", "trainer.lambda_grid=null",
                 f"trainer.lambda_={lam_n / n_train}")
    assert err[0] <= limit
