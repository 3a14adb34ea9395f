"""Decision regions of LL-SVM beside the RBF kernel SVM on a 2-D dataset, with LL-SVM's
anchors: the picture of the docs (``llc-bench figures --regions banana``, ``make
docs-figures``).  Each panel fits the estimator a run of its model preset builds
(``from_preset``: the preset, the dataset's tuned preset, then the panel's overrides)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from llc_bench.files import atomic_write_bytes

#: (model preset, label, overrides) of each panel, left to right
PANELS = (("llsvm", "LL-SVM", ()), ("kernel", "RBF kernel SVM", ()))
#: grid points per axis of the decision-value map
GRID = 300
REGION_COLORS = ("#deebf7", "#fee0d2")  # negative, positive class
POINT_COLORS = ("#1f5fa8", "#b2182b")


def _grid(X: np.ndarray, pad: float = 0.3):
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], GRID), np.linspace(lo[1], hi[1], GRID))
    return gx, gy, np.c_[gx.ravel(), gy.ravel()]


def _panel(ax, est, label: str, ds) -> None:
    """One panel: the two regions, the boundary, the training rows and any anchors."""
    X, y = ds.X_train, np.asarray(ds.y_train)
    gx, gy, grid = _grid(X)
    f = np.asarray(est.decision_function(grid), dtype=float).reshape(gx.shape)
    ax.contourf(gx, gy, f, levels=[-np.inf, 0.0, np.inf], colors=REGION_COLORS)
    ax.contour(gx, gy, f, levels=[0.0], colors="k", linewidths=1.2)
    for c, color in zip(np.unique(y), POINT_COLORS, strict=False):
        pts = X[y == c]
        ax.scatter(pts[:, 0], pts[:, 1], s=4, c=color, alpha=0.6, linewidths=0,
                   label=f"class {c}")
    anchors = getattr(est, "anchors_", None)
    extra = ""
    if anchors is not None and np.asarray(anchors).shape[1:] == (2,):
        a = np.asarray(anchors)
        ax.scatter(a[:, 0], a[:, 1], marker="*", s=90, c="gold", edgecolors="k",
                   linewidths=0.6, label=f"{len(a)} anchors", zorder=5)
        extra = f", {len(a)} anchors"
    acc = 100 * float(np.mean(est.predict(ds.X_test) == np.asarray(ds.y_test)))
    ax.set_title(f"{label}{extra}: test accuracy {acc:.1f}%", fontsize=10)
    ax.set_xlabel("feature 1 (standardised)", fontsize=8)
    ax.set_ylabel("feature 2 (standardised)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9)


def draw_regions(dataset: str = "banana", out_dir: str | Path = "docs/img", mirrors=(),
                 seed: int = 0) -> Path:
    """Fit each of ``PANELS`` on ``dataset`` (2 features) and write
    ``<out_dir>/regions_<dataset>.png``; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llc_bench.data import load_dataset
    from llc_bench.errors import ConfigError
    from llc_bench.selection.presets import from_preset

    ds = load_dataset(dataset, seed=seed, mirrors=mirrors, download=False)
    if ds.X_train.shape[1] != 2:
        raise ConfigError(f"--regions {dataset}: the picture needs 2 features, and {dataset} "
                          f"has {ds.X_train.shape[1]}: choose a 2-D dataset (banana, sine, xor)")
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5.2 * len(PANELS), 4.6),
                             layout="constrained", squeeze=False)
    for ax, (model, label, overrides) in zip(axes[0], PANELS, strict=True):
        est = from_preset(model, dataset, *overrides, seed=seed)
        _panel(ax, est.fit(ds.X_train, ds.y_train), label, ds)
    fig.suptitle(f"Decision regions on {dataset} ({ds.X_train.shape[0]} training rows)",
                 fontsize=11)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    path = Path(out_dir) / f"regions_{dataset}.png"
    atomic_write_bytes(path, buffer.getvalue())
    return path
