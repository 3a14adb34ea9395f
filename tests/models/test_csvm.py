"""Clustered SVM (Gu & Han, AISTATS 2013): the augmented LIBLINEAR problem and its unpacking."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import blobs, xor
from liblinear.liblinearutil import predict as ll_predict
from liblinear.liblinearutil import train as ll_train

from llc_bench.models.csvm import ClusteredSVMClassifier, assign_clusters, augment
from llc_bench.models.liblinear_fit import fit_liblinear, seed_liblinear
from llc_bench.models.linear import LinearSVMClassifier


def test_augment_matches_a_row_by_row_construction():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    X[2, 1] = 0.0
    clusters = np.array([2, 0, 1, 2, 0, 0, 1])
    lam = 0.3
    ref = np.zeros((7, 4 * 4))
    for i, (x, c) in enumerate(zip(X, clusters, strict=True)):
        xb = np.append(x, 2.0)
        ref[i, :4] = xb / np.sqrt(lam)
        ref[i, 4 * (1 + c):4 * (2 + c)] = xb
    for data in (X, sp.csr_matrix(X), sp.csr_array(X)):
        Xa = augment(data, clusters, 3, lam, bias=2.0)
        assert sp.isspmatrix_csr(Xa) and Xa.has_sorted_indices
        np.testing.assert_allclose(Xa.toarray(), ref, atol=1e-15)
    np.testing.assert_allclose(augment(X, clusters, 3, lam, bias=0).toarray(),
                               np.delete(ref, [3, 7, 11, 15], axis=1), atol=1e-15)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("first_label", [0, 1])
def test_decisions_equal_liblinear_on_the_augmented_problem(n_classes, first_label):
    X, y = blobs(n_classes, seed=n_classes, scale=2.0)
    y[0] = first_label  # LIBLINEAR orients a binary model by the first row's label
    lam = 0.5
    model = ClusteredSVMClassifier(n_clusters=5, lambda_=lam, C=0.8, random_state=0).fit(X, y)
    X_test = blobs(n_classes, n=100, seed=10 + n_classes, scale=2.0)[0]
    Xa = augment(X, assign_clusters(X, model.cluster_centers_), 5, lam)
    Xa_test = augment(X_test, assign_clusters(X_test, model.cluster_centers_), 5, lam)
    seed_liblinear(0)
    y_ll = np.where(y == 1, 1.0, -1.0) if n_classes == 2 else y.astype(float)
    ref = ll_train(y_ll, Xa, "-s 3 -c 0.8 -q")  # no -B: the bias is inside x
    ref_labels, _, values = ll_predict(np.zeros(100), Xa_test, ref, "-q")
    values = np.asarray(values)
    order = [max(int(label), 0) for label in ref.get_labels()]
    ours = model.decision_function(X_test)
    if n_classes == 2:
        np.testing.assert_allclose(ours, values[:, 0] * (1 if order[0] == 1 else -1),
                                   atol=1e-10, rtol=0)
    else:
        np.testing.assert_allclose(ours[:, order], values, atol=1e-10, rtol=0)
    np.testing.assert_array_equal(model.predict(X_test),
                                  np.maximum(np.asarray(ref_labels), 0).astype(int))
    # w_l = u / sqrt(lambda) + v_l with u the shared block of LIBLINEAR's weight vector
    W = model.augmented_coef_.reshape(-1, 6, 5)  # (outputs, 1 + L blocks, D + bias)
    expected = W[:, 0] / np.sqrt(lam) + W[:, 1 + 3]  # cluster 3
    np.testing.assert_allclose(model.coef_[3], expected[:, :4].reshape(model.coef_[3].shape),
                               atol=1e-14)
    np.testing.assert_allclose(model.intercept_[3], expected[:, 4].reshape(
        np.shape(model.intercept_[3])), atol=1e-14)


def local_problems(n=400, seed=0):
    """Four blobs, each with its own noisy linear boundary (balanced classes)."""
    rng = np.random.default_rng(seed)
    centers = np.array([[3.0, 3.0], [3.0, -3.0], [-3.0, 3.0], [-3.0, -3.0]])
    normals = rng.normal(size=(4, 2))
    c = rng.integers(0, 4, n)
    Z = rng.normal(size=(n, 2))
    y = ((Z * normals[c]).sum(axis=1) > 0).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return centers[c] + Z, y


@pytest.mark.parametrize("lam", [0.25, 4.0])
def test_one_cluster_is_a_linear_svm_with_C_times_one_plus_one_over_lambda(lam):
    # L = 1: x~ = [x/sqrt(lam), 1/sqrt(lam), x, 1], so x~.x~' = s (x.x' + 1), s = 1 + 1/lam,
    # and w_1 = u/sqrt(lam) + v: the dual is LIBLINEAR -B 1's with C s, the same optimum
    # (solved tightly: at LIBLINEAR's default -e 0.1 the two problems' rounding makes
    # the solver stop at different iterates)
    X, y = blobs(2, seed=6, scale=2.0)
    X[:, 0] = np.sin(X[:, 0])
    s = 1 + 1 / lam
    csvm = ClusteredSVMClassifier(n_clusters=1, lambda_=lam, C=0.3, tol=1e-10).fit(X, y)
    w, b = fit_liblinear(X, y, C=0.3 * s, bias=1.0, eps=1e-10)
    np.testing.assert_allclose(csvm.coef_[0], w, atol=1e-5)
    np.testing.assert_allclose(csvm.intercept_[0], b, atol=1e-5)
    np.testing.assert_allclose(csvm.decision_function(X), X @ w + b, atol=1e-4)


def hinge_objective(W, b, X, y, C=1.0):
    margins = np.where(y == 1, 1.0, -1.0) * (X @ W + b)
    return 0.5 * (W @ W + b * b) + C * np.maximum(0.0, 1.0 - margins).sum()


def test_large_lambda_leaves_independent_cluster_svms():
    # lambda -> infinity: w = 0 and the problem splits into one SVM (-B 1) per cluster.
    # LIBLINEAR's dual coordinate descent reaches these hinge optima only to ~1e-4 in the
    # objective (its -e is a bound on the projected gradient), so compare objectives.
    X, y = local_problems()
    model = ClusteredSVMClassifier(n_clusters=4, lambda_=1e8, C=1.0, tol=1e-6).fit(X, y)
    assert np.abs(model.shared_coef_).max() < 1e-3
    clusters = assign_clusters(X, model.cluster_centers_)
    assert np.bincount(clusters).min() > 50
    ours = own = 0.0
    agree = []
    for c in range(4):
        rows = clusters == c
        w, b = fit_liblinear(X[rows], y[rows], C=1.0, bias=1.0, eps=1e-6)
        own += hinge_objective(w, b, X[rows], y[rows])
        ours += hinge_objective(model.coef_[c], model.intercept_[c], X[rows], y[rows])
        agree.append(np.sign(X[rows] @ w + b) == np.sign(model.decision_function(X[rows])))
    assert ours == pytest.approx(own, rel=1e-3)
    assert np.mean(np.concatenate(agree)) >= 0.98
    # lambda -> 0: one shared linear SVM
    glob = ClusteredSVMClassifier(n_clusters=4, lambda_=1e-8, C=1.0).fit(X, y)
    spread = np.abs(glob.coef_ - glob.coef_.mean(axis=0)).max()
    assert spread < 1e-3 * np.abs(glob.coef_).max()


def test_beats_linear_svm_on_xor_and_is_deterministic():
    X, y = xor(800, seed=1)
    X_test, y_test = xor(400, seed=2)
    kw = dict(n_clusters=8, C_grid=(0.5, 8.0), random_state=5)
    a = ClusteredSVMClassifier(**kw).fit(X, y)
    b = ClusteredSVMClassifier(**kw).fit(X, y)
    linear = LinearSVMClassifier(C=1.0).fit(X, y).score(X_test, y_test)
    assert a.score(X_test, y_test) >= 0.9 and linear <= 0.65
    np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))
    info = a.fit_info_
    assert info["selected"]["C"] in (0.5, 8.0) and info["cv"]["param_C"] == [0.5, 8.0]
    assert sum(info["kmeans"]["cluster_sizes"]) == 800
    assert info["model_size"]["n_parameters"] == 8 * 3


def test_sparse_equals_dense():
    X, y = blobs(3, seed=5, scale=2.0)
    X[np.abs(X) < 0.5] = 0.0
    dense = ClusteredSVMClassifier(n_clusters=3, C=1.0).fit(X, y)
    sparse = ClusteredSVMClassifier(n_clusters=3, C=1.0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.decision_function(X),
                               sparse.decision_function(sp.csr_matrix(X)), atol=1e-8)


