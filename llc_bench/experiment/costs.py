"""What a planned run will cost, estimated from a store before it is paid.

A run's cost is read from the records of the same model preset on the same dataset: the
median of their time of one run (loading, preprocessing, the fit with its CV and
selection, the calibration, the predictions; numba compilation left out), scaled down
linearly when the planned run trains on fewer rows (``dataset.max_train``: the quick
profile; a kernel SVM's cost falls faster than that, so its estimate is high).  A (model,
dataset) no store has seen has no estimate and is counted apart, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

PARTS = ("timings.load", "timings.preprocess", "timings.train_total", "timings.tune",
         "timings.calibration", "timings.test_total")
COMPILED = ("timings.jit_compile_train", "timings.jit_compile_test")


def _medians(results_dir) -> dict:
    """{(model, dataset): median seconds of one run} of a results store."""
    from llc_bench.errors import LLCBenchError
    from llc_bench.experiment.query import records_frame

    if not results_dir or not (Path(results_dir) / "runs").is_dir():
        return {}
    try:
        frame = records_frame(results_dir)
    except LLCBenchError:
        return {}
    if frame.empty:
        return {}
    total = frame[[c for c in PARTS if c in frame]].fillna(0.0).sum(axis=1)
    for column in (c for c in COMPILED if c in frame):
        total = total - frame[column].fillna(0.0)
    frame = frame.assign(_seconds=total.clip(lower=0.0))
    groups = frame.groupby(["model", "dataset"])
    return {key: (seconds, rows) for (key, seconds), rows in
            zip(groups["_seconds"].median().items(), groups["n_train"].median(), strict=True)}


class CostModel:
    """Median seconds per (model, dataset) in a results store, else in ``fallbacks`` (the
    committed ``results/`` of a checkout: a fresh scratch store knows no run yet)."""

    def __init__(self, results_dir, fallbacks: Iterable = ()):
        self._seconds: dict = {}
        for store in (*reversed(list(fallbacks)), results_dir):
            self._seconds.update(_medians(store))  # the store's own records win

    def seconds(self, model: str, dataset: str, rows: int | None = None) -> float | None:
        """The median run's seconds, scaled down linearly to ``rows`` training rows (a
        subsampled run, ``dataset.max_train``)."""
        known = self._seconds.get((model, dataset))
        if known is None:
            return None
        seconds, known_rows = known
        if rows and known_rows and rows < known_rows:
            seconds *= rows / known_rows
        return float(seconds)

    def total(self, runs: Iterable[tuple]) -> tuple[float, int]:
        """(estimated seconds of these runs, how many have no estimate); a run is
        (model, dataset) or (model, dataset, training rows or None)."""
        known, unknown = 0.0, 0
        for run in runs:
            seconds = self.seconds(*run)
            if seconds is None:
                unknown += 1
            else:
                known += seconds
        return known, unknown


def fit_seconds(record: Mapping) -> float:
    """A run's total fit time: selection, CV and training (what a user waits for)."""
    t = record["timings"]
    return float(t.get("train_total", 0.0)) + float(t.get("tune", 0.0))


def describe(seconds: float, unknown: int = 0) -> str:
    """``~14 min`` (and ``+ 3 runs without an estimate``)."""
    text = (f"~{seconds:.0f} s" if seconds < 90 else f"~{seconds / 60:.0f} min"
            if seconds < 5400 else f"~{seconds / 3600:.1f} h")
    return text + (f" + {unknown} run{'s' * (unknown != 1)} without an estimate"
                   if unknown else "")
