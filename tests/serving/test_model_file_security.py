"""Hostile model files: each is refused with one line by `llc-bench predict`, `llc-bench
export` and `llc_bench.serving.load`, before anything it names is called, with nothing
written and the memory bounded."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import llc_bench.serving as serving
import llc_bench.serving.model_files as model_files
from llc_bench.cli import main
from llc_bench.errors import ConfigError


def _csv(path, X, labels):
    lines = [",".join([f"f{j}" for j in range(X.shape[1])] + ["kind"])]
    lines += [",".join([repr(float(v)) for v in row] + [str(lab)])
              for row, lab in zip(X, labels, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _data(n, seed, n_classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5] if n_classes == 3 else [0.0])
    return X, np.array(["low", "mid", "high"] if n_classes == 3 else ["no", "yes"])[y]


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """Model files kept by `llc-bench run ... save_model=true`: an LL-SVM (100 anchors) on
    a binary and on a 3-class file, and the binary file's test rows."""
    root = tmp_path_factory.mktemp("kept")
    files = {}
    for n_classes in (2, 3):
        train = _csv(root / f"train{n_classes}.csv", *_data(300, 0, n_classes))
        test = _csv(root / f"test{n_classes}.csv", *_data(60, 1, n_classes))
        store = root / f"store{n_classes}"
        main(["run", "dataset=file", f"dataset.train={train}", f"dataset.test={test}",
              "model=llsvm", "tune=off", "trainer.epochs=1", "trainer.history=false",
              "save_model=true", f"results_dir={store}", "progress=off"])
        files[n_classes] = (next((store / "models").glob("*.llcm")), test)
    return files


