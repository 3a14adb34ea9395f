#!/usr/bin/env python
"""Benchmark of LL-SVM training speed, one child process per fit.

Default mode (the training-speed targets): for each dataset (usps, letter, mnist; the
tuned ``llsvm`` preset, 10 epochs, no history) and each setting (``default`` = today's
numerics, then each named set of other parameters in ``--other``, by default ``v4``: the
SGD defaults before numerics v5, float64 weights and the whole η0 grid), one fit in a
fresh process; prints the phases anchors, encode, init, SGD (10 epochs, with the η0
calibration and the per-epoch objective), predict (the test set), their sum, the ratios
anchors/SGD and init/SGD, the 10-class SGD epoch over the distance-GEMM floor (X·Vᵀ,
same N, D, m), the LIBLINEAR problems that hit the iteration cap, test accuracy and the
peak RSS of the process (loading included). Thread counts are taken from the environment
(run with OMP_NUM_THREADS=1 ... for the single-threaded figures the tables use).
``--peer DIR`` also times Ladický's released C++ LL-SVM (built from github
aydindemircioglu/LocallyLinearSVM in DIR, never committed) on the same preprocessed
arrays, and prints our whole fit over its training time.

``--synthetic`` (the first numba kernel's benchmark): fixed anchors (m=100, k=8) on
synthetic MNIST-sized data and, with ``--ijcnn PATH``, ijcnn1: the GEMM floor, encode,
the LIBLINEAR init, one SGD epoch with the numba kernel and the numpy reference,
prediction per sample.

    .venv/bin/python scripts/bench_llsvm.py --datasets usps,letter,mnist [--peer /tmp/peer]
    .venv/bin/python scripts/bench_llsvm.py --synthetic [--ijcnn PATH]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from llc_bench.models import LLSVMClassifier
from llc_bench.models.kronecker import liblinear_init
from llc_bench.models.sgd_epoch import labels_matrix, run_epoch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the numpy reference epoch lives with the tests
from reference_sgd import sgd_epoch_reference  # noqa: E402

#: Other settings compared with the defaults, by name: v4 = the SGD defaults before v5
#: (v2, LIBLINEAR's own init and k-means on all rows: {"init_solver": "l2_hinge",
#: "kmeans_sample": null}).
OTHER = {"v4": {"sgd_dtype": "float64", "calibration_coarse_step": 1}}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def compose(dataset: str, seed: int, home: str, mirror: str) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from omegaconf import OmegaConf

    overrides = [f"dataset={dataset}", "model=llsvm", f"seed={seed}", f"data.home={home}",
                 f"data.mirrors=[{mirror}]", "data.download=false"]
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = hydra_compose("run", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)


def fit_phases(dataset: str, params: dict, seed: int, home: str, mirror: str) -> dict:
    """One fit + prediction in this process: phase seconds, accuracy, peak RSS (MB)."""
    from llc_bench.data import load_dataset
    from llc_bench.experiment.runner import build_estimator

    config = compose(dataset, seed, home, mirror)
    ds = load_dataset(config["dataset"], seed=seed, home=home, mirrors=[mirror], download=False)
    est = build_estimator(config).set_params(history=False, epochs=10, **params)
    tic = time.perf_counter()
    est.fit(ds.X_train, ds.y_train)
    train = time.perf_counter() - tic
    labels, pt = est.predict_timed(ds.X_test)
    fi = est.fit_info_
    X, V = ds.X_train, est.anchors_
    floor = np.inf
    for _ in range(3):
        tic = time.perf_counter()
        X @ V.T
        floor = min(floor, time.perf_counter() - tic)
    sgd = fi["sgd"]
    return {
        "n": int(X.shape[0]), "D": int(X.shape[1]), "classes": len(est.classes_),
        "train": train, **{k: fi["timings"][k] for k in ("anchors", "encode", "init", "sgd")},
        "epochs": float(sum(sgd["epoch_seconds"])), "epoch": float(np.median(sgd["epoch_seconds"])),
        "predict": pt["total"], "gemm": floor,
        "accuracy": float(np.mean(labels == ds.y_test)),
        "kmeans_iter": fi["anchors"].get("n_iter"), "inertia": fi["anchors"].get("inertia"),
        "init_rows": fi["init"].get("n_rows"), "init_capped": fi["init"].get("max_iter_reached"),
        "init_objective": sgd.get("start_objective"), "kept_epoch": sgd.get("kept_epoch"),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def peer_run(peer: str, dataset: str, seed: int, home: str, mirror: str, m: int = 100,
             k: int = 8, passes: int = 10, repeats: int = 3) -> dict:
    """Ladický's released C++ LL-SVM (``llsvm-train`` / ``llsvm-predict`` built in ``peer``)
    on our preprocessed arrays written as svmlight files: m/C anchors per label (its
    k-means: random points per class), k neighbours, ``passes`` passes, its default β and
    scale; median wall time of ``repeats`` trainings, its test score and peak RSS."""
    import subprocess
    import tempfile

    from sklearn.datasets import dump_svmlight_file

    from llc_bench.data import load_dataset

    config = compose(dataset, seed, home, mirror)
    ds = load_dataset(config["dataset"], seed=seed, home=home, mirrors=[mirror], download=False)
    classes = np.unique(ds.y_train)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        train, test, model = (os.path.join(tmp, f) for f in ("train.svm", "test.svm", "model"))
        dump_svmlight_file(ds.X_train, np.searchsorted(classes, ds.y_train), train,
                           zero_based=False)
        dump_svmlight_file(ds.X_test, np.searchsorted(classes, ds.y_test), test,
                           zero_based=False)

        def timed(cmd):  # /usr/bin/time: a forked child's maxrss counts the parent's pages
            rss = os.path.join(tmp, "rss")
            tic = time.perf_counter()
            proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss, *cmd],
                                  capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"{cmd[0]} failed: {proc.stdout[-300:]}{proc.stderr[-300:]}")
            return time.perf_counter() - tic, int(open(rss).read().split()[-1]) / 1024, proc.stdout

        per_label = max(1, round(m / len(classes)))
        train_cmd = [os.path.join(peer, "llsvm-train"), "-k", str(per_label), "-n", str(k),
                     "-i", str(passes), train, model]
        runs = [timed(train_cmd) for _ in range(repeats)]
        out["train"] = float(np.median([r[0] for r in runs]))
        out["rss_mb"] = max(r[1] for r in runs)
        pred, _, text = timed([os.path.join(peer, "llsvm-predict"), test, model,
                               os.path.join(tmp, "out")])
        out["predict"] = pred
        out["accuracy"] = float(text.rsplit("score", 1)[1].split()[0])
        out["anchors"], out["per_label"] = per_label * len(classes), per_label
    return out


def _child(queue, *args):
    queue.put(fit_phases(*args))


def in_child(*args) -> dict:
    """:func:`fit_phases` in a fresh process (its own peak RSS)."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, *args))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def best_peer_run(peer: str, dataset: str, seed: int, home: str, mirror: str,
                  grid: list[tuple[int, int]]) -> dict:
    """The peer's most accurate 10-pass setting of ``grid`` ((anchors m, neighbours k)
    pairs): the generous reference point of the Pareto figure."""
    runs = [{**peer_run(peer, dataset, seed, home, mirror, m=m, k=k), "k": k}
            for m, k in grid]
    return max(runs, key=lambda r: r["accuracy"])


