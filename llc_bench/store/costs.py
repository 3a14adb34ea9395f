"""What a planned run will cost, estimated from a store before it is paid.

A run's cost is read from the records of the same model preset on the same dataset: the
median of their time of one run (loading, preprocessing, the fit with its CV and
selection, the calibration, the predictions; numba compilation left out).  When the
planned run trains on fewer rows (``dataset.max_train``: the quick profile) the fit's part
is scaled down, linearly (quadratically for the kernel SVM, whose SMO fit and CV grow about
as the square of the rows); loading reads the whole file whatever the cap, so that part is
not.  A (model, dataset) no store has seen has no estimate and is counted apart, never
guessed.

Each ``llc-bench run -m`` process a build launches also costs its start (Python and the
libraries imported, the numba cache, Hydra's composition): ``LAUNCH_SECONDS``, between the
2 s of CPU one start takes and the 4-5 s measured between two launches' runs on a loaded
2-core machine (``scripts/bench_tables_quick.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

#: the parts of a run's time that do not depend on its training rows, and those that do
FIXED = ("timings.load", "timings.preprocess", "timings.test_total")
SCALED = ("timings.train_total", "timings.tune", "timings.calibration")
PARTS = FIXED + SCALED
COMPILED = {"timings.jit_compile_test": FIXED, "timings.jit_compile_train": SCALED}
#: how a model's fit grows with its training rows (the exponent), where not linearly
GROWTH = {"kernel": 2.0}
#: seconds of one `llc-bench run -m` process's start, before and after its runs
LAUNCH_SECONDS = 3.0


def _medians(results_dir) -> dict:
    """{(model, dataset): (median fixed seconds, median scaled seconds, median training
    rows)} of a results store."""
    from llc_bench.errors import LLCBenchError
    from llc_bench.store.query import records_frame

    if not results_dir or not (Path(results_dir) / "runs").is_dir():
        return {}
    try:
        frame = records_frame(results_dir)
    except LLCBenchError:
        return {}
    if frame.empty:
        return {}
    parts = {}
    for name, columns in (("_fixed", FIXED), ("_scaled", SCALED)):
        seconds = frame[[c for c in columns if c in frame]].fillna(0.0).sum(axis=1)
        for column in (c for c, within in COMPILED.items() if within is columns and c in frame):
            seconds = seconds - frame[column].fillna(0.0)
        parts[name] = seconds.clip(lower=0.0)
    groups = frame.assign(**parts).groupby(["model", "dataset"])
    medians = groups[["_fixed", "_scaled", "n_train"]].median()
    return {key: (float(row["_fixed"]), float(row["_scaled"]), row["n_train"])
            for key, row in medians.iterrows()}


class CostModel:
    """Median seconds per (model, dataset) in a results store, else in ``fallbacks`` (the
    committed ``results/`` of a checkout: a fresh scratch store knows no run yet)."""

    def __init__(self, results_dir, fallbacks: Iterable = ()):
        self._seconds: dict = {}
        for store in (*reversed(list(fallbacks)), results_dir):
            self._seconds.update(_medians(store))  # the store's own records win

    def _scaled(self, model: str, dataset: str, rows: int | None):
        """(fixed seconds, fit seconds scaled down linearly to ``rows`` training rows), or
        None when the store has no run of (model, dataset)."""
        known = self._seconds.get((model, dataset))
        if known is None:
            return None
        fixed, scaled, known_rows = known
        if rows and known_rows and rows < known_rows:
            scaled *= (rows / known_rows) ** GROWTH.get(model, 1.0)
        return fixed, scaled

    def seconds(self, model: str, dataset: str, rows: int | None = None) -> float | None:
        """The median run's seconds, its fit scaled down linearly to ``rows`` training rows
        (a subsampled run, ``dataset.max_train``)."""
        known = self._scaled(model, dataset, rows)
        return None if known is None else float(sum(known))

    def fit_seconds(self, model: str, dataset: str, rows: int | None = None) -> float | None:
        """The median run's fit (and selection, calibration) seconds, scaled down to ``rows``
        training rows as :meth:`seconds` does; loading and testing left out."""
        known = self._scaled(model, dataset, rows)
        return None if known is None else float(known[1])

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


def build_seconds(runs_seconds: float, launches: int) -> float:
    """A build's estimate: its runs and the start of each process that runs them."""
    return runs_seconds + launches * LAUNCH_SECONDS


#: the training rows of one LIBSVM fit from which a cross-validation's cost is said first
KERNEL_CV_ROWS = 10_000


def kernel_cv_note(trainer: Mapping, n_train: int) -> str | None:
    """What the kernel SVM's cross-validation will do on ``n_train`` rows, said before it is
    paid when its fits are large: LIBSVM's time grows about as the square of the rows, so
    the default 5-fold grid of 25 (C, γ) on tens of thousands of rows takes hours."""
    gamma_given = trainer.get("gamma") is not None or trainer.get("gamma_scale") is not None
    if trainer.get("name") != "libsvm" or (trainer.get("C") is not None and gamma_given):
        return None
    folds = int(trainer.get("cv_folds") or 5)
    rows = min(n_train, int(trainer.get("cv_max_rows") or n_train))
    per_fit = rows * (folds - 1) // folds
    if per_fit < KERNEL_CV_ROWS:
        return None
    settings = ((len(trainer.get("C_grid") or ()) if trainer.get("C") is None else 1)
                * (len(trainer.get("gamma_factors") or ()) if not gamma_given else 1))
    return (f"the kernel SVM chooses C and gamma by {folds}-fold CV over {settings} settings: "
            f"{folds * settings} LIBSVM fits on {per_fit:,} rows each, then one on "
            f"{n_train:,} (its time grows about as the square of the rows), which can take "
            "hours; trainer.cv_max_rows=5000 runs the CV on a stratified subsample, or set "
            "trainer.C and trainer.gamma")
