"""The :class:`Dataset` record handed to the runner."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

UNSEEN_LABEL = -2
"""``y_test`` value of a row whose label does not occur in the training split (kept only with
``dataset.unseen_test_labels=count_as_errors``): no prediction equals it, and the hinge loss
treats it as a negative for every class (:mod:`llc_bench.experiment.metrics`)."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded, split and scaled dataset.

    ``X_*`` are float64 C-contiguous arrays (``scipy.sparse.csr_matrix`` for sparse
    specs); ``y_*`` are int64, {-1, +1} for ``task == "binary"`` and 0..C-1 for
    ``"multiclass"`` (plus ``UNSEEN_LABEL`` in ``y_test`` for rows whose label the training
    split lacks, when they are counted as errors). ``classes`` come from the training
    split only; ``classes[i]`` names encoded label i (binary: [negative, positive],
    so ``classes[0]`` is -1). ``info`` is JSON-serialisable provenance: files and their
    sha256, split protocol and seed, sizes, scaling, subsampling, notes and timings.
    """

    name: str
    task: str
    X_train: np.ndarray | sp.csr_matrix = field(repr=False)
    y_train: np.ndarray = field(repr=False)
    X_test: np.ndarray | sp.csr_matrix = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    classes: list[str]
    n_features: int
    info: dict = field(repr=False)
    preprocess: dict | None = field(default=None, repr=False)
    """How a new file's rows become this dataset's features (``llc-bench predict``): the
    source ``format`` and parser ``options``, ``n_features``, ``feature_names`` (a CSV
    header), ``value_scale``, ``sparse``, the scaler's ``mean`` / ``scale`` (arrays or None)
    and the label ``names`` in encoded order (binary: [negative, positive])."""

    @property
    def n_train(self) -> int:
        return self.X_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.X_test.shape[0]

    @property
    def n_classes(self) -> int:
        return len(self.classes)
