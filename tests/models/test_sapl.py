"""LLC-SAPL / SAPL-lcc / LLC-JO: anchor gradients, kernel vs reference, coding properties."""

import numpy as np
import pytest
import scipy.sparse as sp
from reference_sgd import sgd_epoch_anchors_reference

from llc_bench.coding import (
    AdaptiveKNNCoding,
    SoftKNNCoding,
    adaptive_knn_weights,
    anchor_gradient,
    make_coding,
)
from llc_bench.coding.local import KERNEL_ADAPTIVE_KNN, KERNEL_SOFT_KNN
from llc_bench.errors import ConfigError
from llc_bench.models import LLSVMClassifier
from llc_bench.models import _sgd_kernel as K
from llc_bench.models.sgd_epoch import (
    decision_from_codes,
    labels_matrix,
    run_epoch,
    run_epoch_anchors,
)
from llc_bench.models.sgd_training import (
    AnchorLearningUnavailable,
    SGDOptions,
    SGDTraining,
    train_llc_sgd,
)

# ------------------------------------------------------------ the k*-NN rule


def _alg1_loop(d, mu, cap):
    """JO Alg. 1 written as printed (sorted η, grow while λ_k > η_{k+1}), one row."""
    eta = np.sort(mu * np.asarray(d, dtype=float))
    k, lam = 0, eta[0] + 1.0
    while k < cap and (k == 0 or lam > eta[k]):
        k += 1
        s1, s2 = eta[:k].sum(), (eta[:k] ** 2).sum()
        lam = (s1 + np.sqrt(k + s1 * s1 - k * s2)) / k
    return k, lam, eta


def test_adaptive_rule_matches_algorithm_1():
    rng = np.random.default_rng(0)
    d = rng.uniform(0, 6, size=(400, 8)) ** 2
    for mu in (0.05, 0.3, 1.0, 5.0):
        w, k_star, lam, norm = adaptive_knn_weights(d, mu)
        for i in range(0, 400, 7):
            k, lam_i, eta = _alg1_loop(d[i], mu, 8)
            assert k_star[i] == k
            assert lam[i] == pytest.approx(lam_i - eta[0], rel=1e-12, abs=1e-12)  # η shifted
            ref = np.maximum(lam_i - mu * d[i], 0.0) * (np.argsort(np.argsort(d[i])) < k)
            np.testing.assert_allclose(w[i], ref / ref.sum(), rtol=1e-10, atol=1e-14)


def test_adaptive_weights_properties():
    rng = np.random.default_rng(1)
    d = rng.uniform(0, 4, size=(300, 6))
    w, k_star, lam, norm = adaptive_knn_weights(d, 0.7)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-12)
    assert np.all((w > 0).sum(1) == k_star) and np.all((1 <= k_star) & (k_star <= 6))
    # weights decrease with distance (eq. 19), the nearest anchor always active
    order = np.argsort(d, axis=1)
    ws = np.take_along_axis(w, order, axis=1)
    assert np.all(np.diff(ws, axis=1) <= 1e-15) and np.all(ws[:, 0] > 0)
    ds = np.take_along_axis(d, order, axis=1)
    eta = 0.7 * (ds - ds[:, :1])
    act = np.arange(6)[None, :] < k_star[:, None]
    # eq. (20): Σ_active (λ - η_i)² = 1 ; the stopping rule: λ ≤ η_{k*+1} when k* < cap
    np.testing.assert_allclose(np.where(act, (lam[:, None] - eta) ** 2, 0).sum(1), 1.0, rtol=1e-9)
    stopped = k_star < 6
    assert np.all(lam[stopped] <= eta[stopped, k_star[stopped]])
    # μ -> ∞: nearest anchor only; μ -> 0: all k (the cap); equal distances: uniform
    assert np.all(adaptive_knn_weights(d, 1e6)[1] == 1)
    assert np.all(adaptive_knn_weights(d, 1e-6)[1] == 6)
    np.testing.assert_allclose(adaptive_knn_weights(np.ones((2, 5)), 3.0)[0], 0.2)


