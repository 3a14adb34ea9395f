"""Re-derive the hand-made presets of ``conf/tuned/`` with ``llc-bench tune``.

For every ``conf/tuned/<model>_<dataset>.yaml`` it estimates the cost of the selection from
the store's records of the same model and dataset (the median fit time of a table run,
times the fits the selection makes: ``trials`` x the folds, or x 1 with a held-out
fraction), and with ``--run`` tunes those whose estimate is at most ``--max-minutes``
into ``--out`` (a scratch folder, never ``conf/tuned/`` itself) -- searching only the keys
each preset sets (``llc-bench tune --preset-keys``: what was hand-chosen is re-derived,
the paper's fixed settings such as m = 100, k = 8 stay fixed; ``--all-keys`` searches the
model's whole space) under the overrides of the table cells the preset feeds (a cell that
runs it at m = 10 has it tuned at m = 10; where its cells differ, under what they share,
and ``--replace`` leaves it alone) -- printing per preset the
hand setting's and the chosen setting's validation accuracy (the hand preset is the first
trial on the same splits).  ``--replace`` then copies a regenerated file over its preset
when it scores at least as well; the table cells it feeds must be rebuilt afterwards
(``llc-bench tables``: their config hash changes).

    python scripts/regenerate_presets.py                      # the plan, with estimates
    python scripts/regenerate_presets.py --run --max-minutes 10 --mirror ../shared/datasets \
        --set tune.budget_s=null     # 30 trials, whatever the machine: the same choice
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def presets() -> list[tuple[str, str, Path]]:
    """(model, dataset, path) of every preset; a name splits at the longest model prefix."""
    models = sorted((p.stem for p in (CONF / "model").glob("*.yaml")), key=len, reverse=True)
    out = []
    for path in sorted((CONF / "tuned").glob("*.yaml")):
        model = next((m for m in models if path.stem.startswith(m + "_")), None)
        if model is not None:
            out.append((model, path.stem[len(model) + 1:], path))
    return out


def cell_overrides() -> dict[tuple[str, str], list[dict]]:
    """(model, dataset config) -> the overrides of every table cell that runs it."""
    from llc_bench.tables.spec import RUN, list_tables, load_table

    cells: dict[tuple[str, str], list[dict]] = {}
    for table in list_tables():
        spec = load_table(table)
        for dataset in spec.datasets:
            for method, m in spec.methods.items():
                if m.status == RUN:
                    s = spec.settings(dataset, method)
                    cells.setdefault((m.model, s.dataset_config), []).append(dict(s.overrides))
    return cells


def shared_overrides(cells: list[dict]) -> tuple[dict, list[str]]:
    """The key = value pairs every cell sets alike, and the keys the cells differ in."""
    keys = sorted({k for c in cells for k in c})
    same = {k: cells[0][k] for k in keys
            if all(k in c and c[k] == cells[0][k] for c in cells)}
    return same, [k for k in keys if k not in same]


def fit_seconds(results_dir: Path, model: str, dataset: str) -> tuple[float | None, int]:
    """The median fit time (``train``: the chosen model's fit) of the store's test-split runs,
    and their median training rows."""
    from llc_bench.errors import LLCBenchError
    from llc_bench.store.query import records_frame

    try:
        frame = records_frame(results_dir, datasets=[dataset], models=[model])
    except LLCBenchError:
        return None, 0
    if "dataset.validation" in frame:
        frame = frame[frame["dataset.validation"].isna()]
    if frame.empty:
        return None, 0
    times = [t for t in frame["train_seconds"] if t == t]
    rows = int(frame["n_train"].median())
    return (statistics.median(times) if times else None), rows


def estimate(seconds: float | None, rows: int, trials: int, folds: int, holdout_min: int):
    if seconds is None:
        return None
    fits = trials * (1 if rows >= holdout_min else folds * 0.6)  # ~40 % of folds pruned
    return seconds * fits * (0.75 if rows >= holdout_min else 0.8)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", type=Path, default=REPO / "results")
    parser.add_argument("--run", action="store_true", help="tune the affordable presets")
    parser.add_argument("--max-minutes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/llc-presets"))
    parser.add_argument("--mirror", action="append", default=[])
    parser.add_argument("--only", default=None, help="comma-separated preset names")
    parser.add_argument("--replace", action="store_true",
                        help="copy each regenerated file that scores at least as well")
    parser.add_argument("--all-keys", action="store_true",
                        help="search the model's whole space (default: only the keys each "
                        "preset sets, so the paper's fixed settings stay fixed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra overrides, e.g. tune.trials=60")
    args = parser.parse_args(argv)
    from omegaconf import OmegaConf

    tune = OmegaConf.load(CONF / "tune" / "auto.yaml")
    sets = dict(s.split("=", 1) for s in args.set)
    trials = int(sets.get("tune.trials", tune.trials))
    budget = sets.get("tune.budget_s", tune.budget_s)
    budget = None if budget in (None, "null") else float(budget)
    only = set(args.only.split(",")) if args.only else None
    unknown = sorted((only or set()) - {path.stem for _, _, path in presets()})
    if unknown:
        parser.error(f"--only: no preset conf/tuned/{unknown[0]}.yaml")
    from llc_bench.tables.plan import override_list

    table_cells = cell_overrides()
    rows_out = ["| preset | rows | est. cost | hand val acc | tuned val acc | chosen | "
                "seconds | verdict |", "|---|---|---|---|---|---|---|---|"]
    for model, dataset, path in presets():
        if only and path.stem not in only:
            continue
        seconds, rows = fit_seconds(args.results_dir, model, dataset)
        cost = estimate(seconds, rows, trials, tune.folds, tune.holdout_min_rows)
        if cost is not None and budget is not None:
            cost = min(cost, budget)  # the selection stops at its budget
        cost_text = "unknown" if cost is None else f"{cost / 60:.1f} min"
        if not args.run or cost is None or cost > 60 * args.max_minutes:
            print(f"{path.stem:32s} rows {rows:7d}  estimated {cost_text}"
                  + ("  (skipped: over the limit)" if args.run and cost is not None else ""))
            continue
        from llc_bench.selection.tuning import tune_preset

        mirrors = ",".join(str(Path(m).resolve()) for m in args.mirror)
        fixed, differ = shared_overrides(table_cells.get((model, dataset), [{}]))
        overrides = [*override_list(fixed), *args.set,
                     *([f"data.mirrors=[{mirrors}]"] if mirrors else []), "data.download=false"]
        out = args.out / path.name
        start = time.perf_counter()
        try:
            written, report = tune_preset(model, dataset, overrides=overrides, out=out,
                                          force=True, preset_keys=not args.all_keys,
                                          echo=lambda line: None)
        except Exception as err:  # report and go on with the next preset
            print(f"{path.stem:32s} FAILED {' '.join(str(err).split())[:160]}")
            continue
        hand, new = report["hand_validation_accuracy"], report["validation_accuracy"]
        better = hand is None or new >= hand
        verdict = ("no hand score" if hand is None else
                   "keep the hand preset" if report["kept_preset"] else
                   f"better, not replaced: its cells differ in {', '.join(differ)}" if differ
                   else "replace")
        rows_out.append(
            f"| {path.stem}" + "".join(f" {k}={v}" for k, v in fixed.items())
            + f" | {report['rows']} | {cost_text} | "
            + ("-" if hand is None else f"{100 * hand:.2f}") + f" | {100 * new:.2f} | "
            + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in report["chosen"].items())
            + f" | {time.perf_counter() - start:.0f} | {verdict} |")
        print(rows_out[-1], flush=True)
        if (args.replace and better and not report["kept_preset"] and hand is not None
                and not differ):
            shutil.copyfile(written, path)
    print("\n".join(rows_out))


if __name__ == "__main__":
    main()
