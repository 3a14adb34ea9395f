"""Local codings γ(x) over m anchors (docs/design.md §Local codings).

A coding maps each sample to its k active anchors and their weights (k values,
non-negative, summing to 1), stored as two arrays of shape (n, k):
``indices`` (int32, ascending per row) and ``weights`` (float64).  With fixed
anchors the training codes are computed once and kept (LL-SVM paper, end of §3).

Batch encoding (:func:`knn_sq_distances`) computes squared distances with BLAS,
``d = ||x||² - 2 x·v + ||v||²`` (clipped at 0), and picks the k nearest with
``np.argpartition``; it works on dense arrays and scipy CSR matrices, in row
chunks so the n×m distance block stays small.

Codings here:

* ``inverse_distance`` — LL-SVM (Ladický & Torr 2011, §4; van Gemert et al.
  2008): k nearest, γ_j ∝ 1/||x - v_j||^p, p = 1 (the paper); p = 2 is the
  released code's variant 1/||x - v||².  A sample on an anchor gets all weight
  on it (see ``HIT_RTOL``).
* ``soft_knn`` — LLC-SAPL eq. 2, the "localized soft assignment": k nearest,
  γ_j = exp(-β d_j) / Σ_l exp(-β d_l), computed as exp(-β (d_j - d_min)) so
  the largest term is exactly 1 (no underflow for any β).  With a numeric β it is
  also the released LL-SVM code's Gaussian coding exp(-c||x - v||²).

β = "auto" (soft_knn): β = 1 / median_i( mean_{j in N_k(x_i)} (d_ij - d_i,min) )
over (a seeded subsample of ≤ 5000) training rows.  Why: the weights depend only
on β·(d_j - d_min), so this choice makes the typical exponent spread across
the k neighbours equal to 1 — weights neither collapse onto the nearest anchor
(β too large: hard assignment, the LCC coding loses its smoothness) nor become
uniform over the k (β too small: the coding no longer localises) — and it is
invariant to the scale of the data and to the dimension D, which a fixed
number such as β = 1 is not (squared distances grow with D after standard
scaling).

* ``adaptive_knn`` — LLC-JO Alg. 1, the k*-NN rule (Anava & Levy 2016; docs/design.md
  §Local codings): η_i = μ d_(i), the squared distances of the nearest anchors in ascending
  order scaled by μ ("the Lipschitz to noise ratio"); grow k while
  λ_k > η_{k+1}, with λ_k = (1/k)(Σ_{i≤k} η_i + sqrt(k + (Σ η_i)² - k Σ η_i²))
  (JO eq. 21 without its stray k*); γ_i = (λ - η_i)/Σ_{j≤k*}(λ - η_j) (eq. 19)
  for i ≤ k*, 0 beyond.  Choices: d is the *squared* distance (JO §4.1 "we adopt
  squared Euclidean distance", and the authors' code scales squared distances
  by μ, docs/design.md §Released code); ``k`` is an upper bound on k* (rows of k slots, the unused
  ones padded with weight 0; k* = k when the rule would go further), so a code
  has the same shape as the fixed-k codings and the prediction cost stays
  O(k).  η is shifted by η_1 before the rule (λ shifts with it, the weights are
  unchanged) to keep the sums small.  The per-row k* is ``LocalCode.n_active``.

Anchor gradients (LLC-SAPL, LLC-JO; docs/design.md §Local codings).  With h_j = W_j x + b_j and
f = Σ_j γ_j h_j, for an active anchor v_j:

* soft_knn (SAPL eq. 13-16 simplified):  ∂f/∂v_j = 2β γ_j (h_j - f)(x - v_j);
* adaptive_knn, λ and the active set held fixed (JO eq. 22-23 simplified):
  ∂f/∂v_j = 2μ (h_j - f)(x - v_j) / Σ_l(λ - η_l).

:meth:`LocalCoding.gradient_factors` is the numpy form of the weights and the factors
g_j of ∂f/∂v_j = g_j (h_j - f)(x - v_j) (tests, the reference SGD step); the numba
kernel in ``models/_sgd_kernel.py`` computes the same expressions for the
:attr:`LocalCoding.kernel_kind` a coding names, with the arguments of
:meth:`LocalCoding.kernel_args`.

A new coding is one subclass of :class:`LocalCoding` (its ``name``, its ``options``, its
weights, for ONNX export its ``onnx_weights``, and for learned anchors its kernel kind and
gradient factors), in any module, plus one ``conf/coding/`` file naming it as ``_target_``:
:data:`CODINGS` is every subclass with a name (a subclass registers by being imported; the
runner imports the ``_target_`` of the coding a run names).  Codings with a dense output can
return k = m, and variable-k codings (adaptive_knn's k*) pad their rows with zero weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError

#: A squared distance d ≤ HIT_RTOL·(||x||² + ||v||²) counts as "x is on the anchor".
#: The BLAS expansion of d carries a rounding error of a few ulps of ||x||² + ||v||²;
#: 1e-12 is far above that and corresponds to ||x - v|| ≤ 1e-6·||x|| where the
#: inverse-distance weight of that anchor is already 1 - O(k·1e-6).
HIT_RTOL = 1e-12

#: Number of distance entries (rows × anchors) per chunk of the batch encoder.
CHUNK_ENTRIES = 1 << 21

#: The codings the learned-anchor SGD kernels compute (``_sgd_kernel._weights``).
KERNEL_SOFT_KNN = 1
KERNEL_ADAPTIVE_KNN = 2


@dataclass
class LocalCode:
    """Per sample: the k active anchor indices and their weights (both n×k)."""

    indices: np.ndarray  # int32 (n, k), ascending per row
    weights: np.ndarray  # float64 (n, k), rows sum to 1
    sq_distances: np.ndarray | None = None  # float64 (n, k), the d_j used (optional)
    n_active: np.ndarray | None = None  # int (n,), k* per row (variable-k codings only)

    @property
    def n(self) -> int:
        return self.indices.shape[0]

    @property
    def k(self) -> int:
        return self.indices.shape[1]

    def take(self, rows) -> LocalCode:
        d = None if self.sq_distances is None else self.sq_distances[rows]
        na = None if self.n_active is None else self.n_active[rows]
        return LocalCode(self.indices[rows], self.weights[rows], d, na)

    def to_dense(self, m: int) -> np.ndarray:
        """The (n, m) dense matrix of γ (tests, small data)."""
        G = np.zeros((self.n, m))
        np.put_along_axis(G, self.indices.astype(np.intp), self.weights, axis=1)
        return G


def row_sq_norms(X) -> np.ndarray:
    """||x_i||² for dense or CSR X."""
    if sp.issparse(X):
        X = X.tocsr()
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        return np.bincount(rows, weights=X.data * X.data, minlength=X.shape[0]).astype(np.float64)
    return np.einsum("ij,ij->i", X, X)


#: The bytes of neighbour searches a ``knn_sq_distances`` memo keeps (the most recently used).
MEMO_BYTES = 256 << 20


def knn_sq_distances(
    X, anchors: np.ndarray, k: int, anchor_sq_norms: np.ndarray | None = None,
    memo: list | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k nearest anchors of every row of X.

    Returns ``(indices, d, scale)``: int32 (n, k) ascending per row, the squared
    distances (n, k) clipped at 0, and ``scale`` = ||x||² + ||v||² (n, k), the size
    of the rounding error of d (used to detect exact hits).  ``memo`` (a list, kept by
    the caller: the trials of a search that share the anchors and k share the neighbour
    search of their training and validation rows): on the same array object with equal
    anchors and the same k, copies of what was computed before.
    """
    if memo is not None and anchor_sq_norms is None:
        for i, (X_seen, V_seen, k_seen, found) in enumerate(memo):
            if X_seen is X and k_seen == k and np.array_equal(V_seen, anchors):
                memo.append(memo.pop(i))
                return tuple(a.copy() for a in found)
        found = _knn_sq_distances(X, anchors, k, None)
        memo.append((X, anchors.copy(), k, tuple(a.copy() for a in found)))
        while sum(sum(a.nbytes for a in entry[3]) for entry in memo) > MEMO_BYTES:
            memo.pop(0)
        return found
    return _knn_sq_distances(X, anchors, k, anchor_sq_norms)


