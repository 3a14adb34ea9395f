"""wbc (UCI Breast Cancer Wisconsin, Original): the 16 rows with "?" are dropped, ML3 Table 2's
WDBC row uses it, and the CSV reader's missing-value options on a small file."""

from __future__ import annotations

import numpy as np

from llc_bench.data import load_dataset
from llc_bench.data.checksums import UPSTREAM
from llc_bench.data.formats import parse_delimited
from llc_bench.data.registry import dataset_spec
from llc_bench.tables.spec import load_table


def test_wbc_loads_through_the_mirror(mirror, tmp_path):
    ds = load_dataset("wbc", seed=0, home=tmp_path, mirrors=[mirror], download=False)
    assert ds.n_features == 9 and list(ds.classes) == ["2", "4"]
    assert len(ds.y_train) + len(ds.y_test) == 683            # 699 - 16 rows with "?"
    assert len(ds.y_test) == 228                               # a third
    labels = np.concatenate([ds.y_train, ds.y_test])
    assert (labels == ds.classes.index("4")).sum() == 239
    assert np.isfinite(ds.X_train).all() and np.isfinite(ds.X_test).all()
    assert ds.info["files"][0]["found_in"] == "mirror"
    other = load_dataset("wbc", seed=1, home=tmp_path, mirrors=[mirror], download=False)
    assert not np.array_equal(other.y_test, ds.y_test)         # the seed draws the split


def test_wbc_spec_download_rules():
    (entry,) = dataset_spec("wbc")["sources"][0]["files"].values()
    from llc_bench.data import list_datasets

    assert "wbc" in list_datasets()
    assert entry["url"].startswith("https://archive.ics.uci.edu/")
    sha, why = UPSTREAM[entry["url"]]
    assert sha == "unknown" and "header" in why                # mirror copy not byte-identical


def test_missing_values_are_dropped_row_wise(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("7,1,2,2\n8,?,3,4\n9,5,6,2\n")
    options = {"sep": ",", "header": False, "label_column": -1, "drop_columns": [0],
               "na_values": ["?"], "missing": "drop_rows"}
    parsed = parse_delimited(path, options)
    assert parsed.X.tolist() == [[1.0, 2.0], [5.0, 6.0]]
    assert parsed.meta["dropped_rows_missing_values"] == 1
    kept = parse_delimited(path, {k: v for k, v in options.items() if k != "missing"})
    assert np.isnan(kept.X[1, 0]) and kept.X.shape == (3, 2)


def test_ml3_table2_wdbc_row_is_the_raw_diagnostic_set_with_nine_occ_models():
    """ML3's text points at the 9-feature wbc, its numbers at the 30-feature wdbc (the
    table notes give the measurements); OCC keeps the paper's 9 models there."""
    spec = load_table("ml3_table2")
    assert spec.datasets["wdbc"] == "wdbc"
    assert "dataset.scaling" not in spec.settings("wdbc", "liblinear").overrides
    assert any("wbc" in note and "14.21" in note for note in spec.notes)
    for method in ("g_occ", "c_occ"):
        assert spec.settings("wdbc", method).overrides["coding.n_basis"] == 9
    assert load_table("ml3_table2").settings("spambase", "g_occ").overrides[
        "coding.n_basis"] == 10

