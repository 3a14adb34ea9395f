"""Prediction throughput of a kept locally linear SVM: our numba path, onnxruntime, and the
released C++ LL-SVM code's ``llsvm-predict``, on the same model.

Trains ``llsvm_soft`` (LL-SVM with the Gaussian / soft-assignment coding over 100 k-means
anchors, k = 8: the coding the released code predicts with) on a seeded subsample of a
dataset's training split, keeps it (save_model), exports it as ONNX, and times the decision
values on the test split, each the median of ``--repeat`` passes after a warm-up:

* ``decision_function`` (numba: one distance GEMM, the k-NN, the k active models per row);
* onnxruntime on the exported graph (one intra-op thread, as the numba kernels run here);
* with ``--peer PATH/llsvm-predict`` (github.com/aydindemircioglu/LocallyLinearSVM, built
  with its Makefile; never committed): the same model written in the peer's model format
  (anchors, weights, biases, kNN, distCoef = β; exp(-β d) is our soft_knn coding) and the
  test rows, preprocessed by our scaler (the peer has none), as an svmlight file with
  labels 1..C.  The peer reads the file, predicts and prints its accuracy in one process:
  its time is end to end; the same run on a one-row file (loading the model) is
  subtracted to give its per-row rate.  Our end-to-end figure parses the same file with
  scikit-learn's svmlight reader and then scores it.  The peer's accuracy equals ours with
  its one difference applied: it weighs exp(-β d) without subtracting the smallest d, so
  on rows far from every anchor all weights underflow and it picks class 1 (0/0).

    python scripts/bench_predict.py --dataset mnist --max-train 20000 \\
        --mirror ../shared/datasets --peer /tmp/llsvm_peer/llsvm-predict
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
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


def write_peer_model(path: Path, estimator) -> None:
    """The estimator in the released code's text format (``LLSVMSaveModel``, values %.17g)."""
    V = np.asarray(estimator.anchors_, dtype=np.float64)
    W = np.asarray(estimator.W_, dtype=np.float64)
    b = np.asarray(estimator.b_, dtype=np.float64)
    n_out, m, dim = W.shape
    lines = ["svm_type llsvm", f"dim {dim}", f"kNN {min(estimator.coding_.k, m)}",
             f"kmeansClusters {m}", f"distCoef {estimator.coding_.beta_!r}", "scale 1",
             f"labels {n_out}", "SV", "means"]
    lines += [" ".join(f"{v:.17g}" for v in row) + " " for row in V]
    lines.append("weights")
    lines += [" ".join(f"{v:.17g}" for v in W[j, a]) + " " for j in range(n_out)
              for a in range(m)]
    lines.append("bias")
    lines += [" ".join(f"{v:.17g}" for v in b[j]) + " " for j in range(n_out)]
    path.write_text("\n".join(lines) + "\n")


def write_svmlight(path: Path, X: np.ndarray, labels: np.ndarray) -> None:
    """Rows as ``label index:value ...`` (1-based indices, every value, %.17g)."""
    with path.open("w") as fh:
        for label, row in zip(labels, X, strict=True):
            fh.write(f"{int(label)} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in
                                                enumerate(row) if v != 0) + "\n")


