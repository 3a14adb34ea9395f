"""The η0 calibration of learned anchors (LLC-SAPL, LLC-JO): the whole grid against the
coarse-to-fine grid (numerics v6, ``calibration_coarse_step`` = 2).

1. Replay: every whole-grid learned-anchor calibration recorded in the store is searched
   again coarse-to-fine from its recorded costs (``llc_sgd.coarse_to_fine``, the rule the
   fit uses): how often the same η0 comes out, and with how many of the 14 points.
2. Timing: LLC-SAPL and LLC-JO fitted in this process with the whole grid and with the
   default, on ``--rows`` training rows of each dataset (one thread: run with
   ``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1``): fit seconds, their ratio, η0 and training
   accuracy of both.

    python scripts/bench_learned_calibration.py --mirror ../shared/datasets
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path

import numpy as np

from llc_bench.models.eta0_calibration import LEARNED_ETA0_EXPONENTS, _best_eta0, coarse_to_fine

REPO = Path(__file__).resolve().parents[1]


def _calibrations(node):
    if isinstance(node, dict):
        if isinstance(node.get("t0_calibration"), dict):
            yield node["t0_calibration"]
        for value in node.values():
            yield from _calibrations(value)
    elif isinstance(node, list):
        for value in node:
            yield from _calibrations(value)


def replay(store: Path, step: int) -> tuple[int, int, list]:
    """(calibrations replayed, same η0, the differing ones) over the store's records."""
    n = same = 0
    differ = []
    for path in sorted(glob.glob(str(store / "runs" / "*.json"))):
        text = Path(path).read_text()
        if '"learn_anchors": true' not in text:
            continue
        for cal in _calibrations(json.loads(text)):
            costs = np.asarray(list((cal.get("grid") or {}).values()), dtype=float)
            if costs.size != len(LEARNED_ETA0_EXPONENTS):
                continue  # not a whole learned-anchor grid
            whole = coarse_to_fine(costs.size, None, lambda p, c=costs: c[None, p])
            pick = coarse_to_fine(costs.size, step, lambda p, c=costs: c[None, p])
            best_whole = whole[_best_eta0(costs[None, whole])]
            best_pick = pick[_best_eta0(costs[None, pick])]
            n += 1
            if best_whole == best_pick:
                same += 1
            else:
                differ.append((Path(path).name, best_whole, best_pick,
                               float(costs[best_whole]), float(costs[best_pick])))
    return n, same, differ


def timing(dataset: str, model: str, rows: int, mirror: str) -> str:
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import build_estimator

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[f"dataset={dataset}", f"model={model}", "tune=off",
                                        "data.download=false", f"data.mirrors=[{mirror}]"])
    config = OmegaConf.to_container(cfg, resolve=True)
    config["dataset"]["max_train"] = rows
    ds = load_dataset(config["dataset"], seed=0, mirrors=[mirror], download=False)
    out = []
    for step in (1, None):
        est = build_estimator(config).set_params(history=False, calibration_coarse_step=step)
        tic = time.perf_counter()
        est.fit(ds.X_train, ds.y_train)
        seconds = time.perf_counter() - tic
        out.append((seconds, est.fit_info_["sgd"]["eta0"],
                    float(np.mean(est.predict(ds.X_train) == ds.y_train))))
    (t1, e1, a1), (t2, e2, a2) = out
    return (f"{dataset:9s} {model:5s} {ds.X_train.shape[0]:6d} rows  whole {t1:6.2f}s  "
            f"coarse {t2:6.2f}s  ratio {t2 / t1:4.2f}  eta0 {e1:.4g} / {e2:.4g}  "
            f"train acc {100 * a1:.2f} / {100 * a2:.2f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=REPO / "results")
    parser.add_argument("--mirror", default=str(REPO.parent / "shared" / "datasets"))
    parser.add_argument("--datasets", default="usps,connect4,ringnorm,letter,magic04")
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args(argv)
    for step in (2, 3, 4):
        n, same, differ = replay(args.store, step)
        points = len(range(0, len(LEARNED_ETA0_EXPONENTS), step)) + 2 * (step - 1)
        print(f"replay step {step}: the whole grid's eta0 in {same} of {n} recorded "
              f"calibrations, at most {points} of {len(LEARNED_ETA0_EXPONENTS)} "
              f"points; differing: {differ[:4]}")
    for dataset in args.datasets.split(","):
        for model in ("sapl", "jo"):
            print(timing(dataset, model, args.rows, args.mirror), flush=True)


if __name__ == "__main__":
    main()
