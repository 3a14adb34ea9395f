"""Labels, splits, subsampling and scaling, as the papers describe them.

* Labels: binary -> {-1, +1} (the spec names the positive and negative raw labels),
  multi-class -> 0..C-1 in the spec's order (else a numeric-aware sort).
* Splits come from ``numpy.random.default_rng(seed)``: a random permutation (no
  stratification, as the papers' "randomly selected two thirds") for the ``fraction``
  and ``count`` protocols; fixed row ranges for ``rows``; the files themselves for
  ``files``. Row indices are kept in file order inside each split.
* ``max_train`` / ``max_test``: a seeded random subset (streams ``[seed, 1]`` / ``[seed, 2]``,
  so the split itself does not change with them).
* Scaling ``standard``: zero mean / unit variance per feature fitted on the training
  split only (SAPL §4.1, LLC-JO §4.1); constant features keep scale 1; sparse input is
  divided by the standard deviation without centring, so it stays sparse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from llc_bench.data.spec import LabelSpec, SplitSpec
from llc_bench.errors import ConfigError, DatasetError


def label_sort_key(name: str):
    """Numbers by value, then strings alphabetically."""
    try:
        return (0, float(name), "")
    except ValueError:
        return (1, 0.0, name)


@dataclass(frozen=True)
class LabelCoder:
    """Raw label name -> encoded value, plus the names of the encoded classes."""

    task: str
    classes: list[str]
    value_of: dict[str, int]
    drop: frozenset[str]

    def encode(self, names: list[str], codes: np.ndarray,
               where: str) -> tuple[np.ndarray, np.ndarray]:
        """``(y, keep)``: encoded labels (int64) and the rows not dropped."""
        unknown = [n for n in names if n not in self.value_of and n not in self.drop]
        if unknown:
            counts = np.bincount(codes, minlength=len(names))
            detail = ", ".join(f"{n!r} ({counts[names.index(n)]} rows)" for n in unknown[:5])
            known = sorted(self.value_of, key=label_sort_key) + sorted(self.drop)
            raise DatasetError(f"{where}: unknown label {detail}; the spec expects one of "
                               f"{', '.join(map(repr, known))}")
        values = np.array([self.value_of.get(n, 0) for n in names] or [0], dtype=np.int64)
        keep = np.array([n not in self.drop for n in names] or [True])
        return values[codes], keep[codes]


def build_coder(task: str, labels: LabelSpec, seen: set[str]) -> LabelCoder:
    """The label mapping of a spec; ``seen`` (the raw labels of the training rows) fills what
    the spec leaves open: the task (``auto``), the classes and the negative labels."""
    drop = frozenset(labels.drop)
    present = sorted(seen - drop, key=label_sort_key)
    if task == "auto":
        task = "binary" if len(present) == 2 or labels.positive else "multiclass"
    if task == "multiclass":
        order = list(labels.order) if labels.order else present
        names = list(labels.names) if labels.names else order
        return LabelCoder(task, names, {n: i for i, n in enumerate(order)}, drop)
    if labels.positive and not set(labels.positive) & set(present):
        raise DatasetError(f"label {', '.join(labels.positive)} not found in the training data "
                           f"(dataset.positive / labels.positive); labels are "
                           f"{', '.join(present) or 'none'}")
    positive = list(labels.positive or present[-1:])
    negative = list(labels.negative or [n for n in present if n not in positive])
    if not positive or not negative:
        raise DatasetError(f"binary task needs two label values, found {present}")
    if set(positive) & set(negative):
        raise ConfigError(f"labels {sorted(set(positive) & set(negative))} are both positive "
                          "and negative")
    classes = list(labels.names) if labels.names else ["|".join(negative), "|".join(positive)]
    value_of = {**{n: -1 for n in negative}, **{n: 1 for n in positive}}
    return LabelCoder(task, classes, value_of, drop)


def train_count(n_rows: int, test_fraction: Fraction) -> int:
    """Training rows for a test fraction: ``n (1 - f)`` rounded half up, computed exactly.

    This gives the papers' sizes: banana 3533/1767, magic04 12680/6340, phishing 7370/3685
    (f = 1/3) and skin 122529/122528 (f = 1/2).
    """
    return math.floor(Fraction(n_rows) * (1 - test_fraction) + Fraction(1, 2))


def split_indices(split: SplitSpec, n_rows: int, seed: int, y: np.ndarray | None = None,
                  names: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices of the single ``all`` part (protocols fraction/count/rows);
    ``split.stratify``: each label of ``y`` keeps its share in both (scikit-learn's
    stratified shuffle split, seeded)."""
    if split.protocol == "rows":
        train, test = split.train_rows, split.test_rows
        if max(train[1], test[1]) > n_rows:
            raise ConfigError(f"split rows {list(train)} / {list(test)} exceed the {n_rows} rows")
        if train[0] < test[1] and test[0] < train[1]:
            raise ConfigError(f"split rows {list(train)} and {list(test)} overlap")
        return np.arange(*train), np.arange(*test)
    if split.protocol == "fraction":
        n_train, n_test = train_count(n_rows, split.test_fraction), None
    else:
        n_train, n_test = split.train_size, split.test_size
    n_test = n_rows - n_train if n_test is None else n_test
    if n_train < 1 or n_test < 1 or n_train + n_test > n_rows:
        raise ConfigError(f"split {split.describe()} does not fit {n_rows} rows "
                          f"({n_train} train + {n_test} test)")
    if split.stratify:
        return _stratified(y, n_train, n_test, seed, names)
    order = np.random.default_rng(seed).permutation(n_rows)
    return np.sort(order[:n_train]), np.sort(order[n_train:n_train + n_test])


