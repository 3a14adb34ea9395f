#!/usr/bin/env python
"""Mutation smoke check (does a bug made the same way in a kernel and in its reference
get caught?): plant known bugs one at a time in a temporary copy of
the project and assert that the fast tests fail for each.

The copy holds llc_bench/ (with conf/ at llc_bench/conf, the installed layout), tests/ and
pyproject.toml; results/ and datasets/ are symlinked read-only inputs.  Every mutant is an
exact string replacement (the script stops if a target string is not found the expected
number of times, so it cannot silently test nothing).  pytest runs as ``python -m pytest``
with cwd and PYTHONPATH = the copy, so the copy's package is imported, not the editable
install; the script checks that first, and a planted syntax error is the control row.
Real-data tests are not run (``-m "not slow"``, no *_real.py file).

    .venv/bin/python scripts/mutation_smoke.py [--only NAME ...] [--tests FILE ...] [--keep]

Exit status 0 when every mutant is caught, 1 when one survived, 2 on a setup problem.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

KERNEL = "llc_bench/models/_sgd_kernel.py"
REFERENCE = "tests/models/reference_sgd.py"
SGD_TESTS = ("tests/models/test_sgd_hand.py", "tests/models/test_llsvm.py",
             "tests/models/test_sapl.py")
RANK_TESTS = ("tests/tables/test_aggregate_ranks.py", "tests/tables/test_tables_render.py")
HASH_TESTS = ("tests/store/test_config_hash.py", "tests/store/test_results.py")


@dataclass(frozen=True)
class Mutant:
    name: str
    edits: tuple  # (path, old, new, expected count of old)
    tests: tuple


MUTANTS = (
    Mutant("control: syntax error in aggregate.py",
           (("llc_bench/tables/aggregate.py", "def _ranks(", "def _ranks((", 1),),
           RANK_TESTS),
    Mutant("_ranks: ties get the lowest rank",
           (("llc_bench/tables/aggregate.py", "ranks[order[k]] = (i + j) / 2 + 1",
             "ranks[order[k]] = i + 1", 1),),
           RANK_TESTS),
    Mutant("_rank_rows: rank sign flipped",
           (("llc_bench/tables/aggregate.py",
             "sign = -1.0 if METRICS[of].higher_is_better else 1.0",
             "sign = 1.0 if METRICS[of].higher_is_better else -1.0", 1),),
           RANK_TESTS),
    Mutant("config hash drops every falsy value",
           (("llc_bench/store/results.py", "if v is not None}", "if v}", 1),),
           HASH_TESTS),
    Mutant("sparse Kronecker: no bias column",
           (("llc_bench/models/kronecker.py",
             'Xa = sp.hstack([Xc, np.ones((n, 1))], format="csr")', "Xa = Xc", 1),),
           ("tests/models/test_kronecker.py",)),
    Mutant("safeguard r < 0.8 -> 0.5 (kernel and reference)",
           ((KERNEL, "if r < 0.8:", "if r < 0.5:", 1),
            (REFERENCE, "if r < 0.8:", "if r < 0.5:", 1)),
           SGD_TESTS),
    Mutant("skip decay on every step (kernel and reference)",
           ((KERNEL, "if count <= 0:", "if True:", 1),
            (REFERENCE, "if count <= 0:", "if True:", 1)),
           SGD_TESTS),
    Mutant("fold branch: W *= sw deleted",
           ((KERNEL, "if sw < _FOLD_BELOW:\n        W *= sw\n", "if sw < _FOLD_BELOW:\n", 1),),
           SGD_TESTS),
    Mutant("fold branch: b *= sb deleted",
           ((KERNEL, "if sb < _FOLD_BELOW:\n        b *= sb\n", "if sb < _FOLD_BELOW:\n", 1),),
           SGD_TESTS),
    Mutant("anchor step sign flipped (kernel and reference)",
           ((KERNEL, "step = eta * anchor_scale * g[a] * s",
             "step = -eta * anchor_scale * g[a] * s", 1),
            (REFERENCE, "c = eta * anchor_scale * g * s", "c = -eta * anchor_scale * g * s", 1)),
           SGD_TESTS),
    Mutant("bias_scale dropped from the b step (kernel and reference)",
           ((KERNEL, "g * bias_scale / sb", "g / sb", 3),
            (REFERENCE, "eta * bias_scale * y[c] * gam", "eta * y[c] * gam", 2)),
           SGD_TESTS),
)


def fail(message: str) -> None:
    print(f"mutation_smoke: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def make_copy(dest: Path) -> None:
    """A fresh copy (mtimes kept, so numba's cache stays valid for unchanged files)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(REPO / "llc_bench", dest / "llc_bench", ignore=ignore)
    shutil.copytree(REPO / "conf", dest / "llc_bench" / "conf", ignore=ignore)
    shutil.copytree(REPO / "tests", dest / "tests", ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    for name in ("results", "datasets"):  # read-only inputs of some tests
        if (REPO / name).is_dir():
            (dest / name).symlink_to(REPO / name, target_is_directory=True)


def plant(root: Path, mutant: Mutant) -> None:
    for path, old, new, expected in mutant.edits:
        file = root / path
        text = file.read_text()
        found = text.count(old)
        if found != expected:
            fail(f"{mutant.name}: {path} has {found} occurrence(s) of {old!r}, "
                 f"expected {expected}; update the mutant to the current code")
        file.write_text(text.replace(old, new))


def environment(root: Path, cache: Path) -> dict:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    return env


def check_import(root: Path, env: dict) -> None:
    """The copy's package (and its conf) is what the tests import."""
    code = ("import llc_bench, llc_bench.conf, llc_bench.models._sgd_kernel as k; "
            "print(llc_bench.__file__); print(llc_bench.conf.__file__); print(k.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, text=True,
                         capture_output=True)
    if out.returncode:
        fail(f"cannot import llc_bench from the copy:\n{out.stderr}")
    for line in out.stdout.split():
        if not Path(line).resolve().is_relative_to(root.resolve()):
            fail(f"the tests would import {line}, not the copy under {root}")


def run_tests(root: Path, env: dict, tests) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider",
           *tests]
    out = subprocess.run(cmd, cwd=root, env=env, text=True, capture_output=True)
    lines = (out.stdout + out.stderr).strip().splitlines()
    return out.returncode, lines[-1] if lines else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+",
                        help="run only the mutants whose name contains one of these")
    parser.add_argument("--tests", nargs="+",
                        help="test files for every mutant (default: each mutant's own list)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if not args.only or any(s in m.name for s in args.only)]
    if not mutants:
        fail("no mutant matches --only")
    tmp = Path(tempfile.mkdtemp(prefix="llc-mutation-"))
    root, cache = tmp / "repo", tmp / "numba-cache"
    env = environment(root, cache)
    try:
        # baseline: the unmutated copy passes every test file used below
        make_copy(root)
        check_import(root, env)
        every = sorted({t for m in mutants for t in (args.tests or m.tests)})
        for t in every:
            if not (root / t).is_file():
                fail(f"no test file {t}")
        start = time.perf_counter()
        rc, last = run_tests(root, env, every)
        if rc != 0:
            fail(f"the unmutated copy fails its tests ({last}); fix that first")
        print(f"baseline: {len(every)} test files pass ({time.perf_counter() - start:.0f} s)")
        rows = []
        for mutant in sorted(mutants, key=lambda m: KERNEL in {e[0] for e in m.edits}):
            make_copy(root)
            plant(root, mutant)
            start = time.perf_counter()
            rc, last = run_tests(root, env, args.tests or mutant.tests)
            if rc in (1, 2):  # tests failed, or an error while collecting them
                verdict = "caught"
            elif rc == 0:
                verdict = "SURVIVED"
            else:
                verdict = f"error (pytest exit {rc})"
            rows.append((mutant.name, verdict, time.perf_counter() - start, last))
            print(f"  {verdict:9s} {mutant.name}  [{rows[-1][2]:.0f} s: {last}]", flush=True)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"\n{'mutant':{width}s}  result")
    for name, verdict, _, _ in rows:
        print(f"{name:{width}s}  {verdict}")
    bad = [r for r in rows if r[1] != "caught"]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} mutants caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
