"""``sgd_dtype="float32"``: the SGD updates a float32 copy of W.  It must
really run in float32 (W's values are float32 numbers, and differ from the float64 run)
and stay within float32 rounding of the float64 run: the same η0, kept epoch and
predictions, decision values within 1e-5 of their scale."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import blobs

from llc_bench.models._sgd_kernel import sgd_epoch_dense
from llc_bench.models._validation import InvalidParameter
from llc_bench.models.llsvm import LLSVMClassifier
from llc_bench.models.sgd_epoch import anchor_major


def _is_float32_valued(a):
    return np.array_equal(a.astype(np.float32).astype(np.float64), a)


def test_the_float32_kernel_tracks_the_float64_one():
    rng = np.random.default_rng(0)
    n, D, m, C, k = 400, 12, 10, 3, 4
    X = rng.standard_normal((n, D))
    Y = np.where(rng.integers(0, C, n)[:, None] == np.arange(C), 1.0, -1.0)
    idx = np.sort(np.stack([rng.choice(m, k, replace=False) for _ in range(n)]), axis=1)
    gam = rng.random((n, k))
    gam /= gam.sum(axis=1, keepdims=True)
    W = rng.standard_normal((C, m, D)) * 0.1
    out = {}
    for dt in (np.float64, np.float32):
        Wa, b = anchor_major(W, dt), np.zeros((C, m))
        sgd_epoch_dense(X, Y, idx.astype(np.int32), gam, np.arange(n),
                        Wa, b, 1e-3, 100.0, 0, 4, 4, 0.1, True)
        assert Wa.dtype == dt
        out[dt] = (Wa.astype(np.float64), b)
    (W64, b64), (W32, b32) = out[np.float64], out[np.float32]
    assert not np.array_equal(W64, W32)  # float32 rounding did happen
    np.testing.assert_allclose(W32, W64, rtol=0, atol=1e-5 * np.abs(W64).max())
    np.testing.assert_allclose(b32, b64, rtol=0, atol=1e-5 * np.abs(b64).max())


def test_a_float32_fit_predicts_as_the_float64_fit():
    X, y = blobs(4, n=1200, d=6, seed=3)
    Xt, yt = blobs(4, n=400, d=6, seed=4)
    kw = dict(n_anchors=12, k=4, epochs=5, random_state=2)
    a = LLSVMClassifier(**kw, sgd_dtype="float64").fit(X, y)
    b = LLSVMClassifier(**kw).fit(X, y)  # fixed anchors: float32 by default (v5)
    assert a.fit_info_["sgd"]["sgd_dtype"] == "float64"
    assert b.fit_info_["sgd"]["sgd_dtype"] == "float32"
    assert _is_float32_valued(b.W_) and not _is_float32_valued(a.W_)
    assert a.fit_info_["sgd"]["eta0"] == b.fit_info_["sgd"]["eta0"]
    assert a.fit_info_["sgd"]["kept_epoch"] == b.fit_info_["sgd"]["kept_epoch"]
    fa, fb = a.decision_function(Xt), b.decision_function(Xt)
    assert np.abs(fa - fb).max() <= 1e-5 * np.abs(fa).max()
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))


def test_float32_with_learned_anchors_tracks_float64():
    X, y = blobs(3, n=900, d=5, seed=5)
    kw = dict(n_anchors=10, k=3, epochs=3, random_state=1, coding="soft_knn",
              learn_anchors=True)
    a = LLSVMClassifier(**kw).fit(X, y)
    b = LLSVMClassifier(**kw, sgd_dtype="float32").fit(X, y)
    assert _is_float32_valued(b.W_)
    np.testing.assert_allclose(b.anchors_, a.anchors_, rtol=0,
                               atol=1e-5 * np.abs(a.anchors_).max())
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("value", ["float16", "half", 32])
def test_an_unknown_sgd_dtype_is_refused_at_the_estimator(value):
    X, y = blobs(2, n=60, d=3, seed=0)
    with pytest.raises(InvalidParameter, match="sgd_dtype"):
        LLSVMClassifier(n_anchors=4, k=2, epochs=1, sgd_dtype=value).fit(X, y)
