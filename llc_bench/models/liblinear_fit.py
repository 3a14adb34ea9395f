"""One wrapper around liblinear-official, shared by every model that calls it.

LIBLINEAR (Fan et al., JMLR 2008) shuffles with the C library's ``rand()`` and
never seeds it, so two fits in one process can differ; ``fit_liblinear`` seeds
it with ``srand(seed)`` first, which makes a fit depend only on its inputs, and holds one
process-wide lock from the seed to the end of training: ``rand()``'s state is global, so
two fits in threads (a threading joblib backend) would otherwise draw from each other's.
A library that calls ``rand()`` in a thread of its own still moves a fit running meanwhile
(onnxruntime does, a few seconds after its import: the tests run it in a child process).
Weights are read straight from the model's C array (``get_decfun`` makes one
ctypes call per feature) and returned oriented as the caller's classes, which
avoids the label-order pitfall (the sign of a binary model follows
``model.get_labels()[0]``, the label of the first training row).

LIBLINEAR's own ``problem()`` copies a CSR matrix into its feature nodes with a numba
function that is compiled anew in every process (~0.4 s) and strided numpy passes;
:func:`csr_nodes` writes the same nodes with a cached kernel, and
``kronecker.kronecker_nodes`` writes those of z = γ(x) ⊗ [x; 1] straight from x and the
codes, so z itself is never built.  The nodes, hence the models, are bitwise the same.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from liblinear.liblinear import PRINT_STRING_FUN, feature_node
from liblinear.liblinearutil import parameter, problem, train
from numba import njit

from llc_bench import progress
from llc_bench.models._validation import POSITIVE, InvalidParameter

SOLVERS = {"l2_hinge": 3, "crammer_singer": 4, "l2_squared_hinge": 2, "logistic": 0}
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_RAND = threading.Lock()  # rand()'s state is the process's: one seeded fit at a time


def seed_liblinear(seed: int) -> None:
    """Seed the C library's ``rand()``, which LIBLINEAR's solvers shuffle with."""
    _libc.srand(ctypes.c_uint(int(seed) & 0xFFFFFFFF))


@dataclass
class Nodes:
    """Rows as LIBLINEAR feature nodes: ``x_space`` (structured ``feature_node`` array),
    ``rowptr`` (int64, n + 1: row i is nodes rowptr[i] .. rowptr[i+1]-1, the last two
    its bias slot and terminator) and the matrix ``shape`` (n, n_features)."""

    x_space: np.ndarray
    rowptr: np.ndarray
    shape: tuple


def empty_nodes(row_nnz: np.ndarray, n_features: int):
    """Nodes for rows of ``row_nnz`` entries (+2 each) and the int32 / float64 views the
    kernels fill (node p: index ``ints[4p]``, value ``vals[2p + 1]``)."""
    rowptr = np.zeros(len(row_nnz) + 1, dtype=np.int64)
    np.cumsum(np.asarray(row_nnz, dtype=np.int64) + 2, out=rowptr[1:])
    x_space = np.empty(int(rowptr[-1]), dtype=feature_node)
    nodes = Nodes(x_space, rowptr, (len(row_nnz), int(n_features)))
    return nodes, x_space.view(np.int32), x_space.view(np.float64)


@njit(cache=True, nogil=True)
def _csr_nodes(data, indices, indptr, rowptr, ints, vals):
    for i in range(indptr.shape[0] - 1):
        p = rowptr[i]
        for q in range(indptr[i], indptr[i + 1]):
            ints[4 * p] = indices[q] + 1  # LIBLINEAR's features are 1-based
            vals[2 * p + 1] = data[q]
            p += 1
        ints[4 * p] = -1  # bias slot (filled by -B) and terminator
        ints[4 * p + 4] = -1


def csr_nodes(X) -> Nodes:
    """The feature nodes of a CSR matrix (stored entries in stored order, as ``problem()``)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_sorted_indices:
        X.sort_indices()
    nodes, ints, vals = empty_nodes(np.diff(X.indptr), X.shape[1])
    _csr_nodes(X.data, X.indices, X.indptr, nodes.rowptr, ints, vals)
    return nodes


