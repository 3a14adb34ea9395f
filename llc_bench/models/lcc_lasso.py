"""Linear SVM on LCC's own codes: the "LCC (512 / 4096 a.p.)" cells (``model=lcc_lasso``).

Yu, Zhang & Gong (NIPS 2009): the codes γ(x) of (L1) in :mod:`llc_bench.coding.lcc` (the
weighted LASSO ||x - Σ γ_v v||² + μ Σ |γ_v| ||v - x||², solved exactly over all anchors), a
linear SVM on them (their linearisation f(x) ≈ Σ_v γ_v(x) f(v); LL-SVM eq. 15; the
classifier is :class:`~llc_bench.models.coded_svm.CodedLinearSVM`: LIBLINEAR, C by CV on
the training codes).  Anchors: k-means on the training split (the OCC paper: "the anchor
points are found using K-Means"), then ``n_anchor_updates`` rounds of LCC's own
alternating optimisation (codes, then the codebook step (L7); 0: the k-means anchors).
"""

from __future__ import annotations

from ..coding.lcc import lcc_codes, lcc_objective, update_anchors
from ._base import store_params
from ._validation import COUNT, COUNT0, POSITIVE
from .coded_svm import SVM_CONSTRAINTS, CodedLinearSVM
from .linear import DEFAULT_C_GRID


class LCCLassoSVMClassifier(CodedLinearSVM):
    """Linear SVM (LIBLINEAR) on LCC codes (Yu, Zhang & Gong 2009) over k-means anchors.

    Parameters
    ----------
    n_anchors : int, default 512
        m, k-means anchors (capped at the number of training rows).
    mu : float, default 0.3
        μ, the weight of LCC's locality term μ Σ_v |γ_v| ||v - x||².
    n_candidates : int, default 32
        Nearest anchors of the first working set (the codes do not depend on it).
    tol : float, default 1e-6
        Coordinate descent stops when no step moves Σ γ_v v by more than tol · ||x||.
    max_sweeps : int, default 10000
        Coordinate sweeps per working set.
    n_anchor_updates : int, default 0
        Rounds of LCC's alternating optimisation of the anchors after k-means.
    anchor_method, C, C_grid, cv_folds, solver, bias, random_state
        The anchors' and the linear SVM's, as
        :class:`~llc_bench.models.lcc_linear.LCCLinearSVMClassifier` takes them.
    """

    #: the declared search space (conf/search/lcc_lasso.yaml) SearchCV takes by default
    search_space = "lcc_lasso"

    _parameter_constraints = {"n_anchors": [COUNT], "mu": [POSITIVE], "n_candidates": [COUNT],
                              "tol": [POSITIVE], "max_sweeps": [COUNT],
                              "n_anchor_updates": [COUNT0], **SVM_CONSTRAINTS}

    def __init__(self, *, n_anchors=512, mu=0.3, n_candidates=32, tol=1e-6, max_sweeps=10000,
                 n_anchor_updates=0, anchor_method="kmeans", C=None, C_grid=DEFAULT_C_GRID,
                 cv_folds=5, solver="l2_hinge", bias=1.0, random_state=0):
        store_params(self, locals())

    def _fit_coding(self, X):
        """LCC's alternating optimisation (L6): codes, then the codebook step (L7)."""
        self.objective_ = []
        for _ in range(self.n_anchor_updates):
            Z = self._codes(X)
            self.anchors_ = update_anchors(X, Z, self.anchors_, self.mu)
            self.objective_.append(lcc_objective(X, Z, self.anchors_, self.mu) / X.shape[0])

    def _codes(self, X, info=None, memo=None):
        """The (n, m) CSR matrix of LCC codes of X (no neighbour search: ``memo`` unused)."""
        return lcc_codes(X, self.anchors_, self.mu, self.n_candidates, self.tol, self.max_sweeps,
                         info=info)

    def _coding_info(self, counts):
        return {"name": "lcc", "formulation": "LCC (Yu, Zhang & Gong 2009) without sum-to-one: "
                "argmin ||x - sum g_v v||^2 + mu sum |g_v| ||v - x||^2, exact over all anchors",
                "mu": float(self.mu), "n_candidates": int(self.n_candidates),
                "tol": float(self.tol), "features": "codes", "train_codes": counts,
                "anchor_updates": int(self.n_anchor_updates),
                "objective_per_row": [float(v) for v in self.objective_]}
