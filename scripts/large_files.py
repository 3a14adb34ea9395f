"""Large own files: the locally linear models against the kernel baselines at full size.

ijcnn1 (49,990 training rows, 22 features) and connect-4 (45,038 rows, 126 features, 3
classes) are written as a user's own CSV files (``scripts/yardstick.py``'s writer, every
training row, test rows capped at ``--max-test``) and run with ``llc-bench run
dataset=file ...`` as a user would: the locally linear models and the baselines with
their defaults (``tune=auto``), and the two references the targets are set against, the
RBF kernel SVM with its 5 x 5 grid CV on a 5,000-row subsample (``tune=off
trainer.cv_max_rows=5000``, as the docs advise for large files) and Nystroem + LIBLINEAR
with its grid CV (``tune=off``).  Per run: test accuracy, total fit seconds (selection,
CV and training) and the ratios to the two references.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python scripts/large_files.py --out results/bench/large_files.md

``--figure DIR`` draws, instead of the table, each file's accuracy-time figure (``llc-bench
figures --figure pareto_files``: the two references and llsvm, sapl and ml3 at three counted
selection budgets) into DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from yardstick import run_one, write_sets

from llc_bench.store.costs import fit_seconds

SETS = ["ijcnn", "connect4_3class"]
# name: (model, tune, extra overrides); the first two are the references: the kernel SVM
# with its grid CV on a 5,000-row subsample and Nystroem with its grid CV
RUNS = {
    "kernel_grid_5000": ("kernel", "off", ["trainer.cv_max_rows=5000"]),
    "nystroem_grid": ("nystroem", "off", []),
    "kernel": ("kernel", "auto", []),
    "nystroem": ("nystroem", "auto", []),
    "linear": ("linear", "auto", []),
    "llsvm": ("llsvm", "default", []),
    "sapl": ("sapl", "default", []),
    "ml3": ("ml3", "default", []),
    "jo": ("jo", "default", []),
}
RBF, NYSTROEM = list(RUNS)[:2]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=",".join(RUNS), help="comma-separated names of RUNS")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--work", default=Path("/tmp/llc-large-files"), type=Path)
    parser.add_argument("--max-test", type=int, default=20000)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra override for the runs that are not references")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    parser.add_argument("--figure", type=Path, default=None, metavar="DIR",
                        help="draw the accuracy-time figure of each file (llc-bench figures "
                        "--figure pareto_files: the references and llsvm, sapl, ml3 under three "
                        "counted budgets) into DIR as pareto_files_<set>.png and .pdf")
    args = parser.parse_args(argv)
    names = [n for n in args.runs.split(",") if n]
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        parser.error(f"--runs: unknown {unknown[0]!r} (one of: {', '.join(RUNS)})")
    sets = write_sets(args.work / "csv", 10**9, args.max_test, args.sets.split(","))
    if args.figure:
        draw_figures(sets, args.work, args.figure)
        return
    results = {}
    for set_name, (train, test, n, d, c) in sets.items():
        for name in names:
            model, tune, extra = RUNS[name]
            if name not in (RBF, NYSTROEM):
                extra = [*extra, *args.set]
            start = time.perf_counter()
            record = run_one(train, test, model, args.work / "store", tune, extra)
            results[(set_name, name)] = (100 * record["metrics"]["test_accuracy"],
                                         fit_seconds(record), record.get("tune") or {})
            print(f"{set_name:9s} n={n} d={d} c={c} {name:32s} "
                  f"acc {results[(set_name, name)][0]:6.2f}  fit {fit_seconds(record):7.1f}s "
                  f"(wall {time.perf_counter() - start:6.1f}s)", flush=True)
    lines = [f"# large own files: {', '.join(sets)} (all training rows; test rows capped at "
             f"{args.max_test}); threads: OMP {os.environ.get('OMP_NUM_THREADS', 'unset')}, "
             f"numba {os.environ.get('NUMBA_NUM_THREADS', 'unset')}; load average before: "
             f"{os.getloadavg()[0]:.2f}", "",
             "| set | run | test accuracy (%) | total fit s | / RBF (grid on 5,000) | "
             "/ Nystroem (grid) | selection |", "|---|---|---|---|---|---|---|"]
    for set_name in sets:
        rbf = results.get((set_name, RBF))
        nys = results.get((set_name, NYSTROEM))
        for name in names:
            acc, seconds, tune = results[(set_name, name)]
            trials = (f"{tune.get('n_trials')} trials, stopped by {tune.get('stopped_by')}"
                      if tune else "grid CV")
            lines.append(f"| {set_name} | {name} | {acc:.2f} | {seconds:.1f} | "
                         f"{seconds / rbf[1]:.2f} |" if rbf else f"| {set_name} | {name} | "
                         f"{acc:.2f} | {seconds:.1f} | - |")
            lines[-1] += (f" {seconds / nys[1]:.2f} |" if nys else " - |") + f" {trials} |"
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table)
        args.out.with_suffix(".json").write_text(json.dumps(
            {f"{s}/{n}": {"accuracy": a, "seconds": t} for (s, n), (a, t, _) in
             results.items()}, indent=1))


def draw_figures(sets: dict, work: Path, out: Path) -> None:
    """``llc-bench figures --figure pareto_files`` on each set's files (its runs one at a
    time into ``work/figure-store``), the figure copied to ``out/pareto_files_<set>``."""
    import shutil

    from llc_bench.cli.tables import figures_command

    out.mkdir(parents=True, exist_ok=True)
    for set_name, (train, test, *_) in sets.items():
        drawn = figures_command(
            ["--figure", "pareto_files", "--launcher", "basic", "--dataset", "file",
             f"dataset.train={train}", f"dataset.test={test}",
             "--results-dir", str(work / "figure-store"), "--out", str(work / "figures")])
        png = Path(drawn["pareto_files"])
        if png.suffix != ".png":
            raise SystemExit(f"{set_name}: {drawn['pareto_files']}")
        for suffix in (".png", ".pdf"):
            shutil.copyfile(png.with_suffix(suffix), out / f"pareto_files_{set_name}{suffix}")
        print(f"{set_name}: {out / f'pareto_files_{set_name}.png'}", flush=True)


if __name__ == "__main__":
    main()
