"""LDKL on real data through the runner, against LLC-SAPL Table 2 (one seed each).

The released code's defaults (conf/trainer/ldkl.yaml), no per-dataset tuning.
"""

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("dataset,threshold,paper", [
    ("banana", 0.890, 0.9015),
    ("magic04", 0.850, 0.8622),
    ("ijcnn", 0.975, 0.9831),
])
def test_ldkl_accuracy_near_the_paper(real_run, dataset, threshold, paper):
    record = real_run(f"dataset={dataset}", "model=ldkl", "seed=0")
    m = record["metrics"]
    assert m["test_accuracy"] >= threshold, (m["test_accuracy"], paper)
    assert record["model_size"]["nodes_per_prediction"] == 4  # depth 3: 4 of 15 nodes
    history = record["history"]
    assert history[-1]["iteration"] == 15000
    assert history[-1]["train_accuracy"] >= history[0]["train_accuracy"]
