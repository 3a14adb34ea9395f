"""One wrapper around liblinear-official, shared by every model that calls it.

LIBLINEAR (Fan et al., JMLR 2008) shuffles with the C library's ``rand()`` and
never seeds it, so two fits in one process can differ; ``fit_liblinear`` seeds
it with ``srand(seed)`` first, which makes a fit depend only on its inputs.
Weights are read straight from the model's C array (``get_decfun`` makes one
ctypes call per feature) and returned oriented as the caller's classes, which
avoids the label-order pitfall (the sign of a binary model follows
``model.get_labels()[0]``, the label of the first training row).
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import scipy.sparse as sp
from liblinear.liblinearutil import parameter, problem, train

from llc_bench import progress
from llc_bench.models._validation import POSITIVE, InvalidParameter

SOLVERS = {"l2_hinge": 3, "crammer_singer": 4, "l2_squared_hinge": 2, "logistic": 0}
_libc = ctypes.CDLL(ctypes.util.find_library("c"))


def seed_liblinear(seed: int) -> None:
    """Seed the C library's ``rand()``, which LIBLINEAR's solvers shuffle with."""
    _libc.srand(ctypes.c_uint(int(seed) & 0xFFFFFFFF))


def fit_liblinear(X, y, *, C: float, solver: str = "l2_hinge", bias: float = 1.0,
                  eps: float | None = None, seed: int = 0):
    """Train LIBLINEAR on rows ``X`` (dense or CSR) with labels ``y`` in 0..K-1.

    Returns ``(W, b)``: for K = 2, ``W`` has shape (D,) and scores class 1
    (Crammer-Singer's two vectors are subtracted); otherwise ``W`` is (K, D) with row
    c scoring class c.  ``bias <= 0`` trains without LIBLINEAR's appended
    constant feature (``-B``) and returns b = 0.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown LIBLINEAR solver {solver!r}; choose from {sorted(SOLVERS)}")
    # LIBLINEAR's own check would say "Error: b'C <= 0'" (and lets nan and inf through)
    for name, value in (("C", C), ("eps", eps)):
        if value is not None and not POSITIVE.is_satisfied_by(value):
            raise InvalidParameter("LIBLINEAR", name, value, [POSITIVE])
    X = sp.csr_matrix(X, dtype=np.float64)  # liblinear wants csr_matrix, not csr_array
    y = np.asarray(y)
    n_classes = int(y.max()) + 1
    options = f"-s {SOLVERS[solver]} -c {C:.17g} -q"
    if bias > 0:
        options += f" -B {bias:.17g}"
    if eps is not None:
        options += f" -e {eps:.17g}"
    seed_liblinear(seed)
    # binary as -1/+1, the labels LIBLINEAR's tools use (it then orders classes the same way)
    labels_in = np.where(y == 1, 1.0, -1.0) if n_classes == 2 else y.astype(np.float64)
    with progress.stage(f"LIBLINEAR ({X.shape[0]} rows)"):
        model = train(problem(labels_in, X), parameter(options))
    labels = [max(int(label), 0) for label in model.get_labels()]  # -1 -> class 0
    n_w = 1 if (model.get_nr_class() == 2 and SOLVERS[solver] != 4) else model.get_nr_class()
    n_feat = model.get_nr_feature()
    n_rows = n_feat + (1 if model.bias > 0 else 0)
    w = np.ctypeslib.as_array(model.w, shape=(n_rows * n_w,)).reshape(n_rows, n_w).T.copy()
    coef = w[:, :n_feat]
    intercept = w[:, n_feat] * model.bias if model.bias > 0 else np.zeros(n_w)
    if X.shape[1] > coef.shape[1]:  # trailing all-zero features are unknown to the model
        coef = np.hstack([coef, np.zeros((n_w, X.shape[1] - coef.shape[1]))])
    if n_w == 1:
        sign = 1.0 if labels[0] == 1 else -1.0
        return sign * coef[0], sign * intercept[0]
    W = np.zeros((n_classes, X.shape[1]))
    b = np.zeros(n_classes)
    W[labels], b[labels] = coef, intercept
    if n_classes == 2:  # Crammer-Singer keeps two vectors: score class 1 by their difference
        return W[1] - W[0], b[1] - b[0]
    return W, b
