r"""`llc-bench tables --profile quick`: its --dry-run estimate against the real build.

Runs, in a fresh scratch results store (nothing is written to the committed ``results/``):

1. ``llc-bench tables --profile quick --dry-run``: the estimate it prints (the runs' median
   times from the committed records, their fits scaled to the profile's training rows, the
   start of each launched process, the planning);
2. ``llc-bench tables --profile quick``: the real build, timed from the outside.

Prints the estimate, the real wall time, their ratio, whether the build took at most
``--budget`` seconds (5 min) and the estimate is within 2x of it, the machine's load
average before and after (the timings are the machine's, shared or not) and the per-table
lines of both commands; ``--out`` also writes that text to a file.  A benchmark to run by
hand, not a timed test:

    python scripts/bench_tables_quick.py --mirror ../shared/datasets \
        --out results/bench/tables_quick.txt
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ESTIMATE = re.compile(r"^estimate: .*\((\d+) s\)$", re.M)


def _run(args: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "llc_bench.cli", *args], env=env, cwd=REPO,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"llc-bench {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", action="append", default=[],
                        help="read-only dataset mirror (as llc-bench tables --mirror)")
    parser.add_argument("--results-dir", default=None,
                        help="scratch store (default: a new temporary directory, removed "
                        "afterwards); must not hold records yet")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds (default: 300)")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)

    scratch = Path(args.results_dir or tempfile.mkdtemp(prefix="llc-bench-quick-"))
    if (scratch / "runs").is_dir() and any((scratch / "runs").iterdir()):
        sys.exit(f"{scratch} already holds records: the benchmark needs a fresh store")
    env = {**os.environ, "LLC_BENCH_PROGRESS": "off"}
    common = ["tables", "--profile", "quick", "--results-dir", str(scratch)]
    for mirror in args.mirror:
        common += ["--mirror", str(Path(mirror).resolve())]
    load_before = _load()
    started = dt.datetime.now(dt.UTC)
    dry_seconds, dry = _run([*common, "--dry-run"], env)
    match = ESTIMATE.search(dry)
    if not match:
        sys.exit(f"no estimate line in the dry run's output:\n{dry}")
    estimate = float(match.group(1))
    real, out = _run(common, env)
    load_after = _load()
    runs = len(list((scratch / "runs").glob("*.json")))
    if not args.results_dir:
        shutil.rmtree(scratch, ignore_errors=True)

    ratio = real / estimate if estimate else float("inf")
    within = 0.5 <= ratio <= 2.0
    fits = real <= args.budget
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True).stdout.strip() or "unknown"
    lines = [
        f"# bench_tables_quick: llc-bench tables --profile quick in a fresh store "
        f"({started:%Y-%m-%d %H:%M} UTC, commit {revision}, {os.uname().nodename})",
        f"estimate (--dry-run)  {estimate:7.0f} s   (the dry run itself: {dry_seconds:.0f} s)",
        f"real build            {real:7.0f} s   ({runs} runs written)",
        f"real / estimate       {ratio:7.2f}     {'within' if within else 'NOT within'} 2x",
        f"budget                {args.budget:7.0f} s   "
        f"{'met' if fits else 'NOT met'}: the build took {real / 60:.1f} min",
        f"load average before   {load_before}",
        f"load average after    {load_after}",
        "",
        "## dry run (per table; the launch lines left out)",
        *[line for line in dry.splitlines() if not line.startswith(("  llc-bench run",
                                                                    "  # "))],
        "",
        "## build (per table)",
        *[line for line in out.splitlines() if line.startswith(("[", "  results", "  /",
                                                                "summary", "report",
                                                                "  warning", "  failed"))
          or "runs executed" in line],
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0 if fits and within else 1


if __name__ == "__main__":
    sys.exit(main())
