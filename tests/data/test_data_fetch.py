"""File resolution (home, mirrors, download) without network: the URL opener is faked."""

from __future__ import annotations

import hashlib
import io
import urllib.error
from pathlib import Path

import pytest

import llc_bench.data.fetch as fetch
from llc_bench.data import dataset_status, fetch_dataset, load_dataset
from llc_bench.errors import DatasetError

PAYLOAD = b"".join(f"{1 if i % 2 else -1} 1:{i}.5 2:{i % 7}\n".encode() for i in range(40))
SHA = hashlib.sha256(PAYLOAD).hexdigest()


pytestmark = pytest.mark.usefixtures("no_env")


def spec(files=None, *sources, **overrides) -> dict:
    files = files or {"all": {"path": "toy/toy.txt", "url": "https://example.org/toy.txt",
                              "sha256": SHA}}
    out = {
        "name": "toy", "task": "binary",
        "sources": [{"id": "first", "format": "svmlight", "files": files}, *sources],
        "labels": {"positive": ["1"], "negative": ["-1"]},
        "expected": {"features": 2, "rows": {"all": 40}},
        "split": {"protocol": "fraction", "test_fraction": "1/4"},
    }
    out.update(overrides)
    return out


class FakeResponse(io.BytesIO):
    """A urlopen() response that checks the home while the download is in progress."""

    def __init__(self, data: bytes, during=None):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}
        self.during, self.reads = during, 0

    def read(self, size=-1):
        self.reads += 1
        if self.during and self.reads == 2:
            self.during()
        return super().read(min(size, 16) if size and size > 0 else size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def fake_opener(monkeypatch, payloads: dict, during=None):
    calls = []

    def opener(request, timeout=None):
        url = request.full_url
        calls.append(url)
        value = payloads.get(url, urllib.error.URLError("no route to host (test)"))
        if isinstance(value, Exception):
            raise value
        return FakeResponse(value, during)

    monkeypatch.setattr(fetch, "urlopen", opener)
    return calls


def test_download_goes_through_part_file_and_is_verified(tmp_path, monkeypatch):
    home, final = tmp_path / "home", tmp_path / "home" / "toy" / "toy.txt"
    seen = {}

    def during():
        seen["parts"] = [p.name for p in final.parent.glob("*.part")]
        seen["final_exists"] = final.exists()

    calls = fake_opener(monkeypatch, {"https://example.org/toy.txt": PAYLOAD}, during)
    ds = load_dataset(spec(), home=home)
    assert seen["parts"] and seen["parts"][0].startswith("toy.txt.") and not seen["final_exists"]
    assert final.read_bytes() == PAYLOAD and not list(final.parent.glob("*.part"))
    assert ds.info["files"][0]["found_in"] == "download" and calls == ["https://example.org/toy.txt"]
    assert ds.info["files"][0]["matches_upstream_sha256"] is True
    # second time: found in the home, no download
    calls.clear()
    assert load_dataset(spec(), home=home).info["files"][0]["found_in"] == "home" and not calls


def test_bad_checksum_leaves_no_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    fake_opener(monkeypatch, {"https://example.org/toy.txt": PAYLOAD + b"1 1:9\n"})
    with pytest.raises(DatasetError) as err:
        load_dataset(spec(), home=home)
    message = str(err.value)
    assert "\n" not in message and "checksum mismatch" in message
    assert "https://example.org/toy.txt" in message and "toy/toy.txt" in message
    assert not (home / "toy" / "toy.txt").exists()
    assert not list((home / "toy").glob("*"))  # no .part left either


def test_unknown_checksum_accepted_by_parse_check(tmp_path, monkeypatch):
    home = tmp_path / "home"
    files = {"all": {"path": "toy/toy.txt.xz", "url": "https://example.org/toy.txt"}}
    fake_opener(monkeypatch, {"https://example.org/toy.txt": PAYLOAD})
    ds = load_dataset(spec(files), home=home)
    saved = home / "toy" / "toy.txt"  # saved under the URL's name, next to the mirror path
    assert saved.read_bytes() == PAYLOAD and ds.n_train == 30
    assert ds.info["files"][0]["matches_upstream_sha256"] is None


def test_unknown_checksum_rejected_by_parse_check(tmp_path, monkeypatch):
    home = tmp_path / "home"
    files = {"all": {"path": "toy/toy.txt", "url": "https://example.org/toy.txt"}}
    short = b"".join(PAYLOAD.splitlines(keepends=True)[:20])  # a clean file, 20 rows not 40
    fake_opener(monkeypatch, {"https://example.org/toy.txt": short})
    with pytest.raises(DatasetError) as err:
        load_dataset(spec(files), home=home)
    assert "20 rows" in str(err.value) and "\n" not in str(err.value)
    assert not list((home / "toy").glob("toy.txt*"))


def test_second_url_and_second_source_are_tried(tmp_path, monkeypatch):
    home = tmp_path / "home"
    files = {"all": {"path": "toy/toy.txt", "sha256": SHA,
                     "url": ["https://dead.example.org/toy.txt", "https://example.org/toy.txt"]}}
    calls = fake_opener(monkeypatch, {"https://example.org/toy.txt": PAYLOAD})
    assert load_dataset(spec(files), home=home).n_test == 10
    assert calls == ["https://dead.example.org/toy.txt", "https://example.org/toy.txt"]
    broken = {"all": {"path": "a/a.txt", "url": "https://dead.example.org/a.txt"}}
    backup = {"id": "backup", "format": "svmlight",
              "files": {"all": {"path": "b/b.txt", "url": "https://example.org/toy.txt"}}}
    ds = load_dataset(spec(broken, backup), home=tmp_path / "home2")
    assert ds.info["source"] == "backup"


def test_resolution_order_home_then_mirror_then_offline_source(tmp_path, monkeypatch):
    home, mirror = tmp_path / "home", tmp_path / "mirror"
    calls = fake_opener(monkeypatch, {})
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "toy.txt").write_bytes(PAYLOAD)
    ds = load_dataset(spec(), home=home, mirrors=[mirror])
    assert ds.info["files"][0]["found_in"] == "mirror" and not calls
    (home / "toy").mkdir(parents=True)
    (home / "toy" / "toy.txt").write_bytes(PAYLOAD)
    assert load_dataset(spec(), home=home, mirrors=[mirror]).info["files"][0]["found_in"] == "home"
    # a later source complete offline wins over downloading the first one
    offline = {"id": "offline", "format": "svmlight",
               "files": {"all": {"path": "toy/toy.txt"}}}
    missing = {"all": {"path": "nothere/x.txt", "url": "https://example.org/x.txt"}}
    assert load_dataset(spec(missing, offline), home=home).info["source"] == "offline"
    assert not calls


