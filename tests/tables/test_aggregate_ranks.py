"""Average-rank rows of the tables (`_ranks`, `_rank_rows`) on small made-up tables."""

from types import SimpleNamespace

import pytest

from llc_bench.tables.aggregate import CellResult, _rank_rows, _ranks
from llc_bench.tables.reference import PaperValue
from llc_bench.tables.spec import METRICS, Metric


@pytest.mark.parametrize(
    "values, ranks",
    [
        ({"a": 1, "b": 2, "c": 2}, {"a": 1, "b": 2.5, "c": 2.5}),
        ({"c": 2, "a": 1, "b": 2}, {"a": 1, "b": 2.5, "c": 2.5}),   # order of the dict
        ({"a": 3, "b": 1, "c": 2}, {"a": 3, "b": 1, "c": 2}),
        ({"a": 7, "b": 7, "c": 7}, {"a": 2, "b": 2, "c": 2}),
        ({"a": 0, "b": 5, "c": 5, "d": 5, "e": 9}, {"a": 1, "b": 3, "c": 3, "d": 3, "e": 5}),
        ({"a": -1.5}, {"a": 1}),
    ],
)
def test_ranks_ties_share_the_mean_rank(values, ranks):
    assert _ranks(values) == ranks


# Three datasets, three methods; C has no result of ours on d3, so the paper's value
# stands in there.  The same numbers are read once as errors, once as accuracies.
TABLE = {
    "d1": {"A": 1.0, "B": 2.0, "C": 3.0},
    "d2": {"A": 5.0, "B": 5.0, "C": 4.0},
    "d3": {"A": 1.0, "B": 2.0},
}
PAPER_C_D3 = 3.0


def _rank_row(of):
    spec = SimpleNamespace(datasets={d: d for d in TABLE}, methods={"A": 0, "B": 0, "C": 0})
    cells = {(d, m, of): CellResult(d, m, of, None, values=[v])
             for d, row in TABLE.items() for m, v in row.items()}
    paper = {("d3", "C", of): PaperValue(PAPER_C_D3, None, "%", "")}
    metric = "rank" if of == "error" else "rank_of_accuracy"
    _rank_rows(spec, cells, paper, "avg rank", metric)
    return {m: cells[("avg rank", m, metric)] for m in "ABC"}


def test_rank_rows_lower_error_is_better():
    assert METRICS["rank"].of == "error" and not METRICS["error"].higher_is_better
    row = _rank_row("error")
    # d1: A 1, B 2, C 3;  d2: C 1, A = B = 2.5;  d3: A 1, B 2, C 3 (paper value)
    assert row["A"].mean == pytest.approx((1 + 2.5 + 1) / 3)
    assert row["B"].mean == pytest.approx((2 + 2.5 + 2) / 3)
    assert row["C"].mean == pytest.approx((3 + 1 + 3) / 3)
    assert [row[m].substitutes for m in "ABC"] == [0, 0, 1]
    assert "1 of 3 datasets use paper values" in row["C"].notes[0]


def test_rank_rows_higher_accuracy_is_better(monkeypatch):
    monkeypatch.setitem(METRICS, "rank_of_accuracy", Metric(
        "rank_of_accuracy", "average rank", False, 2, kind="rank", of="accuracy"))
    assert METRICS["accuracy"].higher_is_better
    row = _rank_row("accuracy")
    # d1: C 1, B 2, A 3;  d2: A = B = 1.5, C 3;  d3: C 1 (paper value), B 2, A 3
    assert row["A"].mean == pytest.approx((3 + 1.5 + 3) / 3)
    assert row["B"].mean == pytest.approx((2 + 1.5 + 2) / 3)
    assert row["C"].mean == pytest.approx((1 + 3 + 1) / 3)


def test_rank_rows_without_results_of_ours():
    """A method with no result of ours anywhere gets no rank, only the reason."""
    spec = SimpleNamespace(datasets={"d1": "d1"}, methods={"A": 0, "B": 0})
    cells = {("d1", "A", "error"): CellResult("d1", "A", "error", None, values=[2.0])}
    paper = {("d1", "B", "error"): PaperValue(1.0, None, "%", "")}
    _rank_rows(spec, cells, paper, "avg rank", "rank")
    assert cells[("avg rank", "A", "rank")].mean == 2.0      # B's paper value ranks first
    b = cells[("avg rank", "B", "rank")]
    assert b.mean is None and b.reason == "no results of ours for this method"
