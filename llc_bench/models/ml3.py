"""ML3: Multiclass Latent Locally Linear SVM (Fornoni, Caputo, Orabona; ACML 2013).

Every class ``y`` owns ``m`` linear models ``W_y`` (m x (D+1), a 1 appended to
x).  The score of a class is the best non-negative combination of its models
inside the unit p-ball (eq. 7-8),

    s(x, y) = max_{beta >= 0, ||beta||_p <= 1} beta^T W_y x = || [W_y x]_+ ||_q,

q = p / (p - 1) (eq. 16), with the maximiser beta* in closed form (eq. 14-15).
Prediction is ``argmax_y s(x, y)``.  Training minimises eq. 9 by CCCP (Alg. 1):
each CCCP iteration freezes beta* of the true class at the previous iterate and
runs one Pegasos-style SGD epoch on the convex problem eq. 13 (Alg. 2); see
:mod:`llc_bench.models._ml3_kernel` for the step itself.

Binary problems are the multi-class formulation with c = 2 (the paper has no
separate binary variant; its UCI table runs ML3 as is): ``W_`` holds models
for both classes and ``decision_function`` returns ``s(x, c1) - s(x, c0)``.

Choices where the paper leaves room (released code in ``docs/design.md`` §Released code):

* Learning rate ``eta = 1/(lam (s0 + s))`` with s = 1..n counted within the
  epoch (= the released ``1/(lam (s0 + s + 1))`` with s from 0).  ``s0`` is
  ``2n`` times the number of epochs already run: 0 in the initial epoch (whose
  first step is a plain Pegasos step, eta lam = 1), ``2n`` in the first CCCP
  iteration (ML3 §4) and ``+2n`` after every iteration.
* Initial latent vectors: i.i.d. uniform(0, 1) entries normalised to unit
  p-norm (on the surface of the positive p-ball, where beta* lies).
* ``lambda_=None`` is the released default ``1/n``; the projection radius is
  the paper's ``sqrt(2n/lambda)``.
* Sparse input stays sparse (CSR rows, the appended 1 implicit; the models W are
  dense): training steps cost O(c m nnz(x)) and scores are sparse-dense products.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import progress
from ..coding.local import row_sq_norms
from . import grid_search
from ._base import check_deadline, store_params
from ._ml3_kernel import latent_scores_rows, sgd_epoch, sgd_epoch_csr
from ._validation import (
    COUNT,
    COUNT0,
    FOLDS,
    REGULARISATION,
    Grid,
    InvalidParameter,
    validate_params,
)
from .history import History, error
from .linear import cv_subsample
from .objective import objective

__all__ = ["ML3Classifier", "beta_star", "latent_score", "select_lambda"]

_CHUNK_ELEMS = 1 << 21  # elements per temporary (rows x c x m) block


def _dual_exponent(p: float) -> float:
    if p == 1:
        return np.inf
    if np.isinf(p):
        return 1.0
    return p / (p - 1.0)


def latent_score(c, p: float) -> np.ndarray:
    """s = max_{beta in positive p-ball} beta^T c = ||[c]_+||_q (eq. 16), over the last axis."""
    c = np.asarray(c, dtype=float)
    cp = np.maximum(c, 0.0)
    big = cp.max(axis=-1) if cp.shape[-1] else np.zeros(cp.shape[:-1])
    if p == 1:
        return big
    if np.isinf(p):
        return cp.sum(axis=-1)
    q = _dual_exponent(p)
    cp /= np.where(big > 0, big, 1.0)[..., None]  # scaled by the max: no overflow
    return big * np.sum(_power(cp, q), axis=-1) ** (1.0 / q)


def _power(t, e):
    """t ** e elementwise, with the common small integer exponents as products."""
    if e == 2.0:
        return t * t
    if e == 3.0:
        return t * t * t
    return t**e


def beta_star(c, p: float) -> np.ndarray:
    """arg max of beta^T c over {beta >= 0, ||beta||_p <= 1}, over the last axis.

    Eq. 14 for 1 < p < inf: beta_j = (c_j^+ / ||c^+||_q)^(q-1); eq. 15 for
    p = 1: one-hot on the (first) largest positive entry; p = inf: 1 on the
    positive entries.  Zero when no entry is positive.
    """
    c = np.asarray(c, dtype=float)
    cp = np.maximum(c, 0.0)
    out = np.zeros_like(cp)
    if p == 1:
        if cp.shape[-1]:
            arg = np.argmax(cp, axis=-1)
            hit = np.take_along_axis(cp, arg[..., None], axis=-1) > 0
            np.put_along_axis(out, arg[..., None], hit.astype(float), axis=-1)
        return out
    if np.isinf(p):
        return (cp > 0).astype(float)
    q = _dual_exponent(p)
    nrm = latent_score(cp, p)
    safe = np.where(nrm > 0, nrm, 1.0)
    out = _power(cp / safe[..., None], q - 1.0)
    out[nrm <= 0] = 0.0
    return out


def _random_beta(rng, shape, p):
    """Random latent vectors on the unit sphere of the positive p-ball (ML3 §4)."""
    u = rng.uniform(0.0, 1.0, size=shape)
    big = u.max(axis=-1)
    nrm = big if np.isinf(p) else big * np.sum((u / big[..., None]) ** p, axis=-1) ** (1.0 / p)
    return u / nrm[..., None]  # scaled by the max first: u**p would underflow for large p


def _extend(X):
    """[X, 1] as a C-contiguous float64 array."""
    Xe = np.empty((X.shape[0], X.shape[1] + 1), dtype=np.float64)
    Xe[:, :-1] = X
    Xe[:, -1] = 1.0
    return Xe


def _rows(X):
    """The rows the kernels take: dense [X, 1] (:func:`_extend`), or canonical CSR X with
    the appended 1 left implicit."""
    if not sp.issparse(X):
        return _extend(X)
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _products(Xe, W2):
    """Xe [X, 1] times W2ᵀ (r, D+1) -> (n, r); for CSR rows the 1 is W2's last column."""
    if sp.issparse(Xe):
        return np.asarray(Xe @ W2[:, :-1].T) + W2[:, -1]
    return Xe @ W2.T


