"""The training history (models/history.py): entries by step, a restart overwrites."""

import numpy as np

from llc_bench.models.history import History, accuracy, error, mean_hinge


def test_entries_keep_their_keys_in_order_and_a_restart_overwrites():
    history = History("epoch")
    for epoch in range(3):
        history.add(epoch, 1.0 - epoch / 10, train_accuracy=0.5)
    assert list(history.entries[0]) == ["epoch", "objective", "train_accuracy"]
    history.add(1, 0.7, train_accuracy=0.6)  # the divergence guard restarted at epoch 1
    assert [e["epoch"] for e in history.entries] == [0, 1]
    assert history.entries[-1] == {"epoch": 1, "objective": 0.7, "train_accuracy": 0.6}


def test_iterations_time_and_metrics():
    history = History("iteration")
    with history.timed():
        history.add(1, 0.5, train_error=error(np.array([0, 1]), np.array([0, 0])))
    assert history.entries == [{"iteration": 1, "objective": 0.5, "train_error": 0.5}]
    assert history.seconds > 0
    assert accuracy(np.array([1, 1, 0]), np.array([1, 0, 0])) == 2 / 3
    Y, F = np.array([[1.0, -1.0]]), np.array([[0.5, 0.5]])
    assert mean_hinge(Y, F) == (0.5 + 1.5) / 2  # averaged over the outputs too