def test_adaptive_coding_encode_and_registry():
    rng = np.random.default_rng(2)
    X, V = rng.normal(size=(200, 4)), rng.normal(size=(15, 4))
    c = make_coding("adaptive_knn", k=5, mu=0.5)
    assert isinstance(c, AdaptiveKNNCoding) and c.params()["mu"] == 0.5
    code = c.encode(X, V)
    assert code.weights.shape == (200, 5) and code.n_active.shape == (200,)
    assert np.all((code.weights > 0).sum(1) == code.n_active)
    assert 1 < code.n_active.mean() < 5
    np.testing.assert_array_equal(code.take([3, 1]).n_active, code.n_active[[3, 1]])
    Xs = sp.csr_matrix(X * (rng.random(X.shape) < 0.5))
    np.testing.assert_allclose(c.encode(Xs, V).weights, c.encode(Xs.toarray(), V).weights)
    with pytest.raises(ConfigError):
        AdaptiveKNNCoding(mu=0)
    with pytest.raises(ConfigError):
        anchor_gradient(make_coding("inverse_distance"), X[0], V[:3], np.ones(3), np.ones(3))


# ------------------------------------------------------------ anchor gradients


def _setup(seed, m=10, D=5, n_out=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=D)
    V = rng.normal(size=(m, D))
    W = rng.normal(size=(n_out, m, D))
    b = rng.normal(size=(n_out, m))
    return x, V, W, b


def _f_soft(x, V, idx, W, b, c, beta):
    d = ((x - V[idx]) ** 2).sum(1)
    e = np.exp(-beta * (d - d.min()))
    return (e / e.sum()) @ (W[c, idx] @ x + b[c, idx])


def _f_adaptive_frozen(x, V, idx, W, b, c, mu, Lam):
    """f with the active set and the absolute λ (Λ = λ + μ d_min at the base point) frozen."""
    a = Lam - mu * ((x - V[idx]) ** 2).sum(1)
    return (a / a.sum()) @ (W[c, idx] @ x + b[c, idx])


