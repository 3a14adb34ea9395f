"""``dataset=infimnist``: deformed MNIST training digits, generated once into a row store.

Row i < 60,000 is MNIST training digit i itself; row i >= 60,000 is digit ``i mod 60,000``
deformed with ``numpy.random.default_rng([seed, i])``, so every row depends only on
(seed, i) — not on ``n_train``, the block size or the number of processes.  A deformation
is an elastic distortion (Simard, Steinkraus & Platt 2003: a random displacement field,
uniform in [-1, 1] per pixel and axis, smoothed by a Gaussian of width ``sigma`` and
scaled by ``alpha``) plus a small random affine map (rotation, scale, shear, shift)
about the image centre, resampled bilinearly.

This is *not* the LIBSVM ``mnist8m`` file (Loosli, Canu & Bottou 2007, whose generator
data files are not available here): a similar construction with other deformations, so
numbers on it are not the papers' mnist8m numbers.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
from pathlib import Path

import numpy as np
from scipy.ndimage import gaussian_filter, map_coordinates

from llc_bench.data.formats import parse_idx
from llc_bench.data.rowstore import (
    ROWS_DIR,
    RowStore,
    RowStoreWriter,
    _store_key,
    file_sha256,
    progress_bar,
)
from llc_bench.errors import ConfigError

N_SOURCE = 60_000
#: Generator parameters and their defaults (``dataset.generator.*``); all enter the store key.
DEFAULTS = {"n_train": 8_100_000, "seed": 0, "alpha": 34.0, "sigma": 4.0,
            "rotation": 7.5, "scale": 0.075, "shear": 0.1, "shift": 1.0}
BLOCK_ROWS = 20_000
_SOURCE: dict = {}


def generator_params(raw) -> dict:
    params = {**DEFAULTS, **{k: v for k, v in dict(raw or {}).items() if k != "name"}}
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"dataset.generator: unknown key(s) {', '.join(unknown)} for "
                          f"infimnist (known: {', '.join(DEFAULTS)})")
    if not isinstance(params["n_train"], int) or params["n_train"] < 1:
        raise ConfigError(f"dataset.generator.n_train must be a positive integer, got "
                          f"{params['n_train']!r}")
    return params


@functools.cache
def _centred_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    return yy - (h - 1) / 2, xx - (w - 1) / 2


def deform(image: np.ndarray, rng: np.random.Generator, p: dict) -> np.ndarray:
    """One elastic + affine deformation of a square uint8 image (bilinear, clipped)."""
    h, w = image.shape
    dx = gaussian_filter(rng.uniform(-1, 1, (h, w)), p["sigma"], mode="constant") * p["alpha"]
    dy = gaussian_filter(rng.uniform(-1, 1, (h, w)), p["sigma"], mode="constant") * p["alpha"]
    angle = np.deg2rad(rng.uniform(-p["rotation"], p["rotation"]))
    s = 1.0 + rng.uniform(-p["scale"], p["scale"])
    shear = rng.uniform(-p["shear"], p["shear"])
    shift = rng.uniform(-p["shift"], p["shift"], 2)
    c, si = np.cos(angle), np.sin(angle)
    A = np.array([[c, -si], [si, c]]) @ np.array([[1.0, shear], [0.0, 1.0]]) / s
    yy, xx = _centred_grid(h, w)
    src_y = A[0, 0] * yy + A[0, 1] * xx + (h - 1) / 2 + shift[0] + dy
    src_x = A[1, 0] * yy + A[1, 1] * xx + (w - 1) / 2 + shift[1] + dx
    out = map_coordinates(image.astype(np.float64), [src_y, src_x], order=1, mode="constant")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def generate_rows(digits: np.ndarray, start: int, stop: int, params: dict) -> np.ndarray:
    """Rows ``start:stop`` (uint8, (n, 784)) of the generated set from the 60k digits."""
    side = int(round(np.sqrt(digits.shape[1])))
    out = np.empty((stop - start, digits.shape[1]), np.uint8)
    for i in range(start, stop):
        src = digits[i % len(digits)]
        if i < len(digits):
            out[i - start] = src
        else:
            rng = np.random.default_rng([int(params["seed"]), i])
            out[i - start] = deform(src.reshape(side, side), rng, params).ravel()
    return out


def _init(digits, params):
    _SOURCE.update(digits=digits, params=params)


def _block(bounds):
    return generate_rows(_SOURCE["digits"], *bounds, _SOURCE["params"])


def generated_store(spec, source, located, home: Path, processes: int | None = None):
    """The generated training part (a row store), made on first use with all cores."""
    params = generator_params(spec.generator)
    files = {e.kind: located[e].path for e in source.files if e.part == "train"}
    if set(files) != {"x", "y"}:
        raise ConfigError("dataset infimnist: the source needs train_x and train_y IDX files")
    identity = {"generator": "infimnist", "params": params,
                "sha256": {k: file_sha256(p, home) for k, p in files.items()}}
    out = Path(home) / ROWS_DIR / f"{spec.name}-train-{_store_key(identity)}"
    if (out / "meta.json").is_file():
        return RowStore(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    digits = parse_idx(files["x"], "x").X
    labels = parse_idx(files["y"], "y")
    names, codes = labels.label_names, labels.label_codes
    n = params["n_train"]
    writer = RowStoreWriter(out, digits.shape[1], np.uint8, identity)
    bar = progress_bar(n, "generating infimnist", writer.rows)
    blocks = [(lo, min(n, lo + BLOCK_ROWS)) for lo in range(writer.rows, n, BLOCK_ROWS)]
    processes = processes or min(os.cpu_count() or 1, 4)
    try:
        if processes > 1 and len(blocks) > 2:
            # forkserver, not fork: a fork of a process that runs threads (BLAS, numba, a
            # test runner's) can inherit a held lock and hang; the workers get the digits
            # pickled once each instead
            ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
            with ctx.Pool(processes, _init, (digits, params)) as pool:
                for (lo, hi), X in zip(blocks, pool.imap(_block, blocks), strict=True):
                    writer.append(X, names, codes[np.arange(lo, hi) % N_SOURCE], hi)
                    bar.update(hi - lo)
        else:
            for lo, hi in blocks:
                writer.append(generate_rows(digits, lo, hi, params), names,
                              codes[np.arange(lo, hi) % N_SOURCE], hi)
                bar.update(hi - lo)
        return writer.finish({"format": "generated", "generator": "infimnist"})
    finally:
        bar.close()
        writer.close()
