"""One SGD epoch on the numba kernels (``_sgd_kernel``), and the decision values and the
training objective from precomputed codes (LL-SVM eq. 8, 9; LLC-SAPL eq. 21).

Per step t (counting every step over all epochs), sample i of the epoch's order, rate
η_t = 1/(λ(t + t0)) (:mod:`.sgd_schedule`):

* decision f_c = γᵀ W_c x + γᵀ b_c (LL-SVM eq. 8) for every class c
  (one-vs-all, shared anchors and codes: LLC-SAPL eq. 21);
* if 1 - y_c f_c > 0:  W_c[active] += η y_c γ xᵀ (eq. 11; skipped when
  ``use_W`` is False = LCC+SVM) and b_c[active] += η·bias_scale·y_c γ (eq. 12 with
  SVMSGD2's bias-corrected rate);
* every ``skip`` steps W *= r, r = 1 - skip/(t + t0) (eq. 13), or
  (1 - 1/(t + t0))^skip when r < 0.8 (SVMSGD2); b instead of W when ``use_W`` is
  False (b is then the weight vector, LLC-SAPL §3.3).

Anchor learning (LLC-SAPL Alg. 1, LLC-JO Alg. 2; :func:`sgd_epoch_anchors`): the codes
are recomputed from the current anchors at every step (the kernel computes the distances
to all m anchors); on a violation of any output the active anchors move *first*, with the
pre-update W, b (docs/design.md §Trainers):

    v_j += η_t · anchor_scale · Σ_{c: 1 - y_c f_c > 0} y_c ∂f_c/∂v_j      (SAPL eq. 16, 21)

with ∂f/∂v_j = 2β γ_j (h_j - f)(x - v_j) for soft_knn and
2μ (h_j - f)(x - v_j)/Σ_l(λ - η_l) for adaptive_knn (λ frozen, JO eq. 22); then
W and b move with the codes of that step (computed before the anchors moved, as
Alg. 1 computes γ once per iteration).  One set of anchors is shared by all
one-vs-all outputs (SAPL eq. 21).  Anchors are not regularised.  ``anchor_scale``
(default 1) multiplies the anchor rate only: η_t = 1/(λ(t + t0)) is tuned for
W, and the anchors live on the scale of x; in practice the stable range runs from
~1e-2 (banana, β ≈ 6) to ~3 (ijcnn), so the presets tune it per dataset — beyond
it the anchors overshoot x and the model collapses within an epoch (the step is
∝ β·anchor_scale, so the stable anchor_scale scales like 1/β).  ``anchor_step_max``
(not in the papers, off by default) is a trust region: it clips the fraction c of
v_j += c (x - v_j) to [-max, max].

The same steps in plain numpy are in the tests (``tests/models/reference_sgd.py``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..coding.local import LocalCode
from ..data.rows import StoredRows
from . import _sgd_kernel as K
from .objective import objective, ova_hinge


def labels_matrix(y_idx: np.ndarray, n_classes: int) -> np.ndarray:
    """±1 targets (n, n_out): one column (class 1 positive) for 2 classes, else one per class."""
    if n_classes == 2:
        return np.where(y_idx == 1, 1.0, -1.0)[:, None].copy()
    Y = -np.ones((y_idx.shape[0], n_classes))
    Y[np.arange(y_idx.shape[0]), y_idx] = 1.0
    return Y


def anchor_major(W: np.ndarray, dtype=None) -> np.ndarray:
    """W (C, m, D) as the kernels read it: (m, C, D), C-contiguous, always a copy (with
    C = 1 or m = 1 the transposed view is already contiguous and would alias W), in
    ``dtype`` (None: W's; float32 = the ``sgd_dtype`` option)."""
    return np.array(W.transpose(1, 0, 2), dtype=dtype, order="C", copy=True)


def run_epoch(X, Y, code: LocalCode, order, W, b, t, count, **kw):
    """One epoch with the numba kernel (dense or CSR X, or ``StoredRows``: stored rows
    scaled as read); W (C, m, D), b in place; returns (t, count)."""
    Wa = anchor_major(W)
    t, count = sgd_epoch(X, Y, code, order, Wa, b, t, count, **kw)
    W[...] = Wa.transpose(1, 0, 2)
    return t, count


def run_epoch_anchors(X, Y, order, V, W, b, t, count, coding, **kw):
    """One learned-anchor epoch with the numba kernel (dense or CSR X); W (C, m, D), b,
    V in place.  Returns (t, count, k* per step)."""
    Wa = anchor_major(W)
    t, count, ks = sgd_epoch_anchors(X, Y, order, V, Wa, b, t, count, coding, **kw)
    W[...] = Wa.transpose(1, 0, 2)
    return t, count, ks


def sgd_epoch(
    X, Y, code: LocalCode, order, Wa, b, t, count, *, lambda_, t0, skip, bias_scale, use_W=True
):
    """:func:`run_epoch` on an anchor-major Wa (:func:`anchor_major`)."""
    order = np.ascontiguousarray(order, dtype=np.int64)
    table = None
    if isinstance(X, StoredRows):
        X, table = X.raw, X.table
    args = (Y, code.indices, code.weights, order, Wa, b, float(lambda_), float(t0), int(t),
            int(count), int(skip), float(bias_scale), bool(use_W))
    if sp.issparse(X):
        return K.sgd_epoch_csr(X.data, X.indices, X.indptr, *args)
    return K.sgd_epoch_dense(X, *args, table)


def sgd_epoch_anchors(
    X, Y, order, V, Wa, b, t, count, coding, *, lambda_, t0, skip, bias_scale, use_W=True,
    anchor_scale=1.0, anchor_step_max=None,
):
    """:func:`run_epoch_anchors` on an anchor-major Wa (:func:`anchor_major`)."""
    kind, param, k = coding.kernel_args()
    k = min(k, V.shape[0])
    order = np.ascontiguousarray(order, dtype=np.int64)
    ks = np.empty(order.shape[0], dtype=np.int64)
    rows = (X,)
    kernel = K.sgd_epoch_anchors_dense
    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_canonical_format:  # ||x||² of the kernel needs summed duplicates
            X = X.copy()
            X.sum_duplicates()
        rows, kernel = (X.data, X.indices, X.indptr), K.sgd_epoch_anchors_csr
    t, count = kernel(
        *rows, Y, order, V, Wa, b, float(lambda_), float(t0), int(t), int(count), int(skip),
        float(bias_scale), bool(use_W), int(kind), float(param), int(k), float(anchor_scale), ks,
        1e300 if anchor_step_max is None else float(anchor_step_max),  # finite: fastmath
    )
    return t, count, ks


def decision_from_codes(X, code: LocalCode, W, b, use_W=True) -> np.ndarray:
    """(n, n_out) decision values for precomputed codes (numba; used for the history)."""
    Wa = anchor_major(W)
    if sp.issparse(X):
        return K.decision_codes_csr(
            X.data, X.indices, X.indptr, code.indices, code.weights, Wa, b, bool(use_W)
        )
    return K.decision_codes_dense(X, code.indices, code.weights, Wa, b, bool(use_W))


def sgd_objective(X, Y, code: LocalCode, W, b, lambda_, use_W=True) -> tuple[float, np.ndarray]:
    """(the training objective, F): :func:`objective.objective` of the one-vs-all hinge
    (LL-SVM eq. 9, LLC-SAPL eq. 21; θ = W, or b for LCC+SVM) and the decision values F."""
    F = decision_from_codes(X, code, W, b, use_W)
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN: see check_finite_fit
        losses = ova_hinge(Y, F)
    return objective(lambda_, W if use_W else b, losses), F