def _central_fd(f, V, idx, eps=1e-6):
    G = np.zeros((len(idx), V.shape[1]))
    for a, j in enumerate(idx):
        for d in range(V.shape[1]):
            Vp, Vm = V.copy(), V.copy()
            Vp[j, d] += eps
            Vm[j, d] -= eps
            G[a, d] = (f(Vp) - f(Vm)) / (2 * eps)
    return G


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("use_W", [True, False])
def test_soft_knn_gradient_matches_finite_differences(seed, use_W):
    x, V, W, b = _setup(seed)
    if not use_W:
        W = np.zeros_like(W)
    beta, k = 0.4, 4
    for c in range(W.shape[0]):
        idx, grad, ka = K.anchor_grad_dense(x, V, W, b, c, KERNEL_SOFT_KNN, beta, k, use_W)
        assert ka == k
        fd = _central_fd(lambda Vv, idx=idx, c=c: _f_soft(x, Vv, idx, W, b, c, beta), V, idx)
        assert np.linalg.norm(grad - fd) <= 1e-6 * np.linalg.norm(fd)
        # the numpy closed form (coding module) agrees with the kernel
        coding = SoftKNNCoding(k=k, beta=beta)
        d = ((x - V[idx]) ** 2).sum(1)
        h = W[c, idx] @ x + b[c, idx]
        np.testing.assert_allclose(anchor_gradient(coding, x, V[idx], d, h), grad, rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_adaptive_knn_gradient_matches_finite_differences(seed):
    x, V, W, b = _setup(seed, m=12)
    mu, k = 0.1, 6
    idx, grad, ka = K.anchor_grad_dense(x, V, W, b, 0, KERNEL_ADAPTIVE_KNN, mu, k, True)
    assert 2 <= ka <= k  # a non-trivial active set
    d = ((x - V[idx]) ** 2).sum(1)
    _, k_star, lam, _ = adaptive_knn_weights(d[None, :], mu)
    assert k_star[0] == ka
    act = idx[:ka]
    Lam = lam[0] + mu * d.min()  # λ frozen, as the paper's eq. (22)
    for c in range(W.shape[0]):
        idx_c, grad, _ = K.anchor_grad_dense(x, V, W, b, c, KERNEL_ADAPTIVE_KNN, mu, k, True)
        f_c = lambda Vv, c=c: _f_adaptive_frozen(x, Vv, act, W, b, c, mu, Lam)  # noqa: E731
        fd = _central_fd(f_c, V, act)
        assert np.linalg.norm(grad[:ka] - fd) <= 1e-6 * np.linalg.norm(fd)
        assert not grad[ka:].any()  # anchors beyond k* do not move
        h = W[c, idx_c] @ x + b[c, idx_c]
        ref = anchor_gradient(AdaptiveKNNCoding(k=k, mu=mu), x, V[idx_c], d, h)
        np.testing.assert_allclose(ref, grad, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------ kernel vs numpy reference


def _problem(n=120, D=4, m=9, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    V = rng.normal(size=(m, D))
    Y = labels_matrix(rng.integers(0, n_classes, size=n), n_classes)
    W = rng.normal(size=(Y.shape[1], m, D)) * 0.1
    b = rng.normal(size=(Y.shape[1], m)) * 0.1
    return X, Y, V, W, b


@pytest.mark.parametrize(
    "case",
    [
        dict(coding=("soft_knn", 0.5)),
        dict(coding=("soft_knn", 0.5), n_classes=3),
        dict(coding=("soft_knn", 0.5), n_classes=7),  # dot products in blocks 4 + 2 + 1
        dict(coding=("soft_knn", 0.5), use_W=False),
        dict(coding=("adaptive_knn", 0.4)),
        dict(coding=("adaptive_knn", 0.4), n_classes=4),
        dict(coding=("adaptive_knn", 0.4), use_W=False, skip=3, t0=2.0),
    ],
    ids=["soft", "soft-mc", "soft-mc7", "soft-lcc", "adaptive", "adaptive-mc",
         "adaptive-lcc-safeguard"],
)
def test_anchor_kernel_matches_numpy_reference(case):
    case = dict(case)
    name, param = case.pop("coding")
    use_W = case.pop("use_W", True)
    skip, t0 = case.pop("skip", 5), case.pop("t0", 30.0)
    X, Y, V0, W0, b0 = _problem(**case)
    coding = (SoftKNNCoding(k=4, beta=param) if name == "soft_knn"
              else AdaptiveKNNCoding(k=5, mu=param))
    kw = dict(lambda_=0.05, t0=t0, skip=skip, bias_scale=0.3, use_W=use_W, anchor_scale=0.7)
    Vk, Wk, bk = V0.copy(), W0.copy(), b0.copy()
    Vr, Wr, br = V0.copy(), W0.copy(), b0.copy()
    rng = np.random.default_rng(1)
    tk = tr = 0
    ck = cr = skip
    for _ in range(2):  # t and the skip counter carried across epochs
        order = rng.permutation(X.shape[0])
        tk, ck, kk = run_epoch_anchors(X, Y, order, Vk, Wk, bk, tk, ck, coding, **kw)
        tr, cr, kr = sgd_epoch_anchors_reference(X, Y, order, Vr, Wr, br, tr, cr, coding, **kw)
        np.testing.assert_array_equal(kk, kr)
    assert (tk, ck) == (tr, cr) and tk == 2 * X.shape[0]
    for got, ref in ((Vk, Vr), (Wk, Wr), (bk, br)):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * max(np.abs(ref).max(), 1))
    assert np.abs(Vr - V0).max() > 1e-3  # the anchors did move
    if not use_W:
        np.testing.assert_array_equal(Wk, W0)
    if name == "adaptive_knn":
        assert 1 < kk.mean() < 5


def test_one_step_moves_anchors_by_the_sum_over_violated_classes():
    """SAPL eq. 16 + 21: Δv_j = η·scale·Σ_{c violated} y_c ∂f_c/∂v_j, pre-update W, b."""
    X, Y, V, W, b = _problem(n=1, n_classes=3, seed=5)
    beta, k, lam, t0, scale = 0.5, 4, 0.1, 20.0, 0.3
    x, y = X[0], Y[0]
    Vn, Wn, bn = V.copy(), W.copy(), b.copy()
    run_epoch_anchors(X, Y, np.array([0]), Vn, Wn, bn, 0, 100, SoftKNNCoding(k=k, beta=beta),
                      lambda_=lam, t0=t0, skip=100, bias_scale=1.0, anchor_scale=scale)
    eta = 1.0 / (lam * t0)
    expect = np.zeros_like(V)
    n_viol = 0
    for c in range(3):
        idx, grad, _ = K.anchor_grad_dense(x, V, W, b, c, KERNEL_SOFT_KNN, beta, k, True)
        f = _f_soft(x, V, idx, W, b, c, beta)
        if 1 - y[c] * f > 0:
            n_viol += 1
            expect[idx] += eta * scale * y[c] * grad
    assert n_viol >= 2  # the test exercises the sum
    np.testing.assert_allclose(Vn - V, expect, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", ["soft_knn", "adaptive_knn"])
def test_anchor_step_max_clips_like_the_reference(name):
    X, Y, V0, W0, b0 = _problem(n_classes=3, seed=7)
    coding = SoftKNNCoding(k=4, beta=0.5) if name == "soft_knn" else AdaptiveKNNCoding(k=5, mu=0.4)
    kw = dict(lambda_=0.05, t0=30.0, skip=5, bias_scale=0.3, anchor_scale=5.0)
    order = np.random.default_rng(2).permutation(X.shape[0])
    out = {}
    for step_max in (None, 0.05):
        Vk, Wk, bk = V0.copy(), W0.copy(), b0.copy()
        Vr, Wr, br = V0.copy(), W0.copy(), b0.copy()
        run_epoch_anchors(X, Y, order, Vk, Wk, bk, 0, 5, coding, anchor_step_max=step_max, **kw)
        out[step_max] = Vk
        if step_max is None:  # unclipped at this rate the run is chaotic: no 1e-10 comparison
            continue
        sgd_epoch_anchors_reference(X, Y, order, Vr, Wr, br, 0, 5, coding,
                                    anchor_step_max=step_max, **kw)
        np.testing.assert_allclose(Vk, Vr, rtol=1e-10, atol=1e-10 * np.abs(Vr).max())
        np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-10 * np.abs(Wr).max())
    # the clip is active here, and bounds every move: |Δv| <= step_max·||x - v|| per step
    assert not np.allclose(out[None], out[0.05])
    Vn, Wn, bn = V0.copy(), W0.copy(), b0.copy()
    run_epoch_anchors(X[:1], Y[:1], np.array([0]), Vn, Wn, bn, 0, 5, coding,
                      anchor_step_max=0.05, **kw)
    dist = np.linalg.norm(X[0] - V0, axis=1)
    assert np.all(np.linalg.norm(Vn - V0, axis=1) <= 0.05 * dist + 1e-12)


def test_zero_anchor_scale_is_fixed_anchor_sgd():
    """anchor_scale = 0: on-the-fly codes, same steps as the precomputed-code kernel."""
    X, Y, V, W, b = _problem(n_classes=3, seed=3)
    coding = SoftKNNCoding(k=4, beta=0.5)
    code = coding.encode(X, V)
    order = np.random.default_rng(0).permutation(X.shape[0])
    kw = dict(lambda_=0.05, t0=30.0, skip=5, bias_scale=0.3)
    W1, b1, V1 = W.copy(), b.copy(), V.copy()
    run_epoch_anchors(X, Y, order, V1, W1, b1, 0, 5, coding, anchor_scale=0.0, **kw)
    W2, b2 = W.copy(), b.copy()
    run_epoch(X, Y, code, order, W2, b2, 0, 5, **kw)
    np.testing.assert_array_equal(V1, V)
    np.testing.assert_allclose(W1, W2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b1, b2, rtol=1e-10, atol=1e-12)


def test_train_llc_sgd_learn_anchors_api():
    X, Y, V, W, b = _problem()
    coding = AdaptiveKNNCoding(k=4, mu=0.5)
    code = coding.encode(X, V)
    with pytest.raises(AnchorLearningUnavailable):
        train_llc_sgd(X, Y, code, W, b, SGDOptions(lambda_=0.1, learn_anchors=True))
    V1 = V.copy()
    training = SGDTraining(
        X, Y, code, W, b, SGDOptions(lambda_=0.1, epochs=3, random_state=0, learn_anchors=True,
                                     anchors=V1, coding=coding, anchor_scale=0.5))
    seen = [(epoch.number, epoch.mean_k) for epoch in training.epochs()]
    info = training.info
    assert [number for number, _ in seen] == [0, 1, 2, 3]
    assert seen[0][1] is None and [k for _, k in seen[1:]] == info["mean_k_per_epoch"]
    assert info["learn_anchors"] and info["anchor_scale"] == 0.5 and info["steps"] == 360
    assert len(info["mean_k_per_epoch"]) == 3 and 1 <= seen[1][1] <= 4
    assert not np.array_equal(V1, V)
    # fixed anchors with a variable-k code: the mean k* of the code, every epoch
    _, _, info = train_llc_sgd(X, Y, code, W.copy(), b.copy(), SGDOptions(lambda_=0.1, epochs=2))
    assert info["mean_k_per_epoch"] == [pytest.approx(code.n_active.mean())] * 2


# ------------------------------------------------------------ the estimators


def _sine(n, seed):
    """Two noisy sine bands (SAPL Fig. 1 style)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 2 * np.pi, size=n)
    y = rng.integers(0, 2, size=n)
    X = np.c_[t, np.sin(t) + np.where(y == 1, 0.6, -0.6) + 0.25 * rng.normal(size=n)]
    return X, y


@pytest.mark.parametrize("coding", ["soft_knn", "adaptive_knn"])
def test_estimator_learns_anchors_and_predicts_with_them(coding):
    X, y = _sine(600, 0)
    Xt, yt = _sine(300, 1)
    clf = LLSVMClassifier(n_anchors=8, k=4, coding=coding, mu=0.5, learn_anchors=True,
                          anchor_scale=0.1, lambda_=1e-3, epochs=3, random_state=0)
    clf.fit(X, y, eval_set=(Xt, yt))
    assert np.abs(clf.anchors_ - clf.initial_anchors_).max() > 1e-3
    code = clf.coding_.encode(Xt, clf.anchors_)  # prediction re-encodes with learned anchors
    F = decision_from_codes(Xt, code, clf.W_, clf.b_)[:, 0]
    np.testing.assert_allclose(clf.decision_function(Xt), F, rtol=1e-9, atol=1e-9)
    h = clf.fit_info_["history"]
    assert [e["epoch"] for e in h] == [0, 1, 2, 3]
    kept = clf.fit_info_["sgd"]["kept_epoch"]  # the epoch of lowest training objective
    assert h[kept]["objective"] == min(e["objective"] for e in h)
    last = h[kept]
    assert last["test_accuracy"] == pytest.approx(clf.score(Xt, yt))
    Yt = np.where(yt == 1, 1.0, -1.0)
    assert last["test_hinge"] == pytest.approx(np.maximum(0, 1 - Yt * F).mean())
    assert {"objective", "train_hinge", "train_accuracy"} <= set(last)
    assert clf.fit_info_["sgd"]["learn_anchors"] is True
    if coding == "adaptive_knn":
        assert {"train_mean_k", "test_mean_k", "sgd_mean_k"} <= set(last)
        assert last["test_mean_k"] == pytest.approx(code.n_active.mean())


def test_multiclass_shares_one_anchor_set_and_lcc_variant():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = np.argmax(X @ rng.normal(size=(3, 4)), axis=1)
    clf = LLSVMClassifier(n_anchors=6, k=3, coding="soft_knn", learn_anchors=True,
                          anchor_scale=0.05, epochs=2, random_state=0).fit(X, y)
    assert clf.anchors_.shape == (6, 3) and clf.W_.shape == (4, 6, 3) and clf.b_.shape == (4, 6)
    lcc = LLSVMClassifier(n_anchors=6, k=3, coding="soft_knn", learn_anchors=True, use_W=False,
                          anchor_scale=0.05, epochs=2, random_state=0).fit(X, y)
    assert not lcc.W_.any() and not np.array_equal(lcc.anchors_, lcc.initial_anchors_)
    # CSR input trains on its rows (the CSR kernel), same model
    s = LLSVMClassifier(n_anchors=6, k=3, coding="soft_knn", learn_anchors=True,
                        anchor_scale=0.05, epochs=2, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(s.anchors_, clf.anchors_, rtol=1e-6, atol=1e-8)
    assert not any("densified" in n for n in s.fit_info_["notes"])


def test_jo_fixed_history_and_bad_parameters():
    X, y = _sine(300, 2)
    clf = LLSVMClassifier(n_anchors=8, k=5, coding="adaptive_knn", mu=0.5, epochs=2,
                          random_state=0).fit(X, y)
    h = clf.fit_info_["history"]
    assert h[1]["train_mean_k"] == h[2]["train_mean_k"] == h[2]["sgd_mean_k"]
    assert not hasattr(clf, "initial_anchors_")
    for bad in (dict(mu=0), dict(anchor_scale=-1), dict(learn_anchors="yes"),
                dict(anchor_step_max=0),
                dict(learn_anchors=True, coding="inverse_distance")):
        with pytest.raises(ValueError):
            LLSVMClassifier(**bad).fit(X, y)



