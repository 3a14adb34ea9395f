"""SVM-KNN (Zhang et al., CVPR 2006) against a brute-force loop over the test points."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import blobs, xor
from liblinear.liblinearutil import predict as ll_predict
from liblinear.liblinearutil import train as ll_train

from llc_bench.models.liblinear_fit import seed_liblinear
from llc_bench.models.linear import LinearSVMClassifier
from llc_bench.models.svm_knn import SVMKNNClassifier


def reference_scores(X_train, y_train, X_test, K, C, n_classes, seed=0):
    """One test point at a time: sort all distances, K nearest, LIBLINEAR on the centred
    neighbours (liblinear-official called directly) unless they agree."""
    out = []
    for x in X_test:
        nbr = np.argsort(((X_train - x) ** 2).sum(axis=1), kind="stable")[:K]
        labels = y_train[nbr]
        present = np.unique(labels)
        if len(present) == 1:
            row = -np.ones(n_classes)
            row[present[0]] = 1.0
            out.append(row[1] if n_classes == 2 else row)
            continue
        local = np.searchsorted(present, labels)
        y_ll = np.where(local == 1, 1.0, -1.0) if len(present) == 2 else local.astype(float)
        seed_liblinear(seed)
        model = ll_train(y_ll, sp.csr_matrix(X_train[nbr] - x), f"-s 3 -c {C} -B 1 -q")
        _, _, values = ll_predict([0.0], sp.csr_matrix(np.zeros((1, X_train.shape[1]))),
                                  model, "-q")
        values = np.asarray(values[0])
        order = [max(int(v), 0) for v in model.get_labels()]
        if len(present) == 2:
            s = values[0] * (1 if order[0] == 1 else -1)  # score of present[1]
            if n_classes == 2:
                out.append(s)
                continue
            row = np.full(n_classes, np.nan)
            row[present] = (-s, s)
        else:
            row = np.full(n_classes, np.nan)
            row[present[order]] = values
        row[np.isnan(row)] = min(-1.0, np.nanmax(row) - 1.0)
        out.append(row)
    return np.asarray(out)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_matches_brute_force_loop(n_classes):
    X, y = blobs(n_classes, n=160, seed=n_classes, scale=0.8)
    X_train, y_train, X_test = X[:120], y[:120], X[120:]
    model = SVMKNNClassifier(n_neighbors=9, C=0.7).fit(X_train, y_train)
    ours = model.decision_function(X_test)
    ref = reference_scores(X_train, y_train, X_test, 9, 0.7, n_classes)
    assert ours.shape == ((40,) if n_classes == 2 else (40, n_classes))
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    unanimous = np.abs(ours) == 1.0 if n_classes == 2 else (np.abs(ours) == 1.0).all(axis=1)
    assert unanimous.any() and not unanimous.all()  # both paths are exercised
    np.testing.assert_array_equal(model.predict(X_test),
                                  model.classes_[(ref > 0).astype(int)] if n_classes == 2
                                  else model.classes_[ref.argmax(axis=1)])


def test_leave_one_out_excludes_the_point_itself():
    # K = 1 is always unanimous: its CV accuracy is leave-one-out 1-NN accuracy
    X, y = blobs(2, n=80, seed=4, scale=0.8)
    model = SVMKNNClassifier(K_grid=(1, 3), C=1.0, n_cv_points=1000).fit(X, y)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    loo = np.mean(y[d2.argmin(axis=1)] == y)
    cv = model.fit_info_["cv"]
    assert cv["n_validation_points"] == 80
    assert cv["params"][0] == {"n_neighbors": 1, "C": 1.0}
    assert cv["split0_test_score"][0] == cv["mean_test_score"][0] == pytest.approx(loo)


def test_cv_picks_from_the_grid_on_a_subsample():
    X, y = xor(500)
    model = SVMKNNClassifier(K_grid=(5, 20), C=None, C_grid=(0.1, 10.0), n_cv_points=100,
                             random_state=3).fit(X, y)
    info = model.fit_info_
    assert model.n_neighbors_ in (5, 20) and model.C_ in (0.1, 10.0)
    assert info["cv"]["n_validation_points"] == 100 and len(info["cv"]["params"]) == 4
    assert info["selected"] == {"n_neighbors": model.n_neighbors_, "C": model.C_}
    assert set(info["timings"]) == {"cv", "train"}


def test_beats_linear_svm_on_xor_and_is_deterministic():
    X, y = xor(800, seed=1)
    X_test, y_test = xor(400, seed=2)
    a = SVMKNNClassifier(K_grid=(10, 40), random_state=5).fit(X, y)
    b = SVMKNNClassifier(K_grid=(10, 40), random_state=5).fit(X, y)
    linear = LinearSVMClassifier(C=1.0).fit(X, y).score(X_test, y_test)
    assert a.score(X_test, y_test) >= 0.93 and linear <= 0.65
    np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))
    assert np.isfinite(a.decision_function(X_test)).all()


def test_sparse_equals_dense_and_chunking_is_invisible():
    X, y = blobs(3, n=150, d=5, seed=7, scale=0.8)
    X[np.abs(X) < 0.5] = 0.0
    dense = SVMKNNClassifier(n_neighbors=12).fit(X, y)
    sparse = SVMKNNClassifier(n_neighbors=12, chunk_size=7).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.decision_function(X),
                               sparse.decision_function(sp.csr_matrix(X)), atol=1e-8)


def test_radius_scaling_keeps_the_signs_of_a_scale_free_problem():
    # scaling the data and the local problems together changes nothing
    X, y = xor(300, seed=8)
    a = SVMKNNClassifier(n_neighbors=15, C=1.0, local_scale="radius").fit(X, y)
    b = SVMKNNClassifier(n_neighbors=15, C=1.0, local_scale="radius").fit(100 * X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(100 * X), atol=1e-6)


