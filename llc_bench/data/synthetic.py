"""Synthetic 2-D datasets of the papers' figures (deterministic for a given seed).

* ``sine`` — LLC-SAPL Fig. 1: "points randomly sampled from two Sine signals ... Each
  signal contains 1000 points and forms one class". Here: t ~ U[0, periods·2π];
  class +1 at (t, amplitude·sin t + gap/2 + ε), class -1 at (t, amplitude·sin t - gap/2 + ε),
  ε ~ N(0, noise²). The paper gives no other parameters; ours are in ``conf/dataset/sine.yaml``.
* ``xor`` — ML3 Fig. 1 (left): an XOR problem that two local linear models solve. Here:
  four Gaussian blobs (std ``spread``) centred at (±1, ±1); the blobs at (1, 1) and (-1, -1)
  are class +1, the other two class -1.

Both return ``(X, y)`` with X float64 (n, 2) and y in {-1, +1}, classes in blocks.
"""

from __future__ import annotations

import numpy as np

from llc_bench.errors import ConfigError


def make_sine(n_per_class: int = 1000, noise: float = 0.2, gap: float = 1.0,
              amplitude: float = 1.0, periods: float = 2.0, seed: int = 0):
    """Two noisy sine curves, one per class (SAPL Fig. 1)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, periods * 2 * np.pi, size=2 * n_per_class)
    y = np.repeat(np.array([1, -1], dtype=np.int64), n_per_class)
    height = amplitude * np.sin(t) + y * gap / 2 + rng.normal(0.0, noise, size=t.size)
    return np.column_stack([t, height]), y


def make_xor(n_per_cluster: int = 250, spread: float = 0.35, seed: int = 0):
    """Four Gaussian blobs on the corners of a square, labelled by XOR (ML3 Fig. 1)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    y = np.repeat(np.array([1, 1, -1, -1], dtype=np.int64), n_per_cluster)
    X = np.repeat(centres, n_per_cluster, axis=0) + rng.normal(0.0, spread, (4 * n_per_cluster, 2))
    return X, y


GENERATORS = {"sine": make_sine, "xor": make_xor}


def generate(settings: dict, seed: int):
    """Run the generator named in a spec's ``generator`` mapping (its ``seed`` or the run's)."""
    params = dict(settings)
    name = params.pop("name", None)
    if name not in GENERATORS:
        raise ConfigError(f"generator.name={name!r} is not one of {', '.join(GENERATORS)}")
    data_seed = params.pop("seed", None)
    try:
        return GENERATORS[name](**params, seed=seed if data_seed is None else data_seed)
    except TypeError as exc:
        raise ConfigError(f"generator {name!r}: {exc}") from exc
