"""Anchors and local codings γ(x) (docs/design.md §Local codings)."""

from .anchors import ANCHOR_METHODS, MINIBATCH_THRESHOLD, fit_anchors
from .local import (
    CODINGS,
    LEARNABLE_CODINGS,
    AdaptiveKNNCoding,
    InverseDistanceCoding,
    LocalCode,
    LocalCoding,
    SoftKNNCoding,
    adaptive_knn_weights,
    anchor_gradient,
    knn_sq_distances,
    make_coding,
)
from .occ import OCCBasis, as_local_code, fit_bases, fit_basis, occ_codes

__all__ = [
    "ANCHOR_METHODS",
    "CODINGS",
    "LEARNABLE_CODINGS",
    "AdaptiveKNNCoding",
    "MINIBATCH_THRESHOLD",
    "InverseDistanceCoding",
    "LocalCode",
    "LocalCoding",
    "SoftKNNCoding",
    "adaptive_knn_weights",
    "anchor_gradient",
    "fit_anchors",
    "knn_sq_distances",
    "make_coding",
    "OCCBasis",
    "as_local_code",
    "fit_bases",
    "fit_basis",
    "occ_codes",
]
