"""Orthogonal coordinate coding (OCC; Zhang, Ladický, Torr & Saffari, NIPS 2011).

Basis (§2.3, step I).  The paper's data matrix X is d×N (one *column* per
sample) with SVD X = VΣU, and C = V_{d×M} Σ_{M×M}: its "left" singular vectors
live in feature space.  Our matrices hold one sample per *row* (N×D), so the
same vectors are the *right* singular vectors of the N×D matrix (the
eigenvectors of XᵀX).  The SVD is of X as given, uncentred (the paper: raw
features; whether X is raw or standardised is the dataset's ``scaling``).

Coding (§2.3, step II; Definition 4).  With orthogonal columns,
γ̃ = (CᵀC)⁻¹Cᵀx gives γ̃_v(x) = v̄ᵀx / σ_v, then γ = γ̃ / ||γ̃||₁ — a dense,
signed code with unit l1 norm (a row with γ̃ = 0, e.g. x = 0, gets γ = 0).

M is at most the rank of the data matrix (§2.2); a larger request is capped
to the numerical rank (singular values above σ_max·max(N, D)·eps, NumPy's
``matrix_rank`` rule) and the capped value is kept in :class:`OCCBasis`.

SVD method (``svd``): "full" = LAPACK gesdd (``scipy.linalg.svd``, thin);
"randomized" = Halko et al.'s randomized SVD (``sklearn.utils.extmath.
randomized_svd``, seeded, 10 + M oversamples, 7 power iterations), also the
only choice for CSR input; "auto" = full up to ``RANDOMIZED_ABOVE`` entries of
the N×D matrix, randomized above (MNIST's 60000×784 = 47M entries).

G-OCC uses the whole training matrix; C-OCC one basis per one-vs-all problem,
from that problem's positive training rows only (§4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.utils.extmath import randomized_svd

from ..errors import ConfigError
from .local import LocalCode

SVD_METHODS = ("auto", "full", "randomized")
#: N·D above which ``svd="auto"`` uses the randomized SVD.
RANDOMIZED_ABOVE = 20_000_000
VARIANTS = ("global", "class")


@dataclass
class OCCBasis:
    """M orthonormal basis vectors v̄ (rows, (M, D)) and their singular values σ (M,)."""

    vectors: np.ndarray
    singular_values: np.ndarray
    requested: int  # the M asked for
    rank: int  # numerical rank (randomized SVD: of the M computed, a lower bound)
    method: str  # "full" or "randomized"
    n_rows: int  # rows of the data matrix

    @property
    def M(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def planes(self) -> np.ndarray:
        """The paper's C = V Σ as rows (M, D): v̄_v σ_v, the normals of the anchor planes."""
        return self.vectors * self.singular_values[:, None]

    def encode(self, X) -> np.ndarray:
        """γ (n, M): γ̃ = V̄ᵀx / σ, then γ = γ̃ / ||γ̃||₁ (OCC §2.3 II)."""
        return occ_codes(X, self.vectors, self.singular_values)

    def info(self) -> dict:
        return {"requested": self.requested, "M": self.M, "rank": self.rank,
                "svd": self.method, "n_rows": self.n_rows}


def occ_codes(X, vectors: np.ndarray, singular_values: np.ndarray) -> np.ndarray:
    """γ = γ̃ / ||γ̃||₁ with γ̃ = X V̄ᵀ / σ; rows with γ̃ = 0 stay 0.  X dense or CSR."""
    G = np.asarray(X @ vectors.T, dtype=np.float64)
    G /= singular_values
    norm = np.abs(G).sum(axis=1, keepdims=True)
    np.divide(G, norm, out=G, where=norm > 0)
    return G


def numerical_rank(s: np.ndarray, shape: tuple[int, int]) -> int:
    """Singular values above s_max·max(N, D)·eps (``numpy.linalg.matrix_rank``'s tolerance)."""
    if s.size == 0 or s[0] <= 0:
        return 0
    return int(np.sum(s > s[0] * max(shape) * np.finfo(np.float64).eps))


def _sign_convention(Vt: np.ndarray) -> np.ndarray:
    """Each vector's largest-|.| entry positive (makes the basis independent of LAPACK)."""
    pick = np.argmax(np.abs(Vt), axis=1)
    signs = np.sign(Vt[np.arange(Vt.shape[0]), pick])
    signs[signs == 0] = 1.0
    return Vt * signs[:, None]


def fit_basis(X, n_basis: int, svd: str = "auto", random_state=None) -> OCCBasis:
    """The top-M basis of X (N×D, rows = samples): right singular vectors, σ descending."""
    if svd not in SVD_METHODS:
        raise ConfigError(f"svd must be one of {SVD_METHODS}, got {svd!r}")
    if int(n_basis) < 1:
        raise ConfigError(f"n_basis must be >= 1, got {n_basis!r}")
    n, D = X.shape
    full_rank = min(n, D)
    method = svd
    if svd == "auto":
        method = "randomized" if sp.issparse(X) or n * D > RANDOMIZED_ABOVE else "full"
    if method == "full":
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        s, Vt = scipy.linalg.svd(Xd, full_matrices=False, lapack_driver="gesdd")[1:]
        rank = numerical_rank(s, (n, D))
    else:
        k = min(int(n_basis), full_rank)
        _, s, Vt = randomized_svd(X, k, n_oversamples=10 + k, n_iter=7,
                                  random_state=random_state)
        rank = numerical_rank(s, (n, D))  # of the k computed: a lower bound of the rank
    M = min(int(n_basis), rank)
    Vt = _sign_convention(np.ascontiguousarray(Vt[:M], dtype=np.float64))
    return OCCBasis(Vt, np.asarray(s[:M], dtype=np.float64), int(n_basis), rank, method, n)


def fit_bases(X, y_idx: np.ndarray, n_classes: int, variant: str, n_basis: int,
              svd: str = "auto", random_state=None) -> list[OCCBasis]:
    """G-OCC: [basis of all rows]; C-OCC: one basis per one-vs-all problem from its
    positive rows (one problem, positive = class 1, when there are two classes)."""
    if variant not in VARIANTS:
        raise ConfigError(f"OCC variant must be one of {VARIANTS}, got {variant!r}")
    if variant == "global":
        return [fit_basis(X, n_basis, svd, random_state)]
    positives = [1] if n_classes == 2 else range(n_classes)
    return [fit_basis(X[np.flatnonzero(y_idx == c)], n_basis, svd, random_state)
            for c in positives]


def as_local_code(G: np.ndarray) -> LocalCode:
    """Dense codes (n, M) as a :class:`LocalCode` with k = M (every basis vector active)."""
    n, M = G.shape
    idx = np.broadcast_to(np.arange(M, dtype=np.int32), (n, M)).copy()
    return LocalCode(idx, np.ascontiguousarray(G, dtype=np.float64))
