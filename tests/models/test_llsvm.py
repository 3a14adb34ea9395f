"""LL-SVM / LCC+SVM: SGD kernel vs numpy reference, paper properties, estimator API."""

import numpy as np
import pytest
import scipy.sparse as sp
from liblinear.liblinearutil import predict as ll_predict
from liblinear.liblinearutil import train as ll_train
from reference_sgd import sgd_epoch_reference

from llc_bench.coding import InverseDistanceCoding, SoftKNNCoding
from llc_bench.models import LCCSVMClassifier, LLSVMClassifier
from llc_bench.models.kronecker import liblinear_init
from llc_bench.models.liblinear_fit import seed_liblinear
from llc_bench.models.sgd_epoch import decision_from_codes, labels_matrix, run_epoch
from llc_bench.models.sgd_schedule import auto_bias_scale, default_skip, default_t0
from llc_bench.models.sgd_training import SGDOptions, SGDTraining, train_llc_sgd

# ------------------------------------------------------------ kernel vs reference


def _problem(n=150, D=5, m=7, k=3, n_classes=2, sparse=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if sparse:
        X = X * (rng.random((n, D)) < 0.4)
    V = rng.normal(size=(m, D))
    code = InverseDistanceCoding(k=k).encode(X, V)
    y_idx = rng.integers(0, n_classes, size=n)
    Y = labels_matrix(y_idx, n_classes)
    W0 = rng.normal(size=(Y.shape[1], m, D)) * 0.05
    b0 = rng.normal(size=(Y.shape[1], m)) * 0.05
    return (sp.csr_matrix(X) if sparse else X), Y, code, W0, b0


@pytest.mark.parametrize(
    "case",
    [
        dict(),  # dense binary
        dict(n_classes=3),  # one-vs-all, shared codes
        dict(n_classes=5),  # the kernel's dot products: a block of 4 classes + 1
        dict(n_classes=7),  # 4 + 2 + 1
        dict(use_W=False),  # LCC+SVM: only b, b decays
        dict(sparse=True),
        dict(sparse=True, n_classes=4, use_W=False),
        dict(t0=2.0, skip=7),  # r = 1 - skip/(t + t0) < 0.8: SVMSGD2 safeguard
        dict(bias_scale=0.0),  # frozen bias (released code)
    ],
    ids=["dense", "multiclass", "mc5", "mc7", "lcc", "csr", "csr-mc-lcc", "safeguard", "frozen-b"],
)
def test_numba_kernel_matches_numpy_reference(case):
    case = dict(case)
    use_W = case.pop("use_W", True)
    t0 = case.pop("t0", 50.0)
    skip = case.pop("skip", 4)
    bias_scale = case.pop("bias_scale", 0.3)
    X, Y, code, W0, b0 = _problem(**case)
    lam = 0.05
    Wk, bk, Wr, br = W0.copy(), b0.copy(), W0.copy(), b0.copy()
    rng = np.random.default_rng(1)
    tk = tr = 0
    ck = cr = skip
    kw = dict(lambda_=lam, t0=t0, skip=skip, bias_scale=bias_scale, use_W=use_W)
    for _ in range(2):  # 300 steps, t and the skip counter carried across epochs
        order = rng.permutation(X.shape[0])
        tk, ck = run_epoch(X, Y, code, order, Wk, bk, tk, ck, **kw)
        tr, cr = sgd_epoch_reference(X, Y, code, order, Wr, br, tr, cr, **kw)
    assert (tk, ck) == (tr, cr) and tk == 2 * X.shape[0]
    scale = max(np.abs(Wr).max(), np.abs(br).max(), 1.0)
    np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-10 * scale)
    np.testing.assert_allclose(bk, br, rtol=1e-10, atol=1e-10 * scale)
    assert not np.allclose(br, b0) or bias_scale == 0.0  # something happened
    if not use_W:
        np.testing.assert_array_equal(Wk, W0)
    if bias_scale == 0.0 and use_W:
        np.testing.assert_array_equal(bk, b0)


@pytest.mark.parametrize("n_classes", [2, 3, 4, 6, 7, 10])
def test_decision_from_codes_matches_dense_formula(n_classes):
    X, Y, code, W, b = _problem(n_classes=n_classes)
    F = decision_from_codes(X, code, W, b)
    G = code.to_dense(7)
    ref = np.einsum("nj,cjd,nd->nc", G, W, X) + G @ b.T  # eq. 8 per class
    np.testing.assert_allclose(F, ref, rtol=1e-12, atol=1e-12)
    Fs = decision_from_codes(sp.csr_matrix(X), code, W, b)
    np.testing.assert_allclose(Fs, ref, rtol=1e-12, atol=1e-12)


