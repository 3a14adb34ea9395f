"""Supply chain: pinned digests, paths kept inside the data home or a mirror,
packaged spec names only, https-only downloads. The network is never used."""

from __future__ import annotations

import csv
import email.message
import hashlib
import io
import json
import urllib.error
import urllib.request
import urllib.response

import pytest
from conftest import REPO

import llc_bench.data.fetch as fetch
from llc_bench.data import dataset_spec, list_datasets, load_dataset, resolve_spec
from llc_bench.data.checksums import UNKNOWN, UPSTREAM
from llc_bench.data.compression import read_bytes
from llc_bench.data.spec import parse_spec
from llc_bench.errors import ConfigError, DatasetError

PAYLOAD = b"".join(f"{1 if i % 2 else -1} 1:{i}.5 2:{i % 7}\n".encode() for i in range(40))
SHA = hashlib.sha256(PAYLOAD).hexdigest()
URL = "https://example.org/toy.txt"
# Mirror copies that differ from the upstream file in a way MANIFEST.tsv documents.
DOCUMENTED = {"magic04/magic04.data.gz": lambda data: data + b"\n"}  # final newline missing


pytestmark = pytest.mark.usefixtures("no_env")


def toy(**file) -> dict:
    return {
        "name": "toy", "task": "binary",
        "sources": [{"id": "first", "format": "svmlight",
                     "files": {"all": {"path": "toy/toy.txt", "url": URL, **file}}}],
        "labels": {"positive": ["1"], "negative": ["-1"]},
        "expected": {"features": 2, "rows": {"all": 40}},
        "split": {"protocol": "fraction", "test_fraction": "1/4"},
    }


def entry_of(spec: dict):
    return parse_spec(spec).sources[0].files[0]


def packaged_entries():
    for name in list_datasets():
        for source in resolve_spec(name).sources:
            for entry in source.files:
                yield name, entry


# --- item 14: every download has a digest or says why not --------------------------------

def test_every_download_is_pinned_or_says_why():
    used = set()
    for name, entry in packaged_entries():
        if not entry.urls:
            continue
        used.update(entry.urls)
        assert all(url in UPSTREAM for url in entry.urls), (name, entry.urls)
        if entry.sha256 is None:
            assert entry.sha256_note and len(entry.sha256_note) > 10, (name, entry.path)
        else:
            assert len(entry.sha256) == 64 and not set(entry.sha256) - set("0123456789abcdef")
    assert set(UPSTREAM) == used, "rows of the checksum table that no spec uses"
    pinned = {url for url, (sha, _) in UPSTREAM.items() if sha != UNKNOWN}
    # 13 files before the input hardening (15 URLs: MNIST has two each) + 3
    assert len(pinned) >= 18


def test_pins_match_the_shared_copies(mirror):
    checked = set()
    for name, entry in packaged_entries():
        copy = mirror / entry.path
        if entry.sha256 is None or not copy.is_file() or entry.path in checked:
            continue
        checked.add(entry.path)
        if fetch.sha256_of(copy) != entry.sha256:  # else the copy is the upstream file itself
            # a re-compressed copy: the pin is of the upstream (decompressed) bytes
            data = DOCUMENTED.get(entry.path, lambda d: d)(read_bytes(copy))
            assert hashlib.sha256(data).hexdigest() == entry.sha256, (name, entry.path)
    with open(mirror / "MANIFEST.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    identical = [r for r in rows if "RECONSTRUCTED" not in r["note"]
                 and ("byte-identical" in r["note"] or "unchanged byte copy" in r["note"])]
    assert len(identical) >= 5
    for row in identical:  # MANIFEST's own digest is right, and the spec pins that file
        assert fetch.sha256_of(mirror / row["file"]) == row["sha256"], row["file"]
        assert row["file"] in checked, row["file"]
    assert {"letter/letter-recognition.data.gz", "wdbc/wdbc.data.gz",
            "magic04/magic04.data.gz"} <= checked


def test_table_digests_stay_out_of_the_run_config():
    """A pin of the table must not move the config hash of any committed record."""
    letter = dataset_spec("letter")["sources"][0]["files"]["all"]
    assert letter.get("sha256") is None and resolve_spec("letter").sources[0].files[0].sha256
    runs = sorted((REPO / "results" / "runs").glob("*.json"))
    if not runs:
        pytest.skip("no committed run records")
    specs = {}

    def pins(dataset: dict) -> list:
        return sorted((f.get("path"), f.get("sha256")) for s in dataset.get("sources") or []
                      for v in s["files"].values() for f in (v if isinstance(v, list) else [v])
                      if isinstance(f, dict))

    for path in runs:
        dataset = json.loads(path.read_text())["config"]["dataset"]
        if dataset.get("kind", "benchmark") == "benchmark":
            name = dataset["name"]
            if name not in specs:
                specs[name] = pins(dataset_spec(name))
            assert pins(dataset) == specs[name], (path.name, name)


def test_unknown_marker_in_a_spec():
    entry = entry_of(toy(sha256="unknown — the server publishes none"))
    assert entry.sha256 is None and entry.sha256_note == "the server publishes none"
    assert entry_of(toy()).sha256_note == "not pinned in the spec"
    assert entry_of(toy(sha256=SHA)).sha256 == SHA
    with pytest.raises(ConfigError, match="sha256 must be 64 lowercase hex"):
        entry_of(toy(sha256="abc"))


def test_spec_pin_must_agree_with_the_table():
    url = "https://archive.ics.uci.edu/ml/machine-learning-databases/magic/magic04.data"
    spec = toy(url=url, sha256="0" * 64)
    with pytest.raises(ConfigError, match="disagrees with the checksum table"):
        parse_spec(spec)
    assert entry_of(toy(url=url)).sha256 == UPSTREAM[url][0]


