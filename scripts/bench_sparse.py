"""Sparse-data benchmark (sparse data stay sparse): LL-SVM, SAPL and ML3 on a synthetic RCV1-shaped
CSR set, kept sparse end to end.  Prints per model (each fitted in its own child process, so
the peak RSS is that model's, data included): peak RSS, seconds per phase, test accuracy.

The data (seeded): N rows × 47,236 features, ~75 non-zeros per row, unit rows of positive
tf-idf-like values.  Each row has a label y = ±1 and one of 32 topics; two thirds of its
terms come from its topic's vocabulary (2,000 terms, Zipf weights, split at random into a
"positive" and a "negative" half per topic; a term comes from the half of y with probability
0.6), one third from a global Zipf law; 5% of the labels are then flipped.  The vocabularies
overlap, so a term's polarity depends on the topic.  Written once to ``--cache`` and read by
every child.

The models are the packaged configs (``dataset=rcv1``: no tuned preset, so the model
defaults: m = 100, k = 8), with ``--epochs`` SGD epochs for SAPL and ML3's λ fixed at 1/N
(``trainer.lambda_grid=[1.0]``, no CV).

    OMP_NUM_THREADS=1 python scripts/bench_sparse.py                 # 677,399 rows
    OMP_NUM_THREADS=1 python scripts/bench_sparse.py --n-train 50000 --models llsvm
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from pathlib import Path
from queue import Empty

import numpy as np
import scipy.sparse as sp

D_RCV1 = 47_236
TOPICS = 32
VOCAB = 2_000
MODELS = {  # name -> Hydra overrides on top of model=<name>
    "llsvm": [],
    "sapl": [],
    "ml3": ["trainer.lambda_grid=[1.0]"],
}


def _zipf(size, a=1.0, shift=10.0):
    w = 1.0 / (np.arange(size) + shift) ** a
    return w / w.sum()


def make_data(n: int, n_features: int, nnz: int, seed: int):
    """(X CSR (n, n_features), y ±1): the generator of the module docstring; the topics'
    vocabularies are fixed (seed 12345), the rows drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    setup = np.random.default_rng(12345)
    vocab = np.stack([setup.choice(n_features, VOCAB, replace=False) for _ in range(TOPICS)])
    glob_cdf = np.cumsum(_zipf(n_features))
    topic_cdf = np.cumsum(_zipf(VOCAB))
    perm = np.random.default_rng(54321).permutation(n_features)  # the global law's order
    counts = np.maximum(rng.poisson(nnz, n), 1)
    indptr = np.r_[0, np.cumsum(counts)]
    topic = rng.integers(0, TOPICS, n)
    y = rng.choice([-1, 1], n)
    total = int(indptr[-1])
    row = np.repeat(np.arange(n), counts)
    from_topic = rng.random(total) < 2 / 3
    cols = perm[np.minimum(np.searchsorted(glob_cdf, rng.random(total)), n_features - 1)]
    # a topic term: rank r by Zipf, from the half of y (even / odd positions) w.p. 0.6
    pick = np.minimum(np.searchsorted(topic_cdf, rng.random(total)), VOCAB // 2 - 1)
    half = np.where(rng.random(total) < 0.6, y[row] > 0, y[row] < 0)
    cols[from_topic] = vocab[topic[row[from_topic]], 2 * pick[from_topic] + half[from_topic]]
    vals = rng.exponential(1.0, total) + 0.1
    X = sp.csr_matrix((vals, cols.astype(np.int32), indptr), shape=(n, n_features))
    X.sum_duplicates()  # repeated terms add up
    norms = np.sqrt(np.bincount(np.repeat(np.arange(n), np.diff(X.indptr)),
                                weights=X.data**2, minlength=n))
    X.data /= np.repeat(norms, np.diff(X.indptr))
    y[rng.random(n) < 0.05] *= -1
    return X, y


def _generate(path: str, n_train: int, n_test: int, nnz: int, seed: int) -> None:
    X, y = make_data(n_train, D_RCV1, nnz, seed)
    Xt, yt = make_data(n_test, D_RCV1, nnz, seed + 1)
    np.savez(path + ".tmp.npz", data=X.data, indices=X.indices, indptr=X.indptr, y=y,
             t_data=Xt.data, t_indices=Xt.indices, t_indptr=Xt.indptr, t_y=yt)
    Path(path + ".tmp.npz").rename(path)


def _load(path: str):
    z = np.load(path)
    X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=(len(z["y"]), D_RCV1))
    Xt = sp.csr_matrix((z["t_data"], z["t_indices"], z["t_indptr"]),
                       shape=(len(z["t_y"]), D_RCV1))
    return X, z["y"], Xt, z["t_y"]


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def _fit_one(path: str, model: str, overrides: list, seed: int, queue) -> None:
    """Child process: load the CSR set, fit the packaged model, predict the test set."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import build_estimator

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=["dataset=rcv1", f"model={model}", f"seed={seed}",
                                        *MODELS[model], *overrides])
    config = OmegaConf.to_container(cfg, resolve=True)
    phases = {}
    tic = time.perf_counter()
    X, y, Xt, yt = _load(path)
    phases["load"] = time.perf_counter() - tic
    est = build_estimator(config)
    tic = time.perf_counter()
    est.fit(X, y)
    phases["fit"] = time.perf_counter() - tic
    for name, sec in est.fit_info_["timings"].items():
        phases[f"  fit.{name}"] = sec
    tic = time.perf_counter()
    acc = float(np.mean(est.predict(Xt) == yt))
    phases["predict test"] = time.perf_counter() - tic
    assert sp.issparse(X) and sp.issparse(Xt)
    queue.put({"model": model, "overrides": overrides, "peak_rss_gb": round(peak_rss_gb(), 3),
               "phases_s": {k: round(v, 2) for k, v in phases.items()},
               "test_accuracy": round(100 * acc, 2),
               "notes": est.fit_info_.get("notes", []),
               "epochs": len(est.fit_info_.get("sgd", {}).get("epoch_seconds", []))})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=677_399)
    ap.add_argument("--n-test", type=int, default=50_000)
    ap.add_argument("--nnz", type=int, default=83, help="mean terms drawn per row "
                    "(repeats merge: ~75 non-zeros)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1, help="SGD epochs of SAPL")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--cache", default="/tmp/llc_bench_sparse")
    ap.add_argument("--out", help="also write the figures as JSON here")
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    path = str(Path(args.cache) / f"rcv1like_{args.n_train}_{args.n_test}_{args.nnz}_"
                                  f"{args.seed}.npz")
    tic = time.perf_counter()
    if not Path(path).exists():
        child = ctx.Process(target=_generate,
                            args=(path, args.n_train, args.n_test, args.nnz, args.seed))
        child.start()
        child.join()
        if child.exitcode:
            raise SystemExit(f"generating the data failed (exit {child.exitcode})")
    X, y, Xt, _ = _load(path)
    head = {"rows": X.shape[0], "features": X.shape[1], "nnz_per_row": X.nnz / X.shape[0],
            "density_pct": 100 * X.nnz / X.shape[0] / X.shape[1],
            "csr_gb": (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**30,
            "dense_gb": X.shape[0] * X.shape[1] * 8 / 2**30, "test_rows": Xt.shape[0],
            "positive_pct": 100 * float(np.mean(y > 0)),
            "generate_or_read_s": time.perf_counter() - tic}
    del X, y, Xt
    print(f"synthetic RCV1-shaped set: {head['rows']} x {head['features']}, "
          f"{head['nnz_per_row']:.1f} non-zeros per row ({head['density_pct']:.3f}% dense), "
          f"CSR {head['csr_gb']:.2f} GB (dense would be {head['dense_gb']:.0f} GB), "
          f"{head['positive_pct']:.1f}% positive; test {head['test_rows']} rows")
    results = []
    for model in args.models:
        overrides = [f"trainer.epochs={args.epochs}"] if model == "sapl" else []
        queue = ctx.Queue()
        child = ctx.Process(target=_fit_one, args=(path, model, overrides, args.seed, queue))
        child.start()
        while True:  # get before join: a full pipe would block the child
            try:
                out = queue.get(timeout=5)
                break
            except Empty:
                if not child.is_alive():
                    raise SystemExit(f"{model} failed (exit {child.exitcode})") from None
        child.join()
        results.append(out)
        print(f"\n{model} {' '.join(overrides)}: peak RSS {out['peak_rss_gb']} GB, "
              f"test accuracy {out['test_accuracy']}%")
        for k, v in out["phases_s"].items():
            print(f"  {k:<24} {v:>9.2f} s")
        for note in out["notes"]:
            print(f"  note: {note}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"data": head, "models": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
