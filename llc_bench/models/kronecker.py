"""Kronecker features z = γ(x) ⊗ [x; 1] and the LIBLINEAR initialisation of W, b.

LLC-SAPL §3.3, eq. (20): with γ(x) the m-dim local code (k non-zeros), the
LL-SVM decision γᵀW x + γᵀb (LL-SVM eq. 8) is the linear function wᵀz of

    z = γ(x) ⊗ [x; 1]  ∈ R^{m(D+1)},   w = vec([W, b]) (row-major: anchor j's
                                             block is columns j(D+1) .. j(D+1)+D),

so a linear SVM on z (LIBLINEAR) gives W and b; C = 1/(λN) makes LIBLINEAR's
1/2||w||² + C Σ hinge the LL-SVM objective (eq. 9) times 1/(λN).  The constant 1
is inside z, so LIBLINEAR is run *without* ``-B`` (the anchor biases b are then
regularised in the init, as in LLC-SAPL's "train a linear SVM on z").

z is a scipy ``csr_matrix`` (LIBLINEAR's Python interface does not take
``csr_array``) with k(D+1) stored entries a row for dense x, k(nnz(x)+1) for
CSR x, columns ascending within a row.  It is built with array operations (a
loop over the k slots, never over rows).  The LIBLINEAR init does not build it:
:func:`kronecker_nodes` writes the same entries straight into LIBLINEAR's feature
nodes (bitwise the nodes ``problem(build_kronecker(...))`` would make).  Its memory is
estimated first (:func:`kronecker_memory`); above ``max_nnz`` a seeded,
class-stratified row subsample is used and reported.

For LCC+SVM (``include_x=False``) z = γ(x) itself (n × m, k entries a row):
"to obtain initial b, we only need to train a linear SVM on the local
coordinates" (LLC-SAPL §3.3).

Solver: ``-s 3`` (L2-regularised L1-loss = hinge, dual coordinate descent), the
loss of LL-SVM eq. (9); ``-s 1`` would optimise the squared hinge instead.
Multi-class: LIBLINEAR's own one-vs-rest (``-s 3`` with labels 0..C-1 trains C
binary problems class-vs-rest with the same C), one copy of z for all classes.
``solver="dual_cd"`` runs the same algorithm on z without building it
(``_dual_cd_kernel``; dense or CSR x; all rows are used only when ``max_nnz`` allows,
as for LIBLINEAR, so the two solve the same problem).
Decision signs follow ``model.get_labels()`` (docs/design.md §Released code).
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
import scipy.sparse as sp
from numba import njit

from .. import progress
from ..coding.local import LocalCode
from ..errors import ConfigError
from ._dual_cd_kernel import dual_cd_one_vs_rest
from .liblinear_fit import Nodes, empty_nodes, fit_liblinear

#: Default cap on the stored entries of z for the LIBLINEAR init (≈ 0.6 GB for z
#: plus ≈ 0.8 GB for LIBLINEAR's own copy).
DEFAULT_MAX_NNZ = 50_000_000


#: How the init's record names each LIBLINEAR solver.
INIT_SOLVERS = {
    "l2_hinge": "liblinear -s 3 (L2-regularised hinge, dual CD), no -B",
    "l2_squared_hinge": "liblinear -s 2 (L2-regularised squared hinge, primal Newton), no -B",
    "dual_cd": "dual CD on implicit z (LIBLINEAR -s 3's algorithm and stopping rule, "
               "Hsieh et al. 2008), no -B",
}
#: Pass cap of the ``dual_cd`` solver (LIBLINEAR's classic default).
DUAL_CD_MAX_ITER = 1000
#: LIBLINEAR's default tolerance of ``-s 3``.
DUAL_CD_EPS = 0.1

#: The bytes of duals a warm-start memo keeps (the most recently solved problems').
WARM_BYTES = 256 << 20


def _problem_key(x_arrays, code: LocalCode, y_idx, *settings) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for a in (*x_arrays, code.indices, code.weights, y_idx):
        a = np.ascontiguousarray(a)
        digest.update(str((a.dtype, a.shape)).encode())
        digest.update(a.data)
    digest.update(repr(settings).encode())
    return digest.hexdigest()


def _warm_duals(memo: dict | None, key: str, C: float, shape) -> np.ndarray:
    """The starting duals: the memo's for this problem scaled to C (those at the old bound
    at C exactly), else zeros."""
    if memo is None or key not in memo:
        return np.zeros(shape)
    C_old, alpha = memo[key]
    return np.where(alpha == C_old, C, np.minimum(alpha * (C / C_old), C))


def kronecker_nnz(n: int, k: int, D: int, x_nnz: int | None = None, include_x: bool = True,
                  append_one: bool = True) -> int:
    """Stored entries of z for n rows: k(D+1)·n dense, k(nnz(X) + n) for CSR X, k·n without
    x; without the appended 1 (``append_one=False``, z = γ ⊗ x) one entry less per slot."""
    if not include_x:
        return int(n) * int(k)
    one = 1 if append_one else 0
    if x_nnz is None:
        return int(n) * int(k) * (int(D) + one)
    return int(k) * (int(x_nnz) + one * int(n))


def kronecker_memory(
    n: int, k: int, D: int, x_nnz: int | None = None, include_x: bool = True,
    append_one: bool = True,
) -> dict:
    """Bytes needed for z (CSR: float64 data + int32/int64 indices + int64 indptr) and
    for LIBLINEAR's copy of it ((nnz + 2n) feature_node of 16 bytes, docs/design.md §Released
    code)."""
    nnz = kronecker_nnz(n, k, D, x_nnz, include_x, append_one)
    idx_bytes = 4 if nnz < 2**31 else 8
    csr = nnz * (8 + idx_bytes) + (n + 1) * 8
    lib = (nnz + 2 * n) * 16 + n * 8
    return {"nnz": nnz, "csr_bytes": csr, "liblinear_bytes": lib, "total_bytes": csr + lib}


def build_kronecker(X, code: LocalCode, m: int, include_x: bool = True,
                    append_one: bool = True) -> sp.csr_matrix:
    """z = γ(x) ⊗ [x; 1] for every row (or z = γ(x) when ``include_x`` is False, or
    z = γ(x) ⊗ x when ``append_one`` is False: OCC eq. 9 with one shared bias).

    ``X`` dense (n, D) or CSR; ``code`` has indices ascending per row (as the
    coders return them), so the columns come out sorted within each row.
    Shape (n, m(D+1)), (n, mD) or (n, m).
    """
    idx = np.asarray(code.indices)
    gam = np.asarray(code.weights, dtype=np.float64)
    n, k = idx.shape
    if not include_x:
        indptr = np.arange(n + 1, dtype=np.int64) * k
        Z = sp.csr_matrix((gam.ravel().copy(), idx.ravel().astype(np.int32), indptr), shape=(n, m))
        Z.has_sorted_indices = True
        return Z
    D = X.shape[1]
    E = D + 1 if append_one else D  # width of one anchor's block
    width = m * E
    nnz = kronecker_nnz(n, k, D, X.nnz if sp.issparse(X) else None, append_one=append_one)
    ind_dtype = np.int32 if max(nnz, width) < 2**31 else np.int64
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        # data[i, a, :] = γ_{idx[i,a]}(x_i) · [x_i; 1]   (LLC-SAPL eq. 20)
        data = np.empty((n, k, E))
        np.multiply(gam[:, :, None], X[:, None, :], out=data[:, :, :D])
        if append_one:
            data[:, :, D] = gam
        cols = idx.astype(ind_dtype)[:, :, None] * E + np.arange(E, dtype=ind_dtype)
        indptr = np.arange(n + 1, dtype=np.int64) * (k * E)
        Z = sp.csr_matrix((data.reshape(-1), cols.reshape(-1), indptr), shape=(n, width))
    else:
        Xc = X.tocsr()
        if not Xc.has_sorted_indices:
            Xc = Xc.sorted_indices()
        if append_one:
            Xa = sp.hstack([Xc, np.ones((n, 1))], format="csr")  # the 1 is the last column
            Xa.sort_indices()
        else:
            Xa = Xc
        L = np.diff(Xa.indptr).astype(np.int64)  # entries of [x; 1] per row
        rows = np.repeat(np.arange(n), L)
        offset = np.arange(Xa.nnz, dtype=np.int64) - Xa.indptr[rows]
        indptr = Xa.indptr.astype(np.int64) * k
        data = np.empty(indptr[-1])
        cols = np.empty(indptr[-1], dtype=ind_dtype)
        base = indptr[rows] + offset
        for a in range(k):  # k slots, each a vectorised pass over all entries
            pos = base + a * L[rows]
            data[pos] = Xa.data * gam[rows, a]
            cols[pos] = Xa.indices + idx[rows, a].astype(ind_dtype) * E
        Z = sp.csr_matrix((data, cols, indptr), shape=(n, width))
    Z.has_sorted_indices = True
    return Z


@njit(cache=True, nogil=True)
def _kron_nodes_dense(X, idx, gam, E, append_one, include_x, rowptr, ints, vals):
    n, k = idx.shape
    D = X.shape[1]
    for i in range(n):
        p = rowptr[i]
        for a in range(k):
            j = idx[i, a]
            g = gam[i, a]
            if include_x:
                for d in range(D):  # 1-based column j·E + d of γ_j x_d
                    ints[4 * p] = j * E + d + 1
                    vals[2 * p + 1] = g * X[i, d]
                    p += 1
                if append_one:
                    ints[4 * p] = j * E + D + 1
                    vals[2 * p + 1] = g
                    p += 1
            else:
                ints[4 * p] = j + 1
                vals[2 * p + 1] = g
                p += 1
        ints[4 * p] = -1
        ints[4 * p + 4] = -1


@njit(cache=True, nogil=True)
def _kron_nodes_csr(data, indices, indptr, idx, gam, E, D, append_one, rowptr, ints, vals):
    n, k = idx.shape
    for i in range(n):
        p = rowptr[i]
        for a in range(k):
            j = idx[i, a]
            g = gam[i, a]
            for q in range(indptr[i], indptr[i + 1]):
                ints[4 * p] = j * E + indices[q] + 1
                vals[2 * p + 1] = data[q] * g
                p += 1
            if append_one:
                ints[4 * p] = j * E + D + 1
                vals[2 * p + 1] = g
                p += 1
        ints[4 * p] = -1
        ints[4 * p + 4] = -1


def kronecker_nodes(X, code: LocalCode, m: int, include_x: bool = True,
                    append_one: bool = True) -> Nodes:
    """LIBLINEAR's feature nodes of :func:`build_kronecker` (same arguments), written
    without building z (no CSR copy; the values are the same products)."""
    idx = np.asarray(code.indices)
    gam = np.asarray(code.weights, dtype=np.float64)
    n, k = idx.shape
    if not include_x:
        nodes, ints, vals = empty_nodes(np.full(n, k), m)
        _kron_nodes_dense(np.empty((n, 0)), idx, gam, 1, False, False, nodes.rowptr, ints, vals)
        return nodes
    D = X.shape[1]
    E = D + 1 if append_one else D
    one = 1 if append_one else 0
    if sp.issparse(X):
        Xc = X.tocsr()
        if not Xc.has_sorted_indices:
            Xc = Xc.sorted_indices()
        nodes, ints, vals = empty_nodes(k * (np.diff(Xc.indptr) + one), m * E)
        _kron_nodes_csr(np.asarray(Xc.data, dtype=np.float64), Xc.indices, Xc.indptr, idx, gam,
                        E, D, append_one, nodes.rowptr, ints, vals)
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        nodes, ints, vals = empty_nodes(np.full(n, k * E), m * E)
        _kron_nodes_dense(X, idx, gam, E, append_one, True, nodes.rowptr, ints, vals)
    return nodes


def init_subsample(y_idx: np.ndarray, n_keep: int, random_state=None) -> np.ndarray:
    """A seeded, class-stratified sample of ``n_keep`` rows (sorted), every class kept."""
    y_idx = np.asarray(y_idx)
    n = y_idx.shape[0]
    rng = np.random.default_rng(random_state)
    classes, counts = np.unique(y_idx, return_counts=True)
    quota = counts * (min(n_keep, n) / n)
    share = np.floor(quota).astype(int)
    rest = int(min(n_keep, n) - share.sum())  # largest remainders get one more row
    share[np.argsort(share - quota, kind="stable")[:rest]] += 1
    share = np.minimum(np.maximum(share, 1), counts)  # every class kept
    rows = [
        rng.choice(np.flatnonzero(y_idx == c), size=s, replace=False)
        for c, s in zip(classes, share, strict=True)
    ]
    return np.sort(np.concatenate(rows))


def liblinear_init(
    X,
    code: LocalCode,
    y_idx: np.ndarray,
    n_classes: int,
    m: int,
    lambda_: float,
    *,
    use_W: bool = True,
    max_nnz: int = DEFAULT_MAX_NNZ,
    random_state=None,
    eps: float | None = None,
    solver: str = "l2_hinge",
    warm: dict | None = None,
    pass_cap: int | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """W (n_out, m, D) and b (n_out, m) from LIBLINEAR on z (n_out = 1 binary, else C).

    With ``use_W=False`` (LCC+SVM) z = γ(x) and W is zero.  The memory of z is
    estimated before it is built; if its entries exceed ``max_nnz`` a seeded,
    class-stratified subsample of rows is used and reported in the info dict.
    ``solver`` / ``eps``: LIBLINEAR's loss (``liblinear_fit.SOLVERS``; "l2_squared_hinge"
    is the primal Newton ``-s 2``) and tolerance (None = LIBLINEAR's default).

    ``dual_cd`` only, for the trials of a search: ``warm`` (a dict, kept by the caller):
    a problem solved before with another C (the same rows, codes, labels and seed: trials
    that differ in λ only) starts from that solution's duals scaled by C_new / C_old, the
    warm start along the C path of Chu, Hsieh & Lin (KDD 2015), instead of α = 0 (the
    same stopping rule; not bitwise the cold start's); ``pass_cap``: at most that many
    passes instead of :data:`DUAL_CD_MAX_ITER` (a loose init the SGD epochs continue;
    the record lists it as ``max_iter``).
    """
    if lambda_ <= 0:
        raise ConfigError(f"lambda must be > 0, got {lambda_}")
    n, D = X.shape
    k = code.k
    x_nnz = X.nnz if sp.issparse(X) else None
    mem = kronecker_memory(n, k, D, x_nnz, include_x=use_W)
    info: dict = {
        "solver": INIT_SOLVERS.get(solver, solver),
        "features": "gamma(x) kron [x; 1]" if use_W else "gamma(x)",
        "estimated_nnz": mem["nnz"],
        "estimated_bytes": mem["total_bytes"],
        "max_nnz": int(max_nnz),
        "subsampled": False,
        "n_rows": int(n),
    }
    rows = None
    if mem["nnz"] > max_nnz:
        per_row = mem["nnz"] / n
        n_keep = max(n_classes, int(max_nnz // per_row))
        rows = init_subsample(y_idx, n_keep, random_state)
        info.update(
            subsampled=True,
            n_rows=int(rows.size),
            of_rows=int(n),
            subsample_seed=None if random_state is None else str(random_state),
        )
    Xs = X if rows is None else X[rows]
    cs = code if rows is None else code.take(rows)
    ys = y_idx if rows is None else y_idx[rows]
    if solver == "dual_cd":
        return _dual_cd_init(Xs, cs, ys, n_classes, m, lambda_, use_W, eps, random_state, info,
                             warm=warm, pass_cap=pass_cap)
    t = time.perf_counter()
    Z = kronecker_nodes(Xs, cs, m, include_x=use_W)
    info["build_seconds"] = time.perf_counter() - t
    N = Z.shape[0]
    info["nnz"] = int(Z.rowptr[-1] - 2 * N)
    C = 1.0 / (lambda_ * N)
    info["C"] = C
    t = time.perf_counter()
    seed = 1 if random_state is None else int(np.random.default_rng(random_state).integers(2**31))
    if eps is not None:
        info["eps"] = float(eps)
    log: list = []
    Wz, _ = fit_liblinear(Z, ys, C=C, solver=solver, bias=0, eps=eps, seed=seed, log=log)  # no -B
    # LIBLINEAR warns once per one-vs-rest problem that stopped at its iteration cap
    info["max_iter_reached"] = sum("max number of iterations" in line for line in log)
    iters = [int(line.split("#iter =")[1]) for line in log if "#iter =" in line]
    if iters:  # dual CD: its outer iterations per problem (the cap is 1000)
        info["iterations"] = iters
    Wz = np.atleast_2d(Wz)
    info["train_seconds"] = time.perf_counter() - t
    del Z
    W, b = split_weights(Wz, m, D, use_W)
    return W, b, info


def _dual_cd_init(X, code, y_idx, n_classes, m, lambda_, use_W, eps, random_state, info,
                  warm=None, pass_cap=None):
    """The ``dual_cd`` solver: the same problem as LIBLINEAR's, z never built (all rows)."""
    n = X.shape[0]
    C = 1.0 / (lambda_ * n)
    eps = DUAL_CD_EPS if eps is None else float(eps)
    seed = 1 if random_state is None else int(np.random.default_rng(random_state).integers(2**31))
    x_nnz = X.nnz if sp.issparse(X) else n * X.shape[1]
    info.update(C=C, eps=eps, build_seconds=0.0, estimated_bytes=0,
                nnz=int(code.k * (x_nnz + n if use_W else n)))
    t = time.perf_counter()
    n_out = 1 if n_classes == 2 else n_classes
    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_sorted_indices:  # the dense row's order: dense and CSR agree
            X = X.sorted_indices()
        x_arrays = (np.empty((0, 0)), X.indptr.astype(np.int64), X.indices.astype(np.int64),
                    np.asarray(X.data, dtype=np.float64))
    else:
        x_arrays = (np.ascontiguousarray(X, dtype=np.float64), np.empty(0, np.int64),
                    np.empty(0, np.int64), np.empty(0))
    memo = warm
    key = None if memo is None else _problem_key(x_arrays, code, y_idx, n_out, m, use_W, eps,
                                                 seed)
    alpha = _warm_duals(memo, key, C, (n_out, n))
    max_iter = min(DUAL_CD_MAX_ITER, pass_cap or DUAL_CD_MAX_ITER)
    if max_iter < DUAL_CD_MAX_ITER:
        info["max_iter"] = max_iter
    if memo is not None and key in memo:
        info["warm_start_from_C"] = memo[key][0]
    with progress.stage(f"dual CD init ({n} rows)"):
        Wb, iters = dual_cd_one_vs_rest(
            *x_arrays, X.shape[1], np.ascontiguousarray(code.indices),
            np.ascontiguousarray(code.weights, dtype=np.float64),
            np.asarray(y_idx, dtype=np.int64), n_out, m, C, eps, max_iter, seed, use_W,
            alpha)
    if memo is not None:
        memo.pop(key, None)
        memo[key] = (C, alpha)
        while sum(a.nbytes for _, a in memo.values()) > WARM_BYTES:
            memo.pop(next(iter(memo)))
    info["train_seconds"] = time.perf_counter() - t
    info["iterations"] = [int(i) for i in iters]
    info["max_iter_reached"] = int(np.sum(iters >= max_iter))
    if use_W:
        return np.ascontiguousarray(Wb[:, :, :-1]), np.ascontiguousarray(Wb[:, :, -1]), info
    return np.zeros((n_out, m, X.shape[1])), np.ascontiguousarray(Wb[:, :, 0]), info


def split_weights(Wz: np.ndarray, m: int, D: int, use_W: bool = True):
    """LIBLINEAR weights on z (n_out, m(D+1)) -> W (n_out, m, D), b (n_out, m).

    Anchor j's block of z is γ_j·[x; 1], so w[j(D+1) : j(D+1)+D] = W[j] and
    w[j(D+1)+D] = b[j].  Without x (LCC+SVM) w = b and W = 0.
    """
    n_out = Wz.shape[0]
    if use_W:
        WB = Wz.reshape(n_out, m, D + 1)
        return np.ascontiguousarray(WB[:, :, :D]), np.ascontiguousarray(WB[:, :, D])
    return np.zeros((n_out, m, D)), np.ascontiguousarray(Wz.reshape(n_out, m))
