"""The results store: hashing, atomic writes, and refusing bad records."""

import json

import pytest

from llc_bench.errors import ResultsError
from llc_bench.store import results
from llc_bench.store.results import ResultsStore, config_hash


def make_record(seed=0, acc=0.9):
    config = {"seed": seed, "dataset": {"name": "banana"}, "trainer": {"name": "liblinear"},
              "results_dir": "x", "force": False, "data": {"home": None}}
    return {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
            "config": config, "seed": seed, "dataset": "banana", "model": "linear",
            "metrics": {"test_accuracy": acc}, "timings": {}, "versions": {}}


def test_hash_ignores_where_things_live_but_not_what_is_run():
    a = {"seed": 0, "trainer": {"C": 1.0}, "results_dir": "a", "force": False,
         "data": {"home": "/x", "mirrors": []}}
    b = {**a, "results_dir": "elsewhere", "force": True, "data": {"home": None}}
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash({**a, "seed": 1})
    assert config_hash(a) != config_hash({**a, "trainer": {"C": 2.0}})
    assert config_hash({"x": 1, "y": 2}) == config_hash({"y": 2, "x": 1})
    # an option at null is the run without that option (new options keep old hashes)
    assert config_hash({**a, "trainer": {"C": 1.0, "cv_max_rows": None}}) == config_hash(
        {**a, "trainer": {"C": 1.0}})
    assert config_hash({**a, "trainer": {"C": None}}) != config_hash({**a, "trainer": {"C": 1.0}})


def test_save_load_roundtrip(tmp_path):
    store = ResultsStore(tmp_path)
    record = make_record()
    path = store.save(record)
    assert path == tmp_path / "runs" / f"{record['config_hash']}.json"
    assert store.has(record["config_hash"])
    assert store.load(record["config_hash"]) == record


def test_crash_while_writing_keeps_the_old_record(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path)
    record = make_record()
    store.save(record)

    def explode(fd):  # the new text is in the temporary file, not yet in place
        raise KeyboardInterrupt

    monkeypatch.setattr(results.os, "fsync", explode)
    with pytest.raises(KeyboardInterrupt):
        store.save({**record, "metrics": {"test_accuracy": 0.1}})
    monkeypatch.undo()
    assert store.load(record["config_hash"])["metrics"]["test_accuracy"] == 0.9
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [f"{record['config_hash']}.json"]


@pytest.mark.parametrize("damage", ["truncate", "status", "hash", "no_metrics", "not_json"])
def test_bad_records_are_reported_not_used(tmp_path, damage):
    store = ResultsStore(tmp_path)
    good, bad = make_record(seed=0), make_record(seed=1)
    store.save(good)
    path = store.save(bad)
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "not_json":
        path.write_text("[1, 2]")
    else:
        data = json.loads(text)
        if damage == "status":
            data["status"] = "running"
        elif damage == "hash":
            data["config"]["seed"] = 7
        else:
            del data["metrics"]["test_accuracy"]
        path.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=path.name):
        store.load(bad["config_hash"])
    assert not store.has(bad["config_hash"])
    listed = list(store.records())
    assert [(p.stem, r is not None) for p, r, _ in listed] == sorted(
        [(good["config_hash"], True), (bad["config_hash"], False)])
    problem = next(msg for _, r, msg in listed if r is None)
    assert "\n" not in problem and path.name in problem
