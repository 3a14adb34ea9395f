"""Mean ± std over seeds of the runs a table's plan asked for, beside the paper's numbers.

Only the planned runs' records are read (by their config hashes), so records of another
profile or of unrelated runs in the same store never mix in. A corrupt or partial record
is reported and skipped: the cell then says how many of its planned runs it averages.
A timing cell also says which of its runs were not timed cleanly (another run of the
store's start/stop log overlapped it, more than one thread, or a record from before the
log existed).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from llc_bench.errors import ResultsError
from llc_bench.experiment.environment import host_of
from llc_bench.experiment.runlog import overlapping, read_log
from llc_bench.selection.selection import grid_edges
from llc_bench.store.results import ResultsStore
from llc_bench.tables.plan import DATASET_OFFLINE, CellPlan, TablePlan
from llc_bench.tables.reference import PaperValue, table_values
from llc_bench.tables.spec import METRICS, RUN, Metric


@dataclass
class CellResult:
    dataset: str
    method: str
    metric: str
    paper: PaperValue | None
    values: list = field(default_factory=list)     # ours, one per seed used
    seeds: list = field(default_factory=list)
    n_planned: int = 0
    reason: str = ""                               # why there is no "ours"
    status: str = RUN                              # the cell plan's status (or dataset_offline)
    problems: list = field(default_factory=list)   # skipped records
    notes: tuple = ()
    hashes: list = field(default_factory=list)
    substitutes: int = 0                           # rank rows: datasets that used paper values
    edges: dict = field(default_factory=dict)      # CV parameter -> runs that chose a grid edge
    n_paper: int = 1                               # the paper's runs behind its mean
    parts: tuple | None = None                     # ratio cells: (mean numerator, denominator)
    unclean: dict = field(default_factory=dict)    # timing cells: why -> runs not timed cleanly

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def paper_value(self) -> float | None:
        return None if self.paper is None else self.paper.value

    @property
    def diff(self) -> float | None:
        if self.mean is None or self.paper_value is None:
            return None
        return self.mean - self.paper_value

    @property
    def allowed(self) -> float | None:
        """The largest |ours - paper| counted as within (None for factor metrics)."""
        metric = METRICS[self.metric]
        if metric.factor is not None or self.paper is None:
            return None
        return metric.allowed(self.paper.std, self.std, self.n_paper, self.n)

    @property
    def verdict(self) -> str | None:
        if self.mean is None or self.paper_value is None:
            return None
        return METRICS[self.metric].verdict(self.mean, self.paper_value, self.paper.std,
                                            self.std, self.n_paper, self.n)


@dataclass
class TableResult:
    plan: TablePlan
    cells: dict                       # (dataset, method, metric) -> CellResult
    rows: list                        # dataset names incl. derived rows
    problems: list = field(default_factory=list)
    wall_seconds: float = 0.0
    executed: int = 0
    failed: dict = field(default_factory=dict)
    compute_seconds: float = 0.0      # sum of the records' train + test time
    build_seconds: float = 0.0        # wall time of the builds that ran this table's runs
    built_runs: int = 0               # runs those builds executed

    @property
    def spec(self):
        return self.plan.spec

    def counts(self) -> dict:
        """Cells by verdict (``Metric.verdict``)."""
        c = {"cells": 0, "compared": 0, "within": 0, "better": 0, "worse": 0,
             "paper_only": 0, "ours_only": 0, "neither": 0, "worse_scores": 0}
        for cell in self.cells.values():
            c["cells"] += 1
            has_paper, has_ours = cell.paper_value is not None, cell.mean is not None
            if has_paper and has_ours:
                c["compared"] += 1
                verdict = cell.verdict
                c[verdict] += 1
                if verdict == "worse" and METRICS[cell.metric].factor is None \
                        and METRICS[cell.metric].kind != "rank":
                    c["worse_scores"] += 1     # accuracy / error / hinge cells
            elif has_paper:
                c["paper_only"] += 1
            elif has_ours:
                c["ours_only"] += 1
            else:
                c["neither"] += 1
        return c


def _load(store: ResultsStore, key: str) -> tuple[dict | None, str | None]:
    try:
        return store.load(key), None
    except FileNotFoundError:
        partial = sorted(store.runs.glob(f".{key}.json.*.tmp")) if store.runs.is_dir() else []
        if partial:
            return None, f"{partial[0]}: partial record (interrupted write) skipped"
        return None, None
    except ResultsError as err:
        return None, f"skipped: {err}"


def _why_missing(cell: CellPlan, failed: dict, n_missing: int) -> str:
    if cell.status != RUN:
        return cell.reason
    reasons = [failed[r.hash] for r in cell.runs if r.hash in failed]
    if reasons:
        return reasons[0]
    if cell.left_out:
        return cell.left_out
    if cell.offline:
        return cell.offline
    if not cell.selected:
        return "not run yet (excluded by --dataset/--method)"
    return f"not run yet ({n_missing} run(s) missing)"


def aggregate(plan: TablePlan, failed: dict | None = None) -> TableResult:
    failed = dict(failed or {})
    spec = plan.spec
    store = ResultsStore(plan.results_dir)
    paper = table_values(spec.paper, spec.table)
    records: dict[tuple[str, str], dict[int, dict]] = {}
    log = read_log(plan.results_dir) if any(
        METRICS[m].factor is not None for m in spec.metrics) else []
    problems: list[str] = []
    compute = 0.0
    seen: set[str] = set()
    for (dataset, method), cell in plan.cells.items():
        by_seed = {}
        for run in cell.runs:
            record, problem = _load(store, run.hash)
            if problem:
                problems.append(f"{dataset} / {method} seed {run.seed}: {problem}")
            if record is not None:
                by_seed[run.seed] = record
                if run.hash not in seen:
                    seen.add(run.hash)
                    t = record.get("timings") or {}
                    compute += float(t.get("train_total") or 0) + float(t.get("test_total") or 0)
        records[(dataset, method)] = by_seed

    cells: dict[tuple[str, str, str], CellResult] = {}
    for (dataset, method), cell in plan.cells.items():
        by_seed = records[(dataset, method)]
        for name in spec.metrics:
            metric = METRICS[name]
            result = CellResult(dataset, method, name, paper.get((dataset, method, name)),
                                n_planned=len(cell.runs), status=cell.status,
                                notes=cell.notes, hashes=[r.hash for r in cell.runs],
                                n_paper=spec.settings(dataset, method).paper_runs)
            result.problems = [p for p in problems if p.startswith(f"{dataset} / {method} ")]
            for seed in sorted(by_seed):
                for param in grid_edges(by_seed[seed].get("fit_info")):
                    result.edges[param] = result.edges.get(param, 0) + 1
                value = _value(metric, by_seed[seed], spec, records, dataset, seed)
                if value is not None and not math.isnan(value):
                    result.values.append(value)
                    result.seeds.append(seed)
            if metric.kind == "ratio" and result.values:
                result.parts = _ratio_parts(metric, spec, records, dataset, by_seed,
                                            result.seeds)
            if metric.factor is not None and result.values:
                used = [by_seed[s] for s in result.seeds]
                if metric.kind == "ratio":
                    ref = records.get((dataset, spec.ratio_reference), {})
                    used += [ref[s] for s in result.seeds if s in ref]
                result.unclean = unclean_timings(used, log)
            if not result.values:
                missing = sum(1 for r in cell.runs if r.seed not in by_seed)
                if by_seed and metric.kind == "ratio":
                    result.reason = (f"no run of the reference method "
                                     f"({spec.ratio_reference}) for the same seeds")
                elif by_seed:
                    result.reason = f"the records of this model have no {name}"
                else:
                    result.reason = _why_missing(cell, failed, missing)
                    if cell.status == RUN and cell.offline and not any(
                            r.hash in failed for r in cell.runs):
                        result.status = DATASET_OFFLINE
            cells[(dataset, method, name)] = result

    rows = list(spec.datasets)
    for row, metric_name in spec.derived.items():
        rows.append(row)
        _rank_rows(spec, cells, paper, row, metric_name)
    return TableResult(plan=plan, cells=cells, rows=rows, problems=problems,
                       compute_seconds=compute, failed=failed)


def _value(metric: Metric, record: dict, spec, records, dataset, seed) -> float | None:
    if metric.kind == "record":
        return metric.read(record)
    if metric.kind == "ratio":
        ref = records.get((dataset, spec.ratio_reference), {}).get(seed)
        base = METRICS[metric.of]
        if ref is None:
            return None
        num, den = base.read(record), base.read(ref)
        if num is None or not den:
            return None
        return num / den
    return None


def _ratio_parts(metric, spec, records, dataset, by_seed, seeds) -> tuple | None:
    """Mean numerator and denominator (e.g. test seconds of the method and of the
    reference) over the seeds a ratio cell used."""
    base = METRICS[metric.of]
    ref = records.get((dataset, spec.ratio_reference), {})
    nums = [base.read(by_seed[s]) for s in seeds]
    dens = [base.read(ref[s]) for s in seeds if s in ref]
    if None in nums or None in dens or not nums or len(dens) != len(nums):
        return None
    return statistics.fmean(nums), statistics.fmean(dens)


def timing_problem(record: dict, log: list[dict]) -> str | None:
    """Why the timings of ``record`` are not clean (None: one thread, nothing overlapped,
    every numba kernel loaded from its cache rather than compiled inside the timed fit)."""
    window = record.get("run_window")
    if not window:
        return "recorded before the start/stop log (overlap unknown)"
    if overlapping(window, log):
        return "overlapped another run"
    if not (record.get("threads") or {}).get("single"):
        return "ran with more than one thread"
    timings = record.get("timings") or {}
    if timings.get("jit_compile_train", 0.0) + timings.get("jit_compile_test", 0.0) > 0.0:
        return "included numba JIT compilation"
    return None


def unclean_timings(records: list[dict], log: list[dict]) -> dict:
    """{why: number of distinct runs} over ``records`` whose timings are not clean; a cell
    whose runs (a ratio's reference included) were timed on more than one host counts
    them all as "timed on different hosts"."""
    out: dict[str, int] = {}
    seen = set()
    for record in records:
        if record["config_hash"] in seen:
            continue
        seen.add(record["config_hash"])
        why = timing_problem(record, log)
        if why:
            out[why] = out.get(why, 0) + 1
    if len({host_of(record) for record in records}) > 1:
        out["timed on different hosts"] = len(seen)
    return out


def timing_reruns(plan: TablePlan, allow_offline: bool = False,
                  this_host: str | None = None) -> list:
    """The runs of the table's timing cells (every cell, if it has a timing metric) that
    are not stored or whose record is not timed cleanly (``timing_problem``), and, in a
    cell whose runs were timed on more than one host, those not timed on ``this_host`` (a
    ``platform.platform()`` string; None: this machine's), unique by hash; with a ratio
    reference, a dataset's cells count as one (each ratio divides by the reference's
    times); the selected, runnable cells only, as ``TablePlan.to_execute``."""
    from llc_bench.experiment.environment import host_info

    if not any(METRICS[m].factor is not None for m in plan.spec.metrics):
        return []
    this_host = this_host or host_info()["platform"]
    store = ResultsStore(plan.results_dir)
    log = read_log(plan.results_dir)
    out: dict = {}
    timed: dict = {}  # cell (dataset, with a ratio) -> [(run, host)] of the clean records
    ratio = plan.spec.ratio_reference is not None
    for cell in plan.cells.values():
        if not (cell.selected and cell.runnable) or (cell.offline and not allow_offline):
            continue
        for run in cell.runs:
            if run.hash in out:
                continue
            record, _ = _load(store, run.hash)
            if record is None or timing_problem(record, log):
                out[run.hash] = run
            else:
                group = cell.dataset if ratio else (cell.dataset, cell.method)
                timed.setdefault(group, []).append((run, host_of(record)))
    for runs in timed.values():
        if len({host for _, host in runs}) > 1:
            out.update((run.hash, run) for run, host in runs if host != this_host)
    return list(out.values())


def _ranks(values: dict[str, float]) -> dict[str, float]:
    """Average ranks (1 = smallest), ties sharing the mean rank."""
    order = sorted(values, key=values.get)
    ranks: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _rank_rows(spec, cells, paper, row, metric_name) -> None:
    """Average rank per method over the datasets (paper values stand in where we have none)."""
    metric = METRICS[metric_name]
    of = metric.of
    sums = {m: [] for m in spec.methods}
    used_paper = {m: 0 for m in spec.methods}
    for dataset in spec.datasets:
        values = {}
        for method in spec.methods:
            cell = cells.get((dataset, method, of))
            if cell is not None and cell.mean is not None:
                values[method] = cell.mean
            elif (ref := paper.get((dataset, method, of))) and ref.value is not None:
                values[method] = ref.value
                used_paper[method] += 1
        sign = -1.0 if METRICS[of].higher_is_better else 1.0
        for method, r in _ranks({m: sign * v for m, v in values.items()}).items():
            sums[method].append(r)
    n = len(spec.datasets)
    for method in spec.methods:
        result = CellResult(row, method, metric_name, paper.get((row, method, metric_name)),
                            n_planned=1, status=RUN)
        ours = [cells[(d, method, of)] for d in spec.datasets if (d, method, of) in cells]
        if any(c.mean is not None for c in ours) and len(sums[method]) == n:
            result.values = [statistics.fmean(sums[method])]
            result.substitutes = used_paper[method]
            if used_paper[method]:
                result.notes = (f"{used_paper[method]} of {n} datasets use paper values "
                                "where we have none",)
        else:
            first = next((c for c in ours if c.reason), None)
            result.reason = (first.reason if first and first.reason
                             else "no results of ours for this method")
            result.status = first.status if first else RUN
        cells[(row, method, metric_name)] = result
