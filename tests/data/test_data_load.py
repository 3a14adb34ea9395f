"""load_dataset end to end on small files: splits, checks, bad inputs, cache, custom data."""

from __future__ import annotations

import bz2
import json

import numpy as np
import pytest
import scipy.sparse as sp

import llc_bench.data.reader as reader
from llc_bench.data import Dataset, dataset_spec, load_dataset, make_sine, make_xor
from llc_bench.errors import ConfigError, DatasetError


@pytest.fixture(autouse=True)
def no_env_mirror(monkeypatch):
    monkeypatch.delenv("LLC_BENCH_MIRROR", raising=False)
    monkeypatch.delenv("LLC_BENCH_DATA", raising=False)


def svmlight_rows(n: int, seed: int = 0, n_features: int = 3, labels=(-1, 1)) -> bytes:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        values = rng.normal(size=n_features) + 3
        lines.append(f"{labels[i % len(labels)]} " + " ".join(
            f"{j + 1}:{v:.6f}" for j, v in enumerate(values)))
    return ("\n".join(lines) + "\n").encode()


def toy_spec(files: dict, fmt: str = "svmlight", options=None, **overrides) -> dict:
    spec = {
        "name": "toy", "kind": "benchmark", "task": "binary",
        "sources": [{"id": "toy", "format": fmt, "options": options or {}, "files": files}],
        "labels": {"positive": ["1"], "negative": ["-1"]},
        "expected": {"features": 3, "classes": 2},
        "split": {"protocol": "fraction", "test_fraction": "1/3"},
        "scaling": "standard", "sparse": False,
    }
    spec.update(overrides)
    return spec


@pytest.fixture
def toy_file(tmp_path):
    path = tmp_path / "toy.bz2"
    path.write_bytes(bz2.compress(svmlight_rows(90)))
    return path


def load(spec, tmp_path, **kwargs) -> Dataset:
    return load_dataset(spec, home=tmp_path / "home", **kwargs)


def one_line_error(excinfo, *needles):
    message = str(excinfo.value)
    assert "\n" not in message, message
    for needle in needles:
        assert str(needle) in message, (needle, message)


def test_load_fraction_split_end_to_end(tmp_path, toy_file):
    ds = load(toy_spec({"all": {"path": str(toy_file)}}), tmp_path, seed=3)
    assert (ds.n_train, ds.n_test, ds.n_features) == (60, 30, 3)
    for X in (ds.X_train, ds.X_test):
        assert isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags["C_CONTIGUOUS"]
    assert ds.y_train.dtype == np.int64 and set(ds.y_train) == {-1, 1}
    assert ds.classes == ["-1", "1"] and ds.task == "binary"
    np.testing.assert_allclose(ds.X_train.mean(0), 0, atol=1e-12)
    info = json.loads(json.dumps(ds.info))  # JSON-serialisable
    assert info["split"] == {"protocol": "fraction", "test_fraction": "1/3", "seed": 3,
                             "stratified": False, "train": 60, "test": 30}
    assert info["files"][0]["found_in"] == "path" and len(info["files"][0]["sha256"]) == 64
    assert set(info["timings"]) == {"load", "preprocess"}
    assert info["scaling"]["fitted_on"] == "train"
    again = load(toy_spec({"all": {"path": str(toy_file)}}), tmp_path, seed=3)
    np.testing.assert_array_equal(ds.X_train, again.X_train)
    other = load(toy_spec({"all": {"path": str(toy_file)}}), tmp_path, seed=4)
    assert not np.array_equal(ds.y_train, other.y_train) or not np.array_equal(
        ds.X_train, other.X_train)


