"""Costs shown before they are paid: a CSV of WIDE_CSV_COLUMNS columns or more, and a text
column one-hot encoded into MANY_CATEGORIES columns or more, are warned about with their
numbers before the dense matrix is made."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from llc_bench.cli import main
from llc_bench.data import formats
from llc_bench.data.formats import MANY_CATEGORIES, WIDE_CSV_COLUMNS, parse_file
from llc_bench.errors import LLCBenchWarning


def _wide_csv(path, columns, rows=4):
    rng = np.random.default_rng(0)
    lines = [",".join(f"{v:.2f}" for v in rng.normal(size=columns)) + f",{i % 2}"
             for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ours(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, LLCBenchWarning)]


def _parse_warned(monkeypatch, name, *args) -> tuple:
    """``parse_file(*args)`` and our warnings, ``formats.<name>`` (where the cost is paid)
    failing unless a warning came before it."""
    paid = getattr(formats, name)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")

        def pay(*a, **kw):
            assert _ours(record), f"{name} ran before the warning"
            return paid(*a, **kw)

        monkeypatch.setattr(formats, name, pay)
        parsed = parse_file(*args)
    return parsed, _ours(record)


def test_a_wide_csv_is_warned_about_with_its_numbers_before_it_is_parsed(tmp_path, monkeypatch):
    path = _wide_csv(tmp_path / "wide.csv", WIDE_CSV_COLUMNS)
    parsed, [message] = _parse_warned(monkeypatch, "_read_table", path, "csv",
                                      {"header": False})
    size = path.stat().st_size
    assert parsed.X.shape == (4, WIDE_CSV_COLUMNS)
    assert message.startswith(f"{path}: {WIDE_CSV_COLUMNS + 1:,} columns in a "
                              f"{size / 1e3:.3g} kB file, about 4 rows")
    assert f"matrix will take about {4 * 8 * (WIDE_CSV_COLUMNS + 1) / 1e3:.3g} kB" in message
    assert "dataset.format=svmlight" in message


def test_a_csv_below_the_width_threshold_is_not_warned_about(tmp_path):
    path = _wide_csv(tmp_path / "narrow.csv", WIDE_CSV_COLUMNS - 2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        parse_file(path, "csv", {"header": False})
    assert not _ours(record)


def test_a_run_on_a_wide_csv_warns_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("LLC_BENCH_MIRROR", raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    train = _wide_csv(tmp_path / "wide.csv", WIDE_CSV_COLUMNS, rows=20)
    main(["run", "dataset=file", f"dataset.train={train}", "dataset.test_fraction=0.25",
          "dataset.header=false", "model=linear", "trainer.C=1.0",
          f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}"])
    err = capsys.readouterr().err
    assert err.count(f"{WIDE_CSV_COLUMNS + 1:,} columns in a") == 1, err


def _ids_csv(path, n_categories, rows):
    lines = ["id,x,label"] + [f"user{i % n_categories},{i / rows:.3f},{i % 2}"
                              for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_one_hot_column_of_many_categories_is_warned_about_before_it_is_made(
        tmp_path, monkeypatch):
    path = _ids_csv(tmp_path / "ids.csv", MANY_CATEGORIES, 2 * MANY_CATEGORIES)
    parsed, [message] = _parse_warned(monkeypatch, "_one_hot", path, "csv",
                                      {"header": True, "categorical": "onehot"})
    assert parsed.X.shape == (2 * MANY_CATEGORIES, MANY_CATEGORIES + 1)
    block = 8 * 2 * MANY_CATEGORIES * MANY_CATEGORIES
    assert message == (f"{path}: feature column 'id' (column 1 of the features) holds "
                       f"{MANY_CATEGORIES:,} distinct values: one-hot encoded, "
                       f"{MANY_CATEGORIES:,} columns, a dense {2 * MANY_CATEGORIES:,} x "
                       f"{MANY_CATEGORIES:,} block of {block / 1e6:.3g} MB, and every model's "
                       "cost grows with the columns; an id or free text? "
                       "dataset.drop_columns=[id] leaves it out")


def test_a_one_hot_column_of_fewer_categories_is_not_warned_about(tmp_path):
    path = _ids_csv(tmp_path / "ids.csv", MANY_CATEGORIES - 1, 2 * MANY_CATEGORIES)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        parse_file(path, "csv", {"header": True, "categorical": "onehot"})
    assert not _ours(record)


def test_only_columns_starting_0_1_or_1_2_are_searched_for_row_numbers(tmp_path, monkeypatch):
    """The id-column check looks at a number column one by one only when its first two
    values count (0, 1 or 1, 2): the others are left out all together (a file of 10,000
    columns took seconds column by column)."""
    looked: list[str] = []
    row_numbers = formats._row_numbers

    def counting(series):
        looked.append(str(series.name))
        return row_numbers(series)

    monkeypatch.setattr(formats, "_row_numbers", counting)
    path = tmp_path / "ids.csv"
    path.write_text("a,id,b,word,label\n" + "".join(
        f"{0.5 * i:.1f},{i + 1},{3 + i},w{i},{i % 2}\n" for i in range(6)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = parse_file(path, "csv", {"header": True, "categorical": "onehot"})
    assert sorted(looked) == ["id", "word"]     # a (0.0, 0.5) and b (3, 4) left out at once
    assert parsed.meta["row_number_columns"] == ["id"]