def _peer_run(peer: Path, data: Path, model: Path) -> tuple[float, float]:
    """(seconds, the accuracy it prints) of one ``llsvm-predict`` process."""
    start = time.perf_counter()
    done = subprocess.run([str(peer), str(data), str(model), str(data.with_suffix(".out"))],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    found = re.search(r"score\s+([0-9.]+)", done.stdout)
    if not found:
        raise SystemExit(f"{peer}: no 'score' line in its output: {done.stdout[-300:]!r}")
    return seconds, float(found.group(1))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--model", default="llsvm_soft")
    parser.add_argument("--max-train", type=int, default=20000)
    parser.add_argument("--mirror", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peer", type=Path, default=None,
                        help="the released C++ code's llsvm-predict binary")
    parser.add_argument("--out", type=Path, default=None, help="also write the lines here")
    args = parser.parse_args(argv)

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf
    from sklearn.datasets import load_svmlight_file

    from llc_bench.coding.local import SoftKNNCoding, knn_sq_distances
    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import run_experiment
    from llc_bench.serving.model_files import load_model
    from llc_bench.serving.onnx_export import export_onnx

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
    # imported after the fit: its thread calls rand(), which LIBLINEAR's shuffles share
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options)
    ours = _median_seconds(lambda: estimator.decision_function(X), args.repeat)
    theirs = _median_seconds(lambda: session.run(None, {"X": raw}), args.repeat)
    scores = np.asarray(estimator.decision_function(X))
    gap = np.abs(session.run(None, {"X": raw})[0] - scores).max()
    n = X.shape[0]
    lines = [
        f"# bench_predict: {args.model} on {args.dataset} ({record['data']['n_train']} training "
        f"rows, {n} test rows x {X.shape[1]} features, {len(ds.classes)} classes; test acc "
        f"{100 * record['metrics']['test_accuracy']:.2f}%), median of {args.repeat}",
        f"numba decision_function   {n / ours:12.0f} rows/s ({ours:.4f} s)",
        f"onnxruntime (1 thread)    {n / theirs:12.0f} rows/s ({theirs:.4f} s); "
        f"{theirs / ours:.2f}x numba's time, largest difference {gap:.2e}",
    ]
    if args.peer is None or not args.peer.is_file():
        why = "no --peer given" if args.peer is None else f"{args.peer} is not a file"
        lines.append(f"llsvm-predict (C++ peer)  skipped: {why}")
    elif not isinstance(estimator.coding_, SoftKNNCoding) or len(ds.classes) < 3:
        lines.append("llsvm-predict (C++ peer)  skipped: it applies the Gaussian (soft_knn) "
                     "coding to multi-class models only; use --model llsvm_soft")
    else:
        model_txt, data, one = work / "peer.model", work / "test.svm", work / "one.svm"
        write_peer_model(model_txt, estimator)
        truth = np.asarray(ds.y_test)
        write_svmlight(data, X, truth + 1)   # the peer's labels are 1..C
        write_svmlight(one, X[:1], truth[:1] + 1)
        whole = statistics.median(_peer_run(args.peer, data, model_txt)[0]
                                  for _ in range(args.repeat))
        base = statistics.median(_peer_run(args.peer, one, model_txt)[0]
                                 for _ in range(args.repeat))
        accuracy = _peer_run(args.peer, data, model_txt)[1]
        predicted = np.argmax(scores, axis=1)
        ours_accuracy = float(np.mean(predicted == truth))
        # the peer weighs exp(-β d) without subtracting d_min (SAPL eq. 2's stable form):
        # where every weight underflows it scores 0/0 and picks class 0
        _, d, _ = knn_sq_distances(X, estimator.anchors_, min(estimator.coding_.k,
                                                              len(estimator.anchors_)))
        underflow = np.exp(-estimator.coding_.beta_ * d).sum(axis=1) == 0
        expected = float(np.mean(np.where(underflow, 0, predicted) == truth))

        def parse_and_score():
            Xs, _ = load_svmlight_file(str(data), n_features=X.shape[1])
            estimator.decision_function(Xs.toarray())

        e2e = _median_seconds(parse_and_score, args.repeat)
        lines += [
            f"llsvm-predict (C++ peer)  {n / (whole - base):12.0f} rows/s ({whole - base:.4f} s "
            f"net of {base:.4f} s for a one-row file; {n / whole:.0f} rows/s end to end); "
            f"accuracy {100 * accuracy:.2f}% (ours {100 * ours_accuracy:.2f}%; with the "
            f"peer's underflow on {int(underflow.sum())} rows {100 * expected:.2f}%)",
            f"ours from the same file   {n / e2e:12.0f} rows/s end to end ({e2e:.4f} s: "
            "scikit-learn's svmlight reader, then decision_function)",
        ]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