def test_fixed_files_row_ranges_and_max_train(tmp_path, toy_file):
    test = tmp_path / "toy.t"
    test.write_bytes(svmlight_rows(20, seed=1))
    spec = toy_spec({"train": {"path": str(toy_file)}, "test": {"path": str(test)}},
                    split={"protocol": "files"}, max_train=50, max_test=10, scaling="none")
    ds = load(spec, tmp_path, seed=0)
    assert (ds.n_train, ds.n_test) == (50, 10)
    assert ds.info["subsample"]["train"] == [90, 50] and ds.info["subsample"]["test"] == [20, 10]
    rows = toy_spec({"all": {"path": str(toy_file)}}, scaling="none",
                    split={"protocol": "rows", "train_rows": [0, 70], "test_rows": [70, 90]})
    ds_rows = load(rows, tmp_path, seed=9)
    full = load(toy_spec({"all": {"path": str(toy_file)}}, scaling="none",
                         split={"protocol": "rows", "train_rows": [0, 89],
                                "test_rows": [89, 90]}), tmp_path)
    np.testing.assert_array_equal(ds_rows.X_train, full.X_train[:70])


def test_sparse_spec_keeps_csr_and_scales_without_centring(tmp_path, toy_file):
    ds = load(toy_spec({"all": {"path": str(toy_file)}}, sparse=True), tmp_path)
    assert sp.isspmatrix_csr(ds.X_train) and ds.X_train.dtype == np.float64
    assert ds.info["scaling"]["centered"] is False
    np.testing.assert_allclose(ds.X_train.toarray().std(0), 1, rtol=1e-9)


def test_center_scaling_subtracts_the_training_mean_only(tmp_path, toy_file):
    files = {"all": {"path": str(toy_file)}}
    raw = load(toy_spec(files, scaling="none"), tmp_path, seed=3)
    ds = load(toy_spec(files, scaling="center"), tmp_path, seed=3)
    mean = raw.X_train.mean(0)
    np.testing.assert_allclose(ds.X_train, raw.X_train - mean, atol=1e-12)
    np.testing.assert_allclose(ds.X_test, raw.X_test - mean, atol=1e-12)  # the train mean
    assert ds.info["scaling"] == {"method": "center", "fitted_on": "train", "centered": True,
                                  "constant_features": 0}
    streamed = load(toy_spec(files, scaling="center", in_memory=False), tmp_path, seed=3)
    np.testing.assert_allclose(streamed.X_train.take(np.arange(60)), ds.X_train, atol=1e-5)
    with pytest.raises(ConfigError, match="scaling='center' would densify"):
        load(toy_spec(files, scaling="center", sparse=True), tmp_path)


def test_label_drop_and_multiclass_order(tmp_path):
    path = tmp_path / "three.txt"
    path.write_bytes(svmlight_rows(60, labels=("1", "0", "-1")))
    spec = toy_spec({"all": {"path": str(path)}},
                    labels={"positive": ["win"], "negative": ["loss"], "drop": ["draw"]})
    spec["sources"][0]["relabel"] = {"1": "win", "-1": "loss", "0": "draw"}
    ds = load(spec, tmp_path)
    assert ds.n_train + ds.n_test == 40 and ds.info["labels"]["dropped_rows"] == 20
    assert ds.classes == ["loss", "win"]
    multi = dict(spec, task="multiclass", labels={"order": ["loss", "draw", "win"]},
                 expected={"features": 3, "classes": 3})
    ds3 = load(multi, tmp_path)
    assert ds3.classes == ["loss", "draw", "win"] and set(ds3.y_train) == {0, 1, 2}


# --- bad inputs: one-line DatasetError naming the file -----------------------------------

