#!/usr/bin/env python
"""Benchmark of the LL-SVM pieces (issue 3, "Performance"), one process, same data.

Measures, for fixed anchors (m=100, k=8):
  * the floor: the distance GEMM alone, X @ Vᵀ (N×D times D×m), best of 3;
  * encode throughput (GEMM + argpartition + weights);
  * LIBLINEAR init time on the Kronecker features (subsampled above max_nnz);
  * one SGD epoch with the numba kernel (precomputed codes) and the numpy
    reference step (on a slice, extrapolated), samples/second and ratios;
  * prediction time per sample (one GEMM against [anchors; W] + gather).

Data: synthetic MNIST-sized (N=20000, D=784, binary labels from a non-linear
rule on clustered data) and, with ``--ijcnn PATH``, the LIBSVM ijcnn1 training
file (standard-scaled).  Targets: SGD epoch <= 3x the GEMM floor; numba >= 20x
the numpy reference.

    .venv/bin/python scripts/bench_llsvm.py [--ijcnn ../shared/datasets/ijcnn1/ijcnn1.bz2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from llc_bench.models import LLSVMClassifier
from llc_bench.models.kronecker import liblinear_init
from llc_bench.models.llc_sgd import labels_matrix, run_epoch, sgd_epoch_reference


def best_of(fn, repeat=3):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def synthetic(n=20000, D=784, n_test=10000, seed=0):
    """Clustered data in D dims, label = a non-linear function of the cluster and x."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(30, D)) * 2.0
    c = rng.integers(0, 30, size=n + n_test)
    X = centers[c] + rng.normal(size=(n + n_test, D))
    u = rng.normal(size=(30, D)) / np.sqrt(D)
    y = np.where(np.einsum("nd,nd->n", X - centers[c], u[c]) + 0.3 * (c % 2 - 0.5) > 0, 1, -1)
    mu, sd = X[:n].mean(0), X[:n].std(0) + 1e-12
    X = (X - mu) / sd
    return X[:n], y[:n], X[n:], y[n:]


def load_ijcnn(path):
    from sklearn.datasets import load_svmlight_file
    from sklearn.preprocessing import StandardScaler

    X, y = load_svmlight_file(path, n_features=22)
    X = X.toarray()
    X = StandardScaler().fit_transform(X)
    return X, y.astype(int), X[:10000], y[:10000].astype(int)


def bench(name, X, y, Xt, m=100, k=8, lam=1e-4, n_ref=1000):
    n, D = X.shape
    X = np.ascontiguousarray(X)
    print(f"\n== {name}: N={n}, D={D}, m={m}, k={k}, λ={lam}")
    # fixed anchors: random training points per class (k-means time is not what we measure)
    clf = LLSVMClassifier(
        n_anchors=m,
        k=k,
        lambda_=lam,
        epochs=1,
        history=False,
        anchor_method="random_per_class",
        random_state=0,
    ).fit(X, y)
    V = clf.anchors_
    ft = clf.fit_info_["timings"]
    # warm-up of everything jitted happened in fit; now the measurements
    t_gemm, _ = best_of(lambda: X @ V.T)
    t_enc, code = best_of(lambda: clf.coding_.encode(X, V))
    y_idx = np.searchsorted(clf.classes_, y)
    t_init, (W0, b0, init_info) = best_of(
        lambda: liblinear_init(X, code, y_idx, 2, m, lam, random_state=0), repeat=1
    )
    Y = labels_matrix(y_idx, 2)
    kw = dict(lambda_=lam, t0=lam**-0.75, skip=16, bias_scale=0.5, use_W=True)
    order = np.random.default_rng(1).permutation(n)

    def numba_epoch():
        W, b = W0.copy(), b0.copy()
        return run_epoch(X, Y, code, order, W, b, 0, 16, **kw)

    t_sgd, _ = best_of(numba_epoch)

    def ref_slice():
        W, b = W0.copy(), b0.copy()
        return sgd_epoch_reference(X, Y, code, order[:n_ref], W, b, 0, 16, **kw)

    t_ref, _ = best_of(ref_slice, repeat=1)
    t_ref_epoch = t_ref * n / n_ref
    pt = min((clf.predict_timed(Xt)[1] for _ in range(3)), key=lambda d: d["total"])
    pt_best = pt["total"]
    per_sample = pt_best / Xt.shape[0]

    # one-vs-all with 10 classes (MNIST-like), from W = 0: the dearest case (C·k·D a step)
    y10 = np.arange(n) % 10
    Y10 = labels_matrix(y10, 10)

    def numba_epoch_10():
        W, b = np.zeros((10, m, D)), np.zeros((10, m))
        return run_epoch(X, Y10, code, order, W, b, 0, 16, **kw)

    t_sgd10, _ = best_of(numba_epoch_10, repeat=2)
    rows = [
        ("distance GEMM X@Vᵀ (floor)", t_gemm, n / t_gemm),
        ("encode (GEMM + k-NN + weights)", t_enc, n / t_enc),
        (
            "LIBLINEAR init"
            + (f" (subsample {init_info['n_rows']} rows)" if init_info["subsampled"] else ""),
            t_init,
            n / t_init,
        ),
        ("SGD epoch, numba", t_sgd, n / t_sgd),
        (f"SGD epoch, numpy reference (from {n_ref} steps)", t_ref_epoch, n / t_ref_epoch),
    ]
    rows.append(("SGD epoch, numba, 10 classes one-vs-all", t_sgd10, n / t_sgd10))
    for label, sec, rate in rows:
        print(f"  {label:<52s} {sec * 1e3:10.1f} ms  {rate:12,.0f} samples/s")
    print(
        f"  {'prediction (' + str(Xt.shape[0]) + ' samples)':<52s} {pt_best * 1e3:10.1f} ms  "
        f"{per_sample * 1e6:9.2f} µs/sample  (encode {pt['encode'] * 1e3:.1f} ms, "
        f"decision {pt['decision'] * 1e3:.1f} ms)"
    )
    print(
        f"  estimator fit (1 epoch): anchors {ft['anchors']:.2f}s encode {ft['encode']:.2f}s "
        f"init {ft['init']:.2f}s sgd {ft['sgd']:.2f}s"
    )
    r1 = t_sgd / t_gemm
    r2 = t_ref_epoch / t_sgd
    print(
        f"  ratio SGD epoch / GEMM floor = {r1:.2f}  (target <= 3)  {'OK' if r1 <= 3 else 'MISSED'}"
    )
    print(
        f"  ratio numba / numpy reference = {r2:.0f}x  (target >= 20x)  "
        f"{'OK' if r2 >= 20 else 'MISSED'}"
    )
    print(
        f"  encode / GEMM floor = {t_enc / t_gemm:.2f};  10-class SGD epoch / GEMM floor = "
        f"{t_sgd10 / t_gemm:.2f}"
    )
    return {
        "gemm": t_gemm,
        "encode": t_enc,
        "init": t_init,
        "sgd": t_sgd,
        "ref": t_ref_epoch,
        "predict_per_sample": per_sample,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ijcnn", help="path to LIBSVM ijcnn1(.bz2) training file")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=784)
    args = ap.parse_args(argv)
    X, y, Xt, _ = synthetic(args.n, args.dim)
    bench("synthetic MNIST-sized", X, y, Xt)
    if args.ijcnn:
        X, y, Xt, _ = load_ijcnn(args.ijcnn)
        bench("ijcnn1", X, y, Xt)


if __name__ == "__main__":
    main()
