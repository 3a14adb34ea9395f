"""LIBLINEAR / LIBSVM baselines: our numpy decision values against the libraries'."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import blobs
from liblinear.liblinearutil import predict as ll_predict
from liblinear.liblinearutil import train as ll_train

from llc_bench.models.csvm import ClusteredSVMClassifier
from llc_bench.models.kernel import KernelSVMClassifier
from llc_bench.models.liblinear_fit import seed_liblinear
from llc_bench.models.linear import LinearSVMClassifier


@pytest.mark.parametrize("solver,flag", [("l2_hinge", 3), ("crammer_singer", 4)])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("first_label", [0, 1])
def test_linear_decisions_match_liblinear(solver, flag, n_classes, first_label):
    X, y = blobs(n_classes, seed=n_classes)
    X[0] += 0.0
    y[0] = first_label  # LIBLINEAR orients a binary model by the first row's label
    model = LinearSVMClassifier(C=0.5, solver=solver, random_state=0).fit(X, y)
    seed_liblinear(0)  # the same shuffling seed as our wrapper: the two fits must agree exactly
    y_ref = np.where(y == 1, 1.0, -1.0) if n_classes == 2 else y.astype(float)
    ref = ll_train(y_ref, sp.csr_matrix(X), f"-s {flag} -c 0.5 -B 1 -q")
    ref_labels, _, ref_values = ll_predict(y_ref, sp.csr_matrix(X), ref, "-q")
    ours = model.decision_function(X)
    np.testing.assert_array_equal(model.predict(X), np.maximum(ref_labels, 0).astype(int))
    ref_values = np.asarray(ref_values)
    order = [max(int(label), 0) for label in ref.get_labels()]  # -1 is our class 0
    if ours.ndim == 1 and flag == 4:  # LIBLINEAR reports one of the two class scores
        return
    if ours.ndim == 1:  # LIBLINEAR's single value scores get_labels()[0]
        expected = ref_values[:, 0] * (1 if order[0] == 1 else -1)
        np.testing.assert_allclose(ours, expected, atol=1e-12)
    else:
        np.testing.assert_allclose(ours[:, order], ref_values, atol=1e-12)


def test_linear_cv_picks_from_grid_and_is_deterministic():
    X, y = blobs(2, n=200, seed=3)
    a = LinearSVMClassifier(C=None, C_grid=(0.01, 1.0, 100.0), random_state=4).fit(X, y)
    b = LinearSVMClassifier(C=None, C_grid=(0.01, 1.0, 100.0), random_state=4).fit(X, y)
    assert a.C_ in (0.01, 1.0, 100.0)
    assert a.fit_info_["cv"]["param_C"] == [0.01, 1.0, 100.0]
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_a_one_value_c_grid_is_that_c_without_cv():
    """A grid of one C has nothing to choose: the linear SVM and the LCC codes' SVM fit it
    as if given (the same weights), with no CV run or recorded."""
    from llc_bench.models.lcc_linear import LCCLinearSVMClassifier

    X, y = blobs(3, n=150, seed=5)
    for make in (lambda **kw: LinearSVMClassifier(random_state=0, **kw),
                 lambda **kw: LCCLinearSVMClassifier(n_anchors=4, random_state=0, **kw)):
        one, given = make(C_grid=(0.5,)).fit(X, y), make(C=0.5).fit(X, y)
        assert one.C_ == 0.5 and one.fit_info_["cv"] is None
        np.testing.assert_array_equal(one.coef_, given.coef_)


def test_linear_sparse_equals_dense():
    X, y = blobs(3, seed=5)
    dense = LinearSVMClassifier(C=1.0).fit(X, y)
    sparse = LinearSVMClassifier(C=1.0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.decision_function(X),
                               sparse.decision_function(sp.csr_matrix(X)), atol=1e-8)


def rbf_decision_in_numpy(model, X):
    svc = model.svc_
    sv = svc.support_vectors_
    d2 = (X**2).sum(1)[:, None] - 2 * X @ sv.T + (sv**2).sum(1)[None, :]
    return np.exp(-model.gamma_ * d2) @ svc.dual_coef_[0] + svc.intercept_[0]


def test_kernel_decision_values_match_libsvm():
    X, y = blobs(2, n=200, seed=7)
    X[:, 0] = np.sin(X[:, 0]) * 3  # make it non-linear
    model = KernelSVMClassifier(C=10.0, gamma=0.5).fit(X, y)
    ours = rbf_decision_in_numpy(model, X)
    np.testing.assert_allclose(model.decision_function(X), ours, atol=1e-8)
    np.testing.assert_array_equal(model.predict(X), model.classes_[(ours > 0).astype(int)])
    assert model.fit_info_["model_size"]["n_support_vectors"] == model.svc_.support_.size


def test_kernel_cv_grid_and_multiclass():
    X, y = blobs(3, n=150, seed=8)
    model = KernelSVMClassifier(C_grid=(1.0, 10.0), gamma_factors=(0.5, 2.0)).fit(X, y)
    assert model.C_ in (1.0, 10.0)
    assert len(model.fit_info_["cv"]["params"]) == 4
    assert not model.hinge_defined_
    assert model.score(X, y) > 0.9


def test_gamma_scale_is_scikit_learn_s_scale_gamma_and_excludes_gamma():
    """gamma_scale = 1 is SVC(gamma="scale"); 3 is three times that γ; no CV runs; a γ given
    both ways is one error naming both."""
    from sklearn.svm import SVC

    X, y = blobs(2, n=200, seed=7)
    X[:, 0] = np.sin(X[:, 0]) * 3
    model = KernelSVMClassifier(C=2.0, gamma_scale=1.0).fit(X, y)
    reference = SVC(C=2.0, gamma="scale").fit(X, y)
    assert model.gamma_ == pytest.approx(reference._gamma, rel=1e-12)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               atol=1e-10)
    assert model.fit_info_["cv"] is None
    assert KernelSVMClassifier(C=2.0, gamma_scale=3.0).fit(X, y).gamma_ == pytest.approx(
        3 * reference._gamma, rel=1e-12)
    with pytest.raises(ValueError, match=r"gamma_scale=1\.0: give it or gamma \(=0\.5\), not both"):
        KernelSVMClassifier(gamma=0.5, gamma_scale=1.0).fit(X, y)


def test_fits_in_threads_are_the_serial_fits():
    """LIBLINEAR shuffles with the process's one ``rand()``: fits in threads (a threading
    joblib backend) keep their seeded shuffles only if the seed and the training are held
    together (without fit_liblinear's lock this failed three runs of three)."""
    from concurrent.futures import ThreadPoolExecutor

    X, y = blobs(3, seed=1)
    serial = [LinearSVMClassifier(C=1.0, solver="crammer_singer", random_state=s).fit(X, y)
              for s in range(8)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda s: LinearSVMClassifier(
            C=1.0, solver="crammer_singer", random_state=s).fit(X, y), range(8)))
    for a, b in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(a.coef_, b.coef_)