def _class_scores(Xe, W, p):
    """s(x, y) for all rows and classes, (n, c): one BLAS matmul per row chunk,
    then the q-norm of the positive parts (numba loop over the result)."""
    n_classes, m, d1 = W.shape
    W2 = W.reshape(n_classes * m, d1)
    p = float(p)
    q = _dual_exponent(p)
    out = np.empty((Xe.shape[0], n_classes))
    step = max(1, _CHUNK_ELEMS // (n_classes * m))
    for lo in range(0, Xe.shape[0], step):
        Z = _products(Xe[lo:lo + step], W2)  # (rows, c*m): W_y x for every class
        latent_scores_rows(Z, m, p, q, out[lo:lo + step])  # eq. 16 row by row
    return out


def _true_class_beta(Xe, y, W, p):
    """beta*_{W, i, y_i} for every training sample (n, m)."""
    n_classes, m, _ = W.shape
    out = np.empty((Xe.shape[0], m))
    for c in range(n_classes):
        idx = np.flatnonzero(y == c)
        if idx.size:
            out[idx] = beta_star(_products(Xe[idx], W[c]), p)
    return out


def _margin_losses(S, y):
    """Hinge of eq. 9b per sample from class scores S (n, c)."""
    n = S.shape[0]
    s_true = S[np.arange(n), y]
    other = S.copy()
    other[np.arange(n), y] = -np.inf
    return np.maximum(0.0, 1.0 + other.max(axis=1) - s_true)


class _CCCPState:
    """The SGD state of one ML3 fit, as the kernels hold it (``_ml3_kernel``): W = a V
    with V (c·m, D+1), ``state`` = [a, ||W||², α], U + α V the running sum of the averaged
    iterates; ``epochs`` run so far (each adds 2n to the rate offset s0)."""

    def __init__(self, Xe, y, n_classes: int, m: int, p: float, lam: float):
        self.Xe, self.y, self.n = Xe, y, Xe.shape[0]
        self.n_classes, self.m, self.p, self.q, self.lam = n_classes, m, p, _dual_exponent(p), lam
        self.radius2 = 2.0 * self.n / lam  # ||W*||_F^2 <= 2n / lambda (ML3 §3)
        d1 = Xe.shape[1] + 1 if sp.issparse(Xe) else Xe.shape[1]
        # ||[x, 1]||² (the 1 implicit in the CSR kernel)
        self.xx = row_sq_norms(Xe) + 1.0 if sp.issparse(Xe) else np.einsum("ij,ij->i", Xe, Xe)
        self.V = np.zeros((n_classes * m, d1))
        self.U = np.zeros((1, 1))
        self.state = np.array([1.0, 0.0, 0.0])
        self.scores, self.bneg = np.empty(n_classes * m), np.empty(m)
        self.no_neg = np.empty((0, n_classes, m))
        self.epochs = 0

    @property
    def W(self) -> np.ndarray:
        """(c, m, D+1), a view of V (W = V after :meth:`fold`)."""
        return self.V.reshape(self.n_classes, self.m, self.V.shape[1])

    def epoch(self, order, beta_true, beta_neg, s_lo: float, average: bool):
        """One kernel call over ``order``; returns (violations, loss)."""
        args = (order, beta_true, beta_neg, self.lam, 2.0 * self.n * self.epochs, s_lo,
                self.radius2, self.p, self.q, self.m, average, self.scores, self.bneg)
        Xe = self.Xe
        if sp.issparse(Xe):
            return sgd_epoch_csr(self.V, self.U, self.state, Xe.data, Xe.indices, Xe.indptr,
                                 self.xx, self.y, *args)
        return sgd_epoch(self.V, self.U, self.state, Xe, self.xx, self.y, *args)

    def fold(self) -> None:
        """W = a V -> V (O(cmD) once per epoch; resets drift of ||W||^2)."""
        self.V[...] *= self.state[0]
        self.state[0] = 1.0
        self.state[1] = float(np.sum(self.V * self.V))

    def cccp_epoch(self, rng, average: bool) -> int:
        """One CCCP iteration: β* of the true classes frozen at W^t (eq. 13b), one SGD
        epoch on eq. 13; ``average``: W = the mean of its n iterates (Alg. 2 line 8)."""
        beta_t = _true_class_beta(self.Xe, self.y, self.W, self.p)
        order = rng.permutation(self.n).astype(np.int64)
        if average:
            self.U = np.zeros_like(self.V)
            self.state[2] = 0.0
        n_viol, _ = self.epoch(order, np.ascontiguousarray(beta_t[order]), self.no_neg, 0.0,
                               average)
        self.epochs += 1
        if average:
            self.V[...] = (self.U + self.state[2] * self.V) / self.n
            self.state[0] = 1.0
        self.fold()
        return n_viol


class ML3Classifier(ClassifierMixin, BaseEstimator):
    """Multiclass Latent Locally Linear SVM (ML3), trained by CCCP + SGD.

    Parameters
    ----------
    n_models : int, default=10
        Local linear models per class (m).
    p : float, default=1.5
        Norm of the latent weight ball, 1 <= p <= inf (1: a single model per
        sample and class; 2: weights proportional to positive model scores).
    lambda_ : float or None, default=None
        Regularisation lambda of eq. 9 (mean-loss scaling, as Pegasos).
        None uses 1 / n_samples, the released code's default, unless
        ``lambda_grid`` is given.
    lambda_grid : sequence of float or None, default=None
        Multiples of 1 / n_samples among which lambda is chosen by
        ``cv_folds``-fold stratified CV on the training data (ML3 §4: "each
        training set is divided in five folds that are used to select the
        regularization parameter"); a single value is used as is, without CV.
        Exclusive with ``lambda_``.
    cv_folds : int, default=5
    cv_max_rows : int or None, default=None
        Run that CV on a stratified subsample of at most this many rows; the
        multiple of 1 / n it selects (a fixed C = 1 / (lambda n), as LIBLINEAR's
        C carries over) is applied to the full training set.
    n_iter : int, default=30
        CCCP iterations, one SGD epoch each (0 keeps the initial W^0).
    averaging : bool, default=True
        Return the average of the SGD iterates of the last CCCP iteration.
    n_init_epochs : int, default=1
        SGD epochs with all latent variables fixed at random values (W^0).
    history : bool, default=True
        Record eq. 9's objective and the training error after every CCCP iteration
        (monitoring only: a class score of every training row per iteration; off, the
        same W_ in less time, as the trials of a search and the folds of the λ CV run).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial latent variables and the epoch permutations.

    Attributes
    ----------
    W_ : ndarray of shape (n_classes, n_models, n_features_in_ + 1)
        Local models; the last column multiplies the appended constant 1.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    lambda_used_ : float
        The regularisation actually used (resolves ``lambda_=None``).
    hinge_defined_ : bool
        True for two classes, where ``decision_function`` = s(x, c1) - s(x, c0)
        is the margin of eq. 9b; for more classes the scores s(x, y) >= 0 are
        not one-vs-all margins, so the runner reports no hinge for them (the
        eq. 9 loss is in ``fit_info_["history"]``).
    fit_info_ : dict
        ``timings`` (seconds: cv, init, cccp, history), ``history`` (one entry
        per CCCP iteration: iteration, objective = lambda/2 ||W||^2 + mean
        eq. 9b hinge, train_error, test_error when ``eval_set`` is given,
        sgd_violations), ``selected`` (lambda), ``cv`` (with ``lambda_grid``: the λ CV's
        results table) and ``model_size`` (n_parameters, n_outputs, n_features, n_models).
    """

    #: the declared search space (conf/search/ml3.yaml) SearchCV takes by default
    search_space = "ml3"

    _parameter_constraints = {
        "n_models": [COUNT], "p": [Interval(Real, 1, None, closed="both")],
        "lambda_": [REGULARISATION, None], "n_iter": [COUNT0], "averaging": ["boolean"],
        "n_init_epochs": [COUNT], "history": ["boolean"],
        "lambda_grid": [Grid(REGULARISATION), None], "cv_folds": [FOLDS],
        "cv_max_rows": [FOLDS, None], "random_state": ["random_state"],
    }

    def __init__(self, *, n_models=10, p=1.5, lambda_=None, n_iter=30, averaging=True,
                 n_init_epochs=1, history=True, lambda_grid=None, cv_folds=5,
                 cv_max_rows=None, random_state=None):
        store_params(self, locals())

    # -- sklearn plumbing -------------------------------------------------
    def __sklearn_is_fitted__(self):
        # ``lambda_`` is a constructor parameter ending in "_", so the default
        # attribute-based test of check_is_fitted would see every instance as fitted.
        return hasattr(self, "W_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # kept sparse (CSR)
        return tags

    def _check_param_combinations(self):
        if self.lambda_grid is not None and self.lambda_ is not None:
            raise InvalidParameter(type(self).__name__, "lambda_", self.lambda_,
                                   reason="give lambda_ or lambda_grid, not both")

    # -- training ---------------------------------------------------------
    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """Fit on (X, y); ``eval_set=(X_test, y_test)`` adds test error to the history.
        ``trial_cache`` (``_base.TrialCache``, a search's trial): its deadline gives the fit
        up at the next epoch or CCCP iteration past it."""
        validate_params(self)  # the one check of the parameters
        X, y_enc = self._check_fit_data(X, y)
        deadline = None if trial_cache is None else trial_cache.deadline
        tic = time.perf_counter()
        lam, cv = self._select_lambda(X, y_enc, trial_cache)
        t_cv = time.perf_counter() - tic
        rng = check_random_state(self.random_state)
        run = _CCCPState(_rows(X), y_enc, self.classes_.size, int(self.n_models),
                         float(self.p), lam)
        test = self._test_rows(eval_set)
        tic = time.perf_counter()
        self._init_epochs(run, rng, deadline)
        t_init = time.perf_counter() - tic
        history, t_cccp = self._cccp(run, rng, test, deadline)
        self._set_fitted(run, cv, {"cv": t_cv, "init": t_init, "cccp": t_cccp,
                                   "history": history.seconds}, history)
        return self

    def _check_fit_data(self, X, y):
        """(X, y as class indices 0..c-1); sets ``classes_`` (at least two)."""
        X, y = validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"],
                             dtype=np.float64)
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"ML3Classifier needs samples of at least 2 classes; "
                             f"got 1 class ({classes[0]!r})")
        self.classes_ = classes
        return X, np.ascontiguousarray(y_enc, dtype=np.int64)

    def _select_lambda(self, X, y_enc, trial_cache=None) -> tuple[float, dict]:
        """λ: ``lambda_`` (None: 1 / n), or the ``lambda_grid`` multiple of 1 / n with the
        lowest CV error (on ≤ ``cv_max_rows`` rows); ``{"cv": the CV's record}``."""
        n = X.shape[0]
        cv = {"cv": None}
        if self.lambda_grid is not None and len(self.lambda_grid) == 1:
            return float(self.lambda_grid[0]) / n, cv  # nothing to choose: no CV
        if self.lambda_grid is None:
            return (1.0 / n if self.lambda_ is None else float(self.lambda_)), cv
        X_cv, y_cv = cv_subsample(X, y_enc, self.cv_max_rows, self.random_state)
        grid = [g / y_cv.size for g in self.lambda_grid]
        params = {k: v for k, v in self.get_params().items()
                  if k not in ("lambda_", "lambda_grid", "cv_max_rows", "random_state")}
        params["history"] = False  # a fold's fit is scored on its held-out rows only
        cv["cv"] = grid_search.record(_lambda_cv(X_cv, y_cv, grid, self.cv_folds,
                                                 self.random_state, trial_cache, **params),
                                      y_cv.size)
        lam_cv = cv["cv"]["params"][cv["cv"]["best_index"]]["lambda"]
        return lam_cv * y_cv.size / n, cv  # the same multiple of 1 / n on all rows

    def _test_rows(self, eval_set):
        """The ``eval_set`` rows as the kernels take them and their labels, or None."""
        if eval_set is None:
            return None
        X_te, y_te = eval_set
        X_te = validate_data(self, X_te, accept_sparse=["csr", "csc", "coo"],
                             dtype=np.float64, reset=False)
        return _rows(X_te), np.asarray(y_te)

    def _init_epochs(self, run, rng, deadline=None) -> None:
        """(1)-(2) of ML3 §4: W^0 by SGD with all latent variables fixed at random values."""
        n = run.n
        chunk = max(1, _CHUNK_ELEMS // (run.n_classes * run.m))
        for _ in range(self.n_init_epochs):
            check_deadline(deadline)
            run.fold()
            order = rng.permutation(n).astype(np.int64)
            for lo in range(0, n, chunk):
                idx = order[lo:lo + chunk]
                b_all = _random_beta(rng, (idx.size, run.n_classes, run.m), run.p)
                b_true = np.ascontiguousarray(b_all[np.arange(idx.size), run.y[idx]])
                run.epoch(idx, b_true, b_all, float(lo), False)
            run.epochs += 1
        run.fold()

    def _cccp(self, run, rng, test, deadline=None) -> tuple[History, float]:
        """(3) the CCCP iterations (Alg. 1), one SGD epoch each (Alg. 2); their history and
        seconds (the history's apart); :class:`FitDeadline` at an iteration past ``deadline``."""
        history, seconds = History("iteration"), 0.0
        bar = progress.bar(total=self.n_iter, desc="CCCP", unit="iter")
        for it in range(self.n_iter):
            check_deadline(deadline)
            tic = time.perf_counter()
            n_viol = run.cccp_epoch(rng, average=self.averaging and it == self.n_iter - 1)
            seconds += time.perf_counter() - tic
            if self.history:
                with history.timed():
                    self._record(history, it + 1, run.W, run.Xe, run.y, run.lam, run.p,
                                 test, n_viol)
            bar.set_postfix(violations=int(n_viol), refresh=False)
            bar.update()
        bar.close()
        return history, seconds

    def _set_fitted(self, run, cv, timings, history) -> None:
        """``W_``, ``lambda_used_``, ``hinge_defined_`` and ``fit_info_``."""
        self.W_ = run.W.copy()
        self.lambda_used_ = run.lam
        self.hinge_defined_ = run.n_classes == 2
        self.fit_info_ = {
            "timings": timings,
            "selected": {"lambda": run.lam},
            **cv,
            "history": history.entries,
            "model_size": {"n_parameters": int(run.W.size), "n_outputs": int(run.n_classes),
                           "n_features": int(run.W.shape[-1] - 1), "n_models": run.m},
        }

    def _record(self, history, iteration, W, Xe, y_enc, lam, p, test, n_viol):
        """The history entry of a CCCP iteration: eq. 9's objective, the errors."""
        S = _class_scores(Xe, W, p)
        test_metrics = {} if test is None else {"test_error": error(
            self.classes_[np.argmax(_class_scores(test[0], W, p), axis=1)], test[1])}
        history.add(iteration, objective(lam, W, _margin_losses(S, y_enc)),
                    train_error=error(np.argmax(S, axis=1), y_enc),
                    sgd_violations=int(n_viol), **test_metrics)

    # -- prediction -------------------------------------------------------
    def _scores(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=["csr", "csc", "coo"], dtype=np.float64,
                          reset=False)
        return _class_scores(_rows(X), self.W_, float(self.p))

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        return {"W_": f"classes models {self.n_features_in_ + 1}"}

    def decision_function(self, X):
        """Class scores s(x, y) (n, c); binary: s(x, classes_[1]) - s(x, classes_[0]), (n,)."""
        S = self._scores(X)
        if S.shape[1] == 2:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X):
        """arg max_y s(x, y) (ties: the first class)."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self._scores(X), axis=1)]


def select_lambda(X, y, grid, folds=5, random_state=None, trial_cache=None, **params):
    """Pick lambda_ by stratified k-fold CV error on a training split.

    ``params`` are passed to :class:`ML3Classifier` (e.g. n_models, p, n_iter);
    the folds and every fit share ``random_state`` (and ``trial_cache``).  Returns
    ``(best_lambda, {lambda: mean CV error})``; ties go to the first grid value.
    """
    table = _lambda_cv(X, y, grid, folds, random_state, trial_cache, **params)
    errors = {p["lambda"]: 1.0 - float(acc)
              for p, acc in zip(table["params"], table["mean_test_score"], strict=True)}
    return table["params"][grid_search.best_index(table)]["lambda"], errors


def _lambda_cv(X, y, grid, folds, random_state, trial_cache=None, **params) -> dict:
    """The results table of ML3 fits at each λ of ``grid`` (candidates {"lambda": λ})."""
    X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    splits = grid_search.kfold_splits(np.unique(y, return_inverse=True)[1], folds,
                                      random_state)

    def fit(X_tr, y_tr, candidate):
        return ML3Classifier(lambda_=candidate["lambda"], random_state=random_state,
                             **params).fit(X_tr, y_tr, trial_cache=trial_cache).predict

    return grid_search.search_grid([{"lambda": float(lam)} for lam in grid],
                                   grid_search.fold_scorer(X, y, splits, fit), len(splits))
