"""Anchors and local codings γ(x) (DESIGN §3)."""

from .anchors import ANCHOR_METHODS, MINIBATCH_THRESHOLD, fit_anchors
from .local import (
    CODINGS,
    InverseDistanceCoding,
    LocalCode,
    LocalCoding,
    SoftKNNCoding,
    knn_sq_distances,
    make_coding,
)

__all__ = [
    "ANCHOR_METHODS",
    "CODINGS",
    "MINIBATCH_THRESHOLD",
    "InverseDistanceCoding",
    "LocalCode",
    "LocalCoding",
    "SoftKNNCoding",
    "fit_anchors",
    "knn_sq_distances",
    "make_coding",
]