def test_mirror_from_environment(tmp_path, monkeypatch):
    mirror = tmp_path / "envmirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "toy.txt").write_bytes(PAYLOAD)
    monkeypatch.setenv("LLC_BENCH_MIRROR", f"{tmp_path / 'nothing'}:{mirror}")
    ds = load_dataset(spec(), home=tmp_path / "home", download=False)
    assert ds.info["files"][0]["path"] == str(mirror / "toy" / "toy.txt")


def test_default_home(monkeypatch, tmp_path):
    monkeypatch.setenv("LLC_BENCH_DATA", str(tmp_path / "dh"))
    assert fetch.default_home() == (tmp_path / "dh").resolve()
    monkeypatch.delenv("LLC_BENCH_DATA")
    repo = Path(fetch.__file__).resolve().parents[2]
    if (repo / "pyproject.toml").is_file() and (repo / "datasets").is_dir():
        assert fetch.default_home() == repo / "datasets"


def test_status_and_fetch_for_the_cli(tmp_path, monkeypatch):
    home, mirror = tmp_path / "home", tmp_path / "mirror"
    status = dataset_status(spec(), home=home, mirrors=[mirror])
    assert status["available"] is False and status["missing"] == ["toy/toy.txt"]
    assert str(home) in status["places"] and str(mirror) in status["places"]
    assert status["sources"][0]["files"][0]["urls"] == ["https://example.org/toy.txt"]
    fake_opener(monkeypatch, {"https://example.org/toy.txt": PAYLOAD})
    paths = fetch_dataset(spec(), home=home, mirrors=[mirror])
    assert paths == {"all": [home / "toy" / "toy.txt"]}
    status = dataset_status(spec(), home=home, mirrors=[mirror])
    assert status["available"] and status["source"] == "first" and status["missing"] == []
    assert status["sources"][0]["files"][0]["found_in"] == "home"
    assert dataset_status("sine")["available"] and fetch_dataset("sine") == {}


def test_vendored_banana_needs_no_network():
    repo = Path(fetch.__file__).resolve().parents[2]
    for name in ("banana", "banana_jo", "banana_ml3"):
        status = dataset_status(name, home=repo / "datasets", mirrors=[])
        assert status["available"], status
        for record in (f for s in status["sources"] if s["complete"] for f in s["files"]):
            assert record["found_in"] == "home"
            assert fetch.sha256_of(Path(record["location"])) == record["sha256"]
