"""Streaming trainers: a one-chunk stream is the in-memory fit, bit for bit;
more chunks reach about the same accuracy; models that cannot stream say so."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import blobs

from llc_bench.data import rowstore as S
from llc_bench.models.llsvm import LCCSVMClassifier, LLSVMClassifier

MODELS = {
    "llsvm": (LLSVMClassifier, {}),
    "lcc_svm": (LCCSVMClassifier, {}),
    "sapl": (LLSVMClassifier, {"coding": "soft_knn", "learn_anchors": True}),
    "jo": (LLSVMClassifier, {"coding": "adaptive_knn", "learn_anchors": True}),
    "linear_sgd": (LLSVMClassifier, {"n_anchors": 1, "k": 1, "init": "zeros"}),
    "llsvm_float32": (LLSVMClassifier, {"sgd_dtype": "float32"}),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    X, y = blobs(3, n=900, d=5, seed=7)
    store = S.write_store(tmp_path_factory.mktemp("s") / "store", X.astype(np.float32), y)
    Xt, yt = blobs(3, n=300, d=5, seed=8)
    return store, y, Xt, yt


@pytest.mark.parametrize("name", MODELS)
def test_one_chunk_stream_equals_in_memory_fit(name, data):
    store, y, Xt, yt = data
    source = S.StoreSource(store, chunk_rows=10_000)
    X = source.take(np.arange(source.n_rows))
    cls, kw = MODELS[name]
    kw = {"n_anchors": 8, "k": 3, "epochs": 3, "random_state": 5, **kw}
    a = cls(**kw).fit(X, y, eval_set=(Xt, yt))
    b = cls(**kw).fit(source, y, eval_set=(Xt, yt))
    for attr in ("W_", "b_", "anchors_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    assert a.fit_info_["history"] == b.fit_info_["history"]
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(source))


@pytest.mark.parametrize("name", ["llsvm", "sapl"])
def test_many_chunks_reach_the_in_memory_accuracy(name, data):
    store, y, Xt, yt = data
    source = S.StoreSource(store, chunk_rows=128)  # 8 chunks, in a seeded order
    cls, kw = MODELS[name]
    kw = {"n_anchors": 8, "k": 3, "epochs": 3, "random_state": 5, **kw}
    a = cls(**kw).fit(source.take(np.arange(source.n_rows)), y)
    b = cls(**kw).fit(source, y)
    assert source.n_chunks == 8 and not np.array_equal(a.W_, b.W_)
    assert abs(a.score(Xt, yt) - b.score(Xt, yt)) <= 0.01 + 1e-12  # 1 point, as a float
    assert b.fit_info_["sgd"]["steps"] == 3 * 900


def test_prefetching_the_next_chunk_changes_no_number(data, monkeypatch):
    """The producer thread (read + encode chunk c+1 during the kernel on chunk c) keeps the
    draws and the arithmetic of the sequential stream."""
    import functools

    from llc_bench.models import llsvm, sgd_batches

    store, y, Xt, yt = data
    source = S.StoreSource(store, chunk_rows=128)
    kw = {"n_anchors": 8, "k": 3, "epochs": 2, "random_state": 5}
    threaded = LLSVMClassifier(**kw).fit(source, y)
    monkeypatch.setattr(llsvm, "stream_batches",
                        functools.partial(sgd_batches.stream_batches, prefetch=False))
    sequential = LLSVMClassifier(**kw).fit(source, y)
    np.testing.assert_array_equal(threaded.W_, sequential.W_)
    np.testing.assert_array_equal(threaded.b_, sequential.b_)


def test_ijcnn_streamed_in_seven_chunks_is_within_a_third_of_a_point(tmp_path, mirror):
    """Real data: LL-SVM on IJCNN1 (49,990 rows) from its svmlight row store in
    7 chunks of 8,192 rows against the in-memory fit; test accuracy within 0.3 points."""
    from conftest import compose_run

    from llc_bench.data import load_dataset

    config = compose_run("dataset=ijcnn", tmp_path=tmp_path, mirrors=[mirror])
    home, mirrors = config["data"]["home"], config["data"]["mirrors"]
    memory = load_dataset(config["dataset"], seed=0, home=home, mirrors=mirrors,
                          download=False)
    streamed = load_dataset({**config["dataset"], "stream": True}, seed=0, home=home,
                            mirrors=mirrors, download=False)
    source = streamed.X_train.with_options(chunk_rows=8192)
    assert source.n_chunks == 7
    kw = {"n_anchors": 30, "k": 8, "epochs": 3, "random_state": 0}
    a = LLSVMClassifier(**kw).fit(memory.X_train, memory.y_train)
    b = LLSVMClassifier(**kw).fit(source, streamed.y_train)
    acc_a, acc_b = a.score(memory.X_test, memory.y_test), b.score(streamed.X_test,
                                                                 streamed.y_test)
    assert acc_a > 0.95 and abs(acc_a - acc_b) <= 0.003, (acc_a, acc_b)


def test_keeping_the_streamed_codes_changes_no_number(data, monkeypatch):
    """Fixed-anchor codes kept after the first epoch (the default when they fit the
    budget) give the numbers of codes recomputed for every chunk of every epoch."""
    import functools

    from llc_bench.models import llsvm, sgd_batches

    store, y, Xt, yt = data
    source = S.StoreSource(store, chunk_rows=128)
    from llc_bench.coding.local import CODINGS

    calls = []
    coding = CODINGS["inverse_distance"]  # the default coding's encode, counted
    encode = coding.encode
    monkeypatch.setattr(coding, "encode",
                        lambda self, X, anchors, **kw: calls.append(X.shape[0]) or
                        encode(self, X, anchors, **kw))
    kw = {"n_anchors": 8, "k": 3, "epochs": 3, "random_state": 5, "history": False}
    kept = LLSVMClassifier(**kw).fit(source, y)
    n_kept = len(calls)
    monkeypatch.setattr(llsvm, "stream_batches",
                        functools.partial(sgd_batches.stream_batches, code_cache_bytes=0))
    calls.clear()
    fresh = LLSVMClassifier(**kw).fit(source, y)
    assert len(calls) - n_kept == 2 * source.n_chunks  # epochs 2 and 3 re-encode
    np.testing.assert_array_equal(kept.W_, fresh.W_)
    np.testing.assert_array_equal(kept.b_, fresh.b_)
    assert kept.fit_info_["sgd"]["epoch_objectives"] == fresh.fit_info_["sgd"]["epoch_objectives"]


def test_the_kernel_scales_stored_pixels_as_the_source_does(tmp_path):
    """Epochs after the first train on the stored uint8 rows, whose values the kernel
    looks up row by row: the same W and b, bit for bit, as on the float64
    chunk the source builds with its numpy passes (x · value_scale − mean) / scale."""
    from llc_bench.models import sgd_epoch

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(300, 12), dtype=np.uint8)
    y = rng.integers(0, 3, size=300)
    store = S.write_store(tmp_path / "px", pixels, y)
    X = pixels / 255.0
    source = S.StoreSource(store, value_scale=1 / 255, mean=X.mean(axis=0),
                         scale=X.std(axis=0) + 0.1)
    stored, dense = source.stored_chunk(0), source.chunk(0)
    assert stored.raw.dtype == np.uint8 and stored.table.shape == (256, 12)
    assert S.StoreSource(S.write_store(tmp_path / "f", X.astype(np.float32), y)
                       ).stored_chunk(0) is None  # float rows: the float64 chunk as before
    code = LLSVMClassifier(n_anchors=6, k=3, random_state=0, epochs=0).fit(dense, y)
    idx = code.coding_.encode(dense, code.anchors_)
    Y = sgd_epoch.labels_matrix(y, 3)
    kw = dict(lambda_=1e-3, t0=50.0, skip=4, bias_scale=0.5)
    order = rng.permutation(300)
    out = []
    for rows in (dense, stored):
        W, b = code.W_.copy(), code.b_.copy()
        sgd_epoch.run_epoch(rows, Y, idx, order, W, b, 0, 4, **kw)
        out.append((W, b))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert not np.array_equal(out[0][0], code.W_)  # the epoch moved W


def test_streamed_pixels_fit_as_the_float_chunks_do(tmp_path, monkeypatch):
    """End to end: a standardised uint8 source in 3 chunks, codes kept (later epochs
    look the stored bytes up) or not (every epoch scales and encodes float64 chunks)."""
    import functools

    from llc_bench.models import llsvm, sgd_batches

    X, y = blobs(3, n=600, d=6, seed=3)
    pixels = np.clip(np.round(X * 40 + 128), 0, 255).astype(np.uint8)
    store = S.write_store(tmp_path / "px", pixels, y)
    Xf = pixels / 255.0
    source = S.StoreSource(store, value_scale=1 / 255, mean=Xf.mean(axis=0),
                         scale=Xf.std(axis=0), chunk_rows=256)
    kw = {"n_anchors": 8, "k": 3, "epochs": 3, "random_state": 5, "history": False}
    looked_up = LLSVMClassifier(**kw).fit(source, y)
    monkeypatch.setattr(llsvm, "stream_batches",
                        functools.partial(sgd_batches.stream_batches, code_cache_bytes=0))
    scaled = LLSVMClassifier(**kw).fit(source, y)
    np.testing.assert_array_equal(looked_up.W_, scaled.W_)
    np.testing.assert_array_equal(looked_up.b_, scaled.b_)
