"""Out-of-core benchmark: stream ``dataset=infimnist`` through an llc_sgd model.

Prints rows, peak RSS, seconds per phase, SGD epoch time against the distance-GEMM floor
(one pass of X·Vᵀ over the same N, D, m), and test accuracy.  The generated row store is
made first in a child process (so its memory does not count) and reused afterwards.

    python scripts/bench_stream.py --n-train 100000 --model llsvm --epochs 2
    python scripts/bench_stream.py --n-train 8100000 --model llsvm --epochs 10   # quiet machine
    python scripts/bench_stream.py --n-train 8100000 --model sapl --epochs 1
    python scripts/bench_stream.py --record results/runs/<hash>.json   # a finished `llc-bench run`

With ``--record``, the figures come from the record of a finished ``llc-bench run`` (its
phase timings, epoch seconds and the process's peak RSS, ``memory.peak_rss_mb``, which is
the whole run's when the run had a process of its own); only the GEMM floor is timed here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def compose(args) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from omegaconf import OmegaConf

    overrides = [f"dataset={args.dataset}", f"model={args.model}",
                 f"trainer.epochs={args.epochs}", f"seed={args.seed}",
                 f"data.home={args.home}", f"data.mirrors=[{args.mirror}]",
                 "data.download=false", *args.override]
    if args.dataset == "infimnist":
        overrides.append(f"dataset.generator.n_train={args.n_train}")
    else:
        overrides.append(f"dataset.max_train={args.n_train}")
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = hydra_compose("run", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)


def load(config: dict):
    from llc_bench.data import load_dataset

    data = config["data"]
    return load_dataset(config["dataset"], seed=config["seed"], home=data["home"],
                        mirrors=data["mirrors"], download=False)


def _prepare(config: dict) -> None:  # child process: generate / convert the stores
    load(config)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def gemm_floor(source, m: int, rows: int) -> float:
    """Seconds of the distance GEMM X·Vᵀ over all N rows, timed on one in-memory chunk."""
    X = source.take(np.arange(min(rows, source.n_rows)))
    V = np.random.default_rng(0).standard_normal((m, X.shape[1]))
    best = np.inf
    for _ in range(3):
        tic = time.perf_counter()
        X @ V.T
        best = min(best, time.perf_counter() - tic)
    return best * source.n_rows / len(X)


def from_record(path: str, home: str, mirror: str) -> dict:
    """The bench figures of a finished streamed run, and the GEMM floor on its data."""
    from llc_bench.data import load_dataset

    record = json.loads(Path(path).read_text())
    config, fit = record["config"], record["fit_info"]
    ds = load_dataset(config["dataset"], seed=record["seed"], home=home, mirrors=[mirror],
                      download=False)
    m = record["model_size"]["n_anchors"]
    epochs = fit["sgd"]["epoch_seconds"]
    floor = gemm_floor(ds.X_train, m, 65_536) if hasattr(ds.X_train, "chunks") else None
    t = record["timings"]
    phases = {k: v for k, v in t.items() if k.startswith("fit_") or k in ("load", "preprocess")}
    phases.update(train=t["train"], predict_test=t["test_total"])
    return {
        "dataset": record["dataset"], "model": record["model"], "record": Path(path).name,
        "rows": record["data"]["n_train"], "features": record["data"]["n_features"],
        "anchors": m, "streamed": bool(record["data"].get("row_store", {}).get("streamed")),
        "chunks": getattr(ds.X_train, "n_chunks", 1), "epochs": len(epochs),
        "peak_rss_gb": round(record["memory"]["peak_rss_mb"] / 1024, 3),
        "threads": record["threads"]["env"],
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
        "sgd_epoch_s": round(float(np.mean(epochs)), 2) if epochs else None,
        "gemm_floor_s": round(floor, 2) if floor else None,
        "epoch_over_floor": round(float(np.mean(epochs)) / floor, 2) if epochs and floor else None,
        "test_accuracy": round(100 * record["metrics"]["test_accuracy"], 2),
        "kept_epoch": fit["sgd"].get("kept_epoch"),
    }


def report(out: dict, path: str | None) -> None:
    print(f"{out['dataset']} x {out['model']}: {out['rows']} rows x {out['features']}, "
          f"m = {out['anchors']}, {out['chunks']} chunks, {out['epochs']} epochs")
    for k, v in out["phases_s"].items():
        print(f"  {k:<44} {v:>9.2f} s")
    print(f"  SGD epoch {out['sgd_epoch_s']} s; distance-GEMM floor {out['gemm_floor_s']} s "
          f"(x{out['epoch_over_floor']})")
    print(f"  peak RSS {out['peak_rss_gb']} GB; test accuracy {out['test_accuracy']}%")
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(out, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", help="report a finished run's record instead of running")
    ap.add_argument("--dataset", default="infimnist")
    ap.add_argument("--n-train", type=int, default=100_000)
    ap.add_argument("--model", default="llsvm")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--home", default=str(REPO / "datasets"))
    ap.add_argument("--mirror", default=str(REPO.parent / "shared" / "datasets"))
    ap.add_argument("--out", help="also write the figures as JSON here")
    ap.add_argument("override", nargs="*", help="more Hydra overrides")
    args = ap.parse_args()
    if args.record:
        return report(from_record(args.record, args.home, args.mirror), args.out)
    config = compose(args)
    tic = time.perf_counter()
    child = multiprocessing.get_context("spawn").Process(target=_prepare, args=(config,))
    child.start()
    child.join()
    if child.exitcode:
        raise SystemExit(f"preparing the row store failed (exit {child.exitcode})")
    prepare = time.perf_counter() - tic

    from llc_bench.experiment.runner import _evaluate, build_estimator

    phases = {"prepare (generation/conversion, excluded)": prepare}
    tic = time.perf_counter()
    ds = load(config)
    phases["load (statistics pass, test set)"] = time.perf_counter() - tic
    est = build_estimator(config)
    tic = time.perf_counter()
    est.fit(ds.X_train, ds.y_train)
    phases["fit"] = time.perf_counter() - tic
    for name, sec in est.fit_info_["timings"].items():
        phases[f"  fit.{name}"] = sec
    tic = time.perf_counter()
    test, _ = _evaluate(est, ds.X_test, ds.y_test, ds.classes)
    phases["predict test"] = time.perf_counter() - tic
    epochs = est.fit_info_["sgd"]["epoch_seconds"]
    m = est.anchors_.shape[0]
    streamed = hasattr(ds.X_train, "chunks")
    floor = gemm_floor(ds.X_train, m, 65_536) if streamed else float("nan")
    out = {
        "dataset": config["dataset"]["name"], "model": config["model"]["name"],
        "rows": int(ds.n_train), "features": int(ds.n_features), "anchors": int(m),
        "streamed": streamed, "chunks": getattr(ds.X_train, "n_chunks", 1),
        "epochs": len(epochs), "peak_rss_gb": round(peak_rss_gb(), 3),
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
        "sgd_epoch_s": round(float(np.mean(epochs)), 2) if epochs else None,
        "gemm_floor_s": round(floor, 2),
        "epoch_over_floor": round(float(np.mean(epochs)) / floor, 2) if epochs else None,
        "test_accuracy": round(100 * test["accuracy"], 2),
        "kept_epoch": est.fit_info_["sgd"].get("kept_epoch"),
    }
    report(out, args.out)


if __name__ == "__main__":
    main()