def serve(monkeypatch, pages: dict):
    """Fake https/http handlers behind the real urllib opener: url -> body or redirect."""
    calls = []

    def respond(self, request):
        url = request.full_url
        calls.append(url)
        value = pages.get(url)
        if value is None:
            raise urllib.error.URLError("no route to host (test)")
        headers = email.message.Message()
        if isinstance(value, bytes):
            headers["Content-Length"] = str(len(value))
            code, body = 200, value
        else:
            headers["Location"] = value[1]
            code, body = value[0], b""
        response = urllib.response.addinfourl(io.BytesIO(body), headers, url, code)
        response.msg = "OK" if code == 200 else "Found"
        return response

    https = type("FakeHttps", (urllib.request.HTTPSHandler,), {"https_open": respond})
    http = type("FakeHttp", (urllib.request.HTTPHandler,), {"http_open": respond})
    monkeypatch.setattr(fetch, "HANDLERS", [*fetch.HANDLERS, https, http])
    return calls


def test_download_without_digest_says_so(tmp_path, monkeypatch, capsys):
    serve(monkeypatch, {URL: PAYLOAD})
    entry = entry_of(toy(sha256="unknown — verified by shape"))
    seen = []
    path = fetch.download(entry, tmp_path, lambda e, p: seen.append(p.read_bytes()))
    assert path.read_bytes() == PAYLOAD and seen == [PAYLOAD]
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "toy/toy.txt: sha256 unknown (verified by shape)" in line
    assert "verified by its parsed shape" in line
    fetch.download(entry_of(toy(sha256=SHA)), tmp_path / "pinned")
    assert "sha256" not in capsys.readouterr().err


# --- item 15: paths stay inside the home or a mirror ----------------------------------------

@pytest.mark.parametrize("file, field", [
    ({"path": "../escape/toy.txt"}, "files.all.path"),
    ({"path": "toy/../../escape/toy.txt"}, "files.all.path"),
    ({"path": "/tmp/escape/toy.txt"}, "files.all.path"),
    ({"download_as": "../escape/toy.txt"}, "files.all.download_as"),
    ({"url": "https://example.org/a/.."}, "files.all.url"),
])
def test_spec_path_outside_the_home_is_refused(tmp_path, monkeypatch, file, field):
    calls = serve(monkeypatch, {URL: PAYLOAD})
    spec = toy(sha256=SHA)
    spec["sources"][0]["files"]["all"].update(file)
    with pytest.raises(DatasetError, match=field) as err:
        load_dataset(spec, home=tmp_path / "home" / "inner", mirrors=[tmp_path / "m"])
    assert "\n" not in str(err.value) and calls == []
    assert sorted(p.name for p in tmp_path.rglob("*")) == []  # nothing created anywhere


def test_own_local_file_may_be_absolute(tmp_path):
    own = tmp_path / "mine.txt"
    spec = toy()
    spec["sources"][0]["files"]["all"] = {"path": str(own)}
    assert entry_of(spec).path == str(own)


def test_fetch_refuses_a_path_leaving_its_base(tmp_path):
    assert fetch.inside(tmp_path, "a/b.txt") == tmp_path / "a" / "b.txt"
    with pytest.raises(DatasetError, match="leaves"):
        fetch.inside(tmp_path, "a/../../b.txt")


@pytest.mark.parametrize("name", ["../run", "/etc/passwd", "banana/../../conf/run", "run"])
def test_dataset_spec_reads_only_packaged_dataset_configs(name):
    with pytest.raises(ConfigError, match="unknown dataset"):
        dataset_spec(name)


# --- item 15: https only, also after redirects ---------------------------------------------

@pytest.mark.parametrize("target", ["http://example.org/toy.txt", "file:///etc/passwd",
                                    "ftp://example.org/toy.txt"])
def test_redirect_away_from_https_is_refused(tmp_path, monkeypatch, target):
    calls = serve(monkeypatch, {URL: (302, target), "http://example.org/toy.txt": PAYLOAD})
    with pytest.raises(DatasetError, match="download of toy/toy.txt failed") as err:
        fetch.download(entry_of(toy(sha256=SHA)), tmp_path)
    assert target in str(err.value) and calls == [URL]
    assert list(tmp_path.rglob("*.*")) == []


def test_redirects_to_https_are_followed(tmp_path, monkeypatch):
    plain = "http://example.org/old.txt"
    calls = serve(monkeypatch, {plain: (301, URL), URL: (302, "https://cdn.example.org/t.txt"),
                                "https://cdn.example.org/t.txt": PAYLOAD})
    spec = toy(sha256=SHA, url=plain, download_as="toy/toy.txt")
    path = fetch.download(entry_of(spec), tmp_path)
    assert path.read_bytes() == PAYLOAD and len(calls) == 3


def test_final_url_is_checked_too(tmp_path, monkeypatch):
    """Whatever opener is used, a response that ended on http is not accepted."""

    def opener(request, timeout=None):
        return urllib.response.addinfourl(io.BytesIO(PAYLOAD), {}, "http://x.org/t", 200)

    monkeypatch.setattr(fetch, "urlopen", opener)
    with pytest.raises(DatasetError, match="is not https"):
        fetch.download(entry_of(toy(sha256=SHA)), tmp_path)
    assert list(tmp_path.rglob("*.*")) == []


def test_spec_url_scheme_is_checked():
    with pytest.raises(DatasetError, match="files.all.url"):
        entry_of(toy(url="file:///etc/passwd"))
