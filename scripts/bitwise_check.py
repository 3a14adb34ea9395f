#!/usr/bin/env python
"""Do the working tree and a git revision fit bitwise the same models?

Exports ``llc_bench`` of REV (default HEAD) to a temporary directory, fits the same
(dataset, model) pairs with both in separate single-threaded processes (configs from
this tree's ``conf/``), and compares every fitted array (``W_``, ``b_``, ``anchors_``,
...), the test predictions, the per-epoch history and the init record byte for byte.

    .venv/bin/python scripts/bitwise_check.py [--rev HEAD~1] [--pairs usps:llsvm,banana:sapl]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PAIRS = ("banana:llsvm,banana:sapl,banana:jo,banana:lcc_svm,banana:lcc_svm_lcc,banana:linear,"
         "banana:occ_lib_c,banana:llsvm_released,usps:llsvm,usps:lcc_svm,usps:linear")
#: Record-only keys of the init added after the code under comparison may have been written.
RECORD_ONLY = {"max_iter_reached", "iterations", "build_seconds", "train_seconds"}
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                               "NUMBA_NUM_THREADS")}


def dump(out: str, pairs: str, home: str, mirror: str) -> None:
    """Fit every pair with the ``llc_bench`` on sys.path; pickle arrays and records."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import build_estimator, estimator_class

    result = {}
    for pair in pairs.split(","):
        dataset, model = pair.split(":")
        GlobalHydra.instance().clear()
        with initialize_config_module("llc_bench.conf", version_base="1.3"):
            cfg = compose("run", overrides=[f"dataset={dataset}", f"model={model}", "seed=0",
                                            f"data.home={home}", f"data.mirrors=[{mirror}]",
                                            "data.download=false"])
        cfg = OmegaConf.to_container(cfg, resolve=True)
        # a null option this tree's conf/ added is unknown to an older estimator, and so is
        # a config file's _target_ (both trees find the class from trainer.name): drop them
        known = set(estimator_class(cfg["trainer"]["name"])().get_params()) | {"name"}
        for group in ("trainer", "coding"):
            cfg[group] = {k: v for k, v in (cfg.get(group) or {}).items()
                          if (v is not None or k in known) and k != "_target_"}
        ds = load_dataset(cfg["dataset"], seed=0, home=home, mirrors=[mirror], download=False)
        est = build_estimator(cfg)
        if "history" in est.get_params():
            est.fit(ds.X_train, ds.y_train, eval_set=(ds.X_test, ds.y_test))
        else:
            est.fit(ds.X_train, ds.y_train)
        arrays = {k: v for k, v in vars(est).items()
                  if k.endswith("_") and isinstance(v, np.ndarray)}
        info = getattr(est, "fit_info_", None) or {}
        init = {k: v for k, v in dict(info.get("init") or {}).items() if k not in RECORD_ONLY}
        result[pair] = {**arrays, "predict": est.predict(ds.X_test),
                        "history": json.dumps(info.get("history"), sort_keys=True, default=str),
                        "init": json.dumps(init, sort_keys=True, default=str)}
    with open(out, "wb") as handle:
        pickle.dump(result, handle)


def differences(a: dict, b: dict) -> list[str]:
    out = []
    for pair, items in a.items():
        for name, va in items.items():
            vb = b.get(pair, {}).get(name)
            if isinstance(va, np.ndarray):
                same = (isinstance(vb, np.ndarray) and va.shape == vb.shape
                        and va.dtype == vb.dtype and va.tobytes() == vb.tobytes())
            else:
                same = va == vb
            if not same:
                out.append(f"{pair} {name}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--pairs", default=PAIRS)
    ap.add_argument("--home", default=str(REPO / "datasets"))
    ap.add_argument("--mirror", default=str(REPO.parent / "shared" / "datasets"))
    ap.add_argument("--dump", help=argparse.SUPPRESS)  # child: write the pickle here
    args = ap.parse_args(argv)
    if args.dump:
        dump(args.dump, args.pairs, args.home, args.mirror)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.rev, "llc_bench"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        runs = {}
        for name, path in (("rev", tmp), ("tree", str(REPO))):
            env = {**os.environ, **ONE_THREAD, "PYTHONPATH": path}
            runs[name] = str(Path(tmp) / f"{name}.pkl")
            subprocess.run([sys.executable, __file__, "--dump", runs[name], "--pairs", args.pairs,
                            "--home", args.home, "--mirror", args.mirror],
                           check=True, env=env, cwd=tmp)
        loaded = {}
        for name, path in runs.items():
            with open(path, "rb") as handle:
                loaded[name] = pickle.load(handle)
    diff = differences(loaded["rev"], loaded["tree"])
    for line in diff:
        print("DIFFERS:", line)
    n = sum(len(v) for v in loaded["rev"].values())
    print(f"{len(loaded['rev'])} fits, {n} items compared with {args.rev}: "
          + ("all bitwise identical" if not diff else f"{len(diff)} differ"))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