def test_truncated_archive(tmp_path):
    path = tmp_path / "cut.bz2"
    body = bz2.compress(svmlight_rows(3000))
    path.write_bytes(body[: len(body) // 2])
    with pytest.raises(DatasetError) as err:
        load(toy_spec({"all": {"path": str(path)}}), tmp_path)
    one_line_error(err, path, "truncated or corrupt bz2")


def test_nan_value(tmp_path):
    path = tmp_path / "nan.csv"
    path.write_text("1,2,3,1\n4,,6,-1\n7,8,9,1\n")
    with pytest.raises(DatasetError) as err:
        load(toy_spec({"all": {"path": str(path)}}, fmt="csv"), tmp_path)
    one_line_error(err, path, "NaN/inf value at row 2, column 2")


def test_inf_value_in_svmlight(tmp_path):
    path = tmp_path / "inf.txt"
    path.write_text("1 1:1 2:inf\n-1 1:2\n")
    with pytest.raises(DatasetError) as err:
        load(toy_spec({"all": {"path": str(path)}}), tmp_path)
    one_line_error(err, path, "NaN/inf value at row 1, column 2")


def test_unknown_label(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("1,2,3,1\n4,5,6,-1\n7,8,9,3\n")
    with pytest.raises(DatasetError) as err:
        load(toy_spec({"all": {"path": str(path)}}, fmt="csv"), tmp_path)
    one_line_error(err, path, "unknown label '3' (1 rows)")


def test_wrong_feature_count(tmp_path):
    path = tmp_path / "narrow.csv"
    path.write_text("1,2,1\n4,5,-1\n")
    with pytest.raises(DatasetError) as err:
        load(toy_spec({"all": {"path": str(path)}}, fmt="csv"), tmp_path)
    one_line_error(err, path, "2 features", "expects 3")


def test_wrong_row_and_label_counts(tmp_path, toy_file):
    spec = toy_spec({"all": {"path": str(toy_file)}},
                    expected={"features": 3, "rows": {"all": 91}})
    with pytest.raises(DatasetError) as err:
        load(spec, tmp_path)
    one_line_error(err, toy_file, "90 rows", "expects 91")
    spec["expected"] = {"features": 3, "label_counts": {"all": {"-1": 40, "1": 50}}}
    with pytest.raises(DatasetError) as err:
        load(spec, tmp_path)
    one_line_error(err, toy_file, "label counts")


def test_one_class_training_split(tmp_path):
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    train.write_bytes(svmlight_rows(10, labels=(1,)))
    test.write_bytes(svmlight_rows(10))
    spec = toy_spec({"train": {"path": str(train)}, "test": {"path": str(test)}},
                    split={"protocol": "files"})
    with pytest.raises(DatasetError) as err:
        load(spec, tmp_path)
    one_line_error(err, train, "has 1 class")
    assert str(test) not in str(err.value)  # the training file is named, once
    assert str(err.value).count(str(train)) == 1


def test_missing_file_offline(tmp_path):
    spec = toy_spec({"train": {"path": "toy/toy.bz2", "url": "https://example.org/toy.bz2"},
                     "test": {"path": "toy/toy.t.bz2", "url": "https://example.org/toy.t.bz2"}},
                    split={"protocol": "files"})
    with pytest.raises(DatasetError) as err:
        load(spec, tmp_path, mirrors=[tmp_path / "mirror"], download=False)
    one_line_error(err, "'toy'", "not available offline", "toy/toy.bz2", "toy/toy.t.bz2",
                   tmp_path / "home", tmp_path / "mirror", "https://example.org/toy.bz2")


def test_validation_holds_out_training_rows_and_never_uses_the_test_split(tmp_path, toy_file):
    test = tmp_path / "toy.t"
    test.write_bytes(svmlight_rows(20, seed=1))
    files = {"train": {"path": str(toy_file)}, "test": {"path": str(test)}}
    full = load(toy_spec(files, split={"protocol": "files"}, scaling="none"), tmp_path, seed=2)
    ds = load(toy_spec(files, split={"protocol": "files"}, scaling="none", validation=0.25),
              tmp_path, seed=2)
    assert (ds.n_train, ds.n_test) == (68, 22)
    rows = {tuple(r) for r in full.X_train}
    assert all(tuple(r) in rows for r in ds.X_test)  # validation rows come from train
    assert not {tuple(r) for r in ds.X_test} & {tuple(r) for r in ds.X_train}
    assert not {tuple(r) for r in ds.X_test} & {tuple(r) for r in full.X_test}
    assert ds.info["validation"]["validation"] == 22 and ds.info["validation"]["train"] == 68
    again = load(toy_spec(files, split={"protocol": "files"}, scaling="none", validation=0.25),
                 tmp_path, seed=2)
    np.testing.assert_array_equal(ds.X_test, again.X_test)
    assert full.info["validation"] is None
    for bad in (1.5, 0, "x"):
        with pytest.raises(ConfigError, match="validation"):
            load(toy_spec(files, split={"protocol": "files"}, validation=bad), tmp_path)


def test_bad_config_values_are_config_errors(tmp_path, toy_file):
    for bad in ({"split": {"protocol": "stratified"}}, {"scaling": "minmax"},
                {"split": {"protocol": "fraction", "test_fraction": 1.5}}, {"typo_key": 1}):
        with pytest.raises(ConfigError):
            load(toy_spec({"all": {"path": str(toy_file)}}, **bad), tmp_path)
    with pytest.raises(ConfigError, match="seed"):
        load(toy_spec({"all": {"path": str(toy_file)}}), tmp_path, seed=-1)
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        load("nope", tmp_path)


# --- parsed-array cache -------------------------------------------------------------------

def test_cache_hit_then_reparse_when_file_changes(tmp_path, toy_file, monkeypatch):
    spec = toy_spec({"all": {"path": str(toy_file)}}, scaling="none")
    first = load(spec, tmp_path)
    assert first.info["files"][0]["cache"] == "miss"
    caches = list((tmp_path / "home" / "_cache").rglob("*.npz"))
    assert len(caches) == 1

    def broken(*args, **kwargs):
        raise AssertionError("parser called although the cache should hit")

    monkeypatch.setattr(reader, "parse_file", broken)
    second = load(spec, tmp_path)
    assert second.info["files"][0]["cache"] == "hit"
    np.testing.assert_array_equal(first.X_train, second.X_train)

    toy_file.write_bytes(bz2.compress(svmlight_rows(90, seed=7)))  # changed content
    with pytest.raises(AssertionError, match="parser called"):
        load(spec, tmp_path)
    monkeypatch.undo()
    third = load(spec, tmp_path)
    assert third.info["files"][0]["cache"] == "miss"
    assert not np.array_equal(first.X_train, third.X_train)


def test_corrupt_cache_is_ignored_and_rewritten(tmp_path, toy_file):
    spec = toy_spec({"all": {"path": str(toy_file)}})
    reference = load(spec, tmp_path)
    (cache,) = (tmp_path / "home" / "_cache").rglob("*.npz")
    cache.write_bytes(b"PK\x03\x04 garbage")
    again = load(spec, tmp_path)
    assert again.info["files"][0]["cache"] == "miss"
    np.testing.assert_array_equal(reference.X_test, again.X_test)
    assert load(spec, tmp_path).info["files"][0]["cache"] == "hit"
    assert not list(cache.parent.glob("*.tmp"))


# --- custom data (dataset=file) -----------------------------------------------------------

def test_custom_csv_with_test_fraction(tmp_path):
    path = tmp_path / "mine.csv"
    rng = np.random.default_rng(0)
    rows = [f"{'yes' if i % 3 else 'no'},{a:.4f},{b:.4f}" for i, (a, b) in
            enumerate(rng.normal(size=(30, 2)))]
    path.write_text("\n".join(rows) + "\n")
    spec = dict(dataset_spec("file"), train=str(path), test_fraction=0.33, label_column=0)
    ds = load(spec, tmp_path)
    assert (ds.n_train, ds.n_test, ds.n_features) == (20, 10, 2)
    assert ds.classes == ["no", "yes"] and ds.task == "binary"
    flipped = load(dict(spec, positive="no"), tmp_path)
    assert flipped.classes == ["yes", "no"]


def test_custom_svmlight_train_and_test_files(tmp_path):
    train, test = tmp_path / "a.svm", tmp_path / "a.t.svm"
    train.write_text("1 1:1 2:1\n2 1:2\n3 2:3\n1 1:0.5\n")
    test.write_text("2 1:1 4:1\n3 2:2\n")  # test has a feature index unseen in training
    spec = dict(dataset_spec("file"), train=str(train), test=str(test), format="svmlight")
    ds = load(spec, tmp_path)
    assert ds.task == "multiclass" and ds.classes == ["1", "2", "3"]
    assert ds.X_train.shape == (4, 4) and ds.X_test.shape == (2, 4)


def test_custom_needs_train_and_one_test_option(tmp_path):
    with pytest.raises(ConfigError, match="dataset.train"):
        load("file", tmp_path)
    base = dict(dataset_spec("file"), train=str(tmp_path / "x.csv"))
    with pytest.raises(ConfigError, match="exactly one"):
        load(base, tmp_path)
    with pytest.raises(DatasetError, match="x.csv"):
        load(dict(base, test_fraction=0.5), tmp_path, download=False)


def test_custom_via_hydra_overrides(tmp_path):
    from hydra import compose, initialize_config_module

    path = tmp_path / "h.csv"
    path.write_text("".join(f"{(7 * i) % 12},{i % 2}\n" for i in range(12)))
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose(overrides=["+dataset=file", f"dataset.train={path}",
                                 "dataset.test_fraction=0.25"])
    ds = load(cfg.dataset, tmp_path)
    assert (ds.n_train, ds.n_test) == (9, 3)


# --- synthetic ---------------------------------------------------------------------------

@pytest.mark.parametrize("make, size", [(make_sine, 2000), (make_xor, 1000)])
def test_generators_deterministic_per_seed(make, size):
    X, y = make(seed=0)
    assert X.shape == (size, 2) and (y == 1).sum() == (y == -1).sum() == size // 2
    X2, y2 = make(seed=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(X, make(seed=1)[0])


def test_sine_and_xor_datasets(tmp_path):
    sine = load("sine", tmp_path, seed=0)
    assert (sine.n_train, sine.n_test) == (1333, 667) and sine.info["source"] == "generator"
    xor = load("xor", tmp_path, seed=2)
    assert (xor.n_train, xor.n_test) == (667, 333)
    assert np.array_equal(load("xor", tmp_path, seed=2).X_train, xor.X_train)


# --- registry ------------------------------------------------------------------------------

def test_registry_composes_like_hydra():
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.data import list_datasets

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        for name in list_datasets(include_custom=True):
            cfg = compose(overrides=[f"+dataset={name}"])
            assert OmegaConf.to_container(cfg.dataset, resolve=True) == dataset_spec(name), name
    ml3 = dataset_spec("banana_ml3")
    assert ml3["name"] == "banana_ml3" and ml3["split"]["train_size"] == 400
    assert ml3["sources"] == dataset_spec("banana")["sources"]
    assert dataset_spec("banana_jo")["sources"][0]["id"] == "jo_split"


def test_streaming_dataset_has_the_in_memory_split_labels_and_scaling(tmp_path, toy_file):
    from llc_bench.data.rows import RowSource

    files = {"all": {"path": str(toy_file)}}
    ref = load(toy_spec(files), tmp_path, seed=3)
    ds = load(toy_spec(files, in_memory=False), tmp_path, seed=3)
    assert isinstance(ds.X_train, RowSource) and (ds.n_train, ds.n_test) == (60, 30)
    np.testing.assert_array_equal(ds.y_train, ref.y_train)
    np.testing.assert_array_equal(ds.y_test, ref.y_test)
    X = ds.X_train.take(np.arange(60))  # the store holds float32 values
    np.testing.assert_allclose(X, ref.X_train, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ds.X_test, ref.X_test, rtol=1e-5, atol=1e-5)