def _stratified(y, n_train: int, n_test: int, seed: int,
                names: list | None) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import StratifiedShuffleSplit

    labels, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        label = labels[np.argmin(counts)]
        raise DatasetError(f"dataset.stratify=true: label {names[label] if names else label!r} has "
                           "1 row, a stratified split needs 2 of each label: remove the row or "
                           "leave stratify unset")
    if min(n_train, n_test) < len(labels):
        raise DatasetError(f"dataset.stratify=true: {n_train} training and {n_test} test rows "
                           f"for {len(labels)} labels; a stratified split needs a row of each "
                           "label on both sides: change dataset.test_fraction")
    splitter = StratifiedShuffleSplit(1, test_size=n_test, train_size=n_train, random_state=seed)
    train, test = next(splitter.split(np.zeros((len(y), 1)), y))
    return np.sort(train), np.sort(test)


def subsample(n_rows: int, limit: int | None, seed: int, stream: int) -> np.ndarray | None:
    """Sorted indices of a seeded random subset of ``limit`` rows, or None if not needed."""
    if limit is None or n_rows <= limit:
        return None
    rng = np.random.default_rng([seed, stream])
    return np.sort(rng.choice(n_rows, size=limit, replace=False))


@dataclass(frozen=True)
class Scaler:
    """Per-feature ``(x - mean) / scale``; ``mean`` is None for sparse (no centring)."""

    mean: np.ndarray | None
    scale: np.ndarray
    constant: int

    def transform(self, X, copy: bool = True):
        """Scaled float64 data; ``copy=False`` scales a float64 array / CSR in place."""
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=copy)
            X.data /= self.scale[X.indices]
            return X
        X = np.array(X, dtype=np.float64, order="C", copy=copy)
        if self.mean is not None:
            X -= self.mean
        X /= self.scale
        return X


def fit_center(X_train) -> Scaler:
    """Zero mean from the training split, values not rescaled (dense data only)."""
    mean = np.asarray(X_train, dtype=np.float64).mean(axis=0)
    return Scaler(mean, np.ones_like(mean), 0)


def fit_standard(X_train) -> Scaler:
    """Zero mean / unit variance from the training split; constant features keep scale 1."""
    if sp.issparse(X_train):
        X = sp.csr_matrix(X_train, dtype=np.float64)
        mean = np.asarray(X.mean(axis=0)).ravel()
        square = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        std, centre = np.sqrt(np.maximum(square - mean**2, 0.0)), None
    else:
        X = np.asarray(X_train, dtype=np.float64)
        centre, std = X.mean(axis=0), X.std(axis=0)
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(centre if centre is not None else mean))
    return Scaler(centre, np.where(constant, 1.0, std), int(constant.sum()))
