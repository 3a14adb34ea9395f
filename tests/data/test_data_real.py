"""Every dataset of the mirror loads with the papers' statistics (dataset_stats.csv) and the
mirror's MANIFEST.tsv; the others fail with the one-line "not available offline" error."""

from __future__ import annotations

import csv
import functools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import REPO

from llc_bench.data import dataset_spec, dataset_status, list_datasets, load_dataset, resolve_spec
from llc_bench.errors import DatasetError

STATS = REPO.parent / "shared" / "paper_tables" / "dataset_stats.csv"
# (paper, dataset column of dataset_stats.csv) -> our config
CONFIG_OF = {("ml3", "banana"): "banana_ml3", ("ml3", "covtype_binary"): "covtype_binary",
             ("occ", "mnist"): "mnist_40k", ("llsvm", "mnist"): "mnist_40k",
             ("ml3", "mnist"): "mnist_ml3"}
DESIGN_NAMES = ["banana", "ijcnn", "skin", "magic04", "cifar", "rcv1", "usps", "mnist", "letter",
                "mnist8m", "phishing", "w8a", "connect4", "connect4_3class", "covtype",
                "covtype_binary", "german", "heart", "ionosphere", "liver", "pima", "ringnorm",
                "sonar", "spambase", "wdbc", "sine", "xor"]
NOT_IN_MIRROR = ["cifar", "covtype", "covtype_binary", "mnist8m", "rcv1"]


def stats_rows() -> list[dict]:
    if not STATS.is_file():
        return []
    with open(STATS, newline="") as fh:
        return list(csv.DictReader(fh))


def manifest(mirror: Path) -> dict[str, dict]:
    with open(mirror / "MANIFEST.tsv", newline="") as fh:
        return {row["file"]: row for row in csv.DictReader(fh, delimiter="\t")}


pytestmark = pytest.mark.usefixtures("no_env")


@functools.lru_cache(maxsize=2)
def _load(name: str, mirror: Path, home: Path):
    return load_dataset(name, seed=0, home=home, mirrors=[mirror], download=False)


def test_every_design_dataset_has_a_config():
    names = list_datasets()
    assert set(DESIGN_NAMES) <= set(names)
    assert "file" in list_datasets(include_custom=True) and "file" not in names
    for name in names:
        spec = resolve_spec(name)
        assert spec.raw.get("papers") is not None and spec.split.protocol
        for source in spec.sources:
            for entry in source.files:
                assert not Path(entry.path).is_absolute()
                for url in entry.urls:
                    assert url.startswith("https://"), url


@pytest.mark.real_data
@pytest.mark.parametrize("row", stats_rows(), ids=lambda r: f"{r['paper']}-{r['dataset']}")
def test_specs_record_the_paper_statistics(row):
    spec = resolve_spec(CONFIG_OF.get((row["paper"], row["dataset"]), row["dataset"]))
    assert spec.expected.features == int(row["features"])
    assert spec.expected.classes == int(row["classes"])
    if row["train"]:
        assert dict(spec.paper_sizes) == {"train": int(row["train"]), "test": int(row["test"])}


def mirror_configs() -> list[str]:
    # infimnist generates 8.1M rows on first use: tests/data/test_stream.py loads a small one
    return [n for n in list_datasets() if n not in NOT_IN_MIRROR + ["infimnist"]]