def _knn_sq_distances(X, anchors, k, anchor_sq_norms):
    V = anchors
    m = V.shape[0]
    if not 1 <= k <= m:
        raise ConfigError(f"k must be in [1, m={m}], got {k}")
    vv = np.einsum("ij,ij->i", V, V) if anchor_sq_norms is None else anchor_sq_norms
    n = X.shape[0]
    if sp.issparse(X):
        X = X.tocsr()
    idx_out = np.empty((n, k), dtype=np.int32)
    d_out = np.empty((n, k))
    s_out = np.empty((n, k))
    chunk = max(1, CHUNK_ENTRIES // m)
    for start in range(0, n, chunk):  # loop over chunks of rows, not rows
        Xc = X[start : start + chunk]
        xx = row_sq_norms(Xc)
        G = Xc @ V.T  # BLAS (dense) / sparse-dense product (CSR)
        G = np.asarray(G)
        D2 = (-2.0) * G
        D2 += xx[:, None]
        D2 += vv[None, :]
        if k < m:
            part = np.argpartition(D2, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(m), D2.shape)
        part = np.sort(part, axis=1)
        d = np.take_along_axis(D2, part, axis=1)
        np.maximum(d, 0.0, out=d)
        stop = start + Xc.shape[0]
        idx_out[start:stop] = part
        d_out[start:stop] = d
        s_out[start:stop] = xx[:, None] + vv[part]
    return idx_out, d_out, s_out


class LocalCoding:
    """Base class: ``fit`` learns data-driven parameters, ``encode`` codes a batch."""

    name = "base"
    #: Its own parameters, named as the estimators' (``coding_from_params``).
    options: tuple[str, ...] = ()
    #: True when rows hold k* ≤ k non-zeros, padded with zeros.
    variable_k = False
    #: The kind the learned-anchor SGD kernels compute, None without an anchor gradient.
    kernel_kind: int | None = None

    def kernel_param(self) -> float:
        """The one parameter of the kernel's weights (β, μ)."""
        raise NotImplementedError

    def kernel_args(self) -> tuple[int, float, int]:
        """(kind, param, k) of this fitted coding for the learned-anchor SGD kernels."""
        if self.kernel_kind is None:
            raise ConfigError("learn_anchors needs a coding with an anchor gradient "
                              f"({', '.join(LEARNABLE_CODINGS)}), got {self.name!r}")
        return self.kernel_kind, float(self.kernel_param()), int(self.k)

    def onnx_weights(self, g, d: str, *, k: int, xx: str, idx: str, anchors) -> str:
        """The ONNX nodes (``serving.onnx_export``'s graph ``g``) of the weights before they
        are normalised to sum 1, from ``d`` (n, k): the squared distances of the k nearest
        anchors, ascending and clipped at 0; ``xx`` ||x||² (n, 1), ``idx`` the anchors'
        indices (n, k), ``anchors`` the (m, D) array.  Returns the output's name."""
        raise ConfigError(f"ONNX export of the {self.name!r} coding is not implemented "
                          "(its class has no onnx_weights)")

    def gradient_factors(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(γ, g) for one sample's squared distances ``d`` (k,) to its nearest anchors:
        the weights and the factors of ∂f/∂v_j = g_j (h_j - f)(x - v_j)."""
        raise ConfigError(f"no anchor gradient for coding {self.name!r}")

    def __init__(self, k: int = 8):
        self.k = int(k)

    def fit(self, X, anchors: np.ndarray, random_state=None) -> LocalCoding:
        return self

    def weights_from_sq_distances(self, d: np.ndarray, scale: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def encode(self, X, anchors: np.ndarray, keep_distances: bool = False,
               memo: list | None = None) -> LocalCode:
        """The codes of X; ``memo``: the neighbour searches shared (``knn_sq_distances``)."""
        k = min(self.k, anchors.shape[0])
        idx, d, scale = knn_sq_distances(X, anchors, k, memo=memo)
        w = self.weights_from_sq_distances(d, scale)
        return LocalCode(idx, w, d if keep_distances else None)

    def params(self) -> dict:
        """The parameters actually used (for the result record)."""
        return {"name": self.name, "k": self.k}


class InverseDistanceCoding(LocalCoding):
    """LL-SVM: γ_j ∝ 1/||x - v_j||^power over the k nearest; exact hit -> one-hot."""

    name = "inverse_distance"
    options = ("power",)
    #: The numbers its weights use once fitted (checked when a model file is read).
    fitted_numbers = ("power",)

    def __init__(self, k: int = 8, power: float = 1.0):
        super().__init__(k)
        self.power = float(power)

    def weights_from_sq_distances(self, d, scale):
        hit = d <= HIT_RTOL * scale
        with np.errstate(divide="ignore"):
            w = np.where(hit, 0.0, d ** (-0.5 * self.power))
        any_hit = hit.any(axis=1)
        if any_hit.any():
            # all weight on the anchor(s) x sits on (several only for duplicate anchors)
            w[any_hit] = hit[any_hit].astype(np.float64)
        w /= w.sum(axis=1, keepdims=True)
        return w

    def params(self):
        return {**super().params(), "power": self.power}

    def onnx_weights(self, g, d, *, k, xx, idx, anchors):
        vv = np.einsum("ij,ij->i", anchors, anchors)
        scale = g.op("Add", [xx, g.op("Gather", [g.const("vv_flat", vv), idx], "vv_idx")],
                     "hit_scale")
        hit = g.op("LessOrEqual", [d, g.op("Mul", [scale, g.const("rtol", HIT_RTOL)],
                                           "tol")], "hit")
        inv = g.op("Pow", [d, g.const("minus_half_p", -0.5 * self.power)], "inv")
        w0 = g.op("Where", [hit, g.const("zero_b", 0.0), inv], "w0")
        hitf = g.op("Cast", [hit], "hitf", to=g.DOUBLE)
        any_hit = g.op("ReduceMax", [hitf, g.axes(1)], "any_hit", keepdims=1)
        return g.op("Where", [g.op("Cast", [any_hit], "any_hit_b", to=g.BOOL), hitf, w0],
                    "w_raw")


class SoftKNNCoding(LocalCoding):
    """LLC-SAPL eq. 2: γ_j = exp(-β d_j)/Σ_l exp(-β d_l) over the k nearest, stable form.
    β is ``beta`` (or with "auto" one over the median spread of a row's k squared
    distances above its nearest), times ``beta_scale`` (None = 1)."""

    name = "soft_knn"
    options = ("beta", "beta_scale")
    fitted_numbers = ("beta_", "_factor")
    kernel_kind = KERNEL_SOFT_KNN

    def __init__(self, k: int = 8, beta: float | str = "auto", beta_scale: float | None = None,
                 max_fit_rows: int = 5000):
        super().__init__(k)
        self.beta, self.beta_scale = beta, beta_scale
        self.max_fit_rows = max_fit_rows
        if beta != "auto" and not float(beta) > 0:
            raise ConfigError(f"soft_knn beta must be > 0 or 'auto', got {beta!r}")
        if beta_scale is not None and not float(beta_scale) > 0:
            raise ConfigError(f"soft_knn beta_scale must be > 0, got {beta_scale!r}")
        self._factor = 1.0 if beta_scale is None else float(beta_scale)
        self.beta_: float | None = None if beta == "auto" else self._factor * float(beta)

    def fit(self, X, anchors, random_state=None):
        if self.beta != "auto":
            self.beta_ = self._factor * float(self.beta)
            return self
        n = X.shape[0]
        rows = np.arange(n)
        if n > self.max_fit_rows:
            rng = np.random.default_rng(random_state)
            rows = np.sort(rng.choice(n, self.max_fit_rows, replace=False))
        k = min(self.k, anchors.shape[0])
        _, d, _ = knn_sq_distances(X[rows], anchors, k)
        spread = np.median((d - d.min(axis=1, keepdims=True)).mean(axis=1))
        self.beta_ = self._factor * (float(1.0 / spread) if spread > 0 else 1.0)
        return self

    def weights_from_sq_distances(self, d, scale):
        if self.beta_ is None:
            raise ConfigError("soft_knn with beta='auto' must be fitted before encoding")
        # LLC-SAPL eq. (2) with d_min subtracted: the nearest anchor's term is exp(0) = 1
        w = np.exp(-self.beta_ * (d - d.min(axis=1, keepdims=True)))
        w /= w.sum(axis=1, keepdims=True)
        return w

    def params(self):
        return {**super().params(), "beta": self.beta, "beta_scale": self.beta_scale,
                "beta_": self.beta_}

    def kernel_param(self) -> float:
        if self.beta_ is None:
            raise ConfigError("soft_knn with beta='auto' must be fitted before training")
        return self.beta_

    def gradient_factors(self, d):
        d = np.asarray(d, dtype=np.float64)[None, :]
        gam = self.weights_from_sq_distances(d, d)[0]
        return gam, 2.0 * self.beta_ * gam  # SAPL eq. (13)-(16)

    def onnx_weights(self, g, d, *, k, xx, idx, anchors):
        d_min = g.op("ReduceMin", [d, g.axes(1)], "d_min", keepdims=1)
        shifted = g.op("Mul", [g.op("Sub", [d, d_min], "dd"),
                               g.const("minus_beta", -self.beta_)], "bd")
        return g.op("Exp", [shifted], "w_raw")


def adaptive_knn_weights(d: np.ndarray, mu: float):
    """LLC-JO Alg. 1 (the k*-NN rule) on each row of ``d`` (n, k), squared distances of
    the k nearest anchors in any order; k is the cap on k*.

    Returns ``(w, k_star, lam, norm)``: weights (n, k) in the order of ``d`` (0 beyond
    k*), k* (n,), λ = λ_{k*} and norm = Σ_{i≤k*}(λ - η_i) (n,), with η = μ(d - d_min).
    Ties in d are broken by position in the row (the anchor index for ``encode``).
    """
    d = np.asarray(d, dtype=np.float64)
    n, K = d.shape
    order = np.argsort(d, axis=1, kind="stable")
    ds = np.take_along_axis(d, order, axis=1)
    eta = mu * (ds - ds[:, :1])  # η_(1) = 0: λ and η shift together, γ unchanged
    ks = np.arange(1, K + 1, dtype=np.float64)
    s1 = np.cumsum(eta, axis=1)
    s2 = np.cumsum(eta * eta, axis=1)
    # JO eq. (21) for every k: λ_k = (Σ η + sqrt(k + (Σ η)² - k Σ η²)) / k
    lam_k = (s1 + np.sqrt(np.maximum(ks + s1 * s1 - ks * s2, 0.0))) / ks
    # Alg. 1: k grows while λ_k > η_{k+1}; k* = 1 + the number of leading "true"
    grow = lam_k[:, :-1] > eta[:, 1:]
    k_star = 1 + np.cumprod(grow, axis=1).sum(axis=1).astype(np.int64)
    lam = lam_k[np.arange(n), k_star - 1]
    active = ks[None, :] <= k_star[:, None]
    ws = np.where(active, np.maximum(lam[:, None] - eta, 0.0), 0.0)
    norm = ws.sum(axis=1)
    ws /= norm[:, None]  # eq. (19)
    w = np.empty_like(ws)
    np.put_along_axis(w, order, ws, axis=1)
    return w, k_star, lam, norm


class AdaptiveKNNCoding(LocalCoding):
    """LLC-JO Alg. 1: k* nearest anchors per sample (k* ≤ k), γ_i ∝ λ - μ d_i."""

    name = "adaptive_knn"
    options = ("mu",)
    fitted_numbers = ("mu",)
    variable_k = True
    kernel_kind = KERNEL_ADAPTIVE_KNN

    def __init__(self, k: int = 8, mu: float = 1.0):
        super().__init__(k)
        if not float(mu) > 0:
            raise ConfigError(f"adaptive_knn mu must be > 0, got {mu!r}")
        self.mu = float(mu)

    def weights_from_sq_distances(self, d, scale):
        return adaptive_knn_weights(d, self.mu)[0]

    def encode(self, X, anchors, keep_distances=False, memo=None):
        k = min(self.k, anchors.shape[0])
        idx, d, _ = knn_sq_distances(X, anchors, k, memo=memo)
        w, k_star, _, _ = adaptive_knn_weights(d, self.mu)
        return LocalCode(idx, w, d if keep_distances else None, k_star)

    def params(self):
        return {**super().params(), "mu": self.mu, "distance": "squared", "k_is": "upper bound"}

    def kernel_param(self) -> float:
        return self.mu

    def gradient_factors(self, d):
        w, _, _, norm = adaptive_knn_weights(np.asarray(d, dtype=np.float64)[None, :], self.mu)
        gam = w[0]
        return gam, np.where(gam > 0, 2.0 * self.mu / norm[0], 0.0)  # JO eq. (22), λ frozen

    def onnx_weights(self, g, d, *, k, xx, idx, anchors):
        """LLC-JO Alg. 1 on the k sorted squared distances (``adaptive_knn_weights``): λ_k
        for every k by CumSum, k* = 1 + the leading run of λ_k > η_{k+1}, γ ∝ λ_{k*} - η
        over the first k*."""
        first = g.op("Slice", [d, g.axes(0), g.axes(1), g.axes(1)], "d_first")
        eta = g.op("Mul", [g.op("Sub", [d, first], "d_shift"), g.const("mu", self.mu)], "eta")
        ks = g.const("ks", np.arange(1, k + 1, dtype=np.float64)[None, :])
        one = g.const("axis_k", np.array(1, dtype=np.int64))
        s1 = g.op("CumSum", [eta, one], "s1")
        s2 = g.op("CumSum", [g.op("Mul", [eta, eta], "eta2"), one], "s2")
        inner = g.op("Sub", [g.op("Add", [ks, g.op("Mul", [s1, s1], "s1s1")], "k_s1s1"),
                             g.op("Mul", [ks, s2], "k_s2")], "disc")
        root = g.op("Sqrt", [g.op("Max", [inner, g.const("zero", 0.0)], "disc0")], "root")
        lam_k = g.op("Div", [g.op("Add", [s1, root], "s1_root"), ks], "lam_k")   # JO eq. 21
        if k == 1:
            k_star = g.const("k_star1", np.ones((1, 1)))
        else:
            head = g.op("Slice", [lam_k, g.axes(0), g.axes(k - 1), g.axes(1)], "lam_head")
            tail = g.op("Slice", [eta, g.axes(1), g.axes(k), g.axes(1)], "eta_tail")
            stop = g.op("Cast", [g.op("Not", [g.op("Greater", [head, tail], "grow")], "halt")],
                        "halt_f", to=g.DOUBLE)
            leading = g.op("Cast", [g.op("Equal", [g.op("CumSum", [stop, one], "halts"),
                                                   g.const("zero_h", 0.0)], "lead")],
                           "lead_f", to=g.DOUBLE)            # 1 while λ_k > η_{k+1} so far
            k_star = g.op("Add", [g.op("ReduceSum", [leading, g.axes(1)], "n_lead",
                                       keepdims=1), g.const("one_f", 1.0)], "k_star")
        pick = g.op("Cast", [g.op("Sub", [k_star, g.const("one_k", 1.0)], "k_star0")], "k_idx",
                    to=g.INT64)
        lam = g.op("GatherElements", [lam_k, pick], "lam", axis=1)
        active = g.op("LessOrEqual", [ks, k_star], "active")
        raw = g.op("Max", [g.op("Sub", [lam, eta], "lam_eta"), g.const("zero_w", 0.0)],
                   "w_pos")
        return g.op("Where", [active, raw, g.const("zero_a", 0.0)], "w_raw")    # JO eq. 19


def anchor_gradient(coding: LocalCoding, x, V_active, d, h) -> np.ndarray:
    """∂f/∂v_j (k, D) for one sample and one output, λ frozen for adaptive_knn.

    ``x`` (D,), ``V_active`` (k, D) the sample's k nearest anchors, ``d`` (k,) their
    squared distances, ``h`` (k,) the per-anchor outputs h_j = W_j x + b_j.
    Closed forms of docs/design.md §Local codings; anchors with γ_j = 0 (beyond k*) get 0.
    """
    gam, g = coding.gradient_factors(d)
    coef = g * (h - gam @ h)  # g_j (h_j - f)
    return coef[:, None] * (x[None, :] - V_active)


def _subclasses(cls) -> list[type[LocalCoding]]:
    """Every subclass of ``cls`` imported so far, depth first."""
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


class _Codings(Mapping):
    """name -> class of every :class:`LocalCoding` subclass with a ``name`` imported so far
    (read when used: a coding a run's config names registers when the runner imports it)."""

    def _now(self) -> dict[str, type[LocalCoding]]:
        out = {}
        for cls in _subclasses(LocalCoding):
            if cls.__dict__.get("name") not in (None, "base"):
                out.setdefault(cls.name, cls)
        return out

    def __getitem__(self, name):
        return self._now()[name]

    def __iter__(self):
        return iter(self._now())

    def __len__(self):
        return len(self._now())

    def __repr__(self):
        return repr(self._now())


class _Names(Set, Sequence):
    """The names of the codings that ``keep`` accepts, as they are when read (a tuple's
    look: ``in``, iteration, ``join``, repr)."""

    def __init__(self, keep):
        self._keep = keep

    @classmethod
    def _from_iterable(cls, items):  # set operations give plain sets
        return frozenset(items)

    def _now(self) -> tuple[str, ...]:
        return tuple(name for name, cls in CODINGS.items() if self._keep(cls))

    def __contains__(self, name):
        return name in self._now()

    def __iter__(self):
        return iter(self._now())

    def __len__(self):
        return len(self._now())

    def __getitem__(self, i):
        return self._now()[i]

    def __repr__(self):
        return repr(self._now())


#: name -> class, of every coding class imported (see the module's docstring).
CODINGS: Mapping[str, type[LocalCoding]] = _Codings()

#: The names of the codings (for a parameter's constraint: ``StrOptions(CODING_NAMES)``).
CODING_NAMES = _Names(lambda cls: True)

#: Codings with a closed-form anchor gradient (``learn_anchors``).
LEARNABLE_CODINGS = _Names(lambda cls: cls.kernel_kind is not None)


def make_coding(name: str, k: int = 8, **options) -> LocalCoding:
    """Build a coding by name; ``options`` are its own parameters (beta, power, ...)."""
    try:
        cls = CODINGS[name]
    except KeyError:
        raise ConfigError(f"unknown coding {name!r}; choose one of {sorted(CODINGS)}") from None
    return cls(k=k, **options)


def coding_from_params(name: str, k: int, params) -> LocalCoding:
    """The coding ``name`` with its own options read from ``params`` (an estimator's
    parameters: ``beta``, ``power``, ``mu``, ...)."""
    cls = CODINGS.get(name)
    return make_coding(name, k=k, **({o: params[o] for o in cls.options} if cls else {}))
