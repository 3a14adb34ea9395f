"""Anchor points v_1..v_m for the local codings (docs/design.md §Local codings).

Two rules:

* ``kmeans`` (the LL-SVM paper, §4): k-means on the scaled training data,
  scikit-learn ``KMeans`` seeded by the run seed; above ``MINIBATCH_THRESHOLD``
  training rows ``MiniBatchKMeans`` is used instead (the full Lloyd iterations
  cost O(N·D·m) each, which is what makes MNIST8m-sized data impractical; every
  dataset of the papers except MNIST8m stays below the threshold, so the tables
  use exact k-means).  Two opt-in speed-ups (off by default, so the anchors
  are today's): ``sample_rows`` runs k-means on a seeded random sample of that many
  rows, ``tol`` replaces scikit-learn's 1e-4 stopping tolerance.
* ``random_per_class`` (Ladický's released LL-SVM code, docs/design.md §Released code): random
  training points, the m anchors split as evenly as possible between classes.
* ``kmeans_per_class``: the same split between classes, each class's share by
  k-means on that class's rows (every class gets anchors of its own, as in
  ``random_per_class``, placed by k-means rather than at random).

Both return a dense C-contiguous float64 array of shape (m, D), also for sparse
(CSR) input.  ``m`` is capped at the number of training rows (k-means cannot make
more clusters than points); the caller records the effective m.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .. import progress
from ..errors import ConfigError

#: Training rows above which MiniBatchKMeans replaces KMeans.
MINIBATCH_THRESHOLD = 200_000

ANCHOR_METHODS = ("kmeans", "random_per_class", "kmeans_per_class")

def _memo_key(y, args: tuple) -> tuple:
    labels = None if y is None else hash(np.asarray(y).tobytes())
    return (labels, *args)


def fit_anchors(
    X,
    n_anchors: int,
    *,
    method: str = "kmeans",
    y=None,
    random_state=None,
    minibatch_threshold: int = MINIBATCH_THRESHOLD,
    max_iter: int = 300,
    sample_rows: int | None = None,
    tol: float | None = None,
    memo: list | None = None,
    rows: tuple | None = None,
) -> tuple[np.ndarray, dict]:
    """Choose ``n_anchors`` anchor points from the training data ``X``.

    Returns ``(anchors, info)``: anchors of shape (m, D), float64, C-contiguous,
    and ``info`` = {"method", "n_anchors", "algorithm", ...} for the result record.
    ``random_state`` is an int, a ``numpy.random.RandomState`` or None.
    ``sample_rows`` / ``tol`` (k-means only, None = off): fit on a seeded sample of at
    most that many rows / with that relative tolerance.

    ``memo`` (a list, kept by the caller: the trials of a search that share m and the
    rule share their k-means): on the same array object with the same arguments, (a copy
    of) the anchors computed before.  ``rows`` = (rows, n_rows): on an array of
    ``n_rows`` rows, the anchors of its rows ``rows`` (in that order) only, the info
    saying so (the fit of a setting chosen on a held-out split keeps the anchors its trial
    was scored with: the same rows, rule and seed give the same k-means).
    """
    n = X.shape[0]
    if n_anchors < 1:
        raise ConfigError(f"n_anchors must be >= 1, got {n_anchors}")
    if rows is not None and n == rows[1]:
        anchors, info = fit_anchors(
            X[rows[0]], n_anchors, method=method,
            y=None if y is None else np.asarray(y)[rows[0]], random_state=random_state,
            minibatch_threshold=minibatch_threshold, max_iter=max_iter,
            sample_rows=sample_rows, tol=tol, memo=memo)
        return anchors, {**info, "rows": int(len(rows[0]))}
    if memo is not None and isinstance(random_state, int | np.integer | None):
        key = _memo_key(y, (n_anchors, method, random_state, minibatch_threshold, max_iter,
                            sample_rows, tol))
        for X_seen, key_seen, anchors, info in memo:
            if X_seen is X and key_seen == key:
                return anchors.copy(), copy.deepcopy(info)
        anchors, info = fit_anchors(X, n_anchors, method=method, y=y,
                                    random_state=random_state,
                                    minibatch_threshold=minibatch_threshold,
                                    max_iter=max_iter, sample_rows=sample_rows, tol=tol)
        memo.append((X, key, anchors.copy(), copy.deepcopy(info)))
        return anchors, info
    m = int(min(n_anchors, n))
    info: dict = {"method": method, "n_anchors_requested": int(n_anchors), "n_anchors": m}
    if method == "kmeans":
        from sklearn.cluster import KMeans, MiniBatchKMeans

        Xk = X
        if sample_rows is not None and n > max(int(sample_rows), m):
            rows = np.sort(check_random_state(random_state).choice(
                n, max(int(sample_rows), m), replace=False))
            Xk = X[rows]
            info["sample_rows"] = int(rows.size)
        extra = {} if tol is None else {"tol": float(tol)}
        if tol is not None:
            info["tol"] = float(tol)
        if Xk.shape[0] > minibatch_threshold:
            km = MiniBatchKMeans(
                n_clusters=m,
                random_state=random_state,
                batch_size=4096,
                n_init=3,
                max_iter=max_iter,
                **extra,
            )
            info["algorithm"] = "MiniBatchKMeans"
        else:
            km = KMeans(n_clusters=m, random_state=random_state, n_init=1, max_iter=max_iter,
                        **extra)
            info["algorithm"] = "KMeans"
        with progress.stage(f"{info['algorithm']} ({m} anchors)"):
            km.fit(Xk)
        anchors = km.cluster_centers_
        info["inertia"] = float(km.inertia_)
        info["n_iter"] = int(km.n_iter_)
    elif method in ("random_per_class", "kmeans_per_class"):
        if y is None:
            raise ConfigError(f"anchors {method!r} needs the training labels")
        classes, y_idx, share = _class_shares(y, m)
        if method == "random_per_class":
            rng = (random_state if isinstance(random_state, np.random.RandomState)
                   else np.random.RandomState(random_state))
            rows = np.sort(np.concatenate([
                rng.choice(np.flatnonzero(y_idx == c), size=share[c], replace=False)
                for c in range(share.size)]))
            anchors = X[rows]
            info["algorithm"] = "random training points per class"
        else:
            anchors = np.vstack([
                fit_anchors(X[y_idx == c], int(share[c]), random_state=random_state,
                            minibatch_threshold=minibatch_threshold, max_iter=max_iter,
                            sample_rows=sample_rows, tol=tol)[0]
                for c in range(share.size) if share[c] > 0])
            info["algorithm"] = "k-means per class"
        info["per_class"] = {str(c): int(s) for c, s in zip(classes, share, strict=True)}
    else:
        raise ConfigError(f"unknown anchor method {method!r}; choose one of {ANCHOR_METHODS}")
    if sp.issparse(anchors):
        anchors = anchors.toarray()
    return np.ascontiguousarray(anchors, dtype=np.float64), info


def _class_shares(y, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(classes, class index per row, anchors per class): m // C per class, the remainder to the
    first classes, capped by class size; what small classes cannot take goes to the largest."""
    classes, y_idx = np.unique(np.asarray(y), return_inverse=True)
    counts = np.bincount(y_idx, minlength=len(classes))
    share = np.full(len(classes), m // len(classes))
    share[: m % len(classes)] += 1
    share = np.minimum(share, counts)
    missing = m - share.sum()
    for c in np.argsort(-counts):
        if missing <= 0:
            break
        extra = min(missing, counts[c] - share[c])
        share[c] += extra
        missing -= extra
    return classes, y_idx, share
