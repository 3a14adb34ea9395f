"""How a rebuild moved the table cells: each cell whose runs changed, old vs new mean,
against the cell's own spread (our std over seeds, old or new, whichever is larger).

    python scripts/table_moves.py REV [--tables-dir results/tables]

REV is the git revision holding the tables before the rebuild.  Prints, per table, the
cells that moved by more than their std (or, for one-run cells, by more than the
yardstick's allowed difference), then the verdict counts before and after.
"""

from __future__ import annotations

import argparse
import io
import subprocess
from pathlib import Path

import pandas as pd

KEY = ["dataset", "method", "metric"]
ACCURACY = {"accuracy", "error", "test_hinge", "train_hinge"}


def _old(rev: str, path: Path) -> pd.DataFrame:
    text = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                          check=True).stdout
    return pd.read_csv(io.StringIO(text))


def moves(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    both = old.merge(new, on=KEY, suffixes=("_old", "_new"))
    changed = both[(both.config_hashes_old != both.config_hashes_new)
                   & both.metric.isin(ACCURACY) & both.ours_mean_new.notna()]
    out = changed[KEY + ["ours_mean_old", "ours_mean_new", "ours_std_old", "ours_std_new",
                         "n_runs_new", "allowed_new", "verdict_old", "verdict_new"]].copy()
    out["move"] = out.ours_mean_new - out.ours_mean_old
    spread = out[["ours_std_old", "ours_std_new"]].max(axis=1)
    out["limit"] = spread.where(spread.notna() & (out.n_runs_new > 1), out.allowed_new)
    out["beyond"] = out.move.abs() > out.limit
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--tables-dir", default="results/tables")
    args = parser.parse_args()
    total = {"changed": 0, "beyond": 0}
    for path in sorted(Path(args.tables_dir).glob("*.csv")):
        old, new = _old(args.rev, path), pd.read_csv(path)
        m = moves(old, new)
        total["changed"] += len(m)
        total["beyond"] += int(m.beyond.sum())
        counts = {v: (int((old.verdict == v).sum()), int((new.verdict == v).sum()))
                  for v in ("within", "better", "worse")}
        print(f"## {path.stem}: {len(m)} accuracy/hinge cells rebuilt, "
              f"{int(m.beyond.sum())} moved beyond their std; verdicts old -> new: "
              + ", ".join(f"{v} {a} -> {b}" for v, (a, b) in counts.items()))
        for row in m[m.beyond].itertuples():
            print(f"   {row.dataset:<10} {row.method:<22} {row.metric:<11} "
                  f"{row.ours_mean_old:9.4f} -> {row.ours_mean_new:9.4f} "
                  f"(move {row.move:+.4f}, std {row.limit:.4f}, n {row.n_runs_new}) "
                  f"{row.verdict_old} -> {row.verdict_new}")
    print(f"all: {total['changed']} cells rebuilt, {total['beyond']} moved beyond their std")


if __name__ == "__main__":
    main()
