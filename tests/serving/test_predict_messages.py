"""`llc-bench predict`'s one-line errors on a file that does not fit the model: a missing
header, another format than the model reads, and bad rows named by their line and row in
the file however the file is read in blocks."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, blobs, keep_model, llc, llc_error, write_csv

from llc_bench.errors import DatasetError
from llc_bench.serving.predict import predict_file


@pytest.fixture
def svmlight_model(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = blobs(2, n=240)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    model, _ = keep_model(tmp_path, tmp_path / "train.svm", "model=linear", "trainer.C=1",
                          "dataset.format=svmlight")
    capsys.readouterr()
    return model, tmp_path / "train.svm", X, y


def test_a_file_without_the_header_says_the_header_is_missing(kept_linear, tmp_path, capsys):
    model, _, X, labels = kept_linear
    headless = write_csv(tmp_path / "headless.csv", X, labels, header=None)
    line = llc_error(capsys, "predict", str(model), str(headless))
    assert "headless.csv: the header line is missing: the first line holds values" in line
    assert "add the header line (f0,f1,f2,f3, and the label column's name" in line
    assert "missing the column(s)" not in line
    renamed = write_csv(tmp_path / "renamed.csv", X, labels, header=("a", "b", "c", "d", "e"))
    assert "missing the column(s) f0, f1" in llc_error(capsys, "predict", str(model),
                                                        str(renamed))


def test_a_csv_file_given_to_an_svmlight_model_names_the_format(svmlight_model, kept_linear,
                                                               capsys):
    model, *_ = svmlight_model
    _, train_csv, *_ = kept_linear
    line = llc_error(capsys, "predict", str(model), str(train_csv))
    assert "train.csv: line 1 looks like CSV ('f0,f1,f2,f3,kind')" in line
    assert "the model reads svmlight files ('label index:value ...')" in line


def test_a_csv_file_given_to_a_mat_model_names_the_format(kept_linear, tmp_path, capsys):
    _, train_csv, *_ = kept_linear
    code, _, err = llc(capsys, "run", "model=linear", "trainer.C=1", "save_model=true",
                       "data.download=false", f"data.mirrors=[{REPO / 'datasets'}]",
                       f"data.home={tmp_path / 'home'}", f"results_dir={tmp_path / 'mat'}",
                       "progress=off", "tune=off")                  # banana, a .mat file
    assert code == 0, err
    model = next((tmp_path / "mat" / "models").glob("*.llcm"))
    line = llc_error(capsys, "predict", str(model), str(train_csv))
    assert "train.csv: not a MATLAB .mat file (it starts with b'f0,f1,')" in line
    assert "the model reads .mat files, the format of its training file" in line


def _late(path, lines, index, change):
    lines = list(lines)
    lines[index] = change(lines[index])
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("block_bytes", [1 << 25, 300])
def test_a_bad_csv_row_is_named_by_its_line_and_row_in_the_file(kept_linear, tmp_path,
                                                                 block_bytes):
    model, train, *_ = kept_linear
    lines = train.read_text().splitlines()
    nan = _late(tmp_path / "nan.csv", lines, 200, lambda s: "nan," + s.split(",", 1)[1])
    with pytest.raises(DatasetError, match=re.escape("NaN/inf value at row 200, column 1 "
                                                     "(line 201, column 1)")):
        predict_file(model, nan, tmp_path / "p.csv", block_bytes=block_bytes)
    wide = _late(tmp_path / "wide.csv", lines, 200, lambda s: s + ",1")
    with pytest.raises(DatasetError, match="wide.csv: line 201: 6 fields where the lines "
                                           "above have 5"):
        predict_file(model, wide, tmp_path / "p.csv", block_bytes=block_bytes)
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("block_bytes", [1 << 25, 300])
def test_a_bad_svmlight_line_is_named_by_its_line_and_row_in_the_file(svmlight_model,
                                                                      tmp_path, block_bytes):
    model, train, *_ = svmlight_model
    lines = ["# a comment line", *train.read_text().splitlines()]
    nan = _late(tmp_path / "nan.svm", lines, 200, lambda s: re.sub(r" 2:\S+", " 2:nan", s))
    with pytest.raises(DatasetError, match=re.escape("NaN/inf value at row 200, column 2 "
                                                     "(line 201, feature index 2)")):
        predict_file(model, nan, tmp_path / "p.csv", block_bytes=block_bytes)
    token = _late(tmp_path / "token.svm", lines, 200, lambda s: s.replace(" 2:", " 2;"))
    with pytest.raises(DatasetError, match="token.svm: line 201: '2;.*' is not "
                                           "'index:value'; the model reads svmlight files"):
        predict_file(model, token, tmp_path / "p.csv", block_bytes=block_bytes)
    wide = _late(tmp_path / "wide.svm", lines, 200, lambda s: s + " 9:1")
    with pytest.raises(DatasetError, match=re.escape("wide.svm: line 201: feature index 9, "
                                                     "beyond the model's 4 features")):
        predict_file(model, wide, tmp_path / "p.csv", block_bytes=block_bytes)
    assert not (tmp_path / "p.csv").exists()
