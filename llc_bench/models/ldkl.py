"""LDKL — Local Deep Kernel Learning (Jose, Goyal, Aggrwal & Varma, ICML 2013).

A balanced binary tree of depth D: M = 2^(D+1) - 1 nodes k (breadth-first, children
2k+1 and 2k+2), each with a classifier w_k and a local embedding θ'_k, and L = 2^D - 1
internal nodes l with a gating vector θ_l.  With x̃ = [x; 1] (the bias is a constant
feature, so every parameter vector has a bias entry, regularised like the rest):

  (L1) f(x) = Σ_k φ_k(x) w_kᵀx̃,   φ_k(x) = I_k(x) tanh(σ θ'_kᵀx̃)     (the primal LDKL
       classifier: φ_L(x) is the tree-structured local feature, y = sign f)
  (L2) I_k(x): at test time the indicator that x reaches k, going left at l when
       θ_lᵀx̃ > 0 — only the D + 1 nodes of one root-to-leaf path are evaluated;
       in training the smoothed I_k(x) = Π_{l above k} (1 ± g_l)/2 = Π sigmoid(±2 s θ_lᵀx̃),
       g_l = tanh(s θ_lᵀx̃), + when k is under the left child of l
  (P)  P = λ_W/2 ||W||² + λ_θ/2 ||Θ||² + λ_θ'/2 ||Θ'||² + 1/N Σ_i max(0, 1 - y_i f(x_i))
  (L3) ∂f/∂w_k  = φ_k x̃
  (L4) ∂f/∂θ'_k = σ I_k (1 - tanh²(σ θ'_kᵀx̃)) (w_kᵀx̃) x̃
  (L5) ∂f/∂θ_l  = s [(1 - g_l) S_{2l+1} - (1 + g_l) S_{2l+2}] x̃,  S_k = Σ_{j under k} φ_j w_jᵀx̃
  (L6) iteration t = 1..T on a mini-batch B_t of B rows: every parameter shrinks by
       t/(t+1) (the regulariser's step), then moves by η_t/B Σ_{i ∈ B_t, y_i f_i < 1}
       y_i ∂f_i/∂(.) with η_t = 1/(λ √(t+1)), λ the group's λ_W, λ_θ', λ_θ — and for θ
       the step η_t/s, i.e. without the chain-rule factor s of (L5), as the reference
       code updates θ
  (L7) all gradients of an iteration are taken at the parameters of its start.

The labels (L1)-(L7) are ours.  In (L6) the shrink 1 - 1/(t+1) is a step 1/(λ(t+1)) on
the regulariser while the loss moves by 1/(λ√(t+1)): the regulariser's weight relative
to the loss decays like 1/√t, so the λ's act on the schedule more than as the λ's of (P).

The paper's text was not at hand when this was written: the schedule, the smoothing
and the defaults follow the authors' released LDKL code as ported to ML.NET
(``LdSvmTrainer``): depth 3, λ_W = 0.1, λ_θ = λ_θ' = 0.01, σ = 1, T = 15000
iterations of B = ⌊√N⌋ rows, parameters (biases too) initialised uniformly in
[-1, 1], and the gate sharpness annealed: every ``gate_every`` = 100 iterations
s = gate_scale / mean|θ_lᵀx̃| (100 random rows, here over all internal nodes; the
reference draws one random node per row) times 2^(anneal_doublings · t / T), so the
smoothed gates start soft (mean |s θᵀx̃| = 0.1) and end ~2^10 times sharper, close to
the hard test-time routing.  Our choices where the reference is silent or differs:
batches are consecutive slices of per-pass random permutations of the rows (the
reference draws each batch independently); (L4) keeps the factor σ (the reference
drops it; the same for the default σ = 1); multi-class is one-vs-all with one tree per
class (the reference is binary; ML.NET wraps it one-vs-all), all trees seeing the same
batches.  CSR input stays sparse (the kernel's CSR form: O(M·nnz) per row).

After ``fit``: ``W_``, ``theta_prime_`` (K, M, d + 1), ``theta_`` (K, L, d + 1) with
K = 1 (scoring ``classes_[1]``) for binary problems, ``gate_sharpness_`` (K,) the
final s, ``classes_``, ``n_features_in_`` and ``fit_info_``.
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._base import store_params
from ._ldkl_kernel import ldkl_sgd_steps, ldkl_sgd_steps_csr
from ._validation import (
    COUNT,
    COUNT0,
    NON_NEGATIVE,
    POSITIVE,
    REGULARISATION,
    SparseInputMixin,
    check_fit_data,
    check_predict_data,
    labels_from_scores,
    validate_params,
)
from .history import History, accuracy, mean_hinge

#: Rows drawn to set the gate sharpness (the reference's NumberOfSamplesForGammaUpdate).
GATE_SAMPLE = 100


def tree_sizes(depth: int) -> tuple[int, int]:
    """(M nodes, L internal nodes) of the balanced tree of depth ``depth``."""
    return 2 ** (depth + 1) - 1, 2**depth - 1


def _affine(X, P):
    """X x̃ᵀ-products with parameter rows P (r, d + 1) whose last column is the bias."""
    return np.asarray(X @ P[:, :-1].T) + P[:, -1]


# ------------------------------------------------------------------ smoothed tree (numpy)


def tree_forward(X, W, Th, Tp, sigma, s):
    """Smoothed (L1)-(L2) on dense X: (f (n,), path I (n, M), tanh(σθ'ᵀx̃), wᵀx̃, g)."""
    n = X.shape[0]
    M, L = W.shape[0], Th.shape[0]
    g = np.tanh(s * _affine(X, Th))
    path = np.empty((n, M))
    path[:, 0] = 1.0
    for l in range(L):
        path[:, 2 * l + 1] = path[:, l] * (1.0 + g[:, l]) * 0.5
        path[:, 2 * l + 2] = path[:, l] * (1.0 - g[:, l]) * 0.5
    loc = np.tanh(sigma * _affine(X, Tp))
    wx = _affine(X, W)
    f = (path * loc * wx).sum(axis=1)
    return f, path, loc, wx, g


def margin_gradients(X, coef, path, loc, wx, g, sigma, s):
    """Σ_i coef_i ∂f_i/∂(W, Θ, Θ') by (L3)-(L5), each (rows, d + 1) with the bias last."""
    L = g.shape[1]
    S = path * loc * wx
    for l in range(L - 1, -1, -1):  # subtree sums, children before parents
        S[:, l] += S[:, 2 * l + 1] + S[:, 2 * l + 2]
    a_w = coef[:, None] * path * loc  # (L3)
    a_tp = coef[:, None] * sigma * path * (1.0 - loc**2) * wx  # (L4)
    a_th = coef[:, None] * s * ((1.0 - g) * S[:, 1::2][:, :L] - (1.0 + g) * S[:, 2::2][:, :L])

    def outer(a):  # Σ_i a_ik x̃_i
        return np.hstack([a.T @ X, a.sum(axis=0)[:, None]])

    return outer(a_w), outer(a_th), outer(a_tp)


def smoothed_objective(X, y, W, Th, Tp, *, lam_w, lam_th, lam_tp, sigma, s):
    """(P) and its exact gradients (∂W, ∂Θ, ∂Θ') for one binary tree, y ∈ {-1, +1}."""
    f, path, loc, wx, g = tree_forward(X, W, Th, Tp, sigma, s)
    n = X.shape[0]
    viol = y * f < 1.0
    obj = (0.5 * (lam_w * np.sum(W**2) + lam_th * np.sum(Th**2) + lam_tp * np.sum(Tp**2))
           + np.maximum(0.0, 1.0 - y * f).mean())
    gW, gTh, gTp = margin_gradients(X, -(y * viol) / n, path, loc, wx, g, sigma, s)
    return obj, gW + lam_w * W, gTh + lam_th * Th, gTp + lam_tp * Tp


# ---------------------------------------------------------------- hard tree (prediction)


def tree_decision(X, W, Th, Tp, sigma):
    """(L1) with the hard path of (L2): each row evaluates its D + 1 nodes only.

    Rows are grouped by node, level by level: one small GEMM per node over the rows
    that reach it (dense or CSR X)."""
    n = X.shape[0]
    L = Th.shape[0]
    f = np.zeros(n)
    rows_at = {0: np.arange(n)}
    for k in range(W.shape[0]):  # breadth-first: parents before children
        rows = rows_at.pop(k, None)
        if rows is None or rows.size == 0:
            continue
        P = np.vstack([W[k], Tp[k]] + ([Th[k]] if k < L else []))
        Z = _affine(X[rows], P)
        f[rows] += np.tanh(sigma * Z[:, 1]) * Z[:, 0]
        if k < L:
            left = Z[:, 2] > 0.0
            rows_at[2 * k + 1], rows_at[2 * k + 2] = rows[left], rows[~left]
    return f


class _BatchStream:
    """Row indices in consecutive slices of per-pass random permutations."""

    def __init__(self, rng, n):
        self.rng, self.n = rng, n
        self.buf = np.empty(0, np.int64)

    def take(self, count):
        while self.buf.size < count:
            self.buf = np.concatenate([self.buf, self.rng.permutation(self.n)])
        out, self.buf = self.buf[:count], self.buf[count:]
        return out


class LDKLClassifier(SparseInputMixin, ClassifierMixin, BaseEstimator):
    """Local Deep Kernel Learning (Jose et al., ICML 2013): see the module docstring.

    Parameters
    ----------
    depth : int, default 3
        The tree depth D: M = 2^(D+1) - 1 nodes, D + 1 evaluated per test point.
    lambda_w : float, default 0.1
        Regulariser of the node classifiers W.
    lambda_theta : float, default 0.01
        Regulariser of the gating vectors θ (internal nodes).
    lambda_theta_prime : float, default 0.01
        Regulariser of the local embeddings θ'.
    sigma : float, default 1.0
        Sharpness of the local tanh(σ θ'ᵀx̃).
    n_iter : int, default 15000
        SGD iterations T.
    batch_size : int or None, default None
        Rows per iteration (None: ⌊√N⌋).
    gate_scale : float, default 0.1
        Gate sharpness s = gate_scale / mean|θᵀx̃| · 2^(anneal_doublings · t / T) ...
    anneal_doublings : float, default 10.0
        ... so soft gates at the start anneal to hard routing.
    gate_every : int, default 100
        Iterations between two recomputations of s.
    history : bool, default True
        Objective and accuracies at every tenth of the iterations (with ``eval_set``,
        test accuracy too).
    random_state : int, default 0
        Seeds the initialisation and the batches.
    """

    #: the declared search space (conf/search/ldkl.yaml) SearchCV takes by default
    search_space = "ldkl"

    _parameter_constraints = {
        "depth": [Interval(Integral, 0, 20, closed="both")], "lambda_w": [REGULARISATION],
        "lambda_theta": [REGULARISATION], "lambda_theta_prime": [REGULARISATION],
        "sigma": [POSITIVE],
        "n_iter": [COUNT0], "batch_size": [COUNT, None], "gate_scale": [POSITIVE],
        "anneal_doublings": [NON_NEGATIVE], "gate_every": [COUNT], "history": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, *, depth=3, lambda_w=0.1, lambda_theta=0.01, lambda_theta_prime=0.01,
                 sigma=1.0, n_iter=15000, batch_size=None, gate_scale=0.1,
                 anneal_doublings=10.0, gate_every=100, history=True, random_state=0):
        store_params(self, locals())

    def _gate_sharpness(self, X, rows, Th, t, T):
        """s = gate_scale / mean|θ_lᵀx̃| over the sampled rows, annealed by 2^(A t / T)."""
        if Th.shape[0] == 0:
            return 1.0
        m = float(np.abs(_affine(X[rows], Th)).mean())
        return self.gate_scale / max(m, 1e-12) * 2.0 ** (self.anneal_doublings * t / max(T, 1))

    def fit(self, X, y, eval_set=None):
        """Mini-batch SGD (L6) on every one-vs-all tree; ``eval_set`` only feeds the history.

        ``fit_info_``: timings ("cv" 0, "train", "history"), "selected" (the effective
        batch size, iterations, epochs = T·B/N and final gate sharpness), "model_size",
        "history" (iteration, epoch, gate_sharpness, objective (P) summed over the trees
        at the current s, train_accuracy / train_hinge with the hard tree, test_accuracy).
        """
        validate_params(self)
        X, y_idx = check_fit_data(self, X, y)
        notes = []
        rows = (X,)
        steps_kernel = ldkl_sgd_steps
        if sp.issparse(X):
            X = X.tocsr()
            rows, steps_kernel = (X.data, X.indices, X.indptr), ldkl_sgd_steps_csr
        n, d = X.shape
        K = 1 if len(self.classes_) == 2 else len(self.classes_)
        Y = (np.where(y_idx == 1, 1.0, -1.0)[None, :] if K == 1
             else np.where(y_idx[None, :] == np.arange(K)[:, None], 1.0, -1.0))
        M, L = tree_sizes(self.depth)
        T = int(self.n_iter)
        B = min(n, int(self.batch_size or max(1, int(np.sqrt(n)))))
        lam = (float(self.lambda_w), float(self.lambda_theta), float(self.lambda_theta_prime))
        sigma = float(self.sigma)
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        rng = np.random.default_rng(seed)

        t_start = time.perf_counter()
        W = rng.uniform(-1.0, 1.0, size=(K, M, d + 1))  # the reference's initialisation
        Th = rng.uniform(-1.0, 1.0, size=(K, L, d + 1))
        Tp = rng.uniform(-1.0, 1.0, size=(K, M, d + 1))
        s = np.ones(K)
        stream = _BatchStream(rng, n)
        history = History("iteration")
        test = None
        if self.history and eval_set is not None:
            Xt = check_predict_data(self, eval_set[0])
            test = (Xt, np.asarray(eval_set[1]))

        def record(t):
            with history.timed():
                obj = sum(smoothed_objective(X, Y[c], W[c], Th[c], Tp[c], lam_w=lam[0],
                                             lam_th=lam[1], lam_tp=lam[2], sigma=sigma,
                                             s=s[c])[0] for c in range(K))
                F = self._scores(X, W, Th, Tp)
                test_metrics = {} if test is None else {"test_accuracy": accuracy(
                    labels_from_scores(self.classes_, self._scores(test[0], W, Th, Tp)),
                    test[1])}
                history.add(t, float(obj), epoch=t * B / n, gate_sharpness=float(s.mean()),
                            train_accuracy=accuracy(labels_from_scores(
                                np.arange(len(self.classes_)), F), y_idx),
                            train_hinge=mean_hinge(Y.T, F.reshape(n, -1)), **test_metrics)

        checkpoints = set(np.linspace(0, T, 11).round().astype(int).tolist())
        if self.history:
            rows0 = rng.integers(0, n, size=GATE_SAMPLE)
            s[:] = [self._gate_sharpness(X, rows0, Th[c], 1, T) for c in range(K)]
            record(0)
        t = 0
        while t < T:
            steps = min(int(self.gate_every), T - t)
            batches = stream.take(steps * B).reshape(steps, B)
            gate_rows = rng.integers(0, n, size=GATE_SAMPLE)
            for c in range(K):
                s[c] = self._gate_sharpness(X, gate_rows, Th[c], t + 1, T)
                steps_kernel(*rows, Y[c], batches, t + 1, W[c], Th[c], Tp[c], *lam, sigma, s[c])
            next_t = t + steps
            if self.history and any(t < cp <= next_t for cp in checkpoints):
                record(next_t)
            t = next_t
        train_time = time.perf_counter() - t_start - history.seconds

        self.W_, self.theta_, self.theta_prime_, self.gate_sharpness_ = W, Th, Tp, s
        self.fit_info_ = {
            "timings": {"cv": 0.0, "train": train_time, "history": history.seconds},
            "selected": {"batch_size": B, "n_iter": T, "epochs": T * B / n,
                         "gate_sharpness": [float(v) for v in s]},
            "model_size": {"depth": int(self.depth), "n_nodes": M, "n_internal": L,
                           "n_outputs": K, "n_features": d,
                           "nodes_per_prediction": int(self.depth) + 1,
                           "n_parameters": int(W.size + Th.size + Tp.size)},
            "history": history.entries,
            "notes": notes,
        }
        return self

    def _scores(self, X, W, Th, Tp):
        F = np.column_stack([tree_decision(X, W[c], Th[c], Tp[c], float(self.sigma))
                             for c in range(W.shape[0])])
        return F[:, 0] if F.shape[1] == 1 else F

    def _fitted_layout(self) -> dict:
        """The fitted attributes and their shapes, checked when a model file is read
        (``model_files.check_fitted`` reads the spec)."""
        nodes, internal = tree_sizes(int(self.depth))
        d = self.n_features_in_ + 1
        return {"W_": f"outputs {nodes} {d}", "theta_": f"outputs {internal} {d}",
                "theta_prime_": f"outputs {nodes} {d}", "gate_sharpness_": "outputs"}

    def decision_function(self, X):
        """Binary: (n,) scoring ``classes_[1]``; multi-class: (n, K) one-vs-all scores."""
        check_is_fitted(self, "W_")
        X = check_predict_data(self, X)
        return self._scores(X, self.W_, self.theta_, self.theta_prime_)

    def predict(self, X):
        scores = self.decision_function(X)
        return labels_from_scores(self.classes_, scores)