def test_trailing_zero_features_get_zero_weights():
    X, y = blobs(2, seed=9)
    X = np.hstack([X, np.zeros((len(X), 3))])  # LIBLINEAR never sees the last 3 columns
    model = LinearSVMClassifier(C=1.0).fit(sp.csr_matrix(X), y)
    assert model.coef_.shape == (7,)
    np.testing.assert_array_equal(model.coef_[4:], 0.0)
    assert model.intercept_ != 0.0


@pytest.mark.parametrize("make", [
    lambda: LinearSVMClassifier(C_grid=(0.01, 1.0), cv_max_rows=120, random_state=2),
    lambda: KernelSVMClassifier(C_grid=(1.0, 10.0), gamma_factors=(1.0,), cv_max_rows=120,
                                random_state=2),
    lambda: ClusteredSVMClassifier(n_clusters=3, C_grid=(0.01, 1.0), cv_max_rows=120,
                                   random_state=2),
])
def test_cv_on_a_subsample_then_the_final_fit_on_all_rows(make):
    X, y = blobs(2, n=300, seed=11)
    model = make().fit(X, y)
    assert model.fit_info_["cv"]["rows"] == 120
    fixed = make().set_params(C=model.C_, cv_max_rows=None)
    if isinstance(model, KernelSVMClassifier):
        fixed.set_params(gamma=model.gamma_)
    fixed.fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), fixed.decision_function(X),
                               atol=1e-10)
    assert make().fit(X, y).C_ == model.C_  # the subsample is drawn from the seed