def make_problem(labels: np.ndarray, nodes: Nodes) -> problem:
    """A ``liblinear`` problem over ``nodes`` (no bias yet) with float64 ``labels``."""
    prob = problem.__new__(problem)
    n = nodes.shape[0]
    prob.l, prob.n, prob.bias = n, nodes.shape[1], -1
    prob.x_space, prob.rowptr = nodes.x_space, nodes.rowptr
    prob.y = (ctypes.c_double * n)()
    np.ctypeslib.as_array(prob.y, (n,))[:] = labels
    prob.x = (ctypes.POINTER(feature_node) * n)()
    ptr = np.ctypeslib.as_array(ctypes.cast(prob.x, ctypes.POINTER(ctypes.c_uint64)), (n,))
    ptr[:] = nodes.rowptr[:-1] * ctypes.sizeof(feature_node) + nodes.x_space.ctypes.data
    return prob


def fit_liblinear(X, y, *, C: float, solver: str = "l2_hinge", bias: float = 1.0,
                  eps: float | None = None, seed: int = 0, log: list | None = None):
    """Train LIBLINEAR on rows ``X`` (dense, CSR or :class:`Nodes`) with labels ``y``
    in 0..K-1.

    Returns ``(W, b)``: for K = 2, ``W`` has shape (D,) and scores class 1
    (Crammer-Singer's two vectors are subtracted); otherwise ``W`` is (K, D) with row
    c scoring class c.  ``bias <= 0`` trains without LIBLINEAR's appended
    constant feature (``-B``) and returns b = 0.  ``log``, if a list, receives LIBLINEAR's
    messages (e.g. "WARNING: reaching max number of iterations", once per problem).
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown LIBLINEAR solver {solver!r}; choose from {sorted(SOLVERS)}")
    # LIBLINEAR's own check would say "Error: b'C <= 0'" (and lets nan and inf through)
    for name, value in (("C", C), ("eps", eps)):
        if value is not None and not POSITIVE.is_satisfied_by(value):
            raise InvalidParameter("LIBLINEAR", name, value, [POSITIVE])
    nodes = X if isinstance(X, Nodes) else csr_nodes(X)
    y = np.asarray(y)
    n_classes = int(y.max()) + 1
    options = f"-s {SOLVERS[solver]} -c {C:.17g} -q"
    if bias > 0:
        options += f" -B {bias:.17g}"
    if eps is not None:
        options += f" -e {eps:.17g}"
    # binary as -1/+1, the labels LIBLINEAR's tools use (it then orders classes the same way)
    labels_in = np.where(y == 1, 1.0, -1.0) if n_classes == 2 else y.astype(np.float64)
    param = parameter(options)
    if log is not None:  # messages go to the list (printing nothing), not to -q's sink
        param.print_func = PRINT_STRING_FUN(lambda text: log.append(text.decode().strip()))
    with progress.stage(f"LIBLINEAR ({nodes.shape[0]} rows)"), _RAND:
        seed_liblinear(seed)
        model = train(make_problem(labels_in, nodes), param)
    del nodes
    labels = [max(int(label), 0) for label in model.get_labels()]  # -1 -> class 0
    n_w = 1 if (model.get_nr_class() == 2 and SOLVERS[solver] != 4) else model.get_nr_class()
    n_feat = model.get_nr_feature()
    n_rows = n_feat + (1 if model.bias > 0 else 0)
    w = np.ctypeslib.as_array(model.w, shape=(n_rows * n_w,)).reshape(n_rows, n_w).T.copy()
    coef = w[:, :n_feat]
    intercept = w[:, n_feat] * model.bias if model.bias > 0 else np.zeros(n_w)
    width = X.shape[1]
    if width > coef.shape[1]:  # trailing all-zero features are unknown to the model
        coef = np.hstack([coef, np.zeros((n_w, width - coef.shape[1]))])
    if n_w == 1:
        sign = 1.0 if labels[0] == 1 else -1.0
        return sign * coef[0], sign * intercept[0]
    W = np.zeros((n_classes, width))
    b = np.zeros(n_classes)
    W[labels], b[labels] = coef, intercept
    if n_classes == 2:  # Crammer-Singer keeps two vectors: score class 1 by their difference
        return W[1] - W[0], b[1] - b[0]
    return W, b
