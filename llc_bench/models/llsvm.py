"""LL-SVM and LCC+SVM as scikit-learn estimators.

``LLSVMClassifier`` — locally linear SVM (Ladický & Torr, ICML 2011):
f(x) = γ(x)ᵀ W x + γ(x)ᵀ b (eq. 8), anchors by k-means, inverse-distance coding
over the k nearest anchors, W, b initialised by LIBLINEAR on Kronecker features
(LLC-SAPL eq. 20) and refined by SGD (Alg. 1, docs/design.md §Trainers, §SGD schedule).

``learn_anchors=True`` turns either into its supervised-anchor version: LLC-SAPL
(Mao et al. 2015, soft_knn coding; SAPL-lcc with ``use_W=False``) or LLC-JO
(Zhang et al., ``coding="adaptive_knn"``): the anchors move with the SGD steps
(``sgd_epoch`` module docstring) and prediction encodes with the learned anchors.
``coding="adaptive_knn"`` with fixed anchors is the JO coding alone.

``LCCSVMClassifier`` — LCC+SVM (Yu et al. 2009 as run by LLC-SAPL): a linear
SVM on the local coordinates, f(x) = bᵀγ(x) (LL-SVM eq. 15, W = 0), with the
localized soft-assignment coding (LLC-SAPL eq. 2).  It is the same estimator as
``LLSVMClassifier(use_W=False, coding="soft_knn")``.

Released-code choices (docs/design.md §Released code) are options: ``coding="soft_knn"`` with a
numeric ``beta`` (the Gaussian exp(-c||x - v||²) over the k nearest),
``anchor_method="random_per_class"``, ``lambda_=1e-5, t0=100, skip=200,
bias_scale=0`` (frozen bias).

Multi-class: one-vs-all, one shared set of anchors and one code per sample
(LLC-SAPL eq. 21); W_ has shape (C, m, D) and b_ (C, m), with C = 1 (positive
class ``classes_[1]``) for binary problems.

After ``fit``: ``anchors_`` (m, D), ``W_``, ``b_``, ``classes_``, ``coding_``
(the fitted coding object; ``coding_.beta_`` for soft_knn), ``n_features_in_``
and ``fit_info_``:

    timings: seconds for "cv", "anchors", "encode" (training codes), "init",
      "sgd", "history" (evaluation for the history, not part of training),
      "total" (anchors + encode + init + sgd);
    history: one entry per epoch, epoch 0 = after the init: "epoch",
      "objective" (λ/2 Σ_c||θ_c||² + 1/N Σ_n Σ_c hinge, θ = W, or b for
      LCC+SVM), "train_accuracy", "train_hinge", and with eval_set
      "test_accuracy", "test_hinge" (hinge as the record's metric: averaged
      over samples and, multi-class, over the one-vs-all outputs).  With
      learned anchors every entry re-encodes with the anchors of that epoch.
      Variable-k codings (adaptive_knn) add "train_mean_k" / "test_mean_k"
      (mean k* of the codes) and, from epoch 1, "sgd_mean_k" (mean k* over
      the epoch's SGD steps, JO Fig. 3);
    model_size: n_anchors, k, n_outputs, n_features, n_parameters;
    selected: the λ used; cv (with ``lambda_grid``): the λ CV's results table;
    anchors / coding / init / sgd: the settings actually used (effective m,
      β, LIBLINEAR C and subsample, t0, bias_scale, skip, steps);
    notes: human-readable remarks (init subsample, capped m or k).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import progress
from ..coding.anchors import ANCHOR_METHODS, fit_anchors
from ..coding.local import (
    CODING_NAMES,
    CODINGS,
    LEARNABLE_CODINGS,
    LocalCode,
    coding_from_params,
)
from ..data.rows import SAMPLE_ROWS, ArraySource, RowSource
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
    check_anchor_counts,
    validate_params,
)
from .history import History, accuracy, mean_hinge
from .kronecker import DEFAULT_MAX_NNZ, INIT_SOLVERS, liblinear_init
from .linear import cv_subsample
from .sgd_batches import stream_batches
from .sgd_epoch import decision_from_codes, labels_matrix
from .sgd_training import Epoch, SGDOptions, SGDTraining

#: The default ``calibration_coarse_step`` with fixed anchors (numerics v5) and with
#: learned ones (v6: of the store's 703 whole-grid learned-anchor calibrations, step 2
#: picks the same η0 in 701, the other 2 being one setting at v4 and v5; 9 of 14 points).
FIXED_COARSE_STEP = 4
LEARNED_COARSE_STEP = 2


class _Seeds(NamedTuple):
    """The four seeds of a fit, drawn in this order from ``random_state``."""

    anchors: int  # k-means (and the λ CV, the streamed sample)
    coding: int  # β "auto"'s subsample
    init: int  # the init's subsample
    sgd: int  # the η0 calibration and the epochs' orders


@contextlib.contextmanager
def _timed(seconds: dict, phase: str):
    """Add the seconds the block takes to ``seconds[phase]``."""
    tic = time.perf_counter()
    try:
        yield
    finally:
        seconds[phase] = seconds.get(phase, 0.0) + time.perf_counter() - tic


def _index_predict(predict, classes):
    """A predict function that returns class indices (what the λ CV compares)."""
    return lambda X: np.searchsorted(classes, predict(X))


class _EpochHistory(History):
    """The per-epoch history of ``fit_info_["history"]`` (epoch 0 = after the init) from
    what the trainer reports (:class:`~.sgd_training.Epoch`): objective, training accuracy
    and hinge, with ``eval_set`` the test ones, mean k* for variable-k codings.  With
    learned anchors the test entries re-encode with that epoch's anchors.  ``seconds`` is
    the time spent on the history (not training)."""

    def __init__(self, est, X, y, y_idx, eval_set, epochs):
        super().__init__("epoch")
        self.est, self.y = est, y
        self.Y = labels_matrix(y_idx, len(est.classes_))  # ±1 targets of the rows
        self.learn = bool(est.learn_anchors)
        self.keep = bool(est.history)
        self.variable_k = bool(getattr(est.coding_, "variable_k", False))
        self.test = None
        if self.keep and eval_set is not None:  # test codes once; nothing is tuned on them
            Xt, yt = eval_set
            Xt = est._prepare_X(validate_data(est, Xt, accept_sparse="csr", dtype=np.float64,
                                              order="C", reset=False))
            yt = np.asarray(yt)
            self.test = (Xt, yt, est._encode(Xt))
            self.Yt = labels_matrix(np.searchsorted(est.classes_, yt), len(est.classes_))
            self.known = np.isin(yt, est.classes_)
        self.bar = progress.EpochBar(epochs, X.shape[0], desc="SGD")

    def record(self, epoch: Epoch, W, b) -> None:
        """The entry of an epoch (if kept; W, b its parameters), the bar."""
        if self.keep:
            self._record(epoch, W, b)
        self.bar.tick(epoch.number, epoch.objective)

    def _record(self, epoch: Epoch, W, b) -> None:
        est, F, code = self.est, epoch.F, epoch.code
        with self.timed():
            entry = {"train_hinge": mean_hinge(self.Y, F),
                     "train_accuracy": accuracy(est._labels_from_scores(F), self.y)}
            if self.variable_k:
                entry["train_mean_k"] = float(code.n_active.mean())
            if epoch.mean_k is not None:
                entry["sgd_mean_k"] = epoch.mean_k
            if self.test is not None:
                Xt, yt, code_t = self.test
                if self.learn and epoch.number > 0:
                    code_t = est._encode(Xt)
                Ft = decision_from_codes(Xt, code_t, W, b, est._use_W_fit)
                entry["test_accuracy"] = accuracy(est._labels_from_scores(Ft), yt)
                entry["test_hinge"] = mean_hinge(self.Yt[self.known], Ft[self.known])
                if self.variable_k:
                    entry["test_mean_k"] = float(code_t.n_active.mean())
            self.add(epoch.number, epoch.objective, **entry)

    def close(self) -> None:
        self.bar.close()


class _LocalSVMBase(ClassifierMixin, BaseEstimator):
    """Shared fit/predict; the subclasses differ in their defaults only."""

    @property
    def numerics_version(self) -> int:
        """Enters the result cache key: bump it whenever the same parameters give other
        numbers.  2 = warm-start η0 calibration, best epoch kept, divergence restarts;
        3 = the faster defaults: dual_cd init, k-means on a 20,000-row sample;
        4 (learned anchors only) = their η0 calibrated over 10 passes on a grid of step 4;
        5 = the dual CD init's sums reassociated (vectorised), and with fixed anchors the
        float32 SGD weights and the coarse-to-fine η0 grid by default;
        6 (learned anchors only) = their η0 grid coarse-to-fine too (step 2)."""
        return 6 if self.learn_anchors else 5

    #: ``fit`` accepts a row source (``llc_bench.data.rows.RowSource``) streamed in chunks.
    supports_streaming = True

    _parameter_constraints = {
        "n_anchors": [COUNT], "k": [COUNT], "coding": [StrOptions(CODING_NAMES)],
        "beta": [POSITIVE, StrOptions({"auto"})], "beta_scale": [POSITIVE, None],
        "power": [POSITIVE],
        "anchor_method": [StrOptions(set(ANCHOR_METHODS))], "lambda_": [REGULARISATION],
        "epochs": [COUNT0], "t0": [POSITIVE, StrOptions({"calibrate", "svmsgd2"}), None],
        "bias_scale": [NON_NEGATIVE, StrOptions({"auto"})], "skip": [COUNT, None],
        "init": [StrOptions({"liblinear", "zeros"})], "use_W": ["boolean"],
        "max_nnz": [COUNT], "history": ["boolean"], "random_state": ["random_state"],
        "mu": [POSITIVE], "learn_anchors": ["boolean"], "anchor_scale": [NON_NEGATIVE],
        "anchor_step_max": [POSITIVE, None],
        "lambda_grid": [Grid(REGULARISATION), None], "cv_folds": [FOLDS],
        "cv_max_rows": [Interval(Integral, 10, None, closed="left"), None],
        "kmeans_sample": [COUNT, None], "kmeans_tol": [POSITIVE, None],
        "init_solver": [StrOptions(set(INIT_SOLVERS)), None], "init_eps": [POSITIVE, None],
        "calibration_passes": [COUNT, None],
        "calibration_coarse_step": [Interval(Integral, 1, None, closed="left"), None],
        "sgd_dtype": [StrOptions({"float64", "float32"}), None],
    }

    def _check_param_combinations(self):
        check_anchor_counts(self)
        if self.learn_anchors and self.coding not in LEARNABLE_CODINGS:
            raise InvalidParameter(
                type(self).__name__, "learn_anchors", self.learn_anchors,
                reason=f"needs a coding with an anchor gradient {LEARNABLE_CODINGS}, "
                f"not {self.coding!r}")

    def _select_lambda(self, X, y_idx, seed, info, trial_cache=None) -> float:
        """λ: ``lambda_``, or the ``lambda_grid`` value of the best ``cv_folds``-fold CV
        accuracy on (≤ ``cv_max_rows`` stratified rows of) the training data; a one-value
        grid is used as is.  The CV fits are clones of this estimator at each λ."""
        grid = None if self.lambda_grid is None else [float(v) for v in self.lambda_grid]
        if not grid:
            return float(self.lambda_)
        if len(grid) == 1:
            return grid[0]

        def fit_fold(Xf, yf, params):
            fold = clone(self).set_params(**params, lambda_grid=None, history=False)
            return _index_predict(fold.fit(Xf, self.classes_[yf], trial_cache=trial_cache)
                                  .predict, self.classes_)

        X_cv, y_cv = cv_subsample(X, y_idx, self.cv_max_rows, seed)
        candidates = [{"lambda_": lam} for lam in grid]
        info["cv"] = grid_search.record(grid_search.kfold_search(
            X_cv, y_cv, candidates, int(self.cv_folds), seed, fit_fold), len(y_cv))
        return grid[info["cv"]["best_index"]]

    @staticmethod
    def _prepare_X(X):
        if sp.issparse(X):
            X = X.tocsr()
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
        return X

    def _encode(self, X, anchors=None, memo=None) -> LocalCode:
        return self.coding_.encode(X, self.anchors_ if anchors is None else anchors, memo=memo)

    # -------------------------------------------------------------------- fit
    def fit(self, X, y, eval_set=None, *, trial_cache=None):
        """Fit anchors, coding, LIBLINEAR init and SGD epochs.

        ``eval_set=(X_test, y_test)`` adds test accuracy to the per-epoch history
        (the test codes are computed once; nothing is tuned on them).

        ``X`` may be a row source (``llc_bench.data.rows.RowSource``, e.g. out-of-core
        data): then λ CV, anchors, coding, init, the η0 calibration, the objective that
        picks the kept epoch and the history's training metrics use a seeded sample of
        ≤ ``SAMPLE_ROWS`` rows (all rows if fewer), and the SGD epochs stream the chunks
        in a seeded order (codes computed per chunk).  Arrays are a one-chunk source whose
        sample is all rows, so a one-chunk source whose rows fit the sample gives exactly
        the in-memory fit.  ``fit_info_``: see the module docstring.

        ``trial_cache`` (``_base.TrialCache``, a search's trial): the anchors, neighbour
        searches, init duals and η0 walk it shares, its deadline and init pass cap; None
        shares nothing.
        """
        validate_params(self)  # the one check of the parameters
        source, y = self._check_fit_data(X, y)
        check_classification_targets(y)
        y_idx = self._set_classes(y)
        seeds = self._draw_seeds()
        rows = source.sample(SAMPLE_ROWS, [seeds.anchors, 7])  # what the in-memory steps see
        X, y_s, y_si = source.take(rows), y[rows], y_idx[rows]
        self._use_W_fit = bool(self.use_W)  # what predict uses, whatever set_params does
        info, seconds = {}, {}
        cache = TrialCache(memo=False) if trial_cache is None else trial_cache
        with _timed(seconds, "cv"):
            lam = self._select_lambda(X, y_si, seeds.anchors, info, trial_cache)
        info["selected"] = {"lambda_": lam}
        with _timed(seconds, "anchors"):
            self.anchors_, info["anchors"] = self._fit_anchors(X, y_si, seeds.anchors, cache)
        with _timed(seconds, "encode"):
            code, info["coding"] = self._fit_coding(X, seeds.coding, cache.distances)
        with _timed(seconds, "init"):
            W, b, info["init"] = self._init_weights(X, code, y_si, len(self.classes_),
                                                    self.anchors_.shape[0], lam, seeds.init,
                                                    cache)
        history = _EpochHistory(self, X, y_s, y_si, eval_set, int(self.epochs))
        with _timed(seconds, "sgd"):
            batches = self._batches(source, y_idx, code, whole=len(rows) == source.n_rows)
            self.W_, self.b_, info["sgd"] = self._sgd(X, code, W, b, lam, batches, history,
                                                      seeds.sgd, cache)
        self.fit_info_ = self._fit_info(source, X, rows, history, seconds, info)
        return self

    def _draw_seeds(self) -> _Seeds:
        """The four seeds of a fit, drawn from ``random_state``."""
        return _Seeds(*map(int, check_random_state(self.random_state).randint(0, 2**31 - 1,
                                                                               size=4)))

    def _set_classes(self, y) -> np.ndarray:
        """``classes_`` (at least two) and the class index of every label."""
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes; got 1 class "
                f"({self.classes_[0]!r})"
            )
        return y_idx

    def _fit_anchors(self, X, y_idx, seed, cache):
        """Anchors (m, D) by k-means (or random per class) and their info."""
        return fit_anchors(X, self.n_anchors, method=self.anchor_method, y=y_idx,
                           random_state=seed, sample_rows=self.kmeans_sample,
                           tol=self.kmeans_tol, memo=cache.anchors, rows=cache.anchor_rows)

    def _fit_coding(self, X, seed, memo=None) -> tuple[LocalCode, dict]:
        """``coding_`` fitted on X (β "auto") and the training codes."""
        k = min(self.k, self.anchors_.shape[0])
        self.coding_ = coding_from_params(self.coding, k, vars(self))  # its own options
        self.coding_.fit(X, self.anchors_, random_state=seed)
        return self._encode(X, memo=memo), self.coding_.params()

    def _sgd(self, X, code, W, b, lam, batches, history, seed, cache):
        """The SGD epochs from the init (W, b; updated in place and returned with the
        trainer's info), each reported to the history."""
        if self.learn_anchors:
            self.initial_anchors_ = self.anchors_.copy()
        training = SGDTraining(X, history.Y, code, W, b, self._sgd_options(lam, seed),
                               batches=batches, objective=True, deadline=cache.deadline,
                               walk=cache.eta0_walk,
                               calibration_repeats=cache.calibration_repeats)
        try:
            for epoch in training.epochs():
                history.record(epoch, W, b)
        finally:
            history.close()
        return W, b, training.info

    def _sgd_options(self, lam, seed) -> SGDOptions:
        """The trainer's settings: the parameters, the defaults that depend on
        ``learn_anchors`` resolved."""
        learn = bool(self.learn_anchors)
        return SGDOptions(
            lambda_=lam, epochs=int(self.epochs), t0=self.t0, bias_scale=self.bias_scale,
            skip=self.skip, use_W=self._use_W_fit, random_state=seed, learn_anchors=learn,
            anchors=self.anchors_ if learn else None, coding=self.coding_ if learn else None,
            anchor_scale=float(self.anchor_scale),
            anchor_step_max=None if self.anchor_step_max is None else float(self.anchor_step_max),
            calibration_passes=self.calibration_passes,
            calibration_coarse_step=self.calibration_coarse_step or (
                LEARNED_COARSE_STEP if learn else FIXED_COARSE_STEP),
            sgd_dtype=self.sgd_dtype or (None if learn else "float32"))

    def _batches(self, source, y_idx, code, whole: bool):
        """The epochs' batches over the source's chunks (codes per chunk with fixed
        anchors); ``whole``: the in-memory rows are all of the source, so their codes are
        the one chunk's."""
        learn = bool(self.learn_anchors)
        encode = None if learn else functools.partial(self.coding_.encode, anchors=self.anchors_)
        return stream_batches(source, y_idx, len(self.classes_), encode,
                              known={0: code} if whole and source.n_chunks == 1
                              and not learn else None)

    def _fit_info(self, source, X, rows, history, seconds, info) -> dict:
        timings = {**seconds, "sgd": seconds["sgd"] - history.seconds,
                   "history": history.seconds}
        timings["total"] = sum(timings[s] for s in ("anchors", "encode", "init", "sgd"))
        m, k = self.anchors_.shape[0], self.coding_.k
        notes = [] if not source.streamed else [
            f"streamed: {source.n_rows} rows in {source.n_chunks} chunks of "
            f"≤ {source.chunk_rows}; λ CV, anchors, coding, init, η0 calibration, "
            f"kept-epoch objective and training history on a seeded sample of "
            f"{len(rows)} rows; the next chunk is read and encoded in a "
            f"second thread during the SGD on the current one"]
        return {
            "notes": notes + self._capped_notes(X.shape[0], m, k, info["init"]),
            "timings": timings,
            "history": history.entries,
            "model_size": self._model_size(m, k, history.Y.shape[1], X.shape[1]),
            **info,
        }

    def _check_fit_data(self, X, y):
        """(source, y): validated in-memory arrays as a one-chunk source, or a row source
        with its labels."""
        if not isinstance(X, RowSource):
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
            return ArraySource(self._prepare_X(X)), y
        y = np.asarray(y)
        if y.shape != (X.n_rows,):
            raise ValueError(f"y has shape {y.shape}, the source has {X.n_rows} rows")
        self.n_features_in_ = X.n_features
        return X, y

    def _init_weights(self, X, code, y_idx, n_classes, m, lam, seed, cache):
        """W (n_out, m, D), b (n_out, m) and the init's info: LIBLINEAR on z (LLC-SAPL eq.
        20), or zeros."""
        if self.init == "liblinear":
            return liblinear_init(
                X, code, y_idx, n_classes, m, lam, use_W=bool(self.use_W),
                max_nnz=int(self.max_nnz), random_state=seed,
                solver=self.init_solver or "l2_hinge", eps=self.init_eps,
                warm=cache.warm_duals, pass_cap=cache.pass_cap,
            )
        n_out = 1 if n_classes == 2 else n_classes
        return np.zeros((n_out, m, X.shape[1])), np.zeros((n_out, m)), {"method": "zeros"}

    def _capped_notes(self, n, m, k, init_info) -> list:
        """Remarks on what the data capped: m, k, the init's rows."""
        notes = []
        if m < self.n_anchors:
            notes.append(f"n_anchors capped at the {n} training rows: m = {m}")
        if k < self.k:
            notes.append(f"k capped at m = {m}")
        if init_info.get("subsampled"):
            notes.append(
                f"LIBLINEAR init on a seeded class-stratified subsample of "
                f"{init_info['n_rows']} of {init_info['of_rows']} rows "
                f"(z would hold {init_info['estimated_nnz']} > max_nnz = {init_info['max_nnz']} "
                f"entries)"
            )
        return notes

    def _model_size(self, m, k, n_out, D) -> dict:
        n_params = n_out * m * (D + 1) if self._use_W_fit else n_out * m
        return {"n_anchors": int(m), "k": int(k), "n_outputs": int(n_out),
                "n_features": int(D), "n_parameters": int(n_params),
                "n_anchor_values": int(m * D)}

    # ---------------------------------------------------------------- predict
    def _labels_from_scores(self, F):
        if F.shape[1] == 1:
            return self.classes_[(F[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(F, axis=1)]

    def _scores(self, X, timings: dict | None = None, memo=None) -> np.ndarray:
        """(n, n_out) decision values f_c(x) = Σ_a γ_a (W_c[j_a]·x + b_c[j_a]) (eq. 8):
        the codes (one distance GEMM against the anchors), then only the k active
        linear models per row (``decision_from_codes``, the history's kernel)."""
        if isinstance(X, RowSource):
            return np.vstack([self._scores(Xc, timings) for _, Xc in X.chunks()])
        t = time.perf_counter()
        code = self._encode(X, memo=memo)
        t_enc = time.perf_counter() - t
        t = time.perf_counter()
        out = decision_from_codes(X, code, self.W_, self.b_, self._use_W_fit)
        if timings is not None:
            timings["encode"] = timings.get("encode", 0.0) + t_enc
            timings["decision"] = timings.get("decision", 0.0) + time.perf_counter() - t
        return out

    def _validate_predict_X(self, X):
        check_is_fitted(self)
        if isinstance(X, RowSource):
            return X
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C", reset=False)
        return self._prepare_X(X)

    def decision_function(self, X):
        """Shape (n,) for binary problems (positive = ``classes_[1]``), (n, C) otherwise."""
        F = self._scores(self._validate_predict_X(X))
        return F[:, 0] if F.shape[1] == 1 else F

    def predict(self, X, *, trial_cache=None):
        """The labels of X; ``trial_cache``: a search's trial scoring its validation rows
        shares their neighbour search with the trials of the same anchors and k."""
        memo = None if trial_cache is None else trial_cache.distances
        return self._labels_from_scores(self._scores(self._validate_predict_X(X), memo=memo))

    def predict_timed(self, X):
        """``(labels, timings)`` with seconds for "validate", "encode" (distance part of
        the GEMM, k-NN, weights), "decision" (gather, weighting), "total", "per_sample"."""
        timings: dict = {}
        t0 = time.perf_counter()
        Xv = self._validate_predict_X(X)
        timings["validate"] = time.perf_counter() - t0
        labels = self._labels_from_scores(self._scores(Xv, timings))
        timings["total"] = time.perf_counter() - t0
        timings["per_sample"] = timings["total"] / max(Xv.shape[0], 1)
        return labels, timings

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec language)."""
        codings = tuple(CODINGS.values())
        return {"anchors_": "anchors features", "W_": "outputs anchors features",
                "b_": "outputs anchors", "_use_W_fit": "bool", "coding_": codings,
                "coding_.k": "count",
                **{f"coding_.{name}": "number"
                   for name in getattr(type(self.coding_), "fitted_numbers", ())}}

    def __sklearn_is_fitted__(self):
        # the parameter ``lambda_`` ends in "_", which would fool check_is_fitted's default
        return hasattr(self, "W_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LLSVMClassifier(_LocalSVMBase):
    """Locally linear SVM (Ladický & Torr 2011).

    Parameters
    ----------
    n_anchors : int, default 100
        m, the number of anchors (capped at the number of training rows; at most
        kmeans_sample).
    k : int, default 8
        Active (nearest) anchors per sample.
    coding : {"inverse_distance", "soft_knn", "adaptive_knn"}, default "inverse_distance"
        Local coding: the paper's inverse distance, the Gaussian/soft
        assignment exp(-β d²) over the k nearest (the released code's coding;
        LLC-SAPL eq. 2), or LLC-JO's adaptive k*-NN coding (k = cap on k*).
    beta : float or "auto", default "auto"
        β of ``soft_knn`` (see ``llc_bench.coding.local`` for "auto").
    beta_scale : float or None, default None
        A factor on that β (None = 1): the sharpness a selection searches, free of the
        data's scale when ``beta="auto"``.
    power : float, default 1.0
        Exponent p of ``inverse_distance`` weights 1/||x - v||^p (2 = the
        released code's variant).
    anchor_method : {"kmeans", "random_per_class", "kmeans_per_class"}, default "kmeans"
        k-means anchors (the paper), random training points per class (the
        released code), or k-means within each class (m split between the classes).
    lambda_ : float, default 1e-4
        λ of the objective λ/2||W||² + mean hinge (eq. 9); LIBLINEAR init C = 1/(λN).
    epochs : int, default 10
        SGD passes over the training set (0 = LIBLINEAR init only).
    t0 : float, None, "calibrate" or "svmsgd2", default None
        Rate offset in η_t = 1/(λ(t + t0)).  None / "calibrate": η0 = 1/(λ t0) chosen
        from the LIBLINEAR warm start on a grid, by the objective after one pass over
        seeded training subsamples (``eta0_calibration.calibrate_eta0``); "svmsgd2": λ^(-3/4)
        (SVMSGD2, which assumes ||x|| ≈ 1); a number: the papers' fixed schedules.
        Whatever the schedule, the epoch of lowest training objective is kept (never
        worse than the init); a calibrated run that diverges restarts with a smaller η0.
    bias_scale : float or "auto", default "auto"
        Multiplier of the bias learning rate; "auto" = half the largest mean
        |x_j| (SVMSGD2); 0 freezes b (the released code).
    skip : int or None, default None
        Steps between two weight decays; None = 16 dense, 16·D/avg_nnz sparse.
    init : {"liblinear", "zeros"}, default "liblinear"
        W, b from LIBLINEAR on Kronecker features, or zeros.
    use_W : bool, default True
        False = LCC+SVM (W stays 0, only b is learned and decayed): the same
        estimator as :class:`LCCSVMClassifier`, so ``trainer=llc_sgd`` can map to
        one class.
    max_nnz : int, default 50_000_000
        Cap on the stored entries of the Kronecker matrix for the init; above
        it a seeded class-stratified subsample is used (reported in fit_info_).
    history : bool, default True
        Record objective / accuracies after the init and every epoch.
    random_state : int, RandomState or None
        Seeds k-means, the β subsample, the init subsample and the SGD order.
    mu : float, default 1.0
        μ of ``adaptive_knn`` (LLC-JO's "Lipschitz to noise ratio"): η = μ d with
        d the squared distance; larger μ, fewer active anchors (JO Fig. 4).
        1.0 is from the JO grid {0.1, ..., 100}.
    learn_anchors : bool, default False
        Move the active anchors on every margin violation (LLC-SAPL eq. 16, 21;
        LLC-JO eq. 24) before the W, b update; needs ``soft_knn`` or
        ``adaptive_knn``.  False = fixed k-means anchors (LL-SVM).
    anchor_scale : float, default 1.0
        Multiplier of the anchor learning rate: v_j += η_t·anchor_scale·y·∂f/∂v_j.
    anchor_step_max : float or None, default None
        Optional trust region (not in the papers): each anchor move is
        v_j += c (x - v_j) with c clipped to [-anchor_step_max, anchor_step_max]
        (1 = never past x).  None = the papers' unclipped step.
    lambda_grid : sequence of float or None, default None
        λ values to choose from by ``cv_folds``-fold CV accuracy on the training data
        (ML3 Table 2: "every method's regulariser by 5-fold CV"); one value is used as
        is; None = ``lambda_``.  The choice, the fold accuracies and whether it is at the
        grid's edge are in ``fit_info_["cv"]``.
    cv_folds : int, default 5
        Folds of the λ CV.
    cv_max_rows : int or None, default None
        Run the λ CV on a seeded stratified subsample of this many rows.
    kmeans_sample : int or None, default 20000
        k-means on a seeded sample of this many rows (None = all rows): on mnist 5x
        faster anchors at the same accuracy (``scripts/bench_llsvm.py``).
    kmeans_tol : float or None, default None
        Opt-in: k-means' relative tolerance (None = scikit-learn's 1e-4).
    init_solver : {"l2_hinge", "l2_squared_hinge", "dual_cd"} or None, default "dual_cd"
        Solver of the init: "dual_cd" = LIBLINEAR ``-s 3``'s algorithm (dual CD on the
        hinge of eq. 9) run on z without building it (``_dual_cd_kernel``: 3-4x faster,
        no copy of z, a 1000-pass cap so that it converges, the classes in parallel on
        the numba threads; dense and CSR x give the same numbers); None / "l2_hinge" = LIBLINEAR
        ``-s 3`` itself on z (its 300-pass cap); "l2_squared_hinge" = ``-s 2`` (primal
        Newton on the squared hinge).
    init_eps : float or None, default None
        LIBLINEAR's ``-e`` for the init (None = its default: 0.1 for -s 3, 0.01 for -s 2).
    calibration_passes : int or None, default None
        Passes over each calibration subsample per η0 (None = 1 with fixed anchors, 10
        with learned anchors, on a grid of step 4).  One pass is myopic for learned
        anchors, whose gain builds up over epochs: on letter LLC-SAPL (60 epochs) the
        one-pass η0 = 5e-4 never lowers the objective (the init is kept, 94.75 %), the
        10-pass η0 = 0.07 ends 28 % below it (+1.6 validation points).  Scoring each η0 on
        other rows than the passes trained on picks a tiny η0 everywhere (a 2000-row
        subsample's SGD noise); results/bench/calibration_passes.txt.
    calibration_coarse_step : int or None, default None
        η0 calibration on every n-th point of its grid, then on the points within n - 1
        steps of the best of them (1 = the whole grid; None = 4 with fixed anchors, 2
        with learned anchors).  With n = 4 the fixed-anchor calibration runs 13 of its 27
        points; on the recorded grids of the tables' 286 fixed-anchor runs (v4) it picks
        the whole grid's η0 in 285 (results/bench/bench_llsvm.txt).  With n = 2 the
        learned-anchor calibration (each point 10 passes, most of a fit's time) runs 9 of
        its 14 points and picks the whole grid's η0 in 701 of the 703 recorded (v4, v5)
        calibrations (results/bench/bench_learned_calibration.txt).
    sgd_dtype : {"float64", "float32"} or None, default None
        The SGD epochs (and their η0 calibration) update a W of this dtype (None =
        float32 with fixed anchors, float64 with learned anchors).  A step reads k·C·D
        weights, so float32 halves its memory traffic (MNIST, 10 classes, k = 8: one
        epoch 0.77x); the dot products still sum in float64 and b stays float64.  Not
        bitwise the float64 fit: about 1e-6 relative in W after an epoch
        (``tests/models/test_sgd_dtype.py``); the same model on usps, letter and mnist.
    """

    #: the declared search space (conf/search/llsvm.yaml) SearchCV takes by default
    search_space = "llsvm"

    def __init__(self, *, n_anchors=100, k=8, coding="inverse_distance", beta="auto",
                 beta_scale=None, power=1.0, anchor_method="kmeans", lambda_=1e-4, epochs=10,
                 t0=None, bias_scale="auto",
                 skip=None, init="liblinear", use_W=True, max_nnz=DEFAULT_MAX_NNZ, history=True,
                 random_state=None, mu=1.0, learn_anchors=False, anchor_scale=1.0,
                 anchor_step_max=None, lambda_grid=None, cv_folds=5, cv_max_rows=None,
                 kmeans_sample=20000, kmeans_tol=None, init_solver="dual_cd", init_eps=None,
                 calibration_passes=None, calibration_coarse_step=None, sgd_dtype=None):
        store_params(self, locals())


def _init_with(base_init, **defaults):
    """``base_init`` with other defaults: the ``__init__`` of a preset of an estimator.
    scikit-learn reads the parameters from its signature (``get_params``, ``clone``)."""
    signature = inspect.signature(base_init)
    unknown = set(defaults) - set(signature.parameters)
    if unknown:
        raise TypeError(f"not parameters of {base_init.__qualname__}: {sorted(unknown)}")
    signature = signature.replace(parameters=[
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in signature.parameters.values()])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        base_init(**bound.arguments)

    __init__.__signature__ = signature
    __init__.__doc__ = base_init.__doc__
    return __init__


class LCCSVMClassifier(_LocalSVMBase):
    """LCC+SVM: a linear SVM on the local coordinates, f(x) = bᵀγ(x) (W fixed at 0).

    Same parameters as :class:`LLSVMClassifier`; the defaults differ:
    coding "soft_knn" (LLC-SAPL eq. 2) and ``use_W=False``.  Here b is the weight
    vector: it is regularised (the skip decay applies to b) and ``bias_scale``
    "auto" means 1, i.e. b moves with the plain rate η_t.  The LIBLINEAR init is
    a linear SVM on γ(x) alone (LLC-SAPL §3.3).
    """

    #: the declared search space (conf/search/lcc_svm.yaml) SearchCV takes by default
    search_space = "lcc_svm"

    __init__ = _init_with(LLSVMClassifier.__init__, coding="soft_knn", use_W=False)


class SAPLClassifier(LLSVMClassifier):
    """LLC-SAPL (Mao, Hu, Lei, Wu & Li 2015): locally linear coding with supervised anchor
    point learning.  The soft-assignment coding over the k nearest anchors (eq. 2), the
    LIBLINEAR start on z = γ(x) ⊗ [x; 1] (eq. 20), then SGD that moves the k active
    anchors with the classifier on every margin violation (eqs. 15-17).

    Same parameters as :class:`LLSVMClassifier` (the ``sapl`` preset); the defaults
    differ: coding "soft_knn", ``learn_anchors=True`` and ``anchor_scale=0.01`` (the
    paper's rate 1/(λ(t + t0)) moves the anchors far too much at small λ).
    """

    #: the declared search space (conf/search/sapl.yaml) SearchCV takes by default
    search_space = "sapl"

    __init__ = _init_with(LLSVMClassifier.__init__, coding="soft_knn", learn_anchors=True,
                          anchor_scale=0.01)


class JOClassifier(LLSVMClassifier):
    """LLC-JO (Zhang et al.): locally linear classifiers with an adaptive local coding,
    jointly optimised with the anchors.  The coding keeps, per sample, the k* nearest
    anchors that the Lipschitz-to-noise ratio ``mu`` admits (k* ≤ k), and the anchors move
    with the classifier as in LLC-SAPL.

    Same parameters as :class:`LLSVMClassifier` (the ``jo`` preset); the defaults differ:
    coding "adaptive_knn", ``learn_anchors=True`` and ``anchor_scale=0.01``.
    """

    #: the declared search space (conf/search/jo.yaml) SearchCV takes by default
    search_space = "jo"

    __init__ = _init_with(LLSVMClassifier.__init__, coding="adaptive_knn", learn_anchors=True,
                          anchor_scale=0.01)
