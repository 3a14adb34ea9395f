"""Out-of-core data: row store, conversion (resumable), streamed loading."""

from __future__ import annotations

import bz2
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO

from llc_bench.data import load_dataset, stream
from llc_bench.data import rowstore as S
from llc_bench.errors import ConfigError


def write_mnist8m_bz2(path: Path, n: int, seed: int = 0):
    """``n`` rows in the LIBSVM mnist8m format: ``label idx:val ...``, one-based indices,
    integer pixel values 1..255 (zeros omitted), bzip2-compressed. Returns (X, y)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 256, size=(n, 784)) * (rng.random((n, 784)) < 0.2)
    y = rng.integers(0, 10, size=n)
    lines = []
    for xi, yi in zip(X, y, strict=True):
        nz = np.flatnonzero(xi)
        lines.append(f"{yi} " + " ".join(f"{j + 1}:{xi[j]}" for j in nz) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bz2.compress("".join(lines).encode()))
    return X.astype(np.uint8), y


def mnist8m_spec(**changes) -> dict:
    raw = yaml.safe_load((REPO / "conf" / "dataset" / "mnist8m.yaml").read_text())
    raw["split"] = {"protocol": "files"}
    raw["expected"]["rows"] = {}
    raw.update(changes)
    return raw


def test_svmlight_bz2_round_trips_and_resumes(tmp_path, monkeypatch):
    src = tmp_path / "m8.bz2"
    X, y = write_mnist8m_bz2(src, 300)
    monkeypatch.setattr(S, "BLOCK_BYTES", 20_000)  # many blocks
    calls = {"n": 0}
    append = S.RowStoreWriter.append

    def interrupted(self, *args, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return append(self, *args, **kw)

    monkeypatch.setattr(S.RowStoreWriter, "append", interrupted)
    out = tmp_path / "store"
    with pytest.raises(KeyboardInterrupt):
        S.convert_svmlight(src, out, 784, 1 / 255, False, {"t": 1})
    part = Path(f"{out}.part")
    done_rows = int(yaml.safe_load((part / "progress.json").read_text())["rows"])
    assert 0 < done_rows < 300 and not out.exists()
    monkeypatch.setattr(S.RowStoreWriter, "append", append)
    seen = []
    monkeypatch.setattr(S.RowStoreWriter, "append",
                        lambda self, X_, *a, **k: (seen.append(len(X_)),
                                                   append(self, X_, *a, **k))[1])
    store = S.convert_svmlight(src, out, 784, 1 / 255, False, {"t": 1})
    assert sum(seen) == 300 - done_rows  # resumed: the first blocks were not parsed again
    assert store.n_rows == 300 and store.dtype == np.uint8 and not part.exists()
    np.testing.assert_array_equal(store.read(0, 300), X)
    np.testing.assert_array_equal(np.array(store.label_names, dtype=int)[store.y], y)
    np.testing.assert_array_equal(store.take(np.array([3, 150, 299])), X[[3, 150, 299]])
    assert np.load(out / "X.npy", mmap_mode="r").shape == (300, 784)  # a real .npy


def test_row_source_chunks_sample_and_stats(tmp_path):
    src = tmp_path / "m8.bz2"
    X, _ = write_mnist8m_bz2(src, 250, seed=1)
    store = S.convert_svmlight(src, tmp_path / "s", 784, 1 / 255, "auto", {})
    rows = np.arange(10, 240, 3)
    source = S.StoreSource(store, rows, value_scale=1 / 255, chunk_rows=32)
    Xf = X[rows] * (1 / 255)  # as load_dataset scales: x * value_scale
    assert source.n_chunks == 3 and source.n_rows == len(rows)
    got = dict(source.chunks([2, 0, 1]))
    np.testing.assert_array_equal(np.vstack([got[c] for c in range(3)]), Xf)
    stats = source.stats(labels=np.arange(len(rows)) % 3)
    np.testing.assert_allclose(stats["mean"], Xf.mean(0), atol=1e-12)
    np.testing.assert_allclose(stats["std"], Xf.std(0), atol=1e-12)
    np.testing.assert_allclose(stats["mean_abs"], np.abs(Xf).mean(0), atol=1e-12)
    assert stats["class_counts"] == {0: 26, 1: 26, 2: 25}
    pos = source.sample(20, seed=3)
    np.testing.assert_array_equal(source.take(pos), Xf[pos])
    assert len(pos) == 20 and np.all(np.diff(pos) > 0)


def test_scattered_rows_are_read_in_runs_without_a_memory_map(tmp_path, monkeypatch):
    store = S.write_store(tmp_path / "s", np.arange(600 * 7, dtype=np.float32).reshape(600, 7),
                          np.arange(600) % 2)
    monkeypatch.setattr(np, "load", None)  # no memory map: a map counts its pages as RSS
    rows = np.array([0, 1, 2, 57, 300, 301, 599])  # runs of 3, 1, 2 and 1 rows
    np.testing.assert_array_equal(store.take(rows), store.read(0, 600)[rows])
    np.testing.assert_array_equal(store.take(rows[:3]), store.read(0, 3))  # dense: one read


def test_mnist8m_streams_from_a_converted_store(tmp_path, mirror):
    home = tmp_path / "home"
    X, y = write_mnist8m_bz2(home / "mnist8m" / "mnist8m.bz2", 400, seed=2)
    ds = load_dataset(mnist8m_spec(max_train=None), home=home, mirrors=[mirror], download=False)
    assert isinstance(ds.X_train, S.RowSource) and ds.n_train == 400 and ds.n_test == 10000
    np.testing.assert_array_equal(ds.y_train, y)
    Xs = ds.X_train.take(np.arange(400))
    np.testing.assert_allclose(Xs.mean(0), 0.0, atol=1e-9)
    assert ds.info["row_store"]["streamed"] and ds.info["scaling"]["pass"] == "streaming"
    # max_train is applied at read time; small enough -> in memory, same rows and scaling
    small = load_dataset(mnist8m_spec(max_train=100), home=home, mirrors=[mirror],
                         download=False)
    assert isinstance(small.X_train, np.ndarray) and small.X_train.shape == (100, 784)
    forced = load_dataset(mnist8m_spec(max_train=100, stream=True), home=home,
                          mirrors=[mirror], download=False)
    assert isinstance(forced.X_train, S.RowSource)
    np.testing.assert_array_equal(forced.X_train.take(np.arange(100)), small.X_train)
    np.testing.assert_array_equal(forced.y_train, small.y_train)


def test_stream_key_is_checked():
    spec = load_dataset.__globals__["resolve_spec"](mnist8m_spec(stream="yes"))
    with pytest.raises(ConfigError, match="dataset.stream"):
        stream.streams(spec)


def test_cli_converts_once(tmp_path, mirror, capsys):
    from llc_bench.cli import main

    home = tmp_path / "home"
    write_mnist8m_bz2(home / "mnist8m" / "mnist8m.bz2", 50, seed=4)
    argv = ["datasets", "convert", "mnist8m", "--home", str(home), "--mirror", str(mirror),
            "--no-download"]
    main(argv)
    out = capsys.readouterr().out
    assert "train: 50 rows" in out and "test: 10000 rows" in out
    stores = sorted(p for p in (home / "_rows").iterdir() if p.is_dir())
    assert len(stores) == 2 and not any(p.name.endswith(".part") for p in stores)
    main(argv)  # a second call finds the stores
    assert sorted(p for p in (home / "_rows").iterdir() if p.is_dir()) == stores


def _run(tmp_path, mirror, *overrides):
    from conftest import compose_run

    from llc_bench.experiment.runner import run_experiment

    cfg = compose_run("dataset=mnist8m", "dataset.split.train_rows=null", *overrides,
                      tmp_path=tmp_path, mirrors=[mirror])
    return run_experiment(cfg, echo=lambda *_: None)


def test_runner_streams_llsvm_and_refuses_kernel_svm(tmp_path, mirror):
    src = tmp_path / "home" / "mnist8m" / "mnist8m.bz2"
    write_mnist8m_bz2(src, 300, seed=5)
    with pytest.raises(ConfigError, match=r"cannot stream .*dataset.max_train"):
        _run(tmp_path, mirror, "model=kernel")
    rec = _run(tmp_path, mirror, "model=llsvm", "coding.n_anchors=4", "coding.k=2",
               "trainer.epochs=1", "trainer.history=false")
    assert rec["data"]["n_train"] == 300 and rec["data"]["row_store"]["streamed"]
    pinned = rec["config"]["dataset"]["source_sha256"]
    assert set(pinned) == {"train"} and len(pinned["train"]) == 64  # t10k is pinned by spec
    assert 0 <= rec["metrics"]["train_accuracy"] <= 1
    write_mnist8m_bz2(src, 300, seed=6)  # other data under the same name: another key
    rec2 = _run(tmp_path, mirror, "model=llsvm", "coding.n_anchors=4", "coding.k=2",
                "trainer.epochs=1", "trainer.history=false")
    assert rec2["config_hash"] != rec["config_hash"]


def test_infimnist_rows_are_deterministic_per_seed_and_index(mirror):
    from llc_bench.data.formats import parse_idx
    from llc_bench.data.infimnist import DEFAULTS, generate_rows

    digits = parse_idx(mirror / "mnist" / "train-images-idx3-ubyte.gz", "x").X[:600]
    p = {**DEFAULTS}
    block = generate_rows(digits, 1195, 1205, p)  # rows past the 600 sources: deformed
    one = generate_rows(digits, 1200, 1201, p)[0]
    np.testing.assert_array_equal(block[5], one)  # independent of the block
    np.testing.assert_array_equal(generate_rows(digits, 599, 600, p)[0], digits[599])
    for i, row in zip(range(1195, 1205), block, strict=True):
        src = digits[i % 600].astype(int)
        assert np.abs(row.astype(int) - src).mean() > 5  # not the source digit
        assert abs(int(row.sum()) - int(src.sum())) < 0.5 * src.sum()  # still a digit
    other = generate_rows(digits, 1200, 1201, {**p, "seed": 1})[0]
    assert not np.array_equal(other, one)


def test_infimnist_dataset_is_generated_once_and_streamed(tmp_path, mirror):
    spec = yaml.safe_load((REPO / "conf" / "dataset" / "infimnist.yaml").read_text())
    spec["generator"]["n_train"] = 60_050
    ds = load_dataset(spec, home=tmp_path, mirrors=[mirror], download=False)
    assert isinstance(ds.X_train, S.RowSource) and (ds.n_train, ds.n_test) == (60_050, 10_000)
    from llc_bench.data.formats import parse_idx

    raw = parse_idx(mirror / "mnist" / "train-labels-idx1-ubyte.gz", "y")
    labels = np.array(raw.label_names, dtype=int)[raw.label_codes]
    np.testing.assert_array_equal(ds.y_train[:60_000], labels)  # classes 0..9 in order
    np.testing.assert_array_equal(ds.y_train[60_000:], labels[:50])
    assert any("GENERATED" in n for n in ds.info["notes"])
    assert ds.info["row_store"]["identity"]["generator"] == "infimnist"