def _members(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _write(path, members: dict, compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _tamper(source, target, schema=None, arrays=None, meta=None, skops_members=None):
    """A copy of the model file ``source`` at ``target``: ``schema(schema_dict)`` edits the
    skops schema, ``arrays`` replaces the named fitted arrays, ``meta(meta)`` the metadata,
    ``skops_members`` adds members to the skops archive."""
    outer = _members(source)
    inner = _members(io.BytesIO(outer["model.skops"]))
    tree = json.loads(inner["schema.json"])
    for name, value in (arrays or {}).items():
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=True)
        inner[tree["content"]["content"][name]["file"]] = buffer.getvalue()
    if schema is not None:
        schema(tree)
    inner["schema.json"] = json.dumps(tree).encode()
    inner.update(skops_members or {})
    outer["model.skops"] = _write(io.BytesIO(), inner).getvalue()
    if meta is not None:
        data = json.loads(outer["meta.json"])
        meta(data)
        outer["meta.json"] = json.dumps(data).encode()
    return _write(target, outer)


def _json(value) -> dict:
    return {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode",
            "content": json.dumps(value)}


def _call(module, name, *args, loader="ConstructorFromReduceNode") -> dict:
    """A schema node that, loaded, calls ``module.name(*args)``."""
    return {"__class__": name, "__module__": module, "__loader__": loader,
            "content": {"__class__": "tuple", "__module__": "builtins",
                        "__loader__": "TupleNode", "content": [_json(a) for a in args]}}


def _attribute(node, name="payload_"):
    """A schema edit: the estimator gains an attribute holding ``node`` (and its key's type:
    skops builds only the entries a key type is given for)."""
    def edit(tree):
        state = tree["content"]
        state["content"][name] = node
        state["key_types"]["content"].append(
            {"__class__": "str", "__module__": "builtins", "__loader__": "TypeNode"})
    return edit


def _snapshot(*folders) -> dict:
    return {str(p): p.stat().st_size for folder in folders for p in Path(folder).rglob("*")}


def _refusals(path, test, tmp_path, capsys) -> list[str]:
    """The refusal of ``path`` by each entry point (one line each), checking that none of
    them writes a file."""
    before = _snapshot(tmp_path, Path.cwd())
    lines = []
    with pytest.raises(ConfigError) as err:
        serving.load(path)
    lines.append(str(err.value))
    for command in (["predict", str(path), str(test), "--out", str(tmp_path / "p.csv")],
                    ["export", str(path), "--onnx", str(tmp_path / "m.onnx")]):
        with pytest.raises(SystemExit) as stop:
            main(command)
        err_text = capsys.readouterr().err
        assert stop.value.code == 1 and "Traceback" not in err_text
        assert len(err_text.strip().splitlines()) == 1, err_text
        lines.append(err_text.strip())
        assert lines[-1].startswith("llc-bench: error: ")
    assert _snapshot(tmp_path, Path.cwd()) == before
    for line in lines:
        assert "\n" not in line and path.name in line and "unexpected" not in line
    return lines


@pytest.fixture
def here(tmp_path, monkeypatch):
    """An empty working directory: a payload writing a relative path would show in it."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return tmp_path


def test_a_pickle_renamed_llcm_is_refused_unread(kept, here, capsys):
    target = here / "pwned.txt"

    class Payload:
        def __reduce__(self):
            return (open, (str(target), "w"))

    path = here / "model.llcm"
    path.write_bytes(pickle.dumps(Payload()))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "not an llc-bench model file" in line
    assert not target.exists()


@pytest.mark.parametrize("payload, named", [
    (lambda t: _call("llc_bench.files", "atomic_write_text", str(t), "import os\n"),
     "llc_bench.files.atomic_write_text"),
    (lambda t: _call("os", "system", f"touch {t}"), "os.system"),
    (lambda t: _call("posix", "system", f"touch {t}"), "posix.system"),
    (lambda t: _call("builtins", "eval", f"open({str(t)!r}, 'w')"), "builtins.eval"),
    (lambda t: {"__class__": "eval", "__module__": "builtins", "__loader__": "FunctionNode"},
     "builtins.eval"),
    (lambda t: _call("llc_bench.cli", "main", ["run", "model=linear", f"results_dir={t}"]),
     "llc_bench.cli.main"),
    (lambda t: {"__class__": "partial", "__module__": "functools", "__loader__": "PartialNode",
                "content": {}}, "functools.partial"),
    (lambda t: {"__class__": "attrgetter", "__module__": "operator",
                "__loader__": "OperatorFuncNode", "attrs": _json([str(t)])},
     "operator.attrgetter"),
], ids=["project-function", "os.system", "posix.system", "eval-call", "eval-function",
        "cli.main", "partial", "operator"])
def test_a_payload_naming_a_function_is_refused_before_it_runs(kept, here, capsys, payload,
                                                                named):
    target = here / "pwned"
    path = _tamper(kept[2][0], here / "model.llcm", schema=_attribute(payload(target)))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert named in line and ("may not call" in line or "may not do" in line
                                  or "not one a model file may hold" in line), line
    assert not target.exists()


def test_a_shipped_class_built_from_file_chosen_arguments_is_refused(kept, here, capsys):
    """An allowed class, but called (ConstructorFromReduceNode) rather than rebuilt."""
    node = _call("llc_bench.models.linear", "LinearSVMClassifier", 1)
    path = _tamper(kept[2][0], here / "model.llcm", schema=_attribute(node))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "LinearSVMClassifier by ConstructorFromReduceNode, which a model file may " \
               "not do" in line


def test_a_type_off_the_allow_list_is_refused_even_from_the_project(kept, here, capsys):
    node = {"__class__": "ArraySource", "__module__": "llc_bench.data.rows",
            "__loader__": "ObjectNode"}
    path = _tamper(kept[2][0], here / "model.llcm", schema=_attribute(node))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "names the type llc_bench.data.rows.ArraySource" in line


def test_a_class_only_the_file_names_is_refused(kept, here, capsys):
    """Trust comes from the package's config files (and config dirs the caller names), never
    from the file: an importable scikit-learn estimator the file names is refused, also
    when the caller names a config dir that names another class."""
    def swap(tree):
        tree["__module__"], tree["__class__"] = "sklearn.linear_model._logistic", \
            "LogisticRegression"

    path = _tamper(kept[2][0], here / "model.llcm", schema=swap)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "names the type sklearn.linear_model._logistic.LogisticRegression" in line
        assert "not a class llc-bench ships" in line
    conf = here / "conf" / "trainer"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("name: mine\n_target_: sklearn.svm.LinearSVC\n")
    with pytest.raises(ConfigError, match="names the type sklearn.linear_model"):
        model_files.load_model(path, [here / "conf"])


def test_an_attribute_hiding_a_method_is_refused(kept, here, capsys):
    path = _tamper(kept[2][0], here / "model.llcm",
                   schema=_attribute(_json("x"), name="decision_function"))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "attribute decision_function hides the LLSVMClassifier's own" in line, line


def _fitted(path):
    return serving.load(path)


@pytest.mark.parametrize("edit, message", [
    (lambda m: {"W_": m.W_[:, :2]}, "W_ has shape (1, 2, 4) but the model has 100 anchors"),
    (lambda m: {"b_": m.b_[:, :50]}, "b_ has shape (1, 50) but the model has 100 anchors"),
    (lambda m: {"anchors_": m.anchors_[:, :3]},
     "anchors_ has shape (100, 3) but the model has 4 features"),
    (lambda m: {"W_": np.full_like(m.W_, np.nan)}, "W_ holds NaN or infinite values"),
    (lambda m: {"b_": np.where(np.arange(100) == 7, np.inf, m.b_)},
     "b_ holds NaN or infinite values"),
    (lambda m: {"W_": m.W_.astype(np.int64)}, "W_ has dtype int64, expected floats"),
    (lambda m: {"W_": m.W_.astype(object)}, "holds an array of dtype object"),
    (lambda m: {"classes_": m.classes_[::-1].copy()},
     "the model's classes [1, -1] are not the metadata's [-1, 1]"),
], ids=["W-cut", "b-cut", "anchors-cut", "nan", "inf", "int", "object", "swapped"])
def test_a_fitted_array_that_disagrees_is_refused(kept, here, capsys, edit, message):
    model = _fitted(kept[2][0])
    path = _tamper(kept[2][0], here / "model.llcm", arrays=edit(model))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert message in line, line


def test_a_three_class_model_under_binary_metadata_is_refused(kept, here, capsys):
    outer = _members(kept[2][0])
    outer["model.skops"] = _members(kept[3][0])["model.skops"]
    path = _write(here / "model.llcm", outer)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "the model's classes [0, 1, 2] are not the metadata's [-1, 1]" in line, line


def test_metadata_that_disagrees_with_the_model_is_refused(kept, here, capsys):
    for edit, message in [
            (lambda m: m.__setitem__("classes", [1, -1]), "are not the metadata's [1, -1]"),
            (lambda m: m.__setitem__("n_features", 5), "the metadata says 5"),
            (lambda m: m.__setitem__("estimator", "x.Y"), "the metadata says 'x.Y'"),
            (lambda m: m["preprocess"].__setitem__("names", ["no"]),
             "the metadata names 1 classes, the model has 2"),
            (lambda m: m["preprocess"].__setitem__("value_of", {"no": -1, "yes": 7}),
             "the metadata's label values are not the model's classes"),
            (lambda m: m["preprocess"].__setitem__("mean", [0.0] * 3),
             "the metadata's preprocess mean is not 4 finite numbers")]:
        path = _tamper(kept[2][0], here / "model.llcm", meta=edit)
        for line in _refusals(path, kept[2][1], here, capsys):
            assert message in line, line


def test_a_model_holding_a_wrong_coding_or_bad_parameter_is_refused(kept, here, capsys):
    def coding(tree):
        tree["content"]["content"]["coding_"] = _json(3)

    path = _tamper(kept[2][0], here / "model.llcm", schema=coding)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "coding_ is a int, not a InverseDistanceCoding" in line

    def k(tree):
        tree["content"]["content"]["coding_"]["content"]["content"]["k"] = _json(-1)

    path = _tamper(kept[2][0], here / "model.llcm", schema=k)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "coding_.k must be an int in [1, inf], it is -1" in line


def _bomb(path, size, name="model.skops", extra=None):
    """A model file whose ``name`` member inflates from a few kB to ``size`` zero bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for other, data in (extra or {}).items():
            archive.writestr(other, data)
        with archive.open(name, "w") as fh:
            block = bytes(1 << 20)
            for _ in range(size >> 20):
                fh.write(block)
    return path


def _bounded(action, limit: int):
    """Run ``action`` (which must raise ConfigError); its peak Python allocation."""
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as err:
            action()
        return str(err.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_zip_bomb_is_refused_by_its_directory_before_it_inflates(kept, here, capsys,
                                                                   monkeypatch):
    meta = _members(kept[2][0])["meta.json"]
    path = _bomb(here / "model.llcm", 96 << 20, extra={"meta.json": meta})
    assert path.stat().st_size < 200_000                      # ~100 kB inflating to 96 MiB
    line, peak = _bounded(lambda: serving.load(path), 0)
    assert "inflates" in line and "zip bomb" in line and peak < 8 << 20, (line, peak)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "zip bomb" in line
    monkeypatch.setattr(model_files, "MAX_BYTES", 32 << 20)    # the cap on the total too
    small = _bomb(here / "capped.llcm", 40 << 20, extra={"meta.json": meta})
    monkeypatch.setattr(model_files, "MAX_RATIO", 10 ** 6)
    line, peak = _bounded(lambda: serving.load(small), 0)
    assert "past the cap of 32 MiB" in line and peak < 8 << 20, (line, peak)


def test_a_zip_directory_that_lies_about_the_sizes_is_refused_while_inflating(kept, here,
                                                                           capsys):
    """The central directory says 1 kB, the member inflates to 64 MiB: reading stops."""
    meta = _members(kept[2][0])["meta.json"]
    path = _bomb(here / "model.llcm", 64 << 20, extra={"meta.json": meta})
    data = bytearray(path.read_bytes())
    start = data.rfind(b"PK\x01\x02")         # the last central directory entry: the bomb
    assert data[start + 46:start + 46 + len(b"model.skops")] == b"model.skops"
    data[start + 24:start + 28] = (1024).to_bytes(4, "little")   # its inflated size
    path.write_bytes(bytes(data))
    line, peak = _bounded(lambda: serving.load(path), 0)
    assert "model.llcm" in line and peak < 8 << 20, (line, peak)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "truncated" in line or "inflates" in line


def test_too_many_members_are_refused(kept, here, capsys, monkeypatch):
    monkeypatch.setattr(model_files, "MAX_MEMBERS", 50)
    inner = {f"{i}.npy": b"" for i in range(60)}
    path = _tamper(kept[2][0], here / "model.llcm", skops_members=inner)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert re.search(r"model.skops has \d+ members, more than the 50", line), line
    outer = {**_members(kept[2][0]), **{f"x{i}": b"" for i in range(60)}}
    path = _write(here / "outer.llcm", outer)
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "outer.llcm has 62 members, more than the 50" in line


def test_truncated_and_malformed_members_are_refused(kept, here, capsys):
    outer = _members(kept[2][0])
    for name, skops in [("half.llcm", outer["model.skops"][: len(outer["model.skops"]) // 2]),
                        ("empty.llcm", b"")]:
        path = _write(here / name, {**outer, "model.skops": skops})
        for line in _refusals(path, kept[2][1], here, capsys):
            assert "model.skops is damaged" in line, line
    inner = _members(io.BytesIO(outer["model.skops"]))
    tree = json.loads(inner["schema.json"])
    w_file = tree["content"]["content"]["W_"]["file"]
    inner[w_file] = inner[w_file][:-16]            # an array shorter than its header says
    path = _write(here / "short.llcm", {**outer,
                                        "model.skops": _write(io.BytesIO(), inner).getvalue()})
    for line in _refusals(path, kept[2][1], here, capsys):
        assert f"{w_file}: its array of shape (1, 100, 4) does not match" in line, line
    path = _tamper(kept[2][0], here / "proto.llcm", schema=lambda t: t.update(protocol=0))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "protocol 0, expected" in line


def test_a_json_file_is_not_read_whole_or_recursed_into(kept, here, capsys, monkeypatch):
    """What looks like a run record ("{...") is read only when small, and a deeply nested
    one is no RecursionError: both are not model files, in one line."""
    deep = here / "deep.llcm"
    deep.write_text("{" + '"a":{' * 100_000)
    big = here / "big.llcm"
    big.write_text(json.dumps({"config_hash": "x", "pad": "y" * 2000}))
    monkeypatch.setattr(model_files, "RECORD_BYTES", 1000)
    for path in (deep, big):
        for line in _refusals(path, kept[2][1], here, capsys):
            assert "not an llc-bench model file" in line, line


def test_a_deep_schema_is_refused(kept, here, capsys):
    node = _json(1)
    for _ in range(300):
        node = {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode",
                "content": [node]}
    path = _tamper(kept[2][0], here / "model.llcm", schema=_attribute(node))
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "nests deeper than 200 levels" in line, line
    outer = _members(kept[2][0])
    inner = {**_members(io.BytesIO(outer["model.skops"])),
             "schema.json": b"[" * 100_000 + b"]" * 100_000}
    path = _write(here / "deeper.llcm", {
        **outer, "model.skops": _write(io.BytesIO(), inner).getvalue()})
    for line in _refusals(path, kept[2][1], here, capsys):
        assert "model.skops is damaged (RecursionError" in line, line


def test_the_kept_files_themselves_load_and_predict(kept, tmp_path, capsys):
    """The checks refuse none of the real files above (the round trips of every family are
    in tests/serving/test_model_files.py)."""
    for path, test in kept.values():
        main(["predict", str(path), str(test), "--out", str(tmp_path / "p.csv")])
        assert "accuracy" in capsys.readouterr().err
    assert os.path.getsize(tmp_path / "p.csv") > 0
