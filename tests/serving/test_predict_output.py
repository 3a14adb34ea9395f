"""What `llc-bench predict` writes: --out whole or not at all (an existing one kept as it
was), never over its inputs, `-` for stdout, a CSV a csv reader reads back, and no
temporary file left by SIGTERM."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import REPO, blobs, keep_model, llc, llc_error, write_csv


@pytest.fixture
def kept(kept_linear, tmp_path):
    model, train, *_ = kept_linear
    return tmp_path, model, train


def test_a_failed_predict_keeps_an_existing_out_byte_for_byte(kept, capsys):
    tmp_path, model, train = kept
    out = tmp_path / "preds.csv"
    out.write_bytes(b"earlier predictions\n")
    header_only = tmp_path / "header_only.csv"
    header_only.write_text("f0,f1,f2,f3,kind\n")
    assert "no data rows" in llc_error(capsys, "predict", str(model), str(header_only),
                                        "--out", str(out))
    bad = tmp_path / "bad.csv"
    bad.write_text(train.read_text().replace("\n", "\nnan,1,2,3,low\n", 1))
    assert "NaN/inf value" in llc_error(capsys, "predict", str(model), str(bad), "--out",
                                         str(out))
    assert out.read_bytes() == b"earlier predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_out_naming_the_data_or_the_model_file_is_refused(kept, capsys):
    tmp_path, model, train = kept
    before = {p: p.read_bytes() for p in (model, train)}
    line = llc_error(capsys, "predict", str(model), str(train), "--out", str(train))
    assert f"--out {train} is the data file" in line and "another file name" in line
    link = tmp_path / "link.llcm"   # the same file by another name
    link.symlink_to(model)
    assert "is the model file" in llc_error(capsys, "predict", str(model), str(train),
                                             "--out", str(link))
    assert "is the model file" in llc_error(capsys, "predict", str(link), str(train),
                                             "--out", str(model.parent / ".." /
                                                          model.parent.name / model.name))
    assert {p: p.read_bytes() for p in (model, train)} == before


def test_out_dash_writes_to_stdout(kept, capsys):
    tmp_path, model, train = kept
    code, out, err = llc(capsys, "predict", str(model), str(train), "--out", "-")
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    code, to_file, _ = llc(capsys, "predict", str(model), str(train), "--out",
                           str(tmp_path / "p.csv"))
    assert out == (tmp_path / "p.csv").read_text() and out.startswith("predicted,")


def test_labels_holding_commas_and_quotes_keep_every_column_in_place(tmp_path, capsys):
    X, y = blobs(3, n=240)
    names = np.array(["x,1", 'say "hi"', "plain"])
    train = write_csv(tmp_path / "train.csv", X, names[y])
    model, record = keep_model(tmp_path, train, "model=linear", "trainer.C=1",
                               "calibration=sigmoid")
    capsys.readouterr()
    code, _, err = llc(capsys, "predict", str(model), str(train), "--out",
                       str(tmp_path / "p.csv"))
    assert code == 0, err
    with open(tmp_path / "p.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    assert header == ["predicted_by_decision", "decision_plain", 'decision_say "hi"',
                      "decision_x,1", "proba_plain", 'proba_say "hi"', "proba_x,1",
                      "predicted_by_proba", "label"]
    assert {len(r) for r in rows} == {len(header)} and len(rows) == 241
    assert [r[-1] for r in rows[1:]] == list(names[y])
    for row in rows[1:]:
        assert row[0] in names and row[-2] in names
        float(row[1]), float(row[4])  # numbers where the header says


DRIVER = textwrap.dedent("""
    import sys, time
    import llc_bench.serving.predict as predict
    from llc_bench.cli import main

    def slow(self, rows):
        self.handle.write("partial\\n")
        self.handle.flush()
        print("writing", file=sys.stderr, flush=True)
        time.sleep(60)

    predict._Output.rows = slow
    main(sys.argv[1:])
""")


def test_sigterm_removes_the_temporary_file_and_keeps_out(kept):
    tmp_path, model, train = kept
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "preds.csv"
    out.write_bytes(b"earlier predictions\n")
    child = subprocess.Popen([sys.executable, "-c", DRIVER, "predict", str(model), str(train),
                              "--out", str(out)], stderr=subprocess.PIPE, text=True,
                             cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert child.stderr.readline().strip() == "writing"
        assert len(list((tmp_path / "out").iterdir())) == 2    # --out and its temporary
        child.send_signal(signal.SIGTERM)
        code = child.wait(timeout=60)
    finally:
        child.kill()
    assert code == 128 + signal.SIGTERM
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["preds.csv"]
    assert out.read_bytes() == b"earlier predictions\n"
