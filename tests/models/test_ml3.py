"""ML3 (Fornoni et al. 2013): closed-form latent weights, scores, SGD kernel, estimator."""

from __future__ import annotations

import numpy as np
import pytest
from reference_ml3 import beta_star_ref, sgd_epoch_reference
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from llc_bench.models._ml3_kernel import sgd_epoch
from llc_bench.models.ml3 import (
    ML3Classifier,
    _dual_exponent,
    _extend,
    _random_beta,
    beta_star,
    latent_score,
    select_lambda,
)

P_VALUES = [1.0, 1.5, 2.0, 5.0]


def _max_over_ball(c, p):
    """max beta^T c over {beta >= 0, ||beta||_p <= 1} by SLSQP (best of a few starts)."""
    m = c.size
    cons = [{"type": "ineq", "fun": lambda b: 1.0 - np.sum(np.abs(b) ** p),
             "jac": lambda b: -p * np.abs(b) ** (p - 1) * np.sign(b)}]
    rng = np.random.default_rng(0)
    best = None
    for start in [np.full(m, 0.5 / m ** (1 / p)), *rng.uniform(0, 0.5, (3, m))]:
        res = minimize(lambda b: -b @ c, start, jac=lambda b: -c, bounds=[(0, None)] * m,
                       constraints=cons, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
        b = np.maximum(res.x, 0.0)
        b /= max(1.0, np.sum(b**p) ** (1 / p))  # make SLSQP's answer exactly feasible
        if best is None or b @ c > best @ c:
            best = b
    return float(best @ c), best


def _random_vectors(m=6, k=8, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(k, m))
    C[0] = -np.abs(C[0])  # all entries <= 0
    C[1] = 0.0
    C[2, :] = -1.0
    C[2, 3] = 0.4  # a single positive entry
    return C


@pytest.mark.parametrize("p", P_VALUES)
def test_beta_star_is_the_argmax_over_the_positive_p_ball(p):
    C = _random_vectors()
    B = beta_star(C, p)
    assert B.shape == C.shape
    assert np.all(B >= 0)
    assert np.all(np.sum(B**p, axis=1) <= 1 + 1e-12)
    probes = _random_beta(np.random.default_rng(1), (2000, C.shape[1]), p)
    probes *= np.random.default_rng(2).uniform(0, 1, (2000, 1))  # inside the ball too
    for c, b in zip(C, B, strict=True):
        value = b @ c
        opt_value, opt_beta = _max_over_ball(c, p)
        assert value >= opt_value - 1e-12
        assert value == pytest.approx(opt_value, abs=1e-6)
        assert value >= (probes @ c).max() - 1e-12  # brute force
        assert value == pytest.approx(latent_score(c, p), rel=1e-12, abs=1e-15)  # eq. 16
        if np.all(c <= 0):
            assert np.all(b == 0)
        elif p > 1:  # unique maximiser (strictly convex ball)
            np.testing.assert_allclose(b, opt_beta, atol=2e-3)
        np.testing.assert_allclose(b, beta_star_ref(c, p), rtol=1e-12, atol=1e-15)


def test_beta_star_p1_is_one_hot_on_first_largest_positive_entry():
    c = np.array([[0.3, 0.9, -1.0, 0.9], [-1.0, -2.0, 0.0, -0.1]])
    np.testing.assert_array_equal(beta_star(c, 1), [[0, 1, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(latent_score(c, 1), [0.9, 0.0])
    np.testing.assert_array_equal(beta_star(c, np.inf), [[1, 1, 0, 1], [0, 0, 0, 0]])


@pytest.mark.parametrize("p", P_VALUES)
def test_class_scores_equal_max_over_latent_weights(p):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = np.arange(60) % 3
    clf = ML3Classifier(n_models=4, p=p, n_iter=2, random_state=0).fit(X, y)
    S = clf.decision_function(X[:5])
    assert S.shape == (5, 3)
    Xe = _extend(X[:5])
    for i in range(5):
        for c in range(3):
            opt_value, _ = _max_over_ball(clf.W_[c] @ Xe[i], p)
            assert S[i, c] == pytest.approx(opt_value, abs=1e-6)
    np.testing.assert_array_equal(clf.predict(X[:5]), np.argmax(S, axis=1))


@pytest.mark.parametrize("p", [1.0, 1.5, np.inf])
@pytest.mark.parametrize("fixed", [True, False], ids=["init", "cccp"])
@pytest.mark.parametrize("radius2", [1e12, 3.0], ids=["free", "projected"])
@pytest.mark.parametrize("s0", [0.0, 40.0], ids=["pegasos_start", "s0"])
def test_numba_kernel_matches_numpy_reference(p, fixed, radius2, s0):
    rng = np.random.default_rng(int(10 * p if np.isfinite(p) else 99) + int(fixed))
    n, D, C, m, steps = 50, 6, 3, 4, 300
    X = _extend(rng.normal(size=(n, D)))
    y = rng.integers(0, C, n).astype(np.int64)
    xx = np.einsum("ij,ij->i", X, X)
    q = _dual_exponent(p)
    W0 = 0.3 * rng.normal(size=(C, m, D + 1))
    order = rng.integers(0, n, steps).astype(np.int64)
    b_true = _random_beta(rng, (steps, m), p)
    b_neg = _random_beta(rng, (steps, C, m), p) if fixed else np.empty((0, C, m))
    lam = 0.05

    V = W0.reshape(C * m, D + 1).copy()
    U = np.zeros_like(V)
    state = np.array([1.0, float(np.sum(W0**2)), 0.0])
    n_viol, loss_sum = sgd_epoch(V, U, state, X, xx, y, order, b_true, b_neg, lam, s0, 0.0,
                                 radius2, p, q, m, True, np.empty(C * m), np.empty(m))
    W_ref = W0.copy()
    W_bar, n_viol_ref, loss_ref, n_proj = sgd_epoch_reference(
        W_ref, X, y, order, b_true, b_neg, lam, s0, 0.0, radius2, p, True)
    W = (state[0] * V).reshape(W_ref.shape)
    W_avg = ((U + state[2] * V) / steps).reshape(W_ref.shape)
    assert n_viol == n_viol_ref and 0 < n_viol < steps + 1
    assert loss_sum == pytest.approx(loss_ref, rel=1e-10)
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-10 * np.abs(W_ref).max())
    np.testing.assert_allclose(W_avg, W_bar, rtol=0, atol=1e-10 * np.abs(W_bar).max())
    assert state[1] == pytest.approx(np.sum(W_ref**2), rel=1e-10)  # tracked ||W||^2
    assert (n_proj > 0) == (radius2 < 1e6)  # the projection ran (only) when meant to
    assert np.sum(W_ref**2) <= radius2 * (1 + 1e-12)


def _xor(n, sigma, seed):
    rng = np.random.default_rng(seed)
    centers = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=float)
    k = rng.integers(0, 4, n)
    return centers[k] + sigma * rng.normal(size=(n, 2)), np.array([1, 1, 0, 0])[k]


def test_xor_two_models_p1_separates_where_linear_fails():
    X, y = _xor(200, 0.35, seed=0)
    assert LogisticRegression().fit(X, y).score(X, y) < 0.7
    accs = [ML3Classifier(n_models=2, p=1, random_state=s).fit(X, y).score(X, y)
            for s in range(5)]
    assert min(accs) >= 0.97, accs
    assert np.mean(accs) >= 0.98, accs


def test_same_seed_same_model_other_seed_other_model():
    X, y = _xor(120, 0.35, seed=1)
    a = ML3Classifier(n_models=3, n_iter=5, random_state=7).fit(X, y).W_
    b = ML3Classifier(n_models=3, n_iter=5, random_state=7).fit(X, y).W_
    c = ML3Classifier(n_models=3, n_iter=5, random_state=8).fit(X, y).W_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_binary_decision_history_and_model_size():
    names = np.array(["neg", "pos"])
    X, y = _xor(150, 0.35, seed=2)
    X_te, y_te = _xor(80, 0.35, seed=3)
    labels, labels_te = names[y], names[y_te]
    clf = ML3Classifier(n_models=2, p=1.5, n_iter=4, random_state=0)
    clf.fit(X, labels, eval_set=(X_te, labels_te))
    assert clf.W_.shape == (2, 2, 3)  # models for both classes, a 1 appended to x
    d = clf.decision_function(X_te)
    assert d.shape == (80,)
    np.testing.assert_array_equal(clf.predict(X_te), np.where(d > 0, "pos", "neg"))
    info = clf.fit_info_
    assert set(info["timings"]) >= {"init", "cccp"}
    assert [h["iteration"] for h in info["history"]] == [1, 2, 3, 4]
    last = info["history"][-1]
    assert last["test_error"] == pytest.approx(1 - clf.score(X_te, labels_te))
    assert last["train_error"] == pytest.approx(1 - clf.score(X, labels))
    # eq. 9 objective of the returned W (two classes: hinge of s(x, y) - s(x, other))
    margins = np.where(labels == "pos", 1, -1) * clf.decision_function(X)
    obj = 0.5 * clf.lambda_used_ * np.sum(clf.W_**2) + np.maximum(0, 1 - margins).mean()
    assert last["objective"] == pytest.approx(obj, rel=1e-10)
    assert info["model_size"] == {"n_parameters": 12, "n_outputs": 2, "n_features": 2,
                                  "n_models": 2}
    assert clf.lambda_used_ == pytest.approx(1 / 150)
    assert clf.hinge_defined_


def test_history_off_fits_the_same_model_and_the_lambda_cv_folds_record_none(monkeypatch):
    """history=False: the same W_ without the per-iteration class scores of every training
    row; the λ CV's fold fits run so (they are scored on their held-out rows), the fit on
    all rows keeps its history."""
    X, y = _xor(150, 0.35, seed=6)
    on = ML3Classifier(n_models=2, n_iter=4, random_state=0).fit(X, y)
    off = ML3Classifier(n_models=2, n_iter=4, history=False, random_state=0).fit(X, y)
    np.testing.assert_array_equal(on.W_, off.W_)
    assert len(on.fit_info_["history"]) == 4 and off.fit_info_["history"] == []
    assert off.fit_info_["timings"]["history"] == 0.0
    recorded, real = [], ML3Classifier._record

    def record(self, *args):
        recorded.append(self.history)
        return real(self, *args)

    monkeypatch.setattr(ML3Classifier, "_record", record)
    cv = ML3Classifier(n_models=2, n_iter=4, lambda_grid=[0.1, 1.0], cv_folds=3,
                       random_state=0).fit(X, y)
    assert recorded == [True] * 4 and len(cv.fit_info_["cv"]["params"]) == 2
    with pytest.raises(ValueError, match="history"):
        ML3Classifier(history="yes").fit(X, y)


def test_averaging_changes_the_last_iterate_and_bad_params_raise():
    X, y = _xor(100, 0.35, seed=4)
    a = ML3Classifier(n_models=2, n_iter=3, random_state=0).fit(X, y).W_
    b = ML3Classifier(n_models=2, n_iter=3, averaging=False, random_state=0).fit(X, y).W_
    assert not np.allclose(a, b)
    for bad in [{"n_models": 0}, {"p": 0.5}, {"lambda_": -1.0}, {"n_init_epochs": 0}]:
        with pytest.raises(ValueError):
            ML3Classifier(**bad).fit(X, y)


def test_select_lambda_returns_a_grid_value_with_cv_errors():
    X, y = _xor(100, 0.35, seed=5)
    grid = [1e-3, 1e-2, 10.0]
    best, errors = select_lambda(X, y, grid, folds=3, random_state=0, n_models=2, n_iter=5)
    assert best in grid and set(errors) == set(grid)
    assert errors[best] == min(errors.values())
    assert errors[10.0] > errors[best]  # a huge lambda underfits XOR


def test_lambda_grid_selects_by_cross_validation():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    clf = ML3Classifier(n_models=2, p=1.0, n_iter=3, lambda_grid=(0.1, 10.0), cv_folds=3,
                        random_state=0).fit(X, y)
    cv = clf.fit_info_["cv"]
    assert cv["param_lambda"] == [0.1 / 120, 10.0 / 120] and cv["folds"] == 3
    assert clf.lambda_used_ == cv["param_lambda"][int(np.argmax(cv["mean_test_score"]))]
    with pytest.raises(ValueError, match="not both"):
        ML3Classifier(lambda_=0.1, lambda_grid=(1.0,)).fit(X, y)


def test_cv_on_a_subsample_carries_the_selected_multiple_to_all_rows():
    """cv_max_rows: the CV sees a stratified subsample, the grid is in multiples of
    1 / (subsample rows), and the winning multiple is applied as multiple / n."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    clf = ML3Classifier(n_models=2, p=1.0, n_iter=3, lambda_grid=(0.1, 10.0), cv_folds=3,
                        cv_max_rows=60, random_state=0).fit(X, y)
    cv = clf.fit_info_["cv"]
    assert cv["rows"] == 60 and cv["param_lambda"] == [0.1 / 60, 10.0 / 60]
    best = cv["param_lambda"][cv["best_index"]]
    assert clf.lambda_used_ == pytest.approx(best * 60 / 240)
    full = ML3Classifier(n_models=2, p=1.0, n_iter=3, lambda_grid=(0.1, 10.0), cv_folds=3,
                         random_state=0).fit(X, y)
    assert full.fit_info_["cv"]["rows"] == 240
    with pytest.raises(ValueError, match="cv_max_rows"):
        ML3Classifier(lambda_grid=(1.0,), cv_max_rows=1).fit(X, y)


def test_a_one_value_lambda_grid_is_that_multiple_of_one_over_n_without_cv():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    one = ML3Classifier(n_models=2, n_iter=3, lambda_grid=(30.0,), random_state=0).fit(X, y)
    fixed = ML3Classifier(n_models=2, n_iter=3, lambda_=30.0 / 120, random_state=0).fit(X, y)
    assert one.lambda_used_ == pytest.approx(30.0 / 120) and one.fit_info_["cv"] is None
    np.testing.assert_allclose(one.W_, fixed.W_)


def test_large_p_is_numerically_stable():
    """p = 1000 (close to the p = inf limit) must not underflow u**p in the random init."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        clf = ML3Classifier(n_models=5, p=1000.0, n_iter=3, random_state=0).fit(X, y)
    assert np.isfinite(clf.W_).all()
