"""Clustered SVM (Gu & Han, AISTATS 2013), the CSVM row of LLC-SAPL Tables 2-3.

k-means splits the training data into L clusters; cluster l gets a linear model
w_l = w + v_l tied to a shared w by the global regulariser (the paper's objective):

    min  λ/2 ||w||² + 1/2 Σ_l ||v_l||² + C Σ_i max(0, 1 - y_i (w + v_{l(i)})ᵀ x_i).

With u = √λ w this is ONE ordinary linear SVM, 1/2 ||[u; v_1; …; v_L]||² + C Σ hinge,
on the augmented features (the paper's reformulation for a standard solver)

    x ↦ x̃ = [x/√λ, 0, …, 0, x (block l(x)), 0, …, 0],   since [u; v]ᵀ x̃ = wᵀx + v_lᵀx,

which LIBLINEAR (``-s 3``, one-vs-rest for multi-class) solves; then w_l = u/√λ + v_l.
Large λ leaves L independent SVMs, small λ one global SVM.  Choices made here:

* bias: x is extended by a constant ``bias`` (as LIBLINEAR's ``-B``) *before* the
  augmentation, so every cluster has its own intercept b_l = b_u/√λ + c_l, tied to a
  shared one exactly like the weights; LIBLINEAR gets no further ``-B``.
* routing: a point (training or test) belongs to its nearest k-means centre.
* C: ``cv_folds``-fold CV over ``C_grid`` on the training split; the k-means clusters
  (unsupervised, no labels) are computed once on the whole training split and shared
  by the folds.  L and λ are parameters (defaults L = 8, λ = 1; per dataset in
  ``conf/tuned/csvm_<dataset>.yaml``).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from llc_bench.coding.anchors import fit_anchors
from llc_bench.models import grid_search
from llc_bench.models._base import LabelsFromScoresMixin, TrialCache, store_params
from llc_bench.models._validation import (
    COUNT,
    FINITE,
    FOLDS,
    POSITIVE,
    REGULARISATION,
    Grid,
    SparseInputMixin,
    check_fit_data,
    check_predict_data,
    labels_from_scores,
    validate_params,
)
from llc_bench.models.liblinear_fit import fit_liblinear
from llc_bench.models.linear import DEFAULT_C_GRID, C_candidates, cv_subsample


def assign_clusters(X, centers):
    """Index of the nearest centre (Euclidean) for every row of ``X`` (dense or CSR)."""
    cross = np.asarray(X @ centers.T)
    return np.argmin((centers**2).sum(axis=1)[None, :] - 2.0 * cross, axis=1)


def augment(X, clusters, n_clusters, lambda_, bias=1.0):
    """CSR rows [x/√λ, 0, …, x (block ``clusters[i]``), …, 0], x = [x, bias] if bias > 0.

    Built from ``X``'s CSR arrays (no loop over rows): the cluster block reuses the
    row's values with column indices shifted by (block width) x (cluster).
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    n = X.shape[0]
    if bias > 0:
        X = sp.hstack([X, sp.csr_matrix(np.full((n, 1), float(bias)))], format="csr")
    width = X.shape[1]
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    shift = width * np.asarray(clusters, dtype=np.int64)[rows]
    local = sp.csr_matrix((X.data, X.indices + shift, X.indptr),
                          shape=(n, n_clusters * width))
    return sp.hstack([X * (1.0 / np.sqrt(lambda_)), local], format="csr")