def write_peer_points(path: Path, points: dict) -> None:
    """{dataset: {train_seconds, accuracy (%), label}} for ``llc-bench figures --figure
    pareto`` (conf/tables.yaml: figures.pareto.peer), merged into what ``path`` holds."""
    from llc_bench.files import atomic_write_text

    old = json.loads(path.read_text()) if path.is_file() else {}
    atomic_write_text(path, json.dumps({**old, **points}, indent=1, sort_keys=True) + "\n")


def phases_report(datasets, other: dict, seed: int, home: str, mirror: str,
                  peer: str | None = None, repeat: int = 1, peer_grid=((100, 8),),
                  peer_json: Path | None = None) -> None:
    threads = {v: os.environ.get(v, "unset") for v in THREAD_VARS}
    print(f"threads: {threads}; cpus: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}")
    for name, params in other.items():
        print(f"{name} = {json.dumps(params)}")
    print(f"{'dataset':<8}{'setting':<9}{'anchors':>8}{'encode':>8}{'init':>8}{'SGD':>8}"
          f"{'predict':>8}{'sum':>8}{'train':>8} {'anc/SGD':>7}{'init/SGD':>9}"
          f"{'ep/GEMM':>8}{'acc %':>7}{'RSS MB':>8}  notes")
    for dataset in datasets:
        rows = {}
        for setting, params in (("default", {}), *other.items()):
            runs = sorted((in_child(dataset, params, seed, home, mirror) for _ in range(repeat)),
                          key=lambda r: r["train"])
            r = rows[setting] = runs[len(runs) // 2]  # the run of the median whole fit
            total = sum(r[k] for k in ("anchors", "encode", "init", "sgd", "predict"))
            print(f"{dataset:<8}{setting:<9}{r['anchors']:8.2f}{r['encode']:8.2f}{r['init']:8.2f}"
                  f"{r['sgd']:8.2f}{r['predict']:8.2f}{total:8.2f}{r['train']:8.2f} "
                  f"{r['anchors'] / r['sgd']:7.2f}{r['init'] / r['sgd']:9.2f}"
                  f"{r['epoch'] / r['gemm']:8.2f}{100 * r['accuracy']:7.2f}{r['rss_mb']:8.0f}  "
                  f"k-means {r['kmeans_iter']} it, inertia {r['inertia']:.4g}; init "
                  f"{r['init_rows']} rows, {r['init_capped']} capped, objective "
                  f"{r['init_objective']:.5g}; kept epoch {r['kept_epoch']}", flush=True)
        if peer:
            p = best_peer_run(peer, dataset, seed, home, mirror, list(peer_grid))
            setting = (f"llsvm-train -k {p['per_label']} per label ({p['anchors']} anchors), "
                       f"-n {p['k']}, -i 10")
            print(f"{dataset:<8}{'C++ peer':<9}{'':40}{p['predict']:8.2f}{'':8}{p['train']:8.2f} "
                  f"{'':24}{100 * p['accuracy']:7.2f}{p['rss_mb']:8.0f}  Ladicky's {setting}; "
                  f"median of 3" + (f"; the best of {len(peer_grid)} settings"
                                    if len(peer_grid) > 1 else ""), flush=True)
            if peer_json:
                write_peer_points(peer_json, {dataset: {
                    "train_seconds": p["train"], "accuracy": 100 * p["accuracy"],
                    "label": f"released C++ LL-SVM ({p['anchors']} anchors, k={p['k']})",
                    "setting": setting, "threads": os.environ.get("OMP_NUM_THREADS", "unset"),
                    "load": round(os.getloadavg()[0], 2)}})
            for setting, r in rows.items():
                print(f"{dataset:<8}{setting[:5] + '/C++':<9}{'':40}"
                      f"{r['predict'] / p['predict']:8.2f}{'':8}{r['train'] / p['train']:8.2f}"
                      f"   whole fit / peer's training", flush=True)
        d = rows["default"]
        for setting in other:  # each other setting over the default, same process kind
            f = rows[setting]
            print(f"{dataset:<8}{setting[:6] + '/def':<9}{f['anchors'] / d['anchors']:8.2f}"
                  f"{f['encode'] / d['encode']:8.2f}{f['init'] / d['init']:8.2f}"
                  f"{f['sgd'] / d['sgd']:8.2f}{f['predict'] / d['predict']:8.2f}{'':8}"
                  f"{f['train'] / d['train']:8.2f}   accuracy "
                  f"{100 * (f['accuracy'] - d['accuracy']):+.2f} points, init objective "
                  f"{f['init_objective'] / d['init_objective'] - 1:+.2%}", flush=True)


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
    ap.add_argument("--datasets", default="usps,letter,mnist")
    ap.add_argument("--other", default=json.dumps(OTHER),
                    help="JSON {name: parameters} of the settings run beside the default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="fits per setting, each in a fresh process; the fit of the median "
                         "training time is shown")
    ap.add_argument("--home", default=str(REPO / "datasets"))
    ap.add_argument("--mirror", default=str(REPO.parent / "shared" / "datasets"))
    ap.add_argument("--peer", help="directory of Ladicky's built llsvm-train / llsvm-predict "
                    "(github aydindemircioglu/LocallyLinearSVM): timed beside ours")
    ap.add_argument("--peer-grid", default="100:8",
                    help="the peer's settings, anchors:neighbours pairs (e.g. 100:8,200:8,"
                         "200:16): its most accurate one is reported")
    ap.add_argument("--peer-json", type=Path, default=None,
                    help="write the peer's points for the Pareto figure here (e.g. "
                         "results/bench/peer_llsvm.json)")
    ap.add_argument("--synthetic", action="store_true", help="the kernel benchmark on synthetic "
                    "MNIST-sized data")
    ap.add_argument("--ijcnn", help="with --synthetic: path to LIBSVM ijcnn1(.bz2)")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=784)
    args = ap.parse_args(argv)
    if not args.synthetic:
        grid = [tuple(int(v) for v in pair.split(":")) for pair in args.peer_grid.split(",")]
        phases_report(args.datasets.split(","), json.loads(args.other), args.seed, args.home,
                      args.mirror, args.peer, args.repeat, grid, args.peer_json)
        return
    X, y, Xt, _ = synthetic(args.n, args.dim)
    bench("synthetic MNIST-sized", X, y, Xt)
    if args.ijcnn:
        X, y, Xt, _ = load_ijcnn(args.ijcnn)
        bench("ijcnn1", X, y, Xt)


if __name__ == "__main__":
    main()
