"""The papers' numbers (``reference/paper_results.csv``, see ``reference/README.md``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import pandas as pd

COLUMNS = ("paper", "table", "dataset", "method", "metric", "value", "std", "unit", "note")


@dataclass(frozen=True)
class PaperValue:
    """One number of one paper's table (``value`` None: the source text lost it)."""

    value: float | None
    std: float | None
    unit: str
    note: str

    @property
    def lower_bound(self) -> bool:
        """The paper reports "more than" this value (e.g. a training time > 100000 s)."""
        return "more than" in self.note


def reference_path():
    return resources.files("llc_bench.tables") / "reference" / "paper_results.csv"


@lru_cache(maxsize=1)
def paper_results() -> pd.DataFrame:
    """All rows of the reference CSV, empty strings for missing text, NaN for missing numbers."""
    with resources.as_file(reference_path()) as path:
        frame = pd.read_csv(path, dtype={"value": float, "std": float}, keep_default_na=False,
                            na_values={"value": [""], "std": [""]})
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return frame


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


@cache
def table_values(paper: str, table: str) -> dict[tuple[str, str, str], PaperValue]:
    """``{(dataset, method, metric): PaperValue}`` of one table."""
    frame = paper_results()
    rows = frame[(frame["paper"] == paper) & (frame["table"] == table)]
    out: dict[tuple[str, str, str], PaperValue] = {}
    for r in rows.itertuples(index=False):
        out[(r.dataset, r.method, r.metric)] = PaperValue(_num(r.value), _num(r.std),
                                                          str(r.unit), str(r.note))
    return out


def table_ids() -> list[tuple[str, str]]:
    frame = paper_results()
    return list(dict.fromkeys(zip(frame["paper"], frame["table"], strict=True)))
