"""Draw a grid of generated infimnist digits (llc_bench.data.infimnist) to a PNG.

Row 0 of the grid: MNIST training digits 0..9 of the source; each following row: the
deformations of those digits at generated row ``i + 60000 * r``.

    python scripts/infimnist_grid.py --mirror ../shared/datasets --out docs/infimnist_grid.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from llc_bench.data.formats import parse_idx  # noqa: E402
from llc_bench.data.infimnist import DEFAULTS, N_SOURCE, generate_rows  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default="../shared/datasets")
    ap.add_argument("--out", default="docs/infimnist_grid.png")
    ap.add_argument("--rows", type=int, default=6)
    args = ap.parse_args()
    mnist = Path(args.mirror) / "mnist"
    digits = parse_idx(mnist / "train-images-idx3-ubyte.gz", "x").X
    labels = parse_idx(mnist / "train-labels-idx1-ubyte.gz", "y")
    names = np.array(labels.label_names)[labels.label_codes]
    first = [int(np.flatnonzero(names == str(d))[0]) for d in range(10)]
    fig, axes = plt.subplots(args.rows, 10, figsize=(10, args.rows * 1.05))
    for r in range(args.rows):
        for c, i in enumerate(first):
            row = generate_rows(digits, i + N_SOURCE * r, i + N_SOURCE * r + 1, DEFAULTS)[0]
            ax = axes[r, c]
            ax.imshow(row.reshape(28, 28), cmap="gray_r", vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r, 0].set_ylabel("MNIST" if r == 0 else f"+{r}x60k", fontsize=8)
    fig.suptitle("infimnist (generated; not LIBSVM mnist8m): row 0 = source digits", fontsize=9)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=80)
    print(args.out)


if __name__ == "__main__":
    main()