class ClusteredSVMClassifier(LabelsFromScoresMixin, SparseInputMixin, ClassifierMixin,
                             BaseEstimator):
    """Clustered SVM (Gu & Han, AISTATS 2013): k-means + one LIBLINEAR problem on the
    augmented features.

    Parameters
    ----------
    n_clusters : int, default 8
        L, the k-means clusters (scikit-learn ``KMeans``, seeded by ``random_state``).
    lambda_ : float, default 1.0
        The global regulariser λ: large = independent cluster SVMs, small = one global SVM.
    C : float or None, default None
        LIBLINEAR's C; None chooses it by ``cv_folds``-fold CV over ``C_grid``.
    cv_folds : int, default 5
        Folds of that cross-validation (stratified).
    C_grid : sequence of float
        The values of C the cross-validation chooses from.
    cv_max_rows : int or None, default None
        Run the CV on a stratified subsample of this many rows (the final fit uses all).
    bias : float, default 1.0
        Constant feature appended before augmenting: per-cluster tied intercepts.
    tol : float or None, default None
        LIBLINEAR's ``-e`` (None: its default, 0.1 for ``-s 3``).
    kmeans_max_iter : int, default 300
        k-means iterations at most.
    random_state : int, default 0
        Seeds k-means, the CV folds and LIBLINEAR."""

    #: the declared search space (conf/search/csvm.yaml) SearchCV takes by default
    search_space = "csvm"

    _parameter_constraints = {
        "n_clusters": [COUNT], "lambda_": [REGULARISATION], "C": [POSITIVE, None],
        "cv_folds": [FOLDS], "C_grid": [Grid(POSITIVE)], "cv_max_rows": [FOLDS, None],
        "bias": [FINITE], "tol": [POSITIVE, None], "kmeans_max_iter": [COUNT],
        "random_state": ["random_state"],
    }

    def __init__(self, *, n_clusters=8, lambda_=1.0, C=None, cv_folds=5, C_grid=DEFAULT_C_GRID,
                 cv_max_rows=None, bias=1.0, tol=None, kmeans_max_iter=300, random_state=0):
        store_params(self, locals())

    def _fit_augmented(self, Xa, y, C):
        return fit_liblinear(Xa, y, C=C, solver="l2_hinge", bias=0.0, eps=self.tol,
                             seed=self.random_state or 0)[0]

    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """k-means clusters, C by CV (C=None), then LIBLINEAR on the augmented rows.
        ``trial_cache`` (``_base.TrialCache``, a search's trial): the k-means it shares,
        its anchor rows."""
        validate_params(self)
        X, y = check_fit_data(self, X, y)
        seed = self.random_state or 0
        cache = TrialCache(memo=False) if trial_cache is None else trial_cache
        t0 = time.perf_counter()
        self.cluster_centers_, kmeans_info = fit_anchors(
            X, self.n_clusters, method="kmeans", random_state=seed,
            max_iter=self.kmeans_max_iter, memo=cache.anchors, rows=cache.anchor_rows)
        L = self.cluster_centers_.shape[0]
        clusters = assign_clusters(X, self.cluster_centers_)
        Xa = augment(X, clusters, L, self.lambda_, self.bias)
        t1 = time.perf_counter()
        cv = None
        if self.C is None:
            n_classes = len(self.classes_)

            def fit_fold(Xf, yf, params):
                W = self._fit_augmented(Xf, yf, params["C"])
                return lambda Xv: labels_from_scores(np.arange(n_classes), Xv @ W.T)

            Xc, yc = cv_subsample(Xa, y, self.cv_max_rows, seed)
            cv = grid_search.record(grid_search.kfold_search(
                Xc, yc, C_candidates(self.C_grid), self.cv_folds, seed, fit_fold), yc.size)
            self.C_ = cv["params"][cv["best_index"]]["C"]
        else:
            self.C_ = float(self.C)
        t2 = time.perf_counter()
        W = self._fit_augmented(Xa, y, self.C_)  # (D_aug,) or (K, D_aug)
        self.augmented_coef_ = W
        width = X.shape[1] + (1 if self.bias > 0 else 0)
        shared = W[..., :width] / np.sqrt(self.lambda_)
        V = W[..., width:].reshape(*W.shape[:-1], L, width)  # (..., L, width)
        local = np.moveaxis(V + shared[..., None, :], -2, 0)  # (L, [K,] width): w_l
        self.shared_coef_ = shared
        if self.bias > 0:
            self.coef_ = np.ascontiguousarray(local[..., :-1])
            self.intercept_ = local[..., -1] * self.bias
        else:
            self.coef_ = np.ascontiguousarray(local)
            self.intercept_ = np.zeros(local.shape[:-1])
        t3 = time.perf_counter()
        counts = np.bincount(clusters, minlength=L)
        self.fit_info_ = {
            "timings": {"cv": t2 - t1, "train": (t1 - t0) + (t3 - t2)},
            "selected": {"C": self.C_, "n_clusters": int(L), "lambda": float(self.lambda_)},
            "cv": cv,
            "kmeans": {**kmeans_info, "cluster_sizes": counts.tolist()},
            "model_size": {"n_parameters": int(self.coef_.size + self.intercept_.size),
                           "n_outputs": int(self.intercept_[0].size),
                           "n_features": int(X.shape[1]), "n_centers": int(L)},
        }
        return self

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        binary = len(self.classes_) == 2
        return {"cluster_centers_": "clusters features",
                "coef_": "clusters features" if binary else "clusters outputs features",
                "intercept_": "clusters" if binary else "clusters outputs"}

    def __sklearn_is_fitted__(self):
        # the parameter ``lambda_`` ends in "_", which would fool check_is_fitted's default
        return hasattr(self, "coef_")

    def decision_function(self, X):
        """Binary: (n,) margin for ``classes_[1]``; multi-class: (n, K) one-vs-rest scores;
        each row scored by the model w_l, b_l of its nearest cluster centre."""
        check_is_fitted(self, "coef_")
        X = check_predict_data(self, X)
        clusters = assign_clusters(X, self.cluster_centers_)
        shape = (X.shape[0],) + self.intercept_.shape[1:]
        scores = np.zeros(shape)
        order = np.argsort(clusters, kind="stable")  # rows grouped by cluster, one pass
        bounds = np.searchsorted(clusters[order], np.arange(len(self.coef_) + 1))
        for c in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[c]:bounds[c + 1]]
            scores[rows] = np.asarray(X[rows] @ self.coef_[c].T) + self.intercept_[c]
        return scores