@pytest.mark.parametrize("name", mirror_configs())
def test_mirror_dataset_loads_with_expected_statistics(name, mirror, data_home):
    ds = _load(name, mirror, data_home)
    spec = resolve_spec(name)
    rows = [r for r in stats_rows()
            if CONFIG_OF.get((r["paper"], r["dataset"]), r["dataset"]) == name]
    for row in rows:
        assert ds.n_features == int(row["features"]) and len(ds.classes) == int(row["classes"])
        if row["train"]:
            assert (ds.n_train, ds.n_test) == (int(row["train"]), int(row["test"]))
        else:  # ML3 UCI sets: two thirds for training
            total = ds.n_train + ds.n_test
            assert ds.n_train == int(total * 2 / 3 + 0.5)
    assert ds.info["notes"] == []  # sizes equal the paper's where it states them
    assert ds.X_train.dtype == np.float64 and ds.y_train.dtype == np.int64
    values = ds.X_train.data if sp.issparse(ds.X_train) else ds.X_train
    assert np.all(np.isfinite(values)) and len(np.unique(ds.y_train)) == len(ds.classes)
    assert sp.issparse(ds.X_train) == bool(spec.sparse)  # sparse configs stay CSR
    if spec.scaling in ("standard", "center") and not spec.sparse:  # sparse: never centred
        np.testing.assert_allclose(ds.X_train.mean(0), 0, atol=1e-8)
    if spec.kind == "synthetic":
        return

    # label counts of the files used (MANIFEST) == encoded class counts + dropped rows
    files = manifest(mirror)
    source = next(s for s in spec.sources if s.id == ds.info["source"])
    raw = Counter()
    for record in ds.info["files"]:
        assert record["found_in"] == "mirror" and record["relative"] in files
        assert record["sha256"] == files[record["relative"]]["sha256"]
        for pair in filter(None, files[record["relative"]]["classes"].split(";")):
            label, count = pair.rsplit(":", 1)
            raw[source.relabel.get(label, label)] += int(count)
    if spec.max_train is None:
        encoded = Counter()
        for label, count in raw.items():
            if label in spec.labels.drop:
                encoded["dropped"] += count
            elif ds.task == "binary":
                encoded[ds.classes[1] if label in spec.labels.positive else ds.classes[0]] += count
            else:
                encoded[label] += count
        got = Counter(ds.info["class_counts"]["train"]) + Counter(ds.info["class_counts"]["test"])
        got["dropped"] = ds.info["labels"]["dropped_rows"]
        if any(e.options.get("missing") == "drop_rows" for e in source.files):
            # rows with a missing value are dropped while parsing (wbc: 16 of 699)
            assert all(got[k] <= encoded[k] for k in encoded) and got.total() < encoded.total()
            return
        assert +got == +encoded


def test_pinned_checksums_equal_the_manifest(mirror):
    files = manifest(mirror)
    checked = 0
    for name in list_datasets():
        for source in resolve_spec(name).sources:
            for entry in source.files:
                row = files.get(entry.path)
                if entry.sha256 and row and Path(entry.download_path).name == Path(entry.path).name:
                    assert entry.sha256 == row["sha256"], (name, entry.path)
                    checked += 1
    assert checked >= 8  # banana (3), connect-4 PMLB, ringnorm, MNIST (4)


def test_alternative_sources_agree(mirror, data_home):
    """connect-4: PMLB (cells 0/1/2) and UCI text (b/o/x) one-hot == LIBSVM encoding."""
    reference = _load("connect4", mirror, data_home)
    for source_id in ("pmlb", "uci"):
        spec = dataset_spec("connect4")
        spec["sources"] = [s for s in spec["sources"] if s["id"] == source_id]
        other = load_dataset(spec, seed=0, home=data_home, mirrors=[mirror], download=False)
        assert other.info["source"] == source_id
        np.testing.assert_array_equal(other.X_train, reference.X_train)
        np.testing.assert_array_equal(other.y_test, reference.y_test)
    keel = dataset_spec("banana")
    keel["sources"] = keel["sources"][1:]
    ds = load_dataset(keel, seed=0, home=data_home, mirrors=[mirror], download=False)
    assert ds.info["source"] == "keel" and (ds.n_train, ds.n_test) == (3533, 1767)


def test_protocol_details_on_real_data(mirror, data_home):
    letter = _load("letter", mirror, data_home)
    assert letter.info["split"]["train_rows"] == [0, 16000] and letter.classes[0] == "A"
    raw = load_dataset(dict(dataset_spec("mnist_40k")), seed=1, home=data_home,
                       mirrors=[mirror], download=False)
    assert raw.info["subsample"]["train"] == [60000, 40000]
    assert raw.info["scaling"]["method"] == "none"
    assert raw.X_train.min() == 0.0 and raw.X_train.max() == 1.0
    jo = _load("banana_jo", mirror, data_home)
    assert jo.info["split"]["protocol"] == "files" and jo.info["source"] == "jo_split"


@pytest.mark.parametrize("name", NOT_IN_MIRROR)
def test_datasets_not_in_mirror_give_one_line_error(name, mirror, data_home):
    status = dataset_status(name, home=data_home, mirrors=[mirror])
    assert status["available"] is False and status["missing"]
    with pytest.raises(DatasetError) as err:
        load_dataset(name, home=data_home, mirrors=[mirror], download=False)
    message = str(err.value)
    spec = resolve_spec(name)
    assert "\n" not in message and f"dataset {name!r} is not available offline" in message
    # the places are printed resolved: a mirror reached through a symlink shows its target
    assert f"{data_home.resolve()} (home)" in message and f"{mirror.resolve()} (mirror)" in message
    assert all(path in message for path in status["missing"])
    assert (spec.urls[0] in message) if spec.urls else (spec.homepage in message)
