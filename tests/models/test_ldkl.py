"""LDKL: numba kernel vs numpy reference, exact gradients, hard-path prediction, API."""

import numpy as np
import pytest
import scipy.sparse as sp
from reference_ldkl import sgd_steps_reference

from llc_bench.models._ldkl_kernel import ldkl_sgd_steps
from llc_bench.models.ldkl import (
    LDKLClassifier,
    smoothed_objective,
    tree_decision,
    tree_forward,
    tree_sizes,
)
from llc_bench.models.linear import LinearSVMClassifier

# Small iteration counts keep the fits quick; the defaults are tested below.
FAST = dict(n_iter=1500, gate_every=50)


def _tree(depth, d, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    M, L = tree_sizes(depth)
    return (scale * rng.uniform(-1, 1, (M, d + 1)), scale * rng.uniform(-1, 1, (L, d + 1)),
            scale * rng.uniform(-1, 1, (M, d + 1)))


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_numba_kernel_matches_numpy_reference(depth):
    rng = np.random.default_rng(depth)
    n, d, B = 60, 4, 7
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    W, Th, Tp = _tree(depth, d, seed=1, scale=0.5)
    Wr, Thr, Tpr = W.copy(), Th.copy(), Tp.copy()
    # moderate rates: the reference defaults (η_θ ~ 30 at t = 1) make the early steps chaotic,
    # amplifying rounding differences of 1e-16 beyond 1e-10 within a few dozen steps
    kw = dict(lam_w=0.3, lam_th=0.2, lam_tp=0.25, sigma=0.7)
    tk = tr = 1
    for s in (0.3, 1.5, 6.0):  # 3 x 100 steps, t carried across calls, s changing
        batches = rng.integers(0, n, size=(100, B))
        tk = ldkl_sgd_steps(X, y, batches, tk, W, Th, Tp, *kw.values(), s)
        tr = sgd_steps_reference(X, y, batches, tr, Wr, Thr, Tpr, *kw.values(), s)
    assert tk == tr == 301
    for P, R in ((W, Wr), (Th, Thr), (Tp, Tpr)):
        scale = np.abs(R).max(initial=1.0)
        np.testing.assert_allclose(P, R, rtol=1e-10, atol=1e-10 * scale)
    assert not np.allclose(W, _tree(depth, d, seed=1, scale=0.5)[0])  # something happened


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_match_central_differences(seed):
    rng = np.random.default_rng(seed)
    n, d, depth = 12, 3, 2
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    params = list(_tree(depth, d, seed=seed + 10, scale=0.8))
    kw = dict(lam_w=0.1, lam_th=0.02, lam_tp=0.03, sigma=0.9, s=1.7)
    f = tree_forward(X, *params, kw["sigma"], kw["s"])[0]
    assert np.all(np.abs(1.0 - y * f) > 1e-3) and np.any(y * f < 1.0)  # away from the kinks
    _, *grads = smoothed_objective(X, y, *params, **kw)
    h = 1e-6
    for P, G in zip(params, grads, strict=True):
        num = np.zeros_like(P)
        for idx in np.ndindex(P.shape):
            old = P[idx]
            P[idx] = old + h
            up = smoothed_objective(X, y, *params, **kw)[0]
            P[idx] = old - h
            down = smoothed_objective(X, y, *params, **kw)[0]
            P[idx] = old
            num[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-6 * np.abs(num).max())


def test_hard_tree_routes_each_row_through_one_path():
    rng = np.random.default_rng(3)
    depth, d = 3, 4
    W, Th, Tp = _tree(depth, d, seed=4)
    X = rng.normal(size=(200, d))
    sigma = 0.8
    # the smoothed tree at a huge gate sharpness is the hard tree
    np.testing.assert_allclose(tree_decision(X, W, Th, Tp, sigma),
                               tree_forward(X, W, Th, Tp, sigma, 1e9)[0], rtol=1e-9, atol=1e-9)
    # per-row walk: D + 1 nodes, left when θᵀx̃ > 0
    x = X[0]
    k, ref = 0, 0.0
    for _ in range(depth + 1):
        ref += np.tanh(sigma * (Tp[k, :d] @ x + Tp[k, d])) * (W[k, :d] @ x + W[k, d])
        if k < Th.shape[0]:
            k = 2 * k + 1 if Th[k, :d] @ x + Th[k, d] > 0 else 2 * k + 2
    assert tree_decision(X[:1], W, Th, Tp, sigma)[0] == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(tree_decision(sp.csr_matrix(X), W, Th, Tp, sigma),
                               tree_decision(X, W, Th, Tp, sigma), rtol=1e-12, atol=1e-12)


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.where(X[:, 0] * X[:, 1] > 0, 1, -1)


def _banana_like(n, seed):  # two interleaving half-moons with noise
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, np.pi, n)
    lab = rng.integers(0, 2, n)
    X = np.column_stack([np.cos(a) + lab * 1.0 - 0.5, np.sin(a) * (1 - 2 * lab) + lab * 0.5])
    return X + rng.normal(scale=0.12, size=X.shape), lab


@pytest.mark.parametrize("make", [_xor, _banana_like], ids=["xor", "moons"])
def test_solves_nonlinear_problems_better_than_linear_svm(make):
    X, y = make(1200, 0)
    Xt, yt = make(2000, 1)
    acc = LDKLClassifier(random_state=0).fit(X, y).score(Xt, yt)
    lin = LinearSVMClassifier(C=1.0).fit(X, y).score(Xt, yt)
    assert acc >= 0.95 and acc >= lin + 0.08, (acc, lin)


def test_multiclass_one_tree_per_class_and_sparse_input():
    X, y = _xor(900, 2)
    y3 = np.where(X[:, 0] > 0.5, 2, (y > 0).astype(int))  # 3 classes
    model = LDKLClassifier(**FAST).fit(sp.csr_matrix(X), y3)
    assert model.W_.shape == (3, 15, 3) and model.theta_.shape == (3, 7, 3)
    F = model.decision_function(X)
    assert F.shape == (900, 3)
    np.testing.assert_array_equal(model.predict(X), model.classes_[F.argmax(axis=1)])
    assert model.score(X, y3) > 0.85
    assert not model.fit_info_["notes"]  # CSR trains as CSR (no densified copy)


def test_determinism_fit_info_and_history():
    X, y = _xor(500, 5)
    a = LDKLClassifier(**FAST, random_state=3).fit(X, y, eval_set=(X[:50], y[:50]))
    b = LDKLClassifier(**FAST, random_state=3).fit(X, y)
    c = LDKLClassifier(**FAST, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.W_, c.W_)
    info = a.fit_info_
    assert set(info["timings"]) == {"cv", "train", "history"}
    assert info["selected"]["batch_size"] == 22 and info["selected"]["n_iter"] == 1500
    assert info["model_size"]["nodes_per_prediction"] == 4
    hist = info["history"]
    assert [h["iteration"] for h in hist] == list(range(0, 1501, 150))
    assert "test_accuracy" in hist[-1] and hist[-1]["train_accuracy"] > hist[0]["train_accuracy"]
    gates = [h["gate_sharpness"] for h in hist[1:]]
    assert gates[-1] > gates[0]  # annealed towards the hard tree
    with pytest.raises(ValueError, match="depth"):
        LDKLClassifier(depth=-1).fit(X, y)
