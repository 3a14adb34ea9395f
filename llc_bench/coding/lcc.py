"""Local Coordinate Coding (LCC; Yu, Zhang & Gong, NIPS 2009), the codes of ``model=lcc_lasso``.

A coordinate coding codes x by weights γ_v(x) over anchors v ∈ C, with the physical
approximation γ(x) = Σ_v γ_v(x) v; LCC's linearisation lemma bounds the error of
f(x) ≈ Σ_v γ_v(x) f(v) by α||x - γ(x)|| + β Σ_v |γ_v(x)| ||v - γ(x)||^{1+p} (as the OCC paper,
Zhang et al. NIPS 2011, restates them: §2.1, Definition 2 and Lemma 1).  LCC's practical
coding (OCC paper §2.3: "LCC simplifies the localization error term by assuming γ(x) = x
and p = 1") is, per x,

    (L1)  γ(x) = argmin_γ ||x - Σ_v γ_v v||² + μ Σ_v |γ_v| ||v - x||².

**Variant run here**: (L1) without the sum-to-one constraint Σ_v γ_v = 1.  The OCC paper
writes the constraint under the joint problem (L6) but calls the γ-step "a canonical
LASSO problem", which (L1) is without it (γ_v = u_v / (μ d_v) turns the weighted penalty
into ||u||_1 over atoms v / (μ d_v)); mlpack's LCC drops it too.  Only the abstract of the
LCC paper was at hand, so which of the two its experiments ran is not verified.  The
linear SVM on the codes keeps a bias (LIBLINEAR ``-B``), the constant Σ γ_v = 1 would give.

Solved per row with B (m × D) the anchors, G = B Bᵀ, c = B x, d_v = ||v - x||²:

    (L2)  min_γ ½ γᵀGγ - cᵀγ + Σ_v λ_v |γ_v|,   λ_v = (μ/2) d_v     ((L1) / 2, less ||x||²/2)
    (L3)  coordinate descent: γ_j ← S(c_j - Σ_{k≠j} G_jk γ_k, λ_j) / G_jj,  S the soft threshold,
          cyclic over a working set, until no step moves B γ by more than tol · ||x||;
    (L4)  KKT of (L2): |c_v - (Gγ)_v| ≤ λ_v where γ_v = 0, c_v - (Gγ)_v = λ_v sign(γ_v) else.

The working set starts as the ``n_candidates`` nearest anchors; after (L3) converges, every
anchor outside it is tested against (L4) (its coordinate step would move Bγ by more than
tol · ||x||), the violators join, and (L3) resumes (``MAX_EXPANSIONS``).  So the codes are
those of (L2) over *all* m anchors — a larger candidate set changes them by no more than
the stopping tolerance (tested) — and the candidate set only sets the speed.  A point
equal to an anchor v gets γ = e_v (objective 0 with λ_v = 0; unique unless anchors repeat).

(L5) speeds (L3) up: every ``POLISH_EVERY`` sweeps the non-zeros A and their signs s are
taken as final, γ_A = G_AA⁻¹ (c_A - λ_A s) (Cholesky), and kept when no sign flips and
(L4) holds on the set.  Coordinate descent alone crawls where the active anchors are
affinely dependent (three active anchors in 2-D: G_AA singular, (L5) refused), hence the
high ``max_sweeps``.

Anchors: k-means, then optionally LCC's own alternating optimisation of the joint problem

    (L6)  min_{γ, C} Σ_x [ ||x - Σ_v γ_v(x) v||² + μ Σ_v |γ_v(x)| ||v - x||² ] + λ Σ_v ||v||²

(the OCC paper's restatement: "they update C and γ via alternating optimization ... the
step of updating C is a least squares problem"): ``n_anchor_updates`` rounds of codes on
the training rows, then (L7) :func:`update_anchors`.

Vectorised around the kernel (:mod:`llc_bench.coding._lcc_kernel`, numba): rows in chunks
of ``CHUNK_ENTRIES / m``; per chunk one BLAS product X Bᵀ gives c and the distances; the
Gram matrix is computed once per call (m² doubles: 134 MB at m = 4096).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from . import local
from ._lcc_kernel import lcc_rows
from .local import row_sq_norms


def lcc_codes(X, anchors: np.ndarray, mu: float, n_candidates: int = 64, tol: float = 1e-6,
              max_sweeps: int = 10000, info: dict | None = None) -> sp.csr_matrix:
    """LCC codes (L1) of every row of ``X`` (dense (n, D) or CSR) over ``anchors`` (m, D).

    Returns the (n, m) CSR matrix of γ (the zeros of the LASSO dropped).  ``info``, when
    given, receives the kernel's counts: rows whose working set grew beyond the candidates,
    coordinate sweeps, rows stopped before converging, and the mean non-zeros per row.
    """
    if not float(mu) > 0:
        raise ConfigError(f"lcc mu must be > 0, got {mu!r}")
    B = np.ascontiguousarray(anchors, dtype=np.float64)
    m = B.shape[0]
    K = min(int(n_candidates), m)
    G = B @ B.T
    vv = np.ascontiguousarray(np.diag(G))
    if sp.issparse(X):
        X = X.tocsr()
    n = X.shape[0]
    stats = np.zeros(3, dtype=np.int64)
    chunk = max(1, local.CHUNK_ENTRIES // m)
    blocks = []
    for start in range(0, n, chunk):  # chunks of rows, each one BLAS product
        Xc = X[start:start + chunk]
        xx = row_sq_norms(Xc)
        C = np.ascontiguousarray(np.asarray(Xc @ B.T))
        D = xx[:, None] - 2.0 * C + vv[None, :]
        np.maximum(D, 0.0, out=D)
        cand = np.argpartition(D, K - 1, axis=1)[:, :K] if K < m else np.tile(np.arange(m),
                                                                              (len(D), 1))
        cand = np.take_along_axis(cand, np.argsort(np.take_along_axis(D, cand, axis=1),
                                                   axis=1, kind="stable"), axis=1)
        out = np.zeros_like(C)
        lcc_rows(G, C, D, np.ascontiguousarray(cand, dtype=np.int64), np.sqrt(xx),
                 0.5 * float(mu), float(tol), int(max_sweeps), out, stats)
        blocks.append(sp.csr_matrix(out))
    Z = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, m))
    if info is not None:
        info.update({"rows_expanded": int(stats[0]), "sweeps": int(stats[1]),
                     "not_converged": int(stats[2]),
                     "mean_nnz": float(Z.nnz / max(1, n))})
    return Z


def lcc_objective(X, Z: sp.csr_matrix, anchors: np.ndarray, mu: float) -> float:
    """(L6) summed over the rows: Σ_x ||x - Σ γ_v v||² + μ Σ_v |γ_v| ||v - x||²."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    A = abs(Z)
    recon = float(((X - Z @ anchors) ** 2).sum())
    local_ = (float(np.asarray(A.sum(axis=1)).ravel() @ row_sq_norms(X))
              - 2.0 * float(np.einsum("ij,ij->", X, A @ anchors))
              + float(np.asarray(A.sum(axis=0)).ravel() @ (anchors ** 2).sum(axis=1)))
    return recon + float(mu) * local_


def update_anchors(X, Z: sp.csr_matrix, anchors: np.ndarray, mu: float) -> np.ndarray:
    """LCC's codebook step (L7): the anchors minimising (L6) for fixed codes Γ (n × m),

        (ΓᵀΓ + μ diag(a)) V = (Γ + μ|Γ|)ᵀ X,   a_v = Σ_x |γ_v(x)|,

    with their λ Σ_v ||v||² at λ = 0; an anchor that no code uses stays where it is.
    """
    A = abs(Z)
    a = np.asarray(A.sum(axis=0)).ravel()
    M = np.asarray((Z.T @ Z).todense()) + float(mu) * np.diag(a)
    rhs = np.asarray((Z + float(mu) * A).T @ X)
    unused = a <= 0.0
    M[unused] = 0.0
    M[:, unused] = 0.0
    M[unused, unused] = 1.0
    rhs[unused] = anchors[unused]
    return np.ascontiguousarray(np.linalg.solve(M, rhs))