def test_sgd_defaults_and_hook():
    assert default_t0(1e-4) == pytest.approx(1e3)
    X = np.array([[1.0, -4.0], [3.0, 0.0]])
    assert auto_bias_scale(X) == pytest.approx(1.0)  # 0.5 * max(mean|x_j|) = 0.5 * 2
    assert auto_bias_scale(X, use_W=False) == 1.0
    assert default_skip(X) == 16
    Xs = sp.csr_matrix(np.eye(4)[:, :4].repeat(2, axis=0))  # 1 nnz of 4 features a row
    assert default_skip(Xs) == 64
    X, Y, code, W, b = _problem()
    with pytest.raises(NotImplementedError, match="learn_anchors"):
        train_llc_sgd(X, Y, code, W, b, SGDOptions(lambda_=0.1, learn_anchors=True))


def test_sgd_training_reports_every_epoch_and_info():
    X, Y, code, W, b = _problem()
    training = SGDTraining(X, Y, code, W, b,
                           SGDOptions(lambda_=0.01, epochs=3, random_state=0, t0="svmsgd2"))
    seen = [epoch.number for epoch in training.epochs()]
    info = training.info
    assert seen == [0, 1, 2, 3] and info["steps"] == 450
    assert info["t0"] == pytest.approx(0.01**-0.75)
    assert info["skip"] == 16 and len(info["epoch_seconds"]) == 3


# ------------------------------------------------------------ model properties


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.where(X[:, 0] * X[:, 1] > 0, "same", "diff")


def test_xor_solved_by_llsvm_not_by_linear():
    X, y = _xor(800, 0)
    Xt, yt = _xor(800, 1)
    ll = LLSVMClassifier(n_anchors=16, k=4, random_state=0).fit(X, y)
    lin = LLSVMClassifier(n_anchors=1, k=1, random_state=0).fit(X, y)  # m = 1: linear SVM
    assert ll.score(Xt, yt) > 0.95
    assert lin.score(Xt, yt) < 0.7


