"""Scan the run records of tables for SGD that loses the LIBLINEAR warm start (issue #14).

For every run of an ``llc_sgd`` cell (and OCC-PEG) that a table plans, reads the record made
with the current code (its hash includes ``numerics_version``) and the record the same config
had before numerics versions existed (``numerics_version`` dropped), and reports from their
per-epoch ``history`` (entry 0 = after the LIBLINEAR init):

* epoch-1 / init objective: how much the first SGD epoch moved away from the warm start;
* final / init objective, with "final" the model the run kept (the kept epoch for the new
  code, the last epoch for the old code, which kept nothing).

    python scripts/scan_sgd_records.py --table jo_table2 --table ml3_table2
"""

from __future__ import annotations

import argparse
import statistics

from llc_bench.experiment.results import ResultsStore, config_hash
from llc_bench.tables.plan import Composer, Planner
from llc_bench.tables.spec import list_tables, load_profile, load_table


def _ratios(record: dict) -> tuple[float, float] | None:
    history = record.get("history") or []
    if len(history) < 2 or "objective" not in history[0]:
        return None
    init = history[0]["objective"]
    if record["config"]["trainer"]["name"] == "occ":  # OCC-PEG starts from zero, no epoch 0
        return None
    kept = (record.get("fit_info") or {}).get("sgd", {}).get("kept_epoch", len(history) - 1)
    return history[1]["objective"] / init, history[kept]["objective"] / init


def _version_1(config: dict) -> dict:
    """The config as numerics version 1 composed it: no ``numerics_version`` and none of
    the trainer keys that came with version 2 (the λ CV's ``cv_folds``)."""
    trainer = {k: v for k, v in config["trainer"].items() if k != "cv_folds"}
    return {**config, "numerics_version": None, "trainer": trainer}


def _summary(name: str, ratios: list[tuple[float, float]]) -> str:
    if not ratios:
        return f"  {name}: no records"
    first = [r[0] for r in ratios]
    final = [r[1] for r in ratios]
    return (f"  {name}: {len(ratios)} runs; epoch-1/init median {statistics.median(first):.3g}, "
            f"max {max(first):.3g}, > 2x in {sum(f > 2 for f in first)}; final/init median "
            f"{statistics.median(final):.3g}, max {max(final):.3g}, > 1 in "
            f"{sum(f > 1 + 1e-12 for f in final)}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="append", default=[], choices=list_tables())
    parser.add_argument("--results-dir", default="results")
    parser.add_argument("--profile", default="full")
    args = parser.parse_args(argv)
    store = ResultsStore(args.results_dir)
    with Composer() as composer:
        planner = Planner(args.results_dir, load_profile(args.profile), composer=composer)
        for name in args.table or list_tables():
            plan = planner.plan(load_table(name))
            old, new = [], []
            for run in plan.runs():
                if run.config.get("numerics_version") is None:
                    continue  # not an estimator whose numerics changed
                for key, out in ((run.hash, new), (config_hash(_version_1(run.config)), old)):
                    if store.has(key) and (r := _ratios(store.load(key))) is not None:
                        out.append(r)
            print(f"[{name}]")
            print(_summary("before (numerics_version 1)", old))
            versions = sorted({int(r.config["numerics_version"]) for r in plan.runs()
                               if r.config.get("numerics_version")})
            print(_summary(f"now    (numerics_version {'/'.join(map(str, versions))})", new))


if __name__ == "__main__":
    main()
