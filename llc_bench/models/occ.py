"""Classifiers on orthogonal coordinate coding (OCC; Zhang et al., NIPS 2011, §3-4).

``features="kronecker"`` is LL-SVM with OCC, eq. (9): f(x) = γ(x)ᵀ W x + b.
  * ``solver="liblinear"`` — LIB-LLSVM: LIBLINEAR on z = γ(x) ⊗ x with
    LIBLINEAR's ``-B 1`` as the one shared bias b (eq. 9 and its footnote 1:
    no per-basis bias).  z has M·nnz(x) entries a row; its memory is
    estimated first and above ``max_nnz`` a seeded class-stratified row
    subsample (``kronecker.init_subsample``) is used and recorded.
  * ``solver="sgd"`` — PEG-LLSVM: the ``llc_sgd`` trainer over the dense codes
    (k = M, signed weights), from W = b = 0.  As the paper's footnote 3 says of
    its PEGASOS variant, this is "the original formulation in [11]" (LL-SVM):
    f = γᵀ W x + γᵀ b with one bias per basis vector.
``features="codes"`` is the "Linear SVM + OCC" row: a linear SVM on γ(x)
(LIBLINEAR with ``-B 1``, or llc_sgd with W = 0, i.e. f = γᵀ b).

``intercept``: "auto" is the paper's choice above (shared for liblinear,
per-basis for sgd); "per_basis" makes LIBLINEAR solve LL-SVM's formulation
(z = γ ⊗ [x; 1] from ``build_kronecker``, no ``-B``; for codes: no bias), the
same model as the sgd solver; "shared" with sgd is an error (llc_sgd has
per-basis biases only).  Why it matters: γ(-x) = -γ(x), so with one shared
bias f(x) - b = γ(x)ᵀ W x is *even* in x — fine on raw, uncentred features
(the paper's: usps in [-1, 1] with a -1 background, letter's 0..15), poor on
centred (standardised) data; the per-basis term γᵀb is odd and lifts this.

LIBLINEAR's loss (``loss``): "squared_hinge" (default; the objective of
LIBLINEAR's default ``-s 1``, solved in the primal with ``-s 2``) or "hinge"
(``-s 3``).  ``C=None`` picks C by ``cv_folds``-fold CV over ``C_grid`` (the
whole pipeline, basis included, is refit in every fold).

Variants: ``variant="global"`` (G-OCC, one basis from all training rows) or
"class" (C-OCC, one basis per one-vs-all problem from its positive rows; each
class's classifier uses its own coding).  The runner passes ``coding=
"occ_global"|"occ_class"``, which means the same.  Multi-class is one-vs-all,
arg max of the class scores; binary problems have one output scoring classes_[1].

Fitted: ``bases_`` (list of :class:`~llc_bench.coding.occ.OCCBasis`),
``W_`` (n_out, M, D) or None, ``b_`` (n_out, M) per-basis weights on γ,
``intercept_`` (n_out,), so that f_c = Σ_v γ_v (W_c,v · x + b_c,v) + intercept_c.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..coding.occ import SVD_METHODS, VARIANTS, as_local_code, fit_bases, occ_codes
from . import grid_search
from ._base import TrialCache, store_params
from ._validation import (
    COUNT,
    COUNT0,
    FOLDS,
    NON_NEGATIVE,
    POSITIVE,
    REGULARISATION,
    Grid,
    InvalidParameter,
    SparseInputMixin,
    check_fit_data,
    check_predict_data,
    labels_from_scores,
    validate_params,
)
from .history import History, accuracy
from .kronecker import (
    DEFAULT_MAX_NNZ,
    build_kronecker,
    init_subsample,
    kronecker_memory,
    split_weights,
)
from .liblinear_fit import fit_liblinear
from .linear import DEFAULT_C_GRID, C_candidates
from .objective import ova_hinge, regulariser
from .sgd_epoch import decision_from_codes, labels_matrix
from .sgd_training import SGDOptions, SGDTraining

LOSSES = {"squared_hinge": "l2_squared_hinge", "hinge": "l2_hinge"}
_PREDICT_CHUNK_ENTRIES = 1 << 22  # rows × outputs × M per prediction chunk
def _kronecker_input(X):
    """Dense X with at least half zeros (MNIST's raw pixels) goes in as CSR: z keeps
    only the non-zeros of x, the same matrix with fewer stored entries."""
    if not sp.issparse(X) and X.size and np.count_nonzero(X) <= X.size // 2:
        return sp.csr_matrix(X)
    return X


class OCCClassifier(SparseInputMixin, ClassifierMixin, BaseEstimator):
    """LL-SVM / linear SVM on orthogonal coordinate codes (Zhang et al. 2011).

    Parameters
    ----------
    variant : {"global", "class"} or None
        G-OCC or C-OCC; None = from ``coding``, else "global".
    coding : {"occ_global", "occ_class"} or None
        The runner's name of the variant (must agree with ``variant`` if both given).
    n_basis : int, default 20
        M, basis vectors per basis; capped at the rank (recorded in fit_info_).
    svd : {"auto", "full", "randomized"}
        See :mod:`llc_bench.coding.occ`.
    features : {"kronecker", "codes"}
        LL-SVM eq. (9) on γ ⊗ x, or a linear SVM on γ alone.
    solver : {"liblinear", "sgd"}
        LIB-LLSVM or PEG-LLSVM (llc_sgd).
    loss : {"squared_hinge", "hinge"}
        LIBLINEAR's loss (``-s 2`` / ``-s 3``); sgd always uses the hinge.
    C, C_grid, cv_folds : LIBLINEAR's C, or None for CV over C_grid.
    intercept : {"auto", "shared", "per_basis"}
        One shared bias b (eq. 9, LIBLINEAR ``-B 1``, regularised) or LL-SVM's
        per-basis biases γᵀb; "auto" = shared for liblinear, per_basis for sgd.
    max_nnz : int
        Cap on the entries of z; above it a seeded class-stratified subsample.
    lambda_, epochs, t0, bias_scale, skip : llc_sgd's parameters (sgd only).
    history : bool
        Per-epoch objective / accuracies (sgd).
    random_state : int, RandomState or None
    """

    @property
    def numerics_version(self) -> int:
        """Enters the result cache key; 2 = the llc_sgd fixes (warm/zero-start η0 grid,
        best epoch kept, divergence restarts), which change only the SGD solver."""
        return 2 if self.solver == "sgd" else 1

    def __init__(self, *, variant=None, coding=None, n_basis=20, svd="auto",
                 features="kronecker", solver="liblinear", loss="squared_hinge", C=1.0,
                 C_grid=DEFAULT_C_GRID, cv_folds=5, intercept="auto", max_nnz=DEFAULT_MAX_NNZ,
                 lambda_=1e-4, epochs=10, t0=None, bias_scale="auto", skip=None,
                 history=True, random_state=None):
        store_params(self, locals())

    # ------------------------------------------------------------- parameters
    _parameter_constraints = {
        "variant": [StrOptions(set(VARIANTS)), None],
        "coding": [StrOptions({"occ_global", "occ_class"}), None], "n_basis": [COUNT],
        "svd": [StrOptions(set(SVD_METHODS))], "features": [StrOptions({"kronecker", "codes"})],
        "solver": [StrOptions({"liblinear", "sgd"})], "loss": [StrOptions(set(LOSSES))],
        "C": [POSITIVE, None], "C_grid": [Grid(POSITIVE)], "cv_folds": [FOLDS],
        "intercept": [StrOptions({"auto", "shared", "per_basis"})], "max_nnz": [COUNT],
        "lambda_": [REGULARISATION], "epochs": [COUNT0],
        "t0": [POSITIVE, StrOptions({"calibrate", "svmsgd2"}), None],
        "bias_scale": [NON_NEGATIVE, StrOptions({"auto"})], "skip": [COUNT, None],
        "history": ["boolean"], "random_state": ["random_state"],
    }

    def _variant(self) -> str:
        """"global" or "class", from ``variant`` or the runner's ``coding`` name."""
        named = None if self.coding is None else self.coding[len("occ_"):]
        return self.variant or named or "global"

    def _check_param_combinations(self):
        owner = type(self).__name__
        named = None if self.coding is None else self.coding[len("occ_"):]
        if self.variant is not None and named is not None and named != self.variant:
            raise InvalidParameter(owner, "variant", self.variant,
                                   reason=f"contradicts coding={self.coding!r}")
        if self.solver == "sgd" and self.intercept == "shared":
            raise InvalidParameter(owner, "intercept", self.intercept,
                                   reason="'shared' needs solver='liblinear' (llc_sgd learns "
                                   "per-basis biases only)")

    # -------------------------------------------------------------------- fit
    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """Fit the basis (bases), the codes and the classifier(s).

        ``eval_set=(X_test, y_test)`` adds test accuracy to the sgd history.
        ``fit_info_``: "timings" (cv, basis, encode, build, train, history, total =
        basis + encode + build + train), "history" (sgd: one entry per epoch),
        "model_size", "coding" (per basis: requested M, M used, rank, SVD method),
        "solver" (LIBLINEAR: C, loss, memory estimate, subsample; sgd: t0, steps, ...),
        "selected" (liblinear: C), "cv" (C=None: the CV's results table), "notes" (capped
        M, subsample).  ``trial_cache`` (``_base.TrialCache``, a search's trial; sgd): its
        deadline and η0 walk.
        """
        validate_params(self)
        variant = self._variant()
        X, y_idx = check_fit_data(self, X, y)
        if sp.issparse(X) and not X.has_canonical_format:
            X = X.tocsr(copy=True)
            X.sum_duplicates()
        n, D = X.shape
        n_classes = len(self.classes_)
        rs = check_random_state(self.random_state)
        seed_cv, seed_svd, seed_sub, seed_fit = (int(s) for s in rs.randint(0, 2**31 - 1, 4))
        timings = dict.fromkeys(("cv", "basis", "encode", "build", "train", "history"), 0.0)
        info: dict = {"notes": []}

        C = self.C
        if self.solver == "liblinear" and C is None:
            t = time.perf_counter()
            C = self._select_C(X, y_idx, seed_cv, info)
            timings["cv"] = time.perf_counter() - t
        if self.solver == "liblinear":
            info["selected"] = {"C": float(C)}

        t = time.perf_counter()
        self.bases_ = fit_bases(X, y_idx, n_classes, variant, self.n_basis, self.svd, seed_svd)
        timings["basis"] = time.perf_counter() - t
        for j, basis in enumerate(self.bases_):
            if basis.M == 0:
                raise ValueError(f"OCC basis {j} has rank 0 (its training rows are all zero)")
            if basis.M < basis.requested:
                info["notes"].append(f"n_basis capped at the rank: basis {j} has M = {basis.M} "
                                     f"< {basis.requested} requested")
        info["coding"] = {"variant": variant, "bases": [b.info() for b in self.bases_]}

        Y = labels_matrix(y_idx, n_classes)
        n_out = Y.shape[1]
        M = max(b.M for b in self.bases_)
        kron = self.features == "kronecker"
        self.W_ = np.zeros((n_out, M, D)) if kron else None
        self.b_ = np.zeros((n_out, M))
        self.intercept_ = np.zeros(n_out)
        # (basis, output columns, positive class): one group for G-OCC, one per class for C-OCC
        groups = ([(0, np.arange(n_out), None)] if variant == "global" else
                  [(j, np.array([j]), 1 if n_classes == 2 else j) for j in range(n_out)])
        if self.solver == "liblinear":
            self._fit_liblinear(X, y_idx, groups, C, seed_sub, seed_fit, timings, info)
        else:
            self._fit_sgd(X, y_idx, Y, groups, eval_set, seed_fit, timings, info,
                          TrialCache(memo=False) if trial_cache is None else trial_cache)
        timings["total"] = sum(timings[k] for k in ("basis", "encode", "build", "train"))
        n_params = self.b_.size + self.intercept_.size + (self.W_.size if kron else 0)
        self.fit_info_ = {
            "timings": timings,
            "history": info.pop("history", []),
            "model_size": {"n_bases": len(self.bases_), "n_basis": [b.M for b in self.bases_],
                           "n_outputs": int(n_out), "n_features": int(D),
                           "n_parameters": int(n_params),
                           "n_basis_values": int(sum(b.M for b in self.bases_) * D)},
            **info,
        }
        return self

    def _select_C(self, X, y_idx, seed, info) -> float:
        if len(self.C_grid) == 1:  # one value: nothing to choose
            return float(self.C_grid[0])

        def fit_fold(Xf, yf, params):
            est = clone(self).set_params(C=params["C"], history=False, random_state=seed)
            return est.fit(Xf, yf).predict

        info["cv"] = grid_search.record(grid_search.kfold_search(
            X, y_idx, C_candidates(self.C_grid), self.cv_folds, seed, fit_fold), len(y_idx))
        return info["cv"]["params"][info["cv"]["best_index"]]["C"]

    def _fit_liblinear(self, X, y_idx, groups, C, seed_sub, seed_fit, timings, info):
        kron = self.features == "kronecker"
        shared = self.intercept in ("auto", "shared")
        n, D = X.shape
        Xk = _kronecker_input(X) if kron else X
        M = self.b_.shape[1]
        solver = {"C": float(C), "loss": self.loss, "liblinear": LOSSES[self.loss],
                  "intercept": "shared (-B 1)" if shared else "per_basis",
                  "features": ("gamma(x)" if not kron else
                               "gamma(x) kron x" if shared else "gamma(x) kron [x; 1]")}
        rows = None
        if kron:
            mem = kronecker_memory(n, M, D, Xk.nnz if sp.issparse(Xk) else None,
                                   append_one=not shared)
            solver.update(estimated_nnz=mem["nnz"], estimated_bytes=mem["total_bytes"],
                          max_nnz=int(self.max_nnz), subsampled=False, n_rows=n)
            if mem["nnz"] > self.max_nnz:
                n_keep = max(len(self.classes_), int(self.max_nnz // (mem["nnz"] / n)))
                rows = init_subsample(y_idx, n_keep, seed_sub)
                solver.update(subsampled=True, n_rows=int(rows.size), of_rows=n,
                              subsample_seed=seed_sub)
                info["notes"].append(
                    f"LIBLINEAR on a seeded class-stratified subsample of {rows.size} of {n} "
                    f"rows (z would hold {mem['nnz']} > max_nnz = {self.max_nnz} entries)")
        Xs = Xk if rows is None else Xk[rows]
        ys = y_idx if rows is None else y_idx[rows]
        for j, outs, positive in groups:
            basis = self.bases_[j]
            t = time.perf_counter()
            G = basis.encode(Xs)
            timings["encode"] += time.perf_counter() - t
            t = time.perf_counter()
            if not kron:
                F = G
            else:  # γ ⊗ x with one shared bias (eq. 9), or γ ⊗ [x; 1]
                F = build_kronecker(Xs, as_local_code(G), basis.M, append_one=not shared)
            timings["build"] += time.perf_counter() - t
            target = ys if positive is None else (ys == positive).astype(np.int64)
            t = time.perf_counter()
            w, b0 = fit_liblinear(F, target, C=float(C), solver=LOSSES[self.loss],
                                  bias=1.0 if shared else 0.0, seed=seed_fit)
            timings["train"] += time.perf_counter() - t
            del F
            w = np.atleast_2d(w)
            if kron and shared:
                self.W_[outs, : basis.M] = w.reshape(outs.size, basis.M, D)
            elif kron:
                self.W_[outs, : basis.M], self.b_[outs, : basis.M] = split_weights(w, basis.M, D)
            else:
                self.b_[outs, : basis.M] = w
            self.intercept_[outs] = b0
        info["solver"] = solver

    def _fit_sgd(self, X, y_idx, Y, groups, eval_set, seed_fit, timings, info, cache):
        use_W = self.features == "kronecker"
        lam = float(self.lambda_)
        n, D = X.shape
        epochs = int(self.epochs)
        record = bool(self.history)
        test = None
        if record and eval_set is not None:
            Xt = check_predict_data(self, eval_set[0])
            Xt = Xt.tocsr() if sp.issparse(Xt) else Xt
            labels = np.asarray(eval_set[1])
            yt = np.searchsorted(self.classes_, labels).clip(0, len(self.classes_) - 1)
            yt[self.classes_[yt] != labels] = -1  # a class unseen in training: never right
            test = (Xt, yt, np.zeros((epochs, Xt.shape[0], Y.shape[1]), np.float32))
        F_train = np.zeros((epochs, n, Y.shape[1]), np.float32) if record else None
        reg = np.zeros((len(groups), epochs))
        runs, test_encode, history = [], 0.0, History("epoch")
        for j, outs, _ in groups:
            basis = self.bases_[j]
            t = time.perf_counter()
            code = as_local_code(basis.encode(X))
            timings["encode"] += time.perf_counter() - t
            t = time.perf_counter()
            code_t = as_local_code(basis.encode(test[0])) if test is not None else None
            test_encode += time.perf_counter() - t

            Y_out = np.ascontiguousarray(Y[:, outs])
            W = np.zeros((outs.size, basis.M, D))
            b = np.zeros((outs.size, basis.M))
            t = time.perf_counter()
            training = SGDTraining(
                X, Y_out, code, W, b,
                SGDOptions(lambda_=lam, epochs=epochs, t0=self.t0, bias_scale=self.bias_scale,
                           skip=self.skip, use_W=use_W, random_state=seed_fit + j),
                objective=True, deadline=cache.deadline, walk=cache.eta0_walk)
            for epoch in training.epochs():
                if not record or epoch.number == 0:
                    continue
                e = epoch.number - 1
                with history.timed():
                    F_train[e][:, outs] = epoch.F  # the objective's decision values
                    reg[j, e] = regulariser(lam, W if use_W else b)
                    if test is not None:
                        test[2][e][:, outs] = decision_from_codes(test[0], code_t, W, b, use_W)
            run = training.info
            timings["train"] += time.perf_counter() - t
            runs.append(run)
            if use_W:
                self.W_[outs, : basis.M] = W
            self.b_[outs, : basis.M] = b
        timings["train"] -= history.seconds
        timings["history"] = history.seconds + test_encode
        info["solver"] = {"trainer": "llc_sgd (PEGASOS-style SGD, LL-SVM formulation)",
                          "per_basis_bias": True, "runs": runs}
        if record:
            info["history"] = self._history(history, F_train, Y, y_idx, reg.sum(axis=0), test)

    @staticmethod
    def _history(history, F_train, Y, y_idx, reg, test) -> list:
        """The entries from the epochs' decision values (the groups' planes together): the
        objective's hinge summed over the outputs, as in the objective."""
        for e in range(F_train.shape[0]):
            hinge = float(ova_hinge(Y, F_train[e]).mean())
            test_metrics = ({} if test is None else
                            {"test_accuracy": accuracy(_index_from_scores(test[2][e]), test[1])})
            history.add(e + 1, float(reg[e]) + hinge, train_hinge=hinge,
                        train_accuracy=accuracy(_index_from_scores(F_train[e]), y_idx),
                        **test_metrics)
        return history.entries

    # ---------------------------------------------------------------- predict
    def _scores(self, X) -> np.ndarray:
        """(n, n_out): f_c = Σ_v γ_v (W_c,v·x + b_c,v) + intercept_c, one GEMM per chunk."""
        n_out, M = self.b_.shape
        D = X.shape[1]
        bases = self.bases_
        P = np.zeros((len(bases), M, D))
        S = np.ones((len(bases), M))
        for j, basis in enumerate(bases):
            P[j, : basis.M], S[j, : basis.M] = basis.vectors, basis.singular_values
        blocks = [P.reshape(-1, D)] + ([self.W_.reshape(-1, D)] if self.W_ is not None else [])
        stacked = np.vstack(blocks)
        of_output = np.zeros(n_out, np.intp) if len(bases) == 1 else np.arange(n_out)
        out = np.empty((X.shape[0], n_out))
        chunk = max(1, _PREDICT_CHUNK_ENTRIES // max(1, stacked.shape[0] + n_out * M))
        for start in range(0, X.shape[0], chunk):
            H = np.asarray(X[start : start + chunk] @ stacked.T)
            nb = len(bases) * M
            G = H[:, :nb].reshape(-1, len(bases), M) / S  # γ̃ per basis
            norm = np.abs(G).sum(axis=2, keepdims=True)
            np.divide(G, norm, out=G, where=norm > 0)
            G = G[:, of_output]  # (nc, n_out, M): each output's own code
            V = self.b_[None] if self.W_ is None else H[:, nb:].reshape(-1, n_out, M) + self.b_
            out[start : start + H.shape[0]] = np.einsum("ncm,ncm->nc", G, V) + self.intercept_
        return out

    def decision_function(self, X):
        """Shape (n,) for binary problems (positive = ``classes_[1]``), (n, C) otherwise."""
        check_is_fitted(self)
        X = check_predict_data(self, X)
        F = self._scores(X.tocsr() if sp.issparse(X) else X)
        return F[:, 0] if F.shape[1] == 1 else F

    def predict(self, X):
        scores = self.decision_function(X)
        return labels_from_scores(self.classes_, scores)

    def codes(self, X, basis: int = 0) -> np.ndarray:
        """γ(x) (n, M) of basis ``basis`` (C-OCC: the one-vs-all problem's index)."""
        check_is_fitted(self)
        b = self.bases_[basis]
        return occ_codes(check_predict_data(self, X), b.vectors, b.singular_values)

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        from ..coding.occ import OCCBasis

        bases = self.bases_ if isinstance(self.bases_, list) else [None]
        layout = {"b_": "outputs planes", "intercept_": "outputs", "bases_": (list,),
                  "W_": "outputs planes features" if self.W_ is not None else "none"}
        for j in range(len(bases)):
            layout.update({f"bases_[{j}]": (OCCBasis,),
                           f"bases_[{j}].vectors": f"basis{j} features",
                           f"bases_[{j}].singular_values": f"basis{j}"})
        return layout

    def _check_fitted(self):
        """One basis (global) or one per output, each of at most the model's planes."""
        n_out, planes = self.b_.shape
        if len(self.bases_) not in (1, n_out) or any(
                b.vectors.shape[0] > planes for b in self.bases_) or (
                self.W_ is not None and self.features != "kronecker"):
            raise ValueError(f"bases_ holds {len(self.bases_)} bases that do not fit the "
                             f"model's {n_out} outputs of {planes} planes")

    def __sklearn_is_fitted__(self):
        # ``lambda_`` ends in "_", which would fool check_is_fitted's default
        return hasattr(self, "intercept_")


def _index_from_scores(F):
    return (F[:, 0] > 0).astype(np.int64) if F.shape[1] == 1 else np.argmax(F, axis=1)
