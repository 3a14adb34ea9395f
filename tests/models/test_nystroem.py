"""Nyström RBF features + LIBLINEAR (NystroemSVMClassifier)."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import compose_run
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import rbf_kernel

from llc_bench.experiment.runner import build_estimator
from llc_bench.models.kernel import _scale_gamma
from llc_bench.models.linear import LinearSVMClassifier
from llc_bench.models.nystroem import NystroemSVMClassifier, nystroem_normalization


def banana_like(n=600, seed=0):
    """Two interleaved half moons with noise: no linear separator."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    t = rng.uniform(0, np.pi, n)
    X = np.c_[np.cos(t) + y, np.sin(t) * (1 - 2 * y) + 0.4 * y]
    return X + rng.normal(scale=0.15, size=X.shape), y


@pytest.mark.parametrize("landmarks", ["kmeans", "random"])
def test_all_points_as_landmarks_reproduce_the_kernel(landmarks):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    est = NystroemSVMClassifier(n_components=40, landmarks=landmarks, gamma=0.3, C=1.0)
    est.fit(X, (X[:, 0] > 0).astype(int))
    F = est._features(X)
    np.testing.assert_allclose(F @ F.T, rbf_kernel(X, gamma=0.3), atol=1e-6)
    # the landmarks are the points themselves (as a set)
    np.testing.assert_allclose(np.sort(est.landmarks_, axis=0), np.sort(X, axis=0), atol=1e-8)


def test_kmeans_map_is_k_times_inverse_sqrt_up_to_rotation():
    rng = np.random.default_rng(1)
    X, U = rng.normal(size=(50, 4)), rng.normal(size=(12, 4))
    N = nystroem_normalization(U, gamma=0.5)
    s, V = np.linalg.eigh(rbf_kernel(U, gamma=0.5))
    inv_sqrt = V @ np.diag(s**-0.5) @ V.T  # the symmetric K_mm^{-1/2}
    ours, ref = rbf_kernel(X, U, gamma=0.5) @ N, rbf_kernel(X, U, gamma=0.5) @ inv_sqrt
    np.testing.assert_allclose(ours @ ours.T, ref @ ref.T, atol=1e-8)
    # duplicated landmarks: the null direction is dropped, not inverted
    N2 = nystroem_normalization(np.vstack([U, U[:1]]), gamma=0.5)
    assert N2.shape == (13, 12) and np.isfinite(N2).all()


def test_random_landmarks_are_sklearns_nystroem():
    X, y = banana_like(200)
    est = NystroemSVMClassifier(n_components=30, landmarks="random", gamma=2.0, C=1.0,
                                random_state=4).fit(X, y)
    ref = Nystroem(gamma=2.0, n_components=30, random_state=4).fit(X)
    np.testing.assert_allclose(est._features(X), ref.transform(X))


def test_solves_moons_where_a_linear_svm_cannot_and_cv_picks_from_the_grids():
    X, y = banana_like()
    Xt, yt = banana_like(seed=1)
    linear = LinearSVMClassifier(C=1.0).fit(X, y).score(Xt, yt)
    est = NystroemSVMClassifier(n_components=50, gamma_factors=(0.3, 3.0), C_grid=(1.0, 100.0))
    est.fit(X, y)
    assert est.score(Xt, yt) > linear + 0.08 and est.score(Xt, yt) > 0.95
    info = est.fit_info_
    assert info["selected"]["C"] in (1.0, 100.0)
    assert any(np.isclose(info["selected"]["gamma"], _scale_gamma(X) * f) for f in (0.3, 3.0))
    assert len(info["cv"]["params"]) == 4
    assert set(info["timings"]) == {"landmarks", "cv", "features", "train"}
    assert info["model_size"]["n_components"] == 50


def test_multiclass_sparse_and_determinism():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = np.digitize(X[:, 0] * X[:, 1], [-0.3, 0.3])
    kw = dict(n_components=40, gamma=0.2, C=10.0, random_state=2)
    a = NystroemSVMClassifier(**kw).fit(X, y)
    b = NystroemSVMClassifier(**kw).fit(X, y)
    assert a.decision_function(X).shape == (300, 3)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.fit_info_["cv"] is None  # nothing to choose
    s = NystroemSVMClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(s.decision_function(sp.csr_matrix(X)), a.decision_function(X),
                               atol=1e-8)


def test_runner_builds_it(tmp_path):
    cfg = compose_run("model=nystroem", "trainer.landmarks=random", "seed=3", tmp_path=tmp_path)
    est = build_estimator(cfg)
    assert isinstance(est, NystroemSVMClassifier)
    p = est.get_params()
    assert (p["n_components"], p["landmarks"], p["gamma"], p["random_state"]) == (
        500, "random", None, 3)




def test_gamma_scale_is_gamma_in_units_of_the_data_s_scale():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    scaled = NystroemSVMClassifier(n_components=50, C=1.0, gamma_scale=2.0).fit(X, y)
    given = NystroemSVMClassifier(n_components=50, C=1.0,
                                  gamma=2.0 * _scale_gamma(X)).fit(X, y)
    assert scaled.fit_info_["cv"] is None and scaled.gamma_ == given.gamma_
    np.testing.assert_array_equal(scaled.decision_function(X), given.decision_function(X))
    with pytest.raises(ValueError, match="give it or gamma"):
        NystroemSVMClassifier(gamma=1.0, gamma_scale=1.0).fit(X, y)
