"""Locality-constrained linear coding (LLC), the codes of ``model=lcc_svm_lcc``.

Local Coordinate Coding (LCC; Yu, Zhang & Gong, NIPS 2009) codes x by weights
γ_v(x) over anchors v with Σ_v γ_v = 1 that reconstruct x from *nearby*
anchors (their problem: ||x - Σ γ_v v||² + μ Σ |γ_v| ||v - x||², a LASSO per
sample).  We use instead the **LLC approximated fast encoding** of Wang, Yang,
Yu, Lv, Huang & Gong (CVPR 2010, "Locality-constrained Linear Coding for Image
Classification", §3, the approximated fast encoding), which the LLC paper
presents as the fast approximation of LCC: for each x, with B_x the k nearest
anchors (rows, k × D),

    C = (B_x - 1xᵀ)(B_x - 1xᵀ)ᵀ          (k × k, the local covariance)
    solve (C + reg · tr(C) · I) c = 1,   γ_{B_x} = c / Σ c,   γ = 0 elsewhere.

This is min_c ||x - cᵀB_x||² + reg·tr(C)·||c||² s.t. 1ᵀc = 1 (locality by the
k-NN restriction, the ridge term scaled to C so the result does not depend on
the scale of the data).  Wang et al.'s defaults: k = 5, reg ("beta") = 1e-4.

Properties (checked in ``tests/models/test_lcc_linear.py``): rows sum to 1, k
non-zeros, weights *may be negative* (unlike the other codings of
:mod:`llc_bench.coding.local`); invariant to translating and scaling x and the
anchors together.  A sample on an anchor gets weight 1 - O(k² · reg) on it when
its k nearest anchors are affinely independent (k ≤ D + 1); with k > D + 1 the
reconstruction is exact along a whole affine family of c and the ridge term
spreads the weight (e.g. banana, D = 2, wants k ≤ 3).  If all k nearest
anchors coincide with x (tr(C) = 0: duplicated anchors), the weights are
uniform.

Vectorised: the k-NN is :func:`llc_bench.coding.local.knn_sq_distances`
(BLAS distances + argpartition); the n systems of size k × k are solved at once
by ``np.linalg.solve`` on a stacked (rows, k, k) array, in row chunks of at
most ``CHUNK_ENTRIES`` entries of B_x - 1xᵀ (no Python loop over rows).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from . import local
from .local import LocalCode, knn_sq_distances


def llc_codes(X, anchors: np.ndarray, k: int = 5, reg: float = 1e-4,
              keep_distances: bool = False, memo: list | None = None) -> LocalCode:
    """LLC codes (Wang et al. 2010, approximated fast encoding) of every row of ``X``.

    ``X`` dense (n, D) or CSR; ``anchors`` (m, D).  Returns a :class:`LocalCode`
    with indices (n, k) ascending per row and weights (n, k) summing to 1 per
    row (possibly negative); ``k`` is capped at m.  ``memo``: the neighbour searches
    shared (:func:`~llc_bench.coding.local.knn_sq_distances`).
    """
    anchors = np.ascontiguousarray(anchors, dtype=np.float64)
    m, D = anchors.shape
    if not float(reg) > 0:  # reg = 0 leaves C singular for k > D + 1 or an exact hit
        raise ConfigError(f"llc reg must be > 0, got {reg!r}")
    k = min(int(k), m)
    idx, d, _ = knn_sq_distances(X, anchors, k, memo=memo)
    n = idx.shape[0]
    if sp.issparse(X):
        X = X.tocsr()
    weights = np.empty((n, k))
    ones = np.ones((1, k, 1))
    eye = np.eye(k)
    chunk = max(1, local.CHUNK_ENTRIES // (k * D))
    for start in range(0, n, chunk):  # chunks of rows; the rows of a chunk are one batch
        stop = min(n, start + chunk)
        Xc = X[start:stop]
        Xc = Xc.toarray() if sp.issparse(Xc) else np.asarray(Xc, dtype=np.float64)
        Z = anchors[idx[start:stop]] - Xc[:, None, :]  # B_x - 1xᵀ, (c, k, D)
        C = np.matmul(Z, Z.transpose(0, 2, 1))  # (c, k, k)
        tr = np.trace(C, axis1=1, axis2=2)
        C += (reg * tr)[:, None, None] * eye
        C[tr <= 0] = eye  # x on all k anchors (duplicates): uniform weights
        c = np.linalg.solve(C, np.broadcast_to(ones, (stop - start, k, 1)))[:, :, 0]
        weights[start:stop] = c / c.sum(axis=1, keepdims=True)
    return LocalCode(idx, weights, d if keep_distances else None)
