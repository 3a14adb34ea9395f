"""Sparse data stay sparse: the learned-anchor SGD (SAPL / JO), ML3 and
LDKL train and predict on CSR rows and give the dense result on a small dense-able problem."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from reference_sgd import sgd_epoch_anchors_reference

from llc_bench.coding.local import make_coding
from llc_bench.models._ldkl_kernel import ldkl_sgd_steps, ldkl_sgd_steps_csr
from llc_bench.models._ml3_kernel import sgd_epoch, sgd_epoch_csr
from llc_bench.models.ldkl import LDKLClassifier
from llc_bench.models.llsvm import LLSVMClassifier
from llc_bench.models.ml3 import ML3Classifier
from llc_bench.models.sgd_epoch import (
    labels_matrix,
    run_epoch_anchors,
)

RTOL = 1e-9  # CSR distances by ||x||² - 2x·v + ||v||², dense by Σ(x_d - v_d)²: rounding only


def _data(n, seed, D=10, density=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * (rng.random((n, D)) < density)
    y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(int) + 2 * (X[:, 3] > 1.2)
    return X, y


def _close(a, b, rtol=RTOL):
    np.testing.assert_allclose(b, a, rtol=0, atol=rtol * max(np.abs(a).max(), 1e-300))


@pytest.fixture
def no_densify(monkeypatch):
    """toarray()/todense() of a sparse matrix with more rows than an anchor set (the
    anchors are dense by design; random_per_class picks them as CSR rows) fails the test."""
    def boom(self, *args, **kwargs):
        if self.shape[0] > 20:
            raise AssertionError(f"a sparse {self.shape} matrix was densified")
        return orig[type(self)](self, *args, **kwargs)

    classes = (sp.csr_matrix, sp.csr_array, sp.csc_matrix, sp.coo_matrix, sp.coo_array)
    orig = {cls: cls.toarray for cls in classes}
    for cls in classes:
        monkeypatch.setattr(cls, "toarray", boom)
        monkeypatch.setattr(cls, "todense", boom)


# ------------------------------------------------------------ learned-anchor kernel

@pytest.mark.parametrize("coding, opts", [("soft_knn", {"beta": "auto"}),
                                          ("adaptive_knn", {"mu": 0.5})])
@pytest.mark.parametrize("anchor_scale, step_max, steps, n_out", [
    (0.1, None, 400, 1),  # the papers' step
    (0.2, 0.2, 400, 3),  # trust region (it clips), one-vs-all outputs
    (1000.0, 1.0, 40, 1),  # every move clipped to c = 1: the scale hits 0 and is folded
])
def test_csr_anchor_kernel_equals_dense_kernel_and_reference(coding, opts, anchor_scale,
                                                             step_max, steps, n_out):
    X, y = _data(400, 0)
    rng = np.random.default_rng(1)
    Y = labels_matrix(y % n_out, n_out) if n_out > 1 else labels_matrix((y > 0) * 1, 2)
    V0 = X[rng.choice(len(X), 8, replace=False)]
    cod = make_coding(coding, k=3, **opts).fit(X, V0, random_state=0)
    order = rng.permutation(len(X))[:steps]
    kw = dict(lambda_=0.01, t0=100.0, skip=16, bias_scale=0.5, anchor_scale=anchor_scale,
              anchor_step_max=step_max)
    runs = []
    for Xin in (X, sp.csr_matrix(X), None):
        V, W, b = V0.copy(), np.zeros((n_out, 8, 10)), np.zeros((n_out, 8))
        if Xin is None:
            t, count, ks = sgd_epoch_anchors_reference(X, Y, order, V, W, b, 0, 16, cod, **kw)
        else:
            t, count, ks = run_epoch_anchors(Xin, Y, order, V, W, b, 0, 16, cod, **kw)
        runs.append((V, W, b, ks, t, count))
    dense = runs[0]
    assert np.abs(dense[0] - V0).max() > 0.1  # the anchors did move
    if step_max is not None:  # ... and the trust region clipped some moves
        V = V0.copy()
        run_epoch_anchors(X, Y, order, V, np.zeros_like(W), np.zeros_like(b), 0, 16, cod,
                          **{**kw, "anchor_step_max": None})
        assert np.abs(V - dense[0]).max() > 1e-3
    for other in runs[1:]:
        for a, b in zip(dense[:3], other[:3], strict=True):
            _close(a, b)
        np.testing.assert_array_equal(dense[3], other[3])  # k* per step
        assert dense[4:] == other[4:]


def test_csr_anchor_kernel_unsorted_duplicate_entries():
    X, y = _data(200, 2)
    Xs = sp.csr_matrix(X)
    # the same matrix with every row's entries reversed and each split into two halves
    data, indices = [], []
    for i in range(len(X)):
        lo, hi = Xs.indptr[i], Xs.indptr[i + 1]
        data.append(np.repeat(Xs.data[lo:hi][::-1] / 2, 2))
        indices.append(np.repeat(Xs.indices[lo:hi][::-1], 2))
    dup = sp.csr_matrix((np.concatenate(data), np.concatenate(indices), 2 * Xs.indptr),
                        shape=X.shape)
    assert not dup.has_canonical_format
    Y = np.where(y > 0, 1.0, -1.0)[:, None]
    V0 = X[:6].copy()
    cod = make_coding("soft_knn", k=3).fit(X, V0)
    out = []
    for Xin in (Xs, dup):
        V, W, b = V0.copy(), np.zeros((1, 6, 10)), np.zeros((1, 6))
        run_epoch_anchors(Xin, Y, np.arange(200), V, W, b, 0, 16, cod, lambda_=0.01,
                          t0=100.0, skip=16, bias_scale=0.5, anchor_scale=0.2)
        out.append(V)
    _close(out[0], out[1])


# ------------------------------------------------------------ SAPL / JO estimators

@pytest.mark.parametrize("params", [
    dict(coding="soft_knn", anchor_scale=0.05),  # SAPL
    dict(coding="adaptive_knn", mu=0.5, anchor_scale=0.1),  # JO (adaptive coding)
    # SAPL-lcc; at anchor_step_max=0.5 this trajectory amplifies rounding ~1e3x per epoch
    dict(coding="soft_knn", anchor_scale=0.3, anchor_step_max=0.2, use_W=False),
])
def test_sapl_and_jo_on_csr_equal_dense(params, no_densify):
    X, y = _data(400, 0)
    Xt, yt = _data(200, 1)
    kw = dict(n_anchors=8, k=3, learn_anchors=True, epochs=2, skip=16, random_state=0,
              anchor_method="random_per_class", calibration_passes=1, **params)
    dense = LLSVMClassifier(**kw).fit(X, y, eval_set=(Xt, yt))
    csr = LLSVMClassifier(**kw).fit(sp.csr_matrix(X), y, eval_set=(sp.csr_matrix(Xt), yt))
    assert np.abs(dense.anchors_ - dense.initial_anchors_).max() > 1e-3
    for name in ("anchors_", "W_", "b_"):
        _close(getattr(dense, name), getattr(csr, name))
    # the η0 calibration ran on CSR and chose the same step
    assert csr.fit_info_["sgd"]["eta0"] == dense.fit_info_["sgd"]["eta0"]
    assert "t0_calibration" in csr.fit_info_["sgd"]
    hd, hc = dense.fit_info_["history"], csr.fit_info_["history"]
    np.testing.assert_allclose([h["objective"] for h in hc], [h["objective"] for h in hd],
                               rtol=1e-9)
    assert [h["test_accuracy"] for h in hc] == [h["test_accuracy"] for h in hd]
    np.testing.assert_array_equal(csr.predict(sp.csr_matrix(Xt)), dense.predict(Xt))
    assert csr.score(sp.csr_matrix(Xt), yt) > 0.7


def test_sapl_on_wide_sparse_data_does_not_densify(no_densify):
    """A 300 × 200,000 problem (3 non-zeros per row) would be 480 MB dense."""
    rng = np.random.default_rng(5)
    n, D = 300, 200_000
    cols = np.c_[rng.integers(0, 4, n), rng.integers(4, D, (n, 2))]
    vals = rng.normal(size=(n, 3)) + 2.0
    X = sp.csr_matrix((vals.ravel(), (np.repeat(np.arange(n), 3), cols.ravel())), shape=(n, D))
    y = cols[:, 0] % 2
    clf = LLSVMClassifier(n_anchors=6, k=2, coding="soft_knn", learn_anchors=True, epochs=1,
                          anchor_method="random_per_class", random_state=0).fit(X, y)
    assert clf.anchors_.shape == (6, D)
    assert clf.score(X, y) > 0.9


# ------------------------------------------------------------ ML3

def test_ml3_csr_kernel_equals_dense_kernel():
    X, _ = _data(300, 3)
    rng = np.random.default_rng(0)
    c, m = 3, 4
    y = rng.integers(0, c, len(X))
    Xe = np.hstack([X, np.ones((len(X), 1))])
    xx = np.einsum("ij,ij->i", Xe, Xe)
    Xs = sp.csr_matrix(X)
    order = rng.permutation(len(X)).astype(np.int64)
    b_true = rng.random((len(X), m))
    for b_neg in (rng.random((len(X), c, m)), np.empty((0, c, m))):  # fixed / CCCP mode
        V0 = rng.normal(size=(c * m, 11))
        out = []
        for sparse in (False, True):
            V = V0.copy()
            U, state = np.zeros_like(V), np.array([1.0, float(np.sum(V * V)), 0.0])
            args = (y, order, b_true, b_neg, 0.01, 300.0, 0.0, 1e9, 1.5, 3.0, m, True,
                    np.empty(c * m), np.empty(m))
            if sparse:
                r = sgd_epoch_csr(V, U, state, Xs.data, Xs.indices, Xs.indptr, xx, *args)
            else:
                r = sgd_epoch(V, U, state, Xe, xx, *args)
            out.append((V, U, state, r))
        (Vd, Ud, sd, rd), (Vs, Us, ss, rs) = out
        assert rd[0] == rs[0] > 0
        for a, b in ((Vd, Vs), (Ud, Us), (sd, ss)):
            _close(a, b, 1e-12)


@pytest.mark.parametrize("params", [dict(n_models=4, n_iter=3),
                                    dict(n_models=3, n_iter=2, averaging=False, p=1),
                                    dict(n_models=3, n_iter=2, lambda_grid=[0.5, 2], cv_folds=2)])
def test_ml3_on_csr_equals_dense(params, no_densify):
    X, y = _data(400, 0)
    Xt, yt = _data(150, 1)
    dense = ML3Classifier(random_state=0, **params).fit(X, y, eval_set=(Xt, yt))
    csr = ML3Classifier(random_state=0, **params).fit(
        sp.csr_matrix(X), y, eval_set=(sp.csr_matrix(Xt), yt))
    _close(dense.W_, csr.W_, 1e-12)
    assert csr.lambda_used_ == dense.lambda_used_
    assert [h["test_error"] for h in csr.fit_info_["history"]] == \
        [h["test_error"] for h in dense.fit_info_["history"]]
    np.testing.assert_allclose(csr.decision_function(sp.csr_matrix(Xt)),
                               dense.decision_function(Xt), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(csr.predict(sp.csr_matrix(Xt)), dense.predict(Xt))
    # a CSC / COO test set is taken as CSR
    np.testing.assert_array_equal(csr.predict(sp.coo_matrix(Xt).tocsc()), dense.predict(Xt))


# ------------------------------------------------------------ LDKL

def test_ldkl_csr_kernel_equals_dense_kernel():
    X, _ = _data(300, 4, D=8)
    y = np.sign(X[:, 0] + 0.1)
    Xs = sp.csr_matrix(X)
    batches = np.random.default_rng(0).integers(0, len(X), size=(5, 17))
    out = []
    for sparse in (False, True):
        rng = np.random.default_rng(1)
        P = (rng.uniform(-1, 1, (15, 9)), rng.uniform(-1, 1, (7, 9)), rng.uniform(-1, 1, (15, 9)))
        args = (y, batches, 1, *P, 0.1, 0.01, 0.01, 1.0, 0.3)
        if sparse:
            ldkl_sgd_steps_csr(Xs.data, Xs.indices, Xs.indptr, *args)
        else:
            ldkl_sgd_steps(X, *args)
        out.append(P)
    for a, b in zip(*out, strict=True):
        _close(a, b, 1e-12)


def test_ldkl_on_csr_equals_dense_for_a_few_iterations(no_densify):
    # LDKL's annealed gates amplify rounding over hundreds of iterations; 20 stay close
    X, y = _data(300, 0, D=8)
    kw = dict(depth=2, n_iter=20, gate_every=10, random_state=0)
    dense = LDKLClassifier(**kw).fit(X, y)
    csr = LDKLClassifier(**kw).fit(sp.csr_matrix(X), y)
    for name in ("W_", "theta_", "theta_prime_"):
        _close(getattr(dense, name), getattr(csr, name), 1e-9)
    np.testing.assert_array_equal(csr.predict(sp.csr_matrix(X)), dense.predict(X))
