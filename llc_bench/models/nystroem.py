"""Nyström RBF features + linear SVM: the standard kernel-approximation baseline.

Nyström (Williams & Seeger, NIPS 2001): with landmarks u_1..u_m and the RBF kernel
k(x, u) = exp(-γ ||x - u||²), the feature map

    Φ(x) = k(x, U) K_mm^{-1/2},   K_mm = k(U, U),

gives Φ(x)ᵀΦ(x') = k(x, U) K_mm⁺ k(U, x') ≈ k(x, x'), exact on the landmarks
and, with every training point a landmark, on the whole training set.  A
linear SVM (LIBLINEAR, Fan et al. 2008) on Φ approximates the RBF kernel SVM of
:mod:`llc_bench.models.kernel` with the same C and γ.

Landmarks (``landmarks``):

* ``"random"`` — m training rows drawn uniformly without replacement:
  scikit-learn's ``Nystroem`` as is (its K_mm^{-1/2} comes from an SVD with the
  singular values floored at 1e-12).
* ``"kmeans"`` (default) — the m k-means centres (Zhang, Tsang & Kwok, ICML 2008,
  "Improved Nyström low-rank approximation": a smaller approximation error than
  uniform sampling at the same m), from :func:`llc_bench.coding.anchors.fit_anchors`.
  scikit-learn's ``Nystroem`` only samples training rows, so the map is built
  here: K_mm = V diag(s) Vᵀ (``eigh``), the eigenpairs with s > ``eig_rtol``·max s
  kept (r of them; the rest carry no kernel mass, and inverting them would only
  amplify rounding), Φ(x) = k(x, U) V_r diag(s_r)^{-1/2} — r ≤ m features, equal to
  k(x, U) K_mm^{-1/2} up to a rotation (the same linear SVM).

n_components = m = 500 by default: the order of magnitude that gets within a
point or two of the kernel SVM on the papers' low-dimensional sets (banana,
magic04, ijcnn) at a cost linear in n; capped at the number of training rows.

Solver: LIBLINEAR ``-s 2`` (L2-regularised squared hinge, primal trust-region
Newton) by default: Φ is dense with n ≫ m columns, the case LIBLINEAR's guide
gives to the primal solver, and its cost barely depends on C; the dual hinge
solver (``-s 3``, ``solver="l2_hinge"``) needs many more passes at the large C
an RBF machine wants (banana, m = 500, C = 1000: it stops at its iteration cap,
2.9 s and 84% test accuracy, against 0.3 s and 90.6% for ``-s 2``).

γ: a number, or ``None`` for ``cv_folds``-fold CV over ``gamma_factors`` × 1/(D·Var X)
(as :class:`~llc_bench.models.kernel.KernelSVMClassifier`) jointly with C over
``C_grid`` (``C=None``).  The landmarks are chosen once on the whole training split
(unsupervised; the k-means ones do not depend on γ), the map is rebuilt per γ and the
LIBLINEAR fits per C and fold reuse the features.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils._param_validation import Interval, StrOptions

from ..coding.anchors import fit_anchors
from . import grid_search
from ._base import LinearOnFeaturesMixin, TrialCache, linear_scores, store_params
from ._validation import (
    COUNT,
    FINITE,
    FOLDS,
    POSITIVE,
    Grid,
    SparseInputMixin,
    check_fit_data,
    labels_from_scores,
    validate_params,
)
from .kernel import DEFAULT_C_GRID, DEFAULT_GAMMA_FACTORS, check_one_gamma, gamma_candidates
from .liblinear_fit import SOLVERS, fit_liblinear
from .linear import linear_model_size

LANDMARKS = ("kmeans", "random")


def nystroem_normalization(landmarks: np.ndarray, gamma: float, eig_rtol: float = 1e-10):
    """V_r diag(s_r)^{-1/2} (m × r) from K_mm = k(U, U), eigenvalues s > eig_rtol · max s."""
    K = rbf_kernel(landmarks, landmarks, gamma=gamma)
    s, V = np.linalg.eigh(K)
    keep = s > eig_rtol * s[-1]
    return V[:, keep] / np.sqrt(s[keep])


class NystroemSVMClassifier(LinearOnFeaturesMixin, SparseInputMixin, ClassifierMixin,
                            BaseEstimator):
    """Linear SVM (LIBLINEAR) on Nyström RBF features (Williams & Seeger 2001).

    Parameters
    ----------
    n_components : int, default 500
        m, landmarks (capped at the number of training rows).
    landmarks : {"kmeans", "random"}
        k-means centres (own map) or uniformly sampled rows (scikit-learn ``Nystroem``).
    gamma : float or None
        RBF γ; None: ``gamma_scale``, or CV over ``gamma_factors`` × 1/(D·Var X).
    gamma_scale : float or None
        RBF γ in units of 1/(D·Var X) when ``gamma`` is None; None chooses it by that CV.
    gamma_factors : sequence of float
        The values of γ that CV chooses from, in units of 1/(D·Var X).
    C : float or None
        LIBLINEAR's C; None chooses it by CV over ``C_grid``.
    C_grid : sequence of float
        The values of C that CV chooses from.
    cv_folds : int, default 5
        Folds of that cross-validation (stratified).
    solver : {"l2_squared_hinge", "l2_hinge", "crammer_singer", "logistic"}
        LIBLINEAR loss; default the squared hinge (``-s 2``, see the module notes).
    bias : float
        LIBLINEAR ``-B``.
    eig_rtol : float
        k-means landmarks: eigenvalues of K_mm below eig_rtol · max are dropped.
    random_state : int
        Seeds the landmarks, the CV folds and LIBLINEAR (None = 0).
    """

    #: the declared search space (conf/search/nystroem.yaml) SearchCV takes by default
    search_space = "nystroem"

    _parameter_constraints = {
        "n_components": [COUNT], "landmarks": [StrOptions(set(LANDMARKS))],
        "gamma": [POSITIVE, None], "gamma_scale": [POSITIVE, None],
        "gamma_factors": [Grid(POSITIVE)], "C": [POSITIVE, None],
        "C_grid": [Grid(POSITIVE)], "cv_folds": [FOLDS], "solver": [StrOptions(set(SOLVERS))],
        "bias": [FINITE], "eig_rtol": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, n_components=500, landmarks="kmeans", gamma=None, gamma_scale=None,
                 gamma_factors=DEFAULT_GAMMA_FACTORS, C=None, C_grid=DEFAULT_C_GRID, cv_folds=5,
                 solver="l2_squared_hinge", bias=1.0, eig_rtol=1e-10, random_state=0):
        store_params(self, locals())

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        binary = len(self.classes_) == 2
        layout = {"landmarks_": "landmarks features", "gamma_": "number",
                  "coef_": "components" if binary else "outputs components",
                  "intercept_": "" if binary else "outputs"}
        if self.nystroem_ is None:
            return {**layout, "normalization_": "landmarks components"}
        return {"nystroem_": (Nystroem,), "nystroem_.components_": "landmarks features",
                "nystroem_.normalization_": "landmarks components", **layout}

    def _check_fitted(self):
        """The landmarks' feature map is the RBF kernel at ``gamma_``."""
        if self.nystroem_ is not None and (
                self.nystroem_.kernel != "rbf" or self.nystroem_.gamma != self.gamma_
                or not np.array_equal(self.nystroem_.components_, self.landmarks_)):
            raise ValueError("nystroem_ is not the RBF map of landmarks_ at gamma_")

    def _build_map(self, X, gamma, seed):
        """Set the feature map for ``gamma`` (landmarks_ already chosen for k-means)."""
        self.gamma_ = float(gamma)
        if self.landmarks == "random":
            m = min(int(self.n_components), X.shape[0])
            self.nystroem_ = Nystroem(kernel="rbf", gamma=self.gamma_, n_components=m,
                                      random_state=seed).fit(X)
            self.landmarks_ = self.nystroem_.components_
        else:
            self.nystroem_ = None
            self.normalization_ = nystroem_normalization(self.landmarks_, self.gamma_,
                                                         self.eig_rtol)

    def _features(self, X):
        if self.nystroem_ is not None:
            return self.nystroem_.transform(X)
        return rbf_kernel(X, self.landmarks_, gamma=self.gamma_) @ self.normalization_

    def _fit_features(self, F, y, C, seed):
        return fit_liblinear(F, y, C=C, solver=self.solver, bias=self.bias, seed=seed)

    def _check_param_combinations(self):
        check_one_gamma(self)

    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """Landmarks, (γ, C) by CV when not given, then LIBLINEAR on Φ(X).

        ``fit_info_``: timings ("landmarks", "cv", "features": the final map and
        Φ(X_train), "train"), "selected" (gamma, C), "cv" (the CV's results table over
        γ x C), "model_size" (n_parameters, n_outputs, n_features, n_components, rank),
        "landmarks".  ``trial_cache`` (``_base.TrialCache``, a search's trial): the k-means
        landmarks it shares, its anchor rows.
        """
        validate_params(self)
        X, y = check_fit_data(self, X, y)
        seed = self.random_state or 0
        t0 = time.perf_counter()
        landmark_info = {"method": self.landmarks}
        if self.landmarks == "kmeans":
            cache = TrialCache(memo=False) if trial_cache is None else trial_cache
            self.landmarks_, landmark_info = fit_anchors(X, self.n_components, method="kmeans",
                                                         random_state=seed, memo=cache.anchors,
                                                         rows=cache.anchor_rows)
        t1 = time.perf_counter()
        gammas = gamma_candidates(self, X)
        Cs = list(self.C_grid) if self.C is None else [float(self.C)]
        cv = None
        if len(gammas) * len(Cs) > 1:
            labels = np.arange(len(self.classes_))

            def fit_fold(Ff, yf, params):
                W, b = self._fit_features(Ff, yf, params["C"], seed)
                return lambda Fv: labels_from_scores(labels, np.asarray(linear_scores(Fv, W, b)))

            splits, features = grid_search.kfold_splits(y, self.cv_folds, seed), {}

            def score(params):  # the map is rebuilt once per γ (the C's of a γ follow)
                if params["gamma"] not in features:
                    features.clear()
                    self._build_map(X, params["gamma"], seed)
                    features[params["gamma"]] = self._features(X)
                return grid_search.fold_scorer(features[params["gamma"]], y, splits,
                                               fit_fold)(params)

            candidates = [{"gamma": float(g), "C": float(C)} for g in gammas for C in Cs]
            cv = grid_search.record(grid_search.search_grid(candidates, score, len(splits)),
                                    len(y))
            gamma, self.C_ = cv["params"][cv["best_index"]].values()  # ties: smaller γ, C
        else:
            gamma, self.C_ = gammas[0], float(Cs[0])
        t2 = time.perf_counter()
        self._build_map(X, gamma, seed)
        F = self._features(X)
        t3 = time.perf_counter()
        self.coef_, self.intercept_ = self._fit_features(F, y, self.C_, seed)
        t4 = time.perf_counter()
        self.fit_info_ = {
            "timings": {"landmarks": t1 - t0, "cv": t2 - t1, "features": t3 - t2,
                        "train": t4 - t3},
            "selected": {"gamma": self.gamma_, "C": self.C_},
            "cv": cv,
            "model_size": {**linear_model_size(self.coef_, self.intercept_, X.shape[1]),
                           "n_components": int(self.landmarks_.shape[0]),
                           "rank": int(F.shape[1])},
            "landmarks": landmark_info,
        }
        return self
