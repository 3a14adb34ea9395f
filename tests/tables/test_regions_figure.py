"""`llc-bench figures --regions DATASET`: LL-SVM's decision regions and anchors beside the
RBF kernel SVM's, the picture of the docs."""

from __future__ import annotations

from conftest import llc

from llc_bench.tables import regions

#: the panels with the models' own parameters made small: a fast fit, the same drawing
FAST = (("llsvm", "LL-SVM", ("coding.n_anchors=6", "trainer.epochs=1")),
        ("kernel", "RBF kernel SVM", ("trainer.C=1", "trainer.gamma=1")))


def test_the_regions_command_writes_a_png(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(regions, "PANELS", FAST)
    code, out, err = llc(capsys, "figures", "--regions", "banana", "--out", str(tmp_path))
    assert code == 0, err
    png = tmp_path / "regions_banana.png"
    assert out.strip() == f"wrote {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert [p.name for p in tmp_path.iterdir()] == ["regions_banana.png"]  # no stray files



def test_a_dataset_of_more_than_two_features_is_one_error_line(capsys, tmp_path, mirror):
    code, _, err = llc(capsys, "figures", "--regions", "magic04", "--out", str(tmp_path),
                       "--mirror", str(mirror))
    assert code == 1
    assert err.strip() == ("llc-bench: error: --regions magic04: the picture needs 2 features, "
                           "and magic04 has 10: choose a 2-D dataset (banana, sine, xor)")
    assert not list(tmp_path.iterdir())
