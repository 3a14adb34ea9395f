"""ML3 on real data through the runner, against ML3 Tables 1-2.

The UCI test runs the paper's protocol in full (10 random splits, lambda by
5-fold CV on each training split). For usps / letter the lambda that the same
CV selects (30/n and 1/n, on the full protocol) is fixed, to keep
the suite fast.
"""

import numpy as np
import pytest
from conftest import compose_run

from llc_bench.experiment.runner import run_experiment


def errors(tmp_path, mirror, *overrides, seeds=(0,)):
    out = []
    for seed in seeds:
        cfg = compose_run("model=ml3", *overrides, f"seed={seed}", tmp_path=tmp_path,
                          mirrors=(mirror,))
        out.append(1.0 - run_experiment(cfg, echo=lambda line: None)["metrics"]["test_accuracy"])
    return np.array(out)


@pytest.mark.parametrize("dataset,paper", [("banana_ml3", 0.1103), ("wdbc", 0.1086)])
def test_uci_mean_of_ten_splits(tmp_path, mirror, dataset, paper):
    err = errors(tmp_path, mirror, f"dataset={dataset}", seeds=range(10))
    assert err.mean() <= paper + 0.015


@pytest.mark.parametrize("dataset,lam_n,limit", [
    ("letter", 1.0, 0.045),   # paper 3.43%
    ("usps", 30.0, 0.060),    # paper 5.43%
])
def test_multiclass_error(tmp_path, mirror, dataset, lam_n, limit):
    n_train = {"letter": 16000, "usps": 7291}[dataset]
    err = errors(tmp_path, mirror, f"dataset={dataset}", "trainer.lambda_grid=null",
                 f"trainer.lambda_={lam_n / n_train}")
    assert err[0] <= limit