def test_m1_llsvm_is_linear_svm():
    """Paper eq. 14: with one anchor γ = 1 and f = wᵀx + b, a linear SVM."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = np.where(X @ [1.0, -2.0, 0.5, 0.0] + 0.3 * rng.normal(size=300) > 0.2, 1, -1)
    lam = 1e-2
    C = 1 / (lam * 300)
    # the init on z = γ ⊗ [x; 1] = [x; 1] is LIBLINEAR's linear SVM with -B 1, bit for bit
    code = InverseDistanceCoding(k=1).encode(X, X[:1])
    assert np.all(code.weights == 1.0)
    W, b, _ = liblinear_init(X, code, (y > 0).astype(int), 2, 1, lam, random_state=0)
    seed_liblinear(np.random.default_rng(0).integers(2**31))
    model = ll_train(y.astype(float), sp.csr_matrix(X), f"-s 3 -B 1 -c {C!r} -q")
    _, _, vals = ll_predict(np.zeros(300), sp.csr_matrix(X), model, "-q")
    ref = np.asarray(vals)[:, 0] * (1 if model.get_labels()[0] == 1 else -1)
    np.testing.assert_allclose(X @ W[0, 0] + b[0, 0], ref, rtol=1e-12, atol=1e-12)
    # the estimator (its own LIBLINEAR seed): same decisions up to the solver tolerance
    init_only = LLSVMClassifier(n_anchors=1, k=1, lambda_=lam, epochs=0, random_state=0)
    init_only.fit(X, y)
    np.testing.assert_allclose(init_only.decision_function(X), ref, atol=0.1)
    assert np.mean(np.sign(init_only.decision_function(X)) == np.sign(ref)) > 0.98
    sgd = LLSVMClassifier(n_anchors=1, k=1, lambda_=lam, epochs=10, random_state=0).fit(X, y)
    lin_acc = np.mean(np.where(ref > 0, 1, -1) == y)
    assert abs(sgd.score(X, y) - lin_acc) < 0.02


def test_eq14_equal_rows_give_a_linear_function():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 1, 0)
    clf = LLSVMClassifier(n_anchors=6, k=3, epochs=1, random_state=0).fit(X, y)
    w, b0 = np.array([0.5, -1.0, 2.0]), 0.7
    clf.W_[:] = w
    clf.b_[:] = b0
    np.testing.assert_allclose(clf.decision_function(X), X @ w + b0, rtol=1e-10, atol=1e-12)


def test_prediction_matches_training_codes_path():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 6))
    y = rng.integers(0, 3, size=300)
    clf = LLSVMClassifier(n_anchors=10, k=3, epochs=2, random_state=0).fit(X, y)
    code = clf.coding_.encode(X, clf.anchors_)
    F = decision_from_codes(X, code, clf.W_, clf.b_)
    np.testing.assert_allclose(clf.decision_function(X), F, rtol=1e-9, atol=1e-9)
    labels, timings = clf.predict_timed(X)
    np.testing.assert_array_equal(labels, clf.predict(X))
    assert {"encode", "decision", "total", "per_sample"} <= set(timings)


def test_determinism_and_seed_dependence():
    X, y = _xor(400, 3)
    a = LLSVMClassifier(n_anchors=12, k=3, random_state=7).fit(X, y)
    b = LLSVMClassifier(n_anchors=12, k=3, random_state=7).fit(X, y)
    c = LLSVMClassifier(n_anchors=12, k=3, random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.W_, b.W_)
    np.testing.assert_array_equal(a.b_, b.b_)
    np.testing.assert_array_equal(a.anchors_, b.anchors_)
    assert not np.array_equal(a.W_, c.W_)


def test_fit_info_history_and_shapes():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(240, 4))
    y = rng.integers(0, 3, size=240)
    Xt = rng.normal(size=(50, 4))
    yt = rng.integers(0, 3, size=50)
    clf = LLSVMClassifier(n_anchors=10, k=3, epochs=3, random_state=0)
    clf.fit(X, y, eval_set=(Xt, yt))
    info = clf.fit_info_
    assert set(info["timings"]) >= {"anchors", "encode", "init", "sgd"}
    assert [e["epoch"] for e in info["history"]] == [0, 1, 2, 3]
    for e in info["history"]:
        assert {"objective", "train_accuracy", "test_accuracy"} <= set(e)
    last = info["history"][-1]
    assert last["train_accuracy"] == pytest.approx(clf.score(X, y))
    assert last["test_accuracy"] == pytest.approx(clf.score(Xt, yt))
    F = clf.decision_function(X)
    Y = labels_matrix(np.searchsorted(clf.classes_, y), 3)
    obj = 0.5 * clf.lambda_ * np.sum(clf.W_**2) + np.maximum(0, 1 - Y * F).sum(1).mean()
    assert last["objective"] == pytest.approx(obj, rel=1e-9)
    assert info["model_size"]["n_anchors"] == 10 and clf.W_.shape == (3, 10, 4)
    assert F.shape == (240, 3) and clf.b_.shape == (3, 10)
    binary = LCCSVMClassifier(n_anchors=10, k=3, epochs=1, random_state=0).fit(X, y % 2)
    assert binary.decision_function(X).shape == (240,)
    assert binary.fit_info_["sgd"]["bias_scale"] == 1.0 and not binary.W_.any()
    assert binary.fit_info_["coding"]["beta_"] > 0


def test_sparse_input_matches_dense():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 8)) * (rng.random((200, 8)) < 0.5)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    kw = dict(n_anchors=6, k=2, epochs=2, skip=16, random_state=0)
    d = LLSVMClassifier(**kw).fit(X, y)
    s = LLSVMClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(s.anchors_, d.anchors_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        s.decision_function(sp.csr_matrix(X)), d.decision_function(X), rtol=1e-5, atol=1e-5
    )


def test_released_code_options():
    X, y = _xor(300, 4)
    clf = LLSVMClassifier(
        n_anchors=10,
        k=4,
        coding="soft_knn",
        beta=2.0,
        anchor_method="random_per_class",
        lambda_=1e-5,
        t0=100,
        skip=200,
        bias_scale=0,
        random_state=0,
    ).fit(X, y)
    info = clf.fit_info_
    assert info["anchors"]["method"] == "random_per_class"
    assert info["sgd"]["t0"] == 100 and info["sgd"]["skip"] == 200
    assert info["coding"]["beta_"] == 2.0
    # each anchor is a training point
    assert all(np.any(np.all(X == v, axis=1)) for v in clf.anchors_)


def test_bad_parameters_raise():
    X, y = _xor(50, 5)
    for bad in (
        dict(lambda_=0),
        dict(init="none"),
        dict(t0=-1),
        dict(bias_scale="x"),
        dict(k=0),
        dict(coding="nope"),
        dict(anchor_method="x"),
        dict(beta=-1.0),
    ):
        with pytest.raises(ValueError):
            LLSVMClassifier(**bad).fit(X, y)


def test_soft_knn_coding_direct():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(100, 3))
    c = SoftKNNCoding(k=3).fit(X, X[:10], random_state=0)
    assert c.encode(X, X[:10]).weights.shape == (100, 3)


def test_use_W_false_is_lcc_svm():
    X, y = _xor(300, 6)
    kw = dict(n_anchors=10, k=3, coding="soft_knn", epochs=2, random_state=0)
    a = LLSVMClassifier(use_W=False, **kw).fit(X, y)
    b = LCCSVMClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(a.b_, b.b_)
    assert not a.W_.any()
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
