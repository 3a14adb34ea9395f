"""Prediction throughput of a kept LL-SVM: our numba path against onnxruntime, one process.

Trains ``llsvm`` (the paper's MNIST setting: 100 anchors, k = 8) on a seeded subsample of a
dataset's training split, keeps it (save_model), exports it as ONNX, and times the decision
values on the test split: ``decision_function`` (numba: one distance GEMM, the k-NN, the k
active models per row) and onnxruntime (one intra-op thread, as the numba kernels run here),
each the median of ``--repeat`` passes after a warm-up.  Prints rows/s and the ratio, and
checks that the two agree.

    python scripts/bench_predict.py --dataset mnist --max-train 20000 --mirror ../shared/datasets
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _median_seconds(fn, repeat: int) -> float:
    fn()  # warm-up: kernels compiled or loaded, caches filled
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--model", default="llsvm")
    parser.add_argument("--max-train", type=int, default=20000)
    parser.add_argument("--mirror", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="also write the lines here")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.data import load_dataset
    from llc_bench.experiment.model_files import load_model
    from llc_bench.experiment.onnx_export import export_onnx
    from llc_bench.experiment.runner import run_experiment

    work = Path(tempfile.mkdtemp(prefix="bench-predict-"))
    mirrors = ",".join(str(Path(m).resolve()) for m in args.mirror)
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[
            f"dataset={args.dataset}", f"model={args.model}", "tune=off", "save_model=true",
            f"dataset.max_train={args.max_train}", f"results_dir={work}", "progress=off",
            "data.download=false", *([f"data.mirrors=[{mirrors}]"] if mirrors else [])])
    config = OmegaConf.to_container(cfg, resolve=True)
    record = run_experiment(config, echo=lambda line: None)
    estimator, meta = load_model(work / record["model_file"])
    onnx_path = export_onnx(work / record["model_file"], work / "model.onnx")
    ds = load_dataset(config["dataset"], seed=0, mirrors=tuple(config["data"]["mirrors"]),
                      download=False)
    X = ds.X_test.toarray() if hasattr(ds.X_test, "toarray") else ds.X_test
    pre = meta["preprocess"]
    raw = X * (np.asarray(pre["scale"]) if pre.get("scale") is not None else 1.0)
    raw = raw + (np.asarray(pre["mean"]) if pre.get("mean") is not None else 0.0)
    raw = raw / (pre["value_scale"] or 1.0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options)
    ours = _median_seconds(lambda: estimator.decision_function(X), args.repeat)
    theirs = _median_seconds(lambda: session.run(None, {"X": raw}), args.repeat)
    gap = np.abs(session.run(None, {"X": raw})[0]
                 - np.asarray(estimator.decision_function(X))).max()
    n = X.shape[0]
    lines = [
        f"# bench_predict: {args.model} on {args.dataset} ({record['data']['n_train']} training "
        f"rows, {n} test rows x {X.shape[1]} features, {len(ds.classes)} classes; test acc "
        f"{100 * record['metrics']['test_accuracy']:.2f}%), median of {args.repeat}",
        f"numba decision_function   {n / ours:12.0f} rows/s ({ours:.4f} s)",
        f"onnxruntime (1 thread)    {n / theirs:12.0f} rows/s ({theirs:.4f} s)",
        f"onnxruntime / numba time  {theirs / ours:.2f}x; largest difference {gap:.2e}",
    ]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
