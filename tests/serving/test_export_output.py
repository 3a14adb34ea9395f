"""What `llc-bench export` writes: never over the model file, an existing --onnx kept by a
failed export, and the input columns of a one-hot model recorded in the model file and
the graph."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from conftest import blobs, keep_model, llc, llc_error, write_csv

from llc_bench.serving.model_files import load_model

pytestmark = pytest.mark.skipif(importlib.util.find_spec("onnx") is None,
                                reason="the export extras (onnx) are not installed")


def test_onnx_naming_the_model_file_is_refused_and_a_failed_export_keeps_onnx(tmp_path,
                                                                             capsys):
    X, y = blobs(2, n=200)
    train = write_csv(tmp_path / "train.csv", X, np.array(["a", "b"])[y])
    model, _ = keep_model(tmp_path, train, "model=linear", "trainer.C=1")
    capsys.readouterr()
    before = model.read_bytes()
    line = llc_error(capsys, "export", str(model), "--onnx", str(model))
    assert f"--onnx {model} is the model file" in line and "another file name" in line
    link = tmp_path / "m.onnx"
    link.symlink_to(model)
    assert "is the model file" in llc_error(capsys, "export", str(model), "--onnx", str(link))
    assert model.read_bytes() == before
    kept = tmp_path / "kept.onnx"
    kept.write_bytes(b"an earlier graph")
    assert "no such model file" in llc_error(capsys, "export", str(tmp_path / "no.llcm"),
                                              "--onnx", str(kept))
    lasso, _ = keep_model(tmp_path, train, "model=lcc_lasso", "trainer.C=1")
    capsys.readouterr()
    assert "not possible" in llc_error(capsys, "export", str(lasso), "--onnx", str(kept))
    assert kept.read_bytes() == b"an earlier graph"


def _one_hot_file(path, header: bool):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    color = rng.choice(["red", "blue", "green"], 200)
    y = np.where(X[:, 0] + (color == "red") > 0.3, "yes", "no")
    rows = [[repr(float(a)), c, repr(float(b)), t] for (a, b), c, t in zip(X, color, y,
                                                                           strict=True)]
    path.write_text("\n".join(",".join(r) for r in [["a", "color", "b", "kind"]] * header
                              + rows) + "\n")
    return path


@pytest.mark.parametrize("header,columns", [
    (True, ["a", "color=blue", "color=green", "color=red", "b"]),
    (False, ["column 1", "column 2=blue", "column 2=green", "column 2=red", "column 3"])])
def test_a_one_hot_model_records_its_input_columns_in_the_model_and_the_graph(
        header, columns, tmp_path, capsys):
    import onnx

    train = _one_hot_file(tmp_path / "train.csv", header)
    model, _ = keep_model(tmp_path, train, "model=linear", "trainer.C=1",
                          "dataset.categorical=onehot")
    capsys.readouterr()
    assert load_model(model)[1]["preprocess"]["input_columns"] == columns
    code, out, err = llc(capsys, "export", str(model), "--onnx", str(tmp_path / "m.onnx"))
    assert code == 0 and f"wrote {tmp_path / 'm.onnx'}" in out, err
    assert "input X takes the one-hot columns" in err
    assert "one 0/1 indicator column per training category" in err and columns[1] in err
    graph = onnx.load(str(tmp_path / "m.onnx"))
    props = {p.key: p.value for p in graph.metadata_props}
    assert json.loads(props["input_columns"]) == columns
    doc = graph.graph.input[0].doc_string
    assert ", ".join(columns) in doc and "the graph does no encoding" in doc
