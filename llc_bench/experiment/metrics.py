"""Evaluation metrics shared by every model.

Binary tasks use labels {-1, +1} and a decision value f(x) whose sign predicts
+1.  Multi-class tasks use labels 0..C-1 and one score per class; the hinge
loss reported for them is the one-vs-all hinge, max(0, 1 - y_c f_c(x)) with
y_c = +1 for the true class and -1 otherwise, averaged over samples *and*
classes (the loss the one-vs-all trainers minimise, per class).

A true label outside the classes (``llc_bench.data.dataset.UNSEEN_LABEL``: a test label
the training split lacks, kept with ``dataset.unseen_test_labels=count_as_errors``) is
never predicted, so it counts as an error, and the hinge treats it as a negative for
every class (binary: as the negative class).
"""

from __future__ import annotations

import numpy as np


def accuracy(y_true, y_pred) -> float:
    """Fraction of correct predictions, in [0, 1]."""
    y_true = np.asarray(y_true)
    return float(np.mean(y_true == np.asarray(y_pred))) if y_true.size else float("nan")


def hinge_loss(y_true, scores, classes=None) -> float:
    """Mean hinge loss of decision values.

    ``scores`` of shape (n,) is a binary decision value for labels in {-1, +1}
    (or for ``classes[1]`` when ``classes`` is given).  Shape (n, C) is one
    score per class, columns ordered as ``classes`` (default 0..C-1), and gives
    the one-vs-all hinge averaged over samples and classes.
    """
    y_true = np.asarray(y_true)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 1:
        if classes is None:
            y = np.where(y_true > 0, 1.0, -1.0)
        else:
            y = np.where(y_true == classes[1], 1.0, -1.0)
        return float(np.mean(np.maximum(0.0, 1.0 - y * scores)))
    n_classes = scores.shape[1]
    classes = np.arange(n_classes) if classes is None else np.asarray(classes)
    Y = np.where(y_true[:, None] == classes[None, :], 1.0, -1.0)
    return float(np.mean(np.maximum(0.0, 1.0 - Y * scores)))
