"""SVM-KNN (Zhang, Berg, Maire & Malik, CVPR 2006): a linear SVM on each test point's
K nearest training points, the LLC-SAPL Table 2/3 baseline.

For a query x: find its K nearest training points (Euclidean); if they all carry one
label, that label is the answer (the paper's shortcut); otherwise a linear SVM (LIBLINEAR
``-s 3``, one-vs-rest on the classes present among the neighbours; a single binary model
when two are present) is trained on the K points and decides.  The paper's local SVM is
a DAG-SVM on a kernel of the neighbours' distances; LLC-SAPL compares against the linear
variant.  Choices the papers leave open, made here:

* local coordinates: the neighbours are centred on the query, which makes the local SVM
  independent of where the neighbourhood lies (LIBLINEAR regularises its bias ``-B
  bias`` like the weights); the query maps to 0 and its decision value is the local
  SVM's bias.  ``local_scale="radius"`` also divides by the distance to the K-th
  neighbour (a scale-free C; the boundary stays linear in x) - not the default, the
  leave-one-out accuracies of the two agree within 0.5% on banana and magic04.
* margins: disagreeing neighbourhoods give the local SVM's decision value (binary: for
  ``classes_[1]``; multi-class: its per-class values, classes absent from the neighbours
  get min(-1, best - 1) so they never win); unanimous neighbourhoods give the constant
  margin +-1 (binary) or +1 for the neighbours' class and -1 for the others.
* K and the local C by leave-one-out on ``n_cv_points`` random training points: each
  one's neighbours are searched in the whole training split minus itself, which is one
  neighbour query for the whole grid.  ``C=None`` (the default) chooses C jointly with
  K over ``C_grid``; a number fixes it (older records: C fixed at 1).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neighbors import BallTree, KDTree, NearestNeighbors
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from llc_bench.models import grid_search
from llc_bench.models._base import store_params
from llc_bench.models._validation import (
    COUNT,
    FINITE,
    POSITIVE,
    Grid,
    SparseInputMixin,
    check_fit_data,
    check_predict_data,
    labels_from_scores,
    validate_params,
)
from llc_bench.models.liblinear_fit import fit_liblinear

DEFAULT_K_GRID = (5, 10, 20, 40, 80, 160, 320, 640)
DEFAULT_C_GRID = (0.1, 1.0, 10.0, 100.0)


class SVMKNNClassifier(SparseInputMixin, ClassifierMixin, BaseEstimator):
    """SVM-KNN (Zhang et al., CVPR 2006) with local linear SVMs (LIBLINEAR).

    Prediction trains LIBLINEAR only for queries whose neighbours disagree.

    Parameters
    ----------
    n_neighbors : int or None, default None
        K, the neighbours of a query; None chooses K over ``K_grid`` by leave-one-out
        accuracy on ``n_cv_points`` random training points.
    C : float or None, default None
        The local SVMs' C; None chooses it with K over ``C_grid``.
    K_grid : sequence of int
        The values of K the leave-one-out search chooses from.
    C_grid : sequence of float
        The values of C it chooses from.
    n_cv_points : int, default 1000
        Random training points validated by leave-one-out.
    local_scale : {"none", "radius"}, default "none"
        Neighbours centred on the query; "radius": also divided by the K-th distance.
    bias : float, default 1.0
        LIBLINEAR ``-B`` of the local SVMs.
    chunk_size : int, default 4096
        Test rows per batched neighbour search.
    random_state : int, default 0
        Seeds the leave-one-out points and LIBLINEAR.
    """

    #: the declared search space (conf/search/svm_knn.yaml) SearchCV takes by default
    search_space = "svm_knn"

    _parameter_constraints = {
        "n_neighbors": [COUNT, None], "C": [POSITIVE, None], "K_grid": [Grid(COUNT)],
        "C_grid": [Grid(POSITIVE)], "n_cv_points": [COUNT],
        "local_scale": [StrOptions({"none", "radius"})], "bias": [FINITE],
        "chunk_size": [COUNT], "random_state": ["random_state"],
    }

    def __init__(self, *, n_neighbors=None, C=None, K_grid=DEFAULT_K_GRID, C_grid=DEFAULT_C_GRID,
                 n_cv_points=1000, local_scale="none", bias=1.0, chunk_size=4096,
                 random_state=0):
        store_params(self, locals())

    # ------------------------------------------------------------------ local SVMs

    def _local_scores(self, Xq, dist, idx, K, C):
        """Scores of the queries ``Xq`` given their sorted neighbours ``idx`` (n, >= K)."""
        n, n_classes = idx.shape[0], len(self.classes_)
        idx, dist = idx[:, :K], dist[:, :K]
        Y = self.y_train_[idx]
        first = Y[:, 0]
        unanimous = (Y == first[:, None]).all(axis=1)
        if n_classes == 2:
            scores = np.where(first == 1, 1.0, -1.0)
        else:
            scores = np.full((n, n_classes), -1.0)
            scores[np.arange(n), first] = 1.0
        seed = self.random_state or 0
        sparse = sp.issparse(self.X_train_)
        if sparse:
            Xq = sp.csr_matrix(Xq)
        for i in np.flatnonzero(~unanimous):
            nbr = idx[i]
            if sparse:  # X[nbr] - 1 x_q^T, kept sparse
                Z = self.X_train_[nbr] - sp.csr_matrix(np.ones((K, 1))) @ Xq[i:i + 1]
            else:
                Z = self.X_train_[nbr] - Xq[i]
            if self.local_scale == "radius" and dist[i, -1] > 0:
                Z = Z * (1.0 / dist[i, -1])
            present, y_local = np.unique(Y[i], return_inverse=True)
            _, b = fit_liblinear(Z, y_local, C=C, solver="l2_hinge", bias=self.bias,
                                 seed=seed)
            if n_classes == 2:  # the query sits at the origin: its decision value is b
                scores[i] = b
                continue
            row = np.full(n_classes, np.nan)
            if len(present) == 2:
                row[present] = (-b, b)
            else:
                row[present] = b
            row[np.isnan(row)] = min(-1.0, np.nanmax(row) - 1.0)
            scores[i] = row
        return scores, int((~unanimous).sum())

    # ------------------------------------------------------------------ fit / predict

    def _cross_validate(self, X, y, K_values, C_values, seed):
        """``fit_info_["cv"]``: the leave-one-out accuracy of every (K, C) on a random
        subsample of the training set (one split of the results table)."""
        n = X.shape[0]
        rng = np.random.RandomState(seed)
        m = min(int(self.n_cv_points), n)
        val = np.sort(rng.choice(n, size=m, replace=False))
        k_max = max(K_values)
        dist, idx = self.nn_.kneighbors(X[val], n_neighbors=k_max + 1)
        # drop the query itself (if duplicates hide it, drop the farthest neighbour instead)
        own = idx == val[:, None]
        none = ~own.any(axis=1)
        own[none, -1] = True
        dist = dist[~own].reshape(m, k_max)
        idx = idx[~own].reshape(m, k_max)
        n_local = 0

        def score(params):
            nonlocal n_local
            scores, fits = self._local_scores(X[val], dist, idx, params["n_neighbors"],
                                              params["C"])
            n_local += fits
            yield np.mean(labels_from_scores(np.arange(len(self.classes_)), scores) == y[val])

        candidates = [{"n_neighbors": int(K), "C": float(C)} for K in K_values for C in C_values]
        table = grid_search.search_grid(candidates, score, 1)
        return grid_search.record(
            table, n, protocol="leave-one-out on a random subsample of the training split",
            n_validation_points=m, local_svms_trained=n_local)

    def fit(self, X, y, eval_set=None):
        validate_params(self)
        X, y = check_fit_data(self, X, y)
        seed = self.random_state or 0
        t0 = time.perf_counter()
        n = X.shape[0]
        if sp.issparse(X):
            X = sp.csr_matrix(X)  # one sparse type inside (csr_array rows are 1-D)
        self.X_train_, self.y_train_ = X, y
        self.nn_ = NearestNeighbors().fit(X)
        t1 = time.perf_counter()
        grid_K = [self.n_neighbors] if self.n_neighbors is not None else list(self.K_grid)
        # K is capped by the training points available (n - 1 during leave-one-out)
        cv_K = sorted({max(1, min(int(k), n - 1)) for k in grid_K})
        C_values = [float(self.C)] if self.C is not None else [float(c) for c in self.C_grid]
        cv = None
        if len(cv_K) * len(C_values) > 1:
            cv = self._cross_validate(X, y, cv_K, C_values, seed)
            best = cv["params"][cv["best_index"]]  # first best: smallest K, C
            self.n_neighbors_, self.C_ = best["n_neighbors"], best["C"]
        else:
            self.n_neighbors_ = max(1, min(int(grid_K[0]), n))
            self.C_ = C_values[0]
        t2 = time.perf_counter()
        self.fit_info_ = {
            # "train" is the neighbour index (a kd-tree or the stored matrix): SVM-KNN
            # is lazy, all local SVMs are trained at test time
            "timings": {"cv": t2 - t1, "train": t1 - t0},
            "selected": {"n_neighbors": int(self.n_neighbors_), "C": self.C_},
            "cv": cv,
            # lazy: no numbers are learned at fit, the local SVMs are trained at prediction
            "model_size": {"n_parameters": 0, "n_outputs": 1 if len(self.classes_) == 2
                           else len(self.classes_), "n_features": int(X.shape[1]),
                           "n_stored_points": int(n),
                           "n_stored_values": int(X.nnz if sp.issparse(X) else X.size)},
        }
        return self

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        return {"X_train_": "float|csr: rows features", "y_train_": "index<classes: rows",
                "n_neighbors_": "count<=rows", "C_": "number", "nn_": (NearestNeighbors,)}

    def _check_fitted(self):
        """``nn_`` is the neighbour index of ``X_train_`` (rebuilt and compared: its tree's
        arrays are indices that scikit-learn follows unchecked)."""
        fresh = NearestNeighbors().fit(self.X_train_)
        if not _same_state(vars(self.nn_), vars(fresh)):
            raise ValueError("nn_ is not the neighbour index of X_train_")

    def decision_function(self, X):
        """Binary: (n,) margin for ``classes_[1]``; multi-class: (n, K) per-class scores
        (the local one-vs-rest SVMs' values, +-1 where the neighbours are unanimous)."""
        check_is_fitted(self, "nn_")
        X = check_predict_data(self, X)
        K = self.n_neighbors_
        parts = []
        for start in range(0, X.shape[0], int(self.chunk_size)):
            Xc = X[start:start + int(self.chunk_size)]
            dist, idx = self.nn_.kneighbors(Xc, n_neighbors=K)
            parts.append(self._local_scores(Xc, dist, idx, K, self.C_)[0])
        return np.concatenate(parts) if parts else np.zeros(
            (0,) if len(self.classes_) == 2 else (0, len(self.classes_)))

    def predict(self, X):
        scores = self.decision_function(X)
        return labels_from_scores(self.classes_, scores)


def _same_state(a, b) -> bool:
    """Whether two fitted states (dicts, tuples, arrays, trees) hold the same values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b, strict=True))
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    if isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        return np.asarray(a).shape == np.asarray(b).shape and np.array_equal(a, b)
    if isinstance(a, KDTree | BallTree):  # its state without the query counters
        sa, sb = a.__getstate__(), b.__getstate__()
        return type(a) is type(b) and _same_state(sa[:7] + sa[11:], sb[:7] + sb[11:])
    if type(a).__module__.startswith("sklearn.metrics"):  # the distance metric
        return type(a) is type(b) and _same_state(a.__getstate__(), b.__getstate__())
    return type(a) is type(b) and (a == b) is True
